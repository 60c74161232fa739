/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: plugin/row_record.c answers "which rows may the members
 * disagree on" from the one keeper the array has, against in-memory
 * members (member_mem.c):
 *
 *  memory   a writable array without a bitmap (raw): a write's rows are
 *           marked in the record in memory, which a re-add reads; its
 *           floor is md's event count when there is md, 0 for raw.
 *  none     a read-only array without a bitmap: nothing records, so a
 *           re-add owes every row; the write bracket does nothing.
 *  linear   md without a bitmap: the resync goes over every row in
 *           order from md's checkpoint, which it moves.
 *  bitmap   md with a write-intent bitmap: a write's rows reach the
 *           bitmap on every member's disk before the write goes out,
 *           and the record in memory is not kept.
 *
 * The oracles are the rows a test wrote, counted by hand, and the
 * members' bytes at md's offsets (the superblock's events, the bitmap's
 * bits), never the row record's own answers.  CK_RUN_CASE=name runs one.
 */

#include <config.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include "check_run.h"

#include "array_config.h"
#include "geometry.h"
#include "md_array.h"
#include "md_bitmap.h"
#include "member.h"
#include "member_mem.h"
#include "member_table.h"
#include "row_record.h"

#define N 4                     /* members (RAID-5) */
#define CHUNK (64 * 1024)
#define DATA_OFFSET (1024 * 1024)
#define ROWS 16
#define MEMBER_BYTES (DATA_OFFSET + ROWS * CHUNK)
/* v1.2: the superblock at 4 KiB, an internal bitmap 4 KiB after it: a
 * 256-byte bitmap superblock, then the bits, one per bitmap chunk.
 */
#define SB 4096
#define BITMAP (SB + 4096)
#define BITS (BITMAP + 256)

void
nbdkit_error (const char *fs, ...)
{
  va_list args;

  va_start (args, fs);
  vfprintf (stderr, fs, args);
  va_end (args);
  fputc ('\n', stderr);
}

struct rig {
  struct members ms;
  struct geometry g;
  struct md_array *md;          /* NULL: raw */
  struct row_record *rr;
};

/* N in-memory members; with md (bitmap: one bit per row), created and
 * written as create=true writes them.
 */
static void
rig_open (struct rig *r, bool md, bool bitmap, bool readonly)
{
  struct member *m[N];
  const char *why = NULL;

  memset (r, 0, sizeof *r);
  members_init (&r->ms);
  for (int i = 0; i < N; i++) {
    char name[16];

    snprintf (name, sizeof name, "mem%d", i);
    m[i] = mem_member_new (name, MEMBER_BYTES, 1);
  }
  members_arrange (&r->ms, m, N);
  members_set_level (&r->ms, 5);
  ck_assert_msg (geometry_init (&r->g, 5, LAYOUT_LEFT_SYMMETRIC, N, CHUNK,
                                DATA_OFFSET, MEMBER_BYTES, &why) == 0,
                 "geometry: %s", why);
  if (md) {
    struct array_config cfg = {
      .metadata = METADATA_MD, .create = true, .no_bitmap = !bitmap,
      .bitmap_chunk = CHUNK, .level = 5, .layout = LAYOUT_LEFT_SYMMETRIC,
      .chunk = CHUNK, .data_offset = DATA_OFFSET, .ndisks = N,
    };

    ck_assert_int_eq (md_array_create (&r->ms, &r->g, &cfg, &r->md), 0);
    ck_assert_int_eq (md_array_after_fork (r->md), 0);
  }
  r->rr = row_record_open (&r->ms, r->md, ROWS, readonly);
  ck_assert (r->rr != NULL);
}

static void
rig_close (struct rig *r)
{
  row_record_free (r->rr);
  md_array_close (r->md);
  members_destroy (&r->ms);
}

static void
write_rows (struct rig *r, uint64_t first, uint64_t end)
{
  unsigned token;

  ck_assert_int_eq (row_record_write_begin (r->rr, first, end, &token), 0);
  row_record_write_end (r->rr, first, end, token);
}

