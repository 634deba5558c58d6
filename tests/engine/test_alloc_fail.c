/*
** test_alloc_fail.c: allocation failure at every point of the engine core.
** For N = 0, 1, 2, ... the N-th try-allocation and all later ones fail
** (sticky); a scenario that builds parameters, graphs (training with a
** tiny workspace and node arena so that overflow and regrowth paths run,
** and a memoizing inference graph), runs forward, backward and Adam steps,
** and frees everything must return MT_OK or a clean error with a message,
** never crash, and leave no block allocated.  Ends at the first N where the
** scenario succeeds.  (Model files have their own fault test.)
*/
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "mt.h"

static void quiet(mt_log_level level, const char *msg, void *user) {
    (void)level;
    (void)msg;
    (void)user;
}

static const float xs[8] = {1, -1, -1, 1, 1, 1, -1, -1};
static const int32_t ys[4] = {0, 1, 0, 1};

static mt_node *net(mt_graph *g, mt_params *p) {
    mt_node *x = mt_input(g, mt_shape2(4, 2), xs);
    mt_node *y = mt_input_i32(g, mt_shape1(4), ys);
    mt_node *w1 = mt_param(g, p, "W1", mt_shape2(2, 8), mt_init_glorot_uniform());
    mt_node *b1 = mt_param(g, p, "b1", mt_shape2(1, 8), mt_init_zeros());
    mt_node *w2 = mt_param(g, p, "W2", mt_shape2(8, 2), mt_init_glorot_normal());
    mt_node *b2 = mt_param(g, p, "b2", mt_shape1(2), mt_init_zeros());
    mt_node *h = mt_tanh(g, mt_add(g, mt_matmul(g, x, w1, false, false), b1));
    mt_node *logits = mt_affine(g, h, w2, b2);
    return mt_sum_all(g, mt_cross_entropy(g, logits, y, 0.1f));
}

static mt_status scenario(void) {
    mt_params *p = NULL;
    mt_graph *g = NULL, *inf = NULL;
    mt_adam *adam = NULL;
    mt_status rc = mt_params_init(NULL, 3, &p);
    if (rc != MT_OK) goto done;

    mt_graph_params gp = mt_graph_default_params();
    gp.training = true;
    gp.workspace_bytes = 256; /* overflow in round 1, regrow at clear */
    gp.node_arena_bytes = 256;
    rc = mt_graph_init(NULL, gp, &g);
    if (rc != MT_OK) goto done;
    rc = mt_adam_init(p, mt_adam_default_params(), &adam);
    if (rc != MT_OK) goto done;
    for (int round = 0; round < 3 && rc == MT_OK; round++) {
        mt_node *loss = net(g, p);
        rc = mt_graph_forward(g);
        if (rc == MT_OK) rc = mt_graph_backward(g, loss);
        if (rc == MT_OK) rc = mt_adam_step(adam);
        float v;
        if (rc == MT_OK) rc = mt_node_get_scalar(loss, &v);
        mt_graph_clear(g);
    }
    if (rc != MT_OK) goto done;

    gp.training = false;
    gp.memoize = true;
    gp.workspace_bytes = 0;
    rc = mt_graph_init(NULL, gp, &inf);
    for (int round = 0; round < 2 && rc == MT_OK; round++) {
        mt_node *w1 = mt_param(inf, p, "W1", mt_shape2(2, 8), mt_init_zeros());
        mt_node *wt = mt_transpose(inf, w1, 0, 1); /* memoized */
        mt_node *l = net(inf, p);
        mt_node *c = mt_constant(inf, mt_shape2(8, 2), 0.5f);
        mt_node *s = mt_sum_all(inf, mt_mul(inf, wt, c));
        rc = mt_graph_forward(inf);
        float v;
        if (rc == MT_OK) rc = mt_node_get_scalar(l, &v);
        if (rc == MT_OK) rc = mt_node_get_scalar(s, &v);
        mt_graph_clear(inf);
    }
done:
    mt_graph_free(inf);
    mt_adam_free(adam);
    mt_graph_free(g);
    mt_params_free(p);
    return rc;
}

int main(void) {
    mt_log_set(quiet, NULL);
    (void)mt_device_cpu();    /* process-wide singleton: outside the count */
    CHECK_STATUS(scenario()); /* the scenario works without injection */
    int64_t total = mt_alloc_count();
    int64_t n = 0;
    int failures = 0;
    mt_status rc = MT_ERR_NOMEM;
    for (; n < 100000; n++) {
        size_t live = mt_alloc_get_stats().live_blocks;
        mt_alloc_fail_at(n, true);
        mt_clearerr();
        rc = scenario();
        mt_alloc_fail_at(-1, false);
        size_t after = mt_alloc_get_stats().live_blocks;
        if (!CHECK(after == live, "N=%lld: %zu blocks leaked (%s)", (long long)n, after - live,
                   mt_status_str(rc)) ||
            !CHECK(rc == MT_OK || (rc == MT_ERR_NOMEM && mt_errmsg()[0] != '\0'), "N=%lld: %s (%s)",
                   (long long)n, mt_status_str(rc), mt_errmsg())) {
            if (++failures > 10) break;
        }
        if (rc == MT_OK) break;
    }
    CHECK(rc == MT_OK, "the scenario eventually succeeds");
    CHECK(n >= 20, "the scenario has many allocation points (%lld, %lld in a clean run)",
          (long long)n, (long long)total);
    fprintf(stderr, "alloc-fail: %lld failure points tested (%lld try-allocations per run)\n",
            (long long)n, (long long)total);
    TEST_MAIN_END();
}
