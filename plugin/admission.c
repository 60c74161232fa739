/* SPDX-License-Identifier: BSD-3-Clause */
/* Admission: the rules that decide whether a disk offered for a failed
 * role may take it.  Whatever takes the role next overwrites rows of it
 * (a rebuild: every row; a re-add: the rows the row record says it
 * missed), and from then on serves reads: a disk that cannot hold the
 * rows, that the array already uses, that belongs to something else, or
 * that is not what a re-add takes it for would lose data, its own or the
 * array's.  jobs.c asks admission_check after it opened the disk
 * (replace, re-add), before it changes anything; this file changes
 * nothing but a re-added member's readd_whole_from.
 *
 * The rules, in the order they are asked (each refusal names the disk
 * as the operator gave it, NAME below):
 *
 *   kind         rule              refuses, with
 *   every disk   size              one smaller than the data offset and
 *                                  every row of a member: "NAME is too
 *                                  small: N bytes, the array needs N"
 *                md room           md: one on which the data, and for
 *                                  v1.0 the bitmap and the superblock
 *                                  after it, do not fit as md's
 *                                  superblocks record them: "NAME is too
 *                                  small: ..." (md_array_cannot_hold)
 *                alignment         one whose block size is over 4 KiB or
 *                                  does not divide the data offset: "NAME:
 *                                  its block size (N bytes) ..."
 *                                  (array_cannot_align)
 *                already member    a disk that holds another role: "NAME
 *                                  is already member J"
 *   replacement  foreign           one that carries an md superblock of
 *                                  another array (of any, for a raw array),
 *                                  one md cannot use, or a format
 *                                  signature.c knows (a partition table, a
 *                                  filesystem): "NAME carries WHAT:
 *                                  refusing to overwrite it (replace N
 *                                  PATH force does)"; one that cannot be
 *                                  read: "cannot read NAME: ERROR"
 *   spare        foreign           as a replacement: checked when the
 *                                  spare is added (spare=, add-spare N
 *                                  PATH; "NAME carries WHAT: refusing to
 *                                  use it as a spare"), and again when it
 *                                  takes a role, since it may have been
 *                                  written meanwhile by something else
 *   forced       (none beyond      replace N PATH force: the operator says
 *                every disk's)     what the disk carries may go
 *   re-add       same disk         one that is not role i's disk as it was
 *                                  when it failed, or whose missed rows
 *                                  nothing can vouch for: "NAME: WHY;
 *                                  'replace I NAME' rebuilds it whole"
 *                takes writes      one that answers reads but not writes:
 *                                  "NAME: WHY; re-add it once it takes
 *                                  writes again"
 *
 * Why each, and md's behaviour where md has the rule:
 *
 *   - size: the rebuild writes every row of the role.  mdadm --add
 *     refuses such a disk ("not large enough to join array"), and so does
 *     md itself.
 *   - md room: md's super_1_load refuses a member whose recorded data
 *     size is more than the member holds (md_array.c's member_room), so
 *     the array would not assemble again, under md or here.
 *   - alignment: the stripe cache reads and writes whole 4 KiB pages
 *     from the data offset on; array_open refuses such a member at
 *     start-up for the same reason.
 *   - already member: one disk in two roles would have each role's
 *     writes overwrite the other's chunks.  The disk is compared by what
 *     it is (member_same: inode, server and export), never by its name,
 *     and against every role but i: role i's own disk may come back.  md
 *     refuses a device the array holds already (EEXIST).
 *   - spare: a spare is a replacement chosen in advance: when a role
 *     fails it is rebuilt over without anyone asked, so it passes every
 *     rule a replacement passes, when it is added (against every role:
 *     size and room are the same for all) and again when it takes one
 *     (md's remove_and_add_spares checks nothing more than that the
 *     device is a working spare: it trusts what mdadm --add checked; we
 *     read it again, which costs one superblock read).  Its own
 *     superblock, this array's with role spare, is not foreign.  There
 *     is no force: a disk that must be overwritten is given by replace.
 *   - foreign: the rebuild overwrites the whole disk.  mdadm --create
 *     asks before it overwrites a disk that appears to be part of a raid
 *     array or to hold a filesystem or a partition table; the control
 *     socket has nobody to ask, so it refuses and `force` is the answer
 *     yes.  A disk of this array's own set is not foreign: it is coming
 *     back (md_array_foreign).
 *   - same disk: a re-add rebuilds only the rows the row record says
 *     the disk missed, which is right only for the role's own disk still
 *     holding what it held when it failed.  In an md array its
 *     superblock says so, as md's super_1_validate and mdadm --re-add
 *     check it: the array's set UUID, the role's device UUID and
 *     dev_number, an event count no newer than the array's and not older
 *     than the record's last clearing (md_array_readd_check); where that
 *     fails mdadm refuses the re-add ("--re-add for ... is not possible")
 *     and only a full recovery (here: replace) takes the disk.  A raw
 *     array has no superblock: only the backend can prove it is the same
 *     disk (member_vouch: the same file; the same NBD server instance,
 *     still connected), and until the failure is recorded the row its
 *     rebuild had reached is not known (docs/design.md, "Trust
 *     boundaries and identity").
 *   - takes writes: ours; md has no such probe.  A disk that answers
 *     reads but not writes has not come back: the re-add's first write
 *     would fail it again, and readd=auto would then leave it out for
 *     good.
 *
 * The order: what reads nothing first (size, room, alignment, the
 * table), then what reads the disk (foreign, same disk), and last the
 * one rule that writes to it (takes writes: its own first 4 KiB, as
 * read), only once it is known to be the role's own disk.
 *
 * What jobs.c checks around these rules is about the role and the jobs,
 * not the disk: before the disk is opened, that the array is writable,
 * the role exists and has failed, the array can be rebuilt and the name
 * is not "missing"; after admission, under the jobs' lock, that the role
 * is still failed (and for a re-add still held by the same failed
 * member), no scrub runs and the member table has room (install_
 * replacement).  A new kind of disk (a disk for growing the array) adds
 * a kind and its rules here, and its action in jobs.c, as the hot spare
 * did.
 *
 * Locking: none of its own.  admission_check runs in the caller's reader
 * section (the members it compares against stay open) but outside the
 * jobs' lock, since reading a disk can take as long as an NBD server's
 * timeout; md_array_readd_check takes md's lock.  That is why jobs.c
 * checks the role again under its lock before it installs the disk.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "array.h"
#include "md_array.h"
#include "member_table.h"
#include "row_record.h"

#define PROBE_BYTES 4096        /* takes_writes: MEMBER_MAX_ALIGN */

