/*
** test_ops_grad.c: the op test table.  One row per op and variant
** (broadcasting, transposes, odd sizes 1, 3, 7, 17).  For each row:
**
**   inputs   trainable parameters with random values (fixed seed), drawn so
**            that the op is smooth around them (log/sqrt inputs positive,
**            div denominators away from 0, max inputs well separated)
**   loss     L = sum(op(inputs) * R) for a fixed random R, built in the graph
**            as mt_sum_all(mt_mul(y, mt_input(R)))
**   analytic forward + backward; gradients read from the params' grads
**   numeric  central differences (L(x+e) - L(x-e)) / 2e per input element,
**            each L from a cleared and rebuilt graph after mt_params_touch,
**            accumulated in double from the op's output
**
** Kinks: relu entries with |x| < 2e are skipped.  Every row also checks
** that its numeric gradient is not identically zero (a row that compares
** zeros with zeros proves nothing).  Prints one OK / NOT OK line per row.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "model.h" /* mt_rnn_gru_step: Marian's GRU cell, composed */
#include "mt.h"

#define MAX_IN 4
#define MAX_ELEMS 4096

enum { GEN_NORMAL = 0, GEN_POS, GEN_AWAY0, GEN_DISTINCT };

typedef struct op_case op_case;
typedef mt_node *(*build_fn)(mt_graph *g, mt_node **x, const op_case *c);

struct op_case {
    const char *name;
    build_fn build;
    int n_in;
    mt_shape shape[MAX_IN];
    int gen[MAX_IN];
    int iarg[8];        /* op-specific: axis, heads, flags, perm ... */
    float farg[2];      /* op-specific: alpha, label smoothing, p ... */
    const int32_t *ids; /* labels / ids for ops that take them        */
    mt_shape ids_shape;
    const float *fdata; /* a fixed float input (masks)                */
    mt_shape fdata_shape;
    double eps, atol, rtol; /* 0: defaults                              */
    bool kink;              /* skip |x| < 2 eps (relu)                     */
    bool fresh_graph;       /* new graph per evaluation (dropout RNG)      */
};

#define S1(a)                                                                                      \
    {                                                                                              \
        1, { a }                                                                                   \
    }
#define S2(a, b)                                                                                   \
    {                                                                                              \
        2, { a, b }                                                                                \
    }
#define S3(a, b, c)                                                                                \
    {                                                                                              \
        3, { a, b, c }                                                                             \
    }
#define S4(a, b, c, d)                                                                             \
    {                                                                                              \
        4, { a, b, c, d }                                                                          \
    }

/* ------------------------------------------------------------ builders */

static mt_node *b_add(mt_graph *g, mt_node **x, const op_case *c) { return mt_add(g, x[0], x[1]); }
static mt_node *b_sub(mt_graph *g, mt_node **x, const op_case *c) { return mt_sub(g, x[0], x[1]); }
static mt_node *b_mul(mt_graph *g, mt_node **x, const op_case *c) { return mt_mul(g, x[0], x[1]); }
static mt_node *b_div(mt_graph *g, mt_node **x, const op_case *c) { return mt_div(g, x[0], x[1]); }
static mt_node *b_square(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_mul(g, x[0], x[0]);
}
static mt_node *b_scale(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_scale(g, x[0], c->farg[0]);
}
static mt_node *b_add_scalar(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_add_scalar(g, x[0], c->farg[0]);
}
static mt_node *b_neg(mt_graph *g, mt_node **x, const op_case *c) { return mt_neg(g, x[0]); }
static mt_node *b_relu(mt_graph *g, mt_node **x, const op_case *c) { return mt_relu(g, x[0]); }
static mt_node *b_swish(mt_graph *g, mt_node **x, const op_case *c) { return mt_swish(g, x[0]); }
static mt_node *b_gelu(mt_graph *g, mt_node **x, const op_case *c) { return mt_gelu(g, x[0]); }
static mt_node *b_tanh(mt_graph *g, mt_node **x, const op_case *c) { return mt_tanh(g, x[0]); }
static mt_node *b_sigmoid(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_sigmoid(g, x[0]);
}
static mt_node *b_exp(mt_graph *g, mt_node **x, const op_case *c) { return mt_exp(g, x[0]); }
static mt_node *b_ln(mt_graph *g, mt_node **x, const op_case *c) { return mt_ln(g, x[0]); }
static mt_node *b_sqrt(mt_graph *g, mt_node **x, const op_case *c) { return mt_sqrt(g, x[0]); }

static mt_node *b_sum(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_sum(g, x[0], c->iarg[0]);
}
static mt_node *b_mean(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_mean(g, x[0], c->iarg[0]);
}
static mt_node *b_max(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_max(g, x[0], c->iarg[0]);
}
static mt_node *b_sum_all(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_sum_all(g, x[0]);
}

static mt_node *b_matmul(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_matmul(g, x[0], x[1], c->iarg[0], c->iarg[1]);
}
static mt_node *b_matmul_self(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_matmul(g, x[0], x[0], c->iarg[0], c->iarg[1]);
}
static mt_node *b_bmm(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_bmm(g, x[0], x[1], c->iarg[0], c->iarg[1], c->farg[0]);
}
static mt_node *b_bmm_gather(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_bmm_gather(g, x[0], x[1], mt_input_i32(g, c->ids_shape, c->ids), c->iarg[0],
                         c->iarg[1], c->farg[0]);
}
static mt_node *b_affine(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_affine(g, x[0], x[1], c->n_in > 2 ? x[2] : NULL);
}

