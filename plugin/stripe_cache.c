/* The stripe cache: stripe heads, their locks, and the write path of one
 * stripe row.
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
 * read-modify-write: the old data and old parity of recently written pages.
 *
 * Writing part of a row (stripe_write):
 *  1. Cut the written range into row segments (runs of pages on which the
 *     same data chunks are written).  Pages written nowhere are left alone.
 *  2. Count the page reads each method needs, not counting valid pages:
 *       read-modify-write (RMW): old data of the written pages, old P, Q;
 *       reconstruct-write (RCW): data pages not wholly overwritten.
 *     Choose RMW only if it reads fewer pages, as md does.  A full-row
 *     write is RCW with nothing to read.
 *  3. Read what is missing, all members in one batch.
 *  4. RMW: take the old data out of P/Q (parity_xor_syndrome, or
 *     parity_xor_gen for RAID-5), copy the new data in, put it into P/Q with
 *     the same call on the same buffers.  Data chunks between the written
 *     ones stand in as a zero page in both calls, where they cancel.
 *     RCW: copy the new data in, compute P/Q (parity_gen_syndrome, or
 *     parity_xor_gen for RAID-5).
 *  5. Write the written data pages and P/Q in one batch; with FUA flush the
 *     touched members.
 * If any member I/O fails the head forgets its pages, since the members may
 * now hold any mix of old and new.
 *
 * Locking.  c->lock guards the hash table, the LRU list, reference counts
 * and the byte count; it is never held during I/O or computation.  Each head
 * has a mutex held by the one request working on that row for the whole of
 * steps 1-5, so one row is updated by one request at a time while other rows
 * proceed in parallel.  A thread holds at most one head at a time (requests
 * spanning rows take them one after the other), so there is no lock order
 * to get wrong.  Heads with no references sit on the LRU list; when the
 * buffers exceed the budget, the least recently used unreferenced heads are
 * freed.  Referenced heads are never freed, so the budget can be exceeded
 * by at most one head per busy thread.
 */

#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "parity.h"
#include "members.h"
#include "stripe.h"

#define PAGE 4096

struct stripe_head {
  uint64_t stripe;
  struct stripe_head *hash_next;
  struct stripe_head *lru_prev, *lru_next;
  unsigned int refs;
  pthread_mutex_t lock;
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

  pthread_mutex_t lock;
  uint8_t **spare;              /* buffers of freed heads, for reuse */
  size_t nspare, spare_cap;
  struct stripe_head **hash;
  size_t hash_mask;
  struct stripe_head lru;       /* list head: lru.lru_next is the oldest */

  struct stripe_stats stats;    /* updated with atomics */
};

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

static size_t valid_words (const struct stripe_cache *c);

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

/* Called with c->lock held.  A head's buffer is kept for the next head
 * rather than freed: fresh memory costs a page fault per page on first
 * touch and munmap a TLB shootdown, which made every new row several times
 * slower than the I/O it did.  Buffers are freed only with the cache.
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
  }
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

static struct stripe_head *
head_new (struct stripe_cache *c, uint64_t stripe)
{
  struct stripe_head *sh = calloc (1, sizeof *sh);
  if (sh == NULL ||
      (sh->valid = calloc (valid_words (c), sizeof (uint64_t))) == NULL) {
    free (sh);
    return NULL;
  }
  sh->stripe = stripe;
  pthread_mutex_init (&sh->lock, NULL);
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

void
stripe_cache_put (struct stripe_cache *c, struct stripe_head *sh)
{
  pthread_mutex_unlock (&sh->lock);
  pthread_mutex_lock (&c->lock);
  if (--sh->refs == 0) {
    lru_append (c, sh);
    evict (c);
  }
  pthread_mutex_unlock (&c->lock);
}

const struct stripe_map *
stripe_head_map (const struct stripe_head *sh)
{
  return &sh->map;
}

static size_t
valid_words (const struct stripe_cache *c)
{
  return (c->g->members * c->pages + 63) / 64;
}

void
stripe_head_invalidate (struct stripe_cache *c, struct stripe_head *sh)
{
  memset (sh->valid, 0, valid_words (c) * sizeof (uint64_t));
}

void
stripe_cache_stats (struct stripe_cache *c, struct stripe_stats *s)
{
  s->rmw = __atomic_load_n (&c->stats.rmw, __ATOMIC_RELAXED);
  s->rcw = __atomic_load_n (&c->stats.rcw, __ATOMIC_RELAXED);
  s->full = __atomic_load_n (&c->stats.full, __ATOMIC_RELAXED);
  s->reads = __atomic_load_n (&c->stats.reads, __ATOMIC_RELAXED);
}

static void
stat_add (uint64_t *counter, uint64_t n)
{
  __atomic_fetch_add (counter, n, __ATOMIC_RELAXED);
}

/* Allocate the head's buffers (with every page invalid) if it has none. */
static int
head_buffers (struct stripe_cache *c, struct stripe_head *sh)
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

