# SPDX-License-Identifier: BSD-3-Clause
"""What the test-readd-*.py tests (all but auto-refused) share: an md
array with a write-intent bitmap whose member 1 is served over NBD by its
own nbdkit behind the error filter, the others local files, and the
control socket.

Two shapes (CASES): RAID-6 of 5 members, chunk 64K, one bit per row; and
RAID-5 of 4, chunk 32K, 128K per bit (four rows per bit).  bitmap-delay=1
keeps the lazy clearing quick.  setup() creates the array, fills it with
random data (the shadow) and waits for the first resync and for every bit
to clear, so that the bits set later are exactly those of the writes the
test makes.

Independence: which rows a write dirties and which bits cover them is
worked out here from the geometry; bits on disk are read by mdsb.py;
parity and data on the member files are checked by raidcheck.py (run as a
program, faults.check_members).  Nothing is taken from the plugin.
"""

import shutil
import time

import faults
import mdsb
import workload as wl

K, M = 1024, 1024 * 1024
DELAY = 1
CASES = {"r6": dict(level=6, n=5, chunk=64 * K, bchunk=64 * K),
         "r5": dict(level=5, n=4, chunk=32 * K, bchunk=128 * K)}
DATA = 4 * M                     # of each member; data_offset is md's 1M
REMOTE = 1                       # the member served over NBD


