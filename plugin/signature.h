/* SPDX-License-Identifier: BSD-3-Clause */
/* What else a disk may carry: the signatures of other formats; see
 * signature.c.
 */

#ifndef RAID_SIGNATURE_H
#define RAID_SIGNATURE_H

#include <stdint.h>

#include "member.h"

/* Look for a known format on member m: md superblocks of every version,
 * DDF and IMSM (firmware RAID), partition tables, LVM, LUKS, swap and the
 * common filesystems.  Returns 1 with a description in *what (static,
 * e.g. "an md v1.0 superblock (at the end of the member)"), 0 if none was
 * found, or -1 (errno set) if m could not be read.
 */
int signature_probe (struct member *m, const char **what);

/* The same on images of a member of `size` bytes: head holds its bytes
 * [0, head_len), tail its bytes [tail_off, tail_off + tail_len).
 * signature_probe reads the first SIGNATURE_HEAD and the last
 * SIGNATURE_TAIL bytes (md v0.90 sits up to 128K before the end).
 * Returns the description, or NULL.
 */
#define SIGNATURE_HEAD (68 * 1024)
#define SIGNATURE_TAIL (132 * 1024)
const char *signature_find (const uint8_t *head, uint64_t head_len,
                            const uint8_t *tail, uint64_t tail_off,
                            uint64_t tail_len, uint64_t size);

#endif /* RAID_SIGNATURE_H */
