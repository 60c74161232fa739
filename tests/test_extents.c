/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: the array's extents (plugin/extents.c) against in-memory
 * members that keep allocation by 4 KiB block (member_mem.c), checked
 * row by row against a reference that asks each member about each row
 * directly.
 *
 *  empty      a new array is one hole, for one question per member
 *  full       a written one is one data extent, for one question each
 *  cannot     a member that cannot tell makes every row data, unless it
 *             has failed (then it is not asked)
 *  eio        more members failed than the level tolerates: EIO
 *  budget     a member with data in every other row: the answer stops
 *             within its budget of questions (8 per member) or at max,
 *             and a client that asks again from where it stopped gets
 *             the whole map
 *  random     random levels, layouts, chunk sizes, allocation patterns
 *             and member states (failed, rebuilding at a random row, a
 *             member that cannot tell; rows past the tolerance), random
 *             requests and limits; RAID_TEST_SEED replays a run
 *
 * The contract checked on every answer: the first extent starts at the
 * request's offset, each starts where the one before ended, every other
 * boundary is a row's, the answer ends inside the last row the request
 * touches, and stops short of the request's end only at max extents or
 * with its questions spent; each row is a hole exactly when the
 * reference says so: every member readable in the row has no allocated
 * block in its chunk of it, and the row has no more members unreadable
 * than the level tolerates.
 * CK_RUN_CASE=name runs one.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <check.h>

#include "check_run.h"
#include "random_seed.h"

#include "extents.h"
#include "geometry.h"
#include "member.h"
#include "mem_array.h"
#include "member_mem.h"
#include "member_table.h"

#define DATA_OFFSET 8192
#define MAXM MEM_ARRAY_MAX
#define BLOCK 4096

/* The rig: an array of in-memory members (mem_array.c). */
static void
rig_init (struct mem_array *r, int level, enum geometry_layout layout, int n,
          uint64_t chunk, uint64_t rows)
{
  mem_array_init (r, level, layout, n, chunk, DATA_OFFSET, rows);
}

/* Write len bytes of 0xa5 at member offset off (allocates its blocks). */
static void
put (struct member *m, uint64_t off, uint64_t len)
{
  uint8_t *buf = malloc (len);
  struct member_io io = { .member = m, .op = MEMBER_WRITE, .buf = buf,
                          .len = len, .offset = off };

  ck_assert (buf != NULL);
  memset (buf, 0xa5, len);
  ck_assert_int_eq (member_io_run (&io, 1), 0);
  free (buf);
}

static void
set_state (struct member *m, enum member_state st, uint64_t recovery)
{
  atomic_store (&m->recovery_stripe, recovery);
  atomic_store (&m->state, st);
}

static uint64_t
data_runs (const struct mem_array *r)
{
  uint64_t q = 0;

  for (int i = 0; i < r->n; i++)
    q += mem_member_data_runs (r->m[i]);
  return q;
}

/* The reference: a row is a hole when it can be served and no member
 * readable there has an allocated block in its chunk of it (a member
 * that cannot tell: allocated everywhere).
 */
static bool *tells_of;          /* per role, set by the random case */

static bool
ref_hole (const struct mem_array *r, uint64_t row)
{
  int unreadable = 0;

  for (int i = 0; i < r->n; i++)
    unreadable += !member_readable (r->m[i], row);
  if (unreadable > r->ms.tolerance)
    return false;
  for (int i = 0; i < r->n; i++) {
    if (!member_readable (r->m[i], row))
      continue;
    if ((tells_of && !tells_of[i]) ||
        mem_member_allocated (r->m[i], geometry_member_offset (&r->g, row),
                              r->g.chunk))
      return false;
  }
  return true;
}

/* One request, checked against the contract and the reference; returns
 * where its answer ends.
 */
