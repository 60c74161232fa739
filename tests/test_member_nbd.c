/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: the NBD member backend (plugin/member_nbd*.c) alone,
 * against real nbdkit servers: member ids are reused, a closed member's
 * connections do not outlive it, the batch timeout never becomes an
 * infinite poll(2), and ids are safe to allocate while other threads do
 * I/O.
 *
 * The servers are nbdkit's memory plugin on Unix sockets in a private
 * directory, started here (-f --exit-with-parent) and killed at the end.
 * No nbdkit: the program exits 77 (skip).
 *
 * The clock and poll(2) are this program's own (defined below, so that
 * member_nbd*.c, linked into this program, call them): normally the real
 * ones; while `clock_step_ms` is set, every read of CLOCK_MONOTONIC moves
 * the clock on by that much, which puts the batch deadline between two
 * consecutive clock reads of the code under test, and poll records the
 * smallest timeout it was given (a negative one waits forever; it is
 * replaced by 100 ms here, so that the old code fails instead of hanging).
 *
 * The concurrency case is worth most under ThreadSanitizer
 * (tests/test-member-nbd-tsan.sh builds this file with it): an id taken
 * or given back while another thread runs a batch must be synchronised.
 *
 * Shortages: malloc, calloc and realloc are wrapped
 * (-Wl,--wrap=..., which reaches only the calls made by this program's
 * own objects, member_nbd*.c and member.c, not libnbd's), and while
 * `alloc_fails` is set they return NULL.  A batch must then still run and
 * succeed, byte for byte: a process short of memory is no failed member.
 * (Check is linked statically and allocates in its assertions, so none
 * is made while allocations fail.)
 *
 * Servers without flush (nbdkit's eval plugin over a file, with no flush
 * method): the member's flushes succeed without being sent, its writes
 * count as durable (can_fua), and that is said once at open.  A server
 * restarted with other features than at open fails the member.
 *
 * Error classes (member.h): a server's error reply (nbdkit's error
 * filter) keeps the server's errno, so its EIO is the medium's; a killed
 * server gives ENOTCONN, a hung one ETIMEDOUT, a new connection to
 * another disk ENODEV: the member's going away.  The failure policy
 * still fails the member for either.
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "check_run.h"

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "member.h"
#include "member_table.h"

/* Allocation failures on demand; see the top. */
static bool alloc_fails;        /* atomic */
void *__real_malloc (size_t n);
void *__real_calloc (size_t n, size_t size);
void *__real_realloc (void *p, size_t n);
void *__wrap_malloc (size_t n);
void *__wrap_calloc (size_t n, size_t size);
void *__wrap_realloc (void *p, size_t n);

static bool
failing (void)
{
  return __atomic_load_n (&alloc_fails, __ATOMIC_ACQUIRE);
}

void *
__wrap_malloc (size_t n)
{
  return failing () ? NULL : __real_malloc (n);
}

void *
__wrap_calloc (size_t n, size_t size)
{
  return failing () ? NULL : __real_calloc (n, size);
}

void *
__wrap_realloc (void *p, size_t n)
{
  return failing () ? NULL : __real_realloc (p, n);
}

/* What member.c and member_nbd*.c need from nbdkit and the file backend.
 * The last messages are kept (without allocating) for the tests to read.
 */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char error_log[16384];

void
nbdkit_error (const char *fs, ...)
{
  va_list ap;
  char msg[1024];

  va_start (ap, fs);
  vsnprintf (msg, sizeof msg, fs, ap);
  va_end (ap);
  fprintf (stderr, "error: %s\n", msg);
  pthread_mutex_lock (&log_lock);
  if (strlen (error_log) + strlen (msg) + 2 < sizeof error_log) {
    strcat (error_log, msg);
    strcat (error_log, "\n");
  }
  pthread_mutex_unlock (&log_lock);
}

/* How many times s appears in the messages since the last call (or
 * log_clear); clears them.
 */
static int
log_count (const char *s)
{
  int n = 0;

  pthread_mutex_lock (&log_lock);
  for (const char *p = error_log; (p = strstr (p, s)) != NULL; p++)
    n++;
  error_log[0] = 0;
  pthread_mutex_unlock (&log_lock);
  return n;
}

static void
log_clear (void)
{
  log_count ("\n");
}

void
nbdkit_debug (const char *fs, ...)
{
}

struct member *
member_file_open (const char *path, enum member_direct direct)
{
  return NULL;
}

/* The clock and poll of the code under test; see the top. */
static int64_t clock_step_ms;   /* atomic */
static int64_t clock_offset_ms;  /* atomic */
static int poll_min_timeout = 1 << 30; /* while the clock steps */

int
clock_gettime (clockid_t id, struct timespec *ts)
{
  int64_t step = __atomic_load_n (&clock_step_ms, __ATOMIC_ACQUIRE);
  int64_t off;
  int r = syscall (SYS_clock_gettime, id, ts);

  if (r == 0 && step && id == CLOCK_MONOTONIC) {
    off = __atomic_add_fetch (&clock_offset_ms, step, __ATOMIC_ACQ_REL);
    ts->tv_sec += off / 1000;
    ts->tv_nsec += off % 1000 * 1000000;
    if (ts->tv_nsec >= 1000000000) {
      ts->tv_sec++;
      ts->tv_nsec -= 1000000000;
    }
  }
  return r;
}

