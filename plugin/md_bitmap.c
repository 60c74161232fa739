/* SPDX-License-Identifier: BSD-3-Clause */
/* md's write-intent bitmap, kept while the array serves.
 *
 * An md array that was not shut down cleanly must resync its parity: a
 * write may have reached some members of a row and not the others.  The
 * bitmap says where to look.  It has one bit per `chunksize` bytes of each
 * member's data; a bit is on disk before any write to its region goes
 * out, and is cleared lazily once the region has been idle and its writes
 * are durable.  After a crash only the rows under set bits are resynced.
 * The format is md's (md_bitmap_super.c parses its superblock), so mdadm
 * and the Linux kernel use the same bits, both ways.
 *
 * In memory there is an image of the whole on-disk area (superblock and
 * bits) and, per bit, the number of writes in flight and three flags:
 * TOUCHED (written since the last clearing pass), NEEDED (found set after
 * an unclean shutdown: its rows must be resynced before it may be cleared)
 * and CANDIDATE (being cleared).  The image is at every moment safe to
 * write: a bit is set in it before its write starts, and cleared only
 * after a member flush made the writes under it durable.
 *
 * What a write costs.  A write whose bits are already on disk goes ahead
 * after two counter updates under a mutex.  A write that turned a bit on
 * asks for the image to reach the disk: the changed pages on every working
 * member, each write durable by itself (FUA: RWF_DSYNC on files, NBD's FUA
 * flag; a member that cannot gets a flush), in parallel, and without
 * flushing the member's other dirty data as a flush would.  On members in
 * a filesystem that is the difference between writing one page and
 * writing back everything written since the last flush.  Writeouts are
 * serialised, and each takes every page changed so
 * far, so writers that turned bits on meanwhile share the next writeout
 * (group commit).  Each page records the generation of its last change; a
 * writer waits only until the written generation passes its pages'.  With
 * md's default 64 MiB per bit, a random-write workload pays for a bitmap
 * write only the first time it touches each 64 MiB of the members.
 *
 * Clearing (a thread, every daemon_sleep seconds, like md's bitmap
 * daemon): bits that are set, held by no write, not NEEDED, and were not
 * touched during the whole last period become candidates; the members are
 * flushed; candidates still untouched are cleared and the image is written.
 * Nothing is cleared while the array is degraded or rebuilding (md keeps
 * those bits so that a returning member can be resynced from them: a
 * re-add, jobs.c): both clearing passes, the lazy one and the last one at
 * md_bitmap_close, begin by asking members_healthy, and nothing else
 * clears a bit (a resync's rows only lose NEEDED).  At a clean shutdown
 * of a healthy array every bit is cleared.  cleared_at, and the
 * events_cleared written, are md's own count at the last clearing (as
 * md's bitmap_end_write records it), not the bitmap's, which may be one
 * ahead: the floor a re-added member's superblock must reach, as md's
 * super_1_validate asks, and one that survives a restart.
 *
 * Where.  The area lies bitmap_offset sectors from each member's md
 * superblock: after it for v1.1 and v1.2, before it for v1.0, whose
 * superblock is at the member's end, so that members of different sizes
 * (a bigger replacement, say) hold it at different offsets
 * (md_bitmap_area_offset; area[] keeps each member's).
 *
 * Events.  md accepts a bitmap whose event count equals the superblocks'
 * or is one more; fewer means stale, and a full resync.  md_array.c calls
 * md_bitmap_events with the new count before it writes its superblocks.
 *
 * Locks: io_lock (one writeout at a time) is taken before lock (the image
 * and the counters), never after; md_array.c's lock comes before both.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "md_bitmap.h"
#include "member_table.h"
#include "now.h"

#define PAGE 4096
#define MAX_BITS (UINT64_C (1) << 26)

enum { TOUCHED = 1, NEEDED = 2, CANDIDATE = 4 };

struct md_bitmap {
  struct members *ms;           /* the array's member table */
  struct md_bitmap_place place;
  uint64_t rows;                /* stripe rows the members hold */
  uint64_t nbits;
  size_t area_bytes, npages;

  pthread_mutex_t lock;         /* the fields down to dirty */
  struct md_bitmap_super sb;    /* formatted into image[0..256) on writeout */
  uint8_t *image;               /* the area as it must be on disk */
  uint32_t *writes;             /* per bit: writes in flight */
  uint8_t *flags;               /* per bit */
  uint64_t *page_gen;           /* per page: generation of its last change */
  uint64_t gen;                 /* of the latest change */
  _Atomic uint64_t disk_gen;    /* written; also read without the lock */
  uint64_t dirty;               /* bits set in the image */
  /* md's event count (the superblocks', which the bitmap's may be one
   * ahead of) now, and at the last clearing: a member whose superblock is
   * older than cleared_at may have missed writes whose bits are gone.
   */
  uint64_t md_events, cleared_at;

  pthread_mutex_t io_lock;      /* one writeout at a time; the fields below */
  uint8_t *staging;             /* a copy of the pages being written */
  uint8_t *in_writeout;         /* per page */
  struct member_io *ios;
  uint64_t written[GEOMETRY_MAX_MEMBERS]; /* serial of the member holding
                                             the whole area (not its
                                             address: a replaced member's
                                             may be reused) */
  uint64_t area[GEOMETRY_MAX_MEMBERS];  /* where that member has it */

  bool ready;                   /* locks initialised */
  pthread_t daemon;
  bool daemon_running, stop;    /* stop: under lock */
  pthread_cond_t wake;          /* with lock */
};

