/*
** transformer.c: Marian's transformer (src/models/transformer.h of Marian
** 1.12), encoder and decoder, written against engine/mt.h
** (reference/marian-compat.md §2.2 and §3).
**
** Layout: batch-major, x [N, T, D] with N = B (encoder, teacher forcing) or
** B * K (decoding, row b * K + k).  Marian computes the same thing in
** [beam, batch, time, dim] layout.
**
** Per block, as Marian's LayerAttention / LayerFFN / LayerAAN:
**   y = preprocess(x)            ops of transformer-preprocess: d n
**   y = block(y)                 attention, FFN or average attention
**   x = postprocess(y, x)        ops of transformer-postprocess: d a n h
** Embeddings: E[id] * sqrt(D) + sinusoid(position), then the ops of
** transformer-postprocess-emb applied as a preprocess ("decoder_emb" ln
** names get "_pre"); after the stack the ops of transformer-postprocess-top
** with the (scaled, positioned) embeddings as residual.  Layer norm eps
** 1e-6.  Attention: q = x Wq + bq, k, v likewise from the keys/values input,
** softmax(q k^T / sqrt(D / H) + mask) v per head, heads re-joined, then
** Wo, bo (absent with transformer-no-projection).  Masks add -99999999 at
** padding (and, in decoder self-attention during teacher forcing, above the
** diagonal).  Marian 1.12 normalises keys and values with the query when
** they are the query's own node: always in training and scoring, but in its
** incremental decoding the self-attention keys/values from position 1 on
** are the cached un-normalised layer inputs, which matters only for
** pre-norm models: such a decoder is decoded with keys and values it was
** never trained on.  mtpe decodes them from the normalised inputs, as
** trained (the step's scores equal the teacher-forced ones), unless
** mt_model_config.marian_prenorm_cache asks for Marian's numbers (`mtpe
** translate --marian-prenorm-cache`).  On the default model (pre-norm)
** Marian's way costs 4.7 test BLEU (21.63 -> 16.91).  Average attention: the running
** mean of the layer inputs ((prev * t + x) / (t + 1) when decoding, a
** row-normalised lower-triangular matrix times x when teacher forcing).
** The decoder input at position 0 is the zero vector (shifted target).
** Output: logits = h Wemb^T + b (tied) or h Wt^T + b, log-softmax.
**
** Parameters come from par(): get-or-create through mt_param, or, in check
** mode (model loading), they must already exist with the right shape.  The
** model is built once on a one-token batch at creation and at load, so the
** builder code below is the only list of parameter names (see
** mt_transformer_touch_params).
*/
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define LN_EPS 1e-6f
#define MASK_NEG -99999999.0f

typedef struct tf {
    const mt_model_config *c;
    mt_params *p;
    mt_graph *g;
    bool train;   /* dropout active                                   */
    bool check;   /* parameters must exist (loading)                  */
    int64_t d;    /* dim-emb                                          */
    mt_status rc; /* first failure outside the graph (memory, params) */
    char err[400];
    /* A block's residual for its last product to add in its epilogue
    ** (block_begin; dense_out takes it and sets res_added, block_end). */
    mt_node *res;
    bool res_added;
} tf;

static void tf_init(tf *t, const mt_model_config *c, mt_params *p, mt_graph *g) {
    memset(t, 0, sizeof *t);
    t->c = c;
    t->p = p;
    t->g = g;
    t->train = mt_graph_training(g);
    t->d = c->dim_emb;
}

static void fail(tf *t, mt_status rc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void fail(tf *t, mt_status rc, const char *fmt, ...) {
    if (t->rc != MT_OK) return;
    t->rc = rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->err, sizeof t->err, fmt, ap);
    va_end(ap);
}

static mt_status tf_finish(tf *t) {
    if (t->rc != MT_OK) return mt_seterr(t->rc, "%s", t->err);
    return mt_graph_status(t->g);
}

static void *tmp_alloc(tf *t, size_t n) {
    void *q = mt_try_malloc(n ? n : 1);
    if (q == NULL) fail(t, MT_ERR_NOMEM, "transformer: out of memory (%zu bytes)", n);
    return q;
}

/* --------------------------------------------------------- parameters */

static mt_node *par(tf *t, mt_shape shape, mt_init init, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* vsnprintf for the names of parameters, which use only %s and %d (a
** decoding step names about a hundred of them: the library's formatter was
** about 1% of a beam-1 search); anything else goes to vsnprintf. */
static void name_fmt(char *out, size_t cap, const char *fmt, va_list ap) {
    size_t n = 0;
    va_list ap2;
    va_copy(ap2, ap);
    for (const char *f = fmt; *f && n + 1 < cap; f++) {
        if (*f != '%') {
            out[n++] = *f;
            continue;
        }
        char num[24];
        const char *src;
        if (f[1] == 's') {
            src = va_arg(ap2, const char *);
        } else if (f[1] == 'd') {
            snprintf(num, sizeof num, "%d", va_arg(ap2, int));
            src = num;
        } else {
            va_end(ap2);
            vsnprintf(out, cap, fmt, ap);
            return;
        }
        f++;
        while (*src && n + 1 < cap)
            out[n++] = *src++;
    }
    out[n] = '\0';
    va_end(ap2);
}

static mt_node *par(tf *t, mt_shape shape, mt_init init, const char *fmt, ...) {
    char name[192];
    va_list ap;
    va_start(ap, fmt);
    name_fmt(name, sizeof name, fmt, ap);
    va_end(ap);
    if (t->check) {
        char s1[64], s2[64];
        mt_tensor *v = mt_params_find(t->p, name);
        if (v == NULL) {
            fail(t, MT_ERR_NOTFOUND, "parameter '%s' %s is missing", name,
                 mt_shape_str(&shape, s1, sizeof s1));
            return NULL;
        }
        if (!mt_shape_eq(&v->shape, &shape)) {
            /* 1-D vectors where Marian has [1, d] (files written by other tools) */
            if (v->shape.ndim == 1 && shape.ndim == 2 && shape.dim[0] == 1 &&
                v->shape.dim[0] == shape.dim[1]) {
                v->shape = shape;
            } else {
                fail(t, MT_ERR_FORMAT, "parameter '%s' has shape %s, the model needs %s", name,
                     mt_shape_str(&v->shape, s1, sizeof s1), mt_shape_str(&shape, s2, sizeof s2));
                return NULL;
            }
        }
        bool quantized = v->dtype == MT_I8 || v->dtype == MT_I16; /* intgemm weights */
        if (v->dtype != MT_F32 && !quantized) {
            fail(t, MT_ERR_UNSUPPORTED, "parameter '%s' is %s, not float32", name,
                 mt_dtype_name(v->dtype));
            return NULL;
        }
        mt_params_set_trainable(t->p, name, true);
    }
    return mt_param(t->g, t->p, name, shape, init);
}

/* Marian's glorotUniform(fanIn, fanOut) for a [rows, cols] matrix. */
static mt_init glorot_fan(int64_t rows, int64_t cols, bool fan_in, bool fan_out) {
    if (fan_in && !fan_out) {
        float a = sqrtf(3.0f / (float)rows);
        return mt_init_uniform(-a, a);
    }
    if (!fan_in && fan_out) {
        float a = sqrtf(3.0f / (float)cols);
        return mt_init_uniform(-a, a);
    }
    return mt_init_glorot_uniform();
}

static int64_t dim_of(const mt_node *x, int axis) {
    if (x == NULL) return 1;
    mt_shape s = mt_node_shape(x);
    return s.dim[axis < 0 ? s.ndim + axis : axis];
}

/* ------------------------------------------------------------- pieces */

static mt_node *drop(tf *t, mt_node *x, float p) {
    return t->train && p > 0.0f ? mt_dropout(t->g, x, p) : x;
}

static mt_node *activate(tf *t, const char *name, mt_node *x) {
    if (!strcmp(name, "relu")) return mt_relu(t->g, x);
    if (!strcmp(name, "swish")) return mt_swish(t->g, x);
    if (!strcmp(name, "gelu")) return mt_gelu(t->g, x);
    if (!strcmp(name, "sigmoid")) return mt_sigmoid(t->g, x);
    fail(t, MT_ERR_UNSUPPORTED, "transformer: unknown activation '%s'", name);
    return NULL;
}

/* Marian's layerNorm(x, prefix, suffix): prefix_ln_scale<suffix>,
** prefix_ln_bias<suffix>; of x + res as one node where res is given
** (mt_add_layer_norm: post-processing "an"). */
static mt_node *norm(tf *t, mt_node *x, mt_node *res, const char *prefix, const char *suffix) {
    mt_node *s = par(t, mt_shape2(1, t->d), mt_init_ones(), "%s_ln_scale%s", prefix, suffix);
    mt_node *b = par(t, mt_shape2(1, t->d), mt_init_zeros(), "%s_ln_bias%s", prefix, suffix);
    return res ? mt_add_layer_norm(t->g, x, res, s, b, LN_EPS)
               : mt_layer_norm(t->g, x, s, b, LN_EPS);
}

/* Marian's denseInline: x prefix_W<suffix> + prefix_b<suffix>, without
** activation or (relu) with it, mt_affine_relu (fused on the integer path),
** or plus the residual res (mt_affine_add: in the integer GEMM's epilogue). */
static mt_node *dense_act(tf *t, mt_node *x, const char *prefix, const char *suffix, int64_t in,
                          int64_t out, bool relu, mt_node *res) {
    mt_node *w = par(t, mt_shape2(in, out), mt_init_glorot_uniform(), "%s_W%s", prefix, suffix);
    mt_node *b = par(t, mt_shape2(1, out), mt_init_zeros(), "%s_b%s", prefix, suffix);
    return relu  ? mt_affine_relu(t->g, x, w, b)
           : res ? mt_affine_add(t->g, x, w, b, res)
                 : mt_affine(t->g, x, w, b);
}

static mt_node *dense(tf *t, mt_node *x, const char *prefix, const char *suffix, int64_t in,
                      int64_t out) {
    return dense_act(t, x, prefix, suffix, in, out, false, NULL);
}

/* The last product of a block: dense() plus the residual block_begin set,
** if any (the same floats as postprocess's add). */
static mt_node *dense_out(tf *t, mt_node *x, const char *prefix, const char *suffix, int64_t in,
                          int64_t out) {
    mt_node *res = t->res;
    t->res = NULL;
    t->res_added = res != NULL;
    return dense_act(t, x, prefix, suffix, in, out, false, res);
}

static mt_node *preprocess(tf *t, const char *ops, const char *prefix, mt_node *x) {
    for (const char *op = ops; *op; op++) {
        if (*op == 'd') {
            x = drop(t, x, t->c->transformer_dropout);
        } else if (*op == 'n') {
            x = norm(t, x, NULL, prefix, "_pre");
        } else {
            fail(t, MT_ERR_UNSUPPORTED, "transformer: unknown pre-processing op '%c'", *op);
            return NULL;
        }
    }
    return x;
}

static mt_node *postprocess(tf *t, const char *ops, const char *prefix, mt_node *x, mt_node *prev);

/* The post-processing ops from the first that does something at inference
** (dropout does nothing there). */
static const char *post_ops_at_inference(const tf *t) {
    const char *ops = t->c->postprocess;
    while (*ops == 'd')
        ops++;
    return ops;
}

/* Before a block whose post-processing starts with the residual add (at
** inference): its last product (dense_out) adds prev.  block_end then
** post-processes without that add. */
static void block_begin(tf *t, mt_node *prev) {
    t->res = !t->train && *post_ops_at_inference(t) == 'a' ? prev : NULL;
    t->res_added = false;
}

static mt_node *block_end(tf *t, const char *prefix, mt_node *x, mt_node *prev) {
    bool added = t->res_added;
    t->res = NULL;
    t->res_added = false;
    const char *ops = added ? post_ops_at_inference(t) + 1 : t->c->postprocess; /* past the 'a' */
    return postprocess(t, ops, prefix, x, prev);
}

static mt_node *postprocess(tf *t, const char *ops, const char *prefix, mt_node *x, mt_node *prev) {
    for (const char *op = ops; *op; op++) {
        if (*op == 'd') {
            x = drop(t, x, t->c->transformer_dropout);
        } else if (*op == 'a' && op[1] == 'n' && !t->train) { /* one node */
            x = norm(t, x, prev, prefix, "");
            op++;
        } else if (*op == 'a') {
            x = mt_add(t->g, x, prev);
        } else if (*op == 'n') {
            x = norm(t, x, NULL, prefix, "");
        } else if (*op == 'h') {
            mt_node *gate = dense(t, prev, prefix, "h", t->d, t->d);
            x = mt_highway(t->g, x, prev, gate);
        } else {
            fail(t, MT_ERR_UNSUPPORTED, "transformer: unknown post-processing op '%c'", *op);
            return NULL;
        }
    }
    return x;
}

/* Marian's sinusoidalPositionEmbeddings of position p into dst[0..d)
** (float arithmetic as there). */
static void sinusoid(float *dst, int64_t d, int p) {
    memset(dst, 0, (size_t)d * sizeof(float));
    float nts = (float)d / 2;
    int half = (int)nts;
    float inc = logf(10000.f) / (nts - 1.f);
    for (int i = 0; (float)i < nts; i++) {
        float v = (float)p * expf((float)i * -inc);
        dst[i] = sinf(v);
        if (half + i < d) dst[half + i] = cosf(v);
    }
}

/* The sinusoids of the positions used so far (rows of d floats, up to
** SIN_CACHE_MAX positions, for up to SIN_CACHE_DIMS model widths), shared
** by the threads under a lock: a decoding step copies its row instead of
** calling sinf/cosf/expf d times.  Never freed (reachable, a few MB). */
enum { SIN_CACHE_MAX = 4096, SIN_CACHE_DIMS = 4 };
static pthread_mutex_t sin_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int64_t d;
    int n;
    float *rows;
} sin_cache[SIN_CACHE_DIMS];

