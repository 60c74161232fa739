#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""raidcheck: verify RAID-5/6 parity on member files; rebuild the array image.

    raidcheck.py --level 6 --layout left-symmetric --chunk 65536 \\
                 [--data-offset N] [--size N] [--image OUT] [--all] m0 m1 ...
    raidcheck.py --self-test

As a module it is the tests' one row checker: scan() walks the rows of
member files with each row's parity mismatches, bad_rows() lists the
rows whose P or Q is wrong, image_of() rebuilds the array's data
(faults.Array.bad_rows and faults.check_members are built on them).

This is the tests' second opinion on the plugin, so it shares nothing with
it: it does not import or parse plugin code, and its layout code follows
the case-by-case description of Linux md's raid5_compute_sector()
(drivers/md/raid5.c) rather than the plugin's reduction of it.

Layout.  The array is cut into chunks; chunk c lies in stripe row
s = c // data_disks as logical data chunk i = c % data_disks.  Every member
holds one chunk of row s at member offset data_offset + s * chunk.  With n
members, r = s mod n and dd = data_disks, md places the row as:

    RAID-5   left-asymmetric   P = dd - r       data i on i, or i+1 if i >= P
             right-asymmetric  P = r            data i on i, or i+1 if i >= P
             left-symmetric    P = dd - r       data i on (P + 1 + i) mod n
             right-symmetric   P = r            data i on (P + 1 + i) mod n
             parity-first      P = 0            data i on i + 1
             parity-last       P = dd           data i on i
    RAID-6   left-asymmetric   P = n-1-r, Q = P+1; if P is the last member,
                               Q = 0 and data i on i+1; else data i on i,
                               or i+2 if i >= P
             right-asymmetric  P = r, Q and data as for left-asymmetric
             left-symmetric    P = n-1-r, Q = (P+1) mod n,
                               data i on (P + 2 + i) mod n
             right-symmetric   P = r, Q and data as for left-symmetric
             parity-first      P = 0, Q = 1, data i on i + 2
             parity-last       P = dd, Q = dd + 1, data i on i

Parity.  P = XOR of the row's data chunks.  Q = sum over k of g^k * D_k in
GF(2^8) with g = 2 and polynomial x^8+x^4+x^3+x^2+1 (0x11d), where D_k is
the data chunk met k-th by md's syndrome walk (set_syndrome_sources): start
on the member after Q (member 0 if Q is the last), go up wrapping, skip P
and Q.  For the asymmetric layouts that is not the logical order.

Speed without numpy: P is one big-integer XOR per chunk; Q is evaluated by
Horner's rule, Q = (..(D_last * 2 + D_last-1) * 2 ..) + D_0, where "* 2" on
a whole chunk is one bytes.translate() through a 256-entry table.

Exit status: 0 all rows good; 1 a bad row (the first is named: row, which
parity, member, first differing byte); 2 usage or I/O error.
"""

import argparse
import os
import random
import sys

LAYOUTS = {
    "left-asymmetric": "la", "la": "la",
    "right-asymmetric": "ra", "ra": "ra",
    "left-symmetric": "ls", "ls": "ls", "default": "ls",
    "right-symmetric": "rs", "rs": "rs",
    "parity-first": "p0",
    "parity-last": "pn",
}

GF_POLY = 0x11d


def gf_mul2_table():
    t = bytearray(256)
    for b in range(256):
        x = b << 1
        if x & 0x100:
            x ^= GF_POLY
        t[b] = x
    return bytes(t)


MUL2 = gf_mul2_table()


def gf_mul_slow(a, b):
    """Shift-and-add multiplication: the self-test's independent path."""
    r = 0
    while b:
        if b & 1:
            r ^= a
        a <<= 1
        if a & 0x100:
            a ^= GF_POLY
        b >>= 1
    return r


def gf_pow2(k):
    r = 1
    for _ in range(k):
        r = gf_mul_slow(r, 2)
    return r


def parse_size(s):
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    s = s.strip()
    suffix = s[-1:].lower() if s[-1:].isalpha() else ""
    if suffix and suffix not in mult:
        raise argparse.ArgumentTypeError("bad size: %s" % s)
    return int(s[:len(s) - len(suffix)]) * mult[suffix]


def row_layout(level, layout, n, s):
    """(P member, Q member or None, [member of logical data chunk i])."""
    dd = n - (2 if level == 6 else 1)
    r = s % n
    q = None
    data = []
    if level == 5:
        if layout in ("la", "ls"):
            p = dd - r
        elif layout in ("ra", "rs"):
            p = r
        elif layout == "p0":
            p = 0
        else:
            p = dd
        for i in range(dd):
            if layout in ("la", "ra"):
                data.append(i + 1 if i >= p else i)
            elif layout in ("ls", "rs"):
                data.append((p + 1 + i) % n)
            elif layout == "p0":
                data.append(i + 1)
            else:
                data.append(i)
    else:
        if layout in ("la", "ra"):
            p = n - 1 - r if layout == "la" else r
            q = p + 1
            if p == n - 1:
                q = 0
                data = [i + 1 for i in range(dd)]
            else:
                data = [i + 2 if i >= p else i for i in range(dd)]
        elif layout in ("ls", "rs"):
            p = n - 1 - r if layout == "ls" else r
            q = (p + 1) % n
            data = [(p + 2 + i) % n for i in range(dd)]
        elif layout == "p0":
            p, q = 0, 1
            data = [i + 2 for i in range(dd)]
        else:
            p, q = dd, dd + 1
            data = list(range(dd))
    return p, q, data


