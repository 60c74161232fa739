#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Host side of test-vm-md-badblocks.sh, the plugin to md direction: an
array whose members' bad-block logs the plugin itself wrote, for md to
read in the guest.

    badblocks-record.py DIR PATGEN

RAID-5 of 4 members of 8 MiB, made by the plugin (create=true, md v1.2,
64 KiB chunks), member 2 served by the bad-sector plugin
(tests/lib/nbdkit-badsector-plugin.c); the whole array written with
patgen's seed 1.  Then, as md would record them:
  - member 0 fails and is replaced by a new file; before the rebuild, a
    4 KiB range of member 2 goes bad for reads and writes, in a row
    where members 0 and 2 both hold data: the rebuild cannot
    reconstruct member 0's page there, records the range on member 2
    and on the replacement, and those two pages of the array are lost;
  - after the rebuild, two 4 KiB ranges of member 2 refuse writes, one
    in a row where member 2 holds data and one where it holds parity,
    and the client writes the same pattern over them again: the writes
    succeed degraded and the ranges go into member 2's log.
The plugin is stopped cleanly.  Left in DIR for the shell test:
  roles.txt     the member file of each role, role 0 first
  expected.txt  "ROLE SECTOR LENGTH": the ranges caused, in member
                sectors from the member's start, as md's log holds them
  lost.txt      "FIRST N": the array sectors lost (from the status)
  size.txt      the array's size in sectors
  status.json   the control socket's status after the writes
Exits non-zero, with a traceback, if the plugin does not get there.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import faults  # noqa: E402

K, M = 1024, 1024 * 1024
MSIZE, CHUNK, PAGE = 8 * M, 64 * K, 4 * K
BAD = 2

out, patgen = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
with faults.Harness(out) as hz:
    arr = hz.array(["local", "local", "badsector", "local"],
                   member_size=MSIZE, level=5, chunk=CHUNK,
                   data_offset=None, control=True, params=["create=true"])
    arr.ctl.wait_idle(120)
    sectors = arr.size // 512
    img = os.path.join(out, "pattern")
    open(img, "wb").close()
    subprocess.check_call([patgen, "1", "0", str(sectors), img])
    with open(img, "rb") as f:
        pattern = f.read()
    os.unlink(img)
    for off in range(0, arr.size, M):
        arr.h.pwrite(pattern[off:off + M], off)
    arr.h.flush()
    m = arr.members[BAD]
    doff = arr.data_offset

    def member_sector(s, c):
        return (doff + s * CHUNK + c) // 512

    # Rows by what member 2 (and member 0) hold, from raidcheck.py's
    # layout; a page a few pages into the chunk, not the first.
    both_data = [s for s in range(arr.rows)
                 if {0, BAD} <= set(arr.layout_of(s)[2])]
    s_lost = both_data[len(both_data) // 3]
    data2 = [s for s in range(arr.rows)
             if BAD in arr.layout_of(s)[2] and s != s_lost]
    parity2 = [s for s in range(arr.rows) if arr.layout_of(s)[0] == BAD]
    s_data = data2[2 * len(data2) // 3]
    s_par = parity2[len(parity2) // 2]
    c_lost, c_data, c_par = 3 * PAGE, 7 * PAGE, 11 * PAGE

    arr.ctl.ok("fail 0")
    spare = os.path.join(out, "spare")
    faults.noise_file(spare, MSIZE)
    m.add_bad_range(doff + s_lost * CHUNK + c_lost, PAGE, "both")
    arr.ctl.ok("replace 0 " + spare)
    st = arr.ctl.wait_idle(300)
    states = [x["state"] for x in st["members"]]
    assert states == ["in_sync"] * 4, "after the rebuild: %s" % states

    m.add_bad_range(doff + s_data * CHUNK + c_data, PAGE, "write")
    m.add_bad_range(doff + s_par * CHUNK + c_par, PAGE, "write")
    i = arr.layout_of(s_data)[2].index(BAD)
    for a in (s_data * arr.row + i * CHUNK + c_data,
              s_par * arr.row + c_par):
        arr.h.pwrite(pattern[a:a + PAGE], a)
    arr.h.flush()
    st = arr.ctl.status()
    with open(os.path.join(out, "status.json"), "w") as f:
        json.dump(st, f, indent=1)
    assert arr.stop() == 0, "nbdkit did not stop cleanly"

    expected = [(0, member_sector(s_lost, c_lost), PAGE // 512)]
    expected += [(BAD, member_sector(s, c), PAGE // 512)
                 for s, c in sorted([(s_lost, c_lost), (s_data, c_data),
                                     (s_par, c_par)])]
    with open(os.path.join(out, "expected.txt"), "w") as f:
        for e in expected:
            print(*e, file=f)
    with open(os.path.join(out, "roles.txt"), "w") as f:
        print(spare, *(x.path for x in arr.members[1:]), sep="\n", file=f)
    with open(os.path.join(out, "lost.txt"), "w") as f:
        for r in st["lost"]:
            print(r["offset"] // 512, r["length"] // 512, file=f)
    with open(os.path.join(out, "size.txt"), "w") as f:
        print(sectors, file=f)
    faults.log("rows: lost %d (members 0 and %d data), write-bad data %d, "
               "write-bad parity %d; data offset %d" % (s_lost, BAD, s_data,
                                                        s_par, doff))
