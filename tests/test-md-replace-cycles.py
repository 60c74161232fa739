#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Thousands of fail/replace cycles on an md array.

Before the fix every replacement took the highest dev_number plus one:
past 384 the array could not be assembled ("impossible max_dev"), and
further on the superblock writes ran past dev_roles[] and the 4 KiB
buffer.  md gives a new member the lowest free slot, and so must the
plugin; this drives one array through RAID_TEST_CYCLES (default 2000)
fail + replace cycles from this one process over the control socket, and
every RAID_TEST_RESTART_EVERY (default 250) cycles, and at the end, stops
nbdkit and checks, with tests that share no code with the plugin:

  - every member's superblock is one md accepts (tests/lib/mdsb.py: checksum,
    max_dev <= 384, dev_number < max_dev, no role held twice), all agree,
    max_dev stays small (the slots are reused), and each member's own
    dev_roles gives it the role this test put it in;
  - the members in role order are a correct RAID-5 holding the shadow
    (raidcheck.py, as a program);
  - a start from the superblocks alone, members shuffled and the last
    replaced member given too (its superblock names a slot a newer member
    may now hold), assembles the same array, leaves the old member out as
    stale, and serves the shadow byte for byte.

Every 20th cycle the failure is an error from a member server that is
going away (ESHUTDOWN from nbdkit's error filter: an EIO would be the
medium's, corrected or recorded in the bad-block log, not a failure) met
by a read, so that the replace comes before any update has recorded the
failure: the case where reusing the slot at once would let the old
member pass for its successor.  Some cycles write a little
(shadow kept), so the superblocks also go active and clean between them.
No bitmap: its writes would double the cost of each update here, and
the test-bitmap-*.py tests cover it.  RAID_TEST_CYCLES and
RAID_TEST_RESTART_EVERY change the counts, RAID_TEST_SEED replays it.
"""

import os

import faults
import mdsb
import raidcheck
import workload as wl

K = 1024
LEVEL, N, CHUNK, DOFF = 5, 4, 4 * K, 64 * K
MSIZE = DOFF + 16 * CHUNK           # 16 rows
CYCLES = int(os.environ.get("RAID_TEST_CYCLES") or 2000)
RESTART_EVERY = int(os.environ.get("RAID_TEST_RESTART_EVERY") or 250)


def serve(hz, members, params=()):
    """The raid plugin serving one md array: no geometry parameters after
    the first start (the superblocks say it all)."""
    return hz.array(members, level=None, chunk=None, layout=None,
                    data_offset=None, control=True, params=list(params))


def stop(srv):
    status = srv.stop(grace=10)
    if status != 0:
        raise AssertionError("nbdkit exited with %s:\n%s"
                             % (status, srv.log()))


def offset_on(role, row):
    """An array offset whose data lies on member `role` in `row`."""
    p, q, data = raidcheck.row_layout(LEVEL, "ls", N, row)
    if role not in data:
        return None
    return row * (N - 1) * CHUNK + data.index(role) * CHUNK


def check_superblocks(roles, stale, what):
    """mdsb's verdict on the members' superblocks; returns max_dev."""
    sbs = [mdsb.read(m.path) for m in roles]
    for m, sb in zip(roles, sbs):
        problems = mdsb.check(sb)
        assert not problems, "%s: %s: %s" % (what, m.path, problems)
    ref = sbs[0]
    for m, sb in zip(roles, sbs):
        for f in ("set_uuid", "events", "max_dev", "dev_roles", "raid_disks"):
            assert sb[f] == ref[f], "%s: %s: %s %r, member 0 has %r" % (
                what, m.path, f, sb[f], ref[f])
    for i, (m, sb) in enumerate(zip(roles, sbs)):
        assert mdsb.role(sb) == i, "%s: %s has role %r by its superblock, " \
            "the test put it in role %d (dev_number %d, dev_roles %r)" % (
                what, m.path, mdsb.role(sb), i, sb["dev_number"],
                sb["dev_roles"])
    numbers = [sb["dev_number"] for sb in sbs]
    assert len(set(numbers)) == N, "%s: dev_numbers %r" % (what, numbers)
    # Lowest free slot: the roles' slots stay close to raid_disks.
    assert ref["max_dev"] <= 2 * N, "%s: max_dev %d after reuse" % (
        what, ref["max_dev"])
    if stale:
        old = mdsb.read(stale.path)
        assert old["events"] + 1 < ref["events"], \
            "%s: the replaced member %s has events %d, the array %d: it " \
            "would be taken as in sync" % (what, stale.path, old["events"],
                                           ref["events"])
    return ref["max_dev"], numbers


def main(hz):
    rng = hz.rng
    faults.log("%d cycles, restart every %d" % (CYCLES, RESTART_EVERY))
    fresh = [0]

    def new_local():
        fresh[0] += 1
        m = faults.Member(hz, "r%d" % fresh[0], MSIZE, remote=False)
        return m

    remote = hz.member(MSIZE, "remote", error="ESHUTDOWN")
    roles = [new_local() for _ in range(N - 1)] + [remote]
    srv = hz.array(roles, level=LEVEL, chunk=CHUNK, layout=None,
                   data_offset=DOFF, control=True,
                   params=["create=true", "bitmap=none"])
    srv.ctl.wait_idle(60)                   # the new array's first resync
    shadow = bytearray(wl.fill(srv.h, rng, step=64 * K))
    retired_local = None
    counts = {"fail-ctl": 0, "fail-eio": 0, "replace-local": 0,
              "replace-remote": 0, "restart": 0}
    max_devs = set()

    for c in range(CYCLES):
        eio = c % 20 == 0 and remote in roles
        if eio:
            k = roles.index(remote)
            row = next(r for r in range(16) if offset_on(k, r) is not None)
            off = offset_on(k, row)
            remote.fail_reads(True)
            got = srv.h.pread(CHUNK, off)
            remote.fail_reads(False)
            assert got == shadow[off:off + CHUNK], \
                "cycle %d: degraded read after ESHUTDOWN differs" % c
            st = srv.ctl.states()
            assert st[k] == "failed", "cycle %d: ESHUTDOWN did not fail member " \
                "%d: %r" % (c, k, st)
            counts["fail-eio"] += 1
        else:
            # Keep the remote member in for its EIO cycle.
            k = rng.choice([i for i in range(N) if roles[i] is not remote])
            srv.ctl.ok("fail %d" % k)
            counts["fail-ctl"] += 1
        old = roles[k]
        if remote not in roles and c % 20 == 10:
            new = remote                    # back again, rebuilt from scratch
            counts["replace-remote"] += 1
        else:
            new = new_local()
            counts["replace-local"] += 1
        srv.ctl.ok("replace %d %s" % (k, new.disk))
        roles[k] = new
        srv.ctl.wait_idle(60, poll=0.002)
        # A little I/O now and then: the array goes active and clean.
        if c % 4 == 0:
            off = rng.randrange(len(shadow) - 512)
            data = rng.randbytes(rng.randint(1, 512))
            srv.h.pwrite(data, off)
            shadow[off:off + len(data)] = data
        if c % 12 == 0:
            srv.h.flush()
        if c % 50 == 0:
            assert srv.h.pread(len(shadow), 0) == shadow, \
                "cycle %d: the array differs from the shadow" % c
        if old is not remote:
            if retired_local and retired_local is not old:
                os.unlink(retired_local.path)
            retired_local = old

        if (c + 1) % RESTART_EVERY == 0 or c + 1 == CYCLES:
            what = "after cycle %d" % (c + 1)
            stop(srv)
            max_dev, numbers = check_superblocks(roles, retired_local, what)
            max_devs.add(max_dev)
            faults.check_members(srv, [m.path for m in roles], shadow, what,
                                 exact=True)
            # From the superblocks alone: shuffled, the stale one included.
            disks = roles + [retired_local]
            rng.shuffle(disks)
            srv = serve(hz, disks)
            log = srv.log()
            assert "%s: its superblock is stale" % retired_local.path in log, \
                "%s: the replaced member was not left out as stale:\n%s" % (
                    what, log)
            names = [m["name"] for m in srv.ctl.status()["members"]]
            assert names == [m.disk for m in roles], \
                "%s: assembled as %r, expected %r" % (
                    what, names, [m.disk for m in roles])
            assert srv.h.pread(len(shadow), 0) == shadow, \
                "%s: the reassembled array differs from the shadow" % what
            counts["restart"] += 1
            faults.log("  %s: dev_numbers %r, max_dev %d, events %d" % (
                what, numbers, max_dev, mdsb.read(roles[0].path)["events"]))

    stop(srv)
    faults.log("ok: %s; max_dev seen %r" % (counts, sorted(max_devs)))


with faults.Test(filters=["error"], timeout=300) as t:
    main(t)
