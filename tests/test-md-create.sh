#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# md v1.2 superblocks, from the host (tests/vm/ does it with Linux's md):
# create=true writes an array that later starts from its superblocks
# alone (no geometry parameters, members in any order), clean after
# create, resync, flush and exit, holds the data byte for byte, and is
# laid out as md lays it out (level, raid_disks, chunk, 1 MiB data
# offset, left-symmetric in every superblock; raidcheck.py at a 1 MiB
# data offset, and the image it rebuilds).  RAID-5 and RAID-6.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
source "$top_srcdir/tests/lib/md-functions.sh"
requires_python_module nbd
requires truncate cmp cp

for spec in "5 4 r5" "6 6 r6"; do
    read -r level n name <<< "$spec"
    md_create "$name" "$level" "$n" 40
    shuffled=()
    for (( i = n - 1; i >= 0; i-- )); do
        shuffled+=("${members[(i + 2) % n]}")
    done
    client "$tmpdir/$name.shadow" verify -- "${shuffled[@]}"
    if grep -q "not shut down cleanly" "$tmpdir/log"; then
        fail "RAID-$level: not clean after create, resync, flush and exit"
    fi
    # level, raid_disks, chunk (sectors), 1 MiB (sectors), left-symmetric
    for m in "${members[@]}"; do
        got=$(sb get "$m" level raid_disks chunksize data_offset layout)
        [ "$got" = "$level $n 128 2048 2" ] ||
            fail "$m: level raid_disks chunksize data_offset layout: $got"
    done
    # md's layout at a 1 MiB data offset, by the independent checker.
    raidcheck --level "$level" --chunk $chunk --data-offset 1048576 \
        --image "$tmpdir/$name.image" "${members[@]}" ||
        fail "RAID-$level: raidcheck"
    cmp "$tmpdir/$name.image" "$tmpdir/$name.shadow" ||
        fail "RAID-$level: raidcheck's image of the members is not the data"
    rm -f "$tmpdir/$name.image"
    echo "ok: RAID-$level created, reassembled shuffled, md layout (${SECONDS}s)"
done
end_failures
