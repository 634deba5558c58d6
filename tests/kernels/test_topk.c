/*
** test_topk.c: the fused softmax + top-k, the argmax of beam 1, the merge of
** per-row top-k lists and the beam step (kernels/cpu/topk*.c).
**
** Oracles are unfused and plain: x = logits + bias in a temporary row,
** kcpu_log_softmax_fwd_ref over it, and a full qsort of the columns by
** (x descending, column ascending); lse also in double.  Indices must match
** exactly.  Log-probs must be within LP_TOL (1 + |want|) of the double
** formula, and of log_softmax_ref up to that reference's own error: it sums
** cols terms in float in sequence, so its log-sum is off by up to about
** cols * 2^-24 (2e-3 at 32000 columns; 2.5e-4 is seen there on rows of
** near-equal terms, where the fused kernels stay within 4e-7 of the double
** formula).  The dispatched kernels (every ISA level this machine has,
** kcpu_isa_force) must give the reference's indices exactly and its
** log-probs within LP_TOL.  Rows: odd sizes, magnitudes up to 1e4 and down
** to 1e-4, masked (-inf) tokens, all-masked rows, exact ties, ascending rows
** (every column enters the heap), bias on and off; shortlists; row offsets;
** the beam step against a full sort of each sentence's candidates.
*/
#include "harness.h"
#include "test_util.h"
#include "kcpu_impl.h"
#include "mt_base.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LP_TOL 1e-5

/* ---------------------------------------------------------------- helpers */

static int irand(int n) { return (int)((test_rng_next() >> 33) % (uint64_t)n); }

