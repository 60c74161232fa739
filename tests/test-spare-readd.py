#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Hot spares and readd=auto: a member whose server dies while the array
has a spare loses its role to the spare at once, and when its server
answers again it is not put back in the role (md's rule: the spare
holds it; mdadm --re-add refuses the old disk), neither by readd=auto
nor by re-add N, which says why and names add-spare; add-spare of its
URI then makes it a spare, as mdadm --add does.

RAID-6 md array (create=true) with one spare, readd=auto.
"""

import time

import faults
import spares

with faults.Test(filters=["error"], timeout=150) as t:
    c = spares.Case(t, level=6, n=5, nspares=1, params=["readd=auto"])
    m = c.members[spares.REMOTE]
    m.kill()
    c.arr.h.pwrite(bytes(65536), 0)
    c.shadow[0:65536] = bytes(65536)
    spares.wait_until(lambda: c.ctl.status()["members"][1].get("from_spare"),
                      20, "the spare takes role 1 (not readd=auto)")
    m.start()
    time.sleep(3)                   # readd=auto's back-off, twice over
    mm = c.ctl.status()["members"][1]
    assert mm.get("from_spare") and mm["name"] == c.spares[0].disk, mm
    r = c.ctl.error("re-add 1")
    assert "hot spare" in r and "add-spare" in r, r
    c.ctl.ok("add-spare " + m.disk)
    st = c.ctl.status()
    assert [(s["name"], s["state"]) for s in st["spares"]] == \
        [(m.disk, "spare")], st["spares"]
    c.takeover(1, 60, "the spare is rebuilt in role 1")
    c.check_end("after the old disk came back as a spare")
