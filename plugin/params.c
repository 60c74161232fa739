/* SPDX-License-Identifier: BSD-3-Clause */
/* The plugin's parameters: each key=value nbdkit hands over is parsed and
 * range-checked here into struct raid_params, and the checks that need
 * several parameters run once they are all in (params_check).  Nothing
 * here opens, reads or writes a member: every error is reported before
 * array_open runs, naming the parameter and its value.  The parsing is
 * kept apart from the nbdkit glue so that it can be fuzzed
 * (tests/fuzz/fuzz_params.c).
 */

#include <config.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "params.h"

#define DEFAULT_CACHE (64 * 1024 * 1024)

void
params_init (struct raid_params *p)
{
  memset (p, 0, sizeof *p);
  p->array.level = 6;
  p->array.layout = LAYOUT_LEFT_SYMMETRIC;
  p->array.chunk = 512 * 1024;
  p->array.cache_bytes = DEFAULT_CACHE;
  p->max_read_errors = -1;
}

void
params_free (struct raid_params *p)
{
  free (p->control_path);
  p->control_path = NULL;
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

/* Bare words on the command line come here as disk= (magic_config_key). */
int
params_set (struct raid_params *p, const char *key, const char *value)
{
  if (strcmp (key, "disk") == 0) {
    if (p->array.ndisks == GEOMETRY_MAX_MEMBERS) {
      nbdkit_error ("disk=%s: at most %d members", value, GEOMETRY_MAX_MEMBERS);
      return -1;
    }
    p->array.disks[p->array.ndisks++] = value;
  }
  else if (strcmp (key, "spare") == 0) {
    if (p->nspares == MEMBERS_MAX_SPARES) {
      nbdkit_error ("spare=%s: at most %d spares", value, MEMBERS_MAX_SPARES);
      return -1;
    }
    if (strcmp (value, "missing") == 0) {
      nbdkit_error ("spare=%s: a spare must be a disk", value);
      return -1;
    }
    p->spares[p->nspares++] = value;
  }
  else if (strcmp (key, "level") == 0) {
    if ((p->array.level = parse_level (value)) == -1)
      return -1;
    p->array.set_level = true;
  }
  else if (strcmp (key, "metadata") == 0) {
    /* "auto" once meant raw mode when no member had a superblock; it is
     * kept as another name for md, which never guesses.
     */
    if (strcmp (value, "md") == 0 || strcmp (value, "auto") == 0)
      p->array.metadata = METADATA_MD;
    else if (strcmp (value, "none") == 0)
      p->array.metadata = METADATA_NONE;
    else {
      nbdkit_error ("metadata=%s: must be md or none", value);
      return -1;
    }
  }
  else if (strcmp (key, "create") == 0 || strcmp (key, "force") == 0) {
    int r = nbdkit_parse_bool (value);

    if (r == -1)
      return -1;
    *(key[0] == 'c' ? &p->array.create : &p->array.force) = r;
  }
  else if (strcmp (key, "layout") == 0) {
    int l = geometry_layout_parse (value);

    if (l == -1) {
      nbdkit_error ("layout=%s: unknown layout (left-asymmetric, "
                    "right-asymmetric, left-symmetric, right-symmetric, "
                    "parity-first, parity-last)", value);
      return -1;
    }
    p->array.layout = l;
    p->array.set_layout = true;
  }
  else if (strcmp (key, "chunk") == 0) {
    p->array.set_chunk = true;
    return parse_size_param (key, value, &p->array.chunk);
  }
  else if (strcmp (key, "data-offset") == 0) {
    p->array.set_data_offset = true;
    return parse_size_param (key, value, &p->array.data_offset);
  }
  else if (strcmp (key, "metadata-version") == 0) {
    if (strcmp (value, "1.0") == 0)
      p->array.metadata_minor = 0;
    else if (strcmp (value, "1.1") == 0)
      p->array.metadata_minor = 1;
    else if (strcmp (value, "1.2") == 0)
      p->array.metadata_minor = 2;
    else {
      nbdkit_error ("metadata-version=%s: must be 1.0, 1.1 or 1.2 (md's "
                    "version-1 superblocks; 0.90 and the firmware formats "
                    "are not supported)", value);
      return -1;
    }
    p->array.set_metadata_version = true;
  }
  else if (strcmp (key, "bitmap") == 0) {
    p->array.set_bitmap = true;
    if (strcmp (value, "none") == 0)
      p->array.no_bitmap = true;
    else if (strcmp (value, "internal") != 0) {
      nbdkit_error ("bitmap=%s: must be internal or none", value);
      return -1;
    }
  }
  else if (strcmp (key, "bitmap-chunk") == 0) {
    p->array.set_bitmap = true;
    if (parse_size_param (key, value, &p->array.bitmap_chunk) == -1)
      return -1;
    if (p->array.bitmap_chunk < 4096 || p->array.bitmap_chunk > UINT32_MAX / 2 + 1 ||
        (p->array.bitmap_chunk & (p->array.bitmap_chunk - 1))) {
      nbdkit_error ("bitmap-chunk=%s: must be a power of two from 4K to 2G",
                    value);
      return -1;
    }
  }
  else if (strcmp (key, "bitmap-delay") == 0) {
    p->array.set_bitmap = true;
    if (nbdkit_parse_uint32_t (key, value, &p->array.bitmap_delay) == -1)
      return -1;
    if (p->array.bitmap_delay < 1 || p->array.bitmap_delay > 24 * 3600) {
      nbdkit_error ("bitmap-delay=%s: must be 1 to 86400 seconds", value);
      return -1;
    }
  }
  else if (strcmp (key, "cache") == 0)
    return parse_size_param (key, value, &p->array.cache_bytes);
  else if (strcmp (key, "rebuild-rate") == 0)
    return parse_size_param (key, value, &p->array.rebuild_rate);
  else if (strcmp (key, "control") == 0) {
    free (p->control_path);
    p->control_path = nbdkit_absolute_path (value);
    if (p->control_path == NULL)
      return -1;
  }
  else if (strcmp (key, "readonly") == 0) {
    int r = nbdkit_parse_bool (value);

    if (r == -1)
      return -1;
    p->array.readonly = r;
  }
  else if (strcmp (key, "direct") == 0) {
    int r = nbdkit_parse_bool (value);

    if (r == -1)
      return -1;
    p->array.direct = r ? MEMBER_DIRECT_ON : MEMBER_DIRECT_OFF;
  }
  else if (strcmp (key, "parity") == 0)
    p->parity_impl = value;
  else if (strcmp (key, "readd") == 0) {
    if (strcmp (value, "auto") == 0)
      p->readd_auto = true;
    else if (strcmp (value, "manual") == 0)
      p->readd_auto = false;
    else {
      nbdkit_error ("readd=%s: must be manual or auto", value);
      return -1;
    }
  }
  else if (strcmp (key, "max-read-errors") == 0) {
    char *end;
    unsigned long n = strtoul (value, &end, 10);

    if (end == value || *end || *value == '-' || n > 1000000) {
      nbdkit_error ("max-read-errors=%s: must be a whole number from 0 to "
                    "1000000", value);
      return -1;
    }
    p->max_read_errors = n;
  }
  else if (strcmp (key, "member-timeout") == 0) {
    char *end;
    double s = strtod (value, &end);

    if (end == value || *end || !(s > 0 && s <= 86400)) {
      nbdkit_error ("member-timeout=%s: must be a number of seconds, "
                    "0 < t <= 86400", value);
      return -1;
    }
    p->member_timeout_ms = s * 1000;
  }
  else {
    nbdkit_error ("unknown parameter '%s'", key);
    return -1;
  }
  return 0;
}

int
params_check (const struct raid_params *p)
{
  const struct array_config *c = &p->array;

  if (c->create && c->metadata == METADATA_NONE) {
    nbdkit_error ("create=true writes md superblocks: it cannot go with "
                  "metadata=none");
    return -1;
  }
  if (c->set_metadata_version && c->metadata == METADATA_NONE) {
    nbdkit_error ("metadata-version chooses md superblocks: it cannot go "
                  "with metadata=none");
    return -1;
  }
  if (c->set_bitmap && !c->create) {
    nbdkit_error ("bitmap, bitmap-chunk and bitmap-delay choose the bitmap "
                  "of a new array: they need create=true (an existing "
                  "array keeps the bitmap its superblocks describe)");
    return -1;
  }
  if (c->no_bitmap && (c->bitmap_chunk || c->bitmap_delay)) {
    nbdkit_error ("bitmap=none: bitmap-chunk and bitmap-delay make no sense "
                  "without a bitmap");
    return -1;
  }
  if (c->ndisks == 0) {
    nbdkit_error ("no members: give disk=PATH once per member, in role order");
    return -1;
  }
  for (int i = 0; i < c->ndisks && c->create; i++)
    if (strcmp (c->disks[i], "missing") == 0) {
      nbdkit_error ("create=true: member %d is 'missing': a new array needs "
                    "every member", i);
      return -1;
    }
  return 0;
}
