/*
** ops_shape.c: ops that move data without arithmetic: reshape, transpose /
** permute, concat, slice, gather_rows (embedding lookup) and index_select
** (beam reordering).  Each op is one block: builder, forward and backward
** side by side, the derivative in the comment.
**
** Reshape is a view: its value aliases the source's data (no copy), its
** gradient is its own buffer added into the source's gradient.  (graph_push
** still reserves a value buffer for it, which stays unused; a memoized
** reshape copies into that buffer instead, so that cached values never
** alias memory of another lifetime.)  Every other
** op here writes a fresh contiguous value.  "[outer, n, inner]" views put
** the dims before an axis into outer and those after it into inner.
*/
#include <stdio.h>
#include <string.h>

#include "graph_impl.h"

/* ------------------------------------------------------------ helpers */

static bool need_f32(mt_graph *g, const char *op, const mt_node *x) {
    if (x->val.dtype == MT_F32) return true;
    graph_fail(g, MT_ERR_INVALID, "%s: expected a float32 input, got %s", op,
               mt_dtype_name(x->val.dtype));
    return false;
}

/* concat and index_select also move f16 and bfloat16 values (the decoding
** caches kept in half precision, mt_decode_params.caches), and
** mt_cast converts them; they never want a gradient. */
static bool need_f32_or_f16(mt_graph *g, const char *op, const mt_node *x) {
    if (x->val.dtype == MT_F32 || x->val.dtype == MT_F16 || x->val.dtype == MT_BF16) return true;
    graph_fail(g, MT_ERR_INVALID, "%s: expected a float32, float16 or bfloat16 input, got %s", op,
               mt_dtype_name(x->val.dtype));
    return false;
}

/* The ops that only move bytes (concat, slice, index_select) also take int8
** (the fused attention's int8 keys: mt_pack_rows_kq). */
static bool need_movable(mt_graph *g, const char *op, const mt_node *x) {
    return x->val.dtype == MT_I8 || need_f32_or_f16(g, op, x);
}

static int64_t node_numel(const mt_node *n) { return mt_shape_numel(&n->val.shape); }

static mt_attrs zero_attrs(void) {
    mt_attrs at;
    memset(&at, 0, sizeof at);
    return at;
}

/* Normalizes a possibly negative axis; -1 when out of range. */
static int norm_axis(int axis, int ndim) {
    int ax = axis < 0 ? axis + ndim : axis;
    return ax >= 0 && ax < ndim ? ax : -1;
}

static int64_t prod_dims(const mt_shape *s, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= s->dim[i];
    return p;
}

#define CHUNK 256

/* ------------------------------------------------------------------------
** reshape:  y = x with a new shape of the same numel (one dim may be -1)
**   forward: y aliases x's data (a view; nothing is copied; memo nodes copy)
**   dx += dy   (y's gradient is a buffer of its own)
*/
static mt_status reshape_forward(mt_graph *g, mt_node *y) {
    const mt_node *x = y->src[0];
    if (y->is_memo) {
        /* memo storage outlives this round: own a copy, computed once */
        size_t bytes = (size_t)node_numel(y) * mt_dtype_size(y->val.dtype);
        return bytes ? graph_ops(g)->copy(graph_device(g), y->val.data, x->val.data, bytes, 2)
                     : MT_OK;
    }
    y->val.data = x->val.data;
    return MT_OK;
}

static mt_status reshape_backward(mt_graph *g, mt_node *y) {
    mt_node *x = y->src[0];
    if (!node_wants_grad(x)) return MT_OK;
    graph_ops(g)->acc_f32(graph_device(g), node_numel(y), node_grad_f32(y), node_grad_f32(x));
    return MT_OK;
}

static const mt_op_def op_reshape = {"reshape", reshape_forward, reshape_backward};

bool op_is_view(const mt_op_def *op) { return op == &op_reshape; }

mt_node *mt_reshape(mt_graph *g, mt_node *x, mt_shape shape) {
    if (x == NULL) return NULL;
    char s1[64], s2[64];
    int64_t n = node_numel(x), known = 1;
    int infer = -1;
    bool ok = shape.ndim >= 0 && shape.ndim <= MT_MAX_DIMS;
    for (int i = 0; ok && i < shape.ndim; i++) {
        if (shape.dim[i] == -1 && infer < 0) {
            infer = i;
        } else if (shape.dim[i] < 0) {
            ok = false;
        } else {
            known *= shape.dim[i];
        }
    }
    if (ok && infer >= 0) {
        ok = known > 0 && n % known == 0;
        if (ok) shape.dim[infer] = n / known;
    }
    if (ok) ok = mt_shape_numel(&shape) == n;
    if (!ok) {
        return graph_fail(g, MT_ERR_INVALID, "mt_reshape: cannot reshape %s to %s",
                          mt_shape_str(&x->val.shape, s1, sizeof s1),
                          mt_shape_str(&shape, s2, sizeof s2));
    }
    for (int i = shape.ndim; i < MT_MAX_DIMS; i++)
        shape.dim[i] = 0;
    if (mt_shape_eq(&shape, &x->val.shape)) return x;
    mt_attrs at = zero_attrs();
    mt_node *src[1] = {x};
    /* any dtype: only f32 values ever want a gradient */
    return graph_push(g, &op_reshape, shape, x->val.dtype, 1, src, &at);
}

/* ------------------------------------------------------------------------
** permute:  y = x with axes reordered, y.dim[i] = x.dim[perm[i]]
**   dx += permute(dy, inverse(perm))
** The kernel writes rather than adds, so backward permutes dy into aux
** scratch (numel floats, reserved at build when y wants a gradient) and
** adds that into dx.  A permutation that keeps the order of all axes
** longer than 1 moves no data and becomes a reshape.
** attr.i[0..ndim) = perm.  transpose(d0, d1) is the permute swapping two axes.
*/
static mt_status permute_forward(mt_graph *g, mt_node *y) {
    const mt_node *x = y->src[0];
    int perm[MT_MAX_DIMS];
    int nd = x->val.shape.ndim;
    for (int i = 0; i < nd; i++)
        perm[i] = (int)y->attr.i[i];
    graph_ops(g)->permute(graph_device(g), nd, x->val.shape.dim, perm, node_f32(x), node_f32(y));
    return MT_OK;
}

