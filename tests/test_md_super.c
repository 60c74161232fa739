/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: plugin/md_super.c finds, reads and writes md version-1
 * superblocks (v1.0 at the end of a member, v1.1 at its start, v1.2 at 4
 * KiB) as Linux md does.
 *
 * The evidence is built independently of the code under test:
 *
 *   - Superblocks are written byte by byte here, at the offsets of struct
 *     mdp_superblock_1 in include/uapi/linux/raid/md_p.h (the table below),
 *     never through md_super_format.  Every field md_super_parse returns is
 *     checked against what was put there, including the mdadm case where a
 *     member's dev_number is not its role (a RAID-5 created degraded plus a
 *     spare, or a member replaced after a failure: dev_roles[] says which
 *     dev_number holds which role).
 *
 *   - The checksum comes from this file's own copy of the kernel's
 *     calc_sb_1_csum() (drivers/md/md.c): the little-endian 32-bit words
 *     of the first 256 + 2 * max_dev bytes with sb_csum taken as zero, plus
 *     the last 16-bit word when max_dev is odd, the 64-bit sum folded once
 *     to 32 bits.  Fixed vectors (computed outside this program, by a
 *     Python model) pin it down further, odd max_dev and carries included.
 *
 *   - Refusals: no magic is "no superblock" (0); a bad checksum, a feature
 *     the plugin does not implement (reshape, bad-block log, journal, PPL,
 *     ...), a level other than 5/6 and a layout md uses only for DDF are
 *     errors (-1) with a message that names the cause.
 *
 *   - Where each version lies comes from md's rule written out here
 *     (v1.0: member sectors - 16, rounded down to a multiple of 8), on
 *     members whose size is not a multiple of 4 KiB; a record is found
 *     only where its super_offset says it is, and a member holding two
 *     is refused naming both.
 *
 * md_super_read/md_super_write do their I/O through member_io_run(); this
 * file provides a member_io_run() over an in-memory disk so that they are
 * tested too without the plugin's backends.
 *
 *   offset  field               offset  field
 *   0       magic               128     data_offset
 *   4       major_version       136     data_size
 *   8       feature_map         144     super_offset
 *   16      set_uuid[16]        152     recovery_offset
 *   32      set_name[32]        160     dev_number
 *   64      ctime               164     cnt_corrected_read
 *   72      level               168     device_uuid[16]
 *   76      layout              192     utime
 *   80      size                200     events
 *   88      chunksize           208     resync_offset
 *   92      raid_disks          216     sb_csum
 *   96      bitmap_offset       220     max_dev
 *                               256     dev_roles[max_dev] (le16)
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "check_run.h"
#include "le_store.h"

#include "md_super.h"

#define SB 4096

enum {
  O_MAGIC = 0, O_MAJOR = 4, O_FEATURES = 8, O_SET_UUID = 16, O_SET_NAME = 32,
  O_CTIME = 64, O_LEVEL = 72, O_LAYOUT = 76, O_SIZE = 80, O_CHUNK = 88,
  O_RAID_DISKS = 92, O_BITMAP_OFFSET = 96, O_DATA_OFFSET = 128,
  O_DATA_SIZE = 136, O_SUPER_OFFSET = 144, O_RECOVERY_OFFSET = 152,
  O_DEV_NUMBER = 160, O_DEVICE_UUID = 168, O_UTIME = 192, O_EVENTS = 200,
  O_RESYNC_OFFSET = 208, O_CSUM = 216, O_MAX_DEV = 220, O_DEV_ROLES = 256,
  O_CNT_CORRECTED_READ = 164, O_DEVFLAGS = 184, O_BBLOG_SHIFT = 185,
  O_BBLOG_SIZE = 186, O_BBLOG_OFFSET = 188, O_LOGICAL_BLOCK_SIZE = 224,
};

static uint32_t
rd32 (const uint8_t *p)
{
  return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t) p[3] << 24;
}

static uint64_t
rd64 (const uint8_t *p)
{
  return rd32 (p) | (uint64_t) rd32 (p + 4) << 32;
}

/* The kernel's calc_sb_1_csum(), on a copy so that sb_csum can be zeroed
 * the way the kernel does it.
 */
static uint32_t
calc_sb_1_csum (const uint8_t *sb)
{
  uint8_t copy[SB];
  int size = 256 + rd32 (sb + O_MAX_DEV) * 2;
  const uint8_t *p = copy;
  unsigned long long newcsum = 0;

  memcpy (copy, sb, SB);
  le32 (copy + O_CSUM, 0);
  for (; size >= 4; size -= 4, p += 4)
    newcsum += rd32 (p);
  if (size == 2)
    newcsum += p[0] | p[1] << 8;
  return (uint32_t) ((newcsum & 0xffffffff) + (newcsum >> 32));
}

static void
seal (uint8_t *sb)
{
  le32 (sb + O_CSUM, calc_sb_1_csum (sb));
}

static const uint8_t set_uuid[16] = {
  0x3e, 0x1f, 0x5a, 0x90, 0x07, 0xc2, 0x4b, 0x11,
  0x8d, 0x2e, 0xf0, 0x66, 0xa9, 0x13, 0x5c, 0xe4,
};
static const uint8_t dev_uuid[16] = {
  0xd1, 0x00, 0xff, 0x42, 0x80, 0x7f, 0x01, 0xfe,
  0x55, 0xaa, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60,
};
/* 32 characters, no terminating NUL: md allows a full-length name. */
static const char set_name[] = "host.example.org:array-name-0032";

/* A RAID-5 of 4 roles as mdadm leaves it after member dev_number 2 failed
 * and was replaced by dev_number 4: roles {0, 1, faulty, 3, 2}.  max_dev is
 * 5, odd, so the checksum includes a trailing 16-bit word.  The superblock
 * is dev_number 4's (role 2), in the middle of rebuilding.
 */
#define HAND_MAX_DEV 5
static const uint16_t hand_roles[HAND_MAX_DEV] = { 0, 1, 0xfffe, 3, 2 };

static void
hand_built (uint8_t *sb, uint32_t dev_number)
{
  memset (sb, 0, SB);
  le32 (sb + O_MAGIC, 0xa92b4efc);
  le32 (sb + O_MAJOR, 1);
  le32 (sb + O_FEATURES, 0x2);          /* recovery_offset is valid */
  memcpy (sb + O_SET_UUID, set_uuid, 16);
  memcpy (sb + O_SET_NAME, set_name, 32);
  le64 (sb + O_CTIME, 0x00123456789aULL);
  le32 (sb + O_LEVEL, 5);
  le32 (sb + O_LAYOUT, 2);              /* left-symmetric */
  le64 (sb + O_SIZE, 0x1234567800ULL);  /* sectors: > 2^32, to test 64 bits */
  le32 (sb + O_CHUNK, 1024);            /* 512 KiB */
  le32 (sb + O_RAID_DISKS, 4);
  le64 (sb + O_DATA_OFFSET, 264192);    /* 129 MiB in sectors */
  le64 (sb + O_DATA_SIZE, 0x1234567a00ULL);
  le64 (sb + O_SUPER_OFFSET, 8);
  le64 (sb + O_RECOVERY_OFFSET, 777 * 8);
  le32 (sb + O_DEV_NUMBER, dev_number);
  memcpy (sb + O_DEVICE_UUID, dev_uuid, 16);
  le64 (sb + O_UTIME, 0x00123456789aULL);
  le64 (sb + O_EVENTS, 0x100000017ULL);
  le64 (sb + O_RESYNC_OFFSET, UINT64_MAX);
  le32 (sb + O_MAX_DEV, HAND_MAX_DEV);
  for (int i = 0; i < HAND_MAX_DEV; i++)
    le16 (sb + O_DEV_ROLES + 2 * i, hand_roles[i]);
  seal (sb);
}

