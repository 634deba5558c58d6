/*
** optim.c: Adam with bias correction, decoupled weight decay, global
** gradient-norm clipping, learning-rate schedule and exponential smoothing
** of the weights, over every trainable f32 parameter of an mt_params.
**
** One update t = 1, 2, ... (t counts updates including this one):
**   norm   = sqrt(sum over parameters of sum g^2)
**   g     *= clip / norm                       when clip > 0 and norm > clip
**   b      = t - 1                             (updates before this one)
**   lr_t   = lr * min(1, b / warmup)           (warmup > 0; update 1 has 0)
**               * sqrt(decay / b) if b > decay (decay > 0)
**   m      = b1 m + (1 - b1) g
**   v      = b2 v + (1 - b2) g^2
**   w     -= lr_t * ((m / c1) / (sqrt(v / c2) + eps) + wd * w),
**            c1 = 1 - b1^t, c2 = 1 - b2^t
**   s      = (1 - d) s + d w,  d = max(smoothing, 1 - t / (t + 9))
**            (smoothing > 0; s starts as a copy of w)
** then the gradients are zeroed and the params' version bumped.
**
** Against Marian (reference/marian-compat.md sec. 10.2):
**  - Adam: Marian's running denominators d1 = b1 d1 + (1 - b1) from d1 = 0
**    equal c1 = 1 - b1^t; its weight decay is the same AdamW-style term.
**  - warm-up: Marian's factor min(1, step / warmup) with warm-up start rate
**    0, the step being the updates done before this one: Marian's scheduler
**    computes the rate after each update (TrainingState::newUpdate ->
**    actAfterBatches) for the next, and from 0 updates before the first, so
**    its first update moves the moments only.
**  - inverse-sqrt decay: Marian's sqrt(N / (step - start + N)) once step >
**    start, with start defaulting to N, i.e. sqrt(N / step) for step > N.
**  - smoothing: Marian's avg = (1 - d) avg + d p with d = max(smoothing,
**    1 - (b + 1) / (b + 10)), b = updates before this one (b = t - 1).  The
**    adjustment of the smoothing factor by batch size in target words
**    (--mini-batch-words-ref) is not implemented.
** A non-finite gradient norm skips the update (weights untouched,
** gradients zeroed, step count unchanged) and returns MT_ERR_INVALID.
**
** State (m, v, smoothed copy) is allocated per parameter on the params'
** device at init and, for parameters created later (models build their
** parameters lazily on the first graph), at the first step that sees them.
*/
#include <math.h>
#include <string.h>

#include "device.h"
#include "params_impl.h"

typedef struct slot {
    mt_tensor m, v, s; /* s.data NULL when smoothing is off */
    bool has;
} slot;

struct mt_adam {
    mt_params *p;
    mt_adam_params ap;
    int64_t t; /* updates done */
    float last_norm;
    slot *slots;
    int n_slots, cap;
};

mt_adam_params mt_adam_default_params(void) {
    mt_adam_params a;
    memset(&a, 0, sizeof a);
    a.lr = 1e-4f;   /* --learn-rate */
    a.beta1 = 0.9f; /* --optimizer-params 0.9 0.98 1e-9 (transformer recipes) */
    a.beta2 = 0.98f;
    a.eps = 1e-9f;
    a.weight_decay = 0.0f;
    a.clip_norm = 1.0f; /* --clip-norm 1 */
    a.warmup = 0;
    a.decay_inv_sqrt = 0;
    a.smoothing = 0.0f; /* --exponential-smoothing 0 (bare flag: 1e-4) */
    return a;
}

static bool active(mt_adam *a, int i) {
    return i < a->n_slots && a->slots[i].has && mt_params_trainable_at(a->p, i) &&
           mt_params_grad_at(a->p, i) != NULL;
}

static void slot_free(slot *s) {
    mt_tensor_free(&s->m);
    mt_tensor_free(&s->v);
    mt_tensor_free(&s->s);
    s->has = false;
}

