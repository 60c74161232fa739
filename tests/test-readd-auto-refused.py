#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""readd=auto where nothing can be re-added stops nbdkit at start-up,
saying why, and writes nothing: a read-only array; readd= with another
value is refused by name.  (Raw arrays and md arrays without a bitmap
re-add from their record in memory: test-readd-memory.py.)
"""

import subprocess

import faults

K, M = 1024, 1024 * 1024

with faults.Test() as t:
    def refused(params, *words):
        ms = [t.member(4 * M, "local") for _ in range(4)]
        paths = [m.path for m in ms]
        before = faults.md5s(paths)
        cmd = ["nbdkit", "-f", "-U", t.dir + "/refused.sock", t.plugin,
               "level=5", "chunk=64K"] + params + ["disk=" + p for p in paths]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert r.returncode != 0, "%s: nbdkit started" % params
        for w in words:
            assert w in r.stderr, "%s: the error does not say %r: %s" % (
                params, w, r.stderr)
        assert faults.md5s(paths) == before, "%s: a member changed" % params
        faults.log("  %s: %s" % (" ".join(params), r.stderr.strip()
                                 .splitlines()[-1]))

    refused(["metadata=none", "readonly=true", "readd=auto"], "readd=auto",
            "read-only")
    refused(["metadata=none", "readd=sometimes"], "readd=sometimes",
            "manual or auto")
