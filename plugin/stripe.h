/* SPDX-License-Identifier: BSD-3-Clause */
/* The stripe cache: one stripe row at a time, under the row's lock;
 * stripe_internal.h says which file does what.
 */

#ifndef RAID_STRIPE_H
#define RAID_STRIPE_H

#include <stdbool.h>
#include <stdint.h>

#include "geometry.h"
#include "member.h"
#include "member_table.h"

struct stripe_cache;
struct stripe_head;

/* The member table ms must outlive the cache.  budget is in bytes of
 * buffers.
 */
struct stripe_cache *stripe_cache_create (const struct geometry *g,
                                          struct members *ms,
                                          uint64_t budget);
void stripe_cache_destroy (struct stripe_cache *c);

/* Find or make the head of stripe row `stripe` and lock it.  Never called
 * by a thread that holds another head, but a rebuild thread taking its
 * window of rows in ascending order (lock.h says why that is safe).
 */
struct stripe_head *stripe_cache_get (struct stripe_cache *c, uint64_t stripe);
void stripe_cache_put (struct stripe_cache *c, struct stripe_head *sh);

const struct stripe_map *stripe_head_map (const struct stripe_head *sh);

/* Forget every cached page of the head (after the members changed under
 * it, e.g. a trim).
 */
void stripe_head_invalidate (struct stripe_cache *c, struct stripe_head *sh);

/* Write len bytes at byte `offset` of the head's stripe row data
 * (0 <= offset < offset + len <= stripe_data_bytes), data == NULL meaning
 * zeroes, keeping P (and Q) consistent.  With fua, the touched members are
 * flushed before returning.  Returns 0, or -1 with errno set.
 */
int stripe_write (struct stripe_cache *c, struct stripe_head *sh,
                  uint64_t offset, uint64_t len, const void *data, bool fua);

/* Read len bytes at byte `offset` of the head's row data into buf through
 * the cache, reconstructing what failed members hold.  For reads that
 * cannot go straight to a member.  Returns 0, or -1 with errno set.
 */
int stripe_read (struct stripe_cache *c, struct stripe_head *sh,
                 uint64_t offset, uint64_t len, void *buf);
/* The same, for a range whose read straight from its member failed on
 * the member's medium: what the cache holds of it is not trusted, so
 * that the member is read again, and the pages it cannot give are
 * reconstructed and written back (stripe_recover.c).
 */
int stripe_read_again (struct stripe_cache *c, struct stripe_head *sh,
                       uint64_t offset, uint64_t len, void *buf);

/* Rebuild `member`'s chunks of the rows of heads sh[0..n) (held by the
 * caller) from the other members and write them: all the rows' reads in
 * one batch, then all the writes.  Returns 0, or -1 with errno set (the
 * new member failed, or too few members are readable).
 */
int stripe_rebuild_rows (struct stripe_cache *c, struct stripe_head **sh,
                         int n, int member);

/* Read the whole row from the members (not the cache) and compare P (and
 * Q) with what the data says, page by page.  With repair, rewrite wrong
 * parity, or for RAID-6 the data page the syndrome shows to be corrupted.
 * scratch: STRIPE_SCRUB_SCRATCH bytes (two pages: parity_check's P and Q
 * differences), page aligned, reused from row to row.
 */
struct stripe_scrub {
  unsigned int mismatches;      /* pages whose parity was wrong */
  int bad_data_member;          /* RAID-6: member of a located bad data page, or -1 */
  uint64_t unreadable_bytes;    /* pages the members' media could not give */
  uint64_t lost_bytes;          /* of those, pages not reconstructed: lost */
};
#define STRIPE_SCRUB_SCRATCH (2 * 4096)
int stripe_scrub_row (struct stripe_cache *c, struct stripe_head *sh,
                      bool repair, uint8_t *scratch, struct stripe_scrub *out);

/* Counters for debugging and the benchmark. */
struct stripe_stats {
  uint64_t rmw, rcw, full;     /* writes by method */
  uint64_t reads;               /* pages read for writes */
};
void stripe_cache_stats (struct stripe_cache *c, struct stripe_stats *s);

#endif /* RAID_STRIPE_H */
