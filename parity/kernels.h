/* SPDX-License-Identifier: BSD-3-Clause */
/* The five parity operations written once, for any vector type.
 *
 * Every implementation (generic 64-bit integers, SSE2, AVX2, ...) is this
 * one body instantiated with its own vector type and an unroll factor U, so
 * the algorithms exist in one place and an instruction set only has to say
 * how to load, store, XOR and multiply by 2 (and by a constant) in GF(2^8).
 *
 * The vector operations of a family live in one header, vec_<family>.h,
 * and nowhere else.  Before including this file, a source file includes
 * that header, which defines:
 *
 *   vec_t                        the vector type, VEC_BYTES bytes wide
 *   vec_t v_load (const void *p) load from any address (inputs need no
 *                                alignment, parity.h)
 *   void  v_store (void *p, vec_t x)   aligned store
 *   vec_t v_xor (vec_t a, vec_t b)
 *   vec_t v_zero (void)
 *   vec_t v_mul2 (vec_t x)       every byte times g = 2
 *   struct v_mulc                whatever multiplying by a constant needs
 *   void  v_mulc_init (struct v_mulc *m, uint8_t c)
 *   vec_t v_mulc (vec_t x, const struct v_mulc *m)   every byte times c
 *
 * and optionally v_xor3 (three-input XOR in one instruction),
 * v_store_pq (how xor_syndrome stores P and Q; the benchmark redefines it
 * as a non-temporal store to show why md must not use one),
 * MULC_SKIP_MIN (from how many skipped disks one v_mulc by g^start is
 * cheaper than start doublings in xor_syndrome; default: never) and
 * v_horner2 (two steps of Horner's rule at once, see below; default: none)
 * and v_keep (x) (make the compiler hold x in a register from here on,
 * see vec_avx512gfni.h; default: nothing), XOR_SYNDROME_U_MAX (the
 * largest unroll xor_syndrome uses, whatever U; default: no limit) and
 * GEN_SMALL_U with GEN_SMALL_BYTES (gen_syndrome of a stripe of at most
 * GEN_SMALL_BYTES, disks x bytes, uses unroll GEN_SMALL_U when U is
 * larger; default: never).
 *
 * The first five are the register file, the last four the field: a family
 * that keeps a width's registers and brings its own GF(2^8) arithmetic
 * (GFNI's vgf2p8affineqb multiplies by any constant, 2 included, with one
 * 8x8 bit matrix) defines PARITY_VEC_OWN_GF, includes that width's header
 * for the first five, and defines v_mul2, struct v_mulc, v_mulc_init,
 * v_mulc and MULC_SKIP_MIN itself; nothing here changes.
 *
 * Then PARITY_KERNELS (isa, U) defines the five operations as static
 * functions named op-then-isa: xor_gen_<isa>, gen_syndrome_<isa>,
 * xor_syndrome_<isa>, recov_2data_<isa> and recov_datap_<isa>, where <isa>
 * is the implementation's name (avx2x4: family avx2, unroll 4).  The family
 * file lists them by those full names in its table of struct parity_impl,
 * one line per operation, so that a symbol seen in perf or objdump is found
 * by searching for it.
 *
 * Shape of every loop: the outer loop walks the buffers U vectors at a time
 * and keeps U vectors of each running sum in registers; the inner loop walks
 * the disks.  Bytes left over after the last full U-wide step (bytes is a
 * multiple of 64, which U * VEC_BYTES may exceed) are done one vector at a
 * time by the same body with U = 1.  Q is evaluated by Horner's rule from
 * the highest data disk down, so each disk costs one v_mul2 and one XOR:
 *   Q = ((D_{n-1} g ^ D_{n-2}) g ^ ...) g ^ D_0.
 *
 * Two disks per step.  Where multiplying by g^2 costs no more than by g
 * (GFNI: one vgf2p8affineqb for any constant), a family defines
 *   vec_t v_horner2 (vec_t q, vec_t x1, vec_t x0)  = q g^2 ^ x1 g ^ x0
 * and horner() walks the disks in pairs: P takes both with one v_xor3, and
 * Q's multiplications by g^2 (of q) and by g (of x1) are independent, so
 * the chain that carries Q from disk to disk has one multiplication and
 * one XOR per two disks instead of per disk.  A family without v_horner2
 * keeps the loop of one disk per step, instruction for instruction.
 *
 * Recovery by direct sums.  Horner's rule needs every data disk in order,
 * so a lost disk still costs Q a doubling (horner_skip), and the chain
 * through Q runs the whole stripe: a multiplication's latency per disk or
 * pair of disks, plus the skips.  Where a product by any constant costs one
 * instruction (GFNI), a family defines
 *   vec_t v_gmatrix (uint8_t c)        what v_mulm needs to multiply by c
 *   vec_t v_mulm (vec_t x, vec_t m)    x times that constant
 * and the recoveries sum the survivors directly instead:
 *   Q' = xor over surviving data disks z of D_z g^z.
 * Each survivor costs one product, as in Horner's rule, but the products are
 * independent and only XORs (two survivors per v_xor3) carry the sum from
 * disk to disk, and lost disks cost nothing.  The survivors and their
 * coefficients g^z are listed once per call (struct survivors), so the
 * loop walks one list in pairs whatever the positions of the lost disks.
 * The price is the constant per survivor (a broadcast load per U vectors),
 * which is why gen_syndrome, whose chain U vectors wide already hides,
 * keeps Horner's rule.
 *
 * SVE cannot use this file (its vectors cannot be array or struct members);
 * kernels_sve.h is the same algorithms in the shape SVE allows, and sve.c
 * says why.
 */

