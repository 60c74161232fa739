# SPDX-License-Identifier: BSD-3-Clause
"""What the test-bitmap-*.py tests share: md's write-intent bitmap
(internal, md-bitmap.c's format), end to end.

Two arrays, each test runs both: RAID-6 (5 members, chunk 64K, one bit
per row) and RAID-5 (4 members, chunk 32K, 128K per bit, so one bit
covers 4 rows and the last bit only 2).  bitmap-delay=1 keeps the lazy
clearing quick.  Case.create() makes one: created, filled with random
data (the shadow), its first resync finished, every bit clear when idle.

Independence: the superblock and bitmap are parsed by tests/lib/mdsb.py, its
own reader of the on-disk format; the row arithmetic and parity checks
come from raidcheck.py (its layout code, and run as a program); data is
compared against a shadow image.  Nothing is taken from the plugin.

Checks are soft: check() records a failure, prints it and goes on, so
that one run shows every part that fails; finish() fails the test at the
end if any did.
"""

import os
import re
import shutil
import subprocess
import sys
import time
import traceback

import faults
import mdsb
import raidcheck
import workload as wl

K, M = 1024, 1024 * 1024
SECTOR = 512
CLEAN = (1 << 64) - 1               # resync_offset of a clean array
DELAY = 1                           # bitmap-delay, seconds
RAIDCHECK = os.path.join(faults.LIB_DIR, "raidcheck.py")
failures = []
T0 = time.monotonic()


def check(cond, what):
    """A soft assertion: record, print, go on with the rest."""
    if not cond:
        failures.append(what)
        print("FAIL: " + what, flush=True)
    return cond


def ok(since, what):
    """Say a part passed, if no check failed since failures had `since`."""
    if len(failures) == since:
        print("ok: %s (%.1fs)" % (what, time.monotonic() - T0), flush=True)


def finish():
    if failures:
        raise AssertionError("%d failure(s)" % len(failures))


def run_cases(t, fn):
    """fn(case) for each of the two arrays (cases()); an exception in one
    is a failure, its servers are killed and the other still runs; then
    finish()."""
    for case in cases(t):
        try:
            fn(case)
        except Exception as e:
            traceback.print_exc(file=sys.stdout)
            check(False, "%s: stopped: %s: %s" % (case.what,
                                                  type(e).__name__, e))
            for a in t.arrays:
                if a.proc:
                    a.proc.kill()
    finish()


def wait_until(pred, timeout, poll=0.05):
    """pred() until it is true or timeout seconds passed; its last value."""
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > end:
            return v
        time.sleep(poll)


class Disk:
    """One member file's md superblock and bitmap, as they are now."""

    def __init__(self, path):
        self.path = path
        self.sb = mdsb.read(path)
        self.bm = mdsb.read_bitmap(path, self.sb)
        self.bits = self.bm["bits"] if self.bm else set()
        self.area = self.bm["area"] if self.bm else b""
        self.nbits = self.bm["nbits"] if self.bm else 0
        self.end = self.bm["end"] if self.bm else None

    def name(self):
        return os.path.basename(self.path)


def disks(paths):
    return [Disk(p) for p in paths]


def make_members(t, name, n, size):
    paths = [os.path.join(t.dir, "%s%d" % (name, i)) for i in range(n)]
    for p in paths:
        with open(p, "wb") as f:
            f.truncate(size)
    return paths


def copy_members(t, paths, name):
    out = [os.path.join(t.dir, "%s%d" % (name, i)) for i in range(len(paths))]
    for src, dst in zip(paths, out):
        shutil.copyfile(src, dst)
    return out


