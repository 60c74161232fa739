/* SPDX-License-Identifier: BSD-3-Clause */
/* The control socket: how an operator sees and steers a running array.
 *
 * With control=PATH the plugin listens on a Unix socket at PATH (mode 0600:
 * whoever may use it may fail members).  A client connects, writes one
 * command line, and reads the reply until the plugin closes the
 * connection.  Replies are "ok", "error: WHY", or for status one JSON
 * object; nbdkit-raid-ctl(1) is the command-line client.
 *
 *   status, fail N [force], replace N PATH|URI [force], re-add N,
 *   scrub check|repair|stop
 *
 * (the language is control_command.c's).  A line is at most 4095 bytes
 * and its newline; a longer one, or one with a NUL byte, is refused whole
 * and nothing is done.
 *
 * status is the one reply monitoring reads: nbdkit-raid-ctl makes its
 * show, the progress lines of wait and its Prometheus metrics from it, so
 * that none of them can disagree with it and this file knows none of
 * their spellings.  Besides the states it carries what only the plugin
 * can count: the clients' requests (array.h) and each member's
 * (member.h), and for a running job the bytes it has still to go over and
 * the estimate of when it ends (finish_s, at the average speed so far, as
 * /proc/mdstat's finish=; for a rebuild what every member being rebuilt
 * still lacks, since the job goes on to the next one).
 *
 * The path.  control_listen runs at config_complete, before anything is
 * written to a member and before nbdkit forks: an error stops nbdkit in
 * the foreground with a message.  It never takes over a path that is not
 * a socket (a regular file at PATH stays as it is), nor a socket on which
 * something answers (another nbdkit's); a socket nobody answers on is a
 * stale one, left by a process that was killed, and is replaced.
 *
 * Threads.  An acceptor thread (control_start, after the fork) polls the
 * listening socket and a wake pipe; each client gets a thread of its own,
 * at most MAX_CLIENTS at once (one more is answered "error: busy"), so an
 * idle or slow client holds up nobody.  A client must send its line within
 * CLIENT_TIMEOUT_MS of connecting and take its reply within as long again,
 * or it is dropped.  Every wait in these threads (accept, read, write) is a
 * poll that includes the wake pipe: control_stop writes to it once and
 * every thread sees it at once, finishes the command it may be running
 * (commands are short: the long work runs in jobs.c's job thread) and
 * ends, so that shutdown, and the clean superblocks it writes, never wait
 * for a client.
 *
 * The acceptor also calls members_reclaim at least once a second, so that
 * members retired by replace are closed soon after the last reader that
 * could hold them has left (see member_table.c).
 *
 * Locks: clients_lock guards the client table; it is never held while a
 * command runs.
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "array.h"
#include "control.h"
#include "control_command.h"
#include "jobs.h"
#include "md_array.h"
#include "md_badblocks.h"
#include "md_bitmap.h"
#include "member_table.h"
#include "now.h"
#include "row_record.h"

#define MAX_CLIENTS 16
#define CLIENT_TIMEOUT_MS 5000
#define LINE_BYTES 4096         /* 4095 and the newline */
#define TICK_MS 1000

struct client {
  int fd;
  bool used;                    /* thread started, not yet joined */
  bool done;                    /* the thread has finished */
  pthread_t thread;
};

static int listen_fd = -1;
static int wake_pipe[2] = { -1, -1 };
static char *socket_path;
static struct array *array;
static struct jobs *jobs;
static pthread_t acceptor;
static bool acceptor_running;
static pthread_mutex_t clients_lock = PTHREAD_MUTEX_INITIALIZER;
static struct client clients[MAX_CLIENTS];

/* Wait until fd is ready for `events` or the deadline passes; 1 ready,
 * 0 timed out or stopping (control_stop), -1 error.
 */
