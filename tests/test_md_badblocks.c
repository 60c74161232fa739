/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: plugin/md_badblocks.c reads and writes a member's
 * bad-block log in md's format, keeps its bad ranges as md would, and
 * says where mdadm puts the log.
 *
 * The evidence is built independently of the code under test:
 *
 *   - Logs written byte by byte here (md's entry: the first sector << 10
 *     | the length, little-endian 64 bits; all ones ends the list), the
 *     bytes worked out outside this program (decode_hand_built), never
 *     through md_badblocks_encode; what md could not have written is
 *     refused, naming why (decode_refused).
 *
 *   - The encoder's bytes compared with bytes written out here:
 *     entries, splits of ranges over 512 sectors, 0xff to the log's end
 *     and nothing past it (encode_hand_built).
 *
 *   - Random sets (random: seeded, printed, RAID_TEST_SEED=N replays)
 *     against a model of one flag per sector: every add, clear and
 *     question, "log full" exactly when the model's runs need more
 *     entries than the log holds, the encoding against the model's runs
 *     written out here, and decoding logs that split the runs at random.
 *
 *   - Acknowledgement by generation, the log-full and no-log refusals,
 *     sector arithmetic at the edges of 64 bits, mdadm's places for the
 *     log (the mdadm-made members of tests/fuzz/corpus/md_super: v1.1
 *     and v1.2 at +16, v1.0 at -8), and threads adding while others ask.
 *
 * CK_RUN_CASE=name runs one.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <check.h>

#include "check_run.h"
#include "le_store.h"
#include "random_seed.h"

#include "md_badblocks.h"

#define LOG_BYTES (MD_BADBLOCKS_MAX_LOG_SECTORS * 512)

/* The test's own packing of one entry, for logs too long to write out
 * by hand: md's first sector << 10 | length.
 */
static void
entry (uint8_t *log, size_t i, uint64_t sector, uint64_t len)
{
  le64 (log + 8 * i, sector << 10 | len);
}

static struct md_badblocks *
decode (const uint8_t *log, uint16_t sectors, uint8_t shift, uint64_t member,
        const char **why)
{
  *why = NULL;
  return md_badblocks_decode (log, sectors, shift, member, why);
}

/* The set's ranges are sorted, never touch, and take the entries it
 * says (each ceil(length / 512)), no more than the log holds.
 */
static void
check_invariants (struct md_badblocks *bb)
{
  static struct md_bad_range r[MD_BADBLOCKS_MAX_ENTRIES];
  size_t n = md_badblocks_list (bb, r, MD_BADBLOCKS_MAX_ENTRIES);
  uint64_t entries = 0;

  ck_assert_uint_le (n, MD_BADBLOCKS_MAX_ENTRIES);
  ck_assert_uint_eq (n, md_badblocks_count (bb));
  for (size_t i = 0; i < n; i++) {
    ck_assert_uint_gt (r[i].sectors, 0);
    if (i > 0)
      ck_assert_msg (r[i - 1].sector + r[i - 1].sectors < r[i].sector,
                     "ranges %zu and %zu touch or overlap", i - 1, i);
    entries += (r[i].sectors + 511) / 512;
  }
  ck_assert_uint_eq (entries, md_badblocks_entries (bb));
  ck_assert_uint_le (entries, md_badblocks_capacity (bb));
}

/* Entries written out byte by byte: [2048, +8); [4096, +512) and
 * [4608, +3), adjacent, so one range of 515; one high in the 54-bit
 * field; the end; then junk md never reads.
 */
