/* SPDX-License-Identifier: BSD-3-Clause */
/* The member table (struct members, the members_* functions): which
 * member holds each role, the failure policy, what the array can still
 * serve, and replacing a member while requests read the table.  One
 * member, its state and its backend are member.c's.
 *
 * States.  Each member's state (member.h: IN_SYNC, FAILED, REBUILDING
 * with a recovery offset) is the array's view of it.  A member object
 * fails for good: by the failure policy below, by the operator (fail N),
 * or when a new connection shows another disk (member_nbd_connect.c).
 * Only a new member object in the role (REBUILDING) and the end of its
 * rebuild (IN_SYNC) bring a role back: a replacement (another disk,
 * rebuilt whole) or a re-add (the role's own disk opened again by its
 * name, rebuilt only where the row record says it missed writes;
 * jobs.c).  Both go through members_replace, so the failed object waits
 * in limbo either way and nothing that held it sees it come back to life.
 *
 * The failure policy (members_io_error) is the one answer to "a member
 * request failed": every layer that talks to members (array.c, the
 * stripe cache, the bitmap, md_array.c) hands its failed requests here.
 * Whether the array can still serve is a separate question, asked
 * afterwards for the whole array (members_can_serve: array.c, md's
 * metadata, the bitmap) or for one row (members_row_servable: the stripe
 * cache, where a member being rebuilt cannot be read above its recovery
 * offset).  A batch of requests goes through members_run (the batch, the
 * policy for those that failed, the question), or, where the caller
 * looks at the results first, member_io_run then members_batch_failed;
 * a flush of the working members is members_flush.
 *
 *   error                                   member        request
 *   EOPNOTSUPP on a punch or zero-range     stays         falls back
 *   a read on the medium, where the caller  stays         the page served
 *   reconstructs (members_reads_failed:                   from the others
 *   the stripe cache, array.c's reads)                    and written back
 *   anything else (a flush's EOPNOTSUPP     fails         served from the
 *   included: its writes are not durable)                 others if the
 *                                                         row can be
 *
 * "Anything else" is either class of member.h's Error classes: the
 * medium's (EIO, ENODATA, EILSEQ, a short transfer: the member still
 * answers) or the member's going away (a lost link, a timeout, a device
 * gone, an untrusted member, and whatever is not listed).  The backends
 * say which (member_error_is_media), but the policy does not ask yet:
 * until a read error is corrected by rewriting the sectors from the
 * others, as md does, a medium's error fails the member as the other
 * class does.  Whatever the members said, a batch that leaves the array
 * (or the row) unable to serve says EIO (members_batch_failed), so no
 * link's errno ever reaches a client.
 *
 * Reclaiming replaced members.  A replaced member must be closed (its
 * fd, its NBD connection) once nothing can use it, but requests, the job
 * thread, the bitmap's thread and md_array.c all read the table without
 * a lock, and a request may hold a member for as long as its I/O takes.
 * The rules:
 *
 *   - Readers.  Code that takes a member from the table and uses it does
 *     so in a reader section (members_enter .. members_exit): each client
 *     request (array.c's entry points), each row of a job (never across a
 *     throttle wait), each bitmap clearing pass, a replace's own checks,
 *     a status report.  Sections never block, allocate nothing (two atomic
 *     increments and a decrement on two counters) and nest.  A member in
 *     the table is never closed, so code that serialises with replace
 *     (jobs.c's lock) may read the table too.
 *   - Identity.  Across sections only a member's serial may be kept, never
 *     its address: once out of a section the member may be closed and its
 *     memory reused by the next replacement (jobs.c's rebuild_member,
 *     md_bitmap.c's written[] and md_array.c's written_as[] keep
 *     serials for that reason).
 *   - Epochs (a two-counter scheme, as in sleepable RCU).  A reader counts
 *     itself in readers[epoch & 1], checking that the epoch did not move
 *     meanwhile.  replace puts the old member in limbo tagged with the
 *     epoch it was retired in (under lock, with the new member's
 *     publication).  members_reclaim, under lock, never waiting: with
 *     epoch e, every reader of epochs up to e - 2 has left (invariant:
 *     the epoch moves from e to e + 1 only when readers[(e - 1) & 1] is
 *     zero, so a parity is reused only empty); if readers[(e - 1) & 1] is
 *     zero now, the readers of e - 1 have left too.  Members retired
 *     before the first epoch with readers left are closed (outside the
 *     lock); if any was retired in e, the epoch moves on.  A member
 *     retired in epoch r can be held only by readers of r - 1 and r, so it
 *     is closed two reclaims after the readers of its time have left.
 *   - Bounds.  replace and the control socket's acceptor (once a second)
 *     call members_reclaim; limbo holds MEMBERS_MAX_LIMBO members, and a
 *     replace that finds it full is refused before it changes anything
 *     (that takes that many replaces while some request hangs).  At
 *     members_destroy no reader is left and limbo is emptied.
 *
 * Spares.  A hot spare is a member in no role: open, its md superblock
 * kept current by md_array.c, waiting for a role to fail.  The table
 * holds the list (as it holds retired[]) so that members_destroy closes
 * every member it ever held; jobs.c decides when a spare is added, taken
 * into a role (members_take_spare, then members_replace) or removed
 * (members_take_spare, then members_discard: limbo, as a replaced
 * member, since status may be printing its name in a reader section).
 *
 * Locking: lock (lock.h) guards the table's changes, limbo, the
 * retired list and the spares; the slots, the epoch, the reader counts
 * and the spare count are atomics.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "lock.h"
#include "md_badblocks.h"
#include "member_table.h"

void
members_init (struct members *ms)
{
  memset (ms, 0, sizeof *ms);
  atomic_init (&ms->epoch, 2);  /* so that epoch - 2 never wraps */
  pthread_mutex_init (&ms->lock, NULL);
}

