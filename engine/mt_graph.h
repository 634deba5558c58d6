/*
** mt_graph.h: the graph: a tape of nodes for one batch, its parameters
** (GEMM type, decoding caches, bfloat16 training), forward and backward,
** the GEMM auto-tuner's state, node values, and the graph's leaves.  The
** op builders are in mt_ops.h.  Part of the engine's public API (mt.h
** includes it).
*/
#ifndef MT_GRAPH_H
#define MT_GRAPH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mt_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------- graph */

typedef struct mt_graph mt_graph; /* tape of nodes for one batch      */
typedef struct mt_node mt_node;   /* one value (+ gradient) on a tape */

/* How products with a constant weight are computed in inference graphs
** (mt_graph_params.gemm_type; engine/ops_gemm_int.c).  In a graph that is
** not training and memoizes, mt_matmul (without trans_a) and mt_affine
** whose B is a 2-D f32 constant (a parameter or a memoized node) take the
** integer path when gemm_type is INT16 or INT8: B is quantized and packed
** once by a memoized "pack" node (kept across clears, recomputed when the
** parameters change), A is quantized per call, C = dequant(Aq . Bq) (+ bias)
** with the error bound of kernels/cpu/kcpu.h "integer GEMM".  AUTO times
** the alternatives per shape (mt_gemm_variant) over the first calls and
** keeps the fastest (WNMT 2018 sec. 4.4).  B given pre-quantized (an int8 or
** int16 parameter from an intgemm model file, mt_params_adopt_item) always
** takes the integer path of its type, in any inference graph; training
** graphs refuse it.  Everything else, and every training graph, is fp32. */
typedef enum mt_gemm_type {
    MT_GEMM_FLOAT32 = 0, /* fp32 (OpenBLAS or the own small-M kernel)  */
    MT_GEMM_INT16 = 1,   /* fixed multiplier 2^10 (Devlin 2017)         */
    MT_GEMM_INT8 = 2,    /* 127 / max|.| (intgemm)                      */
    MT_GEMM_AUTO = 3,    /* tuned per shape                             */
} mt_gemm_type;
const char *mt_gemm_type_name(mt_gemm_type t); /* "float32", "int16", "int8", "auto" */
/* Parses those names (also "fp32", "intgemm8", "intgemm16"); MT_ERR_INVALID. */
mt_status mt_gemm_type_parse(const char *s, mt_gemm_type *out);

/* The alternatives the auto-tuner times. */
typedef enum mt_gemm_variant {
    MT_GEMM_BLAS = 0,  /* OpenBLAS sgemm                                */
    MT_GEMM_SMALL = 1, /* own AVX-512 fp32 kernel (rows <= 16)          */
    MT_GEMM_I16 = 2,
    MT_GEMM_I8 = 3,
    MT_GEMM_VARIANTS
} mt_gemm_variant;
const char *mt_gemm_variant_name(mt_gemm_variant v); /* "blas", "small", "int16", "int8" */

/* How the decoding caches that every step reads whole (the cross-attention
** context and the frozen self-attention history, models/transformer.c) are
** kept in inference graphs (training graphs keep float32):
**   F32               float32
**   F16               float16: half the memory traffic of the attention,
**                     results within f16 rounding of the keys and values
**                     (about 2^-11 relative)
**   F16_BF16_CONTEXT  F16, but the cross-attention contexts in bfloat16
**                     pairs (kcpu_attn_job.h) where the device's fused
**                     attention multiplies them without widening (AVX-512
**                     BF16: mt_graph_kv_bf16); the queries and weights are
**                     then rounded to bfloat16 too (2^-9 relative)
**   F16_INT8_KEYS     F16 values; the keys of the contexts and of the
**                     history in int8, each key quantized on its own
**                     (kcpu_attn_job.h: kh_q8), the query per row and head,
**                     scored by exact integer sums (mt_graph_kv_keys_i8;
**                     mt_pack_rows_kq): a quarter of f16's instructions per
**                     key and half its bytes; a score moves by at most
**                     alpha dk max |q| max |k| / 127
** models/ chooses them by gemm type (mt_kv_cache in models/translator.h). */
typedef enum mt_cache_precision {
    MT_CACHE_F32 = 0,
    MT_CACHE_F16,
    MT_CACHE_F16_BF16_CONTEXT,
    MT_CACHE_F16_INT8_KEYS,
} mt_cache_precision;

/* The settings of a decoding graph, in one place. */
typedef struct mt_decode_params {
    mt_gemm_type gemm_type;    /* see mt_gemm_type (default MT_GEMM_FLOAT32)   */
    int32_t gemm_tune_samples; /* AUTO: timed calls per variant and shape before
                                  deciding (0 = 4)                            */
    mt_cache_precision caches; /* default MT_CACHE_F32 */
} mt_decode_params;