static void sinusoid_row(float *dst, int64_t d, int p) {
    bool done = false;
    pthread_mutex_lock(&sin_lock);
    int e = 0;
    while (e < SIN_CACHE_DIMS && sin_cache[e].d != d && sin_cache[e].d != 0)
        e++;
    if (p >= 0 && p < SIN_CACHE_MAX && e < SIN_CACHE_DIMS) {
        sin_cache[e].d = d;
        if (p >= sin_cache[e].n) {
            int n = p + 1 < 256 ? 256 : p + 1 > SIN_CACHE_MAX / 2 ? SIN_CACHE_MAX : 2 * (p + 1);
            float *rows = mt_try_realloc(sin_cache[e].rows, sizeof(float) * (size_t)(n * d));
            if (rows != NULL) {
                for (int q = sin_cache[e].n; q < n; q++)
                    sinusoid(rows + (size_t)q * (size_t)d, d, q);
                sin_cache[e].rows = rows;
                sin_cache[e].n = n;
            }
        }
        if (p < sin_cache[e].n) {
            memcpy(dst, sin_cache[e].rows + (size_t)p * (size_t)d, sizeof(float) * (size_t)d);
            done = true;
        }
    }
    pthread_mutex_unlock(&sin_lock);
    if (!done) sinusoid(dst, d, p);
}

/* Sinusoids as [n, D]: of positions start .. start+n-1 when pos is NULL,
** else of pos[0..n) (one per decoding row, top-up batching). */
static mt_node *positions_of(tf *t, int64_t start, const int32_t *pos, int64_t n) {
    int64_t d = t->d;
    float stack[2048]; /* one decoding position: no allocation per step */
    float *buf = n * d <= 2048 ? stack : tmp_alloc(t, (size_t)(n * d) * sizeof(float));
    if (buf == NULL) return NULL;
    for (int64_t r = 0; r < n; r++)
        sinusoid_row(buf + r * d, d, pos ? pos[r] : (int)(start + r));
    mt_node *pe = mt_input(t->g, mt_shape2(n, d), buf);
    if (buf != stack) mt_free(buf);
    return pe;
}

static mt_node *positions(tf *t, int64_t start, int64_t n) {
    return positions_of(t, start, NULL, n);
}

/* Name of the embedding matrix of an encoder/decoder prefix (§2.1). */
static void emb_name(tf *t, const char *prefix, char *buf, size_t n) {
    if (t->c->tied_embeddings_src || t->c->tied_embeddings_all)
        snprintf(buf, n, "Wemb");
    else
        snprintf(buf, n, "%s_Wemb", prefix);
}

/* Marian's Embedding layer: glorotUniform(fanIn=false, fanOut=true) on
** [vocab, d], uniform(+-sqrt(3 / d)), so that each row has about unit length
** (the sqrt(d) scaling of the embeddings then makes them comparable to the
** positional signal from the first update on). */
static mt_init emb_init(tf *t, int64_t vocab) { return glorot_fan(vocab, t->d, false, true); }

static mt_node *emb_table(tf *t, const char *prefix, int64_t vocab) {
    char name[64];
    emb_name(t, prefix, name, sizeof name);
    return par(t, mt_shape2(vocab, t->d), emb_init(t, vocab), "%s", name);
}

/* Word dropout (dropout-src / dropout-trg): whole embedding rows. */
static mt_node *drop_words(tf *t, mt_node *x, float p, int64_t n, int64_t len) {
    if (!(t->train && p > 0.0f)) return x;
    mt_node *keep = mt_dropout(t->g, mt_constant(t->g, mt_shape3(n, len, 1), 1.0f), p);
    return mt_mul(t->g, x, keep);
}

/* ------------------------------------------------------------- blocks */

/* q = x Wq + bq against projected keys/values kh, vh [B, Tk, D]; x has
** N = B * K rows of tq positions: queries of the K rows of a sentence
** attend to the same keys (regrouped as [B, K * tq, D]).  *w_out, when
** asked for, gets head 0 of the attention weights as [N, tq, Tk]. */
static mt_node *attention(tf *t, mt_node *q, mt_node *k, mt_node *v, mt_node *mask, mt_node **w) {
    float pd = t->c->transformer_dropout_attention;
    if (!(t->train && pd > 0.0f)) return mt_attention(t->g, q, k, v, mask, t->c->heads, w);
    /* composed as mt_attention is, with dropout on the weights (after the
    ** softmax, as Marian) */
    if (q == NULL || k == NULL || v == NULL) return NULL;
    mt_graph *g = t->g;
    int64_t b = dim_of(q, 0), tq = dim_of(q, 1), tk = dim_of(k, 1), d = t->d;
    int64_t h = t->c->heads, dk = d / h;
    static const int perm[4] = {0, 2, 1, 3};
    mt_node *qh = mt_permute(g, mt_reshape(g, q, mt_shape4(b, tq, h, dk)), perm);
    mt_node *kh = mt_permute(g, mt_reshape(g, k, mt_shape4(b, tk, h, dk)), perm);
    mt_node *vh = mt_permute(g, mt_reshape(g, v, mt_shape4(b, tk, h, dk)), perm);
    mt_node *s = mt_bmm(g, qh, kh, false, true, 1.0f / sqrtf((float)dk));
    if (mask) s = mt_add(g, s, mask);
    mt_node *wt = mt_softmax(g, s);
    if (w) *w = wt;
    mt_node *o = mt_bmm(g, drop(t, wt, pd), vh, false, false, 1.0f);
    return mt_reshape(g, mt_permute(g, o, perm), mt_shape3(b, tq, d));
}

/* [N, T, D] -> [N, H, T, D / H], as mt_attention splits heads. */
static mt_node *split_heads(tf *t, mt_node *x) {
    mt_graph *g = t->g;
    int64_t n = dim_of(x, 0), len = dim_of(x, 1), h = t->c->heads;
    if (h == 1) return mt_reshape(g, x, mt_shape4(n, 1, len, t->d));
    static const int perm[4] = {0, 2, 1, 3};
    return mt_permute(g, mt_reshape(g, x, mt_shape4(n, len, h, t->d / h)), perm);
}

/* [N, H, T, D / H] -> [N, T, D]: split_heads undone. */
static mt_node *merge_heads(tf *t, mt_node *o, int64_t n, int64_t len) {
    mt_graph *g = t->g;
    if (t->c->heads > 1) {
        static const int perm[4] = {0, 2, 1, 3};
        o = mt_permute(g, o, perm);
    }
    return mt_reshape(g, o, mt_shape3(n, len, t->d));
}

/* mt_attention with keys and values already split into heads ([B, H, Tk,
** D/H]: the decoding caches keep them so, instead of splitting them again
** at every step); the same ops, so the same numbers.  Inference only. */
static mt_node *attention_split(tf *t, mt_node *q, mt_node *kh, mt_node *vh, mt_node *mask,
                                mt_node **w) {
    mt_graph *g = t->g;
    int64_t b = dim_of(q, 0), tq = dim_of(q, 1), h = t->c->heads, dk = t->d / h;
    mt_node *s = mt_bmm(g, split_heads(t, q), kh, false, true, (float)(1.0 / sqrt((double)dk)));
    if (mask) s = mt_add(g, s, mask);
    mt_node *wt = mt_softmax(g, s);
    if (w) *w = wt;
    return merge_heads(t, mt_bmm(g, wt, vh, false, false, 1.0f), b, tq);
}

/* attention_split for one decoding position of N rows whose keys and values
** are rows ids[i] of kh, vh [N0, H, Tk, D/H] (no gathered copy:
** mt_bmm_gather), followed by kr, vr [N, H, Tr, D/H] of the rows themselves
** (NULL: none): the self-attention over a frozen history and the positions
** since, or the cross-attention of rows over the context of their sentence.
** mask: additive [N, 1, 1, Tk + Tr] or NULL.  The same scores and weights as
** over the concatenation; with kr, the weighted sum of the values adds two
** partial sums. */
static mt_node *attention_gather(tf *t, mt_node *q, mt_node *kh, mt_node *vh, mt_node *ids,
                                 mt_node *kr, mt_node *vr, mt_node *mask, mt_node **w) {
    mt_graph *g = t->g;
    int64_t b = dim_of(q, 0), tq = dim_of(q, 1), h = t->c->heads, dk = t->d / h;
    int64_t th = dim_of(kh, 2), tr = kr ? dim_of(kr, 2) : 0;
    float alpha = (float)(1.0 / sqrt((double)dk));
    mt_node *qh = split_heads(t, q);
    mt_node *s = mt_bmm_gather(g, qh, kh, ids, false, true, alpha);
    if (kr) {
        mt_node *parts[2] = {s, mt_bmm(g, qh, kr, false, true, alpha)};
        s = mt_concat(g, parts, 2, 3);
    }
    if (mask) s = mt_add(g, s, mask);
    mt_node *wt = mt_softmax(g, s);
    if (w) *w = wt;
    mt_node *o = mt_bmm_gather(g, kr ? mt_slice(g, wt, 3, 0, th) : wt, vh, ids, false, false, 1.0f);
    if (kr) o = mt_add(g, o, mt_bmm(g, mt_slice(g, wt, 3, th, tr), vr, false, false, 1.0f));
    return merge_heads(t, o, b, tq);
}

/* Keys and values read through row ids (attention_gather): the frozen
** history of a decoding step and the positions since, or the context of
** each row's sentence. */
typedef struct gather_kv {
    mt_node *ids, *kr, *vr;
    mt_node *spans; /* fused op: i32 [2, N] each row's history length and
                       first key (mt_attn_rows_kt_spans; NULL: all)      */
} gather_kv;

/* A decoding step's attention of one position per row with no weights
** wanted runs as one fused op (mt_attn_rows) where the device has it; the
** composed ops (attention_gather, attention_split) give the weights, serve
** beam-major rows (k > 1) and are the oracle of the fused op in tests. */
static bool fused_step(tf *t, int64_t k, int64_t tq, bool want_weights) {
    return !t->train && k == 1 && tq == 1 && !want_weights && mt_attn_rows_supported(t->g);
}

/* Keys [..., T, D/H] <-> transposed per head [..., D/H, T] (the decoder
** state keeps the cross-attention context's and the frozen history's so). */
static mt_node *swap_kt(mt_graph *g, mt_node *keys) {
    static const int perm[4] = {0, 1, 3, 2};
    return mt_permute(g, keys, perm);
}

