/* SPDX-License-Identifier: BSD-3-Clause */
/* Linux md v1.2 superblocks.
 *
 * md's version-1 superblock (include/uapi/linux/raid/md_p.h, md(4)) is a
 * little-endian record that v1.2 places 4 KiB from the start of each
 * member:
 *
 *   offset  field                     offset  field
 *   0       magic 0xa92b4efc          128     data_offset (sectors)
 *   4       major_version = 1         136     data_size (sectors)
 *   8       feature_map               144     super_offset (sectors)
 *   16      set_uuid[16]              152     recovery_offset (sectors)
 *   32      set_name[32]              160     dev_number
 *   64      ctime                     168     device_uuid[16]
 *   72      level                     192     utime
 *   76      layout                    200     events
 *   80      size (sectors per member) 208     resync_offset (sectors)
 *   88      chunksize (sectors)       216     sb_csum
 *   92      raid_disks                220     max_dev
 *   96      bitmap_offset             256     dev_roles[max_dev] (le16)
 *
 * A member's role in the array is dev_roles[dev_number] (0xffff spare,
 * 0xfffe faulty): dev_number is a permanent identifier, not the role, and
 * mdadm creates a RAID-5 as degraded plus a spare that becomes the last
 * role, so the two differ.  The checksum is the sum of the record's 32-bit
 * words (sb_csum taken as 0) up to the end of dev_roles, folded to 32 bits.
 *
 * Only the features this plugin implements are accepted (an allow-list:
 * the write-intent bitmap, a member's recovery offset, and that recovery
 * being a re-add from the bitmap, which md marks 0x80); every other
 * bit is refused, not ignored: a reshape in progress, a journal, PPL,
 * bad-block log entries, clustering, and any bit md may define later.
 * Fields that no real member can hold (a dev_number without a slot in
 * dev_roles, an event count near 2^64, a bitmap outside the room before
 * the data, sizes beyond 4 EiB) make the superblock bad: it is refused as
 * such, naming the member, before anything is read from where it points.
 * Everything is field by field with explicit little-endian access: no
 * packed structs.  The write-intent bitmap's own superblock is
 * md_bitmap_super.c's.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "le.h"
#include "md_super.h"

#define MD_MAGIC 0xa92b4efc

#define FEATURE_BITMAP MD_FEATURE_BITMAP
#define FEATURE_RECOVERY_OFFSET MD_FEATURE_RECOVERY_OFFSET
#define FEATURE_RESHAPE 0x4
#define FEATURE_BAD_BLOCKS 0x8
#define FEATURE_REPLACEMENT 0x10
#define FEATURE_RESHAPE_BACKWARDS 0x20
#define FEATURE_NEW_OFFSET 0x40
#define FEATURE_RECOVERY_BITMAP MD_FEATURE_RECOVERY_BITMAP
#define FEATURE_CLUSTERED 0x100
#define FEATURE_JOURNAL 0x200
#define FEATURE_PPL 0x400
#define FEATURE_MULTIPLE_PPLS 0x800

static uint32_t
checksum (const uint8_t *buf, uint32_t max_dev)
{
  size_t size = 256 + 2 * (size_t) max_dev;
  uint64_t sum = 0;
  size_t i;

  for (i = 0; i + 4 <= size; i += 4)
    sum += i == 216 ? 0 : get32 (buf + i);
  if (size - i == 2)
    sum += get16 (buf + i);
  return (sum & 0xffffffff) + (sum >> 32);
}

/* The feature bits this plugin implements: everything else is refused (an
 * allow-list, so that a bit md adds later is never silently ignored).
 */
#define FEATURES_IMPLEMENTED (FEATURE_BITMAP | FEATURE_RECOVERY_OFFSET | \
                              FEATURE_RECOVERY_BITMAP)

