/*
** ops_nn.c: neural-network ops: softmax, log-softmax, cross-entropy with
** label smoothing, layer norm, dropout, masked fill, Marian's highway and
** the multi-head attention convenience builder.  Each op is one block:
** builder, forward and backward side by side, the derivative in the comment.
**
** "rows x cols" views: a tensor [..., C] is rows = numel / C rows of C.
** Op-private scratch (log-probabilities, layer-norm statistics, dropout
** masks) is reserved at build time with graph_node_aux(); nothing here
** allocates in forward or backward.
*/
#include <math.h>
#include <string.h>

#include "graph_impl.h"

/* ------------------------------------------------------------ helpers */

static bool need_f32(mt_graph *g, const char *op, const mt_node *x) {
    if (x->val.dtype == MT_F32) return true;
    graph_fail(g, MT_ERR_INVALID, "%s: expected a float32 input, got %s", op,
               mt_dtype_name(x->val.dtype));
    return false;
}

static int64_t node_numel(const mt_node *n) { return mt_shape_numel(&n->val.shape); }

/* Size of the last dim (1 for a 0-d tensor). */
static int64_t last_dim(const mt_node *n) {
    const mt_shape *s = &n->val.shape;
    return s->ndim > 0 ? s->dim[s->ndim - 1] : 1;
}

static mt_attrs zero_attrs(void) {
    mt_attrs at;
    memset(&at, 0, sizeof at);
    return at;
}

/* Reserves op-private scratch for y unless it already has enough or was
** served computed from the memo cache (then forward does not run). */
static bool reserve_aux(mt_graph *g, mt_node *y, size_t bytes) {
    if (y->computed || (y->aux != NULL && y->aux_bytes >= bytes)) return true;
    return graph_node_aux(g, y, bytes);
}

/* Host-side chunk for reading ids from the device or writing generated
** values to it without allocating (labels checks, dropout masks). */
#define CHUNK 256

/* ------------------------------------------------------------------------
** softmax over the last dim:  y = exp(x - max) / sum exp(x - max)
**   dx += y * (dy - sum_j dy_j y_j)        (per row; uses y only)
*/
static mt_status softmax_forward(mt_graph *g, mt_node *y) {
    const mt_node *x = y->src[0];
    int64_t cols = last_dim(y);
    graph_ops(g)->softmax_fwd(graph_device(g), cols ? node_numel(y) / cols : 0, cols, node_f32(x),
                              node_f32(y));
    return MT_OK;
}

static mt_status softmax_backward(mt_graph *g, mt_node *y) {
    mt_node *x = y->src[0];
    if (!node_wants_grad(x)) return MT_OK;
    int64_t cols = last_dim(y);
    graph_ops(g)->softmax_bwd(graph_device(g), cols ? node_numel(y) / cols : 0, cols, node_f32(y),
                              node_grad_f32(y), node_grad_f32(x));
    return MT_OK;
}

static const mt_op_def op_softmax = {"softmax", softmax_forward, softmax_backward};

mt_node *mt_softmax(mt_graph *g, mt_node *x) {
    if (x == NULL) return NULL;
    if (!need_f32(g, "mt_softmax", x)) return NULL;
    mt_attrs at = zero_attrs();
    mt_node *src[1] = {x};
    return graph_push(g, &op_softmax, x->val.shape, MT_F32, 1, src, &at);
}

/* ------------------------------------------------------------------------
** log_softmax over the last dim:  y = x - max - log sum exp(x - max)
**   dx += dy - exp(y) * sum_j dy_j         (per row; uses y only)
*/
static mt_status log_softmax_forward(mt_graph *g, mt_node *y) {
    const mt_node *x = y->src[0];
    int64_t cols = last_dim(y);
    graph_ops(g)->log_softmax_fwd(graph_device(g), cols ? node_numel(y) / cols : 0, cols,
                                  node_f32(x), node_f32(y));
    return MT_OK;
}

static mt_status log_softmax_backward(mt_graph *g, mt_node *y) {
    mt_node *x = y->src[0];
    if (!node_wants_grad(x)) return MT_OK;
    int64_t cols = last_dim(y);
    graph_ops(g)->log_softmax_bwd(graph_device(g), cols ? node_numel(y) / cols : 0, cols,
                                  node_f32(y), node_grad_f32(y), node_grad_f32(x));
    return MT_OK;
}

static const mt_op_def op_log_softmax = {"log_softmax", log_softmax_forward, log_softmax_backward};

mt_node *mt_log_softmax(mt_graph *g, mt_node *x) {
    if (x == NULL) return NULL;
    if (!need_f32(g, "mt_log_softmax", x)) return NULL;
    mt_attrs at = zero_attrs();
    mt_node *src[1] = {x};
    return graph_push(g, &op_log_softmax, x->val.shape, MT_F32, 1, src, &at);
}

/* ------------------------------------------------------------------------
** cross_entropy:  logits [..., V], labels i32 [...]  ->  loss [...]
**   p = log_softmax(x);  loss = -(1-ls) p[y] - ls/V sum_v p[v]
**   dx[v] += dloss * (softmax[v] - (1-ls) [v == y] - ls/V)
** aux holds p (rows x V) for backward.  Labels come from data, so their
** range is checked at forward (MT_ERR_INVALID naming the label and row).
** attr.f[0] = ls.
*/
static mt_status xent_forward(mt_graph *g, mt_node *y) {
    const mt_node *x = y->src[0], *labels = y->src[1];
    int64_t cols = last_dim(x), rows = node_numel(y);
    mt_status rc = graph_check_ids(g, "mt_cross_entropy", "label", labels, cols);
    if (rc != MT_OK) return rc;
    graph_ops(g)->xent_fwd(graph_device(g), rows, cols, node_f32(x), node_i32(labels), y->attr.f[0],
                           (float *)y->aux, node_f32(y));
    return MT_OK;
}

