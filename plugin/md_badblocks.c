/* SPDX-License-Identifier: BSD-3-Clause */
/* md's bad-block log of one member: its format on disk, where it lies,
 * and the set of bad ranges that reads and writes ask.
 *
 * What md does with it (drivers/md/raid5.c, md.c), as read; the plugin
 * follows it (reads and their correction: stripe_recover.c; recording a
 * range or failing the member: member_table.c; the log's life beside
 * the superblocks: md_bblog.c), and says below where it does not:
 *
 *   - A read error on a member in sync: md reads the block once more on
 *     its own, then computes it from the other members, serves it,
 *     writes it back to the member and reads it again.  If that read
 *     works the sector was remapped by the disk: the member stays in
 *     sync, and its corrected_errors counter grows by the sectors
 *     rewritten (4 KiB, 8 sectors, per block: it counts sectors, not
 *     events), kept in the superblock's cnt_corrected_read.  If it fails
 *     again, or the array has no redundancy left to compute the block
 *     from, the block (4 KiB) goes into the log.  A member whose reads
 *     keep failing with no read succeeding between (more failures than
 *     the stripe cache has stripes) is failed.  md's
 *     max_corr_read_errors (20, halved every hour) is RAID-1/10's limit;
 *     the plugin applies it to RAID-5/6 too (max-read-errors=, member.c):
 *     a limit that does not grow with a cache's size.
 *   - A write error: the block goes into the log and the member stays
 *     in sync (md also marks it as wanting a replacement).  A write
 *     that succeeds over a recorded block removes it from the log.
 *   - Recording fails when the log is full: then md fails the member,
 *     as it did before the log existed.  A member with no log
 *     (bblog_offset 0) has md's table disabled: recording there fails
 *     too since Linux 6.7 (before, it silently recorded nothing), and a
 *     superblock update that finds entries but no log fails the member.
 *   - A recorded block is not read: md treats that member as missing
 *     for those sectors and reconstructs them from the others.  A
 *     stripe that meets a range recorded but not yet on disk
 *     ("unacknowledged") waits until the superblocks and the log are
 *     written (md_update_sb acknowledges them), so that nothing
 *     acknowledged to a client relies on a record a crash would lose.
 *   - A rebuild that cannot read a survivor's block records it on the
 *     survivor and the target, and goes on.  The plugin does the same
 *     for a rebuild, a resync and a scrub (stripe_fill_rows_lossy).
 *
 * The log on disk (md.c super_1_load / super_1_sync; mdadm super1.c
 * examine_badblocks_super1).  The superblock says where (bblog_offset,
 * byte 188: sectors from the superblock, signed, le32), how long
 * (bblog_size, byte 186: sectors, le16; mdadm makes 8) and the unit
 * (bblog_shift, byte 185); feature bit 0x8 (MD_FEATURE_BAD_BLOCKS) says
 * the log holds entries.  The log is little-endian 64-bit entries:
 *
 *     63                                  10 9         0
 *    [ first sector >> shift (54 bits)      | length    ]
 *
 * the length (1 to 512 units, in 10 bits) and the first sector in units
 * of 2^bblog_shift sectors, counted from the member's start (md adds
 * data_offset to a data sector before recording it), sorted, never
 * overlapping.  md writes the entries, then 0xff up to the end of its 4
 * KiB page (super_1_sync), and writes bblog_size sectors of that page:
 * an entry of all ones ends the list, and a full log (512 entries in 8
 * sectors) has none.  md reads at most one page: bblog_size above 8
 * makes it refuse the superblock, offset 0 with the bit set too.  No
 * acknowledged bit is kept on disk: md keeps one per range in memory
 * (bit 63 there), and everything read from disk is acknowledged.  When
 * the set becomes empty md clears the feature bit and leaves the old
 * entries where they are (md reads the log only with the bit set).  md
 * writes the superblock and the log side by side and waits for both, so
 * a crash between them can leave either one new (as read).
 *
 * Refused here, with the reason: an entry of length 0 or longer than 512
 * (md writes neither), entries out of order or overlapping (md's table
 * never is: adjacent entries, yes, where a range is longer than 512 or
 * md kept two apart), a range past the member's end, bblog_size above 8
 * sectors, and any bblog_shift but 0.  mdadm writes shift 0 and nothing
 * in md sets another; md's table since Linux 6.7 rounds to the shift in
 * sectors while super_1_load still scales the entries by it, so a log
 * with another shift would read differently on different kernels: this
 * file works in sectors (shift 0) only.
 *
 * Where mdadm --create puts the log (super1.c write_init_super1), which
 * md_badblocks_create_place gives for create=true to follow:
 *
 *   v1.2  sb at sector 8   bitmap at sb+8   log at sb+8+room (8 sectors)
 *   v1.1  sb at sector 0   bitmap at sb+8   log at sb+8+room
 *   v1.0  sb at the end    log at sb-8      bitmap before the log
 *
 * room: the bitmap's area, or with no bitmap mdadm's default room for
 * one (nothing below 64 KiB of data, 4 KiB, 64 KiB above 8 GiB, 128 KiB
 * above 200 GiB); if the data starts before that, the 8 sectors right
 * before the data (at least 16 sectors after the superblock), else no
 * log.  v1.0 gets one if 8 sectors are left between the data and the
 * superblock; a bitmap then lies at -(its area) - 8.  (create=true today
 * puts a v1.0 bitmap right before the superblock, over that room.)
 * The mdadm-made members in tests/fuzz/corpus/md_super say the same:
 * v1.1 and v1.2 logs at +16, v1.0 at -8, all of 8 sectors.
 *
 * The set.  Ranges [start, end) of member sectors, sorted, disjoint and
 * never touching (a range added next to one is merged into it), so each
 * sector's state has one answer and the encoding is the shortest: each
 * range takes ceil(length / 512) entries, written greedily 512 at a
 * time.  `entries` is that sum, never above `capacity` (what the log
 * holds: 64 per sector of bblog_size, at most 512), and no operation
 * leaves it above: an add or a clear that would is refused whole
 * ("log full"), the set unchanged, where md's table may keep part of an
 * add.  A clear rounds nothing (shift 0); it may split a range in two
 * and need one entry more.  Arithmetic never overflows: a range is
 * checked against the member's size before its end is computed, a
 * question's end saturates, and the member is at most 2^54 sectors (the
 * entry's field).
 *
 * Acknowledged: every change bumps `generation`; a range holds the
 * generation of its newest part not yet on disk (0: all of it is), the
 * most of its parts' when ranges merge, its own in each piece when a
 * clear splits it.  md_badblocks_encode says which generation it wrote;
 * once that log is on disk, md_badblocks_acknowledge(generation) marks
 * every range at or below it, so an addition made meanwhile waits for
 * the next write.  md marks the whole table only when nothing changed
 * since it was encoded: this is the same rule, per range.
 *
 * Locking: `lock` (lock.h: 12) guards everything but the fixed sizes; a
 * leaf, held only for the few hundred ranges' arithmetic, never during
 * I/O: requests ask while updates add.  `n` is also atomic, so that the
 * question asked by every read of a member with no bad blocks (almost
 * all) takes no lock: a range added concurrently is seen or not, as it
 * would be by whichever took the lock first.
 */

