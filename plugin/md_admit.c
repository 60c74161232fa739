/* SPDX-License-Identifier: BSD-3-Clause */
/* A disk offered for a role of the array (admission.c's rules for
 * replace, re-add, readd=auto), judged against md's view of it before it
 * is let in.
 * Nothing here changes the table or writes to a disk: a disk accepted
 * for re-add is given its identity (md_identity.c), and its announcement
 * is kept for the next update.
 *
 * Re-add (md_array_readd_check, md_array_readd_expect; admission.c asks
 * the first, jobs.c announces with the second).  A failed role's own
 * disk, opened again, is accepted as md's super_1_validate accepts a disk coming back into an array with a
 * bitmap: this set's UUID, the role's device UUID and dev_number, events
 * not newer than the array's nor older than md's count at the bitmap's
 * last clearing (without a bitmap: at the start or last clearing of
 * the record of missed rows kept in memory; admission.c gives that count
 * as floor, from row_record.c).  A disk that failed during a full rebuild is
 * vouched for only below where the rebuild had reached
 * (readd_whole_from).  It comes back through the table like a
 * replacement (a new member object), but announced first
 * (md_array_readd_expect), so that the update that finds it keeps the
 * role's slot and UUID instead of giving it new ones (md_array.c:
 * install_replacements); while it is resynced its superblock says so as
 * md's does (recovery offset, and 0x80: from the bitmap), and an
 * assembly that finds that resumes it as a re-add (md_assemble.c).  A
 * member given at start-up with a stale superblock that assembly kept in
 * its role, failed (md_array_stale_at_assembly), may be re-added the
 * same way by jobs_after_fork.
 *
 * Foreign (md_array_foreign).  A replacement must not carry anything
 * else's: an md superblock of another set (of any set, for a raw array),
 * one that cannot be used, or any other format signature.c knows.  A
 * disk of this array's own set is not foreign: it is coming back.
 *
 * Too small (md_array_cannot_hold).  The data, and for v1.0 the bitmap
 * and the superblock after it, must fit on the disk; assembly asks the
 * same of every member (md_admit_cannot_hold).
 *
 * Locking: md_array_readd_check reads the role's dev_number and device
 * UUID and md's highest event count under md->lock (updates change
 * them); md_array_readd_expect sets readd_serial under it.  The other
 * checks read only what no update changes (the set UUID and the
 * geometry of the superblocks), and stale_at_assembly is written before
 * the table is published, so they take no lock.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "lock.h"
#include "md_array_internal.h"
#include "md_super.h"
#include "member.h"
#include "signature.h"

/* Why member m cannot hold what the superblock sb describes (its data,
 * and for v1.0 the bitmap and the superblock after the data), or NULL.
 */
const char *
md_admit_cannot_hold (const struct md_super *sb, const struct member *m)
{
  static __thread char msg[256];
  uint64_t end = sb->data_offset + sb->size, room = m->size;

  if (sb->minor == 0) {
    /* v1.0: the data must end before the member's own superblock, and
     * before the bitmap, which precedes it.
     */
    room = md_super_location (0, m->size);
    if (room == UINT64_MAX)
      room = 0;
    else if (sb->feature_map & MD_FEATURE_BITMAP) {
      int64_t bm = (int64_t) room + (int64_t) sb->bitmap_offset * 512;

      room = bm < 0 ? 0 : bm;
    }
  }
  if (end <= room)
    return NULL;
  snprintf (msg, sizeof msg, "is too small: %" PRIu64 " bytes, but the md "
            "superblocks say %" PRIu64 " are used%s", m->size, end,
            sb->minor == 0 ? ", before the bitmap and superblock of md v1.0 "
            "at its end" : "");
  return msg;
}

/* Re-add (md.c's super_1_validate and mdadm --re-add, in their spirit):
 * the superblock m carries must be role i's own, with the set UUID, the
 * device UUID and the dev_number the array keeps for the role, and an
 * event count no newer than the array's; and the write-intent bitmap
 * must cover what it missed: there is one, and its bits were not cleared
 * since m's superblock was written (events >= md's count at the last
 * clearing).  Nothing is written; on success m is given the identity its
 * new connections are checked against (md_identity_expect).
 */
