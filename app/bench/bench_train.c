/*
** bench_train.c: `mtpe bench train [-m MODEL -v SRC TRG] [-i SRC TRG] [--fresh]
**                 [--updates N] [--threads N...] [--lines N] [--mini-batch-words N]`
**
** Training throughput of a model's architecture against Marian's (1,776
** target words/s: Marian 1.12 on the default recipe, 2 threads of the
** project's 2-core machine, the median over its first 60 updates, measured
** side by side with mtpe for issue 32).  One update is what `mtpe train`
** does with the default model's recipe (scripts/train-default-model.sh):
** build the loss with label smoothing 0.1, forward, backward of the sum
** over target tokens (as Marian, whatever --cost-type), one Adam step with
** gradient clipping and exponential smoothing; with --precision float32
** and/or bfloat16 (the matrix products' operands, mtpe train --precision).
**
** Model: -m/-v, else the installed default (assets/models/en-de: 256-dim,
** 6 encoder and 2 decoder layers, FFN 1024, 8 heads, tied embeddings, 8k
** vocabulary), else the transformer-tiny test fixture (said in the output).
** --fresh trains a freshly initialised model of the same architecture
** instead of the loaded weights (the speed is the same; the costs differ).
**
** Data: the first --lines (20000) lines of -i SRC TRG, else of
** ../shared/data/en-de/train.{en,de} beside the source tree, copied to
** temporary files (plain text only) and read as `mtpe train` reads its
** corpus (models/corpus.h, --max-length 100), encoded with the model's
** vocabularies and batched as the recipe does: --mini-batch-words 4000
** (which mtpe's batcher counts in source tokens), maxi-batch 100 x
** mini-batch 256, sorted by target length, shuffled with seed 1111.
**
** Runs: --updates (5) batches are taken from the start of the shuffled
** epoch and each is trained on once, untimed, so that the graph's workspace
** reaches its final size (as in a long run, where it stops growing once the
** largest batch has been seen).  Then for each --threads value (1 2) the
** BLAS uses that many threads and the same batches are trained on again:
** the one with the most padded target positions as a warm-up (BLAS thread
** start, first use of a grown workspace), not timed, then the others,
** timed.  A workspace that still grows during the timed updates is said in
** the output.  Per timed update: target and source tokens (EOS included,
** padding not) per second, and matrix-product GFLOP/s
** (mt_graph_matmul_flops: forward and backward); the table shows the
** medians, the GFLOP/s as a fraction of the peak of that many cores
** (mt_cpu_fp32_peak_gflops, one core measured once for 0.2 s at start, times
** the threads), the target words/s as a multiple of float32's at the same
** thread count in this run and as a multiple of Marian's 1,776.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "common.h"
#include "corpus.h"
#include "model.h"
#include "options.h"

#define BTR_MAX_THREADS 8
#define BTR_MAX_UPDATES 256
#define MARIAN_WORDS_S 1776.0 /* issue 32: Marian 1.12, default recipe, 2 threads, median */

static const app_opt btr_opts[] = {
    {"models", 'm', APP_OPT_STRINGS, NULL, NULL, "model (default: the installed en-de model)"},
    {"vocabs", 'v', APP_OPT_STRINGS, NULL, NULL, "source and target vocabularies"},
    {"input", 'i', APP_OPT_STRINGS, NULL, NULL,
     "parallel text SRC TRG (default: ../shared/data/en-de/train.{en,de})"},
    {"fresh", 0, APP_OPT_FLAG, NULL, NULL, "train a fresh model of the same architecture"},
    {"lines", 0, APP_OPT_INT, "20000", NULL, "lines of the input read", "1.."},
    {"updates", 0, APP_OPT_INT, "5", NULL, "batches (one is the warm-up, the others timed)",
     "2..256"},
    {"threads", 0, APP_OPT_INTS, "1 2", NULL, "BLAS thread counts to run (1..8 of them)", "1..256"},
    {"precision", 0, APP_OPT_STRINGS, "float32 bfloat16", NULL,
     "matrix products' operands to run: float32 bfloat16", "float32|bfloat16"},
    {"mini-batch-words", 0, APP_OPT_INT, "4000", NULL, "source tokens per mini-batch", "1.."},
    {"quiet", 0, APP_OPT_FLAG, NULL, NULL, "no log messages"},
};
static const int n_btr_opts = (int)(sizeof btr_opts / sizeof btr_opts[0]);

