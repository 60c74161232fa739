/* SPDX-License-Identifier: BSD-3-Clause */
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
 * Contract, for every function below (parity_check_p counts disks as RAID-5
 * does, see there):
 *   - every buffer the call writes (P and Q, xor_gen's dest, the blocks a
 *     recovery rebuilds, scratch) is 64-byte aligned; a buffer it only
 *     reads may be at any address (the plugin computes parity straight
 *     from its client's buffer, which nbdkit does not align);
 *   - bytes is a nonzero multiple of 64;
 *   - buffers do not overlap (the same pointer twice is an overlap);
 *   - 4 <= disks <= 256, where "disks" counts data disks plus P and Q:
 *     ptrs[0 .. disks-3] are data, ptrs[disks-2] is P, ptrs[disks-1] is Q.
 * Breaking the contract is undefined behaviour; nothing is checked on the
 * fast path.
 *
 * All functions are thread safe.  The implementation in use is chosen at
 * first use, the first call of any function below but parity_set_log: the
 * best for this CPU, or the one named by the environment variable
 * PARITY_IMPL.  It can be changed with parity_use(); changing it while
 * other threads compute is allowed, each call uses one implementation from
 * start to end.
 *
 * Every implementation but generic passes a self-test before it is used: a
 * small fixed input, every operation, compared with generic's results.
 * One that fails is never used; at first use generic is used instead.
 * Either is reported once, through the function given to parity_set_log()
 * or else on stderr.  The test costs tens of microseconds, once per
 * implementation per process.
 */

#ifndef PARITY_H
#define PARITY_H

#include <stdbool.h>
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
 * implementation was built), ENOTSUP (built, but this CPU cannot run it) or
 * EIO (it failed its self-test: it computes other results than generic on
 * this machine, which means a miscompiled kernel or a CPU or emulator that
 * executes its instructions wrongly); the implementation in use is then
 * unchanged.
 */
int parity_use (const char *name);

/* Where libparity reports what it did not do as asked: an implementation
 * that failed its self-test, a PARITY_IMPL it could not use.  LOG is called
 * with one line, without a newline and without a "libparity: " prefix, from
 * whichever thread made the call that found the problem; it must not call
 * libparity (a report at first use would wait for itself).  NULL, the
 * default, writes "libparity: LINE" to stderr.  Set it before the first
 * call of any other function here, or a report made at first use goes to
 * stderr.
 */
void parity_set_log (void (*log) (const char *msg));

/* The name of the implementation in use. */
const char *parity_name (void);

/* dest ^= srcs[0] ^ srcs[1] ^ ... ^ srcs[src_cnt-1].  1 <= src_cnt <= 255:
 * a RAID-5 of 256 members computes P from 255 data chunks in one call.
 */
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

/* What parity_check and parity_check_p found; see parity_check. */
struct parity_check_result {
  bool p_differs;       /* the stored P is not the P of the data */
  bool q_differs;       /* the stored Q is not the Q of the data */
  int bad;              /* the one block that explains every difference, as
                           an index into ptrs, or -1 */
};

/* Check a RAID-6 stripe: whether P and Q agree with the data, and if not,
 * whether exactly one block (one data block, P or Q) explains the
 * difference.  check.c explains the mathematics.
 *
 * disks, bytes and ptrs[] as for parity_gen_syndrome; no block is
 * modified.  scratch: 2 * bytes bytes, 64-byte aligned, overlapping no
 * block.  Returns 0 when P and Q both agree with the data (res->p_differs
 * and res->q_differs false, res->bad -1), else 1, with res saying:
 *
 *   p_differs   P != P(data), where P(data) is the P of ptrs[0..disks-3];
 *   q_differs   Q != Q(data);
 *   bad         disks-2: P alone is wrong (P differs, Q agrees);
 *               disks-1: Q alone is wrong (Q differs, P agrees);
 *               z, 0 <= z <= disks-3: data block z alone is wrong, that is,
 *                 P and Q both differ, and replacing ptrs[z] by
 *                 ptrs[z] ^ (P ^ P(data)) makes both agree, on every byte;
 *               -1: no single block explains every difference.
 *
 * When p_differs, scratch[0, bytes) holds P ^ P(data); when q_differs,
 * scratch[bytes, 2 * bytes) holds Q ^ Q(data); a half that agrees is left
 * unspecified.  Repairing the block that bad names is then XORing a
 * difference into it: P ^= scratch, Q ^= scratch + bytes, data block z
 * ^= scratch (parity_xor_gen with one source).
 *
 * One call judges its whole buffer: a data block is located only if the
 * same block explains every differing byte of [0, bytes).  To count and
 * locate per page, as md's check counts mismatch_cnt in 4 KiB pages, call
 * it once per page.  Two or more wrong blocks give bad = -1 unless their
 * differences happen to look like one block's, which needs the same ratio
 * Q ^ Q(data) : P ^ P(data) on every differing byte (about one chance in
 * 255 per differing byte after the first): damage confined to one byte
 * cannot be told from a single bad block.
 */
int parity_check (int disks, size_t bytes, void **ptrs, void *scratch,
                  struct parity_check_result *res);

/* Check a RAID-5 stripe: whether P agrees with the data.  Here disks
 * counts data disks plus P, 2 <= disks <= 256: ptrs[0 .. disks-2] are
 * data, ptrs[disks-1] is P; bytes and alignment as everywhere.  No block
 * is modified.  scratch: bytes bytes, 64-byte aligned, overlapping no
 * block.  Returns 0 when P agrees, else 1, with res->p_differs true and
 * scratch holding P ^ P(data).  res->q_differs is always false, and
 * res->bad always -1: with one parity any block could be the wrong one.
 */
int parity_check_p (int disks, size_t bytes, void **ptrs, void *scratch,
                    struct parity_check_result *res);

#ifdef __cplusplus
}
#endif

#endif /* PARITY_H */