static uint8_t *
page_ptr (struct stripe_cache *c, struct stripe_head *sh, int member,
          unsigned int page)
{
  return sh->buf + (size_t) member * c->g->chunk + (size_t) page * PAGE;
}

static bool
valid (struct stripe_cache *c, struct stripe_head *sh, int member,
       unsigned int page)
{
  size_t bit = (size_t) member * c->pages + page;

  return sh->valid[bit / 64] & (UINT64_C (1) << (bit % 64));
}

static void
set_valid (struct stripe_cache *c, struct stripe_head *sh, int member,
           unsigned int first, unsigned int end)
{
  for (unsigned int p = first; p < end; p++) {
    size_t bit = (size_t) member * c->pages + p;

    sh->valid[bit / 64] |= UINT64_C (1) << (bit % 64);
  }
}

/* What one stripe_write does: the written byte range of each data chunk,
 * and the row segments.
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
};

static unsigned int
first_page (const struct plan *pl, int i)
{
  return pl->ws[i] / PAGE;
}

static unsigned int
end_page (const struct plan *pl, int i)
{
  return (pl->we[i] + PAGE - 1) / PAGE;
}

static bool
page_overwritten (const struct plan *pl, int i, unsigned int page)
{
  return i >= pl->ifirst && i <= pl->ilast &&
    pl->ws[i] <= (uint64_t) page * PAGE &&
    (uint64_t) (page + 1) * PAGE <= pl->we[i];
}

static int
cmp_uint (const void *a, const void *b)
{
  unsigned int x = *(const unsigned int *) a, y = *(const unsigned int *) b;

  return x < y ? -1 : x > y;
}

static void
plan_make (struct plan *pl)
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

/* Pages of member m (data chunk i, or -1 for parity) in [first, end) that
 * must be read before the write.  Counts one request per run of pages in
 * *nios, and with ios != NULL also fills them in.
 */
static unsigned int
scan_reads (struct plan *pl, int m, int i, unsigned int first,
            unsigned int end, struct member_io *ios, size_t *nios)
{
  struct stripe_cache *c = pl->c;
  uint64_t base = geometry_member_offset (c->g, pl->sh->stripe);
  unsigned int count = 0, run = 0;

  for (unsigned int p = first; p <= end; p++) {
    bool need = p < end && !valid (c, pl->sh, m, p) &&
      (pl->rmw || !page_overwritten (pl, i, p));

    if (need) {
      count++;
      if (run++ == 0 && ios)
        ios[*nios] = (struct member_io) {
          .member = members_at (c->ms, m), .op = MEMBER_READ,
          .buf = page_ptr (c, pl->sh, m, p),
          .offset = base + (uint64_t) p * PAGE,
        };
    }
    else if (run) {
      if (ios)
        ios[*nios].len = (uint64_t) run * PAGE;
      (*nios)++;
      run = 0;
    }
  }
  return count;
}

