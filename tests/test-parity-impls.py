#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every parity implementation the plugin lists (--dump-plugin's
raid_parity_impls), forced with parity=NAME, produces parity that the
independent checker (raidcheck.py) accepts, for RAID-5 and RAID-6: full-
stripe writes (syndrome generation) and small ones (read-modify-write),
read back against a shadow; or it is refused clearly because this CPU
cannot run it.  One Python process drives them all (nbdkit -s per array
through connect_command), which keeps this quick.
"""

import os
import random
import subprocess

import faults
import raidcheck

with faults.Test() as t:
    dump = subprocess.run(["nbdkit", t.plugin, "--dump-plugin"],
                          stdout=subprocess.PIPE, universal_newlines=True,
                          check=True).stdout
    impls = next(l.split("=", 1)[1] for l in dump.splitlines()
                 if l.startswith("raid_parity_impls=")).split(",")
    ran = 0
    for name in impls:
        for level in (5, 6):
            members = []
            for i in range(6):
                path = os.path.join(t.dir, "p%d" % i)
                with open(path, "wb") as f:
                    f.truncate(64 * 4096)
                members.append(path)
            args = [t.plugin, "metadata=none", "level=%d" % level, "chunk=4K",
                    "layout=left-asymmetric", "parity=" + name] + members
            probe = subprocess.run(["nbdkit", "-U", "-"] + args +
                                   ["--run", "true"],
                                   stderr=subprocess.PIPE, text=True)
            if probe.returncode != 0:
                if "parity=%s: this CPU cannot run it" % name in probe.stderr:
                    faults.log("parity=%s: not runnable here (said so "
                               "clearly)" % name)
                    break
                raise AssertionError("parity=%s RAID-%d: nbdkit failed:\n%s"
                                     % (name, level, probe.stderr))
            h = faults.nbd.NBD()
            h.set_strict_mode(0)
            h.connect_command(["nbdkit", "-s", "--exit-with-parent"] + args)
            rng = random.Random(t.seed)
            size = h.get_size()
            shadow = bytearray(size)
            for i in range(60):
                off = rng.randrange(size)
                n = min(size - off, rng.choice((1, 100, 512, 4096, 5000,
                                                16384, 20480, 70000)))
                data = rng.randbytes(n)
                h.pwrite(data, off)
                shadow[off:off + n] = data
            assert h.pread(size, 0) == shadow, \
                "parity=%s RAID-%d: read back differs" % (name, level)
            h.shutdown()
            del h
            bad = raidcheck.bad_rows(level, "left-asymmetric", 4096, 0,
                                     members)
            assert not bad, "parity=%s RAID-%d: wrong parity on the members " \
                "(rows %s)" % (name, level, bad)
            ran += 1
        else:
            faults.log("parity=%s: RAID-5 and RAID-6 parity good" % name)
    assert ran > 0, "no parity implementation could run"
