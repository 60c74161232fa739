/* SPDX-License-Identifier: BSD-3-Clause */
/* The NBD backend: members that are remote NBD exports, through libnbd.
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
 * meanwhile is never touched.
 *
 * Shortages are not member failures.  A member fails when its server or
 * its disk fails, never because this process ran short, so nothing on the
 * I/O path fails a request for want of memory: a batch whose list of
 * requests cannot be allocated runs in pieces of STACK_PENDING from the
 * stack (slower: each piece waits for the one before), the batch and its
 * wait live on the stack, and an identity range of up to 4 KiB (md's
 * superblock) is read into a stack buffer.  (libnbd's own allocations can
 * still fail a connection attempt or a command, which is then sent again
 * on a new connection.)
 *
 * Failures.  A connection that dies (the server went away, a protocol
 * error) is closed; the requests on it are sent again, once, on a new
 * connection.  Reconnection backs off: after a failed attempt, further
 * attempts are refused for a delay that doubles from 100 ms up to 5 s, so
 * a dead server costs an immediate error rather than a connect timeout per
 * request.  Except for an attempt that ran out of time having begun with
 * less than half of `timeout` left (a request that spent the rest
 * elsewhere): that says little of the server, and backing off would fail
 * the other threads' requests, with their members, for nothing.  A batch
 * that is not complete after `timeout` (the plugin's member-timeout
 * parameter) is abandoned: the connection of each late
 * request is closed, with every command on it (the other threads send
 * theirs again, once, on a new connection), and the batch's unfinished
 * requests fail with EIO, so a hung server cannot hang clients.  The time
 * left is computed from one clock read, signed, and never negative (a
 * negative timeout would make poll(2) wait forever).
 *
 * Identity (design.md section 8).  Every new connection is checked before
 * anything is sent on it: the same size as at open, a minimum block size
 * the member's alignment covers, writable; and then
 *  - if the array gave the member an identity (member.h: md arrays give
 *    the member's superblock, with its set UUID, device UUID, dev_number
 *    and a lower bound for its event count), the range it names is read
 *    on the new connection and the array's callback judges it.  This
 *    file never parses what it reads.
 *  - otherwise the new connection must reach the same server instance as
 *    the connection made at open, which is kept for that: the sentinel.
 *    The new connection must lead to the same server endpoint (below),
 *    and the sentinel must answer a request sent after the new
 *    connection's handshake.  A server that was restarted, or replaced
 *    by another, has closed the sentinel, and then nothing proves that
 *    the server holds the member's data: the member fails, and the
 *    operator replaces it.  Without multi-conn the sentinel is the
 *    serving connection itself, so such a member never reconnects
 *    without an identity.  (A server that drops idle connections thus
 *    fails raw members at their next new connection: the price of not
 *    trusting a disk nobody vouches for.)  Once a member has an identity,
 *    its sentinel is closed.
 * A member that fails a check is failed with the reason (member_fail_
 * because), and no request is sent to it again (untrusted).  A check that
 * cannot be made (a timeout, a read error) is a failed connection attempt
 * like any other: a sentinel that is only slow to answer does not fail
 * the member (sentinel_answers).
 *
 * Why a sentinel rather than a mark written on the disk: every byte of a
 * raw member belongs to the array's data (any header would move the data
 * and make the members unreadable to anything else), and a mark the
 * server keeps (an export description, say) is only a name.  A live
 * connection to the same process is evidence of the disk; a restart is
 * exactly the case where that evidence is lost and data may not be there
 * (an empty memory disk, a different file).  md arrays have a real
 * identity on the disk, so they reconnect across restarts.
 *
 * Aliases.  Two URIs can name one export (nbd://localhost:P and
 * nbd://127.0.0.1:P; two spellings of one socket path), and two members
 * that are one disk would silently destroy the redundancy.  So
 * nbd_same compares what the open connections lead to, never the
 * URIs: the same size, the same export name, and the same server:
 *  - Unix sockets: the server process, from the connection's peer
 *    credentials (SO_PEERCRED).  That is a property of the connection, not
 *    of the path, so symlinks, "/./", relative paths and bind mounts all
 *    lead to one pid; stat(2) on the path would see the name at another
 *    moment than the connection, and a renamed or re-bound socket file
 *    would fool it.  One nbdkit process serves one socket.
 *  - TCP: the numeric peer address and port of the connection (so two host
 *    names of one address match), with every loopback address (127/8, ::1,
 *    IPv4-mapped) taken as one: localhost resolves to ::1 or 127.0.0.1
 *    depending on the resolver, and a server on a loopback port usually
 *    listens on both.  Two different servers on two loopback addresses
 *    with one port number are then refused as aliases: the safe mistake.
 *    One server reached through a loopback and a non-loopback address
 *    (nbd://$(hostname):P, where the name resolves to a LAN address) is
 *    not recognised; nor are two servers
 *    exporting one file, or one server that ignores export names reached
 *    under two, which only md superblocks can tell (two members with one
 *    device UUID hold one dev_number, and md_array.c refuses two members
 *    that claim one role).
 *  - Other transports (vsock): no alias detection.
 * A new connection's endpoint is compared the same way to the sentinel's.
 *
 * Durability.  A server that does not offer flush (no NBD_FLAG_SEND_FLUSH;
 * nbdkit's plugins without a flush method, say) promises nothing beyond a
 * completed write: the protocol forbids sending it a flush, and libnbd
 * refuses one.  So its member's flushes complete at once without a
 * command (as nbdkit's own nbd plugin sends no flush its server cannot
 * take), and the member counts as able to make single writes durable
 * (can_fua), which then go without the FUA flag: there is nothing more to
 * ask of it.  Said once, when the member is opened.  A server that offers
 * flush but not FUA gets can_fua false, and the array flushes it instead
 * (member.h).  A new connection must offer what the array was told at
 * open: flush exactly as then (a server that gained a cache must get
 * flushes), FUA and write zeroes if it did then; else the server has
 * changed under the member, which is failed.
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
 * without flush, is durable once acknowledged and not counted.
 *
 * Simple replies.  Every connection asks the server for simple replies
 * (no structured replies): this file never asks for block status, the
 * one thing that needs them, and a read's structured reply costs the
 * reader two more recv(2) calls (the rest of the chunk header, then the
 * offset) before the data.  Measured on this project's 2-core test
 * machine (AMD EPYC, Zen 5): RAID-6 of six nbdkit memory servers, fio's
 * nbd engine, 4 KiB random writes at qd32, four rounds in alternation:
 * the array's CPU per client write 240/311/255/204 us with structured
 * replies, 224/283/191/182 us without; IOPS 2560/2057/2486/2955 against
 * 2667/2301/3118/3228.  A server that answers a failed read with data
 * after a simple reply's error (the protocol forbids it) breaks the
 * stream; libnbd finds the next reply's magic wrong and the connection
 * dies, which fails requests, never reads data.
 *
 * PUNCH and ZERO are NBD_CMD_WRITE_ZEROES (with and without the may-trim
 * flag): a plain NBD trim need not read back as zeroes, so it is never used.
 * Commands are at most 32 MiB, or the server's maximum block size.
 *
 * Locking order (lock.h, 8): lf_lock, then registry_lock, then a
 * member's connect_lock, then its conn_lock, then a batch's lock;
 * sentinel_lock and backoff_lock are taken under connect_lock at most;
 * wake_lock under none.
 * libnbd's handle lock sits between conn_lock and a batch's lock:
 * on_reply and on_free run inside libnbd's calls.  A connection attempt
 * holds connect_lock but not conn_lock, so the reader (which takes
 * conn_lock under registry_lock) never waits for one.  The identity
 * callback may run under connect_lock (and md_array.c's lock) and takes
 * only its own.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <libnbd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "member.h"
#include "now.h"

#define MAX_NBD_MEMBERS 256
#define MAX_COMMAND (32 * 1024 * 1024)
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define STACK_PENDING 64        /* requests per piece without memory */
#define IDENTITY_STACK 4096     /* identity ranges read without malloc */

