/*
** test_transformer.c: transformer models against Marian 1.12 itself.
**
** The fixtures under tests/data/marian were trained and scored by real
** Marian (see their README.md); their *.out files are the oracle:
**   score.out, score-norm.out, score-words.out, score-summary*.out
**     sentence log-probs of ref.de given input.en (marian-scorer), compared
**     per sentence within 1e-3 absolute, one sentence per batch (as Marian
**     ran them) and again in padded batches of 16;
**   beam1.out (transformer-tiny, -r2l, -aan)
**     greedy decoding through the step API must give Marian's text exactly.
** Fresh models: central finite differences on parameters through
** mt_model_build_loss, and a save -> load round trip (same loss, same
** special:model.yml; the fixture's model.yml is re-emitted byte-exactly).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "model.h"
#include "mt.h"
#include "test_util.h"
#include "vocab.h"

#define DATA MT_TEST_DATA "/marian/"
#define CHECK_STATUS_OK(expr) CHECK((expr) == MT_OK, "%s: %s", #expr, mt_errmsg())

/* ------------------------------------------------------------ helpers */

typedef struct fixture {
    const char *dir;
    const char *src_vocab, *trg_vocab;
    mt_model *m;
    mt_vocab *vs, *vt;
    lines src, ref;
    int n;
    int32_t **sid, **tid; /* encoded, model order, EOS included */
    int32_t *slen, *tlen;
    lines src2; /* multi-source models: the second source (input.mt) */
    int32_t **sid2, *slen2;
    int n_src;
} fixture;

static int encode_all(mt_vocab *v, lines *l, bool r2l, int32_t ***ids, int32_t **len) {
    *ids = calloc((size_t)l->n, sizeof(int32_t *));
    *len = calloc((size_t)l->n, sizeof(int32_t));
    for (int i = 0; i < l->n; i++) {
        int64_t n = 0;
        if (mt_vocab_encode(v, l->s[i], MT_VOCAB_ADD_EOS, &(*ids)[i], &n) != MT_OK) return 0;
        (*len)[i] = (int32_t)n;
        if (r2l) mt_batch_reverse_seq((*ids)[i], (int32_t)n);
    }
    return 1;
}

static int fixture_open(fixture *fx, const char *dir, const char *sv, const char *tv) {
    char p[512];
    memset(fx, 0, sizeof *fx);
    fx->dir = dir;
    snprintf(p, sizeof p, DATA "%s/model.npz", dir);
    mt_status rc = mt_model_load(p, NULL, &fx->m);
    CHECK(rc == MT_OK, "load %s: %s", p, mt_errmsg());
    if (rc != MT_OK) return 0;
    snprintf(p, sizeof p, DATA "%s/%s", dir, sv);
    CHECK_STATUS(mt_vocab_load(p, 0, &fx->vs));
    snprintf(p, sizeof p, DATA "%s/%s", dir, tv);
    CHECK_STATUS(mt_vocab_load(p, 0, &fx->vt));
    if (!fx->vs || !fx->vt) return 0;
    snprintf(p, sizeof p, DATA "%s/input.en", dir);
    CHECK(read_lines(p, &fx->src), "read %s", p);
    snprintf(p, sizeof p, DATA "%s/ref.de", dir);
    CHECK(read_lines(p, &fx->ref), "read %s", p);
    CHECK(fx->src.n == fx->ref.n && fx->src.n > 0, "%s: %d inputs, %d refs", dir, fx->src.n,
          fx->ref.n);
    fx->n = fx->src.n;
    bool r2l = mt_model_get_config(fx->m)->right_left;
    fx->n_src = mt_model_n_src(fx->m);
    if (fx->n_src > 1) {
        snprintf(p, sizeof p, DATA "%s/input.mt", dir);
        CHECK(read_lines(p, &fx->src2) && fx->src2.n == fx->n, "read %s", p);
        if (!encode_all(fx->vs, &fx->src2, r2l, &fx->sid2, &fx->slen2)) return 0;
    }
    if (!encode_all(fx->vs, &fx->src, r2l, &fx->sid, &fx->slen) ||
        !encode_all(fx->vt, &fx->ref, r2l, &fx->tid, &fx->tlen)) {
        CHECK(0, "encode %s: %s", dir, mt_errmsg());
        return 0;
    }
    return fx->n > 0;
}

static void fixture_close(fixture *fx) {
    for (int i = 0; i < fx->n; i++) {
        if (fx->sid) mt_free(fx->sid[i]);
        if (fx->tid) mt_free(fx->tid[i]);
        if (fx->sid2) mt_free(fx->sid2[i]);
    }
    free(fx->sid2);
    free(fx->slen2);
    lines_free(&fx->src2);
    free(fx->sid);
    free(fx->tid);
    free(fx->slen);
    free(fx->tlen);
    lines_free(&fx->src);
    lines_free(&fx->ref);
    mt_vocab_free(fx->vs);
    mt_vocab_free(fx->vt);
    mt_model_free(fx->m);
}

static mt_batch *make_batch(fixture *fx, int first, int count, bool with_trg) {
    int per = fx->n_src + (with_trg ? 1 : 0);
    mt_batch_seq *seqs = calloc((size_t)count * (size_t)per, sizeof *seqs);
    for (int i = 0; i < count; i++) {
        seqs[i * per] = (mt_batch_seq){fx->sid[first + i], fx->slen[first + i]};
        if (fx->n_src > 1)
            seqs[i * per + 1] = (mt_batch_seq){fx->sid2[first + i], fx->slen2[first + i]};
        if (with_trg)
            seqs[i * per + fx->n_src] = (mt_batch_seq){fx->tid[first + i], fx->tlen[first + i]};
    }
    mt_batch *b = NULL;
    mt_status rc = mt_batch_make(fx->n_src, with_trg, count, seqs, NULL, &b);
    free(seqs);
    CHECK(rc == MT_OK, "batch: %s", mt_errmsg());
    return b;
}

/* Scores sentences [first, first+count) as one batch: per-sentence and
** per-word log-probs (words in model order, EOS last). */
static int score_batch(fixture *fx, mt_graph *g, int first, int count, double *sent,
                       float **words) {
    mt_batch *b = make_batch(fx, first, count, true);
    if (!b) return 0;
    mt_graph_clear(g);
    mt_model_loss L = mt_model_build_loss(fx->m, g, b, 0.0f);
    int ok = CHECK(L.status == MT_OK && L.cost != NULL, "build loss: %s", mt_errmsg());
    mt_status rc = ok ? mt_graph_forward(g) : MT_ERR_INVALID;
    ok = ok && CHECK(rc == MT_OK, "forward: %s", mt_errmsg());
    int64_t tl = b->trg_len;
    float *ls = malloc(sizeof(float) * (size_t)count);
    float *lw = malloc(sizeof(float) * (size_t)(count * tl));
    if (ok) {
        CHECK_STATUS(mt_node_get(L.logprob_sent, ls, count));
        CHECK_STATUS(mt_node_get(L.logprob_word, lw, count * tl));
        for (int i = 0; i < count; i++) {
            sent[first + i] = ls[i];
            if (words) {
                words[first + i] = malloc(sizeof(float) * (size_t)fx->tlen[first + i]);
                memcpy(words[first + i], lw + i * tl, sizeof(float) * (size_t)fx->tlen[first + i]);
            }
        }
    }
    free(ls);
    free(lw);
    mt_batch_free(b);
    return ok;
}

/* Marian's numbers from a .out file: the leading number of each line. */
static int read_numbers(const char *path, double *out, int n) {
    lines l;
    if (!read_lines(path, &l)) return 0;
    int ok = l.n == n;
    for (int i = 0; ok && i < n; i++)
        out[i] = strtod(l.s[i], NULL);
    lines_free(&l);
    return ok;
}

/* ------------------------------------------------------ scoring tests */

static void test_scores(const char *dir, const char *sv, const char *tv) {
    fixture fx;
    if (!fixture_open(&fx, dir, sv, tv)) {
        fixture_close(&fx);
        return;
    }
    int n = fx.n;
    char p[512];
    double *want = calloc((size_t)n, sizeof(double)), *got = calloc((size_t)n, sizeof(double));
    double *got16 = calloc((size_t)n, sizeof(double));
    float **words = calloc((size_t)n, sizeof(float *));
    mt_graph *g = NULL;
    mt_graph_params gp = mt_graph_default_params();
    CHECK_STATUS(mt_graph_init(NULL, gp, &g));

    /* one sentence per batch, as Marian ran them (--mini-batch 1) */
    for (int i = 0; i < n; i++)
        score_batch(&fx, g, i, 1, got, words);
    snprintf(p, sizeof p, DATA "%s/score.out", dir);
    CHECK(read_numbers(p, want, n), "read %s", p);
    double maxd = 0, sum = 0;
    int64_t words_total = 0;
    for (int i = 0; i < n; i++) {
        double dd = fabs(got[i] - want[i]);
        if (dd > maxd) maxd = dd;
        CHECK_CLOSE(got[i], want[i], 1e-3, 0, "%s sentence %d", dir, i + 1);
        sum += got[i];
        words_total += fx.tlen[i];
    }
    fprintf(stderr, "%s: score.out max abs diff %.3g over %d sentences\n", dir, maxd, n);

    /* normalised: divided by the reference length incl. EOS */
    snprintf(p, sizeof p, DATA "%s/score-norm.out", dir);
    CHECK(read_numbers(p, want, n), "read %s", p);
    for (int i = 0; i < n; i++)
        CHECK_CLOSE(got[i] / fx.tlen[i], want[i], 1e-4, 0, "%s normalised %d", dir, i + 1);

    /* word scores: "SUM ||| WordScores= w1 ... wN" */
    lines ws;
    snprintf(p, sizeof p, DATA "%s/score-words.out", dir);
    CHECK(read_lines(p, &ws) && ws.n == n, "read %s", p);
    double maxw = 0;
    for (int i = 0; i < n && i < ws.n; i++) {
        char *q = strstr(ws.s[i], "WordScores=");
        CHECK(q != NULL, "%s line %d has no WordScores", p, i + 1);
        if (!q) continue;
        q += strlen("WordScores=");
        int k = 0;
        char *end;
        for (double v = strtod(q, &end); end != q; v = strtod(q, &end), k++) {
            q = end;
            if (k < fx.tlen[i] && words[i]) {
                double dd = fabs(words[i][k] - v);
                if (dd > maxw) maxw = dd;
                CHECK_CLOSE(words[i][k], v, 2e-4, 0, "%s word %d of sentence %d", dir, k + 1,
                            i + 1);
            }
        }
        CHECK(k == fx.tlen[i], "%s sentence %d: %d word scores, %d reference tokens", dir, i + 1, k,
              fx.tlen[i]);
    }
    lines_free(&ws);
    fprintf(stderr, "%s: score-words.out max abs diff %.3g\n", dir, maxw);

    /* summaries: ce-sum and perplexity, printed with 6 significant digits */
    double s1 = 0, s2 = 0;
    snprintf(p, sizeof p, DATA "%s/score-summary.out", dir);
    CHECK(read_numbers(p, &s1, 1), "read %s", p);
    CHECK_CLOSE(-sum, s1, 0, 1e-5, "%s ce-sum summary", dir);
    snprintf(p, sizeof p, DATA "%s/score-summary-perplexity.out", dir);
    CHECK(read_numbers(p, &s2, 1), "read %s", p);
    CHECK_CLOSE(exp(-sum / (double)words_total), s2, 0, 1e-5, "%s perplexity summary", dir);

    /* padded batches of 16: padding must not change the scores */
    double maxb = 0;
    for (int i = 0; i < n; i += 16)
        score_batch(&fx, g, i, n - i < 16 ? n - i : 16, got16, NULL);
    for (int i = 0; i < n; i++) {
        double dd = fabs(got16[i] - got[i]);
        if (dd > maxb) maxb = dd;
        CHECK_CLOSE(got16[i], got[i], 1e-3, 0, "%s sentence %d in a batch of 16", dir, i + 1);
    }
    fprintf(stderr, "%s: batched (16) vs single max abs diff %.3g\n", dir, maxb);

    for (int i = 0; i < n; i++)
        free(words[i]);
    free(words);
    free(want);
    free(got);
    free(got16);
    mt_graph_free(g);
    fixture_close(&fx);
}

