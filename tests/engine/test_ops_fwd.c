/*
** test_ops_fwd.c: forward values of the nontrivial ops against plain
** double-precision references written here (softmax, log_softmax,
** layer_norm, cross_entropy with label smoothing, attention with mask,
** gather_rows, index_select, concat, slice, permute, matmul/bmm/affine with
** transposes, reductions, activations, broadcasting, masked_fill, highway,
** dropout statistics), then the error contract of the builders: bad shapes
** give NULL and a sticky MT_ERR_INVALID from mt_graph_forward with a message
** naming the op; NULL inputs give NULL; bad labels/ids fail at forward.
** f16 storage (the decoding caches of mt_decode_params.caches): mt_cast to
** f16 and back against mt_f32_to_f16 value by value (odd sizes, ties,
** subnormals, beyond the range), concat and index_select of f16 values
** against the f32 ops' results rounded, and the refusals (two dtypes in a
** concat, ops that compute on f32 only, a cast wanting a gradient).
** Prints one OK / NOT OK line per test.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "kcpu_impl.h"
#include "mt.h"

#define NMAX 8192

static mt_rng rng;
static float buf_a[NMAX], buf_b[NMAX], buf_c[NMAX], buf_y[NMAX];
static double ref[NMAX];

static void randn(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        x[i] = mt_rng_normal(&rng);
}

static mt_graph *new_graph(bool training) {
    mt_graph_params gp = mt_graph_default_params();
    gp.training = training;
    gp.workspace_bytes = 1 << 20;
    mt_graph *g = NULL;
    mt_status rc = mt_graph_init(NULL, gp, &g);
    CHECK(rc == MT_OK, "mt_graph_init: %s", mt_errmsg());
    return g;
}

/* Forward, read y (n values) into buf_y, compare with ref. */
static void expect(mt_graph *g, mt_node *y, int64_t n, double atol, double rtol, const char *what) {
    if (!CHECK(y != NULL, "%s: builder returned NULL: %s", what, mt_errmsg())) return;
    mt_status rc = mt_graph_forward(g);
    if (!CHECK(rc == MT_OK, "%s: forward: %s", what, mt_errmsg())) return;
    if (!CHECK(mt_node_numel(y) == n, "%s: numel %lld, want %lld", what,
               (long long)mt_node_numel(y), (long long)n)) {
        return;
    }
    CHECK_STATUS(mt_node_get(y, buf_y, n));
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (fabs((double)buf_y[i] - ref[i]) > atol + rtol * fabs(ref[i])) {
            if (bad < 4) {
                fprintf(stderr, "  %s [%lld]: got %.9g want %.9g\n", what, (long long)i,
                        (double)buf_y[i], ref[i]);
            }
            bad++;
        }
    }
    CHECK(bad == 0, "%s: %d of %lld values differ", what, bad, (long long)n);
}

static bool shape_is(mt_node *y, mt_shape want) {
    if (y == NULL) return false;
    mt_shape s = mt_node_shape(y);
    char a[64], b[64];
    return CHECK(mt_shape_eq(&s, &want), "shape %s, want %s", mt_shape_str(&s, a, sizeof a),
                 mt_shape_str(&want, b, sizeof b));
}

static int report(const char *name, int before) {
    bool ok = th_failures == before;
    printf("%s %s\n", ok ? "OK    " : "NOT OK", name);
    return ok;
}

#define TEST(name)                                                                                 \
    for (int t_before = th_failures, t_once = 1; t_once; t_once = 0, report(name, t_before))

/* ------------------------------------------------------- references */

static void ref_softmax_row(const float *x, int64_t n, double *y, bool log_) {
    double m = x[0], s = 0;
    for (int64_t j = 1; j < n; j++)
        m = x[j] > m ? x[j] : m;
    for (int64_t j = 0; j < n; j++)
        s += exp((double)x[j] - m);
    for (int64_t j = 0; j < n; j++) {
        y[j] = log_ ? (double)x[j] - m - log(s) : exp((double)x[j] - m) / s;
    }
}

/* C[M,N] = alpha op(A) op(B); A stored [M,K] or [K,M] (ta); B [K,N] or [N,K] (tb) */
static void ref_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                     const float *a, const float *b, double *c) {
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t l = 0; l < k; l++) {
                double av = ta ? a[l * m + i] : a[i * k + l];
                double bv = tb ? b[j * k + l] : b[l * n + j];
                s += av * bv;
            }
            c[i * n + j] = alpha * s;
        }
    }
}

static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }

/* ---------------------------------------------------------- forward */

static void test_softmax(void) {
    TEST("softmax / log_softmax [4,9] incl. large logits") {
        mt_graph *g = new_graph(false);
        randn(buf_a, 36);
        for (int j = 0; j < 9; j++)
            buf_a[27 + j] += 80.0f; /* overflow without max-shift */
        mt_node *x = mt_input(g, mt_shape2(4, 9), buf_a);
        for (int r = 0; r < 4; r++)
            ref_softmax_row(buf_a + 9 * r, 9, ref + 9 * r, false);
        expect(g, mt_softmax(g, x), 36, 1e-7, 1e-5, "softmax");
        for (int r = 0; r < 4; r++)
            ref_softmax_row(buf_a + 9 * r, 9, ref + 9 * r, true);
        expect(g, mt_log_softmax(g, x), 36, 1e-5, 1e-5, "log_softmax");
        mt_graph_free(g);
    }
}

/* mt_node_argmax against a scalar scan: first maximum, skipped columns,
** NaN never wins, a row with nothing above -inf gives -1; more rows than
** its chunk of 256. */
static void test_node_argmax(void) {
    TEST("mt_node_argmax [260,31] with skips, ties, NaN and -inf rows") {
        enum { R = 260, C = 31 };
        mt_graph *g = new_graph(false);
        randn(buf_a, R * C);
        float skip[C];
        for (int c = 0; c < C; c++)
            skip[c] = c % 5 == 3 ? -INFINITY : 0.0f;
        for (int r = 0; r < R; r++) {
            float *x = buf_a + r * C;
            if (r % 7 == 1) x[30] = x[12] = 50.0f; /* tie: the first */
            if (r % 7 == 2) x[8] = 60.0f;          /* skipped favourite */
            if (r % 7 == 3) x[4] = NAN;            /* never wins */
            if (r % 7 == 4)                        /* nothing left */
                for (int c = 0; c < C; c++)
                    x[c] = c % 5 == 3 ? 1.0f : -INFINITY;
        }
        mt_node *x = mt_input(g, mt_shape2(R, C), buf_a);
        mt_node *y = mt_scale(g, x, 1.0f); /* a computed node */
        CHECK_STATUS(mt_graph_forward(g));
        int32_t got[R], got0[R];
        CHECK_STATUS(mt_node_argmax(y, skip, got));
        CHECK_STATUS(mt_node_argmax(y, NULL, got0));
        int bad = 0;
        for (int r = 0; r < R; r++) {
            const float *xr = buf_a + r * C;
            int32_t want = -1, want0 = -1;
            for (int c = 0; c < C; c++) {
                float v = xr[c] + skip[c];
                if (v > -INFINITY && (want < 0 || v > xr[want] + skip[want])) want = c;
                if (xr[c] > -INFINITY && (want0 < 0 || xr[c] > xr[want0])) want0 = c;
            }
            bad += got[r] != want || got0[r] != want0;
        }
        CHECK(bad == 0, "argmax: %d rows differ from the scan", bad);
        CHECK(got[1] == 12 && got[4] == -1 && got0[4] >= 0, "ties or empty rows");
        CHECK(mt_node_argmax(x, NULL, got) == MT_OK, "argmax of an input node");
        mt_graph_free(g);
    }
}

static void test_layer_norm(void) {
    TEST("layer_norm [3,17] (population variance, eps inside sqrt)") {
        mt_graph *g = new_graph(false);
        int64_t rows = 3, d = 17;
        randn(buf_a, rows * d);
        for (int j = 0; j < d; j++)
            buf_a[j] = 3.0f + 0.01f * buf_a[j]; /* tiny variance row */
        randn(buf_b, d);
        randn(buf_c, d);
        float eps = 1e-4f; /* large enough to matter for the tiny-variance row */
        mt_node *x = mt_input(g, mt_shape2(rows, d), buf_a);
        mt_node *gm = mt_input(g, mt_shape1(d), buf_b);
        mt_node *bt = mt_input(g, mt_shape2(1, d), buf_c);
        for (int64_t r = 0; r < rows; r++) {
            double mu = 0, var = 0;
            for (int64_t j = 0; j < d; j++)
                mu += buf_a[r * d + j];
            mu /= (double)d;
            for (int64_t j = 0; j < d; j++) {
                var += (buf_a[r * d + j] - mu) * (buf_a[r * d + j] - mu);
            }
            var /= (double)d;
            for (int64_t j = 0; j < d; j++) {
                ref[r * d + j] = buf_b[j] * (buf_a[r * d + j] - mu) / sqrt(var + eps) + buf_c[j];
            }
        }
        expect(g, mt_layer_norm(g, x, gm, bt, eps), rows * d, 1e-4, 1e-4, "layer_norm");
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t j = 0; j < d; j++) {
                ref[r * d + j] = (ref[r * d + j] - buf_c[j]) / buf_b[j];
            }
        }
        expect(g, mt_layer_norm(g, x, NULL, NULL, eps), rows * d, 1e-4, 1e-4,
               "layer_norm no gamma/beta");
        mt_graph_free(g);
    }
}

