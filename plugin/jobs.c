/* SPDX-License-Identifier: BSD-3-Clause */
/* The background jobs that repair an array while it serves, and the
 * operator actions that start them: failing a member, replacing one
 * (which starts a rebuild), re-adding one (a rebuild of the rows the
 * row record marks: row_record.c), scrubbing; and the resync after an unclean
 * shutdown.
 *
 * One background job at a time runs, row by row, in two threads that
 * take windows of rows in turn (rows_run_threads):
 *
 *   rebuild  while some member is REBUILDING: for each row from its
 *            recovery_stripe on, take the row's lock, reconstruct the
 *            member's chunk from the others and write it, then advance
 *            recovery_stripe (still under the lock, so no request sees a
 *            row half done).  At the end the member is IN_SYNC.  A member
 *            replaced while the job runs is picked up when the current one
 *            is done.  Every 256 rows, when the job is stopped and at
 *            the end md records the recovery offset in the superblocks,
 *            as md does when its recovery is interrupted, so that a
 *            restarted nbdkit resumes the rebuild there (jobs_after_fork).
 *   re-add   the same job, for a member whose readd flag is set: the
 *            failed member's own disk, opened again by its name
 *            (jobs_readd_member; admission.c said it is that disk, that
 *            what records the rows it missed covers it: the row
 *            record's (row_record.c: md's bitmap, or in an array
 *            without one the record in memory), and that it takes
 *            writes again).  Only the rows under set bits (marks) are
 *            rebuilt; the job jumps over the others, moving
 *            recovery_stripe past them without a row lock: the mark was
 *            set before any write the disk missed went out and none is
 *            cleared while a member is not in sync, so a row whose mark
 *            is clear now was not written while it was out, and a write
 *            that starts on it later goes to the member too (writes go
 *            to every row of a rebuilding member).  A
 *            request on a row the job jumps over meanwhile keeps to the
 *            view of the members it read with (stripe_internal.h's
 *            lost_set): it reconstructs what it did not read.
 *   scrub    for each row: read it from the members, compare the parity
 *            with the data (stripe_scrub_row), count mismatched pages like
 *            md's mismatch_cnt, and with repair rewrite what is wrong.
 *   resync   a repairing scrub of the rows an unclean shutdown may have
 *            left inconsistent: those the row record says (the
 *            write-intent bitmap's marks, or every row from md's
 *            checkpoint on).  It needs every member in sync, so it
 *            follows md's order (md_check_recovery): recovery first,
 *            then the resync.  At start-up it starts at once unless a
 *            member is being rebuilt or has failed; a rebuild that
 *            leaves every member in sync turns into the resync owed, in
 *            the same thread (resync_after_rebuild), so that no start
 *            is needed to pay it.  Until it has finished, status says
 *            it is owed and what it waits for (jobs_resync_pending).
 *
 * Client requests keep priority: each row's lock is held only for that
 * row, and rebuild-rate caps the rebuild's and the resync's rate (bytes
 * per second).  The cap is a deadline from the job's start
 * (jobs_throttle_delay, a pure function of one clock reading, never
 * negative), and the wait for it is on wake, which every stop request
 * broadcasts.  A job stops early when asked (scrub stop, unload) or when
 * the array can no longer serve.
 *
 * What the jobs use of the array.  A job drives the array's parts
 * itself: the member table (fail, replace), the stripe cache (a row
 * rebuilt or scrubbed under the row locks requests take), md (the
 * states it records) and the row record (the rows a re-add or a resync
 * goes over): array.h's shared fields, which say why.  Whether a disk
 * may take a failed role is admission.c's; this file opens the disk,
 * asks it, and installs what it admitted.
 *
 * Jobs and the lock (lock.h: first in the order).  Each run of a job has a
 * struct job of its own (rebuild_job, scrub_job: the last of each kind,
 * so that status can show the last scrub's result).  An operator action
 * checks everything it needs under lock before it changes anything, so
 * that a refused action changes nothing; a new job's parameters are
 * filled in under lock while no job runs, before its thread starts, and
 * nothing writes them while it runs (its thread reads them without the
 * lock).  js->job, the running job, changes only under lock: set by
 * job_start, cleared by the thread's last act (job_end, next_or_finish),
 * after which the thread touches neither the job nor the array.  The
 * job's progress counters are atomics written by its thread; the
 * rebuild's member and first row are written under lock.  status takes
 * the lock for one consistent snapshot.  A replacement is installed in
 * the member table under the lock too (members_replace), together with
 * the md update that records it, so that md_array.c's written_as[] never
 * names a member that can be closed (member_table.c).
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "admission.h"
#include "array.h"
#include "jobs.h"
#include "lock.h"
#include "md_array.h"
#include "member_table.h"
#include "now.h"
#include "row_record.h"
#include "stripe.h"

enum job_kind { JOB_REBUILD, JOB_SCRUB };

#define WINDOW_BYTES (4 * 1024 * 1024)  /* a rebuild window, per member */
/* At most 32 rows: each is a head lock held for the whole window, and
 * ThreadSanitizer's deadlock detector tracks no more than 64 locks held
 * by one thread (with 64 rows, the window's locks and the two taken
 * under them made it abort check-tsan).  At 128K chunks 32 rows are the
 * whole 4 MiB already; a client waits for fewer rows.
 */
#define WINDOW_ROWS_MAX 32
#define WINDOW_PER_S 20         /* windows a second at least, throttled */

/* One run of a job.  The parameters are filled in under the lock while
 * no job runs, before the thread starts, and nothing changes them while
 * it runs; the thread owns the rest (see the top for who writes what).
 */
struct job {
  struct jobs *js;
  enum job_kind kind;
  bool repair, resync;          /* scrub: fix what is wrong; only the rows
                                   an unclean shutdown left (resync) */
  uint64_t rows_total;          /* scrub */
  int64_t start;                /* CLOCK_MONOTONIC, ns */

  _Atomic bool stop;            /* set under lock (wake broadcast) */
  /* Rebuild: the member being rebuilt, since when and from which row;
   * under lock.
   */
  int member;
  int64_t member_start;
  uint64_t first_row;
  bool readd;                   /* the member is re-added (member.readd) */
  uint64_t whole_from;          /* ... and rebuilt whole from this row */
  /* Scrub: progress; bad[k] is written before nbad covers it. */
  _Atomic uint64_t rows_done, mismatch_cnt;
  _Atomic uint64_t unreadable_bytes, lost_bytes;        /* scrub */
  _Atomic size_t nbad;
  struct { uint64_t stripe; int member; } bad[JOBS_MAX_BAD_DATA];
  bool finished;                /* scrub: went over every row; under lock */
};

