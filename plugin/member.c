/* SPDX-License-Identifier: BSD-3-Clause */
/* One member: its state, the "missing" member, and the dispatch of
 * member I/O batches to the backends; see member.h.  The table of an
 * array's members is member_table.c's.
 */

#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "md_badblocks.h"
#include "member.h"

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

/* A member that is not there: no device (the member's going away, in
 * member.h's classes, never its medium's).
 */
static int
missing_io (struct member_io **ios, size_t n)
{
  for (size_t i = 0; i < n; i++)
    ios[i]->err = ENODEV;
  return -1;
}

static void
missing_close (struct member *m)
{
  free (m->name);
  free (m);
}

static const struct member_ops missing_ops = {
  .kind = "missing",
  .io = missing_io,
  .close = missing_close,
};

static uint64_t
new_serial (void)
{
  static _Atomic uint64_t next = 1;

  return atomic_fetch_add_explicit (&next, 1, memory_order_relaxed);
}

struct member *
member_missing (void)
{
  struct member *m = calloc (1, sizeof *m);

  if (m == NULL || (m->name = strdup ("missing")) == NULL) {
    nbdkit_error ("calloc: %m");
    free (m);
    return NULL;
  }
  m->ops = &missing_ops;
  m->serial = new_serial ();
  m->size = UINT64_MAX;
  m->align = 1;
  m->readd_whole_from = UINT64_MAX;
  atomic_init (&m->state, MEMBER_FAILED);
  return m;
}

void
member_fail_because (struct member *m, const char *why)
{
  enum member_state old = atomic_exchange (&m->state, MEMBER_FAILED);

  if (old != MEMBER_FAILED) {
    m->failed_at_row = old == MEMBER_REBUILDING ?
      member_recovery_stripe (m) : UINT64_MAX;
    snprintf (m->fail_reason, sizeof m->fail_reason, "%s", why);
    m->fail_time = time (NULL);
    atomic_store_explicit (&m->fail_recorded, true, memory_order_release);
    nbdkit_error ("member %s failed (%s): it is not used again unless "
                  "re-added or replaced", m->name, why);
  }
}

bool
member_failure (const struct member *m, const char **why, int64_t *when)
{
  if (!atomic_load_explicit (&m->fail_recorded, memory_order_acquire))
    return false;
  *why = m->fail_reason;
  *when = m->fail_time;
  return true;
}

/* member.h's table of error classes. */
bool
member_error_is_media (enum member_op op, int err)
{
  switch (err) {
  case EIO:                     /* the medium's: the member answers */
  case ENODATA:
  case EILSEQ:
  case MEMBER_ESHORT:
    return op != MEMBER_FLUSH;  /* a flush names no sector */
  case ENOTCONN:                /* the member going away */
  case ETIMEDOUT:
  case ENODEV:
  case ENXIO:
  case ESHUTDOWN:
  case ECONNRESET:
  case ECONNREFUSED:
  case EPIPE:
    return false;
  default:                      /* unlisted: the safe side (member.h) */
    return false;
  }
}

const char *
member_strerror (int err)
{
  if (err == MEMBER_ESHORT)
    return "short transfer: the member ends before the request";
  return strerror (err);
}

void
member_fail (struct member *m, int err)
{
  member_fail_because (m, member_strerror (err));
}

void
member_start_rebuild (struct member *m, uint64_t from_stripe)
{
  atomic_store (&m->recovery_stripe, from_stripe);
  atomic_store (&m->state, MEMBER_REBUILDING);
}

void
member_rebuilt_to (struct member *m, uint64_t stripe)
{
  atomic_store_explicit (&m->recovery_stripe, stripe, memory_order_release);
}

void
member_rebuilt (struct member *m)
{
  enum member_state expected = MEMBER_REBUILDING;

  atomic_compare_exchange_strong (&m->state, &expected, MEMBER_IN_SYNC);
}

bool
member_set_identity (struct member *m, struct member_identity *id)
{
  struct member_identity *none = NULL;

  if (atomic_compare_exchange_strong_explicit (&m->identity, &none, id,
                                               memory_order_release,
                                               memory_order_relaxed))
    return true;
  id->free (id);
  return false;
}

bool member_read_only;

void
member_set_read_only (void)
{
  member_read_only = true;
}

void
member_opened (struct member *m)
{
  m->serial = new_serial ();
  m->readd_whole_from = UINT64_MAX;
  if (m->align == 0)            /* the file backend leaves it to us */
    m->align = m->direct ? MEMBER_MAX_ALIGN : 1;
}

