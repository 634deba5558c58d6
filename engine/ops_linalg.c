/*
** ops_linalg.c: matrix products.  mt_matmul (leading dims of a flattened
** into rows, b 2-D), mt_bmm (batched, equal leading dims, alpha scale) and
** mt_affine (x.W + b fused: bias broadcast into C, then GEMM with beta 1).
**
** Notation: op(X) = X or X^T per trans flag; all matrices row-major with
** the stored row length as leading dimension.  For C = alpha op(A) op(B):
**   dop(A) = alpha dC op(B)^T        dop(B) = alpha op(A)^T dC
** and a transposed operand receives the transpose of that:
**   !ta: dA[M,K] += alpha dC op(B)^T      ta: dA[K,M] += alpha op(B) dC^T
**   !tb: dB[K,N] += alpha op(A)^T dC      tb: dB[N,K] += alpha dC^T op(A)
** All gradient GEMMs run with beta = 1, so they accumulate.
**
** mt_matmul (without trans_a) and mt_affine first offer the product to
** graph_gemm_const_b (ops_gemm_int.c): a constant 2-D B in a memoizing
** inference graph with gemm_type int8/int16/auto, or a pre-quantized int8/
** int16 weight, takes the integer (or tuned) path there.
*/
#include <string.h>

#include "graph_impl.h"

/* ------------------------------------------------------------ helpers */

static bool need_f32(mt_graph *g, const char *op, const mt_node *x) {
    if (x->val.dtype == MT_F32) return true;
    graph_fail(g, MT_ERR_INVALID, "%s: expected a float32 input, got %s", op,
               mt_dtype_name(x->val.dtype));
    return false;
}

/* Geometry of one product, shared by matmul and bmm:
** attr.i = {ta, tb, batch, M, K, N}, attr.f[0] = alpha. */
typedef struct mm_geom {
    bool ta, tb;
    int64_t batch, m, k, n;
    float alpha;
} mm_geom;

static mm_geom geom_of(const mt_node *y) {
    mm_geom q;
    q.ta = y->attr.i[0] != 0;
    q.tb = y->attr.i[1] != 0;
    q.batch = y->attr.i[2];
    q.m = y->attr.i[3];
    q.k = y->attr.i[4];
    q.n = y->attr.i[5];
    q.alpha = y->attr.f[0];
    return q;
}

static mt_attrs geom_attrs(bool ta, bool tb, int64_t batch, int64_t m, int64_t k, int64_t n,
                           float alpha) {
    mt_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = ta;
    at.i[1] = tb;
    at.i[2] = batch;
    at.i[3] = m;
    at.i[4] = k;
    at.i[5] = n;
    at.f[0] = alpha;
    return at;
}

/* Shape of a product of a [..., M, K] (its leading dims kept) with M x N
** results, and the product of a's leading dims from `from` on. */
static mt_shape product_shape(const mt_shape *sa, int from, int64_t m, int64_t n, int64_t *batch) {
    int nd = sa->ndim;
    *batch = 1;
    for (int i = from; i < nd - 2; i++)
        *batch *= sa->dim[i];
    mt_shape out = *sa;
    out.dim[nd - 2] = m;
    out.dim[nd - 1] = n;
    return out;
}

