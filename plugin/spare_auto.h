/* SPDX-License-Identifier: BSD-3-Clause */
/* Hot spares taking failed roles without the operator; see spare_auto.c. */

#ifndef RAID_SPARE_AUTO_H
#define RAID_SPARE_AUTO_H

struct array;
struct jobs;

/* Start the watcher thread (not for a read-only array: nothing can be
 * rebuilt).  0, or -1 after nbdkit_error.  stop joins it; it must run
 * before jobs_free and array_close.  Without a thread, stop does nothing.
 */
int spare_auto_start (struct array *a, struct jobs *js);
void spare_auto_stop (void);

#endif /* RAID_SPARE_AUTO_H */
