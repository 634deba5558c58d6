/*
** ops_gemm_int.c: products with a constant weight on the integer path, and
** the auto-tuner (mt_gemm_type in mt.h).  Inference only: no backward.
**
** mt_matmul(a, B, false, tb) and mt_affine(a, B, bias) come here first
** (graph_gemm_const_b).  When the path applies they build two nodes:
**
**   pack      P = packed op(B) [k, n]: int8 panels (kcpu layout, "KQ08"
**             header) at byte 0 and/or int16 panels ("KQ16") at byte off16
**             (64-aligned), as an int8 byte vector.  When B is a parameter
**             the pack is made once at build time and shared by every graph
**             and thread (params_pack_ref; a new one after the parameters
**             change), and P is a leaf viewing it.  Other constant B: P is a
**             memo node of B, computed by the first forward, kept across
**             clears (graph.c).  From f32 B the multiplier is
**             127 / max|B| (int8) or 2^10 (int16); from a pre-quantized
**             parameter, the parameter's own values and multiplier.
**   gemm_q    C[rows, n] = dequant(quant(A) . P) (+ bias): A [..., M, K]
**             with rows = all leading dims times M; C has A's leading shape
**             with n columns.  Sources {A, P} then, in AUTO mode, the f32 B,
**             then the bias.  The activation scratch (quantized A) is
**             reserved at build time (graph_node_aux), so forward allocates
**             nothing.  Error bound: kcpu.h "integer GEMM".
**
** Auto-tuner (gemm_type AUTO; WNMT 2018 sec. 4.4).  The graph owns a table
** of entries keyed by (row bucket, n, k, trans_b); buckets are powers of
** two, 1, 2, 3-4, 5-8, ..., so every product of a bucket has the same
** alternatives (the own fp32 kernel only up to 16 rows).  Entries are made
** by the builders (a new shape allocates at build time, never in forward).
** Until an entry is decided, each call runs the available variant with the
** fewest timed samples (a rotation: all variants see the same mix of row
** counts) and records its time per row; once every variant has
** gemm_tune_samples samples, the one with the lowest best time per row
** wins for good.  A test can pin one variant (mt_gemm_pin_for_tests, read
** when a graph's table is created): it decides every entry at once (SMALL
** falls back to BLAS above 16 rows).  Timing uses the host clock around the
** kernel call: CPU device only (the others have no igemm entry, so AUTO is
** fp32 there).
*/
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph_impl.h"
#include "params_impl.h"
#include "test_hooks.h"

#define DEFAULT_SAMPLES 4

/* ------------------------------------------------------------------ names */

const char *mt_gemm_type_name(mt_gemm_type t) {
    switch (t) {
    case MT_GEMM_FLOAT32: return "float32";
    case MT_GEMM_INT16: return "int16";
    case MT_GEMM_INT8: return "int8";
    case MT_GEMM_AUTO: return "auto";
    default: return "?";
    }
}

mt_status mt_gemm_type_parse(const char *s, mt_gemm_type *out) {
    static const struct {
        const char *name;
        mt_gemm_type t;
    } tab[] = {{"float32", MT_GEMM_FLOAT32}, {"fp32", MT_GEMM_FLOAT32}, {"int16", MT_GEMM_INT16},
               {"intgemm16", MT_GEMM_INT16}, {"int8", MT_GEMM_INT8},    {"intgemm8", MT_GEMM_INT8},
               {"auto", MT_GEMM_AUTO}};
    for (size_t i = 0; s != NULL && i < sizeof tab / sizeof tab[0]; i++) {
        if (strcmp(s, tab[i].name) == 0) {
            *out = tab[i].t;
            return MT_OK;
        }
    }
    return mt_seterr(MT_ERR_INVALID, "unknown gemm type '%s' (float32, int16, int8 or auto)",
                     s ? s : "(null)");
}

const char *mt_gemm_variant_name(mt_gemm_variant v) {
    switch (v) {
    case MT_GEMM_BLAS: return "blas";
    case MT_GEMM_SMALL: return "small";
    case MT_GEMM_I16: return "int16";
    case MT_GEMM_I8: return "int8";
    default: return "?";
    }
}

/* ------------------------------------------------------------------ tuner */

typedef struct tune_entry {
    int64_t m_hi, n, k;
    bool tb;
    unsigned avail; /* bit v: variant v can run this shape */
    bool decided, pinned;
    int chosen;
    int samples[MT_GEMM_VARIANTS];
    double best_ns[MT_GEMM_VARIANTS]; /* per row, best sample */
    int64_t calls;
} tune_entry;

/* Column selections of packed weights kept across rounds (pack_sel): a
** search asks for the same shortlist at every step. */
enum { SEL_SLOTS = 2 };
typedef struct sel_slot {
    uint64_t serial; /* memo serial of the whole pack; 0: empty */
    int64_t n_sel;
    int32_t *ids;
    void *packed;
    size_t cap; /* bytes of packed */
    uint64_t used;
} sel_slot;

struct gemm_tuner {
    int refs; /* graphs using it (mt_graph_share_gemm_state) */
    tune_entry *e;
    int n, cap;
    int pin; /* variant pinned by mt_gemm_pin_for_tests, -1 none */
    int samples;
    sel_slot sel[SEL_SLOTS];
    uint64_t sel_clock;
    int64_t sel_fills; /* selections made (mt_graph_gemm_selections) */
    mt_device *dev;    /* of the sel buffers */
};

