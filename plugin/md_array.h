/* The array's md v1.2 metadata; see md_array.c. */

#ifndef RAID_MD_ARRAY_H
#define RAID_MD_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct array;
struct array_config;

/* After the members are open: read their superblocks and, if there are
 * any, put the members in role order and take the geometry from them
 * (into cfg; *member_bytes: the member size md uses).  Leaves a->md NULL
 * in raw mode.  With cfg->create, only checks that the members are blank.
 */
int md_array_assemble (struct array *a, struct array_config *cfg,
                       uint64_t *member_bytes);
/* create=true: write fresh superblocks for the geometry in a->g. */
int md_array_create (struct array *a, const struct array_config *cfg);

/* Rows [first, end) are about to be written / have been: marks the array
 * active and the rows' regions in the write-intent bitmap.  -1 (errno):
 * the array cannot serve.
 */
int md_array_write_begin (struct array *a, uint64_t first, uint64_t end);
void md_array_write_end (struct array *a, uint64_t first, uint64_t end);
/* In the serving process: start the bitmap's lazy clearing. */
int md_array_after_fork (struct array *a);
void md_array_flushed (struct array *a);
void md_array_states_changed (struct array *a);
bool md_array_needs_resync (const struct array *a);
void md_array_resynced (struct array *a);
/* The resync's rows: the first at or after row that needs it (>= the
 * row count when none; every row without a bitmap), how many there are,
 * and one done.
 */
uint64_t md_array_resync_next_row (struct array *a, uint64_t row);
uint64_t md_array_resync_rows (struct array *a);
void md_array_row_resynced (struct array *a, uint64_t row);
struct md_bitmap_stats;
bool md_array_bitmap_stats (struct array *a, struct md_bitmap_stats *st);
void md_array_close (struct array *a);
/* Free the md state without writing anything (array_open failed). */
void md_array_discard (struct array *a);

struct member;
/* Whether m, offered as a replacement, carries another array's md
 * superblock or another format (1, with what in msg), is blank or this
 * array's own (0), or cannot be read (-1, errno).
 */
int md_array_foreign (const struct array *a, struct member *m, char *msg,
                      size_t len);

#endif /* RAID_MD_ARRAY_H */