static mt_node *b_softmax(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_softmax(g, x[0]);
}
static mt_node *b_log_softmax(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_log_softmax(g, x[0]);
}
static mt_node *b_xent(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_cross_entropy(g, x[0], mt_input_i32(g, c->ids_shape, c->ids), c->farg[0]);
}
/* iarg[0]: 0 gamma and beta, 1 neither, 2 gamma only, 3 beta only */
static mt_node *b_layer_norm(mt_graph *g, mt_node **x, const op_case *c) {
    switch (c->iarg[0]) {
    case 1: return mt_layer_norm(g, x[0], NULL, NULL, c->farg[0]);
    case 2: return mt_layer_norm(g, x[0], x[1], NULL, c->farg[0]);
    case 3: return mt_layer_norm(g, x[0], NULL, x[1], c->farg[0]);
    default: return mt_layer_norm(g, x[0], x[1], x[2], c->farg[0]);
    }
}
static mt_node *b_dropout(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_dropout(g, x[0], c->farg[0]);
}
static mt_node *b_masked_fill(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_masked_fill(g, x[0], mt_input(g, c->fdata_shape, c->fdata), c->farg[0]);
}
static mt_node *b_highway(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_highway(g, x[0], x[1], x[2]);
}
static mt_node *b_attention(mt_graph *g, mt_node **x, const op_case *c) {
    mt_node *mask = c->fdata ? mt_input(g, c->fdata_shape, c->fdata) : NULL;
    mt_node *w = NULL;
    mt_node *y = mt_attention(g, x[0], x[1], x[2], mask, c->iarg[0], &w);
    /* iarg[1]: check the weights output instead of the context */
    return c->iarg[1] ? (y ? w : NULL) : y;
}

static mt_node *b_reshape(mt_graph *g, mt_node **x, const op_case *c) {
    mt_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = c->iarg[0];
    for (int i = 0; i < s.ndim; i++)
        s.dim[i] = c->iarg[1 + i];
    /* tanh after the view, so the gradient reaching it is not just R */
    return mt_tanh(g, mt_reshape(g, x[0], s));
}
static mt_node *b_transpose(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_transpose(g, x[0], c->iarg[0], c->iarg[1]);
}
static mt_node *b_permute(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_permute(g, x[0], c->iarg);
}
static mt_node *b_concat(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_concat(g, x, c->n_in, c->iarg[0]);
}
/* six inputs (more than MT_MAX_SRC): x0 x1 x0 x1 x0 x1 along axis 0 */
static mt_node *b_concat6(mt_graph *g, mt_node **x, const op_case *c) {
    mt_node *xs[6] = {x[0], x[1], x[0], x[1], x[0], x[1]};
    return mt_concat(g, xs, 6, c->iarg[0]);
}
static mt_node *b_slice(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_slice(g, x[0], c->iarg[0], c->iarg[1], c->iarg[2]);
}
static mt_node *b_gather_rows(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_gather_rows(g, x[0], mt_input_i32(g, c->ids_shape, c->ids));
}
static mt_node *b_cache_append(mt_graph *g, mt_node **x, const op_case *c) {
    mt_node *ids = c->ids ? mt_input_i32(g, c->ids_shape, c->ids) : NULL;
    return mt_cache_append(g, x[0], ids, c->iarg[0], x[1]);
}
static mt_node *b_index_select(mt_graph *g, mt_node **x, const op_case *c) {
    return mt_index_select(g, x[0], c->iarg[0], mt_input_i32(g, c->ids_shape, c->ids));
}

/* Marian's GRU cell step (models/rnn.c, mt_rnn_gru_step).  iarg[0]:
**   0  input products x[0], state x[1], U x[2], b x[3]
**   1  the same, final (Marian's second decoder cell)
**   2  the same with the mask fdata [N, 1] (rows at 0 keep their state)
**   3  transition cell (no input): state x[0], U x[1], b x[2], gamma2 x[3]
**      (layer norm of the state products)
**   4  deep transition: a cell with input x[0] then a transition cell,
**      state x[1], their U x[2] and x[3], b fixed at 0.1 */
static mt_node *b_gru(mt_graph *g, mt_node **x, const op_case *c) {
    mt_node *mask = c->fdata ? mt_input(g, c->fdata_shape, c->fdata) : NULL;
    switch (c->iarg[0]) {
    case 0: return mt_rnn_gru_step(g, x[0], x[1], x[2], x[3], NULL, false, NULL);
    case 1: return mt_rnn_gru_step(g, x[0], x[1], x[2], x[3], NULL, true, NULL);
    case 2: return mt_rnn_gru_step(g, x[0], x[1], x[2], x[3], NULL, false, mask);
    case 3: return mt_rnn_gru_step(g, NULL, x[0], x[1], x[2], x[3], false, NULL);
    default: {
        mt_node *b = mt_constant(g, mt_shape2(1, mt_node_shape(x[2]).dim[1]), 0.1f);
        mt_node *h = mt_rnn_gru_step(g, x[0], x[1], x[2], b, NULL, false, NULL);
        return mt_rnn_gru_step(g, NULL, h, x[3], b, NULL, false, NULL);
    }
    }
}

/* Marian's LSTM cell step (mt_rnn_lstm_step): input products x[0] [N, 4R],
** output x[1], cell state x[2], U x[3]; b fixed at 0.1, mask fdata or NULL.
** iarg[0]: 0 checks the new output, 1 the new cell state. */
static mt_node *b_lstm(mt_graph *g, mt_node **x, const op_case *c) {
    mt_node *mask = c->fdata ? mt_input(g, c->fdata_shape, c->fdata) : NULL;
    mt_node *b = mt_constant(g, mt_shape2(1, mt_node_shape(x[3]).dim[1]), 0.1f), *cn = NULL;
    mt_node *h = mt_rnn_lstm_step(g, x[0], x[1], x[2], x[3], b, NULL, mask, &cn);
    return c->iarg[0] ? cn : h;
}

/* --------------------------------------------------------------- data */