/* Releases a graph's use; the last one frees it. */
void gemm_tuner_free(struct gemm_tuner *t) {
    if (t == NULL || --t->refs > 0) return;
    for (int i = 0; i < SEL_SLOTS; i++) {
        mt_free(t->sel[i].ids);
        if (t->sel[i].packed) t->dev->ops->free(t->dev, t->sel[i].packed);
    }
    mt_free(t->e);
    mt_free(t);
}

static atomic_int gemm_pin = -1;

void mt_gemm_pin_for_tests(int variant) {
    atomic_store(&gemm_pin, variant >= 0 && variant < MT_GEMM_VARIANTS ? variant : -1);
}

static struct gemm_tuner *tuner_get(mt_graph *g) {
    struct gemm_tuner **tp = graph_tuner(g);
    if (*tp == NULL) {
        struct gemm_tuner *t = mt_try_calloc(1, sizeof *t);
        if (t == NULL) return NULL;
        t->refs = 1;
        t->pin = atomic_load(&gemm_pin);
        int s = graph_params(g)->decode.gemm_tune_samples;
        t->samples = s > 0 ? s : DEFAULT_SAMPLES;
        *tp = t;
    }
    return *tp;
}

static int64_t bucket_hi(int64_t rows) {
    int64_t b = 1;
    while (b < rows)
        b *= 2;
    return b;
}

/* Index of the entry for this shape (created when new), -1 when out of memory. */
static int tuner_slot(mt_graph *g, int64_t rows, int64_t n, int64_t k, bool tb) {
    struct gemm_tuner *t = tuner_get(g);
    if (t == NULL) return -1;
    int64_t hi = bucket_hi(rows);
    for (int i = 0; i < t->n; i++) {
        const tune_entry *e = &t->e[i];
        if (e->m_hi == hi && e->n == n && e->k == k && e->tb == tb) return i;
    }
    if (t->n == t->cap) {
        int cap = t->cap ? t->cap * 2 : 32;
        tune_entry *ne = mt_try_realloc(t->e, (size_t)cap * sizeof *ne);
        if (ne == NULL) return -1;
        t->e = ne;
        t->cap = cap;
    }
    tune_entry *e = &t->e[t->n];
    memset(e, 0, sizeof *e);
    e->m_hi = hi;
    e->n = n;
    e->k = k;
    e->tb = tb;
    const mt_device_ops *ops = graph_ops(g);
    mt_device *d = graph_device(g);
    for (int v = 0; v < MT_GEMM_VARIANTS; v++) {
        bool ok = v >= MT_GEMM_I16 || (ops->gemm_f32_has && ops->gemm_f32_has(d, v, hi, false));
        if (ok) e->avail |= 1u << v;
    }
    if (t->pin >= 0) {
        int v = t->pin;
        if (!(e->avail & (1u << v))) v = MT_GEMM_BLAS;
        e->decided = e->pinned = true;
        e->chosen = v;
    }
    return t->n++;
}

/* The variant to run now: the decision, or the next one to time. */
static int tuner_pick(const tune_entry *e) {
    if (e->decided) return e->chosen;
    int best = -1;
    for (int v = 0; v < MT_GEMM_VARIANTS; v++) {
        if (!(e->avail & (1u << v))) continue;
        if (best < 0 || e->samples[v] < e->samples[best]) best = v;
    }
    return best;
}

static void tuner_record(tune_entry *e, int samples, int v, double ns, int64_t rows) {
    double per_row = ns / (double)(rows > 0 ? rows : 1);
    if (e->samples[v] == 0 || per_row < e->best_ns[v]) e->best_ns[v] = per_row;
    e->samples[v]++;
    for (int u = 0; u < MT_GEMM_VARIANTS; u++) {
        if ((e->avail & (1u << u)) && e->samples[u] < samples) return;
    }
    int best = -1;
    for (int u = 0; u < MT_GEMM_VARIANTS; u++) {
        if (!(e->avail & (1u << u))) continue;
        if (best < 0 || e->best_ns[u] < e->best_ns[best]) best = u;
    }
    e->chosen = best;
    e->decided = true;
}

mt_status mt_graph_share_gemm_state(mt_graph *g, mt_graph *from) {
    if (g == NULL || from == NULL)
        return mt_seterr(MT_ERR_INVALID, "mt_graph_share_gemm_state: NULL graph");
    if (graph_device(g) != graph_device(from))
        return mt_seterr(MT_ERR_INVALID, "mt_graph_share_gemm_state: graphs on two devices");
    struct gemm_tuner *t = tuner_get(from), **tp = graph_tuner(g);
    if (t == NULL) return mt_seterr(MT_ERR_NOMEM, "mt_graph_share_gemm_state: out of memory");
    if (*tp != t) {
        gemm_tuner_free(*tp);
        t->refs++;
        *tp = t;
    }
    return MT_OK;
}

int64_t mt_graph_gemm_selections(const mt_graph *g) {
    const struct gemm_tuner *t = graph_tuner_const(g);
    return t ? t->sel_fills : 0;
}