def syndrome_order(n, p, q):
    """Members in md's Q syndrome order (slot 0 first)."""
    start = 0 if q == n - 1 else q + 1
    order = []
    for j in range(n):
        m = (start + j) % n
        if m != p and m != q:
            order.append(m)
    return order


def xor_chunks(chunks, size):
    x = 0
    for c in chunks:
        x ^= int.from_bytes(c, "little")
    return x.to_bytes(size, "little")


def q_syndrome(chunks, size):
    """chunks in slot order; Horner from the highest slot down."""
    q = bytes(chunks[-1])
    for c in reversed(chunks[:-1]):
        q = (int.from_bytes(q.translate(MUL2), "little")
             ^ int.from_bytes(c, "little")).to_bytes(size, "little")
    return q


def first_diff(a, b):
    for i in range(len(a)):
        if a[i] != b[i]:
            return i
    return -1


def size_of(path):
    """Bytes of a member: a file's size, or a block device's (whose
    st_size is 0), by seeking to its end."""
    with open(path, "rb") as f:
        return f.seek(0, os.SEEK_END)


# The row checker: every test that judges parity on member files (this
# program, faults.Array.bad_rows, faults.check_members) comes here.

def read_members(paths, data_offset, chunk, size=None):
    """(rows, [member's data area]): each member file from data_offset to
    the last whole chunk of the smallest one (or of size bytes: md's
    per-member size, when metadata follows the data, as md v1.0's does),
    as memoryviews."""
    smallest = min(size_of(m) for m in paths)
    if smallest < data_offset:
        raise OSError("data offset beyond the smallest member")
    if size is not None:
        if smallest < data_offset + size:
            raise OSError("the smallest member is shorter than the size")
        smallest = data_offset + size
    rows = (smallest - data_offset) // chunk
    span = rows * chunk
    bufs = []
    for m in paths:
        with open(m, "rb") as f:
            f.seek(data_offset)
            b = f.read(span)
        if len(b) != span:
            raise OSError("%s: short read" % m)
        bufs.append(memoryview(b))
    return rows, bufs


def row_mismatches(level, layout, n, s, col, chunk):
    """Row s's chunks col (one per member): (its data members in logical
    order, [(name "P"/"Q", member, what the data says it must hold)] for
    each parity chunk that does not match).  P is checked first."""
    p, q, data = row_layout(level, layout, n, s)
    bad = []
    want = xor_chunks([col[m] for m in data], chunk)
    if col[p] != want:
        bad.append(("P", p, want))
    if q is not None:
        want = q_syndrome([col[m] for m in syndrome_order(n, p, q)], chunk)
        if col[q] != want:
            bad.append(("Q", q, want))
    return data, bad


def scan(level, layout, chunk, data_offset, paths, rows=None, size=None):
    """For each row (default: every whole row of the smallest member, or
    of size bytes of each): (row, its chunks, its data members, its
    mismatches) as row_mismatches() gives them.  layout: a name or
    raidcheck's code."""
    layout = LAYOUTS.get(layout, layout)
    nrows, bufs = read_members(paths, data_offset, chunk, size)
    for s in range(nrows) if rows is None else rows:
        col = [b[s * chunk:(s + 1) * chunk] for b in bufs]
        data, bad = row_mismatches(level, layout, len(paths), s, col, chunk)
        yield s, col, data, bad


def bad_rows(level, layout, chunk, data_offset, paths, rows=None):
    """The rows (of those given) whose P or Q does not match their data."""
    return [s for s, _, _, bad in scan(level, layout, chunk, data_offset,
                                       paths, rows) if bad]


def image_of(level, layout, chunk, data_offset, paths):
    """(the array's data the member files hold, the first bad row as
    (row, name, member) or None)."""
    img = bytearray()
    first = None
    for s, col, data, bad in scan(level, layout, chunk, data_offset, paths):
        if bad and first is None:
            first = (s, bad[0][0], bad[0][1])
        for m in data:
            img += col[m]
    return bytes(img), first


