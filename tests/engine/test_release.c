/*
** test_release.c: graphs that release values after their last use
** (mt_graph_params.release_values).  A small transformer-like block (views,
** products in float32 and int8, attention, layer norm, an int8 product's
** scratch) is computed by a releasing graph and by a plain one over several
** rounds of changing shapes: every output must be bitwise equal, the
** releasing graph must hold less at once than the values of a round, and
** reading or building on a released value must fail with an error (a
** kept one must not).  Debug builds fill fresh values with NaN, so a value
** given out again while still needed shows up as a difference.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mt.h"

enum { D = 16, F = 40, H = 2 };

static mt_graph *graph(bool release, mt_gemm_type gemm) {
    mt_graph_params gp = mt_graph_default_params();
    gp.workspace_bytes = 4096;
    gp.memoize = true;
    gp.release_values = release;
    gp.decode.gemm_type = gemm;
    mt_graph *g = NULL;
    CHECK_STATUS(mt_graph_init(NULL, gp, &g));
    return g;
}

typedef struct outs {
    mt_node *y, *mid, *w; /* output; a kept intermediate; an unkept one */
} outs;

/* L layers of y = LN(softmax(x + attention(q(x), h, h)) + h) with
** h = relu(x W1) W2, through reshapes; the output of layer 1 is the
** intermediate that is kept or not, layer 0's relu the one never kept. */
enum { L = 4 };

static mt_node *par(mt_graph *g, mt_params *p, const char *name, int l, mt_shape s, mt_init in) {
    char full[32];
    snprintf(full, sizeof full, "l%d_%s", l, name);
    return mt_param(g, p, full, s, in);
}

static outs build(mt_graph *g, mt_params *p, const float *xv, int64_t b, int64_t t, bool keep) {
    outs o = {0};
    mt_node *x = mt_input(g, mt_shape3(b, t, D), xv);
    for (int l = 0; l < L; l++) {
        mt_node *w1 = par(g, p, "w1", l, mt_shape2(D, F), mt_init_normal(0, 0.3f));
        mt_node *w2 = par(g, p, "w2", l, mt_shape2(F, D), mt_init_normal(0, 0.3f));
        mt_node *wq = par(g, p, "wq", l, mt_shape2(D, D), mt_init_normal(0, 0.3f));
        mt_node *gam = par(g, p, "gamma", l, mt_shape1(D), mt_init_uniform(0.5f, 1.5f));
        mt_node *bet = par(g, p, "beta", l, mt_shape1(D), mt_init_uniform(-0.5f, 0.5f));
        mt_node *x2 = mt_reshape(g, x, mt_shape2(b * t, D));
        mt_node *h = mt_relu(g, mt_matmul(g, x2, w1, false, false));
        if (l == 0) o.w = h; /* consumed below, not kept: released */
        mt_node *h2 = mt_reshape(g, mt_matmul(g, h, w2, false, false), mt_shape3(b, t, D));
        mt_node *q = mt_reshape(g, mt_matmul(g, x2, wq, false, false), mt_shape3(b, t, D));
        mt_node *a = mt_attention(g, q, h2, h2, NULL, H, NULL);
        mt_node *s = mt_softmax(g, mt_add(g, x, a));
        x = mt_layer_norm(g, mt_add(g, s, h2), gam, bet, 1e-6f);
        if (l == 1) {
            o.mid = x;
            if (keep) mt_graph_keep(g, x);
        }
    }
    o.y = x;
    return o;
}

static float *values(const mt_node *n, int64_t *numel) {
    *numel = mt_node_numel(n);
    float *v = malloc(sizeof(float) * (size_t)(*numel > 0 ? *numel : 1));
    if (v && mt_node_get(n, v, *numel) != MT_OK) {
        free(v);
        return NULL;
    }
    return v;
}

static void run(mt_gemm_type gemm) {
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 7, &p));
    mt_graph *plain = graph(false, gemm), *rel = graph(true, gemm);
    if (!p || !plain || !rel) return;
    static const int64_t shapes[][2] = {{2, 5}, {3, 9}, {1, 4}, {4, 12}, {3, 9}, {2, 7}};
    for (size_t r = 0; r < sizeof shapes / sizeof shapes[0]; r++) {
        int64_t b = shapes[r][0], t = shapes[r][1], n = b * t * D;
        float *xv = malloc(sizeof(float) * (size_t)n);
        if (!xv) return;
        for (int64_t i = 0; i < n; i++)
            xv[i] = sinf(0.37f * (float)(i + 11 * r)) * 2.0f;
        mt_graph_clear(plain);
        mt_graph_clear(rel);
        outs a = build(plain, p, xv, b, t, false);
        outs c = build(rel, p, xv, b, t, r % 2 == 0);
        CHECK_STATUS(mt_graph_forward(plain));
        CHECK_STATUS(mt_graph_forward(rel));
        int64_t na = 0, nc = 0;
        float *ya = values(a.y, &na), *yc = values(c.y, &nc);
        CHECK(ya && yc && na == nc && memcmp(ya, yc, sizeof(float) * (size_t)na) == 0,
              "gemm %s round %zu [%lld %lld]: releasing graph's output differs",
              mt_gemm_type_name(gemm), r, (long long)b, (long long)t);
        free(ya);
        free(yc);
        /* kept: readable and equal; not kept: an error, and no building on it */
        float *ma = values(a.mid, &na), *mc = values(c.mid, &nc);
        if (r % 2 == 0) {
            CHECK(ma && mc && memcmp(ma, mc, sizeof(float) * (size_t)na) == 0,
                  "round %zu: kept value differs", r);
        } else {
            CHECK(ma && mc == NULL, "round %zu: a released value was readable", r);
        }
        free(ma);
        free(mc);
        int64_t nw = 0;
        float *wv = values(c.w, &nw);
        CHECK(wv == NULL, "round %zu: relu value (consumed, not kept) was readable", r);
        free(wv);
        mt_node *late = mt_relu(rel, c.w);
        CHECK(late == NULL && mt_graph_status(rel) == MT_ERR_INVALID,
              "round %zu: building on a released value did not fail", r);
        mt_graph_stats sp = mt_graph_get_stats(plain), sr = mt_graph_get_stats(rel);
        CHECK(sr.values_peak > 0 && sr.values_peak * 2 < sp.workspace_used,
              "round %zu: releasing graph held %zu bytes at once, plain graph %zu", r,
              sr.values_peak, sp.workspace_used);
        free(xv);
    }
    /* backward refuses: the values it would need are gone */
    mt_graph_clear(rel);
    mt_node *one = mt_constant(rel, mt_shape1(1), 1.0f);
    CHECK(mt_graph_backward(rel, one) == MT_ERR_INVALID, "backward in a releasing graph");
    mt_graph_free(plain);
    mt_graph_free(rel);
    mt_params_free(p);
}

int main(void) {
    run(MT_GEMM_FLOAT32);
    run(MT_GEMM_INT8);
    TEST_MAIN_END();
}