static void *xalloc(size_t n) {
    void *p = mt_try_malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "test_topk: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

static const char *isa_tag = "?";
static double worst_unfused, worst_double, worst_isa; /* largest scaled log-prob errors */

/* |got - want| <= LP_TOL (1 + |want|) + extra, infinities equal exactly;
** tracks the worst scaled error |got - want| / (1 + |want|) in *worst. */
static bool lp_close_x(double got, double want, double extra, double *worst) {
    if (isinf(want) || isinf(got)) {
        return got == want;
    }
    double e = fabs(got - want) / (1.0 + fabs(want));
    if (e > *worst) {
        *worst = e;
    }
    return fabs(got - want) <= LP_TOL * (1.0 + fabs(want)) + extra;
}

static bool lp_close(double got, double want, double *worst) {
    return lp_close_x(got, want, 0.0, worst);
}

/* Error bound of kcpu_log_softmax_fwd_ref's log-sum over n terms: the
** sequential float sum ((n - 1) u relative, u = 2^-24) and expf (1 ulp per
** term), with some slack. */
static double unfused_slack(int64_t n) { return 1.1 * (double)(n + 1) * 0x1p-24; }

/* Row kinds. */
enum {
    ROW_NORMAL,   /* uniform [-8, 8]                                   */
    ROW_HUGE,     /* uniform [-1e4, 1e4]                               */
    ROW_SMALL,    /* uniform [-1e-4, 1e-4]: every term near 1          */
    ROW_TIES,     /* integers 0..3: many exact ties                    */
    ROW_MASKED,   /* normal, ~1/3 -inf, first and last column -inf     */
    ROW_ALL_MASK, /* every column -inf                                 */
    ROW_ASCEND,   /* increasing: every column beats the heap's root    */
    ROW_KINDS
};

static void fill_row(int kind, int64_t cols, float *x) {
    for (int64_t c = 0; c < cols; c++) {
        switch (kind) {
        case ROW_NORMAL: x[c] = test_urand(-8.0f, 8.0f); break;
        case ROW_HUGE: x[c] = test_urand(-1e4f, 1e4f); break;
        case ROW_SMALL: x[c] = test_urand(-1e-4f, 1e-4f); break;
        case ROW_TIES: x[c] = (float)irand(4); break;
        case ROW_MASKED: x[c] = irand(3) == 0 ? -INFINITY : test_urand(-8.0f, 8.0f); break;
        case ROW_ALL_MASK: x[c] = -INFINITY; break;
        default: x[c] = -5.0f + 1e-3f * (float)c; break;
        }
    }
    if (kind == ROW_MASKED) {
        x[0] = x[cols - 1] = -INFINITY;
    }
}

/* Bias: integers for tie rows (ties survive the add), else small reals. */
static void fill_bias(int64_t cols, float *b, bool ties) {
    for (int64_t c = 0; c < cols; c++) {
        b[c] = ties ? (float)(irand(3) - 1) : test_urand(-2.0f, 2.0f);
    }
}

typedef struct xi {
    float x;
    int32_t i;
} xi;

static int cmp_xi(const void *pa, const void *pb) {
    const xi *a = pa, *b = pb;
    if (a->x != b->x) {
        return a->x > b->x ? -1 : 1;
    }
    return (a->i > b->i) - (a->i < b->i);
}

/* The unfused oracle of one row: x = logits + bias, lsm = log_softmax_ref(x),
** order = columns by (x desc, column asc), lse in double (-inf if masked). */
typedef struct oracle {
    float *x, *lsm;
    xi *order;
    double lse, m;
} oracle;

static void oracle_row(int64_t cols, const float *logits, const float *bias, oracle *o) {
    for (int64_t c = 0; c < cols; c++) {
        o->x[c] = bias ? logits[c] + bias[c] : logits[c];
        o->order[c] = (xi){o->x[c], (int32_t)c};
    }
    kcpu_log_softmax_fwd_ref(1, cols, o->x, o->lsm);
    qsort(o->order, (size_t)cols, sizeof *o->order, cmp_xi);
    o->m = o->order[0].x;
    double s = 0.0;
    for (int64_t c = 0; c < cols; c++) {
        s += o->x[c] > -INFINITY ? exp((double)o->x[c] - o->m) : 0.0;
    }
    o->lse = s > 0.0 ? o->m + log(s) : -INFINITY;
}

/* log-prob of column c in the double formula: (x - m) - log d in double. */
static double oracle_lp(const oracle *o, int64_t c) {
    if (o->lse == -INFINITY || o->x[c] == -INFINITY) {
        return -INFINITY;
    }
    return ((double)o->x[c] - o->m) - (o->lse - o->m);
}

/* One output row (k entries) of a top-k kernel against the oracle.  ids
** maps positions to target ids (NULL: identity).  Returns true if it
** matches; the first mismatch is reported through CHECK by the caller. */
static bool check_row(const char *who, int64_t cols, int32_t k, const oracle *o, const int32_t *ids,
                      const int32_t *idx, const float *lp, float lse, char *msg, size_t msg_len) {
    int32_t n = (int64_t)k < cols ? k : (int32_t)cols;
    bool masked = o->lse == -INFINITY;
    for (int32_t j = 0; j < n; j++) {
        int32_t c = o->order[j].i;
        int32_t want = ids ? ids[c] : c;
        if (idx[j] != want) {
            snprintf(msg, msg_len, "%s: rank %d idx %d want %d (x %g)", who, j, idx[j], want,
                     (double)o->order[j].x);
            return false;
        }
        double w_unfused = masked ? -INFINITY : (double)o->lsm[c];
        if (!lp_close_x(lp[j], w_unfused, unfused_slack(cols), &worst_unfused) ||
            !lp_close(lp[j], oracle_lp(o, c), &worst_double)) {
            snprintf(msg, msg_len, "%s: rank %d (col %d) logp %.9g want %.9g (double %.9g)", who, j,
                     c, (double)lp[j], w_unfused, oracle_lp(o, c));
            return false;
        }
    }
    for (int32_t j = n; j < k; j++) {
        if (idx[j] != -1 || lp[j] != -INFINITY) {
            snprintf(msg, msg_len, "%s: padding rank %d: idx %d logp %g", who, j, idx[j],
                     (double)lp[j]);
            return false;
        }
    }
    if (!(masked ? lse == -INFINITY : fabs(lse - o->lse) <= LP_TOL * (1.0 + fabs(o->lse)))) {
        snprintf(msg, msg_len, "%s: lse %.9g want %.9g", who, (double)lse, o->lse);
        return false;
    }
    return true;
}

/* ------------------------------------------------------- resumable top-k */

/* kcpu_topk_start / piece / end over columns cut at random points (64 to
** 640 columns past the first not yet counted, the last piece at cols) give
** kcpu_softmax_topk_ex's results bit for bit: every row kind, widths below
** one vector to several pieces, k within a vector, across several, and
** beyond the 64 lanes. */
static void test_topk_pieces(void) {
    if (!kcpu_topk_resumable()) {
        return;
    }
    static const int64_t colss[] = {17, 100, 1777, 4001};
    static const int32_t ks[] = {1, 5, 20, 70};
    enum { ROWS = 3 };
    int bad = -1, runs = 0, multi = 0;
    for (size_t ci = 0; ci < sizeof colss / sizeof colss[0]; ci++) {
        const int64_t cols = colss[ci];
        float *x = xalloc(sizeof(float) * (size_t)(ROWS * cols));
        kcpu_topk_row *st = xalloc(sizeof(kcpu_topk_row) * ROWS);
        for (int kind = 0; kind < ROW_KINDS; kind++) {
            for (int r = 0; r < ROWS; r++) {
                fill_row(kind, cols, x + r * cols);
            }
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                const int32_t k = ks[ki];
                const size_t e = (size_t)(ROWS * k);
                int32_t *wi = xalloc(sizeof(int32_t) * e), *gi = xalloc(sizeof(int32_t) * e);
                float *wv = xalloc(sizeof(float) * e), *gv = xalloc(sizeof(float) * e);
                kcpu_softmax_topk_ex(ROWS, cols, x, NULL, NULL, NULL, k, wi, wv, NULL);
                kcpu_topk_start(ROWS, st);
                int64_t done = 0;
                int pieces = 0;
                while (done < cols) {
                    int64_t avail = done + 64 * (1 + irand(10));
                    avail = avail < cols ? avail : cols;
                    int64_t c =
                        kcpu_topk_piece(ROWS, cols, x + done, cols, done, avail, k, st, gi, gv);
                    pieces++;
                    if (c < done || c > avail || (avail < cols && avail - c >= 64) ||
                        (avail == cols && c != cols)) {
                        bad = (int)c;
                        break;
                    }
                    done = c;
                }
                multi += pieces > 1;
                kcpu_topk_end(ROWS, cols, k, st, gi, gv);
                if (memcmp(wi, gi, sizeof(int32_t) * e) != 0 ||
                    memcmp(wv, gv, sizeof(float) * e) != 0) {
                    bad = (int)(cols * 100 + kind * 10 + (int)ki);
                }
                runs++;
                mt_free(wi), mt_free(gi), mt_free(wv), mt_free(gv);
            }
        }
        mt_free(x);
        mt_free(st);
    }
    CHECK(bad < 0 && runs > 0 && multi > 0,
          "[%s] top-k in pieces: case %d differs from the whole rows' (%d runs, %d in pieces)",
          isa_tag, bad, runs, multi);
}

