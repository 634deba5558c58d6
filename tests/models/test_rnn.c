/*
** test_rnn.c: Marian's s2s (RNN) models, models/rnn.c.
**
** (Scores and translations of the Marian-trained fixture s2s-tiny against
** Marian's own outputs are in tests/app/score_cli.sh and translate_cli.sh.)
**   names    a fresh model with the fixture's config has exactly the
**            fixture's 97 parameters (names and shapes, as Marian wrote them;
**            its model.npz has 98 items with special:model.yml)
**   steps    the step API (beam 2 per sentence, rows swapped by
**            mt_model_select at every position, a padded batch) gives the
**            teacher-forced log-probabilities of the same tokens
**   grads    central finite differences on the parameters of fresh tiny
**            models through mt_model_build_loss (deep transition in encoder
**            and decoder, two layers each, with and without layer norm;
**            alternating and bi-unidirectional encoders with skip
**            connections, three layers; LSTM cells)
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model.h"
#include "mt.h"

#define DATA MT_TEST_DATA "/marian/"

static void test_names(void) {
    mt_model *m = NULL, *f = NULL;
    CHECK_STATUS(mt_model_load(DATA "s2s-tiny/model.npz", NULL, &m));
    if (m == NULL) return;
    mt_model_config c = *mt_model_get_config(m);
    CHECK(!strcmp(c.type, "s2s") && c.dim_rnn == 128 && c.enc_cell_depth == 2 &&
              c.dec_cell_base_depth == 2 && c.dec_cell_high_depth == 1 && c.layer_normalization,
          "fixture config: type %s dim-rnn %d", c.type, c.dim_rnn);
    CHECK_STATUS(mt_model_create(&c, NULL, 1, &f));
    if (f) {
        mt_params *pm = mt_model_params(m), *pf = mt_model_params(f);
        CHECK(mt_params_count(pf) == 97 && mt_params_count(pm) == 97,
              "parameters: fresh %d, fixture %d, want 97", mt_params_count(pf),
              mt_params_count(pm));
        int bad = 0;
        for (int i = 0; i < mt_params_count(pf); i++) {
            const char *name = mt_params_name(pf, i);
            mt_tensor *a = mt_params_at(pf, i), *b = mt_params_find(pm, name);
            if (!b || !mt_shape_eq(&a->shape, &b->shape)) {
                char s1[64];
                bad += !CHECK(0, "fresh parameter %s %s: %s in the fixture", name,
                              mt_shape_str(&a->shape, s1, sizeof s1), b ? "other shape" : "absent");
            }
        }
        CHECK(bad == 0, "%d parameters differ", bad);
    }
    mt_model_free(f);
    mt_model_free(m);
}

/* A padded batch of n sentences with random ids in [2, v), EOS (0) last. */
static mt_batch *random_batch(int n, int v, unsigned seed, const int32_t *slen,
                              const int32_t *tlen) {
    mt_rng r;
    mt_rng_seed(&r, seed);
    int32_t ids[8][2][16];
    mt_batch_seq seqs[16];
    for (int i = 0; i < n; i++) {
        const int32_t lens[2] = {slen[i], tlen[i]};
        for (int s = 0; s < 2; s++) {
            for (int t = 0; t < lens[s]; t++)
                ids[i][s][t] = 2 + (int32_t)(mt_rng_next(&r) % (uint64_t)(v - 2));
            ids[i][s][lens[s] - 1] = 0;
            seqs[i * 2 + s] = (mt_batch_seq){ids[i][s], lens[s]};
        }
    }
    mt_batch *b = NULL;
    CHECK_STATUS(mt_batch_make(1, true, n, seqs, NULL, &b));
    return b;
}

