/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: the stripe cache (plugin/stripe.h: stripe_cache.c,
 * stripe_write.c, stripe_recover.c, stripe_scrub.c) against in-memory
 * members (member_mem.c), checked by a reference that shares nothing
 * with the plugin's parity code.
 *
 * The reference.  Everything the tests compare with is computed here:
 * md's layouts case by case as tests/lib/raidcheck.py describes them (not
 * from geometry.c's reduction), P as the XOR of the row's data, Q as
 * sum g^k D_k in GF(2^8) (polynomial 0x11d, shift-and-add multiply) over
 * md's syndrome walk (start on the member after Q, wrap, skip P and Q;
 * plugin/geometry.h).  libparity is only called by the code under test.
 * A shadow copy holds what the array's data must be.  A row is right when
 * every member that is in sync holds exactly its reference chunk: the
 * shadow's data chunk, or P or Q of the shadow's row.  (A failed member's
 * bytes are then fully determined by the others, so "consistent within
 * tolerance" needs nothing more.)
 *
 * The cases, one Check test case each (CK_RUN_CASE=name runs one):
 *  random    random writes of every size and alignment (bytes to rows,
 *            zeroes, FUA), over RAID-5 and RAID-6 of two widths and
 *            every layout, a small cache (eviction) and invalidations;
 *            from client buffers 4 KiB aligned or not, on members that
 *            are direct (O_DIRECT: member_mem aborts on a buffer that is
 *            not aligned) on every other layout, so that full rows are
 *            written from the client's buffer where they may be and
 *            copied where they must;
 *            every touched row checked after each write, all at the end,
 *            and stripe_read of random ranges against the shadow.
 *  method    the RMW/RCW choice: for random writes to one row, with the
 *            cache's valid pages modelled here, the method counters
 *            (stripe_cache_stats), the pages read (counted by the
 *            members) and the pages written equal what md's rule
 *            predicts: read-modify-write only when it reads strictly
 *            fewer pages, valid pages not counted, chosen once for the
 *            whole write as stripe.c's essay says (md chooses per 4 KiB
 *            page row, which for RAID-5 sometimes reads a page less:
 *            4 data chunks of 16 KiB, a write of [0, 22016) reads 10
 *            pages here and 9 in md); with FUA every member written is
 *            flushed once.
 *  recover   every member (RAID-5) and every pair (RAID-6) failed:
 *            stripe_read returns the shadow; every member rebuilt in
 *            windows of 1 to 4 rows with stripe_rebuild_rows (beside
 *            another failed one, for RAID-6), with writes to rows on both
 *            sides of the rebuild between windows, holds its reference
 *            chunks.
 *  rebuild reads  a RAID-6 rebuild with one member lost reads one
 *            parity a row, not two, and still writes the right bytes.
 *  scrub     a corrupted P page, Q page and data page are one mismatch
 *            each; RAID-6 locates the data page's member; repair makes
 *            the row right again (the data page restored).
 *  faults    a member whose writes (or reads) fail during a write is
 *            failed, the write succeeds, and the row is right on the
 *            others and reads back as the shadow; one failure too many
 *            and the write fails with EIO.  The members' errors take
 *            turns between member.h's classes (a medium's EIO, ENODATA,
 *            short transfer; a link's ENOTCONN, ETIMEDOUT, ENODEV): the
 *            same either way, and EIO to the client.
 *  media     a page a member cannot read (its medium: member_mem's
 *            unreadable blocks) while it still answers: a read through
 *            the cache returns the shadow, the member stays in sync, the
 *            page is written back from the others and reads again
 *            (corrected_reads counts it), even one the cache holds when
 *            read again after a direct read failed (stripe_read_again);
 *            a page that reads back wrong
 *            after the rewrite fails the member, the read still right; a
 *            page lost on more members than the level tolerates fails a
 *            read of it with EIO while the row's other pages read; a
 *            rebuild gets past a survivor's unreadable page, and stops
 *            with EIO at a page it cannot reconstruct, failing nobody.
 *  jump      a re-added member's recovery offset jumps past a row (no row
 *            lock: jobs.c) while a degraded read or write of the row is
 *            reading: the request reconstructs what it did not read, and
 *            the row reads back and stays right.
 *
 * Deterministic: one seed (STRIPE_TEST_SEED, else the time) drives every
 * random choice, and is printed.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <check.h>

#include "check_run.h"

#include "geometry.h"
#include "member.h"
#include "mem_array.h"
#include "member_mem.h"
#include "member_table.h"
#include "stripe.h"

#define PAGE 4096
#define MAXM 8                  /* members in these tests */
#define CHUNK (4 * PAGE)        /* small, so rows are cheap, but 4 pages */
#define DATA_OFFSET 8192

static unsigned int errors_logged;

void
nbdkit_error (const char *fs, ...)
{
  errors_logged++;              /* member failures, expected in some cases */
}

/* The seed and the generator (xorshift64*). */
static uint64_t seed, rng;

static uint64_t
rnd (void)
{
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * UINT64_C (2685821657736338717);
}

static uint64_t
rnd_below (uint64_t n)
{
  return rnd () % n;
}

static void
rnd_fill (uint8_t *buf, size_t len)
{
  for (size_t i = 0; i < len; i++)
    buf[i] = rnd () >> 56;
}

/* Each case starts from the seed and its own number, so that a case run
 * alone sees what it sees in the whole run.
 */
static void
reseed (int casenum)
{
  rng = seed * 2 + 1 + (uint64_t) casenum * UINT64_C (0x9e3779b97f4a7c15);
  for (int i = 0; i < 4; i++)
    rnd ();
}

/* The reference (see the top). */

static uint8_t gf_mul_table[256][256];
static uint8_t gf_pow2_table[256];

static uint8_t
gf_mul_slow (uint8_t a, uint8_t b)
{
  unsigned int x = a, r = 0;

  while (b) {
    if (b & 1)
      r ^= x;
    x <<= 1;
    if (x & 0x100)
      x ^= 0x11d;
    b >>= 1;
  }
  return r;
}

static void
gf_init (void)
{
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++)
      gf_mul_table[a][b] = gf_mul_slow (a, b);
  gf_pow2_table[0] = 1;
  for (int k = 1; k < 256; k++)
    gf_pow2_table[k] = gf_mul_slow (gf_pow2_table[k - 1], 2);
}

/* One row as md lays it out (tests/lib/raidcheck.py's row_layout and
 * syndrome_order).
 */
struct ref_row {
  int p, q;                     /* q -1 for RAID-5 */
  int data[MAXM];               /* member of logical data chunk i */
  int slot[MAXM];               /* syndrome slot of data chunk i */
};

static void
ref_layout (int level, enum geometry_layout layout, int n, uint64_t s,
            struct ref_row *row)
{
  int dd = n - (level == 6 ? 2 : 1), r = s % n, p, q = -1, start, k = 0;
  int *data = row->data;
  bool asym = layout == LAYOUT_LEFT_ASYMMETRIC ||
    layout == LAYOUT_RIGHT_ASYMMETRIC;
  bool sym = layout == LAYOUT_LEFT_SYMMETRIC ||
    layout == LAYOUT_RIGHT_SYMMETRIC;
  bool left = layout == LAYOUT_LEFT_ASYMMETRIC ||
    layout == LAYOUT_LEFT_SYMMETRIC;