static int
wait_fd (int fd, short events, int64_t deadline)
{
  for (;;) {
    struct pollfd p[2] = {
      { .fd = fd, .events = events },
      { .fd = wake_pipe[0], .events = POLLIN },
    };
    int64_t left = deadline - now_ms ();
    int r;

    if (left <= 0)
      return 0;
    r = poll (p, 2, left > 60000 ? 60000 : (int) left);
    if (r == -1 && errno == EINTR)
      continue;
    if (r == -1)
      return -1;
    if (p[1].revents)
      return 0;
    if (p[0].revents)
      return 1;
  }
}

/* Read one line into buf (LINE_BYTES + 1), NUL-terminated, without its
 * newline.  Returns its length, -1 if the client went away, timed out or
 * we stop, or -2 if the line is too long or holds a NUL byte (what came
 * of it is discarded).
 */
static ssize_t
read_line (int fd, char *buf, int64_t deadline)
{
  size_t len = 0;

  for (;;) {
    ssize_t n;
    char *nl;

    if (wait_fd (fd, POLLIN, deadline) != 1)
      return -1;
    n = recv (fd, buf + len, LINE_BYTES - len, MSG_DONTWAIT);
    if (n == -1 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n == -1)
      return -1;
    if (n == 0) {               /* EOF ends the line, as fgets did */
      buf[len] = '\0';
      return len ? (ssize_t) len : -1;
    }
    if (memchr (buf + len, '\0', n))
      return -2;
    nl = memchr (buf + len, '\n', n);
    len += n;
    if (nl) {
      *nl = '\0';
      return nl - buf;
    }
    if (len == LINE_BYTES)
      return -2;
  }
}

static void
write_all (int fd, const char *p, size_t len, int64_t deadline)
{
  while (len > 0) {
    ssize_t n;

    if (wait_fd (fd, POLLOUT, deadline) != 1)
      return;
    n = send (fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n == -1 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n == -1)
      return;
    p += n;
    len -= n;
  }
}

static const char *
state_name (enum member_state state)
{
  switch (state) {
  case MEMBER_IN_SYNC: return "in_sync";
  case MEMBER_FAILED: return "failed";
  default: return "rebuilding";
  }
}

/* The length of the well-formed UTF-8 sequence at s (1 to 4), or 0 if
 * there is none: a stray continuation byte, a truncated sequence, an
 * overlong form, a surrogate or a code point past U+10FFFF (RFC 3629).
 */
static int
utf8_sequence (const unsigned char *s)
{
  int n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
    : (s[0] & 0xf0) == 0xe0 ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
  unsigned char lo = 0x80, hi = 0xbf;   /* the second byte's range */

  if (s[0] == 0xe0) lo = 0xa0;          /* overlong */
  if (s[0] == 0xed) hi = 0x9f;          /* surrogates */
  if (s[0] == 0xf0) lo = 0x90;          /* overlong */
  if (s[0] == 0xf4) hi = 0x8f;          /* past U+10FFFF */
  for (int k = 1; k < n; k++)
    if (s[k] < (k == 1 ? lo : 0x80) || s[k] > (k == 1 ? hi : 0xbf))
      return 0;
  return n;
}

/* A JSON string.  Names are paths or URIs, byte strings that need not be
 * UTF-8: what is well-formed UTF-8 goes out as it is (escaping what JSON
 * requires), and each byte that is not part of a well-formed sequence
 * becomes U+FFFD, so that the reply is always valid UTF-8 and valid JSON.
 */
static void
json_string (FILE *f, const char *str)
{
  const unsigned char *s = (const unsigned char *) str;

  fputc ('"', f);
  while (*s) {
    int n = utf8_sequence (s);

    if (n == 0) {
      fputs ("\\ufffd", f);
      s++;
    }
    else if (*s == '"' || *s == '\\') {
      fprintf (f, "\\%c", *s);
      s++;
    }
    else if (*s < 0x20 || *s == 0x7f) {
      fprintf (f, "\\u%04x", *s);
      s++;
    }
    else {
      fwrite (s, 1, n, f);
      s += n;
    }
  }
  fputc ('"', f);
}

