/* SPDX-License-Identifier: BSD-3-Clause */
/* The NBD backend: members that are remote NBD exports, through libnbd.
 * This file is the backend (member_nbd_open, its ops table, close), the
 * registry of open members, each member's serving connection, and the
 * request engine: a batch of member_io sent as NBD commands, their
 * replies read, their deadline kept.  Making a connection and checking
 * that it reaches the member's disk (what the server offered at open,
 * backoff, identity and the sentinel, aliases, durability, simple
 * replies) is member_nbd_connect.c's, which uses nothing of this file
 * (member_nbd_internal.h is what the two share).
 *
 * Connections.  Each member has one connection that serves (conn),
 * shared by every nbdkit thread, with as many requests in flight on it
 * as the threads have sent.  A thread sends its batch's commands itself
 * (libnbd's aio calls, under the member's conn_lock) and then waits for
 * them to end (on_reply, on_free).  Replies are read by one of the
 * waiting threads at a time, the reader (leader/follower): a thread that
 * waits while nobody reads becomes the reader; it polls every member's
 * connection and lets libnbd read what arrives, which ends commands of
 * every batch and wakes the threads whose batch ended, until its own
 * batch ends; then it promotes a sleeping thread to read in its place.
 * So a lone request costs no hand-off between threads, and many cost one
 * wake-up per batch.  A thread kicks the reader (an eventfd) only when it
 * made a connection, or when libnbd could not send a whole command at
 * once and must wait for the socket.  Why not a connection per thread,
 * as before: a server pays for every request that arrives alone.  One
 * nbdkit memory server, 4 KiB random writes from fio's nbd engine on this
 * project's 2-core test machine (AMD EPYC, Zen 4): 16 connections with
 * one request each cost the server 31.8 us of CPU per request, one
 * connection with 16 in flight 11.1 us (16.4 and 8.9 with nbdkit -t 1).
 * Why not a thread that only reads (tried): every batch then paid a
 * hand-off from that thread, 7.6-8.4 context switches of the array's
 * threads per 4 KiB random write against 5.1-5.4 with a connection per
 * thread.  Why not a few connections per member, each for a share of
 * the threads (tried, 4): the servers see fewer requests together, and
 * the array's threads switched no less (6.7-7.4 per write against
 * 7.7-7.9); 5348 and 4630 IOPS against 6952 and 5020 with one, in the
 * same runs.  One connection also serves members without multi-conn as
 * well as those with it: a flush covers the writes completed before it
 * on that very connection, which are all the array's.
 *
 * Ids.  A member's id is its slot in the registry (by_id), which the
 * reader walks: the lowest free one, taken at open and given back at
 * close, so members come and go without limit (at most MAX_NBD_MEMBERS
 * open at once).  What the reader polled it checks again under the
 * locks: the member by its generation (a number never reused), the
 * connection by its socket, so a member closed or a connection dropped
 * meanwhile is never touched.  The registry lives here, with the reader
 * that walks it: nothing that makes or checks a connection looks at it.
 *
 * Shortages are not member failures.  A member fails when its server or
 * its disk fails, never because this process ran short, so nothing on the
 * I/O path fails a request for want of memory: a batch whose list of
 * requests cannot be allocated runs in pieces of STACK_PENDING from the
 * stack (slower: each piece waits for the one before), the batch and its
 * wait live on the stack, and an identity range of up to 4 KiB (md's
 * superblock) is read into a stack buffer (member_nbd_connect.c).
 * (libnbd's own allocations can still fail a connection attempt or a
 * command, which is then sent again on a new connection.)
 *
 * Failures.  A connection that dies (the server went away, a protocol
 * error) is closed; the requests on it are sent again, once, on a new
 * connection (refused for a while after a failed attempt:
 * member_nbd_connect.c, Backoff).  A batch that is not complete after
 * `timeout` (the plugin's member-timeout parameter) is abandoned: the
 * connection of each late request is closed, with every command on it
 * (the other threads send theirs again, once, on a new connection), and
 * the batch's unfinished requests fail, so a hung server cannot hang
 * clients.  The time
 * left is computed from one clock read, signed, and never negative (a
 * negative timeout would make poll(2) wait forever).
 *
 * What a failed request's err says (member.h, Error classes): the
 * server's own error when it answered one (NBD's codes, as libnbd hands
 * them over: EPERM, EIO, ENOMEM, EINVAL, ENOSPC, EOVERFLOW, ENOTSUP
 * (given as EOPNOTSUPP), ESHUTDOWN), so that a server's EIO is the
 * medium's as a local disk's is; the member's going away otherwise:
 * ETIMEDOUT once the deadline has passed, ENOTCONN when no connection
 * could be made or a command was lost with its connection twice, ENODEV
 * once a new connection showed another disk (untrusted).  The messages
 * logged say the rest.
 *
 * Writes lost with their connection.  A server may acknowledge a write
 * it holds only in a volatile cache; a flush makes it durable, and covers
 * the writes acknowledged before the flush was sent (on any connection to
 * that server with multi-conn, else on its own).  So a connection lost
 * with acknowledged writes that no flush covered leaves them in doubt: a
 * server restarted after a crash comes back without them, over a disk
 * whose md superblock (flushed, as every metadata write is) still says
 * it is the member, and reads would return the data from before those
 * writes.  Such a member is failed at its next connection, unless the
 * sentinel proves the server is the very instance that acknowledged them
 * (a raw member's check), whose cache a flush on the new connection
 * covers.  The serving connection counts the writes it acknowledged
 * (acked) and how many of them its last successful flush covered
 * (covered); a write sent with the FUA flag, and every write to a server
 * without flush, is durable once acknowledged and not counted.  The
 * check at the next connection is member_nbd_connect.c's
 * (lost_unflushed_unproven).
 *
 * PUNCH and ZERO are NBD_CMD_WRITE_ZEROES (with and without the may-trim
 * flag): a plain NBD trim need not read back as zeroes, so it is never used.
 * Commands are at most 32 MiB, or the server's maximum block size (read
 * at open: member_nbd_connect.c).  What the server offers (flush, FUA)
 * and what a request without it becomes: member_nbd_connect.c, Durability.
 *
 * Locking order (lock.h, 8): lf_lock, then registry_lock, then a
 * member's connect_lock, then its conn_lock, then a batch's lock;
 * sentinel_lock and backoff_lock (member_nbd_connect.c's) are taken
 * under connect_lock at most; wake_lock under none.
 * libnbd's handle lock sits between conn_lock and a batch's lock:
 * on_reply and on_free run inside libnbd's calls.  A connection attempt
 * holds connect_lock but not conn_lock, so the reader (which takes
 * conn_lock under registry_lock) never waits for one.  The identity
 * callback, which member_nbd_connect.c calls, may run under connect_lock
 * (and md_array.c's lock) and takes only its own.
 */

