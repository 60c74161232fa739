/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: plugin/geometry.c places chunks exactly where Linux md does.
 *
 * Three kinds of evidence, from weakest to strongest:
 *
 *   - Literal tables worked out by hand from md's raid5_compute_sector()
 *     (drivers/md/raid5.c) and, for RAID-6 Q order, set_syndrome_sources(),
 *     raid6_d0() and raid6_idx_to_slot().  Six rows (one full period plus
 *     the wrap) of every layout: RAID-5 at 5 members, RAID-6 at 6 members
 *     with the syndrome slots, and the smallest arrays (RAID-5 3, RAID-6 4).
 *     For example RAID-5, 5 members, left-symmetric:
 *
 *        row  P   data members of chunks 0..3
 *         0   4   0 1 2 3
 *         1   3   4 0 1 2
 *         2   2   3 4 0 1
 *         3   1   2 3 4 0
 *         4   0   1 2 3 4
 *         5   4   0 1 2 3
 *
 *     and RAID-6, 6 members, left-asymmetric, where the syndrome order
 *     differs from chunk order:
 *
 *        row  P Q  data members   data_slot
 *         0   5 0  1 2 3 4        0 1 2 3
 *         1   4 5  0 1 2 3        0 1 2 3
 *         2   3 4  0 1 2 5        1 2 3 0
 *         3   2 3  0 1 4 5        2 3 0 1
 *         4   1 2  0 3 4 5        3 0 1 2
 *         5   0 1  2 3 4 5        0 1 2 3
 *
 *   - A second, deliberately different model: md's twelve per-level,
 *     per-layout cases written out one by one (the implementation folds
 *     them into three rules), and md's syndrome walk from raid6_d0(),
 *     compared row by row for 3..24 members and rows far past 2^32.
 *
 *   - Properties: every member used once per row, P/Q rotate as the layout
 *     says, slot_member inverts data_slot, period == members.
 */

#include <config.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "check_run.h"

#include "geometry.h"

#define ALL_LAYOUTS 6

/* Every ck_assert records a mark point, a write to Check's pipe.  The loops
 * below make millions of comparisons, so they call Check only on failure.
 */
#define require(cond, ...)                      \
  do {                                          \
    if (!(cond))                                \
      ck_abort_msg (__VA_ARGS__);               \
  } while (0)

#define require_eq(a, b, what)                                          \
  require ((a) == (b), "RAID-%d %s n=%d row %" PRIu64 ": %s is %d, "    \
           "expected %d", level, geometry_layout_name (layout), n, s,   \
           what, (int) (a), (int) (b))

static struct geometry
make (int level, enum geometry_layout layout, int members)
{
  struct geometry g;
  const char *why = NULL;
  int r;

  r = geometry_init (&g, level, layout, members, 65536, 1 << 20,
                     (1 << 20) + 100 * 65536 + 777, &why);
  ck_assert_msg (r == 0, "geometry_init (%d, %d, %d): %s",
                 level, layout, members, why ? why : "?");
  return g;
}

/* ---------------------------------------------------------------------
 * Hand-worked tables.
 */

struct row5 {
  int p;
  int data[4];
};

