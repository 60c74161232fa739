#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: the plugin exports plugin_init and nothing else (as every
# nbdkit plugin should: nbdkit looks up only that), so no symbol of ours
# interposes on nbdkit's or another plugin's (plugin/plugin.syms).
source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires nm

exports=$(nm -D --defined-only "$RAID_PLUGIN" | awk '{ print $3 }' | sort | tr '\n' ' ')
if [ "$exports" != "plugin_init " ]; then
    fail "the plugin exports: $exports"
else
    echo "ok: exports: $exports"
fi
