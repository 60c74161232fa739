/* SPDX-License-Identifier: BSD-3-Clause */
/* md's write-intent bitmap on disk: its superblock (md-bitmap.h's
 * bitmap_super_t, internal bitmaps) and how many bits and bytes it takes.
 * Pure functions of bytes, apart from md_bitmap.c's state and I/O, so
 * that they can be tested and fuzzed alone.
 *
 * The area starts with a 256-byte little-endian superblock, then one bit
 * per `chunksize` bytes of each member's data, little-endian bit order,
 * the whole rounded up to 4 KiB:
 *
 *   offset  bitmap field            offset  bitmap field
 *   0       magic 0x6d746962        48      state (2: stale)
 *   4       version (3, 4)          52      chunksize (bytes)
 *   8       uuid[16] (set UUID)     56      daemon_sleep (seconds)
 *   24      events                  60      write_behind
 *   32      events_cleared          64      sectors_reserved
 *   40      sync_size (sectors)     68      nodes (clustered only)
 *
 * A field the kernel's md_bitmap_read_sb() would refuse is refused, with
 * a message naming it.
 */

#include <config.h>

#include <stdint.h>
#include <string.h>

#include "le.h"
#include "md_bitmap.h"

#define BITMAP_MAGIC 0x6d746962

int
md_bitmap_super_parse (const uint8_t *buf, struct md_bitmap_super *bs,
                       const char **why)
{
  memset (bs, 0, sizeof *bs);
  bs->version = get32 (buf + 4);
  memcpy (bs->uuid, buf + 8, 16);
  bs->events = get64 (buf + 24);
  bs->events_cleared = get64 (buf + 32);
  bs->sync_size = get64 (buf + 40);
  bs->state = get32 (buf + 48);
  bs->chunksize = get32 (buf + 52);
  bs->daemon_sleep = get32 (buf + 56);
  bs->write_behind = get32 (buf + 60);
  bs->sectors_reserved = get32 (buf + 64);
  bs->nodes = get32 (buf + 68);

  *why = NULL;
  if (get32 (buf) != BITMAP_MAGIC)
    *why = "no bitmap superblock where the md superblock says (bad magic)";
  /* Version 3 is host-endian, which is version 4 on the little-endian
   * machines this runs on; 5 is clustered md, 6 the lockless bitmap.
   */
  else if (bs->version != 3 && bs->version != MD_BITMAP_VERSION)
    *why = "bitmap of an unsupported version (only 3 and 4)";
  else if (bs->chunksize < 512 || (bs->chunksize & (bs->chunksize - 1)))
    *why = "bitmap chunk size is not a power of two >= 512";
  else if (bs->daemon_sleep < 1 || bs->daemon_sleep > 24 * 3600)
    *why = "bitmap daemon sleep period out of range";
  else if (bs->write_behind > 16383)
    *why = "bitmap write-behind limit out of range";
  else if (bs->nodes != 0)
    *why = "clustered bitmaps are not supported";
  return *why ? -1 : 0;
}

void
md_bitmap_super_format (const struct md_bitmap_super *bs, uint8_t *buf)
{
  memset (buf, 0, MD_BITMAP_SB_BYTES);
  put32 (buf, BITMAP_MAGIC);
  put32 (buf + 4, bs->version);
  memcpy (buf + 8, bs->uuid, 16);
  put64 (buf + 24, bs->events);
  put64 (buf + 32, bs->events_cleared);
  put64 (buf + 40, bs->sync_size);
  put32 (buf + 48, bs->state);
  put32 (buf + 52, bs->chunksize);
  put32 (buf + 56, bs->daemon_sleep);
  put32 (buf + 60, bs->write_behind);
  put32 (buf + 64, bs->sectors_reserved);
  put32 (buf + 68, bs->nodes);
}

uint64_t
md_bitmap_bits (uint64_t size, uint64_t chunksize)
{
  return (size + chunksize - 1) / chunksize;
}

uint64_t
md_bitmap_area_bytes (uint64_t bits)
{
  return (MD_BITMAP_SB_BYTES + (bits + 7) / 8 + 4095) / 4096 * 4096;
}
