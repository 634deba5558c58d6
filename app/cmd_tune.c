/*
** cmd_tune.c: `mtpe tune`, continued training of a model on the store's
** confirmed segments (app/tune/tune.h describes a run).
**
**   mtpe tune -o DIR [--db DB] [-m MODEL [-v SRC TRG] | -c decoder.yml]
**             [--doc PATH] [--since TIME] [--replay SRC TRG] [--dev SRC TRG]
**   mtpe tune --runs [--db DB]        the store's runs, newest first
**
** The base model: -m (vocabularies: -v, else vocab.spm next to it), or the
** models and vocabs of a decoder config (-c, relative paths resolved as
** `mtpe translate` does with relative-paths: true), else the installed
** default model.  Replay and dev data default to the corpus the model was
** trained on, when a recipe names it: recipe.yml next to the model
** (train-sets, valid-sets; paths relative to it), else the training config
** Marian and mtpe write next to it (MODEL.yml: train-sets, valid-sets as
** written).  Without any, tune says so and goes on without replay or dev.
** Exit codes: 0 done (accepted or not: the last line says which), 1 failure
** (also too few segments), 2 usage error, 130 cancelled.
*/
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "common.h"
#include "corpus.h"
#include "corpus_io.h"
#include "options.h"
#include "paths.h"
#include "store.h"
#include "tune.h"

static const app_opt tune_opts[] = {
    {"output", 'o', APP_OPT_STRING, NULL, NULL, "the new model folder (must not exist)"},
    {"db", 0, APP_OPT_STRING, NULL, NULL,
     "the store (default: $XDG_DATA_HOME/mtpe/mtpe.db or ~/.local/share/mtpe/mtpe.db)"},
    {"models", 'm', APP_OPT_STRINGS, NULL, NULL, "the base model (default: the installed one)"},
    {"vocabs", 'v', APP_OPT_STRINGS, NULL, NULL,
     "source and target vocabularies (default: vocab.spm next to the model)"},
    {"decoder-config", 'c', APP_OPT_STRING, NULL, NULL,
     "take the model, vocabularies, beam size and normalisation from a decoder.yml"},
    {"doc", 0, APP_OPT_STRING, NULL, NULL, "only the segments of this document (path as opened)"},
    {"since", 0, APP_OPT_STRING, NULL, NULL,
     "only segments confirmed at or after TIME (ISO 8601; no zone: local time)"},
    {"replay", 0, APP_OPT_STRINGS, NULL, NULL,
     "general parallel data SRC TRG mixed in (default: the model's recipe)"},
    {"replay-ratio", 0, APP_OPT_FLOAT, "1", NULL, "replay pairs per training pair", "0..100"},
    {"no-replay", 0, APP_OPT_FLAG, NULL, NULL, "train on the segments only"},
    {"dev", 0, APP_OPT_STRINGS, NULL, NULL,
     "general dev set SRC TRG scored before and after (default: the model's recipe)"},
    {"dev-size", 0, APP_OPT_INT, "200", NULL, "lines of the dev set used", "0..100000"},
    {"heldout", 0, APP_OPT_FLOAT, "0.1", NULL, "fraction of the segments held out", "0.01..0.5"},
    {"min-segments", 0, APP_OPT_INT, "30", NULL, "refuse with fewer segments", "10..1000000"},
    {"learn-rate", 'l', APP_OPT_FLOAT, "0", NULL, "learning rate (0: chosen from the data)",
     "0..1"},
    {"epochs", 'e', APP_OPT_INT, "0", NULL, "repetitions of the segments (0: chosen from the data)",
     "0..1000"},
    {"max-seconds", 0, APP_OPT_FLOAT, "45", NULL, "stop training after this long (0: no limit)",
     "0..1e7"},
    {"dev-bound", 0, APP_OPT_FLOAT, "1", NULL, "largest dev BLEU loss of a model still accepted",
     "0..100"},
    {"beam-size", 'b', APP_OPT_INT, "4", NULL, "beam size of the scoring translations", "1..100"},
    {"normalize", 'n', APP_OPT_FLOAT, "1", NULL, "length normalisation of those", "0..10"},
    {"mix", 0, APP_OPT_FLOATS, "0.5", NULL,
     "weight of the tuned model in the published base + w (tuned - base); several: the one "
     "with the best held-out BLEU whose dev loss is within --dev-bound",
     "0..1"},
    {"cpu-threads", 0, APP_OPT_INT, "2", NULL, "threads", "1..256"},
    {"precision", 0, APP_OPT_STRING, "auto", NULL,
     "training's matrix products: auto (bfloat16 where the CPU has it) | float32 | bfloat16",
     "auto|float32|bfloat16"},
    {"seed", 0, APP_OPT_INT, "1", NULL, "seed of the samples and of training", "1.."},
    {"progress", 0, APP_OPT_FLAG, NULL, NULL,
     "machine-readable progress lines on stdout (the editor's :tune reads them)"},
    {"runs", 0, APP_OPT_FLAG, NULL, NULL, "list the store's tuning runs and exit"},
    {"quiet", 0, APP_OPT_FLAG, NULL, NULL, "only errors on stderr"},
};

