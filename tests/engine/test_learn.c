/*
** test_learn.c: end-to-end learning with the real ops.  A two-layer network
** (2 inputs -> 16 tanh -> 2 classes) trained with Adam on XOR-like data
** (four noisy clusters, not linearly separable) must go from an untrained
** mean cross-entropy above 0.5 to below 0.05.  Before training, the
** gradients that backward puts into the parameters are checked against
** central finite differences of the whole network's loss.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "mt.h"

/* CHECK_CLOSE of harness.h with printf arguments in the message (there, the
** message arguments would come before got/want). */
static int near(double got, double want, double atol, double rtol) {
    return fabs(got - want) <= atol + rtol * fabs(want);
}
#define CHECK_NEAR(got, want, atol, rtol, fmt, ...)                                                \
    CHECK(near((got), (want), (atol), (rtol)), "got %.9g want %.9g: " fmt, (double)(got),          \
          (double)(want), __VA_ARGS__)

#define NPTS 64
#define HID 16

static float xs[NPTS * 2];
static int32_t ys[NPTS];

static void make_data(void) {
    mt_rng r;
    mt_rng_seed(&r, 2024);
    for (int i = 0; i < NPTS; i++) {
        float a = (i & 1) ? 1.0f : -1.0f, b = (i & 2) ? 1.0f : -1.0f;
        xs[2 * i] = a + 0.15f * mt_rng_normal(&r);
        xs[2 * i + 1] = b + 0.15f * mt_rng_normal(&r);
        ys[i] = (a * b > 0) ? 1 : 0; /* XOR of the signs */
    }
}

/* Mean cross-entropy of the batch; correct counts the argmax hits. */
static mt_node *build(mt_graph *g, mt_params *p, mt_node **logits_out) {
    mt_node *x = mt_input(g, mt_shape2(NPTS, 2), xs);
    mt_node *y = mt_input_i32(g, mt_shape1(NPTS), ys);
    mt_node *w1 = mt_param(g, p, "W1", mt_shape2(2, HID), mt_init_glorot_uniform());
    mt_node *b1 = mt_param(g, p, "b1", mt_shape2(1, HID), mt_init_zeros());
    mt_node *w2 = mt_param(g, p, "W2", mt_shape2(HID, 2), mt_init_glorot_uniform());
    mt_node *b2 = mt_param(g, p, "b2", mt_shape2(1, 2), mt_init_zeros());
    mt_node *h = mt_tanh(g, mt_affine(g, x, w1, b1));
    mt_node *logits = mt_affine(g, h, w2, b2);
    if (logits_out) *logits_out = logits;
    return mt_scale(g, mt_sum_all(g, mt_cross_entropy(g, logits, y, 0.0f)), 1.0f / NPTS);
}

static float eval_loss(mt_graph *g, mt_params *p, int *correct) {
    mt_graph_clear(g);
    mt_node *logits = NULL;
    mt_node *loss = build(g, p, &logits);
    float v = NAN;
    if (mt_graph_forward(g) != MT_OK || mt_node_get_scalar(loss, &v) != MT_OK) return NAN;
    if (correct) {
        float lg[NPTS * 2];
        *correct = 0;
        if (mt_node_get(logits, lg, NPTS * 2) == MT_OK) {
            for (int i = 0; i < NPTS; i++)
                *correct += (lg[2 * i + 1] > lg[2 * i]) == (ys[i] == 1);
        }
    }
    return v;
}

