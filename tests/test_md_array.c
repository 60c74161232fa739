/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: md_array.c keeps the md superblocks true, against
 * in-memory members (member_mem.c): create writes one superblock per
 * member (v1.2 at 4 KiB; v1.1 at 0 and v1.0 at each member's end, with
 * their bitmaps, on members of different sizes); the array goes active before a write and clean after a flush
 * with md's event counting (clean right after active takes the count
 * back down); a failure is recorded, and a replacement takes the lowest
 * free dev_number, so thousands of replacements keep the table small;
 * assembly puts members in role order, takes a member one event behind
 * and sets aside one two behind (stale).
 *
 * The oracle reads the superblocks from the members' bytes at
 * md_p.h's offsets (events, resync_offset, dev_number, max_dev,
 * dev_roles, feature_map, recovery_offset), never through md_super.c,
 * at the places md's rule (written out here) gives each version.
 * CK_RUN_CASE=name runs one.
 */

#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "check_run.h"

#include "array_config.h"
#include "geometry.h"
#include "md_array.h"
#include "md_super.h"
#include "member.h"
#include "member_mem.h"
#include "member_table.h"

#define N 4                     /* members (RAID-5) */
#define SB 4096                 /* v1.2: the superblock's offset */
#define CHUNK (64 * 1024)
#define DATA_OFFSET (1024 * 1024)
#define ROWS 16
#define MEMBER_BYTES (DATA_OFFSET + ROWS * CHUNK)

/* The last error, to check what assembly said. */
static char last_error[512];

void
nbdkit_error (const char *fs, ...)
{
  va_list args;

  va_start (args, fs);
  vsnprintf (last_error, sizeof last_error, fs, args);
  va_end (args);
}

