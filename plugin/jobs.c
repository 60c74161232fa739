/* Operator actions and the background jobs that repair an array while it
 * serves: failing a member, replacing one (which starts a rebuild), and
 * scrubbing.
 *
 * One background thread at a time runs a job, row by row:
 *
 *   rebuild  while some member is REBUILDING: for each row from its
 *            recovery_stripe on, take the row's lock, reconstruct the
 *            member's chunk from the others and write it, then advance
 *            recovery_stripe (still under the lock, so no request sees a
 *            row half done).  At the end the member is IN_SYNC.  A member
 *            replaced while the job runs is picked up when the current one
 *            is done.
 *   scrub    for each row: read it from the members, compare the parity
 *            with the data (stripe_scrub_row), count mismatched pages like
 *            md's mismatch_cnt, and with repair rewrite what is wrong.
 *
 * Client requests keep priority: each row's lock is held only for that
 * row, and rebuild-rate caps the rebuild's write rate (bytes per second).
 * The cap is a deadline from the job's start (rebuild_throttle_delay, a
 * pure function of one clock reading, never negative), and the wait for it
 * is on job_wake, which every stop request broadcasts.
 * A job stops early when asked (scrub stop, unload) or when the array can
 * no longer serve.  State lives in memory only: a restarted nbdkit knows
 * nothing of an earlier rebuild (md superblocks will keep it).
 *
 * Jobs and job_lock.  Each run of a job has a struct array_job of its own
 * (a->rebuild_job, a->scrub_job: the last of each kind, so that status
 * can show the last scrub's result).  An operator action checks
 * everything it needs under job_lock before it changes anything, so that
 * a refused action changes nothing; a new job's parameters are filled in
 * under job_lock while no job runs, before its thread starts, and nothing
 * writes them while it runs (its thread reads them without a lock).
 * a->job, the running job, changes only under job_lock: set by job_start,
 * cleared by the thread's last act (job_end, next_or_finish), after which
 * the thread touches neither the job nor the array.  The job's progress
 * counters are atomics written by its thread; the rebuild's member and
 * first row are written under job_lock.  status takes job_lock for one
 * consistent snapshot.  The member table's replacement happens under
 * job_lock too.
 *
 * Replacing a member and reclaiming the old one once no reader can hold
 * it: see members.c.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "array.h"
#include "jobs.h"
#include "md_array.h"
#include "md_bitmap.h"

static int64_t
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * INT64_C (1000000000) + ts.tv_nsec;
}

static bool
stopping (const struct array_job *j)
{
  return __atomic_load_n (&j->stop, __ATOMIC_ACQUIRE);
}

/* Wait as needed to keep `bytes` since start_ns under the rate.  The
 * clock is read once per wait and the delay is signed
 * (rebuild_throttle_delay), so that a thread preempted past its due time
 * goes on at once; the wait is on job_wake, which a stop request
 * broadcasts, so that unload never waits for a throttled job.
 */
static void
throttle (struct array *a, struct array_job *j, uint64_t bytes,
          int64_t start_ns)
{
  if (a->rebuild_rate == 0)
    return;
  pthread_mutex_lock (&a->job_lock);
  while (!j->stop) {
    int64_t now = now_ns ();
    int64_t d = rebuild_throttle_delay (now, start_ns, bytes, a->rebuild_rate);
    int64_t until = d > INT64_MAX - now ? INT64_MAX : now + d;
    struct timespec ts = { .tv_sec = until / 1000000000,
                           .tv_nsec = until % 1000000000 };

    if (d == 0)
      break;
    pthread_cond_timedwait (&a->job_wake, &a->job_lock, &ts);
  }
  pthread_mutex_unlock (&a->job_lock);
}

