/* SPDX-License-Identifier: BSD-3-Clause */
/* Creating an md array (create=true): superblocks mdadm accepts.
 *
 * Fresh superblocks of version metadata-version (1.2 unless given) with a
 * new UUID, md's defaults (left-symmetric, 512K chunk unless given) and
 * a 1 MiB data offset unless data-offset is given (v1.0: the data at 0,
 * the bitmap and the superblock after it, at the end of each member);
 * members that already carry a superblock are refused unless force=true,
 * and superblocks of the other versions on them are zeroed when the new
 * ones are written, as mdadm does (so is a replacement's: md_array.c).
 * The new array is resynchronised in the background.  It gets an
 * internal write-intent bitmap unless bitmap=none.  Everything is
 * checked and laid out in memory at config_complete, but nothing is
 * written before md_array_after_fork: between the two nbdkit binds its
 * own socket and writes its pid file, and a failure there must leave the
 * members as they were.
 *
 * Two steps.  md_create_check_members runs inside md_array_assemble,
 * which with create=true reads every superblock place of every member
 * (md_assemble.c: read_minor) and keeps none of them: the members must
 * be blank of every format we know unless force=true (refuse_foreign),
 * and for v1.0 the data must end before the bitmap's room and the
 * smallest member's superblock (create_room), which md_array_assemble
 * returns as the member size.  md_array_create, once the geometry is
 * known, lays the superblocks out in md->sb and the bitmap
 * (create_bitmap), gives every member a new device UUID and marks it to
 * be wiped of other versions (wipe), and leaves the array
 * create_pending: md_array.c's md_array_after_fork writes the
 * superblocks through its update path.  This file uses nothing of
 * md_array.c; the struct it makes is the one serving keeps true.
 */

#include <config.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "md_array_internal.h"
#include "md_bitmap.h"
#include "md_super.h"
#include "member_table.h"
#include "signature.h"

/* create=true without force=true: every member must be blank of any
 * format we know (an md superblock, a partition table, a filesystem, ...).
 */
static int
refuse_foreign (struct members *ms, const struct array_config *cfg,
                const struct md_super *sbs)
{
  for (int i = 0; i < ms->n; i++) {
    const char *what = NULL;

    if (sbs[i].role == -2)      /* missing, or unreadable: failed */
      continue;
    if (sbs[i].role == -3 &&
        signature_probe (members_at (ms, i), &what) == -1) {
      nbdkit_error ("member %s: cannot read it: %m", cfg->disks[i]);
      return -1;
    }
    if (sbs[i].role >= -1)
      what = sbs[i].minor == 0 ? "an md v1.0 superblock"
        : sbs[i].minor == 1 ? "an md v1.1 superblock" : "an md v1.2 superblock";
    if (what) {
      nbdkit_error ("member %s already carries %s: refusing to overwrite it "
                    "without force=true", cfg->disks[i], what);
      return -1;
    }
  }
  return 0;
}


#define BITMAP_DEFAULT_CHUNK (64 * 1024 * 1024)
#define BITMAP_DEFAULT_ROOM (128 * 1024)
#define BITMAP_DEFAULT_DELAY 5

/* The bitmap chunk for `size` bytes per member and `room` bytes of area. */
static uint64_t
default_bitmap_chunk (uint64_t size, uint64_t room)
{
  uint64_t chunk;

  if (room > BITMAP_DEFAULT_ROOM)
    room = BITMAP_DEFAULT_ROOM;
  for (chunk = BITMAP_DEFAULT_CHUNK;
       md_bitmap_area_bytes (md_bitmap_bits (size, chunk)) > room;
       chunk *= 2)
    ;
  return chunk;
}

/* The smallest v1.0 superblock place of the members (bytes). */
static uint64_t
lowest_v10_place (struct members *ms)
{
  uint64_t low = UINT64_MAX;

  for (int i = 0; i < ms->n; i++) {
    uint64_t at = md_super_location (0, members_at (ms, i)->size);

    if (at < low)
      low = at;
  }
  return low;
}

