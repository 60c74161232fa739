/* nbdkit raid plugin: the nbdkit glue only.
 *
 * Parameters are collected by raid_config, checked and turned into an open
 * array by raid_config_complete (so every error stops nbdkit before it
 * serves anything, and nothing is written to a member before that), and
 * every data callback hands its request to array.c.  There is one array per
 * nbdkit process; connections share it, and the thread model is PARALLEL:
 * the array and the stripe cache do their own locking.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "array.h"
#include "control.h"
#include "parity.h"

#define DEFAULT_CACHE (64 * 1024 * 1024)

static struct array_config cfg = {
  .level = 6,
  .layout = LAYOUT_LEFT_SYMMETRIC,
  .chunk = 512 * 1024,
  .cache_bytes = DEFAULT_CACHE,
};
static const char *parity_impl;
static char *control_path;      /* absolute: nbdkit may chdir ("/") */
static struct array *array;

static void
raid_unload (void)
{
  control_stop ();
  array_close (array);
  free (control_path);
}

/* Threads do not survive nbdkit's fork into the background, so the control
 * socket's thread starts here.
 */
static int
raid_after_fork (void)
{
  if (array_after_fork (array) == -1)
    return -1;
  return control_path ? control_start (array, control_path) : 0;
}

static int
parse_level (const char *value)
{
  if (strcmp (value, "5") == 0 || strcmp (value, "raid5") == 0)
    return 5;
  if (strcmp (value, "6") == 0 || strcmp (value, "raid6") == 0)
    return 6;
  nbdkit_error ("level=%s: must be 5 or 6", value);
  return -1;
}

static int
parse_size_param (const char *key, const char *value, uint64_t *out)
{
  int64_t r = nbdkit_parse_size (value);

  if (r == -1) {
    nbdkit_error ("%s=%s: not a size", key, value);
    return -1;
  }
  *out = r;
  return 0;
}

/* Called for each key=value on the command line; bare words are disk=. */
static int
raid_config (const char *key, const char *value)
{
  if (strcmp (key, "disk") == 0) {
    if (cfg.ndisks == GEOMETRY_MAX_MEMBERS) {
      nbdkit_error ("disk=%s: at most %d members", value, GEOMETRY_MAX_MEMBERS);
      return -1;
    }
    cfg.disks[cfg.ndisks++] = value;
  }
  else if (strcmp (key, "level") == 0) {
    if ((cfg.level = parse_level (value)) == -1)
      return -1;
    cfg.set_level = true;
  }
  else if (strcmp (key, "metadata") == 0) {
    if (strcmp (value, "auto") == 0)
      cfg.metadata = METADATA_AUTO;
    else if (strcmp (value, "md") == 0)
      cfg.metadata = METADATA_MD;
    else if (strcmp (value, "none") == 0)
      cfg.metadata = METADATA_NONE;
    else {
      nbdkit_error ("metadata=%s: must be auto, md or none", value);
      return -1;
    }
  }
  else if (strcmp (key, "create") == 0 || strcmp (key, "force") == 0) {
    int r = nbdkit_parse_bool (value);

    if (r == -1)
      return -1;
    *(key[0] == 'c' ? &cfg.create : &cfg.force) = r;
  }
  else if (strcmp (key, "layout") == 0) {
    int l = geometry_layout_parse (value);

    if (l == -1) {
      nbdkit_error ("layout=%s: unknown layout (left-asymmetric, "
                    "right-asymmetric, left-symmetric, right-symmetric, "
                    "parity-first, parity-last)", value);
      return -1;
    }
    cfg.layout = l;
    cfg.set_layout = true;
  }
  else if (strcmp (key, "chunk") == 0) {
    cfg.set_chunk = true;
    return parse_size_param (key, value, &cfg.chunk);
  }
  else if (strcmp (key, "data-offset") == 0) {
    cfg.set_data_offset = true;
    return parse_size_param (key, value, &cfg.data_offset);
  }
  else if (strcmp (key, "bitmap") == 0) {
    cfg.set_bitmap = true;
    if (strcmp (value, "none") == 0)
      cfg.no_bitmap = true;
    else if (strcmp (value, "internal") != 0) {
      nbdkit_error ("bitmap=%s: must be internal or none", value);
      return -1;
    }
  }
  else if (strcmp (key, "bitmap-chunk") == 0) {
    cfg.set_bitmap = true;
    if (parse_size_param (key, value, &cfg.bitmap_chunk) == -1)
      return -1;
    if (cfg.bitmap_chunk < 4096 || cfg.bitmap_chunk > UINT32_MAX / 2 + 1 ||
        (cfg.bitmap_chunk & (cfg.bitmap_chunk - 1))) {
      nbdkit_error ("bitmap-chunk=%s: must be a power of two from 4K to 2G",
                    value);
      return -1;
    }
  }
  else if (strcmp (key, "bitmap-delay") == 0) {
    cfg.set_bitmap = true;
    if (nbdkit_parse_uint32_t (key, value, &cfg.bitmap_delay) == -1)
      return -1;
    if (cfg.bitmap_delay < 1 || cfg.bitmap_delay > 24 * 3600) {
      nbdkit_error ("bitmap-delay=%s: must be 1 to 86400 seconds", value);
      return -1;
    }
  }
  else if (strcmp (key, "cache") == 0)
    return parse_size_param (key, value, &cfg.cache_bytes);
  else if (strcmp (key, "rebuild-rate") == 0)
    return parse_size_param (key, value, &cfg.rebuild_rate);
  else if (strcmp (key, "control") == 0) {
    free (control_path);
    control_path = nbdkit_absolute_path (value);
    if (control_path == NULL)
      return -1;
  }
  else if (strcmp (key, "direct") == 0) {
    int r = nbdkit_parse_bool (value);

    if (r == -1)
      return -1;
    cfg.direct = r;
  }
  else if (strcmp (key, "parity") == 0)
    parity_impl = value;
  else if (strcmp (key, "member-timeout") == 0) {
    char *end;
    double s = strtod (value, &end);

    if (end == value || *end || !(s > 0 && s <= 86400)) {
      nbdkit_error ("member-timeout=%s: must be a number of seconds, "
                    "0 < t <= 86400", value);
      return -1;
    }
    member_nbd_set_timeout (s * 1000);
  }
  else {
    nbdkit_error ("unknown parameter '%s'", key);
    return -1;
  }
  return 0;
}

