#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# md v1.0 and v1.1 superblocks, from the host (tests/vm/ does it with
# Linux's md): create=true metadata-version=1.0|1.1 writes an array, with
# its write-intent bitmap, that later starts from its superblocks and its
# version alone (no geometry, members in any order; without the version it
# is refused, naming it, as only v1.2's place is read by default), holds
# the data byte for byte, and is laid out as md lays those versions out, on members of
# different sizes whose size is no multiple of 4 KiB.  The judges share
# no code with the plugin: tests/lib/mdsb.py finds each superblock at md's
# place for its version (v1.0: member sectors - 16, rounded down to 8;
# v1.1: 0) and says what md would refuse; raidcheck.py checks the parity
# from md's data offset (v1.0: 0, for md's size only: the bitmap and the
# superblock follow) and rebuilds the image, which must be the data.
# RAID-5 and RAID-6.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
source "$top_srcdir/tests/lib/md-functions.sh"
requires_python_module nbd
requires truncate cmp

for v in 1.0 1.1; do
    for spec in "5 4" "6 6"; do
        read -r level n <<< "$spec"
        name=v${v/./}r$level
        members=()
        for (( i = 0; i < n; i++ )); do
            # 4M, then 4.5K, 9K, ... more: v1.0's place moves with each.
            truncate -s $(( 4 * 1024 * 1024 + i * 4608 )) "$tmpdir/$name$i"
            members+=("$tmpdir/$name$i")
        done
        md_new "$tmpdir/$name.shadow" --seed "$level" --whole --writes 40 -- \
            metadata-version=$v level="$level" chunk=$chunk "${members[@]}"
        # Every superblock where md puts it for v, the bitmap with it.
        if ! python3 - "$v" "${members[@]}" <<'EOF'
import os, sys
sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "lib"))
import mdsb
v, paths = sys.argv[1], sys.argv[2:]
size = None
for p in paths:
    sb = mdsb.read(p)
    where = mdsb.place(v, os.path.getsize(p))
    assert sb["version"] == v and sb["at"] == where, \
        "%s: superblock v%s at %s, not v%s at %d" % (p, sb["version"],
                                                     sb["at"], v, where)
    assert mdsb.check(sb) == [], "%s: md would refuse it: %s" % (p, mdsb.check(sb))
    data_end = (sb["data_offset"] + sb["size"]) * 512
    assert sb["data_offset"] == (0 if v == "1.0" else 2048), sb["data_offset"]
    bm = mdsb.read_bitmap(p, sb)
    assert bm and bm["magic"] == mdsb.BITMAP_MAGIC, "%s: no bitmap" % p
    if v == "1.0":
        # Between the data and the superblock, right before it.
        assert data_end <= bm["start"] and bm["end"] == where, \
            "%s: bitmap %d..%d, data to %d, superblock at %d" % (
                p, bm["start"], bm["end"], data_end, where)
    else:
        assert bm["start"] == where + 4096 and bm["end"] <= sb["data_offset"] * 512
    assert size in (None, sb["size"]), "members disagree on the size"
    size = sb["size"]
print("v%s: md size per member %d bytes" % (v, size * 512))
EOF
        then
            fail "v$v RAID-$level: not laid out as md lays out v$v"
            continue
        fi
        size=$(sb get "${members[0]}" size)
        doff=$(sb get "${members[0]}" data_offset)
        shuffled=()
        for (( i = n - 1; i >= 0; i-- )); do
            shuffled+=("${members[(i + 2) % n]}")
        done
        # Not told the version, only v1.2's place is read: refused, naming
        # the version to give.
        if raid_nbdkit "${shuffled[@]}" --run true 2> "$tmpdir/log" ||
                ! grep -q "md v$v superblock.*metadata-version=" "$tmpdir/log"; then
            cat "$tmpdir/log"
            fail "v$v RAID-$level: started without metadata-version=$v"
        fi
        client "$tmpdir/$name.shadow" verify -- metadata-version=$v \
            "${shuffled[@]}" ||
            fail "v$v RAID-$level: reassembled shuffled, the data differs"
        if grep -q "not shut down cleanly" "$tmpdir/log"; then
            fail "v$v RAID-$level: not clean after create, resync, flush and exit"
        fi
        raidcheck --level "$level" --chunk $chunk --data-offset $((doff * 512)) \
            --size $((size * 512)) --image "$tmpdir/$name.image" "${members[@]}" ||
            fail "v$v RAID-$level: raidcheck"
        cmp "$tmpdir/$name.image" "$tmpdir/$name.shadow" ||
            fail "v$v RAID-$level: raidcheck's image of the members is not the data"
        rm -f "$tmpdir/$name.image"
        echo "ok: v$v RAID-$level created, reassembled shuffled, md's v$v layout (${SECONDS}s)"
    done
done
end_failures
