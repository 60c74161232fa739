/* libparity: RAID-5 and RAID-6 parity with run-time selected SIMD kernels.
 *
 * The semantics are Linux md's (lib/raid6, include/linux/raid/pq.h and the
 * kernel's xor_gen()), so results can be compared byte for byte with md:
 *
 *   P = D_0 ^ D_1 ^ ... ^ D_{n-1}
 *   Q = g^0 D_0 ^ g^1 D_1 ^ ... ^ g^{n-1} D_{n-1}
 *
 * over GF(2^8) with polynomial x^8+x^4+x^3+x^2+1 (0x11d) and generator
 * g = 2.  The essay at the top of parity/generic.c explains the maths.
 *
 * Contract, for every function below:
 *   - every buffer is 64-byte aligned;
 *   - bytes is a nonzero multiple of 64;
 *   - buffers do not overlap (the same pointer twice is an overlap);
 *   - 4 <= disks <= 256, where "disks" counts data disks plus P and Q:
 *     ptrs[0 .. disks-3] are data, ptrs[disks-2] is P, ptrs[disks-1] is Q.
 * Breaking the contract is undefined behaviour; nothing is checked on the
 * fast path.
 *
 * All functions are thread safe.  The implementation in use is chosen once
 * at start-up (the best for this CPU, or the one named by the environment
 * variable PARITY_IMPL) and can be changed with parity_use(); changing it
 * while other threads compute is allowed, each call uses one implementation
 * from start to end.
 */

#ifndef PARITY_H
#define PARITY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* NULL-terminated names of every implementation that runs on this CPU,
 * slowest family first.  The array is static; do not free it.
 */
const char *const *parity_impls (void);

/* Select the implementation called NAME for all later operations.  NAME is
 * a name from parity_impls() or a family name ("avx2") standing for that
 * family's preferred unroll.  Returns 0, or -1 with errno ENOENT (no such
 * implementation was built) or ENOTSUP (built, but this CPU cannot run it).
 */
int parity_use (const char *name);

/* The name of the implementation in use. */
const char *parity_name (void);

/* dest ^= srcs[0] ^ srcs[1] ^ ... ^ srcs[src_cnt-1].  1 <= src_cnt <= 128. */
void parity_xor_gen (void *dest, void **srcs, unsigned int src_cnt,
                     size_t bytes);

/* Compute P into ptrs[disks-2] and Q into ptrs[disks-1] from the data in
 * ptrs[0 .. disks-3].
 */
void parity_gen_syndrome (int disks, size_t bytes, void **ptrs);

/* P ^= D_start ^ ... ^ D_stop and Q ^= g^start D_start ^ ... ^ g^stop D_stop
 * for 0 <= start <= stop <= disks-3.  Calling it before and after replacing
 * D_start..D_stop is md's read-modify-write: the first call takes the old
 * data out of P and Q, the second puts the new data in.  P and Q are written
 * with normal stores so they stay in cache between the two calls.
 */
void parity_xor_syndrome (int disks, int start, int stop, size_t bytes,
                          void **ptrs);

/* Rebuild data disks faila < failb from the other data, P and Q.  The
 * contents of ptrs[faila] and ptrs[failb] on entry are ignored; P and Q are
 * not modified.
 */
void parity_recov_2data (int disks, size_t bytes, int faila, int failb,
                         void **ptrs);

/* Rebuild data disk faila and P from the other data and Q.  The contents of
 * ptrs[faila] and P on entry are ignored; Q is not modified.
 */
void parity_recov_datap (int disks, size_t bytes, int faila, void **ptrs);

#ifdef __cplusplus
}
#endif

#endif /* PARITY_H */
