#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# End-to-end benchmark: fio's nbd engine against RAID-6 and RAID-5 arrays
# of six tmpfs members, and against nbdkit's file plugin on one tmpfs file
# (the NBD floor on this machine), all in one run so that the ratios
# compare like with like on a shared, noisy machine.
#
# Usage: bench/e2e.sh [--quick]      (run from a built tree; make bench-e2e)
# Environment: CHUNK (default 256K: a RAID-6 row of 4 data chunks is then
# 1 MiB, the size of the sequential jobs), MEMBER_SIZE (default 256M),
# FIO_RUNTIME (seconds per job, default 10), DIR (default /dev/shm).
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

run_jobs () {                   # run_jobs TARGET SOCKET SIZE
  local target=$1 sock=$2
  export NBD_URI="nbd+unix:///?socket=$sock" FIO_SIZE=$3
  for job in seqwrite-1m randwrite-4k randread-4k seqread-1m rmw-latency-4k; do
    fio --output-format=json --output="$dir/$target.$job.json" "$jobs/$job.fio" >/dev/null
  done
}

cpu=$(cpu_name)
echo "e2e: CPU $cpu, $(nproc) cores; members on $base; chunk $CHUNK; ${FIO_RUNTIME}s per job"
echo "e2e: $(nbdkit "$plugin" --dump-plugin | grep -E '^raid_parity=')"

# The floor: one file of the arrays' size behind the file plugin.
rm -f "$dir"/m*.img
truncate -s 1G "$dir/single.img"
serve file file "$dir/single.img"
run_jobs file "$sock" 1G
stop_last; rm -f "$dir/single.img"

for level in 6 5; do
  disks=$(members 6)
  # shellcheck disable=SC2086
  serve raid$level "$plugin" metadata=none level=$level chunk=$CHUNK $disks
  run_jobs raid$level "$sock" 1G
  stop_last; rm -f "$dir"/m*.img
done

/usr/bin/python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
jobs = [("seqwrite-1m", "write", "MB/s"), ("randwrite-4k", "write", "IOPS"),
        ("randread-4k", "read", "IOPS"), ("seqread-1m", "read", "MB/s"),
        ("rmw-latency-4k", "write", "us")]
def val(target, job, rw, unit):
    j = json.load(open(f"{d}/{target}.{job}.json"))["jobs"][0][rw]
    if unit == "IOPS": return j["iops"]
    if unit == "MB/s": return j["bw_bytes"] / 1e6
    return j["clat_ns"]["mean"] / 1e3
print(f"{'job':16} {'unit':5} {'file':>10} {'raid6':>10} {'raid5':>10} {'raid6/file':>11} {'raid5/file':>11}")
for job, rw, unit in jobs:
    f, r6, r5 = (val(t, job, rw, unit) for t in ("file", "raid6", "raid5"))
    # For latency, lower is better: the ratio is still raid/file.
    print(f"{job:16} {unit:5} {f:10.1f} {r6:10.1f} {r5:10.1f} {r6/f:11.2f} {r5/f:11.2f}")
PY
