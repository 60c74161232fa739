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
gone, by as many SIGTERM, SIGHUP and SIGINT as can be sent; each time
the member files are checked (raidcheck.py: parity of every row, and the
image equal to the shadow).  Under make check-tsan it runs the unload
beside those handlers.
"""

import signal

import faults
import workload as wl

K, M = 1024, 1024 * 1024
ROUNDS = 10

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
        while proc.poll() is None:
            proc.send_signal((signal.SIGTERM, signal.SIGHUP,
                              signal.SIGINT)[sent % 3])
            sent += 1
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
