/* SPDX-License-Identifier: BSD-3-Clause */
/* The self-test an implementation passes before libparity uses it.
 *
 * Why.  A kernel that computes wrong parity does not crash: it writes
 * stripes that look fine until a disk fails and the rebuild returns
 * garbage.  The kernels are tested (test_parity), but not on every CPU,
 * compiler and emulator the library will meet: a compiler that
 * miscompiles a vector intrinsic, a hypervisor or emulator that executes
 * an instruction wrongly, a CPU erratum.  So, as snapraid's raid_selftest
 * does, the implementation dispatch.c is about to use is first run on a
 * small fixed input and its results compared with the generic
 * implementation's; generic is plain C and the reference that test_parity
 * checks against an independent byte-at-a-time model.
 *
 * What.  One stripe of SELFTEST_DISKS blocks of SELFTEST_BYTES, filled from
 * a fixed pseudo-random sequence, twice: one copy for the implementation,
 * one for generic.  Every operation runs on both copies from identical
 * contents, and the whole stripes must then be identical, so a kernel that
 * writes the wrong block, too little or too much, fails as surely as one
 * that computes wrong bytes.  The sizes are chosen to reach every code path
 * of every family: 1088 bytes is 17 lines of 64, so every unroll of every
 * vector width (up to SVE's 256 bytes times 4) runs its main loop and its
 * one-vector tail; xor_gen has 11 sources (pairs for v_xor3 and one left
 * over); xor_syndrome runs once with start 1 (doubling over the skipped
 * disk) and once with start 9 (every family's multiply-by-g^start path,
 * MULC_SKIP_MIN being at most 9); both recoveries fail disks in the middle.
 *
 * Cost: about 2 x 6 operations on 13 KiB; raidbench prints the time the
 * first call into libparity takes, self-test included.
 */

#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SELFTEST_DISKS 12       /* 10 data, P, Q */
#define SELFTEST_BYTES 1088
#define STRIPE_BYTES (SELFTEST_DISKS * SELFTEST_BYTES)

enum selftest_op {
  ST_XOR_GEN, ST_GEN_SYNDROME, ST_XOR_SYNDROME_1, ST_XOR_SYNDROME_9,
  ST_RECOV_2DATA, ST_RECOV_DATAP, NR_ST_OPS
};

/* What a failure of each operation says. */
static const char *const failures[NR_ST_OPS] = {
  "its xor_gen differs from generic's",
  "its gen_syndrome differs from generic's",
  "its xor_syndrome (start 1) differs from generic's",
  "its xor_syndrome (start 9) differs from generic's",
  "its recov_2data differs from generic's",
  "its recov_datap differs from generic's",
};

/* The same bytes for every run: xorshift64 from a seed per operation. */
static void
fill (uint8_t *p, uint64_t seed)
{
  uint64_t x = 0x9e3779b97f4a7c15 * (seed + 1);

  for (size_t i = 0; i < STRIPE_BYTES; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    memcpy (p + i, &x, 8);
  }
}

static void
run_op (const struct parity_impl *impl, enum selftest_op op, void **ptrs)
{
  const int d = SELFTEST_DISKS;
  const size_t n = SELFTEST_BYTES;

  switch (op) {
  case ST_XOR_GEN:
    impl->xor_gen (ptrs[d - 1], ptrs, d - 1, n);
    break;
  case ST_GEN_SYNDROME:
    impl->gen_syndrome (d, n, ptrs);
    break;
  case ST_XOR_SYNDROME_1:
    impl->xor_syndrome (d, 1, 4, n, ptrs);
    break;
  case ST_XOR_SYNDROME_9:
    impl->xor_syndrome (d, 9, 9, n, ptrs);
    break;
  case ST_RECOV_2DATA:
    impl->recov_2data (d, n, 2, 7, ptrs);
    break;
  case ST_RECOV_DATAP:
    impl->recov_datap (d, n, 5, ptrs);
    break;
  default:
    abort ();
  }
}

const char *
parity_selftest (const struct parity_impl *impl)
{
  const struct parity_impl *ref = &parity_family_generic.impls[0];
  void *mine[SELFTEST_DISKS], *want[SELFTEST_DISKS];
  const char *failed = NULL;
  uint8_t *mem;

  if (posix_memalign ((void **) &mem, 64, 2 * STRIPE_BYTES) != 0)
    return "no memory to run it";
  for (int i = 0; i < SELFTEST_DISKS; i++) {
    mine[i] = mem + i * SELFTEST_BYTES;
    want[i] = mem + STRIPE_BYTES + i * SELFTEST_BYTES;
  }
  for (int op = 0; op < NR_ST_OPS && !failed; op++) {
    fill (mine[0], op);
    memcpy (want[0], mine[0], STRIPE_BYTES);
    run_op (impl, op, mine);
    run_op (ref, op, want);
    if (memcmp (mine[0], want[0], STRIPE_BYTES) != 0)
      failed = failures[op];
  }
  free (mem);
  return failed;
}
