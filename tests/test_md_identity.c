/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: plugin/md_identity.c: a member's identity (what a new
 * connection to it must find) follows the superblocks md_array.c writes,
 * against in-memory members on an array lib/md_rig.c creates (v1.2, the
 * superblock at 4 KiB).  A new connection's read sent before a
 * superblock write and answered after it shows the superblock from
 * before the write, or the new one: both are the member, accepted.  A
 * read sent after the write that shows the old superblock is an older
 * copy of the disk, refused; so is a superblock from two updates back
 * (identity).
 *
 * The oracle: the superblocks the test copies out of the members' bytes
 * between updates, and their event counts read at md_p.h's offset
 * (lib/md_rig.c), never through md_super.c.  CK_RUN_CASE=name runs one.
 */

#include <config.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "check_run.h"

#include "md_array.h"
#include "md_rig.h"
#include "member.h"
#include "member_mem.h"
#include "member_table.h"

/* A new connection's identity read, sent before a superblock write and
 * answered after it, shows the superblock from before the write: that is
 * the member, not an older copy of it.  (The soak found it, seed
 * 796263561: member_nbd.c read the old superblock on a worker's new
 * connection while update() wrote the next one, and verify, judging by
 * what had been written by the time the answer came, failed the member as
 * "behind".)  A read sent after the write that shows the old superblock
 * is an older copy, and still refused; so is one from two updates back.
 */
START_TEST (test_identity_read_during_write)
{
  struct rig r;
  struct member *m;
  struct member_identity *id;
  uint8_t *before, *two_back;
  uint64_t begun, e;
  char why[256];

  rig_create (&r);
  md_array_resynced (r.md);
  m = members_at (&r.ms, 1);
  id = member_identity (m);
  ck_assert (id != NULL && id->begin != NULL);
  ck_assert_uint_eq (id->offset, SB);
  e = sb_events (m);
  two_back = malloc (id->len);
  before = malloc (id->len);
  ck_assert (two_back && before);
  memcpy (two_back, mem_member_data (m) + SB, id->len);
  md_array_states_changed (r.md);               /* e + 1 */
  memcpy (before, mem_member_data (m) + SB, id->len);
  ck_assert_uint_eq (sb_events (m), e + 1);

  begun = id->begin (id);                       /* the read is sent */
  md_array_write_begin (r.md);   /* e + 2 */
  ck_assert_uint_eq (sb_events (m), e + 2);
  ck_assert_msg (id->verify (id, begun, before, why, sizeof why) == NULL,
                 "a read sent before the write, answered after it, showing "
                 "the superblock from before: refused");
  ck_assert_msg (id->verify (id, begun, mem_member_data (m) + SB, why,
                             sizeof why) == NULL,
                 "the same read showing the new superblock: refused");

  begun = id->begin (id);                       /* sent after the write */
  ck_assert_msg (id->verify (id, begun, before, why, sizeof why) != NULL,
                 "a read sent after the write showing the old superblock "
                 "(an older copy of the disk): accepted");
  ck_assert_msg (id->verify (id, begun, two_back, why, sizeof why) != NULL,
                 "a superblock two updates back: accepted");
  md_array_write_end (r.md);
  free (before);
  free (two_back);
  rig_free (&r);
}
END_TEST

static Suite *
md_identity_suite (void)
{
  const struct check_case cases[] = {
    { "identity", test_identity_read_during_write },
  };

  return check_suite ("md_identity", CHECK_CASES (cases), 30);
}

int
main (void)
{
  return check_run (md_identity_suite (), false);
}