#ifndef PARITY_KERNELS_H
#define PARITY_KERNELS_H

#include <stdint.h>

#include "internal.h"

#ifndef v_xor3
#define v_xor3(a, b, c) v_xor (v_xor ((a), (b)), (c))
#endif
#ifndef v_store_pq
#define v_store_pq v_store
#endif
#ifndef MULC_SKIP_MIN
#define MULC_SKIP_MIN 256             /* never: start <= 253 */
#endif
#ifndef v_keep
#define v_keep(x) ((void) (x))
#endif
#ifndef GEN_SMALL_BYTES
#define GEN_SMALL_BYTES 0
#define GEN_SMALL_U UNROLL_MAX
#endif
#ifndef XOR_SYNDROME_U_MAX
#define XOR_SYNDROME_U_MAX UNROLL_MAX
#endif

#define ALWAYS_INLINE static inline __attribute__ ((always_inline))
#define AT(p, off) ((uint8_t *) (p) + (off))
#define FOR_U for (int u = 0; u < U; u++)
/* Arrays are sized for the largest unroll so that they are not VLAs; after
 * inlining with a constant U the unused tail disappears.
 */
#define UNROLL_MAX 8

/* dest ^= srcs[0] ^ ... for [off, end). */
ALWAYS_INLINE void
body_xor_gen (const int U, size_t off, size_t end,
              void *dest, void **srcs, unsigned int src_cnt)
{
  for (; off + U * VEC_BYTES <= end; off += U * VEC_BYTES) {
    vec_t d[UNROLL_MAX];
    unsigned int s = 0;

#pragma GCC unroll 16
    FOR_U d[u] = v_load (AT (dest, off + u * VEC_BYTES));
    for (; s + 2 <= src_cnt; s += 2) {
      const uint8_t *a = AT (srcs[s], off), *b = AT (srcs[s + 1], off);
#pragma GCC unroll 16
      FOR_U d[u] = v_xor3 (d[u], v_load (a + u * VEC_BYTES),
                           v_load (b + u * VEC_BYTES));
    }
    if (s < src_cnt) {
      const uint8_t *a = AT (srcs[s], off);
#pragma GCC unroll 16
      FOR_U d[u] = v_xor (d[u], v_load (a + u * VEC_BYTES));
    }
#pragma GCC unroll 16
    FOR_U v_store (AT (dest, off + u * VEC_BYTES), d[u]);
  }
}

/* Horner steps for data disks hi down to lo (inclusive; none if hi < lo),
 * accumulating into p and q.
 */
