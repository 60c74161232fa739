#!/usr/bin/env bash
# md's write-intent bitmap (internal, md-bitmap.c's format), end to end:
#
#   (a) create=true writes a valid bitmap on every member: feature bit,
#       bitmap_offset 8, magic, version 4, UUID = set UUID, chunksize,
#       daemon_sleep, sync_size = the superblock's size, events equal to
#       the superblock's (or one more), and byte-identical areas.
#   (b) after the initial resync and a few idle periods every bit is clear,
#       on disk and in the status JSON (bitmap.dirty 0): lazy clearing.
#   (c) writes, a zero and a trim to chosen places, then SIGKILL: on every
#       member exactly the bits of the stripe rows written are set (a
#       row's parity changes with any of its chunks), the rest are clear;
#       the superblocks say active.
#   (d) P is then corrupted in rows of dirty regions and in a row of a
#       clean region.  The restart resyncs the dirty rows only (status:
#       resync, total = dirty rows x chunk; the debug log's "resyncing N of
#       M rows"): raidcheck.py finds the dirty rows repaired and the clean
#       row's corruption still there.  Data = shadow, byte for byte.
#   (e) a stale bitmap (events older than the superblocks', or the STALE
#       state bit) means a full resync: total = every row, and the clean
#       region's corruption of (d) is repaired too.
#   (f) a corrupt bitmap superblock (bad magic, chunksize not a power of
#       two, ...) stops nbdkit with a message about the bitmap naming a
#       member, and no member file changes.
#   (g) a clean shutdown (SIGTERM, the end of --run) clears every bit:
#       events_cleared = the bitmap's events, which equal the superblocks'
#       or are one ahead (md counts back down when an array that was only
#       marked active goes clean again, and accepts a bitmap one ahead).
#   (h) bitmap=none: no feature bit, status bitmap null, full resync after
#       SIGKILL; the bitmap parameters are refused without create=true,
#       and bad values are refused with it.
#
# Two arrays: RAID-6 (5 members, chunk 64K, one bit per row) and RAID-5
# (4 members, chunk 32K, 128K per bit, so one bit covers 4 rows and the
# last bit only 2).  bitmap-delay=1 keeps the lazy clearing quick.
#
# Independence: the superblock and bitmap are parsed by this file's own
# reader of the on-disk format; the row arithmetic and parity checks come
# from raidcheck.py (its layout code, and run as a program); data is
# compared against a shadow image.  Nothing is taken from the plugin.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires_python_module nbd
requires_plugin_feature 'raid_control=yes$' 'control socket'
test_seed

cat > "$tmpdir/bitmap.py" <<'EOF'
import atexit
import hashlib
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
import traceback

import nbd
import raidcheck as rc
import raidfail_lib as rf

WORK = os.environ["WORK"]
PLUGIN = os.environ["RAID_PLUGIN"]
RAIDCHECK = os.path.join(os.environ["TESTS_DIR"], "raidcheck.py")
K, M = 1024, 1024 * 1024
SECTOR = 512
CLEAN = (1 << 64) - 1               # resync_offset of a clean array
BITMAP_MAGIC = 0x6d746962
DELAY = 1                           # bitmap-delay, seconds
rng = random.Random(int(os.environ["SEED"]))
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


def wait_until(pred, timeout, poll=0.05):
    """pred() until it is true or timeout seconds passed; its last value."""
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > end:
            return v
        time.sleep(poll)


# --- The on-disk format, read here (md_p.h, md-bitmap.h) ----------------

MD_SB_OFFSET = 4096                 # v1.2
MD_FIELDS = {
    "feature_map": (8, "<I"), "set_uuid": (16, "16s"), "level": (72, "<i"),
    "layout": (76, "<I"), "size": (80, "<Q"), "chunksize": (88, "<I"),
    "bitmap_offset": (96, "<i"), "data_offset": (128, "<Q"),
    "events": (200, "<Q"), "resync_offset": (208, "<Q"),
}
BM_HEADER = 256
BM_FIELDS = {
    "magic": (0, "<I"), "version": (4, "<I"), "uuid": (8, "16s"),
    "events": (24, "<Q"), "events_cleared": (32, "<Q"),
    "sync_size": (40, "<Q"), "state": (48, "<I"), "chunksize": (52, "<I"),
    "daemon_sleep": (56, "<I"), "write_behind": (60, "<I"),
    "nodes": (68, "<I"), "cluster_name": (72, "64s"),
}


