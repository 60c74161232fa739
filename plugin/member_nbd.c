/* The NBD backend: members that are remote NBD exports, through libnbd.
 *
 * Connections.  When the server advertises multi-conn (a flush on one
 * connection covers writes made on all of them, and all connections see
 * one disk), each nbdkit worker thread gets its own connection to the
 * member, opened on first use and closed when the thread exits.  A thread
 * then drives its connections itself with libnbd's aio calls and poll(2):
 * no lock, no helper thread, and one request per busy thread in flight on
 * every member, like nbdkit's own nbd plugin with several connections.
 * Without multi-conn there is one shared connection per member, and a
 * thread holds the member's mutex while its batch is on that connection
 * (so a flush is never sent while another thread's writes are unflushed
 * on some other connection).
 *
 * Failures.  A connection that dies (the server went away, a protocol
 * error) is closed; the requests on it fail with EIO and the next request
 * reconnects.  Reconnection backs off: after a failed attempt, further
 * attempts are refused for a delay that doubles from 100 ms up to 5 s, so
 * a dead server costs an immediate error rather than a connect timeout per
 * request.  A batch that is not complete after `timeout` (the plugin's
 * member-timeout parameter) is abandoned: its connections are closed and
 * its requests fail with EIO, so a hung server cannot hang clients.
 *
 * PUNCH and ZERO are NBD_CMD_WRITE_ZEROES (with and without the may-trim
 * flag): a plain NBD trim need not read back as zeroes, so it is never used.
 */

#include <config.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libnbd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "member.h"

#define MAX_NBD_MEMBERS 256
#define MAX_COMMAND (32 * 1024 * 1024)
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000

struct nbd_member {
  int id;                       /* index into a thread's connections */
  char *uri;
  bool multi_conn, can_zero;
  pthread_mutex_t lock;         /* the shared connection's batches */
  struct nbd_handle *shared;    /* without multi-conn */
  pthread_mutex_t backoff_lock; /* the two fields below */
  uint64_t retry_after_ms;      /* no connection attempt before this */
  unsigned int backoff_ms;
};

static int timeout_ms = 30000;
static int next_id;

/* A thread's connections, indexed by nbd_member.id. */
struct thread_conns {
  struct nbd_handle *h[MAX_NBD_MEMBERS];
};
static pthread_key_t conns_key;
static pthread_once_t conns_once = PTHREAD_ONCE_INIT;

static void
conns_free (void *p)
{
  struct thread_conns *t = p;

  for (int i = 0; i < MAX_NBD_MEMBERS; i++)
    if (t->h[i])
      nbd_close (t->h[i]);
  free (t);
}

static void
conns_key_create (void)
{
  pthread_key_create (&conns_key, conns_free);
}

void
member_nbd_set_timeout (int ms)
{
  timeout_ms = ms;
}

static uint64_t
now_ms (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * UINT64_C (1000) + ts.tv_nsec / 1000000;
}

/* Connect and handshake within timeout_ms: a server that accepts but
 * never answers must not hang the request that needed it.
 */