const app_cmd app_tune_cmd = {
    .name = "tune",
    .usage = "-o DIR [--db DB] [-m MODEL [-v SRC TRG] | -c decoder.yml] [options]",
    .about = "Continues training a model on the store's confirmed segments, mixed with\n"
             "general data so that it does not forget, and scores held-out segments and a\n"
             "general dev sample before and after.  DIR receives a complete model folder\n"
             "(model.npz, vocabularies, decoder.yml, tune.json, README.md).\n",
    .opts = tune_opts,
    .n_opts = (int)(sizeof tune_opts / sizeof tune_opts[0]),
};

/* dir/p unless p is absolute (a path too long is cut: opening it fails). */
static void rebase(const char *dir, const char *p, char *out, size_t cap) {
    int k = p[0] == '/' || dir == NULL ? snprintf(out, cap, "%s", p)
                                       : snprintf(out, cap, "%s/%s", dir, p);
    if (k < 0 || (size_t)k >= cap) out[0] = '\0';
}

typedef struct model_paths {
    char model[PATH_MAX], vocabs[2][PATH_MAX];
    char replay[2][PATH_MAX], dev[2][PATH_MAX];
    bool have_replay, have_dev;
} model_paths;

static mt_status read_yaml_file(const char *path, mt_yaml **y) {
    char *text = NULL;
    size_t len = 0;
    mt_status rc = mt_text_read_all(path, &text, &len);
    if (rc == MT_OK && strlen(text) != len)
        rc = mt_seterr(MT_ERR_FORMAT, "%s holds a NUL byte", path);
    if (rc == MT_OK && (rc = mt_yaml_parse(text, y)) != MT_OK)
        rc = mt_seterr(rc, "%s: %s", path, mt_errmsg());
    mt_free(text);
    return rc;
}

/* A pair of files of a recipe key: both must exist. */
static bool recipe_pair(const mt_yaml *y, const char *key, const char *dir, char out[2][PATH_MAX]) {
    if (mt_yaml_seq_len(y, key) < 2) return false;
    for (int i = 0; i < 2; i++) {
        rebase(dir, mt_yaml_seq_item(y, key, i), out[i], PATH_MAX);
        if (!app_is_file(out[i])) return false;
    }
    return true;
}

/* Replay and dev data from recipe.yml next to the model, else MODEL.yml. */
static void find_recipe(model_paths *mp) {
    char dir[PATH_MAX], path[PATH_MAX + 16];
    app_dir_of(mp->model, dir, sizeof dir);
    for (int k = 0; k < 2 && !mp->have_replay; k++) {
        bool relative = k == 0; /* recipe.yml's paths are relative to it */
        if (relative)
            snprintf(path, sizeof path, "%s/recipe.yml", dir);
        else
            snprintf(path, sizeof path, "%s.yml", mp->model);
        if (!app_is_file(path)) continue;
        mt_yaml *y = NULL;
        if (read_yaml_file(path, &y) != MT_OK) {
            mt_clearerr();
            continue;
        }
        mp->have_replay = recipe_pair(y, "train-sets", relative ? dir : NULL, mp->replay);
        mp->have_dev = recipe_pair(y, "valid-sets", relative ? dir : NULL, mp->dev);
        mt_yaml_free(y);
    }
}

