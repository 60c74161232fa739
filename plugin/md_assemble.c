/* SPDX-License-Identifier: BSD-3-Clause */
/* Assembling an md array from its members' version-1 superblocks (v1.0,
 * v1.1 or v1.2: md_super.c says where each lies): md_array_assemble,
 * from array_open, once the members are open in the order the
 * parameters gave.
 *
 * Every member's superblock is read from v1.2's place, or the one
 * metadata-version= names (read_minor: never from a place the array's
 * clients may have written); none at all is an error (raw mode is only
 * ever metadata=none), which names the format a member carries instead
 * (an md v1.0 or v1.1 superblock: the version to give), some but not all
 * is an error.  create=true looks in every place, and refuses a member
 * holding two (md_super_read); what it found goes to md_create.c's
 * checks, and assembly stops there.  All must carry one set UUID.  The
 * member with the highest event count is the reference: its dev_roles[]
 * maps each member's dev_number to its role, and a member whose own
 * event count is older, or whose role is spare or faulty, is not used
 * (mdadm treats it the same way), but a spare (its own superblock and
 * the reference say so) stays a hot spare (take_spare), as md uses the
 * spares it assembles; a stale member may yet keep its own
 * role, failed, to be re-added (stale_keeps_role: as mdadm --re-add
 * would take it).  Roles nobody holds are missing members.
 * Level, layout, chunk, data offset and member size come from the
 * reference; an explicit parameter that disagrees is an error, never a
 * silent override.  A member that was being rebuilt resumes its rebuild
 * (from the bitmap if it was a re-add; not read-only).  An array found active was not
 * shut down cleanly: its parity is resynchronised by a repairing scrub in
 * the background (only the rows the bitmap marks, if it has one), but a
 * dirty array that is also degraded is refused unless force=true, as md
 * refuses it.
 *
 * The steps of md_array_assemble, in order: read_all; with create=true
 * md_create_check_members, and done; pick_reference; check_one_array;
 * check_geometry; take_geometry; order_members (place_member for each
 * member, then place_stale for the kept stale ones, fill_missing_roles,
 * then the table is rearranged); take_clean; load_bitmap; md_bblog_load
 * (every member's bad-block log: md_bblog.c); plan_resync; init_serving.  Each says why it fails; order_members changes nothing
 * in the member table unless it succeeds.  In sbs[], role is the
 * member's role by its own superblock (-1: none), -2 for a member that is
 * missing or could not be read (failed), -3 for one without a
 * superblock.
 *
 * The struct md_array made here is private until md_array_assemble
 * returns it, so nothing here takes its lock; from then on md_array.c
 * keeps its superblocks true.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "md_array_internal.h"
#include "md_bitmap.h"
#include "md_super.h"
#include "member_table.h"
#include "signature.h"

/* Which places to read a superblock from.  Assembly reads only v1.2's
 * unless metadata-version= names another: each version's data area
 * covers another version's place (a v1.2 array's data runs to its
 * members' ends, where v1.0's lies; v1.0's from byte 0 over v1.1's and
 * v1.2's), so what a client wrote through the array there could pass for
 * a superblock, and the client's data must never decide how the array
 * is assembled.  create=true looks in every place, to refuse a disk that
 * carries an array of any version.
 */
static int
read_minor (const struct array_config *cfg)
{
  if (cfg->set_metadata_version)
    return cfg->metadata_minor;
  return cfg->create ? MD_MINOR_ANY : 2;
}

static int
read_all (struct members *ms, const struct array_config *cfg,
          struct md_super *sbs, int *found)
{
  *found = 0;
  for (int i = 0; i < ms->n; i++) {
    const char *why;
    int r;

    if (member_failed (members_at (ms, i))) {       /* disk=missing */
      sbs[i].role = -2;
      continue;
    }
    r = md_super_read (members_at (ms, i), read_minor (cfg), &sbs[i], &why);
    if (r == -2) {
      /* An I/O error fails the member; the array may start degraded. */
      members_io_error (members_at (ms, i), MEMBER_READ, errno ? errno : EIO);
      sbs[i].role = -2;
      continue;
    }
    if (r == -1) {
      nbdkit_error ("member %s: %s", cfg->disks[i], why);
      return -1;
    }
    if (r == 1) {
      (*found)++;
      if (!cfg->create)         /* else the superblock is not kept */
        md_identity_expect (members_at (ms, i), &sbs[i], true);
    }
    else
      sbs[i].role = -3;         /* no superblock */
  }
  return 0;
}