/* Where a connection leads: see Aliases above. */
struct endpoint {
  int family;                   /* AF_UNIX, AF_INET6 (IPv4 mapped), or 0:
                                   unknown */
  pid_t pid;                    /* AF_UNIX: the server process */
  uint8_t addr[16];             /* TCP: the server, loopback as ::1 */
  uint16_t port;
};

struct nbd_member {
  int id;                       /* slot in the registry (by_id) */
  uint64_t gen;                 /* unique to this member, never reused */
  char *uri;
  char *export_name;
  struct endpoint server;       /* of the connection made at open */
  bool multi_conn, can_zero;
  bool can_flush;               /* the server takes NBD_CMD_FLUSH */
  bool fua_flag;                /* the server takes NBD_CMD_FLAG_FUA */
  uint64_t max_command;         /* bytes per command */
  _Atomic bool untrusted;       /* failed an identity check: no more I/O;
                                   atomic */
  pthread_mutex_t connect_lock; /* one connection attempt at a time */
  pthread_mutex_t conn_lock;    /* the four fields below, and every call
                                   on conn (never held while connecting) */
  struct nbd_handle *conn;      /* the connection that serves, shared by
                                   every thread; NULL: none yet */
  uint64_t conn_serial;         /* counts the connections made */
  uint64_t acked, covered;      /* on conn: writes acknowledged, and how
                                   many of the first of them a flush
                                   covered (see Writes lost with their
                                   connection above) */
  _Atomic bool lost_unflushed;  /* a connection was lost with acknowledged
                                   writes no flush covered */
  _Atomic int conn_fd;          /* conn's socket, -1 if none or dead, and */
  _Atomic bool conn_wants_out;  /* whether libnbd waits to write on it:
                                   what the reader polls; written under
                                   conn_lock, read without (atomic) */
  pthread_mutex_t sentinel_lock; /* the four fields below, and its use */
  struct nbd_handle *sentinel;  /* with multi-conn, until an identity */
  const char *sentinel_lost;    /* why there is none, if there is none */
  int64_t probe;                /* the sentinel's unanswered probe, or 0 */
  uint8_t probe_buf[MEMBER_MAX_ALIGN]; /* what it reads into */
  pthread_mutex_t backoff_lock; /* the two fields below */
  int64_t retry_after_ms;       /* no connection attempt before this */
  unsigned int backoff_ms;
};

