#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A remote member's server holds writes in a volatile cache (nbdkit's
cache filter, cache=writeback: a write reaches the file only with a
flush) and is restarted before the array flushed, so it comes back
without the writes it acknowledged, over a disk whose md superblock
(flushed, as every metadata write is) still says it is the member.

The member must be failed at its next connection, with the reason in
the log, and every chunk must read back as written: reconstructed from
the other members.  Before, the member passed its identity check, and
the reads it served returned the data from before the lost writes.
Re-add then rebuilds the rows the bitmap marks, the lost writes' among
them, and the member files agree with their parity.
(plugin/member_nbd.c, "Writes lost with their connection".)
"""

import faults
import workload as wl

K = 1024

with faults.Test(filters=["cache", "error"], timeout=50) as hz:
    rng = hz.rng
    doff = 1024 * K                     # room for the superblock and bitmap
    size = doff + 16 * 16 * K
    k = 1
    members = [hz.member(size, "remote") for _ in range(5)]
    members[k] = hz.member(size, "remote", filters=["cache"],
                           extra=["cache=writeback"])
    arr = hz.array(members, level=6, chunk=16 * K, data_offset=doff,
                   params=["member-timeout=2", "create=true"], control=True)
    ctl = arr.ctl
    ctl.wait_idle(30)                   # a new md array's first resync
    shadow = wl.fill(arr.h, rng, step=arr.row)      # flushed
    for off in range(0, arr.size, arr.row):          # not flushed
        data = rng.randbytes(arr.row)
        arr.h.pwrite(data, off)
        shadow[off:off + arr.row] = data
    members[k].restart()                # its cache is lost
    print("member %d restarted without the writes since the last flush" % k,
          flush=True)

    wrong = [s for s in range(arr.rows) for i in range(arr.dd)
             if arr.h.pread(arr.chunk, arr.chunk_offset(s, i)) !=
             shadow[arr.chunk_offset(s, i):arr.chunk_offset(s, i) + arr.chunk]]
    state = ctl.states()[k]
    reasons = [line for line in arr.log().splitlines()
               if "were never flushed" in line]
    print("  %d chunks read wrong; member %d %s%s"
          % (len(wrong), k, state, "; logged: " + reasons[0].split(
              "error: ", 1)[-1] if reasons else ""), flush=True)
    assert not wrong, "rows %s read the data from before the lost writes" \
        % sorted(set(wrong))[:8]
    assert state == "failed", "member %d is %s after losing acknowledged " \
        "writes" % (k, state)
    assert reasons and members[k].disk in reasons[0], \
        "no reason logged for failing member %d" % k

    # The lost writes' rows are marked in the write-intent bitmap (a bit
    # is set and flushed before its rows are written): re-add rebuilds
    # them, and the member files agree with their parity again.
    ctl.ok("re-add %d" % k)
    ctl.wait_idle(30)
    arr.h.flush()                       # the rebuilt rows leave the cache
    state, bad = ctl.states()[k], arr.bad_rows()
    print("  re-added: member %d %s, rows with bad parity on the member "
          "files: %s" % (k, state, bad or "none"), flush=True)
    assert state == "in_sync", "member %d is %s after the re-add" % (k, state)
    assert not bad, "the re-add left rows %s inconsistent" % bad[:8]
    assert arr.h.pread(arr.size, 0) == shadow, "array differs from the shadow"