static uint64_t
le64 (const uint8_t *p)
{
  uint64_t v = 0;

  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

START_TEST (test_memory)
{
  struct rig r;
  uint64_t per_region, marked;

  rig_open (&r, false, false, false);
  ck_assert_uint_eq (row_record_next_missed (r.rr, 0), UINT64_MAX);
  write_rows (&r, 3, 6);
  write_rows (&r, 9, 10);
  ck_assert_uint_eq (row_record_next_missed (r.rr, 0), 3);
  ck_assert_uint_eq (row_record_next_missed (r.rr, 6), 9);
  ck_assert_uint_eq (row_record_next_missed (r.rr, 10), UINT64_MAX);
  ck_assert_uint_eq (row_record_missed_rows (r.rr, 0), 4);
  ck_assert_uint_eq (row_record_missed_rows (r.rr, 5), 2);
  ck_assert_uint_eq (row_record_missed_floor (r.rr), 0);
  ck_assert (row_record_memory_stats (r.rr, &per_region, &marked));
  ck_assert_uint_eq (per_region, 1);
  ck_assert_uint_eq (marked, 4);
  rig_close (&r);

  /* With md (no bitmap): the floor is md's event count at its start. */
  rig_open (&r, true, false, false);
  ck_assert_uint_eq (row_record_missed_floor (r.rr),
                     le64 (mem_member_data (members_at (&r.ms, 0)) + SB
                           + 200));
  ck_assert (row_record_memory_stats (r.rr, &per_region, &marked));
  rig_close (&r);
}
END_TEST

START_TEST (test_none)
{
  struct rig r;
  uint64_t per_region, marked;

  rig_open (&r, false, false, true);
  write_rows (&r, 3, 6);
  for (uint64_t row = 0; row < ROWS; row++)
    ck_assert_uint_eq (row_record_next_missed (r.rr, row), row);
  ck_assert_uint_eq (row_record_missed_rows (r.rr, 0), ROWS);
  ck_assert_uint_eq (row_record_missed_rows (r.rr, 5), ROWS - 5);
  ck_assert_uint_eq (row_record_missed_rows (r.rr, ROWS + 1), 0);
  ck_assert_uint_eq (row_record_missed_floor (r.rr), 0);
  ck_assert (!row_record_memory_stats (r.rr, &per_region, &marked));
  rig_close (&r);
}
END_TEST

START_TEST (test_linear)
{
  struct rig r;

  rig_open (&r, true, false, false);
  ck_assert (md_array_needs_resync (r.md));     /* a new array */
  ck_assert_uint_eq (row_record_resync_rows (r.rr), ROWS);
  ck_assert_uint_eq (row_record_next_resync (r.rr, 0), 0);
  for (uint64_t row = 0; row < 5; row++)
    row_record_resynced (r.rr, row);
  ck_assert_uint_eq (row_record_next_resync (r.rr, 0), 5);
  ck_assert_uint_eq (row_record_next_resync (r.rr, 7), 7);
  ck_assert_uint_eq (row_record_resync_rows (r.rr), ROWS - 5);
  rig_close (&r);
}
END_TEST

START_TEST (test_bitmap)
{
  struct rig r;
  uint64_t per_region, marked;

  rig_open (&r, true, true, false);
  ck_assert (!row_record_memory_stats (r.rr, &per_region, &marked));
  /* A new array's bitmap has every bit set, for the initial resync. */
  ck_assert_uint_eq (row_record_resync_rows (r.rr), ROWS);
  for (uint64_t row = 0; row < ROWS; row++)
    row_record_resynced (r.rr, row);
  md_array_resynced (r.md);
  ck_assert_uint_ge (row_record_next_resync (r.rr, 0), ROWS);

  /* Two passes of the lazy clearing (touched, then idle) clear every
   * bit on disk; then row 6's bit reaches every member's disk before
   * the write may go out.
   */
  md_bitmap_sweep (md_array_bitmap (r.md));
  md_bitmap_sweep (md_array_bitmap (r.md));
  for (int i = 0; i < N; i++)
    ck_assert_msg (mem_member_data (members_at (&r.ms, i))[BITS] == 0,
                   "member %d: bits left after the clearing", i);
  ck_assert_uint_eq (row_record_next_missed (r.rr, 0), UINT64_MAX);
  {
    unsigned token;

    ck_assert_int_eq (row_record_write_begin (r.rr, 6, 7, &token), 0);
    for (int i = 0; i < N; i++)
      ck_assert_msg (mem_member_data (members_at (&r.ms, i))[BITS] & 1u << 6,
                     "member %d: row 6's bit is not on disk", i);
    row_record_write_end (r.rr, 6, 7, token);
  }
  ck_assert_uint_le (row_record_next_missed (r.rr, 0), 6);
  ck_assert_uint_eq (row_record_next_missed (r.rr, 7), UINT64_MAX);
  rig_close (&r);
}
END_TEST

static Suite *
row_record_suite (void)
{
  const struct check_case cases[] = {
    { "memory", test_memory },
    { "none", test_none },
    { "linear", test_linear },
    { "bitmap", test_bitmap },
  };

  return check_suite ("row_record", CHECK_CASES (cases), 30);
}

int
main (void)
{
  return check_run (row_record_suite (), false);
}
