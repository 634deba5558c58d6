/*
** scorer.c: the mt_scorer of one model (engine/mt.h, "beam search")
** over the step API of models/model.h, in bounded memory.
**
** Graphs (all owned by the scorer, reused from search to search):
**   enc[2]   encode + start of the search's batch, and later the
**            per-sentence state (projected contexts, masks) reduced to the
**            sentences still decoding ("purge", as Marian drops finished
**            sentences from its batch, here once at most half of them are
**            still decoding): built on the other graph from views of the
**            current one, which is then free.
**   step[2]  one decoding step each, alternately: a step views the state
**            that the previous step computed on the other graph, reorders
**            it (mt_model_reorder) and extends it.  The graph of the step
**            before the previous one is cleared first.
**   hist[2] the frozen history of the caches (mt_model_fold), alternately:
**            every FOLD_EVERY positions the caches of the state (history
**            read through the row map hmap, then the positions since) are
**            concatenated into a new history, so that a step copies (with
**            the beam's reordering) only the positions since the last fold
**            instead of the whole cache, and reads the history in place.
**            The fold is made by the next step, of the rows it continues
**            (fold_parents).
**            With top-up too: a fold packs each row's positions from the
**            left (hlen: how many each row has there), rows read their own
**            length of it, and sentences joining have none there.
** So the memory in use is one step (caches of the current length) and the
** encoding, whatever the output length.
**
** Rows.  The beam gives its rows grouped by sentence, each sentence with at
** most beam_size of them.  The step computes exactly those rows (state
** beam 1, mt_dec_state.row_sent naming each row's sentence), not every
** sentence padded to the widest beam as Marian does: the same values, 18%
** fewer rows at beam 4, mini-batch 32 on the benchmark's 200 lines.
** Sentences with no row are finished: the next step drops them.
**
** When the beam only needs each row's argmax (beam 1, no scores asked for),
** the step returns the logits without the log-softmax (WNMT 2018 sec. 2.3).
** When it needs each row's k best (beam > 1) and the output layer takes a
** fixed integer GEMM, the step gives those instead of the logits
** (mt_matmul_cols_topk: pieces of the product whose logits stay in cache).
*/
#include <string.h>

#include "translator.h"

/* Positions between two folds of the caches: each step copies at most this
** many positions per row (with the beam's reordering), each fold all of
** them once.  With the default model at beam 4, mini-batch 32, float32
** (same output either way), 8 and 32 were no faster than 16.  Once the
** fused attention prefetched the next row's history (int8, f16 history),
** 8 was faster than 16 at beam 1 and 4 (test set, int8 + shortlist, per-op
** timer: the recent copies (cache_append) fell by more than the folds'
** copies rose); 4, and folding when the positions since reach the square
** root of the history, were no better than 8.
** Folding at other positions rounds other keys and values to f16: integer
** translations change (147 of the 2043 test lines at int8 + shortlist,
** beam 4; the model README's table is measured with 8). */
#define FOLD_EVERY 8

struct mt_model_scorer {
    mt_model *m;
    mt_graph *enc[2], *step[2];
    mt_graph *enc_add; /* encode + start of sentences joining (top-up)     */
    mt_graph *hist[2]; /* frozen caches (mt_model_fold)                     */
    int ecur, scur, hcur;
    bool can_fold; /* the model's caches grow with the output           */
    /* batch of the search (set_batch) */
    const mt_batch_seq *seqs;
    int32_t n_sent;
    int n_src;
    /* state */
    mt_dec_state st;
    int32_t n_live; /* sentences of the state (finished ones stay until
                       the next purge, see step_rows)                  */
    int32_t n_rows; /* rows of the state (row i = hypothesis i of the
                       last step; at the start one per sentence)        */
    int32_t *live;  /* [n_live + n_pend] search sentence of each state
                       sentence, then of each sentence added (pending) */
    int32_t n_pend; /* sentences added since the last step: the FIXED
                       part of the state has them, the rows not yet     */
    int32_t *qpos;  /* [state rows] tokens consumed by each (top-up)     */
    int32_t *hmap;  /* [state rows] row of the frozen history of each    */
    int32_t *hlen;  /* [state rows] its positions there (packed from the
                       left; 0: a row newer than the history)           */
    bool topup;     /* sentences were added: rows may be at different
                       positions (mt_dec_state.row_pos)                 */
    bool fold_due;  /* the last step asked for a fold: made at the next
                       step, of the rows it continues (fold_parents)    */
    /* scratch (grown, never shrunk) */
    int32_t cap_sent, cap_rows;
    int32_t *new_live, *sel_sent, *sel_rows, *prev_tok, *row_sent, *hnew, *hlen_new, *vpos;
    int32_t *ctx_len; /* [n_src * rows] each row's source lengths          */
    mt_batch_seq *bseqs;
    int32_t cap_seqs;
    float *align_buf;
    size_t cap_align;
    float *topk_buf; /* a step's mt_dec_step.topk rows [n, 2 k] */
    size_t cap_topk;
    mt_model_scorer_stats stats;
};