/* ------------------------------------------------------ full-vocab top-k */

static void test_topk_full(void) {
    static const int64_t colss[] = {1, 7, 15, 16, 17, 100, 4001, 32000};
    for (size_t ci = 0; ci < sizeof colss / sizeof colss[0]; ci++) {
        int64_t cols = colss[ci];
        int32_t ks[] = {1, 4, 8, 12, (int32_t)cols, (int32_t)cols + 3};
        const int64_t rows = ROW_KINDS;
        float *logits = xalloc((size_t)(rows * cols) * sizeof(float));
        float *bias = xalloc((size_t)cols * sizeof(float));
        oracle o[ROW_KINDS];
        for (int r = 0; r < ROW_KINDS; r++) {
            o[r].x = xalloc((size_t)cols * sizeof(float));
            o[r].lsm = xalloc((size_t)cols * sizeof(float));
            o[r].order = xalloc((size_t)cols * sizeof(xi));
        }
        int32_t kmax = cols + 3 > 12 ? (int32_t)cols + 3 : 12;
        int32_t *idx = xalloc((size_t)(rows * kmax) * sizeof(int32_t));
        int32_t *idx_ref = xalloc((size_t)(rows * kmax) * sizeof(int32_t));
        float *lp = xalloc((size_t)(rows * kmax) * sizeof(float));
        float *lp_ref = xalloc((size_t)(rows * kmax) * sizeof(float));
        float lse[ROW_KINDS], lse_ref[ROW_KINDS];
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            bool ties_bias = (ci + (size_t)with_bias) % 2 == 0;
            for (int r = 0; r < ROW_KINDS; r++) {
                fill_row(r, cols, logits + r * cols);
            }
            fill_bias(cols, bias, ties_bias);
            const float *b = with_bias ? bias : NULL;
            for (int r = 0; r < ROW_KINDS; r++) {
                oracle_row(cols, logits + r * cols, b, &o[r]);
            }
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                int32_t k = ks[ki];
                kcpu_softmax_topk_ex_ref(rows, cols, logits, b, NULL, NULL, k, idx_ref, lp_ref,
                                         lse_ref);
                kcpu_softmax_topk(rows, cols, logits, b, k, idx, lp, lse);
                for (int r = 0; r < ROW_KINDS; r++) {
                    char msg[256] = "";
                    bool ok = check_row("ref", cols, k, &o[r], NULL, idx_ref + r * k,
                                        lp_ref + r * k, lse_ref[r], msg, sizeof msg);
                    CHECK(ok, "[%s] topk cols=%lld k=%d bias=%d kind=%d: %s", isa_tag,
                          (long long)cols, k, with_bias, r, msg);
                    ok = check_row("dispatch", cols, k, &o[r], NULL, idx + r * k, lp + r * k,
                                   lse[r], msg, sizeof msg);
                    CHECK(ok, "[%s] topk cols=%lld k=%d bias=%d kind=%d: %s", isa_tag,
                          (long long)cols, k, with_bias, r, msg);
                    /* the dispatched variant against the reference */
                    int bad = -1;
                    for (int32_t j = 0; j < k && bad < 0; j++) {
                        int64_t f = r * k + j;
                        if (idx[f] != idx_ref[f] || !lp_close(lp[f], lp_ref[f], &worst_isa)) {
                            bad = j;
                        }
                    }
                    CHECK(bad < 0,
                          "[%s] topk vs ref cols=%lld k=%d kind=%d rank %d: %d %.9g "
                          "vs %d %.9g",
                          isa_tag, (long long)cols, k, r, bad, bad < 0 ? 0 : idx[r * k + bad],
                          bad < 0 ? 0.0 : lp[r * k + bad], bad < 0 ? 0 : idx_ref[r * k + bad],
                          bad < 0 ? 0.0 : lp_ref[r * k + bad]);
                }
            }
        }
        for (int r = 0; r < ROW_KINDS; r++) {
            mt_free(o[r].x);
            mt_free(o[r].lsm);
            mt_free(o[r].order);
        }
        mt_free(logits);
        mt_free(bias);
        mt_free(idx);
        mt_free(idx_ref);
        mt_free(lp);
        mt_free(lp_ref);
    }
}

