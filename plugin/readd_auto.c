/* SPDX-License-Identifier: BSD-3-Clause */
/* readd=auto: take back, without the operator, a failed member that
 * answers again.
 *
 * A network RAID loses members for a moment all the time (a server
 * restarts, a link flaps past member-timeout).  With readd=auto a watcher
 * thread looks at the member table every WATCH_MS: for each failed role
 * it may try, it asks jobs_readd_member, the same path as the operator's
 * `re-add N`.  That path does all the deciding: it opens the role's disk
 * again by its name (a new connection for an NBD member; a file that has
 * become readable again), checks that it is the same disk and that the
 * row record (the bitmap, or the record in memory) covers what it
 * missed, and refuses otherwise, writing nothing.  So this file decides only *when* to ask, never
 * whether a disk may come back.
 *
 * When not to ask:
 *   - a member the operator failed (`fail N`): they meant it;
 *   - a role that was `missing` from the start: there is no disk to ask;
 *   - a member this watcher re-added that failed again before it was in
 *     sync: it stays failed.  A disk that fails before it has caught up
 *     is more than unreachable for a moment, and taking it back by itself
 *     each time would keep the array degraded through one partial re-add
 *     after another; the operator decides (re-add or replace);
 *   - while the array has a hot spare: it takes the role at once
 *     (spare_auto.c), as md's recovery thread gives a failed role to a
 *     spare without waiting for the old device.  Once a spare holds the
 *     role, the old disk is not put back in it (jobs_readd_member
 *     refuses: md's rule, the old superblock's slot is not the role's
 *     any more, and mdadm --re-add refuses it), nor added as a spare by
 *     itself: mdadm -I does that only where a policy says so, and an
 *     operator who wants it says `add-spare PATH`;
 *   - before the role's back-off has passed: after each try (refused, or
 *     re-added and then failed again) the wait doubles, from BACKOFF_MIN
 *     to BACKOFF_MAX, so a flapping member costs at most one attempt a
 *     minute; a member that stays in sync for BACKOFF_RESET starts from
 *     BACKOFF_MIN again.
 *
 * State: struct watch per role, owned by the watcher thread alone (the
 * control thread never reads it); the member table is read in a reader
 * section, as every reader does.  readd_auto_stop joins the thread before
 * jobs and array go away (raid.c orders it).
 */

#include <config.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "array.h"
#include "jobs.h"
#include "lock.h"
#include "member_table.h"
#include "now.h"
#include "readd_auto.h"
#include "watcher.h"

#define WATCH_MS 250
#define BACKOFF_MIN (1 * NS)
#define BACKOFF_MAX (60 * NS)
#define BACKOFF_RESET (120 * NS)
#define NS 1000000000LL

struct watch {
  uint64_t serial;              /* the member it re-added last, or 0 */
  bool synced;                  /* ... which has been in sync since */
  int64_t synced_at;
  bool gave_up;                 /* ... which failed again first: said */
  int64_t next_try;             /* not before (CLOCK_MONOTONIC ns) */
  int64_t backoff;
};

static struct {
  struct array *a;
  struct jobs *js;
  struct watcher thread;
  struct watch w[GEOMETRY_MAX_MEMBERS];
} ra;

int
readd_auto_check (const struct array *a, char *msg, size_t len)
{
  if (!a->readonly)
    return 0;
  snprintf (msg, len, "the array is read-only: nothing can be re-added");
  return -1;
}

/* What to do with role i now: 1 try a re-add, 0 nothing. */
static int
consider (struct watch *w, int i, int64_t now)
{
  MEMBERS_READ_FOR_CURRENT_SCOPE (&ra.a->ms);
  struct member *m = members_at (&ra.a->ms, i);
  enum member_state st = member_state (m);

  if (st != MEMBER_FAILED) {
    if (m->serial == w->serial && st == MEMBER_IN_SYNC && !w->synced) {
      w->synced = true;
      w->synced_at = now;
    }
    if (w->synced && now - w->synced_at >= BACKOFF_RESET)
      w->backoff = BACKOFF_MIN;
    return 0;
  }
  if (atomic_load (&m->failed_by_operator) || m->open_name == NULL ||
      members_spares (&ra.a->ms) > 0)
    return 0;
  if (m->serial == w->serial && !w->synced) {
    if (!w->gave_up)
      nbdkit_error ("raid: readd=auto: member %d (%s) failed again during "
                    "its re-add: it stays failed ('re-add %d' or 'replace "
                    "%d PATH' on the control socket)", i, m->name, i, i);
    w->gave_up = true;
    return 0;
  }
  return now >= w->next_try;
}

static void
try_readd (struct watch *w, int i, int64_t now)
{
  char *why;

  w->next_try = now + w->backoff;
  w->backoff = w->backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : w->backoff * 2;
  if (jobs_readd_member (ra.js, i, &why) == -1) {
    nbdkit_debug ("raid: readd=auto: member %d not re-added: %s; next try "
                  "in %.0f s", i, why, (w->next_try - now) / 1e9);
    return;
  }
  MEMBERS_READ_FOR_CURRENT_SCOPE (&ra.a->ms);
  struct member *m = members_at (&ra.a->ms, i);

  w->serial = m->serial;
  w->synced = w->gave_up = false;
  nbdkit_error ("raid: readd=auto: member %d (%s) answers again and is the "
                "same disk: re-adding it from the write-intent bitmap", i,
                m->name);
}

/* Each WATCH_MS: every role, considered and perhaps re-added. */
static void
tick (void *arg)
{
  (void) arg;
  for (int i = 0; i < ra.a->ms.n; i++) {
    int64_t now = now_ns ();

    if (consider (&ra.w[i], i, now))
      try_readd (&ra.w[i], i, now);
  }
}

int
readd_auto_start (struct array *a, struct jobs *js)
{
  ra.a = a;
  ra.js = js;
  for (int i = 0; i < GEOMETRY_MAX_MEMBERS; i++)
    ra.w[i] = (struct watch) { .backoff = BACKOFF_MIN };
  return watcher_start (&ra.thread, "readd=auto", tick, NULL, WATCH_MS);
}

void
readd_auto_stop (void)
{
  watcher_stop (&ra.thread);
}
