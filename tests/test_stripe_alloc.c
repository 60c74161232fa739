/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: a write or a read through the stripe cache allocates
 * nothing once the cache has warmed up (no per-request allocation on
 * the hot path), even when every request misses the cache
 * and evicts a row, healthy or degraded.
 *
 * The program is linked with --wrap for the allocator's entry points, so
 * every call from the code under test (plugin/stripe_*.c, member.c,
 * member_table.c, and the in-memory members) goes through the counters below;
 * libc's own calls do not, and calls from Check (linked statically)
 * happen outside the counted code.  A RAID-6 and a RAID-5 of in-memory
 * members with a cache of a few rows take random requests over many more
 * rows: writes of 4 KiB pages (the RMW of a small random write), byte
 * ranges, whole rows and zeroes, and reads through the cache (as array.c
 * reads a degraded row); then the same with a member failed.  The first
 * pass fills the cache and its free lists; over the second, of the same
 * kind, the counters must not move.  What the writes leave on the members
 * is test_stripe's concern; this only checks that requests succeed.  And
 * rows taken without their pages (zero, trim, a rebuild's punch) over
 * rows never seen before allocate nothing either.
 */

#include <config.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "mem_array.h"
#include "stripe.h"

#define CHUNK (64 * 1024)
#define ROWS 64
#define BUDGET_ROWS 4
#define REQUESTS 3000

void *__real_malloc (size_t);
void *__real_calloc (size_t, size_t);
void *__real_realloc (void *, size_t);
void *__real_aligned_alloc (size_t, size_t);
int __real_posix_memalign (void **, size_t, size_t);

static bool counting;            /* inside the code under test */
static unsigned long allocations;

void *
__wrap_malloc (size_t n)
{
  allocations += counting;
  return __real_malloc (n);
}

void *
__wrap_calloc (size_t k, size_t n)
{
  allocations += counting;
  return __real_calloc (k, n);
}

void *
__wrap_realloc (void *p, size_t n)
{
  allocations += counting;
  return __real_realloc (p, n);
}

void *
__wrap_aligned_alloc (size_t a, size_t n)
{
  allocations += counting;
  return __real_aligned_alloc (a, n);
}

int
__wrap_posix_memalign (void **p, size_t a, size_t n)
{
  allocations += counting;
  return __real_posix_memalign (p, a, n);
}

/* One request of a random kind somewhere in the array, within a row as
 * array.c cuts them.
 */
static void
random_request (struct mem_array *a, struct stripe_cache *c, uint8_t *data)
{
  const uint64_t row = a->g.stripe_data_bytes;
  uint64_t off, len;
  bool zero = false, read = false;

  switch (random () % 5) {
  case 0: case 1:                       /* a page: RMW or RCW */
    off = random () % (a->g.array_size / 4096) * 4096;
    len = 4096;
    break;
  case 2:                               /* bytes, within a row */
    off = random () % a->g.array_size;
    len = 1 + random () % (row - off % row);
    zero = random () % 4 == 0;
    break;
  case 3:                               /* a whole row */
    off = random () % ROWS * row;
    len = row;
    break;
  default:                              /* a read, within a row */
    off = random () % a->g.array_size;
    len = 1 + random () % (row - off % row);
    read = true;
    break;
  }

  bool fua = random () % 8 == 0;
  struct stripe_head *sh;
  int r = -1;

  counting = true;
  sh = stripe_cache_get (c, off / row);
  if (sh) {
    if (read)
      r = stripe_read (c, sh, off % row, len, data);
    else
      r = stripe_write (c, sh, off % row, len, zero ? NULL : data, fua);
    stripe_cache_put (c, sh);
  }
  counting = false;
  ck_assert_int_eq (r, 0);
}

static void
no_allocation_after_warmup (int level, int n, bool degraded)
{
  struct mem_array a;
  struct stripe_cache *c;
  uint8_t *data;
  unsigned long before;

  mem_array_init (&a, level, LAYOUT_LEFT_SYMMETRIC, n, CHUNK, 0, ROWS);
  c = stripe_cache_create (&a.g, &a.ms, BUDGET_ROWS * (uint64_t) n * CHUNK);
  ck_assert (c != NULL);
  data = __real_malloc (a.g.stripe_data_bytes);
  ck_assert (data != NULL);
  memset (data, 0xa5, a.g.stripe_data_bytes);

  if (degraded)
    member_fail (a.m[1], EIO);
  srandom (level * 100 + n);
  for (int i = 0; i < REQUESTS; i++)
    random_request (&a, c, data);
  before = allocations;
  for (int i = 0; i < REQUESTS; i++)
    random_request (&a, c, data);
  ck_assert_msg (allocations == before,
                 "RAID-%d of %d%s: %lu allocations in %d requests after "
                 "warm-up", level, n, degraded ? ", degraded" : "",
                 allocations - before, REQUESTS);

  free (data);
  stripe_cache_destroy (c);
  mem_array_free (&a);
}

/* Rows taken and given back without their pages, as array.c zeroes and
 * trims whole rows and the rebuild punches them: once warm, new rows cost
 * no allocation, because a head that caches nothing is freed for reuse
 * when given back (the cache's budget counts only pages, so such heads,
 * kept, grew without bound).
 */
START_TEST (test_rows_without_pages)
{
  struct mem_array a;
  struct stripe_cache *c;
  unsigned long before;

  mem_array_init (&a, 6, LAYOUT_LEFT_SYMMETRIC, 6, CHUNK, 0, ROWS);
  c = stripe_cache_create (&a.g, &a.ms, BUDGET_ROWS * 6 * (uint64_t) CHUNK);
  ck_assert (c != NULL);
  for (int pass = 0; pass < 2; pass++) {
    before = allocations;
    counting = true;
    for (uint64_t row = pass * 10000; row < (pass + 1) * UINT64_C (10000);
         row++) {
      struct stripe_head *sh = stripe_cache_get (c, row);

      if (sh == NULL)
        break;
      stripe_head_invalidate (c, sh);
      stripe_cache_put (c, sh);
    }
    counting = false;
  }
  ck_assert_msg (allocations == before,
                 "%lu allocations for 10000 new rows without pages",
                 allocations - before);
  stripe_cache_destroy (c);
  mem_array_free (&a);
}
END_TEST

/* RAID-6 and RAID-5, healthy and with member 1 failed. */
START_TEST (test_requests)
{
  no_allocation_after_warmup (6, 6, false);
  no_allocation_after_warmup (5, 5, false);
  no_allocation_after_warmup (6, 6, true);
  no_allocation_after_warmup (5, 5, true);
}
END_TEST

int
main (void)
{
  const struct check_case cases[] = {
    { "requests", test_requests },
    { "rows without pages", test_rows_without_pages },
  };

  return check_run (check_suite ("stripe_alloc", CHECK_CASES (cases), 60),
                    false);
}
