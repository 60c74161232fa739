#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# What md's write-intent bitmap costs: fio's nbd engine, 4 KiB random writes
# at queue depth 32 (randwrite-4k.fio) and 1 (rmw-latency-4k.fio), against
# arrays of six tmpfs members that differ only in their metadata:
#
#   r6-raw        metadata=none: no superblocks, no bitmap (the baseline)
#   r6-nobitmap   md superblocks, bitmap=none
#   r6-bitmap     md superblocks, the default bitmap (64M per bit: 4 bits
#                 for 256M members, all set within the first writes)
#   r6-bm4K       bitmap-chunk=4K.  The plugin marks whole stripe rows (a
#                 row is CHUNK of each member), so with CHUNK 256K this is
#                 64 bits per row and 1020 regions, all set in the ramp
#   c4K-*         the same at chunk=4K: raw, nobitmap, bm4K (one 4K bit
#                 per row, 65280 of them: the worst case, where a random
#                 write often sets a new bit) and bm4K-d1 (bitmap-delay=1:
#                 bits idle for a second are cleared again, so the jobs
#                 keep setting and clearing bits)
#   r5-raw, r5-nobitmap, r5-bitmap   RAID-5 at CHUNK
#
# The md arrays are made with create=true; the initial resync is waited for
# (nbdkit-raid-ctl wait) and the server stopped, so that every job starts a
# fresh server from the superblocks with a clean array and all bits clear
# (a clean shutdown clears them).  Each job gets its own server; each
# configuration fresh sparse members.  The configurations are interleaved
# and the whole set repeated ROUNDS times; the tables give medians, the
# spread of the IOPS ((max - min) / median over the rounds), ratios against
# the raw and no-bitmap arrays of the same level and chunk, and the bits
# set when the job ended (the control socket's bitmap.dirty).
#
# On tmpfs a member flush costs a system call and nothing else, so what is
# measured is the CPU of the bitmap writes; with DIR on a disk each write
# that sets a bit also waits for a flush of every member.  c4K-bm4K has as
# many regions (65280) as an array of 4 TB members with the default 64M bit,
# and random writes hit them alike: it is the realistic case for big
# arrays, not only the worst one.
#
# Usage: bench/e2e-bitmap.sh [--quick|--smoke]   (from a built tree; make
# bench-bitmap; 11 configurations x ROUNDS x 2 jobs x (FIO_RUNTIME + 2 s
# ramp) plus about 2 s per configuration and round: 15 min by default).
# Environment: CHUNK (default 256K), MEMBER_SIZE (default 256M), FIO_RUNTIME
# (default 10), DIR (default /dev/shm), ROUNDS (default 3), CONFIGS (names
# from the list above, e.g. "r6-raw r6-nobitmap c4K-bm4K"; default all).
set -euo pipefail
source "$(dirname "$0")/common.sh"
bench_setup bitmap "$@"
ROUNDS=${ROUNDS:-3}
$smoke && CONFIGS=${CONFIGS:-r6-raw r6-bitmap c4K-bm4K-d1}

# NAME LEVEL CHUNK CREATE-PARAMETERS ("-": raw mode)
all_configs=(
  "r6-raw         6 $CHUNK -"
  "r6-nobitmap    6 $CHUNK bitmap=none"
  "r6-bitmap      6 $CHUNK bitmap=internal"
  "r6-bm4K        6 $CHUNK bitmap-chunk=4K"
  "c4K-raw        6 4K     -"
  "c4K-nobitmap   6 4K     bitmap=none"
  "c4K-bm4K       6 4K     bitmap-chunk=4K"
  "c4K-bm4K-d1    6 4K     bitmap-chunk=4K bitmap-delay=1"
  "r5-raw         5 $CHUNK -"
  "r5-nobitmap    5 $CHUNK bitmap=none"
  "r5-bitmap      5 $CHUNK bitmap=internal"
)
configs=()
for c in "${all_configs[@]}"; do
  read -r name _ <<< "$c"
  if [ -z "${CONFIGS:-}" ] || [[ " $CONFIGS " == *" $name "* ]]; then
    configs+=("$c")
  fi
