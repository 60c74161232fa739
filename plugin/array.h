/* The array: members, geometry and stripe cache, and the splitting of
 * client requests into per-row work; see array.c.
 */

#ifndef RAID_ARRAY_H
#define RAID_ARRAY_H

#include <stdbool.h>
#include <stdint.h>

#include "geometry.h"
#include "member.h"
#include "stripe.h"
#include "rebuild.h"

/* md: v1.2 superblocks, required (the default); none: raw mode, the
 * parameters are the whole truth.  Never guessed from the members.
 */
enum metadata_mode { METADATA_MD, METADATA_NONE };

struct array_config {
  enum metadata_mode metadata;
  bool create, force;           /* write fresh md superblocks */
  bool no_bitmap, set_bitmap;   /* create: bitmap=none; bitmap-* given */
  uint64_t bitmap_chunk;        /* create: bytes per bit, 0 = md's default */
  uint32_t bitmap_delay;        /* create: seconds, 0 = md's default */
  bool set_level, set_layout, set_chunk, set_data_offset; /* given explicitly */
  int level;
  enum geometry_layout layout;
  uint64_t chunk;
  uint64_t data_offset;
  uint64_t cache_bytes;
  uint64_t rebuild_rate;        /* bytes/s, 0 = unlimited */
  bool direct;
  bool readonly;                /* nbdkit -r or readonly=true: write nothing */
  int ndisks;
  const char *disks[GEOMETRY_MAX_MEMBERS];
};

struct array {
  struct geometry g;
  int nmembers;
  /* The member of each role.  A replace publishes a new member while
   * requests, jobs and the bitmap thread read the table, so every slot is
   * atomic (a plain access is a sequentially consistent one); a reader
   * that uses a member more than once loads it once into a local, and may
   * use it only inside an array_enter/array_exit section (rebuild.c).
   */
  struct member *_Atomic members[GEOMETRY_MAX_MEMBERS];
  struct stripe_cache *cache;
  bool direct;
  bool readonly;                /* nothing is written to any member */
  bool can_punch, can_zero_range;  /* cleared on the first EOPNOTSUPP */
  uint64_t rebuild_rate;

  struct md_array *md;          /* NULL in raw mode; see md_array.c */
  pthread_mutex_t job_lock;     /* see rebuild.c */
  pthread_cond_t job_wake;      /* with job_lock: a stop request */
  struct array_job *job;        /* the running job or NULL; under job_lock */
  pthread_t job_thread;
  bool job_joinable;            /* job_thread is still to be joined */
  bool scrubbed;                /* scrub_job holds the last scrub's result */
  struct array_job rebuild_job, scrub_job;     /* the last of each kind */
  int nretired;                 /* members set aside at assembly
                                   (md_array.c), closed at close */
  struct member *retired[GEOMETRY_MAX_MEMBERS * 4];

  /* Reclaiming replaced members (rebuild.c): readers of members[] count
   * themselves in readers[epoch & 1] (array_enter); a replaced member
   * waits in limbo, under job_lock, until no reader can hold it.
   */
  uint64_t epoch;               /* atomic; changed under job_lock */
  uint64_t readers[2];          /* atomic */
  int nlimbo;                   /* under job_lock */
  struct { struct member *m; uint64_t epoch; } limbo[ARRAY_MAX_LIMBO];
};

/* A reader of a->members[] (a request, a job's row, a bitmap pass) works
 * between array_enter and array_exit: no member it found there is closed
 * meanwhile.  Never blocks, allocates nothing; nests.  See rebuild.c.
 */
unsigned array_enter (struct array *a);
void array_exit (struct array *a, unsigned token);

/* Open and check every member; nbdkit_error says what is wrong.  Nothing
 * is written to any member (create=true writes at array_after_fork).
 */
struct array *array_open (const struct array_config *cfg);
/* In the serving process: start what runs in the background. */
int array_after_fork (struct array *a);
void array_close (struct array *a);

int array_read (struct array *a, void *buf, uint64_t count, uint64_t offset);
int array_write (struct array *a, const void *buf, uint64_t count,
                 uint64_t offset, bool fua);
/* Zero the range.  may_trim: holes are fine.  fast: fail with ENOTSUP,
 * before changing anything, unless it can be done without writing data.
 */
int array_zero (struct array *a, uint64_t count, uint64_t offset,
                bool may_trim, bool fast, bool fua);
int array_trim (struct array *a, uint64_t count, uint64_t offset, bool fua);
int array_flush (struct array *a);

/* NULL if the array can serve m's alignment (member.h), else why not. */
const char *array_cannot_align (const struct array *a, const struct member *m);

/* How many members may fail (1 or 2), and how many have. */
int array_tolerance (const struct array *a);
int array_failed_members (const struct array *a);

#endif /* RAID_ARRAY_H */
