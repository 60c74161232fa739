/* SPDX-License-Identifier: BSD-3-Clause */
/* The file backend: members that are local files or block devices, with
 * all data I/O through io_uring.
 *
 * Rings.  nbdkit runs each request on one of its worker threads and the
 * array does I/O synchronously from the request's point of view: it
 * submits a batch (a stripe's reads, or its writes) and waits for all of
 * it.  So each worker thread owns one small ring, created on first use and
 * destroyed when the thread exits.  Nothing is shared between threads: no
 * lock and no completion thread, and a batch's completions always come back
 * to the thread that waits for them.  (The alternative, one shared ring
 * with a completion thread, costs a lock on submission and a wake-up per
 * batch; per-thread rings were chosen for that reason, and
 * bench/e2e.sh measures the result.)
 *
 * A batch larger than the ring is fed in as completions free slots.  A
 * short read or write is resubmitted for the rest; -EINTR and -EAGAIN are
 * resubmitted as they are; a read (or, through the ring, a write) that
 * returns 0 before the requested length means the member is shorter than
 * it was at start-up (truncated) and fails with MEMBER_ESHORT.  Every
 * other error is the kernel's own errno (the completion's -res, or the
 * system call's errno), which member.h's Error classes sort: the block
 * layer says EIO, ENODATA or EILSEQ for the medium, ETIMEDOUT, ENODEV or
 * ENXIO for a device going away.
 *
 * When the ring is not used.  A batch of one request, and on members in
 * the page cache (no O_DIRECT) a batch of writes of any size and of reads
 * of up to 64 KiB each, are plain pread/pwrite/fdatasync calls instead.
 * The thread waits for the batch either way, and on page-cache members
 * io_uring can rarely complete a request inline: it hands it to an io-wq
 * worker thread, two context switches per request that a system call does
 * not pay and that cost more than the parallelism gains on copies.
 * Measured here (Zen 5 VM, tmpfs): a 4 KiB pread 3.1 us against 6.8 us
 * through the ring; through the plugin (fio, RAID-6 of 6, 4K random
 * writes, each 3 reads + 3 writes) 31.2k/26.4k IOPS with system calls
 * against 21.8k/19.3k with the ring, and a queue-depth-1 RMW in 55-64 us
 * against 95-103 us.  A buffered write of any size is such a copy (into
 * the page cache; it waits for no disk): 1 MiB sequential writes (full
 * rows of 256 KiB chunks, six 256 KiB writes a request) ran 11-21% faster
 * with system calls, at 480-512 us of the array's CPU a request against
 * 567-680 (bench/results/2026-12-05-zen5-full-rows.md).  Large reads may
 * wait for a disk under the page cache, so those (rebuild, scrub, large
 * client reads) go through the ring, as do O_DIRECT members and durable
 * writes (below), where requests really are in flight together.
 *
 * Shortages are not member failures.  A thread that cannot make its ring
 * (EMFILE when the process is at its file limit, ENOMEM, io_uring switched
 * off) and a large batch whose queue cannot be allocated fall back to
 * system calls; the thread tries to make a ring again a second later.  A
 * failed member is a member that failed an I/O, never a process that ran
 * short.  No more requests are in flight than the completion queue has
 * room for (kernels before 5.5 drop completions that overflow it).
 *
 * Durable writes (member_io.fua; the write-intent bitmap's) carry
 * RWF_DSYNC, so that only the written range is made durable, not every
 * dirty page of the member as fdatasync would.  A batch with more than one
 * of them goes through the ring, so that the members' flushes overlap.
 *
 * PUNCH and ZERO are fallocate(2) calls made directly: they are rare, and
 * their fallbacks (EOPNOTSUPP) are decided by the caller.
 *
 * Every disk opened here is claimed for as long as the member is open
 * (member_file_claim.c: O_EXCL on a block device, an OFD lock on a file,
 * both for a loop device), before anything is read from it, so that a
 * second array on the same disks is refused at open and writes nothing.
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <liburing.h>

#ifdef HAVE_VALGRIND_MEMCHECK_H
#include <valgrind/memcheck.h>
#else
#define VALGRIND_MAKE_MEM_DEFINED(p, n) ((void) 0)
#endif

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "member.h"
#include "member_file_claim.h"
#include "now.h"

#define RING_ENTRIES 64
#define SYNC_MAX_LEN (64 * 1024)
#define RING_RETRY_S 1

struct file_member {
  int fd;
  struct file_claim *claim;     /* the disk is ours: member_file_claim.c */
};

