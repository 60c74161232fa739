/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: md_super_parse (plugin/md_super.c), the parser of the
 * md version-1 superblock (v1.0 at a member's end, v1.1 at its start,
 * v1.2 at 4 KiB) read from every member, from disks anyone may have
 * written.
 *
 * The input is one superblock block: cut or zero-padded to MD_SB_BYTES
 * and copied into a heap buffer of exactly that size, so that a read past
 * the block is an ASan report.  Besides "no crash, no UB", the plugin
 * relies on two properties, checked here (a failure is an abort, which
 * libFuzzer saves as a crash):
 *   - what md_super_parse accepts, md_super_format writes back in a form
 *     md_super_parse accepts again with the same fields (a superblock
 *     the plugin writes must assemble again, and mdadm reads the fields
 *     we keep from sb->raw unchanged);
 *   - formatting is idempotent: writing the re-read superblock gives the
 *     same bytes;
 *   - md_super_read, looking in every place on a member whose size puts
 *     the place of the record's version where its super_offset says (a
 *     sparse member: that block, zeroes elsewhere), finds it there and
 *     parses the same fields.
 * A mutated superblock almost never has a right checksum, and then the
 * parser stops at the checksum.  So each input is parsed twice: as it is,
 * and with sb_csum recomputed (by this file's own reading of md_p.h, not
 * the plugin's), which lets the fuzzer reach every check after it.
 * Seeds: tests/fuzz/corpus/md_super/ (superblocks mdadm wrote in the
 * guest tests, of the three versions; see tests/fuzz/extract-seeds.py).
 */

#include <config.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md_super.h"

/* md_super.c's md_super_read does its I/O through member_io_run: a
 * sparse member that holds one block at fake_at and zeroes elsewhere.
 * Nothing here writes.
 */
static const uint8_t *fake_block;
static uint64_t fake_at;

int
member_io_run (struct member_io *ios, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    if (ios[i].op != MEMBER_READ)
      abort ();
    if (ios[i].offset == fake_at && ios[i].len == MD_SB_BYTES)
      memcpy (ios[i].buf, fake_block, MD_SB_BYTES);
    else
      memset (ios[i].buf, 0, ios[i].len);
    ios[i].err = 0;
  }
  return 0;
}

/* The interpreted fields (everything but the raw copy) must agree. */
static void
check_same (const struct md_super *a, const struct md_super *b)
{
  if (memcmp (a, b, offsetof (struct md_super, raw)) != 0) {
    fprintf (stderr, "fuzz_md_super: fields differ after format + parse\n");
    abort ();
  }
}

/* The record sb came from, found by md_super_read on a member sized so
 * that sb's version puts it at sb->super_offset.
 */
static void
check_found (const uint8_t *buf, const struct md_super *sb)
{
  struct member m = { .name = (char *) "fuzz" };
  struct md_super *got = malloc (sizeof *got);
  const char *why = NULL;

  if (!got)
    abort ();
  /* v1.0: sectors - 16 rounded down to 8 is super_offset for a member
   * 8 KiB longer; v1.1 and v1.2 are at fixed places.
   */
  m.size = sb->minor == 0 ? sb->super_offset + 8192 : 64 * 1024;
  fake_block = buf;
  fake_at = sb->super_offset;
  if (md_super_location (sb->minor, m.size) != sb->super_offset) {
    fprintf (stderr, "fuzz_md_super: v1.%d's place on %llu bytes is not "
             "super_offset %llu\n", sb->minor, (unsigned long long) m.size,
             (unsigned long long) sb->super_offset);
    abort ();
  }
  if (md_super_read (&m, MD_MINOR_ANY, got, &why) != 1) {
    fprintf (stderr, "fuzz_md_super: md_super_read did not find it: %s\n",
             why ? why : "(none)");
    abort ();
  }
  check_same (sb, got);
  free (got);
}

static uint32_t
le32 (const uint8_t *p)
{
  return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t) p[3] << 24;
}

/* md's sb_csum (md.c calc_sb_1_csum): the little-endian 32-bit words of
 * the first 256 + 2 * max_dev bytes, sb_csum (offset 216) as zero, a
 * trailing 16-bit half-word added as it is, the 64-bit sum folded once.
 * Returns 0 if max_dev does not fit the block (nothing to repair).
 */
static int
repair_checksum (uint8_t *buf)
{
  uint32_t max_dev = le32 (buf + 220);
  uint64_t sum = 0;
  size_t size, i;

  if (max_dev > (MD_SB_BYTES - 256) / 2)
    return 0;
  size = 256 + 2 * (size_t) max_dev;
  for (i = 0; i + 4 <= size; i += 4)
    if (i != 216)
      sum += le32 (buf + i);
  if (i < size)
    sum += buf[i] | buf[i + 1] << 8;
  sum = (sum & 0xffffffff) + (sum >> 32);
  buf[216] = sum;
  buf[217] = sum >> 8;
  buf[218] = sum >> 16;
  buf[219] = sum >> 24;
  return 1;
}

static void one (const uint8_t *buf);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  uint8_t *buf = calloc (1, MD_SB_BYTES);

  if (!buf)
    abort ();
  memcpy (buf, data, size < MD_SB_BYTES ? size : MD_SB_BYTES);
  one (buf);
  if (repair_checksum (buf))
    one (buf);
  free (buf);
  return 0;
}

/* Parse one block (MD_SB_BYTES on the heap) and check the properties. */
static void
one (const uint8_t *buf)
{
  uint8_t *out = malloc (MD_SB_BYTES), *out2 = malloc (MD_SB_BYTES);
  struct md_super *sb = malloc (sizeof *sb), *sb2 = malloc (sizeof *sb2);
  const char *why = NULL;
  int r;

  if (!out || !out2 || !sb || !sb2)
    abort ();
  r = md_super_parse (buf, sb, &why);
  if (r == -1 && (why == NULL || why[0] == '\0')) {
    fprintf (stderr, "fuzz_md_super: refused without a reason\n");
    abort ();
  }
  if (r == 1) {
    md_super_format (sb, out);
    why = NULL;
    if (md_super_parse (out, sb2, &why) != 1) {
      fprintf (stderr, "fuzz_md_super: its own superblock refused: %s\n",
               why ? why : "(no magic)");
      abort ();
    }
    check_same (sb, sb2);
    check_found (buf, sb);
    md_super_format (sb2, out2);
    if (memcmp (out, out2, MD_SB_BYTES) != 0) {
      fprintf (stderr, "fuzz_md_super: formatting is not idempotent\n");
      abort ();
    }
  }
  free (out);
  free (out2);
  free (sb);
  free (sb2);
}
