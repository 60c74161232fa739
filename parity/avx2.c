/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX2 implementation: 32-byte vectors.  The vector operations and their
 * reasons (doubling with vpblendvb, multiplication by a constant with two
 * vpshufb nibble lookups) are in vec_avx2.h; this file instantiates
 * kernels.h with them at unrolls 1, 2 and 4 and prefers 4.
 *
 * xor_syndrome stores P and Q with ordinary stores: md reads them again
 * right away for the second half of a read-modify-write, and non-temporal
 * stores would push them out to DRAM in between (raidbench's avx2x4_nt row
 * shows the cost).
 */

#include <config.h>

#include "internal.h"
#include "vec_avx2.h"
#include "kernels.h"

PARITY_KERNELS (avx2x1, 1)
PARITY_KERNELS (avx2x2, 2)
PARITY_KERNELS (avx2x4, 4)

static bool
avx2_cpu_ok (void)
{
  return parity_cpu_features () & PARITY_CPU_AVX2;
}

static const struct parity_impl avx2_impls[] = {
  {
    .name = "avx2x1",
    .xor_gen = xor_gen_avx2x1,
    .gen_syndrome = gen_syndrome_avx2x1,
    .xor_syndrome = xor_syndrome_avx2x1,
    .recov_2data = recov_2data_avx2x1,
    .recov_datap = recov_datap_avx2x1,
  },
  {
    .name = "avx2x2",
    .xor_gen = xor_gen_avx2x2,
    .gen_syndrome = gen_syndrome_avx2x2,
    .xor_syndrome = xor_syndrome_avx2x2,
    .recov_2data = recov_2data_avx2x2,
    .recov_datap = recov_datap_avx2x2,
  },
  {
    .name = "avx2x4",
    .xor_gen = xor_gen_avx2x4,
    .gen_syndrome = gen_syndrome_avx2x4,
    .xor_syndrome = xor_syndrome_avx2x4,
    .recov_2data = recov_2data_avx2x4,
    .recov_datap = recov_datap_avx2x4,
  },
};

const struct parity_family parity_family_avx2 = {
  .name = "avx2",
  .cpu_ok = avx2_cpu_ok,
  .impls = avx2_impls,
  .count = ARRAY_SIZE (avx2_impls),
  .preferred = 2,               /* avx2x4 */
};
