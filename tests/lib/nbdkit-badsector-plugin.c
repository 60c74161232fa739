/* SPDX-License-Identifier: BSD-3-Clause */
/* nbdkit-badsector-plugin: a test backend, a file served over NBD whose
 * listed sectors fail as a disk's unreadable sectors do.
 *
 *   nbdkit .../nbdkit-badsector-plugin.so file=FILE
 *          [ranges=RANGES] [healed=HEALED]
 *
 * Why a plugin of our own.  Real disks rarely die whole: they grow
 * sectors that cannot be read until they are written (the disk then
 * remaps them), and, more rarely, sectors that cannot be written either.
 * nbdkit's error filter fails whole operations by rate or by a trigger
 * file, not one sector range, and it has no notion of a write that
 * mends what it covers; a mock inside the raid plugin would test the
 * raid plugin against its own idea of a disk.  This plugin answers real
 * NBD requests over a real socket, so the raid plugin's NBD backend, its
 * failure policy and whatever corrects read errors meet the same replies
 * a disk behind nbdkit's file plugin would give.
 *
 * The ranges file (ranges=, optional; absent means no bad sector) holds
 * one fault a line, in 512-byte sectors:
 *
 *   START LENGTH [read|write|both]      # a comment
 *
 *   read   (the default) a read that touches one of its sectors fails
 *          with EIO and reads nothing, the whole request, as a disk's
 *          does; a write, zero or trim that covers a sector whole mends
 *          it (the disk remaps it): from then on it reads what was
 *          written, and the sectors mended are appended to the healed
 *          file as "START LENGTH LINE" lines (LINE: the fault's), so
 *          that a test can tell which sectors were rewritten.  A write
 *          that covers a bad sector only in part fails with EIO: the
 *          disk would have to read it.
 *   write  a write, zero or trim that touches one of its sectors fails
 *          with EIO and writes nothing; reads succeed.  Never mended.
 *   both   reads and writes fail.  Never mended.
 *
 * Changing faults at run time.  The file is read on every request (an
 * open, fstat, read and close of a file of a few lines: 3.8-4.8 us on
 * this project's 2-core test machine, ext4, against a 40-90 us round
 * trip of a 512-byte read through libnbd there) and parsed again when
 * its text changed.  Why not only
 * when its inode, size or modification time change: file times move by
 * the kernel's tick, and a freed inode number is reused, so two versions
 * written in quick succession can look alike to stat.  A test writes a
 * new version beside it and renames it over the old one
 * (tests/lib/faults.py does), so that no request sees half a file.  A
 * line is a fault, known by its text: a line kept from one version to
 * the next keeps what was mended of it, a new line is a new fault (the
 * same range on a line with another comment goes bad again), a line
 * removed is gone.  A malformed file at start-up stops nbdkit; a version
 * met later that is malformed is reported once (nbdkit_error) and the
 * faults stay as they were.  A restart of the server keeps what was
 * mended, as a disk keeps its remapped sectors: the healed file names the
 * line of each span it lists, and at start-up each span is cut again
 * from the fault of that line, if it is still in the ranges file.
 *
 * Everything else is the file plugin's: the size is the file's, flush is
 * fdatasync, FUA a fdatasync after the write, trim punches a hole (a
 * file system that cannot punch makes it a no-op that mends nothing),
 * zero punches or zeroes the range, or writes zeroes.  Every connection
 * shares one descriptor, so multi-conn is safe.
 *
 * Locking.  Parallel thread model.  lock guards the fault list, the
 * ranges file's last version and appends to the healed file; I/O on the
 * file runs outside it.  A request's verdict is taken under the lock
 * before its I/O, and a write mends only after its I/O succeeded, so a
 * read that overlaps a write in flight may fail or return the old bytes,
 * as it may on a disk.
 *
 * Debug: every failed request, every mend and every version of the
 * ranges file read is logged with nbdkit_debug (nbdkit -v).
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "lock.h"

#define SECTOR 512

enum { BAD_READ = 1, BAD_WRITE = 2 };

/* Sectors [start, end). */
struct span {
  uint64_t start, end;
};

/* One line of the ranges file: what of it is still bad. */
struct fault {
  char *line;                   /* its text: its identity across versions */
  unsigned mode;                /* BAD_READ, BAD_WRITE or both */
  struct span *bad;             /* mending cuts these */
  size_t nbad;
};

