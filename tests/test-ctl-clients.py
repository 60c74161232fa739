#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The control socket serves several clients at once, times out idle ones,
and never delays nbdkit's shutdown.  It used to serve one client at a time
with a blocking read and no timeout: one client that connected and said
nothing blocked every other command and nbdkit's shutdown, so that the md
superblocks were never marked clean.

  - three idle clients connected; another client's status is answered
    within a second, and so is a fail;
  - an idle client is dropped (EOF) within the timeout (5 s) plus a margin;
  - SIGTERM with an idle client connected: nbdkit exits within 2 s, with
    status 0, and every member's md superblock says clean (resync_offset
    all ones), parsed here from the member files.
"""

import os
import signal
import socket
import struct
import subprocess
import time

import faults

M = 1024 * 1024
MD_MAGIC = 0xa92b4efc
CLEAN = (1 << 64) - 1


def idle_client(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def superblock(path):
    """(magic, events, resync_offset) of the v1.2 superblock at 4 KiB."""
    with open(path, "rb") as f:
        f.seek(4096)
        sb = f.read(256)
    return (struct.unpack_from("<I", sb, 0)[0],
            struct.unpack_from("<Q", sb, 200)[0],
            struct.unpack_from("<Q", sb, 208)[0])


with faults.Test() as hz:
    members = [hz.member(4 * M, "local") for _ in range(4)]
    arr = hz.array(members, level=5, chunk=64 * 1024, data_offset=M,
                   params=["create=true"], control=True)
    ctl, sock = arr.ctl, arr.ctlpath
    ctl.wait_idle(30)               # the new array's first resync

    idle = [idle_client(sock) for _ in range(3)]
    t0 = time.monotonic()
    st = ctl.cmd("status", timeout=5)
    took = time.monotonic() - t0
    assert took < 1.0 and st.startswith("{"), \
        "status with three idle clients connected took %.2f s: %r" % (
            took, st[:80])
    faults.log("  status with three idle clients connected: %.3f s" % took)
    t0 = time.monotonic()
    reply = ctl.cmd("fail 3", timeout=5)
    assert reply == "ok" and time.monotonic() - t0 < 1.0, reply

    # The idle clients are dropped: EOF within the timeout and a margin.
    idle[0].settimeout(8)
    t0 = time.monotonic()
    try:
        got = idle[0].recv(100)
    except socket.timeout:
        got = None
    assert got == b"", "an idle client was not dropped within 8 s (%r)" % got
    faults.log("  an idle client was dropped after %.1f s"
           % (time.monotonic() - t0))
    for s in idle:
        s.close()

    # Writes make the array active; SIGTERM with an idle client must end
    # nbdkit promptly and leave the superblocks clean.
    arr.h.pwrite(b"x" * 65536, 0)
    assert superblock(members[0].path)[2] != CLEAN, \
        "the array should be active after a write"
    arr.h.shutdown()
    arr.h = None
    c = idle_client(sock)
    proc = arr.proc
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        # STOP_WAIT: more time for slow (sanitizer) builds.
        proc.wait(timeout=float(os.environ.get("STOP_WAIT", "2")))
    except subprocess.TimeoutExpired:
        raise AssertionError("nbdkit still runs 2 s after SIGTERM with an "
                             "idle control client connected")
    took = time.monotonic() - t0
    c.close()
    assert proc.returncode == 0, "nbdkit exited with %s" % proc.returncode
    for m in members[:3]:
        magic, events, resync = superblock(m.path)
        assert magic == MD_MAGIC and resync == CLEAN, \
            "%s: superblock magic %#x, resync_offset %#x after SIGTERM: " \
            "not clean" % (m.path, magic, resync)
    faults.log("  SIGTERM with an idle client: exit 0 after %.2f s, superblocks "
           "clean" % took)
    arr.stop()
