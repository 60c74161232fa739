/* The control socket: how an operator sees and steers a running array.
 *
 * With control=PATH the plugin listens on a Unix socket at PATH (mode 0600:
 * whoever may use it may fail members).  A client connects, writes one
 * command line, and reads the reply until the plugin closes the
 * connection.  Replies are "ok", "error: WHY", or for status one JSON
 * object; nbdkit-raid-ctl(1) is the command-line client.
 *
 *   status                     array, members, rebuild and scrub progress
 *   fail N                     mark member N failed
 *   replace N PATH|URI         rebuild a failed member N onto a new member
 *   scrub check|repair|stop    verify (and fix) parity in the background
 *
 * One thread accepts and serves connections one at a time; every command
 * is short (the long work runs in rebuild.c's job thread), so a slow
 * client cannot hold anything but other operators.
 */

#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "array.h"
#include "control.h"

static int listen_fd = -1;
static pthread_t thread;
static bool running;
static char *socket_path;

static void
reply_ok (FILE *f, int r, const char *why)
{
  if (r == 0)
    fprintf (f, "ok\n");
  else
    fprintf (f, "error: %s\n", why);
}

/* A member index: digits only, or -1. */
static int
parse_index (const char *s)
{
  char *end;
  long v;

  if (*s < '0' || *s > '9')
    return -1;
  errno = 0;
  v = strtol (s, &end, 10);
  return *end || errno || v > 65535 ? -1 : (int) v;
}

static void
command (struct array *a, char *line, FILE *f)
{
  char *words[4] = { NULL }, *save = NULL, *why = NULL;
  int n = 0, r;

  for (char *w = strtok_r (line, " \t\r\n", &save); w && n < 4;
       w = strtok_r (NULL, " \t\r\n", &save))
    words[n++] = w;

  if (n == 1 && strcmp (words[0], "status") == 0)
    array_status_json (a, f);
  else if (n == 2 && strcmp (words[0], "fail") == 0) {
    r = array_fail_member (a, parse_index (words[1]), &why);
    reply_ok (f, r, why);
  }
  else if (n == 3 && strcmp (words[0], "replace") == 0) {
    r = array_replace_member (a, parse_index (words[1]), words[2], &why);
    reply_ok (f, r, why);
  }
  else if (n == 2 && strcmp (words[0], "scrub") == 0 &&
           (strcmp (words[1], "check") == 0 || strcmp (words[1], "repair") == 0)) {
    r = array_scrub_start (a, words[1][0] == 'r', &why);
    reply_ok (f, r, why);
  }
  else if (n == 2 && strcmp (words[0], "scrub") == 0 &&
           strcmp (words[1], "stop") == 0) {
    array_scrub_stop (a);
    reply_ok (f, 0, NULL);
  }
  else
    fprintf (f, "error: unknown command (status, fail N, replace N PATH, "
             "scrub check|repair|stop)\n");
}

static void *
control_thread (void *arg)
{
  struct array *a = arg;

  for (;;) {
    int fd = accept4 (listen_fd, NULL, NULL, SOCK_CLOEXEC);
    FILE *f;
    char line[4096];

    if (fd == -1) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      return NULL;              /* control_stop shut the socket down */
    }
    f = fdopen (fd, "r+");
    if (f == NULL) {
      close (fd);
      continue;
    }
    if (fgets (line, sizeof line, f))
      command (a, line, f);
    fclose (f);
  }
}

int
control_start (struct array *a, const char *path)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  mode_t old;

  if (strlen (path) >= sizeof addr.sun_path) {
    nbdkit_error ("control=%s: path too long for a Unix socket", path);
    return -1;
  }
  strcpy (addr.sun_path, path);
  listen_fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd == -1) {
    nbdkit_error ("control socket: %m");
    return -1;
  }
  unlink (path);
  old = umask (077);
  if (bind (listen_fd, (struct sockaddr *) &addr, sizeof addr) == -1 ||
      listen (listen_fd, 8) == -1) {
    umask (old);
    nbdkit_error ("control=%s: %m", path);
    close (listen_fd);
    listen_fd = -1;
    return -1;
  }
  umask (old);
  socket_path = strdup (path);
  if (pthread_create (&thread, NULL, control_thread, a)) {
    nbdkit_error ("control: cannot start a thread");
    return -1;
  }
  running = true;
  return 0;
}

void
control_stop (void)
{
  if (!running)
    return;
  shutdown (listen_fd, SHUT_RDWR);
  pthread_join (thread, NULL);
  close (listen_fd);
  unlink (socket_path);
  free (socket_path);
  running = false;
}