struct jobs {
  struct array *a;
  uint64_t rate;                /* rebuild-rate: bytes/s, 0 = unlimited */
  pthread_mutex_t lock;         /* lock.h; everything below */
  pthread_cond_t wake;          /* with lock: a stop request */
  struct job *job;              /* the running job or NULL */
  pthread_t thread;
  bool joinable;                /* thread is still to be joined */
  bool scrubbed;                /* scrub_job holds the last scrub's result */
  struct job rebuild_job, scrub_job;    /* the last of each kind */
};

static bool
stopping (const struct job *j)
{
  return atomic_load_explicit (&j->stop, memory_order_acquire);
}

/* Wait as needed to keep `bytes` since start_ns under the rate.  The
 * clock is read once per wait and the delay is signed
 * (jobs_throttle_delay), so that a thread preempted past its due time
 * goes on at once; the wait is on wake, which a stop request broadcasts,
 * so that unload never waits for a throttled job.
 */
static void
throttle (struct jobs *js, struct job *j, uint64_t bytes, int64_t start_ns)
{
  if (js->rate == 0)
    return;

  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&js->lock);
  while (!j->stop) {
    int64_t now = now_ns ();
    int64_t d = jobs_throttle_delay (now, start_ns, bytes, js->rate);
    int64_t until = d > INT64_MAX - now ? INT64_MAX : now + d;
    struct timespec ts = { .tv_sec = until / 1000000000,
                           .tv_nsec = until % 1000000000 };

    if (d == 0)
      break;
    pthread_cond_timedwait (&js->wake, &js->lock, &ts);
  }
}

struct jobs *
jobs_new (struct array *a, uint64_t rate)
{
  struct jobs *js = calloc (1, sizeof *js);

  if (js == NULL) {
    nbdkit_error ("calloc: %m");
    return NULL;
  }
  js->a = a;
  js->rate = rate;
  pthread_mutex_init (&js->lock, NULL);
  now_cond_init (&js->wake);
  return js;
}

/* Ask the running job, if any, to stop; lock held. */
static void
job_stop_locked (struct jobs *js)
{
  if (js->job) {
    atomic_store_explicit (&js->job->stop, true, memory_order_release);
    pthread_cond_broadcast (&js->wake);
  }
}

void
jobs_free (struct jobs *js)
{
  if (js == NULL)
    return;
  pthread_mutex_lock (&js->lock);
  job_stop_locked (js);
  pthread_mutex_unlock (&js->lock);
  if (js->joinable)
    pthread_join (js->thread, NULL);
  pthread_cond_destroy (&js->wake);
  pthread_mutex_destroy (&js->lock);
  free (js);
}

/* Member i, if it is still the one with this serial and has not failed;
 * in a reader section (member_table.c).  (The serial, not the address: a
 * member replaced meanwhile may have been closed and its memory reused.)
 */
static struct member *
still_member (struct array *a, int i, uint64_t serial)
{
  struct member *m = members_at (&a->ms, i);

  return m->serial == serial && !member_failed (m) ? m : NULL;
}

/* The next row member i's rebuild writes: every row, or for a re-add
 * only those the row record marks as missed (>= the row count when none
 * is left), and every row from whole_from on
 * (member.readd_whole_from).
 */
static uint64_t
rebuild_next_row (struct array *a, const struct job *j, uint64_t s)
{
  uint64_t dirty;

  if (!j->readd || s >= j->whole_from)
    return s;
  dirty = row_record_next_missed (a->rows, s);
  return dirty < j->whole_from ? dirty : j->whole_from;
}

/* Rows in two threads.  A rebuild and a scrub go over rows in windows (a
 * rebuild's: up to WINDOW_BYTES of the member; a scrub's: one row), and
 * two threads do it, each claiming the next window (rows_claim), so that
 * one thread's reads are in flight while the other computes and writes.
 * On page-cache members the kernel does the copies in the calling thread
 * (or in one io-wq worker per thread), and one thread alone kept one core
 * busy and left the other idle.
 *
 * What must follow row order is done in turns: window k's turn
 * (rows_turn_begin .. rows_turn_end) comes after window k - 1's.  In its
 * turn a rebuild moves the recovery offset past its rows, so that the
 * offset only ever covers rows that are written; a scrub records its row
 * as resynced (md's checkpoint), and its mismatches and bad data.  A
 * window that fails ends the run: the turns of the windows after it
 * change nothing.
 *
 * The rate cap (rebuild-rate) is waited for in rows_claim, before a
 * window is claimed, over the rows claimed so far, the windows in flight
 * included, and claims are made one at a time: at any moment the rows
 * gone over are at most one window ahead of the rate, as with one
 * thread.  (Throttling each thread over the rows done let both threads
 * go at once, two windows ahead: test-ctl-metrics.py saw a 256K/s
 * rebuild at 360K/s.)  A rebuild thread waits for its turn holding its
 * window's heads, but of rows no other thread of the run takes, and the
 * thread it waits for waits only for heads that clients hold, one each
 * (lock.h); a scrub thread puts its head first (md's lock comes before
 * the heads).
 */
#define ROW_THREADS 2

struct rows_run {
  struct jobs *js;
  struct job *j;
  /* The first row to go over at or after row (the row count: none). */
  uint64_t (*next) (struct array *a, const struct job *j, uint64_t row);
  int max;                      /* rows per window */
  bool throttled;               /* rebuild-rate applies, from start */
  int64_t start;

  pthread_mutex_t claim_lock;   /* lock.h; the three below */
  uint64_t next_row;            /* the first row no window has */
  uint64_t claimed;             /* windows handed out */
  uint64_t claimed_rows;        /* rows in them */

  pthread_mutex_t turn_lock;    /* lock.h; the fields below */
  pthread_cond_t turn;          /* completed moved on */
  uint64_t completed;           /* windows whose turn is over */
  int result;                   /* 1 going on; else the job's outcome */
  uint64_t done;                /* rows of the windows done in turn */
};

static void
rows_run_init (struct rows_run *run, struct jobs *js, struct job *j,
               uint64_t (*next) (struct array *, const struct job *,
                                 uint64_t),
               int max, uint64_t first, bool throttled, int64_t start)
{
  *run = (struct rows_run) {
    .js = js, .j = j, .next = next, .max = max, .next_row = first,
    .throttled = throttled, .start = start, .result = 1,
  };
  pthread_mutex_init (&run->claim_lock, NULL);
  pthread_mutex_init (&run->turn_lock, NULL);
  pthread_cond_init (&run->turn, NULL);
}

