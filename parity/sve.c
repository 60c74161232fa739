/* SVE implementation for aarch64: vector-length agnostic.
 *
 * One binary runs at every SVE vector length, 16 to 256 bytes: the code asks
 * svcntb() for the length and never assumes one.  Buffers are multiples of
 * 64 bytes, which a 128- or 256-byte vector does not divide, so the last
 * vectors of a buffer are done under a whilelt predicate: inactive lanes are
 * loaded as zero and never stored.  The wide main loop runs with an
 * all-true predicate.
 *
 * Why this file does not instantiate kernels.h.  The template keeps the U
 * vectors of an unrolled step in arrays (vec_t p[UNROLL_MAX]); SVE vectors
 * are sizeless and cannot be array or struct members.  This file keeps the
 * same algorithms with the same names and shapes (the outer loop over the
 * buffer, Horner's rule over the disks from the highest down, the skip
 * steps for lost disks; see kernels.h for why), but an unrolled step holds
 * its vectors in variables of their own (p0 .. p3), and EACH_U() writes the
 * statement for each of them.  U is a constant after inlining, so the
 * unused variables and the branches that test U disappear: one body,
 * instantiated at U = 1, 2, 4.
 *
 * Doubling in GF(2^8) is three instructions where NEON needs four: cmplt
 * writes a predicate of the bytes whose top bit is set, add doubles every
 * byte, and eor under that predicate folds in 0x1d.  With the XOR of the
 * next data vector, Horner's rule costs four instructions per vector of Q.
 *
 * Multiplication by a constant c (recovery) uses nibble tables, as NEON
 * does with tbl: the 16-entry tables fill the first 16 bytes of a vector
 * (every SVE vector has at least 16), so an index 0..15 finds its entry
 * at any vector length.
 *
 * There is no three-input XOR in SVE (EOR3 is SVE2), so xor_gen uses EORs.
 */

#include <config.h>

#include <arm_sve.h>

#include "internal.h"

#define ALWAYS_INLINE static inline __attribute__ ((always_inline))
#define AT(p, off) ((uint8_t *) (p) + (off))

/* The vectors of one unrolled step.  x0 .. x3 are variables of their own,
 * U of them in use: SVE vectors cannot be array members, and an
 * svuint8x4_t tuple, the other way to group them, must live in four
 * consecutive registers, which costs a copy of every vector each time a
 * loop hands its registers on (bench/insn-count.sh: a fifth more
 * instructions per byte in recovery).  EACH_U (S) writes S (k) for k = 0 .. U-1 with a literal k,
 * which S pastes onto a name (p##k).
 */
#define VREGS(x) \
  svuint8_t x##0 = svdup_n_u8 (0), x##1 = x##0, x##2 = x##0, x##3 = x##0
#define EACH_U(S)                          \
  do {                                     \
    S (0);                                 \
    if (U > 1) S (1);                      \
    if (U > 2) { S (2); S (3); }           \
  } while (0)

/* Load and store the k-th vector of a step at byte offset off. */
#define VLOAD(pg, base, off, k) svld1_u8 ((pg), AT ((base), (off)) + (k) * svcntb ())
#define VSTORE(pg, base, off, k, v) svst1_u8 ((pg), AT ((base), (off)) + (k) * svcntb (), (v))

static inline svuint8_t
v_mul2 (svbool_t pg, svuint8_t x)
{
  svbool_t top = svcmplt_n_s8 (pg, svreinterpret_s8_u8 (x), 0);

  return sveor_n_u8_m (top, svadd_u8_x (pg, x, x), 0x1d);
}

/* Nibble tables for multiplication by c, in the first 16 bytes. */
static void
mulc_init (uint8_t c, svuint8_t *lo_ret, svuint8_t *hi_ret)
{
  uint8_t lo[16], hi[16];
  svbool_t first16 = svwhilelt_b8_u32 (0, 16);

  for (unsigned int i = 0; i < 16; i++) {
    lo[i] = parity_gf_mul (c, i);
    hi[i] = parity_gf_mul (c, i << 4);
  }
  *lo_ret = svld1_u8 (first16, lo);
  *hi_ret = svld1_u8 (first16, hi);
}

