/*
** cmd_gec.c: `mtpe gec`, grammatical error correction of German text, and
** its training data and evaluation:
**
**   mtpe gec [-m MODEL|DIR] [-v VOCAB VOCAB] [-c CONFIG] [--gec-threshold T]
**            < lines > corrected          one output line per input line
**   mtpe gec noise [--seed N] [--rate R] [--clean F] [--kinds a,b] [--pairs]
**            < clean > noisy              (app/gec/noise.h)
**   mtpe gec eval -s SRC -r REF [-i HYP] [--edits]
**            edit-level precision, recall, F0.5 and the clean lines kept
**            (app/gec/gec_eval.h)
**
** Input of every form: UTF-8 text, one sentence per line ('\n', a '\r'
** before it is dropped).  Invalid UTF-8 is an error naming the line, before
** anything is written.  The model (gec.h): -m MODEL.npz with -v (two
** vocabularies, source and target, usually the same .spm), or -m DIR (a
** folder with model.npz and vocab.spm), or -c CONFIG (a decoder.yml with
** models:/vocabs:, paths relative to it with relative-paths: true), else
** the default GEC model assets/models/de-gec.
*/
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app.h"
#include "common.h"
#include "gec.h"
#include "gec_eval.h"
#include "mt.h"
#include "noise.h"
#include "options.h"
#include "paths.h"

/* ----------------------------------------------------------- input */

typedef struct lines {
    char **v;
    int64_t n, cap;
} lines;

