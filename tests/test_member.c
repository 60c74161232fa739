/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: plugin/member.c's member_io_run runs every request of a
 * batch, even when it cannot allocate the list of a large batch;
 * member_error_is_media sorts errors into member.h's classes; the file
 * backend (plugin/member_file.c) fails a read of a member that shrank
 * under it with the short transfer's errno, through system calls and
 * through the ring; and a member's read errors count against md's limit
 * and decay by the hour.
 *
 * A batch's requests are grouped by backend and each backend gets its
 * share in one call.  Past 64 requests the list is allocated; if that
 * fails the batch must still run (in calls of 64), because an error there
 * would reach callers as a failed I/O with no member to blame: the old
 * code returned -1 with every request's err still 0, and fill_rows then
 * took unread pages for valid ones.  malloc is wrapped (-Wl,--wrap=malloc)
 * so that this program decides when it fails; the backend is a recording
 * fake that completes what it is given.
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "member.h"

#define N 200

static bool malloc_fails;
void *__real_malloc (size_t n);
void *__wrap_malloc (size_t n);

void *
__wrap_malloc (size_t n)
{
  if (malloc_fails)
    return NULL;
  return __real_malloc (n);
}

static size_t calls, largest, ran;

static int
fake_io (struct member_io **ios, size_t n)
{
  calls++;
  if (n > largest)
    largest = n;
  for (size_t i = 0; i < n; i++) {
    ios[i]->done = ios[i]->len;
    ran++;
  }
  return 0;
}

static const struct member_ops fake_ops = { .kind = "fake", .io = fake_io };

void nbdkit_error (const char *fs, ...) { }
void nbdkit_debug (const char *fs, ...) { }

static void
run_batch (bool fail_malloc)
{
  static struct member m = { .ops = &fake_ops, .name = (char *) "fake" };
  static struct member_io ios[N];
  int r;

  for (size_t i = 0; i < N; i++)
    ios[i] = (struct member_io) { .member = &m, .op = MEMBER_READ,
                                  .len = 4096, .err = 12345 };
  calls = largest = ran = 0;
  malloc_fails = fail_malloc;
  r = member_io_run (ios, N);
  malloc_fails = false;
  ck_assert_int_eq (r, 0);
  ck_assert_uint_eq (ran, N);
  for (size_t i = 0; i < N; i++) {
    ck_assert_int_eq (ios[i].err, 0);
    ck_assert_uint_eq (ios[i].done, 4096);
  }
}

START_TEST (test_large_batch_one_call)
{
  run_batch (false);
  ck_assert_uint_eq (calls, 1);
  ck_assert_uint_eq (largest, N);
}
END_TEST

START_TEST (test_large_batch_without_memory)
{
  run_batch (true);
  ck_assert_uint_eq (largest, 64);
  ck_assert_uint_eq (calls, (N + 63) / 64);
}
END_TEST

/* member.h's table, written out again here: the medium's errors on
 * every request but a flush, the member's going away on all, and the
 * errors nobody listed on the member's side.
 */
START_TEST (test_error_classes)
{
  static const int media[] = { EIO, ENODATA, EILSEQ, MEMBER_ESHORT };
  static const int gone[] = {
    ENOTCONN, ETIMEDOUT, ENODEV, ENXIO, ESHUTDOWN, ECONNRESET,
    ECONNREFUSED, EPIPE,
    /* Not listed: the safe side.  A server's other replies (NBD's error
     * codes), a missing feature, a shortage.
     */
    EPERM, ENOMEM, EINVAL, ENOSPC, EOVERFLOW, EOPNOTSUPP, EROFS, EBADF,
    EAGAIN, 0x7fff,
  };
  static const enum member_op sectors[] = {
    MEMBER_READ, MEMBER_WRITE, MEMBER_PUNCH, MEMBER_ZERO,
  };

  for (size_t k = 0; k < sizeof sectors / sizeof sectors[0]; k++) {
    for (size_t i = 0; i < sizeof media / sizeof media[0]; i++)
      ck_assert_msg (member_error_is_media (sectors[k], media[i]),
                     "op %d, %s: not the medium's", sectors[k],
                     strerror (media[i]));
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
      ck_assert_msg (!member_error_is_media (sectors[k], gone[i]),
                     "op %d, %s: the medium's", sectors[k],
                     strerror (gone[i]));
  }
  for (size_t i = 0; i < sizeof media / sizeof media[0]; i++)
    ck_assert_msg (!member_error_is_media (MEMBER_FLUSH, media[i]),
                   "a flush's %s: the medium's", strerror (media[i]));
  /* The short transfer is an errno of its own, said as such. */
  ck_assert_int_ne (MEMBER_ESHORT, EIO);
  ck_assert_int_ne (MEMBER_ESHORT, ENODATA);
  ck_assert_int_ne (MEMBER_ESHORT, EILSEQ);
  ck_assert_ptr_nonnull (strstr (member_strerror (MEMBER_ESHORT), "short"));
  ck_assert_str_eq (member_strerror (EIO), strerror (EIO));
}
END_TEST