static struct nbd_handle *
connect_uri (const char *uri)
{
  struct nbd_handle *h = nbd_create ();
  uint64_t deadline = now_ms () + timeout_ms;

  if (h == NULL)
    return NULL;
  if (nbd_aio_connect_uri (h, uri) == -1)
    goto fail;
  while (nbd_aio_is_connecting (h) == 1) {
    unsigned int dir = nbd_aio_get_direction (h);
    struct pollfd pfd = {
      .fd = nbd_aio_get_fd (h),
      .events = (dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
                (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0),
    };
    uint64_t t = now_ms ();
    int r;

    if (t >= deadline) {
      nbdkit_error ("%s: no handshake in %d ms", uri, timeout_ms);
      goto fail;
    }
    r = poll (&pfd, 1, deadline - t);
    if (r == -1 && errno != EINTR)
      goto fail;
    if (r > 0 &&
        ((pfd.revents & (POLLIN | POLLHUP | POLLERR)) ? nbd_aio_notify_read (h)
         : nbd_aio_notify_write (h)) == -1)
      goto fail;
  }
  if (nbd_aio_is_ready (h) == 1)
    return h;

 fail:
  nbd_close (h);
  return NULL;
}

/* Connect, unless backing off after a recent failure.  NULL: EIO. */
static struct nbd_handle *
member_connect (struct nbd_member *nm, const char *name)
{
  struct nbd_handle *h;
  uint64_t t = now_ms ();
  bool backing_off;

  pthread_mutex_lock (&nm->backoff_lock);
  backing_off = t < nm->retry_after_ms;
  pthread_mutex_unlock (&nm->backoff_lock);
  if (backing_off)
    return NULL;

  h = connect_uri (nm->uri);
  pthread_mutex_lock (&nm->backoff_lock);
  if (h)
    nm->backoff_ms = 0;
  else {
    nm->backoff_ms = nm->backoff_ms ? 2 * nm->backoff_ms : BACKOFF_MIN_MS;
    if (nm->backoff_ms > BACKOFF_MAX_MS)
      nm->backoff_ms = BACKOFF_MAX_MS;
    nm->retry_after_ms = now_ms () + nm->backoff_ms;
    nbdkit_error ("member %s: %s (retrying in %u ms at the earliest)",
                  name, nbd_get_error (), nm->backoff_ms);
  }
  pthread_mutex_unlock (&nm->backoff_lock);
  return h;
}

/* The slot holding this thread's connection to m. */
static struct nbd_handle **
conn_slot (struct member *m)
{
  struct nbd_member *nm = m->priv;
  struct thread_conns *t;

  if (!nm->multi_conn)
    return &nm->shared;
  pthread_once (&conns_once, conns_key_create);
  t = pthread_getspecific (conns_key);
  if (t == NULL) {
    t = calloc (1, sizeof *t);
    if (t == NULL)
      return NULL;
    pthread_setspecific (conns_key, t);
  }
  return &t->h[nm->id];
}

/* One request in flight: which connection, which command. */
struct pending {
  struct member_io *io;
  struct nbd_handle **slot;
  int64_t cookie;               /* 0: none in flight */
  uint64_t sent;                /* bytes covered by the command in flight */
  bool retried;                 /* already re-sent after a dead connection */
};

static int64_t
issue (struct nbd_handle *h, struct member_io *io, uint64_t *sent)
{
  uint64_t len = io->len - io->done;
  uint8_t *buf = (uint8_t *) io->buf + io->done;
  uint64_t off = io->offset + io->done;

  if (len > MAX_COMMAND)
    len = MAX_COMMAND;
  *sent = len;
  switch (io->op) {
  case MEMBER_READ:
    return nbd_aio_pread (h, buf, len, off, NBD_NULL_COMPLETION, 0);
  case MEMBER_WRITE:
    return nbd_aio_pwrite (h, buf, len, off, NBD_NULL_COMPLETION,
                           io->fua ? LIBNBD_CMD_FLAG_FUA : 0);
  case MEMBER_FLUSH:
    *sent = 1;
    return nbd_aio_flush (h, NBD_NULL_COMPLETION, 0);
  case MEMBER_PUNCH:
    return nbd_aio_zero (h, len, off, NBD_NULL_COMPLETION, 0);
  default:                      /* MEMBER_ZERO */
    return nbd_aio_zero (h, len, off, NBD_NULL_COMPLETION,
                         LIBNBD_CMD_FLAG_NO_HOLE);
  }
}

static bool
finished (const struct member_io *io)
{
  return io->err || (io->op == MEMBER_FLUSH ? io->done > 0
                     : io->done >= io->len);
}

/* Drop a connection.  What was on it is sent again, once, on a new
 * connection: a connection that sat idle while its server restarted is
 * only found dead when used, and that is no reason to fail the member.
 * (Re-sending is safe: reads, writes and zeroes are idempotent.)  A second
 * death, or a timeout (retry false), fails the requests.
 */
static void
kill_conn (struct pending *p, size_t n, struct nbd_handle **slot, bool retry)
{
  nbd_close (*slot);
  for (size_t i = 0; i < n; i++)
    if (p[i].slot == slot && !finished (p[i].io)) {
      if (retry && !p[i].retried)
        p[i].retried = true;
      else
        p[i].io->err = EIO;
      p[i].cookie = 0;
    }
  *slot = NULL;
}

/* Send the next command of every request that has none in flight. */
static void
issue_all (struct pending *p, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    struct member_io *io = p[i].io;

    if (p[i].cookie || finished (io))
      continue;
    if (*p[i].slot == NULL)
      *p[i].slot = member_connect (io->member->priv, io->member->name);
    if (*p[i].slot == NULL) {
      io->err = EIO;
      continue;
    }
    if (io->op == MEMBER_PUNCH || io->op == MEMBER_ZERO) {
      if (!((struct nbd_member *) io->member->priv)->can_zero) {
        io->err = EOPNOTSUPP;
        continue;
      }
    }
    p[i].cookie = issue (*p[i].slot, io, &p[i].sent);
    if (p[i].cookie == -1) {
      nbdkit_error ("member %s: %s", io->member->name, nbd_get_error ());
      kill_conn (p, n, p[i].slot, true);
    }
  }
}