void
members_destroy (struct members *ms)
{
  for (int i = 0; i < ms->n; i++)
    member_close (members_at (ms, i));
  for (int i = 0; i < ms->nretired; i++)
    member_close (ms->retired[i]);
  for (int k = 0; k < ms->nlimbo; k++)
    member_close (ms->limbo[k].m);
  for (int k = 0; k < ms->nspares; k++)
    member_close (ms->spare[k]);
  ms->n = ms->nretired = ms->nlimbo = 0;
  ms->nspares = 0;
  pthread_mutex_destroy (&ms->lock);
}

/* The name that opens the member again later (re-add), wherever the
 * process runs then: nbdkit in the background runs in /, so a relative
 * path is made absolute now.  NULL without memory.
 */
static char *
open_name (const char *name)
{
  char cwd[4096];
  char *s;

  if (member_is_uri (name) || name[0] == '/')
    return strdup (name);
  if (getcwd (cwd, sizeof cwd) == NULL ||
      asprintf (&s, "%s/%s", cwd, name) == -1)
    return NULL;
  return s;
}

struct member *
members_open_member (const char *name, enum member_direct direct)
{
  struct member *m;

  if (strcmp (name, "missing") == 0)
    return member_missing ();
  m = member_is_uri (name) ? member_nbd_open (name)
    : member_file_open (name, direct);
  if (m == NULL)
    return NULL;
  member_opened (m);
  if ((m->open_name = open_name (name)) == NULL) {
    nbdkit_error ("member %s: %m", name);
    member_close (m);
    return NULL;
  }
  return m;
}

int
members_open (struct members *ms, const char *const *names, int n,
              enum member_direct direct)
{
  for (int i = 0; i < n; i++) {
    struct member *m = members_open_member (names[i], direct);

    if (m == NULL)
      return -1;
    atomic_store (&ms->slot[i], m);
    ms->n = i + 1;
    for (int j = 0; j < i; j++)
      if (member_same (m, members_at (ms, j))) {
        nbdkit_error ("member %s: the same disk as member %d (%s)",
                      names[i], j, names[j]);
        return -1;
      }
  }
  return 0;
}

void
members_arrange (struct members *ms, struct member *const *roles, int n)
{
  for (int i = 0; i < n; i++)
    atomic_store (&ms->slot[i], roles[i]);
  ms->n = n;
}

void
members_retire (struct members *ms, struct member *m)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&ms->lock);

  ms->retired[ms->nretired++] = m;
}

bool
members_add_spare (struct members *ms, struct member *m)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&ms->lock);

  if (ms->nspares == MEMBERS_MAX_SPARES)
    return false;
  ms->spare[ms->nspares] = m;
  ms->nspares++;
  return true;
}

struct member *
members_take_spare (struct members *ms, int k)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&ms->lock);
  struct member *m;

  if (k < 0 || k >= ms->nspares)
    return NULL;
  m = ms->spare[k];
  memmove (&ms->spare[k], &ms->spare[k + 1],
           (ms->nspares - k - 1) * sizeof ms->spare[0]);
  ms->nspares--;
  return m;
}

void
members_discard (struct members *ms, struct member *m)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&ms->lock);

  ms->limbo[ms->nlimbo].m = m;
  ms->limbo[ms->nlimbo++].epoch = atomic_load (&ms->epoch);
}

int
members_spares (const struct members *ms)
{
  return atomic_load ((_Atomic int *) &ms->nspares);
}

struct member *
members_spare_at (const struct members *ms, int k)
{
  return k >= 0 && k < members_spares (ms) ? ms->spare[k] : NULL;
}

void
members_set_level (struct members *ms, int level)
{
  ms->tolerance = level == 6 ? 2 : 1;
}

