/* SPDX-License-Identifier: BSD-3-Clause */
/* Exclusive claims: a disk the file backend opens (a local file or a
 * block device) belongs to this array for as long as a member holds it,
 * and a second array or any other process that asks the same way is
 * refused.  md does the same with its disks (it claims each one
 * exclusively for the array), and for the same reason: two arrays on
 * one set of disks each keep their own stripe cache and write parity
 * computed from what they last read, so each overwrites the other's
 * parity with stale parity, and the first failure then reconstructs
 * garbage in place of acknowledged writes.
 *
 *   disk             claim                         what it keeps away
 *   block device     a second open with O_EXCL     another O_EXCL open
 *                    (the kernel's exclusive        (an array, mdadm, a
 *                    holder, as md takes)           mount, device-mapper)
 *   regular file     an OFD write lock over the     any other OFD or
 *                    whole file (fcntl              POSIX lock on it:
 *                    F_OFD_SETLK, F_WRLCK)          another array, qemu
 *   loop device      both of the above: O_EXCL on   an array on the file
 *                    the device, the lock on its    while ours runs on the
 *                    backing file                   device, and the reverse
 *
 * Why these.  O_EXCL on a block device is the kernel's own claim: a
 * second exclusive open fails with EBUSY, and so does a mount.  A plain
 * file has no such thing, and an advisory lock is the only claim there
 * is: it keeps away whoever asks (every array, and qemu, which takes OFD
 * locks on its images), not a process that writes without asking.  OFD
 * locks rather than POSIX ones: a POSIX lock belongs to a process and
 * lapses when that process closes any descriptor of the file, and is not
 * inherited by nbdkit's child when it goes to the background; an OFD
 * lock belongs to the open file description, so it holds across the
 * fork and for as long as our descriptor is open.  flock(2) would do
 * for arrays but does not meet qemu's fcntl locks.  A lock is on the
 * inode, so it holds for every path to it: the same path, a symlink, a
 * hard link, /proc/PID/fd.  A loop device is a second path to its backing
 * file that no lock on the file sees, hence the loop rule:
 * LOOP_GET_STATUS64 says which inode backs it (lo_device, lo_inode),
 * /sys/dev/block/M:m/loop/backing_file a path to open, and the file
 * opened must be that inode before it is locked.  (Partitions of a loop
 * device are not followed to the file.)
 *
 * Read-only arrays claim exclusively too, as md claims the disks of a
 * read-only array: a read-only array reads parity and data as one
 * consistent set, and a writer beside it (a read-write array on the
 * same disks) would change them under its cache.  The write lock needs
 * a descriptor open for writing, so the claim opens its own, which is
 * never written through (the member's descriptor stays O_RDONLY, so the
 * kernel still keeps the array's writes off).  A file that cannot be
 * opened for writing (a read-only file system, no write permission)
 * takes a read lock instead: it still keeps every read-write array away,
 * and two read-only arrays on a file no one of them can write cannot
 * harm each other.
 *
 * Each claim has a descriptor of its own (the disk opened again through
 * /proc/self/fd, so that it is the same inode, not a path looked up
 * again), so that it outlives the member that took it while another
 * member of this process shares it: a re-add opens the failed member's
 * disk again while the failed member is still open, and a replacement
 * may be the failed member's own disk.  Claims are counted per disk in
 * a registry of this process, and a disk this process holds is shared,
 * never refused: whether one array may hold one disk twice (it may not:
 * member_same) or take back its own is the member table's and
 * admission's question, not the claim's.  The last release closes the
 * descriptor, which ends the claim (a replaced member once it leaves
 * limbo, every member at unload).
 *
 * A file system that does not lock (ENOLCK, EINVAL: some network or
 * FUSE file systems) leaves the file unclaimed, said in the debug log:
 * refusing would stop arrays that worked.  Remote members (NBD) are
 * not claimed at all: NBD has no way to lock an export, and what keeps a
 * second head off them is fencing (docs/failover.md).
 *
 * Locking: claims_lock guards the registry and every claim's count; it
 * is a leaf (lock.h).
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <linux/major.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "lock.h"
#include "member_file_claim.h"

/* A loop device over a loop device over ...: followed this deep. */
#define MAX_LOOP_DEPTH 4

