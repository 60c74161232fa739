/* SPDX-License-Identifier: BSD-3-Clause */
/* The array: opening and checking members, and splitting client requests.
 *
 * A client request covers a byte range of the array.  The geometry cuts it
 * into stripe rows and, inside a row, into data chunks:
 *
 *   array:  | row 0: D0 D1 D2 | row 1: D0 D1 D2 | row 2 ...
 *   request:        [=========|===]
 *                   piece     piece
 *
 * Reads need no parity while every member works, so their pieces go
 * straight to the data members, all of a request's pieces in one batch
 * (member_io_run) and straight into the client's buffer.  No lock is
 * needed: a write changes only the data it was asked to write and the
 * parity, which reads do not look at.  A piece on a failed member (or one
 * whose read fails, which fails the member) is read through the stripe
 * cache instead, which rebuilds it from the other members under the row's
 * lock, so that no write can change the row half way through.
 *
 * Failures are member_table.c's: a failed request fails its member for good
 * (but a punch or zero-range a member cannot do, which has a fallback),
 * and the array goes on degraded while no more members have failed than
 * the level tolerates (1 for RAID-5, 2 for RAID-6); after that every
 * request fails with EIO.
 *
 * Writes go row by row through the stripe cache (stripe_write.c), which
 * holds the row's lock while it reads what it needs, updates P/Q and
 * writes.  A thread takes one row at a time, so rows never wait on each
 * other.
 *
 * What a failed member misses is recorded around every write and zero
 * (before its member I/O, after it ends) by the row record (row_record.c:
 * md's write-intent bitmap, or the record in memory), which a re-add
 * (jobs.c) asks; md's own bracket (the array marked active, a failure
 * recorded before the reply) is around that.
 *
 * Extents (base:allocation) are extents.c's: whole rows that every
 * member that can be read there holds as a hole, asked of the members
 * without reading anything.
 *
 * Zeroing and trimming whole rows needs no parity arithmetic: zero data has
 * zero P and zero Q, so every member's range for those rows is punched (or
 * zeroed) in place, under the row's lock so that no cached page outlives
 * it.  Where a member cannot do that (EOPNOTSUPP), the row is written with
 * zeroes through the stripe cache instead, which also repairs a row on
 * which only some members managed it.  Parts of rows are zero writes.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "array.h"
#include "md_array.h"
#include "md_badblocks.h"
#include "row_record.h"

#define PAGE 4096
#define READ_BATCH 64

/* The stripe cache reads and writes whole 4 KiB pages from the data
 * offset on, and the metadata is 4 KiB aligned: a member whose alignment
 * does not divide both cannot be served.
 */
const char *
array_cannot_align (const struct array *a, const struct member *m)
{
  static __thread char msg[256];

  if (m->align > MEMBER_MAX_ALIGN)
    snprintf (msg, sizeof msg, "its block size (%" PRIu32 " bytes) is over "
              "%d", m->align, MEMBER_MAX_ALIGN);
  else if (a->g.data_offset % m->align)
    snprintf (msg, sizeof msg, "its block size (%" PRIu32 " bytes) does not "
              "divide the data offset (%" PRIu64 " bytes)", m->align,
              a->g.data_offset);
  else
    return NULL;
  return msg;
}

struct member *
array_open_member (const struct array *a, const char *name)
{
  return members_open_member (name, a->direct);
}

static uint64_t
smallest_member (const struct array *a, int *which)
{
  uint64_t min = UINT64_MAX;

  for (int i = 0; i < a->ms.n; i++) {
    struct member *m = members_at (&a->ms, i);

    if (!member_failed (m) && m->size < min) {
      min = m->size;
      *which = i;
    }
  }
  return min;
}

/* create=true: the data offset, by default and as md's version allows:
 * after the superblock at 4 KiB (v1.2) or at 0 (v1.1), 1 MiB unless
 * given; at 0 for v1.0, whose superblock is at the end.
 */
static int
create_data_offset (struct array_config *cfg)
{
  int minor = cfg->set_metadata_version ? cfg->metadata_minor : 2;

  if (minor == 0) {
    if (cfg->data_offset != 0) {
      nbdkit_error ("create=true: metadata-version=1.0 keeps the data at the "
                    "start of each member: data-offset must be 0");
      return -1;
    }
    return 0;
  }
  if (!cfg->set_data_offset)
    cfg->data_offset = 1024 * 1024;   /* room for the superblock */
  if (cfg->data_offset < (minor == 2 ? 8192 : 4096)) {
    nbdkit_error ("create=true: data-offset must leave room for the "
                  "superblock at %s (at least %s)", minor == 2 ? "4 KiB"
                  : "the start (v1.1)", minor == 2 ? "8K" : "4K");
    return -1;
  }
  return 0;
}

