# SPDX-License-Identifier: BSD-3-Clause
"""spares: what the hot-spare tests share.

    import spares
    c = spares.Case(t, level=6, n=5, nspares=2)   # create=true, spare=...
    c.takeover(i, timeout)    # until a spare holds role i and is in sync
    c.check_end(what)         # shadow, scrub 0 mismatches, raidcheck.py

An md array made with create=true over member files (member REMOTE
served over NBD, so that it can fail by EIO under client writes), with
nspares spares given by spare=, filled with random bytes (the shadow)
and its start-up resync finished.  c.paths follows the roles: when a
spare takes role i, its file becomes paths[i], so that raidcheck.py
checks the members as the array holds them now.
"""

import faults  # noqa: F401 (the tests' harness, imported first)
import readd
import workload as wl

K, M = 1024, 1024 * 1024
DATA = 4 * M                     # of each member; data_offset is md's 1M
REMOTE = 1


# The end checks and the wait of the re-add tests: the same oracles.
wait_until = readd.wait_until


class Case:
    def __init__(self, t, level, n, nspares, chunk=64 * K, params=(),
                 spare_kind="local"):
        self.t, self.level, self.n = t, level, n
        msize = DATA + 2 * M
        self.members = [t.member(msize, "remote" if i == REMOTE else "local")
                        for i in range(n)]
        self.spares = [t.member(msize, spare_kind) for _ in range(nspares)]
        self.paths = [m.path for m in self.members]
        self.arr = t.array(self.members, level=level, chunk=chunk,
                           layout=None, data_offset=None, control=True,
                           nbdkit_args=["-v"],
                           params=["create=true"] +
                           ["spare=" + s.disk for s in self.spares] +
                           list(params))
        self.ctl = self.arr.ctl
        self.shadow = wl.fill(self.arr.h, t.rng)
        self.ctl.finished_scrub()

    def spare_names(self):
        return [(s["name"], s["state"]) for s in self.ctl.status()["spares"]]

    def takeover(self, i, timeout, what):
        """Until role i is held by a spare, in sync; returns its file."""
        def done():
            m = self.ctl.status()["members"][i]
            return m.get("from_spare") and m["state"] == "in_sync"
        wait_until(done, timeout, what)
        name = self.ctl.status()["members"][i]["name"]
        sp = next(s for s in self.spares if s.disk == name)
        self.paths[i] = sp.path
        return sp

    # Every byte the shadow; scrub check 0 mismatches; stopped, every
    # member file's rows right (raidcheck.py) and holding the shadow.
    check_end = readd.Case.check_end
