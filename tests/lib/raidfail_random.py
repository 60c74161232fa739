# SPDX-License-Identifier: BSD-3-Clause
"""raidfail_random: the randomized test of everything at once (run by
tests/test-fail-random.py and test-fail-random-regress.py).

Thousands of operations drawn from one seed mix client I/O (writes of
every size and alignment, FUA, zeroes, trims, flushes, spot reads against
the shadow) with member failures (fail N on the control socket, EIO from a
member server behind nbdkit's error filter, a member server killed),
member servers restarted on the same file, replacements (by a local file
or by a new NBD server, every one full of noise), rebuilds at an unlimited
or a capped rate, scrubs running under the writes, and restarts of
nbdkit.  Three arrays: RAID-6 and RAID-5 in raw mode (metadata=none),
where a restart gives the failed members as disk=missing, and RAID-6 with
md superblocks (create=true), where a restart gives every member that can
still be opened, stale ones included, in a shuffled order: the plugin must
find the roles and leave the stale members out by itself.  A failure is
only injected when the array can take it: members that are failed, doomed,
just restarted or still rebuilding count against the tolerance.  After
every control step the array's status must agree with the model, and the
whole array is compared with the shadow now and then and at the end, when
every member is replaced, a scrub must find nothing and raidcheck.py must
find the shadow on the member files.

Op mixes (MIXES): "classic" (the original mix: mostly client I/O),
"replace-cycles" (fail and replace over and over, the path that once let
md's dev_number run past its table), "member-restarts" (remote member
servers restarted under I/O: in raw mode nothing identifies a disk across
a restart, so the member is doomed; in md mode its superblock vouches for
it), "re-adds" (failed members whose disks come back, servers started
again, taken back with `re-add N`: from the bitmap on md arrays that have
one, from the record in memory elsewhere), "crashes" (nbdkit killed with
SIGKILL and started with force=true) and "sector-errors" (members served
by the bad-sector test plugin grow sectors that cannot be read, or
written, or either, which go away again or are mended by writes, among
all of the above: raidfail_sectors.py says where a fault may go so that
no page is ever lost, and what md's read-error correction and bad-block
log must then show; md arrays there get 64 KiB before the data, room for
the log).  The mix comes from the seed unless RAID_TEST_MIX names one, so
a seed replays with its mix.

Modes:
  one(t)                       one run from the test's seed (RAID_TEST_SEED
                               replays it; test-fail-random.py)
  regress(t, FILE)             every line of FILE (random-seeds.regress;
                               RAID_TEST_REGRESS names another)
  soak(t, N)                   fresh seeds for N minutes, stopping at the
                               first failure (make soak:
                               RAID_TEST_SOAK_MINUTES=N)
Environment:
  RAID_TEST_SECONDS=N          time per array (default 18); a line of the
                               regress file may set ops= instead, which
                               RAID_TEST_OPS_SCALE=F multiplies
                               and RAID_TEST_OPS_MAX=N caps
  RAID_TEST_ARRAYS="r6 r5 r6md"  arrays to run
  RAID_TEST_MIX=NAME           force a mix
The background rebuild's timing is not replayed, only the choices.

When a run fails, the last steps, the model and the log of the nbdkit that
was running (or failed to start) are printed, with the seed and mix.
"""

import collections
import os
import random
import re
import shutil
import sys
import time
import traceback

import faults
import raidfail_sectors as rs
import workload as wl

K, M = 1024, 1024 * 1024
MSIZE = 1 * M
LAYOUTS = ["left-asymmetric", "right-asymmetric", "left-symmetric",
           "right-symmetric", "parity-first", "parity-last"]
ARRAYS = (("r6", 6, 6, False), ("r5", 5, 4, False), ("r6md", 6, 5, True))

# Each mix: (upper bound of k, step) in order; k = rng.random() per op.
# "io" is one client operation; every other step is followed by a spot
# read and a status check.  "classic" keeps the original test's bounds
# exactly, so the seeds that failed before replay the same choices.
MIXES = {
    "classic": [(0.80, "io"), (0.85, "fail"), (0.90, "replace"),
                (0.92, "wait"), (0.94, "compare"), (0.96, "scrub"),
                (0.97, "restart"), (1.0, "idle")],
    "replace-cycles": [(0.35, "io"), (0.62, "fail"), (0.90, "replace"),
                       (0.93, "wait"), (0.94, "compare"), (0.95, "scrub"),
                       (0.96, "restart"), (1.0, "idle")],
    "member-restarts": [(0.65, "io"), (0.69, "fail"), (0.73, "replace"),
                        (0.75, "wait"), (0.77, "compare"), (0.78, "scrub"),
                        (0.80, "restart"), (0.96, "member-restart"),
                        (1.0, "idle")],
    "re-adds": [(0.60, "io"), (0.68, "fail"), (0.71, "replace"),
                (0.81, "readd"), (0.84, "wait"), (0.86, "compare"),
                (0.87, "scrub"), (0.89, "restart"),
                (0.94, "member-restart"), (1.0, "idle")],
    "crashes": [(0.62, "io"), (0.71, "fail"), (0.75, "replace"),
                (0.78, "wait"), (0.80, "compare"), (0.81, "scrub"),
                (0.83, "restart"), (0.91, "crash"), (1.0, "idle")],
    "sector-errors": [(0.55, "io"), (0.58, "fail"), (0.62, "replace"),
                      (0.64, "wait"), (0.655, "compare"), (0.675, "scrub"),
                      (0.69, "restart"), (0.705, "crash"),
                      (0.72, "member-restart"), (0.90, "sector-bad"),
                      (0.94, "sector-clear"), (0.96, "sector-heal"),
                      (1.0, "idle")],
}
# A fresh seed's mix: (mix, weight).
MIX_CHOICE = [("classic", 2), ("replace-cycles", 1), ("member-restarts", 1),
              ("re-adds", 1), ("crashes", 1), ("sector-errors", 1)]


def mix_for(seed):
    forced = os.environ.get("RAID_TEST_MIX")
    if forced:
        if forced not in MIXES:
            sys.exit("RAID_TEST_MIX=%s: one of %s" % (forced, ", ".join(MIXES)))
        return forced
    rng = random.Random("%d-mix" % seed)
    names = [n for n, w in MIX_CHOICE for _ in range(w)]
    return rng.choice(names)