typedef struct mt_graph_params {
    size_t node_arena_bytes;          /* first chunk of the node arena                */
    size_t workspace_bytes;           /* device workspace reserved at init            */
    bool training;                    /* keep what backward needs; dropout active     */
    bool memoize;                     /* cache constant subgraphs across clears       */
    bool strict;                      /* workspace/arena growth after the first clear
                                         is an error                                  */
    uint64_t seed;                    /* dropout RNG                                   */
    bool (*should_abort)(void *user); /* polled between nodes; may be NULL */
    void *abort_user;
    /* Inference graphs (not training): op values and scratch are allocated
    ** when forward reaches the node and given back after its last consumer
    ** ran, so a round needs the memory of the values alive at once instead
    ** of all of them (an encoder of 6 layers: about a layer's).  Nodes with
    ** no consumer (the outputs) are kept; a node read after forward that also
    ** feeds others must be marked with mt_graph_keep before forward.  Reading
    ** a released value, or building on it, is an error, never garbage. */
    bool release_values;
    /* Inference graphs: how products with weights are computed and how the
    ** decoding caches are kept (mt_decode_params). */
    mt_decode_params decode;
    /* Training graphs (mtpe train --precision bfloat16): the products of
    ** mt_matmul and mt_affine and both products of their gradients, one
    ** product at a time (not the batched ones of attention), with bfloat16
    ** operands and float32 sums (the device's gemm_bf16; float32 where the
    ** device has none).  Values, gradients and weights stay float32. */
    bool bf16_products;
} mt_graph_params;

mt_graph_params mt_graph_default_params(void);

/* Creates a graph on dev (NULL = CPU).  On success *out owns the graph. */
mt_status mt_graph_init(mt_device *dev, mt_graph_params p, mt_graph **out);
void mt_graph_clear(mt_graph *g); /* drop nodes, keep memory (and memo cache) */
void mt_graph_free(mt_graph *g);  /* NULL is a no-op                          */
void mt_graph_set_training(mt_graph *g, bool training);
bool mt_graph_training(const mt_graph *g);
/* The caches are float16 (any precision but F32) and not training. */
bool mt_graph_kv_f16(const mt_graph *g);
/* F16_BF16_CONTEXT, not training, and the device's fused attention has the
** bfloat16 dot products for heads of dk (mt_device_ops.attn_bf16). */
bool mt_graph_kv_bf16(const mt_graph *g, int64_t dk);
/* F16_INT8_KEYS, not training, the fused attention, and the device's
** fold into int8 keys for heads of dk (mt_pack_rows_kq_supported). */
bool mt_graph_kv_keys_i8(const mt_graph *g, int64_t dk);
/* Reseeds the dropout RNG (engine/graph_seed.c).  mtpe train reseeds from
** (seed, update) before every update, so that a run resumed from a
** checkpoint draws the same dropout masks as one that never stopped. */
void mt_graph_set_seed(mt_graph *g, uint64_t seed);

/* Evaluates every node not yet computed.  Also returns the first error
** recorded while building (builders return NULL after a failure). */
mt_status mt_graph_forward(mt_graph *g);
/* Keeps n's value until the graph is cleared (release_values graphs); n may
** be NULL (a no-op).  Nodes that are not ops (inputs, params) always stay. */
void mt_graph_keep(mt_graph *g, mt_node *n);
/* Reverse-mode pass from a scalar (numel 1) loss with seed gradient 1.
** Gradients of parameter nodes are ADDED to the parameters' grad buffers
** (gradient accumulation; zero them with mt_params_zero_grads). */
mt_status mt_graph_backward(mt_graph *g, mt_node *loss);
mt_status mt_graph_status(const mt_graph *g); /* sticky build error */

typedef struct mt_graph_stats {
    int64_t n_nodes;
    size_t workspace_capacity;
    size_t workspace_used;
    size_t arena_capacity;
    uint64_t workspace_grow_count; /* reallocations of the workspace and value region */
    uint64_t memo_hits;
    uint64_t memo_entries;
    /* release_values graphs: */
    size_t values_capacity; /* the region values are released into        */
    size_t values_peak;     /* most bytes alive at once, this or a past round */
} mt_graph_stats;
mt_graph_stats mt_graph_get_stats(const mt_graph *g);