def unpack(buf, fields):
    return {k: struct.unpack_from(f, buf, o)[0]
            for k, (o, f) in fields.items()}


class Disk:
    """One member file's md superblock and bitmap, as they are now."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            f.seek(MD_SB_OFFSET)
            self.sb = unpack(f.read(256), MD_FIELDS)
            self.bits, self.area, self.nbits = set(), b"", 0
            self.bm = self.start = self.end = None
            if not self.sb["feature_map"] & 1:
                return
            self.start = MD_SB_OFFSET + self.sb["bitmap_offset"] * SECTOR
            f.seek(self.start)
            self.bm = unpack(f.read(BM_HEADER), BM_FIELDS)
            chunk = self.bm["chunksize"] or 1
            self.nbits = -(-self.sb["size"] * SECTOR // chunk)
            self.end = self.start + -(-(BM_HEADER + -(-self.nbits // 8))
                                      // 4096) * 4096
            f.seek(self.start)
            self.area = f.read(self.end - self.start)
        # Every set bit of the area, also past nbits (a stray write).
        self.bits = {i for i in range((len(self.area) - BM_HEADER) * 8)
                     if self.area[BM_HEADER + i // 8] >> (i % 8) & 1}

    def name(self):
        return os.path.basename(self.path)


def disks(paths):
    return [Disk(p) for p in paths]


def bitmap_set(path, field, value):
    """Change one field of the member's bitmap superblock in place."""
    off, fmt = BM_FIELDS[field]
    start = Disk(path).start
    assert start is not None, "%s has no bitmap to change" % path
    with open(path, "r+b") as f:
        f.seek(start + off)
        f.write(struct.pack(fmt, value))


def md5s(paths):
    return [hashlib.md5(open(p, "rb").read()).hexdigest() for p in paths]


def make_members(name, n, size):
    paths = [os.path.join(WORK, "%s%d" % (name, i)) for i in range(n)]
    for p in paths:
        with open(p, "wb") as f:
            f.truncate(size)
    return paths


def copy_members(paths, name):
    out = [os.path.join(WORK, "%s%d" % (name, i)) for i in range(len(paths))]
    for src, dst in zip(paths, out):
        shutil.copyfile(src, dst)
    return out


# --- Geometry: md's left-symmetric layout through raidcheck.py ----------

class Geometry:
    """The array as its superblock (parsed above) describes it."""

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
        return rc.row_layout(self.level, "ls", self.n, s)

    def where(self, offset):            # for rf.compare_all's messages
        s, in_row = divmod(offset, self.row)
        i, in_chunk = divmod(in_row, self.chunk)
        return s, i, self.layout_of(s)[2][i], \
            self.data_offset + s * self.chunk + in_chunk

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


def apply_ops(h, shadow, ops):
    """Writes, zeroes and trims, each acknowledged, mirrored in the shadow."""
    for kind, off, n in ops:
        data = rng.randbytes(n) if kind == "write" else bytes(n)
        if kind == "write":
            h.pwrite(data, off)
        elif kind == "zero":
            h.zero(n, off)
        else:
            h.trim(n, off)
        shadow[off:off + n] = data


# --- nbdkit -------------------------------------------------------------

servers = []


class Server:
    """nbdkit -v serving the array, with a control socket."""

    def __init__(self, name, paths, params=()):
        self.sock = os.path.join(WORK, name + ".sock")
        self.logfile = os.path.join(WORK, name + ".log")
        pidfile = os.path.join(WORK, name + ".pid")
        for p in (self.sock, pidfile, self.sock + ".ctl"):
            if os.path.lexists(p):
                os.unlink(p)
        cmd = ["nbdkit", "-f", "-v", "--exit-with-parent", "-U", self.sock,
               "-P", pidfile, PLUGIN, "control=" + self.sock + ".ctl"]
        with open(self.logfile, "wb") as log:
            self.proc = subprocess.Popen(cmd + list(params) + list(paths),
                                         stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log)
        servers.append(self.proc)
        if not wait_until(lambda: os.path.exists(pidfile) or
                          self.proc.poll() is not None, 20):
            raise AssertionError("%s: nbdkit did not start" % name)
        if self.proc.poll() is not None:
            raise AssertionError("%s: nbdkit exited (%d):\n%s" % (
                name, self.proc.returncode, self.log()[-3000:]))
        self.ctl = rf.Control(self.sock + ".ctl")

    def connect(self):
        h = nbd.NBD()
        h.set_strict_mode(0)
        h.connect_unix(self.sock)
        return h

    def status(self):
        return self.ctl.status()

    def log(self):
        with open(self.logfile, errors="replace") as f:
            return f.read()

    def finished_job(self, timeout=60):
        """The status once the start-up job (resync) is over."""
        def finished():
            st = self.status()
            sc = st["scrub"]
            return st if sc["finished"] and not sc["running"] else None
        st = wait_until(finished, timeout)
        if not st:
            raise AssertionError("no finished resync after %d s: %s"
                                 % (timeout, self.status()))
        return st

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


