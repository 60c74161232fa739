/* SPDX-License-Identifier: BSD-3-Clause */
/* The array's md metadata: assembling an array from its members' md
 * version-1 superblocks (v1.0, v1.1 or v1.2: md_super.c says where each
 * lies), creating superblocks mdadm accepts, and keeping them true while
 * the array serves.
 *
 * md knows of the array only its member table (members.h), whose order it
 * sets at assembly (members_arrange), and what the superblocks say; every
 * entry point takes the struct md_array, NULL in raw mode.
 *
 * Assembling (md_array_assemble, from array_open).  Every member's
 * superblock is read from v1.2's place, or the one metadata-version=
 * names (read_minor: never from a place the array's clients may have
 * written); none at all is an error (raw mode is only ever
 * metadata=none), which names the format a member carries instead (an md
 * v1.0 or v1.1 superblock: the version to give), some but not all is an
 * error.  create=true looks in every place, and refuses a member holding
 * two (md_super_read).  All must carry one set UUID.  The member
 * with the highest event count is the reference: its dev_roles[] maps each
 * member's dev_number to its role, and a member whose own event count is
 * older, or whose role is spare or faulty, is not used (mdadm treats it the
 * same way).  Roles nobody holds are missing members.  Level, layout,
 * chunk, data offset and member size come from the reference; an explicit
 * parameter that disagrees is an error, never a silent override.
 *
 * Serving (md_array_write_begin / md_array_flushed / md_array_close).  Like
 * md: before the first write after the array was clean, every working
 * member's superblock is rewritten "active" (resync_offset 0, events + 1);
 * after a flush with no write in flight (array.c tells md_array_flushed,
 * and flushes before md_array_close), "clean" (resync_offset all ones,
 * events - 1 if nothing else changed meanwhile, as md does; see
 * next_events).  Locking: md->lock (lock.h) serialises updates; clean
 * and the writes in flight are atomics read without it.  An array found active at start-up
 * was not shut down cleanly: its parity is resynchronised by a repairing
 * scrub in the background.  Member failures and replacements are written
 * into dev_roles at the next update, and a write or flush during which a
 * member failed is not acknowledged before that update (record_failures:
 * a crash must not find the member that missed it in sync); a
 * replacement takes the lowest free
 * dev_number, as md's do, so the table never outgrows the array (see
 * update).  With a write-intent bitmap
 * (md_bitmap.c) every write first marks its region, and the resync after
 * an unclean shutdown covers only the marked regions; without one it
 * covers the whole array.
 *
 * Creating (create=true): fresh superblocks of version metadata-version
 * (1.2 unless given) with a new UUID, md's defaults (left-symmetric, 512K
 * chunk unless given) and a 1 MiB data offset unless data-offset is given
 * (v1.0: the data at 0, the bitmap and the superblock after it, at the end
 * of each member); members that already carry a superblock are refused
 * unless force=true, and superblocks of the other versions on them are
 * zeroed when the new ones are written, as mdadm does (so is a
 * replacement's).  The new array is resynchronised in the background.
 * It gets an internal write-intent bitmap unless bitmap=none.  Everything
 * is checked and laid out in memory at config_complete, but nothing is
 * written before md_array_after_fork: between the two nbdkit binds its
 * own socket and writes its pid file, and a failure there must leave the
 * members as they were.
 *
 * Member identity (member.h, design.md section 8).  A member that can
 * reconnect (an NBD export) checks every new connection against what
 * this file last wrote to it: see write_super below.
 *
 * Re-add (md_array_readd_check, md_array_readd_expect; jobs.c runs it).
 * A failed role's own disk, opened again, is accepted as md's
 * super_1_validate accepts a disk coming back into an array with a
 * bitmap: this set's UUID, the role's device UUID and dev_number, events
 * not newer than the array's nor older than md's count at the bitmap's
 * last clearing.  It comes back through the table like a replacement (a
 * new member object), but announced first, so that the update that
 * finds it keeps the role's slot and UUID instead of giving it new ones;
 * while it is resynced its superblock says so as md's does (recovery
 * offset, and 0x80: from the bitmap), and an assembly that finds that
 * resumes it as a re-add.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "lock.h"
#include "md_array.h"
#include "md_bitmap.h"
#include "members.h"
#include "md_super.h"
#include "signature.h"

struct md_array {
  struct members *ms;           /* the array's member table, by role */
  bool readonly;                /* nbdkit -r or readonly=true */
  uint64_t rows;                /* stripe rows: size / chunk */
  pthread_mutex_t lock;         /* lock.h; the fields below, but the
                                   atomics */
  struct md_super sb;           /* array-wide fields: the reference */
  uint32_t dev_number[GEOMETRY_MAX_MEMBERS];   /* by role; UINT32_MAX: none */
  /* By role: the data_size its member's own superblock said at assembly
   * (md sets it per member, from the member's size: a bigger member's
   * would make md refuse a smaller one), kept unless more than the
   * member holds (member_room); 0: member_room.
   */
  uint64_t data_size[GEOMETRY_MAX_MEMBERS];
  uint8_t device_uuid[GEOMETRY_MAX_MEMBERS][16];
  /* The member of each role at the last update (its serial: an address
   * may be reused once a replaced member is reclaimed), and its state
   * then.  Written under lock; md_array_write_begin's fast path reads
   * them without it, so they are atomic.
   */
  _Atomic uint64_t written_as[GEOMETRY_MAX_MEMBERS];
  _Atomic enum member_state states[GEOMETRY_MAX_MEMBERS];
  /* A re-add (md_array_readd_expect): the serial of the member that is
   * about to come back in role i as the disk it was, keeping the role's
   * dev_number and device UUID; 0: none.  Under lock.
   */
  uint64_t readd_serial[GEOMETRY_MAX_MEMBERS];
  /* The serial of role i's member if superblocks of other versions are
   * to be zeroed on it before its first superblock is written (every
   * member of a new array, each replacement); 0: none.  Under lock.
   */
  uint64_t wipe[GEOMETRY_MAX_MEMBERS];
  /* Role i's member was given at start-up but its superblock is stale:
   * it is in its role, failed, for jobs_after_fork to re-add
   * (md_array_stale_at_assembly).  Written only before the table is
   * published.
   */
  bool stale_at_assembly[GEOMETRY_MAX_MEMBERS];
  _Atomic bool clean;           /* as the superblocks say; written under
                                   lock, read without it */
  bool written_clean;           /* what the last update wrote */
  bool can_decrease;            /* the last update only marked it active */
  uint64_t max_events;          /* the highest event count ever written */
  _Atomic bool needs_resync;
  _Atomic uint64_t resync_done; /* no bitmap: rows below are resynced */
  uint64_t checkpoint;          /* resync_offset an active update writes */
  struct md_bitmap *bitmap;     /* NULL: the array has none */
  _Atomic uint64_t writes;      /* in flight */
  /* Whether superblocks may be written at all: not with create=true
   * before the serving process starts (create_pending: see
   * md_array_create), never in read-only mode.
   */
  bool may_write;
  bool create_pending;
};

