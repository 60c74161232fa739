/* SPDX-License-Identifier: BSD-3-Clause */
/* Signatures of other formats: what a disk carries that is not ours.
 *
 * A disk given to the array (a member at start-up without an md
 * version-1 superblock, every member of a new array, a replacement) may
 * belong to something else: another md array, firmware RAID, a
 * partitioned disk, an LVM physical volume, a filesystem.  Writing to it destroys that, so the
 * callers refuse such a disk, naming what was found, unless the operator
 * forces it.  This file only recognises; it never writes.
 *
 * Where each format keeps its mark, from the start of the disk (head) or
 * from its end (tail):
 *
 *   head  0        md v1.1 superblock (magic a92b4efc, major 1), XFS "XFSB",
 *                  LUKS "LUKS\xba\xbe"
 *   head  3        NTFS "NTFS    "
 *   head  54, 82   FAT "FAT1" (FAT12/16), "FAT32   "
 *   head  510      MBR boot signature 55 aa, with plausible partition
 *                  entries (each status byte 0x00 or 0x80, one used)
 *   head  512      GPT header "EFI PART" (also at 4096 on 4K-sector disks)
 *   head  0-2047   LVM2 label "LABELONE" at the start of one of sectors 0-3
 *   head  1080     ext2/3/4 magic ef53 (superblock at 1024), with a sane
 *                  block size and revision
 *   head  4096     md v1.2 superblock
 *   head  4086     swap "SWAPSPACE2" / "SWAP-SPACE" (4 KiB pages)
 *   head  32769    ISO 9660 "CD001"
 *   head  65600    btrfs "_BHRfS_M"
 *   tail  md v1.0: 8 KiB before the end, rounded down to 4 KiB
 *   tail  md v0.90: the last 64 KiB-aligned 64 KiB block (magic in the
 *                  writer's byte order: either)
 *   tail  DDF anchor "de11de11" (big endian) in the last sector
 *   tail  IMSM "Intel Raid ISM Cfg Sig. " in the second last sector
 *                  (of 512 bytes, or of 4 KiB on a 4K-sector disk)
 *
 * Random data must not look like any of these: every check uses at least
 * 32 bits of magic, or adds field checks where the magic is shorter (MBR,
 * ext), because replacements in the tests are full of noise and a false
 * positive would refuse a good disk.
 */

#include <config.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "signature.h"

#define MD_MAGIC 0xa92b4efc

static uint32_t
le32 (const uint8_t *p)
{
  return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t) p[3] << 24;
}

static uint16_t
le16 (const uint8_t *p)
{
  return p[0] | p[1] << 8;
}

