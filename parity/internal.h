/* SPDX-License-Identifier: BSD-3-Clause */
/* libparity internals: the implementation registry, CPU features and the
 * GF(2^8) tables shared by every implementation.  Nothing here is public:
 * programs use parity.h.
 *
 * An implementation is a full set of the five operations.  Implementations
 * come in families, one family per instruction set, one source file per
 * family (generic.c, sse2.c, avx2.c, ...) and one header with the family's
 * vector operations (vec_generic.h, vec_sse2.h, ...), which kernels.h turns
 * into the five operations at each unroll.  Names go op-then-isa:
 * implementation avx2x4's gen_syndrome is the static function
 * gen_syndrome_avx2x4, and the family file's table lists every such
 * symbol by its full name, one line per operation, so that searching for
 * a name seen in perf, objdump or raidbench finds its table line.
 *
 * A family lists its unroll variants and says which one it prefers;
 * dispatch.c holds the one table of families, slowest first, and picks the
 * preferred variant of the fastest family whose cpu_ok() says the CPU (and
 * the OS, for wide registers) can run it, once it has passed its self-test
 * (selftest.c).  Adding an instruction set is a vec_*.h, a small .c with
 * its table, one line in dispatch.c's table, its extern below and its
 * convenience library in Makefile.am.
 */

#ifndef PARITY_INTERNAL_H
#define PARITY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a) (sizeof (a) / sizeof ((a)[0]))

struct parity_impl {
  const char *name;
  void (*xor_gen) (void *dest, void **srcs, unsigned int src_cnt, size_t bytes);
  void (*gen_syndrome) (int disks, size_t bytes, void **ptrs);
  void (*xor_syndrome) (int disks, int start, int stop, size_t bytes,
                        void **ptrs);
  void (*recov_2data) (int disks, size_t bytes, int faila, int failb,
                       void **ptrs);
  void (*recov_datap) (int disks, size_t bytes, int faila, void **ptrs);
};

struct parity_family {
  const char *name;             /* also what parity_use() takes for it */
  bool (*cpu_ok) (void);
  const struct parity_impl *impls;
  unsigned int count;           /* ARRAY_SIZE (impls) */
  unsigned int preferred;       /* index into impls */
};

/* One per source file; dispatch.c lists those that were built. */
extern const struct parity_family parity_family_generic;
extern const struct parity_family parity_family_sse2;
extern const struct parity_family parity_family_avx2;
extern const struct parity_family parity_family_avx512;
extern const struct parity_family parity_family_avx2gfni;
extern const struct parity_family parity_family_avx512gfni;
extern const struct parity_family parity_family_neon;
extern const struct parity_family parity_family_sve;
/* Test builds only (libparity_test.la): avx512's, avx2gfni's and
 * avx512gfni's kernels on SIMDe, and an implementation that fails its
 * self-test.
 */
extern const struct parity_family parity_family_simde_avx512;
extern const struct parity_family parity_family_simde_avx2gfni;
extern const struct parity_family parity_family_simde_avx512gfni;
extern const struct parity_family parity_family_test_broken;

/* The implementation in use (dispatch.c): load it once per operation. */
const struct parity_impl *parity_current (void);

/* Run IMPL and generic on the same fixed input (selftest.c): NULL when
 * every result matches, else what went wrong, as a phrase
 * ("its gen_syndrome differs from generic's").
 */
const char *parity_selftest (const struct parity_impl *impl);

/* CPU features (cpu.c).  Each bit means the CPU has the instructions *and*
 * the OS saves the registers they use.
 */
enum {
  PARITY_CPU_SSE2 = 1 << 0,
  PARITY_CPU_SSSE3 = 1 << 1,
  PARITY_CPU_AVX2 = 1 << 2,
  PARITY_CPU_AVX512BW = 1 << 3,  /* with AVX-512F */
  PARITY_CPU_AVX512_SLOW = 1 << 4, /* ZMM use lowers the clock (SKX, ICX) */
  PARITY_CPU_GFNI = 1 << 5,     /* the instructions; the width's bit says
                                   whether the OS saves its registers */
  PARITY_CPU_NEON = 1 << 8,
  PARITY_CPU_SVE = 1 << 9,
};
unsigned int parity_cpu_features (void);

/* GF(2^8), polynomial 0x11d, generator 2 (gf.c). */
extern uint8_t parity_gf_exp[256];     /* g^i; exp[255] = exp[0] = 1 */
extern uint8_t parity_gf_log[256];     /* log_g(x); log[0] unused */
/* [c][0..15] = c * i, [c][16..31] = c * (i << 4). */
extern uint8_t parity_gf_nibbles[256][32];
/* [c] = the 8x8 bit matrix of multiplication by c, as vgf2p8affineqb
 * takes it (gf.c explains the layout).  The two that the GFNI kernels use
 * in their inner loops are also compile-time constants, so that the
 * compiler keeps them in registers (test_parity checks they agree).
 */
extern uint64_t parity_gf_affine[256];
#define PARITY_GF_AFFINE_2 UINT64_C (0x8001828488102040)
#define PARITY_GF_AFFINE_4 UINT64_C (0x408041c2c4881020)
uint8_t parity_gf_mul (uint8_t a, uint8_t b);
uint8_t parity_gf_inv (uint8_t a);

/* The two constants of two-data-disk recovery: with D_a ^ D_b = px and
 * Q-contribution qx, D_b = pbmul * px ^ qmul * qx.
 */
void parity_recov_2data_coeffs (int faila, int failb,
                                uint8_t *pbmul, uint8_t *qmul);
/* D_a = datap_mul * (Q ^ Q_without_a). */
uint8_t parity_recov_datap_coeff (int faila);

#endif /* PARITY_INTERNAL_H */
