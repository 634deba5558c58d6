/*
** test_graph.c: the engine core without the op library: tensors and f16,
** RNG, parameters, and the graph (lazy forward, backward accumulation,
** clear/reuse without allocation, strict mode, memoization, abort, sticky
** errors).  The ops used here are defined in this file through graph_push
** and count their forward calls, so the tests see exactly what the graph
** computes.  They run on the CPU device (host pointers).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"
#include "harness.h"
#include "mt.h"

/* ------------------------------------------------------- test-only ops */

static int n_mul_fwd, n_tr_fwd, n_sum_fwd;

/* y = a * b (same shape).  da += dy * b, db += dy * a. */
static mt_status tmul_fwd(mt_graph *g, mt_node *y) {
    (void)g;
    n_mul_fwd++;
    const float *a = node_f32(y->src[0]), *b = node_f32(y->src[1]);
    float *o = node_f32(y);
    for (int64_t i = 0; i < mt_node_numel(y); i++)
        o[i] = a[i] * b[i];
    return MT_OK;
}

static mt_status tmul_bwd(mt_graph *g, mt_node *y) {
    (void)g;
    mt_node *a = y->src[0], *b = y->src[1];
    const float *dy = node_grad_f32(y);
    for (int64_t i = 0; i < mt_node_numel(y); i++) {
        if (node_wants_grad(a)) node_grad_f32(a)[i] += dy[i] * node_f32(b)[i];
        if (node_wants_grad(b)) node_grad_f32(b)[i] += dy[i] * node_f32(a)[i];
    }
    return MT_OK;
}

static const mt_op_def op_tmul = {"test_mul", tmul_fwd, tmul_bwd};

static mt_node *tmul(mt_graph *g, mt_node *a, mt_node *b) {
    if (a == NULL || b == NULL) return NULL;
    mt_node *src[2] = {a, b};
    return graph_push(g, &op_tmul, a->val.shape, MT_F32, 2, src, NULL);
}

/* y = sum(x) as [1].  dx += dy. */
static mt_status tsum_fwd(mt_graph *g, mt_node *y) {
    (void)g;
    n_sum_fwd++;
    double s = 0;
    for (int64_t i = 0; i < mt_node_numel(y->src[0]); i++)
        s += node_f32(y->src[0])[i];
    node_f32(y)[0] = (float)s;
    return MT_OK;
}

static mt_status tsum_bwd(mt_graph *g, mt_node *y) {
    (void)g;
    mt_node *x = y->src[0];
    if (!node_wants_grad(x)) return MT_OK;
    for (int64_t i = 0; i < mt_node_numel(x); i++)
        node_grad_f32(x)[i] += node_grad_f32(y)[0];
    return MT_OK;
}

static const mt_op_def op_tsum = {"test_sum", tsum_fwd, tsum_bwd};

static mt_node *tsum(mt_graph *g, mt_node *x) {
    if (x == NULL) return NULL;
    return graph_push(g, &op_tsum, mt_shape1(1), MT_F32, 1, &x, NULL);
}

/* 2-D transpose, attr i[0] = a tag that is part of the memo key.  Not
** differentiable (backward NULL). */
static mt_status ttr_fwd(mt_graph *g, mt_node *y) {
    (void)g;
    n_tr_fwd++;
    const mt_node *x = y->src[0];
    int64_t r = x->val.shape.dim[0], c = x->val.shape.dim[1];
    for (int64_t i = 0; i < r; i++) {
        for (int64_t j = 0; j < c; j++)
            node_f32(y)[j * r + i] = node_f32(x)[i * c + j];
    }
    return MT_OK;
}

static const mt_op_def op_ttr = {"test_transpose", ttr_fwd, NULL};

static mt_node *ttr(mt_graph *g, mt_node *x, int64_t tag) {
    if (x == NULL) return NULL;
    mt_attrs a;
    memset(&a, 0, sizeof a);
    a.i[0] = tag;
    return graph_push(g, &op_ttr, mt_shape2(x->val.shape.dim[1], x->val.shape.dim[0]), MT_F32, 1,
                      &x, &a);
}

/* --------------------------------------------------------- f16, tensors */

