/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: plugin/md_assemble.c assembles an md array from its
 * members' superblocks, against in-memory members (member_mem.c) holding
 * what an array lib/md_rig.c created holds: members in any order come
 * out in role order; a member one event behind is current enough (an
 * update that a crash cut short); one two behind is stale and keeps its
 * role, failed, to be re-added, and so does one md failed and removed
 * (the others have its slot spare) and one the others recorded faulty,
 * even one behind (assemble).
 *
 * The versions case asserts both creating and assembling md v1.0 and
 * v1.1, on members of different sizes: create (md_create.c, through
 * md_array_assemble's create=true checks; the superblocks written by
 * md_array.c's first update) puts each member's superblock at its
 * version's place (v1.0 at each member's own end), the bitmap after it
 * (v1.1) or right before it (v1.0) and the data where md's rule says;
 * assembly reads v1.2's place unless metadata-version= names another,
 * and refuses an array of another version without it, naming the
 * parameter; it finds the members shuffled, and each member's data_size
 * stays its own after an update of the assembled array; a member holding
 * a second superblock is refused naming both unless metadata-version=
 * names one.  Its last part is a replacement: one too small for v1.0's
 * metadata after the data is refused (md_admit.c's
 * md_array_cannot_hold), and a fitting one gets its superblock at its
 * own end, a leftover v1.2 superblock zeroed (md_array.c's update).
 * The spares case: a disk whose superblock says it is the array's spare
 * is kept as a hot spare, with its slot, even with an older event count;
 * another array's spare is refused, named.
 *
 * The oracle reads the superblocks from the members' bytes at md_p.h's
 * offsets (lib/md_rig.c), never through md_super.c, at the places md's
 * rule (written out here: place_of) gives each version; md_super.c only
 * alters superblocks, as md or a client would have left them.
 * CK_RUN_CASE=name runs one.
 */

#include <config.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include "check_run.h"

#include "array_config.h"
#include "geometry.h"
#include "md_array.h"
#include "md_rig.h"
#include "md_super.h"
#include "member.h"
#include "member_mem.h"
#include "member_table.h"

/* Assemble n fresh members holding what src[] hold, in that order, each
 * named after its source; returns what md_array_assemble did.
 */
static int
assemble_copies (struct member *const *src, int n, struct rig *out)
{
  struct member *m[GEOMETRY_MAX_MEMBERS];
  uint64_t member_bytes = 0;

  memset (out, 0, sizeof *out);
  members_init (&out->ms);
  for (int i = 0; i < n; i++) {
    m[i] = mem_member_new (src[i]->name, MEMBER_BYTES, 1);
    memcpy (mem_member_data (m[i]), mem_member_data (src[i]), MEMBER_BYTES);
  }
  members_arrange (&out->ms, m, n);
  out->cfg = (struct array_config) { .metadata = METADATA_MD, .ndisks = n };
  for (int i = 0; i < n; i++)
    out->cfg.disks[i] = m[i]->name;
  return md_array_assemble (&out->ms, &out->cfg, &member_bytes, &out->md);
}

/* Assemble fresh members holding what rig's members hold, in the order
 * given (indices into the old table).
 */
static int
reassemble (struct rig *r, const int *order, struct rig *out)
{
  struct member *src[N];

  for (int i = 0; i < N; i++)
    src[i] = members_at (&r->ms, order[i]);
  return assemble_copies (src, N, out);
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

/* Hot spares: a disk whose own superblock says spare, in a slot the
 * newest superblock has as a spare's, given anywhere among the members,
 * is kept as a hot spare with its slot and device UUID (an update of the
 * assembled array writes it so, current), even with an older event
 * count: md's super_1_validate asks a current count only of a device in
 * a role.  The spare of another array given with the members is refused,
 * naming it, as a member of another array is.
 */
START_TEST (test_spares)
{
  struct rig r, a, other;
  struct member *sp, *src[N + 1], *asp;
  uint8_t saved[SB];

  rig_create (&r);
  md_array_resynced (r.md);
  sp = rig_add_spare (&r, N);
  for (int late = 0; late <= 2; late += 2) {
    /* late updates that the spare's own superblock missed */
    memcpy (saved, mem_member_data (sp) + SB, SB);
    for (int k = 0; k < late; k++)
      md_array_states_changed (r.md);
    memcpy (mem_member_data (sp) + SB, saved, SB);
    ck_assert_uint_eq (sb_events (sp) + late,
                       sb_events (members_at (&r.ms, 0)));
    src[0] = members_at (&r.ms, 3);
    src[1] = members_at (&r.ms, 1);
    src[2] = sp;
    src[3] = members_at (&r.ms, 0);
    src[4] = members_at (&r.ms, 2);
    last_error[0] = '\0';
    ck_assert_msg (assemble_copies (src, N + 1, &a) == 0, "said: %s",
                   last_error);
    ck_assert_msg (last_error[0] == '\0', "%d behind: said %s", late,
                   last_error);
    ck_assert_int_eq (a.ms.n, N);
    ck_assert_int_eq (members_failed (&a.ms), 0);
    for (int i = 0; i < N; i++)
      ck_assert_str_eq (members_at (&a.ms, i)->name,
                        members_at (&r.ms, i)->name);
    ck_assert_int_eq (members_spares (&a.ms), 1);
    asp = members_spare_at (&a.ms, 0);
    ck_assert_str_eq (asp->name, sp->name);
    ck_assert (!member_failed (asp));
    md_array_states_changed (a.md);
    ck_assert_uint_eq (sb_dev_number (asp), N);
    ck_assert_uint_eq (sb_role (asp, N), 0xffff);
    ck_assert_uint_eq (sb_role (members_at (&a.ms, 0), N), 0xffff);
    ck_assert (!memcmp (sb_device_uuid (asp), sb_device_uuid (sp), 16));
    ck_assert_uint_eq (sb_events (asp), sb_events (members_at (&a.ms, 0)));
    md_array_close (a.md);
    members_destroy (&a.ms);
  }

  /* Another array's spare (its events behind r's, so that r's members
   * are the reference).
   */
  rig_create (&other);
  md_array_resynced (other.md);
  src[N] = rig_add_spare (&other, 9);
  ck_assert_uint_lt (sb_events (src[N]), sb_events (members_at (&r.ms, 0)));
  for (int i = 0; i < N; i++)
    src[i] = members_at (&r.ms, i);
  last_error[0] = '\0';
  ck_assert_int_eq (assemble_copies (src, N + 1, &a), -1);
  ck_assert_msg (strstr (last_error, "member mem9 belongs to another array"),
                 "said: %s", last_error);
  members_destroy (&a.ms);
  rig_free (&other);
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
 * of a v1.0 or v1.1 array is refused, naming metadata-version=, until
 * that names the version (only v1.2's place is read unless told), and
 * then finds the members, shuffled; a member holding
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
md_assemble_suite (void)
{
  const struct check_case cases[] = {
    { "assemble", test_assemble },
    { "versions", test_versions },
    { "spares", test_spares },
  };

  return check_suite ("md_assemble", CHECK_CASES (cases), 30);
}

int
main (void)
{
  return check_run (md_assemble_suite (), false);
}
