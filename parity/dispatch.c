/* Choosing and calling a parity implementation.
 *
 * The families built for this architecture are listed below, slowest
 * first.  At start-up (a constructor, so the choice is made before any
 * thread can call in) the preferred variant of the last family the CPU can
 * run is chosen, unless the environment variable PARITY_IMPL names another.
 * The choice is by CPU features, not by a timing contest at load time:
 * contests on a shared, noisy machine pick differently from run to run, and
 * raidbench is the place to measure.
 *
 * The implementation in use is one atomic pointer to a constant table, so
 * parity_use() may switch while other threads compute: each call loads the
 * pointer once and uses one implementation throughout.
 */

#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parity.h"
#include "internal.h"

static const struct parity_family *const families[] = {
#ifdef PARITY_HAVE_SIMDE_AVX512
  /* Emulated in portable C, so the slowest of all: never chosen by default. */
  &parity_family_simde_avx512,
#endif
  &parity_family_generic,
#ifdef __x86_64__
  &parity_family_sse2,
  &parity_family_avx2,
#endif
#ifdef HAVE_PARITY_AVX512
  &parity_family_avx512,
#endif
#ifdef __aarch64__
  &parity_family_neon,
#endif
#ifdef HAVE_PARITY_SVE
  &parity_family_sve,
#endif
};
#define NR_FAMILIES (sizeof families / sizeof families[0])

/* Every implementation of every family; room for the NULL. */
#define MAX_IMPLS 64
static const char *runnable_names[MAX_IMPLS + 1];

static const struct parity_impl *current;

const struct parity_impl *
parity_current (void)
{
  return __atomic_load_n (&current, __ATOMIC_ACQUIRE);
}

/* Find NAME as an implementation or as a family (its preferred variant). */
static const struct parity_impl *
lookup (const char *name, const struct parity_family **family_ret)
{
  for (size_t i = 0; i < NR_FAMILIES; i++) {
    const struct parity_family *f = families[i];

    *family_ret = f;
    if (strcmp (f->name, name) == 0)
      return &f->impls[f->preferred];
    for (unsigned int j = 0; j < f->count; j++)
      if (strcmp (f->impls[j].name, name) == 0)
        return &f->impls[j];
  }
  return NULL;
}

int
parity_use (const char *name)
{
  const struct parity_family *f;
  const struct parity_impl *impl = lookup (name, &f);

  if (impl == NULL) {
    errno = ENOENT;
    return -1;
  }
  if (!f->cpu_ok ()) {
    errno = ENOTSUP;
    return -1;
  }
  __atomic_store_n (&current, impl, __ATOMIC_RELEASE);
  return 0;
}

__attribute__ ((constructor))
static void
dispatch_init (void)
{
  const char *env = getenv ("PARITY_IMPL");
  size_t n = 0;

  for (size_t i = 0; i < NR_FAMILIES; i++) {
    const struct parity_family *f = families[i];

    if (!f->cpu_ok ())
      continue;
    current = &f->impls[f->preferred];
    for (unsigned int j = 0; j < f->count && n < MAX_IMPLS; j++)
      runnable_names[n++] = f->impls[j].name;
  }
  runnable_names[n] = NULL;

  if (env && *env && parity_use (env) == -1)
    fprintf (stderr, "libparity: PARITY_IMPL=%s: %s; using %s\n", env,
             errno == ENOTSUP ? "this CPU cannot run it" : "no such implementation",
             current->name);
}

const char *const *
parity_impls (void)
{
  return runnable_names;
}

const char *
parity_name (void)
{
  return parity_current ()->name;
}

void
parity_xor_gen (void *dest, void **srcs, unsigned int src_cnt, size_t bytes)
{
  parity_current ()->xor_gen (dest, srcs, src_cnt, bytes);
}

void
parity_gen_syndrome (int disks, size_t bytes, void **ptrs)
{
  parity_current ()->gen_syndrome (disks, bytes, ptrs);
}

void
parity_xor_syndrome (int disks, int start, int stop, size_t bytes, void **ptrs)
{
  parity_current ()->xor_syndrome (disks, start, stop, bytes, ptrs);
}

void
parity_recov_2data (int disks, size_t bytes, int faila, int failb, void **ptrs)
{
  parity_current ()->recov_2data (disks, bytes, faila, failb, ptrs);
}

void
parity_recov_datap (int disks, size_t bytes, int faila, void **ptrs)
{
  parity_current ()->recov_datap (disks, bytes, faila, ptrs);
}