/* The fused residual + norm gives the floats of the two nodes; a residual
** that broadcasts takes the two nodes. */
static void test_add_layer_norm(void) {
    TEST("add_layer_norm [37,24] = layer_norm(x + res), and [1,24] broadcast") {
        enum { R = 37, D = 24 };
        mt_graph *g = new_graph(false);
        static float res[R * D], want[R * D], got[R * D];
        randn(buf_a, R * D);
        randn(res, R * D);
        randn(buf_b, D);
        randn(buf_c, D);
        mt_node *x = mt_input(g, mt_shape2(R, D), buf_a);
        mt_node *r = mt_input(g, mt_shape2(R, D), res);
        mt_node *r1 = mt_input(g, mt_shape2(1, D), res);
        mt_node *gm = mt_input(g, mt_shape1(D), buf_b);
        mt_node *bt = mt_input(g, mt_shape2(1, D), buf_c);
        mt_node *two = mt_layer_norm(g, mt_add(g, x, r), gm, bt, 1e-6f);
        mt_node *one = mt_add_layer_norm(g, x, r, gm, bt, 1e-6f);
        mt_node *two1 = mt_layer_norm(g, mt_add(g, x, r1), NULL, bt, 1e-6f);
        mt_node *one1 = mt_add_layer_norm(g, x, r1, NULL, bt, 1e-6f);
        CHECK_STATUS(mt_graph_forward(g));
        CHECK_STATUS(mt_node_get(two, want, R * D));
        CHECK_STATUS(mt_node_get(one, got, R * D));
        CHECK(memcmp(want, got, sizeof want) == 0, "fused: other floats than add + layer_norm");
        CHECK_STATUS(mt_node_get(two1, want, R * D));
        CHECK_STATUS(mt_node_get(one1, got, R * D));
        CHECK(memcmp(want, got, sizeof want) == 0, "broadcast residual: other floats");
        CHECK(mt_add_layer_norm(g, x, mt_input(g, mt_shape2(R, D + 1), buf_a), gm, bt, 1e-6f) == NULL,
              "shapes that do not add: refused");
        mt_graph_free(g);
    }
}

static void test_cross_entropy(void) {
    TEST("cross_entropy [2,2,6] label smoothing 0.1") {
        mt_graph *g = new_graph(false);
        int64_t rows = 4, v = 6;
        const int32_t labels[4] = {5, 0, 2, 2};
        randn(buf_a, rows * v);
        float ls = 0.1f;
        mt_node *x = mt_input(g, mt_shape3(2, 2, v), buf_a);
        mt_node *lab = mt_input_i32(g, mt_shape2(2, 2), labels);
        double lp[6];
        for (int64_t r = 0; r < rows; r++) {
            ref_softmax_row(buf_a + r * v, v, lp, true);
            double mean = 0;
            for (int64_t j = 0; j < v; j++)
                mean += lp[j] / (double)v;
            ref[r] = -(1.0 - ls) * lp[labels[r]] - ls * mean;
        }
        mt_node *y = mt_cross_entropy(g, x, lab, ls);
        shape_is(y, mt_shape2(2, 2));
        expect(g, y, rows, 1e-5, 1e-5, "cross_entropy ls 0.1");
        for (int64_t r = 0; r < rows; r++) {
            ref_softmax_row(buf_a + r * v, v, lp, true);
            ref[r] = -lp[labels[r]];
        }
        expect(g, mt_cross_entropy(g, x, lab, 0.0f), rows, 1e-5, 1e-5, "cross_entropy ls 0");
        mt_graph_free(g);
    }
}

static void test_attention(void) {
    TEST("attention B2 Tq3 Tk4 D8 H2, mask [2,1,1,4], weights") {
        mt_graph *g = new_graph(false);
        enum { B = 2, TQ = 3, TK = 4, D = 8, H = 2, DK = D / H };
        static float q[B * TQ * D], k[B * TK * D], v[B * TK * D];
        const float mask[B * TK] = {0, 0, 0, -99999999.0f, 0, -99999999.0f, 0, 0};
        randn(q, B * TQ * D);
        randn(k, B * TK * D);
        randn(v, B * TK * D);
        mt_node *w = NULL;
        mt_node *y = mt_attention(
            g, mt_input(g, mt_shape3(B, TQ, D), q), mt_input(g, mt_shape3(B, TK, D), k),
            mt_input(g, mt_shape3(B, TK, D), v), mt_input(g, mt_shape4(B, 1, 1, TK), mask), H, &w);
        static double wref[B * H * TQ * TK];
        for (int b = 0; b < B; b++) {
            for (int h = 0; h < H; h++) {
                for (int i = 0; i < TQ; i++) {
                    float sc[TK];
                    for (int j = 0; j < TK; j++) {
                        double s = 0;
                        for (int c = 0; c < DK; c++) {
                            s += (double)q[(b * TQ + i) * D + h * DK + c] *
                                 k[(b * TK + j) * D + h * DK + c];
                        }
                        sc[j] = (float)(s / sqrt((double)DK) + mask[b * TK + j]);
                    }
                    double *wr = wref + ((b * H + h) * TQ + i) * TK;
                    ref_softmax_row(sc, TK, wr, false);
                    for (int c = 0; c < DK; c++) {
                        double s = 0;
                        for (int j = 0; j < TK; j++)
                            s += wr[j] * v[(b * TK + j) * D + h * DK + c];
                        ref[(b * TQ + i) * D + h * DK + c] = s;
                    }
                }
            }
        }
        shape_is(y, mt_shape3(B, TQ, D));
        expect(g, y, B * TQ * D, 1e-5, 1e-4, "attention context");
        memcpy(ref, wref, sizeof wref);
        shape_is(w, mt_shape4(B, H, TQ, TK));
        expect(g, w, B * H * TQ * TK, 1e-6, 1e-4, "attention weights");
        /* dropped keys get no weight at all */
        CHECK(buf_y[3] == 0.0f && buf_y[(1 * H + 1) * TQ * TK + 1] == 0.0f,
              "masked attention weights are %g and %g", (double)buf_y[3],
              (double)buf_y[(1 * H + 1) * TQ * TK + 1]);
        mt_graph_free(g);
    }
}

static void test_gather_index(void) {
    TEST("gather_rows / index_select") {
        mt_graph *g = new_graph(false);
        randn(buf_a, 5 * 3);
        const int32_t ids[6] = {4, 0, 4, 2, 1, 3};
        mt_node *t = mt_input(g, mt_shape2(5, 3), buf_a);
        mt_node *y = mt_gather_rows(g, t, mt_input_i32(g, mt_shape2(2, 3), ids));
        shape_is(y, mt_shape3(2, 3, 3));
        for (int i = 0; i < 6; i++) {
            for (int c = 0; c < 3; c++)
                ref[i * 3 + c] = buf_a[ids[i] * 3 + c];
        }
        expect(g, y, 18, 0, 0, "gather_rows");

        randn(buf_b, 2 * 5 * 3);
        const int32_t sel[4] = {4, 0, 0, 2};
        mt_node *x = mt_input(g, mt_shape3(2, 5, 3), buf_b);
        mt_node *ids_n = mt_input_i32(g, mt_shape1(4), sel);
        y = mt_index_select(g, x, 1, ids_n);
        shape_is(y, mt_shape3(2, 4, 3));
        for (int o = 0; o < 2; o++) {
            for (int j = 0; j < 4; j++) {
                for (int c = 0; c < 3; c++)
                    ref[(o * 4 + j) * 3 + c] = buf_b[(o * 5 + sel[j]) * 3 + c];
            }
        }
        expect(g, y, 24, 0, 0, "index_select axis 1");
        y = mt_index_select(g, x, 0, mt_input_i32(g, mt_shape1(3), (const int32_t[]){1, 1, 0}));
        for (int j = 0; j < 3; j++) {
            int src = j < 2 ? 1 : 0;
            for (int c = 0; c < 15; c++)
                ref[j * 15 + c] = buf_b[src * 15 + c];
        }
        expect(g, y, 45, 0, 0, "index_select axis 0 (beams)");
        y = mt_index_select(g, x, -1, mt_input_i32(g, mt_shape1(2), (const int32_t[]){2, 0}));
        for (int r = 0; r < 10; r++) {
            ref[r * 2] = buf_b[r * 3 + 2];
            ref[r * 2 + 1] = buf_b[r * 3];
        }
        expect(g, y, 20, 0, 0, "index_select axis -1");

        /* cache_append = concat(slice(index_select(cache)), cur), by direct indexing */
        enum { N0 = 3, A = 2, T = 4, B = 3, N = 4, OFF = 1, L = T - OFF + 1 };
        randn(buf_a, N0 * A * T * B);
        randn(buf_b, N * A * B);
        const int32_t rows[N] = {2, 0, 2, 1};
        mt_node *cache = mt_input(g, mt_shape4(N0, A, T, B), buf_a);
        mt_node *cur = mt_input(g, mt_shape4(N, A, 1, B), buf_b);
        y = mt_cache_append(g, cache, mt_input_i32(g, mt_shape1(N), rows), OFF, cur);
        shape_is(y, mt_shape4(N, A, L, B));
        for (int i = 0; i < N; i++)
            for (int a = 0; a < A; a++)
                for (int p = 0; p < L; p++)
                    for (int c = 0; c < B; c++)
                        ref[((i * A + a) * L + p) * B + c] =
                            p < L - 1 ? buf_a[((rows[i] * A + a) * T + OFF + p) * B + c]
                                      : buf_b[(i * A + a) * B + c];
        expect(g, y, N * A * L * B, 0, 0, "cache_append");
        y = mt_cache_append(g, cache, NULL, 0, mt_input(g, mt_shape4(N0, A, 1, B), buf_b));
        for (int i = 0; i < N0; i++)
            for (int a = 0; a < A; a++)
                for (int p = 0; p <= T; p++)
                    for (int c = 0; c < B; c++)
                        ref[((i * A + a) * (T + 1) + p) * B + c] =
                            p < T ? buf_a[((i * A + a) * T + p) * B + c]
                                  : buf_b[(i * A + a) * B + c];
        expect(g, y, N0 * A * (T + 1) * B, 0, 0, "cache_append without ids");
        mt_graph_free(g);
    }
}