/* An explicit parameter must agree with the superblocks. */
static int
check_param (bool set, uint64_t given, uint64_t sb, const char *name)
{
  if (set && given != sb) {
    nbdkit_error ("%s=%" PRIu64 " contradicts the md superblocks (%" PRIu64 ")",
                  name, given, sb);
    return -1;
  }
  return 0;
}

static int
take_geometry (struct array_config *cfg, const struct md_super *ref)
{
  if (check_param (cfg->set_level, cfg->level, ref->level, "level") == -1 ||
      check_param (cfg->set_layout, cfg->layout, ref->layout, "layout") == -1 ||
      check_param (cfg->set_chunk, cfg->chunk, ref->chunk, "chunk") == -1 ||
      check_param (cfg->set_data_offset, cfg->data_offset, ref->data_offset,
                   "data-offset") == -1)
    return -1;
  cfg->level = ref->level;
  cfg->layout = ref->layout;
  cfg->chunk = ref->chunk;
  cfg->data_offset = ref->data_offset;
  return 0;
}

/* A member's superblock is stale if it missed more than one update: like
 * the kernel and mdadm, one event behind is accepted, since an update that
 * a crash interrupted leaves some members one event behind the others.
 */
static bool
stale (const struct md_super *s, const struct md_super *ref)
{
  return s->events + 1 < ref->events;
}

/* Role r has no member: the dev_number that held it in the newest
 * superblock (UINT32_MAX if none did) stays the role's, as a failed
 * member's, so that the next update writes it faulty and a replacement
 * cannot take it before that update has been written (see update).
 */
static uint32_t
slot_of_role (const struct md_super *ref, int r)
{
  for (uint32_t d = 0; d < ref->max_dev; d++)
    if (ref->dev_roles[d] == r)
      return d;
  return UINT32_MAX;
}

/* Whether stale member s may keep its own role r, failed, to be re-added
 * (as mdadm --re-add would take it): the newest superblock has its slot
 * in role r, faulty, or free (spare: what md writes for a slot whose disk
 * it failed and removed, `mdadm --fail X --remove X`), and no other slot
 * in role r (a replacement took it since, so it is another disk's role
 * now).  A free slot may have been given to a spare since: if another
 * of the disks given, up to date, has s's dev_number, the slot is that
 * disk's.  md decides the same way: a removed disk's own superblock names
 * its role, and the bitmap says whether it may come back.
 */
static bool
stale_keeps_role (const struct md_super *s, const struct md_super *ref,
                  const struct md_super *sbs, int n)
{
  uint16_t now = ref->dev_roles[s->dev_number];
  uint32_t holder;

  if (s->role < 0 || s->role >= (int) ref->raid_disks)
    return false;
  if (now != s->role && now != MD_ROLE_FAULTY && now != MD_ROLE_SPARE)
    return false;
  if (now == MD_ROLE_SPARE)
    for (int k = 0; k < n; k++)
      if (&sbs[k] != s && sbs[k].role >= -1 &&
          sbs[k].dev_number == s->dev_number && !stale (&sbs[k], ref))
        return false;
  holder = slot_of_role (ref, s->role);
  return holder == UINT32_MAX || holder == s->dev_number;
}

/* The role whose member (so far) holds slot d, or -1. */
static int
slot_holder (const struct md_array *md, struct member *const *ordered,
             int raid_disks, uint32_t d)
{
  for (int r = 0; r < raid_disks; r++)
    if (ordered[r] && md->dev_number[r] == d)
      return r;
  return -1;
}

/* Sort the stale members kept[0..n) by their superblocks' events, newest
 * first.  A slot whose disk left can be given to another disk, which can
 * go stale in its turn: of two stale members with one dev_number, the
 * newer superblock is the slot's later holder, and the one to keep.
 */
static void
newest_first (int *kept, int n, const struct md_super *sbs)
{
  for (int k = 1; k < n; k++)
    for (int j = k; j > 0 && sbs[kept[j]].events > sbs[kept[j - 1]].events;
         j--) {
      int t = kept[j];

      kept[j] = kept[j - 1];
      kept[j - 1] = t;
    }
}