/* One product C = alpha op(A) op(B) + beta C: bfloat16 operands where the
** graph asks for them (mt_graph_params.bf16_products) and the device has
** them, else float32. */
static mt_status mm_gemm(mt_graph *g, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                         float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                         float beta, float *c, int64_t ldc) {
    const mt_device_ops *ops = graph_ops(g);
    if (graph_params(g)->bf16_products && ops->gemm_bf16)
        return ops->gemm_bf16(graph_device(g), ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
                              ldc);
    ops->gemm_f32(graph_device(g), ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return MT_OK;
}

/* dC-side product of a gradient, C += alpha op(A) op(B) for `batch` strided
** products: through mm_gemm when `one` (a single product of mt_matmul or
** mt_affine, bfloat16 when asked), else the float32 strided batch. */
static mt_status grad_gemm(mt_graph *g, bool one, int64_t batch, bool ta, bool tb, int64_t m,
                           int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                           int64_t sa, const float *b, int64_t ldb, int64_t sb, float *c,
                           int64_t ldc, int64_t sc) {
    if (one && batch == 1) return mm_gemm(g, ta, tb, m, n, k, alpha, a, lda, b, ldb, 1.0f, c, ldc);
    graph_ops(g)->gemm_f32_batched(graph_device(g), ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb,
                                   1.0f, c, ldc, sc, batch);
    return MT_OK;
}

/* Gradients of `batch` products C_i = alpha op(A_i) op(B_i) with element
** strides sa, sb, sc between consecutive A_i, B_i, C_i.  da or db may be
** NULL; they are written by separate GEMMs that read only values, so they
** may be one buffer (mt_matmul(g, x, x, ...)).  The strided-batched GEMM must
** not see overlapping outputs: callers pass db only when sb != 0 or batch
** == 1 (likewise da and sa).  one: the single product of mt_matmul (not
** transposed a) or mt_affine, whose gradients take bfloat16 operands when
** the graph asks for them, as its forward product does. */
static mt_status mm_grads(mt_graph *g, const mm_geom *q, bool one, const float *a, int64_t sa,
                          const float *b, int64_t sb, const float *dc, int64_t sc, float *da,
                          float *db, int64_t batch) {
    int64_t m = q->m, n = q->n, k = q->k;
    int64_t lda = q->ta ? m : k, ldb = q->tb ? k : n;
    mt_status rc = MT_OK;
    if (da != NULL) {
        if (!q->ta) {
            /* dA[M,K] += alpha dC[M,N] op(B)^T;  op(B)^T is B^T (B [K,N]) or B (B [N,K]) */
            rc = grad_gemm(g, one, batch, false, !q->tb, m, k, n, q->alpha, dc, n, sc, b, ldb, sb,
                           da, lda, sa);
        } else {
            /* dA[K,M] += alpha op(B)[K,N] dC^T */
            rc = grad_gemm(g, one, batch, q->tb, true, k, m, n, q->alpha, b, ldb, sb, dc, n, sc, da,
                           lda, sa);
        }
    }
    if (db != NULL && rc == MT_OK) {
        if (!q->tb) {
            /* dB[K,N] += alpha op(A)^T[K,M] dC;  op(A)^T is A^T (A [M,K]) or A (A [K,M]) */
            rc = grad_gemm(g, one, batch, !q->ta, false, k, n, m, q->alpha, a, lda, sa, dc, n, sc,
                           db, ldb, sb);
        } else {
            /* dB[N,K] += alpha dC^T[N,M] op(A)[M,K] */
            rc = grad_gemm(g, one, batch, true, q->ta, n, k, m, q->alpha, dc, n, sc, a, lda, sa, db,
                           ldb, sb);
        }
    }
    return rc;
}

/* ------------------------------------------------------------------------
** matmul:  C[..., M, N] = op(A)[..., M, K] . op(B)[K, N]
**   A: [..., M, K], or [..., K, M] when ta (each leading slice transposed)
**   B: [K, N], or [N, K] when tb
** Without ta the leading dims of A are rows of one GEMM.  With ta, one
** GEMM per leading slice (a strided batch with B shared, sb = 0); dB then
** sums the per-slice products, done slice by slice to keep outputs
** disjoint.  A b with more than 2 dims makes this an mt_bmm.
** Derivative: see the top of the file (alpha = 1).
*/
static mt_status matmul_forward(mt_graph *g, mt_node *y) {
    const mt_node *a = y->src[0], *b = y->src[1];
    mm_geom q = geom_of(y);
    int64_t lda = q.ta ? q.m : q.k, ldb = q.tb ? q.k : q.n;
    if (!q.ta) {
        return mm_gemm(g, false, q.tb, q.batch * q.m, q.n, q.k, 1.0f, node_f32(a), lda, node_f32(b),
                       ldb, 0.0f, node_f32(y), q.n);
    } else {
        graph_ops(g)->gemm_f32_batched(graph_device(g), true, q.tb, q.m, q.n, q.k, 1.0f,
                                       node_f32(a), lda, q.m * q.k, node_f32(b), ldb, 0, 0.0f,
                                       node_f32(y), q.n, q.m * q.n, q.batch);
    }
    return MT_OK;
}

static mt_status matmul_backward(mt_graph *g, mt_node *y) {
    mt_node *a = y->src[0], *b = y->src[1];
    float *da = node_wants_grad(a) ? node_grad_f32(a) : NULL;
    float *db = node_wants_grad(b) ? node_grad_f32(b) : NULL;
    mm_geom q = geom_of(y);
    const float *av = node_f32(a), *bv = node_f32(b), *dc = node_grad_f32(y);
    if (!q.ta) {
        q.m *= q.batch; /* leading dims are rows of one product */
        return mm_grads(g, &q, true, av, 0, bv, 0, dc, 0, da, db, 1);
    }
    int64_t sa = q.m * q.k, sc = q.m * q.n;
    mt_status rc = mm_grads(g, &q, false, av, sa, bv, 0, dc, sc, da, NULL, q.batch);
    for (int64_t i = 0; db != NULL && rc == MT_OK && i < q.batch; i++)
        rc = mm_grads(g, &q, false, av + i * sa, 0, bv, 0, dc + i * sc, 0, NULL, db, 1);
    return rc;
}

static const mt_op_def op_matmul = {"matmul", matmul_forward, matmul_backward};

mt_node *mt_matmul(mt_graph *g, mt_node *a, mt_node *b, bool trans_a, bool trans_b) {
    if (a == NULL || b == NULL) return NULL;
    if (b->val.shape.ndim > 2) return mt_bmm(g, a, b, trans_a, trans_b, 1.0f);
    if (!trans_a) { /* integer / tuned path for a constant B (ops_gemm_int.c) */
        bool taken = false;
        mt_node *q = graph_gemm_const_b(g, a, b, NULL, trans_b, &taken);
        if (taken) return q;
    }
    if (!need_f32(g, "mt_matmul", a) || !need_f32(g, "mt_matmul", b)) return NULL;
    const mt_shape *sa = &a->val.shape, *sb = &b->val.shape;
    char s1[64], s2[64];
    if (sa->ndim < 2 || sb->ndim != 2) {
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_matmul: need a [..., M, K] and b [K, N], got %s and %s",
                          mt_shape_str(sa, s1, sizeof s1), mt_shape_str(sb, s2, sizeof s2));
    }
    int nd = sa->ndim;
    int64_t m = trans_a ? sa->dim[nd - 1] : sa->dim[nd - 2];
    int64_t k = trans_a ? sa->dim[nd - 2] : sa->dim[nd - 1];
    int64_t kb = trans_b ? sb->dim[1] : sb->dim[0];
    int64_t n = trans_b ? sb->dim[0] : sb->dim[1];
    if (k != kb) {
        return graph_fail(
            g, MT_ERR_INVALID, "mt_matmul: inner dims differ: %s%s x %s%s (%lld vs %lld)",
            mt_shape_str(sa, s1, sizeof s1), trans_a ? "^T" : "", mt_shape_str(sb, s2, sizeof s2),
            trans_b ? "^T" : "", (long long)k, (long long)kb);
    }
    int64_t batch;
    mt_shape out = product_shape(sa, 0, m, n, &batch);
    mt_attrs at = geom_attrs(trans_a, trans_b, batch, m, k, n, 1.0f);
    mt_node *src[2] = {a, b};
    return graph_push(g, &op_matmul, out, MT_F32, 2, src, &at);
}