static mt_status resolve(const app_opts *o, model_paths *mp, int32_t *beam, float *norm) {
    int nm = app_opts_count(o, "models"), nv = app_opts_count(o, "vocabs");
    if (nm > 1) return mt_seterr(MT_ERR_INVALID, "tune takes one model, not an ensemble");
    if (nv != 0 && nv != 2)
        return mt_seterr(MT_ERR_INVALID, "-v takes two vocabularies (source, target), not %d", nv);
    if (app_opts_given(o, "decoder-config")) {
        if (nm) return mt_seterr(MT_ERR_INVALID, "give -m or -c, not both");
        const char *cfg = app_opts_str(o, "decoder-config");
        mt_yaml *y = NULL;
        mt_status rc = read_yaml_file(cfg, &y);
        if (rc != MT_OK) return rc;
        char dir[PATH_MAX];
        app_dir_of(cfg, dir, sizeof dir);
        const char *rel = mt_yaml_get(y, "relative-paths");
        bool relative = rel && (!strcmp(rel, "true") || !strcmp(rel, "1"));
        if (mt_yaml_seq_len(y, "models") < 1 || (nv == 0 && mt_yaml_seq_len(y, "vocabs") < 2)) {
            mt_yaml_free(y);
            return mt_seterr(MT_ERR_INVALID, "%s names no model and two vocabularies", cfg);
        }
        if (mt_yaml_seq_len(y, "models") > 1) {
            mt_yaml_free(y);
            return mt_seterr(MT_ERR_INVALID, "%s names an ensemble; tune takes one model", cfg);
        }
        rebase(relative ? dir : NULL, mt_yaml_seq_item(y, "models", 0), mp->model, PATH_MAX);
        for (int i = 0; i < 2 && nv == 0; i++)
            rebase(relative ? dir : NULL, mt_yaml_seq_item(y, "vocabs", i), mp->vocabs[i],
                   PATH_MAX);
        const char *b = mt_yaml_get(y, "beam-size"), *n = mt_yaml_get(y, "normalize");
        if (b && !app_opts_given(o, "beam-size")) *beam = (int32_t)atoi(b);
        if (n && !app_opts_given(o, "normalize")) *norm = (float)atof(n);
        if (*beam < 1) *beam = 1;
        mt_yaml_free(y);
    } else if (nm == 1) {
        snprintf(mp->model, PATH_MAX, "%s", app_opts_item(o, "models", 0));
    } else {
        char dir[PATH_MAX], looked[3 * PATH_MAX];
        if (!app_default_model_dir(dir, sizeof dir, looked, sizeof looked))
            return mt_seterr(MT_ERR_NOTFOUND,
                             "no model given (-m MODEL or -c decoder.yml) and none installed "
                             "(looked for model.npz in %s)",
                             looked);
        snprintf(mp->model, PATH_MAX, "%.4000s/model.npz", dir);
    }
    if (nv == 2) {
        for (int i = 0; i < 2; i++)
            snprintf(mp->vocabs[i], PATH_MAX, "%s", app_opts_item(o, "vocabs", i));
    } else if (mp->vocabs[0][0] == '\0') {
        char dir[PATH_MAX];
        app_dir_of(mp->model, dir, sizeof dir);
        snprintf(mp->vocabs[0], PATH_MAX, "%.4000s/vocab.spm", dir);
        if (!app_is_file(mp->vocabs[0]))
            return mt_seterr(MT_ERR_INVALID,
                             "no vocabularies given (-v SRC TRG) and no %s next to the model",
                             mp->vocabs[0]);
        snprintf(mp->vocabs[1], PATH_MAX, "%s", mp->vocabs[0]);
    }
    if (!app_is_file(mp->model)) return mt_seterr(MT_ERR_IO, "cannot read model %s", mp->model);
    find_recipe(mp);
    return MT_OK;
}

