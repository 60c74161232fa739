/* SPDX-License-Identifier: BSD-3-Clause */
/* The monotonic clock, for deadlines, rates and back-offs: a step of the
 * wall clock (an operator's date, NTP) must move none of them.  One
 * clock read per call.
 */

#ifndef RAID_NOW_H
#define RAID_NOW_H

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

#endif /* RAID_NOW_H */
