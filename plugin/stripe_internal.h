/* SPDX-License-Identifier: BSD-3-Clause */
/* The stripe cache's insides, shared by its files (stripe.h is what the
 * rest of the plugin sees):
 *
 *   stripe_cache.c    heads, their locks, the budget; a row's pages and
 *                     which of them a request on the row covers (the plan)
 *   stripe_recover.c  reading a row's pages, reconstructing what members
 *                     that cannot be read hold; degraded reads, rebuild
 *   stripe_write.c    writing part of a row: RMW or RCW, parity, FUA
 *   stripe_scrub.c    checking a row's parity, and repairing it
 *
 * Each file uses only the ones above it in this list.
 */

#ifndef RAID_STRIPE_INTERNAL_H
#define RAID_STRIPE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "member_table.h"
#include "parity.h"
#include "stripe.h"

#define PAGE 4096

struct stripe_head {
  uint64_t stripe;
  struct stripe_head *hash_next;
  struct stripe_head *lru_prev, *lru_next;
  unsigned int refs;
  pthread_mutex_t lock;         /* lock.h: the row's; held by the one
                                   request working on it */
  uint8_t *buf;                 /* members x chunk, or NULL */
  uint64_t *valid;              /* members x pages bits */
  struct stripe_map map;
};

struct stripe_cache {
  const struct geometry *g;
  struct members *ms;           /* the array's member table */
  uint64_t budget, used, head_bytes;
  unsigned int pages;           /* pages per chunk */
  uint8_t *zero;                /* one chunk of zeroes, never written */

  pthread_mutex_t lock;         /* lock.h: the fields below; never held
                                   during I/O or computation */
  uint8_t **spare;              /* buffers of freed heads, for reuse */
  size_t nspare, spare_cap;
  struct stripe_head *free_heads; /* freed heads, for reuse, through
                                     hash_next (head_free) */
  struct stripe_head **hash;
  size_t hash_mask;
  struct stripe_head lru;       /* list head: lru.lru_next is the oldest */

  struct {                      /* stripe_cache_stats */
    _Atomic uint64_t rmw, rcw, full, reads;
  } stats;
};

static inline size_t
valid_words (const struct stripe_cache *c)
{
  return (c->g->members * c->pages + 63) / 64;
}

static inline uint8_t *
page_ptr (struct stripe_cache *c, struct stripe_head *sh, int member,
          unsigned int page)
{
  return sh->buf + (size_t) member * c->g->chunk + (size_t) page * PAGE;
}

/* A page's bit in sh->valid. */
static inline size_t
valid_bit (const struct stripe_cache *c, int member, unsigned int page)
{
  return (size_t) member * c->pages + page;
}

static inline bool
valid (struct stripe_cache *c, struct stripe_head *sh, int member,
       unsigned int page)
{
  size_t bit = valid_bit (c, member, page);

  return sh->valid[bit / 64] & (UINT64_C (1) << (bit % 64));
}

/* Mark pages [first, end) of a member valid (on) or not. */
static inline void
mark_valid (struct stripe_cache *c, struct stripe_head *sh, int member,
            unsigned int first, unsigned int end, bool on)
{
  for (unsigned int p = first; p < end; p++) {
    size_t bit = valid_bit (c, member, p);
    uint64_t mask = UINT64_C (1) << (bit % 64);

    sh->valid[bit / 64] = on ? sh->valid[bit / 64] | mask
                             : sh->valid[bit / 64] & ~mask;
  }
}

static inline void
set_valid (struct stripe_cache *c, struct stripe_head *sh, int member,
           unsigned int first, unsigned int end)
{
  mark_valid (c, sh, member, first, end, true);
}

static inline void
stat_add (_Atomic uint64_t *counter, uint64_t n)
{
  atomic_fetch_add_explicit (counter, n, memory_order_relaxed);
}

/* Mark what the successful reads of a batch (into sh's buffer) brought
 * in.
 */
static inline void
mark_read (struct stripe_cache *c, struct stripe_head *sh,
           const struct member_io *ios, size_t n)
{
  for (size_t k = 0; k < n; k++) {
    size_t at = (uint8_t *) ios[k].buf - sh->buf;
    unsigned int first = at % c->g->chunk / PAGE;

    if (ios[k].err == 0)
      set_valid (c, sh, at / c->g->chunk, first, first + ios[k].len / PAGE);
  }
}

/* What one request on a row covers (a write, or a read through the
 * cache): the byte range of each data chunk, and the row segments.
 */
#define MAX_SEGMENTS 5

struct segment {
  unsigned int first, end;      /* pages [first, end) */
  int ilo, ihi;                 /* data chunks ilo..ihi are written there */
};

struct plan {
  struct stripe_cache *c;
  struct stripe_head *sh;
  uint64_t offset, len;
  const uint8_t *data;
  int ifirst, ilast;            /* written data chunks */
  uint64_t ws[GEOMETRY_MAX_MEMBERS], we[GEOMETRY_MAX_MEMBERS]; /* bytes in chunk */
  struct segment seg[MAX_SEGMENTS];
  int nseg;
  bool rmw;
  bool from_client;             /* data chunks written from data itself, not
                                   copied into the cache (stripe_write.c) */
};