static const char *status_name(store_run_status s) {
    switch (s) {
    case STORE_RUN_RUNNING: return "running";
    case STORE_RUN_DONE: return "done";
    case STORE_RUN_FAILED: return "failed";
    case STORE_RUN_CANCELLED: return "cancelled";
    default: break;
    }
    return "?";
}

static int print_run(void *user, const store_run *r) {
    (void)user;
    char when[32] = "";
    time_t t = (time_t)(r->started_ms / 1000);
    struct tm tm;
    if (localtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    printf("%lld\t%s\t%s\t%lld\t%lld\t%s\t%s\n", (long long)r->id, status_name(r->status), when,
           (long long)r->n_edits, (long long)r->output_model_id, r->log_path ? r->log_path : "-",
           r->metrics_json ? r->metrics_json : "{}");
    return 0;
}

static int list_runs(const char *db) {
    store *s = NULL;
    mt_status rc = store_open(db, &s);
    int n = 0;
    if (rc == MT_OK) rc = app_tune_recover(s, &n);
    if (rc == MT_OK && n > 0)
        fprintf(stderr, "mtpe tune: %d interrupted run%s marked failed\n", n, n == 1 ? "" : "s");
    if (rc == MT_OK) {
        printf("# id\tstatus\tstarted\tsegments\toutput_model\tlog\tmetrics\n");
        rc = store_list_runs(s, print_run, NULL);
    }
    store_close(s);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe tune: %s\n", mt_errmsg());
        return 1;
    }
    return 0;
}

static void print_scores(const char *name, const app_tune_scores *b, const app_tune_scores *a) {
    fprintf(stderr, "  %-9s BLEU %6.2f -> %6.2f (%+.2f)   chrF %6.2f -> %6.2f", name, b->bleu,
            a->bleu, a->bleu - b->bleu, b->chrf, a->chrf);
    if (isfinite(b->ter)) fprintf(stderr, "   TER %6.2f -> %6.2f", b->ter, a->ter);
    fputc('\n', stderr);
}