static _Atomic int timeout_ms = 30000; /* set at load; atomic for tests
                                           that change it under I/O */

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

void
member_nbd_set_timeout (int ms)
{
  timeout_ms = ms;
}

/* Milliseconds until deadline, for poll(2): one clock read, never
 * negative (poll would wait forever), 0 once it has passed.
 */
static int
ms_left (int64_t deadline)
{
  int64_t left = deadline - now_ms ();

  return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int) left;
}

/* The time ms milliseconds from now on clock, for the pthread calls
 * that wait until a time.
 */
static void
time_from_now (clockid_t clock, int ms, struct timespec *ts)
{
  clock_gettime (clock, ts);
  ts->tv_sec += ms / 1000;
  ts->tv_nsec += ms % 1000 * 1000000L;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

static short
poll_events (struct nbd_handle *h)
{
  unsigned int dir = nbd_aio_get_direction (h);

  return (dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
    (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0);
}

static int
notify (struct nbd_handle *h, short revents)
{
  if (revents & (POLLIN | POLLHUP | POLLERR))
    return nbd_aio_notify_read (h);
  if (revents & POLLOUT)
    return nbd_aio_notify_write (h);
  return 0;
}

/* Wait until h can make progress, and let libnbd make it.  -1 if the
 * deadline has passed or the connection failed.
 */
static int
step (struct nbd_handle *h, int64_t deadline)
{
  struct pollfd pfd = { .fd = nbd_aio_get_fd (h), .events = poll_events (h) };
  int left = ms_left (deadline), r;

  if (left == 0 || pfd.fd == -1)
    return -1;
  r = poll (&pfd, 1, left);
  if (r == -1)
    return errno == EINTR ? 0 : -1;
  return r == 0 ? 0 : notify (h, pfd.revents);
}

/* Run the command `cookie` on h to its end, or until deadline.  1: it
 * succeeded; 0: the server answered it with an error; -1: no answer (the
 * connection died or the deadline passed).
 */
static int
finish_command (struct nbd_handle *h, int64_t cookie, int64_t deadline)
{
  if (cookie == -1)
    return -1;
  for (;;) {
    int r = nbd_aio_command_completed (h, cookie);

    if (r == 1)
      return 1;
    if (r == -1)
      return nbd_aio_is_dead (h) == 1 || nbd_aio_is_closed (h) == 1 ? -1 : 0;
    if (step (h, deadline) == -1)
      return -1;
  }
}

/* Connect and handshake before deadline: a server that accepts but never
 * answers must not hang the request that needed it.  NULL with why.
 */
static struct nbd_handle *
connect_uri (const char *uri, int64_t deadline, char *why, size_t whylen)
{
  struct nbd_handle *h = nbd_create ();
  int budget = ms_left (deadline);

  if (h == NULL) {
    snprintf (why, whylen, "%s", nbd_get_error ());
    return NULL;
  }
  /* See Simple replies above. */
  if (nbd_set_request_structured_replies (h, false) == -1 ||
      nbd_aio_connect_uri (h, uri) == -1)
    goto fail;
  while (nbd_aio_is_connecting (h) == 1)
    if (step (h, deadline) == -1) {
      if (ms_left (deadline) == 0) {
        snprintf (why, whylen, "no handshake in %d ms", budget);
        nbd_close (h);
        return NULL;
      }
      goto fail;
    }
  if (nbd_aio_is_ready (h) == 1)
    return h;

 fail:
  snprintf (why, whylen, "%s", nbd_get_error ());
  nbd_close (h);
  return NULL;
}

static bool
is_loopback (const uint8_t *a)
{
  static const uint8_t v6[16] = { [15] = 1 };
  static const uint8_t v4_mapped[12] = { [10] = 0xff, [11] = 0xff };

  return memcmp (a, v6, 16) == 0 ||
    (memcmp (a, v4_mapped, 12) == 0 && a[12] == 127);
}

static void
endpoint_of (struct nbd_handle *h, struct endpoint *e)
{
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  int fd = nbd_aio_get_fd (h);

  memset (e, 0, sizeof *e);
  if (fd == -1 || getpeername (fd, (struct sockaddr *) &ss, &len) == -1)
    return;
  if (ss.ss_family == AF_UNIX) {
    struct ucred cred;
    socklen_t n = sizeof cred;

    if (getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &n) == 0 &&
        cred.pid > 0) {
      e->family = AF_UNIX;
      e->pid = cred.pid;
    }
  }
  else if (ss.ss_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *) &ss;

    e->family = AF_INET6;
    e->addr[10] = e->addr[11] = 0xff;
    memcpy (e->addr + 12, &in->sin_addr, 4);
    e->port = ntohs (in->sin_port);
  }
  else if (ss.ss_family == AF_INET6) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) &ss;

    e->family = AF_INET6;
    memcpy (e->addr, &in6->sin6_addr, 16);
    e->port = ntohs (in6->sin6_port);
  }
  if (e->family == AF_INET6 && is_loopback (e->addr)) {
    memset (e->addr, 0, 16);
    e->addr[15] = 1;
  }
}