static mt_status permute_backward(mt_graph *g, mt_node *y) {
    mt_node *x = y->src[0];
    if (!node_wants_grad(x)) return MT_OK;
    int inv[MT_MAX_DIMS];
    int nd = y->val.shape.ndim;
    for (int i = 0; i < nd; i++)
        inv[y->attr.i[i]] = i;
    float *tmp = y->aux;
    graph_ops(g)->permute(graph_device(g), nd, y->val.shape.dim, inv, node_grad_f32(y), tmp);
    graph_ops(g)->acc_f32(graph_device(g), node_numel(y), tmp, node_grad_f32(x));
    return MT_OK;
}

static const mt_op_def op_permute = {"permute", permute_forward, permute_backward};

mt_node *mt_permute(mt_graph *g, mt_node *x, const int *perm) {
    if (x == NULL) return NULL;
    if (!need_f32(g, "mt_permute", x)) return NULL;
    const mt_shape *s = &x->val.shape;
    int nd = s->ndim;
    bool seen[MT_MAX_DIMS] = {false};
    bool ok = true;
    for (int i = 0; ok && i < nd; i++) {
        ok = perm[i] >= 0 && perm[i] < nd && !seen[perm[i]];
        if (ok) seen[perm[i]] = true;
    }
    if (!ok) {
        char s1[64], p[64];
        int len = 0;
        for (int i = 0; i < nd && len < (int)sizeof p - 16; i++) {
            len += snprintf(p + len, sizeof p - (size_t)len, i ? ", %d" : "%d", perm[i]);
        }
        p[len] = '\0';
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_permute: [%s] is not a permutation of the axes of %s", p,
                          mt_shape_str(s, s1, sizeof s1));
    }
    mt_shape out;
    memset(&out, 0, sizeof out);
    out.ndim = nd;
    for (int i = 0; i < nd; i++)
        out.dim[i] = s->dim[perm[i]];
    /* order of the non-trivial axes unchanged: the memory layout is too */
    int last = -1;
    bool moves = false;
    for (int i = 0; i < nd && !moves; i++) {
        if (s->dim[perm[i]] == 1) continue;
        moves = perm[i] < last;
        last = perm[i];
    }
    if (!moves) return mt_reshape(g, x, out);
    mt_attrs at = zero_attrs();
    for (int i = 0; i < nd; i++)
        at.i[i] = perm[i];
    mt_node *src[1] = {x};
    mt_node *y = graph_push(g, &op_permute, out, MT_F32, 1, src, &at);
    if (y == NULL) return NULL;
    size_t bytes = (size_t)node_numel(y) * sizeof(float);
    if (node_wants_grad(y) && !(y->aux != NULL && y->aux_bytes >= bytes) &&
        !graph_node_aux(g, y, bytes)) {
        return NULL;
    }
    return y;
}

mt_node *mt_transpose(mt_graph *g, mt_node *x, int d0, int d1) {
    if (x == NULL) return NULL;
    int nd = x->val.shape.ndim;
    int a = norm_axis(d0, nd), b = norm_axis(d1, nd);
    if (a < 0 || b < 0) {
        char s1[64];
        return graph_fail(g, MT_ERR_INVALID, "mt_transpose: axes %d, %d out of range for %s", d0,
                          d1, mt_shape_str(&x->val.shape, s1, sizeof s1));
    }
    int perm[MT_MAX_DIMS];
    for (int i = 0; i < nd; i++)
        perm[i] = i;
    perm[a] = b;
    perm[b] = a;
    return mt_permute(g, x, perm);
}

/* ------------------------------------------------------------------------
** concat along axis:  y = [x_0 | x_1 | ...], dims equal except on axis
**   dx_i += the slice of dy that x_i filled
** With every input viewed as [outer, n_i * inner], each is a strided 2-D
** block copy into y (and back, accumulating, for the gradient).  At most
** MT_MAX_SRC inputs per node: longer lists become a tree of concats.
** attr.i[0] = axis.
*/
static mt_status concat_forward(mt_graph *g, mt_node *y) {
    int ax = (int)y->attr.i[0];
    const mt_shape *s = &y->val.shape;
    int64_t outer = prod_dims(s, 0, ax), inner = prod_dims(s, ax + 1, s->ndim);
    int64_t total = s->dim[ax] * inner, off = 0;
    size_t es = mt_dtype_size(y->val.dtype); /* f32 or f16 */
    for (int i = 0; i < y->n_src; i++) {
        const mt_node *x = y->src[i];
        int64_t cols = x->val.shape.dim[ax] * inner;
        graph_ops(g)->copy2d_bytes(graph_device(g), outer, (size_t)cols * es, x->val.data,
                                   (size_t)cols * es, (char *)y->val.data + (size_t)off * es,
                                   (size_t)total * es);
        off += cols;
    }
    return MT_OK;
}

static mt_status concat_backward(mt_graph *g, mt_node *y) {
    int ax = (int)y->attr.i[0];
    const mt_shape *s = &y->val.shape;
    int64_t outer = prod_dims(s, 0, ax), inner = prod_dims(s, ax + 1, s->ndim);
    int64_t total = s->dim[ax] * inner, off = 0;
    for (int i = 0; i < y->n_src; i++) {
        mt_node *x = y->src[i];
        int64_t cols = x->val.shape.dim[ax] * inner;
        if (node_wants_grad(x)) {
            graph_ops(g)->copy2d(graph_device(g), outer, cols, node_grad_f32(y) + off, total,
                                 node_grad_f32(x), cols, true);
        }
        off += cols;
    }
    return MT_OK;
}

static const mt_op_def op_concat = {"concat", concat_forward, concat_backward};