/* RAID-5, 5 members, stripes 0..5, per layout in md's numbering. */
static const struct row5 raid5_5[ALL_LAYOUTS][6] = {
  [LAYOUT_LEFT_ASYMMETRIC] = {
    { 4, { 0, 1, 2, 3 } },
    { 3, { 0, 1, 2, 4 } },
    { 2, { 0, 1, 3, 4 } },
    { 1, { 0, 2, 3, 4 } },
    { 0, { 1, 2, 3, 4 } },
    { 4, { 0, 1, 2, 3 } },
  },
  [LAYOUT_RIGHT_ASYMMETRIC] = {
    { 0, { 1, 2, 3, 4 } },
    { 1, { 0, 2, 3, 4 } },
    { 2, { 0, 1, 3, 4 } },
    { 3, { 0, 1, 2, 4 } },
    { 4, { 0, 1, 2, 3 } },
    { 0, { 1, 2, 3, 4 } },
  },
  [LAYOUT_LEFT_SYMMETRIC] = {
    { 4, { 0, 1, 2, 3 } },
    { 3, { 4, 0, 1, 2 } },
    { 2, { 3, 4, 0, 1 } },
    { 1, { 2, 3, 4, 0 } },
    { 0, { 1, 2, 3, 4 } },
    { 4, { 0, 1, 2, 3 } },
  },
  [LAYOUT_RIGHT_SYMMETRIC] = {
    { 0, { 1, 2, 3, 4 } },
    { 1, { 2, 3, 4, 0 } },
    { 2, { 3, 4, 0, 1 } },
    { 3, { 4, 0, 1, 2 } },
    { 4, { 0, 1, 2, 3 } },
    { 0, { 1, 2, 3, 4 } },
  },
  [LAYOUT_PARITY_FIRST] = {
    { 0, { 1, 2, 3, 4 } },
    { 0, { 1, 2, 3, 4 } },
    { 0, { 1, 2, 3, 4 } },
    { 0, { 1, 2, 3, 4 } },
    { 0, { 1, 2, 3, 4 } },
    { 0, { 1, 2, 3, 4 } },
  },
  [LAYOUT_PARITY_LAST] = {
    { 4, { 0, 1, 2, 3 } },
    { 4, { 0, 1, 2, 3 } },
    { 4, { 0, 1, 2, 3 } },
    { 4, { 0, 1, 2, 3 } },
    { 4, { 0, 1, 2, 3 } },
    { 4, { 0, 1, 2, 3 } },
  },
};

struct row6 {
  int p, q;
  int data[4];
  int slot[4];
};

/* RAID-6, 6 members, stripes 0..5, per layout. */
static const struct row6 raid6_6[ALL_LAYOUTS][6] = {
  [LAYOUT_LEFT_ASYMMETRIC] = {
    { 5, 0, { 1, 2, 3, 4 }, { 0, 1, 2, 3 } },
    { 4, 5, { 0, 1, 2, 3 }, { 0, 1, 2, 3 } },
    { 3, 4, { 0, 1, 2, 5 }, { 1, 2, 3, 0 } },
    { 2, 3, { 0, 1, 4, 5 }, { 2, 3, 0, 1 } },
    { 1, 2, { 0, 3, 4, 5 }, { 3, 0, 1, 2 } },
    { 0, 1, { 2, 3, 4, 5 }, { 0, 1, 2, 3 } },
  },
  [LAYOUT_RIGHT_ASYMMETRIC] = {
    { 0, 1, { 2, 3, 4, 5 }, { 0, 1, 2, 3 } },
    { 1, 2, { 0, 3, 4, 5 }, { 3, 0, 1, 2 } },
    { 2, 3, { 0, 1, 4, 5 }, { 2, 3, 0, 1 } },
    { 3, 4, { 0, 1, 2, 5 }, { 1, 2, 3, 0 } },
    { 4, 5, { 0, 1, 2, 3 }, { 0, 1, 2, 3 } },
    { 5, 0, { 1, 2, 3, 4 }, { 0, 1, 2, 3 } },
  },
  [LAYOUT_LEFT_SYMMETRIC] = {
    { 5, 0, { 1, 2, 3, 4 }, { 0, 1, 2, 3 } },
    { 4, 5, { 0, 1, 2, 3 }, { 0, 1, 2, 3 } },
    { 3, 4, { 5, 0, 1, 2 }, { 0, 1, 2, 3 } },
    { 2, 3, { 4, 5, 0, 1 }, { 0, 1, 2, 3 } },
    { 1, 2, { 3, 4, 5, 0 }, { 0, 1, 2, 3 } },
    { 0, 1, { 2, 3, 4, 5 }, { 0, 1, 2, 3 } },
  },
  [LAYOUT_RIGHT_SYMMETRIC] = {
    { 0, 1, { 2, 3, 4, 5 }, { 0, 1, 2, 3 } },
    { 1, 2, { 3, 4, 5, 0 }, { 0, 1, 2, 3 } },
    { 2, 3, { 4, 5, 0, 1 }, { 0, 1, 2, 3 } },
    { 3, 4, { 5, 0, 1, 2 }, { 0, 1, 2, 3 } },
    { 4, 5, { 0, 1, 2, 3 }, { 0, 1, 2, 3 } },
    { 5, 0, { 1, 2, 3, 4 }, { 0, 1, 2, 3 } },
  },
  [LAYOUT_PARITY_FIRST] = {
    { 0, 1, { 2, 3, 4, 5 }, { 0, 1, 2, 3 } },
    { 0, 1, { 2, 3, 4, 5 }, { 0, 1, 2, 3 } },
    { 0, 1, { 2, 3, 4, 5 }, { 0, 1, 2, 3 } },
    { 0, 1, { 2, 3, 4, 5 }, { 0, 1, 2, 3 } },
    { 0, 1, { 2, 3, 4, 5 }, { 0, 1, 2, 3 } },
    { 0, 1, { 2, 3, 4, 5 }, { 0, 1, 2, 3 } },
  },
  [LAYOUT_PARITY_LAST] = {
    { 4, 5, { 0, 1, 2, 3 }, { 0, 1, 2, 3 } },
    { 4, 5, { 0, 1, 2, 3 }, { 0, 1, 2, 3 } },
    { 4, 5, { 0, 1, 2, 3 }, { 0, 1, 2, 3 } },
    { 4, 5, { 0, 1, 2, 3 }, { 0, 1, 2, 3 } },
    { 4, 5, { 0, 1, 2, 3 }, { 0, 1, 2, 3 } },
    { 4, 5, { 0, 1, 2, 3 }, { 0, 1, 2, 3 } },
  },
};

