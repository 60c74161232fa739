#!/usr/bin/env bash
# A member fails in the middle of a write burst, and no acknowledged
# write is lost.  Eight clients, each with its own connection, write,
# zero, flush and read back their own pieces of the array (dealt round
# robin, so they share every stripe) as fast as they can.  The members are
# real nbdkit servers (faults.py: the file plugin behind the error
# filter).  Midway a member starts failing every request with EIO; for
# RAID-6 a second member's server is later killed outright.  The shadow
# is updated only when a request succeeds; since the array stays within
# its tolerance, no request may fail at all, every acknowledged write
# must read back, during the burst and after it, and the failed members
# must be named in the log.  With the control socket the failed members
# are then replaced and rebuilt, and raidcheck.py checks every member
# file against the shadow; without it the array is restarted degraded
# and read again.
#
# RAID_TEST_SEED=N replays the choice of writes (not their interleaving).

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires_python_module nbd
if ! nbdkit --filter=error null --dump-plugin >/dev/null 2>&1; then
    echo "$0: SKIP: nbdkit's error filter is not installed"
    exit 77
fi

test_seed

cat > "$tmpdir/burst.py" <<'EOF'
import os, random, threading, time
import nbd
import faults
import raidfail_lib as rf

seed = int(os.environ["SEED"])
work = os.environ["FAULTS_DIR"]
K = 1024
nclients = 8
phase_s = 1.5
have_ctl = rf.plugin_feature("control")

# level, members, layout, chunk, faults: (how, member) applied one per
# phase after a first phase with every member healthy.
configs = [
    (5, 4, "left-symmetric",  16 * K, [("eio", 2)]),
    (6, 6, "right-asymmetric", 8 * K, [("eio", 1), ("kill", 4)]),
    (6, 5, "parity-first",     4 * K, [("eio-read", 0), ("eio", 3)]),
]


class Client(threading.Thread):
    def __init__(self, arr, ci, pieces, shadow, stop):
        super().__init__()
        self.arr, self.ci, self.pieces = arr, ci, pieces
        self.shadow, self.stop = shadow, stop
        self.rng = random.Random(seed * 1000 + ci)
        self.h = arr.connect()
        self.errors = []          # (op, off, n, errno)
        self.done = {"write": 0, "zero": 0, "read": 0, "flush": 0}
        self.exc = None

    def run(self):
        try:
            self.loop()
        except BaseException as e:
            self.exc = e

    def loop(self):
        rng, shadow, h = self.rng, self.shadow, self.h
        while not self.stop.is_set():
            poff, pn = rng.choice(self.pieces)
            if rng.random() < 0.3:
                off, n = poff, pn
            else:
                a = rng.randrange(pn)
                off, n = poff + a, rng.randint(1, pn - a)
            k = rng.random()
            try:
                if k < 0.7:
                    data = rng.randbytes(n)
                    h.pwrite(data, off,
                             nbd.CMD_FLAG_FUA if rng.random() < 0.1 else 0)
                    shadow[off:off + n] = data
                    self.done["write"] += 1
                elif k < 0.8:
                    h.zero(n, off)
                    shadow[off:off + n] = bytes(n)
                    self.done["zero"] += 1
                elif k < 0.97:
                    # Only this client writes here: it must be exact.
                    rf.check_range(self.arr, h, shadow, poff, pn,
                                   "client %d: read-back during the burst"
                                   % self.ci)
                    self.done["read"] += 1
                else:
                    h.flush()
                    self.done["flush"] += 1
            except nbd.Error as e:
                # Its bytes are now old or new: adopt what is there, so
                # that one failure is reported once, not at every read.
                self.errors.append((["write", "zero", "read", "flush"]
                                    [(k >= 0.7) + (k >= 0.8) + (k >= 0.97)],
                                    off, n, e.errno or str(e)))
                try:
                    shadow[poff:poff + pn] = h.pread(pn, poff)
                except nbd.Error:
                    pass

    def total(self):
        return sum(self.done.values())


