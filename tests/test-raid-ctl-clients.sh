#!/usr/bin/env bash
# Several control clients, idle ones, and shutdown: see
# test-raid-ctl-clients.py.
source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires_python_module nbd
requires_plugin_feature 'raid_control=yes$' 'control socket'
FAULTS_DIR=$tmpdir PYTHONPATH=$top_srcdir/tests \
    python3 "$top_srcdir/tests/test-raid-ctl-clients.py"
