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

struct array_job {
  pthread_t thread;
  bool joinable, running, stop;
  enum job_kind kind;
  int64_t start;                /* CLOCK_MONOTONIC, ns */
  /* rebuild */
  int member;
  uint64_t first_row;
  /* scrub; resync: of the rows an unclean shutdown left to check */
  bool repair, resync, scrubbed, scrub_finished;
  uint64_t rows_done, rows_total, mismatch_cnt;
  size_t nbad;
  struct { uint64_t stripe; int member; } bad[ARRAY_MAX_BAD_DATA];
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

/* Each returns 0, or -1 with a static message in *why. */
int array_fail_member (struct array *a, int i, char **why);
/* force: even a disk that carries another array or format (see
 * md_array_foreign).
 */
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
/* A member being rebuilt, or -1. */
int array_rebuilding_member (const struct array *a);
/* Start rebuilding members found half rebuilt at start-up. */
int array_rebuild_resume (struct array *a);

#endif /* RAID_REBUILD_H */
