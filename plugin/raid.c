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
 *                    and jobs_add_spare for each spare= (its superblock
 *                    is written then: every check has passed)
 *   after_fork       array_after_fork (md), jobs_after_fork (a rebuild
 *                    to resume, a resync), control_start (its threads),
 *                    settle_start (below), readd_auto_start (readd=auto),
 *                    spare_auto_start (hot spares take failed roles)
 *   unload           settle_stop, spare_auto_stop, readd_auto_stop,
 *                    control_stop,
 *                    jobs_free (the job thread stops), then array_close
 *                    (flush, clean superblocks, members)
 *
 * Stopping while clients are connected.  On SIGTERM nbdkit stops
 * accepting, closes each connection at its next request without serving
 * it, and unloads the plugin only when every connection has gone; a
 * client that stays idle (the kernel's nbd-client, a qemu that is not
 * writing) keeps it waiting, and a service manager ends that with
 * SIGKILL (nbdkit 1.32; see nbdkit-raid-plugin(1), SERVICE).  So the
 * array does not wait for unload to be clean: a thread of ours (settle)
 * waits for the stop, and from then on settles the array every
 * SETTLE_MS (flush, superblocks clean: array_settle), which also catches
 * a request that was already read when the signal came.  A SIGKILL
 * after that loses nothing and leaves nothing to resync.
 *
 * How the thread learns of the stop.  nbdkit tells a plugin only
 * through nbdkit_nanosleep, which returns ESHUTDOWN once nbdkit is
 * stopping, but logs "aborting sleep because of server shut down" as an
 * error as it does (1.32 to 1.42): a line at every clean stop, which
 * monitoring that alerts on error lines takes for a failure.  So the
 * thread does not sleep in it.  nbdkit stops on SIGINT, SIGQUIT, SIGTERM
 * and SIGHUP, whose handlers it installs before after_fork
 * (server/signals.c; a service manager's stop, --exit-with-parent's
 * parent death signal and --run's end all send SIGTERM): after_fork
 * chains a handler of ours in front of each (stop_signal), which calls
 * nbdkit's and then writes a byte to a pipe the thread polls.  unload
 * puts nbdkit's handlers back before anything of ours goes away.  A stop
 * nbdkit decides without a signal (a filter calling nbdkit_shutdown,
 * --once after its connection) is not seen: the array then settles in
 * unload, which that stop reaches once the last client has gone.
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
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
#include "spare_auto.h"

static struct raid_params params;
static struct array *array;
static struct jobs *jobs;

#define SETTLE_MS 100

static pthread_t settle_thread;
static bool settle_running;
static _Atomic bool settle_stopping;

/* The signals nbdkit stops on, and its handlers for them. */
static const int stop_signals[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP };
#define NSTOP_SIGNALS (sizeof stop_signals / sizeof stop_signals[0])
static struct sigaction nbdkit_action[NSTOP_SIGNALS];
static bool chained[NSTOP_SIGNALS];
/* The handler writes, settle reads.  Never closed: see settle_stop. */
static int stop_pipe[2] = { -1, -1 };

/* nbdkit's handler first (it sets its own quit), then the pipe: a
 * non-blocking write, since a full pipe already holds the news.  Only
 * async-signal-safe calls.
 */
static void
stop_signal (int sig, siginfo_t *info, void *ctx)
{
  int saved_errno = errno;
  char c = 0;

  for (size_t k = 0; k < NSTOP_SIGNALS; k++)
    if (stop_signals[k] == sig) {
      if (nbdkit_action[k].sa_flags & SA_SIGINFO)
        nbdkit_action[k].sa_sigaction (sig, info, ctx);
      else
        nbdkit_action[k].sa_handler (sig);
    }
  if (write (stop_pipe[1], &c, 1) == -1) {
    /* EAGAIN: a byte is there already. */
  }
  errno = saved_errno;
}

/* In front of each handler nbdkit installed; a signal nbdkit does not
 * handle is left alone (it does not stop nbdkit).
 */
static void
stop_signals_chain (void)
{
  for (size_t k = 0; k < NSTOP_SIGNALS; k++) {
    struct sigaction *old = &nbdkit_action[k], ours;

    if (sigaction (stop_signals[k], NULL, old) == -1 ||
        (!(old->sa_flags & SA_SIGINFO) &&
         (old->sa_handler == SIG_DFL || old->sa_handler == SIG_IGN)))
      continue;
    ours = *old;
    ours.sa_flags |= SA_SIGINFO;
    ours.sa_sigaction = stop_signal;
    chained[k] = sigaction (stop_signals[k], &ours, NULL) == 0;
  }
}

static void
stop_signals_unchain (void)
{
  for (size_t k = 0; k < NSTOP_SIGNALS; k++)
    if (chained[k]) {
      sigaction (stop_signals[k], &nbdkit_action[k], NULL);
      chained[k] = false;
    }
}

/* Until the pipe has a byte: nbdkit is stopping, or unload wakes us. */
static void
wait_for_stop (void)
{
  struct pollfd p = { .fd = stop_pipe[0], .events = POLLIN };

  while (poll (&p, 1, -1) == -1 && errno == EINTR)
    ;
}

/* See "Stopping while clients are connected" above. */
static void *
settle (void *arg)
{
  bool settled = false;

  wait_for_stop ();
  while (!atomic_load (&settle_stopping)) {
    struct timespec ts = { .tv_nsec = SETTLE_MS * 1000000 };
    bool clean = array_settle (array);

    if (clean && !settled)
      nbdkit_debug ("raid: stopping: the array is clean");
    settled = clean;
    nanosleep (&ts, NULL);
  }
  return NULL;
}

static int
settle_start (void)
{
  if (pipe2 (stop_pipe, O_CLOEXEC | O_NONBLOCK) == -1) {
    nbdkit_error ("raid: pipe2: %m");
    return -1;
  }
  if (pthread_create (&settle_thread, NULL, settle, NULL)) {
    nbdkit_error ("raid: cannot start a thread");
    return -1;
  }
  settle_running = true;
  stop_signals_chain ();
  return 0;
}

/* nbdkit's handlers go back first, so that no new call of ours starts;
 * then the thread is joined (a settle round at most).  The pipe stays
 * open until the process ends: a call of stop_signal that began before
 * the handlers went back may still be running on another thread, and
 * closing the pipe under it would let its byte land on whatever file
 * takes that descriptor number next (a member's, say).  Unload comes
 * once, as nbdkit exits; two descriptors are all it keeps.
 */
static void
settle_stop (void)
{
  char c = 0;

  stop_signals_unchain ();
  if (settle_running) {
    atomic_store (&settle_stopping, true);
    if (write (stop_pipe[1], &c, 1) == -1) {
      /* EAGAIN: a byte is there already. */
    }
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
  spare_auto_stop ();
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
  if (params.readd_auto && !params.array.readonly &&
      readd_auto_start (array, jobs) == -1)
    return -1;
  return spare_auto_start (array, jobs);
}

/* Each key=value; bare words are disk= (magic_config_key). */
static int
raid_config (const char *key, const char *value)
{
  return params_set (&params, key, value);
}

/* spare=: each admitted and given its superblock as add-spare does; a
 * refusal stops nbdkit, as a member that cannot be opened does.
 */
static int
add_spares (void)
{
  char *why;

  for (int k = 0; k < params.nspares; k++)
    if (jobs_add_spare (jobs, params.spares[k], &why) == -1) {
      nbdkit_error ("spare=%s: %s", params.spares[k], why);
      return -1;
    }
  return 0;
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
  if (jobs == NULL || add_spares () == -1) {
    jobs_free (jobs);
    jobs = NULL;
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