/* ------------------------------------------------- greedy decoding */

/* Greedy search through the step API as Marian's beam search with -b 1:
** argmax of the log-probs (UNK suppressed), stop at EOS; the length limit
** is --max-length-factor 3 times the source length (EOS included). */
static int greedy(fixture *fx, mt_graph *g, int i, int32_t *hyp, int cap, int *n_out) {
    *n_out = 0;
    if (fx->slen[i] == 1) return 1; /* empty input: Marian forces EOS */
    mt_batch *b = make_batch(fx, i, 1, false);
    if (!b) return 0;
    mt_graph_clear(g);
    mt_model_encoding enc;
    mt_dec_state st;
    int ok = 1;
    CHECK_STATUS(mt_model_encode(fx->m, g, b, &enc));
    CHECK_STATUS(mt_model_start(fx->m, g, &enc, &st));
    int32_t v = mt_model_trg_vocab(fx->m), eos = mt_vocab_eos_id(fx->vt);
    int32_t unk = mt_vocab_unk_id(fx->vt);
    float *lp = malloc(sizeof(float) * (size_t)v);
    int max_len = 3 * fx->slen[i];
    int32_t prev = 0;
    for (int t = 0; t < max_len && t < cap; t++) {
        mt_dec_state next;
        mt_dec_step out;
        mt_status rc = mt_model_step(fx->m, g, &enc, &st, &prev, &next, &out);
        if (rc == MT_OK) rc = mt_graph_forward(g);
        if (rc == MT_OK) rc = mt_node_get(out.logprobs, lp, v);
        if (!CHECK(rc == MT_OK, "step %d of sentence %d: %s", t, i + 1, mt_errmsg())) {
            ok = 0;
            break;
        }
        int32_t best = -1;
        for (int32_t k = 0; k < v; k++)
            if (k != unk && (best < 0 || lp[k] > lp[best])) best = k;
        if (best == eos) break;
        hyp[(*n_out)++] = best;
        prev = best;
        st = next;
    }
    free(lp);
    mt_batch_free(b);
    return ok;
}

static void test_greedy(const char *dir, const char *sv, const char *tv) {
    fixture fx;
    if (!fixture_open(&fx, dir, sv, tv)) {
        fixture_close(&fx);
        return;
    }
    char p[512];
    lines want;
    snprintf(p, sizeof p, DATA "%s/beam1.out", dir);
    CHECK(read_lines(p, &want) && want.n == fx.n, "read %s", p);
    mt_graph *g = NULL;
    CHECK_STATUS(mt_graph_init(NULL, mt_graph_default_params(), &g));
    bool r2l = mt_model_get_config(fx.m)->right_left;
    int same = 0;
    int32_t hyp[1024];
    for (int i = 0; i < fx.n && i < want.n && g; i++) {
        int n = 0;
        if (!greedy(&fx, g, i, hyp, 1024, &n)) break;
        if (r2l)
            for (int a = 0, z = n - 1; a < z; a++, z--) {
                int32_t tmp = hyp[a];
                hyp[a] = hyp[z];
                hyp[z] = tmp;
            }
        char *text = NULL;
        CHECK_STATUS(mt_vocab_decode(fx.vt, hyp, n, 0, &text));
        if (text) {
            same += CHECK(!strcmp(text, want.s[i]), "%s beam1 line %d:\n  got  '%s'\n  want '%s'",
                          dir, i + 1, text, want.s[i]);
        }
        mt_free(text);
    }
    fprintf(stderr, "%s: greedy decoding matches beam1.out on %d of %d lines\n", dir, same, fx.n);
    lines_free(&want);
    mt_graph_free(g);
    fixture_close(&fx);
}

/* Batched incremental decoding with K = 2 rows per sentence (both rows of
** a sentence follow the same greedy path) and padded sources: exercises
** mt_model_select, the batch-major cross-attention and the source mask.
** The text must equal beam1.out for every sentence. */
static void test_greedy_batched(const char *dir, const char *sv, const char *tv, int first,
                                int count) {
    fixture fx;
    if (!fixture_open(&fx, dir, sv, tv)) {
        fixture_close(&fx);
        return;
    }
    char p[512];
    lines want;
    snprintf(p, sizeof p, DATA "%s/beam1.out", dir);
    CHECK(read_lines(p, &want) && want.n == fx.n, "read %s", p);
    mt_graph *g = NULL;
    CHECK_STATUS(mt_graph_init(NULL, mt_graph_default_params(), &g));
    mt_batch *b = make_batch(&fx, first, count, false);
    const int k = 2;
    int32_t v = mt_model_trg_vocab(fx.m), eos = mt_vocab_eos_id(fx.vt);
    int32_t unk = mt_vocab_unk_id(fx.vt);
    int32_t *prev = calloc((size_t)(count * k), sizeof(int32_t));
    int32_t *rows = calloc((size_t)(count * k), sizeof(int32_t));
    int32_t *hyp = calloc((size_t)(count * 1024), sizeof(int32_t));
    int *len = calloc((size_t)count, sizeof(int));
    bool *done = calloc((size_t)count, sizeof(bool));
    float *lp = malloc(sizeof(float) * (size_t)(count * k * v));
    mt_model_encoding enc;
    mt_dec_state st;
    if (g && b) {
        CHECK_STATUS(mt_model_encode(fx.m, g, b, &enc));
        CHECK_STATUS(mt_model_start(fx.m, g, &enc, &st));
    }
    int max_len = 0;
    for (int i = 0; i < count; i++) {
        if (3 * fx.slen[first + i] > max_len) max_len = 3 * fx.slen[first + i];
        done[i] = fx.slen[first + i] == 1;
    }
    for (int t = 0; g && b && t < max_len; t++) {
        mt_dec_state next;
        mt_dec_step out;
        mt_status rc = mt_model_step(fx.m, g, &enc, &st, prev, &next, &out);
        if (rc == MT_OK) rc = mt_graph_forward(g);
        int64_t nr = (int64_t)count * st.beam;
        if (rc == MT_OK) rc = mt_node_get(out.logprobs, lp, nr * v);
        if (!CHECK(rc == MT_OK, "batched step %d: %s", t, mt_errmsg())) break;
        for (int i = 0; i < count; i++) {
            for (int r = 0; r < st.beam; r++) {
                const float *row = lp + (int64_t)(i * st.beam + r) * v;
                int32_t best = -1;
                for (int32_t w = 0; w < v; w++)
                    if (w != unk && (best < 0 || row[w] > row[best])) best = w;
                if (r == 0 && !done[i]) {
                    if (best == eos || t + 1 >= 3 * fx.slen[first + i]) done[i] = true;
                    if (best != eos) hyp[i * 1024 + len[i]++] = best;
                }
                if (r > 0 && !done[i] && st.beam > 1) {
                    const float *r0 = lp + (int64_t)(i * st.beam) * v;
                    CHECK_CLOSE(row[best], r0[best], 1e-5, 0, "rows of sentence %d differ", i);
                }
            }
        }
        /* beam 2 from step 0 on: row i*2+r <- old row i*beam (+0) */
        for (int i = 0; i < count; i++)
            for (int r = 0; r < k; r++) {
                rows[i * k + r] = i * st.beam;
                int32_t last = len[i] ? hyp[i * 1024 + len[i] - 1] : eos;
                prev[i * k + r] = last;
            }
        if (!CHECK_STATUS_OK(mt_model_select(fx.m, g, &next, rows, k, &st))) break;
        bool all = true;
        for (int i = 0; i < count; i++)
            all = all && done[i];
        if (all) break;
    }
    int same = 0;
    for (int i = 0; i < count; i++) {
        char *text = NULL;
        CHECK_STATUS(mt_vocab_decode(fx.vt, hyp + i * 1024, len[i], 0, &text));
        if (text)
            same += CHECK(!strcmp(text, want.s[first + i]),
                          "%s batched beam1 line %d:\n  got  '%s'\n  want '%s'", dir, first + i + 1,
                          text, want.s[first + i]);
        mt_free(text);
    }
    fprintf(stderr, "%s: batched greedy (B=%d, K=%d) matches beam1.out on %d of %d lines\n", dir,
            count, k, same, count);
    /* a row of another sentence is refused */
    if (g && count > 1) {
        int32_t bad[2] = {0, 0};
        mt_dec_state junk;
        mt_dec_state one = st;
        one.batch = 2;
        one.beam = 1;
        CHECK(mt_model_select(fx.m, g, &one, bad, 1, &junk) == MT_ERR_INVALID,
              "select accepted a row of another sentence");
    }
    free(prev);
    free(rows);
    free(hyp);
    free(len);
    free(done);
    free(lp);
    mt_batch_free(b);
    lines_free(&want);
    mt_graph_free(g);
    fixture_close(&fx);
}

