/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: md's write-intent bitmap (plugin/md_bitmap.c) as a state
 * machine, against in-memory members (member_mem.c): a bit is on every
 * working member before its write may start, bits are cleared lazily (a
 * bit touched in a pass waits for the next; a bit held by a write in
 * flight is never cleared; a flush of every member comes first), nothing
 * is cleared while a member has failed, not even by a pass during which
 * one fails, and after an unclean shutdown the rows under set bits, and
 * only those, are the resync's; a re-add's rows are those under set bits,
 * and md's count at the last clearing follows md's own back down.
 *
 * The oracle reads the members' bytes itself: the bitmap area's
 * superblock magic and events at their md offsets, and bit b at byte
 * 256 + b / 8, bit b % 8 of the area (md-bitmap.h's layout), never
 * through md_bitmap_super.c.  Every pass is driven by the test
 * (md_bitmap_sweep), not by the daemon's clock, so the cases are exact
 * and take milliseconds.  md v1.0 keeps the area before each member's
 * superblock at its end: members of different sizes have it at different
 * offsets (md's rule for the superblock's place, written out here).
 * CK_RUN_CASE=name runs one.
 */

#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "check_run.h"

#include "md_bitmap.h"
#include "member.h"
#include "member_mem.h"
#include "member_table.h"

#define N 4                     /* members (RAID-5) */
#define AREA 8192               /* the area's offset, as mdadm places it */
#define DATA_OFFSET (1024 * 1024)
#define CHUNK (64 * 1024)       /* the array's chunk: one row per member */
#define SIZE (64 * 1024 * 1024) /* each member's data */
#define BIT (1024 * 1024)       /* bytes of each member per bit */
#define ROWS_PER_BIT (BIT / CHUNK)
#define NBITS (SIZE / BIT)

static const uint8_t uuid[16] = "bitmap-test-uuid";

struct rig {
  struct members ms;
  struct member *m[N];
  struct md_bitmap_place place;
};

static void
rig_init (struct rig *r)
{
  members_init (&r->ms);
  for (int i = 0; i < N; i++) {
    char name[16];

    snprintf (name, sizeof name, "mem%d", i);
    r->m[i] = mem_member_new (name, DATA_OFFSET, 1);
  }
  members_arrange (&r->ms, r->m, N);
  members_set_level (&r->ms, 5);
  r->place = (struct md_bitmap_place) {
    .minor = 2, .bitmap_offset = (AREA - 4096) / 512,
    .data_offset = DATA_OFFSET, .size = SIZE, .chunk = CHUNK,
  };
}

static uint32_t
le32 (const uint8_t *p)
{
  return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t) p[3] << 24;
}

static uint64_t
le64 (const uint8_t *p)
{
  return le32 (p) | (uint64_t) le32 (p + 4) << 32;
}

/* Bit b as member i holds it. */
static bool
disk_bit (struct rig *r, int i, uint64_t b)
{
  return mem_member_data (r->m[i])[AREA + 256 + b / 8] >> (b % 8) & 1;
}

static uint64_t
disk_events (struct rig *r, int i)
{
  return le64 (mem_member_data (r->m[i]) + AREA + 24);
}

/* Bit b is `on` on every member in sync. */
static void
check_bit (struct rig *r, uint64_t b, bool on, const char *what)
{
  for (int i = 0; i < N; i++)
    if (member_state (r->m[i]) == MEMBER_IN_SYNC)
      ck_assert_msg (disk_bit (r, i, b) == on, "%s: bit %llu is %s on "
                     "member %d", what, (unsigned long long) b,
                     on ? "clear" : "set", i);
}

/* The same but for member skip (which missed writes while it had failed:
 * only a test brings a failed member back).
 */
static void
check_bit_but (struct rig *r, int skip, uint64_t b, bool on, const char *what)
{
  for (int i = 0; i < N; i++)
    if (i != skip)
      ck_assert_msg (disk_bit (r, i, b) == on, "%s: bit %llu is %s on "
                     "member %d", what, (unsigned long long) b,
                     on ? "clear" : "set", i);
}

static uint64_t
requests (struct rig *r, enum member_op op)
{
  uint64_t n = 0;

  for (int i = 0; i < N; i++)
    n += mem_member_stats (r->m[i])->requests[op];
  return n;
}

static void
reset_stats (struct rig *r)
{
  for (int i = 0; i < N; i++)
    mem_member_reset_stats (r->m[i]);
}

/* A new bitmap on disk with no bit set or needed: md_bitmap_new sets and
 * needs every bit (a new array's initial resync); resync them all, then
 * one pass clears them.
 */