/* What order_members has decided so far: the members by role, the ones
 * it sets aside (retired once it succeeds) and the stale ones it keeps
 * for their own roles, failed (placed after every fresh member).
 */
struct order {
  struct members *ms;
  const struct array_config *cfg;
  const struct md_super *sbs, *ref;
  struct md_array *md;
  struct member *ordered[GEOMETRY_MAX_MEMBERS];
  const char *names[GEOMETRY_MAX_MEMBERS];      /* of ordered[] */
  struct member *aside[GEOMETRY_MAX_MEMBERS];
  int kept[GEOMETRY_MAX_MEMBERS];       /* stale, to keep their roles */
  int spares[GEOMETRY_MAX_MEMBERS];     /* hot spares, by their own
                                           superblocks */
  int naside, nkept, nspares;
};

/* Member i takes role r: its dev_number, data_size, device UUID, bad-block
 * log (read by md_bblog_load) and count of corrected sectors become the
 * role's.
 */
static void
take_role (struct order *o, int r, int i)
{
  const struct md_super *s = &o->sbs[i];

  o->ordered[r] = members_at (o->ms, i);
  o->names[r] = o->cfg->disks[i];
  o->md->dev_number[r] = s->dev_number;
  o->md->data_size[r] = s->data_size;
  memcpy (o->md->device_uuid[r], s->device_uuid, 16);
  o->md->bblog[r] = (struct md_badblocks_place) {
    .offset = s->bblog_offset, .sectors = s->bblog_size,
  };
  o->md->bblog_entries[r] = s->feature_map & MD_FEATURE_BAD_BLOCKS;
  o->md->corrected_base[r] = s->cnt_corrected_read;
}

/* Member m (disk `name`) was being rebuilt: rows below its recovery
 * offset are good, the rebuild goes on from there (jobs_after_fork); only
 * where the bitmap's bits are set if it was re-added, as md resumes such
 * a recovery (the bits stay until every member is in sync).
 */
static void
resume_rebuild (struct member *m, const char *name, const struct md_super *s,
                const struct md_super *ref, const struct array_config *cfg)
{
  member_start_rebuild (m, s->recovery_offset / ref->chunk);
  m->readd = (s->feature_map & MD_FEATURE_RECOVERY_BITMAP) &&
    (ref->feature_map & MD_FEATURE_BITMAP);
  if (cfg->readonly)
    nbdkit_error ("raid: read-only: member %s was being rebuilt (row %"
                  PRIu64 " of %" PRIu64 "): the rebuild is not resumed, "
                  "its rows from there on are reconstructed from the "
                  "others", name, member_recovery_stripe (m),
                  ref->size / ref->chunk);
  else
    nbdkit_debug ("raid: member %s resumes its rebuild at row %" PRIu64,
                  name, member_recovery_stripe (m));
}

/* Member i, on the first pass: into the role the reference gives its
 * dev_number, kept for place_stale, or set aside (missing, a spare,
 * faulty, stale with no role to keep), or a hot spare.  -1: the
 * superblocks cannot be assembled (a crafted dev_number, two members in
 * one role).
 */
