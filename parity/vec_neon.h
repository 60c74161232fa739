/* SPDX-License-Identifier: BSD-3-Clause */
/* The NEON (Advanced SIMD) vector operations for kernels.h: 16-byte
 * vectors.
 *
 * Doubling in GF(2^8): cmlt #0 (vcltzq_s8) gives 0xff in every byte whose
 * top bit is set, in one instruction and without the shift-by-7 that
 * Linux's neon code uses; and it with 0x1d, add the vector to itself (a
 * shift left by one that cannot carry between bytes), XOR.  Horner's rule
 * then XORs in the next data vector: five instructions per data vector for
 * Q, one for P, and loads that the compiler pairs into ldp.
 *
 * Multiplication by a constant c (recovery) uses nibble tables:
 * c*x = c*(x & 0x0f) ^ c*(x >> 4 << 4), each half looked up with tbl in a
 * 16-byte table (gf.c's parity_gf_nibbles[c]).  ushr #4 moves the high nibble down with no mask needed
 * (NEON shifts bytes as bytes); the low nibble needs an and, because tbl
 * returns 0 for indices above 15.
 *
 * There is no three-input XOR in base NEON (EOR3 needs the SHA3
 * extension, which not every core has), so v_xor3 is the default two EORs.
 */

#ifndef PARITY_VEC_NEON_H
#define PARITY_VEC_NEON_H

#include <stdint.h>
#include <arm_neon.h>

#include "internal.h"

typedef uint8x16_t vec_t;
#define VEC_BYTES 16

static inline vec_t v_load (const void *p) { return vld1q_u8 (p); }
static inline void v_store (void *p, vec_t x) { vst1q_u8 (p, x); }
static inline vec_t v_xor (vec_t a, vec_t b) { return veorq_u8 (a, b); }
static inline vec_t v_zero (void) { return vdupq_n_u8 (0); }

static inline vec_t
v_mul2 (vec_t x)
{
  vec_t top = vcltzq_s8 (vreinterpretq_s8_u8 (x));

  return veorq_u8 (vaddq_u8 (x, x), vandq_u8 (top, vdupq_n_u8 (0x1d)));
}

struct v_mulc {
  vec_t lo, hi;                 /* c * i and c * (i << 4), i = 0..15 */
};

static inline void
v_mulc_init (struct v_mulc *m, uint8_t c)
{
  m->lo = vld1q_u8 (parity_gf_nibbles[c]);
  m->hi = vld1q_u8 (parity_gf_nibbles[c] + 16);
}

static inline vec_t
v_mulc (vec_t x, const struct v_mulc *m)
{
  return veorq_u8 (vqtbl1q_u8 (m->lo, vandq_u8 (x, vdupq_n_u8 (0x0f))),
                   vqtbl1q_u8 (m->hi, vshrq_n_u8 (x, 4)));
}

#endif /* PARITY_VEC_NEON_H */
