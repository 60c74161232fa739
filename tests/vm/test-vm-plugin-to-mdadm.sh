#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Arrays the plugin creates (create=true) are arrays Linux md accepts.
#
# The plugin writes fresh md v1.2 superblocks on member files (RAID-5 and
# RAID-6, 3 to 6 members, 64K and 512K chunks, the four rotating layouts,
# the default and an explicit data offset) and a pattern is written
# through it with nbdsh: the whole array, then an unaligned overwrite.  In
# a guest (tests/vm/build-guest.sh) mdadm --assemble must take the files,
# --detail must show them clean with the same geometry and size, the
# pattern must read back through /dev/md0, and md's own "check" pass must
# count no mismatches.  Also an array put through hundreds of fail/replace
# cycles (its dev_numbers reused as md reuses them), one whose member was
# failed, written around and re-added from the bitmap, and arrays mdadm
# created (in a first guest boot) and the plugin then wrote to, assembling
# from their superblocks.

source "$(dirname "$0")/../lib/functions.sh"
source "$(dirname "$0")/common.sh"
requires nbdsh
vm_setup

MEMBER_SIZE=${MEMBER_SIZE:-12M}
# NAME N LEVEL LAYOUT CHUNK_KIB [DATA_OFFSET]
arrays="
p5a 4 5 left-symmetric 64
p5b 3 5 right-asymmetric 512 2M
p6a 5 6 left-asymmetric 64
p6b 6 6 right-symmetric 512
"

: > "$tmpdir/arrays.txt"
while read -r name n level layout chunk doff; do
    [ -n "$name" ] || continue
    make_members "$n" "$MEMBER_SIZE" "$name-d"
    args=(create=true level="$level" layout="$layout" chunk="${chunk}K")
    [ -z "$doff" ] || args+=(data-offset="$doff")
    echo "== $name: nbdkit raid ${args[*]}, $n members of $MEMBER_SIZE"
    # The pattern: all of it (seed 1), then an unaligned overwrite (2).
    # A new array's parity is synchronised in the background: the --run
    # waits for that resync before nbdkit stops, so that the array is
    # clean on disk whatever the machine's load (a stop in the middle is
    # recorded and md would go on with it: active, not clean).
    if ! W=$tmpdir/$name-writes.txt PATGEN=$PATGEN IMG=$tmpdir/pattern \
        CTL=$tmpdir/$name.ctl RAIDCTL=$top_srcdir/tools/nbdkit-raid-ctl \
        raid_nbdkit "${args[@]}" "${members[@]/#/disk=}" \
            control="$tmpdir/$name.ctl" --run '
        nbdsh -u "$uri" -c "