  if (level == 5) {
    p = layout == LAYOUT_PARITY_FIRST ? 0 : layout == LAYOUT_PARITY_LAST ? dd
      : left ? dd - r : r;
    for (int i = 0; i < dd; i++)
      data[i] = asym ? (i >= p ? i + 1 : i) : sym ? (p + 1 + i) % n
        : layout == LAYOUT_PARITY_FIRST ? i + 1 : i;
  }
  else if (asym) {
    p = left ? n - 1 - r : r;
    q = p + 1;
    if (p == n - 1) {
      q = 0;
      for (int i = 0; i < dd; i++)
        data[i] = i + 1;
    }
    else
      for (int i = 0; i < dd; i++)
        data[i] = i >= p ? i + 2 : i;
  }
  else if (sym) {
    p = left ? n - 1 - r : r;
    q = (p + 1) % n;
    for (int i = 0; i < dd; i++)
      data[i] = (p + 2 + i) % n;
  }
  else if (layout == LAYOUT_PARITY_FIRST) {
    p = 0;
    q = 1;
    for (int i = 0; i < dd; i++)
      data[i] = i + 2;
  }
  else {
    p = dd;
    q = dd + 1;
    for (int i = 0; i < dd; i++)
      data[i] = i;
  }
  row->p = p;
  row->q = q;

  /* The syndrome walk: slot k is the k-th data member met. */
  start = level == 5 ? 0 : q == n - 1 ? 0 : q + 1;
  for (int j = 0; j < n; j++) {
    int m = (start + j) % n;

    if (m == p || m == q)
      continue;
    for (int i = 0; i < dd; i++)
      if (data[i] == m)
        row->slot[i] = k;
    k++;
  }
}

/* An array of in-memory members, its cache and its shadow. */
struct rig {
  struct mem_array a;           /* geometry and members (mem_array.c) */
  struct stripe_cache *c;
  uint64_t budget;
  uint8_t *shadow;              /* a.g.array_size bytes */
};

static void
rig_init (struct rig *r, int level, enum geometry_layout layout, int n,
          uint64_t rows, uint64_t budget_heads)
{
  memset (r, 0, sizeof *r);
  mem_array_init (&r->a, level, layout, n, CHUNK, DATA_OFFSET, rows);
  r->budget = budget_heads * n * CHUNK;
  r->c = stripe_cache_create (&r->a.g, &r->a.ms, r->budget);
  ck_assert (r->c != NULL);
  r->shadow = calloc (1, r->a.g.array_size);
  ck_assert (r->shadow != NULL);
}

/* A fresh cache: nothing valid (after the members changed behind it). */
static void
rig_recache (struct rig *r)
{
  stripe_cache_destroy (r->c);
  r->c = stripe_cache_create (&r->a.g, &r->a.ms, r->budget);
  ck_assert (r->c != NULL);
}

static void
rig_free (struct rig *r)
{
  stripe_cache_destroy (r->c);
  mem_array_free (&r->a);
  free (r->shadow);
}

static const char *
layout_name (enum geometry_layout l)
{
  return geometry_layout_name (l);
}

/* Write through the cache as array.c does (row by row); the shadow
 * follows each row that succeeded.  data NULL: zeroes.
 */
static int
array_write (struct rig *r, uint64_t off, uint64_t len, const uint8_t *data,
             bool fua)
{
  uint64_t row = r->a.g.stripe_data_bytes;

  while (len) {
    uint64_t s = off / row, in = off % row, n = len < row - in ? len : row - in;
    struct stripe_head *sh = stripe_cache_get (r->c, s);
    int ret;

    ck_assert (sh != NULL);
    ret = stripe_write (r->c, sh, in, n, data, fua);
    stripe_cache_put (r->c, sh);
    if (ret == -1)
      return -1;
    if (data) {
      memcpy (r->shadow + off, data, n);
      data += n;
    }
    else
      memset (r->shadow + off, 0, n);
    off += n;
    len -= n;
  }
  return 0;
}

static int
array_read (struct rig *r, uint64_t off, uint64_t len, uint8_t *buf)
{
  uint64_t row = r->a.g.stripe_data_bytes;

  while (len) {
    uint64_t s = off / row, in = off % row, n = len < row - in ? len : row - in;
    struct stripe_head *sh = stripe_cache_get (r->c, s);
    int ret;

    ck_assert (sh != NULL);
    ret = stripe_read (r->c, sh, in, n, buf);
    stripe_cache_put (r->c, sh);
    if (ret == -1)
      return -1;
    off += n;
    len -= n;
    buf += n;
  }
  return 0;
}

/* The chunk member m must hold in row s, from the shadow; its role. */
static const char *
ref_chunk (struct rig *r, uint64_t s, int m, uint8_t *out)
{
  struct ref_row row;
  int dd = r->a.g.data_disks;
  const uint8_t *d = r->shadow + s * r->a.g.stripe_data_bytes;

  ref_layout (r->a.g.level, r->a.g.layout, r->a.n, s, &row);
  for (int i = 0; i < dd; i++)
    if (row.data[i] == m) {
      memcpy (out, d + i * CHUNK, CHUNK);
      return "data";
    }
  memset (out, 0, CHUNK);
  if (m == row.p) {
    for (int i = 0; i < dd; i++)
      for (size_t b = 0; b < CHUNK; b++)
        out[b] ^= d[i * CHUNK + b];
    return "P";
  }
  ck_assert_int_eq (m, row.q);
  for (int i = 0; i < dd; i++) {
    const uint8_t *mul = gf_mul_table[gf_pow2_table[row.slot[i]]];

    for (size_t b = 0; b < CHUNK; b++)
      out[b] ^= mul[d[i * CHUNK + b]];
  }
  return "Q";
}

static uint8_t *
member_chunk (struct rig *r, int m, uint64_t s)
{
  return mem_member_data (r->a.m[m]) + geometry_member_offset (&r->a.g, s);
}

static bool
in_sync (struct rig *r, int m, uint64_t s)
{
  return member_readable (r->a.m[m], s);
}

/* Every member in sync at row s holds its reference chunk. */
static void
check_row (struct rig *r, uint64_t s, const char *what)
{
  uint8_t ref[CHUNK];

  for (int m = 0; m < r->a.n; m++) {
    const char *role;
    const uint8_t *got;

    if (!in_sync (r, m, s))
      continue;
    role = ref_chunk (r, s, m, ref);
    got = member_chunk (r, m, s);
    if (memcmp (got, ref, CHUNK) != 0) {
      size_t b = 0;

      while (got[b] == ref[b])
        b++;
      ck_abort_msg ("%s: RAID-%d %s of %d, row %" PRIu64 ": member %d (%s) "
                    "differs from the reference at byte %zu (seed %" PRIu64
                    ")", what, r->a.g.level, layout_name (r->a.g.layout), r->a.n,
                    s, m, role, b, seed);
    }
  }
}

