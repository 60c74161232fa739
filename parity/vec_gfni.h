/* SPDX-License-Identifier: BSD-3-Clause */
/* GF(2^8) by bit matrices: the field operations of kernels.h for the GFNI
 * families, the same at every width.
 *
 * A family's header (vec_avx2gfni.h, vec_avx512gfni.h) defines
 * PARITY_VEC_OWN_GF, includes its width's registers, defines
 *   v_affine (x, m)  every byte of x times the 8x8 bit matrix m (one
 *                    vgf2p8affineqb with a zero constant), and
 *   v_matrix (m)     the matrix m in every qword of a vector,
 * and then includes this file for the rest: multiplication by 2, by any
 * constant c (parity_gf_affine[c], gf.c), and two steps of Horner's rule
 * at once.  vec_avx512gfni.h says why one instruction does each, and why
 * MULC_SKIP_MIN is 2; with a three-input XOR (v_xor3: vpternlogq) the
 * Horner pair takes one instruction fewer than with two v_xor.
 */

#ifndef PARITY_VEC_GFNI_H
#define PARITY_VEC_GFNI_H

#include "internal.h"

static inline vec_t
v_mul2 (vec_t x)
{
  return v_affine (x, v_matrix (PARITY_GF_AFFINE_2));
}

struct v_mulc {
  vec_t m;                      /* parity_gf_affine[c] in every qword */
};

static inline void
v_mulc_init (struct v_mulc *m, uint8_t c)
{
  m->m = v_matrix (parity_gf_affine[c]);
}

#define MULC_SKIP_MIN 2

static inline vec_t
v_mulc (vec_t x, const struct v_mulc *m)
{
  return v_affine (x, m->m);
}

/* q g^2 ^ x1 g ^ x0 */
static inline vec_t
v_horner2 (vec_t q, vec_t x1, vec_t x0)
{
#ifdef v_xor3
  return v_xor3 (v_affine (q, v_matrix (PARITY_GF_AFFINE_4)),
                 v_affine (x1, v_matrix (PARITY_GF_AFFINE_2)), x0);
#else
  return v_xor (v_affine (q, v_matrix (PARITY_GF_AFFINE_4)),
                v_xor (v_affine (x1, v_matrix (PARITY_GF_AFFINE_2)), x0));
#endif
}
#define v_horner2 v_horner2

/* Recovery by direct sums (kernels.h): the constant's matrix, broadcast. */
static inline vec_t
v_gmatrix (uint8_t c)
{
  return v_matrix (parity_gf_affine[c]);
}
#define v_gmatrix v_gmatrix
#define v_mulm v_affine

#endif /* PARITY_VEC_GFNI_H */