const app_cmd app_bench_train_cmd = {
    .name = "bench train",
    .usage = "[-m MODEL -v SRC TRG] [-i SRC TRG] [--fresh] [--updates N]\n"
             "  [--threads N...] [--lines N]",
    .about = "Training updates per second of the model's architecture on real batches\n"
             "(the default model's recipe): target and source words/s, GFLOP/s in matrix\n"
             "products, the fraction of the measured fp32 peak, and the ratios to float32\n"
             "and to Marian's 1,776 target words/s (issue 32).\n",
    .opts = btr_opts,
    .n_opts = n_btr_opts,
};

/* Copies the first n lines of path (plain text) to a new temporary file
** whose name goes to tmp (cap bytes).  On failure no file is left and tmp
** is "". */
static mt_status head_to_temp(const char *path, int64_t n, char *tmp, size_t cap) {
    const char *dir = getenv("TMPDIR");
    FILE *in = fopen(path, "rb");
    if (in == NULL) return mt_seterr(MT_ERR_IO, "cannot open %s", path);
    snprintf(tmp, cap, "%s/mtpe-bench-train-XXXXXX", dir && dir[0] ? dir : "/tmp");
    int fd = mkstemp(tmp);
    FILE *out = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (out == NULL) {
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        fclose(in);
        mt_status rc = mt_seterr(MT_ERR_IO, "cannot create a temporary file %s", tmp);
        tmp[0] = '\0';
        return rc;
    }
    char *buf = NULL;
    size_t bcap = 0;
    ssize_t k;
    bool ok = true;
    for (int64_t i = 0; ok && i < n && (k = app_read_line(in, &buf, &bcap)) >= 0; i++)
        ok = fwrite(buf, 1, (size_t)k, out) == (size_t)k && fputc('\n', out) != EOF;
    ok = ok && !ferror(in);
    free(buf); /* getline's buffer */
    fclose(in);
    if (fclose(out) != 0) ok = false;
    if (!ok) {
        unlink(tmp);
        mt_status rc = mt_seterr(MT_ERR_IO, "cannot copy %s to %s", path, tmp);
        tmp[0] = '\0';
        return rc;
    }
    return MT_OK;
}

typedef struct btr_ctx {
    mt_model *model; /* the one trained (loaded or fresh) */
    mt_corpus *corpus;
    mt_graph *g, *gs[2]; /* g: the graph of the precision running; float32, bfloat16 */
    bool sized[2];       /* whether the graph has seen every batch once  */
    mt_adam *adam;
    int updates;
    mt_batch *batches[BTR_MAX_UPDATES]; /* copies of the epoch's first batches */
    int warm;                           /* index of the warm-up batch         */
    double peak_core;
    int64_t n_update; /* for the dropout seed */
} btr_ctx;

/* A copy of b (the batcher reuses its batch). */
static mt_status batch_copy(const mt_batch *b, mt_batch **out) {
    mt_status rc = mt_batch_alloc(b->n_src, b->size, b->src_len, b->trg_len, out);
    if (rc != MT_OK) return rc;
    mt_batch *c = *out;
    for (int s = 0; s < b->n_src; s++) {
        size_t n = (size_t)b->size * (size_t)b->src_len[s];
        memcpy(c->src_ids[s], b->src_ids[s], n * sizeof(int32_t));
        memcpy(c->src_mask[s], b->src_mask[s], n * sizeof(float));
    }
    size_t n = (size_t)b->size * (size_t)b->trg_len;
    if (n > 0) {
        memcpy(c->trg_ids, b->trg_ids, n * sizeof(int32_t));
        memcpy(c->trg_mask, b->trg_mask, n * sizeof(float));
    }
    memcpy(c->sent_ids, b->sent_ids, (size_t)b->size * sizeof(int64_t));
    c->trg_words = b->trg_words;
    return MT_OK;
}

