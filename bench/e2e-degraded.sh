#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Failure benchmark: a RAID-6 of six tmpfs members served healthy, with one
# and with two members failed (fail N through the control socket), read by
# fio's nbd engine in one run so the ratios compare like with like; then the
# rebuild speed of a tmpfs member, idle and under a random-write load, and
# of a member of a mostly empty (sparse) array against the full one.
#
# Usage: bench/e2e-degraded.sh [--quick|--smoke]   (from a built tree;
# make bench-degraded).  Environment: CHUNK (default 256K), MEMBER_SIZE
# (default 256M), FIO_RUNTIME (default 10), DIR (default /dev/shm).
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup degraded "$@"

disks=
for i in 0 1 2 3 4 5; do
  truncate -s "$MEMBER_SIZE" "$dir/m$i.img"
  disks="$disks disk=$dir/m$i.img"
done
sock=$dir/raid.sock
# shellcheck disable=SC2086
bg_serve "$sock" "$plugin" metadata=none level=6 chunk="$CHUNK" control="$dir/ctl" $disks
export NBD_URI="nbd+unix:///?socket=$sock"
FIO_SIZE=$(nbdinfo --size "$NBD_URI")
export FIO_SIZE

fio_val () {                    # fio_val JOB RW UNIT -> number (fio_figures.py)
  fio --output-format=json --output="$dir/out.json" "$jobs/$1.fio" >/dev/null
  /usr/bin/python3 -m fio_figures "$dir/out.json" "$2" "$3"
}

cpu=$(cpu_name)
echo "e2e-degraded: CPU $cpu, $(nproc) cores; RAID-6, 6 members on $base, chunk $CHUNK, ${FIO_RUNTIME}s per job"
fio --output-format=json --output=/dev/null "$jobs/seqwrite-1m.fio" >/dev/null   # fill

declare -A rr sr
for state in healthy one-failed two-failed; do
  case $state in
    one-failed) "$ctl" "$dir/ctl" fail 1 >/dev/null ;;
    two-failed) "$ctl" "$dir/ctl" fail 4 >/dev/null ;;
  esac
  rr[$state]=$(fio_val randread-4k read IOPS)
  sr[$state]=$(fio_val seqread-1m read MB/s)
done
printf '%-12s %14s %8s %14s %8s\n' state "4K rand IOPS" ratio "1M seq MB/s" ratio
for state in healthy one-failed two-failed; do
  printf '%-12s %14.0f %8.2f %14.1f %8.2f\n' "$state" "${rr[$state]}" \
    "$(echo "${rr[$state]} / ${rr[healthy]}" | bc -l)" "${sr[$state]}" \
    "$(echo "${sr[$state]} / ${sr[healthy]}" | bc -l)"
done