/* Every page read the current method needs, counted and optionally queued. */
static unsigned int
plan_reads (struct plan *pl, struct member_io *ios, size_t *nios)
{
  const struct stripe_map *map = &pl->sh->map;
  const struct geometry *g = pl->c->g;
  unsigned int n = 0;

  for (int k = 0; k < pl->nseg; k++) {
    const struct segment *s = &pl->seg[k];
    int lo = pl->rmw ? s->ilo : 0, hi = pl->rmw ? s->ihi : g->data_disks - 1;

    for (int i = lo; i <= hi; i++)
      n += scan_reads (pl, map->data_member[i], i, s->first, s->end, ios, nios);
    if (pl->rmw) {
      n += scan_reads (pl, map->p_member, -1, s->first, s->end, ios, nios);
      if (map->q_member >= 0)
        n += scan_reads (pl, map->q_member, -1, s->first, s->end, ios, nios);
    }
  }
  return n;
}

static void
merge_new_data (struct plan *pl)
{
  struct stripe_cache *c = pl->c;

  for (int i = pl->ifirst; i <= pl->ilast; i++) {
    uint8_t *dst =
      page_ptr (c, pl->sh, pl->sh->map.data_member[i], 0) + pl->ws[i];
    size_t n = pl->we[i] - pl->ws[i];

    if (pl->data)
      memcpy (dst, pl->data + (i * c->g->chunk + pl->ws[i] - pl->offset), n);
    else
      memset (dst, 0, n);
  }
}

/* The parity members' page pointers for one segment. */
static void
parity_ptrs (struct plan *pl, const struct segment *s, void **p, void **q)
{
  const struct stripe_map *map = &pl->sh->map;

  *p = page_ptr (pl->c, pl->sh, map->p_member, s->first);
  if (map->q_member >= 0)
    *q = page_ptr (pl->c, pl->sh, map->q_member, s->first);
}

/* dest = srcs[0] ^ ... ^ srcs[n-1], n >= 1. */
static void
xor_sum (void *dest, void **srcs, int n, size_t bytes)
{
  memcpy (dest, srcs[0], bytes);
  if (n > 1)
    parity_xor_gen (dest, &srcs[1], n - 1, bytes);
}

/* P (and Q) into ptrs[data_disks] (and [data_disks+1]) from the data in
 * ptrs[0 .. data_disks-1], syndrome order.
 */
static void
compute_parity (const struct geometry *g, void **ptrs, size_t bytes)
{
  if (g->level == 6)
    parity_gen_syndrome (g->members, bytes, ptrs);
  else
    xor_sum (ptrs[g->data_disks], ptrs, g->data_disks, bytes);
}

/* Add (or take out: the same thing) the written chunks' current contents
 * to P/Q on every segment.  Called before and after merge_new_data.
 */
static void
rmw_parity (struct plan *pl)
{
  const struct stripe_map *map = &pl->sh->map;
  const struct geometry *g = pl->c->g;
  void *ptrs[GEOMETRY_MAX_MEMBERS];

  for (int k = 0; k < pl->nseg; k++) {
    const struct segment *s = &pl->seg[k];
    size_t bytes = (size_t) (s->end - s->first) * PAGE;
    int lo = g->data_disks, hi = -1, n = 0;

    if (g->level == 5) {
      for (int i = s->ilo; i <= s->ihi; i++)
        ptrs[n++] = page_ptr (pl->c, pl->sh, map->data_member[i], s->first);
      parity_ptrs (pl, s, &ptrs[n], NULL);
      parity_xor_gen (ptrs[n], ptrs, n, bytes);
      continue;
    }
    for (int z = 0; z < g->data_disks; z++)
      ptrs[z] = pl->c->zero;
    for (int i = s->ilo; i <= s->ihi; i++) {
      int slot = map->data_slot[i];

      ptrs[slot] = page_ptr (pl->c, pl->sh, map->data_member[i], s->first);
      lo = slot < lo ? slot : lo;
      hi = slot > hi ? slot : hi;
    }
    parity_ptrs (pl, s, &ptrs[g->members - 2], &ptrs[g->members - 1]);
    parity_xor_syndrome (g->members, lo, hi, bytes, ptrs);
  }
}

