/* SPDX-License-Identifier: BSD-3-Clause */
/* GF(2^8) arithmetic for RAID-6: log and antilog tables for polynomial
 * x^8+x^4+x^3+x^2+1 (0x11d), generator g = 2, and the recovery constants
 * derived from them, the nibble tables of every constant for the
 * pshufb-style multiply (c*x = c*(x & 0x0f) ^ c*(x & 0xf0)), and the bit
 * matrix of every constant for GFNI's affine instruction.  The tables are
 * built once by a constructor (10.5 KiB); kernels read them when they set
 * up a multiplication, never in an inner loop.
 *
 * The affine matrices.  Multiplying by a constant c is linear over GF(2):
 * c*x is the XOR of c*2^j over the bits j set in x, so bit i of c*x is the
 * parity of x AND row_i, where bit j of row_i is bit i of c*2^j.
 * vgf2p8affineqb (Intel SDM vol. 2, GF2P8AFFINEQB) computes, for each
 * byte x of its first source and the qword A of its second source that
 * holds that byte, result bit i = parity (A.byte[7 - i] AND x) (XOR bit i
 * of an immediate, 0 here).  So the qword for c holds row_i in byte 7 - i:
 * row_0 in the top byte, row_7 in the bottom one.  For c = 2 that is
 * 0x8001828488102040, byte for byte the matrix ISA-L's pq_gen_avx512_gfni
 * multiplies by 2 with (tests/test_parity.c checks both, and that every
 * matrix multiplies every byte right under the SDM's definition).  The
 * instruction's own multiply, vgf2p8mulb, reduces by AES's 0x11b and
 * cannot serve RAID-6.
 */

#include <config.h>

#include "internal.h"

uint8_t parity_gf_exp[256];
uint8_t parity_gf_log[256];
uint8_t parity_gf_nibbles[256][32];
uint64_t parity_gf_affine[256];

/* The affine matrix of c: row_i (bit j = bit i of c * 2^j) in byte 7 - i. */
static uint64_t
affine_matrix (uint8_t c)
{
  uint64_t m = 0;

  for (unsigned int i = 0; i < 8; i++) {
    unsigned int row = 0;

    for (unsigned int j = 0; j < 8; j++)
      row |= ((parity_gf_mul (c, 1 << j) >> i) & 1) << j;
    m |= (uint64_t) row << (8 * (7 - i));
  }
  return m;
}

__attribute__ ((constructor))
static void
gf_tables_init (void)
{
  unsigned int x = 1;

  for (unsigned int i = 0; i < 255; i++) {
    parity_gf_exp[i] = x;
    parity_gf_log[x] = i;
    x <<= 1;
    if (x & 0x100)
      x ^= 0x11d;
  }
  parity_gf_exp[255] = parity_gf_exp[0];

  for (unsigned int c = 0; c < 256; c++)
    for (unsigned int i = 0; i < 16; i++) {
      parity_gf_nibbles[c][i] = parity_gf_mul (c, i);
      parity_gf_nibbles[c][16 + i] = parity_gf_mul (c, i << 4);
    }
  for (unsigned int c = 0; c < 256; c++)
    parity_gf_affine[c] = affine_matrix (c);
}

uint8_t
parity_gf_mul (uint8_t a, uint8_t b)
{
  if (a == 0 || b == 0)
    return 0;
  return parity_gf_exp[(parity_gf_log[a] + parity_gf_log[b]) % 255];
}

uint8_t
parity_gf_inv (uint8_t a)
{
  /* a != 0 by contract: the callers invert g^i or g^i ^ g^j with i != j. */
  return parity_gf_exp[(255 - parity_gf_log[a]) % 255];
}

/* With A = g^a, B = g^b, px = D_a ^ D_b and qx = A D_a ^ B D_b:
 *   D_b = (qx ^ A px) / (A ^ B) = px * A/(A^B) ^ qx * 1/(A^B)
 * and A/(A^B) = 1/(1 ^ g^(b-a)).
 */
void
parity_recov_2data_coeffs (int faila, int failb, uint8_t *pbmul, uint8_t *qmul)
{
  *pbmul = parity_gf_inv (parity_gf_exp[failb - faila] ^ 1);
  *qmul = parity_gf_inv (parity_gf_exp[faila] ^ parity_gf_exp[failb]);
}

uint8_t
parity_recov_datap_coeff (int faila)
{
  return parity_gf_inv (parity_gf_exp[faila]);
}