struct file_claim {
  struct file_claim *next;      /* the registry */
  unsigned refs;
  bool blk;
  dev_t dev;                    /* st_rdev for a block device, else st_dev */
  ino_t ino;                    /* 0 for a block device */
  int fd;                       /* the claim's own descriptor, or -1 */
  struct file_claim *backing;   /* a loop device's backing file, or NULL */
};

static pthread_mutex_t claims_lock = PTHREAD_MUTEX_INITIALIZER;
static struct file_claim *claims;

/* The disk open as fd, opened again with flags: through /proc/self/fd,
 * so that it is the same inode whatever happened to the path since.
 */
static int
reopen (int fd, int flags)
{
  char proc[64];

  snprintf (proc, sizeof proc, "/proc/self/fd/%d", fd);
  return open (proc, flags | O_CLOEXEC);
}

/* Who holds the lock that refused ours, for the message. */
static void
describe_holder (int fd, char *buf, size_t n)
{
  struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

  if (fcntl (fd, F_OFD_GETLK, &fl) == -1 || fl.l_type == F_UNLCK)
    snprintf (buf, n, "it was locked");
  else if (fl.l_pid > 0)
    snprintf (buf, n, "process %d holds a lock on it", (int) fl.l_pid);
  else
    snprintf (buf, n, "an open file description lock is held on it, which "
              "does not name its process (another nbdkit raid, or qemu)");
}

/* The OFD lock on a regular file; the claim's descriptor is c->fd. */
static int
lock_file (struct file_claim *c, int fd, const char *name, const char *via)
{
  struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
  char holder[192];

  c->fd = reopen (fd, O_RDWR);
  if (c->fd == -1 &&
      (errno == EACCES || errno == EROFS || errno == EPERM ||
       errno == ETXTBSY)) {
    c->fd = reopen (fd, O_RDONLY);  /* see the top: a read lock */
    fl.l_type = F_RDLCK;
  }
  if (c->fd == -1) {
    nbdkit_error ("member %s: opening %s again to claim it: %m", name,
                  via ? via : "it");
    return -1;
  }
  if (fcntl (c->fd, F_OFD_SETLK, &fl) == 0)
    return 0;
  if (errno != EAGAIN && errno != EACCES) {
    nbdkit_debug ("member %s: %s%s cannot be locked (%m): it is not claimed",
                  name, via ? "its loop device's backing file " : "",
                  via ? via : "the file");
    return 0;
  }
  describe_holder (c->fd, holder, sizeof holder);
  if (via)
    nbdkit_error ("member %s: in use by another array or process: it is a "
                  "loop device over %s, and %s", name, via, holder);
  else
    nbdkit_error ("member %s: in use by another array or process: %s",
                  name, holder);
  errno = EBUSY;
  return -1;
}

/* The kernel's exclusive claim on a block device. */
static int
claim_block (struct file_claim *c, int fd, const char *name,
             const char *via)
{
  c->fd = reopen (fd, O_RDONLY | O_EXCL);
  if (c->fd != -1)
    return 0;
  if (errno != EBUSY) {
    nbdkit_error ("member %s: opening %s again to claim it: %m", name,
                  via ? via : "it");
    return -1;
  }
  nbdkit_error ("member %s: in use by another array or process: the kernel "
                "refuses to open %s exclusively (mounted, part of an md or "
                "device-mapper device, or another array's member)", name,
                via ? via : "it");
  errno = EBUSY;
  return -1;
}

static struct file_claim *take_locked (const char *name, int fd,
                                       const struct stat *st,
                                       const char *via, int depth);

/* A loop device's backing file, claimed as c->backing (see the top).
 * -1 only when the file is held elsewhere, or for a shortage; a backing
 * file this process cannot find is said in the debug log and left.
 */
