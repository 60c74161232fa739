/* SPDX-License-Identifier: BSD-3-Clause */
/* random_seed: the randomized unit tests' numbers (test_extents.c,
 * test_md_badblocks.c).  One seed per run, from RAID_TEST_SEED or the
 * clock, printed before anything is drawn so that a failure can be
 * replayed (tests/README.md), and splitmix64 drawn from it: small, and
 * the same sequence on every machine.
 */

#ifndef TESTS_RANDOM_SEED_H
#define TESTS_RANDOM_SEED_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The run's seed, printed as "TEST random: RAID_TEST_SEED=N". */
static inline uint64_t
random_seed (const char *test)
{
  const char *env = getenv ("RAID_TEST_SEED");
  uint64_t seed = env ? strtoull (env, NULL, 0) : (uint64_t) time (NULL);

  printf ("%s random: RAID_TEST_SEED=%" PRIu64 "\n", test, seed);
  fflush (stdout);
  return seed;
}

static inline uint64_t
splitmix64 (uint64_t *x)
{
  uint64_t z = (*x += UINT64_C (0x9E3779B97F4A7C15));

  z = (z ^ (z >> 30)) * UINT64_C (0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C (0x94D049BB133111EB);
  return z ^ (z >> 31);
}

#endif /* TESTS_RANDOM_SEED_H */