/* A state's context or frozen history as f32 (the composed ops' input):
** graphs with float16 caches keep them in f16 (mt_decode_params.caches), keys in int8
** with MT_CACHE_F16_INT8_KEYS (transposed per head either way). */
static mt_node *as_f32(mt_graph *g, mt_node *x) {
    return mt_node_dtype(x) == MT_I8 ? mt_keys_q8_f32(g, x) : mt_cast(g, x, MT_F32);
}

/* Keys [B, H, S, dk] (f32, one key's elements together) as int8 keys [B,
** H, dk/4 + 1, S, 4] (mt_pack_rows_kq: quantized per key). */
static mt_node *keys_q8(mt_graph *g, mt_node *k) {
    return mt_pack_rows_kq(g, NULL, NULL, NULL, k, NULL, NULL, mt_node_shape(k).dim[2]);
}

/* f32 keys [n, H, len, dk] of value for int8 keys x [., H, dk/4 + 1, ., 4]
** (padding, or an empty block of positions for mt_pack_rows_kq). */
static mt_node *f32_keys_like(mt_graph *g, const mt_node *x, int64_t n, int64_t len, float value) {
    mt_shape sh = mt_node_shape(x);
    return mt_constant(g, mt_shape4(n, sh.dim[1], len, 4 * (sh.dim[2] - 1)), value);
}

/* The storage of a context or history the state keeps. */
static mt_node *kv_store(mt_graph *g, mt_node *x) {
    return mt_graph_kv_f16(g) ? mt_cast(g, x, MT_F16) : x;
}

/* Context keys transposed per head, kt [B, H, dk, S], as bfloat16 pairs of
** elements per key, [B, H, dk / 2, S, 2] (kcpu_attn_job.h): lines 2c and 2c + 1
** paired. */
static mt_node *ctx_key_pairs(mt_graph *g, mt_node *kt) {
    mt_shape sh = mt_node_shape(kt), sp = mt_shape4(sh.dim[0], sh.dim[1], sh.dim[2] / 2, 2);
    sp.dim[sp.ndim++] = sh.dim[3];
    return mt_cast_pairs(g, mt_reshape(g, kt, sp));
}

/* Context values [B, S, D] as bfloat16 pairs of positions, [B, ceil(S / 2),
** D, 2] (an odd last position paired with zeros). */
static mt_node *ctx_value_pairs(mt_graph *g, mt_node *vh, int64_t b, int64_t s, int64_t d) {
    if (s % 2) {
        mt_node *parts[2] = {vh, mt_constant(g, mt_shape3(b, 1, d), 0.0f)};
        vh = mt_concat(g, parts, 2, 1);
    }
    return mt_cast_pairs(g, mt_reshape(g, vh, mt_shape4(b, (s + 1) / 2, 2, d)));
}

/* A context's length along its values' axis 1: pairs of positions when the
** state keeps bfloat16 pairs. */
static int64_t ctx_value_len(const mt_node *vh, int64_t len) {
    return mt_node_dtype(vh) == MT_BF16 ? (len + 1) / 2 : len;
}

/* How multi_head runs: composed ops, the fused op, or the fused op over
** keys transposed per head (mt_attn_rows_kt). */
enum { ATT_COMPOSED = 0, ATT_FUSED, ATT_FUSED_KT };

/* kh, vh: [B, Tk, D], or split into heads [B, H, Tk, D/H] (4-D: decoding),
** rows of them picked by gk->ids when gk is given; mask rows go with the
** rows of kh on the fused path (fused: the caller's fused_step), with the
** query rows otherwise. */
static mt_node *multi_head(tf *t, const char *prefix, mt_node *x, int64_t b, int64_t k, int64_t tq,
                           mt_node *kh, mt_node *vh, mt_node *mask, const gather_kv *gk, int how,
                           mt_node **w_out) {
    mt_graph *g = t->g;
    int64_t d = t->d;
    mt_node *q = dense(t, x, prefix, "q", d, d);
    if (how != ATT_COMPOSED) {
        float alpha = (float)(1.0 / sqrt((double)(d / t->c->heads)));
        mt_node *ids = gk ? gk->ids : NULL, *kr = gk ? gk->kr : NULL, *vr = gk ? gk->vr : NULL;
        mt_node *o =
            how != ATT_FUSED_KT ? mt_attn_rows(g, q, kh, vh, ids, kr, vr, mask, t->c->heads, alpha)
            : gk && gk->spans
                ? mt_attn_rows_kt_spans(g, q, kh, vh, ids, kr, vr, gk->spans, t->c->heads, alpha)
                : mt_attn_rows_kt(g, q, kh, vh, ids, kr, vr, mask, t->c->heads, alpha);
        return t->c->no_projection ? o : dense_out(t, o, prefix, "o", d, d);
    }
    if (k > 1) q = mt_reshape(g, q, mt_shape3(b, k * tq, d));
    mt_node *w = NULL;
    bool split = kh != NULL && mt_node_shape(kh).ndim == 4;
    mt_node **wp = w_out ? &w : NULL;
    mt_node *o = gk      ? attention_gather(t, q, kh, vh, gk->ids, gk->kr, gk->vr, mask, wp)
                 : split ? attention_split(t, q, kh, vh, mask, wp)
                         : attention(t, q, kh, vh, mask, wp);
    if (k > 1) o = mt_reshape(g, o, mt_shape3(b * k, tq, d));
    if (w_out) {
        int64_t tk = dim_of(kh, split ? 2 : 1);
        *w_out = mt_reshape(g, mt_slice(g, w, 1, 0, 1), mt_shape3(b * k, tq, tk));
    }
    if (!t->c->no_projection) o = dense_out(t, o, prefix, "o", d, d);
    return o;
}

static void kv_project(tf *t, const char *prefix, mt_node *src, mt_node **kh, mt_node **vh) {
    *kh = dense(t, src, prefix, "k", t->d, t->d);
    *vh = dense(t, src, prefix, "v", t->d, t->d);
}

/* Self-attention block.  kv_raw: keys/values input; NULL means the block's
** own (pre-processed) input, as Marian 1.12 when keys == query input. */
static mt_node *self_block(tf *t, const char *prefix, mt_node *x, mt_node *kv_raw, int64_t n,
                           int64_t tq, mt_node *mask) {
    char pw[200];
    snprintf(pw, sizeof pw, "%s_Wo", prefix);
    mt_node *y = preprocess(t, t->c->preprocess, pw, x);
    if (!kv_raw) y = mt_gemm_share_input(t->g, y); /* q, k, v */
    mt_node *kh, *vh;
    kv_project(t, prefix, kv_raw ? kv_raw : y, &kh, &vh);
    block_begin(t, x);
    mt_node *o = multi_head(t, prefix, y, n, 1, tq, kh, vh, mask, NULL, ATT_COMPOSED, NULL);
    return block_end(t, pw, o, x);
}

/* Teacher forcing (!step): kh, vh [B, S, D], the projected source context.
** A decoding step: the state's keys transposed [B, H, D/H, S] and values
** [B, S, D], which the fused op reads in place and the composed ops get as
** [B, H, S, D/H]; sent: rows not grouped by sentence (mt_dec_state.row_sent):
** row i [N, 1, D] attends over sentence sent[i] of kh, vh and its mask [B,
** 1, 1, S]. */
static mt_node *cross_block(tf *t, const char *prefix, mt_node *x, int64_t b, int64_t k, int64_t tq,
                            mt_node *kh, mt_node *vh, mt_node *mask, mt_node *sent, mt_node *spans,
                            bool step, mt_node **w) {
    char pw[200];
    snprintf(pw, sizeof pw, "%s_Wo", prefix);
    mt_node *y = preprocess(t, t->c->preprocess, pw, x);
    bool fused = step && fused_step(t, k, tq, w != NULL);
    /* the fused op reads each row's own source length instead of masking
    ** the padding (spans: mt_dec_state.ctx_lens) */
    gather_kv gk = {sent, NULL, NULL, fused ? spans : NULL};
    if (gk.spans) mask = NULL;
    if (step && !fused && mt_node_dtype(kh) == MT_BF16) { /* pairs: ctx_key_pairs */
        mt_graph *g = t->g;
        static const int pk[5] = {0, 1, 3, 2, 4}, pv[4] = {0, 1, 3, 2};
        mt_shape sk = mt_node_shape(kh), sv = mt_node_shape(vh);
        int64_t s = sk.dim[3];
        kh = mt_reshape(g, mt_permute(g, as_f32(g, kh), pk),
                        mt_shape4(sk.dim[0], sk.dim[1], s, 2 * sk.dim[2]));
        vh = mt_reshape(g, mt_permute(g, as_f32(g, vh), pv),
                        mt_shape3(sv.dim[0], 2 * sv.dim[1], sv.dim[2]));
        vh = split_heads(t, 2 * sv.dim[1] != s ? mt_slice(g, vh, 1, 0, s) : vh);
    } else if (step && !fused) { /* the state's keys are transposed: [B, H, D/H, S] */
        kh = swap_kt(t->g, as_f32(t->g, kh));
        vh = split_heads(t, as_f32(t->g, vh));
    }
    if (sent && !fused) mask = mt_index_select(t->g, mask, 0, sent);
    block_begin(t, x);
    mt_node *o = multi_head(t, prefix, y, b, k, tq, kh, vh, mask, sent || gk.spans ? &gk : NULL,
                            fused ? ATT_FUSED_KT : ATT_COMPOSED, w);
    return block_end(t, pw, o, x);
}

static mt_node *ffn_block(tf *t, const char *prefix, mt_node *x, int64_t dim_ffn, int depth) {
    char pf[200], sfx[16];
    snprintf(pf, sizeof pf, "%s_ffn", prefix);
    mt_node *y = preprocess(t, t->c->preprocess, pf, x);
    int64_t in = t->d;
    for (int i = 1; i < depth; i++) {
        snprintf(sfx, sizeof sfx, "%d", i);
        if (!strcmp(t->c->ffn_activation, "relu")) { /* the integer GEMM's epilogue */
            y = dense_act(t, y, prefix, sfx, in, dim_ffn, true, NULL);
        } else {
            y = activate(t, t->c->ffn_activation, dense(t, y, prefix, sfx, in, dim_ffn));
        }
        y = drop(t, y, t->c->transformer_dropout_ffn);
        in = dim_ffn;
    }
    snprintf(sfx, sizeof sfx, "%d", depth);
    block_begin(t, x);
    y = dense_out(t, y, prefix, sfx, in, t->d);
    return block_end(t, pf, y, x);
}

/* Average attention block: x the layer input, avg the running mean of x. */
static mt_node *aan_block(tf *t, const char *prefix, mt_node *x, mt_node *avg) {
    char pf[200], sfx[16];
    snprintf(pf, sizeof pf, "%s_ffn", prefix);
    mt_graph *g = t->g;
    mt_node *y = preprocess(t, t->c->preprocess, pf, avg);
    int64_t in = t->d;
    for (int i = 1; i < t->c->aan_depth; i++) {
        snprintf(sfx, sizeof sfx, "%d", i);
        y = dense(t, y, prefix, sfx, in, t->c->dim_aan);
        y = drop(t, activate(t, t->c->aan_activation, y), t->c->transformer_dropout_ffn);
        in = t->c->dim_aan;
    }
    if (in != t->d) {
        snprintf(sfx, sizeof sfx, "%d", t->c->aan_depth);
        y = dense(t, y, prefix, sfx, in, t->d);
    }
    if (!t->c->aan_nogate) {
        mt_node *gi = mt_sigmoid(g, dense(t, x, prefix, "i", t->d, t->d));
        mt_node *gf = mt_sigmoid(g, dense(t, y, prefix, "f", t->d, t->d));
        y = mt_add(g, mt_mul(g, gi, x), mt_mul(g, gf, y));
    }
    return postprocess(t, t->c->postprocess, pf, y, x);
}