static void
check_all (struct rig *r, const char *what)
{
  for (uint64_t s = 0; s < r->a.g.stripes; s++)
    check_row (r, s, what);
}

/* Random data over the whole array, in full rows. */
static void
fill_array (struct rig *r)
{
  uint8_t *buf = malloc (r->a.g.array_size);

  ck_assert (buf != NULL);
  rnd_fill (buf, r->a.g.array_size);
  ck_assert_int_eq (array_write (r, 0, r->a.g.array_size, buf, false), 0);
  free (buf);
}

/* Compare stripe_read of [off, off+len) with the shadow. */
static void
check_read (struct rig *r, uint64_t off, uint64_t len, const char *what)
{
  uint8_t *buf = malloc (len);

  ck_assert (buf != NULL);
  ck_assert_msg (array_read (r, off, len, buf) == 0, "%s: stripe_read "
                 "[%" PRIu64 ", +%" PRIu64 "): %s", what, off, len,
                 strerror (errno));
  if (memcmp (buf, r->shadow + off, len) != 0) {
    uint64_t b = 0;

    while (buf[b] == r->shadow[off + b])
      b++;
    ck_abort_msg ("%s: RAID-%d %s of %d: stripe_read [%" PRIu64 ", +%"
                  PRIu64 ") differs from the shadow at array byte %" PRIu64
                  " (seed %" PRIu64 ")", what, r->a.g.level,
                  layout_name (r->a.g.layout), r->a.n, off, len, off + b, seed);
  }
  free (buf);
}

/* The configurations: both levels, two widths each, every layout. */
struct config {
  int level, n;
};
static const struct config configs[] = {
  { 5, 3 }, { 5, 5 }, { 6, 4 }, { 6, 6 },
};
#define NCONFIGS (sizeof configs / sizeof configs[0])
#define NLAYOUTS 6

/* (1) Random writes. */

/* A length: the edges of pages, chunks and rows, or anything. */
static uint64_t
pick_len (const struct rig *r)
{
  uint64_t row = r->a.g.stripe_data_bytes;
  const uint64_t edges[] = {
    1, 2, 511, 512, 513, PAGE - 1, PAGE, PAGE + 1, 2 * PAGE, CHUNK - 1,
    CHUNK, CHUNK + 1, 3 * CHUNK - 7, row - 1, row, row + 1, 2 * row,
    2 * row + PAGE,
  };

  if (rnd_below (4) == 0)
    return 1 + rnd_below (3 * row);
  return edges[rnd_below (sizeof edges / sizeof edges[0])];
}

/* An offset for len bytes: aligned to a byte, 512, a page, a chunk or a
 * row, or ending on a row.
 */
static uint64_t
pick_offset (const struct rig *r, uint64_t len)
{
  uint64_t size = r->a.g.array_size, row = r->a.g.stripe_data_bytes;
  const uint64_t align[] = { 1, 512, PAGE, CHUNK, row };
  uint64_t a = align[rnd_below (5)];

  if (rnd_below (6) == 0) {     /* ending on a row */
    uint64_t end = (1 + rnd_below (r->a.g.stripes)) * row;

    return end >= len ? end - len : 0;
  }
  return rnd_below (size - len + 1) / a * a;
}

START_TEST (test_random_writes)
{
  reseed (1);
  for (size_t k = 0; k < NCONFIGS; k++)
    for (int layout = 0; layout < NLAYOUTS; layout++) {
      struct rig r;
      uint8_t *mem, *buf;
      char what[64];

      rig_init (&r, configs[k].level, layout, configs[k].n,
                2 * configs[k].n + 1, 2);
      for (int m = 0; m < r.a.n; m++)
        r.a.m[m]->direct = layout % 2;
      mem = aligned_alloc (PAGE, r.a.g.array_size + PAGE);
      ck_assert (mem != NULL);
      for (int w = 0; w < 120; w++) {
        uint64_t len = pick_len (&r), off;
        bool zero = rnd_below (10) == 0, fua = rnd_below (8) == 0;
        uint64_t row = r.a.g.stripe_data_bytes;

        buf = mem + (rnd_below (2) ? 0 : 16);     /* nbdkit's are at 16 */

        if (len > r.a.g.array_size)
          len = r.a.g.array_size;
        off = pick_offset (&r, len);
        rnd_fill (buf, len);
        snprintf (what, sizeof what, "write %d [%" PRIu64 ", +%" PRIu64 ")",
                  w, off, len);
        ck_assert_msg (array_write (&r, off, len, zero ? NULL : buf, fua) == 0,
                       "%s: %s", what, strerror (errno));
        for (uint64_t s = off / row; s <= (off + len - 1) / row; s++)
          check_row (&r, s, what);
        if (rnd_below (10) == 0) {          /* forget one row's pages */
          struct stripe_head *sh =
            stripe_cache_get (r.c, rnd_below (r.a.g.stripes));

          stripe_head_invalidate (r.c, sh);
          stripe_cache_put (r.c, sh);
        }
        if (rnd_below (4) == 0) {
          uint64_t rl = 1 + rnd_below (2 * row);

          if (rl > r.a.g.array_size)
            rl = r.a.g.array_size;
          check_read (&r, rnd_below (r.a.g.array_size - rl + 1), rl, what);
        }
      }
      for (int m = 0; m < r.a.n; m++)
        ck_assert (!member_failed (r.a.m[m]));
      check_all (&r, "after the random writes");
      check_read (&r, 0, r.a.g.array_size, "after the random writes");
      free (mem);
      rig_free (&r);
    }
}
END_TEST

/* (2) The RMW/RCW choice.  The model of one row's valid pages and the
 * prediction follow stripe.c's essay and md's rule (see the top).
 */
struct model {
  bool valid[MAXM][CHUNK / PAGE];
};

struct predicted {
  bool full, rmw;
  unsigned int reads, writes;   /* pages */
};

/* Bytes [ws, we) of data chunk i that the write covers (we == ws: none). */
static void
written_range (uint64_t off, uint64_t len, int i, uint64_t *ws, uint64_t *we)
{
  uint64_t lo = (uint64_t) i * CHUNK, hi = lo + CHUNK;
  uint64_t a = off > lo ? off : lo, b = off + len < hi ? off + len : hi;

  *ws = a < b ? a - lo : 0;
  *we = a < b ? b - lo : 0;
}

static void
predict (const struct rig *r, const struct ref_row *row,
         const struct model *mo, uint64_t off, uint64_t len,
         struct predicted *pr)
{
  int dd = r->a.g.data_disks, pages = CHUNK / PAGE;
  unsigned int rmw = 0, rcw = 0, parity = r->a.g.level == 6 ? 2 : 1;

