# SPDX-License-Identifier: BSD-3-Clause
"""What test-ctl-status.py, test-ctl-refused.py, test-ctl-fail-replace.py
and test-rebuild-stop.py share: a RAID-6 of five local members with the
control socket (control=PATH) and its client, tools/nbdkit-raid-ctl,
with random data; member 3's path has a quote and a backslash, which
must not break the status JSON.  Rebuilds are
throttled to 2M/s (rebuild-rate), half a second per member.
"""

import os

import faults
import workload as wl

K, M = 1024, 1024 * 1024
n, chunk, msize = 5, 16 * K, 1 * M


def array(hz):
    """(the array, its member paths, its shadow)."""
    if not os.path.isfile(faults.CTL_TOOL):
        raise faults.Skip("%s is missing" % faults.CTL_TOOL)
    members = [hz.member(msize, "local") for _ in range(n)]
    # A name JSON must escape.
    odd = os.path.join(hz.dir, 'odd"name\\member')
    os.rename(members[3].path, odd)
    members[3].path = odd
    arr = hz.array(members, level=6, chunk=chunk, layout="right-symmetric",
                   control=True, params=["rebuild-rate=2M"])
    shadow = wl.fill(arr.h, hz.rng)
    return arr, [m.path for m in members], shadow


def spare(hz, name, size=msize):
    """A file for `replace` (truncated: zeroes; full of noise for a
    rebuild, which must overwrite every byte)."""
    path = os.path.join(hz.dir, name)
    with open(path, "wb") as f:
        f.truncate(size)
    return path
