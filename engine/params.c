/*
** params.c: named persistent tensors (the model lifetime) with gradients,
** trainable flags and a version counter.
**
** Storage: an array of entries in creation order (entries are allocated one
** by one, so the mt_tensor pointers handed out stay valid while the array
** grows) and an open-addressing hash table name -> index (linear probing,
** power-of-two size, load <= 1/2), so lookups are O(1) with hundreds of
** parameters.
**
** Initialisation (fan_in, fan_out as in Marian's inits, which take the last
** two dims): ndim >= 2: fan_in = dim[ndim-2], fan_out = dim[ndim-1];
** ndim == 1: fan_in = 1, fan_out = dim[0] (the same as [1, d]); ndim == 0:
** 1, 1.  Glorot uniform: U(-a, a), a = sqrt(6 / (fan_in + fan_out));
** Glorot normal: N(0, s^2), s = sqrt(2 / (fan_in + fan_out)).  Values are
** drawn on the host from the params' RNG (seeded at init; creation order
** decides the stream) and copied to the device.  f16 parameters are drawn in
** f32 and rounded; integer parameters accept every scheme, rounded to
** nearest and saturated.
**
** Versions come from one process-wide counter, so a version number is never
** reused, not even by another mt_params allocated at the same address (the
** graph's memo cache keys on the params pointer and checks the version).
*/
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "device.h"
#include "params_impl.h"

typedef struct entry {
    mt_tensor val;
    mt_tensor grad; /* data NULL until allocated */
    bool trainable;
    float qmult; /* pre-quantized int8/int16 weight: its multiplier; else 0 */
    char name[]; /* NUL-terminated */
} entry;

/* A packed form of one parameter (params_pack_ref), shared by all graphs. */
typedef struct params_pack {
    int index;
    uint64_t version, key, serial;
    size_t bytes;
    void *data; /* NULL: a free entry */
    mt_device *dev;
    int refs;
} params_pack;

struct mt_params {
    mt_device *dev;
    mt_rng rng;
    entry **items;
    int n, cap;
    int *slots; /* index + 1, 0 = empty */
    size_t n_slots;
    uint64_t version;
    pthread_mutex_t pack_mu; /* the packs: graphs of several threads share them */
    params_pack *packs;
    int n_packs, cap_packs;
    /* where the next lookup and release start: a step takes (and a clear
    ** gives back) the packs in the order of the first step that made them,
    ** so each search ends at the first entry it tries */
    int ref_cursor, unref_cursor;
};

static atomic_uint_fast64_t version_counter;

static uint64_t next_version(void) { return (uint64_t)atomic_fetch_add(&version_counter, 1) + 1; }