/* Frozen history (mt_model_fold): two chains of steps over the same
** batch, tokens and beam reordering (random parents within each sentence):
** A reorders its caches with mt_model_select (the plain index_select), B
** passes the selection as row_ids, freezes its caches every FOLD steps
** and reads the history through the composed row map hist_ids, as
** models/scorer.c does; once in the middle B folds the history back
** into its rows.  Their log-probs must agree at every step (the weighted
** sum of the values adds two partial sums: rounding only).  A model
** without growing caches (AAN) refuses to fold.
** kv 1: B runs in a graph with MT_CACHE_F16 (context and history in f16,
** A stays f32): the same, within the rounding of keys and values to f16
** (log-probs within 1e-2; both contexts and the history must be f16).
** kv 2: MT_CACHE_F16_BF16_CONTEXT: the contexts in bfloat16 pairs where the CPU
** multiplies them (mt_graph_kv_bf16; else f16), queries and weights over
** them rounded to bfloat16 (log-probs within 5e-2). */
static void test_fold(const char *dir, const char *sv, const char *tv, int kv) {
    const bool kv16 = kv > 0;
    fixture fx;
    if (!fixture_open(&fx, dir, sv, tv)) {
        fixture_close(&fx);
        return;
    }
    enum {
        COUNT = 4,
        K = 3,
        STEPS = 42,
        FOLD = 5,
        UNFOLD_AT = 23
    };                              /* the last state: a history and recent rows */
    mt_graph *g = NULL, *gb = NULL; /* chains A and B */
    mt_graph_params pb = mt_graph_default_params();
    pb.decode.caches = kv == 2 ? MT_CACHE_F16_BF16_CONTEXT : kv16 ? MT_CACHE_F16 : MT_CACHE_F32;
    CHECK_STATUS(mt_graph_init(NULL, mt_graph_default_params(), &g));
    CHECK_STATUS(mt_graph_init(NULL, pb, &gb));
    mt_batch *b = make_batch(&fx, 2, COUNT, false);
    mt_model_encoding enc, encb;
    mt_dec_state sa, sb;
    if (g && gb && b) {
        CHECK_STATUS(mt_model_encode(fx.m, g, b, &enc));
        CHECK_STATUS(mt_model_start(fx.m, g, &enc, &sa));
        CHECK_STATUS(mt_model_encode(fx.m, gb, b, &encb));
        CHECK_STATUS(mt_model_start(fx.m, gb, &encb, &sb));
    }
    if (!mt_model_can_fold(fx.m)) {
        mt_dec_state junk;
        CHECK(mt_model_fold(fx.m, g, &sa, true, &junk) == MT_ERR_UNSUPPORTED,
              "%s: fold of a model without growing caches", dir);
        fprintf(stderr, "%s: no growing caches, fold refused\n", dir);
        goto done;
    }
    const mt_model_config *mc = mt_model_get_config(fx.m);
    const mt_dtype ctx_dtype = kv == 2 && mt_graph_kv_bf16(gb, mc->dim_emb / mc->heads) ? MT_BF16
                               : kv16                                                   ? MT_F16
                                                                                        : MT_F32;
    CHECK(sb.n_fixed > 0 && mt_node_dtype(sb.fixed[0]) == ctx_dtype &&
              mt_node_dtype(sb.fixed[1]) == mt_node_dtype(sb.fixed[0]),
          "%s: the context's keys and values as %s", dir, mt_dtype_name(ctx_dtype));
    int32_t v = mt_model_trg_vocab(fx.m);
    int32_t prev[COUNT * K], rows[COUNT * K], hmap[COUNT * K], hnew[COUNT * K];
    static float lpa[COUNT * K * 4096], lpb[COUNT * K * 4096];
    if (!CHECK(v <= 4096, "vocabulary of %d", (int)v)) goto done;
    mt_rng r;
    mt_rng_seed(&r, 11);
    double worst = 0;
    int folds = 0, hist_steps = 0, bad_argmax = 0, hist_f16 = 0, last_beam = 0;
    int32_t hold[COUNT * K]; /* hmap before the last selection */
    for (int t = 0; t < STEPS; t++) {
        mt_dec_state na, nb;
        mt_dec_step oa, ob;
        int beam = sa.beam;
        if (sb.hist_len > 0) {
            sb.hist_ids = mt_input_i32(gb, mt_shape1(COUNT * beam), hmap);
            hist_steps++;
            hist_f16 += mt_node_dtype(sb.hist[0]) == MT_F16 && mt_node_dtype(sb.hist[1]) == MT_F16;
        }
        mt_status rc = mt_model_step(fx.m, g, &enc, &sa, prev, &na, &oa);
        if (rc == MT_OK) rc = mt_model_step(fx.m, gb, &encb, &sb, prev, &nb, &ob);
        if (rc == MT_OK) rc = mt_graph_forward(g);
        if (rc == MT_OK) rc = mt_graph_forward(gb);
        if (rc == MT_OK) rc = mt_node_get(oa.logprobs, lpa, (int64_t)COUNT * beam * v);
        if (rc == MT_OK) rc = mt_node_get(ob.logprobs, lpb, (int64_t)COUNT * beam * v);
        if (!CHECK(rc == MT_OK, "%s fold step %d: %s", dir, t, mt_errmsg())) break;
        for (int i = 0; i < COUNT * beam; i++) {
            int32_t ba = 0, bb = 0;
            for (int32_t w = 0; w < v; w++) {
                const float x = lpa[(int64_t)i * v + w], y = lpb[(int64_t)i * v + w];
                double dd = fabs((double)x - (double)y);
                if (dd > worst) worst = dd;
                if (x > lpa[(int64_t)i * v + ba]) ba = w;
                if (y > lpb[(int64_t)i * v + bb]) bb = w;
            }
            bad_argmax += ba != bb;
        }
        /* fold right after the step (before the next selection), as the
        ** scorer does */
        bool unfold = t == UNFOLD_AT, freeze = !unfold && t % FOLD == FOLD - 1;
        if (freeze || unfold) {
            mt_dec_state fo;
            if (nb.hist_len > 0) nb.hist_ids = mt_input_i32(gb, mt_shape1(COUNT * beam), hmap);
            rc = mt_model_fold(fx.m, gb, &nb, freeze, &fo);
            if (!CHECK(rc == MT_OK, "%s fold at step %d: %s", dir, t, mt_errmsg())) break;
            nb = fo;
            for (int i = 0; i < COUNT * beam; i++)
                hmap[i] = i;
            folds += freeze;
        }
        /* the next beam: K rows per sentence, random parents of the sentence */
        for (int i = 0; i < COUNT * K; i++) {
            rows[i] = (i / K) * beam + (int32_t)(mt_rng_next(&r) % (uint64_t)beam);
            prev[i] = 4 + (int32_t)(mt_rng_next(&r) % (uint64_t)(v - 4));
        }
        if (!CHECK_STATUS_OK(mt_model_select(fx.m, g, &na, rows, K, &sa))) break;
        sb = nb;
        sb.row_ids = mt_input_i32(gb, mt_shape1(COUNT * K), rows);
        sb.beam = K;
        last_beam = beam;
        memcpy(hold, hmap, sizeof hold);
        if (sb.hist_len > 0) {
            for (int i = 0; i < COUNT * K; i++)
                hnew[i] = hmap[rows[i]];
            memcpy(hmap, hnew, sizeof hmap);
        }
    }
    fprintf(stderr,
            "%s: frozen caches%s%s: %d folds, %d steps reading a history, log-probs within %.3g, "
            "%d argmax differ\n",
            dir, kv16 ? " in f16" : "", ctx_dtype == MT_BF16 ? ", contexts in bfloat16" : "", folds,
            hist_steps, worst, bad_argmax);
    CHECK(folds >= 5 && hist_steps >= 20, "the history was hardly used");
    CHECK(hist_f16 == (kv16 ? hist_steps : 0), "%s: %d of %d steps read an f16 history", dir,
          hist_f16, hist_steps);
    CHECK(worst <= (ctx_dtype == MT_BF16 ? 5e-2
                    : kv16               ? 1e-2
                                         : 1e-4),
          "log-probs differ by %g with a frozen history", worst);
    CHECK(kv16 || bad_argmax == 0, "%d rows with another best token", bad_argmax);
    { /* a pending selection folds the selected rows (models/scorer.c folds
      ** the rows the next step continues): the fold of every row, then the
      ** selection, bit for bit; a selection of another count is refused */
        mt_dec_state whole = sb, fa, fs;
        whole.row_ids = NULL;
        whole.beam = last_beam;
        if (whole.hist_len > 0)
            whole.hist_ids = mt_input_i32(gb, mt_shape1(COUNT * last_beam), hold);
        if (sb.hist_len > 0) sb.hist_ids = mt_input_i32(gb, mt_shape1(COUNT * K), hmap);
        mt_status rc = mt_model_fold(fx.m, gb, &whole, true, &fa);
        if (rc == MT_OK) rc = mt_model_fold(fx.m, gb, &sb, true, &fs);
        mt_node *d[2 * MT_MAX_STREAMS * 16] = {0};
        int nd = 0;
        for (int q = 0; rc == MT_OK && q < fs.n_rows && nd < (int)(sizeof d / sizeof d[0]); q++) {
            if (fs.hist[q] == NULL) continue;
            mt_node *want = mt_index_select(gb, fa.hist[q], 0, sb.row_ids);
            d[nd++] = mt_sub(gb, mt_cast(gb, fs.hist[q], MT_F32), mt_cast(gb, want, MT_F32));
        }
        if (rc == MT_OK) rc = mt_graph_forward(gb);
        double off = 0;
        int64_t seen = 0;
        static float dv[1 << 20];
        for (int q = 0; rc == MT_OK && q < nd; q++) {
            int64_t m = mt_node_numel(d[q]);
            if (m > (int64_t)(sizeof dv / sizeof dv[0])) continue;
            rc = mt_node_get(d[q], dv, m);
            for (int64_t i = 0; rc == MT_OK && i < m; i++)
                off = fmax(off, fabs((double)dv[i]));
            seen += m;
        }
        CHECK(rc == MT_OK && nd > 0 && seen > 0 && off == 0.0,
              "%s: fold of selected rows: %d caches, %lld values, largest difference %g (%s)", dir,
              nd, (long long)seen, off, rc == MT_OK ? "" : mt_errmsg());
        mt_dec_state junk, odd = sb, nohist = sb;
        odd.row_ids = mt_input_i32(gb, mt_shape1(COUNT * K - 1), rows);
        CHECK(mt_model_fold(fx.m, gb, &odd, true, &junk) == MT_ERR_INVALID,
              "fold of a selection of another count of rows");
        nohist.row_ids = NULL;
        nohist.hist_ids = NULL;
        CHECK(nohist.hist_len == 0 ||
                  mt_model_fold(fx.m, gb, &nohist, true, &junk) == MT_ERR_INVALID,
              "fold of a history without ids");
    }
done:
    mt_batch_free(b);
    mt_graph_free(g);
    mt_graph_free(gb);
    fixture_close(&fx);
}