/* Collect completions; true while something is still in flight. */
static bool
reap_all (struct pending *p, size_t n)
{
  bool busy = false;

  for (size_t i = 0; i < n; i++) {
    int r;

    if (p[i].cookie == 0) {
      busy |= !finished (p[i].io);      /* waiting to be (re-)sent */
      continue;
    }
    r = nbd_aio_command_completed (*p[i].slot, p[i].cookie);
    if (r == 0) {
      busy = true;
      continue;
    }
    p[i].cookie = 0;
    if (r == 1)
      p[i].io->done += p[i].sent;
    else if (nbd_aio_is_dead (*p[i].slot) || nbd_aio_is_closed (*p[i].slot)) {
      nbdkit_debug ("member %s: connection lost: %s", p[i].io->member->name,
                    nbd_get_error ());
      kill_conn (p, n, p[i].slot, true);
    }
    else {
      int e = nbd_get_errno ();

      nbdkit_error ("member %s: %s", p[i].io->member->name, nbd_get_error ());
      p[i].io->err = e == EOPNOTSUPP || e == ENOTSUP ? EOPNOTSUPP : EIO;
    }
    if (!finished (p[i].io))
      busy = true;
  }
  return busy;
}

/* Wait until some connection can make progress, and let libnbd make it. */
static int
poll_conns (struct pending *p, size_t n, int wait_ms)
{
  struct pollfd fds[2 * MAX_NBD_MEMBERS];
  struct nbd_handle **slots[2 * MAX_NBD_MEMBERS];
  size_t nfds = 0;

  for (size_t i = 0; i < n && nfds < 2 * MAX_NBD_MEMBERS; i++) {
    bool seen = false;

    if (p[i].cookie == 0)
      continue;
    for (size_t j = 0; j < nfds; j++)
      seen |= slots[j] == p[i].slot;
    if (seen)
      continue;
    unsigned int dir = nbd_aio_get_direction (*p[i].slot);
    slots[nfds] = p[i].slot;
    fds[nfds++] = (struct pollfd) {
      .fd = nbd_aio_get_fd (*p[i].slot),
      .events = (dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
                (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0),
    };
  }
  if (nfds == 0)
    return 0;                   /* only re-issues are due */
  if (poll (fds, nfds, wait_ms) == -1)
    return errno == EINTR ? 0 : -1;
  for (size_t j = 0; j < nfds; j++) {
    struct nbd_handle *h = *slots[j];
    int r = 0;

    if (fds[j].revents & (POLLIN | POLLHUP | POLLERR))
      r = nbd_aio_notify_read (h);
    else if (fds[j].revents & POLLOUT)
      r = nbd_aio_notify_write (h);
    if (r == -1 || nbd_aio_is_dead (h))
      kill_conn (p, n, slots[j], true);
  }
  return 0;
}

/* Lock the shared connections of the batch's members, in id order. */
static void
lock_shared (struct member_io **ios, size_t n, bool lock)
{
  for (int id = 0; id < next_id; id++)
    for (size_t i = 0; i < n; i++) {
      struct nbd_member *nm = ios[i]->member->priv;

      if (nm->id == id && !nm->multi_conn) {
        if (lock)
          pthread_mutex_lock (&nm->lock);
        else
          pthread_mutex_unlock (&nm->lock);
        break;
      }
    }
}

static int
nbd_io (struct member_io **ios, size_t n)
{
  struct pending *p = calloc (n, sizeof *p);
  uint64_t deadline = now_ms () + timeout_ms;

  if (p == NULL) {
    for (size_t i = 0; i < n; i++)
      ios[i]->err = ENOMEM;
    return -1;
  }
  lock_shared (ios, n, true);
  for (size_t i = 0; i < n; i++) {
    p[i].io = ios[i];
    p[i].slot = conn_slot (ios[i]->member);
    if (p[i].slot == NULL)
      ios[i]->err = ENOMEM;
  }

  for (;;) {
    issue_all (p, n);
    if (!reap_all (p, n))
      break;
    if (now_ms () >= deadline) {
      for (size_t i = 0; i < n; i++)
        if (p[i].cookie) {
          nbdkit_error ("member %s: no reply in %d ms, dropping the connection",
                        ios[i]->member->name, timeout_ms);
          kill_conn (p, n, p[i].slot, false);
        }
      break;
    }
    if (poll_conns (p, n, deadline - now_ms ()) == -1)
      break;
  }
  /* Whatever did not complete failed: never report a short transfer. */
  for (size_t i = 0; i < n; i++)
    if (!finished (ios[i]))
      ios[i]->err = EIO;
  lock_shared (ios, n, false);
  free (p);
  return 0;
}

static void
nbd_member_close (struct member *m)
{
  struct nbd_member *nm = m->priv;

  if (nm->shared)
    nbd_close (nm->shared);
  pthread_mutex_destroy (&nm->lock);
  pthread_mutex_destroy (&nm->backoff_lock);
  free (nm->uri);
  free (nm);
  free (m->name);
  free (m);
}

static const struct member_ops nbd_ops = {
  .kind = "nbd",
  .io = nbd_io,
  .close = nbd_member_close,
};

bool
member_is_uri (const char *name)
{
  return strncmp (name, "nbd://", 6) == 0 || strncmp (name, "nbds://", 7) == 0 ||
    strncmp (name, "nbd+", 4) == 0 || strncmp (name, "nbds+", 5) == 0;
}

/* Connect once to learn the size and what the server can do; the
 * connections that serve come later, per thread.
 */
struct member *
member_nbd_open (const char *uri)
{
  struct member *m = calloc (1, sizeof *m);
  struct nbd_member *nm = calloc (1, sizeof *nm);
  struct nbd_handle *h = NULL;
  int64_t size;

  if (m == NULL || nm == NULL || (m->name = strdup (uri)) == NULL ||
      (nm->uri = strdup (uri)) == NULL) {
    nbdkit_error ("calloc: %m");
    goto err;
  }
  if (next_id == MAX_NBD_MEMBERS) {
    nbdkit_error ("member %s: too many NBD members", uri);
    goto err;
  }
  h = connect_uri (uri);
  if (h == NULL) {
    nbdkit_error ("member %s: %s", uri, nbd_get_error ());
    goto err;
  }
  if (nbd_is_read_only (h) == 1) {
    nbdkit_error ("member %s: the server exports it read-only", uri);
    goto err;
  }
  size = nbd_get_size (h);
  if (size == -1) {
    nbdkit_error ("member %s: %s", uri, nbd_get_error ());
    goto err;
  }
  nm->id = next_id++;
  nm->multi_conn = nbd_can_multi_conn (h) == 1;
  nm->can_zero = nbd_can_zero (h) == 1;
  m->can_fua = nbd_can_fua (h) == 1;
  pthread_mutex_init (&nm->lock, NULL);
  pthread_mutex_init (&nm->backoff_lock, NULL);
  nbd_close (h);
  m->ops = &nbd_ops;
  m->size = size;
  m->priv = nm;
  return m;

 err:
  if (h)
    nbd_close (h);
  if (nm)
    free (nm->uri);
  if (m)
    free (m->name);
  free (nm);
  free (m);
  return NULL;
}

bool
member_nbd_same (const struct member *a, const struct member *b)
{
  return strcmp (((struct nbd_member *) a->priv)->uri,
                 ((struct nbd_member *) b->priv)->uri) == 0;
}
