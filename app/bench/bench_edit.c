/*
** bench_edit.c: `mtpe bench edit [-m MODEL -v SRC TRG] [--segments N]
**                [--repeat N] [--completion-beam N] [-b N]`
**
** The editor's completion latency: the time from the last keystroke's
** request (app_edit_session_complete, what the ui calls after its 30 ms
** debounce) to the completion reaching the ui (the sink's completion call),
** measured through the editor's own session with one worker thread and
** single-threaded BLAS (one core), pre-translation off.  Segments are about
** 20 source tokens long (sentences built word by word until the source
** vocabulary gives 20 tokens).  For each segment the MT comes first (its
** latency is reported too), then the translator "types" 0, 2, 4 and 6
** words of the MT followed by a word of their own that the MT does not
** have ("Die", "nicht", "Date", "und": the editor asks for a completion
** only when the field leaves the displayed one), one request at a time.
**
** Model: -m/-v, else the installed default (assets/models/en-de), else the
** transformer-tiny test fixture (said in the output: its numbers only show
** the machinery's overhead).  Target: median under 150 ms.
*/
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common.h"
#include "edit_session.h"
#include "editor.h"
#include "options.h"
#include "vocab.h"

static const app_opt bench_opts[] = {
    {"models", 'm', APP_OPT_STRINGS, NULL, NULL, "model (default: the installed en-de model)"},
    {"vocabs", 'v', APP_OPT_STRINGS, NULL, NULL, "source and target vocabularies"},
    {"segments", 0, APP_OPT_INT, "12", NULL, "segments of about 20 tokens", "1..1000"},
    {"repeat", 0, APP_OPT_INT, "1", NULL, "passes over the segments", "1..100"},
    {"beam-size", 'b', APP_OPT_INT, "6", NULL, "beam size of the MT", "1..1000"},
    {"completion-beam", 0, APP_OPT_INT, "3", NULL, "beam size of completions", "1..1000"},
};
static const int n_bench_opts = (int)(sizeof bench_opts / sizeof bench_opts[0]);

const app_cmd app_bench_edit_cmd = {
    .name = "bench edit",
    .usage = "[-m MODEL -v SRC TRG] [options]",
    .about = "Completion latency of the editor (median and 95th percentile).\n",
    .opts = bench_opts,
    .n_opts = n_bench_opts,
};

/* English text the segments are cut from (software strings, as in the
** editor's documents). */
static const char *const words_src =
    "The file could not be opened because the disk is full or you do not have the "
    "permission to write to this folder. Please check the settings of your account and "
    "try again later, or ask the administrator of the server for help. When the calendar "
    "is shared with other users, changes to its events are sent to everyone who can see "
    "them. Select the tasks that you want to move to another list and press the button "
    "at the bottom of the window. The printer is not responding; make sure that it is "
    "switched on, connected to the network and that there is paper in the tray. Your "
    "changes have not been saved yet: do you want to save them before closing the "
    "document, or discard them and close it anyway? The download of the update failed "
    "because the connection to the server was interrupted; it will be resumed the next "
    "time you start the program. Choose a name for the new folder and the place where "
    "it should be created, then confirm with the Enter key.";

typedef struct lat_sink {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    double t_done;
    int64_t seg;
    char prefix[1024];
    bool comp_done, mt_done;
    char hyp[2048];
} lat_sink;

static mt_status k_mt(void *user, int64_t seg, const ui_mt_result *r) {
    lat_sink *k = user;
    pthread_mutex_lock(&k->mu);
    if (seg == k->seg) {
        k->t_done = app_now();
        snprintf(k->hyp, sizeof k->hyp, "%s", r->hyp);
        k->mt_done = true;
        pthread_cond_broadcast(&k->cv);
    }
    pthread_mutex_unlock(&k->mu);
    return MT_OK;
}

static mt_status k_completion(void *user, int64_t seg, const char *prefix, const char *text,
                              const float *conf, int32_t n) {
    (void)text;
    (void)conf;
    (void)n;
    lat_sink *k = user;
    pthread_mutex_lock(&k->mu);
    if (seg == k->seg && strcmp(prefix, k->prefix) == 0) {
        k->t_done = app_now();
        k->comp_done = true;
        pthread_cond_broadcast(&k->cv);
    }
    pthread_mutex_unlock(&k->mu);
    return MT_OK;
}

static mt_status k_message(void *user, mt_log_level level, const char *text) {
    (void)user;
    if (level >= MT_LOG_WARN) fprintf(stderr, "mtpe bench edit: %s\n", text);
    return MT_OK;
}

