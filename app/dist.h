/*
** dist.h: the processes of an MPI job (Open MPI), for data-parallel
** training (cmd_train.c) and sharded batch translation (cmd_translate.c).
** Every MPI call of mtpe is in dist.c; built without MPI (CMake
** MT_MPI=OFF, or AUTO without libopenmpi-dev) the same functions describe
** a job of one process: rank 0 of 1, sums and broadcasts that change
** nothing.
**
** MPI is started only by the commands that use it (train, translate), and
** only when the process was launched by mpirun/srun (OMPI_COMM_WORLD_SIZE,
** PMI_SIZE or PMIX_RANK in the environment): `mtpe edit`, `mtpe --help`
** and a plain `mtpe train` never pay MPI_Init's start-up.  A build without
** MPI started by mpirun with more than one process refuses to run (each
** copy would train alone and write the same files).
**
** Errors: an MPI call that fails (a process of the job was killed, the
** network failed) prints one line on stderr,
**   mtpe train: rank R of N: MPI error in OPERATION: TEXT (...)
** and aborts the whole job (MPI_Abort): the other processes are ended by
** mpirun and the files already written stay as they were (checkpoints are
** written to temporary files and renamed).  app_dist_abort does the same
** after a command's own error on one rank, so that no process waits forever
** for a peer that has given up.
**
** The collective functions must be called by every process in the same
** order; they return MT_OK or never return (abort).  Point-to-point
** messages (app_dist_send/recv) are ordered per pair of processes.  Calls
** may come from any thread, but from one thread at a time
** (MPI_THREAD_SERIALIZED).
*/
#ifndef MT_APP_DIST_H
#define MT_APP_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mt.h"

/* Starts MPI when launched by mpirun and MPI is built in; cmd names the
** command in messages ("train").  MT_ERR_UNSUPPORTED (message set) when
** mpirun started several processes of a build without MPI. */
mt_status app_dist_init(const char *cmd);
/* MPI_Finalize when app_dist_init started MPI; else nothing. */
void app_dist_finalize(void);

int app_dist_rank(void);   /* 0 without MPI */
int app_dist_size(void);   /* 1 without MPI */
bool app_dist_built(void); /* whether this build has MPI */

/* Ends the whole job with exit code code (after the caller printed why). */
_Noreturn void app_dist_abort(int code);

void app_dist_barrier(void);
/* Collective: the lowest rank that passed failed = true, or -1 when none
** did.  Lets a command end on every process after a failure at a point
** all reach (setup), with one message (from that rank) and no MPI_Abort. */
int app_dist_first_failed(bool failed);
/* In-place sums over all processes (every process gets the same sum). */
void app_dist_sum_f64(double *v, int n);
void app_dist_sum_f32(float *v, int64_t n);
/* bytes from root to all. */
void app_dist_bcast(void *buf, size_t bytes, int root);
/* A buffer of root's (*buf, *len) to all: the others get a copy in a new
** mt_xmalloc'd buffer (NUL-terminated; *len without the NUL). */
void app_dist_bcast_alloc(char **buf, size_t *len, int root);
/* One message to process to; app_dist_recv receives the next one from
** process from, in a new mt_xmalloc'd buffer (NUL-terminated). */
void app_dist_send(int to, const void *buf, size_t len);
void app_dist_recv(int from, char **buf, size_t *len);

/* Gradient all-reduce: the sum over all processes of every trainable
** parameter's gradient of p (in parameter order), written back into each.
** How (MTPE_ALLREDUCE, read once):
**   flat     (default) packed into one float buffer, one MPI_Allreduce
**   tensor   one MPI_Allreduce per gradient tensor, in place
**   chunk:N  packed, then MPI_Allreduce over chunks of N floats
** A barrier first: *wait (may be NULL) gets the time spent waiting there
** for the slowest process, *seconds (may be NULL) the time of the sums
** (copies included). */
mt_status app_dist_sum_grads(mt_params *p, double *wait, double *seconds);
/* The mode's name ("flat", "tensor", "chunk:1048576"). */
const char *app_dist_allreduce_mode(void);

#endif