START_TEST (test_decode_hand_built)
{
  static const uint8_t entries[] = {
    0x08, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x02, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x03, 0x00, 0x48, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xff, 0xad, 0x26, 0x9e, 0x15, 0x8d, 0x04, 0x00,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  };
  uint8_t log[LOG_BYTES];
  struct md_bad_range r[8];
  struct md_badblocks *bb;
  const char *why;

  memset (log, 0xff, sizeof log);
  memcpy (log, entries, sizeof entries);
  bb = decode (log, 8, 0, UINT64_C (1) << 41, &why);
  ck_assert_msg (bb != NULL, "refused: %s", why);
  ck_assert_uint_eq (md_badblocks_list (bb, r, 8), 3);
  ck_assert_uint_eq (r[0].sector, 2048);
  ck_assert_uint_eq (r[0].sectors, 8);
  ck_assert_uint_eq (r[1].sector, 4096);
  ck_assert_uint_eq (r[1].sectors, 515);
  ck_assert_uint_eq (r[2].sector, UINT64_C (0x123456789ab));
  ck_assert_uint_eq (r[2].sectors, 511);
  for (int i = 0; i < 3; i++)
    ck_assert (r[i].acknowledged);
  ck_assert_uint_eq (md_badblocks_capacity (bb), 512);
  ck_assert_uint_eq (md_badblocks_entries (bb), 4);    /* 515: two */
  check_invariants (bb);
  md_badblocks_free (bb);

  /* A log of one sector ends there, whatever follows it. */
  bb = decode (log, 1, 0, UINT64_C (1) << 41, &why);
  ck_assert_ptr_nonnull (bb);
  ck_assert_uint_eq (md_badblocks_capacity (bb), 64);
  ck_assert_uint_eq (md_badblocks_count (bb), 3);
  md_badblocks_free (bb);

  /* All ones: empty. */
  memset (log, 0xff, sizeof log);
  bb = decode (log, 8, 0, 1000, &why);
  ck_assert_ptr_nonnull (bb);
  ck_assert_uint_eq (md_badblocks_count (bb), 0);
  ck_assert_int_eq (md_badblocks_check (bb, 0, UINT64_MAX, NULL), 0);
  md_badblocks_free (bb);

  /* No log at all (bblog_size 0): nothing read. */
  bb = decode (log, 0, 0, 1000, &why);
  ck_assert_ptr_nonnull (bb);
  ck_assert_uint_eq (md_badblocks_capacity (bb), 0);
  md_badblocks_free (bb);
}
END_TEST

/* A full log (512 entries in 8 sectors) has no end marker; a range
 * ending exactly at the member's end is inside it.
 */
START_TEST (test_decode_full)
{
  uint8_t log[LOG_BYTES];
  struct md_badblocks *bb;
  const char *why;

  for (size_t i = 0; i < 512; i++)
    entry (log, i, 10 * i, 1 + i % 9);
  bb = decode (log, 8, 0, 10 * 511 + 1 + 511 % 9, &why);
  ck_assert_msg (bb != NULL, "refused: %s", why);
  ck_assert_uint_eq (md_badblocks_count (bb), 512);
  ck_assert_uint_eq (md_badblocks_entries (bb), 512);
  check_invariants (bb);
  md_badblocks_free (bb);
}
END_TEST

static void
refused (const uint8_t *log, uint16_t sectors, uint8_t shift, uint64_t member,
         const char *word)
{
  const char *why;
  struct md_badblocks *bb;

  errno = 0;
  bb = decode (log, sectors, shift, member, &why);
  ck_assert_msg (bb == NULL, "accepted, expected a refusal naming \"%s\"",
                 word);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_ptr_nonnull (why);
  ck_assert_msg (strstr (why, word) != NULL, "\"%s\" does not name \"%s\"",
                 why, word);
}

START_TEST (test_decode_refused)
{
  uint8_t log[LOG_BYTES];

  /* Length 0: md's entries are 1 to 512 long. */
  memset (log, 0xff, sizeof log);
  entry (log, 0, 100, 0);
  refused (log, 8, 0, 10000, "length 0");
  /* 513 and the field's 1023: longer than md writes. */
  entry (log, 0, 100, 513);
  refused (log, 8, 0, 10000, "longer");
  entry (log, 0, 100, 1023);
  refused (log, 8, 0, 10000, "longer");
  /* Out of order, and overlapping; touching is accepted. */
  entry (log, 0, 200, 8);
  entry (log, 1, 100, 8);
  refused (log, 8, 0, 10000, "entry 1 starts before");
  entry (log, 1, 207, 8);
  refused (log, 8, 0, 10000, "overlapping");
  entry (log, 1, 208, 8);
  {
    const char *why;
    struct md_badblocks *bb = decode (log, 8, 0, 10000, &why);

    ck_assert_msg (bb != NULL, "refused: %s", why);
    ck_assert_uint_eq (md_badblocks_count (bb), 1);
    md_badblocks_free (bb);
  }
  /* Past the member's end, by a sector; and a start beyond it. */
  memset (log, 0xff, sizeof log);
  entry (log, 0, 9992, 9);
  refused (log, 8, 0, 10000, "past the member's end");
  entry (log, 0, 10000, 1);
  refused (log, 8, 0, 10000, "past the member's end");
  entry (log, 0, (UINT64_C (1) << 54) - 1, 512);
  refused (log, 8, 0, UINT64_C (1) << 54, "past the member's end");
  /* A shift md does not use, a log longer than md reads. */
  memset (log, 0xff, sizeof log);
  refused (log, 8, 1, 10000, "shift");
  refused (log, 8, 255, 10000, "shift");
  refused (log, 9, 0, 10000, "8 sectors");
  refused (log, UINT16_MAX, 0, 10000, "8 sectors");
}
END_TEST

