/* SPDX-License-Identifier: BSD-3-Clause */
/* raidbench: time libparity's kernels against each other and ISA-L.
 *
 * What it measures.  The three operations that md's RAID-5/6 write path
 * spends its CPU time in, and the scrub's check:
 *
 *   xor_gen n        dest ^= src_0 ^ ... ^ src_{n-1}   (RAID-5 parity)
 *   gen_syndrome d   P and Q of d-2 data disks         (full-stripe write)
 *   rmw d            md's read-modify-write of one 4 KiB block:
 *                      xor_syndrome (d, k, k)   old D_k out of P and Q
 *                      memcpy (D_k, new, size)  the new data in place
 *                      xor_syndrome (d, k, k)   new D_k into P and Q
 *                    with k rotating over the data disks.  Timed at 8
 *                    and 24 disks by default: a kernel whose xor_syndrome
 *                    cost grows with k (Horner's rule doubles Q once per
 *                    disk below k) shows it there.
 *   check d          parity_check (d, size, ...) of a consistent stripe,
 *                    the scrub's common case: the data's P and Q into
 *                    scratch and a compare with the stored ones.  Timed
 *                    at 8 and 24 disks by default; set beside
 *                    gen_syndrome d, it shows what the compare costs.
 *   recov_2data d    two data disks rebuilt from the others and P and Q
 *   recov_datap d    a data disk and P rebuilt from the others and Q
 *                    (degraded reads and rebuilds of RAID-6).  The lost
 *                    disks rotate over the data disks from call to call,
 *                    as rmw's k does; timed at 8 and 24 disks by default.
 *
 * Each is timed for every implementation libparity can run here (or those
 * named by --impl), for ISA-L's xor_gen and pq_gen when it was found at
 * configure time (and pq_gen_avx2_gfni and pq_gen_avx512_gfni, ISA-L
 * 2.32's GFNI kernels, when that ISA-L has them and the CPU has GFNI:
 * ./configure --with-isal=PREFIX links an ISA-L built from source), and,
 * for rmw, for avx2x4 with non-temporal stores of P and Q (rmw_nt.c),
 * which is what md used until 2026.  ISA-L has no rmw or recovery
 * function, so those groups have no ISA-L rows.
 *
 * Why not trust the kernel's own boot benchmark.  lib/raid6/algos.c times
 * gen_syndrome alone, for one geometry (8 disks of one page), with the data
 * hot in cache, by counting calls inside a window of 16 jiffies that starts
 * at the first tick edge: no warm-up (the core may still be ramping its
 * clock, the kernel's code is cold), one sample, and a count whose
 * resolution is one call.  crypto/xor.c does the same for XOR with one
 * source count.  Kernels that differ by less than the noise of one short
 * window, or that differ only at other disk counts, in DRAM, or in the
 * xor_syndrome the boot test never runs (non-temporal stores make md's
 * read-modify-write several times slower and the boot test cannot see
 * it), all look alike.
 *
 * How.  For one "group" (operation, disk or source count, size, mode,
 * layout) every contender is warmed up and calibrated so that one
 * repetition lasts at least --time ms, then the repetitions are
 * interleaved: rep 1 of every contender, rep 2 of every contender, ...  On
 * a shared machine a burst of someone else's work then slows all rows of a
 * group alike instead of one row, and the ratios, which are what this
 * program is for, stay honest.  Time is the thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID), not the wall clock: on a machine shared with
 * compilers, a repetition during which the scheduler ran someone else
 * would otherwise count their time as ours (--wall restores the wall
 * clock for an idle machine).  What CPU time cannot remove, caches and
 * clocks disturbed by a neighbour, the median and the interleaving absorb.
 * Each row reports the median and the minimum time per call; GB/s and
 * ratios use the median.
 *
 *   cache  the same buffers on every call: the data is hot (L1/L2 for the
 *          default 4 KiB per disk).
 *   dram   a pool of --dram-size bytes (default 512 MiB, far larger than
 *          the L3 a core can use) is cut into stripes of the group's
 *          buffers, and the calls walk the stripes with a large stride
 *          coprime to their number, so each call finds its buffers cold
 *          and prefetchers cannot guess the next stripe.  The pool asks
 *          for transparent huge pages so that page walks, which md's
 *          direct-mapped kernel memory does not pay, do not dominate.
 *
 *   aligned    every buffer starts at the same offset in a page.
 *   displaced  buffer i is moved by (9 i mod 64) cache lines, so loads of
 *          the data and stores of P and Q fall at different page offsets.
 *          With identical offsets a load can be falsely matched against an
 *          older store to the same 4 KiB offset (4K aliasing) and replay;
 *          some kernels collapse that way, so rmw shows both by default.
 *
 * Counting (the same for ISA-L, so ratios compare equal work):
 * GB/s is 1e9 bytes per second of DATA read as input:
 *   xor_gen n:       (n + 1) x size: the n sources and the destination,
 *                    which md's xor_gen reads too.  ISA-L gets the same
 *                    n + 1 buffers as inputs, xor_gen (n + 2, ...), and
 *                    writes a separate output.
 *   gen_syndrome d:  (d - 2) x size; P and Q are outputs, not counted.
 *                    ISA-L: pq_gen (d, size, ...) on the same pointers.
 *   rmw d:           size, the bytes of the write; ns/call is ns per write.
 *   check d:         d x size: data, P and Q are all read.
 *   recov_* d:       (d - 2) x size, the stripe's data, as gen_syndrome.
 * Ratio columns are speed-ups from median times (above 1 = faster than
 * the reference): "x isa-l" against ISA-L's own dispatch (AVX-512 where
 * the CPU has it), "x i-avx2" against ISA-L's AVX2 kernels, "x generic"
 * against libparity's generic; "x ref" against the row --ref names (any
 * row of the group: an implementation such as avx512x4, or isa-l-avx2-gfni),
 * so that one run gives the ratio of any two rows; for rmw, "t/NT" is the
 * time of the row over the time of avx2x4 with non-temporal stores (below
 * 1 = faster).
 *
 * ISA-L's kernels leave the upper halves of the vector registers dirty (no
 * vzeroupper), which slows the legacy-SSE code that runs after them; a
 * vzeroupper after each ISA-L batch keeps that off the next row's bill.
 *
 * Before a group is timed, every contender's output is checked against
 * generic's, from the same poisoned inputs: a fast wrong kernel is worse
 * than no number at all.
 *
 * --svg FILE draws the same medians as charts, GB/s against the disk (or
 * source) count per implementation (raidbench_svg.c); make bench writes
 * bench/raidbench.svg.
 */

#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_ISAL
#include <isa-l.h>
#include <isa-l/raid.h>
/* ISA-L 2.32 marks the per-ISA entry points deprecated in favour of its
 * dispatching pq_gen and xor_gen; a benchmark needs exactly those.
 */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
/* ISA-L 2.32 exports its GFNI kernels but its headers do not declare them;
 * configure found them by linking.  Same contract as pq_gen.
 */
#ifdef HAVE_PQ_GEN_AVX2_GFNI
int pq_gen_avx2_gfni (int vects, int len, void **array);
#endif
#ifdef HAVE_PQ_GEN_AVX512_GFNI
int pq_gen_avx512_gfni (int vects, int len, void **array);
#endif
#endif

#include "parity.h"
#include "raidbench.h"

#define PAGE 4096
#define LINE 64
#define MAX_DISKS 96
#define MAX_SOURCES 128
#define MAX_LIST 64
#define MAX_CONTENDERS 24

enum op { OP_XOR, OP_GEN, OP_RMW, OP_CHECK, OP_RECOV2, OP_RECOVP, NR_OPS };
static const char *const op_names[NR_OPS] = {
  "xor_gen", "gen_syndrome", "rmw", "check", "recov_2data", "recov_datap",
};

enum mode { MODE_CACHE, MODE_DRAM };
static const char *const mode_names[] = { "cache", "dram" };