static void test_concat_slice_permute(void) {
    TEST("concat / slice / permute / transpose / reshape") {
        mt_graph *g = new_graph(false);
        randn(buf_a, 2 * 3 * 2);
        randn(buf_b, 2 * 1 * 2);
        mt_node *a = mt_input(g, mt_shape3(2, 3, 2), buf_a);
        mt_node *b = mt_input(g, mt_shape3(2, 1, 2), buf_b);
        mt_node *xs[2] = {a, b};
        mt_node *y = mt_concat(g, xs, 2, 1);
        shape_is(y, mt_shape3(2, 4, 2));
        for (int o = 0; o < 2; o++) {
            for (int j = 0; j < 4; j++) {
                for (int c = 0; c < 2; c++) {
                    ref[(o * 4 + j) * 2 + c] =
                        j < 3 ? buf_a[(o * 3 + j) * 2 + c] : buf_b[o * 2 + c];
                }
            }
        }
        expect(g, y, 16, 0, 0, "concat axis 1");

        /* 9 inputs: a tree of concats, order kept */
        mt_node *many[9];
        for (int i = 0; i < 9; i++)
            many[i] = i % 2 ? b : mt_slice(g, a, 1, i % 3, 1);
        y = mt_concat(g, many, 9, 1);
        shape_is(y, mt_shape3(2, 9, 2));
        for (int o = 0; o < 2; o++) {
            for (int i = 0; i < 9; i++) {
                for (int c = 0; c < 2; c++) {
                    ref[(o * 9 + i) * 2 + c] =
                        i % 2 ? buf_b[o * 2 + c] : buf_a[(o * 3 + i % 3) * 2 + c];
                }
            }
        }
        expect(g, y, 36, 0, 0, "concat of 9 (slices inside)");

        randn(buf_c, 2 * 3 * 4);
        mt_node *x = mt_input(g, mt_shape3(2, 3, 4), buf_c);
        const int perm[3] = {2, 0, 1};
        y = mt_permute(g, x, perm);
        shape_is(y, mt_shape3(4, 2, 3));
        for (int i = 0; i < 4; i++) {
            for (int j = 0; j < 2; j++) {
                for (int l = 0; l < 3; l++)
                    ref[(i * 2 + j) * 3 + l] = buf_c[(j * 3 + l) * 4 + i];
            }
        }
        expect(g, y, 24, 0, 0, "permute 2,0,1");
        y = mt_transpose(g, x, -1, 1);
        shape_is(y, mt_shape3(2, 4, 3));
        for (int i = 0; i < 2; i++) {
            for (int j = 0; j < 4; j++) {
                for (int l = 0; l < 3; l++)
                    ref[(i * 4 + j) * 3 + l] = buf_c[(i * 3 + l) * 4 + j];
            }
        }
        expect(g, y, 24, 0, 0, "transpose -1,1");
        y = mt_slice(g, x, -1, 1, 2);
        shape_is(y, mt_shape3(2, 3, 2));
        for (int r = 0; r < 6; r++) {
            ref[r * 2] = buf_c[r * 4 + 1];
            ref[r * 2 + 1] = buf_c[r * 4 + 2];
        }
        expect(g, y, 12, 0, 0, "slice axis -1");
        y = mt_reshape(g, x, mt_shape2(-1, 6));
        shape_is(y, mt_shape2(4, 6));
        for (int i = 0; i < 24; i++)
            ref[i] = buf_c[i];
        expect(g, y, 24, 0, 0, "reshape -1");
        mt_graph_free(g);
    }
}

/* The f16 value of x as a float (what mt_node_get gives for an f16 node). */
static double f16_of(float x) { return mt_f16_to_f32(mt_f32_to_f16(x)); }

/* bfloat16 storage (the contexts of MT_CACHE_F16_BF16_CONTEXT): mt_cast there
** and back (kcpu_bf16_of's values), mt_cast_pairs' layout [..., 2, L] ->
** [..., L, 2] (read back as floats: element i of pair row r at 2 (r L + i)
** + z), concat, slice and index_select moving bfloat16 values as the f32
** ops move the rounded ones, and the refusals: a cast between two 16-bit
** types, pairs of a [..., 3, L] input. */
static void test_bf16_storage(void) {
    TEST("bfloat16 storage: cast, cast_pairs, concat, slice, index_select") {
        mt_graph *g = new_graph(false);
        randn(buf_a, 2 * 2 * 9);
        mt_node *a = mt_input(g, mt_shape3(2, 2, 9), buf_a);
        mt_node *b16 = mt_cast(g, a, MT_BF16);
        CHECK(b16 && mt_node_dtype(b16) == MT_BF16, "mt_cast to bfloat16: dtype");
        for (int i = 0; i < 36; i++)
            ref[i] = kcpu_bf16_val(kcpu_bf16_of(buf_a[i]));
        expect(g, mt_cast(g, b16, MT_F32), 36, 0, 0, "cast to bfloat16 and back");
        mt_graph_free(g);

        g = new_graph(false);
        a = mt_input(g, mt_shape3(2, 2, 9), buf_a);
        mt_node *pr = mt_cast_pairs(g, a);
        CHECK(pr && mt_node_shape(pr).ndim == 3 && mt_node_shape(pr).dim[1] == 9 &&
                  mt_node_shape(pr).dim[2] == 2 && mt_node_dtype(pr) == MT_BF16,
              "mt_cast_pairs: [2, 9, 2] bfloat16");
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < 9; i++)
                for (int z = 0; z < 2; z++)
                    ref[(r * 9 + i) * 2 + z] =
                        kcpu_bf16_val(kcpu_bf16_of(buf_a[(r * 2 + z) * 9 + i]));
        expect(g, pr, 36, 0, 0, "cast_pairs");
        mt_graph_free(g);

        g = new_graph(false);
        a = mt_input(g, mt_shape3(2, 2, 9), buf_a);
        b16 = mt_cast(g, a, MT_BF16);
        mt_node *ar = mt_cast(g, b16, MT_F32); /* the rounded values in f32 */
        mt_node *ids = mt_input_i32(g, mt_shape1(3), (const int32_t[]){1, 0, 1});
        mt_node *two[2] = {b16, mt_slice(g, b16, 2, 3, 4)},
                *ftwo[2] = {ar, mt_slice(g, ar, 2, 3, 4)};
        mt_node *mv = mt_index_select(g, mt_concat(g, two, 2, 2), 0, ids);
        mt_node *fmv = mt_index_select(g, mt_concat(g, ftwo, 2, 2), 0, ids);
        mt_graph_keep(g, fmv);
        mt_node *y = mt_cast(g, mv, MT_F32);
        CHECK(mv && mt_node_dtype(mv) == MT_BF16, "moves keep bfloat16");
        CHECK_STATUS(mt_graph_forward(g));
        CHECK_STATUS(mt_node_get(fmv, buf_b, 3 * 2 * 13));
        for (int i = 0; i < 3 * 2 * 13; i++)
            ref[i] = buf_b[i];
        expect(g, y, 3 * 2 * 13, 0, 0, "concat, slice, index_select of bfloat16");
        mt_graph_free(g);

        g = new_graph(false);
        mt_node *x = mt_input(g, mt_shape3(2, 3, 4), buf_a);
        CHECK(mt_cast(g, mt_cast(g, x, MT_F16), MT_BF16) == NULL &&
                  strstr(mt_errmsg(), "mt_cast") != NULL,
              "a cast from f16 to bfloat16: %s", mt_errmsg());
        mt_graph_free(g);
        g = new_graph(false);
        x = mt_input(g, mt_shape3(2, 3, 4), buf_a);
        CHECK(mt_cast_pairs(g, x) == NULL && strstr(mt_errmsg(), "mt_cast_pairs") != NULL,
              "pairs of [2, 3, 4]: %s", mt_errmsg());
        mt_graph_free(g);
    }
}

