/*
** graph.c: the tape of nodes for one batch, lazy forward, reverse-mode
** backward, clear/reuse, and memoization of constant subgraphs.
**
** Memory (three pools, none touched in steady state):
**   nodes      an mt_arena (host), reset by mt_graph_clear; the tape is an
**              array of node pointers whose capacity survives clears.
**   workspace  one device buffer reserved at init (workspace_bytes); node
**              values, op aux buffers and backward's gradients are bump-
**              allocated from it, 64-byte aligned.  When it runs out, the
**              rest of the round goes to overflow blocks (freed at clear)
**              and, at the next clear, the workspace is regrown to the
**              high-water mark plus 1/8 (workspace_grow_count).  In strict
**              mode running out after the first clear is a sticky
**              MT_ERR_NOMEM instead (likewise growth of arena or tape).
**   memo       a cache owned by the graph that survives clears (below).
**
** needs_grad: a parameter leaf needs a gradient when the graph is training
** and the parameter is trainable (f32); any f32 node with such a source
** needs one.  Backward marks the nodes reachable from the loss, gives each
** of them a zeroed gradient in the workspace (parameter nodes instead view
** their parameter's grad buffer, so gradients accumulate into it across
** backward calls), seeds d loss = 1 and calls op->backward in reverse tape
** order.
**
** Memoization (Marian, WNMT 2018 sec. 4.3): a node is constant when it is a
** parameter or constant leaf or all its sources are constant; parameters are
** constant only when the graph is not training or they are frozen.  With
** params.memoize on and the graph not training, graph_push of a constant
** node looks up (op, attrs, shape, dtype, source identities) in the memo
** cache: a hit returns the cached node, already computed, whose value lives
** in memo storage (device memory from ops->alloc, not the workspace); a miss
** creates the node in memo storage, puts it on the tape to be computed by
** the next forward, and keeps it.  Identity of a parameter leaf = (params
** pointer, index); of a memo node = its entry's serial number; of a
** constant leaf (mt_constant, never an entry itself) = its value and shape.
** Each entry
** drops its source pointers at the clear that ends its round (they point
** into the arena); entries never computed in their round are discarded.
** When a parameter leaf of an mt_params whose version changed since the
** cache used it is built, the whole cache is flushed: entries move to a
** retired list (nodes of the current round may still use them) that the
** next clear frees.  mt_tensor_node leaves are NOT constant for memoization:
** the memory they view can change between builds without the graph knowing.
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "graph_impl.h"
#include "params_impl.h"

#define WS_ALIGN 64
#define TAPE_MIN 256

typedef struct memo_key {
    const mt_op_def *op;
    mt_attrs attr;
    mt_shape shape;
    int32_t dtype, n_src;
    uint64_t src_id[MT_MAX_SRC][2];
} memo_key;

typedef struct memo_entry {
    memo_key key;
    uint64_t hash;
    uint64_t serial;
    mt_node node;
    void *val_buf;
    void *aux_buf;
    struct memo_entry *next_all;   /* live list or retired list */
    struct memo_entry *next_round; /* created in the current round */
    bool retired;
} memo_entry;

typedef struct params_version {
    const mt_params *p;
    uint64_t version;
} params_version;

struct mt_graph {
    mt_device *dev;
    mt_graph_params prm;
    bool training;
    mt_rng rng;
    mt_status err;
    char errmsg[256];
    uint64_t n_clears;

    mt_arena *arena;
    uint64_t arena_grows_at_clear;
    mt_node **tape;
    int64_t n_nodes, cap_nodes, next_fwd;
    unsigned char *mark; /* backward reachability, mark_cap bytes */
    int64_t mark_cap;

    char *ws;
    size_t ws_cap, ws_used, ws_need, ws_high;
    void **ovf;
    int n_ovf, cap_ovf;
    uint64_t ws_grows;

    memo_entry **tab; /* open addressing, tab_cap a power of two */
    size_t tab_cap, tab_n;
    memo_entry *live, *retired, *round;
    uint64_t memo_serial, memo_hits;
    params_version *pv;
    int n_pv, cap_pv;

    struct gemm_tuner *tuner; /* auto-tuner table (ops_gemm_int.c), kept across clears */

    /* release_values: the region of values allocated at forward, its free
    ** segments (sorted by offset, coalesced) and the bytes alive */
    char *lz;
    size_t lz_cap, lz_live, lz_high;
    struct lz_seg *lz_free;
    int lz_nfree, lz_capfree;
    int64_t lz_nblk; /* values alive in the region */
    bool lz_overflowed;

    /* shared packed weights this round's nodes view (graph_hold_pack) */
    struct held_pack *held;
    int n_held, cap_held;
};

typedef struct held_pack {
    mt_params *params;
    const void *data;
    uint64_t serial;
} held_pack;

typedef struct lz_seg {
    size_t off, len;
} lz_seg;

static const mt_op_def op_input = {"input", NULL, NULL};
static const mt_op_def op_param = {"param", NULL, NULL};
static const mt_op_def op_const = {"const", NULL, NULL};
static const mt_op_def op_tensor = {"tensor", NULL, NULL};

/* ---------------------------------------------------------------- errors */

mt_node *graph_fail(mt_graph *g, mt_status rc, const char *fmt, ...) {
    if (g->err == MT_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->errmsg, sizeof g->errmsg, fmt, ap);
        va_end(ap);
        g->err = rc;
    }
    mt_seterr(g->err, "%s", g->errmsg);
    return NULL;
}

/* Re-sets the thread's message to the graph's first error and returns it. */
static mt_status sticky(const mt_graph *g) { return mt_seterr(g->err, "%s", g->errmsg); }

/* Records an error whose message is already in mt_errmsg(). */
static mt_status record(mt_graph *g, mt_status rc) {
    graph_fail(g, rc, "%s", mt_errmsg());
    return rc;
}

static bool strict_now(const mt_graph *g) { return g->prm.strict && g->n_clears > 0; }

/* ------------------------------------------------------------- workspace */

static size_t align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }

/* Bytes a value of `bytes` takes in the workspace or the value region. */
static size_t ws_round(size_t bytes) { return align_up(bytes ? bytes : WS_ALIGN, WS_ALIGN); }

static void *ws_alloc_block(mt_graph *g, size_t n);

static void *ws_alloc(mt_graph *g, size_t bytes) {
    size_t n = ws_round(bytes);
    g->ws_need += n;
    if (n <= g->ws_cap - g->ws_used) {
        void *p = g->ws + g->ws_used;
        g->ws_used += n;
        return p;
    }
    return ws_alloc_block(g, n);
}

