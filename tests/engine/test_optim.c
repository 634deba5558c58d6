/*
** test_optim.c: mt_adam against a scalar double-precision implementation of
** the formula documented in engine/optim.c (Adam with bias correction,
** AdamW decay, global-norm clipping, warm-up + inverse-sqrt schedule,
** exponential smoothing), plus each feature on its own with hand-computed
** values.
*/
#include <math.h>
#include <string.h>

#include "harness.h"
#include "mt.h"

/* CHECK_CLOSE of harness.h with printf arguments in the message (there, the
** message arguments would come before got/want). */
static int near(double got, double want, double atol, double rtol) {
    return fabs(got - want) <= atol + rtol * fabs(want);
}
#define CHECK_NEAR(got, want, atol, rtol, fmt, ...)                                                \
    CHECK(near((got), (want), (atol), (rtol)), "got %.9g want %.9g: " fmt, (double)(got),          \
          (double)(want), __VA_ARGS__)

#define NW 7 /* a[3] + b[2,2] */

typedef struct ref_adam {
    double w[NW], m[NW], v[NW], s[NW];
    int64_t t;
    double last_norm;
} ref_adam;

/* Marian's Scheduler::updateLearningRate at step b = t - 1: it sets the rate
** of update t after update t - 1 (and before the first, at step 0). */
static double ref_lr(const mt_adam_params *ap, int64_t t) {
    double f = 1, b = (double)(t - 1);
    if (ap->warmup > 0 && b < ap->warmup) f = b / (double)ap->warmup;
    if (ap->decay_inv_sqrt > 0 && b > ap->decay_inv_sqrt) {
        f *= sqrt((double)ap->decay_inv_sqrt / b);
    }
    return ap->lr * f;
}

static void ref_step(ref_adam *r, const mt_adam_params *ap, const double *g_in) {
    r->t++;
    double ss = 0;
    for (int i = 0; i < NW; i++)
        ss += g_in[i] * g_in[i];
    double norm = sqrt(ss), scale = 1;
    r->last_norm = norm;
    if (ap->clip_norm > 0 && norm > ap->clip_norm) scale = ap->clip_norm / norm;
    double lr = ref_lr(ap, r->t);
    double b1 = ap->beta1, b2 = ap->beta2;
    double c1 = 1 - pow(b1, (double)r->t), c2 = 1 - pow(b2, (double)r->t);
    for (int i = 0; i < NW; i++) {
        double g = g_in[i] * scale;
        r->m[i] = b1 * r->m[i] + (1 - b1) * g;
        r->v[i] = b2 * r->v[i] + (1 - b2) * g * g;
        r->w[i] -=
            lr * ((r->m[i] / c1) / (sqrt(r->v[i] / c2) + ap->eps) + ap->weight_decay * r->w[i]);
    }
    if (ap->smoothing > 0) {
        double d = 1.0 - (double)r->t / (double)(r->t + 9);
        if (d < ap->smoothing) d = ap->smoothing;
        for (int i = 0; i < NW; i++)
            r->s[i] = (1 - d) * r->s[i] + d * r->w[i];
    }
}

/* Copies the 7 weights (or grads/moments) of params a and b. */
static void get7(mt_tensor *a, mt_tensor *b, float *out) {
    CHECK_STATUS(mt_tensor_get(a, out, 3 * sizeof(float)));
    CHECK_STATUS(mt_tensor_get(b, out + 3, 4 * sizeof(float)));
}

