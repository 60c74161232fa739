/* SPDX-License-Identifier: BSD-3-Clause */
/* The NBD backend's connections: making one, and checking that it
 * reaches the member's disk before anything is sent on it.  The
 * connection made at open learns what the server is and offers (the
 * size, block sizes, flush, FUA, write zeroes, multi-conn, where it
 * leads); every later one is refused for a while after a failed attempt
 * (Backoff), and compared with what was learned at open and checked for
 * the member's identity (Identity).  Aliases: whether two members are one
 * export.  member_nbd.c, the backend and its request engine, decides when
 * a connection is needed (conn_get) and uses it; this file uses nothing
 * of that file (member_nbd_internal.h is what the two share).
 *
 * Backoff.  Reconnection backs off: after a failed attempt, further
 * attempts are refused for a delay that doubles from 100 ms up to 5 s, so
 * a dead server costs an immediate error rather than a connect timeout per
 * request.  Except for an attempt that ran out of time having begun with
 * less than half of `timeout` left (a request that spent the rest
 * elsewhere): that says little of the server, and backing off would fail
 * the other threads' requests, with their members, for nothing.
 *
 * Identity.  A new connection may lead to another disk than the one the
 * array knows as the member (a server restarted over another disk, or
 * replaced by another), and that disk must never be read or written as
 * the member (docs/design.md, "Trust boundaries and identity").  Every
 * new connection is checked before anything is sent on it: the same
 * size as at open, a minimum block size the member's alignment covers,
 * writable; and then
 *  - if the array gave the member an identity (member.h: md arrays give
 *    the member's superblock, with its set UUID, device UUID, dev_number
 *    and a lower bound for its event count), the range it names is read
 *    on the new connection and the array's callback judges it.  This
 *    file never parses what it reads.  A range of up to 4 KiB (md's
 *    superblock) is read into a stack buffer (member_nbd.c, Shortages
 *    are not member failures).
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
 * A member that lost acknowledged writes no flush covered is failed at
 * its next connection, unless the sentinel proves that the server is the
 * instance that acknowledged them (member_nbd.c, Writes lost with their
 * connection).
 * A member that fails a check is failed with the reason (member_fail_
 * because), and no request is sent to it again (untrusted: its requests
 * fail with ENODEV, the member's going away in member.h's Error
 * classes).  A check that cannot be made (a timeout, a read error) is a
 * failed connection attempt like any other (ENOTCONN): a sentinel that
 * is only slow to answer does not fail the member (sentinel_answers).
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
 * nbd_connect_same compares what the open connections lead to, never
 * the URIs: the same size, the same export name, and the same server:
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
 *    device UUID hold one dev_number, and md_assemble.c refuses two
 *    members that claim one role).
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
 * Simple replies.  Every connection asks the server for simple replies
 * (no structured replies): the backend never asks for block status, the
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
 * Locking (lock.h, 8, and member_nbd.c's essay for the backend's whole
 * order).  A connection attempt (nbd_connect_checked) is made under the
 * member's connect_lock, which conn_get takes, and never under its
 * conn_lock, so the reader (which takes conn_lock under registry_lock)
 * never waits for one.  sentinel_lock and backoff_lock are taken under
 * connect_lock at most, never together.  The identity callback may run
 * under connect_lock (and md_array.c's lock) and takes only its own.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <libnbd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "member.h"
#include "member_nbd_internal.h"
#include "now.h"

#define MAX_COMMAND (32 * 1024 * 1024)
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define IDENTITY_STACK 4096     /* identity ranges read without malloc */

_Atomic int member_nbd_timeout_ms = 30000; /* member_nbd_internal.h */

void
member_nbd_set_timeout (int ms)
{
  member_nbd_timeout_ms = ms;
}

static short
poll_events (struct nbd_handle *h)
{
  unsigned int dir = nbd_aio_get_direction (h);

  return (dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
    (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0);
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
 * prove they survived (see member_nbd.c, Writes lost with their
 * connection):
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
/* A new, checked connection to m, unless backing off after a recent
 * failure.  NULL: none, and m untrusted if the check failed for good
 * (conn_get tells its caller which, member.h's Error classes).
 */
struct nbd_handle *
nbd_connect_checked (struct member *m, int64_t deadline)
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

  if (h == NULL && budget < member_nbd_timeout_ms / 2 &&
      ms_left (deadline) == 0) {
    nbdkit_error ("member %s: %s (the attempt had %d ms left of its "
                  "request's %d)", m->name, why, budget,
                  member_nbd_timeout_ms);
    return NULL;                /* no backoff: see Backoff above */
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
 * is, into m and nm: what every later connection is compared with.  The
 * connection, or NULL (nbdkit_error).
 */
struct nbd_handle *
nbd_connect_at_open (struct member *m, struct nbd_member *nm,
                     const char *uri)
{
  struct nbd_handle *h;
  char why[512];
  int64_t size;

  h = connect_uri (uri, now_ms () + member_nbd_timeout_ms, why, sizeof why);
  if (h == NULL) {
    nbdkit_error ("member %s: %s", uri, why);
    return NULL;
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
  return h;

 err:
  nbd_close (h);
  return NULL;
}

bool
nbd_connect_same (const struct member *a, const struct member *b)
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
int
nbd_connect_vouch (struct member *old, struct member *b, char *why,
                   size_t whylen)
{
  struct nbd_member *nb = b->priv;
  struct nbd_handle *h = nb->multi_conn ? nb->sentinel : nb->conn;

  if (h == NULL) {
    snprintf (why, whylen, "it has no connection to check");
    return -1;
  }
  return check_same_server (old, h, now_ms () + member_nbd_timeout_ms, why,
                            whylen) == 0 ? 0 : -1;
}