static inline svuint8_t
v_mulc (svbool_t pg, svuint8_t x, svuint8_t lo, svuint8_t hi)
{
  return sveor_u8_x (pg, svtbl_u8 (lo, svand_n_u8_x (pg, x, 0x0f)),
                     svtbl_u8 (hi, svlsr_n_u8_x (pg, x, 4)));
}

/* The predicate of one step: all lanes in the main loop, the bytes left
 * before end in the tail (which runs with U = 1).
 */
#define STEP_PRED(tail, off, end) \
  ((tail) ? svwhilelt_b8_u64 ((off), (end)) : svptrue_b8 ())

/* Horner's rule on the caller's registers, as kernels.h's functions of the
 * same names.  They are macros because they update the caller's p0 .. p3
 * and q0 .. q3 (and read U, pg, ptrs and off).
 *
 * HORNER (hi, lo): Horner steps for data disks hi down to lo (inclusive;
 * none if hi < lo), accumulating into p and q.
 */
#define HORNER(hi, lo)                                                 \
  for (int z = (hi); z >= (lo); z--)                                   \
    EACH_U (HORNER_STEP)
#define HORNER_STEP(k)                                                 \
  do {                                                                 \
    svuint8_t x = VLOAD (pg, ptrs[z], off, k);                         \
    p##k = sveor_u8_x (pg, p##k, x);                                   \
    q##k = sveor_u8_x (pg, v_mul2 (pg, q##k), x);                      \
  } while (0)

/* A data disk whose contribution is zero still costs Q one doubling. */
#define HORNER_SKIP(n)                                                 \
  for (int z = 0; z < (n); z++)                                        \
    EACH_U (HORNER_SKIP_STEP)
#define HORNER_SKIP_STEP(k) (q##k = v_mul2 (pg, q##k))

