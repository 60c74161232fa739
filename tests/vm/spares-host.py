#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Host side of test-vm-md-spares.sh: the plugin's half of md's hot
spares, both ways.

    spares-host.py make DIR PATGEN
    spares-host.py takeover DIR PATGEN DISK...

make (the plugin to md): a RAID-5 of 3 members of 8 MiB and one spare
(spare=), made by the plugin (create=true, md v1.2, 64 KiB chunks); its
status must list the spare, waiting.  Once the start-up resync is done,
the whole array is written with patgen's seed 1 and the plugin stopped
cleanly.  Left in DIR: roles.txt (the member file of each role, role 0
first, then the spare's), size.txt (the array's size in sectors).

takeover (md to the plugin): the members of an array mdadm made with a
spare (-x 1), DISK... in any order, the spare among them, assembled from
their superblocks alone.  The status must list the spare (its disk,
waiting) and three members in sync; "fail 0" on the control socket, and
with no other command the spare must take role 0 and be rebuilt
(the log says so); then every sector must read as patgen's seed 1 and a
scrub check must count 0 mismatches, and the spare's superblock must
name role 0 in its own slot (mdsb.py).  Left in DIR: status-before.json,
status-after.json.

Exits non-zero, with a traceback, on any failure.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import faults  # noqa: E402
import mdsb  # noqa: E402
import readd  # noqa: E402

K, M = 1024, 1024 * 1024
MSIZE, CHUNK = 8 * M, 64 * K
SEED = 1


def pattern(patgen, sectors, scratch):
    """Sectors 0..sectors-1 of patgen's seed SEED, as bytes."""
    open(scratch, "wb").close()
    subprocess.check_call([patgen, str(SEED), "0", str(sectors), scratch])
    with open(scratch, "rb") as f:
        data = f.read()
    os.unlink(scratch)
    return data


def spares_listed(st):
    return [(s["name"], s["state"]) for s in st["spares"]]


def dump(st, path):
    with open(path, "w") as f:
        json.dump(st, f, indent=1)


def make(hz, out, patgen):
    members = [hz.member(MSIZE, "local") for _ in range(3)]
    spare = hz.member(MSIZE, "local")
    arr = hz.array(members, level=5, chunk=CHUNK, layout=None,
                   data_offset=None, control=True,
                   params=["create=true", "spare=" + spare.disk])
    arr.ctl.finished_scrub()
    st = arr.ctl.status()
    assert spares_listed(st) == [(spare.disk, "spare")], st["spares"]
    sectors = arr.size // 512
    data = pattern(patgen, sectors, os.path.join(out, "pattern"))
    for off in range(0, arr.size, M):
        arr.h.pwrite(data[off:off + M], off)
    arr.h.flush()
    assert arr.stop() == 0, "nbdkit did not stop cleanly"
    with open(os.path.join(out, "roles.txt"), "w") as f:
        print(*(m.path for m in members + [spare]), sep="\n", file=f)
    with open(os.path.join(out, "size.txt"), "w") as f:
        print(sectors, file=f)
    faults.log("pm: %d sectors written, spare %s listed as a spare"
               % (sectors, spare.disk))


def takeover(hz, out, patgen, disks):
    members = [faults.FileMember(d) for d in disks]
    arr = hz.array(members, level=None, chunk=None, layout=None,
                   data_offset=None, control=True)
    st = arr.ctl.status()
    dump(st, os.path.join(out, "status-before.json"))
    spare = [name for name, _ in spares_listed(st)]
    assert len(spare) == 1 and spares_listed(st) == [(spare[0], "spare")], \
        "md's spare is not listed as a spare: %s" % st["spares"]
    assert [m["state"] for m in st["members"]] == ["in_sync"] * 3, \
        st["members"]
    faults.log("md: assembled, members %s, spares %s"
               % ([m["name"] for m in st["members"]], spares_listed(st)))
    spare_dev = mdsb.read(spare[0])["dev_number"]

    arr.ctl.ok("fail 0")

    def rebuilt():
        m = arr.ctl.status()["members"][0]
        return m.get("from_spare") and m["state"] == "in_sync" and \
            m["name"] == spare[0]
    readd.wait_until(rebuilt, 120, "md: the spare takes role 0, rebuilt")
    arr.expect_log("hot spare %s takes its role" % spare[0], "md")
    st = arr.ctl.status()
    dump(st, os.path.join(out, "status-after.json"))
    assert st["spares"] == [], st["spares"]
    faults.log("md: after fail 0: members %s"
               % [(m["name"], m["state"]) for m in st["members"]])

    want = pattern(patgen, arr.size // 512, os.path.join(out, "pattern"))
    for off in range(0, len(want), M):
        got = arr.h.pread(min(M, len(want) - off), off)
        if got != want[off:off + len(got)]:
            bad = next(i for i in range(len(got))
                       if got[i] != want[off + i])
            raise AssertionError("md: sector %d does not read as written"
                                 % ((off + bad) // 512))
    faults.log("md: every sector of %d reads as the pattern"
               % (len(want) // 512))
    arr.ctl.ok("scrub check")
    sc = arr.ctl.finished_scrub()["scrub"]
    faults.log("md: scrub check: mismatch_cnt %d" % sc["mismatch_cnt"])
    assert sc["mismatch_cnt"] == 0, sc
    assert arr.stop(grace=30) == 0, "nbdkit did not stop cleanly"
    sb = mdsb.read(spare[0])
    faults.log("md: the spare's superblock: dev_number %d, role %d, "
               "events %d" % (sb["dev_number"],
                              sb["dev_roles"][sb["dev_number"]],
                              sb["events"]))
    assert sb["dev_number"] == spare_dev and \
        sb["dev_roles"][spare_dev] == 0, sb["dev_roles"][:8]


cmd, out, patgen = sys.argv[1:4]
os.makedirs(out, exist_ok=True)
with faults.Harness(out) as hz:
    if cmd == "make":
        make(hz, out, patgen)
    else:
        takeover(hz, out, patgen, sys.argv[4:])
