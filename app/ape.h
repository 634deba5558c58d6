/*
** ape.h: automatic post-editing (APE) models, as `mtpe postedit`,
** `mtpe translate --ape DIR` and `mtpe edit --ape DIR` use them (issue 34).
**
** An APE model is a multi-source model (Marian's multi-transformer) reading
** two inputs, the source sentence and a machine translation of it, and
** writing the post-edited translation: {src, mt} -> pe.
**
** A model folder (the default model's assets/models/en-de, an APE model's
** assets/models/en-de-ape, or any DIR given to --ape) holds:
**
**   model.npz              the model (required)
**   decoder.yml            decoding options, keys as `mtpe translate`'s
**                          options (optional; model.npz.decoder.yml, the
**                          name training writes, is read when decoder.yml is
**                          missing); of its "vocabs" only the file names
**                          count: they are files of the folder
**   vocab.spm              the vocabulary of every stream when the config
**                          names none
**
** Fields of the config read here (app_model_dir_resolve; YAML, the other
** keys are left to the command that merges the whole file):
**
**   vocabs: [a, b, ...]    vocabularies, sources then target
**   beam-size: N           the beam of the editor's APE (default 4)
**   normalize: X           its length normalisation (default 1)
*/
#ifndef APP_APE_H
#define APP_APE_H
#include <limits.h>
#include <stdbool.h>

#include "ensemble.h"
#include "mt.h"

/* The files of a model folder. */
typedef struct app_model_dir {
    char model[PATH_MAX];                 /* DIR/model.npz                      */
    char config[PATH_MAX];                /* DIR/decoder.yml, or "" when none    */
    char vocabs[MT_MAX_VOCABS][PATH_MAX]; /* in DIR                           */
    int n_vocabs;
    int beam_size;   /* from the config, else 4 */
    float normalize; /* from the config, else 1 */
} app_model_dir;

/* Resolves the folder dir; n_default: how many times vocab.spm is listed
** when the config names no vocabularies (2 for a translation model, 3 for
** an APE model).  MT_ERR_NOTFOUND naming the file when dir or model.npz is
** missing; the config's errors (MT_ERR_FORMAT, MT_ERR_INVALID naming it). */
mt_status app_model_dir_resolve(const char *dir, int n_default, app_model_dir *out);

/* Loads an APE model: paths as mt_ensemble_load (one model, no weights).
** A model that does not read two inputs is MT_ERR_INVALID "MODEL reads N
** input(s): an APE model reads 2 (the source and the MT)"; what was loaded
** is in *m either way (free with mt_ensemble_free). */
mt_status app_ape_load(mt_ensemble *m, const char *model, const char *const *vocabs, int n_vocabs);

/* True when a model reading n_src inputs can be an APE model (n_src == 2);
** otherwise sets the error above for model and returns false. */
bool app_ape_check(const char *model, int n_src);

/* The default APE model folder: models/en-de-ape in the assets directory
** (see app_default_model_dir), written to dir; true when it holds
** model.npz.  *looked receives the place tried. */
bool app_default_ape_dir(char *dir, size_t cap, char *looked, size_t looked_cap);

#endif
