/*
** bench_tm.c: `mtpe bench tm [--large] [--queries N] [--data DIR]`
**
** Translation memory lookup latency (store_tm_lookup, min 75, 10 matches)
** on synthetic memories made of the first N pairs of the training corpus
** (DIR/train.{en,de}, default ../shared/data/en-de beside the source tree):
** N = 10,000 and 100,000, and with --large 1,000,000 (capped at the pairs
** the corpus has, which is said).  Each memory is imported into a new store
** in a temporary directory (the build time is reported, index included),
** then looked up with two query sets: held-out sentences (DIR/test.en, not
** in the training data: mostly fuzzy matches or none) and near-duplicates of
** memory sentences (one word replaced by another, or a number changed, or
** the case of the first letter changed).  Printed per size and set: median
** and 95th percentile in ms, and how many queries got a match.  Target:
** under 20 ms at 1M.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "doc.h"
#include "options.h"
#include "store.h"
#include "store_tm.h"

static const app_opt bench_opts[] = {
    {"large", 0, APP_OPT_FLAG, NULL, NULL, "also the 1,000,000-segment memory (minutes to build)"},
    {"queries", 0, APP_OPT_INT, "200", NULL, "queries per set", "1..100000"},
    {"data", 0, APP_OPT_STRING, NULL, NULL,
     "directory with train.en, train.de, test.en (default: ../shared/data/en-de)"},
    {"sizes", 0, APP_OPT_INTS, NULL, NULL, "memory sizes instead of 10000 100000 [1000000]", "1.."},
};

const app_cmd app_bench_tm_cmd = {
    .name = "bench tm",
    .usage = "[--large] [--queries N] [--data DIR]",
    .about = "Translation memory lookup latency at 10k, 100k (and with --large 1M) segments\n"
             "built from the training corpus: median and 95th percentile in ms.\n",
    .opts = bench_opts,
    .n_opts = (int)(sizeof bench_opts / sizeof bench_opts[0]),
};

typedef struct lines {
    char *data;
    char **v;
    int64_t n;
} lines;

static mt_status read_lines(const char *path, int64_t max, lines *out) {
    size_t len = 0;
    memset(out, 0, sizeof *out);
    mt_status rc = app_doc_read_file(path, &out->data, &len);
    if (rc != MT_OK) return rc;
    int64_t cap = 0;
    for (size_t i = 0; i < len; i++)
        cap += out->data[i] == '\n';
    cap++;
    if (max > 0 && cap > max) cap = max;
    out->v = mt_try_malloc(sizeof(char *) * (size_t)cap);
    if (out->v == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory reading %s", path);
    char *p = out->data;
    while (*p && out->n < cap) {
        char *e = strchr(p, '\n');
        if (e) *e = '\0';
        out->v[out->n++] = p;
        if (!e) break;
        p = e + 1;
    }
    return MT_OK;
}

static void free_lines(lines *l) {
    mt_free(l->data);
    mt_free(l->v);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A near-duplicate of s: one word replaced by `word`, a digit changed, or
** the first letter's case flipped (by turns). */
static char *near_dup(const char *s, const char *word, int kind) {
    size_t n = strlen(s);
    char *out = mt_try_malloc(n + strlen(word) + 4);
    if (out == NULL) return NULL;
    memcpy(out, s, n + 1);
    const char *dig = strpbrk(out, "0123456789");
    if (kind == 1 && dig) {
        out[dig - out] = out[dig - out] == '9' ? '1' : (char)(out[dig - out] + 1);
        return out;
    }
    if (kind == 2 && ((out[0] >= 'a' && out[0] <= 'z') || (out[0] >= 'A' && out[0] <= 'Z'))) {
        out[0] ^= 0x20;
        return out;
    }
    /* replace the last space-separated word */
    char *sp = strrchr(out, ' ');
    if (sp == NULL) {
        snprintf(out, n + strlen(word) + 4, "%s %s", s, word);
        return out;
    }
    snprintf(sp + 1, strlen(word) + 2, "%s", word);
    return out;
}

static int count_match(void *user, const store_tm_match *m) {
    (*(int *)user)++;
    return 0;
}

