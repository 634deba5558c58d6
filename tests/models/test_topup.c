/*
** test_topup.c: decoder states with rows at different positions (top-up
** batching, models/model.h: mt_dec_state.row_pos, mt_model_append,
** mt_model_trim).
**
** Oracle: each sentence decoded alone from its own start state (the plain
** path, itself checked against Marian's outputs in test_translate).  The
** same sentences joined into a running search at later steps, after others
** dropped out and with cached positions trimmed, must give the same
** log-probabilities at every step, up to float rounding of the padded
** products (1e-4).  Three decoders: post-norm self-attention, pre-norm
** self-attention (Marian's first-position keys/values quirk) and pre-norm
** average attention.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "model.h"
#include "test_util.h"

#define V 13
#define NS 3
#define MAXT 8

static mt_model_config config(int variant) {
    mt_model_config c = mt_model_config_default();
    c.dim_vocabs[0] = c.dim_vocabs[1] = V;
    c.dim_emb = 8;
    c.heads = 2;
    c.dim_ffn = 12;
    c.enc_depth = 1;
    c.dec_depth = 2;
    c.tied_embeddings_all = true;
    if (variant >= 1) { /* pre-norm */
        snprintf(c.preprocess, sizeof c.preprocess, "n");
        snprintf(c.postprocess, sizeof c.postprocess, "da");
        snprintf(c.postprocess_top, sizeof c.postprocess_top, "n");
    }
    if (variant == 2) {
        snprintf(c.dec_autoreg, sizeof c.dec_autoreg, "average-attention");
        c.dim_aan = 6;
    }
    return c;
}

typedef struct sent {
    int32_t src[MAXT], n_src;
    int32_t trg[MAXT], n_trg; /* forced target tokens */
    float ref[MAXT][V];       /* log-probs of each step, decoded alone */
} sent;

static void make_sents(sent *s) {
    const int32_t ls[NS] = {6, 4, 7}, lt[NS] = {7, 6, 5};
    for (int i = 0; i < NS; i++) {
        s[i].n_src = ls[i];
        s[i].n_trg = lt[i];
        for (int t = 0; t < ls[i]; t++)
            s[i].src[t] = t + 1 == ls[i] ? 0 : 2 + (int32_t)(test_rng_next() % (V - 2));
        for (int t = 0; t < lt[i]; t++)
            s[i].trg[t] = 2 + (int32_t)(test_rng_next() % (V - 2));
    }
}

/* Encodes sentences ids[0..n) and makes their start state. */
static mt_status start(mt_model *m, mt_graph *g, sent *s, const int *ids, int n,
                       mt_dec_state *out) {
    mt_batch_seq seqs[NS];
    for (int i = 0; i < n; i++)
        seqs[i] = (mt_batch_seq){s[ids[i]].src, s[ids[i]].n_src};
    mt_batch *b = NULL;
    mt_status rc = mt_batch_make(1, false, n, seqs, NULL, &b);
    mt_model_encoding enc;
    if (rc == MT_OK) rc = mt_model_encode(m, g, b, &enc);
    if (rc == MT_OK) rc = mt_model_start(m, g, &enc, out);
    if (rc == MT_OK) rc = mt_graph_forward(g);
    mt_batch_free(b);
    return rc;
}

/* One step of the rows of st (beam 1): row r is sentence ids[r] at its
** position q[r]; checks the log-probs against the references.  Returns the
** largest difference. */
static double step(mt_model *m, mt_graph *g, mt_dec_state *st, sent *s, const int *ids,
                   int32_t *q, bool use_row_pos) {
    int n = st->batch;
    int32_t prev[NS];
    for (int r = 0; r < n; r++)
        prev[r] = q[r] == 0 ? 0 : s[ids[r]].trg[q[r] - 1];
    st->row_pos = use_row_pos ? q : NULL;
    mt_dec_state next;
    mt_dec_step out;
    mt_status rc = mt_model_step(m, g, NULL, st, prev, &next, &out);
    if (rc == MT_OK) rc = mt_graph_forward(g);
    CHECK_STATUS(rc);
    if (rc != MT_OK) return INFINITY;
    float lp[NS * V];
    CHECK_STATUS(mt_node_get(out.logprobs, lp, (int64_t)n * V));
    double worst = 0;
    for (int r = 0; r < n; r++) {
        for (int v = 0; v < V; v++) {
            double d = fabs((double)lp[r * V + v] - (double)s[ids[r]].ref[q[r]][v]);
            if (!(d <= worst)) worst = d; /* NaN too */
        }
        q[r]++;
    }
    *st = next;
    return worst;
}

