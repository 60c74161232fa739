#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# In the background nbdkit runs in /, but control=PATH and the PATH of
# "replace N PATH" are relative to where they were written: the socket is
# where the command line said, and the replacement is named by its full
# path.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
ctl_tool=$top_srcdir/tools/nbdkit-raid-ctl

cd "$tmpdir"
for i in 0 1 2 3; do truncate -s 2M "rel$i"; done
truncate -s 2M relspare
nbdkit -U rel.sock -P rel.pid "$RAID_PLUGIN" metadata=none level=5 \
    chunk=4K control=rel.ctl rel0 rel1 rel2 rel3
for _ in $(seq 50); do [ -s rel.pid ] && break; sleep 0.1; done
cleanup_fn kill "$(cat rel.pid)"
[ -S "$tmpdir/rel.ctl" ] || { fail "control=rel.ctl is not $tmpdir/rel.ctl"; exit 1; }
python3 "$ctl_tool" rel.ctl fail 1 > /dev/null
python3 "$ctl_tool" rel.ctl replace 1 relspare > /dev/null
name=$(python3 "$ctl_tool" rel.ctl status |
       python3 -c 'import json,sys; print(json.load(sys.stdin)["members"][1]["name"])')
[ "$name" = "$tmpdir/relspare" ] ||
    fail "replace 1 relspare gave member 1 the name $name"
echo "ok: relative control= and replace paths, nbdkit in the background"
