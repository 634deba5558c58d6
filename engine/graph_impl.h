/*
** graph_impl.h: engine-private structure of graphs and nodes, shared by
** graph.c and the ops_*.c files.  models/ never includes this.
**
** An op is an mt_op_def (name, forward, backward) plus a builder that
** checks shapes and calls graph_push().  Forward writes n->val from the
** sources' values; backward ADDS into the sources' grads (each src grad is
** zeroed by the driver before the pass) and must skip sources for which
** node_wants_grad() is false.
*/
#ifndef MT_GRAPH_IMPL_H
#define MT_GRAPH_IMPL_H
#include "device.h"
#include "mt.h"

#define MT_MAX_SRC 8
#define MT_ATTR_INTS 8

typedef struct mt_op_def {
    const char *name;
    mt_status (*forward)(mt_graph *g, mt_node *n);
    mt_status (*backward)(mt_graph *g, mt_node *n); /* NULL: not differentiable */
} mt_op_def;
/* True for ops whose forward makes the value alias src[0]'s (reshape). */
bool op_is_view(const mt_op_def *op);

/* Op attributes (plain data: they are hashed for memoization, so unused
** bytes must stay zero, which graph_push guarantees). */
typedef struct mt_attrs {
    int64_t i[MT_ATTR_INTS];
    float f[4];
} mt_attrs;

struct mt_node {
    const mt_op_def *op;
    mt_tensor val;  /* value; data in the workspace, a param, or memo storage */
    mt_tensor grad; /* allocated (zeroed) by backward, or the param's grad    */
    mt_node *src[MT_MAX_SRC];
    int n_src;
    mt_attrs attr;
    void *aux;      /* op-private workspace buffer (e.g. layer-norm stats)     */
    size_t aux_bytes;
    int64_t id;     /* position on the tape                                   */
    bool computed;
    bool needs_grad; /* a trainable param is upstream and g is training        */
    bool is_const;   /* all inputs are constants/params: memoizable            */
    bool is_memo;    /* lives in the memo cache, survives mt_graph_clear       */
    mt_params *params; /* for param nodes                                       */
    int param_index;
    /* Values released after their last use (mt_graph_params.release_values) */
    int32_t uses;  /* consumers built and not yet computed                   */
    bool lazy;     /* value (and aux) allocated at forward, freed when dead  */
    bool lazy_aux; /* aux allocated at forward, freed after it               */
    bool keep;     /* mt_graph_keep: never released                          */
    bool released; /* value gone (val.data NULL)                             */
    /* The largest |value| (NaN skipped), measured by the op that computed
    ** it for an integer product that quantizes it next (gemm_q). */
    bool has_amax;
    float amax;
};

/* Builder core.  Allocates the node and its value (shape, dtype) in the
** graph, copies attrs, sets needs_grad/is_const from the sources, and, for a
** constant node in a memoizing inference graph, returns the cached node of
** an identical earlier build instead (its value already computed).  Returns
** NULL (sticky error recorded) on failure or when any src is NULL. */
mt_node *graph_push(mt_graph *g, const mt_op_def *op, mt_shape shape, mt_dtype dtype, int n_src,
                    mt_node *const *src, const mt_attrs *attrs);
/* Reserves op-private workspace for node n (batch lifetime), available to
** forward and backward as n->aux.  Call from the builder after graph_push;
** returns false (sticky error) on failure. */
bool graph_node_aux(mt_graph *g, mt_node *n, size_t bytes);
/* A memoized node's entry serial (unique in its graph, never reused); 0
** for other nodes. */
uint64_t graph_memo_serial(const mt_node *n);
/* Keeps a reference to a shared pack (params_pack_ref) until the next
** clear; false (reference given back, sticky error) when out of memory. */
bool graph_hold_pack(mt_graph *g, mt_params *p, const void *data, uint64_t serial);
/* Among the last `depth` nodes of the tape not computed yet, the latest of
** op with source 0 src0 and attr.i[0] attr0, or NULL (a builder reusing a
** node it made for an earlier consumer of the same value). */
mt_node *graph_recent_node(mt_graph *g, const mt_op_def *op, const mt_node *src0, int64_t attr0,
                           int depth);
