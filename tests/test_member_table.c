/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: the member table (plugin/member_table.c): the one failure
 * policy, what the array and a row can still serve, and reader sections
 * with the reclaim of replaced members.
 *
 *  policy    EOPNOTSUPP from a punch or a zero-range is a missing feature
 *            (the member stays), from a flush or anything else, and any
 *            other error, fails the member: a medium's error (member.h's
 *            classes) as much as the member's going away, for now.
 *  run       a batch whose requests fail with either class fails their
 *            members, and past the tolerance says EIO, whatever the
 *            members said: never a link's errno to the caller.
 *  serve     the array serves with at most `tolerance` failed members; a
 *            row, with at most that many unreadable there (a member being
 *            rebuilt is readable below its recovery offset only).
 *  reclaim   a replaced member is closed only once no reader section
 *            that could hold it is open, and then within two reclaims;
 *            MEMBERS_READ_FOR_CURRENT_SCOPE leaves its section at the end
 *            of the scope.
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

/* A member whose closing the test sees. */
static int closed;

static int
counted_io (struct member_io **ios, size_t n)
{
  return 0;
}

static void
counted_close (struct member *m)
{
  closed++;
  free (m);
}

static const struct member_ops counted_ops = {
  .kind = "counted", .io = counted_io, .close = counted_close,
};

static struct member *
counted (void)
{
  struct member *m = calloc (1, sizeof *m);

  ck_assert (m != NULL);
  m->ops = &counted_ops;
  m->name = (char *) "counted";
  atomic_init (&m->state, MEMBER_FAILED);
  return m;
}

static void
table (struct members *ms, struct member **m, int n, int level)
{
  members_init (ms);
  for (int i = 0; i < n; i++)
    m[i] = mem_member_new ("mem", 8192, 1);
  members_arrange (ms, m, n);
  members_set_level (ms, level);
}

START_TEST (test_policy)
{
  static const struct { enum member_op op; int err; bool fails; } cases[] = {
    { MEMBER_PUNCH, EOPNOTSUPP, false },
    { MEMBER_ZERO, EOPNOTSUPP, false },
    { MEMBER_FLUSH, EOPNOTSUPP, true },
    { MEMBER_WRITE, EOPNOTSUPP, true },
    { MEMBER_READ, EIO, true },
    { MEMBER_PUNCH, EIO, true },
    { MEMBER_ZERO, ENOSPC, true },
    /* The medium's errors, and the member's going away, alike. */
    { MEMBER_READ, ENODATA, true },
    { MEMBER_WRITE, EILSEQ, true },
    { MEMBER_READ, MEMBER_ESHORT, true },
    { MEMBER_FLUSH, EIO, true },
    { MEMBER_READ, ENOTCONN, true },
    { MEMBER_WRITE, ETIMEDOUT, true },
    { MEMBER_ZERO, ENODEV, true },
    { MEMBER_PUNCH, ESHUTDOWN, true },
  };

  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    struct member *m = mem_member_new ("mem", 8192, 1);
    struct member_io io = { .member = m, .op = cases[k].op,
                            .err = cases[k].err };

    ck_assert_int_eq (members_io_error (m, cases[k].op, cases[k].err),
                      cases[k].fails);
    ck_assert_int_eq (member_failed (m), cases[k].fails);
    mem_member_revive (m);
    members_io_failed (&io, 1);
    ck_assert_int_eq (member_failed (m), cases[k].fails);
    member_close (m);
  }
}
END_TEST

START_TEST (test_run)
{
  static const int errs[] = { EIO, ENOTCONN, MEMBER_ESHORT, ETIMEDOUT };
  struct members ms;
  struct member *m[4];
  uint8_t buf[4][4096];
  struct member_io ios[4];

  table (&ms, m, 4, 5);
  for (int round = 0; round < 2; round++) {
    /* Member 0 fails a read: the array still serves.  Then member 1
     * too: it no longer does, and says EIO.  Each error of one class,
     * then of the other: EIO then ENOTCONN, a short transfer then
     * ETIMEDOUT.
     */
    for (int k = 0; k < 2; k++) {
      int err = errs[round * 2 + k];

      mem_member_fail_from_errno (m[k], MEMBER_READ, 0, err);
      for (int i = 0; i < 4; i++)
        ios[i] = (struct member_io) { .member = m[i], .op = MEMBER_READ,
                                      .buf = buf[i], .len = 4096 };
      errno = 0;
      if (k == 0) {
        ck_assert_int_eq (members_run (&ms, ios, 4, MEMBERS_WHOLE_ARRAY), 0);
        ck_assert_int_eq (ios[0].err, err);
      }
      else {
        ck_assert_int_eq (members_run (&ms, ios, 4, MEMBERS_WHOLE_ARRAY), -1);
        ck_assert_msg (errno == EIO, "past the tolerance after %s: %s",
                       strerror (err), strerror (errno));
      }
      ck_assert_msg (member_failed (m[k]), "%s did not fail the member",
                     strerror (err));
    }
    for (int i = 0; i < 4; i++)
      mem_member_revive (m[i]);
  }
  members_destroy (&ms);
}
END_TEST