static int
parse (const uint8_t *buf, struct md_super *sb, const char **why)
{
  *why = NULL;
  return md_super_parse (buf, sb, why);
}

#define ck_refused(buf, word) do {                                      \
    struct md_super s_;                                                 \
    const char *why_;                                                   \
    int r_ = parse ((buf), &s_, &why_);                                 \
    ck_assert_msg (r_ == -1, "accepted (%d), expected a refusal naming " \
                   "\"%s\" (level %d, layout %#x, features %#x)", r_,    \
                   (word), (int) rd32 ((buf) + O_LEVEL),                \
                   rd32 ((buf) + O_LAYOUT), rd32 ((buf) + O_FEATURES)); \
    ck_assert_msg (why_ != NULL, "refused without a message");          \
    ck_assert_msg (strstr (why_, (word)) != NULL,                       \
                   "message \"%s\" does not name \"%s\"", why_, (word)); \
  } while (0)

START_TEST (test_checksum_matches_kernel)
{
  uint8_t sb[SB];

  hand_built (sb, 4);
  /* hand_built sealed it with the kernel's algorithm: parse must agree. */
  struct md_super s;
  const char *why;
  ck_assert_int_eq (parse (sb, &s, &why), 1);
}
END_TEST

/* Vectors: bytes (i * 37 + 11) & 0xff, then magic, major 1, feature_map 0,
 * level 6, layout 2, super_offset 8 and max_dev; expected checksums from an
 * independent Python model of calc_sb_1_csum.  The filler has most words
 * above 2^31, so every sum carries past 32 bits and the fold matters.
 */
static void
vector (uint8_t *sb, uint32_t max_dev)
{
  for (int i = 0; i < SB; i++)
    sb[i] = (i * 37 + 11) & 0xff;
  le32 (sb + O_MAGIC, 0xa92b4efc);
  le32 (sb + O_MAJOR, 1);
  le32 (sb + O_FEATURES, 0);
  le32 (sb + 12, 0);
  le32 (sb + O_LEVEL, 6);
  le32 (sb + O_LAYOUT, 2);
  le64 (sb + O_SUPER_OFFSET, 8);
  le32 (sb + O_MAX_DEV, max_dev);
}

static const struct { uint32_t max_dev, csum; } vectors[] = {
  { 0, 0xec9ff6e6 }, { 1, 0xeca026f2 }, { 4, 0x75deeb95 },
  { 5, 0x75df43c9 }, { 383, 0x657dd985 }, { 384, 0x4c3ed987 },
};

/* The filler makes fields no member can hold (a dev_number beyond
 * max_dev, sizes beyond 2^53 sectors, events beyond 2^63, a
 * logical_block_size no block device has), which the
 * parser refuses after the checksum: give them possible values and seal
 * again with the model the vectors have just pinned down.
 */
static void
make_possible (uint8_t *sb)
{
  le32 (sb + O_DEV_NUMBER, 0);
  le64 (sb + O_EVENTS, 1);
  le64 (sb + O_DATA_OFFSET, 2048);
  le64 (sb + O_SIZE, 8192);
  le64 (sb + O_DATA_SIZE, 8192);
  le32 (sb + O_LOGICAL_BLOCK_SIZE, 0);
  seal (sb);
}

START_TEST (test_checksum_vectors)
{
  for (size_t v = 0; v < sizeof vectors / sizeof vectors[0]; v++) {
    uint8_t sb[SB], again[SB];
    struct md_super s;
    const char *why;
    uint32_t sum;

    vector (sb, vectors[v].max_dev);
    ck_assert_msg (calc_sb_1_csum (sb) == vectors[v].csum,
                   "test model: max_dev %" PRIu32 ": %#" PRIx32 " != %#" PRIx32,
                   vectors[v].max_dev, calc_sb_1_csum (sb), vectors[v].csum);
    le32 (sb + O_CSUM, vectors[v].csum);
    if (vectors[v].max_dev == 0) {
      /* No slot for any dev_number: refused, but not for the checksum. */
      make_possible (sb);
      ck_refused (sb, "dev_number");
      continue;
    }
    make_possible (sb);
    sum = rd32 (sb + O_CSUM);
    ck_assert_msg (parse (sb, &s, &why) == 1, "max_dev %" PRIu32 ": %s",
                   vectors[v].max_dev, why ? why : "no superblock");
    ck_assert_uint_eq (s.max_dev, vectors[v].max_dev);

    /* One off is wrong, whichever way. */
    le32 (sb + O_CSUM, sum + 1);
    ck_refused (sb, "checksum");
    le32 (sb + O_CSUM, sum - 1);
    ck_refused (sb, "checksum");

    /* format computes the same sum over what it writes. */
    le32 (sb + O_CSUM, sum);
    ck_assert_int_eq (parse (sb, &s, &why), 1);
    md_super_format (&s, again);
    ck_assert_uint_eq (rd32 (again + O_CSUM), calc_sb_1_csum (again));
  }
}
END_TEST

/* The trailing 16-bit word of an odd max_dev is covered; what lies past
 * dev_roles[max_dev - 1] is not (md ignores it too).
 */
START_TEST (test_checksum_coverage)
{
  uint8_t sb[SB];
  struct md_super s;
  const char *why;

  hand_built (sb, 4);
  sb[O_DEV_ROLES + 2 * (HAND_MAX_DEV - 1)] ^= 0x01;     /* last role */
  ck_refused (sb, "checksum");

  hand_built (sb, 4);
  sb[O_DEV_ROLES + 2 * (HAND_MAX_DEV - 1) + 1] ^= 0x80;
  ck_refused (sb, "checksum");

  hand_built (sb, 4);
  sb[O_DEV_ROLES + 2 * HAND_MAX_DEV] ^= 0xff;           /* past the end */
  sb[SB - 1] ^= 0xff;
  ck_assert_int_eq (parse (sb, &s, &why), 1);

  /* Every covered byte matters. */
  for (int i = 0; i < O_DEV_ROLES + 2 * HAND_MAX_DEV; i++) {
    if (i >= O_CSUM && i < O_CSUM + 4)
      continue;
    hand_built (sb, 4);
    sb[i] ^= 0x10;
    if (parse (sb, &s, &why) != -1 && i >= 4)
      ck_abort_msg ("byte %d changed, superblock still accepted", i);
  }
}
END_TEST