/* The oracle: fields of member m's superblock. */
static uint64_t
le (const uint8_t *p, int bytes)
{
  uint64_t v = 0;

  for (int i = bytes - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static const uint8_t *
sb_of (struct member *m)
{
  return mem_member_data (m) + SB;
}

static uint64_t sb_events (struct member *m) { return le (sb_of (m) + 200, 8); }
static uint64_t sb_resync (struct member *m) { return le (sb_of (m) + 208, 8); }
static uint32_t sb_dev_number (struct member *m) { return le (sb_of (m) + 160, 4); }
static uint32_t sb_max_dev (struct member *m) { return le (sb_of (m) + 220, 4); }
static uint32_t sb_features (struct member *m) { return le (sb_of (m) + 8, 4); }
static uint64_t sb_recovery (struct member *m) { return le (sb_of (m) + 152, 8); }

static uint16_t
sb_role (struct member *m, uint32_t d)
{
  return le (sb_of (m) + 256 + 2 * d, 2);
}

struct rig {
  struct members ms;
  struct geometry g;
  struct array_config cfg;
  struct md_array *md;
};

static struct member *
new_member (int i)
{
  char name[16];

  snprintf (name, sizeof name, "mem%d", i);
  return mem_member_new (name, MEMBER_BYTES, 1);
}

/* A new array (create=true, no bitmap), its superblocks written. */
static void
rig_create (struct rig *r)
{
  struct member *m[N];
  const char *why = NULL;

  memset (r, 0, sizeof *r);
  members_init (&r->ms);
  for (int i = 0; i < N; i++)
    m[i] = new_member (i);
  members_arrange (&r->ms, m, N);
  members_set_level (&r->ms, 5);
  ck_assert_msg (geometry_init (&r->g, 5, LAYOUT_LEFT_SYMMETRIC, N, CHUNK,
                                DATA_OFFSET, MEMBER_BYTES, &why) == 0,
                 "geometry: %s", why);
  r->cfg = (struct array_config) {
    .metadata = METADATA_MD, .create = true, .no_bitmap = true, .level = 5,
    .layout = LAYOUT_LEFT_SYMMETRIC, .chunk = CHUNK,
    .data_offset = DATA_OFFSET, .ndisks = N,
  };
  ck_assert_int_eq (md_array_create (&r->ms, &r->g, &r->cfg, &r->md), 0);
  ck_assert_int_eq (md_array_after_fork (r->md), 0);
}

static void
rig_free (struct rig *r)
{
  md_array_close (r->md);
  members_destroy (&r->ms);
}

/* Every working member says events and resync_offset. */
static void
check_all (struct rig *r, uint64_t events, bool clean, const char *what)
{
  for (int i = 0; i < r->ms.n; i++) {
    struct member *m = members_at (&r->ms, i);

    if (member_failed (m))
      continue;
    ck_assert_msg (sb_events (m) == events, "%s: member %d has events %llu, "
                   "not %llu", what, i, (unsigned long long) sb_events (m),
                   (unsigned long long) events);
    ck_assert_msg ((sb_resync (m) == UINT64_MAX) == clean, "%s: member %d "
                   "is %s", what, i, clean ? "active" : "clean");
  }
}

/* create, then md's clean/active cycle: the count goes up to mark the
 * array active and back down when it is clean again right after (md's
 * trick, so that the bitmap one ahead is not rewritten each time).
 */
START_TEST (test_clean_active)
{
  struct rig r;
  uint64_t e;

  rig_create (&r);
  for (int i = 0; i < N; i++) {
    struct member *m = members_at (&r.ms, i);

    ck_assert_uint_eq (sb_dev_number (m), i);
    ck_assert_uint_eq (sb_max_dev (m), N);
    for (int d = 0; d < N; d++)
      ck_assert_uint_eq (sb_role (m, d), d);
  }
  e = sb_events (members_at (&r.ms, 0));
  check_all (&r, e, false, "created: active until its resync");
  ck_assert (md_array_needs_resync (r.md));
  md_array_flushed (r.md);
  check_all (&r, e, false, "a flush before the resync changes nothing");

  md_array_resynced (r.md);
  check_all (&r, e + 1, true, "resynced: clean");
  for (int k = 0; k < 3; k++) {
    md_array_write_begin (r.md);
    check_all (&r, e + 2, false, "a write: active");
    md_array_write_begin (r.md);
    md_array_write_end (r.md);
    check_all (&r, e + 2, false, "a second write: nothing written");
    md_array_flushed (r.md);
    check_all (&r, e + 2, false, "a flush during a write: still active");
    md_array_write_end (r.md);
    md_array_flushed (r.md);
    check_all (&r, e + 1, true, "flushed: clean, the count back down");
  }
  /* A change of state counts up from the highest count ever written. */
  member_fail (members_at (&r.ms, 3), EIO);
  md_array_states_changed (r.md);
  check_all (&r, e + 3, true, "a member failed");
  for (int i = 0; i < 3; i++)
    ck_assert_uint_eq (sb_role (members_at (&r.ms, i), 3), 0xfffe);
  rig_free (&r);
}
END_TEST

/* A member that fails while a write runs, or while a flush runs beside a
 * write, is recorded faulty in the others' superblocks before that write
 * or flush is acknowledged (md_array_write_end, md_array_flushed): a crash
 * right after the reply must not assemble it as in sync, or the resync
 * would rebuild parity from its old data and lose the write.  The old code
 * waited for the next write to begin, or for a flush with no write in
 * flight.
 */
static void
check_faulty (struct rig *r, int failed, const char *what)
{
  for (int i = 0; i < N; i++)
    if (i != failed)
      ck_assert_msg (sb_role (members_at (&r->ms, i), failed) == 0xfffe,
                     "%s: member %d's superblock has member %d as %#x, not "
                     "faulty", what, i, failed,
                     (unsigned) sb_role (members_at (&r->ms, i), failed));
}

START_TEST (test_failure_recorded_before_ack)
{
  struct rig r;

  rig_create (&r);
  md_array_resynced (r.md);
  md_array_write_begin (r.md);
  member_fail (members_at (&r.ms, 3), EIO);
  md_array_write_end (r.md);
  check_faulty (&r, 3, "a write during which member 3 failed, ended");
  rig_free (&r);

  rig_create (&r);
  md_array_resynced (r.md);
  md_array_write_begin (r.md);
  member_fail (members_at (&r.ms, 2), EIO);
  md_array_flushed (r.md);
  check_faulty (&r, 2, "a flush during which member 2 failed, a write in "
                "flight");
  md_array_write_end (r.md);
  rig_free (&r);
}
END_TEST

/* A new connection's identity read, sent before a superblock write and
 * answered after it, shows the superblock from before the write: that is
 * the member, not an older copy of it.  (The soak found it, seed
 * 796263561: member_nbd.c read the old superblock on a worker's new
 * connection while update() wrote the next one, and verify, judging by
 * what had been written by the time the answer came, failed the member as
 * "behind".)  A read sent after the write that shows the old superblock
 * is an older copy, and still refused; so is one from two updates back.
 */
START_TEST (test_identity_read_during_write)
{
  struct rig r;
  struct member *m;
  struct member_identity *id;
  uint8_t *before, *two_back;
  uint64_t begun, e;
  char why[256];

  rig_create (&r);
  md_array_resynced (r.md);
  m = members_at (&r.ms, 1);
  id = member_identity (m);
  ck_assert (id != NULL && id->begin != NULL);
  ck_assert_uint_eq (id->offset, SB);
  e = sb_events (m);
  two_back = malloc (id->len);
  before = malloc (id->len);
  ck_assert (two_back && before);
  memcpy (two_back, mem_member_data (m) + SB, id->len);
  md_array_states_changed (r.md);               /* e + 1 */
  memcpy (before, mem_member_data (m) + SB, id->len);
  ck_assert_uint_eq (sb_events (m), e + 1);

  begun = id->begin (id);                       /* the read is sent */
  md_array_write_begin (r.md);   /* e + 2 */
  ck_assert_uint_eq (sb_events (m), e + 2);
  ck_assert_msg (id->verify (id, begun, before, why, sizeof why) == NULL,
                 "a read sent before the write, answered after it, showing "
                 "the superblock from before: refused");
  ck_assert_msg (id->verify (id, begun, mem_member_data (m) + SB, why,
                             sizeof why) == NULL,
                 "the same read showing the new superblock: refused");

  begun = id->begin (id);                       /* sent after the write */
  ck_assert_msg (id->verify (id, begun, before, why, sizeof why) != NULL,
                 "a read sent after the write showing the old superblock "
                 "(an older copy of the disk): accepted");
  ck_assert_msg (id->verify (id, begun, two_back, why, sizeof why) != NULL,
                 "a superblock two updates back: accepted");
  md_array_write_end (r.md);
  free (before);
  free (two_back);
  rig_free (&r);
}
END_TEST

/* Replace the member of role i (failed) by a new one, as jobs.c does. */
static struct member *
replace (struct rig *r, int i, int serial)
{
  struct member *m = new_member (100 + serial);

  members_replace (&r->ms, i, m);
  md_array_states_changed (r->md);
  return m;
}

/* A replacement takes the lowest free dev_number: its predecessor's once
 * an update has recorded it faulty.  A member that failed by an I/O error
 * and is replaced before any update recorded it takes two updates (one
 * to record it, one to install its successor), so that it is then two
 * events behind: stale.  Thousands of cycles keep max_dev at N.
 */
START_TEST (test_dev_number_reuse)
{
  struct rig r;
  struct member *m, *old;

  rig_create (&r);
  md_array_resynced (r.md);

  member_fail (members_at (&r.ms, 1), EIO);
  md_array_states_changed (r.md);         /* recorded faulty */
  m = replace (&r, 1, 0);
  ck_assert_uint_eq (sb_dev_number (m), 1);
  ck_assert_uint_eq (sb_max_dev (m), N);
  ck_assert (sb_features (m) & 0x2);      /* rebuilding, from row 0 */
  ck_assert_uint_eq (sb_recovery (m), 0);
  for (int i = 0; i < N; i++)
    ck_assert_uint_eq (sb_role (members_at (&r.ms, i), 1), 1);

  /* Failed and replaced at once: two updates. */
  old = members_at (&r.ms, 2);
  member_fail (old, EIO);
  {
    uint64_t before = sb_events (members_at (&r.ms, 0));

    m = replace (&r, 2, 1);
    ck_assert_uint_eq (sb_dev_number (m), 2);
    ck_assert_uint_eq (sb_events (m), before + 2);
    ck_assert_uint_eq (sb_events (old) + 2, sb_events (m));
  }

  for (int k = 0; k < 3000; k++) {
    int i = k % N;

    member_fail (members_at (&r.ms, i), EIO);
    if (k % 2)
      md_array_states_changed (r.md);
    m = replace (&r, i, k + 2);
    ck_assert_msg (sb_dev_number (m) < N && sb_max_dev (m) == N,
                   "cycle %d: dev_number %u, max_dev %u", k,
                   sb_dev_number (m), sb_max_dev (m));
    members_reclaim (&r.ms);            /* closes the old ones */
    members_reclaim (&r.ms);
  }
  /* Every role's slot names it, on every member. */
  for (int i = 0; i < N; i++)
    for (int d = 0; d < N; d++)
      ck_assert_uint_eq (sb_role (members_at (&r.ms, i),
                                  sb_dev_number (members_at (&r.ms, d))), d);
  rig_free (&r);
}
END_TEST

/* Assemble fresh members holding what rig's members hold, in the order
 * given (indices into the old table); returns what md_array_assemble did.
 */
static int
reassemble (struct rig *r, const int *order, struct rig *out)
{
  struct member *m[N];
  uint64_t member_bytes = 0;

  memset (out, 0, sizeof *out);
  members_init (&out->ms);
  for (int i = 0; i < N; i++) {
    m[i] = new_member (order[i]);
    memcpy (mem_member_data (m[i]), mem_member_data (members_at (&r->ms,
                                                                 order[i])),
            MEMBER_BYTES);
  }
  members_arrange (&out->ms, m, N);
  out->cfg = (struct array_config) { .metadata = METADATA_MD, .ndisks = N };
  for (int i = 0; i < N; i++)
    out->cfg.disks[i] = m[i]->name;
  return md_array_assemble (&out->ms, &out->cfg, &member_bytes, &out->md);
}

/* r's members reassembled in `order`: member `stale` is said to be
 * stale, and kept in its role, failed, to be re-added (not replaced by a
 * "missing" one); it is the only member failed.
 */
static void
assemble_stale_kept (struct rig *r, const int *order, int stale)
{
  struct rig a;

  last_error[0] = '\0';
  ck_assert_int_eq (reassemble (r, order, &a), 0);
  ck_assert_msg (strstr (last_error, "stale") != NULL, "said: %s",
                 last_error);
  ck_assert (member_failed (members_at (&a.ms, stale)));
  ck_assert_str_ne (members_at (&a.ms, stale)->ops->kind, "missing");
  for (int i = 0; i < a.ms.n; i++)
    ck_assert (md_array_stale_at_assembly (a.md, i) == (i == stale));
  ck_assert_int_eq (members_failed (&a.ms), 1);
  md_array_close (a.md);
  members_destroy (&a.ms);
}

/* Assembly: members in any order come out in role order; one event
 * behind is current enough (an update that a crash cut short); two
 * behind is stale and set aside, its role missing.
 */
START_TEST (test_assemble)
{
  struct rig r, a;
  const int shuffled[N] = { 2, 0, 3, 1 };

  rig_create (&r);
  md_array_resynced (r.md);
  ck_assert_int_eq (reassemble (&r, shuffled, &a), 0);
  ck_assert (a.md != NULL);
  ck_assert_int_eq (a.ms.n, N);
  ck_assert_int_eq (a.cfg.level, 5);
  ck_assert_uint_eq (a.cfg.chunk, CHUNK);
  for (int i = 0; i < N; i++) {
    ck_assert_uint_eq (sb_dev_number (members_at (&a.ms, i)), i);
    ck_assert (!member_failed (members_at (&a.ms, i)));
  }
  ck_assert (!md_array_needs_resync (a.md));    /* it was clean */
  md_array_close (a.md);
  members_destroy (&a.ms);

  /* Member 3 misses one update (as when a crash cuts an update short):
   * still used.  Two: stale, set aside, its role missing.
   */
  {
    const int order[N] = { 0, 1, 2, 3 };
    struct member *m3 = members_at (&r.ms, 3);
    uint8_t saved[SB];

    memcpy (saved, mem_member_data (m3) + SB, SB);
    md_array_states_changed (r.md);
    memcpy (mem_member_data (m3) + SB, saved, SB);
    ck_assert_uint_eq (sb_events (m3) + 1, sb_events (members_at (&r.ms, 0)));
    ck_assert_int_eq (reassemble (&r, order, &a), 0);
    ck_assert (!member_failed (members_at (&a.ms, 3)));
    ck_assert_uint_eq (sb_dev_number (members_at (&a.ms, 3)), 3);
    md_array_close (a.md);
    members_destroy (&a.ms);

    md_array_states_changed (r.md);
    memcpy (mem_member_data (m3) + SB, saved, SB);
    ck_assert_uint_eq (sb_events (m3) + 2, sb_events (members_at (&r.ms, 0)));
    /* It keeps its role, failed, for jobs_after_fork to re-add. */
    assemble_stale_kept (&r, order, 3);

    /* md failed and removed it (`mdadm --fail X --remove X`): the others
     * have its slot free (spare, 0xffff), its own superblock still names
     * its role.  It keeps the role to be re-added, as mdadm --re-add
     * takes it back.
     */
    for (int i = 0; i < 3; i++) {
      struct md_super sb;
      const char *why;
      uint8_t *p = mem_member_data (members_at (&r.ms, i)) + SB;

      ck_assert_int_eq (md_super_parse (p, &sb, &why), 1);
      sb.dev_roles[3] = MD_ROLE_SPARE;
      md_super_format (&sb, p);
    }
    ck_assert_uint_eq (sb_role (members_at (&r.ms, 0), 3), MD_ROLE_SPARE);
    assemble_stale_kept (&r, order, 3);

    /* A member the others recorded faulty is not used, even one behind;
     * it too keeps its role, failed, to be re-added.
     */
    md_array_states_changed (r.md);
    memcpy (saved, mem_member_data (m3) + SB, SB);
    member_fail (m3, EIO);
    md_array_states_changed (r.md);
    memcpy (mem_member_data (m3) + SB, saved, SB);
    last_error[0] = '\0';
    ck_assert_int_eq (reassemble (&r, order, &a), 0);
    ck_assert_msg (strstr (last_error, "marked it faulty") != NULL, "said: %s",
                   last_error);
    ck_assert (member_failed (members_at (&a.ms, 3)));
    ck_assert (md_array_stale_at_assembly (a.md, 3));
    md_array_close (a.md);
    members_destroy (&a.ms);
  }
  rig_free (&r);
}
END_TEST

/* Where md puts version 1.minor on a member of `bytes` bytes (the rule
 * of md's super_1_load, written out here).
 */
static uint64_t
place_of (int minor, uint64_t bytes)
{
  return minor == 2 ? 4096 : minor == 1 ? 0 : (bytes / 512 - 16) / 8 * 8 * 512;
}

/* A new array of version 1.minor with a bitmap, on members of different
 * sizes (their sizes in sizes[]); for v1.0 member_bytes is what
 * md_array_assemble says the data may use (as array_open does).
 */
static void
version_create (struct rig *r, int minor, const uint64_t *sizes)
{
  struct member *m[N];
  uint64_t member_bytes = 0, low = UINT64_MAX, doff = minor == 0 ? 0
    : DATA_OFFSET;
  const char *why = NULL;

  memset (r, 0, sizeof *r);
  members_init (&r->ms);
  for (int i = 0; i < N; i++) {
    char name[16];

    snprintf (name, sizeof name, "v%d-%d", minor, i);
    m[i] = mem_member_new (name, sizes[i], 1);
    if (sizes[i] < low)
      low = sizes[i];
  }
  members_arrange (&r->ms, m, N);
  members_set_level (&r->ms, 5);
  r->cfg = (struct array_config) {
    .metadata = METADATA_MD, .create = true, .level = 5,
    .layout = LAYOUT_LEFT_SYMMETRIC, .chunk = CHUNK, .data_offset = doff,
    .ndisks = N, .set_metadata_version = true, .metadata_minor = minor,
    .bitmap_chunk = CHUNK,
  };
  for (int i = 0; i < N; i++)
    r->cfg.disks[i] = m[i]->name;
  ck_assert_int_eq (md_array_assemble (&r->ms, &r->cfg, &member_bytes,
                                       &r->md), 0);
  ck_assert (r->md == NULL);
  if (minor == 0) {
    /* Room for the bitmap (16 rows: one 4 KiB page) before the lowest
     * superblock.
     */
    ck_assert_uint_eq (member_bytes, place_of (0, low) - 4096);
  }
  else {
    ck_assert_uint_eq (member_bytes, 0);
    member_bytes = low;
  }
  ck_assert_msg (geometry_init (&r->g, 5, LAYOUT_LEFT_SYMMETRIC, N, CHUNK,
                                doff, member_bytes, &why) == 0,
                 "geometry: %s", why);
  ck_assert_int_eq (md_array_create (&r->ms, &r->g, &r->cfg, &r->md), 0);
  ck_assert_int_eq (md_array_after_fork (r->md), 0);
}

/* md v1.0 and v1.1: create puts each member's superblock at its version's
 * place (v1.0: at each member's own end), zeroes a superblock of another
 * version left on a member, puts the bitmap after the superblock (v1.1)
 * or right before it (v1.0) and the data where md's rule says; assembly
 * finds them without being told the version, shuffled; a member holding
 * a second superblock is refused naming both, unless metadata-version
 * names one; a replacement too small for the v1.0 metadata after the
 * data is refused, and a fitting one gets its superblock at its own end.
 */
START_TEST (test_versions)
{
  /* Sizes no multiple of 4 KiB, so that v1.0's rounding shows. */
  static const uint64_t sizes[N] = {
    MEMBER_BYTES, MEMBER_BYTES + 512, MEMBER_BYTES + 4096 + 1536,
    MEMBER_BYTES + 65536,
  };

  for (int minor = 0; minor <= 1; minor++) {
    struct rig r, a;
    const int shuffled[N] = { 3, 1, 0, 2 };
    struct member *m[N], *small, *big;
    uint64_t member_bytes = 0, at;
    uint8_t *d;

    version_create (&r, minor, sizes);
    md_array_resynced (r.md);
    for (int i = 0; i < N; i++) {
      at = place_of (minor, sizes[i]);
      d = mem_member_data (members_at (&r.ms, i));
      ck_assert_msg (le (d + at, 4) == 0xa92b4efc, "v1.%d member %d: no "
                     "superblock at %llu", minor, i, (unsigned long long) at);
      ck_assert_uint_eq (le (d + at + 144, 8), at / 512);
      ck_assert_uint_eq (le (d + at + 128, 8), minor == 0 ? 0 : 2048);
      ck_assert_uint_eq (le (d + at + 8, 4) & 1, 1);      /* bitmap */
      /* bitmap_offset: 8 sectors after (v1.1), its 4 KiB before (v1.0) */
      ck_assert_int_eq ((int32_t) le (d + at + 96, 4), minor == 0 ? -8 : 8);
      ck_assert_uint_eq (le (d + at + (minor == 0 ? -4096 : 4096), 4),
                         0x6d746962);
      ck_assert_uint_eq (le (d + at + 200, 8),
                         le (mem_member_data (members_at (&r.ms, 0))
                             + place_of (minor, sizes[0]) + 200, 8));
      /* The data ends before the bitmap. */
      ck_assert_uint_le (le (d + at + 128, 8) * 512 + le (d + at + 80, 8) * 512,
                         minor == 0 ? at - 4096 : sizes[i]);
    }

    /* Shuffled; told the version but for v1.2: only v1.2's place is
     * read unless the version is given (md_assemble.c's read_minor), so a
     * v1.0 or v1.1 array is refused without it, naming the parameter.
     */
    memset (&a, 0, sizeof a);
    members_init (&a.ms);
    for (int i = 0; i < N; i++) {
      int k = shuffled[i];

      m[i] = mem_member_new (members_at (&r.ms, k)->name, sizes[k], 1);
      memcpy (mem_member_data (m[i]), mem_member_data (members_at (&r.ms, k)),
              sizes[k]);
    }
    members_arrange (&a.ms, m, N);
    a.cfg = (struct array_config) { .metadata = METADATA_MD, .ndisks = N };
    for (int i = 0; i < N; i++)
      a.cfg.disks[i] = m[i]->name;
    if (minor != 2) {
      last_error[0] = '\0';
      ck_assert_int_eq (md_array_assemble (&a.ms, &a.cfg, &member_bytes,
                                           &a.md), -1);
      ck_assert_msg (strstr (last_error, "metadata-version=") != NULL,
                     "v1.%d without its version: %s", minor, last_error);
      a.cfg.set_metadata_version = true;
      a.cfg.metadata_minor = minor;
    }
    last_error[0] = '\0';
    ck_assert_msg (md_array_assemble (&a.ms, &a.cfg, &member_bytes,
                                      &a.md) == 0, "v1.%d: %s", minor,
                   last_error);
    ck_assert_uint_eq (a.cfg.data_offset, minor == 0 ? 0 : DATA_OFFSET);
    ck_assert (md_array_bitmap (a.md) != NULL);
    for (int i = 0; i < N; i++)
      ck_assert_str_eq (members_at (&a.ms, i)->name,
                        members_at (&r.ms, i)->name);
    ck_assert (!md_array_needs_resync (a.md));
    /* Each member's data_size is its own (md's super_1_load refuses one
     * above what the member holds from data_offset to its end, v1.1, or
     * to its superblock, v1.0), at create and after an update of an
     * assembled array.
     */
    md_array_states_changed (a.md);
    for (int i = 0; i < N; i++) {
      int k = shuffled[i];
      uint64_t want = minor == 0 ? place_of (0, sizes[k]) - 4096
        : sizes[k] / 512 * 512 - DATA_OFFSET;

      at = place_of (minor, sizes[k]);
      ck_assert_msg (le (mem_member_data (m[i]) + at + 136, 8) * 512 == want,
                     "v1.%d member %d: data_size %llu sectors, not %llu",
                     minor, k, (unsigned long long)
                     le (mem_member_data (m[i]) + at + 136, 8),
                     (unsigned long long) want / 512);
      ck_assert_uint_eq (le (mem_member_data (m[i]) + at + 200, 8),
                         le (mem_member_data (members_at (&r.ms, 0))
                             + place_of (minor, sizes[0]) + 200, 8) + 1);
    }
    md_array_close (a.md);
    members_destroy (&a.ms);

    /* A v1.2 superblock also on member 2 (what a client of this v1.0 or
     * v1.1 array could write at 4 KiB): not told the version, the start
     * is refused; metadata-version picks the array's own.
     */
    {
      struct member *x[N];
      uint8_t *other;

      memset (&a, 0, sizeof a);
      members_init (&a.ms);
      for (int i = 0; i < N; i++) {
        x[i] = mem_member_new (members_at (&r.ms, i)->name, sizes[i], 1);
        memcpy (mem_member_data (x[i]),
                mem_member_data (members_at (&r.ms, i)), sizes[i]);
      }
      /* A copy of member 0's record, moved to 4 KiB: a valid v1.2 one. */
      other = mem_member_data (x[2]) + 4096;
      {
        struct md_super sb;
        const char *why;

        ck_assert_int_eq (md_super_parse (mem_member_data (x[0])
                                          + place_of (minor, sizes[0]),
                                          &sb, &why), 1);
        sb.super_offset = 4096;
        sb.data_offset = DATA_OFFSET;
        sb.feature_map &= ~1;
        md_super_format (&sb, other);
      }
      members_arrange (&a.ms, x, N);
      a.cfg = (struct array_config) { .metadata = METADATA_MD, .ndisks = N };
      for (int i = 0; i < N; i++)
        a.cfg.disks[i] = x[i]->name;
      last_error[0] = '\0';
      ck_assert_int_eq (md_array_assemble (&a.ms, &a.cfg, &member_bytes,
                                           &a.md), -1);
      /* Not told the version, only v1.2's place is read: the copy there
       * is not taken for the array's (the other members have none), and
       * the start is refused, naming the v1.0/v1.1 superblock and the
       * parameter.
       */
      ck_assert_msg (strstr (last_error, minor == 0 ? "md v1.0" : "md v1.1") &&
                     strstr (last_error, "metadata-version="), "said: %s",
                     last_error);
      a.cfg.set_metadata_version = true;
      a.cfg.metadata_minor = minor;
      ck_assert_msg (md_array_assemble (&a.ms, &a.cfg, &member_bytes,
                                        &a.md) == 0, "said: %s", last_error);
      md_array_close (a.md);
      a.md = NULL;
      /* Told v1.2, the members without one are refused. */
      a.cfg.metadata_minor = 2;
      last_error[0] = '\0';
      ck_assert_int_eq (md_array_assemble (&a.ms, &a.cfg, &member_bytes,
                                           &a.md), -1);
      ck_assert_msg (strstr (last_error, "no md v1.x superblock (v1.2"),
                     "said: %s", last_error);
      members_destroy (&a.ms);
    }

    /* A replacement: too small for v1.0's metadata after the data (it
     * holds the data, not the bitmap and superblock too) is refused;
     * one with a leftover v1.2 superblock takes its own place, the
     * leftover zeroed.
     */
    member_fail (members_at (&r.ms, 1), EIO);
    md_array_states_changed (r.md);
    small = mem_member_new ("small", r.g.data_offset + r.g.stripes * CHUNK
                            + 4096, 1);
    if (minor == 0)
      ck_assert_ptr_nonnull (md_array_cannot_hold (r.md, small));
    else
      ck_assert_ptr_null (md_array_cannot_hold (r.md, small));
    member_close (small);
    big = mem_member_new ("big", sizes[3] + 3 * 4096 + 512, 1);
    ck_assert_ptr_null (md_array_cannot_hold (r.md, big));
    if (minor != 2)
      memcpy (mem_member_data (big) + 4096, mem_member_data (members_at
                                                             (&r.ms, 0))
              + place_of (minor, sizes[0]), 4096);
    /* ... with super_offset saying 4 KiB: a v1.2 leftover. */
    d = mem_member_data (big) + 4096;
    {
      struct md_super sb;
      const char *why;

      ck_assert_int_eq (md_super_parse (d, &sb, &why), 1);
      sb.super_offset = 4096;
      sb.data_offset = DATA_OFFSET;
      sb.feature_map &= ~1;
      md_super_format (&sb, d);
    }
    members_replace (&r.ms, 1, big);
    md_array_states_changed (r.md);
    at = place_of (minor, sizes[3] + 3 * 4096 + 512);
    d = mem_member_data (big);
    ck_assert_uint_eq (le (d + at, 4), 0xa92b4efc);
    ck_assert_uint_eq (le (d + at + 144, 8), at / 512);
    /* The leftover is gone: zeroed, and for v1.1 the bitmap written over. */
    ck_assert_uint_eq (le (d + 4096, 4), minor == 0 ? 0 : 0x6d746962);
    ck_assert_uint_eq (le (d + at + 160, 4), 1);        /* its slot */
    rig_free (&r);
  }
}
END_TEST

static Suite *
md_array_suite (void)
{
  const struct check_case cases[] = {
    { "clean", test_clean_active },
    { "failure-before-ack", test_failure_recorded_before_ack },
    { "identity", test_identity_read_during_write },
    { "reuse", test_dev_number_reuse },
    { "assemble", test_assemble },
    { "versions", test_versions },
  };

  return check_suite ("md_array", CHECK_CASES (cases), 30);
}

int
main (void)
{
  return check_run (md_array_suite (), false);
}
