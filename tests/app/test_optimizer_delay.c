/*
** test_optimizer_delay.c: `mtpe train --optimizer-delay N` (gradient
** accumulation, app/cmd_train.c) on the 60-pair transformer-tiny fixture,
** dim 16, 1+1 layers, no dropout, no smoothing, corpus order kept
** (--shuffle none --maxi-batch-sort none), so the mini-batches of 2 are
** B1 = pairs 1-2, B2 = pairs 3-4 and the mini-batch of 4 is B1 u B2:
**
**   - union: one update with --mini-batch 2 --optimizer-delay 2 gives the
**     parameters of one update with --mini-batch 4 within the bound below;
**     a control run on B1 alone lies far outside it (the test can fail).
**   - resume: 3 updates, stop, 2 more (delay 3, 16-sentence batches, the
**     2nd update is the epoch's short one: 1 batch left of 4) give exactly
**     the parameters and progress of 5 updates in one run.
**   - usage: --optimizer-delay 0 is a usage error (exit 2).
**
** The bound.  With --clip-norm 0, no warm-up, no weight decay, Adam's first
** step from zero moments is  w1 = w0 - lr * g / (|g| + eps)  (the bias
** corrections give m/c1 = g, sqrt(v/c2) = |g|).  x -> x / (|x| + eps) is
** Lipschitz with constant 1/eps, so with eps = 1 (--optimizer-params 0.9
** 0.98 1):  |w1(delay) - w1(union)| <= lr * |g(delay) - g(union)| + the
** rounding of the step (2 ulp of |w| <= 2 * 2^-23 * max|w|).  Both
** gradients are the same sum of per-label terms (padding is masked to exact
** zeros), in another order: float32 reordering of n terms is off by at most
** 2 n u sum|terms| (u = 2^-24), per product in the backward chain.  Here n
** <= 4 sentences * 30 labels = 120 summed rows, about 10 chained products,
** and sum|terms| <= 60 (120 labels, each cross-entropy gradient row of
** L1 norm <= 2, times weights and activations of magnitude below about
** 0.25 after layer normalisation): 2 * 120 * 6e-8 * 10 * 60 = 8.6e-3, so
** the bound is  lr * 1e-2 + 2.4e-7 * max|w|.  The control (B1 alone) moves
** the parameters by lr * |g(B1)/(|g(B1)|+1) - g(B1uB2)/(|g(B1uB2)|+1)|,
** of order lr * 0.1 for the gradients of a fresh model.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "harness.h"
#include "mt.h"

#define FIX MT_TEST_DATA "/marian/transformer-tiny"
#define LR 0.01

static char dir[64];

static int train(const char *model, const char *const *extra, int n_extra) {
    const char *base[] = {"train",
                          "-m",
                          model,
                          "-t",
                          FIX "/input.en",
                          FIX "/ref.de",
                          "-v",
                          FIX "/vocab.spm",
                          FIX "/vocab.spm",
                          "--dim-emb",
                          "16",
                          "--enc-depth",
                          "1",
                          "--dec-depth",
                          "1",
                          "--transformer-heads",
                          "2",
                          "--transformer-dim-ffn",
                          "32",
                          "--shuffle",
                          "none",
                          "--maxi-batch-sort",
                          "none",
                          "--clip-norm",
                          "0",
                          "--learn-rate",
                          "0.01",
                          "--optimizer-params",
                          "0.9",
                          "0.98",
                          "1",
                          "--seed",
                          "4242",
                          "--cpu-threads",
                          "1",
                          "--disp-freq",
                          "1",
                          "--quiet"};
    int nb = (int)(sizeof base / sizeof base[0]);
    char *argv[64];
    int argc = 0;
    for (int i = 0; i < nb; i++)
        argv[argc++] = (char *)base[i];
    for (int i = 0; i < n_extra; i++)
        argv[argc++] = (char *)extra[i];
    argv[argc] = NULL;
    return app_train_main(argc, argv);
}

static char *path(const char *name) {
    static char buf[8][256];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 256, "%s/%s", dir, name);
    return p;
}

static mt_model_file *load(const char *p) {
    mt_model_file *f = NULL;
    if (mt_model_file_read(p, &f) != MT_OK) {
        CHECK(0, "read %s: %s", p, mt_errmsg());
        return NULL;
    }
    return f;
}

/* max |a - b| over the float parameters both files hold; *wmax: max |a|;
** *n_out: items compared.  exact: also whether every item is bitwise equal. */
static double max_diff(const mt_model_file *a, const mt_model_file *b, double *wmax, int *n_out,
                       bool *exact) {
    double d = 0;
    *wmax = 0;
    *n_out = 0;
    *exact = a->n == b->n;
    for (int i = 0; i < a->n; i++) {
        const mt_tensor *ta = &a->tensors[i];
        const mt_tensor *tb = mt_model_file_find(b, a->names[i]);
        if (tb == NULL) {
            *exact = false;
            continue;
        }
        size_t na = mt_tensor_bytes(ta), nb = mt_tensor_bytes(tb);
        if (na != nb) {
            *exact = false;
            continue;
        }
        if (memcmp(ta->data, tb->data, na)) *exact = false;
        if (ta->dtype != MT_F32) continue;
        const float *x = ta->data, *y = tb->data;
        for (size_t j = 0; j < na / sizeof(float); j++) {
            double e = fabs((double)x[j] - (double)y[j]);
            if (e > d) d = e;
            if (fabs(x[j]) > *wmax) *wmax = fabs(x[j]);
        }
        (*n_out)++;
    }
    return d;
}

