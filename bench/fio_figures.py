# SPDX-License-Identifier: BSD-3-Clause
"""Figures from the end-to-end benchmarks' files: fio's JSON output, and
the CPU clock ticks (user + system, from /proc/PID/stat; common.sh's
cpu_ticks) that a script wrote beside it over the same job.

One place for what every report computes the same way: a job's IOPS,
MB/s and latency, and CPU time per request (ticks over the requests fio
completed), so that the tables of e2e.sh, e2e-remote.sh, e2e-blockdev.sh
and the others cannot drift apart.  bench/common.sh puts bench/ on
PYTHONPATH; the scripts' report code imports this module, and their shell
functions run it:

    python3 -m fio_figures FIO.json read|write IOPS|MB/s|us|lat-us

prints one figure of the job's read or write side.
"""
import json
import os
import sys

HZ = os.sysconf("SC_CLK_TCK")


def job(path):
    """The first (the only) job in fio's JSON output."""
    with open(path) as f:
        return json.load(f)["jobs"][0]


def side(path, rw):
    """The read or write side of that job."""
    return job(path)[rw]


def figure(s, unit):
    """IOPS, MB/s, mean completion latency ("us") or mean total latency
    ("lat-us", submission included) of one side, in microseconds."""
    if unit == "IOPS":
        return s["iops"]
    if unit == "MB/s":
        return s["bw_bytes"] / 1e6
    if unit == "us":
        return s["clat_ns"]["mean"] / 1e3
    if unit == "lat-us":
        return s["lat_ns"]["mean"] / 1e3
    raise ValueError(f"fio_figures: unknown unit {unit!r}")


def ticks(path):
    """The tick counts a script wrote on one line, as a tuple of ints."""
    with open(path) as f:
        return tuple(int(t) for t in f.read().split())


def cpu_us(t, s):
    """CPU time per request in us: t clock ticks over the requests of
    side s (fio's total_ios, which counts those after the ramp; the ticks
    include the ramp, so this is an upper bound, the same for every
    column of a table)."""
    return t * 1e6 / HZ / max(s["total_ios"], 1)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: python3 -m fio_figures FIO.json read|write IOPS|MB/s|us|lat-us")
    print(figure(side(sys.argv[1], sys.argv[2]), sys.argv[3]))