static int
place_member (struct order *o, int i)
{
  const struct md_super *s = &o->sbs[i], *ref = o->ref;
  struct member *m = members_at (o->ms, i);
  int role;

  if (s->role < -1) {           /* missing */
    o->aside[o->naside++] = m;
    return 0;
  }
  if (s->dev_number >= ref->max_dev) {
    /* md_super_parse refuses a dev_number beyond the member's own
     * max_dev; beyond the newest superblock's it has no role there
     * either, and md never shrinks max_dev: a crafted superblock.
     */
    nbdkit_error ("member %s: bad superblock: its dev_number %" PRIu32
                  " has no slot in the newest superblock (max_dev %" PRIu32
                  ", from member %s)", o->cfg->disks[i], s->dev_number,
                  ref->max_dev, o->cfg->disks[ref - o->sbs]);
    return -1;
  }
  role = ref->dev_roles[s->dev_number];
  if (role == MD_ROLE_SPARE && s->role == -1) {
    /* A hot spare by its own superblock and by the newest: md uses it
     * whatever its event count (super_1_validate insists on a current
     * one only for a device in a role), and so do we.
     */
    if (o->nspares == MEMBERS_MAX_SPARES) {
      nbdkit_error ("member %s: it is a spare, and %d spares are already "
                    "found; not used", o->cfg->disks[i], MEMBERS_MAX_SPARES);
      o->aside[o->naside++] = m;
    }
    else
      o->spares[o->nspares++] = i;
    return 0;
  }
  if ((stale (s, ref) || role == MD_ROLE_FAULTY) &&
      stale_keeps_role (s, ref, o->sbs, o->ms->n)) {
    o->kept[o->nkept++] = i;    /* unless a fresh member claims the role */
    return 0;
  }
  if (role >= ref->raid_disks || stale (s, ref)) {
    nbdkit_error ("member %s: %s; not used", o->cfg->disks[i],
                  stale (s, ref) ? "its superblock is stale "
                  "(it failed or was removed earlier)"
                  : role == MD_ROLE_SPARE ? "its own superblock gives it "
                  "a role, the newest a spare's slot" : "marked faulty");
    o->aside[o->naside++] = m;
    return 0;
  }
  if (o->ordered[role]) {
    nbdkit_error ("members %s and %s both claim role %d", o->names[role],
                  o->cfg->disks[i], role);
    return -1;
  }
  if (s->feature_map & MD_FEATURE_RECOVERY_OFFSET)
    resume_rebuild (m, o->cfg->disks[i], s, ref, o->cfg);
  take_role (o, role, i);
  return 0;
}

/* Member i, a spare: it stays one, with the dev_number and device UUID
 * of its superblock (md_array.c keeps that superblock current), for
 * jobs.c to put in a role that fails, as md's recovery thread does with
 * the spares an assembly found.
 */
static void
take_spare (struct order *o, int i)
{
  const struct md_super *s = &o->sbs[i];
  struct member *m = members_at (o->ms, i);

  o->md->spare[o->md->nspares++] = (struct md_spare) {
    .m = m, .serial = m->serial, .dev_number = s->dev_number,
    .data_size = s->data_size, .taking = -1,
  };
  memcpy (o->md->spare[o->md->nspares - 1].device_uuid, s->device_uuid, 16);
  members_add_spare (o->ms, m);
  nbdkit_debug ("raid: member %s is a hot spare (dev_number %" PRIu32 ")",
                o->cfg->disks[i], s->dev_number);
}

/* Kept stale member i, once every fresh member is placed: back in its
 * own role, failed, for jobs_after_fork to re-add, unless a fresh member
 * holds the role, or the slot (then it is set aside).
 */
static void
place_stale (struct order *o, int i)
{
  const struct md_super *s = &o->sbs[i], *ref = o->ref;
  struct member *m = members_at (o->ms, i);
  int holder = slot_holder (o->md, o->ordered, ref->raid_disks,
                            s->dev_number);
  char why[160];

  if (o->ordered[s->role]) {
    nbdkit_error ("member %s: %s (it failed or was removed earlier), "
                  "and member %s holds its role %d; not used",
                  o->cfg->disks[i], stale (s, ref) ?
                  "its superblock is stale" : "marked faulty",
                  o->names[s->role], s->role);
    o->aside[o->naside++] = m;
    return;
  }
  if (holder >= 0) {
    nbdkit_error ("member %s: %s (it failed or was removed earlier), "
                  "and its slot %" PRIu32 " is member %s's now (role %d); "
                  "not used: 'replace %d PATH' rebuilds role %d",
                  o->cfg->disks[i], stale (s, ref) ?
                  "its superblock is stale" : "marked faulty",
                  s->dev_number, o->names[holder], holder, s->role, s->role);
    o->aside[o->naside++] = m;
    return;
  }
  snprintf (why, sizeof why, "out of date at assembly: %s (events %"
            PRIu64 ", the array's %" PRIu64 ")",
            stale (s, ref) ? "its superblock is stale"
            : "the others marked it faulty", s->events, ref->events);
  member_fail_because (m, why);
  take_role (o, s->role, i);
  o->md->stale_at_assembly[s->role] = true;
}