/* logits = x W^T + b over the target vocabulary (or the shortlist ids),
** [N, V] or [N, V'].  With argmax (not NULL) the integer GEMM gives each
** row's argmax of them + skip (host [V'] or NULL) as *argmax, i32 [N]
** (mt_matmul_cols_argmax), and the logits are not made (NULL); where it
** cannot, *argmax is NULL and the logits come back. */
static mt_node *output_layer_ex(tf *t, mt_node *x, mt_node *shortlist, const float *skip,
                                mt_node **argmax, int32_t topk, mt_node **top) {
    const mt_model_config *c = t->c;
    int64_t v = c->dim_vocabs[c->n_vocabs - 1], d = t->d;
    mt_node *w;
    bool legacy = false;
    if (c->tied_embeddings || c->tied_embeddings_all) {
        const char *nm = c->tied_embeddings_all || c->tied_embeddings_src ? "Wemb" : "decoder_Wemb";
        w = par(t, mt_shape2(v, d), emb_init(t, v), "%s", nm); /* the embedding's own */
    } else if (mt_params_find(t->p, "decoder_ff_logit_out_W") != NULL) {
        w = par(t, mt_shape2(d, v), glorot_fan(d, v, true, false), "decoder_ff_logit_out_W");
        legacy = true;
    } else {
        w = par(t, mt_shape2(v, d), glorot_fan(v, d, false, true), "decoder_ff_logit_out_Wt");
    }
    mt_node *b = NULL;
    if (!c->output_omit_bias)
        b = par(t, mt_shape2(1, v), mt_init_zeros(), "decoder_ff_logit_out_b");
    /* integer GEMM: the (shortlisted) columns of the packed weights, the bias
    ** in its epilogue; float32: mt_add of mt_matmul */
    mt_node *bs = b && shortlist ? mt_index_select(t->g, b, 1, shortlist) : b;
    if (argmax) {
        *argmax = mt_matmul_cols_argmax(t->g, x, w, !legacy, shortlist, bs, skip);
        if (*argmax) return NULL;
    }
    if (top && topk > 0) {
        *top = mt_matmul_cols_topk(t->g, x, w, !legacy, shortlist, bs, topk);
        if (*top) return NULL;
    }
    return mt_matmul_cols(t->g, x, w, !legacy, shortlist, bs);
}

static mt_node *output_layer(tf *t, mt_node *x, mt_node *shortlist) {
    return output_layer_ex(t, x, shortlist, NULL, NULL, 0, NULL);
}

/* ------------------------------------------------------------ helpers */

static int n_encoders(const mt_model_config *c) { return strstr(c->type, "multi-") ? 2 : 1; }

static void enc_prefix(const mt_model_config *c, int j, char *buf, size_t n) {
    if (n_encoders(c) > 1 && strncmp(c->type, "shared-", 7) != 0)
        snprintf(buf, n, "encoder%d", j + 1);
    else
        snprintf(buf, n, "encoder");
}

static int layer_no(const mt_model_config *c, int i) {
    return c->n_tied_layers > 0 ? c->tied_layers[i] : i + 1;
}

static int align_layer(const mt_model_config *c) {
    if (!strcmp(c->guided_alignment_layer, "last")) return c->dec_depth - 1;
    return atoi(c->guided_alignment_layer) - 1;
}

static void context_prefix(const mt_model_config *c, int i, int j, char *buf, size_t n) {
    if (j == 0)
        snprintf(buf, n, "decoder_l%d_context", layer_no(c, i));
    else
        snprintf(buf, n, "decoder_l%d_context_enc%d", layer_no(c, i), j + 1);
}

static bool is_aan(const mt_model_config *c) {
    return !strcmp(c->dec_autoreg, "average-attention");
}

/* log mask [B, 1, 1, S] = (1 - mask) * -99999999 (Marian's transposedLogMask) */
static mt_node *log_mask_of(tf *t, mt_node *mask, int64_t b, int64_t s) {
    mt_graph *g = t->g;
    mt_node *m = mt_scale(g, mt_add_scalar(g, mt_neg(g, mask), 1.0f), MASK_NEG);
    return mt_reshape(g, m, mt_shape4(b, 1, 1, s));
}

/* ---------------------------------------------------- packed encoding */

/* Inference on a padded batch runs the encoder's position-wise layers
** (projections, FFN, layer norms, residuals) on its T real positions only,
** as [T, D].  Only self-attention needs sentences: it runs per group of
** sentences of similar length, each group padded to its own longest (a
** group starts where a sentence is shorter than 3/4 of the group's first;
** at most PACK_GROUPS).  Real positions get the values of the padded
** layout (a masked key has weight exactly 0 in both); the padded positions
** of ctx repeat a real row of their sentence instead of values computed
** from the padding token, which only masked attention reads.  With int8
** products the activation scale is then the maximum over real rows only.
** Test set, mini-batch 32 sorted by length: 6,048 padded positions for
** 2,538 real ones (one 139-token line pads the first batch).
** Where the device has the fused attention (mt_attn_spans), there are no
** groups: each packed row attends over its sentence's packed rows
** (span_start, span_len), with no padding at all and no gathered copies;
** a batch without padding is then packed too (dense: the packed rows are
** the batch's rows, and the context needs no unpacking). */

enum { PACK_GROUPS = 8 };

typedef struct pack_group {
    int64_t b, len;
    mt_node *ids;      /* i32 [b * len] packed row of each slot            */
    mt_node *log_mask; /* [b, 1, 1, len] 0 / MASK_NEG                        */
} pack_group;

typedef struct packing {
    int n_groups;
    pack_group grp[PACK_GROUPS];
    mt_node *span_start, *span_len; /* i32 [T]: fused attention, row r over its
                                       sentence's rows (NULL: groups)       */
    int64_t max_len;                /* the longest sentence                */
    bool dense;                     /* no padding (fused attention only)   */
    mt_node *back;                  /* i32 [T] row of each packed position in the groups' rows */
    mt_node *unpack;                /* i32 [B * S] packed row of each padded position         */
    mt_node *tok, *pos;             /* i32 [T] token ids and positions                        */
} packing;

/* Sentence order of the groups: longest first, stable. */
static void sort_by_len_desc(int32_t *order, const int32_t *n_real, int64_t b) {
    for (int64_t i = 0; i < b; i++) {
        int32_t v = order[i];
        int64_t j = i;
        for (; j > 0 && n_real[order[j - 1]] < n_real[v]; j--)
            order[j] = order[j - 1];
        order[j] = v;
    }
}

/* Fills pk for stream s (spans: for mt_attn_spans, else groups); false
** when the batch has no real position, or no padding without spans (or on
** failure, which t records). */
static bool pack_batch(tf *t, const mt_batch *bt, int s, bool spans, packing *pk) {
    int64_t b = bt->size, len = bt->src_len[s], bl = b * len;
    const float *mask = bt->src_mask[s];
    int64_t n = 0;
    for (int64_t i = 0; i < bl; i++)
        n += mask[i] != 0.0f;
    if ((n == bl && !spans) || n == 0) return false;
    memset(pk, 0, sizeof *pk);
    pk->dense = n == bl;
    /* int32 scratch: n_real, start, order [b]; unpack, slot ids [b * len];
    ** tok, pos, back [n]; float: group masks [b * len] */
    int32_t *buf = tmp_alloc(t, (size_t)(3 * b + 2 * bl + 3 * n) * sizeof(int32_t));
    float *lm = tmp_alloc(t, (size_t)bl * sizeof(float));
    if (buf == NULL || lm == NULL) {
        mt_free(buf);
        mt_free(lm);
        return false;
    }
    int32_t *n_real = buf, *start = n_real + b, *order = start + b, *unpack = order + b;
    int32_t *slot_ids = unpack + bl, *tok = slot_ids + bl, *pos = tok + n, *back = pos + n;
    /* start[i]: the first packed row of sentence i, which its padded slots
    ** repeat; row 0 for a sentence without tokens (never read unmasked) */
    int32_t r = 0;
    for (int64_t i = 0; i < b; i++) {
        start[i] = r;
        order[i] = (int32_t)i;
        for (int64_t p = 0; p < len; p++) {
            if (mask[i * len + p] == 0.0f) {
                unpack[i * len + p] = start[i];
                continue;
            }
            unpack[i * len + p] = r;
            tok[r] = bt->src_ids[s][i * len + p];
            pos[r] = (int32_t)p;
            r++;
        }
        n_real[i] = r - start[i];
        if (n_real[i] == 0) {
            start[i] = 0;
            for (int64_t p = 0; p < len; p++)
                unpack[i * len + p] = 0;
        }
    }
    if (spans) { /* slot ids: the first row of each row's sentence; back: its length */
        for (int64_t i = 0; i < b; i++) {
            for (int32_t p = 0; p < n_real[i]; p++) {
                slot_ids[start[i] + p] = start[i];
                back[start[i] + p] = n_real[i];
            }
            pk->max_len = n_real[i] > pk->max_len ? n_real[i] : pk->max_len;
        }
        pk->span_start = mt_input_i32(t->g, mt_shape1(n), slot_ids);
        pk->span_len = mt_input_i32(t->g, mt_shape1(n), back);
    }
    sort_by_len_desc(order, n_real, b);
    int64_t used = 0; /* slots of the groups so far */
    for (int64_t i0 = 0; i0 < b && !spans && t->rc == MT_OK;) {
        int64_t glen = n_real[order[i0]] > 0 ? n_real[order[i0]] : 1, i1 = i0 + 1;
        bool last = pk->n_groups == PACK_GROUPS - 1;
        while (i1 < b && (last || 4 * (int64_t)n_real[order[i1]] >= 3 * glen))
            i1++;
        pack_group *gr = &pk->grp[pk->n_groups++];
        gr->b = i1 - i0;
        gr->len = glen;
        for (int64_t i = i0; i < i1; i++) {
            int32_t sn = order[i];
            for (int64_t p = 0; p < glen; p++) {
                int64_t at = (i - i0) * glen + p;
                bool real = p < n_real[sn];
                slot_ids[at] = start[sn] + (real ? (int32_t)p : 0);
                lm[at] = real ? 0.0f : MASK_NEG;
                if (real) back[start[sn] + p] = (int32_t)(used + at);
            }
        }
        gr->ids = mt_input_i32(t->g, mt_shape1(gr->b * glen), slot_ids);
        gr->log_mask = mt_input(t->g, mt_shape4(gr->b, 1, 1, glen), lm);
        used += gr->b * glen;
        i0 = i1;
    }
    if (!spans) pk->back = mt_input_i32(t->g, mt_shape1(n), back);
    if (!pk->dense) pk->unpack = mt_input_i32(t->g, mt_shape1(bl), unpack);
    pk->tok = mt_input_i32(t->g, mt_shape1(n), tok);
    pk->pos = mt_input_i32(t->g, mt_shape1(n), pos);
    mt_free(buf);
    mt_free(lm);
    return t->rc == MT_OK;
}

/* Self-attention block on packed rows x [T, D] (self_block's ops). */
static mt_node *self_block_packed(tf *t, const char *prefix, mt_node *x, const packing *pk) {
    mt_graph *g = t->g;
    char pw[200];
    snprintf(pw, sizeof pw, "%s_Wo", prefix);
    int64_t d = t->d;
    mt_node *y = mt_gemm_share_input(g, preprocess(t, t->c->preprocess, pw, x)); /* q, k, v */
    mt_node *q = dense(t, y, prefix, "q", d, d);
    mt_node *kh, *vh;
    kv_project(t, prefix, y, &kh, &vh);
    if (pk->span_start) {
        int h = t->c->heads;
        mt_node *a = mt_attn_spans(g, q, kh, vh, pk->span_start, pk->span_len, pk->max_len, h,
                                   (float)(1.0 / sqrt((double)(d / h))));
        block_begin(t, x);
        if (!t->c->no_projection) a = dense_out(t, a, prefix, "o", d, d);
        return block_end(t, pw, a, x);
    }
    mt_node *o[PACK_GROUPS];
    for (int i = 0; i < pk->n_groups; i++) {
        const pack_group *gr = &pk->grp[i];
        mt_shape sh = mt_shape3(gr->b, gr->len, d);
        mt_node *qg = mt_reshape(g, mt_gather_rows(g, q, gr->ids), sh);
        mt_node *kg = mt_reshape(g, mt_gather_rows(g, kh, gr->ids), sh);
        mt_node *vg = mt_reshape(g, mt_gather_rows(g, vh, gr->ids), sh);
        o[i] = mt_reshape(g, attention(t, qg, kg, vg, gr->log_mask, NULL),
                          mt_shape2(gr->b * gr->len, d));
    }
    mt_node *cat = pk->n_groups == 1 ? o[0] : mt_concat(g, o, pk->n_groups, 0);
    mt_node *a = mt_gather_rows(g, cat, pk->back);
    block_begin(t, x);
    if (!t->c->no_projection) a = dense_out(t, a, prefix, "o", d, d);
    return block_end(t, pw, a, x);
}

