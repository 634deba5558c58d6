/*
** edit_engine.c: the editor's translation engine (app_edit_engine over
** mt_translator, see edit_session.h).
**
** Two translators share one loaded ensemble: "full" (n-best list, word
** scores, attention of the alignment layer; -b) for the MT of a segment and
** "comp" (word scores; --completion-beam) for completions of a typed prefix.
** Each worker thread has one mt_translate_worker per translator, created
** when first needed.
**
** Word confidences: the model's per-token log-probabilities (word scores,
** EOS excluded) summed over the tokens of each whitespace word of the text
** and exponentiated, i.e. the probability of the word given what precedes
** it.  With SentencePiece vocabularies a piece starting with U+2581 starts
** a word; with YAML/text vocabularies every token is a word.  When that
** does not give as many words as the detokenised text has (unusual
** normalisation), no confidences are given.
**
** APE (spec.ape_dir, app/ape.h): a third translator over the APE model
** (its folder's beam-size and normalize, 1-best) post-edits the full MT of
** each piece (ops->post_edit: edit_anatomy.c calls it with the piece and
** its chosen MT for full translations, never for completions), on the same
** worker right after the MT and with the same cancellation; when it fails
** the MT is posted without it (a debug message says why).
**
** Completion of a prefix: the hypothesis starts with the forced prefix
** tokens; the completion is the text after the typed prefix when the text
** starts with it, else the text after the detokenised prefix tokens (the
** vocabulary normalised the prefix, e.g. collapsed spaces), else nothing.
*/
#include "edit_session.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ape.h"
#include "glossary.h"
#include "translator.h"
#include "vocab.h"

typedef struct engine {
    mt_ensemble am;
    mt_translator *full, *comp;
    const app_glossary *gloss; /* terms enforced (spec.glossary); NULL: none */
    int gloss_max;
    mt_ensemble ape_am; /* the APE model (spec.ape_dir), when ape is set */
    mt_translator *ape; /* NULL: no APE                                  */
} engine;

typedef struct eworker {
    engine *e;
    mt_translate_worker *full, *comp, *ape;
} eworker;

app_edit_model_spec app_edit_model_default_spec(void) {
    app_edit_model_spec s;
    memset(&s, 0, sizeof s);
    s.beam_size = 6;
    s.completion_beam = 3;
    s.normalize = 0.6f;
    s.max_length_factor = 3.0f;
    return s;
}

static void engine_free(void *impl) {
    engine *e = impl;
    if (e == NULL) return;
    mt_translator_free(e->full);
    mt_translator_free(e->comp);
    mt_translator_free(e->ape);
    mt_ensemble_free(&e->am);
    mt_ensemble_free(&e->ape_am);
    mt_free(e);
}

static mt_status eworker_init(void *impl, void **out) {
    eworker *w = mt_try_calloc(1, sizeof *w);
    if (w == NULL) return mt_seterr(MT_ERR_NOMEM, "edit: out of memory (worker)");
    w->e = impl;
    *out = w;
    return MT_OK;
}

static void eworker_free(void *p) {
    eworker *w = p;
    if (w == NULL) return;
    mt_translate_worker_free(w->full);
    mt_translate_worker_free(w->comp);
    mt_translate_worker_free(w->ape);
    mt_free(w);
}

static char *dup_piece(const mt_vocab *v, int32_t id) {
    const char *p = mt_vocab_piece(v, id);
    return mt_try_strdup(p ? p : "?");
}

/* Word confidences of hypothesis h (see the header comment); NULL when the
** words cannot be matched with the text. */
static float *word_conf(const engine *e, const mt_tr_hyp *h, int32_t *n_out) {
    *n_out = 0;
    if (h->word_scores == NULL || h->text == NULL) return NULL;
    const mt_vocab *tv = e->am.vocabs[e->am.n_streams - 1];
    bool spm = mt_vocab_get_kind(tv) == MT_VOCAB_KIND_SPM;
    int32_t nw = app_edit_count_words(h->text), nt = h->n_tokens;
    if (nw == 0 || nt == 0) return NULL;
    float *sum = mt_try_calloc((size_t)nw, sizeof *sum);
    if (sum == NULL) return NULL;
    int32_t w = -1;
    for (int32_t k = 0; k < nt; k++) {
        int32_t i = e->am.right_left ? nt - 1 - k : k; /* left to right */
        const char *p = mt_vocab_piece(tv, h->tokens[i]);
        bool starts = !spm || w < 0 || (p && strncmp(p, "\xe2\x96\x81", 3) == 0);
        if (starts) w++;
        if (w >= nw) {
            mt_free(sum);
            return NULL;
        }
        sum[w] += h->word_scores[i];
    }
    if (w + 1 != nw) {
        mt_free(sum);
        return NULL;
    }
    for (int32_t i = 0; i < nw; i++) {
        float c = expf(sum[i]);
        sum[i] = c > 1.0f ? 1.0f : c < 0.0f ? 0.0f : c;
    }
    *n_out = nw;
    return sum;
}

