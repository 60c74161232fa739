/* SPDX-License-Identifier: BSD-3-Clause */
/* Members: the disks an array is made of, behind one small interface.
 *
 * The stripe cache and the array never know what a member is.  They
 * describe the I/O they need as a batch of struct member_io and hand the
 * whole batch to member_io_run(), which gives each backend its share at
 * once, so a stripe's reads (or writes) on all members are in flight
 * together.  A backend is a struct member_ops (an operation each: run a
 * batch, say whether two members are one disk, vouch for a reopened
 * disk, punch a hole, say where the data is, close): the file backend
 * (member_file.c, files and block devices through io_uring) and the NBD
 * backend (member_nbd.c, remote exports through libnbd), mixed freely in
 * one array.  member_table.c turns names into members and decides what a
 * failed request means (the failure policy); this file only records a
 * member's state.
 *
 * Errors are per request: member_io_run() completes every request it can,
 * sets err (an errno value) on each one that failed, and returns -1 with
 * errno set to the first failure.  Short transfers and EINTR/EAGAIN are
 * the backend's business and never reach the caller: a transfer the
 * backend cannot finish (a read that finds the member's end before the
 * request's: the member shrank under us) fails with MEMBER_ESHORT.
 *
 * Error classes.  A request fails either because the medium could not
 * give or take those sectors while the member itself still answers, or
 * because the member went away (its link, its device, its server, its
 * trust).  md answers the first by rewriting the sectors from the others
 * and keeping the disk, the second by failing the disk; the backends
 * report which it was by the errno they set, and member_error_is_media
 * says which class an errno is:
 *
 *   errno                        class    from
 *   EIO                          medium   a disk's or server's read or
 *                                         write error (the block layer's
 *                                         BLK_STS_IOERR)
 *   ENODATA                      medium   a critical medium error
 *                                         (BLK_STS_MEDIUM)
 *   EILSEQ                       medium   a protection information
 *                                         mismatch (BLK_STS_PROTECTION)
 *   MEMBER_ESHORT (ERANGE)       medium   a short transfer: the request
 *                                         reaches past what the member
 *                                         still holds
 *   ENOTCONN                     member   NBD: no connection could be
 *                                         made, or it was lost twice
 *   ETIMEDOUT                    member   NBD: the member-timeout passed;
 *                                         a device's (BLK_STS_TIMEOUT)
 *   ENODEV                       member   NBD: a new connection is not
 *                                         the member's disk (untrusted);
 *                                         disk=missing; a device gone
 *                                         (BLK_STS_OFFLINE)
 *   ENXIO, ESHUTDOWN, EPIPE,     member   a device or server going away,
 *   ECONNRESET, ECONNREFUSED              a broken link
 *   anything else                member   the safe side: a member that
 *                                         errs in ways nobody listed is
 *                                         not one to keep writing to
 *
 * A flush's error is never the medium's (it names no sector: what it
 * lost cannot be rewritten), nor is EOPNOTSUPP (a missing feature,
 * which the failure policy treats apart).  The classes are only said
 * here: the failure policy (member_table.c) still fails the member for
 * either.  ERANGE is MEMBER_ESHORT because no read or write of a disk or
 * an NBD server returns it, so it cannot be taken for a real error, and
 * it says what happened: the request's range is out of the member's.
 *
 * Alignment.  Every member has an alignment (align, a power of two, at
 * most MEMBER_MAX_ALIGN): the offset and length of each of its requests
 * must be multiples of it.  Files opened with O_DIRECT have 4096 (and
 * need aligned buffers too, direct); NBD exports have the minimum block
 * size their server advertises.  The stripe cache works in whole 4 KiB
 * pages from 4 KiB-aligned offsets, which suits every member whose
 * alignment divides 4096 and the data offset; array.c bounces the reads
 * that go straight to a member (see needs_bounce there).
 *
 * Identity.  A member that can reconnect (an NBD export) must be checked,
 * on every new connection, to be the disk the array knows; a restarted
 * server over another disk must never be read as the old one.  What makes
 * a disk "the same" is the array's business (md_identity.c: its md
 * superblock), so the array gives the member a struct member_identity: a
 * range to read on each new connection, and a callback that says whether
 * what was read is this member.  The backend reads it and asks, without
 * knowing what it means.  A member without one (raw arrays, and md
 * members before their first superblock is written) is checked by the
 * backend's own means (member_nbd_connect.c: same server instance).
 * A member that fails the check is failed with the reason and never read
 * again.
 */

