/* SPDX-License-Identifier: BSD-3-Clause */
/* Operator actions and the background jobs that repair an array while it
 * serves (rebuild, resync, scrub); see jobs.c.
 */

#ifndef RAID_JOBS_H
#define RAID_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "geometry.h"
#include "member.h"

struct array;
struct jobs;

/* Data pages a scrub located (RAID-6) that status lists, at most. */
#define JOBS_MAX_BAD_DATA 64

/* The jobs of array a (which must outlive them), with the rebuild and
 * resync capped at rate bytes per second (0: no cap).  NULL after
 * nbdkit_error.  jobs_free stops the running job and waits for its
 * thread; NULL does nothing.
 */
struct jobs *jobs_new (struct array *a, uint64_t rate);
void jobs_free (struct jobs *js);

/* In the serving process: go on rebuilding a member found half rebuilt,
 * or else start the resync of an array that was not shut down cleanly
 * (read-only: neither; md_array_assemble said what is left undone).
 */
int jobs_after_fork (struct jobs *js);

/* Each returns 0, or -1 with a message in *why (static storage of the
 * calling thread).  fail: force fails a member even if fewer members would
 * be in sync than the level needs (another is rebuilding).  replace: force
 * takes even a disk that carries another array or format (admission.c
 * says which disks a role takes).
 */
int jobs_fail_member (struct jobs *js, int i, bool force, char **why);
int jobs_replace_member (struct jobs *js, int i, const char *name,
                         bool force, char **why);
/* re-add: failed member i's disk, opened again by the name it was given,
 * is checked to be that disk, with the write-intent bitmap (or, without
 * one, the record in memory) covering what it missed, and to take
 * writes; then rebuilt only where the bits (marks) are set.  Refused,
 * changing nothing else, otherwise.
 */
int jobs_readd_member (struct jobs *js, int i, char **why);
int jobs_scrub_start (struct jobs *js, bool repair, char **why);
void jobs_scrub_stop (struct jobs *js);

/* One consistent snapshot of the jobs and the member states, for status
 * (control.c).  Taken in a reader section of the caller's (member_table.h), so
 * that member[].m stay open while the caller reads their names.
 */
struct jobs_status {
  int64_t now;                  /* CLOCK_MONOTONIC, ns */
  int nmembers;
  struct {
    const struct member *m;
    enum member_state state;
    uint64_t recovery_stripe;
    bool readd;                 /* being re-added (or was, if in sync) */
    uint64_t owed_rows;         /* rows it lacks: all for a new member;
                                   those under set bits for a failed or
                                   re-added one */
    uint64_t resynced;          /* bytes its rebuild or re-add wrote */
  } member[GEOMETRY_MAX_MEMBERS];

  bool rebuild_running;
  bool rebuild_readd;           /* the rebuild's member is being re-added */
  int rebuild_member;           /* -1: none (yet) */
  int64_t rebuild_member_start;
  uint64_t rebuild_first_row;

  bool scrub_running, scrubbed; /* scrubbed: the fields below are the last
                                   scrub's */
  bool scrub_repair, scrub_resync, scrub_finished;
  int64_t scrub_start;
  uint64_t scrub_rows_done, scrub_rows_total, scrub_mismatch_cnt;
  uint64_t scrub_unreadable_bytes, scrub_lost_bytes;
  size_t scrub_nbad;
  struct { uint64_t stripe; int member; } scrub_bad[JOBS_MAX_BAD_DATA];
};
void jobs_status (struct jobs *js, struct jobs_status *st);

/* How long, in nanoseconds, a job that has moved `bytes` since start_ns
 * must wait at now_ns (both CLOCK_MONOTONIC) to stay within `rate` bytes
 * per second (0: no limit).  Never negative: a caller that was preempted
 * past its due time gets 0, not a huge unsigned sleep.  Pure, so that
 * tests can give it any clock.
 */
static inline int64_t
jobs_throttle_delay (int64_t now_ns, int64_t start_ns, uint64_t bytes,
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

#endif /* RAID_JOBS_H */