START_TEST (test_serve)
{
  struct members ms;
  struct member *m[6];

  table (&ms, m, 6, 6);
  ck_assert (members_can_serve (&ms) && members_healthy (&ms));
  member_fail (m[0], EIO);
  member_start_rebuild (m[1], 10);
  ck_assert_int_eq (members_failed (&ms), 1);
  ck_assert_int_eq (members_rebuilding (&ms), 1);
  ck_assert_int_eq (members_in_sync (&ms), 4);
  ck_assert (members_can_serve (&ms) && !members_healthy (&ms));
  ck_assert_int_eq (members_unreadable (&ms, 9), 1);
  ck_assert_int_eq (members_unreadable (&ms, 10), 2);
  ck_assert (members_row_servable (&ms, 10));
  member_fail (m[2], EIO);
  ck_assert (members_can_serve (&ms));          /* 2 failed: RAID-6 */
  ck_assert (members_row_servable (&ms, 9));
  ck_assert (!members_row_servable (&ms, 10));  /* 3 unreadable there */
  member_fail (m[3], EIO);
  ck_assert (!members_can_serve (&ms));
  members_set_level (&ms, 5);
  member_rebuilt (m[1]);        /* REBUILDING -> IN_SYNC */
  ck_assert_int_eq (members_rebuilding (&ms), -1);
  ck_assert_int_eq (member_state (m[0]), MEMBER_FAILED);
  members_destroy (&ms);
}
END_TEST

START_TEST (test_reclaim)
{
  struct members ms;
  struct member *m[3];
  unsigned t;

  table (&ms, m, 3, 5);
  closed = 0;

  /* A reader that could hold the old member keeps it open. */
  member_close (members_at (&ms, 1));
  atomic_store (&ms.slot[1], counted ());
  t = members_enter (&ms);
  ck_assert (!members_limbo_full (&ms));
  members_replace (&ms, 1, mem_member_new ("new", 8192, 1));
  ck_assert_int_eq (member_state (members_at (&ms, 1)), MEMBER_REBUILDING);
  for (int k = 0; k < 5; k++) {
    members_reclaim (&ms);
    ck_assert_int_eq (closed, 0);
  }
  members_exit (&ms, t);
  members_reclaim (&ms);
  members_reclaim (&ms);
  ck_assert_int_eq (closed, 1);

  /* A reader that came after the replace cannot hold it. */
  member_close (members_at (&ms, 1));
  atomic_store (&ms.slot[1], counted ());
  members_reclaim (&ms);
  members_replace (&ms, 1, mem_member_new ("new", 8192, 1));
  members_reclaim (&ms);        /* the epoch moves on */
  t = members_enter (&ms);
  members_reclaim (&ms);
  members_reclaim (&ms);
  ck_assert_int_eq (closed, 2);
  members_exit (&ms, t);

  /* The scoped section ends with its scope. */
  {
    MEMBERS_READ_FOR_CURRENT_SCOPE (&ms);
    uint64_t e = atomic_load (&ms.epoch);

    ck_assert_uint_eq (atomic_load (&ms.readers[e & 1]), 1);
  }
  ck_assert_uint_eq (atomic_load (&ms.readers[0]) +
                     atomic_load (&ms.readers[1]), 0);
  members_destroy (&ms);
  ck_assert_int_eq (closed, 2);
}
END_TEST

static Suite *
members_suite (void)
{
  const struct check_case cases[] = {
    { "policy", test_policy },
    { "run", test_run },
    { "serve", test_serve },
    { "reclaim", test_reclaim },
  };

  return check_suite ("members", CHECK_CASES (cases), 0);
}

int
main (void)
{
  return check_run (members_suite (), false);
}
