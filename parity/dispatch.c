/* SPDX-License-Identifier: BSD-3-Clause */
/* Choosing and calling a parity implementation.
 *
 * The families built for this architecture are listed below, slowest
 * first.  At first use (the first call of any function in parity.h) the
 * preferred variant of the last family the CPU can run is chosen, unless
 * the environment variable PARITY_IMPL names another; the choice is by CPU
 * features, not by a timing contest: contests on a shared, noisy machine
 * pick differently from run to run, and raidbench is the place to measure.
 * Before an implementation is used, at first use or by parity_use(), it
 * must pass its self-test (selftest.c) against generic; one that fails is
 * never used, and at first use generic is used instead.  Each verdict is
 * kept, so an implementation is tested once per process and a failure is
 * reported once, through the log function (parity_set_log) or on stderr.
 *
 * Why at first use and not in a constructor: the plugin must be able to
 * route the report (to nbdkit_error) before it is made, and a constructor
 * runs before anyone can set a log function.  First use is made exactly
 * once by a tiny state machine (first_use), so that libparity needs no
 * thread library; the callers that lose the race wait the few tens of
 * microseconds the winner takes.
 *
 * The implementation in use is one atomic pointer to a constant table, so
 * parity_use() may switch while other threads compute: each call loads the
 * pointer once and uses one implementation throughout.  Until first use the
 * pointer is NULL, which is the one extra test on the fast path.
 */

#include <config.h>

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parity.h"
#include "internal.h"

/* GFNI's families come after the others of their width and after avx512:
 * where GFNI is there, a GFNI family is preferred (avx2gfni over avx512
 * only where avx512gfni was not built: GFNI's products cost one
 * instruction where avx512's take four to six).  cpu.c's downclocking
 * policy applies to avx512gfni as to avx512, so Ice Lake gets avx2gfni.
 */
static const struct parity_family *const families[] = {
#ifdef PARITY_HAVE_SIMDE_GFNI
  /* Emulated in portable C, so the slowest of all: never chosen by default. */
  &parity_family_simde_avx2gfni,
  &parity_family_simde_avx512gfni,
#endif
#ifdef PARITY_HAVE_SIMDE_AVX512
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
#ifdef HAVE_PARITY_AVX2GFNI
  &parity_family_avx2gfni,
#endif
#ifdef HAVE_PARITY_AVX512GFNI
  &parity_family_avx512gfni,
#endif
#ifdef __aarch64__
  &parity_family_neon,
#endif
#ifdef HAVE_PARITY_SVE
  &parity_family_sve,
#endif
};

#ifdef PARITY_HAVE_TEST_BROKEN
/* Test builds only: families that parity_use() finds by name but that are
 * neither listed by parity_impls() nor ever chosen (test_broken.c).
 */
static const struct parity_family *const unlisted_families[] = {
  &parity_family_test_broken,
};
#endif

/* Every implementation of every family above, runnable or not, and its
 * self-test verdict.
 */
#define MAX_IMPLS 64
enum verdict { UNTESTED, PASSED, FAILED };
static const struct parity_impl *all_impls[MAX_IMPLS];
static unsigned char verdicts[MAX_IMPLS];
static unsigned int nr_all_impls;

/* The names of those this CPU runs, NULL-terminated. */
static const char *runnable_names[MAX_IMPLS + 1];

static const struct parity_impl *current;
static void (*log_fn) (const char *msg);

void
parity_set_log (void (*log) (const char *msg))
{
  __atomic_store_n (&log_fn, log, __ATOMIC_RELEASE);
}

static void __attribute__ ((format (printf, 1, 2)))
report (const char *fmt, ...)
{
  void (*log) (const char *) = __atomic_load_n (&log_fn, __ATOMIC_ACQUIRE);
  char msg[256];
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  if (log)
    log (msg);
  else
    fprintf (stderr, "libparity: %s\n", msg);
}

static unsigned int
impl_index (const struct parity_impl *impl)
{
  for (unsigned int i = 0; i < nr_all_impls; i++)
    if (all_impls[i] == impl)
      return i;
  abort ();
}

/* Whether IMPL may be used: generic is the reference, any other must pass
 * its self-test, once.  *why_ret is what went wrong when this call is the
 * one that found IMPL failing, else NULL, so a failure is reported once.
 * Concurrent first tests of one implementation both run and agree.
 */
