/*
** bench_translate.c: `mtpe bench translate [-m MODEL -v SRC TRG] [-i FILE]
**                     [--lines N] [--repeat N] [--tables batching,gemm] ...`
**
** Translation throughput through the translate API (models/translator.h), two
** tables in one run (--tables picks them):
**
**   batching  beam 1 and 4 x mini-batch 1 and 32 x 1 and 2 threads x top-up
**             off and on, fp32.  Top-up off: every mini-batch is its own
**             search.  On: a thread's search covers --top-up-pool
**             mini-batches (at most its share of the lines) with
**             mt_beam_params.max_active = the mini-batch size (or
**             --max-active), so finished sentences are replaced from the
**             pool and the batch stays full (engine/mt.h, "top-up").
**   gemm      one thread, beam 1 and 4 x mini-batch 1 and 32 x float32
**             (OpenBLAS sgemm; the own AVX-512 or AVX2 kernel for small
**             products, thresholds in kernels/cpu/blas.c),
**             int8 (weights packed once per worker, activations quantized
**             per call) and int8 with the lexical shortlist (--shortlist,
**             else lex.bin or lex.s2t next to the model; 100 100 0; the
**             output layer's columns selected from the packed weights),
**             with the cost figures of WNMT 2018 sec. 5: the fraction of the
**             int8 compute limit and source tokens per USD; then the speed
**             of int8 + shortlist over float32 at beam 4, mini-batch 32.
**
** Columns: source and target tokens per second (subword tokens, EOS not
** counted), sentences per second and the wall time of the run; with
** --repeat N the run whose wall time is the median of N.
**
** The int8 compute limit (printed with how it was computed): the measured
** int8 multiply-add throughput of one core with the integer kernel's
** instructions (mt_cpu_int_peak_gops: vpdpbusd with VNNI, vpmaddubsw +
** vpmaddwd + vpaddd with AVX2; as `mtpe bench gemm-int`; --peak-gops
** instead; measured again before each integer row, and the largest of the
** probes so far is used, so that a probe slowed down by another process on
** a shared machine does not inflate the fraction) divided by the integer
** operations the run
** needs per source token, 2 per multiply-add of every product with a weight
** matrix (the products that take the integer path; attention's products of
** activations and everything else are not counted), from the model config:
**   per encoder position    enc_depth (4 D^2 + FFN)
**                           + dec_depth 2 D^2 (the decoder's projections of
**                             the encoder output, once per sentence)
**   per decoder row         dec_depth (4 D^2 self-attention, or the average-
**                             attention FFN and gate; 2 D^2 context query
**                             and output; decoder FFN) + D C for the output
**                             layer, C = V or the size of the step's
**                             shortlist
**   FFN = D F + (depth - 2) F^2 + F D
** with positions = source tokens + EOS, and rows = the hypotheses the
** search scored (the scorer's counters over the timed run: rows, and rows
** times C of each step).  Beam search scores more rows than beam x (output
** tokens + EOS): a sentence's hypotheses that end after its best one (or at
** the length limit) are scored too; the rows/out column is the ratio.
** Padding is not counted (a sentence's finished hypotheses leave the rows).
**
** --kv-cache: the decoder caches of every row (auto, what mtpe translate uses;
** float32, float16, bfloat16 or int8), to time the others against auto.
**
** Threads: each thread has its own mt_translate_worker (made before the
** clock starts, and warmed by one mini-batch) and single-threaded BLAS;
** searches, in input order, go to whichever thread is free.  Sentences are
** encoded before the clock starts and, with --maxi-batch-sort src (the
** default), ordered longest first, as `mtpe translate --maxi-batch N
** --maxi-batch-sort src` orders a maxi-batch holding the whole run (how
** Marian and mtpe are run on files); the warm-up mini-batch is then the
** longest, so the graph workspaces reach their size before the clock (the
** first touch of fresh memory is a one-time cost of a process).
**
** Model: -m/-v, else the installed default (assets/models/en-de), else the
** transformer-tiny test fixture (said in the output).  Input: -i, else
** ../shared/data/en-de/test.en next to the source tree when present, else
** assets/samples/sample.en.txt; its non-empty lines are repeated up to
** --lines (200).
*/
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "app.h"
#include "common.h"
#include "options.h"
#include "paths.h"
#include "shortlist.h"
#include "translator.h"

