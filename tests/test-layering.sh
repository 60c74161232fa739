#!/usr/bin/env bash
# Description: no cycle between the plugin's files, and every call goes
# down the documented layer order (tests/layering.py reads the objects'
# symbol tables with nm).

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires nm python3

lib="$top_builddir/plugin/.libs/libraid.a"
raid="$top_builddir/plugin/.libs/raid.o"
for f in "$lib" "$raid"; do
    if [ ! -f "$f" ]; then
        echo "SKIP: $f is not built"
        exit 77
    fi
done
python3 "$top_srcdir/tests/layering.py" "$lib" "$raid"
