#!/usr/bin/env bash
# Remote members whose server has a minimum block size (4096, like a 4Kn
# disk, and refusing anything unaligned): 512-byte reads and writes at odd
# offsets through the array are right and fail no member; a member of
# minimum 8192, or one of minimum 4096 whose blocks the data offset does
# not fit, is refused at open and as a replacement.
# (tests/remote_blocksize.py.)

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires truncate
requires_python_module nbd
requires_nbdkit_filter error blocksize-policy

test_seed
cleanup_fn python3 "$top_srcdir/tests/faults.py" --cleanup "$tmpdir"

FAULTS_DIR=$tmpdir SEED=$seed \
PYTHONPATH=$top_srcdir/tests${PYTHONPATH:+:$PYTHONPATH} \
    timeout -k 5 80 python3 "$top_srcdir/tests/remote_blocksize.py" ||
    { tail -n 20 "$tmpdir"/array*.log; exit 1; }