#include <config.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <libnbd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "member.h"
#include "member_nbd_internal.h"
#include "now.h"

#define MAX_NBD_MEMBERS 256
#define STACK_PENDING 64        /* requests per piece without memory */

/* The registry: the open members, whose connections the reader polls
 * (see Connections above); registry_lock guards by_id.
 */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nbd_member *by_id[MAX_NBD_MEMBERS];
static uint64_t last_gen;

/* Who reads the replies: see Connections above.  lf_lock guards the two
 * fields below.
 */
struct batch;
static pthread_mutex_t lf_lock = PTHREAD_MUTEX_INITIALIZER;
static bool reading;            /* a waiting thread reads replies now */
static struct batch *sleepers;  /* the other waiting threads' batches */
static _Atomic int wake_fd = -1; /* eventfd: the reader must poll anew */
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;

/* The eventfd, made by the first member opened: -1 if it cannot be made
 * now (no file descriptor left), and then the next open tries again.
 */
static int
wake_fd_make (void)
{
  int fd;

  pthread_mutex_lock (&wake_lock);
  fd = atomic_load (&wake_fd);
  if (fd == -1) {
    fd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
    atomic_store (&wake_fd, fd);
  }
  pthread_mutex_unlock (&wake_lock);
  return fd;
}

/* Take the lowest free id; -1 if all are in use. */
static int
id_take (struct nbd_member *nm)
{
  int r = -1;

  pthread_mutex_lock (&registry_lock);
  for (int i = 0; i < MAX_NBD_MEMBERS; i++)
    if (by_id[i] == NULL) {
      by_id[i] = nm;
      nm->id = i;
      nm->gen = ++last_gen;
      r = 0;
      break;
    }
  pthread_mutex_unlock (&registry_lock);
  return r;
}

