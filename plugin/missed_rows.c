/* SPDX-License-Identifier: BSD-3-Clause */
/* The rows a failed member missed, kept in memory, for arrays that have
 * no write-intent bitmap on disk (raw arrays, md arrays with
 * bitmap=none), so that a member that comes back while nbdkit still runs
 * can be re-added from it as from md's bitmap (jobs.c): only the rows
 * written while it was out are resynced.  It lives and dies with the
 * process: after a restart nothing says what a member missed.
 *
 * The rule is md's bitmap's (md_bitmap.c): a write's region is marked
 * before any of its member I/O goes out, and marks are cleared only while
 * every member is in sync, never while one has failed or is being
 * rebuilt.  So at any moment a row whose mark is clear was not written
 * since the last moment the array was healthy, which is what lets a
 * re-add jump over it.  A write that is in flight when a member fails is
 * the delicate case: it may have reached the others and not the member,
 * so its mark must outlive the clearing that began while the array was
 * still healthy.  md keeps a count of writes in flight per bit for that;
 * here the whole record has two generations instead, which costs one
 * counter per write rather than one per region:
 *
 *   write_begin:  g = cur; inflight[g]++ (again if cur moved meanwhile);
 *                 mark the rows' regions in bits[g]; ... member I/O ...
 *   write_end:    inflight[g]--
 *   sweep (every SWEEP_MS, one thread):
 *       healthy?  flip: cur = !old, where old was cur     (new writes
 *                 mark the other generation from now on)
 *       later, once inflight[old] == 0 (every write that could have
 *       marked old has ended):
 *                 still healthy?  clear bits[old]
 *
 * A write marks old only if it saw cur == old after counting itself in
 * inflight[old] (sequentially consistent), so the sweep, which flips cur
 * and then reads inflight[old], either sees it counted or it sees the
 * flip and marks the new generation.  A write that ended before the
 * drain reached the member before any failure that the second health
 * check would see; one that was in flight when a member failed keeps its
 * mark, since the array is not healthy again until that member has been
 * rebuilt or re-added (from these very marks).  A region is marked in
 * bits[0] | bits[1].
 *
 * Memory: one bit per region per generation, at most MAX_REGIONS regions
 * (2 x 128 KiB), each of as many rows as that takes; a re-add resyncs
 * whole regions.
 *
 * Floor.  An md array's re-add also asks whether the disk that comes back
 * is too old for the record (a copy from before the last clearing may
 * lack writes whose marks are gone): cleared_at is md's event count read
 * at the flip of the last clearing, as md_bitmap.c records md's count at
 * its clearing.  Before any clearing it is the count at start-up: the
 * record covers everything written since.
 *
 * Locks (lock.h): sweep_lock (one sweep at a time, the sweep's fields),
 * under which the epoch is read (for md: md_array_events, md->lock); the
 * marks and counters are atomics.  The sweeping thread is a watcher
 * (watcher.c).
 */

#include <config.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "lock.h"
#include "member_table.h"
#include "missed_rows.h"
#include "watcher.h"

#define MAX_REGIONS (UINT64_C (1) << 20)
#define SWEEP_MS 1000

struct missed_rows {
  struct members *ms;
  uint64_t rows, rows_per_region, regions, words;
  uint64_t (*epoch) (void *);
  void *epoch_arg;
  _Atomic uint64_t *bits[2];    /* a bit per region, per generation */
  _Atomic unsigned cur;         /* the generation writes mark */
  _Atomic uint64_t inflight[2]; /* writes that marked (or may mark) each */
  _Atomic uint64_t cleared_at;

  pthread_mutex_t sweep_lock;   /* the three fields below */
  bool draining;                /* old flipped out, not yet cleared */
  unsigned old;
  uint64_t epoch_at_flip;

  struct watcher sweeper;       /* calls missed_rows_sweep */
};

struct missed_rows *
missed_rows_new (struct members *ms, uint64_t rows,
                 uint64_t (*epoch) (void *), void *epoch_arg)
{
  struct missed_rows *mr = calloc (1, sizeof *mr);

  if (mr == NULL)
    return NULL;
  mr->ms = ms;
  mr->rows = rows ? rows : 1;
  mr->rows_per_region = (mr->rows + MAX_REGIONS - 1) / MAX_REGIONS;
  mr->regions = (mr->rows + mr->rows_per_region - 1) / mr->rows_per_region;
  mr->words = (mr->regions + 63) / 64;
  mr->epoch = epoch;
  mr->epoch_arg = epoch_arg;
  for (int g = 0; g < 2; g++) {
    mr->bits[g] = calloc (mr->words, sizeof *mr->bits[g]);
    if (mr->bits[g] == NULL) {
      free (mr->bits[0]);
      free (mr);
      return NULL;
    }
  }
  atomic_init (&mr->cleared_at, epoch ? epoch (epoch_arg) : 0);
  pthread_mutex_init (&mr->sweep_lock, NULL);
  return mr;
}

