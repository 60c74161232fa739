#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# An update a crash interrupted.  A crash while the superblocks are
# rewritten leaves some members one event behind the others.  Like the
# kernel and mdadm, one behind is in sync: the member is used and written
# (raidcheck finds its chunks right after writes, and the image is the
# data); two behind is stale: reported stale and not used, and the data
# still reads back right.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
source "$top_srcdir/tests/lib/md-functions.sh"
requires_python_module nbd
requires truncate cmp cp

md_create A 5 4 10
x A 4
ev=$(sb get "$tmpdir/x2" events)
sb set "$tmpdir/x2" events=$((ev - 1))
cp "$tmpdir/A.shadow" "$tmpdir/c2.shadow"
client "$tmpdir/c2.shadow" both --seed 31 --writes 10 -- "$tmpdir"/x[0-3] ||
    fail "one event behind: the array did not serve"
if grep -q "x2.*not used" "$tmpdir/log"; then
    fail "a member one event behind was not used:"
    cat "$tmpdir/log"
fi
raidcheck --level 5 --chunk $chunk --data-offset 1048576 \
    --image "$tmpdir/c2.image" "$tmpdir"/x[0-3] ||
    fail "one event behind: parity after writes"
cmp -s "$tmpdir/c2.image" "$tmpdir/c2.shadow" ||
    fail "one event behind: the members do not hold the data"
rm -f "$tmpdir/c2.image"
x A 4
sb set "$tmpdir/x2" events=$((ev - 2))
client "$tmpdir/A.shadow" verify -- "$tmpdir"/x[0-3] ||
    fail "two events behind: wrong data"
grep -qE "x2.*stale.*not used" "$tmpdir/log" ||
    fail "a member two events behind was not reported stale"
echo "ok: one event behind: in sync and written; two behind: stale"
end_failures