mt_node *mt_concat(mt_graph *g, mt_node *const *xs, int n, int axis) {
    if (xs == NULL || n <= 0) {
        return graph_fail(g, MT_ERR_INVALID, "mt_concat: no inputs");
    }
    for (int i = 0; i < n; i++) {
        if (xs[i] == NULL) return NULL;
    }
    if (n > MT_MAX_SRC) {
        /* up to MT_MAX_SRC groups, each concatenated recursively */
        mt_node *parts[MT_MAX_SRC];
        int start = 0;
        for (int p = 0; p < MT_MAX_SRC; p++) {
            int len = n / MT_MAX_SRC + (p < n % MT_MAX_SRC);
            parts[p] = mt_concat(g, xs + start, len, axis);
            start += len;
        }
        return mt_concat(g, parts, MT_MAX_SRC, axis);
    }
    const mt_shape *s0 = &xs[0]->val.shape;
    int ax = norm_axis(axis, s0->ndim);
    char s1[64], s2[64];
    if (ax < 0) {
        return graph_fail(g, MT_ERR_INVALID, "mt_concat: axis %d out of range for %s", axis,
                          mt_shape_str(s0, s1, sizeof s1));
    }
    mt_shape out = *s0;
    for (int i = 0; i < n; i++) {
        if (!need_movable(g, "mt_concat", xs[i])) return NULL;
        if (xs[i]->val.dtype != xs[0]->val.dtype) {
            return graph_fail(g, MT_ERR_INVALID, "mt_concat: inputs of %s and %s",
                              mt_dtype_name(xs[0]->val.dtype), mt_dtype_name(xs[i]->val.dtype));
        }
        if (i == 0) continue;
        const mt_shape *si = &xs[i]->val.shape;
        bool ok = si->ndim == s0->ndim;
        for (int d = 0; ok && d < s0->ndim; d++)
            ok = d == ax || si->dim[d] == s0->dim[d];
        if (!ok) {
            return graph_fail(
                g, MT_ERR_INVALID, "mt_concat: shapes %s and %s differ outside axis %d",
                mt_shape_str(s0, s1, sizeof s1), mt_shape_str(si, s2, sizeof s2), axis);
        }
        out.dim[ax] += si->dim[ax];
    }
    if (n == 1) return xs[0];
    mt_attrs at = zero_attrs();
    at.i[0] = ax;
    return graph_push(g, &op_concat, out, xs[0]->val.dtype, n, xs, &at);
}

/* ------------------------------------------------------------------------
** slice:  y = x[..., start : start + len, ...] along axis
**   dx[..., start : start + len, ...] += dy
** x viewed as [outer, n * inner]; the slice is a strided 2-D block copy
** (f32, or f16 values as they are: need_f32_or_f16).  attr.i = {axis, start}.
*/
static mt_status slice_forward(mt_graph *g, mt_node *y) {
    const mt_node *x = y->src[0];
    int ax = (int)y->attr.i[0];
    const mt_shape *s = &x->val.shape;
    int64_t outer = prod_dims(s, 0, ax), inner = prod_dims(s, ax + 1, s->ndim);
    int64_t cols = y->val.shape.dim[ax] * inner;
    size_t es = mt_dtype_size(y->val.dtype);
    graph_ops(g)->copy2d_bytes(graph_device(g), outer, (size_t)cols * es,
                               (const char *)x->val.data + (size_t)(y->attr.i[1] * inner) * es,
                               (size_t)(s->dim[ax] * inner) * es, y->val.data, (size_t)cols * es);
    return MT_OK;
}

static mt_status slice_backward(mt_graph *g, mt_node *y) {
    mt_node *x = y->src[0];
    if (!node_wants_grad(x)) return MT_OK;
    int ax = (int)y->attr.i[0];
    const mt_shape *s = &x->val.shape;
    int64_t outer = prod_dims(s, 0, ax), inner = prod_dims(s, ax + 1, s->ndim);
    int64_t cols = y->val.shape.dim[ax] * inner;
    graph_ops(g)->copy2d(graph_device(g), outer, cols, node_grad_f32(y), cols,
                         node_grad_f32(x) + y->attr.i[1] * inner, s->dim[ax] * inner, true);
    return MT_OK;
}

static const mt_op_def op_slice = {"slice", slice_forward, slice_backward};

mt_node *mt_slice(mt_graph *g, mt_node *x, int axis, int64_t start, int64_t len) {
    if (x == NULL) return NULL;
    if (!need_movable(g, "mt_slice", x)) return NULL;
    const mt_shape *s = &x->val.shape;
    int ax = norm_axis(axis, s->ndim);
    char s1[64];
    if (ax < 0 || start < 0 || len < 0 || start + len > s->dim[ax]) {
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_slice: [%lld, %lld) on axis %d out of range for %s", (long long)start,
                          (long long)(start + len), axis, mt_shape_str(s, s1, sizeof s1));
    }
    if (start == 0 && len == s->dim[ax]) return x;
    mt_shape out = *s;
    out.dim[ax] = len;
    mt_attrs at = zero_attrs();
    at.i[0] = ax;
    at.i[1] = start;
    mt_node *src[1] = {x};
    return graph_push(g, &op_slice, out, x->val.dtype, 1, src, &at);
}

/* ------------------------------------------------------------------------
** gather_rows (embedding lookup):  table [V, D], ids i32 [S...] -> [S..., D]
**   y[i, :] = table[ids[i], :]
**   dtable[ids[i], :] += dy[i, :]      (scatter-add: repeated ids sum)
** Ids come from data: checked against [0, V) at forward (MT_ERR_INVALID).
*/
static mt_status gather_rows_forward(mt_graph *g, mt_node *y) {
    const mt_node *table = y->src[0], *ids = y->src[1];
    int64_t v = table->val.shape.dim[0], d = table->val.shape.dim[1];
    mt_status rc = graph_check_ids(g, "mt_gather_rows", "id", ids, v);
    if (rc != MT_OK) return rc;
    graph_ops(g)->gather_rows(graph_device(g), node_numel(ids), node_i32(ids), d, node_f32(table),
                              node_f32(y));
    return MT_OK;
}

static mt_status gather_rows_backward(mt_graph *g, mt_node *y) {
    mt_node *table = y->src[0], *ids = y->src[1];
    if (!node_wants_grad(table)) return MT_OK;
    graph_ops(g)->scatter_add_rows(graph_device(g), node_numel(ids), node_i32(ids),
                                   table->val.shape.dim[1], node_grad_f32(y), node_grad_f32(table));
    return MT_OK;
}

static const mt_op_def op_gather_rows = {"gather_rows", gather_rows_forward, gather_rows_backward};