static const char *
readd_refusal (struct md_array *md, int i, const struct md_super *sb,
               uint64_t floor, char *msg, size_t len)
{
  if (memcmp (sb->set_uuid, md->sb.set_uuid, 16))
    return "it is a different disk: its md superblock belongs to another "
      "array (set UUID)";
  if (md->dev_number[i] == UINT32_MAX ||
      memcmp (sb->device_uuid, md->device_uuid[i], 16) ||
      sb->dev_number != md->dev_number[i])
    return "it is a different disk: its md superblock is another member's "
      "(device UUID, dev_number)";
  if (sb->events > md->max_events) {
    snprintf (msg, len, "its md superblock is newer than the array's "
              "(events %" PRIu64 " > %" PRIu64 "): it was used elsewhere",
              sb->events, md->max_events);
    return msg;
  }
  if (sb->events < floor) {
    snprintf (msg, len, "%s cannot prove its content: its md superblock "
              "(events %" PRIu64 ") is older than %s (events %" PRIu64 "), "
              "so it may miss writes %s", md->bitmap ?
              "the write-intent bitmap" : "the record of missed rows (in "
              "memory: the array has no bitmap)", sb->events,
              md->bitmap ? "the bitmap's last clearing" :
              "the record's start or last clearing", floor, md->bitmap ?
              "whose bits are gone" : "that were never recorded");
    return msg;
  }
  return NULL;
}

/* The row from which m's content is unknown: a member that failed
 * during a full rebuild (recovery offset, not from the bitmap) was
 * written only below its recovery offset, and the bitmap holds only what
 * it missed since, not the rows its rebuild never reached.
 */
static uint64_t
readd_whole_from (const struct md_array *md, const struct md_super *sb)
{
  if ((sb->feature_map & MD_FEATURE_RECOVERY_OFFSET) &&
      !(sb->feature_map & MD_FEATURE_RECOVERY_BITMAP))
    return sb->recovery_offset / md->sb.chunk;
  return UINT64_MAX;
}

int
md_array_readd_check (struct md_array *md, int i, struct member *m,
                      uint64_t floor, uint64_t *whole_from, char *msg,
                      size_t len)
{
  struct md_super *sb;
  const char *why = NULL;
  int r;

  if ((sb = malloc (sizeof *sb)) == NULL) {
    snprintf (msg, len, "out of memory");
    return -1;
  }
  r = md_super_read (m, md->sb.minor, sb, &why);
  if (r == -2)
    snprintf (msg, len, "cannot read its md superblock: %s",
              member_strerror (errno ? errno : EIO));
  else if (r == -1)
    snprintf (msg, len, "it is a different disk: its md superblock cannot "
              "be used (%s)", why);
  else if (r == 0)
    snprintf (msg, len, "it is a different disk: it has no md superblock");
  else {
    ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&md->lock);

    why = readd_refusal (md, i, sb, floor, msg, len);
    if (why && why != msg)
      snprintf (msg, len, "%s", why);
    if (why == NULL) {
      md_identity_expect (m, sb, true);
      *whole_from = readd_whole_from (md, sb);
    }
  }
  free (sb);
  return r == 1 && why == NULL ? 0 : -1;
}

bool
md_array_stale_at_assembly (const struct md_array *md, int i)
{
  return md && md->stale_at_assembly[i];
}

void
md_array_readd_expect (struct md_array *md, int i, uint64_t serial)
{
  if (md == NULL)
    return;

  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&md->lock);
  md->readd_serial[i] = serial;
}


/* Whether m, offered as a replacement, belongs to something else: an md
 * superblock of another set (of any set, for a raw array), one we cannot
 * read, or any other format signature.c knows.  A disk of this array's
 * own set is not foreign: it is coming back.  Returns 1 with what it
 * carries in msg, 0 if it is blank or ours, -1 (errno) if m cannot be
 * read.
 */
int
md_array_foreign (const struct md_array *md, struct member *m, char *msg,
                  size_t len)
{
  struct md_super *sb = malloc (sizeof *sb);
  const char *why = NULL, *what = NULL;
  char u[40];
  int r, foreign = -1;

  if (sb == NULL)
    return -1;
  r = md_super_read (m, MD_MINOR_ANY, sb, &why);
  if (r == 1 && md && memcmp (sb->set_uuid, md->sb.set_uuid, 16) == 0)
    foreign = 0;
  else if (r == 1) {
    uuid_text (sb->set_uuid, u);
    snprintf (msg, len, md ? "an md superblock of another array (UUID %s)"
              : "an md superblock (array UUID %s)", u);
    foreign = 1;
  }
  else if (r == -1) {
    snprintf (msg, len, "an md superblock that cannot be used (%s)", why);
    foreign = 1;
  }
  else if (r == 0 && (r = signature_probe (m, &what)) >= 0) {
    if (r == 1)
      snprintf (msg, len, "%s", what);
    foreign = r;
  }
  free (sb);
  return foreign;
}

const char *
md_array_cannot_hold (const struct md_array *md, const struct member *m)
{
  return md ? md_admit_cannot_hold (&md->sb, m) : NULL;
}