static void
print_bitmap (struct array *a, FILE *f)
{
  struct md_bitmap_stats st;
  uint64_t per_region, marked;

  if (md_array_bitmap_stats (a->md, &st))
    fprintf (f, ",\"bitmap\":{\"chunk\":%" PRIu64 ",\"bits\":%" PRIu64
             ",\"dirty\":%" PRIu64 "}", st.chunksize, st.bits, st.dirty);
  else
    fprintf (f, ",\"bitmap\":null");
  if (row_record_memory_stats (a->rows, &per_region, &marked))
    fprintf (f, ",\"missed_rows\":{\"per_region\":%" PRIu64 ",\"marked\":%"
             PRIu64 "}", per_region, marked);
  else
    fprintf (f, ",\"missed_rows\":null");
}

/* "io":{"read":{"requests":N,"bytes":N,"errors":N},...}: counters by
 * kind, in the order of names.
 */
static void
print_io (FILE *f, const struct io_count *c, const char *const *names,
          int n)
{
  fprintf (f, ",\"io\":{");
  for (int k = 0; k < n; k++)
    fprintf (f, "%s\"%s\":{\"requests\":%" PRIu64 ",\"bytes\":%" PRIu64
             ",\"errors\":%" PRIu64 "}", k ? "," : "", names[k],
             atomic_load_explicit (&c[k].requests, memory_order_relaxed),
             atomic_load_explicit (&c[k].bytes, memory_order_relaxed),
             atomic_load_explicit (&c[k].errors, memory_order_relaxed));
  fprintf (f, "}");
}

/* A member's failure (why, when: Unix time), what it is owed (bytes of
 * its data area: the rows it lacks), whether it is (or was) re-added and
 * how many bytes its rebuild or re-add wrote.
 */
static void
print_member_repair (struct array *a, const struct jobs_status *st, int i,
                     FILE *f)
{
  const char *why;
  int64_t when;

  fprintf (f, ",\"failure\":");
  if (member_failure (st->member[i].m, &why, &when)) {
    fprintf (f, "{\"reason\":");
    json_string (f, why);
    fprintf (f, ",\"time\":%" PRId64 "}", when);
  }
  else
    fprintf (f, "null");
  fprintf (f, ",\"owed\":%" PRIu64 ",\"readd\":%s,\"resynced\":%" PRIu64
           ",\"corrected_reads\":%" PRIu64,
           st->member[i].owed_rows * a->g.chunk,
           st->member[i].readd ? "true" : "false", st->member[i].resynced,
           atomic_load_explicit (&st->member[i].m->corrected_reads,
                                 memory_order_relaxed));
}

/* ,"bad_blocks":{"ranges":N,"sectors":N}: what member m's bad-block log
 * lists (null: it has none).
 */
static void
print_bad_blocks (const struct member *m, FILE *f)
{
  struct md_bad_range r[MD_BADBLOCKS_MAX_ENTRIES];
  uint64_t sectors = 0;
  size_t n;

  if (m->bad_blocks == NULL) {
    fprintf (f, ",\"bad_blocks\":null");
    return;
  }
  n = md_badblocks_list (m->bad_blocks, r, MD_BADBLOCKS_MAX_ENTRIES);
  for (size_t i = 0; i < n && i < MD_BADBLOCKS_MAX_ENTRIES; i++)
    sectors += r[i].sectors;
  fprintf (f, ",\"bad_blocks\":{\"ranges\":%zu,\"sectors\":%" PRIu64 "}",
           n, sectors);
}

/* The most lost ranges status lists; "lost_bytes" counts them all. */
#define LOST_MAX 64

/* ,"lost":[{"offset":N,"length":N},...],"lost_bytes":N: the array's bytes
 * that cannot be read (array_lost), so that an operator can tell which
 * files to restore.
 */