mt_node *mt_gather_rows(mt_graph *g, mt_node *table, mt_node *ids) {
    if (table == NULL || ids == NULL) return NULL;
    if (!need_f32(g, "mt_gather_rows", table)) return NULL;
    char s1[64], s2[64];
    const mt_shape *st = &table->val.shape, *si = &ids->val.shape;
    if (st->ndim != 2 || ids->val.dtype != MT_I32 || si->ndim >= MT_MAX_DIMS) {
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_gather_rows: need table [V, D] and int32 ids of at most %d dims, "
                          "got %s and %s %s",
                          MT_MAX_DIMS - 1, mt_shape_str(st, s1, sizeof s1),
                          mt_dtype_name(ids->val.dtype), mt_shape_str(si, s2, sizeof s2));
    }
    mt_shape out = *si;
    out.dim[out.ndim++] = st->dim[1];
    mt_attrs at = zero_attrs();
    mt_node *src[2] = {table, ids};
    return graph_push(g, &op_gather_rows, out, MT_F32, 2, src, &at);
}

/* ------------------------------------------------------------------------
** cache_append:  cache [N0, A, T, B], ids i32 [N] (optional), cur [N, A, 1, B]
**   -> y [N, A, L, B], L = T - off + 1
**   y[i, a, t, :] = cache[r(i), a, off + t, :] (t < L - 1), cur[i, a, 0, :] (t = L - 1)
**   with r(i) = ids[i] or i.  Backward: dcache[r(i), a, off:] += dy[i, a, :L-1],
**   dcur[i] += dy[i, :, L-1] (rows sharing an id accumulate in order).
** Two strided 2-D copies per row; ids come to the host in chunks.
** attr.i = {N0, A, T, B, off}; src = {cache, cur[, ids]}.
*/
typedef struct ca_dims {
    int64_t n0, a, t, b, off, l;
} ca_dims;

static ca_dims ca_dims_of(const mt_node *y) {
    ca_dims d = {y->attr.i[0], y->attr.i[1], y->attr.i[2], y->attr.i[3], y->attr.i[4], 0};
    d.l = d.t - d.off + 1;
    return d;
}

/* Calls f for every output row i with its cache row r. */
static mt_status ca_rows(mt_graph *g, const mt_node *y, const char *op,
                         void (*f)(mt_graph *g, const mt_node *y, int64_t i, int64_t r)) {
    ca_dims d = ca_dims_of(y);
    int64_t n = y->val.shape.dim[0];
    const mt_node *ids = y->n_src > 2 ? y->src[2] : NULL;
    if (ids == NULL) {
        for (int64_t i = 0; i < n; i++)
            f(g, y, i, i);
        return MT_OK;
    }
    mt_status rc = graph_check_ids(g, op, "id", ids, d.n0);
    int32_t buf[CHUNK];
    for (int64_t off = 0; rc == MT_OK && off < n; off += CHUNK) {
        int64_t len = n - off < CHUNK ? n - off : CHUNK;
        rc = graph_ops(g)->copy(graph_device(g), buf, node_i32(ids) + off,
                                (size_t)len * sizeof(int32_t), 1);
        for (int64_t k = 0; rc == MT_OK && k < len; k++)
            f(g, y, off + k, buf[k]);
    }
    return rc;
}

static void ca_fwd_row(mt_graph *g, const mt_node *y, int64_t i, int64_t r) {
    ca_dims d = ca_dims_of(y);
    float *yo = node_f32(y) + i * d.a * d.l * d.b;
    if (d.l > 1)
        graph_ops(g)->copy2d(graph_device(g), d.a, (d.l - 1) * d.b,
                             node_f32(y->src[0]) + (r * d.a * d.t + d.off) * d.b, d.t * d.b, yo,
                             d.l * d.b, false);
    graph_ops(g)->copy2d(graph_device(g), d.a, d.b, node_f32(y->src[1]) + i * d.a * d.b, d.b,
                         yo + (d.l - 1) * d.b, d.l * d.b, false);
}

static void ca_bwd_row(mt_graph *g, const mt_node *y, int64_t i, int64_t r) {
    ca_dims d = ca_dims_of(y);
    const float *dy = node_grad_f32(y) + i * d.a * d.l * d.b;
    if (d.l > 1 && node_wants_grad(y->src[0]))
        graph_ops(g)->copy2d(graph_device(g), d.a, (d.l - 1) * d.b, dy, d.l * d.b,
                             node_grad_f32(y->src[0]) + (r * d.a * d.t + d.off) * d.b, d.t * d.b,
                             true);
    if (node_wants_grad(y->src[1]))
        graph_ops(g)->copy2d(graph_device(g), d.a, d.b, dy + (d.l - 1) * d.b, d.l * d.b,
                             node_grad_f32(y->src[1]) + i * d.a * d.b, d.b, true);
}

static mt_status cache_append_forward(mt_graph *g, mt_node *y) {
    return ca_rows(g, y, "mt_cache_append", ca_fwd_row);
}

static mt_status cache_append_backward(mt_graph *g, mt_node *y) {
    return ca_rows(g, y, "mt_cache_append", ca_bwd_row);
}

static const mt_op_def op_cache_append = {"cache_append", cache_append_forward,
                                          cache_append_backward};

mt_node *mt_cache_append(mt_graph *g, mt_node *cache, mt_node *ids, int64_t off, mt_node *cur) {
    if (cache == NULL || cur == NULL) return NULL;
    if (!need_f32(g, "mt_cache_append", cache) || !need_f32(g, "mt_cache_append", cur)) return NULL;
    const mt_shape *sc = &cache->val.shape, *su = &cur->val.shape;
    int64_t n = ids ? ids->val.shape.dim[0] : sc->dim[0];
    char s1[64], s2[64];
    if (sc->ndim != 4 || su->ndim != 4 || su->dim[0] != n || su->dim[1] != sc->dim[1] ||
        su->dim[2] != 1 || su->dim[3] != sc->dim[3] || off < 0 || off > sc->dim[2] ||
        (ids && (ids->val.dtype != MT_I32 || ids->val.shape.ndim != 1))) {
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_cache_append: cache %s, %s ids, offset %lld and current %s do not "
                          "fit",
                          mt_shape_str(sc, s1, sizeof s1), ids ? "int32 1-D" : "no", (long long)off,
                          mt_shape_str(su, s2, sizeof s2));
    }
    mt_shape out = *sc;
    out.dim[0] = n;
    out.dim[2] = sc->dim[2] - off + 1;
    mt_attrs at = zero_attrs();
    at.i[0] = sc->dim[0];
    at.i[1] = sc->dim[1];
    at.i[2] = sc->dim[2];
    at.i[3] = sc->dim[3];
    at.i[4] = off;
    mt_node *src[3] = {cache, cur, ids};
    return graph_push(g, &op_cache_append, out, MT_F32, ids ? 3 : 2, src, &at);
}