int
poll (struct pollfd *fds, nfds_t n, int timeout)
{
  struct timespec ts;

  if (__atomic_load_n (&clock_step_ms, __ATOMIC_ACQUIRE)) {
    if (timeout < poll_min_timeout)
      poll_min_timeout = timeout;
    if (timeout < 0)
      timeout = 100;
  }
  ts.tv_sec = timeout / 1000;
  ts.tv_nsec = timeout % 1000 * 1000000;
  return ppoll (fds, n, timeout < 0 ? NULL : &ts, NULL);
}

/* Servers. */
static char dir[] = "/tmp/test-member-nbd.XXXXXX";

struct server {
  pid_t pid;
  char sock[256], uri[300];
  char ctl[256];                /* server_start_pausable's */
};

/* Until the server s (just forked) has written pidfile: it serves. */
static void
server_wait (struct server *s, const char *pidfile)
{
  for (int i = 0; i < 1000 && access (pidfile, F_OK) == -1; i++) {
    ck_assert_msg (waitpid (s->pid, NULL, WNOHANG) == 0,
                   "nbdkit exited before serving %s", s->sock);
    usleep (10000);
  }
  ck_assert_msg (access (pidfile, F_OK) == 0, "nbdkit did not start");
}

/* Fork `nbdkit -f --exit-with-parent -U DIR/NAME.sock -P DIR/NAME.pid
 * ARGS...` (ARGS: NULL-terminated, the filters, the plugin and its
 * parameters) and wait until it serves.
 */
static void
server_spawn (struct server *s, const char *name, const char *const *args)
{
  char pidfile[256];
  const char *argv[32] = { "nbdkit", "-f", "--exit-with-parent", "-U",
                           s->sock, "-P", pidfile };
  size_t n = 7;

  snprintf (s->sock, sizeof s->sock, "%s/%s.sock", dir, name);
  snprintf (pidfile, sizeof pidfile, "%s/%s.pid", dir, name);
  snprintf (s->uri, sizeof s->uri, "nbd+unix:///?socket=%s", s->sock);
  for (size_t i = 0; args[i] != NULL; i++) {
    ck_assert (n < sizeof argv / sizeof argv[0] - 1);
    argv[n++] = args[i];
  }
  argv[n] = NULL;
  unlink (pidfile);
  unlink (s->sock);
  s->pid = fork ();
  ck_assert_int_ne (s->pid, -1);
  if (s->pid == 0) {
    execvp ("nbdkit", (char **) argv);
    _exit (127);
  }
  server_wait (s, pidfile);
}

/* nbdkit's memory plugin (1 MiB), with or without multi-conn. */
static void
server_start (struct server *s, const char *name, bool multi_conn)
{
  const char *mc[] = { "memory", "size=1M", NULL };
  const char *single[] = { "--filter=multi-conn", "memory", "size=1M",
                           "multi-conn-mode=disable", NULL };

  server_spawn (s, name, multi_conn ? mc : single);
}

/* nbdkit's eval plugin serving `file` (1 MiB), with or without flush and
 * multi-conn: a server whose features the test chooses.  Without a flush
 * method nbdkit offers neither flush nor FUA.
 */
static void
server_start_eval (struct server *s, const char *name, const char *file,
                   bool flush, bool multi_conn)
{
  char pread[512], pwrite[512];
  const char *args[] = {
    "eval", "get_size=echo 1048576", pread, pwrite,
    multi_conn ? "can_multi_conn=exit 0" : "can_multi_conn=exit 3",
    flush ? "flush=exit 0" : NULL, NULL
  };

  snprintf (pread, sizeof pread, "pread=exec dd if=%s skip=$4 count=$3 "
            "iflag=skip_bytes,count_bytes status=none", file);
  snprintf (pwrite, sizeof pwrite, "pwrite=exec dd of=%s seek=$4 "
            "conv=notrunc oflag=seek_bytes status=none", file);
  server_spawn (s, name, args);
}

/* A memory server (multi-conn) behind nbdkit's pause filter, whose
 * control socket is s->ctl: see server_pause.
 */
static void
server_start_pausable (struct server *s, const char *name)
{
  char ctl[300];
  const char *args[] = { "--filter=pause", "memory", "size=1M", ctl, NULL };

  snprintf (s->ctl, sizeof s->ctl, "%s/%s.ctl", dir, name);
  snprintf (ctl, sizeof ctl, "pause-control=%s", s->ctl);
  server_spawn (s, name, args);
}

/* Pause (c = 'p': requests that arrive from now on wait, connections
 * are still accepted) or resume ('r') a pausable server; returns once
 * the filter has said it did.
 */
static void
server_pause (struct server *s, char c)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  char answer = 0;

  ck_assert_int_ne (fd, -1);
  ck_assert (strlen (s->ctl) < sizeof sa.sun_path);
  memcpy (sa.sun_path, s->ctl, strlen (s->ctl) + 1);
  ck_assert_int_eq (connect (fd, (struct sockaddr *) &sa, sizeof sa), 0);
  ck_assert_int_eq (write (fd, &c, 1), 1);
  ck_assert_int_eq (read (fd, &answer, 1), 1);
  ck_assert_int_eq (answer, c - 'a' + 'A');
  close (fd);
}

static void
server_stop (struct server *s)
{
  kill (s->pid, SIGCONT);
  kill (s->pid, SIGKILL);
  waitpid (s->pid, NULL, 0);
}

static int
member_rw (struct member *m, enum member_op op, void *buf, uint64_t len,
           uint64_t off)
{
  struct member_io io = { .member = m, .op = op, .buf = buf, .len = len,
                          .offset = off };

  return member_io_run (&io, 1);
}

