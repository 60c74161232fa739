#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Bad configurations: each must stop nbdkit before it serves anything, with
# a message that names the problem (and the key or path at fault), and
# must leave every member byte for byte as it was.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires truncate md5sum ln

# Members with content (not just holes), so a stray write would show.
make_members 4 1M
for m in "${members[@]}"; do
    head -c 65536 /dev/urandom | dd of="$m" bs=64K seek=3 conv=notrunc status=none
done
m0=${members[0]} m1=${members[1]} m2=${members[2]} m3=${members[3]}
truncate -s 3000 "$tmpdir/small"
mkdir "$tmpdir/dir"
ln -s "$m1" "$tmpdir/link-to-m1"
all=("${members[@]}" "$tmpdir/small")

# expect_fail 'DESCRIPTION' 'REGEX' ARGS...: nbdkit with ARGS must stop
# before serving, print REGEX (grep -E) on stderr, and change no member
# (functions.sh: expect_refused).
watch='"${all[@]}"'
expect_fail ()
{
    local what=$1 regex=$2
    shift 2
    expect_refused "$what" "$regex" -U - "$RAID_PLUGIN" metadata=none "$@"
}

# A good configuration first, so that the failures below are the
# parameters' fault and not the test's.
raid_nbdkit metadata=none level=6 chunk=4K "${members[@]}" --run true

expect_fail "unknown parameter" "unknown parameter.*frobnicate" \
    level=5 frobnicate=1 "$m0" "$m1" "$m2"
expect_fail "level=7" "level=7.*5 or 6" \
    level=7 "${members[@]}"
expect_fail "RAID-5 with 2 members" "RAID-5 needs at least 3 members" \
    level=5 "$m0" "$m1"
expect_fail "RAID-6 with 3 members" "RAID-6 needs at least 4 members" \
    level=6 "$m0" "$m1" "$m2"
expect_fail "no members" "no members" \
    level=5
expect_fail "chunk=3000" "chunk.*power of two" \
    level=5 chunk=3000 "$m0" "$m1" "$m2"
expect_fail "chunk=2K" "chunk.*(power of two|4096|4K)" \
    level=5 chunk=2K "$m0" "$m1" "$m2"
expect_fail "chunk=banana" "chunk|banana" \
    level=5 chunk=banana "$m0" "$m1" "$m2"
expect_fail "missing member" "$tmpdir/nosuch.*(No such file|not exist)" \
    level=5 "$m0" "$m1" "$tmpdir/nosuch"
expect_fail "member under a missing directory" "$tmpdir/nodir/m9" \
    level=5 "$m0" "$m1" "$tmpdir/nodir/m9"
expect_fail "a directory as member" "$tmpdir/dir" \
    level=5 "$m0" "$m1" "$tmpdir/dir"
expect_fail "member too small" "small.*(too small|3000)" \
    level=5 chunk=4K "$m0" "$m1" "$tmpdir/small"
expect_fail "the same member twice" "$m1.*same" \
    level=5 "$m0" "$m1" "$m2" "$m1"
expect_fail "the same member via a symlink" "link-to-m1.*same" \
    level=5 "$m0" "$m1" "$m2" "$tmpdir/link-to-m1"
expect_fail "data-offset beyond the members" "data-offset" \
    level=5 data-offset=2M "$m0" "$m1" "$m2"
expect_fail "data-offset leaving less than a chunk" "too small|data-offset" \
    level=5 chunk=64K data-offset=$(( 1048576 - 4096 )) "$m0" "$m1" "$m2"
expect_fail "data-offset not a multiple of 512" "data-offset.*512" \
    level=5 data-offset=1000 "$m0" "$m1" "$m2"
expect_fail "unknown layout" "layout=sideways.*unknown" \
    level=5 layout=sideways "$m0" "$m1" "$m2"
expect_fail "parity=nosuch" "parity=nosuch.*no such" \
    level=5 parity=nosuch "$m0" "$m1" "$m2"
expect_fail "direct=maybe" "direct|maybe" \
    level=5 direct=maybe "$m0" "$m1" "$m2"

end_failures
