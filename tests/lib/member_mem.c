/* SPDX-License-Identifier: BSD-3-Clause */
/* member_mem: a member backend over a malloc'd buffer, for unit tests of
 * the code above the members (the stripe cache, and later the bitmap and
 * md_array) without files, rings or servers.
 *
 * It is a struct member_ops like member_file.c's and member_nbd.c's, so
 * member_io_run dispatches to it as to them, and the code under test
 * cannot tell.  What a test gets on top:
 *  - the bytes themselves (mem_member_data), to compare with an
 *    independent reference or to corrupt behind the code's back;
 *  - counters per operation of requests, bytes and injected failures
 *    (struct mem_stats), so that a test can say how many pages a write
 *    read, not only that its result is right;
 *  - fault injection per member and operation: from a chosen request on,
 *    every request of that operation fails with EIO (or an errno the test
 *    chooses: a medium's error or a link's, member.h's Error classes)
 *    and leaves the bytes as they were, like a disk that stopped
 *    answering;
 *  - unreadable blocks (mem_member_unreadable), as a disk's bad sectors:
 *    a read that touches one fails with EIO (the medium: member.h's
 *    member_error_is_media) and reads nothing; a write that covers one
 *    whole heals it, as a disk remaps a sector when it is written, unless
 *    it was made unfixable, when the write succeeds and reads still fail;
 *  - a hook run once before a chosen operation's next request, for what
 *    must happen elsewhere while a request is on the wire;
 *  - allocation by 4 KiB block, as a filesystem keeps it: a write
 *    allocates the blocks it touches, a punch frees the blocks it covers
 *    whole (zero-range keeps them), and data_run (member.h) answers
 *    from that, as lseek(SEEK_DATA/SEEK_HOLE) does, unless the test says
 *    the member cannot tell (mem_member_set_tells).
 *
 * Requests are checked as the real backends' callers must make them:
 * inside the member, offset and length multiples of the alignment, a
 * buffer for reads and writes, 4 KiB aligned when the test marks the
 * member direct (member.h: as O_DIRECT wants).  A request that breaks
 * those rules is a bug in the code under test, which this backend reports
 * by aborting (the test then fails loudly with the message) rather than by
 * an errno the caller might take for a member failure.
 *
 * Locking: one mutex per member around each request and each change of
 * its faults, so that tests may run batches from several threads; a test
 * reads the counters while no batch runs.  Not for speed.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "member_mem.h"

struct mem_member {
  uint8_t *data;
  pthread_mutex_t lock;         /* everything below, and data */
  struct mem_stats stats;
  bool fail[MEM_OPS];           /* failing from fail_at[op] on */
  uint64_t fail_at[MEM_OPS];    /* request number (counting from 0) */
  int fail_err[MEM_OPS];        /* with this errno */
  uint64_t seen[MEM_OPS];       /* requests ever, not reset with stats */
  void (*before[MEM_OPS]) (void *);     /* once, then NULL */
  void *before_arg[MEM_OPS];
  bool *alloc;                  /* per MEM_BLOCK: holds data */
  uint8_t *bad;                 /* per MEM_BLOCK: enum bad_block */
  bool tells;                   /* data_run answers from alloc */
  uint64_t data_runs;           /* data_run calls ever */
};

#define MEM_BLOCK 4096

enum bad_block { BLOCK_GOOD, BLOCK_UNREADABLE, BLOCK_UNFIXABLE };

/* Whether a read of [offset, offset + len) touches a bad block. */
static bool
touches_bad (const struct mem_member *mm, uint64_t offset, uint64_t len)
{
  for (uint64_t b = offset / MEM_BLOCK; b * MEM_BLOCK < offset + len; b++)
    if (mm->bad[b] != BLOCK_GOOD)
      return true;
  return false;
}

/* A write of [offset, offset + len) remaps the unreadable blocks it covers
 * whole.
 */
static void
heal_covered (struct mem_member *mm, uint64_t offset, uint64_t len)
{
  for (uint64_t b = (offset + MEM_BLOCK - 1) / MEM_BLOCK;
       (b + 1) * MEM_BLOCK <= offset + len; b++)
    if (mm->bad[b] == BLOCK_UNREADABLE)
      mm->bad[b] = BLOCK_GOOD;
}

static const char *const op_names[MEM_OPS] = {
  "read", "write", "flush", "punch", "zero",
};

static void
bad_request (const struct member *m, const struct member_io *io,
             const char *why)
{
  fprintf (stderr, "member_mem: %s: bad %s request (offset %" PRIu64
           ", length %" PRIu64 "): %s\n", m->name, op_names[io->op],
           io->offset, io->len, why);
  abort ();
}