static int
open_fds (void)
{
  DIR *d = opendir ("/proc/self/fd");
  int n = 0;

  if (d == NULL)
    return -1;
  while (readdir (d))
    n++;
  closedir (d);
  return n;
}

/* No file descriptor left when the first member of the process is
 * opened: that open fails, and the next one, with descriptors again,
 * must succeed.  The old code made the reader's eventfd once per process
 * (pthread_once), so every later open failed too.  First in the list of
 * cases: only the first open of the process makes the eventfd.
 */
START_TEST (test_eventfd_retry)
{
  struct server s;
  struct rlimit old, none;
  char buf[4096];
  struct member *m;

  server_start (&s, "fds", true);
  ck_assert_int_eq (getrlimit (RLIMIT_NOFILE, &old), 0);
  none = old;
  none.rlim_cur = 0;            /* no new descriptor at all */
  log_clear ();
  ck_assert_int_eq (setrlimit (RLIMIT_NOFILE, &none), 0);
  m = members_open_member (s.uri, false);
  ck_assert_int_eq (setrlimit (RLIMIT_NOFILE, &old), 0);
  ck_assert (m == NULL);
  ck_assert_msg (log_count ("cannot make an eventfd") == 1, "the open did "
                 "not fail for the eventfd: was a member opened before?");
  m = members_open_member (s.uri, false);
  ck_assert_msg (m != NULL, "an eventfd that could not be made once is "
                 "never made");
  ck_assert_int_eq (member_rw (m, MEMBER_READ, buf, sizeof buf, 0), 0);
  member_close (m);
  server_stop (&s);
}
END_TEST

/* More members opened and closed than there are ids: ids come back, and
 * so do the file descriptors of the closed members' connections.
 */
START_TEST (test_ids_reused)
{
  struct server s;
  char buf[4096];
  int fds0 = -1;

  server_start (&s, "ids", true);
  for (int i = 0; i < 300; i++) {
    struct member *m = members_open_member (s.uri, false);

    ck_assert_msg (m != NULL, "open number %d failed", i + 1);
    ck_assert_int_eq (member_rw (m, MEMBER_READ, buf, sizeof buf, 0), 0);
    member_close (m);
    if (i == 10)
      fds0 = open_fds ();
  }
  ck_assert_msg (open_fds () <= fds0 + 2, "file descriptors grew from %d to "
                 "%d over 290 open/close cycles", fds0, open_fds ());
  server_stop (&s);
}
END_TEST

/* A reused id must not hand the new member this thread's connection to
 * the member that had the id before.
 */
START_TEST (test_reused_id_new_connection)
{
  struct server s1, s2;
  uint8_t buf[4096], pat[4096];
  struct member *a, *b, *c;

  server_start (&s1, "one", true);
  server_start (&s2, "two", true);
  memset (pat, 0xb2, sizeof pat);
  a = members_open_member (s1.uri, false);
  ck_assert (a != NULL);
  ck_assert_int_eq (member_rw (a, MEMBER_READ, buf, sizeof buf, 0), 0);
  member_close (a);             /* its id is free, this thread's slot stale */
  b = members_open_member (s2.uri, false);
  ck_assert (b != NULL);
  ck_assert_int_eq (member_rw (b, MEMBER_WRITE, pat, sizeof pat, 0), 0);
  c = members_open_member (s1.uri, false);
  ck_assert (c != NULL);
  ck_assert_int_eq (member_rw (c, MEMBER_READ, buf, sizeof buf, 0), 0);
  ck_assert_msg (buf[0] == 0, "member b's write went to a's server");
  ck_assert_int_eq (member_rw (b, MEMBER_READ, buf, sizeof buf, 0), 0);
  ck_assert (memcmp (buf, pat, sizeof buf) == 0);
  member_close (b);
  member_close (c);
  server_stop (&s1);
  server_stop (&s2);
}
END_TEST

/* The deadline passes between two clock reads of the batch loop: the
 * request must time out, and poll must never be told to wait forever.
 */
START_TEST (test_timeout_never_negative)
{
  struct server s;
  char buf[4096];
  struct member *m;
  struct timespec t0, t1;
  int r, st, e;

  server_start (&s, "hung", true);
  member_nbd_set_timeout (2000);
  m = members_open_member (s.uri, false);
  ck_assert (m != NULL);
  ck_assert_int_eq (member_rw (m, MEMBER_READ, buf, sizeof buf, 0), 0);
  kill (s.pid, SIGSTOP);        /* answers nothing from now on, */
  ck_assert_int_eq (waitpid (s.pid, &st, WUNTRACED), s.pid);
  ck_assert (WIFSTOPPED (st));  /* once all its threads have stopped */
  syscall (SYS_clock_gettime, CLOCK_MONOTONIC, &t0);
  __atomic_store_n (&clock_step_ms, 1200, __ATOMIC_RELEASE);
  r = member_rw (m, MEMBER_READ, buf, sizeof buf, 0);
  e = errno;
  __atomic_store_n (&clock_step_ms, 0, __ATOMIC_RELEASE);
  syscall (SYS_clock_gettime, CLOCK_MONOTONIC, &t1);
  ck_assert_msg (poll_min_timeout >= 0, "poll was given timeout %d (forever)",
                 poll_min_timeout);
  ck_assert_int_eq (r, -1);
  ck_assert_msg (e == ETIMEDOUT, "the timed-out read: %s", strerror (e));
  ck_assert_msg (t1.tv_sec - t0.tv_sec < 10, "the timed-out read took %ld s",
                 (long) (t1.tv_sec - t0.tv_sec));
  member_close (m);
  member_nbd_set_timeout (30000);
  server_stop (&s);
}
END_TEST