/* Check everything and open the members: the only place they are opened. */
static int
raid_config_complete (void)
{
  if (parity_impl && parity_use (parity_impl) == -1) {
    nbdkit_error ("parity=%s: %s", parity_impl,
                  errno == ENOTSUP ? "this CPU cannot run it"
                  : "no such implementation (see nbdkit raid --dump-plugin)");
    return -1;
  }
  if (cfg.create && cfg.metadata == METADATA_NONE) {
    nbdkit_error ("create=true writes md superblocks: it cannot go with "
                  "metadata=none");
    return -1;
  }
  if (cfg.set_bitmap && !cfg.create) {
    nbdkit_error ("bitmap, bitmap-chunk and bitmap-delay choose the bitmap "
                  "of a new array: they need create=true (an existing "
                  "array keeps the bitmap its superblocks describe)");
    return -1;
  }
  if (cfg.no_bitmap && (cfg.bitmap_chunk || cfg.bitmap_delay)) {
    nbdkit_error ("bitmap=none: bitmap-chunk and bitmap-delay make no sense "
                  "without a bitmap");
    return -1;
  }
  if (cfg.ndisks == 0) {
    nbdkit_error ("no members: give disk=PATH once per member, in role order");
    return -1;
  }
  array = array_open (&cfg);
  return array ? 0 : -1;
}

#define raid_config_help \
  "level=5|6               RAID level (default 6).\n" \
  "disk=PATH|URI           A member, repeated in role order: a file, a block\n" \
  "                        device or an NBD URI (nbd://, nbd+unix://).\n" \
  "chunk=SIZE              Chunk size, power of two >= 4K (default 512K).\n" \
  "layout=NAME             md layout (default left-symmetric).\n" \
  "data-offset=SIZE        Where array data starts on each member (default 0).\n" \
  "cache=SIZE              Stripe cache budget (default 64M).\n" \
  "direct=BOOL             Open members with O_DIRECT (default false).\n" \
  "parity=NAME             Force a parity implementation.\n" \
  "member-timeout=SECONDS  Fail an NBD member's requests after this (default 30).\n" \
  "control=PATH            Unix socket for nbdkit-raid-ctl (status, fail,\n" \
  "                        replace, scrub).\n" \
  "rebuild-rate=SIZE       Cap on rebuild and resync bytes per second\n" \
  "                        (default: none).\n" \
  "metadata=auto|md|none   md v1.2 superblocks: use if present (default),\n" \
  "                        require, or ignore (raw mode).\n" \
  "create=true             Write fresh md superblocks (force=true: overwrite).\n" \
  "bitmap=internal|none    With create=true: md write-intent bitmap (default\n" \
  "                        internal).\n" \
  "bitmap-chunk=SIZE       With create=true: bytes of each member per bitmap\n" \
  "                        bit (default 64M, more if needed to fit 128K).\n" \
  "bitmap-delay=SECONDS    With create=true: idle time before a bit is\n" \
  "                        cleared (default 5)."