static void test_f16_storage(void) {
    TEST("f16 storage: cast, concat, index_select, slice") {
        mt_graph *g = new_graph(false);
        randn(buf_a, 3 * 5 * 7);
        buf_a[0] = 1.0f + 1.0f / 2048; /* a tie: rounds to even (1.0) */
        buf_a[1] = 1.0f + 3.0f / 2048; /* a tie: rounds to even (1 + 2^-9) */
        buf_a[2] = 3e-6f;              /* a subnormal f16 */
        buf_a[3] = 65504.0f;           /* the largest f16 */
        mt_node *a = mt_input(g, mt_shape3(3, 5, 7), buf_a);
        mt_node *h = mt_cast(g, a, MT_F16);
        CHECK(h && mt_node_dtype(h) == MT_F16, "mt_cast to f16: dtype");
        for (int i = 0; i < 105; i++)
            ref[i] = f16_of(buf_a[i]);
        CHECK(ref[0] == 1.0 && ref[1] == 1.0 + 1.0 / 512 && ref[2] > 0 && ref[2] != 3e-6f,
              "mt_f32_to_f16: ties to even, subnormals");
        expect(g, h, 105, 0, 0, "cast to f16");
        mt_node *back = mt_cast(g, h, MT_F32);
        CHECK(back && mt_node_dtype(back) == MT_F32, "mt_cast back: dtype");
        expect(g, back, 105, 0, 0, "cast back to f32 (exact)");
        CHECK(mt_cast(g, a, MT_F32) == a, "a cast to the same dtype is the input");

        /* concat along each axis (odd widths in bytes) and index_select
        ** with repeats, against the f32 ops rounded */
        randn(buf_b, 3 * 2 * 7);
        mt_node *b = mt_input(g, mt_shape3(3, 2, 7), buf_b);
        mt_node *parts[2] = {h, mt_cast(g, b, MT_F16)}, *fparts[2] = {a, b};
        mt_node *y = mt_concat(g, parts, 2, 1), *fy = mt_concat(g, fparts, 2, 1);
        CHECK(y && mt_node_dtype(y) == MT_F16 && shape_is(y, mt_shape3(3, 7, 7)),
              "concat of f16: dtype and shape");
        CHECK_STATUS(mt_graph_forward(g));
        CHECK_STATUS(mt_node_get(fy, buf_c, 147));
        for (int i = 0; i < 147; i++)
            ref[i] = f16_of(buf_c[i]);
        expect(g, y, 147, 0, 0, "concat of f16 along axis 1");
        for (int ax = 0; ax < 3; ax += 2) {
            mt_node *x2[2] = {h, h}, *f2[2] = {a, a};
            y = mt_concat(g, x2, 2, ax);
            fy = mt_concat(g, f2, 2, ax);
            CHECK_STATUS(mt_graph_forward(g));
            CHECK_STATUS(mt_node_get(fy, buf_c, 210));
            for (int i = 0; i < 210; i++)
                ref[i] = f16_of(buf_c[i]);
            expect(g, y, 210, 0, 0, ax ? "concat of f16 along axis 2" : "concat of f16 axis 0");
        }
        /* index_select with repeats and slice (an odd start and length)
        ** along each axis */
        int32_t ids[4] = {2, 0, 2, 1};
        for (int op = 0; op < 2; op++) {
            for (int ax = 0; ax < 3; ax++) {
                mt_node *ni = mt_input_i32(g, mt_shape1(4), ids);
                int64_t len = mt_node_shape(h).dim[ax] - 1;
                y = op ? mt_slice(g, h, ax, 1, len) : mt_index_select(g, h, ax, ni);
                fy = op ? mt_slice(g, a, ax, 1, len) : mt_index_select(g, a, ax, ni);
                const char *what = op ? "slice of f16" : "index_select of f16";
                CHECK(y && mt_node_dtype(y) == MT_F16, "%s: dtype", what);
                CHECK_STATUS(mt_graph_forward(g));
                int64_t n = mt_node_numel(fy);
                CHECK_STATUS(mt_node_get(fy, buf_c, n));
                for (int64_t i = 0; i < n; i++)
                    ref[i] = f16_of(buf_c[i]);
                expect(g, y, n, 0, 0, what);
            }
        }
        mt_graph_free(g);

        /* beyond the range: +-inf */
        g = new_graph(false);
        float big[2] = {70000.0f, -1e9f};
        y = mt_cast(g, mt_input(g, mt_shape1(2), big), MT_F16);
        CHECK_STATUS(mt_graph_forward(g));
        CHECK_STATUS(mt_node_get(y, buf_y, 2));
        CHECK(isinf(buf_y[0]) && buf_y[0] > 0 && isinf(buf_y[1]) && buf_y[1] < 0,
              "cast beyond the f16 range: %g %g", buf_y[0], buf_y[1]);
        mt_graph_free(g);

        /* refusals */
        struct {
            const char *op;
            int what;
        } bad[] = {{"mt_concat", 0}, {"mt_permute", 1}, {"mt_cast", 2}, {"mt_add", 3}};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            g = new_graph(false);
            mt_node *x = mt_input(g, mt_shape2(2, 3), buf_a), *x16 = mt_cast(g, x, MT_F16);
            const int perm[2] = {1, 0};
            mt_node *two[2] = {x, x16};
            y = bad[i].what == 0   ? mt_concat(g, two, 2, 0)
                : bad[i].what == 1 ? mt_permute(g, x16, perm)
                : bad[i].what == 2 ? mt_cast(g, x, MT_I32)
                                   : mt_add(g, x16, x16);
            CHECK(y == NULL && mt_graph_status(g) == MT_ERR_INVALID &&
                      strstr(mt_errmsg(), bad[i].op) != NULL,
                  "f16 refusal %zu: %s", i, mt_errmsg());
            mt_graph_free(g);
        }
        mt_params *p = NULL;
        CHECK_STATUS(mt_params_init(NULL, 1, &p));
        g = new_graph(true);
        mt_node *w = mt_param(g, p, "w", mt_shape1(4), (mt_init){.kind = MT_INIT_ONES});
        CHECK(mt_cast(g, w, MT_F16) == NULL && strstr(mt_errmsg(), "mt_cast") != NULL,
              "a cast of a parameter in training: %s", mt_errmsg());
        mt_graph_free(g);
        mt_params_free(p);
    }
}

/* mt_pack_rows_kt (a fold of transposed self-attention keys in one op):
** the bytes of mt_pack_rows over the keys permuted and cast to f16, for
** head sizes of whole and partial vectors, 1 to 20 recent positions (one or
** two heads per transpose in the AVX-512 kernel), histories of 0 to 70
** positions (line copies of whole vectors, overlapping and masked tails),
** whole rows and per-row lengths and starts (top-up folds), b's rows in
** order or picked by b_ids; values that round (and some beyond f16's
** range); shapes that do not fit fail. */
static void test_pack_rows_kt(void) {
    TEST("pack_rows_kt: a fold of transposed keys as permute + cast + pack") {
        static const int64_t hs[] = {1, 3, 8}, dks[] = {5, 16, 17, 32, 40};
        static const int64_t lbs[] = {1, 8, 9, 20}, las[] = {0, 3, 8, 17, 33, 70};
        static float a[4 * 8 * 40 * 70], b[7 * 8 * 20 * 40];
        int cases = 0, bad = 0;
        for (size_t hi = 0; hi < 3; hi++)
            for (size_t di = 0; di < 5; di++)
                for (size_t bi = 0; bi < 4; bi++)
                    for (size_t ai = 0; ai < 6; ai++)
                        for (int varlen = 0; varlen < 2; varlen++) {
                            int64_t h = hs[hi], dk = dks[di], lb = lbs[bi], la = las[ai], n = 5;
                            for (int64_t i = 0; i < 4 * h * dk * la; i++)
                                a[i] = 3.0f * mt_rng_normal(&rng);
                            for (int64_t i = 0; i < (n + 2) * h * lb * dk; i++)
                                b[i] = (i % 97 == 5 ? 1e5f : 3.0f) * mt_rng_normal(&rng);
                            int32_t ids[5] = {3, 0, 3, 1, 2}, len[5], st[5];
                            for (int r = 0; r < 5; r++) {
                                len[r] = varlen ? (int32_t)((r * 7) % (la + 1)) : (int32_t)la;
                                st[r] = varlen ? (int32_t)((r * 3) % lb) : 0;
                            }
                            int64_t out = la + lb + (varlen ? 2 : 0);
                            mt_graph *g = new_graph(false);
                            mt_node *na =
                                la ? mt_cast(g, mt_input(g, mt_shape4(4, h, dk, la), a), MT_F16)
                                   : NULL;
                            mt_node *nb = mt_input(g, mt_shape4(n, h, lb, dk), b);
                            mt_node *ni = mt_input_i32(g, mt_shape1(n), ids);
                            mt_node *nl = varlen ? mt_input_i32(g, mt_shape1(n), len) : NULL;
                            mt_node *ns = varlen ? mt_input_i32(g, mt_shape1(n), st) : NULL;
                            static const int swap[4] = {0, 1, 3, 2};
                            /* b's rows picked by b_ids (repeated, out of order) or in order */
                            int32_t bsel[5] = {6, 0, 3, 3, 1};
                            mt_node *nsel =
                                (ai + bi) % 2 ? mt_input_i32(g, mt_shape1(n), bsel) : NULL;
                            if (nsel) nb = mt_input(g, mt_shape4(n + 2, h, lb, dk), b);
                            mt_node *want = mt_pack_rows(
                                g, na, na ? ni : NULL, nl,
                                mt_cast(g, mt_permute(g, nb, swap), MT_F16), nsel, ns, 3, out);
                            mt_node *got =
                                mt_pack_rows_kt(g, na, na ? ni : NULL, nl, nb, nsel, ns, out);
                            CHECK(got && mt_node_dtype(got) == MT_F16 &&
                                      shape_is(got, mt_shape4(n, h, dk, out)),
                                  "pack_rows_kt: dtype and shape: %s", mt_errmsg());
                            mt_node *d =
                                mt_sub(g, mt_cast(g, got, MT_F32), mt_cast(g, want, MT_F32));
                            mt_node *w32 = mt_cast(g, want, MT_F32);
                            int64_t m = n * h * dk * out;
                            if (!CHECK(mt_graph_forward(g) == MT_OK, "pack_rows_kt: %s",
                                       mt_errmsg())) {
                                mt_graph_free(g);
                                continue;
                            }
                            static float dv[5 * 8 * 40 * 92], wv[5 * 8 * 40 * 92];
                            CHECK_STATUS(mt_node_get(d, dv, m));
                            CHECK_STATUS(mt_node_get(w32, wv, m));
                            for (int64_t i = 0; i < m; i++) /* equal, infinities included */
                                bad += !(dv[i] == 0.0f || (isnan(dv[i]) && isinf(wv[i])));
                            cases++;
                            mt_graph_free(g);
                        }
        CHECK(bad == 0 && cases == 720, "pack_rows_kt: %d values differ in %d cases", bad, cases);
        /* keys that are not [N, H, Lb, dk] f32 against an f16 [Na, H, dk, La]
        ** history: refused */
        mt_graph *g = new_graph(false);
        mt_node *y = mt_pack_rows_kt(g, mt_cast(g, mt_input(g, mt_shape4(2, 2, 3, 4), a), MT_F16),
                                     mt_input_i32(g, mt_shape1(2), (int32_t[]){0, 1}), NULL,
                                     mt_input(g, mt_shape4(2, 2, 5, 4), b), NULL, NULL, 9);
        CHECK(y == NULL && strstr(mt_errmsg(), "mt_pack_rows_kt") != NULL,
              "pack_rows_kt: a head size that differs: %s", mt_errmsg());
        mt_graph_free(g);
    }
}

