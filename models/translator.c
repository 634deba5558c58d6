/*
** translator.c: the translation API of translator.h: inputs encoded as
** Marian's corpus reader does, one beam search (engine/beam.c) per batch
** over one mt_model_scorer per ensemble member, results decoded.
*/
#include "translator.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct mt_translate_worker {
    const mt_translator *t;
    mt_model_scorer *sc[MT_MAX_MODELS];
    mt_scorer scorers[MT_MAX_MODELS];
    mt_beam *beam;
    mt_shortlist_gen *slgen;
};

mt_translate_params mt_translate_default_params(void) {
    mt_translate_params p;
    memset(&p, 0, sizeof p);
    p.beam_size = 12;
    p.normalize = 0.0f;
    p.word_penalty = 0.0f;
    p.max_length_factor = 3.0f;
    p.max_length = 1000;
    p.gemm_type = MT_GEMM_FLOAT32;
    return p;
}

/* ------------------------------------------------------- translator */

mt_status mt_translator_init(const mt_ensemble *models, const mt_shortlist *sl,
                             const mt_translate_params *p, mt_translator **out) {
    *out = NULL;
    if (models->n_models < 1 || models->n_streams < 2)
        return mt_seterr(MT_ERR_INVALID, "translate: no models");
    if (p->beam_size < 1)
        return mt_seterr(MT_ERR_INVALID, "translate: beam size %d < 1", (int)p->beam_size);
    mt_translator *t = mt_try_calloc(1, sizeof *t);
    if (t == NULL) return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    t->models = models;
    t->sl = sl;
    t->p = *p;
    const mt_vocab *tv = models->vocabs[models->n_streams - 1];
    int n = mt_vocab_suppressed_ids(tv, false, !p->allow_special, NULL, 0);
    t->suppress = mt_try_malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    if (t->suppress == NULL) {
        mt_free(t);
        return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    }
    t->n_suppress = mt_vocab_suppressed_ids(tv, false, !p->allow_special, t->suppress, n);
    *out = t;
    return MT_OK;
}

void mt_translator_free(mt_translator *t) {
    if (t == NULL) return;
    mt_free(t->suppress);
    mt_free(t);
}

mt_model_scorer_stats mt_translate_worker_stats(const mt_translate_worker *w) {
    return mt_model_scorer_get_stats(w->sc[0]);
}

mt_status mt_translate_worker_init(const mt_translator *t, mt_translate_worker **out) {
    *out = NULL;
    mt_translate_worker *w = mt_try_calloc(1, sizeof *w);
    if (w == NULL) return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    w->t = t;
    mt_status rc = mt_beam_init(&w->beam);
    for (int i = 0; i < t->models->n_models && rc == MT_OK; i++) {
        rc = mt_model_scorer_init(t->models->models[i], t->p.gemm_type, t->p.kv_cache, &w->sc[i]);
        if (rc == MT_OK) w->scorers[i] = mt_model_scorer_get(w->sc[i]);
    }
    if (rc == MT_OK && t->sl) {
        const mt_model *m0 = t->models->models[0];
        rc = mt_shortlist_gen_init(t->sl, mt_model_src_vocab(m0, 0), mt_model_trg_vocab(m0),
                                   mt_ensemble_shared_vocab(t->models), &w->slgen);
    }
    if (rc != MT_OK) {
        mt_translate_worker_free(w);
        return rc;
    }
    *out = w;
    return MT_OK;
}

void mt_translate_worker_free(mt_translate_worker *w) {
    if (w == NULL) return;
    for (int i = 0; i < MT_MAX_MODELS; i++)
        mt_model_scorer_free(w->sc[i]);
    mt_beam_free(w->beam);
    mt_shortlist_gen_free(w->slgen);
    mt_free(w);
}

/* ----------------------------------------------------------- inputs */

void mt_tr_sentence_clear(mt_tr_sentence *s) {
    for (int k = 0; k < MT_MAX_STREAMS; k++)
        mt_free(s->ids[k]);
    mt_free(s->prefix);
    mt_free(s->term_ids);
    memset(s, 0, sizeof *s);
}