static const char *
unsupported (uint32_t features)
{
  static __thread char unknown[128];

  if (features & (FEATURE_RESHAPE | FEATURE_RESHAPE_BACKWARDS | FEATURE_NEW_OFFSET))
    return "a reshape is in progress (finish it with mdadm first)";
  if (features & FEATURE_JOURNAL)
    return "the array has a write journal, which is not supported";
  if (features & (FEATURE_PPL | FEATURE_MULTIPLE_PPLS))
    return "the array uses a partial parity log (PPL), which is not supported";
  if (features & FEATURE_BAD_BLOCKS)
    return "the member has bad-block log entries, which are not supported";
  if (features & FEATURE_CLUSTERED)
    return "clustered md arrays are not supported";
  if (features & FEATURE_REPLACEMENT)
    return "a member replacement is in progress (finish it with mdadm first)";
  /* md's re-add: a recovery (0x2) that only needs the bitmap's regions. */
  if ((features & FEATURE_RECOVERY_BITMAP) &&
      !(features & FEATURE_RECOVERY_OFFSET))
    return "a recovery from the bitmap without a recovery offset";
  if (features & ~FEATURES_IMPLEMENTED) {
    snprintf (unknown, sizeof unknown, "md superblock with unknown feature "
              "bits %#" PRIx32 " (only %#x are implemented)",
              features & ~FEATURES_IMPLEMENTED, FEATURES_IMPLEMENTED);
    return unknown;
  }
  return NULL;
}

/* Sector counts beyond this cannot be real (2^53 sectors is 4 EiB) and
 * would overflow once turned into bytes.
 */
#define MAX_SECTORS (UINT64_C (1) << 53)

/* An event count this large cannot have been reached by counting (2^63
 * updates); refusing it keeps events + 1 from wrapping round to 0, which
 * would make every member look stale, or a stale one current.
 */
#define MAX_EVENTS (UINT64_C (1) << 63)

/* Fields that a superblock with a valid checksum may still hold but no
 * member can: md would read outside the member or past its own record.
 */
static const char *
impossible_fields (const uint8_t *buf, uint32_t max_dev, uint32_t features)
{
  uint64_t data_offset = get64 (buf + 128);

  if (get32 (buf + 160) >= max_dev)
    return "md superblock whose dev_number has no slot in dev_roles "
      "(dev_number >= max_dev): bad superblock";
  if (get64 (buf + 200) >= MAX_EVENTS)
    return "md superblock with an impossible event count (2^63 or more): "
      "bad superblock";
  if (data_offset >= MAX_SECTORS || get64 (buf + 80) >= MAX_SECTORS ||
      get64 (buf + 136) >= MAX_SECTORS ||
      ((features & FEATURE_RECOVERY_OFFSET) && get64 (buf + 152) >= MAX_SECTORS))
    return "md superblock with an impossible size or offset: bad superblock";
  if (features & FEATURE_BITMAP) {
    /* v1.2 keeps an internal bitmap between the superblock and the data:
     * its first 4 KiB (its own superblock) at least must fit there.
     */
    int64_t area = MD_SB_OFFSET + (int64_t) (int32_t) get32 (buf + 96) * 512;

    if (area < 0 ||
        (area < MD_SB_OFFSET + MD_SB_BYTES && area + 4096 > MD_SB_OFFSET) ||
        (uint64_t) area + 4096 > data_offset * 512)
      return "md superblock whose bitmap_offset puts the write-intent bitmap "
        "outside the room before the data or over the superblock: "
        "bad superblock";
  }
  return NULL;
}

int
md_super_parse (const uint8_t *buf, struct md_super *sb, const char **why)
{
  memset (sb, 0, sizeof *sb);
  if (get32 (buf) != MD_MAGIC)
    return 0;
  if (get32 (buf + 4) != 1) {
    *why = "md superblock of an unknown major version";
    return -1;
  }
  sb->max_dev = get32 (buf + 220);
  if (sb->max_dev > MD_MAX_DEV || 256 + 2 * sb->max_dev > MD_SB_BYTES) {
    *why = "md superblock with an impossible max_dev";
    return -1;
  }
  if (checksum (buf, sb->max_dev) != get32 (buf + 216)) {
    *why = "md superblock checksum is wrong (corrupted superblock)";
    return -1;
  }
  sb->feature_map = get32 (buf + 8);
  if ((*why = unsupported (sb->feature_map)) != NULL ||
      (*why = impossible_fields (buf, sb->max_dev, sb->feature_map)) != NULL)
    return -1;
  if (get64 (buf + 144) != MD_SB_OFFSET / 512) {
    *why = "md superblock is not a version 1.2 superblock (super_offset)";
    return -1;
  }

  memcpy (sb->set_uuid, buf + 16, 16);
  memcpy (sb->set_name, buf + 32, 32);
  memcpy (sb->raw, buf, MD_SB_BYTES);
  sb->ctime = get64 (buf + 64);
  sb->utime = get64 (buf + 192);
  sb->level = (int32_t) get32 (buf + 72);
  sb->layout = get32 (buf + 76);
  sb->size = get64 (buf + 80) * 512;
  sb->chunk = (uint64_t) get32 (buf + 88) * 512;
  sb->raid_disks = get32 (buf + 92);
  sb->bitmap_offset = (int32_t) get32 (buf + 96);
  sb->data_offset = get64 (buf + 128) * 512;
  sb->data_size = get64 (buf + 136) * 512;
  sb->recovery_offset = sb->feature_map & FEATURE_RECOVERY_OFFSET
    ? get64 (buf + 152) * 512 : 0;
  sb->dev_number = get32 (buf + 160);
  memcpy (sb->device_uuid, buf + 168, 16);
  sb->events = get64 (buf + 200);
  sb->resync_offset = get64 (buf + 208);
  for (uint32_t i = 0; i < sb->max_dev; i++)
    sb->dev_roles[i] = get16 (buf + 256 + 2 * i);
  sb->role = -1;
  if (sb->dev_number < sb->max_dev &&
      sb->dev_roles[sb->dev_number] < sb->raid_disks)
    sb->role = sb->dev_roles[sb->dev_number];

  if (sb->level != 5 && sb->level != 6) {
    *why = "md array of a level other than 5 or 6, which is not supported";
    return -1;
  }
  if ((unsigned int) sb->layout > 5) {
    *why = "md layout not supported (only left/right-(a)symmetric, parity-first/last)";
    return -1;
  }
  return 1;
}