static void
rows_run_destroy (struct rows_run *run)
{
  pthread_cond_destroy (&run->turn);
  pthread_mutex_destroy (&run->turn_lock);
  pthread_mutex_destroy (&run->claim_lock);
}

/* Run thread(run) in ROW_THREADS threads, this one and helpers (fewer if
 * a thread cannot be made), and wait for all of them.
 */
static void
rows_run_threads (struct rows_run *run, void *(*thread) (void *))
{
  pthread_t helpers[ROW_THREADS - 1];
  int n = 0;

  while (n < ROW_THREADS - 1 &&
         pthread_create (&helpers[n], NULL, thread, run) == 0)
    n++;
  thread (run);
  while (n > 0)
    pthread_join (helpers[--n], NULL);
}

static bool
rows_going (struct rows_run *run)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&run->turn_lock);
  return run->result == 1;
}

static uint64_t
rows_done (struct rows_run *run)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&run->turn_lock);
  return run->done;
}

/* The next window, once the rate allows it: its first row *s, rows *n,
 * sequence number *seq; false when there is none (done, stopped, or a
 * window failed).
 */
static bool
rows_claim (struct rows_run *run, uint64_t *s, uint64_t *n, uint64_t *seq)
{
  struct array *a = run->js->a;

  if (!rows_going (run) || stopping (run->j))
    return false;

  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&run->claim_lock);
  if (run->throttled) {
    throttle (run->js, run->j, run->claimed_rows * a->g.chunk, run->start);
    if (stopping (run->j))
      return false;
  }
  *s = run->next (a, run->j, run->next_row);
  if (*s >= a->g.stripes)
    return false;
  *n = 1;
  while (*n < (uint64_t) run->max && *s + *n < a->g.stripes &&
         run->next (a, run->j, *s + *n) == *s + *n)
    ++*n;
  run->next_row = *s + *n;
  run->claimed_rows += *n;
  *seq = run->claimed++;
  return true;
}

/* Wait for window seq's turn; whether the run is still going on (if not,
 * the window must change nothing in it).  Every claimed window takes its
 * turn, and ends it with rows_turn_end.
 */
static bool
rows_turn_begin (struct rows_run *run, uint64_t seq)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&run->turn_lock);
  while (run->completed != seq)
    pthread_cond_wait (&run->turn, &run->turn_lock);
  return run->result == 1;
}

/* The turn is over: the window's n rows were done (r == 1), or the run
 * ends with outcome r.
 */
static void
rows_turn_end (struct rows_run *run, int r, uint64_t n)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&run->turn_lock);
  if (run->result == 1 && r == 1)
    run->done += n;
  else if (run->result == 1)
    run->result = r;
  run->completed++;
  pthread_cond_broadcast (&run->turn);
}

/* A rebuild of member i (the one with this serial): the run's outcome is
 * rebuild_member's (0 the member failed or was replaced, -1 too few
 * readable members).
 */
struct rebuild_run {
  struct rows_run rows;         /* first: the threads are given &rows */
  int i;
  uint64_t serial;
  uint64_t recorded;            /* rows.done when last recorded in md; */
  int64_t recorded_at;          /* both written in turns */
};

/* Rows [s, s + n) of the member's rebuild, window seq, in a reader
 * section of their own: their locks taken in row order and held together
 * while stripe_rebuild_rows reads them all at once, reconstructs them and
 * writes them, and until the window's turn is over.  Client requests on
 * those rows wait for the window (a few milliseconds), as for one row; no
 * request holds a row while it waits for another, so taking several in
 * order cannot deadlock (lock.h).
 *
 * In its turn the window moves the recovery offset past its rows and
 * past the rows before them that a re-add jumped over (the bitmap says
 * they were not written while the member was out, so they hold the
 * array's data already).  It also decides whether to record the recovery
 * offset in md: every 256 rows or every second, whichever comes first
 * (where a restart goes on, and how far a re-add can trust the member
 * should it fail during this rebuild).  That is done after the heads are
 * put (md's lock comes before them).
 */
static void
rebuild_window (struct rebuild_run *rr, uint64_t s, uint64_t n, uint64_t seq)
{
  struct array *a = rr->rows.js->a;
  MEMBERS_READ_FOR_CURRENT_SCOPE (&a->ms);
  struct member *m = still_member (a, rr->i, rr->serial);
  struct stripe_head *sh[WINDOW_ROWS_MAX];
  uint64_t got = 0;
  bool record = false;
  int r = 0;

  if (m) {
    while (got < n && (sh[got] = stripe_cache_get (a->cache, s + got)))
      got++;
    r = got == n && stripe_rebuild_rows (a->cache, sh, n, rr->i) == 0;
    if (r == 0) {
      nbdkit_error ("raid: rebuild of member %d (%s) stopped at row %"
                    PRIu64 ": %s", rr->i, m->name, s,
                    member_strerror (errno));
      r = member_failed (m) ? 0 : -1;
    }
  }
  if (rows_turn_begin (&rr->rows, seq) && r == 1) {
    int64_t now = now_ns ();
    uint64_t done = rows_done (&rr->rows) + n;

    member_rebuilt_to (m, s + n);
    atomic_fetch_add_explicit (&m->resynced, n * a->g.chunk,
                               memory_order_relaxed);
    if (done - rr->recorded >= 256 || now - rr->recorded_at >= 1000000000) {
      rr->recorded = done;
      rr->recorded_at = now;
      record = true;
    }
  }
  rows_turn_end (&rr->rows, r, n);
  for (uint64_t k = got; k-- > 0;)
    stripe_cache_put (a->cache, sh[k]);
  if (record)
    md_array_states_changed (a->md);
}

static void *
rebuild_thread (void *arg)
{
  struct rebuild_run *rr = arg;
  uint64_t s, n, seq;

  while (rows_claim (&rr->rows, &s, &n, &seq))
    rebuild_window (rr, s, n, seq);
  return NULL;
}

/* Rows per window: WINDOW_BYTES of the member, within WINDOW_ROWS_MAX,
 * and under a rebuild-rate no more than 1/WINDOW_PER_S of a second's
 * worth, so that a throttled rebuild advances in small steps, each
 * followed by its wait, not in bursts a rate cap would then sit out.
 */
static int
window_rows (const struct jobs *js)
{
  uint64_t bytes = WINDOW_BYTES, n;

  if (js->rate && js->rate / WINDOW_PER_S < bytes)
    bytes = js->rate / WINDOW_PER_S;
  n = bytes / js->a->g.chunk;
  return n < 1 ? 1 : n > WINDOW_ROWS_MAX ? WINDOW_ROWS_MAX : (int) n;
}

