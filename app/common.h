/*
** common.h: helpers that the commands reading models and text share
** (`mtpe score`, `mtpe translate`, the editor's translation workers):
** loading an ensemble with its vocabularies, reading lines, checking UTF-8,
** running worker threads.
*/
#ifndef APP_COMMON_H
#define APP_COMMON_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "model.h"
#include "mt.h"
#include "vocab.h"

#define APP_MAX_MODELS 8
#define APP_MAX_STREAMS (MT_MAX_STREAMS + 1) /* source streams + target */

/* An ensemble and its vocabularies (read-only once loaded: several threads
** may use it, each with its own graphs). */
typedef struct app_models {
    int n_models;
    mt_model *models[APP_MAX_MODELS];
    char *model_paths[APP_MAX_MODELS];
    float weights[APP_MAX_MODELS]; /* --weights, 1 each by default           */
    int n_src;                     /* source streams of the models           */
    int n_streams;                 /* n_src + 1 (the target last)            */
    mt_vocab *vocabs[APP_MAX_STREAMS];
    char *vocab_paths[APP_MAX_STREAMS];
    bool right_left; /* right-left: true in the models (all or none)            */
    bool borrowed;   /* app_models_borrow: models and vocabularies not owned    */
    bool shared;     /* borrowed: the target vocabulary is source 0's           */
} app_models;

/* Loads n_models models (weights NULL: all 1) and n_streams vocabularies
** (sources..., target).  The models must read the same number of source
** streams, have the same vocabulary sizes and the same direction (Marian:
** left-to-right and right-to-left models cannot be mixed); architectures may
** differ.  Vocabularies get the first model's dim-vocabs as their size
** limit.  Errors name the file: MT_ERR_INVALID (usage: counts, mismatches),
** or the loaders' errors.  On failure *m holds what was loaded: free it with
** app_models_free (also on success, when done). */
mt_status app_models_load(app_models *m, const char *const *model_paths, int n_models,
                          const float *weights, const char *const *vocab_paths, int n_vocabs);
void app_models_free(app_models *m); /* zeroes *m; safe on a zeroed struct */
/* One model and its vocabularies loaded elsewhere (e.g. the model being
** trained, for translating the validation set), not owned: app_models_free
** only forgets them.  shared_vocab: the target vocabulary is source 0's. */
void app_models_borrow(app_models *m, mt_model *model, mt_vocab *const *vocabs, bool shared_vocab);
/* True when the target vocabulary is the same file as source stream 0's
** (Marian adds the source ids to a shortlist then). */
bool app_models_shared_vocab(const app_models *m);

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


/* The model a benchmark measures: -m MODEL -v SRC TRG when given, else the
** default model, else the transformer-tiny test fixture (*which then says
** so: its numbers show overhead, not a real model's speed).  Paths go to
** model/vsrc/vtrg (PATH_MAX each).  Returns 0, 2 on a usage error, 1 when
** no model exists (messages on stderr, prefixed with cmd). */
struct app_opts;
int app_bench_model(const struct app_opts *o, const char *cmd, char *model, char *vsrc,
                    char *vtrg, const char **which);

/* The monotonic clock in seconds and in milliseconds (timings, timeouts). */
double app_now(void);
int64_t app_now_ms(void);
/* qsort comparator of doubles, ascending. */
int app_cmp_double(const void *a, const void *b);
/* The median of v[0..n), n >= 1 (sorts v). */
double app_median(double *v, int n);

#endif
