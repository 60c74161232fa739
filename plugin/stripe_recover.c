/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading a row through the cache, and reconstructing what members that
 * cannot be read hold: degraded reads (stripe_read), the degraded path of
 * writes (stripe_write.c), and rebuilding a member row by row
 * (stripe_rebuild_row).
 *
 * A member cannot be read at a row if it failed, or if it is being
 * rebuilt and the row is at or above its recovery offset (member.h).
 * stripe_fill_rows reads a page range from every readable member in one
 * batch and computes the others' pages from them, in md's syndrome order
 * (geometry.h):
 *
 *   lost                       how
 *   one data chunk (P there)   XOR of the other data and P
 *   P only (RAID-5)            XOR of the data
 *   data + P (RAID-6)          parity_recov_datap
 *   two data chunks (RAID-6)   parity_recov_2data
 *   Q, or P and Q (RAID-6)     recompute from the data (parity_gen_syndrome)
 *
 * A read that fails fails its member (the failure policy, members.c) and
 * the range is read again with one member fewer, until the row is beyond
 * the level's tolerance (EIO).  Reconstructed pages are marked valid: they
 * say what the member would hold, which a write then keeps true.
 */

#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stripe_internal.h"

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

/* Compute the lost members' pages [first, end) from the others, which
 * must be valid there.  ptrs[] is in syndrome order: data slots, P, Q.
 */
static void
reconstruct (struct stripe_cache *c, struct stripe_head *sh,
             const struct lost_set *l, unsigned int first, unsigned int end)
{
  const struct geometry *g = c->g;
  const struct stripe_map *map = &sh->map;
  size_t bytes = (size_t) (end - first) * PAGE;
  void *ptrs[GEOMETRY_MAX_MEMBERS];
  int lost[2], nlost = 0;
  bool p_lost = is_lost (l, map->p_member);
  bool q_lost = map->q_member >= 0 && is_lost (l, map->q_member);

  for (int z = 0; z < g->data_disks; z++) {
    ptrs[z] = page_ptr (c, sh, map->slot_member[z], first);
    if (is_lost (l, map->slot_member[z]) && nlost < 2)
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
    if (is_lost (l, m))
      set_valid (c, sh, m, first, end);
}

/* Make every member's pages [first, end) valid: read what the working
 * members have, and reconstruct the others' pages, both after one view
 * of which members can be read (struct lost_set).  A read error fails
 * that member and tries again with one member fewer.
 */
int
stripe_fill_rows (struct stripe_cache *c, struct stripe_head *sh,
           unsigned int first, unsigned int end)
{
  struct member_io *ios;
  uint64_t base = geometry_member_offset (c->g, sh->stripe);
  int r = -1;

  ios = malloc ((size_t) c->g->members * ((end - first + 1) / 2 + 1) * sizeof *ios);
  if (ios == NULL)
    return -1;
  for (;;) {
    struct lost_set l;
    size_t n = 0;

    lost_set_take (c, sh, &l);
    if (!members_tolerate (c->ms, l.n)) {
      errno = EIO;
      break;
    }
    for (int m = 0; m < c->g->members; m++) {
      struct member *mb = members_at (c->ms, m);

      if (is_lost (&l, m))
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
      mark_read (c, sh, ios, n);
      reconstruct (c, sh, &l, first, end);
      r = 0;
      break;
    }
    mark_read (c, sh, ios, n);
    if (stripe_io_failed (c, sh, ios, n) == -1)
      break;
  }
  free (ios);
  return r;
}

/* Every page the write's segments cover, on every member, made valid. */
int
stripe_fill_plan (struct plan *pl)
{
  for (int k = 0; k < pl->nseg; k++)
    if (stripe_fill_rows (pl->c, pl->sh, pl->seg[k].first,
                          pl->seg[k].end) == -1)
      return -1;
  return 0;
}

int
stripe_read (struct stripe_cache *c, struct stripe_head *sh,
             uint64_t offset, uint64_t len, void *buf)
{
  struct plan pl = { .c = c, .sh = sh, .offset = offset, .len = len };

  if (stripe_head_buffers (c, sh) == -1)
    return -1;
  stripe_plan_make (&pl);
  if (stripe_fill_plan (&pl) == -1)
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

  if (stripe_head_buffers (c, sh) == -1 || stripe_fill_rows (c, sh, 0, c->pages) == -1)
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
