/* SPDX-License-Identifier: BSD-3-Clause */
/* Checking a row's parity, and repairing it (stripe_scrub_row): the
 * scrub and the resync (jobs.c).
 *
 * The row is read from the members, never from the cache (its pages are
 * forgotten first), and checked page by page with libparity's
 * parity_check (RAID-6) or parity_check_p (RAID-5): each page whose P or
 * Q disagrees with its data is one mismatch, as md's mismatch_cnt counts
 * them.  For RAID-6, when exactly one data page explains the difference
 * (libparity locates it: Q's difference is g^z times P's on every byte,
 * z the page's syndrome slot), that page is reported and, with repair,
 * given its old bytes back; otherwise repair rewrites the parity that
 * differs from the data, as md's repair does.  Every fix is one XOR of
 * the difference parity_check leaves in scratch.
 *
 * Pages a member cannot give (a read error on its medium, or a page its
 * bad-block log lists) are reconstructed from the others and counted as
 * unreadable.  Those that failed a read are written back and read back
 * in both modes, as md corrects a read error whatever the sync action;
 * the listed ones only with repair (a write that succeeds takes them out
 * of the log).  Pages that cannot be reconstructed are counted as lost
 * and recorded in the logs (stripe_fill_rows_lossy); they are not
 * checked, and the scrub goes on.
 */

#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parity.h"
#include "stripe_internal.h"

/* Make a page right by XORing its difference into it; queue its write. */
static int
queue_fix (struct stripe_cache *c, struct member_io *ios, int n, int member,
           void *page, void *diff, uint64_t offset)
{
  parity_xor_gen (page, &diff, 1, PAGE);
  ios[n] = (struct member_io) {
    .member = members_at (c->ms, member), .op = MEMBER_WRITE, .buf = page,
    .len = PAGE, .offset = offset,
  };
  return n + 1;
}

/* Whether every member's page p is valid: not lost to unreadable
 * sectors on more members than the level tolerates.
 */
static bool
page_known (struct stripe_cache *c, struct stripe_head *sh, unsigned int p)
{
  for (int m = 0; m < c->g->members; m++)
    if (!valid (c, sh, m, p))
      return false;
  return true;
}

int
stripe_scrub_row (struct stripe_cache *c, struct stripe_head *sh, bool repair,
                  uint8_t *scratch, struct stripe_scrub *out)
{
  const struct geometry *g = c->g;
  const struct stripe_map *map = &sh->map;
  const int nd = g->data_disks;
  uint64_t base = geometry_member_offset (g, sh->stripe);
  int member[GEOMETRY_MAX_MEMBERS];     /* syndrome order: data, P, Q */
  struct fill_media fm = { 0 };
  int r = -1;

  *out = (struct stripe_scrub) { .bad_data_member = -1 };
  if (count_unreadable (c, sh) > 0) {
    errno = EIO;                /* nothing to check against */
    return -1;
  }
  stripe_head_invalidate (c, sh);          /* check the members, not the cache */
  if (stripe_head_buffers (c, sh) == -1 ||
      stripe_fill_rows_lossy (c, sh, 0, c->pages, repair, &fm) == -1)
    goto out;
  out->unreadable_bytes = fm.unreadable * PAGE;
  out->lost_bytes = fm.lost * PAGE;

  for (int z = 0; z < nd; z++)
    member[z] = map->slot_member[z];
  member[nd] = map->p_member;
  if (g->level == 6)
    member[nd + 1] = map->q_member;

  for (unsigned int p = 0; p < c->pages; p++) {
    uint64_t offset = base + (uint64_t) p * PAGE;
    void *ptrs[GEOMETRY_MAX_MEMBERS];
    struct parity_check_result res;
    struct member_io ios[2];
    int n = 0;

    if (!page_known (c, sh, p))
      continue;
    for (int i = 0; i < g->members; i++)
      ptrs[i] = page_ptr (c, sh, member[i], p);
    if ((g->level == 6
         ? parity_check (g->members, PAGE, ptrs, scratch, &res)
         : parity_check_p (g->members, PAGE, ptrs, scratch, &res)) == 0)
      continue;
    out->mismatches++;
    if (res.bad >= 0 && res.bad < nd)
      out->bad_data_member = member[res.bad];
    if (!repair)
      continue;
    if (res.bad >= 0 && res.bad < nd)
      n = queue_fix (c, ios, n, member[res.bad], ptrs[res.bad], scratch,
                     offset);
    else {
      if (res.p_differs)
        n = queue_fix (c, ios, n, member[nd], ptrs[nd], scratch, offset);
      if (res.q_differs)
        n = queue_fix (c, ios, n, member[nd + 1], ptrs[nd + 1],
                       scratch + PAGE, offset);
    }
    if (members_run_writes (c->ms, ios, n, sh->stripe) == -1)
      goto out;
  }
  r = 0;

 out:
  if (r == -1)
    stripe_head_invalidate (c, sh);
  return r;
}