/* Every role nobody holds gets a missing member (member_missing), and
 * keeps the dev_number that held it in the newest superblock.  -1 if one
 * cannot be made: the ones made so far are closed.
 */
static int
fill_missing_roles (struct order *o)
{
  const struct md_super *ref = o->ref;
  bool made[GEOMETRY_MAX_MEMBERS] = { false };  /* by member_missing */

  for (int r = 0; r < ref->raid_disks; r++)
    if (o->ordered[r] == NULL) {
      o->ordered[r] = member_missing ();
      if (o->ordered[r] == NULL) {
        for (int k = 0; k < r; k++)
          if (made[k])
            member_close (o->ordered[k]);
        return -1;
      }
      made[r] = true;
      o->md->dev_number[r] = slot_of_role (ref, r);
      nbdkit_debug ("raid: role %d has no member: degraded", r);
    }
  return 0;
}

/* Put the members in role order (members_arrange), setting aside the
 * ones md would not use.  Nothing changes in the table unless it
 * succeeds: until then every member is the table's, for members_destroy
 * to close once.
 */
static int
order_members (struct members *ms, const struct array_config *cfg,
               struct md_super *sbs, const struct md_super *ref,
               struct md_array *md)
{
  struct order o = {
    .ms = ms, .cfg = cfg, .sbs = sbs, .ref = ref, .md = md,
  };

  for (int i = 0; i < ms->n; i++)
    if (place_member (&o, i) == -1)
      return -1;
  newest_first (o.kept, o.nkept, sbs);
  for (int k = 0; k < o.nkept; k++)
    place_stale (&o, o.kept[k]);
  if (fill_missing_roles (&o) == -1)
    return -1;
  for (int k = 0; k < o.naside; k++)
    members_retire (ms, o.aside[k]);
  for (int k = 0; k < o.nspares; k++)
    take_spare (&o, o.spares[k]);
  members_arrange (ms, o.ordered, ref->raid_disks);
  return 0;
}


static int
rebuilding_members (const struct members *ms)
{
  int n = 0;

  for (int i = 0; i < ms->n; i++)
    n += member_state (members_at (ms, i)) == MEMBER_REBUILDING;
  return n;
}

/* md's only_parity() (raid5.c): whether role r of the layout holds
 * nothing but parity.  Only the parity-first and parity-last layouts
 * have such members; md's RAID-6 layouts with Q on the last member
 * (16..20) are not supported here.
 */
static bool
only_parity (int r, int layout, int raid_disks, int max_degraded)
{
  switch (layout) {
  case LAYOUT_PARITY_FIRST:
    return r < max_degraded;
  case LAYOUT_PARITY_LAST:
    return r >= raid_disks - max_degraded;
  default:
    return false;
  }
}

/* The "cannot start dirty degraded array" rule of md's raid5_run():
 * degraded counts every member that is not in sync, missing, failed or
 * half rebuilt (raid5_calc_degraded); a half-rebuilt member that holds
 * only parity is excused, since the data it lacks is not data.  The
 * array is dirty-degraded if more members are degraded than excused.
 */
static bool
dirty_degraded (const struct members *ms, const struct md_super *ref)
{
  int max_degraded = ref->level == 6 ? 2 : 1, degraded = 0, excused = 0;

  for (int r = 0; r < ms->n; r++) {
    enum member_state st = member_state (members_at (ms, r));

    if (st == MEMBER_IN_SYNC)
      continue;
    degraded++;
    if (st == MEMBER_REBUILDING &&
        only_parity (r, ref->layout, ref->raid_disks, max_degraded))
      excused++;
  }
  return degraded > excused;
}

/* Geometry a well-formed superblock can still hold but no array can
 * have; NULL if it is possible.
 */
static const char *
impossible (const struct md_super *sb)
{
  if (sb->raid_disks < (sb->level == 6 ? 4 : 3) ||
      sb->raid_disks > MD_MAX_ROLES)
    return "impossible number of members (raid_disks)";
  if (sb->chunk < 4096 || (sb->chunk & (sb->chunk - 1)))
    return "the chunk size is not a power of two >= 4K";
  return NULL;
}

/* Read-only (nbdkit -r, readonly=true), like mdadm --assemble --readonly:
 * what a read-write start would repair stays as it is; say so.
 */
