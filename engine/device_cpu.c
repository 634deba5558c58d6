/*
** device_cpu.c: the CPU device, a vtable of thin adapters over kcpu_* (the
** only engine file that includes kernels/cpu/kcpu.h).  Device pointers are
** host pointers; copies in every direction are memcpy.
*/
#include "device.h"
#include "kcpu.h"
#include "mt_base.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------ own threads
** The device's own threads (kcpu_own_threads: training with bfloat16
** products sets them and runs OpenBLAS on one) run parts of a job:
** the caller runs part 0, pool workers the others.  The pool is
** process-wide like the device: workers start on first use and wait on a
** condition variable between jobs; one caller uses it at a time (another
** one meanwhile runs its job serially).  Parts split rows or elements, so
** every element is computed as the serial kernel computes it. */
enum { POOL_MAX_PARTS = 16 };

typedef void (*pool_fn)(void *ctx, int part, int parts);

static struct {
    pthread_mutex_t use; /* held by the caller using the pool */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    int workers, n_parts, pending;
    uint64_t gen;
    pool_fn fn;
    void *ctx;
    void *scratch[POOL_MAX_PARTS]; /* bfloat16 packing, one per part         */
    uint64_t born[POOL_MAX_PARTS]; /* gen when worker i started: it waits for the next */
} pool = {.use = PTHREAD_MUTEX_INITIALIZER,
          .mu = PTHREAD_MUTEX_INITIALIZER,
          .go = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

static void *pool_worker(void *arg) {
    int i = (int)(intptr_t)arg;
    uint64_t seen = pool.born[i]; /* written before pthread_create */
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        while (pool.gen == seen)
            pthread_cond_wait(&pool.go, &pool.mu);
        seen = pool.gen;
        bool mine = i < pool.n_parts;
        pthread_mutex_unlock(&pool.mu);
        if (mine) pool.fn(pool.ctx, i, pool.n_parts);
        pthread_mutex_lock(&pool.mu);
        if (--pool.pending == 0) pthread_cond_signal(&pool.done);
    }
    return NULL;
}

/* The parts a job of `work` units may take (1: run it serially). */
static int pool_parts(double work, double min_work) {
    int parts = kcpu_own_threads();
    if (parts > POOL_MAX_PARTS) parts = POOL_MAX_PARTS;
    return parts > 1 && work >= min_work ? parts : 1;
}

/* Under `use`: workers 1..parts-1 started; returns how many parts can run. */
static int pool_start(int parts) {
    while (pool.workers + 1 < parts) {
        pthread_t th;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pool.born[pool.workers + 1] = pool.gen;
        int rc = pthread_create(&th, &at, pool_worker, (void *)(intptr_t)(pool.workers + 1));
        pthread_attr_destroy(&at);
        if (rc != 0) break;
        pool.workers++;
    }
    return pool.workers + 1 < parts ? pool.workers + 1 : parts;
}

/* Runs fn(ctx, i, parts) for i < parts, part 0 on this thread; the pool
** must be held (`use`). */
static void pool_run_held(pool_fn fn, void *ctx, int parts) {
    if (parts > 1) {
        pthread_mutex_lock(&pool.mu);
        pool.fn = fn;
        pool.ctx = ctx;
        pool.n_parts = parts;
        pool.pending = pool.workers;
        pool.gen++;
        pthread_cond_broadcast(&pool.go);
        pthread_mutex_unlock(&pool.mu);
    }
    fn(ctx, 0, parts);
    if (parts > 1) {
        pthread_mutex_lock(&pool.mu);
        while (pool.pending > 0)
            pthread_cond_wait(&pool.done, &pool.mu);
        pthread_mutex_unlock(&pool.mu);
    }
}

/* Runs a job of `work` units in parts on the own threads when there are
** some and it is worth it, else as one part on this thread. */
static void pool_run(pool_fn fn, void *ctx, double work, double min_work) {
    int parts = pool_parts(work, min_work);
    if (parts > 1 && pthread_mutex_trylock(&pool.use) == 0) {
        pool_run_held(fn, ctx, pool_start(parts));
        pthread_mutex_unlock(&pool.use);
    } else {
        fn(ctx, 0, 1);
    }
}

/* [lo, hi) of part i of n units in parts, boundaries multiples of align. */
static void part_range(int64_t n, int64_t align, int i, int parts, int64_t *lo, int64_t *hi) {
    int64_t step = ((n + parts - 1) / parts + align - 1) / align * align;
    *lo = step * i < n ? step * i : n;
    *hi = step * (i + 1) < n ? step * (i + 1) : n;
}

/* ---- bfloat16 GEMM in row or column ranges */

typedef struct bf16_job {
    bool ta, tb, by_rows;
    int64_t m, n, k;
    float alpha, beta;
    const float *a, *b;
    int64_t lda, ldb, ldc;
    float *c;
} bf16_job;

