/* SPDX-License-Identifier: BSD-3-Clause */
/* md's write-intent bitmap while the array serves; see md_bitmap.c. */

#ifndef RAID_MD_BITMAP_H
#define RAID_MD_BITMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "md_super.h"

struct members;
struct md_bitmap;

/* On disk (md_bitmap_super.c; md-bitmap.c's internal bitmaps): a
 * 256-byte superblock at the start of the bitmap area, then one bit per
 * `chunksize` bytes of each member's data, little-endian bit order.
 */
#define MD_BITMAP_SB_BYTES 256
#define MD_BITMAP_VERSION 4     /* BITMAP_MAJOR_HI: bits little endian */
#define MD_BITMAP_STALE 0x2     /* state: the bits are out of date */

struct md_bitmap_super {
  uint32_t version;
  uint8_t uuid[16];             /* the array's set UUID */
  uint64_t events;              /* >= the md superblocks' events */
  uint64_t events_cleared;      /* events when bits were last cleared */
  uint64_t sync_size;           /* sectors each bit map covers: md's size */
  uint32_t state;
  uint32_t chunksize;           /* bytes of each member per bit */
  uint32_t daemon_sleep;        /* seconds between clearing passes */
  uint32_t write_behind;
  uint32_t sectors_reserved;
  uint32_t nodes;               /* clustered md only */
};

/* Parse and check a bitmap superblock (MD_BITMAP_SB_BYTES).  Returns 0, or
 * -1 with a static message in *why (bad magic, unknown version, ...).
 */
int md_bitmap_super_parse (const uint8_t *buf, struct md_bitmap_super *bs,
                           const char **why);
/* Serialise bs into buf (MD_BITMAP_SB_BYTES), unused fields zero. */
void md_bitmap_super_format (const struct md_bitmap_super *bs, uint8_t *buf);
/* Bits for `size` bytes of each member, and the bytes of the area that
 * holds them (superblock and bits, rounded up to 4 KiB).
 */
uint64_t md_bitmap_bits (uint64_t size, uint64_t chunksize);
uint64_t md_bitmap_area_bytes (uint64_t bits);

/* Where the area is and what it maps: bitmap_offset sectors from each
 * member's superblock, which version 1.minor puts at a place that
 * depends on the member's size for v1.0 (md_super_location), so the
 * area's offset is each member's own; the bytes of each member's data
 * (md's size) the bits cover, where they start, and the array's chunk
 * (one stripe row of each member).
 */
struct md_bitmap_place {
  int minor;
  int32_t bitmap_offset;
  uint64_t data_offset;
  uint64_t size;
  uint64_t chunk;
};

/* The byte offset of the area on a member of member_bytes bytes, or
 * UINT64_MAX if the area of area_bytes would not fit there, between its
 * superblock and the data, 4 KiB aligned (*why says why).
 */
uint64_t md_bitmap_area_offset (const struct md_bitmap_place *place,
                                uint64_t member_bytes, uint64_t area_bytes,
                                const char **why);

/* Read the bitmap of an assembled array from its first in-sync member and
 * check it against the superblocks.  dirty: the array was not shut down
 * cleanly, so the regions whose bits are set (all of them if the bitmap
 * is stale) need a resync.  Returns NULL with a static message in *why,
 * and in *from the name of the member it read (or NULL).
 */
struct md_bitmap *md_bitmap_load (struct members *ms,
                                  const struct md_bitmap_place *place,
                                  const struct md_super *ref, bool dirty,
                                  const char **why, const char **from);

/* A new bitmap for create=true, every bit set and needing the initial
 * resync (as mdadm makes them).  Written by the first md_bitmap_events.
 */
struct md_bitmap *md_bitmap_new (struct members *ms,
                                 const struct md_bitmap_place *place,
                                 const uint8_t uuid[16], uint64_t chunksize,
                                 uint32_t daemon_sleep, const char **why);

/* Start the lazy clearing (in the serving process, after the fork): a
 * thread that runs md_bitmap_sweep every daemon_sleep seconds.
 */
int md_bitmap_start_daemon (struct md_bitmap *bm);
/* One pass of the lazy clearing: bits that are set, held by no write,
 * not needed by a resync and untouched since the last pass are cleared
 * once a flush of every member has made their writes durable; bits
 * touched since the last pass wait for the next.  Nothing is cleared
 * while a member has failed or is being rebuilt.
 */
void md_bitmap_sweep (struct md_bitmap *bm);

/* Stop it; if the array is healthy, clear every bit that no write holds
 * and write the bitmap out.  Frees bm.
 */
void md_bitmap_close (struct md_bitmap *bm);
/* Write the bitmap (its superblock and bits as they are now) to spare m,
 * at m's own place, as mdadm --add writes one on a device it adds: a
 * superblock that says the array has a bitmap (feature bit 0x1) must
 * find one where bitmap_offset points, or mdadm --examine takes the bit
 * away and reports a wrong checksum.  md neither reads nor updates a
 * spare's copy; the whole area is written again when the spare takes a
 * role.  0, or -1 (errno).
 */
int md_bitmap_write_spare (struct md_bitmap *bm, struct member *m);

/* Rows [first, end) are about to be written: returns once their bits are
 * on every working member, or -1 (errno) if the array cannot serve.
 */
int md_bitmap_write_begin (struct md_bitmap *bm, uint64_t first, uint64_t end);
void md_bitmap_write_end (struct md_bitmap *bm, uint64_t first, uint64_t end);

/* The md superblocks are about to say `events`: write the bitmap's
 * superblock (and the whole area to members that lack it) first.
 */
int md_bitmap_events (struct md_bitmap *bm, uint64_t events);

/* Resync: the first row >= row in a region that needs it (UINT64_MAX if
 * none), how many rows need it, and row done.
 */
uint64_t md_bitmap_next_needed_row (struct md_bitmap *bm, uint64_t row);
/* Re-add: the first row >= row under a set bit (UINT64_MAX if none); how
 * many rows from `from` on are; md's event count at the last clearing
 * (a member whose superblock is older may have missed writes whose bits
 * were cleared).
 */
uint64_t md_bitmap_next_dirty_row (struct md_bitmap *bm, uint64_t row);
uint64_t md_bitmap_dirty_rows (struct md_bitmap *bm, uint64_t from);
uint64_t md_bitmap_cleared_at (struct md_bitmap *bm);
uint64_t md_bitmap_needed_rows (struct md_bitmap *bm);
/* How many regions (bits) need it. */
uint64_t md_bitmap_needed_regions (struct md_bitmap *bm);
void md_bitmap_row_resynced (struct md_bitmap *bm, uint64_t row);

struct md_bitmap_stats {
  uint64_t chunksize, bits, dirty;
};
void md_bitmap_stats (struct md_bitmap *bm, struct md_bitmap_stats *st);

#endif /* RAID_MD_BITMAP_H */
