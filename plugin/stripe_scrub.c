/* Checking a row's parity, and repairing it (stripe_scrub_row): the
 * scrub and the resync (jobs.c).
 *
 * The row is read from the members, never from the cache (its pages are
 * forgotten first), and P (and Q) are computed afresh from the data into
 * scratch memory and compared page by page; each page that differs is one
 * mismatch, as md's mismatch_cnt counts them.  With repair, a wrong page
 * of P (and Q) is rewritten; for RAID-6, when P and Q both differ on a
 * page by amounts that one bad data page explains (Q's difference is g^z
 * times P's on every byte, z the page's syndrome slot), that data page is
 * located and repaired instead, and reported.
 *
 * The slot is found with a log table of GF(2^8) kept here; libparity is to
 * own check and locate (snapraid's raid_check/raid_scan) and this table
 * will go then.
 */

#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "stripe_internal.h"

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
  if (stripe_head_buffers (c, sh) == -1 || stripe_fill_rows (c, sh, 0, c->pages) == -1)
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
            .member = members_at (c->ms, out->bad_data_member),
            .op = MEMBER_WRITE,
            .buf = d, .len = PAGE, .offset = base + (uint64_t) p * PAGE,
          };
        }
      }
    }
    if (repair && slot < 0) {
      memcpy (P, fp, PAGE);
      ios[n++] = (struct member_io) {
        .member = members_at (c->ms, map->p_member), .op = MEMBER_WRITE,
        .buf = P,
        .len = PAGE, .offset = base + (uint64_t) p * PAGE,
      };
      if (Q) {
        memcpy (Q, fq, PAGE);
        ios[n++] = (struct member_io) {
          .member = members_at (c->ms, map->q_member), .op = MEMBER_WRITE,
          .buf = Q,
          .len = PAGE, .offset = base + (uint64_t) p * PAGE,
        };
      }
    }
    if (n && member_io_run (ios, n) == -1 &&
        stripe_io_failed (c, sh, ios, n) == -1)
      goto out;
  }
  r = 0;

 out:
  if (r == -1)
    stripe_head_invalidate (c, sh);
  return r;
}