unsigned
missed_rows_write_begin (struct missed_rows *mr, uint64_t first,
                         uint64_t end)
{
  unsigned g;

  if (mr == NULL)
    return 0;
  for (;;) {
    g = atomic_load (&mr->cur);
    atomic_fetch_add (&mr->inflight[g], 1);
    if (atomic_load (&mr->cur) == g)
      break;
    atomic_fetch_sub (&mr->inflight[g], 1);
  }
  if (end > mr->rows)
    end = mr->rows;
  if (first < end)
    for (uint64_t r = first / mr->rows_per_region;
         r <= (end - 1) / mr->rows_per_region; r++) {
      _Atomic uint64_t *w = &mr->bits[g][r / 64];
      uint64_t bit = UINT64_C (1) << (r % 64);

      /* Marked already: stays so while this write is counted. */
      if (!(atomic_load_explicit (w, memory_order_relaxed) & bit))
        atomic_fetch_or (w, bit);
    }
  return g;
}

void
missed_rows_write_end (struct missed_rows *mr, unsigned token)
{
  if (mr)
    atomic_fetch_sub (&mr->inflight[token], 1);
}

static bool
marked (struct missed_rows *mr, uint64_t region)
{
  uint64_t bit = UINT64_C (1) << (region % 64);

  return (atomic_load (&mr->bits[0][region / 64]) |
          atomic_load (&mr->bits[1][region / 64])) & bit;
}

uint64_t
missed_rows_next (struct missed_rows *mr, uint64_t row)
{
  for (uint64_t r = row / mr->rows_per_region; r < mr->regions; r++)
    if (marked (mr, r)) {
      uint64_t start = r * mr->rows_per_region;

      return start > row ? start : row;
    }
  return UINT64_MAX;
}

uint64_t
missed_rows_count (struct missed_rows *mr, uint64_t from)
{
  uint64_t n = 0;

  for (uint64_t r = from / mr->rows_per_region; r < mr->regions; r++)
    if (marked (mr, r)) {
      uint64_t start = r * mr->rows_per_region;
      uint64_t end = start + mr->rows_per_region;

      if (start < from)
        start = from;
      if (end > mr->rows)
        end = mr->rows;
      n += end - start;
    }
  return n;
}

uint64_t
missed_rows_per_region (struct missed_rows *mr)
{
  return mr->rows_per_region;
}

uint64_t
missed_rows_cleared_at (struct missed_rows *mr)
{
  return atomic_load (&mr->cleared_at);
}

/* In a reader section, as every reader of the member table: a member
 * replaced meanwhile is not closed under it.
 */
static bool
healthy (struct missed_rows *mr)
{
  MEMBERS_READ_FOR_CURRENT_SCOPE (mr->ms);

  return members_healthy (mr->ms);
}

void
missed_rows_sweep (struct missed_rows *mr)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&mr->sweep_lock);

  if (!mr->draining) {
    if (!healthy (mr))
      return;
    mr->epoch_at_flip = mr->epoch ? mr->epoch (mr->epoch_arg) : 0;
    mr->old = atomic_load (&mr->cur);
    atomic_store (&mr->cur, mr->old ^ 1);
    mr->draining = true;
  }
  if (atomic_load (&mr->inflight[mr->old]) != 0)
    return;                     /* the next sweep looks again */
  if (healthy (mr)) {
    for (uint64_t w = 0; w < mr->words; w++)
      atomic_store_explicit (&mr->bits[mr->old][w], 0, memory_order_relaxed);
    atomic_store (&mr->cleared_at, mr->epoch_at_flip);
  }
  mr->draining = false;
}

static void
sweep_tick (void *arg)
{
  missed_rows_sweep (arg);
}

int
missed_rows_start (struct missed_rows *mr)
{
  if (mr == NULL)
    return 0;
  return watcher_start (&mr->sweeper, "the record of missed rows",
                        sweep_tick, mr, SWEEP_MS);
}

void
missed_rows_free (struct missed_rows *mr)
{
  if (mr == NULL)
    return;
  watcher_stop (&mr->sweeper);
  pthread_mutex_destroy (&mr->sweep_lock);
  free (mr->bits[0]);
  free (mr->bits[1]);
  free (mr);
}
