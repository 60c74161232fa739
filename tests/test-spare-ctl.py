#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Hot spares on the control socket: add-spare PATH and remove-spare N,
what they refuse, and what show and metrics say.

RAID-6 md array (create=true), no spare.  Refused, each with a message
naming the disk and writing nothing to it or to any member: a disk of
another md array, one too small, a member of this array, the same spare
twice; remove-spare of a spare that is not there.  Accepted: add-spare
of a blank disk (through nbdkit-raid-ctl, a relative path): it carries
the array's superblock with the spare's role (mdsb.py), status, show and
metrics (node_md_disks{state="spare"} 1) say so; remove-spare 0 takes it
out (metrics 0), and added again it keeps its dev_number.  A re-added
spare then takes a failed role as one given at start would.
"""

import os

import faults
import mdsb
import spares

K, M = 1024, 1024 * 1024

with faults.Test(timeout=150) as t:
    c = spares.Case(t, level=6, n=5, nspares=0)
    ctl = c.ctl

    def refused(line, disk, *words):
        before = faults.md5s(c.paths + [disk])
        spares_before = ctl.status()["spares"]
        r = ctl.error(line)
        for w in words:
            assert w in r, "%r: the reply does not say %r: %s" % (line, w, r)
        assert faults.md5s(c.paths + [disk]) == before, \
            "%r: a member file or the disk changed" % line
        assert ctl.status()["spares"] == spares_before, line
        return r

    # Another array's disk: a member of a second md array.
    other = [t.member(6 * M, "local") for _ in range(4)]
    a2 = t.array(other, level=5, chunk=64 * K, layout=None,
                 data_offset=None, params=["create=true"])
    a2.stop(grace=30)
    foreign = other[0].path
    refused("add-spare " + foreign, foreign, foreign,
            "an md superblock of another array")
    small = os.path.join(t.dir, "small")
    with open(small, "wb") as f:
        f.truncate(2 * M)
    refused("add-spare " + small, small, small, "too small")
    refused("add-spare " + c.paths[0], c.paths[0], c.paths[0],
            "already member 0")
    r = ctl.error("remove-spare 0")
    assert "no such spare" in r, r

    blank = os.path.join(t.dir, "blank")
    with open(blank, "wb") as f:
        f.truncate(6 * M)
    cwd = os.getcwd()
    os.chdir(t.dir)
    rc, out, err = faults.ctl_tool(c.arr.ctlpath, "add-spare", "blank")
    os.chdir(cwd)
    assert rc == 0 and out.strip() == "ok", (rc, out, err)
    st = ctl.status()
    assert [(s["name"], s["state"]) for s in st["spares"]] == \
        [(blank, "spare")], st["spares"]
    sb = mdsb.read(blank)
    members_sb = mdsb.read(c.paths[0])
    assert sb["set_uuid"] == members_sb["set_uuid"] and \
        sb["events"] == members_sb["events"] and mdsb.role(sb) is None and \
        sb["dev_roles"][sb["dev_number"]] == 0xffff, \
        "the spare's superblock: %s" % {k: sb[k] for k in (
            "dev_number", "events")}
    refused("add-spare " + blank, blank, "is spare 0 already")
    rc, out, _ = faults.ctl_tool(c.arr.ctlpath, "show")
    assert "S0" in out and blank in out and "spare" in out, out
    rc, out, _ = faults.ctl_tool(c.arr.ctlpath, "metrics", "md9")
    assert 'node_md_disks{device="md9",state="spare"} 1' in out, out

    ctl.ok("remove-spare 0")
    assert ctl.status()["spares"] == []
    rc, out, _ = faults.ctl_tool(c.arr.ctlpath, "metrics", "md9")
    assert 'node_md_disks{device="md9",state="spare"} 0' in out, out
    ctl.ok("add-spare " + blank)
    assert mdsb.read(blank)["dev_number"] == sb["dev_number"], \
        "added again, the spare keeps its dev_number"

    ctl.ok("fail 4")
    c.spares = [faults.FileMember(blank)]
    c.takeover(4, 60, "the spare added by add-spare takes role 4")
    c.check_end("after add-spare and the takeover")
