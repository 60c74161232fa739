/* SPDX-License-Identifier: BSD-3-Clause */
/* md's insides, shared by its files (md_array.h is what the rest of the
 * plugin sees; every one of its functions takes the struct md_array,
 * NULL in raw mode):
 *
 *   md_identity.c  a member's identity: the superblock a new connection
 *                  to it must find (the last one written to it)
 *   md_array.c     serving: the superblock updates (active, clean,
 *                  failures, replacements), the bitmap's lifecycle and
 *                  the linear resync's checkpoint, after_fork and close
 *   md_admit.c     a disk offered for a role: re-add, another array's or
 *                  format's, too small
 *   md_create.c    create=true: the members' checks, then new superblocks
 *                  and bitmap laid out in memory
 *   md_assemble.c  assembly: the members' superblocks read, put in role
 *                  order, the geometry taken, the struct md_array made
 *
 * Each file uses only the ones above it in this list, and md_array.c,
 * md_admit.c and md_create.c use none of each other: assembly and create
 * make the struct, md_array.c keeps the superblocks true from it, and
 * md_admit.c judges disks against it.  The fields' comments say who
 * writes them and under which lock (md->lock, lock.h: 3).
 */

#ifndef RAID_MD_ARRAY_INTERNAL_H
#define RAID_MD_ARRAY_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "array_config.h"
#include "geometry.h"
#include "md_array.h"
#include "md_badblocks.h"
#include "md_super.h"
#include "member_table.h"

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
  /* Role i's bad-block log (md_bblog.c): where its member's superblock
   * says it is (none: no log), whether that superblock said it holds
   * entries (0x8, assembly only), the set's generation last written to
   * it and the member it was written to (a new member's log has not been
   * written yet), and md's count of the sectors corrected on it before
   * this start (cnt_corrected_read).  The places under lock; written
   * generations are atomics, read by md_bblog_changed without it.
   */
  struct md_badblocks_place bblog[GEOMETRY_MAX_MEMBERS];
  bool bblog_entries[GEOMETRY_MAX_MEMBERS];
  _Atomic uint64_t bblog_written[GEOMETRY_MAX_MEMBERS];
  _Atomic uint64_t bblog_written_serial[GEOMETRY_MAX_MEMBERS];
  uint32_t corrected_base[GEOMETRY_MAX_MEMBERS];
  /* Hot spares (md_array_spare_add): each member in no role that md
   * writes a superblock to, with role spare (dev_roles[dev_number] =
   * 0xffff), as md writes one for every device of the array.  m stays
   * open while it is here: jobs.c takes it out (md_array_spare_gone, or
   * install_replacements when it takes a role) before it may be closed.
   * taking: the role it is about to take (md_array_spare_takes), whose
   * update keeps its dev_number and device UUID, as md keeps a spare's
   * desc_nr when it activates it; -1: none.  Under lock.
   */
  int nspares;
  struct md_spare {
    struct member *m;
    uint64_t serial;
    uint32_t dev_number;
    uint8_t device_uuid[16];
    uint64_t data_size;         /* its own superblock's, or 0: member_room */
    bool wipe;                  /* other versions' superblocks to zero */
    bool bitmap_due;            /* the bitmap to write (md_bitmap.c) */
    int taking;
  } spare[MEMBERS_MAX_SPARES];
  _Atomic bool clean;           /* as the superblocks say; written under
                                   lock, read without it */
  bool written_clean;           /* what the last update wrote */
  bool can_decrease;            /* the last update only marked it active */
  uint64_t max_events;          /* the highest event count ever written */
  _Atomic bool needs_resync;
  _Atomic uint64_t resync_done; /* no bitmap: rows below are resynced */
  uint64_t checkpoint;          /* resync_offset an active update writes */
  struct md_bitmap *bitmap;     /* NULL: the array has none */
  uint64_t bitmap_sectors;      /* its area on each member (0: none) */
  _Atomic uint64_t writes;      /* in flight */
  /* Whether superblocks may be written at all: not with create=true
   * before the serving process starts (create_pending: see
   * md_array_create), never in read-only mode.
   */
  bool may_write;
  bool create_pending;
};

/* md_identity.c: m's identity becomes superblock sb, which is on m
 * (written) or about to be written to it; and the write of sb to m that
 * keeps the identity true meanwhile (-1, errno: the write failed).
 */
void md_identity_expect (struct member *m, const struct md_super *sb,
                         bool written);
int md_identity_write_super (struct member *m, const struct md_super *sb);

/* md_bblog.c: every member's bad-block log read at assembly (after the
 * bitmap is loaded: a log must not lie over it), 0 or -1 after
 * nbdkit_error naming the member; and at an update, role i's log written
 * (if it changed) before its superblock sb, whose log fields it sets
 * (-1, errno: the write failed), then acknowledged once sb is on disk
 * (generation: the set's generation now on the member, which
 * md_bblog_write says);
 * md_bblog_changed: whether some working member's log changed since it
 * was written (lock-free, for states_changed).
 */
int md_bblog_load (struct md_array *md);
int md_bblog_write (struct md_array *md, int i, struct member *m,
                    struct md_super *sb, uint64_t *generation);
void md_bblog_written (struct md_array *md, int i, struct member *m,
                       uint64_t generation);
bool md_bblog_changed (struct md_array *md);

/* md_admit.c: why member m cannot hold what superblock sb describes (its
 * data, and for v1.0 the bitmap and the superblock after the data), or
 * NULL; the text lives until the thread's next call.
 */
const char *md_admit_cannot_hold (const struct md_super *sb,
                                  const struct member *m);

/* md_create.c: create=true, from md_array_assemble once every member's
 * superblocks are read (sbs[i].role: -2 missing or failed, -3 none): the
 * members must be blank unless force=true, and for v1.0 *member_bytes
 * becomes where the data must end.  0, or -1 after nbdkit_error.
 */
int md_create_check_members (struct members *ms,
                             const struct array_config *cfg,
                             const struct md_super *sbs,
                             uint64_t *member_bytes);

/* A UUID as mdadm prints it (8:8:8:8 hex digits) into s (36 bytes). */
static inline void
uuid_text (const uint8_t *u, char *s)
{
  for (int i = 0; i < 16; i++)
    sprintf (s + 2 * i + (i >= 4) + (i >= 8) + (i >= 12), "%02x%s", u[i],
             i == 3 || i == 7 || i == 11 ? ":" : "");
}

#endif /* RAID_MD_ARRAY_INTERNAL_H */