/* Rows not grouped by sentence (mt_dec_state.row_sent): chain A decodes
** K rows per sentence with random parents (row 0 of the odd sentences
** always continues row 0); chain C decodes only the rows of A that a beam
** search with fewer live hypotheses in the odd sentences would keep: all K
** rows of the even sentences, row 0 of the odd ones, as one list of rows
** of beam 1.  C's log-probs must be A's rows (the cross-attention of a row
** reads its sentence's context through mt_bmm_gather; rounding only). */
static void test_ragged_rows(const char *dir, const char *sv, const char *tv) {
    fixture fx;
    if (!fixture_open(&fx, dir, sv, tv)) {
        fixture_close(&fx);
        return;
    }
    enum { COUNT = 4, K = 3, STEPS = 12, NC = 2 * K + 2 };
    mt_graph *g = NULL;
    CHECK_STATUS(mt_graph_init(NULL, mt_graph_default_params(), &g));
    mt_batch *b = make_batch(&fx, 5, COUNT, false);
    mt_model_encoding enc;
    mt_dec_state sa, sc;
    if (!g || !b || !CHECK_STATUS_OK(mt_model_encode(fx.m, g, b, &enc)) ||
        !CHECK_STATUS_OK(mt_model_start(fx.m, g, &enc, &sa)))
        goto done;
    sc = sa;
    int32_t v = mt_model_trg_vocab(fx.m);
    static float lpa[COUNT * K * 4096], lpc[NC * 4096];
    if (!CHECK(v <= 4096, "vocabulary of %d", (int)v)) goto done;
    /* C's rows: A's row of each, and their sentences */
    int32_t of_a[NC], sent[NC], prev_a[COUNT * K], prev_c[NC], rows_a[COUNT * K], rows_c[NC];
    int nc = 0;
    for (int i = 0; i < COUNT; i++)
        for (int r = 0; r < (i % 2 ? 1 : K); r++) {
            of_a[nc] = i * K + r;
            sent[nc++] = i;
        }
    mt_rng rng;
    mt_rng_seed(&rng, 5);
    double worst = 0;
    for (int t = 0; t < STEPS; t++) {
        mt_dec_state na, nx;
        mt_dec_step oa, oc;
        int beam = sa.beam, rows_now = t == 0 ? COUNT : nc;
        if (t > 0) sc.row_sent = mt_input_i32(g, mt_shape1(nc), sent);
        mt_status rc = mt_model_step(fx.m, g, t == 0 ? &enc : NULL, &sa, prev_a, &na, &oa);
        if (rc == MT_OK) rc = mt_model_step(fx.m, g, NULL, &sc, prev_c, &nx, &oc);
        if (rc == MT_OK) rc = mt_graph_forward(g);
        if (rc == MT_OK) rc = mt_node_get(oa.logprobs, lpa, (int64_t)COUNT * beam * v);
        if (rc == MT_OK) rc = mt_node_get(oc.logprobs, lpc, (int64_t)rows_now * v);
        if (!CHECK(rc == MT_OK, "%s ragged step %d: %s", dir, t, mt_errmsg())) break;
        for (int j = 0; j < rows_now; j++) {
            int ra = t == 0 ? j : of_a[j];
            for (int32_t w = 0; w < v; w++) {
                double d = fabs((double)lpc[(int64_t)j * v + w] - lpa[(int64_t)ra * v + w]);
                if (d > worst) worst = d;
            }
        }
        for (int i = 0; i < COUNT * K; i++) {
            int sn = i / K, pick = (int)(mt_rng_next(&rng) % (uint64_t)beam);
            rows_a[i] = sn * beam + (sn % 2 && i % K == 0 ? 0 : pick);
            prev_a[i] = 4 + (int32_t)(mt_rng_next(&rng) % (uint64_t)(v - 4));
        }
        /* C's parent of row j: the C row holding A's parent (at step 0, the
        ** start row of the sentence) */
        for (int j = 0; j < nc; j++) {
            int pa = rows_a[of_a[j]];
            rows_c[j] = -1;
            for (int q = 0; q < rows_now; q++)
                if ((t == 0 ? q : of_a[q]) == pa) rows_c[j] = q;
            prev_c[j] = prev_a[of_a[j]];
        }
        bool ok = true;
        for (int j = 0; j < nc; j++)
            ok = ok && rows_c[j] >= 0;
        if (!CHECK(ok, "C lost a parent at step %d", t)) break;
        if (!CHECK_STATUS_OK(mt_model_select(fx.m, g, &na, rows_a, K, &sa))) break;
        sc = nx;
        sc.row_ids = mt_input_i32(g, mt_shape1(nc), rows_c);
        sc.batch = nc;
        sc.beam = 1;
    }
    fprintf(stderr, "%s: %d rows by sentence (of %d in the beam layout), log-probs within %.3g\n",
            dir, nc, COUNT * K, worst);
    CHECK(worst <= 1e-5, "%s: rows by sentence differ by %g", dir, worst);
    { /* row_sent needs beam 1 */
        mt_dec_state bad = sa, junk;
        mt_dec_step o;
        bad.row_sent = mt_input_i32(g, mt_shape1(COUNT * K), rows_a);
        CHECK(mt_model_step(fx.m, g, NULL, &bad, prev_a, &junk, &o) == MT_ERR_INVALID,
              "row_sent with beam %d accepted", (int)bad.beam);
    }
done:
    mt_batch_free(b);
    mt_graph_free(g);
    fixture_close(&fx);
}

/* Encoder output and first decoding step of one sentence, alone (no
** padding: the plain layout).  ctx: [S_j, D] per context j; lp: [V]. */
static int encode_alone(fixture *fx, int i, float **ctx, float *lp) {
    mt_graph *g = NULL;
    mt_batch *b = make_batch(fx, i, 1, false);
    int ok = b != NULL && mt_graph_init(NULL, mt_graph_default_params(), &g) == MT_OK;
    mt_model_encoding enc;
    mt_dec_state st, next;
    mt_dec_step out;
    int32_t prev = 0;
    ok = ok && mt_model_encode(fx->m, g, b, &enc) == MT_OK &&
         mt_model_start(fx->m, g, &enc, &st) == MT_OK &&
         mt_model_step(fx->m, g, &enc, &st, &prev, &next, &out) == MT_OK &&
         mt_graph_forward(g) == MT_OK &&
         mt_node_get(out.logprobs, lp, mt_model_trg_vocab(fx->m)) == MT_OK;
    for (int j = 0; ok && j < enc.n; j++) {
        mt_shape sh = mt_node_shape(enc.c[j].ctx);
        int64_t n = mt_shape_numel(&sh);
        ctx[j] = malloc(sizeof(float) * (size_t)n);
        ok = mt_node_get(enc.c[j].ctx, ctx[j], n) == MT_OK;
    }
    CHECK(ok, "%s: sentence %d alone: %s", fx->dir, i + 1, mt_errmsg());
    mt_batch_free(b);
    mt_graph_free(g);
    return ok;
}

/* A padded batch is encoded on its real positions only (transformer.c,
** "packed encoding"), self-attention in groups of similar length.  Every
** real position of the batch's contexts, and the first step's log-probs,
** must equal those of each sentence encoded alone; padded positions must
** be finite (masked attention multiplies them by 0). */
static void test_packed_encoding(const char *dir, const char *sv, const char *tv) {
    fixture fx;
    if (!fixture_open(&fx, dir, sv, tv)) {
        fixture_close(&fx);
        return;
    }
    /* the longest input and every fourth one after it: lengths spread over
    ** several groups (a group spans lengths down to 3/4 of its first) */
    int longest = 0, pick[16], count = 0;
    for (int i = 1; i < fx.n; i++)
        if (fx.slen[i] > fx.slen[longest]) longest = i;
    pick[count++] = longest;
    for (int i = 0; i < fx.n && count < 16; i += 4)
        if (i != longest) pick[count++] = i;
    int min_len = fx.slen[longest];
    for (int i = 0; i < count; i++)
        if (fx.slen[pick[i]] < min_len) min_len = fx.slen[pick[i]];
    CHECK(4 * min_len < 3 * fx.slen[longest], "%s: lengths %d..%d form one group", dir, min_len,
          fx.slen[longest]);
    /* the batch of the picked sentences: fixture rows reordered */
    fixture bf = fx;
    int32_t *sid[16], *sid2[16], slen[16], slen2[16];
    for (int i = 0; i < count; i++) {
        sid[i] = fx.sid[pick[i]];
        slen[i] = fx.slen[pick[i]];
        if (fx.n_src > 1) {
            sid2[i] = fx.sid2[pick[i]];
            slen2[i] = fx.slen2[pick[i]];
        }
    }
    bf.sid = sid;
    bf.slen = slen;
    bf.sid2 = sid2;
    bf.slen2 = slen2;
    mt_graph *g = NULL;
    CHECK_STATUS(mt_graph_init(NULL, mt_graph_default_params(), &g));
    mt_batch *b = make_batch(&bf, 0, count, false);
    int32_t v = mt_model_trg_vocab(fx.m);
    float *lp = malloc(sizeof(float) * (size_t)(count * v)), *lp1 = malloc(sizeof(float) * v);
    int32_t prev[16] = {0};
    mt_model_encoding enc;
    mt_dec_state st, next;
    mt_dec_step out;
    int bad = 0, compared = 0, packed = 0;
    if (g && b && CHECK_STATUS_OK(mt_model_encode(fx.m, g, b, &enc)) &&
        CHECK_STATUS_OK(mt_model_start(fx.m, g, &enc, &st)) &&
        CHECK_STATUS_OK(mt_model_step(fx.m, g, &enc, &st, prev, &next, &out)) &&
        CHECK_STATUS_OK(mt_graph_forward(g)) &&
        CHECK_STATUS_OK(mt_node_get(out.logprobs, lp, (int64_t)count * v))) {
        int64_t d = mt_model_get_config(fx.m)->dim_emb;
        float *ctx[MT_MAX_STREAMS] = {0};
        for (int j = 0; j < enc.n; j++) {
            packed += enc.c[j].packed != NULL;
            int64_t len = enc.c[j].len, n = (int64_t)count * len * d;
            ctx[j] = malloc(sizeof(float) * (size_t)n);
            CHECK_STATUS(mt_node_get(enc.c[j].ctx, ctx[j], n));
            for (int64_t e = 0; e < n; e++)
                bad += !CHECK(isfinite(ctx[j][e]), "%s: context %d element %lld not finite", dir, j,
                              (long long)e);
        }
        for (int i = 0; i < count && bad < 10; i++) {
            float *alone[MT_MAX_STREAMS] = {0};
            if (!encode_alone(&fx, pick[i], alone, lp1)) break;
            for (int j = 0; j < enc.n; j++) {
                int64_t li = j == 0 ? slen[i] : slen2[i], len = enc.c[j].len;
                for (int64_t e = 0; e < li * d; e++) {
                    float got = ctx[j][(int64_t)i * len * d + e];
                    compared++;
                    bad += !CHECK_CLOSE(got, alone[j][e], 1e-5, 1e-4,
                                        "%s: sentence %d context %d element %lld: %g, alone %g",
                                        dir, pick[i] + 1, j, (long long)e, got, alone[j][e]);
                }
                free(alone[j]);
            }
            for (int32_t w = 0; w < v; w++)
                bad += !CHECK_CLOSE(lp[(int64_t)i * v + w], lp1[w], 1e-4, 1e-4,
                                    "%s: sentence %d first step log-prob %d", dir, pick[i] + 1,
                                    (int)w);
        }
        for (int j = 0; j < enc.n; j++)
            free(ctx[j]);
    }
    CHECK(packed == mt_model_n_src(fx.m), "%s: %d of %d contexts packed", dir, packed,
          mt_model_n_src(fx.m));
    fprintf(stderr, "%s: packed encoding of %d sentences (lengths %d..%d): %d values as alone\n",
            dir, count, min_len, fx.slen[longest], compared);
    free(lp);
    free(lp1);
    mt_batch_free(b);
    mt_graph_free(g);
    fixture_close(&fx);
}

