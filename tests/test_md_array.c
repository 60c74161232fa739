/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: plugin/md_array.c keeps the md superblocks true while the
 * array serves, against in-memory members (member_mem.c) on an array
 * lib/md_rig.c creates (create=true, v1.2, no bitmap): the first update
 * writes one superblock per member, each with its own dev_number and
 * every member's role; the array goes active before a write and clean
 * after a flush with md's event counting (clean right after active takes
 * the count back down), and a failure is recorded at the next update
 * (clean); a member that fails while a write or a flush runs is recorded
 * faulty in the others' superblocks before that write or flush is
 * acknowledged (failure-before-ack); a replacement takes the lowest free
 * dev_number, so thousands of replacements keep the table small (reuse);
 * a hot spare's superblock is md's of a spare (its slot 0xffff, its own
 * dev_number and device UUID) at the current event count from the
 * update that adds it on, and when it takes a failed role it keeps its
 * dev_number and device UUID, its slot now naming the role (spare).
 *
 * The oracle reads the superblocks from the members' bytes at md_p.h's
 * offsets (events, resync_offset, dev_number, max_dev, dev_roles,
 * feature_map, recovery_offset: lib/md_rig.c), never through md_super.c.
 * CK_RUN_CASE=name runs one.
 */

#include <config.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <check.h>

#include "check_run.h"

#include "md_array.h"
#include "md_rig.h"
#include "member.h"
#include "member_table.h"

/* Every working member says events and resync_offset. */
static void
check_all (struct rig *r, uint64_t events, bool clean, const char *what)
{
  for (int i = 0; i < r->ms.n; i++) {
    struct member *m = members_at (&r->ms, i);

    if (member_failed (m))
      continue;
    ck_assert_msg (sb_events (m) == events, "%s: member %d has events %llu, "
                   "not %llu", what, i, (unsigned long long) sb_events (m),
                   (unsigned long long) events);
    ck_assert_msg ((sb_resync (m) == UINT64_MAX) == clean, "%s: member %d "
                   "is %s", what, i, clean ? "active" : "clean");
  }
}

/* create, then md's clean/active cycle: the count goes up to mark the
 * array active and back down when it is clean again right after (md's
 * trick, so that the bitmap one ahead is not rewritten each time).
 */
START_TEST (test_clean_active)
{
  struct rig r;
  uint64_t e;

  rig_create (&r);
  for (int i = 0; i < N; i++) {
    struct member *m = members_at (&r.ms, i);

    ck_assert_uint_eq (sb_dev_number (m), i);
    ck_assert_uint_eq (sb_max_dev (m), N);
    for (int d = 0; d < N; d++)
      ck_assert_uint_eq (sb_role (m, d), d);
  }
  e = sb_events (members_at (&r.ms, 0));
  check_all (&r, e, false, "created: active until its resync");
  ck_assert (md_array_needs_resync (r.md));
  md_array_flushed (r.md);
  check_all (&r, e, false, "a flush before the resync changes nothing");

  md_array_resynced (r.md);
  check_all (&r, e + 1, true, "resynced: clean");
  for (int k = 0; k < 3; k++) {
    md_array_write_begin (r.md);
    check_all (&r, e + 2, false, "a write: active");
    md_array_write_begin (r.md);
    md_array_write_end (r.md);
    check_all (&r, e + 2, false, "a second write: nothing written");
    md_array_flushed (r.md);
    check_all (&r, e + 2, false, "a flush during a write: still active");
    md_array_write_end (r.md);
    md_array_flushed (r.md);
    check_all (&r, e + 1, true, "flushed: clean, the count back down");
  }
  /* A change of state counts up from the highest count ever written. */
  member_fail (members_at (&r.ms, 3), EIO);
  md_array_states_changed (r.md);
  check_all (&r, e + 3, true, "a member failed");
  for (int i = 0; i < 3; i++)
    ck_assert_uint_eq (sb_role (members_at (&r.ms, i), 3), 0xfffe);
  rig_free (&r);
}
END_TEST

/* A member that fails while a write runs, or while a flush runs beside a
 * write, is recorded faulty in the others' superblocks before that write
 * or flush is acknowledged (md_array_write_end, md_array_flushed): a crash
 * right after the reply must not assemble it as in sync, or the resync
 * would rebuild parity from its old data and lose the write.  The old code
 * waited for the next write to begin, or for a flush with no write in
 * flight.
 */