START_TEST (test_parse_hand_built)
{
  uint8_t sb[SB];
  struct md_super s;
  const char *why;

  hand_built (sb, 4);
  ck_assert_int_eq (parse (sb, &s, &why), 1);
  ck_assert_mem_eq (s.set_uuid, set_uuid, 16);
  ck_assert_str_eq (s.set_name, set_name);
  ck_assert_uint_eq (s.feature_map, 0x2);
  ck_assert_int_eq (s.level, 5);
  ck_assert_int_eq (s.layout, 2);
  ck_assert_uint_eq (s.size, 0x1234567800ULL * 512);
  ck_assert_uint_eq (s.chunk, 512 * 1024);
  ck_assert_int_eq (s.raid_disks, 4);
  ck_assert_uint_eq (s.data_offset, 129 * 1024 * 1024);
  ck_assert_uint_eq (s.data_size, 0x1234567a00ULL * 512);
  ck_assert_uint_eq (s.recovery_offset, 777 * 4096);
  ck_assert_uint_eq (s.dev_number, 4);
  ck_assert_mem_eq (s.device_uuid, dev_uuid, 16);
  ck_assert_uint_eq (s.events, 0x100000017ULL);
  ck_assert_uint_eq (s.resync_offset, UINT64_MAX);
  ck_assert_uint_eq (s.ctime, 0x00123456789aULL);
  ck_assert_uint_eq (s.max_dev, HAND_MAX_DEV);
  for (int i = 0; i < HAND_MAX_DEV; i++)
    ck_assert_uint_eq (s.dev_roles[i], hand_roles[i]);
  ck_assert_int_eq (s.role, 2);         /* not its dev_number */
}
END_TEST

/* The other members of the same array: their roles, and none for the
 * faulty one or a spare.  (A dev_number beyond max_dev is a bad
 * superblock: test_impossible_fields.)
 */
START_TEST (test_roles)
{
  static const struct { uint32_t dev_number; int role; } cases[] = {
    { 0, 0 }, { 1, 1 }, { 2, -1 /* faulty */ }, { 3, 3 }, { 4, 2 },
  };
  uint8_t sb[SB];
  struct md_super s;
  const char *why;

  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    hand_built (sb, cases[c].dev_number);
    ck_assert_int_eq (parse (sb, &s, &why), 1);
    ck_assert_uint_eq (s.dev_number, cases[c].dev_number);
    ck_assert_msg (s.role == cases[c].role, "dev_number %" PRIu32
                   ": role %d, expected %d", cases[c].dev_number, s.role,
                   cases[c].role);
  }

  /* mdadm's fresh RAID-5: the last device starts as a spare (0xffff). */
  hand_built (sb, 3);
  le16 (sb + O_DEV_ROLES + 2 * 3, 0xffff);
  seal (sb);
  ck_assert_int_eq (parse (sb, &s, &why), 1);
  ck_assert_int_eq (s.role, -1);
  ck_assert_uint_eq (s.dev_roles[3], MD_ROLE_SPARE);

  /* A role number not below raid_disks is no role. */
  hand_built (sb, 3);
  le16 (sb + O_DEV_ROLES + 2 * 3, 4);
  seal (sb);
  ck_assert_int_eq (parse (sb, &s, &why), 1);
  ck_assert_int_eq (s.role, -1);
}
END_TEST

/* recovery_offset means something only with feature bit 2. */
START_TEST (test_recovery_offset_needs_feature)
{
  uint8_t sb[SB];
  struct md_super s;
  const char *why;

  hand_built (sb, 4);
  le32 (sb + O_FEATURES, 0);
  seal (sb);
  ck_assert_int_eq (parse (sb, &s, &why), 1);
  ck_assert_uint_eq (s.recovery_offset, 0);

  /* A write-intent bitmap is accepted (not maintained; see the man page). */
  hand_built (sb, 4);
  le32 (sb + O_FEATURES, 0x1);
  le32 (sb + O_BITMAP_OFFSET, 8);
  seal (sb);
  ck_assert_int_eq (parse (sb, &s, &why), 1);
  ck_assert_uint_eq (s.feature_map, 0x1);
}
END_TEST

/* md's re-add in progress: a recovery (bit 2) from the bitmap (bit 0x80,
 * MD_FEATURE_RECOVERY_BITMAP) is accepted with its offset; the bitmap
 * bit without a recovery is refused, and so is a replacement (0x10).
 */
START_TEST (test_recovery_from_bitmap)
{
  uint8_t sb[SB];
  struct md_super s;
  const char *why;

  hand_built (sb, 4);
  le32 (sb + O_FEATURES, 0x1 | 0x2 | 0x80);
  le32 (sb + O_BITMAP_OFFSET, 8);
  seal (sb);
  ck_assert_int_eq (parse (sb, &s, &why), 1);
  ck_assert_uint_eq (s.feature_map, 0x83);
  ck_assert_uint_eq (s.recovery_offset, 777 * 4096);

  hand_built (sb, 4);
  le32 (sb + O_FEATURES, 0x80);
  seal (sb);
  ck_refused (sb, "recovery offset");

  hand_built (sb, 4);
  le32 (sb + O_FEATURES, 0x2 | 0x10);
  seal (sb);
  ck_refused (sb, "replacement");
}
END_TEST

/* md finds an internal bitmap at bitmap_offset (signed, sectors from the
 * superblock) when feature bit 1 is set.  Rewriting a superblock must keep
 * the two together: the bit with its offset, or neither; never the bit
 * with offset 0, which points at the superblock itself.
 */
START_TEST (test_bitmap_kept_consistent)
{
  uint8_t sb[SB], out[SB];
  struct md_super s;
  const char *why;

  hand_built (sb, 4);
  le32 (sb + O_FEATURES, 0x1);
  le32 (sb + O_BITMAP_OFFSET, 8);       /* mdadm's default for v1.2 */
  seal (sb);
  ck_assert_int_eq (parse (sb, &s, &why), 1);
  md_super_format (&s, out);
  if (rd32 (out + O_FEATURES) & 0x1)
    ck_assert_msg (rd32 (out + O_BITMAP_OFFSET) == 8,
                   "the bitmap feature bit was kept but bitmap_offset is "
                   "now %" PRIu32 ", not 8", rd32 (out + O_BITMAP_OFFSET));
}
END_TEST

/* parse -> format gives back the same bytes (for the fields the plugin
 * knows; hand_built sets no others, and utime == ctime), and format ->
 * parse gives back the same fields.
 */