#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "le.h"
#include "lock.h"
#include "md_badblocks.h"

#define LEN_BITS 10
#define LEN_MASK ((UINT64_C (1) << LEN_BITS) - 1)
#define END_MARK UINT64_MAX
#define MAX_MEMBER_SECTORS (UINT64_C (1) << (64 - LEN_BITS))

struct range {
  uint64_t start, end;          /* member sectors, end excluded */
  uint64_t unacked;             /* 0, or the generation of its newest part
                                   not on disk */
};

struct md_badblocks {
  uint64_t member_sectors;      /* fixed */
  size_t capacity;              /* fixed: entries the log holds */
  uint16_t log_sectors;         /* fixed */
  pthread_mutex_t lock;         /* lock.h: 12; what follows */
  _Atomic size_t n;             /* ranges; also read without the lock */
  uint64_t entries;             /* log entries the ranges take */
  _Atomic uint64_t generation;  /* bumped by every change (under the
                                   lock); read without it */
  struct range r[MD_BADBLOCKS_MAX_ENTRIES];
};

/* Log entries a range of len sectors takes. */
static uint64_t
entries_of (uint64_t len)
{
  return len / MD_BADBLOCKS_MAX_LEN + (len % MD_BADBLOCKS_MAX_LEN != 0);
}

