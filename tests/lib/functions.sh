# SPDX-License-Identifier: BSD-3-Clause
# Helpers sourced by every shell test (tests/test-*.sh, tests/vm/test-vm-*.sh).
#
# What a test gets by sourcing this file:
#   - set -e, and PATH with /usr/bin first: nbdsh and the nbd Python module
#     belong to Debian's python3, not to whatever python3 comes first;
#     before it the directory of the nbdkit configure found ($RAID_NBDKIT).
#   - $RAID_PLUGIN (from make check, or guessed from this directory).
#   - $tmpdir: a fresh directory, removed on exit together with every
#     process started through start_bg / start_nbdkit, whether the test
#     passes, fails or is interrupted.  Extra cleanup: cleanup_fn CMD ARGS.
#   - requires CMD...            exit 77 naming the first missing tool.
#   - requires_python_module M   exit 77 if /usr/bin/python3 lacks M.
#   - make_members N SIZE        N sparse files $tmpdir/m0.. in ${members[@]}.
#   - requires_nbdkit_filter F.. skip unless nbdkit has those filters.
#   - raid_nbdkit ARGS...        nbdkit -U - "$RAID_PLUGIN" ARGS...
#   - start_nbdkit SOCK ARGS...  a background nbdkit serving SOCK (with the
#                                shim $RAID_NBDKIT_PRELOAD preloaded, if set).
#   - members_md5 FILE...        one line per file, to compare snapshots.
#   - raidcheck ARGS...          tests/lib/raidcheck.py, the independent
#                                checker.
#   - test_seed                  $seed: RAID_TEST_SEED or a new one, printed.
#   - fail MSG                   record a failure and go on; the test
#                                exits 1 at the end whatever else happens
#                                (see "Failures" below).
#   - end_failures               optional last line: PASS, or exit 1.
#   - expect_refused WHAT REGEX NBDKIT-ARGS...
#                                nbdkit must stop before serving, saying
#                                REGEX, writing nothing.
#   - sb get|set|check ...       tests/lib/mdsb.py: md superblocks, read and
#                                changed independently of the plugin.
#   - wait_clean FILE            until FILE's md superblock says clean.
#   - shadow_client URI MODE SHADOW [OPTIONS]
#                                tests/lib/shadow_client.py: write or verify
#                                an array against a shadow file.
#   - md_new SHADOW [OPTIONS] -- NBDKIT-ARGS...
#                                a new md array with data, left clean.
# (Python tests have the same in tests/lib/faults.py.)
#
# Skips (exit 77) always say why on stdout, so the .log explains them.
#
# Failures.  A test reports a failed check with fail MSG: it prints
# "FAIL: MSG", records it, and the test goes on, so that one run shows
# every case that fails (a table of refused configurations, each md
# version, each array of a guest: a run can take minutes, one per
# failing case would take many).  Where going on makes no sense (nbdkit
# did not start, the rest reads what the failed step should have made)
# the test stops after recording: fail MSG; exit 1.  A recorded failure
# is final: the EXIT trap exits 1 whenever one was recorded, whatever the
# test would have exited with, end_failures or not, so a test cannot
# pass by forgetting end_failures.  Failures are recorded in a file, not
# a variable, so that one recorded in a subshell (a pipeline, $(...))
# counts too.  A skip (exit 77) stays a skip, unless a failure was
# recorded before it; any other non-zero status is kept.  Commands that
# fail stop the test as before (set -e).  tests/test-functions-fail.sh
# checks all of this.

set -e

: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
: "${RAID_PLUGIN:=$top_builddir/plugin/.libs/nbdkit-raid-plugin.so}"
export top_srcdir top_builddir RAID_PLUGIN