static bool
bit_is_set (const struct md_bitmap *bm, uint64_t b)
{
  return bm->image[MD_BITMAP_SB_BYTES + b / 8] >> (b % 8) & 1;
}

static size_t
bit_page (uint64_t b)
{
  return (MD_BITMAP_SB_BYTES + b / 8) / PAGE;
}

/* Set or clear bit b in the image; lock held. */
static void
bit_put (struct md_bitmap *bm, uint64_t b, bool on)
{
  uint8_t *p = &bm->image[MD_BITMAP_SB_BYTES + b / 8];
  uint8_t mask = 1 << (b % 8);

  if (!!(*p & mask) == on)
    return;
  *p ^= mask;
  bm->dirty += on ? 1 : -1;
  bm->page_gen[bit_page (b)] = ++bm->gen;
}

/* The bits [*b0, *b1) covering rows [first, end). */
static void
row_bits (const struct md_bitmap *bm, uint64_t first, uint64_t end,
          uint64_t *b0, uint64_t *b1)
{
  uint64_t c = bm->place.chunk, size = bm->sb.chunksize;

  *b0 = first * c / size;
  *b1 = end > first ? (end * c - 1) / size + 1 : *b0;
  if (*b1 > bm->nbits)
    *b1 = bm->nbits;
}

/* Queue writes of the staged pages to member m: the whole area if it does
 * not hold it yet, else each run of pages in this writeout.  A member that
 * came in after the pages were staged (all: every page was) waits for the
 * next writeout.
 */
static size_t
queue_member (struct md_bitmap *bm, int i, struct member *m, size_t n,
              bool all)
{
  bool whole = bm->written[i] != m->serial;
  const char *why;

  /* A member that came in since (a replacement) has its own place. */
  if (whole)
    bm->area[i] = md_bitmap_area_offset (&bm->place, m->size, bm->area_bytes,
                                         &why);
  if (bm->area[i] == UINT64_MAX) {
    member_fail_because (m, why);
    return n;
  }

  if (whole && !all)
    return n;
  for (size_t p = 0; p < bm->npages; ) {
    size_t q = p;

    if (!whole && !bm->in_writeout[p]) {
      p++;
      continue;
    }
    while (q < bm->npages && (whole || bm->in_writeout[q]))
      q++;
    bm->ios[n++] = (struct member_io) {
      .member = m, .op = MEMBER_WRITE, .buf = bm->staging + p * PAGE,
      .len = (q - p) * PAGE, .offset = bm->area[i] + p * PAGE,
      .fua = m->can_fua,
    };
    p = q;
  }
  return n;
}

/* Snapshot the changed pages (all of them if some member lacks the area)
 * into staging; lock held.  Returns the generation they hold.
 */
static uint64_t
stage (struct md_bitmap *bm, bool all)
{
  md_bitmap_super_format (&bm->sb, bm->image);
  for (size_t p = 0; p < bm->npages; p++) {
    bm->in_writeout[p] = all || bm->page_gen[p] > bm->disk_gen;
    if (bm->in_writeout[p])
      memcpy (bm->staging + p * PAGE, bm->image + p * PAGE, PAGE);
  }
  return bm->gen;
}

