#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Bad md input stops nbdkit with a message naming the cause and leaves
# every member byte for byte as it was: a corrupted superblock, members of
# two arrays, two members claiming one role, too many members missing,
# parameters that contradict the superblocks, create=true over md members
# (unless force=true, which makes a new array), metadata=md without
# superblocks, features the plugin does not implement (write journal,
# partial parity log), and well-formed but impossible superblocks
# (raid_disks 300, a size beyond the members, data over the superblock).
# metadata=none serves md members raw, changing nothing.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
source "$top_srcdir/tests/lib/md-functions.sh"
requires_python_module nbd
requires truncate md5sum cmp cp dd

# Arrays to copy from: A, B (RAID-5, 4 members each, so two UUIDs) and C
# (RAID-6, 6 members), with data.
md_create A 5 4 10
for spec in "B 5 4" "C 6 6"; do         # superblocks only, enough here
    read -r name level n <<< "$spec"
    make_members "$n" "$size" "$name"
    nbdkit -U - "$RAID_PLUGIN" create=true level="$level" chunk=$chunk \
        "${members[@]}" --run true
done
[ "$(sb get "$tmpdir/A0" set_uuid)" != "$(sb get "$tmpdir/B0" set_uuid)" ] ||
    fail "two created arrays have the same UUID"
make_members 4 "$size" blank

# The files checked are the case's (x*) and the blank ones.
watch='"$tmpdir"/x* "$tmpdir"/blank*'
expect_fail () { local w=$1 r=$2; shift 2; expect_refused "$w" "$r" -U - "$RAID_PLUGIN" "$@"; }

x A 4
printf '\xff' | dd of="$tmpdir/x2" bs=1 seek=$((4096 + 100)) conv=notrunc status=none
expect_fail "corrupted superblock" "x2.*checksum" "$tmpdir"/x[0-3]

x A 4
cp --sparse=always "$tmpdir/B3" "$tmpdir/xb3"
expect_fail "members of two arrays" "xb3.*another array" \
    "$tmpdir/x0" "$tmpdir/x1" "$tmpdir/x2" "$tmpdir/xb3"
expect_fail "members of two arrays (the other first)" "another array" \
    "$tmpdir/xb3" "$tmpdir/x0" "$tmpdir/x1" "$tmpdir/x2"

x A 4
cp --sparse=always "$tmpdir/A1" "$tmpdir/xdup"
expect_fail "two members claim one role" "both claim role 1" \
    "$tmpdir/x0" "$tmpdir/x1" "$tmpdir/xdup" "$tmpdir/x3"
expect_fail "two members claim one role (all given too)" "both claim role 1" \
    "$tmpdir"/x[0-3] "$tmpdir/xdup"

x C 6
expect_fail "RAID-6 with 3 of 6 members" "3 members are missing.*at most 2" \
    "$tmpdir/x0" "$tmpdir/x3" "$tmpdir/x5"
expect_fail "level=5 on a RAID-6" "level=5 contradicts" \
    level=5 "$tmpdir"/x[0-5]
expect_fail "chunk=128K on a 64K array" "chunk=131072 contradicts.*65536" \
    chunk=128K "$tmpdir"/x[0-5]
expect_fail "layout=ra on a left-symmetric array" "layout.*contradicts" \
    layout=ra "$tmpdir"/x[0-5]
expect_fail "data-offset=0 on a 1M-offset array" "data-offset.*contradicts" \
    data-offset=0 "$tmpdir"/x[0-5]
expect_fail "create=true on md members" "x0.*already.*superblock.*force=true" \
    create=true level=6 chunk=$chunk "$tmpdir"/x[0-5]
expect_fail "create=true, one md member among blank ones" "x0.*force=true" \
    create=true level=5 "$tmpdir/blank0" "$tmpdir/blank1" "$tmpdir/x0"
expect_fail "metadata=md on blank members" "no member has an md v1.x superblock" \
    metadata=md level=5 "$tmpdir"/blank[0-3]
expect_fail "md members and a blank one" "blank0.*no md v1.x superblock" \
    "$tmpdir/x0" "$tmpdir/x1" "$tmpdir/x2" "$tmpdir/blank0"

# Features the plugin does not implement, in one member's superblock.
x A 4
sb set "$tmpdir/x1" feature_map=$(( $(sb get "$tmpdir/x1" feature_map) | 0x200 ))
expect_fail "write journal (feature 0x200)" "x1.*journal" "$tmpdir"/x[0-3]
x A 4
sb set "$tmpdir/x3" feature_map=$(( $(sb get "$tmpdir/x3" feature_map) | 0x400 ))
expect_fail "partial parity log (feature 0x400)" "x3.*(PPL|partial parity)" \
    "$tmpdir"/x[0-3]

# Superblocks that are well formed but impossible, in every member (as
# a corrupted or hostile set would be): refused, not trusted.
x A 4
for m in "$tmpdir"/x[0-3]; do sb set "$m" raid_disks=300; done
expect_fail "raid_disks=300" "256|raid_disks|members" "$tmpdir"/x[0-3]
x A 4
for m in "$tmpdir"/x[0-3]; do sb set "$m" size=99999999; done
expect_fail "size beyond the members" "size|small" "$tmpdir"/x[0-3]
x A 4
for m in "$tmpdir"/x[0-3]; do sb set "$m" data_offset=0; done
expect_fail "data offset 0 (data over the superblock)" "offset|superblock" \
    "$tmpdir"/x[0-3]

# create=true force=true does overwrite: a new array (new UUID).
x A 4
old_uuid=$(sb get "$tmpdir/x0" set_uuid)
nbdkit -U - "$RAID_PLUGIN" create=true force=true level=5 chunk=$chunk \
    "$tmpdir"/x[0-3] --run true
if [ "$(sb get "$tmpdir/x0" set_uuid)" != "$old_uuid" ]; then
    echo "ok: create=true force=true wrote a new array"
else
    fail "create=true force=true did not make a new array"
fi

# metadata=none: raw mode, the superblocks are data; geometry from the
# parameters, size without the data offset.  Reads change nothing.
x A 4
members_md5 "$tmpdir"/x[0-3] > "$tmpdir/before"
raw_size=$(nbdkit -U - "$RAID_PLUGIN" metadata=none level=5 chunk=$chunk \
    "$tmpdir"/x[0-3] --run 'nbdsh -u "$uri" -c "print(h.get_size())"')
members_md5 "$tmpdir"/x[0-3] > "$tmpdir/after"
if [ "$raw_size" != $((3 * 4 * 1024 * 1024)) ]; then
    fail "metadata=none: array size $raw_size, expected $((3 * 4 * 1024 * 1024)) (raw)"
elif ! cmp -s "$tmpdir/before" "$tmpdir/after"; then
    fail "metadata=none: a member changed"
else
    echo "ok: metadata=none on md members serves raw ($raw_size bytes)"
fi
end_failures