struct array *
array_open (const struct array_config *cfg_in)
{
  struct array *a = calloc (1, sizeof *a);
  struct array_config copy = *cfg_in, *cfg = &copy;
  const char *why;
  int small = 0;
  uint64_t min, md_bytes = 0;

  if (a == NULL) {
    nbdkit_error ("calloc: %m");
    return NULL;
  }
  pthread_mutex_init (&a->bounce_lock, NULL);
  a->direct = cfg->direct;
  a->readonly = cfg->readonly;
  a->can_punch = a->can_zero_range = true;
  members_init (&a->ms);
  if (members_open (&a->ms, cfg->disks, cfg->ndisks, cfg->direct) == -1)
    goto err;
  if (cfg->create && cfg->readonly) {
    nbdkit_error ("create=true writes superblocks: it cannot go with a "
                  "read-only array (nbdkit -r or readonly=true)");
    goto err;
  }
  if (md_array_assemble (&a->ms, cfg, &md_bytes, &a->md) == -1)
    goto err;
  if (cfg->create && create_data_offset (cfg) == -1)
    goto err;

  min = md_bytes ? md_bytes : smallest_member (a, &small);
  if (geometry_init (&a->g, cfg->level, cfg->layout, a->ms.n, cfg->chunk,
                     cfg->data_offset, min, &why) == -1) {
    if (strstr (why, "small"))    /* the errors about member sizes */
      nbdkit_error ("raid: %s (smallest member: %s, %" PRIu64 " bytes)",
                    why, cfg->disks[small], min);
    else
      nbdkit_error ("raid: %s", why);
    goto err;
  }

  members_set_level (&a->ms, a->g.level);
  for (int i = 0; i < a->ms.n; i++) {
    struct member *m = members_at (&a->ms, i);

    if ((why = array_cannot_align (a, m)) != NULL) {
      nbdkit_error ("member %s: %s", m->name, why);
      goto err;
    }
  }

  if (!members_can_serve (&a->ms)) {
    nbdkit_error ("raid: %d members are missing, RAID-%d can serve with at "
                  "most %d", members_failed (&a->ms), a->g.level,
                  a->ms.tolerance);
    goto err;
  }

  a->cache = stripe_cache_create (&a->g, &a->ms, cfg->cache_bytes);
  if (a->cache == NULL) {
    nbdkit_error ("stripe cache: %m");
    goto err;
  }
  if (cfg->create && md_array_create (&a->ms, &a->g, cfg, &a->md) == -1)
    goto err;
  a->rows = row_record_open (&a->ms, a->md, a->g.stripes, a->readonly);
  if (a->rows == NULL)
    goto err;
  return a;

 err:
  array_close (a);
  return NULL;
}

void
array_close (struct array *a)
{
  if (a == NULL)
    return;
  if (a->cache)
    array_flush (a);            /* marks md's superblocks clean */
  row_record_free (a->rows);
  md_array_close (a->md);
  stripe_cache_destroy (a->cache);
  members_destroy (&a->ms);
  while (a->bounce_free) {
    uint8_t *b = a->bounce_free;

    memcpy (&a->bounce_free, b, sizeof b);
    free (b);
  }
  pthread_mutex_destroy (&a->bounce_lock);
  free (a);
}

/* A piece the member cannot take as it is is read through an aligned
 * bounce buffer: an offset or length that is not a multiple of the
 * member's alignment (O_DIRECT: 4K; an NBD export: its minimum block
 * size), or, with O_DIRECT, a buffer not page aligned in memory.  (nbdkit
 * hands the plugin malloc's buffers, 16 bytes past a page, so on O_DIRECT
 * members that is nearly every read.)
 */
static bool
needs_bounce (const struct member *m, const void *buf, uint64_t len,
              uint64_t off)
{
  return len % m->align || off % m->align ||
    (m->direct && (uintptr_t) buf % PAGE);
}