/* Alignments: Marian's align-soft.out holds, for its beam-4 translation of
** each input, the head-0 attention of the guided-alignment layer per target
** token.  Teacher-forcing that translation must give the same weights
** (lines whose text re-encodes to other pieces than Marian produced, seen
** from the word scores in nbest4-wordscores.out, are left out). */
static void test_alignment(const char *dir, const char *sv, const char *tv) {
    fixture fx;
    if (!fixture_open(&fx, dir, sv, tv)) {
        fixture_close(&fx);
        return;
    }
    char p[512];
    lines al;
    snprintf(p, sizeof p, DATA "%s/align-soft.out", dir);
    CHECK(read_lines(p, &al) && al.n == fx.n, "read %s", p);
    lines nb;
    snprintf(p, sizeof p, DATA "%s/nbest4-wordscores.out", dir);
    CHECK(read_lines(p, &nb), "read %s", p);
    mt_graph *g = NULL;
    CHECK_STATUS(mt_graph_init(NULL, mt_graph_default_params(), &g));
    int compared = 0, nb_at = 0;
    double maxd = 0;
    for (int i = 0; g && i < al.n && i < fx.n; i++) {
        char *sep = strstr(al.s[i], " ||| ");
        if (!sep) continue;
        *sep = '\0';
        const char *rows = sep + 5;
        int32_t *hyp = NULL;
        int64_t n = 0;
        if (mt_vocab_encode(fx.vt, al.s[i], MT_VOCAB_ADD_EOS, &hyp, &n) != MT_OK) continue;
        int n_rows = 1;
        for (const char *q = rows; *q; q++)
            n_rows += *q == ' ';
        if (n_rows != n) {
            mt_free(hyp);
            continue;
        }
        /* Marian's word scores of this hypothesis: the first n-best entry of id i */
        while (nb_at < nb.n && atoi(nb.s[nb_at]) < i)
            nb_at++;
        const char *ws =
            nb_at < nb.n && atoi(nb.s[nb_at]) == i ? strstr(nb.s[nb_at], "WordScores=") : NULL;
        if (!ws) {
            mt_free(hyp);
            continue;
        }
        ws += strlen("WordScores=");
        /* the hypothesis as the target of sentence i */
        mt_free(fx.tid[i]);
        fx.tid[i] = hyp;
        fx.tlen[i] = (int32_t)n;
        mt_batch *b = make_batch(&fx, i, 1, true);
        mt_graph_clear(g);
        mt_model_loss L = mt_model_build_loss(fx.m, g, b, 0.0f);
        int32_t sl = fx.slen[i];
        float *w = malloc(sizeof(float) * (size_t)(n * sl));
        float *lw = malloc(sizeof(float) * (size_t)n);
        bool same_pieces = false;
        if (CHECK(L.align != NULL, "no alignment node") && mt_graph_forward(g) == MT_OK &&
            mt_node_get(L.logprob_word, lw, n) == MT_OK) {
            same_pieces = true;
            const char *q = ws;
            for (int64_t t = 0; t < n && same_pieces; t++) {
                char *end;
                double v = strtod(q, &end);
                same_pieces = end != q && fabs(v - lw[t]) < 2e-3;
                q = end;
            }
        }
        free(lw);
        if (same_pieces && mt_node_get(L.align, w, n * sl) == MT_OK) {
            const char *q = rows;
            for (int64_t t = 0; t < n; t++) {
                for (int32_t k = 0; k < sl; k++) {
                    char *end;
                    double v = strtod(q, &end);
                    if (!CHECK(end != q, "%s align line %d: too few values", dir, i + 1)) break;
                    q = end + (*end == ',' || *end == ' ');
                    double dd = fabs(w[t * sl + k] - v);
                    if (dd > maxd) maxd = dd;
                    CHECK_CLOSE(w[t * sl + k], v, 2e-4, 1e-3, "%s alignment line %d [%lld, %d]",
                                dir, i + 1, (long long)t, k);
                }
            }
            compared++;
        }
        free(w);
        mt_batch_free(b);
    }
    fprintf(stderr, "%s: alignments of %d lines compared with align-soft.out, max abs diff %.3g\n",
            dir, compared, maxd);
    CHECK(compared >= fx.n / 2, "%s: only %d alignment lines comparable", dir, compared);
    lines_free(&al);
    lines_free(&nb);
    mt_graph_free(g);
    fixture_close(&fx);
}

/* A shortlist restricts the output layer to some ids: its log-probs are
** the full ones renormalised over those ids. */
static void test_shortlist(void) {
    fixture fx;
    if (!fixture_open(&fx, "transformer-tiny", "vocab.spm", "vocab.spm")) {
        fixture_close(&fx);
        return;
    }
    mt_graph *g = NULL;
    CHECK_STATUS(mt_graph_init(NULL, mt_graph_default_params(), &g));
    mt_batch *b = make_batch(&fx, 2, 3, false);
    int32_t v = mt_model_trg_vocab(fx.m);
    int32_t ids[300];
    int n_ids = 0;
    for (int32_t k = 0; k < v && n_ids < 300; k += 1 + k % 37)
        ids[n_ids++] = k;
    float *full = malloc(sizeof(float) * 3 * (size_t)v), *part = malloc(sizeof(float) * 3 * 300);
    mt_model_encoding enc;
    mt_dec_state st, next, st2, next2;
    mt_dec_step o1, o2;
    int32_t prev[3] = {5, 17, 99};
    if (g && b) {
        CHECK_STATUS(mt_model_encode(fx.m, g, b, &enc));
        CHECK_STATUS(mt_model_start(fx.m, g, &enc, &st));
        CHECK_STATUS(mt_model_step(fx.m, g, &enc, &st, prev, &next, &o1));
        st2 = next;
        CHECK_STATUS(mt_model_step(fx.m, g, &enc, &next, prev, &next2, &o1));
        st2.shortlist = mt_input_i32(g, mt_shape1(n_ids), ids);
        CHECK_STATUS(mt_model_step(fx.m, g, &enc, &st2, prev, &next2, &o2));
        CHECK_STATUS(mt_graph_forward(g));
        CHECK_STATUS(mt_node_get(o1.logprobs, full, 3 * (int64_t)v));
        CHECK_STATUS(mt_node_get(o2.logprobs, part, 3 * (int64_t)n_ids));
        for (int r = 0; r < 3; r++) {
            double m = -1e30, z = 0;
            for (int j = 0; j < n_ids; j++)
                if (full[r * v + ids[j]] > m) m = full[r * v + ids[j]];
            for (int j = 0; j < n_ids; j++)
                z += exp(full[r * v + ids[j]] - m);
            for (int j = 0; j < n_ids; j++)
                CHECK_CLOSE(part[r * n_ids + j], full[r * v + ids[j]] - m - log(z), 1e-4, 0,
                            "shortlist row %d id %d", r, ids[j]);
        }
    }
    free(full);
    free(part);
    mt_batch_free(b);
    mt_graph_free(g);
    fixture_close(&fx);
}

/* ------------------------------------------------------ fresh models */

static mt_model_config tiny_config(bool aan) {
    mt_model_config c = mt_model_config_default();
    c.dim_vocabs[0] = c.dim_vocabs[1] = 11;
    c.dim_emb = 8;
    c.heads = 2;
    c.dim_ffn = 12;
    c.enc_depth = c.dec_depth = 1;
    if (aan) { /* pre-norm, average attention, untied output, highway top */
        snprintf(c.dec_autoreg, sizeof c.dec_autoreg, "average-attention");
        c.dim_aan = 6;
        snprintf(c.preprocess, sizeof c.preprocess, "n");
        snprintf(c.postprocess, sizeof c.postprocess, "da");
        snprintf(c.postprocess_top, sizeof c.postprocess_top, "n");
        snprintf(c.ffn_activation, sizeof c.ffn_activation, "gelu");
        c.ffn_depth = 3;
    } else { /* post-norm, relu, tied everything */
        c.tied_embeddings_all = true;
        snprintf(c.ffn_activation, sizeof c.ffn_activation, "relu");
    }
    return c;
}

/* A batch of 3 sentences over n_src source streams and the target (n_src
** 1 or 2), ids 2..10 and EOS (0) last, ragged lengths in every stream. */
static mt_batch *tiny_batch_n(uint64_t seed, int n_src) {
    mt_rng r;
    mt_rng_seed(&r, seed);
    int32_t ids[3][3][7];
    mt_batch_seq seqs[9];
    const int32_t lens[3][3] = {{5, 4, 6}, {3, 6, 2}, {7, 2, 4}};
    const int ns = n_src + 1;
    for (int i = 0; i < 3; i++)
        for (int s = 0; s < ns; s++) {
            /* one source: columns 0 and 1 (ids drawn in the same order as
            ** before there were two sources); two: columns 0, 1, 2 */
            int32_t len = lens[i][s];
            for (int t = 0; t < len; t++)
                ids[i][s][t] = 2 + (int32_t)(mt_rng_next(&r) % 9);
            ids[i][s][len - 1] = 0; /* EOS */
            seqs[i * ns + s] = (mt_batch_seq){ids[i][s], len};
        }
    mt_batch *b = NULL;
    CHECK_STATUS(mt_batch_make(n_src, true, 3, seqs, NULL, &b));
    return b;
}

static mt_batch *tiny_batch(uint64_t seed) { return tiny_batch_n(seed, 1); }

/* A fresh tiny model with gradients allocated and a tiny batch; false
** (nothing to free) when either cannot be had. */
static bool tiny_setup(const mt_model_config *c, uint64_t mseed, uint64_t bseed, mt_model **m,
                       mt_batch **b) {
    *m = NULL;
    CHECK_STATUS(mt_model_create(c, NULL, mseed, m));
    *b = tiny_batch_n(bseed, c->n_vocabs - 1);
    if (!*m || !*b) {
        mt_model_free(*m);
        mt_batch_free(*b);
        return false;
    }
    CHECK_STATUS(mt_params_alloc_grads(mt_model_params(*m)));
    return true;
}

static double eval_cost(mt_model *m, const mt_batch *b, float ls) {
    mt_graph *g = NULL;
    float cost = NAN;
    CHECK_STATUS(mt_graph_init(NULL, mt_graph_default_params(), &g));
    if (!g) return NAN;
    mt_model_loss L = mt_model_build_loss(m, g, b, ls);
    if (L.cost && mt_graph_forward(g) == MT_OK) mt_node_get_scalar(L.cost, &cost);
    mt_graph_free(g);
    return cost;
}

