/*
** test_matmul_int.c: the integer path of mt_matmul / mt_affine inside the
** engine (engine/ops_gemm_int.c, engine/quantize.c, `mtpe convert -g`).
**
**   ops        int8 / int16 products of the graph vs (a) an exact
**              re-computation written here from the documented scheme
**              (quantize A per call and B once, int64 dot products, one
**              float multiply and one add) and (b) the fp64 product within
**              the error bound derived in kcpu.h; x.W and x.W^T, M = 1..33,
**              odd K and N, matmul and affine (bias), 3-D activations.
**   memo       the pack node is computed once across 100 clears (one memo
**              entry, one hit per round), stays stale without
**              mt_params_touch and is recomputed after it; no allocation
**              during forward (nor in a whole round) after warm-up.
**   tuner      gemm_type auto decides every shape after gemm_tune_samples
**              samples of each available variant, picks the fastest timed
**              one, and never changes afterwards; a test hook pins a variant.
**   intgemm    Marian's generic intgemm8 items (the marian-conv fixture)
**              become int8 parameters whose values and multiplier equal
**              quantizing the float model; products with them take the
**              integer path in any inference graph and fail in training.
**   convert    `mtpe convert -g int8` on the float fixture reproduces
**              marian-conv's intgemm8 items byte for byte and keeps every
**              other item bit-identical; -g float32 and -g int16 likewise.
**   faults     every allocation of a tuned round, a conversion and an
**              adoption failing in turn: MT_ERR_NOMEM and no leak.
**   score      transformer-tiny scored with gemm_type int8 / int16 / auto vs
**              float32 (max abs difference of sentence log-probs printed,
**              bounded); Marian's model.int8.bin loads (int8 weights) and,
**              in an int8 graph, scores exactly as the float model does.
** Also: kcpu_pack_i*_ex(trans) equals packing the explicit transpose.
*/
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "graph_impl.h"
#include "harness.h"
#include "test_util.h"
#include "kcpu_impl.h"
#include "model.h"
#include "mt.h"
#include "params_impl.h"
#include "test_hooks.h"
#include "vocab.h"

#define DATA MT_TEST_DATA "/marian/"

/* ---------------------------------------------------------------- helpers */


/* op(B)[kk, j] of W stored [k, n], or [n, k] when tb. */
static float opb(const float *w, int64_t k, int64_t n, bool tb, int64_t kk, int64_t j) {
    return tb ? w[j * k + kk] : w[kk * n + j];
}

/* The scheme of kcpu.h re-computed: C = (float)acc * unq (+ bias). */
static void exact_int(int bits, int64_t rows, int64_t k, int64_t n, const float *a, const float *w,
                      bool tb, const float *bias, float *out) {
    float qb = bits == 8 ? kcpu_i8_mult(kcpu_maxabs_f32(1, k * n, w, k * n)) : 1024.0f;
    float qa = bits == 8 ? kcpu_i8_mult(kcpu_maxabs_f32(rows, k, a, k)) : 1024.0f;
    float unq = kcpu_igemm_unquant(qa, qb);
    int32_t *aq = malloc(sizeof(int32_t) * (size_t)(rows * k + 1));
    int32_t *bq = malloc(sizeof(int32_t) * (size_t)(k * n + 1));
    for (int64_t i = 0; i < rows * k; i++) {
        if (bits == 8) {
            int8_t q;
            kcpu_quantize_i8(1, &a[i], qa, &q);
            aq[i] = q;
        } else {
            int16_t q;
            kcpu_quantize_i16(1, &a[i], qa, &q);
            aq[i] = q;
        }
    }
    for (int64_t kk = 0; kk < k; kk++) {
        for (int64_t j = 0; j < n; j++) {
            float v = opb(w, k, n, tb, kk, j);
            if (bits == 8) {
                int8_t q;
                kcpu_quantize_i8(1, &v, qb, &q);
                bq[kk * n + j] = q;
            } else {
                int16_t q;
                kcpu_quantize_i16(1, &v, qb, &q);
                bq[kk * n + j] = q;
            }
        }
    }
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < n; j++) {
            int64_t acc = 0;
            for (int64_t kk = 0; kk < k; kk++)
                acc += (int64_t)aq[i * k + kk] * bq[kk * n + j];
            float r = (float)(int32_t)acc * unq;
            out[i * n + j] = bias ? r + bias[j] : r;
        }
    }
    free(aq);
    free(bq);
}

/* Max over elements of |got - fp64 product| / bound (kcpu.h "Error bound");
** <= 1 means every element is within its bound. */
static double bound_ratio(int bits, int64_t rows, int64_t k, int64_t n, const float *a,
                          const float *w, bool tb, const float *bias, const float *got,
                          double *max_err) {
    double ma = kcpu_maxabs_f32(rows, k, a, k), mb = kcpu_maxabs_f32(1, k * n, w, k * n);
    double u = ldexp(1.0, -22);
    double ea = bits == 8 ? ma * (1.0 / 254 + u) : ldexp(1.0, -11);
    double eb = bits == 8 ? mb * (1.0 / 254 + u) : ldexp(1.0, -11);
    double worst = 0.0;
    *max_err = 0.0;
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < n; j++) {
            double ref = bias ? bias[j] : 0.0, bound = 0.0, mag = 0.0;
            for (int64_t kk = 0; kk < k; kk++) {
                double x = a[i * k + kk], y = opb(w, k, n, tb, kk, j);
                ref += x * y;
                bound += fabs(x) * eb + ea * fabs(y) + ea * eb;
                mag += (fabs(x) + ea) * (fabs(y) + eb);
            }
            bound += u * (mag + (bias ? fabs(bias[j]) : 0.0));
            double err = fabs(got[i * n + j] - ref);
            if (err > *max_err) *max_err = err;
            if (err / bound > worst) worst = err / bound;
        }
    }
    return worst;
}

static mt_graph *new_graph(mt_gemm_type t, bool memoize, bool training) {
    mt_graph_params gp = mt_graph_default_params();
    gp.memoize = memoize;
    gp.training = training;
    gp.decode.gemm_type = t;
    gp.decode.gemm_tune_samples = 3;
    mt_graph *g = NULL;
    CHECK_STATUS(mt_graph_init(NULL, gp, &g));
    return g;
}

static uint64_t allocs_now(void) { return mt_alloc_get_stats().n_allocs; }

/* The test layer's parameters l_W [k, n] and l_b [1, n] as nodes of g. */
static void layer_params(mt_graph *g, mt_params *p, int64_t k, int64_t n, const float *w,
                         const float *bias, mt_node **W, mt_node **b) {
    *W = mt_param(g, p, "l_W", mt_shape2(k, n), mt_init_values(w, k * n));
    *b = mt_param(g, p, "l_b", mt_shape2(1, n), mt_init_values(bias, n));
}

/* -------------------------------------------------------------------- ops */

