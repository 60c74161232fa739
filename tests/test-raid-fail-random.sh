#!/usr/bin/env bash
# A long randomized run of everything at once.  Thousands of operations
# drawn from one seed mix client I/O (writes of every size and alignment,
# FUA, zeroes, trims, flushes, spot reads against the shadow) with member
# failures (fail N on the control socket, EIO from a member server behind
# nbdkit's error filter, a member server killed), replacements (by a local
# file or by a new NBD server, every one full of noise), rebuilds at an
# unlimited or a capped rate, scrubs running under the writes, and
# restarts of nbdkit.  Three arrays: RAID-6 and RAID-5 in raw mode, where
# a restart gives the failed members as disk=missing, and RAID-6 with md
# superblocks (create=true), where a restart gives every member that can
# still be opened, stale ones included, in a shuffled order: the plugin
# must find the roles and leave the stale members out by itself.  A
# failure is only injected when the array can take it: members that are
# failed, doomed or still rebuilding count against the tolerance.  After
# every control step the array's status must agree with the model, and
# the whole array is compared with the shadow now and then and at the
# end, when every member is replaced, a scrub must find nothing and
# raidcheck.py must find the shadow on the member files.
#
# The seed is printed; RAID_TEST_SEED=N replays the same choices (the
# background rebuild's timing is not replayed).  RAID_TEST_SECONDS=N sets
# the time per array (default 18); RAID_TEST_ARRAYS="r6 r5 r6md" picks
# arrays.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires_python_module nbd
requires_plugin_feature 'raid_control=yes$' 'control socket'
requires_nbdkit_filter error
test_seed

cat > "$tmpdir/randomized.py" <<'EOF'
import collections, os, random, re, sys, time
import faults
import raidfail_lib as rf

seed = int(os.environ["SEED"])
work = os.environ["FAULTS_DIR"]
seconds = float(os.environ.get("RAID_TEST_SECONDS") or 18)
K, M = 1024, 1024 * 1024
msize = 1 * M
LAYOUTS = ["left-asymmetric", "right-asymmetric", "left-symmetric",
           "right-symmetric", "parity-first", "parity-last"]