/* mt_pack_rows: rows of variable length packed from the left (top-up
** folds), f32 and f16, with and without the first input, on the middle
** and the last axis, against the definition; a row longer than the result
** fails at forward. */
static void test_pack_rows(void) {
    TEST("pack_rows: per-row lengths packed from the left") {
        /* a [3, 2, 5, 3] (3 rows, A = 2, La = 5, B = 3), b [4, 2, 4, 3] */
        float a[90], b[96];
        for (int i = 0; i < 90; i++)
            a[i] = (float)(i + 1);
        for (int i = 0; i < 96; i++)
            b[i] = (float)(-i - 1);
        int32_t ids[4] = {2, 0, 2, 1}, len[4] = {5, 0, 3, 1}, st[4] = {0, 2, 4, 1};
        const int64_t out_len = 9; /* row 0: 5 + 4 */
        for (int f16 = 0; f16 < 2; f16++) {
            for (int with_a = 0; with_a < 2; with_a++) {
                mt_graph *g = new_graph(false);
                mt_node *na = mt_input(g, mt_shape4(3, 2, 5, 3), a);
                mt_node *nb = mt_input(g, mt_shape4(4, 2, 4, 3), b);
                if (f16) {
                    na = mt_cast(g, na, MT_F16);
                    nb = mt_cast(g, nb, MT_F16);
                }
                /* without a, ids and lengths are not needed */
                mt_node *y = mt_pack_rows(g, with_a ? na : NULL,
                                          with_a ? mt_input_i32(g, mt_shape1(4), ids) : NULL,
                                          with_a ? mt_input_i32(g, mt_shape1(4), len) : NULL, nb,
                                          NULL, mt_input_i32(g, mt_shape1(4), st), 2, out_len);
                CHECK(y && mt_node_dtype(y) == (f16 ? MT_F16 : MT_F32) &&
                          shape_is(y, mt_shape4(4, 2, out_len, 3)),
                      "pack_rows: dtype and shape");
                if (f16) y = mt_cast(g, y, MT_F32);
                for (int r = 0; r < 4; r++)
                    for (int aa = 0; aa < 2; aa++)
                        for (int p = 0; p < out_len; p++)
                            for (int c = 0; c < 3; c++) {
                                int l = with_a ? len[r] : 0, nbr = 4 - st[r];
                                double v = 0.0;
                                if (p < l)
                                    v = a[((ids[r] * 2 + aa) * 5 + p) * 3 + c];
                                else if (p < l + nbr)
                                    v = b[((r * 2 + aa) * 4 + st[r] + p - l) * 3 + c];
                                ref[((r * 2 + aa) * out_len + p) * 3 + c] = v;
                            }
                expect(g, y, 4 * 2 * out_len * 3, 0, 0,
                       with_a ? "pack_rows of a and b" : "pack_rows of b alone");
                mt_graph_free(g);
            }
        }
        /* the last axis: keys transposed [N, H, dk, positions] */
        mt_graph *g = new_graph(false);
        mt_node *y =
            mt_pack_rows(g, mt_input(g, mt_shape3(3, 2, 15), a), mt_input_i32(g, mt_shape1(4), ids),
                         mt_input_i32(g, mt_shape1(4), len), mt_input(g, mt_shape3(4, 2, 12), b),
                         NULL, mt_input_i32(g, mt_shape1(4), st), -1, 17);
        for (int r = 0; r < 4; r++)
            for (int aa = 0; aa < 2; aa++)
                for (int p = 0; p < 17; p++)
                    ref[(r * 2 + aa) * 17 + p] = p < len[r] ? a[(ids[r] * 2 + aa) * 15 + p]
                                                 : p < len[r] + 12 - st[r]
                                                     ? b[(r * 2 + aa) * 12 + st[r] + p - len[r]]
                                                     : 0.0;
        expect(g, y, 4 * 2 * 17, 0, 0, "pack_rows along the last axis");
        mt_graph_free(g);
        /* whole rows (no lengths, no starts: a fold of rows at one position):
        ** concat(index_select(a, ids), b) in one copy, nothing zeroed first
        ** (every value of a and b is nonzero, so a gap would show), f32 and
        ** f16, the middle and the last axis */
        for (int f16 = 0; f16 < 2; f16++) {
            for (int last = 0; last < 2; last++) {
                g = new_graph(false);
                mt_shape sa = last ? mt_shape3(3, 2, 15) : mt_shape4(3, 2, 5, 3);
                mt_shape sb = last ? mt_shape3(4, 2, 12) : mt_shape4(4, 2, 4, 3);
                mt_node *na = mt_input(g, sa, a), *nb = mt_input(g, sb, b);
                if (f16) {
                    na = mt_cast(g, na, MT_F16);
                    nb = mt_cast(g, nb, MT_F16);
                }
                int64_t la = last ? 15 : 5, lb = last ? 12 : 4, inner = last ? 1 : 3;
                y = mt_pack_rows(g, na, mt_input_i32(g, mt_shape1(4), ids), NULL, nb, NULL, NULL,
                                 last ? -1 : 2, la + lb);
                CHECK(
                    y && shape_is(y, last ? mt_shape3(4, 2, la + lb) : mt_shape4(4, 2, la + lb, 3)),
                    "pack_rows of whole rows: shape");
                if (f16) y = mt_cast(g, y, MT_F32);
                for (int r = 0; r < 4; r++)
                    for (int aa = 0; aa < 2; aa++)
                        for (int64_t p = 0; p < la + lb; p++)
                            for (int64_t c = 0; c < inner; c++)
                                ref[((r * 2 + aa) * (la + lb) + p) * inner + c] =
                                    p < la ? a[((ids[r] * 2 + aa) * la + p) * inner + c]
                                           : b[((r * 2 + aa) * lb + p - la) * inner + c];
                expect(g, y, 4 * 2 * (la + lb) * inner, 0, 0, "pack_rows of whole rows");
                mt_graph_free(g);
            }
        }
        /* whole rows with an id outside a: refused at forward */
        {
            int32_t bad[4] = {0, 3, 1, 2};
            g = new_graph(false);
            y = mt_pack_rows(g, mt_input(g, mt_shape4(3, 2, 5, 3), a),
                             mt_input_i32(g, mt_shape1(4), bad), NULL,
                             mt_input(g, mt_shape4(4, 2, 4, 3), b), NULL, NULL, 2, 9);
            CHECK(y != NULL && mt_graph_forward(g) == MT_ERR_INVALID &&
                      strstr(mt_errmsg(), "mt_pack_rows") != NULL,
                  "pack_rows: whole rows of a row outside a: %s", mt_errmsg());
            mt_graph_free(g);
        }
        /* row 0 takes 5 + 4 positions: more than 8 */
        g = new_graph(false);
        y = mt_pack_rows(g, mt_input(g, mt_shape4(3, 2, 5, 3), a),
                         mt_input_i32(g, mt_shape1(4), ids), mt_input_i32(g, mt_shape1(4), len),
                         mt_input(g, mt_shape4(4, 2, 4, 3), b), NULL,
                         mt_input_i32(g, mt_shape1(4), st), 2, 8);
        CHECK(y != NULL && mt_graph_forward(g) == MT_ERR_INVALID &&
                  strstr(mt_errmsg(), "mt_pack_rows") != NULL,
              "pack_rows: a row longer than the result: %s", mt_errmsg());
        mt_graph_free(g);
    }
}

static void test_products(void) {
    TEST("matmul / bmm / affine with transposes") {
        mt_graph *g = new_graph(false);
        int64_t m = 3, k = 5, n = 4;
        for (int ta = 0; ta < 2; ta++) {
            for (int tb = 0; tb < 2; tb++) {
                /* two leading slices of a, b shared */
                randn(buf_a, 2 * m * k);
                randn(buf_b, k * n);
                mt_node *a = mt_input(g, ta ? mt_shape3(2, k, m) : mt_shape3(2, m, k), buf_a);
                mt_node *b = mt_input(g, tb ? mt_shape2(n, k) : mt_shape2(k, n), buf_b);
                for (int s = 0; s < 2; s++) {
                    ref_gemm(ta, tb, m, n, k, 1.0, buf_a + s * m * k, buf_b, ref + s * m * n);
                }
                char what[64];
                snprintf(what, sizeof what, "matmul ta=%d tb=%d", ta, tb);
                mt_node *y = mt_matmul(g, a, b, ta, tb);
                shape_is(y, mt_shape3(2, m, n));
                expect(g, y, 2 * m * n, 1e-5, 1e-5, what);

                randn(buf_b, 2 * k * n);
                b = mt_input(g, tb ? mt_shape3(2, n, k) : mt_shape3(2, k, n), buf_b);
                for (int s = 0; s < 2; s++) {
                    ref_gemm(ta, tb, m, n, k, 0.25, buf_a + s * m * k, buf_b + s * k * n,
                             ref + s * m * n);
                }
                snprintf(what, sizeof what, "bmm ta=%d tb=%d alpha 0.25", ta, tb);
                expect(g, mt_bmm(g, a, b, ta, tb, 0.25f), 2 * m * n, 1e-5, 1e-5, what);

                /* bmm_gather: a [3, 2, M, K] against rows (1, 0, 1) of b [2, 2, K, N]
                ** (the two slices above as b[0], their negation as b[1]) */
                enum { NA = 3 };
                const int32_t pick[NA] = {1, 0, 1};
                int64_t sz = m * k, szb = k * n, szc = m * n;
                for (int64_t j = 0; j < 2 * szb; j++)
                    buf_b[2 * szb + j] = -buf_b[j];
                randn(buf_a, NA * 2 * sz);
                mt_node *a4 =
                    mt_input(g, ta ? mt_shape4(NA, 2, k, m) : mt_shape4(NA, 2, m, k), buf_a);
                mt_node *b4 =
                    mt_input(g, tb ? mt_shape4(2, 2, n, k) : mt_shape4(2, 2, k, n), buf_b);
                for (int r = 0; r < NA; r++)
                    for (int s = 0; s < 2; s++)
                        ref_gemm(ta, tb, m, n, k, 0.5, buf_a + (r * 2 + s) * sz,
                                 buf_b + (pick[r] * 2 + s) * szb, ref + (r * 2 + s) * szc);
                snprintf(what, sizeof what, "bmm_gather ta=%d tb=%d alpha 0.5", ta, tb);
                mt_node *yg =
                    mt_bmm_gather(g, a4, b4, mt_input_i32(g, mt_shape1(NA), pick), ta, tb, 0.5f);
                shape_is(yg, mt_shape4(NA, 2, m, n));
                expect(g, yg, NA * 2 * szc, 1e-5, 1e-5, what);

                /* one row each (M = 1): runs of equal ids are one product */
                enum { NR = 6 };
                const int32_t runs[NR] = {1, 1, 0, 0, 0, 1};
                randn(buf_a, NR * 2 * k);
                mt_node *a1 =
                    mt_input(g, ta ? mt_shape4(NR, 2, k, 1) : mt_shape4(NR, 2, 1, k), buf_a);
                for (int r = 0; r < NR; r++)
                    for (int s = 0; s < 2; s++)
                        ref_gemm(ta, tb, 1, n, k, 0.5, buf_a + (r * 2 + s) * k,
                                 buf_b + (runs[r] * 2 + s) * szb, ref + (r * 2 + s) * n);
                snprintf(what, sizeof what, "bmm_gather M=1 runs ta=%d tb=%d", ta, tb);
                expect(g,
                       mt_bmm_gather(g, a1, b4, mt_input_i32(g, mt_shape1(NR), runs), ta, tb, 0.5f),
                       NR * 2 * n, 1e-5, 1e-5, what);
            }
        }
        randn(buf_a, 7 * k);
        randn(buf_b, k * n);
        randn(buf_c, n);
        ref_gemm(false, false, 7, n, k, 1.0, buf_a, buf_b, ref);
        for (int i = 0; i < 7; i++) {
            for (int j = 0; j < n; j++)
                ref[i * n + j] += buf_c[j];
        }
        mt_node *y =
            mt_affine(g, mt_input(g, mt_shape2(7, k), buf_a), mt_input(g, mt_shape2(k, n), buf_b),
                      mt_input(g, mt_shape1(n), buf_c));
        expect(g, y, 7 * n, 1e-5, 1e-5, "affine");
        mt_graph_free(g);
    }
}