static void compare_run(mt_adam_params ap, int steps, const char *what) {
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 5, &p));
    if (!p) return;
    float a0[3] = {0.5f, -1.0f, 2.0f}, b0[4] = {0.1f, 0.2f, -0.3f, 0.4f};
    mt_tensor *ta = NULL, *tb = NULL;
    CHECK_STATUS(mt_params_get(p, "a", MT_F32, mt_shape1(3), mt_init_values(a0, 3), &ta));
    CHECK_STATUS(mt_params_get(p, "b", MT_F32, mt_shape2(2, 2), mt_init_values(b0, 4), &tb));
    CHECK_STATUS(mt_params_alloc_grads(p));
    mt_adam *adam = NULL;
    CHECK_STATUS(mt_adam_init(p, ap, &adam));
    if (!adam || !ta || !tb) return;

    ref_adam r;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < 3; i++)
        r.w[i] = a0[i];
    for (int i = 0; i < 4; i++)
        r.w[3 + i] = b0[i];
    memcpy(r.s, r.w, sizeof r.w);

    mt_rng rng;
    mt_rng_seed(&rng, 11);
    int bad = 0;
    for (int step = 1; step <= steps; step++) {
        float g[NW];
        double gd[NW];
        double mag = (step % 3 == 0) ? 0.05 : 1.0; /* some steps below the clip */
        for (int i = 0; i < NW; i++) {
            g[i] = (float)(mag * (2 * mt_rng_uniform(&rng) - 1));
            gd[i] = g[i];
        }
        CHECK_STATUS(mt_tensor_set(mt_params_grad_at(p, 0), g, 3 * sizeof(float)));
        CHECK_STATUS(mt_tensor_set(mt_params_grad_at(p, 1), g + 3, 4 * sizeof(float)));
        CHECK_NEAR(mt_adam_lr(adam), ref_lr(&ap, step), 0, 1e-6, "%s lr at %d", what, step);
        CHECK_STATUS(mt_adam_step(adam));
        ref_step(&r, &ap, gd);

        float w[NW], m[NW], v[NW], s[NW], gz[NW];
        get7(ta, tb, w);
        get7(mt_adam_moment(adam, 0, 0), mt_adam_moment(adam, 0, 1), m);
        get7(mt_adam_moment(adam, 1, 0), mt_adam_moment(adam, 1, 1), v);
        get7(mt_params_grad_at(p, 0), mt_params_grad_at(p, 1), gz);
        for (int i = 0; i < NW; i++) {
            bad += !CHECK_NEAR(w[i], r.w[i], 1e-6, 1e-5, "%s step %d w[%d]", what, step, i);
            bad += !CHECK_NEAR(m[i], r.m[i], 1e-7, 1e-5, "%s step %d m[%d]", what, step, i);
            bad += !CHECK_NEAR(v[i], r.v[i], 1e-9, 1e-5, "%s step %d v[%d]", what, step, i);
            bad += !CHECK(gz[i] == 0, "%s step %d: grads zeroed", what, step);
        }
        if (ap.smoothing > 0) {
            get7(mt_adam_smoothed(adam, 0), mt_adam_smoothed(adam, 1), s);
            for (int i = 0; i < NW; i++) {
                bad += !CHECK_NEAR(s[i], r.s[i], 1e-6, 1e-5, "%s step %d s[%d]", what, step, i);
            }
        } else {
            CHECK(mt_adam_smoothed(adam, 0) == NULL, "no smoothing state");
        }
        CHECK_NEAR(mt_adam_last_grad_norm(adam), r.last_norm, 0, 1e-5, "%s norm", what);
        if (bad > 10) break;
    }
    CHECK(mt_adam_steps(adam) == steps || bad, "step count");

    if (ap.smoothing > 0) { /* swap: params hold the average, and back */
        float w[NW], s[NW], w2[NW], s2[NW];
        get7(ta, tb, w);
        get7(mt_adam_smoothed(adam, 0), mt_adam_smoothed(adam, 1), s);
        uint64_t v0 = mt_params_version(p);
        mt_adam_swap_smoothed(adam);
        CHECK(mt_params_version(p) != v0, "swap bumps the version");
        get7(mt_params_at(p, 0), mt_params_at(p, 1), w2);
        get7(mt_adam_smoothed(adam, 0), mt_adam_smoothed(adam, 1), s2);
        CHECK(memcmp(w2, s, sizeof s) == 0 && memcmp(s2, w, sizeof w) == 0, "swapped");
        mt_adam_swap_smoothed(adam);
        get7(mt_params_at(p, 0), mt_params_at(p, 1), w2);
        CHECK(memcmp(w2, w, sizeof w) == 0, "swapped back");
    }
    mt_adam_free(adam);
    mt_params_free(p);
}