/* Give the id back: the reader no longer looks at the member. */
static void
id_give_back (struct nbd_member *nm)
{
  pthread_mutex_lock (&registry_lock);
  by_id[nm->id] = NULL;
  pthread_mutex_unlock (&registry_lock);
}

/* The reader must poll anew (a new connection, or one to write on). */
static void
kick_reader (void)
{
  uint64_t one = 1;

  if (write (wake_fd, &one, sizeof one) == -1 && errno != EAGAIN)
    nbdkit_debug ("eventfd: %m");
}

static bool
conn_usable (struct nbd_handle *h)
{
  return h && nbd_aio_is_dead (h) != 1 && nbd_aio_is_closed (h) != 1;
}

/* Close m's connection if it is still the one numbered serial (any, if
 * serial is 0); conn_lock held.  libnbd ends every command on it, and
 * their free callbacks (on_free) run before this returns.
 */
static void
conn_drop (struct nbd_member *nm, uint64_t serial)
{
  if (nm->conn && (serial == 0 || serial == nm->conn_serial)) {
    if (nm->acked > nm->covered)
      atomic_store (&nm->lost_unflushed, true);
    atomic_store (&nm->conn_fd, -1);
    nbd_close (nm->conn);
    nm->conn = NULL;
  }
}

/* What the reader must watch on conn; conn_lock held. */
static void
conn_watch (struct nbd_member *nm)
{
  atomic_store (&nm->conn_fd, conn_usable (nm->conn)
                ? nbd_aio_get_fd (nm->conn) : -1);
  atomic_store (&nm->conn_wants_out, nm->conn &&
                nbd_aio_get_direction (nm->conn) & LIBNBD_AIO_DIRECTION_WRITE);
}

/* h serves m from now on; conn_lock held (or m not yet registered). */
static void
conn_publish (struct nbd_member *nm, struct nbd_handle *h)
{
  nm->conn = h;
  nm->conn_serial++;
  nm->acked = nm->covered = 0;
  conn_watch (nm);
}

/* Take lock before deadline (monotonic): 0, or -1 if it passed.
 * pthread_mutex_timedlock counts in CLOCK_REALTIME (ThreadSanitizer
 * knows it, not pthread_mutex_clocklock), so the time left is carried
 * over to that clock.
 */
static int
lock_before (pthread_mutex_t *lock, int64_t deadline)
{
  int left = ms_left (deadline);
  struct timespec ts;

  if (left == 0)
    return pthread_mutex_trylock (lock) == 0 ? 0 : -1;
  ts = now_deadline (CLOCK_REALTIME, left);
  return pthread_mutex_timedlock (lock, &ts) == 0 ? 0 : -1;
}

/* m's connection, made now if it has none or a dead one: 0 with
 * conn_lock held, or without it the request's error (member.h, Error
 * classes): ETIMEDOUT if the deadline passed while another thread's
 * attempt held connect_lock, ENODEV if the new connection showed
 * another disk (the member is failed and untrusted), ENOTCONN if none
 * could be made (refused, backing off, a check that could not be made).
 * Attempts are made one at a time (connect_lock), without conn_lock, so
 * the reader and the threads using the old connection never wait for a
 * connection attempt.  A thread waits for another's attempt only until
 * its own deadline: past it, whatever it sent would be late at once, and
 * dropping the late connection would take the other threads' commands
 * with it.
 */
static int
conn_get (struct member *m, int64_t deadline, bool *new_conn)
{
  struct nbd_member *nm = m->priv;
  struct nbd_handle *h;

  pthread_mutex_lock (&nm->conn_lock);
  if (conn_usable (nm->conn))
    return 0;
  pthread_mutex_unlock (&nm->conn_lock);

  if (lock_before (&nm->connect_lock, deadline) == -1)
    return ETIMEDOUT;
  pthread_mutex_lock (&nm->conn_lock);
  if (conn_usable (nm->conn)) { /* another thread made it meanwhile */
    pthread_mutex_unlock (&nm->connect_lock);
    return 0;
  }
  conn_drop (nm, 0);
  pthread_mutex_unlock (&nm->conn_lock);
  h = nbd_connect_checked (m, deadline);
  pthread_mutex_lock (&nm->conn_lock);
  pthread_mutex_unlock (&nm->connect_lock);
  if (h == NULL) {
    pthread_mutex_unlock (&nm->conn_lock);
    return atomic_load_explicit (&nm->untrusted, memory_order_acquire)
      ? ENODEV : ENOTCONN;
  }
  conn_publish (nm, h);
  *new_conn = true;
  return 0;
}

