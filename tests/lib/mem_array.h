/* SPDX-License-Identifier: BSD-3-Clause */
/* An array of in-memory members for unit tests; see mem_array.c. */

#ifndef TESTS_MEM_ARRAY_H
#define TESTS_MEM_ARRAY_H

#include <stdint.h>

#include "geometry.h"
#include "member.h"
#include "member_table.h"

#define MEM_ARRAY_MAX 12        /* members */

struct mem_array {
  struct geometry g;
  int n;
  struct member *m[MEM_ARRAY_MAX];  /* the members, also in ms */
  struct members ms;                /* the table the code under test reads */
};

/* n members "mem0".. of member_mem (zeroed), each
 * data_offset + rows * chunk bytes (alignment 1), arranged in order and in sync, and
 * the geometry of level and layout over them.  Aborts the test (Check)
 * unless the geometry has exactly `rows` rows.
 */
void mem_array_init (struct mem_array *a, int level,
                     enum geometry_layout layout, int n, uint64_t chunk,
                     uint64_t data_offset, uint64_t rows);

/* Closes the members. */
void mem_array_free (struct mem_array *a);

#endif /* TESTS_MEM_ARRAY_H */
