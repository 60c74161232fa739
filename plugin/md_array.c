/* SPDX-License-Identifier: BSD-3-Clause */
/* The array's md metadata while the array serves: keeping its members'
 * md version-1 superblocks (v1.0, v1.1 or v1.2: md_super.c says where
 * each lies) true.  Assembling them (md_assemble.c), creating them
 * (md_create.c), judging a disk offered for a role (md_admit.c) and a
 * member's identity (md_identity.c) live apart; md_array_internal.h says
 * what each file does and holds the struct they share.
 *
 * md knows of the array only its member table (member_table.h), whose order it
 * sets at assembly (members_arrange), and what the superblocks say; every
 * entry point takes the struct md_array, NULL in raw mode.
 *
 * Serving (md_array_write_begin / md_array_flushed / md_array_close).  Like
 * md: before the first write after the array was clean, every working
 * member's superblock is rewritten "active" (resync_offset 0, events + 1);
 * after a flush with no write in flight (array.c tells md_array_flushed,
 * and flushes before md_array_close), "clean" (resync_offset all ones,
 * events - 1 if nothing else changed meanwhile, as md does; see
 * next_events).  Locking: md->lock (lock.h) serialises updates; clean
 * and the writes in flight are atomics read without it.  An array found
 * active at start-up was not shut down cleanly: its parity is
 * resynchronised by a repairing scrub in the background.  Member failures
 * and replacements are written into dev_roles at the next update, and a
 * write or flush during which a member failed is not acknowledged before
 * that update (record_failures: a crash must not find the member that
 * missed it in sync); a replacement takes the lowest free dev_number, as
 * md's do, so the table never outgrows the array (see update).  md owns
 * the write-intent bitmap (md_bitmap.c: loaded at assembly, written with
 * the superblocks' event count, closed here), but marking a write's rows
 * in it and asking which rows need a resync are the row record's
 * (row_record.c); without a bitmap the resync covers the whole array from
 * md's checkpoint on (md_array_resync_done).
 *
 * Every superblock is written through md_identity_write_super, so that a
 * member's identity (what its new connections are checked against)
 * follows it.  A re-added disk (md_admit.c) is announced before it enters
 * the table: the update that finds it keeps its role's dev_number and
 * device UUID (install_replacements).  A new array's superblocks
 * (md_create.c) are written here too, by the first update, in
 * md_array_after_fork: superblocks of other versions are zeroed first on
 * every disk new to the array (wipe), a replacement's included.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "lock.h"
#include "md_array_internal.h"
#include "md_bitmap.h"
#include "member_table.h"
#include "md_super.h"

/* Whether the superblocks say less than is so: a member of a role, or its
 * state, is not what the last update wrote, or a working member's
 * bad-block log changed since (md_bblog.c).
 */
static bool
states_changed (struct md_array *md)
{
  for (int i = 0; i < md->ms->n; i++)
    if (md->written_as[i] != members_at (md->ms, i)->serial ||
        md->states[i] != member_state (members_at (md->ms, i)))
      return true;
  return md_bblog_changed (md);
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
    uint64_t gen;

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
    sb.cnt_corrected_read = md->corrected_base[i] +
      atomic_load_explicit (&m->corrected_reads, memory_order_relaxed) * 8;
    if (md_bblog_write (md, i, m, &sb, &gen) == -1 ||
        md_identity_write_super (m, &sb) == -1) {
      members_io_error (m, MEMBER_WRITE, errno ? errno : EIO);
      r = -1;
      continue;
    }
    md_bblog_written (md, i, m, gen);
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
  checkpoint_resync (md);       /* if a linear resync was under way */
  md_bitmap_close (md->bitmap); /* and clears the bits */
  if (md->ms)                   /* the lock was initialised */
    pthread_mutex_destroy (&md->lock);
  free (md);
}

struct md_bitmap *
md_array_bitmap (const struct md_array *md)
{
  return md ? md->bitmap : NULL;
}

uint32_t
md_array_logical_block_size (const struct md_array *md)
{
  return md ? md->sb.logical_block_size : 0;
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