/* Make the image up to generation `target` durable on every working
 * member.  Returns 0, or -1 if the array cannot serve.
 */
static int
writeout (struct md_bitmap *bm, uint64_t target)
{
  struct members *ms = bm->ms;
  struct member *members[GEOMETRY_MAX_MEMBERS];
  bool all = false;
  uint64_t g;
  size_t n = 0;
  int r;

  pthread_mutex_lock (&bm->io_lock);
  for (int i = 0; i < ms->n; i++) {
    members[i] = members_at (ms, i);
    all |= !member_failed (members[i]) &&
      bm->written[i] != members[i]->serial;
  }
  pthread_mutex_lock (&bm->lock);
  if (bm->disk_gen >= target && !all) {
    pthread_mutex_unlock (&bm->lock);
    pthread_mutex_unlock (&bm->io_lock);
    return 0;
  }
  g = stage (bm, all);
  pthread_mutex_unlock (&bm->lock);

  for (int i = 0; i < ms->n; i++)
    if (!member_failed (members[i]))
      n = queue_member (bm, i, members[i], n, all);
  r = members_run (ms, bm->ios, n, MEMBERS_WHOLE_ARRAY);
  if (r == 0)
    r = members_flush (ms, false);
  for (int i = 0; i < ms->n; i++)
    if (!member_failed (members[i]) &&
        (all || bm->written[i] == members[i]->serial))
      bm->written[i] = members[i]->serial;

  pthread_mutex_lock (&bm->lock);
  if (g > bm->disk_gen)
    atomic_store_explicit (&bm->disk_gen, g, memory_order_release);
  pthread_mutex_unlock (&bm->lock);
  pthread_mutex_unlock (&bm->io_lock);
  return r;
}

int
md_bitmap_write_spare (struct md_bitmap *bm, struct member *m)
{
  const char *why;
  uint64_t at = md_bitmap_area_offset (&bm->place, m->size, bm->area_bytes,
                                       &why);
  struct member_io io = {
    .member = m, .op = MEMBER_WRITE, .len = bm->npages * PAGE, .offset = at,
    .fua = m->can_fua,
  };

  if (at == UINT64_MAX) {
    nbdkit_error ("raid: spare %s: %s", m->name, why);
    errno = ENOSPC;
    return -1;
  }
  if ((io.buf = aligned_alloc (PAGE, io.len)) == NULL)
    return -1;
  pthread_mutex_lock (&bm->lock);
  md_bitmap_super_format (&bm->sb, bm->image);
  memcpy (io.buf, bm->image, io.len);
  pthread_mutex_unlock (&bm->lock);
  member_io_run (&io, 1);
  free (io.buf);
  if (io.err) {
    errno = io.err;
    return -1;
  }
  return 0;
}

uint64_t
md_bitmap_area_offset (const struct md_bitmap_place *place,
                       uint64_t member_bytes, uint64_t area_bytes,
                       const char **why)
{
  uint64_t sb = md_super_location (place->minor, member_bytes);
  uint64_t data_end = place->data_offset + place->size;
  int64_t area;

  if (sb == UINT64_MAX) {
    *why = "the member is too small for its md superblock";
    return UINT64_MAX;
  }
  area = (int64_t) sb + (int64_t) place->bitmap_offset * 512;
  if (area < 0 || area % PAGE) {
    *why = "bitmap placement not supported (it must start 4K-aligned "
      "between the superblock and the data)";
    return UINT64_MAX;
  }
  /* After the superblock and before the data (v1.1, v1.2), or after the
   * data and before the superblock (v1.0).
   */
  if (place->minor != 0 && (uint64_t) area < sb + MD_SB_BYTES) {
    *why = "bitmap placement not supported (it must start 4K-aligned "
      "between the superblock and the data)";
    return UINT64_MAX;
  }
  if (place->minor != 0 && (uint64_t) area + area_bytes > place->data_offset) {
    *why = "the bitmap would overlap the data (too many bits for the room "
      "before data_offset)";
    return UINT64_MAX;
  }
  if (place->minor == 0 && (uint64_t) area < data_end) {
    *why = "the bitmap would overlap the data (the member is too small for "
      "the data, the bitmap and the superblock at its end)";
    return UINT64_MAX;
  }
  if (place->minor == 0 && (uint64_t) area + area_bytes > sb) {
    *why = "the bitmap would overlap the superblock (too many bits for the "
      "room before it)";
    return UINT64_MAX;
  }
  return area;
}

