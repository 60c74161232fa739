#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""extract-seeds.py: fuzzing seeds from real md member images.

    tests/fuzz/extract-seeds.py [--out DIR] [--prefix P] IMAGE...

For every member image that holds an md version-1 superblock (magic
0xa92b4efc, major version 1 and a super_offset naming the place: 4 KiB
from the start for v1.2, the start for v1.1, the member's sectors less
16 rounded down to 8 for v1.0), the 4 KiB superblock block becomes a seed of
fuzz_md_super (DIR/md_super/P-IMAGE), and, when its feature map has the
bitmap bit, the 256-byte bitmap superblock it points to (bitmap_offset:
signed, in sectors from the superblock) a seed of fuzz_md_bitmap_super
(DIR/md_bitmap_super/P-IMAGE).  Trailing zero bytes are left out (the
targets zero-pad), identical seeds are kept once.  DIR defaults to
tests/fuzz/corpus beside this script.

Where the committed seeds come from: the member images the guest tests
leave with RAID_TEST_KEEP=1, made by Linux md in the guest (mdadm --create,
md's resync and bitmap, md's failed and stale members):

    RAID_TEST_KEEP=1 make check TESTS=vm/test-vm-mdadm-to-plugin.sh
    RAID_TEST_KEEP=1 make check TESTS=vm/test-vm-bitmap.sh
    RAID_TEST_KEEP=1 make check TESTS=vm/test-vm-md-versions.sh
    tests/fuzz/extract-seeds.py --prefix mdadm  /tmp/raid-test.X/r?[a-d]-d?
    tests/fuzz/extract-seeds.py --prefix bitmap /tmp/raid-test.Y/[abc]?-d?
    tests/fuzz/extract-seeds.py --prefix versions /tmp/raid-test.Z/m1?r?-d?

This script reads the fields with its own offsets (md_p.h), not the
plugin's parser, so a parser bug cannot hide a seed.
"""

import argparse
import hashlib
import os
import struct
import sys

MD_MAGIC = 0xa92b4efc
BITMAP_MAGIC = 0x6d746962
SB_BYTES = 4096
BITMAP_SB_BYTES = 256


def places(size):
    """md's place for each version on a member of size bytes."""
    sectors = size // 512
    yield 4096                              # v1.2
    yield 0                                 # v1.1
    if sectors >= 32:
        yield ((sectors - 16) & ~7) * 512   # v1.0


def seed_bytes(b):
    return b.rstrip(b"\0") or b"\0"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(here, "corpus"))
    ap.add_argument("--prefix", default="md")
    ap.add_argument("images", nargs="+")
    args = ap.parse_args()

    seen = {}
    for target in ("md_super", "md_bitmap_super"):
        d = os.path.join(args.out, target)
        os.makedirs(d, exist_ok=True)
        for name in os.listdir(d):
            with open(os.path.join(d, name), "rb") as f:
                seen[(target, hashlib.sha1(f.read()).hexdigest())] = name

    def save(target, name, data):
        data = seed_bytes(data)
        key = (target, hashlib.sha1(data).hexdigest())
        if key in seen:
            print("  %s: same as %s" % (target, seen[key]))
            return
        path = os.path.join(args.out, target, name)
        with open(path, "wb") as f:
            f.write(data)
        seen[key] = name
        print("  %s: %s (%d bytes)" % (target, path, len(data)))

    found = 0
    for image in args.images:
        name = "%s-%s" % (args.prefix, os.path.basename(image))
        with open(image, "rb") as f:
            at = sb = None
            for where in places(os.path.getsize(image)):
                f.seek(where)
                block = f.read(SB_BYTES)
                if len(block) == SB_BYTES and \
                        struct.unpack_from("<II", block, 0) == (MD_MAGIC, 1) and \
                        struct.unpack_from("<Q", block, 144)[0] == where // 512:
                    at, sb = where, block
                    break
            if sb is None:
                print("%s: no md v1.x superblock, skipped" % image)
                continue
            found += 1
            print(image)
            save("md_super", name, sb)
            feature_map, = struct.unpack_from("<I", sb, 8)
            bitmap_offset, = struct.unpack_from("<i", sb, 96)
            if feature_map & 1:
                f.seek(at + 512 * bitmap_offset)
                bs = f.read(BITMAP_SB_BYTES)
                if len(bs) == BITMAP_SB_BYTES and \
                        struct.unpack_from("<I", bs, 0)[0] == BITMAP_MAGIC:
                    save("md_bitmap_super", name, bs)
                else:
                    print("  no bitmap superblock at sector offset %d"
                          % bitmap_offset)
    if not found:
        sys.exit("extract-seeds.py: no md superblock in any image")


if __name__ == "__main__":
    main()