static uint64_t
check_request (struct mem_array *r, uint64_t offset, uint64_t count, int max,
               const char *what)
{
  struct extent ext[EXTENTS_MAX];
  const uint64_t rowb = r->g.stripe_data_bytes;
  uint64_t q0 = data_runs (r), q, end, rend;
  int n = extents_map (&r->g, &r->ms, offset, count, ext, max, NULL);

  q = data_runs (r) - q0;
  ck_assert_msg (n >= 1 && n <= max, "%s: %d extents (max %d)", what, n, max);
  ck_assert_msg (q <= 8 * (uint64_t) r->n, "%s: %" PRIu64 " questions",
                 what, q);
  ck_assert_msg (ext[0].offset == offset, "%s: starts at %" PRIu64
                 ", asked %" PRIu64, what, ext[0].offset, offset);
  for (int i = 0; i < n; i++) {
    ck_assert_msg (ext[i].length > 0, "%s: extent %d empty", what, i);
    if (i > 0)
      ck_assert_msg (ext[i].offset == ext[i - 1].offset + ext[i - 1].length,
                     "%s: extent %d does not follow the one before", what, i);
    end = ext[i].offset + ext[i].length;
    ck_assert_msg (end % rowb == 0, "%s: extent %d ends at %" PRIu64
                   ", inside a row", what, i, end);
    for (uint64_t row = ext[i].offset / rowb; row * rowb < end; row++)
      ck_assert_msg (ref_hole (r, row) == ext[i].zero, "%s: row %" PRIu64
                     " said %s, is %s", what, row,
                     ext[i].zero ? "hole" : "data",
                     ref_hole (r, row) ? "hole" : "data");
  }
  end = ext[n - 1].offset + ext[n - 1].length;
  rend = (offset + count + rowb - 1) / rowb * rowb;
  ck_assert_msg (end <= rend, "%s: ends at %" PRIu64 " past the last row "
                 "(%" PRIu64 ")", what, end, rend);
  ck_assert_msg (end >= offset + count || n == max ||
                 q == 8 * (uint64_t) r->n, "%s: stopped at %" PRIu64
                 " (asked up to %" PRIu64 ") with %d extents and %" PRIu64
                 " questions", what, end, offset + count, n, q);
  return end;
}

/* A client's walk over [offset, offset + count): ask again from where
 * each answer stopped.
 */
static void
walk (struct mem_array *r, uint64_t offset, uint64_t count, int max,
      const char *what)
{
  uint64_t end = offset + count;

  while (offset < end) {
    uint64_t got = check_request (r, offset, end - offset, max, what);

    ck_assert_msg (got > offset, "%s: no progress at %" PRIu64, what, offset);
    offset = got;
  }
}

START_TEST (test_empty)
{
  struct mem_array r;
  struct extent ext[EXTENTS_MAX];
  uint64_t q0;

  rig_init (&r, 6, LAYOUT_LEFT_SYMMETRIC, 6, 65536, 64);
  q0 = data_runs (&r);
  ck_assert_int_eq (extents_map (&r.g, &r.ms, 0, r.g.array_size, ext,
                                 EXTENTS_MAX, NULL), 1);
  ck_assert (ext[0].zero);
  ck_assert_uint_eq (ext[0].length, r.g.array_size);
  ck_assert_uint_eq (data_runs (&r) - q0, 6);
  mem_array_free (&r);
}
END_TEST

START_TEST (test_full)
{
  struct mem_array r;
  struct extent ext[EXTENTS_MAX];
  uint64_t q0;

  rig_init (&r, 5, LAYOUT_RIGHT_ASYMMETRIC, 4, 16384, 32);
  for (int i = 0; i < r.n; i++)
    put (r.m[i], DATA_OFFSET, 32 * 16384);
  q0 = data_runs (&r);
  ck_assert_int_eq (extents_map (&r.g, &r.ms, 100, r.g.array_size - 100,
                                 ext, EXTENTS_MAX, NULL), 1);
  ck_assert (!ext[0].zero);
  ck_assert_uint_eq (ext[0].offset, 100);
  ck_assert_uint_eq (ext[0].length, r.g.array_size - 100);
  ck_assert_uint_eq (data_runs (&r) - q0, 4);
  mem_array_free (&r);
}
END_TEST

START_TEST (test_cannot)
{
  struct mem_array r;
  struct extent ext[EXTENTS_MAX];

  rig_init (&r, 6, LAYOUT_LEFT_SYMMETRIC, 5, 4096, 16);
  mem_member_set_tells (r.m[2], false);
  ck_assert_int_eq (extents_map (&r.g, &r.ms, 0, r.g.array_size, ext,
                                 EXTENTS_MAX, NULL), 1);
  ck_assert (!ext[0].zero);
  set_state (r.m[2], MEMBER_FAILED, 0);
  ck_assert_int_eq (extents_map (&r.g, &r.ms, 0, r.g.array_size, ext,
                                 EXTENTS_MAX, NULL), 1);
  ck_assert (ext[0].zero);
  /* Rebuilding from row 5: readable (and so asked) below it. */
  set_state (r.m[2], MEMBER_REBUILDING, 5);
  ck_assert_int_eq (extents_map (&r.g, &r.ms, 0, r.g.array_size, ext,
                                 EXTENTS_MAX, NULL), 2);
  ck_assert (!ext[0].zero && ext[1].zero);
  ck_assert_uint_eq (ext[1].offset, 5 * r.g.stripe_data_bytes);
  mem_array_free (&r);
}
END_TEST

