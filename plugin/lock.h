/* SPDX-License-Identifier: BSD-3-Clause */
/* The plugin's locks, in the one order in which they may be taken, and a
 * lock held for the rest of a scope.
 *
 * Order.  A thread holding a lock may take only locks further down this
 * list; locks on one line are never held together.
 *
 *   0. jobs.c          run->claim_lock   a job's next window of rows (the
 *                                        rate's wait is made under it)
 *   1. jobs.c          jobs->lock        the running job, operator actions
 *   2. member_table.h  ms->lock          the table's changes, limbo
 *      missed_rows.c   sweep_lock        one sweep at a time (it reads
 *                                        md's event count: md->lock)
 *   3. md_array_internal.h  md->lock    superblock updates (md_array.c),
 *                                        re-add admission (md_admit.c)
 *   4. md_bitmap.c     bm->io_lock       one bitmap writeout at a time
 *   5. md_bitmap.c     bm->lock          the bitmap's image and counters
 *   6. stripe_internal.h  sh->lock       one stripe row (stripe head)
 *   7. stripe_internal.h  c->lock        the cache's table, LRU, budget
 *      jobs.c          run->turn_lock    the turns of a job's windows
 *   8. member_nbd.c    lf_lock, registry_lock, a member's
 *                      connect_lock, its conn_lock, a batch's lock, in
 *                      that order; sentinel_lock | backoff_lock
 *                      (member_nbd_connect.c), each under connect_lock
 *                      at most
 *   9. md_identity.c   an md identity's lock (inside member I/O)
 *  10. control.c       clients_lock      alone
 *  11. missed_rows.c   thread_lock; member_nbd.c wake_lock; readd_auto.c
 *                      ra.lock: each alone (a thread's stop and wake);
 *                      member.c read_errors_lock, alone;
 *                      member_file_claim.c claims_lock, alone (a file
 *                      member's open and close)
 *  12. md_badblocks.c  a member's bad-block log: a leaf (requests ask
 *                      it holding a row); nothing is taken and no I/O
 *                      is made under it
 *
 * Member I/O (8, 9) may be issued under any of 1-7.  A thread holds at
 * most one stripe head (6), but a rebuild thread, which holds the heads
 * of a window of rows (jobs.c), taken in ascending row order: no thread
 * waits for a head while it holds another but a rebuild thread, and it
 * waits only for rows of its own window, which no other rebuild thread
 * takes, so no cycle can form.  A rebuild thread also waits, holding its
 * window, for the turns of the windows below it (jobs.c, run->turn);
 * those threads wait only for heads that clients hold, and a client
 * holds one.  A scrub thread waits for its turn holding no head.  No
 * thread takes any of 1-5 while it holds a head: what md and the bitmap
 * must do around a write (md_array_write_begin / _end,
 * md_array_flushed) happens before the row is taken or after it is put.
 * c->lock (7) is never held during I/O or computation.  Each structure's
 * comment says what its lock guards; this list is the only place that
 * orders them.
 *
 * Atomics.  What is read without a lock is _Atomic (stdatomic.h), so that
 * no access to it can be a plain one by mistake: member states and
 * recovery offsets (member.h), the member table's slots and reader counts
 * (member_table.h), md's clean flag and writes in flight (md_array_internal.h), the
 * bitmap's written generation, the in-memory record's marks and
 * counters (missed_rows.c), job progress and stop requests (jobs.c),
 * the cache's counters, a bad-block log's count of ranges
 * (md_badblocks.c).  A plain access to an _Atomic object is a
 * sequentially consistent one; weaker orders are spelled out where used.
 */

#ifndef RAID_LOCK_H
#define RAID_LOCK_H

#include <pthread.h>

static inline void
lock_release (pthread_mutex_t **m)
{
  pthread_mutex_unlock (*m);
}

/* Take mutex now and release it whenever the scope ends, however it ends
 * (nbdkit's ACQUIRE_LOCK_FOR_CURRENT_SCOPE): an early return cannot leave
 * it held.
 */
#define ACQUIRE_LOCK_FOR_CURRENT_SCOPE(mutex) \
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE_1 (mutex, __COUNTER__)
#define ACQUIRE_LOCK_FOR_CURRENT_SCOPE_1(mutex, n) \
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE_2 (mutex, n)
#define ACQUIRE_LOCK_FOR_CURRENT_SCOPE_2(mutex, n) \
  __attribute__ ((cleanup (lock_release), unused)) \
  pthread_mutex_t *lock_held_##n = (mutex); \
  pthread_mutex_lock (lock_held_##n)

#endif /* RAID_LOCK_H */
