/*
** test_translate.c: the translation API (models/translator.h) and the model
** scorer (models/scorer.c) with the Marian fixtures of tests/data/marian.
**
**   - beam 1 and beam 4 (-n 0.6) translations of input.en equal Marian's
**     beam1.out / beam4.out, one sentence per search as Marian ran them;
**   - n-best lists: beam-size entries, sorted by normalised score, distinct,
**     with norm = path / L^0.6, F0 = path, word scores summing to the path,
**     and equal to nbest4.out within 1e-3 (texts exactly);
**   - forced prefix through the real model: every hypothesis starts with it;
**   - empty source, over-long source (skipped / cropped), invalid UTF-8;
**   - bounded memory: after one search has warmed the graphs up, the same
**     search allocates nothing in any step, and the graphs' workspace of a
**     450-step search stays small (the whole-batch graph it replaces grew
**     by about 16 vocabulary rows per sentence and step);
**   - cancellation, and an ensemble of a model with itself (weights 0.5).
** The command line, the other fixtures and the document formats are in
** tests/app/translate_cli.sh.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "harness.h"
#include "model.h"
#include "mt.h"
#include "test_util.h"
#include "translator.h"
#include "vocab.h"

#define DATA MT_TEST_DATA "/marian/"
#define CHECK_OK(expr) CHECK((expr) == MT_OK, "%s: %s", #expr, mt_errmsg())

typedef struct fixture {
    mt_ensemble am;
    mt_translator *tr;
    mt_translate_worker *w;
    lines input;
} fixture;

static int fixture_open(fixture *fx, const char *dir, const char *sv, const char *tv,
                        const mt_translate_params *p, int n_models, const float *weights) {
    memset(fx, 0, sizeof *fx);
    char mp[512], v1[512], v2[512], in[512];
    snprintf(mp, sizeof mp, DATA "%s/model.npz", dir);
    snprintf(v1, sizeof v1, DATA "%s/%s", dir, sv);
    snprintf(v2, sizeof v2, DATA "%s/%s", dir, tv);
    snprintf(in, sizeof in, DATA "%s/input.en", dir);
    const char *models[2] = {mp, mp}, *vocabs[2] = {v1, v2};
    if (!CHECK_OK(mt_ensemble_load(&fx->am, models, n_models, weights, vocabs, 2))) return 0;
    if (!CHECK_OK(mt_translator_init(&fx->am, NULL, p, &fx->tr))) return 0;
    if (!CHECK_OK(mt_translate_worker_init(fx->tr, &fx->w))) return 0;
    return CHECK(read_lines(in, &fx->input) && fx->input.n == 60, "read %s", in);
}

static void fixture_close(fixture *fx) {
    mt_translate_worker_free(fx->w);
    mt_translator_free(fx->tr);
    mt_ensemble_free(&fx->am);
    lines_free(&fx->input);
}

/* Translates line i alone (Marian's --mini-batch 1). */
static mt_status translate_line(fixture *fx, const char *text, const char *prefix,
                                mt_tr_result *r) {
    mt_tr_input in = {.src = {text}, .prefix = prefix};
    return mt_translate(fx->w, &in, 1, r, NULL, NULL);
}

/* ------------------------------------------------- 1-best vs Marian */

static void test_one_best(const char *dir, const char *sv, const char *tv, int beam, float alpha,
                          const char *want_file) {
    mt_translate_params p = mt_translate_default_params();
    p.beam_size = beam;
    p.normalize = alpha;
    fixture fx;
    lines want;
    char path[512];
    snprintf(path, sizeof path, DATA "%s/%s", dir, want_file);
    if (fixture_open(&fx, dir, sv, tv, &p, 1, NULL) && CHECK(read_lines(path, &want), "%s", path)) {
        int same = 0;
        for (int i = 0; i < fx.input.n && i < want.n; i++) {
            mt_tr_result r;
            if (!CHECK_OK(translate_line(&fx, fx.input.s[i], NULL, &r))) break;
            if (CHECK(r.n_hyps == 1, "%s line %d: %d hypotheses", dir, i + 1, r.n_hyps))
                same += CHECK(!strcmp(r.hyps[0].text, want.s[i]),
                              "%s %s line %d:\n  got  '%s'\n  want '%s'", dir, want_file, i + 1,
                              r.hyps[0].text, want.s[i]);
            mt_tr_result_clear(&r);
        }
        int64_t folds = mt_translate_worker_stats(fx.w).folds;
        fprintf(stderr, "%s: %d of %d lines equal to %s (caches frozen %lld times)\n", dir, same,
                fx.input.n, want_file, (long long)folds);
        /* outputs of 16 tokens and more read a frozen history */
        CHECK(folds > 0 || !mt_model_can_fold(fx.am.models[0]), "%s: the caches were never frozen",
              dir);
        lines_free(&want);
    }
    fixture_close(&fx);
}

/* ------------------------------------------------ top-up batching */