class Run:
    def __init__(self, hz, level, n, rng, tag, md):
        self.hz, self.level, self.n, self.rng, self.tag = hz, level, n, rng, tag
        self.md = md
        # Half the md arrays get a write-intent bitmap (room for it before
        # the data, small bits, quick clearing), so that kills and restarts
        # go through its resync too.
        self.bitmap = md and rng.random() < 0.5
        self.doff = (64 * K if self.bitmap else 8 * K) if md else 0
        self.starts = 0
        self.tol = 2 if level == 6 else 1
        self.chunk = rng.choice([4 * K, 8 * K, 16 * K])
        self.layout = rng.choice(LAYOUTS)
        self.rate = rng.choice([None, "4M"])
        self.sock = os.path.join(work, "ctl-%s.sock" % tag)
        self.history = collections.deque(maxlen=40)
        self.trace = []           # every change: (op, kind, offset, length)
        self.counts = collections.Counter()
        self.remote_new = 0
        kinds = [rng.choice(["remote", "local"]) for _ in range(n)]
        kinds[rng.randrange(n)] = "remote"
        self.members = [hz.member(self.doff + msize, k) for k in kinds]
        # Our model of each member: in_sync, failed, doomed (an EIO trigger
        # or a dead server the plugin may not have met yet), rebuilding.
        self.model = ["in_sync"] * n
        self.what = "RAID-%d %s, %d members, chunk %d, rebuild-rate %s, %s" % (
            level, self.layout, n, self.chunk, self.rate or "unlimited",
            ("md superblocks and bitmap" if self.bitmap else "md superblocks")
            if md else "raw")
        self.start()
        self.shadow = rf.fill(self.arr.h, rng)
        if md:
            # As with md, a new array's first resync must end before members
            # may fail: if it cannot finish, the array stays unclean, and an
            # unclean degraded array is refused at the next start.
            st = self.ctl.wait_idle(60)
            assert st["scrub"]["resync"] and st["scrub"]["finished"], \
                "the initial resync did not finish: %s" % st["scrub"]

    def note(self, s):
        self.history.append("op %d: %s" % (self.op, s))

    def start(self):
        params = ["control=" + self.sock, "member-timeout=5"]
        if self.rate:
            params.append("rebuild-rate=" + self.rate)
        if self.md and self.starts == 0:
            params.append("create=true")
            if self.bitmap:
                params += ["bitmap-chunk=16K", "bitmap-delay=1"]
        ms = []
        for i, m in enumerate(self.members):
            if self.model[i] != "failed":
                ms.append(m)
            elif self.md and (not m.remote or m.alive()) and \
                    not os.path.exists(getattr(m, "read_trigger", "")):
                # md superblocks: the plugin must see that this member's
                # superblock is stale and leave it out by itself.
                ms.append(m)
            else:
                ms.append(rf.MissingMember())
        if self.md and self.starts:
            # Roles come from the superblocks, not the order (except for
            # create=true, where the order gives them).
            self.rng.shuffle(ms)
        self.arr = rf.array(self.hz, ms, level=self.level, chunk=self.chunk,
                            layout=self.layout, data_offset=self.doff,
                            params=params, metadata="md" if self.md else "none")
        # (Array.members is in command-line order; its geometry helpers
        # need only the count.  Roles are self.members.)
        self.starts += 1
        self.ctl = rf.Control(self.sock)

    def status(self):
        """Status, folded into the model and checked against it."""
        st = self.ctl.status()
        for i, m in enumerate(st["members"]):
            want, got = self.model[i], m["state"]
            if m["name"] != self.members[i].disk and \
                    not (want == "failed" and m["name"] == "missing"):
                raise AssertionError(
                    "member %d is %s (%s), expected %s (%s): roles mixed up"
                    % (i, os.path.basename(m["name"]), got,
                       os.path.basename(self.members[i].disk), want))
            if want == "doomed":
                if got == "failed":
                    self.model[i] = "failed"
                continue
            if want == "rebuilding" and got in ("rebuilding", "in_sync"):
                self.model[i] = got
                continue
            if want == "rebuilding" and got == "failed" and \
                    self.members[i].remote and not self.members[i].alive():
                self.model[i] = "failed"
                continue
            assert got == want, "member %d is %s, expected %s: %s" % (
                i, got, want, st["members"])
        failed = sum(s == "failed" for s in self.model)
        assert st["failed"] == failed, "status failed=%d, model %s" % (
            st["failed"], self.model)
        assert st["degraded"] == any(s != "in_sync" for s in self.model) or \
            "doomed" in self.model, "status degraded=%s, model %s" % (
                st["degraded"], self.model)
        return st

    def unsafe(self):
        return sum(s != "in_sync" for s in self.model)

    def spot(self):
        off, n = rf.pick_range(self.rng, len(self.shadow), self.chunk,
                               self.arr.row)
        rf.check_range(self.arr, self.arr.h, self.shadow, off, n,
                       "op %d: spot read" % self.op)

    def fail_one(self):
        rng = self.rng
        cands = [i for i in range(self.n) if self.model[i] == "in_sync"]
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
            self.model[i] = "failed"
        elif how == "eio":
            m.fail_reads(True)
            m.fail_writes(True)
            self.model[i] = "doomed"
        else:
            m.kill()
            self.model[i] = "doomed"
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
        if self.remote_new < 6 and rng.random() < 0.4:
            new = self.hz.member(self.doff + msize, "remote")
            self.remote_new += 1
        else:
            new = self.hz.member(self.doff + msize, "local")
        rf.noise_file(new.path, self.doff + msize)
        self.ctl.ok("replace %d %s" % (i, new.disk))
        self.members[i] = new
        if old.remote and old.alive():
            old.kill()
        self.model[i] = "rebuilding"
        self.counts["replace-" + ("remote" if new.remote else "local")] += 1
        self.note("replace member %d by %s" % (i, os.path.basename(new.disk)))

    def restart(self):
        self.ctl.wait_idle(60)
        self.status()
        for i, s in enumerate(self.model):
            if s == "doomed":          # let the plugin meet it, for certain
                self.ctl.ok("fail %d" % i)
                self.model[i] = "failed"
        self.arr.stop()
        self.start()
        self.counts["restart"] += 1
        self.note("restart with %s failed; command line %s"
                  % ([i for i, s in enumerate(self.model) if s == "failed"],
                     [os.path.basename(m.disk) for m in self.arr.members]))
        self.status()

    def scrub(self):
        st = self.status()
        if st["rebuild"]["running"] or st["scrub"]["running"] or \
                self.unsafe():
            return
        self.ctl.ok("scrub check")
        self.counts["scrub"] += 1
        self.note("scrub check")

    def check_scrub(self, st):
        sc = st["scrub"]
        assert sc["mismatch_cnt"] == 0 and sc["bad_data"] == [], \
            "a scrub under writes found mismatches: %s" % sc

    def run(self, deadline, max_ops=20000):
        rng = self.rng
        self.op = 0
        t0 = time.monotonic()
        while time.monotonic() < deadline and self.op < max_ops:
            self.op += 1
            k = rng.random()
            if k < 0.80:
                c = rf.random_ops(self.arr, rng, self.shadow, 1,
                                  "op %d" % self.op, trace=self.trace)
                self.counts.update(c)
                continue
            if k < 0.85:
                self.fail_one()
            elif k < 0.90:
                self.replace_one()
            elif k < 0.92:
                self.ctl.wait_idle(60)
                self.note("waited for the rebuild")
            elif k < 0.94:
                rf.compare_all(self.arr, self.shadow,
                               "op %d: full compare" % self.op)
                self.counts["full-compare"] += 1
            elif k < 0.96:
                self.scrub()
            elif k < 0.97:
                self.restart()
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
        rf.compare_all(self.arr, self.shadow, "final compare")
        self.ctl.ok("scrub check")
        st = self.ctl.wait_idle(60)
        assert st["scrub"]["finished"] and st["scrub"]["mismatch_cnt"] == 0, \
            "final scrub: %s" % st["scrub"]
        self.arr.stop()
        rf.check_members(self.arr, [m.path for m in self.members],
                         self.shadow, "final", work, inprocess=False)


