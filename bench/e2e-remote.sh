#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# End-to-end benchmark of remote members: fio's nbd engine against the
# same RAID array twice in one run, once over six local tmpfs member files
# and once over six remote members (one nbdkit memory server per member,
# each on its own loopback Unix socket, attached as nbd+unix:// URIs), so
# that the ratio remote/local compares like with like on a noisy machine.
#
# The remote array runs twice: member servers with nbdkit's default
# thread pool, and with -t 1 (one thread per connection).  Beside each
# figure, the CPU time per client request of the array and of the member
# servers together: on one machine they share its cores, and the servers
# use most of them (bench/results/2026-12-04-zen5-remote-simple-replies.md).
#
# The member servers' memory disks are allocated up front
# (allocator=malloc; with mlock=true when run as root, which faults
# every page in before the job): the default sparse allocator mallocs and
# faults in a page the first time a write lands on it, which in a 10 s
# random-write job is most writes, and that cost (one server: 63 against
# 33 us of CPU per member request, perf stat, 2026-12-05) is the test
# disk's being new, not the array's or a server's.  The local members are
# sparse tmpfs files, whose first writes cost no more than later ones
# there (bench/results/2026-12-05-zen5-remote-servers.md).
#
# Then a short profiling pass measures how many requests each remote
# member has in flight.  Method: each member server gets nbdkit's log
# filter (outermost), which writes one line when a request arrives and
# one when its reply is sent, with microsecond timestamps; from those the
# script computes, per member, the requests served, the connections the
# plugin opened to it, the time-weighted mean number of requests in
# flight over the job and the maximum.  The log filter slows the servers,
# so the profiling pass's own IOPS are not the benchmark's figures.
#
# Usage: bench/e2e-remote.sh [--quick|--smoke]   (from a built tree;
# ~4.5 min, --quick ~2 min)
# Environment: LEVEL (default 6), CHUNK (default 256K), MEMBER_SIZE
# (default 256M), FIO_RUNTIME (seconds per job, default 10), PROFILE_RUNTIME
# (default 3), DIR (default /dev/shm).
set -euo pipefail

source "$(dirname "$0")/common.sh"
bench_setup e2e-remote "$@"
LEVEL=${LEVEL:-6}
nmembers=6
joblist="seqwrite-1m randwrite-4k randread-4k seqread-1m rmw-latency-4k"
PROFILE_RUNTIME=${PROFILE_RUNTIME:-3}
[ "${1:-}" = --quick ] && PROFILE_RUNTIME=2
$smoke && PROFILE_RUNTIME=1
profile_jobs="randwrite-4k randread-4k seqwrite-1m"

# stop_all: stop every server (member servers flush their logs on exit):
# the array first (started last), which flushes its members as it stops;
# with them gone first it would wait member-timeout (30 s) for each.
stop_all () {
  stop_last
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}

# local_disks / remote_disks [FILTER-ARGS...]: the disk= list of 6 members.
local_disks () {
  disks=""
  for ((i = 0; i < nmembers; i++)); do
    rm -f "$dir/m$i.img"; truncate -s "$MEMBER_SIZE" "$dir/m$i.img"
    disks+=" disk=$dir/m$i.img"
  done
}
memory_args=allocator=malloc
[ "$(id -u)" = 0 ] && memory_args+=,mlock=true
remote_disks () {               # remote_disks [log] [NBDKIT-OPTIONS...]
  disks=""
  local log=false
  [ "${1:-}" = log ] && { log=true; shift; }
  for ((i = 0; i < nmembers; i++)); do
    local extra=("$@")
    if $log; then
      extra+=(--filter=log memory logfile="$dir/member$i.log")
    else
      extra+=(memory)
    fi
    bg_serve "$dir/member$i.sock" "${extra[@]}" size="$MEMBER_SIZE" "$memory_args"
    disks+=" disk=nbd+unix:///?socket=$dir/member$i.sock"
  done
}

array_size () {
  nbdinfo --size "nbd+unix:///?socket=$dir/array.sock"
}

# run_jobs TARGET JOBS...: each job against the array (the server started
# last), with the CPU ticks the array and the member servers (the others)
# used over it.
run_jobs () {
  local target=$1 array=${pids[-1]} a0 s0; shift
  local servers=("${pids[@]:0:${#pids[@]}-1}")
  export NBD_URI="nbd+unix:///?socket=$dir/array.sock"
  FIO_SIZE=$(array_size); export FIO_SIZE
  for job in "$@"; do
    a0=$(cpu_ticks "$array") s0=$(cpu_ticks "${servers[@]}")
    fio --output-format=json --output="$dir/$target.$job.json" "$jobs/$job.fio" >/dev/null
    echo "$(( $(cpu_ticks "$array") - a0 )) $(( $(cpu_ticks "${servers[@]}") - s0 ))" \
         > "$dir/$target.$job.ticks"
  done
}

cpu=$(cpu_name)
echo "e2e-remote: CPU $cpu, $(nproc) cores; RAID-$LEVEL of $nmembers members of" \
     "$MEMBER_SIZE, chunk $CHUNK; ${FIO_RUNTIME}s per job"
echo "e2e-remote: local members: tmpfs files in $base;" \
     "remote members: nbdkit memory servers on Unix sockets ($memory_args)"

# 1. Local members.
local_disks
# shellcheck disable=SC2086
bg_serve "$dir/array.sock" "$plugin" metadata=none level="$LEVEL" chunk="$CHUNK" $disks
run_jobs local $joblist
stop_all; rm -f "$dir"/m*.img

# 2. Remote members: nbdkit's default thread pool (16 per connection).
remote_disks
# shellcheck disable=SC2086
bg_serve "$dir/array.sock" "$plugin" metadata=none level="$LEVEL" chunk="$CHUNK" $disks
run_jobs remote $joblist
stop_all