/* Ids taken and given back while other threads run batches on members
 * with and without multi-conn, in both orders.
 */
struct io_thread {
  struct member *m[2];
  int errors;
};

static void *
io_loop (void *arg)
{
  struct io_thread *t = arg;
  static __thread uint8_t b0[4096], b1[4096];

  for (int i = 0; i < 400; i++) {
    struct member_io ios[2] = {
      { .member = t->m[0], .op = MEMBER_READ, .buf = b0, .len = 4096,
        .offset = (i % 64) * 4096 },
      { .member = t->m[1], .op = MEMBER_READ, .buf = b1, .len = 4096,
        .offset = (i % 64) * 4096 },
    };

    t->errors += member_io_run (ios, 2) != 0;
  }
  return NULL;
}

START_TEST (test_ids_while_io)
{
  struct server s1, s2, s3;
  struct member *m1, *m2;
  struct io_thread t[2];
  pthread_t th[2];

  server_start (&s1, "mc", true);
  server_start (&s2, "single", false);
  server_start (&s3, "churn", true);
  m1 = members_open_member (s1.uri, false);
  m2 = members_open_member (s2.uri, false);
  ck_assert (m1 && m2);
  t[0] = (struct io_thread) { .m = { m1, m2 } };
  t[1] = (struct io_thread) { .m = { m2, m1 } };
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq (pthread_create (&th[i], NULL, io_loop, &t[i]), 0);
  for (int i = 0; i < 40; i++) {
    struct member *m = members_open_member (s3.uri, false);

    ck_assert_msg (m != NULL, "open %d while I/O runs failed", i);
    member_close (m);
  }
  for (int i = 0; i < 2; i++) {
    pthread_join (th[i], NULL);
    ck_assert_int_eq (t[i].errors, 0);
  }
  member_close (m1);
  member_close (m2);
  server_stop (&s1);
  server_stop (&s2);
  server_stop (&s3);
}
END_TEST

/* Shortages (see the top). */

#define NBATCH 200              /* more than any stack piece */

/* Run ios (n of them) straight through the backend, with no memory, as
 * member_io_run would hand it a large share (member_io_run's own list is
 * tested in test_member.c; here its allocation must not hide the
 * backend's).
 */
static void
backend_run_without_memory (struct member_io *ios, size_t n)
{
  static struct member_io *list[NBATCH];

  ck_assert_uint_le (n, NBATCH);
  for (size_t i = 0; i < n; i++) {
    ios[i].err = 0;
    ios[i].done = 0;
    list[i] = &ios[i];
  }
  __atomic_store_n (&alloc_fails, true, __ATOMIC_RELEASE);
  ios[0].member->ops->io (list, n);
  __atomic_store_n (&alloc_fails, false, __ATOMIC_RELEASE);
}

/* NBATCH requests of 4 KiB, alternating between members a and b. */
static void
batch (struct member_io *ios, struct member *a, struct member *b,
       enum member_op op, uint8_t *buf)
{
  for (size_t i = 0; i < NBATCH; i++)
    ios[i] = (struct member_io) {
      .member = i % 2 ? b : a, .op = op, .buf = buf + i * 4096,
      .len = 4096, .offset = i / 2 * 4096,
    };
}

static void
fill (uint8_t *buf, size_t len, unsigned int seed)
{
  for (size_t i = 0; i < len; i++)
    buf[i] = (uint8_t) ((i * 2654435761u + seed) >> 13);
}

/* A large batch whose list of requests cannot be allocated still runs,
 * on a member with multi-conn and one without: the old code failed every
 * request with ENOMEM (which fails the members).
 */
START_TEST (test_nomem_batch)
{
  static struct member_io ios[NBATCH];
  static uint8_t out[NBATCH * 4096], in[NBATCH * 4096];
  struct server s1, s2;
  struct member *a, *b;

  server_start (&s1, "nomem-mc", true);
  server_start (&s2, "nomem-single", false);
  a = members_open_member (s1.uri, false);
  b = members_open_member (s2.uri, false);
  ck_assert (a && b);
  ck_assert_int_eq (member_rw (a, MEMBER_READ, in, 4096, 0), 0); /* table */
  fill (out, sizeof out, 1);
  batch (ios, a, b, MEMBER_WRITE, out);
  backend_run_without_memory (ios, NBATCH);
  for (size_t i = 0; i < NBATCH; i++)
    ck_assert_msg (ios[i].err == 0, "write %zu without memory: %s", i,
                   strerror (ios[i].err));
  batch (ios, a, b, MEMBER_READ, in);
  backend_run_without_memory (ios, NBATCH);
  for (size_t i = 0; i < NBATCH; i++)
    ck_assert_msg (ios[i].err == 0, "read %zu without memory: %s", i,
                   strerror (ios[i].err));
  ck_assert (memcmp (in, out, sizeof in) == 0);
  ck_assert (!member_failed (a) && !member_failed (b));
  member_close (a);
  member_close (b);
  server_stop (&s1);
  server_stop (&s2);
}
END_TEST

/* An identity for the shortage cases: the magic at offset 0 (no
 * allocation in verify, and free is the real one, called with memory).
 */
static const char magic[8] = "RAIDTEST";

static const char *
magic_verify (struct member_identity *id, uint64_t begun, const void *buf,
              char *why, size_t whylen)
{
  return memcmp (buf, magic, sizeof magic) == 0 ? NULL : "no magic";
}

static void
magic_free (struct member_identity *id)
{
  free (id);
}