static char *slurp(const char *p) {
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strdup(buf);
}

int main(int argc, char **argv) {
    TEST_MAIN_BEGIN(argc, argv);
    snprintf(dir, sizeof dir, "/tmp/mtpe_optdelay.XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        TEST_MAIN_END();
    }

    /* ---- union: delay 2 on B1, B2 against one update on B1 u B2 */
    const char *u4[] = {"--mini-batch", "4", "--after-batches", "1"};
    const char *d2[] = {"--mini-batch", "2", "--optimizer-delay", "2", "--after-batches", "1"};
    const char *b1[] = {"--mini-batch", "2", "--after-batches", "1"};
    CHECK(train(path("union.npz"), u4, 4) == 0, "union run");
    CHECK(train(path("delay.npz"), d2, 6) == 0, "delay-2 run");
    CHECK(train(path("b1.npz"), b1, 4) == 0, "B1-only run");
    mt_model_file *fu = load(path("union.npz")), *fd = load(path("delay.npz"));
    mt_model_file *f1 = load(path("b1.npz"));
    if (fu && fd && f1) {
        double wmax, w2;
        int n, n2;
        bool ex, ex2;
        double dd = max_diff(fd, fu, &wmax, &n, &ex);
        double dc = max_diff(f1, fu, &w2, &n2, &ex2);
        double bound = LR * 1e-2 + 2.4e-7 * wmax;
        printf("# %d parameters, max|w| %.4g: |delay-union| %.3g, bound %.3g, "
               "|B1-union| %.3g\n",
               n, wmax, dd, bound, dc);
        CHECK(n > 4, "compared only %d parameters", n);
        CHECK(dd <= bound, "delay 2 = union: %g > %g", dd, bound);
        CHECK(dc > 10 * bound, "control B1 alone is outside the bound: %g", dc);
        /* the progress of the update counts one update and 4 sentences */
        char *pd = slurp(path("delay.npz.progress.yml"));
        CHECK(pd && strstr(pd, "\nbatches: 1\n"), "delay run: one update");
        CHECK(pd && strstr(pd, "\nbatches-epoch: 2\n"), "delay run: 2 mini-batches read");
        free(pd);
    }
    mt_model_file_free(fu);
    mt_model_file_free(fd);
    mt_model_file_free(f1);

    /* ---- resume: 3 + 2 updates = 5 updates, delay 3, across an epoch end */
    const char *r5[] = {"--mini-batch", "16", "--optimizer-delay", "3", "--after-batches", "5"};
    const char *r3[] = {"--mini-batch", "16", "--optimizer-delay", "3", "--after-batches", "3"};
    CHECK(train(path("r5.npz"), r5, 6) == 0, "5-update run");
    CHECK(train(path("r35.npz"), r3, 6) == 0, "3-update run");
    CHECK(train(path("r35.npz"), r5, 6) == 0, "resumed to 5 updates");
    mt_model_file *a = load(path("r5.npz")), *b = load(path("r35.npz"));
    mt_model_file *ao = load(path("r5.npz.optimizer.npz"));
    mt_model_file *bo = load(path("r35.npz.optimizer.npz"));
    if (a && b && ao && bo) {
        double w;
        int n;
        bool ex, exo;
        double d = max_diff(a, b, &w, &n, &ex);
        max_diff(ao, bo, &w, &n, &exo);
        CHECK(ex, "resumed parameters are bitwise those of one run (max diff %g)", d);
        CHECK(exo, "resumed optimizer state is bitwise that of one run");
    }
    char *pa = slurp(path("r5.npz.progress.yml")), *pb = slurp(path("r35.npz.progress.yml"));
    /* 60 pairs in batches of 16: 4 per epoch, so updates are 3, 1 | 3, 1 | 3 */
    CHECK(pa && strstr(pa, "\nbatches: 5\n") && strstr(pa, "\nepochs: 3\n") &&
              strstr(pa, "\nbatches-epoch: 3\n"),
          "5 updates of delay 3 end in epoch 3 after 3 batches:\n%s", pa ? pa : "");
    CHECK(pa && pb && !strcmp(pa, pb), "resumed progress.yml equals one run's:\n%s---\n%s",
          pa ? pa : "", pb ? pb : "");
    free(pa);
    free(pb);
    mt_model_file_free(a);
    mt_model_file_free(b);
    mt_model_file_free(ao);
    mt_model_file_free(bo);

    /* ---- usage */
    const char *bad[] = {"--optimizer-delay", "0"};
    CHECK(train(path("bad.npz"), bad, 2) == 2, "--optimizer-delay 0 is a usage error");

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("# could not remove %s\n", dir);
    TEST_MAIN_END();
}
