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
** and the dispatch to `mtpe bench edit|translate|train`.
*/
#include "app.h"
#include "common.h"
#include "edit_session.h"
#include "mt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void bench_usage(FILE *f) {
    fprintf(f, "usage: mtpe bench gemm|gemm-int|topk|attn [--repeat N] [--peak-gflops X]\n"
               "                  [--peak-gops X]\n"
               "  gemm      fp32 GEMM GFLOP/s at decoder shapes, OpenBLAS vs own kernel\n"
               "  gemm-int  int8/int16 GEMM GOP/s vs fp32 OpenBLAS; --peak-gops: nominal int8\n"
               "            peak per core (default 913, Zen 5 VNNI)\n"
               "  topk      fused bias + log-softmax + top-k vs the unfused path, ns/row\n"
               "  attn      fused attention of a decoding step vs per-row products, ns/row-head\n"
               "  edit      the editor's completion latency (mtpe bench edit --help)\n"
               "  translate translation tokens/s (mtpe bench translate --help)\n"
               "  train     training words/s and fraction of peak (mtpe bench train --help)\n");
}

int app_bench_main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "edit") == 0) return app_bench_edit_main(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "translate"))
        return app_bench_translate_main(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "train")) return app_bench_train_main(argc - 1, argv + 1);
    const char *what = NULL;
    int repeat = 7;
    double peak = 228.0; /* AMD Zen 5: 2 x 512-bit FMA per cycle per core */
    double peak_int = 913.0; /* AMD Zen 5: nominal int8 VNNI GOP/s per core */
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        if (i == 0 && strcmp(s, "bench") == 0) {
            continue;
        }
        if (strcmp(s, "--repeat") == 0 && i + 1 < argc) {
            repeat = atoi(argv[++i]);
        } else if (strcmp(s, "--peak-gflops") == 0 && i + 1 < argc) {
            peak = atof(argv[++i]);
        } else if (strcmp(s, "--peak-gops") == 0 && i + 1 < argc) {
            peak_int = atof(argv[++i]);
        } else if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
            bench_usage(stdout);
            return 0;
        } else if (s[0] != '-' && !what) {
            what = s;
        } else {
            bench_usage(stderr);
            return 2;
        }
    }
    if (!what || repeat < 1 || !(peak > 0) || !(peak_int > 0)) {
        bench_usage(stderr);
        return 2;
    }
    mt_status rc =
        mt_cpu_bench(what, repeat, strcmp(what, "gemm-int") == 0 ? peak_int : peak, stdout);
    if (rc == MT_OK) return 0;
    if (rc != MT_ERR_INVALID) {
        fprintf(stderr, "mtpe bench %s: %s\n", what, mt_errmsg());
        return 1;
    }
    fprintf(stderr, "mtpe bench: unknown benchmark '%s'\n", what);
    bench_usage(stderr);
    return 2;
}
