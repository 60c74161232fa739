#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A hot spare takes a failed member's role at once even when the wall
# clock steps back.  The watcher threads (hot spares, readd=auto, the
# record of missed rows) used to wait on condition variables that count
# on CLOCK_REALTIME: a wait of 250 ms begun just before the wall clock
# stepped back an hour lasted an hour, and the array stayed degraded with
# a spare beside it.  clock-skew.c, with CLOCK_SKEW_REALTIME_S=3600, puts
# each of the plugin's CLOCK_REALTIME readings an hour ahead, which is
# what such a step right after every reading does; the spare must be in
# sync in the failed role within 20 s, and the data read back as written.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
skew=$top_builddir/tests/.libs/libclockskew.so
if [ ! -f "$skew" ]; then
    echo "$0: SKIP: $skew has not been built"
    exit 77
fi
requires nbdsh
ctl () { python3 "$top_srcdir/tools/nbdkit-raid-ctl" "$tmpdir/ctl" "$@"; }
field () { python3 -c "import json,sys; st=json.load(sys.stdin); print($1)"; }

make_members 3 8M
truncate -s 8M "$tmpdir/spare"
export CLOCK_SKEW_MS=0 CLOCK_SKEW_REALTIME_S=3600
RAID_NBDKIT_PRELOAD=$skew start_nbdkit "$tmpdir/sock" create=true level=5 \
    chunk=64K control="$tmpdir/ctl" "${members[@]}" spare="$tmpdir/spare"
uri="nbd+unix:///?socket=$tmpdir/sock"

# The first resync ends before a member may fail (as md's).
for _ in $(seq 200); do
    [ "$(ctl status | field 'st["scrub"]["finished"]')" = True ] && break
    sleep 0.1
done
head -c 1M /dev/urandom > "$tmpdir/data"
nbdsh -u "$uri" -c "h.pwrite(open('$tmpdir/data', 'rb').read(), 0); h.flush()"

ctl fail 1 > /dev/null
state=
for _ in $(seq 200); do
    state=$(ctl status |
        field '"%s %s" % (st["members"][1]["state"], bool(st["members"][1].get("from_spare")))')
    [ "$state" = "in_sync True" ] && break
    sleep 0.1
done
if [ "$state" != "in_sync True" ]; then
    fail "20 s after member 1 failed, its role is \"$state\", not the spare's in sync"
    exit 1
fi
nbdsh -u "$uri" -c "
import sys
if h.pread(1024 * 1024, 0) != open('$tmpdir/data', 'rb').read():
    sys.exit('the data read back after the takeover is not what was written')
" || { fail "data differ after the takeover"; exit 1; }
echo "ok: the spare took over with the wall clock an hour off"