static mt_status xent_backward(mt_graph *g, mt_node *y) {
    mt_node *x = y->src[0], *labels = y->src[1];
    if (!node_wants_grad(x)) return MT_OK;
    int64_t cols = last_dim(x), rows = node_numel(y);
    graph_ops(g)->xent_bwd(graph_device(g), rows, cols, (const float *)y->aux, node_i32(labels),
                           y->attr.f[0], node_grad_f32(y), node_grad_f32(x));
    return MT_OK;
}

static const mt_op_def op_xent = {"cross_entropy", xent_forward, xent_backward};

mt_node *mt_cross_entropy(mt_graph *g, mt_node *logits, mt_node *labels, float label_smoothing) {
    if (logits == NULL || labels == NULL) return NULL;
    if (!need_f32(g, "mt_cross_entropy", logits)) return NULL;
    char s1[64], s2[64];
    const mt_shape *sx = &logits->val.shape, *sl = &labels->val.shape;
    if (labels->val.dtype != MT_I32) {
        return graph_fail(g, MT_ERR_INVALID, "mt_cross_entropy: labels must be int32, got %s",
                          mt_dtype_name(labels->val.dtype));
    }
    if (!(label_smoothing >= 0.0f && label_smoothing < 1.0f)) {
        return graph_fail(g, MT_ERR_INVALID, "mt_cross_entropy: label smoothing %g not in [0, 1)",
                          (double)label_smoothing);
    }
    /* labels have the leading shape of logits ([1] or [] for 1-D logits) */
    mt_shape out = *sx;
    out.ndim = sx->ndim > 0 ? sx->ndim - 1 : 0;
    if (out.ndim == 0) out = mt_shape1(1);
    bool ok =
        sx->ndim >= 1 && sx->dim[sx->ndim - 1] > 0 && mt_shape_numel(sl) == mt_shape_numel(&out);
    if (ok && sx->ndim >= 2) ok = mt_shape_eq(sl, &out);
    if (!ok) {
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_cross_entropy: logits %s need labels of their leading shape, got %s",
                          mt_shape_str(sx, s1, sizeof s1), mt_shape_str(sl, s2, sizeof s2));
    }
    mt_attrs at = zero_attrs();
    at.f[0] = label_smoothing;
    mt_node *src[2] = {logits, labels};
    mt_node *y = graph_push(g, &op_xent, out, MT_F32, 2, src, &at);
    if (y == NULL) return NULL;
    if (!reserve_aux(g, y, (size_t)node_numel(logits) * sizeof(float))) return NULL;
    return y;
}

/* ------------------------------------------------------------------------
** layer_norm over the last dim D (Marian: population variance, eps inside):
**   mu = mean x;  r = 1/sqrt(var + eps);  xh = (x - mu) r;  y = gamma xh + beta
**   dbeta += sum_rows dy;  dgamma += sum_rows dy xh
**   dx += r (gh - mean(gh) - xh mean(gh xh)),  gh = gamma dy
** aux holds mean and r per row (2 x rows floats).  gamma/beta are [D] or
** [1, D] and optional; src = {x, gamma?, beta?}, attr.i = {has_gamma,
** has_beta}, attr.f[0] = eps.
*/
static mt_status layer_norm_forward(mt_graph *g, mt_node *y) {
    const mt_node *x = y->src[0];
    int s = 1;
    const mt_node *gamma = y->attr.i[0] ? y->src[s++] : NULL;
    const mt_node *beta = y->attr.i[1] ? y->src[s++] : NULL;
    int64_t cols = last_dim(y), rows = node_numel(y) / cols;
    float *mean = y->aux, *rstd = mean + rows;
    graph_ops(g)->layernorm_fwd(graph_device(g), rows, cols, node_f32(x),
                                gamma ? node_f32(gamma) : NULL, beta ? node_f32(beta) : NULL,
                                y->attr.f[0], node_f32(y), mean, rstd);
    return MT_OK;
}

static mt_status layer_norm_backward(mt_graph *g, mt_node *y) {
    mt_node *x = y->src[0];
    int s = 1;
    mt_node *gamma = y->attr.i[0] ? y->src[s++] : NULL;
    mt_node *beta = y->attr.i[1] ? y->src[s++] : NULL;
    float *dx = node_wants_grad(x) ? node_grad_f32(x) : NULL;
    float *dgamma = node_wants_grad(gamma) ? node_grad_f32(gamma) : NULL;
    float *dbeta = node_wants_grad(beta) ? node_grad_f32(beta) : NULL;
    if (dx == NULL && dgamma == NULL && dbeta == NULL) return MT_OK;
    int64_t cols = last_dim(y), rows = node_numel(y) / cols;
    const float *mean = y->aux, *rstd = mean + rows;
    graph_ops(g)->layernorm_bwd(graph_device(g), rows, cols, node_f32(x),
                                gamma ? node_f32(gamma) : NULL, mean, rstd, node_grad_f32(y), dx,
                                dgamma, dbeta);
    return MT_OK;
}

static const mt_op_def op_layer_norm = {"layer_norm", layer_norm_forward, layer_norm_backward};

static bool is_row_vector(const mt_node *p, int64_t d) {
    const mt_shape *s = &p->val.shape;
    return p->val.dtype == MT_F32 &&
           ((s->ndim == 1 && s->dim[0] == d) || (s->ndim == 2 && s->dim[0] == 1 && s->dim[1] == d));
}