static void test_variant(int variant) {
    static const char *names[] = {"post-norm self-attention", "pre-norm self-attention",
                                  "pre-norm average attention"};
    mt_model_config c = config(variant);
    mt_model *m = NULL;
    mt_graph *g = NULL;
    mt_graph_params gp = mt_graph_default_params();
    gp.training = false;
    CHECK_STATUS(mt_model_create(&c, NULL, 77 + (uint64_t)variant, &m));
    CHECK_STATUS(mt_graph_init(NULL, gp, &g));
    if (!m || !g) goto done;
    sent s[NS];
    make_sents(s);

    /* references: each sentence alone, every position */
    for (int i = 0; i < NS; i++) {
        mt_dec_state st;
        int ids[1] = {i};
        int32_t q[1] = {0};
        if (start(m, g, s, ids, 1, &st) != MT_OK) goto done;
        for (int t = 0; t < s[i].n_trg; t++) {
            int32_t prev = t == 0 ? 0 : s[i].trg[t - 1];
            st.row_pos = NULL;
            mt_dec_state next;
            mt_dec_step out;
            CHECK_STATUS(mt_model_step(m, g, NULL, &st, &prev, &next, &out));
            CHECK_STATUS(mt_graph_forward(g));
            CHECK_STATUS(mt_node_get(out.logprobs, s[i].ref[t], V));
            st = next;
        }
        (void)q;
        mt_graph_clear(g);
    }

    /* A alone for 3 steps; B joins; both 2 steps; A leaves and its 3
    ** extra positions are trimmed; C (a longer source) joins; B and C
    ** 3 steps. */
    double worst = 0, w;
    int ids[NS] = {0};
    int32_t q[NS] = {0};
    mt_dec_state st, add;
    if (start(m, g, s, ids, 1, &st) != MT_OK) goto done;
    for (int t = 0; t < 3; t++)
        if ((w = step(m, g, &st, s, ids, q, true)) > worst) worst = w;
    int idb[1] = {1};
    CHECK_STATUS(start(m, g, s, idb, 1, &add));
    CHECK_STATUS(mt_model_append(m, g, &st, &add, MT_DEC_FIXED | MT_DEC_ROWS, &st));
    CHECK(st.batch == 2 && st.pos == 3, "appended: %d sentences at %d", (int)st.batch,
          (int)st.pos);
    ids[1] = 1;
    q[1] = 0;
    for (int t = 0; t < 2; t++)
        if ((w = step(m, g, &st, s, ids, q, true)) > worst) worst = w;
    /* drop A: B is at 2 of 5 cached positions */
    int32_t keep_sent[1] = {1}, keep_row[1] = {1};
    CHECK_STATUS(mt_model_reorder(m, g, &st, keep_sent, 1, keep_row, 1,
                                  MT_DEC_FIXED | MT_DEC_ROWS, &st));
    ids[0] = 1;
    q[0] = q[1];
    st.row_pos = q;
    CHECK(mt_model_trim(m, g, &st, 4, &st) == MT_ERR_INVALID, "trimming a used position refused");
    CHECK_STATUS(mt_model_trim(m, g, &st, st.pos - q[0], &st));
    CHECK(st.pos == 2, "trimmed to %d positions", (int)st.pos);
    if ((w = step(m, g, &st, s, ids, q, false)) > worst) worst = w; /* all rows level */
    int idc[1] = {2};
    CHECK_STATUS(start(m, g, s, idc, 1, &add));
    CHECK_STATUS(mt_model_append(m, g, &st, &add, MT_DEC_FIXED | MT_DEC_ROWS, &st));
    ids[1] = 2;
    q[1] = 0;
    for (int t = 0; t < 3; t++)
        if ((w = step(m, g, &st, s, ids, q, true)) > worst) worst = w;
    CHECK(q[0] == 6 && q[1] == 3, "positions %d %d", (int)q[0], (int)q[1]);
    printf("%s: joined rows match the sentences decoded alone, max |diff| %.2g\n", names[variant],
           worst);
    CHECK(worst < 1e-4, "%s: log-probs of joined rows differ by %g", names[variant], worst);

    /* The check can fail: without row positions the joined rows are wrong. */
    mt_graph_clear(g);
    ids[0] = 0;
    q[0] = 0;
    if (start(m, g, s, ids, 1, &st) != MT_OK) goto done;
    for (int t = 0; t < 2; t++)
        step(m, g, &st, s, ids, q, true);
    CHECK_STATUS(start(m, g, s, idb, 1, &add));
    CHECK_STATUS(mt_model_append(m, g, &st, &add, MT_DEC_FIXED | MT_DEC_ROWS, &st));
    ids[1] = 1;
    q[1] = 0;
    w = step(m, g, &st, s, ids, q, false);
    CHECK(w > 1e-3, "%s: ignoring row positions went unnoticed (%g)", names[variant], w);
done:
    mt_graph_free(g);
    mt_model_free(m);
}

int main(void) {
    for (int v = 0; v < 3; v++)
        test_variant(v);
    TEST_MAIN_END();
}