/* ------------------------------------------------------------------------
** bmm:  C_i[M, N] = alpha op(A_i) . op(B_i) for each leading index i
**   A: [B..., M, K] ([B..., K, M] when ta); B: [B..., K, N] ([B..., N, K]
**   when tb); equal leading dims; C: [B..., M, N].
** Derivative: see the top of the file; one strided-batched GEMM per grad.
*/
static mt_status bmm_forward(mt_graph *g, mt_node *y) {
    const mt_node *a = y->src[0], *b = y->src[1];
    mm_geom q = geom_of(y);
    int64_t lda = q.ta ? q.m : q.k, ldb = q.tb ? q.k : q.n;
    graph_ops(g)->gemm_f32_batched(graph_device(g), q.ta, q.tb, q.m, q.n, q.k, q.alpha, node_f32(a),
                                   lda, q.m * q.k, node_f32(b), ldb, q.k * q.n, 0.0f, node_f32(y),
                                   q.n, q.m * q.n, q.batch);
    return MT_OK;
}

static mt_status bmm_backward(mt_graph *g, mt_node *y) {
    mt_node *a = y->src[0], *b = y->src[1];
    float *da = node_wants_grad(a) ? node_grad_f32(a) : NULL;
    float *db = node_wants_grad(b) ? node_grad_f32(b) : NULL;
    if (da == NULL && db == NULL) return MT_OK;
    mm_geom q = geom_of(y);
    return mm_grads(g, &q, false, node_f32(a), q.m * q.k, node_f32(b), q.k * q.n, node_grad_f32(y),
                    q.m * q.n, da, db, q.batch);
}

