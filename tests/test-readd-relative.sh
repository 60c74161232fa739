#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# re-add N opens member N again by the path it was given, and a path
# given relative is relative to where nbdkit was started, though nbdkit
# in the background runs in /: the member comes back (not "cannot
# open", nor a file of the same name in /).

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
ctl_tool=$top_srcdir/tools/nbdkit-raid-ctl

cd "$tmpdir"
for i in 0 1 2 3; do truncate -s 3M "rr$i"; done
nbdkit -U rr.sock -P rr.pid "$RAID_PLUGIN" create=true level=5 \
    chunk=64K data-offset=1M control=rr.ctl rr0 rr1 rr2 rr3
for _ in $(seq 50); do [ -s rr.pid ] && break; sleep 0.1; done
cleanup_fn kill "$(cat rr.pid)"
python3 "$ctl_tool" rr.ctl wait 60 > /dev/null
python3 "$ctl_tool" rr.ctl fail 1 > /dev/null
reply=$(python3 "$ctl_tool" rr.ctl re-add 1) ||
    { fail "re-add 1 of a member given as rr1: $reply"; exit 1; }
python3 "$ctl_tool" rr.ctl wait 60 > /dev/null
state=$(python3 "$ctl_tool" rr.ctl status |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["members"][1]["state"])')
[ "$state" = in_sync ] ||
    fail "member 1 is $state after re-add 1"
echo "ok: a member given by a relative path re-added, nbdkit in the background"