static pthread_key_t ring_key;
static pthread_once_t ring_key_once = PTHREAD_ONCE_INIT;

static void
ring_free (void *p)
{
  struct io_uring *ring = p;

  io_uring_queue_exit (ring);
  free (ring);
}

static void
ring_key_create (void)
{
  pthread_key_create (&ring_key, ring_free);
}

/* When this thread last failed to make its ring (now_ms; 0: never), so
 * that a thread without one tries again now and then, not on every batch.
 */
static __thread int64_t ring_failed_at;
static _Atomic bool ring_failure_logged;

/* This thread's ring, or NULL if it cannot have one now (EMFILE, ENOMEM,
 * io_uring disabled): the caller then uses system calls, so that a
 * resource limit of this process never fails a member.
 */
static struct io_uring *
thread_ring (void)
{
  struct io_uring *ring;
  int64_t now;
  int r;

  pthread_once (&ring_key_once, ring_key_create);
  ring = pthread_getspecific (ring_key);
  if (ring)
    return ring;
  now = now_ms ();
  if (ring_failed_at && now - ring_failed_at < RING_RETRY_S * 1000)
    return NULL;

  ring = malloc (sizeof *ring);
  r = ring ? io_uring_queue_init (RING_ENTRIES, ring, 0) : -ENOMEM;
  if (r < 0) {
    free (ring);
    ring_failed_at = now ? now : 1;
    if (!atomic_exchange_explicit (&ring_failure_logged, true,
                                   memory_order_relaxed)) {
      errno = -r;
      nbdkit_error ("io_uring_queue_init: %m: this thread uses system calls "
                    "instead (logged once)");
    }
    return NULL;
  }
  pthread_setspecific (ring_key, ring);
  return ring;
}

static int
fd_of (const struct member_io *io)
{
  return ((struct file_member *) io->member->priv)->fd;
}

static int
fallocate_io (struct member_io *io)
{
  int mode = io->op == MEMBER_PUNCH
    ? FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
    : FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;

  if (fallocate (fd_of (io), mode, io->offset, io->len) == -1)
    return errno;
  return 0;
}

static void
prep (struct io_uring_sqe *sqe, struct member_io *io)
{
  uint8_t *buf = member_io_cursor (io);
  uint64_t off = io->offset + io->done;
  unsigned int len = io->len - io->done > 0x40000000
    ? 0x40000000 : io->len - io->done;

  switch (io->op) {
  case MEMBER_READ:
    io_uring_prep_read (sqe, fd_of (io), buf, len, off);
    break;
  case MEMBER_WRITE:
    io_uring_prep_write (sqe, fd_of (io), buf, len, off);
    if (io->fua)
      sqe->rw_flags = RWF_DSYNC;
    break;
  default:                      /* MEMBER_FLUSH */
    io_uring_prep_fsync (sqe, fd_of (io), IORING_FSYNC_DATASYNC);
    break;
  }
  io_uring_sqe_set_data (sqe, io);
}

/* Account for one completion; true if the request must go in again. */
static bool
complete (struct member_io *io, int res)
{
  if (res == -EINTR || res == -EAGAIN)
    return true;
  if (res < 0) {
    io->err = -res;
    return false;
  }
  if (io->op == MEMBER_FLUSH)
    return false;
  if (res == 0) {
    io->err = MEMBER_ESHORT;    /* the member shrank under us */
    return false;
  }
  /* The kernel filled the buffer behind valgrind's back. */
  if (io->op == MEMBER_READ)
    VALGRIND_MAKE_MEM_DEFINED ((uint8_t *) io->buf + io->done, res);
  io->done += res;
  return io->done < io->len;
}

/* A FIFO of requests waiting for a submission slot.  Every request is
 * either queued or in flight, so n slots are enough.
 */
struct queue {
  struct member_io **q;
  size_t n, head, count;
};

static void
push (struct queue *q, struct member_io *io)
{
  q->q[(q->head + q->count++) % q->n] = io;
}