bool
members_io_error (struct member *m, enum member_op op, int err)
{
  if (err == EOPNOTSUPP && (op == MEMBER_PUNCH || op == MEMBER_ZERO))
    return false;
  member_fail (m, err);
  return true;
}

void
members_io_failed (const struct member_io *ios, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (ios[i].err)
      members_io_error (ios[i].member, ios[i].op, ios[i].err);
}

/* After the policy: 0 if the array (row MEMBERS_WHOLE_ARRAY) or the row
 * can still be served, else -1 with errno EIO.
 */
static int
row_served (const struct members *ms, uint64_t row)
{
  if (row == MEMBERS_WHOLE_ARRAY ? members_can_serve (ms)
      : members_row_servable (ms, row))
    return 0;
  errno = EIO;
  return -1;
}

int
members_batch_failed (struct members *ms, const struct member_io *ios,
                      size_t n, uint64_t row)
{
  members_io_failed (ios, n);
  return row_served (ms, row);
}

int
members_reads_failed (struct members *ms, const struct member_io *ios,
                      size_t n, uint64_t row)
{
  for (size_t i = 0; i < n; i++)
    if (ios[i].err && !member_error_is_media (ios[i].op, ios[i].err))
      members_io_error (ios[i].member, ios[i].op, ios[i].err);
  return row_served (ms, row);
}

bool
members_record_bad (struct member *m, uint64_t offset, uint64_t len)
{
  const char *why = "the member has no bad-block log";

  if (m->bad_blocks &&
      md_badblocks_add (m->bad_blocks, offset / 512,
                        (offset % 512 + len + 511) / 512, &why) == 0) {
    nbdkit_debug ("raid: member %s: bytes [%" PRIu64 ", +%" PRIu64 ") "
                  "recorded in its bad-block log", m->name, offset, len);
    return true;
  }
  nbdkit_debug ("raid: member %s: bytes [%" PRIu64 ", +%" PRIu64 ") "
                "cannot be recorded as bad: %s", m->name, offset, len, why);
  return false;
}

/* md's stripe page: what it writes, and records as bad, at a time. */
#define MEMBERS_PAGE 4096

/* Member m took bytes [offset, +len) (op: a write, zero or punch): a
 * sector its log listed holds the array's bytes again (md clears it when
 * a write there succeeds).  A clear that needs an entry the log lacks
 * leaves the range bad: the safe way.
 */
static void
written (struct member *m, enum member_op op, uint64_t offset, uint64_t len)
{
  const char *why;

  if (m->bad_blocks && md_badblocks_count (m->bad_blocks) &&
      op != MEMBER_FLUSH)
    md_badblocks_clear (m->bad_blocks, offset / 512, len / 512, &why);
}

/* A write (zero, punch) that failed on the medium, made again 4 KiB of
 * the member at a time, so that only the pages that still fail go into
 * the log: md writes, and records, the 4 KiB pages of a stripe one by
 * one, and a request of a chunk recorded whole would list sectors the
 * disk can take (and fill the log sooner).  0 when every page was
 * written or recorded; else the errno to fail the member with (a page
 * the log cannot take, or an error that is not the medium's).  Rare:
 * only after such an error.
 */
static int
record_failed_write (struct member *m, const struct member_io *io)
{
  const uint64_t end = io->offset + io->len;

  for (uint64_t at = io->offset, next; at < end; at = next) {
    struct member_io one = *io;

    next = (at / MEMBERS_PAGE + 1) * MEMBERS_PAGE;
    if (next > end)
      next = end;
    one.offset = at;
    one.len = next - at;
    if (io->buf)
      one.buf = (uint8_t *) io->buf + (at - io->offset);
    member_io_run (&one, 1);
    if (one.err == 0)
      written (m, one.op, at, one.len);
    else if (!member_error_is_media (one.op, one.err))
      return one.err;
    else if (!members_record_bad (m, at, one.len))
      return io->err;
  }
  return 0;
}

int
members_writes_done (struct members *ms, const struct member_io *ios,
                     size_t n, uint64_t row)
{
  for (size_t i = 0; i < n; i++) {
    struct member *m = ios[i].member;
    int err = ios[i].err;

    if (err == 0)
      written (m, ios[i].op, ios[i].offset, ios[i].len);
    else if (!member_error_is_media (ios[i].op, err) ||
             ios[i].op == MEMBER_READ ||
             (err = record_failed_write (m, &ios[i])) != 0)
      members_io_error (m, ios[i].op, err);
  }
  return row_served (ms, row);
}

int
members_run_writes (struct members *ms, struct member_io *ios, size_t n,
                    uint64_t row)
{
  member_io_run (ios, n);
  return members_writes_done (ms, ios, n, row);
}