/* Hand-made rows whose answers are known without any oracle. */
static void test_topk_known(void) {
    /* ties: 3 at columns 1, 4, 6; 2 at 0 and 5; k = 4 -> 1 4 6 0 */
    const float x[7] = {2, 3, -INFINITY, 1, 3, 2, 3};
    int32_t idx[5];
    float lp[5], lse;
    kcpu_softmax_topk(1, 7, x, NULL, 5, idx, lp, &lse);
    double s = 3 * exp(3.0) + 2 * exp(2.0) + exp(1.0);
    CHECK(idx[0] == 1 && idx[1] == 4 && idx[2] == 6 && idx[3] == 0 && idx[4] == 5,
          "[%s] tie order %d %d %d %d %d", isa_tag, idx[0], idx[1], idx[2], idx[3], idx[4]);
    CHECK_CLOSE(lse, log(s), 1e-6, 1e-6, "[%s] lse of the tie row", isa_tag);
    CHECK_CLOSE(lp[0], 3.0 - log(s), 1e-6, 1e-6, "[%s] logp of the tie row", isa_tag);
    CHECK(lp[0] == lp[1] && lp[1] == lp[2], "[%s] tied logp differ", isa_tag);
    /* a shortlist: ids 5 9 12 20; bias applied per position */
    const float xs[4] = {0.5f, 2.0f, 2.0f, -1.0f}, bs[4] = {1.5f, 0.0f, 0.0f, 0.0f};
    const int32_t ids[4] = {5, 9, 12, 20};
    kcpu_softmax_topk_short(1, 4, xs, bs, ids, 3, idx, lp, &lse);
    CHECK(idx[0] == 5 && idx[1] == 9 && idx[2] == 12, "[%s] shortlist ids %d %d %d", isa_tag,
          idx[0], idx[1], idx[2]);
    CHECK_CLOSE(lse, log(3 * exp(2.0) + exp(-1.0)), 1e-6, 1e-6, "[%s] shortlist lse", isa_tag);
    /* k > cols on a 2-column row */
    const float x2[2] = {-1.0f, 0.0f};
    kcpu_softmax_topk(1, 2, x2, NULL, 4, idx, lp, NULL);
    CHECK(idx[0] == 1 && idx[1] == 0 && idx[2] == -1 && idx[3] == -1 && lp[3] == -INFINITY,
          "[%s] k > cols padding %d %d %d %d", isa_tag, idx[0], idx[1], idx[2], idx[3]);
    CHECK_CLOSE(lp[0], -log1p(exp(-1.0)), 1e-6, 1e-6, "[%s] two-column logp", isa_tag);
    /* argmax of a tie and of a masked row */
    int32_t am[2];
    float av[2];
    const float xa[10] = {1,         5,         5,         0,         -INFINITY,
                          -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    kcpu_argmax_rows(2, 5, xa, NULL, am, av);
    CHECK(am[0] == 1 && av[0] == 5.0f, "[%s] argmax tie: %d %g", isa_tag, am[0], (double)av[0]);
    CHECK(am[1] == 0 && av[1] == -INFINITY, "[%s] argmax masked: %d %g", isa_tag, am[1],
          (double)av[1]);
}

/* ---------------------------------------------------------------- shortlist */

static void test_topk_shortlist(void) {
    static const int64_t vocabs[] = {100, 4001, 32000};
    static const int64_t shorts[] = {1, 7, 17, 100, 1000};
    static const int32_t ks[] = {1, 4, 8, 12};
    for (size_t vi = 0; vi < sizeof vocabs / sizeof vocabs[0]; vi++) {
        int64_t v = vocabs[vi];
        for (size_t si = 0; si < sizeof shorts / sizeof shorts[0]; si++) {
            int64_t ns = shorts[si] < v ? shorts[si] : v;
            const int64_t rows = 3;
            int32_t *ids = xalloc((size_t)ns * sizeof(int32_t));
            /* a sorted sample without repeats: walk the vocabulary */
            int64_t got = 0;
            for (int64_t t = 0; t < v && got < ns; t++) {
                if ((int64_t)irand((int)(v - t)) < ns - got) {
                    ids[got++] = (int32_t)t;
                }
            }
            float *full = xalloc((size_t)(rows * v) * sizeof(float));
            float *fbias = xalloc((size_t)v * sizeof(float));
            float *logits = xalloc((size_t)(rows * ns) * sizeof(float));
            float *bias = xalloc((size_t)ns * sizeof(float));
            for (int64_t r = 0; r < rows; r++) {
                fill_row(r == 2 ? ROW_TIES : r == 1 ? ROW_MASKED : ROW_NORMAL, v, full + r * v);
                for (int64_t j = 0; j < ns; j++) {
                    logits[r * ns + j] = full[r * v + ids[j]];
                }
            }
            fill_bias(v, fbias, si % 2 == 0);
            for (int64_t j = 0; j < ns; j++) {
                bias[j] = fbias[ids[j]];
            }
            oracle o = {xalloc((size_t)ns * sizeof(float)), xalloc((size_t)ns * sizeof(float)),
                        xalloc((size_t)ns * sizeof(xi)), 0, 0};
            int32_t idx[3 * 12], idx_ref[3 * 12];
            float lp[3 * 12], lp_ref[3 * 12], lse[3], lse_ref[3];
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                int32_t k = ks[ki];
                const float *b = ki % 2 ? bias : NULL;
                kcpu_softmax_topk_short(rows, ns, logits, b, ids, k, idx, lp, lse);
                kcpu_softmax_topk_ex_ref(rows, ns, logits, b, ids, NULL, k, idx_ref, lp_ref,
                                         lse_ref);
                for (int64_t r = 0; r < rows; r++) {
                    oracle_row(ns, logits + r * ns, b, &o);
                    char msg[256] = "";
                    bool ok = check_row("short", ns, k, &o, ids, idx + r * k, lp + r * k, lse[r],
                                        msg, sizeof msg) &&
                              check_row("short ref", ns, k, &o, ids, idx_ref + r * k,
                                        lp_ref + r * k, lse_ref[r], msg, sizeof msg);
                    CHECK(ok, "[%s] shortlist V=%lld n=%lld k=%d row %lld: %s", isa_tag,
                          (long long)v, (long long)ns, k, (long long)r, msg);
                }
            }
            mt_free(o.x);
            mt_free(o.lsm);
            mt_free(o.order);
            mt_free(ids);
            mt_free(full);
            mt_free(fbias);
            mt_free(logits);
            mt_free(bias);
        }
    }
}

