/*
** edit_gec.c: the GEC worker of the editor (edit_gec.h).
*/
#include "edit_gec.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "store_spell.h"

static app_gec *model;
static pthread_t worker_thread;
static bool started;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static char *job; /* the text waiting to be checked (NULL: none) */
static int64_t job_seg;
static bool stopping;
static char **terms; /* glossary target terms */
static int n_terms, cap_terms;

static int add_term(void *user, const char *word) {
    (void)user;
    if (n_terms == cap_terms) {
        int c = cap_terms ? 2 * cap_terms : 64;
        char **t = mt_try_realloc(terms, sizeof *t * (size_t)c);
        if (!t) return 1;
        terms = t;
        cap_terms = c;
    }
    terms[n_terms] = mt_try_strdup(word);
    if (!terms[n_terms]) return 1;
    n_terms++;
    return 0;
}

static bool word_char(unsigned char c) {
    return c >= 0x80 || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

mt_status app_edit_gec_keep_spans(const char *text, app_gec_keep **out, int *n) {
    *out = NULL;
    *n = 0;
    int cap = 0;
    app_gec_keep *k = NULL;
    size_t tl = strlen(text);
    for (int i = 0; i < n_terms; i++) {
        size_t l = strlen(terms[i]);
        if (l == 0) continue;
        for (const char *p = strstr(text, terms[i]); p; p = strstr(p + 1, terms[i])) {
            size_t at = (size_t)(p - text);
            if ((at > 0 && word_char((unsigned char)text[at - 1])) ||
                (at + l < tl && word_char((unsigned char)text[at + l])))
                continue; /* inside a longer word */
            if (*n == cap) {
                cap = cap ? 2 * cap : 8;
                app_gec_keep *k2 = mt_try_realloc(k, sizeof *k * (size_t)cap);
                if (!k2) {
                    mt_free(k);
                    return mt_seterr(MT_ERR_NOMEM, "gec: out of memory");
                }
                k = k2;
            }
            k[(*n)++] = (app_gec_keep){(int32_t)at, (int32_t)l};
        }
    }
    *out = k;
    return MT_OK;
}

/* A newer request waits, or the editor closes: stop the search. */
static bool cancelled(void *user) {
    (void)user;
    pthread_mutex_lock(&mu);
    bool c = job != NULL || stopping;
    pthread_mutex_unlock(&mu);
    return c;
}

static void *run(void *arg) {
    (void)arg;
    app_blas_single_threaded();
    app_gec_worker *w = NULL;
    mt_status rc = app_gec_worker_init(model, &w);
    if (rc != MT_OK) {
        mt_log(MT_LOG_ERROR, "grammar checking off: %s", mt_errmsg());
        return NULL;
    }
    for (;;) {
        pthread_mutex_lock(&mu);
        while (!job && !stopping)
            pthread_cond_wait(&cv, &mu);
        if (stopping) {
            pthread_mutex_unlock(&mu);
            break;
        }
        char *text = job;
        int64_t seg = job_seg;
        job = NULL;
        pthread_mutex_unlock(&mu);
        app_gec_keep *keep = NULL;
        int nk = 0;
        app_gec_result res = {0};
        rc = app_edit_gec_keep_spans(text, &keep, &nk);
        const char *lines[1] = {text};
        const app_gec_keep *kp[1] = {keep};
        if (rc == MT_OK) rc = app_gec_check(w, lines, 1, kp, &nk, &res, cancelled, NULL);
        if (rc == MT_OK) {
            ui_gec_fix *f = mt_try_calloc((size_t)res.n_fixes + 1, sizeof *f);
            for (int i = 0; f && i < res.n_fixes; i++)
                f[i] = (ui_gec_fix){res.fixes[i].at, res.fixes[i].len, res.fixes[i].with};
            if (f) ui_post_gec(seg, text, f, res.n_fixes);
            mt_free(f);
        } else if (rc != MT_ABORTED) {
            mt_log(MT_LOG_WARN, "grammar check failed: %s", mt_errmsg());
        }
        app_gec_result_clear(&res);
        mt_free(keep);
        mt_free(text);
    }
    app_gec_worker_free(w);
    return NULL;
}

static void request(void *user, int64_t seg, const char *text) {
    (void)user;
    char *t = mt_try_strdup(text);
    if (!t) return;
    pthread_mutex_lock(&mu);
    mt_free(job);
    job = t;
    job_seg = seg;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

mt_status app_edit_gec_open(const char *path, const app_gec_params *p, store *st,
                            const char *lang) {
    app_edit_gec_close();
    mt_status rc = app_gec_open_path(path, p, &model);
    if (rc != MT_OK) return rc;
    if (st) {
        rc = store_glossary_target_words(st, lang, add_term, NULL);
        if (rc != MT_OK) {
            app_edit_gec_close();
            return rc;
        }
    }
    stopping = false;
    if (pthread_create(&worker_thread, NULL, run, NULL) != 0) {
        app_edit_gec_close();
        return mt_seterr(MT_ERR_NOMEM, "gec: cannot start the worker thread");
    }
    started = true;
    return MT_OK;
}

void app_edit_gec_set_hooks(ui_hooks *h) {
    if (model && started) h->gec_request = request;
}

void app_edit_gec_close(void) {
    if (started) {
        pthread_mutex_lock(&mu);
        stopping = true;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&mu);
        pthread_join(worker_thread, NULL);
        started = false;
    }
    mt_free(job);
    job = NULL;
    app_gec_free(model);
    model = NULL;
    for (int i = 0; i < n_terms; i++)
        mt_free(terms[i]);
    mt_free(terms);
    terms = NULL;
    n_terms = cap_terms = 0;
}