/* The smallest arrays: RAID-5 with 3 members (2 data) and RAID-6 with 4
 * members (2 data), rows 0..3, rotating layouts.  Unused p/q/slot fields
 * are written as -1.
 */
static const struct row6 raid5_3[ALL_LAYOUTS][4] = {
  [LAYOUT_LEFT_ASYMMETRIC] = {
    { 2, -1, { 0, 1 } }, { 1, -1, { 0, 2 } }, { 0, -1, { 1, 2 } },
    { 2, -1, { 0, 1 } },
  },
  [LAYOUT_RIGHT_ASYMMETRIC] = {
    { 0, -1, { 1, 2 } }, { 1, -1, { 0, 2 } }, { 2, -1, { 0, 1 } },
    { 0, -1, { 1, 2 } },
  },
  [LAYOUT_LEFT_SYMMETRIC] = {
    { 2, -1, { 0, 1 } }, { 1, -1, { 2, 0 } }, { 0, -1, { 1, 2 } },
    { 2, -1, { 0, 1 } },
  },
  [LAYOUT_RIGHT_SYMMETRIC] = {
    { 0, -1, { 1, 2 } }, { 1, -1, { 2, 0 } }, { 2, -1, { 0, 1 } },
    { 0, -1, { 1, 2 } },
  },
  [LAYOUT_PARITY_FIRST] = {
    { 0, -1, { 1, 2 } }, { 0, -1, { 1, 2 } }, { 0, -1, { 1, 2 } },
    { 0, -1, { 1, 2 } },
  },
  [LAYOUT_PARITY_LAST] = {
    { 2, -1, { 0, 1 } }, { 2, -1, { 0, 1 } }, { 2, -1, { 0, 1 } },
    { 2, -1, { 0, 1 } },
  },
};

static const struct row6 raid6_4[ALL_LAYOUTS][4] = {
  [LAYOUT_LEFT_ASYMMETRIC] = {
    { 3, 0, { 1, 2 }, { 0, 1 } },
    { 2, 3, { 0, 1 }, { 0, 1 } },
    { 1, 2, { 0, 3 }, { 1, 0 } },
    { 0, 1, { 2, 3 }, { 0, 1 } },
  },
  [LAYOUT_RIGHT_ASYMMETRIC] = {
    { 0, 1, { 2, 3 }, { 0, 1 } },
    { 1, 2, { 0, 3 }, { 1, 0 } },
    { 2, 3, { 0, 1 }, { 0, 1 } },
    { 3, 0, { 1, 2 }, { 0, 1 } },
  },
  [LAYOUT_LEFT_SYMMETRIC] = {
    { 3, 0, { 1, 2 }, { 0, 1 } },
    { 2, 3, { 0, 1 }, { 0, 1 } },
    { 1, 2, { 3, 0 }, { 0, 1 } },
    { 0, 1, { 2, 3 }, { 0, 1 } },
  },
  [LAYOUT_RIGHT_SYMMETRIC] = {
    { 0, 1, { 2, 3 }, { 0, 1 } },
    { 1, 2, { 3, 0 }, { 0, 1 } },
    { 2, 3, { 0, 1 }, { 0, 1 } },
    { 3, 0, { 1, 2 }, { 0, 1 } },
  },
  [LAYOUT_PARITY_FIRST] = {
    { 0, 1, { 2, 3 }, { 0, 1 } }, { 0, 1, { 2, 3 }, { 0, 1 } },
    { 0, 1, { 2, 3 }, { 0, 1 } }, { 0, 1, { 2, 3 }, { 0, 1 } },
  },
  [LAYOUT_PARITY_LAST] = {
    { 2, 3, { 0, 1 }, { 0, 1 } }, { 2, 3, { 0, 1 }, { 0, 1 } },
    { 2, 3, { 0, 1 }, { 0, 1 } }, { 2, 3, { 0, 1 }, { 0, 1 } },
  },
};