/* Waits for *flag (30 s at most); returns the completion time or -1. */
static double wait_flag(lat_sink *k, bool *flag) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 30;
    pthread_mutex_lock(&k->mu);
    while (!*flag)
        if (pthread_cond_timedwait(&k->cv, &k->mu, &dl) != 0) break;
    double t = *flag ? k->t_done : -1.0;
    pthread_mutex_unlock(&k->mu);
    return t;
}

static double quantile(double *v, int n, double q) {
    if (n == 0) return 0;
    qsort(v, (size_t)n, sizeof *v, app_cmp_double);
    int i = (int)(q * (n - 1) + 0.5);
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/* Cuts n segments of about 20 source tokens from words_src (cycling). */
static mt_status make_segments(const char *vocab_path, int n, char ***out) {
    mt_vocab *v = NULL;
    mt_status rc = mt_vocab_load(vocab_path, 0, &v);
    if (rc != MT_OK) return rc;
    char **segs = mt_try_calloc((size_t)n, sizeof *segs);
    size_t wl = strlen(words_src), pos = 0;
    if (segs == NULL) rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n && rc == MT_OK; i++) {
        char buf[1024];
        size_t bl = 0;
        for (;;) {
            while (words_src[pos % wl] == ' ')
                pos++;
            size_t start = pos;
            while (words_src[pos % wl] != ' ' && pos - start < 64)
                pos++;
            if (bl + (pos - start) + 2 >= sizeof buf) break;
            if (bl) buf[bl++] = ' ';
            for (size_t j = start; j < pos; j++)
                buf[bl++] = words_src[j % wl];
            buf[bl] = '\0';
            int32_t *ids = NULL;
            int64_t nt = 0;
            rc = mt_vocab_encode(v, buf, 0, &ids, &nt);
            mt_free(ids);
            if (rc != MT_OK || nt >= 20) break;
        }
        if (rc == MT_OK && (segs[i] = mt_try_strdup(buf)) == NULL)
            rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    }
    mt_vocab_free(v);
    if (rc != MT_OK) {
        for (int i = 0; segs && i < n; i++)
            mt_free(segs[i]);
        mt_free(segs);
        return rc;
    }
    *out = segs;
    return MT_OK;
}

/* The first k words of s (fewer when s has fewer), a space, then frag. */
static void typed_prefix(const char *s, int k, const char *frag, char *out, size_t size) {
    size_t i = 0, o = 0;
    int w = 0;
    while (s[i] && w < k) {
        while (s[i] == ' ')
            i++;
        if (!s[i]) break;
        while (s[i] && s[i] != ' ' && o + 2 < size)
            out[o++] = s[i++];
        w++;
        if (o + 2 < size) out[o++] = ' ';
    }
    out[o] = '\0';
    snprintf(out + o, size - o, "%s", frag);
}

