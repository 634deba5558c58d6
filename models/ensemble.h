/*
** ensemble.h: the models of an ensemble and their vocabularies, loaded and
** checked together (`mtpe translate`, `mtpe score`, the editor, the
** benchmarks; Marian's -m A B --weights ... -v SRC... TRG).
*/
#ifndef MT_ENSEMBLE_H
#define MT_ENSEMBLE_H
#include <stdbool.h>

#include "model.h"
#include "mt.h"
#include "vocab.h"

#define MT_MAX_MODELS 8
#define MT_MAX_VOCABS (MT_MAX_STREAMS + 1) /* source streams + target */

/* An ensemble and its vocabularies (read-only once loaded: several threads
** may use it, each with its own graphs). */
typedef struct mt_ensemble {
    int n_models;
    mt_model *models[MT_MAX_MODELS];
    char *model_paths[MT_MAX_MODELS];
    float weights[MT_MAX_MODELS]; /* --weights, 1 each by default           */
    int n_src;                    /* source streams of the models           */
    int n_streams;                /* n_src + 1 (the target last)            */
    mt_vocab *vocabs[MT_MAX_VOCABS];
    char *vocab_paths[MT_MAX_VOCABS];
    bool right_left; /* right-left: true in the models (all or none)            */
    bool borrowed;   /* mt_ensemble_borrow: models and vocabularies not owned    */
    bool shared;     /* borrowed: the target vocabulary is source 0's           */
} mt_ensemble;

/* Loads n_models models (weights NULL: all 1) and n_streams vocabularies
** (sources..., target).  The models must read the same number of source
** streams, have the same vocabulary sizes and the same direction (Marian:
** left-to-right and right-to-left models cannot be mixed); architectures may
** differ.  Vocabularies get the first model's dim-vocabs as their size
** limit.  Errors name the file: MT_ERR_INVALID (usage: counts, mismatches),
** or the loaders' errors.  On failure *m holds what was loaded: free it with
** mt_ensemble_free (also on success, when done). */
mt_status mt_ensemble_load(mt_ensemble *m, const char *const *model_paths, int n_models,
                           const float *weights, const char *const *vocab_paths, int n_vocabs);
void mt_ensemble_free(mt_ensemble *m); /* zeroes *m; safe on a zeroed struct */
/* One model and its vocabularies loaded elsewhere (e.g. the model being
** trained, for translating the validation set), not owned: mt_ensemble_free
** only forgets them.  shared_vocab: the target vocabulary is source 0's. */
void mt_ensemble_borrow(mt_ensemble *m, mt_model *model, mt_vocab *const *vocabs,
                        bool shared_vocab);
/* True when the target vocabulary is the same file as source stream 0's
** (Marian adds the source ids to a shortlist then). */
bool mt_ensemble_shared_vocab(const mt_ensemble *m);

#endif
