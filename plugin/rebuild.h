/* Operator actions and background repair jobs; see rebuild.c. */

#ifndef RAID_REBUILD_H
#define RAID_REBUILD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct array;

enum job_kind { JOB_REBUILD, JOB_SCRUB };

#define ARRAY_MAX_BAD_DATA 64

struct array_job {
  pthread_t thread;
  bool joinable, running, stop;
  enum job_kind kind;
  double start;
  /* rebuild */
  int member;
  uint64_t first_row;
  /* scrub; resync: of the rows an unclean shutdown left to check */
  bool repair, resync, scrubbed, scrub_finished;
  uint64_t rows_done, rows_total, mismatch_cnt;
  size_t nbad;
  struct { uint64_t stripe; int member; } bad[ARRAY_MAX_BAD_DATA];
};

/* Each returns 0, or -1 with a static message in *why. */
int array_fail_member (struct array *a, int i, char **why);
/* force: even a disk that carries another array or format (see
 * md_array_foreign).
 */
int array_replace_member (struct array *a, int i, const char *name,
                          bool force, char **why);
int array_scrub_start (struct array *a, bool repair, char **why);
int array_resync_start (struct array *a, char **why);
void array_scrub_stop (struct array *a);
void array_status_json (struct array *a, FILE *f);
void array_jobs_stop (struct array *a);
/* A member being rebuilt, or -1. */
int array_rebuilding_member (const struct array *a);
/* Start rebuilding members found half rebuilt at start-up. */
int array_rebuild_resume (struct array *a);

#endif /* RAID_REBUILD_H */