/* a + b, or UINT64_MAX where that would wrap. */
static uint64_t
add_sat (uint64_t a, uint64_t b)
{
  return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

/* Whether [a, a + alen) and [b, b + blen) share a sector. */
static bool
overlaps (uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
  return alen && blen && a < add_sat (b, blen) && b < add_sat (a, alen);
}

const char *
md_badblocks_place_check (const struct md_badblocks_place *place,
                          const struct md_badblocks_layout *l)
{
  uint64_t at;

  if (md_badblocks_place_none (place))
    return NULL;
  if (place->sectors > MD_BADBLOCKS_MAX_LOG_SECTORS)
    return "md superblock whose bad-block log is longer than the 8 sectors "
      "md reads (bblog_size): bad superblock";
  at = md_badblocks_location (l->super, place);
  if (at == UINT64_MAX)
    return "md superblock whose bblog_offset puts the bad-block log before "
      "the member's start: bad superblock";
  if (at > l->member_sectors || place->sectors > l->member_sectors - at)
    return "md superblock whose bblog_offset puts the bad-block log past "
      "the member's end: bad superblock";
  if (overlaps (at, place->sectors, l->super, 8))
    return "md superblock whose bblog_offset puts the bad-block log over "
      "the superblock: bad superblock";
  if (overlaps (at, place->sectors, l->bitmap, l->bitmap_sectors))
    return "md superblock whose bblog_offset puts the bad-block log over "
      "the write-intent bitmap: bad superblock";
  if (overlaps (at, place->sectors, l->data_offset, l->data_sectors))
    return "md superblock whose bblog_offset puts the bad-block log over "
      "the data: bad superblock";
  return NULL;
}

uint64_t
md_badblocks_location (uint64_t super, const struct md_badblocks_place *place)
{
  if (md_badblocks_place_none (place))
    return UINT64_MAX;
  if (place->offset < 0) {
    uint64_t back = -(int64_t) place->offset;

    return back > super ? UINT64_MAX : super - back;
  }
  return add_sat (super, place->offset);
}

/* mdadm's room for a bitmap added later to members with `size` sectors
 * of data (write_init_super1 leaves it between the superblock and the
 * log when the array has no bitmap): none below 64 KiB, 4 KiB, then 64
 * KiB above 8 GiB and 128 KiB above 200 GiB.
 */
static uint64_t
default_bitmap_room (uint64_t size)
{
  const uint64_t gib = 2 * 1024 * 1024;

  if (size < 128)
    return 0;
  if (size - 128 >= 200 * gib)
    return 256;
  if (size - 8 > 8 * gib)
    return 128;
  return 8;
}

struct md_badblocks_place
md_badblocks_create_place (int minor, uint64_t super, uint64_t data_offset,
                           uint64_t size, uint64_t bitmap_sectors)
{
  struct md_badblocks_place none = { 0, 0 };
  struct md_badblocks_place p = { 0, MD_BADBLOCKS_CREATE_SECTORS };
  const uint64_t log = MD_BADBLOCKS_CREATE_SECTORS;

  if (minor == 0) {
    uint64_t data_end = add_sat (data_offset, size);

    if (super < data_end || super - data_end < log)
      return none;
    p.offset = -(int32_t) log;
    return p;
  }
  if (minor == 1 || minor == 2) {
    uint64_t room = bitmap_sectors ? bitmap_sectors : default_bitmap_room (size);
    uint64_t gap = data_offset > super ? data_offset - super : 0;

    /* After the superblock's 4 KiB and the bitmap's room, ... */
    if (gap >= add_sat (8 + log, room) && 8 + room <= INT32_MAX)
      p.offset = 8 + room;
    /* ... or right before the data. */
    else if (gap >= 8 + log && gap - log <= INT32_MAX)
      p.offset = gap - log;
    else
      return none;
    return p;
  }
  return none;
}

struct md_badblocks *
md_badblocks_new (uint16_t log_sectors, uint64_t member_sectors)
{
  struct md_badblocks *bb;

  if (log_sectors > MD_BADBLOCKS_MAX_LOG_SECTORS ||
      member_sectors > MAX_MEMBER_SECTORS) {
    errno = EINVAL;
    return NULL;
  }
  bb = calloc (1, sizeof *bb);
  if (bb == NULL)
    return NULL;
  bb->member_sectors = member_sectors;
  bb->log_sectors = log_sectors;
  bb->capacity = (size_t) log_sectors * MD_BADBLOCKS_ENTRIES_PER_SECTOR;
  pthread_mutex_init (&bb->lock, NULL);
  return bb;
}

void
md_badblocks_free (struct md_badblocks *bb)
{
  if (bb == NULL)
    return;
  pthread_mutex_destroy (&bb->lock);
  free (bb);
}

/* A reason naming the entry, kept until the thread's next call. */
static const char *
entry_reason (size_t i, const char *what)
{
  static __thread char why[160];

  snprintf (why, sizeof why, "bad-block log entry %zu %s", i, what);
  return why;
}

struct md_badblocks *
md_badblocks_decode (const uint8_t *log, uint16_t log_sectors, uint8_t shift,
                     uint64_t member_sectors, const char **why)
{
  struct md_badblocks *bb;
  size_t i, max = (size_t) log_sectors * MD_BADBLOCKS_ENTRIES_PER_SECTOR;
  uint64_t prev_end = 0;

  *why = NULL;
  if (log_sectors > MD_BADBLOCKS_MAX_LOG_SECTORS)
    *why = "bad-block log longer than the 8 sectors (one 4 KiB page) md "
      "reads: md refuses the superblock";
  else if (shift != 0)
    *why = "bad-block log in blocks of 2^bblog_shift sectors with a shift "
      "other than 0, which md has never written and its kernels read "
      "differently";
  else if (member_sectors > MAX_MEMBER_SECTORS)
    *why = "member too large for md's bad-block log (2^54 sectors)";
  if (*why) {
    errno = EINVAL;
    return NULL;
  }
  if ((bb = md_badblocks_new (log_sectors, member_sectors)) == NULL) {
    *why = "out of memory";
    return NULL;
  }
  for (i = 0; i < max; i++) {
    uint64_t e = get64 (log + 8 * i), start = e >> LEN_BITS, len = e & LEN_MASK;
    size_t n = bb->n;

    if (e == END_MARK)
      break;
    if (len == 0)
      *why = entry_reason (i, "has length 0, which md never writes");
    else if (len > MD_BADBLOCKS_MAX_LEN)
      *why = entry_reason (i, "is longer than the 512 sectors md writes in "
                           "one entry");
    else if (i > 0 && start < prev_end)
      *why = entry_reason (i, "starts before the previous one ends: md "
                           "writes its entries in order, never overlapping");
    else if (start > member_sectors || len > member_sectors - start)
      *why = entry_reason (i, "lies past the member's end");
    if (*why) {
      md_badblocks_free (bb);
      errno = EINVAL;
      return NULL;
    }
    prev_end = start + len;
    if (n > 0 && bb->r[n - 1].end == start)
      bb->r[n - 1].end = prev_end;
    else {
      bb->r[n] = (struct range) { .start = start, .end = prev_end };
      bb->n = n + 1;
    }
  }
  /* Merging adjacent entries never needs more than they took. */
  for (i = 0; i < bb->n; i++)
    bb->entries += entries_of (bb->r[i].end - bb->r[i].start);
  return bb;
}

size_t
md_badblocks_encode (struct md_badblocks *bb, uint8_t *log,
                     uint64_t *generation)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&bb->lock);
  size_t k = 0;

  memset (log, 0xff, (size_t) bb->log_sectors * 512);
  for (size_t i = 0; i < bb->n; i++)
    for (uint64_t s = bb->r[i].start; s < bb->r[i].end; k++) {
      uint64_t len = bb->r[i].end - s;

      if (len > MD_BADBLOCKS_MAX_LEN)
        len = MD_BADBLOCKS_MAX_LEN;
      put64 (log + 8 * k, s << LEN_BITS | len);
      s += len;
    }
  if (generation)
    *generation = bb->generation;
  return k;
}