static void test_ops(int bits) {
    const int64_t k = 45, n = 67;
    mt_gemm_type gt = bits == 8 ? MT_GEMM_INT8 : MT_GEMM_INT16;
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 7, &p));
    float *w = malloc(sizeof(float) * k * n), *wt = malloc(sizeof(float) * k * n);
    float *bias = malloc(sizeof(float) * n), *a = malloc(sizeof(float) * 2 * 33 * k);
    float *got = malloc(sizeof(float) * 2 * 33 * n), *want = malloc(sizeof(float) * 2 * 33 * n);
    test_fill_rand(w, k * n, -0.7f, 0.9f);
    test_fill_rand(wt, k * n, -1.1f, 0.6f);
    test_fill_rand(bias, n, -2.0f, 2.0f);
    mt_graph *g = new_graph(gt, true, false);
    if (!p || !g) return;
    double worst = 0.0, max_err = 0.0;
    int exact_bad = 0;
    for (int form = 0; form < 4; form++) { /* matmul x.W, matmul x.W^T, affine, 3-D affine */
        bool tb = form == 1, with_bias = form >= 2;
        for (int64_t m = 1; m <= 33; m++) {
            int64_t lead = form == 3 ? 2 : 1, rows = lead * m;
            test_fill_rand(a, rows * k, -3.0f, 3.0f);
            mt_graph_clear(g);
            mt_node *x =
                form == 3 ? mt_input(g, mt_shape3(2, m, k), a) : mt_input(g, mt_shape2(m, k), a);
            mt_node *y;
            if (tb) {
                mt_node *W = mt_param(g, p, "out_Wt", mt_shape2(n, k), mt_init_values(wt, k * n));
                y = mt_matmul(g, x, W, false, true);
            } else {
                mt_node *W = mt_param(g, p, "l_W", mt_shape2(k, n), mt_init_values(w, k * n));
                mt_node *b = mt_param(g, p, "l_b", mt_shape2(1, n), mt_init_values(bias, n));
                y = with_bias ? mt_affine(g, x, W, b) : mt_matmul(g, x, W, false, false);
            }
            CHECK_STATUS(mt_graph_forward(g));
            if (y == NULL) return;
            CHECK(strcmp(mt_node_op_name(y), "gemm_q") == 0, "int%d form %d: op %s", bits, form,
                  mt_node_op_name(y));
            mt_shape s = mt_node_shape(y);
            CHECK(s.ndim == (form == 3 ? 3 : 2) && s.dim[s.ndim - 1] == n && s.dim[s.ndim - 2] == m,
                  "int%d form %d: output shape", bits, form);
            CHECK_STATUS(mt_node_get(y, got, rows * n));
            const float *wb = tb ? wt : w, *bb = with_bias ? bias : NULL;
            exact_int(bits, rows, k, n, a, wb, tb, bb, want);
            for (int64_t i = 0; i < rows * n; i++) {
                if (memcmp(&got[i], &want[i], sizeof(float)) != 0 && exact_bad++ < 5) {
                    CHECK(0, "int%d form %d m %lld [%lld]: %.9g, scheme gives %.9g", bits, form,
                          (long long)m, (long long)i, got[i], want[i]);
                }
            }
            double e = 0.0;
            double r = bound_ratio(bits, rows, k, n, a, wb, tb, bb, got, &e);
            if (r > worst) worst = r;
            if (e > max_err) max_err = e;
        }
    }
    CHECK(exact_bad == 0, "int%d: %d outputs differ from the scheme", bits, exact_bad);
    CHECK(worst <= 1.0, "int%d: error %.3g x the kcpu.h bound", bits, worst);
    CHECK(max_err > 0.0, "int%d: no quantization error at all (path not taken?)", bits);
    printf("int%d ops: max |C - fp64| %.3g, at most %.3f of the bound\n", bits, max_err, worst);

    /* mt_affine_relu: the relu in the epilogue, the same values as mt_relu of
    ** mt_affine in the same graph; and in a float32 graph, relu(affine) */
    for (int fused = 0; fused < 2; fused++) {
        test_fill_rand(a, 5 * k, -3.0f, 3.0f);
        mt_graph_clear(g);
        mt_node *x = mt_input(g, mt_shape2(5, k), a);
        mt_node *W = mt_param(g, p, "l_W", mt_shape2(k, n), mt_init_values(w, k * n));
        mt_node *b = mt_param(g, p, "l_b", mt_shape2(1, n), mt_init_values(bias, n));
        mt_node *y1 = mt_affine_relu(g, x, W, b), *y0 = mt_relu(g, mt_affine(g, x, W, b));
        CHECK_STATUS(mt_graph_forward(g));
        if (y0 == NULL || y1 == NULL) break;
        CHECK(!strcmp(mt_node_op_name(y1), "gemm_q"), "int%d: affine_relu op %s", bits,
              mt_node_op_name(y1));
        CHECK_STATUS(mt_node_get(y0, want, 5 * n));
        CHECK_STATUS(mt_node_get(y1, got, 5 * n));
        int zeros = 0;
        for (int64_t i = 0; i < 5 * n; i++)
            zeros += want[i] == 0.0f;
        CHECK(memcmp(got, want, sizeof(float) * 5 * n) == 0 && zeros > 0 && zeros < 5 * n,
              "int%d: mt_affine_relu differs from mt_relu(mt_affine) (%d zeros)", bits, zeros);
        (void)fused;
    }
    {
        mt_graph *gf = new_graph(MT_GEMM_FLOAT32, true, false);
        mt_node *x = mt_input(gf, mt_shape2(3, k), a);
        mt_node *W = mt_param(gf, p, "l_W", mt_shape2(k, n), mt_init_values(w, k * n));
        mt_node *b = mt_param(gf, p, "l_b", mt_shape2(1, n), mt_init_values(bias, n));
        mt_node *y = mt_affine_relu(gf, x, W, b);
        CHECK(y && !strcmp(mt_node_op_name(y), "relu"), "float32 graph: affine_relu op %s",
              y ? mt_node_op_name(y) : "NULL");
        mt_graph_free(gf);
    }

    /* a relu product measures max|C| for the product after it: the second
    ** product equals the one after a separate relu (no measure passed) */
    if (bits == 8) {
        enum { R = 9 };
        float w2v[67 * 67], got3[R * 67], want3[R * 67];
        test_fill_rand(w2v, n * n, -0.5f, 0.5f);
        test_fill_rand(a, R * k, -3.0f, 3.0f);
        mt_graph_clear(g);
        mt_node *x = mt_input(g, mt_shape2(R, k), a);
        mt_node *W, *b;
        layer_params(g, p, k, n, w, bias, &W, &b);
        mt_node *W2 = mt_param(g, p, "l_W2", mt_shape2(n, n), mt_init_values(w2v, n * n));
        mt_node *b2 = mt_param(g, p, "l_b2", mt_shape2(1, n), mt_init_values(bias, n));
        mt_node *h1 = mt_affine_relu(g, x, W, b), *h0 = mt_relu(g, mt_affine(g, x, W, b));
        mt_node *y1 = mt_affine(g, h1, W2, b2), *y0 = mt_affine(g, h0, W2, b2);
        CHECK_STATUS(mt_graph_forward(g));
        if (y0 && y1) {
            CHECK(h1->has_amax && !h0->has_amax && h1->amax > 0.0f, "int8: relu product max %d %d",
                  (int)h1->has_amax, (int)h0->has_amax);
            CHECK_STATUS(mt_node_get(y0, want3, R * n));
            CHECK_STATUS(mt_node_get(y1, got3, R * n));
            CHECK(memcmp(got3, want3, sizeof got3) == 0,
                  "int8: the product after a measured relu product differs");
        }
    }

    /* mt_gemm_share_input: one gemm_quant_a node for the products of x built
    ** after it (one with bias, one with a residual), the same floats as
    ** products that quantize x each; a float32 graph makes no such node */
    {
        enum { R = 6 };
        float res[R * 67], w1[R * 67], g1[R * 67], w2[R * 67], g2[R * 67];
        test_fill_rand(a, R * k, -3.0f, 3.0f);
        test_fill_rand(res, R * n, -2.0f, 2.0f);
        for (int shared = 0; shared < 2; shared++) {
            mt_graph_clear(g);
            mt_node *x = mt_input(g, mt_shape2(R, k), a);
            int64_t before = mt_graph_get_stats(g).n_nodes;
            if (shared) CHECK(mt_gemm_share_input(g, x) == x, "share_input returns its input");
            int64_t made = mt_graph_get_stats(g).n_nodes - before;
            mt_node *W, *b;
            layer_params(g, p, k, n, w, bias, &W, &b);
            mt_node *y1 = mt_affine(g, x, W, b);
            mt_node *y2 = mt_affine_add(g, x, W, b, mt_input(g, mt_shape2(R, n), res));
            CHECK_STATUS(mt_graph_forward(g));
            if (!y1 || !y2) break;
            CHECK(made == shared, "int%d: share_input made %lld nodes", bits, (long long)made);
            CHECK(!strcmp(y1->src[0]->op->name, shared ? "gemm_quant_a" : "input") &&
                      y2->src[0] == y1->src[0],
                  "int%d shared %d: the products read %s", bits, shared, y1->src[0]->op->name);
            CHECK_STATUS(mt_node_get(y1, shared ? g1 : w1, R * n));
            CHECK_STATUS(mt_node_get(y2, shared ? g2 : w2, R * n));
        }
        CHECK(memcmp(g1, w1, sizeof g1) == 0 && memcmp(g2, w2, sizeof g2) == 0,
              "int%d: products of a shared input differ from their own quantization", bits);
        mt_graph *gf = new_graph(MT_GEMM_FLOAT32, true, false);
        mt_node *xf = mt_input(gf, mt_shape2(R, k), a);
        int64_t before = mt_graph_get_stats(gf).n_nodes;
        mt_gemm_share_input(gf, xf);
        CHECK(mt_graph_get_stats(gf).n_nodes == before, "float32 graph: share_input made a node");
        mt_graph_free(gf);
    }

    /* mt_affine_add: the residual in the epilogue, the same floats as mt_add
    ** of mt_affine; a residual that broadcasts, and a float32 graph: the add */
    {
        enum { R = 7 };
        float res[R * 67], got2[R * 67], want2[R * 67];
        test_fill_rand(a, R * k, -3.0f, 3.0f);
        test_fill_rand(res, R * n, -2.0f, 2.0f);
        mt_graph_clear(g);
        mt_node *x = mt_input(g, mt_shape2(R, k), a);
        mt_node *W, *b;
        layer_params(g, p, k, n, w, bias, &W, &b);
        mt_node *r = mt_input(g, mt_shape2(R, n), res);
        mt_node *y1 = mt_affine_add(g, x, W, b, r), *y0 = mt_add(g, mt_affine(g, x, W, b), r);
        mt_node *yb = mt_affine_add(g, x, W, b, mt_input(g, mt_shape2(1, n), res));
        CHECK_STATUS(mt_graph_forward(g));
        if (y0 && y1 && yb) {
            CHECK(!strcmp(mt_node_op_name(y1), "gemm_q") && !strcmp(mt_node_op_name(yb), "add"),
                  "int%d: affine_add ops %s, %s", bits, mt_node_op_name(y1), mt_node_op_name(yb));
            CHECK_STATUS(mt_node_get(y0, want2, R * n));
            CHECK_STATUS(mt_node_get(y1, got2, R * n));
            CHECK(memcmp(got2, want2, sizeof got2) == 0,
                  "int%d: mt_affine_add differs from mt_add(mt_affine)", bits);
        }
        mt_graph *gf = new_graph(MT_GEMM_FLOAT32, true, false);
        mt_node *xf = mt_input(gf, mt_shape2(R, k), a);
        mt_node *Wf, *bf;
        layer_params(gf, p, k, n, w, bias, &Wf, &bf);
        mt_node *yf = mt_affine_add(gf, xf, Wf, bf, mt_input(gf, mt_shape2(R, n), res));
        CHECK(yf && !strcmp(mt_node_op_name(yf), "add"), "float32 graph: affine_add op %s",
              yf ? mt_node_op_name(yf) : "NULL");
        mt_graph_free(gf);
    }

    /* mt_matmul_cols_argmax: the argmax of the same graph's logits (+ skip)
    ** with and without a column selection, -1 for rows with every column
    ** skipped (pass 2); mt_matmul_cols_topk: mt_node_logsoftmax_topk of the
    ** logits, values then columns, k above the columns in pass 2 (-1 /
    ** -inf); both NULL without an error in a float32 graph */
    for (int pass = 0; pass < 3; pass++) {
        int sel = pass == 1;
        enum { R = 9, KMAX = 70 };
        int32_t ids[40], got_i[R], want_i[R], want_ti[R * KMAX];
        float skip[67], want_tv[R * KMAX], tkv[R * 2 * KMAX];
        int64_t nc = sel ? 40 : n;
        int32_t top = pass == 2 ? (int32_t)n + 3 : 4;
        for (int j = 0; j < 40; j++)
            ids[j] = (int32_t)((j * 13 + 5) % n);
        for (int64_t j = 0; j < nc; j++)
            skip[j] = j % 6 == 1 || pass == 2 ? -INFINITY : 0.0f;
        test_fill_rand(a, R * k, -3.0f, 3.0f);
        mt_graph_clear(g);
        mt_node *x = mt_input(g, mt_shape2(R, k), a);
        mt_node *W = mt_param(g, p, "out_Wt", mt_shape2(n, k), mt_init_values(wt, k * n));
        mt_node *cols = sel ? mt_input_i32(g, mt_shape1(40), ids) : NULL;
        mt_node *b = mt_input(g, mt_shape2(1, nc), bias);
        mt_node *lg = mt_matmul_cols(g, x, W, true, cols, b);
        mt_node *am = mt_matmul_cols_argmax(g, x, W, true, cols, b, skip);
        mt_node *tk = mt_matmul_cols_topk(g, x, W, true, cols, b, top);
        mt_graph_keep(g, lg);
        mt_graph_keep(g, am);
        mt_graph_keep(g, tk);
        CHECK_STATUS(mt_graph_forward(g));
        if (!CHECK(am != NULL && !strcmp(mt_node_op_name(am), "gemm_q_argmax") && tk != NULL &&
                       !strcmp(mt_node_op_name(tk), "gemm_q_topk") && top <= KMAX,
                   "int%d: argmax op %s, top-k op %s", bits, am ? mt_node_op_name(am) : "NULL",
                   tk ? mt_node_op_name(tk) : "NULL"))
            break;
        CHECK_STATUS(mt_node_argmax(lg, skip, want_i));
        CHECK_STATUS(mt_node_get_i32(am, got_i, R));
        int skipped = 0;
        for (int r = 0; r < R; r++)
            skipped += want_i[r] < 0 || want_i[r] % 6 == 1;
        CHECK(memcmp(got_i, want_i, sizeof got_i) == 0 && skipped == (pass == 2 ? R : 0),
              "int%d pass %d: fused argmax differs from the logits' (%d skipped)", bits, pass,
              skipped);
        CHECK_STATUS(mt_node_logsoftmax_topk(lg, top, want_ti, want_tv));
        CHECK_STATUS(mt_node_get(tk, tkv, R * 2 * top));
        int bad = 0, pads = 0;
        for (int r = 0; r < R; r++)
            for (int j = 0; j < top; j++) {
                float v = tkv[r * 2 * top + j], c = tkv[r * 2 * top + top + j];
                bad += memcmp(&v, &want_tv[r * top + j], sizeof v) != 0 ||
                       c != (float)want_ti[r * top + j];
                pads += c == -1.0f;
            }
        CHECK(bad == 0 && (pads > 0) == (pass == 2),
              "int%d pass %d: fused top-k differs from the logits' in %d entries (%d padding)",
              bits, pass, bad, pads);
    }
    {
        mt_graph *gf = new_graph(MT_GEMM_FLOAT32, true, false);
        mt_node *x = mt_input(gf, mt_shape2(3, k), a);
        mt_node *W = mt_param(gf, p, "out_Wt", mt_shape2(n, k), mt_init_values(wt, k * n));
        float skip[67] = {0};
        int64_t before = mt_graph_get_stats(gf).n_nodes;
        CHECK(mt_matmul_cols_argmax(gf, x, W, true, NULL, NULL, skip) == NULL &&
                  mt_matmul_cols_topk(gf, x, W, true, NULL, NULL, 4) == NULL &&
                  mt_graph_status(gf) == MT_OK && mt_graph_get_stats(gf).n_nodes == before,
              "float32 graph: argmax and top-k from the logits, no error, nothing built");
        mt_graph_free(gf);
    }

    /* float32 graphs (and training graphs) keep the fp32 ops */
    mt_graph *gf = new_graph(MT_GEMM_FLOAT32, true, false);
    mt_graph *gtr = new_graph(gt, true, true);
    mt_graph *gnm = new_graph(gt, false, false);
    mt_graph *gs[3] = {gf, gtr, gnm};
    for (int i = 0; i < 3; i++) {
        if (!gs[i]) continue;
        mt_node *x = mt_input(gs[i], mt_shape2(3, k), a);
        mt_node *W = mt_param(gs[i], p, "l_W", mt_shape2(k, n), mt_init_zeros());
        mt_node *b = mt_param(gs[i], p, "l_b", mt_shape2(1, n), mt_init_zeros());
        mt_node *y = mt_affine(gs[i], x, W, b);
        CHECK(y && strcmp(mt_node_op_name(y), "affine") == 0, "graph %d: fp32 op expected", i);
        mt_graph_free(gs[i]);
    }
    /* a non-constant B (an input) stays fp32 too */
    mt_graph_clear(g);
    mt_node *x = mt_input(g, mt_shape2(3, k), a);
    mt_node *B = mt_input(g, mt_shape2(k, n), w);
    mt_node *y = mt_matmul(g, x, B, false, false);
    CHECK(y && strcmp(mt_node_op_name(y), "matmul") == 0, "input B: fp32 matmul expected");
    mt_graph_free(g);
    mt_params_free(p);
    free(w);
    free(wt);
    free(bias);
    free(a);
    free(got);
    free(want);
}