static void test_steps(void) {
    mt_model *m = NULL;
    CHECK_STATUS(mt_model_load(DATA "s2s-tiny/model.npz", NULL, &m));
    if (m == NULL) return;
    const int n = 3, k = 2;
    const int32_t slen[3] = {5, 9, 2}, tlen[3] = {7, 3, 6};
    mt_batch *b = random_batch(n, 4000, 5, slen, tlen);
    mt_graph *g = NULL, *gs = NULL;
    CHECK_STATUS(mt_graph_init(NULL, mt_graph_default_params(), &g));
    CHECK_STATUS(mt_graph_init(NULL, mt_graph_default_params(), &gs));
    if (!b || !g || !gs) goto done;
    mt_model_loss L = mt_model_build_loss(m, g, b, 0.0f);
    CHECK(L.status == MT_OK, "loss: %s", mt_errmsg());
    if (L.status != MT_OK || mt_graph_forward(g) != MT_OK) goto done;
    int32_t tl = b->trg_len, V = mt_model_trg_vocab(m);
    float *want = malloc(sizeof(float) * (size_t)(n * tl));
    float *lp = malloc(sizeof(float) * (size_t)(n * k * V));
    CHECK_STATUS(mt_node_get(L.logprob_word, want, (int64_t)n * tl));
    mt_model_encoding enc;
    mt_dec_state st, sel;
    CHECK_STATUS(mt_model_encode(m, gs, b, &enc));
    CHECK_STATUS(mt_model_start(m, gs, &enc, &st));
    int32_t rows[6] = {0, 0, 1, 1, 2, 2}, prev[6] = {0};
    CHECK_STATUS(mt_model_select(m, gs, &st, rows, k, &st)); /* beam 1 -> 2 */
    double worst = 0;
    int compared = 0;
    for (int32_t t = 0; t < tl; t++) {
        mt_dec_step out;
        if (mt_model_step(m, gs, &enc, &st, prev, &st, &out) != MT_OK ||
            mt_graph_forward(gs) != MT_OK) {
            CHECK(0, "step %d: %s", (int)t, mt_errmsg());
            break;
        }
        CHECK_STATUS(mt_node_get(out.logprobs, lp, (int64_t)n * k * V));
        for (int s = 0; s < n; s++)
            for (int j = 0; j < k; j++) {
                if (t >= tlen[s]) continue;
                int32_t tok = b->trg_ids[s * tl + t];
                double d = fabs(lp[(s * k + j) * V + tok] - want[s * tl + t]);
                worst = d > worst ? d : worst;
                compared++;
            }
        /* both rows of a sentence hold the same history: swap them */
        int32_t swap[6];
        for (int r = 0; r < n * k; r++) {
            swap[r] = r ^ 1;
            prev[r] = b->trg_ids[(r / k) * tl + t];
        }
        CHECK_STATUS(mt_model_select(m, gs, &st, swap, k, &sel));
        st = sel;
    }
    fprintf(stderr, "s2s steps: %d log-probs, max abs diff to teacher forcing %.3g\n", compared,
            worst);
    CHECK(compared == 2 * (7 + 3 + 6) && worst < 1e-4, "steps vs teacher forcing: %d, %.3g",
          compared, worst);
    free(want);
    free(lp);
done:
    mt_graph_free(gs);
    mt_graph_free(g);
    mt_batch_free(b);
    mt_model_free(m);
}

static double eval_cost(mt_model *m, const mt_batch *b) {
    mt_graph *g = NULL;
    float cost = NAN;
    CHECK_STATUS(mt_graph_init(NULL, mt_graph_default_params(), &g));
    if (!g) return NAN;
    mt_model_loss L = mt_model_build_loss(m, g, b, 0.0f);
    if (L.cost && mt_graph_forward(g) == MT_OK) mt_node_get_scalar(L.cost, &cost);
    mt_graph_free(g);
    return cost;
}