/* ---------------------------------------------------------- buffers */

static mt_status grow_i32(int32_t **p, int32_t n) {
    int32_t *q = mt_try_realloc(*p, sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    if (q == NULL) return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    *p = q;
    return MT_OK;
}

static mt_status reserve(mt_model_scorer *s, int32_t n_sent, int32_t n_rows) {
    mt_status rc = MT_OK;
    if (n_sent > s->cap_sent) {
        int32_t **bufs[] = {&s->live, &s->new_live, &s->sel_sent};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0] && rc == MT_OK; i++)
            rc = grow_i32(bufs[i], n_sent);
        if (rc != MT_OK) return rc;
        s->cap_sent = n_sent;
    }
    if (n_rows > s->cap_rows) {
        int32_t **bufs[] = {&s->sel_rows, &s->prev_tok, &s->row_sent, &s->qpos, &s->hmap,
                            &s->hnew,     &s->hlen,     &s->hlen_new, &s->vpos};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0] && rc == MT_OK; i++)
            rc = grow_i32(bufs[i], n_rows);
        if (rc == MT_OK) rc = grow_i32(&s->ctx_len, n_rows * MT_MAX_STREAMS);
        if (rc != MT_OK) return rc;
        s->cap_rows = n_rows;
    }
    return MT_OK;
}

/* --------------------------------------------------------- lifetime */

/* Inference graphs memoize their constant subgraphs (transposed and packed
** weights), so the integer GEMM packs each weight matrix once per graph, and
** release values after their last use (the state and the outputs read after
** forward are kept: keep_state, mt_graph_keep).  With an integer gemm type
** (whose results already differ from float32 by the quantization of the
** activations, far more than f16 rounding) the context and frozen history
** are kept in f16 (MT_CACHE_F16): half the attention's memory traffic; with
** int8 products their keys in int8 (MT_CACHE_F16_INT8_KEYS: scored by integer products, a
** quarter of f16's instructions per key); float32 decoding keeps them in f32
** and stays bit for bit with Marian's. */
static mt_status new_graph(mt_gemm_type gemm_type, mt_kv_cache kv, mt_graph **g) {
    mt_graph_params gp = mt_graph_default_params();
    gp.workspace_bytes = 1 << 20;
    gp.training = false;
    gp.memoize = true;
    gp.release_values = true;
    gp.decode.gemm_type = gemm_type;
    gp.decode.caches = mt_kv_cache_resolve(kv, gemm_type);
    return mt_graph_init(NULL, gp, g);
}

mt_status mt_kv_cache_parse(const char *s, mt_kv_cache *out) {
    static const char *const names[] = {"auto", "float32", "float16", "bfloat16", "int8"};
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (!strcmp(s, names[i])) {
            *out = (mt_kv_cache)i;
            return MT_OK;
        }
    return mt_seterr(MT_ERR_INVALID,
                     "--kv-cache: '%s' is not auto, float32, float16, bfloat16 or int8", s);
}

mt_cache_precision mt_kv_cache_resolve(mt_kv_cache kv, mt_gemm_type gt) {
    switch (kv) {
    case MT_KV_FLOAT32: return MT_CACHE_F32;
    case MT_KV_FLOAT16: return MT_CACHE_F16;
    case MT_KV_BFLOAT16: return MT_CACHE_F16_BF16_CONTEXT;
    case MT_KV_INT8: return MT_CACHE_F16_INT8_KEYS;
    default:
        return gt == MT_GEMM_INT8      ? MT_CACHE_F16_INT8_KEYS
               : gt != MT_GEMM_FLOAT32 ? MT_CACHE_F16
                                       : MT_CACHE_F32;
    }
}

/* The state's nodes outlive the graph's forward (the next graph imports them). */
static void keep_state(mt_graph *g, const mt_dec_state *st) {
    for (int r = 0; r < st->n_rows; r++) {
        mt_graph_keep(g, st->rows[r]);
        mt_graph_keep(g, st->hist[r]);
    }
    for (int r = 0; r < st->n_fixed; r++)
        mt_graph_keep(g, st->fixed[r]);
}