static const mt_op_def op_bmm = {"bmm", bmm_forward, bmm_backward};

mt_node *mt_bmm(mt_graph *g, mt_node *a, mt_node *b, bool trans_a, bool trans_b, float alpha) {
    if (a == NULL || b == NULL) return NULL;
    if (!need_f32(g, "mt_bmm", a) || !need_f32(g, "mt_bmm", b)) return NULL;
    const mt_shape *sa = &a->val.shape, *sb = &b->val.shape;
    char s1[64], s2[64];
    int nd = sa->ndim;
    bool ok = nd >= 2 && sb->ndim == nd;
    for (int i = 0; ok && i < nd - 2; i++)
        ok = sa->dim[i] == sb->dim[i];
    if (!ok) {
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_bmm: need a [B..., M, K] and b [B..., K, N] with equal leading "
                          "dims, got %s and %s",
                          mt_shape_str(sa, s1, sizeof s1), mt_shape_str(sb, s2, sizeof s2));
    }
    int64_t m = trans_a ? sa->dim[nd - 1] : sa->dim[nd - 2];
    int64_t k = trans_a ? sa->dim[nd - 2] : sa->dim[nd - 1];
    int64_t kb = trans_b ? sb->dim[nd - 1] : sb->dim[nd - 2];
    int64_t n = trans_b ? sb->dim[nd - 2] : sb->dim[nd - 1];
    if (k != kb) {
        return graph_fail(
            g, MT_ERR_INVALID, "mt_bmm: inner dims differ: %s%s x %s%s (%lld vs %lld)",
            mt_shape_str(sa, s1, sizeof s1), trans_a ? "^T" : "", mt_shape_str(sb, s2, sizeof s2),
            trans_b ? "^T" : "", (long long)k, (long long)kb);
    }
    int64_t batch;
    mt_shape out = product_shape(sa, 0, m, n, &batch);
    mt_attrs at = geom_attrs(trans_a, trans_b, batch, m, k, n, alpha);
    mt_node *src[2] = {a, b};
    return graph_push(g, &op_bmm, out, MT_F32, 2, src, &at);
}

