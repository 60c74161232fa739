#!/usr/bin/env bash
# A remote member's server of an md array is restarted while the array is
# idle (a planned restart of a storage server: kill, start again on the
# same socket over the same file, no client I/O in between).  Every new
# connection is checked against the member's md superblock, which is the
# one last written, so the member must stay in the array: every read
# succeeds at the first try, and writes made afterwards reach it (every
# row's parity is good on the member files at the end).  The plugin's
# connections to the old server, one per nbdkit thread, are stale by
# then; each must be noticed and replaced without failing a request.
# (tests/remote_restart.py; raw arrays: test-raid-remote-restart-raw.sh.)

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires truncate
requires_python_module nbd
requires_nbdkit_filter error

test_seed
cleanup_fn python3 "$top_srcdir/tests/faults.py" --cleanup "$tmpdir"

FAULTS_DIR=$tmpdir SEED=$seed \
PYTHONPATH=$top_srcdir/tests${PYTHONPATH:+:$PYTHONPATH} \
    timeout -k 5 80 python3 "$top_srcdir/tests/remote_restart.py" md same ||
    { tail -n 20 "$tmpdir"/array*.log; exit 1; }
