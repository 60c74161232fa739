/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX-512 + GFNI kernels compiled against SIMDe: test builds only.
 *
 * As simde_avx512.c does for avx512.c: vec_avx512gfni.h with
 * PARITY_VEC_SIMDE takes its _mm512_* intrinsics, vgf2p8affineqb
 * included, from SIMDe (x86/gfni.h), so the same kernels.h body and the
 * same vector operations as avx512gfni.c run on any CPU and under QEMU,
 * neither of which needs GFNI.  SIMDe implements the instruction from its
 * definition, bit by bit; test_parity checks that definition against the
 * SDM's, and the matrices against ISA-L's, so that a kernel passing here
 * computes the same on real GFNI hardware.  Never in the library the
 * plugin and raidbench link (see Makefile.am); listed first in
 * dispatch.c, so never chosen by default.
 */

#include <config.h>

#define PARITY_VEC_SIMDE
#include "internal.h"
#include "vec_avx512gfni.h"
#include "kernels.h"

PARITY_KERNELS (simde_avx512gfnix1, 1)
PARITY_KERNELS (simde_avx512gfnix2, 2)
PARITY_KERNELS (simde_avx512gfnix4, 4)
PARITY_KERNELS (simde_avx512gfnix8, 8)

static bool simde_avx512gfni_cpu_ok (void) { return true; }

static const struct parity_impl simde_avx512gfni_impls[] = {
  {
    .name = "simde_avx512gfnix1",
    .xor_gen = xor_gen_simde_avx512gfnix1,
    .gen_syndrome = gen_syndrome_simde_avx512gfnix1,
    .xor_syndrome = xor_syndrome_simde_avx512gfnix1,
    .recov_2data = recov_2data_simde_avx512gfnix1,
    .recov_datap = recov_datap_simde_avx512gfnix1,
  },
  {
    .name = "simde_avx512gfnix2",
    .xor_gen = xor_gen_simde_avx512gfnix2,
    .gen_syndrome = gen_syndrome_simde_avx512gfnix2,
    .xor_syndrome = xor_syndrome_simde_avx512gfnix2,
    .recov_2data = recov_2data_simde_avx512gfnix2,
    .recov_datap = recov_datap_simde_avx512gfnix2,
  },
  {
    .name = "simde_avx512gfnix4",
    .xor_gen = xor_gen_simde_avx512gfnix4,
    .gen_syndrome = gen_syndrome_simde_avx512gfnix4,
    .xor_syndrome = xor_syndrome_simde_avx512gfnix4,
    .recov_2data = recov_2data_simde_avx512gfnix4,
    .recov_datap = recov_datap_simde_avx512gfnix4,
  },
  {
    .name = "simde_avx512gfnix8",
    .xor_gen = xor_gen_simde_avx512gfnix8,
    .gen_syndrome = gen_syndrome_simde_avx512gfnix8,
    .xor_syndrome = xor_syndrome_simde_avx512gfnix8,
    .recov_2data = recov_2data_simde_avx512gfnix8,
    .recov_datap = recov_datap_simde_avx512gfnix8,
  },
};

const struct parity_family parity_family_simde_avx512gfni = {
  .name = "simde_avx512gfni",
  .cpu_ok = simde_avx512gfni_cpu_ok,
  .impls = simde_avx512gfni_impls,
  .count = ARRAY_SIZE (simde_avx512gfni_impls),
  .preferred = 3,               /* simde_avx512gfnix8, as avx512gfni.c */
};
