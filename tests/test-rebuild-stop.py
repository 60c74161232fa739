#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""nbdkit stops promptly in the middle of a throttled rebuild (2M/s, a
member of 1 MiB): it exits on SIGTERM with status 0 (faults.py SIGKILLs
it after 2 s, and the status would then be negative).
"""

import time

import faults
import fail_control

with faults.Test() as hz:
    arr, paths, shadow = fail_control.array(hz)
    ctl, msize = arr.ctl, fail_control.msize
    ctl.ok("fail 2")
    spare3 = fail_control.spare(hz, "spare3")
    faults.noise_file(spare3, msize)
    ctl.ok("replace 2 " + spare3)
    time.sleep(0.1)
    assert ctl.status()["rebuild"]["running"], "the rebuild is not running"
    proc = arr.proc
    t0 = time.monotonic()
    arr.stop()
    took = time.monotonic() - t0
    assert proc.returncode == 0, \
        "stopping nbdkit during a rebuild took %.1f s, exit status %s (a " \
        "negative status: it had to be killed)" % (took, proc.returncode)
    faults.log("  nbdkit stopped in %.2f s during a rebuild" % took)
