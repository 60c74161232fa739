#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# md v1.0 and v1.1 arrays, both ways between Linux md and the plugin.
#
# mdadm to the plugin: in a first guest, mdadm creates RAID-5 and RAID-6
# arrays with --metadata=1.0 and 1.1 and --bitmap=internal over virtio
# disks of different sizes (so that v1.0's superblocks, at each member's
# end, and the bitmaps before them lie at different offsets), waits for
# the sync and writes a pattern (tests/vm/patgen.c) over the whole array
# and some unaligned overwrites.  Here the plugin assembles each from its
# superblocks and its version (metadata-version=, as mdadm's --metadata;
# no geometry, members shuffled); every
# sector md wrote must read back, and tests/lib/mdsb.py must find each
# superblock at md's place for its version.  Then the plugin writes an
# unaligned pattern of its own into each (marking its bitmap as md does).
#
# The plugin to mdadm: the plugin creates v1.0 and v1.1 RAID-5 and RAID-6
# arrays (create=true metadata-version=..., with the default bitmap) and a
# pattern is written through it.  In a second guest, mdadm --assemble must
# take those and the mdadm-made arrays the plugin wrote to, --detail must
# show them clean with the same geometry and size, the pattern must read
# back through /dev/md0, and md's "check" must count no mismatches.

source "$(dirname "$0")/../lib/functions.sh"
source "$(dirname "$0")/common.sh"
requires nbdsh shuf
vm_setup

# mdadm's arrays: NAME LEVEL N CHUNK_KIB LAYOUT FAIL ORDER METADATA BITMAP
mk_arrays="
m10r5 5 4 64 left-symmetric - 2,0,3,1 1.0 internal
m10r6 6 5 512 right-asymmetric - 4,1,3,0,2 1.0 internal
m11r5 5 3 512 left-asymmetric - 1,2,0 1.1 internal
m11r6 6 4 64 left-symmetric - 3,2,1,0 1.1 internal
"
# Member i of an array: 8M plus 68.5K * i (v1.0's place rounds down to
# 4 KiB: each member has it at another offset).
member_bytes () { echo $(( 8 * 1024 * 1024 + $1 * 70144 )); }

: > "$tmpdir/mk-arrays.txt"
while read -r name level n chunk layout fail order meta bitmap; do
    [ -n "$name" ] || continue
    echo "$name $level $n $chunk $layout $fail $order $meta $bitmap" >> "$tmpdir/mk-arrays.txt"
    for (( i = 0; i < n; i++ )); do
        truncate -s "$(member_bytes "$i")" "$tmpdir/$name-d$i"
        vm_disk "$name-d$i" "$tmpdir/$name-d$i"
    done
done <<< "$mk_arrays"
vm_results_disk mk
mkdir -p "$tmpdir/arrays-mk"             # the guest reads /arrays.txt
cp "$tmpdir/mk-arrays.txt" "$tmpdir/arrays-mk/arrays.txt"
vm_initrd "$tmpdir/initrd-mk" "$vm_dir/guest-md-create.sh" "$tmpdir/arrays-mk/arrays.txt"
run_vm mk "$tmpdir/initrd-mk" "${vm_args[@]}"
vm_results mk "$tmpdir/mk" || exit 1
vm_result mk || exit 1
echo "guest (mdadm creates): $(vm_elapsed)"