/* ------------------------------------------------------------ encoder */

static void encode_stream(tf *t, const mt_batch *bt, int s, int j, mt_model_context *out) {
    mt_graph *g = t->g;
    const mt_model_config *c = t->c;
    char prefix[32], name[160];
    enc_prefix(c, j, prefix, sizeof prefix);
    int64_t b = bt->size, len = bt->src_len[s];
    mt_node *mask = mt_input(g, mt_shape2(b, len), bt->src_mask[s]);
    mt_node *lm = log_mask_of(t, mask, b, len);
    packing pk;
    bool packed = !t->train && pack_batch(t, bt, s, mt_attn_rows_supported(g), &pk);
    mt_node *table = emb_table(t, prefix, c->dim_vocabs[s]);
    mt_node *x;
    if (packed) { /* [T, D]: the same sums per real position */
        x = mt_scale(g, mt_gather_rows(g, table, pk.tok), sqrtf((float)t->d));
        x = mt_add(g, x, mt_gather_rows(g, positions(t, 0, len), pk.pos));
    } else {
        mt_node *ids = mt_input_i32(g, mt_shape2(b, len), bt->src_ids[s]);
        x = drop_words(t, mt_gather_rows(g, table, ids), c->dropout_src, b, len);
        x = mt_add(g, mt_scale(g, x, sqrtf((float)t->d)), positions(t, 0, len));
    }
    mt_node *prev = x;
    snprintf(name, sizeof name, "%s_emb", prefix);
    x = preprocess(t, c->postprocess_emb, name, x);
    for (int l = 1; l <= c->enc_depth; l++) {
        snprintf(name, sizeof name, "%s_l%d_self", prefix, l);
        x = packed ? self_block_packed(t, name, x, &pk) : self_block(t, name, x, NULL, b, len, lm);
        snprintf(name, sizeof name, "%s_l%d_ffn", prefix, l);
        x = ffn_block(t, name, x, c->dim_ffn, c->ffn_depth);
    }
    snprintf(name, sizeof name, "%s_top", prefix);
    x = postprocess(t, c->postprocess_top, name, x, prev);
    if (packed && pk.dense) {
        x = mt_reshape(g, x, mt_shape3(b, len, t->d));
    } else if (packed) {
        out->packed = x;
        out->unpack = pk.unpack;
        x = mt_reshape(g, mt_gather_rows(g, x, pk.unpack), mt_shape3(b, len, t->d));
    }
    out->ctx = x;
    out->mask = mask;
    out->log_mask = lm;
    out->len = (int32_t)len;
}

mt_status mt_transformer_encode(const mt_model_config *c, mt_params *p, mt_graph *g,
                                const mt_batch *b, mt_model_encoding *out) {
    memset(out, 0, sizeof *out);
    int n = n_encoders(c);
    if (b->n_src < n)
        return mt_seterr(MT_ERR_INVALID,
                         "transformer: the model reads %d source streams, the "
                         "batch has %d",
                         n, b->n_src);
    tf t;
    tf_init(&t, c, p, g);
    out->batch = b->size;
    out->n = n;
    for (int j = 0; j < n; j++)
        encode_stream(&t, b, j, j, &out->c[j]);
    return tf_finish(&t);
}

/* ------------------------------------------------------------ decoder */

/* The layer stack over x [N, tq, D] (N = B * K).  Teacher forcing: pos < 0,
** self_mask/avg_mat given.  Decoding: pos >= 0, in/next states. */
typedef struct dec_io {
    int64_t b, k, tq;
    int pos;                /* -1: teacher forcing                          */
    mt_node *self_mask;     /* teacher forcing, self-attention [B,1,T,T]    */
    mt_node *avg_mat;       /* teacher forcing, average attention [B,T,T]   */
    const mt_dec_state *in; /* decoding                                      */
    mt_dec_state *next;
    mt_node *align; /* out: [N, tq, S0]                              */
    bool no_align;  /* decoding: the caller wants no alignment           */
    /* decoding with rows at different positions (mt_dec_state.row_pos): */
    mt_node *step_mask; /* [N, 1, 1, pos + 1] additive: padding slots masked */
    /* ... over a frozen history (mt_dec_state.hist_lens): */
    /* the fused attention's i32 [2, N] history length and first key per row,
    ** or the composed ops' mask [N, 1, 1, hist_len + (pos - hist_len) + 1] */
    mt_node *spans;
    mt_node *hist_mask;
    /* i32 [2, N] per context: each row's source length, then zeros
    ** (mt_dec_state.ctx_lens) */
    mt_node *ctx_spans[MT_MAX_STREAMS];
    mt_node *keep;      /* [N, 1, 1] 1 for rows past their first position, 0
                           at it (NULL: no row is at its first position)   */
    mt_node *qpos;      /* AAN: [N, 1, 1] each row's position, and ...      */
    mt_node *qpos1;     /* ... that plus one                                */
} dec_io;

/* Slot of the log mask of context j among the fixed state nodes (after the
** 2 * dec-depth * n_ctx cross-attention keys and values). */
static int mask_slot(const mt_model_config *c, int n_ctx, int j) {
    return 2 * c->dec_depth * n_ctx + j;
}

/* Cache slot k of the state extended by this position's cur [N, H, 1, D/H],
** applying the state's pending row selection (row_ids, row_off). */
static mt_node *append_cache(tf *t, const dec_io *io, int k, mt_node *cur) {
    const mt_dec_state *in = io->in;
    if (in->row_ids || in->row_off)
        return mt_cache_append(t->g, in->rows[k], in->row_ids, in->row_off, cur);
    mt_node *parts[2] = {in->rows[k], cur};
    return mt_concat(t->g, parts, 2, 2);
}

/* True when the keys of self-attention block prefix are a pre-quantized
** int8 weight (a Marian intgemm8 model): its decoding steps then project
** every position's keys and values again, as Marian does (self_step_requant). */
static bool self_requant(const mt_params *p, const char *prefix) {
    char name[200];
    snprintf(name, sizeof name, "%s_Wk", prefix);
    const mt_tensor *w = mt_params_find(p, name);
    return w != NULL && w->dtype == MT_I8;
}

/* The input the keys and values of decoder self-attention are projected
** from in a decoding step: the block's pre-processed input y, as in
** training, or, as Marian 1.12 decodes (marian_prenorm_cache), the raw
** layer input x (the same node unless the model is pre-norm). */
static mt_node *self_kv_input(const tf *t, mt_node *x, mt_node *y) {
    return t->c->marian_prenorm_cache ? x : y;
}

/* Self-attention of one decoding position in a Marian intgemm8 model.
** Marian's DecoderLayerSelfAttention caches the layer inputs and projects
** all of them (the cached ones, reordered by the beam, and this position's)
** at every step; its int8 product quantizes that whole input with one
** multiplier, 127 / max|inputs| (intgemm_interface.h, computeQuantMult), so
** the keys and values of earlier positions change whenever that maximum
** does (a new position, or the beam dropping the row that held it).  To get
** Marian's numbers the state keeps the raw inputs here, [N, 1, pos, D] in
** slot 2i (slot 2i + 1 unused), and this step projects them all again: as
** Marian, the cost of a step grows with the position.  Such models do not
** fold their caches (mt_transformer_can_fold).  Pre-norm models: the
** cached inputs are y (self_kv_input); with marian_prenorm_cache, x, and
** keys and values at position 0, and with top-up the values at a row's
** first position, are those of y, as in self_step. */
static mt_node *self_step_requant(tf *t, const char *prefix, const char *pw, mt_node *x, mt_node *y,
                                  dec_io *io, int i) {
    mt_graph *g = t->g;
    mt_node *kvin = self_kv_input(t, x, y);
    int64_t n = io->b * io->k, d = t->d;
    mt_node *xc = mt_reshape(g, kvin, mt_shape4(dim_of(x, 0), 1, 1, d));
    if (io->pos > 0) xc = append_cache(t, io, 2 * i, xc);
    io->next->rows[2 * i] = xc;
    io->next->rows[2 * i + 1] = NULL;
    int64_t len = dim_of(xc, 2);
    mt_node *all = mt_reshape(g, xc, mt_shape3(dim_of(xc, 0), len, d));
    mt_node *kx, *vx, *ka, *va;
    kv_project(t, prefix, mt_gemm_share_input(g, all), &kx, &vx);
    ka = split_heads(t, kx);
    va = split_heads(t, vx);
    if (io->pos == 0 && y != kvin) {
        kv_project(t, prefix, y, &ka, &va);
        ka = split_heads(t, ka);
        va = split_heads(t, va);
    } else if (io->keep && y != kvin) { /* see self_step */
        mt_node *ky, *vy;
        kv_project(t, prefix, y, &ky, &vy);
        mt_node *keep = mt_reshape(g, io->keep, mt_shape4(dim_of(x, 0), 1, 1, 1));
        mt_node *vcur = mt_slice(g, va, 2, len - 1, 1);
        mt_node *vfirst = mt_mul(g, split_heads(t, vy), mt_add_scalar(g, mt_neg(g, keep), 1.0f));
        vcur = mt_add(g, mt_mul(g, vcur, keep), vfirst);
        mt_node *parts[2] = {mt_slice(g, va, 2, 0, len - 1), vcur};
        va = len > 1 ? mt_concat(g, parts, 2, 2) : vcur;
    }
    bool fused = fused_step(t, 1, io->tq, false);
    block_begin(t, x);
    mt_node *o = multi_head(t, prefix, y, n, 1, io->tq, ka, va, io->step_mask, NULL,
                            fused ? ATT_FUSED : ATT_COMPOSED, NULL);
    return block_end(t, pw, o, x);
}

/* Self-attention of one decoding position over the cache of layer i.  The
** state keeps the projected keys and values of every earlier position, split
** into heads (rows 2i and 2i + 1, [N, H, pos, D/H]); this position's are
** appended.  Marian
** (DecoderLayerSelfAttention) caches the raw layer inputs and projects
** them all again at every step: the same values (the projection is per
** row), computed once.  The keys and values come from the pre-processed
** input y, as in training (self_kv_input); with marian_prenorm_cache, as
** Marian 1.12 decodes: at position 0 from y (the query's own node), from
** position 1 on from the raw cached inputs x. */
static mt_node *self_step(tf *t, const char *prefix, mt_node *x, dec_io *io, int i) {
    mt_graph *g = t->g;
    char pw[200];
    snprintf(pw, sizeof pw, "%s_Wo", prefix);
    mt_node *y = preprocess(t, t->c->preprocess, pw, x);
    if (self_requant(t->p, prefix)) return self_step_requant(t, prefix, pw, x, y, io, i);
    mt_node *kx, *vx;
    mt_node *kvin = self_kv_input(t, x, y);
    kv_project(t, prefix, mt_gemm_share_input(g, kvin), &kx, &vx); /* k, v (and q if y is kvin) */
    mt_node *kc = split_heads(t, kx), *vc = split_heads(t, vx);
    const mt_dec_state *in = io->in;
    if (io->pos > in->hist_len) {
        kc = append_cache(t, io, 2 * i, kc);
        vc = append_cache(t, io, 2 * i + 1, vc);
    }
    io->next->rows[2 * i] = kc;
    io->next->rows[2 * i + 1] = vc;
    mt_node *ka = kc, *va = vc;
    if (io->pos == 0 && y != kvin) {
        kv_project(t, prefix, y, &ka, &va);
        ka = split_heads(t, ka);
        va = split_heads(t, va);
    } else if (io->keep && y != kvin) {
        /* Rows at their first position among rows further on: those attend
        ** to this position only (weight exactly 1), so only its value
        ** matters, and Marian's is the projection of y there. */
        mt_node *ky, *vy;
        kv_project(t, prefix, y, &ky, &vy);
        mt_node *keep = mt_reshape(g, io->keep, mt_shape4(dim_of(x, 0), 1, 1, 1));
        mt_node *vcur = split_heads(t, vx);
        mt_node *vfirst = mt_mul(g, split_heads(t, vy), mt_add_scalar(g, mt_neg(g, keep), 1.0f));
        vcur = mt_add(g, mt_mul(g, vcur, keep), vfirst);
        va = io->pos > in->hist_len ? append_cache(t, io, 2 * i + 1, vcur) : vcur;
    }
    int64_t n = io->b * io->k;
    mt_node *o;
    bool fused = fused_step(t, 1, io->tq, false);
    block_begin(t, x);
    if (in->hist_len > 0) { /* the frozen history, then ka/va */
        gather_kv gk = {in->hist_ids, ka, va, NULL};
        mt_node *kh = in->hist[2 * i]; /* keys transposed: [N0, H, D/H, hist_len] */
        mt_node *vh = in->hist[2 * i + 1];
        if (!fused) {
            kh = swap_kt(g, as_f32(g, kh));
            vh = as_f32(g, vh);
        }
        /* rows at their own positions: the fused op reads each row's own
        ** history length and starts at its first key, the composed ops
        ** mask the other slots (query rows) */
        gk.spans = fused ? io->spans : NULL;
        o = multi_head(t, prefix, y, n, 1, io->tq, kh, vh, fused ? NULL : io->hist_mask, &gk,
                       fused ? ATT_FUSED_KT : ATT_COMPOSED, NULL);
    } else {
        o = multi_head(t, prefix, y, n, 1, io->tq, ka, va, io->step_mask, NULL,
                       fused ? ATT_FUSED : ATT_COMPOSED, NULL);
    }
    return block_end(t, pw, o, x);
}