/* Bounce buffers.  A request that needs one takes a buffer of
 * bounce_bytes from the array's pool and gives it back when it ends, so
 * that no read allocates (or faults in fresh memory) once the pool holds
 * one buffer per request that ran at once.  A buffer holds at least one
 * piece with its alignment on both sides, and 1 MiB at least, so that a
 * large read's pieces go to the members in one batch as the others do.
 */
static size_t
bounce_bytes (const struct array *a)
{
  size_t one = a->g.chunk + 2 * MEMBER_MAX_ALIGN;

  if (one < 1024 * 1024)
    one = 1024 * 1024;
  return (one + PAGE - 1) / PAGE * PAGE;
}

/* A bounce buffer, or NULL (ENOMEM: the request fails, no member). */
static uint8_t *
bounce_get (struct array *a)
{
  uint8_t *b;

  pthread_mutex_lock (&a->bounce_lock);
  b = a->bounce_free;
  if (b)
    memcpy (&a->bounce_free, b, sizeof b);
  pthread_mutex_unlock (&a->bounce_lock);
  if (b == NULL && (b = aligned_alloc (PAGE, bounce_bytes (a))) == NULL)
    errno = ENOMEM;
  return b;
}

static void
bounce_put (struct array *a, uint8_t *b)
{
  if (b == NULL)
    return;
  pthread_mutex_lock (&a->bounce_lock);
  memcpy (b, &a->bounce_free, sizeof b);
  a->bounce_free = b;
  pthread_mutex_unlock (&a->bounce_lock);
}

/* The reads of a request's pieces on working members, sent in batches:
 * each piece straight into the client's buffer, or into a stretch of the
 * request's bounce buffer (skip says where its bytes start there) and
 * copied out after.
 */
struct read_batch {
  struct array *a;
  size_t n;
  struct member_io ios[READ_BATCH];
  struct {
    uint64_t where;             /* array offset */
    uint8_t *dst;               /* the client's bytes */
    uint64_t len, skip;         /* bounced: dst's bytes at ios[].buf + skip */
  } piece[READ_BATCH];
  uint8_t *bounce;              /* NULL until a piece needs it */
  size_t used, size;            /* of bounce: by this batch, in all */
};

/* A piece whose member has failed is read through the stripe cache, which
 * reconstructs it from the other members under the row's lock.  again: its
 * read failed on the member's medium, and the cache must read it from the
 * member once more (not serve a copy), to find the pages that need
 * writing back (stripe_read_again).
 */
static int
read_degraded (struct array *a, void *buf, uint64_t len, uint64_t offset,
               bool again)
{
  const uint64_t row = a->g.stripe_data_bytes;
  struct stripe_head *sh = stripe_cache_get (a->cache, offset / row);
  int r;

  if (sh == NULL)
    return -1;
  r = (again ? stripe_read_again : stripe_read) (a->cache, sh, offset % row,
                                                 len, buf);
  stripe_cache_put (a->cache, sh);
  return r;
}

/* A piece that failed is read again degraded, through the stripe cache:
 * a failure of the member (it went away) fails it first; one of its
 * medium leaves it as it is, and the cache reconstructs the page and
 * writes it back (stripe_recover.c).
 */
static int
run_reads (struct read_batch *b)
{
  struct array *a = b->a;
  size_t n = b->n;
  int r = 0;

  b->n = b->used = 0;
  if (n == 0)
    return 0;
  if (member_io_run (b->ios, n) == -1 &&
      members_reads_failed (&a->ms, b->ios, n, MEMBERS_WHOLE_ARRAY) == -1)
    return -1;
  for (size_t i = 0; i < n && r == 0; i++) {
    if (b->ios[i].err)
      r = read_degraded (a, b->piece[i].dst, b->piece[i].len,
                         b->piece[i].where,
                         member_error_is_media (b->ios[i].op, b->ios[i].err));
    else if (b->ios[i].buf != b->piece[i].dst)
      memcpy (b->piece[i].dst, (uint8_t *) b->ios[i].buf + b->piece[i].skip,
              b->piece[i].len);
  }
  return r;
}