/* Rebuild member i (the one with this serial) from its recovery offset
 * on, in two threads (rows_run_threads), one window of rows per reader
 * section (never across a throttle wait).
 * Returns -1 if it could not go on for want of readable members (it stays
 * rebuilding), else 0 (done, stopped, or the member failed or was
 * replaced meanwhile).
 */
static int
rebuild_member (struct jobs *js, struct job *j, int i, uint64_t serial)
{
  struct array *a = js->a;
  struct rebuild_run rr = {
    .i = i, .serial = serial, .recorded_at = j->member_start,
  };
  uint64_t done;
  int result;

  rows_run_init (&rr.rows, js, j, rebuild_next_row, window_rows (js),
                 j->first_row, true, j->member_start);
  rows_run_threads (&rr.rows, rebuild_thread);
  result = rr.rows.result;
  done = rr.rows.done;
  rows_run_destroy (&rr.rows);
  if (result != 1)
    return result;

  MEMBERS_READ_FOR_CURRENT_SCOPE (&a->ms);
  struct member *m = still_member (a, i, serial);

  if (m && stopping (j) && done > rr.recorded)
    md_array_states_changed (a->md);    /* where the next start goes on */
  if (m && j->readd && !stopping (j))
    member_rebuilt_to (m, a->g.stripes);        /* the clean rows left */
  if (!stopping (j) && m && member_readable (m, a->g.stripes - 1)) {
    member_rebuilt (m);
    md_array_states_changed (a->md);
    nbdkit_debug ("raid: member %d (%s) %s in %.1f s, %" PRIu64 " rows "
                  "written", i, m->name, j->readd ? "re-added" : "rebuilt",
                  (now_ns () - j->member_start) / 1e9, done);
  }
  return 0;
}

static void
record_bad_data (struct job *j, uint64_t stripe, int member)
{
  size_t n = j->nbad;

  if (n < JOBS_MAX_BAD_DATA) {
    j->bad[n].stripe = stripe;
    j->bad[n].member = member;
    atomic_store_explicit (&j->nbad, n + 1, memory_order_release);
  }
}

/* The next row the job goes over: every row, or for a resync those the
 * row record says it owes.
 */
static uint64_t
next_row (struct array *a, const struct job *j, uint64_t s)
{
  return j->resync ? row_record_next_resync (a->rows, s) : s;
}

/* Check (and with repair, fix) row s in a reader section of its own.
 * Returns 0, -1 (errno) if the row could not be checked, or -2 if it had
 * no stripe head (no memory).
 */
static int
scrub_row (struct array *a, const struct job *j, uint64_t s,
           uint8_t *scratch, struct stripe_scrub *res)
{
  MEMBERS_READ_FOR_CURRENT_SCOPE (&a->ms);
  struct stripe_head *sh = stripe_cache_get (a->cache, s);
  int r;

  if (sh == NULL)
    return -2;
  r = stripe_scrub_row (a->cache, sh, j->repair, scratch, res);
  stripe_cache_put (a->cache, sh);
  return r;
}

/* One thread of a scrub, a row at a time (rows_run_threads).  In its
 * row's turn: md's resync checkpoint, the counts and the bad data, in
 * row order.  A row that cannot be checked ends the scrub.
 */
static void *
scrub_thread (void *arg)
{
  struct rows_run *run = arg;
  struct jobs *js = run->js;
  struct job *j = run->j;
  struct array *a = js->a;
  uint8_t *scratch = aligned_alloc (4096, STRIPE_SCRUB_SCRATCH);
  uint64_t s, n, seq;

  if (scratch == NULL) {
    nbdkit_error ("raid: scrub: %m");   /* the other thread goes on */
    return NULL;
  }
  while (rows_claim (run, &s, &n, &seq)) {
    struct stripe_scrub res;
    int r = scrub_row (a, j, s, scratch, &res);

    if (r == -1)
      nbdkit_error ("raid: scrub stopped at row %" PRIu64 ": %m", s);
    if (rows_turn_begin (run, seq) && r == 0) {
      if (j->resync)
        row_record_resynced (a->rows, s);
      atomic_fetch_add_explicit (&j->mismatch_cnt, res.mismatches,
                                 memory_order_relaxed);
      atomic_fetch_add_explicit (&j->unreadable_bytes, res.unreadable_bytes,
                                 memory_order_relaxed);
      atomic_fetch_add_explicit (&j->lost_bytes, res.lost_bytes,
                                 memory_order_relaxed);
      if (res.bad_data_member >= 0)
        record_bad_data (j, s, res.bad_data_member);
      atomic_fetch_add_explicit (&j->rows_done, 1, memory_order_release);
    }
    rows_turn_end (run, r == 0 ? 1 : 0, 1);
  }
  free (scratch);
  return NULL;
}

/* Scrub (or resync) every row the job goes over, in two threads.  Whether
 * it went over them all: then it finished, even if a stop came while the
 * last one was checked (CI saw "finished": false with done equal to total
 * after such a stop).
 */
static bool
scrub (struct jobs *js, struct job *j)
{
  struct array *a = js->a;
  struct rows_run run;
  bool finished;

  /* A resync keeps to md's sync speed limit, rebuild-rate. */
  rows_run_init (&run, js, j, next_row, 1, 0, j->resync, j->start);
  rows_run_threads (&run, scrub_thread);
  finished = run.result == 1 &&
    next_row (a, j, run.next_row) >= a->g.stripes;
  rows_run_destroy (&run);
  return finished;
}

/* The job is over; after this the thread does not touch it. */
static void
job_end (struct jobs *js, struct job *j, bool finished)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&js->lock);

  j->finished = finished;
  js->job = NULL;
}

/* Job j, whose parameters are filled in, is the running one from now;
 * lock held.
 */
static void
job_begin (struct jobs *js, struct job *j)
{
  j->js = js;
  j->stop = false;
  j->start = now_ns ();
  js->job = j;
}

/* The scrub job's parameters; lock held, no job running.  The last
 * scrub's result is lost: the caller keeps a copy if it may refuse.
 */
static struct job *
scrub_job_fill (struct jobs *js, bool repair, bool resync)
{
  struct job *j = &js->scrub_job;

  memset (j, 0, sizeof *j);
  j->kind = JOB_SCRUB;
  j->member = -1;
  j->repair = repair;
  j->resync = resync;
  j->rows_total = resync ? row_record_resync_rows (js->a->rows)
    : js->a->g.stripes;
  return j;
}

/* md's order after recovery: the resync an unclean shutdown left owed
 * (md_check_recovery starts it once no spare needs recovery).  When the
 * rebuild that ends leaves every member in sync, the resync's job is
 * filled in and becomes the running one, for the rebuild's thread to
 * run; NULL if none is owed or it cannot run yet.  Lock held.
 */
