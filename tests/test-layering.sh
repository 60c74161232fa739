#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: no cycle between the plugin's files, and every call goes
# down the documented layer order (tests/lib/layering.py reads the objects'
# symbol tables with nm).

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires nm ar python3

lib="$top_builddir/plugin/.libs/libraid.a"
raid="$top_builddir/plugin/.libs/raid.o"
parity="$top_builddir/parity/.libs/libparity.a"
for f in "$lib" "$raid" "$parity"; do
    if [ ! -f "$f" ]; then
        echo "SKIP: $f is not built"
        exit 77
    fi
done
python3 "$top_srcdir/tests/lib/layering.py" "$lib" "$raid" "$parity"