/* A member's md identity: the superblock a new connection to it must
 * find where the array's version puts it (4 KiB for v1.2; for v1.0 where
 * the member's size puts it), with the same set UUID, device UUID and
 * dev_number, and an event count not behind (a server restarted over an older copy of
 * the disk is behind; an empty or foreign disk has no such superblock).
 * While a superblock is being written (in_flight) either the old one or
 * the new one may be there; and since the read of a new connection is on
 * the wire while superblocks are written, what it reads is judged against
 * the lowest count the disk could hold when the read was sent (begin),
 * not only against what was written by the time the answer came: a read
 * sent before a write and answered after it (found by the soak, seed
 * 796263561) shows the old superblock, which is no older copy of the
 * disk.  It has its own lock, never md->lock: the
 * check runs inside member I/O, which update() does holding md->lock.
 * Only this file gives members identities, so a member's identity, if it
 * has one, is a struct md_identity.
 */
struct md_who {
  uint8_t set_uuid[16], device_uuid[16];
  uint32_t dev_number;
  uint64_t events;              /* at least */
};

struct md_identity {
  struct member_identity base;
  pthread_mutex_t lock;         /* the fields below */
  struct md_who written, writing;
  bool in_flight;               /* writing is being written */
};

static bool
is_who (const struct md_super *sb, const struct md_who *w)
{
  return memcmp (sb->set_uuid, w->set_uuid, 16) == 0 &&
    memcmp (sb->device_uuid, w->device_uuid, 16) == 0 &&
    sb->dev_number == w->dev_number && sb->events >= w->events;
}

/* The lowest event count the disk can hold now: what was last written to
 * it, or what is being written, if lower (md counts back down).
 */
static uint64_t
md_identity_begin (struct member_identity *id)
{
  struct md_identity *mi = (struct md_identity *) id;
  uint64_t floor;

  pthread_mutex_lock (&mi->lock);
  floor = mi->written.events;
  if (mi->in_flight && mi->writing.events < floor)
    floor = mi->writing.events;
  pthread_mutex_unlock (&mi->lock);
  return floor;
}

static const char *
md_identity_verify (struct member_identity *id, uint64_t begun,
                    const void *buf, char *why, size_t whylen)
{
  struct md_identity *mi = (struct md_identity *) id;
  struct md_super sb_buf, *sb = &sb_buf;  /* ~5K: on the stack, so that a
                                             shortage of memory is never
                                             taken for another disk */
  const char *bad = NULL;
  int r;

  r = md_super_parse (buf, sb, &bad);
  if (r == 0)
    bad = "it has no md superblock where the array keeps it";
  else if (r == 1 && sb->super_offset != id->offset)
    bad = "its md superblock says it belongs elsewhere on the disk "
      "(super_offset): another array's";
  else if (r == 1) {
    const struct md_who *w = &mi->written;
    struct md_who then;

    pthread_mutex_lock (&mi->lock);
    then = *w;
    then.events = begun;        /* the disk as it was when the read left */
    if (is_who (sb, w) || (mi->in_flight && is_who (sb, &mi->writing)) ||
        is_who (sb, &then))
      bad = NULL;
    else if (memcmp (sb->set_uuid, w->set_uuid, 16))
      bad = "its md superblock belongs to another array (set UUID)";
    else if (memcmp (sb->device_uuid, w->device_uuid, 16) ||
             sb->dev_number != w->dev_number)
      bad = "its md superblock is another member's (device UUID, dev_number)";
    else {
      snprintf (why, whylen, "its md superblock is behind (events %" PRIu64
                "; the last one written to it had %" PRIu64 "): an older "
                "copy of the disk", sb->events, w->events);
      bad = why;
    }
    pthread_mutex_unlock (&mi->lock);
  }
  return bad;
}

static void
md_identity_free (struct member_identity *id)
{
  struct md_identity *mi = (struct md_identity *) id;

  pthread_mutex_destroy (&mi->lock);
  free (mi);
}

/* sb is on m (written), or is about to be written to it. */
static void
expect_super (struct member *m, const struct md_super *sb, bool written)
{
  struct md_identity *mi = (struct md_identity *) member_identity (m);
  struct md_who w = { .dev_number = sb->dev_number, .events = sb->events };

  memcpy (w.set_uuid, sb->set_uuid, 16);
  memcpy (w.device_uuid, sb->device_uuid, 16);
  if (mi == NULL) {
    uint64_t at = md_super_location (sb->minor, m->size);

    if (!written || at == UINT64_MAX ||
        (mi = calloc (1, sizeof *mi)) == NULL)
      return;                   /* checked from its first superblock on */
    mi->base = (struct member_identity) {
      .offset = at, .len = MD_SB_BYTES,
      .begin = md_identity_begin, .verify = md_identity_verify,
      .free = md_identity_free,
    };
    pthread_mutex_init (&mi->lock, NULL);
    mi->written = w;
    member_set_identity (m, &mi->base);
    return;
  }
  pthread_mutex_lock (&mi->lock);
  if (written)
    mi->written = w;
  else
    mi->writing = w;
  mi->in_flight = !written;
  pthread_mutex_unlock (&mi->lock);
}

/* Write m's superblock, keeping m's identity true meanwhile. */
static int
write_super (struct member *m, const struct md_super *sb)
{
  expect_super (m, sb, false);
  if (md_super_write (m, sb) == -1)
    return -1;
  expect_super (m, sb, true);
  return 0;
}

