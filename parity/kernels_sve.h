/* SPDX-License-Identifier: BSD-3-Clause */
/* The five parity operations for SVE, written once for every vector
 * length and unroll: kernels.h's algorithms in the shape SVE allows.
 *
 * Same as kernels.h: the outer loop walks the buffer U vectors at a time,
 * the inner loop the disks; Q by Horner's rule from the highest data disk
 * down; lost or skipped disks cost Q one doubling each; the same function
 * names and the same op-then-isa symbols (SVE_KERNELS (svex4, 4) defines
 * gen_syndrome_svex4 and the others).  Different, and why (sve.c's essay
 * says why this is not kernels.h itself):
 *
 *   - the U vectors of a step are variables of their own (p0 .. p3), not an
 *     array, and the helpers that update them (HORNER, HORNER_SKIP,
 *     SYNDROME_WITHOUT) are macros on the caller's variables;
 *   - every vector operation takes the step's predicate; the main loop runs
 *     with all lanes, and the tail (one vector at a time, U = 1) with the
 *     bytes left, so a buffer that is a multiple of 64 bytes but not of the
 *     vector length (128- and 256-byte vectors) needs no scalar epilogue;
 *   - xor_syndrome skips the disks below start by doubling, as NEON does
 *     (no MULC_SKIP_MIN): one multiplication by g^start would beat start
 *     doublings from some start on, but nobody has measured where on SVE
 *     hardware, and insn-count.sh cannot say (it counts, it does not time).
 *
 * Before including this file, a source file includes vec_sve.h (or another
 * header with the same operations: v_load, v_store, v_xor, v_zero, v_mul2,
 * v_mulc_init and v_mulc, each with the predicate first).
 */

#ifndef PARITY_KERNELS_SVE_H
#define PARITY_KERNELS_SVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <arm_sve.h>

#include "internal.h"

#define ALWAYS_INLINE static inline __attribute__ ((always_inline))
#define AT(p, off) ((uint8_t *) (p) + (off))

/* The vectors of one unrolled step.  x0 .. x3 are variables of their own,
 * U of them in use: SVE vectors cannot be array members, and an
 * svuint8x4_t tuple, the other way to group them, must live in four
 * consecutive registers, which costs a copy of every vector each time a
 * loop hands its registers on (bench/insn-count.sh: a fifth more
 * instructions per byte in recovery).  EACH_U (S) writes S (k) for
 * k = 0 .. U-1 with a literal k, which S pastes onto a name (p##k).
 */
#define VREGS(x) \
  svuint8_t x##0 = v_zero (), x##1 = x##0, x##2 = x##0, x##3 = x##0
#define EACH_U(S)                          \
  do {                                     \
    S (0);                                 \
    if (U > 1) S (1);                      \
    if (U > 2) { S (2); S (3); }           \
  } while (0)

/* Load and store the k-th vector of a step at byte offset off. */
#define VLOAD(pg, base, off, k) v_load ((pg), AT ((base), (off)) + (k) * svcntb ())
#define VSTORE(pg, base, off, k, v) \
  v_store ((pg), AT ((base), (off)) + (k) * svcntb (), (v))

/* The predicate of one step: all lanes in the main loop, the bytes left
 * before end in the tail (which runs with U = 1).
 */
#define STEP_PRED(tail, off, end)                                            \
  ((tail) ? svwhilelt_b8_u64 ((off), (end)) : svptrue_b8 ())

/* Horner's rule on the caller's registers, as kernels.h's functions of the
 * same names.  They are macros because they update the caller's p0 .. p3
 * and q0 .. q3 (and read U, pg, ptrs and off).
 *
 * HORNER (hi, lo): Horner steps for data disks hi down to lo (inclusive;
 * none if hi < lo), accumulating into p and q.
 */
#define HORNER(hi, lo)                                                       \
  for (int z = (hi); z >= (lo); z--)                                         \
    EACH_U (HORNER_STEP)
#define HORNER_STEP(k)                                                       \
  do {                                                                       \
    svuint8_t x = VLOAD (pg, ptrs[z], off, k);                               \
    p##k = v_xor (pg, p##k, x);                                              \
    q##k = v_xor (pg, v_mul2 (pg, q##k), x);                                 \
  } while (0)

/* A data disk whose contribution is zero still costs Q one doubling. */
#define HORNER_SKIP(n)                                                       \
  for (int z = 0; z < (n); z++)                                              \
    EACH_U (HORNER_SKIP_STEP)