static struct job *
resync_after_rebuild (struct jobs *js)
{
  struct array *a = js->a;
  struct job *j;

  if (a->readonly || !md_array_needs_resync (a->md) ||
      members_failed (&a->ms) > 0 || members_rebuilding (&a->ms) >= 0)
    return NULL;
  j = scrub_job_fill (js, true, true);
  job_begin (js, j);
  js->scrubbed = true;
  return j;
}

/* The next member to rebuild (its index, and in *serial its serial), or -1;
 * when none is left the job ends, both decided under the lock so that a
 * replace cannot slip in between, and the member and the row to start
 * from are read together.
 */
static int
next_or_finish (struct jobs *js, struct job *j, uint64_t *serial,
                struct job **resync)
{
  struct members *ms = &js->a->ms;
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&js->lock);
  int i = stopping (j) ? -1 : members_rebuilding (ms);

  if (i >= 0) {
    struct member *m = members_at (ms, i);      /* stays while the lock is
                                                   held */

    *serial = m->serial;
    j->member = i;
    j->member_start = now_ns ();
    j->first_row = member_recovery_stripe (m);
    j->readd = m->readd;
    j->whole_from = m->readd_whole_from;
    nbdkit_debug ("raid: %s member %d (%s) from row %" PRIu64,
                  m->readd ? "re-adding" : "rebuilding", i, m->name,
                  j->first_row);
    if (m->readd && j->whole_from < js->a->g.stripes)
      nbdkit_error ("raid: member %d (%s) failed during a rebuild that had "
                    "reached row %" PRIu64 ": its re-add rebuilds every row "
                    "from there, the bitmap's only below", i, m->name,
                    j->whole_from);
  }
  else {
    js->job = NULL;
    *resync = stopping (j) ? NULL : resync_after_rebuild (js);
  }
  return i;
}

static void *
job_thread (void *arg)
{
  struct job *j = arg;
  struct jobs *js = j->js;
  uint64_t serial;
  bool finished;
  int i;

  if (j->kind == JOB_REBUILD) {
    struct job *resync = NULL;

    while ((i = next_or_finish (js, j, &serial, &resync)) >= 0)
      if (rebuild_member (js, j, i, serial) == -1) {
        /* Too few readable members: leave it rebuilding rather than spin. */
        job_end (js, j, false);
        return NULL;
      }
    if (resync == NULL)
      return NULL;
    nbdkit_debug ("raid: every member is in sync: resyncing the %" PRIu64
                  " rows an unclean shutdown left", resync->rows_total);
    j = resync;
  }
  finished = scrub (js, j);
  if (j->repair) {
    MEMBERS_READ_FOR_CURRENT_SCOPE (&js->a->ms);

    /* What the scrub rewrote is made durable before the array may be
     * marked clean (md flushes before it writes a superblock), and so
     * that a remote member whose server restarts is not failed for
     * writes no flush covered (member_nbd.c).
     */
    if (members_flush (&js->a->ms, true) == 0 && finished)
      md_array_resynced (js->a->md);
  }
  job_end (js, j, finished);
  return NULL;
}

/* Start job j, whose parameters are filled in; lock held and no job
 * running (the caller checked, before it changed anything).  The thread
 * of the job that ran last is joined first: it has ended, or is about to
 * (job_end was its last use of the array).
 */
static int
job_start (struct jobs *js, struct job *j, char **why)
{
  if (js->job) {                /* its thread may wait for the lock */
    *why = "another rebuild or scrub is running";
    return -1;
  }
  if (js->joinable) {
    pthread_join (js->thread, NULL);
    js->joinable = false;
  }
  job_begin (js, j);
  if (pthread_create (&js->thread, NULL, job_thread, j)) {
    js->job = NULL;
    *why = "cannot start a thread";
    return -1;
  }
  js->joinable = true;
  return 0;
}

/* A new rebuild job; lock held, no job running. */
static int
rebuild_start (struct jobs *js, char **why)
{
  struct job *j = &js->rebuild_job;

  memset (j, 0, sizeof *j);
  j->kind = JOB_REBUILD;
  j->member = -1;
  return job_start (js, j, why);
}

static int
rebuild_resume (struct jobs *js)
{
  char *why = NULL;
  int r = 0;

  pthread_mutex_lock (&js->lock);
  if (members_rebuilding (&js->a->ms) >= 0 && js->job == NULL)
    r = rebuild_start (js, &why);
  pthread_mutex_unlock (&js->lock);
  if (r == -1)
    nbdkit_error ("raid: cannot resume the rebuild: %s", why);
  return r;
}

/* Refused if the array could not serve without the member; and unless
 * forced, if fewer members would be in sync than the level needs: a
 * member being rebuilt holds only the rows below its recovery offset, so
 * failing another one takes the rows above beyond what parity can
 * reconstruct, and stops the rebuild.
 */
int
jobs_fail_member (struct jobs *js, int i, bool force, char **why)
{
  static __thread char msg[256];
  struct array *a = js->a;
  struct members *ms = &a->ms;

  if (a->readonly) {
    *why = "the array is read-only";
    return -1;
  }

  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&js->lock);
  if (i < 0 || i >= ms->n) {
    *why = "no such member";
    return -1;
  }
  if (!member_failed (members_at (ms, i)) &&
      members_failed (ms) + 1 > ms->tolerance) {
    *why = "failing it would leave the array unable to serve";
    return -1;
  }
  if (!force && member_state (members_at (ms, i)) == MEMBER_IN_SYNC &&
      members_in_sync (ms) - 1 < ms->n - ms->tolerance) {
    snprintf (msg, sizeof msg, "failing member %d would leave %d members in "
              "sync, RAID-%d needs %d (member %d is rebuilding); 'fail %d "
              "force' fails it anyway", i, members_in_sync (ms) - 1,
              a->g.level, ms->n - ms->tolerance, members_rebuilding (ms), i);
    *why = msg;
    return -1;
  }
  if (!member_failed (members_at (ms, i))) {
    snprintf (msg, sizeof msg, "failed by the operator ('fail %d')", i);
    atomic_store (&members_at (ms, i)->failed_by_operator, true);
    member_fail_because (members_at (ms, i), msg);
  }
  md_array_states_changed (a->md);
  return 0;
}

/* The spare that is m's disk (member_same), or -1; why says so.  Under
 * the lock, which every change of the spares takes (Spares, below).
 */