static struct md_bitmap *
clean_bitmap (struct rig *r)
{
  const char *why = NULL;
  struct md_bitmap *bm = md_bitmap_new (&r->ms, &r->place, uuid, BIT, 5,
                                        &why);
  struct md_bitmap_stats st;

  ck_assert_msg (bm != NULL, "md_bitmap_new: %s", why);
  ck_assert_int_eq (md_bitmap_events (bm, 1), 0);
  for (int i = 0; i < N; i++) {
    ck_assert_uint_eq (le32 (mem_member_data (r->m[i]) + AREA), 0x6d746962);
    ck_assert_uint_eq (disk_events (r, i), 1);
  }
  check_bit (r, 0, true, "new");
  check_bit (r, NBITS - 1, true, "new");
  ck_assert_uint_eq (md_bitmap_needed_rows (bm), SIZE / CHUNK);
  for (uint64_t row = 0; row < SIZE / CHUNK; row++)
    md_bitmap_row_resynced (bm, row);
  ck_assert_uint_eq (md_bitmap_needed_regions (bm), 0);
  md_bitmap_sweep (bm);
  md_bitmap_stats (bm, &st);
  ck_assert_uint_eq (st.dirty, 0);
  for (uint64_t b = 0; b < NBITS; b++)
    check_bit (r, b, false, "after the initial resync and a pass");
  reset_stats (r);
  return bm;
}

/* A write's bit is on every member before write_begin returns, written
 * with FUA (no flush), once: a second write under it costs nothing.
 */
START_TEST (test_mark_before_write)
{
  struct rig r;
  struct md_bitmap *bm;
  uint64_t row = 5 * ROWS_PER_BIT + 3;

  rig_init (&r);
  bm = clean_bitmap (&r);
  ck_assert_int_eq (md_bitmap_write_begin (bm, row, row + 1), 0);
  check_bit (&r, 5, true, "write_begin returned");
  check_bit (&r, 4, false, "the bit before");
  check_bit (&r, 6, false, "the bit after");
  ck_assert_uint_eq (requests (&r, MEMBER_WRITE), N);
  ck_assert_uint_eq (requests (&r, MEMBER_FLUSH), 0);

  reset_stats (&r);
  ck_assert_int_eq (md_bitmap_write_begin (bm, row, row + 1), 0);
  ck_assert_uint_eq (requests (&r, MEMBER_WRITE), 0);
  md_bitmap_write_end (bm, row, row + 1);
  md_bitmap_write_end (bm, row, row + 1);

  /* Rows across a bit boundary take both bits. */
  ck_assert_int_eq (md_bitmap_write_begin (bm, 8 * ROWS_PER_BIT - 1,
                                           8 * ROWS_PER_BIT + 1), 0);
  check_bit (&r, 7, true, "first of two");
  check_bit (&r, 8, true, "second of two");
  md_bitmap_write_end (bm, 8 * ROWS_PER_BIT - 1, 8 * ROWS_PER_BIT + 1);
  md_bitmap_close (bm);
  members_destroy (&r.ms);
}
END_TEST

/* A bit touched in a pass waits for the next; the pass that clears it
 * flushes every member first; a write in flight holds its bit through
 * any number of passes, and once it has ended (its data is on the
 * members) the next pass may clear it.
 */
START_TEST (test_lazy_clearing)
{
  struct rig r;
  struct md_bitmap *bm;

  rig_init (&r);
  bm = clean_bitmap (&r);
  ck_assert_int_eq (md_bitmap_write_begin (bm, 0, 1), 0);
  md_bitmap_write_end (bm, 0, 1);
  ck_assert_int_eq (md_bitmap_write_begin (bm, 2 * ROWS_PER_BIT,
                                           2 * ROWS_PER_BIT + 1), 0);
  reset_stats (&r);

  md_bitmap_sweep (bm);
  check_bit (&r, 0, true, "touched during the last period");
  ck_assert_uint_eq (requests (&r, MEMBER_FLUSH), 0);

  md_bitmap_sweep (bm);
  check_bit (&r, 0, false, "idle for a whole period");
  check_bit (&r, 2, true, "held by a write in flight");
  ck_assert_uint_eq (requests (&r, MEMBER_FLUSH), N);
  for (int i = 0; i < N; i++)
    ck_assert_uint_eq (disk_events (&r, i), 1);

  for (int k = 0; k < 3; k++)
    md_bitmap_sweep (bm);
  check_bit (&r, 2, true, "still held");
  md_bitmap_write_end (bm, 2 * ROWS_PER_BIT, 2 * ROWS_PER_BIT + 1);
  reset_stats (&r);
  md_bitmap_sweep (bm);
  check_bit (&r, 2, false, "its write ended");
  ck_assert_uint_eq (requests (&r, MEMBER_FLUSH), N);
  md_bitmap_close (bm);
  members_destroy (&r.ms);
}
END_TEST