typedef struct qset {
    const char *name;
    char **q;
    int n;
} qset;

static mt_status run_set(store *s, const qset *qs, double *ms, int *found) {
    *found = 0;
    for (int i = 0; i < qs->n; i++) {
        store_tm_query q = {.source = qs->q[i], .min_score = 75, .max_results = 10};
        int n = 0;
        double t0 = now_ms();
        mt_status rc = store_tm_lookup(s, &q, count_match, &n);
        ms[i] = now_ms() - t0;
        if (rc != MT_OK) return rc;
        if (n > 0) (*found)++;
    }
    qsort(ms, (size_t)qs->n, sizeof *ms, cmp_double);
    return MT_OK;
}

static int64_t no_clock(void *user) { return 1700000000000; }

int app_bench_tm_main(int argc, char **argv) {
    const app_cmd *cmd = &app_bench_tm_cmd;
    app_opts *o = NULL;
    int ret = 1;
    if (!app_opts_parse_cmd(cmd, argc, argv, &o, &ret)) return ret;
    ret = 1;
    char dir[4096], src_path[4200], trg_path[4200], test_path[4200], tmpl[256];
    if (app_opts_given(o, "data"))
        snprintf(dir, sizeof dir, "%s", app_opts_str(o, "data"));
    else
        snprintf(dir, sizeof dir, "%s/../shared/data/en-de", MT_SOURCE_DIR);
    snprintf(src_path, sizeof src_path, "%s/train.en", dir);
    snprintf(trg_path, sizeof trg_path, "%s/train.de", dir);
    snprintf(test_path, sizeof test_path, "%s/test.en", dir);
    int64_t sizes[8] = {10000, 100000, 1000000};
    int n_sizes = app_opts_flag(o, "large") ? 3 : 2;
    if (app_opts_given(o, "sizes")) {
        n_sizes = app_opts_count(o, "sizes") > 8 ? 8 : app_opts_count(o, "sizes");
        for (int i = 0; i < n_sizes; i++)
            sizes[i] = app_opts_int_item(o, "sizes", i);
    }
    int64_t max_size = 0;
    for (int i = 0; i < n_sizes; i++)
        if (sizes[i] > max_size) max_size = sizes[i];
    int n_q = (int)app_opts_int(o, "queries");
    lines src = {0}, trg = {0}, test = {0};
    char **near = NULL;
    double *ms = NULL;
    store_segment_in *segs = NULL;
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpl, sizeof tmpl, "%s/mtpe-bench-tm-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    bool made_dir = false;

    mt_status rc = read_lines(src_path, max_size, &src);
    if (rc == MT_OK) rc = read_lines(trg_path, max_size, &trg);
    if (rc == MT_OK) rc = read_lines(test_path, n_q, &test);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe bench tm: %s\n", mt_errmsg());
        goto done;
    }
    int64_t have = src.n < trg.n ? src.n : trg.n;
    segs = mt_try_calloc((size_t)have + 1, sizeof *segs);
    near = mt_try_calloc((size_t)n_q, sizeof *near);
    ms = mt_try_malloc(sizeof *ms * (size_t)n_q);
    if (!segs || !near || !ms) {
        fprintf(stderr, "mtpe bench tm: out of memory\n");
        goto done;
    }
    int64_t n_segs = 0;
    for (int64_t i = 0; i < have; i++) {
        if (src.v[i][0] == '\0' || trg.v[i][0] == '\0') continue;
        segs[n_segs++] = (store_segment_in){
            .source = src.v[i], .target = trg.v[i], .status = STORE_SEG_CONFIRMED};
    }
    if (mkdtemp(tmpl) == NULL) {
        fprintf(stderr, "mtpe bench tm: cannot make a temporary directory %s\n", tmpl);
        goto done;
    }
    made_dir = true;
    printf("tm lookup benchmark: min score 75, 10 matches, %d queries per set\n", n_q);
    printf("corpus: %s (%lld usable pairs)\n", dir, (long long)n_segs);
    printf("%10s %9s %8s  %-10s %8s %8s %8s\n", "segments", "build s", "MB", "queries", "median",
           "p95 ms", "found");
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (int si = 0; si < n_sizes; si++) {
        int64_t n = sizes[si] < n_segs ? sizes[si] : n_segs;
        if (n < sizes[si])
            printf("(size %lld capped at %lld: the corpus has no more pairs)\n",
                   (long long)sizes[si], (long long)n);
        char db[512];
        snprintf(db, sizeof db, "%s/tm-%lld.db", tmpl, (long long)n);
        store *s = NULL;
        rc = store_open(db, &s);
        if (rc != MT_OK) break;
        store_set_clock(s, no_clock, NULL);
        store_doc_info info = {"bench-train.tsv", STORE_FORMAT_TSV, "en", "de", db};
        int64_t doc = 0;
        bool already = false;
        double t0 = now_ms();
        rc = store_tm_import(s, &info, segs, (int32_t)n, &doc, &already);
        double build_s = (now_ms() - t0) / 1e3;
        if (rc != MT_OK) {
            store_close(s);
            break;
        }
        /* near-duplicates of memory sentences of more than three words */
        int made = 0;
        for (int tries = 0; made < n_q && tries < n_q * 50; tries++) {
            const char *base = segs[rng_next(&seed) % (uint64_t)n].source;
            int spaces = 0;
            for (const char *p = base; *p; p++)
                spaces += *p == ' ';
            if (spaces < 3) continue;
            const char *w = segs[rng_next(&seed) % (uint64_t)n].source;
            char word[32];
            size_t wl = strcspn(w, " ");
            if (wl == 0 || wl >= sizeof word) continue;
            memcpy(word, w, wl);
            word[wl] = '\0';
            mt_free(near[made]);
            near[made] = near_dup(base, word, made % 3);
            if (near[made] == NULL) break;
            made++;
        }
        FILE *f = fopen(db, "rb");
        double mb = 0;
        if (f) {
            fseek(f, 0, SEEK_END);
            mb = (double)ftell(f) / 1e6;
            fclose(f);
        }
        char wal[600];
        snprintf(wal, sizeof wal, "%s-wal", db);
        f = fopen(wal, "rb");
        if (f) {
            fseek(f, 0, SEEK_END);
            mb += (double)ftell(f) / 1e6;
            fclose(f);
        }
        qset sets[2] = {{"held-out", test.v, (int)(test.n < n_q ? test.n : n_q)},
                        {"near-dup", near, made}};
        for (int k = 0; k < 2 && rc == MT_OK; k++) {
            if (sets[k].n == 0) continue;
            int found = 0;
            /* warm up the page cache with the first queries */
            for (int w = 0; w < 3 && w < sets[k].n; w++) {
                int c = 0;
                store_tm_query q = {.source = sets[k].q[w], .min_score = 75, .max_results = 10};
                rc = store_tm_lookup(s, &q, count_match, &c);
            }
            if (rc == MT_OK) rc = run_set(s, &sets[k], ms, &found);
            if (rc != MT_OK) break;
            int cnt = sets[k].n;
            printf("%10lld %9.1f %8.0f  %-10s %8.2f %8.2f %4d/%-4d\n", (long long)n, build_s, mb,
                   sets[k].name, ms[cnt / 2], ms[(int)((cnt - 1) * 0.95 + 0.5)], found, cnt);
        }
        fflush(stdout);
        store_close(s);
        char side[600];
        unlink(db);
        snprintf(side, sizeof side, "%s-wal", db);
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", db);
        unlink(side);
        if (rc != MT_OK) break;
    }
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe bench tm: %s\n", mt_errmsg());
        goto done;
    }
    if (n_sizes < 3 && !app_opts_given(o, "sizes"))
        printf("(--large adds the 1,000,000-segment memory)\n");
    ret = 0;
done:
    if (made_dir) rmdir(tmpl);
    for (int i = 0; near && i < n_q; i++)
        mt_free(near[i]);
    mt_free(near);
    mt_free(ms);
    mt_free(segs);
    free_lines(&src);
    free_lines(&trg);
    free_lines(&test);
    app_opts_free(o);
    return ret;
}
