/* SPDX-License-Identifier: BSD-3-Clause */
/* The stripe cache: stripe heads, their locks and the budget; a row's
 * pages, and which of them a request on the row covers.
 *
 * A stripe row is `chunk` bytes on every member at the same member offset:
 * data chunks, P and (RAID-6) Q.  Its head caches those bytes in one
 * buffer per member, page by page (4 KiB, md's STRIPE_SIZE), with a valid
 * bit per page:
 *
 *              member 0   member 1   member 2   member 3   member 4
 *   page 0     [D0 v]     [D1  ]     [D2 v]     [P  v]     [Q  v]
 *   page 1     [D0  ]     [D1  ]     [D2  ]     [P   ]     [Q   ]
 *   ...                                         v = valid in cache
 *
 * The cache is write-through: a valid page always equals what is on the
 * member, because every write reaches the members before the request that
 * made it is answered.  So reads never need the cache (they go straight to
 * the members, array.c), and the cache is there to save the reads of a
 * read-modify-write: the old data and old parity of recently written pages
 * (stripe_write.c).  If any member I/O fails the head forgets its pages,
 * since the members may now hold any mix of old and new.
 *
 * A request on part of a row is cut into row segments (stripe_plan_make):
 * runs of pages on which the same data chunks are touched; pages touched
 * nowhere are left alone.  Only the first and last chunk can be touched
 * partly, so there are at most MAX_SEGMENTS.
 *
 * Locking (lock.h).  c->lock guards the hash table, the LRU list,
 * reference counts and the byte count; it is never held during I/O or
 * computation.  Each head has a mutex held by the one request working on
 * that row for the whole of it, so one row is updated by one request at a
 * time while other rows proceed in parallel.  A request holds at most one
 * head at a time (requests spanning rows take them one after the other);
 * the rebuild holds a window of them, taken in row order (lock.h says why
 * that cannot deadlock); none takes a lock under a head but c->lock, the
 * members' own, and a rebuild thread's more heads of its window and its
 * run's turn_lock (jobs.c).  Heads with no references and a buffer sit on the LRU
 * list; when the buffers exceed the budget, the least recently used
 * unreferenced heads are freed.  A head with no buffer caches nothing and
 * is freed when its last reference goes.  Referenced heads are never
 * freed, so the budget can be exceeded by one head per busy request thread
 * and a window's for the rebuild.  Freed heads and buffers are kept for
 * reuse (head_free).
 */

#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "stripe_internal.h"

static void
lru_unlink (struct stripe_head *sh)
{
  sh->lru_prev->lru_next = sh->lru_next;
  sh->lru_next->lru_prev = sh->lru_prev;
  sh->lru_prev = sh->lru_next = NULL;
}

static void
lru_append (struct stripe_cache *c, struct stripe_head *sh)
{
  sh->lru_prev = c->lru.lru_prev;
  sh->lru_next = &c->lru;
  c->lru.lru_prev->lru_next = sh;
  c->lru.lru_prev = sh;
}

struct stripe_cache *
stripe_cache_create (const struct geometry *g, struct members *ms,
                     uint64_t budget)
{
  struct stripe_cache *c = calloc (1, sizeof *c);
  size_t buckets = 64;

  if (c == NULL)
    return NULL;
  c->g = g;
  c->ms = ms;
  c->budget = budget;
  c->pages = g->chunk / PAGE;
  c->head_bytes = g->members * g->chunk;
  while (buckets < 2 * budget / c->head_bytes)
    buckets *= 2;
  c->hash = calloc (buckets, sizeof *c->hash);
  c->hash_mask = buckets - 1;
  c->zero = aligned_alloc (PAGE, g->chunk);
  if (c->hash == NULL || c->zero == NULL) {
    free (c->hash);
    free (c->zero);
    free (c);
    return NULL;
  }
  memset (c->zero, 0, g->chunk);
  pthread_mutex_init (&c->lock, NULL);
  c->lru.lru_next = c->lru.lru_prev = &c->lru;
  return c;
}