static uint64_t hash_name(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

mt_status mt_params_init(mt_device *dev, uint64_t seed, mt_params **out) {
    *out = NULL;
    mt_params *p = mt_try_calloc(1, sizeof *p);
    if (p == NULL) return mt_seterr(MT_ERR_NOMEM, "params: out of memory");
    p->dev = dev ? dev : mt_device_cpu();
    mt_rng_seed(&p->rng, seed);
    p->version = next_version();
    pthread_mutex_init(&p->pack_mu, NULL);
    *out = p;
    return MT_OK;
}

void mt_params_free(mt_params *p) {
    if (p == NULL) return;
    for (int i = 0; i < p->n; i++) {
        mt_tensor_free(&p->items[i]->val);
        mt_tensor_free(&p->items[i]->grad);
        mt_free(p->items[i]);
    }
    mt_free(p->items);
    mt_free(p->slots);
    for (int i = 0; i < p->n_packs; i++) {
        params_pack *e = &p->packs[i];
        if (e->data == NULL) continue;
        MT_ASSERT(e->refs == 0); /* every graph that used a pack is cleared or freed */
        e->dev->ops->free(e->dev, e->data);
    }
    mt_free(p->packs);
    pthread_mutex_destroy(&p->pack_mu);
    mt_free(p);
}

/* ---------------------------------------------------------------- packs */

static atomic_uint_fast64_t pack_serials;

const void *params_pack_ref(mt_params *p, int index, uint64_t key, size_t bytes, mt_device *dev,
                            void (*fill)(void *ctx, void *dst), void *ctx, uint64_t *serial) {
    const void *out = NULL;
    pthread_mutex_lock(&p->pack_mu);
    for (int k = 0; k < p->n_packs; k++) {
        int i = (p->ref_cursor + k) % p->n_packs;
        params_pack *e = &p->packs[i];
        if (e->data && e->index == index && e->key == key && e->version == p->version &&
            e->bytes == bytes && e->dev == dev) {
            e->refs++;
            *serial = e->serial;
            p->ref_cursor = i + 1;
            pthread_mutex_unlock(&p->pack_mu);
            return e->data;
        }
    }
    /* not there: drop stale packs nobody uses, then make it */
    params_pack *slot = NULL;
    for (int i = 0; i < p->n_packs; i++) {
        params_pack *e = &p->packs[i];
        if (e->data && e->refs == 0 && e->version != p->version) { /* stale, unused */
            e->dev->ops->free(e->dev, e->data);
            e->data = NULL;
        }
        if (e->data == NULL) {
            if (slot == NULL) slot = e;
            continue;
        }
        if (e->index == index && e->key == key && e->version == p->version && e->bytes == bytes &&
            e->dev == dev) {
            e->refs++;
            *serial = e->serial;
            out = e->data;
            goto done;
        }
    }
    if (slot == NULL) {
        if (p->n_packs == p->cap_packs) {
            int cap = p->cap_packs ? 2 * p->cap_packs : 16;
            params_pack *np = mt_try_realloc(p->packs, sizeof *np * (size_t)cap);
            if (np == NULL) goto done;
            p->packs = np;
            p->cap_packs = cap;
        }
        slot = &p->packs[p->n_packs++];
        *slot = (params_pack){0}; /* free until filled */
    }
    void *d = dev->ops->alloc(dev, bytes);
    if (d == NULL) goto done;
    fill(ctx, d);
    uint64_t id = (uint64_t)atomic_fetch_add(&pack_serials, 1) + 1;
    *slot = (params_pack){index, p->version, key, id, bytes, d, dev, 1};
    *serial = slot->serial;
    out = d;
done:
    pthread_mutex_unlock(&p->pack_mu);
    return out;
}

void params_pack_unref(mt_params *p, const void *data) {
    pthread_mutex_lock(&p->pack_mu);
    for (int k = 0; k < p->n_packs; k++) {
        int i = (p->unref_cursor + k) % p->n_packs;
        if (p->packs[i].data == data) {
            MT_ASSERT(p->packs[i].refs > 0);
            p->packs[i].refs--;
            p->unref_cursor = i + 1;
            break;
        }
    }
    pthread_mutex_unlock(&p->pack_mu);
}

size_t mt_params_packed_bytes(mt_params *p, int *n_packs) {
    size_t bytes = 0;
    int n = 0;
    pthread_mutex_lock(&p->pack_mu);
    for (int i = 0; i < p->n_packs; i++) {
        if (p->packs[i].data) {
            bytes += p->packs[i].bytes;
            n++;
        }
    }
    pthread_mutex_unlock(&p->pack_mu);
    if (n_packs) *n_packs = n;
    return bytes;
}

mt_device *params_device(const mt_params *p) { return p->dev; }

/* Slot of name: its index, or -1 (and *slot = the empty slot to use). */
static int lookup(const mt_params *p, const char *name, size_t *slot) {
    if (p->n_slots == 0) return -1;
    size_t mask = p->n_slots - 1;
    for (size_t s = hash_name(name) & mask;; s = (s + 1) & mask) {
        int k = p->slots[s];
        if (k == 0) {
            if (slot) *slot = s;
            return -1;
        }
        if (strcmp(p->items[k - 1]->name, name) == 0) return k - 1;
    }
}

/* Makes room for one more parameter (items array and hash table). */
static mt_status reserve_one(mt_params *p) {
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 64;
        entry **items = mt_try_realloc(p->items, (size_t)cap * sizeof *items);
        if (items == NULL) return mt_seterr(MT_ERR_NOMEM, "params: out of memory (%d)", cap);
        p->items = items;
        p->cap = cap;
    }
    if ((size_t)(p->n + 1) * 2 > p->n_slots) {
        size_t ns = p->n_slots ? p->n_slots * 2 : 128;
        int *slots = mt_try_calloc(ns, sizeof *slots);
        if (slots == NULL) return mt_seterr(MT_ERR_NOMEM, "params: out of memory (hash)");
        for (int i = 0; i < p->n; i++) {
            size_t s = hash_name(p->items[i]->name) & (ns - 1);
            while (slots[s])
                s = (s + 1) & (ns - 1);
            slots[s] = i + 1;
        }
        mt_free(p->slots);
        p->slots = slots;
        p->n_slots = ns;
    }
    return MT_OK;
}

