/* SPDX-License-Identifier: BSD-3-Clause */
/* The array's configuration: what the parameters say (params.c fills
 * it in), what array_open and md_array_assemble read.  A header of its
 * own so that the parameters' parser and md need nothing of the array.
 */

#ifndef RAID_ARRAY_CONFIG_H
#define RAID_ARRAY_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "geometry.h"
#include "member.h"

/* md: md version-1 superblocks, required (the default); none: raw
 * mode, the parameters are the whole truth.  Never guessed from the
 * members.
 */
enum metadata_mode { METADATA_MD, METADATA_NONE };

struct array_config {
  enum metadata_mode metadata;
  /* metadata-version=1.minor given (minor 0, 1 or 2); if not, assembly
   * looks in every place and create writes v1.2.
   */
  bool set_metadata_version;
  int metadata_minor;
  bool create, force;           /* write fresh md superblocks */
  bool no_bitmap, set_bitmap;   /* create: bitmap=none; bitmap-* given */
  uint64_t bitmap_chunk;        /* create: bytes per bit, 0 = md's default */
  uint32_t bitmap_delay;        /* create: seconds, 0 = md's default */
  bool set_level, set_layout, set_chunk, set_data_offset; /* given explicitly */
  int level;
  enum geometry_layout layout;
  uint64_t chunk;
  uint64_t data_offset;
  uint64_t cache_bytes;
  uint64_t rebuild_rate;        /* bytes/s, 0 = unlimited */
  enum member_direct direct;    /* direct=: AUTO unless given */
  bool readonly;                /* nbdkit -r or readonly=true: write nothing */
  int ndisks;
  const char *disks[GEOMETRY_MAX_MEMBERS];
};

#endif /* RAID_ARRAY_CONFIG_H */
