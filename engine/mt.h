/*
** mt.h: public interface of the mtpe engine.  models/ and app/ include only
** this file.  Nothing here mentions kernels, CUDA, ncurses or SQLite.
**
** Lifetimes:  mt_device (process) > mt_params (model) > mt_graph (batch).
** Threading:  one mt_graph per thread; an mt_params may be shared read-only
**             by several graphs (inference).  mt_errmsg() is per thread.
** Shapes:     outermost first, last dimension contiguous (row-major).
** Weights:    stored as Marian stores them, [in, out], y = x.W + b.
*/
#ifndef MT_H
#define MT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mt_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MT_MAX_DIMS 6

/* --------------------------------------------------------------- tensors */

typedef enum mt_dtype {
    MT_F32 = 0,
    MT_F16 = 1, /* storage only: converted to f32 for compute             */
    MT_I8 = 2,
    MT_I16 = 3,
    MT_I32 = 4,
    MT_BF16 = 5, /* storage only: the fused attention's bfloat16 pairs      */
    MT_DTYPE_COUNT
} mt_dtype;

size_t mt_dtype_size(mt_dtype t);
const char *mt_dtype_name(mt_dtype t); /* "float32", "float16", "int8", ... */

typedef struct mt_device mt_device; /* a CPU or CUDA execution target */

typedef struct mt_shape {
    int ndim;
    int64_t dim[MT_MAX_DIMS];
} mt_shape;

mt_shape mt_shape_make(int ndim, const int64_t *dims);
mt_shape mt_shape1(int64_t d0);
mt_shape mt_shape2(int64_t d0, int64_t d1);
mt_shape mt_shape3(int64_t d0, int64_t d1, int64_t d2);
mt_shape mt_shape4(int64_t d0, int64_t d1, int64_t d2, int64_t d3);
int64_t mt_shape_numel(const mt_shape *s);
bool mt_shape_eq(const mt_shape *a, const mt_shape *b);
/* Writes "[2, 3, 4]" into buf (always NUL-terminated); returns buf. */
char *mt_shape_str(const mt_shape *s, char *buf, size_t n);

/* A tensor: shape, dtype, and data on a device (host memory for the CPU
** device).  A tensor either owns its data (owns=true: allocated with
** mt_tensor_init, freed by mt_tensor_free) or views memory owned elsewhere
** (graph workspace, parameter buffer, a mapped file).  Models do not touch
** data directly; they use mt_tensor_get/set which copy through the device. */
typedef struct mt_tensor {
    mt_shape shape;
    mt_dtype dtype;
    void *data;
    mt_device *dev;
    bool owns;
} mt_tensor;

/* Allocates a zero-filled tensor on dev (NULL = CPU). */
mt_status mt_tensor_init(mt_device *dev, mt_dtype dtype, mt_shape shape, mt_tensor *out);
void mt_tensor_free(mt_tensor *t); /* frees data if owned; safe on zeroed t */
int64_t mt_tensor_numel(const mt_tensor *t);
size_t mt_tensor_bytes(const mt_tensor *t);
/* Host <-> device copies of the whole tensor (bytes must equal the size). */
mt_status mt_tensor_set(mt_tensor *t, const void *host, size_t bytes);
mt_status mt_tensor_get(const mt_tensor *t, void *host, size_t bytes);
/* f16 <-> f32 conversion (IEEE binary16, round to nearest even). */
uint16_t mt_f32_to_f16(float f);
float mt_f16_to_f32(uint16_t h);

/* ---------------------------------------------------------------- device */

/* The CPU device is a process-wide singleton (never freed).  A CUDA device
** exists only when built with MT_CUDA and a GPU is present. */
mt_device *mt_device_cpu(void);
mt_status mt_device_cuda(int ordinal, mt_device **out); /* MT_ERR_UNSUPPORTED without CUDA */
const char *mt_device_name(const mt_device *d);
/* Name of the CPU instruction set in use ("avx512", "avx2", "ref").  The
** environment variable MT_ISA=ref|avx2|avx512 caps it. */
const char *mt_cpu_isa(void);
/* The instruction set the dispatching kernels use now: mt_cpu_isa, or
** below it where a test capped it. */
const char *mt_cpu_isa_active(void);

/* The CPU device's threads and libraries (settings are process-wide).
** OpenBLAS runs its products on mt_cpu_set_blas_threads threads (1: each
** translation worker single-threaded); the device's own threads
** (mt_cpu_set_own_threads; 0 or 1: none) split bfloat16 products and
** row-wise ops.  Training with bfloat16 products gives them all the cores
** and OpenBLAS one. */
void mt_cpu_set_blas_threads(int n);
void mt_cpu_set_own_threads(int n);
/* True when the CPU has AVX-512, OPENBLAS_CORETYPE is unset and the loaded
** OpenBLAS runs a kernel set without AVX-512 (0.3.21 on Zen 4/5): the
** program should setenv("OPENBLAS_CORETYPE", "SkylakeX", 1) and re-execute
** itself, since OpenBLAS picks its kernels before main().  Cheap. */
bool mt_cpu_blas_needs_reexec(void);
const char *mt_cpu_blas_corename(void); /* "SkylakeX", "Haswell", ... */
/* The tile kernel of the bfloat16 products ("avx512-bf16", ...). */
const char *mt_cpu_gemm_bf16_name(void);
/* Where fp32 products take the own small-M kernel instead of OpenBLAS
** (with B transposed or not): at most *max_m rows, and batched products of
** at most *max_batched multiply-adds; both 0 without such a kernel. */
void mt_cpu_gemm_small_limits(bool trans_b, int64_t *max_m, int64_t *max_batched);

/* Measured throughput of one core, for benchmarks (best of short runs over
** `seconds`): fp32 FMA in GFLOP/s with the widest FMA this CPU has (0
** without AVX2), and integer multiply-adds in GOP/s with the instructions
** of the integer GEMM in use (int8 or int16; 0 for the portable one),
** mt_cpu_int_peak_what naming them. */
double mt_cpu_fp32_peak_gflops(double seconds);
double mt_cpu_int_peak_gops(bool int16, double seconds);
const char *mt_cpu_int_peak_what(bool int16);
/* The kernel micro-benchmarks of `mtpe bench`: name "gemm" (fp32 GEMM,
** OpenBLAS against the own small-M kernel), "gemm-int" (int8 / int16
** against fp32), "topk" (fused softmax + top-k) or "attn" (fused
** attention), single-threaded, median of `repeat` samples, tables written
** to out.  peak: the nominal per-core peak the fractions use (gemm: fp32
** GFLOP/s, gemm-int: int8 GOP/s; unused by the others).  MT_ERR_INVALID
** for another name, MT_ERR_NOMEM (message saying of what). */
mt_status mt_cpu_bench(const char *name, int repeat, double peak, FILE *out);

/* ------------------------------------------------------- random numbers */

/* Small seeded generator (xoshiro-style), reproducible across platforms. */
typedef struct mt_rng {
    uint64_t s[4];
} mt_rng;
void mt_rng_seed(mt_rng *r, uint64_t seed);
uint64_t mt_rng_next(mt_rng *r);
float mt_rng_uniform(mt_rng *r); /* [0, 1)                               */
float mt_rng_normal(mt_rng *r);  /* standard normal                      */