/* Compare rows 0..nrows-1 of one layout with a table.  RAID-5 tables leave
 * slot[] zero; the slots are then i.
 */
static void
check_table (int level, enum geometry_layout layout, int members,
             const struct row6 *rows, int nrows)
{
  struct geometry g = make (level, layout, members);
  struct stripe_map m;

  for (int s = 0; s < nrows; s++) {
    geometry_map_stripe (&g, s, &m);
    ck_assert_msg (m.p_member == rows[s].p,
                   "RAID-%d %s n=%d row %d: P on %d, expected %d", level,
                   geometry_layout_name (layout), members, s, m.p_member,
                   rows[s].p);
    ck_assert_msg (m.q_member == rows[s].q,
                   "RAID-%d %s n=%d row %d: Q on %d, expected %d", level,
                   geometry_layout_name (layout), members, s, m.q_member,
                   rows[s].q);
    for (int i = 0; i < g.data_disks; i++) {
      int slot = level == 6 ? rows[s].slot[i] : i;

      ck_assert_msg (m.data_member[i] == rows[s].data[i],
                     "RAID-%d %s n=%d row %d chunk %d: member %d, "
                     "expected %d", level, geometry_layout_name (layout),
                     members, s, i, m.data_member[i], rows[s].data[i]);
      ck_assert_msg (m.data_slot[i] == slot,
                     "RAID-%d %s n=%d row %d chunk %d: slot %d, "
                     "expected %d", level, geometry_layout_name (layout),
                     members, s, i, m.data_slot[i], slot);
    }
  }
}

START_TEST (test_table_raid5_5)
{
  struct row6 rows[6];

  for (int s = 0; s < 6; s++) {
    rows[s].p = raid5_5[_i][s].p;
    rows[s].q = -1;
    memcpy (rows[s].data, raid5_5[_i][s].data, sizeof rows[s].data);
  }
  check_table (5, _i, 5, rows, 6);
}
END_TEST

START_TEST (test_table_raid6_6)
{
  check_table (6, _i, 6, raid6_6[_i], 6);
}
END_TEST

START_TEST (test_table_small)
{
  check_table (5, _i, 3, raid5_3[_i], 4);
  check_table (6, _i, 4, raid6_4[_i], 4);
}
END_TEST

/* ---------------------------------------------------------------------
 * md's case analysis, written out per level and layout as raid5.c states
 * it (the implementation under test folds it into three rules).
 */

