#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_member_nbd.c under ThreadSanitizer: member ids taken and given back
# while other threads run batches (next_id was once written by open and
# read, twice, by every batch's lock_shared, with no lock).
# Built here, from the sources, with the compiler's -fsanitize=thread;
# any race report fails the test.  Skips without a TSan-capable compiler,
# Check or libnbd.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires pkg-config
cc=${CC:-cc}
flags=$(pkg-config --cflags --libs check libnbd nbdkit 2>/dev/null) || {
    echo "$0: SKIP: pkg-config finds no check, libnbd or nbdkit"
    exit 77
}
if ! echo 'int main (void) { return 0; }' |
        "$cc" -fsanitize=thread -x c - -o "$tmpdir/probe" 2>/dev/null ||
        ! "$tmpdir/probe"; then
    echo "$0: SKIP: $cc cannot build and run -fsanitize=thread programs"
    exit 77
fi

# shellcheck disable=SC2086
"$cc" -std=gnu11 -g -O1 -fsanitize=thread -pthread \
    -I"$top_builddir" -I"$top_srcdir/plugin" -I"$top_srcdir/tests/lib" \
    "$top_srcdir/tests/test_member_nbd.c" "$top_srcdir/plugin/member_nbd.c" \
    "$top_srcdir/plugin/member_nbd_connect.c" \
    "$top_srcdir/plugin/member.c" "$top_srcdir/plugin/md_badblocks.c" "$top_srcdir/plugin/member_table.c" $flags \
    -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc \
    -o "$tmpdir/test_member_nbd_tsan"

TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}" \
    "$tmpdir/test_member_nbd_tsan"