/* Whether a and b are known to be one server. */
static bool
same_server (const struct endpoint *a, const struct endpoint *b)
{
  if (a->family == 0 || a->family != b->family)
    return false;
  if (a->family == AF_UNIX)
    return a->pid == b->pid;
  return a->port == b->port && memcmp (a->addr, b->addr, 16) == 0;
}

static void
describe_endpoint (const struct endpoint *e, char *s, size_t n)
{
  if (e->family == AF_UNIX)
    snprintf (s, n, "server process %d", (int) e->pid);
  else if (e->family == AF_INET6) {
    char a[64] = "";

    for (int i = 0; i < 16; i += 2)
      snprintf (a + strlen (a), sizeof a - strlen (a), "%s%x", i ? ":" : "",
                e->addr[i] << 8 | e->addr[i + 1]);
    snprintf (s, n, "[%s]:%u", a, e->port);
  }
  else
    snprintf (s, n, "an unknown server");
}

/* The member's data cannot be trusted on h: fail it for good. */
static void
distrust (struct member *m, const char *why)
{
  struct nbd_member *nm = m->priv;
  char msg[640];

  atomic_store_explicit (&nm->untrusted, true, memory_order_release);
  snprintf (msg, sizeof msg, "a new connection is not the member's disk: %s",
            why);
  member_fail_because (m, msg);
}

/* The sentinel is gone: the server was restarted or replaced (or the
 * connection made at open broke).  sentinel_lock held.
 */
static void
sentinel_lose (struct nbd_member *nm)
{
  nbd_close (nm->sentinel);     /* with its probe, if one is in flight */
  nm->sentinel = NULL;
  nm->probe = 0;
  nm->sentinel_lost = "its server was restarted or replaced (the "
    "connection made at open is gone), and without md metadata nothing "
    "proves that the server still holds its data: replace the member";
}