import os, subprocess
size = h.get_size()
s = size // 512
w = [(1, 0, s), (2, s // 3 + 5, s // 4 + 3)]
img = os.environ[\"IMG\"]
for seed, first, n in w:
    open(img, \"wb\").close()
    subprocess.check_call([os.environ[\"PATGEN\"], str(seed), str(first), str(n), img])
    with open(img, \"rb\") as f:
        off, end = first * 512, (first + n) * 512
        while off < end:
            f.seek(off)
            k = min(4 << 20, end - off)
            h.pwrite(f.read(k), off)
            off += k
h.flush()
with open(os.environ[\"W\"], \"w\") as f:
    for seed, first, n in w:
        print(seed, first, n, file=f)
print(\"array size\", size)
" && "$RAIDCTL" "$CTL" wait 600 > /dev/null'; then
        fail "$name: creating and writing through the plugin"
        continue
    fi
    rm -f "$tmpdir/pattern"
    sectors=$(awk 'NR == 1 { print $3 }' "$tmpdir/$name-writes.txt")
    echo "$name $n $level $layout $chunk $sectors" >> "$tmpdir/arrays.txt"
    for (( i = 0; i < n; i++ )); do
        vm_disk "$name-d$i" "${members[i]}"
    done
done <<< "$arrays"
# An array the plugin made and then put through hundreds of fail/replace
# cycles (more than md's 384 dev_roles slots): the replacements reuse the
# slots as md's do, so mdadm must still assemble the result, clean and with
# the data.  Small members, to keep it quick.
if [ -z "${VM_SKIP_REPLACED:-}" ]; then
    name=p5r n=4 cycles=${VM_REPLACE_CYCLES:-420}
    make_members "$n" 1280K "$name-d"
    echo "== $name: create=true level=5 chunk=16K, then $cycles fail/replace cycles"
    if PATGEN=$PATGEN IMG=$tmpdir/pattern W=$tmpdir/$name-writes.txt \
        raid_nbdkit create=true level=5 chunk=16K "${members[@]/#/disk=}" --run '
        nbdsh -u "$uri" -c "
import os, subprocess
s = h.get_size() // 512
img = os.environ[\"IMG\"]
open(img, \"wb\").close()
subprocess.check_call([os.environ[\"PATGEN\"], \"3\", \"0\", str(s), img])
with open(img, \"rb\") as f:
    h.pwrite(f.read(s * 512), 0)
h.flush()
with open(os.environ[\"W\"], \"w\") as f:
    print(3, 0, s, file=f)
"' && start_nbdkit "$tmpdir/$name.sock" "${members[@]/#/disk=}" \
        control="$tmpdir/$name.ctl" &&
        python3 "$vm_dir/replace-cycles.py" "$tmpdir/$name.ctl" "$cycles" 1310720 \
            "$tmpdir" "$name" "${members[@]}" > "$tmpdir/$name-roles.txt"; then
        # A clean stop (SIGTERM) marks the superblocks clean.
        kill "${_bg_pids[-1]}"
        wait "${_bg_pids[-1]}" || true
        sectors=$(awk 'NR == 1 { print $3 }' "$tmpdir/$name-writes.txt")
        echo "$name $n 5 left-symmetric 16 $sectors" >> "$tmpdir/arrays.txt"
        echo "== $name: $cycles replacements in $(vm_elapsed)"
        # md reuses the slots: dev_roles stays as long as the array is wide.
        while read -r f; do
            read -r dn md <<< "$(python3 "$top_srcdir/tests/lib/mdsb.py" get "$f" dev_number max_dev)"
            [ "$md" -le $((2 * n)) ] ||
                fail "$name: $f: max_dev $md (dev_number $dn) after $cycles replacements"
        done < "$tmpdir/$name-roles.txt"
        i=0
        while read -r f; do
            vm_disk "$name-d$i" "$f"
            i=$((i + 1))
        done < "$tmpdir/$name-roles.txt"
    else
        fail "$name: creating it and replacing its members through the plugin"
    fi
    rm -f "$tmpdir/pattern"
fi

# An array the plugin made with a bitmap, one member failed, written while
# it was out and re-added: its superblocks are what md's re-add leaves (the
# member in its slot, with its UUID, at the array's events), so mdadm must
# assemble it clean, with the data, and find no mismatch.
# p6e: the same, but nbdkit is stopped in the middle of the re-add: member
# 2's superblock says it is recovering from the bitmap (md's feature bits
# 0x2 and 0x80), and md must take it so, finish the recovery, and end
# clean with the data.
for name in p6d p6e; do
    [ -z "${VM_SKIP_READD:-}" ] || break
    n=5 midway= rate=
    [ "$name" = p6d ] || { midway=midway; rate=rebuild-rate=128K; }
    make_members "$n" 6M "$name-d"
    echo "== $name: create=true level=6 chunk=64K bitmap-chunk=64K, member 2 failed, written, re-added${midway:+, stopped midway}"
    if PATGEN=$PATGEN IMG=$tmpdir/pattern W=$tmpdir/$name-writes.txt \
        raid_nbdkit create=true level=6 chunk=64K bitmap-chunk=64K \
        "${members[@]/#/disk=}" --run '
        nbdsh -u "$uri" -c "
import os, subprocess
s = h.get_size() // 512
img = os.environ[\"IMG\"]
open(img, \"wb\").close()
subprocess.check_call([os.environ[\"PATGEN\"], \"4\", \"0\", str(s), img])
with open(img, \"rb\") as f:
    h.pwrite(f.read(s * 512), 0)
h.flush()
with open(os.environ[\"W\"], \"w\") as f:
    print(4, 0, s, file=f)
"' && start_nbdkit "$tmpdir/$name.sock" "${members[@]/#/disk=}" \
        control="$tmpdir/$name.ctl" $rate &&
        python3 "$vm_dir/readd-once.py" "$tmpdir/$name.ctl" "$tmpdir/$name.sock" \
            "$PATGEN" "$tmpdir/$name-writes.txt" 2 $midway; then
        kill "${_bg_pids[-1]}"
        wait "${_bg_pids[-1]}" || true
        features=$(python3 "$top_srcdir/tests/lib/mdsb.py" get "${members[2]}" feature_map)
        [ -z "$midway" ] || [ $(( features & 0x82 )) = $(( 0x82 )) ] ||
            fail "$name: member 2's feature_map is $features after the stop, not recovering from the bitmap"
        sectors=$(awk 'NR == 1 { print $3 }' "$tmpdir/$name-writes.txt")
        echo "$name $n 6 left-symmetric 64 $sectors ${midway:+recovering}" >> "$tmpdir/arrays.txt"
        for (( i = 0; i < n; i++ )); do
            vm_disk "$name-d$i" "${members[i]}"
        done
    else
        fail "$name: creating it, failing and re-adding a member through the plugin"
    fi
    rm -f "$tmpdir/pattern"
done

# And the other way round: arrays mdadm made (in a first guest) that the
# plugin, assembling from their superblocks, writes to; md must then find
# them clean, with the plugin's writes, and consistent.
if [ -z "${VM_SKIP_MDADM_MADE:-}" ]; then
    echo "== mdadm-made arrays: created in a guest"
    : > "$tmpdir/mk-arrays.txt"
    for a in "m5 5 4 64 left-symmetric - 2,0,3,1" "m6 6 5 512 right-asymmetric - 4,3,2,1,0"; do
        read -r name level n chunk layout _ _ <<< "$a"
        echo "$a" >> "$tmpdir/mk-arrays.txt"
        for (( i = 0; i < n; i++ )); do
            truncate -s "$MEMBER_SIZE" "$tmpdir/$name-d$i"
        done
    done
    saved_args=("${vm_args[@]}"); saved_n=$_vm_ndisk
    vm_args=(); _vm_ndisk=0
    while read -r name level n _; do
        for (( i = 0; i < n; i++ )); do vm_disk "$name-d$i" "$tmpdir/$name-d$i"; done
    done < "$tmpdir/mk-arrays.txt"
    vm_results_disk mk
    mkdir -p "$tmpdir/arrays-mk"
    cp "$tmpdir/mk-arrays.txt" "$tmpdir/arrays-mk/arrays.txt"
    vm_initrd "$tmpdir/initrd-mk" "$vm_dir/guest-md-create.sh" "$tmpdir/arrays-mk/arrays.txt"
    run_vm mk "$tmpdir/initrd-mk" "${vm_args[@]}"
    vm_args=("${saved_args[@]}"); _vm_ndisk=$saved_n
    if vm_results mk "$tmpdir/mk" && vm_result mk; then
        while read -r name level n chunk layout _; do
            cp "$tmpdir/mk/$name-writes.txt" "$tmpdir/$name-writes.txt"
            sectors=$(cat "$tmpdir/mk/$name-size.txt")
            mapfile -t shuffled < <(for (( i = 0; i < n; i++ )); do echo "disk=$tmpdir/$name-d$i"; done | shuf)
            echo "== $name: the plugin writes, from the superblocks: ${shuffled[*]}"
            if W=$tmpdir/$name-writes.txt PATGEN=$PATGEN IMG=$tmpdir/pattern \
                raid_nbdkit metadata=md "${shuffled[@]}" --run '
                nbdsh -u "$uri" -c "
import os, subprocess
s = h.get_size() // 512
seed, first, n = 9, s // 2 + 3, s // 3 + 1
img = os.environ[\"IMG\"]
open(img, \"wb\").close()
subprocess.check_call([os.environ[\"PATGEN\"], str(seed), str(first), str(n), img])
with open(img, \"rb\") as f:
    f.seek(first * 512)
    h.pwrite(f.read(n * 512), first * 512)
h.flush()
with open(os.environ[\"W\"], \"a\") as f:
    print(seed, first, n, file=f)
"'; then
                echo "$name $n $level $layout $chunk $sectors" >> "$tmpdir/arrays.txt"
                for (( i = 0; i < n; i++ )); do
                    vm_disk "$name-d$i" "$tmpdir/$name-d$i"
                done
            else
                fail "$name: writing through the plugin to an mdadm-made array"
            fi
            rm -f "$tmpdir/pattern"
        done < "$tmpdir/mk-arrays.txt"
    else
        fail "the guest that creates arrays with mdadm"
    fi
fi

# A control: p5a's members again, with one byte of row 0's parity
# (member 3 in left-symmetric, at the default 1 MiB data offset) flipped;
# md's check must count it, or a zero above proves nothing.
if grep -q '^p5a ' "$tmpdir/arrays.txt"; then
    for (( i = 0; i < 4; i++ )); do
        cp --sparse=always "$tmpdir/p5a-d$i" "$tmpdir/p5x-d$i"
        vm_disk "p5x-d$i" "$tmpdir/p5x-d$i"
    done
    python3 -c '
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek((1 << 20) + 12345)
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 0x5a]))
' "$tmpdir/p5x-d3"
    cp "$tmpdir/p5a-writes.txt" "$tmpdir/p5x-writes.txt"
    echo "p5x $(grep '^p5a ' "$tmpdir/arrays.txt" | cut -d' ' -f2-) corrupt" >> "$tmpdir/arrays.txt"
fi
cat "$tmpdir/arrays.txt"
[ -s "$tmpdir/arrays.txt" ] || exit 1

vm_md_check

vm_finish