/* kcpu_pack_i*_ex with trans = packing the explicit transpose, byte for byte. */
static void test_pack_ex(void) {
    const int64_t k = 37, n = 70;
    float *w = malloc(sizeof(float) * k * n), *wt = malloc(sizeof(float) * k * n);
    test_fill_rand(w, k * n, -3.0f, 2.0f);
    for (int64_t r = 0; r < k; r++) {
        for (int64_t c = 0; c < n; c++)
            wt[c * k + r] = w[r * n + c];
    }
    for (int bits = 8; bits <= 16; bits += 8) {
        size_t bytes = bits == 8 ? kcpu_pack_i8_bytes(k, n) : kcpu_pack_i16_bytes(k, n);
        void *p1 = mt_try_aligned_alloc(bytes), *p2 = mt_try_aligned_alloc(bytes);
        if (!p1 || !p2) return;
        if (bits == 8) {
            kcpu_pack_i8(k, n, w, n, p1);
            kcpu_pack_i8_ex(k, n, wt, k, true, p2);
        } else {
            kcpu_pack_i16(k, n, w, n, p1);
            kcpu_pack_i16_ex(k, n, wt, k, true, p2);
        }
        CHECK(memcmp(p1, p2, bytes) == 0, "int%d: pack of W^T with trans = pack of W", bits);
        mt_aligned_free(p1);
        mt_aligned_free(p2);
    }
    free(w);
    free(wt);
}

/* ------------------------------------------------------------ shared packs */

typedef struct share_job {
    mt_params *p;
    const float *a, *w;
    int64_t rows, k, n;
    float *out;
    int rounds, bad;
} share_job;

/* rounds of x . W on a graph of its own; out gets the last, bad counts the
** rounds that differ from the first */
static void *share_thread(void *arg) {
    share_job *j = arg;
    mt_graph *g = new_graph(MT_GEMM_INT8, true, false);
    if (g == NULL) {
        j->bad = -1;
        return NULL;
    }
    float *first = malloc(sizeof(float) * (size_t)(j->rows * j->n));
    for (int r = 0; r < j->rounds; r++) {
        mt_graph_clear(g);
        mt_node *x = mt_input(g, mt_shape2(j->rows, j->k), j->a);
        mt_node *W = mt_param(g, j->p, "dec_W1", mt_shape2(j->k, j->n), mt_init_zeros());
        mt_node *y = mt_matmul(g, x, W, false, false);
        if (mt_graph_forward(g) != MT_OK || y == NULL ||
            mt_node_get(y, j->out, j->rows * j->n) != MT_OK) {
            j->bad = -1;
            break;
        }
        if (r == 0) memcpy(first, j->out, sizeof(float) * (size_t)(j->rows * j->n));
        j->bad += memcmp(first, j->out, sizeof(float) * (size_t)(j->rows * j->n)) != 0;
    }
    free(first);
    mt_graph_free(g);
    return NULL;
}

/* A weight is packed once per form for all graphs and threads: two threads
** with graphs of their own and a third graph in int16 leave two packs in
** the parameters, and every product equals the scheme. */
static void test_shared_packs(void) {
    const int64_t k = 48, n = 70, rows = 3;
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 5, &p));
    float *w = malloc(sizeof(float) * k * n), *a = malloc(sizeof(float) * rows * k);
    float *out[2], *want = malloc(sizeof(float) * rows * n);
    test_fill_rand(w, k * n, -1.0f, 1.0f);
    test_fill_rand(a, rows * k, -2.0f, 2.0f);
    mt_tensor *t = NULL;
    mt_graph *g = new_graph(MT_GEMM_INT16, true, false);
    if (!p || !g) return;
    mt_param(g, p, "dec_W1", mt_shape2(k, n), mt_init_values(w, k * n)); /* creates it */
    CHECK_STATUS(mt_graph_forward(g));
    t = mt_params_find(p, "dec_W1");
    CHECK(t != NULL, "dec_W1 created");
    pthread_t th[2];
    share_job job[2];
    for (int i = 0; i < 2; i++) {
        out[i] = malloc(sizeof(float) * rows * n);
        job[i] = (share_job){p, a, w, rows, k, n, out[i], 40, 0};
        CHECK(pthread_create(&th[i], NULL, share_thread, &job[i]) == 0, "thread %d", i);
    }
    mt_graph_clear(g);
    mt_node *x = mt_input(g, mt_shape2(rows, k), a);
    mt_node *W = mt_param(g, p, "dec_W1", mt_shape2(k, n), mt_init_zeros());
    mt_node *y16 = mt_matmul(g, x, W, false, false);
    CHECK_STATUS(mt_graph_forward(g));
    float *got16 = malloc(sizeof(float) * rows * n);
    if (y16) CHECK_STATUS(mt_node_get(y16, got16, rows * n));
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    exact_int(8, rows, k, n, a, w, false, NULL, want);
    for (int i = 0; i < 2; i++) {
        CHECK(job[i].bad == 0, "thread %d: %d rounds differ or failed", i, job[i].bad);
        CHECK(memcmp(out[i], want, sizeof(float) * rows * n) == 0, "thread %d = scheme", i);
    }
    exact_int(16, rows, k, n, a, w, false, NULL, want);
    CHECK(memcmp(got16, want, sizeof(float) * rows * n) == 0, "int16 graph = scheme");
    int n_packs = 0;
    size_t bytes = mt_params_packed_bytes(p, &n_packs);
    CHECK(n_packs == 2, "one pack per form for 3 graphs in 3 threads, got %d", n_packs);
    CHECK(bytes >= kcpu_pack_i8_bytes(k, n) + kcpu_pack_i16_bytes(k, n) &&
              bytes <= kcpu_pack_i8_bytes(k, n) + kcpu_pack_i16_bytes(k, n) + 128,
          "packed bytes %zu", bytes);
    mt_graph_free(g);
    mt_params_free(p);
    for (int i = 0; i < 2; i++)
        free(out[i]);
    free(w), free(a), free(want), free(got16);
}

/* ------------------------------------------------------------ memo, allocs */

