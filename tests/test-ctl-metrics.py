#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""nbdkit-raid-ctl metrics, read by Prometheus's own parser (Debian's
python3-prometheus-client), says what the array does, and show and wait
say when a job will end, as /proc/mdstat does.

A raw RAID-6 of five members (member 0 behind nbdkit's error filter,
member 3 with a quote, a backslash and a line feed in its path):
  - after a known set of client requests, the array's counters are
    exactly those requests, and the members' are what a raw RAID-6 must
    send them for it (a full-row write: one chunk to each member; a
    read inside a chunk: those bytes from its member; a flush: one each);
  - the node_md_* metrics are node_exporter's names with the values md
    would give; every metric equals the status JSON it came from;
  - member 0 failing reads: its read errors count, it is failed with a
    timestamp, the clients saw no error;
  - a rebuild throttled to RATE: node_md_state recovering, blocks_synced
    growing; the member being rebuilt counted as node_exporter counts it
    on md (/proc/mdstat gives it neither (F) nor (S) and leaves it out of
    [n/m]; md/degraded counts it): node_md_disks active n - 1, failed 0,
    spare 0, node_md_degraded 1, node_md_raid_disks n; the finish
    estimate and the speed, in the metrics, in show and in every line of
    wait, agree with RATE and what is left;
  - a scrub after one P page was corrupted: mismatch_cnt 1.
"""

import os
import re
import time

import faults

K = 1024
n, chunk, rows = 5, 16 * K, 64
msize = rows * chunk
RATE = 256 * K                  # rebuild-rate: a 1 MiB member in 4 s
PROGRESS = re.compile(r"^rebuild = +(\d+\.\d)% \((\d+)/(\d+)\) "
                      r"finish=(\?|\d+\.\dmin) speed=(\d+)K/sec, member 0$")


def scrape(arr, *device):
    """{(name, frozenset(labels)): value} from nbdkit-raid-ctl metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    rc, out, err = faults.ctl_tool(arr.ctlpath, "metrics", *device)
    assert rc == 0, "metrics: exit %d: %s" % (rc, err)
    samples = {}
    for fam in text_string_to_metric_families(out):
        for s in fam.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in samples, "sample twice: %s" % (key,)
            samples[key] = s.value
    return samples


def get(samples, metric, **labels):
    lb = dict(device="array0", **{k: str(v) for k, v in labels.items()})
    key = (metric, frozenset(lb.items()))
    assert key in samples, "no sample %s%s" % (metric, lb)
    return samples[key]


def expect(samples, metric, want, **labels):
    got = get(samples, metric, **labels)
    assert got == want, "%s%s is %r, expected %r" % (metric, labels, got,
                                                     want)


