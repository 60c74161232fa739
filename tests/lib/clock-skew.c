/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: an LD_PRELOAD shim that skews the raid plugin's clocks.
 *
 * CLOCK_MONOTONIC jumps ahead by CLOCK_SKEW_MS (default 200; 0 turns it
 * off) milliseconds between every odd-numbered reading of a thread and
 * the next one, as if the thread were preempted there: a thread's
 * readings 1, 2, 3, 4, 5 are real time + 0, 1, 1, 2, 2 steps.  Code that
 * tests a deadline on one reading and computes the time left from the
 * next (jobs.c's throttle did: a negative time left became a 71-minute
 * usleep) fails under it within a few rounds instead of once in a blue
 * moon.
 *
 * CLOCK_REALTIME reads CLOCK_SKEW_REALTIME_S (default 0) seconds ahead:
 * what every reading would see if the wall clock stepped back by that
 * much just after it.  A deadline computed from such a reading for a
 * wait that the kernel counts on the real wall clock (a condition
 * variable left on CLOCK_REALTIME) lies that much too far away, as it
 * would after a real step, which a test cannot make on a shared machine.
 *
 * Calls from anywhere but the plugin (nbdkit, libnbd, libc) see the real
 * clocks.
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
  else if (r == 0 && clk == CLOCK_REALTIME &&
           from_plugin (__builtin_return_address (0))) {
    const char *e = getenv ("CLOCK_SKEW_REALTIME_S");

    ts->tv_sec += e ? atoll (e) : 0;
  }
  return r;
}
