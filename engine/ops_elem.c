/*
** ops_elem.c: elementwise ops (broadcasting binary, unary activations,
** scalar arithmetic) and reductions.  Each op is one block: builder,
** forward and backward side by side, the derivative in the comment.
**
** All ops here compute in f32 through the device vtable (graph_ops(g)).
** Backward ADDS into the sources' gradients and skips sources that do not
** want one (node_wants_grad).  Nothing here allocates after build time.
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

static int64_t node_numel(const mt_node *n) { return mt_shape_numel(&n->val.shape); }

/* NumPy broadcasting over trailing dims: out gets the joint shape.  Returns
** false when a pair of dims differs and neither is 1. */
static bool broadcast_shape(const mt_shape *a, const mt_shape *b, mt_shape *out) {
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    mt_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = nd;
    for (int i = 0; i < nd; i++) {
        int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
        int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
        if (da != db && da != 1 && db != 1) return false;
        s.dim[i] = da == 1 ? db : da;
    }
    *out = s;
    return true;
}

/* Element strides of src per dim of out (0 where src is broadcast).  out
** must be a broadcast of src.  A 0-d out is treated as [1]. */
static int broadcast_strides(const mt_shape *out, const mt_shape *src, int64_t *dims,
                             int64_t *strides) {
    int nd = out->ndim;
    if (nd == 0) {
        dims[0] = 1;
        strides[0] = 0;
        return 1;
    }
    int64_t st = 1;
    for (int i = nd - 1; i >= 0; i--) {
        int j = i - (nd - src->ndim);
        dims[i] = out->dim[i];
        if (j < 0 || src->dim[j] == 1) {
            strides[i] = 0;
        } else {
            strides[i] = st;
        }
        if (j >= 0) st *= src->dim[j];
    }
    return nd;
}

/* ------------------------------------------------------------------------
** add, sub, mul, div:  y = a op b, NumPy broadcasting (y has the joint shape)
**   add:  da += dy            db += dy
**   sub:  da += dy            db -= dy
**   mul:  da += dy * b        db += dy * a
**   div:  da += dy / b        db -= dy * a / b^2
** Gradients of broadcast inputs are summed over the broadcast dims (the
** kernel does the reduction).  attr.i[0] = MT_BIN_*.
*/
static mt_status binary_forward(mt_graph *g, mt_node *y) {
    const mt_node *a = y->src[0], *b = y->src[1];
    int64_t dims[MT_MAX_DIMS], sa[MT_MAX_DIMS], sb[MT_MAX_DIMS];
    int nd = broadcast_strides(&y->val.shape, &a->val.shape, dims, sa);
    broadcast_strides(&y->val.shape, &b->val.shape, dims, sb);
    graph_ops(g)->binary_fwd(graph_device(g), (int)y->attr.i[0], nd, dims, sa, node_f32(a), sb,
                             node_f32(b), node_f32(y));
    return MT_OK;
}

static mt_status binary_backward(mt_graph *g, mt_node *y) {
    mt_node *a = y->src[0], *b = y->src[1];
    float *da = node_wants_grad(a) ? node_grad_f32(a) : NULL;
    float *db = node_wants_grad(b) ? node_grad_f32(b) : NULL;
    if (da == NULL && db == NULL) return MT_OK;
    int64_t dims[MT_MAX_DIMS], sa[MT_MAX_DIMS], sb[MT_MAX_DIMS];
    int nd = broadcast_strides(&y->val.shape, &a->val.shape, dims, sa);
    broadcast_strides(&y->val.shape, &b->val.shape, dims, sb);
    graph_ops(g)->binary_bwd(graph_device(g), (int)y->attr.i[0], nd, dims, sa, node_f32(a), sb,
                             node_f32(b), node_grad_f32(y), da, db);
    return MT_OK;
}

static const mt_op_def op_add = {"add", binary_forward, binary_backward};
static const mt_op_def op_sub = {"sub", binary_forward, binary_backward};
static const mt_op_def op_mul = {"mul", binary_forward, binary_backward};
static const mt_op_def op_div = {"div", binary_forward, binary_backward};

static mt_node *binary(mt_graph *g, const mt_op_def *op, int code, const char *name, mt_node *a,
                       mt_node *b) {
    if (a == NULL || b == NULL) return NULL;
    if (!need_f32(g, name, a) || !need_f32(g, name, b)) return NULL;
    mt_shape out;
    if (!broadcast_shape(&a->val.shape, &b->val.shape, &out)) {
        char sa[64], sb[64];
        return graph_fail(g, MT_ERR_INVALID, "%s: shapes %s and %s do not broadcast", name,
                          mt_shape_str(&a->val.shape, sa, sizeof sa),
                          mt_shape_str(&b->val.shape, sb, sizeof sb));
    }
    mt_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = code;
    mt_node *src[2] = {a, b};
    return graph_push(g, op, out, MT_F32, 2, src, &at);
}