/* A batch: the requests of one call of nbd_io, and the thread that
 * waits for them.  Their commands end in on_reply and on_free, called by
 * libnbd in whichever thread reads the connection's replies then, which
 * is why the count and each request's end are under the batch's lock.
 */
struct batch {
  pthread_mutex_t lock;         /* flying, promoted, each request's end */
  pthread_cond_t wake;          /* flying reached 0, or promoted */
  size_t flying;                /* commands whose on_free has not run */
  bool promoted;                /* asked to read replies */
  bool reading;                 /* its thread is the reader */
  pthread_t owner;              /* its thread */
  struct batch *next, **pprev;  /* on sleepers; lf_lock */
};

/* One request: its command in flight, and what became of it. */
struct pending {
  struct member_io *io;
  struct batch *b;
  uint64_t serial;              /* the connection its command went on */
  int64_t cookie;               /* that command's, to retire it */
  uint64_t sent;                /* bytes covered by that command */
  uint64_t covers;              /* a flush: the writes acked before it */
  int error;                    /* from the reply (on_reply) */
  bool replied;                 /* on_reply ran */
  bool retire;                  /* left for take_result to retire */
  bool flying;                  /* issued, not yet ended; b->lock */
  bool ended;                   /* ended, result not yet taken */
  bool retried;                 /* already re-sent after a dead connection */
  bool timed_out;               /* its connection was dropped for it */
};

/* p's command ended: once.  The last one of the batch wakes its thread.
 * A reader sleeps in poll(2), not on the condition: it needs a kick when
 * another thread ended its commands (by closing their connection, or by
 * a send that found the connection dead); a connection closed under
 * poll(2) never wakes it.
 */
static void
command_ended (struct pending *p)
{
  struct batch *b = p->b;

  pthread_mutex_lock (&b->lock);
  if (p->flying) {
    p->flying = false;
    p->ended = true;
    if (--b->flying == 0) {
      pthread_cond_signal (&b->wake);
      if (b->reading && !pthread_equal (pthread_self (), b->owner))
        kick_reader ();
    }
  }
  pthread_mutex_unlock (&b->lock);
}

/* p's command succeeded: count it for Writes lost with their connection
 * (above).  In on_reply, under conn_lock: replies are read, and
 * connections closed, only under it.
 */
static void
count_durability (struct pending *p)
{
  const struct member_io *io = p->io;
  struct nbd_member *nm = io->member->priv;

  if (!nm->can_flush || io->op == MEMBER_READ ||
      (io->op == MEMBER_WRITE && io->fua && nm->fua_flag))
    return;                     /* nothing to make durable, or it is */
  if (io->op == MEMBER_FLUSH) {
    if (p->covers > nm->covered)
      nm->covered = p->covers;
  }
  else
    nm->acked++;
}

/* The command this thread is sending (issue_one), if any. */
static __thread struct pending *sending;

/* The reply, or libnbd giving up on the command (a dead connection).
 * Returning 1 retires the command at once, and libnbd then frees it
 * (on_free), which ends it: the usual way, with no lock or libnbd call
 * left for the batch's thread.  Except for the command this thread is
 * sending: one that ends inside the very call that sends it, on a
 * connection found dead, must not be freed there (libnbd 1.14: valgrind
 * saw nbd_aio_pread read the command it had just freed, in
 * test_member_nbd's test_flush_changed).  That one is ended here and
 * left for take_result to retire.
 */
static int
on_reply (void *user_data, int *error)
{
  struct pending *p = user_data;

  p->error = *error;
  p->replied = true;
  if (*error == 0)
    count_durability (p);
  if (p != sending)
    return 1;
  p->retire = true;
  command_ended (p);
  return 0;
}

/* The command is freed: retired, or its connection closed, or its
 * sending failed.  That ends it, unless on_reply did.  (After on_free
 * the batch's thread may return: p is not touched again.)
 */
static void
on_free (void *user_data)
{
  command_ended (user_data);
}

