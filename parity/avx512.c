/* AVX-512 implementation: 64-byte vectors, AVX-512F and AVX-512BW.
 *
 * The vector operations and their reasoning are in vec_avx512.h; this file
 * instantiates kernels.h with them.  It is compiled twice from the one
 * source: natively (-mavx512f -mavx512bw) as family "avx512", which runs
 * only where the CPU has AVX-512BW and does not lower its clock for ZMM
 * registers (cpu.c); and, in test builds only, with PARITY_AVX512_SIMDE
 * against SIMDe's portable AVX-512 as family "simde_avx512", which runs
 * anywhere so that the Check suite can test these kernels on machines and
 * emulators without AVX-512.  The SIMDe family is never in the library that
 * the plugin and raidbench link (see parity/Makefile.am).
 *
 * The SIMDe names carry a "simde_" prefix rather than a suffix so that no
 * SIMDe name starts with a native family's name: parity_use("avx512") must
 * not be satisfiable by an emulated kernel.
 */

#include <config.h>

#include "internal.h"
#include "vec_avx512.h"
#include "kernels.h"

#ifdef PARITY_AVX512_SIMDE
#define AVX512_NAME(suffix) simde_avx512##suffix
#define AVX512_FAMILY_NAME "simde_avx512"
#else
#define AVX512_NAME(suffix) avx512##suffix
#define AVX512_FAMILY_NAME "avx512"
#endif
/* One more level of expansion, so that AVX512_NAME() is replaced before
 * kernels.h pastes tokens onto it.
 */
#define KERNELS(prefix, U) PARITY_KERNELS (prefix, U)
#define ENTRY(prefix) PARITY_IMPL_ENTRY (prefix)

KERNELS (AVX512_NAME (x1), 1)
KERNELS (AVX512_NAME (x2), 2)
KERNELS (AVX512_NAME (x4), 4)

static bool
avx512_cpu_ok (void)
{
#ifdef PARITY_AVX512_SIMDE
  return true;
#else
  unsigned int f = parity_cpu_features ();

  return (f & PARITY_CPU_AVX512BW) && !(f & PARITY_CPU_AVX512_SLOW);
#endif
}

static const struct parity_impl avx512_impls[] = {
  ENTRY (AVX512_NAME (x1)),
  ENTRY (AVX512_NAME (x2)),
  ENTRY (AVX512_NAME (x4)),
};

#ifdef PARITY_AVX512_SIMDE
const struct parity_family parity_family_simde_avx512 = {
#else
const struct parity_family parity_family_avx512 = {
#endif
  AVX512_FAMILY_NAME, avx512_cpu_ok, avx512_impls, 3, 2,
};
