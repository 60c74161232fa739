#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nbdkit stops at once in the middle of a throttled rebuild.  The throttle
# used to test "now < due" on one clock reading and sleep "due - now" from
# a second; preempted in between, the time left was negative and usleep got
# ~4.29e9 us, so the rebuild froze and unload waited for it.  clock-skew.c
# makes the plugin's clock jump 200 ms between every other pair of
# readings, as if such preemptions happened: the rebuild, capped at 256K/s
# (four 64K rows a second), must keep going (8 rows within 10 s), and
# SIGTERM must end nbdkit within 3 seconds.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
skew=$top_builddir/tests/.libs/libclockskew.so
if [ ! -f "$skew" ]; then
    echo "$0: SKIP: $skew has not been built"
    exit 77
fi
ctl () { python3 "$top_srcdir/tools/nbdkit-raid-ctl" "$tmpdir/ctl" "$@"; }
field () { python3 -c "import json,sys; st=json.load(sys.stdin); print($1)"; }

make_members 4 4M
truncate -s 4M "$tmpdir/spare"
RAID_NBDKIT_PRELOAD=$skew start_nbdkit "$tmpdir/sock" metadata=none level=5 chunk=64K \
    rebuild-rate=256K control="$tmpdir/ctl" "${members[@]}"
pid=${_bg_pids[-1]}

ctl fail 1 > /dev/null
ctl replace 1 "$tmpdir/spare" > /dev/null
for _ in $(seq 100); do
    done_rows=$(ctl status | field 'st["members"][1]["recovery_offset"] // 65536')
    [ "$done_rows" -ge 8 ] && break
    sleep 0.1
done
if [ "$done_rows" -lt 8 ]; then
    fail "the throttled rebuild froze at row $done_rows"; exit 1
fi
running=$(ctl status | field 'st["rebuild"]["running"]')
[ "$running" = True ] || { fail "the rebuild is not running"; exit 1; }

start=$(date +%s%N)
kill -TERM "$pid"
for _ in $(seq 30); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
took=$(( ($(date +%s%N) - start) / 1000000 ))
if kill -0 "$pid" 2>/dev/null; then
    fail "nbdkit still runs ${took} ms after SIGTERM during a throttled rebuild"
    exit 1
fi
wait "$pid" || { fail "nbdkit exited with status $?"; exit 1; }
echo "ok: nbdkit stopped ${took} ms after SIGTERM, rebuild at row $done_rows"
