# SPDX-License-Identifier: BSD-3-Clause
# Helpers for the guest tests (tests/vm/test-vm-*.sh); source after
# ../lib/functions.sh, which provides $tmpdir, cleanup_fn and the exit trap.
#
#   vm_setup              skip (77) unless qemu-system-x86_64 is here and
#                         the guest builds (build-guest.sh, cached); sets
#                         $GUEST (a private copy of it) and $PATGEN
#   vm_initrd OUT SCRIPT [FILE...]
#                         the guest's initramfs plus a second cpio archive
#                         holding SCRIPT as /scenario.sh, guest-lib.sh and
#                         FILEs (in /)
#   run_vm NAME INITRD [QEMU-ARG...]
#                         boot it under a hard timeout ($VM_TIMEOUT s);
#                         serial console in $tmpdir/NAME.console; sets
#                         $vm_status (qemu's) and $vm_seconds; the console
#                         log is copied to $VM_KEEP_LOGS if that is set.
#                         A guest whose kernel has not started its init
#                         ("RAIDVM: init" on the console) within
#                         $VM_BOOT_LIMIT s is killed and booted once more,
#                         saying so: see run_vm
#   vm_wait_console LOG PID SECONDS REGEX
#                         0 once the console LOG has a line matching
#                         REGEX; 1 if PID is gone first, or after SECONDS
#   vm_disk ID FILE       -drive/-device arguments in ${vm_args[@]} for a
#                         raw virtio disk with virtio serial ID
#   vm_results_disk NAME  the scratch disk the guest's /out is tarred onto
#   vm_results NAME DIR   unpack it into DIR
#   vm_result NAME        0 if the console says "RAIDVM: RESULT PASS"
#   vm_guest NAME OUT SCRIPT [FILE...]
#                         one boot of the guest SCRIPT (FILEs in its /)
#                         on the disks of ${vm_args[@]} and a results
#                         disk: what it saved goes to OUT (1 if nothing),
#                         its ok/FAIL lines to the log, and a guest that
#                         did not pass is a failure
#   vm_md_check           the check guest (guest-md-check.sh) on the
#                         arrays of $tmpdir/arrays.txt; counts a failure
#   (failures: fail MESSAGE, from ../lib/functions.sh: a test goes on to
#   check every array, and exits 1 at the end if any failed)
#   vm_elapsed            seconds since vm_setup, as "N s"
#   vm_finish             the total line; exits 1 if a failure was
#                         recorded
#
# Acceleration: TCG (-accel tcg -cpu max) unless VM_ACCEL=kvm: on these
# machines nested KVM aborts.  No network unless a test adds one; when
# it does, user networking only: the guest reaches the host's 127.0.0.1
# as 10.0.2.2 and nothing else.

vm_dir=$top_srcdir/tests/vm
: "${VM_TIMEOUT:=600}"
: "${VM_BOOT_LIMIT:=120}"
: "${VM_ACCEL:=tcg}"
: "${VM_MEM:=1024}"
QEMU=${QEMU:-qemu-system-x86_64}

vm_setup ()
{
    requires "$QEMU" timeout cpio gzip tar
    local out
    if ! out=$("$vm_dir/build-guest.sh" 2> "$tmpdir/build-guest.log"); then
        echo "$0: SKIP: the test guest cannot be built:"
        grep -v '^W:' "$tmpdir/build-guest.log" | tail -n 5
        exit 77
    fi
    local g
    g=$(tail -n 1 <<< "$out")
    echo "guest: $g (kernel $(cat "$g/kver"))"
    # A private copy: the cache may change under a long test.
    GUEST=$tmpdir/guest
    mkdir -p "$GUEST"
    cp "$g/vmlinuz" "$g/initramfs.cpio.gz" "$g/patgen" "$g/kver" "$GUEST/" || {
        echo "$0: SKIP: the guest in $g went away while it was copied"
        exit 77
    }
    PATGEN=$GUEST/patgen
    vm_start=$(date +%s)
}

vm_elapsed () { echo "$(( $(date +%s) - vm_start )) s"; }

vm_finish ()
{
    echo "total: $(vm_elapsed), $(failure_count) failures"
    end_failures
}