/* ------------------------------------------------------------------------
** pack_rows:  a [Na, A, La, B] (or none), b [Nb, A, Lb, B] (axis 1 of the
**   views), ids, len, start, b_ids i32 [N] -> y [N, A, L, B]:
**   y[r, :, 0:len[r]] = a[ids[r], :, 0:len[r]]
**   y[r, :, len[r]:len[r] + Lb - start[r]] = b[b_ids[r], :, start[r]:Lb]
**   the rest 0.  f32 or f16 values as they are; inference only.  No len:
**   every row takes all La; no start: all of b's row; no b_ids: row r of b
**   (N = Nb).
** attr.i = {A, La, Lb, B, L, Na, flags (PR_*), Nb}; src: b, then b_ids,
** start, a, ids, len as present.  The host copies the ids and lengths in chunks and
** checks them.  Whole rows with L = La + Lb (a fold of rows at the same
** position) leave no gap, so nothing is zeroed first.
*/
enum { PR_START = 1, PR_A = 2, PR_LEN = 4, PR_KT = 8, PR_BIDS = 16, PR_KQ = 32 };

static mt_status pack_rows_forward(mt_graph *g, mt_node *y) {
    int64_t flags = y->attr.i[6], at = 1;
    const mt_node *b = y->src[0], *bids = flags & PR_BIDS ? y->src[at++] : NULL;
    const mt_node *start = flags & PR_START ? y->src[at++] : NULL;
    const mt_node *a = flags & PR_A ? y->src[at++] : NULL, *ids = a ? y->src[at++] : NULL;
    const mt_node *len = flags & PR_LEN ? y->src[at++] : NULL;
    int64_t na = y->attr.i[5], aa = y->attr.i[0], la = y->attr.i[1], lb = y->attr.i[2];
    int64_t bb = y->attr.i[3], l = y->attr.i[4], n = y->val.shape.dim[0], nbr = y->attr.i[7];
    size_t es = mt_dtype_size(y->val.dtype), pos = (size_t)bb * es; /* bytes per position */
    const mt_device_ops *ops = graph_ops(g);
    mt_device *d = graph_device(g);
    /* every row whole (no len, no start; La = 0 without a) and out_len =
    ** La + Lb: no gaps */
    bool whole = !start && !len && la + lb == l;
    mt_status rc = whole ? MT_OK : ops->memset0(d, y->val.data, (size_t)node_numel(y) * es);
    int32_t bi[CHUNK] = {0}, bl[CHUNK] = {0}, bs[CHUNK] = {0}; /* (no a: no history rows) */
    int32_t br[CHUNK];
    for (int64_t off = 0; off < n && rc == MT_OK; off += CHUNK) {
        int64_t k = n - off < CHUNK ? n - off : CHUNK;
        size_t bytes = (size_t)k * sizeof(int32_t);
        if (a) rc = ops->copy(d, bi, node_i32(ids) + off, bytes, 1);
        if (len && rc == MT_OK) rc = ops->copy(d, bl, node_i32(len) + off, bytes, 1);
        if (start && rc == MT_OK) rc = ops->copy(d, bs, node_i32(start) + off, bytes, 1);
        if (bids && rc == MT_OK) rc = ops->copy(d, br, node_i32(bids) + off, bytes, 1);
        for (int64_t t = 0; !bids && t < k; t++)
            br[t] = (int32_t)(off + t);
        for (int64_t t = 0; a && !len && t < k; t++)
            bl[t] = (int32_t)la;
        for (int64_t t = 0; t < k && rc == MT_OK; t++) {
            int64_t r = off + t, nb = lb - bs[t];
            if (bl[t] < 0 || bl[t] > la || (bl[t] > 0 && (bi[t] < 0 || bi[t] >= na)) || bs[t] < 0 ||
                bs[t] > lb || bl[t] + nb > l || br[t] < 0 || br[t] >= nbr)
                return mt_seterr(MT_ERR_INVALID,
                                 "mt_pack_rows: row %lld takes %d positions of row %d of %lld "
                                 "(of %lld) and %lld from %d (of %lld) of row %d of %lld: more "
                                 "than %lld or outside",
                                 (long long)r, (int)bl[t], (int)bi[t], (long long)na, (long long)la,
                                 (long long)nb, (int)bs[t], (long long)lb, (int)br[t],
                                 (long long)nbr, (long long)l);
            if (flags & PR_KT) continue; /* the chunk's rows in one call below */
            char *yr = (char *)y->val.data + (size_t)(r * aa * l) * pos;
            if (bl[t] > 0)
                ops->copy2d_bytes(d, aa, (size_t)bl[t] * pos,
                                  (const char *)a->val.data + (size_t)(bi[t] * aa * la) * pos,
                                  (size_t)la * pos, yr, (size_t)l * pos);
            if (nb > 0)
                ops->copy2d_bytes(d, aa, (size_t)nb * pos,
                                  (const char *)b->val.data +
                                      (size_t)(br[t] * aa * lb + bs[t]) * pos,
                                  (size_t)lb * pos, yr + (size_t)bl[t] * pos, (size_t)l * pos);
        }
        if ((flags & PR_KQ) && rc == MT_OK) { /* aa = heads, bb = dk: int8 keys */
            ops->fold_keys_q8(d, k, aa, bb, a ? (const uint32_t *)a->val.data : NULL, la, bi, bl,
                              node_f32(b), br, lb, bs,
                              (uint32_t *)y->val.data + off * aa * (bb / 4 + 1) * l, l);
        } else if ((flags & PR_KT) && rc == MT_OK) { /* aa = heads, bb = dk */
            ops->fold_keys(d, k, aa, bb, a ? a->val.data : NULL, la, bi, bl, node_f32(b), br, lb,
                           bs, (uint16_t *)y->val.data + off * aa * bb * l, l);
        }
    }
    return rc;
}

static const mt_op_def op_pack_rows = {"pack_rows", pack_rows_forward, NULL};