  memset (pr, 0, sizeof *pr);
  for (int pg = 0; pg < pages; pg++) {
    uint64_t ps = (uint64_t) pg * PAGE, pe = ps + PAGE;
    bool touched[MAXM], over[MAXM], written_here = false;

    for (int i = 0; i < dd; i++) {
      uint64_t ws, we;

      written_range (off, len, i, &ws, &we);
      touched[i] = ws < we && ws < pe && we > ps;
      over[i] = ws < we && ws <= ps && pe <= we;
      written_here |= touched[i];
    }
    if (!written_here)          /* a page the write leaves alone */
      continue;
    for (int i = 0; i < dd; i++) {
      bool v = mo->valid[row->data[i]][pg];

      pr->writes += touched[i];
      rmw += touched[i] && !v;  /* RMW: old data of what is written */
      rcw += !over[i] && !v;    /* RCW: what is not wholly overwritten */
    }
    pr->writes += parity;
    rmw += !mo->valid[row->p][pg];
    if (row->q >= 0)
      rmw += !mo->valid[row->q][pg];
  }
  pr->full = off == 0 && len == r->a.g.stripe_data_bytes;
  pr->rmw = rmw < rcw;          /* strictly fewer, as md */
  pr->reads = pr->rmw ? rmw : rcw;
}

/* The model after the write: what was read and what was written is valid,
 * but for a full row's data, which is written from the caller's buffer and
 * not kept (stripe_write.c): only P and Q stay.
 */
static void
model_update (const struct rig *r, const struct ref_row *row,
              struct model *mo, uint64_t off, uint64_t len, bool rmw,
              bool full)
{
  int dd = r->a.g.data_disks, pages = CHUNK / PAGE;

  for (int pg = 0; pg < pages; pg++) {
    uint64_t ps = (uint64_t) pg * PAGE, pe = ps + PAGE;
    bool written_here = false;

    for (int i = 0; i < dd; i++) {
      uint64_t ws, we;

      written_range (off, len, i, &ws, &we);
      if (ws < we && ws < pe && we > ps) {
        written_here = true;
        mo->valid[row->data[i]][pg] = true;
      }
    }
    if (!written_here)
      continue;
    if (!rmw)
      for (int i = 0; i < dd; i++)
        mo->valid[row->data[i]][pg] = !full;
    mo->valid[row->p][pg] = true;
    if (row->q >= 0)
      mo->valid[row->q][pg] = true;
  }
}

static uint64_t
pages_of (struct rig *r, enum member_op op)
{
  uint64_t bytes = 0;

  for (int m = 0; m < r->a.n; m++)
    bytes += mem_member_stats (r->a.m[m])->bytes[op];
  return bytes / PAGE;
}

START_TEST (test_method)
{
  const struct config cfgs[] = { { 5, 5 }, { 6, 6 }, { 6, 4 } };

  reseed (2);
  for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++)
    for (int layout = 0; layout < NLAYOUTS; layout++) {
      struct rig r;
      struct model mo;
      uint64_t rowbytes, s;
      struct ref_row row;
      uint8_t buf[6 * CHUNK];
      unsigned int seen_rmw = 0, seen_rcw = 0;

      rig_init (&r, cfgs[k].level, layout, cfgs[k].n, cfgs[k].n, 16);
      rowbytes = r.a.g.stripe_data_bytes;
      ck_assert_uint_le (rowbytes, sizeof buf);
      fill_array (&r);
      s = rnd_below (r.a.g.stripes);
      ref_layout (r.a.g.level, layout, r.a.n, s, &row);
      rig_recache (&r);
      memset (&mo, 0, sizeof mo);

      for (int w = 0; w < 300; w++) {
        uint64_t len, off;
        struct stripe_stats before, after;
        struct predicted pr;
        uint64_t reads0, writes0, wrote[MAXM], flushed[MAXM];
        bool fua = rnd_below (4) == 0;
        char what[96];

        if (rnd_below (8) == 0) {           /* forget the row */
          struct stripe_head *sh = stripe_cache_get (r.c, s);

          stripe_head_invalidate (r.c, sh);
          stripe_cache_put (r.c, sh);
          memset (&mo, 0, sizeof mo);
        }
        /* Mostly small writes, where the choice is close. */
        len = rnd_below (3) ? 1 + rnd_below (2 * CHUNK)
          : 1 + rnd_below (rowbytes);
        if (rnd_below (2))
          len = (len + 511) / 512 * 512;
        if (len > rowbytes)
          len = rowbytes;
        off = rnd_below (rowbytes - len + 1);
        if (rnd_below (2))
          off = off / PAGE * PAGE;
        if (rnd_below (20) == 0)
          off = 0, len = rowbytes;
        snprintf (what, sizeof what, "RAID-%d %s of %d, write %d [%" PRIu64
                  ", +%" PRIu64 ") of row %" PRIu64 " (seed %" PRIu64 ")",
                  r.a.g.level, layout_name (layout), r.a.n, w, off, len, s, seed);

        predict (&r, &row, &mo, off, len, &pr);
        stripe_cache_stats (r.c, &before);
        reads0 = pages_of (&r, MEMBER_READ);
        writes0 = pages_of (&r, MEMBER_WRITE);
        for (int m = 0; m < r.a.n; m++) {
          wrote[m] = mem_member_stats (r.a.m[m])->requests[MEMBER_WRITE];
          flushed[m] = mem_member_stats (r.a.m[m])->requests[MEMBER_FLUSH];
        }
        rnd_fill (buf, len);
        ck_assert_int_eq (array_write (&r, s * rowbytes + off, len, buf,
                                       fua), 0);
        for (int m = 0; m < r.a.n; m++) {
          const struct mem_stats *st = mem_member_stats (r.a.m[m]);

          ck_assert_msg (st->requests[MEMBER_FLUSH] - flushed[m] ==
                         (fua && st->requests[MEMBER_WRITE] > wrote[m]),
                         "%s%s: member %d flushed %" PRIu64 " times", what,
                         fua ? " with FUA" : "", m,
                         st->requests[MEMBER_FLUSH] - flushed[m]);
        }
        stripe_cache_stats (r.c, &after);

        ck_assert_msg (after.full - before.full == pr.full, "%s: full-row "
                       "count", what);
        if (!pr.full) {
          ck_assert_msg (after.rmw - before.rmw == pr.rmw &&
                         after.rcw - before.rcw == !pr.rmw,
                         "%s: the method is %s, md's rule says %s", what,
                         after.rmw != before.rmw ? "RMW" : "RCW",
                         pr.rmw ? "RMW" : "RCW");
          seen_rmw += pr.rmw;
          seen_rcw += !pr.rmw;
        }
        ck_assert_msg (after.reads - before.reads == pr.reads, "%s: the "
                       "cache counts %" PRIu64 " page reads, md's rule %u",
                       what, after.reads - before.reads, pr.reads);
        ck_assert_msg (pages_of (&r, MEMBER_READ) - reads0 == pr.reads,
                       "%s: the members read %" PRIu64 " pages, md's rule "
                       "says %u", what, pages_of (&r, MEMBER_READ) - reads0,
                       pr.reads);
        ck_assert_msg (pages_of (&r, MEMBER_WRITE) - writes0 == pr.writes,
                       "%s: %" PRIu64 " pages written, expected %u", what,
                       pages_of (&r, MEMBER_WRITE) - writes0, pr.writes);
        model_update (&r, &row, &mo, off, len, pr.rmw && !pr.full, pr.full);
        check_row (&r, s, what);
      }
      /* The sequence really exercised both methods (with two data
       * chunks RMW never reads fewer pages, as in md).
       */
      ck_assert_msg (seen_rcw > 10 && (r.a.g.data_disks < 3 || seen_rmw > 3),
                     "RAID-%d %s of %d: %u RMW, %u RCW", r.a.g.level,
                     layout_name (layout), r.a.n, seen_rmw, seen_rcw);
      rig_free (&r);
    }
}
END_TEST

