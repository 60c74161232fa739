/* Operator actions and background repair jobs; see rebuild.c. */

#ifndef RAID_REBUILD_H
#define RAID_REBUILD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

struct array;

enum job_kind { JOB_REBUILD, JOB_SCRUB };

#define ARRAY_MAX_BAD_DATA 64

/* One run of a job.  The parameters are filled in under job_lock while no
 * job runs, before the thread starts, and nothing changes them while it
 * runs; the thread owns the rest.  See rebuild.c for who writes what.
 */
struct array_job {
  struct array *a;
  enum job_kind kind;
  bool repair, resync;          /* scrub: fix what is wrong; only the rows
                                   an unclean shutdown left (resync) */
  uint64_t rows_total;          /* scrub */
  int64_t start;                /* CLOCK_MONOTONIC, ns */

  bool stop;                    /* set under job_lock (job_wake broadcast);
                                   read atomically */
  /* Rebuild: the member being rebuilt, since when and from which row;
   * under job_lock.
   */
  int member;
  int64_t member_start;
  uint64_t first_row;
  /* Scrub: progress, atomic; bad[k] is written before nbad covers it. */
  uint64_t rows_done, mismatch_cnt;
  size_t nbad;
  struct { uint64_t stripe; int member; } bad[ARRAY_MAX_BAD_DATA];
  bool finished;                /* scrub: went over every row; under job_lock */
};

/* How long, in nanoseconds, a job that has moved `bytes` since start_ns
 * must wait at now_ns (both CLOCK_MONOTONIC) to stay within `rate` bytes
 * per second (0: no limit).  Never negative: a caller that was preempted
 * past its due time gets 0, not a huge unsigned sleep.  Pure, so that
 * tests can give it any clock.
 */
static inline int64_t
rebuild_throttle_delay (int64_t now_ns, int64_t start_ns, uint64_t bytes,
                        uint64_t rate)
{
  __int128 due;

  if (rate == 0)
    return 0;
  due = start_ns + (__int128) ((unsigned __int128) bytes * 1000000000u / rate);
  if (due <= now_ns)
    return 0;
  return due - now_ns > INT64_MAX ? INT64_MAX : (int64_t) (due - now_ns);
}

/* Each returns 0, or -1 with a message in *why (static storage of the
 * calling thread).  fail: force fails a member even if fewer members would
 * be in sync than the level needs (another is rebuilding).  replace: force
 * takes even a disk that carries another array or format (see
 * md_array_foreign).
 */
int array_fail_member (struct array *a, int i, bool force, char **why);
int array_replace_member (struct array *a, int i, const char *name,
                          bool force, char **why);
int array_scrub_start (struct array *a, bool repair, char **why);
int array_resync_start (struct array *a, char **why);
void array_scrub_stop (struct array *a);
void array_status_json (struct array *a, FILE *f);
void array_jobs_stop (struct array *a);
/* job_lock and job_wake: at array_open and array_close. */
void array_jobs_init (struct array *a);
void array_jobs_destroy (struct array *a);
/* Start rebuilding members found half rebuilt at start-up. */
int array_rebuild_resume (struct array *a);

#endif /* RAID_REBUILD_H */
