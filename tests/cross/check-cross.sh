#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: build libparity and test_parity for aarch64, run the Check
# suite under qemu-aarch64 on several CPU models, and the host's own
# test_parity, then print which implementation passed where.
#
# Usage: check-cross.sh SRCDIR BUILDDIR [HOST_TEST_PARITY]
# (make check-cross passes BUILDDIR = build-aarch64 and the host's
# tests/test_parity, which covers the SIMDe build of the AVX-512 kernels.)
#
# Why each column.  test_parity tests every implementation parity_impls()
# lists, and the list depends on the CPU, so the same binary runs on:
#   cortex-a72          NEON only: the SVE family must not be listed;
#   sve-VL (VL bytes)   QEMU's "max" CPU with sve-default-vector-length=VL,
#                       16, 32, 64 and 256: the SVE kernels are vector-length
#                       agnostic and must pass at each; 64 and 256 bytes are
#                       wider than a 64-byte buffer, so the predicated tails
#                       are exercised too;
#   host                this machine's build: generic, SSE2, AVX2, AVX-512
#                       where the CPU has it, and simde_avx512 everywhere.
# The aarch64 build also contains simde_avx512 (SIMDe on NEON) when the
# cross compiler finds SIMDe's headers.  Those run on the cortex-a72 only:
# they are built for plain ARMv8 (no SVE), so every aarch64 CPU runs the
# same instructions, and under TCG they were half of this script's time.
#
# Source copy.  Automake refuses an out-of-tree configure of a source tree
# that is itself configured, so when SRCDIR has a config.status the script
# copies the working tree's files (git ls-files: tracked and untracked but
# not ignored) plus the generated autotools files into BUILDDIR/src.
#
# Runs use PARITY_TEST_QUICK=1 (shorter buffers; every disk count and
# failure pair is still tried): a full run takes most of an hour under TCG.  Exit status: 0 when every implementation passed everywhere it is
# expected to run, 1 otherwise, 77 when a tool is missing (see
# tests/cross/install-deps.sh).

set -u

srcdir=$(cd "${1:?usage: $0 SRCDIR BUILDDIR [HOST_TEST_PARITY]}" && pwd)
mkdir -p "${2:?}"
builddir=$(cd "$2" && pwd)
host_test=${3:-}
host=aarch64-linux-gnu
qemu="qemu-aarch64 -L /usr/$host"
sve_vls="16 32 64 256"
run_timeout=900

missing=
for tool in $host-gcc qemu-aarch64; do
  command -v $tool >/dev/null || missing="$missing $tool"
done
if [ ! -f /usr/lib/$host/pkgconfig/check.pc ]; then
  missing="$missing check:arm64"
fi
if [ -n "$missing" ]; then
  echo "$0: missing:$missing; run tests/cross/install-deps.sh" >&2
  exit 77
fi

# --- a source tree that can be configured out of tree ---------------------
src=$srcdir
if [ -f "$srcdir/config.status" ]; then
  if ! git -C "$srcdir" rev-parse --git-dir >/dev/null 2>&1; then
    echo "$0: $srcdir is configured and not a git checkout; use a VPATH build" >&2
    exit 1
  fi
  src=$builddir/src
  rm -rf "$src"
  mkdir -p "$src"
  rel=${builddir#"$srcdir"/}
  ( cd "$srcdir" &&
    { git ls-files -co --exclude-standard
      ls configure aclocal.m4 config.h.in
      find build-aux m4 -type f 2>/dev/null
      find . -name Makefile.in -path './*' | sed 's,^\./,,'
    } | grep -v -e "^$rel/" -e '^build-aarch64/' | sort -u |
    tar -cf - -T - ) | tar -xf - -C "$src" || {
      echo "$0: cannot copy the source tree (needs git)" >&2; exit 1; }
fi

# --- build --------------------------------------------------------------------
obj=$builddir/obj
logs=$builddir/logs
mkdir -p "$obj" "$logs"
echo "check-cross: configuring $host in $obj"
( cd "$obj" &&
  PKG_CONFIG_LIBDIR=/usr/lib/$host/pkgconfig:/usr/share/pkgconfig \
    "$src/configure" --host=$host --disable-plugin --enable-werror \
    > "$logs/configure.log" 2>&1 ) || {
  echo "$0: configure failed, see $logs/configure.log" >&2; exit 1; }
echo "check-cross: building libparity and test_parity"
( make -C "$obj/parity" -j"$(nproc)" all libparity_test.la &&
  make -C "$obj/tests" test_parity ) > "$logs/build.log" 2>&1 || {
  tail -20 "$logs/build.log" >&2
  echo "$0: build failed, see $logs/build.log" >&2; exit 1; }

# Two probes: what each SVE setting really gives (for the table's header),
# and which implementations parity_impls() lists on each CPU.
cat > "$obj/sve-vl.c" <<'EOF'
#include <arm_sve.h>
#include <stdio.h>
int main (void) { printf ("%d\n", (int) svcntb ()); return 0; }
EOF
cat > "$obj/list-impls.c" <<'EOF'
#include <stdio.h>
#include "parity.h"
int main (void)
{
  for (const char *const *n = parity_impls (); *n; n++)
    printf ("%s\n", *n);
  return 0;
}
EOF
$host-gcc -march=armv8-a+sve "$obj/sve-vl.c" -o "$obj/sve-vl"
$host-gcc -I"$src/parity" "$obj/list-impls.c" "$obj/parity/.libs/libparity_test.a" \
  -o "$obj/list-impls"
if [ -n "$host_test" ]; then
  gcc -I"$src/parity" "$obj/list-impls.c" \
    "$(dirname "$host_test")/../parity/.libs/libparity_test.a" -o "$obj/list-impls-host"
fi

# --- runs -----------------------------------------------------------------------
# One test_parity per Check test case (CK_RUN_CASE), so that each result
# is an exit status of its own, and without Check's fork per test
# (CK_FORK=no): on a loaded machine, children forked under qemu-user 7.2
# were seen to spin forever at 100% CPU (a lock held across fork(), it
# seems), while the same cases unforked take seconds.  CPUs run in
# parallel, the cases of one CPU one after the other.
configs="cortex-a72"
for vl in $sve_vls; do configs="$configs sve-$vl"; done
[ -n "$host_test" ] && configs="$configs host"

cpu_of ()
{
  case $1 in
    sve-*) echo "max,sve-default-vector-length=${1#sve-}" ;;
    *) echo "$1" ;;
  esac
}

