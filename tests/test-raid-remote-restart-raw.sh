#!/usr/bin/env bash
# A remote member's server of a raw array (metadata=none) is restarted
# while the array is idle, over the same file.  A raw member carries
# nothing that says which disk it is, and the plugin's proof that a new
# connection reaches the same disk is that the connection it made at open
# (the sentinel) still answers; after a restart it does not, and nothing
# proves the new server holds the member's data.  So the member is failed
# with that reason in the log, and never read: every chunk reads back as
# written, from the other members, and writes go on.
# (tests/remote_restart.py; md arrays: test-raid-remote-restart.sh.)

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires truncate
requires_python_module nbd
requires_nbdkit_filter error

test_seed
cleanup_fn python3 "$top_srcdir/tests/faults.py" --cleanup "$tmpdir"

FAULTS_DIR=$tmpdir SEED=$seed \
PYTHONPATH=$top_srcdir/tests${PYTHONPATH:+:$PYTHONPATH} \
    timeout -k 5 80 python3 "$top_srcdir/tests/remote_restart.py" raw same ||
    { tail -n 20 "$tmpdir"/array*.log; exit 1; }
