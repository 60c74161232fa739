/* SPDX-License-Identifier: BSD-3-Clause */
/* CPU feature detection for choosing a parity implementation.
 *
 * A vector instruction set is usable only when the CPU implements it *and*
 * the operating system saves its registers on a context switch.  On x86 the
 * first is CPUID, the second is XCR0 read with XGETBV (OSXSAVE must be set
 * before XGETBV may be executed): AVX needs the SSE and YMM state bits,
 * AVX-512 also the opmask and both ZMM halves.
 *
 * GFNI (CPUID leaf 7, ECX bit 8) has three encodings: legacy SSE on XMM,
 * VEX on YMM (which also needs AVX and the YMM state), EVEX on ZMM (which
 * also needs AVX-512F and the ZMM state).  So PARITY_CPU_GFNI says only
 * that the CPU has the instructions; a family that uses them at a width
 * also requires that width's bit (PARITY_CPU_AVX2, PARITY_CPU_AVX512BW),
 * which carries the OS check.  Intel's Tremont Atoms have GFNI without
 * AVX, the hybrid chips since Alder Lake with AVX2 but without AVX-512,
 * Ice Lake, Sapphire Rapids and later server cores and AMD Zen 4 and 5
 * with both.
 *
 * AVX-512 is flagged "slow" on Intel Skylake-SP/X, Cascade Lake and Ice Lake
 * (family 6), where using ZMM registers lowers the core clock enough that a
 * parity kernel loses more on the rest of the program than it gains, the
 * reason Linux prefers AVX2 there too.  Later Intel cores and AMD Zen 4/5
 * do not downclock this way.
 *
 * On aarch64, getauxval(AT_HWCAP) reports ASIMD (NEON) and SVE.
 */

#include <config.h>

#include "internal.h"

#if defined(__x86_64__) && defined(HAVE_CPUID_H)
#include <cpuid.h>

#ifndef bit_GFNI
#define bit_GFNI (1 << 8)       /* CPUID.(EAX=7,ECX=0):ECX; older cpuid.h lack it */
#endif

static uint64_t
xgetbv0 (void)
{
  uint32_t eax, edx;

  __asm__ volatile ("xgetbv" : "=a" (eax), "=d" (edx) : "c" (0));
  return ((uint64_t) edx << 32) | eax;
}

static bool
avx512_downclocks (unsigned int family, unsigned int model)
{
  static const unsigned int models[] = {
    0x55,                       /* Skylake-SP/X, Cascade Lake, Cooper Lake */
    0x6a, 0x6c,                 /* Ice Lake-SP */
    0x7d, 0x7e,                 /* Ice Lake client */
  };

  if (family != 6)
    return false;
  for (unsigned int i = 0; i < sizeof models / sizeof models[0]; i++)
    if (models[i] == model)
      return true;
  return false;
}

static unsigned int
detect (void)
{
  unsigned int eax, ebx, ecx, edx, max, family, model;
  unsigned int f = 0;
  uint64_t xcr0 = 0;
  char vendor[13] = { 0 };

  if (!__get_cpuid (0, &max, &ebx, &ecx, &edx))
    return 0;
  __builtin_memcpy (vendor, &ebx, 4);
  __builtin_memcpy (vendor + 4, &edx, 4);
  __builtin_memcpy (vendor + 8, &ecx, 4);

  __cpuid (1, eax, ebx, ecx, edx);
  family = (eax >> 8) & 0xf;
  model = (eax >> 4) & 0xf;
  if (family == 6 || family == 15)
    model |= ((eax >> 16) & 0xf) << 4;
  if (family == 15)
    family += (eax >> 20) & 0xff;

  if (edx & bit_SSE2)
    f |= PARITY_CPU_SSE2;
  if (ecx & bit_SSSE3)
    f |= PARITY_CPU_SSSE3;
  if (ecx & bit_OSXSAVE)
    xcr0 = xgetbv0 ();
  if (max < 7)
    return f;

  __cpuid_count (7, 0, eax, ebx, ecx, edx);
  if ((ebx & bit_AVX2) && (xcr0 & 0x6) == 0x6)
    f |= PARITY_CPU_AVX2;
  if (ecx & bit_GFNI)
    f |= PARITY_CPU_GFNI;
  if ((ebx & bit_AVX512F) && (ebx & bit_AVX512BW) && (xcr0 & 0xe6) == 0xe6) {
    f |= PARITY_CPU_AVX512BW;
    if (__builtin_strcmp (vendor, "GenuineIntel") == 0 &&
        avx512_downclocks (family, model))
      f |= PARITY_CPU_AVX512_SLOW;
  }
  return f;
}

#elif defined(__aarch64__) && defined(HAVE_SYS_AUXV_H)
#include <sys/auxv.h>
#include <asm/hwcap.h>

static unsigned int
detect (void)
{
  unsigned long hwcap = getauxval (AT_HWCAP);
  unsigned int f = 0;

  if (hwcap & HWCAP_ASIMD)
    f |= PARITY_CPU_NEON;
#ifdef HWCAP_SVE
  if (hwcap & HWCAP_SVE)
    f |= PARITY_CPU_SVE;
#endif
  return f;
}

#else
static unsigned int detect (void) { return 0; }
#endif

unsigned int
parity_cpu_features (void)
{
  static unsigned int features;
  static bool done;

  /* Idempotent and race-free in effect: every thread computes the same
   * value, and the first call is made by dispatch.c's first use, which
   * runs once before any other caller gets past it.
   */
  if (!__atomic_load_n (&done, __ATOMIC_ACQUIRE)) {
    __atomic_store_n (&features, detect (), __ATOMIC_RELAXED);
    __atomic_store_n (&done, true, __ATOMIC_RELEASE);
  }
  return __atomic_load_n (&features, __ATOMIC_RELAXED);
}
