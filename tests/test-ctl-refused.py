#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The control commands that must be refused are refused with "error:
..." and change nothing (the member table, every member file): fail of a
member that does not exist (out of range, negative, not a number,
missing), unknown commands and arguments, replace of an in-sync member;
and with member 1 failed, replace with a member that is too small (the
reply says so, and the file is not written), that does not exist, that
is already another member (by its path or through a symlink), that is
"missing" or an NBD server that is not there, and of members that do
not exist or are in sync.  nbdkit-raid-ctl exits non-zero on a refusal
and on a socket that is not there.
"""

import os

import faults
import fail_control
import workload as wl

with faults.Test() as hz:
    arr, paths, shadow = fail_control.array(hz)
    ctl, n, chunk, msize = arr.ctl, fail_control.n, fail_control.chunk, \
        fail_control.msize
    work = hz.dir
    before = ctl.status()["members"]
    sums = faults.md5s(paths)
    small = fail_control.spare(hz, "small", msize - chunk)
    small_sum = faults.md5(small)
    spare = fail_control.spare(hz, "spare")
    # The ones a lax number parser would take for a member come last, so
    # that one such bug does not hide the others.
    refusals = [
        "fail %d" % n, "fail -1", "fail", "fail 99999999999", "frobnicate",
        "", "scrub sideways", "status now",
        "replace 1 %s" % spare,                 # 1 is in sync
        "replace %d %s" % (n, small),
        "fail abc", "fail 1x", "fail 2 3",
    ]
    problems = []
    for line in refusals:
        reply = ctl.cmd(line)
        faults.log("  %-28r -> %s" % (line.replace(work + "/", ""), reply))
        if not reply.startswith("error: "):
            problems.append("%r was accepted (%r)" % (line, reply))
        now = ctl.status()["members"]
        if now != before:
            problems.append("%r changed the members: %s"
                            % (line, [m["state"] for m in now]))
            break
    if problems:
        raise AssertionError("refusals: " + "; ".join(problems))
    assert faults.md5s(paths) == sums, "a refused command wrote to a member"
    rc, out, err = faults.ctl_tool(arr.ctlpath, "fail", str(n))
    assert rc != 0 and "error" in out + err, \
        "nbdkit-raid-ctl fail %d: exit %d, %r %r" % (n, rc, out, err)
    rc, out, err = faults.ctl_tool(os.path.join(work, "no-such.sock"),
                                   "status")
    assert rc != 0, "nbdkit-raid-ctl on a missing socket: exit 0"

    # Member 1 fails; the array serves it from parity.
    ctl.ok("fail 1")
    st = ctl.status()
    assert st["degraded"] is True and st["failed"] == 1 and \
        [m["state"] for m in st["members"]] == \
        ["in_sync", "failed", "in_sync", "in_sync", "in_sync"], \
        "after fail 1: %s" % st
    wl.compare_all(arr, shadow, "after fail 1")
    wl.random_ops(arr, hz.rng, shadow, 40, "degraded")
    arr.h.flush()
    before = ctl.status()["members"]
    sums = faults.md5s(paths)
    link2 = os.path.join(work, "link-to-m2")
    os.symlink(paths[2], link2)
    for line in ("replace 1 %s" % small,
                 "replace 1 %s" % os.path.join(work, "no-such-file"),
                 "replace 1 %s" % paths[2],
                 "replace 1 %s" % link2,
                 "replace 1 missing",
                 "replace 1 nbd+unix:///?socket=%s"
                 % os.path.join(work, "none.sock"),
                 "replace %d %s" % (n, spare),
                 "replace -1 %s" % spare,
                 "replace 0 %s" % spare):
        reply = ctl.error(line)
        faults.log("  %-28r -> %s" % (line.replace(work + "/", ""), reply))
        if line.startswith("replace 1 " + small):
            assert "small" in reply, \
                "the refusal of a too-small member does not say so: %r" % reply
        assert ctl.status()["members"] == before, \
            "%r changed the members: %s" % (line, ctl.status()["members"])
    assert faults.md5(small) == small_sum, \
        "a refused replacement wrote to its file"
    assert faults.md5s(paths) == sums, "a refused replace wrote to a member"
    wl.compare_all(arr, shadow, "after the refusals")