/* A block of its own beyond the workspace (freed at clear). */
static void *ws_alloc_block(mt_graph *g, size_t n) {
    if (strict_now(g)) {
        graph_fail(g, MT_ERR_NOMEM,
                   "graph workspace exhausted in strict mode (need %zu bytes, have %zu)",
                   g->ws_need, g->ws_cap);
        return NULL;
    }
    if (g->n_ovf == g->cap_ovf) {
        int cap = g->cap_ovf ? g->cap_ovf * 2 : 16;
        void **o = mt_try_realloc(g->ovf, (size_t)cap * sizeof *o);
        if (o == NULL) {
            graph_fail(g, MT_ERR_NOMEM, "graph: out of memory (overflow list)");
            return NULL;
        }
        g->ovf = o;
        g->cap_ovf = cap;
    }
    void *p = g->dev->ops->alloc(g->dev, n);
    if (p == NULL) {
        graph_fail(g, MT_ERR_NOMEM, "graph: cannot allocate %zu bytes beyond the workspace", n);
        return NULL;
    }
    g->ovf[g->n_ovf++] = p;
    return p;
}

/* Debug builds fill fresh op values and aux buffers with NaN, so that an op
** whose forward reads its output (or aux) before writing it fails its tests
** instead of depending on what the previous round left there. */
static void poison(mt_graph *g, void *p, size_t bytes) {
#ifndef NDEBUG
    if (p != NULL && bytes >= sizeof(float)) {
        g->dev->ops->fill_f32(g->dev, (int64_t)(bytes / sizeof(float)), NAN, p);
    }
#else
    (void)g;
    (void)p;
    (void)bytes;
#endif
}

/* ------------------------------------------- values released when dead */

static bool release_active(const mt_graph *g) { return g->prm.release_values && !g->training; }

/* Room for `need` elements of `elem` bytes in *arr (capacity *cap, doubled
** from `first`); false (unchanged) when out of memory. */
static bool grow_array(void **arr, int *cap, int64_t need, size_t elem, int first) {
    if (need <= *cap) return true;
    int c = *cap ? *cap * 2 : first;
    while (c < need)
        c *= 2;
    void *a = mt_try_realloc(*arr, (size_t)c * elem);
    if (a == NULL) return false;
    *arr = a;
    *cap = c;
    return true;
}

/* Room for the region's free list: at most one segment per value alive + 1. */
static bool lz_seg_reserve(mt_graph *g, int64_t need) {
    void *f = g->lz_free;
    bool ok = grow_array(&f, &g->lz_capfree, need, sizeof *g->lz_free, 64);
    g->lz_free = f;
    return ok;
}

/* Best fit in the region, else a block of its own (an overflow block, freed
** at clear; the region then grows to the round's peak). */
static void *lz_alloc(mt_graph *g, size_t bytes) {
    size_t n = ws_round(bytes);
    if (!lz_seg_reserve(g, g->lz_nblk + 2)) {
        graph_fail(g, MT_ERR_NOMEM, "graph: out of memory (free list of values)");
        return NULL;
    }
    int best = -1;
    for (int i = 0; i < g->lz_nfree; i++) {
        if (g->lz_free[i].len >= n && (best < 0 || g->lz_free[i].len < g->lz_free[best].len))
            best = i;
    }
    g->lz_live += n;
    if (g->lz_live > g->lz_high) g->lz_high = g->lz_live;
    if (best >= 0) {
        lz_seg *f = &g->lz_free[best];
        void *p = g->lz + f->off;
        g->lz_nblk++;
        f->off += n;
        f->len -= n;
        if (f->len == 0) {
            memmove(f, f + 1, (size_t)(g->lz_nfree - best - 1) * sizeof *f);
            g->lz_nfree--;
        }
        return p;
    }
    g->lz_overflowed = true;
    return ws_alloc_block(g, n);
}

static void lz_release(mt_graph *g, void *p, size_t bytes) {
    size_t n = ws_round(bytes);
    MT_ASSERT(g->lz_live >= n);
    g->lz_live -= n;
    char *c = p;
    if (g->lz == NULL || c < g->lz || c >= g->lz + g->lz_cap) { /* a block of its own */
        for (int i = g->n_ovf - 1; i >= 0; i--) {
            if (g->ovf[i] == p) {
                g->dev->ops->free(g->dev, p);
                g->ovf[i] = g->ovf[--g->n_ovf];
                break;
            }
        }
        return;
    }
    g->lz_nblk--;
    size_t off = (size_t)(c - g->lz);
    int i = 0;
    while (i < g->lz_nfree && g->lz_free[i].off < off)
        i++;
    bool prev = i > 0 && g->lz_free[i - 1].off + g->lz_free[i - 1].len == off;
    bool next = i < g->lz_nfree && off + n == g->lz_free[i].off;
    if (prev && next) {
        g->lz_free[i - 1].len += n + g->lz_free[i].len;
        memmove(&g->lz_free[i], &g->lz_free[i + 1], (size_t)(g->lz_nfree - i - 1) * sizeof(lz_seg));
        g->lz_nfree--;
    } else if (prev) {
        g->lz_free[i - 1].len += n;
    } else if (next) {
        g->lz_free[i].off = off;
        g->lz_free[i].len += n;
    } else {
        /* reserved by lz_reset (segments <= values alive + 1) */
        MT_ASSERT(g->lz_nfree < g->lz_capfree);
        memmove(&g->lz_free[i + 1], &g->lz_free[i], (size_t)(g->lz_nfree - i) * sizeof(lz_seg));
        g->lz_free[i] = (lz_seg){off, n};
        g->lz_nfree++;
    }
}

/* Replaces *buf (capacity *cap) by an uninitialised one of want bytes
** (rounded up to 64 KB); keeps the old one when that fails. */
static void regrow(mt_graph *g, char **buf, size_t *cap, size_t want, const char *what) {
    want = align_up(want, (size_t)1 << 16);
    void *nw = g->dev->ops->alloc(g->dev, want);
    if (nw == NULL) {
        mt_log(MT_LOG_WARN, "graph: cannot grow the %s to %zu bytes", what, want);
        return;
    }
    if (*buf) g->dev->ops->free(g->dev, *buf);
    *buf = nw;
    *cap = want;
    g->ws_grows++;
}

/* End of a round: the region is all free again; grown to the peak (and by
** half at least) when a value did not fit. */
static void lz_reset(mt_graph *g) {
    if (g->lz_overflowed) {
        size_t want = g->lz_high + g->lz_high / 4;
        if (want < g->lz_cap + g->lz_cap / 2) want = g->lz_cap + g->lz_cap / 2;
        regrow(g, &g->lz, &g->lz_cap, want, "value region");
        g->lz_overflowed = false;
    }
    g->lz_live = 0;
    g->lz_nblk = 0;
    g->lz_nfree = 0;
    if (g->lz_cap > 0 && lz_seg_reserve(g, 2)) g->lz_free[g->lz_nfree++] = (lz_seg){0, g->lz_cap};
}