/* Degraded: nothing is cleared, so that a member coming back can be
 * resynced from the bits; a failed member gets no bitmap writes; and
 * once the array is whole again the bits go as usual.
 */
START_TEST (test_no_clearing_degraded)
{
  struct rig r;
  struct md_bitmap *bm;
  struct md_bitmap_stats st;

  rig_init (&r);
  bm = clean_bitmap (&r);
  member_fail (r.m[1], EIO);
  ck_assert_int_eq (md_bitmap_write_begin (bm, 0, 1), 0);
  ck_assert_int_eq (disk_bit (&r, 1, 0), false);  /* failed: not written */
  check_bit (&r, 0, true, "degraded write");
  md_bitmap_write_end (bm, 0, 1);
  for (int k = 0; k < 4; k++)
    md_bitmap_sweep (bm);
  check_bit (&r, 0, true, "degraded: kept");
  md_bitmap_stats (bm, &st);
  ck_assert_uint_eq (st.dirty, 1);

  /* A member being rebuilt is not in sync either. */
  member_start_rebuild (r.m[1], 0);
  md_bitmap_sweep (bm);
  check_bit (&r, 0, true, "rebuilding: kept");

  /* Whole again: the write's mark (never aged while degraded) waits one
   * pass, then goes.
   */
  mem_member_revive (r.m[1]);
  md_bitmap_sweep (bm);
  check_bit_but (&r, 1, 0, true, "whole again, first pass");
  md_bitmap_sweep (bm);
  check_bit_but (&r, 1, 0, false, "whole again");
  md_bitmap_close (bm);
  members_destroy (&r.ms);
}
END_TEST

static void
fail_member (void *m)
{
  member_fail (m, EIO);
}

/* A member that fails while a clearing pass flushes (by a write of its
 * own that timed out, say) makes the array degraded before anything is
 * cleared: the pass clears nothing, though it had picked its candidates
 * while the array was whole.
 */
START_TEST (test_no_clearing_failed_during_pass)
{
  struct rig r;
  struct md_bitmap *bm;
  struct md_bitmap_stats st;

  rig_init (&r);
  bm = clean_bitmap (&r);
  ck_assert_int_eq (md_bitmap_write_begin (bm, 0, 1), 0);
  md_bitmap_write_end (bm, 0, 1);
  md_bitmap_sweep (bm);         /* the write's mark ages */
  check_bit (&r, 0, true, "touched in the last pass");
  mem_member_before (r.m[0], MEMBER_FLUSH, fail_member, r.m[2]);
  md_bitmap_sweep (bm);         /* picks bit 0; member 2 fails meanwhile */
  ck_assert (member_failed (r.m[2]));
  check_bit (&r, 0, true, "a member failed during the pass");
  md_bitmap_stats (bm, &st);
  ck_assert_uint_eq (st.dirty, 1);
  md_bitmap_close (bm);
  members_destroy (&r.ms);
}
END_TEST

/* Re-add (md_bitmap_next_dirty_row, md_bitmap_dirty_rows): the rows under
 * set bits, whatever NEEDED says, from any row on; and md's count at the
 * last clearing, which follows md's count back down when the bitmap's
 * stays one ahead (md_array.c's next_events), as md's events_cleared does.
 */
