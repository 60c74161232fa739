#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""What a bad sector costs: the raid plugin against a member whose listed
4 KiB ranges fail reads until written, served over NBD by the tests'
bad-sector plugin (tests/lib/nbdkit-badsector-plugin.c, a "badsector"
member of tests/lib/faults.py).  Two cases, each an md array made with
create=true (16 MiB members, chunk 64K, left-symmetric), its first
resync done, filled with random data (the shadow); the other members are
local files:

  raid6   RAID-6 of 6, healthy; one 4 KiB range unreadable in a data
          chunk of member 2 in each of 12 rows spread over the array;
          the whole array read in 1 MiB requests.  Printed: whether the
          reads returned the shadow, member 2's state, how many of its 96
          bad sectors a write mended, the member's EIO replies, and what
          a scrub check finds afterwards.
  raid5   RAID-5 of 4; member 0 failed and replaced by a file of noise;
          before the rebuild starts, four 4 KiB ranges of member 2 go
          bad, in rows 32, 96, 160 and 224 (2, 6, 10 and 14 MiB into its
          data); the rebuild runs to its end, then every 4 KiB block of
          the array is read once.  Printed: the states, how far the
          rebuild got, how many blocks can no longer be read, how many
          sectors were mended.

Asserted, in both: every read that succeeds returns the shadow's bytes
(a failure must be an error, never wrong data); and in raid6 that every
read succeeds (RAID-6 with one member in trouble serves everything).
The rest is printed, not judged: it is what read-error correction is to
change.  Not a test (make check does not run it): run it by hand, from
a built tree, with make bench-media-errors (which builds the bad-sector
plugin first) or bench/media-errors.py [raid6|raid5].
"""

import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "lib"))
import faults  # noqa: E402
import workload as wl  # noqa: E402

K, M = 1024, 1024 * 1024
MSIZE, CHUNK, BLOCK = 16 * M, 64 * K, 4 * K
BAD = 2                         # the member whose sectors go bad


def md_array(hz, level, kinds):
    """An md array made with create=true, resynced, filled; its shadow."""
    arr = hz.array(kinds, member_size=MSIZE, level=level, chunk=CHUNK,
                   data_offset=None, control=True, params=["create=true"])
    arr.ctl.wait_idle(120)
    shadow = wl.fill(arr.h, random.Random(level))
    return arr, shadow


def bad_in_row(arr, s, in_chunk):
    """Make 4 KiB of member BAD's chunk in row s unreadable."""
    off = arr.data_offset + s * arr.chunk + in_chunk
    arr.members[BAD].add_bad_range(off, BLOCK)
    return off


def eio_replies(m):
    """How many requests the member's server failed for a bad sector."""
    with open(m.logfile, errors="replace") as f:
        return sum("unreadable sector" in line for line in f)


def mended(m):
    return sum(n for _, n in m.healed_ranges()) // 512


def failure(st, i):
    f = st["members"][i]["failure"]
    return "none" if f is None else f["reason"]


def report(what, value, issue=None):
    faults.log("  %-44s %s%s" % (what, value,
                                 "" if issue is None else
                                 "   (issue, on main: %s)" % issue))


def raid6(hz):
    arr, shadow = md_array(hz, 6, ["local", "local", "badsector",
                                   "local", "local", "local"])
    m = arr.members[BAD]
    rows = [s for s in range(arr.rows) if BAD in arr.layout_of(s)[2]]
    rows = [rows[i * len(rows) // 12] for i in range(12)]
    for k, s in enumerate(rows):
        bad_in_row(arr, s, (k % 16) * BLOCK)
    faults.log("raid6: RAID-6 of 6, %d rows of %d KiB; 4 KiB unreadable on "
               "member %d in rows %s" % (arr.rows, arr.row // K, BAD, rows))
    wrong = failed = 0
    for off in range(0, arr.size, M):
        got, err = wl.try_io(arr.h.pread, min(M, arr.size - off), off)
        if err:
            failed += 1
        elif got != shadow[off:off + len(got)]:
            wrong += 1
    assert wrong == 0, "raid6: %d reads returned wrong data" % wrong
    assert failed == 0, "raid6: %d reads failed" % failed
    report("whole-array read equals the shadow", "yes")
    st = arr.ctl.status()
    report("member states", " ".join(m["state"] for m in st["members"]),
           "member 2 failed, array degraded")
    report("member %d's failure" % BAD, failure(st, BAD))
    report("bad sectors mended (rewritten)", "%d of %d" % (mended(m),
                                                           12 * BLOCK // 512),
           "0 of 96")
    report("member %d's EIO replies" % BAD, eio_replies(m))
    arr.ctl.ok("scrub check")
    sc = arr.ctl.wait_idle(300)["scrub"]
    report("scrub check after: mismatches, unreadable",
           "%d, %d bytes" % (sc["mismatch_cnt"], sc["unreadable_bytes"]))
    arr.stop()


def raid5(hz):
    arr, shadow = md_array(hz, 5, ["local", "local", "badsector", "local"])
    m = arr.members[BAD]
    spare = os.path.join(hz.dir, "spare")
    faults.noise_file(spare, MSIZE)
    arr.ctl.ok("fail 0")
    rows = [32, 96, 160, 224]
    for s in rows:
        bad_in_row(arr, s, 2 * BLOCK)
    faults.log("raid5: RAID-5 of 4, %d rows of %d KiB; member 0 replaced; "
               "4 KiB unreadable on member %d in rows %s"
               % (arr.rows, arr.row // K, BAD, rows))
    arr.ctl.ok("replace 0 " + spare)
    st = arr.ctl.wait_idle(300)
    blocks = arr.size // BLOCK
    unreadable = wrong = 0
    for off in range(0, arr.size, BLOCK):
        got, err = wl.try_io(arr.h.pread, BLOCK, off)
        if err:
            unreadable += 1
        elif got != shadow[off:off + BLOCK]:
            wrong += 1
    assert wrong == 0, "raid5: %d blocks read back wrong data" % wrong
    report("member states", " ".join(m["state"] for m in st["members"]),
           "member 2 failed mid-rebuild")
    report("member %d's failure" % BAD, failure(st, BAD))
    report("member 0 rebuilt up to", "row %d of %d" % (
        st["members"][0]["recovery_offset"] // arr.chunk, arr.rows))
    report("4 KiB blocks that cannot be read",
           "%d of %d (%.0f%%)" % (unreadable, blocks, 100.0 * unreadable /
                                  blocks), "4,992 of 11,520 (43%)")
    report("blocks read back wrong", wrong)
    report("bad sectors mended (rewritten)", "%d of %d" % (
        mended(m), len(rows) * BLOCK // 512))
    report("member %d's EIO replies" % BAD, eio_replies(m))
    arr.stop()


CASES = {"raid6": raid6, "raid5": raid5}

with faults.Test(plugins=["badsector"], filters=["error"], seed=False,
                 timeout=900) as hz:
    for name in sys.argv[1:] or list(CASES):
        CASES[name](hz)