/* Add a piece on working member m at member offset moff. */
static int
add_read (struct read_batch *b, struct member *m, uint64_t moff,
          uint8_t *dst, uint64_t len, uint64_t where)
{
  struct member_io io = {
    .member = m, .op = MEMBER_READ, .buf = dst, .len = len, .offset = moff,
  };
  uint64_t skip = 0;

  if (needs_bounce (m, dst, len, moff)) {
    uint64_t lo = moff / m->align * m->align;
    uint64_t hi = (moff + len + m->align - 1) / m->align * m->align;
    size_t size = (hi - lo + PAGE - 1) / PAGE * PAGE;

    if (b->bounce == NULL) {
      if ((b->bounce = bounce_get (b->a)) == NULL)
        return -1;
      b->size = bounce_bytes (b->a);
    }
    if (b->used + size > b->size && run_reads (b) == -1)
      return -1;
    io.buf = b->bounce + b->used;
    io.offset = lo;
    io.len = hi - lo;
    skip = moff - lo;
    b->used += size;
  }
  b->ios[b->n] = io;
  b->piece[b->n].where = where;
  b->piece[b->n].dst = dst;
  b->piece[b->n].len = len;
  b->piece[b->n].skip = skip;
  return ++b->n == READ_BATCH ? run_reads (b) : 0;
}

/* Whether m's bad-block log lists any of [offset, offset + len): such a
 * piece is not read from m but reconstructed (md_badblocks.c).
 */
static bool
listed_bad (struct member *m, uint64_t offset, uint64_t len)
{
  return m->bad_blocks && md_badblocks_count (m->bad_blocks) &&
    md_badblocks_check (m->bad_blocks, offset / 512,
                        (offset % 512 + len + 511) / 512, NULL) != 0;
}

static int
read_pieces (struct array *a, void *buf, uint64_t count, uint64_t offset)
{
  struct read_batch b = { .a = a };
  struct stripe_map map;
  uint64_t mapped = UINT64_MAX;
  uint8_t *p = buf;
  int r = 0;

  while (count > 0 && r == 0) {
    struct geometry_location loc;
    uint64_t len, moff;
    struct member *m;

    geometry_locate (&a->g, offset, &loc);
    len = a->g.chunk - loc.within;
    if (len > count)
      len = count;
    if (loc.stripe != mapped) {
      geometry_map_stripe (&a->g, loc.stripe, &map);
      mapped = loc.stripe;
    }
    m = members_at (&a->ms, map.data_member[loc.chunk]);
    moff = geometry_member_offset (&a->g, loc.stripe) + loc.within;
    if (!member_readable (m, loc.stripe) || listed_bad (m, moff, len))
      r = read_degraded (a, p, len, offset, false);
    else
      r = add_read (&b, m, moff, p, len, offset);
    p += len;
    offset += len;
    count -= len;
  }
  if (r == 0)
    r = run_reads (&b);
  bounce_put (a, b.bounce);
  return r;
}

/* Write (data != NULL) or zero [offset, offset+count) row by row. */
static int
write_rows (struct array *a, const uint8_t *data, uint64_t count,
            uint64_t offset, bool fua)
{
  const uint64_t row = a->g.stripe_data_bytes;

  while (count > 0) {
    uint64_t stripe = offset / row, in = offset % row;
    uint64_t len = row - in < count ? row - in : count;
    struct stripe_head *sh = stripe_cache_get (a->cache, stripe);
    int r;

    if (sh == NULL)
      return -1;
    r = stripe_write (a->cache, sh, in, len, data, fua);
    stripe_cache_put (a->cache, sh);
    if (r == -1) {
      nbdkit_error ("raid: write at array offset %" PRIu64 ": %m", offset);
      return -1;
    }
    if (data)
      data += len;
    offset += len;
    count -= len;
  }
  return 0;
}

/* The rows [*first, *end) a request changes. */
static void
request_rows (const struct array *a, uint64_t count, uint64_t offset,
              uint64_t *first, uint64_t *end)
{
  *first = offset / a->g.stripe_data_bytes;
  *end = count ? (offset + count - 1) / a->g.stripe_data_bytes + 1 : *first;
}

/* Count a client's request of `count` bytes that returned r.  A fast
 * zero refused with ENOTSUP (the client then writes zeroes) is no error.
 */
static int
counted (struct array *a, enum array_count kind, uint64_t count, int r)
{
  io_count_add (&a->io[kind], count, r == -1 && errno != ENOTSUP);
  return r;
}

const struct io_count *
array_counts (const struct array *a)
{
  return a->io;
}

/* Every request works in a reader section (member_table.c) for the rest of
 * its entry point, so that no member it finds in the member table is
 * closed under it, whatever way it returns.
 */