static void test_reductions(void) {
    TEST("sum / mean / max over axes, sum_all") {
        mt_graph *g = new_graph(false);
        randn(buf_a, 2 * 3 * 5);
        mt_node *x = mt_input(g, mt_shape3(2, 3, 5), buf_a);
        for (int op = 0; op < 3; op++) {
            for (int ax = 0; ax < 3; ax++) {
                int64_t dims[3] = {2, 3, 5}, outer = 1, inner = 1, n = dims[ax];
                for (int i = 0; i < ax; i++)
                    outer *= dims[i];
                for (int i = ax + 1; i < 3; i++)
                    inner *= dims[i];
                for (int64_t o = 0; o < outer; o++) {
                    for (int64_t in = 0; in < inner; in++) {
                        double s = 0, mx = -INFINITY;
                        for (int64_t j = 0; j < n; j++) {
                            double v = buf_a[(o * n + j) * inner + in];
                            s += v;
                            mx = v > mx ? v : mx;
                        }
                        ref[o * inner + in] = op == 0 ? s : op == 1 ? s / (double)n : mx;
                    }
                }
                mt_node *y = op == 0   ? mt_sum(g, x, ax)
                             : op == 1 ? mt_mean(g, x, ax - 3)
                                       : mt_max(g, x, ax);
                mt_shape want = mt_shape3(2, 3, 5);
                want.dim[ax] = 1;
                shape_is(y, want);
                char what[48];
                snprintf(what, sizeof what, "%s axis %d",
                         op == 0   ? "sum"
                         : op == 1 ? "mean"
                                   : "max",
                         ax);
                expect(g, y, outer * inner, 1e-5, 1e-5, what);
            }
        }
        double s = 0;
        for (int i = 0; i < 30; i++)
            s += buf_a[i];
        ref[0] = s;
        mt_node *y = mt_sum_all(g, x);
        shape_is(y, mt_shape1(1));
        expect(g, y, 1, 1e-5, 1e-5, "sum_all");
        mt_graph_free(g);
    }
}

static void test_elementwise(void) {
    TEST("activations, broadcasting, masked_fill, highway") {
        mt_graph *g = new_graph(false);
        int64_t n = 17;
        randn(buf_a, n);
        for (int i = 0; i < n; i++)
            buf_a[i] *= 3.0f;
        mt_node *x = mt_input(g, mt_shape1(n), buf_a);
        for (int op = 0; op < 6; op++) {
            for (int i = 0; i < n; i++) {
                double v = buf_a[i];
                switch (op) {
                case 0: ref[i] = v > 0 ? v : 0; break;
                case 1: ref[i] = v * sigm(v); break;
                case 2: ref[i] = v * sigm(1.702 * v); break; /* Marian's gelu */
                case 3: ref[i] = tanh(v); break;
                case 4: ref[i] = sigm(v); break;
                default: ref[i] = exp(v); break;
                }
            }
            static const char *names[6] = {"relu", "swish", "gelu", "tanh", "sigmoid", "exp"};
            mt_node *y = op == 0   ? mt_relu(g, x)
                         : op == 1 ? mt_swish(g, x)
                         : op == 2 ? mt_gelu(g, x)
                         : op == 3 ? mt_tanh(g, x)
                         : op == 4 ? mt_sigmoid(g, x)
                                   : mt_exp(g, x);
            expect(g, y, n, 1e-6, 1e-5, names[op]);
        }
        for (int i = 0; i < n; i++)
            buf_b[i] = 0.1f + fabsf(buf_a[i]);
        mt_node *pos = mt_input(g, mt_shape1(n), buf_b);
        for (int i = 0; i < n; i++)
            ref[i] = log((double)buf_b[i]);
        expect(g, mt_ln(g, pos), n, 1e-6, 1e-5, "log");
        for (int i = 0; i < n; i++)
            ref[i] = sqrt((double)buf_b[i]);
        expect(g, mt_sqrt(g, pos), n, 1e-6, 1e-5, "sqrt");
        for (int i = 0; i < n; i++)
            ref[i] = -2.5 * buf_a[i] + 0.75;
        expect(g, mt_add_scalar(g, mt_scale(g, mt_neg(g, x), 2.5f), 0.75f), n, 1e-6, 1e-5,
               "neg, scale, add_scalar");

        /* [2,1,3] op [4,1] -> [2,4,3] */
        randn(buf_a, 6);
        randn(buf_b, 4);
        for (int i = 0; i < 4; i++)
            buf_b[i] = buf_b[i] > 0 ? buf_b[i] + 0.5f : buf_b[i] - 0.5f;
        mt_node *a = mt_input(g, mt_shape3(2, 1, 3), buf_a);
        mt_node *b = mt_input(g, mt_shape2(4, 1), buf_b);
        for (int op = 0; op < 4; op++) {
            for (int i = 0; i < 2; i++) {
                for (int j = 0; j < 4; j++) {
                    for (int l = 0; l < 3; l++) {
                        double av = buf_a[i * 3 + l], bv = buf_b[j];
                        ref[(i * 4 + j) * 3 + l] = op == 0   ? av + bv
                                                   : op == 1 ? av - bv
                                                   : op == 2 ? av * bv
                                                             : av / bv;
                    }
                }
            }
            static const char *names[4] = {"add bcast", "sub bcast", "mul bcast", "div bcast"};
            mt_node *y = op == 0   ? mt_add(g, a, b)
                         : op == 1 ? mt_sub(g, a, b)
                         : op == 2 ? mt_mul(g, a, b)
                                   : mt_div(g, a, b);
            shape_is(y, mt_shape3(2, 4, 3));
            expect(g, y, 24, 1e-6, 1e-5, names[op]);
        }

        randn(buf_a, 12);
        const float mask[4] = {1, 0, 0, 1};
        mt_node *x2 = mt_input(g, mt_shape3(3, 1, 4), buf_a);
        for (int i = 0; i < 12; i++)
            ref[i] = mask[i % 4] != 0 ? buf_a[i] : -7.0;
        expect(g, mt_masked_fill(g, x2, mt_input(g, mt_shape1(4), mask), -7.0f), 12, 0, 0,
               "masked_fill");

        randn(buf_a, 6);
        randn(buf_b, 6);
        randn(buf_c, 3);
        for (int i = 0; i < 6; i++) {
            double s = sigm(buf_c[i % 3]);
            ref[i] = s * buf_a[i] + (1 - s) * buf_b[i];
        }
        expect(g,
               mt_highway(g, mt_input(g, mt_shape2(2, 3), buf_a),
                          mt_input(g, mt_shape2(2, 3), buf_b), mt_input(g, mt_shape1(3), buf_c)),
               6, 1e-6, 1e-5, "highway");
        mt_graph_free(g);
    }
}

static void test_dropout(void) {
    TEST("dropout: inverted mask in training, identity otherwise") {
        mt_graph *g = new_graph(true);
        int64_t n = 4000;
        for (int i = 0; i < n; i++)
            buf_a[i] = 2.0f;
        mt_node *x = mt_input(g, mt_shape1(n), buf_a);
        float p = 0.25f;
        mt_node *y = mt_dropout(g, x, p);
        CHECK(y != NULL && y != x, "training dropout builds a node");
        if (y != NULL && CHECK(mt_graph_forward(g) == MT_OK, "forward: %s", mt_errmsg())) {
            CHECK_STATUS(mt_node_get(y, buf_y, n));
            int zeros = 0, bad = 0;
            for (int i = 0; i < n; i++) {
                if (buf_y[i] == 0.0f) {
                    zeros++;
                } else if (fabsf(buf_y[i] - 2.0f / (1.0f - p)) > 1e-6f) {
                    bad++;
                }
            }
            CHECK(bad == 0, "%d dropout outputs are neither 0 nor x/(1-p)", bad);
            CHECK(fabs(zeros / (double)n - p) < 0.03, "dropped fraction %g, want %g",
                  zeros / (double)n, (double)p);
        }
        CHECK(mt_dropout(g, x, 0.0f) == x, "p = 0 is the identity");
        mt_graph_free(g);
        g = new_graph(false);
        x = mt_input(g, mt_shape1(3), buf_a);
        CHECK(mt_dropout(g, x, 0.5f) == x, "inference dropout is the identity");
        mt_graph_free(g);
    }
}

/* A constant subgraph in a memoizing inference graph: the ops' values (and
** their aux scratch) are computed once, reused across clears, and
** recomputed after the parameters change. */
static void ref_memo(const float *w, const float *gm, const float *x, double *out) {
    /* c = layer_norm(transpose(reshape(W [12] -> [3, 4])), gamma) : [4, 3]; y = x [2,4] . c */
    double c[4][3];
    for (int i = 0; i < 4; i++) {
        double mu = 0, var = 0;
        for (int j = 0; j < 3; j++)
            mu += w[j * 4 + i] / 3.0;
        for (int j = 0; j < 3; j++)
            var += (w[j * 4 + i] - mu) * (w[j * 4 + i] - mu) / 3.0;
        for (int j = 0; j < 3; j++)
            c[i][j] = gm[j] * (w[j * 4 + i] - mu) / sqrt(var + 1e-6);
    }
    for (int r = 0; r < 2; r++) {
        for (int j = 0; j < 3; j++) {
            double s = 0;
            for (int i = 0; i < 4; i++)
                s += x[r * 4 + i] * c[i][j];
            out[r * 3 + j] = s;
        }
    }
}