static int is_nan16(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

/* Reference narrowing: the f16 value nearest to f (ties to even mantissa),
** searched among all finite halves of the same sign, in double. */
static uint16_t ref_f32_to_f16(float f) {
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    double a = fabs((double)f);
    if (a >= 65520.0) return sign | 0x7c00; /* 65504 + half an ulp (2^4) */
    uint16_t best = 0;
    double bd = INFINITY;
    for (uint32_t h = 0; h < 0x7c00; h++) {
        double d = fabs((double)mt_f16_to_f32((uint16_t)h) - a);
        if (d < bd || (d == bd && !(h & 1))) {
            bd = d;
            best = (uint16_t)h;
        }
    }
    return sign | best;
}

static void test_f16(void) {
    /* Every half converts to f32 and back to itself (NaN stays NaN). */
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = mt_f16_to_f32((uint16_t)h);
        uint16_t back = mt_f32_to_f16(f);
        if (is_nan16((uint16_t)h) ? !(isnan(f) && is_nan16(back)) : back != h) bad++;
    }
    CHECK(bad == 0, "%d halves do not round-trip", bad);

    /* Decoding by formula: normals, subnormals, inf. */
    CHECK(mt_f16_to_f32(0x3c00) == 1.0f, "1.0");
    CHECK(mt_f16_to_f32(0xc000) == -2.0f, "-2.0");
    CHECK(mt_f16_to_f32(0x7bff) == 65504.0f, "max half");
    CHECK(mt_f16_to_f32(0x0001) == ldexpf(1.0f, -24), "min subnormal");
    CHECK(mt_f16_to_f32(0x03ff) == ldexpf(1023.0f, -24), "max subnormal");
    CHECK(mt_f16_to_f32(0x0400) == ldexpf(1.0f, -14), "min normal");
    CHECK(isinf(mt_f16_to_f32(0x7c00)) && mt_f16_to_f32(0xfc00) < 0, "inf");
    CHECK(signbit(mt_f16_to_f32(0x8000)) && mt_f16_to_f32(0x8000) == 0.0f, "-0");

    /* Rounding: ties to even, overflow, underflow. */
    CHECK(mt_f32_to_f16(1.0f + ldexpf(1, -11)) == 0x3c00, "tie 1+2^-11 -> even 1.0");
    CHECK(mt_f32_to_f16(1.0f + 3 * ldexpf(1, -11)) == 0x3c02, "tie 1+3*2^-11 -> even");
    CHECK(mt_f32_to_f16(1.0f + ldexpf(1, -11) + ldexpf(1, -20)) == 0x3c01, "above tie");
    CHECK(mt_f32_to_f16(65519.0f) == 0x7bff, "65519 -> max");
    CHECK(mt_f32_to_f16(65520.0f) == 0x7c00, "65520 -> inf (tie to even)");
    CHECK(mt_f32_to_f16(1e10f) == 0x7c00 && mt_f32_to_f16(-1e10f) == 0xfc00, "overflow");
    CHECK(mt_f32_to_f16(ldexpf(1, -25)) == 0x0000, "2^-25 tie -> 0");
    CHECK(mt_f32_to_f16(ldexpf(1.5f, -25)) == 0x0001, "1.5*2^-25 -> min subnormal");
    CHECK(mt_f32_to_f16(ldexpf(3, -25)) == 0x0002, "3*2^-25 tie -> 2 (even)");
    CHECK(mt_f32_to_f16(ldexpf(1023.5f, -24)) == 0x0400, "subnormal rounding carries to normal");
    CHECK(mt_f32_to_f16(-0.0f) == 0x8000, "-0");
    CHECK(mt_f32_to_f16(ldexpf(1, -140)) == 0, "f32 subnormal -> 0");
    CHECK(is_nan16(mt_f32_to_f16(NAN)), "NaN");
    CHECK(mt_f32_to_f16(INFINITY) == 0x7c00 && mt_f32_to_f16(-INFINITY) == 0xfc00, "inf");

    /* Random floats over the half range against the search reference. */
    mt_rng r;
    mt_rng_seed(&r, 7);
    bad = 0;
    for (int k = 0; k < 300; k++) {
        float f = ldexpf(2 * mt_rng_uniform(&r) - 1, (int)(mt_rng_next(&r) % 44) - 27);
        uint16_t want = ref_f32_to_f16(f), got = mt_f32_to_f16(f);
        if (got != want) {
            if (bad++ < 5) CHECK(got == want, "f32_to_f16(%a) = %04x want %04x", f, got, want);
        }
    }
    CHECK(bad == 0, "%d random conversions differ", bad);
}

static void test_tensor(void) {
    mt_shape s = mt_shape3(2, 3, 4);
    char buf[64];
    CHECK(mt_shape_numel(&s) == 24, "numel");
    CHECK(strcmp(mt_shape_str(&s, buf, sizeof buf), "[2, 3, 4]") == 0, "str %s", buf);
    CHECK(strcmp(mt_shape_str(&s, buf, 5), "[2, ") == 0, "truncated str '%s'", buf);
    mt_shape s2 = mt_shape3(2, 3, 4), s3 = mt_shape2(6, 4);
    CHECK(mt_shape_eq(&s, &s2) && !mt_shape_eq(&s, &s3), "eq");
    CHECK(mt_dtype_size(MT_F16) == 2 && mt_dtype_size(MT_I32) == 4 && mt_dtype_size(MT_I8) == 1,
          "sizes");
    CHECK(strcmp(mt_dtype_name(MT_F16), "float16") == 0, "name");

    mt_tensor t;
    CHECK_STATUS(mt_tensor_init(NULL, MT_F32, s3, &t));
    float z[24], v[24], w[24];
    CHECK_STATUS(mt_tensor_get(&t, z, sizeof z));
    int nz = 0;
    for (int i = 0; i < 24; i++)
        nz += z[i] != 0;
    CHECK(nz == 0, "zero-filled");
    for (int i = 0; i < 24; i++)
        v[i] = (float)i * 0.5f;
    CHECK_STATUS(mt_tensor_set(&t, v, sizeof v));
    CHECK_STATUS(mt_tensor_get(&t, w, sizeof w));
    CHECK(memcmp(v, w, sizeof v) == 0, "set/get");
    CHECK(mt_tensor_set(&t, v, 8) == MT_ERR_INVALID, "size mismatch refused");
    mt_tensor_free(&t);
    mt_tensor_free(&t); /* zeroed: safe */
    CHECK(t.data == NULL, "freed");
}