int
array_read (struct array *a, void *buf, uint64_t count, uint64_t offset)
{
  MEMBERS_READ_FOR_CURRENT_SCOPE (&a->ms);

  return counted (a, ARRAY_COUNT_READ, count,
                  read_pieces (a, buf, count, offset));
}

/* Flush every working member.  Only the members: md's clean marking
 * (array_flush) takes md's locks, which are never taken under a stripe
 * head (lock.h), and a flush inside a write could not mark it clean
 * anyway.  Returns 0, or -1 (errno EIO) if the array can no longer serve.
 */
static int
flush_members (struct array *a)
{
  if (members_flush (&a->ms, true) == -1) {
    nbdkit_error ("raid: flush: %m");
    return -1;
  }
  return 0;
}

/* Punch or zero-range one whole row on every working member, with the
 * row's head held.  Returns 0, or -1 with errno (EOPNOTSUPP: some member
 * cannot; *changed says whether any other member did it, leaving the row
 * half done).
 */
static int
discard_row (struct array *a, uint64_t stripe, enum member_op op, bool fua,
             bool *changed)
{
  struct member_io ios[GEOMETRY_MAX_MEMBERS];
  int n = 0;

  for (int m = 0; m < a->ms.n; m++) {
    struct member *mb = members_at (&a->ms, m);

    if (!member_failed (mb))
      ios[n++] = (struct member_io) {
        .member = mb, .op = op, .len = a->g.chunk,
        .offset = geometry_member_offset (&a->g, stripe),
      };
  }
  if (member_io_run (ios, n) == -1) {
    for (int i = 0; i < n; i++)
      *changed |= ios[i].err == 0;
    for (int i = 0; i < n; i++)
      if (ios[i].err == EOPNOTSUPP) {
        errno = EOPNOTSUPP;
        return -1;
      }
  }
  /* Zeroed sectors hold the row's bytes again: out of the members'
   * bad-block logs; one that failed on the medium goes in.
   */
  if (members_writes_done (&a->ms, ios, n, MEMBERS_WHOLE_ARRAY) == -1)
    return -1;
  return fua ? flush_members (a) : 0;
}

/* Zero whole rows [first, end).  may_write: fall back to writing zeroes
 * where the members cannot discard; otherwise fail with ENOTSUP, having
 * changed nothing unless some members discarded and others could not, in
 * which case the row is written with zeroes first to make it consistent.
 */
static int
zero_rows (struct array *a, uint64_t first, uint64_t end, bool may_trim,
           bool may_write, bool fua)
{
  for (uint64_t s = first; s < end; s++) {
    struct stripe_head *sh = stripe_cache_get (a->cache, s);
    bool changed = false;
    int r = -1;

    if (sh == NULL)
      return -1;
    stripe_head_invalidate (a->cache, sh);
    errno = EOPNOTSUPP;
    if (may_trim && a->can_punch &&
        (r = discard_row (a, s, MEMBER_PUNCH, fua, &changed)) == -1 &&
        errno == EOPNOTSUPP)
      a->can_punch = false;
    if (r == -1 && errno == EOPNOTSUPP && a->can_zero_range &&
        (r = discard_row (a, s, MEMBER_ZERO, fua, &changed)) == -1 &&
        errno == EOPNOTSUPP)
      a->can_zero_range = false;
    if (r == -1 && errno == EOPNOTSUPP) {
      if (may_write || changed)
        r = stripe_write (a->cache, sh, 0, a->g.stripe_data_bytes, NULL, fua);
      if (r == 0 && !may_write) {
        r = -1;
        errno = ENOTSUP;
      }
      else if (!may_write && !changed)
        errno = ENOTSUP;
    }
    stripe_cache_put (a->cache, sh);
    if (r == -1) {
      if (errno != ENOTSUP)
        nbdkit_error ("raid: zeroing row %" PRIu64 ": %m", s);
      return -1;
    }
  }
  return 0;
}