static int64_t
issue (struct nbd_handle *h, struct pending *p)
{
  struct member_io *io = p->io;
  struct nbd_member *nm = io->member->priv;
  uint64_t len = io->len - io->done;
  uint8_t *buf = member_io_cursor (io);
  uint64_t off = io->offset + io->done;
  nbd_completion_callback cb = {
    .callback = on_reply, .user_data = p, .free = on_free,
  };

  if (len > nm->max_command)
    len = nm->max_command;
  p->sent = len;
  switch (io->op) {
  case MEMBER_READ:
    return nbd_aio_pread (h, buf, len, off, cb, 0);
  case MEMBER_WRITE:           /* fua without the flag: see
                                  member_nbd_connect.c, Durability */
    return nbd_aio_pwrite (h, buf, len, off, cb,
                           io->fua && nm->fua_flag ? LIBNBD_CMD_FLAG_FUA : 0);
  case MEMBER_FLUSH:
    p->sent = 1;
    return nbd_aio_flush (h, cb, 0);
  case MEMBER_PUNCH:
    return nbd_aio_zero (h, len, off, cb, 0);
  default:                      /* MEMBER_ZERO */
    return nbd_aio_zero (h, len, off, cb, LIBNBD_CMD_FLAG_NO_HOLE);
  }
}

static bool
finished (const struct member_io *io)
{
  return io->err || (io->op == MEMBER_FLUSH ? io->done > 0
                     : io->done >= io->len);
}

/* Send p's next command on its member's connection.  The reader is
 * kicked when the connection is new (it must watch it) or when libnbd
 * could not send all of the command at once (it must wait for POLLOUT).
 */
static void
issue_one (struct pending *p, int64_t deadline)
{
  struct member_io *io = p->io;
  struct nbd_member *nm = io->member->priv;
  bool new_conn = false, kick;
  int64_t cookie;
  int err;

  if (atomic_load_explicit (&nm->untrusted, memory_order_acquire)) {
    io->err = ENODEV;           /* failed already, with the reason */
    return;
  }
  if (io->op == MEMBER_FLUSH && !nm->can_flush) {
    io->done = 1;               /* nothing to flush: see
                                   member_nbd_connect.c, Durability */
    return;
  }
  if ((io->op == MEMBER_PUNCH || io->op == MEMBER_ZERO) && !nm->can_zero) {
    io->err = EOPNOTSUPP;
    return;
  }
  if ((err = conn_get (io->member, deadline, &new_conn)) != 0) {
    io->err = err;
    return;
  }
  if (ms_left (deadline) == 0) { /* late already: see conn_get */
    pthread_mutex_unlock (&nm->conn_lock);
    if (new_conn)
      kick_reader ();           /* it must watch the connection */
    io->err = ETIMEDOUT;
    return;
  }
  p->serial = nm->conn_serial;
  p->covers = nm->acked;
  p->replied = p->retire = false;
  pthread_mutex_lock (&p->b->lock);
  p->flying = true;
  p->b->flying++;
  pthread_mutex_unlock (&p->b->lock);
  sending = p;
  cookie = issue (nm->conn, p);   /* on_free has run if it failed */
  sending = NULL;
  p->cookie = cookie;
  if (cookie == -1) {
    nbdkit_error ("member %s: %s", io->member->name, nbd_get_error ());
    conn_drop (nm, p->serial);
  }
  conn_watch (nm);
  kick = new_conn || atomic_load (&nm->conn_wants_out);
  pthread_mutex_unlock (&nm->conn_lock);
  if (kick)
    kick_reader ();
}

/* Take the result of p's command, which has ended.  A command lost with
 * its connection (the server went away, a protocol error) is sent again,
 * once, on a new connection: a connection that sat idle while its server
 * restarted is only found dead when used, and that is no reason to fail
 * the member.  (Re-sending is safe: reads, writes and zeroes are
 * idempotent.)  A second loss, or a timeout, fails the request.
 */
