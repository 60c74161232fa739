/* The control socket: how an operator sees and steers a running array.
 *
 * With control=PATH the plugin listens on a Unix socket at PATH (mode 0600:
 * whoever may use it may fail members).  A client connects, writes one
 * command line, and reads the reply until the plugin closes the
 * connection.  Replies are "ok", "error: WHY", or for status one JSON
 * object; nbdkit-raid-ctl(1) is the command-line client.
 *
 *   status, fail N [force], replace N PATH|URI, scrub check|repair|stop
 *
 * (the language is control_command.c's).
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
#include "control_command.h"

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

static void
command (struct array *a, char *line, FILE *f)
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
    array_status_json (a, f);
    return;
  case CONTROL_FAIL:
    r = array_fail_member (a, cmd.member, cmd.force, &why);
    break;
  case CONTROL_REPLACE:
    r = array_replace_member (a, cmd.member, cmd.path, cmd.force, &why);
    break;
  case CONTROL_SCRUB_CHECK:
  case CONTROL_SCRUB_REPAIR:
    r = array_scrub_start (a, cmd.verb == CONTROL_SCRUB_REPAIR, &why);
    break;
  case CONTROL_SCRUB_STOP:
    array_scrub_stop (a);
    break;
  }
  reply_ok (f, r, why);
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
