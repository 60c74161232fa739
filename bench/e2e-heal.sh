#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# How fast a member heals after an outage: re-add from the write-intent
# bitmap against a full rebuild, and what a heal costs the clients.
#
# One RAID-6 md array of six MEMBER_SIZE tmpfs members (chunk CHUNK,
# bitmap-chunk BITMAP_CHUNK), member 1 served by its own nbdkit (file
# plugin), as a remote member is.  After create=true's initial resync:
#
#   outage   member 1's server is killed (SIGKILL), the array is written
#            while it is out (OUTAGE_RUNS runs of 1 MiB writes at random
#            places, OUTAGE_PERCENT of the array in all, as a VM's writes
#            during a blip land in a few places), then its server is
#            started again on the same file
#   re-add   `re-add 1` until the status says no rebuild runs (polled
#            every 5 ms): the heal from the bitmap
#   rebuild  `fail 1`, `replace 1` by a fresh empty server, timed the
#            same way: the full rebuild the re-add saves
#   clients  fio randwrite-4k.fio (4 KiB random writes, queue depth 32)
#            with no heal running, then the same job started with a full
#            rebuild (the heal that lasts long enough to measure under),
#            its IOPS against the idle run's
#
# Each round repeats all four; the table gives medians over ROUNDS, the
# heal times' ratio, the bytes each heal wrote (the control socket's
# `resynced`), and how long the rebuild ran of the fio job it was measured
# under (a rebuild that ends early dilutes the ratio: the row says so).
#
# Usage: bench/e2e-heal.sh [--quick|--smoke]  (from a built tree; make bench-heal).
# Environment: MEMBER_SIZE (default 1G), CHUNK (256K), BITMAP_CHUNK (1M),
# OUTAGE_PERCENT (2), OUTAGE_RUNS (16), ROUNDS (3), FIO_RUNTIME (10),
# DIR (/dev/shm).
set -euo pipefail
source "$(dirname "$0")/common.sh"
MEMBER_SIZE=${MEMBER_SIZE:-1G}
bench_setup heal "$@"
mpid=
trap '[ -z "$mpid" ] || kill -9 "$mpid" 2>/dev/null || true; bench_cleanup' EXIT
ROUNDS=${ROUNDS:-3}
BITMAP_CHUNK=${BITMAP_CHUNK:-1M}
OUTAGE_PERCENT=${OUTAGE_PERCENT:-2}
OUTAGE_RUNS=${OUTAGE_RUNS:-16}
sock=$dir/raid.sock ctlsock=$dir/ctl msock=$dir/m1.sock
uri="nbd+unix:///?socket=$sock"

now () { date +%s.%N; }

# member_serve FILE SOCK: the remote member's server; its pid in mpid.
member_serve () {
  rm -f "$2"
  nbdkit -f -U "$2" file "$1" >>"$dir/member.log" 2>&1 &
  mpid=$!
  for _ in $(seq 100); do
    nbdinfo --can connect "nbd+unix:///?socket=$2" 2>/dev/null && return
    sleep 0.1
  done
  echo "heal: the member server did not start" >&2; exit 1
}

status_of () {   # status_of FIELD: member 1's FIELD from the status JSON
  "$ctl" "$ctlsock" status |
    /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['members'][1]['$1'])"
}

# heal_seconds COMMAND...: send the control command, then poll the
# status every 5 ms until no rebuild runs; prints the seconds from
# sending it to the first idle status (nbdkit-raid-ctl wait polls every
# half second, too coarse for a re-add of a few hundred milliseconds).
heal_seconds () {
  /usr/bin/python3 - "$ctlsock" "$*" <<'PY'
import json, socket, sys, time
path, line = sys.argv[1], sys.argv[2]
def cmd(line):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(line.encode() + b"\n")
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    return out.decode().strip()
t0 = time.monotonic()
r = cmd(line)
if r != "ok":
    sys.exit("heal: %r: %s" % (line, r))
while json.loads(cmd("status"))["rebuild"]["running"]:
    time.sleep(0.005)
print("%.4f" % (time.monotonic() - t0))
PY
}

fio_iops () {    # fio_iops OUT: runs randwrite-4k, prints its write IOPS
  NBD_URI=$uri FIO_SIZE=$(nbdinfo --size "$uri") \
    fio --output-format=json --output="$1" "$jobs/randwrite-4k.fio" >/dev/null
  /usr/bin/python3 -m fio_figures "$1" write IOPS
}