static char *filename, *ranges_path, *healed_path;
static int fd = -1;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fault *faults;
static size_t nfaults;
static char *seen;              /* the ranges file's text last parsed */
static size_t seen_len;

static void
free_faults (struct fault *f, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    free (f[i].line);
    free (f[i].bad);
  }
  free (f);
}

/* A decimal number, all of tok. */
static bool
parse_u64 (const char *tok, uint64_t *v)
{
  char *end;

  if (tok[0] < '0' || tok[0] > '9')
    return false;
  errno = 0;
  *v = strtoull (tok, &end, 10);
  return errno == 0 && *end == '\0';
}

/* The line of ll bytes at p into f; false if it is malformed.  A blank
 * or comment line leaves f->line NULL.
 */
static bool
parse_line (const char *p, size_t ll, struct fault *f)
{
  char buf[256], *save, *tok[4];
  uint64_t start, len;
  int n = 0;

  memset (f, 0, sizeof *f);
  if (ll >= sizeof buf)
    return false;
  memcpy (buf, p, ll);
  buf[ll] = '\0';
  buf[strcspn (buf, "#")] = '\0';
  for (char *t = strtok_r (buf, " \t", &save); t;
       t = strtok_r (NULL, " \t", &save)) {
    if (n == 4)
      return false;
    tok[n++] = t;
  }
  if (n == 0)
    return true;
  if (n < 2 || n > 3 || !parse_u64 (tok[0], &start) ||
      !parse_u64 (tok[1], &len) || len == 0 || start + len < start)
    return false;
  if (n == 2 || strcmp (tok[2], "read") == 0)
    f->mode = BAD_READ;
  else if (strcmp (tok[2], "write") == 0)
    f->mode = BAD_WRITE;
  else if (strcmp (tok[2], "both") == 0)
    f->mode = BAD_READ | BAD_WRITE;
  else
    return false;
  f->line = strndup (p, ll);
  f->bad = malloc (sizeof *f->bad);
  if (f->line == NULL || f->bad == NULL) {
    free (f->line);
    free (f->bad);
    f->line = NULL;
    return false;
  }
  f->bad[0] = (struct span) { start, start + len };
  f->nbad = 1;
  return true;
}

/* The text of path (empty if there is none) in *text, malloc'd; -1
 * (reported) if it cannot be read.  A test replaces the ranges file
 * whole (a rename), so the one open sees one size.
 */
static int
slurp (const char *path, char **text, size_t *len)
{
  int rfd = open (path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  ssize_t r = 0;

  *text = NULL;
  *len = 0;
  if (rfd == -1) {
    if (errno == ENOENT)
      return 0;
    nbdkit_error ("%s: %m", path);
    return -1;
  }
  if (fstat (rfd, &st) == -1 || (*text = malloc (st.st_size + 1)) == NULL ||
      (r = read (rfd, *text, st.st_size)) == -1) {
    nbdkit_error ("%s: %m", path);
    free (*text);
    *text = NULL;
    close (rfd);
    return -1;
  }
  close (rfd);
  *len = r;
  return 0;
}

/* The faults of text, or -1 (reported) if a line is malformed. */
static int
parse_ranges (const char *text, size_t len, struct fault **out,
              size_t *nout)
{
  struct fault *v = NULL, f;
  size_t n = 0, lineno = 0;

  for (const char *p = text, *end = text + len; p < end; ) {
    const char *nl = memchr (p, '\n', end - p);
    size_t ll = nl ? (size_t) (nl - p) : (size_t) (end - p);

    lineno++;
    if (!parse_line (p, ll, &f)) {
      nbdkit_error ("%s:%zu: not START LENGTH [read|write|both]: %.*s",
                    ranges_path, lineno, (int) ll, p);
      goto fail;
    }
    p += ll + 1;
    if (f.line == NULL)
      continue;
    struct fault *nv = realloc (v, (n + 1) * sizeof *v);
    if (nv == NULL) {
      nbdkit_error ("realloc: %m");
      free (f.line);
      free (f.bad);
      goto fail;
    }
    v = nv;
    v[n++] = f;
  }
  *out = v;
  *nout = n;
  return 0;

 fail:
  free_faults (v, n);
  return -1;
}

/* Parse the ranges file again if its text changed; a line that stayed
 * keeps what was mended of it.  Called with lock held.
 */
static int
refresh_locked (void)
{
  struct fault *v;
  size_t n, len;
  char *text;

  if (ranges_path == NULL)
    return 0;
  if (slurp (ranges_path, &text, &len) == -1)
    return -1;
  if (len == seen_len && (len == 0 || memcmp (text, seen, len) == 0)) {
    free (text);
    return 0;
  }
  free (seen);
  seen = text;                  /* a bad version is reported once */
  seen_len = len;
  if (parse_ranges (text, len, &v, &n) == -1)
    return -1;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < nfaults; j++)
      if (faults[j].line && strcmp (faults[j].line, v[i].line) == 0) {
        free (v[i].bad);
        v[i].bad = faults[j].bad;
        v[i].nbad = faults[j].nbad;
        faults[j].bad = NULL;
        free (faults[j].line);
        faults[j].line = NULL;  /* taken: a duplicate line takes the next */
        break;
      }
  free_faults (faults, nfaults);
  faults = v;
  nfaults = n;
  nbdkit_debug ("%s: %zu fault(s)", ranges_path, n);
  return 0;
}