mt_status mt_model_scorer_init(mt_model *m, mt_gemm_type gemm_type, mt_kv_cache kv,
                               mt_model_scorer **out) {
    *out = NULL;
    mt_model_scorer *s = mt_try_calloc(1, sizeof *s);
    if (s == NULL) return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    s->m = m;
    mt_status rc = MT_OK;
    for (int i = 0; i < 2 && rc == MT_OK; i++) {
        rc = new_graph(gemm_type, kv, &s->enc[i]);
        if (rc == MT_OK) rc = new_graph(gemm_type, kv, &s->step[i]);
        if (rc == MT_OK) rc = new_graph(gemm_type, kv, &s->hist[i]);
    }
    s->can_fold = mt_model_can_fold(m);
    if (rc == MT_OK) rc = new_graph(gemm_type, kv, &s->enc_add);
    /* one GEMM state for all: the alternate step graphs select a mini-batch's
    ** shortlist columns once (not once each: 128 -> 64 selections of the
    ** packed output layer on the test set), shapes are tuned once (auto) */
    mt_graph *others[] = {s->step[1], s->enc[0], s->enc[1], s->hist[0], s->hist[1], s->enc_add};
    for (size_t i = 0; i < sizeof others / sizeof others[0] && rc == MT_OK; i++)
        rc = mt_graph_share_gemm_state(others[i], s->step[0]);
    if (rc != MT_OK) {
        mt_model_scorer_free(s);
        return rc;
    }
    *out = s;
    return MT_OK;
}

void mt_model_scorer_free(mt_model_scorer *s) {
    if (s == NULL) return;
    for (int i = 0; i < 2; i++) {
        mt_graph_free(s->enc[i]);
        mt_graph_free(s->step[i]);
        mt_graph_free(s->hist[i]);
    }
    mt_graph_free(s->enc_add);
    int32_t *bufs[] = {s->live,     s->new_live, s->sel_sent, s->sel_rows, s->prev_tok,
                       s->row_sent, s->qpos,     s->hmap,     s->hnew,     s->hlen,
                       s->hlen_new, s->vpos,     s->ctx_len};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        mt_free(bufs[i]);
    mt_free(s->bseqs);
    mt_free(s->align_buf);
    mt_free(s->topk_buf);
    mt_free(s);
}

void mt_model_scorer_set_batch(mt_model_scorer *s, const mt_batch_seq *seqs, int32_t n, int n_src) {
    s->seqs = seqs;
    s->n_sent = n;
    s->n_src = n_src;
}

mt_model_scorer_stats mt_model_scorer_get_stats(const mt_model_scorer *s) {
    mt_model_scorer_stats st = s->stats;
    st.enc_bytes = st.step_bytes = st.hist_bytes = 0;
    for (int i = 0; i < 2; i++) {
        st.enc_bytes += mt_graph_get_stats(s->enc[i]).workspace_capacity;
        st.step_bytes += mt_graph_get_stats(s->step[i]).workspace_capacity;
        st.hist_bytes += mt_graph_get_stats(s->hist[i]).workspace_capacity;
    }
    st.enc_bytes += mt_graph_get_stats(s->enc_add).workspace_capacity;
    st.graph_bytes = st.enc_bytes + st.step_bytes + st.hist_bytes;
    return st;
}

/* ------------------------------------------------------- scorer ops */

static int32_t op_vocab_size(void *user) {
    mt_model_scorer *s = user;
    return mt_model_trg_vocab(s->m);
}

/* Encodes sentences[0..n) of the search's batch on g and makes their start
** state; live[at..at+n) get their ids. */
static mt_status encode_start(mt_model_scorer *s, mt_graph *g, const int32_t *sentences, int32_t n,
                              int32_t at, mt_dec_state *out) {
    if (s->seqs == NULL || s->n_src != mt_model_n_src(s->m))
        return mt_seterr(MT_ERR_INVALID, "translate: the scorer has no batch of %d inputs",
                         mt_model_n_src(s->m));
    mt_status rc = reserve(s, at + n, 0);
    if (rc != MT_OK) return rc;
    int32_t need = n * s->n_src;
    if (need > s->cap_seqs) {
        mt_batch_seq *q = mt_try_realloc(s->bseqs, sizeof *q * (size_t)need);
        if (q == NULL) return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
        s->bseqs = q;
        s->cap_seqs = need;
    }
    for (int32_t i = 0; i < n; i++) {
        if (sentences[i] < 0 || sentences[i] >= s->n_sent ||
            (at + i > 0 && sentences[i] <= s->live[at + i - 1]))
            return mt_seterr(MT_ERR_INVALID,
                             "translate: sentence %d is not a new one of the batch of %d",
                             (int)sentences[i], (int)s->n_sent);
        for (int k = 0; k < s->n_src; k++)
            s->bseqs[i * s->n_src + k] = s->seqs[sentences[i] * s->n_src + k];
        s->live[at + i] = sentences[i];
    }
    mt_batch *b = NULL;
    rc = mt_batch_make(s->n_src, false, n, s->bseqs, NULL, &b);
    if (rc != MT_OK) return rc;
    mt_graph_clear(g);
    mt_model_encoding enc;
    rc = mt_model_encode(s->m, g, b, &enc);
    if (rc == MT_OK) rc = mt_model_start(s->m, g, &enc, out);
    if (rc == MT_OK) keep_state(g, out);
    if (rc == MT_OK) rc = mt_graph_forward(g);
    mt_batch_free(b);
    return rc;
}

