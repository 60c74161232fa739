#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Instructions per byte of every parity kernel, counted under QEMU.
#
# Why count instructions.  Wall-clock time under an emulator says nothing,
# and the machines at hand cannot run every instruction set natively, but
# the number of instructions a kernel retires per byte is exact under
# emulation and is what a vectoriser, an unroll factor or a cleverer
# doubling changes.  It is not speed (latency, ports and memory are
# ignored), so raidbench remains the judge on real hardware; this script
# answers "does SVE do no more work than NEON at every vector length" and
# "what does each ISA cost per byte" on any x86-64 machine.
#
# How.  A small QEMU TCG plugin (written below; Debian's qemu-user is built
# with plugin support but ships no plugins) adds the length of every
# translated block to a counter each time the block runs, and prints the
# total at exit.  A driver linked against libparity runs one operation REPS
# times; the difference between REPS = R2 and REPS = R1 removes start-up,
# buffer filling and the calls' fixed costs, leaving the per-byte work.
# Figures are instructions per data byte: per byte of each of the 8 data
# blocks of a 10-disk stripe (gen_syndrome, xor_gen with 8 sources, both
# recoveries), and per byte of each of the 4 blocks xor_syndrome folds in.
#
# Which builds.  x86-64: qemu-x86_64 -cpu max runs generic, SSE2 and AVX2;
# QEMU 7.2 has no AVX-512 and no GFNI, so for every kernel the script also
# prints the static length of gen_syndrome's innermost loop (one data disk,
# U vectors; GFNI: two disks) per byte, read from the disassembly, which
# covers AVX-512 and GFNI too.  aarch64:
# qemu-aarch64 -cpu max with sve-default-vector-length = 16, 32, 64, 128 and
# 256 bytes runs generic, NEON and SVE.
#
# Usage: bench/insn-count.sh [HOST_BUILDDIR [AARCH64_BUILDDIR]]
#   HOST_BUILDDIR     a configured x86-64 build (default: .)
#   AARCH64_BUILDDIR  the cross build of make check-cross
#                     (default: build-aarch64/obj)
# Either is skipped, with a note, when it has no parity/.libs/libparity.a.
# Exit status 1 when SVE needs more instructions per byte than NEON for
# some operation at some vector length.

set -eu

srcdir=$(cd "$(dirname "$0")/.." && pwd)
host_build=$(cd "${1:-.}" && pwd)
aarch64_build=${2:-build-aarch64/obj}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

DISKS=10                        # 8 data disks + P + Q
BYTES=65536
R1=1
R2=5
SVE_VLS="16 32 64 128 256"
OPS="gen_syndrome xor_syndrome xor_gen recov_2data recov_datap"

for tool in gcc qemu-x86_64 objdump; do
  command -v $tool >/dev/null || { echo "$0: $tool is missing" >&2; exit 77; }
done

# The plugin: the QEMU 7.2 plugin API (version 1), the five calls used.
cat > "$tmp/plugin.c" <<'EOF'
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
void qemu_plugin_register_vcpu_tb_trans_cb
  (qemu_plugin_id_t, void (*) (qemu_plugin_id_t, struct qemu_plugin_tb *));
size_t qemu_plugin_tb_n_insns (const struct qemu_plugin_tb *);
void qemu_plugin_register_vcpu_tb_exec_inline
  (struct qemu_plugin_tb *, enum qemu_plugin_op, void *, uint64_t);
void qemu_plugin_register_atexit_cb
  (qemu_plugin_id_t, void (*) (qemu_plugin_id_t, void *), void *);

__attribute__ ((visibility ("default"))) int qemu_plugin_version = 1;

/* The driver is single-threaded, so a plain inline add is exact. */
static uint64_t insns;

static void
tb_trans (qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
  qemu_plugin_register_vcpu_tb_exec_inline (tb, QEMU_PLUGIN_INLINE_ADD_U64,
                                            &insns, qemu_plugin_tb_n_insns (tb));
}

static void
at_exit (qemu_plugin_id_t id, void *unused)
{
  fprintf (stderr, "insns %llu\n", (unsigned long long) insns);
}

__attribute__ ((visibility ("default"))) int
qemu_plugin_install (qemu_plugin_id_t id, const struct qemu_info_t *info,
                     int argc, char **argv)
{
  qemu_plugin_register_vcpu_tb_trans_cb (id, tb_trans);
  qemu_plugin_register_atexit_cb (id, at_exit, NULL);
  return 0;
}
EOF

# The driver: "list" prints the implementations this CPU runs; otherwise
# IMPL OP DISKS BYTES REPS runs one operation REPS times.
cat > "$tmp/driver.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "parity.h"

