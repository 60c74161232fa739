#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A burst of stop signals while nbdkit stops does no harm: nbdkit exits
with status 0 and every member holds exactly the array's data.

The plugin chains a handler in front of nbdkit's for the stop signals,
which writes a byte to a pipe its settling thread polls.  Unload puts
nbdkit's handlers back and used to close that pipe next, while a call
of the handler that had begun just before could still be running on
another thread (ThreadSanitizer saw it in a fresh clone's check-tsan:
"data race ... in settle_stop"), and would then write its byte to
whatever file took the descriptor number.  The pipe now stays open.

A raw RAID-5 of 4 local members (raw: a member's byte 0 is data), filled
(the shadow), stopped 10 times with SIGTERM followed, until nbdkit has
gone, by SIGTERM, SIGHUP and SIGINT every 0.2 ms or so, at most 30,000
(each handler, nbdkit's and ours, writes a byte to a pipe that nothing
reads once nbdkit stops: 64 KiB would fill it); each time
the member files are checked (raidcheck.py: parity of every row, and the
image equal to the shadow).  Not under check-tsan (tests/plugin-tests.mk
says why).
"""

import signal
import time

import faults
import workload as wl

K, M = 1024, 1024 * 1024
ROUNDS = 10
BURST = 30000

with faults.Test(timeout=300) as t:
    ms = [t.member(4 * M, "local") for _ in range(4)]
    arr = t.array(ms, level=5, chunk=64 * K)
    shadow = wl.fill(arr.h, t.rng)
    arr.h.flush()
    sent = 0
    for r in range(ROUNDS):
        arr.h.shutdown()
        arr.h = None
        proc = arr.proc
        proc.send_signal(signal.SIGTERM)
        for k in range(BURST):
            if proc.poll() is not None:
                break
            proc.send_signal((signal.SIGTERM, signal.SIGHUP,
                              signal.SIGINT)[k % 3])
            sent += 1
            time.sleep(0.0002)
        status = arr.stop()
        assert status == 0, "round %d: nbdkit exited with status %s" % (
            r, status)
        faults.check_members(arr, [m.path for m in ms], shadow,
                             "round %d" % r, exact=True)
        if r + 1 < ROUNDS:
            arr.start()
            wl.compare_all(arr, shadow, "round %d, started again" % r)
    faults.log("%d stops, %d stop signals sent while nbdkit stopped: exit "
               "status 0, the members hold the array's data" % (ROUNDS, sent))