/* ------------------------------------------------------------ parameters */

/* Named persistent tensors (the model lifetime), each with a gradient
** buffer (allocated when training) and flags.  Names are Marian's
** ("encoder_l1_self_Wq", "Wemb", ...).  Iteration order = creation order. */
typedef struct mt_params mt_params;

typedef enum mt_init_kind {
    MT_INIT_ZEROS = 0,
    MT_INIT_ONES,
    MT_INIT_GLOROT_UNIFORM, /* U(-a, a), a = sqrt(6 / (fan_in + fan_out))   */
    MT_INIT_GLOROT_NORMAL,  /* N(0, 2 / (fan_in + fan_out))                 */
    MT_INIT_UNIFORM,        /* U(lo, hi)                                      */
    MT_INIT_NORMAL,         /* N(mean, std^2)                                 */
    MT_INIT_VALUES,         /* copy n_values floats from values              */
} mt_init_kind;

typedef struct mt_init {
    mt_init_kind kind;
    float a, b; /* UNIFORM: lo, hi;  NORMAL: mean, std                      */
    const float *values;
    int64_t n_values;
} mt_init;
mt_init mt_init_zeros(void);
mt_init mt_init_ones(void);
mt_init mt_init_glorot_uniform(void);
mt_init mt_init_glorot_normal(void);
mt_init mt_init_uniform(float lo, float hi);
mt_init mt_init_normal(float mean, float std);
mt_init mt_init_values(const float *values, int64_t n);

mt_status mt_params_init(mt_device *dev, uint64_t seed, mt_params **out);
void mt_params_free(mt_params *p);
/* Get-or-create: returns the existing parameter (shape must match, else
** MT_ERR_INVALID with a message naming both shapes) or creates it with init.
** The returned pointer stays valid for the lifetime of p. */
mt_status mt_params_get(mt_params *p, const char *name, mt_dtype dtype, mt_shape shape,
                        mt_init init, mt_tensor **out);
mt_tensor *mt_params_find(const mt_params *p, const char *name); /* NULL if absent */
/* Adds an existing tensor under name, taking ownership of its data (the
** tensor is moved: t->owns becomes false).  Used by model loading. */
mt_status mt_params_adopt(mt_params *p, const char *name, mt_tensor *t);
int mt_params_count(const mt_params *p);
const char *mt_params_name(const mt_params *p, int i);
mt_tensor *mt_params_at(mt_params *p, int i);
mt_tensor *mt_params_grad_at(mt_params *p, int i); /* NULL until grads allocated */
/* Freezes a parameter: no gradient, treated as a constant (memoizable). */
void mt_params_set_trainable(mt_params *p, const char *name, bool trainable);
bool mt_params_trainable_at(const mt_params *p, int i);
/* Allocates zeroed gradient buffers for trainable f32 parameters. */
mt_status mt_params_alloc_grads(mt_params *p);
void mt_params_zero_grads(mt_params *p);
/* Bumped on every change of values (optimizer step, load, set): memoized
** constant nodes computed from older values are recomputed. */
uint64_t mt_params_version(const mt_params *p);
void mt_params_touch(mt_params *p);
int64_t mt_params_numel(const mt_params *p); /* total elements */

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

