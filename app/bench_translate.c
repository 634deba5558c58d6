/*
** bench_translate.c: `mtpe bench translate [-m MODEL -v SRC TRG] [-i FILE]
**                     [--lines N] [--repeat N] [--max-active N]`
**
** Translation throughput through the translate API (app/translate.h), one
** table in one run: beam 1 and 4 x mini-batch 1 and 32 x 1 and 2 threads x
** top-up batching off and on (mt_beam_params.max_active = --max-active).
** Columns: source and target tokens per second (subword tokens, EOS not
** counted), sentences per second and the wall time of the run; with
** --repeat N the run whose wall time is the median of N.
**
** Threads: each thread has its own app_translate_worker (made before the
** clock starts, and warmed by one batch) and single-threaded BLAS; the
** mini-batches of the input, in input order, go to whichever thread is
** free.  Sentences are encoded before the clock starts.
**
** Caveat printed with the table: the model scorer (app/scorer_model.c) has
** no `add`, so top-up "on" runs each mini-batch as consecutive sub-batches
** of max_active sentences instead of refilling the window (mt.h); at
** mini-batch 1 it changes nothing.
**
** Model: -m/-v, else the installed default (assets/models/en-de), else the
** transformer-tiny test fixture (said in the output).  Input: -i, else
** ../shared/data/en-de/test.en next to the source tree when present, else
** assets/samples/sample.en.txt; its non-empty lines are repeated up to
** --lines (200).
*/
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
#include "translate.h"

static const app_opt bt_opts[] = {
    {"models", 'm', APP_OPT_STRINGS, NULL, NULL, "model (default: the installed en-de model)"},
    {"vocabs", 'v', APP_OPT_STRINGS, NULL, NULL, "source and target vocabularies"},
    {"input", 'i', APP_OPT_STRING, NULL, NULL,
     "source text (default: ../shared/data/en-de/test.en or the sample text)"},
    {"lines", 0, APP_OPT_INT, "200", NULL, "sentences per run (input lines repeated)"},
    {"repeat", 0, APP_OPT_INT, "1", NULL, "runs per configuration; the median is shown"},
    {"max-active", 0, APP_OPT_INT, "8", NULL, "top-up window (sentences) when top-up is on"},
    {"quiet", 0, APP_OPT_FLAG, NULL, NULL, "no log messages"},
};
static const int n_bt_opts = (int)(sizeof bt_opts / sizeof bt_opts[0]);

static void bt_help(FILE *f) {
    fprintf(f, "usage: mtpe bench translate [-m MODEL -v SRC TRG] [-i FILE] [--lines N]"
               " [--repeat N]\n\n"
               "Translation throughput at beam 1 and 4, mini-batch 1 and 32, 1 and 2 threads,\n"
               "top-up batching off and on: source/target tokens per second, sentences per\n"
               "second, wall time.\n\noptions:\n");
    app_opts_print_help(bt_opts, n_bt_opts, f);
}

static double bt_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool bt_is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* One timed run: threads take mini-batches [next, next + batch). */
typedef struct bt_run {
    pthread_mutex_t mu;
    app_translate_worker **workers;
    int next_worker;
    const app_tr_sentence *s;
    app_tr_result *r;
    int n, batch, next;
    mt_status rc;
    char err[512];
} bt_run;