/* -------------------------------------------------------------- row offset */

static void test_topk_offset(void) {
    const int64_t rows = 4, cols = 4001;
    const int32_t k = 8;
    float *logits = xalloc((size_t)(rows * cols) * sizeof(float));
    for (int64_t r = 0; r < rows; r++) {
        fill_row(r == 3 ? ROW_TIES : ROW_NORMAL, cols, logits + r * cols);
    }
    const float off[4] = {-3.25f, 0.0f, -1234.5f, -INFINITY};
    int32_t i0[4 * 8], i1[4 * 8];
    float v0[4 * 8], v1[4 * 8];
    kcpu_softmax_topk_ex(rows, cols, logits, NULL, NULL, NULL, k, i0, v0, NULL);
    kcpu_softmax_topk_ex(rows, cols, logits, NULL, NULL, off, k, i1, v1, NULL);
    int bad = -1;
    for (int j = 0; j < rows * k && bad < 0; j++) {
        float want = off[j / k] + v0[j];
        if (i0[j] != i1[j] || memcmp(&want, &v1[j], sizeof want) != 0) {
            bad = j;
        }
    }
    CHECK(bad < 0, "[%s] row offset: entry %d: %d %.9g vs %d %.9g", isa_tag, bad,
          bad < 0 ? 0 : i1[bad], bad < 0 ? 0.0 : v1[bad], bad < 0 ? 0 : i0[bad],
          bad < 0 ? 0.0 : v0[bad]);
    mt_free(logits);
}

/* ------------------------------------------------------------------ argmax */

