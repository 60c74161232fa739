#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# md write-intent bitmaps pass between the plugin and Linux md intact.
#
# Two guest boots (tests/vm/build-guest.sh; the guest side is
# tests/vm/guest-md-bitmap.sh), the plugin in between:
#
#  (a) mdadm in the guest creates RAID-5 and RAID-6 arrays with
#      --bitmap=internal, two with --bitmap-chunk=64K (many bits) and one
#      with mdadm's default chunk, writes a pattern and stops them.  Here
#      the plugin assembles each from its superblocks alone (members
#      shuffled), every sector of the pattern must read back, it writes a
#      second pattern over a third of the array and exits cleanly.
#  (b) the plugin creates arrays (create=true: its default bitmap, and
#      bitmap-chunk=64K) and writes a pattern through them.
#  (c) the plugin creates arrays with bitmap-chunk=64K, its initial resync
#      ends (status JSON over control=), a pattern is written and flushed,
#      and once the plugin reports no dirty bit, three small regions are
#      written; with those writes acknowledged and the connection still
#      open nbdkit is killed with SIGKILL.  Here the members must say
#      "active" and carry the bits of every region written, on every member.
#  In the second boot, for each array, before assembly: mdadm -X on every
#  member shows a valid bitmap (magic, the array's UUID, state OK, events
#  equal to the superblock's or one ahead, the chunk asked for), the same
#  on every member, with no dirty bit for (a) and (b) and, for (c), at
#  least the regions written but not all.  mdadm --assemble must take it:
#  for (c) md 6.1 wants no --run, the array being dirty but not degraded
#  (only dirty and degraded wants --run); were plain assembly refused, the
#  guest retries with --run and the log says so.  --detail shows "Intent
#  Bitmap : Internal" and a used device size equal to the bitmap's sync
#  size; dmesg has no complaint about the bitmap (invalid, UUID mismatch,
#  out of date / full recovery); (a) and (b) come up clean with no resync,
#  (c) resyncs; the pattern reads back through /dev/md0; md's check counts
#  no mismatch; after mdadm --stop every member's bitmap is clean (md kept
#  up the plugin's bitmap).
#
#  That md's resync in (c) went by the bitmap, and not over the whole
#  array, shows in a control: a copy of one (c) array with one parity byte
#  flipped in a region whose bit is set and one in a region whose bit is
#  clear.  A bitmap resync repairs the first and never reads the second:
#  the resync counts 8 mismatched sectors (one 4 KiB stripe) and the check
#  after it 8 again.  A full resync would count 16 then 0; no resync 16.
#  (md 6.1 logs "bitmap initialized from disk: ... set N of M bits" only at
#  debug level, so dmesg cannot show it.)
#
# Skips unless qemu and the guest are here.

source "$(dirname "$0")/../lib/functions.sh"
source "$(dirname "$0")/common.sh"
requires nbdsh
vm_setup

MEMBER_SIZE=${MEMBER_SIZE:-8M}
CTL=$top_srcdir/tools/nbdkit-raid-ctl

# The nbdsh side, by $ACT.  W: the writes file ("SEED FIRST N" lines,
# appended).  Patterns come from patgen, like the guest's.
cat > "$tmpdir/pat.py" <<'EOF'
import os
import subprocess

env = os.environ
size = h.get_size()
s = size // 512


def pattern(seed, first, n):
    img = env["TMPDIR_"] + "/pat.img"
    open(img, "wb").close()
    subprocess.check_call([env["PATGEN"], str(seed), str(first), str(n), img])
    with open(img, "rb") as f:
        off, end = first * 512, (first + n) * 512
        while off < end:
            f.seek(off)
            k = min(4 << 20, end - off)
            h.pwrite(f.read(k), off)
            off += k
    os.unlink(img)
    with open(env["W"], "a") as f:
        print(seed, first, n, file=f)


