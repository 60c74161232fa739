/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX2 + GFNI implementation: 32-byte vectors, GF(2^8) products by the
 * VEX-encoded vgf2p8affineqb.
 *
 * The vector operations and their reasons are in vec_avx2gfni.h; this
 * file instantiates kernels.h with them at unrolls 1, 2 and 4 and prefers
 * 4.  It runs where the CPU has GFNI and AVX2 with the YMM state saved:
 * Alder Lake and later hybrid chips, and Ice Lake, where avx512gfni is
 * declined.  simde_avx2gfni.c builds the same kernels against SIMDe for
 * the tests.
 */

#include <config.h>

#include "internal.h"
#include "vec_avx2gfni.h"
#include "kernels.h"

PARITY_KERNELS (avx2gfnix1, 1)
PARITY_KERNELS (avx2gfnix2, 2)
PARITY_KERNELS (avx2gfnix4, 4)

static bool
avx2gfni_cpu_ok (void)
{
  unsigned int f = parity_cpu_features ();

  return (f & PARITY_CPU_AVX2) && (f & PARITY_CPU_GFNI);
}

static const struct parity_impl avx2gfni_impls[] = {
  {
    .name = "avx2gfnix1",
    .xor_gen = xor_gen_avx2gfnix1,
    .gen_syndrome = gen_syndrome_avx2gfnix1,
    .xor_syndrome = xor_syndrome_avx2gfnix1,
    .recov_2data = recov_2data_avx2gfnix1,
    .recov_datap = recov_datap_avx2gfnix1,
  },
  {
    .name = "avx2gfnix2",
    .xor_gen = xor_gen_avx2gfnix2,
    .gen_syndrome = gen_syndrome_avx2gfnix2,
    .xor_syndrome = xor_syndrome_avx2gfnix2,
    .recov_2data = recov_2data_avx2gfnix2,
    .recov_datap = recov_datap_avx2gfnix2,
  },
  {
    .name = "avx2gfnix4",
    .xor_gen = xor_gen_avx2gfnix4,
    .gen_syndrome = gen_syndrome_avx2gfnix4,
    .xor_syndrome = xor_syndrome_avx2gfnix4,
    .recov_2data = recov_2data_avx2gfnix4,
    .recov_datap = recov_datap_avx2gfnix4,
  },
};

const struct parity_family parity_family_avx2gfni = {
  .name = "avx2gfni",
  .cpu_ok = avx2gfni_cpu_ok,
  .impls = avx2gfni_impls,
  .count = ARRAY_SIZE (avx2gfni_impls),
  .preferred = 2,               /* avx2gfnix4 */
};
