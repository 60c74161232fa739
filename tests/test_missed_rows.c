/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: the in-memory record of missed rows (plugin/missed_rows.c)
 * that arrays without an on-disk bitmap re-add from.
 *
 *  clear     a write marks its rows; two sweeps of a healthy array (the
 *            flip, then the clearing) clear them; a write after the
 *            flip is kept by the clearing of the generation before.
 *  failure   a write in flight when the sweep flips, during which a
 *            member fails, keeps its mark: the drain ends while the array
 *            is degraded, and nothing is cleared while it is; once the
 *            member is back in sync the marks go.
 *  regions   past a million rows a mark covers several; counts are
 *            clipped to the array, next() never goes back.
 *  epoch     cleared_at is the epoch read at the flip of the last
 *            clearing, the one at creation before that.
 * CK_RUN_CASE=name runs one.
 */

#include <config.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <check.h>

#include "check_run.h"

#include "member.h"
#include "member_mem.h"
#include "member_table.h"
#include "missed_rows.h"

#define N 4

static struct members ms;
static struct member *m[N];
static uint64_t epoch_now;

static uint64_t
epoch (void *arg)
{
  return epoch_now;
}

static struct missed_rows *
rig (uint64_t rows)
{
  struct missed_rows *mr;

  members_init (&ms);
  for (int i = 0; i < N; i++)
    m[i] = mem_member_new ("mem", 8192, 1);
  members_arrange (&ms, m, N);
  members_set_level (&ms, 5);
  epoch_now = 7;
  mr = missed_rows_new (&ms, rows, epoch, NULL);
  ck_assert (mr != NULL);
  return mr;
}

static void
unrig (struct missed_rows *mr)
{
  missed_rows_free (mr);
  members_destroy (&ms);
}

START_TEST (test_clear)
{
  struct missed_rows *mr = rig (100);
  unsigned t;

  ck_assert_uint_eq (missed_rows_next (mr, 0), UINT64_MAX);
  t = missed_rows_write_begin (mr, 10, 12);
  missed_rows_write_end (mr, t);
  ck_assert_uint_eq (missed_rows_next (mr, 0), 10);
  ck_assert_uint_eq (missed_rows_next (mr, 11), 11);
  ck_assert_uint_eq (missed_rows_next (mr, 12), UINT64_MAX);
  ck_assert_uint_eq (missed_rows_count (mr, 0), 2);

  missed_rows_sweep (mr);       /* flip, and nothing in flight: clear */
  ck_assert_uint_eq (missed_rows_count (mr, 0), 0);

  t = missed_rows_write_begin (mr, 20, 21);
  missed_rows_write_end (mr, t);
  missed_rows_sweep (mr);       /* row 20 was in the generation cleared */
  ck_assert_uint_eq (missed_rows_count (mr, 0), 0);

  /* In flight across the flip: the clearing waits for it; a write that
   * starts after the flip marks the other generation and stays.
   */
  t = missed_rows_write_begin (mr, 30, 31);
  missed_rows_sweep (mr);       /* flip; 30 in flight: not cleared */
  ck_assert_uint_eq (missed_rows_next (mr, 0), 30);
  {
    unsigned u = missed_rows_write_begin (mr, 40, 41);

    ck_assert_uint_ne (u, t);
    missed_rows_write_end (mr, u);
  }
  missed_rows_write_end (mr, t);
  missed_rows_sweep (mr);       /* drained: the old generation goes */
  ck_assert_uint_eq (missed_rows_next (mr, 0), 40);
  ck_assert_uint_eq (missed_rows_count (mr, 0), 1);
  missed_rows_sweep (mr);
  ck_assert_uint_eq (missed_rows_count (mr, 0), 0);
  unrig (mr);
}
END_TEST

START_TEST (test_failure)
{
  struct missed_rows *mr = rig (100);
  unsigned t = missed_rows_write_begin (mr, 5, 6);

  missed_rows_sweep (mr);       /* healthy: flips; 5 in flight */
  member_fail (m[2], EIO);      /* during the write */
  missed_rows_write_end (mr, t);
  missed_rows_sweep (mr);       /* drained, but degraded: kept */
  t = missed_rows_write_begin (mr, 50, 52);
  missed_rows_write_end (mr, t);
  for (int k = 0; k < 4; k++)
    missed_rows_sweep (mr);     /* degraded: nothing flips or clears */
  ck_assert_uint_eq (missed_rows_next (mr, 0), 5);
  ck_assert_uint_eq (missed_rows_next (mr, 6), 50);
  ck_assert_uint_eq (missed_rows_count (mr, 0), 3);
  ck_assert_uint_eq (missed_rows_count (mr, 51), 1);

  mem_member_revive (m[2]);     /* back in sync (re-added) */
  missed_rows_sweep (mr);
  missed_rows_sweep (mr);
  ck_assert_uint_eq (missed_rows_count (mr, 0), 0);
  unrig (mr);
}
END_TEST

START_TEST (test_regions)
{
  const uint64_t rows = (UINT64_C (1) << 20) * 2 + 1;     /* 3 per mark */
  struct missed_rows *mr = rig (rows);
  unsigned t;

  ck_assert_uint_eq (missed_rows_per_region (mr), 3);
  t = missed_rows_write_begin (mr, 7, 8);
  missed_rows_write_end (mr, t);
  ck_assert_uint_eq (missed_rows_next (mr, 0), 6);
  ck_assert_uint_eq (missed_rows_next (mr, 7), 7);
  ck_assert_uint_eq (missed_rows_count (mr, 0), 3);
  ck_assert_uint_eq (missed_rows_count (mr, 8), 1);
  t = missed_rows_write_begin (mr, rows - 1, rows + 5);   /* past the end */
  missed_rows_write_end (mr, t);
  ck_assert_uint_eq (missed_rows_next (mr, 9), (rows - 1) / 3 * 3);
  ck_assert_uint_eq (missed_rows_count (mr, 0), 6);
  ck_assert_uint_eq (missed_rows_count (mr, rows - 1), 1);
  unrig (mr);
}
END_TEST

START_TEST (test_epoch)
{
  struct missed_rows *mr = rig (100);
  unsigned t;

  ck_assert_uint_eq (missed_rows_cleared_at (mr), 7);
  t = missed_rows_write_begin (mr, 1, 2);
  epoch_now = 9;
  missed_rows_sweep (mr);       /* flips at 9; 1 in flight */
  epoch_now = 12;
  missed_rows_write_end (mr, t);
  ck_assert_uint_eq (missed_rows_cleared_at (mr), 7);
  missed_rows_sweep (mr);       /* clears what was marked before 9 */
  ck_assert_uint_eq (missed_rows_cleared_at (mr), 9);
  unrig (mr);
}
END_TEST

static Suite *
missed_rows_suite (void)
{
  const struct check_case cases[] = {
    { "clear", test_clear },
    { "failure", test_failure },
    { "regions", test_regions },
    { "epoch", test_epoch },
  };

  return check_suite ("missed_rows", CHECK_CASES (cases), 0);
}

int
main (void)
{
  return check_run (missed_rows_suite (), false);
}
