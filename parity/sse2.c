/* SPDX-License-Identifier: BSD-3-Clause */
/* SSE2 implementation: 16-byte vectors, the x86-64 baseline, so it runs on
 * every x86-64 CPU.  The vector operations and their reasons are in
 * vec_sse2.h; this file instantiates kernels.h with them at unrolls 1, 2
 * and 4 (raidbench compares them) and prefers 4.
 */

#include <config.h>

#include "internal.h"
#include "vec_sse2.h"
#include "kernels.h"

PARITY_KERNELS (sse2x1, 1)
PARITY_KERNELS (sse2x2, 2)
PARITY_KERNELS (sse2x4, 4)

static bool
sse2_cpu_ok (void)
{
  return parity_cpu_features () & PARITY_CPU_SSE2;
}

static const struct parity_impl sse2_impls[] = {
  {
    .name = "sse2x1",
    .xor_gen = xor_gen_sse2x1,
    .gen_syndrome = gen_syndrome_sse2x1,
    .xor_syndrome = xor_syndrome_sse2x1,
    .recov_2data = recov_2data_sse2x1,
    .recov_datap = recov_datap_sse2x1,
  },
  {
    .name = "sse2x2",
    .xor_gen = xor_gen_sse2x2,
    .gen_syndrome = gen_syndrome_sse2x2,
    .xor_syndrome = xor_syndrome_sse2x2,
    .recov_2data = recov_2data_sse2x2,
    .recov_datap = recov_datap_sse2x2,
  },
  {
    .name = "sse2x4",
    .xor_gen = xor_gen_sse2x4,
    .gen_syndrome = gen_syndrome_sse2x4,
    .xor_syndrome = xor_syndrome_sse2x4,
    .recov_2data = recov_2data_sse2x4,
    .recov_datap = recov_datap_sse2x4,
  },
};

const struct parity_family parity_family_sse2 = {
  .name = "sse2",
  .cpu_ok = sse2_cpu_ok,
  .impls = sse2_impls,
  .count = ARRAY_SIZE (sse2_impls),
  .preferred = 2,               /* sse2x4 */
};
