#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench-smoke.sh NAME: bench/NAME.sh --smoke must run to its end and print
# its table (the line it ends its report with), against the plugin this
# build made, in a folder of this test's own.  Benchmarks run in no other
# test, and a script that stopped working (a variable lost in a move, a
# changed control reply) went unnoticed for sessions: now it fails here.
# The figures of a smoke run are not looked at.  The script runs with
# Python's defaults, as a user's would (make check's environment says not
# to write bytecode), and must leave nothing in the source tree: no
# bench/__pycache__ from importing bench/fio_figures.py.  Used by the
# test-bench-smoke-*.sh wrappers, one per script.

source "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/functions.sh"
name=$1 expect=$2
requires fio nbdinfo nbdkit bc
requires_python_module nbd
script=$top_srcdir/bench/$name.sh
out=$tmpdir/$name.out
pycache=$top_srcdir/bench/__pycache__
had_pycache=false
[ -e "$pycache" ] && had_pycache=true
if ! DIR=$tmpdir RAID_BENCH_PLUGIN=$RAID_PLUGIN \
        env -u PYTHONDONTWRITEBYTECODE bash "$script" --smoke > "$out" 2>&1; then
    cat "$out"
    fail "bench/$name.sh --smoke failed"; exit 1
fi
cat "$out"
grep -q -- "$expect" "$out" || {
    fail "bench/$name.sh --smoke did not print '$expect'"; exit 1
}
if ! $had_pycache && [ -e "$pycache" ]; then
    fail "bench/$name.sh --smoke wrote $pycache into the source tree"; exit 1
fi
echo "ok: bench/$name.sh --smoke ran to its end"
