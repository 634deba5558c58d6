/*
** bench_tune.c: `mtpe bench tune [PO...]`, what tuning on a translator's
** segments gains.
**
** For each PO file (default: the translated catalogues of the test split's
** packages, PKG.orig.po in the cache of scripts/fetch-po-corpus.sh, those
** with at least --min-messages translated singular messages): the messages
** in file order, the first half confirmed in a new store (as a translator
** would have confirmed them), `mtpe tune` on them (app_tune_run, defaults
** unless options say otherwise), then the second half translated by the
** base and the tuned model.  Printed per file: messages, the tune's wall
** time, held-out, second-half and general dev BLEU before and after (chrF
** of the second half too), and whether tune accepted the model; then the
** means.  Accelerator markers are removed from both sides first (as the
** training corpus did; --keep-accelerators keeps them), so that the gain
** is not the model learning where "_" goes.
**
** Targets (issue 31): mean second-half gain >= +3 BLEU, general dev loss
** <= 0.5 BLEU, each tune <= 60 s on the 2-core machine.
*/
#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "common.h"
#include "corpus_io.h"
#include "doc.h"
#include "options.h"
#include "store.h"
#include "tune.h"

static const app_opt bench_opts[] = {
    {"models", 'm', APP_OPT_STRINGS, NULL, NULL, "base model (default: the installed en-de)"},
    {"vocabs", 'v', APP_OPT_STRINGS, NULL, NULL, "source and target vocabularies"},
    {"corpus-dir", 0, APP_OPT_STRING, NULL, NULL,
     "folder of PKG.orig.po files (default: the cache of scripts/fetch-po-corpus.sh)"},
    {"packages", 0, APP_OPT_STRING, NULL, NULL,
     "list of packages to take (default: ../shared/data/en-de/packages-test.txt)"},
    {"min-messages", 0, APP_OPT_INT, "150", NULL, "skip files with fewer messages", "2.."},
    {"replay", 0, APP_OPT_STRINGS, NULL, NULL, "replay data SRC TRG (default: the recipe)"},
    {"dev", 0, APP_OPT_STRINGS, NULL, NULL, "dev data SRC TRG (default: the recipe)"},
    {"learn-rate", 'l', APP_OPT_FLOAT, "0", NULL, "tune's learning rate (0: its default)", "0..1"},
    {"epochs", 'e', APP_OPT_INT, "0", NULL, "tune's repetitions (0: its default)", "0..1000"},
    {"replay-ratio", 0, APP_OPT_FLOAT, "1", NULL, "tune's replay ratio", "0..100"},
    {"precision", 0, APP_OPT_STRING, "auto", NULL, "tune's precision", "auto|float32|bfloat16"},
    {"batch-words", 0, APP_OPT_INT, "1000", NULL, "tune's mini-batch words", "50..100000"},
    {"dropout", 0, APP_OPT_FLOAT, "0.1", NULL, "tune's dropout", "0..0.9"},
    {"max-seconds", 0, APP_OPT_FLOAT, "45", NULL, "tune's time limit", "0..1e7"},
    {"mix", 0, APP_OPT_FLOATS, "0.5", NULL,
     "weight of the tuned model in the published base + w (tuned - base); several: the one "
     "with the best held-out BLEU whose dev loss is within --dev-bound",
     "0..1"},
    {"cpu-threads", 0, APP_OPT_INT, "2", NULL, "threads", "1..256"},
    {"keep-accelerators", 0, APP_OPT_FLAG, NULL, NULL, "keep accelerator markers (_File)"},
    {"mix-report", 0, APP_OPT_FLOATS, NULL, NULL,
     "also score mixes base + a (tuned - base) of the chosen model for these a", "0..1"},
    {"keep", 0, APP_OPT_STRING, NULL, NULL, "keep the stores and models in this folder"},
};

