/*
** cmd_bench.c: `mtpe bench gemm|gemm-int|topk|attn [--repeat N]
** [--peak-gflops X] [--peak-gops X]`, the kernel micro-benchmarks
** (kernels/cpu/kcpu_bench.c, through mt_cpu_bench):
**
**   gemm      fp32 GEMM at decoder shapes, OpenBLAS and the own small-M
**             kernel side by side, GFLOP/s and fractions of the per-core
**             peak (--peak-gflops) and of the measured FMA throughput
**   gemm-int  the int8 / int16 kernels against fp32 OpenBLAS at the same
**             shapes (--peak-gops: the nominal int8 peak)
**   topk      the fused output layer (bias + log-softmax + top-k) against
**             the unfused path
**   attn      the fused attention of a decoding step against the per-row
**             batched products and softmax it replaced
**
** and the dispatch to `mtpe bench edit|translate|train|tm`.
*/
#include "app.h"
#include "common.h"
#include "edit_session.h"
#include "mt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const app_opt kbench_opts[] = {
    {"repeat", 0, APP_OPT_INT, "7", NULL, "samples per shape; the median is shown", "1..64"},
    {"peak-gflops", 0, APP_OPT_FLOAT, "228", NULL,
     "gemm: fp32 GFLOP/s peak of one core (228: Zen 5, 2 x 512-bit FMA per cycle)", "(0.."},
    {"peak-gops", 0, APP_OPT_FLOAT, "913", NULL,
     "gemm-int: nominal int8 GOP/s peak of one core (913: Zen 5 VNNI)", "(0.."},
};
enum { N_KBENCH_OPTS = (int)(sizeof kbench_opts / sizeof kbench_opts[0]) };
const app_cmd app_bench_kernels_cmd[4] = {
    {.name = "bench gemm",
     .about = "fp32 GEMM GFLOP/s at decoder shapes, OpenBLAS vs own kernel.\n",
     .opts = kbench_opts,
     .n_opts = N_KBENCH_OPTS},
    {.name = "bench gemm-int",
     .about = "int8/int16 GEMM GOP/s vs fp32 OpenBLAS at decoder shapes.\n",
     .opts = kbench_opts,
     .n_opts = N_KBENCH_OPTS},
    {.name = "bench topk",
     .about = "Fused bias + log-softmax + top-k vs the unfused path, ns/row.\n",
     .opts = kbench_opts,
     .n_opts = N_KBENCH_OPTS},
    {.name = "bench attn",
     .about = "Fused attention of a decoding step vs per-row products, ns/row-head.\n",
     .opts = kbench_opts,
     .n_opts = N_KBENCH_OPTS},
};

/* `mtpe bench gemm|gemm-int|topk|attn [options]`: which indexes app_bench_kernels_cmd. */
static int kernel_bench_main(int which, int argc, char **argv) {
    const app_cmd *c = &app_bench_kernels_cmd[which];
    app_opts *o = NULL;
    int ret;
    if (!app_opts_parse_cmd(c, argc, argv, &o, &ret)) return ret;
    int64_t repeat = app_opts_int(o, "repeat");
    double peak = app_opts_float(o, "peak-gflops"), peak_int = app_opts_float(o, "peak-gops");
    app_opts_free(o);
    if (repeat < 1 || !(peak > 0) || !(peak_int > 0))
        return app_cmd_usage_error(c, "--repeat, --peak-gflops and --peak-gops must be positive");
    static const char *const names[] = {"gemm", "gemm-int", "topk", "attn"};
    int r = repeat > 64 ? 64 : (int)repeat;
    mt_status rc = mt_cpu_bench(names[which], r, which == 1 ? peak_int : peak, stdout);
    if (rc == MT_OK) return 0;
    fprintf(stderr, "mtpe %s: %s\n", c->name, mt_errmsg());
    return 1;
}

static int gemm_main(int argc, char **argv) { return kernel_bench_main(0, argc, argv); }
static int gemm_int_main(int argc, char **argv) { return kernel_bench_main(1, argc, argv); }
static int topk_main(int argc, char **argv) { return kernel_bench_main(2, argc, argv); }
static int attn_main(int argc, char **argv) { return kernel_bench_main(3, argc, argv); }

int app_bench_main(int argc, char **argv) {
    static const app_subcmd subs[] = {
        {"gemm", gemm_main, "fp32 GEMM GFLOP/s at decoder shapes, OpenBLAS vs own kernel"},
        {"gemm-int", gemm_int_main, "int8/int16 GEMM GOP/s vs fp32 OpenBLAS"},
        {"topk", topk_main, "fused bias + log-softmax + top-k vs the unfused path, ns/row"},
        {"attn", attn_main, "fused attention of a decoding step vs per-row products"},
        {"edit", app_bench_edit_main, "the editor's completion latency"},
        {"translate", app_bench_translate_main, "translation tokens/s, fraction of the int8 limit"},
        {"train", app_bench_train_main, "training words/s and fraction of peak"},
        {"tune", app_bench_tune_main, "BLEU gained by tuning on half of each PO file"},
        {"tm", app_bench_tm_main, "translation memory lookup latency at 10k-1M segments"},
    };
    return app_subcmd_main("bench", NULL, subs, (int)(sizeof subs / sizeof subs[0]), argc, argv);
}
