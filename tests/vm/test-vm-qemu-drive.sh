#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The export as a VM's disk through qemu's own NBD client, the way the
# plugin is used as a qemu drive backend:
#
#   -drive file=nbd+unix:///?socket=S,file.reconnect-delay=60,format=raw,
#          if=none,id=r -device virtio-blk-pci,drive=r
#
# on an md RAID-6 (create=true) of six sparse files.  The guest
# (tests/vm/guest-qemu-drive.sh) makes ext4 and writes files of random
# data, each fsynced, with their checksums.  While it writes, here:
#   1. member 1 is failed and replaced by a new file (nbdkit-raid-ctl),
#      the rebuild throttled (rebuild-rate) so that it overlaps writes;
#   2. then member 4, the same;
#   3. nbdkit is killed (SIGKILL) and started again on the same socket
#      after a pause: qemu's reconnect-delay holds the guest's I/O
#      meanwhile, and resends what was in flight; the array, left active,
#      resyncs what its write-intent bitmap marks.  (Not SIGTERM: nbdkit
#      1.32 then answers the requests that come while it stops with
#      ESHUTDOWN, which qemu passes to the guest as I/O errors, and ext4
#      aborts its journal; test-qemu-reconnect.sh shows both, and
#      the man page's SERVICE says what to do);
#   4. the guest is told to stop (a word written on a second disk).
# Each step must see the guest's writes go on (its progress lines).  The
# guest then unmounts, drops its caches, e2fsck -fn is clean, every
# checksum matches, and its kernel logged no I/O or ext4 error; its
# longest pause between two files must cover the restart.  Here, after
# the guest is gone: scrub check finds 0 mismatches.
#
# Skips (77) unless qemu and the guest are here.

source "$(dirname "$0")/../lib/functions.sh"
source "$(dirname "$0")/common.sh"
vm_setup

ctl_tool=$top_srcdir/tools/nbdkit-raid-ctl
sock=$tmpdir/raid.sock ctl=$tmpdir/raid.ctl
console=$tmpdir/qdrive.console
OUTAGE=4                        # seconds between nbdkit's stop and start

make_members 6 48M
spares=("$tmpdir/spare1" "$tmpdir/spare4")
truncate -s 48M "${spares[@]}"
start_nbdkit "$sock" create=true level=6 chunk=64K rebuild-rate=8M \
    control="$ctl" "${members[@]}" 2> "$tmpdir/nbdkit1.log"
python3 "$top_srcdir/tests/lib/mdsb.py" wait-clean "${members[0]}" 60 ||
    fail "the new array's first resync did not end"

truncate -s 4096 "$tmpdir/ctl.img"
vm_args+=(-drive "file=nbd+unix:///?socket=$sock,file.reconnect-delay=60,format=raw,if=none,id=r,cache=none"
          -device "virtio-blk-pci,drive=r,serial=raid")
vm_disk ctl "$tmpdir/ctl.img"
vm_results_disk qdrive
vm_initrd "$tmpdir/initrd" "$vm_dir/guest-qemu-drive.sh"

# The guest runs in the background; here we act on what its console says.
run_vm qdrive "$tmpdir/initrd" "${vm_args[@]}" > "$tmpdir/vm.out" 2>&1 &
vm_job=$!
cleanup_fn _vm_kill "$tmpdir/qdrive.qemu.pid"

# wait_console REGEX SECONDS: until the console has a line matching it.
wait_console () { vm_wait_console "$console" "$vm_job" "$2" "$1"; }
progress () { grep -a -o 'RAIDVM: progress [0-9]*' "$console" | tail -n 1 | awk '{ print $3 + 0 }'; }
# more_progress N: until the guest has written 10 more files than N.
more_progress ()
{
    local i
    for (( i = 0; i < 600; i++ )); do
        [ "$(progress)" -gt "$1" ] && return 0
        kill -0 "$vm_job" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
ctl () { "$ctl_tool" "$ctl" "$@"; }
# status EXPR: a Python expression on the status JSON (st), printed.
status () { ctl status | python3 -c "import json, sys; st = json.load(sys.stdin); print($1)"; }
rebuilding () { [ "$(status 'st["rebuild"]["running"]')" = True ]; }

# fail_replace ROLE SPARE: fail, replace, and see the guest write while
# the rebuild runs and after it.
fail_replace ()
{
    local p seen=0
    p=$(progress)
    ctl fail "$1" || fail "fail $1"
    more_progress "$p" || fail "no writes after fail $1"
    p=$(progress)
    ctl replace "$1" "$2" || fail "replace $1"
    while rebuilding; do
        [ "$(progress)" -gt "$p" ] && seen=1
        sleep 0.2
    done
    ctl show
    [ "$seen" = 1 ] && echo "member $1: the guest wrote during its rebuild" ||
        echo "member $1: (the rebuild ended before the guest's next progress line)"
    more_progress "$(progress)" || fail "no writes after the rebuild of member $1"
    [ "$(status 'st["degraded"]')" = False ] || fail "still degraded after replace $1"
}

if wait_console 'RAIDVM: progress [0-9]' 300; then
    echo "== the guest writes ($(vm_elapsed)); fail and replace member 1"
    fail_replace 1 "${spares[0]}"
    echo "== fail and replace member 4 ($(vm_elapsed))"
    fail_replace 4 "${spares[1]}"
    members[1]=${spares[0]} members[4]=${spares[1]}

    echo "== kill nbdkit and start it again ($(vm_elapsed))"
    p=$(progress)
    pid=${_bg_pids[0]}
    t0=$(date +%s.%N)
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null || true
    sleep "$OUTAGE"
    start_nbdkit "$sock" rebuild-rate=8M control="$ctl" "${members[@]}" \
        2> "$tmpdir/nbdkit2.log" || fail "nbdkit did not start again"
    t1=$(date +%s.%N)
    outage=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    echo "nbdkit was away for $outage s"
    more_progress "$p" || fail "the guest wrote nothing after the restart"
    more_progress "$(progress)" || fail "the guest stopped writing after the restart"
    grep -a 'progress' "$console" | tail -n 3 | tr -d '\r'
else
    fail "the guest never started writing"
fi
echo "== tell the guest to stop ($(vm_elapsed))"
printf STOP | dd of="$tmpdir/ctl.img" conv=notrunc status=none
wait "$vm_job" || true
cat "$tmpdir/vm.out"
vm_results qdrive "$tmpdir/out" || fail "the guest saved no results"
vm_result qdrive || fail "the guest's checks"
grep -a -E 'RAIDVM: (wrote|longest|[0-9]+ files)' "$console" | tr -d '\r'
gap=$(grep -a -o 'longest gap between two files: [0-9.]*' "$console" | awk '{ print $NF }')
if [ -n "${outage:-}" ] && [ -n "$gap" ]; then
    # The guest paused at least while nbdkit was away.
    awk -v g="$gap" -v o="$OUTAGE" 'BEGIN { exit !(g >= o) }' ||
        fail "the guest's longest pause ($gap s) is shorter than the outage ($OUTAGE s): was it restarted under its writes?"
fi

echo "== scrub check ($(vm_elapsed))"
ctl wait 120 > /dev/null || fail "the resync after the restart did not end"
ctl scrub check || fail "scrub check"
ctl wait 120 > /dev/null || fail "the scrub did not end"
sc=$(status 'st["scrub"]["finished"], st["scrub"]["mismatch_cnt"]')
echo "scrub: finished, mismatch_cnt: $sc"
[ "$sc" = "True 0" ] || fail "scrub: $sc, expected finished with 0 mismatches"
vm_finish