/* The checks of both builders: x float32 with a last dim, gamma and beta
** (optional) row vectors of it; src, *n, *at filled from gamma and beta. */
static bool ln_inputs(mt_graph *g, const char *op, mt_node *x, mt_node *gamma, mt_node *beta,
                      float eps, mt_node **src, int *n, mt_attrs *at) {
    if (x == NULL) return false;
    if (!need_f32(g, op, x)) return false;
    const mt_shape *sx = &x->val.shape;
    char s1[64], s2[64];
    int64_t d = sx->ndim > 0 ? sx->dim[sx->ndim - 1] : 0;
    if (d <= 0) {
        graph_fail(g, MT_ERR_INVALID, "%s: cannot normalize x %s", op,
                   mt_shape_str(sx, s1, sizeof s1));
        return false;
    }
    const mt_node *pv[2] = {gamma, beta};
    for (int i = 0; i < 2; i++) {
        if (pv[i] != NULL && !is_row_vector(pv[i], d)) {
            graph_fail(g, MT_ERR_INVALID, "%s: %s %s must be float32 [%lld] or [1, %lld] for x %s",
                       op, i == 0 ? "gamma" : "beta",
                       mt_shape_str(&pv[i]->val.shape, s2, sizeof s2), (long long)d, (long long)d,
                       mt_shape_str(sx, s1, sizeof s1));
            return false;
        }
    }
    *at = zero_attrs();
    at->i[0] = gamma != NULL;
    at->i[1] = beta != NULL;
    at->f[0] = eps;
    if (gamma) src[(*n)++] = gamma;
    if (beta) src[(*n)++] = beta;
    return true;
}

mt_node *mt_layer_norm(mt_graph *g, mt_node *x, mt_node *gamma, mt_node *beta, float eps) {
    mt_node *src[3] = {x, NULL, NULL};
    int n = 1;
    mt_attrs at;
    if (!ln_inputs(g, "mt_layer_norm", x, gamma, beta, eps, src, &n, &at)) return NULL;
    mt_node *y = graph_push(g, &op_layer_norm, x->val.shape, MT_F32, n, src, &at);
    if (y == NULL) return NULL;
    int64_t rows = node_numel(x) / last_dim(x);
    if (!reserve_aux(g, y, (size_t)(2 * rows) * sizeof(float))) return NULL;
    return y;
}

/* add_layer_norm: layer_norm of src[0] + src[1] (same shapes), then gamma,
** beta as layer_norm's (attrs too).  Inference only: no backward, no aux. */
static mt_status add_layer_norm_forward(mt_graph *g, mt_node *y) {
    int s = 2;
    const mt_node *gamma = y->attr.i[0] ? y->src[s++] : NULL;
    const mt_node *beta = y->attr.i[1] ? y->src[s++] : NULL;
    int64_t cols = last_dim(y), rows = node_numel(y) / cols;
    graph_ops(g)->add_layernorm_fwd(graph_device(g), rows, cols, node_f32(y->src[0]),
                                    node_f32(y->src[1]), gamma ? node_f32(gamma) : NULL,
                                    beta ? node_f32(beta) : NULL, y->attr.f[0], node_f32(y), NULL,
                                    NULL);
    return MT_OK;
}

static const mt_op_def op_add_layer_norm = {"add_layer_norm", add_layer_norm_forward, NULL};

mt_node *mt_add_layer_norm(mt_graph *g, mt_node *x, mt_node *res, mt_node *gamma, mt_node *beta,
                           float eps) {
    if (x == NULL || res == NULL) return NULL;
    bool fused = graph_ops(g)->add_layernorm_fwd != NULL && x->val.dtype == MT_F32 &&
                 res->val.dtype == MT_F32 && mt_shape_eq(&x->val.shape, &res->val.shape) &&
                 !node_wants_grad(x) && !node_wants_grad(res) && !node_wants_grad(gamma) &&
                 !node_wants_grad(beta);
    if (!fused) return mt_layer_norm(g, mt_add(g, x, res), gamma, beta, eps);
    mt_node *src[4] = {x, res, NULL, NULL};
    int n = 2;
    mt_attrs at;
    if (!ln_inputs(g, "mt_add_layer_norm", x, gamma, beta, eps, src, &n, &at)) return NULL;
    return graph_push(g, &op_add_layer_norm, x->val.shape, MT_F32, n, src, &at);
}

/* ------------------------------------------------------------------------
** dropout (inverted):  y = x * m,  m_i = 1/(1-p) with probability 1-p, else 0
**   dx += dy * m
** The mask is drawn at forward from the graph's seeded RNG (graph_rng) and
** kept in aux for backward.  When the graph is not training, or p == 0,
** the builder returns x itself (identity, no node).  attr.f[0] = p.
*/
static mt_status dropout_forward(mt_graph *g, mt_node *y) {
    const mt_node *x = y->src[0];
    float buf[CHUNK];
    float *mask = y->aux;
    int64_t n = node_numel(y);
    float p = y->attr.f[0], keep = 1.0f / (1.0f - p);
    mt_rng *rng = graph_rng(g);
    for (int64_t off = 0; off < n; off += CHUNK) {
        int64_t len = n - off < CHUNK ? n - off : CHUNK;
        for (int64_t i = 0; i < len; i++)
            buf[i] = mt_rng_uniform(rng) < p ? 0.0f : keep;
        mt_status rc =
            graph_ops(g)->copy(graph_device(g), mask + off, buf, (size_t)len * sizeof(float), 0);
        if (rc != MT_OK) return rc;
    }
    int64_t dims[1] = {n}, st[1] = {1};
    graph_ops(g)->binary_fwd(graph_device(g), MT_BIN_MUL, 1, dims, st, node_f32(x), st, mask,
                             node_f32(y));
    return MT_OK;
}