t0 = time.monotonic()
with faults.Harness(work) as hz:
    for ci, (level, n, layout, chunk, flist) in enumerate(configs):
        rng = random.Random(seed * 100 + ci)
        what = "RAID-%d %s, %d members, chunk %d" % (level, layout, n, chunk)
        ctlpath = os.path.join(work, "ctl%d.sock" % ci)
        params = ["member-timeout=5"]
        if have_ctl:
            params.append("control=" + ctlpath)
        arr = hz.array(["remote"] * n, member_size=512 * K, level=level,
                       chunk=chunk, layout=layout, params=params)
        shadow = rf.fill(arr.h, rng)
        size = len(shadow)

        # Pieces of 1 byte to 2 rows, dealt round robin.
        pieces, off = [], 0
        while off < size:
            k = rng.random()
            pn = (rng.randint(1, 600) if k < 0.3 else
                  rng.randint(512, 3 * chunk) if k < 0.9 else
                  rng.randint(arr.row, 2 * arr.row))
            pn = min(pn, size - off)
            pieces.append((off, pn))
            off += pn
        stop = threading.Event()
        clients = [Client(arr, i, pieces[i::nclients], shadow, stop)
                   for i in range(nclients)]
        for c in clients:
            c.start()
        phases = []
        try:
            time.sleep(phase_s)
            phases.append(("healthy", sum(c.total() for c in clients)))
            for how, m in flist:
                member = arr.members[m]
                if how == "eio":
                    member.fail_writes(True)
                    member.fail_reads(True)
                elif how == "eio-read":
                    member.fail_reads(True)
                else:
                    member.kill()
                before = sum(c.total() for c in clients)
                time.sleep(phase_s)
                phases.append(("%s on member %d" % (how, m),
                               sum(c.total() for c in clients) - before))
        finally:
            stop.set()
            for c in clients:
                c.join(30)
        for c in clients:
            if c.is_alive():
                raise AssertionError("%s: client %d hangs" % (what, c.ci))
            if c.exc:
                raise c.exc
        errors = [(c.ci,) + e for c in clients for e in c.errors]
        if errors:
            raise AssertionError(
                "%s: %d requests failed although the array stayed within its "
                "tolerance; the first: %s" % (what, len(errors), errors[:5]))
        for name, ops in phases:
            assert ops > 0, "%s: no request completed in phase '%s'" % (
                what, name)
        counts = {}
        for c in clients:
            for k, v in c.done.items():
                counts[k] = counts.get(k, 0) + v

        # Every acknowledged write, through a fresh connection.
        h = arr.connect()
        rf.compare_all(arr, shadow, what + ": after the burst", h=h)
        h.shutdown()
        for c in clients:
            c.h.shutdown()
        failed = [m for how, m in flist]
        for m in failed:
            rf.expect_log(arr, "member %s failed" % arr.members[m].disk, what)

        if have_ctl:
            ctl = rf.Control(ctlpath)
            st = ctl.status()
            states = [x["state"] for x in st["members"]]
            assert states == ["failed" if i in failed else "in_sync"
                              for i in range(n)], \
                "%s: member states %s" % (what, states)
            paths = [x.path for x in arr.members]
            for m in failed:
                paths[m] = os.path.join(work, "new%d-%d" % (ci, m))
                rf.noise_file(paths[m], 512 * K)
                ctl.ok("replace %d %s" % (m, paths[m]))
                ctl.wait_idle(30)
            rf.compare_all(arr, shadow, what + ": rebuilt")
            arr.stop()
            rf.check_members(arr, paths, shadow, what + ": rebuilt", work,
                             inprocess=False)
        else:
            arr.stop()
            for m in failed:
                arr.members[m] = rf.MissingMember()
            arr.params = [p for p in arr.params if not p.startswith("control=")]
            arr.start()
            rf.compare_all(arr, shadow, what + ": restarted degraded")
            arr.stop()
        rf.log("  %s: %s; ops per phase %s; all acknowledged writes read back"
               % (what, counts, phases))
rf.log("  %.1f s" % (time.monotonic() - t0))
EOF

SEED=$seed FAULTS_DIR=$tmpdir PYTHONPATH=$top_srcdir/tests \
    python3 "$tmpdir/burst.py"