static mt_node *decoder_stack(tf *t, const mt_model_encoding *enc, mt_node *x, dec_io *io) {
    const mt_model_config *c = t->c;
    mt_graph *g = t->g;
    int64_t n = io->b * io->k;
    char name[160];
    mt_node *prev = x;
    x = preprocess(t, c->postprocess_emb, "decoder_emb", x);
    int al = align_layer(c);
    for (int i = 0; i < c->dec_depth; i++) {
        int ln = layer_no(c, i);
        if (is_aan(c)) {
            snprintf(name, sizeof name, "decoder_l%d_aan", ln);
            mt_node *avg;
            if (io->pos < 0) {
                avg = io->tq > 1 ? mt_bmm(g, io->avg_mat, x, false, false, 1.0f) : x;
            } else if (io->qpos) { /* rows at their own positions */
                mt_node *s = mt_add(g, mt_mul(g, io->in->rows[i], io->qpos), x);
                avg = mt_div(g, s, io->qpos1);
            } else if (io->pos == 0) {
                avg = x;
            } else {
                mt_node *s = mt_add(g, mt_scale(g, io->in->rows[i], (float)io->pos), x);
                avg = mt_div(g, s, mt_constant(g, mt_shape1(1), (float)(io->pos + 1)));
            }
            if (io->next) io->next->rows[i] = avg;
            x = aan_block(t, name, x, avg);
        } else {
            snprintf(name, sizeof name, "decoder_l%d_self", ln);
            if (io->pos < 0) {
                x = self_block(t, name, x, NULL, n, io->tq, io->self_mask);
            } else {
                x = self_step(t, name, x, io, i);
            }
        }
        int n_ctx = io->pos < 0 ? enc->n : io->in->n_ctx;
        for (int j = 0; j < n_ctx; j++) {
            context_prefix(c, i, j, name, sizeof name);
            mt_node *kh, *vh, *lm;
            if (io->pos < 0) {
                kv_project(t, name, enc->c[j].ctx, &kh, &vh);
                lm = enc->c[j].log_mask;
            } else {
                kh = io->in->fixed[2 * (i * n_ctx + j)];
                vh = io->in->fixed[2 * (i * n_ctx + j) + 1];
                lm = io->in->fixed[mask_slot(c, n_ctx, j)];
            }
            mt_node **w = j == 0 && i == al && !io->no_align ? &io->align : NULL;
            mt_node *sent = io->pos < 0 ? NULL : io->in->row_sent;
            x = cross_block(t, name, x, io->b, io->k, io->tq, kh, vh, lm, sent, io->ctx_spans[j],
                            io->pos >= 0, w);
        }
        snprintf(name, sizeof name, "decoder_l%d_ffn", ln);
        int dim_ffn = c->dec_dim_ffn ? c->dec_dim_ffn : c->dim_ffn;
        int depth = c->dec_ffn_depth ? c->dec_ffn_depth : c->ffn_depth;
        x = ffn_block(t, name, x, dim_ffn, depth);
    }
    return postprocess(t, c->postprocess_top, "decoder_top", x, prev);
}

mt_status mt_transformer_decode_all(const mt_model_config *c, mt_params *p, mt_graph *g,
                                    const mt_model_encoding *enc, const mt_batch *b,
                                    mt_node **logits, mt_node **align) {
    *logits = NULL;
    if (align) *align = NULL;
    if (b->trg_len < 1 || b->trg_ids == NULL)
        return mt_seterr(MT_ERR_INVALID, "transformer: the batch has no target");
    if (enc->batch != b->size)
        return mt_seterr(MT_ERR_INVALID, "transformer: encoding of %d sentences for a batch of %d",
                         (int)enc->batch, (int)b->size);
    tf t;
    tf_init(&t, c, p, g);
    int64_t bs = b->size, len = b->trg_len, d = t.d;
    mt_node *ids = mt_input_i32(g, mt_shape2(bs, len), b->trg_ids);
    mt_node *e = mt_gather_rows(g, emb_table(&t, "decoder", c->dim_vocabs[c->n_vocabs - 1]), ids);
    /* shift right: position 0 gets the zero vector, position i the embedding of token i-1 */
    mt_node *x = mt_constant(g, mt_shape3(bs, 1, d), 0.0f);
    if (len > 1) {
        mt_node *parts[2] = {x, mt_slice(g, e, 1, 0, len - 1)};
        x = mt_concat(g, parts, 2, 1);
    }
    x = drop_words(&t, x, c->dropout_trg, bs, len);
    x = mt_add(g, mt_scale(g, x, sqrtf((float)d)), positions(&t, 0, len));

    /* lower triangle (j <= i) times the target mask (Marian's selfMask) */
    float *tri = tmp_alloc(&t, (size_t)(len * len) * sizeof(float));
    if (tri == NULL) return tf_finish(&t);
    for (int64_t i = 0; i < len; i++)
        for (int64_t j = 0; j < len; j++)
            tri[i * len + j] = j <= i ? 1.0f : 0.0f;
    mt_node *trin = mt_input(g, mt_shape3(1, len, len), tri);
    mt_free(tri);
    mt_node *tmask = mt_input(g, mt_shape3(bs, 1, len), b->trg_mask);
    mt_node *sm = mt_mul(g, trin, tmask); /* [B, T, T] */
    dec_io io = {.b = bs, .k = 1, .tq = len, .pos = -1};
    if (is_aan(c)) {
        io.avg_mat = mt_div(g, sm, mt_sum(g, sm, -1));
    } else {
        mt_node *lm = mt_scale(g, mt_add_scalar(g, mt_neg(g, sm), 1.0f), MASK_NEG);
        io.self_mask = mt_reshape(g, lm, mt_shape4(bs, 1, len, len));
    }
    x = decoder_stack(&t, enc, x, &io);
    *logits = output_layer(&t, x, NULL);
    if (align) *align = io.align;
    mt_status rc = tf_finish(&t);
    if (rc != MT_OK) {
        *logits = NULL;
        if (align) *align = NULL;
    }
    return rc;
}

/* ----------------------------------------------------------- step API */

/* State layout (model.h leaves it to the architecture):
**   rows    self-attention: keys 2i and values 2i + 1 of layer i, split into
**           heads: [N, H, pos, D/H] (a Marian intgemm8 model: the layer's
**           raw inputs [N, 1, pos, D] in 2i, 2i + 1 NULL; self_step_requant);
**           average attention: the running mean of layer i, [N, 1, D]
**   fixed   keys 2(i n + j) and values 2(i n + j) + 1 of the cross-attention
**           of layer i over context j: keys transposed per head, [B, H, D/H,
**           S_j] (the fused attention scores 16 positions by one vector
**           per element), values [B, S_j, D] (heads read in place); a step
**           with composed ops splits them; then the log mask of each
**           context j, [B, 1, 1, S_j] (mask_slot) */
static int n_row_slots(const mt_model_config *c) { return (is_aan(c) ? 1 : 2) * c->dec_depth; }

static int n_fixed_slots(const mt_model_config *c, int n_ctx) {
    return 2 * c->dec_depth * n_ctx + n_ctx;
}

mt_status mt_transformer_start(const mt_model_config *c, mt_params *p, mt_graph *g,
                               const mt_model_encoding *enc, mt_dec_state *out) {
    memset(out, 0, sizeof *out);
    if (n_row_slots(c) > MT_DEC_STATE_SLOTS || n_fixed_slots(c, enc->n) > MT_DEC_STATE_SLOTS)
        return mt_seterr(MT_ERR_UNSUPPORTED,
                         "transformer: %d decoder layers x %d encoders is "
                         "too deep for the decoder state",
                         c->dec_depth, enc->n);
    tf t;
    tf_init(&t, c, p, g);
    out->batch = enc->batch;
    out->beam = 1;
    out->pos = 0;
    out->n_rows = n_row_slots(c);
    out->n_fixed = n_fixed_slots(c, enc->n);
    out->n_ctx = enc->n;
    char name[160];
    for (int i = 0; i < c->dec_depth; i++) {
        for (int j = 0; j < enc->n; j++) {
            context_prefix(c, i, j, name, sizeof name);
            int k = 2 * (i * enc->n + j);
            const mt_model_context *cx = &enc->c[j];
            mt_node *kh, *vh;
            /* every layer projects the same encoding: quantized once */
            kv_project(&t, name, mt_gemm_share_input(g, cx->packed ? cx->packed : cx->ctx), &kh,
                       &vh);
            if (cx->packed) { /* projected at the real positions only */
                mt_shape sh = mt_shape3(enc->batch, cx->len, t.d);
                kh = mt_reshape(g, mt_gather_rows(g, kh, cx->unpack), sh);
                vh = mt_reshape(g, mt_gather_rows(g, vh, cx->unpack), sh);
            }
            static const int to_kt[4] = {0, 2, 3, 1}; /* [B, S, H, dk] -> [B, H, dk, S] */
            int64_t s_len = dim_of(kh, 1), h = c->heads;
            mt_node *kt =
                mt_permute(g, mt_reshape(g, kh, mt_shape4(enc->batch, s_len, h, t.d / h)), to_kt);
            if (mt_graph_kv_keys_i8(g, t.d / h)) {       /* int8 keys, f16 values */
                static const int to_k[4] = {0, 2, 1, 3}; /* [B, S, H, dk] -> [B, H, S, dk] */
                out->fixed[k] = keys_q8(
                    g, mt_permute(g, mt_reshape(g, kh, mt_shape4(enc->batch, s_len, h, t.d / h)),
                                  to_k));
                out->fixed[k + 1] = kv_store(g, vh);
            } else if (mt_graph_kv_bf16(g, t.d / h)) { /* the bfloat16 attention's head sizes */
                out->fixed[k] = ctx_key_pairs(g, kt);
                out->fixed[k + 1] = ctx_value_pairs(g, vh, enc->batch, s_len, t.d);
            } else {
                out->fixed[k] = kv_store(g, kt);
                out->fixed[k + 1] = kv_store(g, vh);
            }
        }
    }
    for (int j = 0; j < enc->n; j++)
        out->fixed[mask_slot(c, enc->n, j)] = enc->c[j].log_mask;
    return tf_finish(&t);
}

/* A per-row input [n, 1, 1]: f(row_pos[r]) (n <= 2048 without allocating). */
static mt_node *row_values(tf *t, const int32_t *q, int64_t n, float add, bool nonzero) {
    float stack[2048];
    float *buf = n <= 2048 ? stack : tmp_alloc(t, (size_t)n * sizeof(float));
    if (buf == NULL) return NULL;
    for (int64_t r = 0; r < n; r++)
        buf[r] = nonzero ? (q[r] > 0 ? 1.0f : 0.0f) : (float)q[r] + add;
    mt_node *v = mt_input(t->g, mt_shape3(n, 1, 1), buf);
    if (buf != stack) mt_free(buf);
    return v;
}