int app_tune_main(int argc, char **argv) {
    app_opts *o = NULL;
    int ret;
    if (!app_opts_parse_cmd(&app_tune_cmd, argc, argv, &o, &ret)) return ret;
    char *db = NULL;
    mt_status rc = MT_OK;
    rc = app_store_path(o, !app_opts_flag(o, "runs"), &db);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe tune: %s\n", mt_errmsg());
        app_opts_free(o);
        return 1;
    }
    if (app_opts_flag(o, "runs")) {
        ret = list_runs(db);
        mt_free(db);
        app_opts_free(o);
        return ret;
    }
    if (!app_opts_given(o, "output")) {
        mt_free(db);
        app_opts_free(o);
        return app_cmd_usage_error(&app_tune_cmd, "-o DIR is required (the new model folder)");
    }
    app_tune_params p = app_tune_default_params();
    model_paths *mp = mt_try_calloc(1, sizeof *mp);
    int32_t beam = (int32_t)app_opts_int(o, "beam-size");
    float norm = (float)app_opts_float(o, "normalize");
    rc = mp ? resolve(o, mp, &beam, &norm) : mt_seterr(MT_ERR_NOMEM, "out of memory");
    int nr = app_opts_count(o, "replay"), nd = app_opts_count(o, "dev");
    if (rc == MT_OK && ((nr != 0 && nr != 2) || (nd != 0 && nd != 2))) {
        mt_free(mp);
        mt_free(db);
        app_opts_free(o);
        return app_cmd_usage_error(&app_tune_cmd, "--replay and --dev take two files: SRC TRG");
    }
    if (rc == MT_OK && app_opts_given(o, "since")) {
        rc = app_parse_iso8601(app_opts_str(o, "since"), &p.since_ms);
    }
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe tune: %s\n", mt_errmsg());
        mt_free(mp);
        mt_free(db);
        app_opts_free(o);
        return rc == MT_ERR_INVALID ? 2 : 1;
    }
    bool quiet = app_opts_flag(o, "quiet");
    p.db_path = db;
    p.model = mp->model;
    p.vocabs[0] = mp->vocabs[0], p.vocabs[1] = mp->vocabs[1];
    p.beam_size = beam;
    p.normalize = norm;
    p.out_dir = app_opts_str(o, "output");
    p.doc = app_opts_given(o, "doc") ? app_opts_str(o, "doc") : NULL;
    char *real_doc = p.doc ? realpath(p.doc, NULL) : NULL; /* as the editor stores it */
    if (real_doc) p.doc = real_doc;
    if (nr == 2) {
        p.replay[0] = app_opts_item(o, "replay", 0), p.replay[1] = app_opts_item(o, "replay", 1);
    } else if (mp->have_replay) {
        p.replay[0] = mp->replay[0], p.replay[1] = mp->replay[1];
    }
    if (app_opts_flag(o, "no-replay")) p.replay[0] = p.replay[1] = NULL;
    if (nd == 2) {
        p.dev[0] = app_opts_item(o, "dev", 0), p.dev[1] = app_opts_item(o, "dev", 1);
    } else if (mp->have_dev) {
        p.dev[0] = mp->dev[0], p.dev[1] = mp->dev[1];
    }
    if (!quiet && p.replay[0] == NULL && !app_opts_flag(o, "no-replay"))
        fprintf(stderr,
                "mtpe tune: warning: no replay data (no recipe.yml or %s.yml next to the "
                "model names its training corpus; give --replay SRC TRG): the model may "
                "forget general translation\n",
                p.model);
    if (!quiet && p.dev[0] == NULL)
        fprintf(stderr, "mtpe tune: warning: no general dev set (--dev SRC TRG): only the "
                        "held-out segments decide\n");
    p.replay_ratio = app_opts_float(o, "replay-ratio");
    p.dev_size = (int32_t)app_opts_int(o, "dev-size");
    p.heldout_frac = app_opts_float(o, "heldout");
    p.min_segments = (int32_t)app_opts_int(o, "min-segments");
    p.learn_rate = app_opts_float(o, "learn-rate");
    p.epochs = (int32_t)app_opts_int(o, "epochs");
    p.max_seconds = app_opts_float(o, "max-seconds");
    p.dev_bound = app_opts_float(o, "dev-bound");
    p.threads = (int32_t)app_opts_int(o, "cpu-threads");
    p.n_mix = app_opts_count(o, "mix") < 8 ? app_opts_count(o, "mix") : 8;
    for (int k = 0; k < p.n_mix; k++)
        p.mix[k] = app_opts_float_item(o, "mix", k);
    p.seed = (uint64_t)app_opts_int(o, "seed");
    const char *prec = app_opts_str(o, "precision");
    p.precision = strcmp(prec, "auto") ? prec : NULL;
    p.progress_fd = app_opts_flag(o, "progress") ? STDOUT_FILENO : -1;
    p.quiet = quiet;
    app_tune_result r;
    rc = app_tune_run(&p, &r);
    if (rc == MT_OK && !quiet) {
        fprintf(stderr,
                "mtpe tune: %d segments (%d trained on, %d held out), %d replay pairs; %d "
                "repetitions, learning rate %g, %lld updates, training %.1f s%s, all %.1f s\n",
                (int)r.n_segments, (int)r.n_train, (int)r.n_heldout, (int)r.n_replay, (int)r.epochs,
                r.learn_rate, (long long)r.updates, r.train_seconds,
                r.stopped_by_time ? " (stopped at --max-seconds)" : "", r.seconds);
        print_scores("held-out", &r.heldout_before, &r.heldout_after);
        if (r.n_dev > 0) print_scores("dev", &r.dev_before, &r.dev_after);
        fprintf(stderr, "mtpe tune: %s: %s; the model is in %s\n",
                r.accepted ? "accepted" : "not accepted", r.verdict, p.out_dir);
    }
    if (rc != MT_OK && p.progress_fd < 0) fprintf(stderr, "mtpe tune: %s\n", mt_errmsg());
    free(real_doc);
    mt_free(mp);
    mt_free(db);
    app_opts_free(o);
    return rc == MT_OK ? 0 : rc == MT_ABORTED ? 130 : 1;
}
