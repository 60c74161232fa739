#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""bitmap=none: no bitmap feature bit on any member, nothing written
where the bitmap would be, status bitmap null, and a full resync after
SIGKILL with the data intact.  The bitmap parameters are refused without
create=true, and bad values are refused with it (external, chunks that
are not a power of two or below 4K, a bitmap that does not fit before
the data), each naming the bitmap and writing nothing.
(tests/lib/md_bitmap.py)
"""

import faults
import md_bitmap as mb
from md_bitmap import check, failures, ok
import workload as wl

M = 1024 * 1024

with faults.Test(timeout=120) as t:
    n0, what = len(failures), "(h) bitmap=none"
    paths = mb.make_members(t, "none", 4, 8 * M)
    srv = mb.server(t, paths, ["create=true", "chunk=64K", "bitmap=none"],
                    level=5)
    st = srv.ctl.finished_scrub()
    check("bitmap" in st and st["bitmap"] is None,
          "%s: status has %s" % (what, st.get("bitmap", "no 'bitmap' key")))
    d = mb.Disk(paths[0])
    check(all(not mb.Disk(p).sb["feature_map"] & 1 for p in paths),
          "%s: a member has the bitmap feature bit" % what)
    with open(paths[0], "rb") as f:
        f.seek(8192)
        check(f.read(4096) == bytes(4096), "%s: bytes written at 8K" % what)
    geo = mb.Geometry(5, 4, d)
    shadow = bytearray(geo.size)
    mb.unclean_stop(t, srv, shadow, [("write", 2 * geo.row, 100)])
    srv = mb.server(t, paths)
    mb.check_resync(what + ", after SIGKILL", srv, geo, geo.rows)
    wl.compare_all(srv, shadow, what)
    srv.stop(grace=30)
    ok(n0, "%s: no feature bit, status null, full resync" % what)

    for params in (["bitmap=internal"], ["bitmap=none"],
                   ["bitmap-chunk=64K"], ["bitmap-delay=1"]):
        mb.refused(t, "(h) %s without create=true" % params[0], params, paths)
    blank = mb.make_members(t, "blank", 4, 8 * M)
    for params in (["bitmap=external"], ["bitmap-chunk=3K"],
                   ["bitmap-chunk=2K"],
                   ["bitmap-chunk=64K", "data-offset=8K"]):
        mb.refused(t, "(h) create=true %s" % " ".join(params),
                   ["create=true", "level=5", "chunk=64K"] + params, blank)
    mb.finish()
