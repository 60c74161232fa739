#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""After a crash the write-intent bitmap marks exactly the rows written,
and the next start resyncs those rows only.

Writes (inside one chunk, across two rows, over two rows, the last row),
a zero and a trim to chosen places, then SIGKILL: on every member exactly
the bits of the stripe rows written are set (a row's parity changes with
any of its chunks), the rest are clear, the status said so before the
kill; the superblocks say active.  P is then corrupted in rows of dirty
regions and in a row of a clean region.  The restart resyncs the dirty
rows only (status: resync, total = dirty rows x chunk; the debug log's
"resyncing N of M rows (D dirty regions)"): raidcheck.py finds the dirty
rows repaired and the clean row's corruption still there; the data is
the shadow, byte for byte; the bits clear and the clean shutdown leaves
the array clean.  RAID-6 and RAID-5 (tests/lib/md_bitmap.py).
"""

import re

import faults
import md_bitmap as mb
from md_bitmap import check, failures, ok
import workload as wl


def kill_after_writes(t, case):
    """(c): returns the rows written and the bits (regions) they dirty."""
    n0, what, geo = len(failures), case.what, case.geo
    rb, c = geo.row, geo.chunk
    ops = [("write", 3 * rb + c + 100, 1000),       # inside one chunk
           ("write", 10 * rb - 700, 1400),          # across rows 9 and 10
           ("write", 20 * rb + 5, rb + 10),         # rows 20 and 21
           ("zero", 30 * rb + 4096, 8192),
           ("trim", 40 * rb, rb),
           ("write", geo.size - 300, 300)]          # the last row
    written = mb.ops_rows(geo, ops)
    bits = geo.bits_of(written)
    st = mb.unclean_stop(t, case.server(), case.shadow, ops)
    check((st.get("bitmap") or {}).get("dirty") == len(bits),
          "%s: (c) status bitmap %s before SIGKILL, expected %d dirty"
          % (what, st.get("bitmap"), len(bits)))
    for d in mb.check_bits(what + ": (c) after SIGKILL", case.paths, bits):
        bm_events = d.bm["events"] if d.bm else None
        check(d.sb["resync_offset"] == 0 and bm_events is not None and
              bm_events - d.sb["events"] in (0, 1),
              "%s: (c) %s: resync_offset %d (want 0), bitmap events %s, md "
              "events %d" % (what, d.name(), d.sb["resync_offset"],
                             bm_events, d.sb["events"]))
    ok(n0, "%s: (c) rows %s written, then SIGKILL: bits %s set"
       % (what, sorted(written), sorted(bits)))
    return written, bits


def resync_dirty(t, case, written, bits):
    """(d): corrupt P in dirty and clean regions; only the dirty rows are
    resynced, the clean region's corruption stays."""
    n0, what, geo, paths = len(failures), case.what, case.geo, case.paths
    dirty_rows = geo.rows_in(bits)
    clean_row = 60
    assert clean_row not in dirty_rows and clean_row < geo.rows
    targets = [min(written)] + sorted(dirty_rows - written)[:1]
    dirty_bad = {mb.corrupt_p(geo, paths, s) for s in targets}
    clean_bad = mb.corrupt_p(geo, paths, clean_row)
    got = mb.bad_parity(geo, paths)
    assert got == dirty_bad | {clean_bad}, \
        "%s: (d) raidcheck before the restart: %s, expected %s" % (
            what, got, dirty_bad | {clean_bad})
    srv = case.server()
    mb.check_resync(what + ": (d)", srv, geo, len(dirty_rows))
    m = re.search(r"raid: bitmap: resyncing (\d+) of (\d+) rows "
                  r"\((\d+) dirty regions\)", srv.log())
    check(m and tuple(map(int, m.groups())) == (len(dirty_rows), geo.rows,
                                                 len(bits)),
          "%s: (d) the log says %r, expected 'resyncing %d of %d rows "
          "(%d dirty regions)'; its lines about the bitmap: %s"
          % (what, m and m.group(0), len(dirty_rows), geo.rows, len(bits),
             [l for l in srv.log().splitlines() if "bitmap" in l]))
    wl.compare_all(srv, case.shadow, what + ": (d) after the bitmap resync")
    mb.wait_bits_clear(what + ": (d) after the resync", srv, paths)
    srv.stop(grace=30)
    mb.check_clean(what + ": (d)", paths)
    got = mb.bad_parity(geo, paths)
    check(got == {clean_bad}, "%s: (d) raidcheck after the resync: %s, "
          "expected only the clean region's %s (corrupted: %s)"
          % (what, sorted(got), clean_bad, sorted(dirty_bad)))
    ok(n0, "%s: (d) resync of the %d dirty rows repaired %s, left %s"
       % (what, len(dirty_rows), sorted(dirty_bad), clean_bad))


def part(t, case):
    case.create()
    resync_dirty(t, case, *kill_after_writes(t, case))


with faults.Test(timeout=120) as t:
    mb.run_cases(t, lambda case: part(t, case))
