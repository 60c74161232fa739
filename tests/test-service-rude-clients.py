#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""No client can take the service down: 30 clients, one after another,
each queue reads of 1 MiB and reset their connection while the replies
are being sent (SO_LINGER 0, then close: a reset over TCP, a close over
this Unix socket), while another client keeps writing, zeroing, flushing
and reading back its own pieces of the array.  nbdkit must stay up, that
client's every request must succeed, and the array must then read back
byte for byte as its shadow says.

What used to happen: nbdkit 1.32.4 to 1.33.9 (Debian 12 has 1.32.5)
abort on the first such client.  One worker's reply meets the closed
socket and closes it; the next worker with a reply ready asserts
("raw_send_socket: Assertion `sock >= 0' failed"), and every other
client's connection goes down with the server.  scripts/install-deps.sh
installs a fixed nbdkit; configure finds it.
"""

import select
import shutil
import signal
import socket
import struct
import subprocess
import time

import faults
import workload as wl

M = 1024 * 1024
CLIENTS, READS = 30, 8
NBD_OPT_EXPORT_NAME, NBD_CMD_READ = 1, 0
NBD_FLAG_C_FIXED_NEWSTYLE, NBD_FLAG_C_NO_ZEROES = 1, 2


def recv_exactly(s, n):
    buf = b""
    while len(buf) < n:
        more = s.recv(n - len(buf))
        assert more, "the server closed the connection in the handshake"
        buf += more
    return buf


def rude_client(arr, rng):
    """Connect, queue READS reads of 1 MiB, wait for the first reply's
    bytes (the others are then queued behind it), then reset."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(arr.sock)
    assert recv_exactly(s, 18)[:16] == b"NBDMAGICIHAVEOPT"
    s.sendall(struct.pack(">I", NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES))
    s.sendall(b"IHAVEOPT" + struct.pack(">II", NBD_OPT_EXPORT_NAME, 0))
    size, _ = struct.unpack(">QH", recv_exactly(s, 10))
    for handle in range(READS):
        off = rng.randrange(0, size - M + 1, 4096)
        s.sendall(struct.pack(">IHHQQI", 0x25609513, 0, NBD_CMD_READ,
                              handle, off, M))
    select.select([s], [], [], 10)
    time.sleep(0.02)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def check_alive(arr, what):
    time.sleep(0.05)
    status = arr.proc.poll()
    if status is not None:
        how = ("killed by %s" % signal.Signals(-status).name if status < 0
               else "exited %d" % status)
        raise AssertionError("nbdkit %s after %s" % (how, what))


with faults.Test(timeout=150) as hz:
    faults.log("%s: %s" % (shutil.which("nbdkit"), subprocess.run(
        ["nbdkit", "--version"], stdout=subprocess.PIPE,
        universal_newlines=True).stdout.splitlines()[0]))
    arr = hz.array(["local"] * 5, member_size=8 * M, level=6, chunk=64 * 1024)
    shadow = wl.fill(arr.h, hz.rng)
    with wl.Load(arr, shadow, 1, hz.seed, "the verifying client") as load:
        for k in range(CLIENTS):
            rude_client(arr, hz.rng)
            check_alive(arr, "rude client %d of %d" % (k + 1, CLIENTS))
        time.sleep(0.5)
        check_alive(arr, "the last rude client")
    faults.log("%d rude clients; the verifying client's requests: %s"
               % (CLIENTS, load.counts()))
    wl.compare_all(arr, shadow, "after the rude clients")
    status = arr.stop()
    assert status == 0, "nbdkit exited %s on SIGTERM" % status
