#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: the plugin's copy of nbdkit's command-line options
# (plugin/nbdkit_cmdline.c, which finds -r in /proc/self/cmdline because
# nbdkit tells plugins nothing of it) names the same options as the
# installed nbdkit (--short-options, --long-options).  If nbdkit gains an
# option that takes an argument, the plugin could misread a command line;
# this test is where that shows.
source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"

src=$top_srcdir/plugin/nbdkit_cmdline.c
grep -oE '^  \{ "[a-z0-9-]+"' "$src" | sed 's/.*"\(.*\)"/--\1/' |
    grep -vxE -- '--(long|short)-options' | sort > "$tmpdir/ours.long"
nbdkit --long-options | sort > "$tmpdir/nbdkit.long"
sed -n 's/^static const char short_options\[\] = "\(.*\)";/\1/p' "$src" |
    tr -d ':' | fold -w1 | sed 's/^/-/' | sort > "$tmpdir/ours.short"
nbdkit --short-options | sort > "$tmpdir/nbdkit.short"
for k in long short; do
    if ! diff -u "$tmpdir/nbdkit.$k" "$tmpdir/ours.$k"; then
        fail "the $k options differ from nbdkit $(nbdkit --version)"
    fi
done
[ "$(failure_count)" = 0 ] && echo "ok: $(wc -l < "$tmpdir/ours.long") long and $(wc -l < "$tmpdir/ours.short") short options, as nbdkit $(nbdkit --version | cut -d' ' -f2)"
end_failures