static void
print_lost (struct array *a, FILE *f)
{
  struct array_range r[LOST_MAX];
  uint64_t bytes;
  size_t n = array_lost (a, r, LOST_MAX, &bytes);

  fprintf (f, ",\"lost\":[");
  for (size_t i = 0; i < n && i < LOST_MAX; i++)
    fprintf (f, "%s{\"offset\":%" PRIu64 ",\"length\":%" PRIu64 "}",
             i ? "," : "", r[i].offset, r[i].len);
  fprintf (f, "],\"lost_ranges\":%zu,\"lost_bytes\":%" PRIu64, n, bytes);
}

static const char *const member_count_names[MEMBER_COUNTS] = {
  [MEMBER_COUNT_READ] = "read", [MEMBER_COUNT_WRITE] = "write",
  [MEMBER_COUNT_ZERO] = "zero", [MEMBER_COUNT_FLUSH] = "flush",
};
static const char *const array_count_names[ARRAY_COUNTS] = {
  [ARRAY_COUNT_READ] = "read", [ARRAY_COUNT_WRITE] = "write",
  [ARRAY_COUNT_ZERO] = "zero", [ARRAY_COUNT_TRIM] = "trim",
  [ARRAY_COUNT_FLUSH] = "flush",
};

/* "finish_s": when a job that has moved `moved` bytes in `elapsed`
 * seconds will have moved `remaining` more at the same average rate, as
 * /proc/mdstat's finish=; null until it has moved something.
 */
static void
print_finish (FILE *f, uint64_t remaining, uint64_t moved, double elapsed)
{
  if (moved > 0 && elapsed > 0)
    fprintf (f, ",\"finish_s\":%.1f", remaining * elapsed / moved);
  else
    fprintf (f, ",\"finish_s\":null");
}

/* The array, and its members as the snapshot st has them.  total: the
 * bytes of a member's data area.
 */
static void
print_members (struct array *a, const struct jobs_status *st,
               uint64_t total, FILE *f)
{
  int failed = 0;
  bool degraded = false;

  for (int i = 0; i < st->nmembers; i++) {
    failed += st->member[i].state == MEMBER_FAILED;
    degraded |= st->member[i].state != MEMBER_IN_SYNC;
  }
  fprintf (f, "{\"level\":%d,\"layout\":\"%s\",\"chunk\":%" PRIu64
           ",\"size\":%" PRIu64 ",\"degraded\":%s,\"failed\":%d,\"members\":[",
           a->g.level, geometry_layout_name (a->g.layout), a->g.chunk,
           a->g.array_size, degraded ? "true" : "false", failed);
  for (int i = 0; i < st->nmembers; i++) {
    enum member_state s = st->member[i].state;
    uint64_t rec = s == MEMBER_IN_SYNC ? total
      : s == MEMBER_FAILED ? 0
      : st->member[i].recovery_stripe * a->g.chunk;

    fprintf (f, "%s{\"index\":%d,\"name\":", i ? "," : "", i);
    json_string (f, st->member[i].m->name);
    fprintf (f, ",\"state\":\"%s\",\"recovery_offset\":%" PRIu64,
             state_name (s), rec);
    print_member_repair (a, st, i, f);
    print_bad_blocks (st->member[i].m, f);
    print_io (f, st->member[i].m->io, member_count_names, MEMBER_COUNTS);
    fprintf (f, "}");
  }
  fprintf (f, "]");
}

