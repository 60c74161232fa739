#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# run-fuzz.sh TARGET...: what make check-fuzz does for each libFuzzer
# target (tests/fuzz/fuzz_TARGET, built by tests/Makefile.am with clang
# -fsanitize=fuzzer,address,undefined):
#
#   1. replay every input in tests/fuzz/regressions/TARGET/ (crashes found
#      before: each must now pass) and the seed corpus tests/fuzz/corpus/
#      TARGET/, once each;
#   2. fuzz for FUZZ_SECONDS (default 20) from the seeds and what earlier
#      runs found (kept in fuzz-work/TARGET/ in the build tree), with
#      tests/fuzz/TARGET.dict when there is one.
#
# A crash, leak, timeout or sanitizer report in either step fails the
# target.  A new crash is copied into tests/fuzz/regressions/TARGET/ of
# the source tree (commit it: from then on it is replayed every time) and
# shown in hex, with the command that replays it.  Longer by hand:
#   make check-fuzz FUZZ_SECONDS=600            (every target)
#   make check-fuzz FUZZ_TARGETS=params FUZZ_SECONDS=3600
# Run from the build's tests/ directory; srcdir= names the source tests/.
# The targets run side by side, FUZZ_JOBS (default: the CPUs) at a time:
# each fuzzer uses one core.  A target's output is shown whole, in the
# order given, once every target is done.
set -u
srcdir=${srcdir:-$(dirname "$0")/..}
seconds=${FUZZ_SECONDS:-20}
jobs=${FUZZ_JOBS:-$(nproc)}

# Steps 1 and 2 for target $1, its output on stdout; 1 if it failed.
fuzz_one ()
{
    local t=$1 bin corpus regress work art rc f
    local dict=() dirs=() found new=()
    bin=./fuzz/fuzz_$t
    corpus=$srcdir/fuzz/corpus/$t
    regress=$srcdir/fuzz/regressions/$t
    work=fuzz-work/$t
    art=fuzz-work/$t-artifacts
    mkdir -p "$work" "$art"
    rm -f "$art"/*
    [ -f "$srcdir/fuzz/$t.dict" ] && dict=(-dict="$srcdir/fuzz/$t.dict")
    for d in "$regress" "$corpus"; do
        [ -d "$d" ] && dirs+=("$d")
    done

    echo "== $t: replaying ${dirs[*]}"
    if ! "$bin" -runs=0 -artifact_prefix="$art/" "${dirs[@]}" \
            > "$art/replay.log" 2>&1; then
        tail -n 60 "$art/replay.log"
        echo "run-fuzz: FAIL: $t: an input of the regressions or seeds fails again"
        return 1
    fi
    echo "== $t: fuzzing for $seconds s"
    "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$art/" "${dict[@]}" \
        "$work" "${dirs[@]}" > "$art/fuzz.log" 2>&1
    rc=$?
    grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::new_units_added)' \
        "$art/fuzz.log" | sed "s/^/  /"
    found=("$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*)
    for f in "${found[@]}"; do
        [ -f "$f" ] && new+=("$f")
    done
    if [ "$rc" -ne 0 ] || [ ${#new[@]} -gt 0 ]; then
        tail -n 80 "$art/fuzz.log"
        mkdir -p "$regress"
        for f in "${new[@]}"; do
            cp "$f" "$regress/"
            echo "run-fuzz: $t: new regression input $regress/$(basename "$f")" \
                "($(wc -c < "$f") bytes):"
            od -A d -t x1z -v "$f" | head -n 40
            echo "run-fuzz: replay: tests/fuzz/fuzz_$t $regress/$(basename "$f")"
        done
        echo "run-fuzz: FAIL: $t (exit status $rc)"
        return 1
    fi
    return 0
}

mkdir -p fuzz-work
status=0
running=0
for t in "$@"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n || status=1
        running=$((running - 1))
    fi
    fuzz_one "$t" > "fuzz-work/$t.out" 2>&1 &
    running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
    wait -n || status=1
    running=$((running - 1))
done
for t in "$@"; do
    cat "fuzz-work/$t.out"
done
exit $status