static void test_rng(void) {
    mt_rng a, b;
    mt_rng_seed(&a, 42);
    mt_rng_seed(&b, 42);
    int same = 1;
    for (int i = 0; i < 100; i++)
        same &= mt_rng_next(&a) == mt_rng_next(&b);
    CHECK(same, "same seed, same stream");
    mt_rng_seed(&b, 43);
    CHECK(mt_rng_next(&a) != mt_rng_next(&b), "different seeds differ");
    const int n = 200000;
    double s = 0, s2 = 0, lo = 1, hi = 0;
    for (int i = 0; i < n; i++) {
        double u = mt_rng_uniform(&a);
        s += u;
        s2 += u * u;
        if (u < lo) lo = u;
        if (u > hi) hi = u;
    }
    CHECK(lo >= 0 && hi < 1, "uniform in [0,1): %g %g", lo, hi);
    CHECK_CLOSE(s / n, 0.5, 0.005, 0, "uniform mean");
    CHECK_CLOSE(s2 / n - (s / n) * (s / n), 1.0 / 12, 0.002, 0, "uniform variance");
    s = s2 = 0;
    double s4 = 0;
    for (int i = 0; i < n; i++) {
        double x = mt_rng_normal(&a);
        s += x;
        s2 += x * x;
        s4 += x * x * x * x;
    }
    CHECK_CLOSE(s / n, 0.0, 0.01, 0, "normal mean");
    CHECK_CLOSE(s2 / n, 1.0, 0.015, 0, "normal variance");
    CHECK_CLOSE(s4 / n, 3.0, 0.1, 0, "normal 4th moment");
}

static void test_params(void) {
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 1, &p));
    if (!p) return;
    mt_tensor *w = NULL, *w2 = NULL;
    CHECK_STATUS(mt_params_get(p, "W", MT_F32, mt_shape2(300, 200), mt_init_glorot_uniform(), &w));
    CHECK_STATUS(mt_params_get(p, "W", MT_F32, mt_shape2(300, 200), mt_init_zeros(), &w2));
    CHECK(w == w2, "get-or-create returns the same tensor");
    CHECK(mt_params_get(p, "W", MT_F32, mt_shape2(200, 300), mt_init_zeros(), &w2) ==
                  MT_ERR_INVALID &&
              strstr(mt_errmsg(), "[300, 200]") && strstr(mt_errmsg(), "W"),
          "shape mismatch: %s", mt_errmsg());

    /* Glorot uniform: |x| <= a and variance a^2/3, a = sqrt(6 / 500). */
    static float h[300 * 200];
    CHECK_STATUS(mt_tensor_get(w, h, sizeof h));
    double a = sqrt(6.0 / 500), s2 = 0, mx = 0;
    for (int i = 0; i < 60000; i++) {
        s2 += (double)h[i] * h[i];
        if (fabs(h[i]) > mx) mx = fabs(h[i]);
    }
    CHECK(mx <= a && mx > 0.99 * a, "glorot uniform bound %g vs %g", mx, a);
    CHECK_CLOSE(s2 / 60000, a * a / 3, 0, 0.03, "glorot uniform variance");

    mt_tensor *gn = NULL;
    CHECK_STATUS(mt_params_get(p, "G", MT_F32, mt_shape2(100, 400), mt_init_glorot_normal(), &gn));
    CHECK_STATUS(mt_tensor_get(gn, h, 40000 * sizeof(float)));
    s2 = 0;
    for (int i = 0; i < 40000; i++)
        s2 += (double)h[i] * h[i];
    CHECK_CLOSE(s2 / 40000, 2.0 / 500, 0, 0.03, "glorot normal variance");

    float vals[3] = {1.5f, -2.0f, 3.25f};
    mt_tensor *b = NULL, *hf = NULL;
    CHECK_STATUS(mt_params_get(p, "b", MT_F32, mt_shape1(3), mt_init_values(vals, 3), &b));
    CHECK_STATUS(mt_tensor_get(b, h, 3 * sizeof(float)));
    CHECK(memcmp(h, vals, sizeof vals) == 0, "init values");
    CHECK(mt_params_get(p, "c", MT_F32, mt_shape1(4), mt_init_values(vals, 3), &b) ==
              MT_ERR_INVALID,
          "wrong value count");
    CHECK(mt_params_find(p, "c") == NULL, "failed create leaves nothing");
    CHECK_STATUS(mt_params_get(p, "h", MT_F16, mt_shape1(3), mt_init_values(vals, 3), &hf));
    uint16_t hv[3];
    CHECK_STATUS(mt_tensor_get(hf, hv, sizeof hv));
    CHECK(hv[0] == 0x3e00 && hv[1] == 0xc000 && hv[2] == 0x4280, "f16 init %04x %04x %04x", hv[0],
          hv[1], hv[2]);

    /* Many parameters: lookups by name find the right one. */
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "layer_%d_W", i);
        mt_tensor *t = NULL;
        CHECK_STATUS(mt_params_get(p, name, MT_F32, mt_shape1(i % 7 + 1), mt_init_zeros(), &t));
    }
    int ok = 1;
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "layer_%d_W", i);
        mt_tensor *t = mt_params_find(p, name);
        ok &= t != NULL && t->shape.dim[0] == i % 7 + 1 && mt_params_at(p, i + 4) == t &&
              strcmp(mt_params_name(p, i + 4), name) == 0;
    }
    CHECK(ok, "1000 lookups");
    CHECK(mt_params_count(p) == 1004, "count %d", mt_params_count(p));

    /* Adopt moves the data; versions change on touch and adopt. */
    uint64_t v0 = mt_params_version(p);
    mt_tensor t;
    CHECK_STATUS(mt_tensor_init(NULL, MT_F32, mt_shape1(2), &t));
    void *data = t.data;
    CHECK_STATUS(mt_params_adopt(p, "adopted", &t));
    CHECK(!t.owns && mt_params_find(p, "adopted")->data == data, "adopt moves");
    CHECK(mt_params_adopt(p, "adopted", &t) == MT_ERR_INVALID, "duplicate adopt refused");
    uint64_t v1 = mt_params_version(p);
    mt_params_touch(p);
    CHECK(v1 != v0 && mt_params_version(p) != v1, "versions change");

    /* Grads only for trainable f32 params. */
    mt_params_set_trainable(p, "b", false);
    CHECK_STATUS(mt_params_alloc_grads(p));
    CHECK(mt_params_grad_at(p, 0) != NULL, "W has a grad");
    CHECK(mt_params_grad_at(p, 2) == NULL && !mt_params_trainable_at(p, 2), "frozen b: no grad");
    CHECK(mt_params_grad_at(p, 3) == NULL, "f16 param: no grad");
    mt_params_free(p);
}