/* The request's rules (see the top). */
static void
check_request (const struct member *m, const struct member_io *io)
{
  if ((unsigned int) io->op >= MEM_OPS)
    bad_request (m, io, "unknown operation");
  if (io->op == MEMBER_FLUSH)
    return;
  if (io->len == 0)
    bad_request (m, io, "empty");
  if (io->offset > m->size || io->len > m->size - io->offset)
    bad_request (m, io, "beyond the member's end");
  if (io->offset % m->align || io->len % m->align)
    bad_request (m, io, "not aligned to the member's alignment");
  if ((io->op == MEMBER_READ || io->op == MEMBER_WRITE) && io->buf == NULL)
    bad_request (m, io, "no buffer");
  if (io->buf && m->direct && (uintptr_t) io->buf % 4096)
    bad_request (m, io, "buffer not 4 KiB aligned on a direct member");
  if (io->fua && (io->op != MEMBER_WRITE || !m->can_fua))
    bad_request (m, io, "FUA on a request or member that cannot have it");
}

/* One request, under the member's lock. */
static void
mem_request (struct member *m, struct member_io *io)
{
  struct mem_member *mm = m->priv;
  enum member_op op = io->op;

  void (*fn) (void *);

  check_request (m, io);
  pthread_mutex_lock (&mm->lock);
  fn = mm->before[op];
  mm->before[op] = NULL;
  pthread_mutex_unlock (&mm->lock);
  if (fn)
    fn (mm->before_arg[op]);
  pthread_mutex_lock (&mm->lock);
  mm->stats.requests[op]++;
  if (op != MEMBER_FLUSH)
    mm->stats.bytes[op] += io->len;
  if (op == MEMBER_READ && touches_bad (mm, io->offset, io->len)) {
    mm->stats.failed[op]++;
    io->err = EIO;
  }
  else if (mm->fail[op] && mm->seen[op] >= mm->fail_at[op]) {
    mm->stats.failed[op]++;
    io->err = mm->fail_err[op];
  }
  else {
    switch (op) {
    case MEMBER_READ:
      memcpy (io->buf, mm->data + io->offset, io->len);
      break;
    case MEMBER_WRITE:
      memcpy (mm->data + io->offset, io->buf, io->len);
      heal_covered (mm, io->offset, io->len);
      for (uint64_t b = io->offset / MEM_BLOCK;
           b * MEM_BLOCK < io->offset + io->len; b++)
        mm->alloc[b] = true;
      break;
    case MEMBER_FLUSH:
      break;
    case MEMBER_PUNCH:
      for (uint64_t b = (io->offset + MEM_BLOCK - 1) / MEM_BLOCK;
           (b + 1) * MEM_BLOCK <= io->offset + io->len; b++)
        mm->alloc[b] = false;
      /* fall through */
    case MEMBER_ZERO:
      memset (mm->data + io->offset, 0, io->len);
      heal_covered (mm, io->offset, io->len);
      break;
    }
    io->done = op == MEMBER_FLUSH ? 1 : io->len;
  }
  mm->seen[op]++;
  pthread_mutex_unlock (&mm->lock);
}

/* Run n requests in order; each gets its own result (member.h). */
static int
mem_io (struct member_io **ios, size_t n)
{
  int r = 0;

  for (size_t i = 0; i < n; i++) {
    mem_request (ios[i]->member, ios[i]);
    if (ios[i]->err)
      r = -1;
  }
  return r;
}

/* The runs of allocated blocks, as lseek(SEEK_DATA) then SEEK_HOLE
 * find them (whole blocks, clipped to [offset, end)).
 */
static void
mem_data_run (struct member *m, uint64_t offset, uint64_t end,
              uint64_t *data, uint64_t *stop)
{
  struct mem_member *mm = m->priv;
  uint64_t b, nblocks = (m->size + MEM_BLOCK - 1) / MEM_BLOCK;

  pthread_mutex_lock (&mm->lock);
  mm->data_runs++;
  if (mm->tells) {
    for (b = offset / MEM_BLOCK; b < nblocks && !mm->alloc[b]; b++)
      ;
    *data = b * MEM_BLOCK < offset ? offset : b * MEM_BLOCK;
    for (; b < nblocks && mm->alloc[b]; b++)
      ;
    *stop = b * MEM_BLOCK;
    if (*data >= end)
      *data = *stop = end;
    else if (*stop > end)
      *stop = end;
  }
  pthread_mutex_unlock (&mm->lock);
}

/* Free the member and its bytes. */
static void
mem_close (struct member *m)
{
  struct mem_member *mm = m->priv;

  pthread_mutex_destroy (&mm->lock);
  free (mm->alloc);
  free (mm->bad);
  free (mm->data);
  free (mm);
  free (m->name);
  free (m);
}

/* The backend, for member_io_run and member_close. */
static const struct member_ops mem_ops = {
  /* What member_same and messages see. */
  .kind = "mem",
  /* A batch: every request runs, in order, synchronously. */
  .io = mem_io,
  /* Allocation by block (see the top). */
  .data_run = mem_data_run,
  /* member_close, after the identity (if any) is freed. */
  .close = mem_close,
};

