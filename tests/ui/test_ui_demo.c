/*
** test_ui_demo.c: a driver for ui_run() with a fake engine, for the tmux
** test (tests/e2e/test_ui_screen.sh) and for trying the editor by hand.
**
**   test_ui_demo                 checks what needs no terminal, exits 0/1
**   test_ui_demo demo LOGFILE    runs the editor on a 6-segment document;
**                                every hook call is appended to LOGFILE
**
** The fake engine is a worker thread with a job queue: segment_changed
** queues a translation, request_completion a completion (replacing any
** older completion job, as the real session cancels them).  It answers
** after 30 ms through ui_post_mt / ui_post_completion / ui_post_message /
** ui_post_progress, from its own thread, as app/ will.
*/
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "ui.h"

typedef struct demo_seg {
    const char *src, *trg, *alt2, *alt3;
    ui_seg_status status;
} demo_seg;

static const demo_seg segs[] = {
    {"Hello world.", "Hallo Welt.", "Hallo, Welt.", "Servus Welt.", UI_SEG_NEW},
    {"The file could not be opened.",
     "Die Datei konnte nicht ge\xc3\xb6"
     "ffnet werden.",
     "Die Datei lie\xc3\x9f sich nicht \xc3\xb6"
     "ffnen.",
     "Datei nicht ge\xc3\xb6"
     "ffnet.",
     UI_SEG_NEW},
    {"Save changes?", "\xc3\x84nderungen speichern?", "\xc3\x84nderungen sichern?", "Speichern?",
     UI_SEG_CONFIRMED},
    {"Open the settings dialog.",
     "\xc3\x96"
     "ffnen Sie den Einstellungsdialog.",
     "Einstellungsdialog \xc3\xb6"
     "ffnen.",
     "Einstellungen \xc3\xb6"
     "ffnen.",
     UI_SEG_NEW},
    {"Japanese text.",
     "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe6\x96\x87\xe7\xab\xa0"
     "\xe3\x80\x82",
     "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", "Japanischer Text.", UI_SEG_NEW},
    {"Quit", "Beenden",
     "Schlie\xc3\x9f"
     "en",
     "Verlassen", UI_SEG_NEW},
};
#define N_SEGS ((int)(sizeof segs / sizeof segs[0]))

/* ------------------------------------------------------------ the log */

static FILE *log_file;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static void logline(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logline(const char *fmt, ...) {
    pthread_mutex_lock(&log_mu);
    if (log_file) {
        va_list ap;
        va_start(ap, fmt);
        vfprintf(log_file, fmt, ap);
        va_end(ap);
        fputc('\n', log_file);
        fflush(log_file);
    }
    pthread_mutex_unlock(&log_mu);
}

/* ----------------------------------------------------- the fake engine */

typedef struct job {
    int kind; /* 1 translate, 2 complete */
    int64_t seg;
    char prefix[512];
} job;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job jobs[64];
    int n;
    bool stop;
} eng = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {{0}}, 0, false};

static void submit(int kind, int64_t seg, const char *prefix) {
    pthread_mutex_lock(&eng.mu);
    if (kind == 2) /* a newer completion request cancels the older ones */
        for (int i = 0; i < eng.n; i++)
            if (eng.jobs[i].kind == 2) eng.jobs[i--] = eng.jobs[--eng.n];
    if (eng.n < 64) {
        job *j = &eng.jobs[eng.n++];
        j->kind = kind;
        j->seg = seg;
        snprintf(j->prefix, sizeof j->prefix, "%s", prefix ? prefix : "");
    }
    pthread_cond_signal(&eng.cv);
    pthread_mutex_unlock(&eng.mu);
}

static int split(const char *s, char buf[512], const char *toks[32]) {
    snprintf(buf, 512, "%s", s);
    int n = 0;
    for (char *t = strtok(buf, " "); t && n < 32; t = strtok(NULL, " "))
        toks[n++] = t;
    return n;
}

static void translate(int64_t seg) {
    const demo_seg *d = &segs[seg];
    const char *nbest[3] = {d->trg, d->alt2, d->alt3};
    float scores[3] = {-0.21f, -1.37f, -2.05f};
    char sb[512], tb[512];
    const char *st[32], *tt[32];
    int ns = split(d->src, sb, st), nt = split(d->trg, tb, tt);
    float attn[32 * 32], conf[32];
    for (int t = 0; t < nt; t++) { /* a soft diagonal */
        float sum = 0;
        for (int s = 0; s < ns; s++) {
            float c = (float)t * (float)ns / (float)nt - (float)s;
            attn[t * ns + s] = expf(-2.0f * c * c);
            sum += attn[t * ns + s];
        }
        for (int s = 0; s < ns; s++)
            attn[t * ns + s] /= sum;
        conf[t] = 0.95f - 0.3f * (float)(t % 3);
    }
    ui_mt_result r = {.hyp = d->trg,
                      .nbest = nbest,
                      .nbest_scores = scores,
                      .n_nbest = 3,
                      .src_tokens = st,
                      .n_src = ns,
                      .trg_tokens = tt,
                      .n_trg = nt,
                      .attention = attn,
                      .word_conf = conf,
                      .n_words = nt,
                      .tokens_per_sec = 1234.0};
    ui_post_mt(seg, &r);
    char msg[64];
    snprintf(msg, sizeof msg, "translated segment %lld", (long long)seg + 1);
    ui_post_message(MT_LOG_INFO, msg);
}