START_TEST (test_round_trip)
{
  uint8_t sb[SB], out[SB];
  struct md_super s, t;
  const char *why;

  hand_built (sb, 4);
  ck_assert_int_eq (parse (sb, &s, &why), 1);
  memset (out, 0xa5, SB);
  md_super_format (&s, out);
  for (int i = 0; i < SB; i++)
    ck_assert_msg (out[i] == sb[i], "byte %d: formatted %#x, expected %#x",
                   i, out[i], sb[i]);

  /* A superblock as the plugin creates one: max_dev 384, all but the
   * members spare, active.
   */
  memset (&s, 0, sizeof s);
  memcpy (s.set_uuid, set_uuid, 16);
  strcpy (s.set_name, "nbdkit-raid");
  s.level = 6;
  s.layout = 5;
  s.chunk = 64 * 1024;
  s.raid_disks = 6;
  s.size = 1000 * 64 * 1024;
  s.data_offset = 1024 * 1024;
  s.data_size = s.size + 4096;
  s.minor = 2;
  s.super_offset = 4096;
  s.dev_number = 5;
  memcpy (s.device_uuid, dev_uuid, 16);
  s.events = 42;
  s.resync_offset = 0;
  s.ctime = 1700000000;
  s.max_dev = MD_MAX_DEV;
  for (int i = 0; i < MD_MAX_DEV; i++)
    s.dev_roles[i] = i < 6 ? 5 - i : MD_ROLE_SPARE;
  md_super_format (&s, out);

  /* The bytes, read back at md_p.h's offsets. */
  ck_assert_uint_eq (rd32 (out + O_MAGIC), 0xa92b4efc);
  ck_assert_uint_eq (rd32 (out + O_MAJOR), 1);
  ck_assert_uint_eq (rd32 (out + O_FEATURES), 0);
  ck_assert_mem_eq (out + O_SET_UUID, set_uuid, 16);
  ck_assert_str_eq ((const char *) out + O_SET_NAME, "nbdkit-raid");
  ck_assert_uint_eq (rd32 (out + O_LEVEL), 6);
  ck_assert_uint_eq (rd32 (out + O_LAYOUT), 5);
  ck_assert_uint_eq (rd64 (out + O_SIZE), 1000 * 128);
  ck_assert_uint_eq (rd32 (out + O_CHUNK), 128);
  ck_assert_uint_eq (rd32 (out + O_RAID_DISKS), 6);
  ck_assert_uint_eq (rd64 (out + O_DATA_OFFSET), 2048);
  ck_assert_uint_eq (rd64 (out + O_DATA_SIZE), 1000 * 128 + 8);
  ck_assert_uint_eq (rd64 (out + O_SUPER_OFFSET), 8);
  ck_assert_uint_eq (rd32 (out + O_DEV_NUMBER), 5);
  ck_assert_mem_eq (out + O_DEVICE_UUID, dev_uuid, 16);
  ck_assert_uint_eq (rd64 (out + O_EVENTS), 42);
  ck_assert_uint_eq (rd64 (out + O_RESYNC_OFFSET), 0);
  ck_assert_uint_eq (rd32 (out + O_MAX_DEV), MD_MAX_DEV);
  for (int i = 0; i < MD_MAX_DEV; i++)
    ck_assert_uint_eq (out[O_DEV_ROLES + 2 * i] | out[O_DEV_ROLES + 2 * i + 1] << 8,
                       i < 6 ? 5 - i : 0xffff);
  ck_assert_uint_eq (rd32 (out + O_CSUM), calc_sb_1_csum (out));

  ck_assert_int_eq (parse (out, &t, &why), 1);
  ck_assert_mem_eq (t.set_uuid, s.set_uuid, 16);
  ck_assert_str_eq (t.set_name, s.set_name);
  ck_assert_uint_eq (t.feature_map, s.feature_map);
  ck_assert_int_eq (t.level, s.level);
  ck_assert_int_eq (t.layout, s.layout);
  ck_assert_uint_eq (t.chunk, s.chunk);
  ck_assert_int_eq (t.raid_disks, s.raid_disks);
  ck_assert_uint_eq (t.size, s.size);
  ck_assert_uint_eq (t.data_offset, s.data_offset);
  ck_assert_uint_eq (t.data_size, s.data_size);
  ck_assert_uint_eq (t.dev_number, s.dev_number);
  ck_assert_mem_eq (t.device_uuid, s.device_uuid, 16);
  ck_assert_uint_eq (t.events, s.events);
  ck_assert_uint_eq (t.resync_offset, s.resync_offset);
  ck_assert_uint_eq (t.ctime, s.ctime);
  ck_assert_uint_eq (t.max_dev, s.max_dev);
  ck_assert_mem_eq (t.dev_roles, s.dev_roles, sizeof s.dev_roles);
  ck_assert_int_eq (t.role, 0);         /* dev_roles[5] */

  /* And once more through format: identical bytes. */
  md_super_format (&t, sb);
  ck_assert_mem_eq (sb, out, SB);
}
END_TEST

START_TEST (test_bad_checksum)
{
  uint8_t sb[SB];

  hand_built (sb, 4);
  sb[100] ^= 0x01;      /* new_level: no field the plugin reads */
  ck_refused (sb, "checksum");

  hand_built (sb, 4);
  le32 (sb + O_CSUM, 0);
  ck_refused (sb, "checksum");

  /* The checksum of a big-endian machine's sum is not md's. */
  hand_built (sb, 4);
  uint32_t c = rd32 (sb + O_CSUM);
  le32 (sb + O_CSUM, __builtin_bswap32 (c));
  if (__builtin_bswap32 (c) != c)
    ck_refused (sb, "checksum");
}
END_TEST

START_TEST (test_no_magic)
{
  uint8_t sb[SB];
  struct md_super s;
  const char *why;

  memset (sb, 0, SB);
  ck_assert_int_eq (parse (sb, &s, &why), 0);

  for (int i = 0; i < SB; i++)
    sb[i] = (i * 131 + 7) ^ (i >> 3);
  ck_assert_int_eq (parse (sb, &s, &why), 0);

  /* Byte-swapped magic (a big-endian writer) is not ours either. */
  hand_built (sb, 4);
  le32 (sb + O_MAGIC, 0xfc4e2ba9);
  ck_assert_int_eq (parse (sb, &s, &why), 0);

  /* One bit off the magic. */
  hand_built (sb, 4);
  sb[O_MAGIC + 3] ^= 0x01;
  ck_assert_int_eq (parse (sb, &s, &why), 0);
}
END_TEST

START_TEST (test_unsupported_features)
{
  static const struct { uint32_t bit; const char *word; } cases[] = {
    { 0x4, "reshape" },                 /* MD_FEATURE_RESHAPE_ACTIVE */
    { 0x200, "journal" },               /* MD_FEATURE_JOURNAL */
    { 0x400, "PPL" },                   /* MD_FEATURE_PPL */
    { 0x10, "replacement" },            /* MD_FEATURE_REPLACEMENT */
    { 0x20, "reshape" },                /* MD_FEATURE_RESHAPE_BACKWARDS */
    { 0x40, "reshape" },                /* MD_FEATURE_NEW_OFFSET */
    { 0x100, "clustered" },             /* MD_FEATURE_CLUSTERED */
    { 0x800, "PPL" },                   /* MD_FEATURE_MULTIPLE_PPLS */
  };
  uint8_t sb[SB];

  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    hand_built (sb, 4);
    le32 (sb + O_FEATURES, rd32 (sb + O_FEATURES) | cases[c].bit);
    seal (sb);
    ck_refused (sb, cases[c].word);
    /* Also alone, and with the bitmap bit. */
    le32 (sb + O_FEATURES, cases[c].bit | 0x1);
    seal (sb);
    ck_refused (sb, cases[c].word);
  }
}
END_TEST

START_TEST (test_levels)
{
  static const int32_t refused[] = { 1, 0, 4, 10, -1, -4, 7, 0x7fffffff };
  uint8_t sb[SB];
  struct md_super s;
  const char *why;

  for (size_t c = 0; c < sizeof refused / sizeof refused[0]; c++) {
    hand_built (sb, 4);
    le32 (sb + O_LEVEL, refused[c]);
    seal (sb);
    ck_refused (sb, "level");
  }
  for (int level = 5; level <= 6; level++) {
    hand_built (sb, 4);
    le32 (sb + O_LEVEL, level);
    seal (sb);
    ck_assert_int_eq (parse (sb, &s, &why), 1);
    ck_assert_int_eq (s.level, level);
  }
}
END_TEST