static void test_against_reference(void) {
    mt_adam_params ap = mt_adam_default_params();
    ap.clip_norm = 0;
    compare_run(ap, 6, "plain defaults");

    ap.lr = 0.01f;
    ap.eps = 1e-6f;
    ap.weight_decay = 0.01f;
    ap.clip_norm = 0.8f;
    ap.warmup = 3;
    ap.decay_inv_sqrt = 5;
    ap.smoothing = 0.05f;
    compare_run(ap, 12, "all features");
}

static void test_defaults(void) {
    mt_adam_params ap = mt_adam_default_params();
    CHECK(ap.lr == 1e-4f && ap.beta1 == 0.9f && ap.beta2 == 0.98f && ap.eps == 1e-9f,
          "Marian defaults");
    ap.beta1 = 1.0f;
    mt_adam *a = NULL;
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 1, &p));
    CHECK(mt_adam_init(p, ap, &a) == MT_ERR_INVALID && a == NULL, "beta1 = 1 refused");
    mt_params_free(p);
}

/* Schedule values computed from the formula by hand. */
static void test_schedule(void) {
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 1, &p));
    mt_adam_params ap = mt_adam_default_params();
    ap.lr = 2.0f;
    ap.warmup = 4;
    ap.decay_inv_sqrt = 16;
    mt_adam *a = NULL;
    CHECK_STATUS(mt_adam_init(p, ap, &a));
    if (!a) return;
    /* Marian's rate of update t is its schedule at step t - 1 */
    const int64_t t[] = {1, 2, 3, 4, 5, 6, 17, 18, 65, 1601};
    const double want[] = {0.0, 0.5, 1.0, 1.5, 2.0, 2.0, 2.0, 2.0 * sqrt(16.0 / 17), 1.0, 0.2};
    for (int i = 0; i < 10; i++) {
        mt_adam_set_steps(a, t[i] - 1); /* lr of update t */
        CHECK_NEAR(mt_adam_lr(a), want[i], 0, 1e-6, "lr at update %lld", (long long)t[i]);
    }
    mt_adam_free(a);

    ap.warmup = 0; /* decay alone */
    ap.decay_inv_sqrt = 100;
    CHECK_STATUS(mt_adam_init(p, ap, &a));
    mt_adam_set_steps(a, 0);
    CHECK_CLOSE(mt_adam_lr(a), 2.0, 0, 1e-6, "update 1 undecayed");
    mt_adam_set_steps(a, 400);
    CHECK_CLOSE(mt_adam_lr(a), 1.0, 0, 1e-6, "update 401: 2 * sqrt(100/400)");
    mt_adam_free(a);
    mt_params_free(p);
}