/* ------------------------------------------------------------------------
** bmm_gather:  C[i, j] = alpha op(A[i, j]) . op(B[ids[i], j])
**   A: [N, J..., M, K] (K, M when ta); B: [N0, J..., K, N] (N, K when tb);
**   ids i32 [N] in [0, N0); C: [N, J..., M, N].  An mt_bmm whose B rows are
**   picked by ids: decoding rows attend over a cache kept in an older row
**   order without gathering a copy of it.  One strided batch of J products
**   per i, or per run of rows with one id when M = 1 (a run's rows are then
**   the rows of one product); ids come to the host in chunks.
** Derivative: as bmm, slice by slice; rows sharing an id add to the same
** dB slice, in order.  attr.i = geometry (batch = N J, all the products, as
** graph_flops.c counts them), attr.i[6] = N0, attr.i[7] = J.
*/
static mt_status bmm_gather_run(mt_graph *g, mt_node *y, bool backward) {
    const mt_node *a = y->src[0], *b = y->src[1], *ids = y->src[2];
    mm_geom q = geom_of(y);
    int64_t n = y->val.shape.dim[0], n0 = y->attr.i[6];
    q.batch = y->attr.i[7];
    int64_t sa = q.m * q.k, sb = q.k * q.n, sc = q.m * q.n;
    int64_t lda = q.ta ? q.m : q.k, ldb = q.tb ? q.k : q.n;
    float *da = NULL, *db = NULL;
    if (backward) {
        da = node_wants_grad(a) ? node_grad_f32(a) : NULL;
        db = node_wants_grad(b) ? node_grad_f32(b) : NULL;
        if (da == NULL && db == NULL) return MT_OK;
    }
    int32_t buf[256];
    for (int64_t off = 0; off < n; off += 256) {
        int64_t len = n - off < 256 ? n - off : 256;
        mt_status rc = graph_ops(g)->copy(graph_device(g), buf, node_i32(ids) + off,
                                          (size_t)len * sizeof(int32_t), 1);
        if (rc != MT_OK) return rc;
        for (int64_t t = 0; t < len; t++) {
            int64_t i = off + t, r = buf[t];
            if (r < 0 || r >= n0)
                return mt_seterr(MT_ERR_INVALID,
                                 "mt_bmm_gather: id %d at row %lld outside [0, %lld)", (int)r,
                                 (long long)i, (long long)n0);
            const float *ai = node_f32(a) + i * q.batch * sa, *bi = node_f32(b) + r * q.batch * sb;
            int64_t run = 1;
            while (!backward && q.m == 1 && t + run < len && buf[t + run] == r)
                run++;
            if (run > 1) {
                /* one row each (M = 1, so A transposed or not is the same
                ** memory): the rows i.. of a run of equal ids are one product
                ** of `run` rows per slice j, rows batch * K apart */
                graph_ops(g)->gemm_f32_batched(
                    graph_device(g), false, q.tb, run, q.n, q.k, q.alpha, ai, q.batch * q.k, q.k,
                    bi, ldb, sb, 0.0f, node_f32(y) + i * q.batch * sc, q.batch * q.n, q.n, q.batch);
                t += run - 1;
            } else if (!backward) {
                graph_ops(g)->gemm_f32_batched(graph_device(g), q.ta, q.tb, q.m, q.n, q.k, q.alpha,
                                               ai, lda, sa, bi, ldb, sb, 0.0f,
                                               node_f32(y) + i * q.batch * sc, q.n, sc, q.batch);
            } else {
                mt_status grc = mm_grads(
                    g, &q, false, ai, sa, bi, sb, node_grad_f32(y) + i * q.batch * sc, sc,
                    da ? da + i * q.batch * sa : NULL, db ? db + r * q.batch * sb : NULL, q.batch);
                if (grc != MT_OK) return grc;
            }
        }
    }
    return MT_OK;
}

static mt_status bmm_gather_forward(mt_graph *g, mt_node *y) { return bmm_gather_run(g, y, false); }

static mt_status bmm_gather_backward(mt_graph *g, mt_node *y) { return bmm_gather_run(g, y, true); }

static const mt_op_def op_bmm_gather = {"bmm_gather", bmm_gather_forward, bmm_gather_backward};

mt_node *mt_bmm_gather(mt_graph *g, mt_node *a, mt_node *b, mt_node *ids, bool trans_a,
                       bool trans_b, float alpha) {
    if (a == NULL || b == NULL || ids == NULL) return NULL;
    if (!need_f32(g, "mt_bmm_gather", a) || !need_f32(g, "mt_bmm_gather", b)) return NULL;
    const mt_shape *sa = &a->val.shape, *sb = &b->val.shape, *si = &ids->val.shape;
    char s1[64], s2[64], s3[64];
    int nd = sa->ndim;
    bool ok = nd >= 3 && sb->ndim == nd && ids->val.dtype == MT_I32 && si->ndim == 1 &&
              si->dim[0] == sa->dim[0];
    for (int i = 1; ok && i < nd - 2; i++)
        ok = sa->dim[i] == sb->dim[i];
    int64_t m = trans_a ? sa->dim[nd - 1] : sa->dim[nd - 2];
    int64_t k = trans_a ? sa->dim[nd - 2] : sa->dim[nd - 1];
    int64_t kb = trans_b ? sb->dim[nd - 1] : sb->dim[nd - 2];
    int64_t n = trans_b ? sb->dim[nd - 2] : sb->dim[nd - 1];
    if (!ok || k != kb) {
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_bmm_gather: need a [N, J..., M, K], b [N0, J..., K, N] and int32 "
                          "ids [N] with equal inner dims, got %s%s, %s%s and %s %s",
                          mt_shape_str(sa, s1, sizeof s1), trans_a ? "^T" : "",
                          mt_shape_str(sb, s2, sizeof s2), trans_b ? "^T" : "",
                          mt_dtype_name(ids->val.dtype), mt_shape_str(si, s3, sizeof s3));
    }
    int64_t batch;
    mt_shape out = product_shape(sa, 1, m, n, &batch);
    mt_attrs at = geom_attrs(trans_a, trans_b, sa->dim[0] * batch, m, k, n, alpha);
    at.i[6] = sb->dim[0];
    at.i[7] = batch;
    mt_node *src[3] = {a, b, ids};
    return graph_push(g, &op_bmm_gather, out, MT_F32, 3, src, &at);
}