uint64_t
md_badblocks_generation (struct md_badblocks *bb)
{
  return atomic_load_explicit (&bb->generation, memory_order_acquire);
}

void
md_badblocks_acknowledge (struct md_badblocks *bb, uint64_t generation)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&bb->lock);

  for (size_t i = 0; i < bb->n; i++)
    if (bb->r[i].unacked <= generation)
      bb->r[i].unacked = 0;
}

/* The first range whose end is past `sector` (touching: at or past). */
static size_t
first_ending_after (const struct md_badblocks *bb, uint64_t sector,
                    bool touching)
{
  size_t lo = 0, hi = bb->n;

  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;

    if (bb->r[mid].end > sector || (touching && bb->r[mid].end == sector))
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

/* Put `k` ranges from `with` in place of r[i, j). */
static void
replace (struct md_badblocks *bb, size_t i, size_t j,
         const struct range *with, size_t k)
{
  size_t n = bb->n;

  memmove (&bb->r[i + k], &bb->r[j], (n - j) * sizeof bb->r[0]);
  memcpy (&bb->r[i], with, k * sizeof bb->r[0]);
  bb->n = n - (j - i) + k;
}

int
md_badblocks_add (struct md_badblocks *bb, uint64_t sector, uint64_t sectors,
                  const char **why)
{
  struct range m;
  uint64_t old = 0, entries;
  size_t i, j;

  if (sectors == 0) {
    *why = "an empty range of bad blocks";
    errno = EINVAL;
    return -1;
  }
  if (sector >= bb->member_sectors || sectors > bb->member_sectors - sector) {
    *why = "bad blocks past the member's end";
    errno = EINVAL;
    return -1;
  }
  m = (struct range) { .start = sector, .end = sector + sectors };

  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&bb->lock);
  i = first_ending_after (bb, m.start, true);
  for (j = i; j < bb->n && bb->r[j].start <= m.end; j++)
    old += entries_of (bb->r[j].end - bb->r[j].start);
  /* Already bad: nothing changes, not even its acknowledgement. */
  if (j == i + 1 && bb->r[i].start <= m.start && bb->r[i].end >= m.end)
    return 0;
  if (j > i) {
    if (bb->r[i].start < m.start)
      m.start = bb->r[i].start;
    if (bb->r[j - 1].end > m.end)
      m.end = bb->r[j - 1].end;
  }
  entries = bb->entries - old + entries_of (m.end - m.start);
  if (entries > bb->capacity) {
    *why = bb->capacity ? "the member's bad-block log is full"
      : "the member has no bad-block log";
    errno = ENOSPC;
    return -1;
  }
  m.unacked = ++bb->generation;
  replace (bb, i, j, &m, 1);
  bb->entries = entries;
  return 0;
}