/* The 60 lines in one search, all at once versus a window of max_active
** sentences refilled as they finish (sentences join a running search at
** other positions: models/scorer.c op_add, models/model.h row_pos).
** Same n-best lists up to float rounding (the products' row counts differ,
** which may swap near ties); the scorer must really have added sentences. */
static void test_topup(const char *dir, const char *sv, const char *tv) {
    mt_translate_params p = mt_translate_default_params();
    p.beam_size = 4;
    p.normalize = 0.6f;
    p.n_best = true;
    p.length_per_sentence = true; /* as top-up searches always are */
    fixture fx;
    if (!fixture_open(&fx, dir, sv, tv, &p, 1, NULL)) {
        fixture_close(&fx);
        return;
    }
    mt_tr_input in[60];
    mt_tr_result ref[60], got[60];
    memset(in, 0, sizeof in);
    for (int i = 0; i < 60; i++)
        in[i].src[0] = fx.input.s[i];
    CHECK_OK(mt_translate(fx.w, in, 60, ref, NULL, NULL));
    mt_translator *tr = (mt_translator *)fx.tr;
    const int windows[] = {1, 3, 8, 24};
    int64_t all_tfolds = 0;
    for (size_t k = 0; k < sizeof windows / sizeof windows[0]; k++) {
        tr->p.max_active = windows[k];
        mt_model_scorer_stats st0 = mt_translate_worker_stats(fx.w);
        if (!CHECK_OK(mt_translate(fx.w, in, 60, got, NULL, NULL))) break;
        mt_model_scorer_stats st1 = mt_translate_worker_stats(fx.w);
        int64_t adds = st1.adds - st0.adds, tfolds = st1.topup_folds - st0.topup_folds;
        int same_best = 0, same_hyps = 0, n_hyps = 0;
        double worst = 0;
        for (int i = 0; i < 60; i++) {
            same_best += got[i].n_hyps > 0 && ref[i].n_hyps > 0 &&
                         !strcmp(got[i].hyps[0].text, ref[i].hyps[0].text);
            for (int h = 0; h < ref[i].n_hyps; h++) {
                n_hyps++;
                for (int j = 0; j < got[i].n_hyps; j++) {
                    const mt_tr_hyp *a = &got[i].hyps[j], *b = &ref[i].hyps[h];
                    if (a->n_tokens != b->n_tokens ||
                        memcmp(a->tokens, b->tokens, sizeof(int32_t) * (size_t)a->n_tokens))
                        continue; /* (texts may repeat with other pieces) */
                    same_hyps++;
                    double d = fabs(got[i].hyps[j].path_score - ref[i].hyps[h].path_score);
                    if (!(d <= worst)) worst = d;
                    break;
                }
            }
            mt_tr_result_clear(&got[i]);
        }
        fprintf(stderr,
                "%s top-up window %d: %lld additions, %lld folds of rows at different positions, "
                "%d of 60 "
                "best equal, %d of %d n-best hypotheses found, path scores within %.2g\n",
                dir, windows[k], (long long)adds, (long long)tfolds, same_best, same_hyps, n_hyps,
                worst);
        all_tfolds += tfolds;
        CHECK(adds > 0, "%s window %d: no sentence joined a running search", dir, windows[k]);
        CHECK(same_best >= 59, "%s window %d: %d of 60 best translations equal", dir, windows[k],
              same_best);
        CHECK(same_hyps >= n_hyps - 4, "%s window %d: %d of %d n-best hypotheses", dir, windows[k],
              same_hyps, n_hyps);
        CHECK(worst < 1e-3, "%s window %d: path scores differ by %g", dir, windows[k], worst);
    }
    /* the caches were frozen with rows at different positions (sentences
    ** that joined read the history from their own first slot) */
    CHECK(all_tfolds > 0 || !mt_model_can_fold(fx.am.models[0]),
          "%s: no fold with rows at different positions", dir);
    for (int i = 0; i < 60; i++)
        mt_tr_result_clear(&ref[i]);
    fixture_close(&fx);
}

/* ------------------------------------------------- vocabulary sizes */

/* A SentencePiece vocabulary of another size than the model's dim-vocabs
** is refused at load, naming both sizes (the default model's vocabulary
** has 8000 pieces, the fixture's model 4000 rows; issue 38, finding 2). */
static void test_vocab_size_mismatch(void) {
    const char *big = MT_SOURCE_DIR "/assets/models/en-de/vocab.spm";
    const char *mp[1] = {DATA "transformer-tiny/model.npz"};
    const char *vp[2] = {DATA "transformer-tiny/vocab.spm", big};
    mt_ensemble am;
    mt_status rc = mt_ensemble_load(&am, mp, 1, NULL, vp, 2);
    CHECK(rc == MT_ERR_INVALID && strstr(mt_errmsg(), "8000 pieces") &&
              strstr(mt_errmsg(), "expects 4000") && strstr(mt_errmsg(), "input 2"),
          "an 8000-piece target vocabulary with a 4000-row model: %s", mt_errmsg());
    mt_ensemble_free(&am);
    vp[0] = big;
    vp[1] = DATA "transformer-tiny/vocab.spm";
    rc = mt_ensemble_load(&am, mp, 1, NULL, vp, 2);
    CHECK(rc == MT_ERR_INVALID && strstr(mt_errmsg(), "input 1"), "the source too: %s",
          mt_errmsg());
    mt_ensemble_free(&am);
}

