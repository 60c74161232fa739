/* SPDX-License-Identifier: BSD-3-Clause */
/* A background thread that does one thing every period until stopped.
 *
 * readd=auto and hot spares each look at the member table a few times a
 * second and act on what they see; what they do differs, how they wait
 * and stop does not, and lives here.  The wait is a timed wait on a
 * condition variable, not a sleep: watcher_stop wakes the thread at
 * once, so an array stops without waiting out a period, and nothing is
 * logged at a clean stop (nbdkit's own sleep would say it was aborted).
 * The condition variable counts on CLOCK_MONOTONIC (now.h): on the wall
 * clock, a step back of an hour would hold a spare back for an hour.
 *
 * State: struct watcher, owned by its user; stop and wake are guarded by
 * w->lock.  Both are made by watcher_start and undone by watcher_stop,
 * so a watcher can start again after a stop.  tick runs without the
 * lock, so watcher_stop waits at most for the tick in progress.
 */

#include <config.h>

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "now.h"
#include "watcher.h"

static void *
watcher_thread (void *arg)
{
  struct watcher *w = arg;

  pthread_mutex_lock (&w->lock);
  while (!w->stop) {
    struct timespec t;

    pthread_mutex_unlock (&w->lock);
    w->tick (w->arg);
    pthread_mutex_lock (&w->lock);
    t = now_deadline (CLOCK_MONOTONIC, w->period_ms);
    if (!w->stop)
      pthread_cond_timedwait (&w->wake, &w->lock, &t);
  }
  pthread_mutex_unlock (&w->lock);
  return NULL;
}

int
watcher_start (struct watcher *w, const char *what,
               void (*tick) (void *arg), void *arg, int period_ms)
{
  int err;

  w->what = what;
  w->tick = tick;
  w->arg = arg;
  w->period_ms = period_ms;
  w->stop = false;
  pthread_mutex_init (&w->lock, NULL);
  now_cond_init (&w->wake);
  err = pthread_create (&w->thread, NULL, watcher_thread, w);
  if (err) {
    nbdkit_error ("raid: %s: cannot start its thread: %s",
                  what, strerror (err));
    pthread_cond_destroy (&w->wake);
    pthread_mutex_destroy (&w->lock);
    return -1;
  }
  w->running = true;
  return 0;
}

void
watcher_stop (struct watcher *w)
{
  if (!w->running)
    return;
  pthread_mutex_lock (&w->lock);
  w->stop = true;
  pthread_cond_signal (&w->wake);
  pthread_mutex_unlock (&w->lock);
  pthread_join (w->thread, NULL);
  pthread_cond_destroy (&w->wake);
  pthread_mutex_destroy (&w->lock);
  w->running = false;
}
