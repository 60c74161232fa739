# SPDX-License-Identifier: BSD-3-Clause
"""shadow_client.py URI MODE SHADOW [--seed N] [--whole] [--writes N]:
the client of the shell tests' md arrays.  SHADOW is the file that holds
what the array must contain.

  write   fill the whole array with random data (--whole) and/or make
          --writes N random unaligned writes (default 40) over what
          SHADOW holds (or zeroes), flush, save the shadow;
  verify  read the whole array and compare it with SHADOW byte for byte
          (and print "verified N bytes");
  both    write, then verify.

The random data comes from --seed (default 1), so a seed replays.  Run
with /usr/bin/python3 (the nbd module); workload.fill draws the whole
array's data as it does.
"""

import argparse
import os
import random
import sys

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload as wl  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("uri")
ap.add_argument("mode", choices=("write", "verify", "both"))
ap.add_argument("shadow")
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--whole", action="store_true")
ap.add_argument("--writes", type=int, default=40)
a = ap.parse_args()

h = nbd.NBD()
h.set_strict_mode(0)
h.connect_uri(a.uri)
size = h.get_size()
if a.mode in ("write", "both"):
    rng = random.Random(a.seed)
    if a.whole:
        img = wl.fill(h, rng)
    else:
        img = (bytearray(open(a.shadow, "rb").read())
               if os.path.exists(a.shadow) else bytearray(size))
    assert len(img) == size, (len(img), size)
    for _ in range(a.writes):
        n = rng.randrange(1, 150000)
        off = rng.randrange(0, size - n)
        data = rng.randbytes(n)
        h.pwrite(data, off)
        img[off:off + n] = data
    h.flush()
    with open(a.shadow, "wb") as f:
        f.write(img)
if a.mode in ("verify", "both"):
    img = open(a.shadow, "rb").read()
    assert size == len(img), "array size %d, shadow %d" % (size, len(img))
    for off in range(0, size, 1 << 20):
        got = h.pread(min(1 << 20, size - off), off)
        if got != img[off:off + len(got)]:
            bad = next(i for i in range(len(got)) if got[i] != img[off + i])
            raise AssertionError("array byte %d differs from the shadow"
                                 % (off + bad))
    print("verified %d bytes" % size)
h.shutdown()