static mt_status dropout_backward(mt_graph *g, mt_node *y) {
    mt_node *x = y->src[0];
    if (!node_wants_grad(x)) return MT_OK;
    int64_t n = node_numel(y), dims[1] = {n}, st[1] = {1};
    /* d(x * m)/dx = m: the MUL backward with only da requested */
    graph_ops(g)->binary_bwd(graph_device(g), MT_BIN_MUL, 1, dims, st, node_f32(x), st,
                             (const float *)y->aux, node_grad_f32(y), node_grad_f32(x), NULL);
    return MT_OK;
}

static const mt_op_def op_dropout = {"dropout", dropout_forward, dropout_backward};

mt_node *mt_dropout(mt_graph *g, mt_node *x, float p) {
    if (x == NULL) return NULL;
    if (!(p >= 0.0f && p < 1.0f)) {
        return graph_fail(g, MT_ERR_INVALID, "mt_dropout: probability %g not in [0, 1)", (double)p);
    }
    if (!graph_is_training(g) || p == 0.0f) return x;
    if (!need_f32(g, "mt_dropout", x)) return NULL;
    mt_attrs at = zero_attrs();
    at.f[0] = p;
    mt_node *src[1] = {x};
    mt_node *y = graph_push(g, &op_dropout, x->val.shape, MT_F32, 1, src, &at);
    if (y == NULL) return NULL;
    if (!reserve_aux(g, y, (size_t)node_numel(x) * sizeof(float))) return NULL;
    return y;
}

/* ------------------------------------------------------------------------
** masked_fill:  y = x where mask != 0, value where mask == 0
**   mask (float32) broadcast to x's shape; y has x's shape
**   dx += dy where mask != 0;  the mask gets no gradient
** attr.f[0] = value.
*/
static int mask_strides(const mt_shape *out, const mt_shape *m, int64_t *dims, int64_t *st) {
    if (out->ndim == 0) {
        dims[0] = 1;
        st[0] = 0;
        return 1;
    }
    int nd = out->ndim;
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        int j = i - (nd - m->ndim);
        dims[i] = out->dim[i];
        st[i] = (j < 0 || m->dim[j] == 1) ? 0 : s;
        if (j >= 0) s *= m->dim[j];
    }
    return nd;
}

static mt_status masked_fill_forward(mt_graph *g, mt_node *y) {
    const mt_node *x = y->src[0], *mask = y->src[1];
    int64_t dims[MT_MAX_DIMS], sm[MT_MAX_DIMS];
    int nd = mask_strides(&y->val.shape, &mask->val.shape, dims, sm);
    graph_ops(g)->masked_fill_fwd(graph_device(g), nd, dims, node_f32(x), sm, node_f32(mask),
                                  y->attr.f[0], node_f32(y));
    return MT_OK;
}

static mt_status masked_fill_backward(mt_graph *g, mt_node *y) {
    mt_node *x = y->src[0], *mask = y->src[1];
    if (!node_wants_grad(x)) return MT_OK;
    int64_t dims[MT_MAX_DIMS], sm[MT_MAX_DIMS];
    int nd = mask_strides(&y->val.shape, &mask->val.shape, dims, sm);
    graph_ops(g)->masked_fill_bwd(graph_device(g), nd, dims, sm, node_f32(mask), node_grad_f32(y),
                                  node_grad_f32(x));
    return MT_OK;
}

static const mt_op_def op_masked_fill = {"masked_fill", masked_fill_forward, masked_fill_backward};

mt_node *mt_masked_fill(mt_graph *g, mt_node *x, mt_node *mask, float value) {
    if (x == NULL || mask == NULL) return NULL;
    if (!need_f32(g, "mt_masked_fill", x) || !need_f32(g, "mt_masked_fill", mask)) return NULL;
    const mt_shape *sx = &x->val.shape, *sm = &mask->val.shape;
    bool ok = sm->ndim <= sx->ndim;
    for (int i = 0; ok && i < sm->ndim; i++) {
        int64_t dm = sm->dim[sm->ndim - 1 - i], dx = sx->dim[sx->ndim - 1 - i];
        ok = dm == dx || dm == 1;
    }
    if (!ok) {
        char s1[64], s2[64];
        return graph_fail(g, MT_ERR_INVALID, "mt_masked_fill: mask %s does not broadcast to x %s",
                          mt_shape_str(sm, s2, sizeof s2), mt_shape_str(sx, s1, sizeof s1));
    }
    mt_attrs at = zero_attrs();
    at.f[0] = value;
    mt_node *src[2] = {x, mask};
    return graph_push(g, &op_masked_fill, *sx, MT_F32, 2, src, &at);
}

/* ------------------------------------------------------------------------
** highway (Marian):  out = sigmoid(t) * y + (1 - sigmoid(t)) * x
**                        = x + sigmoid(t) * (y - x)
** Composed from broadcasting ops, so the gradients are theirs:
**   dy += s dout;  dx += (1 - s) dout;  dt += s (1 - s) (y - x) dout
*/
mt_node *mt_highway(mt_graph *g, mt_node *y, mt_node *x, mt_node *t) {
    if (y == NULL || x == NULL || t == NULL) return NULL;
    return mt_add(g, x, mt_mul(g, mt_sigmoid(g, t), mt_sub(g, y, x)));
}

