/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX-512 (F + BW) vector operations for kernels.h: 64-byte vectors.
 * In a header of their own so that the same operations serve two families,
 * and so that a family with other GF(2^8) arithmetic on the same registers
 * (AVX-512 + GFNI) can take the register-file half by defining
 * PARITY_VEC_OWN_GF (see kernels.h).
 *
 * One header, two builds.  Compiled with -mavx512f -mavx512bw these are the
 * real instructions (avx512.c, family "avx512").  Included with
 * PARITY_VEC_SIMDE defined and compiled with baseline flags, the same
 * intrinsics come from SIMDe, which implements them in portable C
 * (simde_avx512.c, family "simde_avx512", test builds only): QEMU cannot
 * execute AVX-512, so that is how the kernels' logic is tested on machines
 * without it.  SIMDe's native aliases map every _mm512_* name and type
 * below onto its own.
 *
 * Doubling in GF(2^8) takes four instructions and no constant but 0x1d:
 * vpmovb2m copies the top bit of every byte into a mask register, vpaddb
 * shifts every byte left, and a zero-masked vmovdqu8 of the 0x1d vector
 * feeds the final vpxorq.  (AVX-512 has byte-granular masks only on moves
 * and arithmetic, not on XOR, hence the separate masked move.)  In Horner's
 * rule the XOR with the next data vector follows, and the compiler folds
 * the two XORs into one vpternlogq.
 *
 * v_xor3 is vpternlogq with truth table 0x96 (a ^ b ^ c), so xor_gen needs
 * one logic instruction per two sources.
 *
 * Multiplication by a constant c (recovery) uses nibble tables, as AVX2
 * does: c*x = c*(x & 0x0f) ^ c*(x & 0xf0); vpshufb looks both halves up in
 * 16-byte tables repeated in all four 128-bit lanes.
 *
 * Include only from files compiled as described above.
 */

#ifndef PARITY_VEC_AVX512_H
#define PARITY_VEC_AVX512_H

#include <stdint.h>

#ifdef PARITY_VEC_SIMDE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#else
#include <immintrin.h>
#endif

#include "internal.h"

typedef __m512i vec_t;
#define VEC_BYTES 64

static inline vec_t v_load (const void *p) { return _mm512_loadu_si512 (p); }
static inline void v_store (void *p, vec_t x) { _mm512_store_si512 (p, x); }
static inline vec_t v_xor (vec_t a, vec_t b) { return _mm512_xor_si512 (a, b); }
static inline vec_t v_zero (void) { return _mm512_setzero_si512 (); }

static inline vec_t
v_xor3 (vec_t a, vec_t b, vec_t c)
{
  return _mm512_ternarylogic_epi64 (a, b, c, 0x96);
}
#define v_xor3 v_xor3

#ifndef PARITY_VEC_OWN_GF

static inline vec_t
v_mul2 (vec_t x)
{
  /* The mask is not named: SIMDe 0.7 has no alias for __mmask64. */
  return _mm512_xor_si512 (_mm512_add_epi8 (x, x),
                           _mm512_maskz_mov_epi8 (_mm512_movepi8_mask (x),
                                                  _mm512_set1_epi8 (0x1d)));
}

struct v_mulc {
  vec_t lo, hi;                 /* c * i and c * (i << 4), i = 0..15 */
};

static inline void
v_mulc_init (struct v_mulc *m, uint8_t c)
{
  const uint8_t *t = parity_gf_nibbles[c];

  m->lo = _mm512_broadcast_i32x4 (_mm_loadu_si128 ((const void *) t));
  m->hi = _mm512_broadcast_i32x4 (_mm_loadu_si128 ((const void *) (t + 16)));
}

/* One multiplication by g^k beats k doublings from k = 3 on. */
#define MULC_SKIP_MIN 3

static inline vec_t
v_mulc (vec_t x, const struct v_mulc *m)
{
  const vec_t nibble = _mm512_set1_epi8 (0x0f);
  vec_t lo = _mm512_and_si512 (x, nibble);
  vec_t hi = _mm512_and_si512 (_mm512_srli_epi16 (x, 4), nibble);

  return _mm512_xor_si512 (_mm512_shuffle_epi8 (m->lo, lo),
                           _mm512_shuffle_epi8 (m->hi, hi));
}

#endif /* !PARITY_VEC_OWN_GF */

#endif /* PARITY_VEC_AVX512_H */
