/*
** ape.c: APE model folders and loading (app/ape.h).
*/
#include "ape.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"
#include "options.h"
#include "paths.h"

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The keys of a folder's config that are read here (the rest is ignored:
** lenient merge). */
static const app_opt dir_opts[] = {
    {"vocabs", 0, APP_OPT_STRINGS, NULL, NULL, "vocabularies"},
    {"beam-size", 0, APP_OPT_INT, "4", NULL, "beam size", "1..1000"},
    {"normalize", 0, APP_OPT_FLOAT, "1", NULL, "length normalisation"},
};

mt_status app_model_dir_resolve(const char *dir, int n_default, app_model_dir *out) {
    memset(out, 0, sizeof *out);
    out->beam_size = 4;
    out->normalize = 1.0f;
    if (!is_dir(dir)) return mt_seterr(MT_ERR_NOTFOUND, "no model folder %s", dir);
    snprintf(out->model, sizeof out->model, "%.4000s/model.npz", dir);
    if (!app_is_file(out->model)) return mt_seterr(MT_ERR_NOTFOUND, "no model file %s", out->model);
    snprintf(out->config, sizeof out->config, "%.4000s/decoder.yml", dir);
    if (!app_is_file(out->config))
        snprintf(out->config, sizeof out->config, "%.4000s/model.npz.decoder.yml", dir);
    if (!app_is_file(out->config)) out->config[0] = '\0';
    mt_status rc = MT_OK;
    if (out->config[0]) {
        app_opts *o = NULL;
        char *argv[] = {"config", NULL};
        rc = app_opts_parse(dir_opts, (int)(sizeof dir_opts / sizeof dir_opts[0]), 1, argv, &o);
        if (rc == MT_OK) rc = app_opts_merge_file(o, out->config, true);
        if (rc == MT_OK) {
            int nv = app_opts_count(o, "vocabs");
            if (nv > MT_MAX_VOCABS)
                rc = mt_seterr(MT_ERR_INVALID, "%s: %d vocabularies, at most %d", out->config, nv,
                               MT_MAX_VOCABS);
            for (int k = 0; k < nv && rc == MT_OK; k++) {
                const char *p = app_opts_item(o, "vocabs", k), *b = strrchr(p, '/');
                snprintf(out->vocabs[k], sizeof out->vocabs[k], "%.3800s/%.255s", dir,
                         b ? b + 1 : p);
            }
            if (rc == MT_OK) out->n_vocabs = nv;
            out->beam_size = (int)app_opts_int(o, "beam-size");
            out->normalize = (float)app_opts_float(o, "normalize");
        }
        app_opts_free(o);
        if (rc != MT_OK) return rc;
    }
    if (out->n_vocabs == 0) {
        int n = n_default < 1 ? 1 : n_default > MT_MAX_VOCABS ? MT_MAX_VOCABS : n_default;
        for (int k = 0; k < n; k++)
            snprintf(out->vocabs[k], sizeof out->vocabs[k], "%.4000s/vocab.spm", dir);
        out->n_vocabs = n;
    }
    return MT_OK;
}

bool app_ape_check(const char *model, int n_src) {
    if (n_src == 2) return true;
    mt_seterr(MT_ERR_INVALID, "%s reads %d input%s: an APE model reads 2 (the source and the MT)",
              model, n_src, n_src == 1 ? "" : "s");
    return false;
}

mt_status app_ape_load(mt_ensemble *m, const char *model, const char *const *vocabs, int n_vocabs) {
    const char *paths[1] = {model};
    mt_status rc = mt_ensemble_load(m, paths, 1, NULL, vocabs, n_vocabs);
    /* a model of the wrong kind is named as such, not as a vocabulary count */
    if (m->n_models == 1 && !app_ape_check(model, m->n_src)) return MT_ERR_INVALID;
    return rc;
}

bool app_default_ape_dir(char *dir, size_t cap, char *looked, size_t looked_cap) {
    return app_default_named_model_dir("en-de-ape", dir, cap, looked, looked_cap);
}