static void test_memo(void) {
    const int64_t k = 64, n = 96, rows = 5;
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 3, &p));
    float *w = malloc(sizeof(float) * k * n), *a = malloc(sizeof(float) * rows * k);
    float *b = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * rows * n);
    float *want = malloc(sizeof(float) * rows * n), *first = malloc(sizeof(float) * rows * n);
    test_fill_rand(w, k * n, -1.0f, 1.0f);
    test_fill_rand(a, rows * k, -2.0f, 2.0f);
    test_fill_rand(b, n, -1.0f, 1.0f);
    mt_graph *g = new_graph(MT_GEMM_INT8, true, false);
    if (!p || !g) return;
    uint64_t fwd_allocs = 0, round_allocs = 0;
    size_t pack0 = 0; /* the pack's bytes at round 0 */
    int bad = 0;
    for (int r = 0; r < 101; r++) {
        uint64_t c0 = allocs_now();
        mt_graph_clear(g);
        mt_node *x = mt_input(g, mt_shape2(rows, k), a);
        mt_node *W = mt_param(g, p, "ffn_W1", mt_shape2(k, n), mt_init_values(w, k * n));
        mt_node *B = mt_param(g, p, "ffn_b1", mt_shape2(1, n), mt_init_values(b, n));
        mt_node *y = mt_affine(g, x, W, B);
        uint64_t c1 = allocs_now();
        CHECK_STATUS(mt_graph_forward(g));
        uint64_t c2 = allocs_now();
        if (r >= 2) {
            fwd_allocs += c2 - c1;
            round_allocs += c2 - c0;
        }
        if (y == NULL) return;
        CHECK_STATUS(mt_node_get(y, got, rows * n));
        if (r == 0) memcpy(first, got, sizeof(float) * rows * n);
        bad += memcmp(got, first, sizeof(float) * rows * n) != 0;
        int n_packs = 0;
        size_t pk_bytes = mt_params_packed_bytes(p, &n_packs);
        if (r == 0) {
            CHECK(n_packs == 1 && pk_bytes >= kcpu_pack_i8_bytes(k, n),
                  "one shared pack of the weight, got %d (%zu bytes)", n_packs, pk_bytes);
            pack0 = pk_bytes;
        } else if (r == 100) {
            CHECK(n_packs == 1 && pk_bytes == pack0,
                  "still one pack after 100 clears, got %d (%zu bytes)", n_packs, pk_bytes);
        }
    }
    CHECK(bad == 0, "%d rounds differ from the first", bad);
    CHECK(fwd_allocs == 0, "%llu allocations in forward after warm-up",
          (unsigned long long)fwd_allocs);
    CHECK(round_allocs == 0, "%llu allocations in clear+build+forward after warm-up",
          (unsigned long long)round_allocs);
    exact_int(8, rows, k, n, a, w, false, b, want);
    CHECK(memcmp(got, want, sizeof(float) * rows * n) == 0, "memo round result = scheme");

    /* new weight values: stale until mt_params_touch, then repacked */
    float *w2 = malloc(sizeof(float) * k * n), *want2 = malloc(sizeof(float) * rows * n);
    for (int64_t i = 0; i < k * n; i++)
        w2[i] = 0.5f * w[(i * 7) % (k * n)] - 0.25f;
    CHECK_STATUS(mt_tensor_set(mt_params_find(p, "ffn_W1"), w2, sizeof(float) * k * n));
    exact_int(8, rows, k, n, a, w2, false, b, want2);
    for (int touch = 0; touch < 2; touch++) {
        if (touch) mt_params_touch(p);
        mt_graph_clear(g);
        mt_node *x = mt_input(g, mt_shape2(rows, k), a);
        mt_node *W = mt_param(g, p, "ffn_W1", mt_shape2(k, n), mt_init_zeros());
        mt_node *B = mt_param(g, p, "ffn_b1", mt_shape2(1, n), mt_init_zeros());
        mt_node *y = mt_affine(g, x, W, B);
        CHECK_STATUS(mt_graph_forward(g));
        if (y == NULL) return;
        CHECK_STATUS(mt_node_get(y, got, rows * n));
        if (!touch) {
            CHECK(memcmp(got, want, sizeof(float) * rows * n) == 0,
                  "without mt_params_touch the memoized pack is used (stale by contract)");
        } else {
            CHECK(memcmp(got, want2, sizeof(float) * rows * n) == 0,
                  "after mt_params_touch the pack is recomputed from the new values");
            int n_packs = 0;
            mt_params_packed_bytes(p, &n_packs);
            CHECK(n_packs == 1, "the stale pack is freed once unused: %d packs", n_packs);
        }
    }
    mt_graph_free(g);
    mt_params_free(p);
    free(w);
    free(w2);
    free(a);
    free(b);
    free(got);
    free(want);
    free(want2);
    free(first);
}

/* ------------------------------------------------------------------ tuner */

typedef struct tune_fx {
    mt_params *p;
    float *w1, *b1, *w2, *a, *h, *out;
    int64_t k, n;
} tune_fx;

/* One round: h = affine(x, W1, b1) [rows, n]; out = h . W2^T [rows, k].
** Checks both products against fp64 within the int8 bound (the loosest of
** the variants); returns the allocations counted during forward. */
static uint64_t tune_round(tune_fx *f, mt_graph *g, int64_t rows, double *worst) {
    test_fill_rand(f->a, rows * f->k, -2.0f, 2.0f);
    mt_graph_clear(g);
    mt_node *x = mt_input(g, mt_shape2(rows, f->k), f->a);
    mt_node *W1 =
        mt_param(g, f->p, "t_W1", mt_shape2(f->k, f->n), mt_init_values(f->w1, f->k * f->n));
    mt_node *b1 = mt_param(g, f->p, "t_b1", mt_shape2(1, f->n), mt_init_values(f->b1, f->n));
    mt_node *W2 =
        mt_param(g, f->p, "t_Wt", mt_shape2(f->k, f->n), mt_init_values(f->w2, f->k * f->n));
    mt_node *h = mt_affine(g, x, W1, b1);
    mt_node *y = mt_matmul(g, h, W2, false, true);
    uint64_t c0 = allocs_now();
    mt_status rc = mt_graph_forward(g);
    uint64_t used = allocs_now() - c0;
    CHECK(rc == MT_OK, "tuner forward: %s", mt_errmsg());
    if (rc != MT_OK || !y) return used;
    CHECK(strcmp(mt_node_op_name(h), "gemm_q") == 0 && strcmp(mt_node_op_name(y), "gemm_q") == 0,
          "auto: tuned ops expected");
    CHECK_STATUS(mt_node_get(h, f->h, rows * f->n));
    CHECK_STATUS(mt_node_get(y, f->out, rows * f->k));
    double e;
    double r1 = bound_ratio(8, rows, f->k, f->n, f->a, f->w1, false, f->b1, f->h, &e);
    double r2 = bound_ratio(8, rows, f->n, f->k, f->h, f->w2, true, NULL, f->out, &e);
    *worst = fmax(*worst, fmax(r1, r2));
    return used;
}

static int all_decided(mt_graph *g, mt_gemm_decision *d, int *n) {
    *n = mt_graph_gemm_decisions(g, d, 64);
    for (int i = 0; i < *n; i++) {
        if (!d[i].decided) return 0;
    }
    return *n > 0;
}

static void test_tuner(void) {
    tune_fx f = {.k = 48, .n = 80};
    CHECK_STATUS(mt_params_init(NULL, 5, &f.p));
    f.w1 = malloc(sizeof(float) * 48 * 80);
    f.w2 = malloc(sizeof(float) * 48 * 80);
    f.b1 = malloc(sizeof(float) * 80);
    f.a = malloc(sizeof(float) * 32 * 80);
    f.h = malloc(sizeof(float) * 32 * 80);
    f.out = malloc(sizeof(float) * 32 * 80);
    test_fill_rand(f.w1, 48 * 80, -1.0f, 1.0f);
    test_fill_rand(f.w2, 48 * 80, -0.5f, 0.5f);
    test_fill_rand(f.b1, 80, -1.0f, 1.0f);
    mt_gemm_pin_for_tests(-1);
    mt_graph *g = new_graph(MT_GEMM_AUTO, true, false);
    if (!f.p || !g) return;
    mt_gemm_decision d[64], d2[64];
    int nd = 0, rounds = 0;
    double worst = 0.0;
    uint64_t allocs_late = 0;
    /* rows 1..24: buckets 1, 2, 3-4, 5-8, 9-16, 17-32, for two products each */
    while (!all_decided(g, d, &nd) && rounds < 1000) {
        tune_round(&f, g, 1 + (rounds * 7) % 24, &worst);
        rounds++;
    }
    CHECK(all_decided(g, d, &nd) && nd == 12, "auto: %d entries, all decided after %d rounds", nd,
          rounds);
    bool avx512 = strcmp(mt_cpu_isa(), "avx512") == 0;
    for (int i = 0; i < nd; i++) {
        int best = -1;
        for (int v = 0; v < MT_GEMM_VARIANTS; v++) {
            bool timed = d[i].ns_per_row[v] > 0.0;
            bool expect = v != MT_GEMM_SMALL || (avx512 && d[i].m_hi <= 16);
            CHECK(timed == expect, "entry %d (rows %lld..%lld): variant %s timed %d", i,
                  (long long)d[i].m_lo, (long long)d[i].m_hi,
                  mt_gemm_variant_name((mt_gemm_variant)v), timed);
            if (timed && (best < 0 || d[i].ns_per_row[v] < d[i].ns_per_row[best])) best = v;
        }
        CHECK(!d[i].pinned && (int)d[i].chosen == best, "entry %d: chose %s, fastest %s", i,
              mt_gemm_variant_name(d[i].chosen), best >= 0 ? mt_gemm_variant_name(best) : "-");
        printf("auto rows %2lld..%-2lld n %3lld k %3lld%s: %-5s (ns/row blas %.0f small %.0f "
               "int16 %.0f int8 %.0f)\n",
               (long long)d[i].m_lo, (long long)d[i].m_hi, (long long)d[i].n, (long long)d[i].k,
               d[i].trans_b ? " T" : "  ", mt_gemm_variant_name(d[i].chosen), d[i].ns_per_row[0],
               d[i].ns_per_row[1], d[i].ns_per_row[2], d[i].ns_per_row[3]);
    }
    /* decisions stay: 60 more rounds */
    for (int r = 0; r < 60; r++)
        allocs_late += tune_round(&f, g, 1 + ((rounds + r) * 5) % 24, &worst);
    int nd2 = mt_graph_gemm_decisions(g, d2, 64);
    CHECK(nd2 == nd, "no new entries (%d vs %d)", nd2, nd);
    for (int i = 0; i < nd && i < nd2; i++) {
        CHECK(d2[i].decided && d2[i].chosen == d[i].chosen &&
                  memcmp(d2[i].ns_per_row, d[i].ns_per_row, sizeof d[i].ns_per_row) == 0,
              "entry %d changed after the warm-up", i);
    }
    int64_t calls = 0, calls2 = 0;
    for (int i = 0; i < nd; i++) {
        calls += d[i].calls;
        calls2 += d2[i].calls;
    }
    CHECK(calls2 == calls + 120, "calls counted: %lld -> %lld", (long long)calls,
          (long long)calls2);
    CHECK(allocs_late == 0, "auto: %llu allocations in forward after the warm-up",
          (unsigned long long)allocs_late);
    CHECK(worst <= 1.0, "auto: error %.3g x the int8 bound", worst);
    mt_graph_free(g);

    /* mt_gemm_pin_for_tests pins a variant for every shape */
    const char *pins[3] = {"int16", "small", "blas"};
    const mt_gemm_variant pin_v[3] = {MT_GEMM_I16, MT_GEMM_SMALL, MT_GEMM_BLAS};
    for (int pi = 0; pi < 3; pi++) {
        mt_gemm_pin_for_tests(pin_v[pi]);
        g = new_graph(MT_GEMM_AUTO, true, false);
        if (!g) break;
        worst = 0.0;
        tune_round(&f, g, 3, &worst);
        tune_round(&f, g, 20, &worst);
        nd = mt_graph_gemm_decisions(g, d, 64);
        CHECK(nd == 4, "pinned %s: %d entries", pins[pi], nd);
        for (int i = 0; i < nd; i++) {
            mt_gemm_variant want = pi == 0 ? MT_GEMM_I16 : MT_GEMM_BLAS;
            if (pi == 1 && avx512 && d[i].m_hi <= 16) want = MT_GEMM_SMALL;
            CHECK(d[i].decided && d[i].pinned && d[i].chosen == want,
                  "pinned %s rows ..%lld: chose %s", pins[pi], (long long)d[i].m_hi,
                  mt_gemm_variant_name(d[i].chosen));
        }
        if (pi == 0) { /* the int16 result is the int16 scheme exactly */
            float *want = malloc(sizeof(float) * 20 * 80);
            exact_int(16, 20, 48, 80, f.a, f.w1, false, f.b1, want);
            CHECK(memcmp(want, f.h, sizeof(float) * 20 * 80) == 0, "pinned int16 = scheme");
            free(want);
        }
        mt_graph_free(g);
    }
    mt_gemm_pin_for_tests(-1);
    mt_gemm_type t;
    CHECK(mt_gemm_type_parse("int8", &t) == MT_OK && t == MT_GEMM_INT8, "parse int8");
    CHECK(mt_gemm_type_parse("intgemm16", &t) == MT_OK && t == MT_GEMM_INT16, "parse");
    CHECK(mt_gemm_type_parse("int4", &t) == MT_ERR_INVALID, "parse int4 fails");
    mt_params_free(f.p);
    free(f.w1);
    free(f.w2);
    free(f.b1);
    free(f.a);
    free(f.h);
    free(f.out);
}

