#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A stale write-intent bitmap after an unclean stop means a full resync:
a bitmap whose events are one older than the superblocks' (RAID-6), or
with the STALE state bit (RAID-5).  A P chunk in a region the bitmap
says is clean is corrupted first; the restart's resync must go over
every row (status: total = every row x chunk), so that raidcheck.py
finds that corruption repaired too, the data is the shadow, and the
clean shutdown leaves the array clean.  (tests/lib/md_bitmap.py)
"""

import faults
import md_bitmap as mb
from md_bitmap import check, failures, ok
import workload as wl

STALE = {"r6": ("events one older than the superblocks'", "events",
                lambda d: d.sb["events"] - 1),
         "r5": ("state STALE", "state", lambda d: d.bm["state"] | 2)}


def stale_full_resync(t, case):
    how, field, value = STALE[case.name]
    case.create()
    n0, geo = len(failures), case.geo
    what = "%s: (e) bitmap %s" % (case.what, how)
    mb.unclean_stop(t, case.server(), case.shadow,
                    [("write", 5 * geo.row + 11, 700)])
    clean_bad = mb.corrupt_p(geo, case.paths, 60)
    assert 60 not in geo.rows_in(geo.bits_of({5}))
    got = mb.bad_parity(geo, case.paths)
    assert got == {clean_bad}, "%s: raidcheck before the restart: %s, " \
        "expected %s" % (what, got, clean_bad)
    for p in case.paths:
        faults.mdsb.change_bitmap(p, **{field: value(mb.Disk(p))})
    srv = case.server()
    mb.check_resync(what, srv, geo, geo.rows)
    wl.compare_all(srv, case.shadow, what + ": after the full resync")
    srv.stop(grace=30)
    mb.check_clean(what, case.paths)
    got = mb.bad_parity(geo, case.paths)
    check(got == set(), "%s: raidcheck after the full resync: %s"
          % (what, sorted(got)))
    ok(n0, "%s: full resync of all %d rows" % (what, geo.rows))


with faults.Test(timeout=120) as t:
    mb.run_cases(t, lambda case: stale_full_resync(t, case))
