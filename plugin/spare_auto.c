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
 * State: none but the watcher's (watcher.c: the thread, its wait and its
 * stop); the member table is read through jobs.c under its lock.  spare_auto_stop joins the thread before jobs
 * and array go away (raid.c orders it).
 */

#include <config.h>

#include <stdbool.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "array.h"
#include "jobs.h"
#include "member_table.h"
#include "spare_auto.h"
#include "watcher.h"

#define WATCH_MS 250

static struct {
  struct array *a;
  struct jobs *js;
  struct watcher w;
} sa;

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

/* Each WATCH_MS: as long as some role has failed while a spare is
 * there, ask for a takeover.
 */
static void
tick (void *arg)
{
  int r = 1;

  (void) arg;
  while (r != 0 && worth_asking ()) {
    char *why;

    r = jobs_spare_takeover (sa.js, &why);
    if (r == -1)
      nbdkit_error ("raid: hot spare refused: %s", why);
  }
}

int
spare_auto_start (struct array *a, struct jobs *js)
{
  if (a->readonly)
    return 0;
  sa.a = a;
  sa.js = js;
  return watcher_start (&sa.w, "hot spares", tick, NULL, WATCH_MS);
}

void
spare_auto_stop (void)
{
  watcher_stop (&sa.w);
}