ALWAYS_INLINE void
horner (const int U, vec_t *p, vec_t *q, void **ptrs, size_t off,
        int hi, int lo)
{
  int z = hi;

#ifdef v_horner2
  for (; z - 1 >= lo; z -= 2) {
    const uint8_t *d1 = AT (ptrs[z], off), *d0 = AT (ptrs[z - 1], off);
#pragma GCC unroll 16
    FOR_U {
      vec_t x1 = v_load (d1 + u * VEC_BYTES), x0 = v_load (d0 + u * VEC_BYTES);

      v_keep (x1);
      v_keep (x0);
      p[u] = v_xor3 (p[u], x1, x0);
      q[u] = v_horner2 (q[u], x1, x0);
    }
  }
#endif
  for (; z >= lo; z--) {
    const uint8_t *d = AT (ptrs[z], off);
#pragma GCC unroll 16
    FOR_U {
      vec_t x = v_load (d + u * VEC_BYTES);
      p[u] = v_xor (p[u], x);
      q[u] = v_xor (v_mul2 (q[u]), x);
    }
  }
}

/* A data disk whose contribution is zero (lost, or outside the range) still
 * costs Q one step of Horner's rule.
 */
ALWAYS_INLINE void
horner_skip (const int U, vec_t *q, int n)
{
  for (int z = 0; z < n; z++) {
#pragma GCC unroll 16
    FOR_U q[u] = v_mul2 (q[u]);
  }
}

ALWAYS_INLINE void
load_u (const int U, vec_t *x, const void *base, size_t off)
{
#pragma GCC unroll 16
  FOR_U x[u] = v_load (AT (base, off + u * VEC_BYTES));
}

/* The pointers that do not change with the disk are read from ptrs[]
 * once: vector stores may alias anything, so the compiler would otherwise
 * reload them after every store.
 */
ALWAYS_INLINE void
body_gen_syndrome (const int U, size_t off, size_t end, int disks, void **ptrs)
{
  const int z0 = disks - 3;
  uint8_t *const top = ptrs[z0], *const pp = ptrs[disks - 2];
  uint8_t *const qq = ptrs[disks - 1];

  for (; off + U * VEC_BYTES <= end; off += U * VEC_BYTES) {
    vec_t p[UNROLL_MAX], q[UNROLL_MAX];

    load_u (U, p, top, off);
#pragma GCC unroll 16
    FOR_U q[u] = p[u];
    horner (U, p, q, ptrs, off, z0 - 1, 0);
#pragma GCC unroll 16
    FOR_U {
      v_store (pp + off + u * VEC_BYTES, p[u]);
      v_store (qq + off + u * VEC_BYTES, q[u]);
    }
  }
}

/* The disks below start contribute nothing but their powers of g: with
 * gstart (= g^start) that is one multiplication, else start doublings.
 */
ALWAYS_INLINE void
body_xor_syndrome (const int U, size_t off, size_t end, int disks,
                   int start, int stop, void **ptrs,
                   const struct v_mulc *gstart)
{
  uint8_t *const top = ptrs[stop], *const pp = ptrs[disks - 2];
  uint8_t *const qq = ptrs[disks - 1];

  for (; off + U * VEC_BYTES <= end; off += U * VEC_BYTES) {
    vec_t p[UNROLL_MAX], q[UNROLL_MAX], x;

    load_u (U, p, top, off);
#pragma GCC unroll 16
    FOR_U q[u] = p[u];
    horner (U, p, q, ptrs, off, stop - 1, start);
    if (gstart) {
#pragma GCC unroll 16
      FOR_U q[u] = v_mulc (q[u], gstart);
    }
    else
      horner_skip (U, q, start);
#pragma GCC unroll 16
    FOR_U {
      uint8_t *pu = pp + off + u * VEC_BYTES, *qu = qq + off + u * VEC_BYTES;

      x = v_xor (v_load (pu), p[u]);
      v_store_pq (pu, x);
      x = v_xor (v_load (qu), q[u]);
      v_store_pq (qu, x);
    }
  }
}

/* P and Q of the surviving data disks, with disks a and b (a <= b, and
 * possibly a == b) counted as zero.
 */
ALWAYS_INLINE void
syndrome_without (const int U, vec_t *p, vec_t *q, void **ptrs, size_t off,
                  int disks, int a, int b)
{
#pragma GCC unroll 16
  FOR_U p[u] = q[u] = v_zero ();
  horner (U, p, q, ptrs, off, disks - 3, b + 1);
  horner_skip (U, q, 1);
  if (a != b) {
    horner (U, p, q, ptrs, off, b - 1, a + 1);
    horner_skip (U, q, 1);
  }
  horner (U, p, q, ptrs, off, a - 1, 0);
}