_Static_assert(MT_TR_MAX_TERM_TOKENS == 16 && MT_BEAM_MAX_CONSTRAINTS == 16 &&
                   MT_BEAM_MAX_CONSTRAINT_TOKENS == 64,
               "the limits in the messages of encode_terms");

/* Encodes the terms of in into out (see "Terms" in translator.h). */
static mt_status encode_terms(const mt_translator *t, const mt_tr_input *in, mt_tr_sentence *out) {
    const mt_ensemble *am = t->models;
    const mt_vocab *tv = am->vocabs[am->n_streams - 1];
    const int32_t unk = mt_vocab_unk_id(tv);
    out->term_ids = mt_try_malloc(sizeof(int32_t) * MT_BEAM_MAX_CONSTRAINT_TOKENS);
    if (out->term_ids == NULL) return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    int32_t used = 0;
    for (int i = 0; i < in->n_terms; i++) {
        const char *term = in->terms[i] ? in->terms[i] : "";
        int32_t *ids = NULL;
        int64_t n = 0;
        mt_status rc = mt_vocab_encode(tv, term, 0, &ids, &n);
        if (rc == MT_ERR_NOMEM) return rc;
        const char *why = NULL;
        if (rc != MT_OK)
            why = "not valid UTF-8";
        else if (n == 0)
            why = "no target tokens";
        else if (n > MT_TR_MAX_TERM_TOKENS)
            why = "more than 16 target tokens";
        else if (out->n_terms == MT_BEAM_MAX_CONSTRAINTS)
            why = "more than 16 terms in the sentence";
        else if (used + n > MT_BEAM_MAX_CONSTRAINT_TOKENS)
            why = "more than 64 term tokens in the sentence";
        for (int64_t j = 0; why == NULL && j < n; j++)
            if (ids[j] == unk) why = "an unknown target token";
        for (int64_t a = 0, b = n - 1; why == NULL && am->right_left && a < b; a++, b--) {
            int32_t x = ids[a]; /* all of it: mt_batch_reverse_seq keeps the last (EOS) */
            ids[a] = ids[b];
            ids[b] = x;
        }
        for (int32_t k = 0, at = 0; why == NULL && k < out->n_terms; at += out->term_len[k++])
            if (out->term_len[k] == n &&
                !memcmp(out->term_ids + at, ids, sizeof(int32_t) * (size_t)n))
                why = "the same as an earlier term";
        if (why) {
            mt_log(MT_LOG_WARN, "term '%s' dropped: %s", term, why);
        } else {
            memcpy(out->term_ids + used, ids, sizeof(int32_t) * (size_t)n);
            out->term_len[out->n_terms++] = (int32_t)n;
            used += (int32_t)n;
        }
        mt_free(ids);
    }
    /* a term inside another one is met with it: dropped (else the search
    ** would look for a second occurrence, the tracker of a hypothesis
    ** following one constraint at a time) */
    int32_t at[MT_BEAM_MAX_CONSTRAINTS];
    for (int32_t k = 0, a = 0; k < out->n_terms; a += out->term_len[k++])
        at[k] = a;
    bool drop[MT_BEAM_MAX_CONSTRAINTS] = {false};
    for (int32_t i = 0; i < out->n_terms; i++)
        for (int32_t j = 0; j < out->n_terms && !drop[i]; j++) {
            int32_t li = out->term_len[i], lj = out->term_len[j];
            if (j == i || drop[j] || lj <= li) continue;
            for (int32_t a = 0; a + li <= lj && !drop[i]; a++)
                drop[i] = !memcmp(out->term_ids + at[j] + a, out->term_ids + at[i],
                                  sizeof(int32_t) * (size_t)li);
        }
    int32_t kept = 0, w = 0;
    for (int32_t k = 0; k < out->n_terms; k++) {
        if (drop[k]) {
            mt_log(MT_LOG_DEBUG, "term %d dropped: inside a longer term", (int)k);
            continue;
        }
        memmove(out->term_ids + w, out->term_ids + at[k],
                sizeof(int32_t) * (size_t)out->term_len[k]);
        w += out->term_len[k];
        out->term_len[kept++] = out->term_len[k];
    }
    out->n_terms = kept;
    if (out->n_terms == 0) {
        mt_free(out->term_ids);
        out->term_ids = NULL;
    }
    return MT_OK;
}

