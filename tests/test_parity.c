/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for libparity (parity/parity.h).
 *
 * What is tested.  Every implementation that parity_impls() lists for this
 * CPU gets a Check test case of its own (named after it, so a failure says
 * which kernel broke), and in it every operation is compared with a
 * reference written in this file:
 *   - gen_syndrome for every disk count 4..64 and several up to 256;
 *   - xor_gen with 1..17, 100, 127, 128, 129, 200 and 255 (the most
 *     allowed: a RAID-5 of 256 members) sources;
 *   - xor_syndrome alone against the formula, and md's read-modify-write
 *     (take the old data out, put the new data in, compare with a full
 *     regeneration) for every start..stop range at small disk counts and
 *     random ranges at larger ones;
 *   - recov_2data for every pair of data disks and recov_datap for every
 *     data disk at 4, 5, 6, 8, 11, 16 and 24 disks, sampled at 64 and 256;
 *   - parity_check at every disk count 4..64 (sampled at 65..256): no block
 *     wrong, every single block wrong (each data block, P, Q: it must be
 *     located), and two wrong blocks of every kind (data and data, data and
 *     P, data and Q, P and Q; on shared and on disjoint bytes) and P and Q
 *     wrong as if a data block beyond the last were (none may be located);
 *     the differences left in scratch are checked against the reference;
 *     parity_check_p (RAID-5) at 2..64 and sampled to 256 likewise.
 * Lengths are multiples of 64, random and chosen edges (64, 128, 192 and odd
 * multiples of 64, which no unroll width above 64 bytes divides).  Every
 * buffer sits at a random offset inside an allocation of its own, with
 * guard bytes on both sides: a buffer the call writes at a multiple of 64
 * bytes, as the contract asks; one it only reads, as often as not at an
 * odd byte, as the contract allows (the plugin hands the kernels its
 * client's buffer, wherever nbdkit put it).  Outputs are filled with junk
 * before each call so that a kernel which writes nothing cannot pass;
 * after each call every input must be unchanged, and so must the bytes
 * around every output.
 * A separate test case covers the selection API.
 *
 * Why the reference is independent.  It shares no code or table with the
 * library: GF(2^8) multiplication is shift-and-add modulo 0x11d (tabulated
 * once at start, for speed), used one byte at a time; Q is the plain sum of
 * g^i D_i with g^i from repeated multiplication (the library uses Horner's
 * rule on whole vectors); inverses come from a brute-force search; and
 * recovery solves the two equations for D_a first (the library solves for
 * D_b).  The reference is itself checked against published powers of g,
 * and on every recovery against the data the test wrote before it failed
 * the disks.
 *
 * Reproducing a failure.  The seed is printed at start and in every failure
 * message; PARITY_TEST_SEED=N repeats a run.  Each test reseeds from N, its
 * own name and its implementation, so a test run alone (CK_RUN_CASE=avx2x4)
 * sees the same data as in the full run.  PARITY_TEST_QUICK=1 shrinks the
 * lengths, for valgrind: PARITY_TEST_QUICK=1 CK_FORK=no valgrind ./test_parity
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include <check.h>

#include "parity.h"
/* For the GFNI matrices only (test_gfni_matrices); the reference below
 * uses nothing from the library.
 */
#include "internal.h"

#ifdef HAVE_SIMDE_GFNI
#include <simde/x86/avx512.h>
#include <simde/x86/gfni.h>
#endif
#if defined(__x86_64__) && defined(HAVE_CPUID_H)
#include <cpuid.h>
#include <immintrin.h>
#endif

/* Guard bytes on each side of a buffer, and the largest random shift of a
 * buffer inside its allocation in multiples of 64 (an input may be moved
 * up to 63 bytes further, off the 64-byte boundary).
 */
#define GUARD 64
#define MAX_SHIFT (7 * 64)

#define ARRAY_SIZE(a) (sizeof (a) / sizeof ((a)[0]))

static uint64_t seed;
static bool quick;
static const char *const *impls;
static const char *initial_impl;        /* chosen at first use */

/* What the running check is doing, for failure messages. */
static char what[256];

static void __attribute__ ((format (printf, 1, 2)))
describe (const char *fmt, ...)
{
  va_list ap;
  int n;

  n = snprintf (what, sizeof what, "impl=%s seed=%" PRIu64 ": ",
                parity_name (), seed);
  va_start (ap, fmt);
  vsnprintf (what + n, sizeof what - n, fmt, ap);
  va_end (ap);
}

/* Random numbers: splitmix64, small and the same everywhere. */

static uint64_t rng_state;

static uint64_t
rng_next (void)
{
  uint64_t z = (rng_state += UINT64_C (0x9e3779b97f4a7c15));

  z = (z ^ (z >> 30)) * UINT64_C (0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C (0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static unsigned int
rng_below (unsigned int n)
{
  return rng_next () % n;
}

static void
rng_fill (uint8_t *p, size_t n)
{
  for (size_t i = 0; i < n; i += 8) {
    uint64_t x = rng_next ();

    memcpy (p + i, &x, n - i < 8 ? n - i : 8);
  }
}

/* FNV-1a, to give every test its own stream from the one seed. */
static uint64_t
hash_string (const char *s)
{
  uint64_t h = UINT64_C (0xcbf29ce484222325);

  for (; *s; s++)
    h = (h ^ (uint8_t) *s) * UINT64_C (0x100000001b3);
  return h;
}

/* A length for one check: half the time an edge, else any multiple of 64. */
static size_t
random_length (void)
{
  static const size_t edges[] = { 64, 128, 192, 320, 448, 960 };
  unsigned int max_blocks = quick ? 16 : 64;

  if (rng_below (2))
    return edges[rng_below (ARRAY_SIZE (edges))];
  return 64 * (1 + rng_below (max_blocks));
}

/* A length for a recovery or parity check; smaller on average, there are many. */
static size_t
recov_length (void)
{
  size_t len = random_length ();

  return len > 1024 ? 64 * (1 + len / 64 % 16) : len;
}

/* The reference: byte at a time, no tables from the library. */

static uint8_t ref_product[256][256]; /* ref_mul_bits (a, b), for speed */
static uint8_t ref_gpow[256];   /* g^i */
static uint8_t ref_inv[256];    /* 1/x; ref_inv[0] is unused */

/* Shift-and-add: a*b is the XOR of a*x^k for the bits k of b. */
static uint8_t
ref_mul_bits (uint8_t a, uint8_t b)
{
  unsigned int r = 0, x = a;

  for (; b; b >>= 1) {
    if (b & 1)
      r ^= x;
    x <<= 1;
    if (x & 0x100)
      x ^= 0x11d;
  }
  return r;
}

static uint8_t
ref_mul (uint8_t a, uint8_t b)
{
  return ref_product[a][b];
}

static void
ref_init (void)
{
  uint8_t x = 1;

  for (unsigned int a = 0; a < 256; a++)
    for (unsigned int b = 0; b < 256; b++)
      ref_product[a][b] = ref_mul_bits (a, b);
  for (int i = 0; i < 256; i++) {
    ref_gpow[i] = x;
    x = ref_mul (x, 2);
  }
  for (unsigned int a = 1; a < 256; a++)
    for (unsigned int b = 1; b < 256; b++)
      if (ref_mul (a, b) == 1)
        ref_inv[a] = b;
}

static uint8_t
byte_at (void **ptrs, int i, size_t j)
{
  return ((const uint8_t *) ptrs[i])[j];
}

/* P and Q of byte j over data disks lo..hi, with disks skip_a and skip_b
 * taken as lost (-1: none).
 */
static void
ref_pq_byte (void **ptrs, int lo, int hi, int skip_a, int skip_b, size_t j,
             uint8_t *p, uint8_t *q)
{
  uint8_t pp = 0, qq = 0;

  for (int i = lo; i <= hi; i++) {
    if (i == skip_a || i == skip_b)
      continue;
    pp ^= byte_at (ptrs, i, j);
    qq ^= ref_mul (ref_gpow[i], byte_at (ptrs, i, j));
  }
  *p = pp;
  *q = qq;
}

static void
ref_syndrome (void **ptrs, int lo, int hi, size_t bytes,
              uint8_t *p, uint8_t *q)
{
  for (size_t j = 0; j < bytes; j++)
    ref_pq_byte (ptrs, lo, hi, -1, -1, j, &p[j], &q[j]);
}

/* With px = D_a ^ D_b and qx = g^a D_a ^ g^b D_b:
 *   qx ^ g^b px = (g^a ^ g^b) D_a.
 */
static void
ref_recov_2data (int disks, size_t bytes, int a, int b, void **ptrs,
                 uint8_t *da, uint8_t *db)
{
  uint8_t denom_inv = ref_inv[ref_gpow[a] ^ ref_gpow[b]];

  for (size_t j = 0; j < bytes; j++) {
    uint8_t p, q, px, qx;

    ref_pq_byte (ptrs, 0, disks - 3, a, b, j, &p, &q);
    px = p ^ byte_at (ptrs, disks - 2, j);
    qx = q ^ byte_at (ptrs, disks - 1, j);
    da[j] = ref_mul (qx ^ ref_mul (ref_gpow[b], px), denom_inv);
    db[j] = da[j] ^ px;
  }
}

/* qx = g^a D_a, then P is the survivors' P plus D_a. */
static void
ref_recov_datap (int disks, size_t bytes, int a, void **ptrs,
                 uint8_t *da, uint8_t *pout)
{
  for (size_t j = 0; j < bytes; j++) {
    uint8_t p, q;

    ref_pq_byte (ptrs, 0, disks - 3, a, -1, j, &p, &q);
    da[j] = ref_mul (q ^ byte_at (ptrs, disks - 1, j), ref_inv[ref_gpow[a]]);
    pout[j] = p ^ da[j];
  }
}

/* Buffers between guards. */

/* Names blocks in messages. */
enum layout { RAID6, RAID5, XOR, SCRATCH };

struct block {
  uint8_t *mem;                 /* the allocation */
  uint8_t *saved;               /* its contents before the call under test */
  size_t size;
  uint8_t *data;                /* the buffer the library sees, inside mem */
};

struct stripe {
  enum layout layout;
  int n;
  size_t bytes;
  struct block *blk;
  void **ptrs;                  /* blk[i].data */
};

static void *
xmalloc (size_t n)
{
  void *p = malloc (n);

  if (p == NULL)
    ck_abort_msg ("malloc (%zu) failed", n);
  return p;
}

static uint8_t *
xmemdup (const void *p, size_t n)
{
  return memcpy (xmalloc (n), p, n);
}

/* N blocks of BYTES each, every byte (guards too) random.  Blocks out_a
 * and out_b (-1: none), which the call under test writes, are 64-byte
 * aligned; the others, which it only reads, are at an odd address half of
 * the time.
 */
static struct stripe *
stripe_new (enum layout layout, int n, size_t bytes, int out_a, int out_b)
{
  struct stripe *s = xmalloc (sizeof *s);

  s->layout = layout;
  s->n = n;
  s->bytes = bytes;
  s->blk = xmalloc (n * sizeof s->blk[0]);
  s->ptrs = xmalloc (n * sizeof s->ptrs[0]);
  for (int i = 0; i < n; i++) {
    struct block *b = &s->blk[i];
    size_t shift = 64 * rng_below (MAX_SHIFT / 64 + 1);

    if (i != out_a && i != out_b && rng_below (2))
      shift += 1 + rng_below (63);
    b->size = GUARD + MAX_SHIFT + 64 + bytes + GUARD;
    b->mem = aligned_alloc (64, b->size);
    if (b->mem == NULL)
      ck_abort_msg ("aligned_alloc (%zu) failed", b->size);
    b->saved = xmalloc (b->size);
    b->data = b->mem + GUARD + shift;
    rng_fill (b->mem, b->size);
    s->ptrs[i] = b->data;
  }
  return s;
}

static void
stripe_free (struct stripe *s)
{
  for (int i = 0; i < s->n; i++) {
    free (s->blk[i].mem);
    free (s->blk[i].saved);
  }
  free (s->blk);
  free (s->ptrs);
  free (s);
}

static const char *
block_name (const struct stripe *s, int i, char *buf, size_t len)
{
  if (s->layout == RAID6 && i == s->n - 2)
    return "P";
  if (s->layout == RAID6 && i == s->n - 1)
    return "Q";
  if (s->layout == RAID5 && i == s->n - 1)
    return "P";
  if (s->layout == SCRATCH)
    return "scratch";
  if (s->layout == XOR && i == 0)
    return "dest";
  if (s->layout == XOR)
    snprintf (buf, len, "srcs[%d]", i - 1);
  else
    snprintf (buf, len, "D%d", i);
  return buf;
}

/* Junk in block i, so the call under test has to write all of it. */
static void
stripe_poison (struct stripe *s, int i)
{
  rng_fill (s->blk[i].data, s->bytes);
}

/* Take a copy of every allocation before the call under test. */
static void
stripe_snapshot (struct stripe *s)
{
  for (int i = 0; i < s->n; i++)
    memcpy (s->blk[i].saved, s->blk[i].mem, s->blk[i].size);
}

/* Compare [lo, hi) of a block's allocation with the snapshot. */
static void
expect_unchanged (const struct stripe *s, int i, size_t lo, size_t hi,
                  const char *part)
{
  const struct block *b = &s->blk[i];
  char buf[32];

  for (size_t k = lo; k < hi; k++)
    if (b->mem[k] != b->saved[k])
      ck_abort_msg ("%s: %s %s changed at byte %td of the buffer "
                    "(0x%02x -> 0x%02x)", what,
                    block_name (s, i, buf, sizeof buf), part,
                    b->mem + k - b->data, b->saved[k], b->mem[k]);
}

/* After the call: blocks out_a and out_b (-1: none) may have changed
 * inside their buffers; nothing else may have.
 */
static void
stripe_expect_untouched (const struct stripe *s, int out_a, int out_b)
{
  for (int i = 0; i < s->n; i++) {
    const struct block *b = &s->blk[i];
    size_t start = b->data - b->mem;

    if (i == out_a || i == out_b) {
      expect_unchanged (s, i, 0, start, "guard before");
      expect_unchanged (s, i, start + s->bytes, b->size, "guard after");
    }
    else
      expect_unchanged (s, i, 0, b->size, "input");
  }
}

static void
expect_bytes (const uint8_t *got, const uint8_t *want, size_t bytes,
              const char *label)
{
  size_t first = bytes, count = 0;

  for (size_t j = 0; j < bytes; j++)
    if (got[j] != want[j] && count++ == 0)
      first = j;
  if (count)
    ck_abort_msg ("%s: %s: byte %zu is 0x%02x, expected 0x%02x "
                  "(%zu of %zu bytes wrong)", what, label, first,
                  got[first], want[first], count, bytes);
}

static void
expect_block (const struct stripe *s, int i, const uint8_t *want)
{
  char buf[32];

  expect_bytes (s->blk[i].data, want, s->bytes,
                block_name (s, i, buf, sizeof buf));
}

/* The checks, one call of the library each (two for read-modify-write). */

static void
check_gen_syndrome (int disks, size_t bytes)
{
  struct stripe *s = stripe_new (RAID6, disks, bytes, disks - 2, disks - 1);
  uint8_t *p = xmalloc (bytes), *q = xmalloc (bytes);

  describe ("gen_syndrome disks=%d bytes=%zu", disks, bytes);
  ref_syndrome (s->ptrs, 0, disks - 3, bytes, p, q);
  stripe_poison (s, disks - 2);
  stripe_poison (s, disks - 1);
  stripe_snapshot (s);
  parity_gen_syndrome (disks, bytes, s->ptrs);
  stripe_expect_untouched (s, disks - 2, disks - 1);
  expect_block (s, disks - 2, p);
  expect_block (s, disks - 1, q);
  free (p);
  free (q);
  stripe_free (s);
}

static void
check_xor_gen (unsigned int src_cnt, size_t bytes)
{
  struct stripe *s = stripe_new (XOR, src_cnt + 1, bytes, 0, -1);
  uint8_t *want = xmemdup (s->ptrs[0], bytes);

  describe ("xor_gen src_cnt=%u bytes=%zu", src_cnt, bytes);
  for (unsigned int i = 1; i <= src_cnt; i++)
    for (size_t j = 0; j < bytes; j++)
      want[j] ^= byte_at (s->ptrs, i, j);
  stripe_snapshot (s);
  parity_xor_gen (s->ptrs[0], s->ptrs + 1, src_cnt, bytes);
  stripe_expect_untouched (s, 0, -1);
  expect_block (s, 0, want);
  free (want);
  stripe_free (s);
}

/* xor_syndrome on a stripe, checking that only P and Q change. */
static void
call_xor_syndrome (struct stripe *s, int start, int stop)
{
  stripe_snapshot (s);
  parity_xor_syndrome (s->n, start, stop, s->bytes, s->ptrs);
  stripe_expect_untouched (s, s->n - 2, s->n - 1);
}

/* On its own, with P and Q whatever they were: P ^= sum D_i, Q ^= sum
 * g^i D_i for i in start..stop.
 */
static void
check_xor_syndrome (int disks, int start, int stop, size_t bytes)
{
  struct stripe *s = stripe_new (RAID6, disks, bytes, disks - 2, disks - 1);
  uint8_t *p = xmalloc (bytes), *q = xmalloc (bytes);

  describe ("xor_syndrome disks=%d start=%d stop=%d bytes=%zu",
            disks, start, stop, bytes);
  ref_syndrome (s->ptrs, start, stop, bytes, p, q);
  for (size_t j = 0; j < bytes; j++) {
    p[j] ^= byte_at (s->ptrs, disks - 2, j);
    q[j] ^= byte_at (s->ptrs, disks - 1, j);
  }
  call_xor_syndrome (s, start, stop);
  expect_block (s, disks - 2, p);
  expect_block (s, disks - 1, q);
  free (p);
  free (q);
  stripe_free (s);
}

/* md's read-modify-write: from correct P and Q, take the old D_start..
 * D_stop out, write new data, put it in; P and Q must then be those of the
 * new stripe.
 */
static void
check_rmw (int disks, int start, int stop, size_t bytes)
{
  struct stripe *s = stripe_new (RAID6, disks, bytes, disks - 2, disks - 1);
  uint8_t *p = xmalloc (bytes), *q = xmalloc (bytes);

  describe ("xor_syndrome read-modify-write disks=%d start=%d stop=%d "
            "bytes=%zu", disks, start, stop, bytes);
  ref_syndrome (s->ptrs, 0, disks - 3, bytes,
                s->blk[disks - 2].data, s->blk[disks - 1].data);
  call_xor_syndrome (s, start, stop);
  for (int i = start; i <= stop; i++)
    stripe_poison (s, i);
  call_xor_syndrome (s, start, stop);
  ref_syndrome (s->ptrs, 0, disks - 3, bytes, p, q);
  expect_block (s, disks - 2, p);
  expect_block (s, disks - 1, q);
  free (p);
  free (q);
  stripe_free (s);
}

/* A stripe with correct P and Q from the reference; blocks out_a and
 * out_b aligned for the call to write them.
 */
static struct stripe *
consistent_stripe (int disks, size_t bytes, int out_a, int out_b)
{
  struct stripe *s = stripe_new (RAID6, disks, bytes, out_a, out_b);

  ref_syndrome (s->ptrs, 0, disks - 3, bytes,
                s->blk[disks - 2].data, s->blk[disks - 1].data);
  return s;
}

static void
check_recov_2data (int disks, int a, int b, size_t bytes)
{
  struct stripe *s = consistent_stripe (disks, bytes, a, b);
  uint8_t *orig_a = xmemdup (s->ptrs[a], bytes);
  uint8_t *orig_b = xmemdup (s->ptrs[b], bytes);
  uint8_t *ref_a = xmalloc (bytes), *ref_b = xmalloc (bytes);

  describe ("recov_2data disks=%d faila=%d failb=%d bytes=%zu",
            disks, a, b, bytes);
  stripe_poison (s, a);
  stripe_poison (s, b);
  ref_recov_2data (disks, bytes, a, b, s->ptrs, ref_a, ref_b);
  expect_bytes (ref_a, orig_a, bytes, "reference D_a (bug in the test)");
  expect_bytes (ref_b, orig_b, bytes, "reference D_b (bug in the test)");
  stripe_snapshot (s);
  parity_recov_2data (disks, bytes, a, b, s->ptrs);
  stripe_expect_untouched (s, a, b);
  expect_block (s, a, orig_a);
  expect_block (s, b, orig_b);
  free (orig_a);
  free (orig_b);
  free (ref_a);
  free (ref_b);
  stripe_free (s);
}

static void
check_recov_datap (int disks, int a, size_t bytes)
{
  struct stripe *s = consistent_stripe (disks, bytes, a, disks - 2);
  uint8_t *orig_a = xmemdup (s->ptrs[a], bytes);
  uint8_t *orig_p = xmemdup (s->ptrs[disks - 2], bytes);
  uint8_t *ref_a = xmalloc (bytes), *ref_p = xmalloc (bytes);

  describe ("recov_datap disks=%d faila=%d bytes=%zu", disks, a, bytes);
  stripe_poison (s, a);
  stripe_poison (s, disks - 2);
  ref_recov_datap (disks, bytes, a, s->ptrs, ref_a, ref_p);
  expect_bytes (ref_a, orig_a, bytes, "reference D_a (bug in the test)");
  expect_bytes (ref_p, orig_p, bytes, "reference P (bug in the test)");
  stripe_snapshot (s);
  parity_recov_datap (disks, bytes, a, s->ptrs);
  stripe_expect_untouched (s, a, disks - 2);
  expect_block (s, a, orig_a);
  expect_block (s, disks - 2, orig_p);
  free (orig_a);
  free (orig_p);
  free (ref_a);
  free (ref_p);
  stripe_free (s);
}

/* Checking a stripe (parity_check, parity_check_p).  The stripe starts
 * consistent (the reference's P and Q), the test damages chosen blocks by
 * XORing errors into them, and knows from that alone what the verdict must
 * be; the differences parity_check leaves in scratch are compared with
 * P ^ P(data) and Q ^ Q(data) from the reference.
 */

/* A random error for one block, nonzero somewhere, zero on about a quarter
 * of the bytes (a bad block need not be wrong on every byte).
 */
static void
random_error (uint8_t *e, size_t bytes)
{
  rng_fill (e, bytes);
  for (size_t j = 0; j < bytes; j++)
    if (rng_below (4) == 0)
      e[j] = 0;
  e[rng_below (bytes)] = 1 + rng_below (255);
}

static void
xor_into (uint8_t *dst, const uint8_t *e, size_t bytes)
{
  for (size_t j = 0; j < bytes; j++)
    dst[j] ^= e[j];
}

/* Call parity_check (RAID-6) or parity_check_p (RAID-5) on stripe s with a
 * poisoned scratch, and check that it returned WANT_BAD as res.bad, said
 * which parities differ as the reference does, changed no block and left
 * the right differences in scratch.
 */
static void
expect_check (struct stripe *s, struct stripe *scratch, int want_bad)
{
  const bool raid6 = s->layout == RAID6;
  const size_t bytes = s->bytes;
  const int np = raid6 ? 2 : 1, pi = s->n - np;
  uint8_t *p = xmalloc (bytes), *q = xmalloc (bytes);
  struct parity_check_result res = { true, true, 1234 };
  bool want_p = false, want_q = false;
  int r;

  if (raid6)
    ref_syndrome (s->ptrs, 0, s->n - 3, bytes, p, q);
  else {
    memset (p, 0, bytes);
    for (int i = 0; i < pi; i++)
      xor_into (p, s->ptrs[i], bytes);
    memset (q, 0, bytes);
  }
  /* The reference differences, stored ^ the data's own parity. */
  xor_into (p, s->ptrs[pi], bytes);
  if (raid6)
    xor_into (q, s->ptrs[pi + 1], bytes);
  for (size_t j = 0; j < bytes; j++) {
    want_p |= p[j] != 0;
    want_q |= q[j] != 0;
  }

  stripe_poison (scratch, 0);
  stripe_snapshot (s);
  stripe_snapshot (scratch);
  r = raid6 ? parity_check (s->n, bytes, s->ptrs, scratch->ptrs[0], &res)
    : parity_check_p (s->n, bytes, s->ptrs, scratch->ptrs[0], &res);
  stripe_expect_untouched (s, -1, -1);
  stripe_expect_untouched (scratch, 0, -1);
  if (r != (want_p || want_q) || res.p_differs != want_p
      || res.q_differs != want_q || res.bad != want_bad)
    ck_abort_msg ("%s: returned %d, p_differs %d, q_differs %d, bad %d; "
                  "expected %d, %d, %d, %d", what, r, res.p_differs,
                  res.q_differs, res.bad, want_p || want_q, want_p, want_q,
                  want_bad);
  if (want_p)
    expect_bytes (scratch->blk[0].data, p, bytes,
                  "scratch's P ^ P(data)");
  if (want_q)
    expect_bytes (scratch->blk[0].data + bytes, q, bytes,
                  "scratch's Q ^ Q(data)");
  free (p);
  free (q);
}

/* Damage block i alone; the verdict must name it (RAID-6), or no block
 * (RAID-5, where any block could be the wrong one).
 */
static void
check_one_bad (struct stripe *s, struct stripe *scratch, int i)
{
  uint8_t *e = xmalloc (s->bytes);
  char buf[32];

  describe ("%s disks=%d bytes=%zu, %s wrong", s->layout == RAID6
            ? "parity_check" : "parity_check_p", s->n, s->bytes,
            block_name (s, i, buf, sizeof buf));
  random_error (e, s->bytes);
  xor_into (s->ptrs[i], e, s->bytes);
  expect_check (s, scratch, s->layout == RAID6 ? i : -1);
  xor_into (s->ptrs[i], e, s->bytes);
  free (e);
}

/* Damage blocks a != b, each on a byte where the other is right: no single
 * block can explain both bytes, so nothing may be located.  With disjoint,
 * no byte is wrong in both, so every byte alone looks like one bad block's
 * (P's or Q's alone included, which a locate that skips such bytes would
 * miss).
 */
static void
check_two_bad (struct stripe *s, struct stripe *scratch, int a, int b,
               bool disjoint)
{
  uint8_t *ea = xmalloc (s->bytes), *eb = xmalloc (s->bytes);
  size_t ja = rng_below (s->bytes), jb = rng_below (s->bytes - 1);
  char bufa[32], bufb[32];

  describe ("parity_check disks=%d bytes=%zu, %s and %s wrong%s", s->n,
            s->bytes, block_name (s, a, bufa, sizeof bufa),
            block_name (s, b, bufb, sizeof bufb),
            disjoint ? " on different bytes" : "");
  if (jb >= ja)
    jb++;
  random_error (ea, s->bytes);
  random_error (eb, s->bytes);
  for (size_t j = 0; disjoint && j < s->bytes; j++) {
    if (rng_below (2))
      ea[j] = 0;
    else
      eb[j] = 0;
  }
  ea[ja] = 1 + rng_below (255);
  eb[ja] = 0;
  eb[jb] = 1 + rng_below (255);
  ea[jb] = 0;
  xor_into (s->ptrs[a], ea, s->bytes);
  xor_into (s->ptrs[b], eb, s->bytes);
  expect_check (s, scratch, -1);
  xor_into (s->ptrs[a], ea, s->bytes);
  xor_into (s->ptrs[b], eb, s->bytes);
  free (ea);
  free (eb);
}

/* Damage P by e and Q by g^w e, w = disks - 2: what a bad data block w
 * would do, but there is no data block w, so nothing may be located.
 */
static void
check_phantom_bad (struct stripe *s, struct stripe *scratch)
{
  const int w = s->n - 2;
  uint8_t *e = xmalloc (s->bytes), *ge = xmalloc (s->bytes);

  describe ("parity_check disks=%d bytes=%zu, P and Q wrong as if data "
            "block %d were", s->n, s->bytes, w);
  random_error (e, s->bytes);
  for (size_t j = 0; j < s->bytes; j++)
    ge[j] = ref_mul (ref_gpow[w], e[j]);
  xor_into (s->ptrs[s->n - 2], e, s->bytes);
  xor_into (s->ptrs[s->n - 1], ge, s->bytes);
  expect_check (s, scratch, -1);
  xor_into (s->ptrs[s->n - 2], e, s->bytes);
  xor_into (s->ptrs[s->n - 1], ge, s->bytes);
  free (e);
  free (ge);
}

/* A pair of different blocks of the n, a < b. */
static void
random_pair (int n, int *a, int *b)
{
  *a = rng_below (n - 1);
  *b = *a + 1 + rng_below (n - 1 - *a);
}

static void
check_stripe_check (int disks, bool every_block)
{
  size_t bytes = recov_length ();
  struct stripe *s = consistent_stripe (disks, bytes, -1, -1);
  struct stripe *scratch = stripe_new (SCRATCH, 1, 2 * bytes, 0, -1);
  int a, b;

  describe ("parity_check disks=%d bytes=%zu, consistent", disks, bytes);
  expect_check (s, scratch, -1);
  if (every_block)
    for (int i = 0; i < disks; i++)
      check_one_bad (s, scratch, i);
  else {
    check_one_bad (s, scratch, 0);
    check_one_bad (s, scratch, disks - 3);
    check_one_bad (s, scratch, disks - 2);
    check_one_bad (s, scratch, disks - 1);
    for (int k = 0; k < 4; k++)
      check_one_bad (s, scratch, rng_below (disks - 2));
  }
  /* Two bad data blocks; data and P; data and Q; P and Q; any two. */
  for (int disjoint = 0; disjoint <= 1; disjoint++) {
    check_two_bad (s, scratch, 0, disks - 3, disjoint);
    check_two_bad (s, scratch, rng_below (disks - 2), disks - 2, disjoint);
    check_two_bad (s, scratch, rng_below (disks - 2), disks - 1, disjoint);
    check_two_bad (s, scratch, disks - 2, disks - 1, disjoint);
    random_pair (disks, &a, &b);
    check_two_bad (s, scratch, a, b, disjoint);
  }
  check_phantom_bad (s, scratch);
  stripe_free (scratch);
  stripe_free (s);
}

static void
check_stripe_check_p (int disks, bool every_block)
{
  size_t bytes = recov_length ();
  struct stripe *s = stripe_new (RAID5, disks, bytes, -1, -1);
  struct stripe *scratch = stripe_new (SCRATCH, 1, bytes, 0, -1);

  memset (s->ptrs[disks - 1], 0, bytes);
  for (int i = 0; i < disks - 1; i++)
    xor_into (s->ptrs[disks - 1], s->ptrs[i], bytes);
  describe ("parity_check_p disks=%d bytes=%zu, consistent", disks, bytes);
  expect_check (s, scratch, -1);
  if (every_block)
    for (int i = 0; i < disks; i++)
      check_one_bad (s, scratch, i);
  else {
    check_one_bad (s, scratch, 0);
    check_one_bad (s, scratch, disks - 1);
    for (int k = 0; k < 4; k++)
      check_one_bad (s, scratch, rng_below (disks - 1));
  }
  stripe_free (scratch);
  stripe_free (s);
}

/* Per-implementation tests; _i indexes impls[]. */

/* Select the implementation and give the test its own random stream. */
static void
test_begin (int impl, const char *test)
{
  rng_state = seed ^ hash_string (test) ^ hash_string (impls[impl]);
  ck_assert_msg (parity_use (impls[impl]) == 0, "parity_use (\"%s\"): %s",
                 impls[impl], strerror (errno));
  ck_assert_str_eq (parity_name (), impls[impl]);
}

/* Disk counts beyond 64, up to the limit of 256. */
static const int big_disks[] = { 65, 100, 127, 128, 129, 200, 255, 256 };

START_TEST (test_gen_syndrome)
{
  static const size_t edges[] = { 64, 128, 192, 256, 320, 448, 576, 960 };

  test_begin (_i, __func__);
  for (int disks = 4; disks <= 64; disks++) {
    check_gen_syndrome (disks, edges[disks % ARRAY_SIZE (edges)]);
    check_gen_syndrome (disks, random_length ());
  }
  for (size_t k = 0; k < ARRAY_SIZE (big_disks); k++)
    check_gen_syndrome (big_disks[k], random_length ());
}
END_TEST

START_TEST (test_xor_gen)
{
  static const unsigned int many[] = { 17, 100, 127, 128, 129, 200, 255 };

  test_begin (_i, __func__);
  for (unsigned int n = 1; n <= 16; n++) {
    check_xor_gen (n, 64 * (1 + n % 3));
    check_xor_gen (n, random_length ());
  }
  for (size_t k = 0; k < ARRAY_SIZE (many); k++)
    check_xor_gen (many[k], random_length ());
}
END_TEST

/* A random disk count from 4..64 or big_disks. */
static int
random_disks (void)
{
  if (rng_below (4) == 0)
    return big_disks[rng_below (ARRAY_SIZE (big_disks))];
  return 4 + rng_below (61);
}

START_TEST (test_xor_syndrome)
{
  test_begin (_i, __func__);
  for (int k = 0; k < 50; k++) {
    int disks = random_disks ();
    int stop = rng_below (disks - 2);
    int start = rng_below (stop + 1);

    check_xor_syndrome (disks, start, stop, random_length ());
  }
}
END_TEST

START_TEST (test_xor_syndrome_rmw)
{
  test_begin (_i, __func__);
  /* Every range at small disk counts: the edges (start 0, stop the last
   * data disk, one disk) are where Horner's skipped steps go wrong.
   */
  for (int disks = 4; disks <= 10; disks++)
    for (int stop = 0; stop <= disks - 3; stop++)
      for (int start = 0; start <= stop; start++)
        check_rmw (disks, start, stop, random_length ());
  for (int k = 0; k < 30; k++) {
    int disks = random_disks ();
    int stop = rng_below (disks - 2);
    int start = rng_below (stop + 1);

    check_rmw (disks, start, stop, random_length ());
  }
}
END_TEST

/* Disk counts where every failure is tried. */
static const int recov_disks[] = { 4, 5, 6, 8, 11, 16, 24 };
/* Disk counts where failures are sampled: corners, then random. */
static const int sampled_disks[] = { 64, 256 };
#define SAMPLES 24

START_TEST (test_recov_2data)
{
  test_begin (_i, __func__);
  for (size_t k = 0; k < ARRAY_SIZE (recov_disks); k++) {
    int disks = recov_disks[k];

    for (int a = 0; a < disks - 2; a++)
      for (int b = a + 1; b < disks - 2; b++)
        check_recov_2data (disks, a, b, recov_length ());
  }
  for (size_t k = 0; k < ARRAY_SIZE (sampled_disks); k++) {
    int disks = sampled_disks[k], last = disks - 3;

    check_recov_2data (disks, 0, 1, recov_length ());
    check_recov_2data (disks, 0, last, recov_length ());
    check_recov_2data (disks, last - 1, last, recov_length ());
    for (int n = 0; n < SAMPLES; n++) {
      int a = rng_below (last);
      int b = a + 1 + rng_below (last - a);

      check_recov_2data (disks, a, b, recov_length ());
    }
  }
}
END_TEST

START_TEST (test_recov_datap)
{
  test_begin (_i, __func__);
  for (size_t k = 0; k < ARRAY_SIZE (recov_disks); k++) {
    int disks = recov_disks[k];

    for (int a = 0; a < disks - 2; a++)
      check_recov_datap (disks, a, recov_length ());
  }
  for (size_t k = 0; k < ARRAY_SIZE (sampled_disks); k++) {
    int disks = sampled_disks[k];

    check_recov_datap (disks, 0, recov_length ());
    check_recov_datap (disks, disks - 3, recov_length ());
    for (int n = 0; n < SAMPLES; n++)
      check_recov_datap (disks, rng_below (disks - 2), recov_length ());
  }
}
END_TEST

/* Disk counts beyond 64 where parity_check is sampled. */
static const int check_big_disks[] = { 65, 100, 128, 200, 255, 256 };

START_TEST (test_check)
{
  test_begin (_i, __func__);
  for (int disks = 4; disks <= 64; disks++)
    check_stripe_check (disks, true);
  for (size_t k = 0; k < ARRAY_SIZE (check_big_disks); k++)
    check_stripe_check (check_big_disks[k], false);
}
END_TEST

START_TEST (test_check_p)
{
  test_begin (_i, __func__);
  for (int disks = 2; disks <= 64; disks++)
    check_stripe_check_p (disks, true);
  for (size_t k = 0; k < ARRAY_SIZE (check_big_disks); k++)
    check_stripe_check_p (check_big_disks[k], false);
}
END_TEST

/* The reference checked against published values. */

START_TEST (test_reference)
{
  /* The first powers of 2 modulo 0x11d, as tabulated for RAID-6 and
   * Reed-Solomon codes over this field.
   */
  static const uint8_t gpow[] = {
    1, 2, 4, 8, 16, 32, 64, 128, 29, 58, 116, 232, 205, 135, 19, 38,
  };
  bool seen[256] = { false };

  for (size_t i = 0; i < ARRAY_SIZE (gpow); i++)
    ck_assert_uint_eq (ref_gpow[i], gpow[i]);
  /* g generates the multiplicative group: g^0..g^254 all differ. */
  for (int i = 0; i < 255; i++) {
    ck_assert_msg (!seen[ref_gpow[i]], "g^%d repeats", i);
    seen[ref_gpow[i]] = true;
  }
  ck_assert_uint_eq (ref_gpow[255], 1);
  for (unsigned int a = 1; a < 256; a++)
    if (ref_mul (a, ref_inv[a]) != 1)
      ck_abort_msg ("ref_inv[0x%02x] is wrong", a);
  /* Distributive and commutative, so shift-and-add is a field product.
   * (Plain ifs: every passing ck_assert costs Check a write.)
   */
  rng_state = seed;
  for (int k = 0; k < 10000; k++) {
    uint8_t a = rng_next (), b = rng_next (), c = rng_next ();

    if (ref_mul_bits (a, b ^ c) != (ref_mul_bits (a, b) ^ ref_mul_bits (a, c))
        || ref_mul_bits (a, b) != ref_mul_bits (b, a))
      ck_abort_msg ("ref_mul_bits is not a field product at "
                    "a=0x%02x b=0x%02x c=0x%02x", a, b, c);
  }
}
END_TEST

/* GFNI: the instruction, and the matrices the GFNI kernels give it.
 *
 * The GFNI families are tested here through SIMDe wherever the CPU lacks
 * GFNI, which shows they are right on real hardware only if SIMDe
 * computes what the instruction does and the matrices mean what
 * libparity means them to.  So the Intel SDM's definition of
 * vgf2p8affineqb (GF2P8AFFINEQB, "Operation") is written out below, one
 * byte at a time; every matrix in parity_gf_affine[] must multiply every
 * byte by its constant under it (against ref_mul, which shares nothing
 * with gf.c); SIMDe's instruction, and the CPU's where it has GFNI, must
 * agree with it on random vectors and matrices; and the matrix for 2 must
 * be byte for byte the one ISA-L's pq_gen_avx512_gfni, run on GFNI
 * hardware by its authors and users, multiplies by 2 with.
 */

/* SDM: result bit i = parity (A.byte[7 - i] AND x) XOR imm8.bit[i], A the
 * qword of the matrix operand that holds x's lane.
 */
static uint8_t
sdm_affine_byte (uint64_t a, uint8_t x, uint8_t imm8)
{
  uint8_t r = 0;

  for (int i = 0; i < 8; i++) {
    uint8_t row = a >> (8 * (7 - i));

    r |= (__builtin_parity (row & x) ^ ((imm8 >> i) & 1)) << i;
  }
  return r;
}

/* DST = affine (X, A, 0) over N bytes, each qword of A for its 8 bytes. */
static void
sdm_affine (uint8_t *dst, const uint8_t *x, const uint64_t *a, size_t n)
{
  for (size_t j = 0; j < n; j++)
    dst[j] = sdm_affine_byte (a[j / 8], x[j], 0);
}

START_TEST (test_gfni_matrices)
{
  /* ISA-L's gf_matrix (raid/pq_gen_avx512_gfni.asm), in memory order. */
  static const uint8_t isal_mul2[8] = {
    0x40, 0x20, 0x10, 0x88, 0x84, 0x82, 0x01, 0x80,
  };
  uint8_t m2[8];

  memcpy (m2, &parity_gf_affine[2], 8);   /* little-endian, as x86 loads */
  ck_assert_msg (memcmp (m2, isal_mul2, 8) == 0,
                 "the matrix of 2 is not ISA-L's");
  ck_assert_uint_eq (parity_gf_affine[2], PARITY_GF_AFFINE_2);
  ck_assert_uint_eq (parity_gf_affine[4], PARITY_GF_AFFINE_4);
  /* The identity and zero, as GFNI's documentation writes them. */
  ck_assert_uint_eq (parity_gf_affine[1], UINT64_C (0x0102040810204080));
  ck_assert_uint_eq (parity_gf_affine[0], 0);
  for (unsigned int c = 0; c < 256; c++)
    for (unsigned int x = 0; x < 256; x++)
      if (sdm_affine_byte (parity_gf_affine[c], x, 0) != ref_mul (c, x))
        ck_abort_msg ("parity_gf_affine[0x%02x] times 0x%02x is 0x%02x, "
                      "not 0x%02x", c, x,
                      sdm_affine_byte (parity_gf_affine[c], x, 0),
                      ref_mul (c, x));
  /* The immediate flips bits, as the SDM says (the kernels pass 0). */
  ck_assert_uint_eq (sdm_affine_byte (parity_gf_affine[1], 0x5a, 0xff), 0xa5);
}
END_TEST

/* Random matrices: a product by a constant in half the qwords, any bit
 * matrix in the rest, so that lanes are seen to take their own qword.
 */
static void
random_matrices (uint64_t *a, size_t nq)
{
  for (size_t k = 0; k < nq; k++)
    a[k] = rng_below (2) ? parity_gf_affine[rng_below (256)] : rng_next ();
}

#ifdef HAVE_SIMDE_GFNI
static void
simde_affine_512 (uint8_t *dst, const uint8_t *x, const uint64_t *a)
{
  simde__m512i r = simde_mm512_gf2p8affine_epi64_epi8
    (simde_mm512_loadu_si512 (x), simde_mm512_loadu_si512 (a), 0);

  simde_mm512_storeu_si512 (dst, r);
}

static void
simde_affine_256 (uint8_t *dst, const uint8_t *x, const uint64_t *a)
{
  simde__m256i r = simde_mm256_gf2p8affine_epi64_epi8
    (simde_mm256_loadu_si256 ((const void *) x),
     simde_mm256_loadu_si256 ((const void *) a), 0);

  simde_mm256_storeu_si256 ((void *) dst, r);
}
#endif

#if defined(__x86_64__) && defined(HAVE_CPUID_H)
/* The CPU's own instruction, where it has GFNI with AVX (cpuid below). */
static __attribute__ ((target ("avx,gfni"))) void
native_affine_256 (uint8_t *dst, const uint8_t *x, const uint64_t *a)
{
  __m256i r = _mm256_gf2p8affine_epi64_epi8
    (_mm256_loadu_si256 ((const void *) x),
     _mm256_loadu_si256 ((const void *) a), 0);

  _mm256_storeu_si256 ((void *) dst, r);
}

static bool
cpu_has_gfni_avx (void)
{
  unsigned int eax, ebx, ecx, edx;

  if (__get_cpuid_max (0, NULL) < 7)
    return false;
  __cpuid (1, eax, ebx, ecx, edx);
  if (!(ecx & bit_AVX) || !(ecx & bit_OSXSAVE))
    return false;
  __cpuid_count (7, 0, eax, ebx, ecx, edx);
  return (ecx & (1 << 8)) != 0;     /* GFNI */
}
#endif

/* FN (64 or 32 bytes) against the SDM's definition. */
static void
check_affine (const char *name, size_t n,
              void (*fn) (uint8_t *, const uint8_t *, const uint64_t *))
{
  uint8_t x[64], got[64], want[64];
  uint64_t a[8];

  for (int k = 0; k < 20000; k++) {
    rng_fill (x, n);
    random_matrices (a, n / 8);
    fn (got, x, a);
    sdm_affine (want, x, a, n);
    for (size_t j = 0; j < n; j++)
      if (got[j] != want[j])
        ck_abort_msg ("%s: byte %zu of affine (0x%02x, matrix "
                      "0x%016" PRIx64 ") is 0x%02x, the SDM says 0x%02x "
                      "(seed=%" PRIu64 ")", name, j, x[j], a[j / 8], got[j],
                      want[j], seed);
  }
}

START_TEST (test_gfni_instruction)
{
  int checked = 0;

  rng_state = seed ^ hash_string ("gfni_instruction");
#ifdef HAVE_SIMDE_GFNI
  check_affine ("SIMDe's _mm512_gf2p8affine_epi64_epi8", 64, simde_affine_512);
  check_affine ("SIMDe's _mm256_gf2p8affine_epi64_epi8", 32, simde_affine_256);
  checked++;
#endif
#if defined(__x86_64__) && defined(HAVE_CPUID_H)
  if (cpu_has_gfni_avx ()) {
    check_affine ("this CPU's vgf2p8affineqb", 32, native_affine_256);
    checked++;
  }
#endif
  if (!checked)
    fprintf (stderr, "test_gfni_instruction: neither SIMDe's GFNI nor the "
             "CPU's; nothing to compare\n");
}
END_TEST

/* The selection API. */

static size_t
count_impls (void)
{
  size_t n = 0;

  while (impls[n] != NULL)
    n++;
  return n;
}

static bool
have_impl (const char *name)
{
  for (size_t i = 0; impls[i] != NULL; i++)
    if (strcmp (impls[i], name) == 0)
      return true;
  return false;
}


START_TEST (test_impls_list)
{
  size_t n = count_impls ();

  ck_assert_uint_gt (n, 0);
  ck_assert_msg (have_impl ("generic"), "\"generic\" is not listed");
  ck_assert_msg (have_impl (parity_name ()),
                 "the implementation in use, %s, is not listed",
                 parity_name ());
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      ck_assert_str_ne (impls[i], impls[j]);
  ck_assert_ptr_eq (parity_impls (), impls);
}
END_TEST

START_TEST (test_use_each)
{
  for (size_t i = 0; impls[i] != NULL; i++) {
    ck_assert_int_eq (parity_use (impls[i]), 0);
    ck_assert_str_eq (parity_name (), impls[i]);
  }
}
END_TEST

START_TEST (test_use_unknown)
{
  static const char *const bad[] = {
    "no-such-impl", "", "GENERIC", "generic ", "avx2x3", "sse2x",
  };

  ck_assert_int_eq (parity_use ("generic"), 0);
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++) {
    errno = 0;
    ck_assert_int_eq (parity_use (bad[i]), -1);
    ck_assert_msg (errno == ENOENT, "parity_use (\"%s\"): errno %d, "
                   "expected ENOENT", bad[i], errno);
    ck_assert_str_eq (parity_name (), "generic");
  }
}
END_TEST

/* Family names; a family's implementations are named FAMILY + "x" + unroll. */
static const char *const families[] = {
  "generic", "sse2", "avx2", "avx512", "avx2gfni", "avx512gfni",
  "simde_avx512", "simde_avx2gfni", "simde_avx512gfni", "neon", "sve",
};

/* The family of implementation NAME, or NULL. */
static const char *
family_of (const char *name)
{
  for (size_t i = 0; i < ARRAY_SIZE (families); i++) {
    size_t len = strlen (families[i]);

    if (strncmp (name, families[i], len) == 0
        && (name[len] == '\0' || name[len] == 'x'))
      return families[i];
  }
  return NULL;
}

static bool
have_family (const char *family)
{
  for (size_t i = 0; impls[i] != NULL; i++)
    if (family_of (impls[i]) == family)
      return true;
  return false;
}

START_TEST (test_use_family)
{
  for (size_t i = 0; i < ARRAY_SIZE (families); i++) {
    const char *f = families[i];

    ck_assert_int_eq (parity_use ("generic"), 0);
    errno = 0;
    if (have_family (f)) {
      ck_assert_msg (parity_use (f) == 0, "parity_use (\"%s\"): %s",
                     f, strerror (errno));
      ck_assert_msg (have_impl (parity_name ())
                     && family_of (parity_name ()) == f,
                     "parity_use (\"%s\") selected %s", f, parity_name ());
      /* The first-use choice is its family's preferred variant, which is
       * what the family name stands for.
       */
      if (!getenv ("PARITY_IMPL") && family_of (initial_impl) == f)
        ck_assert_str_eq (parity_name (), initial_impl);
    }
    else {
      /* Not runnable here: not built (ENOENT) or not for this CPU. */
      ck_assert_int_eq (parity_use (f), -1);
      ck_assert (errno == ENOENT || errno == ENOTSUP);
      ck_assert_str_eq (parity_name (), "generic");
    }
  }
}
END_TEST

/* The self-test (parity/selftest.c).  test_broken, in test builds only,
 * is generic with a wrong last byte of Q from gen_syndrome; parity_use
 * finds it by name, but parity_impls() does not list it.
 */

static char reported[1024];
static unsigned int nr_reported;

static void
capture_report (const char *msg)
{
  nr_reported++;
  snprintf (reported, sizeof reported, "%s", msg);
}

START_TEST (test_selftest_refuses)
{
  static const char want[] =
    "test_broken failed its self-test (its gen_syndrome differs from "
    "generic's); not using it";

  ck_assert_msg (!have_impl ("test_broken"), "test_broken is listed");
  ck_assert_int_eq (parity_use ("generic"), 0);
  parity_set_log (capture_report);
  for (int k = 0; k < 2; k++) {
    errno = 0;
    ck_assert_int_eq (parity_use ("test_broken"), -1);
    ck_assert_msg (errno == EIO, "parity_use (\"test_broken\"): errno %d, "
                   "expected EIO", errno);
    ck_assert_str_eq (parity_name (), "generic");
  }
  parity_set_log (NULL);
  /* Reported through the log function, once. */
  ck_assert_uint_eq (nr_reported, 1);
  ck_assert_str_eq (reported, want);
}
END_TEST

/* Run this program again as "test_parity MODE" (see main) with
 * PARITY_IMPL=IMPL; collect its output and error output.  Returns its exit
 * status, or -1 when it cannot be run (under qemu-user without binfmt).
 * The path is read from /proc/self/exe, which valgrind and qemu-user
 * answer with this program's path; executing /proc/self/exe itself would
 * start theirs.
 */
static int
run_first_use (const char *mode, const char *impl, char *out, char *err,
               size_t len)
{
  char env_impl[64], *argv[] = { (char *) "test_parity", (char *) mode, NULL };
  char *envp[] = { env_impl, NULL }, self[4096];
  int pout[2], perr[2], status;
  posix_spawn_file_actions_t fa;
  pid_t pid;
  ssize_t n;

  snprintf (env_impl, sizeof env_impl, "PARITY_IMPL=%s", impl);
  n = readlink ("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return -1;
  self[n] = '\0';
  ck_assert (pipe (pout) == 0 && pipe (perr) == 0);
  posix_spawn_file_actions_init (&fa);
  posix_spawn_file_actions_adddup2 (&fa, pout[1], 1);
  posix_spawn_file_actions_adddup2 (&fa, perr[1], 2);
  posix_spawn_file_actions_addclose (&fa, pout[0]);
  posix_spawn_file_actions_addclose (&fa, perr[0]);
  if (posix_spawn (&pid, self, &fa, NULL, argv, envp) != 0)
    pid = -1;
  posix_spawn_file_actions_destroy (&fa);
  close (pout[1]);
  close (perr[1]);
  if (pid > 0 && waitpid (pid, &status, 0) != pid)
    pid = -1;
  /* Small outputs: the pipes held them while the child ran. */
  n = read (pout[0], out, len - 1);
  out[n > 0 ? n : 0] = '\0';
  n = read (perr[0], err, len - 1);
  err[n > 0 ? n : 0] = '\0';
  close (pout[0]);
  close (perr[0]);
  /* 127: the exec in the child failed (an aarch64 binary under qemu-user). */
  if (pid <= 0 || (WIFEXITED (status) && WEXITSTATUS (status) == 127))
    return -1;
  return WIFEXITED (status) ? WEXITSTATUS (status) : 128;
}

/* PARITY_IMPL naming an implementation that fails its self-test: at first
 * use generic is chosen instead, and that is said on stderr, or through
 * the log function when one was set before first use.
 */
START_TEST (test_selftest_first_use)
{
  static const char want[] =
    "test_broken failed its self-test (its gen_syndrome differs from "
    "generic's); using generic";
  char out[1024], err[1024], line[256];

  if (run_first_use ("--first-use", "test_broken", out, err,
                     sizeof out) == -1) {
    fprintf (stderr, "test_selftest_first_use: cannot run this program "
             "again here; skipped\n");
    return;
  }
  ck_assert_str_eq (out, "generic\n");
  snprintf (line, sizeof line, "libparity: %s\n", want);
  ck_assert_str_eq (err, line);

  ck_assert_int_eq (run_first_use ("--first-use-log", "test_broken", out, err,
                                   sizeof out), 0);
  snprintf (line, sizeof line, "log: %s\ngeneric\n", want);
  ck_assert_str_eq (out, line);
  ck_assert_str_eq (err, "");

  /* A good implementation is used without a word. */
  ck_assert_int_eq (run_first_use ("--first-use", initial_impl, out, err,
                                   sizeof out), 0);
  snprintf (line, sizeof line, "%s\n", initial_impl);
  ck_assert_str_eq (out, line);
  ck_assert_str_eq (err, "");
}
END_TEST

/* "test_parity --first-use[-log]": print the implementation chosen at
 * first use (after setting a log function that prints "log: MSG").
 */
static void
print_log (const char *msg)
{
  printf ("log: %s\n", msg);
}

static int
first_use_main (const char *mode)
{
  if (strcmp (mode, "--first-use-log") == 0)
    parity_set_log (print_log);
  printf ("%s\n", parity_name ());
  return 0;
}

static uint64_t
choose_seed (void)
{
  const char *env = getenv ("PARITY_TEST_SEED");
  struct timespec ts;

  if (env && *env)
    return strtoull (env, NULL, 0);
  clock_gettime (CLOCK_REALTIME, &ts);
  return ((uint64_t) ts.tv_sec * 1000000000 + ts.tv_nsec)
         ^ (uint64_t) getpid ();
}

static Suite *
parity_suite (void)
{
  Suite *s = suite_create ("parity");
  TCase *tc;

  tc = tcase_create ("api");
  tcase_add_test (tc, test_impls_list);
  tcase_add_test (tc, test_use_each);
  tcase_add_test (tc, test_use_unknown);
  tcase_add_test (tc, test_use_family);
  tcase_add_test (tc, test_selftest_refuses);
  tcase_add_test (tc, test_selftest_first_use);
  suite_add_tcase (s, tc);

  tc = tcase_create ("reference");
  tcase_add_test (tc, test_reference);
  tcase_add_test (tc, test_gfni_matrices);
  tcase_add_test (tc, test_gfni_instruction);
  suite_add_tcase (s, tc);

  /* One test case per implementation; the loop index selects it. */
  for (int i = 0; impls[i] != NULL; i++) {
    tc = tcase_create (impls[i]);
    tcase_set_timeout (tc, 120);
    tcase_add_loop_test (tc, test_gen_syndrome, i, i + 1);
    tcase_add_loop_test (tc, test_xor_gen, i, i + 1);
    tcase_add_loop_test (tc, test_xor_syndrome, i, i + 1);
    tcase_add_loop_test (tc, test_xor_syndrome_rmw, i, i + 1);
    tcase_add_loop_test (tc, test_recov_2data, i, i + 1);
    tcase_add_loop_test (tc, test_recov_datap, i, i + 1);
    tcase_add_loop_test (tc, test_check, i, i + 1);
    tcase_add_loop_test (tc, test_check_p, i, i + 1);
    suite_add_tcase (s, tc);
  }
  return s;
}

int
main (int argc, char **argv)
{
  const char *q = getenv ("PARITY_TEST_QUICK");
  SRunner *sr;
  int failed;

  if (argc == 2)
    return first_use_main (argv[1]);

  seed = choose_seed ();
  quick = q && *q && strcmp (q, "0") != 0;
  printf ("test_parity: seed=%" PRIu64 "%s (PARITY_TEST_SEED repeats it)\n",
          seed, quick ? ", quick" : "");
  fflush (stdout);

  ref_init ();
  impls = parity_impls ();
  initial_impl = parity_name ();
  sr = srunner_create (parity_suite ());
  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