static void
md_model (int level, enum geometry_layout layout, int n, uint64_t stripe,
          int *p, int *q, int *data)
{
  int dd = n - (level == 6 ? 2 : 1);
  int r = (int) (stripe % n);

  *q = -1;
  for (int i = 0; i < dd; i++) {
    int d = i;

    if (level == 5) {
      switch (layout) {
      case LAYOUT_LEFT_ASYMMETRIC:
        *p = dd - r;
        if (d >= *p) d++;
        break;
      case LAYOUT_RIGHT_ASYMMETRIC:
        *p = r;
        if (d >= *p) d++;
        break;
      case LAYOUT_LEFT_SYMMETRIC:
        *p = dd - r;
        d = (*p + 1 + d) % n;
        break;
      case LAYOUT_RIGHT_SYMMETRIC:
        *p = r;
        d = (*p + 1 + d) % n;
        break;
      case LAYOUT_PARITY_FIRST:
        *p = 0;
        d++;
        break;
      case LAYOUT_PARITY_LAST:
        *p = dd;
        break;
      }
    }
    else {
      switch (layout) {
      case LAYOUT_LEFT_ASYMMETRIC:
      case LAYOUT_RIGHT_ASYMMETRIC:
        *p = layout == LAYOUT_LEFT_ASYMMETRIC ? n - 1 - r : r;
        if (*p == n - 1) {
          *q = 0;
          d++;
        }
        else {
          *q = *p + 1;
          if (d >= *p) d += 2;
        }
        break;
      case LAYOUT_LEFT_SYMMETRIC:
        *p = n - 1 - r;
        *q = (*p + 1) % n;
        d = (*p + 2 + d) % n;
        break;
      case LAYOUT_RIGHT_SYMMETRIC:
        *p = r;
        *q = (*p + 1) % n;
        d = (*p + 2 + d) % n;
        break;
      case LAYOUT_PARITY_FIRST:
        *p = 0;
        *q = 1;
        d += 2;
        break;
      case LAYOUT_PARITY_LAST:
        *p = dd;
        *q = dd + 1;
        break;
      }
    }
    data[i] = d;
  }
}

/* md's syndrome order: from raid6_d0() (0 if Q is the last member, else
 * the member after Q) visit every member once; P and Q take no data slot.
 */
static void
md_syndrome_order (int n, int p, int q, int *slot_member)
{
  int d0 = q == n - 1 ? 0 : q + 1;
  int count = 0;
  int i = d0;

  do {
    if (i != p && i != q)
      slot_member[count++] = i;
    i = i + 1 < n ? i + 1 : 0;
  } while (i != d0);
}

static const uint64_t probe_bases[] = {
  0, 1000, UINT64_C (1) << 32, (UINT64_C (1) << 40) + 12345,
  UINT64_MAX / 2,
};

static void
check_against_model (int level, enum geometry_layout layout, int n)
{
  struct geometry g = make (level, layout, n);
  struct stripe_map m;
  int p = -1, q = -1, data[GEOMETRY_MAX_MEMBERS], slot_member[GEOMETRY_MAX_MEMBERS];

  for (size_t b = 0; b < sizeof probe_bases / sizeof probe_bases[0]; b++)
    for (uint64_t s = probe_bases[b]; s < probe_bases[b] + 3 * n + 1; s++) {
      md_model (level, layout, n, s, &p, &q, data);
      geometry_map_stripe (&g, s, &m);
      require_eq (m.p_member, p, "P member");
      require_eq (m.q_member, q, "Q member");
      for (int i = 0; i < g.data_disks; i++)
        require_eq (m.data_member[i], data[i], "a data member");
      if (level == 6) {
        md_syndrome_order (n, p, q, slot_member);
        for (int k = 0; k < g.data_disks; k++)
          require_eq (m.slot_member[k], slot_member[k], "a slot member");
      }
    }
}

START_TEST (test_md_model)
{
  for (int n = 3; n <= 24; n++)
    check_against_model (5, _i, n);
  for (int n = 4; n <= 24; n++)
    check_against_model (6, _i, n);
  check_against_model (5, _i, GEOMETRY_MAX_MEMBERS);
  check_against_model (6, _i, GEOMETRY_MAX_MEMBERS);
}
END_TEST

/* ---------------------------------------------------------------------
 * Properties.
 */

static const int raid5_counts[] = { 3, 4, 5, 6, 8, 13, 256 };
static const int raid6_counts[] = { 4, 5, 6, 7, 8, 13, 256 };

static int
expected_p (const struct geometry *g, uint64_t s)
{
  int n = g->members;

  switch (g->layout) {
  case LAYOUT_LEFT_ASYMMETRIC:
  case LAYOUT_LEFT_SYMMETRIC:
    return n - 1 - (int) (s % n);
  case LAYOUT_RIGHT_ASYMMETRIC:
  case LAYOUT_RIGHT_SYMMETRIC:
    return (int) (s % n);
  case LAYOUT_PARITY_FIRST:
    return 0;
  default:
    return g->data_disks;
  }
}