static const int32_t labels3[3] = {2, 0, 6};
static const int32_t labels6[6] = {4, 0, 3, 3, 1, 2};
static const int32_t ids4[4] = {4, 0, 4, 2};
static const int32_t ids1[1] = {3};
static const int32_t sel3[3] = {3, 1, 1};
static const int32_t sel4[4] = {4, 0, 0, 2};
static const int32_t ca_ids[4] = {2, 0, 2, 1};
static const int32_t ca_ids2[2] = {1, 1};
static const float mask7[7] = {1, 0, 1, 1, 0, 1, 1};
static const float mask3[3] = {0, 1, 1};
/* additive attention masks: 0 keep, -99999999 drop (Marian) */
static const float amask_b[2 * 4] = {0, 0, 0, -99999999.0f, 0, 0, -99999999.0f, -99999999.0f};
static const float amask_causal[3 * 4] = {
    0, 0, -99999999.0f, -99999999.0f, 0, 0, 0, -99999999.0f, 0, 0, 0, 0};

#define ONE_IN(nm, fn, s, gn)                                                                      \
    {                                                                                              \
        .name = nm, .build = fn, .n_in = 1, .shape = {s}, .gen = { gn }                            \
    }

static const op_case cases[] = {
    /* ---- broadcasting binary ops */
    {.name = "add [3,7]+[3,7]", .build = b_add, .n_in = 2, .shape = {S2(3, 7), S2(3, 7)}},
    {.name = "add [3,7]+[7]", .build = b_add, .n_in = 2, .shape = {S2(3, 7), S1(7)}},
    {.name = "add [3,1]+[1,7]", .build = b_add, .n_in = 2, .shape = {S2(3, 1), S2(1, 7)}},
    {.name = "add [2,3,5]+[3,1]", .build = b_add, .n_in = 2, .shape = {S3(2, 3, 5), S2(3, 1)}},
    {.name = "add [1]+[17]", .build = b_add, .n_in = 2, .shape = {S1(1), S1(17)}},
    {.name = "sub [3,7]-[7]", .build = b_sub, .n_in = 2, .shape = {S2(3, 7), S1(7)}},
    {.name = "sub [4,1,3]-[2,3]", .build = b_sub, .n_in = 2, .shape = {S3(4, 1, 3), S2(2, 3)}},
    {.name = "mul [3,7]*[3,7]", .build = b_mul, .n_in = 2, .shape = {S2(3, 7), S2(3, 7)}},
    {.name = "mul [2,3,5]*[5]", .build = b_mul, .n_in = 2, .shape = {S3(2, 3, 5), S1(5)}},
    {.name = "mul [1]*[17]", .build = b_mul, .n_in = 2, .shape = {S1(1), S1(17)}},
    {.name = "mul x*x [3,7]", .build = b_square, .n_in = 1, .shape = {S2(3, 7)}},
    {.name = "div [3,7]/[7]",
     .build = b_div,
     .n_in = 2,
     .shape = {S2(3, 7), S1(7)},
     .gen = {GEN_NORMAL, GEN_AWAY0}},
    {.name = "div [7]/[3,7]",
     .build = b_div,
     .n_in = 2,
     .shape = {S1(7), S2(3, 7)},
     .gen = {GEN_NORMAL, GEN_AWAY0}},
    {.name = "div [2,1,3]/[4,1]",
     .build = b_div,
     .n_in = 2,
     .shape = {S3(2, 1, 3), S2(4, 1)},
     .gen = {GEN_NORMAL, GEN_AWAY0}},

    /* ---- unary ops */
    {.name = "scale 2.5 [3,7]", .build = b_scale, .n_in = 1, .shape = {S2(3, 7)}, .farg = {2.5f}},
    {.name = "add_scalar [17]",
     .build = b_add_scalar,
     .n_in = 1,
     .shape = {S1(17)},
     .farg = {-1.5f}},
    ONE_IN("neg [1]", b_neg, S1(1), GEN_NORMAL),
    ONE_IN("neg [3,7]", b_neg, S2(3, 7), GEN_NORMAL),
    {.name = "relu [3,7]", .build = b_relu, .n_in = 1, .shape = {S2(3, 7)}, .kink = true},
    {.name = "relu [17]", .build = b_relu, .n_in = 1, .shape = {S1(17)}, .kink = true},
    ONE_IN("swish [17]", b_swish, S1(17), GEN_NORMAL),
    ONE_IN("swish [3,7]", b_swish, S2(3, 7), GEN_NORMAL),
    ONE_IN("gelu [3,7]", b_gelu, S2(3, 7), GEN_NORMAL),
    ONE_IN("gelu [1]", b_gelu, S1(1), GEN_NORMAL),
    ONE_IN("tanh [7]", b_tanh, S1(7), GEN_NORMAL),
    ONE_IN("tanh [3,17]", b_tanh, S2(3, 17), GEN_NORMAL),
    ONE_IN("sigmoid [3,7]", b_sigmoid, S2(3, 7), GEN_NORMAL),
    ONE_IN("exp [7]", b_exp, S1(7), GEN_NORMAL),
    ONE_IN("exp [2,3,5]", b_exp, S3(2, 3, 5), GEN_NORMAL),
    ONE_IN("log [3,7]", b_ln, S2(3, 7), GEN_POS),
    ONE_IN("sqrt [17]", b_sqrt, S1(17), GEN_POS),
    ONE_IN("sqrt [3,7]", b_sqrt, S2(3, 7), GEN_POS),

    /* ---- reductions */
    {.name = "sum [3,7] axis 0", .build = b_sum, .n_in = 1, .shape = {S2(3, 7)}, .iarg = {0}},
    {.name = "sum [3,7] axis -1", .build = b_sum, .n_in = 1, .shape = {S2(3, 7)}, .iarg = {-1}},
    {.name = "sum [2,3,5] axis 1", .build = b_sum, .n_in = 1, .shape = {S3(2, 3, 5)}, .iarg = {1}},
    {.name = "mean [3,7] axis 1", .build = b_mean, .n_in = 1, .shape = {S2(3, 7)}, .iarg = {1}},
    {.name = "mean [17] axis 0", .build = b_mean, .n_in = 1, .shape = {S1(17)}, .iarg = {0}},
    {.name = "mean [2,3,5] axis -2",
     .build = b_mean,
     .n_in = 1,
     .shape = {S3(2, 3, 5)},
     .iarg = {-2}},
    {.name = "max [3,7] axis 1",
     .build = b_max,
     .n_in = 1,
     .shape = {S2(3, 7)},
     .gen = {GEN_DISTINCT},
     .iarg = {1}},
    {.name = "max [2,3,5] axis 0",
     .build = b_max,
     .n_in = 1,
     .shape = {S3(2, 3, 5)},
     .gen = {GEN_DISTINCT},
     .iarg = {0}},
    {.name = "max [17] axis -1",
     .build = b_max,
     .n_in = 1,
     .shape = {S1(17)},
     .gen = {GEN_DISTINCT},
     .iarg = {-1}},
    ONE_IN("sum_all [2,3,5]", b_sum_all, S3(2, 3, 5), GEN_NORMAL),

    /* ---- matrix products; iarg = {trans_a, trans_b} */
    {.name = "matmul [3,5].[5,7]", .build = b_matmul, .n_in = 2, .shape = {S2(3, 5), S2(5, 7)}},
    {.name = "matmul [5,3]^T.[5,7]",
     .build = b_matmul,
     .n_in = 2,
     .shape = {S2(5, 3), S2(5, 7)},
     .iarg = {1, 0}},
    {.name = "matmul [3,5].[7,5]^T",
     .build = b_matmul,
     .n_in = 2,
     .shape = {S2(3, 5), S2(7, 5)},
     .iarg = {0, 1}},
    {.name = "matmul [5,3]^T.[7,5]^T",
     .build = b_matmul,
     .n_in = 2,
     .shape = {S2(5, 3), S2(7, 5)},
     .iarg = {1, 1}},
    {.name = "matmul [2,3,5].[5,7]",
     .build = b_matmul,
     .n_in = 2,
     .shape = {S3(2, 3, 5), S2(5, 7)}},
    {.name = "matmul [2,5,3]^T.[7,5]^T",
     .build = b_matmul,
     .n_in = 2,
     .shape = {S3(2, 5, 3), S2(7, 5)},
     .iarg = {1, 1}},
    {.name = "matmul [2,2,5,3]^T.[5,4]",
     .build = b_matmul,
     .n_in = 2,
     .shape = {S4(2, 2, 5, 3), S2(5, 4)},
     .iarg = {1, 0}},
    {.name = "matmul [1,1].[1,1]", .build = b_matmul, .n_in = 2, .shape = {S2(1, 1), S2(1, 1)}},
    {.name = "matmul [17,1].[1,3]", .build = b_matmul, .n_in = 2, .shape = {S2(17, 1), S2(1, 3)}},
    {.name = "matmul x.x^T [4,3]",
     .build = b_matmul_self,
     .n_in = 1,
     .shape = {S2(4, 3)},
     .iarg = {0, 1}},
    {.name = "bmm [2,3,5].[2,5,4] a0.7",
     .build = b_bmm,
     .n_in = 2,
     .shape = {S3(2, 3, 5), S3(2, 5, 4)},
     .farg = {0.7f}},
    {.name = "bmm [2,5,3]^T.[2,5,4]",
     .build = b_bmm,
     .n_in = 2,
     .shape = {S3(2, 5, 3), S3(2, 5, 4)},
     .iarg = {1, 0},
     .farg = {1.0f}},
    {.name = "bmm [2,3,5].[2,4,5]^T",
     .build = b_bmm,
     .n_in = 2,
     .shape = {S3(2, 3, 5), S3(2, 4, 5)},
     .iarg = {0, 1},
     .farg = {-1.3f}},
    {.name = "bmm [3,2,5,3]^T.[3,2,4,5]^T",
     .build = b_bmm,
     .n_in = 2,
     .shape = {S4(3, 2, 5, 3), S4(3, 2, 4, 5)},
     .iarg = {1, 1},
     .farg = {0.5f}},
    {.name = "bmm_gather [4,2,1,3].[3,2,5,3]^T rows (2,0,2,1) a0.6",
     .build = b_bmm_gather,
     .n_in = 2,
     .shape = {S4(4, 2, 1, 3), S4(3, 2, 5, 3)},
     .iarg = {0, 1},
     .farg = {0.6f},
     .ids = ca_ids,
     .ids_shape = S1(4)},
    {.name = "bmm_gather [2,3,4]^T.[3,3,5] rows (1,1)",
     .build = b_bmm_gather,
     .n_in = 2,
     .shape = {S3(2, 4, 3), S3(3, 4, 5)},
     .iarg = {1, 0},
     .farg = {1.0f},
     .ids = ca_ids2,
     .ids_shape = S1(2)},
    {.name = "bmm [1,1,1].[1,1,7]",
     .build = b_bmm,
     .n_in = 2,
     .shape = {S3(1, 1, 1), S3(1, 1, 7)},
     .farg = {1.0f}},
    {.name = "matmul [2,3,5].[2,5,4] (bmm)",
     .build = b_matmul,
     .n_in = 2,
     .shape = {S3(2, 3, 5), S3(2, 5, 4)}},
    {.name = "affine [2,3,5].[5,7]+[7]",
     .build = b_affine,
     .n_in = 3,
     .shape = {S3(2, 3, 5), S2(5, 7), S1(7)}},
    {.name = "affine [3,5].[5,7]+[1,7]",
     .build = b_affine,
     .n_in = 3,
     .shape = {S2(3, 5), S2(5, 7), S2(1, 7)}},
    {.name = "affine [3,5].[5,7]+[3,7]",
     .build = b_affine,
     .n_in = 3,
     .shape = {S2(3, 5), S2(5, 7), S2(3, 7)}},
    {.name = "affine [1,1].[1,17]+[17]",
     .build = b_affine,
     .n_in = 3,
     .shape = {S2(1, 1), S2(1, 17), S1(17)}},
    {.name = "affine [3,5].[5,7] no bias",
     .build = b_affine,
     .n_in = 2,
     .shape = {S2(3, 5), S2(5, 7)}},

    /* ---- softmax family, losses, norms */
    ONE_IN("softmax [3,7]", b_softmax, S2(3, 7), GEN_NORMAL),
    ONE_IN("softmax [17]", b_softmax, S1(17), GEN_NORMAL),
    ONE_IN("softmax [2,3,5]", b_softmax, S3(2, 3, 5), GEN_NORMAL),
    ONE_IN("log_softmax [3,7]", b_log_softmax, S2(3, 7), GEN_NORMAL),
    ONE_IN("log_softmax [2,1,17]", b_log_softmax, S3(2, 1, 17), GEN_NORMAL),
    {.name = "cross_entropy [3,7] ls 0",
     .build = b_xent,
     .n_in = 1,
     .shape = {S2(3, 7)},
     .ids = labels3,
     .ids_shape = S1(3)},
    {.name = "cross_entropy [3,7] ls 0.1",
     .build = b_xent,
     .n_in = 1,
     .shape = {S2(3, 7)},
     .ids = labels3,
     .ids_shape = S1(3),
     .farg = {0.1f}},
    {.name = "cross_entropy [2,3,5] ls 0.2",
     .build = b_xent,
     .n_in = 1,
     .shape = {S3(2, 3, 5)},
     .ids = labels6,
     .ids_shape = S2(2, 3),
     .farg = {0.2f}},
    {.name = "layer_norm [3,7] gamma beta",
     .build = b_layer_norm,
     .n_in = 3,
     .shape = {S2(3, 7), S1(7), S1(7)},
     .farg = {1e-6f}},
    {.name = "layer_norm [2,3,17] [1,D] params",
     .build = b_layer_norm,
     .n_in = 3,
     .shape = {S3(2, 3, 17), S2(1, 17), S2(1, 17)},
     .farg = {1e-5f}},
    {.name = "layer_norm [3,7] plain",
     .build = b_layer_norm,
     .n_in = 1,
     .shape = {S2(3, 7)},
     .iarg = {1},
     .farg = {1e-6f}},
    {.name = "layer_norm [5,3] gamma only",
     .build = b_layer_norm,
     .n_in = 2,
     .shape = {S2(5, 3), S1(3)},
     .iarg = {2},
     .farg = {1e-6f}},
    {.name = "layer_norm [5,3] beta only",
     .build = b_layer_norm,
     .n_in = 2,
     .shape = {S2(5, 3), S1(3)},
     .iarg = {3},
     .farg = {1e-6f}},
    {.name = "dropout p 0.3 [3,7]",
     .build = b_dropout,
     .n_in = 1,
     .shape = {S2(3, 7)},
     .farg = {0.3f},
     .fresh_graph = true},
    {.name = "masked_fill [3,7] mask [7]",
     .build = b_masked_fill,
     .n_in = 1,
     .shape = {S2(3, 7)},
     .fdata = mask7,
     .fdata_shape = S1(7),
     .farg = {-5.0f}},
    {.name = "masked_fill [3,7] mask [3,1]",
     .build = b_masked_fill,
     .n_in = 1,
     .shape = {S2(3, 7)},
     .fdata = mask3,
     .fdata_shape = S2(3, 1),
     .farg = {0.0f}},
    {.name = "highway [3,7]",
     .build = b_highway,
     .n_in = 3,
     .shape = {S2(3, 7), S2(3, 7), S2(3, 7)}},
    {.name = "highway [3,7] t [7]",
     .build = b_highway,
     .n_in = 3,
     .shape = {S2(3, 7), S2(3, 7), S1(7)}},

    /* ---- Marian's GRU cell (mt_rnn_gru_step), R = 5: iarg = {variant} */
    {.name = "gru step N3 R5",
     .build = b_gru,
     .n_in = 4,
     .shape = {S2(3, 15), S2(3, 5), S2(5, 15), S2(1, 15)},
     .iarg = {0}},
    {.name = "gru step final N3 R5",
     .build = b_gru,
     .n_in = 4,
     .shape = {S2(3, 15), S2(3, 5), S2(5, 15), S2(1, 15)},
     .iarg = {1}},
    {.name = "gru step masked N3 R5 mask [3,1]",
     .build = b_gru,
     .n_in = 4,
     .shape = {S2(3, 15), S2(3, 5), S2(5, 15), S2(1, 15)},
     .iarg = {2},
     .fdata = mask3,
     .fdata_shape = S2(3, 1)},
    {.name = "gru transition layer-norm N3 R5",
     .build = b_gru,
     .n_in = 4,
     .shape = {S2(3, 5), S2(5, 15), S2(1, 15), S2(1, 15)},
     .iarg = {3}},
    {.name = "gru deep transition (2 cells) N3 R5",
     .build = b_gru,
     .n_in = 4,
     .shape = {S2(3, 15), S2(3, 5), S2(5, 15), S2(5, 15)},
     .iarg = {4}},

    {.name = "lstm step output N3 R5",
     .build = b_lstm,
     .n_in = 4,
     .shape = {S2(3, 20), S2(3, 5), S2(3, 5), S2(5, 20)},
     .iarg = {0}},
    {.name = "lstm step cell state N3 R5 mask [3,1]",
     .build = b_lstm,
     .n_in = 4,
     .shape = {S2(3, 20), S2(3, 5), S2(3, 5), S2(5, 20)},
     .iarg = {1},
     .fdata = mask3,
     .fdata_shape = S2(3, 1)},
    {.name = "lstm step output N3 R5 mask [3,1]",
     .build = b_lstm,
     .n_in = 4,
     .shape = {S2(3, 20), S2(3, 5), S2(3, 5), S2(5, 20)},
     .iarg = {0},
     .fdata = mask3,
     .fdata_shape = S2(3, 1)},

    /* ---- attention: iarg = {heads, check weights} */
    {.name = "attention B2 Tq3 Tk4 D8 H2 mask [2,1,1,4]",
     .build = b_attention,
     .n_in = 3,
     .shape = {S3(2, 3, 8), S3(2, 4, 8), S3(2, 4, 8)},
     .iarg = {2, 0},
     .fdata = amask_b,
     .fdata_shape = S4(2, 1, 1, 4)},
    {.name = "attention B1 Tq3 Tk4 D6 H3 causal mask [3,4]",
     .build = b_attention,
     .n_in = 3,
     .shape = {S3(1, 3, 6), S3(1, 4, 6), S3(1, 4, 6)},
     .iarg = {3, 0},
     .fdata = amask_causal,
     .fdata_shape = S2(3, 4)},
    {.name = "attention B2 Tq1 Tk3 D5 H1 no mask",
     .build = b_attention,
     .n_in = 3,
     .shape = {S3(2, 1, 5), S3(2, 3, 5), S3(2, 3, 5)},
     .iarg = {1, 0}},
    {.name = "attention weights B2 Tq3 Tk4 D8 H4",
     .build = b_attention,
     .n_in = 3,
     .shape = {S3(2, 3, 8), S3(2, 4, 8), S3(2, 4, 8)},
     .iarg = {4, 1},
     .fdata = amask_b,
     .fdata_shape = S4(2, 1, 1, 4)},

    /* ---- shape ops */
    {.name = "reshape [3,7]->[7,3]",
     .build = b_reshape,
     .n_in = 1,
     .shape = {S2(3, 7)},
     .iarg = {2, 7, 3}},
    {.name = "reshape [2,3,5]->[-1]",
     .build = b_reshape,
     .n_in = 1,
     .shape = {S3(2, 3, 5)},
     .iarg = {1, -1}},
    {.name = "transpose [3,7] 0,1",
     .build = b_transpose,
     .n_in = 1,
     .shape = {S2(3, 7)},
     .iarg = {0, 1}},
    {.name = "transpose [2,3,5] 0,-1",
     .build = b_transpose,
     .n_in = 1,
     .shape = {S3(2, 3, 5)},
     .iarg = {0, -1}},
    {.name = "permute [2,3,4,5] 2,0,3,1",
     .build = b_permute,
     .n_in = 1,
     .shape = {S4(2, 3, 4, 5)},
     .iarg = {2, 0, 3, 1}},
    {.name = "permute [1,3,1,7] 2,0,1,3 (view)",
     .build = b_permute,
     .n_in = 1,
     .shape = {S4(1, 3, 1, 7)},
     .iarg = {2, 0, 1, 3}},
    {.name = "concat axis 0 [2,3]+[3,3]",
     .build = b_concat,
     .n_in = 2,
     .shape = {S2(2, 3), S2(3, 3)},
     .iarg = {0}},
    {.name = "concat axis 1 [2,3]+[2,1]+[2,4]",
     .build = b_concat,
     .n_in = 3,
     .shape = {S2(2, 3), S2(2, 1), S2(2, 4)},
     .iarg = {1}},
    {.name = "concat axis -1 4 x [2,3,k]",
     .build = b_concat,
     .n_in = 4,
     .shape = {S3(2, 3, 1), S3(2, 3, 2), S3(2, 3, 3), S3(2, 3, 1)},
     .iarg = {-1}},
    {.name = "concat 6 inputs axis 1 [2,3],[2,1]",
     .build = b_concat6,
     .n_in = 2,
     .shape = {S2(2, 3), S2(2, 1)},
     .iarg = {1}},
    {.name = "slice [3,7] axis 1 [2,5)",
     .build = b_slice,
     .n_in = 1,
     .shape = {S2(3, 7)},
     .iarg = {1, 2, 3}},
    {.name = "slice [2,5,3] axis 1 [1,4)",
     .build = b_slice,
     .n_in = 1,
     .shape = {S3(2, 5, 3)},
     .iarg = {1, 1, 3}},
    {.name = "slice [17] axis 0 [16,17)",
     .build = b_slice,
     .n_in = 1,
     .shape = {S1(17)},
     .iarg = {0, 16, 1}},
    {.name = "gather_rows [5,3] ids [2,2] repeated",
     .build = b_gather_rows,
     .n_in = 1,
     .shape = {S2(5, 3)},
     .ids = ids4,
     .ids_shape = S2(2, 2)},
    {.name = "gather_rows [7,1] ids [1]",
     .build = b_gather_rows,
     .n_in = 1,
     .shape = {S2(7, 1)},
     .ids = ids1,
     .ids_shape = S1(1)},
    {.name = "cache_append [3,2,4,3] ids (2,0,2,1) off 1",
     .build = b_cache_append,
     .n_in = 2,
     .shape = {S4(3, 2, 4, 3), S4(4, 2, 1, 3)},
     .iarg = {1},
     .ids = ca_ids,
     .ids_shape = S1(4)},
    {.name = "cache_append [2,3,2,5] no ids off 0",
     .build = b_cache_append,
     .n_in = 2,
     .shape = {S4(2, 3, 2, 5), S4(2, 3, 1, 5)},
     .iarg = {0}},
    {.name = "cache_append [2,1,3,2] ids (1,1) off 3 (all dropped)",
     .build = b_cache_append,
     .n_in = 2,
     .shape = {S4(2, 1, 3, 2), S4(2, 1, 1, 2)},
     .iarg = {3},
     .ids = ca_ids2,
     .ids_shape = S1(2)},
    {.name = "index_select [4,3] axis 0",
     .build = b_index_select,
     .n_in = 1,
     .shape = {S2(4, 3)},
     .iarg = {0},
     .ids = sel3,
     .ids_shape = S1(3)},
    {.name = "index_select [2,5,3] axis 1",
     .build = b_index_select,
     .n_in = 1,
     .shape = {S3(2, 5, 3)},
     .iarg = {1},
     .ids = sel4,
     .ids_shape = S1(4)},
    {.name = "index_select [3,5] axis -1",
     .build = b_index_select,
     .n_in = 1,
     .shape = {S2(3, 5)},
     .iarg = {-1},
     .ids = sel4,
     .ids_shape = S1(4)},

    /* ---- sizes past the SIMD widths (16 floats), with tails; linear ops take
    ** a larger step (their loss is linear in every single input) */
    {.name = "add [5,33]+[33]", .build = b_add, .n_in = 2, .shape = {S2(5, 33), S1(33)}},
    {.name = "mul [33,1]*[1,35]", .build = b_mul, .n_in = 2, .shape = {S2(33, 1), S2(1, 35)}},
    ONE_IN("gelu [67]", b_gelu, S1(67), GEN_NORMAL),
    ONE_IN("sigmoid [2,49]", b_sigmoid, S2(2, 49), GEN_NORMAL),
    {.name = "matmul [17,33].[33,19]",
     .build = b_matmul,
     .n_in = 2,
     .shape = {S2(17, 33), S2(33, 19)},
     .eps = 1e-2},
    {.name = "matmul [33,17]^T.[19,33]^T",
     .build = b_matmul,
     .n_in = 2,
     .shape = {S2(33, 17), S2(19, 33)},
     .iarg = {1, 1},
     .eps = 1e-2},
    {.name = "bmm [2,17,9].[2,33,9]^T",
     .build = b_bmm,
     .n_in = 2,
     .shape = {S3(2, 17, 9), S3(2, 33, 9)},
     .iarg = {0, 1},
     .farg = {0.3f},
     .eps = 1e-2},
    ONE_IN("softmax [2,33]", b_softmax, S2(2, 33), GEN_NORMAL),
    ONE_IN("log_softmax [3,40]", b_log_softmax, S2(3, 40), GEN_NORMAL),
    {.name = "cross_entropy [3,37] ls 0.1",
     .build = b_xent,
     .n_in = 1,
     .shape = {S2(3, 37)},
     .ids = (const int32_t[]){36, 0, 17},
     .ids_shape = S1(3),
     .farg = {0.1f}},
    {.name = "layer_norm [2,40] gamma beta",
     .build = b_layer_norm,
     .n_in = 3,
     .shape = {S2(2, 40), S1(40), S1(40)},
     .farg = {1e-6f}},
    {.name = "max [3,33] axis 1",
     .build = b_max,
     .n_in = 1,
     .shape = {S2(3, 33)},
     .gen = {GEN_DISTINCT},
     .iarg = {1}},
    {.name = "sum [33,17] axis 0",
     .build = b_sum,
     .n_in = 1,
     .shape = {S2(33, 17)},
     .iarg = {0},
     .eps = 1e-2},
};