act = env["ACT"]
if act == "a":
    # Read all of it, then overwrite a third, unaligned.
    with open(env["IMG"], "wb") as f:
        for off in range(0, size, 4 << 20):
            f.write(h.pread(min(4 << 20, size - off), off))
    pattern(2, s // 3 + 5, s // 3 + 3)
    h.flush()
elif act == "whole":
    pattern(1, 0, s)
    if env.get("OVER"):
        pattern(2, s // 3 + 5, s // 4 + 3)
    h.flush()
elif act == "regions":
    # Three regions by stripe rows (ROW: array bytes a row): a few sectors
    # in row 0, rows 10-12 unaligned, the last sector.  No flush.
    row = int(env["ROW"]) // 512
    pattern(3, 7, 3)
    pattern(4, 10 * row + 5, 2 * row)
    pattern(5, s - 1, 1)
    st = subprocess.check_output([env["CTL"], env["SOCK"], "status"])
    open(env["STATUS"], "wb").write(st)
    os.kill(int(env["PID"]), 9)
print("array size", size)
EOF
# nbdsh_pat URI ACT [VAR=VALUE...]: pat.py in nbdsh; a script, so that
# nbdkit's --run can call it too.
cat > "$tmpdir/nbdsh-pat" <<EOF
#!/bin/sh
uri=\$1 act=\$2
shift 2
exec env ACT="\$act" PATGEN="$PATGEN" TMPDIR_="$tmpdir" CTL="$CTL" "\$@" \\
    nbdsh -u "\$uri" -c "exec(open('$tmpdir/pat.py').read())"
EOF
chmod +x "$tmpdir/nbdsh-pat"
nbdsh_pat () { "$tmpdir/nbdsh-pat" "$@"; }

# bitmaps.py ROW CHUNK WRITES MEMBER...: after the kill: every member's
# superblock must be active and its bitmap hold the bits of every row
# written (WRITES lines after the first).  Prints, from member 0,
# "WANTED NBITS DATA_OFFSET" (WANTED: how many bits the writes need) and
# the bits set.
cat > "$tmpdir/bitmaps.py" <<'EOF'
import struct
import sys

row, chunk, writes = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
members = sys.argv[4:]
ok = True
out = None
for m in members:
    with open(m, "rb") as f:
        f.seek(4096)
        sb = f.read(4096)
        f.seek(8192)
        area = f.read(256 + 131072)
    events, resync = struct.unpack_from("<QQ", sb, 200)
    doff, size = struct.unpack_from("<Q", sb, 128)[0], struct.unpack_from("<Q", sb, 80)[0]
    magic = struct.unpack_from("<I", area, 0)[0]
    bev, bcl = struct.unpack_from("<QQ", area, 24)
    bchunk = struct.unpack_from("<I", area, 52)[0]
    if magic != 0x6d746962 or bchunk == 0:
        print(f"{m}: no bitmap (magic {magic:#x}, chunk {bchunk})", file=sys.stderr)
        ok = False
        continue
    nbits = (size * 512 + bchunk - 1) // bchunk
    bits = [n for n in range(nbits) if area[256 + n // 8] >> (n % 8) & 1]
    want = set()
    for line in open(writes).read().split("\n")[1:]:
        if line:
            _, first, n = map(int, line.split())
            for r in range(first * 512 // row, ((first + n) * 512 - 1) // row + 1):
                want.update(range(r * chunk // bchunk, ((r + 1) * chunk - 1) // bchunk + 1))
    missing = sorted(want - set(bits))
    print(f"  {m}: superblock events {events} resync_offset {resync:#x}; bitmap events"
          f" {bev} cleared {bcl}, chunk {bchunk}, {len(bits)} of {nbits} bits set: {bits}",
          file=sys.stderr)
    if resync != 0:
        print(f"{m}: the superblock is not active after the kill", file=sys.stderr)
        ok = False
    if missing:
        print(f"{m}: rows written but their bits clear: {missing}", file=sys.stderr)
        ok = False
    if out is None:
        out = f"{len(want)} {nbits} {doff * 512}\n" + " ".join(map(str, bits))
print(out)
sys.exit(0 if ok else 1)
EOF

# wait_status CTL EXPR SECONDS WHAT: poll the status JSON (s) until EXPR.
wait_status ()
{
    python3 - "$CTL" "$@" <<'EOF'
import json, subprocess, sys, time
ctl, sock, expr, secs, what = sys.argv[1:]
t0 = time.time()
end = t0 + float(secs)
s = None
while time.time() < end:
    try:
        s = json.loads(subprocess.check_output([ctl, sock, "status"], stderr=subprocess.DEVNULL))
        if eval(expr):
            print(f"  {what}: after {time.time() - t0:.1f} s: bitmap {s.get('bitmap')}")
            sys.exit(0)
    except (subprocess.CalledProcessError, ValueError):
        pass
    time.sleep(0.2)
print(f"  {what}: not within {secs} s; last status: {json.dumps(s)}")
sys.exit(1)
EOF
}

check_lines=$tmpdir/check.txt
: > "$check_lines"
writes_files=()

# --- (a) first boot: mdadm creates arrays with bitmaps ----------------------
# NAME LEVEL N CHUNK_KIB BITMAP_CHUNK
a_arrays="
a5 5 4 64 64K
a6 6 5 512 64K
ad 6 4 64 default
"
: > "$tmpdir/create.txt"
while read -r name level n chunk bchunk; do
    [ -n "$name" ] || continue
    echo "create $name $level $n $chunk $bchunk" >> "$tmpdir/create.txt"
    for (( i = 0; i < n; i++ )); do
        truncate -s "$MEMBER_SIZE" "$tmpdir/$name-d$i"
        vm_disk "$name-d$i" "$tmpdir/$name-d$i"
    done
done <<< "$a_arrays"
vm_results_disk mk
mkdir -p "$tmpdir/mk-in"
cp "$tmpdir/create.txt" "$tmpdir/mk-in/arrays.txt"
vm_initrd "$tmpdir/initrd-mk" "$vm_dir/guest-md-bitmap.sh" "$tmpdir/mk-in/arrays.txt"
run_vm mk "$tmpdir/initrd-mk" "${vm_args[@]}"
vm_args=(); _vm_ndisk=0
if vm_results mk "$tmpdir/mk" && vm_result mk; then
    grep -a -E 'RAIDVM: (ok|FAIL)|bitmap:' "$tmpdir/mk.console" | tr -d '\r'
    echo "== (a) mdadm's arrays made ($(vm_elapsed))"
    while read -r name level n chunk bchunk; do
        [ -n "$name" ] || continue
        sectors=$(cat "$tmpdir/mk/$name-size.txt")
        w=$tmpdir/$name-writes.txt
        echo "1 0 $sectors" > "$w"
        mapfile -t shuffled < <(for (( i = 0; i < n; i++ )); do echo "disk=$tmpdir/$name-d$i"; done | shuf)
        echo "== (a) $name: the plugin, from the superblocks: ${shuffled[*]}"
        rm -f "$tmpdir/img"
        if ! raid_nbdkit "${shuffled[@]}" --run "$tmpdir/nbdsh-pat \"\$uri\" a W=$w IMG=$tmpdir/img" \
                2> "$tmpdir/$name.nbdkit.log"; then
            cat "$tmpdir/$name.nbdkit.log"
            fail "(a) $name: the plugin reading and writing mdadm's array"
            continue
        fi
        sed -n 's/^/  nbdkit: /; /bitmap/p' "$tmpdir/$name.nbdkit.log"
        if "$PATGEN" -l <(echo "1 0 $sectors") "$sectors" "$tmpdir/img"; then
            echo "  mdadm's pattern read back through the plugin: every sector ok"
        else
            fail "(a) $name: the plugin did not read mdadm's pattern back"
        fi
        rm -f "$tmpdir/img"
        bc=65536
        [ "$bchunk" = 64K ] || bc=-
        echo "check $name $n clean $sectors $bc 0 - 0" >> "$check_lines"
        writes_files+=("$w")
        for (( i = 0; i < n; i++ )); do vm_disk "$name-d$i" "$tmpdir/$name-d$i"; done
    done <<< "$a_arrays"
else
    fail "(a) the guest that creates arrays with mdadm"
fi
echo "== (a) host side done ($(vm_elapsed))"

# --- (b) the plugin creates arrays with bitmaps -----------------------------
# NAME LEVEL N CHUNK_KIB BITMAP_ARG EXPECTED_CHUNK (spec: default 64M)
b_arrays="
b5 5 4 64 - 67108864
b6 6 5 512 bitmap-chunk=64K 65536
"
while read -r name level n chunk barg bc; do
    [ -n "$name" ] || continue
    make_members "$n" "$MEMBER_SIZE" "$name-d"
    args=(create=true level="$level" chunk="${chunk}K")
    [ "$barg" = - ] || args+=("$barg")
    w=$tmpdir/$name-writes.txt
    : > "$w"
    echo "== (b) $name: nbdkit raid ${args[*]}, $n members of $MEMBER_SIZE"
    if ! raid_nbdkit "${args[@]}" "${members[@]/#/disk=}" \
            --run "$tmpdir/nbdsh-pat \"\$uri\" whole OVER=1 W=$w" \
            2> "$tmpdir/$name.nbdkit.log"; then
        cat "$tmpdir/$name.nbdkit.log"
        fail "(b) $name: creating and writing through the plugin"
        continue
    fi
    sectors=$(awk 'NR == 1 { print $3 }' "$w")
    echo "check $name $n clean $sectors $bc 0 - 0" >> "$check_lines"
    writes_files+=("$w")
    for (( i = 0; i < n; i++ )); do vm_disk "$name-d$i" "${members[i]}"; done
done <<< "$b_arrays"
echo "== (b) done ($(vm_elapsed))"

# --- (c) unclean: SIGKILL with dirty bits -----------------------------------
# NAME LEVEL N CHUNK_KIB
c_arrays="
c5 5 4 64
c6 6 5 128
"
while read -r name level n chunk; do
    [ -n "$name" ] || continue
    make_members "$n" "$MEMBER_SIZE" "$name-d"
    sock=$tmpdir/$name.sock ctl=$tmpdir/$name.ctl
    w=$tmpdir/$name-writes.txt
    : > "$w"
    uri="nbd+unix:///?socket=$sock"
    echo "== (c) $name: nbdkit raid create=true level=$level chunk=${chunk}K bitmap-chunk=64K, $n members"
    if ! start_nbdkit "$sock" create=true level="$level" chunk="${chunk}K" bitmap-chunk=64K \
            control="$ctl" "${members[@]/#/disk=}" 2> "$tmpdir/$name.nbdkit.log"; then
        cat "$tmpdir/$name.nbdkit.log"
        fail "(c) $name: nbdkit did not start"
        continue
    fi
    pid=${_bg_pids[-1]}
    if ! wait_status "$ctl" 'not s["scrub"]["running"] and s["scrub"]["finished"] and s["bitmap"]' \
            120 "the initial resync"; then
        fail "(c) $name: the initial resync did not end, or no bitmap in the status"
        continue
    fi
    nbdsh_pat "$uri" whole W="$w" ||
        { fail "(c) $name: writing the pattern"; continue; }
    if ! wait_status "$ctl" 's["bitmap"]["dirty"] == 0' 60 "bits cleared after the flush"; then
        fail "(c) $name: the plugin never cleared its bits after a flush"
        continue
    fi
    row=$(( chunk * 1024 * (n - level + 4) ))
    nbdsh_pat "$uri" regions W="$w" ROW=$row SOCK="$ctl" PID="$pid" \
        STATUS="$tmpdir/$name.status" || echo "  (nbdsh: exit status $?)"
    kill -9 "$pid" 2>/dev/null || :     # (pat.py has, unless it failed)
    wait "$pid" 2>/dev/null || :
    if [ ! -s "$tmpdir/$name.status" ] || [ "$(wc -l < "$w")" != 4 ]; then
        fail "(c) $name: the writes or the status before the kill failed"
        continue
    fi
    cat "$w"
    echo "  status before the kill: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bitmap"])' "$tmpdir/$name.status" 2>&1)"
    if ! bm=$(python3 "$tmpdir/bitmaps.py" "$row" $((chunk * 1024)) "$w" "${members[@]}"); then
        fail "(c) $name: after the kill, superblocks or bitmaps on the members are not as written"
    fi
    read -r min_dirty nbits doff <<< "$(head -n 1 <<< "$bm")"
    setbits=" $(tail -n 1 <<< "$bm") "
    sectors=$(awk 'NR == 1 { print $3 }' "$w")
    echo "check $name $n unclean $sectors 65536 $min_dirty 0 0" >> "$check_lines"
    writes_files+=("$w")
    for (( i = 0; i < n; i++ )); do vm_disk "$name-d$i" "${members[i]}"; done

    # The control: c5 again, a parity byte flipped in row 0 (its bit set)
    # and in the first row past the middle whose bit is clear.  RAID-5
    # left-symmetric: row r's parity is on role n-1 - r%n.
    if [ "$name" = c5 ]; then
        clean_row=
        for (( r = nbits / 2; r < nbits; r++ )); do
            [[ $setbits == *" $r "* ]] || { clean_row=$r; break; }
        done
        if [[ $setbits != *" 0 "* ]] || [ -z "$clean_row" ]; then
            fail "(c) cx: no row 0 bit set, or no clean row (bits:$setbits)"
        else
            for (( i = 0; i < n; i++ )); do
                cp --sparse=always "${members[i]}" "$tmpdir/cx-d$i"
            done
            for r in 0 "$clean_row"; do
                python3 -c '
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]))
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 0x5a]))
' "$tmpdir/cx-d$(( n - 1 - r % n ))" $(( doff + r * chunk * 1024 + 12345 ))
            done
            echo "  cx: c5's members, parity flipped in rows 0 (dirty) and $clean_row (clean)"
            cp "$w" "$tmpdir/cx-writes.txt"
            echo "check cx $n unclean $sectors 65536 $min_dirty 8 8" >> "$check_lines"
            writes_files+=("$tmpdir/cx-writes.txt")
            for (( i = 0; i < n; i++ )); do vm_disk "cx-d$i" "$tmpdir/cx-d$i"; done
        fi
    fi
done <<< "$c_arrays"
echo "== (c) done ($(vm_elapsed))"

# --- second boot: md checks them all ----------------------------------------
cat "$check_lines"
[ -s "$check_lines" ] || exit 1
mkdir -p "$tmpdir/check-in"
cp "$check_lines" "$tmpdir/check-in/arrays.txt"
vm_results_disk check
vm_initrd "$tmpdir/initrd" "$vm_dir/guest-md-bitmap.sh" "$tmpdir/check-in/arrays.txt" \
    "${writes_files[@]}"
run_vm check "$tmpdir/initrd" "${vm_args[@]}"
vm_results check "$tmpdir/out" || true
vm_result check || fail "the md check guest did not pass"
grep -a -E 'RAIDVM: (ok|FAIL)|RAIDVM: .*(refused|after assembly|state at)' "$tmpdir/check.console" |
    tr -d '\r' || true

vm_finish