typedef struct mt_graph_params {
    size_t node_arena_bytes; /* first chunk of the node arena                */
    size_t workspace_bytes;  /* device workspace reserved at init            */
    bool training;           /* keep what backward needs; dropout active     */
    bool memoize;            /* cache constant subgraphs across clears       */
    bool strict;             /* workspace/arena growth after the first clear
                                is an error (MT_GRAPH_STRICT)                */
    uint64_t seed;           /* dropout RNG                                   */
    bool (*should_abort)(void *user); /* polled between nodes; may be NULL */
    void *abort_user;
    /* Appended: */
    mt_gemm_type gemm_type;    /* see mt_gemm_type (default MT_GEMM_FLOAT32)   */
    int32_t gemm_tune_samples; /* AUTO: timed calls per variant and shape before
                                  deciding (0 = 4)                            */
    /* Inference graphs (not training): op values and scratch are allocated
    ** when forward reaches the node and given back after its last consumer
    ** ran, so a round needs the memory of the values alive at once instead
    ** of all of them (an encoder of 6 layers: about a layer's).  Nodes with
    ** no consumer (the outputs) are kept; a node read after forward that also
    ** feeds others must be marked with mt_graph_keep before forward.  Reading
    ** a released value, or building on it, is an error, never garbage. */
    bool release_values;
    /* Inference graphs: the decoding caches that every step reads whole
    ** (the cross-attention context and the frozen self-attention history,
    ** models/transformer.c) are kept in float16 instead of float32: half
    ** the memory traffic of the attention, results within f16 rounding of
    ** the keys and values (about 2^-11 relative).  mtpe turns it on with
    ** the integer gemm types (app/scorer_model.c), never for float32. */
    bool kv_f16;
    /* With kv_f16: the cross-attention contexts in bfloat16 pairs instead
    ** (the layout of kcpu_attn_job.h's bfloat16 pairs), where the device's fused
    ** attention multiplies them without widening (AVX-512 BF16:
    ** mt_graph_kv_bf16); the queries and weights are then rounded to
    ** bfloat16 too (2^-9 relative).  mtpe turns it on with --kv-cache
    ** bfloat16 only (app/scorer_model.c). */
    bool kv_bf16;
    /* With kv_f16: the keys of the cross-attention contexts and of the
    ** frozen self-attention history in int8, each key quantized on its own
    ** (kcpu_attn_job.h: kh_q8), the query per row and head, scored by
    ** exact integer sums (mt_graph_kv_keys_i8; mt_pack_rows_kq); the values
    ** stay f16.  A quarter of f16's instructions per key and half its bytes;
    ** a score moves by at most alpha dk max |q| max |k| / 127.  mtpe turns
    ** it on with int8 products (app/scorer_model.c). */
    bool kv_keys_i8;
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
bool mt_graph_kv_f16(const mt_graph *g); /* kv_f16 and not training */
/* kv_f16, kv_bf16, not training, and the device's fused attention has the
** bfloat16 dot products for heads of dk (mt_device_ops.attn_bf16). */
bool mt_graph_kv_bf16(const mt_graph *g, int64_t dk);
/* kv_f16, kv_keys_i8, not training, the fused attention, and the device's
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
    /* appended: release_values graphs */
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
mt_status mt_node_get(const mt_node *n, float *host, int64_t numel);      /* f32 values */
mt_status mt_node_get_i32(const mt_node *n, int32_t *host, int64_t numel); /* i32 nodes */
mt_status mt_node_get_grad(const mt_node *n, float *host, int64_t numel); /* after backward */
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

/* ------------------------------------------------------------------- ops
** Builders record a sticky error on the graph and return NULL on failure;
** given a NULL input they return NULL.  All ops compute in f32 unless
** stated.  "broadcast" = NumPy rules over trailing dimensions.            */

/* op(a).op(b).  a: [..., M, K] (leading dims flattened into rows) when b is
** 2-D [K, N];  trans flags transpose the last two dims. */
mt_node *mt_matmul(mt_graph *g, mt_node *a, mt_node *b, bool trans_a, bool trans_b);
/* a . op(B)[:, cols] for a 2-D B and cols i32 [n'] (a lexical shortlist of
** an output layer): mt_matmul of the selected columns (mt_index_select), or,
** on the integer path with a fixed int8/int16 gemm_type, the columns of the
** packed B (packed once) without quantizing them again; then the result
** equals the same columns of the whole integer product exactly.  bias: NULL
** or the n' biases of those columns ([n'] or [1, n']), added in the
** product's epilogue on the integer path.  cols NULL: every column (the
** whole product, bias [N] or [1, N] in the epilogue on the integer path;
** mt_add of mt_matmul otherwise). */
mt_node *mt_matmul_cols(mt_graph *g, mt_node *a, mt_node *b, bool trans_b, mt_node *cols,
                        mt_node *bias);
/* Beam 1's output layer (WNMT 2018 sec. 2.3): each row's argmax of
** mt_matmul_cols(a, b, trans_b, cols, bias) + skip as i32 [rows] (the first
** column of the largest, -1 where none is above -inf, NaN never wins: as
** mt_node_argmax of the product), from the integer GEMM's epilogue without
** writing the logits (kcpu_gemm_int_argmax).  skip: host [n'] of 0 or -inf
** (columns left out; copied into the graph only when this path is taken),
** or NULL.  NULL without an error where the product takes no fixed
** int8/int16 GEMM (float32, auto) or the device has no such epilogue: the
** caller then takes the logits and mt_node_argmax. */
mt_node *mt_matmul_cols_argmax(mt_graph *g, mt_node *a, mt_node *b, bool trans_b, mt_node *cols,
                               mt_node *bias, const float *skip);
/* A beam step's output layer: each row's k best log-softmax values of
** mt_matmul_cols(a, b, trans_b, cols, bias) and their columns, as f32
** [rows, 2k] (row r: the k values best first, then their columns as floats,
** -1 past the row's columns): mt_node_logsoftmax_topk of the product, bit
** for bit, from the integer GEMM in pieces whose logits stay in cache
** (kcpu_gemm_int_topk).  NULL without an error where the product takes
** no fixed int8/int16 GEMM or the device has no such path: the caller then
** takes the logits and mt_node_logsoftmax_topk. */
mt_node *mt_matmul_cols_topk(mt_graph *g, mt_node *a, mt_node *b, bool trans_b, mt_node *cols,
                             mt_node *bias, int32_t k);
/* Batched: a [B..., M, K], b [B..., K, N] (same leading dims), scaled. */
mt_node *mt_bmm(mt_graph *g, mt_node *a, mt_node *b, bool trans_a, bool trans_b, float alpha);
/* mt_bmm with the leading index of b picked by ids: a [N, J..., M, K], b [N0,
** J..., K, N], ids i32 [N] -> [N, J..., M, N], product i with b[ids[i]]. */
mt_node *mt_bmm_gather(mt_graph *g, mt_node *a, mt_node *b, mt_node *ids, bool trans_a,
                       bool trans_b, float alpha);
/* relu(x.W + b): on the integer path (mt_gemm_type) the relu is the
** GEMM's epilogue, no second pass over the output; otherwise mt_relu of
** mt_affine.  The same values either way. */
mt_node *mt_affine_relu(mt_graph *g, mt_node *x, mt_node *w, mt_node *b);
/* A hint before several products read x (a block's queries, keys and
** values): with gemm_type int8 or int16, x is quantized once, by a node of
** its own, for every integer product of x built next (the same values as
** each product quantizing it); otherwise nothing.  Returns x. */
mt_node *mt_gemm_share_input(mt_graph *g, mt_node *x);
/* (x.W + b) + res, res of the product's shape (a residual connection): on
** the integer path the sum is the GEMM's epilogue, no pass of its own;
** otherwise mt_add of mt_affine.  The same values either way. */
mt_node *mt_affine_add(mt_graph *g, mt_node *x, mt_node *w, mt_node *b, mt_node *res);
/* x.W + b with b broadcast over rows (Marian's affine). */
mt_node *mt_affine(mt_graph *g, mt_node *x, mt_node *w, mt_node *b);

mt_node *mt_add(mt_graph *g, mt_node *a, mt_node *b); /* broadcast */
mt_node *mt_sub(mt_graph *g, mt_node *a, mt_node *b);
mt_node *mt_mul(mt_graph *g, mt_node *a, mt_node *b);
mt_node *mt_div(mt_graph *g, mt_node *a, mt_node *b);
mt_node *mt_scale(mt_graph *g, mt_node *x, float s);      /* x * s */
mt_node *mt_add_scalar(mt_graph *g, mt_node *x, float s); /* x + s */
mt_node *mt_neg(mt_graph *g, mt_node *x);

mt_node *mt_relu(mt_graph *g, mt_node *x);
mt_node *mt_swish(mt_graph *g, mt_node *x); /* x * sigmoid(x)                */
mt_node *mt_gelu(mt_graph *g, mt_node *x);  /* Marian: x * sigmoid(1.702 x)  */
mt_node *mt_tanh(mt_graph *g, mt_node *x);
mt_node *mt_sigmoid(mt_graph *g, mt_node *x);
mt_node *mt_exp(mt_graph *g, mt_node *x);
mt_node *mt_ln(mt_graph *g, mt_node *x); /* natural log (mt_log is the logger) */
mt_node *mt_sqrt(mt_graph *g, mt_node *x);

mt_node *mt_softmax(mt_graph *g, mt_node *x);     /* over the last dim */
mt_node *mt_log_softmax(mt_graph *g, mt_node *x); /* over the last dim */
/* Per-row cross-entropy of logits [..., V] against labels (i32 node of the
** leading shape), with label smoothing ls: loss = -(1-ls) logp[y] - ls
** mean_v logp[v].  Result has the leading shape; multiply by a mask and sum
** for the batch cost. */
mt_node *mt_cross_entropy(mt_graph *g, mt_node *logits, mt_node *labels, float label_smoothing);
/* Layer norm over the last dim: gamma * (x - mean) / sqrt(var + eps) + beta,
** population variance, eps inside the sqrt (Marian).  gamma/beta [D] or
** [1, D]; either may be NULL. */
mt_node *mt_layer_norm(mt_graph *g, mt_node *x, mt_node *gamma, mt_node *beta, float eps);
/* mt_layer_norm(x + res): one node reading both (inference; where a gradient
** is wanted or the device lacks it, the two nodes).  Same shapes. */
mt_node *mt_add_layer_norm(mt_graph *g, mt_node *x, mt_node *res, mt_node *gamma, mt_node *beta,
                           float eps);
/* Inverted dropout with probability p (identity when not training or p=0). */
mt_node *mt_dropout(mt_graph *g, mt_node *x, float p);
/* y = x where mask != 0, value where mask == 0 (mask broadcast to x). */
mt_node *mt_masked_fill(mt_graph *g, mt_node *x, mt_node *mask, float value);
/* Marian's highway: sigmoid(t) * y + (1 - sigmoid(t)) * x. */
mt_node *mt_highway(mt_graph *g, mt_node *y, mt_node *x, mt_node *t);

mt_node *mt_reshape(mt_graph *g, mt_node *x, mt_shape shape); /* one dim may be -1 */
mt_node *mt_transpose(mt_graph *g, mt_node *x, int d0, int d1); /* swap two axes */
mt_node *mt_permute(mt_graph *g, mt_node *x, const int *perm);  /* perm[ndim] */
/* Concatenation and slicing: f32, f16, bfloat16, or int8 keys (bytes as they are). */
mt_node *mt_concat(mt_graph *g, mt_node *const *xs, int n, int axis);
mt_node *mt_slice(mt_graph *g, mt_node *x, int axis, int64_t start, int64_t len);
/* Embedding lookup: rows of table [V, D] at ids (i32, any shape S) -> [S..., D].
** Backward scatter-adds into the table's gradient. */
mt_node *mt_gather_rows(mt_graph *g, mt_node *table, mt_node *ids);
/* Selects entries along axis by ids (i32 1-D): beam reordering.  f32, or
** f16, bfloat16 and int8 keys (no gradient). */
mt_node *mt_index_select(mt_graph *g, mt_node *x, int axis, mt_node *ids);
/* x converted to float16 (round to nearest even, +-inf beyond the range)
** or bfloat16 (nearest even, subnormals to zero), or from either to
** float32 (exact); the same dtype: x itself.  Inference only (an input that
** wants a gradient is refused).  Storage of decoding caches
** (mt_graph_params.kv_f16, kv_bf16); no other op computes on f16 or
** bfloat16 values except mt_attn_rows_kt, which reads its keys and values
** so. */
mt_node *mt_cast(mt_graph *g, mt_node *x, mt_dtype dtype);
/* x [..., 2, L] float32 as bfloat16 pairs [..., L, 2]: y[..., i, z] =
** x[..., z, i] rounded as mt_cast does (the layout of the fused attention's
** bfloat16 keys and values, kcpu_attn_job.h).  Inference only. */
mt_node *mt_cast_pairs(mt_graph *g, mt_node *x);
/* A decoding cache extended by one position in one copy: cache [N0, A, T, B],
** ids i32 [N] (NULL: N = N0, row i is row i), 0 <= off <= T, cur [N, A, 1, B]
** -> [N, A, T - off + 1, B] = concat(slice(index_select(cache, 0, ids), 2, off,
** T - off), cur, 2): beam reordering, dropping positions that are padding
** for every row, and appending this step's keys or values at once. */
mt_node *mt_cache_append(mt_graph *g, mt_node *cache, mt_node *ids, int64_t off, mt_node *cur);
/* Rows of variable length packed from the left (decoding caches of rows at
** their own positions, top-up batching): along axis (> 0) of b [N, ...,
** Lb, ...], row r of the result [N, ..., out_len, ...] is the first len[r]
** positions of row ids[r] of a [Na, ..., La, ...] (a NULL: none, and ids
** and len are not read), then positions start[r] .. Lb - 1 of row b_ids[r]
** of b (b_ids NULL: row r, N = b's rows), then zeros.  ids, len, start,
** b_ids i32 [N] (checked at forward: len[r] <= La, start[r] <= Lb, the
** row's total <= out_len, the ids inside a and b); len NULL: every row
** takes all La positions, start NULL: 0 (with both NULL and out_len = La +
** Lb, concat(index_select(a, 0, ids), index_select(b, 0, b_ids), axis) in
** one copy).  f32 or f16 (a and b alike); inference only. */
mt_node *mt_pack_rows(mt_graph *g, mt_node *a, mt_node *ids, mt_node *len, mt_node *b,
                      mt_node *b_ids, mt_node *start, int axis, int64_t out_len);
/* mt_pack_rows(a, ids, len, keys, b_ids, start, 3, out_len) where keys is b f32
** [N, H, Lb, dk] with its last two axes swapped and converted to f16, a
** f16 [Na, H, dk, La] (a decoder's self-attention history, keys transposed
** per head): the same bytes in one op (kcpu_fold_keys).  Inference only;
** mt_pack_rows_kt_supported: the device has it vectorized (else the three
** ops are as fast). */
mt_node *mt_pack_rows_kt(mt_graph *g, mt_node *a, mt_node *ids, mt_node *len, mt_node *b,
                         mt_node *b_ids, mt_node *start, int64_t out_len);
bool mt_pack_rows_kt_supported(const mt_graph *g);
/* mt_pack_rows_kt into int8 keys (kcpu_attn_job.h: kh_q8), a int8 [Na,
** H, dk/4 + 1, La, 4] or NULL, y int8 [N, H, dk/4 + 1, out_len, 4]: the
** history's units as they are, b's keys quantized per key.  Supported where
** the device has the fold and dk is a multiple of 4 up to 256. */
mt_node *mt_pack_rows_kq(mt_graph *g, mt_node *a, mt_node *ids, mt_node *len, mt_node *b,
                         mt_node *b_ids, mt_node *start, int64_t out_len);
bool mt_pack_rows_kq_supported(const mt_graph *g, int64_t dk);
/* int8 keys x [..., dk/4 + 1, L, 4] -> f32 [..., dk, L]: each key's
** elements times its scale (what the fused attention's scores use), for
** the composed ops.  Inference only. */
mt_node *mt_keys_q8_f32(mt_graph *g, mt_node *x);
/* Reductions over one axis (negative counts from the end), keeping it as 1. */
mt_node *mt_sum(mt_graph *g, mt_node *x, int axis);
mt_node *mt_mean(mt_graph *g, mt_node *x, int axis);
mt_node *mt_max(mt_graph *g, mt_node *x, int axis);
mt_node *mt_sum_all(mt_graph *g, mt_node *x); /* scalar [1] */

/* Fused multi-head attention convenience builder (no projections):
** q [B, Tq, D], k and v [B, Tk, D], optional additive mask broadcastable to
** [B, heads, Tq, Tk] (0 keep, -99999999 drop, Marian's transposedLogMask).
** Heads are contiguous blocks of D/heads.  Returns [B, Tq, D]; when
** weights_out is not NULL it receives the softmax weights [B, H, Tq, Tk]. */
mt_node *mt_attention(mt_graph *g, mt_node *q, mt_node *k, mt_node *v, mt_node *mask, int heads,
                      mt_node **weights_out);
/* Fused attention of one query position per row (decoding steps; inference
** only, no backward): q [N, 1, D] or [N, D] (heads merged, D = H dk); keys
** and values kh, vh [N0, H, Th, dk] (or [N0, Th, D]: heads not split, read
** in place), row ids[i] for query row i (ids i32 [N], NULL: row i, N0 = N),
** followed by the row's own kr, vr [N, H, Tr, dk] (both NULL: none);
** additive mask [N0, 1, 1, Th + Tr] going with the rows of kh (NULL:
** none).  Returns softmax(alpha q K^T + mask) V per head, the
** shape of q.  The same values as mt_bmm_gather / mt_bmm, mt_add, mt_softmax
** and the weighted sums, to rounding, without their intermediate tensors.
** Fails with MT_ERR_UNSUPPORTED where the device has no such kernel:
** mt_attn_rows_supported says so beforehand. */
mt_node *mt_attn_rows(mt_graph *g, mt_node *q, mt_node *kh, mt_node *vh, mt_node *ids, mt_node *kr,
                      mt_node *vr, mt_node *mask, int heads, float alpha);
/* The same fused attention for rows of a packed batch (sentences' real
** positions one after another, no padding): q [T, D] (heads merged), row i
** over rows start[i] .. start[i] + len[i] - 1 of k, v [T0, D] (its
** sentence); start, len i32 [T], 1 <= len[i] <= max_len.  No mask. */
mt_node *mt_attn_spans(mt_graph *g, mt_node *q, mt_node *k, mt_node *v, mt_node *start,
                       mt_node *len, int64_t max_len, int heads, float alpha);
/* mt_attn_rows with the keys transposed per head, kt [N0, H, dk, Th] (a
** context or history kept so: the kernel scores 16 positions per vector,
** and a run of rows with one id together), values [N0, H, Th, dk] or [N0,
** Th, D]; the recent kr, vr and the mask as in mt_attn_rows.  kt and vh may
** both be f16 (mt_cast; widened as they are read), or kt int8 keys [N0, H,
** dk/4 + 1, Th, 4] (mt_pack_rows_kq; dk a multiple of 4 up to 256) with
** vh f16. */
mt_node *mt_attn_rows_kt(mt_graph *g, mt_node *q, mt_node *kt, mt_node *vh, mt_node *ids,
                         mt_node *kr, mt_node *vr, mt_node *mask, int heads, float alpha);
/* mt_attn_rows_kt for rows at their own positions (top-up batching), no
** mask: spans i32 [2, N]; row i reads the first spans[0][i] <= Th positions
** of its history row, then its Tr recent ones, and of those keys only
** spans[1][i] .. spans[0][i] + Tr - 1 (the earlier ones are padding: left
** out as if masked, without their work).  Checked at forward. */
mt_node *mt_attn_rows_kt_spans(mt_graph *g, mt_node *q, mt_node *kt, mt_node *vh, mt_node *ids,
                               mt_node *kr, mt_node *vr, mt_node *spans, int heads, float alpha);
bool mt_attn_rows_supported(const mt_graph *g);

/* ------------------------------------------------------------ optimizer */

typedef enum mt_lr_schedule_kind { MT_LR_CONSTANT = 0, MT_LR_INV_SQRT } mt_lr_schedule_kind;

typedef struct mt_adam_params {
    float lr;            /* base learning rate                               */
    float beta1, beta2;  /* Marian defaults 0.9, 0.98                        */
    float eps;           /* Marian default 1e-9                              */
    float weight_decay;  /* decoupled (AdamW), 0 = off                       */
    float clip_norm;     /* global gradient L2 norm clip, 0 = off            */
    int64_t warmup;      /* linear warm-up over this many updates, 0 = off  */
    int64_t decay_inv_sqrt; /* after this many updates lr *= sqrt(n/t), 0=off */
    float smoothing;     /* exponential smoothing factor, 0 = off (Marian's
                            --exponential-smoothing default 1e-4)           */
} mt_adam_params;
mt_adam_params mt_adam_default_params(void); /* Marian's defaults */

typedef struct mt_adam mt_adam;
mt_status mt_adam_init(mt_params *p, mt_adam_params ap, mt_adam **out);
void mt_adam_free(mt_adam *a);
/* One update from the accumulated gradients (then zeroes them).  Applies
** clipping, the LR schedule, decoupled weight decay and smoothing. */
mt_status mt_adam_step(mt_adam *a);
float mt_adam_lr(const mt_adam *a); /* learning rate of the next step */
int64_t mt_adam_steps(const mt_adam *a);
float mt_adam_last_grad_norm(const mt_adam *a);
/* Moments and smoothed weights, for checkpoints (Marian's
** model.npz.optimizer.npz holds adam_mt, adam_vt; names per parameter). */
mt_tensor *mt_adam_moment(mt_adam *a, int which /*0 m, 1 v*/, int i);
mt_tensor *mt_adam_smoothed(mt_adam *a, int i); /* NULL if smoothing off */
void mt_adam_set_steps(mt_adam *a, int64_t t);
/* Swaps live and smoothed weights (for validation/saving with the average). */
void mt_adam_swap_smoothed(mt_adam *a);

/* ------------------------------------------------------- model files */

/* A loaded model file: named tensors (in file order) and the YAML config
** text from "special:model.yml" (NULL if absent).  Tensors are host memory. */
/* Marian element type codes (src/common/types.h): class bits + byte size.
** They appear in .bin headers and in mt_model_item.marian_type. */
enum {
    MT_MARIAN_INT8 = 0x101,
    MT_MARIAN_INT16 = 0x102,
    MT_MARIAN_INT32 = 0x104,
    MT_MARIAN_INT64 = 0x108,
    MT_MARIAN_UINT8 = 0x201,
    MT_MARIAN_UINT16 = 0x202,
    MT_MARIAN_UINT32 = 0x204,
    MT_MARIAN_UINT64 = 0x208,
    MT_MARIAN_FLOAT16 = 0x402,
    MT_MARIAN_FLOAT32 = 0x404,
    MT_MARIAN_FLOAT64 = 0x408,
    MT_MARIAN_PACKED16 = 0x802,
    MT_MARIAN_PACKED8AVX2 = 0x1801,
    MT_MARIAN_PACKED8AVX512 = 0x2801,
    MT_MARIAN_INTGEMM8 = 0x10001,
    MT_MARIAN_INTGEMM16 = 0x10002,
    MT_MARIAN_INTGEMM8SSSE3 = 0x18001,
    MT_MARIAN_INTGEMM8AVX2 = 0x11001,
    MT_MARIAN_INTGEMM8AVX512 = 0x12001,
    MT_MARIAN_INTGEMM8AVX512VNNI = 0x13001,
    MT_MARIAN_INTGEMM16SSE2 = 0x14002,
    MT_MARIAN_INTGEMM16AVX2 = 0x11002,
    MT_MARIAN_INTGEMM16AVX512 = 0x12002,
    MT_MARIAN_BERGAMOT_INTGEMM8 = 0x4101, /* Bergamot/Firefox fork's enum */
    MT_MARIAN_BERGAMOT_INTGEMM16 = 0x4102,
};

/* Per-item details of a model file, parallel to names/tensors.
**   marian_type  the Marian type code the item has in the file (for typed
**                items it follows tensors[i].dtype: 0x404 for MT_F32, ...).
**   raw          false: tensors[i] is an ordinary tensor of dtype F32, F16,
**                I8, I16 or I32.  true: tensors[i].data holds raw_bytes
**                opaque bytes of marian_type (intgemm8/16 and their ISA
**                variants incl. the 4-byte quantization multiplier, packed
**                FBGEMM types, Bergamot 0x4101/0x4102, and float64, int64,
**                uint8..uint64 which have no mt_dtype); tensors[i].shape is
**                the item's logical shape and tensors[i].dtype only a storage
**                hint (MT_I8 or MT_I16): never compute with it.
**   raw_bytes    raw items: bytes of meaningful data (intgemm: numel*width+4).
**   bin_bytes    the .bin dataLength the item was read with (Marian rounds
**                blobs up to 256 bytes); the data buffer holds all of them so
**                that a .bin round-trips bit-exactly.  0 when the item did not
**                come from a .bin: the .bin writer then pads to 256 bytes. */
typedef struct mt_model_item {
    uint32_t marian_type;
    bool raw;
    size_t raw_bytes;
    size_t bin_bytes;
} mt_model_item;

typedef struct mt_model_file {
    int n;
    char **names;
    mt_tensor *tensors;
    char *config_yaml;
    /* Appended by the model-file module (engine/model_file.c): */
    mt_model_item *items; /* n entries, see mt_model_item              */
    int cap;              /* allocated entries of names/tensors/items   */
} mt_model_file;

/* Reads .npz (stored or deflated members, zip64) or .bin (by file suffix,
** or by magic when the suffix is neither).  Validates every size and offset. */
mt_status mt_model_file_read(const char *path, mt_model_file **out);
/* Writes by suffix.  Atomic: writes path + ".tmp", fsyncs, renames. */
mt_status mt_model_file_write(const char *path, const mt_model_file *m);
void mt_model_file_free(mt_model_file *m);
mt_status mt_model_file_add(mt_model_file *m, const char *name, const mt_tensor *t); /* copies */
mt_model_file *mt_model_file_new(void);
mt_status mt_model_file_set_config(mt_model_file *m, const char *yaml);
const mt_tensor *mt_model_file_find(const mt_model_file *m, const char *name);

/* Minimal YAML document access (libyaml underneath) for model configs. */
typedef struct mt_yaml mt_yaml;
mt_status mt_yaml_parse(const char *text, mt_yaml **out);
void mt_yaml_free(mt_yaml *y);
/* Top-level mapping keys in document order. */
int mt_yaml_count(const mt_yaml *y);
const char *mt_yaml_key(const mt_yaml *y, int i);
/* Scalar value of a top-level key (NULL if absent or not a scalar). */
const char *mt_yaml_get(const mt_yaml *y, const char *key);
/* Sequence values: count and items (for keys like dim-vocabs). */
int mt_yaml_seq_len(const mt_yaml *y, const char *key);
const char *mt_yaml_seq_item(const mt_yaml *y, const char *key, int i);

/* ---------------------------------------------- model files (continued)
** Model file tensors are host memory: dev is NULL, owns is true, data comes
** from mt_try_aligned_alloc (so mt_params_adopt may take it).  Free them
** only through mt_model_file_free.
**
** .npz dtypes: <f4 <f2 <i1 <i2 <i4 (and |i1, =f4 ...) become F32, F16, I8,
** I16, I32 tensors; <f8 <i8 <u1 <u2 <u4 <u8 are kept as raw items with
** their Marian type (written back with the same descr); anything else
** (bool, complex, strings, structured, big-endian) is refused with
** MT_ERR_UNSUPPORTED naming the member and the dtype.  Writing .npz refuses
** raw items that have no NumPy dtype (intgemm, packed) with
** MT_ERR_UNSUPPORTED naming the item. */

/* Adds a raw item (copied): bytes of data of Marian type marian_type with
** logical shape shape.  Typed Marian types (float32, ...) are refused with
** MT_ERR_INVALID: use mt_model_file_add.  Unknown codes: MT_ERR_UNSUPPORTED. */
mt_status mt_model_file_add_raw(mt_model_file *m, const char *name, uint32_t marian_type,
                                mt_shape shape, const void *data, size_t bytes);
/* Appends an item, moving t's data into m (t->owns becomes false) on
** success; on failure t is untouched.  t->data must come from
** mt_try_aligned_alloc and hold at least max(tensor bytes or
** info->raw_bytes, info->bin_bytes) bytes.  info NULL: a typed item
** described by t->dtype.  Names must be unique (MT_ERR_INVALID otherwise). */
mt_status mt_model_file_adopt(mt_model_file *m, const char *name, mt_tensor *t,
                              const mt_model_item *info);
/* Index of the item called name, -1 if absent. */
int mt_model_file_index(const mt_model_file *m, const char *name);
/* Marian's name of a type code ("float32", "intgemm8avx2", ...; NULL if
** unknown) and its element width in bytes (0 for unknown). */
const char *mt_marian_type_name(uint32_t type);
size_t mt_marian_type_width(uint32_t type);
/* Bytes of an item of numel elements (Marian's requiredBytes): numel *
** width, plus 4 for intgemm types (the float quantization multiplier stored
** after the integers).  0 for packed FBGEMM types (their size is opaque) and
** unknown codes; SIZE_MAX on overflow. */
size_t mt_marian_required_bytes(uint32_t type, int64_t numel);
/* Marian type code of an mt_dtype (MT_F32 -> 0x404, ...). */
uint32_t mt_marian_type_of(mt_dtype t);

/* Makes item i's tensor t (and its details item, NULL for a typed tensor)
** a parameter of p.  Typed items: mt_params_adopt (t's data moves).
** Marian's generic intgemm8 / intgemm16 items (the values of W [K, N]
** transposed, [N, K] row-major, then a float32 multiplier qB): the values
** are copied into a new int8 / int16 parameter of shape [K, N] (row-major)
** with multiplier qB, which products take through the integer path (see
** mt_gemm_type); t stays with its owner.  Other raw items (CPU-specific
** intgemm layouts, FBGEMM packed, Bergamot codes, float64 ...):
** MT_ERR_UNSUPPORTED naming the item and its type.  MT_ERR_FORMAT for an
** intgemm item whose size, shape or multiplier is inconsistent. */
mt_status mt_params_adopt_item(mt_params *p, const char *name, mt_tensor *t,
                               const mt_model_item *item);
/* Quantization multiplier of parameter i (0: not a pre-quantized weight). */
float mt_params_qmult_at(const mt_params *p, int i);
/* Bytes (and count, n_packs may be NULL) of the packed weights held for the
** integer GEMM: one per weight matrix and form, shared by all graphs and
** threads that use these parameters. */
size_t mt_params_packed_bytes(mt_params *p, int *n_packs);

/* `mtpe convert --gemm-type` (engine/quantize.c), as marian-conv -g:
**   INT8 / INT16  every float32 item that is a 2-D weight by Marian's name
**                 rule (the name ends in "_W", or its first "_W" starts 3
**                 characters from the end: _Wq _Wo _W1 _Wt ...; never Wemb,
**                 biases or layer norms) becomes a generic intgemm8 /
**                 intgemm16 item: Marian's bytes (quantized W^T + qB), with
**                 qB = 127 / max|W| or 2^10 and kcpu's rounding; generic
**                 items of the other width are dequantized and requantized.
**   FLOAT32       generic intgemm items become float32 (value / qB).
** Other items are untouched (same bytes, same order).  *n_changed (may be
** NULL) receives the number of items converted.  MT_ERR_UNSUPPORTED for
** AUTO and for CPU-specific intgemm items when converting them; on failure
** m may be partly converted (callers discard it). */
mt_status mt_model_file_quantize(mt_model_file *m, mt_gemm_type type, int *n_changed);
/* True when name is a weight matrix by Marian's rule above. */
bool mt_marian_is_gemm_weight(const char *name);

/* Reads a model from memory, format by magic ("PK" = npz, else .bin); name
** is used in error messages.  The buffer is not kept. */
mt_status mt_model_file_read_mem(const void *data, size_t size, const char *name,
                                 mt_model_file **out);
/* Format-specific readers and writers (engine/npz.c, engine/bin.c).  The
** writers stream the file through fn, which returns MT_OK or an error that
** is passed back unchanged; name is used in messages. */
typedef mt_status (*mt_write_fn)(void *user, const void *data, size_t n);
mt_status mt_npz_read_mem(const void *data, size_t size, const char *name, mt_model_file **out);
mt_status mt_bin_read_mem(const void *data, size_t size, const char *name, mt_model_file **out);
mt_status mt_npz_write_to(const mt_model_file *m, const char *name, mt_write_fn fn, void *user);
mt_status mt_bin_write_to(const mt_model_file *m, const char *name, mt_write_fn fn, void *user);

/* mt_yaml details: parse errors are MT_ERR_FORMAT "YAML parse error at line
** L, column C: ..."; a document that is empty is an empty mapping; one whose
** top level is not a mapping is MT_ERR_FORMAT.  Values that are neither
** scalars nor sequences of scalars (nested mappings, aliases) are kept as
** keys with no value.  A repeated key replaces the earlier value.
** mt_yaml_seq_len returns -1 when key is absent or not a sequence of
** scalars; mt_yaml_seq_item returns NULL out of range. */

/* ----------------------------------------------------------- beam search
** Batched beam search over abstract scorers (engine/beam.c), with the
** semantics of Marian's BeamSearch (src/translator/beam_search.cpp,
** history.h; shared/reference/marian-compat.md section 5):
**
**  - Path score of a hypothesis: the running float sum, token by token, of
**    sum_i w_i * logp_i(token) over the scorers (ensemble members; weights
**    mt_beam_params.weights, default 1, not normalised), added to the path
**    model by model in scorer order, as Marian does.
**  - Step 0 expands the single start hypothesis of each sentence.  At each
**    step a sentence keeps the top N of its (live hypotheses x vocabulary)
**    candidates, N = its current beam: beam_size at step 0, then the number
**    of its hypotheses that did not finish (the beam shrinks by one per
**    finished hypothesis).  Suppressed tokens (UNK unless allow_unk, the
**    suppress list) score -inf and are never selected.
**  - A candidate whose token is EOS is finished, with normalised score
**    (path - word_penalty * L) / L^normalize, L = tokens including the EOS.
**    Length limit: at the step where L >= max_length_factor * W (W = the
**    longest source of the search in tokens including its EOS, compared in
**    float, as Marian's batch width; with length_per_sentence W is the
**    sentence's own source length) or L >= max_length (when > 0), every
**    candidate selected at that step is finished as it is, without EOS.
**    A sentence is done when it has no live hypothesis.  At most beam_size
**    hypotheses finish per sentence, all distinct; the best translation is
**    the one with the highest normalised score.
**  - Ties: among candidates with equal expanded scores the lower (row, token)
**    wins (rows in rank order of the previous step); among finished
**    hypotheses with equal normalised scores the earlier finished comes
**    first.  Results do not depend on the other sentences of the batch
**    except through W (the length limit), nor on max_active.
**  - Empty source (src_len 1: only EOS): the result is the empty
**    translation (EOS at step 0, path 0, normalised score -word_penalty)
**    without asking the scorers; its alignment is 1.0 on the source EOS.
**    Such a sentence is never passed to start/add and its prefix is ignored.
**  - Forced prefix (prefix-constrained decoding, the editor's completion):
**    while t < prefix_len[s] the sentence has one hypothesis, extended by
**    prefix[s][t]; the path and the per-model scores accumulate the
**    scorers' log-probs of the forced tokens (suppression does not apply to
**    them).  From then on normal beam search with the full beam, so the
**    n-best list holds up to beam_size completions, each starting with the
**    prefix (mt_beam_hyp.prefix_len tells where the completion starts).
**    Prefix tokens must not be EOS and must be in the shortlist if any.
**  - Beam 1 with one scorer and nothing asking for scores (greedy_scores,
**    n_best, word_scores, early_stop all false): the scorer is told that
**    only the argmax of each row counts (mt_scorer_step.argmax_only) and
**    may return raw logits (Marian skips the softmax, WNMT 2018 sec. 2.3);
**    the reported scores are then NAN.
**  - Early stop (off by default; not in Marian, Devlin et al. 2017 sec. 3):
**    a sentence stops when its best live path score is below the best path
**    score among its finished hypotheses minus early_stop_margin.  With
**    normalize = 0, word_penalty = 0 and margin >= 0 the best translation
**    is unchanged (log-probs are <= 0); the n-best list may be shorter.
**  - Top-up batching (max_active > 0; reference/papers/fused-softmax-topup-
**    batching.txt sec. 3.2): at most max_active sentences decode at a time;
**    when at least half of that window is free it is refilled from the
**    queue of sentences in input order.  Needs `add` in every scorer;
**    without it the sentences run in consecutive sub-batches of max_active
**    (start ... finish, start ... finish).  Results are the same either way.
**
** Memory: every buffer lives in the mt_beam object, sized when a search
** starts and kept for the next; nothing is allocated per step.  An mt_beam
** is used by one thread at a time.
*/

/* One call of a scorer's step.  The rows are the live hypotheses, grouped
** by sentence in increasing order (hyp_sentence nondecreasing), at most
** beam_size rows per sentence.  Row i extends row reorder[i] of the
** previous call (several rows may share a parent, rows not named are
** dropped: the model reorders its decoder state with it), or is the start
** row of sentence hyp_sentence[i] when reorder[i] is -1 (prev_tokens[i] is
** then -1 and hyp_pos[i] 0).  A sentence that has no row in a call is
** finished and never comes back: its state may be released.  Rows of one
** call are all at the same position (hyp_pos) unless the scorer has `add`
** (top-up batching), so a model whose decoder state has one position and a
** fixed number of rows per sentence can pad each sentence to beam_size rows
** (repeating any of its rows) and map the rows back. */
typedef struct mt_scorer_step {
    int32_t n_hyps;              /* rows                                          */
    const int32_t *prev_tokens;  /* [n_hyps] last token of each row, -1 at start  */
    const int32_t *hyp_sentence; /* [n_hyps] sentence (index in the batch)        */
    const int32_t *reorder;      /* [n_hyps] parent row in the previous call, -1  */
    const int32_t *hyp_pos;      /* [n_hyps] target tokens before the next one    */
    int32_t n_prev;              /* rows of the previous call (0 after start)     */
    const int32_t *shortlist;    /* NULL, or n_shortlist increasing target ids:
                                    score rows then have n_shortlist entries,
                                    entry c for token shortlist[c]                */
    int32_t n_shortlist;
    bool argmax_only;            /* only each row's argmax is used: raw logits ok */
    int32_t align_stride;        /* row stride of align: the longest source       */
    int32_t beam_size;           /* bound on the rows of one sentence             */
} mt_scorer_step;

/* A scorer is one model (ensemble member) decoding the batch of source
** sentences it was made for (e.g. by a model-provided function that encodes
** them); sentences are named by their index in that batch.  Operations:
**   vocab_size  V, the size of a full score row (the target vocabulary).
**   start       begins a search over sentences[0..n) (increasing); *state
**               is handed to the other operations.  The first step has one
**               start row per sentence.
**   add         optional (NULL: no top-up): adds sentences[0..n) (higher
**               indices than any before) to a running search; their start
**               rows come in the next step after the existing rows.
**   step        writes logprobs [n_hyps, V or n_shortlist]: the natural-log
**               softmax of the next token given each row (any values with
**               the same per-row argmax when argmax_only); and, when align
**               is not NULL (alignments requested; scorer 0 only), for each
**               row the attention weights of its alignment head over the
**               source positions of its sentence, src_len values including
**               the source EOS, at align + row * align_stride.  A failure is
**               passed back by mt_beam_search.
**   finish      ends the search (also after an error or cancellation);
**               releases what start allocated.  Called once per start. */
typedef struct mt_scorer_ops {
    int32_t (*vocab_size)(void *user);
    mt_status (*start)(void *user, const int32_t *sentences, int32_t n, void **state);
    mt_status (*add)(void *user, void *state, const int32_t *sentences, int32_t n);
    mt_status (*step)(void *user, void *state, const mt_scorer_step *in, float *logprobs,
                      float *align);
    void (*finish)(void *user, void *state);
    /* Appended, optional (NULL: whole rows only).  step_topk is step giving
    ** only each row's k best columns (ties: lower column first; past the
    ** row's width -1 and -inf), best first, with their log-probabilities:
    ** cols, logprobs [n_hyps * k] (the fused softmax + top-k).  The search
    ** uses it with one scorer, beam > 1 or scores asked for, and no forced
    ** prefix token in the step; k covers the suppressed columns too. */
    mt_status (*step_topk)(void *user, void *state, const mt_scorer_step *in, int32_t k,
                           int32_t *cols, float *logprobs, float *align);
    /* Appended, optional (NULL: step).  step_argmax is step when
    ** argmax_only giving only each row's argmax: cols [n_hyps] the first
    ** column of the largest score + skip[c] (skip [V or n_shortlist]: 0, or
    ** -INFINITY for a suppressed column), -1 when none exceeds -inf.  The
    ** search uses it when no prefix token is forced in the step. */
    mt_status (*step_argmax)(void *user, void *state, const mt_scorer_step *in, const float *skip,
                             int32_t *cols, float *align);
} mt_scorer_ops;

typedef struct mt_scorer {
    const mt_scorer_ops *ops;
    void *user;
} mt_scorer;

typedef struct mt_beam_params {
    int32_t beam_size;       /* -b, Marian's decoder default 12                 */
    float normalize;         /* -n alpha: score / L^alpha (default 0)           */
    float word_penalty;      /* --word-penalty: score - wp * L (default 0)      */
    float max_length_factor; /* --max-length-factor (default 3; <= 0: none)     */
    int32_t max_length;      /* output cap in tokens incl. EOS, 0 = none (mtpe;
                                Marian's --max-length limits inputs instead)   */
    bool length_per_sentence; /* factor times the sentence's own source length
                                 instead of the longest of the search (mtpe)  */
    bool allow_unk;           /* --allow-unk (default false: UNK suppressed)   */
    int32_t eos_id, unk_id;   /* default 0 and 1 (Marian vocabularies); unk -1:
                                 none                                          */
    const int32_t *suppress;  /* more ids never produced (e.g. the output of
                                 mt_vocab_suppressed_ids), n_suppress of them */
    int32_t n_suppress;
    bool n_best;             /* return all finished hypotheses (else the best)  */
    bool word_scores;        /* per-token score differences incl. EOS           */
    bool alignment;          /* attention rows of scorer 0 per target token     */
    bool greedy_scores;      /* beam 1: still ask for log-probs (scores valid)  */
    bool early_stop;         /* Devlin's early stop (default off) ...           */
    float early_stop_margin; /* ... with this margin (default 3.0)             */
    const float *weights;    /* [n_scorers] --weights, NULL = all 1             */
    int32_t max_active;      /* top-up window in sentences, 0 = all at once     */
    bool (*should_abort)(void *user); /* polled before every step; may be NULL */
    void *abort_user;
} mt_beam_params;
mt_beam_params mt_beam_default_params(void);

/* What to translate: n_sentences sentences of the scorers' batch. */
typedef struct mt_beam_input {
    int32_t n_sentences;
    const int32_t *src_len;       /* [n] source lengths incl. EOS (>= 1)          */
    const int32_t *const *prefix; /* NULL, or [n] forced target prefixes (entries
                                     may be NULL), without EOS                   */
    const int32_t *prefix_len;    /* [n] (NULL: no prefixes)                      */
    const int32_t *shortlist;     /* NULL, or n_shortlist increasing target ids:
                                     only these are scored (keep EOS in it)    */
    int32_t n_shortlist;
} mt_beam_input;

/* One finished hypothesis.  Arrays belong to the mt_beam. */
typedef struct mt_beam_hyp {
    const int32_t *tokens;      /* n_tokens ids, without the final EOS           */
    int32_t n_tokens;
    int32_t length;             /* L: n_tokens + 1 when eos, else n_tokens       */
    bool eos;                   /* false: stopped by the length limit            */
    int32_t prefix_len;         /* tokens[0..prefix_len) are the forced prefix   */
    float path_score;           /* weighted sum of the log-probs (NAN: argmax)   */
    float norm_score;           /* (path - wp * L) / L^alpha                     */
    const float *model_scores;  /* [n_scorers] unweighted sums of each scorer's
                                   log-probs, Marian's F0= F1= ...             */
    const float *word_scores;   /* [length] path score increments (NULL unless
                                   word_scores)                                */
    const float *align;         /* [length, src_len] attention rows (NULL unless
                                   alignment)                                  */
    int32_t src_len;
} mt_beam_hyp;

typedef struct mt_beam_result {
    int32_t n_hyps;          /* best first; 1 unless n_best (0 only when no token
                                could ever be selected)                       */
    const mt_beam_hyp *hyps;
} mt_beam_result;

typedef struct mt_beam_stats {
    int64_t steps; /* step calls (per scorer)            */
    int64_t rows;  /* rows scored in them (per scorer)   */
} mt_beam_stats;

typedef struct mt_beam mt_beam;
mt_status mt_beam_init(mt_beam **out);
void mt_beam_free(mt_beam *b); /* NULL is a no-op */
/* Decodes the sentences of in with the scorers; *out receives
** in->n_sentences results (in input order), owned by b and valid until the
** next search or mt_beam_free.  MT_ABORTED when should_abort returned true
** (no results), MT_ERR_INVALID for bad arguments (a scorer without a
** required operation, vocabulary sizes that differ, ids out of range, a
** prefix containing EOS, no length limit), MT_ERR_NOMEM, or a scorer's
** error.  Scorers are always finished before it returns. */
mt_status mt_beam_search(mt_beam *b, const mt_beam_params *p, const mt_scorer *scorers,
                         int n_scorers, const mt_beam_input *in, const mt_beam_result **out);
/* Counters of the last search. */
mt_beam_stats mt_beam_get_stats(const mt_beam *b);

#ifdef __cplusplus
}
#endif
#endif /* MT_H */