/* The completion of prefix in h (see the header comment). */
static mt_status completion_of(const engine *e, const char *prefix, const mt_tr_hyp *h,
                               char **out) {
    *out = NULL;
    const char *text = h->text ? h->text : "";
    size_t plen = strlen(prefix);
    const char *rest = "";
    if (strncmp(text, prefix, plen) == 0) {
        rest = text + plen;
    } else if (h->prefix_len > 0 && h->prefix_len <= h->n_tokens && !e->am.right_left) {
        char *dp = NULL;
        mt_status rc =
            mt_vocab_decode(e->am.vocabs[e->am.n_streams - 1], h->tokens, h->prefix_len, 0, &dp);
        if (rc != MT_OK) return rc;
        size_t dl = strlen(dp);
        if (strncmp(text, dp, dl) == 0) {
            rest = text + dl;
            bool pspace = plen > 0 && (prefix[plen - 1] == ' ' || prefix[plen - 1] == '\t');
            if (pspace)
                while (*rest == ' ')
                    rest++;
        }
        mt_free(dp);
    }
    *out = mt_try_strdup(rest);
    return *out ? MT_OK : mt_seterr(MT_ERR_NOMEM, "edit: out of memory (completion)");
}

static mt_status fill_full(const engine *e, const mt_tr_sentence *s, const mt_tr_result *r,
                           app_edit_output *o) {
    const mt_vocab *sv = e->am.vocabs[0], *tv = e->am.vocabs[e->am.n_streams - 1];
    const mt_tr_hyp *h = &r->hyps[0];
    o->nbest = mt_try_calloc((size_t)r->n_hyps, sizeof *o->nbest);
    o->scores = mt_try_calloc((size_t)r->n_hyps, sizeof *o->scores);
    if (o->nbest == NULL || o->scores == NULL) goto oom;
    o->n_nbest = r->n_hyps;
    for (int i = 0; i < r->n_hyps; i++) {
        o->nbest[i] = mt_try_strdup(r->hyps[i].text ? r->hyps[i].text : "");
        if (o->nbest[i] == NULL) goto oom;
        o->scores[i] = r->hyps[i].norm_score;
    }
    if (h->align && h->src_len == s->len[0] && h->length > 0) {
        o->src_tok = mt_try_calloc((size_t)h->src_len, sizeof *o->src_tok);
        o->trg_tok = mt_try_calloc((size_t)h->length, sizeof *o->trg_tok);
        o->attn = mt_try_malloc(sizeof(float) * (size_t)h->length * (size_t)h->src_len);
        if (!o->src_tok || !o->trg_tok || !o->attn) goto oom;
        o->n_src = h->src_len;
        o->n_trg = h->length;
        for (int32_t i = 0; i < h->src_len; i++)
            if ((o->src_tok[i] = dup_piece(sv, s->ids[0][i])) == NULL) goto oom;
        for (int32_t i = 0; i < h->length; i++) {
            int32_t id = i < h->n_tokens ? h->tokens[i] : mt_vocab_eos_id(tv);
            if ((o->trg_tok[i] = dup_piece(tv, id)) == NULL) goto oom;
        }
        memcpy(o->attn, h->align, sizeof(float) * (size_t)h->length * (size_t)h->src_len);
    }
    return MT_OK;
oom:
    return mt_seterr(MT_ERR_NOMEM, "edit: out of memory (translation result)");
}