/* --------------------------------------------------------------- graph */

static mt_graph *new_graph(bool training, bool memoize, size_t ws, size_t arena) {
    mt_graph_params gp = mt_graph_default_params();
    gp.training = training;
    gp.memoize = memoize;
    gp.workspace_bytes = ws;
    gp.node_arena_bytes = arena;
    mt_graph *g = NULL;
    CHECK_STATUS(mt_graph_init(NULL, gp, &g));
    return g;
}

static void test_lazy_forward(void) {
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 1, &p));
    mt_graph *g = new_graph(false, false, 1 << 16, 0);
    if (!p || !g) return;
    float xv[4] = {1, 2, 3, 4}, wv[4] = {0.5f, -1, 2, 0};
    n_mul_fwd = n_sum_fwd = 0;
    mt_node *x = mt_input(g, mt_shape2(2, 2), xv);
    mt_node *w = mt_param(g, p, "w", mt_shape2(2, 2), mt_init_values(wv, 4));
    mt_node *y = tmul(g, x, w);
    CHECK(y && !y->computed, "built, not computed");
    CHECK_STATUS(mt_graph_forward(g));
    CHECK(n_mul_fwd == 1, "mul computed once");
    float out[4];
    CHECK_STATUS(mt_node_get(y, out, 4));
    CHECK(out[0] == 0.5f && out[1] == -2 && out[2] == 6 && out[3] == 0, "values");
    mt_node *s = tsum(g, y);
    CHECK(mt_node_get(s, out, 1) == MT_ERR_INVALID, "not computed yet");
    CHECK_STATUS(mt_graph_forward(g));
    CHECK(n_mul_fwd == 1 && n_sum_fwd == 1, "only the new node computed (%d %d)", n_mul_fwd,
          n_sum_fwd);
    CHECK_STATUS(mt_node_get_scalar(s, out));
    CHECK(out[0] == 4.5f, "sum %g", out[0]);
    CHECK_STATUS(mt_graph_forward(g));
    CHECK(n_mul_fwd == 1 && n_sum_fwd == 1, "nothing recomputed");
    CHECK(strcmp(mt_node_op_name(w), "param") == 0 && strcmp(mt_node_op_name(x), "input") == 0,
          "leaf op names");
    CHECK(mt_graph_get_stats(g).n_nodes == 4, "4 nodes");

    /* i32 input and constant leaves; node_get widens to f32. */
    int32_t ids[3] = {7, -3, 100000};
    mt_node *iv = mt_input_i32(g, mt_shape1(3), ids);
    mt_node *c = mt_constant(g, mt_shape2(2, 3), 2.5f);
    CHECK_STATUS(mt_node_get(iv, out, 3));
    CHECK(out[0] == 7 && out[1] == -3 && out[2] == 100000, "i32 input");
    float cv[6];
    CHECK_STATUS(mt_node_get(c, cv, 6));
    CHECK(cv[0] == 2.5f && cv[5] == 2.5f, "constant");
    CHECK(mt_node_get(c, cv, 5) == MT_ERR_INVALID, "numel mismatch");
    /* A tensor view. */
    mt_tensor t;
    CHECK_STATUS(mt_tensor_init(NULL, MT_F32, mt_shape1(2), &t));
    float tv[2] = {9, 8};
    CHECK_STATUS(mt_tensor_set(&t, tv, sizeof tv));
    mt_node *tn = mt_tensor_node(g, &t);
    CHECK_STATUS(mt_node_get(tn, out, 2));
    CHECK(out[0] == 9 && out[1] == 8 && mt_node_value(tn)->data == t.data, "tensor view");
    mt_tensor_free(&t);
    mt_graph_free(g);
    mt_params_free(p);
}