/* (3) Reconstruction and rebuild. */

static void
set_state (struct member *m, enum member_state state, uint64_t recovery)
{
  atomic_store (&m->recovery_stripe, recovery);
  atomic_store (&m->state, state);
}

/* Rebuild member b in windows of 1 to 4 rows, as jobs.c does, over
 * scribbled bytes, from a cold cache.  With `writes`, a write somewhere in
 * the array after each window (rows not yet rebuilt are written too, and
 * reconstructed for it; rows the writes left partly valid in the cache
 * need fewer reads or none).
 */
static void
rebuild_member (struct rig *r, int b, bool writes, const char *what)
{
  uint8_t buf[2 * CHUNK];
  struct stripe_head *sh[4];

  rnd_fill (member_chunk (r, b, 0), r->a.g.stripes * CHUNK);
  set_state (r->a.m[b], MEMBER_REBUILDING, 0);
  rig_recache (r);              /* its bytes changed behind the cache */
  for (uint64_t s = 0, n; s < r->a.g.stripes; s += n) {
    uint64_t len = 1 + rnd_below (sizeof buf);
    int ret;

    n = 1 + rnd_below (4);
    if (n > r->a.g.stripes - s)
      n = r->a.g.stripes - s;
    for (uint64_t k = 0; k < n; k++)
      sh[k] = stripe_cache_get (r->c, s + k);
    ret = stripe_rebuild_rows (r->c, sh, n, b);
    for (uint64_t k = n; k-- > 0;)
      stripe_cache_put (r->c, sh[k]);
    ck_assert_msg (ret == 0, "%s: stripe_rebuild_rows of rows %" PRIu64
                   "..%" PRIu64 ": %s", what, s, s + n - 1, strerror (errno));
    set_state (r->a.m[b], MEMBER_REBUILDING, s + n);
    if (!writes)
      continue;
    rnd_fill (buf, len);
    ck_assert_msg (array_write (r, rnd_below (r->a.g.array_size - len + 1), len,
                                buf, false) == 0, "%s: a write during the "
                   "rebuild: %s", what, strerror (errno));
  }
  set_state (r->a.m[b], MEMBER_IN_SYNC, 0);
  check_all (r, what);
}

/* Degraded reads with `failed` (a bit per member) failed. */
static void
degraded_reads (struct rig *r, unsigned int failed, const char *what)
{
  uint64_t row = r->a.g.stripe_data_bytes;

  for (int m = 0; m < r->a.n; m++)
    if (failed & (1u << m))
      set_state (r->a.m[m], MEMBER_FAILED, 0);
  rig_recache (r);
  check_read (r, 0, r->a.g.array_size, what);
  for (int i = 0; i < 10; i++) {          /* and pieces, cached or not */
    uint64_t len = 1 + rnd_below (row + 1), off;

    off = rnd_below (r->a.g.array_size - len + 1);
    check_read (r, off, len, what);
  }
  for (int m = 0; m < r->a.n; m++)
    if (failed & (1u << m))
      set_state (r->a.m[m], MEMBER_IN_SYNC, 0);
}

START_TEST (test_recover)
{
  reseed (3);
  for (size_t k = 0; k < NCONFIGS; k++)
    for (int layout = 0; layout < NLAYOUTS; layout++) {
      struct rig r;
      char what[96];

      rig_init (&r, configs[k].level, layout, configs[k].n, configs[k].n, 4);
      fill_array (&r);
      for (int a = 0; a < r.a.n; a++) {
        if (r.a.g.level == 5) {
          snprintf (what, sizeof what, "member %d failed", a);
          degraded_reads (&r, 1u << a, what);
          snprintf (what, sizeof what, "member %d rebuilt", a);
          rebuild_member (&r, a, true, what);
          continue;
        }
        for (int b = a + 1; b < r.a.n; b++) {
          snprintf (what, sizeof what, "members %d and %d failed", a, b);
          degraded_reads (&r, 1u << a | 1u << b, what);
          /* b rebuilt while a is failed, then the other way round (a
           * missed the writes made meanwhile: it is rebuilt, not put
           * back), then b again, with nothing failed.
           */
          snprintf (what, sizeof what, "member %d rebuilt, %d failed", b, a);
          set_state (r.a.m[a], MEMBER_FAILED, 0);
          rebuild_member (&r, b, true, what);
          snprintf (what, sizeof what, "member %d rebuilt, %d failed", a, b);
          set_state (r.a.m[b], MEMBER_FAILED, 0);
          rebuild_member (&r, a, true, what);
          snprintf (what, sizeof what, "member %d rebuilt", b);
          rebuild_member (&r, b, true, what);
        }
      }
      /* One failure too many: the read fails, and says so. */
      {
        uint8_t buf[512];
        unsigned int too_many = r.a.g.level == 5 ? 3u : 7u;

        for (int m = 0; m < r.a.n; m++)
          if (too_many & (1u << m))
            set_state (r.a.m[m], MEMBER_FAILED, 0);
        rig_recache (&r);
        errno = 0;
        ck_assert_int_eq (array_read (&r, 0, sizeof buf, buf), -1);
        ck_assert_int_eq (errno, EIO);
      }
      rig_free (&r);
    }
}
END_TEST

/* A RAID-6 rebuild with only the rebuilt member lost reads one parity,
 * not two (stripe_recover.c, rebuild_skip): members - 2 chunks a row,
 * every row read once, from a cold cache; and what it writes is still
 * the member's reference bytes, in the rows where it holds data, P or Q.
 */
START_TEST (test_rebuild_reads)
{
  reseed (4);
  for (int layout = 0; layout < NLAYOUTS; layout++)
    for (int b = 0; b < 6; b++) {
      struct rig r;
      char what[64];
      uint64_t reads0;

      snprintf (what, sizeof what, "layout %d, member %d rebuilt", layout, b);
      rig_init (&r, 6, layout, 6, 8, 4);
      fill_array (&r);
      reads0 = pages_of (&r, MEMBER_READ);
      rebuild_member (&r, b, false, what);
      ck_assert_msg (pages_of (&r, MEMBER_READ) - reads0 ==
                     r.a.g.stripes * 4 * (CHUNK / PAGE),
                     "%s: %" PRIu64 " pages read, %" PRIu64 " expected", what,
                     pages_of (&r, MEMBER_READ) - reads0,
                     r.a.g.stripes * 4 * (CHUNK / PAGE));
      rig_free (&r);
    }
}
END_TEST