static const app_opt bt_opts[] = {
    {"models", 'm', APP_OPT_STRINGS, NULL, NULL, "model (default: the installed en-de model)"},
    {"vocabs", 'v', APP_OPT_STRINGS, NULL, NULL, "source and target vocabularies"},
    {"input", 'i', APP_OPT_STRING, NULL, NULL,
     "source text (default: ../shared/data/en-de/test.en or the sample text)"},
    {"lines", 0, APP_OPT_INT, "200", NULL, "sentences per run (input lines repeated)",
     "1..10000000"},
    {"maxi-batch-sort", 0, APP_OPT_STRING, "src", NULL,
     "src: the run's lines longest first (one maxi-batch); none: input order", "src|none"},
    {"repeat", 0, APP_OPT_INT, "1", NULL, "runs per configuration; the median is shown", "1..64"},
    {"tables", 0, APP_OPT_STRING, "batching,gemm", NULL,
     "tables to run: batching, gemm (comma-separated)"},
    {"max-active", 0, APP_OPT_INT, "0", NULL, "top-up window in sentences (0: the mini-batch size)",
     "0..65536"},
    {"top-up-pool", 0, APP_OPT_INT, "8", NULL, "top-up on: mini-batches per search", "1..10000"},
    {"shortlist", 0, APP_OPT_STRINGS, NULL, NULL,
     "FILE [first best threshold] (default: lex.bin or lex.s2t next to the model)"},
    {"usd-per-hour", 0, APP_OPT_FLOAT, "0.10", NULL,
     "assumed price of one core for an hour, USD (for tokens per USD)", "(0.."},
    {"peak-gops", 0, APP_OPT_FLOAT, "0", NULL,
     "int8 GOP/s of one core for the limit (0: measure vpdpbusd)", "0.."},
    {"rows", 0, APP_OPT_STRING, NULL, NULL,
     "gemm table: only these rows, GEMM:BEAM:BATCH comma-separated (e.g. int8:1:32,int8+sl:1:32)"},
    {"kv-cache", 0, APP_OPT_STRING, "auto", NULL,
     "decoder caches of every row: auto (what mtpe translate uses: follows the gemm type), "
     "float32, float16, bfloat16 or int8 (the one override of the automatic choice)",
     "auto|float32|float16|bfloat16|int8"},
    {"quiet", 0, APP_OPT_FLAG, NULL, NULL, "no log messages"},
};
static const int n_bt_opts = (int)(sizeof bt_opts / sizeof bt_opts[0]);

const app_cmd app_bench_translate_cmd = {
    .name = "bench translate",
    .usage = "[-m MODEL -v SRC TRG] [-i FILE] [--lines N] [--repeat N]\n"
             "  [--tables batching,gemm]",
    .about = "Translation throughput.  batching: beam 1 and 4, mini-batch 1 and 32, 1 and 2\n"
             "threads, top-up batching off and on.  gemm: one thread, float32 vs int8 vs\n"
             "int8 + shortlist at beam 1 and 4, mini-batch 1 and 32, with the fraction of the\n"
             "int8 compute limit and source tokens per USD.\n",
    .opts = bt_opts,
    .n_opts = n_bt_opts,
};

static bool bt_is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* One timed run: threads take searches [next, next + per_search). */
typedef struct bt_run {
    pthread_mutex_t mu;
    mt_translate_worker **workers;
    int next_worker;
    const mt_tr_sentence *s;
    mt_tr_result *r;
    int n, per_search, next;
    mt_status rc;
    char err[512];
} bt_run;

static void *bt_thread(void *arg) {
    bt_run *b = arg;
    pthread_mutex_lock(&b->mu);
    mt_translate_worker *w = b->workers[b->next_worker++];
    pthread_mutex_unlock(&b->mu);
    for (;;) {
        pthread_mutex_lock(&b->mu);
        int start = b->rc == MT_OK ? b->next : b->n;
        int cnt = b->n - start < b->per_search ? b->n - start : b->per_search;
        b->next = start + cnt;
        pthread_mutex_unlock(&b->mu);
        if (cnt <= 0) break;
        mt_status rc = mt_translate_encoded(w, b->s + start, cnt, b->r + start, NULL, NULL);
        if (rc != MT_OK) {
            pthread_mutex_lock(&b->mu);
            if (b->rc == MT_OK) {
                b->rc = rc;
                snprintf(b->err, sizeof b->err, "%s", mt_errmsg());
            }
            pthread_mutex_unlock(&b->mu);
            break;
        }
    }
    return NULL;
}

