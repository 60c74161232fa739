/* SPDX-License-Identifier: BSD-3-Clause */
/* Checking a stripe against its parity, and locating a single bad block.
 *
 * The mathematics.  Let P(data) and Q(data) be the parity that the data
 * blocks as stored give, and dP = P ^ P(data), dQ = Q ^ Q(data) the
 * differences from the stored parity (generic.c defines P and Q).  Both
 * are zero when the stripe is consistent.  If exactly one block is wrong:
 *
 *   P wrong by e:        dP = e,  dQ = 0
 *   Q wrong by e:        dP = 0,  dQ = e
 *   data block z by e:   dP = e,  dQ = g^z e    (P and Q are linear)
 *
 * so which of dP and dQ is nonzero tells P, Q and data apart, and for data
 * every byte j where the error e_j is not zero gives
 *   z = log_g dQ_j - log_g dP_j  (mod 255),
 * the same z on every such byte; where e_j is zero both differences are.
 * A byte with one difference zero and the other not, a z that changes
 * from byte to byte, or a z beyond the last data disk, is no single bad
 * block.  g^z differs for every z < 255 and a stripe has at most 254 data
 * disks, so a single bad block is always located, and located uniquely.
 * Several bad blocks are reported as none, unless their differences
 * happen to have one ratio dQ_j / dP_j = g^z on every differing byte: the
 * most probable explanation is taken, as mdadm's raid6check takes it.
 * (snapraid's raid_scan
 * reaches the same answer for any number of parities by trying every set
 * of failed blocks and validating each with a spare parity; with two
 * parities and one failure the closed form above is one pass.)
 *
 * How.  The implementation in use (dispatch.c) computes P(data) and
 * Q(data) into scratch with its gen_syndrome, so every implementation's
 * kernels do the work and a check exercises them.  memcmp, vectorised in
 * libc, compares them with the stored P and Q; only when one differs does
 * the implementation's xor_gen turn that half of scratch into the
 * difference, and only when both differ is the scalar locate loop run,
 * with gf.c's log table.  It runs on mismatches only, which a healthy
 * array does not have, so it is written to be obviously right rather than
 * fast.  The caller chooses the unit of judgement by the size of a call;
 * the plugin's scrub calls once per 4 KiB page, md's unit.
 *
 * No state, no locks: thread safe as every other operation.
 */

#include <config.h>

#include <string.h>

#include "parity.h"
#include "internal.h"

/* The data block whose error explains dP and dQ on every byte, or -1. */
static int
locate_data (const uint8_t *dp, const uint8_t *dq, size_t bytes, int ndata)
{
  int z = -1;

  for (size_t j = 0; j < bytes; j++) {
    int zj;

    if ((dp[j] == 0) != (dq[j] == 0))
      return -1;
    if (dp[j] == 0)
      continue;
    zj = (parity_gf_log[dq[j]] - parity_gf_log[dp[j]] + 255) % 255;
    if (z == -1) {
      if (zj >= ndata)
        return -1;
      z = zj;
    }
    else if (zj != z)
      return -1;
  }
  return z;
}

/* Turn fresh (the data's parity) into stored ^ fresh, if they differ. */
static bool
differs (const struct parity_impl *impl, uint8_t *fresh, void *stored,
         size_t bytes)
{
  if (memcmp (fresh, stored, bytes) == 0)
    return false;
  impl->xor_gen (fresh, &stored, 1, bytes);
  return true;
}

int
parity_check (int disks, size_t bytes, void **ptrs, void *scratch,
              struct parity_check_result *res)
{
  const struct parity_impl *impl = parity_current ();
  uint8_t *dp = scratch, *dq = dp + bytes;
  void *v[256];

  memcpy (v, ptrs, (disks - 2) * sizeof v[0]);
  v[disks - 2] = dp;
  v[disks - 1] = dq;
  impl->gen_syndrome (disks, bytes, v);

  res->p_differs = differs (impl, dp, ptrs[disks - 2], bytes);
  res->q_differs = differs (impl, dq, ptrs[disks - 1], bytes);
  if (res->p_differs && res->q_differs)
    res->bad = locate_data (dp, dq, bytes, disks - 2);
  else if (res->p_differs)
    res->bad = disks - 2;
  else if (res->q_differs)
    res->bad = disks - 1;
  else
    res->bad = -1;
  return res->p_differs || res->q_differs;
}

int
parity_check_p (int disks, size_t bytes, void **ptrs, void *scratch,
                struct parity_check_result *res)
{
  const struct parity_impl *impl = parity_current ();

  memcpy (scratch, ptrs[0], bytes);
  if (disks > 2)
    impl->xor_gen (scratch, &ptrs[1], disks - 2, bytes);

  res->p_differs = differs (impl, scratch, ptrs[disks - 1], bytes);
  res->q_differs = false;
  res->bad = -1;
  return res->p_differs;
}
