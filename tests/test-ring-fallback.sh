#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: a process that cannot make io_uring rings (at its file
# limit) still serves every request, and fails no member.
#
# Each nbdkit worker thread makes its ring on first use.  nbdkit is started
# with RLIMIT_NOFILE just above the descriptors it holds while a client is
# connected, so (nearly) no thread can make one: EMFILE.  Full-row writes
# and chunk-sized reads (the batches that go through the ring), 16 at a
# time, must all succeed, read back byte for byte, and leave every member
# in sync.  The old code failed every member of such a batch.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires nbdsh prlimit
requires_python_module nbd


make_members 6 8M
sock=$tmpdir/raid.sock ctl=$tmpdir/ctl
args=(metadata=none level=6 chunk=128K control="$ctl" "${members[@]}")
uri="nbd+unix:///?socket=$sock"

# serve [PRLIMIT-ARGS...]: nbdkit on $sock in the background; sets $pid.
serve ()
{
    rm -f "$sock" "$ctl"
    start_bg prlimit "$@" -- nbdkit -f -t 16 -U "$sock" "$RAID_PLUGIN" "${args[@]}" \
        2> "$tmpdir/log"
    pid=${_bg_pids[-1]}
    for _ in $(seq 100); do [ -S "$sock" ] && [ -S "$ctl" ] && return; sleep 0.1; done
    cat "$tmpdir/log"
    fail "nbdkit did not start"; exit 1
}

# The limit: one above the highest descriptor nbdkit holds with one idle
# client connected (not counting what the test harness left open above
# 200, which stays open and does not matter).  The client still gets its
# socket, and at most the one or two holes below the limit are left for
# rings: 16 requests in flight make 16 worker threads want one.
serve
nbdsh -u "$uri" -c "
import os, time
h.get_size()
open('$tmpdir/connected', 'w').close()
while os.path.exists('$tmpdir/connected'):
    time.sleep(0.05)
" &
for _ in $(seq 200); do [ -e "$tmpdir/connected" ] && break; sleep 0.05; done
[ -e "$tmpdir/connected" ] || { fail "the client did not connect"; exit 1; }
limit=$(( $(ls "/proc/$pid/fd" | awk '$1 < 200' | sort -n | tail -1) + 1 ))
rm "$tmpdir/connected"
wait $!
kill "$pid"; wait "$pid" 2>/dev/null || :
echo "nbdkit with a client holds descriptors below $limit: the limit"

serve --nofile="$limit:$limit"
# Full rows written and chunks read, 16 requests in flight (each must
# succeed: workload.in_flight), read back byte for byte.
nbdsh -u "$uri" -c "
import os, sys
sys.path.insert(0, '$top_srcdir/tests/lib')
import workload as wl
size = h.get_size()
row, chunk = 4 * 128 * 1024, 128 * 1024
shadow = bytearray(os.urandom(size))
wl.in_flight(h, (lambda off=off: h.aio_pwrite(nbd.Buffer.from_bytearray(
    shadow[off:off + row]), off) for off in range(0, size, row)), 16)
bufs = {}
wl.in_flight(h, (lambda off=off: h.aio_pread(bufs.setdefault(
    off, nbd.Buffer(chunk)), off) for off in range(0, size, chunk)), 16)
for off, b in bufs.items():
    assert b.to_bytearray() == shadow[off:off + chunk], off
assert h.pread(size, 0) == shadow
print('wrote and read back %d bytes, 16 requests in flight' % size)
" ||
    { cat "$tmpdir/log"; fail "I/O failed without rings"; }
states=$(python3 "$top_srcdir/tools/nbdkit-raid-ctl" "$ctl" status |
         python3 -c 'import json, sys
print(" ".join(m["state"] for m in json.load(sys.stdin)["members"]))')
[ "$states" = "in_sync in_sync in_sync in_sync in_sync in_sync" ] ||
    { cat "$tmpdir/log"; fail "members: $states"; }
grep -q "io_uring_queue_init.*system calls instead" "$tmpdir/log" ||
    { cat "$tmpdir/log"; fail "the fallback was not taken (no log line)"; }
echo "ok: no ring (EMFILE): every request served by system calls, members: $states"
