/* SPDX-License-Identifier: BSD-3-Clause */
/* mem_array: the geometry and member table of a whole array of
 * member_mem members, the rig the unit tests of the layers above the
 * members (the stripe cache, extents) start from.  One place, so that
 * those tests build their arrays the same way the plugin does:
 * geometry_init over the members' size, then members_arrange and
 * members_set_level.
 */

#include <config.h>

#include <stdio.h>
#include <string.h>

#include <check.h>

#include "mem_array.h"
#include "member_mem.h"

void
mem_array_init (struct mem_array *a, int level, enum geometry_layout layout,
                int n, uint64_t chunk, uint64_t data_offset, uint64_t rows)
{
  uint64_t size = data_offset + rows * chunk;
  const char *why = NULL;

  ck_assert_int_le (n, MEM_ARRAY_MAX);
  memset (a, 0, sizeof *a);
  a->n = n;
  ck_assert_msg (geometry_init (&a->g, level, layout, n, chunk, data_offset,
                                size, &why) == 0, "geometry: %s", why);
  ck_assert_uint_eq (a->g.stripes, rows);
  for (int i = 0; i < n; i++) {
    char name[16];

    snprintf (name, sizeof name, "mem%d", i);
    a->m[i] = mem_member_new (name, size, 1);
  }
  members_init (&a->ms);
  members_arrange (&a->ms, a->m, n);
  members_set_level (&a->ms, level);
}

void
mem_array_free (struct mem_array *a)
{
  members_destroy (&a->ms);     /* closes the members */
}