/* Called with c->lock held.  A freed head is kept for the next one, its
 * buffer apart (a head may get a buffer later than it is made, or never)
 * and the rest on a free list, lock and valid bits included: a cache miss
 * is a request's hot path, and the allocations it made before (the head,
 * about 3 KiB of it the row's map, zeroed by calloc; its valid bits) were
 * the only ones a 4 KiB random write made (the lock alone is made anew,
 * head_new).  Fresh buffer memory was worse: a page fault per page on first
 * touch and a TLB shootdown at munmap made every new row several times
 * slower than the I/O it did.  What is kept is bounded by the most heads
 * the cache ever held at once, and freed only with the cache.
 */
static void
head_free (struct stripe_cache *c, struct stripe_head *sh)
{
  if (sh->buf) {
    c->used -= c->head_bytes;
    if (c->nspare == c->spare_cap) {
      size_t cap = c->spare_cap ? 2 * c->spare_cap : 16;
      uint8_t **p = realloc (c->spare, cap * sizeof *p);

      if (p) {
        c->spare = p;
        c->spare_cap = cap;
      }
    }
    if (c->nspare < c->spare_cap)
      c->spare[c->nspare++] = sh->buf;
    else
      free (sh->buf);
    sh->buf = NULL;
  }
  sh->hash_next = c->free_heads;
  c->free_heads = sh;
}

/* For good, a head of the free list: the cache is going away. */
static void
head_destroy (struct stripe_head *sh)
{
  pthread_mutex_destroy (&sh->lock);
  free (sh->valid);
  free (sh);
}

static void
hash_remove (struct stripe_cache *c, struct stripe_head *sh)
{
  struct stripe_head **pp = &c->hash[sh->stripe & c->hash_mask];

  while (*pp != sh)
    pp = &(*pp)->hash_next;
  *pp = sh->hash_next;
}

void
stripe_cache_destroy (struct stripe_cache *c)
{
  if (c == NULL)
    return;
  while (c->lru.lru_next != &c->lru) {
    struct stripe_head *sh = c->lru.lru_next;

    lru_unlink (sh);
    hash_remove (c, sh);
    head_free (c, sh);
  }
  while (c->free_heads) {
    struct stripe_head *sh = c->free_heads;

    c->free_heads = sh->hash_next;
    head_destroy (sh);
  }
  while (c->nspare)
    free (c->spare[--c->nspare]);
  free (c->spare);
  pthread_mutex_destroy (&c->lock);
  free (c->hash);
  free (c->zero);
  free (c);
}

/* Free unreferenced heads, oldest first, until within budget. */
static void
evict (struct stripe_cache *c)
{
  while (c->used > c->budget && c->lru.lru_next != &c->lru) {
    struct stripe_head *sh = c->lru.lru_next;

    lru_unlink (sh);
    hash_remove (c, sh);
    head_free (c, sh);
  }
}

/* Called with c->lock held: a head for the row, from the free list if it
 * has one (head_free).  Its valid bits say nothing until it has a buffer:
 * stripe_head_buffers clears them then, and every user of the pages calls
 * that first.  A reused head's lock is made anew (a few stores in glibc):
 * it is another row's lock now, and a lock-order checker (ThreadSanitizer)
 * that knows locks by address would otherwise see two rebuild windows,
 * each in row order, take the same two locks in opposite orders
 * (tests/test_stripe_cache_lock_reuse.c).
 */
static struct stripe_head *
head_new (struct stripe_cache *c, uint64_t stripe)
{
  struct stripe_head *sh = c->free_heads;

  if (sh) {
    c->free_heads = sh->hash_next;
    pthread_mutex_destroy (&sh->lock);
    pthread_mutex_init (&sh->lock, NULL);
  }
  else {
    sh = calloc (1, sizeof *sh);
    if (sh == NULL ||
        (sh->valid = calloc (valid_words (c), sizeof (uint64_t))) == NULL) {
      free (sh);
      return NULL;
    }
    pthread_mutex_init (&sh->lock, NULL);
  }
  sh->stripe = stripe;
  sh->refs = 0;
  geometry_map_stripe (c->g, stripe, &sh->map);
  sh->hash_next = c->hash[stripe & c->hash_mask];
  c->hash[stripe & c->hash_mask] = sh;
  return sh;
}