/* (4) Scrub. */

static int
scrub_row (struct rig *r, uint64_t s, bool repair, struct stripe_scrub *out)
{
  uint8_t *scratch = aligned_alloc (PAGE, STRIPE_SCRUB_SCRATCH);
  struct stripe_head *sh = stripe_cache_get (r->c, s);
  int ret;

  ck_assert (scratch && sh);
  ret = stripe_scrub_row (r->c, sh, repair, scratch, out);
  stripe_cache_put (r->c, sh);
  free (scratch);
  return ret;
}

/* Corrupt page pg of member m in row s: every byte, or a few (distinct
 * bytes, each changed).
 */
static void
corrupt (struct rig *r, int m, uint64_t s, int pg)
{
  uint8_t *p = member_chunk (r, m, s) + pg * PAGE;
  unsigned int n = rnd_below (2) ? PAGE : 1 + rnd_below (8);
  unsigned int start = rnd_below (PAGE);

  for (unsigned int i = 0; i < n; i++)
    p[(start + i * 509) % PAGE] ^= 1 + rnd_below (255);
}

START_TEST (test_scrub)
{
  const struct config cfgs[] = { { 5, 4 }, { 6, 6 }, { 6, 5 } };
  const int layouts[] = { LAYOUT_LEFT_SYMMETRIC, LAYOUT_LEFT_ASYMMETRIC,
                          LAYOUT_RIGHT_ASYMMETRIC, LAYOUT_PARITY_FIRST };

  reseed (4);
  for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++)
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
      struct rig r;

      rig_init (&r, cfgs[k].level, layouts[l], cfgs[k].n, cfgs[k].n, 4);
      fill_array (&r);
      for (uint64_t s = 0; s < r.a.g.stripes; s++) {
        struct ref_row row;
        /* What to corrupt: P, Q (RAID-6), each data chunk. */
        int targets[MAXM + 2], nt = 0;

        ref_layout (r.a.g.level, layouts[l], r.a.n, s, &row);
        targets[nt++] = row.p;
        if (row.q >= 0)
          targets[nt++] = row.q;
        for (int i = 0; i < r.a.g.data_disks; i++)
          targets[nt++] = row.data[i];

        for (int t = 0; t < nt; t++) {
          int m = targets[t], pg = rnd_below (CHUNK / PAGE);
          bool data = m != row.p && m != row.q;
          struct stripe_scrub out;
          char what[128];

          snprintf (what, sizeof what, "RAID-%d %s of %d, row %" PRIu64
                    ", page %d of member %d (%s) corrupted (seed %" PRIu64
                    ")", r.a.g.level, layout_name (layouts[l]), r.a.n, s, pg, m,
                    m == row.p ? "P" : m == row.q ? "Q" : "data", seed);
          ck_assert_int_eq (scrub_row (&r, s, false, &out), 0);
          ck_assert_msg (out.mismatches == 0, "%s: mismatch before", what);
          corrupt (&r, m, s, pg);
          ck_assert_int_eq (scrub_row (&r, s, false, &out), 0);
          ck_assert_msg (out.mismatches == 1, "%s: %u mismatches", what,
                         out.mismatches);
          if (r.a.g.level == 6)
            ck_assert_msg (out.bad_data_member == (data ? m : -1),
                           "%s: bad_data_member %d", what,
                           out.bad_data_member);
          else
            ck_assert_int_eq (out.bad_data_member, -1);
          if (data && r.a.g.level == 5) {
            /* Nothing says which member is wrong: restore it by hand. */
            uint8_t ref[CHUNK];

            ref_chunk (&r, s, m, ref);
            memcpy (member_chunk (&r, m, s), ref, CHUNK);
            continue;
          }
          ck_assert_int_eq (scrub_row (&r, s, true, &out), 0);
          ck_assert_msg (out.mismatches == 1, "%s: repair saw %u mismatches",
                         what, out.mismatches);
          check_row (&r, s, what);
          ck_assert_int_eq (scrub_row (&r, s, false, &out), 0);
          ck_assert_msg (out.mismatches == 0, "%s: a mismatch after the "
                         "repair", what);
        }
      }
      rig_recache (&r);         /* RAID-5's data restored behind it */
      check_read (&r, 0, r.a.g.array_size, "after the scrubs");
      rig_free (&r);
    }
}
END_TEST

/* (5) Members failing during a write. */

/* The members a write of [off, off+len) in row s writes to. */
static unsigned int
touched_members (struct rig *r, uint64_t s, uint64_t off, uint64_t len)
{
  struct ref_row row;
  unsigned int set = 0;

  ref_layout (r->a.g.level, r->a.g.layout, r->a.n, s, &row);
  for (int i = 0; i < r->a.g.data_disks; i++) {
    uint64_t ws, we;

    written_range (off, len, i, &ws, &we);
    if (ws < we)
      set |= 1u << row.data[i];
  }
  set |= 1u << row.p;
  if (row.q >= 0)
    set |= 1u << row.q;
  return set;
}

static int
pick_member (unsigned int set, unsigned int failed)
{
  int choice[MAXM], n = 0;

  for (int m = 0; m < MAXM; m++)
    if ((set & (1u << m)) && !(failed & (1u << m)))
      choice[n++] = m;
  ck_assert_int_gt (n, 0);
  return choice[rnd_below (n)];
}