START_TEST (test_layouts)
{
  /* md: 0..5 are the RAID-5 layouts (RAID-6 uses them too); 8, 9, 10 are
   * the DDF rotating layouts, 16..20 the RAID-6 "parity in the RAID-5
   * place" variants used while converting.  Only 0..5 are implemented.
   * layout is a __le32: values with the top bit set are no layout either,
   * not negative numbers below 5.
   */
  static const uint32_t refused[] = {
    6, 8, 9, 10, 16, 17, 18, 19, 20, 255, 0x80000000, 0xffffffff,
  };
  uint8_t sb[SB];
  struct md_super s;
  const char *why;

  for (size_t c = 0; c < sizeof refused / sizeof refused[0]; c++) {
    hand_built (sb, 4);
    le32 (sb + O_LEVEL, 6);
    le32 (sb + O_LAYOUT, refused[c]);
    seal (sb);
    ck_refused (sb, "layout");
  }
  for (uint32_t layout = 0; layout <= 5; layout++) {
    hand_built (sb, 4);
    le32 (sb + O_LAYOUT, layout);
    seal (sb);
    ck_assert_int_eq (parse (sb, &s, &why), 1);
    ck_assert_int_eq (s.layout, (int) layout);
  }
}
END_TEST

START_TEST (test_other_refusals)
{
  uint8_t sb[SB];

  hand_built (sb, 4);
  le32 (sb + O_MAJOR, 0);
  seal (sb);
  ck_refused (sb, "version");

  hand_built (sb, 4);
  le32 (sb + O_MAJOR, 2);
  seal (sb);
  ck_refused (sb, "version");

  /* super_offset says the version: 0 is v1.1, 8 v1.2, more v1.0 (whose
   * data must end before it, and which lies on a 4 KiB boundary).
   */
  {
    struct md_super s;
    const char *why;

    hand_built (sb, 4);
    le64 (sb + O_SUPER_OFFSET, 0);
    seal (sb);
    ck_assert_int_eq (parse (sb, &s, &why), 1);
    ck_assert_int_eq (s.minor, 1);
    ck_assert_uint_eq (s.super_offset, 0);
    hand_built (sb, 4);
    ck_assert_int_eq (parse (sb, &s, &why), 1);
    ck_assert_int_eq (s.minor, 2);
    ck_assert_uint_eq (s.super_offset, 4096);
    hand_built (sb, 4);
    le64 (sb + O_DATA_OFFSET, 0);
    le64 (sb + O_SIZE, 2097136 - 256);
    le64 (sb + O_SUPER_OFFSET, 2097136);
    seal (sb);
    ck_assert_int_eq (parse (sb, &s, &why), 1);
    ck_assert_int_eq (s.minor, 0);
    ck_assert_uint_eq (s.super_offset, 2097136ULL * 512);
  }
  hand_built (sb, 4);                   /* v1.0 under its data */
  le64 (sb + O_SUPER_OFFSET, 2097136);
  seal (sb);
  ck_refused (sb, "over the superblock");
  hand_built (sb, 4);
  le64 (sb + O_DATA_OFFSET, 0);
  le64 (sb + O_SIZE, 2097136 - 256);
  le64 (sb + O_SUPER_OFFSET, 2097136 + 4);      /* not 4 KiB aligned */
  seal (sb);
  ck_refused (sb, "super_offset");
  hand_built (sb, 4);                   /* v1.2, data over the record */
  le64 (sb + O_DATA_OFFSET, 15);
  seal (sb);
  ck_refused (sb, "over the superblock");
  hand_built (sb, 4);                   /* v1.1, the same */
  le64 (sb + O_SUPER_OFFSET, 0);
  le64 (sb + O_DATA_OFFSET, 7);
  seal (sb);
  ck_refused (sb, "over the superblock");

  /* dev_roles cannot run past the 4 KiB superblock. */
  hand_built (sb, 4);
  le32 (sb + O_MAX_DEV, 0x80000000);
  ck_refused (sb, "max_dev");
  hand_built (sb, 4);
  le32 (sb + O_MAX_DEV, 3000);
  ck_refused (sb, "max_dev");
}
END_TEST

/* Allow-list: a feature bit md defines that the plugin does not know, or
 * one md may define later, is refused and named (in hex), never ignored.
 */
START_TEST (test_unknown_features)
{
  static const struct { uint32_t bit; const char *word; } cases[] = {
    { 0x1000, "0x1000" },               /* MD_FEATURE_RAID0_LAYOUT */
    { 0x2000, "0x2000" },
    { 0x10000, "0x10000" },
    { 0x80000000, "0x80000000" },
  };
  uint8_t sb[SB];
  struct md_super s;
  const char *why;

  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    hand_built (sb, 4);
    le32 (sb + O_FEATURES, 0x2 | cases[c].bit);
    seal (sb);
    ck_refused (sb, cases[c].word);
    ck_refused (sb, "unknown feature");
  }
  /* The two implemented bits alone and together are accepted. */
  for (uint32_t f = 0; f <= 3; f++) {
    hand_built (sb, 4);
    le32 (sb + O_FEATURES, f);
    le32 (sb + O_BITMAP_OFFSET, 8);
    seal (sb);
    ck_assert_msg (parse (sb, &s, &why) == 1, "features %#x refused: %s", f,
                   why);
  }
}
END_TEST

/* Values a checksummed superblock can hold but no member can: refused as
 * a bad superblock before anything is derived from them.
 */
START_TEST (test_impossible_fields)
{
  static const uint32_t dev_numbers[] = { 5, 6, 383, 384, 0xffffffff };
  uint8_t sb[SB];
  struct md_super s;
  const char *why;

  /* dev_number with no slot in dev_roles (max_dev is 5). */
  for (size_t c = 0; c < sizeof dev_numbers / sizeof dev_numbers[0]; c++) {
    hand_built (sb, dev_numbers[c]);
    ck_refused (sb, "dev_number");
    ck_refused (sb, "bad superblock");
  }
  /* max_dev 0: no member has a slot. */
  hand_built (sb, 0);
  le32 (sb + O_MAX_DEV, 0);
  seal (sb);
  ck_refused (sb, "dev_number");

  /* events: one more update must not wrap round to 0. */
  hand_built (sb, 4);
  le64 (sb + O_EVENTS, UINT64_MAX);
  seal (sb);
  ck_refused (sb, "event count");
  hand_built (sb, 4);
  le64 (sb + O_EVENTS, UINT64_C (1) << 63);
  seal (sb);
  ck_refused (sb, "event count");
  hand_built (sb, 4);
  le64 (sb + O_EVENTS, (UINT64_C (1) << 63) - 1);
  seal (sb);
  ck_assert_int_eq (parse (sb, &s, &why), 1);
  ck_assert_uint_eq (s.events, (UINT64_C (1) << 63) - 1);

  /* Sector counts that overflow when turned into bytes. */
  hand_built (sb, 4);
  le64 (sb + O_DATA_OFFSET, UINT64_C (1) << 55);
  seal (sb);
  ck_refused (sb, "bad superblock");
  hand_built (sb, 4);
  le64 (sb + O_SIZE, UINT64_MAX);
  seal (sb);
  ck_refused (sb, "bad superblock");
}
END_TEST

