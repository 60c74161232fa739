/* SPDX-License-Identifier: BSD-3-Clause */
/* A broken implementation, for testing the self-test: test builds only.
 *
 * Generic in every operation but gen_syndrome, which gets the last byte of
 * Q wrong, the way a kernel with a bug in its tail would.  dispatch.c (the
 * copy in libparity_test.la) lets parity_use() find it by name but never
 * lists or chooses it, so test_parity can check that it is refused, that
 * PARITY_IMPL naming it falls back to generic, and that both are reported.
 */

#include <config.h>

#include "internal.h"

#define GENERIC (&parity_family_generic.impls[0])

static void
xor_gen_test_broken (void *dest, void **srcs, unsigned int src_cnt,
                     size_t bytes)
{
  GENERIC->xor_gen (dest, srcs, src_cnt, bytes);
}

static void
gen_syndrome_test_broken (int disks, size_t bytes, void **ptrs)
{
  GENERIC->gen_syndrome (disks, bytes, ptrs);
  ((uint8_t *) ptrs[disks - 1])[bytes - 1] ^= 1;
}

static void
xor_syndrome_test_broken (int disks, int start, int stop, size_t bytes,
                          void **ptrs)
{
  GENERIC->xor_syndrome (disks, start, stop, bytes, ptrs);
}

static void
recov_2data_test_broken (int disks, size_t bytes, int faila, int failb,
                         void **ptrs)
{
  GENERIC->recov_2data (disks, bytes, faila, failb, ptrs);
}

static void
recov_datap_test_broken (int disks, size_t bytes, int faila, void **ptrs)
{
  GENERIC->recov_datap (disks, bytes, faila, ptrs);
}

static bool test_broken_cpu_ok (void) { return true; }

static const struct parity_impl test_broken_impls[] = {
  {
    .name = "test_broken",
    .xor_gen = xor_gen_test_broken,
    .gen_syndrome = gen_syndrome_test_broken,
    .xor_syndrome = xor_syndrome_test_broken,
    .recov_2data = recov_2data_test_broken,
    .recov_datap = recov_datap_test_broken,
  },
};

const struct parity_family parity_family_test_broken = {
  .name = "test_broken",
  .cpu_ok = test_broken_cpu_ok,
  .impls = test_broken_impls,
  .count = ARRAY_SIZE (test_broken_impls),
  .preferred = 0,
};
