/* SPDX-License-Identifier: BSD-3-Clause */
/* What records the rows where the members may differ: md's write-intent
 * bitmap, the record in memory, or nothing; chosen once, here.  See
 * row_record.c.
 */

#ifndef RAID_ROW_RECORD_H
#define RAID_ROW_RECORD_H

#include <stdbool.h>
#include <stdint.h>

struct md_array;
struct members;
struct row_record;

/* The record of an array of `rows` stripe rows whose member table is ms
 * and whose md metadata is md (NULL: raw).  NULL after nbdkit_error.
 */
struct row_record *row_record_open (struct members *ms, struct md_array *md,
                                    uint64_t rows, bool readonly);
/* In the serving process: the in-memory record's clearing thread. */
int row_record_start (struct row_record *rr);
/* Stop and free.  NULL is accepted. */
void row_record_free (struct row_record *rr);

/* Rows [first, end) are about to be written: returns once they are
 * recorded (a token for row_record_write_end), or -1 (errno) if the array
 * cannot serve.  row_record_write_end: the write's member I/O is over.
 */
int row_record_write_begin (struct row_record *rr, uint64_t first,
                            uint64_t end, unsigned *token);
void row_record_write_end (struct row_record *rr, uint64_t first,
                           uint64_t end, unsigned token);

/* Re-add: the rows a member that failed may have missed.  The first row
 * >= row that may have been written since the array was last healthy
 * (UINT64_MAX if none), how many rows from `from` on may have been
 * (every row when nothing records them), and md's event count at the
 * record's last clearing (a disk whose superblock is older may lack
 * writes whose marks are gone; 0 when nothing records them).
 */
uint64_t row_record_next_missed (struct row_record *rr, uint64_t row);
uint64_t row_record_missed_rows (struct row_record *rr, uint64_t from);
uint64_t row_record_missed_floor (struct row_record *rr);

/* Resync after an unclean shutdown (md_array_needs_resync): the first
 * row >= row that needs it (>= the row count when none), how many rows
 * do, and row done.
 */
uint64_t row_record_next_resync (struct row_record *rr, uint64_t row);
uint64_t row_record_resync_rows (struct row_record *rr);
void row_record_resynced (struct row_record *rr, uint64_t row);

/* The in-memory record, for status: rows per mark and rows marked.
 * false when the array keeps none.
 */
bool row_record_memory_stats (struct row_record *rr, uint64_t *per_region,
                              uint64_t *marked);

#endif /* RAID_ROW_RECORD_H */