enum layout { LAYOUT_ALIGNED, LAYOUT_DISPLACED };
static const char *const layout_names[] = { "aligned", "displaced" };

enum format { FMT_TEXT, FMT_CSV, FMT_JSON };

enum kind {
  K_PARITY,                     /* a libparity implementation */
  K_ISAL,                       /* ISA-L's multibinary xor_gen / pq_gen */
  K_ISAL_AVX2,                  /* ISA-L's xor_gen_avx / pq_gen_avx2 */
  K_ISAL_AVX2_GFNI,             /* ISA-L 2.32's pq_gen_avx2_gfni */
  K_ISAL_AVX512_GFNI,           /* ISA-L 2.32's pq_gen_avx512_gfni */
  K_NT,                         /* avx2x4 with non-temporal P/Q stores */
};

struct contender {
  enum kind kind;
  char name[32];                /* the row's label */
  bool is_generic;
  /* Results of the current group, ns per call. */
  double ns[1024];
  double med, min;
  uint64_t iters;               /* calls per repetition */
};

/* A list of integers given on the command line. */
struct list {
  unsigned int n;
  long v[MAX_LIST];
};

static struct {
  const char *impls[MAX_CONTENDERS];
  unsigned int nr_impls;
  bool ops[NR_OPS];
  struct list sources, disks, rmw_disks, check_disks, recov_disks, sizes;
  bool mode[2];
  bool layout_set;              /* --layout or --displace given */
  bool layout[2];
  unsigned int reps;
  double rep_ns;
  size_t dram_size;
  bool isal;
  enum format format;
  int cpu;
  bool wall;                    /* time by the wall clock, not CPU time */
  const char *ref;              /* --ref: the row of the "x ref" column */
  const char *svg;              /* --svg FILE: the charts */
} opt;

/* One group: the buffers of one operation at one geometry, size, mode and
 * layout, and the contenders timed on it.
 */
struct group {
  enum op op;
  int n;                        /* sources (xor_gen) or disks */
  size_t size;
  enum mode mode;
  enum layout layout;
  unsigned int nbuf;            /* buffers per stripe */
  size_t stride;                /* bytes from one buffer to the next */
  size_t stripe_bytes;
  uint8_t *base;
  size_t nstripes, step, cursor;
  unsigned int rmw_disk;        /* next data disk for rmw and recov */
  uint8_t *scratch;             /* check: 2 x size, the same for every call */
  struct contender *c[MAX_CONTENDERS];
  unsigned int nc;
};

static struct contender contenders[MAX_CONTENDERS];
static unsigned int nr_contenders;
static const char *dispatched;
static const char *avx2gfni_preferred;  /* NULL where it cannot run */
static double first_use_us;     /* libparity's first call: choice + self-test */
static uint8_t *dram_pool;
static bool have_avx, have_avx2, have_gfni;

static void __attribute__ ((noreturn, format (printf, 1, 2)))
die (const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  fputs ("raidbench: ", stderr);
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
  va_end (ap);
  exit (EXIT_FAILURE);
}