/* The APE model's post-edit of (source, mt) into *out (ops->post_edit). */
static mt_status post_edit(void *wp, const char *source, const char *mt, bool (*cancel)(void *),
                           void *cancel_user, char **out) {
    eworker *w = wp;
    engine *e = w->e;
    mt_status rc = MT_OK;
    *out = NULL;
    if (e->ape == NULL) return mt_seterr(MT_ERR_UNSUPPORTED, "no APE model");
    if (w->ape == NULL && (rc = mt_translate_worker_init(e->ape, &w->ape)) != MT_OK) return rc;
    mt_tr_input in;
    memset(&in, 0, sizeof in);
    in.src[0] = source;
    in.src[1] = mt;
    mt_tr_result r;
    memset(&r, 0, sizeof r);
    rc = mt_translate(w->ape, &in, 1, &r, cancel, cancel_user);
    if (rc == MT_OK && (r.n_hyps < 1 || r.skipped))
        rc = mt_seterr(MT_ERR_INVALID, "APE: no post-edit (a source or MT longer than %d tokens?)",
                       e->ape->p.max_length);
    if (rc == MT_OK) {
        *out = mt_try_strdup(r.hyps[0].text ? r.hyps[0].text : "");
        if (*out == NULL) rc = mt_seterr(MT_ERR_NOMEM, "edit: out of memory (APE)");
    }
    mt_tr_result_clear(&r);
    return rc;
}

static mt_status etranslate(void *wp, const char *source, const char *prefix,
                            bool (*cancel)(void *), void *cancel_user, app_edit_output *o) {
    eworker *w = wp;
    engine *e = w->e;
    memset(o, 0, sizeof *o);
    bool is_comp = prefix != NULL;
    mt_translate_worker **tw = is_comp ? &w->comp : &w->full;
    const mt_translator *t = is_comp ? e->comp : e->full;
    mt_status rc = MT_OK;
    if (*tw == NULL) {
        rc = mt_translate_worker_init(t, tw);
        if (rc != MT_OK) return rc;
    }
    mt_tr_input in;
    memset(&in, 0, sizeof in);
    in.src[0] = source;
    in.prefix = prefix;
    /* glossary terms: the full MT only; a completion follows what the
    ** translator typed (a term forced into it could only be appended after
    ** a finished sentence; QA reports a missing term) */
    const char *terms[MT_BEAM_MAX_CONSTRAINTS];
    int max_terms = e->gloss_max < MT_BEAM_MAX_CONSTRAINTS ? e->gloss_max : MT_BEAM_MAX_CONSTRAINTS;
    in.terms = terms;
    in.n_terms = is_comp ? 0 : app_glossary_constraints(e->gloss, source, terms, max_terms);
    if (in.n_terms < 0) return mt_seterr(MT_ERR_NOMEM, "edit: out of memory (glossary terms)");
    mt_tr_sentence s;
    mt_tr_result r;
    memset(&r, 0, sizeof r);
    rc = mt_tr_encode(t, &in, &s);
    if (rc != MT_OK) return rc;
    if (s.skipped) {
        rc = mt_seterr(MT_ERR_INVALID, "the segment is longer than %d tokens", t->p.max_length);
        goto done;
    }
    rc = mt_translate_encoded(*tw, &s, 1, &r, cancel, cancel_user);
    if (rc != MT_OK) goto done;
    if (r.n_hyps < 1) {
        rc = mt_seterr(MT_ERR_INVALID, "no translation");
        goto done;
    }
    const mt_tr_hyp *h = &r.hyps[0];
    o->hyp = mt_try_strdup(h->text ? h->text : "");
    if (o->hyp == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "edit: out of memory (translation result)");
        goto done;
    }
    o->n_tokens = h->length;
    o->word_conf = word_conf(e, h, &o->n_words);
    if (!is_comp) {
        rc = fill_full(e, &s, &r, o);
    } else {
        rc = completion_of(e, prefix, h, &o->completion);
        if (rc == MT_OK && o->word_conf) {
            int32_t nc = app_edit_count_words(o->completion);
            if (nc > 0 && nc <= o->n_words) {
                o->comp_conf = mt_try_malloc(sizeof(float) * (size_t)nc);
                if (o->comp_conf) {
                    memcpy(o->comp_conf, o->word_conf + (o->n_words - nc),
                           sizeof(float) * (size_t)nc);
                    o->n_comp_words = nc;
                }
            }
        }
    }
done:
    if (rc != MT_OK) app_edit_output_clear(o);
    mt_tr_result_clear(&r);
    mt_tr_sentence_clear(&s);
    return rc;
}

static const app_edit_engine_ops engine_ops = {eworker_init, eworker_free, etranslate, engine_free,
                                               post_edit};

/* "ende/model.npz" -> "ende/model.npz" shortened to its last two components. */
static void model_name(const char *path, char *buf, size_t size) {
    const char *last = strrchr(path, '/'), *name = path;
    if (last && last > path) {
        const char *p = last - 1;
        while (p > path && *p != '/')
            p--;
        name = *p == '/' ? p + 1 : p;
    }
    snprintf(buf, size, "%s", name);
}

