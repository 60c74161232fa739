#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: tests/lib/functions.sh's failure convention.  A shell test
# that records a failure with fail exits 1, whether or not it reaches
# end_failures, whatever status it would have ended with (0, or a skip's
# 77), and also when fail ran in a subshell; a status that already says
# failure is kept; a skip without a recorded failure stays a skip (77);
# a test without one passes.
#
# Each case is a child script that sources functions.sh as a test does;
# its exit status is compared with the expected one.  This test does not
# judge itself with fail, the thing under test: it counts its own
# mismatches and exits 1 on any.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"

wrong=0

# check_case NAME WANT BODY: run BODY as a test; it must exit WANT, and when it
# recorded a failure its output must name it.
check_case ()
{
    local name=$1 want=$2 body=$3 got=0
    cat > "$tmpdir/$name.sh" <<EOF
source "\$top_srcdir/tests/lib/functions.sh"
$body
EOF
    bash "$tmpdir/$name.sh" > "$tmpdir/$name.out" 2>&1 || got=$?
    sed "s/^/    $name: /" "$tmpdir/$name.out"
    if [ "$got" != "$want" ]; then
        echo "WRONG: $name: exit status $got, not $want"
        wrong=$((wrong + 1))
    elif [[ $body == *"fail \"m-"* ]] &&
            ! grep -q "FAIL: .*failure(s)" "$tmpdir/$name.out"; then
        echo "WRONG: $name: no summary of the failures recorded"
        wrong=$((wrong + 1))
    else
        echo "ok: $name: exit status $got"
    fi
}

check_case pass 0 'echo "nothing wrong"'
check_case pass-end-failures 0 'end_failures'
check_case fail-no-end 1 'fail "m-1"; echo "went on after the failure"'
check_case fail-exit-0 1 'fail "m-1"; exit 0'
check_case fail-end-failures 1 'fail "m-1"; fail "m-2"; end_failures'
check_case fail-in-subshell 1 '( fail "m-1" ); echo "after the subshell"'
check_case fail-in-pipeline 1 'echo x | while read -r _; do fail "m-1"; done'
check_case fail-in-substitution 1 'out=$(fail "m-1"); echo "captured: $out"'
check_case skip 77 'echo "SKIP: a skip"; exit 77'
check_case skip-requires 77 'requires no-such-command-anywhere'
check_case fail-then-skip 1 'fail "m-1"; exit 77'
check_case fail-exit-3 3 'fail "m-1"; exit 3'
check_case command-fails 1 'false; echo "not reached"'

if [ "$wrong" -gt 0 ]; then
    echo "$0: $wrong case(s) wrong"
    exit 1
fi
echo "ok: a recorded failure always fails the test; a skip stays a skip"