/* ------------------------------------------------------- intgemm params */

static void test_intgemm_params(void) {
    mt_model_file *fb = NULL, *fz = NULL;
    CHECK_STATUS(mt_model_file_read(DATA "transformer-tiny/model.int8.bin", &fb));
    CHECK_STATUS(mt_model_file_read(DATA "transformer-tiny/model.npz", &fz));
    if (!fb || !fz) return;
    const char *wn = "decoder_l1_ffn_W1", *bn = "decoder_l1_ffn_b1";
    int iw = mt_model_file_index(fb, wn), ib = mt_model_file_index(fz, bn);
    int izw = mt_model_file_index(fz, wn);
    CHECK(iw >= 0 && ib >= 0 && izw >= 0, "fixture items");
    if (iw < 0 || ib < 0 || izw < 0) return;
    CHECK(fb->items[iw].marian_type == MT_MARIAN_INTGEMM8, "fixture item is intgemm8");
    const float *wf = fz->tensors[izw].data; /* the float model's W [64, 128] */
    const int64_t k = 64, n = 128;
    float *bias = malloc(sizeof(float) * n);
    memcpy(bias, fz->tensors[ib].data, sizeof(float) * n);

    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 1, &p));
    CHECK_STATUS(mt_params_adopt_item(p, wn, &fb->tensors[iw], &fb->items[iw]));
    CHECK_STATUS(mt_params_adopt_item(p, bn, &fz->tensors[ib], &fz->items[ib]));
    mt_tensor *pw = mt_params_find(p, wn);
    if (!pw) return;
    CHECK(pw->dtype == MT_I8 && pw->shape.ndim == 2 && pw->shape.dim[0] == k &&
              pw->shape.dim[1] == n,
          "int8 parameter [64, 128]");
    float qb = kcpu_i8_mult(kcpu_maxabs_f32(1, k * n, wf, k * n));
    CHECK(mt_params_qmult_at(p, 0) == qb, "multiplier %.9g, float model gives %.9g",
          mt_params_qmult_at(p, 0), qb);
    int diff = 0;
    for (int64_t i = 0; i < k * n; i++) {
        int8_t q;
        kcpu_quantize_i8(1, &wf[i], qb, &q);
        diff += ((const int8_t *)pw->data)[i] != q;
    }
    CHECK(diff == 0, "%d int8 values differ from quantizing the float model (layout?)", diff);
    CHECK(!mt_params_trainable_at(p, 0), "int8 parameter is not trainable");

    /* products: integer path whatever gemm_type, = the int8 scheme on the float W */
    float *a = malloc(sizeof(float) * 7 * k), *got = malloc(sizeof(float) * 7 * n);
    float *want = malloc(sizeof(float) * 7 * n);
    test_fill_rand(a, 7 * k, -4.0f, 4.0f);
    exact_int(8, 7, k, n, a, wf, false, bias, want);
    for (int memo = 0; memo < 2; memo++) {
        mt_graph *g = new_graph(MT_GEMM_FLOAT32, memo, false);
        for (int r = 0; g && r < 3; r++) {
            mt_graph_clear(g);
            mt_node *x = mt_input(g, mt_shape2(7, k), a);
            mt_node *W = mt_param(g, p, wn, mt_shape2(k, n), mt_init_zeros());
            mt_node *B = mt_param(g, p, bn, mt_shape2(1, n), mt_init_zeros());
            mt_node *y = mt_affine(g, x, W, B);
            CHECK_STATUS(mt_graph_forward(g));
            if (!y) break;
            CHECK(strcmp(mt_node_op_name(y), "gemm_q") == 0, "int8 weight: gemm_q");
            CHECK_STATUS(mt_node_get(y, got, 7 * n));
            CHECK(memcmp(got, want, sizeof(float) * 7 * n) == 0,
                  "memoize %d round %d: int8 weight product = int8 scheme on the float W", memo, r);
        }
        mt_graph_free(g);
    }
    double e;
    CHECK(bound_ratio(8, 7, k, n, a, wf, false, bias, got, &e) <= 1.0, "within the bound");
    /* training graphs refuse quantized weights */
    mt_graph *gt = new_graph(MT_GEMM_FLOAT32, false, true);
    if (gt) {
        mt_node *x = mt_input(gt, mt_shape2(7, k), a);
        mt_node *W = mt_param(gt, p, wn, mt_shape2(k, n), mt_init_zeros());
        mt_node *y = mt_matmul(gt, x, W, false, false);
        CHECK(y == NULL && mt_graph_status(gt) == MT_ERR_INVALID && strstr(mt_errmsg(), wn) != NULL,
              "training with an int8 weight: error naming it (%s)", mt_errmsg());
        mt_graph_free(gt);
    }

    /* CPU-specific items (marian-conv -g intgemm8avx2 ...): the generic
    ** item's integers in intgemm's prepared order, made here as intgemm's
    ** PrepareBQuantizedTransposed does (interleave.h), read back into the
    ** same parameter; int16 likewise on values of every magnitude */
    static const struct {
        uint32_t type;
        int w, regs;
    } isa[] = {{MT_MARIAN_INTGEMM8SSSE3, 1, 16},   {MT_MARIAN_INTGEMM8AVX2, 1, 32},
               {MT_MARIAN_INTGEMM8AVX512, 1, 64},  {MT_MARIAN_INTGEMM8AVX512VNNI, 1, 64},
               {MT_MARIAN_INTGEMM16SSE2, 2, 8},    {MT_MARIAN_INTGEMM16AVX2, 2, 16},
               {MT_MARIAN_INTGEMM16AVX512, 2, 32}, {MT_MARIAN_INTGEMM16, 2, 0}};
    const int64_t k16 = 64, n16 = 24;
    int16_t *g16 = malloc(sizeof(int16_t) * (size_t)(k16 * n16) + 4); /* generic [N, K] + qB */
    for (int64_t i = 0; i < k16 * n16; i++)
        g16[i] = (int16_t)((i * 7919) % 65536 - 32768);
    float q16 = 1024.0f;
    memcpy(g16 + k16 * n16, &q16, 4);
    mt_params *p16 = NULL;
    CHECK_STATUS(mt_params_init(NULL, 1, &p16));
    for (size_t t = 0; t < sizeof isa / sizeof isa[0] && p16; t++) {
        bool w8 = isa[t].w == 1;
        int64_t kk = w8 ? k : k16, nn = w8 ? n : n16;
        const char *gen = w8 ? fb->tensors[iw].data : (const char *)g16;
        size_t nb = (size_t)(kk * nn) * (size_t)isa[t].w + 4;
        char *lay = malloc(nb), *o = lay;
        int64_t re = isa[t].regs ? isa[t].regs : kk;
        for (int64_t r = 0; r < nn; r += 8)      /* rows of W^T: 8 at a time */
            for (int64_t c = 0; c < kk; c += re) /* one register of each */
                for (int64_t ri = 0; ri < 8 && r + ri < nn; ri++, o += re * isa[t].w)
                    memcpy(o, gen + ((r + ri) * kk + c) * isa[t].w, (size_t)(re * isa[t].w));
        memcpy(lay + nb - 4, gen + nb - 4, 4);
        mt_model_file *fi = mt_model_file_new();
        char nm[32];
        snprintf(nm, sizeof nm, "isa%zu_W", t);
        CHECK_STATUS(mt_model_file_add_raw(fi, nm, isa[t].type, mt_shape2(kk, nn), lay, nb));
        mt_params *pt = w8 ? p : p16;
        if (fi && fi->n == 1) {
            CHECK_STATUS(mt_params_adopt_item(pt, nm, &fi->tensors[0], &fi->items[0]));
            mt_tensor *pi = mt_params_find(pt, nm);
            bool same = pi != NULL && pi->shape.dim[0] == kk && pi->shape.dim[1] == nn;
            for (int64_t row = 0; same && row < kk; row++)
                for (int64_t col = 0; col < nn; col++)
                    same &= w8 ? ((const int8_t *)pi->data)[row * nn + col] ==
                                     ((const int8_t *)pw->data)[row * nn + col]
                               : ((const int16_t *)pi->data)[row * nn + col] == g16[col * kk + row];
            float qi = pi ? mt_params_qmult_at(pt, mt_params_count(pt) - 1) : 0.0f;
            CHECK(same && qi == (w8 ? qb : q16), "%s read as the generic item (multiplier %g)",
                  mt_marian_type_name(isa[t].type), qi);
        }
        mt_model_file_free(fi);
        free(lay);
    }
    mt_params_free(p16);
    free(g16);

    /* unsupported and malformed items */
    mt_model_file *fx = mt_model_file_new();
    size_t nb = (size_t)(k * k) + 4;
    char *raw = calloc(1, nb);
    float nan = NAN;
    memcpy(raw + k * k, &nan, 4);
    CHECK_STATUS(
        mt_model_file_add_raw(fx, "x_Wq", MT_MARIAN_BERGAMOT_INTGEMM8, mt_shape2(k, k), raw, nb));
    CHECK_STATUS(mt_model_file_add_raw(fx, "x_Wk", MT_MARIAN_INTGEMM8, mt_shape2(k, k), raw, nb));
    memcpy(raw + 40 * k, &qb, 4);
    CHECK_STATUS(mt_model_file_add_raw(fx, "x_Wv", MT_MARIAN_INTGEMM8AVX512, mt_shape2(40, k), raw,
                                       (size_t)(40 * k) + 4));
    if (fx && fx->n == 3) {
        mt_status rc = mt_params_adopt_item(p, "x_Wq", &fx->tensors[0], &fx->items[0]);
        CHECK(rc == MT_ERR_UNSUPPORTED && strstr(mt_errmsg(), "0x4101"),
              "Bergamot's type refused: %s", mt_errmsg());
        rc = mt_params_adopt_item(p, "x_Wk", &fx->tensors[1], &fx->items[1]);
        CHECK(rc == MT_ERR_FORMAT && strstr(mt_errmsg(), "multiplier"),
              "NaN multiplier refused: %s", mt_errmsg());
        CHECK(mt_params_find(p, "x_Wk") == NULL, "nothing adopted on failure");
        rc = mt_params_adopt_item(p, "x_Wv", &fx->tensors[2], &fx->items[2]);
        CHECK(rc == MT_ERR_FORMAT && strstr(mt_errmsg(), "multiple of 64"),
              "intgemm8avx512 with 40 rows refused: %s", mt_errmsg());
    }
    mt_model_file_free(fx);
    free(raw);
    mt_params_free(p);
    mt_model_file_free(fb);
    mt_model_file_free(fz);
    free(bias);
    free(a);
    free(got);
    free(want);
}