done
[ ${#configs[@]} -gt 0 ] || { echo "bitmap: no configuration in CONFIGS=$CONFIGS" >&2; exit 1; }
joblist="randwrite-4k rmw-latency-4k"
sock=$dir/raid.sock
ctlsock=$dir/ctl

# serve ARGS...: the array on $sock with its control socket, idle (no
# resync or rebuild running) on return.
serve () {
  rm -f "$ctlsock"
  bg_serve "$sock" "$plugin" control="$ctlsock" "$@"
  "$ctl" "$ctlsock" wait 600 >/dev/null
}

# measure ROUND NAME LEVEL CHUNK CREATE-PARAMETERS
measure () {
  local round=$1 name=$2 level=$3 chunk=$4 create=$5 disks=() start=() i job t0
  for ((i = 0; i < 6; i++)); do
    rm -f "$dir/m$i.img"; truncate -s "$MEMBER_SIZE" "$dir/m$i.img"
    disks+=("$dir/m$i.img")
  done
  if [ "$create" = - ]; then
    start=(metadata=none level="$level" chunk="$chunk")
  else
    # Superblocks and bitmap, then the initial resync, then a clean stop.
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    serve create=true level="$level" chunk="$chunk" $create "${disks[@]}"
    echo "$(date +%s.%N) - $t0" | bc -l > "$dir/$name.$round.create"
    stop_last
  fi
  for job in $joblist; do
    serve "${start[@]}" "${disks[@]}"
    NBD_URI="nbd+unix:///?socket=$sock" FIO_SIZE=$(nbdinfo --size "nbd+unix:///?socket=$sock")
    export NBD_URI FIO_SIZE
    fio --output-format=json --output="$dir/$name.$round.$job.json" "$jobs/$job.fio" >/dev/null
    "$ctl" "$ctlsock" status > "$dir/$name.$round.$job.status"
    stop_last
  done
  rm -f "$dir"/m*.img
}

echo "e2e-bitmap: CPU $(cpu_name), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo "e2e-bitmap: 6 members of $MEMBER_SIZE on $base, chunk $CHUNK (c4K-*: 4K); $ROUNDS rounds of" \
     "${#configs[@]} configurations x ($joblist), ${FIO_RUNTIME}s each after ${FIO_RAMP}s ramp"
echo "e2e-bitmap: $(nbdkit "$plugin" --dump-plugin | grep -E '^raid_(parity|bitmap)=' | tr '\n' ' ')"

for ((round = 1; round <= ROUNDS; round++)); do
  for c in "${configs[@]}"; do
    read -r name level chunk create <<< "$c"
    measure "$round" "$name" "$level" "$chunk" "$create"
  done
  echo "e2e-bitmap: round $round done, load average $(cut -d' ' -f1-3 /proc/loadavg)"
done

/usr/bin/python3 - "$dir" "$ROUNDS" "$joblist" "${configs[@]}" <<'PY'
import json, statistics, sys
from fio_figures import figure, side
d, rounds, joblist, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
configs = [c.split(None, 3) for c in configs]
med = statistics.median

def size(n):
    for unit, s in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= s and n % s == 0:
            return f"{n // s}{unit}"
    return str(n)

r = {}                          # (name, job) -> medians
for name, level, chunk, create in configs:
    for job in joblist:
        iops, lat, dirty = [], [], []
        for k in range(1, rounds + 1):
            w = side(f"{d}/{name}.{k}.{job}.json", "write")
            iops.append(figure(w, "IOPS"))
            lat.append(figure(w, "lat-us"))
            st = json.load(open(f"{d}/{name}.{k}.{job}.status"))
            bm = st.get("bitmap", "absent")
            if bm is None or bm == "absent":
                desc = "none" if bm is None else "?"
            else:
                desc = f"{size(bm['chunk'])}/{bm['bits']}"
                dirty.append(bm["dirty"])
        r[name, job] = dict( iops=med(iops), lat=med(lat), desc=desc,
                            spread=(max(iops) - min(iops)) / med(iops),
                            dirty=med(dirty) if dirty else None)

creates = {}
for name, level, chunk, create in configs:
    if create != "-":
        creates[name] = med(float(open(f"{d}/{name}.{k}.create").read())
                            for k in range(1, rounds + 1))

def base(level, chunk, kind):   # the same level's and chunk's raw / no-bitmap
    for name, lv, ch, create in configs:
        if (lv, ch) == (level, chunk) and (create == "-") == (kind == "raw") and \
           (kind == "raw" or create == "bitmap=none"):
            return name
    return None

for job in joblist:
    qd = "32" if job == "randwrite-4k" else "1"
    print(f"\n{job}: 4 KiB random writes, queue depth {qd} (medians of {rounds})")
    print(f"{'config':12} {'bitmap':12} {'IOPS':>9} {'spread':>7} {'/raw':>6} {'/nobm':>6}"
          f" {'lat us':>8} {'/raw':>6} {'/nobm':>6} {'dirty':>7}")
    for name, level, chunk, create in configs:
        x = r[name, job]
        cols = []
        for kind in ("raw", "nobitmap"):
            b = base(level, chunk, kind)
            cols.append((x["iops"] / r[b, job]["iops"], x["lat"] / r[b, job]["lat"])
                        if b else None)
        def ratio(i, key):
            return f"{cols[i][key]:6.2f}" if cols[i] else f"{'-':>6}"
        dirty = f"{x['dirty']:7.0f}" if x["dirty"] is not None else f"{'-':>7}"
        print(f"{name:12} {x['desc']:12} {x['iops']:9.0f} {100 * x['spread']:6.1f}%"
              f" {ratio(0, 0)} {ratio(1, 0)} {x['lat']:8.1f} {ratio(0, 1)} {ratio(1, 1)} {dirty}")
if creates:
    print("\ncreate=true until the initial resync ended (median s): " +
          ", ".join(f"{n} {t:.2f}" for n, t in creates.items()))
print("bitmap: chunk/bits; /raw, /nobm: this config over the raw and no-bitmap "
      "arrays of the same level and chunk (IOPS: higher is better; latency: lower is better); "
      "dirty: bits set when the job ended")
PY
if grep -q "not shut down cleanly" "$dir/nbdkit.log"; then
  echo "e2e-bitmap: WARNING: a server found its array unclean at start (a resync was waited for)"
fi
echo "e2e-bitmap: load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