/* Does the sentinel answer a request sent now, before deadline?  1 yes;
 * 0 it is gone (sentinel_lose); -1 not yet.  A slow server is not a lost
 * one: a probe that gets no answer in time stays in flight, and the next
 * attempt waits for it before it sends one of its own, so a server that
 * was only busy never costs the member its sentinel, and probes never
 * pile up.  sentinel_lock held.
 */
static int
sentinel_answers (struct member *m, int64_t deadline)
{
  struct nbd_member *nm = m->priv;

  while (nm->sentinel) {
    bool fresh = nm->probe == 0;

    if (fresh)
      nm->probe = nbd_aio_pread (nm->sentinel, nm->probe_buf, m->align, 0,
                                 NBD_NULL_COMPLETION, 0);
    if (finish_command (nm->sentinel, nm->probe, deadline) != -1) {
      nm->probe = 0;            /* answered, even with an error */
      if (fresh)
        return 1;
      continue;                 /* an earlier attempt's: send one now */
    }
    if (nm->probe == -1)        /* could not be sent */
      nm->probe = 0;
    if (nbd_aio_is_dead (nm->sentinel) == 1 ||
        nbd_aio_is_closed (nm->sentinel) == 1)
      sentinel_lose (nm);
    else
      return -1;
  }
  return 0;
}

/* After its handshake, is new connection h to the server of the
 * sentinel, and does the sentinel still answer?  0 yes, -1 no answer
 * yet (why), -2 no (why).
 */
static int
check_same_server (struct member *m, struct nbd_handle *h, int64_t deadline,
                   char *why, size_t whylen)
{
  struct nbd_member *nm = m->priv;
  struct endpoint e;
  int r = 0;

  if (!nm->multi_conn) {
    snprintf (why, whylen, "its only connection was lost (the server offers "
              "no multi-conn), and without md metadata nothing proves that "
              "the server still holds its data");
    return -2;
  }
  pthread_mutex_lock (&nm->sentinel_lock);
  switch (sentinel_answers (m, deadline)) {
  case 0:
    snprintf (why, whylen, "%s", nm->sentinel_lost);
    r = -2;
    break;
  case -1:
    snprintf (why, whylen, "the connection made at open did not answer in "
              "time, so the new connection cannot be checked yet");
    r = -1;
    break;
  }
  endpoint_of (h, &e);
  if (r == 0 && nm->server.family != 0 && !same_server (&e, &nm->server)) {
    char was[128], now[128];

    describe_endpoint (&nm->server, was, sizeof was);
    describe_endpoint (&e, now, sizeof now);
    snprintf (why, whylen, "it reached %s, not %s as at open", now, was);
    r = -2;
  }
  pthread_mutex_unlock (&nm->sentinel_lock);
  return r;
}

/* Read the member's identity range on h and let the array judge it.
 * 0 it is the member, -1 it could not be read, -2 it is not the member.
 */
static int
check_identity (struct member *m, struct member_identity *id,
                struct nbd_handle *h, int64_t deadline, char *why,
                size_t whylen)
{
  struct nbd_member *nm = m->priv;
  uint8_t stack_buf[IDENTITY_STACK];  /* md's superblock fits: no malloc */
  void *buf = id->len <= sizeof stack_buf ? stack_buf : malloc (id->len);
  const char *bad;
  uint64_t begun;
  int r;

  if (buf == NULL) {
    snprintf (why, whylen, "out of memory");
    return -1;
  }
  begun = id->begin ? id->begin (id) : 0;
  r = finish_command (h, nbd_aio_pread (h, buf, id->len, id->offset,
                                        NBD_NULL_COMPLETION, 0), deadline);
  if (r != 1) {
    snprintf (why, whylen, "cannot read its identity at offset %" PRIu64
              ": %s", id->offset, r == 0 ? nbd_get_error () : "no answer");
    if (buf != stack_buf)
      free (buf);
    return -1;
  }
  bad = id->verify (id, begun, buf, why, whylen);
  if (buf != stack_buf)
    free (buf);
  if (bad) {
    if (bad != why)
      snprintf (why, whylen, "%s", bad);
    return -2;
  }
  /* The identity replaces the sentinel for good. */
  pthread_mutex_lock (&nm->sentinel_lock);
  if (nm->sentinel) {
    nbd_close (nm->sentinel);
    nm->sentinel = NULL;
    nm->probe = 0;
    nm->sentinel_lost = "its sentinel was closed";
  }
  pthread_mutex_unlock (&nm->sentinel_lock);
  return 0;
}

