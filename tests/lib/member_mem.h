/* SPDX-License-Identifier: BSD-3-Clause */
/* An in-memory member backend for unit tests; see member_mem.c. */

#ifndef TESTS_MEMBER_MEM_H
#define TESTS_MEMBER_MEM_H

#include <stdbool.h>
#include <stdint.h>

#include "member.h"

#define MEM_OPS 5               /* enum member_op's values */

/* What a member has been asked to do since its last reset. */
struct mem_stats {
  uint64_t requests[MEM_OPS];   /* indexed by enum member_op */
  uint64_t bytes[MEM_OPS];      /* READ, WRITE, PUNCH, ZERO: len */
  uint64_t failed[MEM_OPS];     /* requests answered with an injected
                                   error */
};

/* A member of size bytes, zeroed, with alignment align (a power of two,
 * at most MEMBER_MAX_ALIGN).  Aborts on failure: it is only for tests.
 */
struct member *mem_member_new (const char *name, uint64_t size,
                               uint32_t align);

/* The member's bytes, to read and corrupt behind the backend's back. */
uint8_t *mem_member_data (struct member *m);

/* From the next-but-`after` request of op on (after = 0: the next one),
 * every request of op on m fails with EIO and changes nothing.
 * mem_member_fail_from_errno: with err instead, to play either of
 * member.h's error classes: a medium's (EIO, ENODATA, EILSEQ,
 * MEMBER_ESHORT) or the member's going away (ENOTCONN, ETIMEDOUT,
 * ENODEV, ...).  mem_member_heal stops all injected failures.
 */
void mem_member_fail_from (struct member *m, enum member_op op,
                           uint64_t after);
void mem_member_fail_from_errno (struct member *m, enum member_op op,
                                 uint64_t after, int err);
void mem_member_heal (struct member *m);

/* The 4 KiB blocks over [offset, offset + len) become unreadable: reads
 * that touch them fail with EIO, until a write covering one whole remaps
 * it (fixable), or for good (not fixable: writes succeed, reads still
 * fail).  mem_member_readable: whether none of [offset, offset + len) is.
 */
void mem_member_unreadable (struct member *m, uint64_t offset, uint64_t len,
                            bool fixable);
bool mem_member_readable (struct member *m, uint64_t offset, uint64_t len);

/* Once, just before the next request of op on m runs: fn (arg), from the
 * thread that runs it, m's lock not held (so fn may fail members, end
 * writes, ...: what happens elsewhere while a request is on the wire).
 */
void mem_member_before (struct member *m, enum member_op op,
                        void (*fn) (void *), void *arg);

const struct mem_stats *mem_member_stats (struct member *m);
void mem_member_reset_stats (struct member *m);

/* Allocation (4 KiB blocks; see member_mem.c): whether data_run tells
 * where the data is (default) or says all data, as a backend that
 * cannot tell; whether any block of [offset, offset + len) is
 * allocated; how many data_run calls m has answered.
 */
void mem_member_set_tells (struct member *m, bool tells);
bool mem_member_allocated (struct member *m, uint64_t offset, uint64_t len);
uint64_t mem_member_data_runs (struct member *m);

/* Back to MEMBER_IN_SYNC, healed, counters reset (for the next case). */
void mem_member_revive (struct member *m);

#endif /* TESTS_MEMBER_MEM_H */
