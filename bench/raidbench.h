/* SPDX-License-Identifier: BSD-3-Clause */
/* raidbench internals shared between its source files. */

#ifndef RAIDBENCH_H
#define RAIDBENCH_H

#include <stddef.h>

#ifdef RAIDBENCH_NT
/* avx2x4's xor_syndrome with non-temporal stores of P and Q, followed by
 * an sfence (rmw_nt.c).  Call only when the CPU has AVX2.
 */
void raidbench_xor_syndrome_nt (int disks, int start, int stop, size_t bytes,
                                void **ptrs);
#endif

#endif /* RAIDBENCH_H */
