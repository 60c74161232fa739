# SPDX-License-Identifier: BSD-3-Clause
# Shared by the end-to-end benchmarks (e2e.sh, e2e-degraded.sh,
# e2e-remote.sh, e2e-bitmap.sh, e2e-heal.sh, e2e-blockdev.sh): settings,
# tool checks, a private folder on tmpfs and the nbdkit servers started in
# it, all cleaned up on exit.  Their reports read fio's output through
# fio_figures.py, which bench_setup puts on PYTHONPATH.
#
#   source "$(dirname "$0")/common.sh"; bench_setup NAME "$@"
#
# Environment: RAID_BENCH_PLUGIN (the plugin to measure; default this
# tree's plugin/.libs/nbdkit-raid-plugin.so), RAID_NBDKIT (the nbdkit
# that serves it; default the one configure found), CHUNK (default 256K),
# MEMBER_SIZE (default 256M), FIO_RUNTIME (seconds per fio job, default 10;
# --quick makes it 3), FIO_RAMP (seconds of each fio job not measured,
# default 2), DIR (default /dev/shm).
#
# --smoke: the script runs whole at toy sizes (1 s fio jobs without ramp,
# 32M members unless SMOKE_MEMBER_SIZE says, one round), so that make
# check runs every benchmark and a script that no longer works fails a
# test (tests/lib/bench-smoke.sh); its figures mean nothing.

bench_setup () {
  bench_name=$1; shift
  top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  plugin=${RAID_BENCH_PLUGIN:-$top/plugin/.libs/nbdkit-raid-plugin.so}
  ctl="$top/tools/nbdkit-raid-ctl"
  jobs="$top/bench/fio"
  export PATH=/usr/bin:$PATH    # Debian's python3 (nbd module) for nbdsh
  # nbdkit: the one configure found (RAID_NBDKIT, from make; else this
  # tree's Makefile), before /usr/bin's, which aborts when a client hangs
  # up early (scripts/install-nbdkit.sh).
  local nbdkit=${RAID_NBDKIT:-$(sed -n 's/^NBDKIT = //p' "$top/Makefile" 2>/dev/null)}
  case $nbdkit in /*) export PATH=${nbdkit%/*}:$PATH ;; esac
  export PYTHONPATH="$top/bench${PYTHONPATH:+:$PYTHONPATH}"   # fio_figures.py
  export PYTHONDONTWRITEBYTECODE=1   # no bench/__pycache__ in the source tree
  CHUNK=${CHUNK:-256K}
  MEMBER_SIZE=${MEMBER_SIZE:-256M}
  export FIO_RUNTIME=${FIO_RUNTIME:-10}
  export FIO_RAMP=${FIO_RAMP:-2}
  smoke=false
  case "${1:-}" in
    --quick) FIO_RUNTIME=3 ;;
    --smoke)
      smoke=true FIO_RUNTIME=1 FIO_RAMP=0 ROUNDS=1
      MEMBER_SIZE=${SMOKE_MEMBER_SIZE:-32M}
      echo "$bench_name: --smoke: toy sizes, the figures mean nothing" ;;
    "") ;;
    *) echo "$bench_name: usage: $0 [--quick|--smoke]" >&2; exit 2 ;;
  esac
  base=${DIR:-/dev/shm}

  for t in nbdkit nbdinfo fio; do
    command -v $t >/dev/null || { echo "$bench_name: $t is needed" >&2; exit 1; }
  done
  [ -f "$plugin" ] || { echo "$bench_name: build first (make)" >&2; exit 1; }

  dir=$(mktemp -d "$base/nbdkit-raid-$bench_name.XXXXXX")
  pids=()
  trap bench_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

bench_cleanup () {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}

# bg_serve SOCK ARGS...: nbdkit in the background on SOCK, ready on return.
bg_serve () {
  local s=$1; shift
  rm -f "$s"
  nbdkit -f -U "$s" "$@" >>"$dir/nbdkit.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    nbdinfo --can connect "nbd+unix:///?socket=$s" 2>/dev/null && return
    sleep 0.1
  done
  echo "$bench_name: nbdkit $* did not start:" >&2; cat "$dir/nbdkit.log" >&2; exit 1
}

# stop_last: stop the server started last.
stop_last () {
  kill "${pids[-1]}" 2>/dev/null || true
  wait "${pids[-1]}" 2>/dev/null || true
  unset 'pids[-1]'
}

# cpu_ticks PID...: the user+system clock ticks of these processes, summed.
cpu_ticks () {
  local p t=0
  for p in "$@"; do
    t=$(( t + $(awk '{ print $14 + $15 }' "/proc/$p/stat") ))
  done
  echo "$t"
}

cpu_name () {
  sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1
}