/* An internal bitmap lives between the superblock and the data (v1.2):
 * bitmap_offset (signed sectors from the superblock) pointing past the
 * data offset, into the superblock, or before the member is a bad
 * superblock, not something to try reading.  data_offset is 264192
 * sectors here.
 */
START_TEST (test_bitmap_placement)
{
  static const int32_t refused[] = {
    0x7fffffff, 264192, 264192 - 8, 264184 + 1, 0, -1, -8 - 1, INT32_MIN,
  };
  static const int32_t accepted[] = { 8, 16, 2048, 264184 - 8, -8 };
  uint8_t sb[SB];
  struct md_super s;
  const char *why;

  for (size_t c = 0; c < sizeof refused / sizeof refused[0]; c++) {
    hand_built (sb, 4);
    le32 (sb + O_FEATURES, 0x1);
    le32 (sb + O_BITMAP_OFFSET, (uint32_t) refused[c]);
    seal (sb);
    ck_refused (sb, "bitmap_offset");
  }
  for (size_t c = 0; c < sizeof accepted / sizeof accepted[0]; c++) {
    hand_built (sb, 4);
    le32 (sb + O_FEATURES, 0x1);
    le32 (sb + O_BITMAP_OFFSET, (uint32_t) accepted[c]);
    seal (sb);
    ck_assert_msg (parse (sb, &s, &why) == 1, "bitmap_offset %" PRId32
                   " refused: %s", accepted[c], why);
  }
  /* Without the bitmap bit the field means nothing. */
  hand_built (sb, 4);
  le32 (sb + O_FEATURES, 0);
  le32 (sb + O_BITMAP_OFFSET, 0x7fffffff);
  seal (sb);
  ck_assert_int_eq (parse (sb, &s, &why), 1);
}
END_TEST

/* member_io_run for the in-memory disks of the read/write tests: priv is
 * the disk's bytes; an "err" disk fails every request.
 */
struct mem_disk {
  uint8_t *bytes;
  int err;
  int reads, writes, flushes;
};

int
member_io_run (struct member_io *ios, size_t n)
{
  int r = 0;

  for (size_t i = 0; i < n; i++) {
    struct member_io *io = &ios[i];
    struct mem_disk *d = io->member->priv;

    io->err = d->err;
    if (io->err) {
      errno = io->err;
      r = -1;
      continue;
    }
    ck_assert_msg (io->op == MEMBER_FLUSH ||
                   io->offset + io->len <= io->member->size,
                   "I/O beyond the member");
    switch (io->op) {
    case MEMBER_READ:
      memcpy (io->buf, d->bytes + io->offset, io->len);
      d->reads++;
      break;
    case MEMBER_WRITE:
      memcpy (d->bytes + io->offset, io->buf, io->len);
      d->writes++;
      break;
    case MEMBER_FLUSH:
      d->flushes++;
      break;
    default:
      ck_abort_msg ("unexpected op %d", io->op);
    }
  }
  return r;
}

START_TEST (test_read_write)
{
  const uint64_t size = 64 * 1024;
  struct mem_disk d = { .bytes = calloc (1, size) };
  struct member m = { .name = (char *) "mem", .size = size, .priv = &d };
  uint8_t sb[SB];
  struct md_super s, t;
  const char *why = NULL;

  ck_assert_ptr_nonnull (d.bytes);
  /* Blank: no superblock. */
  ck_assert_int_eq (md_super_read (&m, MD_MINOR_ANY, &s, &why), 0);

  hand_built (sb, 4);
  memcpy (d.bytes + 4096, sb, SB);
  ck_assert_int_eq (md_super_read (&m, MD_MINOR_ANY, &s, &why), 1);
  ck_assert_int_eq (s.role, 2);
  ck_assert_uint_eq (s.events, 0x100000017ULL);

  /* A write lands at 4 KiB, touches nothing else, and is flushed. */
  memset (d.bytes, 0x5a, size);
  s.events++;
  s.resync_offset = 0;
  d.flushes = 0;
  ck_assert_int_eq (md_super_write (&m, &s), 0);
  ck_assert_int_ge (d.flushes, 1);
  for (uint64_t i = 0; i < size; i++)
    if ((i < 4096 || i >= 8192) && d.bytes[i] != 0x5a)
      ck_abort_msg ("md_super_write changed byte %" PRIu64, i);
  ck_assert_uint_eq (rd64 (d.bytes + 4096 + O_EVENTS), 0x100000018ULL);
  ck_assert_uint_eq (rd64 (d.bytes + 4096 + O_RESYNC_OFFSET), 0);
  ck_assert_uint_eq (rd32 (d.bytes + 4096 + O_CSUM),
                     calc_sb_1_csum (d.bytes + 4096));
  ck_assert_int_eq (md_super_read (&m, MD_MINOR_ANY, &t, &why), 1);
  ck_assert_uint_eq (t.events, s.events);

  /* A corrupted one on disk is refused with the reason. */
  d.bytes[4096 + 100] ^= 1;
  why = NULL;
  ck_assert_int_eq (md_super_read (&m, MD_MINOR_ANY, &t, &why), -1);
  ck_assert_ptr_nonnull (why);
  ck_assert_ptr_nonnull (strstr (why, "checksum"));

  /* Too small to hold a v1.2 superblock: none. */
  m.size = 8191;
  ck_assert_int_eq (md_super_read (&m, MD_MINOR_ANY, &t, &why), 0);
  m.size = size;

  /* An I/O error is not a bad superblock: -2 with errno (the array fails
   * the member and may start degraded).
   */
  d.err = EIO;
  errno = 0;
  ck_assert_int_eq (md_super_read (&m, MD_MINOR_ANY, &t, &why), -2);
  ck_assert_int_eq (errno, EIO);
  ck_assert_int_eq (md_super_write (&m, &s), -1);
  free (d.bytes);
}
END_TEST

/* md's rule for where v1.0 lies, written out independently: the
 * member's sectors less 16, rounded down to a multiple of 8.
 */
static uint64_t
v10_place (uint64_t bytes)
{
  return ((bytes / 512 - 16) / 8 * 8) * 512;
}

/* hand_built, moved to version 1.minor on a member of `bytes` bytes:
 * data at 0 up to 64 KiB before the end for v1.0, at 128 KiB otherwise.
 */
static void
hand_built_at (uint8_t *sb, int minor, uint64_t bytes)
{
  hand_built (sb, 4);
  if (minor == 0) {
    le64 (sb + O_DATA_OFFSET, 0);
    le64 (sb + O_SUPER_OFFSET, v10_place (bytes) / 512);
  }
  else {
    le64 (sb + O_DATA_OFFSET, 256);
    le64 (sb + O_SUPER_OFFSET, minor == 1 ? 0 : 8);
  }
  le64 (sb + O_SIZE, bytes / 512 - 256 - 128);
  le64 (sb + O_DATA_SIZE, bytes / 512 - 256 - 128);
  seal (sb);
}