static int
spare_holding (struct jobs *js, const struct member *m, char **why)
{
  static __thread char msg[128];
  struct members *ms = &js->a->ms;

  for (int k = 0; k < members_spares (ms); k++)
    if (member_same (m, members_spare_at (ms, k))) {
      snprintf (msg, sizeof msg, "it is spare %d already ('remove-spare "
                "%d' first)", k, k);
      *why = msg;
      return k;
    }
  return -1;
}

/* Decide, then change: everything that can refuse the replacement, the
 * rebuild's thread included, comes before it is installed.  A re-add was
 * checked against the failed member with serial `was` (0: a replacement,
 * which needs no such check), outside this lock: if another command put
 * a member in the role meanwhile, the check no longer holds.  A re-added
 * member is announced to md first, so that whichever update finds it in
 * the table keeps the role's slot and UUID.  Lock held.
 */
static int
install_replacement (struct jobs *js, int i, struct member *m, uint64_t was,
                     char **why)
{
  struct array *a = js->a;
  bool readd = was != 0;

  if (!member_failed (members_at (&a->ms, i)))
    *why = "the member has not failed: fail it first";
  else if (!m->from_spare && spare_holding (js, m, why) >= 0)
    ;
  else if (readd && members_at (&a->ms, i)->serial != was)
    *why = "another member took the role meanwhile: try again";
  else if (js->job && js->job->kind == JOB_SCRUB)
    *why = "a scrub or resync is running: replace the member when it has "
      "stopped (it stops at the next row, now that a member has failed; "
      "'scrub stop' stops it at once)";
  else if (members_limbo_full (&a->ms))
    *why = "too many replaced members are still held by requests in "
      "flight: try again in a moment";
  else if (js->job || rebuild_start (js, why) == 0) {
    /* The rebuild's thread waits for the lock, then finds m.  The old
     * member waits in limbo until no reader can hold it (member_table.c).
     */
    m->readd = readd;
    if (readd)
      md_array_readd_expect (a->md, i, m->serial);
    members_replace (&a->ms, i, m);
    md_array_states_changed (a->md);
    return 0;
  }
  return -1;
}

/* Open name and install it in failed role i: a replacement, or the
 * role's own disk re-added.  In a reader section (take_member): the
 * members the new one is checked against stay open while it looks.
 */
static int
take_member_read (struct jobs *js, int i, const char *name,
                  enum admission_kind how, char **why)
{
  static __thread char msg[768];        /* control clients run in parallel */
  struct array *a = js->a;
  struct member *m;
  uint64_t was;
  int r;

  if (a->readonly) {
    *why = "the array is read-only";
    return -1;
  }
  if (i < 0 || i >= a->ms.n) {
    *why = "no such member";
    return -1;
  }
  if (how == ADMISSION_READD && members_at (&a->ms, i)->from_spare) {
    /* md's rule: once a spare holds the role, the old disk's superblock
     * names a slot that is no longer the role's (the spare kept its own
     * dev_number), so mdadm --re-add refuses it and --add makes it a
     * spare.
     */
    snprintf (msg, sizeof msg, "a hot spare (%.200s) has taken role %d: "
              "its old disk can come back only as a spare ('add-spare "
              "PATH'), as with md", members_at (&a->ms, i)->name, i);
    *why = msg;
    return -1;
  }
  if (!member_failed (members_at (&a->ms, i))) {
    *why = "the member has not failed: fail it first";
    return -1;
  }
  if (!members_can_serve (&a->ms)) {
    *why = "too many members have failed for the array to be rebuilt";
    return -1;
  }
  was = how == ADMISSION_READD ? members_at (&a->ms, i)->serial : 0;
  if (strcmp (name, "missing") == 0) {
    *why = how == ADMISSION_READD ? "the member was 'missing' from the "
      "start: there is no disk to re-add ('replace N PATH' gives it one)"
      : "the replacement cannot be 'missing'";
    return -1;
  }
  /* EBUSY: a local disk another array or process holds (the file
   * backend's claim); said here too, since that is the answer to give.
   */
  errno = 0;
  m = array_open_member (a, name);
  if (m == NULL) {
    snprintf (msg, sizeof msg, "cannot open %.600s%s (see the nbdkit log)",
              name, errno == EBUSY && !member_is_uri (name)
              ? ": it is in use by another array or process" : "");
    *why = msg;
    return -1;
  }
  if (admission_check (a, i, m, name, how, msg, sizeof msg) == -1 ||
      md_array_give_log (a->md, i, m, how == ADMISSION_READD, msg,
                         sizeof msg) == -1) {
    *why = msg;
    member_close (m);
    return -1;
  }
  pthread_mutex_lock (&js->lock);
  r = install_replacement (js, i, m, was, why);
  pthread_mutex_unlock (&js->lock);
  if (r == -1)
    member_close (m);
  return r;
}

/* A re-add opens the failed member again by its open_name (the name it
 * was given, a relative path made absolute): copied, since the failed
 * member may be closed once out of the reader section.
 */
static int
take_member (struct jobs *js, int i, const char *name,
             enum admission_kind how, char **why)
{
  static __thread char old_name[4096];
  struct members *ms = &js->a->ms;
  int r;

  members_reclaim (ms);         /* make room in limbo if it can be made */
  {
    MEMBERS_READ_FOR_CURRENT_SCOPE (ms);

    if (name == NULL && i >= 0 && i < ms->n) {
      const struct member *m = members_at (ms, i);

      snprintf (old_name, sizeof old_name, "%s",
                m->open_name ? m->open_name : m->name);
      name = old_name;
    }
    if (name == NULL) {
      *why = "no such member";
      r = -1;
    }
    else
      r = take_member_read (js, i, name, how, why);
  }
  members_reclaim (ms);         /* starts the old member's grace period */
  return r;
}

int
jobs_replace_member (struct jobs *js, int i, const char *name, bool force,
                     char **why)
{
  return take_member (js, i, name,
                      force ? ADMISSION_FORCED : ADMISSION_REPLACEMENT, why);
}

int
jobs_readd_member (struct jobs *js, int i, char **why)
{
  return take_member (js, i, NULL, ADMISSION_READD, why);
}

/* Spares.  A hot spare is a disk in no role, admitted and carrying md's
 * superblock of a spare (md_array_spare_add), that takes a failed role
 * without the operator: md's recovery thread (md_check_recovery ->
 * remove_and_add_spares) gives every spare it has to a role that has
 * none and starts the recovery at once, and jobs_spare_takeover, asked
 * by the watcher (spare_auto.c) whenever a role has failed, does the
 * same through the path of a replacement (install_replacement), with
 * the spare keeping its dev_number and device UUID (md_array.c).  The
 * spares change only under the lock (and the member table's), so that
 * a takeover, add-spare and remove-spare never see each other half
 * done; a spare is checked again by admission when it takes a role,
 * outside the lock as a replacement is (it reads the disk), and the
 * choice is checked once more under the lock before it is installed.
 */