/* A model with a non-finite weight (a diverged training, a damaged .bin)
** is refused at load, naming the parameter (issue 38, finding 1): before,
** every sentence translated to an empty line. */
static void test_nonfinite_weights(void) {
    mt_model_file *f = NULL;
    if (!CHECK_OK(mt_model_file_read(DATA "transformer-tiny/model.npz", &f))) return;
    const mt_tensor *w = mt_model_file_find(f, "Wemb");
    char path[600];
    snprintf(path, sizeof path, "%s/mtpe_nan_%d.npz", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    if (CHECK(w && w->dtype == MT_F32, "Wemb in float32")) {
        ((float *)w->data)[12345] = NAN;
        CHECK_STATUS(mt_model_file_write(path, f));
        mt_model *m = NULL;
        mt_status rc = mt_model_load(path, NULL, &m);
        CHECK(rc == MT_ERR_FORMAT && m == NULL && strstr(mt_errmsg(), "Wemb") &&
                  strstr(mt_errmsg(), "NaN") && strstr(mt_errmsg(), "12345"),
              "NaN in Wemb refused: %s", mt_errmsg());
        ((float *)w->data)[12345] = -INFINITY;
        CHECK_STATUS(mt_model_file_write(path, f));
        rc = mt_model_load(path, NULL, &m);
        CHECK(rc == MT_ERR_FORMAT && strstr(mt_errmsg(), "infinity"), "-Inf refused: %s",
              mt_errmsg());
        mt_model_free(m);
        remove(path);
    }
    mt_model_file_free(f);
}

/* ------------------------------------------------------- --kv-cache */

/* The 60 fixture lines in one search with these settings; returns how many
** got a translation (and alignments when asked); best[i] (may be NULL)
** receives line i's best text (free). */
static int translate_all(mt_gemm_type g, mt_kv_cache kv, int32_t max_active, bool align,
                         char **best, mt_model_scorer_stats *stats) {
    mt_translate_params p = mt_translate_default_params();
    p.beam_size = 4;
    p.gemm_type = g;
    p.kv_cache = kv;
    p.max_active = max_active;
    p.alignment = align;
    fixture fx;
    int n = 0;
    if (fixture_open(&fx, "transformer-tiny", "vocab.spm", "vocab.spm", &p, 1, NULL)) {
        mt_tr_input in[60];
        mt_tr_result r[60];
        memset(in, 0, sizeof in);
        for (int i = 0; i < 60; i++)
            in[i].src[0] = fx.input.s[i];
        if (CHECK_OK(mt_translate(fx.w, in, 60, r, NULL, NULL))) {
            if (stats) *stats = mt_translate_worker_stats(fx.w);
            for (int i = 0; i < 60; i++) {
                if (r[i].n_hyps > 0 && (!align || r[i].hyps[0].align != NULL)) n++;
                if (best && r[i].n_hyps > 0) best[i] = strdup(r[i].hyps[0].text);
                mt_tr_result_clear(&r[i]);
            }
        }
    }
    fixture_close(&fx);
    return n;
}

/* The precision of the decoder caches: auto is f16 with an integer gemm
** type only; with int8 products, the projected contexts and the frozen
** history (read by every step) take 2 bytes per value in float16 and 4 in
** float32; float16 caches with
** float32 products give the same best translations as float32 caches on
** most lines (f16 rounding of the keys and values only). */
static void test_kv_cache(void) {
    mt_kv_cache kv;
    CHECK(mt_kv_cache_parse("float16", &kv) == MT_OK && kv == MT_KV_FLOAT16, "parse float16");
    CHECK(mt_kv_cache_parse("bfloat16", &kv) == MT_OK && kv == MT_KV_BFLOAT16, "parse bfloat16");
    CHECK(mt_kv_cache_resolve(MT_KV_BFLOAT16, MT_GEMM_FLOAT32) == MT_CACHE_F16_BF16_CONTEXT &&
              mt_kv_cache_resolve(MT_KV_AUTO, MT_GEMM_INT16) == MT_CACHE_F16 &&
              mt_kv_cache_resolve(MT_KV_FLOAT16, MT_GEMM_INT8) == MT_CACHE_F16,
          "bfloat16 contexts only when asked for (with f16 histories)");
    CHECK(mt_kv_cache_parse("f16", &kv) == MT_ERR_INVALID && strstr(mt_errmsg(), "f16"),
          "parse f16: %s", mt_errmsg());
    CHECK(mt_kv_cache_resolve(MT_KV_AUTO, MT_GEMM_INT8) == MT_CACHE_F16_INT8_KEYS &&
              mt_kv_cache_resolve(MT_KV_AUTO, MT_GEMM_FLOAT32) == MT_CACHE_F32 &&
              mt_kv_cache_resolve(MT_KV_FLOAT16, MT_GEMM_FLOAT32) == MT_CACHE_F16 &&
              mt_kv_cache_resolve(MT_KV_FLOAT32, MT_GEMM_INT16) == MT_CACHE_F32,
          "kv cache precision by gemm type");
    size_t bytes[2] = {0, 0}, values[2] = {0, 0};
    char *best[2][60];
    memset(best, 0, sizeof best);
    for (int k = 0; k < 4; k++) {
        mt_model_scorer_stats st;
        memset(&st, 0, sizeof st);
        translate_all(k < 2 ? MT_GEMM_INT8 : MT_GEMM_FLOAT32, k % 2 ? MT_KV_FLOAT32 : MT_KV_FLOAT16,
                      0, false, k >= 2 ? best[k - 2] : NULL, &st);
        if (k < 2) {
            bytes[k] = st.cache_bytes;
            values[k] = st.cache_values;
        }
    }
    fprintf(stderr,
            "kv cache: int8, %zu values in %zu bytes as float16, %zu in %zu as float32 "
            "after the last step\n",
            values[0], bytes[0], values[1], bytes[1]);
    CHECK(values[0] > 0 && bytes[0] == 2 * values[0] && values[1] > 0 && bytes[1] == 4 * values[1],
          "caches: %zu values in %zu bytes (float16), %zu in %zu (float32)", values[0], bytes[0],
          values[1], bytes[1]);
    int same = 0;
    for (int i = 0; i < 60; i++) {
        same += best[0][i] && best[1][i] && !strcmp(best[0][i], best[1][i]);
        free(best[0][i]);
        free(best[1][i]);
    }
    fprintf(stderr,
            "kv cache: float32 products, %d of 60 best translations equal with float16 "
            "caches\n",
            same);
    CHECK(same >= 54, "float16 caches changed %d of 60 float32 translations", 60 - same);
}

static int same_lines(char **a, char **b) {
    int n = 0;
    for (int i = 0; i < 60; i++)
        n += a[i] && b[i] && !strcmp(a[i], b[i]);
    return n;
}

/* Every cache precision (mtpe translate follows --gemm-type; `mtpe bench
** translate --kv-cache` times the others) translates all 60 lines, also
** with top-up (contexts padded and trimmed) and alignments (the aligned
** layer reads the caches through the composed ops); int8 keys are what
** auto gives with int8 products, and keep at least half of the float16
** caches' translations (the fixture's outputs are fragile). */
static void test_kv_cache_variants(void) {
    static const struct {
        mt_gemm_type g;
        mt_kv_cache kv;
    } v[] = {{MT_GEMM_INT8, MT_KV_AUTO},       {MT_GEMM_INT8, MT_KV_FLOAT32},
             {MT_GEMM_FLOAT32, MT_KV_FLOAT16}, {MT_GEMM_INT8, MT_KV_BFLOAT16},
             {MT_GEMM_INT8, MT_KV_FLOAT16},    {MT_GEMM_INT8, MT_KV_INT8}};
    enum { N = sizeof v / sizeof v[0] };
    char *best[N][60];
    memset(best, 0, sizeof best);
    for (int k = 0; k < N; k++) {
        int n = translate_all(v[k].g, v[k].kv, 0, false, best[k], NULL);
        CHECK(n == 60, "gemm %d, caches %d: %d of 60 lines translated", (int)v[k].g, (int)v[k].kv,
              n);
    }
    CHECK(same_lines(best[5], best[0]) == 60, "int8 keys are auto's with int8 products (%d of 60)",
          same_lines(best[5], best[0]));
    int k8 = same_lines(best[5], best[4]);
    fprintf(stderr, "kv cache: int8 keys keep %d of 60 translations of float16 caches\n", k8);
    CHECK(k8 >= 30, "int8 keys: only %d of 60 lines equal to float16 caches", k8);
    for (int k = 0; k < N; k++)
        for (int i = 0; i < 60; i++)
            free(best[k][i]);
    static const mt_kv_cache extra[] = {MT_KV_BFLOAT16, MT_KV_INT8};
    for (int k = 0; k < 2; k++) {
        int n = translate_all(MT_GEMM_INT8, extra[k], 1, false, NULL, NULL);
        CHECK(n == 60, "caches %d with top-up: %d of 60", (int)extra[k], n);
        n = translate_all(MT_GEMM_INT8, extra[k], 0, true, NULL, NULL);
        CHECK(n == 60, "caches %d with alignments: %d of 60 aligned", (int)extra[k], n);
    }
}

/* ------------------------------------------------------------ n-best */

/* Fields of a Marian n-best line: id, text, F0, norm. */
static int parse_nbest(char *line, int *id, char **text, double *f0, double *norm) {
    char *a = strstr(line, " ||| ");
    if (!a) return 0;
    *a = '\0';
    *id = atoi(line);
    *text = a + 5;
    char *b = strstr(*text, " ||| F0= ");
    if (!b) return 0;
    *b = '\0';
    char *c = b + 9, *end = NULL;
    *f0 = strtod(c, &end);
    char *d = strstr(end, " ||| ");
    if (!d) return 0;
    *norm = strtod(d + 5, NULL);
    return 1;
}

static void test_nbest(void) {
    mt_translate_params p = mt_translate_default_params();
    p.beam_size = 4;
    p.normalize = 0.6f;
    p.n_best = true;
    p.word_scores = true;
    fixture fx;
    lines want;
    if (!fixture_open(&fx, "transformer-tiny", "vocab.spm", "vocab.spm", &p, 1, NULL) ||
        !CHECK(read_lines(DATA "transformer-tiny/nbest4.out", &want), "nbest4.out")) {
        fixture_close(&fx);
        return;
    }
    int at = 0, compared = 0;
    double maxd = 0;
    for (int i = 0; i < fx.input.n; i++) {
        mt_tr_result r;
        if (!CHECK_OK(translate_line(&fx, fx.input.s[i], NULL, &r))) break;
        CHECK(r.n_hyps == 4, "line %d: %d hypotheses", i + 1, r.n_hyps);
        bool empty = fx.input.s[i][0] == '\0';
        for (int h = 0; h < r.n_hyps; h++) {
            const mt_tr_hyp *y = &r.hyps[h];
            if (h > 0) {
                CHECK(y->norm_score <= r.hyps[h - 1].norm_score, "line %d: n-best not sorted",
                      i + 1);
                for (int k = 0; k < h && !empty; k++)
                    CHECK(y->n_tokens != r.hyps[k].n_tokens ||
                              memcmp(y->tokens, r.hyps[k].tokens,
                                     sizeof(int32_t) * (size_t)y->n_tokens) != 0,
                          "line %d: hypotheses %d and %d are the same", i + 1, k, h);
            }
            if (!empty) {
                CHECK_CLOSE(y->norm_score, y->path_score / powf((float)y->length, 0.6f), 1e-5, 1e-6,
                            "line %d hyp %d: normalised score", i + 1, h);
                CHECK_CLOSE(y->model_scores[0], y->path_score, 1e-4, 1e-6, "line %d hyp %d: F0",
                            i + 1, h);
                double sum = 0;
                for (int t = 0; t < y->length; t++)
                    sum += y->word_scores[t];
                CHECK_CLOSE(sum, y->path_score, 1e-3, 1e-5, "line %d hyp %d: word scores", i + 1,
                            h);
            }
            /* Marian's line */
            int id = -1;
            char *text = NULL;
            double f0 = 0, norm = 0;
            if (!CHECK(at < want.n && parse_nbest(want.s[at], &id, &text, &f0, &norm),
                       "nbest4.out line %d", at + 1))
                continue;
            at++;
            CHECK(id == i, "nbest4.out: id %d, want %d", id, i);
            CHECK(!strcmp(text, y->text), "line %d hyp %d: '%s', Marian '%s'", i + 1, h, y->text,
                  text);
            CHECK_CLOSE(y->model_scores[0], f0, 1e-3, 1e-5, "line %d hyp %d F0", i + 1, h);
            CHECK_CLOSE(y->norm_score, norm, 1e-3, 1e-5, "line %d hyp %d score", i + 1, h);
            if (fabs(y->model_scores[0] - f0) > maxd) maxd = fabs(y->model_scores[0] - f0);
            compared++;
        }
        mt_tr_result_clear(&r);
    }
    CHECK(at == want.n, "compared %d of %d n-best lines", at, want.n);
    fprintf(stderr, "n-best: %d hypotheses equal to nbest4.out, F0 max abs diff %.2g\n", compared,
            maxd);
    lines_free(&want);
    fixture_close(&fx);
}

/* ------------------------------------------------------------ prefix */

static void test_prefix(void) {
    mt_translate_params p = mt_translate_default_params();
    p.beam_size = 4;
    p.normalize = 0.6f;
    p.n_best = true;
    fixture fx;
    if (!fixture_open(&fx, "transformer-tiny", "vocab.spm", "vocab.spm", &p, 1, NULL)) {
        fixture_close(&fx);
        return;
    }
    const mt_vocab *tv = fx.am.vocabs[1];
    const char *prefixes[] = {"Benutzer nicht", "Das ist ein", "Keine"};
    for (int k = 0; k < 3; k++) {
        int32_t *ids = NULL;
        int64_t n = 0;
        CHECK_OK(mt_vocab_encode(tv, prefixes[k], 0, &ids, &n));
        mt_tr_result r;
        if (CHECK_OK(translate_line(&fx, fx.input.s[1], prefixes[k], &r))) {
            CHECK(r.n_hyps == 4, "prefix '%s': %d hypotheses", prefixes[k], r.n_hyps);
            for (int h = 0; h < r.n_hyps; h++) {
                const mt_tr_hyp *y = &r.hyps[h];
                CHECK(y->prefix_len == n && y->n_tokens >= n &&
                          memcmp(y->tokens, ids, sizeof(int32_t) * (size_t)n) == 0,
                      "prefix '%s' hyp %d does not start with the prefix", prefixes[k], h);
                CHECK(!strncmp(y->text, prefixes[k], strlen(prefixes[k])),
                      "prefix '%s' hyp %d: '%s'", prefixes[k], h, y->text);
            }
            if (k == 0 && r.n_hyps > 0)
                fprintf(stderr, "prefix '%s' of '%s' -> '%s'\n", prefixes[k], fx.input.s[1],
                        r.hyps[0].text);
            mt_tr_result_clear(&r);
        }
        mt_free(ids);
    }
    /* the prefix of Marian's own best translation gives that translation */
    lines want;
    if (CHECK(read_lines(DATA "transformer-tiny/beam4.out", &want), "beam4.out")) {
        mt_tr_result r;
        if (CHECK_OK(translate_line(&fx, fx.input.s[1], "Benutzer", &r)) && r.n_hyps > 0)
            CHECK(!strcmp(r.hyps[0].text, want.s[1]), "forced 'Benutzer': '%s', want '%s'",
                  r.hyps[0].text, want.s[1]);
        mt_tr_result_clear(&r);
        lines_free(&want);
    }
    fixture_close(&fx);
}

/* ------------------------------------------------ edges of the input */

static void test_edges(void) {
    mt_translate_params p = mt_translate_default_params();
    p.beam_size = 2;
    p.n_best = true;
    p.alignment = true;
    fixture fx;
    if (!fixture_open(&fx, "transformer-tiny", "vocab.spm", "vocab.spm", &p, 1, NULL)) {
        fixture_close(&fx);
        return;
    }
    /* 10,000 tokens */
    size_t n = 10000 * 5;
    char *big = malloc(n + 1);
    for (size_t i = 0; i < 10000; i++)
        memcpy(big + 5 * i, "word ", 5);
    big[n - 1] = '\0';
    mt_tr_input in[4] = {{.src = {""}}, {.src = {big}}, {.src = {"Save"}}, {.src = {""}}};
    mt_tr_result r[4];
    if (CHECK_OK(mt_translate(fx.w, in, 4, r, NULL, NULL))) {
        CHECK(r[0].n_hyps == 2 && r[0].hyps[0].text[0] == '\0' && r[0].hyps[0].n_tokens == 0,
              "empty line: %d hyps", r[0].n_hyps);
        if (r[0].n_hyps == 2) {
            CHECK(r[0].hyps[0].model_scores[0] < 0 &&
                      r[0].hyps[0].model_scores[0] == r[0].hyps[1].model_scores[0],
                  "empty line: F0 %g", (double)r[0].hyps[0].model_scores[0]);
            CHECK(r[0].hyps[0].norm_score == 0.0f, "empty line: score %g",
                  (double)r[0].hyps[0].norm_score);
            CHECK(r[0].hyps[0].src_len == 1 && r[0].hyps[0].align && r[0].hyps[0].align[0] == 1.0f,
                  "empty line: alignment");
        }
        CHECK(r[1].skipped && r[1].n_hyps == 0, "10,000 tokens: not skipped");
        CHECK(!r[2].skipped && r[2].n_hyps == 2 && r[2].hyps[0].text[0] != '\0',
              "a line after the long one");
        CHECK(r[3].n_hyps == 2 && r[3].hyps[0].text[0] == '\0', "second empty line");
    }
    for (int i = 0; i < 4; i++)
        mt_tr_result_clear(&r[i]);
    /* cropped */
    mt_translator *t2 = NULL;
    mt_translate_worker *w2 = NULL;
    p.max_length_crop = true;
    p.max_length = 100;
    p.n_best = false;
    if (CHECK_OK(mt_translator_init(&fx.am, NULL, &p, &t2)) &&
        CHECK_OK(mt_translate_worker_init(t2, &w2))) {
        mt_tr_sentence s;
        if (CHECK_OK(mt_tr_encode(t2, &in[1], &s))) {
            CHECK(s.cropped && !s.skipped && s.len[0] == 100 && s.raw_len == 10001 &&
                      s.ids[0][99] == mt_vocab_eos_id(fx.am.vocabs[0]),
                  "cropped to %d tokens", (int)s.len[0]);
            mt_tr_result rr;
            if (CHECK_OK(mt_translate_encoded(w2, &s, 1, &rr, NULL, NULL)))
                CHECK(rr.n_hyps == 1 && rr.hyps[0].src_len == 100 && rr.hyps[0].length <= 300,
                      "cropped: source %d, output %d tokens", (int)rr.hyps[0].src_len,
                      (int)rr.hyps[0].length);
            mt_tr_result_clear(&rr);
            mt_tr_sentence_clear(&s);
        }
    }
    mt_translate_worker_free(w2);
    mt_translator_free(t2);
    /* invalid UTF-8 */
    mt_tr_sentence s;
    mt_tr_input bad = {.src = {"caf\xc3("}};
    CHECK(mt_tr_encode(fx.tr, &bad, &s) == MT_ERR_INVALID, "invalid UTF-8 accepted");
    free(big);
    fixture_close(&fx);
}

/* ----------------------------------------------------- cancellation */

static int polls;
static bool cancel_after_5(void *user) {
    (void)user;
    return ++polls > 5;
}

static void test_cancel(void) {
    mt_translate_params p = mt_translate_default_params();
    p.beam_size = 4;
    fixture fx;
    if (fixture_open(&fx, "transformer-tiny", "vocab.spm", "vocab.spm", &p, 1, NULL)) {
        mt_tr_input in = {.src = {fx.input.s[0]}};
        mt_tr_result r;
        polls = 0;
        CHECK(mt_translate(fx.w, &in, 1, &r, cancel_after_5, NULL) == MT_ABORTED,
              "cancel did not abort");
        CHECK(r.n_hyps == 0 && r.hyps == NULL, "results after a cancel");
        /* the worker is still usable */
        if (CHECK_OK(mt_translate(fx.w, &in, 1, &r, NULL, NULL)))
            CHECK(r.n_hyps == 1, "translation after a cancel");
        /* the same model borrowed (as the trainer would lend its own) */
        mt_ensemble bm;
        mt_translator *bt = NULL;
        mt_translate_worker *bw = NULL;
        mt_ensemble_borrow(&bm, fx.am.models[0], fx.am.vocabs, true);
        mt_tr_result r2;
        if (CHECK_OK(mt_translator_init(&bm, NULL, &p, &bt)) &&
            CHECK_OK(mt_translate_worker_init(bt, &bw)) &&
            CHECK_OK(mt_translate(bw, &in, 1, &r2, NULL, NULL)) && r.n_hyps == 1) {
            CHECK(r2.n_hyps == 1 && !strcmp(r2.hyps[0].text, r.hyps[0].text),
                  "borrowed model translates differently");
            mt_tr_result_clear(&r2);
        }
        mt_translate_worker_free(bw);
        mt_translator_free(bt);
        mt_ensemble_free(&bm);
        CHECK(bm.models[0] == NULL && fx.am.models[0] != NULL, "borrowed models were freed");
        mt_tr_result_clear(&r);
    }
    fixture_close(&fx);
}

/* --------------------------------------------------------- ensembles */

static void test_ensemble(void) {
    mt_translate_params p = mt_translate_default_params();
    p.beam_size = 4;
    p.normalize = 0.6f;
    p.n_best = true;
    const float w[2] = {0.5f, 0.5f};
    fixture fx;
    lines want;
    if (fixture_open(&fx, "transformer-tiny", "vocab.spm", "vocab.spm", &p, 2, w) &&
        CHECK(read_lines(DATA "transformer-tiny/beam4.out", &want), "beam4.out")) {
        int same = 0;
        for (int i = 0; i < 20; i++) {
            mt_tr_result r;
            if (!CHECK_OK(translate_line(&fx, fx.input.s[i], NULL, &r))) break;
            if (r.n_hyps > 0) {
                same += !strcmp(r.hyps[0].text, want.s[i]);
                CHECK(r.hyps[0].model_scores[0] == r.hyps[0].model_scores[1],
                      "line %d: F0 %g != F1 %g", i + 1, (double)r.hyps[0].model_scores[0],
                      (double)r.hyps[0].model_scores[1]);
            }
            mt_tr_result_clear(&r);
        }
        /* 0.5 a + 0.5 a may round differently from a: allow one near-tie */
        CHECK(same >= 19, "ensemble of a model with itself: %d of 20 lines as beam4.out", same);
        fprintf(stderr, "ensemble (model x2, weights 0.5): %d of 20 lines equal to beam4.out\n",
                same);
        lines_free(&want);
    }
    fixture_close(&fx);
}

/* ---------------------------------------------------- bounded memory */

typedef struct spy {
    mt_scorer inner;
    bool counting;
    int64_t steps, allocs;
} spy;

static int32_t spy_vocab(void *u) {
    spy *s = u;
    return s->inner.ops->vocab_size(s->inner.user);
}
static mt_status spy_start(void *u, const int32_t *sent, int32_t n, void **state) {
    spy *s = u;
    return s->inner.ops->start(s->inner.user, sent, n, state);
}
static mt_status spy_step(void *u, void *state, const mt_scorer_step *in, float *lp, float *al) {
    spy *s = u;
    uint64_t a0 = mt_alloc_get_stats().n_allocs;
    mt_status rc = s->inner.ops->step(s->inner.user, state, in, lp, al);
    if (s->counting) s->allocs += (int64_t)(mt_alloc_get_stats().n_allocs - a0);
    s->steps++;
    return rc;
}
static void spy_finish(void *u, void *state) {
    spy *s = u;
    s->inner.ops->finish(s->inner.user, state);
}
static const mt_scorer_ops spy_ops = {spy_vocab, spy_start, NULL, spy_step, spy_finish, NULL, NULL};

static void test_bounded_memory(void) {
    mt_ensemble am;
    const char *mp[1] = {DATA "transformer-aan/model.npz"};
    const char *vp[2] = {DATA "transformer-aan/vocab.en.spm", DATA "transformer-aan/vocab.de.spm"};
    lines in;
    if (!CHECK_OK(mt_ensemble_load(&am, mp, 1, NULL, vp, 2)) ||
        !CHECK(read_lines(DATA "transformer-aan/input.en", &in), "input")) {
        mt_ensemble_free(&am);
        return;
    }
    mt_model_scorer *ms = NULL;
    mt_beam *beam = NULL;
    int32_t *ids[3] = {0};
    int64_t len[3] = {0};
    /* line 55 (150 tokens; the model repeats itself up to the length
    ** limit) with two short ones: a padded batch, sentences finishing early */
    const int pick[3] = {54, 1, 51};
    mt_batch_seq seqs[3];
    int32_t src_len[3];
    for (int i = 0; i < 3; i++) {
        CHECK_OK(mt_vocab_encode(am.vocabs[0], in.s[pick[i]], MT_VOCAB_ADD_EOS, &ids[i], &len[i]));
        seqs[i] = (mt_batch_seq){ids[i], (int32_t)len[i]};
        src_len[i] = (int32_t)len[i];
    }
    if (CHECK_OK(mt_model_scorer_init(am.models[0], MT_GEMM_FLOAT32, MT_KV_FLOAT32, &ms)) &&
        CHECK_OK(mt_beam_init(&beam))) {
        mt_model_scorer_set_batch(ms, seqs, 3, 1);
        spy sp = {mt_model_scorer_get(ms), false, 0, 0};
        mt_scorer sc = {&spy_ops, &sp};
        mt_beam_params bp = mt_beam_default_params();
        bp.beam_size = 4;
        bp.normalize = 0.6f;
        mt_beam_input bi = {.n_sentences = 3, .src_len = src_len};
        const mt_beam_result *res = NULL;
        /* a short search (length limit 0.3 x the longest source), then the
        ** long one twice: the second time counting allocations */
        bp.max_length_factor = 0.3f;
        CHECK_OK(mt_beam_search(beam, &bp, &sc, 1, &bi, &res));
        mt_model_scorer_stats short_st = mt_model_scorer_get_stats(ms);
        bp.max_length_factor = 3.0f;
        int32_t first_len = 0;
        for (int round = 0; round < 2; round++) {
            sp.counting = round == 1;
            sp.steps = 0;
            if (!CHECK_OK(mt_beam_search(beam, &bp, &sc, 1, &bi, &res))) break;
            if (round == 0)
                first_len = res[0].hyps[0].length;
            else
                CHECK(res[0].hyps[0].length == first_len, "second search differs");
        }
        mt_model_scorer_stats st = mt_model_scorer_get_stats(ms);
        fprintf(stderr,
                "bounded memory: %lld steps, longest output %d tokens, %lld allocations in the "
                "steps of the second search; step graphs %.2f MB (%.2f MB after a 46-step "
                "search), encoder graphs %.1f MB; %lld rows, %lld purges\n",
                (long long)sp.steps, (int)first_len, (long long)sp.allocs,
                (double)st.step_bytes / 1e6, (double)short_st.step_bytes / 1e6,
                (double)st.enc_bytes / 1e6, (long long)st.rows, (long long)st.purges);
        CHECK(sp.steps > 300, "only %lld steps: not a long search", (long long)sp.steps);
        CHECK(sp.allocs == 0, "%lld allocations in steady-state steps", (long long)sp.allocs);
        CHECK(st.purges >= 1, "finished sentences were never dropped");
        /* The average-attention decoder's state does not grow with the
        ** output: 14 times more steps must not need more step memory (the
        ** whole-batch graph needed 16 x 4000 x 4 bytes per row and step,
        ** over 400 MB here).  The encoder graphs depend on the sources only. */
        CHECK(st.step_bytes <= short_st.step_bytes + short_st.step_bytes / 4,
              "step graphs grew from %zu to %zu bytes", short_st.step_bytes, st.step_bytes);
        CHECK(st.enc_bytes == short_st.enc_bytes, "encoder graphs grew from %zu to %zu bytes",
              short_st.enc_bytes, st.enc_bytes);
    }
    for (int i = 0; i < 3; i++)
        mt_free(ids[i]);
    mt_beam_free(beam);
    mt_model_scorer_free(ms);
    lines_free(&in);
    mt_ensemble_free(&am);
}

/* ------------------------------------------------ allocation failures */

/* Translator, worker and a batch of three sentences (one empty, one with a
** prefix) with the N-th try-allocation and all later ones failing, for every
** N until it succeeds: always a clean status with a message, nothing leaked. */
static mt_status fault_scenario(void *ctx) {
    const mt_ensemble *am = ctx;
    mt_translate_params p = mt_translate_default_params();
    p.beam_size = 2;
    p.n_best = true;
    p.word_scores = true;
    p.alignment = true;
    p.max_active = 1; /* top-up: sentences join the running search */
    mt_translator *t = NULL;
    mt_translate_worker *w = NULL;
    mt_tr_input in[4] = {{.src = {"Open the file."}},
                         {.src = {""}},
                         {.src = {"Save"}, .prefix = "Speichern"},
                         {.src = {"Close all windows"}}};
    mt_tr_result r[4];
    memset(r, 0, sizeof r);
    mt_status rc = mt_translator_init(am, NULL, &p, &t);
    if (rc == MT_OK) rc = mt_translate_worker_init(t, &w);
    if (rc == MT_OK) rc = mt_translate(w, in, 4, r, NULL, NULL);
    if (rc == MT_OK && (r[0].n_hyps != 2 || r[2].n_hyps != 2 || r[3].n_hyps != 2 ||
                        mt_translate_worker_stats(w).adds < 1))
        rc = mt_seterr(MT_ERR_INVALID, "wrong results");
    for (int i = 0; i < 4; i++)
        mt_tr_result_clear(&r[i]);
    mt_translate_worker_free(w);
    mt_translator_free(t);
    return rc;
}

static void test_alloc_failures(void) {
    mt_ensemble am;
    const char *mp[1] = {DATA "transformer-tiny/model.npz"};
    const char *vp[2] = {DATA "transformer-tiny/vocab.spm", DATA "transformer-tiny/vocab.spm"};
    if (!CHECK_OK(mt_ensemble_load(&am, mp, 1, NULL, vp, 2))) {
        mt_ensemble_free(&am);
        return;
    }
    test_alloc_fail_sweep(fault_scenario, &am, 5000);
    mt_ensemble_free(&am);
}

/* ------------------------------------------------------------- terms */

/* Terms (translator.h "Terms"): encoding and dropping rules, and the
** translation holding them, left-to-right and right-to-left. */
static void test_terms(const char *dir) {
    mt_translate_params p = mt_translate_default_params();
    p.beam_size = 4;
    p.normalize = 0.6f;
    fixture fx;
    if (!fixture_open(&fx, dir, "vocab.spm", "vocab.spm", &p, 1, NULL)) {
        fixture_close(&fx);
        return;
    }
    const mt_vocab *tv = fx.am.vocabs[1];
    int32_t *want = NULL;
    int64_t nw = 0;
    CHECK_OK(mt_vocab_encode(tv, "Das Gebäude", 0, &want, &nw));
    for (int64_t a = 0, b = nw - 1; fx.am.right_left && a < b; a++, b--) { /* model order */
        int32_t x = want[a];
        want[a] = want[b];
        want[b] = x;
    }
    /* "" encodes to nothing; the second "Gebäude" repeats the first; the
    ** first lies inside "Das Gebäude" (word-initial pieces both) */
    const char *terms[] = {"Gebäude", "", "Gebäude", "Das Gebäude"};
    mt_tr_input in = {.src = {fx.input.s[1]}, .terms = terms, .n_terms = 4};
    mt_tr_sentence s;
    if (CHECK_OK(mt_tr_encode(fx.tr, &in, &s))) {
        CHECK(s.n_terms == 1 && s.term_len[0] == nw &&
                  !memcmp(s.term_ids, want, sizeof(int32_t) * (size_t)nw),
              "%s: %d terms kept, want only 'Das Gebäude'", dir, (int)s.n_terms);
        mt_tr_sentence_clear(&s);
    }
    mt_free(want);
    /* the translation holds the term; without it, it does not */
    const char *one[] = {"Gebäude"};
    for (int k = 0; k < 3; k++) {
        mt_tr_result r0, r1;
        mt_tr_input a = {.src = {fx.input.s[k]}};
        mt_tr_input b = {.src = {fx.input.s[k]}, .terms = one, .n_terms = 1};
        if (CHECK_OK(mt_translate(fx.w, &a, 1, &r0, NULL, NULL))) {
            CHECK(!strstr(r0.hyps[0].text, "Gebäude") && r0.hyps[0].terms_met,
                  "%s line %d: Gebäude without the term", dir, k);
            mt_tr_result_clear(&r0);
        }
        if (CHECK_OK(mt_translate(fx.w, &b, 1, &r1, NULL, NULL))) {
            CHECK(strstr(r1.hyps[0].text, "Gebäude") && r1.hyps[0].terms_met,
                  "%s line %d: no Gebäude with the term: %s", dir, k, r1.hyps[0].text);
            mt_tr_result_clear(&r1);
        }
    }
    fixture_close(&fx);
}

int main(void) {
    test_one_best("transformer-tiny", "vocab.spm", "vocab.spm", 1, 0.0f, "beam1.out");
    test_one_best("transformer-tiny", "vocab.spm", "vocab.spm", 4, 0.6f, "beam4.out");
    test_one_best("transformer-aan", "vocab.en.spm", "vocab.de.spm", 4, 0.6f, "beam4.out");
    test_nbest();
    test_prefix();
    test_terms("transformer-tiny");
    test_terms("transformer-tiny-r2l");
    test_edges();
    test_topup("transformer-tiny", "vocab.spm", "vocab.spm");
    test_topup("transformer-aan", "vocab.en.spm", "vocab.de.spm");
    test_topup("transformer-tiny-r2l", "vocab.spm", "vocab.spm");
    test_vocab_size_mismatch();
    test_nonfinite_weights();
    test_kv_cache();
    test_kv_cache_variants();
    test_cancel();
    test_ensemble();
    test_bounded_memory();
    test_alloc_failures();
    TEST_MAIN_END();
}