/* "rebuild": the running rebuild or re-add (total as print_members). */
static void
print_rebuild (struct array *a, const struct jobs_status *st,
               uint64_t total, FILE *f)
{
  bool rebuilding = st->rebuild_running && st->rebuild_member >= 0;
  double elapsed = rebuilding ? (st->now - st->rebuild_member_start) / 1e9
    : 0;
  uint64_t done = 0;
  uint64_t written = 0;         /* by this run of the job: for the rate */
  uint64_t remaining = 0;

  if (rebuilding) {
    done = st->member[st->rebuild_member].recovery_stripe * a->g.chunk;
    /* A re-add jumps over clean rows: its rate is what it wrote. */
    written = st->rebuild_readd ? st->member[st->rebuild_member].resynced
      : done - st->rebuild_first_row * a->g.chunk;
    /* The job goes on to the next member to rebuild when this one is
     * done: what is left is what every one of them still lacks.
     */
    for (int i = 0; i < st->nmembers; i++)
      if (st->member[i].state == MEMBER_REBUILDING)
        remaining += st->member[i].owed_rows * a->g.chunk;
  }
  fprintf (f, ",\"rebuild\":{\"running\":%s,\"readd\":%s,"
           "\"member\":%d,\"done\":%" PRIu64
           ",\"total\":%" PRIu64 ",\"mb_per_s\":%.1f,\"bytes_per_s\":%.0f,"
           "\"remaining\":%" PRIu64, st->rebuild_running ? "true" : "false",
           st->rebuild_running && st->rebuild_readd ? "true" : "false",
           rebuilding ? st->rebuild_member : -1, done, total,
           elapsed > 0 ? written / elapsed / 1e6 : 0.0,
           elapsed > 0 ? written / elapsed : 0.0, remaining);
  print_finish (f, remaining, written, elapsed);
  fprintf (f, "}");
}

/* "scrub": the running scrub or resync, or the last one's result (total
 * as print_members, for an array that was never scrubbed).
 */
static void
print_scrub (struct array *a, const struct jobs_status *st, uint64_t total,
             FILE *f)
{
  uint64_t done = st->scrub_rows_done * a->g.chunk;
  double elapsed = st->scrub_running ? (st->now - st->scrub_start) / 1e9 : 0;
  uint64_t remaining;

  total = st->scrubbed ? st->scrub_rows_total * a->g.chunk : total;
  remaining = st->scrub_running && total > done ? total - done : 0;
  fprintf (f, ",\"scrub\":{\"running\":%s,\"repair\":%s,\"resync\":%s,"
           "\"done\":%" PRIu64 ",\"total\":%" PRIu64 ",\"mb_per_s\":%.1f,"
           "\"bytes_per_s\":%.0f,\"remaining\":%" PRIu64,
           st->scrub_running ? "true" : "false",
           st->scrub_repair ? "true" : "false",
           st->scrub_resync ? "true" : "false", done, total,
           elapsed > 0 ? done / elapsed / 1e6 : 0.0,
           elapsed > 0 ? done / elapsed : 0.0, remaining);
  print_finish (f, remaining, done, elapsed);
  fprintf (f, ",\"mismatch_cnt\":%" PRIu64 ",\"unreadable_bytes\":%"
           PRIu64 ",\"lost_bytes\":%" PRIu64 ",\"finished\":%s,"
           "\"bad_data\":[", st->scrub_mismatch_cnt,
           st->scrub_unreadable_bytes, st->scrub_lost_bytes,
           st->scrub_finished ? "true" : "false");
  for (size_t k = 0; k < st->scrub_nbad; k++)
    fprintf (f, "%s{\"stripe\":%" PRIu64 ",\"member\":%d}", k ? "," : "",
             st->scrub_bad[k].stripe, st->scrub_bad[k].member);
  fprintf (f, "]}");
}

/* status: one JSON object.  The jobs and the member states come from one
 * snapshot (jobs_status), taken in a reader section that stays open while
 * the members' names are printed.
 */
static void
status_json (struct array *a, struct jobs *js, FILE *f)
{
  MEMBERS_READ_FOR_CURRENT_SCOPE (&a->ms);
  struct jobs_status st;
  uint64_t total = a->g.stripes * a->g.chunk;

  jobs_status (js, &st);
  print_members (a, &st, total, f);
  print_rebuild (a, &st, total, f);
  print_scrub (a, &st, total, f);
  print_bitmap (a, f);
  print_lost (a, f);
  print_io (f, array_counts (a), array_count_names, ARRAY_COUNTS);
  fprintf (f, "}\n");
}

