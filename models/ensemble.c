/*
** ensemble.c: loading the models of an ensemble with their vocabularies
** (see ensemble.h).
*/
#include <string.h>

#include "ensemble.h"

static char *dup_path(const char *p) {
    char *s = mt_try_strdup(p);
    if (s == NULL) mt_seterr(MT_ERR_NOMEM, "out of memory");
    return s;
}

mt_status mt_ensemble_load(mt_ensemble *m, const char *const *model_paths, int n_models,
                           const float *weights, const char *const *vocab_paths, int n_vocabs) {
    memset(m, 0, sizeof *m);
    if (n_models < 1) return mt_seterr(MT_ERR_INVALID, "no model given (-m MODEL)");
    if (n_models > MT_MAX_MODELS)
        return mt_seterr(MT_ERR_INVALID, "%d models: at most %d", n_models, MT_MAX_MODELS);
    for (int i = 0; i < n_models; i++) {
        m->weights[i] = weights ? weights[i] : 1.0f;
        m->model_paths[i] = dup_path(model_paths[i]);
        if (m->model_paths[i] == NULL) return MT_ERR_NOMEM;
        mt_status rc = mt_model_load(model_paths[i], NULL, &m->models[i]);
        if (rc != MT_OK) return rc;
        m->n_models = i + 1;
        const mt_model_config *c = mt_model_get_config(m->models[i]);
        const mt_model_config *c0 = mt_model_get_config(m->models[0]);
        if (i == 0) {
            m->n_src = mt_model_n_src(m->models[0]);
            m->n_streams = m->n_src + 1;
            m->right_left = c->right_left;
        } else if (mt_model_n_src(m->models[i]) != m->n_src || c->n_vocabs != c0->n_vocabs ||
                   memcmp(c->dim_vocabs, c0->dim_vocabs, sizeof c->dim_vocabs) != 0) {
            return mt_seterr(MT_ERR_INVALID,
                             "%s: the ensemble's models must read the same inputs with "
                             "the same vocabularies (dim-vocabs differ from %s)",
                             model_paths[i], model_paths[0]);
        } else if (c->right_left != m->right_left) {
            return mt_seterr(MT_ERR_INVALID,
                             "left-to-right and right-to-left models cannot be mixed (%s)",
                             model_paths[i]);
        }
    }
    if (n_vocabs != m->n_streams)
        return mt_seterr(MT_ERR_INVALID,
                         "the model reads %d input%s: give %d vocabularies (-v "
                         "sources... target), got %d",
                         m->n_src, m->n_src > 1 ? "s" : "", m->n_streams, n_vocabs);
    const mt_model_config *c0 = mt_model_get_config(m->models[0]);
    for (int k = 0; k < m->n_streams; k++) {
        m->vocab_paths[k] = dup_path(vocab_paths[k]);
        if (m->vocab_paths[k] == NULL) return MT_ERR_NOMEM;
        mt_status rc = mt_vocab_load(vocab_paths[k], c0->dim_vocabs[k], &m->vocabs[k]);
        if (rc != MT_OK) return rc;
        /* a SentencePiece model defines exactly the ids the model scores
        ** (YAML/text vocabularies are cut to dim-vocabs, and may be smaller,
        ** as Marian allows) */
        int32_t size = mt_vocab_size(m->vocabs[k]);
        if (mt_vocab_get_kind(m->vocabs[k]) == MT_VOCAB_KIND_SPM && size != c0->dim_vocabs[k])
            return mt_seterr(MT_ERR_INVALID,
                             "vocabulary %s has %d pieces, model %s expects %d for input %d "
                             "(dim-vocabs; the target is the last): not the model's vocabulary",
                             vocab_paths[k], (int)size, model_paths[0], (int)c0->dim_vocabs[k],
                             k + 1);
    }
    return MT_OK;
}

void mt_ensemble_borrow(mt_ensemble *m, mt_model *model, mt_vocab *const *vocabs,
                        bool shared_vocab) {
    memset(m, 0, sizeof *m);
    m->borrowed = true;
    m->n_models = 1;
    m->models[0] = model;
    m->weights[0] = 1.0f;
    m->n_src = mt_model_n_src(model);
    m->n_streams = m->n_src + 1;
    m->right_left = mt_model_get_config(model)->right_left;
    for (int k = 0; k < m->n_streams; k++)
        m->vocabs[k] = vocabs[k];
    m->shared = shared_vocab;
}

void mt_ensemble_free(mt_ensemble *m) {
    if (m->borrowed) {
        memset(m, 0, sizeof *m);
        return;
    }
    for (int i = 0; i < MT_MAX_MODELS; i++) {
        mt_model_free(m->models[i]);
        mt_free(m->model_paths[i]);
    }
    for (int k = 0; k < MT_MAX_VOCABS; k++) {
        mt_vocab_free(m->vocabs[k]);
        mt_free(m->vocab_paths[k]);
    }
    memset(m, 0, sizeof *m);
}

bool mt_ensemble_shared_vocab(const mt_ensemble *m) {
    if (m->borrowed) return m->shared;
    if (m->n_streams < 2 || !m->vocab_paths[0]) return false;
    return !strcmp(m->vocab_paths[0], m->vocab_paths[m->n_streams - 1]);
}