/* Each version is found, and written, at its own place, on members whose
 * size is no multiple of 4 KiB; a record elsewhere than its super_offset
 * says is no superblock; asked for one version, only its place counts.
 */
START_TEST (test_places)
{
  static const uint64_t sizes[] = {
    1 << 20, (1 << 20) + 512, (1 << 20) + 3584, (1 << 20) + 4096 + 1024,
  };

  ck_assert_uint_eq (md_super_location (2, 1 << 20), 4096);
  ck_assert_uint_eq (md_super_location (1, 1 << 20), 0);
  ck_assert_uint_eq (md_super_location (0, 1 << 20), (1 << 20) - 8192);
  ck_assert_uint_eq (md_super_location (0, (1 << 20) + 3584),
                     (1 << 20) - 8192);
  ck_assert_uint_eq (md_super_location (0, (1 << 20) + 4096),
                     (1 << 20) - 4096);
  ck_assert_uint_eq (md_super_location (2, 8191), UINT64_MAX);
  ck_assert_uint_eq (md_super_location (1, 4095), UINT64_MAX);
  ck_assert_uint_eq (md_super_location (0, 16 * 1024 - 1), UINT64_MAX);
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
    for (int minor = 0; minor <= 2; minor++) {
      uint64_t size = sizes[k];
      uint64_t at = minor == 0 ? v10_place (size) : minor == 1 ? 0 : 4096;
      struct mem_disk d = { .bytes = calloc (1, size) };
      struct member m = { .name = (char *) "mem", .size = size, .priv = &d };
      uint8_t sb[SB];
      struct md_super s, t;
      const char *why = NULL;

      ck_assert_ptr_nonnull (d.bytes);
      ck_assert_uint_eq (md_super_location (minor, size), at);
      hand_built_at (sb, minor, size);
      memcpy (d.bytes + at, sb, SB);
      ck_assert_msg (md_super_read (&m, MD_MINOR_ANY, &s, &why) == 1,
                     "v1.%d on %" PRIu64 " bytes: %s", minor, size, why);
      ck_assert_int_eq (s.minor, minor);
      ck_assert_uint_eq (s.super_offset, at);
      for (int other = 0; other <= 2; other++)
        ck_assert_int_eq (md_super_read (&m, other, &t, &why),
                          other == minor ? 1 : 0);

      /* Written back where it belongs, nothing else touched. */
      memset (d.bytes, 0x5a, size);
      s.events += 3;
      ck_assert_int_eq (md_super_write (&m, &s), 0);
      for (uint64_t i = 0; i < size; i++)
        if ((i < at || i >= at + SB) && d.bytes[i] != 0x5a)
          ck_abort_msg ("v1.%d: md_super_write changed byte %" PRIu64,
                        minor, i);
      ck_assert_uint_eq (rd64 (d.bytes + at + O_SUPER_OFFSET), at / 512);
      ck_assert_uint_eq (rd64 (d.bytes + at + O_EVENTS), 0x100000017ULL + 3);
      ck_assert_uint_eq (rd32 (d.bytes + at + O_CSUM),
                         calc_sb_1_csum (d.bytes + at));

      /* The same record at another version's place is no superblock
       * there: its super_offset names its own.
       */
      memset (d.bytes, 0, size);
      memcpy (d.bytes + (minor == 2 ? 0 : 4096), sb, SB);
      ck_assert_int_eq (md_super_read (&m, MD_MINOR_ANY, &t, &why), 0);
      free (d.bytes);
    }
}
END_TEST

/* Two places holding a superblock: refused, naming both; each alone, by
 * its version, is read.  md_super_wipe_others zeroes all but one.
 */
START_TEST (test_two_places)
{
  const uint64_t size = 2 << 20;
  struct mem_disk d = { .bytes = calloc (1, size) };
  struct member m = { .name = (char *) "mem", .size = size, .priv = &d };
  uint8_t sb[SB];
  struct md_super s;
  const char *why = NULL;

  ck_assert_ptr_nonnull (d.bytes);
  hand_built_at (sb, 0, size);
  memcpy (d.bytes + v10_place (size), sb, SB);
  hand_built_at (sb, 2, size);
  memcpy (d.bytes + 4096, sb, SB);
  ck_assert_int_eq (md_super_read (&m, MD_MINOR_ANY, &s, &why), -1);
  ck_assert_ptr_nonnull (why);
  ck_assert_msg (strstr (why, "two md superblocks") && strstr (why, "v1.0")
                 && strstr (why, "v1.2") && !strstr (why, "v1.1 ("),
                 "said: %s", why);
  ck_assert_int_eq (md_super_read (&m, 0, &s, &why), 1);
  ck_assert_int_eq (s.minor, 0);
  ck_assert_int_eq (md_super_read (&m, 2, &s, &why), 1);
  ck_assert_int_eq (s.minor, 2);

  /* A third at the start: still refused. */
  hand_built_at (sb, 1, size);
  memcpy (d.bytes, sb, SB);
  ck_assert_int_eq (md_super_read (&m, MD_MINOR_ANY, &s, &why), -1);
  ck_assert_ptr_nonnull (strstr (why, "two md superblocks"));

  /* Keeping v1.1: the other two go, nothing else changes. */
  d.bytes[4096 + SB] = 0x77;
  ck_assert_int_eq (md_super_wipe_others (&m, 1), 2);
  ck_assert_int_eq (md_super_read (&m, MD_MINOR_ANY, &s, &why), 1);
  ck_assert_int_eq (s.minor, 1);
  ck_assert_uint_eq (rd32 (d.bytes + 4096), 0);
  ck_assert_uint_eq (rd32 (d.bytes + v10_place (size)), 0);
  ck_assert_uint_eq (d.bytes[4096 + SB], 0x77);
  ck_assert_int_eq (md_super_wipe_others (&m, 1), 0);
  free (d.bytes);
}
END_TEST

/* v1.0 keeps its internal bitmap between the data and the superblock:
 * bitmap_offset is negative (mdadm: the area's size and the bad-block
 * log's 8 sectors before the superblock).  A bitmap into the data, over
 * the superblock, or after it is a bad superblock.  The data ends 64 KiB
 * (128 sectors) before the superblock here.
 */
START_TEST (test_v10_bitmap_placement)
{
  static const int32_t refused[] = { 8, 2, 0, -7, -128 - 1, -100000, INT32_MIN };
  static const int32_t accepted[] = { -8, -16, -128 };
  const uint64_t size = 2 << 20;
  uint8_t sb[SB];
  struct md_super s;
  const char *why;

  for (size_t c = 0; c < sizeof refused / sizeof refused[0]; c++) {
    hand_built_at (sb, 0, size);
    le64 (sb + O_SIZE, v10_place (size) / 512 - 128);
    le32 (sb + O_FEATURES, 0x1);
    le32 (sb + O_BITMAP_OFFSET, (uint32_t) refused[c]);
    seal (sb);
    ck_refused (sb, "bitmap_offset");
  }
  for (size_t c = 0; c < sizeof accepted / sizeof accepted[0]; c++) {
    hand_built_at (sb, 0, size);
    le64 (sb + O_SIZE, v10_place (size) / 512 - 128);
    le32 (sb + O_FEATURES, 0x1);
    le32 (sb + O_BITMAP_OFFSET, (uint32_t) accepted[c]);
    seal (sb);
    ck_assert_msg (parse (sb, &s, &why) == 1, "bitmap_offset %" PRId32
                   " refused: %s", accepted[c], why);
    ck_assert_int_eq (s.bitmap_offset, accepted[c]);
  }
}
END_TEST