/* d loss / d param at a few elements: backward vs central differences. */
static void check_gradients(mt_params *p) {
    mt_graph_params gp = mt_graph_default_params();
    gp.training = true;
    mt_graph *tg = NULL, *ig = NULL;
    CHECK_STATUS(mt_graph_init(NULL, gp, &tg));
    gp.training = false;
    CHECK_STATUS(mt_graph_init(NULL, gp, &ig));
    if (!tg || !ig) return;
    mt_params_zero_grads(p);
    mt_node *loss = build(tg, p, NULL);
    CHECK_STATUS(mt_graph_forward(tg));
    CHECK_STATUS(mt_graph_backward(tg, loss));
    const char *names[4] = {"W1", "b1", "W2", "b2"};
    int bad = 0;
    for (int k = 0; k < 4; k++) {
        mt_tensor *w = mt_params_find(p, names[k]);
        int idx = -1;
        for (int i = 0; i < mt_params_count(p); i++) {
            if (mt_params_at(p, i) == w) idx = i;
        }
        int64_t n = mt_tensor_numel(w);
        float wv[64], gv[64];
        CHECK(n <= 64 && idx >= 0, "small params");
        if (n > 64 || idx < 0) continue;
        CHECK_STATUS(mt_tensor_get(w, wv, (size_t)n * sizeof(float)));
        CHECK_STATUS(mt_tensor_get(mt_params_grad_at(p, idx), gv, (size_t)n * sizeof(float)));
        for (int64_t i = 0; i < n; i += 3) {
            const float eps = 1e-2f;
            float w0 = wv[i];
            wv[i] = w0 + eps;
            mt_tensor_set(w, wv, (size_t)n * sizeof(float));
            double lp = eval_loss(ig, p, NULL);
            wv[i] = w0 - eps;
            mt_tensor_set(w, wv, (size_t)n * sizeof(float));
            double lm = eval_loss(ig, p, NULL);
            wv[i] = w0;
            mt_tensor_set(w, wv, (size_t)n * sizeof(float));
            double fd = (lp - lm) / (2 * eps);
            if (!CHECK_NEAR(gv[i], fd, 2e-4, 2e-2, "d loss / d %s[%lld]", names[k], (long long)i)) {
                bad++;
            }
        }
    }
    CHECK(bad == 0, "%d gradient mismatches", bad);
    mt_params_zero_grads(p);
    mt_graph_free(tg);
    mt_graph_free(ig);
}

int main(void) {
    make_data();
    mt_params *p = NULL;
    mt_graph *g = NULL, *ev = NULL;
    mt_adam *adam = NULL;
    CHECK_STATUS(mt_params_init(NULL, 7, &p));
    mt_graph_params gp = mt_graph_default_params();
    gp.training = true;
    CHECK_STATUS(mt_graph_init(NULL, gp, &g));
    gp.training = false;
    CHECK_STATUS(mt_graph_init(NULL, gp, &ev));
    if (!p || !g || !ev) TEST_MAIN_END();

    int correct = 0;
    float loss0 = eval_loss(ev, p, &correct); /* creates the parameters */
    CHECK(loss0 > 0.5f, "untrained loss %g should be > 0.5", loss0);
    check_gradients(p);

    mt_adam_params ap = mt_adam_default_params();
    ap.lr = 0.02f;
    ap.clip_norm = 0.0f;
    CHECK_STATUS(mt_adam_init(p, ap, &adam));
    if (!adam) TEST_MAIN_END();
    float loss = NAN, first = NAN;
    int steps = 0;
    for (steps = 1; steps <= 400; steps++) {
        mt_graph_clear(g);
        mt_node *l = build(g, p, NULL);
        mt_status rc = mt_graph_forward(g);
        if (rc == MT_OK) rc = mt_graph_backward(g, l);
        if (rc == MT_OK) rc = mt_node_get_scalar(l, &loss);
        if (rc == MT_OK) rc = mt_adam_step(adam);
        if (rc != MT_OK) {
            CHECK_STATUS(rc);
            break;
        }
        if (steps == 1) first = loss;
        if (loss < 0.02f) break;
    }
    CHECK(first == first && fabsf(first - loss0) < 1e-5f, "training graph loss %g == %g", first,
          loss0);
    float final = eval_loss(ev, p, &correct);
    fprintf(stderr, "loss %.4f -> %.4f after %d steps, %d/%d correct\n", loss0, final, steps,
            correct, NPTS);
    CHECK(final < 0.05f, "trained loss %g should be < 0.05", final);
    CHECK(correct == NPTS, "all points classified: %d", correct);
    mt_adam_free(adam);
    mt_graph_free(ev);
    mt_graph_free(g);
    mt_params_free(p);
    TEST_MAIN_END();
}