/* Frees overflow blocks; regrows the workspace when the round overflowed. */
static void ws_reset(mt_graph *g) {
    if (g->ws_need > g->ws_high) g->ws_high = g->ws_need;
    for (int i = 0; i < g->n_ovf; i++)
        g->dev->ops->free(g->dev, g->ovf[i]);
    g->n_ovf = 0;
    lz_reset(g);
    if (g->ws_need > g->ws_cap) {
        /* Training: the overflow blocks go back to the system at once (a
        ** round's need is stable, and the process holds gigabytes).
        ** Inference: a decoding step needs a little more each step (its
        ** caches grow), so after the first regrowth the workspace grows by
        ** half its size: with trimming and +1/8, every few steps ran on fresh
        ** memory, one page fault per 4 KB touched. */
        size_t want = g->ws_high + g->ws_high / 8;
        if (g->training)
            mt_alloc_trim();
        else if (g->ws_grows > 0 && want < g->ws_cap + g->ws_cap / 2)
            want = g->ws_cap + g->ws_cap / 2;
        regrow(g, &g->ws, &g->ws_cap, want, "workspace");
    }
    g->ws_used = 0;
    g->ws_need = 0;
}

/* ------------------------------------------------------------------ tape */

static bool tape_reserve(mt_graph *g) {
    if (g->n_nodes < g->cap_nodes) return true;
    if (strict_now(g)) {
        graph_fail(g, MT_ERR_NOMEM, "graph tape exhausted in strict mode (%lld nodes)",
                   (long long)g->n_nodes);
        return false;
    }
    int64_t cap = g->cap_nodes ? g->cap_nodes * 2 : TAPE_MIN;
    mt_node **t = mt_try_realloc(g->tape, (size_t)cap * sizeof *t);
    if (t == NULL) {
        graph_fail(g, MT_ERR_NOMEM, "graph: out of memory (tape of %lld nodes)", (long long)cap);
        return false;
    }
    g->tape = t;
    g->cap_nodes = cap;
    return true;
}

static void tape_append(mt_graph *g, mt_node *n) {
    MT_ASSERT(g->n_nodes < g->cap_nodes);
    n->id = g->n_nodes;
    g->tape[g->n_nodes++] = n;
}

static mt_node *arena_node(mt_graph *g) {
    mt_node *n = mt_arena_alloc(g->arena, sizeof *n, _Alignof(mt_node));
    if (n == NULL) {
        graph_fail(g, MT_ERR_NOMEM, "graph: out of memory (node arena)");
        return NULL;
    }
    if (strict_now(g) && mt_arena_grow_count(g->arena) != g->arena_grows_at_clear) {
        graph_fail(g, MT_ERR_NOMEM, "graph node arena exhausted in strict mode (%zu bytes)",
                   mt_arena_capacity(g->arena));
        return NULL;
    }
    memset(n, 0, sizeof *n);
    return n;
}

/* Copy of s with unused dims zeroed (shapes are hashed bytewise). */
static mt_shape clean_shape(mt_shape s) {
    MT_ASSERT(s.ndim >= 0 && s.ndim <= MT_MAX_DIMS);
    return mt_shape_make(s.ndim, s.dim);
}

static size_t shape_bytes(const mt_shape *s, mt_dtype t) {
    return (size_t)mt_shape_numel(s) * mt_dtype_size(t);
}

/* A node in the arena with its value in the workspace (or none: view). */
static mt_node *plain_node(mt_graph *g, const mt_op_def *op, mt_shape shape, mt_dtype dtype,
                           bool alloc_value) {
    if (!tape_reserve(g)) return NULL;
    mt_node *n = arena_node(g);
    if (n == NULL) return NULL;
    n->op = op;
    n->val.shape = shape;
    n->val.dtype = dtype;
    n->val.dev = g->dev;
    if (alloc_value) {
        n->val.data = ws_alloc(g, shape_bytes(&shape, dtype));
        if (n->val.data == NULL) return NULL;
    }
    return n;
}

/* ------------------------------------------------------------------ memo */

static bool memo_active(const mt_graph *g) { return g->prm.memoize && !g->training; }

static uint64_t hash_bytes(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h ^ (h >> 29);
}

static memo_entry *entry_of(mt_node *n) {
    return (memo_entry *)((char *)n - offsetof(memo_entry, node));
}

static void entry_free(mt_graph *g, memo_entry *e) {
    if (e->val_buf) g->dev->ops->free(g->dev, e->val_buf);
    if (e->aux_buf) g->dev->ops->free(g->dev, e->aux_buf);
    mt_free(e);
}

static memo_entry *memo_find(const mt_graph *g, const memo_key *k, uint64_t h) {
    if (g->tab_n == 0) return NULL;
    size_t mask = g->tab_cap - 1;
    for (size_t s = h & mask; g->tab[s]; s = (s + 1) & mask) {
        memo_entry *e = g->tab[s];
        if (e->hash == h && memcmp(&e->key, k, sizeof *k) == 0) return e;
    }
    return NULL;
}

static void tab_put(mt_graph *g, memo_entry *e) {
    size_t mask = g->tab_cap - 1;
    size_t s = e->hash & mask;
    while (g->tab[s])
        s = (s + 1) & mask;
    g->tab[s] = e;
    g->tab_n++;
}

/* Room for one more entry at load <= 1/2. */
static bool tab_reserve(mt_graph *g) {
    if ((g->tab_n + 1) * 2 <= g->tab_cap) return true;
    size_t cap = g->tab_cap ? g->tab_cap * 2 : 64;
    memo_entry **t = mt_try_calloc(cap, sizeof *t);
    if (t == NULL) return false;
    mt_free(g->tab);
    g->tab = t;
    g->tab_cap = cap;
    g->tab_n = 0;
    for (memo_entry *e = g->live; e; e = e->next_all)
        tab_put(g, e);
    return true;
}

static void tab_rebuild(mt_graph *g) {
    if (g->tab) memset(g->tab, 0, g->tab_cap * sizeof *g->tab);
    g->tab_n = 0;
    for (memo_entry *e = g->live; e; e = e->next_all)
        tab_put(g, e);
}

/* Retires every entry: lookups miss from now on; memory goes at clear. */
static void memo_flush(mt_graph *g) {
    while (g->live) {
        memo_entry *e = g->live;
        g->live = e->next_all;
        e->retired = true;
        e->next_all = g->retired;
        g->retired = e;
    }
    tab_rebuild(g);
    g->n_pv = 0;
}

static params_version *pv_find(mt_graph *g, const mt_params *p) {
    for (int i = 0; i < g->n_pv; i++) {
        if (g->pv[i].p == p) return &g->pv[i];
    }
    return NULL;
}

/* Called for every parameter leaf built while memoizing. */
static void memo_check_version(mt_graph *g, const mt_params *p) {
    params_version *v = pv_find(g, p);
    if (v && v->version != mt_params_version(p)) memo_flush(g);
}

static bool pv_reserve(mt_graph *g, int extra) {
    void *v = g->pv;
    bool ok = grow_array(&v, &g->cap_pv, (int64_t)g->n_pv + extra, sizeof *g->pv, 8);
    g->pv = v;
    return ok;
}