START_TEST (test_eio)
{
  struct mem_array r;
  struct extent ext[EXTENTS_MAX];

  rig_init (&r, 5, LAYOUT_LEFT_SYMMETRIC, 4, 4096, 8);
  set_state (r.m[0], MEMBER_FAILED, 0);
  ck_assert_int_eq (extents_map (&r.g, &r.ms, 0, 4096, ext, EXTENTS_MAX,
                                 NULL), 1);
  set_state (r.m[3], MEMBER_FAILED, 0);
  errno = 0;
  ck_assert_int_eq (extents_map (&r.g, &r.ms, 0, 4096, ext, EXTENTS_MAX,
                                 NULL), -1);
  ck_assert_int_eq (errno, EIO);
  mem_array_free (&r);
}
END_TEST

START_TEST (test_budget)
{
  struct mem_array r;
  const uint64_t rows = 400;

  rig_init (&r, 6, LAYOUT_LEFT_SYMMETRIC, 6, 4096, rows);
  for (uint64_t row = 0; row < rows; row += 2)
    put (r.m[1], geometry_member_offset (&r.g, row), 4096);
  /* 200 runs on member 1: no answer can hold them all. */
  walk (&r, 0, r.g.array_size, EXTENTS_MAX, "budget, max 64");
  walk (&r, 0, r.g.array_size, 1, "budget, max 1");
  walk (&r, 12345, r.g.array_size - 12345 - 999, 5, "budget, max 5");
  mem_array_free (&r);
}
END_TEST

START_TEST (test_random)
{
  uint64_t seed = random_seed ("test_extents");
  uint64_t x = seed;
  bool tells[MAXM];

  tells_of = tells;
  for (int round = 0; round < 300; round++) {
    struct mem_array r;
    int level = 5 + splitmix64 (&x) % 2;
    int n = level + 1 + splitmix64 (&x) % (MAXM - level - 1);
    uint64_t chunk = 4096 << (splitmix64 (&x) % 3);
    uint64_t rows = 1 + splitmix64 (&x) % 48;
    unsigned density = splitmix64 (&x) % 5;    /* 0, 25, 50, 75, 100% runs */
    char what[160];

    rig_init (&r, level, splitmix64 (&x) % 6, n, chunk, rows);
    for (int i = 0; i < n; i++) {
      uint64_t off = DATA_OFFSET, end = DATA_OFFSET + rows * chunk;

      tells[i] = splitmix64 (&x) % 16 != 0;
      mem_member_set_tells (r.m[i], tells[i]);
      while (off < end) {
        uint64_t len = BLOCK * (1 + splitmix64 (&x) % (3 * chunk / BLOCK));

        if (len > end - off)
          len = end - off;
        if (splitmix64 (&x) % 4 < density)
          put (r.m[i], off, len);
        off += len;
      }
    }
    /* States: up to the tolerance failed, some rebuilding (which may
     * put rows past it), now and then one failure too many.
     */
    for (int k = splitmix64 (&x) % (level - 3); k > 0; k--)
      set_state (r.m[splitmix64 (&x) % n], MEMBER_FAILED, 0);
    for (int k = splitmix64 (&x) % 3; k > 0; k--) {
      struct member *m = r.m[splitmix64 (&x) % n];

      if (!member_failed (m))
        set_state (m, MEMBER_REBUILDING, splitmix64 (&x) % (rows + 1));
    }
    if (splitmix64 (&x) % 20 == 0)
      for (int i = 0; i < n && members_can_serve (&r.ms); i++)
        if (!member_failed (r.m[i]))
          set_state (r.m[i], MEMBER_FAILED, 0);
    snprintf (what, sizeof what, "seed %" PRIu64 " round %d: RAID-%d %s, "
              "%d members, chunk %" PRIu64 ", %" PRIu64 " rows", seed, round,
              level, geometry_layout_name (r.g.layout), n, chunk, rows);
    if (!members_can_serve (&r.ms)) {
      struct extent ext[EXTENTS_MAX];

      ck_assert_msg (extents_map (&r.g, &r.ms, 0, 1, ext, EXTENTS_MAX,
                                  NULL) == -1 && errno == EIO,
                     "%s: served with too many members failed", what);
      mem_array_free (&r);
      continue;
    }
    walk (&r, 0, r.g.array_size, EXTENTS_MAX, what);
    for (int k = 0; k < 20; k++) {
      uint64_t offset = splitmix64 (&x) % r.g.array_size;
      uint64_t count = 1 + splitmix64 (&x) % (r.g.array_size - offset);
      static const int maxes[] = { 1, 2, 3, EXTENTS_MAX };

      check_request (&r, offset, count, maxes[splitmix64 (&x) % 4], what);
    }
    mem_array_free (&r);
  }
  tells_of = NULL;
}
END_TEST

static Suite *
extents_suite (void)
{
  const struct check_case cases[] = {
    { "empty", test_empty },
    { "full", test_full },
    { "cannot", test_cannot },
    { "eio", test_eio },
    { "budget", test_budget },
    { "random", test_random },
  };

  return check_suite ("extents", CHECK_CASES (cases), 120);
}

int
main (void)
{
  return check_run (extents_suite (), false);
}