int
main (int argc, char **argv)
{
  if (argc == 2) {
    for (const char *const *n = parity_impls (); *n; n++)
      printf ("%s\n", *n);
    return 0;
  }
  if (argc != 6)
    return 2;
  const char *op = argv[2];
  int disks = atoi (argv[3]), reps = atoi (argv[5]);
  size_t bytes = strtoul (argv[4], NULL, 0);
  void *ptrs[256];

  if (parity_use (argv[1]) == -1) {
    perror (argv[1]);
    return 77;
  }
  for (int i = 0; i < disks; i++) {
    unsigned char *p = aligned_alloc (64, bytes);
    for (size_t j = 0; j < bytes; j++)
      p[j] = (unsigned char) (j * 131 + i * 71 + (j >> 8));
    ptrs[i] = p;
  }
  for (int r = 0; r < reps; r++) {
    if (!strcmp (op, "gen_syndrome"))
      parity_gen_syndrome (disks, bytes, ptrs);
    else if (!strcmp (op, "xor_syndrome"))
      parity_xor_syndrome (disks, 2, 5, bytes, ptrs);
    else if (!strcmp (op, "xor_gen"))
      parity_xor_gen (ptrs[disks - 2], ptrs, disks - 2, bytes);
    else if (!strcmp (op, "recov_2data"))
      parity_recov_2data (disks, bytes, 1, 4, ptrs);
    else if (!strcmp (op, "recov_datap"))
      parity_recov_datap (disks, bytes, 3, ptrs);
    else
      return 2;
  }
  return 0;
}
EOF
gcc -O2 -shared -fPIC "$tmp/plugin.c" -o "$tmp/plugin.so"

# Bytes each operation is normalised by (see the top of the file).
norm ()
{
  case $1 in
    xor_syndrome) echo $((4 * BYTES)) ;;
    *) echo $(((DISKS - 2) * BYTES)) ;;
  esac
}

# count QEMU CPU DRIVER IMPL OP: instructions per byte, 3 decimals.
count ()
{
  local qemu=$1 cpu=$2 drv=$3 impl=$4 op=$5 a b
  a=$($qemu -cpu "$cpu" -plugin "$tmp/plugin.so" "$drv" "$impl" $op $DISKS $BYTES $R1 2>&1 >/dev/null | awk '/^insns/ { print $2 }')
  b=$($qemu -cpu "$cpu" -plugin "$tmp/plugin.so" "$drv" "$impl" $op $DISKS $BYTES $R2 2>&1 >/dev/null | awk '/^insns/ { print $2 }')
  awk -v a="$a" -v b="$b" -v n="$(norm $op)" -v r=$((R2 - R1)) \
    'BEGIN { printf "%.3f", (b - a) / (r * n) }'
}

# static_loop OBJDUMP LIB IMPL VEC_BYTES U: the instructions of the
# innermost loop of gen_syndrome_IMPL's main part (the first backward
# branch: the main part comes before the one-vector tail), which is one
# data disk's Horner step on U vectors, per byte; VEC_BYTES 0 (SVE, whose
# vector length is not known statically) prints per vector instead.  The
# GFNI families' loop takes two disks per step (v_horner2 in
# parity/kernels.h), so their bytes are 2 x U x VEC_BYTES.
static_loop ()
{
  local objdump=$1 lib=$2 impl=$3 vec=$4 u=$5
  case $impl in *gfni*) u=$((2 * u)) ;; esac
  $objdump -d --no-show-raw-insn "$lib" |
    awk -v fn="<gen_syndrome_${impl}>:" -v vec=$vec -v u=$u '
      function hex(s,   i, v) {
        v = 0
        for (i = 1; i <= length (s); i++)
          v = v * 16 + index ("0123456789abcdef", substr (s, i, 1)) - 1
        return v
      }
      index ($0, fn) { on = 1; next }
      on && /^$/ { exit }
      on && /^ *[0-9a-f]+:/ {
        addr = hex (substr ($1, 1, length ($1) - 1)); n++; at[n] = addr
        for (i = 2; i <= NF && !found; i++)
          if ($i ~ /^<[^>]*>$/ && $(i - 1) ~ /^[0-9a-f]+$/) {
            t = hex ($(i - 1))
            if (t < addr) { found = 1; from = t; to = addr }
          }
      }
      END {
        c = 0
        for (i = 1; i <= n; i++) if (at[i] >= from && at[i] <= to) c++
        if (vec > 0)
          printf "%2d insns / %4d B = %.3f per byte", c, vec * u, c / (vec * u)
        else
          printf "%2d insns / %d vectors = %.2f per vector", c, u, c / u
      }'
}

