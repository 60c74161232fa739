#!/usr/bin/env bash
# Crafted md superblocks at start-up (issue 11, items 2 and 16): each one
# carries a correct checksum, so only the checks of its fields can stop
# it.  Every case must stop nbdkit before it serves, with a message that
# names the member and the cause, and leave every member byte for byte as
# it was:
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
# The superblocks are changed by tests/mdsb.py, which shares no code with
# the plugin.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires md5sum cp

sb () { python3 "$top_srcdir/tests/mdsb.py" "$@"; }

# An md RAID-5 of 4 members with a write-intent bitmap, shut down clean.
make_members 4 4M orig
nbdkit -U - "$RAID_PLUGIN" create=true level=5 chunk=4K data-offset=64K \
    bitmap-chunk=64K "${members[@]}" \
    --run 'nbdsh -u "$uri" -c "h.pwrite(b\"x\" * 65536, 0); h.flush()"' \
    2> "$tmpdir/create.log" || { cat "$tmpdir/create.log"; exit 1; }
# Let the start-up resync end: start again until the array says clean.
for i in $(seq 50); do
    [ "$(sb get "$tmpdir/orig0" resync_offset)" = 18446744073709551615 ] && break
    nbdkit -U - "$RAID_PLUGIN" "${members[@]}" --run 'sleep 0.2' 2>/dev/null
done
sb check "${members[@]}"

failures=0
fail () { echo "FAIL: $*"; failures=$((failures + 1)); }

# crafted WHAT REGEX FIELD-CHANGES...: copies x0..x3 of the array, the
# changes applied (M:FIELD=VALUE, M a member number or "all"), then a
# start that must fail with REGEX in the log and change nothing.
crafted ()
{
    local what=$1 regex=$2 change m i r=0
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
    members_md5 "$tmpdir"/x* > "$tmpdir/before"
    timeout 60 nbdkit --exit-with-parent -U - "$RAID_PLUGIN" \
        "$tmpdir"/x0 "$tmpdir"/x1 "$tmpdir"/x2 "$tmpdir"/x3 \
        --run 'echo SERVED' > "$tmpdir/out" 2> "$tmpdir/err" || r=$?
    members_md5 "$tmpdir"/x* > "$tmpdir/after"
    if [ $r = 0 ] || grep -q SERVED "$tmpdir/out"; then
        fail "$what: nbdkit accepted it (exit $r)"
        sed 's/^/    /' "$tmpdir/err"
    elif [ $r -gt 128 ]; then
        fail "$what: nbdkit died of signal $((r - 128))"
    elif ! grep -qE -- "$regex" "$tmpdir/err"; then
        fail "$what: the message does not match /$regex/:"
        sed 's/^/    /' "$tmpdir/err"
    elif grep -q "failed (" "$tmpdir/err"; then
        fail "$what: a member was failed instead of the superblock refused:"
        sed 's/^/    /' "$tmpdir/err"
    elif ! cmp -s "$tmpdir/before" "$tmpdir/after"; then
        fail "$what: a member changed"
        diff "$tmpdir/before" "$tmpdir/after" || :
    else
        echo "ok: $what: $(grep -E -- "$regex" "$tmpdir/err" | head -1)"
    fi
}

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

[ $failures = 0 ] || { echo "$failures case(s) failed"; exit 1; }
