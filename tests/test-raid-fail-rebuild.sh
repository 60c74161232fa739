#!/usr/bin/env bash
# Rebuild while clients write and read without pause.  Four clients on
# their own connections keep writing, zeroing, flushing and reading back
# their own pieces of the array (every stripe is shared) while a member
# is failed, replaced by a file full of noise and rebuilt at a capped
# rate (rebuild-rate), so that the rebuild runs for a few seconds under
# load.  Along the way:
#   RAID-6: a second member (a real server behind nbdkit's error filter)
#           starts failing every request halfway through the rebuild; the
#           rebuild must go on from P+Q, then the second member is
#           replaced and rebuilt too;
#   RAID-5: the member being rebuilt is failed again halfway and replaced
#           by another fresh file: the new rebuild starts over.
# status must show the member rebuilding with a recovery_offset that only
# grows.  Then, still under load, scrub check and scrub repair must find
# mismatch_cnt 0.  No client request may fail, every read must match the
# shadow, and at the end scrub check must find mismatch_cnt 0 and
# raidcheck.py must find every row's parity right on all member files
# and the shadow in them.
#
# RAID_TEST_SEED=N replays the choice of writes (not their interleaving).

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires_python_module nbd
requires_plugin_feature 'raid_control=yes$' 'control socket'
requires_nbdkit_filter error
test_seed

cat > "$tmpdir/rebuild.py" <<'EOF'
import os, random, time
import faults
import raidfail_lib as rf

seed = int(os.environ["SEED"])
work = os.environ["FAULTS_DIR"]
K, M = 1024, 1024 * 1024
msize = 2 * M


class Watch:
    """Polls status until the rebuild is idle, checking that the member
    being rebuilt only moves forward; at `half` (a fraction of the member)
    calls the action once."""

    def __init__(self, ctl, what):
        self.ctl, self.what = ctl, what
        self.last = {}
        self.polls = 0
        self.rebuilding_seen = set()

    def run(self, timeout, half=None, action=None):
        def during(st):
            self.polls += 1
            for m in st["members"]:
                i = m["index"]
                if m["state"] != "rebuilding":
                    self.last.pop(i, None)
                    continue
                self.rebuilding_seen.add(i)
                off = m["recovery_offset"]
                assert off >= self.last.get(i, 0), \
                    "%s: member %d's recovery_offset went back from %d to %d" \
                    % (self.what, i, self.last.get(i, 0), off)
                assert off <= st["rebuild"]["total"], (self.what, st)
                self.last[i] = off
                if self.action and off >= half:
                    act, self.action = self.action, None
                    act()
            return st
        self.action = action
        return self.ctl.wait_idle(timeout, poll=0.02, during=during)