int
md_badblocks_clear (struct md_badblocks *bb, uint64_t sector, uint64_t sectors,
                    const char **why)
{
  struct range keep[2];
  uint64_t end, old = 0, entries;
  size_t i, j, k = 0;

  if (sectors == 0 || sector >= bb->member_sectors)
    return 0;
  end = sector + (sectors < bb->member_sectors - sector
                  ? sectors : bb->member_sectors - sector);

  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&bb->lock);
  i = first_ending_after (bb, sector, false);
  for (j = i; j < bb->n && bb->r[j].start < end; j++)
    old += entries_of (bb->r[j].end - bb->r[j].start);
  if (j == i)
    return 0;
  entries = bb->entries - old;
  if (bb->r[i].start < sector) {
    keep[k] = bb->r[i];
    keep[k].end = sector;
    entries += entries_of (sector - keep[k++].start);
  }
  if (bb->r[j - 1].end > end) {
    keep[k] = bb->r[j - 1];
    keep[k].start = end;
    entries += entries_of (keep[k++].end - end);
  }
  if (entries > bb->capacity) {
    *why = "the member's bad-block log is full: cannot split a bad range";
    errno = ENOSPC;
    return -1;
  }
  bb->generation++;
  replace (bb, i, j, keep, k);
  bb->entries = entries;
  return 0;
}

int
md_badblocks_check (struct md_badblocks *bb, uint64_t sector, uint64_t sectors,
                    struct md_bad_range *first)
{
  uint64_t end = add_sat (sector, sectors);
  int r = 1;
  size_t i;

  if (sectors == 0 || bb->n == 0)
    return 0;

  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&bb->lock);
  i = first_ending_after (bb, sector, false);
  if (i == bb->n || bb->r[i].start >= end)
    return 0;
  if (first)
    *first = (struct md_bad_range) {
      .sector = bb->r[i].start, .sectors = bb->r[i].end - bb->r[i].start,
      .acknowledged = bb->r[i].unacked == 0,
    };
  for (; i < bb->n && bb->r[i].start < end; i++)
    if (bb->r[i].unacked)
      r = -1;
  return r;
}

size_t
md_badblocks_count (struct md_badblocks *bb)
{
  return bb->n;
}

size_t
md_badblocks_entries (struct md_badblocks *bb)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&bb->lock);

  return bb->entries;
}

size_t
md_badblocks_capacity (const struct md_badblocks *bb)
{
  return bb->capacity;
}

size_t
md_badblocks_list (struct md_badblocks *bb, struct md_bad_range *out,
                   size_t max)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&bb->lock);

  for (size_t i = 0; i < bb->n && i < max; i++)
    out[i] = (struct md_bad_range) {
      .sector = bb->r[i].start, .sectors = bb->r[i].end - bb->r[i].start,
      .acknowledged = bb->r[i].unacked == 0,
    };
  return bb->n;
}
