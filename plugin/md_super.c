/* SPDX-License-Identifier: BSD-3-Clause */
/* Linux md version-1 superblocks: v1.0, v1.1 and v1.2.
 *
 * md's version-1 superblock (include/uapi/linux/raid/md_p.h, md(4)) is a
 * little-endian record; the minor version says only where it lies on
 * each member, and so where the data and the internal bitmap can be:
 *
 *   v1.2  4 KiB from the start     [ 4K | sb | bitmap | ... | data ...... ]
 *   v1.1  at the start             [ sb | bitmap | ...  | data ......... ]
 *   v1.0  8-12 KiB before the end  [ data ......... | bitmap | sb | 8K  ]
 *         (member sectors - 16, rounded down to 8 sectors: 4 KiB aligned)
 *
 * v1.1 and v1.2 put the data after the superblock (data_offset > 0) and
 * the bitmap between the two (bitmap_offset > 0 sectors from the
 * superblock); v1.0 puts the data first (data_offset 0, as mdadm creates
 * it: the member reads as a plain disk) and the bitmap just before the
 * superblock (bitmap_offset < 0).  A v1.0 superblock's place depends on
 * the member's size, so members of different sizes have it, and the
 * bitmap, at different offsets.  The record's super_offset says where it
 * was written: a record is a member's superblock only where its
 * super_offset names the place it was found (md's super_1_load and
 * mdadm's load_super1 decide so too), and the minor version of a record
 * follows from it (0: v1.1, 8: v1.2, anything else: v1.0).
 *
 *   offset  field                     offset  field
 *   0       magic 0xa92b4efc          128     data_offset (sectors)
 *   4       major_version = 1         136     data_size (sectors)
 *   8       feature_map               144     super_offset (sectors)
 *   16      set_uuid[16]              152     recovery_offset (sectors)
 *   32      set_name[32]              160     dev_number
 *   64      ctime                     164     cnt_corrected_read
 *   72      level                     168     device_uuid[16]
 *   76      layout                    185     bblog_shift (u8)
 *   80      size (sectors per member) 186     bblog_size (le16, sectors)
 *   88      chunksize (sectors)       188     bblog_offset (signed)
 *   92      raid_disks                192     utime
 *   96      bitmap_offset             200     events
 *                                     208     resync_offset (sectors)
 *                                     216     sb_csum
 *                                     220     max_dev
 *                                     224     logical_block_size
 *                                     256     dev_roles[max_dev] (le16)
 *
 * cnt_corrected_read counts the sectors md rewrote after read errors
 * (a member's own).  The bblog_ fields say where the member's bad-block
 * log lies and how long it is (md_badblocks.c: its format and where
 * mdadm puts it); feature bit 0x8 says it holds entries.
 * logical_block_size (md 6.19, in bytes) was padding before: kernels up
 * to 6.18 refuse a superblock whose padding there is not zero, so it is
 * kept as read and never set here; when set it must be a power of two
 * from 512 to 65536 (what a block device, and NBD, can take), and the
 * export advertises it as its minimum block size (raid.c).  Byte 184 (devflags) and the reshape's
 * fields (100 to 127) are kept from the record read (raw).
 *
 * A member's role in the array is dev_roles[dev_number] (0xffff spare,
 * 0xfffe faulty): dev_number is a permanent identifier, not the role, and
 * mdadm creates a RAID-5 as degraded plus a spare that becomes the last
 * role, so the two differ.  The checksum is the sum of the record's 32-bit
 * words (sb_csum taken as 0) up to the end of dev_roles, folded to 32 bits.
 *
 * Finding one (md_super_read with MD_MINOR_ANY) looks in all three
 * places.  A member that holds two is refused, naming both: nothing on
 * the disk tells which is the array's.  Each version's data area covers
 * another version's place (v1.0's data covers 0 and 4 KiB; the data of a
 * v1.1 or v1.2 array made by mdadm runs to the member's end), so the
 * other record may be data a client of the array wrote, or the leftover
 * of an array the disk once belonged to; the operator's
 * metadata-version= reads one place only, and creating an array zeroes
 * the other places (md_super_wipe_others), as mdadm --create does.
 *
 * Only the features this plugin implements are accepted (an allow-list:
 * the write-intent bitmap, a member's recovery offset, that recovery
 * being a re-add from the bitmap, which md marks 0x80, and entries in
 * the member's bad-block log, 0x8: md_badblocks.c); every other bit is
 * refused, not ignored: a reshape in progress, a journal, PPL,
 * clustering, and any bit md may define later.  Entries (0x8) must be
 * in a log md reads (super_1_load): with no log, a log over 8 sectors or
 * a shift other than 0 the superblock is bad; without 0x8 the log's
 * fields are only kept.
 * Fields that no real member can hold (a dev_number without a slot in
 * dev_roles, an event count near 2^64, data over the superblock, a bitmap
 * outside the room between the data and the superblock, sizes beyond 4
 * EiB) make the superblock bad: it is refused as such, naming the member,
 * before anything is read from where it points.  Everything is field by
 * field with explicit little-endian access: no packed structs.  The
 * write-intent bitmap's own superblock is md_bitmap_super.c's.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "le.h"
#include "md_badblocks.h"
#include "md_super.h"

#define MD_MAGIC 0xa92b4efc

#define FEATURE_BITMAP MD_FEATURE_BITMAP
#define FEATURE_RECOVERY_OFFSET MD_FEATURE_RECOVERY_OFFSET
#define FEATURE_RESHAPE 0x4
#define FEATURE_BAD_BLOCKS MD_FEATURE_BAD_BLOCKS
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
                              FEATURE_BAD_BLOCKS | FEATURE_RECOVERY_BITMAP)

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

/* The minor version of a record that says it lies at `so` sectors. */
static int
minor_of (uint64_t so)
{
  return so == 0 ? 1 : so == 8 ? 2 : 0;
}