with faults.Harness(work) as hz:
    only = os.environ.get("RAID_TEST_ARRAYS", "").split()
    for tag, level, n, md in (("r6", 6, 6, False), ("r5", 5, 4, False),
                              ("r6md", 6, 5, True)):
        if only and tag not in only:
            continue
        rng = random.Random("%d-%s" % (seed, tag))
        r = Run(hz, level, n, rng, tag, md)
        rf.log("  %s:" % r.what)
        try:
            took = r.run(time.monotonic() + seconds)
            r.finish()
        except BaseException as e:
            m = re.search(r"bad bytes (\d+)\.\.(\d+)", str(e))
            if m:
                lo, hi = int(m.group(1)), int(m.group(2))
                rf.log("  the last changes of bytes %d..%d:" % (lo, hi))
                for t in [t for t in r.trace
                          if t[2] <= hi and t[2] + t[3] > lo][-5:]:
                    rf.log("    %s: %s of %d bytes at %d" % t)
            rf.log("  the last steps before the failure:")
            for h in r.history:
                rf.log("    " + h)
            rf.log("  model: %s" % r.model)
            rf.log("  roles: %s" % [os.path.basename(m.disk) for m in r.members])
            try:
                rf.log("  the plugin's log:\n" + r.arr.log()[-3000:])
            except OSError:
                pass
            raise
        rf.log("    %d ops in %.1f s: %s" % (r.op, took, dict(r.counts)))
        rf.log("    every read matched the shadow; final scrub and raidcheck.py"
               " clean")
EOF

SEED=$seed FAULTS_DIR=$tmpdir PYTHONPATH=$top_srcdir/tests \
    python3 "$tmpdir/randomized.py"
