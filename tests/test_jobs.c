/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: jobs.h's jobs_throttle_delay, the rate limit of the
 * rebuild and the resync, as a pure function of one clock reading.
 *
 * The old throttle read the clock twice, tested "now < due" on the first
 * reading and slept "due - now" from the second; a thread preempted in
 * between got a negative time left, which usleep took as ~4.29e9 us (71
 * minutes).  Here the delay comes from one reading and is never negative:
 * past the due time it is 0, however far past.
 */

#include <config.h>

#include <stdint.h>
#include <stdlib.h>

#include <check.h>

#include "jobs.h"

#define MS INT64_C (1000000)
#define S INT64_C (1000000000)

START_TEST (test_no_limit)
{
  ck_assert_int_eq (jobs_throttle_delay (0, 0, UINT64_MAX, 0), 0);
  ck_assert_int_eq (jobs_throttle_delay (-5 * S, 7 * S, 1 << 30, 0), 0);
}
END_TEST

START_TEST (test_ahead_waits)
{
  /* 1 MiB at 1 MiB/s is due 1 s after the start. */
  ck_assert_int_eq (jobs_throttle_delay (0, 0, 1 << 20, 1 << 20), S);
  ck_assert_int_eq (jobs_throttle_delay (250 * MS, 0, 1 << 20, 1 << 20),
                    750 * MS);
  ck_assert_int_eq (jobs_throttle_delay (10 * S + 400 * MS, 10 * S,
                                            1 << 19, 1 << 20), 100 * MS);
}
END_TEST

/* The case that froze a rebuild: the clock read after the due time (the
 * thread was preempted, or the row took long).  Zero, never negative.
 */
START_TEST (test_past_due_is_zero)
{
  ck_assert_int_eq (jobs_throttle_delay (S, 0, 1 << 20, 1 << 20), 0);
  ck_assert_int_eq (jobs_throttle_delay (S + 1, 0, 1 << 20, 1 << 20), 0);
  ck_assert_int_eq (jobs_throttle_delay (S + 20 * MS, 0, 1 << 20, 1 << 20),
                    0);
  ck_assert_int_eq (jobs_throttle_delay (INT64_MAX, 0, 1, 1), 0);
  for (int64_t late = 1; late < 10 * S; late = late * 3 + 1)
    ck_assert_int_ge (jobs_throttle_delay (S + late, 0, 1 << 20, 1 << 20),
                      0);
}
END_TEST

/* No overflow: bytes * 1e9 does not fit in 64 bits for 18 GB and more. */
START_TEST (test_large)
{
  uint64_t tib = UINT64_C (1) << 40;

  ck_assert_int_eq (jobs_throttle_delay (0, 0, tib, tib), S);
  ck_assert_int_eq (jobs_throttle_delay (0, 0, 100 * tib, tib), 100 * S);
  ck_assert_int_eq (jobs_throttle_delay (0, 0, UINT64_MAX, 1), INT64_MAX);
  ck_assert_int_eq (jobs_throttle_delay (0, INT64_MAX - S, 1 << 20, 1),
                    INT64_MAX);
  ck_assert_int_gt (jobs_throttle_delay (INT64_MAX - 1, INT64_MAX - S,
                                            UINT64_MAX, 1), 0);
}
END_TEST

int
main (void)
{
  Suite *s = suite_create ("jobs");
  TCase *tc = tcase_create ("throttle");
  SRunner *sr;
  int failed;

  tcase_add_test (tc, test_no_limit);
  tcase_add_test (tc, test_ahead_waits);
  tcase_add_test (tc, test_past_due_is_zero);
  tcase_add_test (tc, test_large);
  suite_add_tcase (s, tc);
  sr = srunner_create (s);
  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