START_TEST (test_dirty_rows)
{
  struct rig r;
  struct md_bitmap *bm;

  rig_init (&r);
  bm = clean_bitmap (&r);
  ck_assert_uint_eq (md_bitmap_cleared_at (bm), 1);
  ck_assert_uint_eq (md_bitmap_dirty_rows (bm, 0), 0);
  ck_assert_uint_eq (md_bitmap_next_dirty_row (bm, 0), UINT64_MAX);
  ck_assert_int_eq (md_bitmap_write_begin (bm, 3 * ROWS_PER_BIT + 1,
                                           3 * ROWS_PER_BIT + 2), 0);
  ck_assert_int_eq (md_bitmap_write_begin (bm, 10 * ROWS_PER_BIT - 1,
                                           10 * ROWS_PER_BIT + 1), 0);
  ck_assert_uint_eq (md_bitmap_dirty_rows (bm, 0), 3 * ROWS_PER_BIT);
  ck_assert_uint_eq (md_bitmap_dirty_rows (bm, 3 * ROWS_PER_BIT + 5),
                     3 * ROWS_PER_BIT - 5);
  ck_assert_uint_eq (md_bitmap_next_dirty_row (bm, 0), 3 * ROWS_PER_BIT);
  ck_assert_uint_eq (md_bitmap_next_dirty_row (bm, 3 * ROWS_PER_BIT + 7),
                     3 * ROWS_PER_BIT + 7);
  ck_assert_uint_eq (md_bitmap_next_dirty_row (bm, 4 * ROWS_PER_BIT),
                     9 * ROWS_PER_BIT);
  ck_assert_uint_eq (md_bitmap_next_dirty_row (bm, 11 * ROWS_PER_BIT),
                     UINT64_MAX);
  ck_assert_uint_eq (md_bitmap_needed_regions (bm), 0);   /* not NEEDED */
  md_bitmap_write_end (bm, 3 * ROWS_PER_BIT + 1, 3 * ROWS_PER_BIT + 2);
  md_bitmap_write_end (bm, 10 * ROWS_PER_BIT - 1, 10 * ROWS_PER_BIT + 1);

  /* Cleared at md's count 3, then at 2 (md went back down; the bitmap
   * stays at 3, but the events_cleared it writes is md's count, as md
   * writes it, so that the floor survives a restart).
   */
  ck_assert_int_eq (md_bitmap_events (bm, 3), 0);
  md_bitmap_sweep (bm);
  md_bitmap_sweep (bm);
  ck_assert_uint_eq (md_bitmap_dirty_rows (bm, 0), 0);
  ck_assert_uint_eq (md_bitmap_cleared_at (bm), 3);
  ck_assert_int_eq (md_bitmap_events (bm, 2), 0);
  ck_assert_int_eq (md_bitmap_write_begin (bm, 0, 1), 0);
  md_bitmap_write_end (bm, 0, 1);
  md_bitmap_sweep (bm);
  md_bitmap_sweep (bm);
  ck_assert_uint_eq (md_bitmap_dirty_rows (bm, 0), 0);
  ck_assert_uint_eq (md_bitmap_cleared_at (bm), 2);
  ck_assert_uint_eq (le64 (mem_member_data (r.m[0]) + AREA + 32), 2);
  ck_assert_uint_eq (le64 (mem_member_data (r.m[0]) + AREA + 24), 3);
  md_bitmap_close (bm);
  members_destroy (&r.ms);
}
END_TEST

/* After an unclean shutdown (the bitmap closed without its last pass,
 * as a killed nbdkit leaves it), the bits that were set are the resync's
 * regions: their rows, in order, and no others; a region stays needed
 * until its last row is done, and needed bits are not cleared.  A bitmap
 * behind the superblocks' events is stale: every region is needed.
 */
START_TEST (test_resync_rows)
{
  struct rig r;
  struct md_bitmap *bm;
  struct md_super *ref = calloc (1, sizeof *ref);
  const char *why = NULL, *from = NULL;

  ck_assert (ref != NULL);
  rig_init (&r);
  bm = clean_bitmap (&r);
  ck_assert_int_eq (md_bitmap_write_begin (bm, 3 * ROWS_PER_BIT + 1,
                                           3 * ROWS_PER_BIT + 2), 0);
  ck_assert_int_eq (md_bitmap_write_begin (bm, 10 * ROWS_PER_BIT,
                                           10 * ROWS_PER_BIT + 1), 0);
  md_bitmap_close (bm);         /* without the daemon (never started):
                                   no last pass, as after a crash */

  memcpy (ref->set_uuid, uuid, 16);
  ref->events = 1;
  bm = md_bitmap_load (&r.ms, &r.place, ref, true, &why, &from);
  ck_assert_msg (bm != NULL, "md_bitmap_load: %s", why);
  ck_assert_uint_eq (md_bitmap_needed_regions (bm), 2);
  ck_assert_uint_eq (md_bitmap_needed_rows (bm), 2 * ROWS_PER_BIT);
  ck_assert_uint_eq (md_bitmap_next_needed_row (bm, 0), 3 * ROWS_PER_BIT);
  ck_assert_uint_eq (md_bitmap_next_needed_row (bm, 4 * ROWS_PER_BIT),
                     10 * ROWS_PER_BIT);
  ck_assert_uint_eq (md_bitmap_next_needed_row (bm, 11 * ROWS_PER_BIT),
                     UINT64_MAX);

  for (uint64_t row = 3 * ROWS_PER_BIT; row < 4 * ROWS_PER_BIT - 1; row++)
    md_bitmap_row_resynced (bm, row);
  ck_assert_uint_eq (md_bitmap_needed_regions (bm), 2);  /* one row left */
  md_bitmap_sweep (bm);
  md_bitmap_sweep (bm);
  check_bit (&r, 3, true, "needed: never cleared");
  md_bitmap_row_resynced (bm, 4 * ROWS_PER_BIT - 1);
  ck_assert_uint_eq (md_bitmap_needed_regions (bm), 1);
  md_bitmap_sweep (bm);
  check_bit (&r, 3, false, "resynced, then idle");
  check_bit (&r, 10, true, "still needed");
  md_bitmap_close (bm);
  check_bit (&r, 10, true, "needed at shutdown");

  ref->events = 3;              /* the bitmap (events 1) is behind */
  bm = md_bitmap_load (&r.ms, &r.place, ref, true, &why, &from);
  ck_assert_msg (bm != NULL, "md_bitmap_load: %s", why);
  ck_assert_uint_eq (md_bitmap_needed_regions (bm), NBITS);
  ck_assert_uint_eq (md_bitmap_needed_rows (bm), SIZE / CHUNK);
  md_bitmap_close (bm);
  free (ref);
  members_destroy (&r.ms);
}
END_TEST

