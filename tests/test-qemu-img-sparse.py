#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""qemu-img convert from and to the export, sparse.

(a) From the export: an md RAID-6 (create=true) of six sparse 128M
    member files, chunk 64K, holding 8 MiB of random data in eight runs.
    qemu-img convert -O raw copies it into a file: the copy equals the
    shadow, has little more than the data allocated, and qemu read (the
    array's read counter, nbdkit-raid-ctl status) only the data rows.
    The same array served again behind nbdkit's noextents filter (the
    plugin as it was before it had extents: every byte data) is copied
    too, read whole; both times are printed, to show what extents save
    (a rough measurement on a shared machine, not a benchmark).
(b) To the export: a fresh array, and a sparse source image (the same
    eight runs); qemu-img convert -n --target-is-zero writes only the
    data (no write of zeroes at all, the members stay sparse), and
    qemu-img compare finds the array equal to the image.
(c) -S 64k over an array full of random data: qemu writes zeroes that
    may trim for the source's zero runs, the array punches the whole
    rows among them, nbdinfo --map says hole there, and the array equals
    the image again.  raidcheck.py then checks every row's parity on the
    members.
"""

import json
import os
import subprocess
import time

import faults

K, M = 1024, 1024 * 1024
SIZE = 128 * M


def qemu_img(*args):
    t0 = time.monotonic()
    subprocess.run(["qemu-img"] + list(args), check=True)
    return time.monotonic() - t0


def counters(arr):
    return arr.ctl.status()["io"]


def allocated(paths):
    return sum(os.stat(p).st_blocks * 512 for p in paths)


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def data_rows(arr, runs):
    return {s for off, n in runs
            for s in range(off // arr.row, (off + n - 1) // arr.row + 1)}


with faults.Test(tools=["qemu-img", "nbdinfo"], timeout=240) as t:
    t.requires_holes()

    # (a)
    ms = [t.member(SIZE, "local") for _ in range(6)]
    arr = t.array(ms, level=6, chunk=64 * K, layout=None, data_offset=None,
                  control=True, params=["create=true"])
    arr.ctl.wait_idle(60)
    shadow = bytearray(arr.size)
    runs = [(i * (arr.size // 8) + t.rng.randrange(0, arr.size // 16, 4096),
             M) for i in range(8)]
    for off, n in runs:
        b = os.urandom(n)
        arr.h.pwrite(b, off)
        shadow[off:off + n] = b
    arr.h.flush()
    rows = data_rows(arr, runs)
    out = os.path.join(t.dir, "out.img")
    before = counters(arr)["read"]["bytes"]
    t_ext = qemu_img("convert", "-f", "raw", "-O", "raw", arr.uri, out)
    read = counters(arr)["read"]["bytes"] - before
    assert read_file(out) == shadow, "(a) the copy differs from the shadow"
    got = os.stat(out).st_blocks * 512
    os.unlink(out)
    faults.log("  (a) with extents: %.2f s, %d KiB read, %d KiB allocated "
               "(%d data rows of %d KiB, export %d MiB)" % (
                   t_ext, read // K, got // K, len(rows), arr.row // K,
                   arr.size // M))
    assert read <= len(rows) * arr.row, \
        "(a) qemu read %d bytes, the %d data rows hold %d" % (
            read, len(rows), len(rows) * arr.row)
    assert got <= len(runs) * M + 4 * M, "(a) the copy has %d bytes " \
        "allocated for %d bytes of data" % (got, len(runs) * M)
    arr.stop()

    arr = t.array(ms, level=None, chunk=None, layout=None, data_offset=None,
                  control=True, nbdkit_args=["--filter=noextents"])
    before = counters(arr)["read"]["bytes"]
    t_none = qemu_img("convert", "-f", "raw", "-O", "raw", arr.uri, out)
    read = counters(arr)["read"]["bytes"] - before
    assert read_file(out) == shadow, "(a) the copy differs (noextents)"
    os.unlink(out)
    faults.log("  (a) without extents (noextents filter): %.2f s, %d KiB "
               "read" % (t_none, read // K))
    assert read == arr.size, "(a) noextents: qemu read %d bytes of %d" % (
        read, arr.size)
    print("qemu-img convert of a %d MiB array holding %d MiB: %.2f s with "
          "extents, %.2f s without (%.1fx)" % (
              arr.size // M, len(runs), t_ext, t_none, t_none / t_ext))
    arr.stop()

    # (b)
    src = os.path.join(t.dir, "src.img")
    with open(src, "wb") as f:
        f.truncate(arr.size)
        for off, n in runs:
            f.seek(off)
            f.write(shadow[off:off + n])
    ms = [t.member(SIZE, "local") for _ in range(6)]
    arr = t.array(ms, level=6, chunk=64 * K, layout=None, data_offset=None,
                  control=True, params=["create=true"])
    arr.ctl.wait_idle(60)
    before = counters(arr)
    qemu_img("convert", "-n", "--target-is-zero", "-f", "raw", "-O", "raw",
             src, arr.uri)
    after = counters(arr)
    written = after["write"]["bytes"] - before["write"]["bytes"]
    zeroed = after["zero"]["requests"] - before["zero"]["requests"]
    faults.log("  (b) --target-is-zero: %d KiB written, %d zero requests, "
               "members %d KiB allocated" % (
                   written // K, zeroed, allocated([m.path for m in ms]) // K))
    assert written <= len(runs) * M and zeroed == 0, \
        "(b) qemu wrote %d bytes and %d zero requests for %d bytes of " \
        "data" % (written, zeroed, len(runs) * M)
    # Each run's rows on every member, md's superblocks and bitmaps.
    assert allocated([m.path for m in ms]) <= \
        (len(data_rows(arr, runs)) + 2) * arr.chunk * 6 + 6 * M, \
        "(b) the members are not sparse"
    subprocess.run(["qemu-img", "compare", "-f", "raw", "-F", "raw", src,
                    arr.uri], check=True)

    # (c)
    for off in range(0, arr.size, 32 * M):
        arr.h.pwrite(os.urandom(min(32 * M, arr.size - off)), off)
    arr.h.flush()
    qemu_img("convert", "-n", "-S", "64k", "-f", "raw", "-O", "raw", src,
             arr.uri)
    subprocess.run(["qemu-img", "compare", "-f", "raw", "-F", "raw", src,
                    arr.uri], check=True)
    ext = json.loads(subprocess.run(["nbdinfo", "--map", "--json", arr.uri],
                                    check=True,
                                    stdout=subprocess.PIPE).stdout)
    holes = sum(e["length"] for e in ext if e["type"] == 3)
    want = arr.size - len(data_rows(arr, runs)) * arr.row
    faults.log("  (c) -S 64k over noise: %d MiB of holes, %d MiB expected"
               % (holes // M, want // M))
    # A row that qemu's zeroes cover in two requests (it splits them at
    # its own sizes) is written, not punched: a few rows, not most.
    assert holes >= want - (len(runs) + arr.size // (32 * M)) * arr.row, \
        "(c) only %d bytes of holes after qemu's zeroes, expected ~%d" % (
            holes, want)
    arr.stop()
    rc, text = faults.run_raidcheck(arr, [m.path for m in ms])
    assert rc == 0, "(c) raidcheck: %s" % text