static int
claim_backing (struct file_claim *c, const char *name, int depth)
{
  /* Zeroed although the kernel fills it: valgrind does not know
   * LOOP_GET_STATUS64 and would take the kernel's bytes as undefined. */
  struct loop_info64 info = { 0 };
  char sys[96], path[4096];
  struct stat st;
  FILE *f;
  int bfd;
  bool same;

  if (major (c->dev) != LOOP_MAJOR || depth >= MAX_LOOP_DEPTH)
    return 0;
  if (ioctl (c->fd, LOOP_GET_STATUS64, &info) == -1)
    return 0;                   /* ENXIO: no file behind it now */
  snprintf (sys, sizeof sys, "/sys/dev/block/%u:%u/loop/backing_file",
            major (c->dev), minor (c->dev));
  f = fopen (sys, "re");
  if (f == NULL || fgets (path, sizeof path, f) == NULL) {
    nbdkit_debug ("member %s: %s: %m: its backing file is not claimed",
                  name, sys);
    if (f)
      fclose (f);
    return 0;
  }
  fclose (f);
  path[strcspn (path, "\n")] = '\0';
  bfd = open (path, O_RDONLY | O_CLOEXEC);
  /* lo_device is the kernel's encoding of a dev_t (new_encode_dev). */
  same = bfd != -1 && fstat (bfd, &st) == 0 &&
    major (st.st_dev) == ((info.lo_device & 0xfff00) >> 8) &&
    minor (st.st_dev) == ((info.lo_device & 0xff) |
                          ((info.lo_device >> 12) & 0xfff00)) &&
    st.st_ino == info.lo_inode;
  if (!same) {
    nbdkit_debug ("member %s: loop device over %s, which this process "
                  "cannot open as that file: its backing file is not "
                  "claimed", name, path);
    if (bfd != -1)
      close (bfd);
    return 0;
  }
  c->backing = take_locked (name, bfd, &st, path, depth + 1);
  close (bfd);
  return c->backing ? 0 : -1;
}

static struct file_claim *
take_locked (const char *name, int fd, const struct stat *st,
             const char *via, int depth)
{
  bool blk = S_ISBLK (st->st_mode);
  dev_t dev = blk ? st->st_rdev : st->st_dev;
  ino_t ino = blk ? 0 : st->st_ino;
  struct file_claim *c;

  for (c = claims; c; c = c->next)
    if (c->blk == blk && c->dev == dev && c->ino == ino) {
      c->refs++;
      return c;
    }
  if ((c = calloc (1, sizeof *c)) == NULL) {
    nbdkit_error ("calloc: %m");
    return NULL;
  }
  c->refs = 1;
  c->blk = blk;
  c->dev = dev;
  c->ino = ino;
  c->fd = -1;
  if ((blk ? claim_block (c, fd, name, via) : lock_file (c, fd, name, via))
      == -1 ||
      (blk && claim_backing (c, name, depth) == -1)) {
    int err = errno;

    c->next = NULL;
    c->refs = 0;
    if (c->fd != -1)
      close (c->fd);
    free (c);
    errno = err;
    return NULL;
  }
  c->next = claims;
  claims = c;
  return c;
}

struct file_claim *
file_claim_take (const char *name, int fd, const struct stat *st)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&claims_lock);

  return take_locked (name, fd, st, NULL, 0);
}

static void
release_locked (struct file_claim *c)
{
  struct file_claim **p;

  if (c == NULL || --c->refs > 0)
    return;
  for (p = &claims; *p != c; p = &(*p)->next)
    ;
  *p = c->next;
  if (c->fd != -1)
    close (c->fd);              /* the lock, or the exclusive hold, ends */
  release_locked (c->backing);
  free (c);
}

void
file_claim_release (struct file_claim *c)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&claims_lock);

  release_locked (c);
}

bool
file_claim_overlap (const struct file_claim *a, const struct file_claim *b)
{
  /* One disk is one claim in this process (shared), so pointers say it. */
  return a == b || a->backing == b || b->backing == a ||
    (a->backing && a->backing == b->backing);
}
