#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""fill-missing: write the chunks a missing RAID-6 member would hold.

    fill-missing.py LAYOUT CHUNK DATA_OFFSET ROLE OUT m0 m1 ... (ROLE's
    entry among the members is ignored; OUT gets its content)

For each row, the missing member's chunk is derived from the others
without P's and Q's equations both: a data or P chunk from P (the XOR of
the row's other non-Q chunks), a Q chunk from the data.  Every row then
still has one equation not used (Q where the chunk came from P, P where it
was Q), so raidcheck.py over the filled members checks that the degraded
writes left the survivors consistent.  The layout code is raidcheck.py's.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import raidcheck  # noqa: E402

layout = raidcheck.LAYOUTS[sys.argv[1]]
chunk = raidcheck.parse_size(sys.argv[2])
doff = raidcheck.parse_size(sys.argv[3])
role = int(sys.argv[4])
out = sys.argv[5]
members = sys.argv[6:]
n = len(members)
files = [None if i == role else open(m, "rb") for i, m in enumerate(members)]
rows = (min(os.path.getsize(m) for i, m in enumerate(members) if i != role) - doff) // chunk
with open(out, "wb") as o:
    o.truncate(doff + rows * chunk)
    for s in range(rows):
        p, q, data = raidcheck.row_layout(6, layout, n, s)
        c = {}
        for i, f in enumerate(files):
            if f is not None:
                f.seek(doff + s * chunk)
                c[i] = f.read(chunk)
        if role == q:
            val = raidcheck.q_syndrome([c[m] for m in raidcheck.syndrome_order(n, p, q)], chunk)
        else:
            val = raidcheck.xor_chunks([c[i] for i in c if i != q], chunk)
        o.seek(doff + s * chunk)
        o.write(val)
print("fill-missing: role %d, %d rows" % (role, rows))