/* Compute P/Q from all data chunks on every segment. */
static void
rcw_parity (struct plan *pl)
{
  const struct stripe_map *map = &pl->sh->map;
  const struct geometry *g = pl->c->g;
  void *ptrs[GEOMETRY_MAX_MEMBERS];

  for (int k = 0; k < pl->nseg; k++) {
    const struct segment *s = &pl->seg[k];
    size_t bytes = (size_t) (s->end - s->first) * PAGE;

    for (int z = 0; z < g->data_disks; z++)
      ptrs[z] = page_ptr (pl->c, pl->sh, map->slot_member[z], s->first);
    parity_ptrs (pl, s, &ptrs[g->data_disks], &ptrs[g->data_disks + 1]);
    compute_parity (g, ptrs, bytes);
  }
}

/* Mark what the successful reads of a batch brought in. */
static void
mark_read (struct plan *pl, const struct member_io *ios, size_t n)
{
  for (size_t k = 0; k < n; k++) {
    size_t at = (uint8_t *) ios[k].buf - pl->sh->buf;
    unsigned int first = at % pl->c->g->chunk / PAGE;

    if (ios[k].err == 0)
      set_valid (pl->c, pl->sh, at / pl->c->g->chunk, first,
                 first + ios[k].len / PAGE);
  }
}

static void
add_write (struct plan *pl, struct member_io *ios, size_t *n, int m,
           unsigned int first, unsigned int end)
{
  uint64_t base = geometry_member_offset (pl->c->g, pl->sh->stripe);
  struct member *mb = members_at (pl->c->ms, m);

  set_valid (pl->c, pl->sh, m, first, end);
  if (member_failed (mb))
    return;
  ios[(*n)++] = (struct member_io) {
    .member = mb, .op = MEMBER_WRITE,
    .buf = page_ptr (pl->c, pl->sh, m, first),
    .offset = base + (uint64_t) first * PAGE,
    .len = (uint64_t) (end - first) * PAGE,
  };
}

/* The written data pages and P/Q, adjacent segments joined; nothing for
 * failed members, whose pages in the cache still say what they would hold.
 */
static size_t
plan_writes (struct plan *pl, struct member_io *ios)
{
  const struct stripe_map *map = &pl->sh->map;
  size_t n = 0;

  for (int i = pl->ifirst; i <= pl->ilast; i++)
    add_write (pl, ios, &n, map->data_member[i], first_page (pl, i),
               end_page (pl, i));
  for (int k = 0; k < pl->nseg;) {
    unsigned int first = pl->seg[k].first, end = pl->seg[k].end;

    for (k++; k < pl->nseg && pl->seg[k].first == end; k++)
      end = pl->seg[k].end;
    add_write (pl, ios, &n, map->p_member, first, end);
    if (map->q_member >= 0)
      add_write (pl, ios, &n, map->q_member, first, end);
  }
  return n;
}

/* One flush per member that plan_writes wrote. */
static size_t
plan_flushes (struct plan *pl, const struct member_io *writes, size_t nw,
              struct member_io *ios)
{
  size_t n = 0;

  for (size_t k = 0; k < nw; k++) {
    bool seen = false;

    for (size_t j = 0; j < n; j++)
      seen |= ios[j].member == writes[k].member;
    if (!seen)
      ios[n++] = (struct member_io) {
        .member = writes[k].member, .op = MEMBER_FLUSH,
      };
  }
  return n;
}

