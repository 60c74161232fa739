/* SPDX-License-Identifier: BSD-3-Clause */
/* The monotonic clock, for deadlines, rates and back-offs: a step of the
 * wall clock (an operator's date, NTP) must move none of them.  One
 * clock read per call.
 *
 * Timed waits too.  A condition variable counts its deadlines on
 * CLOCK_REALTIME unless made otherwise, so a wait of 250 ms begun just
 * before the wall clock steps back an hour lasts an hour: every timed
 * wait on a condition variable here is on one made by
 * now_cond_init, with a deadline from now_deadline (CLOCK_MONOTONIC).
 * The one exception is pthread_mutex_timedlock, which knows only
 * CLOCK_REALTIME: its deadline is now_deadline (CLOCK_REALTIME, ...),
 * taken just before the call, so a step can only stretch one wait.
 */

#ifndef RAID_NOW_H
#define RAID_NOW_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

static inline int64_t
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * INT64_C (1000000000) + ts.tv_nsec;
}

static inline int64_t
now_ms (void)
{
  return now_ns () / 1000000;
}

/* The time ms milliseconds from now on clock, for the pthread calls
 * that wait until a time.
 */
static inline struct timespec
now_deadline (clockid_t clock, int64_t ms)
{
  struct timespec ts;

  clock_gettime (clock, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += ms % 1000 * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

/* A condition variable whose timed waits count on CLOCK_MONOTONIC. */
static inline void
now_cond_init (pthread_cond_t *cond)
{
  pthread_condattr_t attr;

  pthread_condattr_init (&attr);
  pthread_condattr_setclock (&attr, CLOCK_MONOTONIC);
  pthread_cond_init (cond, &attr);
  pthread_condattr_destroy (&attr);
}

#endif /* RAID_NOW_H */