/* v1.0, create=true: where the data must end on every member (bytes),
 * leaving the bitmap's room before the lowest superblock: the area a
 * bitmap of the chosen (or default) chunk takes for data reaching that
 * superblock, which is at least what it takes for the data that fits.
 * 0 (after nbdkit_error) if the members are too small.
 */
static uint64_t
create_room (struct members *ms, const struct array_config *cfg)
{
  uint64_t low = lowest_v10_place (ms), room = 0, chunk;

  if (low == UINT64_MAX || low < 4096) {
    nbdkit_error ("create=true: metadata-version=1.0: a member is too small "
                  "for a superblock at its end");
    return 0;
  }
  if (!cfg->no_bitmap) {
    chunk = cfg->bitmap_chunk ? cfg->bitmap_chunk
      : default_bitmap_chunk (low, BITMAP_DEFAULT_ROOM);
    room = md_bitmap_area_bytes (md_bitmap_bits (low, chunk));
    if (room >= low) {
      nbdkit_error ("create=true: metadata-version=1.0: no room for the "
                    "write-intent bitmap before the superblock (give a "
                    "bigger bitmap-chunk, or bitmap=none)");
      return 0;
    }
  }
  return low - room;
}


int
md_create_check_members (struct members *ms, const struct array_config *cfg,
                         const struct md_super *sbs, uint64_t *member_bytes)
{
  int r = cfg->force ? 0 : refuse_foreign (ms, cfg, sbs);

  if (r == 0 && cfg->set_metadata_version && cfg->metadata_minor == 0 &&
      (*member_bytes = create_room (ms, cfg)) == 0)
    r = -1;
  return r;
}

/* A new internal bitmap where mdadm places it: 4 KiB after the
 * superblock (8 KiB from the start for v1.2, 4 KiB for v1.1), or for
 * v1.0 right before the superblock, in the room md_array_assemble left
 * between the data and the superblock of the smallest member
 * (create_room).  Its chunk, unless given, is mdadm's default: 64 MiB,
 * doubled until the bitmap takes at most 128 KiB.  If there is no room
 * for it, the array has none, unless one was asked for.
 */
static int
create_bitmap (struct md_array *md, const struct array_config *cfg)
{
  struct md_super *sb = &md->sb;
  struct md_bitmap_place place = {
    .minor = sb->minor, .data_offset = sb->data_offset, .size = sb->size,
    .chunk = sb->chunk,
  };
  uint64_t after = md_super_location (sb->minor, UINT64_MAX) + MD_SB_BYTES;
  uint64_t room, chunk = cfg->bitmap_chunk;
  const char *why;

  if (sb->minor == 0)
    room = lowest_v10_place (md->ms) - (sb->data_offset + sb->size);
  else
    room = sb->data_offset < after ? 0 : sb->data_offset - after;
  if (room < 4096) {
    if (!cfg->set_bitmap) {     /* only the default: go without, as mdadm */
      nbdkit_debug ("raid: create: no room for a bitmap before data-offset");
      return 0;
    }
    nbdkit_error ("create=true: data-offset leaves no room for a write-intent "
                  "bitmap (give a bigger data-offset, or bitmap=none)");
    return -1;
  }
  if (chunk == 0)
    chunk = default_bitmap_chunk (sb->size, room);
  if (sb->minor == 0)
    /* Right before each member's superblock: the area's size in sectors. */
    place.bitmap_offset = -(int32_t) (md_bitmap_area_bytes
                                      (md_bitmap_bits (sb->size, chunk)) / 512);
  else
    place.bitmap_offset = MD_SB_BYTES / 512;
  md->bitmap = md_bitmap_new (md->ms, &place, sb->set_uuid, chunk,
                              cfg->bitmap_delay ? cfg->bitmap_delay
                              : BITMAP_DEFAULT_DELAY, &why);
  if (md->bitmap == NULL) {
    nbdkit_error ("create=true: write-intent bitmap: %s%s", why,
                  cfg->bitmap_chunk ? " (give a bigger bitmap-chunk or "
                  "data-offset)" : "");
    return -1;
  }
  sb->feature_map |= MD_FEATURE_BITMAP;
  sb->bitmap_offset = place.bitmap_offset;
  md->bitmap_sectors = md_bitmap_area_bytes (md_bitmap_bits (sb->size,
                                                             chunk)) / 512;
  nbdkit_debug ("raid: bitmap: %" PRIu64 " bytes per bit", chunk);
  return 0;
}