/* ------------------------------------------------------------------------
** attention (Marian's MultiHead without projections), composed:
**   split:   q [B, Tq, D] -> reshape [B, Tq, H, dk] -> permute -> [B, H, Tq, dk]
**            (likewise k, v with Tk), dk = D / H, head h = dims [h dk, (h+1) dk)
**   scores:  bmm(q, k^T) * 1/sqrt(dk) -> [B, H, Tq, Tk]   (+ mask, broadcast)
**   weights: softmax over Tk
**   out:     bmm(weights, v) -> [B, H, Tq, dk] -> permute -> reshape [B, Tq, D]
** Gradients are those of the parts.  With one head the permutes are skipped
** (a reshape puts the single head axis in place).
*/
static mt_node *split_heads(mt_graph *g, mt_node *x, int heads) {
    const mt_shape *s = &x->val.shape;
    int64_t b = s->dim[0], t = s->dim[1], d = s->dim[2];
    if (heads == 1) return mt_reshape(g, x, mt_shape4(b, 1, t, d));
    static const int perm[4] = {0, 2, 1, 3};
    return mt_permute(g, mt_reshape(g, x, mt_shape4(b, t, heads, d / heads)), perm);
}

mt_node *mt_attention(mt_graph *g, mt_node *q, mt_node *k, mt_node *v, mt_node *mask, int heads,
                      mt_node **weights_out) {
    if (weights_out) *weights_out = NULL;
    if (q == NULL || k == NULL || v == NULL) return NULL;
    const mt_shape *sq = &q->val.shape, *sk = &k->val.shape, *sv = &v->val.shape;
    char s1[64], s2[64], s3[64];
    bool ok = sq->ndim == 3 && sk->ndim == 3 && mt_shape_eq(sk, sv) && sq->dim[0] == sk->dim[0] &&
              sq->dim[2] == sk->dim[2];
    if (!ok) {
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_attention: need q [B, Tq, D], k and v [B, Tk, D], got %s, %s, %s",
                          mt_shape_str(sq, s1, sizeof s1), mt_shape_str(sk, s2, sizeof s2),
                          mt_shape_str(sv, s3, sizeof s3));
    }
    int64_t bsz = sq->dim[0], tq = sq->dim[1], dm = sq->dim[2];
    if (heads <= 0 || dm % heads != 0) {
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_attention: model dim %lld not divisible by %d heads", (long long)dm,
                          heads);
    }
    int64_t dk = dm / heads;
    mt_node *qh = split_heads(g, q, heads);
    mt_node *kh = split_heads(g, k, heads);
    mt_node *vh = split_heads(g, v, heads);
    mt_node *scores = mt_bmm(g, qh, kh, false, true, (float)(1.0 / sqrt((double)dk)));
    if (mask != NULL) {
        mt_shape full = mt_shape4(bsz, heads, tq, sk->dim[1]);
        const mt_shape *sm = &mask->val.shape;
        bool mok = sm->ndim <= 4;
        for (int i = 0; mok && i < sm->ndim; i++) {
            int64_t a = sm->dim[sm->ndim - 1 - i], f = full.dim[3 - i];
            mok = a == f || a == 1;
        }
        if (!mok) {
            return graph_fail(g, MT_ERR_INVALID,
                              "mt_attention: mask %s does not broadcast to scores %s",
                              mt_shape_str(sm, s1, sizeof s1), mt_shape_str(&full, s2, sizeof s2));
        }
        scores = mt_add(g, scores, mask);
    }
    mt_node *w = mt_softmax(g, scores);
    mt_node *ctx = mt_bmm(g, w, vh, false, false, 1.0f);
    mt_node *out;
    if (heads == 1) {
        out = mt_reshape(g, ctx, mt_shape3(bsz, tq, dm));
    } else {
        static const int perm[4] = {0, 2, 1, 3};
        out = mt_reshape(g, mt_permute(g, ctx, perm), mt_shape3(bsz, tq, dm));
    }
    if (out != NULL && weights_out) *weights_out = w;
    return out;
}

/* ------------------------------------------------------------------------
** attn_rows:  o[i, h] = softmax(alpha q[i, h] K^T + mask) V  (mt.h), keys
**   and values of row ids[i] of kh, vh [N0, H, Th, dk] (or [N0, Th, H dk]:
**   heads not split), then the row's own kr, vr.  attn_rows_kt (ATTN_KT):
**   keys transposed, kh [N0, H, dk, Th] (scored by broadcast products),
**   values [N0, H, Th, dk] or [N0, Th, H dk].  src: q, kh, vh, then ids,
**   (kr, vr), mask, spans [2, N] (each row's history length and first
**   key: mt_attn_rows_kt_spans) as present (attr.i[0] bits ATTN_IDS, ATTN_RECENT,
**   ATTN_MASK, ATTN_ROW_SPANS).
** attn_spans: row i of q [T, D] over rows start[i] .. start[i] + len[i] of
**   k, v [T0, D] (src: q, k, v, start, len; attr.i[0] = ATTN_SPANS,
**   attr.i[2] = the largest len).
** attr.i[1] = heads, attr.f[0] = alpha; aux: the kernel's scratch
** (attn_scratch_bytes).  The device kernel does scores, mask, softmax and
** the weighted sum in one pass (kcpu_attn_rows).
** Inference only: no backward (the builders refuse inputs that want a
** gradient); training composes mt_bmm / mt_softmax instead.
*/
enum {
    ATTN_IDS = 1,
    ATTN_RECENT = 2,
    ATTN_MASK = 4,
    ATTN_SPANS = 8,
    ATTN_KT = 16,
    ATTN_ROW_SPANS = 32
};

/* k ints at a and at b (device) to ha and hb on the host. */
static mt_status host_pair(mt_graph *g, const int32_t *a, const int32_t *b, int64_t k, int32_t *ha,
                           int32_t *hb) {
    mt_status rc = graph_ops(g)->copy(graph_device(g), ha, a, (size_t)k * sizeof(int32_t), 1);
    if (rc == MT_OK)
        rc = graph_ops(g)->copy(graph_device(g), hb, b, (size_t)k * sizeof(int32_t), 1);
    return rc;
}