static void
uuid_text (const uint8_t *u, char *s)
{
  for (int i = 0; i < 16; i++)
    sprintf (s + 2 * i + (i >= 4) + (i >= 8) + (i >= 12), "%02x%s", u[i],
             i == 3 || i == 7 || i == 11 ? ":" : "");
}

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
        expect_super (members_at (ms, i), &sbs[i], true);
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
  struct member *ordered[GEOMETRY_MAX_MEMBERS] = { NULL };
  const char *names[GEOMETRY_MAX_MEMBERS] = { NULL };
  struct member *aside[GEOMETRY_MAX_MEMBERS];
  bool made[GEOMETRY_MAX_MEMBERS] = { false };  /* by member_missing */
  int kept[GEOMETRY_MAX_MEMBERS];       /* stale, to keep their roles */
  int naside = 0, nkept = 0;

  for (int i = 0; i < ms->n; i++) {
    const struct md_super *s = &sbs[i];
    struct member *m = members_at (ms, i);
    int role;

    if (s->role < -1) {         /* missing */
      aside[naside++] = m;
      continue;
    }
    if (s->dev_number >= ref->max_dev) {
      /* md_super_parse refuses a dev_number beyond the member's own
       * max_dev; beyond the newest superblock's it has no role there
       * either, and md never shrinks max_dev: a crafted superblock.
       */
      nbdkit_error ("member %s: bad superblock: its dev_number %" PRIu32
                    " has no slot in the newest superblock (max_dev %" PRIu32
                    ", from member %s)", cfg->disks[i], s->dev_number,
                    ref->max_dev, cfg->disks[ref - sbs]);
      return -1;
    }
    role = ref->dev_roles[s->dev_number];
    if ((stale (s, ref) || role == MD_ROLE_FAULTY) &&
        stale_keeps_role (s, ref, sbs, ms->n)) {
      kept[nkept++] = i;        /* unless a fresh member claims the role */
      continue;
    }
    if (role >= ref->raid_disks || stale (s, ref)) {
      nbdkit_error ("member %s: %s; not used", cfg->disks[i],
                    stale (s, ref) ? "its superblock is stale "
                    "(it failed or was removed earlier)"
                    : role == MD_ROLE_SPARE ? "it is a spare" : "marked faulty");
      aside[naside++] = m;
      continue;
    }
    if (ordered[role]) {
      nbdkit_error ("members %s and %s both claim role %d", names[role],
                    cfg->disks[i], role);
      return -1;
    }
    if (s->feature_map & MD_FEATURE_RECOVERY_OFFSET) {
      /* It was being rebuilt: rows below its recovery offset are good, the
       * rebuild goes on from there (jobs_after_fork); only where the
       * bitmap's bits are set if it was re-added, as md resumes such a
       * recovery (the bits stay until every member is in sync).
       */
      member_start_rebuild (m, s->recovery_offset / ref->chunk);
      m->readd = (s->feature_map & MD_FEATURE_RECOVERY_BITMAP) &&
        (ref->feature_map & MD_FEATURE_BITMAP);
      if (cfg->readonly)
        nbdkit_error ("raid: read-only: member %s was being rebuilt (row %"
                      PRIu64 " of %" PRIu64 "): the rebuild is not resumed, "
                      "its rows from there on are reconstructed from the "
                      "others", cfg->disks[i], member_recovery_stripe (m),
                      ref->size / ref->chunk);
      else
        nbdkit_debug ("raid: member %s resumes its rebuild at row %" PRIu64,
                      cfg->disks[i], member_recovery_stripe (m));
    }
    ordered[role] = m;
    names[role] = cfg->disks[i];
    md->dev_number[role] = s->dev_number;
    md->data_size[role] = s->data_size;
    memcpy (md->device_uuid[role], s->device_uuid, 16);
  }
  newest_first (kept, nkept, sbs);
  for (int k = 0; k < nkept; k++) {
    const struct md_super *s = &sbs[kept[k]];
    struct member *m = members_at (ms, kept[k]);
    int holder = slot_holder (md, ordered, ref->raid_disks, s->dev_number);
    char why[160];

    if (ordered[s->role]) {
      nbdkit_error ("member %s: %s (it failed or was removed earlier), "
                    "and member %s holds its role %d; not used",
                    cfg->disks[kept[k]], stale (s, ref) ?
                    "its superblock is stale" : "marked faulty",
                    names[s->role], s->role);
      aside[naside++] = m;
      continue;
    }
    if (holder >= 0) {
      nbdkit_error ("member %s: %s (it failed or was removed earlier), "
                    "and its slot %" PRIu32 " is member %s's now (role %d); "
                    "not used: 'replace %d PATH' rebuilds role %d",
                    cfg->disks[kept[k]], stale (s, ref) ?
                    "its superblock is stale" : "marked faulty",
                    s->dev_number, names[holder], holder, s->role, s->role);
      aside[naside++] = m;
      continue;
    }
    snprintf (why, sizeof why, "out of date at assembly: %s (events %"
              PRIu64 ", the array's %" PRIu64 ")",
              stale (s, ref) ? "its superblock is stale"
              : "the others marked it faulty", s->events, ref->events);
    member_fail_because (m, why);
    ordered[s->role] = m;
    names[s->role] = cfg->disks[kept[k]];
    md->dev_number[s->role] = s->dev_number;
    md->data_size[s->role] = s->data_size;
    memcpy (md->device_uuid[s->role], s->device_uuid, 16);
    md->stale_at_assembly[s->role] = true;
  }
  for (int r = 0; r < ref->raid_disks; r++)
    if (ordered[r] == NULL) {
      ordered[r] = member_missing ();
      if (ordered[r] == NULL) {
        for (int k = 0; k < r; k++)
          if (made[k])
            member_close (ordered[k]);
        return -1;
      }
      made[r] = true;
      md->dev_number[r] = slot_of_role (ref, r);
      nbdkit_debug ("raid: role %d has no member: degraded", r);
    }
  for (int k = 0; k < naside; k++)
    members_retire (ms, aside[k]);
  members_arrange (ms, ordered, ref->raid_disks);
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

/* Why member m cannot hold what the superblock sb describes (its data,
 * and for v1.0 the bitmap and the superblock after the data), or NULL.
 */
static const char *
cannot_hold (const struct md_super *sb, const struct member *m)
{
  static __thread char msg[256];
  uint64_t end = sb->data_offset + sb->size, room = m->size;

  if (sb->minor == 0) {
    /* v1.0: the data must end before the member's own superblock, and
     * before the bitmap, which precedes it.
     */
    room = md_super_location (0, m->size);
    if (room == UINT64_MAX)
      room = 0;
    else if (sb->feature_map & MD_FEATURE_BITMAP) {
      int64_t bm = (int64_t) room + (int64_t) sb->bitmap_offset * 512;

      room = bm < 0 ? 0 : bm;
    }
  }
  if (end <= room)
    return NULL;
  snprintf (msg, sizeof msg, "is too small: %" PRIu64 " bytes, but the md "
            "superblocks say %" PRIu64 " are used%s", m->size, end,
            sb->minor == 0 ? ", before the bitmap and superblock of md v1.0 "
            "at its end" : "");
  return msg;
}

