/* Description: the NBD member backend (plugin/member_nbd.c) alone,
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
 * member_nbd.c, linked into this program, calls them): normally the real
 * ones; while `clock_step_ms` is set, every read of CLOCK_MONOTONIC moves
 * the clock on by that much, which puts the batch deadline between two
 * consecutive clock reads of the code under test, and poll records the
 * smallest timeout it was given (a negative one waits forever; it is
 * replaced by 100 ms here, so that the old code fails instead of hanging).
 *
 * The concurrency case is worth most under ThreadSanitizer
 * (tests/test-member-nbd-tsan.sh builds this file with it): an id taken
 * or given back while another thread runs a batch must be synchronised.
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
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "member.h"

/* What member.c and member_nbd.c need from nbdkit and the file backend. */
void
nbdkit_error (const char *fs, ...)
{
  va_list ap;

  va_start (ap, fs);
  fprintf (stderr, "error: ");
  vfprintf (stderr, fs, ap);
  fprintf (stderr, "\n");
  va_end (ap);
}

void
nbdkit_debug (const char *fs, ...)
{
}

struct member *
member_file_open (const char *path, bool direct)
{
  return NULL;
}

bool
member_file_same (const struct member *a, const struct member *b)
{
  return false;
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
};

static void
server_start (struct server *s, const char *name, bool multi_conn)
{
  char pidfile[256];

  snprintf (s->sock, sizeof s->sock, "%s/%s.sock", dir, name);
  snprintf (pidfile, sizeof pidfile, "%s/%s.pid", dir, name);
  snprintf (s->uri, sizeof s->uri, "nbd+unix:///?socket=%s", s->sock);
  unlink (pidfile);
  s->pid = fork ();
  ck_assert_int_ne (s->pid, -1);
  if (s->pid == 0) {
    if (multi_conn)
      execlp ("nbdkit", "nbdkit", "-f", "--exit-with-parent", "-U", s->sock,
              "-P", pidfile, "memory", "size=1M", (char *) NULL);
    else
      execlp ("nbdkit", "nbdkit", "-f", "--exit-with-parent", "-U", s->sock,
              "-P", pidfile, "--filter=multi-conn", "memory", "size=1M",
              "multi-conn-mode=disable", (char *) NULL);
    _exit (127);
  }
  for (int i = 0; i < 1000 && access (pidfile, F_OK) == -1; i++) {
    ck_assert_msg (waitpid (s->pid, NULL, WNOHANG) == 0,
                   "nbdkit exited before serving %s", s->sock);
    usleep (10000);
  }
  ck_assert_msg (access (pidfile, F_OK) == 0, "nbdkit did not start");
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
    struct member *m = member_open (s.uri, false);

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
  a = member_open (s1.uri, false);
  ck_assert (a != NULL);
  ck_assert_int_eq (member_rw (a, MEMBER_READ, buf, sizeof buf, 0), 0);
  member_close (a);             /* its id is free, this thread's slot stale */
  b = member_open (s2.uri, false);
  ck_assert (b != NULL);
  ck_assert_int_eq (member_rw (b, MEMBER_WRITE, pat, sizeof pat, 0), 0);
  c = member_open (s1.uri, false);
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
  int r, st;

  server_start (&s, "hung", true);
  member_nbd_set_timeout (2000);
  m = member_open (s.uri, false);
  ck_assert (m != NULL);
  ck_assert_int_eq (member_rw (m, MEMBER_READ, buf, sizeof buf, 0), 0);
  kill (s.pid, SIGSTOP);        /* answers nothing from now on, */
  ck_assert_int_eq (waitpid (s.pid, &st, WUNTRACED), s.pid);
  ck_assert (WIFSTOPPED (st));  /* once all its threads have stopped */
  syscall (SYS_clock_gettime, CLOCK_MONOTONIC, &t0);
  __atomic_store_n (&clock_step_ms, 1200, __ATOMIC_RELEASE);
  r = member_rw (m, MEMBER_READ, buf, sizeof buf, 0);
  __atomic_store_n (&clock_step_ms, 0, __ATOMIC_RELEASE);
  syscall (SYS_clock_gettime, CLOCK_MONOTONIC, &t1);
  ck_assert_msg (poll_min_timeout >= 0, "poll was given timeout %d (forever)",
                 poll_min_timeout);
  ck_assert_int_eq (r, -1);
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
  m1 = member_open (s1.uri, false);
  m2 = member_open (s2.uri, false);
  ck_assert (m1 && m2);
  t[0] = (struct io_thread) { .m = { m1, m2 } };
  t[1] = (struct io_thread) { .m = { m2, m1 } };
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq (pthread_create (&th[i], NULL, io_loop, &t[i]), 0);
  for (int i = 0; i < 40; i++) {
    struct member *m = member_open (s3.uri, false);

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

/* One case per test, so that each can be run alone (CK_RUN_CASE=...). */
static Suite *
member_nbd_suite (void)
{
  const struct { const char *name; const TTest *test; } cases[] = {
    { "ids", test_ids_reused },
    { "reuse", test_reused_id_new_connection },
    { "timeout", test_timeout_never_negative },
    { "concurrency", test_ids_while_io },
  };
  Suite *s = suite_create ("member_nbd");

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    TCase *tc = tcase_create (cases[i].name);

    tcase_set_timeout (tc, 60);
    tcase_add_test (tc, cases[i].test);
    suite_add_tcase (s, tc);
  }
  return s;
}

static bool
have_nbdkit (void)
{
  return system ("nbdkit --version >/dev/null 2>&1") == 0 &&
    system ("nbdkit --filter=multi-conn memory --dump-plugin "
            ">/dev/null 2>&1") == 0;
}

int
main (void)
{
  SRunner *sr;
  int failed;
  char cmd[64 + sizeof dir];

  if (!have_nbdkit ()) {
    printf ("SKIP: this test needs nbdkit with the memory plugin and the "
            "multi-conn filter\n");
    return 77;
  }
  signal (SIGPIPE, SIG_IGN);
  if (mkdtemp (dir) == NULL) {
    perror ("mkdtemp");
    return EXIT_FAILURE;
  }
  sr = srunner_create (member_nbd_suite ());
  srunner_set_fork_status (sr, CK_NOFORK);
  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system (cmd) != 0)
    fprintf (stderr, "could not remove %s\n", dir);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