def self_test():
    """Check the layout code against md(4)-style hand tables and the Q code
    against a slow shift-and-add evaluation."""
    # RAID-5, 4 members, rows 0..3: member of D0..D2 per row, and P.
    tables = {
        "la": [(3, [0, 1, 2]), (2, [0, 1, 3]), (1, [0, 2, 3]), (0, [1, 2, 3])],
        "ra": [(0, [1, 2, 3]), (1, [0, 2, 3]), (2, [0, 1, 3]), (3, [0, 1, 2])],
        "ls": [(3, [0, 1, 2]), (2, [3, 0, 1]), (1, [2, 3, 0]), (0, [1, 2, 3])],
        "rs": [(0, [1, 2, 3]), (1, [2, 3, 0]), (2, [3, 0, 1]), (3, [0, 1, 2])],
        "p0": [(0, [1, 2, 3])] * 4,
        "pn": [(3, [0, 1, 2])] * 4,
    }
    for lay, rows in tables.items():
        for s, (p, data) in enumerate(rows):
            got = row_layout(5, lay, 4, s)
            assert got == (p, None, data), (lay, s, got)
    # RAID-6, 6 members, row 2 (P on 3, Q on 4 for both left layouts).
    assert row_layout(6, "la", 6, 2) == (3, 4, [0, 1, 2, 5])
    assert row_layout(6, "ls", 6, 2) == (3, 4, [5, 0, 1, 2])
    assert syndrome_order(6, 3, 4) == [5, 0, 1, 2]
    # Row 0 of left-asymmetric: P last, Q wraps to member 0.
    assert row_layout(6, "la", 6, 0) == (5, 0, [1, 2, 3, 4])
    assert syndrome_order(6, 5, 0) == [1, 2, 3, 4]
    # Every row of every layout uses each member exactly once.
    for level in (5, 6):
        for lay in set(LAYOUTS.values()):
            for n in range(4, 12):
                for s in range(2 * n):
                    p, q, data = row_layout(level, lay, n, s)
                    used = [p] + ([q] if q is not None else []) + data
                    assert sorted(used) == list(range(n)), (level, lay, n, s)
    # GF(2^8): g^8 = 0x1d under 0x11d, g has order 255.
    assert gf_pow2(8) == 0x1d and gf_pow2(255) == 1
    assert all(gf_pow2(k) != 1 for k in range(1, 255))
    rng = random.Random(1)
    for ndata in (1, 2, 3, 7, 20):
        chunks = [bytes(rng.randrange(256) for _ in range(64))
                  for _ in range(ndata)]
        q = q_syndrome(chunks, 64)
        for b in range(64):
            want = 0
            for k, c in enumerate(chunks):
                want ^= gf_mul_slow(gf_pow2(k), c[b])
            assert q[b] == want, (ndata, b)
    print("raidcheck: self-test ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--level", type=int, choices=(5, 6))
    ap.add_argument("--layout", choices=sorted(LAYOUTS), default="left-symmetric")
    ap.add_argument("--chunk", type=parse_size)
    ap.add_argument("--data-offset", type=parse_size, default=0)
    ap.add_argument("--size", type=parse_size,
                    help="bytes of each member holding data (default: all "
                    "whole chunks of the smallest member)")
    ap.add_argument("--image", help="write the array's data here")
    ap.add_argument("--all", action="store_true",
                    help="check every row instead of stopping at the first bad one")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("members", nargs="*")
    a = ap.parse_args()

    if a.self_test:
        self_test()
        if not a.members:
            return 0
    if a.level is None or a.chunk is None:
        ap.error("--level and --chunk are required")
    layout = LAYOUTS[a.layout]
    n = len(a.members)
    npar = 2 if a.level == 6 else 1
    if n < npar + 2:
        ap.error("RAID-%d needs at least %d members" % (a.level, npar + 2))
    chunk = a.chunk
    if chunk < 512 or chunk & (chunk - 1):
        ap.error("--chunk must be a power of two")

    dd = n - npar
    row_bytes = dd * chunk
    image = open(a.image, "wb") if a.image else None
    bad = 0
    rows = 0
    try:
        for s, col, data, mismatches in scan(a.level, layout, chunk,
                                             a.data_offset, a.members,
                                             size=a.size):
            rows += 1
            for name, member, want in mismatches:
                x = first_diff(col[member], want)
                print("raidcheck: row %d (member offset %d, array bytes "
                      "%d..%d): %s on member %d (%s) is wrong: first bad "
                      "byte at chunk offset %d (member has 0x%02x, data "
                      "says 0x%02x)"
                      % (s, a.data_offset + s * chunk, s * row_bytes,
                         (s + 1) * row_bytes - 1, name, member,
                         a.members[member], x, col[member][x], want[x]),
                      file=sys.stderr)
                bad += 1
                if not a.all:
                    return 1
            if image:
                for m in data:
                    image.write(col[m])
    except OSError as e:
        print("raidcheck: %s" % e, file=sys.stderr)
        return 2
    if image:
        image.close()
    if bad:
        print("raidcheck: %d bad parity chunks" % bad, file=sys.stderr)
        return 1
    print("raidcheck: RAID-%d %s, %d members, chunk %d, data offset %d: "
          "%d rows, parity good" % (a.level, a.layout, n, chunk,
                                    a.data_offset, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