int
jobs_add_spare (struct jobs *js, const char *name, char **why)
{
  static __thread char msg[768];
  struct array *a = js->a;
  struct members *ms = &a->ms;
  struct member *m;
  int r = -1;

  if (a->readonly) {
    *why = "the array is read-only";
    return -1;
  }
  if (strcmp (name, "missing") == 0) {
    *why = "a spare must be a disk";
    return -1;
  }
  members_reclaim (ms);
  MEMBERS_READ_FOR_CURRENT_SCOPE (ms);
  m = array_open_member (a, name);
  if (m == NULL) {
    snprintf (msg, sizeof msg, "cannot open %.600s (see the nbdkit log)",
              name);
    *why = msg;
    return -1;
  }
  if (admission_check (a, -1, m, name, ADMISSION_SPARE, msg,
                       sizeof msg) == -1) {
    *why = msg;
    member_close (m);
    return -1;
  }
  {
    ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&js->lock);

    if (spare_holding (js, m, why) >= 0)
      ;
    else if (members_spares (ms) == MEMBERS_MAX_SPARES) {
      snprintf (msg, sizeof msg, "at most %d spares", MEMBERS_MAX_SPARES);
      *why = msg;
    }
    else if (md_array_spare_add (a->md, m, msg, sizeof msg) == -1)
      *why = msg;
    else {
      members_add_spare (ms, m);
      r = 0;
    }
  }
  if (r == -1)
    member_close (m);
  return r;
}

int
jobs_remove_spare (struct jobs *js, int k, char **why)
{
  struct members *ms = &js->a->ms;
  struct member *m;

  members_reclaim (ms);
  {
    ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&js->lock);

    if (members_spare_at (ms, k) == NULL) {
      *why = "no such spare";
      return -1;
    }
    if (members_limbo_full (ms)) {
      *why = "too many replaced members are still held by requests in "
        "flight: try again in a moment";
      return -1;
    }
    m = members_take_spare (ms, k);
    md_array_spare_gone (js->a->md, m->serial);
    members_discard (ms, m);    /* status may be printing its name */
  }
  members_reclaim (ms);
  return 0;
}

/* The lowest failed role, and the first spare that works (k), if a
 * takeover can start now; lock held.
 */
static int
takeover_choice (struct jobs *js, int *k)
{
  struct array *a = js->a;
  struct members *ms = &a->ms;
  int i;

  if (a->readonly || !members_can_serve (ms) || members_limbo_full (ms) ||
      (js->job && js->job->kind == JOB_SCRUB))
    return -1;                  /* a scrub stops at its next row */
  for (i = 0; i < ms->n && !member_failed (members_at (ms, i)); i++)
    ;
  if (i == ms->n)
    return -1;
  for (*k = 0; *k < members_spares (ms); (*k)++)
    if (!member_failed (members_spare_at (ms, *k)))
      return i;
  return -1;
}

int
jobs_spare_takeover (struct jobs *js, char **why)
{
  static __thread char msg[768];
  struct array *a = js->a;
  struct members *ms = &a->ms;
  struct member *m;
  int i, k, r;

  members_reclaim (ms);
  MEMBERS_READ_FOR_CURRENT_SCOPE (ms);
  pthread_mutex_lock (&js->lock);
  i = takeover_choice (js, &k);
  m = i >= 0 ? members_spare_at (ms, k) : NULL;
  pthread_mutex_unlock (&js->lock);
  if (m == NULL)
    return 0;
  /* Outside the lock: reading the disk may take an NBD timeout.  The
   * spare stays open meanwhile: a remove-spare puts it in limbo, which
   * this reader section holds.
   */
  if (admission_check (a, i, m, m->name, ADMISSION_SPARE, msg,
                       sizeof msg) == -1 ||
      md_array_give_log (a->md, i, m, false, msg, sizeof msg) == -1) {
    pthread_mutex_lock (&js->lock);
    if (members_spare_at (ms, k) == m)
      member_fail_because (m, msg);
    pthread_mutex_unlock (&js->lock);
    snprintf (msg + strlen (msg), sizeof msg - strlen (msg),
              "; it is not used ('remove-spare %d')", k);
    *why = msg;
    return -1;
  }
  {
    ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&js->lock);
    int now_k;

    /* Again under the lock: another command may have put a disk in the
     * role or removed the spare meanwhile.
     */
    if (takeover_choice (js, &now_k) != i || members_spare_at (ms, k) != m)
      return 0;
    md_array_spare_takes (a->md, i, m->serial);
    members_take_spare (ms, k);
    m->from_spare = true;
    r = install_replacement (js, i, m, 0, why);
    if (r == -1) {
      m->from_spare = false;
      md_array_spare_takes (a->md, -1, m->serial);
      members_add_spare (ms, m);        /* room: it has just left */
      return -1;
    }
  }
  nbdkit_error ("raid: member %d failed: hot spare %s takes its role, "
                "rebuilding", i, m->name);
  members_reclaim (ms);
  return 1;
}

/* Start a scrub.  Everything is checked under the lock before anything
 * is changed, and the new job's parameters go into a job of its own: a
 * refused scrub never touches the job that runs.
 */
static int
scrub_start (struct jobs *js, bool repair, bool resync, char **why)
{
  struct array *a = js->a;
  struct job *j = &js->scrub_job, last;
  int r;

  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&js->lock);
  if (js->job) {
    *why = "another rebuild or scrub is running";
    return -1;
  }
  if (members_failed (&a->ms) > 0 || members_rebuilding (&a->ms) >= 0) {
    *why = "the array is degraded: replace the failed members first";
    return -1;
  }
  last = *j;
  scrub_job_fill (js, repair, resync);
  r = job_start (js, j, why);
  if (r == 0)
    js->scrubbed = true;
  else
    *j = last;                  /* the last scrub's result stays */
  return r;
}

int
jobs_scrub_start (struct jobs *js, bool repair, char **why)
{
  if (repair && js->a->readonly) {
    *why = "the array is read-only (scrub check reads only)";
    return -1;
  }
  return scrub_start (js, repair, false, why);
}

/* After an unclean shutdown: repair the rows the bitmap marks (all rows
 * if there is no bitmap).
 */
static int
resync_start (struct jobs *js, char **why)
{
  int r = scrub_start (js, true, true, why);

  if (r == 0)
    nbdkit_debug ("raid: resyncing %" PRIu64 " of %" PRIu64 " rows",
                  js->scrub_job.rows_total, js->a->g.stripes);
  return r;
}

