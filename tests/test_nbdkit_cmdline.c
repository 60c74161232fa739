/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: plugin/nbdkit_cmdline.c reads -r from an nbdkit 1.32 or
 * 1.42 command line exactly as nbdkit's getopt_long does.
 *
 * The expected answers are glibc getopt_long's over nbdkit's option
 * tables (server/options.h, v1.32.5 and v1.42.3), worked out by hand:
 * permutation (options after the plugin and its parameters count, unless
 * POSIXLY_CORRECT), "--" ending the options, clusters, an option's
 * argument never read as an option (-U -, --run 'x -r', -D raid.x=1),
 * unambiguous long prefixes (--read, --reado) and ambiguous ones (--r:
 * read-only, readonly and run differ) that getopt refuses.
 */

#include <config.h>

#include <stdlib.h>

#include <check.h>

#include "nbdkit_cmdline.h"

#define RO(expect, posixly, ...) do {                                   \
    char *argv_[] = { "nbdkit", __VA_ARGS__ };                          \
    int argc_ = sizeof argv_ / sizeof argv_[0];                         \
    int r_ = nbdkit_cmdline_read_only (argc_, argv_, (posixly));        \
    ck_assert_msg (r_ == (expect), "%s ...: %d, expected %d", argv_[1], \
                   r_, (expect));                                       \
  } while (0)

START_TEST (test_spellings)
{
  RO (1, false, "-r", "raid", "disk=a");
  RO (1, false, "--readonly", "raid");
  RO (1, false, "--read-only", "raid");
  RO (1, false, "--read", "raid");          /* both 'r': not ambiguous */
  RO (1, false, "--reado", "raid");
  RO (1, false, "-fr", "raid");
  RO (1, false, "-vfrU", "sock", "raid");
  RO (0, false, "-f", "-U", "-", "raid", "disk=a");
  RO (0, false, "-U", "-", "raid", "--run", "nbdsh -r -u x");
  RO (0, false, "--run=sh -r", "raid");
  RO (0, false, "-D", "-r", "raid");        /* -D's argument */
  RO (0, false, "-D-r", "raid");
  RO (0, false, "-e", "-r", "raid");
  RO (0, false, "--filter", "-r", "raid");
}
END_TEST

START_TEST (test_nbdkit_1_42)
{
  /* 1.42's options: -r beside them is read.  (Before they were in the
   * tables, these were refused, and the plugin served read-write.) */
  RO (1, false, "-r", "--timeout=30", "raid");
  RO (1, false, "--time-out", "30", "-r", "raid");
  RO (0, false, "--timeout", "-r", "raid");     /* its argument */
  RO (1, false, "--keepalive", "--no-mc", "--print-uri", "-r", "raid");
  RO (1, false, "--no-structured-replies", "--show-url", "-r", "raid");
  RO (1, false, "--ti=5", "--k", "--pr", "-r", "raid");   /* prefixes */
  RO (1, false, "--no-s", "-r", "raid");        /* both mean --no-sr */
  RO (0, false, "--no-m", "raid");              /* no-mc, no-meta-contexts agree */
  RO (-1, false, "--sh", "raid");               /* short-options, show-uri */
}
END_TEST

START_TEST (test_permutation)
{
  /* getopt permutes: options after the plugin and its parameters. */
  RO (1, false, "-U", "-", "raid", "disk=a", "-r");
  RO (1, false, "raid", "disk=a", "--run", "x", "--readonly");
  /* ... but not after "--", nor with POSIXLY_CORRECT past a non-option. */
  RO (0, false, "-U", "-", "--", "raid", "-r");
  RO (0, true, "-U", "-", "raid", "-r");
  RO (1, true, "-r", "-U", "-", "raid");
  RO (0, false, "-", "raid");               /* "-" is no option */
}
END_TEST

START_TEST (test_refused)
{
  /* What getopt refuses cannot have started nbdkit: -1, never a guess. */
  RO (-1, false, "--r", "raid");            /* read-only, readonly, run */
  RO (-1, false, "--re", "raid", "--nosuch");
  RO (-1, false, "-X", "raid");
  RO (-1, false, "--readonly=yes", "raid");
  RO (-1, false, "raid", "-U");             /* no argument left */
  RO (-1, false, "raid", "--run");
}
END_TEST

int
main (void)
{
  Suite *s = suite_create ("nbdkit_cmdline");
  TCase *tc = tcase_create ("getopt");
  SRunner *sr;
  int failed;

  tcase_add_test (tc, test_spellings);
  tcase_add_test (tc, test_nbdkit_1_42);
  tcase_add_test (tc, test_permutation);
  tcase_add_test (tc, test_refused);
  suite_add_tcase (s, tc);
  sr = srunner_create (s);
  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
