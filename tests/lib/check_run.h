/* SPDX-License-Identifier: BSD-3-Clause */
/* What every Check test program of ours ends with, written once.
 *
 * check_suite: a suite of named cases, each its own Check test case (so
 * that CK_RUN_CASE=name runs one alone), with a timeout in seconds (0:
 * Check's default).  check_run: run a suite (fork mode as Check's
 * default, or with nofork true in this process: member_nbd's servers are
 * its children) and give main's exit status.
 */

#ifndef TESTS_CHECK_RUN_H
#define TESTS_CHECK_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include <check.h>

struct check_case {
  const char *name;
  const TTest *test;
};

#define CHECK_CASES(a) (a), sizeof (a) / sizeof (a)[0]

static inline Suite *
check_suite (const char *name, const struct check_case *cases, size_t n,
             double timeout)
{
  Suite *s = suite_create (name);

  for (size_t i = 0; i < n; i++) {
    TCase *tc = tcase_create (cases[i].name);

    if (timeout > 0)
      tcase_set_timeout (tc, timeout);
    tcase_add_test (tc, cases[i].test);
    suite_add_tcase (s, tc);
  }
  return s;
}

static inline int
check_run (Suite *s, bool nofork)
{
  SRunner *sr = srunner_create (s);
  int failed;

  if (nofork)
    srunner_set_fork_status (sr, CK_NOFORK);
  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif /* TESTS_CHECK_RUN_H */