static struct md_bitmap *
bitmap_alloc (struct members *ms, const struct md_bitmap_place *place,
              uint64_t chunksize, const char **why)
{
  struct md_bitmap *bm;
  uint64_t nbits = md_bitmap_bits (place->size, chunksize);
  uint64_t area = md_bitmap_area_bytes (nbits);
  uint64_t at[GEOMETRY_MAX_MEMBERS];

  if (nbits > MAX_BITS) {
    *why = "bitmap of more than 2^26 bits (its chunk is too small)";
    return NULL;
  }
  /* Every member present must have room for it; a missing one has none
   * to check, and a replacement is checked when it comes in.
   */
  for (int i = 0; i < ms->n; i++) {
    struct member *m = members_at (ms, i);

    at[i] = UINT64_MAX;
    if (m->size == UINT64_MAX)  /* member_missing */
      continue;
    at[i] = md_bitmap_area_offset (place, m->size, area, why);
    if (at[i] == UINT64_MAX)
      return NULL;
  }
  bm = calloc (1, sizeof *bm);
  if (bm == NULL) {
    *why = "out of memory";
    return NULL;
  }
  bm->ms = ms;
  bm->place = *place;
  memcpy (bm->area, at, sizeof at);
  bm->rows = place->size / place->chunk;
  bm->nbits = nbits;
  bm->area_bytes = area;
  bm->npages = area / PAGE;
  bm->image = aligned_alloc (PAGE, area);
  bm->staging = aligned_alloc (PAGE, area);
  bm->writes = calloc (nbits, sizeof *bm->writes);
  bm->flags = calloc (nbits, 1);
  bm->page_gen = calloc (bm->npages, sizeof *bm->page_gen);
  bm->in_writeout = calloc (bm->npages, 1);
  bm->ios = calloc ((size_t) ms->n * (bm->npages + 1), sizeof *bm->ios);
  if (!bm->image || !bm->staging || !bm->writes || !bm->flags ||
      !bm->page_gen || !bm->in_writeout || !bm->ios) {
    *why = "out of memory";
    md_bitmap_close (bm);
    return NULL;
  }
  memset (bm->image, 0, area);
  pthread_mutex_init (&bm->lock, NULL);
  pthread_mutex_init (&bm->io_lock, NULL);
  now_cond_init (&bm->wake);
  bm->ready = true;
  return bm;
}

/* Read [off, off + len) of the area from the first in-sync member that
 * can be read.
 */
static int
read_area (struct members *ms, const struct md_bitmap_place *place,
           uint64_t off, uint8_t *buf, size_t len)
{
  for (int i = 0; i < ms->n; i++) {
    struct member_io io = {
      .member = members_at (ms, i), .op = MEMBER_READ, .buf = buf,
      .len = len,
    };
    const char *why;

    if (member_state (io.member) != MEMBER_IN_SYNC)
      continue;
    io.offset = md_bitmap_area_offset (place, io.member->size, off + len,
                                       &why);
    if (io.offset == UINT64_MAX)
      continue;
    io.offset += off;
    if (member_io_run (&io, 1) == 0)
      return i;
    members_io_failed (&io, 1);
  }
  return -1;
}