const app_cmd app_bench_tune_cmd = {
    .name = "bench tune",
    .usage = "[PO...] [options]",
    .about = "Tunes on the first half of each PO file and translates the second half with\n"
             "the base and the tuned model: BLEU before and after, and the tune's time.\n",
    .opts = bench_opts,
    .n_opts = (int)(sizeof bench_opts / sizeof bench_opts[0]),
    .args = "PO...",
    .min_args = 0,
    .max_args = -1,
};

typedef struct msgs {
    char **src, **trg;
    int32_t n;
} msgs;

static void msgs_free(msgs *m) {
    for (int32_t i = 0; i < m->n; i++) {
        mt_free(m->src[i]);
        mt_free(m->trg[i]);
    }
    mt_free(m->src);
    mt_free(m->trg);
    memset(m, 0, sizeof *m);
}

/* The translated singular messages of a PO file, flattened. */
static mt_status read_po(const char *path, bool strip, msgs *m) {
    app_doc *d = NULL;
    mt_status rc = app_doc_open(path, APP_DOC_FORMAT_PO, &d);
    if (rc != MT_OK) return rc;
    int64_t n = app_doc_count(d);
    m->src = mt_try_calloc((size_t)n + 1, sizeof(char *));
    m->trg = mt_try_calloc((size_t)n + 1, sizeof(char *));
    if (!m->src || !m->trg) rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n && rc == MT_OK; i++) {
        const app_doc_segment *g = app_doc_segment_at(d, i);
        if (g->n_targets != 1 || g->state != APP_DOC_STATE_CONFIRMED || !g->source[0] ||
            !g->targets[0][0])
            continue;
        char *a = mt_try_strdup(g->source), *b = mt_try_strdup(g->targets[0]);
        if (!a || !b) {
            mt_free(a);
            mt_free(b);
            rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
            break;
        }
        app_corpus_flatten(a);
        app_corpus_flatten(b);
        if (strip) app_corpus_strip_accelerators(a, b);
        m->src[m->n] = a, m->trg[m->n] = b;
        m->n++;
    }
    app_doc_free(d);
    return rc;
}