#define HORNER_SKIP_STEP(k) (q##k = v_mul2 (pg, q##k))

/* P and Q (from zero) of the surviving data disks, disks a <= b lost. */
#define SYNDROME_WITHOUT(a, b)                                               \
  do {                                                                       \
    HORNER (disks - 3, (b) + 1);                                             \
    HORNER_SKIP (1);                                                         \
    if ((a) != (b)) {                                                        \
      HORNER ((b) - 1, (a) + 1);                                             \
      HORNER_SKIP (1);                                                       \
    }                                                                        \
    HORNER ((a) - 1, 0);                                                     \
  } while (0)

/* dest ^= srcs[0] ^ ... for [off, end). */
ALWAYS_INLINE void
body_xor_gen (const int U, const bool tail, size_t off, size_t end,
              void *dest, void **srcs, unsigned int src_cnt)
{
  for (; off < end; off += U * svcntb ()) {
    svbool_t pg = STEP_PRED (tail, off, end);
    VREGS (d);

#define S(k) (d##k = VLOAD (pg, dest, off, k))
    EACH_U (S);
#undef S
    for (unsigned int s = 0; s < src_cnt; s++) {
#define S(k) (d##k = v_xor (pg, d##k, VLOAD (pg, srcs[s], off, k)))
      EACH_U (S);
#undef S
    }
#define S(k) VSTORE (pg, dest, off, k, d##k)
    EACH_U (S);
#undef S
  }
}

