/*
** test_graph_flops.c: mt_graph_matmul_flops (engine/graph_flops.c).
**
** Two oracles:
**   - hand-computed counts, 2 M N K (times the batch) per product, for small
**     graphs of every product op (matmul with and without transposes and
**     leading dims, bmm, affine, fused attention), with sources that do and
**     do not need gradients (inputs, frozen parameters, a shared node used
**     twice, a dead branch, an inference graph, a memoized product);
**   - the GEMMs actually executed: the graphs run on a device whose
**     gemm_f32 / gemm_f32_batched / gemm_f32_impl entries add 2 m n k
**     (times the batch) to a counter before calling the CPU kernels, so a
**     product op that the count misses, counts twice, or a backward that
**     runs more or fewer GEMMs than counted shows up as a difference.  This
**     is done for the small graphs and for the loss of a small transformer
**     (post-norm, tied embeddings; and pre-norm with an average-attention
**     decoder).
*/
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "harness.h"
#include "model.h"
#include "mt.h"

/* ---------------------------------------------------- counting device */

static mt_device_ops count_ops;
static mt_device count_dev;
static double executed; /* 2 m n k of every GEMM run on count_dev */

static void count_gemm(mt_device *d, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                       const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                       float *c, int64_t ldc) {
    (void)d;
    executed += 2.0 * (double)m * (double)n * (double)k;
    mt_device *cpu = mt_device_cpu();
    cpu->ops->gemm_f32(cpu, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void count_gemm_batched(mt_device *d, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                               float alpha, const float *a, int64_t lda, int64_t sa, const float *b,
                               int64_t ldb, int64_t sb, float beta, float *c, int64_t ldc,
                               int64_t sc, int64_t batch) {
    (void)d;
    executed += 2.0 * (double)m * (double)n * (double)k * (double)batch;
    mt_device *cpu = mt_device_cpu();
    cpu->ops->gemm_f32_batched(cpu, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc,
                               sc, batch);
}

static void count_gemm_impl(mt_device *d, int variant, bool ta, bool tb, int64_t m, int64_t n,
                            int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                            int64_t ldb, float beta, float *c, int64_t ldc) {
    (void)d;
    executed += 2.0 * (double)m * (double)n * (double)k;
    mt_device *cpu = mt_device_cpu();
    cpu->ops->gemm_f32_impl(cpu, variant, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static mt_device *counting_device(void) {
    mt_device *cpu = mt_device_cpu();
    count_ops = *cpu->ops;
    count_ops.name = "cpu-counting";
    count_ops.gemm_f32 = count_gemm;
    count_ops.gemm_f32_batched = count_gemm_batched;
    if (cpu->ops->gemm_f32_impl != NULL) count_ops.gemm_f32_impl = count_gemm_impl;
    count_dev = *cpu;
    count_dev.ops = &count_ops;
    return &count_dev;
}

/* ------------------------------------------------------------ helpers */

static double flops_of(const mt_graph *g, const mt_node *root, bool with_backward) {
    double f = -1;
    CHECK_STATUS(mt_graph_matmul_flops(g, root, with_backward, &f));
    return f;
}

static mt_node *param(mt_graph *g, mt_params *p, const char *name, int64_t r, int64_t c) {
    return mt_param(g, p, name, mt_shape2(r, c), mt_init_uniform(-0.5f, 0.5f));
}

static mt_node *input3(mt_graph *g, int64_t a, int64_t b, int64_t c) {
    static float data[4096];
    for (int i = 0; i < 4096; i++)
        data[i] = (float)((i * 37) % 11) * 0.1f - 0.5f;
    MT_ASSERT(a * b * c <= 4096);
    return mt_input(g, mt_shape3(a, b, c), data);
}

/* Runs forward and backward of loss on g (count_dev) and checks that the
** GEMMs executed in each pass match the count. */
static void check_executed(mt_graph *g, mt_node *loss, const char *what) {
    double fwd = flops_of(g, loss, false), all = flops_of(g, loss, true);
    executed = 0;
    CHECK_STATUS(mt_graph_forward(g));
    CHECK_CLOSE(executed, fwd, 0, 0, "%s: forward GEMM flops executed vs counted", what);
    executed = 0;
    CHECK_STATUS(mt_graph_backward(g, loss));
    CHECK_CLOSE(executed, all - fwd, 0, 0, "%s: backward GEMM flops executed vs counted", what);
}

static mt_graph *new_graph(mt_device *dev, bool training) {
    mt_graph_params gp = mt_graph_default_params();
    gp.training = training;
    mt_graph *g = NULL;
    CHECK_STATUS(mt_graph_init(dev, gp, &g));
    return g;
}

/* ------------------------------------------------------ hand-computed */

/* y = x W, x an input [2, 3, 4] (no gradient), W [4, 5]:
** forward 2 * (2*3) * 5 * 4 = 240; backward dW only: 240. */
static void test_input_times_weight(mt_device *dev, mt_params *p) {
    mt_graph *g = new_graph(dev, true);
    if (!g) return;
    mt_node *x = input3(g, 2, 3, 4);
    mt_node *y = mt_matmul(g, x, param(g, p, "W45", 4, 5), false, false);
    mt_node *loss = mt_sum_all(g, y);
    CHECK(loss != NULL, "build: %s", mt_errmsg());
    CHECK_CLOSE(flops_of(g, loss, false), 240, 0, 0, "input x weight, forward");
    CHECK_CLOSE(flops_of(g, loss, true), 480, 0, 0, "input x weight, with backward");
    /* the count of a subgraph: the product node itself */
    CHECK_CLOSE(flops_of(g, y, true), 480, 0, 0, "rooted at the product");
    CHECK_CLOSE(flops_of(g, x, true), 0, 0, 0, "rooted at the input");
    check_executed(g, loss, "input x weight");
    mt_graph_free(g);
}

/* Products of activations (both operands need gradients: 3x), transposed
** operands with leading dims, affine (bias not counted), a node used twice
** (counted once), a product of two inputs (no backward) and a frozen
** weight (only dA).  The expected total is summed by hand below. */
static void test_mixed(mt_device *dev, mt_params *p) {
    mt_graph *g = new_graph(dev, true);
    if (!g) return;
    mt_node *x = input3(g, 2, 3, 4);                                      /* [2,3,4] */
    mt_node *h1 = mt_matmul(g, x, param(g, p, "W1", 4, 4), false, false); /* [2,3,4] */
    mt_node *h2 = mt_matmul(g, x, param(g, p, "W2", 4, 4), false, false); /* [2,3,4] */
    /* h1, h2: forward 2*6*4*4 = 192 each, backward dW only: 192 each */
    mt_node *s = mt_bmm(g, h1, h2, false, true, 0.5f); /* [2,3,3]: batch 2, M 3, K 4, N 3 */
    /* s: forward 2*2*3*3*4 = 144, backward dA and dB: 288 */
    mt_node *a5 = mt_matmul(g, x, param(g, p, "W3", 4, 5), false, false); /* [2,3,5] */
    /* a5: forward 2*6*5*4 = 240, backward 240 */
    mt_node *t = mt_matmul(g, a5, param(g, p, "W4", 6, 3), true, true);
    /* ta: each slice of a5 [3,5] is op(A)^T, so M 5, K 3; tb: W4 [6,3] is
    ** op(B)^T, so N 6.  Output [2,5,6]: forward 2*(2*5)*6*3 = 360, backward
    ** dA (per-slice batch) and dW (slice by slice): 720 */
    mt_node *bias = mt_param(g, p, "b6", mt_shape1(6), mt_init_uniform(-0.1f, 0.1f));
    mt_node *u = mt_affine(g, t, param(g, p, "W5", 6, 6), bias); /* [2,5,6] */
    /* u: forward 2*10*6*6 = 720, backward dA and dW: 1440 */
    mt_node *c = input3(g, 1, 4, 4);
    mt_node *cm = mt_reshape(g, c, mt_shape2(4, 4));
    mt_node *z = mt_matmul(g, x, cm, false, false); /* two inputs: forward 192, backward 0 */
    mt_node *fr = mt_matmul(g, h1, param(g, p, "Wfrozen", 4, 4), false, false);
    /* fr: frozen weight: forward 192, backward dA only: 192 */
    mt_node *twice = mt_add(g, s, s); /* s used twice: counted once */
    mt_node *parts[5] = {mt_sum_all(g, twice), mt_sum_all(g, u), mt_sum_all(g, z),
                         mt_sum_all(g, fr), mt_sum_all(g, h2)};
    mt_node *loss = mt_concat(g, parts, 5, 0);
    loss = mt_sum_all(g, loss);
    /* a dead branch: built, not part of the loss */
    mt_node *dead = mt_matmul(g, h1, param(g, p, "Wdead", 4, 7), false, false);
    CHECK(loss != NULL && dead != NULL, "build: %s", mt_errmsg());
    if (loss == NULL || dead == NULL) {
        mt_graph_free(g);
        return;
    }
    double fwd = 192 + 192 + 144 + 240 + 360 + 720 + 192 + 192;
    double bwd = 192 + 192 + 288 + 240 + 720 + 1440 + 0 + 192;
    CHECK_CLOSE(flops_of(g, loss, false), fwd, 0, 0, "mixed graph, forward");
    CHECK_CLOSE(flops_of(g, loss, true), fwd + bwd, 0, 0, "mixed graph, with backward");
    CHECK_CLOSE(flops_of(g, dead, false), 192 + 2 * 6 * 7 * 4, 0, 0, "dead branch alone");
    /* the dead branch's forward runs too (the tape computes every node),
    ** so the executed forward is compared rooted at both */
    executed = 0;
    CHECK_STATUS(mt_graph_forward(g));
    CHECK_CLOSE(executed, fwd + 2 * 6 * 7 * 4, 0, 0, "mixed graph: forward GEMMs executed");
    executed = 0;
    CHECK_STATUS(mt_graph_backward(g, loss));
    CHECK_CLOSE(executed, bwd, 0, 0, "mixed graph: backward GEMMs executed");
    mt_graph_free(g);
}

/* Fused attention: q, k, v [2, 3, 8] from products of an input, 2 heads
** (dk 4): scores bmm [2,2,3,3] K 4: 2*4*3*3*4 = 288; context bmm [2,2,3,4]
** K 3: 2*4*3*4*3 = 288; both with two operands needing gradients. */
static void test_attention(mt_device *dev, mt_params *p) {
    mt_graph *g = new_graph(dev, true);
    if (!g) return;
    mt_node *x = input3(g, 2, 3, 4);
    mt_node *q = mt_matmul(g, x, param(g, p, "Wq", 4, 8), false, false); /* 2*6*8*4 = 384 */
    mt_node *k = mt_matmul(g, x, param(g, p, "Wk", 4, 8), false, false);
    mt_node *v = mt_matmul(g, x, param(g, p, "Wv", 4, 8), false, false);
    mt_node *o = mt_attention(g, q, k, v, NULL, 2, NULL);
    mt_node *loss = mt_sum_all(g, mt_mul(g, o, o));
    CHECK(loss != NULL, "build: %s", mt_errmsg());
    if (loss == NULL) {
        mt_graph_free(g);
        return;
    }
    double fwd = 3 * 384 + 288 + 288, bwd = 3 * 384 + 2 * 288 + 2 * 288;
    CHECK_CLOSE(flops_of(g, loss, false), fwd, 0, 0, "attention, forward");
    CHECK_CLOSE(flops_of(g, loss, true), fwd + bwd, 0, 0, "attention, with backward");
    check_executed(g, loss, "attention");
    mt_graph_free(g);
}

/* Inference graphs: no backward; a memoized product (two constants) is
** computed once and not counted, on its first build or later ones. */
static void test_inference(mt_device *dev, mt_params *p) {
    mt_graph_params gp = mt_graph_default_params();
    gp.training = false;
    gp.memoize = true;
    mt_graph *g = NULL;
    CHECK_STATUS(mt_graph_init(dev, gp, &g));
    if (!g) return;
    for (int round = 0; round < 2; round++) {
        mt_graph_clear(g);
        mt_node *w = mt_matmul(g, param(g, p, "Wa", 4, 4), param(g, p, "Wb", 4, 6), false, false);
        mt_node *y = mt_matmul(g, input3(g, 2, 3, 4), w, false, false); /* 2*6*6*4 = 288 */
        mt_node *out = mt_sum_all(g, y);
        CHECK(out != NULL, "build: %s", mt_errmsg());
        if (out == NULL) break;
        CHECK_CLOSE(flops_of(g, out, false), 288, 0, 0, "inference round %d", round);
        CHECK_CLOSE(flops_of(g, out, true), 288, 0, 0, "inference round %d, backward", round);
        executed = 0;
        CHECK_STATUS(mt_graph_forward(g));
        double memo = round == 0 ? 2 * 4 * 6 * 4 : 0; /* the memo product runs once */
        CHECK_CLOSE(executed, 288 + memo, 0, 0, "inference round %d: executed", round);
    }
    mt_graph_free(g);
}

static void test_errors(mt_device *dev, mt_params *p) {
    double f = 123;
    mt_graph *g = new_graph(dev, true);
    if (!g) return;
    CHECK(mt_graph_matmul_flops(g, NULL, true, &f) == MT_ERR_INVALID, "NULL root");
    mt_node *y = mt_matmul(g, input3(g, 1, 2, 4), param(g, p, "W45", 4, 5), false, false);
    CHECK(mt_graph_matmul_flops(NULL, y, true, &f) == MT_ERR_INVALID, "NULL graph");
    for (int at = 0; at < 2; at++) {
        f = 123;
        mt_alloc_fail_at(at, false);
        mt_status rc = mt_graph_matmul_flops(g, y, true, &f);
        mt_alloc_fail_at(-1, false);
        CHECK(rc == MT_ERR_NOMEM && f == 0, "allocation %d failing: %s, out %g", at,
              mt_status_str(rc), f);
    }
    CHECK_CLOSE(flops_of(g, y, true), 2 * 2 * 5 * 4 * 2, 0, 0, "after the failures");
    /* a root of another, longer graph is not on g's tape */
    mt_graph *g2 = new_graph(dev, true);
    mt_node *far = g2 ? input3(g2, 1, 1, 1) : NULL;
    for (int i = 0; far != NULL && i < 20; i++)
        far = mt_scale(g2, far, 2.0f);
    CHECK(far != NULL, "build: %s", mt_errmsg());
    if (far != NULL) {
        f = 123;
        CHECK(mt_graph_matmul_flops(g, far, false, &f) == MT_ERR_INVALID && f == 0,
              "a root beyond the graph's tape is refused");
    }
    mt_graph_free(g2);
    mt_graph_free(g);
}

/* --------------------------------------------------------- transformer */

static mt_batch *toy_batch(void) {
    static int32_t ids[4][2][9];
    mt_batch_seq seqs[8];
    const int32_t lens[4][2] = {{5, 4}, {3, 6}, {9, 2}, {6, 7}};
    for (int i = 0; i < 4; i++)
        for (int s = 0; s < 2; s++) {
            for (int t = 0; t < lens[i][s]; t++)
                ids[i][s][t] = 2 + (i * 7 + s * 3 + t * 5) % 17;
            ids[i][s][lens[i][s] - 1] = 0; /* EOS */
            seqs[i * 2 + s] = (mt_batch_seq){ids[i][s], lens[i][s]};
        }
    mt_batch *b = NULL;
    CHECK_STATUS(mt_batch_make(1, true, 4, seqs, NULL, &b));
    return b;
}

static void test_transformer(mt_device *dev, bool aan) {
    mt_model_config c = mt_model_config_default();
    c.dim_vocabs[0] = c.dim_vocabs[1] = 19;
    c.dim_emb = 16;
    c.heads = 4;
    c.dim_ffn = 24;
    c.enc_depth = 2;
    c.dec_depth = 2;
    c.transformer_dropout = 0.1f;
    if (aan) {
        snprintf(c.dec_autoreg, sizeof c.dec_autoreg, "average-attention");
        c.dim_aan = 12;
        snprintf(c.preprocess, sizeof c.preprocess, "n");
        snprintf(c.postprocess, sizeof c.postprocess, "da");
        snprintf(c.postprocess_top, sizeof c.postprocess_top, "n");
    } else {
        c.tied_embeddings_all = true;
        snprintf(c.ffn_activation, sizeof c.ffn_activation, "relu");
    }
    mt_model *m = NULL;
    CHECK_STATUS(mt_model_create(&c, dev, 7, &m));
    mt_batch *b = toy_batch();
    mt_graph *g = new_graph(dev, true);
    if (m && b && g) {
        CHECK_STATUS(mt_params_alloc_grads(mt_model_params(m)));
        mt_model_loss l = mt_model_build_loss(m, g, b, 0.1f);
        CHECK(l.cost != NULL, "transformer loss: %s", mt_errmsg());
        if (l.cost != NULL) {
            double fwd = flops_of(g, l.cost, false), all = flops_of(g, l.cost, true);
            /* the output layer alone: rows B*T = 4*7, K 16, N 19 */
            CHECK(fwd > 2.0 * 28 * 16 * 19 && all >= 2 * fwd && all <= 3 * fwd,
                  "transformer (%s): forward %g, with backward %g", aan ? "aan" : "tied", fwd, all);
            check_executed(g, l.cost, aan ? "transformer aan" : "transformer tied");
        }
    }
    mt_graph_free(g);
    mt_batch_free(b);
    mt_model_free(m);
}

int main(void) {
    mt_device *dev = counting_device();
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(dev, 1, &p));
    if (p == NULL) TEST_MAIN_END();
    /* create every parameter first, then freeze one */
    mt_graph *g0 = new_graph(dev, true);
    if (g0 != NULL) {
        param(g0, p, "Wfrozen", 4, 4);
        mt_params_set_trainable(p, "Wfrozen", false);
        mt_graph_free(g0);
    }
    CHECK_STATUS(mt_params_alloc_grads(p));
    test_input_times_weight(dev, p);
    test_mixed(dev, p);
    test_attention(dev, p);
    test_inference(dev, p);
    test_errors(dev, p);
    mt_params_free(p);
    test_transformer(dev, false);
    test_transformer(dev, true);
    TEST_MAIN_END();
}