#ifndef RAID_MEMBER_H
#define RAID_MEMBER_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum member_op {
  MEMBER_READ,
  MEMBER_WRITE,
  MEMBER_FLUSH,                 /* make earlier writes durable */
  MEMBER_PUNCH,                 /* deallocate; reads back as zeroes */
  MEMBER_ZERO,                  /* write zeroes without moving data */
};

#define MEMBER_MAX_ALIGN 4096

/* A short transfer: the member ended before the request did (see Error
 * classes above).
 */
#define MEMBER_ESHORT ERANGE

/* Counters of requests that operators read (status, metrics): how many,
 * how many bytes, how many failed.  Relaxed atomics: a reader wants
 * totals, never an order between them, and one add per request costs
 * little beside the request.  array.h counts the clients' requests with
 * the same type.
 */
struct io_count {
  _Atomic uint64_t requests, bytes, errors;
};

static inline void
io_count_add (struct io_count *c, uint64_t bytes, bool failed)
{
  atomic_fetch_add_explicit (&c->requests, 1, memory_order_relaxed);
  if (bytes)
    atomic_fetch_add_explicit (&c->bytes, bytes, memory_order_relaxed);
  if (failed)
    atomic_fetch_add_explicit (&c->errors, 1, memory_order_relaxed);
}

/* A member's counters by kind: reads; writes; punches and zero-ranges
 * ("zero"); flushes.
 */
enum member_count {
  MEMBER_COUNT_READ,
  MEMBER_COUNT_WRITE,
  MEMBER_COUNT_ZERO,
  MEMBER_COUNT_FLUSH,
  MEMBER_COUNTS,
};

struct md_badblocks;
struct member;

struct member_io {
  struct member *member;
  enum member_op op;
  void *buf;                    /* READ, WRITE */
  uint64_t len;                 /* all but FLUSH */
  uint64_t offset;              /* bytes from the member's start */
  bool fua;                     /* WRITE: durable when it completes; only
                                   on members with can_fua */
  int err;                      /* out: 0 or errno */
  uint64_t done;                /* private to the backend */
};

struct member_ops {
  const char *kind;
  /* Run n requests, all on members of this kind. */
  int (*io) (struct member_io **ios, size_t n);
  /* Whether a and b, both of this kind, are one disk (by what they are:
   * inode, server; never by their names).  NULL: never.
   */
  bool (*same) (const struct member *a, const struct member *b);
  /* Raw arrays' re-add (member_vouch): whether failed member old, which
   * `same` says b is, can prove that b still holds old's data (0), or
   * not (-1, why).  NULL: `same` is proof enough (a file: its inode).
   */
  int (*vouch) (struct member *old, struct member *b, char *why,
                size_t whylen);
  /* Whether [offset, offset + len) holds no data, so reads back as
   * zeroes without being read (a hole): 1 yes, 0 no or cannot tell.
   * NULL: never known.
   */
  int (*hole) (struct member *m, uint64_t offset, uint64_t len);
  /* The next run of data in [offset, end), for the array's extents
   * (extents.c): *data, the first byte from offset on that may hold
   * data (end if none does), and *stop, where that run ends (a hole
   * starts, or end).  Never fails: what the backend cannot tell is
   * data.  Two lseeks for a file, none for a byte it cannot tell.
   * NULL: all data.
   */
  void (*data_run) (struct member *m, uint64_t offset, uint64_t end,
                    uint64_t *data, uint64_t *stop);
  void (*close) (struct member *m);
};

/* A member's state in the array.  A member that fails is never read or
 * written again; it can be replaced by a new member (another disk, or the
 * same disk opened again: a re-add), which is REBUILDING until the
 * rebuild has gone over every row: rows below recovery_stripe are in sync
 * and read like any other member's, rows above are reconstructed from the
 * others (writes go to every row: the rebuild rewrites them with the same
 * contents later, and a re-add, which skips the rows the bitmap says were
 * not written while the disk was out, needs them written).
 */
enum member_state {
  MEMBER_IN_SYNC,
  MEMBER_FAILED,
  MEMBER_REBUILDING,
};

/* What a new connection to a member must show (see Identity above).
 * verify is called from any thread, during member I/O, possibly while the
 * array's metadata lock is held by a thread whose I/O this is: it must
 * not take that lock.  It returns NULL if buf (len bytes read at offset)
 * shows the disk the array knows, else a message saying why not (written
 * into why, whylen bytes, or a static string).
 */