/* The n spans start[i] .. start[i] + len[i] (host copies in chunks): each
** inside [0, rows), 1 <= len[i] <= max_len.  (Row ids: graph_check_ids.) */
static mt_status check_spans(mt_graph *g, const mt_node *start, const mt_node *len, int64_t n,
                             int64_t rows, int64_t max_len) {
    int32_t st[CHUNK], ln[CHUNK];
    for (int64_t off = 0; off < n; off += CHUNK) {
        int64_t k = n - off < CHUNK ? n - off : CHUNK;
        mt_status rc = host_pair(g, node_i32(start) + off, node_i32(len) + off, k, st, ln);
        if (rc != MT_OK) return rc;
        for (int64_t t = 0; t < k; t++) {
            if (st[t] < 0 || ln[t] < 1 || ln[t] > max_len || st[t] + (int64_t)ln[t] > rows)
                return mt_seterr(MT_ERR_INVALID,
                                 "mt_attn_spans: row %lld: %d keys from row %d (need 1 .. %lld, "
                                 "within [0, %lld))",
                                 (long long)(off + t), (int)ln[t], (int)st[t], (long long)max_len,
                                 (long long)rows);
        }
    }
    return MT_OK;
}

/* Rows at their own positions: spans [2, N] (host copies in chunks), row i
** reads len[i] <= th history positions and starts at key start[i] <
** len[i] + tr. */
static mt_status check_spans_rows(mt_graph *g, const mt_node *spans, int64_t n, int64_t th,
                                  int64_t tr) {
    int32_t ln[CHUNK], st[CHUNK];
    for (int64_t off = 0; off < n; off += CHUNK) {
        int64_t k = n - off < CHUNK ? n - off : CHUNK;
        mt_status rc = host_pair(g, node_i32(spans) + off, node_i32(spans) + n + off, k, ln, st);
        if (rc != MT_OK) return rc;
        for (int64_t t = 0; t < k; t++)
            if (ln[t] < 0 || ln[t] > th || st[t] < 0 || st[t] >= ln[t] + tr)
                return mt_seterr(MT_ERR_INVALID,
                                 "mt_attn_rows_kt: row %lld: %d history positions of %lld, first "
                                 "key %d (need < %lld)",
                                 (long long)(off + t), (int)ln[t], (long long)th, (int)st[t],
                                 (long long)(ln[t] + tr));
    }
    return MT_OK;
}

static mt_status attn_rows_forward(mt_graph *g, mt_node *y) {
    int flags = (int)y->attr.i[0], at = 3;
    const mt_node *q = y->src[0], *kh = y->src[1], *vh = y->src[2];
    int64_t n = q->val.shape.dim[0], d = last_dim(q), heads = y->attr.i[1];
    kcpu_attn_job j = {.n = n,
                       .heads = heads,
                       .dk = d / heads,
                       .alpha = y->attr.f[0],
                       .q = node_f32(q),
                       .ldq = d,
                       .o = node_f32(y),
                       .ldo = d,
                       .scratch = y->aux};
    bool pairs = kh->val.dtype == MT_BF16; /* mt_attn_rows_kt only (the builder) */
    bool q8 = kh->val.dtype == MT_I8;      /* int8 keys, f16 values: likewise */
    if (q8) {
        j.kh_q8 = (const uint32_t *)kh->val.data;
        j.vh_f16 = (const uint16_t *)vh->val.data;
    } else if (kh->val.dtype == MT_F16) {
        j.kh_f16 = (const uint16_t *)kh->val.data;
        j.vh_f16 = (const uint16_t *)vh->val.data;
    } else if (pairs) {
        j.kh_bf16_pairs = (const uint32_t *)kh->val.data;
        j.vh_bf16_pairs = (const uint32_t *)vh->val.data;
    } else {
        j.kh = node_f32(kh);
        j.vh = node_f32(vh);
    }
    mt_status rc;
    if (flags & ATTN_SPANS) {
        const mt_node *start = y->src[3], *len = y->src[4];
        j.th = y->attr.i[2];
        j.hist_row_stride = j.hist_pos_stride = d;
        j.hist_head_stride = j.dk;
        j.ids = node_i32(start);
        j.lens = node_i32(len);
        rc = check_spans(g, start, len, n, kh->val.shape.dim[0], j.th);
    } else {
        const mt_node *ids = flags & ATTN_IDS ? y->src[at++] : NULL, *kr = NULL, *vr = NULL;
        if (flags & ATTN_RECENT) {
            kr = y->src[at++];
            vr = y->src[at++];
        }
        const mt_node *mask = flags & ATTN_MASK ? y->src[at++] : NULL;
        const mt_node *spans = flags & ATTN_ROW_SPANS ? y->src[at++] : NULL;
        const mt_shape *sk = &kh->val.shape;
        bool kt = flags & ATTN_KT, vsplit = vh->val.shape.ndim == 4 && !pairs;
        j.th = kt ? sk->dim[3] : sk->dim[sk->ndim == 4 ? 2 : 1];
        j.tr = kr ? kr->val.shape.dim[2] : 0;
        j.hist_pos_stride = vsplit ? j.dk : d; /* values (and keys unless kt) */
        j.hist_head_stride = vsplit ? j.th * j.dk : j.dk;
        j.hist_row_stride = (pairs ? vh->val.shape.dim[1] : j.th) * d; /* pairs: [N0, Th2, D, 2] */
        if (kt) { /* keys [N0, H, dk, Th] (pairs: [N0, H, dk / 2, Th, 2]; int8 keys:
                     units [N0, H, dk / 4 + 1, Th]) */
            j.kt_elem_stride = j.th;
            j.kt_head_stride = (pairs ? j.dk / 2 : q8 ? j.dk / 4 + 1 : j.dk) * j.th;
            j.kt_row_stride = heads * j.kt_head_stride;
        }
        j.ids = ids ? node_i32(ids) : NULL;
        j.kr = kr ? node_f32(kr) : NULL;
        j.vr = vr ? node_f32(vr) : NULL;
        j.mask = mask ? node_f32(mask) : NULL;
        const char *op = kt ? "mt_attn_rows_kt" : "mt_attn_rows";
        rc = ids ? graph_check_ids(g, op, "id", ids, sk->dim[0]) : MT_OK;
        if (rc == MT_OK && spans) { /* [2, N]: history lengths, then first keys */
            j.lens = node_i32(spans);
            j.starts = node_i32(spans) + n;
            rc = check_spans_rows(g, spans, n, j.th, j.tr);
        }
    }
    if (rc != MT_OK) return rc;
    graph_ops(g)->attn_rows(graph_device(g), &j);
    return MT_OK;
}