mt_status app_edit_engine_load(const app_edit_model_spec *spec, app_edit_engine **out) {
    *out = NULL;
    if (spec->n_models < 1 || spec->n_models > MT_MAX_MODELS)
        return mt_seterr(MT_ERR_INVALID, "edit: %d models (1..%d)", spec->n_models, MT_MAX_MODELS);
    if (spec->beam_size < 1 || spec->completion_beam < 1)
        return mt_seterr(MT_ERR_INVALID, "edit: beam sizes must be at least 1");
    engine *e = mt_try_calloc(1, sizeof *e);
    if (e == NULL) return mt_seterr(MT_ERR_NOMEM, "edit: out of memory (engine)");
    e->gloss = spec->glossary_max > 0 ? spec->glossary : NULL;
    e->gloss_max = spec->glossary_max;
    mt_status rc =
        mt_ensemble_load(&e->am, spec->models, spec->n_models, NULL, spec->vocabs, spec->n_vocabs);
    if (rc != MT_OK) goto fail;
    if (e->am.n_src != 1) {
        rc = mt_seterr(MT_ERR_UNSUPPORTED, "edit: %s reads %d sources; the editor needs one",
                       spec->models[0], e->am.n_src);
        goto fail;
    }
    if (e->am.right_left) {
        rc = mt_seterr(MT_ERR_UNSUPPORTED,
                       "edit: %s is a right-to-left model, which cannot complete a typed prefix",
                       spec->models[0]);
        goto fail;
    }
    mt_translate_params p = mt_translate_default_params();
    p.beam_size = spec->beam_size;
    p.normalize = spec->normalize;
    p.max_length_factor = spec->max_length_factor;
    p.max_length_crop = true;
    p.word_scores = true;
    p.n_best = true;
    p.alignment = true;
    rc = mt_translator_init(&e->am, NULL, &p, &e->full);
    if (rc != MT_OK) goto fail;
    p.beam_size = spec->completion_beam;
    p.n_best = false;
    p.alignment = false;
    rc = mt_translator_init(&e->am, NULL, &p, &e->comp);
    if (rc != MT_OK) goto fail;
    if (spec->ape_dir && spec->ape_dir[0]) {
        app_model_dir *md = mt_try_calloc(1, sizeof *md);
        if (md == NULL) {
            rc = mt_seterr(MT_ERR_NOMEM, "edit: out of memory (APE)");
            goto fail;
        }
        rc = app_model_dir_resolve(spec->ape_dir, 3, md);
        const char *vp[MT_MAX_VOCABS];
        for (int k = 0; k < md->n_vocabs; k++)
            vp[k] = md->vocabs[k];
        if (rc == MT_OK) rc = app_ape_load(&e->ape_am, md->model, vp, md->n_vocabs);
        mt_translate_params ap = mt_translate_default_params();
        ap.beam_size = md->beam_size;
        ap.normalize = md->normalize;
        ap.max_length_factor = spec->max_length_factor;
        ap.max_length_crop = true;
        if (rc == MT_OK) rc = mt_translator_init(&e->ape_am, NULL, &ap, &e->ape);
        mt_free(md);
        if (rc != MT_OK) goto fail;
    }
    char name[256];
    model_name(spec->models[0], name, sizeof name);
    if (spec->n_models > 1) {
        size_t l = strlen(name);
        snprintf(name + l, sizeof name - l, " +%d", spec->n_models - 1);
    }
    char abs[PATH_MAX];
    const char *path = realpath(spec->models[0], abs) ? abs : spec->models[0];
    return app_edit_engine_new(&engine_ops, e, name, path, out);
fail:
    engine_free(e);
    return rc;
}

static bool is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

mt_status app_edit_engine_load_path(void *user, const char *path, app_edit_engine **out) {
    const app_edit_model_spec *base = user;
    app_edit_model_spec spec = *base;
    char model[PATH_MAX], dir[PATH_MAX], vocab[PATH_MAX + 16];
    if (is_dir(path)) {
        snprintf(dir, sizeof dir, "%s", path);
        snprintf(model, sizeof model, "%s/model.npz", path);
    } else {
        snprintf(model, sizeof model, "%s", path);
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof dir, ".");
    }
    if (!is_file(model)) return mt_seterr(MT_ERR_NOTFOUND, "no model file %s", model);
    spec.models[0] = model;
    spec.n_models = 1;
    snprintf(vocab, sizeof vocab, "%s/vocab.spm", dir);
    if (is_file(vocab)) {
        spec.vocabs[0] = spec.vocabs[1] = vocab;
        spec.n_vocabs = 2;
    }
    return app_edit_engine_load(&spec, out);
}