struct member_identity {
  uint64_t offset;
  uint32_t len;
  /* Optional: called just before the range is read; what it returns is
   * given to verify.  The array's view of a disk changes while the read
   * is on the wire (md_array.c writes superblocks meanwhile): verify must
   * judge the disk as it was when the read was sent, not as it is when
   * the answer comes back.  begin follows verify's locking rule.
   */
  uint64_t (*begin) (struct member_identity *id);
  const char *(*verify) (struct member_identity *id, uint64_t begun,
                         const void *buf, char *why, size_t whylen);
  void (*free) (struct member_identity *id);
};

struct member {
  const struct member_ops *ops;
  char *name;                   /* as the user wrote it, for messages */
  char *open_name;              /* what opens it again (re-add): the name,
                                   a relative path made absolute from
                                   where it was first opened; or NULL */
  uint64_t size;                /* bytes */
  bool direct;                  /* buffers and offsets must be 4K aligned */
  uint32_t align;               /* offsets and lengths: multiples of this */
  bool can_fua;                 /* writes can be made durable one by one
                                   (member_io.fua), without a whole flush */
  _Atomic (enum member_state) state;
  _Atomic uint64_t recovery_stripe;  /* REBUILDING: rows below are in sync */
  struct member_identity *_Atomic identity; /* NULL until the array gives
                                               one; set once, owned by the
                                               member */
  uint64_t serial;              /* unique in the process, never reused: to
                                   tell members apart where an address may
                                   have been freed and reused */
  /* How it failed: written once, by the thread whose member_fail_because
   * made it FAILED, before it sets fail_recorded (release).
   */
  _Atomic bool fail_recorded;
  /* Failed by the operator's `fail N` (jobs.c), which readd=auto must
   * not undo (readd_auto.c).  Set before the member is failed.
   */
  _Atomic bool failed_by_operator;
  char fail_reason[160];
  int64_t fail_time;            /* CLOCK_REALTIME, seconds */
  /* REBUILDING when it failed: its recovery row then (the rows from
   * there on never reached it); UINT64_MAX if it was in sync.  Written
   * with fail_reason.
   */
  uint64_t failed_at_row;
  /* A re-added member (jobs.c): its rebuild rewrites only the rows the
   * write-intent bitmap marks.  Set before it is published in the member
   * table, never changed after.
   */
  bool readd;
  /* A re-added disk that had failed during a full rebuild (its superblock
   * says recovering, not from the bitmap): the rows from here on were
   * never rebuilt, so its re-add rewrites them all.  UINT64_MAX when the
   * bitmap covers every row.  Set with readd, never changed after.
   */
  uint64_t readd_whole_from;
  /* A hot spare that took its role (jobs.c), set before it is published:
   * status says so, and a re-add of the role's old disk is refused (it
   * comes back as a spare).
   */
  bool from_spare;
  _Atomic uint64_t resynced;    /* bytes its rebuild or re-add wrote */
  /* Pages that could not be read from it (a media error) and were
   * rewritten from the others and read back right (stripe_recover.c):
   * md's corrected read errors.
   */
  _Atomic uint64_t corrected_reads;
  /* md's bad-block log of this member (md_badblocks.c): the sectors it
   * cannot give, which reads reconstruct instead and a write that
   * succeeds there clears; NULL where it has none (raw arrays, members
   * without a log), and then a sector it cannot give or take fails it.
   * Given by md (assembly, create, a replacement's install) before the
   * member is published, never changed after; freed with the member.
   */
  struct md_badblocks *bad_blocks;
  /* Read errors on its medium lately (member_read_error), as md counts
   * them against max_corr_read_errors: halved for every hour since the
   * last one.  Under member.c's read_errors_lock.
   */
  unsigned int read_errors;
  int64_t read_error_ms;        /* now.h's clock at the last one */
  /* Every request member_io_run ran on it since it was opened (clients',
   * rebuilds', scrubs', metadata's), by member_count.
   */
  struct io_count io[MEMBER_COUNTS];
  void *priv;                   /* the backend's */
};

/* A backend opened m (member_table.c's members_open_member): give it its
 * serial, and the alignment the file backend leaves to us.
 */
void member_opened (struct member *m);
/* From now on open members read-only (files O_RDONLY; NBD exports that
 * are read-only are accepted): nbdkit -r or readonly=true.
 */
void member_set_read_only (void);
extern bool member_read_only;
void member_close (struct member *m);

/* disk=missing: a member that is absent from the start (failed). */
struct member *member_missing (void);

static inline enum member_state
member_state (const struct member *m)
{
  return atomic_load_explicit (&m->state, memory_order_acquire);
}

static inline bool
member_failed (const struct member *m)
{
  return member_state (m) == MEMBER_FAILED;
}

static inline uint64_t
member_recovery_stripe (const struct member *m)
{
  return atomic_load_explicit (&m->recovery_stripe, memory_order_acquire);
}