static void bf16_part(void *ctx, int i, int parts) {
    const bf16_job *j = ctx;
    int64_t lo, hi;
    part_range(j->by_rows ? j->m : j->n, j->by_rows ? KCPU_BF16_MR : KCPU_BF16_NR, i, parts, &lo,
               &hi);
    if (lo >= hi) return;
    if (j->by_rows)
        kcpu_gemm_bf16(j->ta, j->tb, hi - lo, j->n, j->k, j->alpha,
                       j->ta ? j->a + lo : j->a + lo * j->lda, j->lda, j->b, j->ldb, j->beta,
                       j->c + lo * j->ldc, j->ldc, pool.scratch[i]);
    else
        kcpu_gemm_bf16(j->ta, j->tb, j->m, hi - lo, j->k, j->alpha, j->a, j->lda,
                       j->tb ? j->b + lo * j->ldb : j->b + lo, j->ldb, j->beta, j->c + lo, j->ldc,
                       pool.scratch[i]);
}

static mt_status cpu_gemm_bf16(mt_device *d, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                               float alpha, const float *a, int64_t lda, const float *b,
                               int64_t ldb, float beta, float *c, int64_t ldc) {
    (void)d;
    if (m <= 0 || n <= 0) return MT_OK;
    bf16_job j = {ta, tb, m >= n, m, n, k, alpha, beta, a, b, lda, ldb, ldc, c};
    if (pthread_mutex_trylock(&pool.use) != 0) { /* another caller has the pool */
        void *own = mt_try_aligned_alloc(KCPU_GEMM_BF16_SCRATCH);
        if (own == NULL) return mt_seterr(MT_ERR_NOMEM, "bfloat16 GEMM: no packing scratch");
        kcpu_gemm_bf16(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, own);
        mt_aligned_free(own);
        return MT_OK;
    }
    int parts = pool_parts((double)m * (double)n * (double)k, 2e6);
    for (int i = 0; i < parts; i++) {
        if (pool.scratch[i] == NULL) pool.scratch[i] = mt_try_aligned_alloc(KCPU_GEMM_BF16_SCRATCH);
        if (pool.scratch[i] == NULL) parts = i;
    }
    if (parts < 1) {
        pthread_mutex_unlock(&pool.use);
        return mt_seterr(MT_ERR_NOMEM, "bfloat16 GEMM: no packing scratch");
    }
    pool_run_held(bf16_part, &j, pool_start(parts));
    pthread_mutex_unlock(&pool.use);
    return MT_OK;
}

/* ---- row-wise and element-wise ops in ranges */

enum { PAR_MIN = 1 << 16 }; /* elements below which a job runs serially */

typedef struct rows_job {
    int kind, op;
    int64_t rows, cols;
    float alpha, ls, eps;
    const float *x, *x2, *x3, *x4;
    const int32_t *labels;
    float *y, *y2, *y3;
} rows_job;

enum {
    RJ_ZERO,
    RJ_COPY,
    RJ_FILL,
    RJ_UNARY_FWD,
    RJ_UNARY_BWD,
    RJ_ACC,
    RJ_SOFTMAX_FWD,
    RJ_SOFTMAX_BWD,
    RJ_LOGSM_FWD,
    RJ_LOGSM_BWD,
    RJ_XENT_FWD,
    RJ_XENT_BWD,
    RJ_LN_FWD,
    RJ_ADD_LN_FWD
};

static void rows_part(void *ctx, int i, int parts) {
    const rows_job *j = ctx;
    int64_t lo, hi, c = j->cols, el = j->kind <= RJ_ACC; /* element-wise: one row of n
                                                          (bytes for zero and copy) */
    part_range(el ? c : j->rows, el ? 64 : 1, i, parts, &lo, &hi);
    int64_t r = hi - lo, o = el ? lo : lo * c;
    if (r <= 0) return;
    switch (j->kind) {
    case RJ_ZERO: memset((char *)j->y + o, 0, (size_t)r); break; /* bytes */
    case RJ_COPY: memcpy((char *)j->y + o, (const char *)j->x + o, (size_t)r); break;
    case RJ_FILL: kcpu_fill_f32(r, j->alpha, j->y + o); break;
    case RJ_UNARY_FWD: kcpu_unary_fwd((kcpu_unary)j->op, r, j->alpha, j->x + o, j->y + o); break;
    case RJ_UNARY_BWD:
        kcpu_unary_bwd((kcpu_unary)j->op, r, j->alpha, j->x + o, j->x2 + o, j->x3 + o, j->y + o);
        break;
    case RJ_ACC: kcpu_acc_f32(r, j->x + o, j->y + o); break;
    case RJ_SOFTMAX_FWD: kcpu_softmax_fwd(r, c, j->x + o, j->y + o); break;
    case RJ_SOFTMAX_BWD: kcpu_softmax_bwd(r, c, j->x + o, j->x2 + o, j->y + o); break;
    case RJ_LOGSM_FWD: kcpu_log_softmax_fwd(r, c, j->x + o, j->y + o); break;
    case RJ_LOGSM_BWD: kcpu_log_softmax_bwd(r, c, j->x + o, j->x2 + o, j->y + o); break;
    case RJ_XENT_FWD:
        kcpu_xent_fwd(r, c, j->x + o, j->labels + lo, j->ls, j->y + o, j->y2 + lo);
        break;
    case RJ_XENT_BWD:
        kcpu_xent_bwd(r, c, j->x + o, j->labels + lo, j->ls, j->x2 + lo, j->y + o);
        break;
    case RJ_LN_FWD:
        kcpu_layernorm_fwd(r, c, j->x + o, j->x3, j->x4, j->eps, j->y + o,
                           j->y2 ? j->y2 + lo : NULL, j->y3 ? j->y3 + lo : NULL);
        break;
    case RJ_ADD_LN_FWD:
        kcpu_add_layernorm_fwd(r, c, j->x + o, j->x2 + o, j->x3, j->x4, j->eps, j->y + o,
                               j->y2 ? j->y2 + lo : NULL, j->y3 ? j->y3 + lo : NULL);
        break;
    }
}