static void test_clip_and_decay(void) {
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 1, &p));
    float w0[2] = {1.0f, -2.0f}, g[2] = {3.0f, 4.0f};
    mt_tensor *w = NULL;
    CHECK_STATUS(mt_params_get(p, "w", MT_F32, mt_shape1(2), mt_init_values(w0, 2), &w));
    CHECK_STATUS(mt_params_alloc_grads(p));
    mt_adam_params ap = mt_adam_default_params();
    ap.clip_norm = 1.0f;
    mt_adam *a = NULL;
    CHECK_STATUS(mt_adam_init(p, ap, &a));
    if (!a || !w) return;
    CHECK_STATUS(mt_tensor_set(mt_params_grad_at(p, 0), g, sizeof g));
    CHECK_STATUS(mt_adam_step(a));
    CHECK_CLOSE(mt_adam_last_grad_norm(a), 5.0, 0, 1e-6, "norm before clipping");
    float m[2];
    CHECK_STATUS(mt_tensor_get(mt_adam_moment(a, 0, 0), m, sizeof m));
    /* m = (1 - b1) g_clipped after one step, so |m| / (1 - b1) = clip. */
    double n = sqrt((double)m[0] * m[0] + (double)m[1] * m[1]) / (1 - ap.beta1);
    CHECK_CLOSE(n, 1.0, 0, 1e-5, "clipped norm");
    CHECK_CLOSE(m[0] / m[1], 0.75, 0, 1e-5, "direction kept");
    mt_adam_free(a);

    /* Below the clip: untouched. */
    ap.clip_norm = 10.0f;
    CHECK_STATUS(mt_adam_init(p, ap, &a));
    CHECK_STATUS(mt_tensor_set(mt_params_grad_at(p, 0), g, sizeof g));
    CHECK_STATUS(mt_adam_step(a));
    CHECK_STATUS(mt_tensor_get(mt_adam_moment(a, 0, 0), m, sizeof m));
    CHECK_CLOSE(m[0], 0.3, 0, 1e-5, "unclipped m");
    mt_adam_free(a);

    /* Decoupled weight decay alone (zero gradient): w *= 1 - lr * wd. */
    ap = mt_adam_default_params();
    ap.lr = 0.5f;
    ap.weight_decay = 0.1f;
    CHECK_STATUS(mt_tensor_set(w, w0, sizeof w0));
    mt_params_zero_grads(p);
    CHECK_STATUS(mt_adam_init(p, ap, &a));
    for (int i = 0; i < 3; i++)
        CHECK_STATUS(mt_adam_step(a));
    float wv[2];
    CHECK_STATUS(mt_tensor_get(w, wv, sizeof wv));
    CHECK_CLOSE(wv[0], 1.0 * pow(0.95, 3), 0, 1e-6, "decay w0");
    CHECK_CLOSE(wv[1], -2.0 * pow(0.95, 3), 0, 1e-6, "decay w1");

    /* A NaN gradient: refused, weights unchanged, grads zeroed. */
    float bad[2] = {NAN, 1.0f};
    CHECK_STATUS(mt_tensor_set(mt_params_grad_at(p, 0), bad, sizeof bad));
    CHECK(mt_adam_step(a) == MT_ERR_INVALID && mt_adam_steps(a) == 3, "NaN refused");
    float wv2[2], gz[2];
    CHECK_STATUS(mt_tensor_get(w, wv2, sizeof wv2));
    CHECK_STATUS(mt_tensor_get(mt_params_grad_at(p, 0), gz, sizeof gz));
    CHECK(memcmp(wv, wv2, sizeof wv) == 0 && gz[0] == 0 && gz[1] == 0, "untouched, zeroed");
    mt_adam_free(a);
    mt_params_free(p);
}

/* Parameters created after mt_adam_init get state at the next step;
** frozen ones are left alone. */
static void test_late_params(void) {
    mt_params *p = NULL;
    CHECK_STATUS(mt_params_init(NULL, 1, &p));
    mt_adam *a = NULL;
    CHECK_STATUS(mt_adam_init(p, mt_adam_default_params(), &a));
    if (!a) return;
    mt_tensor *w = NULL, *f = NULL;
    float one[2] = {1, 1};
    CHECK_STATUS(mt_params_get(p, "w", MT_F32, mt_shape1(2), mt_init_values(one, 2), &w));
    CHECK_STATUS(mt_params_get(p, "frozen", MT_F32, mt_shape1(2), mt_init_values(one, 2), &f));
    mt_params_set_trainable(p, "frozen", false);
    CHECK_STATUS(mt_params_alloc_grads(p));
    float g[2] = {1, -1};
    CHECK_STATUS(mt_tensor_set(mt_params_grad_at(p, 0), g, sizeof g));
    uint64_t v0 = mt_params_version(p);
    CHECK_STATUS(mt_adam_step(a));
    CHECK(mt_params_version(p) != v0, "step bumps the version");
    CHECK(mt_adam_moment(a, 0, 0) != NULL && mt_adam_moment(a, 0, 1) == NULL, "state per param");
    float wv[2], fv[2];
    CHECK_STATUS(mt_tensor_get(w, wv, sizeof wv));
    CHECK_STATUS(mt_tensor_get(f, fv, sizeof fv));
    /* First Adam step moves each weight by lr * g / (|g| + eps'). */
    CHECK_CLOSE(wv[0], 1 - 1e-4, 0, 1e-6, "w0 moved by -lr");
    CHECK_CLOSE(wv[1], 1 + 1e-4, 0, 1e-6, "w1 moved by +lr");
    CHECK(fv[0] == 1 && fv[1] == 1, "frozen untouched");
    mt_adam_free(a);
    mt_params_free(p);
}

int main(void) {
    test_defaults();
    test_against_reference();
    test_schedule();
    test_clip_and_decay();
    test_late_params();
    TEST_MAIN_END();
}
