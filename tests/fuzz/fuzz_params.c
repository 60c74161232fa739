/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the parameter parser (plugin/params.c: params_set,
 * then params_check and params_free), as nbdkit's config callbacks drive
 * it from the command line.
 *
 * The input is a command line, one parameter per line: "key=value", or a
 * bare word, which the plugin's magic_config_key makes disk=WORD.  Each
 * goes to params_set in order, stopping at the first refusal as nbdkit
 * does; then params_check and params_free, which must leave nothing
 * behind (LeakSanitizer).  The values stay in the input's copy until the
 * end: params.c keeps them by pointer, as nbdkit keeps argv alive.
 * Checked besides: at most GEOMETRY_MAX_MEMBERS members are ever taken,
 * and every one is a string of the input.
 * nbdkit's functions come from nbdkit_stubs.c.  Seeds:
 * tests/fuzz/corpus/params/; tests/fuzz/params.dict gives the keys.
 */

#include <config.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char *text = malloc (size + 1), *save = NULL;
  struct raid_params p;
  int r = 0;

  if (!text)
    abort ();
  memcpy (text, data, size);
  text[size] = '\0';

  params_init (&p);
  for (char *line = strtok_r (text, "\n", &save); line && r == 0;
       line = strtok_r (NULL, "\n", &save)) {
    char *eq = strchr (line, '=');

    if (eq) {
      *eq = '\0';
      r = params_set (&p, line, eq + 1);
    }
    else
      r = params_set (&p, "disk", line);
  }
  if (r == 0)
    params_check (&p);

  if (p.array.ndisks > GEOMETRY_MAX_MEMBERS)
    abort ();
  for (int i = 0; i < p.array.ndisks; i++)
    if (p.array.disks[i] < text || p.array.disks[i] > text + size)
      abort ();
  params_free (&p);
  free (text);
  return 0;
}
