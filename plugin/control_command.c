/* SPDX-License-Identifier: BSD-3-Clause */
/* The control socket's command language.
 *
 *   status                     array, members, rebuild and scrub progress
 *   fail N [force]             mark member N failed
 *   replace N PATH|URI [force] rebuild a failed member N onto a new member
 *                              (force: even over another array's disk)
 *   re-add N                   take failed member N's own disk back,
 *                              resyncing what it missed (the
 *                              bitmap's or the in-memory marks)
 *   scrub check|repair|stop    verify (and fix) parity in the background
 *   add-spare PATH|URI         a hot spare: rebuilt onto when a member fails
 *   remove-spare N             spare N (status's index) leaves the array
 *
 * Words are separated by blanks; a member index is decimal digits only.
 * The parser only reads the line: what a command does, and whether the
 * array allows it now, is for control.c and the array to decide.  It is
 * kept apart so that it can be fuzzed (tests/fuzz/fuzz_control_command.c).
 */

#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "control_command.h"

#define MAX_WORDS 4

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

int
control_command_parse (char *line, struct control_command *cmd,
                       const char **why)
{
  char *words[MAX_WORDS + 1] = { NULL }, *save = NULL;
  int n = 0;

  for (char *w = strtok_r (line, " \t\r\n", &save); w && n <= MAX_WORDS;
       w = strtok_r (NULL, " \t\r\n", &save))
    words[n++] = w;

  memset (cmd, 0, sizeof *cmd);
  cmd->member = -1;
  if (n == 1 && strcmp (words[0], "status") == 0)
    cmd->verb = CONTROL_STATUS;
  else if ((n == 2 || (n == 3 && strcmp (words[2], "force") == 0)) &&
           strcmp (words[0], "fail") == 0) {
    cmd->verb = CONTROL_FAIL;
    cmd->member = parse_index (words[1]);
    cmd->force = n == 3;
  }
  else if ((n == 3 || (n == 4 && strcmp (words[3], "force") == 0)) &&
           strcmp (words[0], "replace") == 0) {
    cmd->verb = CONTROL_REPLACE;
    cmd->member = parse_index (words[1]);
    cmd->path = words[2];
    cmd->force = n == 4;
  }
  else if (n == 2 && strcmp (words[0], "re-add") == 0) {
    cmd->verb = CONTROL_READD;
    cmd->member = parse_index (words[1]);
  }
  else if (n == 2 && strcmp (words[0], "scrub") == 0 &&
           strcmp (words[1], "check") == 0)
    cmd->verb = CONTROL_SCRUB_CHECK;
  else if (n == 2 && strcmp (words[0], "scrub") == 0 &&
           strcmp (words[1], "repair") == 0)
    cmd->verb = CONTROL_SCRUB_REPAIR;
  else if (n == 2 && strcmp (words[0], "scrub") == 0 &&
           strcmp (words[1], "stop") == 0)
    cmd->verb = CONTROL_SCRUB_STOP;
  else if (n == 2 && strcmp (words[0], "add-spare") == 0) {
    cmd->verb = CONTROL_ADD_SPARE;
    cmd->path = words[1];
  }
  else if (n == 2 && strcmp (words[0], "remove-spare") == 0) {
    cmd->verb = CONTROL_REMOVE_SPARE;
    cmd->member = parse_index (words[1]);
  }
  else {
    *why = "unknown command (status, fail N [force], replace N PATH [force], "
      "re-add N, add-spare PATH, remove-spare N, scrub check|repair|stop)";
    return -1;
  }
  if ((cmd->verb == CONTROL_FAIL || cmd->verb == CONTROL_REPLACE ||
       cmd->verb == CONTROL_READD) && cmd->member < 0) {
    *why = "no such member";
    return -1;
  }
  if (cmd->verb == CONTROL_REMOVE_SPARE && cmd->member < 0) {
    *why = "no such spare";
    return -1;
  }
  return 0;
}