/* As mdadm --re-add at assembly: a member given on the command line
 * whose superblock is stale (md_array_stale_at_assembly) is re-added if
 * the row record covers what it missed, else it stays failed, saying why.
 */
static void
readd_stale_members (struct jobs *js)
{
  struct array *a = js->a;
  char *why;

  for (int i = 0; i < a->ms.n; i++) {
    if (!md_array_stale_at_assembly (a->md, i))
      continue;
    if (jobs_readd_member (js, i, &why) == 0)
      nbdkit_error ("raid: member %d (%s) was out of date: re-adding it "
                    "from the write-intent bitmap", i,
                    members_at (&a->ms, i)->name);
    else
      nbdkit_error ("raid: member %d (%s) is out of date and cannot be "
                    "re-added: %s; it is not used", i,
                    members_at (&a->ms, i)->name, why);
  }
}

/* A half-rebuilt member is rebuilt first, then stale members given at
 * start-up are re-added; the resync of an unclean array (a repairing
 * scrub of the rows the bitmap marks, or of all) needs every member in
 * sync, so it follows their rebuild (resync_after_rebuild), or, while a
 * member has failed, the rebuild of its replacement.
 */
int
jobs_after_fork (struct jobs *js)
{
  struct array *a = js->a;
  char *why;

  if (a->readonly)
    return 0;
  if (members_rebuilding (&a->ms) >= 0 && rebuild_resume (js) == -1)
    return -1;
  readd_stale_members (js);
  if (members_rebuilding (&a->ms) >= 0 || members_failed (&a->ms) > 0)
    return 0;
  if (md_array_needs_resync (a->md) && resync_start (js, &why) == -1) {
    nbdkit_error ("raid: cannot start the resync: %s", why);
    return -1;
  }
  return 0;
}

void
jobs_scrub_stop (struct jobs *js)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&js->lock);

  if (js->job && js->job->kind == JOB_SCRUB)
    job_stop_locked (js);
}

/* The rows a re-add still writes from row `from` on: those marked
 * (bitmap or record) below `whole`, and every row from there.
 */
static uint64_t
readd_owed_rows (struct array *a, uint64_t whole, uint64_t from)
{
  uint64_t dirty;

  if (whole >= a->g.stripes)
    return row_record_missed_rows (a->rows, from);
  if (from >= whole)
    return a->g.stripes - from;
  /* Marks are only set while a member is out: counted after those past
   * whole, the rows from `from` on cannot be fewer.
   */
  dirty = row_record_missed_rows (a->rows, whole);
  dirty = row_record_missed_rows (a->rows, from) - dirty;
  return dirty + a->g.stripes - whole;
}

/* The rows member m (in state st) still lacks: every row it has not
 * been rebuilt to, but for a member that failed or is being re-added
 * the rows the row record says it may have missed (every row where
 * nothing records them), and every row from where a failed rebuild had
 * got to (the rows a re-add would write).
 */
static uint64_t
owed_rows (struct array *a, const struct member *m, enum member_state st)
{
  uint64_t from = member_recovery_stripe (m);

  switch (st) {
  case MEMBER_IN_SYNC:
    return 0;
  case MEMBER_FAILED:
    return readd_owed_rows (a, admission_failed_whole_from (m), 0);
  default:
    if (m->readd)
      return readd_owed_rows (a, m->readd_whole_from, from);
    return from < a->g.stripes ? a->g.stripes - from : 0;
  }
}

/* What an owed resync waits for (jobs.h says each); lock held. */
static const char *
jobs_resync_pending (struct jobs *js)
{
  struct array *a = js->a;

  if (js->job && js->job->kind == JOB_SCRUB && js->job->resync)
    return NULL;
  if (a->readonly)
    return "read-only";
  if (members_failed (&a->ms) > 0)
    return "degraded";
  if (members_rebuilding (&a->ms) >= 0)
    return "rebuild";
  return "stopped";
}

/* Under the lock: the jobs' parameters cannot change while it is held,
 * and the member table changes only under it (replace), so the states
 * agree with the members listed even while a rebuild finishes.
 */
void
jobs_status (struct jobs *js, struct jobs_status *st)
{
  struct members *ms = &js->a->ms;
  const struct job *rj = &js->rebuild_job, *sc = &js->scrub_job;
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&js->lock);

  st->now = now_ns ();
  st->nmembers = ms->n;
  for (int i = 0; i < ms->n; i++) {
    struct member *m = members_at (ms, i);

    st->member[i].m = m;
    st->member[i].state = member_state (m);
    st->member[i].recovery_stripe = member_recovery_stripe (m);
    st->member[i].readd = m->readd;
    st->member[i].from_spare = m->from_spare;
    st->member[i].owed_rows = owed_rows (js->a, m, st->member[i].state);
    st->member[i].resynced = atomic_load_explicit (&m->resynced,
                                                   memory_order_relaxed);
  }
  st->nspares = members_spares (ms);
  for (int k = 0; k < st->nspares; k++) {
    st->spare[k].m = members_spare_at (ms, k);
    st->spare[k].state = member_state (st->spare[k].m);
  }
  st->rebuild_running = js->job && js->job->kind == JOB_REBUILD;
  st->rebuild_readd = rj->readd;
  st->rebuild_member = st->rebuild_running ? rj->member : -1;
  st->rebuild_member_start = rj->member_start;
  st->rebuild_first_row = rj->first_row;

  st->scrub_running = js->job && js->job->kind == JOB_SCRUB;
  st->scrubbed = js->scrubbed;
  st->scrub_repair = sc->repair;
  st->scrub_resync = sc->resync;
  st->scrub_finished = sc->finished;
  st->scrub_start = sc->start;
  st->scrub_rows_done = atomic_load_explicit (&sc->rows_done,
                                              memory_order_acquire);
  st->scrub_rows_total = sc->rows_total;
  st->scrub_mismatch_cnt = atomic_load_explicit (&sc->mismatch_cnt,
                                                 memory_order_relaxed);
  st->scrub_unreadable_bytes =
    atomic_load_explicit (&sc->unreadable_bytes, memory_order_relaxed);
  st->scrub_lost_bytes =
    atomic_load_explicit (&sc->lost_bytes, memory_order_relaxed);
  st->scrub_nbad = atomic_load_explicit (&sc->nbad, memory_order_acquire);
  memcpy (st->scrub_bad, sc->bad, st->scrub_nbad * sizeof sc->bad[0]);
  st->resync_owed = md_array_needs_resync (js->a->md);
  st->resync_pending = st->resync_owed ? jobs_resync_pending (js) : NULL;
}
