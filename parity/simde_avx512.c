/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX-512 kernels compiled against SIMDe: test builds only.
 *
 * vec_avx512.h with PARITY_VEC_SIMDE takes its _mm512_* intrinsics from
 * SIMDe, which implements them in portable C (or in NEON on aarch64), so
 * this family runs on any CPU and under QEMU, which cannot execute
 * AVX-512.  It is the same kernels.h body and the same vector operations
 * as avx512.c: a logic error in either shows here on every machine.  It is
 * never in the library the plugin and raidbench link, only in
 * libparity_test.la (see Makefile.am), and dispatch.c lists it first, as
 * the slowest, so it is never chosen by default.
 *
 * The names carry a "simde_" prefix rather than a suffix so that no SIMDe
 * name starts with a native family's name: parity_use ("avx512") must not
 * be satisfiable by an emulated kernel.
 */

#include <config.h>

#define PARITY_VEC_SIMDE
#include "internal.h"
#include "vec_avx512.h"
#include "kernels.h"

PARITY_KERNELS (simde_avx512x1, 1)
PARITY_KERNELS (simde_avx512x2, 2)
PARITY_KERNELS (simde_avx512x4, 4)

static bool simde_avx512_cpu_ok (void) { return true; }

static const struct parity_impl simde_avx512_impls[] = {
  {
    .name = "simde_avx512x1",
    .xor_gen = xor_gen_simde_avx512x1,
    .gen_syndrome = gen_syndrome_simde_avx512x1,
    .xor_syndrome = xor_syndrome_simde_avx512x1,
    .recov_2data = recov_2data_simde_avx512x1,
    .recov_datap = recov_datap_simde_avx512x1,
  },
  {
    .name = "simde_avx512x2",
    .xor_gen = xor_gen_simde_avx512x2,
    .gen_syndrome = gen_syndrome_simde_avx512x2,
    .xor_syndrome = xor_syndrome_simde_avx512x2,
    .recov_2data = recov_2data_simde_avx512x2,
    .recov_datap = recov_datap_simde_avx512x2,
  },
  {
    .name = "simde_avx512x4",
    .xor_gen = xor_gen_simde_avx512x4,
    .gen_syndrome = gen_syndrome_simde_avx512x4,
    .xor_syndrome = xor_syndrome_simde_avx512x4,
    .recov_2data = recov_2data_simde_avx512x4,
    .recov_datap = recov_datap_simde_avx512x4,
  },
};

const struct parity_family parity_family_simde_avx512 = {
  .name = "simde_avx512",
  .cpu_ok = simde_avx512_cpu_ok,
  .impls = simde_avx512_impls,
  .count = ARRAY_SIZE (simde_avx512_impls),
  .preferred = 2,               /* simde_avx512x4 */
};