mt_status mt_tr_encode(const mt_translator *t, const mt_tr_input *in, mt_tr_sentence *out) {
    memset(out, 0, sizeof *out);
    const mt_ensemble *am = t->models;
    mt_status rc = MT_OK;
    for (int k = 0; k < am->n_src && rc == MT_OK; k++) {
        int64_t n = 0;
        rc = mt_vocab_encode(am->vocabs[k], in->src[k] ? in->src[k] : "", MT_VOCAB_ADD_EOS,
                             &out->ids[k], &n);
        if (rc != MT_OK) break;
        if (k == 0) out->raw_len = n > INT32_MAX ? INT32_MAX : (int32_t)n;
        int32_t ml = t->p.max_length;
        if (ml > 0 && n > ml) {
            if (t->p.max_length_crop) {
                n = ml;
                out->ids[k][n - 1] = mt_vocab_eos_id(am->vocabs[k]);
                out->cropped = true;
            } else {
                out->skipped = true;
            }
        }
        out->len[k] = (int32_t)n;
        if (am->right_left) mt_batch_reverse_seq(out->ids[k], out->len[k]);
    }
    if (rc == MT_OK && in->prefix && in->prefix[0]) {
        if (am->right_left) {
            rc = mt_seterr(MT_ERR_UNSUPPORTED,
                           "a target prefix cannot be forced with right-to-left models");
        } else {
            int64_t n = 0;
            rc = mt_vocab_encode(am->vocabs[am->n_streams - 1], in->prefix, 0, &out->prefix, &n);
            out->prefix_len = (int32_t)n;
        }
    }
    if (rc == MT_OK && in->n_terms > 0) rc = encode_terms(t, in, out);
    if (rc != MT_OK) mt_tr_sentence_clear(out);
    return rc;
}

/* ---------------------------------------------------------- results */

static void hyp_clear(mt_tr_hyp *h) {
    mt_free(h->text);
    mt_free(h->tokens);
    mt_free(h->word_scores);
    mt_free(h->align);
    memset(h, 0, sizeof *h);
}

void mt_tr_result_clear(mt_tr_result *r) {
    for (int i = 0; i < r->n_hyps; i++)
        hyp_clear(&r->hyps[i]);
    mt_free(r->hyps);
    memset(r, 0, sizeof *r);
}

static void *dup_mem(const void *p, size_t n) {
    void *q = mt_try_malloc(n ? n : 1);
    if (q && n) memcpy(q, p, n);
    return q;
}

/* Copies one hypothesis of the engine into h (text decoded). */
static mt_status take_hyp(const mt_translator *t, const mt_beam_hyp *b, const float *mscores,
                          mt_tr_hyp *h) {
    const mt_ensemble *am = t->models;
    memset(h, 0, sizeof *h);
    h->n_tokens = b->n_tokens;
    h->length = b->length;
    h->prefix_len = b->prefix_len;
    h->eos = b->eos;
    h->norm_score = b->norm_score;
    h->path_score = b->path_score;
    h->src_len = b->src_len;
    h->terms_met = b->constraints_met;
    for (int i = 0; i < am->n_models; i++)
        h->model_scores[i] = mscores[i];
    h->tokens = dup_mem(b->tokens, sizeof(int32_t) * (size_t)b->n_tokens);
    if (h->tokens == NULL) return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    if (b->word_scores) {
        h->word_scores = dup_mem(b->word_scores, sizeof(float) * (size_t)b->length);
        if (h->word_scores == NULL) return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    }
    if (b->align) {
        h->align = dup_mem(b->align, sizeof(float) * (size_t)b->length * (size_t)b->src_len);
        if (h->align == NULL) return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    }
    /* text: left to right */
    int32_t *ltr = dup_mem(b->tokens, sizeof(int32_t) * (size_t)b->n_tokens);
    if (ltr == NULL) return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    if (am->right_left)
        for (int32_t i = 0, j = b->n_tokens - 1; i < j; i++, j--) {
            int32_t x = ltr[i];
            ltr[i] = ltr[j];
            ltr[j] = x;
        }
    mt_status rc = mt_vocab_decode(am->vocabs[am->n_streams - 1], ltr, b->n_tokens,
                                   t->p.pieces ? MT_VOCAB_PIECES : 0, &h->text);
    mt_free(ltr);
    return rc;
}

