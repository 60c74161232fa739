# SPDX-License-Identifier: BSD-3-Clause
"""remote_restart.run(MODE, HOW): a remote member's server is restarted
while the array is idle, and comes back over the same disk or another.

MODE  md:  the array has md superblocks (create=true)
      raw: it has none (metadata=none)
HOW   same:   the same file (a planned restart of a storage server)
      empty:  an empty memory disk of the same size (the disk was lost)
      bigger: the same file, grown by 1 MiB (another disk, by its size)
      older:  a copy of the file taken before the array failed another
              member (md only: its superblock is behind)

Before the restart the array is filled and read with many requests in
flight, so that many nbdkit threads each hold their own connection to
every member; all of them are stale after the restart, and each
reconnects when it next needs the member.

What must happen (a new connection is trusted only once it is checked to
be the disk the array knows: a server restarted over another disk must
not be read as the member; docs/design.md, "Trust boundaries and
identity"):
  md same     the member stays in sync: no request fails, and writes
              made afterwards reach it (every row's parity is good on the
              member files at the end).
  otherwise   the member is failed, with the reason in the log ("... is
              not the member's disk: ..."), and never read: every chunk
              reads back as the shadow, byte for byte, and writes go on.
              (raw same: nothing proves a restarted server still holds a
              raw member's data, so it is failed too.)

Run by test-remote-restart.py (md same), -restart-raw.py (raw same)
and test-remote-identity-{empty,bigger,older}.py.
"""

import shutil

import faults
import workload as wl

K = 1024
HOWS = {"same": "the same file", "empty": "an empty memory disk",
        "bigger": "the same file grown by 1 MiB",
        "older": "an older copy of its file"}


def busy_reads(arr, depth=16):
    """Many reads in flight, so that many nbdkit threads open their own
    connection to every member."""
    h = arr.h
    wl.in_flight(h, (lambda off=off: h.aio_pread(faults.nbd.Buffer(4096), off)
                     for off in range(0, arr.size, 4096)), depth)


def run(MODE, HOW):
    assert MODE in ("md", "raw") and HOW in HOWS
    KEEP = MODE == "md" and HOW == "same"
    with faults.Test(filters=["error"], timeout=50) as hz:
        rng = hz.rng
        params = ["member-timeout=2"]
        if MODE == "md":
            params.append("create=true")
            doff = 1024 * K             # room for the superblock and bitmap
        else:
            params.append("metadata=none")
            doff = 0
        arr = hz.array(["remote", "remote", "local", "remote", "remote"],
                       member_size=doff + 16 * 16 * K, level=6, chunk=16 * K,
                       data_offset=doff, params=params, control=True)
        ctl = arr.ctl
        ctl.wait_idle(30)               # a new md array's first resync
        k = 1
        m = arr.members[k]
        shadow = wl.fill(arr.h, rng, step=4 * arr.row)
        for _ in range(3):
            busy_reads(arr)
        if HOW == "older":
            shutil.copyfile(m.path, m.path + ".old")
            ctl.ok("fail 3")            # the superblocks count one event up
            m.kill()
            shutil.copyfile(m.path + ".old", m.path)
            m.start()
        elif HOW == "same":
            m.restart()
        elif HOW == "empty":
            m.restart(plugin="memory")
        else:
            m.restart(size=m.size + 1024 * K)
        print("%s array: member %d restarted over %s" % (MODE, k, HOWS[HOW]),
              flush=True)

        failed = []
        wrong = 0
        for s in range(arr.rows):
            for i in range(arr.dd):
                off = arr.chunk_offset(s, i)
                got, err, dt = wl.timed(arr.h.pread, arr.chunk, off)
                if err is not None:
                    failed.append((s, i, arr.where(off)[2], err))
                elif got != shadow[off:off + arr.chunk]:
                    wrong += 1
        print("  %d of %d chunk reads failed, %d read wrong%s"
              % (len(failed), arr.rows * arr.dd, wrong,
                 ": " + ", ".join("row %d chunk %d (member %d) %s" % f
                                  for f in failed[:6]) if failed else ""),
              flush=True)
        assert wrong == 0, "%d chunks read wrong after the restart" % wrong
        assert not failed, "reads failed after the restart"

        wfailed = 0
        for _ in range(40):
            off = rng.randrange(0, arr.size - 4096)
            data = rng.randbytes(4096)
            _, err, dt = wl.timed(arr.h.pwrite, data, off)
            wfailed += err is not None
            if err is None:
                shadow[off:off + 4096] = data
        arr.h.flush()
        print("  %d of 40 writes failed" % wfailed, flush=True)
        assert wfailed == 0, "writes failed after the restart"
        assert arr.h.pread(arr.size, 0) == shadow, "array differs from the shadow"

        state = ctl.states()[k]
        reasons = [line for line in arr.log().splitlines()
                   if "is not the member's disk" in line]
        print("  member %d: %s%s" % (k, state, "; logged: " + reasons[0].split(
            "error: ", 1)[-1] if reasons else ""), flush=True)
        if KEEP:
            assert state == "in_sync", "the member was failed: %s" % reasons
            bad = arr.bad_rows()
            print("  rows with bad parity on the member files: %s" % (bad or "none"),
                  flush=True)
            assert not bad, "writes after the restart did not reach member %d" % k
        else:
            assert state == "failed", \
                "member %d is %s after coming back as another disk" % (k, state)
            assert reasons and m.disk in reasons[0], \
                "no reason logged for failing member %d" % k
