/* SPDX-License-Identifier: BSD-3-Clause */
/* Array geometry: md's RAID-5/6 layouts, validated and mapped.
 *
 * md writes its placement as twelve cases (raid5_compute_sector(): six
 * layouts times two levels).  They reduce to three facts, which is all this
 * file implements, so that no layout is a copy of another:
 *
 *   1. Where P goes.  With n members and row s:
 *        left-*          P = n-1 - s mod n   (RAID-5 and RAID-6 alike:
 *                                             md's data_disks - s mod n
 *                                             for RAID-5 is the same)
 *        right-*         P = s mod n
 *        parity-first    P = 0
 *        parity-last     P = data_disks
 *
 *   2. Where Q goes (RAID-6): always the member after P, wrapping.  md
 *      spells it per layout (P+1, with "P on the last member puts Q on
 *      member 0" for the asymmetric ones; 1 for parity-first; data_disks+1
 *      for parity-last) but every case is (P + 1) mod n.
 *
 *   3. Where data goes: the members that hold no parity, in one of two
 *      walks.  Asymmetric layouts, parity-first and parity-last walk up
 *      from member 0; symmetric layouts start on the member after the
 *      parity (after Q for RAID-6) and wrap.  Example, 6 members, RAID-6,
 *      row 2, where both left layouts put P on 3 and Q on 4:
 *
 *        member:            0    1    2    3    4    5
 *        left-asymmetric:   D0   D1   D2   P    Q    D3
 *        left-symmetric:    D1   D2   D3   P    Q    D0
 *
 * The syndrome order (md's set_syndrome_sources(), raid6_d0() and
 * raid6_idx_to_slot(), non-DDF) is the symmetric walk: start after Q, wrap,
 * skip P and Q; the k-th data member met feeds ptrs[k].  So for the
 * symmetric layouts (and parity-first/-last, whose walk from after Q is the
 * walk from member 0) the slot of chunk i is i, and for the asymmetric ones
 * it is the chunk's rank in a rotated walk.  left-asymmetric row 2 above:
 * the walk 5,0,1,2 meets D3,D0,D1,D2, so data_slot = {1,2,3,0}.
 *
 * Everything here is pure and reentrant; geometry_map_stripe is O(members)
 * and touches no shared state.
 */

#include <config.h>

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "geometry.h"

static const struct {
  const char *name;
  enum geometry_layout layout;
} layout_names[] = {
  /* The long names come first: geometry_layout_name returns them. */
  { "left-asymmetric", LAYOUT_LEFT_ASYMMETRIC },
  { "right-asymmetric", LAYOUT_RIGHT_ASYMMETRIC },
  { "left-symmetric", LAYOUT_LEFT_SYMMETRIC },
  { "right-symmetric", LAYOUT_RIGHT_SYMMETRIC },
  { "parity-first", LAYOUT_PARITY_FIRST },
  { "parity-last", LAYOUT_PARITY_LAST },
  /* mdadm's short aliases. */
  { "la", LAYOUT_LEFT_ASYMMETRIC },
  { "ra", LAYOUT_RIGHT_ASYMMETRIC },
  { "ls", LAYOUT_LEFT_SYMMETRIC },
  { "rs", LAYOUT_RIGHT_SYMMETRIC },
  { "default", LAYOUT_LEFT_SYMMETRIC },
};

#define N_LAYOUT_NAMES (sizeof layout_names / sizeof layout_names[0])

int
geometry_layout_parse (const char *name)
{
  for (size_t i = 0; i < N_LAYOUT_NAMES; i++)
    if (strcmp (name, layout_names[i].name) == 0)
      return layout_names[i].layout;
  return -1;
}

const char *
geometry_layout_name (enum geometry_layout layout)
{
  for (size_t i = 0; i < N_LAYOUT_NAMES; i++)
    if (layout_names[i].layout == layout)
      return layout_names[i].name;
  return "unknown";
}

