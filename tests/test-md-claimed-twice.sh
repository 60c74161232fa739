#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: an md array whose assembly is refused after a member was
# set aside (disk=missing, a stale or spare member) stops nbdkit with the
# refusal, not with a crash.  Before the fix, order_members put the set
# aside member in the retired list while the member table still held it,
# and the error path closed it twice: "both claim role" ended in SIGSEGV.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires cp timeout

make_members 4 8M
raid_nbdkit create=true level=5 chunk=4K "${members[@]}" --run true
cp --sparse=always "${members[3]}" "$tmpdir/copy3"

r=0
timeout 60 nbdkit --exit-with-parent -U - "$RAID_PLUGIN" missing \
    "${members[1]}" "${members[2]}" "${members[3]}" "$tmpdir/copy3" \
    --run 'echo SERVED' > "$tmpdir/out" 2> "$tmpdir/err" || r=$?
sed 's/^/nbdkit: /' "$tmpdir/err"
if grep -q SERVED "$tmpdir/out" || [ $r = 0 ]; then
    fail "nbdkit served an array with two members in one role"
fi
if [ $r -gt 128 ] || [ $r = 124 ]; then
    fail "nbdkit died (exit $r) instead of refusing the array"
fi
grep -q "both claim role 3" "$tmpdir/err" ||
    fail "no 'both claim role 3' in nbdkit's messages"
echo "ok: refused (exit $r)"
