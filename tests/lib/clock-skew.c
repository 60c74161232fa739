/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: an LD_PRELOAD shim that makes the raid plugin's
 * CLOCK_MONOTONIC jump ahead by CLOCK_SKEW_MS (default 200) milliseconds
 * between every odd-numbered reading of a thread and the next one, as if
 * the thread were preempted there: a thread's readings 1, 2, 3, 4, 5 are
 * real time + 0, 1, 1, 2, 2 steps.  Calls from anywhere but the plugin
 * (nbdkit, libnbd, libc) see the real clock.  Code that tests a deadline
 * on one reading and computes the time left from the next (jobs.c's
 * throttle did: a negative time left became a 71-minute usleep) fails
 * under it within a few rounds instead of once in a blue moon.
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int (*real_clock_gettime) (clockid_t, struct timespec *);
static __thread long long calls;

static int
from_plugin (const void *caller)
{
  Dl_info info;

  return dladdr (caller, &info) && info.dli_fname &&
    strstr (info.dli_fname, "nbdkit-raid-plugin") != NULL;
}

int
clock_gettime (clockid_t clk, struct timespec *ts)
{
  int r;

  if (real_clock_gettime == NULL)
    real_clock_gettime = dlsym (RTLD_NEXT, "clock_gettime");
  r = real_clock_gettime (clk, ts);
  if (r == 0 && clk == CLOCK_MONOTONIC &&
      from_plugin (__builtin_return_address (0))) {
    const char *e = getenv ("CLOCK_SKEW_MS");
    long long step = (e ? atoll (e) : 200) * 1000000LL;
    long long ns = ts->tv_nsec + ++calls / 2 * step;

    ts->tv_sec += ns / 1000000000;
    ts->tv_nsec = ns % 1000000000;
  }
  return r;
}