/* Identity of a constant source, or false if it has none (not memoizable). */
static bool src_identity(const mt_node *s, uint64_t id[2]) {
    if (s->params != NULL && s->n_src == 0) {
        id[0] = (uint64_t)(uintptr_t)s->params;
        id[1] = (uint64_t)s->param_index;
        return true;
    }
    if (s->is_memo) {
        id[0] = 0;
        id[1] = entry_of((mt_node *)s)->serial;
        return true;
    }
    if (s->op == &op_const && s->n_src == 0) { /* a fill: its value and shape */
        uint32_t bits;
        memcpy(&bits, &s->attr.f[0], sizeof bits);
        id[0] = (1ull << 63) | bits;
        id[1] = hash_bytes(s->val.shape.dim, sizeof(int64_t) * (size_t)s->val.shape.ndim) ^
                (uint64_t)s->val.shape.ndim;
        return true;
    }
    return false;
}

/* graph_push for a constant node in a memoizing graph.  *done is false when
** the node has no memo identity (the caller builds a plain node). */
static mt_node *memo_push(mt_graph *g, const mt_op_def *op, mt_shape shape, mt_dtype dtype,
                          int n_src, mt_node *const *src, const mt_attrs *attrs, bool *done) {
    memo_key k;
    memset(&k, 0, sizeof k);
    k.op = op;
    if (attrs) memcpy(&k.attr, attrs, sizeof k.attr);
    k.shape.ndim = shape.ndim; /* member by member: padding stays zero */
    for (int i = 0; i < shape.ndim; i++)
        k.shape.dim[i] = shape.dim[i];
    k.dtype = (int32_t)dtype;
    k.n_src = n_src;
    for (int i = 0; i < n_src; i++) {
        if (!src_identity(src[i], k.src_id[i])) {
            *done = false;
            return NULL;
        }
    }
    *done = true;
    uint64_t h = hash_bytes(&k, sizeof k);
    memo_entry *hit = memo_find(g, &k, h);
    if (hit) {
        g->memo_hits++;
        return &hit->node;
    }

    /* Miss: everything that can fail first, then commit. */
    if (!tape_reserve(g)) return NULL;
    if (!tab_reserve(g) || !pv_reserve(g, n_src)) {
        return graph_fail(g, MT_ERR_NOMEM, "graph: out of memory (memo cache)");
    }
    memo_entry *e = mt_try_calloc(1, sizeof *e);
    if (e == NULL) return graph_fail(g, MT_ERR_NOMEM, "graph: out of memory (memo entry)");
    size_t bytes = shape_bytes(&shape, dtype);
    e->val_buf = g->dev->ops->alloc(g->dev, bytes ? bytes : WS_ALIGN);
    if (e->val_buf == NULL) {
        mt_free(e);
        return graph_fail(g, MT_ERR_NOMEM, "graph: cannot allocate %zu bytes of memo storage (%s)",
                          bytes, op->name);
    }
    poison(g, e->val_buf, bytes);
    e->key = k;
    e->hash = h;
    e->serial = ++g->memo_serial;
    mt_node *n = &e->node;
    n->op = op;
    n->val.shape = shape;
    n->val.dtype = dtype;
    n->val.dev = g->dev;
    n->val.data = e->val_buf;
    n->n_src = n_src;
    for (int i = 0; i < n_src; i++)
        n->src[i] = src[i];
    n->attr = k.attr;
    n->is_const = true;
    n->is_memo = true;
    for (int i = 0; i < n_src; i++) {
        const mt_params *p = src[i]->is_memo ? NULL : src[i]->params;
        if (p && !pv_find(g, p)) g->pv[g->n_pv++] = (params_version){p, mt_params_version(p)};
    }
    e->next_all = g->live;
    g->live = e;
    e->next_round = g->round;
    g->round = e;
    tab_put(g, e);
    tape_append(g, n);
    return n;
}

/* End of a round: discards entries that were never computed, drops source
** pointers of the others (they point into the arena), frees retired ones. */
static void memo_end_round(mt_graph *g) {
    bool drop = false;
    for (memo_entry *e = g->round; e; e = e->next_round) {
        if (e->retired) continue;
        if (!e->node.computed) {
            drop = true;
            continue;
        }
        for (int i = 0; i < MT_MAX_SRC; i++)
            e->node.src[i] = NULL;
    }
    g->round = NULL;
    if (drop) {
        memo_entry **pp = &g->live;
        while (*pp) {
            memo_entry *e = *pp;
            if (!e->node.computed) {
                *pp = e->next_all;
                entry_free(g, e);
            } else {
                pp = &e->next_all;
            }
        }
        tab_rebuild(g);
    }
    while (g->retired) {
        memo_entry *e = g->retired;
        g->retired = e->next_all;
        entry_free(g, e);
    }
}

/* ------------------------------------------------------------ graph_push */

mt_node *graph_push(mt_graph *g, const mt_op_def *op, mt_shape shape, mt_dtype dtype, int n_src,
                    mt_node *const *src, const mt_attrs *attrs) {
    if (g->err != MT_OK) return NULL;
    MT_ASSERT(op != NULL && n_src >= 0 && n_src <= MT_MAX_SRC);
    bool is_const = n_src > 0, needs_grad = false;
    for (int i = 0; i < n_src; i++) {
        if (src[i] == NULL) {
            return graph_fail(g, MT_ERR_INVALID, "op %s: input %d is NULL", op->name, i);
        }
        is_const = is_const && src[i]->is_const;
        needs_grad = needs_grad || src[i]->needs_grad;
    }
    if (dtype != MT_F32) needs_grad = false;
    shape = clean_shape(shape);
    for (int i = 0; i < shape.ndim; i++) {
        if (shape.dim[i] < 0) {
            char sb[96];
            return graph_fail(g, MT_ERR_INVALID, "op %s: negative dimension in shape %s", op->name,
                              mt_shape_str(&shape, sb, sizeof sb));
        }
    }
    for (int i = 0; i < n_src; i++) {
        if (src[i]->released)
            return graph_fail(g, MT_ERR_INVALID,
                              "op %s: input %d (%s) was released after its last use "
                              "(mt_graph_keep it)",
                              op->name, i, src[i]->op->name);
    }
    if (is_const && memo_active(g)) {
        bool done = false;
        mt_node *m = memo_push(g, op, shape, dtype, n_src, src, attrs, &done);
        if (done) return m;
    }
    bool lazy = n_src > 0 && release_active(g);
    mt_node *n = plain_node(g, op, shape, dtype, !lazy && !(op_is_view(op) && release_active(g)));
    if (n == NULL) return NULL;
    n->lazy = lazy;
    if (!lazy) poison(g, n->val.data, shape_bytes(&shape, dtype));
    n->n_src = n_src;
    for (int i = 0; i < n_src; i++)
        n->src[i] = src[i];
    if (attrs) n->attr = *attrs;
    n->is_const = is_const;
    n->needs_grad = needs_grad;
    tape_append(g, n);
    return n;
}

uint64_t graph_memo_serial(const mt_node *n) {
    return n != NULL && n->is_memo ? entry_of((mt_node *)n)->serial : 0;
}

