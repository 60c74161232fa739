#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A SIGKILL of nbdkit under load loses no acknowledged write: what the
service's Restart=on-failure relies on when it starts nbdkit again.

An md array (create=true: superblocks and a write-intent bitmap; RAID-6
of five member files), filled; four clients on their own connections
write random pieces of their own (some with FUA, never a flush), each
write entered in a shadow once the array acknowledged it.  After 1.5 s,
SIGKILL.  Only the write each client had in flight is unknown (old
bytes, new ones or a mix: it was never acknowledged).  The superblocks
say active.  nbdkit started again on the same members, without
create=true (as the service's conf has it): the array assembles from
its superblocks and resyncs the rows the bitmap marks (a finished
resync); every acknowledged byte reads back as the shadow has it; a
scrub check finds 0 mismatches; and raidcheck.py, from the member files
alone, finds every row's parity right and the image equal to what was
read.  (qemu's client across such a restart: test-qemu-reconnect.sh.)
"""

import random
import threading
import time

import faults
import mdsb
import workload as wl

K, M = 1024, 1024 * 1024
CLIENTS = 4


class Writer(threading.Thread):
    """Writes to its own pieces until its connection dies; acked counts
    acknowledged writes, unknown is the one that was in flight."""

    def __init__(self, arr, pieces, shadow, seed):
        super().__init__(daemon=True)
        self.h, self.pieces, self.shadow = arr.connect(), pieces, shadow
        self.rng = random.Random(seed)
        self.acked, self.unknown = 0, None

    def run(self):
        rng = self.rng
        while True:
            poff, pn = rng.choice(self.pieces)
            a = rng.randrange(pn)
            off, n = poff + a, rng.randint(1, pn - a)
            data = rng.randbytes(n)
            try:
                self.h.pwrite(data, off, faults.nbd.CMD_FLAG_FUA
                              if rng.random() < 0.1 else 0)
            except faults.nbd.Error:
                self.unknown = (off, n)
                return
            self.shadow[off:off + n] = data
            self.acked += 1


with faults.Test(timeout=120) as t:
    members = [t.member(8 * M, "local") for _ in range(5)]
    paths = [m.path for m in members]
    arr = t.array(members, level=6, chunk=64 * K, data_offset=None,
                  control=True, params=["create=true"])
    arr.ctl.finished_scrub(60)
    shadow = wl.fill(arr.h, t.rng)
    deal = wl.deal_pieces(t.rng, arr.size, arr.chunk, arr.row, CLIENTS)
    writers = [Writer(arr, deal[i], shadow, t.rng.randrange(1 << 30))
               for i in range(CLIENTS)]
    for w in writers:
        w.start()
    time.sleep(1.5)
    arr.kill()
    for w in writers:
        w.join(30)
        assert not w.is_alive(), "a client hangs after SIGKILL"
    acked = sum(w.acked for w in writers)
    unknown = [w.unknown for w in writers if w.unknown]
    assert acked >= 20, "only %d writes before SIGKILL" % acked
    sbs = [mdsb.read(p) for p in paths]
    assert all(sb["resync_offset"] == 0 for sb in sbs), \
        "after SIGKILL under load the superblocks say clean: %s" % (
            [sb["resync_offset"] for sb in sbs])
    faults.log("  SIGKILL after %d acknowledged writes, %d in flight"
               % (acked, len(unknown)))

    again = t.array(members, level=None, chunk=None, layout=None,
                    data_offset=None, control=True)
    sc = again.ctl.finished_scrub(60)["scrub"]
    assert sc["resync"] and sc["done"] == sc["total"] > 0, sc
    resynced = sc["total"]
    image = bytearray()
    for off in range(0, again.size, M):
        image += again.h.pread(min(M, again.size - off), off)
    want = bytearray(shadow)
    for off, n in unknown:
        want[off:off + n] = image[off:off + n]
    if image != want:
        bad = next(i for i in range(len(want)) if image[i] != want[i])
        raise AssertionError("an acknowledged write is lost: byte %d (%s)"
                             % (bad, again.describe(bad)))
    again.ctl.ok("scrub check")
    sc = again.ctl.wait_idle(60)["scrub"]
    assert sc["finished"] and not sc["resync"] and \
        sc["mismatch_cnt"] == 0, sc
    assert again.stop(grace=30) == 0, again.log()
    faults.check_members(again, paths, want, "after the restart", exact=True)
    faults.log("  restarted: %d bytes resynced, every acknowledged byte "
               "there, scrub 0 mismatches, raidcheck.py agrees" % resynced)