static void test_memoized(void) {
    TEST("memoized constant subgraph (reshape, transpose, layer_norm) across clears") {
        mt_params *p = NULL;
        CHECK_STATUS(mt_params_init(NULL, 3, &p));
        mt_graph_params gp = mt_graph_default_params();
        gp.memoize = true;
        gp.workspace_bytes = 1 << 16;
        mt_graph *g = NULL;
        CHECK_STATUS(mt_graph_init(NULL, gp, &g));
        float w[12], gm[3], x[8];
        randn(w, 12);
        randn(gm, 3);
        randn(x, 8);
        for (int round = 0; round < 4 && p && g; round++) {
            if (round == 3) { /* new weights: the cache must not serve old values */
                mt_tensor *t = mt_params_find(p, "W");
                randn(w, 12);
                if (t) CHECK_STATUS(mt_tensor_set(t, w, sizeof w));
                mt_params_touch(p);
            }
            mt_graph_clear(g);
            mt_node *wn = mt_param(g, p, "W", mt_shape1(12), mt_init_values(w, 12));
            mt_node *gn = mt_param(g, p, "gamma", mt_shape1(3), mt_init_values(gm, 3));
            mt_node *c = mt_layer_norm(g, mt_transpose(g, mt_reshape(g, wn, mt_shape2(3, 4)), 0, 1),
                                       gn, NULL, 1e-6f);
            mt_node *y = mt_matmul(g, mt_input(g, mt_shape2(2, 4), x), c, false, false);
            ref_memo(w, gm, x, ref);
            char what[32];
            snprintf(what, sizeof what, "memo round %d", round);
            expect(g, y, 6, 1e-5, 1e-5, what);
        }
        if (g) {
            mt_graph_stats st = mt_graph_get_stats(g);
            CHECK(st.memo_hits > 0, "no memo hits");
        }
        mt_graph_free(g);
        mt_params_free(p);
    }
}

/* Forward and backward of every op family allocate nothing: after a warm-up
** round, the same graph is rebuilt and run with every allocation failing. */
static mt_node *all_ops_loss(mt_graph *g, mt_params *p) {
    mt_node *emb = mt_param(g, p, "emb", mt_shape2(11, 8), mt_init_normal(0, 1));
    mt_node *w = mt_param(g, p, "w", mt_shape2(8, 8), mt_init_glorot_uniform());
    mt_node *b = mt_param(g, p, "b", mt_shape1(8), mt_init_normal(0, 0.1f));
    mt_node *gm = mt_param(g, p, "gamma", mt_shape1(8), mt_init_ones());
    mt_node *bt = mt_param(g, p, "beta", mt_shape1(8), mt_init_zeros());
    mt_node *out = mt_param(g, p, "out", mt_shape2(8, 11), mt_init_glorot_uniform());
    const int32_t ids[6] = {1, 5, 7, 2, 10, 0}, labels[6] = {5, 7, 2, 10, 0, 3};
    const float mask[3] = {0, 0, -99999999.0f};
    mt_node *x = mt_gather_rows(g, emb, mt_input_i32(g, mt_shape2(2, 3), ids)); /* [2,3,8] */
    mt_node *h = mt_gelu(g, mt_affine(g, x, w, b));
    h = mt_add(g, h, mt_attention(g, h, x, x, mt_input(g, mt_shape4(1, 1, 1, 3), mask), 2, NULL));
    h = mt_layer_norm(g, mt_dropout(g, h, 0.1f), gm, bt, 1e-6f);
    mt_node *parts[2] = {mt_slice(g, h, 2, 0, 4), mt_slice(g, h, 2, 4, 4)};
    h = mt_concat(g, parts, 2, 2);
    h = mt_index_select(g, h, 0, mt_input_i32(g, mt_shape1(2), (const int32_t[]){1, 0}));
    h = mt_highway(g, h, mt_tanh(g, h), mt_sigmoid(g, h));
    mt_node *logits = mt_matmul(g, h, out, false, false); /* [2,3,11] */
    mt_node *ce = mt_cross_entropy(g, logits, mt_input_i32(g, mt_shape2(2, 3), labels), 0.1f);
    mt_node *extra = mt_mean(g, mt_max(g, mt_softmax(g, logits), -1), 0);
    return mt_add(g, mt_sum_all(g, ce), mt_sum_all(g, extra));
}

static void test_no_alloc(void) {
    TEST("forward + backward allocate nothing (all op families)") {
        mt_params *p = NULL;
        mt_graph *g = NULL;
        CHECK_STATUS(mt_params_init(NULL, 9, &p));
        mt_graph_params gp = mt_graph_default_params();
        gp.training = true;
        gp.workspace_bytes = 1 << 20;
        CHECK_STATUS(mt_graph_init(NULL, gp, &g));
        if (p && g) {
            mt_node *loss = all_ops_loss(g, p);
            CHECK_STATUS(mt_graph_forward(g));
            CHECK_STATUS(mt_graph_backward(g, loss));
            float l1 = 0, l2 = 0;
            CHECK_STATUS(mt_node_get_scalar(loss, &l1));
            mt_graph_clear(g);
            loss = all_ops_loss(g, p);
            CHECK(loss != NULL, "rebuild failed: %s", mt_errmsg());
            mt_alloc_fail_at(0, true);
            mt_status rf = mt_graph_forward(g);
            mt_status rb = rf == MT_OK ? mt_graph_backward(g, loss) : rf;
            int64_t n_alloc = mt_alloc_count();
            mt_alloc_fail_at(-1, false);
            CHECK(rf == MT_OK && rb == MT_OK, "forward %s, backward %s: %s", mt_status_str(rf),
                  mt_status_str(rb), mt_errmsg());
            CHECK(n_alloc == 0, "%lld allocations during forward + backward", (long long)n_alloc);
            CHECK_STATUS(mt_node_get_scalar(loss, &l2));
            CHECK(isfinite(l1) && isfinite(l2) && l2 != 0.0f, "losses %g, %g", (double)l1,
                  (double)l2);
        }
        mt_graph_free(g);
        mt_params_free(p);
    }
}

/* ------------------------------------------------------------ errors */

typedef mt_node *(*bad_fn)(mt_graph *g);

static mt_node *in(mt_graph *g, mt_shape s) { return mt_input(g, s, NULL); }

static mt_node *bad_add(mt_graph *g) {
    return mt_add(g, in(g, mt_shape2(2, 3)), in(g, mt_shape1(4)));
}
static mt_node *bad_mul(mt_graph *g) {
    return mt_mul(g, in(g, mt_shape3(2, 3, 4)), in(g, mt_shape2(2, 4)));
}
static mt_node *bad_matmul(mt_graph *g) {
    return mt_matmul(g, in(g, mt_shape2(3, 5)), in(g, mt_shape2(4, 7)), false, false);
}
static mt_node *bad_matmul_t(mt_graph *g) {
    return mt_matmul(g, in(g, mt_shape2(3, 5)), in(g, mt_shape2(5, 7)), true, false);
}
static mt_node *bad_bmm(mt_graph *g) {
    return mt_bmm(g, in(g, mt_shape3(2, 3, 5)), in(g, mt_shape3(3, 5, 4)), false, false, 1.0f);
}
static mt_node *bad_bmm_gather(mt_graph *g) { /* 3 ids for 2 rows */
    const int32_t ids[3] = {0, 1, 0};
    return mt_bmm_gather(g, in(g, mt_shape3(2, 3, 5)), in(g, mt_shape3(2, 5, 4)),
                         mt_input_i32(g, mt_shape1(3), ids), false, false, 1.0f);
}
static mt_node *bad_affine(mt_graph *g) {
    return mt_affine(g, in(g, mt_shape2(3, 4)), in(g, mt_shape2(5, 7)), in(g, mt_shape1(7)));
}
static mt_node *bad_concat(mt_graph *g) {
    mt_node *xs[2] = {in(g, mt_shape2(2, 3)), in(g, mt_shape2(3, 4))};
    return mt_concat(g, xs, 2, 1);
}
static mt_node *bad_reshape(mt_graph *g) {
    return mt_reshape(g, in(g, mt_shape2(2, 3)), mt_shape2(4, 2));
}
static mt_node *bad_reshape_infer(mt_graph *g) {
    return mt_reshape(g, in(g, mt_shape2(2, 3)), mt_shape2(-1, 4));
}
static mt_node *bad_slice(mt_graph *g) { return mt_slice(g, in(g, mt_shape2(2, 3)), 1, 2, 2); }
static mt_node *bad_transpose(mt_graph *g) { return mt_transpose(g, in(g, mt_shape2(2, 3)), 0, 2); }
static mt_node *bad_permute(mt_graph *g) {
    const int perm[3] = {0, 2, 2};
    return mt_permute(g, in(g, mt_shape3(2, 3, 4)), perm);
}
static mt_node *bad_layer_norm(mt_graph *g) {
    return mt_layer_norm(g, in(g, mt_shape2(2, 3)), in(g, mt_shape1(4)), NULL, 1e-6f);
}
static mt_node *bad_xent(mt_graph *g) {
    const int32_t lab[3] = {0, 1, 2};
    return mt_cross_entropy(g, in(g, mt_shape2(2, 5)), mt_input_i32(g, mt_shape1(3), lab), 0.0f);
}
static mt_node *bad_attention(mt_graph *g) {
    mt_node *q = in(g, mt_shape3(1, 2, 6));
    return mt_attention(g, q, q, q, NULL, 4, NULL);
}
static mt_node *bad_attention_mask(mt_graph *g) {
    mt_node *q = in(g, mt_shape3(1, 2, 6));
    return mt_attention(g, q, q, q, in(g, mt_shape2(2, 3)), 2, NULL);
}
static mt_node *bad_masked_fill(mt_graph *g) {
    return mt_masked_fill(g, in(g, mt_shape2(2, 3)), in(g, mt_shape2(3, 3)), 0.0f);
}
static mt_node *bad_sum(mt_graph *g) { return mt_sum(g, in(g, mt_shape2(2, 3)), 2); }
static mt_node *bad_max(mt_graph *g) { return mt_max(g, in(g, mt_shape2(2, 3)), -3); }
static mt_node *bad_dropout(mt_graph *g) { return mt_dropout(g, in(g, mt_shape2(2, 3)), 1.0f); }
static mt_node *bad_gather(mt_graph *g) {
    const int32_t ids[2] = {0, 1};
    return mt_gather_rows(g, in(g, mt_shape3(2, 3, 4)), mt_input_i32(g, mt_shape1(2), ids));
}
static mt_node *bad_index_select(mt_graph *g) {
    const int32_t ids[4] = {0, 1, 0, 1};
    return mt_index_select(g, in(g, mt_shape2(2, 3)), 0, mt_input_i32(g, mt_shape2(2, 2), ids));
}
static mt_node *bad_dtype(mt_graph *g) {
    const int32_t ids[2] = {0, 1};
    return mt_tanh(g, mt_input_i32(g, mt_shape1(2), ids));
}