vec_bytes_of ()
{
  case $1 in
    generic) echo 8 ;; sse2*|neon*) echo 16 ;; avx2*) echo 32 ;;
    avx512*) echo 64 ;; *) echo 0 ;;
  esac
}
unroll_of ()
{
  case $1 in
    generic) echo 2 ;; *x1) echo 1 ;; *x2) echo 2 ;; *x4) echo 4 ;; *x8) echo 8 ;;
    *) echo 1 ;;
  esac
}

printf 'Instructions per data byte, %d disks (%d data), %d-byte blocks\n' \
  $DISKS $((DISKS - 2)) $BYTES

fail=0

# --- x86-64 ----------------------------------------------------------------
hostlib=$host_build/parity/.libs/libparity.a
if [ -f "$hostlib" ]; then
  gcc -O2 -I"$srcdir/parity" "$tmp/driver.c" "$hostlib" -o "$tmp/driver-x86"
  echo
  echo "x86-64 (qemu-x86_64 -cpu max)"
  printf '  %-12s' impl; for op in $OPS; do printf ' %12s' $op; done; echo
  for impl in $(qemu-x86_64 -cpu max "$tmp/driver-x86" list); do
    printf '  %-12s' $impl
    for op in $OPS; do
      printf ' %12s' "$(count qemu-x86_64 max "$tmp/driver-x86" $impl $op)"
    done
    echo
  done
  echo "x86-64 static: gen_syndrome innermost loop (one data disk; GFNI: a pair) per byte"
  for impl in $(nm "$hostlib" | awk '/ t gen_syndrome_/ { sub (/^gen_syndrome_/, "", $3); print $3 }'); do
    printf '  %-12s %s\n' $impl "$(static_loop objdump "$hostlib" $impl $(vec_bytes_of $impl) $(unroll_of $impl))"
  done
else
  echo "x86-64: skipped, no $hostlib"
fi

# --- aarch64 ---------------------------------------------------------------
a64lib=$aarch64_build/parity/.libs/libparity.a
if [ -f "$a64lib" ] && command -v aarch64-linux-gnu-gcc >/dev/null &&
   command -v qemu-aarch64 >/dev/null; then
  aarch64-linux-gnu-gcc -O2 -static -I"$srcdir/parity" "$tmp/driver.c" "$a64lib" \
    -o "$tmp/driver-a64"
  qa64="qemu-aarch64 -L /usr/aarch64-linux-gnu"
  declare -A neon
  echo
  echo "aarch64 (qemu-aarch64 -cpu max,sve-default-vector-length=VL)"
  printf '  %-16s' impl; for op in $OPS; do printf ' %12s' $op; done; echo
  for impl in $($qa64 -cpu max,sve=off "$tmp/driver-a64" list); do
    printf '  %-16s' $impl
    for op in $OPS; do
      v=$(count "$qa64" max,sve=off "$tmp/driver-a64" $impl $op)
      [ "$impl" = neonx4 ] && neon[$op]=$v
      printf ' %12s' $v
    done
    echo
  done
  for vl in $SVE_VLS; do
    for impl in svex1 svex2 svex4; do
      printf '  %-16s' "$impl VL=$vl"
      for op in $OPS; do
        v=$(count "$qa64" max,sve-default-vector-length=$vl "$tmp/driver-a64" $impl $op)
        mark=" "
        if [ $impl = svex4 ] && awk -v s=$v -v n=${neon[$op]} 'BEGIN { exit !(s > n) }'; then
          mark="!"; fail=1
        fi
        printf ' %11s%s' $v "$mark"
      done
      echo
    done
  done
  echo "  (! = svex4 needs more instructions per byte than neonx4)"
  echo "aarch64 static: gen_syndrome innermost loop (one data disk) per byte"
  for impl in $(aarch64-linux-gnu-nm "$a64lib" | awk '/ t gen_syndrome_/ { sub (/^gen_syndrome_/, "", $3); print $3 }'); do
    case $impl in
      sve*) printf '  %-12s %s\n' $impl \
              "$(static_loop aarch64-linux-gnu-objdump "$a64lib" $impl 0 $(unroll_of $impl))" ;;
      *) printf '  %-12s %s\n' $impl \
              "$(static_loop aarch64-linux-gnu-objdump "$a64lib" $impl $(vec_bytes_of $impl) $(unroll_of $impl))" ;;
    esac
  done
else
  echo "aarch64: skipped, no $a64lib (run make check-cross) or no cross tools"
fi

exit $fail