/* Open uri as a member checked by the magic, which is written there
 * first (through another member, so that this thread has no connection
 * to the new one yet).
 */
static struct member *
open_with_magic (const char *uri)
{
  uint8_t page[4096] = { 0 };
  struct member *w = members_open_member (uri, false), *m;
  struct member_identity *id = calloc (1, sizeof *id);

  ck_assert (w && id);
  memcpy (page, magic, sizeof magic);
  ck_assert_int_eq (member_rw (w, MEMBER_WRITE, page, sizeof page, 0), 0);
  member_close (w);
  m = members_open_member (uri, false);
  ck_assert (m != NULL);
  *id = (struct member_identity) { .offset = 0, .len = 4096,
                                   .verify = magic_verify,
                                   .free = magic_free };
  ck_assert (member_set_identity (m, id));
  return m;
}

/* A write and a read-back of one page at `off`, with no memory: NULL if
 * they went right, else what went wrong.  (No assertion: it runs in
 * other threads too.)
 */
static const char *
rw_without_memory (struct member *m, uint64_t off, unsigned int seed)
{
  uint8_t out[4096], in[4096];
  int w, r, werr, rerr;

  fill (out, sizeof out, seed);
  memset (in, 0, sizeof in);
  __atomic_store_n (&alloc_fails, true, __ATOMIC_RELEASE);
  w = member_rw (m, MEMBER_WRITE, out, sizeof out, off);
  werr = errno;
  r = member_rw (m, MEMBER_READ, in, sizeof in, off);
  rerr = errno;
  __atomic_store_n (&alloc_fails, false, __ATOMIC_RELEASE);
  if (w != 0)
    return werr == ENOMEM ? "a write without memory: ENOMEM"
      : "a write without memory failed";
  if (r != 0)
    return rerr == ENOMEM ? "a read without memory: ENOMEM"
      : "a read without memory failed";
  if (memcmp (in, out, sizeof in) != 0)
    return "a read without memory differs from what was written";
  return member_failed (m) ? "the member failed" : NULL;
}

/* A thread that has no connection to a member yet makes one (checked by
 * the member's identity) with no memory: the old code could not list it
 * (realloc) nor read the identity (malloc), and failed the requests.
 */
START_TEST (test_nomem_new_connection)
{
  struct server s1;
  struct member *m;
  uint8_t page[4096];
  const char *bad;

  server_start (&s1, "nomem-conn", true);
  m = open_with_magic (s1.uri);
  bad = rw_without_memory (m, 8192, 2);
  ck_assert_msg (bad == NULL, "%s", bad);
  ck_assert_int_eq (member_rw (m, MEMBER_READ, page, sizeof page, 0), 0);
  ck_assert (memcmp (page, magic, sizeof magic) == 0);
  member_close (m);
  server_stop (&s1);
}
END_TEST

/* A new thread, which has no table of connections yet, with no memory:
 * the old code failed its requests with ENOMEM.
 */
static void *
nomem_thread (void *m)
{
  return (void *) rw_without_memory (m, 12288, 3);
}

START_TEST (test_nomem_new_thread)
{
  struct server s1;
  struct member *m;
  pthread_t th;
  void *bad;
  int r;

  server_start (&s1, "nomem-thread", true);
  m = open_with_magic (s1.uri);
  r = pthread_create (&th, NULL, nomem_thread, m);
  if (r == 0)                   /* no assertion while the thread runs */
    pthread_join (th, &bad);
  ck_assert_int_eq (r, 0);
  ck_assert_msg (bad == NULL, "%s", (const char *) bad);
  ck_assert (!member_failed (m));
  member_close (m);
  server_stop (&s1);
}
END_TEST

/* Servers without flush (see the top). */