# 2b. The same, member servers with one thread per connection (-t 1): the
# plugin opens a connection per thread anyway, and a hand-off between
# threads inside each member server costs a wake-up per request.
remote_disks -t 1
# shellcheck disable=SC2086
bg_serve "$dir/array.sock" "$plugin" metadata=none level="$LEVEL" chunk="$CHUNK" $disks
run_jobs remote-t1 $joblist
stop_all

# 3. Profiling pass: remote members behind the log filter, one job at a
# time, each with fresh servers so that each log holds one job.
for job in $profile_jobs; do
  remote_disks log
  # shellcheck disable=SC2086
  bg_serve "$dir/array.sock" "$plugin" metadata=none level="$LEVEL" chunk="$CHUNK" $disks
  FIO_RUNTIME=$PROFILE_RUNTIME run_jobs profile "$job"
  stop_all
  mkdir -p "$dir/logs.$job"
  mv "$dir"/member*.log "$dir/logs.$job/"
done

/usr/bin/python3 - "$dir" "$joblist" "$profile_jobs" "$nmembers" "$PROFILE_RUNTIME" "$FIO_RAMP" <<'PY'
import re, sys
from datetime import datetime
from fio_figures import cpu_us as per_request, figure, job as fio_job, side, ticks
d, joblist, profile_jobs = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
n, profile_runtime, ramp = int(sys.argv[4]), sys.argv[5], sys.argv[6]
units = {"seqwrite-1m": ("write", "MB/s"), "randwrite-4k": ("write", "IOPS"),
         "randread-4k": ("read", "IOPS"), "seqread-1m": ("read", "MB/s"),
         "rmw-latency-4k": ("write", "us")}
def val(target, job):
    rw, unit = units[job]
    return figure(side(f"{d}/{target}.{job}.json", rw), unit)
print()
print(f"{'job':16} {'unit':5} {'local':>10} {'remote':>10} {'remote -t1':>11}"
      f" {'remote/local':>13} {'-t1/local':>10}")
for job in joblist:
    l, r, r1 = val("local", job), val("remote", job), val("remote-t1", job)
    print(f"{job:16} {units[job][1]:5} {l:10.1f} {r:10.1f} {r1:11.1f}"
          f" {r / l:13.2f} {r1 / l:10.2f}")
print("(for rmw-latency-4k, mean completion latency: lower is better)")

# CPU per client request: the array's, and the member servers' together
# (user + system over the job, ramp included, over the requests fio
# completed after the ramp: an upper bound, the same for every column).
def cpu_us(target, job):
    s = side(f"{d}/{target}.{job}.json", units[job][0])
    return tuple(per_request(t, s) for t in ticks(f"{d}/{target}.{job}.ticks"))
print()
print("CPU per client request, us (user + system): the array, and the six")
print("member servers together")
print(f"{'job':16} {'local':>10} {'remote':>10} {'servers':>10}"
      f" {'remote -t1':>11} {'servers -t1':>12}")
for job in joblist:
    l, r, r1 = cpu_us("local", job), cpu_us("remote", job), cpu_us("remote-t1", job)
    print(f"{job:16} {l[0]:10.1f} {r[0]:10.1f} {r[1]:10.1f} {r1[0]:11.1f} {r1[1]:12.1f}")

# In flight per member, from the log filter's request/reply lines.
start = re.compile(r"^(\S+ \S+) connection=(\d+) (Read|Write|Zero|Trim|Flush|Cache|Extents) id=")
end = re.compile(r"^(\S+ \S+) connection=(\d+) \.\.\.(Read|Write|Zero|Trim|Flush|Cache|Extents) id=")
def ts(s):
    return datetime.strptime(s, "%Y-%m-%d %H:%M:%S.%f").timestamp()
print()
print("Requests in flight on each remote member (log filter; profiling pass,")
print("%s s per job after %s s of ramp): requests served, member requests per"
      % (profile_runtime, ramp))
print("client request (rates), connections opened by the plugin, time-weighted")
print("mean in flight over the job, maximum in flight.")
for job in profile_jobs:
    fio = fio_job(f"{d}/profile.{job}.json")
    rw = units[job][0]
    client_iops = fio[rw]["iops"]
    print(f"\n{job}: client iodepth {fio['job options'].get('iodepth', '?')}, "
          f"{client_iops:.0f} client requests/s under the log filter")
    print(f"  {'member':7} {'requests':>9} {'per client req':>15} {'conns':>6} "
          f"{'mean in flight':>15} {'max':>5}")
    for m in range(n):
        events, conns, reqs = [], set(), 0
        with open(f"{d}/logs.{job}/member{m}.log") as f:
            for line in f:
                mo = end.match(line)
                if mo:
                    events.append((ts(mo.group(1)), -1))
                    continue
                mo = start.match(line)
                if mo:
                    events.append((ts(mo.group(1)), 1))
                    conns.add(mo.group(2))
                    reqs += 1
        events.sort(key=lambda e: (e[0], e[1]))
        if not events:
            print(f"  {m:<7} {0:>9}")
            continue
        cur = mx = 0
        area = 0.0
        t_prev = events[0][0]
        for t, delta in events:
            area += cur * (t - t_prev)
            t_prev = t
            cur += delta
            mx = max(mx, cur)
        span = events[-1][0] - events[0][0]
        mean = area / span if span > 0 else 0.0
        per = reqs / span / client_iops if span > 0 and client_iops else 0.0
        print(f"  {m:<7} {reqs:>9} {per:>15.2f} {len(conns):>6} {mean:>15.2f} {mx:>5}")
PY
