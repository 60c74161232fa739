#!/usr/bin/env bash
# Replaced members are closed: see test-raid-ctl-replace-fds.py.
source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires_python_module nbd
requires_plugin_feature 'raid_control=yes$' 'control socket'
[ -d /proc/self/fd ] || { echo "$0: SKIP: no /proc/PID/fd"; exit 77; }
FAULTS_DIR=$tmpdir PYTHONPATH=$top_srcdir/tests \
    python3 "$top_srcdir/tests/test-raid-ctl-replace-fds.py"