/* -log p(trg | src) through the step API, each reference token fed back:
** what beam search computes for that hypothesis. */
static double stepped_cost(mt_model *m, const int32_t *src, int slen, const int32_t *trg,
                           int tlen) {
    mt_batch_seq seq = {(int32_t *)src, slen};
    mt_batch *b = NULL;
    CHECK_STATUS(mt_batch_make(1, false, 1, &seq, NULL, &b));
    mt_graph *g = NULL;
    CHECK_STATUS(mt_graph_init(NULL, mt_graph_default_params(), &g));
    int32_t v = mt_model_trg_vocab(m);
    float *lp = malloc(sizeof(float) * (size_t)v);
    double cost = NAN;
    mt_model_encoding enc;
    mt_dec_state st;
    mt_status rc0 = b && g && lp ? mt_model_encode(m, g, b, &enc) : MT_ERR_NOMEM;
    if (rc0 == MT_OK) rc0 = mt_model_start(m, g, &enc, &st);
    if (CHECK(rc0 == MT_OK, "encode and start: %s", mt_errmsg())) {
        cost = 0;
        int32_t prev = 0;
        for (int t = 0; t < tlen; t++) {
            mt_dec_state next;
            mt_dec_step out;
            mt_status rc = mt_model_step(m, g, &enc, &st, &prev, &next, &out);
            if (rc == MT_OK) rc = mt_graph_forward(g);
            if (rc == MT_OK) rc = mt_node_get(out.logprobs, lp, v);
            if (!CHECK(rc == MT_OK, "step %d: %s", t, mt_errmsg())) {
                cost = NAN;
                break;
            }
            cost -= lp[trg[t]];
            prev = trg[t];
            st = next;
        }
    }
    free(lp);
    mt_graph_free(g);
    mt_batch_free(b);
    return cost;
}

/* A pre-norm self-attention decoder is decoded as it was trained: the step
** API's cost of a reference equals the teacher-forced loss (the training
** graph) to float rounding, over 12 positions.  Marian 1.12's decoding
** (marian_prenorm_cache: keys and values of positions >= 1 from the raw
** layer inputs) must differ: the check can fail, and the flag works. */
static void test_prenorm_decoding(void) {
    mt_model_config c = tiny_config(false);
    snprintf(c.preprocess, sizeof c.preprocess, "n");
    snprintf(c.postprocess, sizeof c.postprocess, "da");
    snprintf(c.postprocess_top, sizeof c.postprocess_top, "n");
    c.dec_depth = 2;
    mt_model *m = NULL;
    CHECK_STATUS(mt_model_create(&c, NULL, 77, &m));
    if (!m) return;
    const int32_t src[6] = {3, 7, 2, 9, 4, 0}, trg[12] = {5, 2, 8, 8, 3, 6, 10, 4, 2, 7, 9, 0};
    mt_batch_seq seqs[2] = {{(int32_t *)src, 6}, {(int32_t *)trg, 12}};
    mt_batch *b = NULL;
    CHECK_STATUS(mt_batch_make(1, true, 1, seqs, NULL, &b));
    double forced = b ? eval_cost(m, b, 0.0f) : NAN;
    double stepped = stepped_cost(m, src, 6, trg, 12);
    CHECK_CLOSE(stepped, forced, 1e-4, 1e-5, "pre-norm: stepped %.6f vs teacher-forced %.6f",
                stepped, forced);
    mt_model_set_marian_prenorm_cache(m, true);
    double marian = stepped_cost(m, src, 6, trg, 12);
    CHECK(fabs(marian - forced) > 1e-3,
          "Marian's pre-norm decoding should differ from training: %.6f vs %.6f", marian, forced);
    fprintf(stderr, "pre-norm decoding: teacher-forced %.6f, stepped %.6f, Marian's cache %.6f\n",
            forced, stepped, marian);
    mt_batch_free(b);
    mt_model_free(m);
}

/* Variants: 0 post-norm, 1 average attention, 2 pre-norm; 3 and 4 the
** multi-source decoder (two encoders, the context attention over encoder 1
** and then context_enc2 over encoder 2 in every decoder layer): 3 a
** multi-transformer as the fixture (post-norm, all embeddings tied, two
** decoder layers), 4 a shared-multi-transformer (one encoder for both
** streams, pre-norm, source embeddings tied, untied output, relu).  Every
** variant also checks that the training graph's cost equals that of an
** inference graph (which packs the encoder's positions). */
static void test_gradients(int variant) {
    mt_model_config c = tiny_config(variant == 1);
    static const char *names[] = {"post-norm", "aan", "pre-norm", "multi-transformer",
                                  "shared-multi-transformer"};
    const char *name = names[variant];
    if (variant >= 3) {
        snprintf(c.type, sizeof c.type, "%s", name);
        c.n_vocabs = 3;
        c.dim_vocabs[2] = c.dim_vocabs[0];
        c.dec_depth = 2;
    }
    /* swish, not the fixture's relu: with this seed a relu input of
    ** encoder2_l1_ffn lies within 1e-3 of its kink, too near for the two step
    ** sizes to see, and its one-sided slope is off from the differences by
    ** up to 16% (entries of encoder2_l1_* and Wemb; with swish all agree) */
    if (variant == 3) snprintf(c.ffn_activation, sizeof c.ffn_activation, "swish");
    if (variant == 4) {
        c.tied_embeddings_all = false;
        c.tied_embeddings_src = true;
        snprintf(c.preprocess, sizeof c.preprocess, "n");
        snprintf(c.postprocess, sizeof c.postprocess, "da");
        snprintf(c.postprocess_top, sizeof c.postprocess_top, "n");
    }
    if (variant == 2) { /* pre-norm self-attention, highway, shared src/trg embeddings */
        c.tied_embeddings_all = false;
        c.tied_embeddings_src = true;
        snprintf(c.preprocess, sizeof c.preprocess, "n");
        snprintf(c.postprocess, sizeof c.postprocess, "dah");
        snprintf(c.postprocess_top, sizeof c.postprocess_top, "n");
        snprintf(c.ffn_activation, sizeof c.ffn_activation, "swish");
        c.dec_depth = 2;
        snprintf(c.guided_alignment_layer, sizeof c.guided_alignment_layer, "1");
    }
    mt_model *m;
    mt_batch *b;
    if (!tiny_setup(&c, 1234, 99, &m, &b)) return;
    const float ls = 0.1f;
    mt_params *p = mt_model_params(m);
    mt_params_zero_grads(p);
    mt_graph_params gp = mt_graph_default_params();
    gp.training = true;
    mt_graph *g = NULL;
    CHECK_STATUS(mt_graph_init(NULL, gp, &g));
    mt_model_loss L = mt_model_build_loss(m, g, b, ls);
    CHECK(L.status == MT_OK && L.cost, "training loss: %s", mt_errmsg());
    if (L.cost) CHECK_STATUS(mt_graph_backward(g, L.cost));
    {
        float c_train = NAN;
        if (L.cost) mt_node_get_scalar(L.cost, &c_train);
        double c_eval = eval_cost(m, b, ls);
        fprintf(stderr, "%s: cost %.6f in the training graph, %.6f in an inference graph\n", name,
                c_train, c_eval);
        CHECK(fabs(c_train - c_eval) <= 1e-4 * fabs(c_eval),
              "%s: training cost %.6f, inference %.6f", name, c_train, c_eval);
    }
    int n_checked = 0, n_bad = 0, n_kink = 0;
    double worst = 0;
    /* multi-source: checked entries and summed |finite difference| in the
    ** second context attention and in the second source's encoder, which
    ** must move the loss (a stream left out of the graph would give 0) */
    int n_ctx2 = 0, n_enc2 = 0;
    double fd_ctx2 = 0, fd_enc2 = 0;
    const char *enc2 = variant == 3 ? "encoder2_" : "encoder_";
    mt_rng r;
    mt_rng_seed(&r, 7);
    for (int i = 0; i < mt_params_count(p); i++) {
        mt_tensor *t = mt_params_at(p, i), *gt = mt_params_grad_at(p, i);
        int64_t n = mt_tensor_numel(t);
        if (!gt) continue;
        float *val = malloc(sizeof(float) * (size_t)n), *grad = malloc(sizeof(float) * (size_t)n);
        mt_tensor_get(t, val, sizeof(float) * (size_t)n);
        mt_tensor_get(gt, grad, sizeof(float) * (size_t)n);
        for (int rep = 0; rep < 3; rep++) {
            int64_t k = (int64_t)(mt_rng_next(&r) % (uint64_t)n);
            /* central differences at two step sizes: where they disagree the
            ** loss is not smooth around x (a ReLU input near 0): skipped */
            double gn[2];
            for (int e = 0; e < 2; e++) {
                const float eps = e == 0 ? 2e-3f : 1e-3f;
                float x0 = val[k];
                val[k] = x0 + eps;
                mt_tensor_set(t, val, sizeof(float) * (size_t)n);
                mt_params_touch(p);
                double lp = eval_cost(m, b, ls);
                val[k] = x0 - eps;
                mt_tensor_set(t, val, sizeof(float) * (size_t)n);
                mt_params_touch(p);
                double lm = eval_cost(m, b, ls);
                val[k] = x0;
                mt_tensor_set(t, val, sizeof(float) * (size_t)n);
                mt_params_touch(p);
                gn[e] = (lp - lm) / (2.0 * eps);
            }
            if (fabs(gn[0] - gn[1]) > 1e-2 + 2e-2 * fabs(gn[0])) {
                n_kink++;
                continue;
            }
            double err = fabs(grad[k] - gn[1]) / (1e-2 + fabs(gn[1]));
            if (err > worst) worst = err;
            n_checked++;
            if (strstr(mt_params_name(p, i), "_context_enc2_")) {
                n_ctx2++;
                fd_ctx2 += fabs(gn[1]);
            } else if (!strncmp(mt_params_name(p, i), enc2, strlen(enc2))) {
                n_enc2++;
                fd_enc2 += fabs(gn[1]);
            }
            if (!CHECK(fabs(grad[k] - gn[1]) <= 1e-2 + 2e-2 * fabs(gn[1]),
                       "%s: d cost / d %s[%lld]: backward %.6g, finite differences %.6g", name,
                       mt_params_name(p, i), (long long)k, grad[k], gn[1]))
                n_bad++;
        }
        free(val);
        free(grad);
    }
    fprintf(stderr,
            "%s tiny transformer: %d gradient entries over %d parameters checked (%d at "
            "non-smooth points skipped), worst relative error %.3g\n",
            name, n_checked, mt_params_count(p), n_kink, worst);
    CHECK(n_checked >= 3 * 30 && n_kink * 10 <= n_checked,
          "%d gradient entries checked, %d "
          "skipped",
          n_checked, n_kink);
    if (variant >= 3) {
        fprintf(stderr,
                "%s: %d entries of the context_enc2 blocks (sum |d cost| %.3g), %d of "
                "%s* (sum %.3g)\n",
                name, n_ctx2, fd_ctx2, n_enc2, enc2, fd_enc2);
        CHECK(n_ctx2 >= 2 * 10 * 3 / 2 && fd_ctx2 > 1e-2,
              "%s: the second context attention: %d entries, sum |d cost| %.3g", name, n_ctx2,
              fd_ctx2);
        CHECK(n_enc2 >= 10 && fd_enc2 > 1e-2, "%s: %s*: %d entries, sum |d cost| %.3g", name, enc2,
              n_enc2, fd_enc2);
    }
    mt_graph_free(g);
    mt_batch_free(b);
    mt_model_free(m);
}