struct stripe_head *
stripe_cache_get (struct stripe_cache *c, uint64_t stripe)
{
  struct stripe_head *sh;

  pthread_mutex_lock (&c->lock);
  for (sh = c->hash[stripe & c->hash_mask]; sh; sh = sh->hash_next)
    if (sh->stripe == stripe)
      break;
  if (sh == NULL)
    sh = head_new (c, stripe);
  else if (sh->refs == 0)
    lru_unlink (sh);
  if (sh)
    sh->refs++;
  pthread_mutex_unlock (&c->lock);

  if (sh == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  pthread_mutex_lock (&sh->lock);
  return sh;
}

/* A head nobody uses any more is kept for what its pages cache, so one
 * without a buffer (a row zeroed, trimmed or punched by a rebuild, which
 * caches nothing) is freed at once: the budget counts buffers, and such
 * heads, never evicted, grew without bound (a trim of a 64 GiB array left
 * 208 MB of them).
 */
void
stripe_cache_put (struct stripe_cache *c, struct stripe_head *sh)
{
  pthread_mutex_unlock (&sh->lock);
  pthread_mutex_lock (&c->lock);
  if (--sh->refs == 0) {
    if (sh->buf == NULL) {
      hash_remove (c, sh);
      head_free (c, sh);
    }
    else {
      lru_append (c, sh);
      evict (c);
    }
  }
  pthread_mutex_unlock (&c->lock);
}

const struct stripe_map *
stripe_head_map (const struct stripe_head *sh)
{
  return &sh->map;
}

void
stripe_head_invalidate (struct stripe_cache *c, struct stripe_head *sh)
{
  memset (sh->valid, 0, valid_words (c) * sizeof (uint64_t));
}

void
stripe_cache_stats (struct stripe_cache *c, struct stripe_stats *s)
{
  s->rmw = atomic_load_explicit (&c->stats.rmw, memory_order_relaxed);
  s->rcw = atomic_load_explicit (&c->stats.rcw, memory_order_relaxed);
  s->full = atomic_load_explicit (&c->stats.full, memory_order_relaxed);
  s->reads = atomic_load_explicit (&c->stats.reads, memory_order_relaxed);
}

int
stripe_head_buffers (struct stripe_cache *c, struct stripe_head *sh)
{
  if (sh->buf)
    return 0;
  pthread_mutex_lock (&c->lock);
  if (c->nspare)
    sh->buf = c->spare[--c->nspare];
  c->used += c->head_bytes;
  pthread_mutex_unlock (&c->lock);
  if (sh->buf == NULL && (sh->buf = aligned_alloc (PAGE, c->head_bytes)) == NULL) {
    pthread_mutex_lock (&c->lock);
    c->used -= c->head_bytes;
    pthread_mutex_unlock (&c->lock);
    return -1;
  }
  stripe_head_invalidate (c, sh);
  return 0;
}

static int
cmp_uint (const void *a, const void *b)
{
  unsigned int x = *(const unsigned int *) a, y = *(const unsigned int *) b;

  return x < y ? -1 : x > y;
}

void
stripe_plan_make (struct plan *pl)
{
  const uint64_t chunk = pl->c->g->chunk;
  unsigned int cut[6], ncut = 0;

  pl->ifirst = pl->offset / chunk;
  pl->ilast = (pl->offset + pl->len - 1) / chunk;
  for (int i = pl->ifirst; i <= pl->ilast; i++) {
    pl->ws[i] = i == pl->ifirst ? pl->offset % chunk : 0;
    pl->we[i] = i == pl->ilast ? (pl->offset + pl->len - 1) % chunk + 1 : chunk;
  }

  /* Only the first and last chunk can be written partly, so their page
   * ranges are the only cuts inside [0, pages).
   */
  cut[ncut++] = 0;
  cut[ncut++] = pl->c->pages;
  cut[ncut++] = first_page (pl, pl->ifirst);
  cut[ncut++] = end_page (pl, pl->ifirst);
  cut[ncut++] = first_page (pl, pl->ilast);
  cut[ncut++] = end_page (pl, pl->ilast);
  qsort (cut, ncut, sizeof cut[0], cmp_uint);

  pl->nseg = 0;
  for (unsigned int k = 0; k + 1 < ncut; k++) {
    struct segment s = { cut[k], cut[k + 1], -1, -1 };

    if (s.first == s.end)
      continue;
    for (int i = pl->ifirst; i <= pl->ilast; i++)
      if (first_page (pl, i) <= s.first && s.end <= end_page (pl, i)) {
        if (s.ilo == -1)
          s.ilo = i;
        s.ihi = i;
      }
    if (s.ilo != -1)
      pl->seg[pl->nseg++] = s;
  }
}

