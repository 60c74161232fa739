#!/usr/bin/env bash
# A remote member's server of an md array is restarted over another disk
# of the same name: an empty memory disk of the same size (the disk was
# lost); the same file grown by 1 MiB (another size); a copy of the file
# taken before another member failed (its superblock's event count is
# behind what was written to it since).  The first request that
# reconnects must find that the new connection is not the member's disk
# (no md superblock; the wrong size; events behind), fail the member with
# that reason in the log, and never read it: every chunk reads back byte
# for byte as written, from the other members, and writes go on.
# (tests/remote_restart.py.)

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires truncate
requires_python_module nbd
requires_nbdkit_filter error

test_seed
cleanup_fn python3 "$top_srcdir/tests/faults.py" --cleanup "$tmpdir"

for how in empty bigger older; do
    rm -rf "$tmpdir/$how"
    mkdir "$tmpdir/$how"
    FAULTS_DIR=$tmpdir/$how SEED=$seed \
    PYTHONPATH=$top_srcdir/tests${PYTHONPATH:+:$PYTHONPATH} \
        timeout -k 5 80 python3 "$top_srcdir/tests/remote_restart.py" md $how ||
        { tail -n 20 "$tmpdir/$how"/array*.log; exit 1; }
    python3 "$top_srcdir/tests/faults.py" --cleanup "$tmpdir/$how"
done
