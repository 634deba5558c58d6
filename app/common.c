/*
** common.c: shared helpers of the commands (see common.h).
*/
#include "common.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "options.h"
#include "paths.h"

/* ------------------------------------------------------------- lines */

ssize_t app_read_line(FILE *f, char **buf, size_t *cap) {
    ssize_t k = getline(buf, cap, f);
    if (k < 0) return -1;
    if (k > 0 && (*buf)[k - 1] == '\n') (*buf)[--k] = '\0';
    if (k > 0 && (*buf)[k - 1] == '\r') (*buf)[--k] = '\0';
    return k;
}

mt_status app_check_utf8(const char *s, size_t n, const char *file, int64_t line) {
    size_t bad = 0;
    if (mt_utf8_valid(s, n, &bad)) return MT_OK;
    return mt_seterr(MT_ERR_INVALID, "%s:%lld: invalid UTF-8 at byte %zu", file, (long long)line,
                     bad);
}

/* -------------------------------------------------------- alignments */

void app_print_alignment(FILE *f, const float *align, int32_t n_trg, int32_t n_src,
                         const char *how) {
    if (!strcmp(how, "soft")) {
        for (int32_t t = 0; t < n_trg; t++) {
            if (t) fputc(' ', f);
            for (int32_t s = 0; s < n_src; s++)
                fprintf(f, "%s%g", s ? "," : "", (double)align[(size_t)t * n_src + s]);
        }
        return;
    }
    float threshold = !strcmp(how, "hard") ? 1.0f : strtof(how, NULL);
    bool first = true;
    for (int32_t s = 0; s < n_src; s++) {
        for (int32_t t = 0; t < n_trg; t++) {
            const float *row = align + (size_t)t * n_src;
            bool on;
            if (threshold == 1.0f) {
                int32_t arg = 0;
                for (int32_t k = 0; k < n_src; k++)
                    if (row[arg] < row[k]) arg = k;
                on = arg == s;
            } else {
                on = row[s] > threshold;
            }
            if (on) {
                fprintf(f, "%s%d-%d", first ? "" : " ", (int)s, (int)t);
                first = false;
            }
        }
    }
}

/* ----------------------------------------------------------- threads */

void app_run_workers(int n, void *(*fn)(void *), void *arg) {
    enum { MAX_THREADS = 256 };
    pthread_t tid[MAX_THREADS];
    if (n > MAX_THREADS) n = MAX_THREADS;
    int started = 0;
    for (int i = 1; i < n; i++)
        if (pthread_create(&tid[started], NULL, fn, arg) == 0) started++;
    fn(arg);
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
}

void app_blas_single_threaded(void) { mt_cpu_set_blas_threads(1); }

/* ------------------------------------------------------ default model */

bool app_default_named_model_dir(const char *name, char *dir, size_t cap, char *looked,
                                 size_t looked_cap) {
    if (looked && looked_cap) looked[0] = '\0';
    char *assets = NULL;
    if (app_default_assets_dir(&assets) != MT_OK) {
        if (looked && looked_cap) snprintf(looked, looked_cap, "%s", mt_errmsg());
        return false;
    }
    char p[PATH_MAX + 64];
    struct stat st;
    snprintf(p, sizeof p, "%.4000s/models/%.60s/model.npz", assets, name);
    bool ok = stat(p, &st) == 0 && S_ISREG(st.st_mode);
    if (looked && looked_cap) snprintf(looked, looked_cap, "%.4000s/models/%.60s", assets, name);
    if (ok) snprintf(dir, cap, "%.4000s/models/%.60s", assets, name);
    mt_free(assets);
    return ok;
}

bool app_default_model_dir(char *dir, size_t cap, char *looked, size_t looked_cap) {
    return app_default_named_model_dir("en-de", dir, cap, looked, looked_cap);
}

/* ------------------------------------------------- benchmarks' model */

int app_bench_model(const struct app_opts *o, const char *cmd, char *model, char *vsrc,
                    char *vtrg, const char **which) {
    char dir[PATH_MAX], looked[2 * PATH_MAX];
    struct stat st;
    if (app_opts_count(o, "models") > 0) {
        if (app_opts_count(o, "models") != 1 || app_opts_count(o, "vocabs") != 2) {
            fprintf(stderr, "mtpe %s: -m MODEL -v SRC_VOCAB TRG_VOCAB\n", cmd);
            return 2;
        }
        snprintf(model, PATH_MAX, "%s", app_opts_item(o, "models", 0));
        snprintf(vsrc, PATH_MAX, "%s", app_opts_item(o, "vocabs", 0));
        snprintf(vtrg, PATH_MAX, "%s", app_opts_item(o, "vocabs", 1));
        *which = "given";
        return 0;
    }
    if (app_default_model_dir(dir, sizeof dir, looked, sizeof looked)) {
        *which = "default";
    } else {
        snprintf(dir, sizeof dir, "%s/tests/data/marian/transformer-tiny", MT_SOURCE_DIR);
        *which = "FALLBACK: the default model is not installed; the transformer-tiny test "
                 "fixture (its numbers show the machinery's overhead, not the real model's speed)";
    }
    snprintf(model, PATH_MAX, "%.4000s/model.npz", dir);
    snprintf(vsrc, PATH_MAX, "%.4000s/vocab.spm", dir);
    snprintf(vtrg, PATH_MAX, "%s", vsrc);
    if (stat(model, &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "mtpe %s: no model (default: %s; fixture: %s)\n", cmd, looked, model);
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ timing */

double app_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int64_t app_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int app_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double app_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, app_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool app_is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

void app_dir_of(const char *path, char *dir, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(dir, cap, ".");
    else if (slash == path)
        snprintf(dir, cap, "/");
    else
        snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}
