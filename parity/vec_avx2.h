/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX2 vector operations for kernels.h: 32-byte vectors.  In a header
 * of their own so that raidbench can instantiate the same kernels with
 * non-temporal stores (bench/rmw_nt.c), and so that a family with other
 * GF(2^8) arithmetic on the same registers (AVX2 + GFNI) can take the
 * register-file half by defining PARITY_VEC_OWN_GF (see kernels.h).
 * Include only from files compiled with -mavx2, or with PARITY_VEC_SIMDE
 * defined, which takes the _mm256_* intrinsics from SIMDe as
 * vec_avx512.h does (simde_avx2gfni.c, test builds only).
 *
 * Doubling in three instructions: vpblendvb picks 0x1d or 0 by each
 * byte's top bit, vpaddb shifts every byte left, vpxor reduces.  (SSE2's
 * compare-and-mask form, vpcmpgtb then vpand, needs a fourth.)
 *
 * Multiplication by a constant c uses the nibble-table method:
 * c*x = c*(x & 0x0f) ^ c*(x & 0xf0), and each half has only 16 values, so
 * two vpshufb lookups into 16-byte tables (gf.c's, copied into both
 * 128-bit lanes) replace up to eight doublings.  That is cheaper than
 * doubling from three doublings on, so xor_syndrome skips the disks below
 * start with one multiplication by g^start from start = 3 (MULC_SKIP_MIN).
 */

#ifndef PARITY_VEC_AVX2_H
#define PARITY_VEC_AVX2_H

#include <stdint.h>

#ifdef PARITY_VEC_SIMDE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx2.h>
#else
#include <immintrin.h>
#endif

#include "internal.h"

typedef __m256i vec_t;
#define VEC_BYTES 32

static inline vec_t v_load (const void *p) { return _mm256_loadu_si256 (p); }
static inline void v_store (void *p, vec_t x) { _mm256_store_si256 (p, x); }
static inline vec_t v_xor (vec_t a, vec_t b) { return _mm256_xor_si256 (a, b); }
static inline vec_t v_zero (void) { return _mm256_setzero_si256 (); }

#ifndef PARITY_VEC_OWN_GF

static inline vec_t
v_mul2 (vec_t x)
{
  vec_t poly = _mm256_blendv_epi8 (_mm256_setzero_si256 (),
                                   _mm256_set1_epi8 (0x1d), x);

  return _mm256_xor_si256 (_mm256_add_epi8 (x, x), poly);
}

struct v_mulc {
  vec_t lo, hi;                 /* c * i and c * (i << 4), i = 0..15 */
};

static inline void
v_mulc_init (struct v_mulc *m, uint8_t c)
{
  const uint8_t *t = parity_gf_nibbles[c];

  m->lo = _mm256_broadcastsi128_si256 (_mm_loadu_si128 ((const void *) t));
  m->hi = _mm256_broadcastsi128_si256 (_mm_loadu_si128 ((const void *) (t + 16)));
}

#define MULC_SKIP_MIN 3

static inline vec_t
v_mulc (vec_t x, const struct v_mulc *m)
{
  const vec_t nibble = _mm256_set1_epi8 (0x0f);
  vec_t lo = _mm256_and_si256 (x, nibble);
  vec_t hi = _mm256_and_si256 (_mm256_srli_epi16 (x, 4), nibble);

  return _mm256_xor_si256 (_mm256_shuffle_epi8 (m->lo, lo),
                           _mm256_shuffle_epi8 (m->hi, hi));
}

#endif /* !PARITY_VEC_OWN_GF */

#endif /* PARITY_VEC_AVX2_H */