static void
say_not_repaired (struct md_array *md, const struct md_super *ref)
{
  struct md_bitmap_stats st;

  if (md->needs_resync && md->bitmap)
    nbdkit_error ("raid: read-only: the array was not shut down cleanly and "
                  "is not resynchronised: the parity of the %" PRIu64
                  " rows the write-intent bitmap marks may be stale (data "
                  "reads are right while every member works)",
                  md_bitmap_needed_rows (md->bitmap));
  else if (md->needs_resync)
    nbdkit_error ("raid: read-only: the array was not shut down cleanly and "
                  "is not resynchronised%s: its parity may be stale (data "
                  "reads are right while every member works)",
                  ref->resync_offset ? " (its resync had stopped half way)"
                  : "");
  if (md->bitmap) {
    md_bitmap_stats (md->bitmap, &st);
    if (st.dirty)
      nbdkit_error ("raid: read-only: the write-intent bitmap's %" PRIu64
                    " set bits are not cleared", st.dirty);
  }
}

/* The write-intent bitmap, if the superblocks say there is one. */
static int
load_bitmap (struct members *ms, struct md_array *md,
             const struct md_super *ref)
{
  struct md_bitmap_place place = {
    .minor = ref->minor, .bitmap_offset = ref->bitmap_offset,
    .data_offset = ref->data_offset, .size = ref->size, .chunk = ref->chunk,
  };
  const char *why = NULL, *from = NULL;

  if (!(ref->feature_map & MD_FEATURE_BITMAP))
    return 0;
  if ((md->bitmap = md_bitmap_load (ms, &place, ref, md->needs_resync,
                                    &why, &from)) == NULL) {
    if (from)
      nbdkit_error ("member %s: md write-intent bitmap: %s", from, why);
    else
      nbdkit_error ("raid: md write-intent bitmap: %s", why);
    return -1;
  }
  {
    struct md_bitmap_stats st;

    md_bitmap_stats (md->bitmap, &st);
    md->bitmap_sectors = md_bitmap_area_bytes (st.bits) / 512;
  }
  return 0;
}

/* " (v1.x)" when metadata-version= names the one place looked at. */
static const char *
version_place (const struct array_config *cfg)
{
  switch (cfg->set_metadata_version ? cfg->metadata_minor : -1) {
  case 0: return " (v1.0, at the end: metadata-version=1.0)";
  case 1: return " (v1.1, at the start: metadata-version=1.1)";
  case 2: return " (v1.2, at 4 KiB: metadata-version=1.2)";
  default: return "";
  }
}

/* No member has an md version-1 superblock: say what the members carry
 * instead, if anything (returns how many members carry something).
 */
static int
name_other_formats (struct members *ms, const struct array_config *cfg,
                    const struct md_super *sbs)
{
  int n = 0;

  for (int i = 0; i < ms->n; i++) {
    const char *what = NULL;

    if (sbs[i].role == -3 && signature_probe (members_at (ms, i), &what) == 1) {
      nbdkit_error ("member %s has no md v1.x superblock%s; it carries %s, "
                    "%s", cfg->disks[i], version_place (cfg), what,
                    !strstr (what, "md v1.") ? "which this plugin does not "
                    "assemble" : cfg->set_metadata_version ? "not one of the "
                    "version metadata-version= names that md would use (the "
                    "version, or its super_offset, which must name the place "
                    "it is in, differs)" : "and arrays of md v1.0 and v1.1 "
                    "are assembled only when metadata-version= names their "
                    "version (without it only v1.2's place is read, so that "
                    "nothing a client wrote into another version's place is "
                    "taken for a superblock)");
      n++;
    }
  }
  return n;
}

/* The reference: of the members with a superblock, the one with the
 * highest event count.  Once some members have a superblock every member
 * given must (-1 if one has none: said with what it carries instead).
 */
