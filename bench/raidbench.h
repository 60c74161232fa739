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

/* --svg (raidbench_svg.c): add point (x, y) to series `series` of the
 * chart titled `panel`, whose x axis is named xname; the panels and
 * their series keep the order they were first named in.
 */
void raidbench_svg_add (const char *panel, const char *xname,
                        const char *series, double x, double y);
/* Write every panel to path, under a caption.  0, or -1 with errno. */
int raidbench_svg_write (const char *path, const char *caption);

#endif /* RAIDBENCH_H */