/* ------------------------------------------------------------ fixture */

typedef struct fixture {
    const op_case *tc;
    mt_params *p;
    mt_graph *g;
    mt_tensor *x[MAX_IN];
    char names[MAX_IN][8];
    float *r; /* the loss weights R, numel of y */
    int64_t ny;
} fixture;

static float gen_value(mt_rng *rng, int kind, int64_t i, int64_t n, const int64_t *perm) {
    switch (kind) {
    case GEN_POS: return 0.5f + 1.5f * mt_rng_uniform(rng);
    case GEN_AWAY0: {
        float m = 0.5f + mt_rng_uniform(rng);
        return mt_rng_uniform(rng) < 0.5f ? -m : m;
    }
    case GEN_DISTINCT: return 0.1f * (float)(perm[i] - n / 2); /* spaced 0.1 apart */
    default: return mt_rng_normal(rng);
    }
}

static mt_status graph_new(mt_graph **out) {
    mt_graph_params gp = mt_graph_default_params();
    gp.training = true;
    gp.workspace_bytes = 256 << 10;
    gp.seed = 77;
    return mt_graph_init(NULL, gp, out);
}

/* Builds inputs, y = op(inputs) and (when with_loss) loss on f->g. */
static mt_node *build(fixture *f, mt_node **loss) {
    const op_case *tc = f->tc;
    mt_node *x[MAX_IN] = {NULL};
    for (int i = 0; i < tc->n_in; i++) {
        x[i] = mt_param(f->g, f->p, f->names[i], tc->shape[i], mt_init_zeros());
    }
    mt_node *y = tc->build(f->g, x, tc);
    if (loss != NULL && y != NULL) {
        mt_node *r = mt_input(f->g, mt_node_shape(y), f->r);
        *loss = mt_sum_all(f->g, mt_mul(f->g, y, r));
    }
    return y;
}

