/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX2 + GFNI kernels compiled against SIMDe: test builds only.
 *
 * vec_avx2gfni.h with PARITY_VEC_SIMDE takes its _mm256_* intrinsics,
 * vgf2p8affineqb included, from SIMDe and compiles with baseline flags,
 * so avx2gfni.c's kernels are tested on CPUs without GFNI (or AVX2) and
 * under QEMU; simde_avx512gfni.c says why that testing holds for the real
 * instruction.  Test builds only; never chosen by default.
 */

#include <config.h>

#define PARITY_VEC_SIMDE
#include "internal.h"
#include "vec_avx2gfni.h"
#include "kernels.h"

PARITY_KERNELS (simde_avx2gfnix1, 1)
PARITY_KERNELS (simde_avx2gfnix2, 2)
PARITY_KERNELS (simde_avx2gfnix4, 4)

static bool simde_avx2gfni_cpu_ok (void) { return true; }

static const struct parity_impl simde_avx2gfni_impls[] = {
  {
    .name = "simde_avx2gfnix1",
    .xor_gen = xor_gen_simde_avx2gfnix1,
    .gen_syndrome = gen_syndrome_simde_avx2gfnix1,
    .xor_syndrome = xor_syndrome_simde_avx2gfnix1,
    .recov_2data = recov_2data_simde_avx2gfnix1,
    .recov_datap = recov_datap_simde_avx2gfnix1,
  },
  {
    .name = "simde_avx2gfnix2",
    .xor_gen = xor_gen_simde_avx2gfnix2,
    .gen_syndrome = gen_syndrome_simde_avx2gfnix2,
    .xor_syndrome = xor_syndrome_simde_avx2gfnix2,
    .recov_2data = recov_2data_simde_avx2gfnix2,
    .recov_datap = recov_datap_simde_avx2gfnix2,
  },
  {
    .name = "simde_avx2gfnix4",
    .xor_gen = xor_gen_simde_avx2gfnix4,
    .gen_syndrome = gen_syndrome_simde_avx2gfnix4,
    .xor_syndrome = xor_syndrome_simde_avx2gfnix4,
    .recov_2data = recov_2data_simde_avx2gfnix4,
    .recov_datap = recov_datap_simde_avx2gfnix4,
  },
};

const struct parity_family parity_family_simde_avx2gfni = {
  .name = "simde_avx2gfni",
  .cpu_ok = simde_avx2gfni_cpu_ok,
  .impls = simde_avx2gfni_impls,
  .count = ARRAY_SIZE (simde_avx2gfni_impls),
  .preferred = 2,               /* simde_avx2gfnix4 */
};