void
array_jobs_init (struct array *a)
{
  pthread_condattr_t attr;

  pthread_mutex_init (&a->job_lock, NULL);
  pthread_condattr_init (&attr);
  pthread_condattr_setclock (&attr, CLOCK_MONOTONIC);
  pthread_cond_init (&a->job_wake, &attr);
  pthread_condattr_destroy (&attr);
}

void
array_jobs_destroy (struct array *a)
{
  pthread_cond_destroy (&a->job_wake);
  pthread_mutex_destroy (&a->job_lock);
}

/* Ask the running job, if any, to stop; job_lock held. */
static void
job_stop_locked (struct array *a)
{
  if (a->job) {
    __atomic_store_n (&a->job->stop, true, __ATOMIC_RELEASE);
    pthread_cond_broadcast (&a->job_wake);
  }
}

/* Member i, if it is still the one with this serial and has not failed;
 * in a reader section (members.c).  (The serial, not the address: a
 * member replaced meanwhile may have been closed and its memory reused.)
 */
static struct member *
still_member (struct array *a, int i, uint64_t serial)
{
  struct member *m = members_at (&a->ms, i);

  return m->serial == serial && !member_failed (m) ? m : NULL;
}

/* Rebuild member i (the one with this serial) from its recovery offset
 * on, one row per reader section.  Returns -1 if it could not go on for
 * want of readable members (it stays rebuilding), else 0 (done, stopped,
 * or the member failed or was replaced meanwhile).
 */
static int
rebuild_member (struct array *a, struct array_job *j, int i, uint64_t serial)
{
  int64_t start = j->member_start;
  uint64_t first = j->first_row;
  struct member *m;
  unsigned t;

  for (uint64_t s = first; s < a->g.stripes && !stopping (j); s++) {
    struct stripe_head *sh;
    int r;

    t = members_enter (&a->ms);
    if ((m = still_member (a, i, serial)) == NULL) {
      members_exit (&a->ms, t);
      return 0;                 /* failed or replaced again meanwhile */
    }
    sh = stripe_cache_get (a->cache, s);
    if (sh == NULL) {
      members_exit (&a->ms, t);
      return -1;
    }
    r = stripe_rebuild_row (a->cache, sh, i);
    if (r == 0)
      member_rebuilt_to (m, s + 1);
    stripe_cache_put (a->cache, sh);
    if (r == -1) {
      nbdkit_error ("raid: rebuild of member %d (%s) stopped at row %" PRIu64
                    ": %m", i, m->name, s);
      r = member_failed (m) ? 0 : -1;
      members_exit (&a->ms, t);
      return r;
    }
    if ((s + 1) % 256 == 0)
      md_array_states_changed (a->md);      /* record the recovery offset */
    members_exit (&a->ms, t);
    throttle (a, j, (s + 1 - first) * a->g.chunk, start);
  }
  t = members_enter (&a->ms);
  m = still_member (a, i, serial);
  if (!stopping (j) && m && member_readable (m, a->g.stripes - 1)) {
    member_rebuilt (m);
    md_array_states_changed (a->md);
    nbdkit_debug ("raid: member %d (%s) rebuilt in %.1f s", i, m->name,
                  (now_ns () - start) / 1e9);
  }
  members_exit (&a->ms, t);
  return 0;
}

static void
record_bad_data (struct array_job *j, uint64_t stripe, int member)
{
  size_t n = j->nbad;

  if (n < ARRAY_MAX_BAD_DATA) {
    j->bad[n].stripe = stripe;
    j->bad[n].member = member;
    __atomic_store_n (&j->nbad, n + 1, __ATOMIC_RELEASE);
  }
}

/* The next row the job goes over: every row, or for a resync those the
 * write-intent bitmap marks.
 */
static uint64_t
next_row (struct array *a, const struct array_job *j, uint64_t s)
{
  return j->resync ? md_array_resync_next_row (a->md, s) : s;
}