static void test_argmax(void) {
    static const int64_t colss[] = {1, 7, 15, 16, 17, 63, 64, 65, 100, 4001, 32000};
    for (size_t ci = 0; ci < sizeof colss / sizeof colss[0]; ci++) {
        int64_t cols = colss[ci];
        const int64_t rows = ROW_KINDS + 2;
        float *logits = xalloc((size_t)(rows * cols) * sizeof(float));
        float *bias = xalloc((size_t)cols * sizeof(float));
        float *x = xalloc((size_t)cols * sizeof(float));
        for (int64_t r = 0; r < rows; r++) {
            fill_row((int)(r % ROW_KINDS), cols, logits + r * cols);
        }
        /* two more rows: the maximum in the last column, then twice in the tail */
        fill_row(ROW_NORMAL, cols, logits + ROW_KINDS * cols);
        logits[ROW_KINDS * cols + cols - 1] = 100.0f;
        float *tr = logits + (ROW_KINDS + 1) * cols;
        fill_row(ROW_NORMAL, cols, tr);
        tr[cols / 2] = tr[cols - 1] = 50.0f;
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            fill_bias(cols, bias, true);
            const float *b = with_bias ? bias : NULL;
            int32_t idx[ROW_KINDS + 2], idx_ref[ROW_KINDS + 2];
            float val[ROW_KINDS + 2], val_ref[ROW_KINDS + 2];
            kcpu_argmax_rows(rows, cols, logits, b, idx, val);
            kcpu_argmax_rows_ref(rows, cols, logits, b, idx_ref, val_ref);
            for (int64_t r = 0; r < rows; r++) {
                /* plain oracle: first column of the largest x; 0 if all -inf */
                int32_t want = 0;
                for (int64_t c = 0; c < cols; c++) {
                    x[c] = b ? logits[r * cols + c] + b[c] : logits[r * cols + c];
                    if (x[c] > x[want]) {
                        want = (int32_t)c;
                    }
                }
                CHECK(idx_ref[r] == want && val_ref[r] == x[want],
                      "[%s] argmax ref cols=%lld row %lld: %d (%g) want %d (%g)", isa_tag,
                      (long long)cols, (long long)r, idx_ref[r], (double)val_ref[r], want,
                      (double)x[want]);
                CHECK(idx[r] == want && val[r] == x[want],
                      "[%s] argmax cols=%lld row %lld bias=%d: %d (%g) want %d (%g)", isa_tag,
                      (long long)cols, (long long)r, with_bias, idx[r], (double)val[r], want,
                      (double)x[want]);
            }
            /* argmax = top-1 of the fused kernel */
            int32_t t1[ROW_KINDS + 2];
            float l1[ROW_KINDS + 2];
            kcpu_softmax_topk(rows, cols, logits, b, 1, t1, l1, NULL);
            int bad = -1;
            for (int64_t r = 0; r < rows && bad < 0; r++) {
                bad = t1[r] != idx[r] ? (int)r : -1;
            }
            CHECK(bad < 0, "[%s] argmax vs top-1 cols=%lld row %d", isa_tag, (long long)cols, bad);
        }
        mt_free(logits);
        mt_free(bias);
        mt_free(x);
    }
}

/* ------------------------------------------------------- every short row */

/* Rows of every length 1..80: each tail and block boundary of the 8-lane
** (32 columns per block) and 16-lane (64) variants, with the heap filling
** inside or after the first vector.  The dispatched kernels against the
** references: indices equal, log-probs and lse within LP_TOL; argmax
** equal. */
static void test_topk_tails(void) {
    static const int kinds[] = {ROW_NORMAL, ROW_TIES, ROW_MASKED, ROW_ALL_MASK, ROW_ASCEND};
    enum { NK = sizeof kinds / sizeof kinds[0], KMAX = 9 };
    static const int32_t ks[] = {1, 3, KMAX};
    for (int64_t cols = 1; cols <= 80; cols++) {
        float *logits = xalloc((size_t)(NK * cols) * sizeof(float));
        float *bias = xalloc((size_t)cols * sizeof(float));
        for (int r = 0; r < NK; r++) {
            fill_row(kinds[r], cols, logits + r * cols);
        }
        /* a maximum in the last column of the normal row */
        logits[cols - 1] = 20.0f;
        fill_bias(cols, bias, true);
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            const float *b = with_bias ? bias : NULL;
            for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                int32_t k = ks[ki], idx[NK * KMAX], idx_ref[NK * KMAX];
                float lp[NK * KMAX], lp_ref[NK * KMAX], lse[NK], lse_ref[NK];
                kcpu_softmax_topk(NK, cols, logits, b, k, idx, lp, lse);
                kcpu_softmax_topk_ex_ref(NK, cols, logits, b, NULL, NULL, k, idx_ref, lp_ref,
                                         lse_ref);
                int bad = -1;
                for (int j = 0; j < NK * k && bad < 0; j++) {
                    bool ok = idx[j] == idx_ref[j] && lp_close(lp[j], lp_ref[j], &worst_isa) &&
                              lp_close(lse[j / k], lse_ref[j / k], &worst_isa);
                    bad = ok ? -1 : j;
                }
                CHECK(bad < 0,
                      "[%s] topk tail cols=%lld k=%d bias=%d row %d rank %d: %d %.9g (lse %.9g) "
                      "vs %d %.9g (lse %.9g)",
                      isa_tag, (long long)cols, k, with_bias, bad < 0 ? 0 : bad / k,
                      bad < 0 ? 0 : bad % k, bad < 0 ? 0 : idx[bad], bad < 0 ? 0.0 : lp[bad],
                      bad < 0 ? 0.0 : lse[bad / k], bad < 0 ? 0 : idx_ref[bad],
                      bad < 0 ? 0.0 : lp_ref[bad], bad < 0 ? 0.0 : lse_ref[bad / k]);
            }
            int32_t am[NK], am_ref[NK];
            float av[NK], av_ref[NK];
            kcpu_argmax_rows(NK, cols, logits, b, am, av);
            kcpu_argmax_rows_ref(NK, cols, logits, b, am_ref, av_ref);
            int bad = -1;
            for (int r = 0; r < NK && bad < 0; r++) {
                bad = am[r] == am_ref[r] && av[r] == av_ref[r] ? -1 : r;
            }
            CHECK(bad < 0, "[%s] argmax tail cols=%lld bias=%d row %d: %d %g vs %d %g", isa_tag,
                  (long long)cols, with_bias, bad, bad < 0 ? 0 : am[bad], bad < 0 ? 0.0 : av[bad],
                  bad < 0 ? 0 : am_ref[bad], bad < 0 ? 0.0 : av_ref[bad]);
        }
        mt_free(logits);
        mt_free(bias);
    }
}