/* Identity of a packed weight node across rounds: its memo serial, or the
** serial of the shared pack it views; 0 for others. */
uint64_t graph_pack_serial(const mt_graph *g, const mt_node *n);
/* Records a sticky error (first one wins) and sets mt_errmsg.  Returns NULL
** so builders can `return graph_fail(...)`. */
mt_node *graph_fail(mt_graph *g, mt_status rc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static inline bool node_wants_grad(const mt_node *n) { return n != NULL && n->needs_grad; }
mt_device *graph_device(const mt_graph *g);
const mt_device_ops *graph_ops(const mt_graph *g);
/* MT_OK when every id of the int32 node ids (read from the device in
** chunks through a stack buffer) lies in [0, limit); else an error naming
** op, what the ids are ("id", "label") and the first one outside. */
mt_status graph_check_ids(mt_graph *g, const char *op, const char *what, const mt_node *ids,
                          int64_t limit);
bool graph_is_training(const mt_graph *g);
mt_rng *graph_rng(mt_graph *g); /* dropout */
/* Appended for the integer GEMM path (engine/ops_gemm_int.c). */
const mt_graph_params *graph_params(const mt_graph *g);
bool graph_memoizing(const mt_graph *g); /* memoize on and not training */
/* The graph's auto-tuner table (created by ops_gemm_int.c on first use,
** kept across clears, freed by mt_graph_free through gemm_tuner_free). */
struct gemm_tuner;
struct gemm_tuner **graph_tuner(mt_graph *g);
const struct gemm_tuner *graph_tuner_const(const mt_graph *g);
void gemm_tuner_free(struct gemm_tuner *t);
/* Builds x . op(B) (+ bias) on the integer / tuned path when it applies
** (mt_gemm_type in mt.h): B a 2-D constant f32 with gemm_type != FLOAT32 in
** a memoizing inference graph, or a pre-quantized int8/int16 parameter.
** a: [..., M, K] f32 (never transposed); bias NULL or f32 [N] / [1, N].
** Returns the node; or NULL with *taken false when the path does not apply
** (the caller builds the fp32 op); or NULL with *taken true on error. */
mt_node *graph_gemm_const_b(mt_graph *g, mt_node *a, mt_node *b, mt_node *bias, bool trans_b,
                            bool *taken);
/* x . W + b as one product with the bias in it (mt_affine, mt_affine_relu):
** x of 2 or more dims, W 2-D [K, N], b f32 [N] or [1, N]. */
static inline bool affine_fusable(const mt_node *x, const mt_node *w, const mt_node *b) {
    const mt_shape *sx = &x->val.shape, *sw = &w->val.shape, *sb = &b->val.shape;
    return sx->ndim >= 2 && sw->ndim == 2 && b->val.dtype == MT_F32 &&
           ((sb->ndim == 1 && sb->dim[0] == sw->dim[1]) ||
            (sb->ndim == 2 && sb->dim[0] == 1 && sb->dim[1] == sw->dim[1]));
}
static inline float *node_f32(const mt_node *n) { return (float *)n->val.data; }
/* The head sizes int8 keys take (kernels/cpu/kcpu_attn_job.h: a multiple of 4 up to
** KCPU_Q8_DK_MAX): mt_pack_rows_kq and mt_attn_rows_kt. */
static inline bool keys_q8_dk(int64_t dk) { return dk > 0 && dk % 4 == 0 && dk <= 256; }
static inline float *node_grad_f32(const mt_node *n) { return (float *)n->grad.data; }
static inline const int32_t *node_i32(const mt_node *n) { return (const int32_t *)n->val.data; }

#endif /* MT_GRAPH_IMPL_H */
