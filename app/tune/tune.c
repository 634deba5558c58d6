/*
** tune.c: `mtpe tune`'s work (tune.h): data from the store, the held-out
** split, replay and dev samples, training in a child `mtpe train`, the
** scores before and after, and the model folder.
*/
#include "tune.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "ensemble.h"
#include "metrics.h"
#include "translator.h"
#include "vocab.h"

#define TMP_SUFFIX ".tune-tmp"
#define MIN_HELDOUT 5

app_tune_params app_tune_default_params(void) {
    app_tune_params p = {
        .beam_size = 4,
        .normalize = 1.0f,
        .since_ms = INT64_MIN,
        .replay_ratio = 1.0,
        .dev_size = 200,
        .heldout_frac = 0.1,
        .min_segments = 30,
        .max_seconds = 45,
        .dev_bound = 1.0,
        .dropout = 0.1,
        .batch_words = 1000,
        .mix = {0.5},
        .n_mix = 1,
        .threads = 2,
        .seed = 1,
        .progress_fd = -1,
    };
    return p;
}

/* ------------------------------------------------------------ the pairs */

typedef struct pair {
    char *src, *trg;
    uint64_t key; /* digest of the source: the held-out split */
} pair;

typedef struct pairs {
    pair *v;
    int32_t n, cap;
} pairs;

static void pairs_free(pairs *p) {
    for (int32_t i = 0; i < p->n; i++) {
        mt_free(p->v[i].src);
        mt_free(p->v[i].trg);
    }
    mt_free(p->v);
    memset(p, 0, sizeof *p);
}

static uint64_t text_digest(const char *s) {
    uint64_t h = mt_fnv1a(MT_FNV1A_INIT, s, strlen(s));
    /* a final mix: nearby texts must not sort together */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static mt_status pairs_add(pairs *p, const char *src, const char *trg) {
    if (p->n == p->cap) {
        int32_t cap = p->cap ? 2 * p->cap : 256;
        pair *v = mt_try_realloc(p->v, (size_t)cap * sizeof *v);
        if (v == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
        p->v = v, p->cap = cap;
    }
    pair *q = &p->v[p->n];
    q->src = mt_try_strdup(src);
    q->trg = mt_try_strdup(trg);
    if (!q->src || !q->trg) {
        mt_free(q->src);
        mt_free(q->trg);
        return mt_seterr(MT_ERR_NOMEM, "out of memory");
    }
    q->key = text_digest(src);
    p->n++;
    return MT_OK;
}

/* Line breaks and tabs would break the line-aligned training files. */
static void flatten(char *s) {
    for (; *s; s++)
        if (*s == '\n' || *s == '\r' || *s == '\t') *s = ' ';
}

typedef struct collect_ctx {
    pairs *p;
    const char *doc;
    int64_t until_ms;
    mt_status rc;
} collect_ctx;

static int collect_one(void *user, const store_confirmed *c) {
    collect_ctx *x = user;
    if (x->doc && strcmp(x->doc, c->doc_path) != 0) return 0;
    x->rc = pairs_add(x->p, c->source, c->target);
    if (x->rc == MT_OK) {
        flatten(x->p->v[x->p->n - 1].src);
        flatten(x->p->v[x->p->n - 1].trg);
    }
    if (c->time_ms > x->until_ms) x->until_ms = c->time_ms;
    return x->rc != MT_OK;
}

static int cmp_pair_text(const void *a, const void *b) {
    const pair *x = a, *y = b;
    int c = strcmp(x->src, y->src);
    return c ? c : strcmp(x->trg, y->trg);
}

static int cmp_pair_key(const void *a, const void *b) {
    const pair *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return cmp_pair_text(a, b);
}

/* Sorts by text and drops repeated pairs. */
static void pairs_dedup(pairs *p) {
    if (p->n == 0) return;
    qsort(p->v, (size_t)p->n, sizeof *p->v, cmp_pair_text);
    int32_t k = 1;
    for (int32_t i = 1; i < p->n; i++) {
        if (cmp_pair_text(&p->v[i], &p->v[k - 1]) == 0) {
            mt_free(p->v[i].src);
            mt_free(p->v[i].trg);
        } else {
            p->v[k++] = p->v[i];
        }
    }
    p->n = k;
}

/* The number of held-out pairs: the first of the pairs sorted by source
** digest, at least MIN_HELDOUT and about frac of them, ending at a change
** of source so that no source is on both sides. */
static int32_t heldout_split(pairs *p, double frac) {
    qsort(p->v, (size_t)p->n, sizeof *p->v, cmp_pair_key);
    int32_t h = (int32_t)lround(frac * p->n);
    if (h < MIN_HELDOUT) h = MIN_HELDOUT;
    if (h > p->n / 2) h = p->n / 2;
    while (h > 0 && h < p->n && p->v[h].key == p->v[h - 1].key)
        h++;
    return h;
}

/* ------------------------------------------------------ files and text */

static mt_status io_error(const char *what, const char *path) {
    return mt_seterr(MT_ERR_IO, "%s %s: %s", what, path,
                     errno == ENOSPC ? "disk full" : strerror(errno));
}

static char *path_join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = mt_try_malloc(n);
    if (s) snprintf(s, n, "%s/%s", a, b);
    return s;
}

static char *str_cat(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 1;
    char *s = mt_try_malloc(n);
    if (s) snprintf(s, n, "%s%s", a, b);
    return s;
}

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* rm -rf of a folder tune made. */
static void remove_tree(const char *dir) {
    if (exists(dir)) nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static mt_status write_lines(const char *path, char *const *lines, int32_t n) {
    FILE *f = fopen(path, "w");
    if (f == NULL) return io_error("cannot write", path);
    for (int32_t i = 0; i < n; i++)
        fprintf(f, "%s\n", lines[i]);
    if (ferror(f) | (fclose(f) != 0)) return io_error("cannot write", path);
    return MT_OK;
}

static mt_status write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f == NULL) return io_error("cannot write", path);
    fputs(text, f);
    if (ferror(f) | (fflush(f) != 0) | (fsync(fileno(f)) != 0) | (fclose(f) != 0))
        return io_error("cannot write", path);
    return MT_OK;
}

static mt_status copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb");
    if (in == NULL) return io_error("cannot read", from);
    FILE *out = fopen(to, "wb");
    if (out == NULL) {
        fclose(in);
        return io_error("cannot write", to);
    }
    char buf[1 << 16];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, k, out) != k) break;
    bool bad_in = ferror(in);
    fclose(in);
    bool bad_out = ferror(out) | (fflush(out) != 0) | (fsync(fileno(out)) != 0);
    bad_out |= fclose(out) != 0;
    if (bad_in) return io_error("cannot read", from);
    if (bad_out) return io_error("cannot write", to);
    return MT_OK;
}