/* The sources of a pack_rows node in their order (b, b_ids, start, a, ids,
** len as present) into src, their count into *n_src, the flags saying which
** are there (PR_*) into *flags; the rows of the result (b_ids', or b's)
** into *n.  Checks the integer ones (and with floats, a and b are f32 or
** f16); false after recording the error. */
static bool pack_sources(mt_graph *g, const char *op, bool floats, mt_node *a, mt_node *ids,
                         mt_node *len, mt_node *b, mt_node *b_ids, mt_node *start, mt_node **src,
                         int *n_src, int64_t *flags, int64_t *n) {
    mt_node *all[6] = {b, b_ids, start, a, a ? ids : NULL, a ? len : NULL};
    *flags =
        (start ? PR_START : 0) | (a ? PR_A : 0) | (a && len ? PR_LEN : 0) | (b_ids ? PR_BIDS : 0);
    *n = b_ids ? b_ids->val.shape.dim[0] : b->val.shape.dim[0];
    *n_src = 0;
    for (int i = 0; i < 6; i++) {
        if (all[i] == NULL) continue;
        if (node_wants_grad(all[i])) {
            graph_fail(g, MT_ERR_INVALID, "%s: inference only", op);
            return false;
        }
        if (i == 0 || i == 3) {
            if (floats && !need_f32_or_f16(g, op, all[i])) return false;
        } else if (all[i]->val.dtype != MT_I32 || all[i]->val.shape.ndim != 1 ||
                   all[i]->val.shape.dim[0] != *n) {
            graph_fail(g, MT_ERR_INVALID,
                       "%s: ids, lengths, starts and b's ids must be int32 [N], one per row of "
                       "the result",
                       op);
            return false;
        }
        src[(*n_src)++] = all[i];
    }
    return true;
}

mt_node *mt_pack_rows(mt_graph *g, mt_node *a, mt_node *ids, mt_node *len, mt_node *b,
                      mt_node *b_ids, mt_node *start, int axis, int64_t out_len) {
    if (b == NULL || (a && ids == NULL)) return NULL;
    mt_node *src[6];
    int n_src;
    int64_t flags, n;
    if (!pack_sources(g, "mt_pack_rows", true, a, ids, len, b, b_ids, start, src, &n_src, &flags,
                      &n))
        return NULL;
    const mt_shape *sb = &b->val.shape;
    int ax = norm_axis(axis, sb->ndim);
    char s1[64], s2[64];
    bool ok = ax > 0 && out_len >= 0;
    if (ok && a) {
        const mt_shape *sa = &a->val.shape;
        ok = a->val.dtype == b->val.dtype && sa->ndim == sb->ndim;
        for (int i = 1; ok && i < sb->ndim; i++)
            ok = i == ax || sa->dim[i] == sb->dim[i];
    }
    if (!ok)
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_pack_rows: history %s and rows %s (axis %d, length %lld) do not fit",
                          a ? mt_shape_str(&a->val.shape, s1, sizeof s1) : "none",
                          mt_shape_str(sb, s2, sizeof s2), axis, (long long)out_len);
    mt_shape out = *sb;
    out.dim[0] = n;
    out.dim[ax] = out_len;
    mt_attrs at = zero_attrs();
    at.i[0] = prod_dims(sb, 1, ax);
    at.i[1] = a ? a->val.shape.dim[ax] : 0;
    at.i[2] = sb->dim[ax];
    at.i[3] = prod_dims(sb, ax + 1, sb->ndim);
    at.i[4] = out_len;
    at.i[5] = a ? a->val.shape.dim[0] : 0;
    at.i[6] = flags;
    at.i[7] = sb->dim[0];
    return graph_push(g, &op_pack_rows, out, b->val.dtype, n_src, src, &at);
}

/* mt_pack_rows of keys transposed per head and converted to f16 in one op
** (kcpu_fold_keys): b f32 [N, H, Lb, dk] untransposed, a f16 [Na, H, dk,
** La] or NULL; y f16 [N, H, dk, out_len] = mt_pack_rows(a, ids, len,
** f16(b with its last two axes swapped), b_ids, start, 3, out_len), bit for
** bit.
** attr.i as pack_rows's with A = H, B = dk. */
bool mt_pack_rows_kt_supported(const mt_graph *g) {
    const mt_device_ops *ops = graph_ops(g);
    return ops->fold_keys != NULL && ops->fold_keys_fast != NULL &&
           ops->fold_keys_fast(graph_device((mt_graph *)g));
}

mt_node *mt_pack_rows_kt(mt_graph *g, mt_node *a, mt_node *ids, mt_node *len, mt_node *b,
                         mt_node *b_ids, mt_node *start, int64_t out_len) {
    if (b == NULL || (a && ids == NULL)) return NULL;
    if (graph_ops(g)->fold_keys == NULL)
        return graph_fail(g, MT_ERR_UNSUPPORTED, "mt_pack_rows_kt: not on device %s",
                          graph_ops(g)->name);
    mt_node *src[6];
    int n_src;
    int64_t flags, n;
    if (!pack_sources(g, "mt_pack_rows_kt", false, a, ids, len, b, b_ids, start, src, &n_src,
                      &flags, &n))
        return NULL;
    const mt_shape *sb = &b->val.shape, *sa = a ? &a->val.shape : NULL;
    bool ok = b->val.dtype == MT_F32 && sb->ndim == 4 && out_len >= 0 &&
              (!a || (a->val.dtype == MT_F16 && sa->ndim == 4 && sa->dim[1] == sb->dim[1] &&
                      sa->dim[2] == sb->dim[3]));
    if (!ok) {
        char s1[64], s2[64];
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_pack_rows_kt: history %s %s and keys %s %s (length %lld) do not fit: "
                          "need f16 [Na, H, dk, La] and f32 [N, H, Lb, dk]",
                          a ? mt_dtype_name(a->val.dtype) : "none",
                          a ? mt_shape_str(sa, s1, sizeof s1) : "", mt_dtype_name(b->val.dtype),
                          mt_shape_str(sb, s2, sizeof s2), (long long)out_len);
    }
    mt_attrs at = zero_attrs();
    at.i[0] = sb->dim[1];
    at.i[1] = a ? sa->dim[3] : 0;
    at.i[2] = sb->dim[2];
    at.i[3] = sb->dim[3];
    at.i[4] = out_len;
    at.i[5] = a ? sa->dim[0] : 0;
    at.i[6] = PR_KT | flags;
    at.i[7] = sb->dim[0];
    return graph_push(g, &op_pack_rows, mt_shape4(n, sb->dim[1], sb->dim[3], out_len), MT_F16,
                      n_src, src, &at);
}