bool graph_node_aux(mt_graph *g, mt_node *n, size_t bytes) {
    if (g->err != MT_OK || n == NULL) return false;
    void *p;
    if (n->is_memo) {
        memo_entry *e = entry_of(n);
        if (e->aux_buf && n->aux_bytes == bytes) return true; /* memo hit: keep */
        p = g->dev->ops->alloc(g->dev, bytes ? bytes : WS_ALIGN);
        if (p == NULL) {
            graph_fail(g, MT_ERR_NOMEM, "graph: cannot allocate %zu aux bytes (%s)", bytes,
                       n->op->name);
            return false;
        }
        if (e->aux_buf) g->dev->ops->free(g->dev, e->aux_buf);
        e->aux_buf = p;
    } else if (n->lazy) { /* allocated by forward, around the node's own forward */
        n->lazy_aux = true;
        if (bytes > n->aux_bytes) n->aux_bytes = bytes;
        return true;
    } else {
        p = ws_alloc(g, bytes);
        if (p == NULL) return false;
    }
    poison(g, p, bytes);
    n->aux = p;
    n->aux_bytes = bytes;
    return true;
}

const mt_graph_params *graph_params(const mt_graph *g) { return &g->prm; }
bool graph_memoizing(const mt_graph *g) { return memo_active(g); }
struct gemm_tuner **graph_tuner(mt_graph *g) { return &g->tuner; }
const struct gemm_tuner *graph_tuner_const(const mt_graph *g) { return g->tuner; }
mt_device *graph_device(const mt_graph *g) { return g->dev; }
const mt_device_ops *graph_ops(const mt_graph *g) { return g->dev->ops; }
bool graph_is_training(const mt_graph *g) { return g->training; }
mt_rng *graph_rng(mt_graph *g) { return &g->rng; }

/* A chunk is tested without a branch per id (unsigned compares, or-ed), so
** that the loop is vectorized: it runs at every decoding step (the
** shortlist's column ids, the beam's row ids). */
mt_status graph_check_ids(mt_graph *g, const char *op, const char *what, const mt_node *ids,
                          int64_t limit) {
    enum { CHUNK_IDS = 256 };
    int32_t buf[CHUNK_IDS];
    int64_t n = mt_node_numel(ids);
    /* a negative id is a large unsigned one; int32 ids are below 2^31 */
    uint32_t lim = limit > INT32_MAX ? (uint32_t)INT32_MAX + 1u : (uint32_t)(limit < 0 ? 0 : limit);
    for (int64_t off = 0; off < n; off += CHUNK_IDS) {
        int64_t len = n - off < CHUNK_IDS ? n - off : CHUNK_IDS;
        mt_status rc =
            graph_ops(g)->copy(graph_device(g), buf, (const int32_t *)ids->val.data + off,
                               (size_t)len * sizeof(int32_t), 1);
        if (rc != MT_OK) return rc;
        uint32_t bad = 0;
        for (int64_t i = 0; i < len; i++)
            bad |= (uint32_t)buf[i] >= lim;
        for (int64_t i = 0; bad && i < len; i++)
            if (buf[i] < 0 || buf[i] >= limit)
                return mt_seterr(MT_ERR_INVALID, "%s: %s %d at row %lld outside [0, %lld)", op,
                                 what, (int)buf[i], (long long)(off + i), (long long)limit);
    }
    return MT_OK;
}

/* ---------------------------------------------------------------- leaves */

mt_node *mt_input(mt_graph *g, mt_shape shape, const float *data) {
    if (g->err != MT_OK) return NULL;
    shape = clean_shape(shape);
    mt_node *n = plain_node(g, &op_input, shape, MT_F32, true);
    if (n == NULL) return NULL;
    size_t bytes = shape_bytes(&shape, MT_F32);
    mt_status rc = MT_OK;
    if (bytes) {
        rc = data ? g->dev->ops->copy(g->dev, n->val.data, data, bytes, 0)
                  : g->dev->ops->memset0(g->dev, n->val.data, bytes);
    }
    if (rc != MT_OK) return graph_fail(g, rc, "mt_input: copy failed (%s)", mt_errmsg());
    n->computed = true;
    tape_append(g, n);
    return n;
}

mt_node *mt_input_i32(mt_graph *g, mt_shape shape, const int32_t *data) {
    if (g->err != MT_OK) return NULL;
    shape = clean_shape(shape);
    mt_node *n = plain_node(g, &op_input, shape, MT_I32, true);
    if (n == NULL) return NULL;
    size_t bytes = shape_bytes(&shape, MT_I32);
    mt_status rc = MT_OK;
    if (bytes) {
        rc = data ? g->dev->ops->copy(g->dev, n->val.data, data, bytes, 0)
                  : g->dev->ops->memset0(g->dev, n->val.data, bytes);
    }
    if (rc != MT_OK) return graph_fail(g, rc, "mt_input_i32: copy failed (%s)", mt_errmsg());
    n->computed = true;
    tape_append(g, n);
    return n;
}

mt_node *mt_constant(mt_graph *g, mt_shape shape, float value) {
    if (g->err != MT_OK) return NULL;
    shape = clean_shape(shape);
    /* Never a memo entry itself (a decoder makes fills of many shapes and
    ** values, which would each stay in the cache for good); memoized nodes
    ** computed from it know it by value and shape (src_identity). */
    mt_node *n = plain_node(g, &op_const, shape, MT_F32, true);
    if (n == NULL) return NULL;
    n->attr.f[0] = value;
    tape_append(g, n);
    g->dev->ops->fill_f32(g->dev, mt_shape_numel(&shape), value, node_f32(n));
    n->is_const = true;
    n->computed = true;
    return n;
}

mt_node *mt_param(mt_graph *g, mt_params *p, const char *name, mt_shape shape, mt_init init) {
    if (g->err != MT_OK) return NULL;
    int idx = -1;
    mt_status rc = params_get_index(p, name, MT_F32, true, clean_shape(shape), init, &idx);
    if (rc != MT_OK) return graph_fail(g, rc, "%s", mt_errmsg());
    if (memo_active(g)) memo_check_version(g, p);
    mt_node *n = plain_node(g, &op_param, clean_shape(shape), MT_F32, false);
    if (n == NULL) return NULL;
    n->val = *mt_params_at(p, idx);
    n->val.owns = false;
    if (n->val.dev == NULL) n->val.dev = params_device(p);
    n->params = p;
    n->param_index = idx;
    n->needs_grad = g->training && mt_params_trainable_at(p, idx);
    n->is_const = !n->needs_grad;
    n->computed = true;
    tape_append(g, n);
    return n;
}

mt_node *mt_tensor_node(mt_graph *g, const mt_tensor *t) {
    if (g->err != MT_OK) return NULL;
    if (t == NULL || (t->data == NULL && mt_tensor_bytes(t) > 0)) {
        return graph_fail(g, MT_ERR_INVALID, "mt_tensor_node: tensor without data");
    }
    mt_node *n = plain_node(g, &op_tensor, clean_shape(t->shape), t->dtype, false);
    if (n == NULL) return NULL;
    n->val = *t;
    n->val.shape = clean_shape(t->shape);
    n->val.owns = false;
    if (n->val.dev == NULL) n->val.dev = mt_device_cpu();
    n->computed = true; /* no grad, not memoizable (see top of file) */
    tape_append(g, n);
    return n;
}