static struct member_io *
pop (struct queue *q)
{
  struct member_io *io = q->q[q->head];

  q->head = (q->head + 1) % q->n;
  q->count--;
  return io;
}

static void
sync_io (struct member_io *io)
{
  int fd = fd_of (io);

  if (io->op == MEMBER_FLUSH) {
    while (fdatasync (fd) == -1)
      if (errno != EINTR) {
        io->err = errno;
        return;
      }
    return;
  }
  while (io->done < io->len) {
    uint8_t *buf = member_io_cursor (io);
    uint64_t off = io->offset + io->done;
    struct iovec iov = { .iov_base = buf, .iov_len = io->len - io->done };
    ssize_t r = io->op == MEMBER_READ ? pread (fd, buf, iov.iov_len, off)
      : pwritev2 (fd, &iov, 1, off, io->fua ? RWF_DSYNC : 0);

    if (r == -1 && errno != EINTR && errno != EAGAIN) {
      io->err = errno;
      return;
    }
    if (r == 0 && io->op == MEMBER_READ) {
      io->err = MEMBER_ESHORT;  /* the member shrank under us */
      return;
    }
    if (r > 0)
      io->done += r;
  }
}

/* Whether to use plain system calls rather than the ring; see the essay. */
static bool
sync_batch (struct member_io **ios, size_t n)
{
  if (n == 1)
    return true;
  for (size_t i = 0; i < n; i++)
    if (ios[i]->member->direct || ios[i]->fua ||
        (ios[i]->op == MEMBER_READ && ios[i]->len > SYNC_MAX_LEN))
      return false;
  return true;
}

/* The batch one request at a time, with system calls. */
static void
sync_all (struct member_io **ios, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (ios[i]->op == MEMBER_PUNCH || ios[i]->op == MEMBER_ZERO)
      ios[i]->err = fallocate_io (ios[i]);
    else
      sync_io (ios[i]);
}

static int
file_io (struct member_io **ios, size_t n)
{
  struct io_uring *ring;
  struct member_io *stack[64];
  struct queue q = { .q = stack, .n = n };
  size_t inflight = 0;

  /* Without a ring, or memory for a large batch's queue, the batch is
   * still done, one request after the other: never an error that would
   * fail a member for what is this process's shortage.
   */
  if (sync_batch (ios, n) || (ring = thread_ring ()) == NULL ||
      (n > sizeof stack / sizeof stack[0] &&
       (q.q = malloc (n * sizeof *q.q)) == NULL)) {
    sync_all (ios, n);
    return 0;
  }

  for (size_t i = 0; i < n; i++) {
    if (ios[i]->op == MEMBER_PUNCH || ios[i]->op == MEMBER_ZERO)
      ios[i]->err = fallocate_io (ios[i]);
    else
      push (&q, ios[i]);
  }

  while (q.count || inflight) {
    struct io_uring_cqe *cqe;
    struct io_uring_sqe *sqe;
    int r;

    /* Never more in flight than the completion queue holds: kernels
     * without IORING_FEAT_NODROP (before 5.5) drop what overflows it.
     */
    while (q.count && inflight < ring->cq.ring_entries &&
           (sqe = io_uring_get_sqe (ring)) != NULL) {
      prep (sqe, pop (&q));
      inflight++;
    }
    r = io_uring_submit_and_wait (ring, 1);
    if (r < 0 && r != -EINTR && r != -EAGAIN) {
      /* The ring itself is broken; nothing in flight can be trusted. */
      errno = -r;
      nbdkit_error ("io_uring_submit: %m");
      abort ();
    }
    while (io_uring_peek_cqe (ring, &cqe) == 0) {
      struct member_io *io = io_uring_cqe_get_data (cqe);

      if (complete (io, cqe->res))
        push (&q, io);
      io_uring_cqe_seen (ring, cqe);
      inflight--;
    }
  }

  if (q.q != stack)
    free (q.q);
  return 0;
}

static void
file_close (struct member *m)
{
  struct file_member *f = m->priv;

  close (f->fd);
  file_claim_release (f->claim);
  free (f);
  free (m->name);
  free (m);
}

static bool file_same (const struct member *a, const struct member *b);
static int file_hole (struct member *m, uint64_t offset, uint64_t len);
static void file_data_run (struct member *m, uint64_t offset, uint64_t end,
                           uint64_t *data, uint64_t *stop);

