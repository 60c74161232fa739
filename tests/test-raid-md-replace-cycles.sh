#!/usr/bin/env bash
# Thousands of fail/replace cycles on an md array, restarts between them:
# the superblocks stay ones md accepts, the dev_numbers are reused, and
# the array assembles and holds its data (issue 11, item 1).  The work is
# test-raid-md-replace-cycles.py; RAID_TEST_CYCLES and
# RAID_TEST_RESTART_EVERY change its counts, RAID_TEST_SEED replays it.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires_python_module nbd
requires_plugin_feature 'raid_control=yes$' 'control socket'
requires_nbdkit_filter error
test_seed

SEED=$seed FAULTS_DIR=$tmpdir RAID_PLUGIN=$RAID_PLUGIN \
    timeout 300 python3 "$top_srcdir/tests/test-raid-md-replace-cycles.py"