/* create=true without force=true: every member must be blank of any
 * format we know (an md superblock, a partition table, a filesystem, ...).
 */
static int
refuse_foreign (struct members *ms, const struct array_config *cfg,
                const struct md_super *sbs)
{
  for (int i = 0; i < ms->n; i++) {
    const char *what = NULL;

    if (sbs[i].role == -2)      /* missing, or unreadable: failed */
      continue;
    if (sbs[i].role == -3 &&
        signature_probe (members_at (ms, i), &what) == -1) {
      nbdkit_error ("member %s: cannot read it: %m", cfg->disks[i]);
      return -1;
    }
    if (sbs[i].role >= -1)
      what = sbs[i].minor == 0 ? "an md v1.0 superblock"
        : sbs[i].minor == 1 ? "an md v1.1 superblock" : "an md v1.2 superblock";
    if (what) {
      nbdkit_error ("member %s already carries %s: refusing to overwrite it "
                    "without force=true", cfg->disks[i], what);
      return -1;
    }
  }
  return 0;
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

#define BITMAP_DEFAULT_CHUNK (64 * 1024 * 1024)
#define BITMAP_DEFAULT_ROOM (128 * 1024)
#define BITMAP_DEFAULT_DELAY 5

/* The bitmap chunk for `size` bytes per member and `room` bytes of area. */
static uint64_t
default_bitmap_chunk (uint64_t size, uint64_t room)
{
  uint64_t chunk;

  if (room > BITMAP_DEFAULT_ROOM)
    room = BITMAP_DEFAULT_ROOM;
  for (chunk = BITMAP_DEFAULT_CHUNK;
       md_bitmap_area_bytes (md_bitmap_bits (size, chunk)) > room;
       chunk *= 2)
    ;
  return chunk;
}

/* The smallest v1.0 superblock place of the members (bytes). */
static uint64_t
lowest_v10_place (struct members *ms)
{
  uint64_t low = UINT64_MAX;

  for (int i = 0; i < ms->n; i++) {
    uint64_t at = md_super_location (0, members_at (ms, i)->size);

    if (at < low)
      low = at;
  }
  return low;
}

/* v1.0, create=true: where the data must end on every member (bytes),
 * leaving the bitmap's room before the lowest superblock: the area a
 * bitmap of the chosen (or default) chunk takes for data reaching that
 * superblock, which is at least what it takes for the data that fits.
 * 0 (after nbdkit_error) if the members are too small.
 */
static uint64_t
create_room (struct members *ms, const struct array_config *cfg)
{
  uint64_t low = lowest_v10_place (ms), room = 0, chunk;

  if (low == UINT64_MAX || low < 4096) {
    nbdkit_error ("create=true: metadata-version=1.0: a member is too small "
                  "for a superblock at its end");
    return 0;
  }
  if (!cfg->no_bitmap) {
    chunk = cfg->bitmap_chunk ? cfg->bitmap_chunk
      : default_bitmap_chunk (low, BITMAP_DEFAULT_ROOM);
    room = md_bitmap_area_bytes (md_bitmap_bits (low, chunk));
    if (room >= low) {
      nbdkit_error ("create=true: metadata-version=1.0: no room for the "
                    "write-intent bitmap before the superblock (give a "
                    "bigger bitmap-chunk, or bitmap=none)");
      return 0;
    }
  }
  return low - room;
}

int
md_array_assemble (struct members *ms, struct array_config *cfg,
                   uint64_t *member_bytes, struct md_array **mdp)
{
  const char *why;
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
    r = cfg->force ? 0 : refuse_foreign (ms, cfg, sbs);
    if (r == 0 && cfg->set_metadata_version && cfg->metadata_minor == 0 &&
        (*member_bytes = create_room (ms, cfg)) == 0)
      r = -1;
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
      goto out;
    }
    if (sbs[i].role >= -1 && (ref == NULL || sbs[i].events > ref->events))
      ref = &sbs[i];
  }
  for (int i = 0; i < ms->n; i++)
    if (sbs[i].role >= -1 && memcmp (sbs[i].set_uuid, ref->set_uuid, 16)) {
      char u1[40], u2[40];

      uuid_text (sbs[i].set_uuid, u1);
      uuid_text (ref->set_uuid, u2);
      nbdkit_error ("member %s belongs to another array (UUID %s, not %s)",
                    cfg->disks[i], u1, u2);
      goto out;
    }
    else if (sbs[i].role >= -1 && sbs[i].minor != ref->minor) {
      nbdkit_error ("member %s has an md v1.%d superblock, member %s v1.%d: "
                    "one array's members have one version", cfg->disks[i],
                    sbs[i].minor, cfg->disks[ref - sbs], ref->minor);
      goto out;
    }
    else if (sbs[i].role >= -1 && sbs[i].data_offset != ref->data_offset) {
      nbdkit_error ("member %s: data offsets differ between members, which "
                    "is not supported", cfg->disks[i]);
      goto out;
    }
  if ((why = impossible (ref)) != NULL) {
    nbdkit_error ("md superblocks: %s", why);
    goto out;
  }
  for (int i = 0; i < ms->n; i++)
    if (sbs[i].role >= -1 &&
        (why = cannot_hold (ref, members_at (ms, i))) != NULL) {
      nbdkit_error ("member %s %s", cfg->disks[i], why);
      goto out;
    }
  if (take_geometry (cfg, ref) == -1)
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
      goto out;
    }
    nbdkit_error ("raid: starting a dirty degraded array (force=true)");
    md->needs_resync = false;
  }
  if (load_bitmap (ms, md, ref) == -1)
    goto out;
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
  pthread_mutex_init (&md->lock, NULL);
  for (int i = 0; i < ms->n; i++) {
    md->written_as[i] = members_at (ms, i)->serial;
    md->states[i] = member_state (members_at (ms, i));
  }
  md->may_write = !cfg->readonly;
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

static bool
states_changed (struct md_array *md)
{
  for (int i = 0; i < md->ms->n; i++)
    if (md->written_as[i] != members_at (md->ms, i)->serial ||
        md->states[i] != member_state (members_at (md->ms, i)))
      return true;
  return false;
}