static void sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* Reads two line-aligned files; keep(i) says which lines to keep (NULL:
** all).  Lines that are empty on either side are skipped. */
typedef struct line_pairs {
    char **src, **trg;
    int32_t n, cap;
} line_pairs;

static void line_pairs_free(line_pairs *lp) {
    for (int32_t i = 0; i < lp->n; i++) {
        mt_free(lp->src[i]);
        mt_free(lp->trg[i]);
    }
    mt_free(lp->src);
    mt_free(lp->trg);
    memset(lp, 0, sizeof *lp);
}

static mt_status line_pairs_put(line_pairs *lp, int32_t at, const char *s, const char *t) {
    if (at == lp->n) {
        if (lp->n == lp->cap) {
            int32_t cap = lp->cap ? 2 * lp->cap : 256;
            char **a = mt_try_realloc(lp->src, (size_t)cap * sizeof *a);
            if (a) lp->src = a;
            char **b = a ? mt_try_realloc(lp->trg, (size_t)cap * sizeof *b) : NULL;
            if (b == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
            lp->trg = b, lp->cap = cap;
        }
        lp->src[at] = lp->trg[at] = NULL;
        lp->n++;
    }
    char *a = mt_try_strdup(s), *b = mt_try_strdup(t);
    if (!a || !b) {
        mt_free(a);
        mt_free(b);
        return mt_seterr(MT_ERR_NOMEM, "out of memory");
    }
    mt_free(lp->src[at]);
    mt_free(lp->trg[at]);
    lp->src[at] = a, lp->trg[at] = b;
    return MT_OK;
}

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Samples k line pairs of two parallel files: reservoir sampling when
** every > 0 is 0, else every line i with i % every == 0 (in order, at most
** k).  Empty lines, lines with invalid UTF-8 and lines longer than 100
** words are skipped. */
static mt_status sample_pairs(const char *fs, const char *ft, int32_t k, int64_t every,
                              uint64_t seed, line_pairs *out) {
    FILE *a = fopen(fs, "r");
    if (a == NULL) return io_error("cannot read", fs);
    FILE *b = fopen(ft, "r");
    if (b == NULL) {
        fclose(a);
        return io_error("cannot read", ft);
    }
    char *la = NULL, *lb = NULL;
    size_t ca = 0, cb = 0;
    int64_t seen = 0, line = 0;
    uint64_t rng = seed;
    mt_status rc = MT_OK;
    for (;;) {
        ssize_t na = app_read_line(a, &la, &ca), nb = app_read_line(b, &lb, &cb);
        if (na < 0 || nb < 0) {
            if ((na < 0) != (nb < 0))
                rc = mt_seterr(MT_ERR_FORMAT, "%s and %s have different numbers of lines", fs, ft);
            break;
        }
        line++;
        if (na == 0 || nb == 0 || strlen(la) != (size_t)na || strlen(lb) != (size_t)nb) continue;
        if (app_check_utf8(la, (size_t)na, fs, line) != MT_OK ||
            app_check_utf8(lb, (size_t)nb, ft, line) != MT_OK) {
            mt_clearerr();
            continue;
        }
        if (store_count_words(la) > 100 || store_count_words(lb) > 100) continue;
        if (every > 0) {
            if ((line - 1) % every == 0 && out->n < k) rc = line_pairs_put(out, out->n, la, lb);
        } else if (seen < k) {
            rc = line_pairs_put(out, out->n, la, lb);
        } else {
            uint64_t j = rng_next(&rng) % (uint64_t)(seen + 1);
            if (j < (uint64_t)k) rc = line_pairs_put(out, (int32_t)j, la, lb);
        }
        seen++;
        if (rc != MT_OK) break;
    }
    if (rc == MT_OK && (ferror(a) || ferror(b))) rc = io_error("cannot read", ferror(a) ? fs : ft);
    free(la);
    free(lb);
    fclose(a);
    fclose(b);
    return rc;
}

static int64_t count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (f == NULL) return -1;
    int64_t n = 0;
    int c;
    while ((c = getc_unlocked(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

/* ------------------------------------------------------------ translation */

typedef struct tr_job {
    const mt_translator *tr;
    char *const *src;
    char **out;
    int32_t n, next;
    pthread_mutex_t mu;
    mt_status rc;
    char err[512];
} tr_job;

#define TR_BATCH 16

static void *tr_worker(void *arg) {
    tr_job *j = arg;
    mt_translate_worker *w = NULL;
    mt_status rc = mt_translate_worker_init(j->tr, &w);
    mt_tr_input in[TR_BATCH];
    mt_tr_result res[TR_BATCH];
    memset(res, 0, sizeof res);
    while (rc == MT_OK) {
        pthread_mutex_lock(&j->mu);
        int32_t i0 = j->next;
        bool stop = j->rc != MT_OK;
        j->next += TR_BATCH;
        pthread_mutex_unlock(&j->mu);
        if (stop || i0 >= j->n) break;
        int32_t m = j->n - i0 < TR_BATCH ? j->n - i0 : TR_BATCH;
        for (int32_t i = 0; i < m; i++) {
            memset(&in[i], 0, sizeof in[i]);
            in[i].src[0] = j->src[i0 + i];
        }
        rc = mt_translate(w, in, m, res, NULL, NULL);
        for (int32_t i = 0; i < m && rc == MT_OK; i++) {
            const char *t = res[i].n_hyps > 0 ? res[i].hyps[0].text : "";
            j->out[i0 + i] = mt_try_strdup(t ? t : "");
            if (j->out[i0 + i] == NULL) rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
        }
        for (int32_t i = 0; i < m; i++)
            mt_tr_result_clear(&res[i]);
    }
    if (rc != MT_OK) {
        pthread_mutex_lock(&j->mu);
        if (j->rc == MT_OK) {
            j->rc = rc;
            snprintf(j->err, sizeof j->err, "%s", mt_errmsg());
        }
        pthread_mutex_unlock(&j->mu);
    }
    mt_translate_worker_free(w);
    return NULL;
}

mt_status app_tune_translate(const char *model, const char *const *vocabs, const app_tune_params *p,
                             char *const *src, int32_t n, char **out) {
    mt_ensemble ens;
    memset(&ens, 0, sizeof ens);
    const char *models[1] = {model};
    mt_status rc = mt_ensemble_load(&ens, models, 1, NULL, vocabs, 2);
    mt_translator *tr = NULL;
    mt_translate_params tp = mt_translate_default_params();
    tp.beam_size = p->beam_size;
    tp.normalize = p->normalize;
    if (rc == MT_OK) rc = mt_translator_init(&ens, NULL, &tp, &tr);
    if (rc == MT_OK) {
        tr_job j = {.tr = tr, .src = src, .out = out, .n = n};
        pthread_mutex_init(&j.mu, NULL);
        app_blas_single_threaded();
        app_run_workers(p->threads > 0 ? p->threads : 1, tr_worker, &j);
        pthread_mutex_destroy(&j.mu);
        if (j.rc != MT_OK) rc = mt_seterr(j.rc, "%s", j.err);
    }
    mt_translator_free(tr);
    mt_ensemble_free(&ens);
    return rc;
}

mt_status app_tune_score(char *const *hyp, char *const *ref, int32_t n, app_tune_scores *s) {
    mt_bleu_stats b;
    mt_chrf_stats c;
    mt_ter_stats t;
    mt_bleu_init(&b);
    mt_chrf_init(&c);
    mt_ter_init(&t);
    mt_status rc = MT_OK;
    for (int32_t i = 0; i < n && rc == MT_OK; i++) {
        const char *refs[1] = {ref[i]};
        rc = mt_bleu_add(&b, hyp[i], refs, 1);
        if (rc == MT_OK) rc = mt_chrf_add(&c, hyp[i], refs, 1);
        if (rc == MT_OK) rc = mt_ter_add(&t, hyp[i], refs, 1);
    }
    if (rc != MT_OK) return rc;
    s->bleu = mt_bleu_compute(&b, false).score;
    s->chrf = mt_chrf_compute(&c);
    s->ter = mt_ter_compute(&t);
    return MT_OK;
}

mt_status app_tune_score_files(const char *model, const char *const *vocabs,
                               const app_tune_params *p, const char *src, const char *ref,
                               app_tune_scores *s) {
    line_pairs lp;
    memset(&lp, 0, sizeof lp);
    mt_status rc = sample_pairs(src, ref, INT32_MAX, 1, 1, &lp);
    char **out = rc == MT_OK ? mt_try_calloc((size_t)lp.n + 1, sizeof(char *)) : NULL;
    if (rc == MT_OK && out == NULL) rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    if (rc == MT_OK) rc = app_tune_translate(model, vocabs, p, lp.src, lp.n, out);
    if (rc == MT_OK) rc = app_tune_score(out, lp.trg, lp.n, s);
    for (int32_t i = 0; out && i < lp.n; i++)
        mt_free(out[i]);
    mt_free(out);
    line_pairs_free(&lp);
    return rc;
}

/* ------------------------------------------------------------- progress */

static void progress(const app_tune_params *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void progress(const app_tune_params *p, const char *fmt, ...) {
    if (p->progress_fd < 0) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if (k > (int)sizeof line - 2) k = (int)sizeof line - 2;
    line[k++] = '\n';
    for (int off = 0; off < k;) {
        ssize_t w = write(p->progress_fd, line + off, (size_t)(k - off));
        if (w <= 0 && errno != EINTR) return;
        if (w > 0) off += (int)w;
    }
}

static void say(const app_tune_params *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(const app_tune_params *p, const char *fmt, ...) {
    if (p->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("mtpe tune: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* --------------------------------------------------------- cancellation */

static volatile sig_atomic_t cancel_signal;
static void on_cancel(int sig) { cancel_signal = sig; }

/* ------------------------------------------------------------- training */

/* The defaults chosen from the data, measured with `mtpe bench tune` on the
** default model (tests/bench/PERFORMANCE.md): enough repetitions of the
** training pairs for about 20,000 of their target words (2 to 20
** repetitions), learning rate 1e-4 (Adam starts anew), dropout 0.1,
** batches of 1,000 target words, and the published model halfway between
** the base and the tuned weights (mix 0.5: as much gain on the rest of a
** document as the tuned model itself, without its loss on general text). */
static void choose(const app_tune_params *p, int64_t train_words, int32_t *epochs, double *lr) {
    *epochs = p->epochs;
    if (*epochs <= 0) {
        double e = 20000.0 / (double)(train_words > 0 ? train_words : 1);
        *epochs = e < 2 ? 2 : e > 20 ? 20 : (int32_t)lround(e);
    }
    *lr = p->learn_rate > 0 ? p->learn_rate : 1e-4;
}

/* The last "Up. N" of the training log. */
static int64_t last_update(const char *log) {
    FILE *f = fopen(log, "r");
    if (f == NULL) return 0;
    char buf[8192];
    if (fseek(f, -(long)sizeof buf + 1, SEEK_END) != 0) rewind(f);
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = '\0';
    int64_t up = 0;
    for (char *s = buf; (s = strstr(s, "Up. ")) != NULL; s += 4)
        up = strtoll(s + 4, NULL, 10);
    return up;
}

/* The last line of the log that says why training failed. */
static void last_error(const char *log, char *out, size_t cap) {
    snprintf(out, cap, "training failed (see %s)", log);
    FILE *f = fopen(log, "r");
    if (f == NULL) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "mtpe train: ", 12) == 0 || strstr(line, "[error]")) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(out, cap, "%s", line);
        }
    }
    fclose(f);
}

typedef struct train_job {
    const char *exe, *model, *log;
    const char *train[2];
    const char *vocabs[2];
    int32_t mini_batch_words;
    double lr, dropout;
    int32_t threads;
    uint64_t seed;
    const char *precision;
    int64_t total_updates; /* estimate, for the ETA */
} train_job;

static mt_status run_training(const app_tune_params *p, const train_job *j, app_tune_result *r) {
    char lr[32], mbw[32], thr[32], seed[32], drop[32];
    snprintf(drop, sizeof drop, "%g", j->dropout);
    snprintf(lr, sizeof lr, "%g", j->lr);
    snprintf(mbw, sizeof mbw, "%d", (int)j->mini_batch_words);
    snprintf(thr, sizeof thr, "%d", (int)(j->threads > 0 ? j->threads : 1));
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)(j->seed ? j->seed : 1));
    const char *argv[] = {j->exe,
                          "train",
                          "--model",
                          j->model,
                          "--train-sets",
                          j->train[0],
                          j->train[1],
                          "--vocabs",
                          j->vocabs[0],
                          j->vocabs[1],
                          "--after-epochs",
                          "1",
                          "--learn-rate",
                          lr,
                          "--lr-warmup",
                          "10",
                          "--optimizer-params",
                          "0.9",
                          "0.98",
                          "1e-9",
                          "--clip-norm",
                          "5",
                          "--label-smoothing",
                          "0.1",
                          "--cost-type",
                          "ce-mean-words",
                          "--transformer-dropout",
                          drop,
                          "--mini-batch-words",
                          mbw,
                          "--mini-batch",
                          "128",
                          "--maxi-batch",
                          "20",
                          "--max-length",
                          "100",
                          "--disp-freq",
                          "5",
                          "--save-freq",
                          "100000",
                          "--overwrite",
                          "--cpu-threads",
                          thr,
                          "--seed",
                          seed,
                          "--precision",
                          j->precision,
                          "--no-restore-corpus",
                          NULL};
    int fd = open(j->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return io_error("cannot write", j->log);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(fd);
        return mt_seterr(MT_ERR_IO, "cannot start training: %s", strerror(errno));
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
        dup2(fd, 1);
        dup2(fd, 2);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        signal(SIGINT, SIG_IGN); /* the parent forwards a cancel as SIGTERM */
        execv(j->exe, (char *const *)argv);
        dprintf(2, "mtpe train: cannot run %s: %s\n", j->exe, strerror(errno));
        _exit(127);
    }
    close(fd);
    double t0 = app_now();
    bool term_sent = false;
    int status = 0;
    int64_t shown = -1;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) break;
        double el = app_now() - t0;
        if (!term_sent && (cancel_signal || (p->max_seconds > 0 && el > p->max_seconds))) {
            kill(pid, SIGTERM);
            term_sent = true;
            r->stopped_by_time = !cancel_signal;
        }
        int64_t up = last_update(j->log);
        if (up != shown) {
            double eta = up > 0 ? el / (double)up * (double)(j->total_updates - up) : -1;
            if (eta < 0 && up > 0) eta = 0;
            progress(p, "progress train %lld %lld %.0f %.0f", (long long)up,
                     (long long)j->total_updates, el, eta);
            shown = up;
        }
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    r->train_seconds = app_now() - t0;
    r->updates = last_update(j->log);
    if (cancel_signal) return mt_seterr(MT_ABORTED, "cancelled");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char msg[1024];
        last_error(j->log, msg, sizeof msg);
        if (WIFSIGNALED(status))
            return mt_seterr(MT_ERR_IO, "training was killed by signal %d (see %s)",
                             WTERMSIG(status), j->log);
        return mt_seterr(MT_ERR_IO, "%s", msg);
    }
    return MT_OK;
}

/* out = base + alpha (tuned - base), weight by weight (float32 items of the
** same name and size; others as the tuned model has them). */
mt_status app_tune_mix(const char *base, const char *tuned, double alpha, const char *out) {
    mt_model_file *b = NULL, *t = NULL;
    mt_status rc = mt_model_file_read(base, &b);
    if (rc == MT_OK) rc = mt_model_file_read(tuned, &t);
    for (int i = 0; rc == MT_OK && i < t->n; i++) {
        mt_tensor *x = &t->tensors[i];
        const mt_tensor *y = mt_model_file_find(b, t->names[i]);
        if (x->dtype != MT_F32 || y == NULL || y->dtype != MT_F32 ||
            mt_tensor_numel(x) != mt_tensor_numel(y))
            continue;
        float *xv = x->data;
        const float *yv = y->data;
        int64_t n = mt_tensor_numel(x);
        float a = (float)alpha;
        for (int64_t k = 0; k < n; k++)
            xv[k] = yv[k] + a * (xv[k] - yv[k]);
    }
    if (rc == MT_OK) rc = mt_model_file_write(out, t);
    mt_model_file_free(b);
    mt_model_file_free(t);
    return rc;
}

/* ------------------------------------------------------------- recovery */

typedef struct stale_run {
    int64_t id;
    char *log;
} stale_run;

typedef struct stale_list {
    stale_run v[64];
    int n;
} stale_list;

static int find_running(void *user, const store_run *r) {
    stale_list *l = user;
    if (r->status == STORE_RUN_RUNNING && l->n < 64) {
        l->v[l->n].id = r->id;
        l->v[l->n].log = r->log_path ? mt_try_strdup(r->log_path) : NULL;
        l->n++;
    }
    return 0;
}

/* True when the run whose log is in dir is still held by its process. */
static bool lock_held(const char *dir) {
    char *lock = path_join(dir, "lock");
    if (lock == NULL) return true;
    int fd = open(lock, O_RDWR | O_CLOEXEC);
    mt_free(lock);
    if (fd < 0) return false;
    bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd); /* releases the lock taken here, if any */
    return held;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

mt_status app_tune_recover(store *s, int *n) {
    stale_list l;
    l.n = 0;
    mt_status rc = store_list_runs(s, find_running, &l);
    int k = 0;
    for (int i = 0; i < l.n; i++) {
        char dir[PATH_MAX];
        dir[0] = '\0';
        if (l.v[i].log) app_dir_of(l.v[i].log, dir, sizeof dir);
        if (rc == MT_OK && (dir[0] == '\0' || !lock_held(dir))) {
            rc = store_run_end(s, l.v[i].id, STORE_RUN_FAILED, 0,
                               "{\"error\": \"interrupted: the run's process ended before it "
                               "finished\"}");
            if (rc == MT_OK) k++;
            if (rc == MT_OK && dir[0] && ends_with(dir, TMP_SUFFIX)) remove_tree(dir);
        }
        mt_free(l.v[i].log);
    }
    if (n) *n = k;
    return rc;
}

void app_tune_clean_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d == NULL) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!ends_with(e->d_name, TMP_SUFFIX)) continue;
        char *path = path_join(dir, e->d_name);
        if (path && !lock_held(path)) remove_tree(path);
        mt_free(path);
    }
    closedir(d);
}