/* Appends e (name already unique, room reserved). */
static int insert(mt_params *p, entry *e) {
    size_t slot = 0;
    int found = lookup(p, e->name, &slot);
    MT_ASSERT(found < 0);
    p->items[p->n] = e;
    p->slots[slot] = p->n + 1;
    return p->n++;
}

static entry *entry_new(const char *name) {
    size_t len = strlen(name);
    entry *e = mt_try_malloc(sizeof *e + len + 1);
    if (e == NULL) return NULL;
    memset(e, 0, sizeof *e);
    memcpy(e->name, name, len + 1);
    e->trainable = true;
    return e;
}

static void fans(const mt_shape *s, double *fan_in, double *fan_out) {
    *fan_in = 1;
    *fan_out = 1;
    if (s->ndim >= 2) {
        *fan_in = (double)s->dim[s->ndim - 2];
        *fan_out = (double)s->dim[s->ndim - 1];
    } else if (s->ndim == 1) {
        *fan_out = (double)s->dim[0];
    }
}

static float saturate(float x, float lo, float hi) {
    if (!(x >= lo)) return lo; /* also NaN */
    return x > hi ? hi : x;
}

/* Fills t (already zeroed) per init; host staging in f32, converted in place. */
static mt_status fill_init(mt_params *p, const char *name, mt_tensor *t, mt_init init) {
    int64_t n = mt_tensor_numel(t);
    if (init.kind == MT_INIT_VALUES && init.n_values != n) {
        return mt_seterr(MT_ERR_INVALID, "param '%s': %lld init values for %lld elements", name,
                         (long long)init.n_values, (long long)n);
    }
    if (init.kind == MT_INIT_ZEROS || n == 0) return MT_OK;
    float *h = mt_try_malloc((size_t)n * sizeof *h);
    if (h == NULL) return mt_seterr(MT_ERR_NOMEM, "param '%s': out of memory (init)", name);
    double fi, fo;
    fans(&t->shape, &fi, &fo);
    switch (init.kind) {
    case MT_INIT_ONES:
        for (int64_t i = 0; i < n; i++)
            h[i] = 1.0f;
        break;
    case MT_INIT_GLOROT_UNIFORM: {
        float a = (float)sqrt(6.0 / (fi + fo));
        for (int64_t i = 0; i < n; i++)
            h[i] = a * (2.0f * mt_rng_uniform(&p->rng) - 1.0f);
        break;
    }
    case MT_INIT_GLOROT_NORMAL: {
        float sd = (float)sqrt(2.0 / (fi + fo));
        for (int64_t i = 0; i < n; i++)
            h[i] = sd * mt_rng_normal(&p->rng);
        break;
    }
    case MT_INIT_UNIFORM:
        for (int64_t i = 0; i < n; i++) {
            h[i] = init.a + (init.b - init.a) * mt_rng_uniform(&p->rng);
        }
        break;
    case MT_INIT_NORMAL:
        for (int64_t i = 0; i < n; i++)
            h[i] = init.a + init.b * mt_rng_normal(&p->rng);
        break;
    case MT_INIT_VALUES: memcpy(h, init.values, (size_t)n * sizeof *h); break;
    default:
        mt_free(h);
        return mt_seterr(MT_ERR_INVALID, "param '%s': unknown init kind %d", name, init.kind);
    }
    /* Narrow in place, front to back: element i of the narrow type never
    ** overlaps an f32 element that is still to be read. */
    switch (t->dtype) {
    case MT_F32: break;
    case MT_F16:
        for (int64_t i = 0; i < n; i++)
            ((uint16_t *)h)[i] = mt_f32_to_f16(h[i]);
        break;
    case MT_I8:
        for (int64_t i = 0; i < n; i++)
            ((int8_t *)h)[i] = (int8_t)lrintf(saturate(h[i], -128, 127));
        break;
    case MT_I16:
        for (int64_t i = 0; i < n; i++) {
            ((int16_t *)h)[i] = (int16_t)lrintf(saturate(h[i], -32768, 32767));
        }
        break;
    case MT_I32:
        for (int64_t i = 0; i < n; i++) {
            ((int32_t *)h)[i] = (int32_t)lrint(saturate(h[i], -2147483648.0f, 2147483520.0f));
        }
        break;
    default: MT_ASSERT(!"fill_init: unknown dtype");
    }
    mt_status rc = mt_tensor_set(t, h, mt_tensor_bytes(t));
    mt_free(h);
    return rc;
}

