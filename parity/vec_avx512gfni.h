/* SPDX-License-Identifier: BSD-3-Clause */
/* The AVX-512 + GFNI vector operations for kernels.h: vec_avx512.h's
 * registers (64-byte vectors, vpternlogq for v_xor3) with GF(2^8)
 * arithmetic by vgf2p8affineqb.
 *
 * One instruction multiplies by any constant.  vgf2p8affineqb multiplies
 * every byte of a vector by an 8x8 bit matrix, and multiplication by a
 * constant c in GF(2^8) is such a matrix whatever the polynomial (gf.c
 * builds parity_gf_affine[c] and explains the layout).  So:
 *   v_mul2     one vgf2p8affineqb with the matrix of 2, a compile-time
 *              constant the compiler broadcasts once into a register;
 *   v_mulc     one vgf2p8affineqb with the matrix of c, broadcast from
 *              parity_gf_affine[c] by v_mulc_init: recov_2data's two
 *              multiplications, recov_datap's one and xor_syndrome's skip
 *              by g^start each cost one instruction, where the nibble
 *              tables of vec_avx512.h take six (two vpandq, vpsrlw, two
 *              vpshufb, vpxorq);
 *   MULC_SKIP_MIN 2: from start = 2 on, xor_syndrome multiplies by g^start
 *              once instead of doubling start times (for start = 1 both
 *              are one instruction, and v_mul2 needs no set-up).
 * vgf2p8mulb, GFNI's multiply, is no use here: it reduces by AES's
 * polynomial 0x11b, not RAID-6's 0x11d.
 *
 * Two disks per Horner step (v_horner2, see kernels.h):
 *   q' = q g^2 ^ x1 g ^ x0 = vpternlogq (affine (q, M4), affine (x1, M2), x0)
 *   p' = vpternlogq (p, x1, x0)
 * Per 64 bytes of each data disk that is 1 load and 2 vector operations
 * (one vgf2p8affineqb, one vpternlogq), against 5 for vec_avx512.h's
 * doubling (vpmovb2m, vpaddb, vmovdqu8{z}, vpternlogq, vpxorq) and 3 for
 * ISA-L 2.32's pq_gen_avx512_gfni (vgf2p8affineqb and two vpxorq per
 * disk, one disk per step).  On cores that run two 512-bit vector
 * operations per cycle that is one cycle per 64 bytes per disk, and the
 * loads (one per cycle of the two or three a core can issue) are no
 * longer far behind: out of L1 it is the cache, not the arithmetic, that
 * sets the pace.  Pairing also halves the dependency chain through Q: one
 * vgf2p8affineqb latency (3 to 5 cycles, by core) and one vpternlogq per
 * two disks.  avx512gfnix4 has 16 vector operations per pair of disks, 8
 * cycles at two per cycle, which covers that chain; x2 has 4 cycles of
 * work against up to 6 of latency and leans on out-of-order overlap of
 * successive buffer positions.  The chain is not what limits a stripe
 * larger than L1, though: from about 12 disks of 4 KiB the loads come
 * from L2, and there the number of lines each step has in flight per disk
 * counts.  x8 (16 accumulators, 2 matrices and the data of a pair: 24 of
 * the 32 ZMM registers, no spills) reads 512 bytes of each disk per step
 * and was measured 1.2 to 1.5 times x4 at 16 and 24 disks on Zen 4, so
 * it is preferred.
 *
 * One header, two builds, as vec_avx512.h: with -mavx512f -mavx512bw
 * -mgfni the real instructions (avx512gfni.c); with PARITY_VEC_SIMDE and
 * baseline flags SIMDe's portable C (simde_avx512gfni.c, test builds
 * only), which is how machines without GFNI test these kernels.
 */

#ifndef PARITY_VEC_AVX512GFNI_H
#define PARITY_VEC_AVX512GFNI_H

#define PARITY_VEC_OWN_GF
#include "vec_avx512.h"
#ifdef PARITY_VEC_SIMDE
#include <simde/x86/gfni.h>
#endif

/* x times the matrix m, byte by byte (affine with a zero constant). */
static inline vec_t
v_affine (vec_t x, vec_t m)
{
  return _mm512_gf2p8affine_epi64_epi8 (x, m, 0);
}

static inline vec_t
v_matrix (uint64_t m)
{
  return _mm512_set1_epi64 ((long long) m);
}

#include "vec_gfni.h"

/* xor_syndrome stays at x4 in avx512gfnix8: md's read-modify-write reads
 * one data disk, P and Q, and stores P and Q, so it is bound by stores
 * (Zen 4 stores 32 bytes a cycle), not by L2, and x8's longer bursts of
 * stores were measured slower (rmw at 8 and 24 disks: 0.91 to 0.96 times
 * avx512x4, against 1.01 to 1.11 for x4).
 */
#define XOR_SYNDROME_U_MAX 4

/* And gen_syndrome of a stripe that fits a 32 KiB L1 (up to 8 disks of
 * 4 KiB) stays at x4 too: there P and Q's stores, not L2, set the pace.
 * x8 was measured 0.74 to 0.89 times x4 at 4, 5 and 6 disks, and at 8
 * disks 1.05 times x4 on a quiet machine but 0.77 to 0.80 with the other
 * core busy, where x4 held its ratio to ISA-L.
 */
#define GEN_SMALL_U 4
#define GEN_SMALL_BYTES (32 * 1024)

/* GCC 12 otherwise loads each data vector of a pair up to twice: it
 * folds x0 into both vpternlogq as a memory operand and reloads x1 after
 * using it, which doubles the loads per byte, the resource GFNI's cheap
 * arithmetic leaves closest to the limit (vec_avx512gfni.h).  An empty
 * asm that may change x in a vector register makes it load x once and
 * keep it.  Not in the SIMDe builds, whose vectors need not fit one.
 */
#ifndef PARITY_VEC_SIMDE
#define v_keep(x) __asm__ ("" : "+v" (x))
#endif

#endif /* PARITY_VEC_AVX512GFNI_H */
