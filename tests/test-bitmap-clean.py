#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A clean shutdown clears every bit of the write-intent bitmap: bits
set on disk by writes (exactly those of the rows written) are cleared by
SIGTERM, and by the end of --run; then events_cleared = the bitmap's
events, which equal the superblocks' or are one ahead, and the
superblocks say clean.  After all that the image raidcheck.py rebuilds
from the members is the shadow.  RAID-6 and RAID-5 (tests/lib/md_bitmap.py).
"""

import os
import subprocess
import sys

import faults
import md_bitmap as mb
from md_bitmap import check, failures, ok
import workload as wl


def sigterm_clears(t, case):
    n0, what, geo = len(failures), case.what, case.geo
    srv = case.server()
    ops = [("write", 50 * geo.row + 7, 3000),
           ("write", 70 * geo.row, 2 * geo.row)]
    bits = geo.bits_of(mb.ops_rows(geo, ops))
    wl.apply_ops(srv.h, t.rng, case.shadow, ops)
    mb.check_bits(what + ": (g) while written", case.paths, bits)
    srv.stop(grace=30)
    mb.check_clean(what + ": (g) SIGTERM", case.paths)
    ok(n0, "%s: (g) bits %s set by writes, cleared by SIGTERM"
       % (what, sorted(bits)))


def captive_write(t, case):
    """At the end of --run; then the members' image is the shadow."""
    n0, geo = len(failures), case.geo
    off, n = 7 * geo.row + 4096, 8192
    r = subprocess.run(["nbdkit", "-U", "-", t.plugin] + case.paths + [
        "--run", "nbdsh -u \"$uri\" -c 'h.pwrite(b\"\\x5a\" * %d, %d)'"
        % (n, off)], stderr=subprocess.PIPE, universal_newlines=True)
    assert r.returncode == 0, "captive write: %s" % r.stderr
    case.shadow[off:off + n] = bytes([0x5a]) * n
    mb.check_clean(case.what + ": (g) end of --run", case.paths)
    image = os.path.join(t.dir, "image")
    subprocess.run([sys.executable, mb.RAIDCHECK, "--level", str(geo.level),
                    "--chunk", str(geo.chunk), "--data-offset",
                    str(geo.data_offset), "--image", image] + case.paths,
                   check=True, stdout=subprocess.DEVNULL)
    img = faults.file_bytes(image)[:geo.size]
    os.unlink(image)
    check(img == case.shadow, "%s: the image raidcheck.py rebuilt from the "
          "members is not the shadow" % case.what)
    ok(n0, "%s: (g) end of --run clean; members hold the shadow" % case.what)


def part(t, case):
    case.create()
    sigterm_clears(t, case)
    captive_write(t, case)


with faults.Test(tools=["nbdsh"], timeout=120) as t:
    mb.run_cases(t, lambda case: part(t, case))
