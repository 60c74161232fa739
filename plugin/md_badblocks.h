/* SPDX-License-Identifier: BSD-3-Clause */
/* md's bad-block log of one member: the on-disk codec, where the log
 * lies, and the set of bad ranges requests ask; see md_badblocks.c.
 *
 * Every sector here is a sector of the member counted from its start
 * (data_offset included), as md keeps them: not a sector of the array
 * and not one of the member's data area.
 */

#ifndef RAID_MD_BADBLOCKS_H
#define RAID_MD_BADBLOCKS_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#define MD_BADBLOCKS_MAX_LOG_SECTORS 8  /* md reads one 4 KiB page of log */
#define MD_BADBLOCKS_ENTRIES_PER_SECTOR 64      /* 8 bytes each */
#define MD_BADBLOCKS_MAX_ENTRIES 512    /* what 8 sectors hold */
#define MD_BADBLOCKS_MAX_LEN 512        /* sectors one entry covers */
#define MD_BADBLOCKS_CREATE_SECTORS 8   /* the log mdadm --create reserves */

/* Where a member's log lies: the superblock's bblog_offset (sectors from
 * the superblock, signed) and bblog_size (sectors).  Either 0: the
 * member has no log (mdadm and md read it so).
 */
struct md_badblocks_place {
  int32_t offset;
  uint16_t sectors;
};

/* A member's areas that its log must stay clear of, in sectors from the
 * member's start.  bitmap_sectors 0: no bitmap.
 */
struct md_badblocks_layout {
  uint64_t member_sectors;
  uint64_t super;               /* the superblock's 4 KiB start here */
  uint64_t data_offset, data_sectors;
  uint64_t bitmap, bitmap_sectors;
};

/* Whether place names a log at all. */
static inline bool
md_badblocks_place_none (const struct md_badblocks_place *place)
{
  return place->offset == 0 || place->sectors == 0;
}

/* Why the log that place describes cannot be where it says on a member
 * laid out as l (before the member's start, past its end, over the
 * superblock, the bitmap or the data, longer than md reads), or NULL if
 * it can (or there is none).  The text is static.
 */
const char *md_badblocks_place_check (const struct md_badblocks_place *place,
                                      const struct md_badblocks_layout *l);

/* The member sector where the log starts, from the superblock's sector
 * and place; UINT64_MAX if there is no log or it would start before the
 * member (md_badblocks_place_check says so).
 */
uint64_t md_badblocks_location (uint64_t super, const struct md_badblocks_place *place);

/* The log mdadm --create gives a member of version 1.minor (sectors from
 * the member's start: the superblock at super, the data at data_offset,
 * size used by the array): 8 sectors, right before the superblock (v1.0:
 * the bitmap, if any, goes before them), or right after the bitmap's
 * room (v1.1, v1.2: bitmap_sectors of bitmap 8 sectors after the
 * superblock, or mdadm's default room when the array has no bitmap,
 * bitmap_sectors 0), or right before the data if that is too close.
 * None (offset and sectors 0) where mdadm leaves none: less than 8
 * sectors between the data and the v1.0 superblock, less than 16
 * between a v1.1/v1.2 superblock and the data.
 */
struct md_badblocks_place md_badblocks_create_place (int minor, uint64_t super,
                                                     uint64_t data_offset,
                                                     uint64_t size,
                                                     uint64_t bitmap_sectors);

/* One bad range, as md_badblocks_check and md_badblocks_list give it. */
struct md_bad_range {
  uint64_t sector, sectors;
  bool acknowledged;            /* on disk: in a log written and acknowledged */
};

struct md_badblocks;

/* An empty set for a member of member_sectors with a log of log_sectors
 * (0: no log, so every md_badblocks_add fails; at most
 * MD_BADBLOCKS_MAX_LOG_SECTORS).  NULL with errno set (EINVAL, ENOMEM).
 */
struct md_badblocks *md_badblocks_new (uint16_t log_sectors,
                                       uint64_t member_sectors);
void md_badblocks_free (struct md_badblocks *bb);

/* The set that md's log in `log` (log_sectors * 512 bytes, as read from
 * the member where md_badblocks_location says) holds, for the
 * superblock's bblog_shift: every range acknowledged.  NULL with a
 * static reason in *why and errno EINVAL if md could not have written
 * the log (an entry of no length or longer than md writes, entries out
 * of order or overlapping, a range past the member's end, a shift or a
 * size md does not use), ENOMEM if out of memory.
 */
struct md_badblocks *md_badblocks_decode (const uint8_t *log,
                                          uint16_t log_sectors, uint8_t shift,
                                          uint64_t member_sectors,
                                          const char **why);

/* Write the set into log (its log_sectors * 512 bytes) as md's
 * super_1_sync does: the entries in order, then 0xff to the end.  Returns
 * the number of entries; *generation (if not NULL) is the set's
 * generation written, for md_badblocks_acknowledge once the log is on
 * disk.
 */
size_t md_badblocks_encode (struct md_badblocks *bb, uint8_t *log,
                            uint64_t *generation);

/* The set's generation now: bumped by every change (add, clear), so that
 * a writer of the log can tell whether it changed since it wrote
 * generation g.  Reads an atomic: takes no lock (a request's hot path
 * may ask).
 */
uint64_t md_badblocks_generation (struct md_badblocks *bb);

/* The log encoded at `generation` is on disk: every range added up to it
 * is acknowledged.
 */
void md_badblocks_acknowledge (struct md_badblocks *bb, uint64_t generation);

/* Record [sector, sector + sectors) as bad, merged with what it touches.
 * 0, or -1 with errno and a static reason: ENOSPC if the log cannot hold
 * the result ("log full": nothing is changed), EINVAL for an empty range
 * or one past the member's end.  A range added is unacknowledged until
 * md_badblocks_acknowledge covers it.
 */
int md_badblocks_add (struct md_badblocks *bb, uint64_t sector,
                      uint64_t sectors, const char **why);

/* Forget [sector, sector + sectors) (a write there succeeded), splitting
 * a range it falls inside.  0, or -1 with errno ENOSPC and a static
 * reason if the split needs an entry the log does not have (nothing is
 * changed: the sectors stay bad, the safe way).
 */
int md_badblocks_clear (struct md_badblocks *bb, uint64_t sector,
                        uint64_t sectors, const char **why);

/* Does [sector, sector + sectors) meet a bad range?  0: no; 1: yes, all
 * acknowledged; -1: yes, and one of them is not acknowledged yet.  On a
 * yes, *first (if not NULL) is the lowest range it meets, whole.
 */
int md_badblocks_check (struct md_badblocks *bb, uint64_t sector,
                        uint64_t sectors, struct md_bad_range *first);

/* Ranges, and the log entries they take (a range over 512 sectors takes
 * several), and the entries the log holds. */
size_t md_badblocks_count (struct md_badblocks *bb);
size_t md_badblocks_entries (struct md_badblocks *bb);
size_t md_badblocks_capacity (const struct md_badblocks *bb);

/* Copy up to max ranges, lowest first, into out; returns how many there
 * are (which may be more than max).
 */
size_t md_badblocks_list (struct md_badblocks *bb, struct md_bad_range *out,
                          size_t max);

#endif /* RAID_MD_BADBLOCKS_H */
