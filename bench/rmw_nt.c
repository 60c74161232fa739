/* SPDX-License-Identifier: BSD-3-Clause */
/* avx2x4 with non-temporal stores of P and Q: the counter-example.
 *
 * This is libparity's own avx2x4 (the same kernels.h body and the same
 * vec_avx2.h vector operations) with one change: xor_syndrome stores P and
 * Q with vmovntdq instead of vmovdqa.  Linux's avx2x4 xor_syndrome did this
 * until 2026.  A non-temporal store sends the line towards DRAM and evicts
 * it from every cache level, which is right for data nobody reads again and
 * wrong for md's read-modify-write: the second xor_syndrome of the same
 * write reads P and Q back at once, and the next write to the stripe reads
 * them again.  raidbench times both variants on the same buffers so the
 * cost is shown rather than asserted.  It exists only here; the library
 * must never ship it.
 *
 * Non-temporal stores are weakly ordered, so the wrapper ends with an
 * sfence, as the kernel does after its NT kernels; without it the next
 * write could be timed before the stores were visible.
 */

#include <config.h>

#include <immintrin.h>

#include "vec_avx2.h"
#define v_store_pq(p, x) _mm256_stream_si256 ((void *) (p), (x))
#include "kernels.h"

#include "raidbench.h"

PARITY_KERNELS (avx2x4_nt, 4)

/* Only xor_syndrome is used; the entry keeps the other four referenced. */
static const struct parity_impl avx2x4_nt __attribute__ ((unused)) = {
  .name = "avx2x4_nt",
  .xor_gen = xor_gen_avx2x4_nt,
  .gen_syndrome = gen_syndrome_avx2x4_nt,
  .xor_syndrome = xor_syndrome_avx2x4_nt,
  .recov_2data = recov_2data_avx2x4_nt,
  .recov_datap = recov_datap_avx2x4_nt,
};

void
raidbench_xor_syndrome_nt (int disks, int start, int stop, size_t bytes,
                           void **ptrs)
{
  xor_syndrome_avx2x4_nt (disks, start, stop, bytes, ptrs);
  _mm_sfence ();
}