/* mt_pack_rows into int8 keys (kcpu_attn_job.h: kh_q8) in one op
** (kcpu_fold_job histq, outq): b f32 [N, H, Lb, dk] untransposed, dk a
** multiple of 4 up to KCPU_Q8_DK_MAX; a int8 keys [Na, H, dk / 4 + 1, La,
** 4] or NULL; y int8 keys [N, H, dk / 4 + 1, out_len, 4]: a's positions as
** they are, b's quantized per key.  attr.i as pack_rows_kt's. */
bool mt_pack_rows_kq_supported(const mt_graph *g, int64_t dk) {
    return graph_ops(g)->fold_keys_q8 != NULL && keys_q8_dk(dk);
}

mt_node *mt_pack_rows_kq(mt_graph *g, mt_node *a, mt_node *ids, mt_node *len, mt_node *b,
                         mt_node *b_ids, mt_node *start, int64_t out_len) {
    if (b == NULL || (a && ids == NULL)) return NULL;
    mt_node *src[6];
    int n_src;
    int64_t flags, n;
    if (!pack_sources(g, "mt_pack_rows_kq", false, a, ids, len, b, b_ids, start, src, &n_src,
                      &flags, &n))
        return NULL;
    const mt_shape *sb = &b->val.shape, *sa = a ? &a->val.shape : NULL;
    int64_t dk = sb->ndim == 4 ? sb->dim[3] : 0;
    bool ok = b->val.dtype == MT_F32 && sb->ndim == 4 && out_len >= 0 &&
              mt_pack_rows_kq_supported(g, dk) &&
              (!a || (a->val.dtype == MT_I8 && sa->ndim == 5 && sa->dim[1] == sb->dim[1] &&
                      sa->dim[2] == dk / 4 + 1 && sa->dim[4] == 4));
    if (!ok) {
        char s1[64], s2[64];
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_pack_rows_kq: history %s %s and keys %s %s (length %lld) do not fit: "
                          "need int8 [Na, H, dk/4 + 1, La, 4] and f32 [N, H, Lb, dk], dk a "
                          "multiple of 4 up to 256, on a device with the fold (%s)",
                          a ? mt_dtype_name(a->val.dtype) : "none",
                          a ? mt_shape_str(sa, s1, sizeof s1) : "", mt_dtype_name(b->val.dtype),
                          mt_shape_str(sb, s2, sizeof s2), (long long)out_len, graph_ops(g)->name);
    }
    mt_attrs at = zero_attrs();
    at.i[0] = sb->dim[1];
    at.i[1] = a ? sa->dim[3] : 0;
    at.i[2] = sb->dim[2];
    at.i[3] = dk;
    at.i[4] = out_len;
    at.i[5] = a ? sa->dim[0] : 0;
    at.i[6] = PR_KT | PR_KQ | flags;
    at.i[7] = sb->dim[0];
    mt_shape out = mt_shape4(n, sb->dim[1], dk / 4 + 1, out_len);
    out.dim[out.ndim++] = 4;
    return graph_push(g, &op_pack_rows, out, MT_I8, n_src, src, &at);
}

/* ------------------------------------------------------------------------
** keys_q8_f32:  int8 keys x [..., H, dk/4 + 1, L, 4] (mt_pack_rows_kq) ->
**   y f32 [..., H, dk, L]: y[.., c, t] = k8_c(t) scale(t), the
**   keys as the fused attention's int8 path holds them, for the composed
**   ops (a decoding step that wants attention weights).  Inference only.
*/
static mt_status keys_q8_f32_forward(mt_graph *g, mt_node *y) {
    const mt_node *x = y->src[0];
    const mt_shape *s = &x->val.shape;
    int64_t l = s->dim[s->ndim - 2], d4 = s->dim[s->ndim - 3] - 1;
    graph_ops(g)->keys_q8_f32(graph_device(g), node_numel(x) / ((d4 + 1) * l * 4), d4, l,
                              (const uint32_t *)x->val.data, node_f32(y));
    return MT_OK;
}

static const mt_op_def op_keys_q8_f32 = {"keys_q8_f32", keys_q8_f32_forward, NULL};

mt_node *mt_keys_q8_f32(mt_graph *g, mt_node *x) {
    if (x == NULL) return NULL;
    const mt_shape *s = &x->val.shape;
    char s1[64];
    if (x->val.dtype != MT_I8 || s->ndim < 3 || s->dim[s->ndim - 1] != 4 ||
        s->dim[s->ndim - 3] < 2 || graph_ops(g)->keys_q8_f32 == NULL) {
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_keys_q8_f32: need int8 keys [..., dk/4 + 1, L, 4] on a device that "
                          "reads them, got %s %s",
                          mt_dtype_name(x->val.dtype), mt_shape_str(s, s1, sizeof s1));
    }
    mt_shape out = *s;
    out.ndim--;
    out.dim[out.ndim - 2] = 4 * (s->dim[s->ndim - 3] - 1);
    mt_node *src[1] = {x};
    return graph_push(g, &op_keys_q8_f32, out, MT_F32, 1, src, NULL);
}

/* ------------------------------------------------------------------------
** index_select:  x viewed as [outer, N, inner], ids i32 [K] -> [outer, K, inner]
**   y[o, j, :] = x[o, ids[j], :]
**   dx[o, ids[j], :] += dy[o, j, :]
** One row gather (rows of inner floats) per outer index; for axis 0 (beam
** reordering) that is a single gather.  Ids are checked against [0, N) at
** forward.  attr.i = {outer, N, inner}.
*/
static mt_status index_select_forward(mt_graph *g, mt_node *y) {
    const mt_node *x = y->src[0], *ids = y->src[1];
    int64_t outer = y->attr.i[0], n = y->attr.i[1], inner = y->attr.i[2], k = node_numel(ids);
    mt_status rc = graph_check_ids(g, "mt_index_select", "id", ids, n);
    if (rc != MT_OK) return rc;
    size_t es = mt_dtype_size(y->val.dtype); /* f32 or f16 */
    for (int64_t o = 0; o < outer; o++) {
        graph_ops(g)->gather_bytes(graph_device(g), k, node_i32(ids), (size_t)inner * es,
                                   (const char *)x->val.data + (size_t)(o * n * inner) * es,
                                   (char *)y->val.data + (size_t)(o * k * inner) * es);
    }
    return MT_OK;
}