static void test_round_trip(bool aan) {
    mt_model_config c = tiny_config(aan);
    mt_model *m = NULL, *m2 = NULL;
    CHECK_STATUS(mt_model_create(&c, NULL, 42, &m));
    mt_batch *b = tiny_batch(5);
    if (!m || !b) goto done;
    char path[64];
    snprintf(path, sizeof path, "test_transformer_%d_%d.npz", (int)getpid(), aan);
    CHECK_STATUS(mt_model_save(m, path));
    CHECK_STATUS(mt_model_load(path, NULL, &m2));
    if (m2) {
        double c1 = eval_cost(m, b, 0.0f), c2 = eval_cost(m2, b, 0.0f);
        CHECK(c1 == c2 && isfinite(c1), "cost %.9g before saving, %.9g after loading", c1, c2);
        CHECK(mt_params_count(mt_model_params(m)) == mt_params_count(mt_model_params(m2)),
              "parameter count changed by save/load");
        char *y1 = mt_model_config_to_yaml(mt_model_get_config(m));
        char *y2 = mt_model_config_to_yaml(mt_model_get_config(m2));
        CHECK(y1 && y2 && !strcmp(y1, y2), "model.yml changed by save/load");
        mt_free(y1);
        mt_free(y2);
    }
    unlink(path);
done:
    mt_batch_free(b);
    mt_model_free(m);
    mt_model_free(m2);
}