/* md_badblocks_encode writes what super_1_sync writes: the entries, then
 * 0xff to the end of the log, and not a byte past it.
 */
START_TEST (test_encode_hand_built)
{
  static const uint8_t expect[] = {
    0x01, 0x90, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,     /* [100, +1) */
    0x00, 0xa2, 0x0f, 0x00, 0x00, 0x00, 0x00, 0x00,     /* [1000, +512) */
    0x00, 0xa2, 0x17, 0x00, 0x00, 0x00, 0x00, 0x00,     /* [1512, +512) */
    0x4c, 0xa0, 0x1f, 0x00, 0x00, 0x00, 0x00, 0x00,     /* [2024, +76) */
  };
  uint8_t log[512 + 64];
  struct md_badblocks *bb = md_badblocks_new (1, 100000);
  const char *why;
  uint64_t gen = 0;

  ck_assert_ptr_nonnull (bb);
  ck_assert_int_eq (md_badblocks_add (bb, 1000, 1100, &why), 0);
  ck_assert_int_eq (md_badblocks_add (bb, 100, 1, &why), 0);
  memset (log, 0x5a, sizeof log);
  ck_assert_uint_eq (md_badblocks_encode (bb, log, &gen), 4);
  ck_assert_uint_gt (gen, 0);
  ck_assert_mem_eq (log, expect, sizeof expect);
  for (size_t i = sizeof expect; i < 512; i++)
    ck_assert_msg (log[i] == 0xff, "byte %zu is %#x, not 0xff", i, log[i]);
  for (size_t i = 512; i < sizeof log; i++)
    ck_assert_msg (log[i] == 0x5a, "byte %zu past the log written", i);

  /* Empty: all 0xff, no entries. */
  ck_assert_int_eq (md_badblocks_clear (bb, 0, UINT64_MAX, &why), 0);
  ck_assert_uint_eq (md_badblocks_encode (bb, log, NULL), 0);
  for (size_t i = 0; i < 512; i++)
    ck_assert_uint_eq (log[i], 0xff);
  md_badblocks_free (bb);

  /* A log of no sectors writes nothing. */
  bb = md_badblocks_new (0, 100000);
  memset (log, 0x5a, sizeof log);
  ck_assert_uint_eq (md_badblocks_encode (bb, log, NULL), 0);
  ck_assert_uint_eq (log[0], 0x5a);
  md_badblocks_free (bb);
}
END_TEST

/* A log of one sector holds 64 entries: the 65th range is "log full"
 * and changes nothing; an add that merges ranges (fewer entries) still
 * fits; a clear that would split one into two more than fit is refused.
 * A member without a log refuses every add.
 */
START_TEST (test_log_full)
{
  struct md_badblocks *bb = md_badblocks_new (1, 1 << 20);
  struct md_bad_range r;
  const char *why = NULL;

  for (uint64_t i = 0; i < 64; i++)
    ck_assert_int_eq (md_badblocks_add (bb, 100 * i, 8, &why), 0);
  ck_assert_uint_eq (md_badblocks_entries (bb), 64);
  errno = 0;
  ck_assert_int_eq (md_badblocks_add (bb, 100 * 64, 8, &why), -1);
  ck_assert_int_eq (errno, ENOSPC);
  ck_assert_ptr_nonnull (strstr (why, "full"));
  ck_assert_int_eq (md_badblocks_check (bb, 100 * 64, 8, NULL), 0);
  /* Into an existing range, next to one, or joining two: fits. */
  ck_assert_int_eq (md_badblocks_add (bb, 102, 3, &why), 0);
  ck_assert_int_eq (md_badblocks_add (bb, 108, 4, &why), 0);
  ck_assert_int_eq (md_badblocks_add (bb, 200, 100, &why), 0);
  ck_assert_uint_eq (md_badblocks_count (bb), 63);
  ck_assert_int_eq (md_badblocks_check (bb, 250, 1, &r), -1);
  ck_assert_uint_eq (r.sector, 200);
  ck_assert_uint_eq (r.sectors, 108);
  /* One entry free: a range of 513 needs two. */
  ck_assert_int_eq (md_badblocks_add (bb, 10000, 513, &why), -1);
  ck_assert_int_eq (md_badblocks_add (bb, 10000, 512, &why), 0);
  check_invariants (bb);
  /* Full again: splitting [200, 308) would take one more entry. */
  ck_assert_int_eq (md_badblocks_clear (bb, 250, 1, &why), -1);
  ck_assert_int_eq (errno, ENOSPC);
  ck_assert_int_eq (md_badblocks_check (bb, 250, 1, NULL), -1);
  /* Its end or its start can go. */
  ck_assert_int_eq (md_badblocks_clear (bb, 300, 8, &why), 0);
  ck_assert_int_eq (md_badblocks_clear (bb, 150, 51, &why), 0);
  ck_assert_int_eq (md_badblocks_check (bb, 200, 1, NULL), 0);
  ck_assert_int_eq (md_badblocks_check (bb, 200, 2, &r), -1);
  ck_assert_uint_eq (r.sector, 201);
  ck_assert_uint_eq (r.sectors, 99);
  check_invariants (bb);
  md_badblocks_free (bb);

  bb = md_badblocks_new (0, 1 << 20);
  ck_assert_int_eq (md_badblocks_add (bb, 0, 1, &why), -1);
  ck_assert_int_eq (errno, ENOSPC);
  ck_assert_ptr_nonnull (strstr (why, "no bad-block log"));
  md_badblocks_free (bb);
}
END_TEST

