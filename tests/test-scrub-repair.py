#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Scrub finds exactly the pages that were corrupted, and repair fixes them.
With nbdkit stopped, bytes are flipped straight in the member files: P
pages, Q pages, P and Q of one page, a P corruption across a page
boundary (two pages), and data blocks.  Then on a fresh start:
  scrub check   counts the corrupted 4 KiB pages exactly (mismatch_cnt,
                like md) and writes nothing to any member; for RAID-6
                each corrupted data block is located from the syndrome
                and named in bad_data (row and member);
  scrub repair  fixes them: for RAID-6 the located data blocks get their
                old bytes back, for RAID-5 (which cannot tell) the parity
                is rewritten over the corrupted data;
  scrub check   again finds nothing, and raidcheck.py finds every row's
                parity right and the image equal to the expected one.

RAID_TEST_SEED=N replays a run.
"""

import random

import faults
import workload as wl

K = 1024
PAGE = 4096
rows = 32

# level, members, layout, chunk, data offset
configs = [
    (6, 6, "left-symmetric",   16 * K, 8 * K),
    (6, 5, "left-asymmetric",  8 * K,  0),
    (6, 7, "parity-last",      4 * K,  4 * K),
    (5, 4, "right-asymmetric", 8 * K,  0),
    (5, 5, "left-symmetric",   16 * K, 12 * K),
]


with faults.Test() as hz:
    seed = hz.seed
    for ci, (level, n, layout, chunk, doff) in enumerate(configs):
        rng = random.Random(seed * 100 + ci)
        what = "RAID-%d %s, %d members, chunk %d, data offset %d" % (
            level, layout, n, chunk, doff)
        msize = doff + rows * chunk
        members = [hz.member(msize, "local") for _ in range(n)]
        paths = [m.path for m in members]
        geo = dict(level=level, chunk=chunk, layout=layout, data_offset=doff,
                   control=True)
        arr = hz.array(members, **geo)
        shadow = wl.fill(arr.h, rng)
        arr.stop()
        pages = chunk // PAGE

        def at(s, pg, byte=0):
            """Member file offset of byte `byte` of page pg in row s."""
            return doff + s * chunk + pg * PAGE + byte

        # Corruptions: (row, member, member offset, length, xor), and what
        # each should count.  Row numbers spread over the rotations.
        expect_cnt = 0
        expect_bad = []
        cuts = []
        s = 1; p, q, data = arr.layout_of(s)          # P, one byte
        cuts.append((p, at(s, 0), 1, 0x01)); expect_cnt += 1
        s = 2; p, q, data = arr.layout_of(s)          # a whole P or Q page
        cuts.append((q if level == 6 else p, at(s, pages - 1), PAGE, 0xa5))
        expect_cnt += 1
        s = 7; p, q, data = arr.layout_of(s)          # P across two pages
        if pages > 1:
            cuts.append((p, at(s, 0, PAGE - 6), 16, 0x5a)); expect_cnt += 2
        else:
            cuts.append((p, at(s, 0, PAGE - 6), 6, 0x5a)); expect_cnt += 1
        s = 5; p, q, data = arr.layout_of(s)          # one data block
        dm = data[1]
        cuts.append((dm, at(s, pages - 1, 100), 3, 0x3c)); expect_cnt += 1
        if level == 6:
            expect_bad.append((s, dm))
        else:
            # RAID-5 cannot tell data from parity: repair keeps the data.
            lo = s * arr.row + 1 * chunk + (pages - 1) * PAGE + 100
            shadow[lo:lo + 3] = bytes(b ^ 0x3c for b in shadow[lo:lo + 3])
        s = 9; p, q, data = arr.layout_of(s)          # another data block
        dm = data[-1]
        cuts.append((dm, at(s, 0), 32, 0x81)); expect_cnt += 1
        if level == 6:
            expect_bad.append((s, dm))
        else:
            lo = s * arr.row + (len(data) - 1) * chunk
            shadow[lo:lo + 32] = bytes(b ^ 0x81 for b in shadow[lo:lo + 32])
        s = 12; p, q, data = arr.layout_of(s)         # P and Q of one page
        cuts.append((p, at(s, 0, 10), 10, 0x01))
        if level == 6:
            cuts.append((q, at(s, 0, 200), 10, 0x55))
        expect_cnt += 1
        for m, off, length, x in cuts:
            members[m].corrupt(off, length, xor=x)
        faults.log("  %s: %d corruptions, expecting mismatch_cnt %d, bad_data %s"
               % (what, len(cuts), expect_cnt, expect_bad))

        arr = hz.array(members, **geo)
        ctl = arr.ctl
        before = faults.md5s(paths)
        ctl.ok("scrub check")
        st = ctl.wait_idle(60)["scrub"]
        got_bad = sorted((b["stripe"], b["member"]) for b in st["bad_data"])
        assert st["finished"] and st["repair"] is False and \
            st["done"] == st["total"], "%s: check: %s" % (what, st)
        assert st["mismatch_cnt"] == expect_cnt, \
            "%s: scrub check counted %d mismatched pages, %d were corrupted" \
            % (what, st["mismatch_cnt"], expect_cnt)
        assert got_bad == sorted(expect_bad), \
            "%s: scrub check: bad_data %s, expected %s (row, member)" % (
                what, got_bad, sorted(expect_bad))
        assert faults.md5s(paths) == before, "%s: scrub check wrote to a member" % what

        ctl.ok("scrub repair")
        st = ctl.wait_idle(60)["scrub"]
        got_bad = sorted((b["stripe"], b["member"]) for b in st["bad_data"])
        assert st["finished"] and st["repair"] is True, \
            "%s: repair: %s" % (what, st)
        assert st["mismatch_cnt"] == expect_cnt and got_bad == sorted(expect_bad), \
            "%s: scrub repair found %d pages and bad_data %s; expected %d, %s" \
            % (what, st["mismatch_cnt"], got_bad, expect_cnt, sorted(expect_bad))

        ctl.ok("scrub check")
        st = ctl.wait_idle(60)["scrub"]
        assert st["finished"] and st["mismatch_cnt"] == 0 and \
            st["bad_data"] == [], "%s: check after repair: %s" % (what, st)
        wl.compare_all(arr, shadow, what + ": after repair")

        # scrub stop: either it stopped early or it had already finished.
        ctl.ok("scrub check")
        ctl.ok("scrub stop")
        st = ctl.wait_idle(60)["scrub"]
        assert st["finished"] == (st["done"] == st["total"]), \
            "%s: after scrub stop: %s" % (what, st)
        arr.stop()
        faults.check_members(arr, paths, shadow, what + ": after repair")
        faults.log("  %s: check and repair found exactly the corrupted pages; "
               "parity and data right after repair" % what)