static mt_status op_start(void *user, const int32_t *sentences, int32_t n, void **state) {
    mt_model_scorer *s = user;
    *state = s;
    s->n_live = s->n_pend = 0;
    s->topup = false;
    s->fold_due = false;
    s->ecur = 0; /* encodings always on enc[0]: only it grows to encoder size */
    mt_status rc = encode_start(s, s->enc[0], sentences, n, 0, &s->st);
    s->n_live = rc == MT_OK ? n : 0;
    s->n_rows = s->n_live;
    return rc;
}

/* The fold of imp (a state imported into g, the other history graph)
** computed, and its caches made the state's. */
static mt_status fold_run(mt_model_scorer *s, mt_graph *g, mt_dec_state *imp, mt_dec_state *out) {
    mt_status rc = mt_model_fold(s->m, g, imp, true, out);
    if (rc == MT_OK) keep_state(g, out);
    if (rc == MT_OK) rc = mt_graph_forward(g);
    if (rc != MT_OK) return rc;
    memcpy(s->st.rows, out->rows, sizeof out->rows);
    memcpy(s->st.hist, out->hist, sizeof out->hist);
    s->st.hist_len = out->hist_len;
    s->st.pos = out->pos;
    s->hcur = 1 - s->hcur;
    s->stats.folds++;
    return MT_OK;
}

/* The caches of the state's rows frozen into a new history on the other
** history graph (with top-up each row's positions packed from the left). */
static mt_status fold(mt_model_scorer *s) {
    mt_graph *g = s->hist[1 - s->hcur];
    mt_graph_clear(g);
    mt_dec_state imp, out;
    int32_t n = s->n_rows;
    mt_status rc = mt_dec_state_import(g, &s->st, MT_DEC_ROWS, &imp);
    if (rc == MT_OK && imp.hist_len > 0) {
        imp.hist_ids = mt_input_i32(g, mt_shape1(n), s->hmap);
        rc = mt_graph_status(g);
    }
    if (s->topup) { /* each row's positions in all, this step's included */
        for (int32_t r = 0; r < n; r++)
            s->vpos[r] = s->qpos[r] + 1;
        imp.row_pos = s->vpos;
        imp.hist_lens = imp.hist_len > 0 ? s->hlen : NULL;
    }
    if (rc == MT_OK) rc = fold_run(s, g, &imp, &out);
    if (rc != MT_OK) return rc;
    for (int32_t r = 0; r < n; r++) {
        s->hmap[r] = r;
        s->hlen[r] = s->topup ? s->vpos[r] : out.hist_len;
    }
    s->stats.topup_folds += s->topup;
    return MT_OK;
}

/* The fold a step asked for (fold_due), made by the next step once it
** knows which rows it continues: those (its parents, each once, in
** increasing order) become the rows of the new history and hmap sends each
** of them to its row there.  Beam search continues about two thirds of
** the rows (test set, beam 4: 5659 distinct parents of 8429 rows at the
** steps after a fold) and a fold copies each row's whole history.  The
** same values as a fold of every row: the rows left out are never read.
** Not with top-up (fold, as the step asked). */
static mt_status fold_parents(mt_model_scorer *s, int32_t n) {
    int32_t *used = s->vpos, *par = s->hlen_new, *hsel = s->hnew; /* scratch [rows] */
    memset(used, 0, sizeof(int32_t) * (size_t)s->n_rows);
    for (int32_t i = 0; i < n; i++)
        if (s->sel_rows[i] >= 0 && s->sel_rows[i] < s->n_rows) used[s->sel_rows[i]] = 1;
    int32_t nu = 0;
    for (int32_t p = 0; p < s->n_rows; p++)
        if (used[p]) {
            hsel[nu] = s->hmap[p];
            par[nu++] = p;
        }
    if (nu == 0) return MT_OK;
    mt_graph *g = s->hist[1 - s->hcur];
    mt_graph_clear(g);
    mt_dec_state imp, out;
    mt_status rc = mt_dec_state_import(g, &s->st, MT_DEC_ROWS, &imp);
    imp.batch = nu; /* the rows of the fold */
    imp.beam = 1;
    imp.row_ids = mt_input_i32(g, mt_shape1(nu), par); /* picked by the packs */
    if (rc == MT_OK && imp.hist_len > 0) imp.hist_ids = mt_input_i32(g, mt_shape1(nu), hsel);
    if (rc == MT_OK) rc = mt_graph_status(g);
    if (rc == MT_OK) rc = fold_run(s, g, &imp, &out);
    if (rc != MT_OK) return rc;
    for (int32_t j = 0; j < nu; j++) {
        s->hmap[par[j]] = j;
        s->hlen[par[j]] = out.hist_len;
    }
    return MT_OK;
}