t0 = time.monotonic()
with faults.Harness(work) as hz:
    # ---- RAID-6: a second member fails in the middle of the rebuild.
    what = "RAID-6 left-symmetric, 6 members, chunk 16K"
    sock = os.path.join(work, "ctl6.sock")
    arr = hz.array(["remote", "local", "remote", "local", "remote", "local"],
                   member_size=msize, level=6, chunk=16 * K,
                   layout="left-symmetric",
                   params=["control=" + sock, "rebuild-rate=1M",
                           "member-timeout=5"])
    ctl = rf.Control(sock)
    rng = random.Random(seed)
    shadow = rf.fill(arr.h, rng)
    paths = [m.path for m in arr.members]
    with rf.Load(arr, shadow, 4, seed, what) as load:
        time.sleep(0.3)
        ctl.ok("fail 1")
        time.sleep(0.3)
        paths[1] = os.path.join(work, "new6-1")
        rf.noise_file(paths[1], msize)
        ctl.ok("replace 1 " + paths[1])
        w = Watch(ctl, what)
        at_fail = []
        def second_failure():
            at_fail.append(load.total())
            arr.members[4].fail_writes(True)
            arr.members[4].fail_reads(True)
        st = w.run(60, half=msize // 2, action=second_failure)
        assert at_fail, "%s: the rebuild never reached half way" % what
        assert 1 in w.rebuilding_seen, "%s: member 1 never seen rebuilding" % what
        assert [m["state"] for m in st["members"]] == \
            ["in_sync"] * 4 + ["failed", "in_sync"], \
            "%s: after the first rebuild: %s" % (what, st["members"])
        rf.expect_log(arr, "member %s failed" % arr.members[4].disk, what)
        paths[4] = os.path.join(work, "new6-4")
        rf.noise_file(paths[4], msize)
        ctl.ok("replace 4 " + paths[4])
        tr = time.monotonic()
        st = w.run(60)
        tr = time.monotonic() - tr
        # rebuild-rate=1M: 2 MiB take 2 s; allow for coarse sleeps.
        assert tr >= 1.6, "%s: rebuilt 2 MiB in %.2f s despite " \
            "rebuild-rate=1M" % (what, tr)
        assert 4 in w.rebuilding_seen, "%s: member 4 never seen rebuilding" % what
        assert not st["degraded"] and \
            all(m["state"] == "in_sync" for m in st["members"]), \
            "%s: after both rebuilds: %s" % (what, st)
        # Scrubs race the clients' writes: with rows locked right, a
        # check finds nothing and a repair changes nothing.
        for mode in ("check", "repair"):
            ctl.ok("scrub " + mode)
            sc = ctl.wait_idle(60)["scrub"]
            assert sc["finished"] and sc["mismatch_cnt"] == 0, \
                "%s: scrub %s under writes: %s" % (what, mode, sc)
    rf.log("  %s: %d client requests during %.1f s of rebuilds (%s), "
           "%d status polls; member 4 rebuilt in %.1f s at rebuild-rate=1M"
           % (what, load.total(), time.monotonic() - t0, load.counts(),
              w.polls, tr))
    rf.compare_all(arr, shadow, what + ": after the rebuilds")
    ctl.ok("scrub check")
    st = ctl.wait_idle(60)["scrub"]
    assert st["finished"] and st["mismatch_cnt"] == 0, \
        "%s: scrub after the rebuilds: %s" % (what, st)
    arr.stop()
    rf.check_members(arr, paths, shadow, what, work, inprocess=False)
    rf.log("  %s: scrub and raidcheck.py find every row right" % what)

    # ---- RAID-5: the member being rebuilt fails again and is replaced.
    t1 = time.monotonic()
    what = "RAID-5 right-symmetric, 4 members, chunk 8K"
    sock = os.path.join(work, "ctl5.sock")
    members = [hz.member(msize, "local") for _ in range(4)]
    arr = rf.array(hz, members, level=5, chunk=8 * K, layout="right-symmetric",
                   params=["control=" + sock, "rebuild-rate=2M"])
    ctl = rf.Control(sock)
    shadow = rf.fill(arr.h, rng)
    paths = [m.path for m in members]
    with rf.Load(arr, shadow, 4, seed + 1, what) as load:
        time.sleep(0.3)
        ctl.ok("fail 0")
        paths[0] = os.path.join(work, "new5-0a")
        rf.noise_file(paths[0], msize)
        ctl.ok("replace 0 " + paths[0])
        w = Watch(ctl, what)
        again = []
        def fail_again():
            again.append(w.last.get(0))
            ctl.ok("fail 0")
        st = w.run(60, half=msize // 2, action=fail_again)
        assert again, "%s: the rebuild never reached half way" % what
        assert st["members"][0]["state"] == "failed", \
            "%s: member 0 failed during its rebuild: %s" % (what, st["members"])
        paths[0] = os.path.join(work, "new5-0b")
        rf.noise_file(paths[0], msize)
        ctl.ok("replace 0 " + paths[0])
        first = ctl.status()["members"][0]
        assert first["name"] == paths[0] and \
            first["state"] in ("rebuilding", "in_sync") and \
            (first["state"] == "in_sync" or first["recovery_offset"] < again[0]), \
            "%s: the second replacement did not start over: %s" % (what, first)
        st = w.run(60)
        assert not st["degraded"] and \
            all(m["state"] == "in_sync" for m in st["members"]), \
            "%s: after the second rebuild: %s" % (what, st)
        # Scrubs race the clients' writes: with rows locked right, a
        # check finds nothing and a repair changes nothing.
        for mode in ("check", "repair"):
            ctl.ok("scrub " + mode)
            sc = ctl.wait_idle(60)["scrub"]
            assert sc["finished"] and sc["mismatch_cnt"] == 0, \
                "%s: scrub %s under writes: %s" % (what, mode, sc)
    rf.log("  %s: %d client requests during %.1f s of rebuilds (%s)"
           % (what, load.total(), time.monotonic() - t1, load.counts()))
    rf.compare_all(arr, shadow, what + ": after the rebuild")
    ctl.ok("scrub check")
    st = ctl.wait_idle(60)["scrub"]
    assert st["finished"] and st["mismatch_cnt"] == 0, \
        "%s: scrub after the rebuild: %s" % (what, st)
    arr.stop()
    rf.check_members(arr, paths, shadow, what, work, inprocess=False)
    rf.log("  %s: scrub and raidcheck.py find every row right" % what)
rf.log("  %.1f s" % (time.monotonic() - t0))
EOF

SEED=$seed FAULTS_DIR=$tmpdir PYTHONPATH=$top_srcdir/tests \
    python3 "$tmpdir/rebuild.py"
