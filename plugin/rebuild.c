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
 * job_lock guards the job fields and the member table's replacement; the
 * counters the job updates are read without it for status (they are only
 * progress figures).
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
#include "rebuild.h"
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
stopping (struct array *a)
{
  return __atomic_load_n (&a->job.stop, __ATOMIC_ACQUIRE);
}

/* Wait as needed to keep `bytes` since start_ns under the rate.  The
 * clock is read once per wait and the delay is signed
 * (rebuild_throttle_delay), so that a thread preempted past its due time
 * goes on at once; the wait is on job_wake, which a stop request
 * broadcasts, so that unload never waits for a throttled job.
 */
static void
throttle (struct array *a, uint64_t bytes, int64_t start_ns)
{
  if (a->rebuild_rate == 0)
    return;
  pthread_mutex_lock (&a->job_lock);
  while (!a->job.stop) {
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

/* Ask the running job to stop; job_lock held. */
static void
job_stop_locked (struct array *a)
{
  __atomic_store_n (&a->job.stop, true, __ATOMIC_RELEASE);
  pthread_cond_broadcast (&a->job_wake);
}

int
array_rebuilding_member (const struct array *a)
{
  for (int i = 0; i < a->nmembers; i++)
    if (__atomic_load_n (&a->members[i]->state, __ATOMIC_ACQUIRE) ==
        MEMBER_REBUILDING)
      return i;
  return -1;
}

/* Rebuild member i from its recovery offset on.  Returns -1 if it could
 * not go on for want of readable members (it stays rebuilding), else 0
 * (done, stopped, or the member failed or was replaced meanwhile).
 */
static int
rebuild_member (struct array *a, int i)
{
  struct member *m = a->members[i];
  int64_t start = now_ns ();
  uint64_t first = __atomic_load_n (&m->recovery_stripe, __ATOMIC_ACQUIRE);

  a->job.member = i;
  a->job.start = start;
  a->job.first_row = first;
  nbdkit_debug ("raid: rebuilding member %d (%s)", i, m->name);
  for (uint64_t s = first; s < a->g.stripes && !stopping (a); s++) {
    struct stripe_head *sh;
    int r;

    if (__atomic_load_n (&a->members[i], __ATOMIC_ACQUIRE) != m ||
        member_failed (m))
      return 0;                 /* failed or replaced again meanwhile */
    sh = stripe_cache_get (a->cache, s);
    if (sh == NULL)
      return -1;
    r = stripe_rebuild_row (a->cache, sh, i);
    if (r == 0)
      __atomic_store_n (&m->recovery_stripe, s + 1, __ATOMIC_RELEASE);
    stripe_cache_put (a->cache, sh);
    if (r == -1) {
      nbdkit_error ("raid: rebuild of member %d (%s) stopped at row %" PRIu64
                    ": %m", i, m->name, s);
      return member_failed (m) ? 0 : -1;
    }
    throttle (a, (s + 1 - first) * a->g.chunk, start);
    if ((s + 1) % 256 == 0)
      md_array_states_changed (a);      /* record the recovery offset */
  }
  if (!stopping (a) && member_readable (m, a->g.stripes - 1)) {
    int expected = MEMBER_REBUILDING;

    __atomic_compare_exchange_n (&m->state, &expected, MEMBER_IN_SYNC, false,
                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    md_array_states_changed (a);
    nbdkit_debug ("raid: member %d (%s) rebuilt in %.1f s", i, m->name,
                  (now_ns () - start) / 1e9);
  }
  return 0;
}

static void
record_bad_data (struct array *a, uint64_t stripe, int member)
{
  size_t n = a->job.nbad;

  if (n < ARRAY_MAX_BAD_DATA) {
    a->job.bad[n].stripe = stripe;
    a->job.bad[n].member = member;
    __atomic_store_n (&a->job.nbad, n + 1, __ATOMIC_RELEASE);
  }
}

/* The next row the job goes over: every row, or for a resync those the
 * write-intent bitmap marks.
 */
static uint64_t
next_row (struct array *a, uint64_t s)
{
  return a->job.resync ? md_array_resync_next_row (a, s) : s;
}

static void
scrub (struct array *a)
{
  uint8_t *scratch = aligned_alloc (4096, 2 * a->g.chunk);
  uint64_t s;

  if (scratch == NULL) {
    nbdkit_error ("raid: scrub: %m");
    return;
  }
  a->job.start = now_ns ();
  for (s = next_row (a, 0); s < a->g.stripes && !stopping (a);
       s = next_row (a, s + 1)) {
    struct stripe_head *sh = stripe_cache_get (a->cache, s);
    struct stripe_scrub res;
    int r;

    if (sh == NULL)
      break;
    r = stripe_scrub_row (a->cache, sh, a->job.repair, scratch, &res);
    stripe_cache_put (a->cache, sh);
    if (r == -1) {
      nbdkit_error ("raid: scrub stopped at row %" PRIu64 ": %m", s);
      break;
    }
    if (a->job.resync)
      md_array_row_resynced (a, s);
    __atomic_fetch_add (&a->job.mismatch_cnt, res.mismatches, __ATOMIC_RELAXED);
    if (res.bad_data_member >= 0)
      record_bad_data (a, s, res.bad_data_member);
    __atomic_fetch_add (&a->job.rows_done, 1, __ATOMIC_RELEASE);
    if (a->job.resync)          /* md's sync speed limit: rebuild-rate */
      throttle (a, a->job.rows_done * a->g.chunk, a->job.start);
  }
  a->job.scrub_finished = !stopping (a) && s >= a->g.stripes;
  if (a->job.scrub_finished && a->job.repair)
    md_array_resynced (a);
  free (scratch);
}

/* The next member to rebuild, or -1; when none is left the job ends, both
 * decided under job_lock so that a replace cannot slip in between.
 */
static int
next_or_finish (struct array *a)
{
  int i;

  pthread_mutex_lock (&a->job_lock);
  i = stopping (a) ? -1 : array_rebuilding_member (a);
  if (i < 0)
    a->job.running = false;
  pthread_mutex_unlock (&a->job_lock);
  return i;
}

static void *
job_thread (void *arg)
{
  struct array *a = arg;
  int i;

  if (a->job.kind == JOB_SCRUB) {
    scrub (a);
    pthread_mutex_lock (&a->job_lock);
    a->job.running = false;
    pthread_mutex_unlock (&a->job_lock);
    return NULL;
  }
  while ((i = next_or_finish (a)) >= 0) {
    if (rebuild_member (a, i) == -1) {
      /* Too few readable members: leave it rebuilding rather than spin. */
      pthread_mutex_lock (&a->job_lock);
      a->job.running = false;
      pthread_mutex_unlock (&a->job_lock);
      break;
    }
  }
  return NULL;
}

/* Start a job; job_lock held.  A finished job's thread is joined first. */
static int
job_start (struct array *a, enum job_kind kind, char **why)
{
  int r;

  if (a->job.running) {
    *why = "another rebuild or scrub is running";
    return -1;
  }
  if (a->job.joinable) {
    pthread_join (a->job.thread, NULL);
    a->job.joinable = false;
  }
  a->job.kind = kind;
  a->job.stop = false;
  a->job.running = true;
  r = pthread_create (&a->job.thread, NULL, job_thread, a);
  if (r) {
    a->job.running = false;
    *why = "cannot start a thread";
    return -1;
  }
  a->job.joinable = true;
  return 0;
}

void
array_jobs_stop (struct array *a)
{
  pthread_mutex_lock (&a->job_lock);
  job_stop_locked (a);
  pthread_mutex_unlock (&a->job_lock);
  if (a->job.joinable) {
    pthread_join (a->job.thread, NULL);
    a->job.joinable = false;
  }
}

int
array_rebuild_resume (struct array *a)
{
  char *why = NULL;
  int r = 0;

  pthread_mutex_lock (&a->job_lock);
  if (array_rebuilding_member (a) >= 0 && !a->job.running)
    r = job_start (a, JOB_REBUILD, &why);
  pthread_mutex_unlock (&a->job_lock);
  if (r == -1)
    nbdkit_error ("raid: cannot resume the rebuild: %s", why);
  return r;
}

int
array_fail_member (struct array *a, int i, char **why)
{
  if (i < 0 || i >= a->nmembers) {
    *why = "no such member";
    return -1;
  }
  if (!member_failed (a->members[i]) &&
      array_failed_members (a) + 1 > array_tolerance (a)) {
    *why = "failing it would leave the array unable to serve";
    return -1;
  }
  member_fail (a->members[i], EIO);
  md_array_states_changed (a);
  return 0;
}

/* The rebuild would overwrite whatever m holds: refuse another array's
 * disk, a partitioned disk, a filesystem (message in msg).
 */
static int
foreign (struct array *a, struct member *m, const char *name, char *msg,
         size_t len)
{
  char what[256];

  switch (md_array_foreign (a, m, what, sizeof what)) {
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

int
array_replace_member (struct array *a, int i, const char *name, bool force,
                      char **why)
{
  static char msg[512];
  uint64_t need = a->g.data_offset + a->g.stripes * a->g.chunk;
  struct member *m;
  int r = -1;

  if (i < 0 || i >= a->nmembers) {
    *why = "no such member";
    return -1;
  }
  if (!member_failed (a->members[i])) {
    *why = "the member has not failed: fail it first";
    return -1;
  }
  if (array_failed_members (a) > array_tolerance (a)) {
    *why = "too many members have failed for the array to be rebuilt";
    return -1;
  }
  if (strcmp (name, "missing") == 0) {
    *why = "the replacement cannot be 'missing'";
    return -1;
  }
  m = member_open (name, a->direct);
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
  for (int j = 0; j < a->nmembers; j++)
    if (j != i && member_same (m, a->members[j])) {
      snprintf (msg, sizeof msg, "%s is already member %d", name, j);
      *why = msg;
      goto err;
    }
  if (!force && (r = foreign (a, m, name, msg, sizeof msg)) != 0) {
    *why = msg;
    r = -1;
    goto err;
  }

  pthread_mutex_lock (&a->job_lock);
  m->recovery_stripe = 0;
  m->state = MEMBER_REBUILDING;
  /* The old member stays allocated until the array closes: a request may
   * still hold its pointer.
   */
  if (a->nretired < GEOMETRY_MAX_MEMBERS * 4)
    a->retired[a->nretired++] = a->members[i];
  __atomic_store_n (&a->members[i], m, __ATOMIC_RELEASE);
  md_array_states_changed (a);
  r = a->job.running && a->job.kind == JOB_REBUILD ? 0
    : job_start (a, JOB_REBUILD, why);
  pthread_mutex_unlock (&a->job_lock);
  return r;

 err:
  member_close (m);
  return -1;
}

static int
scrub_start (struct array *a, bool repair, bool resync, char **why)
{
  int r;

  if (array_failed_members (a) > 0 || array_rebuilding_member (a) >= 0) {
    *why = "the array is degraded: replace the failed members first";
    return -1;
  }
  pthread_mutex_lock (&a->job_lock);
  a->job.repair = repair;
  a->job.resync = resync;
  a->job.rows_total = resync ? md_array_resync_rows (a) : a->g.stripes;
  a->job.rows_done = 0;
  a->job.mismatch_cnt = 0;
  a->job.nbad = 0;
  a->job.scrub_finished = false;
  a->job.scrubbed = true;
  r = job_start (a, JOB_SCRUB, why);
  pthread_mutex_unlock (&a->job_lock);
  return r;
}

int
array_scrub_start (struct array *a, bool repair, char **why)
{
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
                  a->job.rows_total, a->g.stripes);
  return r;
}

void
array_scrub_stop (struct array *a)
{
  pthread_mutex_lock (&a->job_lock);
  if (a->job.running && a->job.kind == JOB_SCRUB)
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

/* A JSON string (names are paths or URIs; escape what JSON requires). */
static void
json_string (FILE *f, const char *s)
{
  fputc ('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fprintf (f, "\\%c", *s);
    else if ((unsigned char) *s < 0x20)
      fprintf (f, "\\u%04x", *s);
    else
      fputc (*s, f);
  }
  fputc ('"', f);
}

static void
print_bitmap (struct array *a, FILE *f)
{
  struct md_bitmap_stats st;

  if (md_array_bitmap_stats (a, &st))
    fprintf (f, ",\"bitmap\":{\"chunk\":%" PRIu64 ",\"bits\":%" PRIu64
             ",\"dirty\":%" PRIu64 "}", st.chunksize, st.bits, st.dirty);
  else
    fprintf (f, ",\"bitmap\":null");
}

void
array_status_json (struct array *a, FILE *f)
{
  bool running, rebuild;
  double elapsed;
  uint64_t done = 0, total = a->g.stripes * a->g.chunk;

  pthread_mutex_lock (&a->job_lock);
  running = a->job.running;
  rebuild = a->job.kind == JOB_REBUILD;
  elapsed = (now_ns () - a->job.start) / 1e9;

  /* One snapshot of the states, so that "degraded" and "failed" agree
   * with the members listed even while a rebuild finishes.
   */
  int states[GEOMETRY_MAX_MEMBERS], failed = 0;
  bool degraded = false;

  for (int i = 0; i < a->nmembers; i++) {
    states[i] = __atomic_load_n (&a->members[i]->state, __ATOMIC_ACQUIRE);
    failed += states[i] == MEMBER_FAILED;
    degraded |= states[i] != MEMBER_IN_SYNC;
  }
  fprintf (f, "{\"level\":%d,\"layout\":\"%s\",\"chunk\":%" PRIu64
           ",\"size\":%" PRIu64 ",\"degraded\":%s,\"failed\":%d,\"members\":[",
           a->g.level, geometry_layout_name (a->g.layout), a->g.chunk,
           a->g.array_size, degraded ? "true" : "false", failed);
  for (int i = 0; i < a->nmembers; i++) {
    struct member *m = a->members[i];
    int st = states[i];
    uint64_t rec = st == MEMBER_IN_SYNC ? total
      : st == MEMBER_FAILED ? 0
      : __atomic_load_n (&m->recovery_stripe, __ATOMIC_ACQUIRE) * a->g.chunk;

    fprintf (f, "%s{\"index\":%d,\"name\":", i ? "," : "", i);
    json_string (f, m->name);
    fprintf (f, ",\"state\":\"%s\",\"recovery_offset\":%" PRIu64 "}",
             state_name (st), rec);
  }
  if (running && rebuild) {
    struct member *m = a->members[a->job.member];

    done = __atomic_load_n (&m->recovery_stripe, __ATOMIC_ACQUIRE) * a->g.chunk;
  }
  fprintf (f, "],\"rebuild\":{\"running\":%s,\"member\":%d,\"done\":%" PRIu64
           ",\"total\":%" PRIu64 ",\"mb_per_s\":%.1f}",
           running && rebuild ? "true" : "false",
           running && rebuild ? a->job.member : -1, done, total,
           running && rebuild && elapsed > 0
           ? (done - a->job.first_row * a->g.chunk) / elapsed / 1e6 : 0.0);

  done = __atomic_load_n (&a->job.rows_done, __ATOMIC_ACQUIRE) * a->g.chunk;
  total = a->job.scrubbed ? a->job.rows_total * a->g.chunk : total;
  fprintf (f, ",\"scrub\":{\"running\":%s,\"repair\":%s,\"resync\":%s,"
           "\"done\":%" PRIu64 ",\"total\":%" PRIu64 ",\"mb_per_s\":%.1f,"
           "\"mismatch_cnt\":%" PRIu64 ",\"finished\":%s,\"bad_data\":[",
           running && !rebuild ? "true" : "false",
           a->job.repair ? "true" : "false",
           a->job.resync ? "true" : "false", done, total,
           running && !rebuild && elapsed > 0 ? done / elapsed / 1e6 : 0.0,
           __atomic_load_n (&a->job.mismatch_cnt, __ATOMIC_RELAXED),
           a->job.scrub_finished ? "true" : "false");
  for (size_t k = 0; k < __atomic_load_n (&a->job.nbad, __ATOMIC_ACQUIRE); k++)
    fprintf (f, "%s{\"stripe\":%" PRIu64 ",\"member\":%d}", k ? "," : "",
             a->job.bad[k].stripe, a->job.bad[k].member);
  fprintf (f, "]}");
  print_bitmap (a, f);
  fprintf (f, "}\n");
  pthread_mutex_unlock (&a->job_lock);
}