/* Top-up: the new sentences' encoding and start state on enc_add, then the
** FIXED part of the state for the live and the new sentences on the other
** encoder graph (mt_model_append); their rows join at the next step. */
static mt_status op_add(void *user, void *state, const int32_t *sentences, int32_t n) {
    mt_model_scorer *s = state;
    (void)user;
    if (n < 1) return MT_OK;
    int32_t at = s->n_live + s->n_pend;
    mt_dec_state add;
    mt_status rc = encode_start(s, s->enc_add, sentences, n, at, &add);
    if (rc != MT_OK) return rc;
    mt_graph *g = s->enc[1 - s->ecur];
    mt_graph_clear(g);
    mt_dec_state cur, imp, merged;
    rc = mt_dec_state_import(g, &s->st, MT_DEC_FIXED, &cur);
    if (rc == MT_OK) rc = mt_dec_state_import(g, &add, MT_DEC_FIXED, &imp);
    cur.batch = at; /* the FIXED part already has the pending sentences */
    if (rc == MT_OK) rc = mt_model_append(s->m, g, &cur, &imp, MT_DEC_FIXED, &merged);
    if (rc == MT_OK) keep_state(g, &merged);
    if (rc == MT_OK) rc = mt_graph_forward(g);
    if (rc != MT_OK) return rc;
    memcpy(s->st.fixed, merged.fixed, sizeof merged.fixed);
    s->ecur = 1 - s->ecur;
    s->n_pend += n;
    s->topup = true;
    s->stats.adds++;
    return MT_OK;
}

/* The FIXED part of the state for the sentences sel_sent[0..n): on the other
** encoder graph, which becomes the current one. */
static mt_status purge(mt_model_scorer *s, int32_t n) {
    mt_graph *g = s->enc[1 - s->ecur];
    mt_graph_clear(g);
    mt_dec_state imp, red;
    mt_status rc = mt_dec_state_import(g, &s->st, MT_DEC_FIXED, &imp);
    imp.batch = s->n_live + s->n_pend;
    if (rc == MT_OK)
        rc = mt_model_reorder(s->m, g, &imp, s->sel_sent, n, NULL, 0, MT_DEC_FIXED, &red);
    if (rc == MT_OK && s->topup) { /* contexts no longer than the longest live source */
        int32_t len[MT_MAX_STREAMS] = {0};
        for (int32_t b = 0; b < n; b++)
            for (int k = 0; k < s->n_src && k < MT_MAX_STREAMS; k++) {
                int32_t l = s->seqs[(size_t)s->new_live[b] * (size_t)s->n_src + (size_t)k].len;
                len[k] = l > len[k] ? l : len[k];
            }
        rc = mt_model_fit_contexts(s->m, g, &red, len, &red);
    }
    if (rc == MT_OK) keep_state(g, &red);
    if (rc == MT_OK) rc = mt_graph_forward(g);
    if (rc != MT_OK) return rc;
    memcpy(s->st.fixed, red.fixed, sizeof red.fixed);
    s->ecur = 1 - s->ecur;
    s->stats.purges++;
    return MT_OK;
}

/* What a step gives back: with am_cols each row's argmax (skip: the
** suppressed columns, mt_scorer_ops.step_argmax); with k > 0 each row's k
** best (fused log-softmax + top-k of the logits) into top_cols/logprobs
** [n_hyps * k]; else whole rows into logprobs. */
typedef struct step_out {
    int32_t k;
    int32_t *top_cols;
    float *logprobs;
    const float *skip;
    int32_t *am_cols;
} step_out;