/* Ranges at the edges of 64 bits and of the member: refused or clipped,
 * never wrapped.
 */
START_TEST (test_edges)
{
  const uint64_t member = UINT64_C (1) << 54;
  struct md_badblocks *bb = md_badblocks_new (8, member);
  struct md_bad_range r;
  const char *why;

  ck_assert_ptr_null (md_badblocks_new (9, 100));
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_ptr_null (md_badblocks_new (8, member + 1));

  ck_assert_int_eq (md_badblocks_add (bb, 5, 0, &why), -1);
  ck_assert_int_eq (errno, EINVAL);
  ck_assert_int_eq (md_badblocks_add (bb, member, 1, &why), -1);
  ck_assert_ptr_nonnull (strstr (why, "past the member's end"));
  ck_assert_int_eq (md_badblocks_add (bb, member - 1, 2, &why), -1);
  ck_assert_int_eq (md_badblocks_add (bb, UINT64_MAX, UINT64_MAX, &why), -1);
  ck_assert_int_eq (md_badblocks_add (bb, 1, UINT64_MAX, &why), -1);
  ck_assert_int_eq (md_badblocks_add (bb, member - 1, 1, &why), 0);
  ck_assert_int_eq (md_badblocks_check (bb, UINT64_MAX - 2, UINT64_MAX, NULL), 0);
  ck_assert_int_eq (md_badblocks_check (bb, 0, UINT64_MAX, &r), -1);
  ck_assert_uint_eq (r.sector, member - 1);
  ck_assert_int_eq (md_badblocks_check (bb, member - 1, UINT64_MAX, NULL), -1);
  ck_assert_int_eq (md_badblocks_check (bb, member - 2, 1, NULL), 0);
  ck_assert_int_eq (md_badblocks_check (bb, member - 1, 0, NULL), 0);

  /* The highest sector in md's field, written and read back. */
  {
    uint8_t log[LOG_BYTES];
    struct md_badblocks *back;

    ck_assert_uint_eq (md_badblocks_encode (bb, log, NULL), 1);
    ck_assert_uint_eq (le_load64 (log), (member - 1) << 10 | 1);
    back = decode (log, 8, 0, member, &why);
    ck_assert_msg (back != NULL, "refused: %s", why);
    ck_assert_int_eq (md_badblocks_check (back, member - 1, 1, &r), 1);
    md_badblocks_free (back);
  }

  /* Clears past the end clip; an empty one changes nothing. */
  ck_assert_int_eq (md_badblocks_clear (bb, member, 10, &why), 0);
  ck_assert_int_eq (md_badblocks_clear (bb, member - 1, 0, &why), 0);
  ck_assert_uint_eq (md_badblocks_count (bb), 1);
  ck_assert_int_eq (md_badblocks_clear (bb, 1, UINT64_MAX, &why), 0);
  ck_assert_uint_eq (md_badblocks_count (bb), 0);
  md_badblocks_free (bb);
}
END_TEST

/* New ranges are unacknowledged until a log written with them is
 * acknowledged; a range merged with a newer one waits for that one.
 */