/* Does a fault with one of the bits of mode hold a bad sector in
 * [s0, s1)?  Called with lock held.
 */
static bool
bad_in_locked (unsigned mode, uint64_t s0, uint64_t s1,
               const struct fault **which)
{
  for (size_t i = 0; i < nfaults && s0 < s1; i++) {
    if ((faults[i].mode & mode) == 0)
      continue;
    for (size_t k = 0; k < faults[i].nbad; k++)
      if (faults[i].bad[k].start < s1 && s0 < faults[i].bad[k].end) {
        *which = &faults[i];
        return true;
      }
  }
  return false;
}

/* The verdict on a request, before its I/O: true if it must fail.
 * Sectors [t0, t1) are those it touches, [c0, c1) those it covers whole.
 * A ranges file that cannot be read leaves the faults as they were
 * (refresh_locked reported it).
 */
static bool
fails (bool write, uint32_t count, uint64_t offset)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&lock);
  uint64_t t0 = offset / SECTOR, t1 = (offset + count + SECTOR - 1) / SECTOR;
  uint64_t c0 = (offset + SECTOR - 1) / SECTOR, c1 = (offset + count) / SECTOR;
  const struct fault *f;
  bool bad;

  refresh_locked ();
  if (!write)
    bad = bad_in_locked (BAD_READ, t0, t1, &f);
  else
    bad = bad_in_locked (BAD_WRITE, t0, t1, &f) ||
      (c0 >= c1 ? bad_in_locked (BAD_READ, t0, t1, &f)
       : bad_in_locked (BAD_READ, t0, c0, &f) ||
         bad_in_locked (BAD_READ, c1, t1, &f));
  if (bad)
    nbdkit_debug ("%s of %" PRIu32 " bytes at %" PRIu64 " fails: \"%s\"",
                  write ? "write" : "read", count, offset, f->line);
  return bad;
}

/* Append one mended span of fault f to the healed file: "START LENGTH
 * LINE", LINE the fault's, so that a restart can mend it again.  Called
 * with lock held.
 */
static void
record_healed_locked (const struct fault *f, uint64_t start, uint64_t end)
{
  char *line;
  int n, hfd;

  nbdkit_debug ("healed: sectors %" PRIu64 "-%" PRIu64, start, end - 1);
  if (healed_path == NULL)
    return;
  n = asprintf (&line, "%" PRIu64 " %" PRIu64 " %s\n", start, end - start,
                f->line);
  if (n == -1) {
    nbdkit_error ("asprintf: %m");
    return;
  }
  hfd = open (healed_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (hfd == -1 || write (hfd, line, n) != n)
    nbdkit_error ("%s: %m", healed_path);
  if (hfd >= 0)
    close (hfd);
  free (line);
}

/* Cut sectors [a, b) out of what is bad of f, appending what was bad
 * there to the healed file if record.  Called with lock held.
 */
static void
mend_locked (struct fault *f, uint64_t a, uint64_t b, bool record)
{
  struct span *left = malloc ((f->nbad + 1) * sizeof *left);
  size_t n = 0;

  if (left == NULL) {
    nbdkit_error ("malloc: %m: sectors %" PRIu64 "-%" PRIu64
                  " are not marked healed", a, b - 1);
    return;
  }
  for (size_t k = 0; k < f->nbad; k++) {
    struct span s = f->bad[k];

    if (s.end <= a || b <= s.start) {
      left[n++] = s;
      continue;
    }
    if (s.start < a)
      left[n++] = (struct span) { s.start, a };
    if (b < s.end)
      left[n++] = (struct span) { b, s.end };
    if (record)
      record_healed_locked (f, s.start > a ? s.start : a,
                            s.end < b ? s.end : b);
  }
  free (f->bad);
  f->bad = left;
  f->nbad = n;
}

/* A write to [offset, offset + count) succeeded: the read faults' sectors
 * it covered whole are mended.
 */
static void
heal (uint32_t count, uint64_t offset)
{
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&lock);
  uint64_t a = (offset + SECTOR - 1) / SECTOR, b = (offset + count) / SECTOR;

  for (size_t i = 0; i < nfaults && a < b; i++)
    if (faults[i].mode == BAD_READ)
      mend_locked (&faults[i], a, b, true);
}

