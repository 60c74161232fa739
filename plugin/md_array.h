/* The array's md v1.2 metadata; see md_array.c. */

#ifndef RAID_MD_ARRAY_H
#define RAID_MD_ARRAY_H

#include <stdbool.h>
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

void md_array_write_begin (struct array *a);
void md_array_write_end (struct array *a);
void md_array_flushed (struct array *a);
void md_array_states_changed (struct array *a);
bool md_array_needs_resync (const struct array *a);
void md_array_resynced (struct array *a);
void md_array_close (struct array *a);

#endif /* RAID_MD_ARRAY_H */