static void test_backward(void) {
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 1, &p));
    mt_graph *g = new_graph(true, false, 1 << 16, 0);
    if (!p || !g) return;
    float xv[3] = {1, -2, 3}, wv[3] = {0.5f, 4, -1}, gw[3], gy[3];
    /* loss = sum(x * w) + sum(w * w):  d/dw = x + 2w */
    mt_node *x = mt_input(g, mt_shape1(3), xv);
    mt_node *w = mt_param(g, p, "w", mt_shape1(3), mt_init_values(wv, 3));
    mt_node *y = tmul(g, x, w);
    mt_node *l1 = tsum(g, y);
    mt_node *l2 = tsum(g, tmul(g, w, w));
    CHECK(w->needs_grad && y->needs_grad && !x->needs_grad, "needs_grad flags");
    CHECK_STATUS(mt_graph_backward(g, l1));
    int i3 = mt_params_count(p) - 1;
    CHECK(mt_params_grad_at(p, i3) != NULL, "grads allocated by backward");
    CHECK_STATUS(mt_node_get_grad(w, gw, 3));
    CHECK(gw[0] == 1 && gw[1] == -2 && gw[2] == 3, "dw = x: %g %g %g", gw[0], gw[1], gw[2]);
    CHECK_STATUS(mt_node_get_grad(y, gy, 3));
    CHECK(gy[0] == 1 && gy[1] == 1 && gy[2] == 1, "dy = 1");
    CHECK(mt_node_get_grad(x, gy, 3) == MT_ERR_INVALID, "input has no grad");
    /* Second backward on the same graph accumulates into the parameter. */
    CHECK_STATUS(mt_graph_backward(g, l1));
    CHECK_STATUS(mt_tensor_get(mt_params_grad_at(p, i3), gw, sizeof gw));
    CHECK(gw[0] == 2 && gw[1] == -4 && gw[2] == 6, "accumulated 2x: %g %g %g", gw[0], gw[1], gw[2]);
    CHECK_STATUS(mt_node_get_grad(y, gy, 3));
    CHECK(gy[0] == 1, "intermediate grads re-zeroed per backward");
    /* A parameter used twice: d sum(w*w) / dw = 2w, added on top. */
    CHECK_STATUS(mt_graph_backward(g, l2));
    CHECK_STATUS(mt_tensor_get(mt_params_grad_at(p, i3), gw, sizeof gw));
    CHECK(gw[0] == 3 && gw[1] == 4 && gw[2] == 4, "2w added: %g %g %g", gw[0], gw[1], gw[2]);
    mt_params_zero_grads(p);
    CHECK_STATUS(mt_tensor_get(mt_params_grad_at(p, i3), gw, sizeof gw));
    CHECK(gw[0] == 0 && gw[2] == 0, "zeroed");

    /* Frozen parameter: no gradient, constant. */
    mt_graph_clear(g);
    mt_params_set_trainable(p, "w", false);
    w = mt_param(g, p, "w", mt_shape1(3), mt_init_zeros());
    CHECK(!w->needs_grad && w->is_const, "frozen param is const");
    mt_params_set_trainable(p, "w", true);

    /* Not training: nothing needs grad, backward is a no-op. */
    mt_graph_set_training(g, false);
    mt_graph_clear(g);
    w = mt_param(g, p, "w", mt_shape1(3), mt_init_zeros());
    l1 = tsum(g, tmul(g, w, w));
    CHECK(!l1->needs_grad && w->is_const, "inference: const");
    CHECK_STATUS(mt_graph_backward(g, l1));
    mt_graph_free(g);
    mt_params_free(p);
}

/* One batch of the steady-state test: a chain of 300 nodes (the tape and the
** tiny arena and workspace must grow in the first round). */
static float steady_round(mt_graph *g, mt_params *p, const float *xv, int n, bool back) {
    char name[16];
    snprintf(name, sizeof name, "w%d", n);
    mt_node *x = mt_input(g, mt_shape1(n), xv);
    mt_node *w = mt_param(g, p, name, mt_shape1(n), mt_init_ones());
    mt_node *h = x;
    for (int i = 0; i < 300; i++)
        h = tmul(g, h, w);
    mt_node *l = tsum(g, h);
    float v = NAN;
    if (mt_graph_forward(g) != MT_OK) return NAN;
    if (back && mt_graph_backward(g, l) != MT_OK) return NAN;
    if (mt_node_get_scalar(l, &v) != MT_OK) return NAN;
    return v;
}