struct member *
mem_member_new (const char *name, uint64_t size, uint32_t align)
{
  struct member *m = calloc (1, sizeof *m);
  struct mem_member *mm = calloc (1, sizeof *mm);

  if (m == NULL || mm == NULL || (m->name = strdup (name)) == NULL ||
      (mm->data = calloc (1, size ? size : 1)) == NULL ||
      (mm->alloc = calloc (size / MEM_BLOCK + 1, sizeof *mm->alloc)) == NULL ||
      (mm->bad = calloc (size / MEM_BLOCK + 1, sizeof *mm->bad)) == NULL) {
    perror ("member_mem");
    abort ();
  }
  pthread_mutex_init (&mm->lock, NULL);
  mm->tells = true;
  m->ops = &mem_ops;
  m->size = size;
  m->align = align;
  m->can_fua = true;
  atomic_init (&m->state, MEMBER_IN_SYNC);
  m->priv = mm;
  member_opened (m);            /* its serial, as every backend's */
  return m;
}

uint8_t *
mem_member_data (struct member *m)
{
  return ((struct mem_member *) m->priv)->data;
}

void
mem_member_fail_from_errno (struct member *m, enum member_op op,
                            uint64_t after, int err)
{
  struct mem_member *mm = m->priv;

  pthread_mutex_lock (&mm->lock);
  mm->fail[op] = true;
  mm->fail_at[op] = mm->seen[op] + after;
  mm->fail_err[op] = err;
  pthread_mutex_unlock (&mm->lock);
}

void
mem_member_fail_from (struct member *m, enum member_op op, uint64_t after)
{
  mem_member_fail_from_errno (m, op, after, EIO);
}

void
mem_member_unreadable (struct member *m, uint64_t offset, uint64_t len,
                       bool fixable)
{
  struct mem_member *mm = m->priv;

  pthread_mutex_lock (&mm->lock);
  for (uint64_t b = offset / MEM_BLOCK; b * MEM_BLOCK < offset + len; b++)
    mm->bad[b] = fixable ? BLOCK_UNREADABLE : BLOCK_UNFIXABLE;
  pthread_mutex_unlock (&mm->lock);
}

bool
mem_member_readable (struct member *m, uint64_t offset, uint64_t len)
{
  struct mem_member *mm = m->priv;
  bool r;

  pthread_mutex_lock (&mm->lock);
  r = !touches_bad (mm, offset, len);
  pthread_mutex_unlock (&mm->lock);
  return r;
}

void
mem_member_before (struct member *m, enum member_op op,
                   void (*fn) (void *), void *arg)
{
  struct mem_member *mm = m->priv;

  pthread_mutex_lock (&mm->lock);
  mm->before[op] = fn;
  mm->before_arg[op] = arg;
  pthread_mutex_unlock (&mm->lock);
}

void
mem_member_heal (struct member *m)
{
  struct mem_member *mm = m->priv;

  pthread_mutex_lock (&mm->lock);
  memset (mm->fail, 0, sizeof mm->fail);
  pthread_mutex_unlock (&mm->lock);
}

const struct mem_stats *
mem_member_stats (struct member *m)
{
  return &((struct mem_member *) m->priv)->stats;
}

void
mem_member_reset_stats (struct member *m)
{
  struct mem_member *mm = m->priv;

  pthread_mutex_lock (&mm->lock);
  memset (&mm->stats, 0, sizeof mm->stats);
  pthread_mutex_unlock (&mm->lock);
}

void
mem_member_revive (struct member *m)
{
  mem_member_heal (m);
  mem_member_reset_stats (m);
  atomic_store (&m->recovery_stripe, 0);
  atomic_store (&m->state, MEMBER_IN_SYNC);
}

void
mem_member_set_tells (struct member *m, bool tells)
{
  struct mem_member *mm = m->priv;

  pthread_mutex_lock (&mm->lock);
  mm->tells = tells;
  pthread_mutex_unlock (&mm->lock);
}

bool
mem_member_allocated (struct member *m, uint64_t offset, uint64_t len)
{
  struct mem_member *mm = m->priv;
  bool any = false;

  pthread_mutex_lock (&mm->lock);
  for (uint64_t b = offset / MEM_BLOCK; b * MEM_BLOCK < offset + len; b++)
    any |= mm->alloc[b];
  pthread_mutex_unlock (&mm->lock);
  return any;
}

uint64_t
mem_member_data_runs (struct member *m)
{
  struct mem_member *mm = m->priv;
  uint64_t n;

  pthread_mutex_lock (&mm->lock);
  n = mm->data_runs;
  pthread_mutex_unlock (&mm->lock);
  return n;
}