/* ---------------------------------------------------------------- report */

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v) {
    if (isfinite(v))
        fprintf(f, "%.2f", v);
    else
        fputs("null", f);
}

static void json_scores(FILE *f, const char *name, const app_tune_scores *s) {
    fprintf(f, "  \"%s\": {\"bleu\": ", name);
    json_num(f, s->bleu);
    fputs(", \"chrf\": ", f);
    json_num(f, s->chrf);
    fputs(", \"ter\": ", f);
    json_num(f, s->ter);
    fputs("},\n", f);
}

/* Closes a memstream f opened over *text and returns a copy of what it
** holds (NULL on failure). */
static char *memstream_text(FILE *f, char **text) {
    char *out = NULL;
    if (fclose(f) == 0 && *text) out = mt_try_strdup(*text); /* fclose sets *text */
    free(*text);
    return out;
}

/* tune.json: the metadata of the folder (also the run's metrics). */
static char *metadata_json(const app_tune_params *p, const app_tune_result *r, const char *dir) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL) return NULL;
    fputs("{\n  \"base_model\": ", f);
    json_str(f, p->model);
    fputs(",\n  \"model_dir\": ", f);
    json_str(f, dir);
    fputs(",\n  \"store\": ", f);
    json_str(f, p->db_path);
    fputs(",\n  \"document\": ", f);
    if (p->doc)
        json_str(f, p->doc);
    else
        fputs("null", f);
    fputs(",\n  \"replay\": ", f);
    if (p->replay[0]) {
        fputc('[', f);
        json_str(f, p->replay[0]);
        fputs(", ", f);
        json_str(f, p->replay[1]);
        fputc(']', f);
    } else {
        fputs("null", f);
    }
    fprintf(f,
            ",\n  \"segments\": %d,\n  \"train\": %d,\n  \"heldout\": %d,\n  \"replay_pairs\": "
            "%d,\n  \"dev\": %d,\n  \"epochs\": %d,\n  \"learn_rate\": %g,\n  \"updates\": "
            "%lld,\n  \"train_seconds\": %.1f,\n  \"stopped_by_time\": %s,\n",
            (int)r->n_segments, (int)r->n_train, (int)r->n_heldout, (int)r->n_replay, (int)r->n_dev,
            (int)r->epochs, r->learn_rate, (long long)r->updates, r->train_seconds,
            r->stopped_by_time ? "true" : "false");
    json_scores(f, "heldout_before", &r->heldout_before);
    json_scores(f, "heldout_after", &r->heldout_after);
    json_scores(f, "dev_before", &r->dev_before);
    json_scores(f, "dev_after", &r->dev_after);
    fprintf(f, "  \"dev_bound\": %g,\n  \"accepted\": %s,\n  \"verdict\": ", p->dev_bound,
            r->accepted ? "true" : "false");
    json_str(f, r->verdict);
    fputs("\n}\n", f);
    return memstream_text(f, &text);
}