/* Whether row `stripe` of m holds the array's data. */
static inline bool
member_readable (const struct member *m, uint64_t stripe)
{
  switch (member_state (m)) {
  case MEMBER_IN_SYNC:
    return true;
  case MEMBER_REBUILDING:
    return stripe < member_recovery_stripe (m);
  default:
    return false;
  }
}

/* m holds the rows below from_stripe and is to be rebuilt from there: a
 * replacement (from row 0, before it is published in the member table),
 * or a member found half rebuilt at assembly.
 */
void member_start_rebuild (struct member *m, uint64_t from_stripe);
/* A member rebuilt up to row `stripe` (excluded), and one rebuilt to the
 * end: REBUILDING -> IN_SYNC, unless it failed meanwhile.
 */
void member_rebuilt_to (struct member *m, uint64_t stripe);
void member_rebuilt (struct member *m);

/* Whether err, the error of a request of kind op, is the medium's (the
 * member still answers) rather than the member's going away: see Error
 * classes above.
 */
bool member_error_is_media (enum member_op op, int err);
/* What err says, for messages: strerror's, but for MEMBER_ESHORT. */
const char *member_strerror (int err);

/* Mark m failed after error err (an errno value), or for the reason
 * why, logging it once.
 */
void member_fail (struct member *m, int err);
void member_fail_because (struct member *m, const char *why);
/* Whether m's failure has been recorded yet, and if so why and when. */
bool member_failure (const struct member *m, const char **why,
                     int64_t *when);

/* md's limit on the read errors a member's medium may have lately
 * (max-read-errors=, default 20, as md's max_corr_read_errors) before
 * the member is failed rather than corrected.
 */
#define MEMBER_MAX_READ_ERRORS 20
void member_set_max_read_errors (unsigned int n);
/* A read error on m's medium at now_ms (now.h's clock): counted (the
 * count halves for every hour since the one before, as md's read_errors
 * decay), and whether m is now past the limit (the caller then fails
 * it).
 */
bool member_read_error (struct member *m, int64_t now_ms);

/* Give m the identity its new connections are checked against; m owns
 * it from then on (it is freed with m).  Only the first call counts: a
 * later one frees id and returns false.
 */
bool member_set_identity (struct member *m, struct member_identity *id);

static inline struct member_identity *
member_identity (const struct member *m)
{
  return atomic_load_explicit (&m->identity, memory_order_acquire);
}

/* True if a and b are the same file, device or export, by what they are
 * (inode, server), not by their names (member_ops.same).
 */
bool member_same (const struct member *a, const struct member *b);
/* A raw array's re-add: is m, opened again by failed member old's name,
 * old's disk still holding old's data, as far as its backend can tell?
 * 0, or -1 with why (a different file, server or export; a server that
 * was restarted since).
 */
int member_vouch (struct member *old, struct member *m, char *why,
                  size_t whylen);
/* Whether m's [offset, offset + len) is known to be a hole (reads back
 * as zeroes): the backend's `hole`, false where it cannot tell.
 */
bool member_hole (struct member *m, uint64_t offset, uint64_t len);
/* The backend's data_run (member_ops), [offset, end) all data where it
 * has none: offset < end; offset <= *data <= *stop <= end, and
 * *data < *stop unless *data == end.
 */
void member_data_run (struct member *m, uint64_t offset, uint64_t end,
                      uint64_t *data, uint64_t *stop);

int member_io_run (struct member_io *ios, size_t n);

/* Where the rest of io's transfer goes: buf + done, or NULL for the
 * requests without a buffer (flush, punch, zero), where even adding 0 to
 * NULL would be undefined.
 */
static inline uint8_t *
member_io_cursor (const struct member_io *io)
{
  return io->buf ? (uint8_t *) io->buf + io->done : NULL;
}

/* The file backend, for member_table.c. */
/* Whether a file member is opened with O_DIRECT: block devices only (the
 * default: as md uses its disks, and where io_uring runs the requests
 * without a worker thread), every member, or none.
 */
enum member_direct { MEMBER_DIRECT_AUTO, MEMBER_DIRECT_ON, MEMBER_DIRECT_OFF };

struct member *member_file_open (const char *path, enum member_direct direct);
const char *member_file_uring_features (void);

/* The NBD backend (libnbd), for member_table.c and the plugin's parameters. */
bool member_is_uri (const char *name);
struct member *member_nbd_open (const char *uri);
/* Abandon a batch on a member after this long (default 30 s). */
void member_nbd_set_timeout (int ms);

#endif /* RAID_MEMBER_H */