static void
check_faulty (struct rig *r, int failed, const char *what)
{
  for (int i = 0; i < N; i++)
    if (i != failed)
      ck_assert_msg (sb_role (members_at (&r->ms, i), failed) == 0xfffe,
                     "%s: member %d's superblock has member %d as %#x, not "
                     "faulty", what, i, failed,
                     (unsigned) sb_role (members_at (&r->ms, i), failed));
}

START_TEST (test_failure_recorded_before_ack)
{
  struct rig r;

  rig_create (&r);
  md_array_resynced (r.md);
  md_array_write_begin (r.md);
  member_fail (members_at (&r.ms, 3), EIO);
  md_array_write_end (r.md);
  check_faulty (&r, 3, "a write during which member 3 failed, ended");
  rig_free (&r);

  rig_create (&r);
  md_array_resynced (r.md);
  md_array_write_begin (r.md);
  member_fail (members_at (&r.ms, 2), EIO);
  md_array_flushed (r.md);
  check_faulty (&r, 2, "a flush during which member 2 failed, a write in "
                "flight");
  md_array_write_end (r.md);
  rig_free (&r);
}
END_TEST

/* Replace the member of role i (failed) by a new one, as jobs.c does. */
static struct member *
replace (struct rig *r, int i, int serial)
{
  struct member *m = new_member (100 + serial);

  members_replace (&r->ms, i, m);
  md_array_states_changed (r->md);
  return m;
}

/* A replacement takes the lowest free dev_number: its predecessor's once
 * an update has recorded it faulty.  A member that failed by an I/O error
 * and is replaced before any update recorded it takes two updates (one
 * to record it, one to install its successor), so that it is then two
 * events behind: stale.  Thousands of cycles keep max_dev at N.
 */
START_TEST (test_dev_number_reuse)
{
  struct rig r;
  struct member *m, *old;

  rig_create (&r);
  md_array_resynced (r.md);

  member_fail (members_at (&r.ms, 1), EIO);
  md_array_states_changed (r.md);         /* recorded faulty */
  m = replace (&r, 1, 0);
  ck_assert_uint_eq (sb_dev_number (m), 1);
  ck_assert_uint_eq (sb_max_dev (m), N);
  ck_assert (sb_features (m) & 0x2);      /* rebuilding, from row 0 */
  ck_assert_uint_eq (sb_recovery (m), 0);
  for (int i = 0; i < N; i++)
    ck_assert_uint_eq (sb_role (members_at (&r.ms, i), 1), 1);

  /* Failed and replaced at once: two updates. */
  old = members_at (&r.ms, 2);
  member_fail (old, EIO);
  {
    uint64_t before = sb_events (members_at (&r.ms, 0));

    m = replace (&r, 2, 1);
    ck_assert_uint_eq (sb_dev_number (m), 2);
    ck_assert_uint_eq (sb_events (m), before + 2);
    ck_assert_uint_eq (sb_events (old) + 2, sb_events (m));
  }

  for (int k = 0; k < 3000; k++) {
    int i = k % N;

    member_fail (members_at (&r.ms, i), EIO);
    if (k % 2)
      md_array_states_changed (r.md);
    m = replace (&r, i, k + 2);
    ck_assert_msg (sb_dev_number (m) < N && sb_max_dev (m) == N,
                   "cycle %d: dev_number %u, max_dev %u", k,
                   sb_dev_number (m), sb_max_dev (m));
    members_reclaim (&r.ms);            /* closes the old ones */
    members_reclaim (&r.ms);
  }
  /* Every role's slot names it, on every member. */
  for (int i = 0; i < N; i++)
    for (int d = 0; d < N; d++)
      ck_assert_uint_eq (sb_role (members_at (&r.ms, i),
                                  sb_dev_number (members_at (&r.ms, d))), d);
  rig_free (&r);
}
END_TEST

/* Every working member and spare sp say spare_slot is a spare's, and
 * sp's events are the members'.
 */