/* The surviving data disks of a recovery and their coefficients g^z. */
struct survivors {
  int n;
  const uint8_t *src[256];
  uint8_t coef[256];
};

#ifdef v_mulm
static inline void
survivors_init (struct survivors *sv, int disks, int a, int b, void **ptrs)
{
  sv->n = 0;
  for (int z = 0; z < disks - 2; z++)
    if (z != a && z != b) {
      sv->src[sv->n] = ptrs[z];
      sv->coef[sv->n++] = parity_gf_exp[z];
    }
}

/* P and Q of the survivors by direct sums (see the top of the file). */
ALWAYS_INLINE void
syndrome_direct (const int U, vec_t *p, vec_t *q,
                 const struct survivors *sv, size_t off)
{
  int i = 0;

#pragma GCC unroll 16
  FOR_U p[u] = q[u] = v_zero ();
  for (; i + 2 <= sv->n; i += 2) {
    const uint8_t *d1 = sv->src[i] + off, *d0 = sv->src[i + 1] + off;
    vec_t m1 = v_gmatrix (sv->coef[i]), m0 = v_gmatrix (sv->coef[i + 1]);
#pragma GCC unroll 16
    FOR_U {
      vec_t x1 = v_load (d1 + u * VEC_BYTES), x0 = v_load (d0 + u * VEC_BYTES);

      v_keep (x1);
      v_keep (x0);
      p[u] = v_xor3 (p[u], x1, x0);
      q[u] = v_xor3 (q[u], v_mulm (x1, m1), v_mulm (x0, m0));
    }
  }
  if (i < sv->n) {
    const uint8_t *d = sv->src[i] + off;
    vec_t m = v_gmatrix (sv->coef[i]);
#pragma GCC unroll 16
    FOR_U {
      vec_t x = v_load (d + u * VEC_BYTES);

      p[u] = v_xor (p[u], x);
      q[u] = v_xor (q[u], v_mulm (x, m));
    }
  }
}
#define SYNDROME_WITHOUT(U, p, q, ptrs, off, disks, a, b, sv) \
  syndrome_direct ((U), (p), (q), (sv), (off))
#define SURVIVORS_INIT(sv, disks, a, b, ptrs) \
  survivors_init ((sv), (disks), (a), (b), (ptrs))
#else
#define SYNDROME_WITHOUT(U, p, q, ptrs, off, disks, a, b, sv) \
  syndrome_without ((U), (p), (q), (ptrs), (off), (disks), (a), (b))
#define SURVIVORS_INIT(sv, disks, a, b, ptrs) ((void) (sv))
#endif

ALWAYS_INLINE void
body_recov_2data (const int U, size_t off, size_t end, int disks,
                  int faila, int failb, void **ptrs,
                  const struct v_mulc *pbmul, const struct v_mulc *qmul,
                  const struct survivors *sv)
{
  for (; off + U * VEC_BYTES <= end; off += U * VEC_BYTES) {
    vec_t p[UNROLL_MAX], q[UNROLL_MAX];

    SYNDROME_WITHOUT (U, p, q, ptrs, off, disks, faila, failb, sv);
#pragma GCC unroll 16
    FOR_U {
      size_t o = off + u * VEC_BYTES;
      vec_t px = v_xor (v_load (AT (ptrs[disks - 2], o)), p[u]);
      vec_t qx = v_xor (v_load (AT (ptrs[disks - 1], o)), q[u]);
      vec_t db = v_xor (v_mulc (px, pbmul), v_mulc (qx, qmul));

      v_store (AT (ptrs[failb], o), db);
      v_store (AT (ptrs[faila], o), v_xor (db, px));
    }
  }
}

ALWAYS_INLINE void
body_recov_datap (const int U, size_t off, size_t end, int disks, int faila,
                  void **ptrs, const struct v_mulc *qmul,
                  const struct survivors *sv)
{
  for (; off + U * VEC_BYTES <= end; off += U * VEC_BYTES) {
    vec_t p[UNROLL_MAX], q[UNROLL_MAX];

    SYNDROME_WITHOUT (U, p, q, ptrs, off, disks, faila, faila, sv);
#pragma GCC unroll 16
    FOR_U {
      size_t o = off + u * VEC_BYTES;
      vec_t qx = v_xor (v_load (AT (ptrs[disks - 1], o)), q[u]);
      vec_t da = v_mulc (qx, qmul);

      v_store (AT (ptrs[faila], o), da);
      v_store (AT (ptrs[disks - 2], o), v_xor (p[u], da));
    }
  }
}