def kill_servers(why=None):
    if why:
        print("watchdog: %s" % why, flush=True)
    for p in servers:
        if p.poll() is None:
            p.kill()


atexit.register(kill_servers)
watchdog = threading.Timer(300, kill_servers, ("over 300 s, killing nbdkit",))
watchdog.daemon = True
watchdog.start()


def refused(what, params, paths, name_member=False):
    """nbdkit must stop before serving, say why (the bitmap, and with
    name_member which member), and write nothing."""
    n0, before = len(failures), md5s(paths)
    r = subprocess.run(["timeout", "60", "nbdkit", "-U", "-", PLUGIN] +
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
    check(md5s(paths) == before, "%s: a member file changed" % what)
    ok(n0, "%s refused: %s" % (what, line.strip()))


# --- Checks on the member files ------------------------------------------

def check_bitmap_fields(what, paths, bchunk):
    """(a): a valid bitmap on every member, the same on all."""
    ds = disks(paths)
    for d in ds:
        sb, bm = d.sb, d.bm
        if not check(bm, "%s: %s: no bitmap (feature_map %#x)"
                     % (what, d.name(), sb["feature_map"])):
            continue
        for name, got, want in (
                ("bitmap_offset", sb["bitmap_offset"], 8),
                ("magic", bm["magic"], BITMAP_MAGIC),
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
                ("cluster_name and padding", d.area[72:BM_HEADER],
                 bytes(BM_HEADER - 72)),
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
    """(g): after a clean shutdown."""
    for d in check_bits(what + ", clean shutdown", paths, set()):
        bm, sb = d.bm or {"events": None, "events_cleared": None}, d.sb
        check(bm["events"] is not None and
              bm["events"] - sb["events"] in (0, 1) and
              bm["events_cleared"] == bm["events"] and
              sb["resync_offset"] == CLEAN,
              "%s, clean shutdown: %s: bitmap events %d, events_cleared %d, "
              "md events %d, resync_offset %d" % (
                  what, d.name(), bm["events"], bm["events_cleared"],
                  sb["events"], sb["resync_offset"]))


def wait_bits_clear(what, srv, paths):
    """(b) and after resyncs: every bit clears within a few periods."""
    def all_clear():
        st = srv.status()
        return (st.get("bitmap") or {}).get("dirty") == 0 and \
            all(not d.bits for d in disks(paths))
    check(wait_until(all_clear, 5 * DELAY + 2),
          "%s: bits still set after %d s idle: status bitmap %s, on disk %s"
          % (what, 5 * DELAY + 2, srv.status().get("bitmap"),
             [sorted(d.bits) for d in disks(paths)]))


def bad_parity(geo, paths):
    """raidcheck.py, run as a program: {(row, 'P'|'Q', member)} it finds."""
    r = subprocess.run(["python3", RAIDCHECK, "--level", str(geo.level),
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
    with open(paths[p], "r+b") as f:
        f.seek(geo.data_offset + s * geo.chunk + 5000)
        old = f.read(16)
        f.seek(geo.data_offset + s * geo.chunk + 5000)
        f.write(bytes(b ^ 0xa5 for b in old))
    return (s, "P", p)


def check_resync(what, srv, geo, rows):
    """The start-up resync went over exactly `rows` rows and finished."""
    sc = srv.finished_job()["scrub"]
    return check(sc.get("resync") is True and sc["total"] == rows * geo.chunk
                 and sc["done"] == sc["total"],
                 "%s: expected a finished resync of %d rows (%d bytes): "
                 "scrub status %s" % (what, rows, rows * geo.chunk, sc))


def unclean_stop(srv, h, shadow, ops):
    """The ops, acknowledged, then SIGKILL at once (before lazy clearing)."""
    apply_ops(h, shadow, ops)
    st = srv.status()
    srv.kill()
    return st


# --- One array through (a)-(e), (g) ---------------------------------------

class Case:
    """An array under test: its members, geometry and shadow."""

    def __init__(self, name, level, n, chunk, bchunk, msize):
        self.name, self.what = name, "RAID-%d" % level
        self.level, self.n, self.chunk, self.bchunk = level, n, chunk, bchunk
        self.paths = make_members(name, n, msize)

    def server(self, tag, params=()):
        return Server("%s-%s" % (self.name, tag), self.paths, params)


def create(case):
    """(a) and (b): a new array, filled, resynced, idle."""
    n0, what = len(failures), case.what
    srv = case.server("create", ["create=true", "level=%d" % case.level,
                                 "chunk=%d" % case.chunk,
                                 "bitmap-chunk=%d" % case.bchunk,
                                 "bitmap-delay=%d" % DELAY])
    case.geo = geo = Geometry(case.level, case.n, Disk(case.paths[0]))
    h = srv.connect()
    assert h.get_size() == geo.size, "%s: array size %d, superblock says %d" \
        % (what, h.get_size(), geo.size)
    case.shadow = rf.fill(h, rng)
    srv.finished_job()
    wait_bits_clear(what + ": (b) after create and fill", srv, case.paths)
    got = srv.status().get("bitmap") or {}
    want = {"chunk": case.bchunk, "bits": Disk(case.paths[0]).nbits,
            "dirty": 0}
    check({k: got.get(k) for k in want} == want,
          "%s: (b) status bitmap %s, expected %s" % (what, got, want))
    check_bitmap_fields(what + ": (a)", case.paths, case.bchunk)
    h.shutdown()
    srv.stop()
    ok(n0, "%s: (a), (b) %d rows, %d bits of %d bytes, all clear when idle"
       % (what, geo.rows, want["bits"], case.bchunk))


def kill_after_writes(case):
    """(c): returns the rows written and the bits (regions) they dirty."""
    n0, what, geo = len(failures), case.what, case.geo
    rb, c = geo.row, geo.chunk
    ops = [("write", 3 * rb + c + 100, 1000),       # inside one chunk
           ("write", 10 * rb - 700, 1400),          # across rows 9 and 10
           ("write", 20 * rb + 5, rb + 10),         # rows 20 and 21
           ("zero", 30 * rb + 4096, 8192),
           ("trim", 40 * rb, rb),
           ("write", geo.size - 300, 300)]          # the last row
    written = ops_rows(geo, ops)
    bits = geo.bits_of(written)
    srv = case.server("c")
    st = unclean_stop(srv, srv.connect(), case.shadow, ops)
    check((st.get("bitmap") or {}).get("dirty") == len(bits),
          "%s: (c) status bitmap %s before SIGKILL, expected %d dirty"
          % (what, st.get("bitmap"), len(bits)))
    for d in check_bits(what + ": (c) after SIGKILL", case.paths, bits):
        bm_events = d.bm["events"] if d.bm else None
        check(d.sb["resync_offset"] == 0 and bm_events is not None and
              bm_events - d.sb["events"] in (0, 1),
              "%s: (c) %s: resync_offset %d (want 0), bitmap events %s, md "
              "events %d" % (what, d.name(), d.sb["resync_offset"],
                             bm_events, d.sb["events"]))
    ok(n0, "%s: (c) rows %s written, then SIGKILL: bits %s set"
       % (what, sorted(written), sorted(bits)))
    return written, bits


def resync_dirty(case, written, bits):
    """(d): corrupt P in dirty and clean regions; only the dirty rows are
    resynced, the clean region's corruption stays."""
    n0, what, geo, paths = len(failures), case.what, case.geo, case.paths
    dirty_rows = geo.rows_in(bits)
    clean_row = 60
    assert clean_row not in dirty_rows and clean_row < geo.rows
    targets = [min(written)] + sorted(dirty_rows - written)[:1]
    dirty_bad = {corrupt_p(geo, paths, s) for s in targets}
    clean_bad = corrupt_p(geo, paths, clean_row)
    got = bad_parity(geo, paths)
    assert got == dirty_bad | {clean_bad}, \
        "%s: (d) raidcheck before the restart: %s, expected %s" % (
            what, got, dirty_bad | {clean_bad})
    srv = case.server("d")
    check_resync(what + ": (d)", srv, geo, len(dirty_rows))
    m = re.search(r"raid: bitmap: resyncing (\d+) of (\d+) rows "
                  r"\((\d+) dirty regions\)", srv.log())
    check(m and tuple(map(int, m.groups())) == (len(dirty_rows), geo.rows,
                                                 len(bits)),
          "%s: (d) the log says %r, expected 'resyncing %d of %d rows "
          "(%d dirty regions)'; its lines about the bitmap: %s"
          % (what, m and m.group(0), len(dirty_rows), geo.rows, len(bits),
             [l for l in srv.log().splitlines() if "bitmap" in l]))
    h = srv.connect()
    rf.compare_all(geo, case.shadow, what + ": (d) after the bitmap resync", h)
    wait_bits_clear(what + ": (d) after the resync", srv, paths)
    h.shutdown()
    srv.stop()
    check_clean(what + ": (d)", paths)
    got = bad_parity(geo, paths)
    check(got == {clean_bad}, "%s: (d) raidcheck after the resync: %s, "
          "expected only the clean region's %s (corrupted: %s)"
          % (what, sorted(got), clean_bad, sorted(dirty_bad)))
    ok(n0, "%s: (d) resync of the %d dirty rows repaired %s, left %s"
       % (what, len(dirty_rows), sorted(dirty_bad), clean_bad))


def sigterm_clears(case):
    """(g): bits set on disk by writes, cleared by SIGTERM."""
    n0, what, geo = len(failures), case.what, case.geo
    srv = case.server("g")
    h = srv.connect()
    ops = [("write", 50 * geo.row + 7, 3000),
           ("write", 70 * geo.row, 2 * geo.row)]
    bits = geo.bits_of(ops_rows(geo, ops))
    apply_ops(h, case.shadow, ops)
    check_bits(what + ": (g) while written", case.paths, bits)
    h.shutdown()
    srv.stop()
    check_clean(what + ": (g) SIGTERM", case.paths)
    ok(n0, "%s: (g) bits %s set by writes, cleared by SIGTERM"
       % (what, sorted(bits)))


def stale_full_resync(case, how, field, value):
    """(e): a stale bitmap after an unclean stop means a full resync, which
    also repairs the clean region corrupted in (d)."""
    n0, geo = len(failures), case.geo
    what = "%s: (e) bitmap %s" % (case.what, how)
    srv = case.server("e")
    unclean_stop(srv, srv.connect(), case.shadow,
                 [("write", 5 * geo.row + 11, 700)])
    for p in case.paths:
        bitmap_set(p, field, value(Disk(p)))
    srv = case.server("e-restart")
    check_resync(what, srv, geo, geo.rows)
    h = srv.connect()
    rf.compare_all(geo, case.shadow, what + ": after the full resync", h)
    h.shutdown()
    srv.stop()
    check_clean(what, case.paths)
    got = bad_parity(geo, case.paths)
    check(got == set(), "%s: raidcheck after the full resync: %s"
          % (what, sorted(got)))
    ok(n0, "%s: full resync of all %d rows" % (what, geo.rows))


def captive_write(case):
    """(g) at the end of --run; then the members' image is the shadow."""
    n0, geo = len(failures), case.geo
    off, n = 7 * geo.row + 4096, 8192
    r = subprocess.run(["nbdkit", "-U", "-", PLUGIN] + case.paths + [
        "--run", "nbdsh -u \"$uri\" -c 'h.pwrite(b\"\\x5a\" * %d, %d)'"
        % (n, off)], stderr=subprocess.PIPE, universal_newlines=True)
    assert r.returncode == 0, "captive write: %s" % r.stderr
    case.shadow[off:off + n] = bytes([0x5a]) * n
    check_clean(case.what + ": (g) end of --run", case.paths)
    image = os.path.join(WORK, "image")
    subprocess.run(["python3", RAIDCHECK, "--level", str(geo.level),
                    "--chunk", str(geo.chunk), "--data-offset",
                    str(geo.data_offset), "--image", image] + case.paths,
                   check=True, stdout=subprocess.DEVNULL)
    with open(image, "rb") as f:
        img = f.read()[:geo.size]
    os.unlink(image)
    check(img == case.shadow, "%s: the image raidcheck.py rebuilt from the "
          "members is not the shadow" % case.what)
    ok(n0, "%s: (g) end of --run clean; members hold the shadow" % case.what)


def corrupt_bitmaps(paths):
    """(f): one bad field in every member's bitmap superblock."""
    cases = [("bad magic", "magic", BITMAP_MAGIC ^ 1),
             ("version 99", "version", 99),
             ("chunksize 192K, not a power of two", "chunksize", 3 * 64 * K),
             ("chunksize 256", "chunksize", 256),
             ("UUID not the set's", "uuid", b"\x11" * 16),
             ("daemon_sleep 0", "daemon_sleep", 0),
             ("clustered (nodes 2)", "nodes", 2)]
    for what, field, value in cases:
        xs = copy_members(paths, "x")
        for x in xs:
            bitmap_set(x, field, value)
        refused("(f) bitmap " + what, [], xs, name_member=True)


def no_bitmap():
    """(h): bitmap=none, and the parameters' refusals."""
    n0, what = len(failures), "(h) bitmap=none"
    paths = make_members("none", 4, 8 * M)
    srv = Server("none", paths, ["create=true", "level=5", "chunk=64K",
                                 "bitmap=none"])
    st = srv.finished_job()
    check("bitmap" in st and st["bitmap"] is None,
          "%s: status has %s" % (what, st.get("bitmap", "no 'bitmap' key")))
    d = Disk(paths[0])
    check(all(not Disk(p).sb["feature_map"] & 1 for p in paths),
          "%s: a member has the bitmap feature bit" % what)
    with open(paths[0], "rb") as f:
        f.seek(8192)
        check(f.read(4096) == bytes(4096), "%s: bytes written at 8K" % what)
    geo = Geometry(5, 4, d)
    shadow = bytearray(geo.size)
    unclean_stop(srv, srv.connect(), shadow, [("write", 2 * geo.row, 100)])
    srv = Server("none-restart", paths)
    check_resync(what + ", after SIGKILL", srv, geo, geo.rows)
    rf.compare_all(geo, shadow, what, srv.connect())
    srv.stop()
    ok(n0, "%s: no feature bit, status null, full resync" % what)

    for params in (["bitmap=internal"], ["bitmap=none"],
                   ["bitmap-chunk=64K"], ["bitmap-delay=1"]):
        refused("(h) %s without create=true" % params[0], params, paths)
    blank = make_members("blank", 4, 8 * M)
    for params in (["bitmap=external"], ["bitmap-chunk=3K"],
                   ["bitmap-chunk=2K"],
                   ["bitmap-chunk=64K", "data-offset=8K"]):
        refused("(h) create=true %s" % " ".join(params),
                ["create=true", "level=5", "chunk=64K"] + params, blank)


r = subprocess.run(["nbdkit", PLUGIN, "--dump-plugin"], stdout=subprocess.PIPE,
                   universal_newlines=True)
check("raid_bitmap=internal" in r.stdout.splitlines(),
      "--dump-plugin does not say raid_bitmap=internal")

# RAID-6: one bit per row.  RAID-5: 4 rows per bit, the last bit 2 rows.
r6 = Case("r6", 6, 5, 64 * K, 64 * K, 8 * M + 64 * K)
r5 = Case("r5", 5, 4, 32 * K, 128 * K, 8 * M + 64 * K)
stale = {r6: ("events one older than the superblocks'", "events",
              lambda d: d.sb["events"] - 1),
         r5: ("state STALE", "state", lambda d: d.bm["state"] | 2)}
for case in (r6, r5):
    try:
        create(case)
        resync_dirty(case, *kill_after_writes(case))
        sigterm_clears(case)
        stale_full_resync(case, *stale[case])
        captive_write(case)
    except Exception as e:
        traceback.print_exc()
        check(False, "%s: stopped: %s: %s" % (case.what, type(e).__name__, e))
        kill_servers()
for part in (lambda: corrupt_bitmaps(r6.paths), no_bitmap):
    try:
        part()
    except Exception as e:
        traceback.print_exc()
        check(False, "stopped: %s: %s" % (type(e).__name__, e))
        kill_servers()

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
EOF

r=0
WORK=$tmpdir TESTS_DIR=$top_srcdir/tests SEED=$seed \
    PYTHONPATH=$top_srcdir/tests python3 "$tmpdir/bitmap.py" || r=$?
if [ $r != 0 ]; then
    echo "$0: FAIL (${SECONDS}s)"
    exit 1
fi
echo "$0: PASS (${SECONDS}s)"