with faults.Test(timeout=120) as hz:
    try:
        import prometheus_client.parser  # noqa: F401
    except ImportError:
        raise faults.Skip("this test reads the metrics with Debian's "
                          "python3-prometheus-client, which is not installed")
    members = [hz.member(msize, "remote")] + \
        [hz.member(msize, "local") for _ in range(n - 1)]
    odd = os.path.join(hz.dir, 'odd"name\\member\nthree')
    os.rename(members[3].path, odd)
    members[3].path = odd
    arr = hz.array(members, level=6, chunk=chunk, layout="left-symmetric",
                   control=True, params=["rebuild-rate=%d" % RATE])
    row = arr.row

    # Known requests: 8 full rows written, 5 reads of 4 KiB inside chunks,
    # a flush; then a zero and a trim of a row each.
    for s in range(8):
        arr.h.pwrite(bytes([s + 1]) * row, s * row)
    for i in range(5):
        arr.h.pread(4096, 10 * row + i * chunk + 4096)
    arr.h.flush()
    m = scrape(arr)
    st = arr.ctl.status()
    for op, reqs, nbytes in (("write", 8, 8 * row), ("read", 5, 5 * 4096),
                             ("flush", 1, 0), ("zero", 0, 0)):
        expect(m, "nbdkit_raid_requests_total", reqs, op=op)
        expect(m, "nbdkit_raid_bytes_total", nbytes, op=op)
        expect(m, "nbdkit_raid_errors_total", 0, op=op)
        assert st["io"][op] == {"requests": reqs, "bytes": nbytes,
                                "errors": 0}, (op, st["io"])
    for i in range(n):
        expect(m, "nbdkit_raid_member_bytes_total", 8 * chunk, member=i,
               op="write")
        expect(m, "nbdkit_raid_member_requests_total", 1, member=i,
               op="flush")
        assert st["members"][i]["io"]["write"]["bytes"] == 8 * chunk
    assert sum(get(m, "nbdkit_raid_member_bytes_total", member=i, op="read")
               for i in range(n)) == 5 * 4096
    arr.h.zero(row, 20 * row)
    arr.h.trim(row, 21 * row)
    m = scrape(arr)
    for op in ("zero", "trim"):
        expect(m, "nbdkit_raid_requests_total", 1, op=op)
        expect(m, "nbdkit_raid_bytes_total", row, op=op)

    # node_exporter's md names, with md's values for a healthy array.
    for state in ("active", "inactive", "recovering", "resync", "check"):
        expect(m, "node_md_state", int(state == "active"), state=state)
    for state, want in (("active", n), ("failed", 0), ("spare", 0)):
        expect(m, "node_md_disks", want, state=state)
    expect(m, "node_md_disks_required", n)
    expect(m, "node_md_raid_disks", n)
    expect(m, "node_md_degraded", 0)
    expect(m, "node_md_blocks", arr.size // K)
    expect(m, "node_md_blocks_synced", arr.size // K)
    expect(m, "nbdkit_raid_info", 1, level="raid6", layout="left-symmetric")
    expect(m, "nbdkit_raid_member_state", 1, member=3, name=odd,
           state="in_sync")
    assert scrape(arr, "other")[("node_md_blocks", frozenset(
        {"device": "other"}.items()))] == arr.size // K

    # Member 0 fails its reads: a read of a chunk on it is served anyway.
    members[0].fail_reads(True)
    s, i = next((s, i) for s in range(8) for i in range(n - 2)
                if arr.layout_of(s)[2][i] == 0)
    t0 = time.time()
    assert arr.h.pread(4096, arr.chunk_offset(s, i)) == bytes([s + 1]) * 4096
    m = scrape(arr)
    assert get(m, "nbdkit_raid_member_errors_total", member=0, op="read") >= 1
    expect(m, "nbdkit_raid_errors_total", 0, op="read")
    for state, want in (("active", n - 1), ("failed", 1)):
        expect(m, "node_md_disks", want, state=state)
    expect(m, "node_md_degraded", 1)
    expect(m, "nbdkit_raid_degraded", 1)
    expect(m, "nbdkit_raid_member_state", 1, member=0, name=members[0].disk,
           state="failed")
    fails = [(dict(k), v) for (metric, k), v in m.items()
             if metric == "nbdkit_raid_member_failure_timestamp_seconds"]
    assert len(fails) == 1, fails
    (labels, when), = fails
    assert labels["member"] == "0" and labels["reason"] and \
        t0 - 2 <= when <= time.time() + 1, fails

    # A throttled rebuild: what is left over RATE is what the estimate says.
    spare = os.path.join(hz.dir, "spare")
    faults.noise_file(spare, msize)
    arr.ctl.ok("replace 0 " + spare)
    seen = []
    while True:
        st = arr.ctl.status()
        m = scrape(arr)
        r = st["rebuild"]
        if not r["running"]:
            break
        if r["finish_s"] is None or r["done"] < 4 * chunk:
            time.sleep(0.05)
            continue
        expect(m, "node_md_state", 1, state="recovering")
        expect(m, "node_md_state", 0, state="active")
        for state, want in (("active", n - 1), ("failed", 0), ("spare", 0)):
            expect(m, "node_md_disks", want, state=state)
        expect(m, "node_md_degraded", 1)
        expect(m, "node_md_raid_disks", n)
        synced = get(m, "node_md_blocks_synced")
        assert 0 < synced < arr.size // K, synced
        done = get(m, "nbdkit_raid_member_recovered_bytes", member=0)
        left = msize - done
        finish = get(m, "nbdkit_raid_rebuild_finish_seconds")
        speed = get(m, "nbdkit_raid_rebuild_speed_bytes_per_second")
        # The throttle lets row k go once k - 1 rows' time has passed.
        top = 1.05 * RATE * done / (done - chunk)
        assert 0.6 * RATE <= speed <= top, "speed %d, rate %d, %d done" % (
            speed, RATE, done)
        assert 0.6 * left / RATE - 0.3 <= finish <= 1.5 * left / RATE + 0.3, \
            "finish in %.1f s with %d bytes left at %d/s" % (finish, left, RATE)
        rc, out, err = faults.ctl_tool(arr.ctlpath, "show")
        line = [x for x in out.splitlines() if x.startswith("rebuild")]
        assert rc == 0 and len(line) == 1 and PROGRESS.match(line[0]), out
        kps = int(PROGRESS.match(line[0]).group(5))
        assert 0.6 * RATE / K <= kps <= top / K, line
        seen.append((left, finish))
        if len(seen) == 3:
            break
        time.sleep(0.5)
    assert len(seen) == 3, "the rebuild ended before it was seen 3 times"
    faults.log("  rebuild: (bytes left, finish s) %s" % seen)
    rc, out, err = faults.ctl_tool(arr.ctlpath, "wait", "60")
    lines = out.splitlines()
    assert rc == 0 and lines and all(PROGRESS.match(x) for x in lines), \
        (rc, out, err)
    finishes = [PROGRESS.match(x).group(4) for x in lines]
    assert "?" not in finishes, finishes
    faults.log("  wait: %s ... %s" % (lines[0], lines[-1]))
    m = scrape(arr)
    expect(m, "node_md_state", 1, state="active")
    expect(m, "node_md_disks", n, state="active")
    expect(m, "node_md_degraded", 0)
    expect(m, "nbdkit_raid_rebuild_running", 0)
    expect(m, "nbdkit_raid_member_resynced_bytes", msize, member=0)
    assert not any(k[0] == "nbdkit_raid_rebuild_finish_seconds" for k in m)

    # One P page corrupted, with nbdkit stopped: the scrub counts 1.
    arr.stop()
    s = 40
    p = arr.layout_of(s)[0]
    arr.members[0] = faults.FileMember(spare)
    faults.corrupt(arr.members[p].path, s * chunk, 16)
    arr.start()
    arr.ctl.ok("scrub check")
    st = arr.ctl.wait_idle(30)
    m = scrape(arr)
    expect(m, "nbdkit_raid_scrub_mismatch_cnt", 1)
    expect(m, "nbdkit_raid_scrub_finished", 1)
    assert st["scrub"]["mismatch_cnt"] == 1, st["scrub"]