START_TEST (test_acknowledge)
{
  struct md_badblocks *bb = md_badblocks_new (8, 1 << 20);
  struct md_bad_range r;
  uint8_t log[LOG_BYTES];
  uint64_t gen1, gen2;
  const char *why;

  ck_assert_int_eq (md_badblocks_add (bb, 100, 8, &why), 0);
  ck_assert_int_eq (md_badblocks_check (bb, 100, 1, &r), -1);
  ck_assert (!r.acknowledged);
  md_badblocks_encode (bb, log, &gen1);
  ck_assert_int_eq (md_badblocks_add (bb, 500, 8, &why), 0);
  md_badblocks_acknowledge (bb, gen1);
  ck_assert_int_eq (md_badblocks_check (bb, 100, 1, &r), 1);
  ck_assert (r.acknowledged);
  ck_assert_int_eq (md_badblocks_check (bb, 500, 1, NULL), -1);
  /* A question over both: one unacknowledged is enough; the first. */
  ck_assert_int_eq (md_badblocks_check (bb, 0, 1000, &r), -1);
  ck_assert_uint_eq (r.sector, 100);
  ck_assert (r.acknowledged);
  /* Adding inside an acknowledged range changes nothing. */
  ck_assert_int_eq (md_badblocks_add (bb, 101, 2, &why), 0);
  ck_assert_int_eq (md_badblocks_check (bb, 100, 8, NULL), 1);
  /* Extending it makes the whole range wait. */
  ck_assert_int_eq (md_badblocks_add (bb, 108, 1, &why), 0);
  ck_assert_int_eq (md_badblocks_check (bb, 100, 1, NULL), -1);
  md_badblocks_encode (bb, log, &gen2);
  ck_assert_uint_gt (gen2, gen1);
  md_badblocks_acknowledge (bb, gen2);
  ck_assert_int_eq (md_badblocks_check (bb, 0, 1000, NULL), 1);
  /* A clear keeps the pieces' state. */
  ck_assert_int_eq (md_badblocks_clear (bb, 103, 2, &why), 0);
  ck_assert_int_eq (md_badblocks_check (bb, 0, 1000, NULL), 1);
  ck_assert_uint_eq (md_badblocks_count (bb), 3);
  md_badblocks_free (bb);
}
END_TEST

/* The model: one flag per sector of a small member. */
#define MODEL_MAX 12000
static bool model[MODEL_MAX];

/* Runs of the model within [0, member), as ranges; returns how many. */
static size_t
model_runs (uint64_t member, struct md_bad_range *out, size_t max)
{
  size_t n = 0;

  for (uint64_t s = 0; s < member; s++) {
    if (!model[s])
      continue;
    uint64_t e = s;
    while (e < member && model[e])
      e++;
    if (n < max)
      out[n] = (struct md_bad_range) { .sector = s, .sectors = e - s };
    n++;
    s = e;
  }
  return n;
}

static uint64_t
model_entries (uint64_t member)
{
  static struct md_bad_range r[MODEL_MAX];
  size_t n = model_runs (member, r, MODEL_MAX);
  uint64_t e = 0;

  for (size_t i = 0; i < n; i++)
    e += (r[i].sectors + 511) / 512;
  return e;
}

/* The set against the model: every run, and the questions. */
static void
compare (struct md_badblocks *bb, uint64_t member, const char *what)
{
  static struct md_bad_range want[MODEL_MAX], got[MD_BADBLOCKS_MAX_ENTRIES];
  size_t n = model_runs (member, want, MODEL_MAX);

  ck_assert_msg (md_badblocks_list (bb, got, MD_BADBLOCKS_MAX_ENTRIES) == n,
                 "%s: %zu ranges, the model has %zu", what,
                 md_badblocks_count (bb), n);
  for (size_t i = 0; i < n; i++)
    ck_assert_msg (got[i].sector == want[i].sector &&
                   got[i].sectors == want[i].sectors,
                   "%s: range %zu is [%" PRIu64 ", +%" PRIu64 "), the model's "
                   "[%" PRIu64 ", +%" PRIu64 ")", what, i, got[i].sector,
                   got[i].sectors, want[i].sector, want[i].sectors);
  check_invariants (bb);
}

/* The model's runs as md's log, each run cut into pieces of 1 to 512
 * sectors: greedily (512 at a time: what the encoder must write), or at
 * random (adjacent entries, as md may leave them) while they fit.
 */
static size_t
model_log (uint8_t *log, uint16_t sectors, uint64_t member, uint64_t *x)
{
  static struct md_bad_range r[MODEL_MAX];
  size_t n = model_runs (member, r, MODEL_MAX), k = 0;
  size_t room = (size_t) sectors * 64 - model_entries (member);

  memset (log, 0xff, (size_t) sectors * 512);
  for (size_t i = 0; i < n; i++)
    for (uint64_t s = r[i].sector, end = s + r[i].sectors; s < end; k++) {
      uint64_t len = end - s > 512 ? 512 : end - s;

      if (x && room > 0 && len > 1 && splitmix64 (x) % 3 == 0) {
        len = 1 + splitmix64 (x) % (len - 1);
        room--;
      }
      entry (log, k, s, len);
      s += len;
    }
  return k;
}