int app_bench_edit_main(int argc, char **argv) {
    app_opts *o = NULL;
    app_edit_session *sess = NULL;
    app_edit_engine *eng = NULL;
    char **segs = NULL, **hyps = NULL;
    double *lat = NULL, *mt_lat = NULL;
    int ret = 1, n_segs = 0;
    lat_sink k;
    memset(&k, 0, sizeof k);
    pthread_mutex_init(&k.mu, NULL);
    pthread_cond_init(&k.cv, NULL);
    mt_status rc;
    if (!app_opts_parse_cmd(&app_bench_edit_cmd, argc, argv, &o, &ret)) goto done;
    ret = 1;
    n_segs = (int)app_opts_int(o, "segments");
    int repeat = (int)app_opts_int(o, "repeat");
    /* (ranges: the option table) */

    char model[PATH_MAX], vsrc[PATH_MAX], vtrg[PATH_MAX];
    const char *which;
    int mr = app_bench_model(o, "bench edit", model, vsrc, vtrg, &which);
    if (mr != 0) {
        if (mr == 2) ret = 2;
        goto done;
    }
    app_edit_model_spec spec = app_edit_model_default_spec();
    spec.models[0] = model;
    spec.n_models = 1;
    spec.vocabs[0] = vsrc;
    spec.vocabs[1] = vtrg;
    spec.n_vocabs = 2;
    spec.beam_size = (int32_t)app_opts_int(o, "beam-size");
    spec.completion_beam = (int32_t)app_opts_int(o, "completion-beam");
    app_blas_single_threaded();
    rc = app_edit_engine_load(&spec, &eng);
    if (rc == MT_OK) rc = make_segments(vsrc, n_segs, &segs);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe bench edit: %s\n", mt_errmsg());
        goto done;
    }
    app_edit_sink sink = {&k, k_mt, k_completion, k_message, NULL, NULL};
    app_edit_session_params sp = app_edit_session_default_params();
    sp.n_workers = 1;
    sp.lookahead = 0;
    rc = app_edit_session_init(&sp, &sink, eng, n_segs, (const char *const *)segs, NULL, &sess);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe bench edit: %s\n", mt_errmsg());
        goto done;
    }
    eng = NULL;
    int cap = n_segs * repeat * 4;
    lat = mt_try_calloc((size_t)cap, sizeof *lat);
    mt_lat = mt_try_calloc((size_t)n_segs, sizeof *mt_lat);
    hyps = mt_try_calloc((size_t)n_segs, sizeof *hyps);
    if (lat == NULL || mt_lat == NULL || hyps == NULL) {
        fprintf(stderr, "mtpe bench edit: out of memory\n");
        goto done;
    }
    printf("model: %s (%s)\n", model, which);
    printf("segments: %d of about 20 source tokens, e.g. \"%s\"\n", n_segs, segs[0]);
    printf("one worker thread, single-threaded BLAS; MT beam %d, completion beam %d\n",
           spec.beam_size, spec.completion_beam);
    int n_lat = 0, n_mt = 0;
    static const int typed[] = {0, 2, 4, 6};
    static const char *const frag[] = {"Die", "nicht", "Date", "und"};
    for (int r = 0; r < repeat; r++) {
        for (int i = 0; i < n_segs; i++) {
            /* the MT in the first pass (the session keeps it for the segment) */
            if (r == 0) {
                pthread_mutex_lock(&k.mu);
                k.seg = i;
                k.mt_done = false;
                pthread_mutex_unlock(&k.mu);
                double t0 = app_now();
                app_edit_session_goto(sess, i);
                double t1 = wait_flag(&k, &k.mt_done);
                if (t1 < 0) {
                    fprintf(stderr, "mtpe bench edit: no MT for segment %d within 30 s\n", i + 1);
                    goto done;
                }
                mt_lat[n_mt++] = t1 - t0;
                pthread_mutex_lock(&k.mu);
                hyps[i] = mt_try_strdup(k.hyp);
                pthread_mutex_unlock(&k.mu);
                if (hyps[i] == NULL) {
                    fprintf(stderr, "mtpe bench edit: out of memory\n");
                    goto done;
                }
            } else {
                pthread_mutex_lock(&k.mu);
                k.seg = i;
                pthread_mutex_unlock(&k.mu);
                app_edit_session_goto(sess, i);
            }
            const char *hyp = hyps[i];
            app_edit_session_wait_idle(sess, 30000);
            for (int w = 0; w < 4; w++) {
                char prefix[1024];
                typed_prefix(hyp, typed[w], frag[w], prefix, sizeof prefix);
                pthread_mutex_lock(&k.mu);
                snprintf(k.prefix, sizeof k.prefix, "%s", prefix);
                k.comp_done = false;
                pthread_mutex_unlock(&k.mu);
                double t0 = app_now();
                app_edit_session_complete(sess, i, prefix);
                double t1 = wait_flag(&k, &k.comp_done);
                if (t1 < 0) {
                    fprintf(stderr, "mtpe bench edit: no completion within 30 s\n");
                    goto done;
                }
                lat[n_lat++] = t1 - t0;
            }
        }
    }
    double mt_med = quantile(mt_lat, n_mt, 0.5);
    double med = quantile(lat, n_lat, 0.5), p95 = quantile(lat, n_lat, 0.95);
    printf("MT of a segment (n-best, attention): median %.1f ms over %d segments\n", 1e3 * mt_med,
           n_mt);
    printf("completion latency, request -> posted: median %.1f ms, 95th percentile %.1f ms "
           "(%d completions)\n",
           1e3 * med, 1e3 * p95, n_lat);
    double shown = 1e3 * med + ED_COMPLETION_DEBOUNCE_MS;
    printf("on screen, with the editor's %d ms debounce: median %.1f ms\n",
           ED_COMPLETION_DEBOUNCE_MS, shown);
    printf("target: median under 150 ms on screen: %s\n", shown < 150.0 ? "met" : "NOT met");
    ret = 0;
done:
    app_edit_session_free(sess);
    app_edit_engine_free(eng);
    for (int i = 0; segs && i < n_segs; i++)
        mt_free(segs[i]);
    for (int i = 0; hyps && i < n_segs; i++)
        mt_free(hyps[i]);
    mt_free(hyps);
    mt_free(segs);
    mt_free(lat);
    mt_free(mt_lat);
    app_opts_free(o);
    pthread_cond_destroy(&k.cv);
    pthread_mutex_destroy(&k.mu);
    return ret;
}