/* The rules for every disk: whether m can hold role i's rows, and is not
 * a disk the array has already (message in msg).
 */
static int
fits (struct array *a, int i, struct member *m, const char *name, char *msg,
      size_t len)
{
  /* The end of the last row on a member. */
  uint64_t need = geometry_member_offset (&a->g, a->g.stripes);
  const char *small;

  if (m->size < need) {
    snprintf (msg, len, "%s is too small: %" PRIu64 " bytes, the array "
              "needs %" PRIu64, name, m->size, need);
    return -1;
  }
  if ((small = md_array_cannot_hold (a->md, m)) != NULL) {
    snprintf (msg, len, "%s %s", name, small);
    return -1;
  }
  if (array_cannot_align (a, m)) {
    snprintf (msg, len, "%s: %s", name, array_cannot_align (a, m));
    return -1;
  }
  for (int j = 0; j < a->ms.n; j++)
    if (j != i && member_same (m, members_at (&a->ms, j))) {
      snprintf (msg, len, "%s is already member %d", name, j);
      return -1;
    }
  return 0;
}

/* The rebuild would overwrite whatever m holds: refuse another array's
 * disk, a partitioned disk, a filesystem (message in msg).
 */
static int
foreign (struct array *a, struct member *m, const char *name, bool spare,
         char *msg, size_t len)
{
  char what[256];

  switch (md_array_foreign (a->md, m, what, sizeof what)) {
  case 0:
    return 0;
  case 1:
    if (spare)
      snprintf (msg, len, "%s carries %s: refusing to use it as a spare "
                "(wipe it first, or give it by replace N PATH force)", name,
                what);
    else
      snprintf (msg, len, "%s carries %s: refusing to overwrite it (replace "
                "N PATH force does)", name, what);
    return 1;
  default:
    snprintf (msg, len, "cannot read %s: %s", name, member_strerror (errno));
    return -1;
  }
}