/* Translates s[0..n) on `threads` threads; wall time and target tokens. */
static mt_status bt_once(mt_translate_worker **workers, int threads, const mt_tr_sentence *s,
                         mt_tr_result *r, int n, int per_search, double *wall,
                         int64_t *trg_tokens) {
    bt_run b;
    memset(&b, 0, sizeof b);
    pthread_mutex_init(&b.mu, NULL);
    b.workers = workers;
    b.s = s;
    b.r = r;
    b.n = n;
    b.per_search = per_search;
    double t0 = app_now();
    app_run_workers(threads, bt_thread, &b);
    *wall = app_now() - t0;
    pthread_mutex_destroy(&b.mu);
    int64_t toks = 0;
    for (int i = 0; i < n; i++) {
        if (b.rc == MT_OK && r[i].n_hyps > 0) toks += r[i].hyps[0].n_tokens;
        mt_tr_result_clear(&r[i]);
    }
    *trg_tokens = toks;
    if (b.rc != MT_OK) return mt_seterr(b.rc, "%s", b.err);
    return MT_OK;
}

/* Reads the non-empty lines of path, repeated up to n. */
static mt_status read_input(const char *path, int n, char ***out) {
    mt_status rc = MT_OK;
    char **lines = NULL, *buf = NULL;
    size_t cap = 0;
    int have = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return mt_seterr(MT_ERR_IO, "cannot open %s", path);
    lines = mt_try_calloc((size_t)n, sizeof *lines);
    if (!lines) {
        rc = mt_seterr(MT_ERR_NOMEM, "bench translate: out of memory");
        goto fail;
    }
    ssize_t k;
    while (have < n && (k = app_read_line(f, &buf, &cap)) >= 0) {
        if (k == 0) continue;
        lines[have] = mt_try_malloc((size_t)k + 1);
        if (!lines[have]) {
            rc = mt_seterr(MT_ERR_NOMEM, "bench translate: out of memory");
            goto fail;
        }
        memcpy(lines[have++], buf, (size_t)k + 1);
    }
    if (have == 0) {
        rc = mt_seterr(MT_ERR_INVALID, "%s has no non-empty line", path);
        goto fail;
    }
    for (int i = have; i < n; i++) {
        size_t len = strlen(lines[i % have]);
        lines[i] = mt_try_malloc(len + 1);
        if (!lines[i]) {
            rc = mt_seterr(MT_ERR_NOMEM, "bench translate: out of memory");
            goto fail;
        }
        memcpy(lines[i], lines[i % have], len + 1);
    }
    free(buf); /* getline's buffer */
    fclose(f);
    *out = lines;
    return MT_OK;
fail:
    if (lines)
        for (int i = 0; i < n; i++)
            mt_free(lines[i]);
    mt_free(lines);
    free(buf);
    fclose(f);
    return rc;
}

/* ------------------------------------------------------- ops per token */

/* Multiply-adds of the products with weight matrices (see the header). */
typedef struct bt_macs {
    bool known;         /* a transformer: the counts below are valid        */
    double enc_pos;     /* per source position (encoder + context K/V)      */
    double dec_row;     /* per decoder row, output layer excluded           */
    double out_per_col; /* per decoder row and output column (D)          */
} bt_macs;

static double ffn_macs(double d, double f, int depth) {
    if (depth <= 1) return d * d;
    return d * f + (double)(depth - 2) * f * f + f * d;
}

static bt_macs model_macs(const mt_model_config *c) {
    bt_macs m;
    memset(&m, 0, sizeof m);
    if (strcmp(c->type, "transformer") != 0) return m;
    double d = c->dim_emb, f = c->dim_ffn;
    double fd = c->dec_dim_ffn > 0 ? c->dec_dim_ffn : c->dim_ffn;
    int fdep = c->ffn_depth > 0 ? c->ffn_depth : 2;
    int dfdep = c->dec_ffn_depth > 0 ? c->dec_ffn_depth : fdep;
    m.enc_pos = c->enc_depth * (4 * d * d + ffn_macs(d, f, fdep)) + c->dec_depth * 2 * d * d;
    double self = 4 * d * d;
    if (!strcmp(c->dec_autoreg, "average-attention")) {
        double a = c->dim_aan > 0 ? c->dim_aan : d;
        self =
            ffn_macs(d, a, c->aan_depth > 0 ? c->aan_depth : 2) + (c->aan_nogate ? 0 : 2 * d * d);
    } else if (strcmp(c->dec_autoreg, "self-attention") != 0) {
        return m; /* rnn decoders: not counted */
    }
    m.dec_row = c->dec_depth * (self + 2 * d * d + ffn_macs(d, fd, dfdep));
    m.out_per_col = d;
    m.known = true;
    return m;
}

/* ---------------------------------------------------------------- runs */