static int
zero_or_trim (struct array *a, uint64_t count, uint64_t offset,
              bool may_trim, bool fast, bool fua)
{
  const uint64_t row = a->g.stripe_data_bytes;
  uint64_t first = (offset + row - 1) / row, end = (offset + count) / row;
  uint64_t head, tail;

  if (first >= end) {           /* no whole row */
    if (fast) {
      errno = ENOTSUP;
      return -1;
    }
    return write_rows (a, NULL, count, offset, fua);
  }
  head = first * row - offset;
  tail = offset + count - end * row;
  if (fast && (head || tail ||
               !(a->can_zero_range || (may_trim && a->can_punch)))) {
    errno = ENOTSUP;
    return -1;
  }
  if (head && write_rows (a, NULL, head, offset, fua) == -1)
    return -1;
  if (zero_rows (a, first, end, may_trim, !fast, fua) == -1)
    return -1;
  if (tail && write_rows (a, NULL, tail, end * row, fua) == -1)
    return -1;
  return 0;
}

/* What a request that changes the array's bytes asks for: data to
 * write, or (data NULL) zeroes, which may be trimmed when may_trim says
 * so, and must be cheap when fast does (zero_or_trim).
 */
struct change {
  const void *data;
  bool may_trim, fast;
};

/* A write, zero or trim: inside md's bracket (the array active; a member
 * that failed meanwhile recorded before the reply), its rows marked in the
 * row record.
 */
static int
change_request (struct array *a, const struct change *ch, uint64_t count,
                uint64_t offset, bool fua)
{
  uint64_t first, end;
  unsigned token;
  int r;

  if (a->readonly) {
    errno = EROFS;
    return -1;
  }
  request_rows (a, count, offset, &first, &end);
  md_array_write_begin (a->md);
  r = row_record_write_begin (a->rows, first, end, &token);
  if (r == 0) {
    if (ch->data)
      r = write_rows (a, ch->data, count, offset, fua);
    else
      r = zero_or_trim (a, count, offset, ch->may_trim, ch->fast, fua);
    row_record_write_end (a->rows, first, end, token);
  }
  md_array_write_end (a->md);
  return r;
}

int
array_write (struct array *a, const void *buf, uint64_t count,
             uint64_t offset, bool fua)
{
  MEMBERS_READ_FOR_CURRENT_SCOPE (&a->ms);
  const struct change ch = { .data = buf };

  return counted (a, ARRAY_COUNT_WRITE, count,
                  change_request (a, &ch, count, offset, fua));
}

int
array_zero (struct array *a, uint64_t count, uint64_t offset, bool may_trim,
            bool fast, bool fua)
{
  MEMBERS_READ_FOR_CURRENT_SCOPE (&a->ms);
  const struct change ch = { .may_trim = may_trim, .fast = fast };

  return counted (a, ARRAY_COUNT_ZERO, count,
                  change_request (a, &ch, count, offset, fua));
}

int
array_trim (struct array *a, uint64_t count, uint64_t offset, bool fua)
{
  MEMBERS_READ_FOR_CURRENT_SCOPE (&a->ms);
  const struct change ch = { .may_trim = true };

  return counted (a, ARRAY_COUNT_TRIM, count,
                  change_request (a, &ch, count, offset, fua));
}

/* What starts once nbdkit serves: the row record's clearing (of the
 * record in memory), md's part (create=true's superblocks, the bitmap's
 * clearing); the jobs start after it (jobs_after_fork).
 */
int
array_after_fork (struct array *a)
{
  if (row_record_start (a->rows) == -1)
    return -1;
  return md_array_after_fork (a->md);
}

/* Whether page (row, page p of its chunk) cannot be read from member j:
 * j cannot be read at the row, or its log lists the page.
 */
static bool
page_unreadable (struct array *a, int j, uint64_t row, unsigned int p)
{
  struct member *m = members_at (&a->ms, j);

  return !member_readable (m, row) ||
    listed_bad (m, geometry_member_offset (&a->g, row) + (uint64_t) p * PAGE,
                PAGE);
}

/* Add page p of data chunk i of row to out (merged with the last range,
 * which is below or next to it); n: ranges so far, counted past max.
 */
static size_t
add_lost (struct array *a, uint64_t row, int i, unsigned int p,
          struct array_range *out, size_t n, size_t max, uint64_t *bytes)
{
  uint64_t off = row * a->g.stripe_data_bytes + (uint64_t) i * a->g.chunk
    + (uint64_t) p * PAGE;

  *bytes += PAGE;
  if (n && n <= max && out[n - 1].offset + out[n - 1].len == off) {
    out[n - 1].len += PAGE;
    return n;
  }
  if (n < max)
    out[n] = (struct array_range) { .offset = off, .len = PAGE };
  return n + 1;
}