/* The package names of a packages-*.txt file ("# ..." lines skipped). */
static bool in_list(const char *list, const char *pkg) {
    FILE *f = fopen(list, "r");
    if (f == NULL) return false;
    char line[512];
    bool found = false;
    size_t n = strlen(pkg);
    while (!found && fgets(line, sizeof line, f))
        found = line[0] != '#' && strncmp(line, pkg, n) == 0 && line[n] == '\t';
    fclose(f);
    return found;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

typedef struct row {
    char name[64];
    int32_t n;
    double secs;
    app_tune_result r;
    app_tune_scores test_before, test_after;
} row;

static const app_opts *bench_o; /* --mix-report */

/* m: the messages of po (read_po) */
static mt_status bench_one(const char *po, const msgs *m, const app_tune_params *base,
                           const char *work, row *out) {
    mt_status rc;
    out->n = m->n;
    int32_t half = m->n / 2;
    char db[PATH_MAX], dir[PATH_MAX];
    snprintf(db, sizeof db, "%.3000s/%s.db", work, out->name);
    snprintf(dir, sizeof dir, "%.3000s/%s.tuned", work, out->name);
    store *s = NULL;
    rc = store_open(db, &s);
    store_segment_in *segs = mt_try_calloc((size_t)half + 1, sizeof *segs);
    if (rc == MT_OK && segs == NULL) rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < half && rc == MT_OK; i++) {
        segs[i].source = m->src[i];
        segs[i].target = m->trg[i];
        segs[i].status = STORE_SEG_CONFIRMED;
    }
    int64_t doc_id = 0;
    store_doc_info info = {po, STORE_FORMAT_PO, "en", "de", "bench"};
    if (rc == MT_OK) rc = store_add_document(s, &info, segs, half, &doc_id);
    store_close(s);
    mt_free(segs);
    app_tune_params p = *base;
    p.db_path = db;
    p.out_dir = dir;
    double t0 = app_now();
    if (rc == MT_OK) rc = app_tune_run(&p, &out->r);
    out->secs = app_now() - t0;
    char **before = mt_try_calloc((size_t)(m->n - half) + 1, sizeof(char *));
    char **after = mt_try_calloc((size_t)(m->n - half) + 1, sizeof(char *));
    if (rc == MT_OK && (!before || !after)) rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    char tuned[PATH_MAX + 16];
    snprintf(tuned, sizeof tuned, "%s/model.npz", dir);
    if (rc == MT_OK)
        rc = app_tune_translate(p.model, p.vocabs, &p, m->src + half, m->n - half, before);
    if (rc == MT_OK)
        rc = app_tune_translate(tuned, p.vocabs, &p, m->src + half, m->n - half, after);
    if (rc == MT_OK) rc = app_tune_score(before, m->trg + half, m->n - half, &out->test_before);
    if (rc == MT_OK) rc = app_tune_score(after, m->trg + half, m->n - half, &out->test_after);
    for (int k = 0; rc == MT_OK && k < app_opts_count(bench_o, "mix-report"); k++) {
        double a = app_opts_float_item(bench_o, "mix-report", k);
        char mixp[PATH_MAX + 16];
        snprintf(mixp, sizeof mixp, "%s/mix.npz", dir);
        rc = app_tune_mix(p.model, tuned, a, mixp);
        for (int32_t i = 0; i < m->n - half; i++) {
            mt_free(after[i]);
            after[i] = NULL;
        }
        if (rc == MT_OK)
            rc = app_tune_translate(mixp, p.vocabs, &p, m->src + half, m->n - half, after);
        app_tune_scores t, d = {NAN, NAN, NAN};
        if (rc == MT_OK) rc = app_tune_score(after, m->trg + half, m->n - half, &t);
        if (rc == MT_OK && p.dev[0]) {
            /* the dev sample tune used: its data/dev.* files */
            char ds[PATH_MAX + 32], dt[PATH_MAX + 32];
            snprintf(ds, sizeof ds, "%s/data/dev.src", dir);
            snprintf(dt, sizeof dt, "%s/data/dev.trg", dir);
            app_tune_scores dd;
            rc = app_tune_score_files(mixp, p.vocabs, &p, ds, dt, &dd);
            if (rc == MT_OK) d = dd;
        }
        if (rc == MT_OK)
            printf("#   %-26s mix %.2f: second half BLEU %.2f (%+.2f) chrF %.2f, dev BLEU %.2f "
                   "(%+.2f)\n",
                   out->name, a, t.bleu, t.bleu - out->test_before.bleu, t.chrf, d.bleu,
                   d.bleu - out->r.dev_before.bleu);
        remove(mixp);
    }
    for (int32_t i = 0; i < m->n - half; i++) {
        if (before) mt_free(before[i]);
        if (after) mt_free(after[i]);
    }
    mt_free(before);
    mt_free(after);
    return rc;
}