/* want's top_cols / logprobs [n, k] from the step's topk node [n, 2 k]
** (each row's values, then their columns as floats). */
static mt_status get_topk(mt_model_scorer *s, mt_node *top, int32_t n, int32_t k,
                          const step_out *want) {
    size_t need = 2 * (size_t)n * (size_t)k;
    if (need > s->cap_topk) {
        float *q = mt_try_realloc(s->topk_buf, sizeof(float) * need);
        if (q == NULL) return mt_seterr(MT_ERR_NOMEM, "translate: out of memory (top-k)");
        s->topk_buf = q;
        s->cap_topk = need;
    }
    mt_status rc = mt_node_get(top, s->topk_buf, (int64_t)need);
    for (size_t r = 0; rc == MT_OK && r < (size_t)n; r++) {
        const float *row = s->topk_buf + 2 * (size_t)k * r;
        memcpy(want->logprobs + (size_t)k * r, row, sizeof(float) * (size_t)k);
        for (int32_t j = 0; j < k; j++)
            want->top_cols[(size_t)k * r + (size_t)j] = (int32_t)row[k + j];
    }
    return rc;
}

/* One step (want: step_out). */
static mt_status step_rows(mt_model_scorer *s, const mt_scorer_step *in, const step_out *want,
                           float *align) {
    const int32_t k = want->k;
    const int32_t n = in->n_hyps, n_tot = s->n_live + s->n_pend;
    if (s->fold_due && (s->topup || s->n_pend > 0)) { /* sentences joined since */
        s->fold_due = false;
        mt_status rc = fold(s);
        if (rc != MT_OK) return rc;
    }
    /* (the rows of the state and those appended for pending sentences) */
    mt_status rc = reserve(s, n_tot, n > s->n_rows + s->n_pend ? n : s->n_rows + s->n_pend);
    if (rc != MT_OK) return rc;
    /* sentences of this step (increasing) */
    int32_t n_new = 0;
    for (int32_t i = 0; i < n; i++) {
        if (n_new == 0 || s->new_live[n_new - 1] != in->hyp_sentence[i]) {
            if (n_new == n_tot)
                return mt_seterr(MT_ERR_INVALID, "translate: step rows of unknown sentences");
            s->new_live[n_new++] = in->hyp_sentence[i];
        }
        s->row_sent[i] = n_new - 1;
    }
    if (n_new == 0) return MT_OK;
    /* position of each in the state (both lists increase) */
    int32_t ob = 0;
    bool same_sent = n_new == n_tot;
    for (int32_t b = 0; b < n_new; b++) {
        while (ob < n_tot && s->live[ob] < s->new_live[b])
            ob++;
        if (ob == n_tot || s->live[ob] != s->new_live[b])
            return mt_seterr(MT_ERR_INVALID, "translate: sentence %d is not decoding",
                             (int)s->new_live[b]);
        s->sel_sent[b] = ob;
        same_sent = same_sent && ob == b;
    }
    /* rows: parent state row and previous token.  A sentence's first row
    ** comes from its start row: one per sentence at the start of the
    ** search, or, for a sentence added since (top-up), the row appended
    ** for it below, after the state's n_rows. */
    bool identity = same_sent && n == s->n_rows && s->n_pend == 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t parent;
        if (in->reorder[i] < 0) {
            parent = s->n_rows - s->n_live + s->sel_sent[s->row_sent[i]];
        } else {
            if (in->reorder[i] >= in->n_prev || in->reorder[i] >= s->n_rows)
                return mt_seterr(MT_ERR_INVALID, "translate: bad parent row %d",
                                 (int)in->reorder[i]);
            parent = in->reorder[i];
        }
        s->sel_rows[i] = parent;
        s->prev_tok[i] = in->prev_tokens[i] < 0 ? 0 : in->prev_tokens[i];
        s->qpos[i] = in->hyp_pos[i];
        identity = identity && parent == i;
    }
    if (s->fold_due) {
        s->fold_due = false;
        rc = fold_parents(s, n);
        if (rc != MT_OK) return rc;
    }
    /* Finished sentences stay in the FIXED part (the rows name their
    ** sentence's position in it) until at most half of it is live: purging
    ** copies the whole projected contexts of the live sentences, so this
    ** copies them about log2(batch) times per search instead of once per
    ** finishing step.  With top-up every change purges, as before. */
    bool purged = !same_sent && (s->topup || s->n_pend > 0 || 2 * n_new <= n_tot);
    if (purged) {
        rc = purge(s, n_new);
        if (rc != MT_OK) return rc;
    } else if (!same_sent) {
        for (int32_t i = 0; i < n; i++)
            s->row_sent[i] = s->sel_sent[s->row_sent[i]];
    }
    bool row_is_sent = n == n_new && (same_sent || purged); /* row i reads sentence i */
    /* the step */
    mt_graph *g = s->step[1 - s->scur];
    mt_graph_clear(g);
    mt_dec_state cur, next;
    mt_dec_step out;
    rc = mt_dec_state_import(g, &s->st, MT_DEC_ROWS | MT_DEC_FIXED, &cur);
    if (rc == MT_OK && s->n_pend > 0) { /* rows of the sentences added since */
        mt_dec_state add = cur;
        add.batch = s->n_pend;
        add.beam = 1;
        add.pos = 0;
        rc = mt_model_append(s->m, g, &cur, &add, MT_DEC_ROWS, &cur);
    }
    if (rc == MT_OK && !identity) { /* made by the step, with its append */
        cur.row_ids = mt_input_i32(g, mt_shape1(n), s->sel_rows);
        rc = mt_graph_status(g);
    }
    cur.batch = n;
    cur.beam = 1;
    if (rc == MT_OK && !row_is_sent) {
        cur.row_sent = mt_input_i32(g, mt_shape1(n), s->row_sent);
        rc = mt_graph_status(g);
    }
    if (rc == MT_OK && cur.hist_len > 0) {        /* the history row of each new row */
        for (int32_t j = 0; j < s->n_pend; j++) { /* appended rows: none there */
            s->hmap[s->n_rows + j] = 0;
            s->hlen[s->n_rows + j] = 0;
        }
        for (int32_t r = 0; r < n; r++) {
            s->hnew[r] = s->hmap[s->sel_rows[r]];
            s->hlen_new[r] = s->hlen[s->sel_rows[r]];
        }
        cur.hist_ids = mt_input_i32(g, mt_shape1(n), s->hnew);
        if (s->topup) cur.hist_lens = s->hlen_new;
        rc = mt_graph_status(g);
    }
    if (rc == MT_OK && s->topup) {
        /* rows at their own positions; cached positions that are padding
        ** for every row go (with a frozen history at the next fold) */
        int32_t drop = cur.hist_len > 0 ? 0 : cur.pos;
        for (int32_t r = 0; r < n; r++) {
            if (s->qpos[r] > cur.pos)
                return mt_seterr(MT_ERR_INVALID, "translate: row at position %d of %d",
                                 (int)s->qpos[r], (int)cur.pos);
            if (cur.pos - s->qpos[r] < drop) drop = cur.pos - s->qpos[r];
        }
        cur.pos -= drop; /* dropped by the step too */
        cur.row_off = drop;
        cur.row_pos = s->qpos;
    }
    /* each row's source lengths: the fused cross-attention reads no padding */
    for (int c = 0; c < s->n_src && c < MT_MAX_STREAMS; c++)
        for (int32_t r = 0; r < n; r++)
            s->ctx_len[(size_t)c * (size_t)n + (size_t)r] =
                s->seqs[(size_t)in->hyp_sentence[r] * (size_t)s->n_src + (size_t)c].len;
    cur.ctx_lens = s->ctx_len;
    if (rc == MT_OK && in->shortlist)
        cur.shortlist = mt_input_i32(g, mt_shape1(in->n_shortlist), in->shortlist);
    cur.logits_only = in->argmax_only || k > 0; /* beam 1: the argmax of the logits */
    cur.argmax = want->am_cols != NULL;         /* ... from the output layer's epilogue if it can */
    cur.argmax_skip = want->skip;
    cur.topk = want->am_cols == NULL ? k : 0; /* ... and beam > 1 its top-k from the product */
    cur.no_align = align == NULL;
    if (rc == MT_OK) rc = mt_model_step(s->m, g, NULL, &cur, s->prev_tok, &next, &out);
    if (rc != MT_OK) return rc;
    mt_node *lp = out.logprobs, *al = align ? out.align : NULL;
    keep_state(g, &next);
    mt_graph_keep(g, lp);
    mt_graph_keep(g, al);
    mt_graph_keep(g, out.argmax);
    mt_graph_keep(g, out.topk);
    rc = mt_graph_forward(g);
    int32_t cols = in->shortlist ? in->n_shortlist : mt_model_trg_vocab(s->m);
    if (rc == MT_OK && want->am_cols && out.argmax)
        rc = mt_node_get_i32(out.argmax, want->am_cols, n);
    else if (rc == MT_OK && want->am_cols)
        rc = mt_node_argmax(lp, want->skip, want->am_cols);
    else if (rc == MT_OK && k > 0 && out.topk)
        rc = get_topk(s, out.topk, n, k, want);
    else if (rc == MT_OK && k > 0)
        rc = mt_node_logsoftmax_topk(lp, k, want->top_cols, want->logprobs);
    else if (rc == MT_OK)
        rc = mt_node_get(lp, want->logprobs, (int64_t)n * cols);
    if (rc == MT_OK && align) {
        if (al == NULL) return mt_seterr(MT_ERR_UNSUPPORTED, "translate: no alignment layer");
        int64_t sl = mt_node_shape(al).dim[1];
        size_t need = (size_t)n * (size_t)sl;
        if (sl > in->align_stride)
            return mt_seterr(MT_ERR_INVALID, "translate: source of %lld > alignment stride %d",
                             (long long)sl, (int)in->align_stride);
        if (need > s->cap_align) {
            float *q = mt_try_realloc(s->align_buf, sizeof(float) * need);
            if (q == NULL) return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
            s->align_buf = q;
            s->cap_align = need;
        }
        rc = mt_node_get(al, s->align_buf, (int64_t)need);
        for (int32_t i = 0; rc == MT_OK && i < n; i++)
            memcpy(align + (size_t)i * (size_t)in->align_stride, s->align_buf + (size_t)i * sl,
                   sizeof(float) * (size_t)sl);
    }
    if (rc != MT_OK) return rc;
    /* commit */
    s->st = next;
    s->st.shortlist = NULL;
    s->scur = 1 - s->scur;
    if (same_sent || purged) { /* else the state keeps its sentences */
        memcpy(s->live, s->new_live, sizeof(int32_t) * (size_t)n_new);
        s->n_live = n_new;
    }
    s->n_pend = 0;
    s->n_rows = n;
    s->stats.steps++;
    s->stats.rows += n;
    s->stats.row_cols += (int64_t)n * cols;
    if (s->st.hist_len > 0) {
        int32_t *t = s->hmap;
        s->hmap = s->hnew;
        s->hnew = t;
        t = s->hlen;
        s->hlen = s->hlen_new;
        s->hlen_new = t;
    }
    if (s->can_fold && s->st.pos - s->st.hist_len >= FOLD_EVERY) {
        if (s->topup) return fold(s);
        s->fold_due = true; /* fold_parents, at the next step */
    }
    return MT_OK;
}