/* The first c->updates batches of the shuffled epoch (from its start again
** when it has fewer), copied; the warm-up batch of each thread count is the
** one with the most padded target positions. */
static mt_status btr_batches(btr_ctx *c, mt_batcher *bt) {
    mt_batcher_begin_epoch(bt, 1);
    int64_t best = -1;
    for (int u = 0; u < c->updates; u++) {
        const mt_batch *b = mt_batcher_next(bt);
        if (b == NULL) {
            mt_batcher_begin_epoch(bt, 1);
            b = mt_batcher_next(bt);
        }
        if (b == NULL) return mt_seterr(MT_ERR_INVALID, "bench train: the input has no batch");
        mt_status rc = batch_copy(b, &c->batches[u]);
        if (rc != MT_OK) return rc;
        int64_t cells = (int64_t)b->size * b->trg_len;
        if (cells > best) {
            best = cells;
            c->warm = u;
        }
    }
    return MT_OK;
}

/* One update as `mtpe train` does it (the sum's gradient, as Marian). */
static mt_status btr_update(btr_ctx *c, const mt_batch *b, double *flops) {
    mt_graph *g = c->g;
    mt_graph_clear(g);
    mt_graph_set_seed(g, 1111u + (uint64_t)c->n_update++);
    mt_model_loss l = mt_model_build_loss(c->model, g, b, 0.1f);
    if (l.cost == NULL) return l.status != MT_OK ? l.status : mt_graph_status(g);
    mt_node *obj = l.cost;
    mt_status rc = mt_graph_forward(g);
    if (rc == MT_OK) rc = mt_graph_backward(g, obj);
    if (rc == MT_OK) rc = mt_graph_matmul_flops(g, obj, true, flops);
    if (rc == MT_OK) rc = mt_adam_step(c->adam);
    if (rc == MT_ERR_INVALID) rc = MT_OK; /* non-finite gradient: update skipped, as in train */
    return rc;
}

static int64_t src_tokens(const mt_batch *b) {
    int64_t n = 0;
    for (int64_t i = 0; i < (int64_t)b->size * b->src_len[0]; i++)
        n += b->src_mask[0][i] != 0.0f;
    return n;
}