/* At start-up: what the healed file says a server before this one
 * mended stays mended, as a disk's remapped sectors stay remapped, for
 * the faults whose lines are still in the ranges file.  Called with lock
 * held.
 */
static int
replay_healed_locked (void)
{
  char *text, *save;
  size_t len;

  if (healed_path == NULL || slurp (healed_path, &text, &len) == -1)
    return healed_path == NULL ? 0 : -1;
  if (text == NULL)
    return 0;
  text[len] = '\0';
  for (char *l = strtok_r (text, "\n", &save); l;
       l = strtok_r (NULL, "\n", &save)) {
    uint64_t start, n;
    int used;

    if (sscanf (l, "%" SCNu64 " %" SCNu64 " %n", &start, &n, &used) < 2)
      continue;
    for (size_t i = 0; i < nfaults; i++)
      if (faults[i].mode == BAD_READ && strcmp (faults[i].line, l + used) == 0)
        mend_locked (&faults[i], start, start + n, false);
  }
  free (text);
  return 0;
}

static void
badsector_unload (void)
{
  free_faults (faults, nfaults);
  free (seen);
  if (fd >= 0)
    close (fd);
  free (filename);
  free (ranges_path);
  free (healed_path);
}

static int
badsector_config (const char *key, const char *value)
{
  char **slot;

  if (strcmp (key, "file") == 0)
    slot = &filename;
  else if (strcmp (key, "ranges") == 0)
    slot = &ranges_path;
  else if (strcmp (key, "healed") == 0)
    slot = &healed_path;
  else {
    nbdkit_error ("unknown parameter '%s'", key);
    return -1;
  }
  free (*slot);
  /* Absolute: a daemonized nbdkit runs in /. */
  *slot = slot == &filename ? nbdkit_realpath (value)
    : nbdkit_absolute_path (value);
  return *slot ? 0 : -1;
}

static int
badsector_config_complete (void)
{
  if (filename == NULL) {
    nbdkit_error ("file=FILE is required");
    return -1;
  }
  return 0;
}

#define badsector_config_help \
  "file=FILE        (required) The file to serve.\n" \
  "ranges=RANGES    Bad sectors: \"START LENGTH [read|write|both]\" lines.\n" \
  "healed=HEALED    Appended: the read-bad sectors that writes mended."

/* Open the file; a malformed ranges file stops nbdkit here. */
static int
badsector_get_ready (void)
{
  fd = open (filename, O_RDWR | O_CLOEXEC);
  if (fd == -1) {
    nbdkit_error ("%s: %m", filename);
    return -1;
  }
  ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&lock);
  if (refresh_locked () == -1)
    return -1;
  return replay_healed_locked ();
}

static void *
badsector_open (int readonly)
{
  return NBDKIT_HANDLE_NOT_NEEDED;
}

static int64_t
badsector_get_size (void *handle)
{
  struct stat st;

  if (fstat (fd, &st) == -1) {
    nbdkit_error ("fstat: %m");
    return -1;
  }
  return st.st_size;
}

static int
badsector_can_multi_conn (void *handle)
{
  return 1;
}

static int
badsector_can_fua (void *handle)
{
  return NBDKIT_FUA_NATIVE;
}

/* -1 with errno EIO, reported, if the request meets a bad sector. */
static int
refuse (const char *op, bool write, uint32_t count, uint64_t offset)
{
  if (!fails (write, count, offset))
    return 0;
  nbdkit_error ("%s: %s sector in %" PRIu32 " bytes at %" PRIu64, op,
                write ? "unwritable" : "unreadable", count, offset);
  errno = EIO;
  return -1;
}