/* What new connection h lacks, or has in excess, of what the array was
 * told at open and relies on (see Durability above); NULL if nothing.
 * Gaining FUA or write zeroes changes nothing; gaining flush does: the
 * member's flushes would be skipped on a server that now wants them.
 */
static const char *
changed_features (const struct nbd_member *nm, struct nbd_handle *h)
{
  bool flush = nbd_can_flush (h) == 1;

  if (flush != nm->can_flush)
    return flush ? "its server now offers flush, which it did not at open"
      : "its server no longer offers flush";
  if (nm->fua_flag && nbd_can_fua (h) != 1)
    return "its server no longer offers FUA";
  if (nm->can_zero && nbd_can_zero (h) != 1)
    return "its server no longer offers write zeroes";
  return NULL;
}

/* Whether m lost acknowledged writes no flush covered, with nothing to
 * prove they survived (see Writes lost with their connection above):
 * true with why.  by_identity: h was checked by m's identity, which says
 * which disk it is, not whether that disk kept its cache; otherwise the
 * sentinel proved h reaches the server instance that holds them.
 */
static bool
lost_unflushed_unproven (struct member *m, bool by_identity, char *why,
                         size_t whylen)
{
  struct nbd_member *nm = m->priv;

  if (!atomic_load (&nm->lost_unflushed))
    return false;
  if (!by_identity) {
    atomic_store (&nm->lost_unflushed, false);
    return false;
  }
  snprintf (why, whylen, "writes it acknowledged on a connection that was "
            "lost were never flushed, and nothing proves that its server "
            "still holds them");
  return true;
}

/* Is new connection h to m's disk (see Identity above)?  0 yes; -1 the
 * check could not be made (why); -2 no: m is failed.
 */
static int
check_conn (struct member *m, struct nbd_handle *h, int64_t deadline,
            char *why, size_t whylen)
{
  struct member_identity *id = member_identity (m);
  int64_t size = nbd_get_size (h);
  int64_t min = nbd_get_block_size (h, LIBNBD_SIZE_MINIMUM);
  const char *changed = changed_features (m->priv, h);
  int r;

  if (size == -1) {
    snprintf (why, whylen, "%s", nbd_get_error ());
    return -1;
  }
  if ((uint64_t) size != m->size) {
    snprintf (why, whylen, "it has %" PRId64 " bytes, not %" PRIu64,
              size, m->size);
    r = -2;
  }
  else if (min > m->align) {
    snprintf (why, whylen, "its minimum block size is %" PRId64 " bytes, not "
              "%" PRIu32, min, m->align);
    r = -2;
  }
  else if (nbd_is_read_only (h) == 1 && !member_read_only) {
    snprintf (why, whylen, "it is exported read-only");
    r = -2;
  }
  else if (changed) {
    snprintf (why, whylen, "%s", changed);
    r = -2;
  }
  else if (id)
    r = check_identity (m, id, h, deadline, why, whylen);
  else
    r = check_same_server (m, h, deadline, why, whylen);
  if (r == 0 && lost_unflushed_unproven (m, id != NULL, why, whylen))
    r = -2;
  if (r == -2)
    distrust (m, why);
  return r;
}

/* The reader must poll anew (a new connection, or one to write on). */
static void
kick_reader (void)
{
  uint64_t one = 1;

  if (write (wake_fd, &one, sizeof one) == -1 && errno != EAGAIN)
    nbdkit_debug ("eventfd: %m");
}

/* A new, checked connection to m, unless backing off after a recent
 * failure.  NULL: EIO.
 */