static uint32_t
be32 (const uint8_t *p)
{
  return (uint32_t) p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

/* Whether [off, off + len) lies in the head image and holds `magic`. */
static bool
at (const uint8_t *img, uint64_t img_len, uint64_t off, const char *magic,
    size_t len)
{
  return off + len <= img_len && memcmp (img + off, magic, len) == 0;
}

static bool
md_super_at (const uint8_t *img, uint64_t img_len, uint64_t off, uint32_t major)
{
  return off + 8 <= img_len && le32 (img + off) == MD_MAGIC &&
    le32 (img + off + 4) == major;
}

static bool
mbr (const uint8_t *head, uint64_t len)
{
  bool used = false;

  if (len < 512 || head[510] != 0x55 || head[511] != 0xaa)
    return false;
  for (int i = 0; i < 4; i++) {
    const uint8_t *e = head + 446 + 16 * i;

    if (e[0] != 0x00 && e[0] != 0x80)
      return false;
    used |= e[4] != 0;          /* partition type */
  }
  return used;
}

static bool
ext (const uint8_t *head, uint64_t len)
{
  const uint8_t *sb = head + 1024;

  return len >= 2048 && le16 (sb + 56) == 0xef53 &&
    le32 (sb + 24) <= 6 &&      /* log2 (block size / 1024) */
    le32 (sb + 76) <= 1 &&      /* revision */
    le32 (sb + 0) != 0;         /* inodes */
}

static bool
lvm (const uint8_t *head, uint64_t len)
{
  for (uint64_t s = 0; s < 4; s++)
    if (at (head, len, s * 512, "LABELONE", 8) &&
        at (head, len, s * 512 + 24, "LVM2 001", 8))
      return true;
  return false;
}

static const char *
head_format (const uint8_t *head, uint64_t len)
{
  if (md_super_at (head, len, 0, 1))
    return "an md v1.1 superblock (at the start of the member)";
  if (md_super_at (head, len, 4096, 1))
    return "an md v1.2 superblock";
  if (at (head, len, 512, "EFI PART", 8) || at (head, len, 4096, "EFI PART", 8))
    return "a GPT partition table";
  if (lvm (head, len))
    return "an LVM2 physical volume label";
  if (at (head, len, 0, "LUKS\xba\xbe", 6))
    return "a LUKS encryption header";
  if (at (head, len, 0, "XFSB", 4))
    return "an XFS filesystem";
  if (ext (head, len))
    return "an ext2/3/4 filesystem";
  if (at (head, len, 65536 + 64, "_BHRfS_M", 8))
    return "a btrfs filesystem";
  if (at (head, len, 4086, "SWAPSPACE2", 10) ||
      at (head, len, 4086, "SWAP-SPACE", 10))
    return "a Linux swap area";
  if (at (head, len, 32769, "CD001", 5))
    return "an ISO 9660 filesystem";
  if (at (head, len, 3, "NTFS    ", 8))
    return "an NTFS filesystem";
  if (at (head, len, 82, "FAT32   ", 8) || at (head, len, 54, "FAT1", 4))
    return "a FAT filesystem";
  if (mbr (head, len))
    return "an MBR partition table";
  return NULL;
}

/* The tail image: bytes [off, off + len) of the member. */
struct tail {
  const uint8_t *buf;
  uint64_t off, len;
};

/* Member bytes [off, off + len) in the tail image, or NULL. */
static const uint8_t *
tail_ptr (const struct tail *t, uint64_t off, uint64_t len)
{
  if (off < t->off || off - t->off > t->len || len > t->len - (off - t->off))
    return NULL;
  return t->buf + (off - t->off);
}

static const char *
tail_format (const struct tail *t, uint64_t size)
{
  uint64_t sectors = size / 512;
  const uint8_t *p;

  /* mdadm's v1.0 placement: 8K from the end, on a 4K boundary. */
  if (sectors >= 16 &&
      (p = tail_ptr (t, ((sectors - 16) & ~UINT64_C (7)) * 512, 8)) != NULL &&
      le32 (p) == MD_MAGIC && le32 (p + 4) == 1)
    return "an md v1.0 superblock (at the end of the member)";
  /* v0.90: the last whole 64K block below the last 64K boundary. */
  if (sectors >= 256 &&
      (p = tail_ptr (t, ((sectors & ~UINT64_C (127)) - 128) * 512, 8)) != NULL &&
      ((le32 (p) == MD_MAGIC && le32 (p + 4) == 0) ||
       (be32 (p) == MD_MAGIC && be32 (p + 4) == 0)))
    return "an md v0.90 superblock";
  if (sectors >= 1 &&
      (p = tail_ptr (t, (sectors - 1) * 512, 4)) != NULL &&
      be32 (p) == 0xde11de11)
    return "a DDF (firmware RAID) anchor header";
  for (uint64_t sector = 512; sector <= 4096; sector *= 8)
    if (size >= 2 * sector &&
        (p = tail_ptr (t, size / sector * sector - 2 * sector, 24)) != NULL &&
        memcmp (p, "Intel Raid ISM Cfg Sig. ", 24) == 0)
      return "Intel IMSM (firmware RAID) metadata";
  return NULL;
}

const char *
signature_find (const uint8_t *head, uint64_t head_len, const uint8_t *tail,
                uint64_t tail_off, uint64_t tail_len, uint64_t size)
{
  const struct tail t = { tail, tail_off, tail_len };
  const char *what = head_format (head, head_len);

  return what ? what : tail_format (&t, size);
}

/* Read [off, off + len) of m into a fresh page-aligned buffer (direct
 * members need the alignment; off and len are multiples of 512, and of
 * 4096 where the member is direct).
 */
static uint8_t *
read_range (struct member *m, uint64_t off, uint64_t len)
{
  uint8_t *buf = aligned_alloc (4096, (len + 4095) / 4096 * 4096);
  struct member_io io = {
    .member = m, .op = MEMBER_READ, .buf = buf, .len = len, .offset = off,
  };

  if (buf == NULL)
    return NULL;
  if (member_io_run (&io, 1) == -1) {
    int e = errno;

    free (buf);
    errno = e;
    return NULL;
  }
  return buf;
}

int
signature_probe (struct member *m, const char **what)
{
  /* Direct members are read in whole 4K blocks, so the last sectors of
   * one whose size is not a multiple of 4K stay unread (only DDF and IMSM
   * live there, and disks are whole 4K blocks in practice).
   */
  uint64_t end = m->direct ? m->size / 4096 * 4096 : m->size / 512 * 512;
  uint64_t head_len = end < SIGNATURE_HEAD ? end : SIGNATURE_HEAD;
  uint64_t tail_off = end < SIGNATURE_TAIL ? 0
    : (end - SIGNATURE_TAIL) / 4096 * 4096;
  uint8_t *head = NULL, *tail = NULL;
  int r = -1;

  *what = NULL;
  if (end == 0)
    return 0;
  head = read_range (m, 0, head_len);
  if (head == NULL)
    return -1;
  tail = read_range (m, tail_off, end - tail_off);
  if (tail == NULL)
    goto out;
  *what = signature_find (head, head_len, tail, tail_off, end - tail_off,
                          m->size);
  r = *what != NULL;

 out:
  free (head);
  free (tail);
  return r;
}
