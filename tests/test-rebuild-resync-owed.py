#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The resync that an unclean shutdown leaves owed runs right after the
rebuild, as md runs it after recovery: an md RAID-5 (create=true, a
write-intent bitmap) killed (SIGKILL) while a rebuild runs under writes
is started again (force=true, since md too refuses a dirty array with a
half-rebuilt member without it); while the rebuild goes on, status says
the resync is owed and waits for it ("resync_owed", "resync_pending_reason":
"rebuild"), and so do nbdkit-raid-ctl's show and metrics; then, with
nothing asked, the resync runs and finishes, and the array is truly
clean: every superblock says clean, status owes nothing, a scrub check
finds no mismatch, and the array reads back as its shadow.

What used to happen: the restart finished the rebuild, then showed every
member in sync and nothing running while the resync was still owed (the
superblocks active) until the next start.
"""

import os
import time

import faults
import mdsb
import workload as wl

K, M = 1024, 1024 * 1024
MSIZE = 4 * M


def restart(arr, *params):
    arr.params = list(params)
    arr.start()


with faults.Test(timeout=120) as t:
    ms = [t.member(MSIZE, "local") for _ in range(4)]
    arr = t.array(ms, level=5, chunk=64 * K, data_offset=None, control=True,
                  params=["create=true", "rebuild-rate=100M"])
    arr.ctl.finished_scrub()
    shadow = wl.fill(arr.h, t.rng)
    arr.stop()

    # A rebuild at 1M/s (3 s), written to, then SIGKILL.
    restart(arr, "rebuild-rate=1M")
    arr.ctl.ok("fail 2")
    spare = os.path.join(t.dir, "spare")
    faults.noise_file(spare, MSIZE)
    arr.ctl.ok("replace 2 " + spare)
    for k in range(8):
        off = t.rng.randrange(0, arr.size - 8192, 4096)
        data = os.urandom(8192)
        arr.h.pwrite(data, off)
        shadow[off:off + len(data)] = data
        time.sleep(0.05)
    assert arr.ctl.status()["rebuild"]["running"], "the rebuild has ended"
    arr.kill()
    assert mdsb.read(ms[0].path)["resync_offset"] != mdsb.CLEAN, \
        "the superblocks should say active after the kill"

    ms[2].path = spare
    restart(arr, "rebuild-rate=1M", "force=true")
    st = arr.ctl.status()
    assert st["rebuild"]["running"], "the rebuild did not resume: %s" % st
    assert st.get("resync_owed") is True and \
        st.get("resync_pending_reason") == "rebuild", \
        "during the rebuild, status does not say that a resync is owed " \
        "after it: resync_owed %r, resync_pending_reason %r" % (
            st.get("resync_owed"), st.get("resync_pending_reason"))
    rc, out, err = faults.ctl_tool(arr.ctlpath, "show")
    assert rc == 0 and "resync owed" in out and "rebuild finishes" in out, \
        "show does not say the resync is owed:\n%s%s" % (out, err)
    rc, out, err = faults.ctl_tool(arr.ctlpath, "metrics")
    for line in ('nbdkit_raid_resync_owed{device="array0"} 1',
                 'nbdkit_raid_resync_pending{device="array0",'
                 'reason="rebuild"} 1'):
        assert line in out.splitlines(), \
            "metrics lack %r:\n%s%s" % (line, out, err)
    faults.log("  during the rebuild: resync owed, after the rebuild")

    # Nothing asked: the rebuild, then the resync, then nothing owed.
    seen = set()
    arr.ctl.wait_idle(60, poll=0.05, during=lambda s: seen.add(
        "resync" if s["scrub"]["running"] and s["scrub"]["resync"] else
        "rebuild" if s["rebuild"]["running"] else "idle"))
    st = arr.ctl.status()
    sc = st["scrub"]
    assert sc["resync"] and sc["finished"] and sc["mismatch_cnt"] == 0 \
        and not st.get("resync_owed", True), \
        "after the rebuild the resync did not run to the end (seen %s): %s" \
        % (sorted(seen), st)
    assert [m["state"] for m in st["members"]] == ["in_sync"] * 4
    for m in ms:
        sb = mdsb.read(m.path)
        assert sb["resync_offset"] == mdsb.CLEAN, \
            "%s: superblock still active after the resync" % m.path
    faults.log("  the rebuild, then the resync (seen: %s): superblocks clean"
               % ", ".join(sorted(seen)))
    arr.ctl.ok("scrub check")
    sc = arr.ctl.finished_scrub()["scrub"]
    assert sc["mismatch_cnt"] == 0, "scrub check: %s" % sc
    wl.compare_all(arr, shadow, "after the rebuild and the resync")
    faults.log("  scrub check: 0 mismatches; the data is the shadow")