/* The updates of one thread count and precision: the warm-up batch
** untimed, then the others timed; prints its table row and gives the
** median target words/s (*tw_out). */
static mt_status btr_threads(btr_ctx *c, int threads, int prec, bool first, double base,
                             double *tw_out) {
    double trg_rate[BTR_MAX_UPDATES], src_rate[BTR_MAX_UPDATES], gf_rate[BTR_MAX_UPDATES];
    int64_t sents = 0, trg = 0, src = 0;
    int timed = 0;
    mt_cpu_set_blas_threads(prec ? 1 : threads); /* as mtpe train does */
    mt_cpu_set_own_threads(prec ? threads : 0);
    double flops = 0;
    mt_status rc = MT_OK;
    /* Sizing pass (first thread count): every other batch once, so that the
    ** graph's workspace has its final size before anything is timed; the
    ** warm-up then touches it (a grown workspace is fresh memory, and the
    ** page faults of its first use cost up to a fifth of an update at
    ** 4000-token batches: a long training run pays them only until it has
    ** seen its largest batch). */
    c->g = c->gs[prec];
    for (int u = 0; !c->sized[prec] && rc == MT_OK && u < c->updates; u++)
        if (u != c->warm) rc = btr_update(c, c->batches[u], &flops);
    c->sized[prec] = true;
    if (rc == MT_OK) rc = btr_update(c, c->batches[c->warm], &flops);
    if (rc != MT_OK) return rc;
    uint64_t grows = mt_graph_get_stats(c->g).workspace_grow_count;
    for (int u = 0; u < c->updates; u++) {
        if (u == c->warm) continue;
        const mt_batch *b = c->batches[u];
        double t0 = app_now();
        rc = btr_update(c, b, &flops);
        double dt = app_now() - t0;
        if (rc != MT_OK) return rc;
        if (dt <= 0) dt = 1e-9;
        int64_t s = src_tokens(b);
        trg_rate[timed] = (double)b->trg_words / dt;
        src_rate[timed] = (double)s / dt;
        gf_rate[timed] = flops / dt * 1e-9;
        sents += b->size;
        trg += b->trg_words;
        src += s;
        timed++;
    }
    mt_graph_clear(c->g); /* a workspace overflow of the last update shows at its clear */
    grows = mt_graph_get_stats(c->g).workspace_grow_count - grows;
    if (first) {
        const mt_batch *w = c->batches[c->warm];
        printf("timed batches (the same for every thread count): %d, on average %.1f sentences, "
               "%.0f source and %.0f target tokens; warm-up batch: %d sentences, padded "
               "lengths %d/%d\ngraph workspace: %.0f MB\n\n",
               timed, (double)sents / timed, (double)src / timed, (double)trg / timed, w->size,
               w->src_len[0], w->trg_len, mt_graph_get_stats(c->g).workspace_capacity / 1e6);
        printf(
            "threads  precision  trg words/s  src words/s  GFLOP/s  of peak  x float32  x Marian "
            "(1,776 on 2 threads)\n");
    }
    double tw = app_median(trg_rate, timed), sw = app_median(src_rate, timed);
    double gf = app_median(gf_rate, timed);
    char peak[32] = "    n/a";
    if (c->peak_core > 0)
        snprintf(peak, sizeof peak, "%6.1f%%", 100.0 * gf / (c->peak_core * threads));
    char rel[32] = "      -";
    if (base > 0) snprintf(rel, sizeof rel, "%7.2f", tw / base);
    *tw_out = tw;
    printf("%7d  %-9s %12.1f %12.1f %8.1f  %s  %s  %8.2f%s\n", threads,
           prec ? "bfloat16" : "float32", tw, sw, gf, peak, rel, tw / MARIAN_WORDS_S,
           grows ? "   (the workspace grew during the timed updates: page faults included)" : "");
    fflush(stdout);
    return MT_OK;
}

static void describe_model(const mt_model *m, const char *path, const char *which, bool fresh) {
    const mt_model_config *mc = mt_model_get_config(m);
    printf("model: %s (%s)%s\n  %s, dim %d, %d encoder + %d decoder layers, FFN %d, %d heads, "
           "vocabularies %d/%d%s, decoder %s\n",
           path, which, fresh ? ", fresh weights (--fresh)" : "", mc->type, mc->dim_emb,
           mc->enc_depth, mc->dec_depth, mc->dim_ffn, mc->heads, (int)mt_model_src_vocab(m, 0),
           (int)mt_model_trg_vocab(m),
           mc->tied_embeddings_all ? ", all embeddings tied"
           : mc->tied_embeddings   ? ", output tied"
                                   : "",
           mc->dec_autoreg);
}

