/* SPDX-License-Identifier: BSD-3-Clause */
/* md_rig: what the unit tests of md's files share (test_md_array.c,
 * test_md_identity.c, test_md_assemble.c); see md_rig.c.
 */

#ifndef TESTS_MD_RIG_H
#define TESTS_MD_RIG_H

#include <stdint.h>

#include "array_config.h"
#include "geometry.h"
#include "md_array.h"
#include "member.h"
#include "member_table.h"

#define N 4                     /* members (RAID-5) */
#define SB 4096                 /* v1.2: the superblock's offset */
#define CHUNK (64 * 1024)
#define DATA_OFFSET (1024 * 1024)
#define ROWS 16
#define MEMBER_BYTES (DATA_OFFSET + ROWS * CHUNK)

/* The last error, to check what assembly said (nbdkit_error, md_rig.c). */
extern char last_error[512];

/* The oracle: the little-endian integer of `bytes` bytes at p, and fields
 * of member m's v1.2 superblock (at SB) at md_p.h's offsets.
 */
uint64_t le (const uint8_t *p, int bytes);
const uint8_t *sb_of (struct member *m);
uint64_t sb_events (struct member *m);
uint64_t sb_resync (struct member *m);
uint32_t sb_dev_number (struct member *m);
uint32_t sb_max_dev (struct member *m);
uint32_t sb_features (struct member *m);
uint64_t sb_recovery (struct member *m);
uint16_t sb_role (struct member *m, uint32_t d);
const uint8_t *sb_device_uuid (struct member *m);

struct rig {
  struct members ms;
  struct geometry g;
  struct array_config cfg;
  struct md_array *md;
};

/* In-memory member "mem<i>" of MEMBER_BYTES bytes. */
struct member *new_member (int i);

/* A new array (create=true, no bitmap), its superblocks written. */
void rig_create (struct rig *r);

void rig_free (struct rig *r);

/* A hot spare on r: in-memory member "mem<i>", given its md superblock
 * of a spare (md_array_spare_add) and listed in r's table, as jobs.c's
 * add-spare does.
 */
struct member *rig_add_spare (struct rig *r, int i);

#endif /* TESTS_MD_RIG_H */