static bool
trusted (const struct parity_impl *impl, const char **why_ret)
{
  unsigned char *v = &verdicts[impl_index (impl)];
  unsigned char untested = UNTESTED;
  const char *why;

  *why_ret = NULL;
  if (impl == &parity_family_generic.impls[0])
    return true;
  switch (__atomic_load_n (v, __ATOMIC_ACQUIRE)) {
  case PASSED: return true;
  case FAILED: return false;
  }
  why = parity_selftest (impl);
  if (__atomic_compare_exchange_n (v, &untested, why ? FAILED : PASSED, false,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    *why_ret = why;
  return why == NULL;
}

/* Find NAME as an implementation or as a family (its preferred variant). */
static const struct parity_impl *
lookup_in (const struct parity_family *const *fams, size_t n,
           const char *name, const struct parity_family **family_ret)
{
  for (size_t i = 0; i < n; i++) {
    const struct parity_family *f = fams[i];

    *family_ret = f;
    if (strcmp (f->name, name) == 0)
      return &f->impls[f->preferred];
    for (unsigned int j = 0; j < f->count; j++)
      if (strcmp (f->impls[j].name, name) == 0)
        return &f->impls[j];
  }
  return NULL;
}

/* NAME's implementation if this CPU can run it, else NULL with errno
 * ENOENT (not built) or ENOTSUP (not for this CPU).  No self-test.
 */
static const struct parity_impl *
resolve (const char *name)
{
  const struct parity_family *f;
  const struct parity_impl *impl;

  impl = lookup_in (families, ARRAY_SIZE (families), name, &f);
#ifdef PARITY_HAVE_TEST_BROKEN
  if (impl == NULL)
    impl = lookup_in (unlisted_families, ARRAY_SIZE (unlisted_families),
                      name, &f);
#endif
  if (impl == NULL) {
    errno = ENOENT;
    return NULL;
  }
  if (!f->cpu_ok ()) {
    errno = ENOTSUP;
    return NULL;
  }
  return impl;
}

static void
add_family (const struct parity_family *f)
{
  for (unsigned int j = 0; j < f->count && nr_all_impls < MAX_IMPLS; j++)
    all_impls[nr_all_impls++] = &f->impls[j];
}

/* First use: list the implementations, choose one, test it. */
static void
dispatch_init (void)
{
  const char *env = getenv ("PARITY_IMPL");
  const struct parity_impl *best = NULL, *want;
  const char *why;
  size_t n = 0;

  for (size_t i = 0; i < ARRAY_SIZE (families); i++) {
    const struct parity_family *f = families[i];

    add_family (f);
    if (!f->cpu_ok ())
      continue;
    best = &f->impls[f->preferred];
    for (unsigned int j = 0; j < f->count && n < MAX_IMPLS; j++)
      runnable_names[n++] = f->impls[j].name;
  }
  runnable_names[n] = NULL;
#ifdef PARITY_HAVE_TEST_BROKEN
  for (size_t i = 0; i < ARRAY_SIZE (unlisted_families); i++)
    add_family (unlisted_families[i]);
#endif

  want = best;
  if (env && *env) {
    want = resolve (env);
    if (want == NULL) {
      report ("PARITY_IMPL=%s: %s; using %s", env,
              errno == ENOTSUP ? "this CPU cannot run it"
              : "no such implementation", best->name);
      want = best;
    }
  }
  if (!trusted (want, &why)) {
    report ("%s failed its self-test (%s); using generic", want->name, why);
    want = &parity_family_generic.impls[0];
  }
  __atomic_store_n (&current, want, __ATOMIC_RELEASE);
}

/* Run dispatch_init exactly once, whichever thread calls first. */
static void
first_use (void)
{
  enum { NOT_STARTED, RUNNING, DONE };
  static int state;
  int expected = NOT_STARTED;

  if (__atomic_load_n (&state, __ATOMIC_ACQUIRE) == DONE)
    return;
  if (__atomic_compare_exchange_n (&state, &expected, RUNNING, false,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    dispatch_init ();
    __atomic_store_n (&state, DONE, __ATOMIC_RELEASE);
    return;
  }
  while (__atomic_load_n (&state, __ATOMIC_ACQUIRE) != DONE)
    sched_yield ();
}

/* The slow path of current_impl, out of line. */
static const struct parity_impl * __attribute__ ((noinline))
current_after_first_use (void)
{
  first_use ();
  return __atomic_load_n (&current, __ATOMIC_ACQUIRE);
}

/* Inlined into every operation below: one load, one test, and the call
 * through the table.  (Not parity_current itself: in position-independent
 * code an exported function may be interposed, so it is never inlined.)
 */
static inline const struct parity_impl *
current_impl (void)
{
  const struct parity_impl *impl = __atomic_load_n (&current, __ATOMIC_ACQUIRE);

  if (__builtin_expect (impl == NULL, 0))
    impl = current_after_first_use ();
  return impl;
}

const struct parity_impl *
parity_current (void)
{
  return current_impl ();
}

int
parity_use (const char *name)
{
  const struct parity_impl *impl;
  const char *why;

  first_use ();
  impl = resolve (name);
  if (impl == NULL)
    return -1;
  if (!trusted (impl, &why)) {
    if (why)
      report ("%s failed its self-test (%s); not using it", impl->name, why);
    errno = EIO;
    return -1;
  }
  __atomic_store_n (&current, impl, __ATOMIC_RELEASE);
  return 0;
}

const char *const *
parity_impls (void)
{
  first_use ();
  return runnable_names;
}

const char *
parity_name (void)
{
  return current_impl ()->name;
}

void
parity_xor_gen (void *dest, void **srcs, unsigned int src_cnt, size_t bytes)
{
  current_impl ()->xor_gen (dest, srcs, src_cnt, bytes);
}

void
parity_gen_syndrome (int disks, size_t bytes, void **ptrs)
{
  current_impl ()->gen_syndrome (disks, bytes, ptrs);
}

void
parity_xor_syndrome (int disks, int start, int stop, size_t bytes, void **ptrs)
{
  current_impl ()->xor_syndrome (disks, start, stop, bytes, ptrs);
}

void
parity_recov_2data (int disks, size_t bytes, int faila, int failb, void **ptrs)
{
  current_impl ()->recov_2data (disks, bytes, faila, failb, ptrs);
}

void
parity_recov_datap (int disks, size_t bytes, int faila, void **ptrs)
{
  current_impl ()->recov_datap (disks, bytes, faila, ptrs);
}
