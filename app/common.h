/*
** common.h: helpers that the commands reading models and text share
** (`mtpe score`, `mtpe translate`, the editor's translation workers):
** reading lines, checking UTF-8, running worker threads, timing.
*/
#ifndef APP_COMMON_H
#define APP_COMMON_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "ensemble.h"
#include "mt.h"

/* getline() without the line end ('\n' and one '\r' before it); -1 at the
** end of the file (or on a read error: check ferror).  *buf as getline. */
ssize_t app_read_line(FILE *f, char **buf, size_t *cap);

/* MT_OK when s[0..n) is valid UTF-8, else MT_ERR_INVALID with the message
** "FILE:LINE: invalid UTF-8 at byte OFFSET". */
mt_status app_check_utf8(const char *s, size_t n, const char *file, int64_t line);

/* Runs fn(arg) on n threads (the caller's thread is one of them) and
** returns when all are done.  When threads cannot be created, the ones
** that could (at least the caller) do the work. */
void app_run_workers(int n, void *(*fn)(void *), void *arg);

/* Marian's alignment text (reference/marian-compat.md §5.5) of an attention
** matrix align[n_trg][n_src] (target rows, EOS included on both sides).
** how: "soft": each row's weights joined by ',', rows by ' ' ("%g");
** "hard" (or a threshold of 1): "s-t" with s the row's first maximum; a
** threshold 0 < T < 1: every "s-t" with weight > T; pairs sorted by (s, t)
** and joined by ' '. */
void app_print_alignment(FILE *f, const float *align, int32_t n_trg, int32_t n_src,
                         const char *how);

/* Single-threaded BLAS for worker threads (one graph each). */
void app_blas_single_threaded(void);

/* The directory of the default model: models/en-de in the assets directory
** (app_default_assets_dir: $MTPE_ASSETS, the installation's share/mtpe/assets
** or the source tree's assets/), written to dir; true when it holds
** model.npz.  *looked (may be NULL) receives the place tried, or why there
** is none, for the error message. */
bool app_default_model_dir(char *dir, size_t cap, char *looked, size_t looked_cap);
/* The same for the model folder models/NAME (e.g. "en-de-ape"). */
bool app_default_named_model_dir(const char *name, char *dir, size_t cap, char *looked,
                                 size_t looked_cap);


/* The model a benchmark measures: -m MODEL -v SRC TRG when given, else the
** default model, else the transformer-tiny test fixture (*which then says
** so: its numbers show overhead, not a real model's speed).  Paths go to
** model/vsrc/vtrg (PATH_MAX each).  Returns 0, 2 on a usage error, 1 when
** no model exists (messages on stderr, prefixed with cmd). */
struct app_opts;
int app_bench_model(const struct app_opts *o, const char *cmd, char *model, char *vsrc,
                    char *vtrg, const char **which);

/* True when path is a regular file (following links). */
bool app_is_file(const char *path);
/* The folder part of path ("." when it has none, "/" for a file in /). */
void app_dir_of(const char *path, char *dir, size_t cap);

/* The monotonic clock in seconds and in milliseconds (timings, timeouts). */
double app_now(void);
int64_t app_now_ms(void);
/* qsort comparator of doubles, ascending. */
int app_cmp_double(const void *a, const void *b);
/* The median of v[0..n), n >= 1 (sorts v). */
double app_median(double *v, int n);

#endif
