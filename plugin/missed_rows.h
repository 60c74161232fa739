/* SPDX-License-Identifier: BSD-3-Clause */
/* The rows a failed member missed, in memory, for arrays without an
 * on-disk write-intent bitmap; see missed_rows.c.
 */

#ifndef RAID_MISSED_ROWS_H
#define RAID_MISSED_ROWS_H

#include <stdint.h>

struct members;
struct missed_rows;

/* A record for an array of `rows` stripe rows whose member table is ms.
 * epoch (may be NULL) gives md's event count, for missed_rows_cleared_at.
 * NULL: no memory.
 */
struct missed_rows *missed_rows_new (struct members *ms, uint64_t rows,
                                     uint64_t (*epoch) (void *),
                                     void *epoch_arg);
/* In the serving process: the thread that clears the record while the
 * array is healthy (missed_rows_sweep every second).
 */
int missed_rows_start (struct missed_rows *mr);
/* Stop the thread, free.  NULL is accepted. */
void missed_rows_free (struct missed_rows *mr);

/* Rows [first, end) are about to be written: returns a token for
 * missed_rows_write_end once the write's member I/O is over.  NULL mr:
 * nothing.
 */
unsigned missed_rows_write_begin (struct missed_rows *mr, uint64_t first,
                                  uint64_t end);
void missed_rows_write_end (struct missed_rows *mr, unsigned token);

/* The first row >= row that may have been written since the array was
 * last healthy (UINT64_MAX if none), and how many such rows there are
 * from `from` on (whole regions, clipped to the array).
 */
uint64_t missed_rows_next (struct missed_rows *mr, uint64_t row);
uint64_t missed_rows_count (struct missed_rows *mr, uint64_t from);
/* Rows per region (what one mark covers). */
uint64_t missed_rows_per_region (struct missed_rows *mr);
/* The epoch (md's event count) at the last clearing, or at creation. */
uint64_t missed_rows_cleared_at (struct missed_rows *mr);

/* One step of the clearing (the thread's; tests call it directly). */
void missed_rows_sweep (struct missed_rows *mr);

#endif /* RAID_MISSED_ROWS_H */