static void
take_result (struct pending *p)
{
  struct member_io *io = p->io;
  struct nbd_member *nm = io->member->priv;
  bool same, lost;

  p->ended = false;
  if (p->replied && p->error == 0 && !p->retire) {
    io->done += p->sent;        /* libnbd retired it: on_reply */
    return;
  }
  pthread_mutex_lock (&nm->conn_lock);
  same = nm->conn && nm->conn_serial == p->serial;
  if (p->retire && same)        /* else closing its connection freed it */
    nbd_aio_command_completed (nm->conn, p->cookie);
  lost = !p->replied || !same || !conn_usable (nm->conn);
  pthread_mutex_unlock (&nm->conn_lock);
  if (p->replied && p->error == 0)
    io->done += p->sent;
  else if (!lost) {              /* the server's answer: its errno */
    int e = p->error;

    nbdkit_error ("member %s: %s", io->member->name, strerror (e));
    io->err = e == EOPNOTSUPP || e == ENOTSUP ? EOPNOTSUPP : e;
  }
  else if (p->timed_out)
    io->err = ETIMEDOUT;
  else if (p->retried)
    io->err = ENOTCONN;
  else {
    nbdkit_debug ("member %s: connection lost, sending again", io->member->name);
    p->retried = true;
  }
}

/* One round of the reader, for up to wait_ms: wait until some member's
 * connection can make progress, and let libnbd make it (which ends
 * commands: on_reply, on_free).  The poll set is built from each
 * member's conn_fd and conn_wants_out alone, so the reader takes no
 * member's lock and makes no libnbd call (each takes the handle's lock,
 * which a thread sending holds) but on a connection that has something
 * to do.  What was polled is checked again under the locks: the member
 * by its generation, the connection by its socket (a socket number
 * reused by a new connection at worst costs libnbd a read that finds
 * nothing).
 */
static void
read_round (int wait_ms)
{
  struct pollfd fds[MAX_NBD_MEMBERS + 1];
  int id[MAX_NBD_MEMBERS + 1];
  uint64_t gen[MAX_NBD_MEMBERS + 1];
  size_t n = 1;

  fds[0] = (struct pollfd) { .fd = wake_fd, .events = POLLIN };
  pthread_mutex_lock (&registry_lock);
  for (int i = 0; i < MAX_NBD_MEMBERS; i++) {
    struct nbd_member *nm = by_id[i];
    int fd = nm ? atomic_load (&nm->conn_fd) : -1;

    if (fd == -1)
      continue;
    id[n] = i;
    gen[n] = nm->gen;
    fds[n++] = (struct pollfd) {
      .fd = fd,
      .events = POLLIN | (atomic_load (&nm->conn_wants_out) ? POLLOUT : 0),
    };
  }
  pthread_mutex_unlock (&registry_lock);

  if (poll (fds, n, wait_ms) <= 0)
    return;
  if (fds[0].revents & POLLIN) {
    uint64_t v;

    if (read (wake_fd, &v, sizeof v) == -1 && errno != EAGAIN)
      nbdkit_debug ("eventfd: %m");
  }
  pthread_mutex_lock (&registry_lock);
  for (size_t j = 1; j < n; j++) {
    struct nbd_member *nm = by_id[id[j]];

    if (fds[j].revents == 0 || nm == NULL || nm->gen != gen[j])
      continue;                 /* closed meanwhile */
    pthread_mutex_lock (&nm->conn_lock);
    if (nm->conn && atomic_load (&nm->conn_fd) == fds[j].fd) {
      if (notify (nm->conn, fds[j].revents) == -1)
        nbdkit_debug ("member %s: connection lost: %s", nm->uri,
                      nbd_get_error ());
      conn_watch (nm);
    }
    pthread_mutex_unlock (&nm->conn_lock);
  }
  pthread_mutex_unlock (&registry_lock);
}

static bool
batch_done (struct batch *b)
{
  bool done;

  pthread_mutex_lock (&b->lock);
  done = b->flying == 0;
  pthread_mutex_unlock (&b->lock);
  return done;
}

/* Read replies, for every batch, until b's last command ended (0) or
 * the deadline (-1).
 */
static int
read_for (struct batch *b, int64_t deadline)
{
  int r = 0;

  pthread_mutex_lock (&b->lock);
  b->reading = true;
  pthread_mutex_unlock (&b->lock);
  while (!batch_done (b)) {
    int left = ms_left (deadline);

    if (left == 0) {
      r = -1;
      break;
    }
    read_round (left);
  }
  pthread_mutex_lock (&b->lock);
  b->reading = false;
  pthread_mutex_unlock (&b->lock);
  return r;
}