START_TEST (test_faults)
{
  const struct config cfgs[] = { { 5, 4 }, { 6, 6 } };
  static const int errs[] = {
    EIO, ENOTCONN, MEMBER_ESHORT, ETIMEDOUT, ENODATA, ENODEV,
  };

  reseed (5);
  for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++)
    for (int layout = 0; layout < NLAYOUTS; layout++)
      for (int trial = 0; trial < 6; trial++) {
        struct rig r;
        uint64_t rowbytes, s;
        unsigned int failed = 0, nfailed = 0;
        unsigned int tolerance = cfgs[k].level == 6 ? 2 : 1;
        uint8_t buf[4 * CHUNK];

        rig_init (&r, cfgs[k].level, layout, cfgs[k].n, cfgs[k].n, 4);
        rowbytes = r.a.g.stripe_data_bytes;
        fill_array (&r);
        rig_recache (&r);       /* so that writes need reads */
        s = rnd_below (r.a.g.stripes);
        for (int attempt = 0; nfailed <= tolerance; attempt++) {
          uint64_t len = 1 + rnd_below (rowbytes < sizeof buf ? rowbytes
                                         : sizeof buf);
          uint64_t off = rnd_below (rowbytes - len + 1);
          int m = pick_member (touched_members (&r, s, off, len), failed);
          /* In odd trials the first fault is a read fault: the row is
           * forgotten first, so that the write reads from the members.
           */
          enum member_op op = nfailed == 0 && trial % 2 ? MEMBER_READ
            : MEMBER_WRITE;
          int err = errs[(trial + nfailed) % (sizeof errs / sizeof errs[0])];
          char what[200];
          int ret;

          ck_assert_int_lt (attempt, 50);
          snprintf (what, sizeof what, "RAID-%d %s of %d, row %" PRIu64
                    ", fault %u: member %d fails its %ss (%s) during [%"
                    PRIu64 ", +%" PRIu64 ") (seed %" PRIu64 ")",
                    r.a.g.level, layout_name (layout), r.a.n, s, nfailed, m,
                    op == MEMBER_READ ? "read" : "write", strerror (err),
                    off, len, seed);
          rnd_fill (buf, len);
          mem_member_reset_stats (r.a.m[m]);
          mem_member_fail_from_errno (r.a.m[m], op, 0, err);
          if (op == MEMBER_READ) {
            struct stripe_head *sh = stripe_cache_get (r.c, s);

            stripe_head_invalidate (r.c, sh);
            stripe_cache_put (r.c, sh);
          }
          ret = array_write (&r, s * rowbytes + off, len, buf, false);
          if (mem_member_stats (r.a.m[m])->failed[op] == 0) {
            /* The write did not read from m after all: m is well. */
            ck_assert_msg (ret == 0 && !member_failed (r.a.m[m]), "%s: the "
                           "write failed with no fault met", what);
            mem_member_heal (r.a.m[m]);
            check_row (&r, s, what);
            continue;
          }
          ck_assert_msg (member_failed (r.a.m[m]), "%s: not failed", what);
          failed |= 1u << m;
          nfailed++;
          if (nfailed <= tolerance) {
            ck_assert_msg (ret == 0, "%s: the write failed: %s", what,
                           strerror (errno));
            check_row (&r, s, what);
            check_read (&r, s * rowbytes, rowbytes, what);
            rig_recache (&r);
            check_read (&r, s * rowbytes, rowbytes, what);
          }
          else
            ck_assert_msg (ret == -1 && errno == EIO, "%s: one failure too "
                           "many, and the write returned %d", what, ret);
        }
        rig_free (&r);
      }
}
END_TEST

/* (6) A member that becomes readable at a row while a request on the
 * row is reading: a re-add (jobs.c) moves its recovery offset over rows
 * the bitmap says are clean without taking their locks.  The request must
 * keep to one view of which members it reads and which it reconstructs:
 * the view it read with.
 */

struct jump {
  struct member *m;
  uint64_t to;
};

static void
jump_recovery (void *arg)
{
  const struct jump *j = arg;

  member_rebuilt_to (j->m, j->to);
}

/* Member a is re-added (rebuilding, its bytes right: the row's bit is
 * clear), row s not yet reached; b (-1: none) is failed.  Just before
 * another member's first read of the request, a's recovery offset jumps
 * past s.  A read of the row, then a write to part of it, must see and
 * leave the shadow's bytes.
 */
static void
jump_during (struct rig *r, int a, int b, uint64_t s, bool write,
             const char *what)
{
  uint64_t rowbytes = r->a.g.stripe_data_bytes;
  struct jump j = { r->a.m[a], s + 1 };
  int other = 0;

  while (other == a || other == b)
    other++;
  set_state (r->a.m[a], MEMBER_REBUILDING, s);
  if (b >= 0)
    set_state (r->a.m[b], MEMBER_FAILED, 0);
  rig_recache (r);
  mem_member_before (r->a.m[other], MEMBER_READ, jump_recovery, &j);
  if (write) {
    uint8_t buf[CHUNK];
    uint64_t len = 1 + rnd_below (CHUNK), off = rnd_below (rowbytes - len + 1);

    rnd_fill (buf, len);
    ck_assert_msg (array_write (r, s * rowbytes + off, len, buf, false) == 0,
                   "%s: the write failed: %s", what, strerror (errno));
    check_row (r, s, what);
    rig_recache (r);
  }
  check_read (r, s * rowbytes, rowbytes, what);
  mem_member_before (r->a.m[other], MEMBER_READ, NULL, NULL);
  set_state (r->a.m[a], MEMBER_IN_SYNC, 0);
  if (b >= 0) {
    /* b missed nothing only if nothing was written: rebuild it. */
    rebuild_member (r, b, true, what);
  }
}

START_TEST (test_jump)
{
  reseed (6);
  for (size_t k = 0; k < NCONFIGS; k++)
    for (int layout = 0; layout < NLAYOUTS; layout++) {
      struct rig r;

      rig_init (&r, configs[k].level, layout, configs[k].n, configs[k].n, 4);
      fill_array (&r);
      for (int a = 0; a < r.a.n; a++)
        for (int b = -1; b < (r.a.g.level == 6 ? r.a.n : 0); b++)
          for (int write = 0; write <= 1; write++) {
            uint64_t s = rnd_below (r.a.g.stripes);
            char what[128];

            if (b == a)
              continue;
            snprintf (what, sizeof what, "member %d re-added past row %"
                      PRIu64 " during a %s%s", a, s,
                      write ? "write" : "read", b >= 0 ? ", another failed"
                      : "");
            jump_during (&r, a, b, s, write, what);
          }
      rig_free (&r);
    }
}
END_TEST

/* (6) Media errors. */

/* The member offset of page pg of row s. */
static uint64_t
page_offset (struct rig *r, uint64_t s, int pg)
{
  return geometry_member_offset (&r->a.g, s) + (uint64_t) pg * PAGE;
}

static uint64_t
corrected (struct rig *r, int m)
{
  return atomic_load (&r->a.m[m]->corrected_reads);
}

/* The array range of data chunk page pg of row s held by member m, or
 * false if m holds parity there.
 */
static bool
data_page_range (struct rig *r, uint64_t s, int m, int pg, uint64_t *off)
{
  struct stripe_map map;

  geometry_map_stripe (&r->a.g, s, &map);
  for (int i = 0; i < r->a.g.data_disks; i++)
    if (map.data_member[i] == m) {
      *off = s * r->a.g.stripe_data_bytes + (uint64_t) i * CHUNK
        + (uint64_t) pg * PAGE;
      return true;
    }
  return false;
}