static void
check_properties (int level, enum geometry_layout layout, int n)
{
  struct geometry g = make (level, layout, n);
  struct stripe_map m, m2;
  bool symmetric = layout == LAYOUT_LEFT_SYMMETRIC
                   || layout == LAYOUT_RIGHT_SYMMETRIC;

  for (uint64_t s = 0; s < (uint64_t) 4 * n + 3; s++) {
    int seen[GEOMETRY_MAX_MEMBERS] = { 0 };
    int slot_seen[GEOMETRY_MAX_MEMBERS] = { 0 };

    geometry_map_stripe (&g, s, &m);

    /* P and Q where the layout says. */
    require_eq (m.p_member, expected_p (&g, s), "P member");
    require_eq (m.q_member, level == 6 ? (m.p_member + 1) % n : -1,
                "Q member");

    /* Every member exactly once per row. */
    seen[m.p_member]++;
    if (level == 6)
      seen[m.q_member]++;
    for (int i = 0; i < g.data_disks; i++) {
      require (m.data_member[i] >= 0 && m.data_member[i] < n,
               "data member %d out of range", m.data_member[i]);
      seen[m.data_member[i]]++;
    }
    for (int j = 0; j < n; j++)
      require (seen[j] == 1, "RAID-%d %s n=%d row %" PRIu64
               ": member %d used %d times", level,
               geometry_layout_name (layout), n, s, j, seen[j]);

    /* data_slot is a permutation and slot_member is its inverse. */
    for (int i = 0; i < g.data_disks; i++) {
      require (m.data_slot[i] >= 0 && m.data_slot[i] < g.data_disks,
               "slot %d out of range", m.data_slot[i]);
      slot_seen[m.data_slot[i]]++;
      require_eq (m.slot_member[m.data_slot[i]], m.data_member[i],
                  "slot_member[data_slot[i]]");
    }
    for (int k = 0; k < g.data_disks; k++)
      require_eq (slot_seen[k], 1, "uses of a slot");

    /* Slot order is chunk order for all but the asymmetric RAID-6 rows. */
    if (level == 5 || symmetric || layout == LAYOUT_PARITY_FIRST
        || layout == LAYOUT_PARITY_LAST)
      for (int i = 0; i < g.data_disks; i++)
        require_eq (m.data_slot[i], i, "a slot");

    /* The layout repeats every n rows. */
    geometry_map_stripe (&g, s + n, &m2);
    require_eq (m2.p_member, m.p_member, "P one period later");
    require_eq (m2.q_member, m.q_member, "Q one period later");
    for (int i = 0; i < g.data_disks; i++) {
      require_eq (m2.data_member[i], m.data_member[i],
                  "a data member one period later");
      require_eq (m2.data_slot[i], m.data_slot[i],
                  "a slot one period later");
    }

    /* RAID-5 left-symmetric, md's default, is the layout where
     * consecutive chunks of the array sit on consecutive members, across
     * row boundaries too: that is what makes sequential reads hit every
     * member in turn.
     */
    if (level == 5 && layout == LAYOUT_LEFT_SYMMETRIC) {
      for (int i = 0; i + 1 < g.data_disks; i++)
        require_eq (m.data_member[i + 1], (m.data_member[i] + 1) % n,
                    "the member after a chunk's");
      geometry_map_stripe (&g, s + 1, &m2);
      require_eq (m2.data_member[0],
                  (m.data_member[g.data_disks - 1] + 1) % n,
                  "the member of the next row's first chunk");
    }
  }
}

START_TEST (test_properties)
{
  for (size_t c = 0; c < sizeof raid5_counts / sizeof raid5_counts[0]; c++)
    check_properties (5, _i, raid5_counts[c]);
  for (size_t c = 0; c < sizeof raid6_counts / sizeof raid6_counts[0]; c++)
    check_properties (6, _i, raid6_counts[c]);
}
END_TEST

/* The asymmetric RAID-6 layouts really do reorder the syndrome: a test
 * that only saw identity slots would not notice a broken walk.
 */
