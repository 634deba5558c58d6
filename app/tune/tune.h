/*
** tune.h: `mtpe tune`, continued training of a model on the translator's
** confirmed segments (the learning loop), measured before and after.
**
** A run, in order:
**   1. data: every confirmed segment of the store (or of one document, or
**      since a time), repeated (source, target) pairs once.  Fewer than
**      min_segments: refused (MT_ERR_INVALID) before anything is written.
**   2. held out: the pairs whose source's digest is lowest (about
**      heldout_frac of them, at least 5) are never trained on; all pairs of
**      one source fall on the same side.  They, and a sample of the general
**      dev set, are translated by the base model (BLEU, chrF, TER).
**   3. training: `mtpe train` in a child process (so that a crash or OOM of
**      training cannot hurt the caller; it dies with the caller) continues
**      a copy of the base model on one epoch of a file that holds the
**      training pairs `epochs` times and a replay sample of general data
**      (replay_ratio times as many pairs, different ones each repetition),
**      with a fresh Adam, a constant learning rate after a short warm-up,
**      and dropout.  Defaults come from the data size (tune.c: choose()).
**      A time limit stops it early (SIGTERM: it saves first).
**   4. the tuned model translates the same held-out and dev sample; it is
**      "accepted" when the held-out BLEU improved and the dev BLEU fell by
**      at most dev_bound.  The result is a complete model folder either way
**      (the caller decides whether to use it): model.npz (Marian format),
**      vocab.spm, decoder.yml (relative paths: `mtpe translate -c
**      DIR/decoder.yml`), tune.json (base model, data, steps, metrics),
**      README.md, train.log and data/ (the files trained and tested on).
**
** Safety: the folder is built as DIR.tune-tmp and renamed to DIR at the end;
** the base model is only read.  The run is a finetune_run row of the store:
** RUNNING while it works (log_path: DIR.tune-tmp/train.log, whose folder
** holds a lock file the run keeps locked), then DONE (output model
** registered), FAILED or CANCELLED.  A run killed at any moment leaves its
** row RUNNING and its lock free: app_tune_recover (called at the start of
** every tune and of the editor) marks such rows FAILED and removes their
** temporary folders.
*/
#ifndef APP_TUNE_H
#define APP_TUNE_H
#include <stdbool.h>
#include <stdint.h>

#include "mt.h"
#include "store.h"

typedef struct app_tune_params {
    const char *db_path;   /* the store                                  */
    const char *model;     /* base model (.npz)                          */
    const char *vocabs[2]; /* source, target                             */
    int32_t beam_size;     /* evaluation decoding                        */
    float normalize;
    const char *out_dir; /* must not exist                              */
    const char *doc;     /* only this document's path; NULL: all        */
    int64_t since_ms;    /* only confirmed at or after; INT64_MIN: all  */
    const char *replay[2];
    double replay_ratio; /* general pairs per training pair              */
    const char *dev[2];  /* general dev set; NULL: none                  */
    int32_t dev_size;    /* lines sampled from it                        */
    double heldout_frac;
    int32_t min_segments;
    double learn_rate;   /* 0: chosen from the data                      */
    int32_t epochs;      /* 0: chosen from the data                      */
    double dropout;      /* --transformer-dropout of training            */
    int32_t batch_words; /* --mini-batch-words of training               */
    double mix[8];       /* weights of the tuned model in the mixes tried */
    int n_mix;
    double max_seconds; /* training time limit (0: none)                */
    double dev_bound;   /* largest dev BLEU loss still accepted         */
    int32_t threads;
    uint64_t seed;
    const char *precision; /* "float32", "bfloat16"; NULL: the faster    */
    int progress_fd;       /* >= 0: "progress ..." lines (below)         */
    bool quiet;            /* no report on stderr                        */
} app_tune_params;

app_tune_params app_tune_default_params(void);

typedef struct app_tune_scores {
    double bleu, chrf, ter;
} app_tune_scores;

typedef struct app_tune_result {
    int64_t run_id;
    int32_t n_segments, n_train, n_heldout, n_replay, n_dev;
    int32_t epochs;
    double learn_rate;
    int64_t updates;
    double train_seconds, seconds;
    bool stopped_by_time;
    app_tune_scores heldout_before, heldout_after, dev_before, dev_after;
    double alpha; /* the mix chosen */
    int n_mix;
    double mix_alpha[8];
    app_tune_scores mix_heldout[8], mix_dev[8];
    bool accepted;
    char verdict[256]; /* why accepted or not, one line                  */
} app_tune_result;

/* Runs a tune as above.  MT_OK: the folder exists (accepted or not, see
** r->accepted); MT_ABORTED: cancelled (SIGINT/SIGTERM); errors name what
** failed (the run row FAILED when one was begun). */
mt_status app_tune_run(const app_tune_params *p, app_tune_result *r);

/* Marks the store's RUNNING runs whose process is gone FAILED ("interrupted")
** and removes their temporary folders; *n (may be NULL): how many. */
mt_status app_tune_recover(store *s, int *n);

/* Removes the temporary folders (*.tune-tmp) in dir that no running tune
** holds (runs killed before the store recorded them). */
void app_tune_clean_dir(const char *dir);

/* Translates src[0..n) with a model and its two vocabularies (beam size,
** normalisation and threads of p); out[i] (caller mt_frees) get the best
** translations. */
mt_status app_tune_translate(const char *model, const char *const *vocabs, const app_tune_params *p,
                             char *const *src, int32_t n, char **out);
/* Corpus BLEU, chrF and TER of hyp against ref. */
mt_status app_tune_score(char *const *hyp, char *const *ref, int32_t n, app_tune_scores *s);

/* app_tune_translate + app_tune_score of two line-aligned files. */
mt_status app_tune_score_files(const char *model, const char *const *vocabs,
                               const app_tune_params *p, const char *src, const char *ref,
                               app_tune_scores *s);

/* out = base + alpha (tuned - base), weight by weight (float32 items of
** the same name and size; the rest as tuned has them). */
mt_status app_tune_mix(const char *base, const char *tuned, double alpha, const char *out);

/* Progress lines written to progress_fd, one per event, fields by spaces:
**   progress STAGE UPDATE TOTAL ELAPSED ETA   (STAGE: before, train, after;
**                                            seconds; ETA -1 when unknown)
**   done accepted|rejected DIR HB HA DB DA     (held-out and dev BLEU before
**                                            and after; "-" for no dev)
**   failed MESSAGE
*/

#endif
