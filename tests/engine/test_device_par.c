/*
** test_device_par.c: the CPU device's own threads (device_cpu.c: training
** with bfloat16 products runs its products, row-wise and element-wise ops
** in parts on them).  With 2 and 3 threads, every op that splits its work
** gives the serial kernel's result bit for bit: the bfloat16 GEMM split by
** rows and by columns, unary forward and backward, accumulate, fill, zero,
** copy (and an overlapping copy, which must stay one memmove), softmax and
** log-softmax both ways, cross-entropy both ways, layer norm and add + layer
** norm.  Sizes above the threshold at which a job is split.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "harness.h"
#include "kcpu.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 4.0 - 2.0);
}

static float *rnd(int64_t n) {
    float *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; x && i < n; i++)
        x[i] = frand();
    return x;
}

static bool same(const float *a, const float *b, int64_t n) {
    return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

enum { R = 300, C = 1000, N = R * C };

static void run(int threads) {
    kcpu_set_own_threads(threads);
    mt_device *d = mt_device_cpu();
    const mt_device_ops *o = d->ops;
    float *x = rnd(N), *x2 = rnd(N), *g = rnd(C), *b = rnd(C);
    float *y1 = calloc(N, sizeof *y1), *y2 = calloc(N, sizeof *y2);
    float *m1 = calloc(R, sizeof *m1), *m2 = calloc(R, sizeof *m2);
    float *s1 = calloc(R, sizeof *s1), *s2 = calloc(R, sizeof *s2);
    int32_t *lab = malloc(R * sizeof *lab);
    if (!x || !x2 || !g || !b || !y1 || !y2 || !m1 || !m2 || !s1 || !s2 || !lab) {
        CHECK(0, "out of memory");
        goto done;
    }
    for (int i = 0; i < R; i++)
        lab[i] = (int32_t)(i * 7 % C);

    o->unary_fwd(d, MT_UN_SWISH, N, 0, x, y1);
    kcpu_unary_fwd(KCPU_SWISH, N, 0, x, y2);
    CHECK(same(y1, y2, N), "%d threads: unary_fwd", threads);
    float *dx = calloc(N, sizeof *dx); /* backward ops add to their output */
    memset(y1, 0, N * sizeof *y1);
    o->unary_bwd(d, MT_UN_SWISH, N, 0, x, y2, x2, y1);
    if (dx) {
        kcpu_unary_bwd(KCPU_SWISH, N, 0, x, y2, x2, dx);
        CHECK(same(y1, dx, N), "%d threads: unary_bwd", threads);
        free(dx);
    }
    memcpy(y1, x2, N * sizeof *y1);
    memcpy(y2, x2, N * sizeof *y2);
    o->acc_f32(d, N, x, y1);
    kcpu_acc_f32(N, x, y2);
    CHECK(same(y1, y2, N), "%d threads: acc", threads);
    o->fill_f32(d, N - 3, 0.25f, y1);
    kcpu_fill_f32(N - 3, 0.25f, y2);
    CHECK(same(y1, y2, N), "%d threads: fill", threads);
    o->memset0(d, y1, (N - 5) * sizeof *y1);
    memset(y2, 0, (N - 5) * sizeof *y2);
    CHECK(same(y1, y2, N), "%d threads: memset0", threads);
    o->copy(d, y1, x, (N - 1) * sizeof *y1, 2);
    CHECK(same(y1, x, N - 1), "%d threads: copy", threads);
    memcpy(y2, x, N * sizeof *y2);
    o->copy(d, y2 + 7, y2, (N - 7) * sizeof *y2, 2); /* overlapping: one memmove */
    CHECK(same(y2 + 7, x, N - 7), "%d threads: overlapping copy", threads);

    o->softmax_fwd(d, R, C, x, y1);
    kcpu_softmax_fwd(R, C, x, y2);
    CHECK(same(y1, y2, N), "%d threads: softmax_fwd", threads);
    float *t = calloc(N, sizeof *t);
    memset(y1, 0, N * sizeof *y1);
    o->softmax_bwd(d, R, C, y2, x2, y1);
    if (t) {
        kcpu_softmax_bwd(R, C, y2, x2, t);
        CHECK(same(y1, t, N), "%d threads: softmax_bwd", threads);
    }
    o->log_softmax_fwd(d, R, C, x, y1);
    kcpu_log_softmax_fwd(R, C, x, y2);
    CHECK(same(y1, y2, N), "%d threads: log_softmax_fwd", threads);
    memset(y1, 0, N * sizeof *y1);
    o->log_softmax_bwd(d, R, C, y2, x2, y1);
    if (t) {
        memset(t, 0, N * sizeof *t);
        kcpu_log_softmax_bwd(R, C, y2, x2, t);
        CHECK(same(y1, t, N), "%d threads: log_softmax_bwd", threads);
    }
    o->xent_fwd(d, R, C, x, lab, 0.1f, y1, m1);
    kcpu_xent_fwd(R, C, x, lab, 0.1f, y2, m2);
    CHECK(same(y1, y2, N) && same(m1, m2, R), "%d threads: xent_fwd", threads);
    if (t) {
        memcpy(t, x2, N * sizeof *t);
        memcpy(y1, x2, N * sizeof *y1);
        o->xent_bwd(d, R, C, y2, lab, 0.1f, m2, y1);
        kcpu_xent_bwd(R, C, y2, lab, 0.1f, m2, t);
        CHECK(same(y1, t, N), "%d threads: xent_bwd", threads);
    }
    o->layernorm_fwd(d, R, C, x, g, b, 1e-6f, y1, m1, s1);
    kcpu_layernorm_fwd(R, C, x, g, b, 1e-6f, y2, m2, s2);
    CHECK(same(y1, y2, N) && same(m1, m2, R) && same(s1, s2, R), "%d threads: layernorm_fwd",
          threads);
    o->add_layernorm_fwd(d, R, C, x, x2, g, b, 1e-6f, y1, m1, s1);
    kcpu_add_layernorm_fwd(R, C, x, x2, g, b, 1e-6f, y2, m2, s2);
    CHECK(same(y1, y2, N) && same(m1, m2, R) && same(s1, s2, R), "%d threads: add_layernorm_fwd",
          threads);
    free(t);

    /* bfloat16 products: rows (m >= n) and columns (m < n) */
    void *scr = aligned_alloc(64, KCPU_GEMM_BF16_SCRATCH);
    const int64_t shapes[2][3] = {{R, 97, 130}, {45, C, 64}};
    for (int sh = 0; sh < 2 && scr; sh++) {
        int64_t m = shapes[sh][0], n = shapes[sh][1], k = shapes[sh][2];
        memcpy(y1, x2, (size_t)(m * n) * sizeof *y1);
        memcpy(y2, x2, (size_t)(m * n) * sizeof *y2);
        mt_status rc = o->gemm_bf16(d, false, true, m, n, k, 0.5f, x, k, x2, k, 1.0f, y1, n);
        kcpu_gemm_bf16(false, true, m, n, k, 0.5f, x, k, x2, k, 1.0f, y2, n, scr);
        CHECK(rc == MT_OK && same(y1, y2, m * n), "%d threads: bfloat16 GEMM %lldx%lldx%lld",
              threads, (long long)m, (long long)n, (long long)k);
    }
    free(scr);
done:
    free(x);
    free(x2);
    free(g);
    free(b);
    free(y1);
    free(y2);
    free(m1);
    free(m2);
    free(s1);
    free(s2);
    free(lab);
    kcpu_set_own_threads(0);
}

int main(void) {
    run(2);
    run(3);
    TEST_MAIN_END();
}
