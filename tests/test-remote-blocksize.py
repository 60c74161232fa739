#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Remote members whose server has a minimum block
size (nbdkit's blocksize-policy filter, which refuses a request that is
not aligned to it with EINVAL, as a strict server or a 4Kn disk does).

1. A RAID-5 with a member of minimum 4096 and data-offset 0: random
   512-byte-aligned reads and writes at odd offsets (512 bytes to 7.5K)
   through the array all succeed and read back as a shadow copy, byte for
   byte; the member is still in sync at the end (nothing sent to it was
   refused) and every row's parity is good on the member files.
2. A member of minimum 8192 is refused at open, with a message that names
   it and says why.
3. A member of minimum 4096 with data-offset=6144 (the stripe rows would
   start off its blocks) is refused at open; and so is such a member as a
   replacement (`replace`), with the array unchanged.

"""

import faults
import workload as wl

K = 1024
CHUNK = 16 * K


def strict(hz, size, minimum):
    return hz.member(size, "remote", filters=["blocksize-policy"],
                     extra=["blocksize-minimum=%d" % minimum,
                            "blocksize-preferred=%d" % max(minimum, 4096),
                            "blocksize-error-policy=error"])


def refused(hz, members, doff, what, expect):
    line = hz.refused_array(members, expect, what, level=5, chunk=CHUNK,
                            data_offset=doff, params=["metadata=none"])
    print("%s: refused: %s" % (what, line.split("error: ", 1)[-1]),
          flush=True)


with faults.Test(filters=["error", "blocksize-policy"], timeout=50) as hz:
    rng = hz.rng
    size = 24 * CHUNK
    arr = hz.array([strict(hz, size, 4096), "remote", "local"],
                   member_size=size, level=5, chunk=CHUNK, control=True,
                   params=["metadata=none"])
    ctl = arr.ctl
    shadow = wl.fill(arr.h, rng, step=4 * arr.row)
    reads = writes = 0
    for n in range(300):
        length = 512 * rng.randrange(1, 16)
        off = 512 * rng.randrange(0, (arr.size - length) // 512)
        if off % 1024 == 0:
            off += 512          # odd multiples of 512: never 4K aligned
        if rng.random() < 0.5:
            data = rng.randbytes(length)
            arr.h.pwrite(data, off)
            shadow[off:off + length] = data
            writes += 1
        else:
            got = arr.h.pread(length, off)
            assert got == shadow[off:off + length], \
                "read of %d bytes at %d differs from the shadow" % (length, off)
            reads += 1
    arr.h.flush()
    assert arr.h.pread(arr.size, 0) == shadow, "the array differs from the shadow"
    states = ctl.states()
    print("1. member of minimum 4096: %d reads, %d writes of 512-7680 bytes "
          "at odd offsets: all right; states %s" % (reads, writes, states),
          flush=True)
    assert states == ["in_sync"] * 3, "a member was failed: %s" % states
    bad = arr.bad_rows()
    assert not bad, "rows with bad parity: %s" % bad
    arr.stop()

    refused(hz, [strict(hz, size, 8192), hz.member(size, "remote"),
                 hz.member(size, "local")], 0,
            "2. member of minimum 8192", "minimum block size is 8192")
    refused(hz, [strict(hz, size + 8 * K, 4096), hz.member(size + 8 * K, "remote"),
                 hz.member(size + 8 * K, "local")], 6144,
            "3. member of minimum 4096, data-offset=6144",
            "does not divide the data offset")

    arr = hz.array(["remote", "remote", "local"], member_size=size + 8 * K,
                   level=5, chunk=CHUNK, data_offset=6144, control=True,
                   params=["metadata=none"])
    ctl = arr.ctl
    shadow = wl.fill(arr.h, rng, step=4 * arr.row)
    ctl.ok("fail 1")
    new = strict(hz, size + 8 * K, 4096)
    reply = ctl.error("replace 1 %s" % new.disk)
    print("3. as a replacement: %s" % reply, flush=True)
    assert "does not divide the data offset" in reply, reply
    assert ctl.states() == ["in_sync", "failed", "in_sync"], ctl.states()
    assert arr.h.pread(arr.size, 0) == shadow, "the array differs from the shadow"