/* Choose RMW or RCW; returns how many read requests the choice needs. */
static size_t
choose_method (struct plan *pl)
{
  size_t rmw_runs = 0, rcw_runs = 0;
  unsigned int rmw_reads, rcw_reads;

  pl->rmw = true;
  rmw_reads = plan_reads (pl, NULL, &rmw_runs);
  pl->rmw = false;
  rcw_reads = plan_reads (pl, NULL, &rcw_runs);
  pl->rmw = rmw_reads < rcw_reads;

  if (pl->offset == 0 && pl->len == pl->c->g->stripe_data_bytes)
    stat_add (&pl->c->stats.full, 1);
  else
    stat_add (pl->rmw ? &pl->c->stats.rmw : &pl->c->stats.rcw, 1);
  return pl->rmw ? rmw_runs : rcw_runs;
}

/* Members that cannot be read at this row (failed, or not yet rebuilt),
 * and whether the level tolerates that many (members.c).
 */
static int
count_unreadable (const struct stripe_cache *c, const struct stripe_head *sh)
{
  return members_unreadable (c->ms, sh->stripe);
}

static bool
within_tolerance (const struct stripe_cache *c, const struct stripe_head *sh)
{
  return members_row_servable (c->ms, sh->stripe);
}

static bool
unreadable (const struct stripe_cache *c, const struct stripe_head *sh, int m)
{
  return !member_readable (members_at (c->ms, m), sh->stripe);
}

/* The failure policy (members.c) for the requests in ios that failed.
 * Returns 0 if the row can still be served, else -1 with errno EIO.
 */
static int
fail_members (struct stripe_cache *c, const struct stripe_head *sh,
              const struct member_io *ios, size_t n)
{
  members_io_failed (ios, n);
  if (within_tolerance (c, sh))
    return 0;
  errno = EIO;
  return -1;
}

/* XOR of every member's pages except `target` (data and P only) into
 * target: the RAID-5 rebuild, and RAID-6's when P survives.
 */
static void
xor_others (void **ptrs, int data_disks, int target, size_t bytes)
{
  void *srcs[GEOMETRY_MAX_MEMBERS];
  int n = 0;

  for (int z = 0; z <= data_disks; z++)   /* data slots, then P */
    if (z != target)
      srcs[n++] = ptrs[z];
  if (n > 0)                    /* always: >= 2 data disks */
    xor_sum (ptrs[target], srcs, n, bytes);
}

/* Compute the failed members' pages [first, end) from the others, which
 * must be valid there.  ptrs[] is in syndrome order: data slots, P, Q.
 */
static void
reconstruct (struct stripe_cache *c, struct stripe_head *sh,
             unsigned int first, unsigned int end)
{
  const struct geometry *g = c->g;
  const struct stripe_map *map = &sh->map;
  size_t bytes = (size_t) (end - first) * PAGE;
  void *ptrs[GEOMETRY_MAX_MEMBERS];
  int lost[2], nlost = 0;
  bool p_lost = unreadable (c, sh, map->p_member);
  bool q_lost = map->q_member >= 0 && unreadable (c, sh, map->q_member);

  for (int z = 0; z < g->data_disks; z++) {
    ptrs[z] = page_ptr (c, sh, map->slot_member[z], first);
    if (unreadable (c, sh, map->slot_member[z]) && nlost < 2)
      lost[nlost++] = z;
  }
  ptrs[g->data_disks] = page_ptr (c, sh, map->p_member, first);
  if (map->q_member >= 0)
    ptrs[g->data_disks + 1] = page_ptr (c, sh, map->q_member, first);

  if (nlost == 2)
    parity_recov_2data (g->members, bytes, lost[0], lost[1], ptrs);
  else if (nlost == 1 && p_lost)
    parity_recov_datap (g->members, bytes, lost[0], ptrs);
  else if (nlost == 1)
    xor_others (ptrs, g->data_disks, lost[0], bytes);
  else if (p_lost && g->level == 5)
    xor_others (ptrs, g->data_disks, g->data_disks, bytes);
  if (g->level == 6 && (q_lost || (p_lost && nlost == 0)))
    parity_gen_syndrome (g->members, bytes, ptrs);   /* the lost parity */

  for (int m = 0; m < g->members; m++)
    if (unreadable (c, sh, m))
      set_valid (c, sh, m, first, end);
}

