#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""md's logical_block_size (md 6.19: byte 224 of the v1 superblock, in
bytes; padding, and zero, before) is never set at create, becomes the
export's minimum block size when set, is kept when the plugin rewrites
the superblocks, and a value no block device can have is refused.

A RAID-5 of 4 made with create=true: the field is 0 on every member
(tests/lib/mdsb.py reads it independently of the plugin) and the
export's minimum block size is 512.  Set to 4096 on every member: the
minimum is 4096, the preferred size no less, and after writes and a
stop every superblock still says 4096.  Set to 3000: the array does not
start, and its log names the field.
"""

import random

import faults
import mdsb
import nbd
import workload as wl

M = 1024 * 1024


def minimum(arr):
    return arr.h.get_block_size(nbd.SIZE_MINIMUM)


def set_all(arr, value):
    for m in arr.members:
        mdsb.change(m.path, logical_block_size=value)


with faults.Test() as hz:
    arr = hz.array(["local"] * 4, member_size=8 * M, level=5, chunk=64 * 1024,
                   data_offset=None, control=True, params=["create=true"])
    arr.ctl.wait_idle(60)
    got = [mdsb.read(m.path)["logical_block_size"] for m in arr.members]
    assert got == [0] * 4, "create set logical_block_size: %s" % got
    assert minimum(arr) == 512, "minimum block size %d" % minimum(arr)
    arr.stop()

    arr.params = [p for p in arr.params if p != "create=true"]
    set_all(arr, 4096)
    arr.start()
    assert minimum(arr) == 4096, "minimum block size %d, not 4096" % (
        minimum(arr))
    pref = arr.h.get_block_size(nbd.SIZE_PREFERRED)
    assert pref >= 4096, "preferred block size %d below the minimum" % pref
    data = random.Random(3).randbytes(64 * 1024)
    arr.h.pwrite(data, 4096)
    arr.h.flush()
    assert arr.h.pread(len(data), 4096) == data
    arr.stop()
    got = [mdsb.read(m.path)["logical_block_size"] for m in arr.members]
    assert got == [4096] * 4, "after a run, logical_block_size: %s" % got
    faults.log("logical_block_size 4096 advertised as the minimum block "
               "size (preferred %d), kept by the superblock writes" % pref)

    set_all(arr, 3000)
    try:
        arr.start()
    except RuntimeError:
        text = open(arr.logfile, errors="replace").read()
        assert "logical_block_size" in text, \
            "refused, but the log does not say why:\n" + text
    else:
        raise AssertionError("an array with logical_block_size 3000 started")
    faults.log("logical_block_size 3000 refused")
