/* SPDX-License-Identifier: BSD-3-Clause */
/* Extents: which parts of the array are holes, for NBD's base:allocation
 * (nbdinfo --map, and the sparse copies of nbdcopy and qemu-img convert,
 * which skip what is said to be a hole that reads as zeroes).
 *
 * The unit is the row.  A row holds one chunk on every member, at the
 * same member offset (data_offset + row * chunk), data, P and Q alike:
 *
 *   member:      0    1    2    3    4
 *   row r:      D0   D1   D2    P    Q     all five chunks at one offset
 *
 * A row is a hole (HOLE|ZERO) when every member that can be read there
 * has a hole over its whole chunk of it; otherwise it is data.  Only
 * whole rows: a data chunk that is a hole in a row whose parity is not
 * says data, so that what is a hole is a hole on every member, which is
 * also what the rebuild punches (stripe_recover.c, rows_are_holes).
 *
 * Members that cannot be read in a row (failed; being rebuilt, above
 * their recovery row) are not asked: their chunk of the row is what the
 * others reconstruct, and if every member that is read there holds zeroes,
 * so does it (zero data has zero P and zero Q; the equations that give
 * one or two lost chunks from the others then give zero).  That is what a
 * read of the row returns, so the answer stays exact on a degraded array.
 * A row with more members unreadable than the level tolerates cannot be
 * read at all, and says data; with more members failed than that, the
 * request fails (EIO), as a read would.
 *
 * Cost.  The member offsets of rows [r0, r1) are one contiguous range on
 * every member, so each member is asked for its runs of data in that
 * range (member_data_run: lseek SEEK_DATA, then SEEK_HOLE, on a file),
 * one run at a time, and the answers are merged by a sweep over rows:
 *
 *   member 0:  ....####..........       # data, . hole
 *   member 1:  ......######......
 *   member 2:  ..................
 *   rows:      HHHH DDDDDDDD HHHHHH     runs of rows, not row by row
 *
 * Each member is asked again only when the sweep passes the end of the
 * run it last reported, so an empty range costs one question per member
 * and a full one two; a fragmented member costs one per run it holds in
 * the range.  The questions per request are capped (8 per member): past
 * that, the answer stops at the last row it knows, and the client asks
 * again from there.  Nothing is read, nothing is locked: extents are a
 * hint of the moment, and a write that races with the question was not
 * acknowledged before it was asked.  Writes reach every member before
 * they are acknowledged (write-through), so what the members hold is
 * what the array holds.
 */

#include <config.h>

#include <errno.h>
#include <stdlib.h>

#include "extents.h"

struct cursor {
  struct member *m;
  uint64_t end;                 /* member bytes: m is readable below */
  bool asked;
  uint64_t data, stop;          /* its last answer: [data, stop) */
};

struct sweep {
  const struct geometry *g;
  struct cursor c[GEOMETRY_MAX_MEMBERS];
  int n;
  uint64_t budget;              /* questions left */
  uint64_t *queries;
};

/* The row holding member byte x (x >= data_offset), and the first row
 * wholly at or after x (where a run of data that stops at x stops
 * covering rows).
 */
static uint64_t
row_of (const struct geometry *g, uint64_t x)
{
  return (x - g->data_offset) / g->chunk;
}

static uint64_t
row_ceil (const struct geometry *g, uint64_t x)
{
  return (x - g->data_offset + g->chunk - 1) / g->chunk;
}

/* Whether c's member has data before member offset b (the end of the
 * row the sweep is at, with c refreshed at the row's start).
 */
static bool
data_before (const struct cursor *c, uint64_t b)
{
  return c->data < c->end && c->data < b;
}

/* Make every cursor's answer hold at member offset pos: its run of data
 * ends after pos, or it has none after pos.  false if the questions ran
 * out (unless force).
 */
static bool
refresh (struct sweep *s, uint64_t pos, bool force)
{
  for (int i = 0; i < s->n; i++) {
    struct cursor *c = &s->c[i];

    if (pos >= c->end) {
      c->asked = true;
      c->data = c->stop = c->end;
      continue;
    }
    if (c->asked && c->stop > pos)
      continue;
    if (s->budget == 0 && !force)
      return false;
    if (s->budget)
      s->budget--;
    if (s->queries)
      (*s->queries)++;
    member_data_run (c->m, pos, c->end, &c->data, &c->stop);
    c->asked = true;
  }
  return true;
}