/* ---------------------------------------------------------------- convert */

static int run_convert(const char *g, const char *in, const char *out) {
    char *argv[] = {"convert", "-g", (char *)g, (char *)in, (char *)out, NULL};
    return app_convert_main(5, argv);
}

static void test_convert(void) {
    char dir[] = "/tmp/test_matmul_int.XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    char o8[128], o16[128], of[128], onpz[128];
    snprintf(o8, sizeof o8, "%s/m8.bin", dir);
    snprintf(o16, sizeof o16, "%s/m16.bin", dir);
    snprintf(of, sizeof of, "%s/mf.bin", dir);
    snprintf(onpz, sizeof onpz, "%s/m8.npz", dir);
    const char *npz = DATA "transformer-tiny/model.npz";
    CHECK(run_convert("int8", npz, o8) == 0, "convert -g int8");
    CHECK(run_convert("int16", npz, o16) == 0, "convert -g int16");
    CHECK(run_convert("float32", o8, of) == 0, "convert -g float32");
    CHECK(run_convert("auto", npz, onpz) == 2, "-g auto is a usage error");
    CHECK(run_convert("int8", npz, onpz) == 1, "int8 into .npz refused");
    mt_model_file *z = NULL, *m8 = NULL, *m16 = NULL, *mf = NULL, *ref = NULL;
    CHECK_STATUS(mt_model_file_read(npz, &z));
    CHECK_STATUS(mt_model_file_read(o8, &m8));
    CHECK_STATUS(mt_model_file_read(o16, &m16));
    CHECK_STATUS(mt_model_file_read(of, &mf));
    CHECK_STATUS(mt_model_file_read(DATA "transformer-tiny/model.int8.bin", &ref));
    if (!z || !m8 || !m16 || !mf || !ref) goto done;
    CHECK(m8->n == z->n && m16->n == z->n && mf->n == z->n, "item counts");
    int n_q = 0, same_as_marian = 0, bad_f32 = 0, bad16 = 0, bad_deq = 0;
    for (int i = 0; i < z->n && i < m8->n && i < m16->n && i < mf->n; i++) {
        const char *nm = z->names[i];
        CHECK(strcmp(nm, m8->names[i]) == 0 && strcmp(nm, mf->names[i]) == 0, "order kept");
        const mt_tensor *t = &z->tensors[i];
        int64_t numel = mt_tensor_numel(t);
        bool q = mt_marian_is_gemm_weight(nm) && t->shape.ndim == 2 && t->dtype == MT_F32;
        if (!q) {
            bad_f32 += m8->items[i].raw || m8->tensors[i].dtype != t->dtype ||
                       memcmp(m8->tensors[i].data, t->data, mt_tensor_bytes(t)) != 0;
            bad_f32 +=
                m16->items[i].raw || memcmp(m16->tensors[i].data, t->data, mt_tensor_bytes(t)) != 0;
            bad_f32 +=
                mf->items[i].raw || memcmp(mf->tensors[i].data, t->data, mt_tensor_bytes(t)) != 0;
            continue;
        }
        n_q++;
        CHECK(m8->items[i].marian_type == MT_MARIAN_INTGEMM8 &&
                  m8->items[i].raw_bytes == (size_t)numel + 4,
              "%s: intgemm8 item", nm);
        int j = mt_model_file_index(ref, nm);
        if (j >= 0 && ref->items[j].marian_type == MT_MARIAN_INTGEMM8 &&
            memcmp(ref->tensors[j].data, m8->tensors[i].data, (size_t)numel + 4) == 0)
            same_as_marian++;
        /* int16: W^T * 1024 quantized, then the multiplier */
        const float *w = t->data;
        int64_t k = t->shape.dim[0], n = t->shape.dim[1];
        const int16_t *q16 = m16->tensors[i].data;
        float m16v;
        memcpy(&m16v, (const char *)m16->tensors[i].data + 2 * numel, 4);
        bad16 += m16->items[i].marian_type != MT_MARIAN_INTGEMM16 || m16v != 1024.0f;
        for (int64_t r = 0; r < n; r++) {
            for (int64_t c = 0; c < k; c++) {
                int16_t e;
                kcpu_quantize_i16(1, &w[c * n + r], 1024.0f, &e);
                bad16 += q16[r * k + c] != e;
            }
        }
        /* float32 back: q / qB, within half a step of the original */
        const int8_t *q8 = m8->tensors[i].data;
        float qb;
        memcpy(&qb, q8 + numel, 4);
        const float *wf = mf->tensors[i].data;
        bad_deq += mf->items[i].raw || mf->tensors[i].dtype != MT_F32;
        for (int64_t r = 0; r < n && !bad_deq; r++) {
            for (int64_t c = 0; c < k; c++) {
                float back = wf[c * n + r];
                bad_deq += back != (float)q8[r * k + c] / qb;
                bad_deq += fabsf(back - w[c * n + r]) > 0.5f / qb * 1.0001f;
            }
        }
    }
    int n_ref = 0;
    for (int j = 0; j < ref->n; j++)
        n_ref += ref->items[j].marian_type == MT_MARIAN_INTGEMM8;
    CHECK(n_q == 32 && n_q == n_ref, "%d weights quantized, marian-conv quantized %d", n_q, n_ref);
    CHECK(same_as_marian == n_ref, "%d of %d intgemm8 items byte-identical to marian-conv's",
          same_as_marian, n_ref);
    CHECK(bad_f32 == 0, "%d other items not bit-identical", bad_f32);
    CHECK(bad16 == 0, "%d int16 mismatches", bad16);
    CHECK(bad_deq == 0, "%d dequantization mismatches", bad_deq);
    printf("convert: %d weights to intgemm8, all byte-identical to marian-conv's\n",
           same_as_marian);
done:
    mt_model_file_free(z);
    mt_model_file_free(m8);
    mt_model_file_free(m16);
    mt_model_file_free(mf);
    mt_model_file_free(ref);
    unlink(o8);
    unlink(o16);
    unlink(of);
    unlink(onpz);
    rmdir(dir);
}

/* ----------------------------------------------------------------- faults */

