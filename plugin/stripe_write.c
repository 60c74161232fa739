/* SPDX-License-Identifier: BSD-3-Clause */
/* Writing part of one stripe row (stripe_write), with the row's head
 * held (stripe_cache.c):
 *  1. Cut the written range into row segments (stripe_plan_make).
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
 * A full row on a healthy row (a sequential writer's usual request) is not
 * copied into the cache: P/Q are computed from the client's buffer and the
 * data chunks written from it, and the row's cached data pages are
 * forgotten.  The copy was a tenth of the CPU of 1 MiB sequential writes
 * (perf, RAID-6 of 6 on tmpfs, chunk 256K: memmove 12.5% of samples, as
 * much as the kernel's copy out of the socket); bench/results/
 * 2026-12-05-zen5-full-rows.md measures the change.  O_DIRECT members need
 * an aligned buffer, so for them a misaligned one is still copied.
 * Degraded (a member cannot be read at this row, before or because of
 * step 3): every page of the segments is made valid on every member,
 * reconstructing what the unreadable ones hold (stripe_recover.c), and the
 * parity is computed afresh (RCW).  A member whose write fails is failed:
 * what the others now hold is consistent, so the write still succeeds
 * while the row is within the level's tolerance.
 */

#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "md_badblocks.h"
#include "stripe_internal.h"

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

/* Whether the write covers the whole row. */
static bool
full_row (const struct plan *pl)
{
  return pl->offset == 0 && pl->len == pl->c->g->stripe_data_bytes;
}

/* Whether the row's data can be written straight from the client's
 * buffer: a full row, every member readable (no reconstruction, no failed
 * member whose cached pages must say what it would hold), a buffer that
 * every O_DIRECT data member can take.
 */
static bool
full_row_from_client (const struct plan *pl)
{
  const struct stripe_cache *c = pl->c;

  if (pl->data == NULL || !full_row (pl) || count_unreadable (c, pl->sh) > 0)
    return false;
  if ((uintptr_t) pl->data % PAGE == 0)
    return true;
  for (int i = 0; i < c->g->data_disks; i++)
    if (members_at (c->ms, pl->sh->map.data_member[i])->direct)
      return false;
  return true;
}

/* Data chunk i's bytes from page on: in the client's buffer or the cache. */
static const uint8_t *
data_ptr (struct plan *pl, int i, unsigned int page)
{
  if (pl->from_client)
    return pl->data + (size_t) i * pl->c->g->chunk + (size_t) page * PAGE;
  return page_ptr (pl->c, pl->sh, pl->sh->map.data_member[i], page);
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

    for (int i = 0; i < g->data_disks; i++)
      ptrs[map->data_slot[i]] = (void *) data_ptr (pl, i, s->first);
    parity_ptrs (pl, s, &ptrs[g->data_disks], &ptrs[g->data_disks + 1]);
    compute_parity (g, ptrs, bytes);
  }
}

/* Write pages [first, end) of member m from buf: the cache's pages, which
 * then hold the member's contents, or the client's buffer, in which case
 * the cache's copy is stale.
 */