struct md_bitmap *
md_bitmap_load (struct members *ms, const struct md_bitmap_place *place,
                const struct md_super *ref, bool dirty, const char **why,
                const char **from_name)
{
  struct md_bitmap_super bs;
  struct md_bitmap *bm;
  uint8_t *page = aligned_alloc (PAGE, PAGE);
  bool stale;
  int from;

  if (page == NULL) {
    *why = "out of memory";
    return NULL;
  }
  *from_name = NULL;
  from = read_area (ms, place, 0, page, PAGE);
  if (from == -1) {
    *why = "no member's bitmap could be read";
    free (page);
    return NULL;
  }
  *from_name = members_at (ms, from)->name;
  if (md_bitmap_super_parse (page, &bs, why) == -1) {
    free (page);
    return NULL;
  }
  free (page);
  if (memcmp (bs.uuid, ref->set_uuid, 16)) {
    *why = "the bitmap's UUID is not the array's";
    return NULL;
  }
  bm = bitmap_alloc (ms, place, bs.chunksize, why);
  if (bm == NULL)
    return NULL;
  if (read_area (ms, place, 0, bm->image, bm->area_bytes) == -1) {
    *why = "no member's bitmap could be read";
    md_bitmap_close (bm);
    return NULL;
  }

  /* events_cleared is md's count at the clearing (an older plugin wrote
   * the bitmap's, at most one ahead, which only refuses more re-adds);
   * never past md's count now, as md's own bitmap_update_sb keeps it.
   */
  bm->md_events = ref->events;
  bm->cleared_at = bs.events_cleared > ref->events ? ref->events
    : bs.events_cleared;
  stale = bs.events < ref->events || (bs.state & MD_BITMAP_STALE);
  bs.state &= ~MD_BITMAP_STALE;
  bs.sync_size = place->size / 512;
  bm->sb = bs;
  for (uint64_t b = 0; b < bm->nbits && stale; b++)
    bit_put (bm, b, true);
  bm->dirty = 0;
  for (uint64_t b = 0; b < bm->nbits; b++)
    if (bit_is_set (bm, b)) {
      bm->dirty++;
      if (dirty)
        bm->flags[b] |= NEEDED;
    }
  if (stale)
    nbdkit_debug ("raid: bitmap: stale (events %" PRIu64 " < %" PRIu64
                  "): every region needs a resync", bs.events, ref->events);
  for (int i = 0; i < ms->n; i++)
    if (member_state (members_at (ms, i)) == MEMBER_IN_SYNC)
      bm->written[i] = members_at (ms, i)->serial;
  return bm;
}

struct md_bitmap *
md_bitmap_new (struct members *ms, const struct md_bitmap_place *place,
               const uint8_t uuid[16], uint64_t chunksize,
               uint32_t daemon_sleep, const char **why)
{
  struct md_bitmap *bm = bitmap_alloc (ms, place, chunksize, why);

  if (bm == NULL)
    return NULL;
  bm->sb.version = MD_BITMAP_VERSION;
  memcpy (bm->sb.uuid, uuid, 16);
  bm->sb.sync_size = place->size / 512;
  bm->sb.chunksize = chunksize;
  bm->sb.daemon_sleep = daemon_sleep;
  for (uint64_t b = 0; b < bm->nbits; b++) {
    bit_put (bm, b, true);
    bm->flags[b] |= NEEDED;
  }
  return bm;
}

int
md_bitmap_events (struct md_bitmap *bm, uint64_t events)
{
  uint64_t target;

  pthread_mutex_lock (&bm->lock);
  bm->md_events = events;
  if (events <= bm->sb.events) {
    /* The count went back down (md_array.c's next_events): the bitmap,
     * one ahead, stays as it is.  Members without it still get it.  If
     * the bits were cleared at the count it went down from, the members
     * now say the count below: md lowers events_cleared with it
     * (bitmap_update_sb: "rocking back"), or a member that fails now
     * could never be re-added, its superblock older than the clearing.
     */
    target = 0;
    if (events < bm->cleared_at) {
      bm->sb.events_cleared = bm->cleared_at = events;
      bm->page_gen[0] = target = ++bm->gen;
    }
    pthread_mutex_unlock (&bm->lock);
    return writeout (bm, target);
  }
  bm->sb.events = events;
  bm->page_gen[0] = target = ++bm->gen;
  pthread_mutex_unlock (&bm->lock);
  return writeout (bm, target);
}

int
md_bitmap_write_begin (struct md_bitmap *bm, uint64_t first, uint64_t end)
{
  uint64_t b0, b1, need = 0;

  row_bits (bm, first, end, &b0, &b1);
  if (b0 >= b1)
    return 0;
  pthread_mutex_lock (&bm->lock);
  for (uint64_t b = b0; b < b1; b++) {
    bm->writes[b]++;
    bm->flags[b] |= TOUCHED;
    bit_put (bm, b, true);
  }
  for (size_t p = bit_page (b0); p <= bit_page (b1 - 1); p++)
    if (bm->page_gen[p] > need)
      need = bm->page_gen[p];
  pthread_mutex_unlock (&bm->lock);

  if (need > atomic_load_explicit (&bm->disk_gen, memory_order_acquire) &&
      writeout (bm, need) == -1) {
    md_bitmap_write_end (bm, first, end);
    return -1;
  }
  return 0;
}