void
md_super_format (const struct md_super *sb, uint8_t *buf)
{
  memcpy (buf, sb->raw, MD_SB_BYTES);
  put32 (buf, MD_MAGIC);
  put32 (buf + 4, 1);
  put32 (buf + 8, sb->feature_map);
  memcpy (buf + 16, sb->set_uuid, 16);
  memcpy (buf + 32, sb->set_name, 32);
  put64 (buf + 64, sb->ctime);
  put32 (buf + 72, sb->level);
  put32 (buf + 76, sb->layout);
  put64 (buf + 80, sb->size / 512);
  put32 (buf + 88, sb->chunk / 512);
  put32 (buf + 92, sb->raid_disks);
  put32 (buf + 96, (uint32_t) sb->bitmap_offset);
  put64 (buf + 128, sb->data_offset / 512);
  put64 (buf + 136, sb->data_size / 512);
  put64 (buf + 144, MD_SB_OFFSET / 512);
  put64 (buf + 152, sb->recovery_offset / 512);
  put32 (buf + 160, sb->dev_number);
  memcpy (buf + 168, sb->device_uuid, 16);
  put64 (buf + 192, sb->utime);
  put64 (buf + 200, sb->events);
  put64 (buf + 208, sb->resync_offset);
  put32 (buf + 220, sb->max_dev);
  for (uint32_t i = 0; i < sb->max_dev; i++)
    put16 (buf + 256 + 2 * i, sb->dev_roles[i]);
  put32 (buf + 216, checksum (buf, sb->max_dev));
}

static int
super_io (struct member *m, enum member_op op, uint8_t *buf)
{
  struct member_io io = {
    .member = m, .op = op, .buf = buf, .len = MD_SB_BYTES,
    .offset = MD_SB_OFFSET,
  };

  return member_io_run (&io, 1);
}

int
md_super_read (struct member *m, struct md_super *sb, const char **why)
{
  uint8_t *buf = aligned_alloc (4096, MD_SB_BYTES);
  int r;

  if (buf == NULL) {
    *why = "out of memory";
    return -1;
  }
  if (m->size < MD_SB_OFFSET + MD_SB_BYTES) {
    free (buf);
    memset (sb, 0, sizeof *sb);
    return 0;
  }
  if (super_io (m, MEMBER_READ, buf) == -1) {
    *why = "cannot read the superblock area";
    free (buf);
    return -2;
  }
  r = md_super_parse (buf, sb, why);
  free (buf);
  return r;
}

int
md_super_write (struct member *m, const struct md_super *sb)
{
  uint8_t *buf = aligned_alloc (4096, MD_SB_BYTES);
  int r;

  if (buf == NULL)
    return -1;
  md_super_format (sb, buf);
  r = super_io (m, MEMBER_WRITE, buf);
  if (r == 0) {
    struct member_io io = { .member = m, .op = MEMBER_FLUSH };

    r = member_io_run (&io, 1);
  }
  free (buf);
  return r;
}