static mt_status index_select_backward(mt_graph *g, mt_node *y) {
    mt_node *x = y->src[0], *ids = y->src[1];
    if (!node_wants_grad(x)) return MT_OK;
    int64_t outer = y->attr.i[0], n = y->attr.i[1], inner = y->attr.i[2], k = node_numel(ids);
    for (int64_t o = 0; o < outer; o++) {
        graph_ops(g)->scatter_add_rows(graph_device(g), k, node_i32(ids), inner,
                                       node_grad_f32(y) + o * k * inner,
                                       node_grad_f32(x) + o * n * inner);
    }
    return MT_OK;
}

static const mt_op_def op_index_select = {"index_select", index_select_forward,
                                          index_select_backward};

mt_node *mt_index_select(mt_graph *g, mt_node *x, int axis, mt_node *ids) {
    if (x == NULL || ids == NULL) return NULL;
    if (!need_movable(g, "mt_index_select", x)) return NULL;
    const mt_shape *s = &x->val.shape, *si = &ids->val.shape;
    int ax = norm_axis(axis, s->ndim);
    char s1[64], s2[64];
    if (ax < 0 || ids->val.dtype != MT_I32 || si->ndim != 1) {
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_index_select: need an axis of x %s and 1-D int32 ids, got axis %d "
                          "and %s %s",
                          mt_shape_str(s, s1, sizeof s1), axis, mt_dtype_name(ids->val.dtype),
                          mt_shape_str(si, s2, sizeof s2));
    }
    mt_shape out = *s;
    out.dim[ax] = si->dim[0];
    mt_attrs at = zero_attrs();
    at.i[0] = prod_dims(s, 0, ax);
    at.i[1] = s->dim[ax];
    at.i[2] = prod_dims(s, ax + 1, s->ndim);
    mt_node *src[2] = {x, ids};
    return graph_push(g, &op_index_select, out, x->val.dtype, 2, src, &at);
}

/* ------------------------------------------------------------------------
** cast:  y = x as float16 (round to nearest even; beyond the f16 range:
**   +-inf) or bfloat16 (nearest even, subnormals to zero: kcpu_f32_to_bf16),
**   or back as float32 (exact).  Inference only: the builder refuses an
**   input that wants a gradient.  attr.i[0] = the target dtype.
*/
static mt_status cast_forward(mt_graph *g, mt_node *y) {
    const mt_node *x = y->src[0];
    if (y->val.dtype == MT_F16) {
        graph_ops(g)->f32_to_f16(graph_device(g), node_numel(y), node_f32(x),
                                 (uint16_t *)y->val.data);
    } else if (y->val.dtype == MT_BF16) {
        graph_ops(g)->f32_to_bf16(graph_device(g), node_numel(y), node_f32(x),
                                  (uint16_t *)y->val.data);
    } else if (x->val.dtype == MT_BF16) {
        graph_ops(g)->bf16_to_f32(graph_device(g), node_numel(y), (const uint16_t *)x->val.data,
                                  node_f32(y));
    } else {
        graph_ops(g)->f16_to_f32(graph_device(g), node_numel(y), (const uint16_t *)x->val.data,
                                 node_f32(y));
    }
    return MT_OK;
}

static const mt_op_def op_cast = {"cast", cast_forward, NULL};

/* ------------------------------------------------------------------------
** cast_pairs:  x [..., 2, L] f32 -> y [..., L, 2] bfloat16: y[..., i, z] =
**   x[..., z, i] rounded as mt_cast to bfloat16 (kcpu_f32_to_bf16_pairs: the
**   fused attention's bfloat16 pairs, kcpu_attn_job.h).  Inference only.
*/
static mt_status cast_pairs_forward(mt_graph *g, mt_node *y) {
    const mt_node *x = y->src[0];
    int64_t len = x->val.shape.dim[x->val.shape.ndim - 1];
    graph_ops(g)->f32_to_bf16_pairs(graph_device(g), node_numel(x) / (2 * len), len, node_f32(x),
                                    (uint32_t *)y->val.data);
    return MT_OK;
}

static const mt_op_def op_cast_pairs = {"cast_pairs", cast_pairs_forward, NULL};

mt_node *mt_cast_pairs(mt_graph *g, mt_node *x) {
    if (x == NULL) return NULL;
    if (!need_f32(g, "mt_cast_pairs", x)) return NULL;
    const mt_shape *s = &x->val.shape;
    char s1[64];
    if (s->ndim < 2 || s->ndim >= MT_MAX_DIMS || s->dim[s->ndim - 2] != 2 ||
        graph_ops(g)->f32_to_bf16_pairs == NULL) {
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_cast_pairs: need [..., 2, L] float32 (up to %d axes) on a device "
                          "with bfloat16 pairs, got %s",
                          MT_MAX_DIMS - 1, mt_shape_str(s, s1, sizeof s1));
    }
    if (node_wants_grad(x)) {
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_cast_pairs: inference only, the input wants a gradient");
    }
    mt_shape out = *s;
    out.dim[s->ndim - 2] = s->dim[s->ndim - 1];
    out.dim[s->ndim - 1] = 2;
    mt_node *src[1] = {x};
    return graph_push(g, &op_cast_pairs, out, MT_BF16, 1, src, NULL);
}

mt_node *mt_cast(mt_graph *g, mt_node *x, mt_dtype dtype) {
    if (x == NULL) return NULL;
    if (!need_f32_or_f16(g, "mt_cast", x)) return NULL;
    if (dtype != MT_F32 && dtype != MT_F16 && dtype != MT_BF16) {
        return graph_fail(g, MT_ERR_INVALID, "mt_cast: to %s (float32, float16 and bfloat16 only)",
                          mt_dtype_name(dtype));
    }
    if (x->val.dtype == dtype) return x;
    if (x->val.dtype != MT_F32 && dtype != MT_F32) {
        return graph_fail(g, MT_ERR_INVALID, "mt_cast: %s to %s (one of them must be float32)",
                          mt_dtype_name(x->val.dtype), mt_dtype_name(dtype));
    }
    if (node_wants_grad(x)) {
        return graph_fail(g, MT_ERR_INVALID, "mt_cast: inference only, the input wants a gradient");
    }
    mt_attrs at = zero_attrs();
    at.i[0] = dtype;
    mt_node *src[1] = {x};
    return graph_push(g, &op_cast, x->val.shape, dtype, 1, src, &at);
}
