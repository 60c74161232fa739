/* SPDX-License-Identifier: BSD-3-Clause */
/* le_store: little-endian stores (and a load) for the tests that lay
 * md's on-disk records out by hand (test_md_super.c,
 * test_md_bitmap_super.c, test_md_badblocks.c, fuzz_md_badblocks.c).
 * The tests' own, never plugin/le.h: a test's evidence shares no code
 * with what it checks.
 */

#ifndef TESTS_LE_STORE_H
#define TESTS_LE_STORE_H

#include <stdint.h>

static inline void
le16 (uint8_t *p, uint16_t v)
{
  p[0] = v & 0xff;
  p[1] = v >> 8;
}

static inline void
le32 (uint8_t *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = v >> (8 * i);
}

static inline void
le64 (uint8_t *p, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    p[i] = v >> (8 * i);
}

static inline uint64_t
le_load64 (const uint8_t *p)
{
  uint64_t v = 0;

  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

#endif /* TESTS_LE_STORE_H */