/* The rest of the reference when the prefix follows it; nothing after a full
** stop; else a fixed tail. */
static void complete(int64_t seg, const char *prefix) {
    const char *ref = segs[seg].trg;
    size_t n = strlen(prefix);
    if (strncmp(ref, prefix, n) == 0) {
        ui_post_completion(seg, prefix, ref + n, NULL, 0);
    } else if (n > 0 && strchr(".?!", prefix[n - 1])) { /* a finished sentence: nothing */
        ui_post_completion(seg, prefix, "", NULL, 0);
    } else {
        float conf[3] = {0.9f, 0.2f, 0.5f};
        ui_post_completion(seg, prefix, " und so weiter.", conf, 3);
    }
}

static void *engine_main(void *arg) {
    (void)arg;
    int done = 0;
    for (;;) {
        pthread_mutex_lock(&eng.mu);
        while (eng.n == 0 && !eng.stop)
            pthread_cond_wait(&eng.cv, &eng.mu);
        if (eng.stop) {
            pthread_mutex_unlock(&eng.mu);
            return NULL;
        }
        job j = eng.jobs[0];
        memmove(eng.jobs, eng.jobs + 1, (size_t)(eng.n - 1) * sizeof(job));
        eng.n--;
        pthread_mutex_unlock(&eng.mu);
        struct timespec ts = {0, 30 * 1000 * 1000};
        nanosleep(&ts, NULL);
        if (j.kind == 1) {
            translate(j.seg);
            ui_post_progress("pretranslate", ++done, N_SEGS);
        } else {
            complete(j.seg, j.prefix);
        }
    }
}

/* ------------------------------------------------------------- hooks */

static void h_changed(void *u, int64_t from, const char *draft, int64_t to) {
    (void)u;
    logline("changed %lld %lld %s", (long long)from, (long long)to, draft ? draft : "(null)");
    if (to >= 0) submit(1, to, NULL);
}

static void h_request(void *u, int64_t seg, const char *prefix) {
    (void)u;
    logline("request %lld %s", (long long)seg, prefix);
    submit(2, seg, prefix);
}

static mt_status h_commit(void *u, int64_t seg, const char *text, const ui_edit_stats *st) {
    (void)u;
    logline("commit %lld origin=%d keys=%d %s", (long long)seg, (int)st->origin, st->keystrokes,
            text);
    return MT_OK;
}

static mt_status h_save(void *u, bool force) {
    (void)force;
    (void)u;
    logline("save");
    return MT_OK;
}

static mt_status h_model(void *u, const char *path) {
    (void)u;
    logline("model %s", path);
    ui_post_model("demo-model-2");
    return MT_OK;
}

static mt_status h_export(void *u, const char *fmt, const char *path) {
    (void)u;
    logline("export %s %s", fmt, path);
    return MT_OK;
}

static int run_demo(const char *logpath) {
    log_file = fopen(logpath, "w");
    if (log_file == NULL) return 1;
    ui_segment us[N_SEGS];
    for (int i = 0; i < N_SEGS; i++)
        us[i] = (ui_segment){segs[i].src, segs[i].status == UI_SEG_CONFIRMED ? segs[i].trg : NULL,
                             segs[i].status, NULL};
    ui_document doc = {"demo.po", "en", "de", "demo-model", us, N_SEGS};
    ui_hooks h = {NULL, h_changed, h_request, h_commit, h_save, h_model, h_export,
                  NULL, NULL,      NULL,      NULL,     NULL,   NULL};
    pthread_t th;
    pthread_create(&th, NULL, engine_main, NULL);
    mt_status rc = ui_run(&h, &doc, 0);
    pthread_mutex_lock(&eng.mu);
    eng.stop = true;
    pthread_cond_signal(&eng.cv);
    pthread_mutex_unlock(&eng.mu);
    pthread_join(th, NULL);
    logline("exit %d %s", (int)rc, mt_errmsg());
    fclose(log_file);
    return rc == MT_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "demo") == 0) return run_demo(argv[2]);
    /* without a terminal: what must fail cleanly */
    CHECK(ui_post_message(MT_LOG_INFO, "hello") == MT_ERR_INVALID, "post without a ui");
    CHECK(ui_post_quit() == MT_ERR_INVALID, "quit without a ui");
    ui_document empty = {0};
    CHECK(ui_run(NULL, &empty, 0) == MT_ERR_INVALID, "empty document rejected");
    ui_segment bad[] = {{NULL, NULL, UI_SEG_NEW, NULL}};
    ui_document d = {.segs = bad, .n_segs = 1};
    CHECK(ui_run(NULL, &d, 0) == MT_ERR_INVALID && strstr(mt_errmsg(), "no source"),
          "segment without source: %s", mt_errmsg());
    TEST_MAIN_END();
}