int app_bench_tune_main(int argc, char **argv) {
    app_opts *o = NULL;
    int ret;
    if (!app_opts_parse_cmd(&app_bench_tune_cmd, argc, argv, &o, &ret)) return ret;
    char model[PATH_MAX], vs[PATH_MAX], vt[PATH_MAX];
    const char *which = NULL;
    ret = app_bench_model(o, "bench tune", model, vs, vt, &which);
    if (ret != 0) {
        app_opts_free(o);
        return ret;
    }
    bench_o = o;
    app_tune_params p = app_tune_default_params();
    p.model = model;
    p.vocabs[0] = vs, p.vocabs[1] = vt;
    p.quiet = true;
    p.learn_rate = app_opts_float(o, "learn-rate");
    p.epochs = (int32_t)app_opts_int(o, "epochs");
    p.replay_ratio = app_opts_float(o, "replay-ratio");
    p.dropout = app_opts_float(o, "dropout");
    p.batch_words = (int32_t)app_opts_int(o, "batch-words");
    if (strcmp(app_opts_str(o, "precision"), "auto")) p.precision = app_opts_str(o, "precision");
    p.max_seconds = app_opts_float(o, "max-seconds");
    p.threads = (int32_t)app_opts_int(o, "cpu-threads");
    p.n_mix = app_opts_count(o, "mix") < 8 ? app_opts_count(o, "mix") : 8;
    for (int k = 0; k < p.n_mix; k++)
        p.mix[k] = app_opts_float_item(o, "mix", k);
    /* replay and dev: options, else the project's corpus */
    char data[PATH_MAX], rs[PATH_MAX], rt[PATH_MAX], ds[PATH_MAX], dt[PATH_MAX];
    snprintf(data, sizeof data, "%s/../shared/data/en-de", MT_SOURCE_DIR);
    snprintf(rs, sizeof rs, "%.3000s/train.en", data);
    snprintf(rt, sizeof rt, "%.3000s/train.de", data);
    snprintf(ds, sizeof ds, "%.3000s/dev.en", data);
    snprintf(dt, sizeof dt, "%.3000s/dev.de", data);
    if (app_opts_count(o, "replay") == 2) {
        p.replay[0] = app_opts_item(o, "replay", 0), p.replay[1] = app_opts_item(o, "replay", 1);
    } else if (access(rs, R_OK) == 0 && access(rt, R_OK) == 0) {
        p.replay[0] = rs, p.replay[1] = rt;
    }
    if (app_opts_count(o, "dev") == 2) {
        p.dev[0] = app_opts_item(o, "dev", 0), p.dev[1] = app_opts_item(o, "dev", 1);
    } else if (access(ds, R_OK) == 0 && access(dt, R_OK) == 0) {
        p.dev[0] = ds, p.dev[1] = dt;
    }
    /* the files */
    char **files = NULL;
    int nf = 0;
    char list[PATH_MAX];
    snprintf(list, sizeof list, "%s",
             app_opts_given(o, "packages") ? app_opts_str(o, "packages") : "");
    if (!list[0]) snprintf(list, sizeof list, "%.3000s/packages-test.txt", data);
    if (app_opts_nargs(o) > 0) {
        nf = app_opts_nargs(o);
        files = mt_xcalloc((size_t)nf, sizeof *files);
        for (int i = 0; i < nf; i++)
            files[i] = mt_xstrdup(app_opts_arg(o, i));
    } else {
        char dir[PATH_MAX];
        const char *cache = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (app_opts_given(o, "corpus-dir"))
            snprintf(dir, sizeof dir, "%s", app_opts_str(o, "corpus-dir"));
        else if (cache && cache[0] == '/')
            snprintf(dir, sizeof dir, "%.3000s/mtpe/po-corpus", cache);
        else
            snprintf(dir, sizeof dir, "%.3000s/.cache/mtpe/po-corpus", home ? home : "");
        DIR *dd = opendir(dir);
        if (dd == NULL) {
            fprintf(stderr,
                    "mtpe bench tune: no PO files given and no corpus in %s (build it with "
                    "scripts/fetch-po-corpus.sh)\n",
                    dir);
            app_opts_free(o);
            return 1;
        }
        struct dirent *e;
        while ((e = readdir(dd)) != NULL) {
            size_t l = strlen(e->d_name);
            if (l < 9 || strcmp(e->d_name + l - 8, ".orig.po") != 0) continue;
            char pkg[256];
            snprintf(pkg, sizeof pkg, "%.*s", (int)(l - 8), e->d_name);
            if (!in_list(list, pkg)) continue;
            files = mt_xrealloc(files, (size_t)(nf + 1) * sizeof *files);
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%.3000s/%s", dir, e->d_name);
            files[nf++] = mt_xstrdup(path);
        }
        closedir(dd);
        qsort(files, (size_t)nf, sizeof *files, cmp_str);
    }
    char work[PATH_MAX];
    if (app_opts_given(o, "keep")) {
        snprintf(work, sizeof work, "%s", app_opts_str(o, "keep"));
        mkdir(work, 0755);
    } else {
        snprintf(work, sizeof work, "/tmp/mtpe-bench-tune-XXXXXX");
        if (mkdtemp(work) == NULL) {
            fprintf(stderr, "mtpe bench tune: cannot make a temporary folder\n");
            app_opts_free(o);
            return 1;
        }
    }
    bool strip = !app_opts_flag(o, "keep-accelerators");
    int min_msgs = (int)app_opts_int(o, "min-messages");
    printf("# bench tune: model %s; replay %s; dev %s (%d lines); accelerators %s\n", model,
           p.replay[0] ? p.replay[0] : "none", p.dev[0] ? p.dev[0] : "none", (int)p.dev_size,
           strip ? "removed" : "kept");
    printf("# the first half of each file confirmed, tuned on, the second half translated\n");
    printf("%-28s %5s %6s %6s | %6s %6s | %6s %6s %6s | %6s %6s | %6s %6s | %s\n", "file", "msgs",
           "tune_s", "updates", "held_b", "held_a", "test_b", "test_a", "gain", "chrF_b", "chrF_a",
           "dev_b", "dev_a", "accepted");
    int done = 0, failed = 0;
    double sum_gain = 0, sum_dev = 0, max_secs = 0;
    for (int i = 0; i < nf; i++) {
        row rw;
        memset(&rw, 0, sizeof rw);
        const char *b = strrchr(files[i], '/');
        snprintf(rw.name, sizeof rw.name, "%.40s", b ? b + 1 : files[i]);
        char *dot = strstr(rw.name, ".orig.po");
        if (dot) *dot = '\0';
        msgs m = {0};
        mt_status rc = read_po(files[i], strip, &m);
        if (rc == MT_OK && m.n < min_msgs) {
            msgs_free(&m);
            continue;
        }
        if (rc == MT_OK) rc = bench_one(files[i], &m, &p, work, &rw);
        msgs_free(&m);
        if (rc != MT_OK) {
            printf("%-28s failed: %s\n", rw.name, mt_errmsg());
            failed++;
            continue;
        }
        double gain = rw.test_after.bleu - rw.test_before.bleu;
        printf("%-28s %5d %6.1f %6lld | %6.2f %6.2f | %6.2f %6.2f %+6.2f | %6.2f %6.2f | %6.2f "
               "%6.2f | %s %.1f\n",
               rw.name, (int)rw.n, rw.secs, (long long)rw.r.updates, rw.r.heldout_before.bleu,
               rw.r.heldout_after.bleu, rw.test_before.bleu, rw.test_after.bleu, gain,
               rw.test_before.chrf, rw.test_after.chrf, rw.r.dev_before.bleu, rw.r.dev_after.bleu,
               rw.r.accepted ? "yes" : "no", rw.r.alpha);
        for (int k = 0; k < rw.r.n_mix; k++)
            printf("#   mix %.2f: held-out BLEU %.2f, dev BLEU %.2f\n", rw.r.mix_alpha[k],
                   rw.r.mix_heldout[k].bleu, rw.r.mix_dev[k].bleu);
        fflush(stdout);
        sum_gain += gain;
        if (rw.r.n_dev > 0) sum_dev += rw.r.dev_after.bleu - rw.r.dev_before.bleu;
        if (rw.secs > max_secs) max_secs = rw.secs;
        done++;
    }
    if (done > 0)
        printf("# %d files: mean second-half gain %+.2f BLEU (target >= +3), mean dev change "
               "%+.2f BLEU (target >= -0.5), longest tune %.1f s (target <= 60)\n",
               done, sum_gain / done, sum_dev / done, max_secs);
    else
        printf("# no file with at least %d messages\n", min_msgs);
    if (!app_opts_given(o, "keep")) nftw(work, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    for (int i = 0; i < nf; i++)
        mt_free(files[i]);
    mt_free(files);
    app_opts_free(o);
    return failed ? 1 : 0;
}
