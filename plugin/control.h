/* The operator's control socket; see control.c. */

#ifndef RAID_CONTROL_H
#define RAID_CONTROL_H

struct array;

/* Listen on the Unix socket PATH and serve commands for array a from a
 * thread of its own.  Returns 0, or -1 after nbdkit_error.
 */
int control_start (struct array *a, const char *path);
void control_stop (void);

#endif /* RAID_CONTROL_H */
