#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Crafted md superblocks at start-up: each one carries a correct checksum,
# so only the checks of its fields can stop it.  Every case must stop
# nbdkit before it serves, with a message that names the member and the
# cause, and leave every member byte for byte as it was:
#
#   - a dev_number with no slot in dev_roles (>= max_dev), or max_dev 0
#     (before the fix: ordered[-1], a write below a stack array);
#   - a dev_number inside the member's own dev_roles but beyond the
#     newest superblock's max_dev;
#   - an event count at 2^64-1 (the next update would wrap to 0);
#   - a feature bit md may define but the plugin does not implement;
#   - a bitmap_offset that puts the bitmap far beyond the member (before
#     the fix: an I/O error that failed every member).
#
# The superblocks are changed by tests/lib/mdsb.py, which shares no code with
# the plugin.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires md5sum cp
requires_python_module nbd

# An md RAID-5 of 4 members with a write-intent bitmap, shut down clean.
make_members 4 4M orig
md_new "$tmpdir/orig.shadow" --writes 1 -- level=5 chunk=4K \
    data-offset=64K bitmap-chunk=64K "${members[@]}"
sb check "${members[@]}"

# crafted WHAT REGEX FIELD-CHANGES...: copies x0..x3 of the array, the
# changes applied (M:FIELD=VALUE, M a member number or "all"), then a
# start that must fail with REGEX in the log, not fail a member instead,
# and change nothing.
crafted ()
{
    local what=$1 regex=$2 change m i
    shift 2
    for i in 0 1 2 3; do
        cp --sparse=always "$tmpdir/orig$i" "$tmpdir/x$i"
    done
    for change in "$@"; do
        m=${change%%:*}
        for i in 0 1 2 3; do
            if [ "$m" = all ] || [ "$m" = "$i" ]; then
                # shellcheck disable=SC2086 # several FIELD=VALUE words
                sb set "$tmpdir/x$i" ${change#*:}
            fi
        done
    done
    expect_refused "$what" "$regex" -U - "$RAID_PLUGIN" \
        "$tmpdir"/x0 "$tmpdir"/x1 "$tmpdir"/x2 "$tmpdir"/x3
}
# A member failed is not a superblock refused.
watch='"$tmpdir"/x*'
refused_not='failed \('

x=$tmpdir/x

crafted "dev_number = max_dev" "member ${x}1: .*dev_number" \
    1:dev_number=4
crafted "dev_number far beyond max_dev" "member ${x}2: .*dev_number" \
    2:dev_number=4000000000
crafted "max_dev 0 on every member" "member ${x}0: .*dev_number" \
    all:max_dev=0
# x3's own dev_roles has 8 slots, and slot 7 says role 3: by itself a
# good superblock, but the newest (x0's, same events, max_dev 4) has no
# slot 7.
crafted "dev_number beyond the newest superblock's max_dev" \
    "member ${x}3: .*dev_number 7 .*max_dev 4" \
    "3:max_dev=8 dev_roles[3]=0xffff dev_roles[4]=0xffff dev_roles[5]=0xffff \
dev_roles[6]=0xffff dev_roles[7]=3 dev_number=7"
crafted "events 2^64-1" "member ${x}0: .*event count" \
    all:events=18446744073709551615
crafted "unknown feature bit 0x2000" "member ${x}2: .*unknown feature bits 0x2000" \
    2:feature_map=0x2001
crafted "bitmap_offset far beyond the member" \
    "member ${x}0: .*bitmap_offset.*bad superblock" \
    all:bitmap_offset=0x7ffffff0

end_failures