/* Marian's F scores of an empty source: each model's log-probability of the
** EOS it is forced to produce at step 0 (over the shortlist if any). */
static mt_status empty_scores(mt_translate_worker *w, int32_t sent, int32_t src_len,
                              const int32_t *sl, int32_t n_sl, float *lp_buf, float *out) {
    const mt_translator *t = w->t;
    int32_t eos = mt_vocab_eos_id(t->models->vocabs[t->models->n_streams - 1]);
    int32_t col = eos;
    if (sl) {
        col = -1;
        for (int32_t i = 0; i < n_sl; i++)
            if (sl[i] == eos) col = i;
        if (col < 0) return mt_seterr(MT_ERR_INVALID, "translate: EOS not in the shortlist");
    }
    int32_t prev = -1, zero = 0, rorder = -1;
    mt_scorer_step st = {
        .n_hyps = 1,
        .prev_tokens = &prev,
        .hyp_sentence = &sent,
        .reorder = &rorder,
        .hyp_pos = &zero,
        .n_prev = 0,
        .shortlist = sl,
        .n_shortlist = sl ? n_sl : 0,
        .align_stride = src_len,
        .beam_size = 1,
    };
    for (int i = 0; i < t->models->n_models; i++) {
        const mt_scorer *sc = &w->scorers[i];
        void *state = NULL;
        mt_status rc = sc->ops->start(sc->user, &sent, 1, &state);
        if (rc == MT_OK) rc = sc->ops->step(sc->user, state, &st, lp_buf, NULL);
        sc->ops->finish(sc->user, state);
        if (rc != MT_OK) return rc;
        out[i] = lp_buf[col];
    }
    return MT_OK;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/* Everything one search needs, allocated per call. */
typedef struct search_bufs {
    int32_t *act;       /* [n] input index of each search sentence       */
    mt_batch_seq *seqs; /* [n * n_src]                                  */
    int32_t *src_len;   /* [n] stream 0                                   */
    const int32_t **prefix;
    int32_t *prefix_len;
    int32_t *sl;                        /* shortlist ids (V + prefix tokens)              */
    int32_t *sl_src;                    /* source ids of the batch                        */
    float *lp;                          /* [cols] for empty_scores                        */
    mt_beam_constraint *cons;           /* [n * MT_BEAM_MAX_CONSTRAINTS] */
    const mt_beam_constraint **cons_of; /* [n]                           */
    int32_t *n_cons;                    /* [n]                           */
} search_bufs;

static void bufs_free(search_bufs *b) {
    mt_free(b->act);
    mt_free(b->seqs);
    mt_free(b->src_len);
    mt_free((void *)b->prefix);
    mt_free(b->prefix_len);
    mt_free(b->sl);
    mt_free(b->sl_src);
    mt_free(b->lp);
    mt_free(b->cons);
    mt_free((void *)b->cons_of);
    mt_free(b->n_cons);
}

mt_status mt_translate_encoded(mt_translate_worker *w, const mt_tr_sentence *s, int n,
                               mt_tr_result *out, bool (*cancel)(void *), void *cancel_user) {
    const mt_translator *t = w->t;
    const mt_ensemble *am = t->models;
    const int n_src = am->n_src, m = am->n_models;
    const mt_vocab *tv = am->vocabs[am->n_streams - 1];
    const int32_t V = mt_model_trg_vocab(am->models[0]);
    for (int i = 0; i < n; i++)
        memset(&out[i], 0, sizeof out[i]);
    if (n <= 0) return MT_OK;
    search_bufs bf;
    memset(&bf, 0, sizeof bf);
    mt_status rc = MT_OK;
    size_t nn = (size_t)n;
    int64_t n_src_ids = 0;
    int32_t total_prefix = 0, total_terms = 0;
    bool any_terms = false;
    for (int i = 0; i < n; i++) {
        n_src_ids += s[i].skipped ? 0 : s[i].len[0];
        total_prefix += s[i].skipped ? 0 : s[i].prefix_len;
        for (int32_t k = 0; !s[i].skipped && k < s[i].n_terms; k++)
            total_terms += s[i].term_len[k];
        any_terms = any_terms || (!s[i].skipped && s[i].n_terms > 0);
    }
    if (any_terms) {
        bf.cons = mt_try_malloc(sizeof *bf.cons * nn * MT_BEAM_MAX_CONSTRAINTS);
        bf.cons_of = mt_try_malloc(sizeof *bf.cons_of * nn);
        bf.n_cons = mt_try_malloc(sizeof *bf.n_cons * nn);
        if (!bf.cons || !bf.cons_of || !bf.n_cons) {
            rc = mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
            goto done;
        }
    }
    bf.act = mt_try_malloc(sizeof(int32_t) * nn);
    bf.seqs = mt_try_malloc(sizeof(mt_batch_seq) * nn * (size_t)n_src);
    bf.src_len = mt_try_malloc(sizeof(int32_t) * nn);
    bf.prefix = mt_try_malloc(sizeof(int32_t *) * nn);
    bf.prefix_len = mt_try_malloc(sizeof(int32_t) * nn);
    bf.lp = mt_try_malloc(sizeof(float) * (size_t)V);
    if (t->sl) {
        bf.sl = mt_try_malloc(sizeof(int32_t) *
                              ((size_t)V + (size_t)total_prefix + (size_t)total_terms + 1));
        bf.sl_src = mt_try_malloc(sizeof(int32_t) * (size_t)(n_src_ids > 0 ? n_src_ids : 1));
    }
    if (!bf.act || !bf.seqs || !bf.src_len || !bf.prefix || !bf.prefix_len || !bf.lp ||
        (t->sl && (!bf.sl || !bf.sl_src))) {
        rc = mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
        goto done;
    }
    /* the search's sentences: all but the skipped ones */
    int32_t na = 0;
    bool any_prefix = false;
    for (int i = 0; i < n; i++) {
        if (s[i].skipped) {
            out[i].skipped = true;
            continue;
        }
        bf.act[na] = i;
        for (int k = 0; k < n_src; k++)
            bf.seqs[na * n_src + k] = (mt_batch_seq){s[i].ids[k], s[i].len[k]};
        bf.src_len[na] = s[i].len[0];
        bf.prefix[na] = s[i].prefix;
        bf.prefix_len[na] = s[i].prefix_len;
        any_prefix = any_prefix || s[i].prefix_len > 0;
        if (any_terms) {
            mt_beam_constraint *c = bf.cons + (size_t)na * MT_BEAM_MAX_CONSTRAINTS;
            for (int32_t k = 0, at = 0; k < s[i].n_terms; at += s[i].term_len[k++])
                c[k] = (mt_beam_constraint){s[i].term_ids + at, s[i].term_len[k]};
            bf.cons_of[na] = c;
            bf.n_cons[na] = s[i].n_terms;
        }
        na++;
    }
    if (na == 0) goto done;
    /* Marian's shortlist of the batch (first source), plus the prefix
    ** tokens (they must be scoreable) and EOS */
    int32_t n_sl = 0;
    if (t->sl) {
        int64_t q = 0;
        for (int32_t a = 0; a < na; a++) {
            memcpy(bf.sl_src + q, s[bf.act[a]].ids[0], sizeof(int32_t) * (size_t)bf.src_len[a]);
            q += bf.src_len[a];
        }
        n_sl = mt_shortlist_gen_run(w->slgen, bf.sl_src, q, bf.sl);
        int32_t extra = n_sl;
        bf.sl[extra++] = mt_vocab_eos_id(tv);
        for (int32_t a = 0; a < na; a++)
            for (int32_t j = 0; j < bf.prefix_len[a]; j++)
                bf.sl[extra++] = bf.prefix[a][j];
        for (int32_t a = 0; any_terms && a < na; a++)
            for (int32_t k = 0; k < bf.n_cons[a]; k++)
                for (int32_t j = 0; j < bf.cons_of[a][k].n_tokens; j++)
                    bf.sl[extra++] = bf.cons_of[a][k].tokens[j];
        if (extra > n_sl) {
            qsort(bf.sl, (size_t)extra, sizeof(int32_t), cmp_i32);
            int32_t u = 0;
            for (int32_t i = 0; i < extra; i++)
                if (u == 0 || bf.sl[u - 1] != bf.sl[i]) bf.sl[u++] = bf.sl[i];
            n_sl = u;
        }
    }
    for (int i = 0; i < m; i++)
        mt_model_scorer_set_batch(w->sc[i], bf.seqs, na, n_src);

    mt_beam_params bp = mt_beam_default_params();
    bp.beam_size = t->p.beam_size;
    bp.normalize = t->p.normalize;
    bp.word_penalty = t->p.word_penalty;
    bp.max_length_factor = t->p.max_length_factor;
    bp.allow_unk = t->p.allow_unk;
    bp.eos_id = mt_vocab_eos_id(tv);
    bp.unk_id = mt_vocab_unk_id(tv);
    bp.suppress = t->suppress;
    bp.n_suppress = t->n_suppress;
    bp.n_best = t->p.n_best;
    bp.word_scores = t->p.word_scores;
    bp.alignment = t->p.alignment;
    bp.greedy_scores = t->p.scores;
    bp.weights = am->weights;
    bp.max_active = t->p.max_active;
    /* With top-up there is no mini-batch whose longest source would bound
    ** every output: each sentence's own source length does. */
    bp.length_per_sentence = t->p.length_per_sentence || t->p.max_active > 0;
    bp.should_abort = cancel;
    bp.abort_user = cancel_user;
    if (!(bp.max_length_factor > 0.0f)) bp.max_length = 1000; /* a limit is required */
    mt_beam_input bi = {
        .n_sentences = na,
        .src_len = bf.src_len,
        .prefix = any_prefix ? bf.prefix : NULL,
        .prefix_len = any_prefix ? bf.prefix_len : NULL,
        .shortlist = t->sl ? bf.sl : NULL,
        .n_shortlist = n_sl,
        .constraints = any_terms ? bf.cons_of : NULL,
        .n_constraints = any_terms ? bf.n_cons : NULL,
    };
    const mt_beam_result *res = NULL;
    rc = mt_beam_search(w->beam, &bp, w->scorers, m, &bi, &res);
    if (rc != MT_OK) goto done;
    for (int32_t a = 0; a < na && rc == MT_OK; a++) {
        mt_tr_result *r = &out[bf.act[a]];
        const mt_beam_result *br = &res[a];
        bool empty = bf.src_len[a] <= 1;
        int nh = br->n_hyps;
        if (empty && t->p.n_best && nh == 1) nh = t->p.beam_size; /* Marian: beam-size copies */
        r->hyps = mt_try_calloc((size_t)(nh > 0 ? nh : 1), sizeof *r->hyps);
        if (r->hyps == NULL) {
            rc = mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
            break;
        }
        float ms[MT_MAX_MODELS] = {0};
        if (empty && t->p.n_best)
            rc = empty_scores(w, a, bf.src_len[a], t->sl ? bf.sl : NULL, n_sl, bf.lp, ms);
        for (int h = 0; h < nh && rc == MT_OK; h++) {
            const mt_beam_hyp *bh = &br->hyps[empty ? 0 : h];
            rc = take_hyp(t, bh, empty ? ms : bh->model_scores, &r->hyps[h]);
            r->n_hyps = h + 1;
        }
    }
done:
    bufs_free(&bf);
    if (rc != MT_OK)
        for (int i = 0; i < n; i++)
            mt_tr_result_clear(&out[i]);
    return rc;
}

mt_status mt_translate(mt_translate_worker *w, const mt_tr_input *in, int n, mt_tr_result *out,
                       bool (*cancel)(void *), void *cancel_user) {
    if (n <= 0) return MT_OK;
    mt_tr_sentence *s = mt_try_calloc((size_t)n, sizeof *s);
    if (s == NULL) return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    mt_status rc = MT_OK;
    for (int i = 0; i < n && rc == MT_OK; i++)
        rc = mt_tr_encode(w->t, &in[i], &s[i]);
    if (rc == MT_OK) rc = mt_translate_encoded(w, s, n, out, cancel, cancel_user);
    for (int i = 0; i < n; i++)
        mt_tr_sentence_clear(&s[i]);
    mt_free(s);
    return rc;
}
