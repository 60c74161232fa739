/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX-512 implementation: 64-byte vectors, AVX-512F and AVX-512BW.
 *
 * The vector operations and their reasons are in vec_avx512.h; this file
 * instantiates kernels.h with them at unrolls 1, 2 and 4 and prefers 4.
 * It runs only where the CPU has AVX-512BW and does not lower its clock
 * for ZMM registers (cpu.c says which CPUs do).  simde_avx512.c builds the
 * same kernels against SIMDe for the tests.
 */

#include <config.h>

#include "internal.h"
#include "vec_avx512.h"
#include "kernels.h"

PARITY_KERNELS (avx512x1, 1)
PARITY_KERNELS (avx512x2, 2)
PARITY_KERNELS (avx512x4, 4)

static bool
avx512_cpu_ok (void)
{
  unsigned int f = parity_cpu_features ();

  return (f & PARITY_CPU_AVX512BW) && !(f & PARITY_CPU_AVX512_SLOW);
}

static const struct parity_impl avx512_impls[] = {
  {
    .name = "avx512x1",
    .xor_gen = xor_gen_avx512x1,
    .gen_syndrome = gen_syndrome_avx512x1,
    .xor_syndrome = xor_syndrome_avx512x1,
    .recov_2data = recov_2data_avx512x1,
    .recov_datap = recov_datap_avx512x1,
  },
  {
    .name = "avx512x2",
    .xor_gen = xor_gen_avx512x2,
    .gen_syndrome = gen_syndrome_avx512x2,
    .xor_syndrome = xor_syndrome_avx512x2,
    .recov_2data = recov_2data_avx512x2,
    .recov_datap = recov_datap_avx512x2,
  },
  {
    .name = "avx512x4",
    .xor_gen = xor_gen_avx512x4,
    .gen_syndrome = gen_syndrome_avx512x4,
    .xor_syndrome = xor_syndrome_avx512x4,
    .recov_2data = recov_2data_avx512x4,
    .recov_datap = recov_datap_avx512x4,
  },
};

const struct parity_family parity_family_avx512 = {
  .name = "avx512",
  .cpu_ok = avx512_cpu_ok,
  .impls = avx512_impls,
  .count = ARRAY_SIZE (avx512_impls),
  .preferred = 2,               /* avx512x4 */
};