/* The event count of the next update.  Like md, an update that only
 * marks the array clean again right after one that only marked it active
 * takes the count back down, so that an array going active and clean
 * over and over keeps two counts, and the bitmap, one ahead, need not be
 * rewritten each time.  Marking it active again goes one up, to the count
 * every working member wrote last time (the update that went down reached
 * them all, or it was repeated counting up).  Any other update counts up
 * from the highest count ever written, so that a member that missed it is
 * behind.
 */
static bool
next_events (struct md_array *md, bool clean,
             bool roles_changed)
{
  bool toggle = !states_changed (md) && !roles_changed &&
    clean != md->written_clean;
  bool down = toggle && clean && md->can_decrease;

  if (down)
    md->sb.events--;
  else if (toggle)              /* back up to the count every member had */
    md->sb.events++;
  else
    md->sb.events = md->max_events + 1;
  if (md->sb.events > md->max_events)
    md->max_events = md->sb.events;
  md->can_decrease = toggle && !clean;
  return down;
}

/* Member numbers and roles, as md keeps them (md.c: bind_rdev_to_array,
 * super_1_sync).  A member's dev_number is its slot in dev_roles[]; every
 * update writes the whole table afresh: every slot spare, then each
 * current member's slot its role, or faulty if it has failed.  A member
 * that is gone (replaced, or absent at start-up and then replaced) leaves
 * its slot spare, and a replacement takes the lowest slot free, so the
 * numbers stay below raid_disks plus a few and max_dev only grows to
 * what is used (never past MD_MAX_DEV: the parser's limit, and mdadm's).
 *
 * Reusing a slot is safe only once the superblocks already say that its
 * old holder is no longer in its role: the old holder's own superblock
 * still names the slot, and an assembly accepts a member one event
 * behind.  So a slot is free when no current member holds it and the last
 * update wrote it as no role (spare or faulty); when a replacement's
 * predecessor is still written in its role (it failed since the last
 * update, by an I/O error), one update first records it faulty, and the
 * replacement is installed by a second one.  The old member is then two
 * events behind the slot's new holder: stale, never taken for it.
 */
static bool
slot_free (const struct md_array *md, uint32_t d)
{
  for (int j = 0; j < md->ms->n; j++)
    if (md->dev_number[j] == d)
      return false;
  return d >= md->sb.max_dev || md->sb.dev_roles[d] >= md->sb.raid_disks;
}

static bool
replaced (const struct md_array *md, int i)
{
  return md->written_as[i] != members_at (md->ms, i)->serial;
}

/* A replacement whose predecessor's slot is still written as its role. */
static bool
predecessor_unrecorded (const struct md_array *md)
{
  for (int i = 0; i < md->ms->n; i++) {
    uint32_t d = md->dev_number[i];

    if (replaced (md, i) && d < md->sb.max_dev &&
        md->sb.dev_roles[d] < md->sb.raid_disks)
      return true;
  }
  return false;
}

/* Give each replacement the lowest free slot and a new device UUID.
 * Returns -1 if some got none: every slot below MD_MAX_DEV is held or
 * still listed as a role, which only superblocks crafted with duplicate
 * roles can cause; once an update has rewritten those, `last` fails a
 * replacement that still finds none.
 */
static int
install_replacements (struct md_array *md, bool last)
{
  int r = 0;

  for (int i = 0; i < md->ms->n; i++) {
    struct member *m = members_at (md->ms, i);
    uint32_t d;

    if (md->written_as[i] == m->serial)
      continue;
    if (md->readd_serial[i] == m->serial) {
      /* The disk comes back as itself: its slot and UUID stay, as with
       * mdadm --re-add.
       */
      md->readd_serial[i] = 0;
      md->written_as[i] = m->serial;
      continue;
    }
    md->dev_number[i] = UINT32_MAX;     /* the predecessor leaves */
    md->data_size[i] = 0;
    for (d = 0; d < MD_MAX_DEV && !slot_free (md, d); d++)
      ;
    if (d < MD_MAX_DEV) {
      md->dev_number[i] = d;
      getrandom (md->device_uuid[i], 16, 0);
      md->written_as[i] = m->serial;
      md->wipe[i] = m->serial;
    }
    else if (last) {
      nbdkit_error ("member %s: no free dev_number below %d for it",
                    m->name, MD_MAX_DEV);
      member_fail_because (m, "no free dev_number");
      md->written_as[i] = m->serial;
    }
    else
      r = -1;
  }
  return r;
}

/* The dev_roles[] and max_dev an update writes (see above), from the
 * member states `seen`.  Until it is installed, a replacement's role
 * shows its predecessor, failed.
 */
static void
table (const struct md_array *md, const enum member_state *seen,
       struct md_super *sb)
{
  for (uint32_t d = 0; d < MD_MAX_DEV; d++)
    sb->dev_roles[d] = MD_ROLE_SPARE;
  sb->max_dev = md->sb.max_dev;
  for (int i = 0; i < md->ms->n; i++) {
    uint32_t d = md->dev_number[i];

    if (d == UINT32_MAX)
      continue;
    sb->dev_roles[d] =
      replaced (md, i) || seen[i] == MEMBER_FAILED
      ? MD_ROLE_FAULTY : (uint16_t) i;
    if (d >= sb->max_dev)
      sb->max_dev = d + 1;
  }
}

/* The data_size of a member new to the array (created, or a
 * replacement), as mdadm works it out: what the member holds from the
 * data offset on, up to its end (v1.1, v1.2), or up to its bitmap or
 * superblock (v1.0), in whole sectors.  md's super_1_load refuses a
 * member whose data_size is more than that.
 */
static uint64_t
member_room (const struct md_array *md, const struct member *m)
{
  const struct md_super *sb = &md->sb;
  uint64_t end = m->size / 512 * 512;

  if (sb->minor == 0) {
    end = md_super_location (0, m->size);
    if (sb->feature_map & MD_FEATURE_BITMAP)
      end += (int64_t) sb->bitmap_offset * 512;
  }
  return end > sb->data_offset + sb->size ? end - sb->data_offset : sb->size;
}

/* Write the superblock of every working member, but replacements not
 * yet installed; lock held.
 */