/* Sleep until b's last command ended, b is promoted, or the deadline. */
static void
sleep_for (struct batch *b, int64_t deadline)
{
  pthread_mutex_lock (&b->lock);
  while (b->flying > 0 && !b->promoted) {
    int left = ms_left (deadline);
    struct timespec ts;

    if (left == 0)
      break;
    ts = now_deadline (CLOCK_MONOTONIC, left);
    pthread_cond_timedwait (&b->wake, &b->lock, &ts);
  }
  b->promoted = false;
  pthread_mutex_unlock (&b->lock);
}

/* No thread reads: wake a sleeping one to take the role; lf_lock held. */
static void
promote_one (void)
{
  struct batch *w = sleepers;

  if (reading || w == NULL)
    return;
  pthread_mutex_lock (&w->lock);
  w->promoted = true;
  pthread_cond_signal (&w->wake);
  pthread_mutex_unlock (&w->lock);
}

static void
sleepers_add (struct batch *b)
{
  b->next = sleepers;
  if (b->next)
    b->next->pprev = &b->next;
  b->pprev = &sleepers;
  sleepers = b;
}

static void
sleepers_remove (struct batch *b)
{
  *b->pprev = b->next;
  if (b->next)
    b->next->pprev = b->pprev;
}

/* Wait until no command of b is in flight (0), or the deadline (-1),
 * bounded by one clock read at each step (ms_left).  See Connections
 * above: the thread reads replies itself if no other thread does; else
 * it sleeps until its batch ends or the reader, done, hands it the role.
 */
static int
batch_wait (struct batch *b, int64_t deadline)
{
  int r = 0;

  pthread_mutex_lock (&lf_lock);
  while (!batch_done (b)) {
    if (ms_left (deadline) == 0) {
      r = -1;
      break;
    }
    if (!reading) {
      reading = true;
      pthread_mutex_unlock (&lf_lock);
      r = read_for (b, deadline);
      pthread_mutex_lock (&lf_lock);
      reading = false;
      promote_one ();
      if (r == -1)
        break;
      continue;
    }
    sleepers_add (b);
    pthread_mutex_unlock (&lf_lock);
    sleep_for (b, deadline);
    pthread_mutex_lock (&lf_lock);
    sleepers_remove (b);
  }
  promote_one ();               /* if it was handed the role, done */
  pthread_mutex_unlock (&lf_lock);
  return r;
}

/* The deadline passed: drop every connection that still has one of p's
 * commands (with everything else on it, whose threads re-send them), so
 * that a hung server cannot hang clients.
 */
static void
drop_late (struct pending *p, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    struct nbd_member *nm = p[i].io->member->priv;
    bool late;

    pthread_mutex_lock (&p[i].b->lock);
    late = p[i].flying;
    pthread_mutex_unlock (&p[i].b->lock);
    if (!late)
      continue;
    p[i].timed_out = true;
    nbdkit_error ("member %s: no reply in %d ms, dropping the connection",
                  p[i].io->member->name, member_nbd_timeout_ms);
    pthread_mutex_lock (&nm->conn_lock);
    conn_drop (nm, p[i].serial);
    pthread_mutex_unlock (&nm->conn_lock);
  }
}

/* Run n requests, with p (zeroed, n long) to track them. */
static void
run_batch (struct member_io **ios, size_t n, struct pending *p)
{
  int64_t deadline = now_ms () + member_nbd_timeout_ms;
  struct batch b = { .owner = pthread_self () };

  now_cond_init (&b.wake);
  pthread_mutex_init (&b.lock, NULL);
  for (size_t i = 0; i < n; i++) {
    p[i].io = ios[i];
    p[i].b = &b;
  }

  for (;;) {
    bool busy = false;

    for (size_t i = 0; i < n; i++)
      if (!finished (ios[i]) && !p[i].flying && ms_left (deadline) > 0) {
        issue_one (&p[i], deadline);
        busy = true;
      }
    if (!busy)
      break;
    if (batch_wait (&b, deadline) == -1) {
      drop_late (p, n);
      batch_wait (&b, deadline);  /* the drops ended them */
    }
    for (size_t i = 0; i < n; i++)
      if (p[i].ended)
        take_result (&p[i]);
  }
  /* Whatever did not complete failed: never report a short transfer.
   * Only the deadline leaves a request unfinished here (the loop sends
   * again whatever ended unfinished while there is time), so it is the
   * member-timeout's error: the member, not its medium.
   */
  for (size_t i = 0; i < n; i++)
    if (!finished (ios[i]))
      ios[i]->err = ETIMEDOUT;
  pthread_cond_destroy (&b.wake);
  pthread_mutex_destroy (&b.lock);
}