void
member_close (struct member *m)
{
  struct member_identity *id;

  if (m == NULL)
    return;
  id = member_identity (m);
  if (id)
    id->free (id);
  free (m->open_name);
  md_badblocks_free (m->bad_blocks);
  m->ops->close (m);
}

bool
member_same (const struct member *a, const struct member *b)
{
  return a->ops == b->ops && a->ops->same && a->ops->same (a, b);
}

int
member_vouch (struct member *old, struct member *m, char *why, size_t whylen)
{
  if (!member_same (old, m)) {
    snprintf (why, whylen, "nothing proves it is the failed member's disk: "
              "it is not the same %s member (without md metadata a file is known by "
              "its device and inode, an NBD export by its server process or "
              "address and its export name)", old->ops->kind == m->ops->kind
              ? m->ops->kind : "kind of");
    return -1;
  }
  return old->ops->vouch ? old->ops->vouch (old, m, why, whylen) : 0;
}

bool
member_hole (struct member *m, uint64_t offset, uint64_t len)
{
  return m->ops->hole && m->ops->hole (m, offset, len) == 1;
}

void
member_data_run (struct member *m, uint64_t offset, uint64_t end,
                 uint64_t *data, uint64_t *stop)
{
  *data = offset;
  *stop = end;
  if (m->ops->data_run) {
    m->ops->data_run (m, offset, end, data, stop);
    /* A backend's answer is a hint: keep it inside the contract. */
    if (*data < offset || *data > end)
      *data = offset;
    if (*data == end)
      *stop = end;
    else if (*stop <= *data || *stop > end)
      *stop = end;
  }
}

/* Hand each backend the requests for its members, in one call each, so
 * that a backend can keep its whole share in flight at once.  If a large
 * batch's list cannot be allocated, the shares go in 64 at a time: slower,
 * but a shortage of memory is never reported as an error of a member.
 * Each request is then counted on its member (member.io), failed or not.
 */
#define STACK_SHARE 64

int
member_io_run (struct member_io *ios, size_t n)
{
  struct member_io *stack_share[STACK_SHARE];
  struct member_io **share = stack_share;
  size_t cap = STACK_SHARE;
  int first_err = 0;

  if (n > cap && (share = malloc (n * sizeof *share)) != NULL)
    cap = n;
  else
    share = stack_share;

  for (size_t i = 0; i < n; i++)
    ios[i].err = -1;            /* not yet run */

  for (size_t i = 0; i < n; i++) {
    const struct member_ops *ops;
    size_t k = 0;

    if (ios[i].err != -1)
      continue;
    ops = ios[i].member->ops;
    for (size_t j = i; j < n; j++)
      if (ios[j].err == -1 && ios[j].member->ops == ops) {
        ios[j].err = 0;
        ios[j].done = 0;
        share[k++] = &ios[j];
        if (k == cap) {
          ops->io (share, k);
          k = 0;
        }
      }
    if (k)
      ops->io (share, k);
  }

  for (size_t i = 0; i < n; i++) {
    static const enum member_count count_of[] = {
      [MEMBER_READ] = MEMBER_COUNT_READ, [MEMBER_WRITE] = MEMBER_COUNT_WRITE,
      [MEMBER_FLUSH] = MEMBER_COUNT_FLUSH, [MEMBER_PUNCH] = MEMBER_COUNT_ZERO,
      [MEMBER_ZERO] = MEMBER_COUNT_ZERO,
    };

    io_count_add (&ios[i].member->io[count_of[ios[i].op]],
                  ios[i].op == MEMBER_FLUSH ? 0 : ios[i].len, ios[i].err);
    if (ios[i].err && !first_err)
      first_err = ios[i].err;
  }
  if (share != stack_share)
    free (share);
  if (first_err) {
    errno = first_err;
    return -1;
  }
  return 0;
}

static _Atomic unsigned int max_read_errors = MEMBER_MAX_READ_ERRORS;
static pthread_mutex_t read_errors_lock = PTHREAD_MUTEX_INITIALIZER;

void
member_set_max_read_errors (unsigned int n)
{
  max_read_errors = n;
}

bool
member_read_error (struct member *m, int64_t now)
{
  unsigned int n;

  pthread_mutex_lock (&read_errors_lock);
  if (m->read_errors) {
    int64_t hours = (now - m->read_error_ms) / (3600 * 1000);

    m->read_errors = hours >= 32 ? 0 : m->read_errors >> hours;
  }
  m->read_error_ms = now;
  n = ++m->read_errors;
  pthread_mutex_unlock (&read_errors_lock);
  return n > max_read_errors;
}

