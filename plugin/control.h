/* SPDX-License-Identifier: BSD-3-Clause */
/* The operator's control socket; see control.c. */

#ifndef RAID_CONTROL_H
#define RAID_CONTROL_H

struct array;
struct jobs;

/* Check PATH and listen on it (at config_complete, before anything is
 * written and before nbdkit forks).  Returns 0, or -1 after nbdkit_error.
 */
int control_listen (const char *path);
/* Serve commands for array a and its jobs js from threads of their own
 * (after the fork); nothing if control_listen was not called.  Returns 0,
 * or -1 after nbdkit_error.
 */
int control_start (struct array *a, struct jobs *js);
/* Stop serving, promptly whatever the clients do, and remove the socket. */
void control_stop (void);

#endif /* RAID_CONTROL_H */