/* Auto-tuner state of a graph (gemm_type AUTO), kept across clears: one
** entry per product shape, rows bucketed by powers of two (m_lo..m_hi).
** Each alternative available for the shape is timed gemm_tune_samples times
** (in rotation, so they see the same mix of rows), the fastest per row by
** its best sample is kept and never reconsidered.  ns_per_row[v] is 0 for
** a variant not timed (unavailable: SMALL above 16 rows, the fp32 variants
** for a pre-quantized B).  While an entry is undecided its products use
** the variant being timed, so early results mix precisions. */
typedef struct mt_gemm_decision {
    int64_t m_lo, m_hi, n, k;
    bool trans_b;
    bool decided;
    bool pinned; /* chosen by a test's pin, not timed */
    mt_gemm_variant chosen;
    double ns_per_row[MT_GEMM_VARIANTS];
    int64_t calls; /* products computed under this entry */
} mt_gemm_decision;
/* Writes up to max entries (in creation order) to out and returns how many
** the graph has (call with max 0 to count). */
int mt_graph_gemm_decisions(const mt_graph *g, mt_gemm_decision *out, int max);
/* g uses from's GEMM state from now on: the auto-tuner's entries and the
** kept column selections of packed weights (mt_matmul_cols), so that graphs
** that take turns (a decoder's alternate step graphs) time each shape and
** select a shortlist's columns once, not once each.  Both graphs must be
** used by one thread and be on one device (MT_ERR_INVALID); g's own state,
** if any, is dropped.  The state lives until the last graph using it is
** freed. */
mt_status mt_graph_share_gemm_state(mt_graph *g, mt_graph *from);
/* Column selections of packed weights made so far by g's GEMM state (each
** kept and found again by later products with the same columns; graphs
** sharing the state count together). */
int64_t mt_graph_gemm_selections(const mt_graph *g);

/* Floating-point operations of the matrix products that evaluating root
** runs (engine/graph_flops.c), for throughput reports: 2 M N K per product
** (times its batch) over mt_matmul / mt_bmm / mt_affine nodes (and integer
** gemm nodes of inference graphs) that root depends on, each node once;
** with_backward adds the GEMMs mt_graph_backward(g, root) runs: one of the
** forward's size per operand that needs a gradient (none when root needs
** none).  Memoized nodes are not counted.  root must be a node of g built
** since the last clear.  MT_ERR_INVALID (NULL arguments, root not on g's
** tape) or MT_ERR_NOMEM; *out is 0 on failure. */
mt_status mt_graph_matmul_flops(const mt_graph *g, const mt_node *root, bool with_backward,
                                double *out);

/* Node accessors.  Values are available after mt_graph_forward. */
mt_shape mt_node_shape(const mt_node *n);
mt_dtype mt_node_dtype(const mt_node *n);
int64_t mt_node_numel(const mt_node *n);
mt_status mt_node_get(const mt_node *n, float *host, int64_t numel);       /* f32 values */
mt_status mt_node_get_i32(const mt_node *n, int32_t *host, int64_t numel); /* i32 nodes */
mt_status mt_node_get_grad(const mt_node *n, float *host, int64_t numel);  /* after backward */
mt_status mt_node_get_scalar(const mt_node *n, float *out);
const mt_tensor *mt_node_value(const mt_node *n); /* device tensor view */
/* Fused output layer of a beam search (fused-softmax paper sec. 3.1): for
** each row of the computed 2-D f32 node (logits [rows, cols]), its k best
** columns by log-softmax, best first, ties by lower column, with their
** log-probabilities, in one pass with an online normaliser
** (kcpu_softmax_topk); idx, logp: host [rows * k] (past cols: -1, -inf).
** MT_ERR_UNSUPPORTED on a device without it (callers then take the
** log-softmax of whole rows). */
mt_status mt_node_logsoftmax_topk(const mt_node *n, int32_t k, int32_t *idx, float *logp);
/* Beam 1 without scores (WNMT 2018 sec. 2.3): for each row of the computed
** 2-D f32 node, idx[r] = the first column of the largest value + bias[c]
** (bias: host [cols], 0 or -INFINITY for a column left out, or NULL), -1
** when no value exceeds -inf (NaN never wins).  idx: host [rows].  One pass
** on the device (kcpu_argmax_rows), without copying the rows out.
** MT_ERR_UNSUPPORTED on a device without it. */
mt_status mt_node_argmax(const mt_node *n, const float *bias, int32_t *idx);
const char *mt_node_op_name(const mt_node *n);

/* ------------------------------------------------------- graph leaves */

/* Inputs are copied into the workspace at build time. */
mt_node *mt_input(mt_graph *g, mt_shape shape, const float *data);
mt_node *mt_input_i32(mt_graph *g, mt_shape shape, const int32_t *data);
mt_node *mt_constant(mt_graph *g, mt_shape shape, float value); /* filled */
/* A parameter of p as a node (get-or-create with init).  Its gradient flows
** into p's grad buffer when the parameter is trainable and g is training. */
mt_node *mt_param(mt_graph *g, mt_params *p, const char *name, mt_shape shape, mt_init init);
/* A view of an existing tensor as a constant leaf (not copied). */
mt_node *mt_tensor_node(mt_graph *g, const mt_tensor *t);

#ifdef __cplusplus
}
#endif
#endif /* MT_GRAPH_H */