static inline unsigned int
first_page (const struct plan *pl, int i)
{
  return pl->ws[i] / PAGE;
}

static inline unsigned int
end_page (const struct plan *pl, int i)
{
  return (pl->we[i] + PAGE - 1) / PAGE;
}

static inline bool
page_overwritten (const struct plan *pl, int i, unsigned int page)
{
  return i >= pl->ifirst && i <= pl->ilast &&
    pl->ws[i] <= (uint64_t) page * PAGE &&
    (uint64_t) (page + 1) * PAGE <= pl->we[i];
}

/* dest = srcs[0] ^ ... ^ srcs[n-1], n >= 1. */
static inline void
xor_sum (void *dest, void **srcs, int n, size_t bytes)
{
  memcpy (dest, srcs[0], bytes);
  if (n > 1)
    parity_xor_gen (dest, &srcs[1], n - 1, bytes);
}

/* P (and Q) into ptrs[data_disks] (and [data_disks+1]) from the data in
 * ptrs[0 .. data_disks-1], syndrome order.
 */
static inline void
compute_parity (const struct geometry *g, void **ptrs, size_t bytes)
{
  if (g->level == 6)
    parity_gen_syndrome (g->members, bytes, ptrs);
  else
    xor_sum (ptrs[g->data_disks], ptrs, g->data_disks, bytes);
}

/* Members that cannot be read at this row (failed, or not yet rebuilt),
 * and whether the level tolerates that many (member_table.c).
 */
static inline int
count_unreadable (const struct stripe_cache *c, const struct stripe_head *sh)
{
  return members_unreadable (c->ms, sh->stripe);
}

static inline bool
within_tolerance (const struct stripe_cache *c, const struct stripe_head *sh)
{
  return members_row_servable (c->ms, sh->stripe);
}

static inline bool
unreadable (const struct stripe_cache *c, const struct stripe_head *sh, int m)
{
  return !member_readable (members_at (c->ms, m), sh->stripe);
}

/* Which members a request cannot read at its row, taken once for each
 * pass that reads and reconstructs.  A member can become readable at a
 * row while a request on it runs: a re-add moves its recovery offset
 * over the rows the bitmap says are clean without their locks (jobs.c).
 * A pass that decided not to read a member must then still reconstruct
 * it, so reading and reconstructing both follow this one view, never a
 * fresh look at the members.  (The other way, a member failing meanwhile,
 * shows as a failed read, and the pass is made again.)
 */
struct lost_set {
  uint64_t bits[(GEOMETRY_MAX_MEMBERS + 63) / 64];
  int n;
};

static inline void
lost_set_take (const struct stripe_cache *c, const struct stripe_head *sh,
               struct lost_set *l)
{
  memset (l, 0, sizeof *l);
  for (int m = 0; m < c->g->members; m++)
    if (unreadable (c, sh, m)) {
      l->bits[m / 64] |= UINT64_C (1) << (m % 64);
      l->n++;
    }
}

static inline bool
is_lost (const struct lost_set *l, int m)
{
  return l->bits[m / 64] & (UINT64_C (1) << (m % 64));
}

/* stripe_cache.c */

/* Allocate the head's buffers (with every page invalid) if it has none;
 * -1 (errno) if there is no memory.
 */
int stripe_head_buffers (struct stripe_cache *c, struct stripe_head *sh);
/* Fill in pl's ranges and segments from pl->offset and pl->len. */
void stripe_plan_make (struct plan *pl);

/* stripe_recover.c */

/* Make every member's pages [first, end) valid: read what the readable
 * members have, reconstruct the others'.  A read error fails that member
 * and tries again with one member fewer.  0, or -1 (errno).
 */
int stripe_fill_rows (struct stripe_cache *c, struct stripe_head *sh,
                      unsigned int first, unsigned int end);
/* What a lossy fill met on the members' media: pages they could not give
 * (read errors, and pages their logs list), and of those the pages that
 * could not be reconstructed (more members lost there than the level
 * tolerates), now recorded in the logs.  Added to, not reset.
 */
struct fill_media {
  uint64_t unreadable, lost;
};
/* The same as stripe_fill_rows for a job that must get past pages it
 * cannot reconstruct (a rebuild, a scrub): such pages stay invalid and
 * are recorded in the bad-block logs of the members that hold them
 * (member_table.c's members_record_bad); -1 with EIO only where a log
 * cannot record one.  Pages read with an error are written back as
 * always; with rewrite_listed, so are the pages logs list (a scrub's
 * repair), which a write that succeeds takes out of the log.
 */
int stripe_fill_rows_lossy (struct stripe_cache *c, struct stripe_head *sh,
                            unsigned int first, unsigned int end,
                            bool rewrite_listed, struct fill_media *out);
/* The same for the segments of a write, but pages that cannot be
 * reconstructed stay invalid without failing the fill (nor are they
 * recorded): the write may overwrite them (stripe_write.c checks).
 */
int stripe_fill_plan_partly (struct plan *pl);
/* Every page the plan's segments cover, on every member, made valid. */
int stripe_fill_plan (struct plan *pl);

#endif /* RAID_STRIPE_INTERNAL_H */