int
members_run (struct members *ms, struct member_io *ios, size_t n,
             uint64_t row)
{
  if (member_io_run (ios, n) == -1)
    return members_batch_failed (ms, ios, n, row);
  return 0;
}

int
members_flush (struct members *ms, bool all)
{
  struct member_io ios[GEOMETRY_MAX_MEMBERS];
  size_t n = 0;

  for (int i = 0; i < ms->n; i++) {
    struct member *m = members_at (ms, i);

    if (!member_failed (m) && (all || !m->can_fua))
      ios[n++] = (struct member_io) { .member = m, .op = MEMBER_FLUSH };
  }
  return members_run (ms, ios, n, MEMBERS_WHOLE_ARRAY);
}

size_t
members_flushes_for (const struct member_io *writes, size_t n,
                     struct member_io *out)
{
  size_t nf = 0;

  for (size_t k = 0; k < n; k++) {
    bool seen = false;

    for (size_t j = 0; j < nf; j++)
      seen |= out[j].member == writes[k].member;
    if (!seen)
      out[nf++] = (struct member_io) {
        .member = writes[k].member, .op = MEMBER_FLUSH,
      };
  }
  return nf;
}

int
members_failed (const struct members *ms)
{
  int n = 0;

  for (int i = 0; i < ms->n; i++)
    n += member_failed (members_at (ms, i));
  return n;
}

bool
members_can_serve (const struct members *ms)
{
  return members_failed (ms) <= ms->tolerance;
}

int
members_unreadable (const struct members *ms, uint64_t stripe)
{
  int n = 0;

  for (int i = 0; i < ms->n; i++)
    n += !member_readable (members_at (ms, i), stripe);
  return n;
}

bool
members_tolerate (const struct members *ms, int unreadable)
{
  return unreadable <= ms->tolerance;
}

bool
members_row_servable (const struct members *ms, uint64_t stripe)
{
  return members_tolerate (ms, members_unreadable (ms, stripe));
}

int
members_in_sync (const struct members *ms)
{
  int n = 0;

  for (int i = 0; i < ms->n; i++)
    n += member_state (members_at (ms, i)) == MEMBER_IN_SYNC;
  return n;
}

int
members_rebuilding (const struct members *ms)
{
  for (int i = 0; i < ms->n; i++)
    if (member_state (members_at (ms, i)) == MEMBER_REBUILDING)
      return i;
  return -1;
}

bool
members_healthy (const struct members *ms)
{
  return members_in_sync (ms) == ms->n;
}

unsigned
members_enter (struct members *ms)
{
  for (;;) {
    uint64_t e = atomic_load (&ms->epoch);

    atomic_fetch_add (&ms->readers[e & 1], 1);
    if (atomic_load (&ms->epoch) == e)
      return e & 1;
    /* The epoch moved on between the two loads: count in the new one. */
    atomic_fetch_sub_explicit (&ms->readers[e & 1], 1, memory_order_release);
  }
}

void
members_exit (struct members *ms, unsigned token)
{
  atomic_fetch_sub_explicit (&ms->readers[token], 1, memory_order_release);
}

bool
members_limbo_full (struct members *ms)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&ms->lock);

  return ms->nlimbo == MEMBERS_MAX_LIMBO;
}

void
members_replace (struct members *ms, int i, struct member *m)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&ms->lock);

  member_start_rebuild (m, 0);
  ms->limbo[ms->nlimbo].m = members_at (ms, i);
  ms->limbo[ms->nlimbo++].epoch = atomic_load (&ms->epoch);
  atomic_store (&ms->slot[i], m);       /* publish */
}

void
members_reclaim (struct members *ms)
{
  struct member *dead[MEMBERS_MAX_LIMBO];
  int ndead = 0, kept = 0;
  bool current = false;

  pthread_mutex_lock (&ms->lock);
  if (ms->nlimbo > 0) {
    uint64_t e = atomic_load (&ms->epoch);
    bool last_gone = atomic_load (&ms->readers[(e - 1) & 1]) == 0;
    /* Readers of epoch e - 2 and before have all left; of e - 1 too if
     * none is counted in its parity now.
     */
    uint64_t safe_below = last_gone ? e : e - 1;

    for (int k = 0; k < ms->nlimbo; k++)
      if (ms->limbo[k].epoch < safe_below)
        dead[ndead++] = ms->limbo[k].m;
      else {
        current |= ms->limbo[k].epoch == e;
        ms->limbo[kept++] = ms->limbo[k];
      }
    ms->nlimbo = kept;
    /* Members retired in epoch e become safe once the readers of e have
     * left: start counting new readers apart.  Only now that e - 1's
     * parity is empty may it be reused.
     */
    if (last_gone && current)
      atomic_store (&ms->epoch, e + 1);
  }
  pthread_mutex_unlock (&ms->lock);
  for (int k = 0; k < ndead; k++)
    member_close (dead[k]);
}
