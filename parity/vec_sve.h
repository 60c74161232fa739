/* SPDX-License-Identifier: BSD-3-Clause */
/* The SVE vector operations for kernels_sve.h: vectors of svcntb () bytes,
 * 16 to 256, not known until run time.
 *
 * Every operation takes the predicate of the step (pg): all lanes in the
 * main loop, the bytes left before the end of the buffer in the tail.
 * Inactive lanes are loaded as zero and never stored, so what the
 * arithmetic ("_x" forms: inactive lanes undefined) leaves in them never
 * reaches memory.
 *
 * Doubling in GF(2^8) is three instructions where NEON needs four: cmplt
 * writes a predicate of the bytes whose top bit is set, add doubles every
 * byte, and eor under that predicate folds in 0x1d.  With the XOR of the
 * next data vector, Horner's rule costs four instructions per vector of Q.
 *
 * Multiplication by a constant c (recovery) uses nibble tables, as NEON
 * does with tbl: gf.c's 16-entry tables fill the first 16 bytes of a
 * vector (every SVE vector has at least 16), so an index 0..15 finds its
 * entry at any vector length.  SVE vectors cannot be struct members, so
 * the two tables travel as two vectors rather than a struct v_mulc.
 *
 * There is no three-input XOR in SVE (EOR3 is SVE2), so xor_gen uses EORs.
 * Include only from files compiled with SVE enabled (-march=armv8-a+sve).
 */

#ifndef PARITY_VEC_SVE_H
#define PARITY_VEC_SVE_H

#include <stdint.h>
#include <arm_sve.h>

#include "internal.h"

static inline svuint8_t
v_load (svbool_t pg, const void *p)
{
  return svld1_u8 (pg, p);
}

static inline void
v_store (svbool_t pg, void *p, svuint8_t x)
{
  svst1_u8 (pg, p, x);
}

static inline svuint8_t
v_xor (svbool_t pg, svuint8_t a, svuint8_t b)
{
  return sveor_u8_x (pg, a, b);
}

static inline svuint8_t v_zero (void) { return svdup_n_u8 (0); }

static inline svuint8_t
v_mul2 (svbool_t pg, svuint8_t x)
{
  svbool_t top = svcmplt_n_s8 (pg, svreinterpret_s8_u8 (x), 0);

  return sveor_n_u8_m (top, svadd_u8_x (pg, x, x), 0x1d);
}

/* The nibble tables of c, in the first 16 bytes of *lo and *hi. */
static inline void
v_mulc_init (uint8_t c, svuint8_t *lo, svuint8_t *hi)
{
  svbool_t first16 = svwhilelt_b8_u32 (0, 16);

  *lo = svld1_u8 (first16, parity_gf_nibbles[c]);
  *hi = svld1_u8 (first16, parity_gf_nibbles[c] + 16);
}

static inline svuint8_t
v_mulc (svbool_t pg, svuint8_t x, svuint8_t lo, svuint8_t hi)
{
  return sveor_u8_x (pg, svtbl_u8 (lo, svand_n_u8_x (pg, x, 0x0f)),
                     svtbl_u8 (hi, svlsr_n_u8_x (pg, x, 4)));
}

#endif /* PARITY_VEC_SVE_H */
