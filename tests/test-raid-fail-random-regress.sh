#!/usr/bin/env bash
# The randomized test (tests/raidfail_random.py) replaying every seed
# that ever failed, as listed with its reason in tests/random-seeds.regress
# (each with its mix, and the arrays and op count where it failed).  A
# seed that fails again prints its replay command.  A new seed that fails
# belongs in that file, with the commit that fixed it.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires_python_module nbd
requires_plugin_feature 'raid_control=yes$' 'control socket'
requires_nbdkit_filter error

RAID_TEST_REGRESS=${RAID_TEST_REGRESS:-$top_srcdir/tests/random-seeds.regress} \
FAULTS_DIR=$tmpdir PYTHONPATH=$top_srcdir/tests \
    python3 "$top_srcdir/tests/raidfail_random.py"
