/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading a row through the cache, and reconstructing what members that
 * cannot be read hold: degraded reads (stripe_read), the degraded path of
 * writes (stripe_write.c), and rebuilding a member row by row
 * (stripe_rebuild_rows).
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
 * A read that fails because the member went away fails it (the failure
 * policy, member_table.c) and the range is read again with one member
 * fewer, until the row is beyond the level's tolerance (EIO).  A read
 * that fails on the member's medium (member_error_is_media: a sector it
 * cannot read, while it still answers) costs a page, not the member, as
 * in md: the read is made again page by page to find which pages it
 * cannot give (struct holes), those pages are reconstructed from the
 * others like a lost member's, page run by page run (the members lost at
 * a page are the row's and that page's holes), and then written back to
 * the member and read back (correct_holes), since a disk remaps a sector
 * it could not read once it is written.  A page read back as written is
 * a corrected read error (member.corrected_reads, md's
 * cnt_corrected_read); one that cannot be written or reads back wrong
 * fails the member.  A page that more members lose than the level
 * tolerates cannot be computed: the fill makes the others valid and
 * fails with EIO, so a read of it fails and never returns stale bytes.
 * Reconstructed pages are marked valid: they say what the member would
 * hold, which a write then keeps true.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "md_badblocks.h"
#include "now.h"
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

/* The pages a fill could not read from members that still answer: a
 * read that failed on the medium (member_error_is_media), localised to
 * the page.  members x [first, end) bits, made at the first such error,
 * so that a fill without one allocates nothing.  They are lost for the
 * fill like a failed member's pages, page by page, and once computed
 * from the others they are written back (correct_holes).
 */
struct holes {
  unsigned int first, end;
  size_t words;                 /* per member */
  uint64_t *bits;               /* NULL: none */
  int count;
};

static bool
hole (const struct holes *h, int m, unsigned int p)
{
  size_t bit;

  if (h == NULL || h->bits == NULL || p < h->first || p >= h->end)
    return false;
  bit = p - h->first;
  return h->bits[m * h->words + bit / 64] & (UINT64_C (1) << (bit % 64));
}

/* Pages [first, end) of member m are holes; -1 (ENOMEM) if the first
 * cannot be recorded.
 */
static int
hole_add (const struct stripe_cache *c, struct holes *h, int m,
          unsigned int first, unsigned int end)
{
  if (h->bits == NULL) {
    h->words = (h->end - h->first + 63) / 64;
    h->bits = calloc ((size_t) c->g->members * h->words, sizeof *h->bits);
    if (h->bits == NULL)
      return -1;
  }
  for (unsigned int p = first; p < end; p++) {
    size_t bit = p - h->first;
    uint64_t *w = &h->bits[m * h->words + bit / 64];

    if (!(*w & (UINT64_C (1) << (bit % 64)))) {
      *w |= UINT64_C (1) << (bit % 64);
      h->count++;
    }
  }
  return 0;
}

/* Whether member m's bad-block log lists page p of sh's row: md keeps
 * such sectors out of reads (they are reconstructed) and out of the
 * read-error correction, until a write there succeeds.
 */
static bool
recorded (const struct stripe_cache *c, const struct stripe_head *sh, int m,
          unsigned int p)
{
  struct md_badblocks *bb = members_at (c->ms, m)->bad_blocks;
  uint64_t at = geometry_member_offset (c->g, sh->stripe)
    + (uint64_t) p * PAGE;

  return bb && md_badblocks_count (bb) &&
    md_badblocks_check (bb, at / 512, PAGE / 512, NULL) != 0;
}

/* The pages of [h->first, h->end) that readable members' logs list
 * become holes before anything is read.  -1 (ENOMEM).
 */
static int
recorded_holes (struct stripe_cache *c, struct stripe_head *sh,
                const struct lost_set *l, struct holes *h)
{
  for (int m = 0; m < c->g->members; m++) {
    struct md_badblocks *bb = members_at (c->ms, m)->bad_blocks;

    if (is_lost (l, m) || bb == NULL || md_badblocks_count (bb) == 0)
      continue;
    for (unsigned int p = h->first; p < h->end; p++)
      if (recorded (c, sh, m, p) && hole_add (c, h, m, p, p + 1) == -1)
        return -1;
  }
  return 0;
}

