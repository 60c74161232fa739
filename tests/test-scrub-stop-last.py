#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""`scrub stop` that arrives while the scrub checks its last row: the row
is checked all the same (a stop ends a scrub between rows), so the scrub
went over every row and says finished.  The old scrub answered
"finished": false with done equal to total (CI, test-scrub-repair.py,
seed 201161188): it asked whether a stop had come, not whether rows were
left.

Four rows, the members' reads delayed 300 ms (nbdkit's delay filter), so
that the stop is sent while the last row's reads are on the wire.  Two
threads scrub a row each (jobs.c, ROW_THREADS), so the last two rows are
read together: the stop goes 50 ms after the status says every row but
two (or one) is done.
"""

import time

import faults

K = 1024
chunk = 64 * K
rows = 4
inflight = 2        # rows checked at once: jobs.c's ROW_THREADS

with faults.Test(filters=["delay"], timeout=60) as t:
    members = [t.member(rows * chunk, "remote", delay_read="300ms")
               for _ in range(4)]
    arr = t.array(members, level=5, chunk=chunk, control=True,
                  params=["metadata=none"])
    assert arr.rows == rows, "%d rows, not %d" % (arr.rows, rows)
    ctl = arr.ctl
    ctl.ok("scrub check")
    deadline = time.monotonic() + 30
    while True:
        st = ctl.status()["scrub"]
        row = st["total"] // rows
        if st["done"] >= st["total"] - inflight * row or not st["running"]:
            break
        assert time.monotonic() < deadline, "the scrub does not advance: %s" % st
        time.sleep(0.005)
    assert st["running"] and st["done"] < st["total"], \
        "missed the last row (the machine too slow?): %s" % st
    # The threads claim their next rows as they finish the last ones:
    # give them a moment (each row takes 300 ms).
    time.sleep(0.05)
    ctl.ok("scrub stop")
    st = ctl.wait_idle(30)["scrub"]
    assert st["done"] == st["total"], \
        "the stop did not come during the last row: %s" % st
    assert st["finished"], \
        "every row was checked, but the scrub says it did not finish: %s" % st
    faults.log("  stopped during the last row: done %d of %d, finished" % (
        st["done"], st["total"]))