# run_config NAME: writes "CASE STATUS" lines to $logs/NAME.results.
run_config ()
{
  local c=$1 emu test lister case rc
  if [ $c = host ]; then
    emu=; test=$host_test; lister=$obj/list-impls-host
  else
    emu="$qemu -cpu $(cpu_of $c)"; test=$obj/tests/test_parity; lister=$obj/list-impls
  fi
  : > "$logs/$c.results"
  for case in api reference $($emu "$lister"); do
    case $c:$case in
      sve-*:simde_*) continue ;;   # on the cortex-a72 only (above)
    esac
    PARITY_TEST_QUICK=1 CK_FORK=no CK_RUN_CASE=$case \
      timeout $run_timeout $emu "$test" \
      > "$logs/$c.$case.out" 2>&1
    rc=$?
    echo "$case $rc" >> "$logs/$c.results"
  done
}

echo "check-cross: running test_parity on:$(printf ' %s' $configs) (logs in $logs)"
pids=
for c in $configs; do
  run_config $c &
  pids="$pids $!"
done
wait $pids

# --- summary ------------------------------------------------------------------------
# Expected: every aarch64 implementation on every aarch64 CPU, except that
# sve* runs only on SVE CPUs and must not be listed on the cortex-a72, and
# simde_* runs on the cortex-a72 only.
{
  for c in $configs; do
    printf 'config %s %s\n' "$c" \
      "$(case $c in sve-*) $qemu -cpu "$(cpu_of $c)" "$obj/sve-vl" ;; *) echo - ;; esac)"
    awk -v c="$c" '{ print "result", c, $1, $2 }' "$logs/$c.results"
  done
} | awk '
  $1 == "config" { ncol++; col[ncol] = $2; vl[$2] = $3; next }
  {
    c = $2; impl = $3; r = ($4 == 0) ? "pass" : ($4 == 124 ? "TIMEOUT" : "FAIL")
    if (!(impl in seen)) { seen[impl] = 1; nrow++; row[nrow] = impl }
    if (c != "host") a64[impl] = 1
    cell[impl, c] = r
  }
  END {
    bad = 0
    printf "\n%-18s", "implementation"
    for (j = 1; j <= ncol; j++) printf " %-12s", col[j]
    printf "\n%-18s", "(SVE length)"
    for (j = 1; j <= ncol; j++) printf " %-12s", (vl[col[j]] == "-" ? "" : vl[col[j]] " B")
    printf "\n"
    for (i = 1; i <= nrow; i++) {
      impl = row[i]
      printf "%-18s", (impl == "api" || impl == "reference") ? "(" impl ")" : impl
      for (j = 1; j <= ncol; j++) {
        c = col[j]; v = cell[impl, c]
        want = (c == "host") ? 0 : (impl ~ /^sve/ ? (c ~ /^sve-/) : \
               (impl ~ /^simde_/ ? (c == "cortex-a72") : a64[impl]))
        if (v == "" && want) { v = "MISSING"; bad = 1 }
        else if (v == "") v = "-"
        else if (!want && c != "host") { v = v "(unexpected)"; bad = 1 }
        if (v != "pass" && v != "-") bad = 1
        printf " %-12s", v
      }
      printf "\n"
    }
    printf "\n%s\n", bad ? "check-cross: FAILED" : "check-cross: all passed"
    exit bad
  }'
