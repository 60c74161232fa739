#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Failure benchmark: a RAID-6 of six tmpfs members served healthy, with one
# and with two members failed (fail N through the control socket), read by
# fio's nbd engine in one run so the ratios compare like with like; then the
# rebuild speed of a tmpfs member, idle and under a random-write load.
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

fio_val () {                    # fio_val JOB RW KEY -> number
  fio --output-format=json --output="$dir/out.json" "$jobs/$1.fio" >/dev/null
  /usr/bin/python3 -c "import json,sys; j=json.load(open('$dir/out.json'))['jobs'][0]['$2']; print(j['iops'] if '$3'=='iops' else j['bw_bytes']/1e6)"
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
  rr[$state]=$(fio_val randread-4k read iops)
  sr[$state]=$(fio_val seqread-1m read bw)
done
printf '%-12s %14s %8s %14s %8s\n' state "4K rand IOPS" ratio "1M seq MB/s" ratio
for state in healthy one-failed two-failed; do
  printf '%-12s %14.0f %8.2f %14.1f %8.2f\n' "$state" "${rr[$state]}" \
    "$(echo "${rr[$state]} / ${rr[healthy]}" | bc -l)" "${sr[$state]}" \
    "$(echo "${sr[$state]} / ${sr[healthy]}" | bc -l)"
done

rebuild () {                    # rebuild MEMBER -> seconds, polled every 20 ms
  truncate -s "$MEMBER_SIZE" "$dir/new$1.img"
  /usr/bin/python3 - "$ctl" "$dir/ctl" "$1" "$dir/new$1.img" <<'PY'
import json, subprocess, sys, time
ctl, sock, member, path = sys.argv[1:]
def ask(*cmd):
    return subprocess.run([ctl, sock, *cmd], capture_output=True, text=True).stdout
t0 = time.monotonic()
assert ask("replace", member, path).strip() == "ok"
while json.loads(ask("status"))["members"][int(member)]["state"] != "in_sync":
    time.sleep(0.02)
print(time.monotonic() - t0)
PY
}
size_mb=$(( $(stat -c %s "$dir/m0.img") / 1000000 ))
t=$(rebuild 1)
printf 'rebuild of one %s member, idle:          %6.2f s = %7.1f MB/s\n' "$MEMBER_SIZE" "$t" "$(echo "$size_mb / $t" | bc -l)"
fio --output-format=json --output=/dev/null "$jobs/randwrite-4k.fio" >/dev/null &
load=$!
sleep 1
t=$(rebuild 4)
wait $load || true
printf 'rebuild of one %s member, 4K randwrite: %6.2f s = %7.1f MB/s\n' "$MEMBER_SIZE" "$t" "$(echo "$size_mb / $t" | bc -l)"
"$ctl" "$dir/ctl" show > "$dir/show"   # whole: head would cut its pipe
head -n 1 "$dir/show"