static void
command (struct array *a, struct jobs *js, char *line, FILE *f)
{
  struct control_command cmd;
  const char *perr;
  char *why = NULL;
  int r = 0;

  if (control_command_parse (line, &cmd, &perr) == -1) {
    fprintf (f, "error: %s\n", perr);
    return;
  }
  switch (cmd.verb) {
  case CONTROL_STATUS:
    status_json (a, js, f);
    return;
  case CONTROL_FAIL:
    r = jobs_fail_member (js, cmd.member, cmd.force, &why);
    break;
  case CONTROL_REPLACE:
    r = jobs_replace_member (js, cmd.member, cmd.path, cmd.force, &why);
    break;
  case CONTROL_READD:
    r = jobs_readd_member (js, cmd.member, &why);
    break;
  case CONTROL_SCRUB_CHECK:
  case CONTROL_SCRUB_REPAIR:
    r = jobs_scrub_start (js, cmd.verb == CONTROL_SCRUB_REPAIR, &why);
    break;
  case CONTROL_SCRUB_STOP:
    jobs_scrub_stop (js);
    break;
  }
  if (r == 0)
    fprintf (f, "ok\n");
  else
    fprintf (f, "error: %s\n", why);
}

/* Send EOF, then read what the client may still send until it closes
 * (for a second at most): closing a Unix socket with unread data resets
 * the connection, and the client could lose the reply.
 */
static void
finish (int fd)
{
  int64_t deadline = now_ms () + 1000;
  char junk[4096];

  shutdown (fd, SHUT_WR);
  while (wait_fd (fd, POLLIN, deadline) == 1) {
    ssize_t n = recv (fd, junk, sizeof junk, MSG_DONTWAIT);

    if (n == 0 || (n == -1 && errno != EINTR && errno != EAGAIN))
      break;
  }
}

/* Serve one connection: a line, its reply, close. */
static void *
client_thread (void *arg)
{
  struct client *c = arg;
  int64_t deadline = now_ms () + CLIENT_TIMEOUT_MS;
  char line[LINE_BYTES + 1];
  char *reply = NULL;
  size_t len = 0;
  ssize_t n = read_line (c->fd, line, deadline);
  FILE *f = n == -1 ? NULL : open_memstream (&reply, &len);

  if (f) {
    if (n == -2)
      fprintf (f, "error: the command line is too long (at most %d bytes) "
               "or holds a NUL byte: nothing was done\n", LINE_BYTES - 1);
    else
      command (array, jobs, line, f);
    if (fclose (f) == 0)
      write_all (c->fd, reply, len, now_ms () + CLIENT_TIMEOUT_MS);
    finish (c->fd);
  }
  free (reply);
  close (c->fd);
  pthread_mutex_lock (&clients_lock);
  c->done = true;
  pthread_mutex_unlock (&clients_lock);
  return NULL;
}

/* Join the client threads that have finished; all of them if `all`. */
static void
reap_clients (bool all)
{
  for (int i = 0; i < MAX_CLIENTS; i++) {
    bool join;

    pthread_mutex_lock (&clients_lock);
    join = clients[i].used && (all || clients[i].done);
    pthread_mutex_unlock (&clients_lock);
    if (join) {
      pthread_join (clients[i].thread, NULL);
      pthread_mutex_lock (&clients_lock);
      clients[i].used = false;
      pthread_mutex_unlock (&clients_lock);
    }
  }
}