static const struct member_ops file_ops = {
  .kind = "file",
  .io = file_io,
  .same = file_same,
  .hole = file_hole,
  .data_run = file_data_run,
  .close = file_close,
};

static int
size_of (int fd, const struct stat *st, uint64_t *size)
{
  if (S_ISBLK (st->st_mode))
    return ioctl (fd, BLKGETSIZE64, size);
  if (S_ISREG (st->st_mode)) {
    *size = st->st_size;
    return 0;
  }
  errno = EINVAL;
  return -1;
}

/* O_DIRECT for a block device, as md uses its disks: the page cache
 * would hold a second copy of what the stripe cache decides to keep, and
 * io_uring runs direct requests on the device without a worker thread
 * (buffered ones it hands to io-wq, see the top).  Set with F_SETFL once
 * the member is known to be a block device, so that opening and asking
 * are one file, not a path looked up twice.  With direct=true a member
 * that cannot have it is an error; by default a block device that cannot
 * keeps the page cache, which is always correct.
 */
static int
set_direct (struct member *m, int fd, const struct stat *st,
            enum member_direct direct)
{
  int flags;

  if (direct == MEMBER_DIRECT_OFF ||
      (direct == MEMBER_DIRECT_AUTO && !S_ISBLK (st->st_mode)))
    return 0;
  if ((flags = fcntl (fd, F_GETFL)) == -1 ||
      fcntl (fd, F_SETFL, flags | O_DIRECT) == -1) {
    if (direct == MEMBER_DIRECT_ON) {
      nbdkit_error ("member %s: O_DIRECT (direct=true): %m", m->name);
      return -1;
    }
    nbdkit_debug ("member %s: block device without O_DIRECT (%m): "
                  "through the page cache", m->name);
    return 0;
  }
  m->direct = true;
  return 0;
}

/* The alignment of a member's requests: a block device's logical block
 * size (BLKSSZGET: 512, or 4096 on 4Kn disks), which is O_DIRECT's rule
 * and what the device can write without a read-modify-write of its own;
 * a file with O_DIRECT, 4 KiB (its filesystem's block is not asked);
 * otherwise anything (member_opened: 1).  The physical block size, when
 * larger, is only said in the debug log: md aligns its data to it, and
 * an array whose chunks or data offset are not multiples of it still
 * works, at the cost of the device's own read-modify-writes.
 */
static int
set_align (struct member *m, int fd, const struct stat *st)
{
  int logical = 0;
  unsigned int physical = 0;

  if (!S_ISBLK (st->st_mode)) {
    m->align = m->direct ? MEMBER_MAX_ALIGN : 0;
    return 0;
  }
  if (ioctl (fd, BLKSSZGET, &logical) == -1 || logical <= 0 ||
      (logical & (logical - 1))) {
    nbdkit_error ("member %s: its logical block size: %m", m->name);
    return -1;
  }
  if (ioctl (fd, BLKPBSZGET, &physical) == -1)
    physical = logical;
  m->align = m->direct ? (uint32_t) logical : 0;
  nbdkit_debug ("member %s: block device, %d-byte logical and %u-byte "
                "physical blocks%s", m->name, logical, physical,
                m->direct ? ", O_DIRECT" : "");
  return 0;
}

