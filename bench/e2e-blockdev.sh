#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Block-device members: a RAID-6 over six loop devices (losetup
# --direct-io=on over tmpfs files: O_DIRECT block devices, the closest to
# disks this machine has), which the plugin opens with O_DIRECT, against
# the six devices' own limit measured by fio on them directly, in one run.
#
#   limit    fio (io_uring, O_DIRECT) on the six devices at once, one job
#            per device, 4 KiB random writes and then reads, queue depth
#            DEV_DEPTH each: the IOPS the members can do together
#   raid     fio through NBD on the array: randwrite-4k, randread-4k (qd
#            32), seqwrite-1m, seqread-1m; nbdkit's CPU time per request
#   pinned   randwrite-4k with nbdkit pinned to one core, then to two
#            (taskset), so that the scaling shows
#
# A RAID-6 4 KiB write that is not a full row costs its members 3 reads
# (old data, P, Q) and 3 writes, a read 1: the table gives the share of
# the members' time the array's IOPS take (1.00: the members are the
# limit), computed from the limit run's read and write IOPS.
#
# Usage: bench/e2e-blockdev.sh [--quick|--smoke]   (root: losetup).
# Environment: as bench/common.sh, and DEV_DEPTH (default 8).
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup blockdev "$@"
DEV_DEPTH=${DEV_DEPTH:-8}
command -v losetup >/dev/null && [ "$(id -u)" = 0 ] ||
  { echo "blockdev: needs root and losetup" >&2; exit 1; }

loops=()
cleanup_loops () {
  for d in "${loops[@]}"; do losetup -d "$d" 2>/dev/null || true; done
  bench_cleanup
}
trap cleanup_loops EXIT
for i in 0 1 2 3 4 5; do
  truncate -s "$MEMBER_SIZE" "$dir/m$i.img"
  dd if=/dev/zero of="$dir/m$i.img" bs=1M count=$(( $(stat -c %s "$dir/m$i.img") >> 20 )) \
     conv=notrunc status=none    # allocated: a disk's blocks exist
  loops+=("$(losetup -f --show --direct-io=on "$dir/m$i.img")")
done

# The members' limit.
limit () {                      # limit RW -> total IOPS of the six
  local args=()
  for d in "${loops[@]}"; do args+=(--name="${d##*/}" --filename="$d"); done
  fio --output-format=json --output="$dir/limit.$1.json" --ioengine=io_uring \
    --direct=1 --rw="$1" --bs=4k --iodepth="$DEV_DEPTH" --time_based=1 \
    --runtime="$FIO_RUNTIME" --ramp_time="$FIO_RAMP" --group_reporting=1 \
    "${args[@]}" >/dev/null
  local rw=read
  [ "$1" = randwrite ] && rw=write
  /usr/bin/python3 -m fio_figures "$dir/limit.$1.json" $rw IOPS
}
lw=$(limit randwrite)
lr=$(limit randread)

# The array.
sock=$dir/raid.sock
export NBD_URI="nbd+unix:///?socket=$sock"
run_job () {                    # run_job NAME JOB [TASKSET-CPUS]
  local pid t0
  rm -f "$sock"
  if [ -n "${3:-}" ]; then
    taskset -c "$3" nbdkit -f -U "$sock" "$plugin" metadata=none level=6 \
      chunk="$CHUNK" "${loops[@]}" >>"$dir/nbdkit.log" 2>&1 &
  else
    nbdkit -f -U "$sock" "$plugin" metadata=none level=6 chunk="$CHUNK" \
      "${loops[@]}" >>"$dir/nbdkit.log" 2>&1 &
  fi
  pid=$!
  for _ in $(seq 100); do nbdinfo --can connect "$NBD_URI" 2>/dev/null && break; sleep 0.1; done
  FIO_SIZE=$(nbdinfo --size "$NBD_URI"); export FIO_SIZE
  t0=$(cpu_ticks "$pid")
  fio --output-format=json --output="$dir/$1.json" "$jobs/$2.fio" >/dev/null
  echo $(( $(cpu_ticks "$pid") - t0 )) > "$dir/$1.ticks"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}
for job in randwrite-4k randread-4k seqwrite-1m seqread-1m; do
  run_job "$job" "$job"
done
run_job pin1 randwrite-4k 0
run_job pin2 randwrite-4k 0,1

echo "e2e-blockdev: CPU $(cpu_name), $(nproc) cores; RAID-6 of 6 loop devices" \
     "(--direct-io=on, $MEMBER_SIZE tmpfs files), chunk $CHUNK; ${FIO_RUNTIME}s per job"
/usr/bin/python3 - "$dir" "$lw" "$lr" <<'PY'
import os, sys
from fio_figures import cpu_us, figure, side, ticks
d, lw, lr = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
def res(name, rw):
    s = side(f"{d}/{name}.json", rw)
    (t,) = ticks(f"{d}/{name}.ticks")
    return figure(s, "IOPS"), figure(s, "MB/s"), cpu_us(t, s)
print(f"the six devices together (fio, io_uring, O_DIRECT, 4K, qd {os.environ.get('DEV_DEPTH', '8')} each): "
      f"random write {lw:.0f} IOPS, random read {lr:.0f} IOPS")
w, _, wcpu = res("randwrite-4k", "write")
r, _, rcpu = res("randread-4k", "read")
_, sw, swcpu = res("seqwrite-1m", "write")
_, sr, srcpu = res("seqread-1m", "read")
print(f"{'job':14} {'IOPS':>9} {'MB/s':>8} {'cpu us/req':>11} {'of the members limit':>21}")
print(f"{'randwrite-4k':14} {w:9.0f} {'':>8} {wcpu:11.1f} {w * (3 / lr + 3 / lw):21.2f}")
print(f"{'randread-4k':14} {r:9.0f} {'':>8} {rcpu:11.1f} {r / lr:21.2f}")
print(f"{'seqwrite-1m':14} {'':>9} {sw:8.1f} {swcpu:11.1f}")
print(f"{'seqread-1m':14} {'':>9} {sr:8.1f} {srcpu:11.1f}")
p1, _, c1 = res("pin1", "write")
p2, _, c2 = res("pin2", "write")
print(f"randwrite-4k, nbdkit pinned to 1 core: {p1:.0f} IOPS ({c1:.1f} us/req), "
      f"to 2 cores: {p2:.0f} IOPS ({c2:.1f} us/req): {p2 / p1:.2f}x")
print("(a RAID-6 4K write costs the members 3 reads and 3 writes, a read 1;"
      " 'of the members limit' = the share of their time the array's IOPS take)")
PY