/* Make every member's pages [first, end) valid: read what the working
 * members have, and reconstruct the failed members' pages.  A read error
 * fails that member and tries again with one member fewer.
 */
static int
fill_rows (struct stripe_cache *c, struct stripe_head *sh,
           unsigned int first, unsigned int end)
{
  struct member_io *ios;
  uint64_t base = geometry_member_offset (c->g, sh->stripe);
  int r = -1;

  ios = malloc ((size_t) c->g->members * ((end - first + 1) / 2 + 1) * sizeof *ios);
  if (ios == NULL)
    return -1;
  for (;;) {
    size_t n = 0;

    if (!within_tolerance (c, sh)) {
      errno = EIO;
      break;
    }
    for (int m = 0; m < c->g->members; m++) {
      struct member *mb = members_at (c->ms, m);

      if (!member_readable (mb, sh->stripe))
        continue;
      for (unsigned int p = first; p < end; p++) {
        if (valid (c, sh, m, p))
          continue;
        if (n && ios[n - 1].member == mb &&
            ios[n - 1].offset + ios[n - 1].len == base + (uint64_t) p * PAGE)
          ios[n - 1].len += PAGE;
        else
          ios[n++] = (struct member_io) {
            .member = mb, .op = MEMBER_READ,
            .buf = page_ptr (c, sh, m, p), .len = PAGE,
            .offset = base + (uint64_t) p * PAGE,
          };
      }
    }
    if (n == 0 || member_io_run (ios, n) == 0) {
      struct plan pl = { .c = c, .sh = sh };

      mark_read (&pl, ios, n);
      reconstruct (c, sh, first, end);
      r = 0;
      break;
    }
    {
      struct plan pl = { .c = c, .sh = sh };

      mark_read (&pl, ios, n);
    }
    if (fail_members (c, sh, ios, n) == -1)
      break;
  }
  free (ios);
  return r;
}

/* Every page the write's segments cover, on every member, made valid. */
static int
fill_segments (struct plan *pl)
{
  for (int k = 0; k < pl->nseg; k++)
    if (fill_rows (pl->c, pl->sh, pl->seg[k].first, pl->seg[k].end) == -1)
      return -1;
  return 0;
}

/* Read what the chosen method needs.  -1 with errno EIO if a read failed
 * and the array can no longer serve; 1 if a member failed but the array
 * can go on degraded.
 */
static int
healthy_reads (struct plan *pl, struct member_io *ios)
{
  size_t n = 0;

  stat_add (&pl->c->stats.reads, plan_reads (pl, ios, &n));
  if (n == 0)
    return 0;
  if (member_io_run (ios, n) == 0) {
    mark_read (pl, ios, n);
    return 0;
  }
  mark_read (pl, ios, n);
  return fail_members (pl->c, pl->sh, ios, n) == -1 ? -1 : 1;
}

/* Write the data and parity, then flush with FUA.  A member whose write
 * fails is failed: what the others now hold is consistent, so the write
 * still succeeds while the array is within its tolerance.
 */
static int
write_out (struct plan *pl, struct member_io *ios, bool fua)
{
  size_t nwrites = plan_writes (pl, ios), nflush;

  if (member_io_run (ios, nwrites) == -1 &&
      fail_members (pl->c, pl->sh, ios, nwrites) == -1)
    return -1;
  if (!fua)
    return 0;
  nflush = plan_flushes (pl, ios, nwrites, ios + nwrites);
  if (member_io_run (ios + nwrites, nflush) == -1 &&
      fail_members (pl->c, pl->sh, ios + nwrites, nflush) == -1)
    return -1;
  return 0;
}