vm_initrd ()
{
    local out=$1 scen=$2 d
    shift 2
    d=$tmpdir/initrd.$$
    rm -rf "$d"
    mkdir -p "$d"
    install -m 0755 "$scen" "$d/scenario.sh"
    cp "$vm_dir/guest-lib.sh" "$d/"
    [ $# -eq 0 ] || cp "$@" "$d/"
    (cd "$d" && find . -print0 | sort -z | cpio --null -o -H newc --quiet) |
        gzip -1 > "$d.cpio.gz"
    cat "$GUEST/initramfs.cpio.gz" "$d.cpio.gz" > "$out"
    rm -rf "$d" "$d.cpio.gz"
}

vm_args=()
_vm_ndisk=0
vm_disk ()
{
    local id=$1 file=$2 bus="" k slot
    # Past 24 disks, the rest go behind PCI bridges, 31 to a bridge
    # (slots 1..31; qemu reads addr= as hex).
    if [ "$_vm_ndisk" -ge 24 ]; then
        k=$(( (_vm_ndisk - 24) / 31 + 1 )) slot=$(( (_vm_ndisk - 24) % 31 + 1 ))
        [ "$slot" -ne 1 ] ||
            vm_args+=(-device "pci-bridge,id=br$k,chassis_nr=$k")
        bus=$(printf ',bus=br%d,addr=0x%x' "$k" "$slot")
    fi
    vm_args+=(-drive "file=$file,format=raw,if=none,id=d$_vm_ndisk,cache=unsafe"
              -device "virtio-blk-pci,drive=d$_vm_ndisk,serial=$id$bus")
    _vm_ndisk=$(( _vm_ndisk + 1 ))
}

vm_results_disk ()
{
    local f=$tmpdir/$1.results
    rm -f "$f"
    truncate -s 32M "$f"
    vm_disk results "$f"
}

# Why a guest may boot twice.  Once in CI (2026-12-04), the four-CPU guest
# of test-vm-nbd-multiconn.sh wrote nothing at all to its console in 600 s
# while qemu spun on both host cores: the guest kernel hung before it ran
# init, whose first act is to print "RAIDVM: init".  Nothing of ours runs
# in the guest before that line, so such a hang is the emulator's, and
# the guest is booted again, once, with the reason in the test's log;
# everything after that line counts as before.  The same holds for qemu
# crashing before that line (once in CI, 2026-12-05: qemu exited with
# SIGSEGV 8 s into the boot of test-vm-bitmap.sh's check guest, which
# had printed nothing).
run_vm ()
{
    local name=$1 initrd=$2 cpu=max pid t0 try
    shift 2
    [ "$VM_ACCEL" = kvm ] && cpu=host
    local log=$tmpdir/$name.console pidf=$tmpdir/$name.qemu.pid
    local cmd=("$QEMU" -accel "$VM_ACCEL" -cpu "$cpu" -M pc -m "$VM_MEM" -smp 2
               -nodefaults -no-user-config -display none -no-reboot
               -monitor none -serial "file:$log" -pidfile "$pidf"
               -kernel "$GUEST/vmlinuz" -initrd "$initrd"
               -append "console=ttyS0 panic=-1 loglevel=4 quiet"
               "$@")
    echo "== $name: ${cmd[*]}"
    cleanup_fn _vm_kill "$pidf"
    for try in 1 2; do
        rm -f "$log" "$pidf"
        t0=$(date +%s)
        # In the background, so that a signal reaches our trap at once; the
        # trap kills timeout (which passes it on to qemu) and qemu itself.
        timeout -k 10 "$VM_TIMEOUT" "${cmd[@]}" < /dev/null > "$tmpdir/$name.qemu.out" 2>&1 &
        pid=$!
        _bg_pids+=("$pid")
        if [ "$try" = 1 ] && ! _vm_reaches_init "$pid" "$log"; then
            echo "== $name: the guest's kernel did not start init within $VM_BOOT_LIMIT s (console: $(wc -c < "$log" 2>/dev/null || echo 0) bytes); killed, booting it once more"
            _vm_kill "$pidf"
            wait "$pid" 2>/dev/null || true
            continue
        fi
        vm_status=0
        wait "$pid" || vm_status=$?
        if [ "$try" = 1 ] && _vm_crashed "$vm_status" &&
           ! _vm_saw_init "$log"; then
            echo "== $name: qemu died of signal $((vm_status - 128)) before the guest ran init; booting it once more"
            cat "$tmpdir/$name.qemu.out"
            continue
        fi
        break
    done
    vm_seconds=$(( $(date +%s) - t0 ))
    echo "== $name: qemu exit status $vm_status after $vm_seconds s"
    [ "$vm_status" -ne 124 ] || echo "== $name: TIMED OUT after $VM_TIMEOUT s"
    cat "$tmpdir/$name.qemu.out"
    if [ -n "${VM_KEEP_LOGS:-}" ]; then
        mkdir -p "$VM_KEEP_LOGS"
        cp "$log" "$VM_KEEP_LOGS/" 2>/dev/null || true
    fi
    touch "$log"
}

# vm_wait_console LOG PID SECONDS REGEX: 0 once the console LOG has a
# line matching the extended REGEX; 1 if the process PID (qemu, or the
# job that runs it) is gone first, or after SECONDS.
vm_wait_console ()
{
    local end=$((SECONDS + $3))
    while (( SECONDS < end )); do
        grep -a -q -E "$4" "$1" 2>/dev/null && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# _vm_crashed STATUS: whether qemu's exit status (through timeout) says a
# crash of the emulator: SIGSEGV, SIGBUS or SIGABRT.
_vm_crashed ()
{
    case $1 in
        134|135|139) return 0 ;;
    esac
    return 1
}

# _vm_saw_init LOG: whether the console LOG shows the guest's init started
# (its first act is to print this line).
_vm_init_line='RAIDVM: init'
_vm_saw_init ()
{
    grep -a -q "$_vm_init_line" "$1" 2>/dev/null
}

# _vm_reaches_init PID LOG: 0 once LOG has the init line or qemu (PID)
# has exited (its status will tell); 1 if neither within $VM_BOOT_LIMIT s.
_vm_reaches_init ()
{
    vm_wait_console "$2" "$1" "$VM_BOOT_LIMIT" "$_vm_init_line" && return 0
    kill -0 "$1" 2>/dev/null && return 1
    return 0
}

# _vm_kill PIDFILE: stop the qemu that wrote PIDFILE, if it still runs.
# qemu removes its pid file when it exits, but not when it dies, and its
# number may belong to another process by then: only a process whose
# command line names this pid file is signalled (see _our_child in
# ../lib/functions.sh).
_vm_is_qemu ()
{
    tr '\0' '\n' < "/proc/$1/cmdline" 2>/dev/null | grep -qxF -- "$2"
}

_vm_kill ()
{
    local p
    [ -s "$1" ] || return 0
    p=$(cat "$1")
    _vm_is_qemu "$p" "$1" || return 0
    kill "$p" 2>/dev/null || return 0
    sleep 1
    _vm_is_qemu "$p" "$1" && kill -9 "$p" 2>/dev/null
    return 0
}

# The guest's verdict, with its failures and the log's tail on failure.
vm_result ()
{
    local log=$tmpdir/$1.console
    if grep -q '^RAIDVM: RESULT PASS' "$log"; then
        return 0
    fi
    echo "== $1: the guest did not pass; its FAIL lines and the log's tail:"
    grep -a 'RAIDVM: FAIL' "$log" || true
    tail -n 60 "$log" | tr -d '\r'
    return 1
}

vm_guest ()
{
    local name=$1 out=$2 scen=$3 r=0
    shift 3
    vm_results_disk "$name"
    vm_initrd "$tmpdir/initrd" "$scen" "$@"
    run_vm "$name" "$tmpdir/initrd" "${vm_args[@]}"
    vm_results "$name" "$out" || r=1
    vm_result "$name" || fail "the guest did not pass"
    grep -a -E 'RAIDVM: (ok|FAIL)' "$tmpdir/$name.console" | tr -d '\r' || true
    echo "guest: $(vm_elapsed)"
    return $r
}

# vm_md_check: boot the check guest (guest-md-check.sh says what md must
# find) on the arrays of $tmpdir/arrays.txt, whose disks are in
# ${vm_args[@]}, with the patterns of $tmpdir/*-writes.txt; what it saved
# goes to $tmpdir/out, and a guest that did not pass is a failure.
vm_md_check ()
{
    vm_results_disk check
    vm_initrd "$tmpdir/initrd" "$vm_dir/guest-md-check.sh" \
        "$tmpdir/arrays.txt" "$tmpdir"/*-writes.txt
    run_vm check "$tmpdir/initrd" "${vm_args[@]}"
    vm_results check "$tmpdir/out" || true
    vm_result check || fail "the md check guest did not pass"
    grep -a -E 'RAIDVM: (ok|FAIL)' "$tmpdir/check.console" | tr -d '\r' || true
}

# vm_results NAME DIR: unpack what the guest saved from /out.
vm_results ()
{
    mkdir -p "$2"
    tar -xf "$tmpdir/$1.results" -C "$2" 2>/dev/null || {
        echo "== $1: the guest saved no results"
        return 1
    }
}

# read_array OUT SECTORS NBDKIT-ARGS...: the first SECTORS sectors of the
# array the plugin serves, through nbdsh (the host side of the guest tests
# that hand arrays from md to the plugin).
read_array ()
{
    local out=$1 sectors=$2
    shift 2
    OUT=$out SECTORS=$sectors raid_nbdkit "$@" --run '
        nbdsh -u "$uri" -c "
import os
want = int(os.environ[\"SECTORS\"]) * 512
size = h.get_size()
print(\"export size\", size, \"md array size\", want)
assert size >= want, \"the plugin serves less than md\"
with open(os.environ[\"OUT\"], \"wb\") as f:
    off = 0
    while off < want:
        n = min(4 << 20, want - off)
        f.write(h.pread(n, off))
        off += n
"'
}