START_TEST (test_media)
{
  reseed (7);
  for (size_t k = 0; k < NCONFIGS; k++) {
    struct rig r;
    char what[96];
    int n = configs[k].n, level = configs[k].level;
    uint64_t s, off;
    int m, pg;

    rig_init (&r, level, LAYOUT_LEFT_SYMMETRIC, n, 6, 4);
    fill_array (&r);

    /* Correctable: served, written back, the member stays. */
    s = rnd_below (r.a.g.stripes);
    m = rnd_below (n);
    pg = rnd_below (CHUNK / PAGE);
    snprintf (what, sizeof what, "RAID-%d of %d, member %d unreadable at "
              "row %" PRIu64 " page %d", level, n, m, s, pg);
    mem_member_unreadable (r.a.m[m], page_offset (&r, s, pg), PAGE, true);
    rig_recache (&r);
    check_read (&r, 0, r.a.g.array_size, what);
    ck_assert_msg (member_state (r.a.m[m]) == MEMBER_IN_SYNC,
                   "%s: the member failed", what);
    ck_assert_msg (mem_member_readable (r.a.m[m], page_offset (&r, s, pg),
                                        PAGE), "%s: not rewritten", what);
    ck_assert_msg (corrected (&r, m) == 1, "%s: %" PRIu64 " corrections "
                   "counted", what, corrected (&r, m));
    check_all (&r, what);

    /* A page the cache holds (a write left it valid) whose direct read
     * failed: stripe_read_again reads it from the member all the same,
     * and corrects it.
     */
    {
      int d = -1;
      uint64_t s2 = s, off2 = 0;
      uint8_t buf[PAGE];
      struct stripe_head *sh;

      for (uint64_t t = 0; d < 0 && t < r.a.g.stripes; t++)
        for (int x = 0; x < n && d < 0; x++)
          if (x != m && data_page_range (&r, t, x, pg, &off2)) {
            d = x;
            s2 = t;
          }
      rnd_fill (buf, PAGE);
      ck_assert_int_eq (array_write (&r, off2, PAGE, buf, false), 0);
      mem_member_unreadable (r.a.m[d], page_offset (&r, s2, pg), PAGE, true);
      sh = stripe_cache_get (r.c, s2);
      ck_assert_int_eq (stripe_read_again (r.c, sh,
                                           off2 % r.a.g.stripe_data_bytes,
                                           PAGE, buf), 0);
      stripe_cache_put (r.c, sh);
      ck_assert_msg (memcmp (buf, r.shadow + off2, PAGE) == 0 &&
                     corrected (&r, d) == 1 &&
                     mem_member_readable (r.a.m[d], page_offset (&r, s2, pg),
                                          PAGE), "%s: a cached page read "
                     "again was not corrected", what);
    }

    /* Not fixable: the rewrite reads back wrong, the member fails, the
     * read is still right.
     */
    snprintf (what, sizeof what, "RAID-%d of %d, member %d unfixable at "
              "row %" PRIu64 " page %d", level, n, m, s, pg);
    mem_member_unreadable (r.a.m[m], page_offset (&r, s, pg), PAGE, false);
    rig_recache (&r);
    check_read (&r, s * r.a.g.stripe_data_bytes, r.a.g.stripe_data_bytes,
                what);
    ck_assert_msg (member_failed (r.a.m[m]), "%s: the member is not failed",
                   what);
    rig_free (&r);

    /* Lost on one member more than the level tolerates, at one page: a
     * read of it fails, the row's other pages read.
     */
    rig_init (&r, level, LAYOUT_LEFT_SYMMETRIC, n, 6, 4);
    fill_array (&r);
    s = rnd_below (r.a.g.stripes);
    pg = rnd_below (CHUNK / PAGE);
    for (m = 0; m < level - 4; m++)       /* as many as the level takes */
      set_state (r.a.m[m], MEMBER_FAILED, 0);
    mem_member_unreadable (r.a.m[m], page_offset (&r, s, pg), PAGE, true);
    snprintf (what, sizeof what, "RAID-%d of %d, %d failed, member %d "
              "unreadable at row %" PRIu64 " page %d", level, n, m, m, s, pg);
    rig_recache (&r);
    for (int p = 0; p < CHUNK / PAGE; p++)
      for (int d = 0; d <= m; d++)
        if (data_page_range (&r, s, d, p, &off)) {
          uint8_t buf[PAGE];

          if (p != pg) {
            check_read (&r, off, PAGE, what);
            continue;
          }
          errno = 0;
          ck_assert_msg (array_read (&r, off, PAGE, buf) == -1 &&
                         errno == EIO, "%s: a read of a lost page "
                         "did not fail with EIO", what);
        }
    ck_assert_msg (member_state (r.a.m[m]) == MEMBER_IN_SYNC,
                   "%s: the unreadable member failed", what);
    rig_free (&r);

    /* A rebuild gets past a survivor's unreadable page (RAID-6: with
     * nothing else lost; RAID-5 cannot), and stops at one it cannot
     * reconstruct, failing nobody.
     */
    rig_init (&r, level, LAYOUT_LEFT_SYMMETRIC, n, 6, 4);
    fill_array (&r);
    pg = rnd_below (CHUNK / PAGE);
    do                          /* a data page: a RAID-6 rebuild that */
      s = rnd_below (r.a.g.stripes);    /* lost one member skips a parity */
    while (!data_page_range (&r, s, 1, pg, &off));
    mem_member_unreadable (r.a.m[1], page_offset (&r, s, pg), PAGE, true);
    snprintf (what, sizeof what, "RAID-%d of %d, member 0 rebuilt, member 1 "
              "unreadable at row %" PRIu64 " page %d", level, n, s, pg);
    if (level == 6) {
      rebuild_member (&r, 0, false, what);
      ck_assert_msg (member_state (r.a.m[1]) == MEMBER_IN_SYNC &&
                     corrected (&r, 1) == 1, "%s: member 1 not corrected "
                     "(state %d, %" PRIu64 " corrections)", what,
                     member_state (r.a.m[1]), corrected (&r, 1));
    }
    else {
      struct stripe_head *sh;

      set_state (r.a.m[0], MEMBER_REBUILDING, 0);
      rig_recache (&r);
      sh = stripe_cache_get (r.c, s);
      errno = 0;
      ck_assert_msg (stripe_rebuild_rows (r.c, &sh, 1, 0) == -1 &&
                     errno == EIO, "%s: the rebuild of the row did not "
                     "fail with EIO", what);
      stripe_cache_put (r.c, sh);
      ck_assert_msg (member_state (r.a.m[1]) == MEMBER_IN_SYNC,
                     "%s: member 1 failed", what);
    }
    rig_free (&r);
  }
}
END_TEST

static Suite *
stripe_suite (void)
{
  const struct check_case cases[] = {
    { "random", test_random_writes },
    { "method", test_method },
    { "recover", test_recover },
    { "rebuild reads", test_rebuild_reads },
    { "scrub", test_scrub },
    { "faults", test_faults },
    { "jump", test_jump },
    { "media", test_media },
  };

  return check_suite ("stripe", CHECK_CASES (cases), 60);
}

int
main (void)
{
  const char *env = getenv ("STRIPE_TEST_SEED");

  /* Fresh and freed memory filled with a pattern: a head's page that was
   * neither read nor reconstructed holds it, never, by the chance of a
   * recycled buffer, the bytes it should have held.
   */
  mallopt (M_PERTURB, 0x5a);
  seed = env ? strtoull (env, NULL, 0) : (uint64_t) time (NULL);
  printf ("test_stripe: seed %" PRIu64 " (replay with STRIPE_TEST_SEED=%"
          PRIu64 ")\n", seed, seed);
  gf_init ();
  return check_run (stripe_suite (), false);
}
