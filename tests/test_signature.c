/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: plugin/signature.c names the formats other tools leave on
 * a disk, and never takes random data for one of them.
 *
 * Each format is planted by hand at the place its own tools put it
 * (md(4) for the md superblock versions, the UEFI specification for GPT,
 * the MBR partition entries, ext4's superblock at 1024, ...), in images of
 * a disk's first and last bytes, exactly as signature_probe reads them.
 * Random images must never match: replacements in the randomized tests are
 * full of noise, and a false positive refuses a good disk.  The probe's
 * I/O (signature_probe) is covered by tests/test-md-foreign.sh on
 * real files with real mkfs.ext4, mkswap and sfdisk output.
 */

#include <config.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "check_run.h"

#include "signature.h"

#define SIZE (UINT64_C (64) << 20)     /* a 64 MiB disk */
#define HEAD SIGNATURE_HEAD
#define TAIL SIGNATURE_TAIL

static uint8_t head[HEAD], tail[TAIL];

/* signature_probe's I/O is not exercised here (see the description). */
int
member_io_run (struct member_io *ios, size_t n)
{
  abort ();
}

static void
blank (void)
{
  memset (head, 0, sizeof head);
  memset (tail, 0, sizeof tail);
}

static void
put32 (uint8_t *p, uint32_t v)
{
  p[0] = v; p[1] = v >> 8; p[2] = v >> 16; p[3] = v >> 24;
}

/* Byte `off` of the disk inside the tail image. */
static uint8_t *
at_tail (uint64_t off)
{
  ck_assert (off >= SIZE - TAIL && off < SIZE);
  return tail + (off - (SIZE - TAIL));
}

static const char *
find (void)
{
  return signature_find (head, HEAD, tail, SIZE - TAIL, TAIL, SIZE);
}

static void
expect (const char *word)
{
  const char *what = find ();

  ck_assert_msg (what != NULL, "expected %s, found nothing", word);
  ck_assert_msg (strstr (what, word) != NULL, "expected %s, found %s",
                 word, what);
}

START_TEST (test_blank)
{
  blank ();
  ck_assert_ptr_null (find ());
}
END_TEST

START_TEST (test_md_versions)
{
  uint64_t sectors = SIZE / 512;

  blank ();
  put32 (head + 4096, 0xa92b4efc);
  put32 (head + 4100, 1);
  expect ("v1.2");

  blank ();
  put32 (head, 0xa92b4efc);
  put32 (head + 4, 1);
  expect ("v1.1");

  /* md(4): v1.0 sits 8K from the end, rounded down to 4K. */
  blank ();
  put32 (at_tail (((sectors - 16) & ~UINT64_C (7)) * 512), 0xa92b4efc);
  put32 (at_tail (((sectors - 16) & ~UINT64_C (7)) * 512 + 4), 1);
  expect ("v1.0");

  /* v0.90: 64K from the end, rounded down to 64K. */
  blank ();
  put32 (at_tail (((sectors & ~UINT64_C (127)) - 128) * 512), 0xa92b4efc);
  put32 (at_tail (((sectors & ~UINT64_C (127)) - 128) * 512 + 4), 0);
  expect ("v0.90");

  /* v0.90 is in the writer's byte order: a big-endian host's. */
  blank ();
  {
    uint8_t *p = at_tail (((sectors & ~UINT64_C (127)) - 128) * 512);

    p[0] = 0xa9; p[1] = 0x2b; p[2] = 0x4e; p[3] = 0xfc;
  }
  expect ("v0.90");
}
END_TEST

START_TEST (test_firmware_raid)
{
  uint8_t *p;

  blank ();
  p = at_tail (SIZE - 512);
  p[0] = 0xde; p[1] = 0x11; p[2] = 0xde; p[3] = 0x11;
  expect ("DDF");

  blank ();
  memcpy (at_tail (SIZE - 1024), "Intel Raid ISM Cfg Sig. ", 24);
  expect ("IMSM");

  /* On a disk of 4 KiB sectors, mdadm puts IMSM's anchor two of them
   * before the end (super-intel.c: dsize - 2 * sector_size).
   */
  blank ();
  memcpy (at_tail (SIZE - 8192), "Intel Raid ISM Cfg Sig. ", 24);
  expect ("IMSM");
}
END_TEST

START_TEST (test_partitions)
{
  blank ();
  memcpy (head + 512, "EFI PART", 8);
  expect ("GPT");

  /* An MBR: boot signature and one used entry (type 0x83). */
  blank ();
  head[510] = 0x55;
  head[511] = 0xaa;
  head[446 + 4] = 0x83;
  expect ("MBR");

  /* The boot signature alone, or with impossible status bytes, is not
   * enough: 16 bits of magic would match noise once in 65536 disks.
   */
  head[446 + 4] = 0;
  ck_assert_ptr_null (find ());
  head[446 + 4] = 0x83;
  head[446 + 16] = 0x42;
  ck_assert_ptr_null (find ());
}
END_TEST

START_TEST (test_volumes_and_filesystems)
{
  blank ();
  memcpy (head + 512, "LABELONE", 8);
  memcpy (head + 512 + 24, "LVM2 001", 8);
  expect ("LVM2");

  blank ();
  memcpy (head, "LUKS\xba\xbe", 6);
  expect ("LUKS");

  blank ();
  memcpy (head, "XFSB", 4);
  expect ("XFS");

  blank ();
  head[1024 + 56] = 0x53;       /* s_magic 0xef53 */
  head[1024 + 57] = 0xef;
  head[1024 + 0] = 16;          /* s_inodes_count */
  head[1024 + 24] = 2;          /* 4K blocks */
  head[1024 + 76] = 1;          /* dynamic revision */
  expect ("ext");
  head[1024 + 24] = 200;        /* no such block size: noise */
  ck_assert_ptr_null (find ());

  blank ();
  memcpy (head + 65536 + 64, "_BHRfS_M", 8);
  expect ("btrfs");

  blank ();
  memcpy (head + 4086, "SWAPSPACE2", 10);
  expect ("swap");
}
END_TEST

/* A small disk: the images are shorter than the places some formats
 * use, and nothing may be read past them.
 */
START_TEST (test_small_disk)
{
  static uint8_t small[8192];

  memset (small, 0, sizeof small);
  ck_assert_ptr_null (signature_find (small, sizeof small, small, 0,
                                      sizeof small, sizeof small));
  memcpy (small + 512, "EFI PART", 8);
  ck_assert_ptr_nonnull (signature_find (small, sizeof small, small, 0,
                                         sizeof small, sizeof small));
}
END_TEST

START_TEST (test_noise)
{
  uint64_t x = 0x9e3779b97f4a7c15;

  for (int round = 0; round < 2000; round++) {
    for (size_t i = 0; i < HEAD; i += 8) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      memcpy (head + i, &x, 8);
    }
    for (size_t i = 0; i < TAIL; i += 8) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      memcpy (tail + i, &x, 8);
    }
    ck_assert_msg (find () == NULL, "noise round %d taken for %s", round,
                   find ());
  }
}
END_TEST

static Suite *
signature_suite (void)
{
  Suite *s = suite_create ("signature");
  TCase *tc = tcase_create ("formats");

  tcase_add_test (tc, test_blank);
  tcase_add_test (tc, test_md_versions);
  tcase_add_test (tc, test_firmware_raid);
  tcase_add_test (tc, test_partitions);
  tcase_add_test (tc, test_volumes_and_filesystems);
  tcase_add_test (tc, test_small_disk);
  tcase_add_test (tc, test_noise);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return check_run (signature_suite (), false);
}