/* Go over the rows; returns whether it went over all of them. */
static bool
scrub (struct array *a, struct array_job *j)
{
  uint8_t *scratch = aligned_alloc (4096, 2 * a->g.chunk);
  uint64_t s, done = 0;

  if (scratch == NULL) {
    nbdkit_error ("raid: scrub: %m");
    return false;
  }
  for (s = next_row (a, j, 0); s < a->g.stripes && !stopping (j);
       s = next_row (a, j, s + 1)) {
    unsigned t = members_enter (&a->ms);
    struct stripe_head *sh = stripe_cache_get (a->cache, s);
    struct stripe_scrub res;
    int r = -1;

    if (sh) {
      r = stripe_scrub_row (a->cache, sh, j->repair, scratch, &res);
      stripe_cache_put (a->cache, sh);
    }
    members_exit (&a->ms, t);
    if (sh == NULL)
      break;
    if (r == -1) {
      nbdkit_error ("raid: scrub stopped at row %" PRIu64 ": %m", s);
      break;
    }
    if (j->resync)
      md_array_row_resynced (a->md, s);
    __atomic_fetch_add (&j->mismatch_cnt, res.mismatches, __ATOMIC_RELAXED);
    if (res.bad_data_member >= 0)
      record_bad_data (j, s, res.bad_data_member);
    __atomic_store_n (&j->rows_done, ++done, __ATOMIC_RELEASE);
    if (j->resync)              /* md's sync speed limit: rebuild-rate */
      throttle (a, j, done * a->g.chunk, j->start);
  }
  free (scratch);
  return !stopping (j) && s >= a->g.stripes;
}

/* The job is over; after this the thread does not touch it. */
static void
job_end (struct array *a, struct array_job *j, bool finished)
{
  pthread_mutex_lock (&a->job_lock);
  j->finished = finished;
  a->job = NULL;
  pthread_mutex_unlock (&a->job_lock);
}

/* The next member to rebuild (its index, and in *serial its serial), or -1;
 * when none is left the job ends, both decided under job_lock so that a
 * replace cannot slip in between, and the member and the row to start
 * from are read together.
 */
static int
next_or_finish (struct array *a, struct array_job *j, uint64_t *serial)
{
  int i;

  pthread_mutex_lock (&a->job_lock);
  i = stopping (j) ? -1 : members_rebuilding (&a->ms);
  if (i >= 0) {
    struct member *m = members_at (&a->ms, i);   /* stays while job_lock is held */

    *serial = m->serial;
    j->member = i;
    j->member_start = now_ns ();
    j->first_row = member_recovery_stripe (m);
    nbdkit_debug ("raid: rebuilding member %d (%s) from row %" PRIu64, i,
                  m->name, j->first_row);
  }
  else
    a->job = NULL;
  pthread_mutex_unlock (&a->job_lock);
  return i;
}

static void *
job_thread (void *arg)
{
  struct array_job *j = arg;
  struct array *a = j->a;
  uint64_t serial;
  int i;

  if (j->kind == JOB_SCRUB) {
    bool finished = scrub (a, j);

    if (finished && j->repair) {
      unsigned t = members_enter (&a->ms);

      md_array_resynced (a->md);
      members_exit (&a->ms, t);
    }
    job_end (a, j, finished);
    return NULL;
  }
  while ((i = next_or_finish (a, j, &serial)) >= 0)
    if (rebuild_member (a, j, i, serial) == -1) {
      /* Too few readable members: leave it rebuilding rather than spin. */
      job_end (a, j, false);
      break;
    }
  return NULL;
}

/* Start job j, whose parameters are filled in; job_lock held and no job
 * running (the caller checked, before it changed anything).  The thread
 * of the job that ran last is joined first: it has ended, or is about to
 * (job_end was its last use of the array).
 */