/* ------------------------------------------------------------------------
** affine:  Y[..., N] = X[..., K] . W[K, N] + b[N]      (Marian's affine)
**   forward:  each row of Y = b (strided copy with source stride 0), then
**             GEMM with beta = 1
**   dX += dY W^T     dW += X^T dY     db += sum over rows of dY
** The column sums of dY go through op-private scratch (aux, N floats),
** reserved at build time when b wants a gradient.  b may be [N] or [1, N];
** other bias shapes fall back to add(matmul(x, w), b); NULL b to matmul.
*/
static mt_status affine_forward(mt_graph *g, mt_node *y) {
    const mt_node *x = y->src[0], *w = y->src[1], *b = y->src[2];
    mm_geom q = geom_of(y);
    int64_t rows = q.batch * q.m;
    graph_ops(g)->copy2d(graph_device(g), rows, q.n, node_f32(b), 0, node_f32(y), q.n, false);
    return mm_gemm(g, false, false, rows, q.n, q.k, 1.0f, node_f32(x), q.k, node_f32(w), q.n, 1.0f,
                   node_f32(y), q.n);
}

static mt_status affine_backward(mt_graph *g, mt_node *y) {
    mt_node *x = y->src[0], *w = y->src[1], *b = y->src[2];
    mm_geom q = geom_of(y);
    q.m *= q.batch;
    float *dx = node_wants_grad(x) ? node_grad_f32(x) : NULL;
    float *dw = node_wants_grad(w) ? node_grad_f32(w) : NULL;
    mt_status rc =
        mm_grads(g, &q, true, node_f32(x), 0, node_f32(w), 0, node_grad_f32(y), 0, dx, dw, 1);
    if (rc != MT_OK) return rc;
    if (node_wants_grad(b)) {
        float *colsum = y->aux;
        graph_ops(g)->reduce_fwd(graph_device(g), MT_RED_SUM, 1, q.m, q.n, node_grad_f32(y),
                                 colsum);
        graph_ops(g)->acc_f32(graph_device(g), q.n, colsum, node_grad_f32(b));
    }
    return MT_OK;
}

static const mt_op_def op_affine = {"affine", affine_forward, affine_backward};

mt_node *mt_affine(mt_graph *g, mt_node *x, mt_node *w, mt_node *b) {
    if (x == NULL || w == NULL) return NULL;
    if (b == NULL) return mt_matmul(g, x, w, false, false);
    const mt_shape *sx = &x->val.shape, *sw = &w->val.shape;
    if (!affine_fusable(x, w, b)) return mt_add(g, mt_matmul(g, x, w, false, false), b);
    bool taken = false; /* integer / tuned path for a constant W (ops_gemm_int.c) */
    mt_node *q = graph_gemm_const_b(g, x, w, b, false, &taken);
    if (taken) return q;
    if (!need_f32(g, "mt_affine", x) || !need_f32(g, "mt_affine", w)) return NULL;
    int nd = sx->ndim;
    if (sx->dim[nd - 1] != sw->dim[0]) {
        char s1[64], s2[64];
        return graph_fail(g, MT_ERR_INVALID, "mt_affine: x %s and W %s: inner dims differ",
                          mt_shape_str(sx, s1, sizeof s1), mt_shape_str(sw, s2, sizeof s2));
    }
    int64_t batch = 1;
    for (int i = 0; i < nd - 2; i++)
        batch *= sx->dim[i];
    int64_t m = sx->dim[nd - 2], k = sw->dim[0], n = sw->dim[1];
    mt_shape out = *sx;
    out.dim[nd - 1] = n;
    mt_attrs at = geom_attrs(false, false, batch, m, k, n, 1.0f);
    mt_node *src[3] = {x, w, b};
    mt_node *y = graph_push(g, &op_affine, out, MT_F32, 3, src, &at);
    if (y == NULL) return NULL;
    if (node_wants_grad(b) && !graph_node_aux(g, y, (size_t)n * sizeof(float))) return NULL;
    return y;
}
