#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Remote members carry many requests on few connections.

The plugin must not open one connection per nbdkit worker thread to each
remote member, with one request in flight on each: it shares a member's
connection among threads (at most two per member: the shared one, plus
the sentinel opened with the member) and keeps many requests in flight
on it.  This is the regression test for that.

Six member servers (nbdkit's memory plugin behind the log filter, which
writes a line when a request arrives and one when it is answered, naming
its connection; and the delay filter, 2 ms a request, so that requests
sent together are seen together) serve a RAID-6 array.  One client keeps
up to 32 aio 4K writes and reads in flight at distinct random offsets,
then reads the whole array back a chunk at a time: it must equal the
shadow.  Then the array and the members are stopped (so that the logs
are complete) and each member's log is read: the connections that
carried reads or writes must be at most 2 per member, and on some
connection more than one request must have been in flight at once.  Each
client request here puts at most one request at a time on a member, so
only requests of different threads sharing a connection can overlap on
it; the old code (a connection per thread) opens 17 connections to each
member here, each with one request in flight.

RAID_TEST_SEED=N replays a run.
"""

import os
import re

import faults
import workload as wl
from faults import nbd

K, M = 1024, 1024 * 1024
NMEMBERS, MSIZE, CHUNK = 6, 32 * M, 64 * K
NWRITES, NREADS, DEPTH = 64, 32, 32
MAX_CONNS = 2

# The log filter's lines (as bench/e2e-remote.sh reads them).
OPS = "Read|Write|Zero|Trim|Flush|Cache|Extents"
start = re.compile(r"^\S+ \S+ connection=(\d+) (%s) id=" % OPS)
end = re.compile(r"^\S+ \S+ connection=(\d+) \.\.\.(%s) id=" % OPS)


def profile(path):
    """(connections that carried a Read or Write, the most requests in
    flight at once on one connection, requests) from a member's log."""
    conns, cur, most, nreq = set(), {}, 0, 0
    with open(path) as f:
        for line in f:
            mo = end.match(line)
            if mo:
                cur[mo.group(1)] -= 1
                continue
            mo = start.match(line)
            if mo:
                c = mo.group(1)
                if mo.group(2) in ("Read", "Write"):
                    conns.add(c)
                nreq += 1
                cur[c] = cur.get(c, 0) + 1
                most = max(most, cur[c])
    return conns, most, nreq


with faults.Test(filters=["log", "delay"], timeout=60) as hz:
    rng = hz.rng
    reqlogs = [os.path.join(hz.dir, "m%d.requests" % i)
               for i in range(NMEMBERS)]
    members = [hz.member(MSIZE, "memory", filters=["log"],
                         delay_read="2ms", delay_write="2ms",
                         extra=["logfile=" + reqlogs[i]])
               for i in range(NMEMBERS)]
    arr = hz.array(members, level=6, chunk=CHUNK)
    h = arr.h
    shadow = bytearray(arr.size)

    # Distinct 4K blocks: no two requests in flight overlap.
    blocks = rng.sample(range(arr.size // (4 * K)), NWRITES + NREADS)
    ops = [("w", b * 4 * K) for b in blocks[:NWRITES]] + \
          [("r", b * 4 * K) for b in blocks[NWRITES:]]
    rng.shuffle(ops)
    reads, requests = [], []
    for kind, off in ops:
        if kind == "w":
            data = rng.randbytes(4 * K)
            shadow[off:off + 4 * K] = data
            buf = nbd.Buffer.from_bytearray(bytearray(data))
            requests.append(lambda buf=buf, off=off: h.aio_pwrite(buf, off))
        else:
            buf = nbd.Buffer(4 * K)
            reads.append((buf, off))
            requests.append(lambda buf=buf, off=off: h.aio_pread(buf, off))
    wl.in_flight(h, requests, depth=DEPTH)
    for buf, off in reads:
        got = buf.to_bytearray()
        assert got == shadow[off:off + 4 * K], \
            "aio read at %d (%s) differs from the shadow" % (
                off, arr.describe(off))

    # The whole array back, a chunk a request (one member each, so that
    # no one request puts two on a member's connection), 8 in flight.
    step = CHUNK
    bufs = [(nbd.Buffer(step), off) for off in range(0, arr.size, step)]
    wl.in_flight(h, [lambda b=b, o=o: h.aio_pread(b, o) for b, o in bufs],
                 depth=8)
    for buf, off in bufs:
        got = buf.to_bytearray()
        if got != shadow[off:off + step]:
            bad = off + next(i for i in range(step)
                             if got[i] != shadow[off + i])
            raise AssertionError("array differs from the shadow at byte %d "
                                 "(%s)" % (bad, arr.describe(bad)))
    faults.log("%d writes, %d reads (%d in flight at most), then the whole "
               "%d MiB array: as written" % (NWRITES, NREADS, DEPTH,
                                             arr.size // M))

    # The array first, then the members (SIGTERM: their logs are complete).
    arr.stop()
    for m in members:
        m.proc.terminate()
        m.proc.wait(timeout=10)

    most_all, many = 0, []
    for i, path in enumerate(reqlogs):
        conns, most, nreq = profile(path)
        most_all = max(most_all, most)
        faults.log("member %d: %d requests, %d connections carried reads/"
                   "writes, at most %d in flight on one connection"
                   % (i, nreq, len(conns), most))
        if len(conns) > MAX_CONNS:
            many.append("member %d: %d" % (i, len(conns)))
    faults.log("most requests in flight on one member connection: %d"
               % most_all)
    wrong = []
    if many:
        wrong.append("more than %d connections carried reads/writes to a "
                     "member (one per nbdkit thread?): %s"
                     % (MAX_CONNS, ", ".join(many)))
    if most_all <= 1:
        wrong.append("never more than one request in flight on a member "
                     "connection")
    assert not wrong, "; ".join(wrong)