static void lines_free(lines *l) {
    for (int64_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Reads every line of f (checked UTF-8) into l; errors name the file. */
static mt_status read_lines(FILE *f, const char *name, lines *l) {
    memset(l, 0, sizeof *l);
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n;
    mt_status rc = MT_OK;
    while ((n = app_read_line(f, &buf, &cap)) >= 0) {
        rc = app_check_utf8(buf, (size_t)n, name, l->n + 1);
        if (rc == MT_OK && memchr(buf, '\0', (size_t)n))
            rc = mt_seterr(MT_ERR_INVALID, "%s:%lld: a NUL byte in the line", name,
                           (long long)(l->n + 1));
        if (rc != MT_OK) break;
        if (l->n == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 256;
            char **v = realloc(l->v, sizeof *v * (size_t)l->cap);
            if (!v) {
                rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
                break;
            }
            l->v = v;
        }
        l->v[l->n] = strdup(buf);
        if (!l->v[l->n]) {
            rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
            break;
        }
        l->n++;
    }
    if (rc == MT_OK && ferror(f)) rc = mt_seterr(MT_ERR_IO, "%s: read error", name);
    free(buf);
    if (rc != MT_OK) lines_free(l);
    return rc;
}

static mt_status read_file_lines(const char *path, lines *l) {
    if (!path || !strcmp(path, "-")) return read_lines(stdin, "stdin", l);
    FILE *f = fopen(path, "r");
    if (!f) return mt_seterr(MT_ERR_IO, "cannot open %s", path);
    mt_status rc = read_lines(f, path, l);
    fclose(f);
    return rc;
}

/* ----------------------------------------------------------- noise */

static const app_opt noise_opts[] = {
    {"seed", 0, APP_OPT_INT, "1", NULL, "random seed (same seed, same output)", "0.."},
    {"rate", 0, APP_OPT_FLOAT, "0.08", NULL, "errors per word of a noisy line (at least 1)",
     "0..1"},
    {"clean", 0, APP_OPT_FLOAT, "0.25", NULL, "fraction of lines left unchanged", "0..1"},
    {"kinds", 0, APP_OPT_STRING, "all", NULL,
     "comma-separated kinds: keyboard, drop, double, umlaut, case, suffix, split, merge, "
     "swap, dropword, comma, period"},
    {"pairs", 0, APP_OPT_FLAG, NULL, NULL, "print NOISY<TAB>CLEAN lines"},
    {"stats", 0, APP_OPT_FLAG, NULL, NULL, "count the kinds that fired, on stderr"},
};

const app_cmd app_gec_noise_cmd = {
    .name = "gec noise",
    .usage = "[--seed N] [--rate R] [--clean F] [--kinds LIST] [--pairs] < CLEAN > NOISY",
    .about = "Writes synthetic German errors into clean lines (stdin): QWERTZ typos, dropped\n"
             "and doubled letters, umlaut spellings, wrong case, endings -e/-en/-em/-er/-es,\n"
             "split and merged compounds, swapped and dropped words, commas, periods.\n"
             "Placeholders, tags, entities, URLs and numbers are never touched.\n",
    .opts = noise_opts,
    .n_opts = (int)(sizeof noise_opts / sizeof noise_opts[0]),
};

static int noise_main(int argc, char **argv) {
    app_opts *o = NULL;
    int ret;
    if (!app_opts_parse_cmd(&app_gec_noise_cmd, argc, argv, &o, &ret)) return ret;
    app_noise_params p = app_noise_default_params();
    p.seed = (uint64_t)app_opts_int(o, "seed");
    p.rate = app_opts_float(o, "rate");
    p.clean = app_opts_float(o, "clean");
    bool pairs = app_opts_flag(o, "pairs"), stats = app_opts_flag(o, "stats");
    if (app_noise_parse_kinds(app_opts_str(o, "kinds"), &p.kinds) != MT_OK) {
        ret = app_cmd_usage_error(&app_gec_noise_cmd, "--kinds: %s", mt_errmsg());
        app_opts_free(o);
        return ret;
    }
    app_opts_free(o);
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n;
    int64_t line = 0, fired[APP_NOISE_N_KINDS] = {0}, noisy = 0;
    ret = 0;
    while ((n = app_read_line(stdin, &buf, &cap)) >= 0) {
        line++;
        if (app_check_utf8(buf, (size_t)n, "stdin", line) != MT_OK ||
            memchr(buf, '\0', (size_t)n)) {
            fprintf(stderr, "mtpe gec noise: %s\n",
                    memchr(buf, '\0', (size_t)n) ? "a NUL byte in the input" : mt_errmsg());
            ret = 1;
            break;
        }
        char *out = NULL;
        uint32_t got = 0;
        if (app_noise_line(&p, (uint64_t)(line - 1), buf, &out, &got) != MT_OK) {
            fprintf(stderr, "mtpe gec noise: stdin:%lld: %s\n", (long long)line, mt_errmsg());
            ret = 1;
            break;
        }
        if (pairs)
            printf("%s\t%s\n", out, buf);
        else
            printf("%s\n", out);
        mt_free(out);
        noisy += got != 0;
        for (int k = 0; k < APP_NOISE_N_KINDS; k++)
            fired[k] += (got >> k) & 1;
    }
    free(buf);
    if (stats) {
        fprintf(stderr, "lines %lld, noisy %lld\n", (long long)line, (long long)noisy);
        for (int k = 0; k < APP_NOISE_N_KINDS; k++)
            fprintf(stderr, "  %-9s %lld lines\n", app_noise_kind_name(k), (long long)fired[k]);
    }
    return ret;
}

/* ------------------------------------------------------------ eval */

static const app_opt eval_opts[] = {
    {"source", 's', APP_OPT_STRING, NULL, NULL, "the uncorrected lines"},
    {"ref", 'r', APP_OPT_STRING, NULL, NULL, "the correct lines"},
    {"input", 'i', APP_OPT_STRING, NULL, NULL, "the corrected lines to score (default: stdin)"},
    {"edits", 0, APP_OPT_FLAG, NULL, NULL, "also print each line's hypothesis edits"},
};

const app_cmd app_gec_eval_cmd = {
    .name = "gec eval",
    .usage = "-s SOURCE -r REF [-i HYP] [--edits]",
    .about = "Edit-level precision, recall and F0.5 of HYP (corrections of SOURCE) against\n"
             "REF, edits from word-level Levenshtein alignment as (start, end, replacement),\n"
             "and the fraction of clean lines (SOURCE = REF) that HYP leaves unchanged.\n",
    .opts = eval_opts,
    .n_opts = (int)(sizeof eval_opts / sizeof eval_opts[0]),
};

static int eval_main(int argc, char **argv) {
    app_opts *o = NULL;
    int ret;
    if (!app_opts_parse_cmd(&app_gec_eval_cmd, argc, argv, &o, &ret)) return ret;
    if (!app_opts_given(o, "source") || !app_opts_given(o, "ref")) {
        ret = app_cmd_usage_error(&app_gec_eval_cmd, "needs -s SOURCE and -r REF");
        app_opts_free(o);
        return ret;
    }
    lines s = {0}, r = {0}, h = {0};
    const char *hp = app_opts_given(o, "input") ? app_opts_str(o, "input") : NULL;
    mt_status rc = read_file_lines(app_opts_str(o, "source"), &s);
    if (rc == MT_OK) {
        rc = read_file_lines(app_opts_str(o, "ref"), &r);
        if (rc != MT_OK) lines_free(&s);
    }
    if (rc == MT_OK) {
        rc = read_file_lines(hp, &h);
        if (rc != MT_OK) lines_free(&s), lines_free(&r);
    }
    if (rc == MT_OK && (s.n != r.n || s.n != h.n))
        rc = mt_seterr(MT_ERR_INVALID,
                       "different numbers of lines: source %lld, ref %lld, "
                       "hypothesis %lld",
                       (long long)s.n, (long long)r.n, (long long)h.n);
    bool show = app_opts_flag(o, "edits");
    app_gec_counts c = {0};
    for (int64_t i = 0; rc == MT_OK && i < s.n; i++) {
        rc = app_gec_count(&c, s.v[i], h.v[i], r.v[i]);
        if (rc == MT_OK && show) {
            app_gec_edit *e = NULL;
            int ne = 0;
            rc = app_gec_edits(s.v[i], h.v[i], &e, &ne);
            for (int k = 0; k < ne; k++)
                printf("%lld\t%d\t%d\t%s\n", (long long)(i + 1), e[k].start, e[k].end, e[k].rep);
            app_gec_edits_free(e, ne);
        }
    }
    if (rc == MT_OK) {
        app_gec_scores sc = app_gec_score(&c);
        printf("lines %lld (noisy %lld, clean %lld)\n", (long long)c.lines,
               (long long)c.noisy_lines, (long long)c.clean_lines);
        printf("edits: tp %lld fp %lld fn %lld\n", (long long)c.tp, (long long)c.fp,
               (long long)c.fn);
        printf("%-12s %-9s %-9s %-9s %s\n", "", "precision", "recall", "F0.5", "clean kept");
        printf("%-12s %-9.4f %-9.4f %-9.4f %.4f (%lld/%lld)\n", "gec", sc.precision, sc.recall,
               sc.f05, sc.clean_kept, (long long)c.clean_kept, (long long)c.clean_lines);
        printf("noisy lines fully corrected: %lld/%lld\n", (long long)c.noisy_fixed,
               (long long)c.noisy_lines);
    }
    if (s.v) lines_free(&s), lines_free(&r), lines_free(&h);
    app_opts_free(o);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe gec eval: %s\n", mt_errmsg());
        return rc == MT_ERR_INVALID ? 1 : 1;
    }
    return 0;
}

/* --------------------------------------------------------- correct */

static const app_opt gec_opts[] = {
    {"config", 'c', APP_OPT_STRINGS, NULL, NULL, "YAML config files (command line wins)"},
    {"models", 'm', APP_OPT_STRINGS, NULL, NULL, "GEC model(s) (.npz), or a folder"},
    {"weights", 0, APP_OPT_FLOATS, NULL, NULL, "ensemble weights (default 1 each)"},
    {"vocabs", 'v', APP_OPT_STRINGS, NULL, NULL, "vocabularies: source, target"},
    {"relative-paths", 0, APP_OPT_FLAG, NULL, NULL, "paths in config files are relative to them"},
    {"gec-threshold", 0, APP_OPT_FLOAT, "2.0", NULL,
     "keep an edit only if it raises the forced-decoding log-probability by more than this "
     "(nats); higher: fewer, surer corrections"},
    {"beam-size", 'b', APP_OPT_INT, "4", NULL, "beam size of the candidate search", "1..64"},
    {"max-length", 0, APP_OPT_INT, "200", NULL, "longer lines (tokens) are left as they are",
     "2.."},
    {"mini-batch", 0, APP_OPT_INT, "16", NULL, "lines per search", "1..1024"},
    {"cpu-threads", 0, APP_OPT_INT, "1", NULL, "worker threads", "1..256"},
    {"input", 'i', APP_OPT_STRING, "stdin", NULL, "lines to correct"},
    {"output", 'o', APP_OPT_STRING, "stdout", NULL, "where the corrected lines go"},
    {"fixes", 0, APP_OPT_FLAG, NULL, NULL,
     "print LINE<TAB>BYTE<TAB>LEN<TAB>REPLACEMENT<TAB>GAIN per correction instead"},
    {"quiet", 0, APP_OPT_FLAG, NULL, NULL, "log only errors"},
};

const app_cmd app_gec_cmd = {
    .name = "gec",
    .usage = "[-m MODEL|DIR] [-v VOCAB VOCAB] [-c CONFIG] [--gec-threshold T] < IN > OUT\n"
             "noise [--seed N] [--rate R] < CLEAN > NOISY\n"
             "eval -s SOURCE -r REF [-i HYP]",
    .about = "Grammatical error correction of German text: one corrected line per input\n"
             "line.  Conservative: an edit proposed by the model is kept only when forced\n"
             "decoding scores the corrected line more than --gec-threshold nats above the\n"
             "line itself; placeholders, tags, entities, URLs and numbers never change.\n"
             "Default model: assets/models/de-gec.  `mtpe gec noise` makes training data,\n"
             "`mtpe gec eval` scores corrections (mtpe gec noise --help, eval --help).\n",
    .opts = gec_opts,
    .n_opts = (int)(sizeof gec_opts / sizeof gec_opts[0]),
};

typedef struct job {
    const app_gec *g;
    lines *in;
    app_gec_result *res;
    int batch;
    pthread_mutex_t mu;
    int64_t next;
    mt_status rc;
    char err[512];
} job;

static void *worker(void *arg) {
    job *j = arg;
    app_blas_single_threaded();
    app_gec_worker *w = NULL;
    mt_status rc = app_gec_worker_init(j->g, &w);
    for (;;) {
        pthread_mutex_lock(&j->mu);
        if (rc != MT_OK && j->rc == MT_OK) {
            j->rc = rc;
            snprintf(j->err, sizeof j->err, "%s", mt_errmsg());
        }
        int64_t at = j->rc == MT_OK && j->next < j->in->n ? j->next : -1;
        if (at >= 0) j->next += j->batch;
        pthread_mutex_unlock(&j->mu);
        if (at < 0) break;
        int n = (int)(j->in->n - at < j->batch ? j->in->n - at : j->batch);
        rc = app_gec_check(w, (const char *const *)j->in->v + at, n, NULL, NULL, j->res + at, NULL,
                           NULL);
    }
    app_gec_worker_free(w);
    return NULL;
}

static mt_status open_model(app_opts *o, const app_gec_params *p, app_gec **g) {
    int nm = app_opts_count(o, "models"), nv = app_opts_count(o, "vocabs");
    if (nm > 8) return mt_seterr(MT_ERR_INVALID, "at most 8 models");
    char dir[PATH_MAX] = "";
    int nc = app_opts_count(o, "config");
    if (nc > 0 && app_opts_flag(o, "relative-paths"))
        app_dir_of(app_opts_item(o, "config", nc - 1), dir, sizeof dir);
    if (nm == 0) {
        char *assets = NULL;
        if (app_default_assets_dir(&assets) != MT_OK)
            return mt_seterr(MT_ERR_NOTFOUND, "no GEC model given (-m) and no assets folder");
        char def[PATH_MAX];
        snprintf(def, sizeof def, "%s/models/de-gec", assets);
        mt_free(assets);
        char mp[PATH_MAX + 16];
        snprintf(mp, sizeof mp, "%s/model.npz", def);
        if (!app_is_file(mp))
            return mt_seterr(MT_ERR_NOTFOUND,
                             "no GEC model given (-m MODEL|DIR) and none installed in %s "
                             "(scripts/train-gec.sh trains one)",
                             def);
        return app_gec_open_path(def, p, g);
    }
    char mp[8][PATH_MAX], vp[3][PATH_MAX];
    const char *m[8], *v[3];
    float w[8];
    for (int i = 0; i < nm; i++) {
        const char *x = app_opts_item(o, "models", i);
        bool rel = dir[0] && x[0] != '/' && app_opts_source(o, "models") == APP_SRC_CONFIG;
        snprintf(mp[i], PATH_MAX, "%s%s%s", rel ? dir : "", rel ? "/" : "", x);
        m[i] = mp[i];
        w[i] =
            app_opts_count(o, "weights") > i ? (float)app_opts_float_item(o, "weights", i) : 1.0f;
    }
    struct stat st;
    if (nm == 1 && nv == 0 && stat(m[0], &st) == 0 && S_ISDIR(st.st_mode))
        return app_gec_open_path(m[0], p, g);
    if (nv == 0) return mt_seterr(MT_ERR_INVALID, "-m MODEL.npz needs -v VOCAB VOCAB");
    if (nv > 3) nv = 3;
    for (int i = 0; i < nv; i++) {
        const char *x = app_opts_item(o, "vocabs", i);
        bool rel = dir[0] && x[0] != '/' && app_opts_source(o, "vocabs") == APP_SRC_CONFIG;
        snprintf(vp[i], PATH_MAX, "%s%s%s", rel ? dir : "", rel ? "/" : "", x);
        v[i] = vp[i];
    }
    return app_gec_open(m, nm, w, v, nv, p, g);
}

static int correct_main(int argc, char **argv) {
    app_opts *o = NULL;
    int ret;
    if (!app_opts_parse_cmd(&app_gec_cmd, argc, argv, &o, &ret)) return ret;
    app_gec_params p = app_gec_default_params();
    p.threshold = (float)app_opts_float(o, "gec-threshold");
    p.beam_size = (int32_t)app_opts_int(o, "beam-size");
    p.max_length = (int32_t)app_opts_int(o, "max-length");
    const char *inp = app_opts_str(o, "input"), *outp = app_opts_str(o, "output");
    bool fixes = app_opts_flag(o, "fixes");
    lines in = {0};
    mt_status rc = read_file_lines(strcmp(inp, "stdin") ? inp : NULL, &in);
    app_gec *g = NULL;
    if (rc == MT_OK) rc = open_model(o, &p, &g);
    app_gec_result *res = rc == MT_OK ? calloc((size_t)in.n + 1, sizeof *res) : NULL;
    if (rc == MT_OK && !res) rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    if (rc == MT_OK) {
        job j = {.g = g, .in = &in, .res = res, .batch = (int)app_opts_int(o, "mini-batch")};
        pthread_mutex_init(&j.mu, NULL);
        app_run_workers((int)app_opts_int(o, "cpu-threads"), worker, &j);
        pthread_mutex_destroy(&j.mu);
        if (j.rc != MT_OK) rc = mt_seterr(j.rc, "%s", j.err);
    }
    FILE *out = NULL;
    if (rc == MT_OK) {
        out = strcmp(outp, "stdout") ? fopen(outp, "w") : stdout;
        if (!out) rc = mt_seterr(MT_ERR_IO, "cannot write %s", outp);
    }
    for (int64_t i = 0; rc == MT_OK && i < in.n; i++) {
        if (fixes) {
            for (int k = 0; k < res[i].n_fixes; k++)
                fprintf(out, "%lld\t%d\t%d\t%s\t%.3f\n", (long long)(i + 1), res[i].fixes[k].at,
                        res[i].fixes[k].len, res[i].fixes[k].with, res[i].fixes[k].gain);
            continue;
        }
        char *c = app_gec_apply(in.v[i], res[i].fixes, res[i].n_fixes);
        if (!c) {
            rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
            break;
        }
        fprintf(out, "%s\n", c);
        mt_free(c);
    }
    if (out && out != stdout && fclose(out) != 0 && rc == MT_OK)
        rc = mt_seterr(MT_ERR_IO, "cannot write %s", outp);
    for (int64_t i = 0; res && i < in.n; i++)
        app_gec_result_clear(&res[i]);
    free(res);
    app_gec_free(g);
    if (in.v) lines_free(&in);
    app_opts_free(o);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe gec: %s\n", mt_errmsg());
        return rc == MT_ERR_INVALID && strstr(mt_errmsg(), "needs -v") ? 2 : 1;
    }
    return 0;
}

int app_gec_main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "noise")) return noise_main(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "eval")) return eval_main(argc - 1, argv + 1);
    return correct_main(argc, argv);
}
