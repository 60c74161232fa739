/* SPDX-License-Identifier: BSD-3-Clause */
/* Description: an LD_PRELOAD shim that makes the raid plugin's
 * aligned_alloc fail (NULL, errno ENOMEM) while the file named by
 * ALLOC_FAIL_FILE exists, so that a test can run a process out of memory
 * at the moment it chooses.  Calls from anywhere but the plugin (nbdkit,
 * libnbd, libc) always succeed.  What it shows: a shortage of memory in
 * this process is never taken for a failed member.
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *(*real_aligned_alloc) (size_t, size_t);

static int
from_plugin (const void *caller)
{
  Dl_info info;

  return dladdr (caller, &info) && info.dli_fname &&
    strstr (info.dli_fname, "nbdkit-raid-plugin") != NULL;
}

void *
aligned_alloc (size_t alignment, size_t size)
{
  const char *f = getenv ("ALLOC_FAIL_FILE");

  if (real_aligned_alloc == NULL)
    real_aligned_alloc = dlsym (RTLD_NEXT, "aligned_alloc");
  if (f && access (f, F_OK) == 0 &&
      from_plugin (__builtin_return_address (0))) {
    errno = ENOMEM;
    return NULL;
  }
  return real_aligned_alloc (alignment, size);
}