mt_node *mt_add(mt_graph *g, mt_node *a, mt_node *b) {
    return binary(g, &op_add, MT_BIN_ADD, "mt_add", a, b);
}
mt_node *mt_sub(mt_graph *g, mt_node *a, mt_node *b) {
    return binary(g, &op_sub, MT_BIN_SUB, "mt_sub", a, b);
}
mt_node *mt_mul(mt_graph *g, mt_node *a, mt_node *b) {
    return binary(g, &op_mul, MT_BIN_MUL, "mt_mul", a, b);
}
mt_node *mt_div(mt_graph *g, mt_node *a, mt_node *b) {
    return binary(g, &op_div, MT_BIN_DIV, "mt_div", a, b);
}

/* ------------------------------------------------------------------------
** unary family:  y = f(x) elementwise, any shape; dx += dy * f'(x)
**   scale s:       y = s x                      f' = s
**   add_scalar s:  y = x + s                    f' = 1
**   neg:           y = -x                       f' = -1
**   relu:          y = max(x, 0)                f' = [x > 0]
**   swish:         y = x sig(x)                 f' = sig(x) + y (1 - sig(x))
**   gelu (Marian): y = x sig(1.702 x)           f' = s + 1.702 x s (1 - s), s = sig(1.702 x)
**   tanh:          y = tanh x                   f' = 1 - y^2
**   sigmoid:       y = sig(x)                   f' = y (1 - y)
**   exp:           y = e^x                      f' = y
**   ln (mt_ln):    y = ln x                     f' = 1 / x   (mt_log is the logger)
**   sqrt:          y = sqrt x                   f' = 1 / (2 y)
** The kernel evaluates f' from x and y (device.h unary_bwd).
** attr.i[0] = MT_UN_*, attr.f[0] = s (scale, add_scalar).
*/
static mt_status unary_forward(mt_graph *g, mt_node *y) {
    const mt_node *x = y->src[0];
    graph_ops(g)->unary_fwd(graph_device(g), (int)y->attr.i[0], node_numel(y), y->attr.f[0],
                            node_f32(x), node_f32(y));
    return MT_OK;
}

static mt_status unary_backward(mt_graph *g, mt_node *y) {
    mt_node *x = y->src[0];
    if (!node_wants_grad(x)) return MT_OK;
    graph_ops(g)->unary_bwd(graph_device(g), (int)y->attr.i[0], node_numel(y), y->attr.f[0],
                            node_f32(x), node_f32(y), node_grad_f32(y), node_grad_f32(x));
    return MT_OK;
}

static const mt_op_def op_scale = {"scale", unary_forward, unary_backward};
static const mt_op_def op_add_scalar = {"add_scalar", unary_forward, unary_backward};
static const mt_op_def op_neg = {"neg", unary_forward, unary_backward};
static const mt_op_def op_relu = {"relu", unary_forward, unary_backward};
static const mt_op_def op_swish = {"swish", unary_forward, unary_backward};
static const mt_op_def op_gelu = {"gelu", unary_forward, unary_backward};
static const mt_op_def op_tanh = {"tanh", unary_forward, unary_backward};
static const mt_op_def op_sigmoid = {"sigmoid", unary_forward, unary_backward};
static const mt_op_def op_exp = {"exp", unary_forward, unary_backward};
static const mt_op_def op_log = {"log", unary_forward, unary_backward};
static const mt_op_def op_sqrt = {"sqrt", unary_forward, unary_backward};

static mt_node *unary(mt_graph *g, const mt_op_def *op, int code, float alpha, mt_node *x) {
    if (x == NULL) return NULL;
    if (x->val.dtype != MT_F32) {
        return graph_fail(g, MT_ERR_INVALID, "mt_%s: expected a float32 input, got %s", op->name,
                          mt_dtype_name(x->val.dtype));
    }
    mt_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = code;
    at.f[0] = alpha;
    mt_node *src[1] = {x};
    return graph_push(g, op, x->val.shape, MT_F32, 1, src, &at);
}

