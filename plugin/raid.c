/* SPDX-License-Identifier: BSD-3-Clause */
/* nbdkit raid plugin: the nbdkit glue only.
 *
 * Parameters are parsed by params.c, checked and turned into an open array
 * by raid_config_complete (so every error stops nbdkit before it serves
 * anything, and nothing is written to a member before that), and
 * every data callback hands its request to array.c.  There is one array per
 * nbdkit process; connections share it, and the thread model is PARALLEL:
 * the array and the stripe cache do their own locking.
 *
 * This file orders start-up and shutdown, the one place that knows every
 * part:
 *   config_complete  control_listen (before anything is written), then
 *                    array_open, jobs_new
 *   after_fork       array_after_fork (md), jobs_after_fork (a rebuild
 *                    to resume, a resync), control_start (its threads),
 *                    settle_start (below), readd_auto_start (readd=auto)
 *   unload           settle_stop, readd_auto_stop, control_stop,
 *                    jobs_free (the job thread stops), then array_close
 *                    (flush, clean superblocks, members)
 *
 * Stopping while clients are connected.  On SIGTERM nbdkit stops
 * accepting, closes each connection at its next request without serving
 * it, and unloads the plugin only when every connection has gone; a
 * client that stays idle (the kernel's nbd-client, a qemu that is not
 * writing) keeps it waiting, and a service manager ends that with
 * SIGKILL (nbdkit 1.32; see nbdkit-raid-plugin(1), SERVICE).  So the
 * array does not wait for unload to be clean: a thread of ours sleeps
 * in nbdkit_nanosleep, which returns ESHUTDOWN as soon as nbdkit is
 * stopping, and from then on settles the array every SETTLE_MS (flush,
 * superblocks clean: array_settle), which also catches a request that
 * was already read when the signal came.  A SIGKILL after that loses
 * nothing and leaves nothing to resync.  (nbdkit logs "aborting sleep
 * because of server shut down" as an error when that sleep ends: that
 * line is this thread's, once per stop, and harmless.  nbdkit_nanosleep
 * is the only way nbdkit 1.32 tells a plugin that it is stopping.)
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "array.h"
#include "params.h"
#include "control.h"
#include "jobs.h"
#include "md_array.h"
#include "nbdkit_cmdline.h"
#include "parity.h"
#include "readd_auto.h"

static struct raid_params params;
static struct array *array;
static struct jobs *jobs;

#define SETTLE_MS 100

static pthread_t settle_thread;
static bool settle_running;
static _Atomic bool settle_stopping;

/* See "Stopping while clients are connected" above. */
static void *
settle (void *arg)
{
  bool settled = false;

  while (!atomic_load (&settle_stopping)) {
    if (nbdkit_nanosleep (0, SETTLE_MS * 1000000) == 0)
      continue;
    if (errno != ESHUTDOWN) {
      /* Not the stop but a failure of the call itself (EFAULT under
       * valgrind's memcheck): wait as long anyway, never spin, and ask
       * again.
       */
      struct timespec ts = { .tv_nsec = SETTLE_MS * 1000000 };

      nanosleep (&ts, NULL);
      continue;
    }
    /* nbdkit is stopping: nbdkit_nanosleep returns at once from now on. */
    while (!atomic_load (&settle_stopping)) {
      struct timespec ts = { .tv_nsec = SETTLE_MS * 1000000 };
      bool clean = array_settle (array);

      if (clean && !settled)
        nbdkit_debug ("raid: stopping: the array is clean");
      settled = clean;
      nanosleep (&ts, NULL);
    }
  }
  return NULL;
}

static int
settle_start (void)
{
  if (pthread_create (&settle_thread, NULL, settle, NULL)) {
    nbdkit_error ("raid: cannot start a thread");
    return -1;
  }
  settle_running = true;
  return 0;
}

static void
settle_stop (void)
{
  if (settle_running) {
    atomic_store (&settle_stopping, true);
    pthread_join (settle_thread, NULL);
    settle_running = false;
  }
}

/* libparity's reports (an implementation that failed its self-test and
 * was replaced by the generic one) go to nbdkit's log.
 */
static void
raid_parity_log (const char *msg)
{
  nbdkit_error ("parity: %s", msg);
}

static void
raid_load (void)
{
  parity_set_log (raid_parity_log);
  params_init (&params);
}

static void
raid_unload (void)
{
  settle_stop ();
  readd_auto_stop ();
  control_stop ();
  jobs_free (jobs);
  array_close (array);
  params_free (&params);
}

/* Threads do not survive nbdkit's fork into the background, so the control
 * socket's threads start here (its socket was bound before the fork).
 */
static int
raid_after_fork (void)
{
  if (array_after_fork (array) == -1 || jobs_after_fork (jobs) == -1 ||
      control_start (array, jobs) == -1 || settle_start () == -1)
    return -1;
  return params.readd_auto && !params.array.readonly ?
    readd_auto_start (array, jobs) : 0;
}

/* Each key=value; bare words are disk= (magic_config_key). */
static int
raid_config (const char *key, const char *value)
{
  return params_set (&params, key, value);
}