ALWAYS_INLINE void
body_gen_syndrome (const int U, const bool tail, size_t off, size_t end,
                   int disks, void **ptrs)
{
  const int z0 = disks - 3;

  for (; off < end; off += U * svcntb ()) {
    svbool_t pg = STEP_PRED (tail, off, end);
    VREGS (p);
    VREGS (q);

#define S(k) (q##k = p##k = VLOAD (pg, ptrs[z0], off, k))
    EACH_U (S);
#undef S
    HORNER (z0 - 1, 0);
#define S(k)                                                                 \
    do {                                                                     \
      VSTORE (pg, ptrs[disks - 2], off, k, p##k);                            \
      VSTORE (pg, ptrs[disks - 1], off, k, q##k);                            \
    } while (0)
    EACH_U (S);
#undef S
  }
}

ALWAYS_INLINE void
body_xor_syndrome (const int U, const bool tail, size_t off, size_t end,
                   int disks, int start, int stop, void **ptrs)
{
  for (; off < end; off += U * svcntb ()) {
    svbool_t pg = STEP_PRED (tail, off, end);
    VREGS (p);
    VREGS (q);

#define S(k) (q##k = p##k = VLOAD (pg, ptrs[stop], off, k))
    EACH_U (S);
#undef S
    HORNER (stop - 1, start);
    HORNER_SKIP (start);
    /* Normal stores: md reads P and Q again right away. */
#define S(k)                                                                 \
    do {                                                                     \
      void *pp = ptrs[disks - 2], *qq = ptrs[disks - 1];                     \
      VSTORE (pg, pp, off, k,                                                \
              v_xor (pg, VLOAD (pg, pp, off, k), p##k));                     \
      VSTORE (pg, qq, off, k,                                                \
              v_xor (pg, VLOAD (pg, qq, off, k), q##k));                     \
    } while (0)
    EACH_U (S);
#undef S
  }
}

ALWAYS_INLINE void
body_recov_2data (const int U, const bool tail, size_t off, size_t end,
                  int disks, int faila, int failb, void **ptrs,
                  svuint8_t pb_lo, svuint8_t pb_hi,
                  svuint8_t q_lo, svuint8_t q_hi)
{
  for (; off < end; off += U * svcntb ()) {
    svbool_t pg = STEP_PRED (tail, off, end);
    VREGS (p);
    VREGS (q);

    SYNDROME_WITHOUT (faila, failb);
#define S(k)                                                                 \
    do {                                                                     \
      svuint8_t px = v_xor (pg, VLOAD (pg, ptrs[disks - 2], off, k),         \
                                 p##k);                                      \
      svuint8_t qx = v_xor (pg, VLOAD (pg, ptrs[disks - 1], off, k),         \
                                 q##k);                                      \
      svuint8_t db = v_xor (pg, v_mulc (pg, px, pb_lo, pb_hi),               \
                                 v_mulc (pg, qx, q_lo, q_hi));               \
      VSTORE (pg, ptrs[failb], off, k, db);                                  \
      VSTORE (pg, ptrs[faila], off, k, v_xor (pg, db, px));                  \
    } while (0)
    EACH_U (S);
#undef S
  }
}

ALWAYS_INLINE void
body_recov_datap (const int U, const bool tail, size_t off, size_t end,
                  int disks, int faila, void **ptrs,
                  svuint8_t q_lo, svuint8_t q_hi)
{
  for (; off < end; off += U * svcntb ()) {
    svbool_t pg = STEP_PRED (tail, off, end);
    VREGS (p);
    VREGS (q);

    SYNDROME_WITHOUT (faila, faila);
#define S(k)                                                                 \
    do {                                                                     \
      svuint8_t qx = v_xor (pg, VLOAD (pg, ptrs[disks - 1], off, k),         \
                                 q##k);                                      \
      svuint8_t da = v_mulc (pg, qx, q_lo, q_hi);                            \
      VSTORE (pg, ptrs[faila], off, k, da);                                  \
      VSTORE (pg, ptrs[disks - 2], off, k, v_xor (pg, p##k, da));            \
    } while (0)
    EACH_U (S);
#undef S
  }
}

/* The main part U full vectors at a time, then the rest one (possibly
 * partial) vector at a time.
 */
#define MAIN_END(U, bytes) ((bytes) / ((U) * svcntb ()) * ((U) * svcntb ()))

#define SVE_KERNELS(isa, U)                                                  \
  static void                                                                \
  xor_gen_##isa (void *dest, void **srcs, unsigned int src_cnt,              \
                    size_t bytes)                                            \
  {                                                                          \
    size_t t = MAIN_END (U, bytes);                                          \
    body_xor_gen (U, false, 0, t, dest, srcs, src_cnt);                      \
    body_xor_gen (1, true, t, bytes, dest, srcs, src_cnt);                   \
  }                                                                          \
  static void                                                                \
  gen_syndrome_##isa (int disks, size_t bytes, void **ptrs)                  \
  {                                                                          \
    size_t t = MAIN_END (U, bytes);                                          \
    body_gen_syndrome (U, false, 0, t, disks, ptrs);                         \
    body_gen_syndrome (1, true, t, bytes, disks, ptrs);                      \
  }                                                                          \
  static void                                                                \
  xor_syndrome_##isa (int disks, int start, int stop, size_t bytes,          \
                         void **ptrs)                                        \
  {                                                                          \
    size_t t = MAIN_END (U, bytes);                                          \
    body_xor_syndrome (U, false, 0, t, disks, start, stop, ptrs);            \
    body_xor_syndrome (1, true, t, bytes, disks, start, stop, ptrs);         \
  }                                                                          \
  static void                                                                \
  recov_2data_##isa (int disks, size_t bytes, int faila, int failb,          \
                        void **ptrs)                                         \
  {                                                                          \
    size_t t = MAIN_END (U, bytes);                                          \
    svuint8_t pb_lo, pb_hi, q_lo, q_hi;                                      \
    uint8_t pb, qm;                                                          \
    parity_recov_2data_coeffs (faila, failb, &pb, &qm);                      \
    v_mulc_init (pb, &pb_lo, &pb_hi);                                        \
    v_mulc_init (qm, &q_lo, &q_hi);                                          \
    body_recov_2data (U, false, 0, t, disks, faila, failb, ptrs,             \
                      pb_lo, pb_hi, q_lo, q_hi);                             \
    body_recov_2data (1, true, t, bytes, disks, faila, failb, ptrs,          \
                      pb_lo, pb_hi, q_lo, q_hi);                             \
  }                                                                          \
  static void                                                                \
  recov_datap_##isa (int disks, size_t bytes, int faila, void **ptrs)        \
  {                                                                          \
    size_t t = MAIN_END (U, bytes);                                          \
    svuint8_t q_lo, q_hi;                                                    \
    v_mulc_init (parity_recov_datap_coeff (faila), &q_lo, &q_hi);            \
    body_recov_datap (U, false, 0, t, disks, faila, ptrs, q_lo, q_hi);       \
    body_recov_datap (1, true, t, bytes, disks, faila, ptrs, q_lo, q_hi);    \
  }

#endif /* PARITY_KERNELS_SVE_H */
