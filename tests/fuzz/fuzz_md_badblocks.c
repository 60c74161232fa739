/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: md_badblocks_decode (plugin/md_badblocks.c), the
 * reader of a member's bad-block log, read from where the member's md
 * superblock points (a disk anyone may have written), and the set of
 * bad ranges it makes.
 *
 * The input:
 *
 *   0        bblog_size (sectors; values over 8 are md's refusal)
 *   1        bblog_shift
 *   2..9     the member's size in sectors (le64)
 *   10..15   unused
 *   16..     the log, bblog_size * 512 bytes, padded with 0xff (md's
 *            filler) where the input is shorter, in a heap buffer of
 *            exactly that size (a read past it is an ASan report)
 *   then     operations on the set, 17 bytes each: a kind (add, clear,
 *            ask), a first sector and a count (le64 each)
 *
 * Besides "no crash, no UB", checked (a failure aborts, which libFuzzer
 * saves as a crash):
 *   - a refusal always has a reason;
 *   - what is accepted is a set md could hold: sorted ranges that never
 *     touch, inside the member, taking no more entries than the log
 *     holds, covering exactly the sectors of the log's entries (up to
 *     the end marker), each entry's sectors answered as bad;
 *   - written back (md_badblocks_encode), it decodes to the same ranges,
 *     and writing that gives the same bytes;
 *   - after each operation the set is still such a set, an accepted add
 *     is answered as bad, an accepted clear as good, and a refused one
 *     changed nothing.
 * Seeds: tests/fuzz/corpus/md_badblocks/ (made by hand in md's format,
 * not by the plugin's encoder): mdadm's empty log of 8 sectors, logs md
 * writes after a few errors, adjacent entries of a range over 512
 * sectors, a full log of 512 entries without an end marker, a log of one
 * sector, one of each refusal, and logs followed by operations (one on
 * a full log: a split and a new range refused, a merge that fits).
 */

#include <config.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md_badblocks.h"

#include "../lib/le_store.h"

#define HEADER 16
#define OP_BYTES 17

static void
fail (const char *what)
{
  fprintf (stderr, "fuzz_md_badblocks: %s\n", what);
  abort ();
}

/* Field by field: the structs' padding is not theirs to compare. */
static bool
same_ranges (const struct md_bad_range *a, const struct md_bad_range *b,
             size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (a[i].sector != b[i].sector || a[i].sectors != b[i].sectors ||
        a[i].acknowledged != b[i].acknowledged)
      return false;
  return true;
}

static struct md_bad_range ranges[MD_BADBLOCKS_MAX_ENTRIES];
static struct md_bad_range again[MD_BADBLOCKS_MAX_ENTRIES];

/* The set's shape; returns its ranges' sectors in all. */
static uint64_t
check_set (struct md_badblocks *bb, uint64_t member, struct md_bad_range *r,
           size_t *np)
{
  size_t n = md_badblocks_list (bb, r, MD_BADBLOCKS_MAX_ENTRIES);
  uint64_t entries = 0, sectors = 0;

  if (n > MD_BADBLOCKS_MAX_ENTRIES || n != md_badblocks_count (bb))
    fail ("more ranges than a log holds");
  for (size_t i = 0; i < n; i++) {
    if (r[i].sectors == 0 || r[i].sector >= member ||
        r[i].sectors > member - r[i].sector)
      fail ("a range empty or past the member");
    if (i > 0 && r[i - 1].sector + r[i - 1].sectors >= r[i].sector)
      fail ("ranges out of order or touching");
    entries += (r[i].sectors + 511) / 512;
    sectors += r[i].sectors;
  }
  if (entries != md_badblocks_entries (bb) ||
      entries > md_badblocks_capacity (bb))
    fail ("entries miscounted or over the log's room");
  *np = n;
  return sectors;
}

static void
ops (struct md_badblocks *bb, uint64_t member, const uint8_t *p, size_t len)
{
  for (; len >= OP_BYTES; p += OP_BYTES, len -= OP_BYTES) {
    uint64_t s = le_load64 (p + 1), n = le_load64 (p + 9), before, after;
    size_t nb, na;
    const char *why = NULL;
    int r;

    before = check_set (bb, member, ranges, &nb);
    switch (p[0] % 3) {
    case 0:
      r = md_badblocks_add (bb, s, n, &why);
      if (r == 0 && md_badblocks_check (bb, s, n, NULL) == 0)
        fail ("an added range is not bad");
      break;
    case 1:
      r = md_badblocks_clear (bb, s, n, &why);
      if (r == 0 && md_badblocks_check (bb, s, n, NULL) != 0)
        fail ("a cleared range is still bad");
      break;
    default:
      r = 0;
      md_badblocks_check (bb, s, n, NULL);
    }
    if (r == -1 && (why == NULL || why[0] == '\0'))
      fail ("an operation refused without a reason");
    after = check_set (bb, member, again, &na);
    if (r == -1 && (before != after || nb != na ||
                    !same_ranges (ranges, again, nb)))
      fail ("a refused operation changed the set");
  }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  uint8_t head[HEADER] = { 0 };
  uint16_t sectors;
  uint8_t shift;
  uint64_t member, logged = 0;
  size_t bytes, n, n2;
  uint8_t *log, *out, *out2;
  struct md_badblocks *bb, *back;
  const char *why = NULL;

  memcpy (head, data, size < HEADER ? size : HEADER);
  sectors = head[0];
  shift = head[1];
  member = le_load64 (head + 2);
  data += size < HEADER ? size : HEADER;
  size -= size < HEADER ? size : HEADER;
  bytes = (size_t) sectors * 512;
  log = malloc (bytes ? bytes : 1);
  if (!log)
    abort ();
  memset (log, 0xff, bytes);
  memcpy (log, data, size < bytes ? size : bytes);

  bb = md_badblocks_decode (log, sectors, shift, member, &why);
  if (bb == NULL) {
    if (why == NULL || why[0] == '\0')
      fail ("refused without a reason");
    free (log);
    return 0;
  }

  /* Every entry up to the end marker is in the set. */
  for (size_t i = 0; i < bytes / 8; i++) {
    uint64_t e = le_load64 (log + 8 * i), len = e & 0x3ff;
    struct md_bad_range f;

    if (e == UINT64_MAX)
      break;
    if (md_badblocks_check (bb, e >> 10, len, &f) != 1 ||
        f.sector > e >> 10 || !f.acknowledged)
      fail ("an entry of the log is not in the set");
    logged += len;
  }
  if (check_set (bb, member, ranges, &n) != logged)
    fail ("the set covers other sectors than the log's entries");

  out = malloc (bytes ? bytes : 1);
  out2 = malloc (bytes ? bytes : 1);
  if (!out || !out2)
    abort ();
  md_badblocks_encode (bb, out, NULL);
  back = md_badblocks_decode (out, sectors, shift, member, &why);
  if (back == NULL)
    fail ("its own log refused");
  check_set (back, member, again, &n2);
  if (n != n2 || !same_ranges (ranges, again, n))
    fail ("its own log reads back other ranges");
  md_badblocks_encode (back, out2, NULL);
  if (memcmp (out, out2, bytes))
    fail ("encoding is not idempotent");

  if (size > bytes)
    ops (bb, member, data + bytes, size - bytes);

  md_badblocks_free (back);
  md_badblocks_free (bb);
  free (out);
  free (out2);
  free (log);
  return 0;
}