/* The main part at unroll U, then the tail one vector at a time. */
#define TAIL_START(U, bytes) ((bytes) / ((U) * VEC_BYTES) * ((U) * VEC_BYTES))

#define PARITY_KERNELS(isa, U)                                               \
  static void                                                                \
  xor_gen_##isa (void *dest, void **srcs, unsigned int src_cnt,              \
                 size_t bytes)                                               \
  {                                                                          \
    size_t t = TAIL_START (U, bytes);                                        \
    body_xor_gen (U, 0, t, dest, srcs, src_cnt);                             \
    body_xor_gen (1, t, bytes, dest, srcs, src_cnt);                         \
  }                                                                          \
  static void                                                                \
  gen_syndrome_##isa (int disks, size_t bytes, void **ptrs)                  \
  {                                                                          \
    size_t t;                                                                \
    if ((U) > GEN_SMALL_U && (size_t) disks * bytes <= GEN_SMALL_BYTES) {    \
      const int su = (U) > GEN_SMALL_U ? GEN_SMALL_U : (U);                  \
      t = TAIL_START (su, bytes);                                            \
      body_gen_syndrome (su, 0, t, disks, ptrs);                             \
    }                                                                        \
    else {                                                                   \
      t = TAIL_START (U, bytes);                                             \
      body_gen_syndrome (U, 0, t, disks, ptrs);                              \
    }                                                                        \
    body_gen_syndrome (1, t, bytes, disks, ptrs);                            \
  }                                                                          \
  static void                                                                \
  xor_syndrome_##isa (int disks, int start, int stop, size_t bytes,          \
                      void **ptrs)                                           \
  {                                                                          \
    const int xu = (U) < XOR_SYNDROME_U_MAX ? (U) : XOR_SYNDROME_U_MAX;      \
    size_t t = TAIL_START (xu, bytes);                                       \
    struct v_mulc g, *gs = NULL;                                             \
    if (MULC_SKIP_MIN < 256 && start >= MULC_SKIP_MIN) {                     \
      v_mulc_init (&g, parity_gf_exp[start]);                                \
      gs = &g;                                                               \
    }                                                                        \
    body_xor_syndrome (xu, 0, t, disks, start, stop, ptrs, gs);              \
    body_xor_syndrome (1, t, bytes, disks, start, stop, ptrs, gs);           \
  }                                                                          \
  static void                                                                \
  recov_2data_##isa (int disks, size_t bytes, int faila, int failb,          \
                     void **ptrs)                                            \
  {                                                                          \
    size_t t = TAIL_START (U, bytes);                                        \
    struct v_mulc pbmul, qmul;                                               \
    struct survivors sv;                                                     \
    uint8_t pb, qm;                                                          \
    parity_recov_2data_coeffs (faila, failb, &pb, &qm);                      \
    v_mulc_init (&pbmul, pb);                                                \
    v_mulc_init (&qmul, qm);                                                 \
    SURVIVORS_INIT (&sv, disks, faila, failb, ptrs);                         \
    body_recov_2data (U, 0, t, disks, faila, failb, ptrs, &pbmul, &qmul,     \
                      &sv);                                                  \
    body_recov_2data (1, t, bytes, disks, faila, failb, ptrs, &pbmul, &qmul, \
                      &sv);                                                  \
  }                                                                          \
  static void                                                                \
  recov_datap_##isa (int disks, size_t bytes, int faila, void **ptrs)        \
  {                                                                          \
    size_t t = TAIL_START (U, bytes);                                        \
    struct v_mulc qmul;                                                      \
    struct survivors sv;                                                     \
    v_mulc_init (&qmul, parity_recov_datap_coeff (faila));                   \
    SURVIVORS_INIT (&sv, disks, faila, faila, ptrs);                         \
    body_recov_datap (U, 0, t, disks, faila, ptrs, &qmul, &sv);              \
    body_recov_datap (1, t, bytes, disks, faila, ptrs, &qmul, &sv);          \
  }

#endif /* PARITY_KERNELS_H */