/* ------------------------------------------------------ init, clear, free */

mt_graph_params mt_graph_default_params(void) {
    mt_graph_params p;
    memset(&p, 0, sizeof p);
    p.node_arena_bytes = 64 << 10;
    p.workspace_bytes = 4 << 20;
    p.training = false;
    p.memoize = false; /* opt-in: values set through mt_tensor_set on a
                          parameter are only seen after mt_params_touch */
    p.strict = false;
    p.seed = 1234;
    return p;
}

mt_status mt_graph_init(mt_device *dev, mt_graph_params p, mt_graph **out) {
    *out = NULL;
    mt_status rc = MT_ERR_NOMEM;
    mt_graph *g = mt_try_calloc(1, sizeof *g);
    if (g == NULL) return mt_seterr(MT_ERR_NOMEM, "graph: out of memory");
    g->dev = dev ? dev : mt_device_cpu();
    g->prm = p;
    g->training = p.training;
    mt_rng_seed(&g->rng, p.seed);
    rc = mt_arena_init(p.node_arena_bytes ? p.node_arena_bytes : (64 << 10), &g->arena);
    if (rc != MT_OK) goto fail;
    g->arena_grows_at_clear = mt_arena_grow_count(g->arena);
    rc = MT_ERR_NOMEM;
    g->tape = mt_try_malloc(TAPE_MIN * sizeof *g->tape);
    if (g->tape == NULL) {
        mt_seterr(rc, "graph: out of memory (tape)");
        goto fail;
    }
    g->cap_nodes = TAPE_MIN;
    if (p.workspace_bytes > 0) {
        size_t want = align_up(p.workspace_bytes, WS_ALIGN);
        g->ws = g->dev->ops->alloc(g->dev, want);
        if (g->ws == NULL) {
            mt_seterr(rc, "graph: cannot reserve a workspace of %zu bytes on %s", want,
                      g->dev->ops->name);
            goto fail;
        }
        g->ws_cap = want;
    }
    *out = g;
    return MT_OK;
fail:
    mt_graph_free(g);
    return rc;
}

/* The round's references to shared packs go back (the nodes are gone). */
static void drop_held(mt_graph *g) {
    for (int i = 0; i < g->n_held; i++)
        params_pack_unref(g->held[i].params, g->held[i].data);
    g->n_held = 0;
}

mt_node *graph_recent_node(mt_graph *g, const mt_op_def *op, const mt_node *src0, int64_t attr0,
                           int depth) {
    for (int64_t i = g->n_nodes - 1; i >= g->next_fwd && i >= g->n_nodes - depth; i--) {
        mt_node *n = g->tape[i];
        if (n->op == op && n->n_src > 0 && n->src[0] == src0 && n->attr.i[0] == attr0 &&
            !n->computed)
            return n;
    }
    return NULL;
}

bool graph_hold_pack(mt_graph *g, mt_params *p, const void *data, uint64_t serial) {
    void *h = g->held;
    bool ok = grow_array(&h, &g->cap_held, g->n_held + 1, sizeof *g->held, 16);
    g->held = h;
    if (!ok) {
        params_pack_unref(p, data);
        graph_fail(g, MT_ERR_NOMEM, "graph: out of memory (shared packs)");
        return false;
    }
    g->held[g->n_held++] = (held_pack){p, data, serial};
    return true;
}

uint64_t graph_pack_serial(const mt_graph *g, const mt_node *n) {
    if (n == NULL) return 0;
    if (n->is_memo) return graph_memo_serial(n);
    for (int i = 0; i < g->n_held; i++)
        if (g->held[i].data == n->val.data) return g->held[i].serial;
    return 0;
}

void mt_graph_clear(mt_graph *g) {
    if (g == NULL) return;
    drop_held(g);
    memo_end_round(g);
    ws_reset(g);
    mt_arena_reset(g->arena);
    g->arena_grows_at_clear = mt_arena_grow_count(g->arena);
    g->n_nodes = 0;
    g->next_fwd = 0;
    g->err = MT_OK;
    g->errmsg[0] = '\0';
    g->n_clears++;
}

void mt_graph_free(mt_graph *g) {
    if (g == NULL) return;
    drop_held(g);
    mt_free(g->held);
    memo_end_round(g);
    while (g->live) {
        memo_entry *e = g->live;
        g->live = e->next_all;
        entry_free(g, e);
    }
    for (int i = 0; i < g->n_ovf; i++)
        g->dev->ops->free(g->dev, g->ovf[i]);
    if (g->ws) g->dev->ops->free(g->dev, g->ws);
    if (g->lz) g->dev->ops->free(g->dev, g->lz);
    mt_free(g->lz_free);
    mt_free(g->ovf);
    mt_free(g->tape);
    mt_free(g->mark);
    mt_free(g->tab);
    mt_free(g->pv);
    gemm_tuner_free(g->tuner);
    mt_arena_free(g->arena);
    mt_free(g);
}

void mt_graph_set_training(mt_graph *g, bool training) { g->training = training; }
bool mt_graph_training(const mt_graph *g) { return g->training; }
bool mt_graph_kv_f16(const mt_graph *g) {
    return g->prm.decode.caches != MT_CACHE_F32 && !g->training;
}

bool mt_graph_kv_bf16(const mt_graph *g, int64_t dk) {
    const mt_device_ops *ops = graph_ops(g);
    return mt_graph_kv_f16(g) && g->prm.decode.caches == MT_CACHE_F16_BF16_CONTEXT &&
           ops->attn_bf16 && ops->attn_bf16(graph_device(g), dk);
}

bool mt_graph_kv_keys_i8(const mt_graph *g, int64_t dk) {
    return mt_graph_kv_f16(g) && g->prm.decode.caches == MT_CACHE_F16_INT8_KEYS &&
           mt_attn_rows_supported(g) && mt_pack_rows_kq_supported(g, dk);
}
mt_status mt_graph_status(const mt_graph *g) { return g->err; }

mt_graph_stats mt_graph_get_stats(const mt_graph *g) {
    mt_graph_stats s;
    memset(&s, 0, sizeof s);
    s.n_nodes = g->n_nodes;
    s.workspace_capacity = g->ws_cap;
    s.workspace_used = g->ws_need;
    s.arena_capacity = mt_arena_capacity(g->arena);
    s.workspace_grow_count = g->ws_grows;
    s.memo_hits = g->memo_hits;
    for (const memo_entry *e = g->live; e; e = e->next_all)
        s.memo_entries++;
    s.values_capacity = g->lz_cap;
    s.values_peak = g->lz_high;
    return s;
}

/* ------------------------------------------------------ forward, backward */

static bool aborted(const mt_graph *g) {
    return g->prm.should_abort != NULL && g->prm.should_abort(g->prm.abort_user);
}