struct member *
member_file_open (const char *path, enum member_direct direct)
{
  struct member *m = calloc (1, sizeof *m);
  struct file_member *f = calloc (1, sizeof *f);
  struct stat st;
  int err;

  if (m == NULL || f == NULL || (m->name = strdup (path)) == NULL) {
    nbdkit_error ("calloc: %m");
    goto err;
  }
  /* Read-only mode: the kernel, not only the plugin, keeps writes off. */
  f->fd = open (path, (member_read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (f->fd == -1) {
    nbdkit_error ("member %s: open: %m", path);
    goto err;
  }
  if (fstat (f->fd, &st) == -1) {
    nbdkit_error ("member %s: stat: %m", path);
    goto err_fd;
  }
  /* Claimed before anything else is done with it, so that a disk that
   * another array holds is refused before assembly reads or writes a
   * byte of any member.  Read-only arrays claim too (see
   * member_file_claim.c).  Other kinds of file are refused below.
   */
  if ((S_ISBLK (st.st_mode) || S_ISREG (st.st_mode)) &&
      (f->claim = file_claim_take (path, f->fd, &st)) == NULL)
    goto err_fd;
  if (set_direct (m, f->fd, &st, direct) == -1 ||
      set_align (m, f->fd, &st) == -1)
    goto err_fd;
  if (size_of (f->fd, &st, &m->size) == -1) {
    if (errno == EINVAL)
      nbdkit_error ("member %s: not a regular file or block device", path);
    else
      nbdkit_error ("member %s: size: %m", path);
    goto err_fd;
  }
  m->ops = &file_ops;
  m->can_fua = true;            /* RWF_DSYNC: Linux 4.7 */
  m->priv = f;
  return m;

 err_fd:
  err = errno;                  /* EBUSY, a disk held elsewhere, is told */
  close (f->fd);
  file_claim_release (f->claim);
  errno = err;
 err:
  err = errno;
  if (m)
    free (m->name);
  free (m);
  free (f);
  errno = err;
  return NULL;
}

static bool
file_same (const struct member *a, const struct member *b)
{
  const struct file_member *fa = a->priv, *fb = b->priv;

  /* The claims know a loop device's backing file: a file and a loop
   * device over it are one disk too.
   */
  return file_claim_overlap (fa->claim, fb->claim);
}

/* A hole is a range with no data after its start, as far as
 * lseek(SEEK_DATA) says: files on filesystems that track allocation
 * (tmpfs, ext4, xfs, btrfs) say so exactly; others (and block devices)
 * report every byte as data, which only costs the rebuild a read.
 */
static int
file_hole (struct member *m, uint64_t offset, uint64_t len)
{
  const struct file_member *f = m->priv;
  off_t data = lseek (f->fd, offset, SEEK_DATA);

  if (data == -1)
    return errno == ENXIO;      /* no data from offset to the end */
  return (uint64_t) data >= offset + len;
}

/* The extents' question (member_ops.data_run), by SEEK_DATA then
 * SEEK_HOLE from where the data starts; as for file_hole, a filesystem
 * or block device that does not track allocation says data everywhere
 * (and an error other than ENXIO, "no data after offset", is data too).
 * lseek moves the descriptor's position, which no one uses: every
 * transfer of ours gives its own offset.
 */
static void
file_data_run (struct member *m, uint64_t offset, uint64_t end,
               uint64_t *data, uint64_t *stop)
{
  const struct file_member *f = m->priv;
  off_t d = lseek (f->fd, offset, SEEK_DATA), h;

  if (d == -1) {
    if (errno == ENXIO)
      *data = *stop = end;
    return;
  }
  if ((uint64_t) d >= end) {
    *data = *stop = end;
    return;
  }
  *data = d;
  h = lseek (f->fd, d, SEEK_HOLE);
  if (h != -1 && (uint64_t) h > (uint64_t) d && (uint64_t) h < end)
    *stop = h;
}

/* For --dump-plugin: the ring features and the opcodes we use. */
const char *
member_file_uring_features (void)
{
  static char s[256];
  struct io_uring ring;
  struct io_uring_probe *probe;
  static const struct { int op; const char *name; } ops[] = {
    { IORING_OP_READ, "read" }, { IORING_OP_WRITE, "write" },
    { IORING_OP_FSYNC, "fsync" },
  };
  int r = io_uring_queue_init (4, &ring, 0);

  if (r < 0) {
    snprintf (s, sizeof s, "unavailable (%s)", strerror (-r));
    return s;
  }
  snprintf (s, sizeof s, "%s%s",
            ring.features & IORING_FEAT_NODROP ? "nodrop," : "",
            ring.features & IORING_FEAT_FAST_POLL ? "fast_poll," : "");
  probe = io_uring_get_probe_ring (&ring);
  for (size_t i = 0; probe && i < sizeof ops / sizeof ops[0]; i++)
    if (io_uring_opcode_supported (probe, ops[i].op))
      snprintf (s + strlen (s), sizeof s - strlen (s), "%s,", ops[i].name);
  if (probe)
    io_uring_free_probe (probe);
  io_uring_queue_exit (&ring);
  if (*s)
    s[strlen (s) - 1] = '\0';
  return s;
}