/* One pass over the allocating paths: an auto-tuned graph round, a model
** file quantized to int8 and back, an intgemm item adopted.  Returns the
** first failure status (MT_OK when everything succeeded). */
static mt_status fault_pass(const float *w, const float *a) {
    mt_params *p = NULL;
    mt_graph *g = NULL;
    mt_model_file *f = NULL;
    mt_graph_params gp = mt_graph_default_params();
    gp.memoize = true;
    gp.decode.gemm_type = MT_GEMM_AUTO;
    gp.decode.gemm_tune_samples = 1;
    mt_status rc = mt_params_init(NULL, 1, &p);
    if (rc == MT_OK) rc = mt_graph_init(NULL, gp, &g);
    for (int r = 0; rc == MT_OK && r < 6; r++) {
        mt_graph_clear(g);
        mt_node *x = mt_input(g, mt_shape2(1 + r, 16), a);
        mt_node *W = mt_param(g, p, "f_W", mt_shape2(16, 24), mt_init_values(w, 16 * 24));
        mt_node *b = mt_param(g, p, "f_b", mt_shape1(24), mt_init_zeros());
        mt_node *y = mt_matmul(g, mt_affine(g, x, W, b), W, false, true);
        rc = mt_graph_forward(g);
        if (rc == MT_OK && y == NULL) rc = MT_ERR_INVALID;
    }
    f = rc == MT_OK ? mt_model_file_new() : NULL;
    if (rc == MT_OK && f == NULL) rc = MT_ERR_NOMEM;
    mt_tensor t = {.shape = mt_shape2(16, 24), .dtype = MT_F32, .data = (void *)w};
    if (rc == MT_OK) rc = mt_model_file_add(f, "enc_W1", &t);
    if (rc == MT_OK) rc = mt_model_file_quantize(f, MT_GEMM_INT8, NULL);
    if (rc == MT_OK) rc = mt_params_adopt_item(p, "enc_W1", &f->tensors[0], &f->items[0]);
    if (rc == MT_OK) rc = mt_model_file_quantize(f, MT_GEMM_FLOAT32, NULL);
    mt_model_file_free(f);
    mt_graph_free(g);
    mt_params_free(p);
    return rc;
}

static void test_faults(void) {
    float w[16 * 24], a[6 * 16];
    test_fill_rand(w, 16 * 24, -1.0f, 1.0f);
    test_fill_rand(a, 6 * 16, -1.0f, 1.0f);
    mt_gemm_pin_for_tests(-1);
    size_t base = mt_alloc_get_stats().live_blocks;
    int64_t n;
    int bad = 0;
    for (n = 0; n < 10000; n++) {
        mt_alloc_fail_at(n, true);
        mt_status rc = fault_pass(w, a);
        mt_alloc_fail_at(-1, false);
        if (rc != MT_OK && rc != MT_ERR_NOMEM && bad++ < 3) {
            CHECK(0, "allocation %lld failing: %s (%s)", (long long)n, mt_status_str(rc),
                  mt_errmsg());
        }
        CHECK(mt_alloc_get_stats().live_blocks == base, "allocation %lld failing: leak",
              (long long)n);
        if (rc == MT_OK) break;
    }
    CHECK(n > 10 && n < 10000, "fault injection reached success after %lld allocations",
          (long long)n);
}

/* ------------------------------------------------------------------ score */

/* Lines of a text file with the EOS-terminated ids of each (vocabulary v). */
static int encode_file(const char *path, mt_vocab *v, int32_t ***ids, int32_t **len) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t k;
    int n = 0;
    *ids = NULL;
    *len = NULL;
    while ((k = getline(&buf, &cap, f)) >= 0) {
        if (k > 0 && buf[k - 1] == '\n') buf[--k] = '\0';
        *ids = realloc(*ids, sizeof(int32_t *) * (size_t)(n + 1));
        *len = realloc(*len, sizeof(int32_t) * (size_t)(n + 1));
        int64_t m = 0;
        if (mt_vocab_encode(v, buf, MT_VOCAB_ADD_EOS, &(*ids)[n], &m) != MT_OK) {
            n = -1;
            break;
        }
        (*len)[n++] = (int32_t)m;
    }
    free(buf);
    fclose(f);
    return n;
}

/* Sentence log-probs of the reference under the model, batches of 8. */
static int score_all(mt_model *m, mt_graph *g, int n, int32_t **sid, int32_t *sl, int32_t **tid,
                     int32_t *tl, double *out) {
    for (int first = 0; first < n; first += 8) {
        int cnt = n - first < 8 ? n - first : 8;
        mt_batch_seq seqs[16];
        for (int i = 0; i < cnt; i++) {
            seqs[2 * i] = (mt_batch_seq){sid[first + i], sl[first + i]};
            seqs[2 * i + 1] = (mt_batch_seq){tid[first + i], tl[first + i]};
        }
        mt_batch *b = NULL;
        if (mt_batch_make(1, true, cnt, seqs, NULL, &b) != MT_OK) return 0;
        mt_graph_clear(g);
        mt_model_loss L = mt_model_build_loss(m, g, b, 0.0f);
        float ls[8];
        int ok = L.status == MT_OK && L.logprob_sent && mt_graph_forward(g) == MT_OK &&
                 mt_node_get(L.logprob_sent, ls, cnt) == MT_OK;
        mt_batch_free(b);
        if (!CHECK(ok, "score batch %d: %s", first, mt_errmsg())) return 0;
        for (int i = 0; i < cnt; i++)
            out[first + i] = ls[i];
    }
    return 1;
}

static void test_score(void) {
    const char *dir = DATA "transformer-tiny/";
    char path[512];
    mt_model *m = NULL;
    mt_vocab *v = NULL;
    snprintf(path, sizeof path, "%smodel.npz", dir);
    CHECK_STATUS(mt_model_load(path, NULL, &m));
    snprintf(path, sizeof path, "%svocab.spm", dir);
    CHECK_STATUS(mt_vocab_load(path, 0, &v));
    if (!m || !v) return;
    int32_t **sid = NULL, **tid = NULL, *sl = NULL, *tl = NULL;
    snprintf(path, sizeof path, "%sinput.en", dir);
    int n = encode_file(path, v, &sid, &sl);
    snprintf(path, sizeof path, "%sref.de", dir);
    int nt = encode_file(path, v, &tid, &tl);
    CHECK(n > 0 && n == nt, "fixture: %d inputs, %d references", n, nt);
    double *ref = calloc((size_t)(n > 0 ? n : 1), sizeof *ref);
    double *got = calloc((size_t)(n > 0 ? n : 1), sizeof *got);
    const mt_gemm_type types[4] = {MT_GEMM_FLOAT32, MT_GEMM_INT16, MT_GEMM_INT8, MT_GEMM_AUTO};
    /* Limits about 3x what this model gives (60 sentences, scores -10 to
    ** -200): int16 0.09, int8 0.33, auto 0.7 (auto mixes variants while it
    ** tunes, so its sentences see different roundings). */
    const double limit[4] = {0.0, 0.3, 1.0, 2.0};
    for (int t = 0; n > 0 && n == nt && t < 4; t++) {
        mt_graph *g = new_graph(types[t], true, false);
        if (!g) break;
        int ok = score_all(m, g, n, sid, sl, tid, tl, t == 0 ? ref : got);
        if (ok && t == 3) ok = score_all(m, g, n, sid, sl, tid, tl, got); /* after tuning */
        mt_graph_free(g);
        if (!ok) break;
        if (t == 0) continue;
        double mx = 0.0, sum = 0.0;
        for (int i = 0; i < n; i++) {
            mx = fmax(mx, fabs(got[i] - ref[i]));
            sum += fabs(got[i] - ref[i]);
        }
        printf("score transformer-tiny, gemm %s vs float32: max |diff| %.4f, mean %.4f "
               "(%d sentences)\n",
               mt_gemm_type_name(types[t]), mx, sum / n, n);
        CHECK(mx <= limit[t], "gemm %s: sentence scores differ by up to %.4f",
              mt_gemm_type_name(types[t]), mx);
        CHECK(mx > 0.0, "gemm %s: identical to float32 (integer path not taken?)",
              mt_gemm_type_name(types[t]));
    }
    /* Marian's int8 model (marian-conv -g intgemm8): loads with int8 weights.
    ** In a float32 graph only the intgemm weights are int8 (the output layer
    ** stays float, as in Marian); in an int8 graph the output layer is
    ** quantized at load too, which makes it the float model under int8
    ** exactly: same integers, same multipliers. */
    mt_model *m8 = NULL;
    snprintf(path, sizeof path, "%smodel.int8.bin", dir);
    CHECK_STATUS(mt_model_load(path, NULL, &m8));
    double *s8 = calloc((size_t)(n > 0 ? n : 1), sizeof *s8);
    for (int t = 0; m8 && n > 0 && n == nt && t < 2; t++) {
        mt_graph *g = new_graph(t == 0 ? MT_GEMM_FLOAT32 : MT_GEMM_INT8, true, false);
        mt_graph *gz = new_graph(MT_GEMM_INT8, true, false);
        if (!g || !gz || !score_all(m8, g, n, sid, sl, tid, tl, s8) ||
            (t == 1 && !score_all(m, gz, n, sid, sl, tid, tl, got))) {
            mt_graph_free(g);
            mt_graph_free(gz);
            break;
        }
        double mx = 0.0;
        int same = 0;
        for (int i = 0; i < n; i++) {
            mx = fmax(mx, fabs(s8[i] - ref[i]));
            same += t == 1 && s8[i] == got[i];
        }
        if (t == 0) {
            printf("score model.int8.bin (float32 graph) vs model.npz float32: max |diff| %.4f\n",
                   mx);
            CHECK(mx <= 1.0 && mx > 0.0, "int8 model: scores differ by %.4f", mx);
        } else {
            CHECK(same == n, "int8 model in an int8 graph = float model in an int8 graph: %d of %d",
                  same, n);
        }
        mt_graph_free(g);
        mt_graph_free(gz);
    }
    free(s8);
    mt_model_free(m8);

    for (int i = 0; i < n; i++)
        mt_free(sid[i]);
    for (int i = 0; i < nt; i++)
        mt_free(tid[i]);
    free(sid);
    free(tid);
    free(sl);
    free(tl);
    free(ref);
    free(got);
    mt_vocab_free(v);
    mt_model_free(m);
}