/* Allocates state for trainable parameters that have none yet. */
static mt_status ensure_state(mt_adam *a) {
    int n = mt_params_count(a->p);
    if (n > a->cap) {
        int cap = a->cap ? a->cap : 64;
        while (cap < n)
            cap *= 2;
        slot *s = mt_try_realloc(a->slots, (size_t)cap * sizeof *s);
        if (s == NULL) return mt_seterr(MT_ERR_NOMEM, "adam: out of memory (%d slots)", cap);
        memset(s + a->cap, 0, (size_t)(cap - a->cap) * sizeof *s);
        a->slots = s;
        a->cap = cap;
    }
    if (n > a->n_slots) a->n_slots = n;
    mt_device *dev = params_device(a->p);
    for (int i = 0; i < n; i++) {
        slot *s = &a->slots[i];
        if (s->has || !mt_params_trainable_at(a->p, i)) continue;
        const mt_tensor *w = mt_params_at(a->p, i);
        mt_status rc = mt_tensor_init(dev, MT_F32, w->shape, &s->m);
        if (rc == MT_OK) rc = mt_tensor_init(dev, MT_F32, w->shape, &s->v);
        if (rc == MT_OK && a->ap.smoothing > 0) {
            rc = mt_tensor_init(dev, MT_F32, w->shape, &s->s);
            if (rc == MT_OK && mt_tensor_bytes(w)) {
                rc = dev->ops->copy(dev, s->s.data, w->data, mt_tensor_bytes(w), 2);
            }
        }
        if (rc != MT_OK) {
            slot_free(s);
            return mt_seterr(rc, "adam: cannot allocate state of '%s' (%s)",
                             mt_params_name(a->p, i), mt_status_str(rc));
        }
        s->has = true;
    }
    return MT_OK;
}

mt_status mt_adam_init(mt_params *p, mt_adam_params ap, mt_adam **out) {
    *out = NULL;
    if (!(ap.lr >= 0) || !(ap.beta1 >= 0 && ap.beta1 < 1) || !(ap.beta2 >= 0 && ap.beta2 < 1) ||
        !(ap.eps >= 0) || !(ap.weight_decay >= 0) || !(ap.clip_norm >= 0) || ap.warmup < 0 ||
        ap.decay_inv_sqrt < 0 || !(ap.smoothing >= 0 && ap.smoothing < 1)) {
        return mt_seterr(MT_ERR_INVALID,
                         "adam: invalid parameters (lr %g, betas %g %g, eps %g, wd %g, clip %g, "
                         "warmup %lld, decay %lld, smoothing %g)",
                         ap.lr, ap.beta1, ap.beta2, ap.eps, ap.weight_decay, ap.clip_norm,
                         (long long)ap.warmup, (long long)ap.decay_inv_sqrt, ap.smoothing);
    }
    mt_adam *a = mt_try_calloc(1, sizeof *a);
    if (a == NULL) return mt_seterr(MT_ERR_NOMEM, "adam: out of memory");
    a->p = p;
    a->ap = ap;
    mt_status rc = ensure_state(a);
    if (rc != MT_OK) {
        mt_adam_free(a);
        return rc;
    }
    *out = a;
    return MT_OK;
}

void mt_adam_free(mt_adam *a) {
    if (a == NULL) return;
    for (int i = 0; i < a->n_slots; i++)
        slot_free(&a->slots[i]);
    mt_free(a->slots);
    mt_free(a);
}

/* The rate of update t: Marian's schedule at the updates done before it,
** b = t - 1 (its scheduler sets the rate after each update for the next). */
static float lr_at(const mt_adam *a, int64_t t) {
    double f = 1.0, b = (double)(t - 1);
    if (a->ap.warmup > 0 && b < (double)a->ap.warmup) f = b / (double)a->ap.warmup;
    if (a->ap.decay_inv_sqrt > 0 && b > (double)a->ap.decay_inv_sqrt) {
        f *= sqrt((double)a->ap.decay_inv_sqrt / b);
    }
    return (float)(a->ap.lr * f);
}

