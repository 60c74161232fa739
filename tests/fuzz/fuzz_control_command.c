/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: control_command_parse (plugin/control_command.c), the
 * parser of the lines nbdkit-raid-ctl (or anyone who can open the control
 * socket) sends.
 *
 * The input is one line, as control.c hands it over: NUL-terminated, in
 * a heap buffer of exactly its size plus the NUL (the parser cuts it into
 * words in place; a write or read past it is an ASan report).  What the
 * rest of the plugin relies on is checked too:
 *   - a refusal has a reason;
 *   - fail, replace and re-add name a member index 0..65535 (the array
 *     checks it against its members);
 *   - replace's path is a non-empty word inside the line's buffer;
 *   - the verb is one of the enum's.
 * Seeds: tests/fuzz/corpus/control_command/ (one command per file);
 * tests/fuzz/control_command.dict gives libFuzzer the words.
 */

#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_command.h"

static void
fail (const char *what)
{
  fprintf (stderr, "fuzz_control_command: %s\n", what);
  abort ();
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char *line = malloc (size + 1);
  struct control_command cmd;
  const char *why = NULL;

  if (!line)
    abort ();
  memcpy (line, data, size);
  line[size] = '\0';

  if (control_command_parse (line, &cmd, &why) == -1) {
    if (why == NULL || why[0] == '\0')
      fail ("refused without a reason");
  }
  else {
    if (cmd.verb < CONTROL_STATUS || cmd.verb > CONTROL_REMOVE_SPARE)
      fail ("accepted with an unknown verb");
    if ((cmd.verb == CONTROL_FAIL || cmd.verb == CONTROL_REPLACE ||
         cmd.verb == CONTROL_READD || cmd.verb == CONTROL_REMOVE_SPARE) &&
        (cmd.member < 0 || cmd.member > 65535))
      fail ("accepted with a member or spare index out of range");
    if ((cmd.verb == CONTROL_REPLACE || cmd.verb == CONTROL_ADD_SPARE) &&
        (cmd.path == NULL || cmd.path < line || cmd.path >= line + size ||
         cmd.path[0] == '\0'))
      fail ("replace or add-spare accepted without a path in the line");
  }
  free (line);
  return 0;
}
