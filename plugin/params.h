/* SPDX-License-Identifier: BSD-3-Clause */
/* The plugin's parameters; see params.c. */

#ifndef RAID_PARAMS_H
#define RAID_PARAMS_H

#include <stdbool.h>

#include "array_config.h"
#include "member_table.h"

struct raid_params {
  struct array_config array;    /* what array_open needs */
  const char *parity_impl;      /* parity=, or NULL */
  char *control_path;           /* control=, absolute; or NULL */
  int member_timeout_ms;        /* member-timeout=, 0: the default */
  int max_read_errors;          /* max-read-errors=, -1: the default */
  bool readd_auto;              /* readd=auto */
  int nspares;                  /* spare=, in the order given */
  const char *spares[MEMBERS_MAX_SPARES];
};

/* The defaults (RAID-6, left-symmetric, 512K chunks, 64M cache). */
void params_init (struct raid_params *p);
/* One key=value from the command line.  Values are kept by pointer
 * (nbdkit keeps argv alive).  Returns 0, or -1 after nbdkit_error naming
 * the parameter.
 */
int params_set (struct raid_params *p, const char *key, const char *value);
/* The checks that need every parameter.  0, or -1 after nbdkit_error. */
int params_check (const struct raid_params *p);
void params_free (struct raid_params *p);

/* --help text. */
#define PARAMS_HELP \
  "level=5|6               RAID level (default 6).\n" \
  "disk=PATH|URI|missing   A member, repeated in role order: a file, a block\n" \
  "                        device, an NBD URI (nbd://, nbd+unix://), or\n" \
  "                        missing for one absent (failed) from the start.\n" \
  "chunk=SIZE              Chunk size, power of two >= 4K (default 512K).\n" \
  "layout=NAME             md layout (default left-symmetric).\n" \
  "data-offset=SIZE        Where array data starts on each member (default:\n" \
  "                        0 raw, 1M with create=true; md: its superblocks).\n" \
  "cache=SIZE              Stripe cache budget (default 64M).\n" \
  "direct=BOOL             Open members with O_DIRECT (default: block\n" \
  "                        devices only).\n" \
  "readonly=true           Write nothing to any member (as nbdkit -r, which\n" \
  "                        the plugin also detects): no resync, no rebuild.\n" \
  "parity=NAME             Force a parity implementation.\n" \
  "member-timeout=SECONDS  Fail an NBD member's requests after this (default 30).\n" \
  "max-read-errors=N       Read errors a member's medium may have lately (they\n" \
  "                        are corrected) before it is failed (default 20).\n" \
  "spare=PATH|URI          A hot spare (repeatable): a failed member's role\n" \
  "                        is rebuilt onto it at once, as md does.\n" \
  "control=PATH            Unix socket for nbdkit-raid-ctl (status, fail,\n" \
  "                        replace, re-add, add-spare, remove-spare, scrub).\n" \
  "rebuild-rate=SIZE       Cap on rebuild and resync bytes per second\n" \
  "                        (default: none).\n" \
  "readd=manual|auto       auto: re-add a failed member that answers again\n" \
  "                        and is the same disk (default manual).\n" \
  "metadata=md|none        md superblocks (default), or none: raw mode,\n" \
  "                        the geometry is what the parameters say.\n" \
  "metadata-version=1.0|1.1|1.2  md superblock version: what create=true\n" \
  "                        writes, or the one assembled (default 1.2;\n" \
  "                        v1.0 and v1.1 arrays need it at every start).\n" \
  "create=true             Write fresh md superblocks (force=true: overwrite).\n" \
  "bitmap=internal|none    With create=true: md write-intent bitmap (default\n" \
  "                        internal).\n" \
  "bitmap-chunk=SIZE       With create=true: bytes of each member per bitmap\n" \
  "                        bit (default 64M, more if needed to fit 128K).\n" \
  "bitmap-delay=SECONDS    With create=true: idle time before a bit is\n" \
  "                        cleared (default 5)."

#endif /* RAID_PARAMS_H */
