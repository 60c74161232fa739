#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The control socket's status is one JSON object with every documented
field, right for the array (level, layout, chunk, size, degraded,
failed, and per member its index, name, state and recovery_offset; the
rebuild's and the scrub's fields), a member path with a quote and a
backslash included; nbdkit-raid-ctl status prints the same object.
"""

import json

import faults
import fail_control

with faults.Test() as hz:
    arr, paths, shadow = fail_control.array(hz)
    ctl, n, chunk, msize = arr.ctl, fail_control.n, fail_control.chunk, \
        fail_control.msize
    st = ctl.status()
    size = arr.h.get_size()
    for k, want in (("level", 6), ("layout", "right-symmetric"),
                    ("chunk", chunk), ("size", size), ("degraded", False),
                    ("failed", 0)):
        assert st.get(k) == want, "status %s is %r, expected %r" % (
            k, st.get(k), want)
    assert len(st["members"]) == n, st["members"]
    for i, m in enumerate(st["members"]):
        assert m["index"] == i and m["name"] == paths[i] and \
            m["state"] == "in_sync" and isinstance(m["recovery_offset"], int), \
            "status member %d: %r" % (i, m)
        assert set(m["io"]) == {"read", "write", "zero", "flush"} and \
            all(set(c) == {"requests", "bytes", "errors"} and
                all(isinstance(v, int) for v in c.values())
                for c in m["io"].values()), "status member %d io: %r" % (
                    i, m["io"])
    r = st["rebuild"]
    assert r["running"] is False and isinstance(r["member"], int) and \
        isinstance(r["done"], int) and isinstance(r["total"], int) and \
        isinstance(r["mb_per_s"], (int, float)) and \
        isinstance(r["bytes_per_s"], (int, float)) and \
        r["remaining"] == 0 and r["finish_s"] is None, "status rebuild: %r" % r
    s = st["scrub"]
    assert s["running"] is False and isinstance(s["repair"], bool) and \
        isinstance(s["done"], int) and isinstance(s["total"], int) and \
        s["mismatch_cnt"] == 0 and s["bad_data"] == [] and \
        isinstance(s["finished"], bool) and s["remaining"] == 0 and \
        s["finish_s"] is None, "status scrub: %r" % s
    assert set(st["io"]) == {"read", "write", "zero", "trim", "flush"} and \
        st["io"]["write"]["requests"] > 0, "status io: %r" % st["io"]
    faults.log("  status: %s" % json.dumps(st)[:300])

    rc, out, err = faults.ctl_tool(arr.ctlpath, "status")
    assert rc == 0 and json.loads(out) == ctl.status(), \
        "nbdkit-raid-ctl status: exit %d, %r %r" % (rc, out, err)