int
stripe_write (struct stripe_cache *c, struct stripe_head *sh,
              uint64_t offset, uint64_t len, const void *data, bool fua)
{
  struct plan pl = {
    .c = c, .sh = sh, .offset = offset, .len = len, .data = data,
  };
  struct member_io stack[64], *ios = stack;
  size_t nreads = 0, max;
  int r = -1;

  if (!within_tolerance (c, sh)) {
    errno = EIO;
    return -1;
  }
  if (head_buffers (c, sh) == -1)
    return -1;
  plan_make (&pl);
  nreads = choose_method (&pl);
  max = nreads + c->g->members * (MAX_SEGMENTS + 2);
  if (max > sizeof stack / sizeof stack[0] &&
      (ios = malloc (max * sizeof *ios)) == NULL)
    return -1;

  /* Degraded (now, or after a failed read): every page of the segments
   * is made valid, reconstructing what failed members held, and the
   * parity is computed afresh.
   */
  if (count_unreadable (c, sh) > 0 || (r = healthy_reads (&pl, ios)) == 1) {
    if (fill_segments (&pl) == -1)
      goto out;
    pl.rmw = false;
  }
  else if (r == -1)
    goto out;

  if (pl.rmw) {
    rmw_parity (&pl);
    merge_new_data (&pl);
    rmw_parity (&pl);
  }
  else {
    merge_new_data (&pl);
    rcw_parity (&pl);
  }
  r = write_out (&pl, ios, fua);

 out:
  if (r == -1) {
    int e = errno;

    stripe_head_invalidate (c, sh);
    errno = e;
  }
  if (ios != stack)
    free (ios);
  return r;
}

int
stripe_read (struct stripe_cache *c, struct stripe_head *sh,
             uint64_t offset, uint64_t len, void *buf)
{
  struct plan pl = { .c = c, .sh = sh, .offset = offset, .len = len };

  if (head_buffers (c, sh) == -1)
    return -1;
  plan_make (&pl);
  if (fill_segments (&pl) == -1)
    return -1;
  for (int i = pl.ifirst; i <= pl.ilast; i++)
    memcpy ((uint8_t *) buf + (i * c->g->chunk + pl.ws[i] - offset),
            page_ptr (c, sh, sh->map.data_member[i], 0) + pl.ws[i],
            pl.we[i] - pl.ws[i]);
  return 0;
}

int
stripe_rebuild_row (struct stripe_cache *c, struct stripe_head *sh, int member)
{
  struct member_io io;

  if (head_buffers (c, sh) == -1 || fill_rows (c, sh, 0, c->pages) == -1)
    return -1;
  io = (struct member_io) {
    .member = members_at (c->ms, member), .op = MEMBER_WRITE,
    .buf = page_ptr (c, sh, member, 0), .len = c->g->chunk,
    .offset = geometry_member_offset (c->g, sh->stripe),
  };
  if (member_io_run (&io, 1) == -1) {
    members_io_failed (&io, 1);
    return -1;
  }
  return 0;
}

/* log_g over GF(2^8) (0x11d), for locating bad data; built once. */
static uint8_t gf_log[256];
static pthread_once_t gf_log_once = PTHREAD_ONCE_INIT;

static void
gf_log_init (void)
{
  unsigned int x = 1;

  for (unsigned int i = 0; i < 255; i++) {
    gf_log[x] = i;
    x = (x << 1) ^ (x & 0x80 ? 0x11d : 0);
  }
}

/* The data slot whose corruption explains P and Q differing by pd and qd
 * on one page (qd = g^z pd on every byte), or -1.
 */
