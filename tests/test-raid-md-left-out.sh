#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# An md array started with a member left out is degraded and correct (the
# left-out member is not written, the others' event count advances); the
# member given back later is stale (older events): reported stale and not
# used, not written, and the data is still right.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
source "$top_srcdir/tests/md-functions.sh"
requires_python_module nbd
requires truncate md5sum

md_create r5 5 4 40
r50=$tmpdir/r50 r51=$tmpdir/r51 r52=$tmpdir/r52 r53=$tmpdir/r53
events_before=$(sb get "$r51" events)
md5_left_out=$(md5sum < "$r51")
client "$tmpdir/r5.shadow" both --seed 11 -- "$r53" "$r50" "$r52"
[ "$(md5sum < "$r51")" = "$md5_left_out" ] ||
    fail "the member left out was written"
[ "$(sb get "$r50" events)" -gt "$events_before" ] ||
    fail "the degraded array's events did not advance"
# Given back: stale, not used, and the data is still right.
client "$tmpdir/r5.shadow" both --seed 12 --writes 10 -- \
    "$r50" "$r51" "$r52" "$r53"
if ! grep -qE "r51.*stale.*not used" "$tmpdir/log"; then
    fail "the stale member was not reported as stale and unused:"
    cat "$tmpdir/log"
fi
[ "$(md5sum < "$r51")" = "$md5_left_out" ] ||
    fail "the stale member was written"
client "$tmpdir/r5.shadow" verify -- "$r52" "$r50" "$r53"
echo "ok: a member left out: degraded, correct; given back: stale, unused"
end_failures