static void test_steady_state(void) {
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 1, &p));
    mt_graph *g = new_graph(true, false, 4096, 512);
    if (!p || !g) return;
    enum { N = 64 };
    float xv[N];
    for (int i = 0; i < N; i++)
        xv[i] = (float)(i % 5) - 2;
    float want = 0;
    for (int i = 0; i < N; i++)
        want += xv[i];

    float v = steady_round(g, p, xv, N, true);
    CHECK(v == want, "round 1 loss %g want %g", v, want);
    mt_graph_stats s1 = mt_graph_get_stats(g);
    CHECK(s1.workspace_used > 4096 && s1.n_nodes == 303, "round 1 overflowed the workspace");
    mt_graph_clear(g);
    mt_graph_stats s2 = mt_graph_get_stats(g);
    CHECK(s2.workspace_grow_count == 1 && s2.workspace_capacity >= s1.workspace_used,
          "regrown once to the high-water mark: %llu, %zu >= %zu",
          (unsigned long long)s2.workspace_grow_count, s2.workspace_capacity, s1.workspace_used);

    mt_alloc_stats a0 = mt_alloc_get_stats();
    int bad = 0;
    for (int round = 2; round <= 100; round++) {
        v = steady_round(g, p, xv, N, true);
        if (v != want) bad++;
        mt_params_zero_grads(p);
        mt_graph_clear(g);
    }
    mt_alloc_stats a1 = mt_alloc_get_stats();
    mt_graph_stats s3 = mt_graph_get_stats(g);
    CHECK(bad == 0, "%d rounds with a wrong loss", bad);
    CHECK(a1.n_allocs == a0.n_allocs, "rounds 2..100 allocated %llu blocks",
          (unsigned long long)(a1.n_allocs - a0.n_allocs));
    CHECK(a1.live_blocks == a0.live_blocks, "live blocks constant");
    CHECK(s3.workspace_grow_count == s2.workspace_grow_count &&
              s3.workspace_capacity == s2.workspace_capacity &&
              s3.arena_capacity == s2.arena_capacity,
          "no growth after round 1");
    mt_graph_free(g);
    mt_params_free(p);
}

static void test_strict(void) {
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 1, &p));
    mt_graph_params gp = mt_graph_default_params();
    gp.strict = true;
    gp.workspace_bytes = 1024;
    gp.node_arena_bytes = 512;
    mt_graph *g = NULL;
    CHECK_STATUS(mt_graph_init(NULL, gp, &g));
    if (!p || !g) return;
    static float xv[4096];
    for (int i = 0; i < 4096; i++)
        xv[i] = 1;
    /* Round 1 may grow (no clear yet). */
    CHECK(steady_round(g, p, xv, 64, false) == 64, "round 1 grows freely");
    mt_graph_clear(g);
    CHECK(steady_round(g, p, xv, 64, false) == 64, "round 2 fits");
    mt_graph_clear(g);
    /* A bigger batch after the first clear is an error, not an allocation. */
    mt_tensor *w4096 = NULL;
    CHECK_STATUS(mt_params_get(p, "w4096", MT_F32, mt_shape1(4096), mt_init_ones(), &w4096));
    mt_alloc_stats a0 = mt_alloc_get_stats();
    CHECK(isnan(steady_round(g, p, xv, 4096, false)), "bigger batch fails");
    CHECK(mt_graph_status(g) == MT_ERR_NOMEM && strstr(mt_errmsg(), "strict"), "strict error: %s",
          mt_errmsg());
    CHECK(mt_graph_forward(g) == MT_ERR_NOMEM && strstr(mt_errmsg(), "workspace exhausted"),
          "sticky: %s", mt_errmsg());
    CHECK(mt_alloc_get_stats().n_allocs == a0.n_allocs, "nothing allocated");
    mt_graph_clear(g);
    CHECK(steady_round(g, p, xv, 64, false) == 64, "usable again after clear");
    mt_graph_free(g);
    mt_params_free(p);
}