static const mt_op_def op_attn_rows = {"attn_rows", attn_rows_forward, NULL};

bool mt_attn_rows_supported(const mt_graph *g) { return graph_ops(g)->attn_rows != NULL; }

/* Common checks of both builders: the device, no gradients, float32 values
** (ints: the inputs named in is_int; half: those that may be f16 instead). */
static bool attn_inputs_ok(mt_graph *g, const char *op, mt_node *const *src, int n_src,
                           unsigned is_int, unsigned half) {
    if (!mt_attn_rows_supported(g)) {
        graph_fail(g, MT_ERR_UNSUPPORTED, "%s: not on this device", op);
        return false;
    }
    for (int i = 0; i < n_src; i++) {
        if (src[i] == NULL) return false;
        if (node_wants_grad(src[i])) {
            graph_fail(g, MT_ERR_INVALID, "%s: inference only, input %d wants a gradient", op, i);
            return false;
        }
        if ((is_int >> i) & 1) {
            if (src[i]->val.dtype != MT_I32) {
                graph_fail(g, MT_ERR_INVALID, "%s: input %d must be int32", op, i);
                return false;
            }
        } else if (((half >> i) & 1) &&
                   (src[i]->val.dtype == MT_F16 || src[i]->val.dtype == MT_BF16 ||
                    (i == 1 && src[i]->val.dtype == MT_I8))) { /* int8 keys */
            continue;
        } else if (!need_f32(g, op, src[i])) {
            return false;
        }
    }
    return true;
}

static mt_node *attn_push(mt_graph *g, mt_node *const *src, int n_src, int flags, int heads,
                          int64_t keys, float alpha) {
    mt_attrs at = zero_attrs();
    at.i[0] = flags;
    at.i[1] = heads;
    at.i[2] = keys;
    at.f[0] = alpha;
    mt_node *y = graph_push(g, &op_attn_rows, src[0]->val.shape, MT_F32, n_src, src, &at);
    if (y == NULL) return NULL;
    int64_t dk = last_dim(src[0]) / heads;
    if (!reserve_aux(g, y, graph_ops(g)->attn_scratch_bytes(graph_device(g), heads, dk, keys)))
        return NULL;
    return y;
}

