/* SPDX-License-Identifier: BSD-3-Clause */
/* A member's md identity: what a new connection to it must find.
 *
 * A member that can reconnect (an NBD export) checks every new connection
 * against what md last wrote to it (member.h, "Identity"; member_nbd.c
 * reads the range and asks).  The reason (docs/design.md, "Trust
 * boundaries and identity"): a server restarted over another disk, or
 * over an older copy of this one, answers at the same address, and the
 * array must never read such a disk as the member it knows: its data
 * would be served as the array's.  The md superblock says which disk it
 * is (set UUID, device UUID, dev_number, events), so the identity is
 * the superblock itself (struct md_identity below), kept true by
 * md_identity_write_super around every superblock write.
 *
 * Who gives identities: assembly, to every member whose superblock it
 * read (md_assemble.c: read_all; not with create=true, which keeps none
 * of what it reads); the update path, to every member it
 * writes a superblock to, from the first one on (md_array.c: write_all,
 * through md_identity_write_super); re-add, to the disk it accepted for
 * its old role (md_admit.c: md_array_readd_check).  All of them go
 * through md_identity_expect, so that, as the struct's comment says,
 * every identity a member has is a struct md_identity.
 *
 * Locking: each identity's own lock (lock.h, 9), never md->lock, since
 * the check runs inside member I/O, which the update path issues holding
 * md->lock.  This file knows nothing of struct md_array.
 */

#include <config.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md_array_internal.h"
#include "md_super.h"
#include "member.h"

/* A member's md identity: the superblock a new connection to it must
 * find where the array's version puts it (4 KiB for v1.2; for v1.0 where
 * the member's size puts it), with the same set UUID, device UUID and
 * dev_number, and an event count not behind (a server restarted over an older copy of
 * the disk is behind; an empty or foreign disk has no such superblock).
 * While a superblock is being written (in_flight) either the old one or
 * the new one may be there; and since the read of a new connection is on
 * the wire while superblocks are written, what it reads is judged against
 * the lowest count the disk could hold when the read was sent (begin),
 * not only against what was written by the time the answer came: a read
 * sent before a write and answered after it (found by the soak, seed
 * 796263561) shows the old superblock, which is no older copy of the
 * disk.  It has its own lock, never md->lock: the
 * check runs inside member I/O, which md_array.c's update() does holding
 * md->lock.
 * Only this file gives members identities, so a member's identity, if it
 * has one, is a struct md_identity.
 */
struct md_who {
  uint8_t set_uuid[16], device_uuid[16];
  uint32_t dev_number;
  uint64_t events;              /* at least */
};

struct md_identity {
  struct member_identity base;
  pthread_mutex_t lock;         /* the fields below */
  struct md_who written, writing;
  bool in_flight;               /* writing is being written */
};

static bool
is_who (const struct md_super *sb, const struct md_who *w)
{
  return memcmp (sb->set_uuid, w->set_uuid, 16) == 0 &&
    memcmp (sb->device_uuid, w->device_uuid, 16) == 0 &&
    sb->dev_number == w->dev_number && sb->events >= w->events;
}

/* The lowest event count the disk can hold now: what was last written to
 * it, or what is being written, if lower (md counts back down).
 */
static uint64_t
md_identity_begin (struct member_identity *id)
{
  struct md_identity *mi = (struct md_identity *) id;
  uint64_t floor;

  pthread_mutex_lock (&mi->lock);
  floor = mi->written.events;
  if (mi->in_flight && mi->writing.events < floor)
    floor = mi->writing.events;
  pthread_mutex_unlock (&mi->lock);
  return floor;
}

static const char *
md_identity_verify (struct member_identity *id, uint64_t begun,
                    const void *buf, char *why, size_t whylen)
{
  struct md_identity *mi = (struct md_identity *) id;
  struct md_super sb_buf, *sb = &sb_buf;  /* ~5K: on the stack, so that a
                                             shortage of memory is never
                                             taken for another disk */
  const char *bad = NULL;
  int r;

  r = md_super_parse (buf, sb, &bad);
  if (r == 0)
    bad = "it has no md superblock where the array keeps it";
  else if (r == 1 && sb->super_offset != id->offset)
    bad = "its md superblock says it belongs elsewhere on the disk "
      "(super_offset): another array's";
  else if (r == 1) {
    const struct md_who *w = &mi->written;
    struct md_who then;

    pthread_mutex_lock (&mi->lock);
    then = *w;
    then.events = begun;        /* the disk as it was when the read left */
    if (is_who (sb, w) || (mi->in_flight && is_who (sb, &mi->writing)) ||
        is_who (sb, &then))
      bad = NULL;
    else if (memcmp (sb->set_uuid, w->set_uuid, 16))
      bad = "its md superblock belongs to another array (set UUID)";
    else if (memcmp (sb->device_uuid, w->device_uuid, 16) ||
             sb->dev_number != w->dev_number)
      bad = "its md superblock is another member's (device UUID, dev_number)";
    else {
      snprintf (why, whylen, "its md superblock is behind (events %" PRIu64
                "; the last one written to it had %" PRIu64 "): an older "
                "copy of the disk", sb->events, w->events);
      bad = why;
    }
    pthread_mutex_unlock (&mi->lock);
  }
  return bad;
}

static void
md_identity_free (struct member_identity *id)
{
  struct md_identity *mi = (struct md_identity *) id;

  pthread_mutex_destroy (&mi->lock);
  free (mi);
}

/* sb is on m (written), or is about to be written to it. */
void
md_identity_expect (struct member *m, const struct md_super *sb,
                    bool written)
{
  struct md_identity *mi = (struct md_identity *) member_identity (m);
  struct md_who w = { .dev_number = sb->dev_number, .events = sb->events };

  memcpy (w.set_uuid, sb->set_uuid, 16);
  memcpy (w.device_uuid, sb->device_uuid, 16);
  if (mi == NULL) {
    uint64_t at = md_super_location (sb->minor, m->size);

    if (!written || at == UINT64_MAX ||
        (mi = calloc (1, sizeof *mi)) == NULL)
      return;                   /* checked from its first superblock on */
    mi->base = (struct member_identity) {
      .offset = at, .len = MD_SB_BYTES,
      .begin = md_identity_begin, .verify = md_identity_verify,
      .free = md_identity_free,
    };
    pthread_mutex_init (&mi->lock, NULL);
    mi->written = w;
    member_set_identity (m, &mi->base);
    return;
  }
  pthread_mutex_lock (&mi->lock);
  if (written)
    mi->written = w;
  else
    mi->writing = w;
  mi->in_flight = !written;
  pthread_mutex_unlock (&mi->lock);
}

/* Write m's superblock, keeping m's identity true meanwhile. */
int
md_identity_write_super (struct member *m, const struct md_super *sb)
{
  md_identity_expect (m, sb, false);
  if (md_super_write (m, sb) == -1)
    return -1;
  md_identity_expect (m, sb, true);
  return 0;
}
