/* SPDX-License-Identifier: BSD-3-Clause */
/* patgen: a deterministic per-sector pattern that the guest and the host
 * compute alike, so either can write it and the other check it.
 *
 * Sector S (512 bytes, S = byte offset / 512 on the array) written with
 * seed SEED holds:
 *   bytes  0..7    "RAIDVM\0\0"
 *   bytes  8..15   S, little-endian 64-bit
 *   bytes 16..23   SEED, little-endian 64-bit
 *   bytes 24..511  61 splitmix64 outputs, little-endian, from the state
 *                  (SEED * 0x9E3779B97F4A7C15) ^ S
 * so any sector can be checked from (SEED, S) alone, and a sector that
 * landed at the wrong address says where it belonged.
 *
 * Usage:
 *   patgen SEED FIRST N FILE        write sectors FIRST..FIRST+N-1 into FILE
 *                                   (block device or file; pwrite at FIRST*512;
 *                                   fsync at the end)
 *   patgen -v SEED FIRST N FILE     verify them; exit 1 on a mismatch
 *   patgen -l LIST SIZE FILE        verify the first SIZE sectors of FILE
 *                                   against LIST: lines "SEED FIRST N" in
 *                                   write order, later lines win; every
 *                                   sector must be covered by some line
 *
 * Mismatches are printed (the first 20) with what the sector holds when it
 * is a pattern sector of some other address or seed.  Built static so the
 * same binary runs in the guest's initramfs and on the host.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BATCH 256                       /* sectors per I/O: 128 KiB */
#define MAXW 4096                       /* lines in a LIST */

static uint64_t
splitmix64 (uint64_t *x)
{
  uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static void
put64 (unsigned char *p, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char) (v >> (8 * i));
}

static uint64_t
get64 (const unsigned char *p)
{
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

static void
sector (uint64_t seed, uint64_t s, unsigned char *out)
{
  uint64_t x = (seed * 0x9E3779B97F4A7C15ULL) ^ s;
  memcpy (out, "RAIDVM\0\0", 8);
  put64 (out + 8, s);
  put64 (out + 16, seed);
  for (int i = 0; i < 61; i++)
    put64 (out + 24 + 8 * i, splitmix64 (&x));
}

static uint64_t nbad;

static void
report (uint64_t s, uint64_t seed, const unsigned char *got)
{
  if (nbad++ >= 20)
    return;
  if (memcmp (got, "RAIDVM\0\0", 8) == 0)
    printf ("MISMATCH sector %" PRIu64 " (want seed %" PRIu64
            "): holds pattern sector %" PRIu64 " seed %" PRIu64 "\n",
            s, seed, get64 (got + 8), get64 (got + 16));
  else {
    int zero = 1;
    for (int i = 0; i < 512; i++)
      if (got[i]) { zero = 0; break; }
    printf ("MISMATCH sector %" PRIu64 " (want seed %" PRIu64 "): %s\n",
            s, seed, zero ? "all zero" : "not a pattern sector");
  }
}

static int
usage (void)
{
  fprintf (stderr,
           "usage: patgen SEED FIRST N FILE\n"
           "       patgen -v SEED FIRST N FILE\n"
           "       patgen -l LIST SIZE FILE\n");
  return 2;
}

static unsigned char buf[BATCH * 512], want[BATCH * 512];

static int
xpread (int fd, unsigned char *p, size_t len, off_t off)
{
  while (len) {
    ssize_t r = pread (fd, p, len, off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      fprintf (stderr, "patgen: read at byte %lld: %s\n", (long long) off,
               r < 0 ? strerror (errno) : "end of file");
      return -1;
    }
    p += r; len -= r; off += r;
  }
  return 0;
}

int
main (int argc, char **argv)
{
  char mode = 'w';
  if (argc > 1 && argv[1][0] == '-' && argv[1][1] && !argv[1][2]) {
    mode = argv[1][1];
    argv++; argc--;
  }
  if ((mode == 'w' || mode == 'v') ? argc != 5 : mode == 'l' ? argc != 4 : 1)
    return usage ();

  /* The writes to check against: one line for -v, a LIST for -l. */
  static uint64_t ws[MAXW], wf[MAXW], wn[MAXW];
  int nw = 0;
  uint64_t first, n;
  if (mode == 'l') {
    FILE *fp = fopen (argv[1], "r");
    if (!fp) { perror (argv[1]); return 2; }
    while (nw < MAXW &&
           fscanf (fp, "%" SCNu64 " %" SCNu64 " %" SCNu64,
                   &ws[nw], &wf[nw], &wn[nw]) == 3)
      nw++;
    fclose (fp);
    first = 0;
    n = strtoull (argv[2], NULL, 0);
  }
  else {
    ws[0] = strtoull (argv[1], NULL, 0);
    wf[0] = first = strtoull (argv[2], NULL, 0);
    wn[0] = n = strtoull (argv[3], NULL, 0);
    nw = 1;
  }
  const char *file = argv[mode == 'l' ? 3 : 4];

  int fd = open (file, mode == 'w' ? O_WRONLY | O_CREAT : O_RDONLY, 0644);
  if (fd < 0) { perror (file); return 2; }

  for (uint64_t done = 0; done < n; ) {
    uint64_t k = n - done < BATCH ? n - done : BATCH;
    uint64_t s0 = first + done;
    uint64_t seeds[BATCH];
    for (uint64_t i = 0; i < k; i++) {
      int owner = -1;
      for (int w = nw - 1; w >= 0; w--)
        if (s0 + i >= wf[w] && s0 + i < wf[w] + wn[w]) { owner = w; break; }
      if (owner < 0) {
        fprintf (stderr, "patgen: sector %" PRIu64 " is in no write of the list\n",
                 s0 + i);
        return 2;
      }
      seeds[i] = ws[owner];
      sector (seeds[i], s0 + i, want + 512 * i);
    }
    size_t len = k * 512;
    if (mode == 'w') {
      size_t off = 0;
      while (off < len) {
        ssize_t r = pwrite (fd, want + off, len - off, (off_t) (s0 * 512 + off));
        if (r < 0 && errno == EINTR)
          continue;
        if (r <= 0) { perror ("patgen: pwrite"); return 2; }
        off += r;
      }
    }
    else {
      if (xpread (fd, buf, len, (off_t) s0 * 512) < 0)
        return 2;
      for (uint64_t i = 0; i < k; i++)
        if (memcmp (buf + 512 * i, want + 512 * i, 512))
          report (s0 + i, seeds[i], buf + 512 * i);
    }
    done += k;
  }
  if (mode == 'w') {
    if (fsync (fd) != 0) { perror ("patgen: fsync"); return 2; }
    close (fd);
    return 0;
  }
  close (fd);
  printf ("patgen: %s: sectors %" PRIu64 "..%" PRIu64 " checked, %" PRIu64 " bad\n",
          file, first, first + n - 1, nbad);
  return nbad ? 1 : 0;
}
