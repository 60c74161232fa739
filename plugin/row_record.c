/* SPDX-License-Identifier: BSD-3-Clause */
/* The row record: which rows the members may disagree on, and who keeps
 * that.  Two questions need it:
 *
 *   re-add  which rows did a member that failed miss?  A re-add rebuilds
 *           only those (jobs.c), and refuses a disk whose superblock is
 *           older than the record's last clearing (md_array_readd_check).
 *   resync  which rows may an unclean shutdown have left with parity that
 *           does not match the data?  The resync (a repairing scrub,
 *           jobs.c) goes over only those.
 *
 * Three things can answer, and which one does is decided once, at
 * row_record_open, from what the array is; nothing else asks:
 *
 *   kind     the array                 missed (re-add)     resync
 *   bitmap   md, with a write-intent   the bitmap's set    the bitmap's
 *            bitmap (md_bitmap.c)      bits                needed bits
 *   memory   writable, no bitmap (md   the record in       every row from
 *            without one, or raw)      memory (missed_     md's checkpoint
 *                                      rows.c)             on (linear)
 *   none     read-only, no bitmap      every row           linear, as above
 *
 * md owns its bitmap (it is part of md's metadata: its superblock moves
 * with md's event count, md_array.c writes and closes it); this file
 * only marks and asks it.  md also owns the linear resync's checkpoint
 * (md_array_resync_done: resync_offset in the superblocks at a clean
 * stop).  A raw array never resyncs (no superblock says it was not shut
 * down cleanly), so for it the resync's questions are never asked.
 *
 * Around every write and zero (array.c's change_request) the rows are
 * marked before any member I/O and released after it: the bitmap's bits
 * reach every working member first (md_bitmap_write_begin), the record
 * in memory counts the write in flight (missed_rows_write_begin).  md's
 * own bracket (md_array_write_begin/end: the array marked active, a
 * failed member recorded before the reply) is outside this one.
 */

#include <config.h>

#include <stdlib.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "md_array.h"
#include "md_bitmap.h"
#include "missed_rows.h"
#include "row_record.h"

enum row_record_kind { ROWS_BITMAP, ROWS_MEMORY, ROWS_NONE };

struct row_record {
  enum row_record_kind kind;
  uint64_t rows;
  struct md_array *md;          /* NULL: raw */
  struct md_bitmap *bitmap;     /* ROWS_BITMAP: md's */
  struct missed_rows *missed;   /* ROWS_MEMORY */
};

/* missed_rows.c's epoch: md's event count now. */
static uint64_t
md_events (void *md)
{
  return md_array_events (md);
}

struct row_record *
row_record_open (struct members *ms, struct md_array *md, uint64_t rows,
                 bool readonly)
{
  struct row_record *rr = calloc (1, sizeof *rr);

  if (rr == NULL) {
    nbdkit_error ("raid: no memory for the row record: %m");
    return NULL;
  }
  rr->rows = rows;
  rr->md = md;
  if ((rr->bitmap = md_array_bitmap (md)) != NULL)
    rr->kind = ROWS_BITMAP;
  else if (readonly)
    rr->kind = ROWS_NONE;
  else {
    rr->kind = ROWS_MEMORY;
    rr->missed = missed_rows_new (ms, rows, md ? md_events : NULL, md);
    if (rr->missed == NULL) {
      nbdkit_error ("raid: no memory for the record of missed rows: %m");
      free (rr);
      return NULL;
    }
  }
  return rr;
}

int
row_record_start (struct row_record *rr)
{
  return rr->kind == ROWS_MEMORY ? missed_rows_start (rr->missed) : 0;
}

void
row_record_free (struct row_record *rr)
{
  if (rr == NULL)
    return;
  missed_rows_free (rr->missed);
  free (rr);
}

int
row_record_write_begin (struct row_record *rr, uint64_t first, uint64_t end,
                        unsigned *token)
{
  *token = 0;
  switch (rr->kind) {
  case ROWS_BITMAP:
    return md_bitmap_write_begin (rr->bitmap, first, end);
  case ROWS_MEMORY:
    *token = missed_rows_write_begin (rr->missed, first, end);
    return 0;
  case ROWS_NONE:
    break;
  }
  return 0;
}

void
row_record_write_end (struct row_record *rr, uint64_t first, uint64_t end,
                      unsigned token)
{
  switch (rr->kind) {
  case ROWS_BITMAP:
    md_bitmap_write_end (rr->bitmap, first, end);
    break;
  case ROWS_MEMORY:
    missed_rows_write_end (rr->missed, token);
    break;
  case ROWS_NONE:
    break;
  }
}

uint64_t
row_record_next_missed (struct row_record *rr, uint64_t row)
{
  switch (rr->kind) {
  case ROWS_BITMAP:
    return md_bitmap_next_dirty_row (rr->bitmap, row);
  case ROWS_MEMORY:
    return missed_rows_next (rr->missed, row);
  case ROWS_NONE:
    break;
  }
  return row;
}

uint64_t
row_record_missed_rows (struct row_record *rr, uint64_t from)
{
  switch (rr->kind) {
  case ROWS_BITMAP:
    return md_bitmap_dirty_rows (rr->bitmap, from);
  case ROWS_MEMORY:
    return missed_rows_count (rr->missed, from);
  case ROWS_NONE:
    break;
  }
  return from < rr->rows ? rr->rows - from : 0;
}

uint64_t
row_record_missed_floor (struct row_record *rr)
{
  switch (rr->kind) {
  case ROWS_BITMAP:
    return md_bitmap_cleared_at (rr->bitmap);
  case ROWS_MEMORY:
    return missed_rows_cleared_at (rr->missed);
  case ROWS_NONE:
    break;
  }
  return 0;
}

/* Without a bitmap the resync goes over the rows in order, from md's
 * checkpoint (where a clean stop left it) on.
 */
uint64_t
row_record_next_resync (struct row_record *rr, uint64_t row)
{
  uint64_t done;

  if (rr->kind == ROWS_BITMAP)
    return md_bitmap_next_needed_row (rr->bitmap, row);
  done = md_array_resync_done (rr->md);
  return row < done ? done : row;
}

uint64_t
row_record_resync_rows (struct row_record *rr)
{
  if (rr->kind == ROWS_BITMAP)
    return md_bitmap_needed_rows (rr->bitmap);
  return rr->md ? rr->rows - md_array_resync_done (rr->md) : 0;
}

void
row_record_resynced (struct row_record *rr, uint64_t row)
{
  if (rr->kind == ROWS_BITMAP)
    md_bitmap_row_resynced (rr->bitmap, row);
  else
    md_array_resync_reached (rr->md, row);
}

bool
row_record_memory_stats (struct row_record *rr, uint64_t *per_region,
                         uint64_t *marked)
{
  if (rr->kind != ROWS_MEMORY)
    return false;
  *per_region = missed_rows_per_region (rr->missed);
  *marked = missed_rows_count (rr->missed, 0);
  return true;
}