mt_status params_get_index(mt_params *p, const char *name, mt_dtype dtype, bool any_dtype,
                           mt_shape shape, mt_init init, int *index) {
    char s1[96], s2[96];
    int k = lookup(p, name, NULL);
    if (k >= 0) {
        const mt_tensor *t = &p->items[k]->val;
        if (!mt_shape_eq(&t->shape, &shape) || (!any_dtype && t->dtype != dtype)) {
            return mt_seterr(MT_ERR_INVALID, "param '%s': exists as %s %s, requested %s %s", name,
                             mt_dtype_name(t->dtype), mt_shape_str(&t->shape, s1, sizeof s1),
                             mt_dtype_name(dtype), mt_shape_str(&shape, s2, sizeof s2));
        }
        *index = k;
        return MT_OK;
    }
    mt_status rc = reserve_one(p);
    if (rc != MT_OK) return rc;
    entry *e = entry_new(name);
    if (e == NULL) return mt_seterr(MT_ERR_NOMEM, "param '%s': out of memory", name);
    rc = mt_tensor_init(p->dev, dtype, shape, &e->val);
    if (rc != MT_OK) goto fail;
    rc = fill_init(p, name, &e->val, init);
    if (rc != MT_OK) goto fail;
    *index = insert(p, e);
    return MT_OK;
fail:
    mt_tensor_free(&e->val);
    mt_free(e);
    return rc;
}

mt_status mt_params_get(mt_params *p, const char *name, mt_dtype dtype, mt_shape shape,
                        mt_init init, mt_tensor **out) {
    int k = -1;
    mt_status rc = params_get_index(p, name, dtype, false, shape, init, &k);
    if (rc != MT_OK) return rc;
    *out = &p->items[k]->val;
    return MT_OK;
}

mt_tensor *mt_params_find(const mt_params *p, const char *name) {
    int k = lookup(p, name, NULL);
    return k >= 0 ? &p->items[k]->val : NULL;
}

mt_status mt_params_adopt(mt_params *p, const char *name, mt_tensor *t) {
    if (lookup(p, name, NULL) >= 0) {
        return mt_seterr(MT_ERR_INVALID, "param '%s': already exists (adopt)", name);
    }
    mt_status rc = reserve_one(p);
    if (rc != MT_OK) return rc;
    entry *e = entry_new(name);
    if (e == NULL) return mt_seterr(MT_ERR_NOMEM, "param '%s': out of memory", name);
    mt_device *src_dev = t->dev ? t->dev : mt_device_cpu();
    if (src_dev == p->dev) {
        e->val = *t;
        e->val.dev = p->dev;
    } else { /* another device: copy over, then release the source data */
        rc = mt_tensor_init(p->dev, t->dtype, t->shape, &e->val);
        if (rc == MT_OK && mt_tensor_bytes(t)) {
            void *host = mt_try_malloc(mt_tensor_bytes(t));
            if (host == NULL) {
                rc = mt_seterr(MT_ERR_NOMEM, "param '%s': out of memory (adopt)", name);
            } else {
                rc = mt_tensor_get(t, host, mt_tensor_bytes(t));
                if (rc == MT_OK) rc = mt_tensor_set(&e->val, host, mt_tensor_bytes(t));
                mt_free(host);
            }
        }
        if (rc != MT_OK) {
            mt_tensor_free(&e->val);
            mt_free(e);
            return rc;
        }
        if (t->owns && t->data) src_dev->ops->free(src_dev, t->data);
        t->data = e->val.data;
    }
    t->owns = false;
    insert(p, e);
    p->version = next_version();
    return MT_OK;
}