/* -------------------------------------------------------------- merge, beam */

typedef struct cand {
    float s;
    int32_t row, rank, id;
} cand;

static int cmp_cand(const void *pa, const void *pb) {
    const cand *a = pa, *b = pb;
    if (a->s != b->s) {
        return a->s > b->s ? -1 : 1;
    }
    if (a->row != b->row) {
        return a->row < b->row ? -1 : 1;
    }
    return (a->rank > b->rank) - (a->rank < b->rank);
}

static void test_merge(void) {
    /* three lists of 3; list 1 is padded after one entry; ties across lists */
    const float val[9] = {5, 2, 1, 4, -INFINITY, -INFINITY, 5, 4, -7};
    const int32_t idx[9] = {10, 11, 12, 20, -1, -1, 30, 31, 32};
    int32_t ol[9], oi[9];
    float ov[9];
    kcpu_topk_merge(3, 3, val, idx, 9, ol, oi, ov);
    const int32_t want_l[9] = {0, 2, 1, 2, 0, 0, 2, -1, -1};
    const int32_t want_i[9] = {10, 30, 20, 31, 11, 12, 32, -1, -1};
    int bad = -1;
    for (int j = 0; j < 9 && bad < 0; j++) {
        bad = ol[j] != want_l[j] || oi[j] != want_i[j] ? j : -1;
    }
    CHECK(bad < 0, "merge rank %d: list %d idx %d", bad, bad < 0 ? 0 : ol[bad],
          bad < 0 ? 0 : oi[bad]);
    CHECK(ov[0] == 5 && ov[3] == 4 && ov[6] == -7 && ov[7] == -INFINITY, "merge values");
    kcpu_topk_merge(3, 3, val, idx, 2, ol, oi, ov);
    CHECK(ol[0] == 0 && oi[0] == 10 && ol[1] == 2 && oi[1] == 30, "merge k_out=2: %d/%d %d/%d",
          ol[0], oi[0], ol[1], oi[1]);
}

