/*
** cmd_demo.c: `mtpe demo`, the main job until the editor lands.  Shows the
** engine end to end: trains a two-layer network with Adam on a task a
** linear model cannot solve (two interleaved spirals), reports the loss and
** accuracy, then loads a model trained by Marian and summarises it.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "mt.h"

#define N_POINTS 256
#define HIDDEN 48

static void make_spirals(float *x, int32_t *y) {
    for (int i = 0; i < N_POINTS; i++) {
        int cls = i % 2;
        float t = (float)(i / 2) / (N_POINTS / 2) * 2.0f * 3.14159265f;
        float r = 0.2f + t / 10.0f;
        float s = cls ? -1.0f : 1.0f;
        x[2 * i] = s * r * cosf(t);
        x[2 * i + 1] = s * r * sinf(t);
        y[i] = cls;
    }
}

/* Builds loss = mean cross-entropy of a 2-HIDDEN-HIDDEN-2 tanh network. */
static mt_node *build(mt_graph *g, mt_params *p, const float *x, const int32_t *y,
                      mt_node **logits) {
    mt_node *in = mt_input(g, mt_shape2(N_POINTS, 2), x);
    mt_node *lab = mt_input_i32(g, mt_shape1(N_POINTS), y);
    mt_node *h = mt_tanh(g, mt_affine(g, in,
                                      mt_param(g, p, "W1", mt_shape2(2, HIDDEN), mt_init_glorot_uniform()),
                                      mt_param(g, p, "b1", mt_shape2(1, HIDDEN), mt_init_zeros())));
    h = mt_tanh(g, mt_affine(g, h,
                             mt_param(g, p, "W2", mt_shape2(HIDDEN, HIDDEN), mt_init_glorot_uniform()),
                             mt_param(g, p, "b2", mt_shape2(1, HIDDEN), mt_init_zeros())));
    *logits = mt_affine(g, h, mt_param(g, p, "W3", mt_shape2(HIDDEN, 2), mt_init_glorot_uniform()),
                        mt_param(g, p, "b3", mt_shape2(1, 2), mt_init_zeros()));
    return mt_scale(g, mt_sum_all(g, mt_cross_entropy(g, *logits, lab, 0.0f)), 1.0f / N_POINTS);
}

static int train_demo(void) {
    static float x[N_POINTS * 2], logits_host[N_POINTS * 2];
    static int32_t y[N_POINTS];
    make_spirals(x, y);
    mt_params *p = NULL;
    mt_graph *g = NULL;
    mt_adam *opt = NULL;
    int rc = 1;
    mt_graph_params gp = mt_graph_default_params();
    gp.training = true;
    if (mt_params_init(NULL, 1234, &p) != MT_OK || mt_graph_init(NULL, gp, &g) != MT_OK) goto fail;
    mt_adam_params ap = mt_adam_default_params();
    ap.lr = 0.01f;
    ap.clip_norm = 0.0f;
    float loss = 0;
    printf("training a 2-%d-%d-2 tanh network on two spirals (%d points), Adam lr %.3g\n", HIDDEN,
           HIDDEN, N_POINTS, ap.lr);
    for (int step = 0; step <= 600; step++) {
        mt_graph_clear(g);
        mt_node *logits;
        mt_node *l = build(g, p, x, y, &logits);
        if (step == 0 && mt_adam_init(p, ap, &opt) != MT_OK) goto fail;
        if (mt_graph_forward(g) != MT_OK || mt_graph_backward(g, l) != MT_OK ||
            mt_node_get_scalar(l, &loss) != MT_OK || mt_adam_step(opt) != MT_OK)
            goto fail;
        if (step % 100 == 0) {
            int correct = 0;
            if (mt_node_get(logits, logits_host, N_POINTS * 2) != MT_OK) goto fail;
            for (int i = 0; i < N_POINTS; i++)
                correct += (logits_host[2 * i + 1] > logits_host[2 * i]) == (y[i] == 1);
            printf("  step %5d  loss %.4f  accuracy %5.1f%%\n", step, loss,
                   100.0 * correct / N_POINTS);
        }
    }
    rc = 0;
fail:
    if (rc) fprintf(stderr, "mtpe demo: %s\n", mt_errmsg());
    mt_adam_free(opt);
    mt_graph_free(g);
    mt_params_free(p);
    return rc;
}

static int model_demo(const char *path) {
    mt_model_file *m = NULL;
    if (mt_model_file_read(path, &m) != MT_OK) {
        fprintf(stderr, "mtpe demo: %s\n", mt_errmsg());
        return 1;
    }
    int64_t elems = 0;
    for (int i = 0; i < m->n; i++) elems += mt_tensor_numel(&m->tensors[i]);
    mt_yaml *y = NULL;
    const char *type = "?";
    if (m->config_yaml && mt_yaml_parse(m->config_yaml, &y) == MT_OK && mt_yaml_get(y, "type"))
        type = mt_yaml_get(y, "type");
    printf("\nloaded %s: type %s, %d parameters, %lld values\n", path, type, m->n,
           (long long)elems);
    for (int i = 0; i < m->n && i < 5; i++) {
        char buf[64];
        printf("  %-32s %-14s %s\n", m->names[i], mt_shape_str(&m->tensors[i].shape, buf, sizeof buf),
               mt_dtype_name(m->tensors[i].dtype));
    }
    if (m->n > 5) printf("  ... (mtpe convert --info %s lists all)\n", path);
    mt_yaml_free(y);
    mt_model_file_free(m);
    return 0;
}

const app_cmd app_demo_cmd = {
    .name = "demo",
    .about = "Trains a small network with the engine, then loads MODEL.npz (default: the\n"
             "tiny Marian transformer of tests/data) and lists its parameters.\n",
    .args = "[MODEL.npz]",
    .min_args = 0,
    .max_args = 1,
};

int app_demo_main(int argc, char **argv) {
    app_opts *o = NULL;
    int rc;
    if (!app_opts_parse_cmd(&app_demo_cmd, argc, argv, &o, &rc)) return rc;
    const char *model = MT_SOURCE_DIR "/tests/data/marian/transformer-tiny/model.npz";
    if (app_opts_nargs(o) > 0) model = app_opts_arg(o, 0);
    rc = train_demo();
    if (rc == 0) rc = model_demo(model);
    app_opts_free(o);
    return rc;
}
