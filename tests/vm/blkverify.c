/* SPDX-License-Identifier: BSD-3-Clause */
/* blkverify: fio's "verify=crc32c" for the guest, which has no fio.
 *
 * Debian's fio links the Ceph, GlusterFS, RDMA and PMEM client libraries
 * (80 MB of them with their own dependencies) and is bound at load time
 * (BIND_NOW), so it cannot go into the guest's initramfs without them.
 * This does what the tests need of it: JOBS threads, each pinned to a CPU
 * (so that, with the kernel's NBD client, each submits through its own
 * blk-mq queue and so its own connection), write the blocks of a device
 * in a random order with O_DIRECT, then read every block back and check
 * it, as fio's verify does:
 *
 *   block b (BS bytes at b * BS), written by job b % JOBS:
 *     bytes 0..7    "BLKVRFY\0"
 *     bytes 8..15   b, little-endian
 *     bytes 16..23  SEED
 *     bytes 24..27  crc32c (Castagnoli) of bytes 28..BS-1
 *     bytes 28..    splitmix64 of (SEED, b): the block's own data
 *
 * A block that reads back with a bad checksum, another block's number or
 * another seed (a lost, misplaced or stale write) is a mismatch.
 *
 * Usage: blkverify write|verify DEVICE BLOCKS BS JOBS SEED
 * Exit status 0, 1 on a mismatch, 2 on an I/O error.  Built static.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t blocks, bs, seed;
static int jobs, writing;
static const char *dev;
static _Atomic uint64_t bad, ioerr;

static uint32_t crc_table[256];

static void
crc_init (void)
{
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = c & 1 ? (c >> 1) ^ 0x82F63B78 : c >> 1;
    crc_table[i] = c;
  }
}

static uint32_t
crc32c (const unsigned char *p, size_t n)
{
  uint32_t c = 0xFFFFFFFF;
  while (n--)
    c = crc_table[(c ^ *p++) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFF;
}

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
fill (unsigned char *p, uint64_t b)
{
  uint64_t x = (seed * 0x9E3779B97F4A7C15ULL) ^ b;
  uint32_t c;

  memcpy (p, "BLKVRFY\0", 8);
  put64 (p + 8, b);
  put64 (p + 16, seed);
  for (uint64_t i = 28; i < bs; i += 8) {
    unsigned char w[8];
    put64 (w, splitmix64 (&x));
    memcpy (p + i, w, bs - i < 8 ? bs - i : 8);
  }
  c = crc32c (p + 28, bs - 28);
  memcpy (p + 24, &c, 4);
}

static void *
job (void *arg)
{
  int j = (int) (intptr_t) arg;
  long ncpu = sysconf (_SC_NPROCESSORS_ONLN);
  long cpu = j % (ncpu > 0 ? ncpu : 1);
  cpu_set_t set;
  unsigned char *buf, *want;
  uint64_t mine = (blocks - j + jobs - 1) / jobs, x = seed ^ (j + 1);
  uint64_t *order = malloc (mine * sizeof *order);
  int fd;

  CPU_ZERO (&set);
  CPU_SET (cpu, &set);
  if (sched_setaffinity (0, sizeof set, &set) != 0)
    fprintf (stderr, "blkverify: job %d: not pinned to CPU %ld: %s\n", j,
             cpu, strerror (errno));
  if (order == NULL || posix_memalign ((void **) &buf, 4096, bs) ||
      posix_memalign ((void **) &want, 4096, bs)) {
    perror ("blkverify: memory");
    exit (2);
  }
  fd = open (dev, (writing ? O_WRONLY : O_RDONLY) | O_DIRECT);
  if (fd < 0) {
    perror (dev);
    exit (2);
  }
  for (uint64_t i = 0; i < mine; i++)
    order[i] = j + i * jobs;
  for (uint64_t i = mine; i > 1; i--) {     /* a random order */
    uint64_t k = splitmix64 (&x) % i, t = order[i - 1];
    order[i - 1] = order[k];
    order[k] = t;
  }
  for (uint64_t i = 0; i < mine; i++) {
    uint64_t b = order[i];
    ssize_t r;

    fill (want, b);
    if (writing)
      r = pwrite (fd, want, bs, (off_t) (b * bs));
    else
      r = pread (fd, buf, bs, (off_t) (b * bs));
    if (r != (ssize_t) bs) {
      fprintf (stderr, "blkverify: job %d: %s block %" PRIu64 ": %s\n", j,
               writing ? "write" : "read", b, r < 0 ? strerror (errno)
               : "short");
      ioerr++;
      continue;
    }
    if (!writing && memcmp (buf, want, bs) != 0 && bad++ < 20) {
      uint32_t c;
      memcpy (&c, buf + 24, 4);
      if (memcmp (buf, "BLKVRFY\0", 8) != 0)
        printf ("MISMATCH block %" PRIu64 ": not a blkverify block\n", b);
      else
        printf ("MISMATCH block %" PRIu64 ": holds block %" PRIu64
                " seed %" PRIu64 ", crc32c %s\n", b, get64 (buf + 8),
                get64 (buf + 16), c == crc32c (buf + 28, bs - 28)
                ? "good" : "BAD");
    }
  }
  printf ("blkverify: job %d %s on CPU %d\n", j,
          writing ? "wrote" : "read", sched_getcpu ());
  if (writing && fdatasync (fd) != 0) {
    perror ("blkverify: fdatasync");
    ioerr++;
  }
  close (fd);
  free (order);
  free (buf);
  free (want);
  return NULL;
}

int
main (int argc, char **argv)
{
  pthread_t t[64];

  if (argc != 7 || (strcmp (argv[1], "write") && strcmp (argv[1], "verify"))) {
    fprintf (stderr, "usage: blkverify write|verify DEVICE BLOCKS BS JOBS SEED\n");
    return 2;
  }
  writing = strcmp (argv[1], "write") == 0;
  dev = argv[2];
  blocks = strtoull (argv[3], NULL, 0);
  bs = strtoull (argv[4], NULL, 0);
  jobs = atoi (argv[5]);
  seed = strtoull (argv[6], NULL, 0);
  if (jobs < 1 || jobs > 64 || bs < 512 || bs % 512 || blocks < (uint64_t) jobs) {
    fprintf (stderr, "blkverify: bad arguments\n");
    return 2;
  }
  crc_init ();
  for (int j = 0; j < jobs; j++)
    pthread_create (&t[j], NULL, job, (void *) (intptr_t) j);
  for (int j = 0; j < jobs; j++)
    pthread_join (t[j], NULL);
  printf ("blkverify: %s %s: %" PRIu64 " blocks of %" PRIu64 " bytes, %d jobs"
          ", %" PRIu64 " I/O errors, %" PRIu64 " mismatches\n", argv[1], dev,
          blocks, bs, jobs, (uint64_t) ioerr, (uint64_t) bad);
  return ioerr ? 2 : bad ? 1 : 0;
}
