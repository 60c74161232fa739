/* SPDX-License-Identifier: BSD-3-Clause */
/* Which rows of the array are holes (NBD's base:allocation); see
 * extents.c.
 */

#ifndef RAID_EXTENTS_H
#define RAID_EXTENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "geometry.h"
#include "member_table.h"

/* At most this many extents per request: a client asks again from where
 * the answer stopped.
 */
#define EXTENTS_MAX 64

struct extent {
  uint64_t offset, length;      /* array bytes */
  bool zero;                    /* a hole that reads back as zeroes */
};

/* The extents of [offset, offset + count) (count > 0, inside the array),
 * whole rows each: ext[0] starts at offset, each starts where the one
 * before ended, and the last may end before offset + count (the answer
 * stopped early) or after it (at its row's end).  Returns how many
 * (1..max), or -1 with errno EIO if the array cannot serve.  The caller
 * is in a reader section (member_table.h).  *queries, if not NULL, counts the
 * members' data_run calls (tests).
 */
int extents_map (const struct geometry *g, struct members *ms,
                 uint64_t offset, uint64_t count, struct extent *ext,
                 int max, uint64_t *queries);

#endif /* RAID_EXTENTS_H */