static int
job_start (struct array *a, struct array_job *j, char **why)
{
  if (a->job) {                 /* its thread may wait for job_lock */
    *why = "another rebuild or scrub is running";
    return -1;
  }
  if (a->job_joinable) {
    pthread_join (a->job_thread, NULL);
    a->job_joinable = false;
  }
  j->a = a;
  j->stop = false;
  j->start = now_ns ();
  a->job = j;
  if (pthread_create (&a->job_thread, NULL, job_thread, j)) {
    a->job = NULL;
    *why = "cannot start a thread";
    return -1;
  }
  a->job_joinable = true;
  return 0;
}

/* A new rebuild job; job_lock held, no job running. */
static int
rebuild_start (struct array *a, char **why)
{
  struct array_job *j = &a->rebuild_job;

  memset (j, 0, sizeof *j);
  j->kind = JOB_REBUILD;
  j->member = -1;
  return job_start (a, j, why);
}

void
array_jobs_stop (struct array *a)
{
  pthread_mutex_lock (&a->job_lock);
  job_stop_locked (a);
  pthread_mutex_unlock (&a->job_lock);
  if (a->job_joinable) {
    pthread_join (a->job_thread, NULL);
    a->job_joinable = false;
  }
}

int
array_rebuild_resume (struct array *a)
{
  char *why = NULL;
  int r = 0;

  pthread_mutex_lock (&a->job_lock);
  if (members_rebuilding (&a->ms) >= 0 && a->job == NULL)
    r = rebuild_start (a, &why);
  pthread_mutex_unlock (&a->job_lock);
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
array_fail_member (struct array *a, int i, bool force, char **why)
{
  static __thread char msg[256];
  int r = -1;

  if (a->readonly) {
    *why = "the array is read-only";
    return -1;
  }
  pthread_mutex_lock (&a->job_lock);
  if (i < 0 || i >= a->ms.n)
    *why = "no such member";
  else if (!member_failed (members_at (&a->ms, i)) &&
           members_failed (&a->ms) + 1 > a->ms.tolerance)
    *why = "failing it would leave the array unable to serve";
  else if (!force &&
           member_state (members_at (&a->ms, i)) == MEMBER_IN_SYNC &&
           members_in_sync (&a->ms) - 1 < a->ms.n - a->ms.tolerance) {
    snprintf (msg, sizeof msg, "failing member %d would leave %d members in "
              "sync, RAID-%d needs %d (member %d is rebuilding); 'fail %d "
              "force' fails it anyway", i, members_in_sync (&a->ms) - 1,
              a->g.level,
              a->ms.n - a->ms.tolerance,
              members_rebuilding (&a->ms), i);
    *why = msg;
  }
  else {
    member_fail (members_at (&a->ms, i), EIO);
    md_array_states_changed (a->md);
    r = 0;
  }
  pthread_mutex_unlock (&a->job_lock);
  return r;
}

/* The rebuild would overwrite whatever m holds: refuse another array's
 * disk, a partitioned disk, a filesystem (message in msg).
 */
static int
foreign (struct array *a, struct member *m, const char *name, char *msg,
         size_t len)
{
  char what[256];

  switch (md_array_foreign (a->md, m, what, sizeof what)) {
  case 0:
    return 0;
  case 1:
    snprintf (msg, len, "%s carries %s: refusing to overwrite it (replace "
              "N PATH force does)", name, what);
    return 1;
  default:
    snprintf (msg, len, "cannot read %s: %s", name, strerror (errno));
    return -1;
  }
}

static int
replace_member (struct array *a, int i, const char *name, bool force,
                char **why)
{
  static __thread char msg[512];        /* control clients run in parallel */
  uint64_t need = a->g.data_offset + a->g.stripes * a->g.chunk;
  struct member *m;
  int r = -1;

  if (a->readonly) {
    *why = "the array is read-only";
    return -1;
  }
  if (i < 0 || i >= a->ms.n) {
    *why = "no such member";
    return -1;
  }
  if (!member_failed (members_at (&a->ms, i))) {
    *why = "the member has not failed: fail it first";
    return -1;
  }
  if (members_failed (&a->ms) > a->ms.tolerance) {
    *why = "too many members have failed for the array to be rebuilt";
    return -1;
  }
  if (strcmp (name, "missing") == 0) {
    *why = "the replacement cannot be 'missing'";
    return -1;
  }
  m = members_open_member (name, a->direct);
  if (m == NULL) {
    snprintf (msg, sizeof msg, "cannot open %s (see the nbdkit log)", name);
    *why = msg;
    return -1;
  }
  if (m->size < need) {
    snprintf (msg, sizeof msg, "%s is too small: %" PRIu64 " bytes, the array "
              "needs %" PRIu64, name, m->size, need);
    *why = msg;
    goto err;
  }
  if (array_cannot_align (a, m)) {
    snprintf (msg, sizeof msg, "%s: %s", name, array_cannot_align (a, m));
    *why = msg;
    goto err;
  }
  for (int j = 0; j < a->ms.n; j++)
    if (j != i && member_same (m, members_at (&a->ms, j))) {
      snprintf (msg, sizeof msg, "%s is already member %d", name, j);
      *why = msg;
      goto err;
    }
  if (!force && (r = foreign (a, m, name, msg, sizeof msg)) != 0) {
    *why = msg;
    r = -1;
    goto err;
  }

  /* Decide, then change: everything that can refuse the replacement,
   * the rebuild's thread included, comes before it is installed.
   */
  r = -1;
  pthread_mutex_lock (&a->job_lock);
  if (!member_failed (members_at (&a->ms, i)))
    *why = "the member has not failed: fail it first";
  else if (a->job && a->job->kind == JOB_SCRUB)
    *why = "a scrub or resync is running: replace the member when it has "
      "stopped (it stops at the next row, now that a member has failed; "
      "'scrub stop' stops it at once)";
  else if (members_limbo_full (&a->ms))
    *why = "too many replaced members are still held by requests in "
      "flight: try again in a moment";
  else if (a->job || rebuild_start (a, why) == 0) {
    /* The rebuild's thread waits for job_lock, then finds m.  The old
     * member waits in limbo until no reader can hold it (members.c).
     */
    members_replace (&a->ms, i, m);
    md_array_states_changed (a->md);
    r = 0;
  }
  pthread_mutex_unlock (&a->job_lock);
  if (r == 0)
    return 0;

 err:
  member_close (m);
  return -1;
}

/* What replace_member reads of the member table, the members it checks
 * the new one against, stays open while it looks (a reader section).
 */
int
array_replace_member (struct array *a, int i, const char *name, bool force,
                      char **why)
{
  unsigned t;
  int r;

  members_reclaim (&a->ms);            /* make room in limbo if it can be made */
  t = members_enter (&a->ms);
  r = replace_member (a, i, name, force, why);
  members_exit (&a->ms, t);
  members_reclaim (&a->ms);            /* starts the old member's grace period */
  return r;
}

/* Start a scrub.  Everything is checked under job_lock before anything
 * is changed, and the new job's parameters go into a job of its own: a
 * refused scrub never touches the job that runs.
 */
static int
scrub_start (struct array *a, bool repair, bool resync, char **why)
{
  struct array_job *j = &a->scrub_job, last;
  int r = -1;

  pthread_mutex_lock (&a->job_lock);
  if (a->job)
    *why = "another rebuild or scrub is running";
  else if (members_failed (&a->ms) > 0 || members_rebuilding (&a->ms) >= 0)
    *why = "the array is degraded: replace the failed members first";
  else {
    last = *j;
    memset (j, 0, sizeof *j);
    j->kind = JOB_SCRUB;
    j->member = -1;
    j->repair = repair;
    j->resync = resync;
    j->rows_total = resync ? md_array_resync_rows (a->md) : a->g.stripes;
    r = job_start (a, j, why);
    if (r == 0)
      a->scrubbed = true;
    else
      *j = last;                /* the last scrub's result stays */
  }
  pthread_mutex_unlock (&a->job_lock);
  return r;
}

int
array_scrub_start (struct array *a, bool repair, char **why)
{
  if (repair && a->readonly) {
    *why = "the array is read-only (scrub check reads only)";
    return -1;
  }
  return scrub_start (a, repair, false, why);
}

/* After an unclean shutdown: repair the rows the bitmap marks (all rows
 * if there is no bitmap).
 */
int
array_resync_start (struct array *a, char **why)
{
  int r = scrub_start (a, true, true, why);

  if (r == 0)
    nbdkit_debug ("raid: resyncing %" PRIu64 " of %" PRIu64 " rows",
                  a->scrub_job.rows_total, a->g.stripes);
  return r;
}

void
array_scrub_stop (struct array *a)
{
  pthread_mutex_lock (&a->job_lock);
  if (a->job && a->job->kind == JOB_SCRUB)
    job_stop_locked (a);
  pthread_mutex_unlock (&a->job_lock);
}

static const char *
state_name (int state)
{
  switch (state) {
  case MEMBER_IN_SYNC: return "in_sync";
  case MEMBER_FAILED: return "failed";
  default: return "rebuilding";
  }
}

/* The length of the well-formed UTF-8 sequence at s (1 to 4), or 0 if
 * there is none: a stray continuation byte, a truncated sequence, an
 * overlong form, a surrogate or a code point past U+10FFFF (RFC 3629).
 */
static int
utf8_sequence (const unsigned char *s)
{
  int n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
    : (s[0] & 0xf0) == 0xe0 ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
  unsigned char lo = 0x80, hi = 0xbf;   /* the second byte's range */

  if (s[0] == 0xe0) lo = 0xa0;          /* overlong */
  if (s[0] == 0xed) hi = 0x9f;          /* surrogates */
  if (s[0] == 0xf0) lo = 0x90;          /* overlong */
  if (s[0] == 0xf4) hi = 0x8f;          /* past U+10FFFF */
  for (int k = 1; k < n; k++)
    if (s[k] < (k == 1 ? lo : 0x80) || s[k] > (k == 1 ? hi : 0xbf))
      return 0;
  return n;
}

/* A JSON string.  Names are paths or URIs, byte strings that need not be
 * UTF-8: what is well-formed UTF-8 goes out as it is (escaping what JSON
 * requires), and each byte that is not part of a well-formed sequence
 * becomes U+FFFD, so that the reply is always valid UTF-8 and valid JSON.
 */
static void
json_string (FILE *f, const char *str)
{
  const unsigned char *s = (const unsigned char *) str;

  fputc ('"', f);
  while (*s) {
    int n = utf8_sequence (s);

    if (n == 0) {
      fputs ("\\ufffd", f);
      s++;
    }
    else if (*s == '"' || *s == '\\') {
      fprintf (f, "\\%c", *s);
      s++;
    }
    else if (*s < 0x20 || *s == 0x7f) {
      fprintf (f, "\\u%04x", *s);
      s++;
    }
    else {
      fwrite (s, 1, n, f);
      s += n;
    }
  }
  fputc ('"', f);
}

static void
print_bitmap (struct array *a, FILE *f)
{
  struct md_bitmap_stats st;

  if (md_array_bitmap_stats (a->md, &st))
    fprintf (f, ",\"bitmap\":{\"chunk\":%" PRIu64 ",\"bits\":%" PRIu64
             ",\"dirty\":%" PRIu64 "}", st.chunksize, st.bits, st.dirty);
  else
    fprintf (f, ",\"bitmap\":null");
}

/* One snapshot under job_lock: the job's parameters cannot change while
 * it is held, and the member table only changes under it.
 */
void
array_status_json (struct array *a, FILE *f)
{
  bool rebuild, scrubbing;
  const struct array_job *sc = &a->scrub_job;
  uint64_t done = 0, total = a->g.stripes * a->g.chunk;
  int64_t now = now_ns ();

  pthread_mutex_lock (&a->job_lock);
  rebuild = a->job && a->job->kind == JOB_REBUILD;
  scrubbing = a->job && a->job->kind == JOB_SCRUB;

  /* One snapshot of the states, so that "degraded" and "failed" agree
   * with the members listed even while a rebuild finishes.
   */
  int states[GEOMETRY_MAX_MEMBERS], failed = 0;
  bool degraded = false;

  for (int i = 0; i < a->ms.n; i++) {
    states[i] = member_state (members_at (&a->ms, i));
    failed += states[i] == MEMBER_FAILED;
    degraded |= states[i] != MEMBER_IN_SYNC;
  }
  fprintf (f, "{\"level\":%d,\"layout\":\"%s\",\"chunk\":%" PRIu64
           ",\"size\":%" PRIu64 ",\"degraded\":%s,\"failed\":%d,\"members\":[",
           a->g.level, geometry_layout_name (a->g.layout), a->g.chunk,
           a->g.array_size, degraded ? "true" : "false", failed);
  for (int i = 0; i < a->ms.n; i++) {
    struct member *m = members_at (&a->ms, i);
    int st = states[i];
    uint64_t rec = st == MEMBER_IN_SYNC ? total
      : st == MEMBER_FAILED ? 0
      : member_recovery_stripe (m) * a->g.chunk;

    fprintf (f, "%s{\"index\":%d,\"name\":", i ? "," : "", i);
    json_string (f, m->name);
    fprintf (f, ",\"state\":\"%s\",\"recovery_offset\":%" PRIu64 "}",
             state_name (st), rec);
  }

  const struct array_job *rj = &a->rebuild_job;
  bool rebuilding = rebuild && rj->member >= 0;
  double elapsed = rebuilding ? (now - rj->member_start) / 1e9 : 0;

  if (rebuilding)
    done = member_recovery_stripe (members_at (&a->ms, rj->member))
      * a->g.chunk;
  fprintf (f, "],\"rebuild\":{\"running\":%s,\"member\":%d,\"done\":%" PRIu64
           ",\"total\":%" PRIu64 ",\"mb_per_s\":%.1f}",
           rebuild ? "true" : "false", rebuilding ? rj->member : -1, done,
           total, elapsed > 0
           ? (done - rj->first_row * a->g.chunk) / elapsed / 1e6 : 0.0);

  done = __atomic_load_n (&sc->rows_done, __ATOMIC_ACQUIRE) * a->g.chunk;
  total = a->scrubbed ? sc->rows_total * a->g.chunk : total;
  elapsed = scrubbing ? (now - sc->start) / 1e9 : 0;
  fprintf (f, ",\"scrub\":{\"running\":%s,\"repair\":%s,\"resync\":%s,"
           "\"done\":%" PRIu64 ",\"total\":%" PRIu64 ",\"mb_per_s\":%.1f,"
           "\"mismatch_cnt\":%" PRIu64 ",\"finished\":%s,\"bad_data\":[",
           scrubbing ? "true" : "false", sc->repair ? "true" : "false",
           sc->resync ? "true" : "false", done, total,
           elapsed > 0 ? done / elapsed / 1e6 : 0.0,
           __atomic_load_n (&sc->mismatch_cnt, __ATOMIC_RELAXED),
           sc->finished ? "true" : "false");
  for (size_t k = 0; k < __atomic_load_n (&sc->nbad, __ATOMIC_ACQUIRE); k++)
    fprintf (f, "%s{\"stripe\":%" PRIu64 ",\"member\":%d}", k ? "," : "",
             sc->bad[k].stripe, sc->bad[k].member);
  fprintf (f, "]}");
  print_bitmap (a, f);
  fprintf (f, "}\n");
  pthread_mutex_unlock (&a->job_lock);
}