START_TEST (test_random)
{
  uint64_t seed = random_seed ("test_md_badblocks");
  uint64_t x = seed;

  for (int round = 0; round < 30; round++) {
    uint64_t member = 1000 + splitmix64 (&x) % (MODEL_MAX - 1000);
    uint16_t sectors = 1 + splitmix64 (&x) % MD_BADBLOCKS_MAX_LOG_SECTORS;
    uint64_t cap = (uint64_t) sectors * 64, acked_gen = 0;
    struct md_badblocks *bb = md_badblocks_new (sectors, member);
    bool all_acked = true;
    char what[160];

    memset (model, 0, sizeof model);
    for (int op = 0; op < 1000; op++) {
      uint64_t s = splitmix64 (&x) % (member + 16);
      uint64_t len = splitmix64 (&x) % 8 == 0 ? splitmix64 (&x) % 1600 : splitmix64 (&x) % 24;
      int kind = splitmix64 (&x) % 10;
      const char *why = NULL;

      snprintf (what, sizeof what, "seed %" PRIu64 " round %d op %d: "
                "member %" PRIu64 ", log %u sectors, %s [%" PRIu64 ", +%"
                PRIu64 ")", seed, round, op, member, sectors,
                kind < 5 ? "add" : kind < 8 ? "clear" : "check", s, len);
      if (kind < 5) {                   /* add */
        bool fits = len > 0 && s < member && len <= member - s;
        bool before[MODEL_MAX];
        int r;

        memcpy (before, model, sizeof before);
        if (fits) {
          for (uint64_t i = s; i < s + len; i++)
            model[i] = true;
          if (model_entries (member) > cap) {
            memcpy (model, before, sizeof before);
            fits = false;
          }
        }
        r = md_badblocks_add (bb, s, len, &why);
        ck_assert_msg (r == (fits ? 0 : -1), "%s: returned %d (%s)", what,
                       r, why ? why : "");
        if (r == 0 && memcmp (before, model, sizeof before))
          all_acked = false;
      }
      else if (kind < 8) {              /* clear */
        bool before[MODEL_MAX], fits;
        int r;

        memcpy (before, model, sizeof before);
        for (uint64_t i = s; i < member && i - s < len; i++)
          model[i] = false;
        fits = model_entries (member) <= cap;
        if (!fits)
          memcpy (model, before, sizeof before);
        r = md_badblocks_clear (bb, s, len, &why);
        ck_assert_msg (r == (fits ? 0 : -1), "%s: returned %d (%s)", what,
                       r, why ? why : "");
      }
      else {                            /* check */
        struct md_bad_range f;
        uint64_t first = UINT64_MAX;
        int r = md_badblocks_check (bb, s, len, &f);

        for (uint64_t i = s; i < member && i - s < len; i++)
          if (model[i]) {
            first = i;
            break;
          }
        if (first == UINT64_MAX)
          ck_assert_msg (r == 0, "%s: says bad", what);
        else {
          uint64_t a = first, b = first;

          while (a > 0 && model[a - 1])
            a--;
          while (b < member && model[b])
            b++;
          ck_assert_msg (r != 0, "%s: misses sector %" PRIu64, what, first);
          ck_assert_msg (f.sector == a && f.sectors == b - a,
                         "%s: first range [%" PRIu64 ", +%" PRIu64 "), the "
                         "model's [%" PRIu64 ", +%" PRIu64 ")", what,
                         f.sector, f.sectors, a, b - a);
          if (all_acked)
            ck_assert_msg (r == 1, "%s: unacknowledged after the last "
                           "acknowledgement", what);
        }
      }
      if (op % 97 == 0)
        compare (bb, member, what);
      if (op % 211 == 0) {
        /* The log as written, acknowledged: everything up to here. */
        uint8_t log[LOG_BYTES], want[LOG_BYTES];
        uint64_t gen;

        md_badblocks_encode (bb, log, &gen);
        ck_assert_uint_ge (gen, acked_gen);
        acked_gen = gen;
        md_badblocks_acknowledge (bb, gen);
        all_acked = true;
        model_log (want, sectors, member, NULL);
        ck_assert_msg (memcmp (log, want, (size_t) sectors * 512) == 0,
                       "%s: encoded log differs from the model's", what);
      }
    }
    compare (bb, member, what);

    /* Round trips: the encoding, and logs that split runs at random. */
    for (int t = 0; t < 4; t++) {
      uint8_t log[LOG_BYTES];
      const char *why;
      struct md_badblocks *back;

      if (t == 0)
        md_badblocks_encode (bb, log, NULL);
      else
        model_log (log, sectors, member, &x);
      back = decode (log, sectors, 0, member, &why);
      ck_assert_msg (back != NULL, "%s: round trip %d refused: %s", what, t,
                     why);
      compare (back, member, what);
      md_badblocks_free (back);
    }
    md_badblocks_free (bb);
  }
}
END_TEST