static char *readme_text(const app_tune_params *p, const app_tune_result *r) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL) return NULL;
    fprintf(f,
            "# A model tuned by `mtpe tune`\n\n"
            "Base model: `%s`, continued on %d confirmed segments of the store `%s`"
            "%s%s%s (%d held out, never trained on), with %d replay pairs of general data; "
            "%d repetitions of the segments, learning rate %g, %lld updates in %.1f s.\n\n"
            "| | before | after |\n|---|---|---|\n"
            "| held-out BLEU | %.2f | %.2f |\n| held-out chrF | %.2f | %.2f |\n",
            p->model, (int)r->n_train, p->db_path, p->doc ? " (document " : "",
            p->doc ? p->doc : "", p->doc ? ")" : "", (int)r->n_heldout, (int)r->n_replay,
            (int)r->epochs, r->learn_rate, (long long)r->updates, r->train_seconds,
            r->heldout_before.bleu, r->heldout_after.bleu, r->heldout_before.chrf,
            r->heldout_after.chrf);
    if (r->n_dev > 0)
        fprintf(f, "| dev BLEU (%d lines) | %.2f | %.2f |\n| dev chrF | %.2f | %.2f |\n",
                (int)r->n_dev, r->dev_before.bleu, r->dev_after.bleu, r->dev_before.chrf,
                r->dev_after.chrf);
    fprintf(f,
            "\n%s: %s\n\nUse: `mtpe translate -c decoder.yml`, `mtpe edit -m model.npz`. "
            "tune.json holds the same in JSON; data/ the files trained and tested on; "
            "train.log the training log.\n",
            r->accepted ? "Accepted" : "Not accepted", r->verdict);
    return memstream_text(f, &text);
}