/* Self-attention mask of a step with rows at their own positions: row r
** sees the last q[r] + 1 of the pos + 1 slots. */
static mt_node *step_mask(tf *t, const int32_t *q, int64_t n, int64_t pos) {
    int64_t w = pos + 1;
    float stack[2048];
    float *buf = n * w <= 2048 ? stack : tmp_alloc(t, (size_t)(n * w) * sizeof(float));
    if (buf == NULL) return NULL;
    for (int64_t r = 0; r < n; r++)
        for (int64_t j = 0; j < w; j++)
            buf[r * w + j] = j < pos - q[r] ? MASK_NEG : 0.0f;
    mt_node *m = mt_input(t->g, mt_shape4(n, 1, 1, w), buf);
    if (buf != stack) mt_free(buf);
    return m;
}

/* Rows at their own positions over a frozen history of hl positions (left
** aligned: row r has its first hlen[r] there) and tr = pos - hl + 1 recent
** slots: a row with a history has all the recent ones, a newer row its
** last q[r] + 1.  The fused op's spans [2, N] (history length, first key)
** and the composed ops' mask [N, 1, 1, hl + tr].  Checks each row's
** positions: q[r] = hlen[r] + pos - hl with a history, else <= pos - hl. */
static void hist_spans(tf *t, const int32_t *q, const int32_t *hlen, int64_t n, int64_t pos,
                       int64_t hl, dec_io *io) {
    int64_t tr = pos - hl + 1, w = hl + tr;
    bool fused = fused_step(t, 1, 1, false); /* (the mask only for the composed ops) */
    int32_t stack[4096];
    int32_t *sp = n <= 2048 ? stack : tmp_alloc(t, (size_t)(2 * n) * sizeof(int32_t));
    float *m = fused ? NULL : tmp_alloc(t, (size_t)(n * w) * sizeof(float));
    if (sp == NULL || (!fused && m == NULL)) {
        if (sp != stack) mt_free(sp);
        mt_free(m);
        return;
    }
    for (int64_t r = 0; r < n; r++) {
        int64_t first = hlen[r] > 0 ? 0 : tr - 1 - q[r]; /* first recent slot */
        if (hlen[r] < 0 || hlen[r] > hl || first < 0 || (hlen[r] > 0 && q[r] != hlen[r] + tr - 1)) {
            fail(t, MT_ERR_INVALID,
                 "transformer: row %lld at position %d with %d of %lld history positions and "
                 "%lld since",
                 (long long)r, (int)q[r], (int)hlen[r], (long long)hl, (long long)(tr - 1));
            break;
        }
        sp[r] = hlen[r];
        sp[n + r] = (int32_t)first; /* 0 for a row with a history */
        for (int64_t j = 0; m && j < w; j++)
            m[r * w + j] = j < hlen[r] || j >= hl + first ? 0.0f : MASK_NEG;
    }
    if (fused)
        io->spans = mt_input_i32(t->g, mt_shape2(2, n), sp);
    else
        io->hist_mask = mt_input(t->g, mt_shape4(n, 1, 1, w), m);
    if (sp != stack) mt_free(sp);
    mt_free(m);
}

mt_status mt_transformer_step(const mt_model_config *c, mt_params *p, mt_graph *g,
                              const mt_model_encoding *enc, const mt_dec_state *in,
                              const int32_t *prev, mt_dec_state *next, mt_dec_step *out) {
    memset(out, 0, sizeof *out);
    if (in->pos > 0 && prev == NULL)
        return mt_seterr(MT_ERR_INVALID, "transformer: step %d needs the previous tokens",
                         (int)in->pos);
    int64_t n = (int64_t)in->batch * in->beam, d = c->dim_emb;
    /* rows at their own positions (top-up batching) */
    const int32_t *q = in->row_pos;
    bool mixed = false, any_first = false;
    for (int64_t r = 0; q && r < n; r++) {
        if (q[r] < 0 || q[r] > in->pos)
            return mt_seterr(MT_ERR_INVALID, "transformer: row %lld at position %d of %d",
                             (long long)r, (int)q[r], (int)in->pos);
        mixed = mixed || q[r] != in->pos;
        any_first = any_first || q[r] == 0;
    }
    tf t;
    tf_init(&t, c, p, g);
    mt_dec_state st = *in, eff = *in;
    if (in->row_ids && mt_node_shape(in->row_ids).dim[0] != n)
        return mt_seterr(MT_ERR_INVALID, "transformer: %lld row ids for %lld rows",
                         (long long)mt_node_shape(in->row_ids).dim[0], (long long)n);
    if (in->hist_len > 0 &&
        (is_aan(c) || in->row_off || in->hist_len > in->pos || in->hist_ids == NULL ||
         mt_node_shape(in->hist_ids).dim[0] != n || (q && in->hist_lens == NULL)))
        return mt_seterr(MT_ERR_INVALID,
                         "transformer: a frozen history of %d positions of %d needs ids for "
                         "its %lld rows (and their lengths with rows at their own positions, "
                         "no positions dropped by the step)",
                         (int)in->hist_len, (int)in->pos, (long long)n);
    if (in->row_sent && (in->beam != 1 || mt_node_shape(in->row_sent).dim[0] != n))
        return mt_seterr(MT_ERR_INVALID,
                         "transformer: sentences of %lld rows for %lld rows of "
                         "beam %d (rows by sentence need beam 1)",
                         (long long)mt_node_shape(in->row_sent).dim[0], (long long)n,
                         (int)in->beam);
    if (is_aan(c) && in->row_ids && in->pos > 0) /* running means: just reorder them */
        for (int r = 0; r < in->n_rows; r++)
            if (in->rows[r]) eff.rows[r] = mt_index_select(g, in->rows[r], 0, in->row_ids);
    dec_io io = {.b = in->batch,
                 .k = in->beam,
                 .tq = 1,
                 .pos = in->pos,
                 .in = &eff,
                 .next = &st,
                 .no_align = in->no_align};
    mt_node *x;
    if (in->pos == 0) {
        x = mt_constant(g, mt_shape3(n, 1, d), 0.0f);
    } else {
        mt_node *ids = mt_input_i32(g, mt_shape2(n, 1), prev);
        x = mt_gather_rows(g, emb_table(&t, "decoder", c->dim_vocabs[c->n_vocabs - 1]), ids);
        if (mixed && any_first) { /* the zero vector at a row's first position */
            io.keep = row_values(&t, q, n, 0.0f, true);
            x = mt_mul(g, x, io.keep);
        }
    }
    mt_node *pe;
    if (mixed) {
        pe = mt_reshape(g, positions_of(&t, 0, q, n), mt_shape3(n, 1, d));
        if (is_aan(c)) {
            io.qpos = row_values(&t, q, n, 0.0f, false);
            io.qpos1 = row_values(&t, q, n, 1.0f, false);
        } else {
            if (in->hist_len > 0)
                hist_spans(&t, q, in->hist_lens, n, in->pos, in->hist_len, &io);
            else
                io.step_mask = step_mask(&t, q, n, in->pos);
        }
    } else {
        pe = positions(&t, in->pos, 1);
    }
    x = mt_add(g, mt_scale(g, x, sqrtf((float)d)), pe);
    (void)enc; /* the state holds the contexts' keys, values and masks */
    for (int j = 0; in->ctx_lens && j < in->n_ctx && j < MT_MAX_STREAMS; j++) {
        int32_t stack[4096];
        int32_t *sp = n <= 2048 ? stack : tmp_alloc(&t, (size_t)(2 * n) * sizeof(int32_t));
        if (sp == NULL) break;
        memcpy(sp, in->ctx_lens + (size_t)j * (size_t)n, sizeof(int32_t) * (size_t)n);
        memset(sp + n, 0, sizeof(int32_t) * (size_t)n);
        io.ctx_spans[j] = mt_input_i32(g, mt_shape2(2, n), sp);
        if (sp != stack) mt_free(sp);
    }
    x = decoder_stack(&t, NULL, x, &io);
    /* beam 1: each row's argmax from the GEMM's epilogue where it can */
    /* beam > 1: each row's top-k from the GEMM where it can */
    mt_node *logits =
        output_layer_ex(&t, mt_reshape(g, x, mt_shape2(n, d)), in->shortlist, in->argmax_skip,
                        in->argmax ? &out->argmax : NULL, in->topk, &out->topk);
    if (logits) {
        bool raw = in->logits_only || in->argmax || in->topk > 0;
        out->logprobs = raw ? logits : mt_log_softmax(g, logits);
    }
    if (io.align) out->align = mt_reshape(g, io.align, mt_shape2(n, dim_of(io.align, -1)));
    st.pos = in->pos + 1;
    mt_dec_state_end_step(&st);
    mt_status rc = tf_finish(&t);
    if (rc != MT_OK) {
        memset(out, 0, sizeof *out);
        return rc;
    }
    *next = st;
    return MT_OK;
}

/* A zero (or value) block shaped as x except for axis, of length len, of
** x's dtype. */
static mt_node *fill_like(mt_graph *g, mt_node *x, int axis, int64_t len, float value) {
    mt_shape sh = mt_node_shape(x);
    sh.dim[axis] = len;
    if (mt_node_dtype(x) == MT_I8) { /* int8 keys: keys of value */
        return keys_q8(g, f32_keys_like(g, x, sh.dim[0], sh.dim[3], value));
    }
    return mt_cast(g, mt_constant(g, sh, value), mt_node_dtype(x));
}

/* x padded along axis to len with value. */
static mt_node *pad_to(mt_graph *g, mt_node *x, int axis, int64_t len, float value) {
    int64_t have = mt_node_shape(x).dim[axis];
    if (have >= len) return x;
    mt_node *parts[2] = {x, fill_like(g, x, axis, len - have, value)};
    return mt_concat(g, parts, 2, axis);
}

mt_status mt_transformer_append(const mt_model_config *c, mt_graph *g, const mt_dec_state *in,
                                const mt_dec_state *add, unsigned parts, mt_dec_state *out) {
    mt_dec_state st = *in;
    st.batch = in->batch + add->batch;
    st.row_pos = NULL;
    if (parts & MT_DEC_FIXED) {
        int nc = in->n_ctx;
        for (int j = 0; j < nc; j++) {
            int ms = mask_slot(c, nc, j);
            mt_node *ma = in->fixed[ms], *mb = add->fixed[ms];
            if (ma == NULL || mb == NULL)
                return mt_seterr(MT_ERR_INVALID, "transformer append: no mask of context %d", j);
            int64_t len = mt_node_shape(ma).dim[3] > mt_node_shape(mb).dim[3]
                              ? mt_node_shape(ma).dim[3]
                              : mt_node_shape(mb).dim[3];
            mt_node *m2[2] = {pad_to(g, ma, 3, len, MASK_NEG), pad_to(g, mb, 3, len, MASK_NEG)};
            st.fixed[ms] = mt_concat(g, m2, 2, 0);
            for (int i = 0; i < c->dec_depth; i++) {
                for (int kv = 0; kv < 2; kv++) {
                    int slot = 2 * (i * nc + j) + kv;
                    int axis = kv == 0 ? 3 : 1; /* keys [B, H, D/H, S], values [B, S, D] */
                    int64_t l = kv == 0 ? len : ctx_value_len(in->fixed[slot], len);
                    mt_node *x2[2] = {pad_to(g, in->fixed[slot], axis, l, 0.0f),
                                      pad_to(g, add->fixed[slot], axis, l, 0.0f)};
                    st.fixed[slot] = mt_concat(g, x2, 2, 0);
                }
            }
        }
    }
    if ((parts & MT_DEC_ROWS) && in->pos > 0) {
        int64_t extra = (int64_t)add->batch * in->beam;
        for (int r = 0; r < in->n_rows; r++) {
            if (in->rows[r] == NULL) continue;
            mt_node *x2[2] = {in->rows[r], fill_like(g, in->rows[r], 0, extra, 0.0f)};
            st.rows[r] = mt_concat(g, x2, 2, 0);
        }
    }
    mt_status rc = mt_graph_status(g);
    if (rc == MT_OK) *out = st;
    return rc;
}

