/* SPDX-License-Identifier: BSD-3-Clause */
/* Whether nbdkit was started with -r; see nbdkit_cmdline.c. */

#ifndef RAID_NBDKIT_CMDLINE_H
#define RAID_NBDKIT_CMDLINE_H

#include <stdbool.h>

/* Parse an nbdkit 1.32 or 1.42 command line as its getopt_long does: 1
 * if it holds -r / --read-only / --readonly (or a prefix getopt takes for
 * one), 0 if not, -1 if getopt would refuse it.
 */
int nbdkit_cmdline_read_only (int argc, char *const *argv,
                              bool posixly_correct);

/* The same for this process: the argv nbdkit's main() got (not the
 * dynamic loader's, when nbdkit was started by one), POSIXLY_CORRECT from
 * the environment; -1 if it cannot be known or parsed.
 */
int nbdkit_cmdline_read_only_self (void);

#endif /* RAID_NBDKIT_CMDLINE_H */