class Run:
    def __init__(self, hz, work, level, n, rng, tag, md, mix):
        self.hz, self.level, self.n, self.rng, self.tag = hz, level, n, rng, tag
        self.work = work
        self.md = md
        self.mix = mix
        self.steps = MIXES[mix]
        # Half the md arrays get a write-intent bitmap (room for it before
        # the data, small bits, quick clearing), so that kills and restarts
        # go through its resync too.
        self.bitmap = md and rng.random() < 0.5
        self.doff = (64 * K if self.bitmap else 8 * K) if md else 0
        # Bad sectors: a v1.2 superblock 8 KiB into the member leaves room
        # for md's bad-block log (md_badblocks_create_place: 8 sectors,
        # after the bitmap's room) only with 64 KiB before the data; at 8
        # KiB there is none, and a write fault would fail the member.
        self.sectors = mix == "sector-errors"
        if self.sectors and md:
            self.doff = 64 * K
        self.logs = self.sectors and md
        self.starts = 0
        self.op = 0
        self.tol = 2 if level == 6 else 1
        self.chunk = rng.choice([4 * K, 8 * K, 16 * K])
        self.layout = rng.choice(LAYOUTS)
        self.rate = rng.choice([None, "4M"])
        self.sock = os.path.join(work, "ctl-%s.sock" % tag)
        self.history = collections.deque(maxlen=40)
        self.trace = []           # every change: (op, kind, offset, length)
        self.counts = collections.Counter()
        # Whether a client write, zero or trim may have been acknowledged
        # since the client's last flush: a member server restarted then
        # may have lost it (a cache), so the plugin fails that member.
        self.unflushed = False
        self.remote_new = 0
        self.arr = None
        self.logfile = None       # the log of the nbdkit started last
        kinds = [rng.choice(["remote", "local"]) for _ in range(n)]
        kinds[rng.randrange(n)] = "remote"
        if self.sectors:
            # Bad sectors need a server in between: at least two members
            # (RAID-6 may lose one page-row on two) are "badsector" ones,
            # which fail, die and restart as remote members do.
            kinds = [rng.choice(["badsector", "remote", "local"])
                     for _ in range(n)]
            for i in rng.sample(range(n), 2):
                kinds[i] = "badsector"
        self.members = [hz.member(self.doff + MSIZE, k) for k in kinds]
        self.bad = rs.SectorModel(n, self.tol)
        # Our model of each member: in_sync, failed, doomed (an EIO trigger,
        # a dead server or, in raw mode, a restarted one, that the plugin
        # may not have met yet), rebuilding.
        self.model = ["in_sync"] * n
        # Failures the superblocks may not record yet (see crash).  The
        # plugin records every failure it has met before it acknowledges a
        # write, zero or trim, at every flush, and at every change of the
        # member table (fail, replace, re-add): `records` counts those
        # points.  failed_at[i]: the count when status first showed member
        # i failed by the plugin itself (None: recorded for certain, or
        # not failed); working_at[i]: when status last showed it working;
        # was[i]: its state before it was doomed or failed; met_by_write:
        # doomed members that write_on wrote to (met by that write, at the
        # latest, so recorded before its reply).
        self.records = 0
        self.failed_at = [None] * n
        self.working_at = [0] * n
        self.was = ["in_sync"] * n
        self.met_by_write = set()
        self.unrecorded = set()   # failed members a crash may find in sync
        self.what = "RAID-%d %s, %d members, chunk %d, rebuild-rate %s, %s" % (
            level, self.layout, n, self.chunk, self.rate or "unlimited",
            ("md superblocks and bitmap" if self.bitmap else "md superblocks")
            if md else "raw")
        self.start()
        self.shadow = wl.fill(self.arr.h, rng)
        if md:
            # As with md, a new array's first resync must end before members
            # may fail: if it cannot finish, the array stays unclean, and an
            # unclean degraded array is refused at the next start.
            st = self.ctl.wait_idle(60)
            assert st["scrub"]["resync"] and st["scrub"]["finished"], \
                "the initial resync did not finish: %s" % st["scrub"]

    def note(self, s):
        self.history.append("op %d: %s" % (self.op, s))

    def start(self, force=False):
        # The mode, always explicit: raw arrays need metadata=none, and an
        # md array's later starts (no create=true) must not be taken for
        # raw.  Given last, it wins over any default faults.Array puts first.
        params = ["control=" + self.sock, "member-timeout=5",
                  "metadata=md" if self.md else "metadata=none"]
        if self.rate:
            params.append("rebuild-rate=" + self.rate)
        if self.sectors:
            # md's limit on read errors (20, decaying by the hour) would
            # fail a member that this mix's faults hit often; whether it
            # does is test_member's and test-media-read-correct.py's to
            # say, not this model's.
            params.append("max-read-errors=1000000")
        if self.md and force:
            params.append("force=true")     # dirty and maybe degraded
        if self.md and self.starts == 0:
            params.append("create=true")
            if self.bitmap:
                params += ["bitmap-chunk=16K", "bitmap-delay=1"]
            elif self.doff > 8 * K:
                params.append("bitmap=none")    # else made where there is room
        ms, readd, back = [], [], []
        for i, m in enumerate(self.members):
            if self.model[i] != "failed":
                ms.append(m)
            elif self.md and (not m.remote or m.alive()) and \
                    not os.path.exists(getattr(m, "read_trigger", "")):
                # md superblocks: the plugin must see that this member's
                # superblock is stale and leave it out by itself, or, with
                # a bitmap (which is not cleared while a member is out, so
                # it covers what this one missed), re-add it as mdadm
                # --re-add would if its own superblock still claims its
                # role (a replacement that failed before its superblock
                # showed it in the role does not): "readd?", which the
                # next status() settles as either.
                ms.append(m)
                if self.bitmap and self.starts:
                    readd.append(i)
                elif i in self.unrecorded:
                    back.append(i)
            else:
                ms.append(faults.MissingMember())
        if self.md and self.starts:
            # Roles come from the superblocks, not the order (except for
            # create=true, where the order gives them).
            self.rng.shuffle(ms)
        # Named before it starts: if this nbdkit fails to start, its log
        # (not the previous one's) is the one to show.
        self.logfile = self.hz.next_array_log()
        self.arr = self.hz.array(ms, level=self.level, chunk=self.chunk,
                                 layout=self.layout, data_offset=self.doff,
                                 params=params)
        # (Array.members is in command-line order; its geometry helpers
        # need only the count.  Roles are self.members.)
        self.starts += 1
        self.ctl = faults.Control(self.sock)
        for i in readd:
            self.model[i] = "readd?"
        for i in back:
            self.model[i] = "back?"
        # A start records every failure (a clean stop did, or the
        # superblocks of a member left out are stale from now on).
        self.failed_at = [None] * self.n
        self.met_by_write = set()
        self.unrecorded = set()

    def status(self):
        """Status, folded into the model and checked against it."""
        st = self.ctl.status()
        for i, m in enumerate(st["members"]):
            want, got = self.model[i], m["state"]
            if got != "failed":
                self.working_at[i] = self.records
            if want == "back?":
                # Failed before a crash with nothing recorded since: its
                # superblock may still say what it said before the failure.
                ok = ("in_sync", "failed") if self.was[i] == "in_sync" \
                    else ("rebuilding", "in_sync", "failed")
                assert got in ok, \
                    "member %d is %s after a crash that followed its " \
                    "unrecorded failure (it was %s before): %s" % (
                        i, got, self.was[i], st["members"])
                want = self.model[i] = got
                self.counts["back-after-crash" if got != "failed"
                            else "left-out-after-crash"] += 1
            if want == "readd?":
                assert got in ("rebuilding", "in_sync", "failed"), \
                    "member %d is %s after a start that gave its stale " \
                    "disk: %s" % (i, got, st["members"])
                want = self.model[i] = "failed" if got == "failed" else got
                self.counts["readd-at-start" if got != "failed"
                            else "left-out-at-start"] += 1
            if m["name"] != self.members[i].disk and \
                    not (want == "failed" and m["name"] == "missing"):
                raise AssertionError(
                    "member %d is %s (%s), expected %s (%s): roles mixed up"
                    % (i, os.path.basename(m["name"]), got,
                       os.path.basename(self.members[i].disk), want))
            if want == "doomed":
                if got == "failed":
                    self.plugin_failed(i)
                continue
            if want == "rebuilding" and got in ("rebuilding", "in_sync"):
                self.model[i] = got
                continue
            if want == "rebuilding" and got == "failed" and \
                    self.members[i].remote and not self.members[i].alive():
                self.was[i] = "rebuilding"
                self.plugin_failed(i)
                continue
            assert got == want, "member %d is %s, expected %s: %s" % (
                i, got, want, st["members"])
        failed = sum(s == "failed" for s in self.model)
        assert st["failed"] == failed, "status failed=%d, model %s" % (
            st["failed"], self.model)
        assert st["degraded"] == any(s != "in_sync" for s in self.model) or \
            "doomed" in self.model, "status degraded=%s, model %s" % (
                st["degraded"], self.model)
        # Failures stay within the tolerance on every page-row (with bad
        # sectors: raidfail_sectors.py), so nothing may be lost.
        assert st.get("lost_bytes", 0) == 0 and not st.get("lost"), \
            "status lists lost bytes, the model none: %s (%d bytes); " \
            "model %s, bad pages %s" % (st.get("lost"), st["lost_bytes"],
                                        self.model,
                                        self.bad.describe(self.members))
        if self.logs:
            self.check_logs(st)
        return st

    def check_logs(self, st):
        """md arrays of the sector-errors mix: every member has a bad-block
        log (the premise of the model), and an in-sync member's log lists
        only pages that a write fault may have hit."""
        for i, m in enumerate(st["members"]):
            if self.model[i] != "in_sync":
                continue
            bb = m["bad_blocks"]
            assert bb is not None, \
                "member %d has no bad-block log (data offset %d)" % (
                    i, self.doff)
            most = len(self.bad.written[i]) * rs.PAGE // 512
            assert bb["sectors"] <= most, \
                "member %d's log lists %d sectors; write faults cover " \
                "only pages %s" % (i, bb["sectors"],
                                   sorted(self.bad.written[i]))

    def unsafe(self):
        return sum(s != "in_sync" for s in self.model)

    def unsafe_set(self):
        return {i for i, s in enumerate(self.model) if s != "in_sync"}

    def recorded(self):
        """A point at which the plugin records every failure it has met
        (see __init__)."""
        self.records += 1

    def doom(self, i):
        """Member i will fail when the plugin meets it."""
        self.was[i] = self.model[i]
        self.model[i] = "doomed"

    def plugin_failed(self, i):
        """Status shows member i failed by the plugin (not by us)."""
        self.model[i] = "failed"
        self.failed_at[i] = None if i in self.met_by_write else self.records

    def can_lose(self, i):
        """Whether member i may fail (or be doomed) now: the tolerance,
        counted per page-row with the members' bad pages."""
        return self.bad.can_make_unsafe(i, self.unsafe_set(), self.members)

    def spot(self):
        off, n = wl.pick_range(self.rng, len(self.shadow), self.chunk,
                               self.arr.row)
        wl.check_range(self.arr, self.arr.h, self.shadow, off, n,
                       "op %d: spot read" % self.op)

    def fail_one(self):
        rng = self.rng
        cands = [i for i in range(self.n) if self.model[i] == "in_sync"
                 and self.can_lose(i)]
        if self.unsafe() + 1 > self.tol:
            # Only the member being rebuilt may fail again.
            cands = []
        cands += [i for i in range(self.n) if self.model[i] == "rebuilding"]
        if not cands:
            return
        i = rng.choice(cands)
        m = self.members[i]
        how = rng.choice(["ctl", "eio", "kill"] if m.remote and m.alive()
                         else ["ctl"])
        if how == "ctl":
            self.ctl.ok("fail %d" % i)
            self.recorded()
            self.model[i] = "failed"
        elif how == "eio":
            m.fail_reads(True)
            m.fail_writes(True)
            self.doom(i)
        else:
            m.kill()
            self.doom(i)
        self.counts["fail-" + how] += 1
        self.note("fail member %d (%s) by %s" % (i, os.path.basename(m.disk),
                                                  how))

    def replace_one(self):
        rng = self.rng
        cands = [i for i in range(self.n) if self.model[i] in ("failed", "doomed")]
        if not cands:
            return
        i = rng.choice(cands)
        st = self.status()
        if self.model[i] == "doomed":
            self.ctl.ok("fail %d" % i)      # the plugin may not know yet
            self.model[i] = "failed"
        if st["scrub"]["running"]:
            self.ctl.ok("scrub stop")
            self.ctl.wait_idle(30)
            self.note("scrub stopped for a replacement")
        old = self.members[i]
        if self.sectors and getattr(old, "plugin", None) == "badsector":
            # The mix keeps its members with bad sectors: a disk that
            # grows them is replaced by another one that may.
            new = self.hz.member(self.doff + MSIZE, "badsector")
        elif self.remote_new < 6 and rng.random() < 0.4:
            new = self.hz.member(self.doff + MSIZE, "remote")
            self.remote_new += 1
        else:
            new = self.hz.member(self.doff + MSIZE, "local")
        faults.noise_file(new.path, self.doff + MSIZE)
        self.ctl.ok("replace %d %s" % (i, new.disk))
        self.recorded()
        self.members[i] = new
        self.bad.reset(i)
        if old.remote and old.alive():
            old.kill()
        # A retired member's file is never given to the plugin again (only
        # self.members are): remove it, so that thousands of replacements
        # do not fill the disk.
        if old.path and os.path.exists(old.path):
            os.unlink(old.path)
        self.model[i] = "rebuilding"
        self.counts["replace-" + ("remote" if new.remote else "local")] += 1
        self.note("replace member %d by %s" % (i, os.path.basename(new.disk)))

    def readd_one(self):
        """A failed member's disk comes back (its EIO triggers cleared, its
        server started again on the same file) and `re-add N` takes it
        back: accepted on md arrays with a bitmap (which covers what it
        missed: bits are not cleared while a member is out); refused,
        writing nothing, for a role that was given as missing at the last
        start.  Without a bitmap (raw arrays, md without one) the record
        of missed rows is in memory: a member that failed since the last
        start is taken back, unless nothing proves it is the same disk (a
        raw member whose server was restarted); one out of date at the
        start is refused.  The model does not follow every one of those
        cases: either answer is taken, a refusal for one of those reasons
        only, and whatever was taken back must then hold the shadow (the
        compares, the scrub, raidcheck.py)."""
        cands = [i for i in range(self.n) if self.model[i] == "failed"]
        if not cands:
            return
        i = self.rng.choice(cands)
        m = self.members[i]
        if m.remote and not m.alive():
            m.start()
        elif m.remote:
            m.fail_reads(False)
            m.fail_writes(False)
        st = self.status()
        line = "re-add %d" % i
        if st["scrub"]["running"]:
            self.ctl.ok("scrub stop")
            self.ctl.wait_idle(30)
            self.note("scrub stopped for a re-add")
        if st["members"][i]["name"] == "missing":
            self.readd_refused(i, line, "missing")
            return
        if not (self.md and self.bitmap):
            r = self.ctl.cmd(line)
            if r != "ok":
                self.readd_refused(i, line, "nothing proves",
                                   "record of missed rows", reply=r)
                return
        else:
            self.ctl.ok(line)
        self.recorded()
        self.model[i] = "rebuilding"
        self.counts["readd"] += 1
        self.note("re-add member %d (%s)" % (i, os.path.basename(m.disk)))

    def readd_refused(self, i, line, *why, reply=None):
        r = reply if reply is not None else self.ctl.error(line)
        assert any(w in r for w in why) and "replace" in r, \
            "op %d: %r refused, but why: %s" % (self.op, line, r)
        self.counts["readd-refused"] += 1
        self.note("re-add member %d refused: %s" % (i, r))

    def restart_member(self):
        """Restart a remote member's server on the same file and socket
        (the disk is the same, the server and its connections are new)."""
        cands = [i for i in range(self.n)
                 if self.members[i].remote and self.members[i].alive() and
                 (self.model[i] == "rebuilding" or
                  (self.model[i] == "in_sync" and
                   self.unsafe() + 1 <= self.tol and self.can_lose(i)))]
        if not cands:
            return
        i = self.rng.choice(cands)
        m = self.members[i]
        self.working_at[i] = self.records
        st = self.ctl.status()
        idle = not st["rebuild"]["running"] and not st["scrub"]["running"]
        unflushed = self.unflushed
        m.restart()
        self.counts["member-restart"] += 1
        self.note("restart the server of member %d (%s), model %s"
                  % (i, os.path.basename(m.disk), self.model[i]))
        if not self.md or unflushed:
            # Raw mode: nothing tells the plugin that the new server serves
            # the same disk, so it must not trust it.  md mode after client
            # writes no flush covered: the server may have lost some it
            # acknowledged, and the plugin fails the member if it did
            # (plugin/member_nbd.c, Writes lost with their connection),
            # when it meets the member, which may be later than the reads
            # below (the stripe cache serves some).  Doomed: failed when
            # the plugin meets it, or by us before a replacement.
            self.doom(i)
            if self.md:
                wl.compare_all(self.arr, self.shadow,
                               "op %d: full compare after restarting "
                               "member %d" % (self.op, i))
            return
        # md mode: the superblock is the member's identity, and it checks
        # out.  Read everything, so that the plugin reconnects to it.
        before = self.model[i]
        wl.compare_all(self.arr, self.shadow,
                       "op %d: full compare after restarting member %d"
                       % (self.op, i))
        got = self.ctl.status()["members"][i]["state"]
        if got == "failed":
            # A request in flight when the server went (the rebuild, the
            # scrub, the bitmap's writes) fails the member, and so do
            # writes it acknowledged that no flush covered (they may be
            # lost with the server): fair, but not when nothing was in
            # flight and everything written was flushed.
            assert not (idle and not self.bitmap and before == "in_sync" and
                        not unflushed), \
                "member %d (md) was failed after its server restarted while " \
                "the array was idle and flushed" % i
            self.was[i] = before
            self.plugin_failed(i)
            self.counts["member-restart-failed"] += 1
        else:
            assert got in ("in_sync", "rebuilding"), \
                "member %d is %s after its server restarted" % (i, got)
            self.model[i] = got if before == "rebuilding" else before

    def restart(self):
        self.ctl.wait_idle(60)
        st = self.status()
        for i, s in enumerate(self.model):
            if s == "doomed":          # let the plugin meet it, for certain
                self.ctl.ok("fail %d" % i)
                self.model[i] = "failed"
        # A resync still owed on a degraded array (a forced start after a
        # crash keeps it owed until every member is in sync, as md's
        # start_dirty_degraded does) leaves the superblocks active: the
        # next start needs force=true, as md's does.
        owed = bool(st.get("resync_owed")) and \
            any(s != "in_sync" for s in self.model)
        self.arr.stop()                 # a flush: records every failure
        self.start(force=owed)
        self.counts["restart"] += 1
        self.note("restart with %s failed; command line %s"
                  % ([i for i, s in enumerate(self.model) if s == "failed"],
                     [os.path.basename(m.disk) for m in self.arr.members]))
        self.status()

    def crash(self):
        """SIGKILL nbdkit and start it again, with force=true: an md array
        found dirty and degraded is refused without it, as md refuses it.
        Half the time (if the array can take it) a remote member is made
        to fail with EIO first.  A doomed member is met by a write to a
        chunk it holds, so that it fails during a write acknowledged just
        before the kill; it answers again for the restart, which must not
        take it for in sync and must still read that write back (the
        shadow).

        A member the plugin failed with nothing recorded since (no write,
        zero or trim acknowledged, no flush, no change of the member table:
        see __init__) is one whose failure the superblocks need not show
        yet: it failed on a read, or its server restarted after writes no
        flush covered (which it may have lost, as far as the plugin can
        tell).  The plugin holds back the reply to every later write and
        flush until the superblocks record the failure, so such a member
        can differ from the array only by writes acknowledged before it
        failed and never flushed, which a crash may lose anyway; md
        records failures in the background and has the same window.  So
        the restart may find it in sync again (state "back?", or "readd?"
        with a bitmap).  Nothing here loses what a member server
        acknowledged (the servers write to files, and neither their
        restart nor this SIGKILL drops a write), so such a member holds
        every write and the shadow stays exact: a full compare follows.
        The model sees a failure only at a status, and polls status after
        every write, zero, trim and flush while a member is doomed (run),
        so at most one of them lies between the last status that showed
        the member working and the first that showed it failed.  If that
        one failed it, the failure is recorded; if a rebuild, a scrub or
        a bitmap write met the member just after it, it is not; which came
        first cannot be seen from here, so the model takes either: the
        only over-estimate.  A member failed by write_on's write is
        recorded for certain (met_by_write)."""
        self.ctl.wait_idle(60)
        self.status()
        if self.unsafe() < self.tol and self.rng.random() < 0.5:
            cands = [i for i in range(self.n) if self.model[i] == "in_sync"
                     and self.members[i].remote and self.members[i].alive()
                     and self.can_lose(i)]
            if cands:
                i = self.rng.choice(cands)
                self.members[i].fail_reads(True)
                self.members[i].fail_writes(True)
                self.doom(i)
                self.counts["fail-eio-at-crash"] += 1
                self.note("fail member %d by eio, to crash after" % i)
        met = [i for i, s in enumerate(self.model) if s == "doomed"]
        for i in met:
            self.write_on(i)
        self.status()
        self.unrecorded = {i for i, s in enumerate(self.model)
                           if s == "failed" and
                           self.failed_at[i] == self.records}
        for i in self.unrecorded:
            self.counts["unrecorded-at-crash" if
                        self.working_at[i] == self.records else
                        "unrecorded-at-crash-maybe"] += 1
        if self.unrecorded:
            self.note("members %s failed with nothing recorded since"
                      % sorted(self.unrecorded))
        self.arr.kill()
        # The members that just failed answer again: an md array must not
        # take them for in sync (they missed the write), but leave them
        # out or re-add them from the bitmap.
        for i in met:
            m = self.members[i]
            if m.remote and m.alive():
                m.fail_reads(False)
                m.fail_writes(False)
        self.start(force=True)
        self.counts["crash"] += 1
        self.note("crash (SIGKILL) and start with %s failed"
                  % [i for i, s in enumerate(self.model) if s == "failed"])
        before = list(self.model)
        self.status()
        back = [i for i in range(self.n) if before[i] in ("back?", "readd?")
                and self.model[i] in ("in_sync", "rebuilding")]
        if back:
            wl.compare_all(self.arr, self.shadow,
                           "op %d: full compare after members %s came back "
                           "from a crash" % (self.op, back))
        self.ctl.wait_idle(60)          # the resync of an unclean array

    def write_on(self, i):
        """Write a few random pages that member i must take: into a data
        chunk it holds, or into a row whose parity it holds (every member
        holds one or the other in every row; with parity-first or
        parity-last layouts, a parity member holds no data at all).  The
        shadow takes them once acknowledged."""
        arr, rng = self.arr, self.rng
        s = rng.randrange(arr.rows)
        offs = [arr.chunk_offset(s, d) for d in range(arr.dd)]
        mine = [o for o in offs if arr.where(o)[2] == i]
        assert mine or i in arr.row_members(s), \
            "member %d holds nothing of row %d" % (i, s)
        offs = mine or [rng.choice(offs)]
        n = 4096 * rng.randint(1, arr.chunk // 4096)
        data = rng.randbytes(n)
        arr.h.pwrite(data, offs[0])
        self.shadow[offs[0]:offs[0] + n] = data
        self.unflushed = True
        self.recorded()
        if self.model[i] == "doomed":
            self.met_by_write.add(i)
        self.note("wrote %d bytes at %d, on member %d" % (n, offs[0], i))

    def scrub(self):
        st = self.status()
        if st["rebuild"]["running"] or st["scrub"]["running"] or \
                self.unsafe():
            return
        self.ctl.ok("scrub check")
        self.counts["scrub"] += 1
        self.note("scrub check")

    def badsector_members(self):
        return [i for i, m in enumerate(self.members)
                if getattr(m, "plugin", None) == "badsector"]

    def sector_bad(self):
        """A fault appears on a badsector member's data: sectors that
        cannot be read until written ("read"), or cannot be written
        ("write"), or neither ("both"); a few sectors or whole pages,
        anywhere, or under a page another member may not give (RAID-6
        then has two on one page-row).  Only where the model keeps every
        page-row within the tolerance (raidfail_sectors.py).  On an md
        array a write fault goes into the member's bad-block log and the
        member stays in sync (its log has room: write faults over at most
        64 pages, of 512 entries, until a heal); on a raw array nothing can record it, and
        the member is doomed (failed when a write or a rewrite meets the
        fault, as md fails a member without a log)."""
        rng, arr = self.rng, self.arr
        # A background job (scrub, rebuild, resync) that met one of a
        # member's read faults may be between the rewrite that mended the
        # page and the read that checks it: a fault over the page now
        # fails that read, as a sector that goes bad again at once does,
        # and md then lists the page in the member's log, or fails a
        # member that has none.  The pages at risk: those of every read
        # fault while a job runs, mended ones too (the server notes the
        # mend before the read back comes).
        st = self.ctl.status()
        job = st["rebuild"]["running"] or st["scrub"]["running"]
        racing = {i: set().union(*[rs.pages_of(start, n) for start, n, mode, _
                                   in rs.lines_of(self.members[i])
                                   if mode == "read"])
                  for i in self.badsector_members()} if job else {}
        for i in self.badsector_members():
            # Read faults mended whole are gone from the model already:
            # take their lines away, to make room for new ones.
            m = self.members[i]
            m.remove_bad_ranges(rs.mended_lines(m))
        cands = [i for i in self.badsector_members()
                 if self.members[i].alive() and self.model[i] != "failed"
                 and len(self.members[i].bad) < 12]
        if not cands:
            return
        i = rng.choice(cands)
        m = self.members[i]
        mode = "read" if rng.random() < (0.6 if self.md else 0.85) else \
            rng.choice(["write", "both"])
        if mode != "read" and len(self.bad.written[i]) > 64:
            mode = "read"
        doom = mode != "read" and not self.md
        unsafe = self.unsafe_set()
        holders = sorted(self.bad.holders(self.members))
        data0 = self.doff // 512
        data_end = (self.doff + arr.rows * arr.chunk) // 512
        for _ in range(10):
            if holders and rng.random() < 0.3:
                start = rng.choice(holders) * rs.PAGE // 512
            else:
                s = rng.randrange(arr.rows)
                start = data0 + (s * arr.chunk +
                                 rng.randrange(arr.chunk)) // 512
            if rng.random() < 0.6:
                start -= start % 8
                n = 8 * rng.randint(1, 3)
            else:
                n = rng.randint(1, 16)
            n = min(n, data_end - start)
            pages = rs.pages_of(start, n)
            race = pages & racing.get(i, set())
            if self.bad.can_add(i, pages, unsafe, self.members,
                                doom or bool(race and not self.md)):
                break
        else:
            self.counts["sector-bad-refused"] += 1
            return
        m.add_bad_range(start * 512, n * 512, mode)
        if mode != "read":
            self.bad.written[i] |= pages
        if race and self.md:
            self.bad.written[i] |= race         # may be listed
        doom = doom or bool(race and not self.md)
        if doom and self.model[i] in ("in_sync", "rebuilding"):
            self.model[i] = "doomed"
        self.counts["sector-bad-" + mode] += 1
        if race:
            self.counts["sector-bad-racing-job"] += 1
        self.note("bad sectors %d+%d (%s) on member %d (%s), pages %s%s%s"
                  % (start, n, mode, i, self.model[i], sorted(pages),
                     ", racing a job's read-back on %s" % sorted(race)
                     if race else "",
                     ", doomed: no log" if doom else ""))

    def sector_clear(self):
        """Some faults of a member go away (all, or some of its lines):
        its sectors read and write again, holding whatever they held.  A
        page a log lists stays listed: only a write over it clears it."""
        rng = self.rng
        cands = [i for i in self.badsector_members() if self.members[i].bad]
        if not cands:
            return
        i = rng.choice(cands)
        m = self.members[i]
        if rng.random() < 0.5:
            gone = list(m.bad)
        else:
            gone = [line for line in m.bad if rng.random() < 0.5]
        m.remove_bad_ranges(gone)
        self.counts["sector-clear"] += 1
        self.note("faults of member %d gone: %s" % (i, gone))

    def sector_heal(self, final=False):
        """On an array with every member in sync: a scrub check, which
        reads every page that no log lists, must find no mismatch and mend
        every "read" fault's sectors outside the pages a write fault may
        have put in a log (each page mended counted once in the member's
        corrected_reads), and on md arrays put every "both" fault's pages
        in the log.  Then every fault goes away and the pages a log may
        list are written again, from the shadow (heal_by_rewrite) or by a
        scrub repair (heal_by_repair): every log must be empty after, and
        the model forgets the members' bad pages."""
        st = self.ctl.wait_idle(60)
        st = self.status()
        if self.unsafe():
            assert not final, "a heal with members out: %s" % self.model
            return
        healed0 = [rs.healed_sectors(m) for m in self.members]
        corrected0 = [m["corrected_reads"] for m in st["members"]]
        self.ctl.ok("scrub check")
        self.ctl.wait_idle(120)
        st = self.status()
        sc = st["scrub"]
        assert sc["finished"] and sc["mismatch_cnt"] == 0, \
            "op %d: the scrub check of a heal: %s" % (self.op, sc)
        for i, m in enumerate(self.members):
            left = rs.unmended_outside(m, self.bad.written[i])
            assert not left, \
                "op %d: after a scrub check, member %d's sectors %s are " \
                "still unreadable (faults %s)" % (self.op, i, left[:16], m.bad
                                                  if hasattr(m, "bad") else [])
            healed = rs.healed_sectors(m)
            newly = {sec * 512 // rs.PAGE for serial, secs in healed.items()
                     for sec in secs - healed0[i].get(serial, set())}
            got = st["members"][i]["corrected_reads"] - corrected0[i]
            self.counts["scrub-corrected-pages"] += got
            assert got == len(newly), \
                "op %d: a scrub check mended pages %s of member %d, but " \
                "its corrected_reads grew by %d" % (self.op, sorted(newly),
                                                    i, got)
            if self.logs:
                both = rs.both_pages(m)
                listed = st["members"][i]["bad_blocks"]["sectors"]
                self.counts["listed-sectors-at-heal"] += listed
                assert listed >= len(both) * rs.PAGE // 512, \
                    "op %d: member %d's log lists %d sectors after a scrub " \
                    "read its unreadable, unwritable pages %s" % (
                        self.op, i, listed, sorted(both))
        for i in self.badsector_members():
            self.members[i].clear_bad_ranges()
        if self.logs and self.rng.random() < 0.5:
            how = self.heal_by_repair()
        else:
            how = self.heal_by_rewrite()
        if self.logs:
            st = self.status()
            listed = {i: m["bad_blocks"] for i, m in enumerate(st["members"])
                      if m["bad_blocks"]["sectors"]}
            assert not listed, \
                "op %d: logs not empty after every fault went and %s: %s" % (
                    self.op, how, listed)
        for i in range(self.n):
            self.bad.reset(i)
        self.counts["sector-heal"] += 1
        self.note("heal: scrub check clean, every fault gone, %s, logs empty"
                  % how)

    def heal_by_rewrite(self):
        """The rows of every page a log may list, written again from the
        shadow: a write that succeeds takes its pages off the log."""
        rows = sorted({(p * rs.PAGE - self.doff) // self.chunk
                       for w in self.bad.written for p in w})
        row = self.arr.row
        for s in rows:
            self.arr.h.pwrite(bytes(self.shadow[s * row:(s + 1) * row]),
                              s * row)
        self.arr.h.flush()
        self.recorded()
        self.unflushed = False
        self.counts["heal-rewrite"] += 1
        return "rows %s written again" % rows

    def heal_by_repair(self):
        """A scrub repair (md arrays, faults gone): every page a log lists
        is reconstructed from the others, written back and read back, as
        md's repair does; the write takes it off the log.  Exactly those
        pages are unreadable to it (no fault is left to fail a read), each
        one corrected read of its member, and nothing is lost (the model
        kept every page-row within the tolerance) or mismatched."""
        st = self.status()
        listed = [m["bad_blocks"]["sectors"] for m in st["members"]]
        corrected0 = [m["corrected_reads"] for m in st["members"]]
        self.ctl.ok("scrub repair")
        self.ctl.wait_idle(120)
        st = self.status()
        sc = st["scrub"]
        assert sc["finished"] and sc["repair"] and \
            sc["mismatch_cnt"] == 0 and sc["lost_bytes"] == 0 and \
            sc["unreadable_bytes"] == sum(listed) * 512, \
            "op %d: the scrub repair of a heal, logs listing %s sectors: %s" \
            % (self.op, listed, sc)
        per = rs.PAGE // 512
        for i, m in enumerate(st["members"]):
            got = m["corrected_reads"] - corrected0[i]
            assert got * per == listed[i], \
                "op %d: a scrub repair rewrote member %d's %d listed " \
                "sectors, but its corrected_reads grew by %d" % (
                    self.op, i, listed[i], got)
        self.counts["heal-repair"] += 1
        self.counts["heal-repaired-pages"] += sum(listed) // per
        return "a scrub repair rewrote the %d listed pages" % (
            sum(listed) // per)

    def check_scrub(self, st):
        sc = st["scrub"]
        assert sc["mismatch_cnt"] == 0 and sc["bad_data"] == [], \
            "a scrub under writes found mismatches: %s" % sc

    def step(self, what):
        if what == "fail":
            self.fail_one()
        elif what == "replace":
            self.replace_one()
        elif what == "wait":
            self.ctl.wait_idle(60)
            self.note("waited for the rebuild")
        elif what == "compare":
            wl.compare_all(self.arr, self.shadow,
                           "op %d: full compare" % self.op)
            self.counts["full-compare"] += 1
        elif what == "scrub":
            self.scrub()
        elif what == "restart":
            self.restart()
        elif what == "crash":
            self.crash()
        elif what == "member-restart":
            self.restart_member()
        elif what == "readd":
            self.readd_one()
        elif what == "sector-bad":
            self.sector_bad()
        elif what == "sector-clear":
            self.sector_clear()
        elif what == "sector-heal":
            self.sector_heal()

    def run(self, deadline, max_ops):
        rng = self.rng
        self.op = 0
        t0 = time.monotonic()
        while time.monotonic() < deadline and self.op < max_ops:
            self.op += 1
            k = rng.random()
            what = next(s for bound, s in self.steps if k < bound)
            if what == "io":
                c = wl.random_ops(self.arr, rng, self.shadow, 1,
                                  "op %d" % self.op, trace=self.trace)
                self.counts.update(c)
                if c["flush"]:
                    self.unflushed = False
                elif c["write"] or c["zero"] or c["trim"]:
                    self.unflushed = True
                if c["flush"] or c["write"] or c["zero"] or c["trim"]:
                    self.recorded()
                    if "doomed" in self.model:
                        self.status()   # when it failed (see crash)
                continue
            self.step(what)
            self.spot()
            self.check_scrub(self.status())
        return time.monotonic() - t0

    def finish(self):
        """Make the array whole again and check everything."""
        for _ in range(2 * self.n):
            self.status()
            if all(s in ("in_sync", "rebuilding") for s in self.model):
                break
            self.replace_one()
            self.ctl.wait_idle(60)
        st = self.ctl.wait_idle(60)
        st = self.status()
        self.check_scrub(st)
        assert all(s == "in_sync" for s in self.model), self.model
        if self.sectors:
            # The member files hold stale bytes where a log lists a page
            # (a write failed there): raidcheck.py would find those rows'
            # parity wrong.  The heal takes every fault away and writes
            # such rows again, and sees every log empty.
            self.sector_heal(final=True)
        wl.compare_all(self.arr, self.shadow, "final compare")
        self.ctl.ok("scrub check")
        st = self.ctl.wait_idle(60)
        assert st["scrub"]["finished"] and st["scrub"]["mismatch_cnt"] == 0, \
            "final scrub: %s" % st["scrub"]
        self.arr.stop()
        faults.check_members(self.arr, [m.path for m in self.members],
                             self.shadow, "final")

    def report_member_bytes(self, lo, hi):
        """Whether the member file under the first bad byte holds what the
        shadow says (a read path that returned the wrong bytes) or not (a
        member that missed a write, or was rebuilt wrong); and the
        plugin's view of that member."""
        s, _, i, moff = self.arr.where(lo)
        n = min(hi + 1, (lo // self.chunk + 1) * self.chunk) - lo
        m = self.members[i]
        try:
            with open(m.path, "rb") as f:
                f.seek(moff)
                disk = f.read(n)
            faults.log("  member %d's file (%s) at member offset %d: %s"
                       % (i, os.path.basename(m.path), moff,
                          "the shadow's bytes" if disk == self.shadow[lo:lo + n]
                          else "not the shadow's bytes (first 0x%02x)" % disk[0]))
            st = self.ctl.status()
            faults.log("  status of member %d: %s; rebuild: %s"
                       % (i, st["members"][i], st["rebuild"]))
        except Exception as e:
            faults.log("  cannot look at member %d: %s" % (i, e))

    def report_failure(self):
        faults.log("  the last steps before the failure:")
        for h in self.history:
            faults.log("    " + h)
        faults.log("  model: %s" % self.model)
        faults.log("  roles: %s" % [os.path.basename(m.disk) for m in self.members])
        if self.logfile:
            try:
                with open(self.logfile, errors="replace") as f:
                    text = f.read()
                faults.log("  the log of the nbdkit that failed (%s):\n%s"
                       % (self.logfile, text[-4000:]))
            except OSError as e:
                faults.log("  no log of the nbdkit that failed: %s" % e)
        # A member server that died unasked (nothing here kills one the
        # model still counts on) is a finding of its own: say how, and
        # what it logged.
        for i, m in enumerate(self.members):
            proc = getattr(m, "proc", None)
            if proc is None or proc.poll() is None:
                continue
            try:
                with open(m.logfile, errors="replace") as f:
                    text = f.read()
            except OSError as e:
                text = "(no log: %s)" % e
            faults.log("  member %d's server (%s) exited with status %d; "
                       "its log (%s):\n%s" % (i, m.name, proc.returncode,
                                               m.logfile, text[-3000:]))


def run_seed(seed, work, mix, seconds=None, max_ops=None, arrays=None):
    """One seed: every array of ARRAYS (or those named), each for seconds
    or max_ops operations.  Returns {tag: op count}; raises on failure
    after printing what happened."""
    seconds = seconds if seconds is not None else \
        float(os.environ.get("RAID_TEST_SECONDS") or 18)
    if max_ops is not None:
        # The op count decides, not the clock; the sanitizers' runs scale
        # it down and cap it (tests/sanitize/run-test).
        scale = float(os.environ.get("RAID_TEST_OPS_SCALE") or 1)
        cap = int(os.environ.get("RAID_TEST_OPS_MAX") or 0)
        max_ops = max(1, int(max_ops * scale))
        if cap:
            max_ops = min(max_ops, cap)
        deadline_s = 3600.0
    else:
        deadline_s, max_ops = seconds, 20000
    only = arrays or os.environ.get("RAID_TEST_ARRAYS", "").split()
    ops = {}
    faults.log("seed %d, mix %s (replay: RAID_TEST_SEED=%d RAID_TEST_MIX=%s)"
           % (seed, mix, seed, mix))
    os.makedirs(work, exist_ok=True)
    with faults.Harness(work) as hz:
        for tag, level, n, md in ARRAYS:
            if only and tag not in only:
                continue
            rng = random.Random("%d-%s" % (seed, tag))
            r = None
            try:
                r = Run(hz, work, level, n, rng, tag, md, mix)
                faults.log("  %s:" % r.what)
                took = r.run(time.monotonic() + deadline_s, max_ops)
                r.finish()
            except BaseException as e:
                faults.log("FAILED: seed %d, mix %s, array %s%s: %s"
                       % (seed, mix, tag, "" if r is None else
                          ", op %d" % r.op, e))
                if r is not None:
                    m = re.search(r"bad bytes (\d+)\.\.(\d+)", str(e))
                    if m:
                        lo, hi = int(m.group(1)), int(m.group(2))
                        faults.log("  the last changes of bytes %d..%d:" % (lo, hi))
                        for t in [t for t in r.trace
                                  if t[2] <= hi and t[2] + t[3] > lo][-5:]:
                            faults.log("    %s: %s of %d bytes at %d" % t)
                        r.report_member_bytes(lo, hi)
                    r.report_failure()
                else:
                    log = hz.last_array_log()
                    if log:
                        faults.log("  the log of the nbdkit that failed (%s):\n%s"
                               % (log, open(log, errors="replace").read()[-4000:]))
                raise
            ops[tag] = r.op
            faults.log("    %d ops in %.1f s: %s" % (r.op, took, dict(r.counts)))
            faults.log("    every read matched the shadow; final scrub and "
                   "raidcheck.py clean")
    return ops


def parse_regress(path):
    """random-seeds.regress: "SEED [key=value...]  # why" per line."""
    runs = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            run = {"seed": int(line[0])}
            for kv in line[1:]:
                k, _, v = kv.partition("=")
                if k == "mix":
                    if v not in MIXES:
                        sys.exit("%s:%d: unknown mix %s" % (path, lineno, v))
                    run["mix"] = v
                elif k == "arrays":
                    run["arrays"] = v.split(",")
                elif k == "ops":
                    run["max_ops"] = int(v)
                elif k == "seconds":
                    run["seconds"] = float(v)
                else:
                    sys.exit("%s:%d: unknown key %s" % (path, lineno, k))
            runs.append(run)
    return runs


def regress(t, path):
    """Every seed of the file runs, even after one failed: the summary
    names all."""
    runs = parse_regress(path)
    failed = []
    for run in runs:
        seed = run.pop("seed")
        mix = run.pop("mix", None) or mix_for(seed)
        work = os.path.join(t.dir, "seed-%d" % seed)
        try:
            run_seed(seed, work, mix, **run)
        except Exception:
            traceback.print_exc(file=sys.stdout)
            failed.append("%d (mix %s)" % (seed, mix))
            faults._reap_all()
        shutil.rmtree(work, ignore_errors=True)
    if failed:
        raise AssertionError("regression seeds that failed again: %s"
                             % ", ".join(failed))
    faults.log("%d regression seeds of %s passed" % (len(runs), path))


def soak(t, minutes):
    end = time.monotonic() + 60 * minutes
    sysrng = random.SystemRandom()
    seeds, total = 0, collections.Counter()
    while time.monotonic() < end:
        seed = sysrng.randrange(1 << 30)
        mix = mix_for(seed)
        work = os.path.join(t.dir, "seed-%d" % seed)
        try:
            ops = run_seed(seed, work, mix)
        except BaseException:
            faults.log("soak: seed %d (mix %s) FAILED after %d seeds passed; "
                       "replay: RAID_TEST_SEED=%d RAID_TEST_MIX=%s "
                       "make -C tests check TESTS=test-fail-random.py"
                       % (seed, mix, seeds, seed, mix))
            raise
        shutil.rmtree(work, ignore_errors=True)
        seeds += 1
        total[mix] += 1
        total["ops"] += sum(ops.values())
        faults.log("soak: seed %d (%s) passed: %s; %d seeds so far"
                   % (seed, mix, ops, seeds))
    faults.log("soak: %d seeds passed in %g minutes, %d ops; mixes %s"
               % (seeds, minutes, total.pop("ops", 0), dict(total)))


def one(t):
    run_seed(t.seed, os.path.join(t.dir, "seed-%d" % t.seed),
             mix_for(t.seed))
