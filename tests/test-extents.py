#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Extents (base:allocation): what nbdinfo --map and nbdcopy see of a
mostly empty array.

(a) An md RAID-6 (create=true) of six sparse 64M member files, chunk
    64K, written in a few places (inside a row, across a row boundary,
    three whole rows, the last sector), then two of those rows cleared
    again, one by trim, one by a write of zeroes that may trim.  The map
    (nbdinfo --map --json) must say data on exactly the rows still
    written and hole,zero everywhere else (the rows are computed here
    from the requests), and it must agree with a full read: the export
    read whole (nbdcopy --no-extents) equals the shadow, which is all
    zeroes under every hole.
(b) nbdcopy -S 0 (no zero detection of its own, so only the extents
    can leave holes) copies it into a file: the copy equals the shadow
    and has at most the data rows plus a little allocated (st_blocks),
    where nbdcopy --no-extents -S 0 allocates the whole size, as every
    copy did before the plugin had extents.
(c) Degraded: member 2 fails; the map and the data stay the same (a row
    whose readable members are holes reconstructs as zeroes); member 2 is
    replaced by a file of noise and rebuilt: the same again, and scrub
    finds 0 mismatches.
(d) An array with a remote member (NBD, which cannot say where its holes
    are) maps as all data; once that member has failed it is not asked,
    and the holes are back.
Skips if the member files' filesystem does not report holes.
"""

import json
import os
import subprocess

import faults
import workload as wl

K, M = 1024, 1024 * 1024
SIZE = 64 * M


def rows_of(arr, off, n):
    return set(range(off // arr.row, (off + n - 1) // arr.row + 1))


def nbd_map(arr):
    """nbdinfo --map: [(offset, length, zero)], checked contiguous."""
    out = subprocess.run(["nbdinfo", "--map", "--json", arr.uri], check=True,
                         stdout=subprocess.PIPE).stdout
    ext = [(e["offset"], e["length"], e["type"] == 3) for e in json.loads(out)]
    pos = 0
    for off, n, _ in ext:
        assert off == pos, "the map skips from %d to %d: %s" % (pos, off, ext)
        pos += n
    assert pos == arr.size, "the map ends at %d of %d" % (pos, arr.size)
    return ext


def check_map(arr, data_rows, shadow, what):
    ext = nbd_map(arr)
    said = {}
    for off, n, zero in ext:
        assert off % arr.row == 0 and n % arr.row == 0, \
            "%s: extent (%d, %d) is not whole rows" % (what, off, n)
        for s in range(off // arr.row, (off + n) // arr.row):
            said[s] = not zero
    wrong = [s for s in range(arr.rows) if said[s] != (s in data_rows)]
    assert not wrong, "%s: rows %s said %s; data rows are %s; map %s" % (
        what, wrong[:10], ["data" if said[s] else "hole" for s in wrong[:10]],
        sorted(data_rows), ext)
    for off, n, zero in ext:
        assert not zero or shadow[off:off + n].count(0) == n, \
            "%s: (%d, %d) said zero, the shadow is not" % (what, off, n)
    rows = sorted(data_rows)
    faults.log("  %s: map of %d extents, data on %s" % (
        what, len(ext), "rows %s" % rows if len(rows) < 20
        else "%d rows of %d" % (len(rows), arr.rows)))
    return ext


def full_read(arr, path, shadow, what):
    """The export read whole, without extents, must be the shadow."""
    subprocess.run(["nbdcopy", "--no-extents", arr.uri, path], check=True)
    with open(path, "rb") as f:
        got = f.read()
    assert got == shadow, "%s: the export differs from the shadow at %d" % (
        what, next(i for i in range(len(got)) if got[i] != shadow[i]))
    os.unlink(path)


with faults.Test(tools=["nbdinfo", "nbdcopy"], timeout=180) as t:
    t.requires_holes()

    # (a)
    ms = [t.member(SIZE, "local") for _ in range(6)]
    arr = t.array(ms, level=6, chunk=64 * K, layout=None, data_offset=None,
                  control=True, params=["create=true"])
    arr.ctl.wait_idle(60)
    row = arr.row
    shadow = bytearray(arr.size)
    data_rows = set()
    writes = [(3 * row + 4096, 8192), (100 * row - 4096, 12288),
              (500 * row, 3 * row), (arr.size - 512, 512)]
    for off, n in writes:
        b = os.urandom(n)
        arr.h.pwrite(b, off)
        shadow[off:off + n] = b
        data_rows |= rows_of(arr, off, n)
    arr.h.trim(row, 501 * row)
    arr.h.zero(row, 500 * row)
    for s in (500, 501):
        shadow[s * row:(s + 1) * row] = bytes(row)
        data_rows.discard(s)
    arr.h.flush()
    check_map(arr, data_rows, shadow, "(a) written")
    full_read(arr, os.path.join(t.dir, "full.img"), bytes(shadow), "(a)")

    # (b)
    copy = os.path.join(t.dir, "copy.img")
    subprocess.run(["nbdcopy", "-S", "0", arr.uri, copy], check=True)
    with open(copy, "rb") as f:
        assert f.read() == shadow, "(b) the sparse copy differs"
    sparse = os.stat(copy).st_blocks * 512
    os.unlink(copy)
    subprocess.run(["nbdcopy", "-S", "0", "--no-extents", arr.uri, copy],
                   check=True)
    dense = os.stat(copy).st_blocks * 512
    os.unlink(copy)
    faults.log("  (b) nbdcopy -S 0: %d KiB allocated; with --no-extents: "
               "%d KiB (export %d KiB, %d data rows of %d KiB)" % (
                   sparse // K, dense // K, arr.size // K, len(data_rows),
                   row // K))
    assert sparse <= (len(data_rows) + 1) * row, \
        "(b) the copy has %d bytes allocated for %d data rows" % (
            sparse, len(data_rows))
    assert dense >= arr.size * 9 // 10, \
        "(b) without extents the copy has only %d bytes allocated: this " \
        "filesystem or nbdcopy makes holes by itself, the check above " \
        "proves nothing" % dense

    # (c)
    arr.ctl.ok("fail 2")
    check_map(arr, data_rows, shadow, "(c) member 2 failed")
    wl.compare_all(arr, bytes(shadow), "(c) member 2 failed")
    new = t.member(SIZE, "local")
    faults.noise_file(new.path, SIZE)
    arr.ctl.ok("replace 2 %s" % new.disk)
    mm = arr.ctl.wait_idle(60)["members"][2]
    assert mm["state"] == "in_sync", mm
    check_map(arr, data_rows, shadow, "(c) member 2 rebuilt")
    full_read(arr, os.path.join(t.dir, "full.img"), bytes(shadow), "(c)")
    arr.ctl.ok("scrub check")
    sc = arr.ctl.finished_scrub()["scrub"]
    assert sc["mismatch_cnt"] == 0, sc
    arr.stop()

    # (d)
    ms = [t.member(8 * M, "local") for _ in range(3)] + \
        [t.member(8 * M, "remote")]
    arr = t.array(ms, level=5, chunk=16 * K, control=True)
    b = os.urandom(4096)
    arr.h.pwrite(b, 5 * arr.row)
    shadow = bytearray(arr.size)
    shadow[5 * arr.row:5 * arr.row + 4096] = b
    check_map(arr, set(range(arr.rows)), shadow, "(d) a remote member")
    arr.ctl.ok("fail 3")
    check_map(arr, {5}, shadow, "(d) the remote member failed")
    wl.compare_all(arr, bytes(shadow), "(d) the remote member failed")