/* A member that failed while it was rebuilt holds nothing from its
 * recovery row on; one that failed during a re-add, nothing from the row
 * its own re-add had to rebuild whole from either (whichever is further:
 * below it the marks cover what it missed).  As far as this process saw:
 * an md re-add takes its superblock's recovery offset, which may lag.
 */
uint64_t
admission_failed_whole_from (const struct member *m)
{
  const char *why;
  int64_t when;
  uint64_t at, whole;

  if (!member_failure (m, &why, &when))
    return UINT64_MAX;
  at = m->failed_at_row;
  if (at == UINT64_MAX)
    return UINT64_MAX;
  whole = m->readd ? m->readd_whole_from : at;
  return at > whole ? at : whole;
}

/* Whether m, role i's failed disk opened again, is that disk as it was
 * when it failed, as far as what records the rows it missed can vouch
 * for it: md's superblock and its event count (md_array_readd_check), or
 * in a raw array what its backend can prove (member_vouch: the same
 * file; the same server instance, still connected).  Sets m's
 * readd_whole_from.  In a reader section: role i's failed member is
 * still open.  0, or -1 with why.
 */
static int
readd_same_disk (struct array *a, int i, struct member *m, char *why,
                 size_t len)
{
  struct member *old = members_at (&a->ms, i);
  const char *reason;
  int64_t when;

  if (a->md)
    return md_array_readd_check (a->md, i, m, row_record_missed_floor (a->rows),
                                 &m->readd_whole_from, why, len);
  if (!member_failure (old, &reason, &when)) {
    snprintf (why, len, "its failure is still being recorded: try again");
    return -1;
  }
  if (member_vouch (old, m, why, len) == -1)
    return -1;
  m->readd_whole_from = admission_failed_whole_from (old);
  return 0;
}

/* A disk that answers reads but not writes has not come back: the
 * re-add's first write would fail it again (and readd=auto would then
 * leave it out for good).  Its first 4 KiB (the padding before md
 * v1.2's superblock, v1.1's superblock itself, v1.0's data), written
 * back exactly as read, ask before anything changes; nobody else writes
 * the disk, which is in no role.  0, or -1
 * with why.
 */
static int
takes_writes (struct member *m, char *why, size_t len)
{
  void *buf = aligned_alloc (PROBE_BYTES, PROBE_BYTES);
  struct member_io read = { .member = m, .op = MEMBER_READ, .buf = buf,
                            .len = PROBE_BYTES, .offset = 0 };
  struct member_io write = read, flush = { .member = m, .op = MEMBER_FLUSH };
  int r = -1;

  write.op = MEMBER_WRITE;
  if (buf == NULL)
    snprintf (why, len, "out of memory");
  else if (member_io_run (&read, 1) == -1)
    snprintf (why, len, "it does not answer reads: %s",
              member_strerror (errno));
  else if (member_io_run (&write, 1) == -1 || member_io_run (&flush, 1) == -1)
    snprintf (why, len, "it does not take writes: writing back what it "
              "holds at offset 0 failed: %s", member_strerror (errno));
  else
    r = 0;
  free (buf);
  return r;
}

/* The re-add's rules: role i's own disk, as what records the rows it
 * missed can vouch for (md_array_readd_check), and back to taking
 * writes.  0, or -1 with why in msg.
 */
static int
readd_allowed (struct array *a, int i, struct member *m, const char *name,
               char *msg, size_t len)
{
  char why[384];

  if (readd_same_disk (a, i, m, why, sizeof why) == -1) {
    snprintf (msg, len, "%s: %s; 'replace %d %s' rebuilds it whole", name,
              why, i, name);
    return -1;
  }
  if (takes_writes (m, why, sizeof why) == -1) {
    snprintf (msg, len, "%s: %s; re-add it once it takes writes again",
              name, why);
    return -1;
  }
  return 0;
}

int
admission_check (struct array *a, int i, struct member *m, const char *name,
                 enum admission_kind how, char *msg, size_t len)
{
  if (fits (a, i, m, name, msg, len) == -1)
    return -1;
  switch (how) {
  case ADMISSION_READD:
    return readd_allowed (a, i, m, name, msg, len);
  case ADMISSION_REPLACEMENT:
  case ADMISSION_SPARE:
    return foreign (a, m, name, how == ADMISSION_SPARE, msg, len) != 0
      ? -1 : 0;
  case ADMISSION_FORCED:
    break;
  }
  return 0;
}
