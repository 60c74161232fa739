#!/usr/bin/env bash
# A refused scrub leaves the running scrub or resync alone: see
# test-raid-ctl-scrub-refused.py.
source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires_python_module nbd
requires_plugin_feature 'raid_control=yes$' 'control socket'
requires_nbdkit_filter delay error
FAULTS_DIR=$tmpdir PYTHONPATH=$top_srcdir/tests \
    python3 "$top_srcdir/tests/test-raid-ctl-scrub-refused.py"
