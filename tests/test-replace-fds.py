#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Replaced members are closed once no request can use them: every
replace used to keep the old member open until nbdkit exited (400 fds
after 390 cycles).

RAID-5 of 4 file members, raw and md with a write-intent bitmap (whose
record of which member holds its area must not be fooled by a new member
at a closed one's address).  A client thread writes and reads its own half
of the array all the time (against its own shadow); meanwhile 200 cycles
fail a member and replace it, alternating between two files per slot;
every third cycle does not wait for the rebuild and the next one fails
the member being rebuilt, so that replacements overtake rebuilds and the
rebuild thread must notice that its member was swapped.  The nbdkit
process's open fds (/proc/PID/fd) must stay within the limbo's bound (32)
of where they started, and be back within two of it once the
replacements stop; at the end the data is right (the client's
reads, a full compare, and raidcheck.py on the member files).
"""

import os
import random
import threading
import time

import faults
import workload as wl

K, M = 1024, 1024 * 1024
chunk, msize, n = 16 * K, 1 * M, 4
cycles = int(os.environ.get("CYCLES", "200"))


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def cycle_replacements(hz, md):
    members = [hz.member(msize, "local") for _ in range(n)]
    arr = hz.array(members, level=5, chunk=chunk,
                   data_offset=256 * K if md else 0, control=True,
                   params=(["create=true", "bitmap-chunk=64K"] if md else
                           ["metadata=none"]))
    ctl = arr.ctl
    ctl.wait_idle(30)           # md: the first resync
    shadow = wl.fill(arr.h, random.Random(14))
    files = [[m.path, os.path.join(hz.dir, "alt%d.%d" % (i, md))]
             for i, m in enumerate(members)]
    for i in range(n):
        with open(files[i][1], "wb") as f:
            f.truncate(msize)

    # The client: its own connection, the first half of the array.
    half = len(shadow) // 2
    stop = threading.Event()
    errors, ops = [], [0]

    def client():
        h = arr.connect()
        rng = random.Random(99)
        try:
            while not stop.is_set():
                off = rng.randrange(0, half - 8192)
                ln = rng.randint(1, 8192)
                if rng.random() < 0.5:
                    data = rng.randbytes(ln)
                    h.pwrite(data, off)
                    shadow[off:off + ln] = data
                else:
                    got = h.pread(ln, off)
                    if got != shadow[off:off + ln]:
                        errors.append("read at %d, %d bytes: wrong" % (off, ln))
                        return
                ops[0] += 1
        except Exception as e:  # noqa: BLE001
            errors.append("client: %r" % e)
        finally:
            h.shutdown()

    t = threading.Thread(target=client)
    t.start()
    time.sleep(0.2)
    pid = arr.proc.pid
    start_fds = fds(pid)
    rng = random.Random(7)
    current = [0] * n
    peak = start_fds
    try:
        i = 0
        for c in range(cycles):
            if c % 3 != 1:      # after a cycle that waited: any member
                i = rng.randrange(n)
            ctl.ok("fail %d" % i)
            current[i] ^= 1
            reply = ctl.cmd("replace %d %s" % (i, files[i][current[i]]))
            assert reply == "ok", "cycle %d: replace %d: %r" % (c, i, reply)
            if c % 3 != 0:
                ctl.wait_idle(60, poll=0.005)
            peak = max(peak, fds(pid))
            assert not errors, errors
    finally:
        stop.set()
        t.join()
    assert not errors, errors
    st = ctl.wait_idle(60)
    time.sleep(1.5)                 # the acceptor's reclaim tick
    end_fds = fds(pid)
    faults.log("  %s: %d cycles, %d client ops: fds %d at the start, %d at most, %d "
           "at the end" % ("md, bitmap" if md else "raw", cycles, ops[0],
                           start_fds, peak, end_fds))
    # At most ARRAY_MAX_LIMBO (32) replaced members wait to be closed.
    assert peak <= start_fds + 36 and end_fds <= start_fds + 2, \
        "the nbdkit process's fds grew from %d to %d (at most %d) over %d " \
        "replacements" % (start_fds, end_fds, peak, cycles)
    assert [m["state"] for m in st["members"]] == ["in_sync"] * n, st
    wl.compare_all(arr, shadow, "after %d replacements" % cycles)
    arr.stop()
    faults.check_members(arr, [files[i][current[i]] for i in range(n)],
                         shadow, "after %d replacements" % cycles,
                         program=False)


with faults.Test() as hz:
    cycle_replacements(hz, False)
    cycle_replacements(hz, True)
