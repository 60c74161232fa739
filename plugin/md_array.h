/* SPDX-License-Identifier: BSD-3-Clause */
/* The array's md metadata (version-1 superblocks): assembly
 * (md_assemble.c), create (md_create.c), serving (md_array.c), a disk
 * offered for a role (md_admit.c); md_array_internal.h says which file
 * does what.
 *
 * md works on the member table (member_table.h) and nothing else of the
 * array: every function takes the struct md_array that assembly or
 * create made, and NULL (raw mode: metadata=none) is accepted by each and
 * does nothing.
 */

#ifndef RAID_MD_ARRAY_H
#define RAID_MD_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "array_config.h"
#include "geometry.h"

struct md_array;
struct md_bitmap;
struct md_bitmap_stats;
struct member;
struct members;

/* After the members are open (ms, in the order the parameters gave):
 * read their superblocks and, if there are any, put the members in role
 * order (members_arrange), take the geometry from them (into cfg;
 * *member_bytes: the member size md uses) and make *mdp.  Leaves *mdp
 * NULL in raw mode, and with cfg->create, where it only checks that the
 * members are blank (and for md v1.0 sets *member_bytes to where the data
 * must end: the room for the bitmap and the superblocks after it).
 */
int md_array_assemble (struct members *ms, struct array_config *cfg,
                       uint64_t *member_bytes, struct md_array **mdp);
/* create=true: fresh superblocks for geometry g, written at
 * md_array_after_fork.  *mdp is set even on error (for md_array_close).
 */
int md_array_create (struct members *ms, const struct geometry *g,
                     const struct array_config *cfg, struct md_array **mdp);

/* A write (or zero, or trim) is about to go out / is over: the first
 * marks the array active if it was clean; the second, before the write
 * is acknowledged, records in the superblocks any member that failed
 * while it ran.  The rows' marks are the row record's (row_record.c),
 * inside this bracket.
 */
void md_array_write_begin (struct md_array *md);
void md_array_write_end (struct md_array *md);
/* In the serving process: write create=true's superblocks, start the
 * bitmap's lazy clearing.
 */
int md_array_after_fork (struct md_array *md);
/* Every member was flushed: clean, if nothing is being written. */
void md_array_flushed (struct md_array *md);
/* Member states changed (failure, replacement, rebuild progress). */
void md_array_states_changed (struct md_array *md);
bool md_array_needs_resync (const struct md_array *md);
/* Whether the superblocks say clean, with the member states of now. */
bool md_array_is_clean (struct md_array *md);
void md_array_resynced (struct md_array *md);
/* The linear resync of an array without a bitmap (row_record.c asks):
 * the rows below md_array_resync_done are resynced (from md's checkpoint
 * at assembly on), and md_array_resync_reached says row is.  0 and
 * nothing for NULL.
 */
uint64_t md_array_resync_done (struct md_array *md);
void md_array_resync_reached (struct md_array *md, uint64_t row);
bool md_array_bitmap_stats (struct md_array *md, struct md_bitmap_stats *st);
/* After the array's last flush: md's own shutdown (a resync's
 * checkpoint, the bitmap's last clearing).  Frees md.
 */
void md_array_close (struct md_array *md);

/* Re-add (admission.c).  Whether m, reopened for failed role i, is that
 * role's disk as it was, not older than `floor` (md's event count at the
 * last clearing of what records the rows it missed: row_record.c's
 * row_record_missed_floor) (0; m then has its identity), or not (-1, the
 * reason in msg: a different disk, marks cleared since it left).
 * *whole_from is the row from which nothing can vouch for m at all,
 * because m failed during a full rebuild that had reached it
 * (UINT64_MAX: none).  Writes nothing.
 */
int md_array_readd_check (struct md_array *md, int i, struct member *m,
                          uint64_t floor, uint64_t *whole_from, char *msg,
                          size_t len);
/* m is about to take failed role i (jobs.c, before it is published): its
 * bad-block log, as md gives one (md_bblog.c): a re-added disk's own,
 * read where its superblock says, a replacement an empty one in the
 * array's place; none where the array keeps none.  0, or -1 with why in
 * msg (its log cannot be read, or md could not have written it).
 */
int md_array_give_log (struct md_array *md, int i, struct member *m,
                       bool readd, char *msg, size_t len);
/* Whether role i's member was given at start-up with a stale
 * superblock: it is in its role, failed, and may be re-added.
 */
bool md_array_stale_at_assembly (const struct md_array *md, int i);
/* The member with this serial is about to take role i back: the update
 * that finds it keeps the role's dev_number and device UUID.
 */
void md_array_readd_expect (struct md_array *md, int i, uint64_t serial);
/* The array's write-intent bitmap (NULL: none, or NULL md), which md
 * loads, writes with its superblocks and closes; the row record
 * (row_record.c) marks and asks it.  md's event count now, the lower one
 * while it may go back down to it (an array marked active right after
 * clean: what a member in sync may say).
 */
struct md_bitmap *md_array_bitmap (const struct md_array *md);
/* The members' logical block size in bytes, md 6.19's superblock field
 * (md_super.c): 0 when not set, or NULL md.
 */
uint32_t md_array_logical_block_size (const struct md_array *md);
uint64_t md_array_events (struct md_array *md);

/* Why m, offered for a role, cannot hold the array's data and, for md
 * v1.0, the bitmap and the superblock after it ("is too small: ..."), or
 * NULL (always for NULL: raw mode).
 */
const char *md_array_cannot_hold (const struct md_array *md,
                                  const struct member *m);

/* Whether m, offered as a replacement, carries another array's md
 * superblock or another format (1, with what in msg), is blank or this
 * array's own (0), or cannot be read (-1, errno).
 */
int md_array_foreign (const struct md_array *md, struct member *m, char *msg,
                      size_t len);

#endif /* RAID_MD_ARRAY_H */