/* mt_matmul_cols: the columns of a packed weight (int8, int16, B plain or
** transposed) equal those columns of mt_matmul bit for bit, over rounds that
** reuse, replace and come back to a selection (the graph keeps two); float32
** selects fp32 columns (equal within 1e-5 relative: BLAS may block the two
** products differently); an id out of range is an error.  With the
** columns' biases the result is the product plus the bias, bit for bit (the
** integer path adds it in the epilogue, float32 by an add); a bias of
** another length is refused.  Without columns (NULL) it is the whole
** product plus the bias, bit for bit, and on the integer path one GEMM node
** (the output layer without a shortlist). */
static void test_cols(void) {
    const int64_t k = 40, n = 150, rows = 6;
    static const mt_gemm_type types[] = {MT_GEMM_INT8, MT_GEMM_INT16, MT_GEMM_FLOAT32};
    float *w = malloc(sizeof(float) * k * n), *a = malloc(sizeof(float) * rows * k);
    float *full = malloc(sizeof(float) * rows * n), *part = malloc(sizeof(float) * rows * n);
    float *partb = malloc(sizeof(float) * rows * n), bias[150];
    test_fill_rand(w, k * n, -0.8f, 0.8f);
    test_fill_rand(bias, 150, -3.0f, 3.0f);
    test_fill_rand(a, rows * k, -2.0f, 2.0f);
    int32_t sels[3][70];
    for (int q = 0; q < 3; q++)
        for (int j = 0; j < 70; j++)
            sels[q][j] = (int32_t)((j * (7 + 4 * q) + 13 * q) % n);
    static const int order[] = {0, 0, 1, 0, 2, 1, 1, 0};
    for (size_t ti = 0; ti < 3; ti++) {
        for (int tb = 0; tb <= 1; tb++) {
            mt_params *p = NULL;
            CHECK_STATUS(mt_params_init(NULL, 3, &p));
            mt_graph *g = new_graph(types[ti], true, false);
            if (!p || !g) return;
            for (size_t r = 0; r < sizeof order / sizeof order[0]; r++) {
                const int32_t *ids = sels[order[r]];
                int64_t ns = 40 + 10 * order[r];
                mt_graph_clear(g);
                mt_node *x = mt_input(g, mt_shape2(rows, k), a);
                mt_node *wb = mt_param(g, p, "w", tb ? mt_shape2(n, k) : mt_shape2(k, n),
                                       mt_init_values(w, k * n));
                mt_node *y = mt_matmul(g, x, wb, false, tb);
                mt_node *c = mt_input_i32(g, mt_shape1(ns), ids);
                mt_node *ys = mt_matmul_cols(g, x, wb, tb, c, NULL);
                mt_node *yb = mt_matmul_cols(g, x, wb, tb, c, mt_input(g, mt_shape2(1, ns), bias));
                mt_node *ya = mt_matmul_cols(g, x, wb, tb, NULL, mt_input(g, mt_shape1(n), bias));
                CHECK_STATUS(mt_graph_forward(g));
                CHECK_STATUS(mt_node_get(y, full, rows * n));
                CHECK_STATUS(mt_node_get(ys, part, rows * ns));
                CHECK_STATUS(mt_node_get(yb, partb, rows * ns));
                int bada = 0;
                if (ya) {
                    float *whole = malloc(sizeof(float) * rows * n);
                    CHECK_STATUS(mt_node_get(ya, whole, rows * n));
                    for (int64_t i = 0; i < rows * n; i++) {
                        float want = full[i] + bias[i % n];
                        bada += memcmp(&whole[i], &want, sizeof(float)) != 0;
                    }
                    free(whole);
                }
                CHECK(ya && bada == 0, "%s tb %d round %zu: whole product + bias: %d differ",
                      mt_gemm_type_name(types[ti]), tb, r, bada);
                CHECK(ya && !strcmp(mt_node_op_name(ya),
                                    types[ti] == MT_GEMM_FLOAT32 ? "add" : "gemm_q"),
                      "%s: whole product + bias is op %s", mt_gemm_type_name(types[ti]),
                      ya ? mt_node_op_name(ya) : "(none)");
                int badb = 0;
                for (int64_t i = 0; i < rows * ns; i++) {
                    float want = part[i] + bias[i % ns];
                    badb += memcmp(&partb[i], &want, sizeof(float)) != 0;
                }
                CHECK(badb == 0, "%s tb %d round %zu: %d products + bias differ",
                      mt_gemm_type_name(types[ti]), tb, r, badb);
                /* Integer products are exact; float32 ones may round differently,
                ** since BLAS blocks a product of ns columns unlike one of n. */
                int bad = 0;
                for (int64_t i = 0; i < rows; i++)
                    for (int64_t j = 0; j < ns; j++) {
                        float pv = part[i * ns + j], fv = full[i * n + ids[j]];
                        bad += types[ti] == MT_GEMM_FLOAT32
                                   ? !(fabsf(pv - fv) <= 1e-5f * (1.0f + fabsf(fv)))
                                   : memcmp(&pv, &fv, sizeof(float)) != 0;
                    }
                CHECK(bad == 0, "%s tb %d round %zu: %d selected products differ",
                      mt_gemm_type_name(types[ti]), tb, r, bad);
            }
            mt_graph_clear(g);
            int32_t badid[2] = {3, (int32_t)n};
            mt_node *x = mt_input(g, mt_shape2(rows, k), a);
            mt_node *wb = mt_param(g, p, "w", tb ? mt_shape2(n, k) : mt_shape2(k, n),
                                   mt_init_values(w, k * n));
            mt_matmul_cols(g, x, wb, tb, mt_input_i32(g, mt_shape1(2), badid), NULL);
            CHECK(mt_graph_forward(g) == MT_ERR_INVALID, "%s: id %d of %lld accepted",
                  mt_gemm_type_name(types[ti]), (int)n, (long long)n);
            mt_graph_clear(g);
            x = mt_input(g, mt_shape2(rows, k), a);
            wb = mt_param(g, p, "w", tb ? mt_shape2(n, k) : mt_shape2(k, n),
                          mt_init_values(w, k * n));
            mt_matmul_cols(g, x, wb, tb, mt_input_i32(g, mt_shape1(2), badid + 0),
                           mt_input(g, mt_shape2(1, 3), bias));
            CHECK(mt_graph_status(g) == MT_ERR_INVALID && strstr(mt_errmsg(), "bias") != NULL,
                  "%s: 3 biases for 2 columns: %s", mt_gemm_type_name(types[ti]), mt_errmsg());
            mt_graph_clear(g);
            x = mt_input(g, mt_shape2(rows, k), a);
            wb = mt_param(g, p, "w", tb ? mt_shape2(n, k) : mt_shape2(k, n),
                          mt_init_values(w, k * n));
            mt_matmul_cols(g, x, wb, tb, NULL, mt_input(g, mt_shape2(1, n - 1), bias));
            CHECK(mt_graph_status(g) == MT_ERR_INVALID && strstr(mt_errmsg(), "bias") != NULL,
                  "%s: %d biases for %d columns: %s", mt_gemm_type_name(types[ti]), (int)n - 1,
                  (int)n, mt_errmsg());
            mt_graph_free(g);
            mt_params_free(p);
        }
    }
    free(w);
    free(a);
    free(full);
    free(part);
    free(partb);
}

/* The product of x with columns ids of the int8 weight "w" of p on g (a
** fresh round), into out [rows, ns]. */
static void cols_round(mt_graph *g, mt_params *p, const float *a, const float *w, int64_t rows,
                       int64_t k, int64_t n, const int32_t *ids, int64_t ns, float *out) {
    mt_graph_clear(g);
    mt_node *x = mt_input(g, mt_shape2(rows, k), a);
    mt_node *wb = mt_param(g, p, "w", mt_shape2(k, n), mt_init_values(w, k * n));
    mt_node *y = mt_matmul_cols(g, x, wb, false, mt_input_i32(g, mt_shape1(ns), ids), NULL);
    CHECK_STATUS(mt_graph_forward(g));
    CHECK_STATUS(mt_node_get(y, out, rows * ns));
}

/* mt_graph_share_gemm_state: a graph sharing another's GEMM state finds the
** column selection that one made (the count of selections does not move)
** and gives the same product bit for bit; a new selection on either shows
** on both; an unshared graph makes its own; the shared state outlives the
** graph it came from.  NULL graphs are refused. */
static void test_share_state(void) {
    const int64_t k = 40, n = 150, rows = 5, ns = 60;
    float *w = malloc(sizeof(float) * k * n), *a = malloc(sizeof(float) * rows * k);
    float *y1 = malloc(sizeof(float) * rows * ns), *y2 = malloc(sizeof(float) * rows * ns);
    test_fill_rand(w, k * n, -0.8f, 0.8f);
    test_fill_rand(a, rows * k, -2.0f, 2.0f);
    int32_t c1[60], c2[60];
    for (int j = 0; j < ns; j++) {
        c1[j] = (int32_t)(2 * j + 1);
        c2[j] = (int32_t)(n - 1 - 2 * j);
    }
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 3, &p));
    mt_graph *g1 = new_graph(MT_GEMM_INT8, true, false), *g2 = new_graph(MT_GEMM_INT8, true, false);
    mt_graph *g3 = new_graph(MT_GEMM_INT8, true, false);
    if (!p || !g1 || !g2 || !g3) return;
    CHECK_STATUS(mt_graph_share_gemm_state(g2, g1));
    cols_round(g1, p, a, w, rows, k, n, c1, ns, y1);
    cols_round(g2, p, a, w, rows, k, n, c1, ns, y2);
    CHECK(mt_graph_gemm_selections(g1) == 1 && mt_graph_gemm_selections(g2) == 1,
          "shared state: the second graph found the first's selection (%lld, %lld made)",
          (long long)mt_graph_gemm_selections(g1), (long long)mt_graph_gemm_selections(g2));
    CHECK(memcmp(y1, y2, sizeof(float) * (size_t)(rows * ns)) == 0,
          "shared selection: the same product");
    cols_round(g2, p, a, w, rows, k, n, c2, ns, y2);
    CHECK(mt_graph_gemm_selections(g1) == 2, "a selection made on g2 shows on g1: %lld",
          (long long)mt_graph_gemm_selections(g1));
    cols_round(g3, p, a, w, rows, k, n, c1, ns, y2);
    CHECK(mt_graph_gemm_selections(g3) == 1 && mt_graph_gemm_selections(g1) == 2,
          "an unshared graph makes its own selection");
    mt_graph_free(g1); /* g2 keeps the state */
    cols_round(g2, p, a, w, rows, k, n, c1, ns, y2);
    CHECK(mt_graph_gemm_selections(g2) == 2 &&
              memcmp(y1, y2, sizeof(float) * (size_t)(rows * ns)) == 0,
          "after the first graph is freed: the kept selection, the same product");
    CHECK(mt_graph_share_gemm_state(NULL, g2) == MT_ERR_INVALID &&
              mt_graph_share_gemm_state(g2, NULL) == MT_ERR_INVALID,
          "NULL graphs refused");
    mt_graph_free(g2);
    mt_graph_free(g3);
    mt_params_free(p);
    free(w), free(a), free(y1), free(y2);
}

int main(void) {
    test_pack_ex();
    test_ops(8);
    test_ops(16);
    test_memo();
    test_shared_packs();
    test_tuner();
    test_intgemm_params();
    test_convert();
    test_faults();
    test_score();
    test_cols();
    test_share_state();
    TEST_MAIN_END();
}