# rebuild MEMBER -> seconds, polled every 10 ms.  The replacement is
# allocated first, as a disk's blocks exist: on this VM the first touch of
# memory the guest has not used yet (or gave back through free page
# reporting) costs the host a fault per page, and writing 1 GiB of such
# tmpfs pages took 3.9 s against 0.5 s for pages used before, which would
# time the VM, not the rebuild.  The poller speaks to the control socket
# itself: a nbdkit-raid-ctl process per poll took a core's worth of CPU
# from the rebuild on a 2-core machine.
# rebuild MEMBER sparse: the replacement is a sparse file instead.
rebuild () {
  rm -f "$dir/new$1.img"
  truncate -s "$MEMBER_SIZE" "$dir/new$1.img"
  [ "${2:-}" = sparse ] ||
    dd if=/dev/zero of="$dir/new$1.img" bs=1M count=$(( $(stat -c %s "$dir/new$1.img") >> 20 )) \
       conv=notrunc status=none
  /usr/bin/python3 - "$dir/ctl" "$1" "$dir/new$1.img" <<'PY'
import json, socket, sys, time
sock, member, path = sys.argv[1:]
def ask(line):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(sock)
        s.sendall(line.encode() + b"\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        return data.decode()
t0 = time.monotonic()
assert ask(f"replace {member} {path}").strip() == "ok"
while json.loads(ask("status"))["members"][int(member)]["state"] != "in_sync":
    time.sleep(0.01)
print(time.monotonic() - t0)
PY
}
size_mb=$(( $(stat -c %s "$dir/m0.img") / 1000000 ))
# Member 4 with member 1 still failed (two lost: every survivor is read),
# then member 1 alone lost, idle, then member 2 under load: the last two
# do the same work.
t=$(rebuild 4)
printf 'rebuild of one %s member, idle, another failed: %6.2f s = %7.1f MB/s\n' "$MEMBER_SIZE" "$t" "$(echo "$size_mb / $t" | bc -l)"
t=$(rebuild 1) t_idle=$t
printf 'rebuild of one %s member, idle:                 %6.2f s = %7.1f MB/s\n' "$MEMBER_SIZE" "$t" "$(echo "$size_mb / $t" | bc -l)"
"$ctl" "$dir/ctl" fail 2 >/dev/null
# Under load: the clients' IOPS in 100 ms samples (fio's iops log), before
# the rebuild (from the ramp's end) and while it runs, from one fio job.
fio --output-format=json --output=/dev/null --write_iops_log="$dir/load" \
  --log_avg_msec=100 "$jobs/randwrite-4k.fio" >/dev/null &
load=$!
t_fio=$(date +%s.%N)
sleep $(( FIO_RAMP + ${FIO_RUNTIME%.*} / 3 + 1 ))
t_rb=$(date +%s.%N)
t=$(rebuild 2)
t_end=$(date +%s.%N)
wait $load || true
read -r before during < <(/usr/bin/python3 - "$dir"/load_iops.*.log \
  "$(echo "($t_rb - $t_fio) * 1000" | bc)" "$(echo "($t_end - $t_fio) * 1000" | bc)" "$FIO_RAMP" <<'PY'
import sys
*logs, t0, t1, ramp = sys.argv[1:]
t0, t1, ramp = float(t0), float(t1), float(ramp) * 1000
samples = [tuple(float(x) for x in line.split(",")[:2])
           for log in logs for line in open(log)]
def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")
print(mean([v for t, v in samples if ramp < t <= t0]),
      mean([v for t, v in samples if t0 < t <= t1]))
PY
)
printf 'rebuild of one %s member, 4K randwrite:         %6.2f s = %7.1f MB/s\n' "$MEMBER_SIZE" "$t" "$(echo "$size_mb / $t" | bc -l)"
if [ "$during" = nan ] || [ "$before" = nan ]; then
  echo "clients, 4K randwrite IOPS: no 100 ms sample before and during the rebuild (too short)"
else
  printf 'clients, 4K randwrite IOPS: %.0f before the rebuild, %.0f during it: %.2f\n' \
    "$before" "$during" "$(echo "$during / $before" | bc -l)"
fi
"$ctl" "$dir/ctl" show > "$dir/show"   # whole: head would cut its pipe
head -n 1 "$dir/show"

# A mostly empty array: all but the first 1/64 of the array zeroed without
# NO_HOLE (the plugin punches whole rows on every member), then member 1
# replaced as above, in the same process.  Rows that every survivor holds
# as holes are punched on the replacement, nothing read or computed
# (stripe_recover.c), so this takes a fraction of the idle full rebuild
# (the target: at least 10 times faster).  Twice: the replacement allocated as above (each
# punch then frees its pages: on tmpfs about 65 ms a GiB, a floor), and a
# sparse file, the natural replacement for sparse members.
written=$(( $(nbdinfo --size "$NBD_URI") / 64 ))
/usr/bin/nbdsh -u "$NBD_URI" -c "
size, off, step = h.get_size(), $written, 1 << 30
while off < size:
    h.zero(min(step, size - off), off)
    off += step
h.flush()
"
for kind in allocated sparse; do
  "$ctl" "$dir/ctl" fail 1 >/dev/null
  t=$(rebuild 1 $kind)
  printf 'rebuild of one %s member, 1/64 written, %-9s %6.2f s = %7.1f MB/s, %.1fx faster than full\n' \
    "$MEMBER_SIZE" "$kind:" "$t" "$(echo "$size_mb / $t" | bc -l)" "$(echo "$t_idle / $t" | bc -l)"
done