round () {
  local k=$1 disks=() i t0 t1
  for ((i = 0; i < 6; i++)); do
    rm -f "$dir/m$i.img"; truncate -s "$MEMBER_SIZE" "$dir/m$i.img"
    disks+=("$dir/m$i.img")
  done
  rm -f "$dir/spare.img"; truncate -s "$MEMBER_SIZE" "$dir/spare.img"
  member_serve "$dir/m1.img" "$msock"
  disks[1]="nbd+unix:///?socket=$msock"
  rm -f "$ctlsock"
  bg_serve "$sock" "$plugin" control="$ctlsock" create=true level=6 \
    chunk="$CHUNK" bitmap-chunk="$BITMAP_CHUNK" bitmap-delay=1 "${disks[@]}"
  "$ctl" "$ctlsock" wait 3600 >/dev/null
  sleep 3                       # the first resync's bits clear

  # The outage.
  kill -9 "$mpid"; wait "$mpid" 2>/dev/null || true
  /usr/bin/python3 - "$uri" "$OUTAGE_PERCENT" "$OUTAGE_RUNS" "$k" <<'PY'
import random, sys
import nbd
uri, pct, runs, seed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
h = nbd.NBD(); h.connect_uri(uri)
size, M = h.get_size(), 1 << 20
rng = random.Random(seed)
per_run = max(1, int(size * pct / 100 / runs // M))
buf = bytes(rng.getrandbits(8) for _ in range(M))
for _ in range(runs):
    off = rng.randrange(0, size // M - per_run) * M
    for j in range(per_run):
        h.pwrite(buf, off + j * M)
h.flush(); h.shutdown()
PY
  [ "$(status_of state)" = failed ] || { echo "heal: member 1 did not fail" >&2; exit 1; }
  member_serve "$dir/m1.img" "$msock"

  echo "$(heal_seconds re-add 1) $(status_of resynced)" > "$dir/readd.$k"
  [ "$(status_of state)" = in_sync ] || { echo "heal: the re-add did not end in sync" >&2; exit 1; }

  # The full rebuild, idle.
  "$ctl" "$ctlsock" fail 1 >/dev/null
  kill -9 "$mpid"; wait "$mpid" 2>/dev/null || true
  member_serve "$dir/spare.img" "$msock"
  echo "$(heal_seconds replace 1 "nbd+unix:///?socket=$msock") $(status_of resynced)" > "$dir/rebuild.$k"

  # Clients: idle, then under a full rebuild.
  fio_iops "$dir/idle.$k.json" > "$dir/idle.$k"
  "$ctl" "$ctlsock" fail 1 >/dev/null
  kill -9 "$mpid"; wait "$mpid" 2>/dev/null || true
  rm -f "$dir/spare.img"; truncate -s "$MEMBER_SIZE" "$dir/spare.img"
  member_serve "$dir/spare.img" "$msock"
  t0=$(now); "$ctl" "$ctlsock" replace 1 "nbd+unix:///?socket=$msock" >/dev/null
  fio_iops "$dir/heal.$k.json" > "$dir/heal.$k"
  t1=$(now)
  "$ctl" "$ctlsock" wait 3600 >/dev/null
  echo "$(echo "$(now) - $t0" | bc -l) $(echo "$t1 - $t0" | bc -l)" > "$dir/healrun.$k"
  stop_last
  kill -9 "$mpid"; wait "$mpid" 2>/dev/null || true
  rm -f "$dir"/m*.img "$dir/spare.img"
}

echo "e2e-heal: CPU $(cpu_name), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo "e2e-heal: RAID-6, 6 members of $MEMBER_SIZE on $base (member 1 over NBD), chunk $CHUNK," \
     "bitmap-chunk $BITMAP_CHUNK; outage writes $OUTAGE_PERCENT% in $OUTAGE_RUNS runs; $ROUNDS rounds"
for ((k = 1; k <= ROUNDS; k++)); do
  round "$k"
  echo "e2e-heal: round $k done, load average $(cut -d' ' -f1-3 /proc/loadavg)"
done

/usr/bin/python3 - "$dir" "$ROUNDS" <<'PY'
import statistics, sys
d, rounds = sys.argv[1], int(sys.argv[2])
med = statistics.median
def col(name, i):
    return [float(open(f"{d}/{name}.{k}").read().split()[i]) for k in range(1, rounds + 1)]
ra, rb = col("readd", 0), col("rebuild", 0)
ba, bb = col("readd", 1), col("rebuild", 1)
idle, heal = col("idle", 0), col("heal", 0)
run_heal, run_fio = col("healrun", 0), col("healrun", 1)
print(f"\nheal of member 1 (medians of {rounds}):")
print(f"  re-add   {med(ra):8.2f} s  {med(ba) / 2**20:9.1f} MiB written  "
      f"(rounds: {', '.join(f'{x:.2f}' for x in ra)})")
print(f"  rebuild  {med(rb):8.2f} s  {med(bb) / 2**20:9.1f} MiB written  "
      f"(rounds: {', '.join(f'{x:.2f}' for x in rb)})")
print(f"  re-add is {med(rb) / med(ra):.1f}x faster (median rebuild / median re-add; "
      f"per round {', '.join(f'{b / a:.1f}' for a, b in zip(ra, rb))})")
print(f"\nclients, 4K random writes qd32: idle {med(idle):.0f} IOPS, during a full rebuild "
      f"{med(heal):.0f} IOPS: {med(heal) / med(idle):.2f} "
      f"(per round {', '.join(f'{h / i:.2f}' for i, h in zip(idle, heal))})")
print(f"  the rebuild ran {med(run_heal):.1f} s of the {med(run_fio):.1f} s fio job (ramp included)"
      + ("" if min(r >= f for r, f in zip(run_heal, run_fio)) else
         ": it ended before the job did in some round, which dilutes the ratio"))
PY
echo "e2e-heal: load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