static int
compare_rows (const void *x, const void *y)
{
  uint64_t a = *(const uint64_t *) x, b = *(const uint64_t *) y;

  return a < b ? -1 : a > b;
}

/* The rows of the data area the members' logs list sectors of, sorted,
 * each once, into a malloc'd array (*n of them); NULL if none or no
 * memory.
 */
static uint64_t *
listed_rows (struct array *a, size_t *n)
{
  struct md_bad_range r[MD_BADBLOCKS_MAX_ENTRIES];
  uint64_t *rows = NULL;
  size_t cap = 0;

  *n = 0;
  for (int j = 0; j < a->ms.n; j++) {
    struct md_badblocks *bb = members_at (&a->ms, j)->bad_blocks;
    size_t k;

    if (bb == NULL || md_badblocks_count (bb) == 0)
      continue;
    k = md_badblocks_list (bb, r, MD_BADBLOCKS_MAX_ENTRIES);
    for (size_t e = 0; e < k && e < MD_BADBLOCKS_MAX_ENTRIES; e++) {
      uint64_t lo = r[e].sector * 512, hi = lo + r[e].sectors * 512;

      if (hi <= a->g.data_offset)
        continue;
      lo = lo < a->g.data_offset ? 0 : lo - a->g.data_offset;
      hi -= a->g.data_offset;
      for (uint64_t row = lo / a->g.chunk;
           row * a->g.chunk < hi && row < a->g.stripes; row++) {
        if (*n == cap) {
          uint64_t *p = realloc (rows, (cap = cap ? 2 * cap : 64)
                                 * sizeof *rows);

          if (p == NULL) {
            free (rows);
            *n = 0;
            return NULL;
          }
          rows = p;
        }
        rows[(*n)++] = row;
      }
    }
  }
  if (*n)
    qsort (rows, *n, sizeof *rows, compare_rows);
  return rows;
}

size_t
array_lost (struct array *a, struct array_range *out, size_t max,
            uint64_t *bytes)
{
  MEMBERS_READ_FOR_CURRENT_SCOPE (&a->ms);
  const uint64_t pages = a->g.chunk / PAGE;
  size_t n = 0, nrows;
  uint64_t *rows = listed_rows (a, &nrows);

  *bytes = 0;
  /* Every page of the rows some log lists, in array order: row by row,
   * then data chunk by data chunk, then page by page, so that ranges
   * come out sorted and merge.
   */
  for (size_t k = 0; k < nrows; k++) {
    uint64_t row = rows[k];
    struct stripe_map map;

    if (k && row == rows[k - 1])
      continue;
    geometry_map_stripe (&a->g, row, &map);
    for (int i = 0; i < a->g.data_disks; i++)
      for (unsigned int p = 0; p < pages; p++) {
        int unreadable = 0;

        if (!page_unreadable (a, map.data_member[i], row, p))
          continue;
        for (int j = 0; j < a->ms.n; j++)
          unreadable += page_unreadable (a, j, row, p);
        if (!members_tolerate (&a->ms, unreadable))
          n = add_lost (a, row, i, p, out, n, max, bytes);
      }
  }
  free (rows);
  return n;
}

static int
flush_request (struct array *a)
{
  if (a->readonly)              /* nothing to make durable */
    return 0;
  if (flush_members (a) == -1)
    return -1;
  md_array_flushed (a->md);
  return 0;
}

int
array_flush (struct array *a)
{
  MEMBERS_READ_FOR_CURRENT_SCOPE (&a->ms);

  return counted (a, ARRAY_COUNT_FLUSH, 0, flush_request (a));
}

/* Not counted: it reads and writes nothing (extents.c asks the members
 * where their data is).
 */
int
array_extents (struct array *a, uint64_t count, uint64_t offset,
               struct extent *ext, int max)
{
  MEMBERS_READ_FOR_CURRENT_SCOPE (&a->ms);

  return extents_map (&a->g, &a->ms, offset, count, ext, max, NULL);
}

bool
array_settle (struct array *a)
{
  MEMBERS_READ_FOR_CURRENT_SCOPE (&a->ms);

  if (a->readonly || a->md == NULL)
    return true;
  if (!md_array_is_clean (a->md) && !md_array_needs_resync (a->md))
    flush_request (a);
  return md_array_is_clean (a->md);
}