/* A fresh model with a fixture's config has exactly Marian's parameter
** names and shapes; the fixture's model.yml is re-emitted byte-exactly. */
/* Integers in model.yml: a number too big for the field is "out of range",
** not "not an integer" (issue 38); text is still "not an integer". */
static void test_config_ints(void) {
    static const struct {
        const char *yaml, *needle;
    } cases[] = {
        {"dim-emb: 1000000000000\n", "'dim-emb: 1000000000000' is out of range"},
        {"dim-emb: 99999999999999999999999\n", "is out of range"},
        {"dim-emb: 12x\n", "'dim-emb: 12x' is not an integer"},
        {"dim-vocabs: [8000, 10000000000]\n", "'dim-vocabs' entry 2 (10000000000) is out of range"},
        {"dim-vocabs: 10000000000\n", "'dim-vocabs: 10000000000' is out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mt_model_config c = mt_model_config_default();
        mt_status rc = mt_model_config_from_yaml(cases[i].yaml, &c);
        CHECK(rc == MT_ERR_FORMAT && strstr(mt_errmsg(), cases[i].needle),
              "%s: %s, '%s' (want '%s')", cases[i].yaml, mt_status_str(rc), mt_errmsg(),
              cases[i].needle);
    }
}

/* --tied-embeddings-src and -all give the encoders and the decoder one Wemb
** (models/transformer.c, as Marian), so every vocabulary must be of one
** size; --tied-embeddings ties only the decoder's input and output. */
static void test_tied_sizes(void) {
    static const struct {
        const char *type;
        int n, dims[3];
        bool src, all, trg, ok;
    } cases[] = {
        {"transformer", 2, {11, 7}, true, false, false, false},
        {"transformer", 2, {11, 7}, false, true, false, false},
        {"transformer", 2, {11, 7}, false, false, true, true},
        {"multi-transformer", 3, {11, 11, 7}, true, false, false, false},
        {"multi-transformer", 3, {11, 7, 11}, true, false, false, false},
        {"multi-transformer", 3, {11, 11, 11}, true, false, false, true},
        {"shared-multi-transformer", 3, {11, 11, 7}, false, true, false, false},
        {"multi-transformer", 3, {11, 7, 5}, false, false, true, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mt_model_config c = tiny_config(false);
        snprintf(c.type, sizeof c.type, "%s", cases[i].type);
        c.n_vocabs = cases[i].n;
        for (int k = 0; k < c.n_vocabs; k++)
            c.dim_vocabs[k] = cases[i].dims[k];
        c.tied_embeddings_src = cases[i].src;
        c.tied_embeddings_all = cases[i].all;
        c.tied_embeddings = cases[i].trg;
        mt_status rc = mt_model_config_check(&c);
        CHECK(cases[i].ok ? rc == MT_OK
                          : rc == MT_ERR_INVALID && strstr(mt_errmsg(), "equal vocabulary sizes"),
              "case %zu (%s): %s %s", i, cases[i].type, mt_status_str(rc), mt_errmsg());
        if (cases[i].ok) { /* and the model can be made */
            mt_model *m = NULL;
            CHECK(mt_model_create(&c, NULL, 1, &m) == MT_OK, "case %zu: create: %s", i,
                  mt_errmsg());
            mt_model_free(m);
        }
    }
}

static void test_marian_layout(const char *dir) {
    char p[512];
    snprintf(p, sizeof p, DATA "%s/model.npz", dir);
    mt_model_file *f = NULL;
    CHECK_STATUS(mt_model_file_read(p, &f));
    if (!f || !f->config_yaml) {
        mt_model_file_free(f);
        return;
    }
    mt_model_config c = mt_model_config_default();
    CHECK_STATUS(mt_model_config_from_yaml(f->config_yaml, &c));
    char *y = mt_model_config_to_yaml(&c);
    CHECK(y && !strcmp(y, f->config_yaml), "%s: model.yml not re-emitted byte-exactly:\n%s", dir,
          y ? y : "(null)");
    mt_free(y);
    mt_model *m = NULL;
    CHECK_STATUS(mt_model_create(&c, NULL, 1, &m));
    if (m) {
        mt_params *ps = mt_model_params(m);
        CHECK(mt_params_count(ps) == f->n, "%s: fresh model has %d parameters, Marian's %d", dir,
              mt_params_count(ps), f->n);
        for (int i = 0; i < f->n; i++) {
            mt_tensor *t = mt_params_find(ps, f->names[i]);
            char s1[64], s2[64];
            CHECK(t && mt_shape_eq(&t->shape, &f->tensors[i].shape),
                  "%s: Marian's %s %s is %s in a fresh model", dir, f->names[i],
                  mt_shape_str(&f->tensors[i].shape, s1, sizeof s1),
                  t ? mt_shape_str(&t->shape, s2, sizeof s2) : "missing");
        }
    }
    mt_model_free(m);

    /* a file without one parameter, or with a wrong shape, is refused by name */
    const char *victim = "decoder_l1_ffn_W2";
    for (int mode = 0; mode < 2; mode++) {
        mt_model_file *h = mt_model_file_new();
        for (int i = 0; h && i < f->n; i++) {
            if (strcmp(f->names[i], victim)) {
                mt_model_file_add(h, f->names[i], &f->tensors[i]);
            } else if (mode == 1) {
                mt_tensor t = f->tensors[i];
                t.shape = mt_shape2(t.shape.dim[1], t.shape.dim[0]); /* transposed */
                if (t.shape.dim[0] != t.shape.dim[1]) mt_model_file_add(h, f->names[i], &t);
            }
        }
        mt_model_file_set_config(h, f->config_yaml);
        snprintf(p, sizeof p, "test_transformer_bad_%d.npz", (int)getpid());
        CHECK_STATUS(mt_model_file_write(p, h));
        mt_model *bad = NULL;
        mt_status rc = mt_model_load(p, NULL, &bad);
        CHECK(rc == (mode ? MT_ERR_FORMAT : MT_ERR_NOTFOUND) && bad == NULL &&
                  strstr(mt_errmsg(), victim) && strstr(mt_errmsg(), p),
              "%s: load without %s: %s (%s)", dir, victim, mt_status_str(rc), mt_errmsg());
        mt_model_free(bad);
        mt_model_file_free(h);
        unlink(p);
    }
    mt_model_file_free(f);
}

/* Initialisation as Marian's: a fresh model of the default recipe's
** architecture (the shipped model's model.yml) against the statistics of
** the model Marian 1.12 saved after 60 smoothed updates of that recipe
** (default-recipe/marian-params-after-60-updates.tsv), still near its
** initialisation. Matrices: uniform draws, so the standard deviation within
** 3% of Marian's and the largest |w| between 97% and 101% of Marian's
** (Marian's Wemb, uniform(+-sqrt(3 / dim-emb)), has std 0.0625; a fan-in
** of the vocabulary gives 0.0112). Biases start at 0 and layer-norm scales
** at 1 exactly (Marian's inits::zeros and inits::ones; its saved ones have
** moved by the 60 updates, so they are not compared). */
static void test_init_stats(void) {
    mt_model_file *f = NULL;
    CHECK_STATUS(mt_model_file_read(MT_TEST_DATA "/../../assets/models/en-de/model.npz", &f));
    FILE *tsv = fopen(DATA "default-recipe/marian-params-after-60-updates.tsv", "r");
    CHECK(tsv != NULL, "cannot open Marian's parameter statistics");
    mt_model_config c = mt_model_config_default();
    if (f && f->config_yaml) CHECK_STATUS(mt_model_config_from_yaml(f->config_yaml, &c));
    mt_model *m = NULL;
    if (f && tsv) CHECK_STATUS(mt_model_create(&c, NULL, 1111, &m));
    mt_params *ps = m ? mt_model_params(m) : NULL;
    char line[512];
    int n_mat = 0, n_vec = 0;
    while (ps && fgets(line, sizeof line, tsv)) {
        char name[128], shape[64];
        double mean, sd, lo, hi;
        if (line[0] == '#' ||
            sscanf(line, "%127s %63s %lf %lf %lf %lf", name, shape, &mean, &sd, &lo, &hi) != 6)
            continue;
        mt_tensor *t = mt_params_find(ps, name);
        CHECK(t != NULL, "Marian's %s is missing in a fresh model", name);
        if (!t) continue;
        int64_t n = mt_tensor_numel(t);
        float *w = malloc((size_t)n * sizeof *w);
        if (!w || mt_tensor_get(t, w, (size_t)n * sizeof *w) != MT_OK) {
            free(w);
            CHECK(0, "cannot read %s", name);
            continue;
        }
        double s1 = 0, s2 = 0, amax = 0;
        for (int64_t i = 0; i < n; i++) {
            s1 += w[i];
            s2 += (double)w[i] * w[i];
            if (fabs(w[i]) > amax) amax = fabs(w[i]);
        }
        double my_sd = sqrt(s2 / n - (s1 / n) * (s1 / n));
        double their_max = fmax(fabs(lo), fabs(hi));
        bool matrix = t->shape.ndim == 2 && t->shape.dim[0] > 1 && t->shape.dim[1] > 1;
        if (matrix) {
            n_mat++;
            CHECK(fabs(my_sd / sd - 1) < 0.03, "%s: std %.5f, Marian's %.5f", name, my_sd, sd);
            CHECK(amax <= 1.01 * their_max && amax >= 0.97 * their_max,
                  "%s: max |w| %.5f, Marian's %.5f", name, amax, their_max);
        } else {
            n_vec++;
            double want = strstr(name, "_ln_scale") ? 1.0 : 0.0;
            bool exact = true;
            for (int64_t i = 0; i < n; i++)
                exact = exact && w[i] == want;
            CHECK(exact, "%s does not start at %g", name, want);
        }
        free(w);
    }
    CHECK(!ps || (n_mat >= 40 && n_vec >= 80), "compared %d matrices and %d vectors", n_mat, n_vec);
    if (tsv) fclose(tsv);
    mt_model_free(m);
    mt_model_file_free(f);
}

/* Mixed precision (mt_graph_params.bf16_products): the gradients of a tiny
** model's training loss with bfloat16 operands against float32's, tensor by
** tensor.  Bound: each product's operands are rounded to bfloat16 (unit
** roundoff u = 2^-8), moving every term of a sum by at most 2u relative; a
** gradient goes through at most P products in sequence, forward and back
** (this model: 12 forward, as many backward), so to first order it moves by
** at most P 2u of its size: ||g16 - g32|| <= 24 * 2 * 2^-8 ||g32|| (0.19).
** (Key biases, whose exact gradient is 0, are held to that bound times the
** key weights' gradient instead.)  And the flag must be honoured: most
** tensors' gradients differ. */
static void test_bf16_gradients(void) {
    mt_model_config c = tiny_config(false);
    mt_model *m;
    mt_batch *b;
    if (!tiny_setup(&c, 4321, 17, &m, &b)) return;
    mt_params *p = mt_model_params(m);
    int np = mt_params_count(p);
    float **gr[2] = {calloc((size_t)np, sizeof(float *)), calloc((size_t)np, sizeof(float *))};
    double cost[2] = {0, 0};
    for (int v = 0; v < 2 && gr[0] && gr[1]; v++) {
        mt_params_zero_grads(p);
        mt_graph_params gp = mt_graph_default_params();
        gp.training = true;
        gp.bf16_products = v == 1;
        mt_graph *g = NULL;
        CHECK_STATUS(mt_graph_init(NULL, gp, &g));
        mt_model_loss L = g ? mt_model_build_loss(m, g, b, 0.1f) : (mt_model_loss){0};
        if (L.cost) CHECK_STATUS(mt_graph_backward(g, L.cost));
        float cf = 0;
        if (L.cost) mt_node_get_scalar(L.cost, &cf);
        cost[v] = cf;
        for (int i = 0; i < np; i++) {
            mt_tensor *gt = mt_params_grad_at(p, i);
            if (!gt) continue;
            int64_t n = mt_tensor_numel(gt);
            gr[v][i] = malloc(sizeof(float) * (size_t)n);
            if (gr[v][i]) mt_tensor_get(gt, gr[v][i], sizeof(float) * (size_t)n);
        }
        mt_graph_free(g);
    }
    const double bound = 24 * 2 * 0x1p-8;
    double worst = 0;
    int moved = 0, compared = 0;
    for (int i = 0; i < np && gr[0] && gr[1]; i++) {
        if (!gr[0][i] || !gr[1][i]) continue;
        int64_t n = mt_tensor_numel(mt_params_grad_at(p, i));
        double d2 = 0, g2 = 0;
        for (int64_t j = 0; j < n; j++) {
            double d = (double)gr[1][i][j] - gr[0][i][j];
            d2 += d * d;
            g2 += (double)gr[0][i][j] * gr[0][i][j];
        }
        if (g2 == 0) continue;
        const char *nm = mt_params_name(p, i);
        size_t ln = strlen(nm);
        if (ln > 3 && !strcmp(nm + ln - 3, "_bk")) {
            /* a key bias shifts all of a query's scores alike, which the
            ** softmax ignores: its exact gradient is 0 and both results are
            ** rounding noise, to be small beside the key weights' gradient */
            char wk[128];
            snprintf(wk, sizeof wk, "%.*s_Wk", (int)(ln - 3), nm);
            double w2 = 0;
            for (int q = 0; q < np; q++) {
                if (strcmp(mt_params_name(p, q), wk) || !gr[0][q]) continue;
                int64_t nq = mt_tensor_numel(mt_params_grad_at(p, q));
                for (int64_t j = 0; j < nq; j++)
                    w2 += (double)gr[0][q][j] * gr[0][q][j];
            }
            double b2 = 0;
            for (int64_t j = 0; j < n; j++)
                b2 += (double)gr[1][i][j] * gr[1][i][j];
            CHECK(w2 > 0 && sqrt(b2) <= bound * sqrt(w2),
                  "bfloat16 gradient of %s (exactly 0 in theory): norm %.3g beside %s's %.3g", nm,
                  sqrt(b2), wk, sqrt(w2));
            continue;
        }
        double rel = sqrt(d2 / g2);
        compared++;
        if (rel > 0) moved++;
        if (rel > worst) worst = rel;
        CHECK(rel <= bound, "bfloat16 gradient of %s: relative error %.4f > %.4f",
              mt_params_name(p, i), rel, bound);
    }
    CHECK(compared > 10 && moved > compared / 2,
          "bfloat16 products change %d of %d gradients (the flag is not honoured?)", moved,
          compared);
    CHECK_CLOSE(cost[1], cost[0], 0, 2 * 0x1p-8 * 12, "bfloat16 cost");
    fprintf(stderr,
            "bfloat16 gradients: %d tensors, worst relative error %.4f (bound %.3f), "
            "cost %.6f vs %.6f\n",
            compared, worst, bound, cost[1], cost[0]);
    for (int i = 0; i < np && gr[0] && gr[1]; i++) {
        free(gr[0][i]);
        free(gr[1][i]);
    }
    free(gr[0]);
    free(gr[1]);
    mt_batch_free(b);
    mt_model_free(m);
}

/* Allocation failures: load a model, score a batch, translate two steps,
** save it, with the N-th try-allocation and all later ones failing, for
** every N until the scenario succeeds: always a clean status with a
** message, never a leak or a crash. */
static mt_status fault_scenario(void *ctx) {
    const char *out_path = ctx;
    mt_model *m = NULL;
    mt_graph *g = NULL;
    mt_batch *b = NULL;
    mt_status rc = mt_model_load(DATA "transformer-tiny/model.npz", NULL, &m);
    if (rc == MT_OK) rc = mt_graph_init(NULL, mt_graph_default_params(), &g);
    const int32_t src[2][4] = {{5, 6, 7, 0}, {8, 9, 0, 0}}, trg[2][3] = {{10, 11, 0}, {12, 0, 0}};
    mt_batch_seq seqs[4] = {{src[0], 4}, {trg[0], 3}, {src[1], 3}, {trg[1], 2}};
    if (rc == MT_OK) rc = mt_batch_make(1, true, 2, seqs, NULL, &b);
    if (rc == MT_OK) {
        mt_model_loss L = mt_model_build_loss(m, g, b, 0.1f);
        rc = L.status;
        if (rc == MT_OK) rc = mt_graph_forward(g);
    }
    mt_model_encoding enc;
    mt_dec_state st, next;
    mt_dec_step out;
    int32_t prev[2] = {3, 4}, rows[4] = {0, 0, 1, 1};
    if (rc == MT_OK) {
        mt_graph_clear(g);
        rc = mt_model_encode(m, g, b, &enc);
    }
    if (rc == MT_OK) rc = mt_model_start(m, g, &enc, &st);
    if (rc == MT_OK) rc = mt_model_step(m, g, &enc, &st, prev, &next, &out);
    if (rc == MT_OK) rc = mt_model_select(m, g, &next, rows, 2, &st);
    if (rc == MT_OK) rc = mt_model_step(m, g, &enc, &st, rows, &next, &out);
    if (rc == MT_OK) rc = mt_graph_forward(g);
    if (rc == MT_OK) rc = mt_model_save(m, out_path);
    mt_batch_free(b);
    mt_graph_free(g);
    mt_model_free(m);
    return rc;
}

static void test_alloc_failures(void) {
    char path[64];
    snprintf(path, sizeof path, "test_transformer_fault_%d.npz", (int)getpid());
    test_alloc_fail_sweep(fault_scenario, path, 20000);
    unlink(path);
}

int main(void) {
    test_config_ints();
    test_scores("transformer-tiny", "vocab.spm", "vocab.spm");
    test_scores("transformer-tiny-r2l", "vocab.spm", "vocab.spm");
    test_scores("transformer-aan", "vocab.en.spm", "vocab.de.spm");
    test_scores("multi-transformer", "vocab.spm", "vocab.spm");
    test_greedy("transformer-tiny", "vocab.spm", "vocab.spm");
    test_greedy("transformer-tiny-r2l", "vocab.spm", "vocab.spm");
    test_greedy("transformer-aan", "vocab.en.spm", "vocab.de.spm");
    test_greedy("multi-transformer", "vocab.spm", "vocab.spm");
    test_alignment("transformer-tiny", "vocab.spm", "vocab.spm");
    test_alignment("transformer-aan", "vocab.en.spm", "vocab.de.spm");
    test_shortlist();
    test_greedy_batched("transformer-tiny", "vocab.spm", "vocab.spm", 0, 8);
    test_packed_encoding("transformer-tiny", "vocab.spm", "vocab.spm");
    test_packed_encoding("multi-transformer", "vocab.spm", "vocab.spm");
    test_fold("transformer-tiny", "vocab.spm", "vocab.spm", 0);
    test_fold("transformer-tiny", "vocab.spm", "vocab.spm", 1);
    test_fold("transformer-tiny", "vocab.spm", "vocab.spm", 2);
    test_fold("multi-transformer", "vocab.spm", "vocab.spm", 0);
    test_fold("multi-transformer", "vocab.spm", "vocab.spm", 1);
    test_fold("multi-transformer", "vocab.spm", "vocab.spm", 2);
    test_fold("transformer-aan", "vocab.en.spm", "vocab.de.spm", 0);
    test_ragged_rows("transformer-tiny", "vocab.spm", "vocab.spm");
    test_ragged_rows("multi-transformer", "vocab.spm", "vocab.spm");
    test_ragged_rows("transformer-aan", "vocab.en.spm", "vocab.de.spm");
    test_greedy_batched("transformer-aan", "vocab.en.spm", "vocab.de.spm", 48, 8);
    test_prenorm_decoding();
    test_gradients(0);
    test_gradients(1);
    test_gradients(2);
    test_gradients(3);
    test_gradients(4);
    test_tied_sizes();
    test_round_trip(false);
    test_round_trip(true);
    test_marian_layout("transformer-tiny");
    test_marian_layout("transformer-aan");
    test_marian_layout("transformer-tiny-r2l");
    test_marian_layout("multi-transformer");
    test_init_stats();
    test_bf16_gradients();
    test_alloc_failures();
    TEST_MAIN_END();
}