typedef struct bt_ctx {
    mt_ensemble am;
    char **lines;
    int n, repeat, max_active, pool;
    mt_tr_sentence *s; /* encoded once */
    mt_tr_result *r;
    int64_t src_tokens, src_positions;
    mt_shortlist *sl;
    bt_macs macs;
    double peak_gops, usd_per_hour;
    const char *peak_src; /* where peak_gops comes from */
    bool peak_measured;   /* probed: probe again before each integer row */
    double peak_first;    /* the first probe                          */
    int peak_probes;
    char peak_buf[96];              /* "measured ... throughput" */
    double f32_b4_b32, i8sl_b4_b32; /* src tok/s for the ratio */
    const char *rows;               /* --rows: the gemm rows to run (NULL: all) */
    mt_kv_cache kv_cache;           /* --kv-cache */
} bt_ctx;

typedef struct bt_row {
    int beam, batch, threads;
    bool topup;
    mt_gemm_type gemm;
    bool shortlist;
} bt_row;

typedef struct bt_meas {
    double wall;
    int64_t trg_tokens;
    int64_t rows, row_cols; /* the last run's scored rows and rows x columns */
} bt_meas;

/* Scored rows and rows x output columns of the workers so far. */
static void bt_counts(mt_translate_worker **workers, int threads, int64_t *rows,
                      int64_t *row_cols) {
    *rows = *row_cols = 0;
    for (int k = 0; k < threads; k++) {
        mt_model_scorer_stats st = mt_translate_worker_stats(workers[k]);
        *rows += st.rows;
        *row_cols += st.row_cols;
    }
}

/* Times one configuration: its own translator and workers, warmed by one
** mini-batch per thread, then the median of --repeat runs. */
static mt_status bt_row_run(bt_ctx *c, const bt_row *row, bt_meas *out) {
    mt_status rc = MT_OK;
    mt_translator *tr = NULL;
    mt_translate_worker *workers[2] = {NULL, NULL};
    mt_translate_params p = mt_translate_default_params();
    p.beam_size = row->beam;
    p.gemm_type = row->gemm;
    p.kv_cache = c->kv_cache;
    int per_search = row->batch;
    if (row->topup) {
        p.max_active = c->max_active > 0 ? c->max_active : row->batch;
        int share = (c->n + row->threads - 1) / row->threads;
        per_search = row->batch * c->pool < share ? row->batch * c->pool : share;
    }
    rc = mt_translator_init(&c->am, row->shortlist ? c->sl : NULL, &p, &tr);
    for (int k = 0; k < row->threads && rc == MT_OK; k++)
        rc = mt_translate_worker_init(tr, &workers[k]);
    double walls[64], wall;
    int64_t trg = 0, warm_trg;
    int warm_n = row->batch * row->threads < c->n ? row->batch * row->threads : c->n;
    if (rc == MT_OK)
        rc = bt_once(workers, row->threads, c->s, c->r, warm_n, row->batch, &wall, &warm_trg);
    int64_t rows0 = 0, cols0 = 0;
    for (int k = 0; k < c->repeat && rc == MT_OK; k++) {
        bt_counts(workers, row->threads, &rows0, &cols0);
        rc = bt_once(workers, row->threads, c->s, c->r, c->n, per_search, &walls[k], &trg);
    }
    if (rc == MT_OK) {
        bt_counts(workers, row->threads, &out->rows, &out->row_cols);
        out->rows -= rows0;
        out->row_cols -= cols0;
        qsort(walls, (size_t)c->repeat, sizeof walls[0], app_cmp_double);
        out->wall = walls[c->repeat / 2] > 0 ? walls[c->repeat / 2] : 1e-9;
        out->trg_tokens = trg;
    }
    for (int k = 0; k < 2; k++)
        mt_translate_worker_free(workers[k]);
    mt_translator_free(tr);
    return rc;
}

static mt_status bt_table_batching(bt_ctx *c) {
    printf("== batching: fp32; top-up off: one search per mini-batch; on: one search per %d "
           "mini-batches\n   (at most a thread's share of the lines), max_active = ",
           c->pool);
    if (c->max_active > 0)
        printf("%d (--max-active)\n\n", c->max_active);
    else
        printf("the mini-batch size\n\n");
    printf("beam  batch threads  top-up   src tok/s    trg tok/s    sent/s    wall s\n");
    static const int beams[] = {1, 4}, batches[] = {1, 32}, threads[] = {1, 2};
    for (int bi = 0; bi < 2; bi++)
        for (int tu = 0; tu < 2; tu++)
            for (int ti = 0; ti < 2; ti++)
                for (int ba = 0; ba < 2; ba++) {
                    bt_row row = {.beam = beams[bi],
                                  .batch = batches[ba],
                                  .threads = threads[ti],
                                  .topup = tu == 1,
                                  .gemm = MT_GEMM_FLOAT32};
                    bt_meas m;
                    mt_status rc = bt_row_run(c, &row, &m);
                    if (rc != MT_OK) return rc;
                    printf("%4d %6d %7d  %-6s %12.1f %12.1f %10.2f %9.3f\n", row.beam, row.batch,
                           row.threads, row.topup ? "on" : "off", (double)c->src_tokens / m.wall,
                           (double)m.trg_tokens / m.wall, (double)c->n / m.wall, m.wall);
                    fflush(stdout);
                }
    printf("\n");
    return MT_OK;
}