static void
raid_dump_plugin (void)
{
  const char *const *impls = parity_impls ();

  printf ("raid_parity=%s\n", parity_name ());
  printf ("raid_parity_impls=");
  for (size_t i = 0; impls[i]; i++)
    printf ("%s%s", i ? "," : "", impls[i]);
  printf ("\n");
  printf ("raid_io_uring=%s\n", member_file_uring_features ());
  printf ("raid_degraded=yes\n");
  printf ("raid_control=yes\n");
  printf ("raid_metadata=md\n");
  printf ("raid_bitmap=internal\n");
}

/* One array serves every connection. */
static void *
raid_open (int readonly)
{
  return array;
}

static int64_t
raid_get_size (void *handle)
{
  return array->g.array_size;
}

/* Minimum 512; preferred: one full data row if that is a power of two
 * (NBD requires one), else one chunk; maximum 64M.
 */
static int
raid_block_size (void *handle, uint32_t *minimum, uint32_t *preferred,
                 uint32_t *maximum)
{
  uint64_t row = array->g.stripe_data_bytes;
  uint64_t pref = (row & (row - 1)) == 0 ? row : array->g.chunk;

  *minimum = 512;
  *preferred = pref > 32 * 1024 * 1024 ? 32 * 1024 * 1024 : pref;
  *maximum = 64 * 1024 * 1024;
  return 0;
}

static int raid_can_write (void *handle) { return 1; }
static int raid_can_flush (void *handle) { return 1; }
static int raid_can_trim (void *handle) { return 1; }
static int raid_can_zero (void *handle) { return 1; }
static int raid_can_fast_zero (void *handle) { return 1; }
static int raid_can_fua (void *handle) { return NBDKIT_FUA_NATIVE; }

/* Every write reaches the members before it is acknowledged, and a flush
 * flushes every member, so a flush on any connection covers all of them.
 */
static int raid_can_multi_conn (void *handle) { return 1; }

static int
raid_pread (void *handle, void *buf, uint32_t count, uint64_t offset,
            uint32_t flags)
{
  if (array_read (array, buf, count, offset) == -1) {
    nbdkit_error ("raid: read at offset %" PRIu64 ": %m", offset);
    return -1;
  }
  return 0;
}

static int
raid_pwrite (void *handle, const void *buf, uint32_t count, uint64_t offset,
             uint32_t flags)
{
  return array_write (array, buf, count, offset, flags & NBDKIT_FLAG_FUA);
}

static int
raid_zero (void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
  return array_zero (array, count, offset, flags & NBDKIT_FLAG_MAY_TRIM,
                     flags & NBDKIT_FLAG_FAST_ZERO, flags & NBDKIT_FLAG_FUA);
}

static int
raid_trim (void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
  return array_trim (array, count, offset, flags & NBDKIT_FLAG_FUA);
}

static int
raid_flush (void *handle, uint32_t flags)
{
  return array_flush (array);
}

static struct nbdkit_plugin plugin = {
  .name = "raid",
  .longname = "nbdkit RAID-5/6 plugin",
  .version = PACKAGE_VERSION,
  .description = "Serve a RAID-5 or RAID-6 array of files, block devices or NBD exports.",
  .unload = raid_unload,
  .after_fork = raid_after_fork,
  .config = raid_config,
  .config_complete = raid_config_complete,
  .config_help = raid_config_help,
  .magic_config_key = "disk",
  .dump_plugin = raid_dump_plugin,
  .open = raid_open,
  .get_size = raid_get_size,
  .block_size = raid_block_size,
  .can_write = raid_can_write,
  .can_flush = raid_can_flush,
  .can_trim = raid_can_trim,
  .can_zero = raid_can_zero,
  .can_fast_zero = raid_can_fast_zero,
  .can_fua = raid_can_fua,
  .can_multi_conn = raid_can_multi_conn,
  .pread = raid_pread,
  .pwrite = raid_pwrite,
  .zero = raid_zero,
  .trim = raid_trim,
  .flush = raid_flush,
  .errno_is_preserved = 1,
};

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL
NBDKIT_REGISTER_PLUGIN (plugin)
