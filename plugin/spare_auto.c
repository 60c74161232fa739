/* SPDX-License-Identifier: BSD-3-Clause */
/* Hot spares: a failed role is rebuilt onto a spare at once, without the
 * operator, as md does.
 *
 * md's recovery thread (md_check_recovery) runs whenever a device fails
 * or is added; its remove_and_add_spares puts every working spare in a
 * role that has none (raid5_add_disk) and starts the recovery at once.
 * Here a watcher thread looks every WATCH_MS for a failed role while the
 * array has a spare, and asks jobs_spare_takeover, which does all the
 * deciding (the role, the spare, admission's checks of the spare, the
 * same installation as a replacement's): this file decides only *when*
 * to ask.  It asks again, at once, after a takeover (another role may
 * have failed too: a RAID-6 with two spares takes both), and after a
 * refused spare (which jobs.c has failed, so the next spare is tried).
 * Nothing is asked while the array has no spare: a failed role then
 * waits for the operator (replace, re-add, add-spare) or readd=auto.
 *
 * A spare takes a role a re-add could have had: md's order too (its
 * recovery thread does not wait for a failed device to come back), so
 * readd=auto leaves a role alone while a spare is there, and a disk
 * that comes back after a spare took its role is added back as a spare
 * (readd_auto.c says why).
 *
 * State: none but the thread's own; the member table is read through
 * jobs.c under its lock.  spare_auto_stop joins the thread before jobs
 * and array go away (raid.c orders it).
 */

#include <config.h>

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "array.h"
#include "jobs.h"
#include "member_table.h"
#include "spare_auto.h"

#define WATCH_MS 250
#define NS 1000000000LL

static struct {
  struct array *a;
  struct jobs *js;
  pthread_t thread;
  bool running;
  pthread_mutex_t lock;         /* stop and wake */
  pthread_cond_t wake;
  bool stop;
} sa = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER };

/* Whether some role has failed while a spare is there: a cheap look
 * without jobs.c's lock, which jobs_spare_takeover takes to decide.
 */
static bool
worth_asking (void)
{
  struct members *ms = &sa.a->ms;
  MEMBERS_READ_FOR_CURRENT_SCOPE (ms);

  if (members_spares (ms) == 0)
    return false;
  for (int i = 0; i < ms->n; i++)
    if (member_failed (members_at (ms, i)))
      return true;
  return false;
}

static void *
watcher_thread (void *arg)
{
  (void) arg;
  pthread_mutex_lock (&sa.lock);
  while (!sa.stop) {
    struct timespec t;
    char *why;
    int r = 1;

    pthread_mutex_unlock (&sa.lock);
    while (r != 0 && worth_asking ()) {
      r = jobs_spare_takeover (sa.js, &why);
      if (r == -1)
        nbdkit_error ("raid: hot spare refused: %s", why);
    }
    pthread_mutex_lock (&sa.lock);
    clock_gettime (CLOCK_REALTIME, &t);
    t.tv_nsec += WATCH_MS * 1000000L;
    t.tv_sec += t.tv_nsec / NS;
    t.tv_nsec %= NS;
    if (!sa.stop)
      pthread_cond_timedwait (&sa.wake, &sa.lock, &t);
  }
  pthread_mutex_unlock (&sa.lock);
  return NULL;
}

int
spare_auto_start (struct array *a, struct jobs *js)
{
  int err;

  if (a->readonly)
    return 0;
  sa.a = a;
  sa.js = js;
  sa.stop = false;
  err = pthread_create (&sa.thread, NULL, watcher_thread, NULL);
  if (err) {
    nbdkit_error ("raid: hot spares: cannot start their thread: %s",
                  strerror (err));
    return -1;
  }
  sa.running = true;
  return 0;
}

void
spare_auto_stop (void)
{
  if (!sa.running)
    return;
  pthread_mutex_lock (&sa.lock);
  sa.stop = true;
  pthread_cond_signal (&sa.wake);
  pthread_mutex_unlock (&sa.lock);
  pthread_join (sa.thread, NULL);
  sa.running = false;
}