/* Fields that a superblock with a valid checksum may still hold but no
 * member can: md would read outside the member or past its own record.
 */
static const char *
impossible_fields (const uint8_t *buf, uint32_t max_dev, uint32_t features)
{
  uint64_t data_offset = get64 (buf + 128), so = get64 (buf + 144);

  if (get32 (buf + 160) >= max_dev)
    return "md superblock whose dev_number has no slot in dev_roles "
      "(dev_number >= max_dev): bad superblock";
  if (get64 (buf + 200) >= MAX_EVENTS)
    return "md superblock with an impossible event count (2^63 or more): "
      "bad superblock";
  if (data_offset >= MAX_SECTORS || get64 (buf + 80) >= MAX_SECTORS ||
      get64 (buf + 136) >= MAX_SECTORS || so >= MAX_SECTORS ||
      ((features & FEATURE_RECOVERY_OFFSET) && get64 (buf + 152) >= MAX_SECTORS))
    return "md superblock with an impossible size or offset: bad superblock";
  if (get32 (buf + 224) &&
      (get32 (buf + 224) < 512 || get32 (buf + 224) > 65536 ||
       (get32 (buf + 224) & (get32 (buf + 224) - 1))))
    return "md superblock whose logical_block_size is not a power of two "
      "from 512 to 65536 bytes: bad superblock";
  if (minor_of (so) == 0 && (so % 8 || so < 16))
    return "md superblock whose super_offset is no place md puts one "
      "(v1.0: on a 4 KiB boundary, 8 KiB or more from the start): "
      "bad superblock";
  {
    /* Where the data is, in bytes; the record itself takes 4 KiB here. */
    uint64_t start = data_offset * 512;
    uint64_t end = start + get64 (buf + 80) * 512;
    int64_t sb = so * 512;

    if (minor_of (so) != 0 ? start < (uint64_t) sb + MD_SB_BYTES
        : end > (uint64_t) sb)
      return "md superblock whose data_offset and size put the data over "
        "the superblock: bad superblock";
    if ((features & FEATURE_BAD_BLOCKS) &&
        (get32 (buf + 188) == 0 || get16 (buf + 186) == 0))
      return "md superblock that says its member has bad blocks but no "
        "bad-block log (bblog_offset or bblog_size 0): bad superblock";
    if ((features & FEATURE_BAD_BLOCKS) &&
        (get16 (buf + 186) > MD_BADBLOCKS_MAX_LOG_SECTORS || buf[185] != 0))
      return "md superblock with a bad-block log md does not read (over 8 "
        "sectors, or entries with a bblog_shift other than 0): bad "
        "superblock";
    if (features & FEATURE_BITMAP) {
      /* The internal bitmap's first 4 KiB (its own superblock) at least
       * must fit between the superblock and the data: after the one
       * (v1.1, v1.2), before it (v1.0).
       */
      int64_t area = sb + (int64_t) (int32_t) get32 (buf + 96) * 512;

      if (minor_of (so) != 0
          ? (area < 0 ||
             (area < sb + MD_SB_BYTES && area + 4096 > sb) ||
             (uint64_t) area + 4096 > start)
          : (area < 0 || (uint64_t) area < end || area + 4096 > sb))
        return "md superblock whose bitmap_offset puts the write-intent "
          "bitmap outside the room between the superblock and the data or "
          "over the superblock: bad superblock";
    }
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

  memcpy (sb->set_uuid, buf + 16, 16);
  memcpy (sb->set_name, buf + 32, 32);
  memcpy (sb->raw, buf, MD_SB_BYTES);
  sb->super_offset = get64 (buf + 144) * 512;
  sb->minor = minor_of (sb->super_offset / 512);
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
  sb->cnt_corrected_read = get32 (buf + 164);
  memcpy (sb->device_uuid, buf + 168, 16);
  sb->bblog_shift = buf[185];
  sb->bblog_size = get16 (buf + 186);
  sb->bblog_offset = (int32_t) get32 (buf + 188);
  sb->events = get64 (buf + 200);
  sb->resync_offset = get64 (buf + 208);
  sb->logical_block_size = get32 (buf + 224);
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
  put64 (buf + 144, sb->super_offset / 512);
  put64 (buf + 152, sb->recovery_offset / 512);
  put32 (buf + 160, sb->dev_number);
  put32 (buf + 164, sb->cnt_corrected_read);
  memcpy (buf + 168, sb->device_uuid, 16);
  buf[185] = sb->bblog_shift;
  put16 (buf + 186, sb->bblog_size);
  put32 (buf + 188, (uint32_t) sb->bblog_offset);
  put64 (buf + 192, sb->utime);
  put64 (buf + 200, sb->events);
  put64 (buf + 208, sb->resync_offset);
  put32 (buf + 220, sb->max_dev);
  if (sb->logical_block_size)
    put32 (buf + 224, sb->logical_block_size);
  for (uint32_t i = 0; i < sb->max_dev; i++)
    put16 (buf + 256 + 2 * i, sb->dev_roles[i]);
  put32 (buf + 216, checksum (buf, sb->max_dev));
}

uint64_t
md_super_location (int minor, uint64_t bytes)
{
  uint64_t sectors = bytes / 512;

  switch (minor) {
  case 0:
    /* 8 KiB before the end, rounded down to 4 KiB; past the places of
     * v1.1 and v1.2, so that the three never meet.
     */
    if (sectors < 16 + 16)
      return UINT64_MAX;
    return ((sectors - 16) & ~UINT64_C (7)) * 512;
  case 1:
    return bytes >= MD_SB_BYTES ? 0 : UINT64_MAX;
  case 2:
    return bytes >= 4096 + MD_SB_BYTES ? 4096 : UINT64_MAX;
  default:
    return UINT64_MAX;
  }
}

static const char *
place_name (int minor)
{
  return minor == 0 ? "v1.0 (at the end of the member)"
    : minor == 1 ? "v1.1 (at the start of the member)"
    : "v1.2 (4 KiB from the start of the member)";
}

static int
super_io (struct member *m, enum member_op op, uint8_t *buf, uint64_t offset)
{
  struct member_io io = {
    .member = m, .op = op, .buf = buf, .len = MD_SB_BYTES, .offset = offset,
  };

  return member_io_run (&io, 1);
}

/* Whether buf, read at byte `offset` of a member, is a version-1
 * superblock that says it lies there.
 */
static bool
is_super_at (const uint8_t *buf, uint64_t offset)
{
  return get32 (buf) == MD_MAGIC && get32 (buf + 4) == 1 &&
    get64 (buf + 144) == offset / 512;
}

int
md_super_read (struct member *m, int minor, struct md_super *sb,
               const char **why)
{
  static __thread char two[384];
  uint8_t *buf = aligned_alloc (4096, MD_SB_BYTES);
  uint8_t *found = aligned_alloc (4096, MD_SB_BYTES);
  int found_minor = -1, r = 0;

  memset (sb, 0, sizeof *sb);
  if (buf == NULL || found == NULL) {
    *why = "out of memory";
    r = -1;
    goto out;
  }
  /* v1.2 first: the default, and the place of most arrays. */
  for (int v = 2; v >= 0; v--) {
    uint64_t at = md_super_location (v, m->size);

    if ((minor != MD_MINOR_ANY && v != minor) || at == UINT64_MAX)
      continue;
    if (super_io (m, MEMBER_READ, buf, at) == -1) {
      *why = "cannot read the superblock area";
      r = -2;
      goto out;
    }
    if (!is_super_at (buf, at))
      continue;
    if (found_minor >= 0) {
      snprintf (two, sizeof two, "it holds two md superblocks, %s and %s: "
                "which one is the array's cannot be told from the disk (one "
                "may be data or a leftover); metadata-version=1.%d or 1.%d "
                "reads only that one", place_name (found_minor),
                place_name (v), found_minor, v);
      *why = two;
      r = -1;
      goto out;
    }
    found_minor = v;
    memcpy (found, buf, MD_SB_BYTES);
  }
  if (found_minor >= 0)
    r = md_super_parse (found, sb, why);

 out:
  free (buf);
  free (found);
  return r;
}

int
md_super_write (struct member *m, const struct md_super *sb)
{
  uint8_t *buf = aligned_alloc (4096, MD_SB_BYTES);
  uint64_t at = md_super_location (sb->minor, m->size);
  int r;

  if (buf == NULL)
    return -1;
  if (at == UINT64_MAX) {
    free (buf);
    errno = ENOSPC;
    return -1;
  }
  md_super_format (sb, buf);
  put64 (buf + 144, at / 512);
  put32 (buf + 216, checksum (buf, sb->max_dev));
  r = super_io (m, MEMBER_WRITE, buf, at);
  if (r == 0) {
    struct member_io io = { .member = m, .op = MEMBER_FLUSH };

    r = member_io_run (&io, 1);
  }
  free (buf);
  return r;
}

int
md_super_wipe_others (struct member *m, int minor)
{
  uint8_t *buf = aligned_alloc (4096, MD_SB_BYTES);
  int n = 0;

  if (buf == NULL)
    return -1;
  for (int v = 0; v <= 2; v++) {
    uint64_t at = md_super_location (v, m->size);

    if (v == minor || at == UINT64_MAX)
      continue;
    if (super_io (m, MEMBER_READ, buf, at) == -1)
      goto err;
    if (!is_super_at (buf, at))
      continue;
    memset (buf, 0, MD_SB_BYTES);
    if (super_io (m, MEMBER_WRITE, buf, at) == -1)
      goto err;
    n++;
  }
  free (buf);
  return n;

 err:
  free (buf);
  return -1;
}