/* One consumer of s has run: s is released when it was the last (views
** release their source in turn). */
static void drop_use(mt_graph *g, mt_node *s) {
    while (s != NULL && s->lazy) {
        MT_ASSERT(s->uses > 0);
        if (--s->uses > 0 || s->keep || s->released) return;
        s->released = true;
        if (op_is_view(s->op)) {
            s->val.data = NULL;
            s = s->src[0];
            continue;
        }
        lz_release(g, s->val.data, shape_bytes(&s->val.shape, s->val.dtype));
        s->val.data = NULL;
        return;
    }
}

/* release_values: n's value and scratch from the region, before its forward. */
static mt_status take_values(mt_graph *g, mt_node *n) {
    if (n->lazy && !op_is_view(n->op)) {
        size_t bytes = shape_bytes(&n->val.shape, n->val.dtype);
        n->val.data = lz_alloc(g, bytes);
        if (n->val.data == NULL) return g->err;
        poison(g, n->val.data, bytes);
    }
    if (n->lazy_aux) {
        n->aux = lz_alloc(g, n->aux_bytes);
        if (n->aux == NULL) return g->err;
        poison(g, n->aux, n->aux_bytes);
    }
    return MT_OK;
}

/* release_values, after n's forward: its scratch (no backward here) and the
** sources it was the last consumer of go back to the region. */
static void give_back(mt_graph *g, mt_node *n) {
    if (n->lazy_aux) {
        lz_release(g, n->aux, n->aux_bytes);
        n->aux = NULL;
        n->lazy_aux = false;
    }
    if (!op_is_view(n->op)) /* a view holds its source until it is released */
        for (int j = 0; j < n->n_src; j++)
            drop_use(g, n->src[j]);
}

void mt_graph_keep(mt_graph *g, mt_node *n) {
    (void)g;
    if (n != NULL) n->keep = true;
}

mt_status mt_graph_forward(mt_graph *g) {
    if (g->err != MT_OK) return sticky(g);
    bool rel = release_active(g);
    for (int64_t i = g->next_fwd; rel && i < g->n_nodes; i++) { /* consumers to come */
        mt_node *n = g->tape[i];
        if (n->computed) continue;
        for (int j = 0; j < n->n_src; j++)
            if (n->src[j]->lazy) n->src[j]->uses++;
    }
    for (; g->next_fwd < g->n_nodes; g->next_fwd++) {
        mt_node *n = g->tape[g->next_fwd];
        if (n->computed) continue;
        if (aborted(g)) return MT_ABORTED;
        if (rel && take_values(g, n) != MT_OK) return g->err;
        mt_status rc = n->op->forward ? n->op->forward(g, n) : MT_OK;
        if (rc != MT_OK) return record(g, rc);
        n->computed = true;
        if (rel) give_back(g, n);
    }
    return MT_OK;
}

static mt_status prepare_grad(mt_graph *g, mt_node *n) {
    if (n->params != NULL && n->n_src == 0) { /* view of the parameter's grad */
        mt_tensor *pg = mt_params_grad_at(n->params, n->param_index);
        if (pg == NULL) {
            mt_status rc = mt_params_alloc_grads(n->params);
            if (rc != MT_OK) return record(g, rc);
            pg = mt_params_grad_at(n->params, n->param_index);
            MT_ASSERT(pg != NULL);
        }
        n->grad = *pg;
        n->grad.owns = false;
        if (n->grad.dev == NULL) n->grad.dev = params_device(n->params);
        return MT_OK;
    }
    size_t bytes = shape_bytes(&n->val.shape, MT_F32);
    if (n->grad.data == NULL) { /* a second backward over the graph reuses it */
        void *p = ws_alloc(g, bytes);
        if (p == NULL) return g->err;
        n->grad.shape = n->val.shape;
        n->grad.dtype = MT_F32;
        n->grad.dev = g->dev;
        n->grad.data = p;
    }
    return bytes ? g->dev->ops->memset0(g->dev, n->grad.data, bytes) : MT_OK;
}

mt_status mt_graph_backward(mt_graph *g, mt_node *loss) {
    if (g->err != MT_OK) return sticky(g);
    if (release_active(g))
        return mt_seterr(MT_ERR_INVALID, "graph: backward in a graph that releases values");
    if (loss == NULL) return mt_seterr(MT_ERR_INVALID, "mt_graph_backward: loss is NULL");
    if (mt_shape_numel(&loss->val.shape) != 1 || loss->val.dtype != MT_F32) {
        char sb[96];
        return mt_seterr(MT_ERR_INVALID, "mt_graph_backward: loss must be one f32, got %s %s",
                         mt_dtype_name(loss->val.dtype),
                         mt_shape_str(&loss->val.shape, sb, sizeof sb));
    }
    mt_status rc = mt_graph_forward(g);
    if (rc != MT_OK) return rc;
    if (!loss->needs_grad) return MT_OK; /* nothing trainable upstream */
    if (loss->n_src == 0) {
        return mt_seterr(MT_ERR_INVALID, "mt_graph_backward: loss is a parameter leaf");
    }
    MT_ASSERT(!loss->is_memo && loss->id < g->n_nodes && g->tape[loss->id] == loss);

    if (g->mark_cap < g->cap_nodes) {
        unsigned char *m = mt_try_malloc((size_t)g->cap_nodes);
        if (m == NULL) {
            graph_fail(g, MT_ERR_NOMEM, "graph: out of memory (backward marks)");
            return g->err;
        }
        mt_free(g->mark);
        g->mark = m;
        g->mark_cap = g->cap_nodes;
    }
    int64_t last = loss->id;
    memset(g->mark, 0, (size_t)last + 1);
    g->mark[last] = 1;
    for (int64_t i = last; i >= 0; i--) {
        mt_node *n = g->tape[i];
        if (!g->mark[i] || !n->needs_grad) continue;
        for (int s = 0; s < n->n_src; s++) {
            mt_node *x = n->src[s];
            if (!x->needs_grad) continue;
            MT_ASSERT(!x->is_memo && x->id < i && g->tape[x->id] == x);
            g->mark[x->id] = 1;
        }
    }
    for (int64_t i = 0; i <= last; i++) {
        mt_node *n = g->tape[i];
        if (!g->mark[i] || !n->needs_grad) continue;
        rc = prepare_grad(g, n);
        if (rc != MT_OK) return rc;
    }
    g->dev->ops->fill_f32(g->dev, 1, 1.0f, node_grad_f32(loss));
    for (int64_t i = last; i >= 0; i--) {
        mt_node *n = g->tape[i];
        if (!g->mark[i] || !n->needs_grad || n->n_src == 0) continue;
        if (aborted(g)) return MT_ABORTED;
        if (n->op->backward == NULL) {
            mt_log(MT_LOG_ERROR, "backward through the non-differentiable op '%s'", n->op->name);
            MT_ASSERT(n->op->backward != NULL);
        }
        rc = n->op->backward(g, n);
        if (rc != MT_OK) return record(g, rc);
    }
    return MT_OK;
}

/* -------------------------------------------------------- node accessors */

