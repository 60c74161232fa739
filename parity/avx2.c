/* AVX2 implementation: 32-byte vectors.
 *
 * Doubling is SSE2's trick on wider registers (vpcmpgtb, vpaddb, vpand,
 * vpxor).  Multiplication by a constant c uses the nibble-table method:
 * c*x = c*(x & 0x0f) ^ c*(x & 0xf0), and each half has only 16 values, so
 * two vpshufb lookups into 16-byte tables (copied into both 128-bit lanes)
 * replace eight doublings.
 *
 * xor_syndrome stores P and Q with ordinary stores: md reads them again
 * right away for the second half of a read-modify-write, and non-temporal
 * stores would push them out to DRAM in between (raidbench shows the cost).
 */

#include <config.h>

#include <immintrin.h>

#include "internal.h"
#include "vec_avx2.h"
#include "kernels.h"

PARITY_KERNELS (avx2x1, 1)
PARITY_KERNELS (avx2x2, 2)
PARITY_KERNELS (avx2x4, 4)

static bool
avx2_cpu_ok (void)
{
  return parity_cpu_features () & PARITY_CPU_AVX2;
}

static const struct parity_impl avx2_impls[] = {
  PARITY_IMPL_ENTRY (avx2x1),
  PARITY_IMPL_ENTRY (avx2x2),
  PARITY_IMPL_ENTRY (avx2x4),
};

const struct parity_family parity_family_avx2 = {
  "avx2", avx2_cpu_ok, avx2_impls, 3, 2,
};
