/* SPDX-License-Identifier: BSD-3-Clause */
/* The array: members, geometry and stripe cache, and the splitting of
 * client requests into per-row work; see array.c.
 */

#ifndef RAID_ARRAY_H
#define RAID_ARRAY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "array_config.h"
#include "extents.h"
#include "geometry.h"
#include "member.h"
#include "member_table.h"
#include "stripe.h"

/* The clients' requests, counted by kind (status, metrics). */
enum array_count {
  ARRAY_COUNT_READ,
  ARRAY_COUNT_WRITE,
  ARRAY_COUNT_ZERO,
  ARRAY_COUNT_TRIM,
  ARRAY_COUNT_FLUSH,
  ARRAY_COUNTS,
};

/* The array.  Its fields come in two groups.
 *
 * Shared: the layers above array.c (admission.c, jobs.c, control.c,
 * readd_auto.c, raid.c) read these directly, because they drive the
 * components the fields hold themselves, each under that component's
 * own rules (its header says them); a getter per field would add a name
 * and hide nothing.
 *
 *   g         the geometry, fixed at array_open and never written after
 *             (no lock): the row count and the chunk (a job's windows,
 *             rate and progress, status's bytes, what a disk must hold
 *             to be admitted), the size (raid.c), the level (messages).
 *   ms        the member table: jobs.c fails members and installs
 *             replacements, under the jobs' lock (members_replace), and
 *             every reader (admission.c, status, readd_auto.c's watcher)
 *             takes members in a reader section (member_table.h).
 *   cache     the stripe cache: the rebuild and the scrub go over rows
 *             through it (stripe_rebuild_rows, stripe_scrub_row), under
 *             the row locks client requests take, so that no request
 *             sees a row a job has half done.
 *   md        md's metadata, NULL in raw mode (the md_array_* functions
 *             the layers above call take NULL): jobs.c records what the
 *             jobs change (a member failed, installed, rebuilt to a row;
 *             a resync done), admission.c asks it about an offered disk,
 *             status shows its bitmap.
 *   rows      the row record (row_record.h): a re-add asks which rows its
 *             member missed, the resync which rows it owes, status what
 *             the record in memory holds.
 *   readonly  fixed at array_open: the operator's actions that would
 *             write (fail, replace, re-add, scrub repair, readd=auto) are
 *             refused before they start; raid.c tells nbdkit.
 *
 * Private: how array.c serves requests.  No other file reads them;
 * what others need of them is an array.h function (array_open_member,
 * array_counts).
 */
struct array {
  /* Shared (see above). */
  struct geometry g;
  struct members ms;            /* the member table; see member_table.c */
  struct stripe_cache *cache;
  struct md_array *md;          /* NULL in raw mode; see md_array.c */
  struct row_record *rows;      /* the rows members may differ on:
                                   row_record.c */
  bool readonly;                /* nothing is written to any member */

  /* Private to array.c. */
  enum member_direct direct;    /* direct=: how members are opened */
  _Atomic bool can_punch, can_zero_range;  /* cleared on the first
                                              EOPNOTSUPP */
  struct io_count io[ARRAY_COUNTS];     /* member.h; by array_count */
  pthread_mutex_t bounce_lock;  /* guards bounce_free */
  uint8_t *bounce_free;         /* array.c's free bounce buffers, each
                                   linked through its first bytes */
};

/* Open and check every member; nbdkit_error says what is wrong.  Nothing
 * is written to any member (create=true writes at array_after_fork).
 */
struct array *array_open (const struct array_config *cfg);
/* In the serving process: the row record's clearing thread (for the
 * record in memory) and md's part (create=true's superblocks, the
 * bitmap's clearing thread); the jobs start after it (jobs_after_fork).
 */
int array_after_fork (struct array *a);
/* Flush, mark md's superblocks clean, close every member.  The jobs
 * (jobs_free) have stopped first.
 */
void array_close (struct array *a);

int array_read (struct array *a, void *buf, uint64_t count, uint64_t offset);
int array_write (struct array *a, const void *buf, uint64_t count,
                 uint64_t offset, bool fua);
/* Zero the range.  may_trim: holes are fine.  fast: fail with ENOTSUP,
 * before changing anything, unless it can be done without writing data.
 */
int array_zero (struct array *a, uint64_t count, uint64_t offset,
                bool may_trim, bool fast, bool fua);
int array_trim (struct array *a, uint64_t count, uint64_t offset, bool fua);
int array_flush (struct array *a);
/* The extents of [offset, offset + count), at most max (extents.h):
 * holes where every member that can be read holds a hole over whole
 * rows.  Returns how many, or -1 (errno).
 */
int array_extents (struct array *a, uint64_t count, uint64_t offset,
                   struct extent *ext, int max);
/* nbdkit is stopping and serves no more requests (raid.c): flush and
 * mark md's superblocks clean if they say active (not while a resync is
 * owed: then they stay as they are).  Returns whether they say clean
 * now; true for raw and read-only arrays.  Not a client's flush: not
 * counted.
 */
bool array_settle (struct array *a);

/* NULL if the array can serve m's alignment (member.h), else why not. */
const char *array_cannot_align (const struct array *a, const struct member *m);
/* name opened as the array opens its members (direct=): a disk offered
 * for a role (jobs.c).  NULL after nbdkit_error.
 */
struct member *array_open_member (const struct array *a, const char *name);
/* The clients' requests so far, ARRAY_COUNTS of them by array_count
 * (status); only array.c writes them.
 */
const struct io_count *array_counts (const struct array *a);

/* A range of the array's bytes. */
struct array_range {
  uint64_t offset, len;
};
/* The array's bytes that cannot be read, lost to sectors the members'
 * bad-block logs list on more members than the level tolerates (a read
 * there fails with EIO): merged ranges, lowest first, at most max into
 * out, and how many bytes in all into *bytes; returns how many ranges
 * there are (which may be more than max).
 */
size_t array_lost (struct array *a, struct array_range *out, size_t max,
                   uint64_t *bytes);

#endif /* RAID_ARRAY_H */
