/* SPDX-License-Identifier: BSD-3-Clause */
/* The member table of an array (struct members, the members_* functions):
 * which member holds each role, what the array can still serve, THE
 * failure policy, and replacing a member while requests read the table;
 * see member_table.c.  One member and its backend are member.h's.
 */

#ifndef RAID_MEMBER_TABLE_H
#define RAID_MEMBER_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "geometry.h"
#include "member.h"

/* Replaced members still waiting to be closed, at most. */
#define MEMBERS_MAX_LIMBO 32
/* Members set aside at assembly (stale, faulty), at most. */
#define MEMBERS_MAX_RETIRED (GEOMETRY_MAX_MEMBERS * 4)
/* Hot spares, at most (md has no limit but its 384 dev_roles slots). */
#define MEMBERS_MAX_SPARES 8

struct members {
  int n;                        /* roles */
  int tolerance;                /* members that may fail: 1 or 2 */
  /* The member of each role.  A replace publishes a new member while
   * requests, jobs and the bitmap's thread read the table, so every slot
   * is atomic (members_at: one sequentially consistent load); a reader
   * that uses a member more than once loads it once into a local, and
   * may use it only inside a reader section (members_enter).
   */
  struct member *_Atomic slot[GEOMETRY_MAX_MEMBERS];

  /* Reader sections: see member_table.c. */
  _Atomic uint64_t epoch;
  _Atomic uint64_t readers[2];

  pthread_mutex_t lock;         /* lock.h: the table's changes, limbo,
                                   retired */
  int nlimbo;
  struct { struct member *m; uint64_t epoch; } limbo[MEMBERS_MAX_LIMBO];
  int nretired;
  struct member *retired[MEMBERS_MAX_RETIRED];
  /* Hot spares, in the order they came (status's index): open, in no
   * role, waiting for one to fail (jobs.c).  Changed under lock, and by
   * jobs.c only under its own lock too, so that jobs.c reads them under
   * either; nspares is atomic for readers that only ask whether there
   * are any (readd_auto.c).
   */
  _Atomic int nspares;
  struct member *spare[MEMBERS_MAX_SPARES];
};

/* An empty table (members_open fills it).  members_destroy closes every
 * member it ever held.
 */
void members_init (struct members *ms);
void members_destroy (struct members *ms);

/* A name the operator gave (a file or block device path, an NBD URI, or
 * "missing") as a member; NULL after nbdkit_error naming it.  The one
 * place where names become members, and where a member learns the name
 * that opens it again (member.open_name).
 */
struct member *members_open_member (const char *name,
                                    enum member_direct direct);
/* Open names[0..n) as roles 0..n-1, refusing two that are one disk.
 * Returns 0, or -1 after nbdkit_error (what was opened stays in the table
 * for members_destroy).
 */
int members_open (struct members *ms, const char *const *names, int n,
                  enum member_direct direct);

/* Assembly (md_assemble.c): roles[0..n) become the table, in that order;
 * every member the table held must now be in roles[] or retired.
 */
void members_arrange (struct members *ms, struct member *const *roles, int n);
/* Keep m out of the table, open until members_destroy. */
void members_retire (struct members *ms, struct member *m);

/* Hot spares (member_table.c, Spares).  add: m becomes the last spare
 * (false: the list is full).  take: spare k leaves the list, to take a
 * role (members_replace) or to be discarded (members_discard: closed
 * once no reader can hold it, as a replaced member is; the caller checks
 * members_limbo_full first).  members_spare_at: spare k, or NULL; under
 * lock, or in a reader section by a thread that serialises with the
 * changes (jobs.c).
 */
bool members_add_spare (struct members *ms, struct member *m);
struct member *members_take_spare (struct members *ms, int k);
void members_discard (struct members *ms, struct member *m);
int members_spares (const struct members *ms);
struct member *members_spare_at (const struct members *ms, int k);

/* RAID-5 tolerates one failed member, RAID-6 two. */
void members_set_level (struct members *ms, int level);

static inline struct member *
members_at (const struct members *ms, int i)
{
  return atomic_load ((struct member *_Atomic *) &ms->slot[i]);
}

/* THE failure policy: what any layer does when a member request fails.
 * Every error fails the member for good (member_fail), a flush's
 * EOPNOTSUPP included (its writes are not durable), but for a punch or
 * zero-range the member cannot do (EOPNOTSUPP): a missing feature with a
 * fallback (array.c writes zeroes instead), not a broken member.  A
 * medium's error and the member's going away (member.h, Error classes)
 * are alike here for now.  Returns whether m was failed.
 */
bool members_io_error (struct member *m, enum member_op op, int err);
/* The same for each request of a batch that failed (err != 0). */
void members_io_failed (const struct member_io *ios, size_t n);

/* Whether the array can still serve: what the policy leaves is a separate
 * question, asked for the array (no more failed members than the level
 * tolerates) or for one row (no more members unreadable there: a member
 * being rebuilt cannot be read above its recovery offset).
 */