mt_status mt_adam_step(mt_adam *a) {
    mt_status rc = ensure_state(a);
    if (rc != MT_OK) return rc;
    mt_device *dev = params_device(a->p);
    const mt_device_ops *ops = dev->ops;
    int n = a->n_slots;

    double ss = 0.0;
    for (int i = 0; i < n; i++) {
        if (!active(a, i)) continue;
        const mt_tensor *g = mt_params_grad_at(a->p, i);
        ss += ops->sumsq_f32(dev, mt_tensor_numel(g), g->data);
    }
    double norm = sqrt(ss);
    a->last_norm = (float)norm;
    if (!isfinite(norm)) {
        mt_params_zero_grads(a->p);
        return mt_seterr(MT_ERR_INVALID, "adam: gradient norm is not finite at update %lld",
                         (long long)(a->t + 1));
    }
    if (a->ap.clip_norm > 0 && norm > a->ap.clip_norm) {
        float scale = (float)(a->ap.clip_norm / norm);
        for (int i = 0; i < n; i++) {
            if (!active(a, i)) continue;
            mt_tensor *g = mt_params_grad_at(a->p, i);
            ops->unary_fwd(dev, MT_UN_SCALE, mt_tensor_numel(g), scale, g->data, g->data);
        }
    }

    int64_t t = a->t + 1;
    float lr = lr_at(a, t);
    float c1 = (float)(1.0 - pow((double)a->ap.beta1, (double)t));
    float c2 = (float)(1.0 - pow((double)a->ap.beta2, (double)t));
    float beta = 0.0f;
    if (a->ap.smoothing > 0) {
        double d = 1.0 - (double)t / (double)(t + 9);
        if (d < a->ap.smoothing) d = a->ap.smoothing;
        beta = (float)(1.0 - d);
    }
    for (int i = 0; i < n; i++) {
        if (!active(a, i)) continue;
        slot *s = &a->slots[i];
        mt_tensor *w = mt_params_at(a->p, i);
        const mt_tensor *g = mt_params_grad_at(a->p, i);
        int64_t k = mt_tensor_numel(w);
        ops->adam_f32(dev, k, w->data, g->data, s->m.data, s->v.data, lr, a->ap.beta1, a->ap.beta2,
                      a->ap.eps, a->ap.weight_decay, c1, c2);
        if (s->s.data) ops->smooth_f32(dev, k, w->data, s->s.data, beta);
    }
    mt_params_zero_grads(a->p);
    mt_params_touch(a->p);
    a->t = t;
    return MT_OK;
}

float mt_adam_lr(const mt_adam *a) { return lr_at(a, a->t + 1); }
int64_t mt_adam_steps(const mt_adam *a) { return a->t; }
float mt_adam_last_grad_norm(const mt_adam *a) { return a->last_norm; }
void mt_adam_set_steps(mt_adam *a, int64_t t) { a->t = t < 0 ? 0 : t; }

mt_tensor *mt_adam_moment(mt_adam *a, int which, int i) {
    MT_ASSERT(which == 0 || which == 1);
    if (i < 0 || i >= a->n_slots || !a->slots[i].has) return NULL;
    return which == 0 ? &a->slots[i].m : &a->slots[i].v;
}

mt_tensor *mt_adam_smoothed(mt_adam *a, int i) {
    if (i < 0 || i >= a->n_slots || !a->slots[i].has || a->slots[i].s.data == NULL) return NULL;
    return &a->slots[i].s;
}

void mt_adam_swap_smoothed(mt_adam *a) {
    bool any = false;
    for (int i = 0; i < a->n_slots; i++) {
        if (!a->slots[i].has || a->slots[i].s.data == NULL) continue;
        params_swap_data(a->p, i, &a->slots[i].s);
        any = true;
    }
    if (any) mt_params_touch(a->p);
}