/* ------------------------------------------------------------------ run */

typedef struct tune_ctx {
    const app_tune_params *p;
    app_tune_result *r;
    store *st;
    pairs data;
    int32_t n_held;
    line_pairs replay, dev;
    char *tmp, *data_dir, *work_dir, *log;
    int lock_fd;
    mt_vocab *vsrc, *vtrg;
    char **held_src, **held_ref, **out_before, **out_after;
    char **dev_out_before, **dev_out_after;
} tune_ctx;

static void free_strings(char **v, int32_t n) {
    if (v == NULL) return;
    for (int32_t i = 0; i < n; i++)
        mt_free(v[i]);
    mt_free(v);
}

static char **alloc_strings(int32_t n) {
    return mt_try_calloc((size_t)(n > 0 ? n : 1), sizeof(char *));
}

/* Encodes a pair as the trainer's batches hold it (EOS on both sides). */
static mt_status pair_hash(const tune_ctx *c, const char *src, const char *trg, uint64_t *h) {
    int32_t *a = NULL, *b = NULL;
    int64_t na = 0, nb = 0;
    mt_status rc = mt_vocab_encode(c->vsrc, src, MT_VOCAB_ADD_EOS, &a, &na);
    if (rc == MT_OK) rc = mt_vocab_encode(c->vtrg, trg, MT_VOCAB_ADD_EOS, &b, &nb);
    if (rc == MT_OK) *h = mt_pair_hash(a, na, b, nb);
    mt_free(a);
    mt_free(b);
    return rc;
}

static int64_t count_tokens(const tune_ctx *c, const char *trg) {
    int32_t *ids = NULL;
    int64_t n = 0;
    if (mt_vocab_encode(c->vtrg, trg, MT_VOCAB_ADD_EOS, &ids, &n) != MT_OK) {
        mt_clearerr();
        n = 1;
    }
    mt_free(ids);
    return n;
}

