/* SPDX-License-Identifier: BSD-3-Clause */
/* A background thread that does one thing every period until stopped;
 * see watcher.c.
 */

#ifndef RAID_WATCHER_H
#define RAID_WATCHER_H

#include <pthread.h>
#include <stdbool.h>

struct watcher {
  /* Set by watcher_start. */
  const char *what;             /* names the thread in its error */
  void (*tick) (void *arg);
  void *arg;
  int period_ms;
  /* Private. */
  pthread_t thread;
  bool running;
  bool stop;
  pthread_mutex_t lock;         /* stop and wake */
  pthread_cond_t wake;          /* on CLOCK_MONOTONIC */
};

/* Start calling tick (arg) at once and then every period_ms.  0, or -1
 * after nbdkit_error ("raid: WHAT: cannot start its thread: ...").
 */
int watcher_start (struct watcher *w, const char *what,
                   void (*tick) (void *arg), void *arg, int period_ms);

/* Wake the thread, wait for the tick in progress to end, and join it.
 * Does nothing when the thread was never started.
 */
void watcher_stop (struct watcher *w);

#endif /* RAID_WATCHER_H */
