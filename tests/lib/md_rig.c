/* SPDX-License-Identifier: BSD-3-Clause */
/* md_rig: what the unit tests of md's files (test_md_array.c for
 * md_array.c, test_md_identity.c for md_identity.c, test_md_assemble.c
 * for md_assemble.c) share, written once:
 *
 *   - nbdkit_error, keeping the last message in last_error so that a test
 *     can check what assembly said (it overrides member_stubs.c's weak
 *     one);
 *   - the oracle: a member's v1.2 superblock read from its bytes
 *     (mem_member_data) at md_p.h's offsets (events, resync_offset,
 *     dev_number, max_dev, dev_roles, feature_map, recovery_offset),
 *     never through md_super.c, so that it shares no code with what the
 *     tests check;
 *   - the rig: N in-memory members (member_mem.c) of MEMBER_BYTES, a
 *     RAID-5 geometry over them and an array created on them
 *     (create=true, v1.2, no bitmap) through md_create.c, its superblocks
 *     written by md_array.c's first update (md_array_after_fork), as the
 *     plugin does between config_complete and serving; and hot spares
 *     added to it as jobs.c's add-spare adds them.
 *
 * A program that links this links md_create.c and md_array.c (and what
 * they call) whatever it tests: plugin-tests.mk's MD_RIG_SOURCES.
 */

#include <config.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include "md_rig.h"
#include "member_mem.h"

char last_error[512];

void
nbdkit_error (const char *fs, ...)
{
  va_list args;

  va_start (args, fs);
  vsnprintf (last_error, sizeof last_error, fs, args);
  va_end (args);
}

uint64_t
le (const uint8_t *p, int bytes)
{
  uint64_t v = 0;

  for (int i = bytes - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

const uint8_t *
sb_of (struct member *m)
{
  return mem_member_data (m) + SB;
}

uint64_t sb_events (struct member *m) { return le (sb_of (m) + 200, 8); }
uint64_t sb_resync (struct member *m) { return le (sb_of (m) + 208, 8); }
uint32_t sb_dev_number (struct member *m) { return le (sb_of (m) + 160, 4); }
uint32_t sb_max_dev (struct member *m) { return le (sb_of (m) + 220, 4); }
uint32_t sb_features (struct member *m) { return le (sb_of (m) + 8, 4); }
uint64_t sb_recovery (struct member *m) { return le (sb_of (m) + 152, 8); }

uint16_t
sb_role (struct member *m, uint32_t d)
{
  return le (sb_of (m) + 256 + 2 * d, 2);
}

const uint8_t *
sb_device_uuid (struct member *m)
{
  return sb_of (m) + 168;
}

struct member *
new_member (int i)
{
  char name[16];

  snprintf (name, sizeof name, "mem%d", i);
  return mem_member_new (name, MEMBER_BYTES, 1);
}

void
rig_create (struct rig *r)
{
  struct member *m[N];
  const char *why = NULL;

  memset (r, 0, sizeof *r);
  members_init (&r->ms);
  for (int i = 0; i < N; i++)
    m[i] = new_member (i);
  members_arrange (&r->ms, m, N);
  members_set_level (&r->ms, 5);
  ck_assert_msg (geometry_init (&r->g, 5, LAYOUT_LEFT_SYMMETRIC, N, CHUNK,
                                DATA_OFFSET, MEMBER_BYTES, &why) == 0,
                 "geometry: %s", why);
  r->cfg = (struct array_config) {
    .metadata = METADATA_MD, .create = true, .no_bitmap = true, .level = 5,
    .layout = LAYOUT_LEFT_SYMMETRIC, .chunk = CHUNK,
    .data_offset = DATA_OFFSET, .ndisks = N,
  };
  ck_assert_int_eq (md_array_create (&r->ms, &r->g, &r->cfg, &r->md), 0);
  ck_assert_int_eq (md_array_after_fork (r->md), 0);
}

void
rig_free (struct rig *r)
{
  md_array_close (r->md);
  members_destroy (&r->ms);
}

struct member *
rig_add_spare (struct rig *r, int i)
{
  struct member *m = new_member (i);
  char msg[256] = "";

  ck_assert_msg (md_array_spare_add (r->md, m, msg, sizeof msg) == 0,
                 "add spare mem%d: %s", i, msg);
  ck_assert (members_add_spare (&r->ms, m));
  return m;
}