static int
write_all (struct md_array *md, bool clean)
{
  struct md_super sb = md->sb;
  enum member_state seen[GEOMETRY_MAX_MEMBERS];
  bool changed, down;
  int r = 0;

  /* What these superblocks record, and so what md->states says was
   * recorded: the states before anything is written.  A member that
   * fails while they are written (the bitmap's events below, or its own
   * superblock) is in none of them, and states_changed goes on saying so
   * until an update records it.
   */
  for (int i = 0; i < md->ms->n; i++)
    seen[i] = member_state (members_at (md->ms, i));
  table (md, seen, &sb);
  changed = sb.max_dev != md->sb.max_dev ||
    memcmp (sb.dev_roles, md->sb.dev_roles, sb.max_dev * sizeof *sb.dev_roles);
  down = next_events (md, clean, changed);
  sb.events = md->sb.events;
  sb.utime = time (NULL);
  sb.resync_offset = clean ? UINT64_MAX : md->checkpoint;
  md->sb.max_dev = sb.max_dev;
  memcpy (md->sb.dev_roles, sb.dev_roles, sizeof sb.dev_roles);
  /* md accepts a bitmap one event ahead of the superblocks, not behind. */
  if (md->bitmap && md_bitmap_events (md->bitmap, sb.events) == -1)
    r = -1;
  for (int i = 0; i < md->ms->n; i++) {
    struct member *m = members_at (md->ms, i);
    enum member_state st = member_state (m);

    if (replaced (md, i))
      continue;
    md->states[i] = seen[i];
    if (st == MEMBER_FAILED)
      continue;
    sb.dev_number = md->dev_number[i];
    sb.data_size = member_room (md, m);
    if (md->data_size[i] && md->data_size[i] < sb.data_size)
      sb.data_size = md->data_size[i];
    memcpy (sb.device_uuid, md->device_uuid[i], 16);
    sb.feature_map = md->sb.feature_map &
      ~(MD_FEATURE_RECOVERY_OFFSET | MD_FEATURE_RECOVERY_BITMAP);
    sb.recovery_offset = 0;
    if (st == MEMBER_REBUILDING) {
      /* As md's super_1_sync: a re-add's recovery is marked as one from
       * the bitmap, so that an assembly resumes it as such; but not that
       * of a disk whose rows past some point were never rebuilt
       * (readd_whole_from), which md must rebuild whole from its offset.
       */
      sb.feature_map |= MD_FEATURE_RECOVERY_OFFSET;
      if (m->readd && md->bitmap && m->readd_whole_from == UINT64_MAX)
        sb.feature_map |= MD_FEATURE_RECOVERY_BITMAP;
      sb.recovery_offset = member_recovery_stripe (m) * md->sb.chunk;
    }
    if (md->wipe[i] == m->serial) {
      /* A disk new to the array: a superblock of another version left on
       * it would make the next assembly refuse it (md_super_read).
       */
      int n = md_super_wipe_others (m, sb.minor);

      if (n > 0)
        nbdkit_debug ("raid: member %s: zeroed %d md superblock(s) of "
                      "another version", m->name, n);
      if (n == -1) {
        members_io_error (m, MEMBER_WRITE, errno ? errno : EIO);
        r = -1;
        continue;
      }
      md->wipe[i] = 0;
    }
    if (write_super (m, &sb) == -1) {
      members_io_error (m, MEMBER_WRITE, errno ? errno : EIO);
      r = -1;
    }
  }
  md->clean = md->written_clean = clean;
  /* A member that failed now may hold the count before this one, which
   * went down: count up past both, recording the failure.
   */
  if (r == -1 && down)
    write_all (md, clean);
  return r;
}

/* Bring every working member's superblock up to md's state; lock held. */
static int
update (struct md_array *md, bool clean)
{
  int r = 0;

  if (!md->may_write)
    return 0;

  if (predecessor_unrecorded (md))
    r |= write_all (md, clean);
  if (install_replacements (md, false) == -1) {
    r |= write_all (md, clean);
    install_replacements (md, true);
  }
  r |= write_all (md, clean);
  return r;
}

void
md_array_write_begin (struct md_array *md)
{
  if (md == NULL)
    return;
  /* Pairs with md_array_flushed: either this sees clean (and takes the
   * slow path) or the flush sees this write in flight (and stays active).
   * Both sides are sequentially consistent (plain _Atomic accesses).
   */
  md->writes++;
  if (md->clean || states_changed (md)) {
    ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&md->lock);

    if (md->clean || states_changed (md))
      update (md, false);
  }
}

/* Before a write or a flush is acknowledged: a member that failed while
 * it ran missed it (or may not have made it durable), so the superblocks
 * must say that member is faulty first.  Otherwise a crash right after
 * the reply assembles the member as in sync, and the resync that follows
 * takes its old data for the truth: the acknowledged write is lost.  md
 * holds a write's completion back the same way until the superblock that
 * records the failure is written (MD_SB_CHANGE_PENDING).
 */
static void
record_failures (struct md_array *md)
{
  if (states_changed (md)) {
    ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&md->lock);

    /* Again while members fail during the update itself; each round
     * records at least one more failure, so n rounds are enough.
     */
    for (int k = 0; k <= md->ms->n && states_changed (md); k++)
      update (md, md->clean);
  }
}

void
md_array_write_end (struct md_array *md)
{
  if (md == NULL)
    return;
  record_failures (md);
  md->writes--;
}

/* After a successful flush: clean, if nothing is being written; a member
 * that failed meanwhile is recorded either way.
 */
void
md_array_flushed (struct md_array *md)
{
  if (md == NULL)
    return;

  {
    ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&md->lock);

    if ((!md->clean || states_changed (md)) && !md->needs_resync) {
      /* Say clean before looking for writes in flight, so that a write
       * starting meanwhile sees it and waits for the lock to mark the
       * array active again (see md_array_write_begin).
       */
      md->clean = true;
      if (md->writes == 0)
        update (md, true);
      else
        md->clean = false;
    }
  }
  record_failures (md);         /* still active, or resyncing */
}

/* Member states changed (failure, replacement, rebuild progress). */
void
md_array_states_changed (struct md_array *md)
{
  if (md == NULL)
    return;

  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&md->lock);
  update (md, md->clean);
}

void
md_array_resynced (struct md_array *md)
{
  if (md) {
    md->needs_resync = false;
    md_array_flushed (md);
  }
}

bool
md_array_needs_resync (const struct md_array *md)
{
  return md && md->needs_resync;
}

bool
md_array_is_clean (struct md_array *md)
{
  return md == NULL || (md->clean && !states_changed (md));
}

/* Without a bitmap the resync goes over the rows in order (row_record.c),
 * from where a clean stop left it (resync_done), and a clean stop records
 * how far it got (md_array_close).
 */