static mt_status write_hashes(const tune_ctx *c, const char *name, int32_t from, int32_t to) {
    char *path = path_join(c->data_dir, name);
    if (path == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
    FILE *f = fopen(path, "w");
    mt_status rc = f ? MT_OK : io_error("cannot write", path);
    for (int32_t i = from; i < to && rc == MT_OK; i++) {
        uint64_t h = 0;
        rc = pair_hash(c, c->data.v[i].src, c->data.v[i].trg, &h);
        if (rc == MT_OK) fprintf(f, "%016llx\n", (unsigned long long)h);
    }
    if (f && (ferror(f) | (fclose(f) != 0)) && rc == MT_OK) rc = io_error("cannot write", path);
    mt_free(path);
    return rc;
}

static mt_status write_pair_files(const tune_ctx *c, const char *base, char **src, char **trg,
                                  int32_t n) {
    char *a = path_join(c->data_dir, base);
    char *sa = a ? str_cat(a, ".src") : NULL, *ta = a ? str_cat(a, ".trg") : NULL;
    mt_status rc = sa && ta ? MT_OK : mt_seterr(MT_ERR_NOMEM, "out of memory");
    if (rc == MT_OK) rc = write_lines(sa, src, n);
    if (rc == MT_OK) rc = write_lines(ta, trg, n);
    mt_free(a);
    mt_free(sa);
    mt_free(ta);
    return rc;
}

/* The training file: the training pairs `epochs` times and the replay
** sample, interleaved (the trainer shuffles them again). */
static mt_status write_train_files(tune_ctx *c, int32_t epochs, int64_t *tokens) {
    char *sp = path_join(c->data_dir, "train.src"), *tp = path_join(c->data_dir, "train.trg");
    FILE *fs = sp ? fopen(sp, "w") : NULL, *ft = tp ? fopen(tp, "w") : NULL;
    mt_status rc = fs && ft ? MT_OK : io_error("cannot write", sp ? sp : "train.src");
    int32_t n_train = c->data.n - c->n_held;
    int64_t per = n_train > 0 ? c->replay.n / (epochs > 0 ? epochs : 1) : 0;
    int32_t r = 0;
    int64_t pair_tokens = 0; /* of one repetition of the training pairs */
    for (int32_t i = c->n_held; i < c->data.n; i++)
        pair_tokens += count_tokens(c, c->data.v[i].trg);
    *tokens = (int64_t)epochs * pair_tokens;
    for (int32_t e = 0; e < epochs && rc == MT_OK; e++) {
        for (int32_t i = c->n_held; i < c->data.n; i++) {
            fprintf(fs, "%s\n", c->data.v[i].src);
            fprintf(ft, "%s\n", c->data.v[i].trg);
        }
        int32_t end = e == epochs - 1 ? c->replay.n : (int32_t)(r + per);
        for (; r < end && r < c->replay.n; r++) {
            fprintf(fs, "%s\n", c->replay.src[r]);
            fprintf(ft, "%s\n", c->replay.trg[r]);
            *tokens += count_tokens(c, c->replay.trg[r]);
        }
    }
    if (fs && (ferror(fs) | (fclose(fs) != 0)) && rc == MT_OK) rc = io_error("cannot write", sp);
    if (ft && (ferror(ft) | (fclose(ft) != 0)) && rc == MT_OK) rc = io_error("cannot write", tp);
    mt_free(sp);
    mt_free(tp);
    return rc;
}

static mt_status evaluate(tune_ctx *c, const char *model, char **held_out, char **dev_out,
                          app_tune_scores *held, app_tune_scores *dev, const char *stage) {
    const app_tune_params *p = c->p;
    progress(p, "progress %s 0 0 0 -1", stage);
    mt_status rc = app_tune_translate(model, p->vocabs, p, c->held_src, c->n_held, held_out);
    if (rc == MT_OK) rc = app_tune_score(held_out, c->held_ref, c->n_held, held);
    if (rc == MT_OK && c->dev.n > 0)
        rc = app_tune_translate(model, p->vocabs, p, c->dev.src, c->dev.n, dev_out);
    if (rc == MT_OK && c->dev.n > 0) rc = app_tune_score(dev_out, c->dev.trg, c->dev.n, dev);
    if (c->dev.n == 0) dev->bleu = dev->chrf = dev->ter = NAN;
    return rc;
}

static mt_status make_tmp(tune_ctx *c) {
    const app_tune_params *p = c->p;
    if (exists(p->out_dir))
        return mt_seterr(MT_ERR_INVALID, "%s exists (give a new folder with -o)", p->out_dir);
    c->tmp = str_cat(p->out_dir, TMP_SUFFIX);
    if (c->tmp == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
    if (exists(c->tmp)) {
        if (lock_held(c->tmp))
            return mt_seterr(MT_ERR_INVALID, "another tune is writing %s", c->tmp);
        remove_tree(c->tmp);
    }
    if (mkdir(c->tmp, 0755) != 0) return io_error("cannot make", c->tmp);
    char *lock = path_join(c->tmp, "lock");
    if (lock == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
    c->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    mt_status rc = MT_OK;
    if (c->lock_fd < 0 || flock(c->lock_fd, LOCK_EX | LOCK_NB) != 0)
        rc = io_error("cannot lock", lock);
    mt_free(lock);
    c->data_dir = path_join(c->tmp, "data");
    c->work_dir = path_join(c->tmp, "work");
    c->log = path_join(c->tmp, "train.log");
    if (rc == MT_OK && (!c->data_dir || !c->work_dir || !c->log))
        rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    if (rc == MT_OK && mkdir(c->data_dir, 0755) != 0) rc = io_error("cannot make", c->data_dir);
    if (rc == MT_OK && mkdir(c->work_dir, 0755) != 0) rc = io_error("cannot make", c->work_dir);
    return rc;
}

/* Moves the tuned model into the folder, writes its files, renames it. */
static mt_status publish(tune_ctx *c, const char *trained) {
    const app_tune_params *p = c->p;
    app_tune_result *r = c->r;
    char *model = path_join(c->tmp, "model.npz");
    char *vs = path_join(c->tmp, "vocab.src.spm"), *vt = path_join(c->tmp, "vocab.trg.spm");
    char *dec = path_join(c->tmp, "decoder.yml"), *js = path_join(c->tmp, "tune.json");
    char *rd = path_join(c->tmp, "README.md");
    mt_status rc =
        model && vs && vt && dec && js && rd ? MT_OK : mt_seterr(MT_ERR_NOMEM, "out of memory");
    bool same_vocab = strcmp(p->vocabs[0], p->vocabs[1]) == 0;
    if (same_vocab && vs) snprintf(vs + strlen(vs) - strlen("vocab.src.spm"), 14, "vocab.spm");
    if (rc == MT_OK && rename(trained, model) != 0) rc = io_error("cannot move", trained);
    if (rc == MT_OK) rc = copy_file(p->vocabs[0], vs);
    if (rc == MT_OK && !same_vocab) rc = copy_file(p->vocabs[1], vt);
    if (rc == MT_OK) {
        char text[1024];
        snprintf(text, sizeof text,
                 "# written by mtpe tune: `mtpe translate -c decoder.yml`\n"
                 "relative-paths: true\nmodels:\n  - model.npz\nvocabs:\n  - %s\n  - %s\n"
                 "beam-size: %d\nnormalize: %g\nword-penalty: 0\nmini-batch: 32\n"
                 "maxi-batch: 100\nmaxi-batch-sort: src\n",
                 same_vocab ? "vocab.spm" : "vocab.src.spm",
                 same_vocab ? "vocab.spm" : "vocab.trg.spm", (int)p->beam_size,
                 (double)p->normalize);
        rc = write_text(dec, text);
    }
    char *meta = rc == MT_OK ? metadata_json(p, r, p->out_dir) : NULL;
    char *readme = rc == MT_OK ? readme_text(p, r) : NULL;
    if (rc == MT_OK && (!meta || !readme)) rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    if (rc == MT_OK) rc = write_text(js, meta);
    if (rc == MT_OK) rc = write_text(rd, readme);
    if (rc == MT_OK) remove_tree(c->work_dir);
    if (rc == MT_OK) {
        sync_dir(c->tmp);
        if (rename(c->tmp, p->out_dir) != 0) rc = io_error("cannot rename to", p->out_dir);
    }
    if (rc == MT_OK) {
        char parent[PATH_MAX];
        app_dir_of(p->out_dir, parent, sizeof parent);
        sync_dir(parent);
    }
    mt_free(meta);
    mt_free(readme);
    mt_free(model);
    mt_free(vs);
    mt_free(vt);
    mt_free(dec);
    mt_free(js);
    mt_free(rd);
    return rc;
}

static const char *default_precision(void) {
    return strstr(mt_cpu_gemm_bf16_name(), "bf16") ? "bfloat16" : "float32";
}

static mt_status self_exe(char *buf, size_t cap) {
    ssize_t k = readlink("/proc/self/exe", buf, cap - 1);
    if (k <= 0) return mt_seterr(MT_ERR_IO, "cannot find the mtpe binary: %s", strerror(errno));
    buf[k] = '\0';
    return MT_OK;
}

static mt_status tune_body(tune_ctx *c) {
    const app_tune_params *p = c->p;
    app_tune_result *r = c->r;
    double t0 = app_now();
    collect_ctx cc = {&c->data, p->doc, 0, MT_OK};
    mt_status rc = store_list_confirmed(c->st, 0, p->since_ms, collect_one, &cc);
    if (rc == MT_OK) rc = cc.rc;
    if (rc != MT_OK) return rc;
    pairs_dedup(&c->data);
    r->n_segments = c->data.n;
    if (c->data.n < p->min_segments)
        return mt_seterr(MT_ERR_INVALID,
                         "%d confirmed segment%s%s%s in %s; tuning needs at least %d (confirm "
                         "more, or import a translation memory)",
                         (int)c->data.n, c->data.n == 1 ? "" : "s", p->doc ? " of " : "",
                         p->doc ? p->doc : "", p->db_path, (int)p->min_segments);
    c->n_held = heldout_split(&c->data, p->heldout_frac);
    r->n_heldout = c->n_held;
    r->n_train = c->data.n - c->n_held;
    rc = mt_vocab_load(p->vocabs[0], 0, &c->vsrc);
    if (rc == MT_OK) rc = mt_vocab_load(p->vocabs[1], 0, &c->vtrg);
    if (rc != MT_OK) return rc;

    /* general data: replay sample and dev sample */
    int64_t train_words = 0;
    for (int32_t i = c->n_held; i < c->data.n; i++)
        train_words += store_count_words(c->data.v[i].trg);
    choose(p, train_words, &r->epochs, &r->learn_rate);
    int32_t n_replay = (int32_t)lround(p->replay_ratio * r->n_train * r->epochs);
    if (p->replay[0] && n_replay > 0) {
        rc = sample_pairs(p->replay[0], p->replay[1], n_replay, 0, p->seed, &c->replay);
        if (rc != MT_OK) return rc;
    }
    r->n_replay = c->replay.n;
    if (p->dev[0] && p->dev_size > 0) {
        int64_t lines = count_lines(p->dev[0]);
        if (lines < 0) return io_error("cannot read", p->dev[0]);
        int64_t every = lines > p->dev_size ? lines / p->dev_size : 1;
        rc = sample_pairs(p->dev[0], p->dev[1], p->dev_size, every, p->seed, &c->dev);
        if (rc != MT_OK) return rc;
    }
    r->n_dev = c->dev.n;

    /* the folder, the run record */
    rc = make_tmp(c);
    if (rc != MT_OK) return rc;
    int64_t base_id = 0;
    char base_dir[PATH_MAX];
    app_dir_of(p->model, base_dir, sizeof base_dir);
    const char *bslash = strrchr(base_dir, '/');
    rc = store_add_model(c->st, p->model, bslash ? bslash + 1 : base_dir, "transformer", &base_id);
    if (rc == MT_OK)
        rc = store_run_begin(c->st, base_id, c->data.n, cc.until_ms, c->log, &r->run_id);
    if (rc != MT_OK) return rc;
    say(p, "%d segments: %d to train on, %d held out; %d replay pairs, %d dev lines; run %lld",
        (int)c->data.n, (int)r->n_train, (int)c->n_held, (int)c->replay.n, (int)c->dev.n,
        (long long)r->run_id);

    /* data files */
    c->held_src = alloc_strings(c->n_held);
    c->held_ref = alloc_strings(c->n_held);
    c->out_before = alloc_strings(c->n_held);
    c->out_after = alloc_strings(c->n_held);
    c->dev_out_before = alloc_strings(c->dev.n);
    c->dev_out_after = alloc_strings(c->dev.n);
    if (!c->held_src || !c->held_ref || !c->out_before || !c->out_after || !c->dev_out_before ||
        !c->dev_out_after)
        return mt_seterr(MT_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < c->n_held; i++) {
        c->held_src[i] = mt_try_strdup(c->data.v[i].src);
        c->held_ref[i] = mt_try_strdup(c->data.v[i].trg);
        if (!c->held_src[i] || !c->held_ref[i]) return mt_seterr(MT_ERR_NOMEM, "out of memory");
    }
    rc = write_pair_files(c, "heldout", c->held_src, c->held_ref, c->n_held);
    if (rc == MT_OK) rc = write_hashes(c, "heldout.hashes", 0, c->n_held);
    if (rc == MT_OK) rc = write_hashes(c, "adapt.hashes", c->n_held, c->data.n);
    if (rc == MT_OK && c->dev.n > 0)
        rc = write_pair_files(c, "dev", c->dev.src, c->dev.trg, c->dev.n);
    int64_t tokens = 0;
    if (rc == MT_OK) rc = write_train_files(c, r->epochs, &tokens);
    if (rc != MT_OK) return rc;

    /* before */
    rc = evaluate(c, p->model, c->out_before, c->dev_out_before, &r->heldout_before, &r->dev_before,
                  "before");
    if (rc == MT_OK && cancel_signal) rc = mt_seterr(MT_ABORTED, "cancelled");
    if (rc != MT_OK) return rc;

    /* training */
    char exe[PATH_MAX];
    rc = self_exe(exe, sizeof exe);
    char *work_model = rc == MT_OK ? path_join(c->work_dir, "model.npz") : NULL;
    char *ts = path_join(c->data_dir, "train.src"), *tt = path_join(c->data_dir, "train.trg");
    if (rc == MT_OK && (!work_model || !ts || !tt)) rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    if (rc == MT_OK) rc = copy_file(p->model, work_model);
    int32_t mbw = p->batch_words > 0 ? p->batch_words : 1000;
    train_job j = {.exe = exe,
                   .model = work_model,
                   .log = c->log,
                   .train = {ts, tt},
                   .vocabs = {p->vocabs[0], p->vocabs[1]},
                   .mini_batch_words = mbw,
                   .lr = r->learn_rate,
                   .dropout = p->dropout,
                   .threads = p->threads,
                   .seed = p->seed,
                   .precision = p->precision ? p->precision : default_precision(),
                   .total_updates = tokens / mbw + 1};
    if (rc == MT_OK) {
        say(p, "training: %d repetitions, learning rate %g, about %lld updates (%s)",
            (int)r->epochs, r->learn_rate, (long long)j.total_updates, j.precision);
        rc = run_training(p, &j, r);
    }
    mt_free(ts);
    mt_free(tt);
    if (rc == MT_OK && cancel_signal) rc = mt_seterr(MT_ABORTED, "cancelled");

    /* after: the tuned model and its mixes with the base (app_tune_mix), the
    ** best held-out BLEU among those whose dev loss is within the bound */
    char *mix = path_join(c->work_dir, "mix.npz"), *best = path_join(c->work_dir, "best.npz");
    char *hold_after = path_join(c->data_dir, "heldout.after");
    if (rc == MT_OK && (!mix || !best || !hold_after))
        rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    bool have = false, have_ok = false;
    for (int k = 0; k < p->n_mix && rc == MT_OK; k++) {
        double a = p->mix[k];
        const char *m = a == 1.0 ? work_model : mix;
        if (a != 1.0) rc = app_tune_mix(p->model, work_model, a, mix);
        app_tune_scores h, d;
        free_strings(c->out_after, c->n_held);
        free_strings(c->dev_out_after, c->dev.n);
        c->out_after = alloc_strings(c->n_held);
        c->dev_out_after = alloc_strings(c->dev.n);
        if (rc == MT_OK && (!c->out_after || !c->dev_out_after))
            rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
        if (rc == MT_OK) rc = evaluate(c, m, c->out_after, c->dev_out_after, &h, &d, "after");
        if (rc == MT_OK && cancel_signal) rc = mt_seterr(MT_ABORTED, "cancelled");
        if (rc != MT_OK) break;
        bool ok = c->dev.n == 0 || r->dev_before.bleu - d.bleu <= p->dev_bound;
        if (k < 8) {
            r->mix_alpha[k] = a, r->mix_heldout[k] = h, r->mix_dev[k] = d;
            r->n_mix = k + 1;
        }
        if (!have || (ok && !have_ok) || (ok == have_ok && h.bleu > r->heldout_after.bleu)) {
            have = true, have_ok = ok;
            r->alpha = a;
            r->heldout_after = h, r->dev_after = d;
            rc = write_lines(hold_after, c->out_after, c->n_held);
            if (rc == MT_OK && rename(m, best) != 0) rc = io_error("cannot rename", m);
            if (rc == MT_OK && a == 1.0 && k + 1 < p->n_mix) rc = copy_file(best, work_model);
        }
    }
    if (rc == MT_OK) {
        double gain = r->heldout_after.bleu - r->heldout_before.bleu;
        double loss = c->dev.n ? r->dev_before.bleu - r->dev_after.bleu : 0;
        r->accepted = gain > 0 && loss <= p->dev_bound;
        if (gain <= 0)
            snprintf(r->verdict, sizeof r->verdict, "the held-out BLEU did not improve (%+.2f)",
                     gain);
        else if (loss > p->dev_bound)
            snprintf(r->verdict, sizeof r->verdict,
                     "held-out BLEU %+.2f, but the dev BLEU fell by %.2f (more than %g)", gain,
                     loss, p->dev_bound);
        else if (c->dev.n)
            snprintf(r->verdict, sizeof r->verdict, "held-out BLEU %+.2f, dev BLEU %+.2f", gain,
                     -loss);
        else
            snprintf(r->verdict, sizeof r->verdict, "held-out BLEU %+.2f (no dev set)", gain);
        r->seconds = app_now() - t0;
        char *hb = path_join(c->data_dir, "heldout.before");
        rc = hb ? write_lines(hb, c->out_before, c->n_held)
                : mt_seterr(MT_ERR_NOMEM, "out of memory");
        mt_free(hb);
    }
    if (rc == MT_OK) rc = publish(c, best);
    mt_free(mix);
    mt_free(best);
    mt_free(hold_after);
    mt_free(work_model);
    return rc;
}

mt_status app_tune_run(const app_tune_params *p, app_tune_result *r) {
    memset(r, 0, sizeof *r);
    r->heldout_before.ter = r->heldout_after.ter = r->dev_before.ter = r->dev_after.ter = NAN;
    tune_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p, c.r = r, c.lock_fd = -1;
    cancel_signal = 0;
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_cancel;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    mt_status rc = store_open(p->db_path, &c.st);
    if (rc == MT_OK) rc = app_tune_recover(c.st, NULL);
    if (rc == MT_OK) rc = tune_body(&c);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", rc == MT_OK ? "" : mt_errmsg());
    if (c.st && r->run_id) {
        mt_status rc2;
        if (rc == MT_OK) {
            char *model = path_join(p->out_dir, "model.npz");
            const char *slash = strrchr(p->out_dir, '/');
            int64_t out_id = 0;
            rc2 = model ? store_add_model(c.st, model, slash ? slash + 1 : p->out_dir,
                                          "transformer", &out_id)
                        : mt_seterr(MT_ERR_NOMEM, "out of memory");
            char *meta = rc2 == MT_OK ? metadata_json(p, r, p->out_dir) : NULL;
            if (rc2 == MT_OK) rc2 = store_run_end(c.st, r->run_id, STORE_RUN_DONE, out_id, meta);
            mt_free(meta);
            mt_free(model);
        } else {
            char json[1400];
            char *t = NULL;
            size_t len = 0;
            FILE *f = open_memstream(&t, &len);
            if (f) {
                fputs("{\"error\": ", f);
                json_str(f, msg);
                fputs("}", f);
                fclose(f);
            }
            snprintf(json, sizeof json, "%s", t ? t : "{}");
            free(t);
            rc2 = store_run_end(c.st, r->run_id,
                                rc == MT_ABORTED ? STORE_RUN_CANCELLED : STORE_RUN_FAILED, 0, json);
        }
        if (rc == MT_OK && rc2 != MT_OK) {
            rc = rc2;
            snprintf(msg, sizeof msg, "%s", mt_errmsg());
        }
    }
    if (rc != MT_OK && c.tmp) remove_tree(c.tmp);
    if (rc == MT_OK) {
        char db[32] = "-", da[32] = "-";
        if (r->n_dev > 0) {
            snprintf(db, sizeof db, "%.2f", r->dev_before.bleu);
            snprintf(da, sizeof da, "%.2f", r->dev_after.bleu);
        }
        progress(p, "done %s %s %.2f %.2f %s %s", r->accepted ? "accepted" : "rejected", p->out_dir,
                 r->heldout_before.bleu, r->heldout_after.bleu, db, da);
    } else {
        progress(p, "failed %s", msg);
    }
    if (c.lock_fd >= 0) close(c.lock_fd);
    store_close(c.st);
    pairs_free(&c.data);
    line_pairs_free(&c.replay);
    line_pairs_free(&c.dev);
    free_strings(c.held_src, c.n_held);
    free_strings(c.held_ref, c.n_held);
    free_strings(c.out_before, c.n_held);
    free_strings(c.out_after, c.n_held);
    free_strings(c.dev_out_before, r->n_dev);
    free_strings(c.dev_out_after, r->n_dev);
    mt_vocab_free(c.vsrc);
    mt_vocab_free(c.vtrg);
    mt_free(c.tmp);
    mt_free(c.data_dir);
    mt_free(c.work_dir);
    mt_free(c.log);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (rc != MT_OK) return mt_seterr(rc, "%s", msg);
    return MT_OK;
}