/* disk=missing is a member that is not there, not one with bad sectors. */
START_TEST (test_missing_is_gone)
{
  struct member *m = member_missing ();
  uint8_t buf[512];
  struct member_io io = { .member = m, .op = MEMBER_READ, .buf = buf,
                          .len = sizeof buf };

  ck_assert_ptr_nonnull (m);
  ck_assert_int_eq (member_io_run (&io, 1), -1);
  ck_assert_int_eq (errno, io.err);
  ck_assert_msg (!member_error_is_media (MEMBER_READ, io.err),
                 "a missing member's read: %s, the medium's",
                 strerror (io.err));
  member_close (m);
}
END_TEST

/* A file member truncated under the backend: reads past its new end
 * fail with MEMBER_ESHORT, a medium's error, whether they find no byte
 * or some; reads inside it still work.  A batch of one goes through
 * system calls; two reads of over 64 KiB each through the ring (or
 * system calls again where this thread cannot have one).
 */
#define FILE_BYTES (1024 * 1024)
#define KEPT (64 * 1024)

START_TEST (test_file_shrank)
{
  char path[] = "/tmp/test-member-file.XXXXXX";
  static uint8_t big[2][128 * 1024];
  uint8_t page[8192];
  struct member_io io, two[2];
  struct member *m;
  int fd = mkstemp (path);

  ck_assert_int_ne (fd, -1);
  ck_assert_int_eq (ftruncate (fd, FILE_BYTES), 0);
  m = member_file_open (path, MEMBER_DIRECT_OFF);
  ck_assert_ptr_nonnull (m);
  member_opened (m);
  ck_assert_int_eq (ftruncate (fd, KEPT), 0);   /* shrinks under it */

  for (int partly = 0; partly <= 1; partly++) {
    io = (struct member_io) { .member = m, .op = MEMBER_READ, .buf = page,
                              .len = sizeof page,
                              .offset = partly ? KEPT - 4096 : KEPT * 4 };
    ck_assert_int_eq (member_io_run (&io, 1), -1);
    ck_assert_msg (io.err == MEMBER_ESHORT, "a read %s the end: %s",
                   partly ? "across" : "past", strerror (io.err));
    ck_assert_int_eq (errno, MEMBER_ESHORT);
    ck_assert (member_error_is_media (MEMBER_READ, io.err));
  }

  for (int i = 0; i < 2; i++)
    two[i] = (struct member_io) { .member = m, .op = MEMBER_READ,
                                  .buf = big[i], .len = sizeof big[i],
                                  .offset = i * 2 * sizeof big[i] };
  ck_assert_int_eq (member_io_run (two, 2), -1);
  for (int i = 0; i < 2; i++)
    ck_assert_msg (two[i].err == MEMBER_ESHORT, "ring read %d: %s", i,
                   strerror (two[i].err));

  io = (struct member_io) { .member = m, .op = MEMBER_READ, .buf = page,
                            .len = sizeof page, .offset = 0 };
  ck_assert_int_eq (member_io_run (&io, 1), 0);
  member_close (m);
  close (fd);
  unlink (path);
}
END_TEST

/* md's read-error limit: past max-read-errors the member is to be
 * failed; the count halves for every hour since the last error, so that
 * errors spread over days never add up to it.
 */
START_TEST (test_read_errors_decay)
{
  static struct member m = { .ops = &fake_ops, .name = (char *) "fake" };
  const int64_t hour = 3600 * 1000;
  int64_t t = 1000;

  member_set_max_read_errors (4);
  for (int k = 1; k <= 4; k++)
    ck_assert_msg (!member_read_error (&m, t), "error %d of 4 at once", k);
  ck_assert (member_read_error (&m, t));             /* the 5th: past */
  /* 5 an hour later: 2, then 3; two hours more: 0, then 1. */
  ck_assert (!member_read_error (&m, t += hour));
  ck_assert_uint_eq (m.read_errors, 3);
  ck_assert (!member_read_error (&m, t += 2 * hour));
  ck_assert_uint_eq (m.read_errors, 1);
  /* A day later, nothing is left of it. */
  ck_assert (!member_read_error (&m, t += 24 * hour));
  ck_assert_uint_eq (m.read_errors, 1);
  member_set_max_read_errors (MEMBER_MAX_READ_ERRORS);
}
END_TEST

int
main (void)
{
  Suite *s = suite_create ("member");
  TCase *tc = tcase_create ("batches");
  TCase *classes = tcase_create ("classes");
  SRunner *sr;
  int failed;

  tcase_add_test (tc, test_large_batch_one_call);
  tcase_add_test (tc, test_large_batch_without_memory);
  tcase_add_test (tc, test_read_errors_decay);
  suite_add_tcase (s, tc);
  tcase_add_test (classes, test_error_classes);
  tcase_add_test (classes, test_missing_is_gone);
  tcase_add_test (classes, test_file_shrank);
  suite_add_tcase (s, classes);
  sr = srunner_create (s);
  srunner_set_fork_status (sr, CK_NOFORK);
  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