class Geometry:
    """The array as its superblock (mdsb) describes it, md's left-symmetric
    layout through raidcheck.py, and the bitmap's chunks."""

    def __init__(self, level, n, disk):
        assert disk.sb["layout"] == 2, "not left-symmetric: %s" % disk.sb
        self.level, self.n = level, n
        self.chunk = disk.sb["chunksize"] * SECTOR
        self.data_offset = disk.sb["data_offset"] * SECTOR
        self.rows = disk.sb["size"] * SECTOR // self.chunk
        self.bchunk = disk.bm["chunksize"] if disk.bm else None
        self.dd = n - (2 if level == 6 else 1)
        self.row = self.dd * self.chunk
        self.size = self.rows * self.row

    def layout_of(self, s):
        return raidcheck.row_layout(self.level, "ls", self.n, s)

    def rows_of(self, off, n):
        """Stripe rows an array request touches: their parity changes."""
        return set(range(off // self.row, (off + n - 1) // self.row + 1))

    def bits_of(self, rows):
        """Bits covering those rows' member ranges [s*chunk, (s+1)*chunk)."""
        return {b for s in rows
                for b in range(s * self.chunk // self.bchunk,
                               ((s + 1) * self.chunk - 1) // self.bchunk + 1)}

    def rows_in(self, bits):
        return {s for s in range(self.rows) if self.bits_of([s]) & bits}


def ops_rows(geo, ops):
    rows = set()
    for _, off, n in ops:
        rows |= geo.rows_of(off, n)
    return rows


# --- nbdkit ---------------------------------------------------------------

def server(t, paths, params=(), level=None, chunk=None):
    """nbdkit -v serving the array over the member files, with a control
    socket; the geometry not given comes from the superblocks."""
    return t.array([faults.FileMember(p) for p in paths], level=level,
                   chunk=chunk, layout=None, data_offset=None, control=True,
                   nbdkit_args=["-v"], params=list(params))


def unclean_stop(t, srv, shadow, ops):
    """The ops, acknowledged, then SIGKILL at once (before lazy clearing)."""
    wl.apply_ops(srv.h, t.rng, shadow, ops)
    st = srv.ctl.status()
    srv.kill()
    return st


def refused(t, what, params, paths, name_member=False):
    """nbdkit must stop before serving, say why (the bitmap, and with
    name_member which member), and write nothing."""
    n0, before = len(failures), faults.md5s(paths)
    r = subprocess.run(["timeout", "60", "nbdkit", "-U", "-", t.plugin] +
                       params + paths + ["--run", "echo SERVED"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    line = next((l for l in r.stderr.splitlines() if "bitmap" in l), "")
    check(r.returncode != 0 and "SERVED" not in r.stdout,
          "%s: nbdkit accepted it (exit %d)" % (what, r.returncode))
    check(r.returncode < 124, "%s: exit %d (timeout or signal)"
          % (what, r.returncode))
    check(line, "%s: no message about the bitmap: %s" % (what, r.stderr))
    check(not name_member or any(p in line for p in paths),
          "%s: the message names no member: %s" % (what, line))
    check(faults.md5s(paths) == before, "%s: a member file changed" % what)
    ok(n0, "%s refused: %s" % (what, line.strip()))


# --- Checks on the member files ------------------------------------------

def check_bitmap_fields(what, paths, bchunk):
    """A valid bitmap on every member, the same on all."""
    ds = disks(paths)
    for d in ds:
        sb, bm = d.sb, d.bm
        if not check(bm, "%s: %s: no bitmap (feature_map %#x)"
                     % (what, d.name(), sb["feature_map"])):
            continue
        for name, got, want in (
                ("bitmap_offset", sb["bitmap_offset"], 8),
                ("magic", bm["magic"], mdsb.BITMAP_MAGIC),
                ("version", bm["version"], 4),
                ("uuid (the md set_uuid)", bm["uuid"], sb["set_uuid"]),
                ("chunksize", bm["chunksize"], bchunk),
                ("daemon_sleep", bm["daemon_sleep"], DELAY),
                ("sync_size (the md size)", bm["sync_size"], sb["size"]),
                ("state", bm["state"], 0),
                ("write_behind", bm["write_behind"], 0),
                ("nodes", bm["nodes"], 0),
                ("events - md events", bm["events"] - sb["events"],
                 0 if bm["events"] == sb["events"] else 1),
                ("cluster_name and padding", d.area[72:mdsb.BITMAP_HEADER],
                 bytes(mdsb.BITMAP_HEADER - 72)),
                ("area end <= data_offset",
                 d.end <= sb["data_offset"] * SECTOR, True)):
            check(got == want, "%s: %s: bitmap %s is %r, expected %r"
                  % (what, d.name(), name, got, want))
    check_identical(what, ds)


def check_identical(what, ds):
    for d in ds[1:]:
        check(d.area == ds[0].area, "%s: the bitmap area of %s differs from "
              "%s's" % (what, d.name(), ds[0].name()))


def check_bits(what, paths, want):
    ds = disks(paths)
    for d in ds:
        check(d.bits == want, "%s: %s: bits set %s, expected %s (extra %s, "
              "missing %s)" % (what, d.name(), sorted(d.bits), sorted(want),
                               sorted(d.bits - want), sorted(want - d.bits)))
    check_identical(what, ds)
    return ds


def check_clean(what, paths):
    """After a clean shutdown: every bit clear, events_cleared = md's
    count, the superblocks' events (as md's bitmap_end_write records it),
    and the bitmap's events equal to it or one ahead (md counts back down
    when an array that was only marked active goes clean again, and
    accepts a bitmap one ahead)."""
    for d in check_bits(what + ", clean shutdown", paths, set()):
        bm, sb = d.bm or {"events": None, "events_cleared": None}, d.sb
        check(bm["events"] is not None and
              bm["events"] - sb["events"] in (0, 1) and
              bm["events_cleared"] == sb["events"] and
              sb["resync_offset"] == CLEAN,
              "%s, clean shutdown: %s: bitmap events %d, events_cleared %d, "
              "md events %d, resync_offset %d" % (
                  what, d.name(), bm["events"], bm["events_cleared"],
                  sb["events"], sb["resync_offset"]))


def wait_bits_clear(what, srv, paths):
    """Every bit clears within a few periods when the array is idle."""
    def all_clear():
        st = srv.ctl.status()
        return (st.get("bitmap") or {}).get("dirty") == 0 and \
            all(not d.bits for d in disks(paths))
    check(wait_until(all_clear, 5 * DELAY + 2),
          "%s: bits still set after %d s idle: status bitmap %s, on disk %s"
          % (what, 5 * DELAY + 2, srv.ctl.status().get("bitmap"),
             [sorted(d.bits) for d in disks(paths)]))


def bad_parity(geo, paths):
    """raidcheck.py, run as a program: {(row, 'P'|'Q', member)} it finds."""
    r = subprocess.run([sys.executable, RAIDCHECK, "--level", str(geo.level),
                        "--chunk", str(geo.chunk), "--data-offset",
                        str(geo.data_offset), "--all"] + paths,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    if r.returncode not in (0, 1):
        raise AssertionError("raidcheck.py failed: " + r.stdout)
    return {(int(m.group(1)), m.group(2), int(m.group(3))) for m in
            re.finditer(r"row (\d+) .*?: (P|Q) on member (\d+)", r.stdout)}


def corrupt_p(geo, paths, s):
    """Flip 16 bytes of row s's P chunk; returns raidcheck's name for it."""
    p = geo.layout_of(s)[0]
    faults.corrupt(paths[p], geo.data_offset + s * geo.chunk + 5000, 16,
                   xor=0xa5)
    return (s, "P", p)


def check_resync(what, srv, geo, rows):
    """The start-up resync went over exactly `rows` rows and finished."""
    sc = srv.ctl.finished_scrub()["scrub"]
    return check(sc.get("resync") is True and sc["total"] == rows * geo.chunk
                 and sc["done"] == sc["total"],
                 "%s: expected a finished resync of %d rows (%d bytes): "
                 "scrub status %s" % (what, rows, rows * geo.chunk, sc))


# --- The two arrays ---------------------------------------------------------

class Case:
    """An array under test: its members, geometry and shadow."""

    def __init__(self, t, name, level, n, chunk, bchunk, msize):
        self.t = t
        self.name, self.what = name, "RAID-%d" % level
        self.level, self.n, self.chunk, self.bchunk = level, n, chunk, bchunk
        self.paths = make_members(t, name, n, msize)

    def server(self, params=()):
        return server(self.t, self.paths, params)

    def create(self, fill=True):
        """A new array, filled, resynced, idle: (a) every member has a
        valid bitmap, the same on all; (b) after the initial resync and a
        few idle periods every bit is clear, on disk and in the status
        JSON.  Without fill: created, resynced, stopped clean."""
        n0, what = len(failures), self.what
        srv = server(self.t, self.paths,
                     ["create=true", "bitmap-chunk=%d" % self.bchunk,
                      "bitmap-delay=%d" % DELAY],
                     level=self.level, chunk=self.chunk)
        self.geo = geo = Geometry(self.level, self.n, Disk(self.paths[0]))
        assert srv.h.get_size() == geo.size, \
            "%s: array size %d, superblock says %d" % (what, srv.h.get_size(),
                                                       geo.size)
        if not fill:
            srv.ctl.finished_scrub()
            srv.stop(grace=30)
            return
        self.shadow = wl.fill(srv.h, self.t.rng)
        srv.ctl.finished_scrub()
        wait_bits_clear(what + ": (b) after create and fill", srv, self.paths)
        got = srv.ctl.status().get("bitmap") or {}
        want = {"chunk": self.bchunk, "bits": Disk(self.paths[0]).nbits,
                "dirty": 0}
        check({k: got.get(k) for k in want} == want,
              "%s: (b) status bitmap %s, expected %s" % (what, got, want))
        check_bitmap_fields(what + ": (a)", self.paths, self.bchunk)
        srv.stop(grace=30)
        ok(n0, "%s: (a), (b) %d rows, %d bits of %d bytes, all clear when "
           "idle" % (what, geo.rows, want["bits"], self.bchunk))


def cases(t):
    """RAID-6: one bit per row.  RAID-5: 4 rows per bit, the last bit 2
    rows."""
    return [Case(t, "r6", 6, 5, 64 * K, 64 * K, 8 * M + 64 * K),
            Case(t, "r5", 5, 4, 32 * K, 128 * K, 8 * M + 64 * K)]
