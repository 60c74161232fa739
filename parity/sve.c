/* SPDX-License-Identifier: BSD-3-Clause */
/* SVE implementation for aarch64: vector-length agnostic.
 *
 * One binary runs at every SVE vector length, 16 to 256 bytes: the code asks
 * svcntb () for the length and never assumes one.  Buffers are multiples of
 * 64 bytes, which a 128- or 256-byte vector does not divide, so the last
 * vectors of a buffer are done under a whilelt predicate: inactive lanes are
 * loaded as zero and never stored.  The wide main loop runs with an
 * all-true predicate.  The vector operations are in vec_sve.h, the loops
 * in kernels_sve.h; this file instantiates them at unrolls 1, 2 and 4 and
 * prefers 4.
 *
 * Why SVE has a template of its own rather than kernels.h.  Judged again
 * for the layout issue (12), with these reasons:
 *
 *   - kernels.h keeps the U vectors of an unrolled step in arrays
 *     (vec_t p[UNROLL_MAX]) and hands them to helpers by pointer, and keeps
 *     a constant's multiplication tables in a struct v_mulc.  SVE vectors
 *     are sizeless: they cannot be array elements or struct members, and
 *     pointer arithmetic on them is not allowed.  The tuple types
 *     (svuint8x4_t) are the only aggregate, and they cost a register copy
 *     of every vector whenever a loop hands them on (see kernels_sve.h).
 *   - Every SVE operation takes a predicate, and the tail needs a partial
 *     one; kernels.h's operations take none, and its tail is whole vectors.
 *   - Making kernels.h sizeless-safe would mean writing it as sve.c's
 *     macros on named variables (p0 .. p3, EACH_U) with a dummy predicate
 *     in every operation of every other family: less readable for the six
 *     families that gain nothing, and a change to the code of all of them
 *     for one that would then look the same.
 *   - Fixing the vector length at build time (-msve-vector-bits) would make
 *     the vectors sized and fit kernels.h, but one binary would then run at
 *     one length only: five builds and a dispatch by svcntb () for what one
 *     agnostic build does now.
 *
 * So kernels_sve.h is kernels.h's algorithms line for line, in the shape
 * SVE allows, with the same names and the same op-then-isa symbols, and
 * vec_sve.h has kernels.h's vector operations with the predicate first.
 */

#include <config.h>

#include "internal.h"
#include "vec_sve.h"
#include "kernels_sve.h"

SVE_KERNELS (svex1, 1)
SVE_KERNELS (svex2, 2)
SVE_KERNELS (svex4, 4)

static bool
sve_cpu_ok (void)
{
  return parity_cpu_features () & PARITY_CPU_SVE;
}

static const struct parity_impl sve_impls[] = {
  {
    .name = "svex1",
    .xor_gen = xor_gen_svex1,
    .gen_syndrome = gen_syndrome_svex1,
    .xor_syndrome = xor_syndrome_svex1,
    .recov_2data = recov_2data_svex1,
    .recov_datap = recov_datap_svex1,
  },
  {
    .name = "svex2",
    .xor_gen = xor_gen_svex2,
    .gen_syndrome = gen_syndrome_svex2,
    .xor_syndrome = xor_syndrome_svex2,
    .recov_2data = recov_2data_svex2,
    .recov_datap = recov_datap_svex2,
  },
  {
    .name = "svex4",
    .xor_gen = xor_gen_svex4,
    .gen_syndrome = gen_syndrome_svex4,
    .xor_syndrome = xor_syndrome_svex4,
    .recov_2data = recov_2data_svex4,
    .recov_datap = recov_datap_svex4,
  },
};

const struct parity_family parity_family_sve = {
  .name = "sve",
  .cpu_ok = sve_cpu_ok,
  .impls = sve_impls,
  .count = ARRAY_SIZE (sve_impls),
  .preferred = 2,               /* svex4 */
};
