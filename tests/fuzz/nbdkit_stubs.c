/* SPDX-License-Identifier: BSD-3-Clause */
/* The few nbdkit functions plugin/params.c calls, for fuzz_params: the
 * plugin gets them from the nbdkit that loads it, a fuzzer has no nbdkit.
 * Written here from nbdkit's documented behaviour (nbdkit-plugin(3)), not
 * copied: each accepts and refuses what nbdkit's does for the inputs
 * params.c can see, reports a refusal through nbdkit_error (which formats
 * its message, so a bad format argument is still caught) and never
 * aborts.
 */

#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

void
nbdkit_verror (const char *fs, va_list args)
{
  char msg[1024];

  vsnprintf (msg, sizeof msg, fs, args);
}

void
nbdkit_error (const char *fs, ...)
{
  va_list args;

  va_start (args, fs);
  nbdkit_verror (fs, args);
  va_end (args);
}

void
nbdkit_debug (const char *fs, ...)
{
}

/* A size: decimal digits, then at most one of the suffixes b, k, m, g,
 * t, p, e (either case; powers of 1024).  Negative, empty, overflowing
 * or trailing junk: -1.
 */
int64_t
nbdkit_parse_size (const char *str)
{
  static const char suffixes[] = "bkmgtpe";
  const char *s;
  char *end;
  unsigned long long v;
  int shift = 0;

  for (s = str; isspace ((unsigned char) *s); s++)
    ;
  if (!isdigit ((unsigned char) *s)) {
    nbdkit_error ("could not parse size string (%s)", str);
    return -1;
  }
  errno = 0;
  v = strtoull (s, &end, 10);
  if (errno || v > INT64_MAX) {
    nbdkit_error ("size (%s) exceeds maximum value", str);
    return -1;
  }
  if (*end) {
    const char *p = strchr (suffixes, tolower ((unsigned char) *end));

    if (p == NULL || end[1] != '\0') {
      nbdkit_error ("could not parse size: unknown suffix '%s'", end);
      return -1;
    }
    shift = 10 * (int) (p - suffixes);
  }
  if (shift && v > (uint64_t) INT64_MAX >> shift) {
    nbdkit_error ("size (%s) exceeds maximum value", str);
    return -1;
  }
  return (int64_t) (v << shift);
}

int
nbdkit_parse_bool (const char *str)
{
  static const char *const yes[] = { "1", "true", "t", "yes", "y", "on" };
  static const char *const no[] = { "0", "false", "f", "no", "n", "off" };

  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    if (strcasecmp (str, yes[i]) == 0)
      return 1;
    if (strcasecmp (str, no[i]) == 0)
      return 0;
  }
  nbdkit_error ("could not decipher boolean (%s)", str);
  return -1;
}

/* An unsigned 32-bit integer in C notation (decimal, 0x hex, 0 octal). */
int
nbdkit_parse_uint32_t (const char *what, const char *str, uint32_t *rp)
{
  const char *s;
  char *end;
  unsigned long long v;

  for (s = str; isspace ((unsigned char) *s); s++)
    ;
  if (*s == '-' || *s == '\0') {
    nbdkit_error ("%s: could not parse number: \"%s\"", what, str);
    return -1;
  }
  errno = 0;
  v = strtoull (s, &end, 0);
  if (errno || *end || end == s || v > UINT32_MAX) {
    nbdkit_error ("%s: could not parse number: \"%s\"", what, str);
    return -1;
  }
  if (rp)
    *rp = v;
  return 0;
}

/* As nbdkit: relative to the directory nbdkit started in (here a fixed
 * one, for repeatable runs); an empty path is an error.
 */
char *
nbdkit_absolute_path (const char *path)
{
  static const char cwd[] = "/fuzz-cwd/";
  char *r;

  if (path == NULL || path[0] == '\0') {
    nbdkit_error ("cannot convert null or empty path to an absolute path");
    return NULL;
  }
  if (path[0] == '/')
    r = strdup (path);
  else if ((r = malloc (sizeof cwd + strlen (path))) != NULL) {
    memcpy (r, cwd, sizeof cwd - 1);
    strcpy (r + sizeof cwd - 1, path);
  }
  if (r == NULL)
    nbdkit_error ("strdup: %m");
  return r;
}