static void rows_run(rows_job *j) {
    pool_run(rows_part, j, (double)j->rows * (double)j->cols, PAR_MIN);
}

static void *cpu_alloc(mt_device *d, size_t bytes) {
    (void)d;
    return mt_try_aligned_alloc(bytes);
}

static void cpu_free(mt_device *d, void *p) {
    (void)d;
    mt_aligned_free(p);
}

static mt_status cpu_copy(mt_device *d, void *dst, const void *src, size_t n, int dir) {
    (void)d;
    (void)dir;
    const char *s = src, *t = dst;
    if (n && (t + n <= s || s + n <= t)) { /* disjoint: in ranges */
        rows_job j = {.kind = RJ_COPY, .rows = 1, .cols = (int64_t)n, .x = src, .y = dst};
        pool_run(rows_part, &j, (double)n / 4, PAR_MIN);
    } else if (n) {
        memmove(dst, src, n);
    }
    return MT_OK;
}

static mt_status cpu_memset0(mt_device *d, void *p, size_t n) {
    (void)d;
    rows_job j = {.kind = RJ_ZERO, .rows = 1, .cols = (int64_t)n, .y = p};
    if (n) pool_run(rows_part, &j, (double)n / 4, PAR_MIN);
    return MT_OK;
}

static void cpu_gemm_f32(mt_device *d, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                         float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                         float beta, float *c, int64_t ldc) {
    (void)d;
    kcpu_gemm_f32(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void cpu_gemm_f32_batched(mt_device *d, bool ta, bool tb, int64_t m, int64_t n,
                                 int64_t k, float alpha, const float *a, int64_t lda, int64_t sa,
                                 const float *b, int64_t ldb, int64_t sb, float beta, float *c,
                                 int64_t ldc, int64_t sc, int64_t batch) {
    (void)d;
    kcpu_gemm_f32_batched(ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc,
                          batch);
}

static void cpu_unary_fwd(mt_device *d, int op, int64_t n, float alpha, const float *x,
                          float *y) {
    (void)d;
    rows_job j = {
        .kind = RJ_UNARY_FWD, .op = op, .rows = 1, .cols = n, .alpha = alpha, .x = x, .y = y};
    rows_run(&j);
}

static void cpu_unary_bwd(mt_device *d, int op, int64_t n, float alpha, const float *x,
                          const float *y, const float *dy, float *dx) {
    (void)d;
    rows_job j = {.kind = RJ_UNARY_BWD,
                  .op = op,
                  .rows = 1,
                  .cols = n,
                  .alpha = alpha,
                  .x = x,
                  .x2 = y,
                  .x3 = dy,
                  .y = dx};
    rows_run(&j);
}

static void cpu_binary_fwd(mt_device *d, int op, int ndim, const int64_t *shape,
                           const int64_t *sa, const float *a, const int64_t *sb, const float *b,
                           float *y) {
    (void)d;
    kcpu_binary_fwd((kcpu_binary)op, ndim, shape, sa, a, sb, b, y);
}

static void cpu_binary_bwd(mt_device *d, int op, int ndim, const int64_t *shape,
                           const int64_t *sa, const float *a, const int64_t *sb, const float *b,
                           const float *dy, float *da, float *db) {
    (void)d;
    kcpu_binary_bwd((kcpu_binary)op, ndim, shape, sa, a, sb, b, dy, da, db);
}

static void cpu_acc_f32(mt_device *d, int64_t n, const float *x, float *y) {
    (void)d;
    rows_job j = {.kind = RJ_ACC, .rows = 1, .cols = n, .x = x, .y = y};
    rows_run(&j);
}

static void cpu_fill_f32(mt_device *d, int64_t n, float value, float *y) {
    (void)d;
    rows_job j = {.kind = RJ_FILL, .rows = 1, .cols = n, .alpha = value, .y = y};
    rows_run(&j);
}

static void cpu_masked_fill_fwd(mt_device *d, int ndim, const int64_t *shape, const float *x,
                                const int64_t *sm, const float *mask, float value, float *y) {
    (void)d;
    kcpu_masked_fill_fwd(ndim, shape, x, sm, mask, value, y);
}

static void cpu_masked_fill_bwd(mt_device *d, int ndim, const int64_t *shape, const int64_t *sm,
                                const float *mask, const float *dy, float *dx) {
    (void)d;
    kcpu_masked_fill_bwd(ndim, shape, sm, mask, dy, dx);
}

static void cpu_softmax_fwd(mt_device *d, int64_t rows, int64_t cols, const float *x,
                            float *y) {
    (void)d;
    rows_job j = {.kind = RJ_SOFTMAX_FWD, .rows = rows, .cols = cols, .x = x, .y = y};
    rows_run(&j);
}

static void cpu_softmax_bwd(mt_device *d, int64_t rows, int64_t cols, const float *y,
                            const float *dy, float *dx) {
    (void)d;
    rows_job j = {.kind = RJ_SOFTMAX_BWD, .rows = rows, .cols = cols, .x = y, .x2 = dy, .y = dx};
    rows_run(&j);
}

static void cpu_softmax_topk(mt_device *d, int64_t rows, int64_t cols, const float *x, int32_t k,
                             int32_t *idx, float *logp) {
    (void)d;
    kcpu_softmax_topk(rows, cols, x, NULL, k, idx, logp, NULL);
}

static void cpu_argmax_rows(mt_device *d, int64_t rows, int64_t cols, const float *x,
                            const float *bias, int32_t *idx, float *val) {
    (void)d;
    kcpu_argmax_rows(rows, cols, x, bias, idx, val);
}

static void cpu_attn_rows(mt_device *d, const kcpu_attn_job *job) {
    (void)d;
    kcpu_attn_rows(job);
}

static void cpu_f32_to_bf16_pairs(mt_device *d, int64_t rows, int64_t len, const float *x,
                                  uint32_t *y) {
    (void)d;
    kcpu_f32_to_bf16_pairs(rows, len, x, y);
}

static bool cpu_attn_bf16(mt_device *d, int64_t dk) {
    (void)d;
    return kcpu_attn_bf16_fast() && kcpu_attn_bf16_dk(dk);
}

static size_t cpu_attn_scratch_bytes(mt_device *d, int64_t heads, int64_t dk, int64_t keys) {
    (void)d;
    return sizeof(float) * (size_t)kcpu_attn_scratch_floats(heads, dk, keys);
}

static void cpu_log_softmax_fwd(mt_device *d, int64_t rows, int64_t cols, const float *x,
                                float *y) {
    (void)d;
    rows_job j = {.kind = RJ_LOGSM_FWD, .rows = rows, .cols = cols, .x = x, .y = y};
    rows_run(&j);
}

static void cpu_log_softmax_bwd(mt_device *d, int64_t rows, int64_t cols, const float *y,
                                const float *dy, float *dx) {
    (void)d;
    rows_job j = {.kind = RJ_LOGSM_BWD, .rows = rows, .cols = cols, .x = y, .x2 = dy, .y = dx};
    rows_run(&j);
}

static void cpu_xent_fwd(mt_device *d, int64_t rows, int64_t cols, const float *x,
                         const int32_t *labels, float ls, float *logp, float *loss) {
    (void)d;
    rows_job j = {.kind = RJ_XENT_FWD,
                  .rows = rows,
                  .cols = cols,
                  .ls = ls,
                  .x = x,
                  .labels = labels,
                  .y = logp,
                  .y2 = loss};
    rows_run(&j);
}

static void cpu_xent_bwd(mt_device *d, int64_t rows, int64_t cols, const float *logp,
                         const int32_t *labels, float ls, const float *dloss, float *dx) {
    (void)d;
    rows_job j = {.kind = RJ_XENT_BWD,
                  .rows = rows,
                  .cols = cols,
                  .ls = ls,
                  .x = logp,
                  .labels = labels,
                  .x2 = dloss,
                  .y = dx};
    rows_run(&j);
}

static void cpu_layernorm_fwd(mt_device *d, int64_t rows, int64_t cols, const float *x,
                              const float *gamma, const float *beta, float eps, float *y,
                              float *mean, float *rstd) {
    (void)d;
    rows_job j = {.kind = RJ_LN_FWD,
                  .rows = rows,
                  .cols = cols,
                  .eps = eps,
                  .x = x,
                  .x3 = gamma,
                  .x4 = beta,
                  .y = y,
                  .y2 = mean,
                  .y3 = rstd};
    rows_run(&j);
}

static void cpu_add_layernorm_fwd(mt_device *d, int64_t rows, int64_t cols, const float *x,
                                  const float *res, const float *gamma, const float *beta,
                                  float eps, float *y, float *mean, float *rstd) {
    (void)d;
    rows_job j = {.kind = RJ_ADD_LN_FWD,
                  .rows = rows,
                  .cols = cols,
                  .eps = eps,
                  .x = x,
                  .x2 = res,
                  .x3 = gamma,
                  .x4 = beta,
                  .y = y,
                  .y2 = mean,
                  .y3 = rstd};
    rows_run(&j);
}

static void cpu_layernorm_bwd(mt_device *d, int64_t rows, int64_t cols, const float *x,
                              const float *gamma, const float *mean, const float *rstd,
                              const float *dy, float *dx, float *dgamma, float *dbeta) {
    (void)d;
    kcpu_layernorm_bwd(rows, cols, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
}

static void cpu_reduce_fwd(mt_device *d, int op, int64_t outer, int64_t n, int64_t inner,
                           const float *x, float *y) {
    (void)d;
    kcpu_reduce_fwd((kcpu_reduce)op, outer, n, inner, x, y);
}

static void cpu_reduce_bwd(mt_device *d, int op, int64_t outer, int64_t n, int64_t inner,
                           const float *x, const float *y, const float *dy, float *dx) {
    (void)d;
    kcpu_reduce_bwd((kcpu_reduce)op, outer, n, inner, x, y, dy, dx);
}

static void cpu_gather_rows(mt_device *d, int64_t n_ids, const int32_t *ids, int64_t dim,
                            const float *table, float *out) {
    (void)d;
    kcpu_gather_rows(n_ids, ids, dim, table, out);
}

static void cpu_scatter_add_rows(mt_device *d, int64_t n_ids, const int32_t *ids, int64_t dim,
                                 const float *dout, float *dtable) {
    (void)d;
    kcpu_scatter_add_rows(n_ids, ids, dim, dout, dtable);
}

static void cpu_permute(mt_device *d, int ndim, const int64_t *shape, const int *perm,
                        const float *x, float *y) {
    (void)d;
    kcpu_permute(ndim, shape, perm, x, y);
}

static void cpu_copy2d(mt_device *d, int64_t rows, int64_t cols, const float *src, int64_t ss,
                       float *dst, int64_t sd, bool accumulate) {
    (void)d;
    kcpu_copy2d(rows, cols, src, ss, dst, sd, accumulate);
}

static void cpu_copy2d_bytes(mt_device *d, int64_t rows, size_t bytes, const void *src,
                             size_t ss, void *dst, size_t sd) {
    (void)d;
    kcpu_copy2d_bytes(rows, bytes, src, ss, dst, sd);
}

static void cpu_gather_bytes(mt_device *d, int64_t n_ids, const int32_t *ids, size_t bytes,
                             const void *table, void *out) {
    (void)d;
    kcpu_gather_bytes(n_ids, ids, bytes, table, out);
}

static void cpu_f16_to_f32(mt_device *d, int64_t n, const uint16_t *x, float *y) {
    (void)d;
    kcpu_f16_to_f32(n, x, y);
}

static void cpu_f32_to_f16(mt_device *d, int64_t n, const float *x, uint16_t *y) {
    (void)d;
    kcpu_f32_to_f16(n, x, y);
}

static void cpu_bf16_to_f32(mt_device *d, int64_t n, const uint16_t *x, float *y) {
    (void)d;
    kcpu_bf16_to_f32(n, x, y);
}

static void cpu_f32_to_bf16(mt_device *d, int64_t n, const float *x, uint16_t *y) {
    (void)d;
    kcpu_f32_to_bf16(n, x, y);
}

static void cpu_adam_f32(mt_device *d, int64_t n, float *w, const float *g, float *m, float *v,
                         float lr, float b1, float b2, float eps, float wd, float c1, float c2) {
    (void)d;
    kcpu_adam_f32(n, w, g, m, v, lr, b1, b2, eps, wd, c1, c2);
}

static void cpu_smooth_f32(mt_device *d, int64_t n, const float *w, float *s, float beta) {
    (void)d;
    kcpu_smooth_f32(n, w, s, beta);
}

static double cpu_sumsq_f32(mt_device *d, int64_t n, const float *x) {
    (void)d;
    return kcpu_sumsq_f32(n, x);
}

/* ---- integer GEMM and fp32 variants (the tuner's alternatives).  Variant
** numbers are mt_gemm_variant values (mt.h). */

enum { SMALL_M_MAX = 16 }; /* kcpu_gemm_f32_small's range (blas.c) */

static bool cpu_gemm_f32_has(mt_device *d, int variant, int64_t m, bool ta) {
    (void)d;
    if (variant == MT_GEMM_BLAS) return true;
    if (variant == MT_GEMM_SMALL) {
        return !ta && m >= 1 && m <= SMALL_M_MAX && kcpu_isa_active() >= KCPU_ISA_AVX512;
    }
    return false;
}

static void cpu_gemm_f32_impl(mt_device *d, int variant, bool ta, bool tb, int64_t m, int64_t n,
                              int64_t k, float alpha, const float *a, int64_t lda,
                              const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    (void)d;
    if (variant == MT_GEMM_SMALL) {
        kcpu_gemm_f32_small(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    } else {
        kcpu_gemm_f32_blas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
}

static float cpu_maxabs_f32(mt_device *d, int64_t n, const float *x) {
    (void)d;
    return kcpu_maxabs_f32(1, n, x, n);
}

static void cpu_quantize(mt_device *d, int bits, int64_t n, const float *x, float mult, void *y) {
    (void)d;
    if (bits == 8) {
        kcpu_quantize_i8(n, x, mult, y);
    } else {
        kcpu_quantize_i16(n, x, mult, y);
    }
}

static size_t cpu_pack_bytes(mt_device *d, int bits, int64_t k, int64_t n) {
    (void)d;
    return bits == 8 ? kcpu_pack_i8_bytes(k, n) : kcpu_pack_i16_bytes(k, n);
}

static void cpu_pack_f32(mt_device *d, int bits, int64_t k, int64_t n, const float *b,
                         int64_t ldb, bool tb, void *packed) {
    (void)d;
    if (bits == 8) {
        kcpu_pack_i8_ex(k, n, b, ldb, tb, packed);
    } else {
        kcpu_pack_i16_ex(k, n, b, ldb, tb, packed);
    }
}

static int64_t cpu_pack_q(mt_device *d, int bits, int64_t k, int64_t n, const void *bq,
                          int64_t ldb, bool tb, float qb, void *packed) {
    (void)d;
    if (bits == 8) return kcpu_pack_i8_q(k, n, bq, ldb, tb, qb, packed);
    kcpu_pack_i16_q(k, n, bq, ldb, tb, qb, packed);
    return 0;
}

static size_t cpu_igemm_scratch_bytes(mt_device *d, int bits, int64_t m, int64_t k) {
    (void)d;
    return bits == 8 ? kcpu_gemm_i8_scratch_bytes(m, k) : kcpu_gemm_i16_scratch_bytes(m, k);
}

static void cpu_pack_select(mt_device *d, const void *packed, int64_t n_sel, const int32_t *cols,
                            void *out) {
    (void)d;
    kcpu_pack_select(packed, n_sel, cols, out);
}

static void cpu_igemm(mt_device *d, int bits, int64_t m, const float *a, int64_t lda,
                      const void *packed, const float *bias, bool relu, const float *res, float *c,
                      int64_t ldc, void *scratch, float a_maxabs, float *c_maxabs) {
    (void)d; /* kcpu_gemm_int_ex / _res when a_maxabs < 0 and c_maxabs is NULL */
    kcpu_gemm_int_max(bits, kcpu_igemm_active(), m, a, lda, packed, bias, relu, res, a_maxabs,
                      c_maxabs, c, ldc, scratch);
}

static float cpu_igemm_quant(mt_device *d, int bits, int64_t m, int64_t k, const float *a,
                             int64_t lda, void *scratch) {
    (void)d;
    return kcpu_gemm_int_quant(bits, kcpu_igemm_active(), m, k, a, lda, scratch);
}

static void cpu_igemm_prepared(mt_device *d, int bits, int64_t m, void *scratch, float qa,
                               const void *packed, const float *bias, bool relu, const float *res,
                               float *c, int64_t ldc) {
    (void)d;
    kcpu_gemm_int_prepared(bits, kcpu_igemm_active(), m, scratch, qa, packed, bias, relu, res, ldc,
                           c, ldc);
}

/* The fields of a kcpu_fold_job both folds share (the history and output
** pointers set by each). */
static kcpu_fold_job fold_job(int64_t n, int64_t heads, int64_t dk, int64_t la, const int32_t *ids,
                              const int32_t *lens, const float *rec, const int32_t *rec_ids,
                              int64_t lb, const int32_t *starts, int64_t l) {
    return (kcpu_fold_job){.n = n,
                           .heads = heads,
                           .dk = dk,
                           .la = la,
                           .ids = ids,
                           .lens = lens,
                           .rec = rec,
                           .rec_ids = rec_ids,
                           .lb = lb,
                           .starts = starts,
                           .l = l};
}

static void cpu_fold_keys(mt_device *d, int64_t n, int64_t heads, int64_t dk, const void *hist,
                          int64_t la, const int32_t *ids, const int32_t *lens, const float *rec,
                          const int32_t *rec_ids, int64_t lb, const int32_t *starts, uint16_t *out,
                          int64_t l) {
    (void)d;
    kcpu_fold_job j = fold_job(n, heads, dk, la, ids, lens, rec, rec_ids, lb, starts, l);
    j.hist = hist;
    j.out = out;
    kcpu_fold_keys(&j);
}

static void cpu_fold_keys_q8(mt_device *d, int64_t n, int64_t heads, int64_t dk,
                             const uint32_t *hist, int64_t la, const int32_t *ids,
                             const int32_t *lens, const float *rec, const int32_t *rec_ids,
                             int64_t lb, const int32_t *starts, uint32_t *out, int64_t l) {
    (void)d;
    kcpu_fold_job j = fold_job(n, heads, dk, la, ids, lens, rec, rec_ids, lb, starts, l);
    j.histq = hist;
    j.outq = out;
    kcpu_fold_keys(&j);
}

static void cpu_keys_q8_f32(mt_device *d, int64_t rows, int64_t d4, int64_t len, const uint32_t *x,
                            float *y) {
    (void)d;
    kcpu_keys_q8_f32(rows, d4, len, x, y);
}

static bool cpu_fold_keys_fast(mt_device *d) {
    (void)d;
    return kcpu_fold_keys_fast();
}

/* Enough for every variant (the active one may change between a build and
** its forward only where tests force an ISA). */
static size_t cpu_igemm_argmax_scratch_bytes(mt_device *d, int bits, int64_t m, int64_t k,
                                             int64_t n) {
    (void)d;
    size_t a = kcpu_gemm_int_argmax_scratch_bytes(bits, KCPU_IGEMM_VNNI, m, k, n);
    size_t b = kcpu_gemm_int_argmax_scratch_bytes(bits, KCPU_IGEMM_REF, m, k, n);
    return a > b ? a : b;
}

static void cpu_igemm_argmax(mt_device *d, int bits, int64_t m, const float *a, int64_t lda,
                             const void *packed, const float *bias, const float *skip, int32_t *idx,
                             float *val, void *scratch) {
    (void)d;
    kcpu_gemm_int_argmax(bits, kcpu_igemm_active(), m, a, lda, packed, bias, skip, idx, val,
                         scratch);
}

static size_t cpu_igemm_topk_scratch_bytes(mt_device *d, int bits, int64_t m, int64_t k,
                                           int64_t n) {
    (void)d;
    return kcpu_gemm_int_topk_scratch_bytes(bits, m, k, n);
}

static void cpu_igemm_topk(mt_device *d, int bits, int64_t m, const float *a, int64_t lda,
                           const void *packed, const float *bias, int32_t top, int32_t *idx,
                           float *logp, void *scratch) {
    (void)d;
    kcpu_gemm_int_topk(bits, kcpu_igemm_active(), m, a, lda, packed, bias, top, idx, logp, scratch);
}

static const mt_device_ops cpu_ops = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .memset0 = cpu_memset0,
    .gather_rows = cpu_gather_rows,
    .scatter_add_rows = cpu_scatter_add_rows,
    .permute = cpu_permute,
    .copy2d = cpu_copy2d,
    .copy2d_bytes = cpu_copy2d_bytes,
    .gather_bytes = cpu_gather_bytes,
    .f16_to_f32 = cpu_f16_to_f32,
    .f32_to_f16 = cpu_f32_to_f16,
    .bf16_to_f32 = cpu_bf16_to_f32,
    .f32_to_bf16 = cpu_f32_to_bf16,
    .f32_to_bf16_pairs = cpu_f32_to_bf16_pairs,
    .unary_fwd = cpu_unary_fwd,
    .unary_bwd = cpu_unary_bwd,
    .binary_fwd = cpu_binary_fwd,
    .binary_bwd = cpu_binary_bwd,
    .acc_f32 = cpu_acc_f32,
    .fill_f32 = cpu_fill_f32,
    .masked_fill_fwd = cpu_masked_fill_fwd,
    .masked_fill_bwd = cpu_masked_fill_bwd,
    .reduce_fwd = cpu_reduce_fwd,
    .reduce_bwd = cpu_reduce_bwd,
    .gemm_f32 = cpu_gemm_f32,
    .gemm_f32_batched = cpu_gemm_f32_batched,
    .gemm_f32_impl = cpu_gemm_f32_impl,
    .gemm_f32_has = cpu_gemm_f32_has,
    .gemm_bf16 = cpu_gemm_bf16,
    .layernorm_fwd = cpu_layernorm_fwd,
    .add_layernorm_fwd = cpu_add_layernorm_fwd,
    .layernorm_bwd = cpu_layernorm_bwd,
    .softmax_fwd = cpu_softmax_fwd,
    .softmax_bwd = cpu_softmax_bwd,
    .log_softmax_fwd = cpu_log_softmax_fwd,
    .log_softmax_bwd = cpu_log_softmax_bwd,
    .xent_fwd = cpu_xent_fwd,
    .xent_bwd = cpu_xent_bwd,
    .softmax_topk = cpu_softmax_topk,
    .argmax_rows = cpu_argmax_rows,
    .attn_rows = cpu_attn_rows,
    .attn_scratch_bytes = cpu_attn_scratch_bytes,
    .attn_bf16 = cpu_attn_bf16,
    .fold_keys = cpu_fold_keys,
    .fold_keys_fast = cpu_fold_keys_fast,
    .fold_keys_q8 = cpu_fold_keys_q8,
    .keys_q8_f32 = cpu_keys_q8_f32,
    .maxabs_f32 = cpu_maxabs_f32,
    .quantize = cpu_quantize,
    .pack_bytes = cpu_pack_bytes,
    .pack_f32 = cpu_pack_f32,
    .pack_q = cpu_pack_q,
    .pack_select = cpu_pack_select,
    .igemm_scratch_bytes = cpu_igemm_scratch_bytes,
    .igemm = cpu_igemm,
    .igemm_quant = cpu_igemm_quant,
    .igemm_prepared = cpu_igemm_prepared,
    .igemm_argmax_scratch_bytes = cpu_igemm_argmax_scratch_bytes,
    .igemm_argmax = cpu_igemm_argmax,
    .igemm_topk_scratch_bytes = cpu_igemm_topk_scratch_bytes,
    .igemm_topk = cpu_igemm_topk,
    .adam_f32 = cpu_adam_f32,
    .smooth_f32 = cpu_smooth_f32,
    .sumsq_f32 = cpu_sumsq_f32,
};

/* Process-wide; never freed.  The ops never write to it. */
static struct mt_device cpu_device = {.ops = &cpu_ops, .kind = 0, .ordinal = 0, .impl = NULL};

mt_device *mt_device_cpu(void) {
    return &cpu_device;
}

/* ------------------------------------------------ the CPU, for app/
** What app/ needs of the kernels (benchmarks, thread settings, the
** OpenBLAS start-up check), so that it includes no kernel header. */

const char *mt_cpu_isa(void) {
    return kcpu_isa_name(kcpu_isa_detect());
}

const char *mt_cpu_isa_active(void) { return kcpu_isa_name(kcpu_isa_active()); }

bool mt_cpu_blas_needs_reexec(void) { return kcpu_blas_needs_reexec(); }

const char *mt_cpu_blas_corename(void) { return kcpu_blas_corename(); }

void mt_cpu_set_blas_threads(int n) { kcpu_blas_set_threads(n); }

void mt_cpu_set_own_threads(int n) { kcpu_set_own_threads(n); }

const char *mt_cpu_gemm_bf16_name(void) { return kcpu_gemm_bf16_name(kcpu_gemm_bf16_best()); }

void mt_cpu_gemm_small_limits(bool trans_b, int64_t *max_m, int64_t *max_batched) {
    kcpu_gemm_f32_small_limits(trans_b, max_m, max_batched);
}

double mt_cpu_fp32_peak_gflops(double seconds) { return kcpu_fp32_peak_gflops(seconds); }

double mt_cpu_int_peak_gops(bool int16, double seconds) {
    return kcpu_int_peak_gops(int16, seconds);
}

const char *mt_cpu_int_peak_what(bool int16) { return kcpu_int_peak_what(int16); }

mt_status mt_cpu_bench(const char *name, int repeat, double peak, FILE *out) {
    char err[160] = "";
    kcpu_bench_io io = {.out = out,
                        .alloc = mt_try_aligned_alloc,
                        .free = mt_aligned_free,
                        .err = err,
                        .err_size = sizeof err};
    switch (kcpu_bench_run(name, repeat, peak, &io)) {
    case KCPU_BENCH_OK: return MT_OK;
    case KCPU_BENCH_UNKNOWN: return mt_seterr(MT_ERR_INVALID, "unknown benchmark '%s'", name);
    default: return mt_seterr(MT_ERR_NOMEM, "%s", err);
    }
}

#ifndef MT_HAVE_CUDA
mt_status mt_device_cuda(int ordinal, mt_device **out) {
    (void)ordinal;
    if (out) {
        *out = NULL;
    }
    return mt_seterr(MT_ERR_UNSUPPORTED, "CUDA device %d: mtpe was built without CUDA", ordinal);
}
#endif

const char *mt_device_name(const mt_device *d) {
    if (!d || !d->ops || !d->ops->name) {
        return "cpu";
    }
    return d->ops->name;
}