/* A bad-block log for every member where mdadm --create reserves one
 * (md_badblocks_create_place): on v1.1 and v1.2, 8 sectors after the
 * bitmap's room.  Not on v1.0, where mdadm puts it right before the
 * superblock and the bitmap before it, while this plugin's v1.0 bitmap
 * lies right before the superblock: its members have none, and md fails
 * a member of such an array where it would record a bad block, as it
 * does on any member without a log.  -1 (ENOMEM) after nbdkit_error.
 */
static int
create_bblogs (struct md_array *md)
{
  struct md_super *sb = &md->sb;
  struct md_badblocks_place place;

  if (sb->minor == 0)
    return 0;
  place = md_badblocks_create_place (sb->minor,
                                     md_super_location (sb->minor,
                                                        UINT64_MAX) / 512,
                                     sb->data_offset / 512, sb->size / 512,
                                     md->bitmap_sectors);
  if (md_badblocks_place_none (&place))
    return 0;
  sb->bblog_offset = place.offset;
  sb->bblog_size = place.sectors;
  for (int i = 0; i < md->ms->n; i++) {
    struct member *m = members_at (md->ms, i);

    md->bblog[i] = place;
    if ((m->bad_blocks = md_badblocks_new (place.sectors,
                                           m->size / 512)) == NULL) {
      nbdkit_error ("create=true: bad-block log: %m");
      return -1;
    }
  }
  return 0;
}

int
md_array_create (struct members *ms, const struct geometry *g,
                 const struct array_config *cfg, struct md_array **mdp)
{
  struct md_array *md = calloc (1, sizeof *md);
  struct md_super *sb;

  if (md == NULL) {
    nbdkit_error ("calloc: %m");
    return -1;
  }
  md->ms = ms;
  md->rows = g->stripes;
  sb = &md->sb;
  getrandom (sb->set_uuid, 16, 0);
  strcpy (sb->set_name, "nbdkit-raid");
  sb->minor = cfg->set_metadata_version ? cfg->metadata_minor : 2;
  sb->level = g->level;
  sb->layout = g->layout;
  sb->chunk = g->chunk;
  sb->raid_disks = ms->n;
  sb->size = g->stripes * g->chunk;
  sb->data_offset = g->data_offset;
  sb->data_size = sb->size;
  sb->ctime = sb->utime = time (NULL);
  sb->events = 0;
  sb->max_dev = ms->n;
  for (int i = 0; i < MD_MAX_DEV; i++)
    sb->dev_roles[i] = MD_ROLE_SPARE;
  for (int i = 0; i < ms->n; i++) {
    md->dev_number[i] = i;
    sb->dev_roles[i] = i;
    getrandom (md->device_uuid[i], 16, 0);
    md->written_as[i] = members_at (ms, i)->serial;
    md->wipe[i] = members_at (ms, i)->serial;
  }
  pthread_mutex_init (&md->lock, NULL);
  md->needs_resync = true;
  md->create_pending = true;    /* written by md_array_after_fork */
  *mdp = md;
  if (!cfg->no_bitmap && create_bitmap (md, cfg) == -1)
    return -1;
  return create_bblogs (md);
}