int members_failed (const struct members *ms);
bool members_can_serve (const struct members *ms);
int members_unreadable (const struct members *ms, uint64_t stripe);
bool members_row_servable (const struct members *ms, uint64_t stripe);
/* Whether a row with this many unreadable members can be served. */
bool members_tolerate (const struct members *ms, int unreadable);

/* A batch of member requests whose results are in (member_io_run): the
 * failure policy for each that failed, then whether the array can still
 * serve (row MEMBERS_WHOLE_ARRAY: members_can_serve) or can still serve
 * that row (members_row_servable).  0, or -1 with errno EIO.
 */
#define MEMBERS_WHOLE_ARRAY UINT64_MAX
int members_batch_failed (struct members *ms, const struct member_io *ios,
                          size_t n, uint64_t row);
/* The same for a batch of reads whose caller reconstructs what a
 * member's medium could not give (stripe_recover.c, array.c's direct
 * reads, which fall back on it): a read that failed on the medium
 * (member_error_is_media) leaves its member as it is; every other
 * failure fails its member.
 */
int members_reads_failed (struct members *ms, const struct member_io *ios,
                          size_t n, uint64_t row);
/* Record bytes [offset, offset + len) of m as bad in its bad-block log
 * (md_badblocks.c: a sector it cannot give or take, kept out of reads
 * from then on), as md does rather than fail the member.  false if m
 * has no log or it is full: the caller then fails m.
 */
bool members_record_bad (struct member *m, uint64_t offset, uint64_t len);
/* A batch of writes (or zeroes, punches) whose results are in: each that
 * succeeded clears what it covered from its member's bad-block log (md
 * clears a sector a write succeeded on); each that failed on the medium
 * is made again 4 KiB by 4 KiB and the pages that still fail are
 * recorded there instead of failing its member, where the log can hold
 * them; any other failure fails its member.  Then whether the row
 * (or, MEMBERS_WHOLE_ARRAY, the array) can still serve: 0, or -1 (EIO).
 * members_run_writes runs the batch first.  What is recorded is on disk
 * before the write is acknowledged: md's update at the write's end
 * writes a changed log (md_bblog.c).
 */
int members_writes_done (struct members *ms, const struct member_io *ios,
                         size_t n, uint64_t row);
int members_run_writes (struct members *ms, struct member_io *ios, size_t n,
                        uint64_t row);
/* Run the batch, and members_batch_failed if any request failed. */
int members_run (struct members *ms, struct member_io *ios, size_t n,
                 uint64_t row);
/* Flush every working member (all), or only those that cannot make one
 * write durable by itself (no FUA); members_run's result.
 */
int members_flush (struct members *ms, bool all);
/* One MEMBER_FLUSH in out (room for n) for each member that writes[0..n)
 * name; how many.  The flushes that make that batch of writes durable.
 */
size_t members_flushes_for (const struct member_io *writes, size_t n,
                            struct member_io *out);
/* Members in sync; the first member being rebuilt, or -1; whether every
 * member is in sync.
 */
int members_in_sync (const struct members *ms);
int members_rebuilding (const struct members *ms);
bool members_healthy (const struct members *ms);

/* Reader sections.  Code that takes a member from the table and uses it
 * does so between members_enter and members_exit (or for the rest of a
 * scope: MEMBERS_READ_FOR_CURRENT_SCOPE): no member found in the table
 * meanwhile is closed.  Never blocks, allocates nothing; nests.
 */
unsigned members_enter (struct members *ms);
void members_exit (struct members *ms, unsigned token);

struct members_section {
  struct members *ms;
  unsigned token;
};

static inline void
members_section_end (struct members_section *s)
{
  members_exit (s->ms, s->token);
}

#define MEMBERS_READ_FOR_CURRENT_SCOPE(ms) \
  MEMBERS_READ_FOR_CURRENT_SCOPE_1 (ms, __COUNTER__)
#define MEMBERS_READ_FOR_CURRENT_SCOPE_1(ms, n) \
  MEMBERS_READ_FOR_CURRENT_SCOPE_2 (ms, n)
#define MEMBERS_READ_FOR_CURRENT_SCOPE_2(ms, n) \
  __attribute__ ((cleanup (members_section_end), unused)) \
  struct members_section members_section_##n = { (ms), members_enter (ms) }

/* Replacing member i by m, a new disk or (re-add) the same disk opened
 * again (m becomes REBUILDING from row 0; the old member waits in limbo
 * until no reader can hold it).  Replacements are
 * serialised by the caller (jobs.c), which checks members_limbo_full
 * first, so that members_replace cannot refuse after it decided.
 */
bool members_limbo_full (struct members *ms);
void members_replace (struct members *ms, int i, struct member *m);
/* Close the replaced members that no reader can hold any more, and move
 * the epoch on so that the others can be, later.  Never waits.
 */
void members_reclaim (struct members *ms);

#endif /* RAID_MEMBER_TABLE_H */