mt_node *mt_scale(mt_graph *g, mt_node *x, float s) {
    return unary(g, &op_scale, MT_UN_SCALE, s, x);
}
mt_node *mt_add_scalar(mt_graph *g, mt_node *x, float s) {
    return unary(g, &op_add_scalar, MT_UN_ADD_SCALAR, s, x);
}
mt_node *mt_neg(mt_graph *g, mt_node *x) { return unary(g, &op_neg, MT_UN_NEG, 0.0f, x); }
mt_node *mt_relu(mt_graph *g, mt_node *x) { return unary(g, &op_relu, MT_UN_RELU, 0.0f, x); }
mt_node *mt_swish(mt_graph *g, mt_node *x) { return unary(g, &op_swish, MT_UN_SWISH, 0.0f, x); }
mt_node *mt_gelu(mt_graph *g, mt_node *x) { return unary(g, &op_gelu, MT_UN_GELU, 0.0f, x); }
mt_node *mt_tanh(mt_graph *g, mt_node *x) { return unary(g, &op_tanh, MT_UN_TANH, 0.0f, x); }
mt_node *mt_sigmoid(mt_graph *g, mt_node *x) {
    return unary(g, &op_sigmoid, MT_UN_SIGMOID, 0.0f, x);
}
mt_node *mt_exp(mt_graph *g, mt_node *x) { return unary(g, &op_exp, MT_UN_EXP, 0.0f, x); }
mt_node *mt_ln(mt_graph *g, mt_node *x) { return unary(g, &op_log, MT_UN_LOG, 0.0f, x); }
mt_node *mt_sqrt(mt_graph *g, mt_node *x) { return unary(g, &op_sqrt, MT_UN_SQRT, 0.0f, x); }

/* ------------------------------------------------------------------------
** sum, mean, max over one axis (kept as 1);  sum_all -> [1]
** x is viewed as [outer, n, inner], y as [outer, 1, inner]:
**   sum:   y = sum_j x[., j, .]        dx[., j, .] += dy
**   mean:  y = sum_j x[., j, .] / n    dx[., j, .] += dy / n
**   max:   y = max_j x[., j, .]        dx[., j*, .] += dy at the first argmax j*
** attr.i = {MT_RED_*, outer, n, inner}.
*/
static mt_status reduce_forward(mt_graph *g, mt_node *y) {
    const mt_node *x = y->src[0];
    const int64_t *a = y->attr.i;
    graph_ops(g)->reduce_fwd(graph_device(g), (int)a[0], a[1], a[2], a[3], node_f32(x),
                             node_f32(y));
    return MT_OK;
}

static mt_status reduce_backward(mt_graph *g, mt_node *y) {
    mt_node *x = y->src[0];
    if (!node_wants_grad(x)) return MT_OK;
    const int64_t *a = y->attr.i;
    graph_ops(g)->reduce_bwd(graph_device(g), (int)a[0], a[1], a[2], a[3], node_f32(x), node_f32(y),
                             node_grad_f32(y), node_grad_f32(x));
    return MT_OK;
}

static const mt_op_def op_sum = {"sum", reduce_forward, reduce_backward};
static const mt_op_def op_mean = {"mean", reduce_forward, reduce_backward};
static const mt_op_def op_max = {"max", reduce_forward, reduce_backward};
static const mt_op_def op_sum_all = {"sum_all", reduce_forward, reduce_backward};

static mt_node *reduce(mt_graph *g, const mt_op_def *op, int code, const char *name, mt_node *x,
                       int axis) {
    if (x == NULL) return NULL;
    if (!need_f32(g, name, x)) return NULL;
    const mt_shape *s = &x->val.shape;
    int ax = axis < 0 ? axis + s->ndim : axis;
    if (ax < 0 || ax >= s->ndim) {
        char buf[64];
        return graph_fail(g, MT_ERR_INVALID, "%s: axis %d out of range for shape %s", name, axis,
                          mt_shape_str(s, buf, sizeof buf));
    }
    if (s->dim[ax] == 0) {
        char buf[64];
        return graph_fail(g, MT_ERR_INVALID, "%s: cannot reduce the empty axis %d of %s", name,
                          axis, mt_shape_str(s, buf, sizeof buf));
    }
    mt_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = code;
    at.i[1] = 1;
    at.i[2] = s->dim[ax];
    at.i[3] = 1;
    for (int i = 0; i < ax; i++)
        at.i[1] *= s->dim[i];
    for (int i = ax + 1; i < s->ndim; i++)
        at.i[3] *= s->dim[i];
    mt_shape out = *s;
    out.dim[ax] = 1;
    mt_node *src[1] = {x};
    return graph_push(g, op, out, MT_F32, 1, src, &at);
}

mt_node *mt_sum(mt_graph *g, mt_node *x, int axis) {
    return reduce(g, &op_sum, MT_RED_SUM, "mt_sum", x, axis);
}
mt_node *mt_mean(mt_graph *g, mt_node *x, int axis) {
    return reduce(g, &op_mean, MT_RED_MEAN, "mt_mean", x, axis);
}
mt_node *mt_max(mt_graph *g, mt_node *x, int axis) {
    return reduce(g, &op_max, MT_RED_MAX, "mt_max", x, axis);
}

mt_node *mt_sum_all(mt_graph *g, mt_node *x) {
    if (x == NULL) return NULL;
    if (!need_f32(g, "mt_sum_all", x)) return NULL;
    mt_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = MT_RED_SUM;
    at.i[1] = 1;
    at.i[2] = node_numel(x);
    at.i[3] = 1;
    mt_node *src[1] = {x};
    return graph_push(g, &op_sum_all, mt_shape1(1), MT_F32, 1, src, &at);
}