START_TEST (test_asymmetric_syndrome_reorders)
{
  static const enum geometry_layout asym[] = {
    LAYOUT_LEFT_ASYMMETRIC, LAYOUT_RIGHT_ASYMMETRIC,
  };

  for (size_t l = 0; l < 2; l++)
    for (int n = 5; n <= 8; n++) {
      struct geometry g = make (6, asym[l], n);
      struct stripe_map m;
      int reordered = 0;

      for (int s = 0; s < n; s++) {
        geometry_map_stripe (&g, s, &m);
        for (int i = 0; i < g.data_disks; i++)
          if (m.data_slot[i] != i) {
            reordered++;
            break;
          }
      }
      /* Rows with P on member 0..n-3 and data on both sides of P, Q. */
      ck_assert_int_eq (reordered, n - 3);
    }
}
END_TEST

/* ---------------------------------------------------------------------
 * geometry_init and the names.
 */

START_TEST (test_init_fields)
{
  struct geometry g;
  const char *why = NULL;
  /* 3 stripes and a bit; the bit is lost as md loses it. */
  uint64_t member = 2048 * 512 + 3 * 524288 + 4096;

  ck_assert_int_eq (geometry_init (&g, 6, LAYOUT_LEFT_SYMMETRIC, 7, 524288,
                                   2048 * 512, member, &why), 0);
  ck_assert_int_eq (g.level, 6);
  ck_assert_int_eq (g.layout, LAYOUT_LEFT_SYMMETRIC);
  ck_assert_int_eq (g.members, 7);
  ck_assert_int_eq (g.data_disks, 5);
  ck_assert_uint_eq (g.chunk, 524288);
  ck_assert_uint_eq (g.data_offset, 2048 * 512);
  ck_assert_uint_eq (g.stripes, 3);
  ck_assert_uint_eq (g.stripe_data_bytes, 5 * 524288);
  ck_assert_uint_eq (g.array_size, 3 * 5 * 524288);
  ck_assert_uint_eq (geometry_member_offset (&g, 2),
                     2048 * 512 + 2 * 524288);

  ck_assert_int_eq (geometry_init (&g, 5, LAYOUT_PARITY_LAST, 3, 4096, 0,
                                   4096, &why), 0);
  ck_assert_int_eq (g.data_disks, 2);
  ck_assert_uint_eq (g.stripes, 1);
  ck_assert_uint_eq (g.array_size, 8192);
}
END_TEST

START_TEST (test_locate)
{
  struct geometry g = make (5, LAYOUT_LEFT_SYMMETRIC, 5);
  struct geometry_location loc;
  struct stripe_map m;

  /* Row 1, chunk 2, byte 100: member (P=3) + 1 + 2 = 6 mod 5 = 1. */
  geometry_locate (&g, 4 * 65536 + 2 * 65536 + 100, &loc);
  ck_assert_uint_eq (loc.stripe, 1);
  ck_assert_int_eq (loc.chunk, 2);
  ck_assert_uint_eq (loc.within, 100);
  geometry_map_stripe (&g, loc.stripe, &m);
  ck_assert_int_eq (m.data_member[loc.chunk], 1);
  ck_assert_uint_eq (geometry_member_offset (&g, loc.stripe) + loc.within,
                     (1 << 20) + 65536 + 100);

  geometry_locate (&g, g.array_size - 1, &loc);
  ck_assert_uint_eq (loc.stripe, g.stripes - 1);
  ck_assert_int_eq (loc.chunk, 3);
  ck_assert_uint_eq (loc.within, 65535);
}
END_TEST

struct bad_init {
  int level;
  int layout;
  int members;
  uint64_t chunk, data_offset, member_bytes;
  const char *why;
};