int app_bench_train_main(int argc, char **argv) {
    app_opts *o = NULL;
    int ret;
    if (!app_opts_parse_cmd(&app_bench_train_cmd, argc, argv, &o, &ret)) return ret;
    ret = 1;
    btr_ctx c;
    memset(&c, 0, sizeof c);
    mt_ensemble am;
    memset(&am, 0, sizeof am);
    mt_model *fresh = NULL;
    char model[4200], vsrc[4200], vtrg[4200], in_src[4200], in_trg[4200];
    char tmp[2][4200] = {"", ""};
    const char *which;
    int n_threads = app_opts_count(o, "threads");
    int64_t lines = app_opts_int(o, "lines"), mbw = app_opts_int(o, "mini-batch-words");
    c.updates = (int)app_opts_int(o, "updates");
    bool bad = lines < 1 || mbw < 1 || c.updates < 2 || c.updates > BTR_MAX_UPDATES ||
               n_threads < 1 || n_threads > BTR_MAX_THREADS ||
               (app_opts_count(o, "input") != 0 && app_opts_count(o, "input") != 2);
    for (int i = 0; i < n_threads; i++)
        bad = bad || app_opts_int_item(o, "threads", i) < 1 ||
              app_opts_int_item(o, "threads", i) > 256;
    if (bad) {
        fprintf(stderr,
                "mtpe bench train: --lines, --mini-batch-words >= 1, --updates 2..%d, "
                "1..%d --threads values in 1..256, -i SRC TRG\n",
                BTR_MAX_UPDATES, BTR_MAX_THREADS);
        ret = 2;
        goto done;
    }
    int mr = app_bench_model(o, "bench train", model, vsrc, vtrg, &which);
    if (mr != 0) {
        if (mr == 2) ret = 2;
        goto done;
    }
    if (app_opts_count(o, "input") == 2) {
        snprintf(in_src, sizeof in_src, "%s", app_opts_item(o, "input", 0));
        snprintf(in_trg, sizeof in_trg, "%s", app_opts_item(o, "input", 1));
    } else {
        snprintf(in_src, sizeof in_src, "%s/../shared/data/en-de/train.en", MT_SOURCE_DIR);
        snprintf(in_trg, sizeof in_trg, "%s/../shared/data/en-de/train.de", MT_SOURCE_DIR);
    }

    const char *mpaths[1] = {model};
    const char *vpaths[2] = {vsrc, vtrg};
    mt_status rc = mt_ensemble_load(&am, mpaths, 1, NULL, vpaths, 2);
    if (rc == MT_OK && am.n_src != 1)
        rc = mt_seterr(MT_ERR_UNSUPPORTED, "bench train: %s reads %d source streams (1 needed)",
                       model, am.n_src);
    c.model = am.models[0];
    if (rc == MT_OK && app_opts_flag(o, "fresh")) {
        rc = mt_model_create(mt_model_get_config(c.model), NULL, 1111, &fresh);
        c.model = fresh;
    }
    if (rc == MT_OK) rc = head_to_temp(in_src, lines, tmp[0], sizeof tmp[0]);
    if (rc == MT_OK) rc = head_to_temp(in_trg, lines, tmp[1], sizeof tmp[1]);
    if (rc == MT_OK) {
        const char *cpaths[2] = {tmp[0], tmp[1]};
        const mt_vocab *vs[2] = {am.vocabs[0], am.vocabs[1]};
        mt_corpus_params cp = mt_corpus_default_params();
        cp.max_length = 100;
        cp.right_left = am.right_left;
        rc = mt_corpus_load(cpaths, vs, 2, &cp, &c.corpus);
    }
    if (rc == MT_OK) {
        mt_batcher_params bp = mt_batcher_default_params();
        bp.mini_batch = 256;
        bp.mini_batch_words = mbw;
        bp.maxi_batch = 100;
        bp.sort = MT_SORT_TRG;
        bp.shuffle = MT_SHUFFLE_DATA;
        bp.seed = 1111;
        mt_batcher *bt = NULL;
        rc = mt_batcher_init(c.corpus, &bp, &bt);
        if (rc == MT_OK) rc = btr_batches(&c, bt);
        mt_batcher_free(bt);
    }
    mt_params *p = c.model ? mt_model_params(c.model) : NULL;
    if (rc == MT_OK) rc = mt_params_alloc_grads(p);
    if (rc == MT_OK) {
        mt_adam_params ap = mt_adam_default_params(); /* the recipe's Adam */
        ap.lr = 0.0007f;
        ap.beta1 = 0.9f;
        ap.beta2 = 0.98f;
        ap.eps = 1e-9f;
        ap.clip_norm = 5.0f;
        ap.warmup = 800;
        ap.decay_inv_sqrt = 800;
        ap.smoothing = 1e-4f;
        rc = mt_adam_init(p, ap, &c.adam);
    }
    bool want[2] = {false, false};
    for (int i = 0; i < app_opts_count(o, "precision"); i++) {
        const char *pr = app_opts_item(o, "precision", i);
        if (!strcmp(pr, "float32") || !strcmp(pr, "bfloat16"))
            want[!strcmp(pr, "bfloat16")] = true;
        else if (rc == MT_OK)
            rc = mt_seterr(MT_ERR_INVALID, "unknown --precision '%s' (float32, bfloat16)", pr);
    }
    for (int pr = 0; pr < 2 && rc == MT_OK; pr++) {
        if (!want[pr]) continue;
        mt_graph_params gp = mt_graph_default_params();
        gp.training = true;
        gp.seed = 1111;
        gp.bf16_products = pr == 1;
        rc = mt_graph_init(NULL, gp, &c.gs[pr]);
    }
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe bench train: %s\n", mt_errmsg());
        goto done;
    }

    describe_model(c.model, model, which, fresh != NULL);
    printf("data: the first %lld lines of %s and %s: %lld pairs kept (--max-length 100)\n"
           "batches: --mini-batch-words %lld (source tokens), maxi-batch 100 x 256, sorted by "
           "target length, shuffled (seed 1111)\n"
           "update: label smoothing 0.1, forward + backward of the sum (Marian's) + Adam (clip 5, "
           "smoothing 1e-4)\nbfloat16: the matrix products' operands rounded to bfloat16, float32 "
           "sums (%s kernel); weights, gradients and Adam float32\n",
           (long long)lines, in_src, in_trg, (long long)mt_corpus_size(c.corpus), (long long)mbw,
           mt_cpu_gemm_bf16_name());
    c.peak_core = mt_cpu_fp32_peak_gflops(0.2);
    if (c.peak_core > 0)
        printf("fp32 peak: %.1f GFLOP/s per core measured now (0.2 s of AVX-512 FMAs); OpenBLAS "
               "kernels %s\n",
               c.peak_core, mt_cpu_blas_corename());
    else
        printf("fp32 peak: not measured (the probe needs AVX-512); OpenBLAS kernels %s\n",
               mt_cpu_blas_corename());
    for (int i = 0; i < n_threads && rc == MT_OK; i++) {
        double base = 0, tw = 0;
        for (int pr = 0; pr < 2 && rc == MT_OK; pr++) {
            if (!want[pr]) continue;
            rc = btr_threads(&c, (int)app_opts_int_item(o, "threads", i), pr,
                             i == 0 && (pr == 0 || !want[0]), base, &tw);
            if (pr == 0) base = tw;
        }
    }
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe bench train: %s\n", mt_errmsg());
        goto done;
    }
    printf("\nwords/s: medians over the timed updates (tokens incl. EOS, padding not counted); "
           "'of peak': GFLOP/s / (measured fp32 peak x threads; bfloat16 products have about "
           "twice that peak); 'x float32': over the float32 row of the same threads in this "
           "run\nMarian's 1,776 target words/s: Marian 1.12 on the "
           "default recipe, 2 threads of this machine, median over 60 updates (issue 32), "
           "measured by the project, not in this run\n");
    ret = 0;
done:
    for (int i = 0; i < 2; i++)
        if (tmp[i][0]) unlink(tmp[i]);
    mt_graph_free(c.gs[0]);
    mt_graph_free(c.gs[1]);
    mt_adam_free(c.adam);
    for (int i = 0; i < BTR_MAX_UPDATES; i++)
        mt_batch_free(c.batches[i]);
    mt_corpus_free(c.corpus);
    mt_model_free(fresh);
    mt_ensemble_free(&am);
    app_opts_free(o);
    return ret;
}