# write_pattern W SEED FIRST_FRACTION NBDKIT-ARGS...: patgen's SEED over
# sectors [s * FIRST_FRACTION, + s / 3 + 1) of the array (s: its size in
# sectors; seed 1: all of it) through the plugin; appends "SEED FIRST N"
# to W.  With $CTL (the control socket NBDKIT-ARGS give) and $RAIDCTL,
# waits for the resync before nbdkit stops.
write_pattern ()
{
    local w=$1 seed=$2 frac=$3
    shift 3
    W=$w SEED=$seed FRAC=$frac PATGEN=$PATGEN IMG=$tmpdir/pattern \
        raid_nbdkit "$@" --run '
        nbdsh -u "$uri" -c "
import os, subprocess
s = h.get_size() // 512
seed, first, n = int(os.environ[\"SEED\"]), int(s * float(os.environ[\"FRAC\"])) + 3, s // 3 + 1
if seed == 1:
    first, n = 0, s
img = os.environ[\"IMG\"]
open(img, \"wb\").close()
subprocess.check_call([os.environ[\"PATGEN\"], str(seed), str(first), str(n), img])
with open(img, \"rb\") as f:
    f.seek(first * 512)
    off, end = first * 512, (first + n) * 512
    while off < end:
        k = min(4 << 20, end - off)
        h.pwrite(f.read(k), off)
        off += k
h.flush()
with open(os.environ[\"W\"], \"a\") as f:
    print(seed, first, n, file=f)
" && { [ -z "${CTL:-}" ] || "$RAIDCTL" "$CTL" wait 600 > /dev/null; }'
    local r=$?
    rm -f "$tmpdir/pattern"
    return $r
}

: > "$tmpdir/arrays.txt"
while read -r name level n chunk layout _ _ meta _; do
    sectors=$(cat "$tmpdir/mk/$name-size.txt")
    writes=$tmpdir/$name-writes.txt
    cp "$tmpdir/mk/$name-writes.txt" "$writes"
    echo "== $name: mdadm's v$meta RAID-$level, $n members, chunk ${chunk}K, $layout"
    # Every superblock where md puts v$meta, by the independent reader.
    for (( i = 0; i < n; i++ )); do
        got=$(python3 "$top_srcdir/tests/lib/mdsb.py" get "$tmpdir/$name-d$i" version at feature_map 2>&1)
        want_at=$(python3 -c "
import os, sys
sys.path.insert(0, os.path.join('$top_srcdir', 'tests', 'lib'))
import mdsb
print(mdsb.place('$meta', os.path.getsize('$tmpdir/$name-d$i')))")
        read -r v at fm <<< "$got"
        [ "$v $at" = "$meta $want_at" ] && [ $(( fm & 1 )) = 1 ] ||
            fail "$name-d$i: mdsb finds '$got', not v$meta at $want_at with a bitmap"
    done
    mapfile -t shuffled < <(for (( i = 0; i < n; i++ )); do echo "disk=$tmpdir/$name-d$i"; done | shuf)
    rm -f "$tmpdir/plugin.img"
    if read_array "$tmpdir/plugin.img" "$sectors" metadata-version=$meta \
            "${shuffled[@]}" &&
        "$PATGEN" -l "$writes" "$sectors" "$tmpdir/plugin.img"; then
        echo "  plugin, from md's v$meta superblocks: every sector ok"
    else
        fail "$name: the plugin assembling mdadm's v$meta array (${shuffled[*]})"
        continue
    fi
    rm -f "$tmpdir/plugin.img"
    # The plugin writes into it: md must find that, clean and consistent.
    if write_pattern "$writes" 9 0.5 metadata-version=$meta "${shuffled[@]}"; then
        echo "$name $n $level $layout $chunk $sectors" >> "$tmpdir/arrays.txt"
    else
        fail "$name: writing through the plugin to mdadm's v$meta array"
    fi
done < "$tmpdir/mk-arrays.txt"

# The plugin's arrays: NAME N LEVEL LAYOUT CHUNK_KIB METADATA
p_arrays="
p10r5 4 5 left-symmetric 64 1.0
p10r6 5 6 right-symmetric 512 1.0
p11r5 3 5 right-asymmetric 64 1.1
p11r6 4 6 left-asymmetric 512 1.1
"
while read -r name n level layout chunk meta; do
    [ -n "$name" ] || continue
    members=()
    for (( i = 0; i < n; i++ )); do
        truncate -s "$(member_bytes "$i")" "$tmpdir/$name-d$i"
        members+=("disk=$tmpdir/$name-d$i")
    done
    echo "== $name: nbdkit raid create=true metadata-version=$meta level=$level layout=$layout chunk=${chunk}K"
    writes=$tmpdir/$name-writes.txt
    : > "$writes"
    # The pattern over all of it, then an unaligned overwrite; the second
    # start waits for the new array's resync, so that it stops clean.
    if ! write_pattern "$writes" 1 0 create=true metadata-version=$meta \
            level="$level" layout="$layout" chunk="${chunk}K" "${members[@]}" ||
        ! CTL=$tmpdir/$name.ctl RAIDCTL=$top_srcdir/tools/nbdkit-raid-ctl \
            write_pattern "$writes" 2 0.3 metadata-version=$meta "${members[@]}" \
                control="$tmpdir/$name.ctl"; then
        fail "$name: creating and writing through the plugin"
        continue
    fi
    sectors=$(awk 'NR == 1 { print $3 }' "$writes")
    if ! python3 "$top_srcdir/tests/lib/mdsb.py" check "${members[@]#disk=}"; then
        fail "$name: md would refuse the plugin's v$meta superblocks"
        continue
    fi
    echo "$name $n $level $layout $chunk $sectors" >> "$tmpdir/arrays.txt"
done <<< "$p_arrays"
cat "$tmpdir/arrays.txt"
[ -s "$tmpdir/arrays.txt" ] || exit 1

vm_args=(); _vm_ndisk=0
while read -r name n _; do
    for (( i = 0; i < n; i++ )); do vm_disk "$name-d$i" "$tmpdir/$name-d$i"; done
done < "$tmpdir/arrays.txt"
vm_md_check

vm_finish