int mt_graph_gemm_decisions(const mt_graph *g, mt_gemm_decision *out, int max) {
    const struct gemm_tuner *t = graph_tuner_const(g);
    if (t == NULL) return 0;
    for (int i = 0; i < t->n && i < max; i++) {
        const tune_entry *e = &t->e[i];
        mt_gemm_decision *o = &out[i];
        memset(o, 0, sizeof *o);
        o->m_hi = e->m_hi;
        o->m_lo = e->m_hi == 1 ? 1 : e->m_hi / 2 + 1;
        o->n = e->n;
        o->k = e->k;
        o->trans_b = e->tb;
        o->decided = e->decided;
        o->pinned = e->pinned;
        o->chosen = (mt_gemm_variant)e->chosen;
        for (int v = 0; v < MT_GEMM_VARIANTS; v++)
            o->ns_per_row[v] = e->samples[v] ? e->best_ns[v] : 0.0;
        o->calls = e->calls;
    }
    return t->n;
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ------------------------------------------------------------------------
** pack:  P = packed op(B)          attrs i = {k, n, tb, formats, off16}
**   formats bit 0: int8 panels at byte 0; bit 1: int16 panels at off16.
**   B f32 [k, n] ([n, k] when tb), or a pre-quantized int8/int16 parameter
**   (one format, its own).  Not differentiable (inference only).
*/
enum { FMT_I8 = 1, FMT_I16 = 2 };

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Packs B (f32, or a pre-quantized parameter) as attrs say into dst. */
static void pack_into(mt_graph *g, const mt_node *b, const mt_attrs *at, char *dst) {
    const mt_device_ops *ops = graph_ops(g);
    mt_device *d = graph_device(g);
    int64_t k = at->i[0], n = at->i[1];
    bool tb = at->i[2] != 0;
    int fmt = (int)at->i[3];
    int64_t ldb = tb ? k : n;
    if (b->val.dtype == MT_F32) {
        if (fmt & FMT_I8) ops->pack_f32(d, 8, k, n, node_f32(b), ldb, tb, dst);
        if (fmt & FMT_I16) ops->pack_f32(d, 16, k, n, node_f32(b), ldb, tb, dst + at->i[4]);
        return;
    }
    float qb = mt_params_qmult_at(b->params, b->param_index);
    int bits = b->val.dtype == MT_I8 ? 8 : 16;
    int64_t low = ops->pack_q(d, bits, k, n, b->val.data, ldb, tb, qb, dst);
    if (low > 0) {
        mt_log(MT_LOG_WARN, "int8 weight '%s': %lld values of -128 used as -127",
               mt_params_name(b->params, b->param_index), (long long)low);
    }
}

static mt_status pack_forward(mt_graph *g, mt_node *y) {
    pack_into(g, y->src[0], &y->attr, y->val.data);
    return MT_OK;
}

static const mt_op_def op_pack = {"gemm_pack", pack_forward, NULL};

typedef struct pack_job {
    mt_graph *g;
    const mt_node *b;
    const mt_attrs *at;
} pack_job;

static void pack_job_fill(void *ctx, void *dst) {
    const pack_job *j = ctx;
    pack_into(j->g, j->b, j->at, dst);
}

static bool is_param_leaf(const mt_node *b) { return b->params != NULL && b->n_src == 0; }

/* P for B: a parameter's pack is made once and shared by every graph and
** thread (params_pack_ref; the graph views it until its next clear), other
** constants' packs are memo nodes of this graph. */
static mt_node *build_pack(mt_graph *g, mt_node *b, int64_t k, int64_t n, bool tb, int fmt,
                           int64_t *off16) {
    const mt_device_ops *ops = graph_ops(g);
    mt_device *d = graph_device(g);
    size_t bytes = 0;
    *off16 = 0;
    if (fmt & FMT_I8) bytes = align64(ops->pack_bytes(d, 8, k, n));
    if (fmt & FMT_I16) {
        *off16 = (int64_t)bytes;
        bytes += align64(ops->pack_bytes(d, 16, k, n));
    }
    mt_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = k;
    at.i[1] = n;
    at.i[2] = tb;
    at.i[3] = fmt;
    at.i[4] = *off16;
    if (is_param_leaf(b) && b->val.data != NULL) {
        pack_job job = {g, b, &at};
        uint64_t serial = 0;
        const void *data = params_pack_ref(b->params, b->param_index, (uint64_t)(fmt * 2 + tb),
                                           bytes, d, pack_job_fill, &job, &serial);
        if (data == NULL) {
            return graph_fail(g, MT_ERR_NOMEM, "cannot allocate %zu bytes for packed weight '%s'",
                              bytes, mt_params_name(b->params, b->param_index));
        }
        if (!graph_hold_pack(g, b->params, data, serial)) return NULL;
        mt_tensor t = {mt_shape1((int64_t)bytes), MT_I8, (void *)data, d, false};
        return mt_tensor_node(g, &t);
    }
    mt_node *src[1] = {b};
    return graph_push(g, &op_pack, mt_shape1((int64_t)bytes), MT_I8, 1, src, &at);
}

/* ------------------------------------------------------------------------
** pack_sel:  the columns ids (i32 [n'], each in [0, n)) of a packed B (one
**   format: int8 or int16), packed (a shortlist); attrs i = {n', n, kept}.
**   kept: B's pack has a serial, so the selection lives in the tuner's
**   cache (sel_cached) and the node's own value is a placeholder of 64
**   bytes: a decoding step of a batch finds its shortlist's columns there
**   without allocating (and faulting in) a packed copy per step.
*/
static const mt_op_def op_pack_sel;

/* The slot holding these columns of the pack with memo serial `serial`,
** or NULL (*lru: the least recently used slot; NULL when the selection
** cannot be kept: no memo serial, out of memory). */
static sel_slot *sel_find(mt_graph *g, uint64_t serial, int64_t n_sel, const int32_t *ids,
                          sel_slot **lru_out) {
    struct gemm_tuner *t = serial ? tuner_get(g) : NULL;
    *lru_out = NULL;
    if (t == NULL) return NULL;
    t->sel_clock++;
    sel_slot *lru = &t->sel[0];
    for (int i = 0; i < SEL_SLOTS; i++) {
        sel_slot *z = &t->sel[i];
        if (z->serial == serial && z->n_sel == n_sel &&
            memcmp(z->ids, ids, sizeof(int32_t) * (size_t)n_sel) == 0) {
            z->used = t->sel_clock;
            return z;
        }
        if (z->used < lru->used) lru = z;
    }
    *lru_out = lru;
    return NULL;
}

/* Fills slot lru with these (checked) columns of the pack src with memo
** serial `serial`; returns its packed bytes, or NULL when it cannot be kept
** (another device, out of memory). */
static const void *sel_fill(mt_graph *g, sel_slot *lru, uint64_t serial, const void *src,
                            int64_t n_sel, const int32_t *ids, size_t bytes) {
    struct gemm_tuner *t = tuner_get(g);
    mt_device *d = graph_device(g);
    if (t->dev == NULL) t->dev = d;
    if (t->dev != d) return NULL;
    lru->serial = 0;
    if (lru->cap < bytes) {
        if (lru->packed) d->ops->free(d, lru->packed);
        lru->packed = d->ops->alloc(d, bytes);
        lru->cap = lru->packed ? bytes : 0;
    }
    int32_t *nid = mt_try_realloc(lru->ids, sizeof(int32_t) * (size_t)n_sel);
    if (nid) lru->ids = nid;
    if (lru->packed == NULL || nid == NULL) return NULL;
    memcpy(lru->ids, ids, sizeof(int32_t) * (size_t)n_sel);
    graph_ops(g)->pack_select(d, src, n_sel, ids, lru->packed);
    t->sel_fills++;
    lru->serial = serial;
    lru->n_sel = n_sel;
    lru->used = t->sel_clock;
    return lru->packed;
}

/* A kept selection is found by its ids (checked when it was filled), so a
** decoding step of the batch reads them once (memcmp) and checks nothing. */
static mt_status pack_sel_forward(mt_graph *g, mt_node *y) {
    const mt_node *p = y->src[0], *ids = y->src[1];
    int64_t n_sel = y->attr.i[0], n = y->attr.i[1];
    const int32_t *c = node_i32(ids);
    size_t bytes = (size_t)y->attr.i[3];
    uint64_t serial = graph_pack_serial(g, p);
    sel_slot *lru, *z = sel_find(g, serial, n_sel, c, &lru);
    const void *hit = z ? z->packed : NULL;
    if (hit == NULL) {
        for (int64_t j = 0; j < n_sel; j++) {
            if (c[j] < 0 || c[j] >= n)
                return mt_seterr(MT_ERR_INVALID, "gemm_pack_select: column %d of %lld", (int)c[j],
                                 (long long)n);
        }
        if (lru) hit = sel_fill(g, lru, serial, p->val.data, n_sel, c, bytes);
    }
    y->aux = (void *)hit; /* read by gemm_q instead of the value; not the graph's memory */
    y->aux_bytes = 0;
    if (hit == NULL && y->attr.i[2])
        return mt_seterr(MT_ERR_NOMEM,
                         "gemm_pack_select: no memory to keep %lld columns (%zu bytes)",
                         (long long)n_sel, bytes);
    if (hit == NULL) graph_ops(g)->pack_select(graph_device(g), p->val.data, n_sel, c, y->val.data);
    return MT_OK;
}

/* The packed bytes of gemm_q's source P: a kept selection, or its value. */
static const char *packed_of(const mt_node *p) {
    return p->op == &op_pack_sel && p->aux != NULL ? p->aux : p->val.data;
}

static const mt_op_def op_pack_sel = {"gemm_pack_select", pack_sel_forward, NULL};

/* ------------------------------------------------------------------------
** gemm_q:  C[rows, n] = A[rows, k] . op(B) (+ bias), by variant
**   attrs i = {rows, k, n, tb, mode, slot, off16,
**              b_idx | bias_idx << 4 | relu << 8 | res_idx << 16}
**   relu (mt_affine_relu): max(., 0) after the bias, in the integer kernels'
**   epilogue (an fp32 variant of the tuner: a pass over C after the product);
**   the int8 variant also measures max|C| there into the node's amax (a
**   feed-forward layer's first product: the second, whose A has amax, takes
**   it instead of a pass over A).
**   res (mt_affine_add): + a residual [rows, n] after the bias, in the
**   epilogue (fp32 variants: a pass over C).
**   mode: an mt_gemm_variant, or -1 = tuned (slot = the tuner entry).
**   src: {A, P, [B f32: AUTO only], [bias], [res]}.  aux: the activation
**   scratch.
*/
/* ------------------------------------------------------------------------
** gemm_quant_a: A [rows, k] quantized for the integer products that share
**   it (igemm_quant): bytes [64 + igemm_scratch_bytes]: qa (float) at 0,
**   the kernels' activation scratch from byte 64.  attrs i = {bits, rows,
**   k}.  src: {A}.
*/
enum { QA_HDR = 64 };

static mt_status quant_a_forward(mt_graph *g, mt_node *y) {
    float qa =
        graph_ops(g)->igemm_quant(graph_device(g), (int)y->attr.i[0], y->attr.i[1], y->attr.i[2],
                                  node_f32(y->src[0]), y->attr.i[2], (char *)y->val.data + QA_HDR);
    memcpy(y->val.data, &qa, sizeof qa);
    return MT_OK;
}

static const mt_op_def op_gemm_quant_a = {"gemm_quant_a", quant_a_forward, NULL};

/* The quantized A of a product in mode I8/I16 where mt_gemm_share_input
** made one for it (not yet computed), else NULL: the product quantizes A
** itself. */
static mt_node *quant_a_of(mt_graph *g, const mt_node *a, int bits) {
    const mt_device_ops *ops = graph_ops(g);
    if (ops->igemm_quant == NULL || ops->igemm_prepared == NULL) return NULL;
    return graph_recent_node(g, &op_gemm_quant_a, a, bits, 96);
}

mt_node *mt_gemm_share_input(mt_graph *g, mt_node *a) {
    if (a == NULL || g == NULL || mt_graph_status(g) != MT_OK) return a;
    const mt_device_ops *ops = graph_ops(g);
    mt_gemm_type gt = graph_params(g)->decode.gemm_type;
    const mt_shape *sa = &a->val.shape;
    if ((gt != MT_GEMM_INT8 && gt != MT_GEMM_INT16) || !graph_memoizing(g) ||
        ops->igemm_quant == NULL || ops->igemm_prepared == NULL || a->val.dtype != MT_F32 ||
        sa->ndim < 2 || sa->dim[sa->ndim - 1] < 1)
        return a;
    int bits = gt == MT_GEMM_INT8 ? 8 : 16;
    if (quant_a_of(g, a, bits) != NULL) return a; /* made for an earlier product */
    int64_t k = sa->dim[sa->ndim - 1], rows = mt_shape_numel(sa) / k;
    mt_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = bits;
    at.i[1] = rows;
    at.i[2] = k;
    size_t bytes = QA_HDR + ops->igemm_scratch_bytes(graph_device(g), bits, rows, k);
    mt_node *src[1] = {a};
    graph_push(g, &op_gemm_quant_a, mt_shape1((int64_t)bytes), MT_I8, 1, src, &at);
    return a;
}

static void run_variant(mt_graph *g, mt_node *y, int v, int64_t rows, int64_t k, int64_t n, bool tb,
                        const float *bias) {
    const mt_device_ops *ops = graph_ops(g);
    mt_device *d = graph_device(g);
    const char *p = packed_of(y->src[1]);
    float *c = node_f32(y);
    bool relu = (y->attr.i[7] >> 8) & 1;
    int res_idx = (int)((y->attr.i[7] >> 16) & 15);
    const float *res = res_idx ? node_f32(y->src[res_idx]) : NULL;
    if (y->src[0]->op == &op_gemm_quant_a) { /* A quantized by its own node */
        char *qn = y->src[0]->val.data;
        float qa;
        memcpy(&qa, qn, sizeof qa);
        ops->igemm_prepared(d, v == MT_GEMM_I8 ? 8 : 16, rows, qn + QA_HDR, qa,
                            v == MT_GEMM_I8 ? p : p + y->attr.i[6], bias, relu, res, c, n);
        return;
    }
    const float *a = node_f32(y->src[0]);
    if (v == MT_GEMM_I8) {
        /* max|A| as its producer measured it; max|C| for the product after */
        float am = y->src[0]->has_amax ? y->src[0]->amax : -1.0f;
        ops->igemm(d, 8, rows, a, k, p, bias, relu, res, c, n, y->aux, am, relu ? &y->amax : NULL);
        y->has_amax = relu;
    } else if (v == MT_GEMM_I16) {
        ops->igemm(d, 16, rows, a, k, p + y->attr.i[6], bias, relu, res, c, n, y->aux, -1.0f, NULL);
    } else {
        const mt_node *b = y->src[y->attr.i[7] & 15];
        if (bias) ops->copy2d(d, rows, n, bias, 0, c, n, false);
        ops->gemm_f32_impl(d, v, false, tb, rows, n, k, 1.0f, a, k, node_f32(b), tb ? k : n,
                           bias ? 1.0f : 0.0f, c, n);
        if (relu) ops->unary_fwd(d, MT_UN_RELU, rows * n, 0.0f, c, c);
        if (res) ops->acc_f32(d, rows * n, res, c);
    }
}

static mt_status gemm_q_forward(mt_graph *g, mt_node *y) {
    int64_t rows = y->attr.i[0], k = y->attr.i[1], n = y->attr.i[2];
    bool tb = y->attr.i[3] != 0;
    int mode = (int)y->attr.i[4];
    int bias_idx = (int)((y->attr.i[7] >> 4) & 15);
    const float *bias = bias_idx ? node_f32(y->src[bias_idx]) : NULL;
    if (mode >= 0) {
        run_variant(g, y, mode, rows, k, n, tb, bias);
        return MT_OK;
    }
    struct gemm_tuner *t = *graph_tuner(g);
    MT_ASSERT(t != NULL && y->attr.i[5] < t->n);
    tune_entry *e = &t->e[y->attr.i[5]];
    int v = tuner_pick(e);
    e->calls++;
    if (e->decided || rows == 0) {
        run_variant(g, y, v, rows, k, n, tb, bias);
        return MT_OK;
    }
    double t0 = now_ns();
    run_variant(g, y, v, rows, k, n, tb, bias);
    tuner_record(e, t->samples, v, now_ns() - t0, rows);
    return MT_OK;
}

static const mt_op_def op_gemm_q = {"gemm_q", gemm_q_forward, NULL};

/* gemm_q_argmax: each row's argmax of gemm_q's C + skip as i32 [rows]
** (mt_matmul_cols_argmax; -1 where nothing is above -inf).  attrs as
** gemm_q's (mode int8 or int16), skip_idx << 12 in i[7].  src: {A, P,
** [bias], [skip]}.  aux: the rows' values, then the kernel's scratch. */
static mt_status gemm_q_argmax_forward(mt_graph *g, mt_node *y) {
    int64_t rows = y->attr.i[0], k = y->attr.i[1];
    int mode = (int)y->attr.i[4];
    int bias_idx = (int)((y->attr.i[7] >> 4) & 15), skip_idx = (int)((y->attr.i[7] >> 12) & 15);
    const char *p = packed_of(y->src[1]);
    if (mode == MT_GEMM_I16) p += y->attr.i[6];
    float *val = y->aux;
    int32_t *idx = (int32_t *)y->val.data;
    graph_ops(g)->igemm_argmax(
        graph_device(g), mode == MT_GEMM_I8 ? 8 : 16, rows, node_f32(y->src[0]), k, p,
        bias_idx ? node_f32(y->src[bias_idx]) : NULL, skip_idx ? node_f32(y->src[skip_idx]) : NULL,
        idx, val, (char *)y->aux + align64((size_t)rows * sizeof(float)));
    for (int64_t r = 0; r < rows; r++) /* the CPU device: host memory */
        if (!(val[r] > -INFINITY)) idx[r] = -1;
    return MT_OK;
}

static const mt_op_def op_gemm_q_argmax = {"gemm_q_argmax", gemm_q_argmax_forward, NULL};

/* gemm_q_topk: each row's k best log-softmax values of gemm_q's C and their
** columns as f32 [rows, 2k]: the values best first, then the columns (as
** floats: exact below 2^24; -1 where the row has fewer than k columns)
** (mt_matmul_cols_topk).  attrs as gemm_q's (mode int8 or int16), k in
** i[5] (the tuner's slot: fixed modes have none).  src: {A, P, [bias]}.
** aux: the indices, the values, then the kernel's scratch. */
static mt_status gemm_q_topk_forward(mt_graph *g, mt_node *y) {
    int64_t rows = y->attr.i[0];
    int mode = (int)y->attr.i[4];
    int32_t top = (int32_t)y->attr.i[5];
    int bias_idx = (int)((y->attr.i[7] >> 4) & 15);
    const char *p = packed_of(y->src[1]);
    if (mode == MT_GEMM_I16) p += y->attr.i[6];
    size_t part = align64((size_t)rows * (size_t)top * sizeof(int32_t));
    int32_t *idx = y->aux;
    float *logp = (float *)((char *)y->aux + part), *out = node_f32(y);
    graph_ops(g)->igemm_topk(
        graph_device(g), mode == MT_GEMM_I8 ? 8 : 16, rows, node_f32(y->src[0]), y->attr.i[1], p,
        bias_idx ? node_f32(y->src[bias_idx]) : NULL, top, idx, logp, (char *)y->aux + 2 * part);
    for (int64_t r = 0; r < rows; r++) /* the CPU device: host memory */
        for (int32_t j = 0; j < top; j++) {
            out[2 * top * r + j] = logp[top * r + j];
            out[2 * top * r + top + j] = (float)idx[top * r + j];
        }
    return MT_OK;
}

static const mt_op_def op_gemm_q_topk = {"gemm_q_topk", gemm_q_topk_forward, NULL};

/* ------------------------------------------------------------------ router */

/* What a product does besides C = A op(B) + bias (gemm_const_b; NULL:
** nothing): relu in the epilogue, a residual added there, or each row's
** argmax of C + skip (host [n'] or NULL) instead of C. */
typedef struct gemm_extra {
    bool relu;
    mt_node *res;
    bool argmax;
    const float *skip;
    int32_t topk; /* > 0: each row's topk best log-softmax values (gemm_q_topk) */
} gemm_extra;

static mt_node *gemm_const_b(mt_graph *g, mt_node *a, mt_node *b, mt_node *bias, bool trans_b,
                             mt_node *cols, const gemm_extra *x, bool *taken);

mt_node *graph_gemm_const_b(mt_graph *g, mt_node *a, mt_node *b, mt_node *bias, bool trans_b,
                            bool *taken) {
    return gemm_const_b(g, a, b, bias, trans_b, NULL, NULL, taken);
}

mt_node *mt_affine_relu(mt_graph *g, mt_node *x, mt_node *w, mt_node *b) {
    if (x == NULL || w == NULL || b == NULL) return NULL;
    bool taken = false;
    if (affine_fusable(x, w, b)) {
        gemm_extra ex = {.relu = true};
        mt_node *q = gemm_const_b(g, x, w, b, false, NULL, &ex, &taken);
        if (taken) return q;
    }
    return mt_relu(g, mt_affine(g, x, w, b));
}

/* The bias of mt_matmul_cols: float32 [n'] or [1, n'] (n' = the selected
** or all columns of op(B)); false after recording the error. */
static bool cols_bias_ok(mt_graph *g, mt_node *b, bool trans_b, mt_node *cols, mt_node *bias,
                         const char *op) {
    if (bias != NULL) {
        const mt_shape *sb = &b->val.shape;
        int64_t n = cols            ? (cols->val.shape.ndim == 1 ? cols->val.shape.dim[0] : -1)
                    : sb->ndim == 2 ? sb->dim[trans_b ? 0 : 1]
                                    : -1;
        if (bias->val.dtype != MT_F32 || n < 0 || mt_node_numel(bias) != n ||
            bias->val.shape.dim[bias->val.shape.ndim - 1] != n) {
            char s1[64], s2[64];
            graph_fail(g, MT_ERR_INVALID, "%s: bias %s %s for %s %s: need float32 [n'] or [1, n']",
                       op, mt_dtype_name(bias->val.dtype),
                       mt_shape_str(&bias->val.shape, s1, sizeof s1),
                       cols ? "columns" : "a product of",
                       mt_shape_str(cols ? &cols->val.shape : sb, s2, sizeof s2));
            return false;
        }
    }
    return true;
}

mt_node *mt_affine_add(mt_graph *g, mt_node *x, mt_node *w, mt_node *b, mt_node *res) {
    if (x == NULL || w == NULL || b == NULL || res == NULL) return NULL;
    bool taken = false;
    const mt_shape *sx = &x->val.shape, *sw = &w->val.shape;
    if (affine_fusable(x, w, b) && res->val.dtype == MT_F32 && !node_wants_grad(res) &&
        sw->ndim == 2) {
        mt_shape out = *sx;
        out.dim[out.ndim - 1] = sw->dim[1];
        if (mt_shape_eq(&out, &res->val.shape)) {
            gemm_extra ex = {.res = res};
            mt_node *q = gemm_const_b(g, x, w, b, false, NULL, &ex, &taken);
            if (taken) return q;
        }
    }
    return mt_add(g, mt_affine(g, x, w, b), res);
}

mt_node *mt_matmul_cols(mt_graph *g, mt_node *a, mt_node *b, bool trans_b, mt_node *cols,
                        mt_node *bias) {
    if (a == NULL || b == NULL) return NULL;
    if (!cols_bias_ok(g, b, trans_b, cols, bias, "mt_matmul_cols")) return NULL;
    bool taken = false;
    mt_node *q = gemm_const_b(g, a, b, bias, trans_b, cols, NULL, &taken);
    if (taken) return q;
    q = mt_matmul(g, a, cols ? mt_index_select(g, b, trans_b ? 0 : 1, cols) : b, false, trans_b);
    return bias ? mt_add(g, q, bias) : q;
}

mt_node *mt_matmul_cols_argmax(mt_graph *g, mt_node *a, mt_node *b, bool trans_b, mt_node *cols,
                               mt_node *bias, const float *skip) {
    if (a == NULL || b == NULL || g == NULL || mt_graph_status(g) != MT_OK) return NULL;
    if (!cols_bias_ok(g, b, trans_b, cols, bias, "mt_matmul_cols_argmax")) return NULL;
    gemm_extra ex = {.argmax = true, .skip = skip};
    bool taken = false;
    mt_node *y = gemm_const_b(g, a, b, bias, trans_b, cols, &ex, &taken);
    return taken ? y : NULL;
}

mt_node *mt_matmul_cols_topk(mt_graph *g, mt_node *a, mt_node *b, bool trans_b, mt_node *cols,
                             mt_node *bias, int32_t k) {
    if (a == NULL || b == NULL || g == NULL || mt_graph_status(g) != MT_OK) return NULL;
    if (k < 1) return graph_fail(g, MT_ERR_INVALID, "mt_matmul_cols_topk: k %d", (int)k);
    if (!cols_bias_ok(g, b, trans_b, cols, bias, "mt_matmul_cols_topk")) return NULL;
    gemm_extra ex = {.topk = k};
    bool taken = false;
    mt_node *y = gemm_const_b(g, a, b, bias, trans_b, cols, &ex, &taken);
    return taken ? y : NULL;
}

/* graph_gemm_const_b; cols (i32 [n'], or NULL): only those columns of op(B),
** from the packed B (fixed int8/int16 only: the tuner times whole products). */
static mt_node *gemm_const_b(mt_graph *g, mt_node *a, mt_node *b, mt_node *bias, bool trans_b,
                             mt_node *cols, const gemm_extra *x, bool *taken) {
    static const gemm_extra plain = {0};
    if (x == NULL) x = &plain;
    *taken = false;
    if (a == NULL || b == NULL) return NULL;
    const mt_device_ops *ops = graph_ops(g);
    const mt_shape *sa = &a->val.shape, *sb = &b->val.shape;
    bool quantized = b->val.dtype == MT_I8 || b->val.dtype == MT_I16;
    int mode;
    if (quantized) {
        if (!is_param_leaf(b) || mt_params_qmult_at(b->params, b->param_index) <= 0.0f) {
            return NULL; /* a plain integer tensor: the fp32 builder refuses it */
        }
        *taken = true;
        const char *name = mt_params_name(b->params, b->param_index);
        if (graph_is_training(g)) {
            return graph_fail(g, MT_ERR_INVALID,
                              "weight '%s' is quantized (%s): inference graphs only", name,
                              mt_dtype_name(b->val.dtype));
        }
        if (ops->igemm == NULL) {
            return graph_fail(g, MT_ERR_UNSUPPORTED,
                              "weight '%s' is quantized (%s): no integer GEMM on device %s", name,
                              mt_dtype_name(b->val.dtype), ops->name);
        }
        mode = b->val.dtype == MT_I8 ? MT_GEMM_I8 : MT_GEMM_I16;
    } else {
        mt_gemm_type gt = graph_params(g)->decode.gemm_type;
        if (gt == MT_GEMM_FLOAT32 || !graph_memoizing(g) || ops->igemm == NULL) return NULL;
        if (b->val.dtype != MT_F32 || !b->is_const || !(is_param_leaf(b) || b->is_memo)) {
            return NULL;
        }
        mode = gt == MT_GEMM_INT8 ? MT_GEMM_I8 : gt == MT_GEMM_INT16 ? MT_GEMM_I16 : -1;
    }
    if (a->val.dtype != MT_F32 || sa->ndim < 2 || sb->ndim != 2) {
        *taken = false; /* the fp32 builder reports it */
        return NULL;
    }
    int64_t k = sa->dim[sa->ndim - 1];
    int64_t kb = trans_b ? sb->dim[1] : sb->dim[0], n = trans_b ? sb->dim[0] : sb->dim[1];
    if (k != kb || k < 1 || n < 1) {
        *taken = false;
        return NULL;
    }
    if (cols != NULL && (mode < 0 || ops->pack_select == NULL || cols->val.dtype != MT_I32 ||
                         cols->val.shape.ndim != 1 || cols->val.shape.dim[0] < 1)) {
        *taken = false; /* the caller selects fp32 columns */
        return NULL;
    }
    if ((x->argmax && (mode < 0 || ops->igemm_argmax == NULL)) ||
        (x->topk > 0 && (mode < 0 || ops->igemm_topk == NULL))) {
        *taken = false; /* the caller takes the logits */
        return NULL;
    }
    *taken = true;
    int64_t rows = mt_shape_numel(sa) / k;
    int fmt = mode == MT_GEMM_I8 ? FMT_I8 : mode == MT_GEMM_I16 ? FMT_I16 : FMT_I8 | FMT_I16;
    int slot = 0;
    if (mode < 0) {
        slot = tuner_slot(g, rows, n, k, trans_b);
        if (slot < 0) return graph_fail(g, MT_ERR_NOMEM, "gemm auto-tuner: out of memory");
    }
    int64_t off16 = 0;
    mt_node *p = build_pack(g, b, k, n, trans_b, fmt, &off16);
    if (p == NULL) return NULL;
    if (cols != NULL) { /* the selected columns, packed (not memoized: ids change) */
        mt_attrs sat;
        memset(&sat, 0, sizeof sat);
        sat.i[0] = cols->val.shape.dim[0];
        sat.i[1] = n;
        n = sat.i[0];
        size_t bytes = align64(ops->pack_bytes(graph_device(g), mode == MT_GEMM_I8 ? 8 : 16, k, n));
        sat.i[2] = graph_pack_serial(g, p) != 0;
        sat.i[3] = (int64_t)bytes;
        mt_node *ssrc[2] = {p, cols};
        p = graph_push(g, &op_pack_sel, mt_shape1(sat.i[2] ? 64 : (int64_t)bytes), MT_I8, 2, ssrc,
                       &sat);
        if (p == NULL) return NULL;
    }

    /* the activation quantized once for every fixed-mode product reading it */
    mt_node *qa_node = mode >= 0 && !x->argmax && x->topk == 0 && cols == NULL
                           ? quant_a_of(g, a, mode == MT_GEMM_I8 ? 8 : 16)
                           : NULL;
    mt_node *src[MT_MAX_SRC] = {qa_node ? qa_node : a, p, NULL, NULL};
    int n_src = 2, b_idx = 0, bias_idx = 0;
    if (mode < 0) {
        b_idx = n_src;
        src[n_src++] = b;
    }
    if (bias != NULL) {
        bias_idx = n_src;
        src[n_src++] = bias;
    }
    int res_idx = 0;
    if (x->res != NULL) {
        res_idx = n_src;
        src[n_src++] = x->res;
    }
    mt_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = rows;
    at.i[1] = k;
    at.i[2] = n;
    at.i[3] = trans_b;
    at.i[4] = mode;
    at.i[5] = slot;
    at.i[6] = off16;
    at.i[7] = b_idx | bias_idx << 4 | (int64_t)x->relu << 8 | (int64_t)res_idx << 16;
    mt_device *d = graph_device(g);
    if (x->argmax) {           /* i32 [rows]; aux: the values, then the scratch */
        if (x->skip != NULL) { /* into the graph only when this path is taken */
            at.i[7] |= (int64_t)n_src << 12;
            src[n_src++] = mt_input(g, mt_shape1(n), x->skip);
            if (src[n_src - 1] == NULL) return NULL;
        }
        mt_node *y = graph_push(g, &op_gemm_q_argmax, mt_shape1(rows), MT_I32, n_src, src, &at);
        if (y == NULL) return NULL;
        size_t bytes = align64((size_t)rows * sizeof(float)) +
                       ops->igemm_argmax_scratch_bytes(d, mode == MT_GEMM_I8 ? 8 : 16, rows, k, n);
        return graph_node_aux(g, y, bytes) ? y : NULL;
    }
    if (x->topk > 0) { /* f32 [rows, 2 topk]; aux: indices, values, then the scratch */
        at.i[5] = x->topk;
        mt_node *y = graph_push(g, &op_gemm_q_topk, mt_shape2(rows, 2 * (int64_t)x->topk), MT_F32,
                                n_src, src, &at);
        if (y == NULL) return NULL;
        size_t bytes = 2 * align64((size_t)rows * (size_t)x->topk * sizeof(int32_t)) +
                       ops->igemm_topk_scratch_bytes(d, mode == MT_GEMM_I8 ? 8 : 16, rows, k, n);
        return graph_node_aux(g, y, bytes) ? y : NULL;
    }
    mt_shape out = *sa;
    out.dim[out.ndim - 1] = n;
    mt_node *y = graph_push(g, &op_gemm_q, out, MT_F32, n_src, src, &at);
    if (y == NULL) return NULL;
    if (qa_node != NULL) return y; /* no scratch of its own */
    size_t scratch = 0;
    if (fmt & FMT_I8) scratch = ops->igemm_scratch_bytes(d, 8, rows, k);
    if (fmt & FMT_I16) {
        size_t s16 = ops->igemm_scratch_bytes(d, 16, rows, k);
        scratch = s16 > scratch ? s16 : scratch;
    }
    if (!graph_node_aux(g, y, scratch)) return NULL;
    return y;
}
