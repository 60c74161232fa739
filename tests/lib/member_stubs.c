/* SPDX-License-Identifier: BSD-3-Clause */
/* member_stubs: what plugin/member.c and plugin/member_table.c call that a
 * unit test over in-memory members (member_mem.c) never reaches.
 *
 * The real backends (member_file.c, member_nbd.c) would pull in io_uring
 * and libnbd; a test whose members are all member_mem has no use for
 * them, so opening a file or a URI aborts, loudly.  nbdkit's logging
 * calls are defined weak and do nothing: a test that checks what was
 * logged (test_stripe counts errors, md_rig.c keeps the last one for
 * the md tests) defines its own, which the linker takes instead.
 */

#include <config.h>

#include <stdbool.h>
#include <stdlib.h>

#include "member.h"

struct member *
member_file_open (const char *path, enum member_direct direct)
{
  abort ();
}

struct member *
member_nbd_open (const char *uri)
{
  abort ();
}

bool
member_is_uri (const char *name)
{
  return false;
}

__attribute__ ((weak)) void
nbdkit_error (const char *fs, ...)
{
}

__attribute__ ((weak)) void
nbdkit_debug (const char *fs, ...)
{
}
