#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# End-to-end benchmark: fio's nbd engine against RAID-6 and RAID-5 arrays
# of six tmpfs members, and against nbdkit's file plugin on one tmpfs file
# (the NBD floor on this machine), all in one run so that the ratios
# compare like with like on a shared, noisy machine.
#
# Usage: bench/e2e.sh [--quick|--smoke]      (run from a built tree; make bench-e2e)
# Environment: CHUNK (default 256K: a RAID-6 row of 4 data chunks is then
# 1 MiB, the size of the sequential jobs), MEMBER_SIZE (default 256M),
# FIO_RUNTIME (seconds per job, default 10), DIR (default /dev/shm).
#
# BASELINE=PLUGIN.so (another build of this plugin, e.g. an older commit's
# plugin/.libs/nbdkit-raid-plugin.so) serves the same arrays right after
# this build's, level by level, and the table gains this build's figure
# over the baseline's (for latency too: above 1 is then slower).
# ROUNDS=N repeats the file plugin and the raid arrays N times (default 1),
# the arrays in the other order every second round, and reports medians.
# JOBS="seqwrite-1m ..." runs those of the five jobs only.
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup e2e "$@"

members () {                    # members N -> disk=... list
  for ((i = 0; i < $1; i++)); do
    truncate -s "$MEMBER_SIZE" "$dir/m$i.img"
    echo -n " disk=$dir/m$i.img"
  done
}

serve () {                      # serve NAME ARGS...: sets $sock
  sock="$dir/$1.sock"; shift
  bg_serve "$sock" "$@"
}

run_jobs () {                   # run_jobs TARGET SOCKET SIZE (server: the last started)
  local target=$1 sock=$2 pid=${pids[-1]} t0
  export NBD_URI="nbd+unix:///?socket=$sock" FIO_SIZE=$3
  for job in $JOBS; do
    t0=$(cpu_ticks "$pid")
    fio --output-format=json --output="$dir/$target.$job.json" "$jobs/$job.fio" >/dev/null
    echo $(( $(cpu_ticks "$pid") - t0 )) > "$dir/$target.$job.ticks"
  done
}

JOBS=${JOBS:-seqwrite-1m randwrite-4k randread-4k seqread-1m rmw-latency-4k}
cpu=$(cpu_name)
echo "e2e: CPU $cpu, $(nproc) cores; members on $base; chunk $CHUNK; ${FIO_RUNTIME}s per job"
echo "e2e: $(nbdkit "$plugin" --dump-plugin | grep -E '^raid_parity=')"

# variants: "raid" is this build, "base" the baseline's.
variants=(raid)
if [ -n "${BASELINE:-}" ]; then
  [ -f "$BASELINE" ] || { echo "e2e: BASELINE=$BASELINE: no such file" >&2; exit 1; }
  variants+=(base)
  echo "e2e: baseline $BASELINE"
fi
rounds=${ROUNDS:-1}
for ((r = 1; r <= rounds; r++)); do
  # The floor: one file of the arrays' size behind the file plugin.
  truncate -s 1G "$dir/single.img"
  serve file.$r file "$dir/single.img"
  run_jobs file.$r "$sock" 1G
  stop_last; rm -f "$dir/single.img"
  order=("${variants[@]}")
  # Even rounds go the other way round (ABBA): what runs second in a pair
  # (warmer caches, a busier machine) is not always the same build.
  (( r % 2 )) || order=($(printf '%s\n' "${variants[@]}" | tac))
  for level in 6 5; do
    for v in "${order[@]}"; do
      p=$plugin
      [ "$v" = raid ] || p=$BASELINE
      disks=$(members 6)
      # shellcheck disable=SC2086
      serve $v$level.$r "$p" metadata=none level=$level chunk=$CHUNK $disks
      run_jobs $v$level.$r "$sock" 1G
      stop_last; rm -f "$dir"/m*.img
    done
  done
done

/usr/bin/python3 - "$dir" "$rounds" "${#variants[@]}" "$JOBS" <<'PY'
import statistics, sys
from fio_figures import cpu_us as per_request, figure, side, ticks
d, rounds, nvar = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
jobs = [("seqwrite-1m", "write", "MB/s"), ("randwrite-4k", "write", "IOPS"),
        ("randread-4k", "read", "IOPS"), ("seqread-1m", "read", "MB/s"),
        ("rmw-latency-4k", "write", "us")]
jobs = [j for j in jobs if j[0] in sys.argv[4].split()]
def one(target, job, rw, unit):
    return figure(side(f"{d}/{target}.{job}.json", rw), unit)
def cpu_us(target, job, rw):
    """The server's CPU time (user + system) per request, in us."""
    (t,) = ticks(f"{d}/{target}.{job}.ticks")
    return per_request(t, side(f"{d}/{target}.{job}.json", rw))
def val(target, job, rw, unit, f=one):
    return statistics.median(f(f"{target}.{r}", job, rw, unit)
                             for r in range(1, rounds + 1))
cols = ["raid6", "raid5"] + (["base6", "base5"] if nvar > 1 else [])
head = f"{'job':16} {'unit':5} {'file':>10}" + "".join(f" {c:>9}" for c in cols)
head += f" {'raid6/file':>11} {'raid5/file':>11}"
if nvar > 1:
    head += f" {'raid6/base6':>12} {'raid5/base5':>12}"
print(head)
for job, rw, unit in jobs:
    f = val("file", job, rw, unit)
    v = {c: val(c, job, rw, unit) for c in cols}
    # For latency, lower is better: the ratio is still raid/file.
    line = f"{job:16} {unit:5} {f:10.1f}" + "".join(f" {v[c]:9.1f}" for c in cols)
    line += f" {v['raid6']/f:11.2f} {v['raid5']/f:11.2f}"
    if nvar > 1:
        line += f" {v['raid6']/v['base6']:12.2f} {v['raid5']/v['base5']:12.2f}"
    print(line)
print()
print("server CPU time per request (user + system, us):")
print(f"{'job':16} {'file':>10}" + "".join(f" {c:>9}" for c in cols))
for job, rw, unit in jobs:
    cu = lambda t, j, r, u: cpu_us(t, j, r)
    print(f"{job:16} {val('file', job, rw, unit, cu):10.1f}" +
          "".join(f" {val(c, job, rw, unit, cu):9.1f}" for c in cols))
PY
