/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX2 + GFNI vector operations for kernels.h: vec_avx2.h's registers
 * (32-byte vectors) with GF(2^8) arithmetic by the VEX-encoded
 * vgf2p8affineqb, for the cores that have GFNI but no usable AVX-512:
 * Intel's hybrid chips since Alder Lake, which have no AVX-512 at all,
 * and Ice Lake, whose AVX-512 cpu.c declines (it lowers the clock).
 *
 * The arithmetic is vec_avx512gfni.h's at half the width (that file says
 * why one vgf2p8affineqb multiplies by any constant, and why vgf2p8mulb
 * cannot): v_mul2 and v_mulc are one instruction each, MULC_SKIP_MIN is
 * 2, and Horner's rule takes two disks per step:
 *   q' = (affine (q, M4)) ^ (affine (x1, M2) ^ x0)
 *   p' = p ^ x1 ^ x0
 * Without AVX-512VL there is no vpternlogq on YMM registers, so a pair of
 * disks costs 2 vgf2p8affineqb and 4 vpxor: 3 vector operations per 32
 * bytes per disk, as many as one disk per step would cost.  The pairs are
 * for latency: the chain through Q is one vgf2p8affineqb latency (3 to 5
 * cycles, by core) and one vpxor per two disks (x1's product and x0 are
 * XORed off the chain).  avx2gfnix4 has 24 operations per pair of disks,
 * 8 cycles on the three vector ports of these cores, which covers it; one
 * disk per step would have 4 cycles of work per disk against the same
 * chain per disk.  Four vectors of P and Q and the two matrices take 10
 * of the 16 YMM registers; x8 would spill.
 *
 * One header, two builds: with -mavx2 -mgfni the real instructions
 * (avx2gfni.c); with PARITY_VEC_SIMDE and baseline flags SIMDe's portable
 * C (simde_avx2gfni.c, test builds only).
 */

#ifndef PARITY_VEC_AVX2GFNI_H
#define PARITY_VEC_AVX2GFNI_H

#define PARITY_VEC_OWN_GF
#include "vec_avx2.h"
#ifdef PARITY_VEC_SIMDE
#include <simde/x86/gfni.h>
#endif

/* x times the matrix m, byte by byte (affine with a zero constant). */
static inline vec_t
v_affine (vec_t x, vec_t m)
{
  return _mm256_gf2p8affine_epi64_epi8 (x, m, 0);
}

static inline vec_t
v_matrix (uint64_t m)
{
  return _mm256_set1_epi64x ((long long) m);
}

#include "vec_gfni.h"

/* Load each data vector once and keep it: see vec_avx512gfni.h. */
#ifndef PARITY_VEC_SIMDE
#define v_keep(x) __asm__ ("" : "+v" (x))
#endif

#endif /* PARITY_VEC_AVX2GFNI_H */
