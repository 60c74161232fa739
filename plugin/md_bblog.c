/* SPDX-License-Identifier: BSD-3-Clause */
/* md's bad-block logs on the members: each member's log read at
 * assembly, given to a member that takes a role while serving, and
 * written with the superblocks.  md_badblocks.c has the format and the
 * set; this file does the I/O and keeps md's rules for when.
 *
 *   load    at assembly (md_bblog_load, from md_assemble.c), every member
 *           in a role reads its own log, where its own superblock puts
 *           it (bblog_offset sectors from the superblock, bblog_size
 *           sectors), into member.bad_blocks: the entries if the
 *           superblock says there are some (0x8), else an empty set with
 *           the log's room.  A member whose superblock names no log has
 *           none (NULL): a sector it cannot give or take then fails it,
 *           as md fails a device it cannot record bad blocks on.  A log
 *           md could not have written refuses the array, naming the
 *           member and why, before anything is written.
 *   give    a member that takes a role while serving (md_array_give_log,
 *           from jobs.c before it is published): a re-added disk reads
 *           its own log, as md reads the superblock of a device coming
 *           back; a replacement gets an empty one in the array's place
 *           (the reference superblock's), as mdadm --add reserves one.
 *   write   with every superblock update (md_bblog_write, from
 *           md_array.c's write_all): a member's log that changed since it
 *           was last written is written before the superblock that names
 *           it (0x8 set when it holds entries), and what it holds is
 *           acknowledged once both are on disk, as md's super_1_sync and
 *           md_update_sb order them.  So a range is on disk before any
 *           superblock could depend on it, and a range a request relies
 *           on after a crash is acknowledged only once it is.
 *
 * The places a log takes are recorded by role in md->bblog[] (assembly:
 * the member's own; create: md_badblocks_create_place, as mdadm
 * --create; a replacement: the reference's), and the superblock fields
 * written for each member come from there.  A log is one 4 KiB page at
 * most (8 sectors), on a 4 KiB boundary wherever mdadm puts it; one that
 * is not is read and written through an aligned window.
 *
 * Locking: load runs before the array is published; give before the
 * member is; write under md->lock (md_array.c's update).  The sets take
 * their own lock (lock.h: 12).
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "lock.h"
#include "md_array_internal.h"
#include "md_badblocks.h"
#include "md_super.h"
#include "member_table.h"

#define PAGE 4096

/* The sector of m's superblock, for a version-1.minor array. */
static uint64_t
super_sector (int minor, const struct member *m)
{
  uint64_t at = md_super_location (minor, m->size);

  return at == UINT64_MAX ? UINT64_MAX : at / 512;
}

/* Read (op MEMBER_READ) or write len bytes of buf at byte `at` of m, in a
 * window aligned to m's alignment (read first when writing part of it).
 * 0, or -1 with errno.
 */
static int
log_io (struct member *m, enum member_op op, uint8_t *buf, uint64_t at,
        size_t len)
{
  uint64_t lo = at / m->align * m->align;
  uint64_t hi = (at + len + m->align - 1) / m->align * m->align;
  size_t size = (hi - lo + PAGE - 1) / PAGE * PAGE;
  uint8_t *w = aligned_alloc (PAGE, size);
  struct member_io io = {
    .member = m, .op = MEMBER_READ, .buf = w, .len = hi - lo, .offset = lo,
  };
  int r = -1;

  if (w == NULL)
    return -1;
  if ((op == MEMBER_READ || lo != at || hi != at + len) &&
      member_io_run (&io, 1) == -1)
    goto out;
  if (op == MEMBER_READ)
    memcpy (buf, w + (at - lo), len);
  else {
    memcpy (w + (at - lo), buf, len);
    io.op = MEMBER_WRITE;
    if (member_io_run (&io, 1) == -1)
      goto out;
  }
  r = 0;
 out:
  if (r == -1 && io.err)
    errno = io.err;
  free (w);
  return r;
}

/* Where m's areas are, for md_badblocks_place_check: the superblock,
 * the data, the bitmap (bitmap_sectors 0: none).
 */
static void
layout_of (const struct md_array *md, const struct member *m,
           uint64_t bitmap_sectors, struct md_badblocks_layout *l)
{
  uint64_t super = super_sector (md->sb.minor, m);

  *l = (struct md_badblocks_layout) {
    .member_sectors = m->size / 512, .super = super,
    .data_offset = md->sb.data_offset / 512,
    .data_sectors = md->sb.size / 512,
  };
  if (bitmap_sectors && (md->sb.feature_map & MD_FEATURE_BITMAP)) {
    l->bitmap = super + md->sb.bitmap_offset;
    l->bitmap_sectors = bitmap_sectors;
  }
}

/* m's log at place, with entries (0x8: decoded) or without (an empty set
 * with its room), into *out.  -1 with a message in why (static, or in
 * msg) if it cannot be read or is not one md could have written.
 */