/* The whole batch at once, or, if its list cannot be allocated, in
 * pieces of STACK_PENDING from the stack (see Shortages above).
 */
static int
nbd_io (struct member_io **ios, size_t n)
{
  struct pending stack[STACK_PENDING];
  struct pending *p;

  p = n > STACK_PENDING ? calloc (n, sizeof *p) : NULL;
  if (p) {
    run_batch (ios, n, p);
    free (p);
    return 0;
  }
  for (size_t i = 0; i < n; i += STACK_PENDING) {
    size_t k = n - i < STACK_PENDING ? n - i : STACK_PENDING;

    memset (stack, 0, k * sizeof stack[0]);
    run_batch (ios + i, k, stack);
  }
  return 0;
}

static void
nbd_member_close (struct member *m)
{
  struct nbd_member *nm = m->priv;

  id_give_back (nm);
  if (nm->conn)
    nbd_close (nm->conn);
  if (nm->sentinel)
    nbd_close (nm->sentinel);
  pthread_mutex_destroy (&nm->connect_lock);
  pthread_mutex_destroy (&nm->conn_lock);
  pthread_mutex_destroy (&nm->sentinel_lock);
  pthread_mutex_destroy (&nm->backoff_lock);
  free (nm->export_name);
  free (nm->uri);
  free (nm);
  free (m->name);
  free (m);
}

static const struct member_ops nbd_ops = {
  .kind = "nbd",
  .io = nbd_io,
  .same = nbd_connect_same,
  .vouch = nbd_connect_vouch,
  .close = nbd_member_close,
};

bool
member_is_uri (const char *name)
{
  return strncmp (name, "nbd://", 6) == 0 || strncmp (name, "nbds://", 7) == 0 ||
    strncmp (name, "nbd+", 4) == 0 || strncmp (name, "nbds+", 5) == 0;
}

/* Connect once to learn the size, what the server can do and where it
 * is (nbd_connect_at_open); that connection stays open as the sentinel
 * (or, without multi-conn, as the shared connection).  With multi-conn,
 * the connection that serves comes later, made by the first request
 * (conn_get).
 */
struct member *
member_nbd_open (const char *uri)
{
  struct member *m = calloc (1, sizeof *m);
  struct nbd_member *nm = calloc (1, sizeof *nm);
  struct nbd_handle *h = NULL;

  if (m == NULL || nm == NULL || (m->name = strdup (uri)) == NULL ||
      (nm->uri = strdup (uri)) == NULL) {
    nbdkit_error ("calloc: %m");
    goto err;
  }
  if (wake_fd_make () == -1) {
    nbdkit_error ("member %s: cannot make an eventfd for its replies: %m",
                  uri);
    goto err;
  }
  h = nbd_connect_at_open (m, nm, uri);
  if (h == NULL)
    goto err;
  /* Ready before the id publishes it to the reader. */
  pthread_mutex_init (&nm->connect_lock, NULL);
  pthread_mutex_init (&nm->conn_lock, NULL);
  pthread_mutex_init (&nm->sentinel_lock, NULL);
  pthread_mutex_init (&nm->backoff_lock, NULL);
  atomic_store (&nm->conn_fd, -1);
  if (nm->multi_conn)
    nm->sentinel = h;
  else
    conn_publish (nm, h);
  if (id_take (nm) == -1) {
    nbdkit_error ("member %s: too many NBD members open (at most %d)",
                  uri, MAX_NBD_MEMBERS);
    pthread_mutex_destroy (&nm->connect_lock);
    pthread_mutex_destroy (&nm->conn_lock);
    pthread_mutex_destroy (&nm->sentinel_lock);
    pthread_mutex_destroy (&nm->backoff_lock);
    goto err;
  }
  m->ops = &nbd_ops;
  m->priv = nm;
  return m;

 err:
  if (h)
    nbd_close (h);
  if (nm) {
    free (nm->export_name);
    free (nm->uri);
  }
  if (m)
    free (m->name);
  free (nm);
  free (m);
  return NULL;
}