/* Where mdadm --create puts the log: the places of the mdadm-made
 * members in tests/fuzz/corpus/md_super, then mdadm's rules at their
 * edges.  Sectors throughout.
 */
START_TEST (test_create_place)
{
  struct md_badblocks_place p;

  /* v1.2, 4 KiB bitmap (mdadm-r5a and bitmap-a5: +16, 8 sectors). */
  p = md_badblocks_create_place (2, 8, 2048, 14336, 8);
  ck_assert_int_eq (p.offset, 16);
  ck_assert_uint_eq (p.sectors, 8);
  /* No bitmap: mdadm keeps 4 KiB of room for one on small members. */
  p = md_badblocks_create_place (2, 8, 2048, 8192, 0);
  ck_assert_int_eq (p.offset, 16);
  /* v1.1 (versions-m11r6): the superblock at 0. */
  p = md_badblocks_create_place (1, 0, 2048, 14336, 8);
  ck_assert_int_eq (p.offset, 16);
  /* v1.0 (versions-m10r6-d0): right before the superblock. */
  p = md_badblocks_create_place (0, 16368, 0, 15360, 16);
  ck_assert_int_eq (p.offset, -8);
  ck_assert_uint_eq (p.sectors, 8);

  /* mdadm's default room by size: none under 64 KiB, 64 KiB above 8
   * GiB, 128 KiB above 200 GiB (sizes in sectors).
   */
  p = md_badblocks_create_place (2, 8, 2048, 127, 0);
  ck_assert_int_eq (p.offset, 8);
  p = md_badblocks_create_place (2, 8, 2048, 16 * 1024 * 1024 + 9, 0);
  ck_assert_int_eq (p.offset, 8 + 128);
  p = md_badblocks_create_place (2, 8, 2048, 16 * 1024 * 1024 + 8, 0);
  ck_assert_int_eq (p.offset, 16);
  p = md_badblocks_create_place (2, 8, 2048, UINT64_C (400) * 1024 * 1024 + 128, 0);
  ck_assert_int_eq (p.offset, 8 + 256);
  /* A bitmap of 256 sectors (plugin's 128 KiB), 1 MiB data offset. */
  p = md_badblocks_create_place (2, 8, 2048, 1 << 20, 256);
  ck_assert_int_eq (p.offset, 264);
  /* The data right after bitmap and log: still after the bitmap; one
   * sector closer: before the data.
   */
  p = md_badblocks_create_place (2, 8, 8 + 8 + 8 + 8, 1 << 20, 8);
  ck_assert_int_eq (p.offset, 16);
  p = md_badblocks_create_place (2, 8, 8 + 8 + 8 + 7, 1 << 20, 8);
  ck_assert_int_eq (p.offset, 15);
  /* Data too close for bitmap + log: the 8 sectors before the data. */
  p = md_badblocks_create_place (2, 8, 8 + 100, 1 << 20, 256);
  ck_assert_int_eq (p.offset, 100 - 8);
  p = md_badblocks_create_place (1, 0, 16, 1 << 20, 8);
  ck_assert_int_eq (p.offset, 8);
  /* Closer still: none. */
  p = md_badblocks_create_place (1, 0, 15, 1 << 20, 8);
  ck_assert (md_badblocks_place_none (&p));
  p = md_badblocks_create_place (2, 8, 4, 1 << 20, 8);
  ck_assert (md_badblocks_place_none (&p));
  /* v1.0 with less than 8 sectors after the data: none. */
  p = md_badblocks_create_place (0, 16368, 0, 16361, 0);
  ck_assert (md_badblocks_place_none (&p));
  p = md_badblocks_create_place (0, 16368, 0, 16360, 0);
  ck_assert_int_eq (p.offset, -8);
  p = md_badblocks_create_place (0, 16368, 0, UINT64_MAX, 0);
  ck_assert (md_badblocks_place_none (&p));
  p = md_badblocks_create_place (3, 8, 2048, 8192, 0);
  ck_assert (md_badblocks_place_none (&p));
}
END_TEST

static void
place_refused (int32_t offset, uint16_t sectors,
               const struct md_badblocks_layout *l, const char *word)
{
  struct md_badblocks_place p = { offset, sectors };
  const char *why = md_badblocks_place_check (&p, l);

  ck_assert_msg (why != NULL, "log at %+" PRId32 " (%u) accepted", offset,
                 sectors);
  ck_assert_msg (strstr (why, word) != NULL, "\"%s\" does not name \"%s\"",
                 why, word);
}