mt_status mt_transformer_trim(const mt_model_config *c, mt_graph *g, const mt_dec_state *in,
                              int32_t n, mt_dec_state *out) {
    mt_dec_state st = *in;
    st.pos = in->pos - n;
    if (n > 0 && !is_aan(c)) { /* AAN rows are running means: nothing per position */
        for (int r = 0; r < in->n_rows; r++) {
            if (in->rows[r] == NULL) continue;
            st.rows[r] = st.pos == 0 ? NULL : mt_slice(g, in->rows[r], 2, n, st.pos);
        }
    }
    if (st.pos == 0)
        for (int r = 0; r < in->n_rows; r++)
            st.rows[r] = NULL;
    mt_status rc = mt_graph_status(g);
    if (rc == MT_OK) *out = st;
    return rc;
}

mt_status mt_transformer_fit_contexts(const mt_model_config *c, mt_graph *g, const mt_dec_state *in,
                                      const int32_t *len, mt_dec_state *out) {
    mt_dec_state st = *in;
    int nc = in->n_ctx;
    for (int j = 0; j < nc; j++) {
        int ms = mask_slot(c, nc, j);
        if (in->fixed[ms] == NULL || mt_node_shape(in->fixed[ms]).dim[3] <= len[j]) continue;
        st.fixed[ms] = mt_slice(g, in->fixed[ms], 3, 0, len[j]);
        for (int i = 0; i < c->dec_depth; i++) {
            for (int kv = 0; kv < 2; kv++) {
                int slot = 2 * (i * nc + j) + kv;
                /* keys [B, H, D/H, S], values [B, S, D] (bfloat16 pairs: ctx_key_pairs) */
                st.fixed[slot] =
                    mt_slice(g, in->fixed[slot], kv == 0 ? 3 : 1, 0,
                             kv == 0 ? len[j] : ctx_value_len(in->fixed[slot], len[j]));
            }
        }
    }
    mt_status rc = mt_graph_status(g);
    if (rc == MT_OK) *out = st;
    return rc;
}

bool mt_transformer_can_fold(const mt_model_config *c, const mt_params *p) {
    if (is_aan(c)) return false;
    /* Marian intgemm8 models keep raw inputs and project them all at each
    ** step (self_step_requant): nothing to gain from a frozen history */
    char name[160];
    for (int i = 0; i < c->dec_depth; i++) {
        snprintf(name, sizeof name, "decoder_l%d_self", layer_no(c, i));
        if (self_requant(p, name)) return false;
    }
    return true;
}

/* The cache slot's a fold writes in one op (mt_pack_rows_kt): keys (even
** slots), recent rows in f32 into an f16 history, where the device has the
** op vectorized. */
static bool fold_keys_in_one(mt_graph *g, bool keys, const mt_node *rec, mt_dtype want) {
    return keys && rec && want == MT_F16 && mt_node_dtype(rec) == MT_F32 &&
           mt_pack_rows_kt_supported(g);
}

/* The dtype a fold keeps cache slot r in: the history's, else int8 keys
** where the graph asks for them (mt_graph_kv_keys_i8; rec: the positions
** since, [N, H, Lb, dk]), else f16 or f32 as the graph keeps caches. */
static mt_dtype fold_dtype(mt_graph *g, bool keys, const mt_node *h, const mt_node *rec) {
    if (h) return mt_node_dtype(h);
    if (keys && rec && mt_graph_kv_keys_i8(g, mt_node_shape(rec).dim[3])) return MT_I8;
    return mt_graph_kv_f16(g) ? MT_F16 : MT_F32;
}

/* mt_transformer_fold of rows at their own positions: each row's history
** positions (hist_lens) and its positions since (the last ones of the
** rows' caches) packed from the left, in the history's dtype. */
static mt_status fold_rows(mt_graph *g, const mt_dec_state *in, mt_dec_state *out) {
    mt_dec_state st = *in;
    int64_t n = (int64_t)in->batch * in->beam, t = in->pos - in->hist_len, top = 0;
    int32_t *buf = mt_try_malloc(sizeof(int32_t) * (size_t)(2 * n + 1));
    if (buf == NULL) return mt_seterr(MT_ERR_NOMEM, "transformer fold: out of memory");
    int32_t *hl = buf, *first = buf + n;
    for (int64_t r = 0; r < n; r++) {
        hl[r] = in->hist_len > 0 ? in->hist_lens[r] : 0;
        int64_t since = in->row_pos[r] - hl[r]; /* the row's positions since the history */
        if (hl[r] < 0 || hl[r] > in->hist_len || since < 0 || since > t ||
            (hl[r] > 0 && since != t)) {
            mt_free(buf);
            return mt_seterr(MT_ERR_INVALID,
                             "transformer fold: row %lld has %d positions, %d of them of a "
                             "history of %d, and %lld since",
                             (long long)r, (int)in->row_pos[r], (int)hl[r], (int)in->hist_len,
                             (long long)t);
        }
        first[r] = (int32_t)(t - since);
        top = in->row_pos[r] > top ? in->row_pos[r] : top;
    }
    mt_node *nfirst = mt_input_i32(g, mt_shape1(n), first);
    mt_node *nhl = in->hist_len > 0 ? mt_input_i32(g, mt_shape1(n), hl) : NULL;
    mt_free(buf);
    for (int r = 0; r < in->n_rows; r++) {
        bool keys = r % 2 == 0; /* keys transposed: [N, H, D/H, positions] */
        mt_node *h = in->hist_len > 0 ? in->hist[r] : NULL, *rec = in->rows[r];
        if (rec == NULL && h == NULL) continue;
        mt_dtype want = fold_dtype(g, keys, h, rec);
        if (want == MT_I8) { /* int8 keys: the history's units, the new keys quantized */
            st.hist[r] = mt_pack_rows_kq(g, h, in->hist_ids, nhl,
                                         rec ? rec : f32_keys_like(g, h, n, 0, 0.0f), NULL, nfirst,
                                         top); /* rec NULL: no positions since */
            st.rows[r] = NULL;
            continue;
        }
        if (rec == NULL) { /* no positions since: an empty block */
            mt_shape sh = mt_node_shape(h);
            sh.dim[0] = n;
            sh.dim[keys ? 3 : 2] = 0;
            rec = mt_cast(g, mt_constant(g, sh, 0.0f), want);
        } else if (fold_keys_in_one(g, keys, rec, want)) { /* transposed, rounded, packed */
            st.hist[r] = mt_pack_rows_kt(g, h, in->hist_ids, nhl, rec, NULL, nfirst, top);
            st.rows[r] = NULL;
            continue;
        } else {
            if (keys) rec = swap_kt(g, rec);
            rec = mt_cast(g, rec, want);
        }
        st.hist[r] = mt_pack_rows(g, h, in->hist_ids, nhl, rec, NULL, nfirst, keys ? 3 : 2, top);
        st.rows[r] = NULL;
    }
    st.pos = st.hist_len = (int32_t)top;
    st.hist_ids = NULL;
    st.hist_lens = NULL;
    st.row_pos = NULL;
    mt_status rc = mt_graph_status(g);
    if (rc == MT_OK) *out = st;
    return rc;
}

mt_status mt_transformer_fold(const mt_model_config *c, mt_graph *g, const mt_dec_state *in,
                              bool freeze, mt_dec_state *out) {
    if (freeze && in->row_pos) return fold_rows(g, in, out);
    mt_dec_state st = *in;
    for (int r = 0; r < in->n_rows; r++) {
        /* the history's keys (even slots) are transposed: [N, H, D/H, hist_len],
        ** and in f16 where the graph keeps such caches so (kv_store) */
        bool keys = r % 2 == 0;
        mt_node *all = in->rows[r];
        mt_node *hr = in->hist_len > 0 ? in->hist[r] : NULL;
        mt_dtype want = fold_dtype(g, keys, hr, all);
        if (freeze && want == MT_I8) { /* int8 keys: the history's units, the new keys quantized */
            /* no positions since (all NULL): the history's rows, by hist_ids */
            mt_node *b =
                all ? all : f32_keys_like(g, hr, mt_node_shape(in->hist_ids).dim[0], 0, 0.0f);
            st.hist[r] =
                mt_pack_rows_kq(g, hr, hr ? in->hist_ids : NULL, NULL, b, all ? in->row_ids : NULL,
                                NULL, (hr ? in->hist_len : 0) + mt_node_shape(b).dim[2]);
            st.rows[r] = NULL;
            continue;
        }
        if (freeze && fold_keys_in_one(g, keys, all, want)) { /* transposed, rounded, packed */
            st.hist[r] = mt_pack_rows_kt(g, hr, hr ? in->hist_ids : NULL, NULL, all, in->row_ids,
                                         NULL, (hr ? in->hist_len : 0) + mt_node_shape(all).dim[2]);
            st.rows[r] = NULL;
            continue;
        }
        /* the rows of a pending selection: picked by the pack, or first */
        bool packed = freeze && hr && all;
        if (in->row_ids && all && !packed) all = mt_index_select(g, all, 0, in->row_ids);
        if (keys && all && freeze) all = swap_kt(g, all); /* a node of g */
        if (all && freeze) all = mt_cast(g, all, want);
        if (packed) {
            /* the history's rows by hist_ids, then the positions since, in
            ** one copy (not a selected copy of the history, then the concat) */
            int axis = keys ? 3 : 2;
            all = mt_pack_rows(g, in->hist[r], in->hist_ids, NULL, all, in->row_ids, NULL, axis,
                               in->hist_len + mt_node_shape(all).dim[axis]);
        } else if (in->hist_len > 0 && in->hist[r]) {
            mt_node *h = mt_index_select(g, in->hist[r], 0, in->hist_ids);
            if (!freeze) h = as_f32(g, h);
            if (keys && !freeze) h = swap_kt(g, h);
            mt_node *parts[2] = {h, all};
            all = all ? mt_concat(g, parts, 2, 2) : h;
        } else if (all &&
                   all == in->rows[r]) { /* a node of g in any case: in may view another graph */
            all = mt_scale(g, all, 1.0f);
        }
        st.rows[r] = freeze ? NULL : all;
        st.hist[r] = freeze ? all : NULL;
    }
    st.hist_len = freeze ? in->pos : 0;
    st.hist_ids = NULL;
    st.row_ids = NULL;
    (void)c;
    mt_status rc = mt_graph_status(g);
    if (rc == MT_OK) *out = st;
    return rc;
}

/* ------------------------------------------------- parameter creation */

mt_status mt_transformer_touch_params(const mt_model_config *c, mt_params *p, mt_device *dev,
                                      bool check) {
    mt_graph_params gp = mt_graph_default_params();
    gp.workspace_bytes = 1 << 16;
    gp.node_arena_bytes = 1 << 16;
    gp.training = false;
    gp.memoize = false;
    mt_graph *g = NULL;
    mt_batch *b = NULL;
    int n = n_encoders(c);
    int32_t lens[MT_MAX_STREAMS] = {1, 1, 1, 1};
    mt_status rc = mt_graph_init(dev, gp, &g);
    if (rc == MT_OK) rc = mt_batch_alloc(n, 1, lens, 1, &b);
    if (rc != MT_OK) goto done;
    for (int s = 0; s < n; s++)
        b->src_mask[s][0] = 1.0f;
    b->trg_mask[0] = 1.0f;
    b->trg_words = 1;
    /* the whole model once, parameters in Marian's build order */
    tf t;
    tf_init(&t, c, p, g);
    t.check = check;
    mt_model_encoding enc = {.batch = 1, .n = n};
    for (int j = 0; j < n; j++)
        encode_stream(&t, b, j, j, &enc.c[j]);
    dec_io io = {.b = 1, .k = 1, .tq = 1, .pos = -1};
    emb_table(&t, "decoder", c->dim_vocabs[c->n_vocabs - 1]);
    mt_node *x = mt_constant(g, mt_shape3(1, 1, t.d), 0.0f);
    if (is_aan(c))
        io.avg_mat = mt_constant(g, mt_shape3(1, 1, 1), 1.0f);
    else
        io.self_mask = mt_constant(g, mt_shape4(1, 1, 1, 1), 0.0f);
    x = decoder_stack(&t, &enc, x, &io);
    output_layer(&t, x, NULL);
    if (t.rc != MT_OK) {
        rc = mt_seterr(t.rc, "%s", t.err);
    } else {
        rc = mt_graph_status(g);
    }
done:
    mt_batch_free(b);
    mt_graph_free(g);
    return rc;
}