static int
locate_bad_slot (const uint8_t *pd, const uint8_t *qd, int data_disks)
{
  int z = -1;

  pthread_once (&gf_log_once, gf_log_init);
  for (size_t i = 0; i < PAGE; i++) {
    int zi;

    if (pd[i] == 0 && qd[i] == 0)
      continue;
    if (pd[i] == 0 || qd[i] == 0)
      return -1;
    zi = (gf_log[qd[i]] - gf_log[pd[i]] + 255) % 255;
    if (z == -1)
      z = zi;
    else if (z != zi)
      return -1;
  }
  return z < data_disks ? z : -1;
}

int
stripe_scrub_row (struct stripe_cache *c, struct stripe_head *sh, bool repair,
                  uint8_t *fresh, struct stripe_scrub *out)
{
  const struct geometry *g = c->g;
  const struct stripe_map *map = &sh->map;
  uint64_t base = geometry_member_offset (g, sh->stripe);
  void *ptrs[GEOMETRY_MAX_MEMBERS];
  int r = -1;

  out->mismatches = 0;
  out->bad_data_member = -1;
  if (count_unreadable (c, sh) > 0) {
    errno = EIO;                /* nothing to check against */
    return -1;
  }
  stripe_head_invalidate (c, sh);          /* check the members, not the cache */
  if (head_buffers (c, sh) == -1 || fill_rows (c, sh, 0, c->pages) == -1)
    return -1;

  /* The parity the data says, computed into fresh[] (P, then Q). */
  for (int z = 0; z < g->data_disks; z++)
    ptrs[z] = page_ptr (c, sh, map->slot_member[z], 0);
  ptrs[g->data_disks] = fresh;
  ptrs[g->data_disks + 1] = fresh + g->chunk;
  compute_parity (g, ptrs, g->chunk);

  for (unsigned int p = 0; p < c->pages; p++) {
    uint8_t *P = page_ptr (c, sh, map->p_member, p), *fp = fresh + p * PAGE;
    uint8_t *Q = g->level == 6 ? page_ptr (c, sh, map->q_member, p) : NULL;
    uint8_t *fq = fresh + g->chunk + p * PAGE;
    bool p_bad = memcmp (P, fp, PAGE) != 0;
    bool q_bad = Q && memcmp (Q, fq, PAGE) != 0;
    struct member_io ios[2];
    int n = 0, slot = -1;

    if (!p_bad && !q_bad)
      continue;
    out->mismatches++;
    if (p_bad && q_bad) {
      uint8_t pd[PAGE], qd[PAGE];

      for (size_t i = 0; i < PAGE; i++) {
        pd[i] = P[i] ^ fp[i];
        qd[i] = Q[i] ^ fq[i];
      }
      slot = locate_bad_slot (pd, qd, g->data_disks);
      if (slot >= 0) {
        out->bad_data_member = map->slot_member[slot];
        if (repair) {
          uint8_t *d = page_ptr (c, sh, out->bad_data_member, p);

          for (size_t i = 0; i < PAGE; i++)
            d[i] ^= pd[i];
          ios[n++] = (struct member_io) {
            .member = members_at (c->ms, out->bad_data_member), .op = MEMBER_WRITE,
            .buf = d, .len = PAGE, .offset = base + (uint64_t) p * PAGE,
          };
        }
      }
    }
    if (repair && slot < 0) {
      memcpy (P, fp, PAGE);
      ios[n++] = (struct member_io) {
        .member = members_at (c->ms, map->p_member), .op = MEMBER_WRITE, .buf = P,
        .len = PAGE, .offset = base + (uint64_t) p * PAGE,
      };
      if (Q) {
        memcpy (Q, fq, PAGE);
        ios[n++] = (struct member_io) {
          .member = members_at (c->ms, map->q_member), .op = MEMBER_WRITE, .buf = Q,
          .len = PAGE, .offset = base + (uint64_t) p * PAGE,
        };
      }
    }
    if (n && member_io_run (ios, n) == -1 &&
        fail_members (c, sh, ios, n) == -1)
      goto out;
  }
  r = 0;

 out:
  if (r == -1)
    stripe_head_invalidate (c, sh);
  return r;
}