/* variant 0: bidirectional, layer norm, tied; 1: no layer norm, untied;
** 2: alternating encoder, skip connections; 3: bi-unidirectional encoder
** (one bidirectional layer, two unidirectional), skip, layer norm;
** 4: LSTM cells in encoder and decoder, layer norm; 5: LSTM encoder, GRU
** decoder, no layer norm */
static void test_gradients(int variant) {
    static const char *const names[] = {"layer norm, tied",  "no layer norm, untied",
                                        "alternating, skip", "bi-unidirectional, skip",
                                        "lstm, layer norm",  "lstm encoder, gru decoder"};
    const char *name = names[variant];
    bool layer_norm = variant != 1 && variant != 5;
    mt_model_config c = mt_model_config_default();
    snprintf(c.type, sizeof c.type, "s2s");
    c.dim_vocabs[0] = c.dim_vocabs[1] = 11;
    c.dim_emb = 6;
    c.dim_rnn = 4;
    c.enc_depth = 2;
    c.enc_cell_depth = 2;
    c.dec_depth = 2;
    c.dec_cell_base_depth = 3; /* a transition after the attention's cell */
    c.dec_cell_high_depth = 2;
    c.layer_normalization = layer_norm;
    c.tied_embeddings = layer_norm;
    if (variant == 2 || variant == 3) {
        snprintf(c.enc_type, sizeof c.enc_type, "%s",
                 variant == 2 ? "alternating" : "bi-unidirectional");
        c.skip = true;
        c.enc_depth = 3;
        c.dec_depth = 3;
    }
    if (variant >= 4) {
        snprintf(c.enc_cell, sizeof c.enc_cell, "lstm");
        snprintf(c.dec_cell, sizeof c.dec_cell, "%s", variant == 4 ? "lstm" : "gru");
    }
    mt_model *m = NULL;
    CHECK_STATUS(mt_model_create(&c, NULL, 77, &m));
    const int32_t slen[3] = {5, 3, 7}, tlen[3] = {4, 6, 2};
    mt_batch *b = random_batch(3, 11, 99, slen, tlen);
    mt_graph *g = NULL;
    mt_graph_params gp = mt_graph_default_params();
    gp.training = true;
    if (m) CHECK_STATUS(mt_params_alloc_grads(mt_model_params(m)));
    CHECK_STATUS(mt_graph_init(NULL, gp, &g));
    if (!m || !b || !g) goto done;
    mt_params *p = mt_model_params(m);
    mt_params_zero_grads(p);
    mt_model_loss L = mt_model_build_loss(m, g, b, 0.0f);
    CHECK(L.status == MT_OK && L.cost, "training loss: %s", mt_errmsg());
    if (!L.cost || mt_graph_backward(g, L.cost) != MT_OK) goto done;
    int checked = 0, bad = 0, n_kink = 0;
    double worst = 0;
    mt_rng r;
    mt_rng_seed(&r, 3);
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
            ** loss is not smooth around x (float32 rounding of a steep
            ** spot): skipped, and counted */
            double gd[2];
            for (int e = 0; e < 2; e++) {
                const float eps = e == 0 ? 2e-3f : 1e-3f;
                float x0 = val[k];
                val[k] = x0 + eps;
                mt_tensor_set(t, val, sizeof(float) * (size_t)n);
                mt_params_touch(p);
                double lp = eval_cost(m, b);
                val[k] = x0 - eps;
                mt_tensor_set(t, val, sizeof(float) * (size_t)n);
                mt_params_touch(p);
                double lm = eval_cost(m, b);
                val[k] = x0;
                mt_tensor_set(t, val, sizeof(float) * (size_t)n);
                mt_params_touch(p);
                gd[e] = (lp - lm) / (2.0 * eps);
            }
            double gn = gd[1];
            if (fabs(gd[0] - gd[1]) > 1e-2 + 2e-2 * fabs(gd[1])) {
                fprintf(stderr, "  %s: %s[%lld] not smooth: %.6g / %.6g (backward %.6g)\n", name,
                        mt_params_name(p, i), (long long)k, gd[0], gd[1], grad[k]);
                n_kink++;
                continue;
            }
            double err = fabs(grad[k] - gn) / (1e-2 + fabs(gn));
            worst = err > worst ? err : worst;
            checked++;
            if (!CHECK(fabs(grad[k] - gn) <= 1e-2 + 2e-2 * fabs(gn),
                       "%s: d cost / d %s[%lld]: backward %.6g, finite differences %.6g", name,
                       mt_params_name(p, i), (long long)k, grad[k], gn))
                bad++;
        }
        free(val);
        free(grad);
    }
    fprintf(stderr,
            "tiny s2s (%s): %d gradient entries over %d parameters checked (%d at non-smooth "
            "points skipped), worst relative error %.3g\n",
            name, checked, mt_params_count(p), n_kink, worst);
    CHECK(checked >= 3 * 40 && bad == 0 && n_kink * 10 <= checked,
          "%d gradient entries checked, %d bad, %d skipped", checked, bad, n_kink);
done:
    mt_graph_free(g);
    mt_batch_free(b);
    mt_model_free(m);
}

int main(void) {
    test_names();
    test_steps();
    for (int v = 0; v < 6; v++)
        test_gradients(v);
    TEST_MAIN_END();
}