static int
pick_reference (struct members *ms, const struct array_config *cfg,
                const struct md_super *sbs, const struct md_super **refp)
{
  const struct md_super *ref = NULL;

  for (int i = 0; i < ms->n; i++) {
    if (sbs[i].role == -3) {
      const char *what = NULL;

      signature_probe (members_at (ms, i), &what);
      nbdkit_error ("member %s has no md v1.x superblock%s but other "
                    "members do%s%s%s", cfg->disks[i], version_place (cfg),
                    what ? "; it carries " : "", what ? what : "",
                    what && strstr (what, "md v1.") &&
                    !cfg->set_metadata_version ? ": an array of md v1.0 or "
                    "v1.1 is assembled only when metadata-version= names "
                    "its version" : "");
      return -1;
    }
    if (sbs[i].role >= -1 && (ref == NULL || sbs[i].events > ref->events))
      ref = &sbs[i];
  }
  *refp = ref;
  return 0;
}

/* Every member's superblock is one of the reference's array: its set
 * UUID, its version, its data offset.
 */
static int
check_one_array (struct members *ms, const struct array_config *cfg,
                 const struct md_super *sbs, const struct md_super *ref)
{
  for (int i = 0; i < ms->n; i++)
    if (sbs[i].role >= -1 && memcmp (sbs[i].set_uuid, ref->set_uuid, 16)) {
      char u1[40], u2[40];

      uuid_text (sbs[i].set_uuid, u1);
      uuid_text (ref->set_uuid, u2);
      nbdkit_error ("member %s belongs to another array (UUID %s, not %s)",
                    cfg->disks[i], u1, u2);
      return -1;
    }
    else if (sbs[i].role >= -1 && sbs[i].minor != ref->minor) {
      nbdkit_error ("member %s has an md v1.%d superblock, member %s v1.%d: "
                    "one array's members have one version", cfg->disks[i],
                    sbs[i].minor, cfg->disks[ref - sbs], ref->minor);
      return -1;
    }
    else if (sbs[i].role >= -1 && sbs[i].data_offset != ref->data_offset) {
      nbdkit_error ("member %s: data offsets differ between members, which "
                    "is not supported", cfg->disks[i]);
      return -1;
    }
  return 0;
}

/* The reference's geometry is one an array can have, and every member
 * with a superblock holds it (md_admit_cannot_hold).
 */
static int
check_geometry (struct members *ms, const struct array_config *cfg,
                const struct md_super *sbs, const struct md_super *ref)
{
  const char *why;

  if ((why = impossible (ref)) != NULL) {
    nbdkit_error ("md superblocks: %s", why);
    return -1;
  }
  for (int i = 0; i < ms->n; i++)
    if (sbs[i].role >= -1 &&
        (why = md_admit_cannot_hold (ref, members_at (ms, i))) != NULL) {
      nbdkit_error ("member %s %s", cfg->disks[i], why);
      return -1;
    }
  return 0;
}

/* Clean or not, as the reference says (resync_offset all ones: clean).
 * A dirty array that is also degraded is refused unless force=true.
 */
static int
take_clean (struct members *ms, const struct array_config *cfg,
            struct md_array *md, const struct md_super *ref)
{
  md->clean = md->written_clean = ref->resync_offset == UINT64_MAX;
  md->needs_resync = !md->clean;
  if (!md->clean && dirty_degraded (ms, ref) && members_can_serve (ms)) {
    /* As md: parity that may be stale cannot be resynchronised without
     * the missing member, and reconstructing from it may return wrong data
     * (the RAID write hole); a half-rebuilt member counts as missing.
     */
    if (!cfg->force) {
      nbdkit_error ("raid: cannot start a degraded array that was not shut "
                    "down cleanly: data reconstructed from possibly stale "
                    "parity could be wrong (%d failed or missing, %d half "
                    "rebuilt; force=true starts it anyway)",
                    members_failed (ms), rebuilding_members (ms));
      return -1;
    }
    /* md keeps the resync owed (recovery_cp) and runs it once the
     * members are in sync again: so do we (jobs.c), and until then the
     * superblocks stay active.
     */
    nbdkit_error ("raid: starting a dirty degraded array (force=true): its "
                  "parity is resynchronised once every member is in sync "
                  "again");
  }
  return 0;
}

/* What start-up leaves to do for an array not shut down cleanly, and
 * says: the resync in the background (with a bitmap, of the rows it
 * marks; without, from md's checkpoint if a resync stopped half way:
 * resync_done), or, read-only, what stays unrepaired.
 */