mt_shape mt_node_shape(const mt_node *n) { return n->val.shape; }
mt_dtype mt_node_dtype(const mt_node *n) { return n->val.dtype; }
int64_t mt_node_numel(const mt_node *n) { return mt_shape_numel(&n->val.shape); }
const mt_tensor *mt_node_value(const mt_node *n) { return &n->val; }
const char *mt_node_op_name(const mt_node *n) { return n->op->name; }

/* Copies t (numel elements of its dtype) to host and widens it to f32 in
** place, back to front (element i of f32 lies at or after element i of the
** narrower type, so nothing unread is overwritten). */
static mt_status copy_as_f32(const mt_tensor *t, float *host, int64_t numel, const char *what) {
    if (numel != mt_tensor_numel(t)) {
        return mt_seterr(MT_ERR_INVALID, "%s: %lld elements requested, node has %lld", what,
                         (long long)numel, (long long)mt_tensor_numel(t));
    }
    if (numel == 0) return MT_OK;
    if (t->data == NULL)
        return mt_seterr(MT_ERR_INVALID,
                         "%s: the node has no value (not computed, or released after its last "
                         "use: mt_graph_keep it)",
                         what);
    mt_device *d = t->dev ? t->dev : mt_device_cpu();
    mt_status rc = d->ops->copy(d, host, t->data, mt_tensor_bytes(t), 1);
    if (rc != MT_OK) return rc;
    switch (t->dtype) {
    case MT_F32: break;
    case MT_F16:
        for (int64_t i = numel - 1; i >= 0; i--)
            host[i] = mt_f16_to_f32(((uint16_t *)host)[i]);
        break;
    case MT_BF16:
        for (int64_t i = numel - 1; i >= 0; i--) {
            uint32_t u = (uint32_t)((uint16_t *)host)[i] << 16;
            memcpy(&host[i], &u, sizeof u);
        }
        break;
    case MT_I8:
        for (int64_t i = numel - 1; i >= 0; i--)
            host[i] = (float)((int8_t *)host)[i];
        break;
    case MT_I16:
        for (int64_t i = numel - 1; i >= 0; i--)
            host[i] = (float)((int16_t *)host)[i];
        break;
    case MT_I32:
        for (int64_t i = 0; i < numel; i++)
            host[i] = (float)((int32_t *)host)[i];
        break;
    default: return mt_seterr(MT_ERR_INVALID, "%s: unknown dtype", what);
    }
    return MT_OK;
}

mt_status mt_node_get(const mt_node *n, float *host, int64_t numel) {
    if (n == NULL) return mt_seterr(MT_ERR_INVALID, "mt_node_get: node is NULL");
    if (!n->computed) {
        return mt_seterr(MT_ERR_INVALID, "mt_node_get: %s node not computed (run forward)",
                         n->op->name);
    }
    return copy_as_f32(&n->val, host, numel, "mt_node_get");
}

/* The checks of the fused output-layer reductions: a computed 2-D f32
** node on the host. */
static mt_status check_rows_node(const mt_node *n, const char *what) {
    if (n == NULL || !n->computed || n->released)
        return mt_seterr(MT_ERR_INVALID, "%s: node %s", what,
                         n == NULL      ? "is NULL"
                         : !n->computed ? "not computed (run forward)"
                                        : "released after its last use");
    const mt_tensor *v = &n->val;
    if (v->dtype != MT_F32 || v->shape.ndim != 2 || v->shape.dim[1] < 1)
        return mt_seterr(MT_ERR_INVALID, "%s: %s node of %d dimensions", what,
                         mt_dtype_name(v->dtype), v->shape.ndim);
    return MT_OK;
}

mt_status mt_node_logsoftmax_topk(const mt_node *n, int32_t k, int32_t *idx, float *logp) {
    mt_status rc = check_rows_node(n, "mt_node_logsoftmax_topk");
    if (rc != MT_OK) return rc;
    if (k < 1) return mt_seterr(MT_ERR_INVALID, "mt_node_logsoftmax_topk: k %d", (int)k);
    const mt_tensor *v = &n->val;
    mt_device *d = v->dev;
    if (d->kind != 0 || d->ops->softmax_topk == NULL)
        return mt_seterr(MT_ERR_UNSUPPORTED, "mt_node_logsoftmax_topk: not on device %s",
                         d->ops->name);
    d->ops->softmax_topk(d, v->shape.dim[0], v->shape.dim[1], node_f32(n), k, idx, logp);
    return MT_OK;
}

mt_status mt_node_argmax(const mt_node *n, const float *bias, int32_t *idx) {
    mt_status rc = check_rows_node(n, "mt_node_argmax");
    if (rc != MT_OK) return rc;
    mt_device *d = n->val.dev;
    if (d->kind != 0 || d->ops->argmax_rows == NULL)
        return mt_seterr(MT_ERR_UNSUPPORTED, "mt_node_argmax: not on device %s", d->ops->name);
    int64_t rows = n->val.shape.dim[0];
    float val[256];
    for (int64_t r0 = 0; r0 < rows; r0 += 256) {
        int64_t m = rows - r0 < 256 ? rows - r0 : 256, cols = n->val.shape.dim[1];
        d->ops->argmax_rows(d, m, cols, node_f32(n) + r0 * cols, bias, idx + r0, val);
        for (int64_t r = 0; r < m; r++)
            if (!(val[r] > -INFINITY)) idx[r0 + r] = -1;
    }
    return MT_OK;
}

mt_status mt_node_get_i32(const mt_node *n, int32_t *host, int64_t numel) {
    if (n == NULL) return mt_seterr(MT_ERR_INVALID, "mt_node_get_i32: node is NULL");
    if (!n->computed || n->val.dtype != MT_I32)
        return mt_seterr(MT_ERR_INVALID, "mt_node_get_i32: %s node %s", n->op->name,
                         n->computed ? "is not int32" : "not computed (run forward)");
    const mt_tensor *t = &n->val;
    if (numel != mt_tensor_numel(t))
        return mt_seterr(MT_ERR_INVALID, "mt_node_get_i32: %lld elements requested, node has %lld",
                         (long long)numel, (long long)mt_tensor_numel(t));
    if (numel == 0) return MT_OK;
    if (t->data == NULL)
        return mt_seterr(MT_ERR_INVALID, "mt_node_get_i32: the node has no value (released after "
                                         "its last use: mt_graph_keep it)");
    mt_device *d = t->dev ? t->dev : mt_device_cpu();
    return d->ops->copy(d, host, t->data, mt_tensor_bytes(t), 1);
}

mt_status mt_node_get_grad(const mt_node *n, float *host, int64_t numel) {
    if (n == NULL) return mt_seterr(MT_ERR_INVALID, "mt_node_get_grad: node is NULL");
    if (n->grad.data == NULL) {
        return mt_seterr(MT_ERR_INVALID, "mt_node_get_grad: %s node has no gradient", n->op->name);
    }
    return copy_as_f32(&n->grad, host, numel, "mt_node_get_grad");
}

mt_status mt_node_get_scalar(const mt_node *n, float *out) { return mt_node_get(n, out, 1); }
