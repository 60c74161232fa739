/* SPDX-License-Identifier: BSD-3-Clause */
/* The NBD backend's insides, shared by its two files (member.h is what
 * the rest of the plugin sees):
 *
 *   member_nbd_connect.c  making a connection and checking it before it
 *                         is used: the connection made at open and what
 *                         the server offered then, backoff, identity and
 *                         the sentinel, aliases
 *   member_nbd.c          the backend: open and close, the registry of
 *                         open members, each member's serving connection,
 *                         and the request engine (batches of commands, the
 *                         reader of replies, timeouts)
 *
 * member_nbd.c uses member_nbd_connect.c, never the other way: a new
 * connection is made and checked without knowing how requests run on
 * it, and handed over only once it is the member's.  Both work on one
 * struct nbd_member: member_nbd_connect.c fills in, at open, what every
 * later connection is compared with, and owns the sentinel and the
 * backoff; member_nbd.c owns the serving connection and the registry.
 * Locks: lock.h, 8 (both files' essays say who takes which).
 */

#ifndef RAID_MEMBER_NBD_INTERNAL_H
#define RAID_MEMBER_NBD_INTERNAL_H

#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <libnbd.h>

#include "member.h"
#include "now.h"

/* Where a connection leads: see member_nbd_connect.c, Aliases. */
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
                                   covered (see member_nbd.c, Writes lost
                                   with their connection) */
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

/* The plugin's member-timeout (member_nbd_set_timeout): how long a batch
 * may take, its connection attempts included, and the connection made
 * at open.  Set at load; atomic for tests that change it under I/O.
 */
extern _Atomic int member_nbd_timeout_ms;

/* Milliseconds until deadline, for poll(2): one clock read, never
 * negative (poll would wait forever), 0 once it has passed.
 */
static inline int
ms_left (int64_t deadline)
{
  int64_t left = deadline - now_ms ();

  return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int) left;
}

/* Let libnbd act on what poll(2) saw on h's socket. */
static inline int
notify (struct nbd_handle *h, short revents)
{
  if (revents & (POLLIN | POLLHUP | POLLERR))
    return nbd_aio_notify_read (h);
  if (revents & POLLOUT)
    return nbd_aio_notify_write (h);
  return 0;
}

/* member_nbd_connect.c */
struct nbd_handle *nbd_connect_at_open (struct member *m,
                                        struct nbd_member *nm,
                                        const char *uri);
struct nbd_handle *nbd_connect_checked (struct member *m, int64_t deadline);
bool nbd_connect_same (const struct member *a, const struct member *b);
int nbd_connect_vouch (struct member *old, struct member *b, char *why,
                       size_t whylen);

#endif /* RAID_MEMBER_NBD_INTERNAL_H */