int mt_params_count(const mt_params *p) { return p->n; }

const char *mt_params_name(const mt_params *p, int i) {
    MT_ASSERT(i >= 0 && i < p->n);
    return p->items[i]->name;
}

mt_tensor *mt_params_at(mt_params *p, int i) {
    MT_ASSERT(i >= 0 && i < p->n);
    return &p->items[i]->val;
}

mt_tensor *mt_params_grad_at(mt_params *p, int i) {
    MT_ASSERT(i >= 0 && i < p->n);
    return p->items[i]->grad.data ? &p->items[i]->grad : NULL;
}

void mt_params_set_trainable(mt_params *p, const char *name, bool trainable) {
    int k = lookup(p, name, NULL);
    if (k < 0) {
        mt_log(MT_LOG_WARN, "mt_params_set_trainable: no parameter '%s'", name);
        return;
    }
    p->items[k]->trainable = trainable;
}

bool mt_params_trainable_at(const mt_params *p, int i) {
    MT_ASSERT(i >= 0 && i < p->n);
    return p->items[i]->trainable && p->items[i]->val.dtype == MT_F32;
}

mt_status mt_params_alloc_grads(mt_params *p) {
    for (int i = 0; i < p->n; i++) {
        entry *e = p->items[i];
        if (!e->trainable || e->val.dtype != MT_F32 || e->grad.data != NULL) continue;
        mt_status rc = mt_tensor_init(p->dev, MT_F32, e->val.shape, &e->grad);
        if (rc != MT_OK) {
            return mt_seterr(rc, "param '%s': cannot allocate its gradient (%s)", e->name,
                             mt_status_str(rc));
        }
    }
    return MT_OK;
}

void mt_params_zero_grads(mt_params *p) {
    for (int i = 0; i < p->n; i++) {
        mt_tensor *g = &p->items[i]->grad;
        if (g->data && mt_tensor_bytes(g))
            p->dev->ops->memset0(p->dev, g->data, mt_tensor_bytes(g));
    }
}

float mt_params_qmult_at(const mt_params *p, int i) {
    MT_ASSERT(i >= 0 && i < p->n);
    return p->items[i]->qmult;
}

void params_set_qmult(mt_params *p, int i, float qmult) {
    MT_ASSERT(i >= 0 && i < p->n);
    p->items[i]->qmult = qmult;
}

uint64_t mt_params_version(const mt_params *p) { return p->version; }

void mt_params_touch(mt_params *p) { p->version = next_version(); }

int64_t mt_params_numel(const mt_params *p) {
    int64_t n = 0;
    for (int i = 0; i < p->n; i++)
        n += mt_tensor_numel(&p->items[i]->val);
    return n;
}

void params_swap_data(mt_params *p, int i, mt_tensor *t) {
    MT_ASSERT(i >= 0 && i < p->n);
    mt_tensor *v = &p->items[i]->val;
    MT_ASSERT(v->dtype == t->dtype && mt_shape_eq(&v->shape, &t->shape));
    void *d = v->data;
    bool o = v->owns;
    v->data = t->data;
    v->owns = t->owns;
    t->data = d;
    t->owns = o;
}

/* ---------------------------------------------------------- init values */

mt_init mt_init_zeros(void) { return (mt_init){.kind = MT_INIT_ZEROS}; }
mt_init mt_init_ones(void) { return (mt_init){.kind = MT_INIT_ONES}; }
mt_init mt_init_glorot_uniform(void) { return (mt_init){.kind = MT_INIT_GLOROT_UNIFORM}; }
mt_init mt_init_glorot_normal(void) { return (mt_init){.kind = MT_INIT_GLOROT_NORMAL}; }
mt_init mt_init_uniform(float lo, float hi) {
    return (mt_init){.kind = MT_INIT_UNIFORM, .a = lo, .b = hi};
}
mt_init mt_init_normal(float mean, float std) {
    return (mt_init){.kind = MT_INIT_NORMAL, .a = mean, .b = std};
}
mt_init mt_init_values(const float *values, int64_t n) {
    return (mt_init){.kind = MT_INIT_VALUES, .values = values, .n_values = n};
}