void
md_bitmap_write_end (struct md_bitmap *bm, uint64_t first, uint64_t end)
{
  uint64_t b0, b1;

  row_bits (bm, first, end, &b0, &b1);
  pthread_mutex_lock (&bm->lock);
  for (uint64_t b = b0; b < b1; b++)
    bm->writes[b]--;
  pthread_mutex_unlock (&bm->lock);
}

/* Whether bit b may be cleared now; lock held.  `idle`: untouched for a
 * whole period required (not at shutdown, when every write has ended).
 */
static bool
clearable (const struct md_bitmap *bm, uint64_t b, bool idle)
{
  return bit_is_set (bm, b) && bm->writes[b] == 0 &&
    !(bm->flags[b] & NEEDED) && !(idle && (bm->flags[b] & TOUCHED));
}

/* Mark the candidates (and age the touched bits); lock held. */
static uint64_t
pick_candidates (struct md_bitmap *bm, bool idle)
{
  uint64_t n = 0;

  for (uint64_t b = 0; b < bm->nbits && bm->dirty; b++) {
    if (clearable (bm, b, idle)) {
      bm->flags[b] |= CANDIDATE;
      n++;
    }
    bm->flags[b] &= ~TOUCHED;
  }
  return n;
}

/* One pass of the lazy clearing (idle) or the final one (!idle). */
static void
clearing_pass (struct md_bitmap *bm, bool idle)
{
  uint64_t n, cleared = 0, target;
  int flushed;

  if (!members_healthy (bm->ms))
    return;
  pthread_mutex_lock (&bm->lock);
  n = pick_candidates (bm, idle);
  pthread_mutex_unlock (&bm->lock);
  if (n == 0)
    return;

  /* The writes under the candidates are durable after this, so their
   * bits may go.  A write that starts meanwhile sets TOUCHED again.
   */
  flushed = members_flush (bm->ms, true);
  pthread_mutex_lock (&bm->lock);
  /* Asked again under the lock: a member that failed since the first
   * question (a write that timed out on it and ended before the pick,
   * leaving its bit idle) missed that write, and its bit must stay.  A
   * member failing after this is failed by a write still counted in
   * writes[], or one that started after the pick (TOUCHED), whose bits
   * clearable() keeps.
   */
  if (!members_healthy (bm->ms))
    flushed = -1;
  for (uint64_t b = 0; b < bm->nbits; b++)
    if (bm->flags[b] & CANDIDATE) {
      bm->flags[b] &= ~CANDIDATE;
      if (flushed == 0 && clearable (bm, b, idle)) {
        bit_put (bm, b, false);
        cleared++;
      }
    }
  if (cleared) {
    bm->sb.events_cleared = bm->cleared_at = bm->md_events;
    bm->page_gen[0] = ++bm->gen;
  }
  target = bm->gen;
  pthread_mutex_unlock (&bm->lock);
  if (cleared) {
    nbdkit_debug ("raid: bitmap: cleared %" PRIu64 " bits", cleared);
    writeout (bm, target);
  }
}

void
md_bitmap_sweep (struct md_bitmap *bm)
{
  MEMBERS_READ_FOR_CURRENT_SCOPE (bm->ms);      /* reads the table */

  clearing_pass (bm, true);
}

static void *
daemon_thread (void *arg)
{
  struct md_bitmap *bm = arg;

  pthread_mutex_lock (&bm->lock);
  while (!bm->stop) {
    struct timespec t =
      now_deadline (CLOCK_MONOTONIC, bm->sb.daemon_sleep * INT64_C (1000));

    while (!bm->stop &&
           pthread_cond_timedwait (&bm->wake, &bm->lock, &t) != ETIMEDOUT)
      ;
    if (bm->stop)
      break;
    pthread_mutex_unlock (&bm->lock);
    md_bitmap_sweep (bm);
    pthread_mutex_lock (&bm->lock);
  }
  pthread_mutex_unlock (&bm->lock);
  return NULL;
}

int
md_bitmap_start_daemon (struct md_bitmap *bm)
{
  int r = pthread_create (&bm->daemon, NULL, daemon_thread, bm);

  if (r) {
    errno = r;
    nbdkit_error ("raid: bitmap: cannot start a thread: %m");
    return -1;
  }
  bm->daemon_running = true;
  return 0;
}