static struct nbd_handle *
member_connect (struct member *m, int64_t deadline)
{
  struct nbd_member *nm = m->priv;
  struct nbd_handle *h;
  char why[512];
  bool backing_off;
  int budget, r = -1;

  pthread_mutex_lock (&nm->backoff_lock);
  backing_off = now_ms () < nm->retry_after_ms;
  pthread_mutex_unlock (&nm->backoff_lock);
  if (backing_off)
    return NULL;

  budget = ms_left (deadline);
  h = connect_uri (nm->uri, deadline, why, sizeof why);
  if (h)
    r = check_conn (m, h, deadline, why, sizeof why);
  if (r != 0 && h) {
    nbd_close (h);
    h = NULL;
  }
  if (r == -2)
    return NULL;                /* failed for good, and logged */

  if (h == NULL && budget < timeout_ms / 2 && ms_left (deadline) == 0) {
    nbdkit_error ("member %s: %s (the attempt had %d ms left of its "
                  "request's %d)", m->name, why, budget, timeout_ms);
    return NULL;                /* no backoff: see Failures above */
  }
  pthread_mutex_lock (&nm->backoff_lock);
  if (h)
    nm->backoff_ms = 0;
  else {
    nm->backoff_ms = nm->backoff_ms ? 2 * nm->backoff_ms : BACKOFF_MIN_MS;
    if (nm->backoff_ms > BACKOFF_MAX_MS)
      nm->backoff_ms = BACKOFF_MAX_MS;
    nm->retry_after_ms = now_ms () + nm->backoff_ms;
    nbdkit_error ("member %s: %s (retrying in %u ms at the earliest)",
                  m->name, why, nm->backoff_ms);
  }
  pthread_mutex_unlock (&nm->backoff_lock);
  return h;
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
  time_from_now (CLOCK_REALTIME, left, &ts);
  return pthread_mutex_timedlock (lock, &ts) == 0 ? 0 : -1;
}

/* m's connection, made now if it has none or a dead one: 0 with
 * conn_lock held, or -1 (EIO) without it.  Attempts are made one at a
 * time (connect_lock), without conn_lock, so the reader and the threads
 * using the old connection never wait for a connection attempt.  A
 * thread waits for another's attempt only until its own deadline: past
 * it, whatever it sent would be late at once, and dropping the late
 * connection would take the other threads' commands with it.
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
    return -1;
  pthread_mutex_lock (&nm->conn_lock);
  if (conn_usable (nm->conn)) { /* another thread made it meanwhile */
    pthread_mutex_unlock (&nm->connect_lock);
    return 0;
  }
  conn_drop (nm, 0);
  pthread_mutex_unlock (&nm->conn_lock);
  h = member_connect (m, deadline);
  pthread_mutex_lock (&nm->conn_lock);
  pthread_mutex_unlock (&nm->connect_lock);
  if (h == NULL) {
    pthread_mutex_unlock (&nm->conn_lock);
    return -1;
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
  case MEMBER_WRITE:           /* fua without the flag: see Durability */
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

  if (atomic_load_explicit (&nm->untrusted, memory_order_acquire)) {
    io->err = EIO;
    return;
  }
  if (io->op == MEMBER_FLUSH && !nm->can_flush) {
    io->done = 1;               /* nothing to flush: see Durability */
    return;
  }
  if ((io->op == MEMBER_PUNCH || io->op == MEMBER_ZERO) && !nm->can_zero) {
    io->err = EOPNOTSUPP;
    return;
  }
  if (conn_get (io->member, deadline, &new_conn) == -1) {
    io->err = EIO;
    return;
  }
  if (ms_left (deadline) == 0) { /* late already: see conn_get */
    pthread_mutex_unlock (&nm->conn_lock);
    if (new_conn)
      kick_reader ();           /* it must watch the connection */
    io->err = EIO;
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
  else if (!lost) {
    int e = p->error;

    nbdkit_error ("member %s: %s", io->member->name, strerror (e));
    io->err = e == EOPNOTSUPP || e == ENOTSUP ? EOPNOTSUPP : EIO;
  }
  else if (p->timed_out || p->retried)
    io->err = EIO;
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
    time_from_now (CLOCK_MONOTONIC, left, &ts);
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
                  p[i].io->member->name, timeout_ms);
    pthread_mutex_lock (&nm->conn_lock);
    conn_drop (nm, p[i].serial);
    pthread_mutex_unlock (&nm->conn_lock);
  }
}