static double
now_ns (void)
{
  struct timespec ts;

  clock_gettime (opt.wall ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The data bytes one call processes: see "Counting" above. */
static double
data_bytes (const struct group *g)
{
  switch (g->op) {
  case OP_XOR: return (double) (g->n + 1) * g->size;
  case OP_GEN: case OP_RECOV2: case OP_RECOVP:
    return (double) (g->n - 2) * g->size;
  case OP_CHECK: return (double) g->n * g->size;
  default: return g->size;
  }
}

static size_t
displacement (const struct group *g, unsigned int i)
{
  return g->layout == LAYOUT_DISPLACED ? (i * 9 % (PAGE / LINE)) * LINE : 0;
}

static void
stripe_ptrs (const struct group *g, size_t s, void **ptrs)
{
  uint8_t *p = g->base + s * g->stripe_bytes;

  for (unsigned int i = 0; i < g->nbuf; i++)
    ptrs[i] = p + i * g->stride + displacement (g, i);
}

/* The buffers of the next call: always stripe 0 in cache mode; in DRAM
 * mode the stripe a large stride on from the last one.
 */
static inline void
next_ptrs (struct group *g, void **ptrs)
{
  if (g->mode == MODE_DRAM) {
    g->cursor += g->step;
    if (g->cursor >= g->nstripes)
      g->cursor -= g->nstripes;
  }
  stripe_ptrs (g, g->cursor, ptrs);
}

/* ISA-L's AVX, AVX2 and AVX-512 kernels return without vzeroupper.  With
 * the upper halves of the vector registers left dirty, the legacy-SSE code
 * that runs next (libparity's sse2 kernels, generic code, libc) was
 * measured here up to twice as slow, which would charge ISA-L's habit to
 * whichever row follows it.  Clean up after every ISA-L batch.
 */
static bool
is_isal (const struct contender *c)
{
  return c->kind == K_ISAL || c->kind == K_ISAL_AVX2
    || c->kind == K_ISAL_AVX2_GFNI || c->kind == K_ISAL_AVX512_GFNI;
}

static void
after_isal (const struct contender *c)
{
#if defined(HAVE_ISAL) && defined(__x86_64__)
  if (is_isal (c) && have_avx)
    __asm__ volatile ("vzeroupper");
#endif
}

#ifdef HAVE_ISAL
/* The ISA-L pq_gen of a row. */
static int (*isal_pq_gen (enum kind kind)) (int, int, void **)
{
  switch (kind) {
  case K_ISAL: return pq_gen;
  case K_ISAL_AVX2: return pq_gen_avx2;
#ifdef HAVE_PQ_GEN_AVX2_GFNI
  case K_ISAL_AVX2_GFNI: return pq_gen_avx2_gfni;
#endif
#ifdef HAVE_PQ_GEN_AVX512_GFNI
  case K_ISAL_AVX512_GFNI: return pq_gen_avx512_gfni;
#endif
  default: abort ();
  }
}
#endif

/* The disks a recovery loses on the call whose rotation counter is k:
 * a data disk and, for recov_2data, the one half a stripe further on.
 */
static void
recov_disks (const struct group *g, unsigned int k, int *a, int *b)
{
  int data = g->n - 2, x = k, y = (k + data / 2) % data;

  *a = x < y ? x : y;
  *b = x < y ? y : x;
}

static void
run_calls (struct group *g, const struct contender *c, uint64_t iters)
{
  void *ptrs[MAX_SOURCES + 2];
  const size_t size = g->size;
  const int n = g->n;

  for (uint64_t i = 0; i < iters; i++) {
    next_ptrs (g, ptrs);
    switch (g->op) {
    case OP_XOR:
      if (c->kind == K_PARITY)
        parity_xor_gen (ptrs[n], ptrs, n, size);
#ifdef HAVE_ISAL
      else if (c->kind == K_ISAL)
        xor_gen (n + 2, size, ptrs);
      else if (c->kind == K_ISAL_AVX2)
        xor_gen_avx (n + 2, size, ptrs);
#endif
      break;
    case OP_GEN:
      if (c->kind == K_PARITY)
        parity_gen_syndrome (n, size, ptrs);
#ifdef HAVE_ISAL
      else
        isal_pq_gen (c->kind) (n, size, ptrs);
#endif
      break;
    case OP_RECOV2:
    case OP_RECOVP: {
      int a, b;

      recov_disks (g, g->rmw_disk, &a, &b);
      if (++g->rmw_disk == (unsigned int) n - 2)
        g->rmw_disk = 0;
      if (g->op == OP_RECOV2)
        parity_recov_2data (n, size, a, b, ptrs);
      else
        parity_recov_datap (n, size, a, ptrs);
      break;
    }
    case OP_CHECK: {
      struct parity_check_result res;

      if (parity_check (n, size, ptrs, g->scratch, &res) != 0)
        die ("check %d: stripe %zu is not consistent", n, g->cursor);
      break;
    }
    case OP_RMW: {
      void (*xs) (int, int, int, size_t, void **) = parity_xor_syndrome;
      int k = g->rmw_disk;

#ifdef RAIDBENCH_NT
      if (c->kind == K_NT)
        xs = raidbench_xor_syndrome_nt;
#endif
      if (++g->rmw_disk == (unsigned int) n - 2)
        g->rmw_disk = 0;
      xs (n, k, k, size, ptrs);
      memcpy (ptrs[k], ptrs[n], size);
      xs (n, k, k, size, ptrs);
      break;
    }
    default:
      abort ();
    }
  }
  after_isal (c);
}

static void
select_contender (const struct contender *c)
{
  if (c->kind == K_PARITY && parity_use (c->name) == -1)
    die ("%s: %s", c->name, errno == EIO ? "it failed libparity's self-test"
         : strerror (errno));
}

/* Fill the buffers of every stripe with bytes from a cheap generator. */
static void
fill_random (uint8_t *p, size_t bytes, uint64_t seed)
{
  uint64_t x = seed * 0x9e3779b97f4a7c15 + 1;

  for (size_t i = 0; i + 8 <= bytes; i += 8) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    memcpy (p + i, &x, 8);
  }
}

/* Run every contender once on stripe 0 from the same inputs and compare
 * its outputs with generic's.
 */
static void
verify_group (struct group *g)
{
  void *ptrs[MAX_SOURCES + 2];
  size_t span = g->stripe_bytes;
  uint8_t *saved = malloc (span), *want = malloc (2 * g->size);
  const struct contender *ref = NULL;

  if (!saved || !want)
    die ("out of memory");
  stripe_ptrs (g, 0, ptrs);
  memcpy (saved, g->base, span);
  for (int pass = 0; pass < 2; pass++) {
    for (unsigned int j = 0; j < g->nc; j++) {
      const struct contender *c = g->c[j];
      uint8_t *out0, *out1 = NULL;

      if ((pass == 0) != c->is_generic)
        continue;
      memcpy (g->base, saved, span);
      select_contender (c);
      switch (g->op) {
      case OP_XOR:
        if (c->kind == K_PARITY)
          parity_xor_gen (ptrs[g->n], ptrs, g->n, g->size);
#ifdef HAVE_ISAL
        else if (c->kind == K_ISAL && xor_gen (g->n + 2, g->size, ptrs))
          die ("ISA-L xor_gen failed");
        else if (c->kind == K_ISAL_AVX2
                 && xor_gen_avx (g->n + 2, g->size, ptrs))
          die ("ISA-L xor_gen_avx failed");
#endif
        out0 = ptrs[c->kind == K_PARITY ? g->n : g->n + 1];
        break;
      case OP_GEN:
        if (c->kind == K_PARITY)
          parity_gen_syndrome (g->n, g->size, ptrs);
#ifdef HAVE_ISAL
        else if (isal_pq_gen (c->kind) (g->n, g->size, ptrs))
          die ("ISA-L %s failed", c->name);
#endif
        out0 = ptrs[g->n - 2];
        out1 = ptrs[g->n - 1];
        break;
      case OP_RECOV2:
      case OP_RECOVP: {
        /* The stripe is consistent (run_group): poison what is lost, so
         * that a kernel that writes nothing cannot pass.
         */
        int a, b;

        recov_disks (g, 1, &a, &b);
        memset (ptrs[a], 0xa5, g->size);
        if (g->op == OP_RECOV2) {
          memset (ptrs[b], 0x5a, g->size);
          parity_recov_2data (g->n, g->size, a, b, ptrs);
          out1 = ptrs[b];
        }
        else {
          memset (ptrs[g->n - 2], 0x5a, g->size);
          parity_recov_datap (g->n, g->size, a, ptrs);
          out1 = ptrs[g->n - 2];
        }
        out0 = ptrs[a];
        if (memcmp (out0, saved + ((uint8_t *) out0 - g->base), g->size)
            || memcmp (out1, saved + ((uint8_t *) out1 - g->base), g->size))
          die ("%s %d, %zu bytes: %s does not rebuild the lost disks",
               op_names[g->op], g->n, g->size, c->name);
        break;
      }
      case OP_CHECK: {
        struct parity_check_result res;

        /* The stripe is consistent (run_group): make data block 1 wrong,
         * which must be located, with the same differences as generic's.
         */
        ((uint8_t *) ptrs[1])[g->size / 2] ^= 0x5a;
        if (parity_check (g->n, g->size, ptrs, g->scratch, &res) != 1
            || res.bad != 1)
          die ("check %d, %zu bytes: %s does not locate a bad data block",
               g->n, g->size, c->name);
        out0 = g->scratch;
        out1 = g->scratch + g->size;
        break;
      }
      default:
#ifdef RAIDBENCH_NT
        if (c->kind == K_NT)
          raidbench_xor_syndrome_nt (g->n, 1, 1, g->size, ptrs);
        else
#endif
          parity_xor_syndrome (g->n, 1, 1, g->size, ptrs);
        out0 = ptrs[g->n - 2];
        out1 = ptrs[g->n - 1];
        break;
      }
      after_isal (c);
      if (c->is_generic) {
        ref = c;
        memcpy (want, out0, g->size);
        if (out1)
          memcpy (want + g->size, out1, g->size);
      }
      else if (memcmp (want, out0, g->size) != 0
               || (out1 && memcmp (want + g->size, out1, g->size) != 0))
        die ("%s %d, %zu bytes: %s differs from %s: refusing to time it",
             op_names[g->op], g->n, g->size, c->name, ref->name);
    }
  }
  memcpy (g->base, saved, span);
  free (saved);
  free (want);
}

/* Warm up and find how many calls fill one repetition. */
static void
calibrate (struct group *g, struct contender *c)
{
  uint64_t iters = 1;
  double t;

  select_contender (c);
  for (;;) {
    double t0 = now_ns ();

    run_calls (g, c, iters);
    t = now_ns () - t0;
    if (t >= opt.rep_ns / 4 || iters >= (UINT64_C (1) << 40))
      break;
    iters *= 2;
  }
  c->iters = (uint64_t) (opt.rep_ns / (t / iters)) + 1;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

static void
time_group (struct group *g)
{
  for (unsigned int j = 0; j < g->nc; j++)
    calibrate (g, g->c[j]);
  for (unsigned int r = 0; r < opt.reps; r++)
    for (unsigned int j = 0; j < g->nc; j++) {
      struct contender *c = g->c[j];
      double t0;

      select_contender (c);
      t0 = now_ns ();
      run_calls (g, c, c->iters);
      c->ns[r] = (now_ns () - t0) / c->iters;
    }
  for (unsigned int j = 0; j < g->nc; j++) {
    struct contender *c = g->c[j];
    double sorted[1024];

    memcpy (sorted, c->ns, opt.reps * sizeof sorted[0]);
    qsort (sorted, opt.reps, sizeof sorted[0], cmp_double);
    c->min = sorted[0];
    c->med = opt.reps % 2 ? sorted[opt.reps / 2]
      : (sorted[opt.reps / 2 - 1] + sorted[opt.reps / 2]) / 2;
  }
}

/* Output. */

static bool first_json_row = true;

static const struct contender *
find_kind (const struct group *g, enum kind kind, bool generic)
{
  for (unsigned int j = 0; j < g->nc; j++)
    if (g->c[j]->kind == kind && (!generic || g->c[j]->is_generic))
      return g->c[j];
  return NULL;
}

static const struct contender *
find_name (const struct group *g, const char *name)
{
  for (unsigned int j = 0; name && j < g->nc; j++)
    if (strcmp (g->c[j]->name, name) == 0)
      return g->c[j];
  return NULL;
}

/* ref_time / time, or 0 when there is no reference. */
static double
speedup (const struct contender *ref, const struct contender *c)
{
  return ref ? ref->med / c->med : 0;
}

/* Targets the issue set, collected for the summary. */
struct target {
  char what[96];
  double value, limit;
  bool higher_is_better;
};
static struct target targets[256];
static unsigned int nr_targets;

static void
add_target (const char *what, double value, double limit, bool higher)
{
  if (nr_targets < sizeof targets / sizeof targets[0]) {
    struct target *t = &targets[nr_targets++];

    snprintf (t->what, sizeof t->what, "%s", what);
    t->value = value;
    t->limit = limit;
    t->higher_is_better = higher;
  }
}

static void
print_ratio (double r)
{
  if (r > 0)
    printf (" %8.2f", r);
  else
    printf (" %8s", "-");
}

static void
print_header (void)
{
  if (opt.format == FMT_TEXT)
    printf ("%-12s %3s %7s %-5s %-9s %-17s %9s %9s %7s %7s %8s %8s %8s"
            " %8s %6s\n", "op", "n", "size", "mode", "layout", "impl", "med ns",
            "min ns", "GB/s", "best", "x isa-l", "x i-avx2", "x generic",
            "x ref", "t/NT");
  else if (opt.format == FMT_CSV)
    printf ("op,n,size,mode,layout,impl,median_ns,min_ns,gbps,gbps_best,"
            "x_isal,x_isal_avx2,x_generic,x_ref,t_over_nt\n");
}

/* --svg: one panel per operation, size, mode and layout; x the disk (or
 * source) count, y each row's GB/s from its median, as in the table.
 */
static void
chart_group (const struct group *g)
{
  char panel[96], size[32];

  if (g->size % (1024 * 1024) == 0)
    snprintf (size, sizeof size, "%zu MiB", g->size >> 20);
  else if (g->size % 1024 == 0)
    snprintf (size, sizeof size, "%zu KiB", g->size >> 10);
  else
    snprintf (size, sizeof size, "%zu bytes", g->size);
  snprintf (panel, sizeof panel, "%s, %s per disk, %s, %s", op_names[g->op],
            size, mode_names[g->mode], layout_names[g->layout]);
  for (unsigned int j = 0; j < g->nc; j++)
    raidbench_svg_add (panel, g->op == OP_XOR ? "sources" : "disks",
                       g->c[j]->name, g->n, data_bytes (g) / g->c[j]->med);
}

static void
print_group (const struct group *g)
{
  const struct contender *isal = find_kind (g, K_ISAL, false);
  const struct contender *isal2 = find_kind (g, K_ISAL_AVX2, false);
  const struct contender *gen = find_kind (g, K_PARITY, true);
  const struct contender *nt = find_kind (g, K_NT, false);
  const struct contender *ref = find_name (g, opt.ref);
  double bytes = data_bytes (g);

  for (unsigned int j = 0; j < g->nc; j++) {
    const struct contender *c = g->c[j];
    double xi = speedup (isal, c), xi2 = speedup (isal2, c);
    double xg = speedup (gen, c), xr = speedup (ref, c);
    double tnt = nt && g->op == OP_RMW ? c->med / nt->med : 0;

    switch (opt.format) {
    case FMT_TEXT:
      printf ("%-12s %3d %7zu %-5s %-9s %-17s %9.1f %9.1f %7.2f %7.2f",
              op_names[g->op], g->n, g->size, mode_names[g->mode],
              layout_names[g->layout], c->name, c->med, c->min,
              bytes / c->med, bytes / c->min);
      print_ratio (c != isal ? xi : 0);
      print_ratio (c != isal2 ? xi2 : 0);
      print_ratio (c != gen ? xg : 0);
      print_ratio (c != ref ? xr : 0);
      if (tnt > 0)
        printf (" %6.3f", tnt);
      printf ("\n");
      break;
    case FMT_CSV:
      printf ("%s,%d,%zu,%s,%s,%s,%.1f,%.1f,%.3f,%.3f,", op_names[g->op],
              g->n, g->size, mode_names[g->mode], layout_names[g->layout],
              c->name, c->med, c->min, bytes / c->med, bytes / c->min);
      if (isal) printf ("%.3f", xi);
      printf (",");
      if (isal2) printf ("%.3f", xi2);
      printf (",%.3f,", xg);
      if (ref) printf ("%.3f", xr);
      printf (",");
      if (tnt > 0) printf ("%.4f", tnt);
      printf ("\n");
      break;
    case FMT_JSON:
      printf ("%s\n    {\"op\": \"%s\", \"n\": %d, \"size\": %zu, "
              "\"mode\": \"%s\", \"layout\": \"%s\", \"impl\": \"%s\", "
              "\"median_ns\": %.1f, \"min_ns\": %.1f, \"gbps\": %.3f, "
              "\"gbps_best\": %.3f, \"x_isal\": ",
              first_json_row ? "" : ",", op_names[g->op], g->n, g->size,
              mode_names[g->mode], layout_names[g->layout], c->name,
              c->med, c->min, bytes / c->med, bytes / c->min);
      if (isal) printf ("%.3f", xi); else printf ("null");
      printf (", \"x_isal_avx2\": ");
      if (isal2) printf ("%.3f", xi2); else printf ("null");
      printf (", \"x_generic\": %.3f, \"x_ref\": ", xg);
      if (ref) printf ("%.3f", xr); else printf ("null");
      printf (", \"t_over_nt\": ");
      if (tnt > 0) printf ("%.4f}", tnt); else printf ("null}");
      first_json_row = false;
      break;
    }
  }
  if (opt.format == FMT_TEXT && g->nc > 1)
    printf ("\n");
  fflush (stdout);
  if (opt.svg)
    chart_group (g);

  /* The project's targets, for the dispatched implementation: at least
   * ISA-L's speed (1.1 x where the CPU has GFNI and the ISA-L has GFNI
   * kernels), and rmw with normal stores well ahead of non-temporal
   * ones.  The GFNI kernels' further targets are against avx512x4 and
   * ISA-L's pq_gen_avx2_gfni, when those rows are timed.
   */
  const struct contender *x4 = find_name (g, "avx512x4");
  const struct contender *ig2 = find_kind (g, K_ISAL_AVX2_GFNI, false);
  bool isal_gfni = find_kind (g, K_ISAL_AVX512_GFNI, false) || ig2;

  for (unsigned int j = 0; j < g->nc; j++) {
    const struct contender *c = g->c[j];
    bool disp = c->kind == K_PARITY && strcmp (c->name, dispatched) == 0;
    char what[96];

    if (c->kind != K_PARITY || g->size != 4096)
      continue;
    if (disp && g->op == OP_GEN && isal && g->n >= 4 && g->n <= 24
        && g->layout == LAYOUT_ALIGNED) {
      snprintf (what, sizeof what, "gen_syndrome %2d disks %s vs ISA-L pq_gen",
                g->n, mode_names[g->mode]);
      add_target (what, speedup (isal, c),
                  isal_gfni && g->mode == MODE_CACHE ? 1.1 : 1.0, true);
      if (isal2 && g->mode == MODE_CACHE) {
        snprintf (what, sizeof what,
                  "gen_syndrome %2d disks vs ISA-L pq_gen_avx2", g->n);
        add_target (what, speedup (isal2, c), 1.0, true);
      }
    }
    if (g->op == OP_GEN && ig2 && g->mode == MODE_CACHE
        && g->layout == LAYOUT_ALIGNED && avx2gfni_preferred
        && strcmp (c->name, avx2gfni_preferred) == 0) {
      snprintf (what, sizeof what,
                "gen_syndrome %2d disks %s vs ISA-L pq_gen_avx2_gfni", g->n,
                c->name);
      add_target (what, speedup (ig2, c), 1.1, true);
    }
    if (disp && x4 && c != x4 && g->mode == MODE_CACHE
        && g->layout == LAYOUT_ALIGNED
        && (g->op == OP_RMW || g->op == OP_RECOV2 || g->op == OP_RECOVP)) {
      snprintf (what, sizeof what, "%s %d disks vs avx512x4",
                op_names[g->op], g->n);
      add_target (what, speedup (x4, c), g->op == OP_RMW ? 1.3 : 2.0, true);
    }
    if (disp && g->op == OP_XOR && isal && g->n <= 4 && g->mode == MODE_CACHE
        && g->layout == LAYOUT_ALIGNED) {
      snprintf (what, sizeof what, "xor_gen %d source%s vs ISA-L xor_gen",
                g->n, g->n > 1 ? "s" : " ");
      add_target (what, speedup (isal, c), 1.0, true);
      if (isal2) {
        snprintf (what, sizeof what, "xor_gen %d source%s vs ISA-L xor_gen_avx",
                  g->n, g->n > 1 ? "s" : " ");
        add_target (what, speedup (isal2, c), 1.0, true);
      }
    }
  }
  if (g->op == OP_RMW && nt && g->mode == MODE_CACHE) {
    for (unsigned int j = 0; j < g->nc; j++) {
      const struct contender *c = g->c[j];
      char what[96];

      if (c->kind == K_PARITY && (strcmp (c->name, "avx2x4") == 0
                                  || strcmp (c->name, dispatched) == 0)) {
        snprintf (what, sizeof what, "rmw %d disks %s: %s time / NT time",
                  g->n, layout_names[g->layout], c->name);
        add_target (what, c->med / nt->med, 0.6, false);
      }
    }
  }
}

static void
print_targets (void)
{
  if (nr_targets == 0)
    return;
  if (opt.format == FMT_TEXT) {
    printf ("Targets (dispatched %s, 4 KiB per disk, cache unless named; "
            "ratios of medians):\n", dispatched);
    for (unsigned int i = 0; i < nr_targets; i++) {
      const struct target *t = &targets[i];
      bool ok = t->higher_is_better ? t->value >= t->limit
        : t->value <= t->limit;

      printf ("  %-58s %6.2f  (%s %.2f)  %s\n", t->what, t->value,
              t->higher_is_better ? ">=" : "<=", t->limit,
              ok ? "met" : "MISSED");
    }
  }
  else if (opt.format == FMT_JSON) {
    printf ("\n  ],\n  \"targets\": [");
    for (unsigned int i = 0; i < nr_targets; i++) {
      const struct target *t = &targets[i];
      bool ok = t->higher_is_better ? t->value >= t->limit
        : t->value <= t->limit;

      printf ("%s\n    {\"what\": \"%s\", \"value\": %.3f, \"limit\": %.2f, "
              "\"met\": %s}", i ? "," : "", t->what, t->value, t->limit,
              ok ? "true" : "false");
    }
  }
}

/* The CPU as /proc/cpuinfo names it. */
static void
cpu_model (char *buf, size_t len, int *family, int *model)
{
  FILE *fp = fopen ("/proc/cpuinfo", "r");
  char line[512];

  snprintf (buf, len, "unknown");
  *family = *model = -1;
  if (!fp)
    return;
  while (fgets (line, sizeof line, fp)) {
    char *colon = strchr (line, ':');

    if (!colon)
      continue;
    if (strncmp (line, "model name", 10) == 0 && strcmp (buf, "unknown") == 0) {
      char *v = colon + 2;

      v[strcspn (v, "\n")] = '\0';
      snprintf (buf, len, "%s", v);
    }
    else if (strncmp (line, "cpu family", 10) == 0 && *family < 0)
      *family = atoi (colon + 1);
    else if (strncmp (line, "model\t", 6) == 0 && *model < 0)
      *model = atoi (colon + 1);
  }
  fclose (fp);
}

static void
json_string (const char *s)
{
  putchar ('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      printf ("\\%c", *s);
    else if ((unsigned char) *s < 0x20)
      printf ("\\u%04x", *s);
    else
      putchar (*s);
  }
  putchar ('"');
}

static void
print_preamble (void)
{
  char cpu[256], impls[512] = "";
  char isal[256] = "not built (configure found no libisal)";
  int family, model;
  bool avx512 = __builtin_cpu_supports ("avx512bw");

  cpu_model (cpu, sizeof cpu, &family, &model);
  for (const char *const *p = parity_impls (); *p; p++)
    snprintf (impls + strlen (impls), sizeof impls - strlen (impls), "%s%s",
              p == parity_impls () ? "" : " ", *p);
#ifdef HAVE_ISAL
  {
    const char *gfni2 = "", *gfni512 = "";

#ifdef HAVE_PQ_GEN_AVX2_GFNI
    gfni2 = ",\n            isa-l-avx2-gfni = pq_gen_avx2_gfni";
#endif
#ifdef HAVE_PQ_GEN_AVX512_GFNI
    gfni512 = ", isa-l-avx512-gfni = pq_gen_avx512_gfni";
#endif
    snprintf (isal, sizeof isal, "%d.%d.%d: isa-l = xor_gen/pq_gen (its own "
              "dispatch), isa-l-avx2 = xor_gen_avx/pq_gen_avx2%s%s",
              ISAL_MAJOR_VERSION, ISAL_MINOR_VERSION, ISAL_PATCH_VERSION,
              gfni2, gfni512);
  }
  if (!opt.isal)
    snprintf (isal, sizeof isal, "not timed (--no-isal)");
#endif

  switch (opt.format) {
  case FMT_TEXT:
    printf ("raidbench: libparity kernels");
#ifdef HAVE_ISAL
    printf (" against ISA-L");
#endif
    printf ("\ncpu:        %s (family %d, model %d), AVX2 %s, AVX-512BW %s, "
            "GFNI %s, %ld online CPUs\n", cpu, family, model,
            have_avx2 ? "yes" : "no", avx512 ? "yes" : "no",
            have_gfni ? "yes" : "no", sysconf (_SC_NPROCESSORS_ONLN));
    printf ("dispatcher: %s   (runnable: %s)\n", dispatched, impls);
    printf ("first use:  %.0f us (CPU features, choice, %s's self-test)\n",
            first_use_us, dispatched);
    printf ("isa-l:      %s\n", isal);
    printf ("timing:     %u reps of >= %.0f ms of %s per row after warm-up,"
            " rows of a group\n"
            "            interleaved rep by rep; med/min = median/minimum ns per"
            " call (rmw: per write)\n", opt.reps, opt.rep_ns / 1e6,
            opt.wall ? "wall-clock time" : "thread CPU time");
    printf ("GB/s:       1e9 bytes/s of data read as input, median: xor_gen n "
            "= (n+1) x size (n sources\n"
            "            + the dest, which is read; ISA-L gets the same n+1 "
            "inputs), gen_syndrome d =\n"
            "            (d-2) x size, rmw = size, check d = d x size; P, Q "
            "and outputs not\n"
            "            counted; best = from min\n");
    printf ("ratios:     x isa-l, x i-avx2, x generic = speed-up over isa-l, "
            "isa-l-avx2, generic (>1 faster);\n"
            "            t/NT = time over avx2x4 with non-temporal stores (<1 "
            "faster)\n");
    if (opt.ref)
      printf ("            x ref = speed-up over %s\n", opt.ref);
    printf ("modes:      cache = same buffers every call; dram = %zu MiB "
            "pool walked so each call is cold\n", opt.dram_size >> 20);
    printf ("layouts:    aligned = same page offset; displaced = buffer i "
            "moved by (9i mod 64) x 64 bytes\n\n");
    break;
  case FMT_CSV:
    printf ("# cpu: %s (family %d, model %d)\n# dispatcher: %s\n# isa-l: %s\n"
            "# ref: %s\n"
            "# GB/s = 1e9 bytes/s of data read as input; xor_gen n = (n+1) x "
            "size, gen_syndrome d = (d-2) x size, rmw = size, check d = d x "
            "size\n"
            "# reps: %u of >= %.0f ms of %s; dram pool %zu MiB\n", cpu,
            family, model, dispatched, isal, opt.ref ? opt.ref : "none",
            opt.reps, opt.rep_ns / 1e6,
            opt.wall ? "wall-clock time" : "thread CPU time",
            opt.dram_size >> 20);
    break;
  case FMT_JSON:
    printf ("{\n  \"cpu\": ");
    json_string (cpu);
    printf (",\n  \"cpu_family\": %d,\n  \"cpu_model\": %d,\n"
            "  \"avx512bw\": %s,\n  \"dispatcher\": ", family, model,
            avx512 ? "true" : "false");
    json_string (dispatched);
    printf (",\n  \"first_use_us\": %.1f", first_use_us);
    printf (",\n  \"isal\": ");
    json_string (isal);
    printf (",\n  \"clock\": \"%s\"", opt.wall ? "wall" : "thread_cpu");
    printf (",\n  \"reps\": %u,\n  \"rep_ms\": %.1f,\n  \"dram_bytes\": %zu,\n"
            "  \"gbps_counts\": \"1e9 bytes/s of data read as input: xor_gen n"
            " = (n+1) x size, gen_syndrome d = (d-2) x size, rmw = size,"
            " check d = d x size\",\n"
            "  \"results\": [", opt.reps, opt.rep_ns / 1e6, opt.dram_size);
    break;
  }
}

/* Set up, verify, time and print one group. */
static void
run_group (enum op op, int n, size_t size, enum mode mode, enum layout layout)
{
  struct group g = {
    .op = op, .n = n, .size = size, .mode = mode, .layout = layout,
  };
  uint8_t *cache_buf = NULL;

  g.nbuf = op == OP_XOR ? n + 2 : op == OP_RMW ? n + 1 : n;
  g.stride = (size + PAGE - 1) / PAGE * PAGE + PAGE;
  g.stripe_bytes = g.nbuf * g.stride;
  if (mode == MODE_CACHE) {
    cache_buf = aligned_alloc (PAGE, g.stripe_bytes);
    if (!cache_buf)
      die ("out of memory");
    fill_random (cache_buf, g.stripe_bytes, n * 131 + size);
    g.base = cache_buf;
    g.nstripes = 1;
  }
  else {
    g.base = dram_pool;
    g.nstripes = opt.dram_size / g.stripe_bytes;
    if (g.nstripes < 64)
      die ("--dram-size %zu MiB holds only %zu stripes of %s %d x %zu bytes;"
           " make it larger", opt.dram_size >> 20, g.nstripes, op_names[op],
           n, size);
    /* About 0.618 of the way round, coprime so every stripe is visited. */
    g.step = (size_t) (g.nstripes * 0.6180339887);
    while (g.step > 1) {
      size_t a = g.nstripes, b = g.step;

      while (b) { size_t t = a % b; a = b; b = t; }
      if (a == 1)
        break;
      g.step--;
    }
  }

  if (op == OP_CHECK || op == OP_RECOV2 || op == OP_RECOVP) {
    /* What a scrub of a healthy array sees, and what a recovery needs:
     * every stripe consistent.
     */
    void *ptrs[MAX_DISKS];

    g.scratch = aligned_alloc (LINE, 2 * size);
    if (!g.scratch)
      die ("out of memory");
    for (size_t s = 0; s < g.nstripes; s++) {
      stripe_ptrs (&g, s, ptrs);
      parity_gen_syndrome (n, size, ptrs);
    }
  }

  for (unsigned int i = 0; i < nr_contenders; i++) {
    struct contender *c = &contenders[i];

    if (is_isal (c) && op != OP_XOR && op != OP_GEN)
      continue;
    if ((c->kind == K_ISAL_AVX2_GFNI || c->kind == K_ISAL_AVX512_GFNI)
        && op == OP_XOR)
      continue;
    if (c->kind == K_NT && op != OP_RMW)
      continue;
    g.c[g.nc++] = c;
  }

  verify_group (&g);
  time_group (&g);
  print_group (&g);
  free (g.scratch);
  free (cache_buf);
}

/* Command line. */

static void
usage (FILE *fp)
{
  fprintf (fp,
"Usage: raidbench [OPTION]...\n"
"Time libparity's xor_gen, gen_syndrome, md's read-modify-write and the\n"
"scrub's parity_check for each implementation this CPU runs, against ISA-L\n"
"when it was built in.\n"
"\n"
"  --impl LIST        implementations or families to time, or 'preferred'\n"
"                     for each family's preferred one (default: all of\n"
"                     parity_impls()); generic is always timed as reference\n"
"  --ops LIST         xor,gen,rmw,check,recov (recov = recov_2data and\n"
"                     recov_datap; recov2, recovp for one; default: all)\n"
"  --sources LIST     xor_gen source counts, 1..128 (default 1,2,3,4,8,16)\n"
"  --disks LIST       gen_syndrome disk counts incl. P and Q, 4..96\n"
"                     (default 4,6,8,12,16,24)\n"
"  --rmw-disks LIST   rmw disk counts, 4..96 (default 8,24)\n"
"  --check-disks LIST check disk counts, 4..96 (default 8,24)\n"
"  --recov-disks LIST recovery disk counts, 4..96 (default 8,24)\n"
"  --size LIST        bytes per disk, multiple of 64, K/M suffix (default 4K)\n"
"  --mode MODE        cache, dram or both (default both)\n"
"  --layout LAYOUT    aligned, displaced or both (default: aligned, and\n"
"                     both for rmw)\n"
"  --displace         the same as --layout both\n"
"  --reps N           timed repetitions per row, 1..1024 (default 15)\n"
"  --time MS          minimum length of one repetition (default 20)\n"
"  --dram-size SIZE   working set of dram mode, M/G suffix (default 512M)\n"
"  --no-isal          do not time ISA-L\n"
"  --ref NAME         add an \"x ref\" column, the speed-up over row NAME\n"
"                     (avx512x4, isa-l-avx2-gfni, ...) in every group it is in\n"
"  --cpu N            pin to CPU N\n"
"  --wall             time by the wall clock (default: thread CPU time)\n"
"  --csv, --json      machine-readable output\n"
"  --svg FILE         also draw the results in FILE: GB/s against the disk\n"
"                     (xor_gen: source) count, a line per implementation\n"
"  --help             this text\n"
"\n"
"GB/s = 1e9 bytes per second of data read as input: xor_gen n counts\n"
"(n+1) x size, gen_syndrome d counts (d-2) x size, rmw counts the write,\n"
"check d counts d x size, recov_* d (d-2) x size.\n"
"See raidbench(1).\n");
}

static unsigned long long
parse_size (const char *option, const char *s)
{
  char *end;
  unsigned long long v;

  errno = 0;
  v = strtoull (s, &end, 10);
  if (errno || end == s || *s == '-')
    die ("%s: '%s' is not a size", option, s);
  switch (*end) {
  case 'k': case 'K': v <<= 10; end++; break;
  case 'm': case 'M': v <<= 20; end++; break;
  case 'g': case 'G': v <<= 30; end++; break;
  }
  if (*end == 'i' && end[1] == 'B')
    end += 2;
  else if (*end == 'B')
    end++;
  if (*end != '\0')
    die ("%s: '%s' is not a size", option, s);
  return v;
}

static void
parse_list (const char *option, const char *arg, struct list *l,
            long lo, long hi, bool size)
{
  char *copy = strdup (arg), *save = NULL;

  if (!copy)
    die ("out of memory");
  l->n = 0;
  for (char *tok = strtok_r (copy, ",", &save); tok;
       tok = strtok_r (NULL, ",", &save)) {
    long v;

    if (l->n == MAX_LIST)
      die ("%s: more than %d values", option, MAX_LIST);
    if (size) {
      unsigned long long s = parse_size (option, tok);

      if (s == 0 || s % 64 || s > (unsigned long long) hi)
        die ("%s: %s: must be a nonzero multiple of 64 up to %ld bytes",
             option, tok, hi);
      v = s;
    }
    else {
      char *end;

      errno = 0;
      v = strtol (tok, &end, 10);
      if (errno || end == tok || *end != '\0')
        die ("%s: '%s' is not a number", option, tok);
      if (v < lo || v > hi)
        die ("%s: %ld: must be between %ld and %ld", option, v, lo, hi);
    }
    l->v[l->n++] = v;
  }
  if (l->n == 0)
    die ("%s: empty list", option);
  free (copy);
}

static void
parse_both (const char *option, const char *arg, const char *a,
            const char *b, bool out[2])
{
  if (strcmp (arg, a) == 0)
    out[0] = true, out[1] = false;
  else if (strcmp (arg, b) == 0)
    out[0] = false, out[1] = true;
  else if (strcmp (arg, "both") == 0)
    out[0] = out[1] = true;
  else
    die ("%s: '%s': expected %s, %s or both", option, arg, a, b);
}

static void
add_contender (enum kind kind, const char *name, bool is_generic)
{
  struct contender *c;

  for (unsigned int i = 0; i < nr_contenders; i++)
    if (strcmp (contenders[i].name, name) == 0)
      return;
  if (nr_contenders == MAX_CONTENDERS)
    die ("too many implementations");
  c = &contenders[nr_contenders++];
  c->kind = kind;
  snprintf (c->name, sizeof c->name, "%s", name);
  c->is_generic = is_generic;
}

static void
parse_args (int argc, char **argv)
{
  enum { O_IMPL = 256, O_OPS, O_SOURCES, O_DISKS, O_RMW_DISKS,
         O_CHECK_DISKS, O_SIZE,
         O_MODE, O_LAYOUT, O_DISPLACE, O_REPS, O_TIME, O_DRAM, O_NO_ISAL,
         O_CPU, O_CSV, O_JSON, O_HELP, O_WALL, O_RECOV_DISKS, O_REF,
         O_SVG };
  static const struct option longopts[] = {
    { "impl", required_argument, NULL, O_IMPL },
    { "ops", required_argument, NULL, O_OPS },
    { "sources", required_argument, NULL, O_SOURCES },
    { "disks", required_argument, NULL, O_DISKS },
    { "rmw-disks", required_argument, NULL, O_RMW_DISKS },
    { "check-disks", required_argument, NULL, O_CHECK_DISKS },
    { "size", required_argument, NULL, O_SIZE },
    { "mode", required_argument, NULL, O_MODE },
    { "layout", required_argument, NULL, O_LAYOUT },
    { "displace", no_argument, NULL, O_DISPLACE },
    { "reps", required_argument, NULL, O_REPS },
    { "time", required_argument, NULL, O_TIME },
    { "dram-size", required_argument, NULL, O_DRAM },
    { "no-isal", no_argument, NULL, O_NO_ISAL },
    { "cpu", required_argument, NULL, O_CPU },
    { "csv", no_argument, NULL, O_CSV },
    { "json", no_argument, NULL, O_JSON },
    { "help", no_argument, NULL, O_HELP },
    { "wall", no_argument, NULL, O_WALL },
    { "recov-disks", required_argument, NULL, O_RECOV_DISKS },
    { "ref", required_argument, NULL, O_REF },
    { "svg", required_argument, NULL, O_SVG },
    { NULL, 0, NULL, 0 },
  };
  static char *impl_copy;
  struct list l;
  int c;

  for (int op = 0; op < NR_OPS; op++)
    opt.ops[op] = true;
  parse_list ("--sources", "1,2,3,4,8,16", &opt.sources, 1, MAX_SOURCES, false);
  parse_list ("--disks", "4,6,8,12,16,24", &opt.disks, 4, MAX_DISKS, false);
  parse_list ("--rmw-disks", "8,24", &opt.rmw_disks, 4, MAX_DISKS, false);
  parse_list ("--check-disks", "8,24", &opt.check_disks, 4, MAX_DISKS, false);
  parse_list ("--recov-disks", "8,24", &opt.recov_disks, 4, MAX_DISKS, false);
  parse_list ("--size", "4096", &opt.sizes, 64, 1L << 30, true);
  opt.mode[MODE_CACHE] = opt.mode[MODE_DRAM] = true;
  opt.layout[LAYOUT_ALIGNED] = true;
  opt.reps = 15;
  opt.rep_ns = 20e6;
  opt.dram_size = (size_t) 512 << 20;
  opt.isal = true;
  opt.cpu = -1;

  while ((c = getopt_long (argc, argv, "h", longopts, NULL)) != -1) {
    switch (c) {
    case O_IMPL:
      free (impl_copy);
      impl_copy = strdup (optarg);
      if (!impl_copy)
        die ("out of memory");
      opt.nr_impls = 0;
      for (char *save = NULL, *t = strtok_r (impl_copy, ",", &save); t;
           t = strtok_r (NULL, ",", &save)) {
        if (strcmp (t, "all") == 0)
          continue;
        if (opt.nr_impls == MAX_CONTENDERS - 4)
          die ("--impl: too many names");
        opt.impls[opt.nr_impls++] = t;
      }
      break;
    case O_OPS:
      for (int op = 0; op < NR_OPS; op++)
        opt.ops[op] = false;
      {
        char *copy = strdup (optarg), *save = NULL;

        if (!copy)
          die ("out of memory");
        for (char *t = strtok_r (copy, ",", &save); t;
             t = strtok_r (NULL, ",", &save)) {
          if (strcmp (t, "xor") == 0 || strcmp (t, "xor_gen") == 0)
            opt.ops[OP_XOR] = true;
          else if (strcmp (t, "gen") == 0 || strcmp (t, "gen_syndrome") == 0)
            opt.ops[OP_GEN] = true;
          else if (strcmp (t, "rmw") == 0)
            opt.ops[OP_RMW] = true;
          else if (strcmp (t, "check") == 0)
            opt.ops[OP_CHECK] = true;
          else if (strcmp (t, "recov") == 0)
            opt.ops[OP_RECOV2] = opt.ops[OP_RECOVP] = true;
          else if (strcmp (t, "recov2") == 0 || strcmp (t, "recov_2data") == 0)
            opt.ops[OP_RECOV2] = true;
          else if (strcmp (t, "recovp") == 0 || strcmp (t, "recov_datap") == 0)
            opt.ops[OP_RECOVP] = true;
          else
            die ("--ops: '%s': expected xor, gen, rmw, check, recov, recov2"
                 " or recovp", t);
        }
        free (copy);
      }
      {
        bool any = false;

        for (int op = 0; op < NR_OPS; op++)
          any |= opt.ops[op];
        if (!any)
          die ("--ops: empty list");
      }
      break;
    case O_SOURCES:
      parse_list ("--sources", optarg, &opt.sources, 1, MAX_SOURCES, false);
      break;
    case O_DISKS:
      parse_list ("--disks", optarg, &opt.disks, 4, MAX_DISKS, false);
      break;
    case O_RMW_DISKS:
      parse_list ("--rmw-disks", optarg, &opt.rmw_disks, 4, MAX_DISKS, false);
      break;
    case O_CHECK_DISKS:
      parse_list ("--check-disks", optarg, &opt.check_disks, 4, MAX_DISKS,
                  false);
      break;
    case O_RECOV_DISKS:
      parse_list ("--recov-disks", optarg, &opt.recov_disks, 4, MAX_DISKS,
                  false);
      break;
    case O_REF:
      opt.ref = optarg;
      break;
    case O_SVG:
      opt.svg = optarg;
      break;
    case O_SIZE:
      parse_list ("--size", optarg, &opt.sizes, 64, 1L << 30, true);
      break;
    case O_MODE:
      parse_both ("--mode", optarg, "cache", "dram", opt.mode);
      break;
    case O_LAYOUT:
      parse_both ("--layout", optarg, "aligned", "displaced", opt.layout);
      opt.layout_set = true;
      break;
    case O_DISPLACE:
      opt.layout[0] = opt.layout[1] = opt.layout_set = true;
      break;
    case O_REPS:
      parse_list ("--reps", optarg, &l, 1, 1024, false);
      if (l.n != 1)
        die ("--reps: one number expected");
      opt.reps = l.v[0];
      break;
    case O_TIME:
      parse_list ("--time", optarg, &l, 1, 60000, false);
      if (l.n != 1)
        die ("--time: one number expected");
      opt.rep_ns = l.v[0] * 1e6;
      break;
    case O_DRAM: {
      unsigned long long s = parse_size ("--dram-size", optarg);

      if (s < (16ULL << 20) || s > (64ULL << 30))
        die ("--dram-size: %s: must be between 16M and 64G", optarg);
      opt.dram_size = s;
      break;
    }
    case O_NO_ISAL:
      opt.isal = false;
      break;
    case O_CPU:
      parse_list ("--cpu", optarg, &l, 0, CPU_SETSIZE - 1, false);
      if (l.n != 1)
        die ("--cpu: one number expected");
      opt.cpu = l.v[0];
      break;
    case O_WALL:
      opt.wall = true;
      break;
    case O_CSV:
      opt.format = FMT_CSV;
      break;
    case O_JSON:
      opt.format = FMT_JSON;
      break;
    case 'h':
    case O_HELP:
      usage (stdout);
      exit (EXIT_SUCCESS);
    default:
      fprintf (stderr, "Try 'raidbench --help'.\n");
      exit (EXIT_FAILURE);
    }
  }
  if (optind < argc)
    die ("unexpected argument '%s'; try --help", argv[optind]);
}

/* The rows: the chosen implementations, generic as reference, ISA-L, and
 * for rmw avx2x4 with normal and with non-temporal stores.
 */
static void
choose_contenders (void)
{
  const char *const *all = parity_impls ();

  have_avx = __builtin_cpu_supports ("avx");
  have_avx2 = __builtin_cpu_supports ("avx2");
  have_gfni = __builtin_cpu_supports ("gfni");
  if (parity_use ("avx2gfni") == 0)
    avx2gfni_preferred = parity_name ();
  parity_use (dispatched);
  add_contender (K_PARITY, "generic", true);
  if (opt.nr_impls == 0)
    for (const char *const *p = all; *p; p++)
      add_contender (K_PARITY, *p, strcmp (*p, "generic") == 0);
  for (unsigned int i = 0; i < opt.nr_impls; i++) {
    const char *name = opt.impls[i];

    if (strcmp (name, "preferred") == 0) {
      /* Each family's preferred variant.  Names are FAMILYxU (avx2x4) or
       * just FAMILY (generic), so the family is the name less any xU.
       */
      for (const char *const *p = all; *p; p++) {
        char family[32];
        size_t len = strlen (*p);

        snprintf (family, sizeof family, "%s", *p);
        while (len > 0 && family[len - 1] >= '0' && family[len - 1] <= '9')
          len--;
        if (len > 1 && len < strlen (*p) && family[len - 1] == 'x')
          family[len - 1] = '\0';
        add_contender (K_PARITY,
                       parity_use (family) == 0 ? parity_name () : *p, false);
      }
      continue;
    }
    if (parity_use (name) == -1)
      die ("--impl %s: %s", name,
           errno == ENOTSUP ? "this CPU cannot run it"
           : errno == EIO ? "it failed libparity's self-test"
           : "no such implementation; see parity_impls() in --help output");
    /* A family name stands for its preferred variant. */
    add_contender (K_PARITY, parity_name (), false);
  }
#ifdef HAVE_ISAL
  if (opt.isal) {
    add_contender (K_ISAL, "isa-l", false);
    if (have_avx2)
      add_contender (K_ISAL_AVX2, "isa-l-avx2", false);
#ifdef HAVE_PQ_GEN_AVX2_GFNI
    if (have_avx2 && have_gfni)
      add_contender (K_ISAL_AVX2_GFNI, "isa-l-avx2-gfni", false);
#endif
#ifdef HAVE_PQ_GEN_AVX512_GFNI
    if (have_gfni && __builtin_cpu_supports ("avx512bw"))
      add_contender (K_ISAL_AVX512_GFNI, "isa-l-avx512-gfni", false);
#endif
  }
#endif
#ifdef RAIDBENCH_NT
  if (have_avx2 && opt.ops[OP_RMW]) {
    bool listed = false;

    for (unsigned int i = 0; i < nr_contenders; i++)
      listed |= strcmp (contenders[i].name, "avx2x4") == 0;
    /* The normal-store twin of the NT row, for the t/NT column. */
    if (!listed && parity_use ("avx2x4") == 0)
      add_contender (K_PARITY, "avx2x4", false);
    add_contender (K_NT, "avx2x4_nt", false);
  }
#endif
}

/* The wall-clock cost of libparity's first use: the CPU's features, the
 * choice, and the chosen implementation's self-test against generic.
 */
static void
time_first_use (void)
{
  struct timespec a, b;

  clock_gettime (CLOCK_MONOTONIC, &a);
  dispatched = parity_name ();
  clock_gettime (CLOCK_MONOTONIC, &b);
  first_use_us = (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3;
}

int
main (int argc, char **argv)
{
  time_first_use ();
  parse_args (argc, argv);
  if (opt.svg) {                /* fail now rather than after the run */
    FILE *f = fopen (opt.svg, "w");

    if (f == NULL)
      die ("--svg %s: %s", opt.svg, strerror (errno));
    fclose (f);
  }

  if (opt.cpu >= 0) {
    cpu_set_t set;

    CPU_ZERO (&set);
    CPU_SET (opt.cpu, &set);
    if (sched_setaffinity (0, sizeof set, &set) == -1)
      die ("--cpu %d: %s", opt.cpu, strerror (errno));
  }
  choose_contenders ();

  if (opt.mode[MODE_DRAM]) {
    dram_pool = aligned_alloc ((size_t) 2 << 20, opt.dram_size);
    if (!dram_pool)
      die ("cannot allocate the %zu MiB DRAM pool: %s", opt.dram_size >> 20,
           strerror (errno));
    madvise (dram_pool, opt.dram_size, MADV_HUGEPAGE);
    fill_random (dram_pool, opt.dram_size, 1);
  }

  print_preamble ();
  print_header ();
  for (unsigned int s = 0; s < opt.sizes.n; s++)
    for (int m = 0; m < 2; m++) {
      if (!opt.mode[m])
        continue;
      for (int op = 0; op < NR_OPS; op++) {
        const struct list *l = op == OP_XOR ? &opt.sources
          : op == OP_GEN ? &opt.disks : op == OP_RMW ? &opt.rmw_disks
          : op == OP_CHECK ? &opt.check_disks : &opt.recov_disks;

        if (!opt.ops[op])
          continue;
        for (unsigned int i = 0; i < l->n; i++)
          for (int lay = 0; lay < 2; lay++) {
            bool want = opt.layout[lay]
              || (!opt.layout_set && op == OP_RMW);

            if (want)
              run_group (op, l->v[i], opt.sizes.v[s], m, lay);
          }
      }
    }
  print_targets ();
  if (opt.format == FMT_JSON)
    printf ("\n  ]\n}\n");
  free (dram_pool);
  if (opt.svg) {
    char cpu[256], caption[512];
    int family, model;

    cpu_model (cpu, sizeof cpu, &family, &model);
    snprintf (caption, sizeof caption, "raidbench on %s: GB/s (1e9 bytes of "
              "data read per second, median of %u), %s dispatched", cpu,
              opt.reps, dispatched);
    if (raidbench_svg_write (opt.svg, caption) == -1)
      die ("--svg %s: %s", opt.svg, strerror (errno));
  }
  return EXIT_SUCCESS;
}