void
md_bitmap_close (struct md_bitmap *bm)
{
  if (bm == NULL)
    return;
  if (bm->daemon_running) {
    pthread_mutex_lock (&bm->lock);
    bm->stop = true;
    pthread_cond_signal (&bm->wake);
    pthread_mutex_unlock (&bm->lock);
    pthread_join (bm->daemon, NULL);
    clearing_pass (bm, false);
  }
  if (bm->ready) {
    pthread_mutex_destroy (&bm->lock);
    pthread_mutex_destroy (&bm->io_lock);
    pthread_cond_destroy (&bm->wake);
  }
  free (bm->image);
  free (bm->staging);
  free (bm->writes);
  free (bm->flags);
  free (bm->page_gen);
  free (bm->in_writeout);
  free (bm->ios);
  free (bm);
}

/* Whether bit b needs the resync; lock held. */
static bool
bit_needed (const struct md_bitmap *bm, uint64_t b)
{
  return bm->flags[b] & NEEDED;
}

/* The first row >= row in a region whose bit satisfies pred, or
 * UINT64_MAX.
 */
static uint64_t
next_row_where (struct md_bitmap *bm, uint64_t row,
                bool (*pred) (const struct md_bitmap *, uint64_t))
{
  uint64_t c = bm->place.chunk, size = bm->sb.chunksize, r = UINT64_MAX;

  pthread_mutex_lock (&bm->lock);
  for (uint64_t b = row * c / size; b < bm->nbits; b++)
    if (pred (bm, b)) {
      r = b * size / c;
      if (r < row)
        r = row;
      break;
    }
  pthread_mutex_unlock (&bm->lock);
  return r < bm->rows ? r : UINT64_MAX;
}

uint64_t
md_bitmap_next_needed_row (struct md_bitmap *bm, uint64_t row)
{
  return next_row_where (bm, row, bit_needed);
}

uint64_t
md_bitmap_next_dirty_row (struct md_bitmap *bm, uint64_t row)
{
  return next_row_where (bm, row, bit_is_set);
}

uint64_t
md_bitmap_dirty_rows (struct md_bitmap *bm, uint64_t from)
{
  uint64_t n = 0;

  for (uint64_t r = md_bitmap_next_dirty_row (bm, from); r != UINT64_MAX;
       r = md_bitmap_next_dirty_row (bm, r + 1))
    n++;
  return n;
}

uint64_t
md_bitmap_cleared_at (struct md_bitmap *bm)
{
  uint64_t e;

  pthread_mutex_lock (&bm->lock);
  e = bm->cleared_at;
  pthread_mutex_unlock (&bm->lock);
  return e;
}

uint64_t
md_bitmap_needed_regions (struct md_bitmap *bm)
{
  uint64_t n = 0;

  pthread_mutex_lock (&bm->lock);
  for (uint64_t b = 0; b < bm->nbits; b++)
    n += (bm->flags[b] & NEEDED) != 0;
  pthread_mutex_unlock (&bm->lock);
  return n;
}

uint64_t
md_bitmap_needed_rows (struct md_bitmap *bm)
{
  uint64_t n = 0;

  for (uint64_t r = md_bitmap_next_needed_row (bm, 0); r != UINT64_MAX;
       r = md_bitmap_next_needed_row (bm, r + 1))
    n++;
  return n;
}

/* A bit stops being NEEDED when the row holding its last byte is done
 * (the resync goes through a region's rows in order), or with the last row.
 */
void
md_bitmap_row_resynced (struct md_bitmap *bm, uint64_t row)
{
  uint64_t c = bm->place.chunk, size = bm->sb.chunksize;
  uint64_t end = (row + 1) * c;
  bool last = row + 1 >= bm->rows;

  pthread_mutex_lock (&bm->lock);
  for (uint64_t b = row * c / size; b < bm->nbits && (last || b * size < end);
       b++)
    if (last || (b + 1) * size <= end)
      bm->flags[b] &= ~NEEDED;
  pthread_mutex_unlock (&bm->lock);
}

void
md_bitmap_stats (struct md_bitmap *bm, struct md_bitmap_stats *st)
{
  pthread_mutex_lock (&bm->lock);
  st->chunksize = bm->sb.chunksize;
  st->bits = bm->nbits;
  st->dirty = bm->dirty;
  pthread_mutex_unlock (&bm->lock);
}