/* P and Q (from zero) of the surviving data disks, disks a <= b lost. */
#define SYNDROME_WITHOUT(a, b)                                         \
  do {                                                                 \
    HORNER (disks - 3, (b) + 1);                                       \
    HORNER_SKIP (1);                                                   \
    if ((a) != (b)) {                                                  \
      HORNER ((b) - 1, (a) + 1);                                       \
      HORNER_SKIP (1);                                                 \
    }                                                                  \
    HORNER ((a) - 1, 0);                                               \
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
#define S(k) (d##k = sveor_u8_x (pg, d##k, VLOAD (pg, srcs[s], off, k)))
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
#define S(k)                                                  \
    do {                                                      \
      VSTORE (pg, ptrs[disks - 2], off, k, p##k);             \
      VSTORE (pg, ptrs[disks - 1], off, k, q##k);             \
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
#define S(k)                                                            \
    do {                                                                \
      void *pp = ptrs[disks - 2], *qq = ptrs[disks - 1];                \
      VSTORE (pg, pp, off, k,                                           \
              sveor_u8_x (pg, VLOAD (pg, pp, off, k), p##k));           \
      VSTORE (pg, qq, off, k,                                           \
              sveor_u8_x (pg, VLOAD (pg, qq, off, k), q##k));           \
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
#define S(k)                                                                \
    do {                                                                    \
      svuint8_t px = sveor_u8_x (pg, VLOAD (pg, ptrs[disks - 2], off, k),   \
                                 p##k);                                     \
      svuint8_t qx = sveor_u8_x (pg, VLOAD (pg, ptrs[disks - 1], off, k),   \
                                 q##k);                                     \
      svuint8_t db = sveor_u8_x (pg, v_mulc (pg, px, pb_lo, pb_hi),         \
                                 v_mulc (pg, qx, q_lo, q_hi));              \
      VSTORE (pg, ptrs[failb], off, k, db);                                 \
      VSTORE (pg, ptrs[faila], off, k, sveor_u8_x (pg, db, px));            \
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
#define S(k)                                                                \
    do {                                                                    \
      svuint8_t qx = sveor_u8_x (pg, VLOAD (pg, ptrs[disks - 1], off, k),   \
                                 q##k);                                     \
      svuint8_t da = v_mulc (pg, qx, q_lo, q_hi);                           \
      VSTORE (pg, ptrs[faila], off, k, da);                                 \
      VSTORE (pg, ptrs[disks - 2], off, k, sveor_u8_x (pg, p##k, da));      \
    } while (0)
    EACH_U (S);
#undef S
  }
}

/* The main part U full vectors at a time, then the rest one (possibly
 * partial) vector at a time.
 */
#define MAIN_END(U, bytes) ((bytes) / ((U) * svcntb ()) * ((U) * svcntb ()))

#define SVE_KERNELS(prefix, U)                                               \
  static void                                                                \
  prefix##_xor_gen (void *dest, void **srcs, unsigned int src_cnt,           \
                    size_t bytes)                                            \
  {                                                                          \
    size_t t = MAIN_END (U, bytes);                                          \
    body_xor_gen (U, false, 0, t, dest, srcs, src_cnt);                      \
    body_xor_gen (1, true, t, bytes, dest, srcs, src_cnt);                   \
  }                                                                          \
  static void                                                                \
  prefix##_gen_syndrome (int disks, size_t bytes, void **ptrs)               \
  {                                                                          \
    size_t t = MAIN_END (U, bytes);                                          \
    body_gen_syndrome (U, false, 0, t, disks, ptrs);                         \
    body_gen_syndrome (1, true, t, bytes, disks, ptrs);                      \
  }                                                                          \
  static void                                                                \
  prefix##_xor_syndrome (int disks, int start, int stop, size_t bytes,       \
                         void **ptrs)                                        \
  {                                                                          \
    size_t t = MAIN_END (U, bytes);                                          \
    body_xor_syndrome (U, false, 0, t, disks, start, stop, ptrs);            \
    body_xor_syndrome (1, true, t, bytes, disks, start, stop, ptrs);         \
  }                                                                          \
  static void                                                                \
  prefix##_recov_2data (int disks, size_t bytes, int faila, int failb,       \
                        void **ptrs)                                         \
  {                                                                          \
    size_t t = MAIN_END (U, bytes);                                          \
    svuint8_t pb_lo, pb_hi, q_lo, q_hi;                                      \
    uint8_t pb, qm;                                                          \
    parity_recov_2data_coeffs (faila, failb, &pb, &qm);                      \
    mulc_init (pb, &pb_lo, &pb_hi);                                          \
    mulc_init (qm, &q_lo, &q_hi);                                            \
    body_recov_2data (U, false, 0, t, disks, faila, failb, ptrs,             \
                      pb_lo, pb_hi, q_lo, q_hi);                             \
    body_recov_2data (1, true, t, bytes, disks, faila, failb, ptrs,          \
                      pb_lo, pb_hi, q_lo, q_hi);                             \
  }                                                                          \
  static void                                                                \
  prefix##_recov_datap (int disks, size_t bytes, int faila, void **ptrs)     \
  {                                                                          \
    size_t t = MAIN_END (U, bytes);                                          \
    svuint8_t q_lo, q_hi;                                                    \
    mulc_init (parity_recov_datap_coeff (faila), &q_lo, &q_hi);              \
    body_recov_datap (U, false, 0, t, disks, faila, ptrs, q_lo, q_hi);       \
    body_recov_datap (1, true, t, bytes, disks, faila, ptrs, q_lo, q_hi);    \
  }

#define SVE_IMPL_ENTRY(prefix)                                               \
  { #prefix, prefix##_xor_gen, prefix##_gen_syndrome, prefix##_xor_syndrome, \
    prefix##_recov_2data, prefix##_recov_datap }

SVE_KERNELS (svex1, 1)
SVE_KERNELS (svex2, 2)
SVE_KERNELS (svex4, 4)

static bool
sve_cpu_ok (void)
{
  return parity_cpu_features () & PARITY_CPU_SVE;
}

static const struct parity_impl sve_impls[] = {
  SVE_IMPL_ENTRY (svex1),
  SVE_IMPL_ENTRY (svex2),
  SVE_IMPL_ENTRY (svex4),
};

const struct parity_family parity_family_sve = {
  "sve", sve_cpu_ok, sve_impls, 3, 2,
};
