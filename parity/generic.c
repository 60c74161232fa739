/* SPDX-License-Identifier: BSD-3-Clause */
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
 * bit shifted out was 1, an XOR with 0x1d (the polynomial less x^8);
 * vec_generic.h does it on eight bytes of a 64-bit word at once.  Horner's
 * rule, Q = ((D_{n-1} g ^ D_{n-2}) g ^ ...) g ^ D_0, then costs one
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
 * Checking a stripe and locating a single bad block from P and Q is in
 * check.c, which says how.
 *
 * This file is the family: its vector operations are vec_generic.h's, its
 * loops kernels.h's, instantiated once with an unroll of two words.
 */

#include <config.h>

#include "internal.h"
#include "vec_generic.h"
#include "kernels.h"

PARITY_KERNELS (generic, 2)

static bool generic_cpu_ok (void) { return true; }

static const struct parity_impl generic_impls[] = {
  {
    .name = "generic",
    .xor_gen = xor_gen_generic,
    .gen_syndrome = gen_syndrome_generic,
    .xor_syndrome = xor_syndrome_generic,
    .recov_2data = recov_2data_generic,
    .recov_datap = recov_datap_generic,
  },
};

const struct parity_family parity_family_generic = {
  .name = "generic",
  .cpu_ok = generic_cpu_ok,
  .impls = generic_impls,
  .count = ARRAY_SIZE (generic_impls),
  .preferred = 0,
};
