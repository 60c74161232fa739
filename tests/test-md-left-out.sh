#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# An md array started with a member left out is degraded and correct (the
# left-out member is not written, the others' event count advances); the
# member given back later is stale (older events): reported stale, and, as
# the array has a write-intent bitmap that covers what it missed, re-added
# from it at start-up (as mdadm --re-add), after which it holds the data:
# the array read with it and without another member is the shadow.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
source "$top_srcdir/tests/lib/md-functions.sh"
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
# Given back: stale, re-added from the bitmap, and the data is still right.
client "$tmpdir/r5.shadow" both --seed 12 --writes 10 -- \
    "$r50" "$r51" "$r52" "$r53"
if ! grep -qE "r51.*stale" "$tmpdir/log" ||
   ! grep -qE "r51.*out of date: re-adding it" "$tmpdir/log"; then
    fail "the stale member was not reported stale and re-added:"
    cat "$tmpdir/log"
fi
# Until its re-add is over (a start may end before it does; the next
# resumes it): its superblock no longer says recovering (feature bit 2).
for try in 1 2 3 4 5; do
    [ $(( $(sb get "$r51" feature_map) & 2 )) -eq 0 ] && break
    client "$tmpdir/r5.shadow" verify -- "$r50" "$r51" "$r52" "$r53"
done
[ $(( $(sb get "$r51" feature_map) & 2 )) -eq 0 ] ||
    fail "the re-add of the stale member did not end in 5 starts"
[ "$(md5sum < "$r51")" != "$md5_left_out" ] ||
    fail "the re-added member was not written"
client "$tmpdir/r5.shadow" verify -- "$r51" "$r52" missing "$r53"
echo "ok: a member left out: degraded, correct; given back: stale, re-added"
end_failures