static mt_status op_step(void *user, void *state, const mt_scorer_step *in, float *logprobs,
                         float *align) {
    (void)user;
    return step_rows(state, in, &(step_out){.logprobs = logprobs}, align);
}

static mt_status op_step_topk(void *user, void *state, const mt_scorer_step *in, int32_t k,
                              int32_t *cols, float *logprobs, float *align) {
    (void)user;
    return step_rows(state, in, &(step_out){.k = k, .top_cols = cols, .logprobs = logprobs}, align);
}

static mt_status op_step_argmax(void *user, void *state, const mt_scorer_step *in,
                                const float *skip, int32_t *cols, float *align) {
    (void)user;
    return step_rows(state, in, &(step_out){.skip = skip, .am_cols = cols}, align);
}

/* The keys and values of the contexts and of the frozen history that the
** state holds (the per-sentence nodes end with the n_ctx masks of the
** contexts, which are not counted): their number and bytes. */
static void cache_size(mt_model_scorer *s) {
    s->stats.cache_values = s->stats.cache_bytes = 0;
    for (int r = 0; r < MT_DEC_STATE_SLOTS; r++) {
        const mt_node *kept[2] = {r < s->st.n_fixed - s->st.n_ctx ? s->st.fixed[r] : NULL,
                                  r < s->st.n_rows ? s->st.hist[r] : NULL};
        for (int q = 0; q < 2; q++) {
            if (kept[q] == NULL) continue;
            size_t v = (size_t)mt_node_numel(kept[q]);
            s->stats.cache_values += v;
            s->stats.cache_bytes += v * mt_dtype_size(mt_node_dtype(kept[q]));
        }
    }
}

static void op_finish(void *user, void *state) {
    mt_model_scorer *s = user;
    (void)state;
    cache_size(s); /* after the search's last step */
    memset(&s->st, 0, sizeof s->st);
    s->n_live = s->n_pend = 0;
    s->topup = false;
    s->fold_due = false;
    s->n_rows = 0;
}

static const mt_scorer_ops model_scorer_ops = {
    .vocab_size = op_vocab_size,
    .start = op_start,
    .add = op_add,
    .step = op_step,
    .finish = op_finish,
    .step_topk = op_step_topk,
    .step_argmax = op_step_argmax,
};

mt_scorer mt_model_scorer_get(mt_model_scorer *s) { return (mt_scorer){&model_scorer_ops, s}; }
