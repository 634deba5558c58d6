/*
** test_edit_ape.c: the APE suggestion in the editor's alternatives
** (app/edit/edit_session.c, post_result; app/edit/edit_anatomy.c).
**
** A fake engine translates source "X" to "T(X)" with the n-best list
** "T(X)", "T(X) alt"; its post_edit gives "P(X)" for a source X, except
** for source "same", whose post-edit is its own n-best entry "T(same) alt".
** A recording sink keeps the list posted for each segment.  Checked:
**   - a post-edit that is not in the list comes first, labelled "APE",
**     followed by the MT's n-best list unlabelled, scores kept;
**   - a post-edit equal to an n-best entry adds nothing: that entry gets
**     the label;
**   - the fake's post_edit saw the MT of each segment (its 1-best);
**   - an engine without post_edit posts the n-best list alone, unlabelled.
*/
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "edit_session.h"
#include "harness.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char seen_mt[4][64]; /* what post_edit got, by segment source */

static int seg_of(const char *source) {
    return !strcmp(source, "a") ? 0 : !strcmp(source, "same") ? 1 : 2;
}

static mt_status fk_winit(void *impl, void **w) {
    *w = impl;
    return MT_OK;
}
static void fk_wfree(void *w) { (void)w; }
static void fk_free(void *impl) { (void)impl; }

static char *fmt(const char *f, const char *s) {
    char b[128];
    snprintf(b, sizeof b, f, s);
    return mt_xstrdup(b);
}

static mt_status fk_translate(void *w, const char *source, const char *prefix,
                              bool (*cancel)(void *), void *cu, app_edit_output *o) {
    (void)w, (void)cancel, (void)cu;
    memset(o, 0, sizeof *o);
    if (prefix) {
        o->hyp = mt_xstrdup(prefix);
        o->completion = mt_xstrdup("");
        return MT_OK;
    }
    o->hyp = fmt("T(%s)", source);
    o->n_nbest = 2;
    o->nbest = mt_xcalloc(2, sizeof *o->nbest);
    o->nbest[0] = fmt("T(%s)", source);
    o->nbest[1] = fmt("T(%s) alt", source);
    o->scores = mt_xcalloc(2, sizeof(float));
    o->scores[0] = -1.0f, o->scores[1] = -2.0f;
    o->n_tokens = 2;
    return MT_OK;
}

static mt_status fk_post_edit(void *w, const char *source, const char *mt, bool (*cancel)(void *),
                              void *cu, char **out) {
    (void)w, (void)cancel, (void)cu;
    pthread_mutex_lock(&mu);
    snprintf(seen_mt[seg_of(source)], sizeof seen_mt[0], "%s", mt);
    pthread_mutex_unlock(&mu);
    *out = !strcmp(source, "same") ? fmt("T(%s) alt", source) : fmt("P(%s)", source);
    return MT_OK;
}

static const app_edit_engine_ops ape_ops = {fk_winit, fk_wfree, fk_translate, fk_free,
                                            fk_post_edit};
static const app_edit_engine_ops plain_ops = {fk_winit, fk_wfree, fk_translate, fk_free, NULL};

/* the list posted for each segment: "label:text:score|..." */
static char posted[4][256];
static int n_posted;

static mt_status r_mt(void *u, int64_t seg, const ui_mt_result *r) {
    (void)u;
    char b[256] = "";
    for (int32_t i = 0; i < r->n_nbest; i++) {
        size_t l = strlen(b);
        const char *lab = r->nbest_labels && r->nbest_labels[i] ? r->nbest_labels[i] : "";
        snprintf(b + l, sizeof b - l, "%s:%s:%g|", lab, r->nbest[i],
                 r->nbest_scores ? (double)r->nbest_scores[i] : 99.0);
    }
    pthread_mutex_lock(&mu);
    if (seg >= 0 && seg < 4) snprintf(posted[seg], sizeof posted[seg], "%s", b);
    n_posted++;
    pthread_mutex_unlock(&mu);
    return MT_OK;
}

static bool wait_posted(int n) {
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&mu);
        bool done = n_posted >= n;
        pthread_mutex_unlock(&mu);
        if (done) return true;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return false;
}

static void run(const app_edit_engine_ops *ops) {
    static int dummy;
    app_edit_engine *e = NULL;
    CHECK_STATUS(app_edit_engine_new(ops, &dummy, "fake", "/fake.npz", &e));
    if (e == NULL) return;
    memset(posted, 0, sizeof posted);
    n_posted = 0;
    app_edit_sink sink = {NULL, r_mt, NULL, NULL, NULL, NULL};
    app_edit_session_params p = app_edit_session_default_params();
    p.lookahead = 3;
    const char *src[] = {"a", "same", "b"};
    app_edit_session *s = NULL;
    CHECK_STATUS(app_edit_session_init(&p, &sink, e, 3, src, NULL, &s));
    if (s == NULL) return;
    app_edit_session_goto(s, 0);
    CHECK(wait_posted(3), "three segments translated (%d)", n_posted);
    app_edit_session_free(s);
}

int main(void) {
    run(&ape_ops);
    CHECK(!strcmp(posted[0], "APE:P(a):0|:T(a):-1|:T(a) alt:-2|"), "new post-edit first: %s",
          posted[0]);
    CHECK(!strcmp(posted[1], ":T(same):-1|APE:T(same) alt:-2|"),
          "a post-edit in the list labels that entry: %s", posted[1]);
    CHECK(!strcmp(posted[2], "APE:P(b):0|:T(b):-1|:T(b) alt:-2|"), "segment 3: %s", posted[2]);
    CHECK(!strcmp(seen_mt[0], "T(a)") && !strcmp(seen_mt[1], "T(same)"),
          "post_edit got the MT: '%s' '%s'", seen_mt[0], seen_mt[1]);
    run(&plain_ops);
    CHECK(!strcmp(posted[0], ":T(a):-1|:T(a) alt:-2|"), "no post_edit: the list alone: %s",
          posted[0]);
    TEST_MAIN_END();
}
