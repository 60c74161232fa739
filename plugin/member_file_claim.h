/* SPDX-License-Identifier: BSD-3-Clause */
/* Exclusive claims on the disks the file backend opens (member_file.c);
 * member_file_claim.c says how and why.
 */

#ifndef RAID_MEMBER_FILE_CLAIM_H
#define RAID_MEMBER_FILE_CLAIM_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

struct file_claim;

/* Claim the disk open as fd (st: its fstat) for this process, for as
 * long as the claim is held; name is the member's, for messages.  A
 * disk this process holds already is shared, not claimed twice.  NULL
 * on failure, after nbdkit_error: errno EBUSY when another array or
 * process holds the disk (the message names the member and says so).
 * Nothing is written to the disk either way.
 */
struct file_claim *file_claim_take (const char *name, int fd,
                                    const struct stat *st);

/* The end of the member's hold; the claim goes when no member of this
 * process holds it.  NULL is nothing.
 */
void file_claim_release (struct file_claim *c);

/* Whether two claims reach one file: the same disk, or a loop device
 * and its backing file (or two loop devices over one file).
 */
bool file_claim_overlap (const struct file_claim *a,
                         const struct file_claim *b);

#endif /* RAID_MEMBER_FILE_CLAIM_H */