static void
add_write (struct plan *pl, struct member_io *ios, size_t *n, int m,
           unsigned int first, unsigned int end, const uint8_t *buf)
{
  uint64_t base = geometry_member_offset (pl->c->g, pl->sh->stripe);
  struct member *mb = members_at (pl->c->ms, m);

  mark_valid (pl->c, pl->sh, m, first, end,
              buf == page_ptr (pl->c, pl->sh, m, first));
  if (member_failed (mb))
    return;
  ios[(*n)++] = (struct member_io) {
    .member = mb, .op = MEMBER_WRITE,
    .buf = (void *) buf,
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
               end_page (pl, i), data_ptr (pl, i, first_page (pl, i)));
  for (int k = 0; k < pl->nseg;) {
    unsigned int first = pl->seg[k].first, end = pl->seg[k].end;

    for (k++; k < pl->nseg && pl->seg[k].first == end; k++)
      end = pl->seg[k].end;
    add_write (pl, ios, &n, map->p_member, first, end,
               page_ptr (pl->c, pl->sh, map->p_member, first));
    if (map->q_member >= 0)
      add_write (pl, ios, &n, map->q_member, first, end,
                 page_ptr (pl->c, pl->sh, map->q_member, first));
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

  if (full_row (pl))
    stat_add (&pl->c->stats.full, 1);
  else
    stat_add (pl->rmw ? &pl->c->stats.rmw : &pl->c->stats.rcw, 1);
  return pl->rmw ? rmw_runs : rcw_runs;
}

/* Whether a member's bad-block log lists any page of sh's row: those
 * must not be read, so the write takes the degraded path, which
 * reconstructs them (md_badblocks.c).
 */
static bool
row_listed_bad (struct stripe_cache *c, struct stripe_head *sh)
{
  uint64_t base = geometry_member_offset (c->g, sh->stripe);

  for (int m = 0; m < c->g->members; m++) {
    struct md_badblocks *bb = members_at (c->ms, m)->bad_blocks;

    if (bb && md_badblocks_count (bb) &&
        md_badblocks_check (bb, base / 512, c->g->chunk / 512, NULL) != 0)
      return true;
  }
  return false;
}

/* After a degraded fill and the new data merged in: whether every data
 * page of the segments is known (valid, or wholly overwritten), so that
 * the parity can be computed.  A page lost to unreadable sectors on more
 * members than the level tolerates is not, unless this write covers it.
 */
static bool
data_known (struct plan *pl)
{
  for (int k = 0; k < pl->nseg; k++)
    for (unsigned int p = pl->seg[k].first; p < pl->seg[k].end; p++)
      for (int i = 0; i < pl->c->g->data_disks; i++)
        if (!valid (pl->c, pl->sh, pl->sh->map.data_member[i], p) &&
            !page_overwritten (pl, i, p))
          return false;
  return true;
}

/* Read what the chosen method needs.  -1 with errno EIO if a read failed
 * and the array can no longer serve; 1 if a read failed but the row can
 * go on degraded (the member failed, or its medium did: the degraded
 * path reconstructs that page and writes it back).
 */
static int
healthy_reads (struct plan *pl, struct member_io *ios)
{
  size_t n = 0;

  stat_add (&pl->c->stats.reads, plan_reads (pl, ios, &n));
  if (n == 0)
    return 0;
  if (member_io_run (ios, n) == 0) {
    mark_read (pl->c, pl->sh, ios, n);
    return 0;
  }
  mark_read (pl->c, pl->sh, ios, n);
  if (members_reads_failed (pl->c->ms, ios, n, pl->sh->stripe) == -1)
    return -1;
  return 1;
}

/* Write the data and parity, then flush with FUA.  A member whose write
 * fails is failed: what the others now hold is consistent, so the write
 * still succeeds while the array is within its tolerance.
 */
static int
write_out (struct plan *pl, struct member_io *ios, bool fua)
{
  size_t nwrites = plan_writes (pl, ios), nflush;
  const uint64_t row = pl->sh->stripe;

  if (members_run_writes (pl->c->ms, ios, nwrites, row) == -1)
    return -1;
  if (!fua)
    return 0;
  nflush = members_flushes_for (ios, nwrites, ios + nwrites);
  return members_run (pl->c->ms, ios + nwrites, nflush, row);
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
  bool degraded = false;
  int r = -1;

  if (!within_tolerance (c, sh)) {
    errno = EIO;
    return -1;
  }
  if (stripe_head_buffers (c, sh) == -1)
    return -1;
  stripe_plan_make (&pl);
  nreads = choose_method (&pl);
  max = nreads + c->g->members * (MAX_SEGMENTS + 2);
  if (max > sizeof stack / sizeof stack[0] &&
      (ios = malloc (max * sizeof *ios)) == NULL)
    return -1;

  /* Degraded (now, a bad-block log lists pages of the row, or after a
   * failed read): every page of the segments is made valid that can be,
   * reconstructing what failed members held, and the parity is computed
   * afresh from the data, which must then be known on every page (read,
   * reconstructed, or overwritten by this write).
   */
  if (count_unreadable (c, sh) > 0 || row_listed_bad (c, sh) ||
      (r = healthy_reads (&pl, ios)) == 1) {
    if (stripe_fill_plan_partly (&pl) == -1)
      goto out;
    pl.rmw = false;
    degraded = true;
  }
  else if (r == -1)
    goto out;

  if (pl.rmw) {
    rmw_parity (&pl);
    merge_new_data (&pl);
    rmw_parity (&pl);
  }
  else {
    pl.from_client = full_row_from_client (&pl);
    if (!pl.from_client)
      merge_new_data (&pl);
    if (degraded && !data_known (&pl)) {
      r = -1;
      errno = EIO;
      goto out;
    }
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
