/* SPDX-License-Identifier: BSD-3-Clause */
/* The SSE2 vector operations for kernels.h: 16-byte vectors, the x86-64
 * baseline.  Include only from files compiled with -msse2.
 *
 * Doubling in GF(2^8): pcmpgtb against zero gives 0xff in every byte whose
 * top bit is set (signed compare), paddb shifts every byte left without
 * carrying into its neighbour, and pand selects 0x1d for the final pxor.
 *
 * Multiplication by a constant c (recovery) has no pshufb in SSE2, so it is
 * shift-and-add: x*c is the XOR of x*2^k over the bits k set in c, eight
 * doublings at most.  c is fixed for a whole call, so the bit tests are
 * perfectly predicted; AVX2 uses nibble tables instead.
 */

#ifndef PARITY_VEC_SSE2_H
#define PARITY_VEC_SSE2_H

#include <stdint.h>
#include <emmintrin.h>

#include "internal.h"

typedef __m128i vec_t;
#define VEC_BYTES 16

static inline vec_t v_load (const void *p) { return _mm_loadu_si128 (p); }
static inline void v_store (void *p, vec_t x) { _mm_store_si128 (p, x); }
static inline vec_t v_xor (vec_t a, vec_t b) { return _mm_xor_si128 (a, b); }
static inline vec_t v_zero (void) { return _mm_setzero_si128 (); }

static inline vec_t
v_mul2 (vec_t x)
{
  vec_t mask = _mm_cmpgt_epi8 (_mm_setzero_si128 (), x);

  return _mm_xor_si128 (_mm_add_epi8 (x, x),
                        _mm_and_si128 (mask, _mm_set1_epi8 (0x1d)));
}

struct v_mulc {
  uint8_t c;
};

static inline void v_mulc_init (struct v_mulc *m, uint8_t c) { m->c = c; }

/* v_mulc does up to 8 doublings, so only a longer skip gains from it. */
#define MULC_SKIP_MIN 9

static inline vec_t
v_mulc (vec_t x, const struct v_mulc *m)
{
  vec_t r = _mm_setzero_si128 ();

  for (unsigned int c = m->c; c; c >>= 1, x = v_mul2 (x))
    if (c & 1)
      r = _mm_xor_si128 (r, x);
  return r;
}

#endif /* PARITY_VEC_SSE2_H */