/* The bad-block log's fields, cnt_corrected_read and md 6.19's
 * logical_block_size (md_p.h: 164, 185, 186, 188, 224) are read, and
 * written back where they were; devflags (184), between them, is kept.
 * A logical_block_size no block device can have is refused.
 */
START_TEST (test_bblog_fields)
{
  uint8_t sb[SB], out[SB];
  struct md_super s, t;
  const char *why;

  hand_built (sb, 4);
  le32 (sb + O_CNT_CORRECTED_READ, 0x01020304);
  sb[O_DEVFLAGS] = 0x01;                /* write-mostly */
  sb[O_BBLOG_SHIFT] = 0;
  le16 (sb + O_BBLOG_SIZE, 8);
  le32 (sb + O_BBLOG_OFFSET, (uint32_t) -8);
  le32 (sb + O_LOGICAL_BLOCK_SIZE, 4096);
  seal (sb);
  ck_assert_int_eq (parse (sb, &s, &why), 1);
  ck_assert_uint_eq (s.cnt_corrected_read, 0x01020304);
  ck_assert_uint_eq (s.bblog_shift, 0);
  ck_assert_uint_eq (s.bblog_size, 8);
  ck_assert_int_eq (s.bblog_offset, -8);
  ck_assert_uint_eq (s.logical_block_size, 4096);
  md_super_format (&s, out);
  ck_assert_mem_eq (out, sb, SB);

  /* Changed fields land at their offsets, nothing else moves. */
  s.cnt_corrected_read = 16;
  s.bblog_shift = 3;
  s.bblog_size = 0x0102;
  s.bblog_offset = 0x10203040;
  md_super_format (&s, out);
  ck_assert_uint_eq (rd32 (out + O_CNT_CORRECTED_READ), 16);
  ck_assert_uint_eq (out[O_DEVFLAGS], 0x01);
  ck_assert_uint_eq (out[O_BBLOG_SHIFT], 3);
  ck_assert_uint_eq (out[O_BBLOG_SIZE], 0x02);
  ck_assert_uint_eq (out[O_BBLOG_SIZE + 1], 0x01);
  ck_assert_uint_eq (rd32 (out + O_BBLOG_OFFSET), 0x10203040);
  ck_assert_uint_eq (rd32 (out + O_LOGICAL_BLOCK_SIZE), 4096);
  ck_assert_uint_eq (rd32 (out + O_CSUM), calc_sb_1_csum (out));
  ck_assert_int_eq (parse (out, &t, &why), 1);
  ck_assert_int_eq (t.bblog_offset, 0x10203040);
  for (int i = 0; i < SB; i++)
    if ((i < O_CNT_CORRECTED_READ || i >= O_CNT_CORRECTED_READ + 4) &&
        i != O_BBLOG_SHIFT &&
        (i < O_BBLOG_SIZE || i >= O_BBLOG_OFFSET + 4) &&
        (i < O_CSUM || i >= O_CSUM + 4))
      ck_assert_msg (out[i] == sb[i], "byte %d changed", i);

  /* A superblock without them (logical_block_size 0: as kernels up to
   * 6.18 require) gives zeroes back.
   */
  hand_built (sb, 4);
  ck_assert_int_eq (parse (sb, &s, &why), 1);
  ck_assert_uint_eq (s.logical_block_size, 0);
  ck_assert_uint_eq (s.bblog_size, 0);
  md_super_format (&s, out);
  ck_assert_mem_eq (out, sb, SB);

  /* logical_block_size: a power of two from 512 to 65536, or refused. */
  {
    static const uint32_t good[] = { 512, 4096, 65536 };
    static const uint32_t bad[] = { 1, 256, 3000, 4097, 131072, 0x80000000 };

    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
      hand_built (sb, 4);
      le32 (sb + O_LOGICAL_BLOCK_SIZE, good[k]);
      seal (sb);
      ck_assert_msg (parse (sb, &s, &why) == 1, "%u refused: %s", good[k],
                     why);
      ck_assert_uint_eq (s.logical_block_size, good[k]);
    }
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
      hand_built (sb, 4);
      le32 (sb + O_LOGICAL_BLOCK_SIZE, bad[k]);
      seal (sb);
      ck_refused (sb, "logical_block_size");
    }
  }

  /* Entries in the log (0x8) are read: with a log md reads, the
   * superblock parses; without a log, or with one md does not read
   * (over 8 sectors, a shift), it is bad.
   */
  ck_assert_uint_eq (MD_FEATURE_BAD_BLOCKS, 0x8);
  hand_built (sb, 4);
  le32 (sb + O_FEATURES, rd32 (sb + O_FEATURES) | MD_FEATURE_BAD_BLOCKS);
  seal (sb);
  ck_refused (sb, "bad-block log");
  le16 (sb + O_BBLOG_SIZE, 8);
  le32 (sb + O_BBLOG_OFFSET, 16);
  seal (sb);
  ck_assert_int_eq (parse (sb, &s, &why), 1);
  ck_assert_uint_eq (s.feature_map & MD_FEATURE_BAD_BLOCKS,
                     MD_FEATURE_BAD_BLOCKS);
  le16 (sb + O_BBLOG_SIZE, 9);
  seal (sb);
  ck_refused (sb, "bad-block log");
  le16 (sb + O_BBLOG_SIZE, 8);
  sb[O_BBLOG_SHIFT] = 3;
  seal (sb);
  ck_refused (sb, "bad-block log");
}
END_TEST

static Suite *
metadata_suite (void)
{
  Suite *s = suite_create ("md_super");
  TCase *tc = tcase_create ("md v1.x");

  tcase_add_test (tc, test_checksum_matches_kernel);
  tcase_add_test (tc, test_checksum_vectors);
  tcase_add_test (tc, test_checksum_coverage);
  tcase_add_test (tc, test_parse_hand_built);
  tcase_add_test (tc, test_roles);
  tcase_add_test (tc, test_recovery_offset_needs_feature);
  tcase_add_test (tc, test_recovery_from_bitmap);
  tcase_add_test (tc, test_round_trip);
  tcase_add_test (tc, test_bitmap_kept_consistent);
  tcase_add_test (tc, test_bad_checksum);
  tcase_add_test (tc, test_no_magic);
  tcase_add_test (tc, test_unsupported_features);
  tcase_add_test (tc, test_levels);
  tcase_add_test (tc, test_layouts);
  tcase_add_test (tc, test_other_refusals);
  tcase_add_test (tc, test_unknown_features);
  tcase_add_test (tc, test_impossible_fields);
  tcase_add_test (tc, test_bitmap_placement);
  tcase_add_test (tc, test_read_write);
  tcase_add_test (tc, test_places);
  tcase_add_test (tc, test_two_places);
  tcase_add_test (tc, test_v10_bitmap_placement);
  tcase_add_test (tc, test_bblog_fields);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return check_run (metadata_suite (), false);
}