/* The first row at which more members are unreadable than tol allows:
 * failed members count everywhere, rebuilding ones from their recovery
 * row on.  UINT64_MAX if none.
 */
static uint64_t
first_unservable (const uint64_t *recovery, int nrebuilding, int failed,
                  int tol)
{
  int need = tol - failed + 1;  /* rebuilding members past their row */
  uint64_t sorted[GEOMETRY_MAX_MEMBERS];

  if (need > nrebuilding)
    return UINT64_MAX;
  for (int i = 0; i < nrebuilding; i++) {
    int j = i;

    while (j > 0 && sorted[j - 1] > recovery[i]) {
      sorted[j] = sorted[j - 1];
      j--;
    }
    sorted[j] = recovery[i];
  }
  return sorted[need - 1];
}

static int
add (struct extent *ext, int n, uint64_t from, uint64_t to, bool zero)
{
  if (n > 0 && ext[n - 1].zero == zero) {
    ext[n - 1].length = to - ext[n - 1].offset;
    return n;
  }
  ext[n] = (struct extent) { .offset = from, .length = to - from,
                             .zero = zero };
  return n + 1;
}

int
extents_map (const struct geometry *g, struct members *ms, uint64_t offset,
             uint64_t count, struct extent *ext, int max, uint64_t *queries)
{
  const uint64_t rowb = g->stripe_data_bytes;
  uint64_t r0 = offset / rowb, rend = (offset + count + rowb - 1) / rowb;
  uint64_t recovery[GEOMETRY_MAX_MEMBERS], rlim, r;
  int failed = 0, nrebuilding = 0, n = 0;
  struct sweep *s = malloc (sizeof *s);

  if (s == NULL)
    return -1;
  if (rend > g->stripes)
    rend = g->stripes;
  s->g = g;
  s->n = 0;
  s->budget = 8 * (uint64_t) g->members;
  s->queries = queries;
  for (int i = 0; i < g->members; i++) {
    struct member *m = members_at (ms, i);
    uint64_t limit = rend;

    switch (member_state (m)) {
    case MEMBER_FAILED:
      failed++;
      continue;
    case MEMBER_REBUILDING:
      recovery[nrebuilding] = member_recovery_stripe (m);
      if (recovery[nrebuilding] < limit)
        limit = recovery[nrebuilding];
      nrebuilding++;
      break;
    case MEMBER_IN_SYNC:
      break;
    }
    if (limit > r0)
      s->c[s->n++] = (struct cursor) {
        .m = m, .end = geometry_member_offset (g, limit),
      };
  }
  if (failed > ms->tolerance) {
    free (s);
    errno = EIO;
    return -1;
  }
  rlim = first_unservable (recovery, nrebuilding, failed, ms->tolerance);
  if (rlim > rend)
    rlim = rend;
  if (rlim < r0)
    rlim = r0;

  for (r = r0; r < rlim && n < max; ) {
    uint64_t a = geometry_member_offset (g, r), e = rlim;
    bool data = false;

    if (!refresh (s, a, n == 0))
      break;
    for (int i = 0; i < s->n; i++)
      if (data_before (&s->c[i], a + g->chunk))
        data = true;
    if (!data) {
      /* Holes up to the row where the first member's next data is. */
      for (int i = 0; i < s->n; i++)
        if (s->c[i].data < s->c[i].end && row_of (g, s->c[i].data) < e)
          e = row_of (g, s->c[i].data);
    }
    else {
      /* Data while some member holds data in the row: each member's run
       * covers rows up to row_ceil (its stop); past them, ask again.
       */
      e = r;
      for (;;) {
        uint64_t pos = geometry_member_offset (g, e), f = e;
        bool any = false;

        if (e > r && !refresh (s, pos, false))
          break;
        for (int i = 0; i < s->n; i++)
          if (data_before (&s->c[i], pos + g->chunk)) {
            any = true;
            if (row_ceil (g, s->c[i].stop) > f)
              f = row_ceil (g, s->c[i].stop);
          }
        if (!any)
          break;
        e = f < rlim ? f : rlim;
        if (e == rlim)
          break;
      }
    }
    n = add (ext, n, r == r0 ? offset : r * rowb, e * rowb, !data);
    r = e;
  }
  if (r == rlim && rlim < rend && n < max)     /* rows no read can serve */
    n = add (ext, n, r == r0 ? offset : r * rowb, rend * rowb, false);
  free (s);
  return n;
}