START_TEST (test_place_check)
{
  /* v1.2: superblock at 8, bitmap [16, 24), data from 2048. */
  const struct md_badblocks_layout v12 = {
    .member_sectors = 16384, .super = 8, .data_offset = 2048,
    .data_sectors = 14336, .bitmap = 16, .bitmap_sectors = 8,
  };
  /* v1.0: data [0, 16352), bitmap [16352, 16360), superblock 16368. */
  const struct md_badblocks_layout v10 = {
    .member_sectors = 16384, .super = 16368, .data_offset = 0,
    .data_sectors = 16352, .bitmap = 16352, .bitmap_sectors = 8,
  };
  struct md_badblocks_place p = { 16, 8 }, none = { 0, 8 };

  ck_assert_ptr_null (md_badblocks_place_check (&p, &v12));
  ck_assert_uint_eq (md_badblocks_location (8, &p), 24);
  p.offset = -8;
  ck_assert_ptr_null (md_badblocks_place_check (&p, &v10));
  ck_assert_uint_eq (md_badblocks_location (16368, &p), 16360);
  ck_assert_ptr_null (md_badblocks_place_check (&none, &v12));
  ck_assert_uint_eq (md_badblocks_location (8, &none), UINT64_MAX);
  none = (struct md_badblocks_place) { 16, 0 };
  ck_assert_ptr_null (md_badblocks_place_check (&none, &v12));

  place_refused (-9, 8, &v12, "before the member's start");
  place_refused (INT32_MIN, 8, &v12, "before the member's start");
  place_refused (16384 - 8 - 7, 8, &v12, "past the member's end");
  place_refused (INT32_MAX, 8, &v12, "past the member's end");
  place_refused (7, 8, &v12, "over the superblock");
  place_refused (-7, 8, &v12, "over the superblock");
  place_refused (9, 8, &v12, "over the write-intent bitmap");
  place_refused (2040 - 8 + 1, 8, &v12, "over the data");
  place_refused (16, 9, &v12, "8 sectors");
  place_refused (-16, 8, &v10, "over the write-intent bitmap");
  place_refused (-24, 8, &v10, "over the data");
  place_refused (9, 8, &v10, "past the member's end");
  place_refused (2, 8, &v10, "over the superblock");
}
END_TEST

/* Threads adding and clearing while others ask: the set stays whole
 * (ThreadSanitizer, where the suite runs under it, sees the rest).
 */
static struct md_badblocks *shared;

static void *
writer (void *arg)
{
  uint64_t x = (uintptr_t) arg;
  const char *why;

  for (int i = 0; i < 20000; i++) {
    uint64_t s = splitmix64 (&x) % 100000, len = 1 + splitmix64 (&x) % 64;

    if (splitmix64 (&x) % 2)
      md_badblocks_add (shared, s, len, &why);
    else
      md_badblocks_clear (shared, s, len, &why);
  }
  return NULL;
}

static void *
reader (void *arg)
{
  uint64_t x = (uintptr_t) arg;
  struct md_bad_range r;
  uint8_t log[LOG_BYTES];

  for (int i = 0; i < 20000; i++) {
    uint64_t s = splitmix64 (&x) % 100000;

    if (md_badblocks_check (shared, s, 8, &r) != 0)
      ck_assert (r.sector < s + 8 && r.sector + r.sectors > s);
    if (i % 1000 == 0) {
      uint64_t gen;

      md_badblocks_encode (shared, log, &gen);
      md_badblocks_acknowledge (shared, gen);
    }
  }
  return NULL;
}

START_TEST (test_threads)
{
  pthread_t t[4];

  shared = md_badblocks_new (8, 100064);
  for (uintptr_t i = 0; i < 4; i++)
    pthread_create (&t[i], NULL, i < 2 ? writer : reader, (void *) (i + 1));
  for (int i = 0; i < 4; i++)
    pthread_join (t[i], NULL);
  check_invariants (shared);
  md_badblocks_free (shared);
}
END_TEST

static Suite *
badblocks_suite (void)
{
  const struct check_case cases[] = {
    { "decode_hand_built", test_decode_hand_built },
    { "decode_full", test_decode_full },
    { "decode_refused", test_decode_refused },
    { "encode_hand_built", test_encode_hand_built },
    { "log_full", test_log_full },
    { "edges", test_edges },
    { "acknowledge", test_acknowledge },
    { "random", test_random },
    { "create_place", test_create_place },
    { "place_check", test_place_check },
    { "threads", test_threads },
  };

  return check_suite ("md_badblocks", CHECK_CASES (cases), 120);
}

int
main (void)
{
  return check_run (badblocks_suite (), false);
}
