/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: plugin/md_bitmap_super.c reads and writes the superblock
 * of md's write-intent bitmap as Linux md does, and sizes the bitmap's
 * area as mdadm does.
 *
 * The evidence is built independently of the code under test:
 *
 *   - The bitmap's superblock (md-bitmap.h's bitmap_super_t) is written
 *     byte by byte here, at its offsets (the enum below), never through
 *     md_bitmap_super_format; every field md_bitmap_super_parse returns
 *     is checked against what was put there, and parse -> format gives
 *     back its bytes (parse).
 *
 *   - Each value the kernel's md_bitmap_read_sb() refuses (magic,
 *     version, a chunk size too small or no power of two, daemon_sleep,
 *     write-behind, clustered nodes) is refused with a message naming it
 *     (refusals).
 *
 *   - The area's bits and bytes are mdadm's calc_bitmap_size(bms, 4096)
 *     for sizes worked out by hand (area).
 *
 * CK_RUN_CASE=name runs one.
 */

#include <config.h>

#include <stdint.h>
#include <string.h>

#include <check.h>

#include "check_run.h"
#include "le_store.h"

#include "md_bitmap.h"

static const uint8_t set_uuid[16] = {
  0x3e, 0x1f, 0x5a, 0x90, 0x07, 0xc2, 0x4b, 0x11,
  0x8d, 0x2e, 0xf0, 0x66, 0xa9, 0x13, 0x5c, 0xe4,
};

/* md-bitmap.h's bitmap_super_t, laid out by hand at its offsets. */
enum {
  B_MAGIC = 0, B_VERSION = 4, B_UUID = 8, B_EVENTS = 24, B_CLEARED = 32,
  B_SYNC_SIZE = 40, B_STATE = 48, B_CHUNK = 52, B_SLEEP = 56, B_BEHIND = 60,
  B_RESERVED = 64, B_NODES = 68,
};

static void
hand_built_bitmap (uint8_t *b)
{
  memset (b, 0, MD_BITMAP_SB_BYTES);
  le32 (b + B_MAGIC, 0x6d746962);
  le32 (b + B_VERSION, 4);
  memcpy (b + B_UUID, set_uuid, 16);
  le64 (b + B_EVENTS, 0x1122334455667788ULL);
  le64 (b + B_CLEARED, 0x1122334455667700ULL);
  le64 (b + B_SYNC_SIZE, 2097152);
  le32 (b + B_STATE, 0);
  le32 (b + B_CHUNK, 64 << 20);
  le32 (b + B_SLEEP, 5);
  le32 (b + B_RESERVED, 248);
}

START_TEST (test_bitmap_super_parse)
{
  uint8_t b[MD_BITMAP_SB_BYTES], out[MD_BITMAP_SB_BYTES];
  struct md_bitmap_super bs;
  const char *why = "not set";

  hand_built_bitmap (b);
  ck_assert_int_eq (md_bitmap_super_parse (b, &bs, &why), 0);
  ck_assert_uint_eq (bs.version, 4);
  ck_assert_mem_eq (bs.uuid, set_uuid, 16);
  ck_assert_uint_eq (bs.events, 0x1122334455667788ULL);
  ck_assert_uint_eq (bs.events_cleared, 0x1122334455667700ULL);
  ck_assert_uint_eq (bs.sync_size, 2097152);
  ck_assert_uint_eq (bs.chunksize, 64 << 20);
  ck_assert_uint_eq (bs.daemon_sleep, 5);
  ck_assert_uint_eq (bs.sectors_reserved, 248);

  /* Writing it back gives the same 256 bytes. */
  md_bitmap_super_format (&bs, out);
  ck_assert_mem_eq (out, b, MD_BITMAP_SB_BYTES);
}
END_TEST

START_TEST (test_bitmap_super_refusals)
{
  static const struct { int off, width; uint64_t value; const char *word; }
  bad[] = {
    { B_MAGIC, 4, 0x6d746963, "magic" },
    { B_VERSION, 4, 2, "version" },
    { B_VERSION, 4, 5, "version" },     /* clustered */
    { B_VERSION, 4, 6, "version" },     /* lockless */
    { B_CHUNK, 4, 256, "chunk" },
    { B_CHUNK, 4, 3 << 20, "chunk" },
    { B_SLEEP, 4, 0, "sleep" },
    { B_BEHIND, 4, 16384, "write-behind" },
    { B_NODES, 4, 2, "clustered" },
  };

  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint8_t b[MD_BITMAP_SB_BYTES];
    struct md_bitmap_super bs;
    const char *why = NULL;

    hand_built_bitmap (b);
    le32 (b + bad[i].off, bad[i].value);
    ck_assert_msg (md_bitmap_super_parse (b, &bs, &why) == -1,
                   "case %zu accepted", i);
    ck_assert_msg (why && strstr (why, bad[i].word),
                   "case %zu: message \"%s\" does not say \"%s\"", i,
                   why ? why : "(null)", bad[i].word);
  }
}
END_TEST

/* Area sizes as mdadm's calc_bitmap_size(bms, 4096) computes them: the
 * 256-byte superblock plus one bit per chunk, rounded up to 4 KiB.
 */
START_TEST (test_bitmap_area)
{
  ck_assert_uint_eq (md_bitmap_bits (1 << 20, 64 << 20), 1);
  ck_assert_uint_eq (md_bitmap_bits ((64 << 20) + 1, 64 << 20), 2);
  ck_assert_uint_eq (md_bitmap_bits (15 << 20, 64 << 10), 240);
  ck_assert_uint_eq (md_bitmap_area_bytes (1), 4096);
  ck_assert_uint_eq (md_bitmap_area_bytes ((4096 - 256) * 8), 4096);
  ck_assert_uint_eq (md_bitmap_area_bytes ((4096 - 256) * 8 + 1), 8192);
}
END_TEST

static Suite *
md_bitmap_super_suite (void)
{
  const struct check_case cases[] = {
    { "parse", test_bitmap_super_parse },
    { "refusals", test_bitmap_super_refusals },
    { "area", test_bitmap_area },
  };

  return check_suite ("md_bitmap_super", CHECK_CASES (cases), 0);
}

int
main (void)
{
  return check_run (md_bitmap_super_suite (), false);
}