static void test_memo(void) {
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 1, &p));
    mt_graph *g = new_graph(false, true, 1 << 16, 0);
    if (!p || !g) return;
    float wv[6] = {1, 2, 3, 4, 5, 6}; /* W [2,3]; W^T [3,2] = 1 4 2 5 3 6 */
    float xv[6] = {1, 1, 1, 1, 1, 1}, out[6];
    n_tr_fwd = n_mul_fwd = 0;
    int bad = 0;
    for (int round = 0; round < 5; round++) {
        mt_node *w = mt_param(g, p, "W", mt_shape2(2, 3), mt_init_values(wv, 6));
        mt_node *wt = ttr(g, w, 0);    /* memoized */
        mt_node *back = ttr(g, wt, 1); /* memoized, from a memo node */
        mt_node *c = mt_constant(g, mt_shape2(3, 2), 2.0f);
        mt_node *wc = tmul(g, wt, c);                               /* const * const: memoized */
        mt_node *y = tmul(g, mt_input(g, mt_shape2(3, 2), xv), wc); /* not memoized */
        if (mt_graph_forward(g) != MT_OK) bad++;
        mt_node_get(y, out, 6);
        if (out[0] != 2 || out[1] != 8 || out[2] != 4 || out[5] != 12) bad++;
        mt_node_get(back, out, 6);
        if (memcmp(out, wv, sizeof wv) != 0) bad++;
        CHECK(wt->is_memo && !y->is_memo, "memo flags");
        mt_graph_clear(g);
    }
    CHECK(bad == 0, "%d wrong values", bad);
    CHECK(n_tr_fwd == 2, "transposes computed once each: %d", n_tr_fwd);
    CHECK(n_mul_fwd == 1 + 5, "const mul once, input mul each round: %d", n_mul_fwd);
    mt_graph_stats st = mt_graph_get_stats(g);
    CHECK(st.memo_entries == 3 && st.memo_hits == 12, "entries %llu hits %llu",
          (unsigned long long)st.memo_entries, (unsigned long long)st.memo_hits);

    /* Constants are never entries (fills of any shape and value leave no
    ** trace), but a memoized node knows its constant source by value and
    ** shape: another value or shape is another entry, with its own result. */
    for (int i = 1; i <= 20; i++) {
        mt_node *c = mt_constant(g, mt_shape2(i, 3), (float)i);
        CHECK(c != NULL && c->is_const && !c->is_memo, "constant %d not a memo entry", i);
    }
    CHECK_STATUS(mt_graph_forward(g));
    mt_graph_clear(g);
    CHECK(mt_graph_get_stats(g).memo_entries == 3, "fills added entries: %llu",
          (unsigned long long)mt_graph_get_stats(g).memo_entries);
    n_mul_fwd = 0;
    for (int round = 0; round < 2; round++) {
        mt_node *w = mt_param(g, p, "W", mt_shape2(2, 3), mt_init_values(wv, 6));
        mt_node *wt = ttr(g, w, 0);
        mt_node *c3 = tmul(g, wt, mt_constant(g, mt_shape2(3, 2), 3.0f));
        mt_node *c1 = tmul(g, wt, mt_constant(g, mt_shape1(6), 3.0f));
        CHECK_STATUS(mt_graph_forward(g));
        CHECK(c3 != c1 && c3->is_memo && c1->is_memo, "shape is part of the identity");
        mt_node_get(c3, out, 6);
        CHECK(out[0] == 3 && out[1] == 12 && out[5] == 18, "W^T * 3 = %g %g %g", out[0], out[1],
              out[5]);
        mt_graph_clear(g);
    }
    CHECK(n_mul_fwd == 2, "const muls computed once each: %d", n_mul_fwd);

    /* Different attrs are a different key. */
    mt_node *w = mt_param(g, p, "W", mt_shape2(2, 3), mt_init_zeros());
    ttr(g, w, 5);
    CHECK_STATUS(mt_graph_forward(g));
    CHECK(n_tr_fwd == 3, "new attrs computed");
    mt_graph_clear(g);

    /* New values + touch: recomputed, with the new values. */
    float w2[6] = {10, 20, 30, 40, 50, 60};
    CHECK_STATUS(mt_tensor_set(mt_params_find(p, "W"), w2, sizeof w2));
    mt_params_touch(p);
    n_tr_fwd = 0;
    for (int round = 0; round < 3; round++) {
        w = mt_param(g, p, "W", mt_shape2(2, 3), mt_init_zeros());
        mt_node *wt = ttr(g, w, 0);
        CHECK_STATUS(mt_graph_forward(g));
        CHECK_STATUS(mt_node_get(wt, out, 6));
        CHECK(out[0] == 10 && out[1] == 40 && out[5] == 60, "recomputed value %g", out[1]);
        mt_graph_clear(g);
    }
    CHECK(n_tr_fwd == 1, "recomputed once after touch: %d", n_tr_fwd);

    /* A node built but never computed is not kept. */
    n_tr_fwd = 0;
    w = mt_param(g, p, "W", mt_shape2(2, 3), mt_init_zeros());
    ttr(g, w, 9);
    mt_graph_clear(g); /* no forward */
    w = mt_param(g, p, "W", mt_shape2(2, 3), mt_init_zeros());
    mt_node *t9 = ttr(g, w, 9);
    CHECK(!t9->computed, "uncomputed entry was dropped");
    CHECK_STATUS(mt_graph_forward(g));
    CHECK(n_tr_fwd == 1, "computed on the second build");
    mt_graph_clear(g);

    /* Training: no memoization. */
    mt_graph_set_training(g, true);
    n_tr_fwd = 0;
    for (int round = 0; round < 3; round++) {
        w = mt_param(g, p, "W", mt_shape2(2, 3), mt_init_zeros());
        mt_node *wt = ttr(g, w, 0);
        CHECK(!wt->is_memo && !wt->is_const, "not memo when training");
        CHECK_STATUS(mt_graph_forward(g));
        mt_graph_clear(g);
    }
    CHECK(n_tr_fwd == 3, "computed every round when training: %d", n_tr_fwd);
    mt_graph_free(g);

    /* Memoization off: computed every round. */
    g = new_graph(false, false, 1 << 16, 0);
    n_tr_fwd = 0;
    for (int round = 0; round < 3; round++) {
        w = mt_param(g, p, "W", mt_shape2(2, 3), mt_init_zeros());
        ttr(g, w, 0);
        CHECK_STATUS(mt_graph_forward(g));
        mt_graph_clear(g);
    }
    CHECK(n_tr_fwd == 3, "no memo when off: %d", n_tr_fwd);
    mt_graph_free(g);
    mt_params_free(p);
}

