#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The shell tests' clean-up signals only processes that are still its
# own.  It used to kill every pid a test had started, including those the
# test had already waited for, whose numbers the kernel may have given to
# any new process since (pid_max is 32768 here, and make check wraps it
# within minutes): a member server of the randomized test, running beside
# such a test, died of it and answered "Connection refused".  Two cases,
# each with a stranger (tests/lib/pid_reuse.py: `sleep 60`, nobody's
# child here) made to hold a number that was ours:
#   - functions.sh's clean-up, in a test that waited for its background
#     process: the stranger must outlive that test;
#   - the guest tests' _vm_kill with a qemu pid file left behind: the
#     stranger's command line does not name the pid file, so it lives.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
reuse=$top_srcdir/tests/lib/pid_reuse.py
if ! python3 -c "import sys; sys.path.insert(0, '${reuse%/*}'); import pid_reuse; sys.exit(0 if pid_reuse.can() else 1)"; then
    echo "$0: SKIP: /proc/sys/kernel/ns_last_pid cannot be written (not root): the kernel cannot be made to reuse a number"
    exit 77
fi
strangers=()
# Running, not a zombie that its parent (init, or a subreaper) has yet to
# reap.
running () { local st; st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; st=${st##*) }; [ "${st%% *}" != Z ]; }
kill_strangers () { local p; for p in "${strangers[@]}"; do kill -9 "$p" 2>/dev/null; done; }
cleanup_fn kill_strangers

# A test that waited for its background process, whose number a stranger
# then took.
cat > "$tmpdir/waited.sh" <<INNER
source "$top_srcdir/tests/lib/functions.sh"
start_bg sleep 60
pid=\${_bg_pids[-1]}
kill "\$pid"; wait "\$pid" || :
python3 "$reuse" "\$pid" > "$tmpdir/stranger" || exit 2
INNER
rc=0
bash "$tmpdir/waited.sh" || rc=$?
if [ "$rc" = 2 ]; then
    echo "$0: SKIP: the kernel did not give the number again (200 tries)"
    exit 77
fi
s=$(cat "$tmpdir/stranger")
strangers+=("$s")
[ "$rc" = 0 ] || fail "the inner test exited with status $rc"
sleep 0.2
running "$s" ||
    fail "functions.sh's clean-up killed process $s, which held the number of a process the test had waited for"

# _vm_kill with a pid file whose qemu is gone and whose number a stranger
# holds.
source "$top_srcdir/tests/vm/common.sh"
sleep 60 &
pid=$!
kill "$pid"; wait "$pid" 2>/dev/null || :
s=$(python3 "$reuse" "$pid") || { echo "$0: SKIP: the kernel did not give the number again"; exit 77; }
strangers+=("$s")
echo "$s" > "$tmpdir/guest.qemu.pid"
_vm_kill "$tmpdir/guest.qemu.pid"
running "$s" ||
    fail "_vm_kill killed process $s, which holds the number of a qemu that is gone"

[ "$(failure_count)" = 0 ] && echo "ok: strangers with our old numbers survived both clean-ups"
