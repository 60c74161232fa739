/* SPDX-License-Identifier: BSD-3-Clause */
/* Array geometry: where each chunk of a RAID-5 or RAID-6 array lives.
 *
 * The layouts are exactly Linux md's (drivers/md/raid5.c,
 * raid5_compute_sector()), so an array written here can be assembled by
 * mdadm and the reverse.  The array is cut into chunk-sized pieces; one
 * "stripe row" holds data_disks consecutive data chunks plus P (and Q),
 * one chunk per member, all at the same member offset.  The layout only
 * decides which member holds which chunk of a row.  For 4 members, RAID-5,
 * rows 0..3 (Dn = array data chunk n):
 *
 *   left-asymmetric      right-asymmetric     left-symmetric (md default)
 *   D0  D1  D2  P        P   D0  D1  D2       D0  D1  D2  P
 *   D3  D4  P   D5       D3  P   D4  D5       D4  D5  P   D3
 *   D6  P   D7  D8       D6  D7  P   D8       D8  P   D6  D7
 *   P   D9  D10 D11      D9  D10 D11 P        P   D9  D10 D11
 *
 *   right-symmetric      parity-first         parity-last
 *   P   D0  D1  D2       P   D0  D1  D2       D0  D1  D2  P
 *   D5  P   D3  D4       P   D3  D4  D5       D3  D4  D5  P
 *   D7  D8  P   D6       ...                  ...
 *   D9  D10 D11 P
 *
 * RAID-6 uses the same six names with Q on the member after P (wrapping).
 * "Asymmetric" rows fill the remaining members left to right from member
 * 0; "symmetric" rows start on the member after the parity and wrap.
 *
 * The syndrome order.  md computes Q over the data chunks in the order of
 * set_syndrome_sources(): start at the member after Q, walk the members
 * (wrapping), skip P and Q.  Data chunk i therefore gets the Q coefficient
 * g^slot, where slot is its position in that walk, not i.  For the
 * symmetric layouts, parity-first and parity-last the walk meets the data
 * in logical order (slot == i); for the asymmetric layouts it does not,
 * e.g. RAID-6 left-asymmetric, 6 members, row 2: P on 3, Q on 4, data
 * 0..3 on members 0,1,2,5, but the walk 5,0,1,2 gives slots 1,2,3,0.
 * stripe_map carries both orders so the parity code never has to know.
 */

#ifndef GEOMETRY_H
#define GEOMETRY_H

#include <stdint.h>

#define GEOMETRY_MAX_MEMBERS 256

/* md's numbers, as stored in md superblocks. */
enum geometry_layout {
  LAYOUT_LEFT_ASYMMETRIC = 0,
  LAYOUT_RIGHT_ASYMMETRIC = 1,
  LAYOUT_LEFT_SYMMETRIC = 2,
  LAYOUT_RIGHT_SYMMETRIC = 3,
  LAYOUT_PARITY_FIRST = 4,      /* md ALGORITHM_PARITY_0 */
  LAYOUT_PARITY_LAST = 5,       /* md ALGORITHM_PARITY_N */
};

struct geometry {
  int level;                    /* 5 or 6 */
  enum geometry_layout layout;
  int members;                  /* data + parity members */
  int data_disks;               /* members - 1 or - 2 */
  uint64_t chunk;               /* bytes, power of two >= 4096 */
  uint64_t data_offset;         /* bytes from member start to array data */
  uint64_t stripes;             /* stripe rows = usable member bytes / chunk */
  uint64_t stripe_data_bytes;   /* data_disks * chunk */
  uint64_t array_size;          /* stripes * stripe_data_bytes */
};

/* Where one stripe row's chunks live. */
struct stripe_map {
  int p_member;                 /* member index holding P */
  int q_member;                 /* member index holding Q, -1 for RAID-5 */
  /* Member of logical data chunk i, i < data_disks. */
  int data_member[GEOMETRY_MAX_MEMBERS];
  /* Position of logical data chunk i in the syndrome order: the index into
   * ptrs[] for parity_gen_syndrome / parity_xor_syndrome.  For RAID-5
   * slot == i.
   */
  int data_slot[GEOMETRY_MAX_MEMBERS];
  /* The inverse: member of syndrome slot k, k < data_disks. */
  int slot_member[GEOMETRY_MAX_MEMBERS];
};

/* Where array byte offset x lives: stripe row, logical data chunk within
 * the row, byte within the chunk.
 */
struct geometry_location {
  uint64_t stripe;
  int chunk;
  uint64_t within;
};

/* mdadm's layout names ("left-symmetric", ..., and its aliases "la", "ra",
 * "ls", "rs", "default") to the enum; -1 if unknown.
 */
int geometry_layout_parse (const char *name);

/* mdadm's long name of a layout, or "unknown". */
const char *geometry_layout_name (enum geometry_layout layout);

/* Validate and fill g.  member_bytes is the size of the smallest member.
 * Returns 0, or -1 with a static human-readable message in *why.
 */
int geometry_init (struct geometry *g, int level, enum geometry_layout layout,
                   int members, uint64_t chunk, uint64_t data_offset,
                   uint64_t member_bytes, const char **why);

/* Fill m for stripe row `stripe` (any value; rows repeat with period
 * g->members).
 */
void geometry_map_stripe (const struct geometry *g, uint64_t stripe,
                          struct stripe_map *m);

/* Byte offset on a member (including data_offset) of chunk-row `stripe`. */
static inline uint64_t
geometry_member_offset (const struct geometry *g, uint64_t stripe)
{
  return g->data_offset + stripe * g->chunk;
}

/* Split array offset x (x < g->array_size) into row, chunk and byte.  The
 * member is then data_member[loc->chunk] of geometry_map_stripe
 * (loc->stripe), at geometry_member_offset (loc->stripe) + loc->within.
 */
static inline void
geometry_locate (const struct geometry *g, uint64_t x,
                 struct geometry_location *loc)
{
  uint64_t in_row = x % g->stripe_data_bytes;

  loc->stripe = x / g->stripe_data_bytes;
  loc->chunk = (int) (in_row / g->chunk);
  loc->within = in_row % g->chunk;
}

#endif /* GEOMETRY_H */