/* The beam step against a full sort of every sentence's rows x cols scores
** (each row's scores from the reference kernel with k = cols). */
static void test_beam(void) {
    static const int64_t colss[] = {7, 100, 4001};
    const int32_t rps[4] = {2, 0, 4, 1};
    const int64_t n_sent = 4, rows = 7;
    for (size_t ci = 0; ci < sizeof colss / sizeof colss[0]; ci++) {
        int64_t cols = colss[ci];
        float *logits = xalloc((size_t)(rows * cols) * sizeof(float));
        float *bias = xalloc((size_t)cols * sizeof(float));
        float path[7];
        for (int64_t r = 0; r < rows; r++) {
            fill_row(r == 4 ? ROW_TIES : r == 5 ? ROW_MASKED : ROW_NORMAL, cols, logits + r * cols);
            path[r] = test_urand(-6.0f, 0.0f);
        }
        /* sentence 2: rows 2 and 3 identical with equal paths (ties across rows) */
        memcpy(logits + 3 * cols, logits + 2 * cols, (size_t)cols * sizeof(float));
        path[3] = path[2];
        fill_bias(cols, bias, false);
        float *full_v = xalloc((size_t)(rows * cols) * sizeof(float));
        int32_t *full_i = xalloc((size_t)(rows * cols) * sizeof(int32_t));
        cand *all = xalloc((size_t)(rows * cols) * sizeof(cand));
        kcpu_softmax_topk_ex_ref(rows, cols, logits, bias, NULL, path, (int32_t)cols, full_i,
                                 full_v, NULL);
        const int32_t ks[] = {1, 3, 8, (int32_t)(4 * cols + 2)};
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            int32_t k = ks[ki];
            int32_t *sc_i = xalloc((size_t)(rows * k) * sizeof(int32_t));
            float *sc_v = xalloc((size_t)(rows * k) * sizeof(float));
            int32_t *o_row = xalloc((size_t)(n_sent * k) * sizeof(int32_t));
            int32_t *o_idx = xalloc((size_t)(n_sent * k) * sizeof(int32_t));
            float *o_s = xalloc((size_t)(n_sent * k) * sizeof(float));
            for (int isa_ref = 0; isa_ref < 2; isa_ref++) {
                kcpu_isa old = isa_ref ? kcpu_isa_force(KCPU_ISA_REF) : kcpu_isa_active();
                kcpu_softmax_topk_beam(n_sent, rps, cols, logits, bias, NULL, path, k, sc_i, sc_v,
                                       o_row, o_idx, o_s, NULL);
                if (isa_ref) {
                    kcpu_isa_force(old);
                }
                int64_t r0 = 0;
                for (int64_t s = 0; s < n_sent; s++) {
                    int64_t nc = 0;
                    for (int32_t q = 0; q < rps[s]; q++) {
                        int64_t r = r0 + q;
                        for (int64_t j = 0; j < cols; j++) {
                            all[nc++] = (cand){full_v[r * cols + j], (int32_t)r, (int32_t)j,
                                               full_i[r * cols + j]};
                        }
                    }
                    qsort(all, (size_t)nc, sizeof *all, cmp_cand);
                    int bad = -1;
                    for (int32_t j = 0; j < k && bad < 0; j++) {
                        int64_t f = s * k + j;
                        if (j >= nc) {
                            bad = o_row[f] != -1 || o_idx[f] != -1 || o_s[f] != -INFINITY ? j : -1;
                            continue;
                        }
                        bool same = o_row[f] == all[j].row && o_idx[f] == all[j].id;
                        if (isa_ref) { /* the reference path: bit-exact */
                            bad = same && o_s[f] == all[j].s ? -1 : j;
                            continue;
                        }
                        /* other ISAs: the same candidate with a close score, or a near
                        ** tie: a candidate whose oracle score is as close */
                        double tol = LP_TOL * (1.0 + fabs(all[j].s));
                        bool close =
                            isinf(all[j].s) ? o_s[f] == all[j].s : fabs(o_s[f] - all[j].s) <= tol;
                        bool ok = same && close;
                        for (int64_t q = 0; q < nc && !ok && close && !isinf(all[j].s); q++) {
                            if (all[q].row == o_row[f] && all[q].id == o_idx[f]) {
                                ok = fabs(all[q].s - all[j].s) <= 2 * tol;
                            }
                        }
                        bad = ok ? -1 : j;
                    }
                    CHECK(bad < 0,
                          "[%s%s] beam cols=%lld k=%d sentence %lld rank %d: row %d "
                          "id %d score %.9g, want row %d id %d score %.9g",
                          isa_tag, isa_ref ? "/ref" : "", (long long)cols, k, (long long)s, bad,
                          bad < 0 ? 0 : o_row[s * k + bad], bad < 0 ? 0 : o_idx[s * k + bad],
                          bad < 0 ? 0.0 : o_s[s * k + bad],
                          bad < 0 || bad >= nc ? -1 : all[bad].row,
                          bad < 0 || bad >= nc ? -1 : all[bad].id,
                          bad < 0 || bad >= nc ? 0.0 : all[bad].s);
                    r0 += rps[s];
                }
            }
            mt_free(sc_i);
            mt_free(sc_v);
            mt_free(o_row);
            mt_free(o_idx);
            mt_free(o_s);
        }
        mt_free(logits);
        mt_free(bias);
        mt_free(full_v);
        mt_free(full_i);
        mt_free(all);
    }
}

int main(void) {
    test_rng_seed(0x2545f4914f6cdd1dull); /* the seed the expected values were drawn with */
    kcpu_isa best = kcpu_isa_detect();
    for (int lvl = KCPU_ISA_REF; lvl <= (int)best; lvl++) {
        kcpu_isa_force((kcpu_isa)lvl);
        isa_tag = kcpu_isa_name((kcpu_isa)lvl);
        test_topk_known();
        test_topk_full();
        test_topk_shortlist();
        test_topk_offset();
        test_argmax();
        test_topk_tails();
        test_topk_pieces();
        test_merge();
        test_beam();
        fprintf(stderr,
                "[%s] worst scaled logp error: vs log_softmax_ref %.3g, vs double %.3g, "
                "vs ref kernel %.3g (tolerance %g)\n",
                isa_tag, worst_unfused, worst_double, worst_isa, LP_TOL);
        worst_unfused = worst_double = worst_isa = 0.0;
    }
    kcpu_isa_force(KCPU_ISA_AVX512);
    TEST_MAIN_END();
}