int
geometry_init (struct geometry *g, int level, enum geometry_layout layout,
               int members, uint64_t chunk, uint64_t data_offset,
               uint64_t member_bytes, const char **why)
{
  int parities = level == 6 ? 2 : 1;
  uint64_t stripes, row, size;

  if (level != 5 && level != 6) {
    *why = "level must be 5 or 6";
    return -1;
  }
  if ((int) layout < LAYOUT_LEFT_ASYMMETRIC
      || (int) layout > LAYOUT_PARITY_LAST) {
    *why = "unknown layout";
    return -1;
  }
  /* md accepts a 2-member RAID-5 (a mirror in disguise); we do not. */
  if (level == 5 && members < 3) {
    *why = "RAID-5 needs at least 3 members";
    return -1;
  }
  if (level == 6 && members < 4) {
    *why = "RAID-6 needs at least 4 members";
    return -1;
  }
  if (members > GEOMETRY_MAX_MEMBERS) {
    *why = "an array has at most 256 members";
    return -1;
  }
  if (chunk < 4096 || (chunk & (chunk - 1)) != 0) {
    *why = "chunk must be a power of two >= 4096";
    return -1;
  }
  /* md keeps data_offset in 512-byte sectors. */
  if (data_offset % 512 != 0) {
    *why = "data-offset must be a multiple of 512";
    return -1;
  }
  if (data_offset > member_bytes) {
    *why = "data-offset is beyond the end of the smallest member";
    return -1;
  }
  stripes = (member_bytes - data_offset) / chunk;
  if (stripes == 0) {
    *why = "members too small to hold one chunk after data-offset";
    return -1;
  }
  /* nbdkit sizes are int64_t. */
  if (__builtin_mul_overflow (chunk, (uint64_t) (members - parities), &row)
      || __builtin_mul_overflow (stripes, row, &size)
      || size > INT64_MAX) {
    *why = "array would be larger than 2^63-1 bytes";
    return -1;
  }

  g->level = level;
  g->layout = layout;
  g->members = members;
  g->data_disks = members - parities;
  g->chunk = chunk;
  g->data_offset = data_offset;
  g->stripes = stripes;
  g->stripe_data_bytes = row;
  g->array_size = size;
  return 0;
}

/* Fact 1 of the essay: the member holding P in row `stripe`. */
static int
parity_member (const struct geometry *g, uint64_t stripe)
{
  int rotation = (int) (stripe % (uint64_t) g->members);

  switch (g->layout) {
  case LAYOUT_LEFT_ASYMMETRIC:
  case LAYOUT_LEFT_SYMMETRIC:
    return g->members - 1 - rotation;
  case LAYOUT_RIGHT_ASYMMETRIC:
  case LAYOUT_RIGHT_SYMMETRIC:
    return rotation;
  case LAYOUT_PARITY_FIRST:
    return 0;
  case LAYOUT_PARITY_LAST:
  default:
    return g->data_disks;
  }
}

static bool
is_symmetric (enum geometry_layout layout)
{
  return layout == LAYOUT_LEFT_SYMMETRIC || layout == LAYOUT_RIGHT_SYMMETRIC;
}

/* List the non-parity members of a row, starting at `start` and wrapping,
 * into out[0 .. data_disks-1].
 */
static void
walk_data_members (int members, int start, int p, int q, int *out)
{
  int k = 0;

  for (int j = 0; j < members; j++) {
    int member = (start + j) % members;

    if (member != p && member != q)
      out[k++] = member;
  }
}

void
geometry_map_stripe (const struct geometry *g, uint64_t stripe,
                     struct stripe_map *m)
{
  int n = g->members;
  int p = parity_member (g, stripe);
  int q = g->level == 6 ? (p + 1) % n : -1;
  /* The member after the last parity block: where md's syndrome walk and
   * the symmetric layouts' data walk begin.
   */
  int after_parity = (g->level == 6 ? q + 1 : p + 1) % n;
  int data_of_member[GEOMETRY_MAX_MEMBERS];

  m->p_member = p;
  m->q_member = q;
  walk_data_members (n, is_symmetric (g->layout) ? after_parity : 0, p, q,
                     m->data_member);

  if (g->level == 5) {
    for (int i = 0; i < g->data_disks; i++) {
      m->data_slot[i] = i;
      m->slot_member[i] = m->data_member[i];
    }
    return;
  }

  walk_data_members (n, after_parity, p, q, m->slot_member);
  for (int i = 0; i < g->data_disks; i++)
    data_of_member[m->data_member[i]] = i;
  for (int k = 0; k < g->data_disks; k++)
    m->data_slot[data_of_member[m->slot_member[k]]] = k;
}
