/* SPDX-License-Identifier: BSD-3-Clause */
/* One line of the control socket's protocol, parsed; see
 * control_command.c.
 */

#ifndef RAID_CONTROL_COMMAND_H
#define RAID_CONTROL_COMMAND_H

#include <stdbool.h>

enum control_verb {
  CONTROL_STATUS,
  CONTROL_FAIL,                 /* member, force */
  CONTROL_REPLACE,              /* member, path */
  CONTROL_READD,                /* member */
  CONTROL_SCRUB_CHECK,
  CONTROL_SCRUB_REPAIR,
  CONTROL_SCRUB_STOP,
  CONTROL_ADD_SPARE,            /* path */
  CONTROL_REMOVE_SPARE,         /* member: the spare's index */
};

struct control_command {
  enum control_verb verb;
  int member;                   /* FAIL, REPLACE, READD: a member index;
                                   REMOVE_SPARE: a spare's */
  const char *path;             /* REPLACE, ADD_SPARE: points into the
                                   parsed line */
  bool force;                   /* FAIL, REPLACE: the word "force" followed */
};

/* Parse one command line (without or with its newline); line is cut into
 * words in place.  Returns 0, or -1 with a static message in *why.
 */
int control_command_parse (char *line, struct control_command *cmd,
                           const char **why);

#endif /* RAID_CONTROL_COMMAND_H */