uint64_t
md_array_resync_done (struct md_array *md)
{
  return md ? atomic_load_explicit (&md->resync_done, memory_order_acquire)
    : 0;
}

void
md_array_resync_reached (struct md_array *md, uint64_t row)
{
  if (md)
    atomic_store_explicit (&md->resync_done, row + 1, memory_order_release);
}

/* Stopping while the resync of an array without a bitmap is under way:
 * record how far it got, as md does in resync_offset, so that the next
 * start goes on from there.
 */
static void
checkpoint_resync (struct md_array *md)
{
  uint64_t done = atomic_load_explicit (&md->resync_done,
                                        memory_order_acquire);

  if (!md->needs_resync || md->bitmap || done == 0 || md->writes != 0)
    return;
  {
    ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&md->lock);

    md->checkpoint = done * md->sb.chunk / 512;
    update (md, false);
  }
  nbdkit_debug ("raid: resync stopped at row %" PRIu64 " (recorded)", done);
}

bool
md_array_bitmap_stats (struct md_array *md, struct md_bitmap_stats *st)
{
  if (md == NULL || md->bitmap == NULL)
    return false;
  md_bitmap_stats (md->bitmap, st);
  return true;
}

int
md_array_after_fork (struct md_array *md)
{
  int r = 0;

  if (md == NULL)
    return 0;
  if (!md->may_write && !md->create_pending)
    return 0;                   /* read-only: no bitmap clearing either */
  if (md->create_pending) {
    pthread_mutex_lock (&md->lock);
    md->create_pending = false;
    md->may_write = true;
    r = update (md, false);
    pthread_mutex_unlock (&md->lock);
    if (r == -1) {
      nbdkit_error ("create: writing the superblocks failed");
      return -1;
    }
    nbdkit_debug ("raid: created md array, events %" PRIu64, md->sb.events);
  }
  return md->bitmap ? md_bitmap_start_daemon (md->bitmap) : 0;
}

/* The array has flushed (array_close), which marked it clean if it could
 * be; what is left is md's own: a resync's checkpoint, the bitmap's last
 * clearing.
 */
void
md_array_close (struct md_array *md)
{
  if (md == NULL)
    return;
  if (md->readonly)
    for (int i = 0; i < md->ms->n; i++)
      if (member_failed (members_at (md->ms, i)) &&
          md->states[i] != MEMBER_FAILED)
        nbdkit_error ("raid: read-only: member %s failed while serving; the "
                      "superblocks do not record it",
                      members_at (md->ms, i)->name);
  checkpoint_resync (md);       /* unless a resync was under way */
  md_bitmap_close (md->bitmap); /* and clears the bits */
  if (md->ms)                   /* the lock was initialised */
    pthread_mutex_destroy (&md->lock);
  free (md);
}

/* A new internal bitmap where mdadm places it: 4 KiB after the
 * superblock (8 KiB from the start for v1.2, 4 KiB for v1.1), or for
 * v1.0 right before the superblock, in the room md_array_assemble left
 * between the data and the superblock of the smallest member
 * (create_room).  Its chunk, unless given, is mdadm's default: 64 MiB,
 * doubled until the bitmap takes at most 128 KiB.  If there is no room
 * for it, the array has none, unless one was asked for.
 */
static int
create_bitmap (struct md_array *md, const struct array_config *cfg)
{
  struct md_super *sb = &md->sb;
  struct md_bitmap_place place = {
    .minor = sb->minor, .data_offset = sb->data_offset, .size = sb->size,
    .chunk = sb->chunk,
  };
  uint64_t after = md_super_location (sb->minor, UINT64_MAX) + MD_SB_BYTES;
  uint64_t room, chunk = cfg->bitmap_chunk;
  const char *why;

  if (sb->minor == 0)
    room = lowest_v10_place (md->ms) - (sb->data_offset + sb->size);
  else
    room = sb->data_offset < after ? 0 : sb->data_offset - after;
  if (room < 4096) {
    if (!cfg->set_bitmap) {     /* only the default: go without, as mdadm */
      nbdkit_debug ("raid: create: no room for a bitmap before data-offset");
      return 0;
    }
    nbdkit_error ("create=true: data-offset leaves no room for a write-intent "
                  "bitmap (give a bigger data-offset, or bitmap=none)");
    return -1;
  }
  if (chunk == 0)
    chunk = default_bitmap_chunk (sb->size, room);
  if (sb->minor == 0)
    /* Right before each member's superblock: the area's size in sectors. */
    place.bitmap_offset = -(int32_t) (md_bitmap_area_bytes
                                      (md_bitmap_bits (sb->size, chunk)) / 512);
  else
    place.bitmap_offset = MD_SB_BYTES / 512;
  md->bitmap = md_bitmap_new (md->ms, &place, sb->set_uuid, chunk,
                              cfg->bitmap_delay ? cfg->bitmap_delay
                              : BITMAP_DEFAULT_DELAY, &why);
  if (md->bitmap == NULL) {
    nbdkit_error ("create=true: write-intent bitmap: %s%s", why,
                  cfg->bitmap_chunk ? " (give a bigger bitmap-chunk or "
                  "data-offset)" : "");
    return -1;
  }
  sb->feature_map |= MD_FEATURE_BITMAP;
  sb->bitmap_offset = place.bitmap_offset;
  nbdkit_debug ("raid: bitmap: %" PRIu64 " bytes per bit", chunk);
  return 0;
}

int
md_array_create (struct members *ms, const struct geometry *g,
                 const struct array_config *cfg, struct md_array **mdp)
{
  struct md_array *md = calloc (1, sizeof *md);
  struct md_super *sb;

  if (md == NULL) {
    nbdkit_error ("calloc: %m");
    return -1;
  }
  md->ms = ms;
  md->rows = g->stripes;
  sb = &md->sb;
  getrandom (sb->set_uuid, 16, 0);
  strcpy (sb->set_name, "nbdkit-raid");
  sb->minor = cfg->set_metadata_version ? cfg->metadata_minor : 2;
  sb->level = g->level;
  sb->layout = g->layout;
  sb->chunk = g->chunk;
  sb->raid_disks = ms->n;
  sb->size = g->stripes * g->chunk;
  sb->data_offset = g->data_offset;
  sb->data_size = sb->size;
  sb->ctime = sb->utime = time (NULL);
  sb->events = 0;
  sb->max_dev = ms->n;
  for (int i = 0; i < MD_MAX_DEV; i++)
    sb->dev_roles[i] = MD_ROLE_SPARE;
  for (int i = 0; i < ms->n; i++) {
    md->dev_number[i] = i;
    sb->dev_roles[i] = i;
    getrandom (md->device_uuid[i], 16, 0);
    md->written_as[i] = members_at (ms, i)->serial;
    md->wipe[i] = members_at (ms, i)->serial;
  }
  pthread_mutex_init (&md->lock, NULL);
  md->needs_resync = true;
  md->create_pending = true;    /* written by md_array_after_fork */
  *mdp = md;
  if (!cfg->no_bitmap && create_bitmap (md, cfg) == -1)
    return -1;
  return 0;
}

