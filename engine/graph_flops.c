/*
** graph_flops.c: floating-point operations of the matrix products of a
** built graph (mt_graph_matmul_flops in mt.h), for throughput reports:
** `mtpe train` and `mtpe bench train` divide them by the time of the
** updates and by the machine's fp32 peak.
**
** Counted, for every node the value of root depends on (a walk over the
** sources from root, each node once however many consumers it has):
**
**   op        geometry (attrs, set by its builder)       forward
**   matmul    ops_linalg.c {ta, tb, batch, M, K, N}        2 batch M N K
**   bmm       same                                          2 batch M N K
**   bmm_gather same (batch = N J: all its products)         2 batch M N K
**   affine    same (ta = tb = 0)                            2 batch M N K
**   gemm_q    ops_gemm_int.c {rows, K, N, ...}              2 rows N K
**
** One multiply and one add per term of each dot product, as GEMM GFLOP/s
** are quoted; bmm's alpha scaling, affine's bias and gemm_q's quantization
** are not products and not counted; a gemm_q's multiply-adds count alike
** whether it ran on integers or floats (it exists only in inference graphs).
**
** Backward (with_backward), exactly the GEMMs of mt_graph_backward:
** backward visits the nodes reachable from root through nodes that need a
** gradient (when root needs one at all).  For each such product C = op(A)
** op(B), ops_linalg.c's mm_grads runs one GEMM of the forward's size for dA
** when A needs a gradient and one for dB when B does (with ta in matmul,
** dB is a loop of per-slice GEMMs that add up to the same count).  So a
** product of two activations costs 3x its forward in training, a product
** of an input (or a frozen weight) with a weight 2x, and one of which no
** source needs a gradient 1x.  gemm_q has no backward.
**
** Not counted: memoized nodes (is_memo: computed once per parameter
** version, not per build) and everything behind them.
*/
#include <string.h>

#include "graph_impl.h"

/* ------------------------------------------------------------ products */

typedef enum prod_kind { PROD_NONE = 0, PROD_FLOAT, PROD_QUANT } prod_kind;

static prod_kind product_kind(const mt_node *n) {
    const char *name = n->op != NULL ? n->op->name : NULL;
    if (name == NULL) return PROD_NONE;
    if (!strcmp(name, "matmul") || !strcmp(name, "bmm") || !strcmp(name, "bmm_gather") ||
        !strcmp(name, "affine"))
        return PROD_FLOAT;
    if (!strcmp(name, "gemm_q")) return PROD_QUANT;
    return PROD_NONE;
}

/* Forward operations of one product node (0 for other nodes).  The counts
** come from the attrs its builder stored; they are checked against the
** output shape, so a change of the attr layout in ops_linalg.c or
** ops_gemm_int.c trips the assert instead of miscounting. */
static double product_flops(const mt_node *n) {
    int64_t numel = mt_shape_numel(&n->val.shape);
    switch (product_kind(n)) {
    case PROD_FLOAT: {
        int64_t batch = n->attr.i[2], m = n->attr.i[3], k = n->attr.i[4], cols = n->attr.i[5];
        MT_ASSERT(batch >= 0 && m >= 0 && k >= 0 && cols >= 0 && batch * m * cols == numel);
        return 2.0 * (double)batch * (double)m * (double)cols * (double)k;
    }
    case PROD_QUANT: {
        int64_t rows = n->attr.i[0], k = n->attr.i[1], cols = n->attr.i[2];
        MT_ASSERT(rows >= 0 && k >= 0 && cols >= 0 && rows * cols == numel);
        return 2.0 * (double)rows * (double)cols * (double)k;
    }
    default: return 0.0;
    }
}

/* Backward operations of a product node that backward visits: one GEMM of
** the forward's size per operand (sources 0 and 1) that needs a gradient. */
static double product_backward_flops(const mt_node *n) {
    if (product_kind(n) != PROD_FLOAT) return 0.0;
    int grads = 0;
    for (int s = 0; s < 2 && s < n->n_src; s++)
        grads += node_wants_grad(n->src[s]) ? 1 : 0;
    return grads * product_flops(n);
}

/* ---------------------------------------------------------------- walk */

/* Depth-first walk from root over the sources (only those that need a
** gradient when grad_only), summing fwd(n) or bwd(n) over the nodes seen.
** Tape order puts every non-memo source before its consumer, so node ids
** below root's index `seen` (root->id + 1 bytes, zeroed by the caller) and
** the stack never holds more than root->id + 1 nodes. */
static double walk(const mt_node *root, bool grad_only, unsigned char *seen,
                   const mt_node **stack) {
    double sum = 0.0;
    int64_t top = 0;
    seen[root->id] = 1;
    stack[top++] = root;
    while (top > 0) {
        const mt_node *n = stack[--top];
        sum += grad_only ? product_backward_flops(n) : product_flops(n);
        for (int s = 0; s < n->n_src; s++) {
            const mt_node *x = n->src[s];
            if (x == NULL || x->is_memo) continue;
            if (grad_only && !x->needs_grad) continue;
            MT_ASSERT(x->id >= 0 && x->id < n->id);
            if (seen[x->id]) continue;
            seen[x->id] = 1;
            stack[top++] = x;
        }
    }
    return sum;
}

mt_status mt_graph_matmul_flops(const mt_graph *g, const mt_node *root, bool with_backward,
                                double *out) {
    mt_status rc = MT_OK;
    unsigned char *seen = NULL;
    const mt_node **stack = NULL;
    if (g == NULL || root == NULL || out == NULL) {
        return mt_seterr(MT_ERR_INVALID, "mt_graph_matmul_flops: graph, root and out are needed");
    }
    *out = 0.0;
    if (root->is_memo) return MT_OK; /* computed once, not per build */
    int64_t n_nodes = mt_graph_get_stats(g).n_nodes;
    if (root->id < 0 || root->id >= n_nodes) {
        return mt_seterr(MT_ERR_INVALID,
                         "mt_graph_matmul_flops: root (node %lld) is not on the graph's tape "
                         "of %lld nodes (built before the last clear?)",
                         (long long)root->id, (long long)n_nodes);
    }
    size_t n = (size_t)root->id + 1;
    seen = mt_try_calloc(n, 1);
    stack = mt_try_malloc(n * sizeof *stack);
    if (seen == NULL || stack == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "mt_graph_matmul_flops: out of memory (%zu nodes)", n);
        goto fail;
    }
    double flops = walk(root, false, seen, stack);
    if (with_backward && root->needs_grad && root->n_src > 0) {
        memset(seen, 0, n);
        flops += walk(root, true, seen, stack);
    }
    *out = flops;
fail:
    mt_free(stack);
    mt_free(seen);
    return rc;
}