static void
new_client (int fd)
{
  static const char busy[] = "error: busy: too many control clients\n";
  struct client *c = NULL;

  reap_clients (false);
  pthread_mutex_lock (&clients_lock);
  for (int i = 0; i < MAX_CLIENTS && c == NULL; i++)
    if (!clients[i].used)
      c = &clients[i];
  if (c) {
    c->fd = fd;
    c->done = false;
    c->used = pthread_create (&c->thread, NULL, client_thread, c) == 0;
    if (!c->used)
      c = NULL;
  }
  pthread_mutex_unlock (&clients_lock);
  if (c == NULL) {
    (void) !send (fd, busy, sizeof busy - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    close (fd);
  }
}

static void *
acceptor_thread (void *arg)
{
  for (;;) {
    struct pollfd p[2] = {
      { .fd = listen_fd, .events = POLLIN },
      { .fd = wake_pipe[0], .events = POLLIN },
    };
    int r = poll (p, 2, TICK_MS);

    if (r == -1 && errno != EINTR)
      break;
    if (r > 0 && p[1].revents)
      break;                    /* control_stop */
    if (r > 0 && p[0].revents) {
      int fd = accept4 (listen_fd, NULL, NULL, SOCK_CLOEXEC);

      if (fd >= 0)
        new_client (fd);
    }
    members_reclaim (&array->ms);
  }
  return NULL;
}

/* Refuse a path that exists and is not a socket, or on which something
 * answers; remove a stale socket.
 */
static int
check_path (const char *path, const struct sockaddr_un *addr)
{
  struct stat st;
  int fd, r;

  if (lstat (path, &st) == -1) {
    if (errno == ENOENT)
      return 0;
    nbdkit_error ("control=%s: %m", path);
    return -1;
  }
  if (!S_ISSOCK (st.st_mode)) {
    nbdkit_error ("control=%s: exists and is not a socket: refusing to "
                  "replace it", path);
    return -1;
  }
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd == -1) {
    nbdkit_error ("control socket: %m");
    return -1;
  }
  r = connect (fd, (const struct sockaddr *) addr, sizeof *addr);
  close (fd);
  if (r == 0) {
    nbdkit_error ("control=%s: another process (another nbdkit?) is "
                  "listening on it", path);
    return -1;
  }
  if (errno != ECONNREFUSED) {
    nbdkit_error ("control=%s: %m", path);
    return -1;
  }
  if (unlink (path) == -1 && errno != ENOENT) {   /* stale: nobody answers */
    nbdkit_error ("control=%s: cannot remove the stale socket: %m", path);
    return -1;
  }
  return 0;
}

int
control_listen (const char *path)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  mode_t old;
  int r;

  if (strlen (path) >= sizeof addr.sun_path) {
    nbdkit_error ("control=%s: path too long for a Unix socket", path);
    return -1;
  }
  strcpy (addr.sun_path, path);
  if (check_path (path, &addr) == -1)
    return -1;
  listen_fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd == -1 || pipe2 (wake_pipe, O_CLOEXEC) == -1) {
    nbdkit_error ("control socket: %m");
    control_stop ();
    return -1;
  }
  old = umask (0177);           /* the socket is created 0600 */
  r = bind (listen_fd, (struct sockaddr *) &addr, sizeof addr);
  umask (old);
  if (r == -1) {
    nbdkit_error ("control=%s: %m", path);
    control_stop ();
    return -1;
  }
  socket_path = strdup (path);
  if (socket_path == NULL || listen (listen_fd, MAX_CLIENTS) == -1) {
    nbdkit_error ("control=%s: %m", path);
    control_stop ();
    return -1;
  }
  return 0;
}

int
control_start (struct array *a, struct jobs *js)
{
  if (listen_fd == -1)
    return 0;
  array = a;
  jobs = js;
  if (pthread_create (&acceptor, NULL, acceptor_thread, NULL)) {
    nbdkit_error ("control: cannot start a thread");
    return -1;
  }
  acceptor_running = true;
  return 0;
}

void
control_stop (void)
{
  if (wake_pipe[1] >= 0)
    (void) !write (wake_pipe[1], "", 1);
  if (acceptor_running) {
    pthread_join (acceptor, NULL);
    acceptor_running = false;
  }
  reap_clients (true);
  if (listen_fd >= 0)
    close (listen_fd);
  listen_fd = -1;
  for (int i = 0; i < 2; i++) {
    if (wake_pipe[i] >= 0)
      close (wake_pipe[i]);
    wake_pipe[i] = -1;
  }
  if (socket_path)
    unlink (socket_path);
  free (socket_path);
  socket_path = NULL;
}
