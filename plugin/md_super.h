/* SPDX-License-Identifier: BSD-3-Clause */
/* Linux md version-1 superblocks (v1.0, v1.1, v1.2): finding, reading,
 * checking and writing them; see md_super.c.  (The write-intent bitmap's
 * own superblock is md_bitmap.h's.)
 */

#ifndef RAID_MD_SUPER_H
#define RAID_MD_SUPER_H

#include <stdbool.h>
#include <stdint.h>

#include "member.h"

#define MD_SB_BYTES 4096        /* what is read and written of one */
#define MD_MINOR_ANY (-1)       /* md_super_read: look in every place */
#define MD_ROLE_SPARE 0xffff
#define MD_ROLE_FAULTY 0xfffe
#define MD_MAX_DEV 384          /* dev_roles entries we write (as mdadm) */
#define MD_MAX_ROLES 256        /* members an array may have here */
#define MD_FEATURE_BITMAP 0x1   /* feature_map: a write-intent bitmap */
#define MD_FEATURE_RECOVERY_OFFSET 0x2  /* the member is being rebuilt,
                                           up to recovery_offset */
#define MD_FEATURE_BAD_BLOCKS 0x8 /* the bad-block log holds entries
                                     (md_badblocks.h); refused for now */
#define MD_FEATURE_RECOVERY_BITMAP 0x80 /* ... from the bitmap: re-added */

/* The fields of one member's superblock that the plugin uses. */
struct md_super {
  int minor;                    /* the version 1.minor: where it lies */
  uint64_t super_offset;        /* bytes from the member's start, as the
                                   record says; md_super_write puts it
                                   where `minor` says on each member */
  uint8_t set_uuid[16];
  char set_name[33];
  uint32_t feature_map;
  int level;
  int layout;
  uint64_t chunk;               /* bytes */
  int raid_disks;
  int32_t bitmap_offset;        /* sectors from the superblock, if feature bit 1 */
  uint64_t size;                /* bytes of each member used for data */
  uint64_t data_offset;         /* bytes */
  uint64_t data_size;           /* bytes */
  uint64_t recovery_offset;     /* bytes from data_offset, if feature bit 2 */
  uint32_t dev_number;
  uint32_t cnt_corrected_read;  /* sectors md rewrote after read errors */
  uint8_t device_uuid[16];
  /* The member's bad-block log (md_badblocks.h): its unit (sectors <<
   * bblog_shift), its length in sectors, where it starts in sectors from
   * the superblock (signed); size or offset 0: none.
   */
  uint8_t bblog_shift;
  uint16_t bblog_size;
  int32_t bblog_offset;
  uint64_t events;
  uint64_t resync_offset;       /* sectors; UINT64_MAX: clean */
  uint64_t ctime, utime;
  uint32_t max_dev;
  /* The array's logical block size in bytes (md 6.19; 0: unset, as
   * kernels up to 6.18 require: they refuse a superblock that sets it).
   */
  uint32_t logical_block_size;
  uint16_t dev_roles[MD_MAX_DEV];
  int role;                     /* dev_roles[dev_number], or -1 */
  /* The record as read: md_super_format writes the fields above over it,
   * so fields the plugin does not interpret (devflags, the reshape's)
   * are kept as they were in this record.  md_array.c writes one record
   * to every member (the reference's), so those are the reference's.
   */
  uint8_t raw[MD_SB_BYTES];
};

/* Where md puts the superblock of version 1.minor (0, 1 or 2) on a
 * member of `bytes` bytes: 8 to 12 KiB before its end on a 4 KiB
 * boundary (1.0), at its start (1.1), 4 KiB from its start (1.2).
 * UINT64_MAX if the member is too small to hold one there.
 */
uint64_t md_super_location (int minor, uint64_t bytes);

/* Parse and check a superblock.  Returns 1 if buf holds a valid one, 0 if
 * there is no md superblock (no magic), -1 with a static message in *why
 * if there is one we cannot use (bad checksum, unsupported features).
 */
int md_super_parse (const uint8_t *buf, struct md_super *sb, const char **why);

/* Serialise sb into buf (MD_SB_BYTES): sb->raw with the interpreted
 * fields written over it, and a fresh checksum.
 */
void md_super_format (const struct md_super *sb, uint8_t *buf);

/* Read the superblock of member m: of version 1.minor only, or, with
 * MD_MINOR_ANY, from whichever of the three places holds one.  A place
 * holds one if it has md's magic, major version 1 and a super_offset
 * naming that place (as mdadm's load_super1 decides).  Returns what
 * md_super_parse does, -1 also if two places hold one (*why names both),
 * or -2 (errno set) if the member cannot be read.
 */
int md_super_read (struct member *m, int minor, struct md_super *sb,
                   const char **why);
/* Write sb to member m where version 1.(sb->minor) puts it on m, with
 * super_offset saying so, and flush.  -1 (errno) on failure.
 */
int md_super_write (struct member *m, const struct md_super *sb);
/* Zero every other place that holds an md version-1 superblock (a disk
 * reused from an array of another version), so that only the one
 * version 1.minor puts there remains: as mdadm --create does.  Returns
 * how many it zeroed, or -1 (errno).
 */
int md_super_wipe_others (struct member *m, int minor);
#endif /* RAID_MD_SUPER_H */