/* L = sum(y * R) in double, from a rebuilt graph. */
static mt_status eval_loss(fixture *f, double *out, float *ybuf) {
    mt_status rc;
    if (f->tc->fresh_graph) {
        mt_graph_free(f->g);
        f->g = NULL;
        rc = graph_new(&f->g);
        if (rc != MT_OK) return rc;
    } else {
        mt_graph_clear(f->g);
    }
    mt_node *y = build(f, NULL);
    rc = mt_graph_forward(f->g);
    if (rc != MT_OK) return rc;
    rc = mt_node_get(y, ybuf, f->ny);
    if (rc != MT_OK) return rc;
    double l = 0;
    for (int64_t i = 0; i < f->ny; i++)
        l += (double)ybuf[i] * (double)f->r[i];
    *out = l;
    return MT_OK;
}

static bool set_elem(fixture *f, int s, float *host, int64_t i, float v) {
    host[i] = v;
    mt_status rc = mt_tensor_set(f->x[s], host, mt_tensor_bytes(f->x[s]));
    mt_params_touch(f->p);
    return CHECK(rc == MT_OK, "mt_tensor_set: %s", mt_errmsg());
}

static bool check_case(const op_case *tc, int row) {
    fixture f;
    memset(&f, 0, sizeof f);
    f.tc = tc;
    int fails_before = th_failures;
    static float host[MAX_IN][MAX_ELEMS], grad[MAX_IN][MAX_ELEMS], ybuf[MAX_ELEMS];
    mt_rng rng;
    mt_rng_seed(&rng, 1000 + (uint64_t)row);

    CHECK_STATUS(mt_params_init(NULL, 42, &f.p));
    for (int s = 0; s < tc->n_in; s++) {
        int64_t n = mt_shape_numel(&tc->shape[s]);
        if (!CHECK(n <= MAX_ELEMS, "%s: input %d too large", tc->name, s)) goto done;
        int64_t perm[MAX_ELEMS];
        for (int64_t i = 0; i < n; i++)
            perm[i] = i;
        for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
            int64_t j = (int64_t)(mt_rng_next(&rng) % (uint64_t)(i + 1));
            int64_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (int64_t i = 0; i < n; i++)
            host[s][i] = gen_value(&rng, tc->gen[s], i, n, perm);
        snprintf(f.names[s], sizeof f.names[s], "x%d", s);
        mt_status rc = mt_params_get(f.p, f.names[s], MT_F32, tc->shape[s],
                                     mt_init_values(host[s], n), &f.x[s]);
        if (!CHECK(rc == MT_OK, "%s: mt_params_get: %s", tc->name, mt_errmsg())) goto done;
    }
    CHECK_STATUS(mt_params_alloc_grads(f.p));
    mt_params_zero_grads(f.p);
    if (!CHECK(graph_new(&f.g) == MT_OK, "graph init: %s", mt_errmsg())) goto done;

    /* analytic: shape of y first, then R, then the loss graph */
    mt_node *y = build(&f, NULL);
    if (!CHECK(y != NULL, "%s: builder failed: %s", tc->name, mt_errmsg())) goto done;
    f.ny = mt_node_numel(y);
    if (!CHECK(f.ny > 0 && f.ny <= MAX_ELEMS, "%s: output size %lld", tc->name, (long long)f.ny)) {
        goto done;
    }
    static float rbuf[MAX_ELEMS];
    f.r = rbuf;
    mt_rng rr;
    mt_rng_seed(&rr, 5000 + (uint64_t)row);
    for (int64_t i = 0; i < f.ny; i++)
        f.r[i] = mt_rng_normal(&rr);
    if (tc->fresh_graph) {
        mt_graph_free(f.g);
        f.g = NULL;
        if (!CHECK(graph_new(&f.g) == MT_OK, "graph init: %s", mt_errmsg())) goto done;
    } else {
        mt_graph_clear(f.g);
    }
    mt_node *loss = NULL;
    y = build(&f, &loss);
    mt_status rc = mt_graph_forward(f.g);
    if (!CHECK(rc == MT_OK && loss != NULL, "%s: forward: %s", tc->name, mt_errmsg())) goto done;
    rc = mt_graph_backward(f.g, loss);
    if (!CHECK(rc == MT_OK, "%s: backward: %s", tc->name, mt_errmsg())) goto done;
    /* the graph's own loss agrees with the double one on the same values */
    float lg = 0;
    CHECK_STATUS(mt_node_get_scalar(loss, &lg));
    for (int s = 0; s < tc->n_in; s++) {
        int64_t n = mt_shape_numel(&tc->shape[s]);
        mt_tensor *gt = mt_params_grad_at(f.p, s);
        if (!CHECK(gt != NULL, "%s: input %d has no gradient buffer", tc->name, s)) goto done;
        CHECK_STATUS(mt_tensor_get(gt, grad[s], (size_t)n * sizeof(float)));
    }
    double l0 = 0;
    rc = eval_loss(&f, &l0, ybuf);
    if (!CHECK(rc == MT_OK, "%s: eval: %s", tc->name, mt_errmsg())) goto done;
    CHECK(fabs(lg - l0) <= 1e-4 + 1e-4 * fabs(l0), "%s: graph loss %.9g, double loss %.9g",
          tc->name, (double)lg, l0);

    /* numeric */
    double eps = tc->eps > 0 ? tc->eps : 1e-3;
    double atol = tc->atol > 0 ? tc->atol : 2e-3, rtol = tc->rtol > 0 ? tc->rtol : 1e-2;
    int bad = 0, checked = 0;
    double max_num = 0;
    for (int s = 0; s < tc->n_in; s++) {
        int64_t n = mt_shape_numel(&tc->shape[s]);
        for (int64_t i = 0; i < n; i++) {
            float x0 = host[s][i];
            if (tc->kink && fabs(x0) < 2 * eps) continue;
            double lp = 0, lm = 0;
            if (!set_elem(&f, s, host[s], i, (float)(x0 + eps))) goto done;
            rc = eval_loss(&f, &lp, ybuf);
            if (rc == MT_OK && set_elem(&f, s, host[s], i, (float)(x0 - eps))) {
                rc = eval_loss(&f, &lm, ybuf);
            }
            if (!set_elem(&f, s, host[s], i, x0)) goto done;
            if (!CHECK(rc == MT_OK, "%s: eval: %s", tc->name, mt_errmsg())) goto done;
            /* the step actually taken in float */
            double step = (double)(float)(x0 + eps) - (double)(float)(x0 - eps);
            double gn = (lp - lm) / step, ga = grad[s][i];
            checked++;
            if (fabs(gn) > max_num) max_num = fabs(gn);
            if (fabs(ga - gn) > atol + rtol * fabs(gn)) {
                if (bad < 4) {
                    fprintf(stderr, "  %s: input %d [%lld]: analytic %.6g numeric %.6g\n", tc->name,
                            s, (long long)i, ga, gn);
                }
                bad++;
            }
        }
    }
    CHECK(bad == 0, "%s: %d of %d gradient entries differ", tc->name, bad, checked);
    CHECK(checked > 0 && max_num > 1e-3, "%s: numeric gradient is zero everywhere", tc->name);
done:
    mt_graph_free(f.g);
    mt_params_free(f.p);
    bool ok = th_failures == fails_before;
    printf("%s %3d %s\n", ok ? "OK    " : "NOT OK", row, tc->name);
    return ok;
}

int main(void) {
    int n = (int)(sizeof cases / sizeof cases[0]), n_ok = 0;
    for (int i = 0; i < n; i++)
        n_ok += check_case(&cases[i], i);
    printf("%d of %d op rows OK\n", n_ok, n);
    TEST_MAIN_END();
}