static void
plan_resync (struct md_array *md, const struct array_config *cfg,
             const struct md_super *ref)
{
  if (cfg->readonly)
    say_not_repaired (md, ref);
  else if (md->needs_resync && md->bitmap) {
    uint64_t rows = md_bitmap_needed_rows (md->bitmap);

    nbdkit_error ("raid: the array was not shut down cleanly: the "
                  "write-intent bitmap marks %" PRIu64 " of %" PRIu64
                  " rows, whose parity will be resynchronised in the "
                  "background", rows, ref->size / ref->chunk);
    nbdkit_debug ("raid: bitmap: resyncing %" PRIu64 " of %" PRIu64
                  " rows (%" PRIu64 " dirty regions)", rows,
                  ref->size / ref->chunk,
                  md_bitmap_needed_regions (md->bitmap));
  }
  else if (md->needs_resync && ref->resync_offset != 0) {
    /* A resync stopped cleanly half way (md's checkpoint). */
    md->resync_done = ref->resync_offset * 512 / ref->chunk;
    nbdkit_error ("raid: the array's resync stopped at row %" PRIu64 " of %"
                  PRIu64 ": it goes on from there in the background",
                  md->resync_done, ref->size / ref->chunk);
  }
  else if (md->needs_resync)
    nbdkit_error ("raid: the array was not shut down cleanly: its parity "
                  "will be resynchronised in the background");
}

/* The last step, before md is handed out: its lock, and what the
 * superblocks record now (the member of each role and its state, which
 * states_changed compares the table with), and whether updates may be
 * written.
 */
static void
init_serving (struct members *ms, const struct array_config *cfg,
              struct md_array *md)
{
  pthread_mutex_init (&md->lock, NULL);
  for (int i = 0; i < ms->n; i++) {
    md->written_as[i] = members_at (ms, i)->serial;
    md->states[i] = member_state (members_at (ms, i));
  }
  md->may_write = !cfg->readonly;
}

int
md_array_assemble (struct members *ms, struct array_config *cfg,
                   uint64_t *member_bytes, struct md_array **mdp)
{
  struct md_super *sbs = calloc (ms->n, sizeof *sbs);
  struct md_array *md = calloc (1, sizeof *md);
  const struct md_super *ref = NULL;
  int found, r = -1;

  *mdp = NULL;
  if (sbs == NULL || md == NULL) {
    nbdkit_error ("calloc: %m");
    goto out;
  }
  if (cfg->metadata == METADATA_NONE) {
    r = 0;                      /* raw mode, superblocks or not */
    goto out;
  }
  if (read_all (ms, cfg, sbs, &found) == -1)
    goto out;
  if (cfg->create) {
    r = md_create_check_members (ms, cfg, sbs, member_bytes);
    goto out;
  }
  if (found == 0) {
    /* Never raw mode by guessing: a raw array's members hold whatever
     * its clients wrote, md superblocks included, so raw mode is only
     * ever what metadata=none says.
     */
    if (name_other_formats (ms, cfg, sbs) == 0)
      nbdkit_error ("no member has an md v1.x superblock%s: for an array "
                    "without superblocks (raw mode) give metadata=none; "
                    "create=true makes a new md array", version_place (cfg));
    goto out;
  }
  if (pick_reference (ms, cfg, sbs, &ref) == -1 ||
      check_one_array (ms, cfg, sbs, ref) == -1 ||
      check_geometry (ms, cfg, sbs, ref) == -1 ||
      take_geometry (cfg, ref) == -1)
    goto out;
  members_set_level (ms, ref->level);
  md->ms = ms;
  md->readonly = cfg->readonly;
  md->rows = ref->size / ref->chunk;
  md->sb = *ref;
  md->max_events = ref->events;
  if (order_members (ms, cfg, sbs, ref, md) == -1)
    goto out;
  *member_bytes = ref->data_offset + ref->size;
  if (take_clean (ms, cfg, md, ref) == -1 ||
      load_bitmap (ms, md, ref) == -1 ||
      md_bblog_load (md) == -1)
    goto out;
  plan_resync (md, cfg, ref);
  init_serving (ms, cfg, md);
  *mdp = md;
  md = NULL;
  r = 0;

 out:
  free (sbs);
  if (md)
    md_bitmap_close (md->bitmap);
  free (md);
  return r;
}
