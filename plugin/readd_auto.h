/* SPDX-License-Identifier: BSD-3-Clause */
/* readd=auto: a watcher that re-adds failed members that answer again;
 * see readd_auto.c.
 */

#ifndef RAID_READD_AUTO_H
#define RAID_READD_AUTO_H

#include <stddef.h>

struct array;
struct jobs;

/* Whether array a can re-add at all (config_complete, before anything
 * is written): 0, or -1 with why in msg (a read-only array).
 */
int readd_auto_check (const struct array *a, char *msg, size_t len);
/* In the serving process (after_fork): start the watcher.  0, or -1
 * after nbdkit_error.  readd_auto_stop stops it and waits for it; it does
 * nothing if it was not started.  a and js must outlive it.
 */
int readd_auto_start (struct array *a, struct jobs *js);
void readd_auto_stop (void);

#endif /* RAID_READD_AUTO_H */
