/* SPDX-License-Identifier: BSD-3-Clause */
/* Admission: whether a disk offered for a role of the array may take
 * it; the rules, what each refuses and why, are admission.c's.
 */

#ifndef RAID_ADMISSION_H
#define RAID_ADMISSION_H

#include <stddef.h>
#include <stdint.h>

#include "member.h"

struct array;

/* How a disk is offered for a failed role. */
enum admission_kind {
  ADMISSION_REPLACEMENT,        /* replace N PATH: a new disk, refused if
                                   it carries another array or format */
  ADMISSION_FORCED,             /* replace N PATH force: taken whatever it
                                   carries */
  ADMISSION_READD,              /* re-add N: the role's own disk, opened
                                   again by its name */
  ADMISSION_SPARE,              /* a hot spare: added (spare=, add-spare;
                                   role -1: it must fit every role), or
                                   taking failed role i; refused as a
                                   replacement is */
};

/* Whether m, opened from name, may take failed role i of array a (a
 * spare being added: i = -1, any role), taken `how`: 0, or -1 with the refusal, naming the disk, in msg.  A re-add
 * that is admitted has m's readd_whole_from set (the row from which its
 * re-add rebuilds every row).  Writes nothing to any member of the
 * array; a re-added disk's first 4 KiB are written back as read.  In a
 * reader section of the member table (member_table.h): role i's failed
 * member and the others it is checked against stay open.
 */
int admission_check (struct array *a, int i, struct member *m,
                     const char *name, enum admission_kind how, char *msg,
                     size_t len);

/* The row from which failed member m holds nothing, as far as this
 * process saw: where a re-add of its disk would rebuild every row (the
 * rows below, the row record says which it missed).  UINT64_MAX: it
 * was in sync when it failed.
 */
uint64_t admission_failed_whole_from (const struct member *m);

#endif /* RAID_ADMISSION_H */
