/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: md_bitmap_super_parse (plugin/md_bitmap_super.c), the
 * parser of md's write-intent bitmap superblock, read from where a
 * member's md superblock points.
 *
 * The input is cut or zero-padded to MD_BITMAP_SB_BYTES in a heap buffer
 * of exactly that size (a read past it is an ASan report).  Checked
 * besides: a refusal always has a reason, and what is accepted is written
 * back by md_bitmap_super_format in a form that parses to the same
 * fields (the plugin rewrites the bitmap superblock on every event).
 * Seeds: tests/fuzz/corpus/md_bitmap_super/ (from mdadm's bitmaps in the
 * guest tests; see tests/fuzz/extract-seeds.py).
 */

#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md_bitmap.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  uint8_t *buf = calloc (1, MD_BITMAP_SB_BYTES);
  uint8_t *out = malloc (MD_BITMAP_SB_BYTES);
  struct md_bitmap_super bs, bs2;
  const char *why = NULL;

  if (!buf || !out)
    abort ();
  memcpy (buf, data, size < MD_BITMAP_SB_BYTES ? size : MD_BITMAP_SB_BYTES);

  if (md_bitmap_super_parse (buf, &bs, &why) == -1) {
    if (why == NULL || why[0] == '\0') {
      fprintf (stderr, "fuzz_md_bitmap_super: refused without a reason\n");
      abort ();
    }
  }
  else {
    md_bitmap_super_format (&bs, out);
    if (md_bitmap_super_parse (out, &bs2, &why) != 0 ||
        memcmp (&bs, &bs2, sizeof bs) != 0) {
      fprintf (stderr, "fuzz_md_bitmap_super: its own superblock does not "
               "parse back the same: %s\n", why ? why : "fields differ");
      abort ();
    }
  }
  free (buf);
  free (out);
  return 0;
}