static void
check_spare (struct rig *r, struct member *sp, uint32_t spare_slot,
             const char *what)
{
  uint64_t e = sb_events (members_at (&r->ms, 0));

  ck_assert_msg (sb_events (sp) == e, "%s: the spare has events %llu, the "
                 "members %llu", what, (unsigned long long) sb_events (sp),
                 (unsigned long long) e);
  ck_assert_msg (sb_resync (sp) == sb_resync (members_at (&r->ms, 0)),
                 "%s: the spare's resync_offset is not the members'", what);
  ck_assert_uint_eq (sb_dev_number (sp), spare_slot);
  ck_assert_uint_eq (sb_max_dev (sp), spare_slot + 1);
  ck_assert_uint_eq (sb_role (sp, spare_slot), 0xffff);
  ck_assert_uint_eq (sb_features (sp) & 0x2, 0);  /* no recovery offset */
  for (int i = 0; i < N; i++) {
    struct member *m = members_at (&r->ms, i);

    if (member_failed (m))
      continue;
    ck_assert_uint_eq (sb_max_dev (m), spare_slot + 1);
    ck_assert_msg (sb_role (m, spare_slot) == 0xffff, "%s: member %d has "
                   "the spare's slot as %#x", what, i,
                   (unsigned) sb_role (m, spare_slot));
    for (int d = 0; d < N; d++)
      ck_assert_uint_eq (sb_role (sp, d), sb_role (m, d));
  }
}

/* A hot spare (md_array_spare_add): md's superblock of a spare, as
 * super_1_sync writes one for a device with no raid_disk, kept current by
 * every update (clean and active, a failure), so that mdadm assembles it
 * as a spare and a restart finds it; once it takes a failed role it keeps
 * its dev_number and device UUID, as md keeps a spare's desc_nr.
 */
START_TEST (test_spare)
{
  struct rig r;
  struct member *sp;
  uint8_t uuid[16];

  rig_create (&r);
  md_array_resynced (r.md);
  sp = rig_add_spare (&r, N);
  check_spare (&r, sp, N, "added");
  memcpy (uuid, sb_device_uuid (sp), 16);
  for (int i = 0; i < N; i++)
    ck_assert (memcmp (uuid, sb_device_uuid (members_at (&r.ms, i)), 16));
  for (int k = 0; k < 3; k++) {
    md_array_write_begin (r.md);
    check_spare (&r, sp, N, "a write: active");
    md_array_write_end (r.md);
    md_array_flushed (r.md);
    check_spare (&r, sp, N, "flushed: clean");
  }
  ck_assert (!memcmp (uuid, sb_device_uuid (sp), 16));

  member_fail (members_at (&r.ms, 2), EIO);
  md_array_states_changed (r.md);
  check_spare (&r, sp, N, "member 2 failed");
  ck_assert_uint_eq (sb_role (sp, 2), 0xfffe);

  /* The takeover, as jobs.c's jobs_spare_takeover does it. */
  md_array_spare_takes (r.md, 2, sp->serial);
  ck_assert_ptr_eq (members_take_spare (&r.ms, 0), sp);
  members_replace (&r.ms, 2, sp);
  md_array_states_changed (r.md);
  ck_assert_uint_eq (sb_dev_number (sp), N);
  ck_assert (!memcmp (uuid, sb_device_uuid (sp), 16));
  ck_assert (sb_features (sp) & 0x2);           /* rebuilding, from row 0 */
  ck_assert_uint_eq (sb_recovery (sp), 0);
  for (int i = 0; i < N; i++) {
    struct member *m = members_at (&r.ms, i);

    ck_assert_uint_eq (sb_role (m, N), 2);
    /* The failed disk has left the array (as after mdadm --remove; md
     * keeps it, faulty, until then): its slot is free.
     */
    ck_assert_uint_eq (sb_role (m, 2), 0xffff);
    ck_assert_uint_eq (sb_events (m), sb_events (members_at (&r.ms, 0)));
  }
  rig_free (&r);
}
END_TEST

static Suite *
md_array_suite (void)
{
  const struct check_case cases[] = {
    { "clean", test_clean_active },
    { "failure-before-ack", test_failure_recorded_before_ack },
    { "reuse", test_dev_number_reuse },
    { "spare", test_spare },
  };

  return check_suite ("md_array", CHECK_CASES (cases), 30);
}

int
main (void)
{
  return check_run (md_array_suite (), false);
}