/* Run n requests, with p (zeroed, n long) to track them. */
static void
run_batch (struct member_io **ios, size_t n, struct pending *p)
{
  int64_t deadline = now_ms () + timeout_ms;
  struct batch b = { .owner = pthread_self () };
  pthread_condattr_t ca;

  pthread_condattr_init (&ca);
  pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
  pthread_cond_init (&b.wake, &ca);
  pthread_condattr_destroy (&ca);
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
  /* Whatever did not complete failed: never report a short transfer. */
  for (size_t i = 0; i < n; i++)
    if (!finished (ios[i]))
      ios[i]->err = EIO;
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

static bool nbd_same (const struct member *a, const struct member *b);
static int nbd_vouch (struct member *old, struct member *b, char *why,
                      size_t whylen);

static const struct member_ops nbd_ops = {
  .kind = "nbd",
  .io = nbd_io,
  .same = nbd_same,
  .vouch = nbd_vouch,
  .close = nbd_member_close,
};

bool
member_is_uri (const char *name)
{
  return strncmp (name, "nbd://", 6) == 0 || strncmp (name, "nbds://", 7) == 0 ||
    strncmp (name, "nbd+", 4) == 0 || strncmp (name, "nbds+", 5) == 0;
}

/* What the server says about block sizes; -1 (nbdkit_error) if the
 * array cannot honour its minimum.
 */
static int
take_block_sizes (struct member *m, struct nbd_member *nm,
                  struct nbd_handle *h)
{
  int64_t min = nbd_get_block_size (h, LIBNBD_SIZE_MINIMUM);
  int64_t max = nbd_get_block_size (h, LIBNBD_SIZE_MAXIMUM);

  if (min <= 0)                 /* none advertised */
    min = 1;
  if (min > MEMBER_MAX_ALIGN || (min & (min - 1))) {
    nbdkit_error ("member %s: the server's minimum block size is %" PRId64
                  " bytes: members need a power of two of at most %d",
                  m->name, min, MEMBER_MAX_ALIGN);
    return -1;
  }
  m->align = min;
  nm->max_command = MAX_COMMAND;
  if (max >= min && max < MAX_COMMAND)
    nm->max_command = max / min * min;
  return 0;
}

/* Connect once to learn the size, what the server can do and where it
 * is; that connection stays open as the sentinel (or, without
 * multi-conn, as the shared connection).  The connections that serve
 * come later, per thread.
 */
struct member *
member_nbd_open (const char *uri)
{
  struct member *m = calloc (1, sizeof *m);
  struct nbd_member *nm = calloc (1, sizeof *nm);
  struct nbd_handle *h = NULL;
  char why[512];
  int64_t size;

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
  h = connect_uri (uri, now_ms () + timeout_ms, why, sizeof why);
  if (h == NULL) {
    nbdkit_error ("member %s: %s", uri, why);
    goto err;
  }
  if (nbd_is_read_only (h) == 1 && !member_read_only) {
    nbdkit_error ("member %s: the server exports it read-only", uri);
    goto err;
  }
  size = nbd_get_size (h);
  nm->export_name = nbd_get_export_name (h);
  if (size == -1 || nm->export_name == NULL) {
    nbdkit_error ("member %s: %s", uri, nbd_get_error ());
    goto err;
  }
  m->size = size;
  if (take_block_sizes (m, nm, h) == -1)
    goto err;
  endpoint_of (h, &nm->server);
  nm->multi_conn = nbd_can_multi_conn (h) == 1;
  nm->can_zero = nbd_can_zero (h) == 1;
  nm->can_flush = nbd_can_flush (h) == 1;
  nm->fua_flag = nbd_can_fua (h) == 1;
  m->can_fua = nm->fua_flag || !nm->can_flush;
  if (!nm->can_flush)
    nbdkit_error ("member %s: its server does not offer flush, so it promises "
                  "nothing beyond a completed write: the array sends it no "
                  "flushes, and its writes are as durable as the server "
                  "makes them", uri);
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

static bool
nbd_same (const struct member *a, const struct member *b)
{
  const struct nbd_member *na = a->priv, *nb = b->priv;

  return a->size == b->size && same_server (&na->server, &nb->server) &&
    strcmp (na->export_name, nb->export_name) == 0;
}

/* A raw array's re-add: b, just opened by failed member old's URI, holds
 * old's data if it reached the server instance old's sentinel is still
 * connected to, as a reconnection of old would have to (see Identity
 * above): a server restarted or replaced since has closed the sentinel.
 * b's connection made at open is the new connection.
 */
static int
nbd_vouch (struct member *old, struct member *b, char *why, size_t whylen)
{
  struct nbd_member *nb = b->priv;
  struct nbd_handle *h = nb->multi_conn ? nb->sentinel : nb->conn;

  if (h == NULL) {
    snprintf (why, whylen, "it has no connection to check");
    return -1;
  }
  return check_same_server (old, h, now_ms () + timeout_ms, why,
                            whylen) == 0 ? 0 : -1;
}
