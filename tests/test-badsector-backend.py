#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The tests' bad-sector member fails as a disk does, over real NBD (a
"badsector" member of lib/faults.py, driven here through libnbd alone,
no raid): a read that touches a read-bad range fails with EIO, every
other read returns the shadow's bytes; a write that covers bad sectors
mends them and is recorded (healed_ranges), one over part of a sector
fails; a write-bad range fails writes, zeroes and trims, writing
nothing, and is never mended; ranges added, added again and cleared at
run time count from the next request; a range added elsewhere, and a
restart of the server, leave what was mended mended.  The member file
holds the shadow throughout.
"""

import faults
import nbd
import workload as wl

K = 1024
SIZE = 256 * K


def eio(what, fn, *args):
    err = wl.try_io(fn, *args)[1]
    assert err == "EIO", "%s: %s, expected EIO" % (what, err or "succeeded")


def connect(m):
    h = nbd.NBD()
    h.connect_uri(m.uri)
    return h


def reads_ok(h, shadow, off, n, what):
    got, err = wl.try_io(h.pread, n, off)
    assert err is None, "%s: read of %d at %d: %s" % (what, n, off, err)
    assert got == shadow[off:off + n], "%s: wrong data at %d" % (what, off)


with faults.Test(plugins=["badsector"], filters=["error"], timeout=60) as t:
    m = t.member(SIZE, "badsector")
    h = connect(m)
    shadow = bytearray(t.rng.randbytes(SIZE))
    h.pwrite(bytes(shadow), 0)

    # Read-bad: every request that touches [bad, bad + 4K) fails, whole.
    bad = 16 * K + t.rng.randrange(64) * 512
    m.add_bad_range(bad, 4 * K)
    for off in range(bad - 8 * K, bad + 8 * K, 512):
        if off < bad + 4 * K and bad < off + 4 * K:
            eio("4K read at %d" % off, h.pread, 4 * K, off)
        else:
            reads_ok(h, shadow, off, 4 * K, "beside the bad range")
    eio("its last byte", h.pread, 1, bad + 4 * K - 1)
    reads_ok(h, shadow, bad - 1, 1, "the byte before")
    eio("the whole member", h.pread, SIZE, 0)
    assert m.healed_ranges() == [], "reads mended %s" % m.healed_ranges()

    # A write over part of a sector fails; one over sectors 2-3 mends them.
    eio("100 bytes into the range", h.pwrite, b"x" * 100, bad + 100)
    assert m.read() == shadow, "a failed write changed the file"
    shadow[bad + K:bad + 2 * K] = t.rng.randbytes(K)
    h.pwrite(bytes(shadow[bad + K:bad + 2 * K]), bad + K)
    assert m.healed_ranges() == [(bad + K, K)], m.healed_ranges()
    reads_ok(h, shadow, bad + K, K, "mended sectors")
    eio("the sectors left", h.pread, K, bad)
    # A new version of the list keeps what was mended mended.
    m.add_bad_range(128 * K, 512, "both")
    reads_ok(h, shadow, bad + K, K, "mended, after a range was added")
    # And a restart of the server: a disk keeps its remapped sectors.
    h.shutdown()
    m.restart()
    h = connect(m)
    reads_ok(h, shadow, bad + K, K, "mended, after a restart")
    eio("the sectors left, after a restart", h.pread, K, bad)
    shadow[bad:bad + 4 * K] = t.rng.randbytes(4 * K)
    h.pwrite(bytes(shadow[bad:bad + 4 * K]), bad)
    assert m.healed_ranges() == [(bad + K, K), (bad, K), (bad + 2 * K, 2 * K)], \
        m.healed_ranges()
    reads_ok(h, shadow, bad - 4 * K, 12 * K, "the whole range mended")

    # Write-bad ("both" at 128K, "write" at 192K): nothing written, never
    # mended; reads of a write-only range succeed.
    m.add_bad_range(192 * K, 1024, "write")
    for off in (128 * K, 192 * K + 512):
        eio("write at %d" % off, h.pwrite, b"y" * 4096, off - 1024)
        eio("zero at %d" % off, h.zero, 4096, off - 1024)
        eio("trim at %d" % off, h.trim, 4096, off - 1024)
    eio("read of a both range", h.pread, 512, 128 * K)
    reads_ok(h, shadow, 192 * K, 4 * K, "a write-bad range")
    assert m.read() == shadow, "a failed write changed the file"

    # Again at run time: the mended range goes bad again; a zero mends it.
    m.add_bad_range(bad, 4 * K)
    eio("a mended range added again", h.pread, 512, bad + 3 * K)
    h.zero(4 * K, bad)
    shadow[bad:bad + 4 * K] = bytes(4 * K)
    assert m.healed_ranges()[3:] == [(bad, 4 * K)], m.healed_ranges()
    m.clear_bad_ranges()
    reads_ok(h, shadow, 0, SIZE, "every range cleared")
    assert m.read() == shadow, "the member file differs from the shadow"
    h.shutdown()