class Case:
    """raw=True: a raw array (metadata=none, no superblocks), whose
    record of what a member missed is in memory (missed_rows in the
    status); bchunk=None: an md array without a bitmap, likewise."""

    def __init__(self, t, level, n, chunk, bchunk, params=(), remote=True,
                 raw=False):
        self.t, self.level, self.n = t, level, n
        self.chunk, self.bchunk = (chunk, None if raw else bchunk)
        msize = DATA + 2 * M
        self.members = [t.member(msize, "remote" if remote and i == REMOTE
                                 else "local") for i in range(n)]
        self.paths = [m.path for m in self.members]
        if raw:
            self.arr = t.array(self.members, level=level, chunk=chunk,
                               control=True, nbdkit_args=["-v"],
                               params=list(params))
        else:
            bitmap = ["bitmap=none"] if bchunk is None else \
                ["bitmap-chunk=%d" % bchunk, "bitmap-delay=%d" % DELAY]
            self.arr = t.array(self.members, level=level, chunk=chunk,
                               layout=None, data_offset=None, control=True,
                               nbdkit_args=["-v"],
                               params=["create=true"] + bitmap + list(params))
        self.ctl = self.arr.ctl
        self.shadow = wl.fill(self.arr.h, t.rng)
        if not raw:
            self.ctl.finished_scrub()
        self.wait_bits_clear("after the fill")
        self.rows = self.arr.rows

    def wait_bits_clear(self, what):
        """Until nothing is marked, in the bitmap or the in-memory
        record of an array without one."""
        def clear():
            st = self.ctl.status()
            if st["bitmap"] is not None:
                return st["bitmap"]["dirty"] == 0
            return st["missed_rows"]["marked"] == 0
        wait_until(clear, 10 * DELAY + 5, "the marks clear " + what)

    def refused(self, line, *words):
        return refused(self.ctl, self.paths, line, *words)

    # The geometry, from the superblock and raidcheck.py (faults.Array).

    def rows_of(self, off, n):
        r = self.arr.row
        return set(range(off // r, (off + n - 1) // r + 1))

    def dirty_rows(self, rows):
        """Every row under the bits that cover these rows (a re-add
        resyncs whole bits' regions, in whole rows).  Without a bitmap
        the record in memory has a mark per row at these sizes."""
        c, b = self.chunk, self.bchunk
        if b is None:
            return set(rows)
        bits = {x for s in rows
                for x in range(s * c // b, ((s + 1) * c - 1) // b + 1)}
        return {s for s in range(self.rows)
                if any(x in bits
                       for x in range(s * c // b, ((s + 1) * c - 1) // b + 1))}

    def disk_bits(self, i):
        return mdsb.read_bitmap(self.paths[i])["bits"]

    def older_than_last_clearing(self, i):
        """Member i fails holding what a snapshot of it taken now holds,
        but older than the bitmap's last clearing: the snapshot is taken,
        i is failed and re-added, the array written and its bits cleared,
        i failed again and its disk put back from the snapshot (the same
        disk as far as its UUIDs go)."""
        snap = self.paths[i] + ".snapshot"
        shutil.copyfile(self.paths[i], snap)
        self.ctl.ok("fail %d" % i)
        self.ctl.ok("re-add %d" % i)
        assert self.ctl.wait_idle(60)["members"][i]["state"] == "in_sync"
        self.write(self.scattered_ops({7, 21, 50}))
        self.arr.h.flush()
        self.wait_bits_clear("after the first re-add")
        self.ctl.ok("fail %d" % i)
        with open(snap, "rb") as src, open(self.paths[i], "r+b") as dst:
            shutil.copyfileobj(src, dst)

    def rows_of_bits(self, bits):
        """The rows under any of these bits (what a re-add writes)."""
        c, b = self.chunk, self.bchunk
        return {s for s in range(self.rows)
                if any(x in bits
                       for x in range(s * c // b, ((s + 1) * c - 1) // b + 1))}

    def write(self, ops):
        """Apply the ops; the rows they touch."""
        wl.apply_ops(self.arr.h, self.t.rng, self.shadow, ops)
        rows = set()
        for _, off, n in ops:
            rows |= self.rows_of(off, n)
        return rows

    def scattered_ops(self, rows):
        """A write inside one chunk of each of these rows, alternating
        with zeroes and trims."""
        ops = []
        for k, s in enumerate(sorted(rows)):
            off = s * self.arr.row + (k % (self.n - 2)) * self.chunk + \
                512 * k % (self.chunk - 8 * K)
            ops.append((("write", "write", "zero", "trim")[k % 4], off,
                        1000 + 3000 * (k % 3)))
        return ops

    def fail_under_writes(self, rows):
        """Member REMOTE fails by EIO under a full-row write to the first
        row, the other rows written while it is out; then its server
        answers again.  Returns the rows written."""
        m = self.members[REMOTE]
        m.fail_writes(True)
        first = min(rows)
        written = self.write([("write", first * self.arr.row, self.arr.row)])
        st = self.ctl.status()
        assert st["members"][REMOTE]["state"] == "failed", st["members"]
        written |= self.write(self.scattered_ops(rows - {first}))
        self.arr.h.flush()
        m.fail_writes(False)
        return written

    def restart(self):
        """Stop nbdkit cleanly and start it again on the same members,
        assembled from their superblocks (create=true and the bitmap's
        parameters dropped)."""
        self.arr.stop(grace=30)
        self.arr.params = [p for p in self.arr.params
                           if not p.startswith(("create=", "bitmap"))]
        self.arr.start()
        self.ctl = self.arr.ctl

    def md5s(self):
        return faults.md5s(self.paths)

    def check_end(self, what):
        """Every byte the shadow; scrub check 0 mismatches; stopped, every
        member file's rows right (raidcheck.py) and holding the shadow."""
        wl.compare_all(self.arr, self.shadow, what)
        self.ctl.ok("scrub check")
        sc = self.ctl.finished_scrub()["scrub"]
        assert sc["mismatch_cnt"] == 0 and sc["bad_data"] == [], \
            "%s: scrub check: %s" % (what, sc)
        assert self.arr.stop(grace=30) in (0, None), what
        faults.check_members(self.arr, self.paths, self.shadow, what)


def refused(ctl, paths, line, *words):
    """The control command must be refused, naming each word, and change
    nothing: every member file, and the status but for the time, as they
    were.  Returns the reply."""
    before, st0 = faults.md5s(paths), ctl.status()
    r = ctl.error(line)
    for w in words:
        assert w in r, "%r: the reply does not say %r: %s" % (line, w, r)
    time.sleep(0.2)                 # anything it started would show by now
    assert faults.md5s(paths) == before, "%r: a member file changed" % line
    st = ctl.status()
    assert st["members"] == st0["members"] and \
        st["bitmap"] == st0["bitmap"] and not st["rebuild"]["running"], \
        "%r changed the status: %s -> %s" % (line, st0, st)
    faults.log("  refused: %s" % r)
    return r


def wait_until(pred, timeout, what, poll=0.05):
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise AssertionError("%s: not within %g s" % (what, timeout))
        time.sleep(poll)


def superblocks(paths):
    return [mdsb.read(p) for p in paths]