static void
file_1m (char *path, size_t len, const char *name)
{
  int fd;

  snprintf (path, len, "%s/%s.img", dir, name);
  fd = open (path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_ne (fd, -1);
  ck_assert_int_eq (ftruncate (fd, 1 << 20), 0);
  close (fd);
}

static void
file_read (const char *path, void *buf, size_t len, off_t off)
{
  int fd = open (path, O_RDONLY);

  ck_assert_int_ne (fd, -1);
  ck_assert_int_eq (pread (fd, buf, len, off), (ssize_t) len);
  close (fd);
}

/* Writes (FUA ones too) and flushes to a server without flush succeed
 * and reach its file, with and without multi-conn; the member can make
 * single writes durable, and the open said once that it has no flush.
 * The old code sent the flush, which libnbd refuses: the member failed
 * (and without multi-conn its only connection was dropped, which for a
 * raw member means for good).
 */
START_TEST (test_no_flush)
{
  for (int mc = 0; mc <= 1; mc++) {
    struct server s;
    char file[256];
    uint8_t out[8192], back[8192];
    struct member *m;
    struct member_io ios[3];
    int said;

    file_1m (file, sizeof file, mc ? "noflush-mc" : "noflush");
    server_start_eval (&s, mc ? "noflush-mc" : "noflush", file, false, mc);
    log_clear ();
    m = members_open_member (s.uri, false);
    ck_assert (m != NULL);
    said = log_count ("does not offer flush");
    fill (out, sizeof out, 4 + mc);
    ios[0] = (struct member_io) { .member = m, .op = MEMBER_WRITE,
                                  .buf = out, .len = 4096, .offset = 4096 };
    ios[1] = (struct member_io) { .member = m, .op = MEMBER_WRITE,
                                  .buf = out + 4096, .len = 4096,
                                  .offset = 65536, .fua = m->can_fua };
    ck_assert_int_eq (member_io_run (ios, 2), 0);
    ios[2] = (struct member_io) { .member = m, .op = MEMBER_FLUSH };
    ck_assert_msg (member_io_run (&ios[2], 1) == 0, "flush (multi-conn %d): "
                   "%s", mc, strerror (ios[2].err));
    ck_assert (!member_failed (m));
    /* And the member still works afterwards. */
    ck_assert_int_eq (member_rw (m, MEMBER_READ, back, 4096, 4096), 0);
    ck_assert (memcmp (back, out, 4096) == 0);
    file_read (file, back, 4096, 4096);
    ck_assert (memcmp (back, out, 4096) == 0);
    file_read (file, back + 4096, 4096, 65536);
    ck_assert (memcmp (back + 4096, out + 4096, 4096) == 0);
    ck_assert (!member_failed (m));
    ck_assert_msg (m->can_fua, "a member without flush has nothing more to "
                   "do to make a write durable");
    ck_assert_int_eq (said, 1);
    ck_assert_int_eq (log_count ("does not offer flush"), 0);
    member_close (m);
    server_stop (&s);
  }
}
END_TEST

/* A member whose server comes back with flush where it had none at open,
 * or without it where it had it, is failed at the new connection: the
 * array decided how to make its writes durable from what it was told.
 * (Checked by identity, so that the restart itself is allowed.)  The old
 * code took the new connection as it was.
 */
START_TEST (test_flush_changed)
{
  for (int had = 0; had <= 1; had++) {
    struct server s;
    char file[256];
    uint8_t page[4096];
    struct member *m;
    int r;

    file_1m (file, sizeof file, "changed");
    server_start_eval (&s, "changed", file, had, true);
    m = open_with_magic (s.uri);
    ck_assert_int_eq (member_rw (m, MEMBER_READ, page, sizeof page, 0), 0);
    server_stop (&s);
    server_start_eval (&s, "changed", file, !had, true);
    log_clear ();
    r = member_rw (m, MEMBER_READ, page, sizeof page, 0);
    ck_assert_msg (r == -1 && member_failed (m), "a server restarted %s "
                   "flush was taken for the member", had ? "without" : "with");
    ck_assert_int_eq (log_count (had ? "no longer offers flush"
                                 : "now offers flush"), 1);
    /* Not the member's disk: the member's going away (member.h), at the
     * check and on every request after it.
     */
    ck_assert_msg (errno == ENODEV, "the failed check: %s", strerror (errno));
    ck_assert_int_eq (member_rw (m, MEMBER_READ, page, sizeof page, 0), -1);
    ck_assert_msg (errno == ENODEV, "a request to an untrusted member: %s",
                   strerror (errno));
    member_close (m);
    server_stop (&s);
  }
}
END_TEST

/* m holds out (4 KiB) at offset 0 and is not failed; then m is closed,
 * its server s stopped and the timeout put back.
 */
static void
holds_then_close (struct member *m, struct server *s, const uint8_t *out)
{
  uint8_t back[4096];

  ck_assert_int_eq (member_rw (m, MEMBER_READ, back, sizeof back, 0), 0);
  ck_assert (memcmp (back, out, sizeof back) == 0);
  ck_assert (!member_failed (m));
  member_close (m);
  member_nbd_set_timeout (30000);
  server_stop (s);
}

/* A raw member's server that is only slow (paused) while a new
 * connection is checked: the sentinel does not answer in time, so the
 * check cannot be made and the request fails, but the member keeps its
 * sentinel and works again once the server answers.  The old code took
 * the late answer for a restart and failed the member for good.
 */
START_TEST (test_sentinel_slow)
{
  struct server s;
  uint8_t out[4096];
  struct member *m;
  int r;

  server_start_pausable (&s, "slow");
  member_nbd_set_timeout (1000);
  m = members_open_member (s.uri, false); /* its connection: the sentinel */
  ck_assert (m != NULL);
  fill (out, sizeof out, 7);
  server_pause (&s, 'p');
  log_clear ();
  r = member_rw (m, MEMBER_WRITE, out, sizeof out, 0);
  server_pause (&s, 'r');       /* before any assertion: a paused nbdkit
                                   does not exit */
  ck_assert_int_eq (r, -1);
  ck_assert_msg (!member_failed (m), "a server paused for a second failed "
                 "the member for good");
  ck_assert_int_eq (log_count ("did not answer in time"), 1);
  usleep (300 * 1000);          /* past the backoff (100 ms) */
  ck_assert_int_eq (member_rw (m, MEMBER_WRITE, out, sizeof out, 0), 0);
  holds_then_close (m, &s, out);
}
END_TEST

/* A write to m from a thread, and how long it took. */
struct timed_write {
  struct member *m;
  uint8_t buf[4096];
  int r, err;
  double secs;
};

static void *
timed_write (void *arg)
{
  struct timed_write *t = arg;
  struct timespec t0, t1;

  syscall (SYS_clock_gettime, CLOCK_MONOTONIC, &t0);
  t->r = member_rw (t->m, MEMBER_WRITE, t->buf, sizeof t->buf, 0);
  t->err = t->r == -1 ? errno : 0;
  syscall (SYS_clock_gettime, CLOCK_MONOTONIC, &t1);
  t->secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  return NULL;
}

/* A thread waits for another thread's connection attempt only until its
 * own deadline.  Thread A (10 s timeout) connects to a server that
 * accepts but does not answer the handshake (stopped); this thread, with
 * 1.5 s, needs the same connection and must fail after its 1.5 s.  The
 * old code waited for A's attempt (here until A gave up, 10 s), and had
 * the connection come, sent on it late and dropped it with A's command.
 */
START_TEST (test_connect_wait_bounded)
{
  struct server s;
  struct member *m;
  struct timed_write a = { 0 }, b = { 0 };
  uint8_t back[4096];
  pthread_t ta;
  int st;

  server_start (&s, "stopped", true);
  m = members_open_member (s.uri, false);
  ck_assert (m != NULL);
  kill (s.pid, SIGSTOP);
  ck_assert_int_eq (waitpid (s.pid, &st, WUNTRACED), s.pid);
  member_nbd_set_timeout (10000);
  a.m = b.m = m;
  fill (a.buf, sizeof a.buf, 8);
  fill (b.buf, sizeof b.buf, 9);
  ck_assert_int_eq (pthread_create (&ta, NULL, timed_write, &a), 0);
  usleep (300 * 1000);          /* A is connecting */
  member_nbd_set_timeout (1500);
  timed_write (&b);
  kill (s.pid, SIGCONT);        /* A's handshake goes on */
  ck_assert_int_eq (pthread_join (ta, NULL), 0);
  ck_assert_int_eq (b.r, -1);
  ck_assert_msg (b.err == ETIMEDOUT, "a request that ran out of time "
                 "waiting for a connection: %s", strerror (b.err));
  ck_assert_msg (b.secs < 4.5, "a request with a 1.5 s timeout waited "
                 "%.1f s for another thread's connection attempt", b.secs);
  ck_assert_msg (a.r == 0, "A's write failed after %.1f s", a.secs);
  ck_assert_int_eq (member_rw (m, MEMBER_READ, back, sizeof back, 0), 0);
  ck_assert (memcmp (back, a.buf, sizeof back) == 0);
  ck_assert (!member_failed (m));
  member_close (m);
  member_nbd_set_timeout (30000);
  server_stop (&s);
}
END_TEST

/* A connection attempt that ran out of its request's time, having begun
 * with little of it left, must not make the other requests back off: it
 * says nothing of the server.  Here the clock moves on 240 ms at every
 * read, so that a write's attempt begins near the write's deadline (1 s)
 * and times out; the next write, on the real clock, must connect.  The
 * old code backed off for 100 ms after any failed attempt, and that
 * write failed without one.
 */
START_TEST (test_late_attempt_no_backoff)
{
  struct server s;
  uint8_t out[4096];
  struct member *m;
  int r;

  server_start (&s, "late", true);
  member_nbd_set_timeout (1000);
  m = members_open_member (s.uri, false); /* no serving connection yet */
  ck_assert (m != NULL);
  fill (out, sizeof out, 10);
  __atomic_store_n (&clock_step_ms, 240, __ATOMIC_RELEASE);
  r = member_rw (m, MEMBER_WRITE, out, sizeof out, 0);
  __atomic_store_n (&clock_step_ms, 0, __ATOMIC_RELEASE);
  ck_assert_msg (r == -1, "the write with the stepping clock succeeded: "
                 "this test no longer makes a late attempt");
  ck_assert_msg (member_rw (m, MEMBER_WRITE, out, sizeof out, 0) == 0,
                 "a late attempt made the next request back off");
  holds_then_close (m, &s, out);
}
END_TEST

/* Error classes (see the top). */

/* The request's error, after member_io_run said it failed. */
static int
failed_with (struct member *m, enum member_op op, void *buf, uint64_t len)
{
  struct member_io io = { .member = m, .op = op, .buf = buf, .len = len };

  ck_assert_int_eq (member_io_run (&io, 1), -1);
  ck_assert_int_eq (errno, io.err);
  return io.err;
}

/* A server that answers every read with EIO, every write with ENOSPC and
 * every zero with ESHUTDOWN: each request fails with the server's errno,
 * EIO the medium's and the others not, on a connection that stays up (a
 * flush and, once the filter is off, a read go through).  The old code
 * turned all three into EIO.  The failure policy still fails the member
 * on a medium's error.
 */
START_TEST (test_server_errors)
{
  struct server s;
  char on[256], rfile[300], wfile[300], zfile[300];
  const char *args[] = {
    "--filter=error", "memory", "size=1M",
    "error-pread=EIO", "error-pread-rate=100%", rfile,
    "error-pwrite=ENOSPC", "error-pwrite-rate=100%", wfile,
    "error-zero=ESHUTDOWN", "error-zero-rate=100%", zfile, NULL
  };
  uint8_t page[4096] = { 0 };
  struct member_io flush;
  struct member *m;
  int e;

  /* Errors only while the file `on` exists. */
  snprintf (on, sizeof on, "%s/errors.on", dir);
  snprintf (rfile, sizeof rfile, "error-pread-file=%s", on);
  snprintf (wfile, sizeof wfile, "error-pwrite-file=%s", on);
  snprintf (zfile, sizeof zfile, "error-zero-file=%s", on);
  server_spawn (&s, "errors", args);
  m = members_open_member (s.uri, false);
  ck_assert (m != NULL);
  ck_assert_int_eq (member_rw (m, MEMBER_READ, page, sizeof page, 0), 0);
  ck_assert_int_eq (close (open (on, O_CREAT | O_WRONLY, 0600)), 0);

  e = failed_with (m, MEMBER_READ, page, sizeof page);
  ck_assert_msg (e == EIO, "a server's EIO on a read came back as %s",
                 strerror (e));
  ck_assert (member_error_is_media (MEMBER_READ, e));
  e = failed_with (m, MEMBER_WRITE, page, sizeof page);
  ck_assert_msg (e == ENOSPC, "a server's ENOSPC on a write came back as %s",
                 strerror (e));
  ck_assert (!member_error_is_media (MEMBER_WRITE, e));
  e = failed_with (m, MEMBER_ZERO, NULL, sizeof page);
  ck_assert_msg (e == ESHUTDOWN, "a server's ESHUTDOWN on a zero came back "
                 "as %s", strerror (e));
  ck_assert (!member_error_is_media (MEMBER_ZERO, e));

  flush = (struct member_io) { .member = m, .op = MEMBER_FLUSH };
  ck_assert_msg (member_io_run (&flush, 1) == 0, "the connection did not "
                 "survive the server's errors: %s", strerror (flush.err));
  ck_assert_int_eq (unlink (on), 0);
  ck_assert_int_eq (member_rw (m, MEMBER_READ, page, sizeof page, 0), 0);
  ck_assert (!member_failed (m));
  ck_assert (members_io_error (m, MEMBER_READ, EIO));
  ck_assert (member_failed (m));
  member_close (m);
  server_stop (&s);
}
END_TEST

/* A server killed under a member that had a connection: the request
 * sent again finds no server, and fails with ENOTCONN (the next one,
 * backing off, too); the policy fails the member.  The old code said
 * EIO.
 */
START_TEST (test_killed_server)
{
  struct server s;
  uint8_t page[4096];
  struct member *m;
  int e;

  server_start (&s, "killed", true);
  m = members_open_member (s.uri, false);
  ck_assert (m != NULL);
  ck_assert_int_eq (member_rw (m, MEMBER_READ, page, sizeof page, 0), 0);
  server_stop (&s);
  for (int i = 0; i < 2; i++) {
    e = failed_with (m, MEMBER_READ, page, sizeof page);
    ck_assert_msg (e == ENOTCONN, "read %d from a killed server: %s", i,
                   strerror (e));
    ck_assert (!member_error_is_media (MEMBER_READ, e));
  }
  ck_assert (members_io_error (m, MEMBER_READ, e));
  ck_assert (member_failed (m));
  member_close (m);
}
END_TEST

/* A server that answers nothing (stopped) past the member-timeout: the
 * request fails with ETIMEDOUT, with and without a serving connection
 * at the time.  The old code said EIO.
 */
START_TEST (test_hung_server)
{
  for (int connected = 0; connected <= 1; connected++) {
    struct server s;
    uint8_t page[4096];
    struct member *m;
    int e, st;

    server_start (&s, connected ? "hung-conn" : "hung-new", true);
    m = members_open_member (s.uri, false);
    ck_assert (m != NULL);
    if (connected)
      ck_assert_int_eq (member_rw (m, MEMBER_READ, page, sizeof page, 0), 0);
    kill (s.pid, SIGSTOP);
    ck_assert_int_eq (waitpid (s.pid, &st, WUNTRACED), s.pid);
    member_nbd_set_timeout (1000);
    e = failed_with (m, MEMBER_READ, page, sizeof page);
    member_nbd_set_timeout (30000);
    ck_assert_msg (e == (connected ? ETIMEDOUT : ENOTCONN), "read from a "
                   "hung server (%s): %s", connected ? "connected"
                   : "connecting", strerror (e));
    ck_assert (!member_error_is_media (MEMBER_READ, e));
    member_close (m);
    server_stop (&s);
  }
}
END_TEST

/* One case per test, so that each can be run alone (CK_RUN_CASE=...). */
static Suite *
member_nbd_suite (void)
{
  const struct check_case cases[] = {
    { "eventfd-retry", test_eventfd_retry },  /* first: see there */
    { "ids", test_ids_reused },
    { "reuse", test_reused_id_new_connection },
    { "timeout", test_timeout_never_negative },
    { "concurrency", test_ids_while_io },
    { "nomem-batch", test_nomem_batch },
    { "nomem-connection", test_nomem_new_connection },
    { "nomem-thread", test_nomem_new_thread },
    { "no-flush", test_no_flush },
    { "flush-changed", test_flush_changed },
    { "sentinel-slow", test_sentinel_slow },
    { "connect-wait", test_connect_wait_bounded },
    { "late-attempt", test_late_attempt_no_backoff },
    { "server-errors", test_server_errors },
    { "killed", test_killed_server },
    { "hung", test_hung_server },
  };

  return check_suite ("member_nbd", CHECK_CASES (cases), 60);
}

static bool
have_nbdkit (void)
{
  return system ("nbdkit --version >/dev/null 2>&1") == 0 &&
    system ("nbdkit --filter=multi-conn memory --dump-plugin "
            ">/dev/null 2>&1") == 0 &&
    system ("nbdkit eval --dump-plugin >/dev/null 2>&1") == 0 &&
    system ("nbdkit --filter=error memory --dump-plugin "
            ">/dev/null 2>&1") == 0 &&
    system ("dd --version >/dev/null 2>&1") == 0;
}

int
main (void)
{
  char cmd[64 + sizeof dir];
  int status;

  if (!have_nbdkit ()) {
    printf ("SKIP: this test needs nbdkit with the memory and eval plugins "
            "and the multi-conn and error filters, and dd\n");
    return 77;
  }
  signal (SIGPIPE, SIG_IGN);
  if (mkdtemp (dir) == NULL) {
    perror ("mkdtemp");
    return EXIT_FAILURE;
  }
  status = check_run (member_nbd_suite (), true);
  snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system (cmd) != 0)
    fprintf (stderr, "could not remove %s\n", dir);
  return status;
}