static const struct bad_init bad_inits[] = {
  { 4, 2, 4, 65536, 0, 1 << 30, "level must be 5 or 6" },
  { 7, 2, 4, 65536, 0, 1 << 30, "level must be 5 or 6" },
  { 5, 6, 4, 65536, 0, 1 << 30, "unknown layout" },
  { 5, -1, 4, 65536, 0, 1 << 30, "unknown layout" },
  { 5, 2, 2, 65536, 0, 1 << 30, "RAID-5 needs at least 3 members" },
  { 6, 2, 3, 65536, 0, 1 << 30, "RAID-6 needs at least 4 members" },
  { 6, 2, 257, 65536, 0, 1 << 30, "an array has at most 256 members" },
  { 5, 2, 4, 2048, 0, 1 << 30, "chunk must be a power of two >= 4096" },
  { 5, 2, 4, 0, 0, 1 << 30, "chunk must be a power of two >= 4096" },
  { 5, 2, 4, 65536 + 4096, 0, 1 << 30,
    "chunk must be a power of two >= 4096" },
  { 5, 2, 4, 65536, 1000, 1 << 30, "data-offset must be a multiple of 512" },
  { 5, 2, 4, 65536, (1 << 30) + 512, 1 << 30,
    "data-offset is beyond the end of the smallest member" },
  { 5, 2, 4, 65536, 1 << 30, 1 << 30,
    "members too small to hold one chunk after data-offset" },
  { 6, 2, 4, 65536, 1 << 20, (1 << 20) + 65535,
    "members too small to hold one chunk after data-offset" },
  { 5, 2, 3, 4096, 0, UINT64_MAX,
    "array would be larger than 2^63-1 bytes" },
  { 6, 2, 256, UINT64_C (1) << 62, 0, UINT64_MAX,
    "array would be larger than 2^63-1 bytes" },
};

START_TEST (test_init_errors)
{
  const struct bad_init *b = &bad_inits[_i];
  struct geometry g;
  const char *why = NULL;

  ck_assert_int_eq (geometry_init (&g, b->level, b->layout, b->members,
                                   b->chunk, b->data_offset, b->member_bytes,
                                   &why), -1);
  ck_assert_ptr_nonnull (why);
  ck_assert_str_eq (why, b->why);
}
END_TEST

START_TEST (test_layout_names)
{
  static const char *const names[ALL_LAYOUTS] = {
    "left-asymmetric", "right-asymmetric", "left-symmetric",
    "right-symmetric", "parity-first", "parity-last",
  };

  for (int l = 0; l < ALL_LAYOUTS; l++) {
    ck_assert_str_eq (geometry_layout_name (l), names[l]);
    ck_assert_int_eq (geometry_layout_parse (names[l]), l);
  }
  ck_assert_int_eq (geometry_layout_parse ("la"), LAYOUT_LEFT_ASYMMETRIC);
  ck_assert_int_eq (geometry_layout_parse ("ra"), LAYOUT_RIGHT_ASYMMETRIC);
  ck_assert_int_eq (geometry_layout_parse ("ls"), LAYOUT_LEFT_SYMMETRIC);
  ck_assert_int_eq (geometry_layout_parse ("rs"), LAYOUT_RIGHT_SYMMETRIC);
  ck_assert_int_eq (geometry_layout_parse ("default"), LAYOUT_LEFT_SYMMETRIC);
  ck_assert_int_eq (geometry_layout_parse (""), -1);
  ck_assert_int_eq (geometry_layout_parse ("left"), -1);
  ck_assert_int_eq (geometry_layout_parse ("left-symmetric-6"), -1);
  ck_assert_int_eq (geometry_layout_parse ("ddf-zero-restart"), -1);
  ck_assert_str_eq (geometry_layout_name (6), "unknown");
}
END_TEST

static Suite *
geometry_suite (void)
{
  Suite *s = suite_create ("geometry");
  TCase *tc;

  tc = tcase_create ("tables");
  tcase_add_loop_test (tc, test_table_raid5_5, 0, ALL_LAYOUTS);
  tcase_add_loop_test (tc, test_table_raid6_6, 0, ALL_LAYOUTS);
  tcase_add_loop_test (tc, test_table_small, 0, ALL_LAYOUTS);
  suite_add_tcase (s, tc);

  tc = tcase_create ("md-model");
  tcase_add_loop_test (tc, test_md_model, 0, ALL_LAYOUTS);
  suite_add_tcase (s, tc);

  tc = tcase_create ("properties");
  tcase_add_loop_test (tc, test_properties, 0, ALL_LAYOUTS);
  tcase_add_test (tc, test_asymmetric_syndrome_reorders);
  suite_add_tcase (s, tc);

  tc = tcase_create ("init");
  tcase_add_test (tc, test_init_fields);
  tcase_add_test (tc, test_locate);
  tcase_add_loop_test (tc, test_init_errors, 0,
                       sizeof bad_inits / sizeof bad_inits[0]);
  tcase_add_test (tc, test_layout_names);
  suite_add_tcase (s, tc);

  return s;
}

int
main (void)
{
  return check_run (geometry_suite (), false);
}