/* The memo cache flushed in the middle of a round keeps the nodes of that
** round alive until clear (ASan checks the use). */
static void test_memo_flush_mid_round(void) {
    mt_params *a = NULL, *b = NULL;
    CHECK_STATUS(mt_params_init(NULL, 1, &a));
    CHECK_STATUS(mt_params_init(NULL, 2, &b));
    mt_graph *g = new_graph(false, true, 1 << 16, 0);
    if (!a || !b || !g) return;
    float av[4] = {1, 2, 3, 4}, bv[4] = {5, 6, 7, 8}, out[4];
    for (int round = 0; round < 3; round++) {
        mt_node *at = ttr(g, mt_param(g, a, "A", mt_shape2(2, 2), mt_init_values(av, 4)), 0);
        if (round == 2) mt_params_touch(b);
        mt_node *bt = ttr(g, mt_param(g, b, "B", mt_shape2(2, 2), mt_init_values(bv, 4)), 0);
        mt_node *y = tmul(g, at, bt);
        CHECK_STATUS(mt_graph_forward(g));
        CHECK_STATUS(mt_node_get(y, out, 4));
        CHECK(out[0] == 5 && out[1] == 21 && out[2] == 12 && out[3] == 32, "round %d: %g %g", round,
              out[0], out[1]);
        mt_graph_clear(g);
    }
    mt_graph_free(g);
    mt_params_free(a);
    mt_params_free(b);
}

static int abort_after;
static bool abort_cb(void *user) {
    int *calls = user;
    return ++*calls > abort_after;
}

static void test_abort(void) {
    int calls = 0;
    mt_graph_params gp = mt_graph_default_params();
    gp.should_abort = abort_cb;
    gp.abort_user = &calls;
    mt_graph *g = NULL;
    CHECK_STATUS(mt_graph_init(NULL, gp, &g));
    if (!g) return;
    float xv[2] = {2, 3};
    mt_node *x = mt_input(g, mt_shape1(2), xv);
    mt_node *h = x;
    for (int i = 0; i < 10; i++)
        h = tmul(g, h, x);
    n_mul_fwd = 0;
    abort_after = 4;
    CHECK(mt_graph_forward(g) == MT_ABORTED, "aborted");
    CHECK(n_mul_fwd == 4, "stopped between nodes after 4: %d", n_mul_fwd);
    abort_after = 1000;
    CHECK_STATUS(mt_graph_forward(g));
    CHECK(n_mul_fwd == 10, "resumed: %d", n_mul_fwd);
    float out[2];
    CHECK_STATUS(mt_node_get(h, out, 2));
    CHECK(out[0] == 2048 && out[1] == 177147, "values after resume %g %g", out[0], out[1]);
    mt_graph_free(g);
}

static void test_sticky(void) {
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 1, &p));
    mt_graph *g = new_graph(false, false, 1 << 16, 0);
    if (!p || !g) return;
    mt_node *w = mt_param(g, p, "W", mt_shape2(2, 3), mt_init_zeros());
    mt_node *bad = mt_param(g, p, "W", mt_shape2(3, 3), mt_init_zeros());
    CHECK(w && bad == NULL, "mismatched param -> NULL");
    CHECK(tmul(g, w, bad) == NULL && tmul(g, w, w) == NULL, "builders after the error: NULL");
    mt_clearerr();
    CHECK(mt_graph_forward(g) == MT_ERR_INVALID && strstr(mt_errmsg(), "'W'"),
          "forward reports the first error: %s", mt_errmsg());
    mt_graph_clear(g);
    CHECK(mt_graph_status(g) == MT_OK, "clear resets");
    mt_node *src[1] = {NULL};
    CHECK(graph_push(g, &op_tsum, mt_shape1(1), MT_F32, 1, src, NULL) == NULL &&
              mt_graph_status(g) == MT_ERR_INVALID,
          "NULL input without a prior error records one");
    mt_graph_free(g);
    mt_params_free(p);
    mt_graph_free(NULL);
    mt_params_free(NULL);
}

int main(void) {
    test_f16();
    test_tensor();
    test_rng();
    test_params();
    test_lazy_forward();
    test_backward();
    test_steady_state();
    test_strict();
    test_memo();
    test_memo_flush_mid_round();
    test_abort();
    test_sticky();
    TEST_MAIN_END();
}