/* Re-add (md.c's super_1_validate and mdadm --re-add, in their spirit):
 * the superblock m carries must be role i's own, with the set UUID, the
 * device UUID and the dev_number the array keeps for the role, and an
 * event count no newer than the array's; and the write-intent bitmap
 * must cover what it missed: there is one, and its bits were not cleared
 * since m's superblock was written (events >= md's count at the last
 * clearing).  Nothing is written; on success m is given the identity its
 * new connections are checked against (expect_super).
 */
static const char *
readd_refusal (struct md_array *md, int i, const struct md_super *sb,
               uint64_t floor, char *msg, size_t len)
{
  if (memcmp (sb->set_uuid, md->sb.set_uuid, 16))
    return "it is a different disk: its md superblock belongs to another "
      "array (set UUID)";
  if (md->dev_number[i] == UINT32_MAX ||
      memcmp (sb->device_uuid, md->device_uuid[i], 16) ||
      sb->dev_number != md->dev_number[i])
    return "it is a different disk: its md superblock is another member's "
      "(device UUID, dev_number)";
  if (sb->events > md->max_events) {
    snprintf (msg, len, "its md superblock is newer than the array's "
              "(events %" PRIu64 " > %" PRIu64 "): it was used elsewhere",
              sb->events, md->max_events);
    return msg;
  }
  if (sb->events < floor) {
    snprintf (msg, len, "%s cannot prove its content: its md superblock "
              "(events %" PRIu64 ") is older than %s (events %" PRIu64 "), "
              "so it may miss writes %s", md->bitmap ?
              "the write-intent bitmap" : "the record of missed rows (in "
              "memory: the array has no bitmap)", sb->events,
              md->bitmap ? "the bitmap's last clearing" :
              "the record's start or last clearing", floor, md->bitmap ?
              "whose bits are gone" : "that were never recorded");
    return msg;
  }
  return NULL;
}

/* The row from which m's content is unknown: a member that failed
 * during a full rebuild (recovery offset, not from the bitmap) was
 * written only below its recovery offset, and the bitmap holds only what
 * it missed since, not the rows its rebuild never reached.
 */
static uint64_t
readd_whole_from (const struct md_array *md, const struct md_super *sb)
{
  if ((sb->feature_map & MD_FEATURE_RECOVERY_OFFSET) &&
      !(sb->feature_map & MD_FEATURE_RECOVERY_BITMAP))
    return sb->recovery_offset / md->sb.chunk;
  return UINT64_MAX;
}

int
md_array_readd_check (struct md_array *md, int i, struct member *m,
                      uint64_t floor, uint64_t *whole_from, char *msg,
                      size_t len)
{
  struct md_super *sb;
  const char *why = NULL;
  int r;

  if ((sb = malloc (sizeof *sb)) == NULL) {
    snprintf (msg, len, "out of memory");
    return -1;
  }
  r = md_super_read (m, md->sb.minor, sb, &why);
  if (r == -2)
    snprintf (msg, len, "cannot read its md superblock: %s",
              strerror (errno ? errno : EIO));
  else if (r == -1)
    snprintf (msg, len, "it is a different disk: its md superblock cannot "
              "be used (%s)", why);
  else if (r == 0)
    snprintf (msg, len, "it is a different disk: it has no md superblock");
  else {
    ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&md->lock);

    why = readd_refusal (md, i, sb, floor, msg, len);
    if (why && why != msg)
      snprintf (msg, len, "%s", why);
    if (why == NULL) {
      expect_super (m, sb, true);
      *whole_from = readd_whole_from (md, sb);
    }
  }
  free (sb);
  return r == 1 && why == NULL ? 0 : -1;
}

bool
md_array_stale_at_assembly (const struct md_array *md, int i)
{
  return md && md->stale_at_assembly[i];
}

void
md_array_readd_expect (struct md_array *md, int i, uint64_t serial)
{
  if (md == NULL)
    return;

  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&md->lock);
  md->readd_serial[i] = serial;
}

struct md_bitmap *
md_array_bitmap (const struct md_array *md)
{
  return md ? md->bitmap : NULL;
}

uint64_t
md_array_events (struct md_array *md)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&md->lock);
  /* Active right after clean, the count may go back down to the clean
   * one (next_events), which is then what the members say.
   */
  return md->sb.events - (md->can_decrease ? 1 : 0);
}

/* Whether m, offered as a replacement, belongs to something else: an md
 * superblock of another set (of any set, for a raw array), one we cannot
 * read, or any other format signature.c knows.  A disk of this array's
 * own set is not foreign: it is coming back.  Returns 1 with what it
 * carries in msg, 0 if it is blank or ours, -1 (errno) if m cannot be
 * read.
 */
int
md_array_foreign (const struct md_array *md, struct member *m, char *msg,
                  size_t len)
{
  struct md_super *sb = malloc (sizeof *sb);
  const char *why = NULL, *what = NULL;
  char u[40];
  int r, foreign = -1;

  if (sb == NULL)
    return -1;
  r = md_super_read (m, MD_MINOR_ANY, sb, &why);
  if (r == 1 && md && memcmp (sb->set_uuid, md->sb.set_uuid, 16) == 0)
    foreign = 0;
  else if (r == 1) {
    uuid_text (sb->set_uuid, u);
    snprintf (msg, len, md ? "an md superblock of another array (UUID %s)"
              : "an md superblock (array UUID %s)", u);
    foreign = 1;
  }
  else if (r == -1) {
    snprintf (msg, len, "an md superblock that cannot be used (%s)", why);
    foreign = 1;
  }
  else if (r == 0 && (r = signature_probe (m, &what)) >= 0) {
    if (r == 1)
      snprintf (msg, len, "%s", what);
    foreign = r;
  }
  free (sb);
  return foreign;
}

const char *
md_array_cannot_hold (const struct md_array *md, const struct member *m)
{
  return md ? cannot_hold (&md->sb, m) : NULL;
}