static void *bt_thread(void *arg) {
    bt_run *b = arg;
    pthread_mutex_lock(&b->mu);
    app_translate_worker *w = b->workers[b->next_worker++];
    pthread_mutex_unlock(&b->mu);
    for (;;) {
        pthread_mutex_lock(&b->mu);
        int start = b->rc == MT_OK ? b->next : b->n;
        int cnt = b->n - start < b->batch ? b->n - start : b->batch;
        b->next = start + cnt;
        pthread_mutex_unlock(&b->mu);
        if (cnt <= 0) break;
        mt_status rc = app_translate_encoded(w, b->s + start, cnt, b->r + start, NULL, NULL);
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
static mt_status bt_once(app_translate_worker **workers, int threads, const app_tr_sentence *s,
                         app_tr_result *r, int n, int batch, double *wall, int64_t *trg_tokens) {
    bt_run b;
    memset(&b, 0, sizeof b);
    pthread_mutex_init(&b.mu, NULL);
    b.workers = workers;
    b.s = s;
    b.r = r;
    b.n = n;
    b.batch = batch;
    double t0 = bt_now();
    app_run_workers(threads, bt_thread, &b);
    *wall = bt_now() - t0;
    pthread_mutex_destroy(&b.mu);
    int64_t toks = 0;
    for (int i = 0; i < n; i++) {
        if (b.rc == MT_OK && r[i].n_hyps > 0) toks += r[i].hyps[0].n_tokens;
        app_tr_result_clear(&r[i]);
    }
    *trg_tokens = toks;
    if (b.rc != MT_OK) return mt_seterr(b.rc, "%s", b.err);
    return MT_OK;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
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
        for (int i = 0; i < n; i++) mt_free(lines[i]);
    mt_free(lines);
    free(buf);
    fclose(f);
    return rc;
}

typedef struct bt_ctx {
    app_models am;
    char **lines;
    int n, repeat, max_active;
} bt_ctx;

/* All configurations of one beam size and top-up setting. */
static mt_status bt_translator(bt_ctx *c, int beam, bool topup) {
    static const int threads_list[] = {1, 2};
    static const int batch_list[] = {1, 32};
    mt_status rc = MT_OK;
    app_translator *tr = NULL;
    app_tr_sentence *s = NULL;
    app_tr_result *r = NULL;
    app_translate_worker *workers[2] = {NULL, NULL};
    app_translate_params p = app_translate_default_params();
    p.beam_size = beam;
    p.max_active = topup ? c->max_active : 0;
    rc = app_translator_init(&c->am, NULL, &p, &tr);
    if (rc != MT_OK) goto fail;
    s = mt_try_calloc((size_t)c->n, sizeof *s);
    r = mt_try_calloc((size_t)c->n, sizeof *r);
    if (!s || !r) {
        rc = mt_seterr(MT_ERR_NOMEM, "bench translate: out of memory");
        goto fail;
    }
    int64_t src_tokens = 0;
    for (int i = 0; i < c->n; i++) {
        app_tr_input in;
        memset(&in, 0, sizeof in);
        in.src[0] = c->lines[i];
        rc = app_tr_encode(tr, &in, &s[i]);
        if (rc != MT_OK) goto fail;
        src_tokens += s[i].len[0] - 1;
    }
    for (int ti = 0; ti < 2; ti++) {
        int threads = threads_list[ti];
        for (int k = 0; k < threads; k++) {
            if (workers[k]) continue;
            rc = app_translate_worker_init(tr, &workers[k]);
            if (rc != MT_OK) goto fail;
        }
        for (int bi = 0; bi < 2; bi++) {
            int batch = batch_list[bi];
            double walls[64], wall;
            int64_t trg = 0, warm_trg;
            int warm_n = batch * threads < c->n ? batch * threads : c->n;
            rc = bt_once(workers, threads, s, r, warm_n, batch, &wall, &warm_trg);
            if (rc != MT_OK) goto fail;
            for (int k = 0; k < c->repeat; k++) {
                rc = bt_once(workers, threads, s, r, c->n, batch, &walls[k], &trg);
                if (rc != MT_OK) goto fail;
            }
            qsort(walls, (size_t)c->repeat, sizeof walls[0], cmp_dbl);
            wall = walls[c->repeat / 2];
            if (wall <= 0) wall = 1e-9;
            printf("%4d %6d %7d  %-6s %12.1f %12.1f %10.2f %9.3f\n", beam, batch, threads,
                   topup ? "on" : "off", (double)src_tokens / wall, (double)trg / wall,
                   (double)c->n / wall, wall);
            fflush(stdout);
        }
    }
fail:
    for (int k = 0; k < 2; k++) app_translate_worker_free(workers[k]);
    if (s)
        for (int i = 0; i < c->n; i++) app_tr_sentence_clear(&s[i]);
    mt_free(s);
    mt_free(r);
    app_translator_free(tr);
    return rc;
}

int app_bench_translate_main(int argc, char **argv) {
    app_opts *o = NULL;
    int ret;
    if (!app_opts_parse_cmd("bench translate", bt_opts, n_bt_opts, argc, argv, bt_help, &o,
                            &ret))
        return ret;
    ret = 1;
    bt_ctx c;
    memset(&c, 0, sizeof c);
    char *assets = NULL;
    char model[4200], vsrc[4200], vtrg[4200], input[4200];
    const char *which;
    c.n = (int)app_opts_int(o, "lines");
    c.repeat = (int)app_opts_int(o, "repeat");
    c.max_active = (int)app_opts_int(o, "max-active");
    if (c.n < 1 || c.repeat < 1 || c.repeat > 64 || c.max_active < 1) {
        fprintf(stderr, "mtpe bench translate: --lines and --max-active must be >= 1, "
                        "--repeat 1..64\n");
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
            snprintf(input, sizeof input, "%s/samples/sample.en.txt", assets);
        }
    }
    const char *paths[1] = {model};
    const char *vpaths[2] = {vsrc, vtrg};
    mt_status rc = app_models_load(&c.am, paths, 1, NULL, vpaths, 2);
    if (rc == MT_OK) rc = read_input(input, c.n, &c.lines);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe bench translate: %s\n", mt_errmsg());
        goto done;
    }
    app_blas_single_threaded();
    printf("model: %s (%s)\ninput: %s, %d sentences per run", model, which, input, c.n);
    if (c.repeat > 1) printf(", median of %d runs", c.repeat);
    printf("\nthreads: one translate worker each, single-threaded BLAS; mini-batches in input "
           "order\ntop-up on: max_active %d.  CAVEAT: the model scorer has no top-up `add`, so "
           "this\n  runs each mini-batch as consecutive sub-batches of %d sentences (no refill "
           "of\n  the window); it changes nothing at mini-batch 1.\ntokens: subwords, EOS not "
           "counted\n\n",
           c.max_active, c.max_active);
    printf("beam  batch threads  top-up   src tok/s    trg tok/s    sent/s    wall s\n");
    for (int bi = 0; bi < 2; bi++) {
        for (int tu = 0; tu < 2; tu++) {
            rc = bt_translator(&c, bi == 0 ? 1 : 4, tu == 1);
            if (rc != MT_OK) {
                fprintf(stderr, "mtpe bench translate: %s\n", mt_errmsg());
                goto done;
            }
        }
    }
    ret = 0;
done:
    if (c.lines)
        for (int i = 0; i < c.n; i++) mt_free(c.lines[i]);
    mt_free(c.lines);
    mt_free(assets);
    app_models_free(&c.am);
    app_opts_free(o);
    return ret;
}
