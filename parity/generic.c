/* The generic implementation: portable 64-bit integer code, and the
 * reference every SIMD implementation is tested against.
 *
 * The mathematics.  RAID-6 stores two parity blocks per stripe so that any
 * two lost blocks can be rebuilt.  Bytes are elements of the finite field
 * GF(2^8): addition is XOR, and multiplication is polynomial multiplication
 * of the bit patterns modulo x^8+x^4+x^3+x^2+1 (0x11d).  The element g = 2
 * (the polynomial x) generates every nonzero element: g^0 .. g^254 are all
 * different.  For data blocks D_0 .. D_{n-1}:
 *
 *   P = D_0 ^ D_1 ^ ... ^ D_{n-1}
 *   Q = g^0 D_0 ^ g^1 D_1 ^ ... ^ g^{n-1} D_{n-1}
 *
 * byte by byte.  Multiplying by g is a shift left by one bit and, when the
 * bit shifted out was 1, an XOR with 0x1d (the polynomial less x^8).  That
 * is cheap on whole words: with hi = x & 0x80..80, the mask
 * (hi << 1) - (hi >> 7) is 0xff in every byte whose top bit was set, so
 *   2x = ((x << 1) & 0xfe..fe) ^ (mask & 0x1d..1d).
 * Horner's rule, Q = ((D_{n-1} g ^ D_{n-2}) g ^ ...) g ^ D_0, then costs one
 * doubling and one XOR per disk (see kernels.h).
 *
 * Recovery.  Losing D_a and D_b (a < b), compute P' and Q' from the
 * surviving data as if D_a = D_b = 0.  Then px = P ^ P' = D_a ^ D_b and
 * qx = Q ^ Q' = g^a D_a ^ g^b D_b, two linear equations in two unknowns:
 *   D_b = px * g^a / (g^a ^ g^b) ^ qx / (g^a ^ g^b),   D_a = D_b ^ px.
 * Losing D_a and P: qx = g^a D_a, so D_a = qx * g^-a, then P is recomputed.
 * Losing D_a and Q is RAID-5 recovery from P followed by gen_syndrome.
 * (H. Peter Anvin, "The mathematics of RAID-6", explains all of this.)
 *
 * RAID-5 parity is P alone: xor_gen.
 *
 * Multiplication by an arbitrary constant (recovery only) looks each byte up
 * in a 256-entry row of the product table built for that constant.
 */

#include <config.h>

#include <stdint.h>

#include "internal.h"

typedef uint64_t vec_t;
#define VEC_BYTES 8

#define BYTES_01 UINT64_C (0x0101010101010101)

static inline vec_t v_load (const void *p) { return *(const uint64_t *) p; }
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

#include "kernels.h"

PARITY_KERNELS (generic, 2)

static bool generic_cpu_ok (void) { return true; }

static const struct parity_impl generic_impls[] = {
  PARITY_IMPL_ENTRY (generic),
};

const struct parity_family parity_family_generic = {
  "generic", generic_cpu_ok, generic_impls, 1, 0,
};