static const struct {
    const char *op;
    bad_fn fn;
} bad_cases[] = {
    {"mt_add", bad_add},
    {"mt_mul", bad_mul},
    {"mt_matmul", bad_matmul},
    {"mt_matmul", bad_matmul_t},
    {"mt_bmm", bad_bmm},
    {"mt_bmm_gather", bad_bmm_gather},
    {"mt_affine", bad_affine},
    {"mt_concat", bad_concat},
    {"mt_reshape", bad_reshape},
    {"mt_reshape", bad_reshape_infer},
    {"mt_slice", bad_slice},
    {"mt_transpose", bad_transpose},
    {"mt_permute", bad_permute},
    {"mt_layer_norm", bad_layer_norm},
    {"mt_cross_entropy", bad_xent},
    {"mt_attention", bad_attention},
    {"mt_attention", bad_attention_mask},
    {"mt_masked_fill", bad_masked_fill},
    {"mt_sum", bad_sum},
    {"mt_max", bad_max},
    {"mt_dropout", bad_dropout},
    {"mt_gather_rows", bad_gather},
    {"mt_index_select", bad_index_select},
    {"mt_tanh", bad_dtype},
};

static void test_bad_shapes(void) {
    TEST("bad shapes: NULL, sticky MT_ERR_INVALID with the op's name") {
        int n = (int)(sizeof bad_cases / sizeof bad_cases[0]);
        for (int i = 0; i < n; i++) {
            mt_graph *g = new_graph(true);
            mt_node *ok_node = in(g, mt_shape2(2, 2));
            mt_node *y = bad_cases[i].fn(g);
            CHECK(y == NULL, "case %d (%s): builder returned a node", i, bad_cases[i].op);
            CHECK(mt_graph_status(g) == MT_ERR_INVALID, "case %d (%s): status %s", i,
                  bad_cases[i].op, mt_status_str(mt_graph_status(g)));
            /* sticky: later builders return NULL, forward reports the first error */
            CHECK(mt_tanh(g, ok_node) == NULL, "case %d: builder after an error gave a node", i);
            mt_status rc = mt_graph_forward(g);
            CHECK(rc == MT_ERR_INVALID, "case %d (%s): forward returned %s", i, bad_cases[i].op,
                  mt_status_str(rc));
            CHECK(strstr(mt_errmsg(), bad_cases[i].op) != NULL,
                  "case %d: message '%s' does not name %s", i, mt_errmsg(), bad_cases[i].op);
            mt_graph_free(g);
        }
        /* the message carries the shapes */
        mt_graph *g = new_graph(false);
        bad_add(g);
        mt_graph_forward(g);
        CHECK(strstr(mt_errmsg(), "[2, 3]") != NULL && strstr(mt_errmsg(), "[4]") != NULL,
              "mt_add message '%s' lacks the shapes", mt_errmsg());
        mt_graph_free(g);
    }
}

static void test_null_inputs(void) {
    TEST("NULL inputs propagate as NULL") {
        mt_graph *g = new_graph(true);
        mt_node *x = in(g, mt_shape2(2, 4));
        mt_node *ids = mt_input_i32(g, mt_shape1(2), (const int32_t[]){0, 1});
        mt_node *xs[2] = {x, NULL};
        const int perm[2] = {1, 0};
        mt_node *got[] = {
            mt_add(g, NULL, x),
            mt_sub(g, x, NULL),
            mt_mul(g, NULL, NULL),
            mt_div(g, x, NULL),
            mt_scale(g, NULL, 2.0f),
            mt_add_scalar(g, NULL, 1.0f),
            mt_neg(g, NULL),
            mt_relu(g, NULL),
            mt_swish(g, NULL),
            mt_gelu(g, NULL),
            mt_tanh(g, NULL),
            mt_sigmoid(g, NULL),
            mt_exp(g, NULL),
            mt_ln(g, NULL),
            mt_sqrt(g, NULL),
            mt_softmax(g, NULL),
            mt_log_softmax(g, NULL),
            mt_cross_entropy(g, NULL, ids, 0.1f),
            mt_cross_entropy(g, x, NULL, 0.1f),
            mt_layer_norm(g, NULL, NULL, NULL, 1e-6f),
            mt_dropout(g, NULL, 0.1f),
            mt_masked_fill(g, NULL, x, 0.0f),
            mt_masked_fill(g, x, NULL, 0.0f),
            mt_highway(g, x, NULL, x),
            mt_reshape(g, NULL, mt_shape1(8)),
            mt_transpose(g, NULL, 0, 1),
            mt_permute(g, NULL, perm),
            mt_concat(g, xs, 2, 0),
            mt_slice(g, NULL, 0, 0, 1),
            mt_gather_rows(g, NULL, ids),
            mt_gather_rows(g, x, NULL),
            mt_index_select(g, NULL, 0, ids),
            mt_index_select(g, x, 0, NULL),
            mt_sum(g, NULL, 0),
            mt_mean(g, NULL, 0),
            mt_max(g, NULL, 0),
            mt_sum_all(g, NULL),
            mt_matmul(g, NULL, x, false, false),
            mt_bmm(g, x, NULL, false, false, 1.0f),
            mt_affine(g, NULL, x, NULL),
            mt_affine(g, x, NULL, x),
            mt_attention(g, x, NULL, x, NULL, 1, NULL),
        };
        for (size_t i = 0; i < sizeof got / sizeof got[0]; i++) {
            CHECK(got[i] == NULL, "builder %zu with a NULL input returned a node", i);
        }
        mt_node *w = x;
        CHECK(mt_attention(g, NULL, x, x, NULL, 1, &w) == NULL && w == NULL,
              "attention clears weights_out on NULL input");
        mt_graph_free(g);
    }
}

static void test_bad_ids(void) {
    TEST("labels / ids out of range fail at forward") {
        mt_graph *g = new_graph(false);
        mt_node *x = in(g, mt_shape2(3, 5));
        mt_node *y =
            mt_cross_entropy(g, x, mt_input_i32(g, mt_shape1(3), (const int32_t[]){0, 4, 9}), 0.0f);
        CHECK(y != NULL, "builder accepts labels (checked at forward)");
        mt_status rc = mt_graph_forward(g);
        CHECK(rc == MT_ERR_INVALID, "forward returned %s", mt_status_str(rc));
        CHECK(strstr(mt_errmsg(), "label 9") != NULL && strstr(mt_errmsg(), "row 2") != NULL,
              "message '%s' lacks the label and row", mt_errmsg());
        CHECK(mt_graph_forward(g) == MT_ERR_INVALID, "the error is sticky");
        mt_graph_free(g);

        g = new_graph(false);
        y = mt_gather_rows(g, in(g, mt_shape2(4, 2)),
                           mt_input_i32(g, mt_shape1(2), (const int32_t[]){-1, 0}));
        rc = mt_graph_forward(g);
        CHECK(rc == MT_ERR_INVALID && strstr(mt_errmsg(), "-1") != NULL,
              "gather_rows id -1: %s (%s)", mt_status_str(rc), mt_errmsg());
        mt_graph_free(g);

        g = new_graph(false);
        y = mt_index_select(g, in(g, mt_shape2(4, 2)), 1,
                            mt_input_i32(g, mt_shape1(2), (const int32_t[]){0, 2}));
        rc = mt_graph_forward(g);
        CHECK(rc == MT_ERR_INVALID && strstr(mt_errmsg(), "mt_index_select") != NULL,
              "index_select id 2 of 2: %s (%s)", mt_status_str(rc), mt_errmsg());
        mt_graph_free(g);

        g = new_graph(false);
        y = mt_bmm_gather(g, in(g, mt_shape3(2, 1, 3)), in(g, mt_shape3(2, 3, 4)),
                          mt_input_i32(g, mt_shape1(2), (const int32_t[]){1, 2}), false, false,
                          1.0f);
        rc = mt_graph_forward(g);
        CHECK(rc == MT_ERR_INVALID && strstr(mt_errmsg(), "mt_bmm_gather") != NULL &&
                  strstr(mt_errmsg(), "id 2") != NULL,
              "bmm_gather id 2 of 2: %s (%s)", mt_status_str(rc), mt_errmsg());
        mt_graph_free(g);
    }
}

int main(void) {
    mt_rng_seed(&rng, 2024);
    test_softmax();
    test_node_argmax();
    test_layer_norm();
    test_add_layer_norm();
    test_cross_entropy();
    test_attention();
    test_gather_index();
    test_concat_slice_permute();
    test_f16_storage();
    test_bf16_storage();
    test_pack_rows();
    test_pack_rows_kt();
    test_products();
    test_reductions();
    test_elementwise();
    test_dropout();
    test_memoized();
    test_no_alloc();
    test_bad_shapes();
    test_null_inputs();
    test_bad_ids();
    TEST_MAIN_END();
}