/* Both builders of attn_rows (kt: keys transposed, mt_attn_rows_kt). */
static mt_node *attn_rows_build(mt_graph *g, const char *op, bool kt, mt_node *q, mt_node *kh,
                                mt_node *vh, mt_node *ids, mt_node *kr, mt_node *vr, mt_node *mask,
                                mt_node *spans, int heads, float alpha) {
    if (q == NULL || kh == NULL || vh == NULL) return NULL;
    mt_node *src[MT_MAX_SRC] = {q, kh, vh};
    int n_src = 3, flags = kt ? ATTN_KT : 0;
    unsigned is_int = 0;
    if (ids) is_int |= 1u << n_src, src[n_src++] = ids, flags |= ATTN_IDS;
    if (kr || vr) src[n_src++] = kr, src[n_src++] = vr, flags |= ATTN_RECENT;
    if (mask) src[n_src++] = mask, flags |= ATTN_MASK;
    if (spans) is_int |= 1u << n_src, src[n_src++] = spans, flags |= ATTN_ROW_SPANS;
    /* keys and values of mt_attn_rows_kt: both f32, both f16, both
    ** bfloat16 pairs, or int8 keys and f16 values */
    if (!attn_inputs_ok(g, op, src, n_src, is_int, kt ? 3u << 1 : 0)) return NULL;
    bool q8 = kh->val.dtype == MT_I8;
    if (kh->val.dtype != vh->val.dtype && !(q8 && vh->val.dtype == MT_F16))
        return graph_fail(g, MT_ERR_INVALID, "%s: keys of %s, values of %s", op,
                          mt_dtype_name(kh->val.dtype), mt_dtype_name(vh->val.dtype));
    const mt_shape *sq = &q->val.shape, *sk = &kh->val.shape, *sv = &vh->val.shape;
    bool pairs = kh->val.dtype == MT_BF16;
    int64_t n = sq->ndim > 0 ? sq->dim[0] : 0, d = last_dim(q), dk = heads > 0 ? d / heads : 0;
    int64_t th = kt              ? (sk->ndim == (pairs || q8 ? 5 : 4) ? sk->dim[3] : 0)
                 : sk->ndim == 4 ? sk->dim[2]
                 : sk->ndim == 3 ? sk->dim[1]
                                 : 0;
    int64_t tr = kr ? kr->val.shape.dim[2] : 0;
    mt_shape v4 = mt_shape4(sk->dim[0], heads, th, dk), v3 = mt_shape3(sk->dim[0], th, d);
    mt_shape k4 = kt ? mt_shape4(sk->dim[0], heads, dk, th) : v4;
    if (pairs) { /* kcpu_attn_job.h: keys [N0, H, dk / 2, Th, 2], values [N0, ceil(Th / 2), D, 2] */
        k4 = mt_shape4(sk->dim[0], heads, dk / 2, th);
        k4.dim[k4.ndim++] = 2;
        v4 = mt_shape4(sk->dim[0], (th + 1) / 2, d, 2);
    }
    if (q8) { /* kcpu_attn_job.h: int8 keys, units [N0, H, dk / 4 + 1, Th] of 4 bytes */
        k4 = mt_shape4(sk->dim[0], heads, dk / 4 + 1, th);
        k4.dim[k4.ndim++] = 4;
    }
    bool ok = (sq->ndim == 2 || (sq->ndim == 3 && sq->dim[1] == 1)) && heads > 0 &&
              d % heads == 0 && (ids || sk->dim[0] == n) && (!pairs || (kt && dk % 2 == 0)) &&
              (!q8 || (kt && keys_q8_dk(dk))) &&
              (mt_shape_eq(sk, &k4) || (!kt && mt_shape_eq(sk, &v3))) &&
              (kt ? mt_shape_eq(sv, &v4) || (!pairs && mt_shape_eq(sv, &v3)) : mt_shape_eq(sv, sk));
    if (ok && ids) ok = ids->val.shape.ndim == 1 && ids->val.shape.dim[0] == n;
    if (ok && kr) {
        mt_shape want = mt_shape4(n, heads, tr, dk);
        ok = mt_shape_eq(&kr->val.shape, &want) && mt_shape_eq(&vr->val.shape, &want);
    }
    if (ok && mask) {
        mt_shape want = mt_shape4(sk->dim[0], 1, 1, th + tr);
        ok = mt_shape_eq(&mask->val.shape, &want);
    }
    if (ok && spans)
        ok = !mask && spans->val.shape.ndim == 2 && spans->val.shape.dim[0] == 2 &&
             spans->val.shape.dim[1] == n;
    if (!ok || th + tr < 1) {
        char s1[64], s2[64], s3[64], s4[64];
        return graph_fail(g, MT_ERR_INVALID,
                          "%s: need q [N, 1, D], keys %s, values [N0, %d, Th, D/%d] or [N0, Th, "
                          "D]%s, ids i32 [N] (or N0 = N), kr and vr [N, %d, Tr, D/%d], mask [N0, "
                          "1, 1, Th + Tr] (or spans i32 [2, N]), Th + Tr >= 1; got q %s, keys %s, "
                          "values %s, recent %s",
                          op, kt ? "[N0, H, D/H, Th]" : "as the values", heads, heads,
                          kt ? "" : " (the same)", heads, heads, mt_shape_str(sq, s1, sizeof s1),
                          mt_shape_str(sk, s2, sizeof s2), mt_shape_str(sv, s3, sizeof s3),
                          kr ? mt_shape_str(&kr->val.shape, s4, sizeof s4) : "none");
    }
    return attn_push(g, src, n_src, flags, heads, th + tr, alpha);
}

mt_node *mt_attn_rows(mt_graph *g, mt_node *q, mt_node *kh, mt_node *vh, mt_node *ids, mt_node *kr,
                      mt_node *vr, mt_node *mask, int heads, float alpha) {
    return attn_rows_build(g, "mt_attn_rows", false, q, kh, vh, ids, kr, vr, mask, NULL, heads,
                           alpha);
}

mt_node *mt_attn_rows_kt(mt_graph *g, mt_node *q, mt_node *kt, mt_node *vh, mt_node *ids,
                         mt_node *kr, mt_node *vr, mt_node *mask, int heads, float alpha) {
    return attn_rows_build(g, "mt_attn_rows_kt", true, q, kt, vh, ids, kr, vr, mask, NULL, heads,
                           alpha);
}

mt_node *mt_attn_rows_kt_spans(mt_graph *g, mt_node *q, mt_node *kt, mt_node *vh, mt_node *ids,
                               mt_node *kr, mt_node *vr, mt_node *spans, int heads, float alpha) {
    return attn_rows_build(g, "mt_attn_rows_kt", true, q, kt, vh, ids, kr, vr, NULL, spans, heads,
                           alpha);
}

mt_node *mt_attn_spans(mt_graph *g, mt_node *q, mt_node *k, mt_node *v, mt_node *start,
                       mt_node *len, int64_t max_len, int heads, float alpha) {
    if (q == NULL || k == NULL || v == NULL || start == NULL || len == NULL) return NULL;
    mt_node *src[5] = {q, k, v, start, len};
    if (!attn_inputs_ok(g, "mt_attn_spans", src, 5, 3u << 3, 0)) return NULL;
    const mt_shape *sq = &q->val.shape, *sk = &k->val.shape;
    int64_t n = sq->ndim == 2 ? sq->dim[0] : 0, d = last_dim(q);
    mt_shape ids_shape = mt_shape1(n);
    bool ok = sq->ndim == 2 && sk->ndim == 2 && mt_shape_eq(sk, &v->val.shape) && sk->dim[1] == d &&
              heads > 0 && d % heads == 0 && max_len >= 1 &&
              mt_shape_eq(&start->val.shape, &ids_shape) &&
              mt_shape_eq(&len->val.shape, &ids_shape);
    if (!ok) {
        char s1[64], s2[64];
        return graph_fail(g, MT_ERR_INVALID,
                          "mt_attn_spans: need q [T, D], k and v [T0, D] with D divisible by %d "
                          "heads, int32 start and len [T], max_len >= 1; got q %s, k %s, max_len "
                          "%lld",
                          heads, mt_shape_str(sq, s1, sizeof s1), mt_shape_str(sk, s2, sizeof s2),
                          (long long)max_len);
    }
    return attn_push(g, src, 5, ATTN_SPANS, heads, max_len, alpha);
}