static int
read_log (const struct md_array *md, struct member *m,
          const struct md_badblocks_place *place, bool entries,
          uint64_t bitmap_sectors, struct md_badblocks **out,
          const char **why)
{
  static __thread char msg[160];
  struct md_badblocks_layout l;
  uint8_t *buf;
  uint64_t at;

  *out = NULL;
  if (md_badblocks_place_none (place))
    return 0;
  layout_of (md, m, bitmap_sectors, &l);
  if ((*why = md_badblocks_place_check (place, &l)) != NULL)
    return -1;
  if (!entries) {
    *out = md_badblocks_new (place->sectors, m->size / 512);
    *why = "out of memory";
    return *out ? 0 : -1;
  }
  at = md_badblocks_location (l.super, place) * 512;
  buf = malloc ((size_t) place->sectors * 512);
  if (buf == NULL) {
    *why = "out of memory";
    return -1;
  }
  if (log_io (m, MEMBER_READ, buf, at, (size_t) place->sectors * 512) == -1) {
    snprintf (msg, sizeof msg, "cannot read it: %s", strerror (errno));
    *why = msg;
  }
  else
    *out = md_badblocks_decode (buf, place->sectors, 0, m->size / 512, why);
  free (buf);
  return *out ? 0 : -1;
}

int
md_bblog_load (struct md_array *md)
{
  for (int i = 0; i < md->ms->n; i++) {
    struct member *m = members_at (md->ms, i);
    const char *why;

    if (member_failed (m))
      continue;
    if (read_log (md, m, &md->bblog[i], md->bblog_entries[i],
                  md->bitmap_sectors, &m->bad_blocks, &why) == -1) {
      nbdkit_error ("member %s: md bad-block log: %s", m->name, why);
      return -1;
    }
    if (m->bad_blocks == NULL)
      continue;
    /* As read: on disk, nothing to write until it changes. */
    md->bblog_written[i] = md_badblocks_generation (m->bad_blocks);
    md->bblog_written_serial[i] = m->serial;
    if (md_badblocks_count (m->bad_blocks))
      nbdkit_error ("raid: member %s: its md bad-block log lists %zu "
                    "ranges; what they hold is reconstructed from the "
                    "others", m->name, md_badblocks_count (m->bad_blocks));
  }
  return 0;
}

int
md_array_give_log (struct md_array *md, int i, struct member *m, bool readd,
                   char *msg, size_t len)
{
  struct md_badblocks_place place = {
    .offset = md ? md->sb.bblog_offset : 0,
    .sectors = md ? md->sb.bblog_size : 0,
  };
  struct md_super sb;
  const char *why;
  bool entries = false;

  if (md == NULL || md_badblocks_place_none (&place))
    return 0;                   /* the array keeps none */
  if (readd) {
    if (md_super_read (m, md->sb.minor, &sb, &why) != 1) {
      snprintf (msg, len, "cannot read its superblock: %s", why);
      return -1;
    }
    place.offset = sb.bblog_offset;
    place.sectors = sb.bblog_size;
    entries = sb.feature_map & MD_FEATURE_BAD_BLOCKS;
  }
  if (read_log (md, m, &place, entries, md->bitmap_sectors, &m->bad_blocks,
                &why) == -1) {
    snprintf (msg, len, "%s: md bad-block log: %s", m->name, why);
    return -1;
  }
  {
    /* Role i's member has failed, so no update writes it meanwhile: the
     * place is the new member's from now on.
     */
    ACQUIRE_LOCK_FOR_CURRENT_SCOPE (&md->lock);

    md->bblog[i] = place;
    md->corrected_base[i] = readd ? sb.cnt_corrected_read : 0;
  }
  return 0;
}

int
md_bblog_write (struct md_array *md, int i, struct member *m,
                struct md_super *sb, uint64_t *generation)
{
  const struct md_badblocks_place *place = &md->bblog[i];
  uint8_t *buf;
  uint64_t at, g;
  int r;

  *generation = md->bblog_written[i];
  sb->bblog_offset = place->offset;
  sb->bblog_size = place->sectors;
  sb->bblog_shift = 0;
  sb->feature_map &= ~MD_FEATURE_BAD_BLOCKS;
  if (m->bad_blocks == NULL)
    return 0;
  if (md_badblocks_count (m->bad_blocks))
    sb->feature_map |= MD_FEATURE_BAD_BLOCKS;
  if (md_badblocks_generation (m->bad_blocks) == md->bblog_written[i] &&
      md->bblog_written_serial[i] == m->serial)
    return 0;                   /* on disk as it is */
  buf = malloc ((size_t) place->sectors * 512);
  if (buf == NULL)
    return -1;
  md_badblocks_encode (m->bad_blocks, buf, &g);
  at = md_badblocks_location (super_sector (sb->minor, m), place) * 512;
  r = log_io (m, MEMBER_WRITE, buf, at, (size_t) place->sectors * 512);
  free (buf);
  if (r == 0)
    *generation = g;
  return r;
}

void
md_bblog_written (struct md_array *md, int i, struct member *m,
                  uint64_t generation)
{
  if (m->bad_blocks == NULL)
    return;
  md_badblocks_acknowledge (m->bad_blocks, generation);
  md->bblog_written[i] = generation;
  md->bblog_written_serial[i] = m->serial;
}

bool
md_bblog_changed (struct md_array *md)
{
  for (int i = 0; i < md->ms->n; i++) {
    struct member *m = members_at (md->ms, i);

    if (m->bad_blocks && !member_failed (m) &&
        (md_badblocks_generation (m->bad_blocks) !=
         atomic_load_explicit (&md->bblog_written[i], memory_order_relaxed)
         || atomic_load_explicit (&md->bblog_written_serial[i],
                                  memory_order_relaxed) != m->serial))
      return true;
  }
  return false;
}
