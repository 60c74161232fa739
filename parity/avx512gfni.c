/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX-512 + GFNI implementation: 64-byte vectors, GF(2^8) products by
 * vgf2p8affineqb.
 *
 * The vector operations and their reasons (one instruction per product,
 * two disks per Horner step) are in vec_avx512gfni.h; this file
 * instantiates kernels.h with them at unrolls 1, 2, 4 and 8 and prefers 8:
 * measured on Zen 4 (raidbench, 4 KiB per disk, in cache), x8 is 1.2 to
 * 1.5 times x4 from 16 disks on, where the stripe no longer fits L1 and
 * eight lines per disk per step keep more L2 misses in flight.  Where x8
 * was not better, avx512gfnix8 runs x4's code: xor_syndrome (md's
 * read-modify-write, bound by stores) and gen_syndrome of a stripe that
 * fits L1 (XOR_SYNDROME_U_MAX, GEN_SMALL_BYTES in vec_avx512gfni.h).
 * It runs where the CPU has GFNI and AVX-512BW, and cpu.c does not flag
 * AVX-512 as lowering the clock: the same policy as avx512.c, so Ice Lake
 * gets avx2gfni.  simde_avx512gfni.c builds the same kernels against SIMDe
 * for the tests.
 */

#include <config.h>

#include "internal.h"
#include "vec_avx512gfni.h"
#include "kernels.h"

PARITY_KERNELS (avx512gfnix1, 1)
PARITY_KERNELS (avx512gfnix2, 2)
PARITY_KERNELS (avx512gfnix4, 4)
PARITY_KERNELS (avx512gfnix8, 8)

static bool
avx512gfni_cpu_ok (void)
{
  unsigned int f = parity_cpu_features ();

  return (f & PARITY_CPU_AVX512BW) && (f & PARITY_CPU_GFNI)
         && !(f & PARITY_CPU_AVX512_SLOW);
}

static const struct parity_impl avx512gfni_impls[] = {
  {
    .name = "avx512gfnix1",
    .xor_gen = xor_gen_avx512gfnix1,
    .gen_syndrome = gen_syndrome_avx512gfnix1,
    .xor_syndrome = xor_syndrome_avx512gfnix1,
    .recov_2data = recov_2data_avx512gfnix1,
    .recov_datap = recov_datap_avx512gfnix1,
  },
  {
    .name = "avx512gfnix2",
    .xor_gen = xor_gen_avx512gfnix2,
    .gen_syndrome = gen_syndrome_avx512gfnix2,
    .xor_syndrome = xor_syndrome_avx512gfnix2,
    .recov_2data = recov_2data_avx512gfnix2,
    .recov_datap = recov_datap_avx512gfnix2,
  },
  {
    .name = "avx512gfnix4",
    .xor_gen = xor_gen_avx512gfnix4,
    .gen_syndrome = gen_syndrome_avx512gfnix4,
    .xor_syndrome = xor_syndrome_avx512gfnix4,
    .recov_2data = recov_2data_avx512gfnix4,
    .recov_datap = recov_datap_avx512gfnix4,
  },
  {
    .name = "avx512gfnix8",
    .xor_gen = xor_gen_avx512gfnix8,
    .gen_syndrome = gen_syndrome_avx512gfnix8,
    .xor_syndrome = xor_syndrome_avx512gfnix8,
    .recov_2data = recov_2data_avx512gfnix8,
    .recov_datap = recov_datap_avx512gfnix8,
  },
};

const struct parity_family parity_family_avx512gfni = {
  .name = "avx512gfni",
  .cpu_ok = avx512gfni_cpu_ok,
  .impls = avx512gfni_impls,
  .count = ARRAY_SIZE (avx512gfni_impls),
  .preferred = 3,               /* avx512gfnix8 */
};