static int
write_all (const void *buf, uint32_t count, uint64_t offset)
{
  for (const char *p = buf; count > 0; ) {
    ssize_t r = pwrite (fd, p, count, offset);

    if (r == -1) {
      nbdkit_error ("pwrite: %m");
      return -1;
    }
    p += r;
    count -= r;
    offset += r;
  }
  return 0;
}

static int
badsector_flush (void *handle, uint32_t flags)
{
  if (fdatasync (fd) == -1) {
    nbdkit_error ("fdatasync: %m");
    return -1;
  }
  return 0;
}

/* A write of any kind has reached the file: FUA, then mend. */
static int
written (uint32_t count, uint64_t offset, uint32_t flags)
{
  if ((flags & NBDKIT_FLAG_FUA) && badsector_flush (NULL, 0) == -1)
    return -1;
  heal (count, offset);
  return 0;
}

/* Read, unless the range holds a read-bad sector. */
static int
badsector_pread (void *handle, void *buf, uint32_t count, uint64_t offset,
                 uint32_t flags)
{
  if (refuse ("pread", false, count, offset) == -1)
    return -1;
  for (char *p = buf; count > 0; ) {
    ssize_t r = pread (fd, p, count, offset);

    if (r == -1) {
      nbdkit_error ("pread: %m");
      return -1;
    }
    if (r == 0) {
      nbdkit_error ("pread: unexpected end of file");
      errno = EIO;
      return -1;
    }
    p += r;
    count -= r;
    offset += r;
  }
  return 0;
}

/* Write, unless the range holds a write-bad sector; then mend. */
static int
badsector_pwrite (void *handle, const void *buf, uint32_t count,
                  uint64_t offset, uint32_t flags)
{
  if (refuse ("pwrite", true, count, offset) == -1 ||
      write_all (buf, count, offset) == -1)
    return -1;
  return written (count, offset, flags);
}

/* Zero as the file plugin does: punch (if allowed), zero the range, or
 * write zeroes; then mend.
 */
static int
badsector_zero (void *handle, uint32_t count, uint64_t offset,
                uint32_t flags)
{
  static const char zeroes[65536];

  if (refuse ("zero", true, count, offset) == -1)
    return -1;
  if (!((flags & NBDKIT_FLAG_MAY_TRIM) &&
        fallocate (fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                   offset, count) == 0) &&
      fallocate (fd, FALLOC_FL_ZERO_RANGE, offset, count) == -1) {
    if (errno != EOPNOTSUPP) {
      nbdkit_error ("fallocate: %m");
      return -1;
    }
    for (uint32_t done = 0, n; done < count; done += n) {
      n = count - done < sizeof zeroes ? count - done : sizeof zeroes;
      if (write_all (zeroes, n, offset + done) == -1)
        return -1;
    }
  }
  return written (count, offset, flags);
}

/* Punch a hole; a file system that cannot makes trim a no-op, which
 * mends nothing.
 */
static int
badsector_trim (void *handle, uint32_t count, uint64_t offset,
                uint32_t flags)
{
  if (refuse ("trim", true, count, offset) == -1)
    return -1;
  if (fallocate (fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                 offset, count) == -1) {
    if (errno == EOPNOTSUPP)
      return 0;
    nbdkit_error ("fallocate: %m");
    return -1;
  }
  return written (count, offset, flags);
}

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

static struct nbdkit_plugin plugin = {
  .name              = "badsector",
  .longname          = "nbdkit-raid's test disk with bad sectors",
  .unload            = badsector_unload,
  .config            = badsector_config,
  .config_complete   = badsector_config_complete,
  .config_help       = badsector_config_help,
  .magic_config_key  = "file",
  .get_ready         = badsector_get_ready,
  .open              = badsector_open,
  .get_size          = badsector_get_size,
  .can_multi_conn    = badsector_can_multi_conn,
  .can_fua           = badsector_can_fua,
  .pread             = badsector_pread,
  .pwrite            = badsector_pwrite,
  .flush             = badsector_flush,
  .trim              = badsector_trim,
  .zero              = badsector_zero,
  .errno_is_preserved = 1,
};

NBDKIT_REGISTER_PLUGIN (plugin)