PATH=/usr/bin:$PATH
# nbdkit is the one configure found, before /usr/bin's (Debian 12's
# aborts when a client hangs up early): RAID_NBDKIT, which make check
# sets, or for a test run by hand the build's Makefile.
: "${RAID_NBDKIT:=$(sed -n 's/^NBDKIT = //p' "$top_builddir/Makefile" 2>/dev/null)}"
case $RAID_NBDKIT in
    /*) PATH=${RAID_NBDKIT%/*}:$PATH ;;
    *) RAID_NBDKIT= ;;
esac
# make check-asan, check-tsan and check-valgrind run every test through
# tests/sanitize/run-test, which names its nbdkit wrapper's directory
# here: it must come first (see tests/sanitize/nbdkit).
if [ -n "${RAID_TEST_PATH:-}" ]; then
    PATH=$RAID_TEST_PATH:$PATH
fi
export PATH RAID_NBDKIT

# Run this test's cleanup: the registered functions (last first), then
# every background process we started, then the files.  It keeps the
# test's exit status, but for 0 and 77 after a recorded failure: 1.
_cleanup_fns=()
_bg_pids=()

# _our_child PID: whether PID is still a process of ours, a child of this
# shell not yet reaped (a zombie counts).  A pid that a test waited for
# is free, and the kernel may give its number to any new process: with
# pid_max 32768 a busy make check wraps it within minutes, and a clean-up
# that signalled the number once killed another test's member server.
_our_child ()
{
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    set -- $stat
    [ "${2:-}" = "$$" ]
}

_cleanup ()
{
    local status=$?
    set +e
    local i n
    for (( i = ${#_cleanup_fns[@]} - 1; i >= 0; i-- )); do
        eval "${_cleanup_fns[i]}"
    done
    # A recorded failure fails the test (see "Failures" above).
    n=$(failure_count)
    if [ "$n" -gt 0 ]; then
        echo "$0: FAIL: $n failure(s) (${SECONDS}s):"
        sed 's/^/    /' "$_failures_file"
        if [ "$status" = 0 ] || [ "$status" = 77 ]; then
            status=1
        fi
    fi
    for pid in "${_bg_pids[@]}"; do
        _our_child "$pid" && kill "$pid" 2>/dev/null
    done
    for pid in "${_bg_pids[@]}"; do
        # Give each a moment, then insist.
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            _our_child "$pid" || break
            sleep 0.1
        done
        if _our_child "$pid"; then
            kill -9 "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
        fi
    done
    if [ -n "${RAID_TEST_KEEP:-}" ]; then
        echo "$0: RAID_TEST_KEEP: the files are in $tmpdir" >&2
    elif [ -n "$tmpdir" ] && [ -d "$tmpdir" ]; then
        chmod -R u+rwx "$tmpdir" 2>/dev/null
        rm -rf "$tmpdir"
    fi
    exit $status
}
trap _cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Register a command to run at cleanup (before processes are killed).
cleanup_fn ()
{
    _cleanup_fns+=("$(printf '%q ' "$@")")
}

tmpdir="$(mktemp -d "${TMPDIR:-/tmp}/raid-test.XXXXXXXX")"
# One line per failure recorded by fail, read by the EXIT trap.
_failures_file=$tmpdir/.failures
: > "$_failures_file"

requires ()
{
    local cmd
    for cmd in "$@"; do
        if ! command -v "$cmd" >/dev/null 2>&1; then
            echo "$0: SKIP: this test needs '$cmd', which is not installed"
            exit 77
        fi
    done
}

requires_python_module ()
{
    local mod
    for mod in "$@"; do
        if ! python3 -c "import $mod" >/dev/null 2>&1; then
            echo "$0: SKIP: this test needs the Python module '$mod' in $(command -v python3)"
            exit 77
        fi
    done
}

# Every raid test needs these.
requires nbdkit python3
if [ ! -f "$RAID_PLUGIN" ]; then
    echo "$0: SKIP: the plugin $RAID_PLUGIN has not been built"
    exit 77
fi

# Work on a private copy of the plugin: a rebuild while the test runs
# (libtool relinks in place) must not pull it from under nbdkit.
cp "$RAID_PLUGIN" "$tmpdir/nbdkit-raid-plugin.so"
RAID_PLUGIN=$tmpdir/nbdkit-raid-plugin.so

# make_members N SIZE [NAME]: N sparse files $tmpdir/NAME0.. (NAME
# defaults to m), all SIZE bytes (any size truncate(1) accepts), listed
# in role order in the array ${members[@]}.
make_members ()
{
    local n=$1 size=$2 name=${3:-m} i
    members=()
    for (( i = 0; i < n; i++ )); do
        rm -f "$tmpdir/$name$i"
        truncate -s "$size" "$tmpdir/$name$i"
        members+=("$tmpdir/$name$i")
    done
}

# raid_nbdkit ARGS... : the captive form, e.g.
#   raid_nbdkit level=5 chunk=4K "${members[@]}" --run 'nbdsh -u "$uri" -c ...'
# -U - gives a private socket and $uri/$unixsocket to the --run command.
raid_nbdkit ()
{
    nbdkit -U - "$RAID_PLUGIN" "$@"
}

# start_bg CMD ARGS...: run CMD in the background; cleanup kills it.
start_bg ()
{
    "$@" &
    _bg_pids+=($!)
}

# start_nbdkit SOCK ARGS...: serve the array on the Unix socket SOCK in
# the background (in the foreground of a child, so its pid is ours to
# kill) and wait until the socket exists.
# _exec_nbdkit ARGS...: become nbdkit (for start_bg, so that the pid it
# records is nbdkit's).  RAID_NBDKIT_PRELOAD: a test's LD_PRELOAD shim, for
# the raid plugin's nbdkit only (never for rm, nbdsh or a member server).
# Under the sanitizers nbdkit is tests/sanitize/nbdkit, which preloads it
# after the sanitizer's runtime (the shim is built with the sanitizer too).
_exec_nbdkit ()
{
    if [ -n "${RAID_NBDKIT_PRELOAD:-}" ] && [ -z "${RAID_SANITIZE:-}" ]; then
        LD_PRELOAD=$RAID_NBDKIT_PRELOAD exec nbdkit "$@"
    else
        exec nbdkit "$@"
    fi
}

start_nbdkit ()
{
    local sock=$1 i
    shift
    rm -f "$sock"
    start_bg _exec_nbdkit -f --exit-with-parent -U "$sock" "$RAID_PLUGIN" "$@"
    for (( i = 0; i < 100; i++ )); do
        [ -S "$sock" ] && return 0
        kill -0 "${_bg_pids[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    echo "$0: nbdkit did not start serving $sock" >&2
    return 1
}

# members_md5 FILE...: one "md5  path" line per member (directories and
# missing paths get a placeholder so the snapshot still compares).
members_md5 ()
{
    local f
    for f in "$@"; do
        if [ -f "$f" ]; then
            md5sum "$f"
        else
            echo "(not a file)  $f"
        fi
    done
}

# The independent parity checker and image builder.
raidcheck ()
{
    python3 "$top_srcdir/tests/lib/raidcheck.py" "$@"
}

# A seed for the random tests: $RAID_TEST_SEED if set, else a new one.
# Always printed, so a failure can be replayed.
test_seed ()
{
    seed=${RAID_TEST_SEED:-$(( (RANDOM << 15 | RANDOM) ))}
    echo "$0: seed=$seed (replay with RAID_TEST_SEED=$seed)"
}

# requires_nbdkit_filter NAME...: skip (exit 77) unless nbdkit has them.
requires_nbdkit_filter ()
{
    local f
    for f in "$@"; do
        if ! nbdkit --filter="$f" null --dump-plugin >/dev/null 2>&1; then
            echo "$0: SKIP: nbdkit's $f filter is not installed"
            exit 77
        fi
    done
}

# start_bounce_array: a RAID-5 (chunk 64K) of three members whose member 1
# is an NBD export with a 4 KiB minimum block size (nbdkit's
# blocksize-policy filter), so that reads of its chunk at 512-byte offsets
# go through the plugin's bounce buffers, served with the alloc-fail shim
# (alloc-fail.c) preloaded: the plugin's aligned_alloc fails while the file
# $ALLOC_FAIL_FILE exists.  Sets members, ctl and sock; nbdkit's stderr
# goes to $tmpdir/log.  Skips (exit 77) without the filter or the shim.
start_bounce_array ()
{
    local shim=$top_builddir/tests/.libs/liballocfail.so
    requires_nbdkit_filter blocksize-policy
    [ -f "$shim" ] || { echo "$0: SKIP: $shim is not built"; exit 77; }
    make_members 3 4M
    start_bg nbdkit -f --exit-with-parent -U "$tmpdir/m1.sock" \
        --filter=blocksize-policy file "${members[1]}" \
        blocksize-minimum=4096 blocksize-error-policy=error
    for _ in $(seq 100); do [ -S "$tmpdir/m1.sock" ] && break; sleep 0.1; done
    export ALLOC_FAIL_FILE=$tmpdir/no-memory
    ctl=$tmpdir/ctl sock=$tmpdir/raid.sock
    RAID_NBDKIT_PRELOAD=$shim start_nbdkit "$sock" metadata=none level=5 \
        chunk=64K control="$ctl" "${members[0]}" \
        "nbd+unix:///?socket=$tmpdir/m1.sock" "${members[2]}" 2> "$tmpdir/log"
}

# fail MSG: print and record a failure; the test goes on (see "Failures"
# at the top).  failure_count: how many were recorded.  end_failures
# (optional, last): exit 1 if any were (the EXIT trap lists them), else
# say PASS.
fail ()
{
    echo "FAIL: $*"
    echo "$*" >> "$_failures_file"
}
failure_count ()
{
    if [ -f "$_failures_file" ]; then
        wc -l < "$_failures_file"
    else
        echo 0
    fi
}
end_failures ()
{
    if [ "$(failure_count)" -gt 0 ]; then
        exit 1
    fi
    echo "$0: PASS (${SECONDS}s)"
}

# expect_refused WHAT REGEX NBDKIT-ARGS...: nbdkit NBDKIT-ARGS (which name
# the plugin and the members) must stop before it serves: it exits non-zero
# and not by a signal, says REGEX (grep -E) on stderr, and changes none of
# the files $watch names (shell words, expanded at each call; default
# "${members[@]}").  $refused_not, if set, must not be in the message.
# A failure is counted by fail; nbdkit's stderr is left in $tmpdir/err.
watch='"${members[@]}"'
refused_not=
expect_refused ()
{
    local what=$1 regex=$2 r=0 files
    shift 2
    eval "files=($watch)"
    members_md5 "${files[@]}" > "$tmpdir/before"
    timeout 60 nbdkit --exit-with-parent "$@" --run 'echo SERVED' \
        > "$tmpdir/out" 2> "$tmpdir/err" || r=$?
    members_md5 "${files[@]}" > "$tmpdir/after"
    if [ $r = 0 ] || grep -q SERVED "$tmpdir/out"; then
        fail "$what: nbdkit accepted it (exit $r)"
        sed 's/^/    /' "$tmpdir/err"
    elif [ $r -gt 128 ]; then
        fail "$what: nbdkit died of signal $((r - 128))"
    elif ! grep -qE -- "$regex" "$tmpdir/err"; then
        fail "$what: the message does not match /$regex/:"
        sed 's/^/    /' "$tmpdir/err"
    elif [ -n "$refused_not" ] && grep -qE -- "$refused_not" "$tmpdir/err"; then
        fail "$what: the message says /$refused_not/:"
        sed 's/^/    /' "$tmpdir/err"
    elif ! cmp -s "$tmpdir/before" "$tmpdir/after"; then
        fail "$what: a member changed"
        diff "$tmpdir/before" "$tmpdir/after" | sed 's/^/    /' || :
    else
        echo "ok: $what: $(grep -E -- "$regex" "$tmpdir/err" | head -1)"
    fi
}

# md superblocks, by tests/lib/mdsb.py.  An array is clean when every
# superblock's resync_offset is all ones.
clean=18446744073709551615
sb ()
{
    python3 "$top_srcdir/tests/lib/mdsb.py" "$@"
}

# wait_clean FILE: wait up to 10 s for FILE's superblock to say clean
# (for the first resync of a new array to end); 1 if it does not.  In a
# --run command (another shell): python3 "$top_srcdir/tests/lib/mdsb.py"
# wait-clean FILE.
wait_clean ()
{
    sb wait-clean "$1"
}

shadow_client ()
{
    python3 "$top_srcdir/tests/lib/shadow_client.py" "$@"
}

# md_new SHADOW [CLIENT-OPTION...] -- NBDKIT-ARGS...: a new md array
# (create=true and NBDKIT-ARGS, the members last) written by
# shadow_client (its options; by default --whole: random data over all of
# it), the shadow in SHADOW; its first resync finished, shut down clean.
md_new ()
{
    local shadow=$1 opts=()
    shift
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    [ ${#opts[@]} -gt 0 ] || opts=(--whole --writes 0)
    nbdkit -U - "$RAID_PLUGIN" create=true "$@" --run "
        python3 '$top_srcdir/tests/lib/shadow_client.py' \"\$uri\" write \
            '$shadow' ${opts[*]} &&
        python3 '$top_srcdir/tests/lib/mdsb.py' wait-clean '${!#}' 60" \
        2> "$tmpdir/create.log" || { cat "$tmpdir/create.log"; exit 1; }
}
