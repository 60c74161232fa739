/* SPDX-License-Identifier: BSD-3-Clause */
/* NEON (Advanced SIMD) implementation for aarch64: 16-byte vectors.
 *
 * NEON is part of every aarch64 CPU, so this file needs no special flags;
 * it is still a family of its own, chosen by HWCAP_ASIMD (cpu.c).  The
 * vector operations and their reasons are in vec_neon.h; this file
 * instantiates kernels.h with them at unrolls 1, 2 and 4 and prefers 4.
 */

#include <config.h>

#include "internal.h"
#include "vec_neon.h"
#include "kernels.h"

PARITY_KERNELS (neonx1, 1)
PARITY_KERNELS (neonx2, 2)
PARITY_KERNELS (neonx4, 4)

static bool
neon_cpu_ok (void)
{
  return parity_cpu_features () & PARITY_CPU_NEON;
}

static const struct parity_impl neon_impls[] = {
  {
    .name = "neonx1",
    .xor_gen = xor_gen_neonx1,
    .gen_syndrome = gen_syndrome_neonx1,
    .xor_syndrome = xor_syndrome_neonx1,
    .recov_2data = recov_2data_neonx1,
    .recov_datap = recov_datap_neonx1,
  },
  {
    .name = "neonx2",
    .xor_gen = xor_gen_neonx2,
    .gen_syndrome = gen_syndrome_neonx2,
    .xor_syndrome = xor_syndrome_neonx2,
    .recov_2data = recov_2data_neonx2,
    .recov_datap = recov_datap_neonx2,
  },
  {
    .name = "neonx4",
    .xor_gen = xor_gen_neonx4,
    .gen_syndrome = gen_syndrome_neonx4,
    .xor_syndrome = xor_syndrome_neonx4,
    .recov_2data = recov_2data_neonx4,
    .recov_datap = recov_datap_neonx4,
  },
};

const struct parity_family parity_family_neon = {
  .name = "neon",
  .cpu_ok = neon_cpu_ok,
  .impls = neon_impls,
  .count = ARRAY_SIZE (neon_impls),
  .preferred = 2,               /* neonx4 */
};