/* md v1.0: the data from 0, the bitmap right before each member's
 * superblock (8 to 12 KiB before its end: sectors - 16, rounded down to
 * 8): on members of different sizes each has it at its own offset, and
 * each gets its bits there and nowhere else; a member too small for the
 * area between the data and its superblock is refused.
 */
START_TEST (test_v10_places)
{
  static const uint64_t extra[N] = { 0, 512, 4096 + 1024, 40960 };
  const uint64_t size = 2 * 1024 * 1024, area = 4096;
  struct members ms;
  struct member *m[N];
  struct md_bitmap_place place = {
    .minor = 0, .bitmap_offset = -(int32_t) (area / 512), .data_offset = 0,
    .size = size, .chunk = CHUNK,
  };
  uint64_t at[N];
  const char *why = NULL;
  struct md_bitmap *bm;

  members_init (&ms);
  for (int i = 0; i < N; i++) {
    char name[16];
    uint64_t bytes = size + area + 8192 + extra[i];

    snprintf (name, sizeof name, "mem%d", i);
    m[i] = mem_member_new (name, bytes, 1);
    at[i] = ((bytes / 512 - 16) / 8 * 8) * 512 - area;
    ck_assert_uint_ge (at[i], size);
  }
  members_arrange (&ms, m, N);
  members_set_level (&ms, 5);
  bm = md_bitmap_new (&ms, &place, uuid, 64 * 1024, 5, &why);
  ck_assert_msg (bm != NULL, "md_bitmap_new: %s", why);
  ck_assert_int_eq (md_bitmap_events (bm, 1), 0);
  for (int i = 0; i < N; i++) {
    const uint8_t *d = mem_member_data (m[i]);

    ck_assert_msg (le32 (d + at[i]) == 0x6d746962, "member %d: no bitmap "
                   "at %llu", i, (unsigned long long) at[i]);
    ck_assert_uint_eq (le64 (d + at[i] + 24), 1);
    /* Every bit set (a new array), and nothing before the area. */
    ck_assert_uint_eq (d[at[i] + 256], 0xff);
    for (uint64_t b = size; b < at[i]; b++)
      ck_assert_msg (d[b] == 0, "member %d: byte %llu written", i,
                     (unsigned long long) b);
  }
  md_bitmap_close (bm);

  /* Too small: the area would reach into the data. */
  place.size = at[0] + 512;
  bm = md_bitmap_new (&ms, &place, uuid, 64 * 1024, 5, &why);
  ck_assert (bm == NULL);
  ck_assert_msg (strstr (why, "overlap") != NULL, "said: %s", why);
  members_destroy (&ms);
}
END_TEST

static Suite *
bitmap_suite (void)
{
  const struct check_case cases[] = {
    { "mark", test_mark_before_write },
    { "lazy", test_lazy_clearing },
    { "degraded", test_no_clearing_degraded },
    { "resync", test_resync_rows },
    { "failed-during-pass", test_no_clearing_failed_during_pass },
    { "dirty-rows", test_dirty_rows },
    { "v1.0", test_v10_places },
  };

  return check_suite ("md_bitmap", CHECK_CASES (cases), 30);
}

int
main (void)
{
  return check_run (bitmap_suite (), false);
}