/* The reads that make every readable member's pages [first, end) of sh
 * valid, after view l, into ios (room for members * ((end - first + 1)
 * / 2 + 1): runs of invalid pages); how many.  Member `skip` (or -1) is
 * not read: its pages stay as they are (rebuild_skip says when the
 * reconstruction does without it).
 */
static size_t
fill_reads (struct stripe_cache *c, struct stripe_head *sh,
            const struct lost_set *l, const struct holes *h,
            unsigned int first, unsigned int end, int skip,
            struct member_io *ios)
{
  uint64_t base = geometry_member_offset (c->g, sh->stripe);
  size_t n = 0;

  for (int m = 0; m < c->g->members; m++) {
    struct member *mb = members_at (c->ms, m);

    if (is_lost (l, m) || m == skip)
      continue;
    for (unsigned int p = first; p < end; p++) {
      if (valid (c, sh, m, p) || hole (h, m, p))
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
  return n;
}

static size_t
fill_reads_max (const struct stripe_cache *c, unsigned int first,
                unsigned int end)
{
  return (size_t) c->g->members * ((end - first + 1) / 2 + 1);
}

/* The reads of a fill of up to 14 KiB of requests come from the stack:
 * a degraded read or write of a few pages, a request's hot path on a
 * degraded array, allocates nothing (tests/test_stripe_alloc.c).
 */
#define FILL_STACK_IOS 256

/* Page p of member m is a hole: one more read error on its medium
 * (member_read_error).  Past md's limit (max-read-errors=) the member
 * is failed instead, and the next pass finds it lost.  -1 (ENOMEM) if
 * the hole cannot be recorded.
 */
static int
read_error (const struct stripe_cache *c, struct holes *h, int m,
            unsigned int p)
{
  struct member *mb = members_at (c->ms, m);

  if (member_failed (mb))
    return 0;                   /* lost now: the next pass knows */
  if (member_read_error (mb, now_ms ())) {
    member_fail_because (mb, "too many read errors on its medium "
                         "(max-read-errors)");
    return 0;
  }
  return hole_add (c, h, m, p, p + 1);
}

/* A read of sh's pages that failed on the medium, read again page by
 * page into ios2 (room for its pages): the pages read are made valid,
 * those that fail on the medium again become holes, and a failure of
 * another kind fails the member (which the next pass then finds lost).
 * -1 (ENOMEM) if a hole cannot be recorded.
 */
static int
localise (struct stripe_cache *c, struct stripe_head *sh,
          const struct member_io *io, struct member_io *ios2,
          struct holes *h)
{
  size_t at = (uint8_t *) io->buf - sh->buf;
  int m = at / c->g->chunk;
  unsigned int first = at % c->g->chunk / PAGE, pages = io->len / PAGE;

  if (pages == 1)
    return read_error (c, h, m, first);
  for (unsigned int k = 0; k < pages; k++)
    ios2[k] = (struct member_io) {
      .member = io->member, .op = MEMBER_READ,
      .buf = page_ptr (c, sh, m, first + k), .len = PAGE,
      .offset = io->offset + (uint64_t) k * PAGE,
    };
  member_io_run (ios2, pages);
  mark_read (c, sh, ios2, pages);
  for (unsigned int k = 0; k < pages; k++) {
    if (ios2[k].err == 0)
      continue;
    if (!member_error_is_media (ios2[k].op, ios2[k].err)) {
      members_io_error (ios2[k].member, ios2[k].op, ios2[k].err);
      return 0;
    }
    if (read_error (c, h, m, first + k) == -1)
      return -1;
  }
  return 0;
}

/* The failures of a batch of reads into sh: those on the medium become
 * holes, page by page (localise); the others fail their members (the
 * failure policy).  0, or -1 (errno: ENOMEM, or EIO if the row can no
 * longer be served).
 */
static int
take_read_failures (struct stripe_cache *c, struct stripe_head *sh,
                    const struct member_io *ios, size_t n, struct holes *h)
{
  struct member_io *ios2 = NULL;
  int r = 0;

  for (size_t k = 0; k < n && r == 0; k++) {
    if (ios[k].err == 0 || !member_error_is_media (ios[k].op, ios[k].err))
      continue;
    if (ios2 == NULL &&
        (ios2 = malloc (c->pages * sizeof *ios2)) == NULL)
      return -1;
    r = localise (c, sh, &ios[k], ios2, h);
  }
  free (ios2);
  if (r == -1)
    return -1;
  return members_reads_failed (c->ms, ios, n, sh->stripe);
}

/* The members lost at page p: those lost at the row, and those with a
 * hole there.
 */
static void
lost_at (const struct stripe_cache *c, const struct lost_set *row,
         const struct holes *h, unsigned int p, struct lost_set *out)
{
  *out = *row;
  for (int m = 0; m < c->g->members; m++)
    if (hole (h, m, p) && !is_lost (out, m)) {
      out->bits[m / 64] |= UINT64_C (1) << (m % 64);
      out->n++;
    }
}

/* Reconstruct pages [first, end) run by run of pages that lose the same
 * members.  A run that loses more members than the level tolerates
 * cannot be computed: it stays invalid, and once the others are done
 * the fill fails with EIO, or, with `lost` (a rebuild's, a scrub's),
 * the pages it lost on each member go there and the fill succeeds.
 */
static int
reconstruct_pages (struct stripe_cache *c, struct stripe_head *sh,
                   const struct lost_set *l, const struct holes *h,
                   unsigned int first, unsigned int end, struct holes *lost)
{
  bool gone = false;

  if (h->count == 0) {
    reconstruct (c, sh, l, first, end);
    return 0;
  }
  for (unsigned int p = first, e; p < end; p = e) {
    struct lost_set lp, le;

    lost_at (c, l, h, p, &lp);
    for (e = p + 1; e < end; e++) {
      lost_at (c, l, h, e, &le);
      if (memcmp (&le, &lp, sizeof le) != 0)
        break;
    }
    if (members_tolerate (c->ms, lp.n))
      reconstruct (c, sh, &lp, p, e);
    else if (lost == NULL)
      gone = true;
    else
      for (int m = 0; m < c->g->members; m++)
        if (is_lost (&lp, m) && hole_add (c, lost, m, p, e) == -1)
          return -1;
  }
  if (gone) {
    errno = EIO;
    return -1;
  }
  return 0;
}

/* Write the holes that were computed back to their members, flush
 * them, and read them back: a disk remaps a sector it could not read
 * once it is written, as md's read-error correction relies on
 * (R5_ReadError, then a rewrite and a re-read).  The flush makes the
 * correction durable before it counts: a remote member's server that
 * restarts with writes it acknowledged and no flush covered is failed
 * (member_nbd.c, Writes lost with their connection), and a correction
 * is no reason to lose a member.  A page read back as written is
 * corrected (member.corrected_reads) and its member stays in sync; one
 * that cannot be written or read back, or reads back wrong, fails its
 * member, as any other error does.  Needs memory only here, on this rare
 * path.
 */
static void
correct_holes (struct stripe_cache *c, struct stripe_head *sh,
               const struct holes *h, bool rewrite_listed)
{
  uint64_t base = geometry_member_offset (c->g, sh->stripe);
  /* The writes, then as many flushes (members_flushes_for). */
  struct member_io *ios = malloc ((size_t) h->count * 2 * sizeof *ios);
  uint8_t **page = malloc ((size_t) h->count * sizeof *page);
  uint8_t *back = aligned_alloc (PAGE, (size_t) h->count * PAGE);
  size_t n = 0, used = 0;

  if (ios == NULL || page == NULL || back == NULL)
    goto out;                   /* served, not corrected: read again later */
  for (int m = 0; m < c->g->members; m++)
    for (unsigned int p = h->first; p < h->end; p++)
      if (hole (h, m, p) && valid (c, sh, m, p) &&
          (rewrite_listed || !recorded (c, sh, m, p)))
        ios[n++] = (struct member_io) {
          .member = members_at (c->ms, m), .op = MEMBER_WRITE,
          .buf = page_ptr (c, sh, m, p), .len = PAGE,
          .offset = base + (uint64_t) p * PAGE,
        };
  if (n == 0)
    goto out;
  /* A write that fails on the medium is recorded in the member's log
   * (or fails it): members_writes_done.
   */
  member_io_run (ios, n);
  members_writes_done (c->ms, ios, n, MEMBERS_WHOLE_ARRAY);
  for (size_t k = 0; k < n; k++)
    if (ios[k].err == 0) {
      page[used] = ios[k].buf;
      ios[used++] = ios[k];
    }
  /* A member whose flush fails is failed there (members_run), and its
   * pages are not read back.
   */
  members_run (c->ms, ios + used, members_flushes_for (ios, used, ios + used),
               MEMBERS_WHOLE_ARRAY);
  for (size_t k = 0; k < used; k++) {
    ios[k].op = MEMBER_READ;
    ios[k].buf = back + k * PAGE;
  }
  if (used)
    member_io_run (ios, used);
  for (size_t k = 0; k < used; k++) {
    struct member *m = ios[k].member;

    if (member_failed (m))
      continue;
    if (ios[k].err == 0 && memcmp (back + k * PAGE, page[k], PAGE) == 0) {
      atomic_fetch_add_explicit (&m->corrected_reads, 1,
                                 memory_order_relaxed);
      nbdkit_debug ("raid: member %s: the unreadable page at %" PRIu64
                    " was rewritten from the others", m->name,
                    ios[k].offset);
    }
    else if (ios[k].err && !member_error_is_media (ios[k].op, ios[k].err))
      members_io_error (m, ios[k].op, ios[k].err);
    else if (!members_record_bad (m, ios[k].offset, PAGE))
      member_fail_because (m, ios[k].err ? "a page rewritten after a read "
                           "error could not be read back"
                           : "a page rewritten after a read error read "
                           "back different");
  }
 out:
  free (ios);
  free (page);
  free (back);
}

/* What a fill that may lose pages is given and gives back (NULL: a
 * fill that fails on a page it cannot compute).
 */
struct lossy {
  bool rewrite_listed;          /* rewrite the pages logs list, too */
  struct holes lost;            /* the pages that could not be computed */
  uint64_t unreadable;          /* pages met unreadable or listed */
};

/* Make every member's pages [first, end) valid: read what the working
 * members have, and reconstruct the others' pages, both after one view
 * of which members can be read (struct lost_set).  A read error on the
 * medium makes the page a hole, reconstructed as a lost member's page
 * is and written back (correct_holes); any other read error fails that
 * member and tries again with one member fewer.  Pages that lose more
 * members than the level tolerates stay invalid: -1 with EIO.
 */
static int
fill (struct stripe_cache *c, struct stripe_head *sh, unsigned int first,
      unsigned int end, struct lossy *ls)
{
  struct member_io stack[FILL_STACK_IOS], *ios = stack;
  size_t max = fill_reads_max (c, first, end);
  struct holes h = { .first = first, .end = end };
  struct lost_set l;
  int r = -1;

  if (max > FILL_STACK_IOS && (ios = malloc (max * sizeof *ios)) == NULL)
    return -1;
  lost_set_take (c, sh, &l);
  if (recorded_holes (c, sh, &l, &h) == -1)
    goto out;
  for (;;) {
    size_t n;

    lost_set_take (c, sh, &l);
    if (!members_tolerate (c->ms, l.n)) {
      errno = EIO;
      goto out;
    }
    n = fill_reads (c, sh, &l, &h, first, end, -1, ios);
    if (n == 0 || member_io_run (ios, n) == 0) {
      mark_read (c, sh, ios, n);
      break;
    }
    mark_read (c, sh, ios, n);
    if (take_read_failures (c, sh, ios, n, &h) == -1)
      goto out;
  }
  r = reconstruct_pages (c, sh, &l, &h, first, end, ls ? &ls->lost : NULL);
  if (ls)
    ls->unreadable += h.count;
  if (h.count && !member_read_only)
    correct_holes (c, sh, &h, ls && ls->rewrite_listed);
 out:
  free (h.bits);
  if (ios != stack)
    free (ios);
  return r;
}

int
stripe_fill_rows (struct stripe_cache *c, struct stripe_head *sh,
                  unsigned int first, unsigned int end)
{
  return fill (c, sh, first, end, NULL);
}

/* The pages a fill lost, in the logs of the members that hold them
 * (those not failed: a rebuilt member, and readable ones whose medium
 * failed there).  -1 with EIO if one cannot be recorded.
 */
static int
record_lost (struct stripe_cache *c, struct stripe_head *sh,
             const struct holes *lost, uint64_t *pages)
{
  uint64_t base = geometry_member_offset (c->g, sh->stripe);

  for (int m = 0; m < c->g->members; m++) {
    struct member *mb = members_at (c->ms, m);

    if (member_failed (mb))
      continue;
    for (unsigned int p = lost->first; p < lost->end; p++) {
      if (!hole (lost, m, p) || recorded (c, sh, m, p))
        continue;
      if (!members_record_bad (mb, base + (uint64_t) p * PAGE, PAGE)) {
        errno = EIO;
        return -1;
      }
      ++*pages;
    }
  }
  return 0;
}

int
stripe_fill_rows_lossy (struct stripe_cache *c, struct stripe_head *sh,
                        unsigned int first, unsigned int end,
                        bool rewrite_listed, struct fill_media *out)
{
  struct lossy ls = {
    .rewrite_listed = rewrite_listed, .lost = { .first = first, .end = end },
  };
  int r = fill (c, sh, first, end, &ls);

  out->unreadable += ls.unreadable;
  if (r == 0 && ls.lost.count)
    r = record_lost (c, sh, &ls.lost, &out->lost);
  free (ls.lost.bits);
  return r;
}

int
stripe_fill_plan_partly (struct plan *pl)
{
  for (int k = 0; k < pl->nseg; k++) {
    struct lossy ls = {
      .lost = { .first = pl->seg[k].first, .end = pl->seg[k].end },
    };
    int r = fill (pl->c, pl->sh, ls.lost.first, ls.lost.end, &ls);

    free (ls.lost.bits);
    if (r == -1)
      return -1;
  }
  return 0;
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

/* stripe_read and stripe_read_again: again, the cached data pages of
 * the range are forgotten first, so that the fill reads them from their
 * members.
 */
static int
read_range (struct stripe_cache *c, struct stripe_head *sh, uint64_t offset,
            uint64_t len, void *buf, bool again)
{
  struct plan pl = { .c = c, .sh = sh, .offset = offset, .len = len };

  if (stripe_head_buffers (c, sh) == -1)
    return -1;
  stripe_plan_make (&pl);
  for (int i = pl.ifirst; again && i <= pl.ilast; i++)
    mark_valid (c, sh, sh->map.data_member[i], first_page (&pl, i),
                end_page (&pl, i), false);
  if (stripe_fill_plan (&pl) == -1)
    return -1;
  for (int i = pl.ifirst; i <= pl.ilast; i++)
    memcpy ((uint8_t *) buf + (i * c->g->chunk + pl.ws[i] - offset),
            page_ptr (c, sh, sh->map.data_member[i], 0) + pl.ws[i],
            pl.we[i] - pl.ws[i]);
  return 0;
}

int
stripe_read (struct stripe_cache *c, struct stripe_head *sh,
             uint64_t offset, uint64_t len, void *buf)
{
  return read_range (c, sh, offset, len, buf, false);
}

int
stripe_read_again (struct stripe_cache *c, struct stripe_head *sh,
                   uint64_t offset, uint64_t len, void *buf)
{
  return read_range (c, sh, offset, len, buf, true);
}

/* Whether the rows of heads sh[0..n) (consecutive) are all zero and so
 * is `member`'s part of them: every other member that holds any of them
 * (readable there) has a hole over all of them.  A zero row has zero
 * parity, and what a lost member held is reconstructed as zero.
 */
static bool
rows_are_holes (struct stripe_cache *c, struct stripe_head **sh, int n,
                int member)
{
  uint64_t from = geometry_member_offset (c->g, sh[0]->stripe);
  uint64_t len = (uint64_t) n * c->g->chunk;

  if (sh[n - 1]->stripe - sh[0]->stripe != (uint64_t) n - 1)
    return false;
  for (int m = 0; m < c->g->members; m++) {
    bool holds = false;

    if (m == member)
      continue;
    for (int k = 0; k < n && !holds; k++)
      holds = !unreadable (c, sh[k], m);
    if (holds && !member_hole (members_at (c->ms, m), from, len))
      return false;
  }
  return true;
}

/* Punch `member`'s part of the rows of heads sh[0..n) (rows_are_holes):
 * 0, 1 if the member cannot punch them (EOPNOTSUPP, or an error of its
 * medium: rebuild them instead, whose writes record in its log the pages
 * the medium refuses, as md's recovery records a write error and goes
 * on), -1 (errno) if it failed.
 */
static int
punch_rows (struct stripe_cache *c, struct stripe_head **sh, int n,
            int member)
{
  struct member_io io = {
    .member = members_at (c->ms, member), .op = MEMBER_PUNCH,
    .offset = geometry_member_offset (c->g, sh[0]->stripe),
    .len = (uint64_t) n * c->g->chunk,
  };

  if (member_io_run (&io, 1) == 0) {
    for (int k = 0; k < n; k++)
      stripe_head_invalidate (c, sh[k]);
    return 0;
  }
  if (io.err == EOPNOTSUPP || member_error_is_media (io.op, io.err))
    return 1;
  members_io_failed (&io, 1);
  return -1;
}

/* The member a rebuild of `member` at sh's row need not read, or -1.
 * With that one member lost, RAID-6 needs one parity, not two (see the
 * table above): a lost data chunk is the XOR of the other data and P,
 * and a lost P or Q is recomputed from the data alone.  So Q is not read,
 * or P when Q is the one rebuilt: a fifth less to read on six members.
 * (parity_gen_syndrome, for a lost P or Q, writes both parities into the
 * cache's buffers; the unread one was not valid and stays so.)
 */
static int
rebuild_skip (const struct stripe_cache *c, const struct stripe_head *sh,
              const struct lost_set *l, int member)
{
  if (c->g->level != 6 || l->n != 1 || !is_lost (l, member))
    return -1;
  return member == sh->map.q_member ? sh->map.p_member : sh->map.q_member;
}

/* Whether a request of the batch failed on its member's medium. */
static bool
media_failed (const struct member_io *ios, size_t n)
{
  for (size_t k = 0; k < n; k++)
    if (ios[k].err && member_error_is_media (ios[k].op, ios[k].err))
      return true;
  return false;
}

/* Whether a member other than `member` has bad sectors in its log: a
 * rebuild must not read those, so it goes page by page.
 */
static bool
logs_list_some (const struct stripe_cache *c, int member)
{
  for (int m = 0; m < c->g->members; m++) {
    struct md_badblocks *bb = members_at (c->ms, m)->bad_blocks;

    if (m != member && bb && md_badblocks_count (bb))
      return true;
  }
  return false;
}

/* Write `member`'s rebuilt pages of heads sh[0..n) (the valid ones: a
 * page lost to unreadable sectors is recorded, not written), in runs,
 * into ios (room for a run per two pages of every row).  A write that
 * fails on the medium is recorded in the member's log
 * (members_writes_done); any other failure fails the member, and the
 * rebuild stops (-1).
 */
static int
write_rebuilt (struct stripe_cache *c, struct stripe_head **sh, int n,
               int member, struct member_io *ios)
{
  struct member *mb = members_at (c->ms, member);
  size_t nw = 0;

  for (int k = 0; k < n; k++) {
    uint64_t base = geometry_member_offset (c->g, sh[k]->stripe);

    for (unsigned int p = 0, e; p < c->pages; p = e) {
      for (e = p; e < c->pages && valid (c, sh[k], member, e); e++)
        ;
      if (e > p)
        ios[nw++] = (struct member_io) {
          .member = mb, .op = MEMBER_WRITE,
          .buf = page_ptr (c, sh[k], member, p),
          .len = (uint64_t) (e - p) * PAGE,
          .offset = base + (uint64_t) p * PAGE,
        };
      if (e == p)
        e++;
    }
  }
  member_io_run (ios, nw);
  members_writes_done (c->ms, ios, nw, MEMBERS_WHOLE_ARRAY);
  if (member_failed (mb)) {
    errno = EIO;
    return -1;
  }
  return 0;
}

/* Rebuild member `member` on the rows of heads sh[0..n), consecutive or
 * not, whose locks the caller holds: every row's reads in one batch (the
 * survivors' chunks of all the rows in flight together), each row
 * reconstructed, then the member's chunks written in one batch.  A read
 * error fails that member and the reads left are tried again with one
 * member fewer (pages read stay valid), as stripe_fill_rows does for one
 * row.  A read that failed on the medium (or a log that lists pages of
 * another member) sends every row of the batch through
 * stripe_fill_rows_lossy instead, which reconstructs page by page and
 * writes the unreadable pages back; a page that cannot be reconstructed
 * is recorded in its members' logs (the target's among them) and the
 * rebuild goes on, as md's does.
 */
static int
rebuild_batch (struct stripe_cache *c, struct stripe_head **sh, int n,
               int member)
{
  size_t per = fill_reads_max (c, 0, c->pages), *at;
  struct member_io *ios = malloc ((size_t) n * per * sizeof *ios);
  struct lost_set *l = malloc ((size_t) n * sizeof *l);
  bool media = false;
  int r = -1;

  at = malloc ((size_t) (n + 1) * sizeof *at);
  if (ios == NULL || l == NULL || at == NULL)
    goto out;

  for (int k = 0; k < n; k++)
    if (stripe_head_buffers (c, sh[k]) == -1)
      goto out;
  media = logs_list_some (c, member);
  while (!media) {
    at[0] = 0;
    for (int k = 0; k < n; k++) {
      lost_set_take (c, sh[k], &l[k]);
      if (!members_tolerate (c->ms, l[k].n)) {
        errno = EIO;
        goto out;
      }
      at[k + 1] = at[k] + fill_reads (c, sh[k], &l[k], NULL, 0, c->pages,
                                      rebuild_skip (c, sh[k], &l[k], member),
                                      ios + at[k]);
    }
    if (at[n] == 0 || member_io_run (ios, at[n]) == 0)
      break;
    for (int k = 0; k < n; k++)
      mark_read (c, sh[k], ios + at[k], at[k + 1] - at[k]);
    if (media_failed (ios, at[n])) {
      media = true;
      if (members_reads_failed (c->ms, ios, at[n], sh[0]->stripe) == -1)
        goto out;
      break;
    }
    if (members_batch_failed (c->ms, ios, at[n], sh[0]->stripe) == -1)
      goto out;
  }
  for (int k = 0; k < n; k++) {
    struct fill_media fm = { 0 };

    if (media) {                /* page by page, row by row */
      if (stripe_fill_rows_lossy (c, sh[k], 0, c->pages, false, &fm) == -1)
        goto out;
      if (fm.lost)
        nbdkit_error ("raid: row %" PRIu64 ": %" PRIu64 " pages could not be "
                      "reconstructed (unreadable on more members than the "
                      "level tolerates); recorded as bad blocks",
                      sh[k]->stripe, fm.lost);
      continue;
    }
    mark_read (c, sh[k], ios + at[k], at[k + 1] - at[k]);
    reconstruct (c, sh[k], &l[k], 0, c->pages);
  }
  r = write_rebuilt (c, sh, n, member, ios);
 out:
  free (ios);
  free (l);
  free (at);
  return r;
}

/* Runs of rows that every other member holds as holes (files never
 * written there: a mostly empty array) are punched on the member,
 * nothing read or computed; the other runs are rebuilt in one batch each.
 * The whole window is asked first, so that an empty one costs one
 * lseek(SEEK_DATA) per member.
 */
int
stripe_rebuild_rows (struct stripe_cache *c, struct stripe_head **sh, int n,
                     int member)
{
  bool all = rows_are_holes (c, sh, n, member);

  for (int k = 0, e; k < n; k = e) {
    bool hole = all || rows_are_holes (c, sh + k, 1, member);
    int r = 1;

    for (e = k + 1; !all && e < n; e++)
      if (sh[e]->stripe != sh[e - 1]->stripe + 1 ||
          rows_are_holes (c, sh + e, 1, member) != hole)
        break;
    if (all)
      e = n;
    if (hole)
      r = punch_rows (c, sh + k, e - k, member);
    if (r == 1)
      r = rebuild_batch (c, sh + k, e - k, member);
    if (r == -1)
      return -1;
  }
  return 0;
}