/* Check everything and open the members: the only place they are opened. */
static int
raid_config_complete (void)
{
  if (params.parity_impl && parity_use (params.parity_impl) == -1) {
    nbdkit_error ("parity=%s: %s", params.parity_impl,
                  errno == ENOTSUP ? "this CPU cannot run it"
                  : errno == EIO ? "it failed its self-test (its results "
                  "differ from the generic implementation's)"
                  : "no such implementation (see nbdkit raid --dump-plugin)");
    return -1;
  }
  if (params_check (&params) == -1)
    return -1;
  if (params.member_timeout_ms)
    member_nbd_set_timeout (params.member_timeout_ms);
  if (params.max_read_errors >= 0)
    member_set_max_read_errors (params.max_read_errors);
  /* nbdkit -r says so only to .open, after the resync and the rebuild
   * would have started: read it from the command line (nbdkit_cmdline.c).
   */
  if (!params.array.readonly && nbdkit_cmdline_read_only_self () == 1) {
    nbdkit_debug ("raid: nbdkit -r: the array is read-only");
    params.array.readonly = true;
  }
  if (params.array.readonly)
    member_set_read_only ();
  /* Before array_open, and so before anything is written to a member: a
   * control path that cannot be ours stops nbdkit first.
   */
  if (params.control_path && control_listen (params.control_path) == -1)
    return -1;
  array = array_open (&params.array);
  if (array && params.readd_auto) {
    char why[256];

    if (readd_auto_check (array, why, sizeof why) == -1) {
      nbdkit_error ("readd=auto: %s", why);
      array_close (array);
      array = NULL;
    }
  }
  if (array)
    jobs = jobs_new (array, params.array.rebuild_rate);
  if (jobs == NULL) {
    array_close (array);
    array = NULL;
    control_stop ();
    return -1;
  }
  return 0;
}

#define raid_config_help PARAMS_HELP

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
  printf ("raid_metadata_versions=1.0,1.1,1.2\n");
  printf ("raid_bitmap=internal\n");
  printf ("raid_readd=manual,auto\n");
}

/* One array serves every connection.  nbdkit -r was read from the
 * command line at start-up; a connection that nbdkit opens read-only all
 * the same (a filter, or a spelling nbdkit_cmdline.c does not know) is
 * served, but the array was not kept from writing: say so once.
 */
static void *
raid_open (int readonly)
{
  static _Atomic bool warned;

  if (readonly && !array->readonly && !atomic_exchange (&warned, true))
    nbdkit_debug ("raid: a read-only connection to a read-write array "
                  "(readonly=true keeps the members from being written)");
  return array;
}

static int64_t
raid_get_size (void *handle)
{
  return array->g.array_size;
}

/* Minimum 512, or the members' logical block size where md's superblock
 * sets one (a disk of 4 KiB sectors: a client that writes less would
 * make each member read and write the whole sector); preferred: one full
 * data row if that is a power of two (NBD requires one), else one chunk,
 * never below the minimum; maximum 64M.
 */
static int
raid_block_size (void *handle, uint32_t *minimum, uint32_t *preferred,
                 uint32_t *maximum)
{
  uint64_t row = array->g.stripe_data_bytes;
  uint64_t pref = (row & (row - 1)) == 0 ? row : array->g.chunk;
  uint32_t lbs = md_array_logical_block_size (array->md);

  *minimum = lbs ? lbs : 512;
  *preferred = pref > 32 * 1024 * 1024 ? 32 * 1024 * 1024 : pref;
  if (*preferred < *minimum)
    *preferred = *minimum;
  *maximum = 64 * 1024 * 1024;
  return 0;
}

static int raid_can_write (void *handle) { return !array->readonly; }
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

/* Holes where every member holds holes over whole rows (extents.c), so
 * that sparse copies skip them; every member answers, files by lseek,
 * NBD members "data".
 */
static int raid_can_extents (void *handle) { return 1; }

static int
raid_extents (void *handle, uint32_t count, uint64_t offset, uint32_t flags,
              struct nbdkit_extents *extents)
{
  struct extent ext[EXTENTS_MAX];
  int n = array_extents (array, count, offset, ext,
                         flags & NBDKIT_FLAG_REQ_ONE ? 1 : EXTENTS_MAX);

  if (n == -1) {
    nbdkit_error ("raid: extents at offset %" PRIu64 ": %m", offset);
    return -1;
  }
  for (int i = 0; i < n; i++)
    if (nbdkit_add_extent (extents, ext[i].offset, ext[i].length,
                           ext[i].zero ? NBDKIT_EXTENT_HOLE | NBDKIT_EXTENT_ZERO
                           : 0) == -1)
      return -1;
  return 0;
}

static struct nbdkit_plugin plugin = {
  .name = "raid",
  .longname = "nbdkit RAID-5/6 plugin",
  .version = PACKAGE_VERSION,
  .description = "Serve a RAID-5 or RAID-6 array of files, block devices or NBD exports.",
  .load = raid_load,
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
  .can_extents = raid_can_extents,
  .pread = raid_pread,
  .pwrite = raid_pwrite,
  .zero = raid_zero,
  .trim = raid_trim,
  .flush = raid_flush,
  .extents = raid_extents,
  .errno_is_preserved = 1,
};

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL
NBDKIT_REGISTER_PLUGIN (plugin)