/* The gemm table's rows: each GEMM name at each beam and mini-batch. */
static const char *const bt_gemm_names[3] = {"float32", "int8", "int8+sl"};
static const int bt_gemm_beams[2] = {1, 4}, bt_gemm_batches[2] = {1, 32};

/* Whether the entry p[0..len) of --rows names the row NAME:BEAM:BATCH. */
static bool bt_entry_is(const char *p, size_t len, const char *name, int beam, int batch) {
    char want[64];
    snprintf(want, sizeof want, "%s:%d:%d", name, beam, batch);
    return strlen(want) == len && strncmp(p, want, len) == 0;
}

/* Whether --rows (comma-separated entries; NULL: all) names this row. */
static bool bt_row_wanted(const char *rows, const char *name, int beam, int batch) {
    if (rows == NULL) return true;
    for (const char *p = rows; *p;) {
        size_t len = strcspn(p, ",");
        if (bt_entry_is(p, len, name, beam, batch)) return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* --rows: each entry a row of the gemm table. */
static bool bt_rows_valid(const char *rows) {
    for (const char *p = rows; *p;) {
        size_t len = strcspn(p, ",");
        bool ok = false;
        for (int gi = 0; gi < 3; gi++)
            for (int bi = 0; bi < 2; bi++)
                for (int ba = 0; ba < 2; ba++)
                    ok = ok || bt_entry_is(p, len, bt_gemm_names[gi], bt_gemm_beams[bi],
                                           bt_gemm_batches[ba]);
        if (!ok) return false;
        p += len + (p[len] == ',');
    }
    return true;
}

static mt_status bt_table_gemm(bt_ctx *c) {
    int32_t v = mt_model_trg_vocab(c->am.models[0]);
    int64_t max_m, max_m_tb, max_batched;
    mt_cpu_gemm_small_limits(false, &max_m, &max_batched);
    mt_cpu_gemm_small_limits(true, &max_m_tb, &max_batched);
    printf("== gemm: one thread; float32 = OpenBLAS sgemm (own %s kernel for products of <= %lld "
           "rows,\n   <= %lld with B transposed, and batched ones of <= %lld multiply-adds), int8 "
           "= weights packed\n   once, activations quantized per call, +sl = int8 with the "
           "shortlist (columns of the packed\n   output layer)\n",
           mt_cpu_isa_active(), (long long)max_m, (long long)max_m_tb, (long long)max_batched);
    if (c->macs.known) {
        printf("   int8 limit = %.1f GOP/s (one core, %s) / integer ops per source token;\n"
               "   ops = 2 x multiply-adds of the products with weight matrices: per source "
               "position\n   (tokens + EOS) %.3g, per decoder row %.3g + %.0f x C (C = V = %d, "
               "or the step's shortlist\n   size; cols: the mean C per row), rows = the "
               "hypotheses the search scored\n   (rows/out: their number over beam x (output "
               "tokens + EOS); see bench_translate.c)\n",
               c->peak_gops, c->peak_src, 2 * c->macs.enc_pos, 2 * c->macs.dec_row,
               2 * c->macs.out_per_col, (int)v);
    } else {
        printf("   int8 limit: not computed (only transformer models are counted)\n");
    }
    printf("   src tok/USD: at $%.4g per core-hour (--usd-per-hour; an assumption, not a "
           "quote)\n\n",
           c->usd_per_hour);
    printf("gemm     beam batch   src tok/s   trg tok/s   wall s   cols rows/out  MOP/tok  limit "
           "tok/s  %%limit  M src tok/USD\n");
    for (int gi = 0; gi < 3; gi++) {
        if (gi == 2 && c->sl == NULL) {
            printf("int8+sl  (no shortlist: rows skipped)\n");
            continue;
        }
        for (int bi = 0; bi < 2; bi++)
            for (int ba = 0; ba < 2; ba++) {
                bt_row row = {.beam = bt_gemm_beams[bi],
                              .batch = bt_gemm_batches[ba],
                              .threads = 1,
                              .gemm = gi == 0 ? MT_GEMM_FLOAT32 : MT_GEMM_INT8,
                              .shortlist = gi == 2};
                const char *name = bt_gemm_names[gi];
                if (!bt_row_wanted(c->rows, name, row.beam, row.batch)) continue;
                if (gi > 0 && c->peak_measured) { /* the largest probe so far */
                    double p = mt_cpu_int_peak_gops(false, 0.1);
                    c->peak_gops = p > c->peak_gops ? p : c->peak_gops;
                    c->peak_probes++;
                }
                bt_meas m;
                mt_status rc = bt_row_run(c, &row, &m);
                if (rc != MT_OK) return rc;
                double src_s = (double)c->src_tokens / m.wall;
                double rows = (double)m.rows;
                double cols = rows > 0 ? (double)m.row_cols / rows : (double)v;
                double out_rows = (double)row.beam * (double)(m.trg_tokens + c->n);
                printf("%-8s %4d %5d %11.1f %11.1f %8.3f %6.0f %8.3f", name, row.beam, row.batch,
                       src_s, (double)m.trg_tokens / m.wall, m.wall, cols,
                       out_rows > 0 ? rows / out_rows : 0.0);
                if (c->macs.known && c->src_tokens > 0) {
                    double ops =
                        2 * (c->macs.enc_pos * (double)c->src_positions + c->macs.dec_row * rows +
                             c->macs.out_per_col * (double)m.row_cols);
                    double per_tok = ops / (double)c->src_tokens;
                    double limit = c->peak_gops * 1e9 / per_tok;
                    printf(" %8.2f %12.1f %6.1f%%", per_tok * 1e-6, limit, 100 * src_s / limit);
                } else {
                    printf(" %8s %12s %7s", "-", "-", "-");
                }
                printf(" %14.2f\n", src_s * 3600 / c->usd_per_hour * 1e-6);
                fflush(stdout);
                if (row.beam == 4 && row.batch == 32 && gi == 0) c->f32_b4_b32 = src_s;
                if (row.beam == 4 && row.batch == 32 && gi == 2) c->i8sl_b4_b32 = src_s;
            }
    }
    if (c->peak_measured)
        printf("\nint8 peak: %.1f GOP/s, the largest of %d probes (the first %.1f); each row's "
               "%%limit used\n   the largest before it\n",
               c->peak_gops, c->peak_probes, c->peak_first);
    if (c->f32_b4_b32 > 0 && c->i8sl_b4_b32 > 0)
        printf("\nint8 + shortlist over float32 at beam 4, mini-batch 32: %.2fx source tokens/s\n",
               c->i8sl_b4_b32 / c->f32_b4_b32);
    return MT_OK;
}

/* --shortlist FILE [first best threshold], else lex.bin / lex.s2t next to
** the model; *path_out receives the file used ("" for none). */
static mt_status bt_load_shortlist(bt_ctx *c, const app_opts *o, const char *model, char *path_out,
                                   size_t cap) {
    uint64_t first = 100, best = 100;
    float threshold = 0;
    bool check = true;
    path_out[0] = '\0';
    int ns = app_opts_count(o, "shortlist");
    if (ns > 0) {
        snprintf(path_out, cap, "%s", app_opts_item(o, "shortlist", 0));
        for (int i = 1; i < ns && i < 4; i++) {
            char *end = NULL;
            const char *s = app_opts_item(o, "shortlist", i);
            double d = strtod(s, &end);
            if (end == s || *end != '\0' || d < 0)
                return mt_seterr(MT_ERR_INVALID, "--shortlist: '%s' is not a number", s);
            if (i == 1) first = (uint64_t)d, check = d != 0;
            if (i == 2) best = (uint64_t)d;
            if (i == 3) threshold = (float)d;
        }
    } else {
        const char *slash = strrchr(model, '/');
        int dl = slash ? (int)(slash - model) : 1;
        const char *dir = slash ? model : ".";
        snprintf(path_out, cap, "%.*s/lex.bin", dl, dir);
        if (!bt_is_file(path_out)) snprintf(path_out, cap, "%.*s/lex.s2t", dl, dir);
        if (!bt_is_file(path_out)) {
            path_out[0] = '\0';
            return MT_OK;
        }
    }
    return mt_shortlist_load(path_out, c->am.vocabs[0], c->am.vocabs[c->am.n_streams - 1], first,
                             best, threshold, check, &c->sl);
}

/* Longest source first; ties in input order (the sort is stable by index). */
static const mt_tr_sentence *bt_sort_base;
static int bt_cmp_len(const void *pa, const void *pb) {
    int a = *(const int *)pa, b = *(const int *)pb;
    int32_t la = bt_sort_base[a].len[0], lb = bt_sort_base[b].len[0];
    if (la != lb) return la > lb ? -1 : 1;
    return (a > b) - (a < b);
}

static mt_status bt_sort(bt_ctx *c) {
    int *idx = mt_try_malloc(sizeof(int) * (size_t)c->n);
    mt_tr_sentence *tmp = mt_try_malloc(sizeof *tmp * (size_t)c->n);
    if (!idx || !tmp) {
        mt_free(idx);
        mt_free(tmp);
        return mt_seterr(MT_ERR_NOMEM, "bench translate: out of memory");
    }
    for (int i = 0; i < c->n; i++)
        idx[i] = i;
    bt_sort_base = c->s;
    qsort(idx, (size_t)c->n, sizeof *idx, bt_cmp_len);
    for (int i = 0; i < c->n; i++)
        tmp[i] = c->s[idx[i]];
    memcpy(c->s, tmp, sizeof *tmp * (size_t)c->n);
    mt_free(idx);
    mt_free(tmp);
    return MT_OK;
}

/* Encodes the input once (a translator with default limits). */
static mt_status bt_encode(bt_ctx *c) {
    mt_translator *tr = NULL;
    mt_translate_params p = mt_translate_default_params();
    mt_status rc = mt_translator_init(&c->am, NULL, &p, &tr);
    if (rc != MT_OK) return rc;
    c->s = mt_try_calloc((size_t)c->n, sizeof *c->s);
    c->r = mt_try_calloc((size_t)c->n, sizeof *c->r);
    if (!c->s || !c->r) rc = mt_seterr(MT_ERR_NOMEM, "bench translate: out of memory");
    for (int i = 0; i < c->n && rc == MT_OK; i++) {
        mt_tr_input in;
        memset(&in, 0, sizeof in);
        in.src[0] = c->lines[i];
        rc = mt_tr_encode(tr, &in, &c->s[i]);
        if (rc == MT_OK && !c->s[i].skipped) {
            c->src_tokens += c->s[i].len[0] - 1;
            c->src_positions += c->s[i].len[0];
        }
    }
    mt_translator_free(tr);
    return rc;
}

int app_bench_translate_main(int argc, char **argv) {
    app_opts *o = NULL;
    int ret;
    if (!app_opts_parse_cmd(&app_bench_translate_cmd, argc, argv, &o, &ret)) return ret;
    ret = 1;
    bt_ctx c;
    memset(&c, 0, sizeof c);
    char *assets = NULL;
    char model[PATH_MAX], vsrc[PATH_MAX], vtrg[PATH_MAX], input[PATH_MAX], slpath[PATH_MAX];
    const char *which;
    c.n = (int)app_opts_int(o, "lines");
    c.repeat = (int)app_opts_int(o, "repeat");
    c.max_active = (int)app_opts_int(o, "max-active");
    c.pool = (int)app_opts_int(o, "top-up-pool");
    c.usd_per_hour = app_opts_float(o, "usd-per-hour");
    const char *tables = app_opts_str(o, "tables");
    bool t_batching = strstr(tables, "batching") != NULL, t_gemm = strstr(tables, "gemm") != NULL;
    /* (--lines, --repeat, --max-active, --top-up-pool, --usd-per-hour,
    ** --peak-gops, --maxi-batch-sort and --kv-cache: the option table) */
    if (mt_kv_cache_parse(app_opts_str(o, "kv-cache"), &c.kv_cache) != MT_OK) {
        fprintf(stderr, "mtpe bench translate: %s\n", mt_errmsg());
        ret = 2;
        goto done;
    }
    c.rows = app_opts_str(o, "rows");
    if (c.rows != NULL && c.rows[0] == '\0') c.rows = NULL; /* not given */
    if (c.rows != NULL && !bt_rows_valid(c.rows)) {
        fprintf(stderr,
                "mtpe bench translate: --rows: GEMM:BEAM:BATCH entries (GEMM float32, int8 or "
                "int8+sl, BEAM 1 or 4, BATCH 1 or 32), not '%s'\n",
                c.rows);
        ret = 2;
        goto done;
    }
    if (!t_batching && !t_gemm) {
        fprintf(stderr, "mtpe bench translate: --tables: batching, gemm or both, not '%s'\n",
                tables);
        ret = 2;
        goto done;
    }
    int mr = app_bench_model(o, "bench translate", model, vsrc, vtrg, &which);
    if (mr != 0) {
        if (mr == 2) ret = 2;
        goto done;
    }
    if (app_opts_str(o, "input")[0]) {
        snprintf(input, sizeof input, "%s", app_opts_str(o, "input"));
    } else {
        snprintf(input, sizeof input, "%s/../shared/data/en-de/test.en", MT_SOURCE_DIR);
        if (!bt_is_file(input)) {
            if (app_default_assets_dir(&assets) != MT_OK) {
                fprintf(stderr, "mtpe bench translate: no input: %s\n", mt_errmsg());
                goto done;
            }
            snprintf(input, sizeof input, "%.4000s/samples/sample.en.txt", assets);
        }
    }
    const char *paths[1] = {model};
    const char *vpaths[2] = {vsrc, vtrg};
    mt_status rc = mt_ensemble_load(&c.am, paths, 1, NULL, vpaths, 2);
    if (rc == MT_OK) rc = read_input(input, c.n, &c.lines);
    if (rc == MT_OK) rc = bt_encode(&c);
    if (rc == MT_OK && !strcmp(app_opts_str(o, "maxi-batch-sort"), "src")) rc = bt_sort(&c);
    if (rc == MT_OK && t_gemm) rc = bt_load_shortlist(&c, o, model, slpath, sizeof slpath);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe bench translate: %s\n", mt_errmsg());
        goto done;
    }
    app_blas_single_threaded();
    printf("model: %s (%s)\ninput: %s, %d sentences per run, %lld source tokens", model, which,
           input, c.n, (long long)c.src_tokens);
    if (c.repeat > 1) printf(", median of %d runs", c.repeat);
    printf("\nthreads: one translate worker each, single-threaded BLAS; searches in %s\n"
           "tokens: subwords, EOS not counted\n",
           strcmp(app_opts_str(o, "maxi-batch-sort"), "src")
               ? "input order"
               : "order of source length, longest first (--maxi-batch-sort src)");
    { /* the float32 baseline depends on it: AVX2 kernels run at half the speed */
        const char *ct = getenv("OPENBLAS_CORETYPE");
        printf("cpu isa %s, OpenBLAS kernels %s (OPENBLAS_CORETYPE=%s)\n", mt_cpu_isa(),
               mt_cpu_blas_corename(), ct ? ct : "unset");
    }
    if (t_gemm) {
        c.macs = model_macs(mt_model_get_config(c.am.models[0]));
        c.peak_gops = app_opts_float(o, "peak-gops");
        c.peak_src = "--peak-gops";
        if (c.peak_gops > 0) {
            printf("int8 peak: %.1f GOP/s per core (--peak-gops)\n", c.peak_gops);
        } else {
            c.peak_gops = mt_cpu_int_peak_gops(false, 0.3);
            snprintf(c.peak_buf, sizeof c.peak_buf, "measured %s throughput",
                     mt_cpu_int_peak_what(false));
            c.peak_src = c.peak_buf;
            c.peak_measured = c.peak_gops > 0;
            c.peak_first = c.peak_gops;
            c.peak_probes = 1;
            if (c.peak_gops > 0) {
                printf("int8 peak: %.1f GOP/s per core (%s, as `mtpe bench gemm-int`)\n",
                       c.peak_gops, c.peak_src);
            } else {
                c.peak_gops = 913.0;
                c.peak_src = "nominal Zen 5 int8 figure";
                printf("int8 peak: no SIMD integer kernel to measure; the nominal 913 GOP/s of a "
                       "Zen 5 core (--peak-gops)\n");
            }
        }
        if (slpath[0])
            printf("shortlist: %s\n", slpath);
        else
            printf("shortlist: none (--shortlist FILE; no lex.bin or lex.s2t next to the "
                   "model)\n");
    }
    printf("\n");
    if (t_batching) rc = bt_table_batching(&c);
    if (rc == MT_OK && t_gemm) rc = bt_table_gemm(&c);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe bench translate: %s\n", mt_errmsg());
        goto done;
    }
    ret = 0;
done:
    if (c.s)
        for (int i = 0; i < c.n; i++)
            mt_tr_sentence_clear(&c.s[i]);
    mt_free(c.s);
    mt_free(c.r);
    mt_shortlist_free(c.sl);
    if (c.lines)
        for (int i = 0; i < c.n; i++)
            mt_free(c.lines[i]);
    mt_free(c.lines);
    mt_free(assets);
    mt_ensemble_free(&c.am);
    app_opts_free(o);
    return ret;
}
