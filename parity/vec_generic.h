/* SPDX-License-Identifier: BSD-3-Clause */
/* The generic vector operations for kernels.h: a uint64_t is a vector of
 * eight bytes, so the reference needs no instruction set beyond C.
 *
 * Doubling in GF(2^8) on a whole word: with hi = x & 0x80..80, the mask
 * (hi << 1) - (hi >> 7) is 0xff in every byte whose top bit was set (it is
 * the sum of 0x100 << 8k minus 1 << 8k, that is 0xff << 8k, over those
 * bytes k, so nothing borrows across a byte), and
 *   2x = ((x << 1) & 0xfe..fe) ^ (mask & 0x1d..1d).
 *
 * Multiplication by an arbitrary constant (recovery, and xor_syndrome never:
 * MULC_SKIP_MIN stays at its default) looks each byte up in a 256-entry row
 * of the product table built for that constant.
 */

#ifndef PARITY_VEC_GENERIC_H
#define PARITY_VEC_GENERIC_H

#include <stdint.h>
#include <string.h>

#include "internal.h"

typedef uint64_t vec_t;
#define VEC_BYTES 8

#define BYTES_01 UINT64_C (0x0101010101010101)

static inline vec_t
v_load (const void *p)
{
  vec_t x;

  memcpy (&x, p, sizeof x);     /* any address: one mov on x86 and arm64 */
  return x;
}

static inline void v_store (void *p, vec_t x) { *(uint64_t *) p = x; }
static inline vec_t v_xor (vec_t a, vec_t b) { return a ^ b; }
static inline vec_t v_zero (void) { return 0; }

static inline vec_t
v_mul2 (vec_t x)
{
  vec_t hi = x & (BYTES_01 * 0x80);
  vec_t mask = (hi << 1) - (hi >> 7);

  return ((x << 1) & (BYTES_01 * 0xfe)) ^ (mask & (BYTES_01 * 0x1d));
}

struct v_mulc {
  uint8_t row[256];
};

static inline void
v_mulc_init (struct v_mulc *m, uint8_t c)
{
  for (unsigned int i = 0; i < 256; i++)
    m->row[i] = parity_gf_mul (c, i);
}

static inline vec_t
v_mulc (vec_t x, const struct v_mulc *m)
{
  vec_t r = 0;

  for (unsigned int i = 0; i < 64; i += 8)
    r |= (vec_t) m->row[(x >> i) & 0xff] << i;
  return r;
}

#endif /* PARITY_VEC_GENERIC_H */
