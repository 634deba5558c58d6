/*
** test_edit_anatomy.c: the editor's translations through the segment
** anatomy (app/edit/edit_anatomy.c) with a fake engine whose output is known by
** construction: the translation of a piece is its upper-case copy; its
** n-best list puts first a "mangled" copy whose "%s" became "%" (what the
** real model does to "'%s'"), then the correct one.  Completions complete
** the upper-case copy after the typed prefix.  The APE engine (post_edit)
** writes "[mt]" for each piece and keeps the sources it was given, so what
** it saw and how the pieces were assembled are both visible.
*/
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "edit_session.h"
#include "harness.h"

static int calls;
static char last_prefix[256];

/* upper case, but not the conversion letters of "%s" */
static char *upper(const char *s) {
    char *t = mt_try_strdup(s);
    for (char *p = t; *p; p++)
        if (p == t || p[-1] != '%') *p = (char)toupper((unsigned char)*p);
    return t;
}

static mt_status fk_translate(void *w, const char *source, const char *prefix,
                              bool (*cancel)(void *), void *cu, app_edit_output *o) {
    (void)w, (void)cancel, (void)cu;
    calls++;
    memset(o, 0, sizeof *o);
    char *good = upper(source);
    if (prefix) {
        snprintf(last_prefix, sizeof last_prefix, "%s", prefix);
        size_t pl = strlen(prefix);
        o->completion = mt_try_strdup(strncmp(good, prefix, pl) == 0 ? good + pl : "");
        o->hyp = good;
        return MT_OK;
    }
    char *bad = upper(source);
    if (strstr(source, "junk")) strcpy(bad, "%"); /* finding 4: "%" as the best MT */
    char *ph = strstr(bad, "%s");
    if (ph) memmove(ph + 1, ph + 2, strlen(ph + 2) + 1);
    o->n_nbest = 2;
    o->nbest = mt_try_calloc(2, sizeof *o->nbest);
    o->scores = mt_try_calloc(2, sizeof *o->scores);
    o->nbest[0] = bad;
    o->nbest[1] = good;
    o->scores[0] = -1, o->scores[1] = -2;
    o->hyp = mt_try_strdup(bad);
    return MT_OK;
}

static mt_status fk_winit(void *impl, void **w) {
    *w = impl;
    return MT_OK;
}
static void fk_wfree(void *w) { (void)w; }
static void fk_free(void *impl) { (void)impl; }
static const app_edit_engine_ops ops = {fk_winit, fk_wfree, fk_translate, fk_free, NULL};

static int ape_calls;
static char ape_sources[256];
static mt_status fk_post_edit(void *w, const char *source, const char *mt, bool (*cancel)(void *),
                              void *cu, char **out) {
    (void)w, (void)cancel, (void)cu;
    ape_calls++;
    size_t n = strlen(mt) + 3, l = strlen(ape_sources);
    snprintf(ape_sources + l, sizeof ape_sources - l, "%s|", source);
    *out = mt_try_malloc(n);
    snprintf(*out, n, "[%s]", mt);
    return MT_OK;
}
static const app_edit_engine_ops ape_ops = {fk_winit, fk_wfree, fk_translate, fk_free,
                                            fk_post_edit};

static app_edit_engine *engine(void) {
    app_edit_engine *e = NULL;
    static int dummy;
    CHECK_STATUS(app_edit_engine_new(&ops, &dummy, "fake", "/fake.npz", &e));
    return e;
}

static void check_full(app_edit_engine *e, const char *src, const char *want, int want_calls) {
    app_edit_output o;
    calls = 0;
    mt_status rc = app_edit_translate_segment(e, NULL, src, NULL, NULL, NULL, &o);
    CHECK(rc == MT_OK && o.hyp && strcmp(o.hyp, want) == 0, "MT of '%s':\n got '%s'\nwant '%s'",
          src, o.hyp ? o.hyp : "(null)", want);
    CHECK(calls == want_calls, "'%s': %d engine calls, want %d", src, calls, want_calls);
    CHECK(o.n_nbest >= 1 && o.nbest && strcmp(o.nbest[0], o.hyp) == 0,
          "'%s': the n-best list starts with the MT", src);
    app_edit_output_clear(&o);
}

static void check_completion(app_edit_engine *e, const char *src, const char *prefix,
                             const char *want, const char *want_engine_prefix) {
    app_edit_output o;
    last_prefix[0] = '\0';
    mt_status rc = app_edit_translate_segment(e, NULL, src, prefix, NULL, NULL, &o);
    CHECK(rc == MT_OK && o.completion && strcmp(o.completion, want) == 0,
          "completion of '%s' after '%s':\n got '%s'\nwant '%s'", src, prefix,
          o.completion ? o.completion : "(null)", want);
    CHECK(strcmp(last_prefix, want_engine_prefix) == 0, "engine prefix '%s', want '%s'",
          last_prefix, want_engine_prefix);
    if (rc == MT_OK) {
        size_t pl = strlen(prefix);
        CHECK(strncmp(o.hyp, prefix, pl) == 0 && strcmp(o.hyp + pl, o.completion) == 0,
              "hyp = prefix + completion");
    }
    app_edit_output_clear(&o);
}

int main(void) {
    app_edit_engine *e = engine();
    if (e == NULL) TEST_MAIN_END();
    /* finding 1: line breaks and blanks around the text are kept */
    check_full(e, "\nCommand line:\n", "\nCOMMAND LINE:\n", 1);
    check_full(e, "  Indented  ", "  INDENTED  ", 1);
    /* finding 2: the n-best entry that keeps the placeholder is chosen */
    check_full(e, "Help for '%s' not found.", "HELP FOR '%s' NOT FOUND.", 1);
    /* ...and a whitespace-only or placeholder-only source is copied */
    check_full(e, " ", " ", 0);
    check_full(e, "%s: %s", "%s: %s", 0);
    /* finding 5: an option list keeps its layout and option names */
    check_full(e, "  -f, --force   never ask\n  -v, --verbose   explain\n",
               "  -f, --force   NEVER ASK\n  -v, --verbose   EXPLAIN\n", 2);

    /* finding 4: a junk best entry is neither the MT nor an alternative */
    app_edit_output o;
    CHECK_STATUS(app_edit_translate_segment(e, NULL, "Open junk", NULL, NULL, NULL, &o));
    CHECK(o.hyp && !strcmp(o.hyp, "OPEN JUNK") && o.n_nbest == 1, "junk skipped: '%s', %d entries",
          o.hyp ? o.hyp : "", o.n_nbest);
    app_edit_output_clear(&o);

    /* completions walk the verbatim parts */
    check_completion(e, "\nCommand line:\n", "\nCOMM", "AND LINE:\n", "COMM");
    check_completion(e, "\nCommand line:\n", "", "\nCOMMAND LINE:\n", "");
    check_completion(e, "First.\nSecond.", "FIRST.\nSEC", "OND.", "SEC");
    check_completion(e, "First.\nSecond.", "FI", "RST.\nSECOND.", "FI");
    check_completion(e, " ", "", " ", "");
    app_edit_engine_free(e);

    /* APE: each piece's chosen MT (the one keeping "%s") post-edited, the
    ** pieces assembled with the verbatim parts; never for completions;
    ** without post_edit no APE */
    static int dummy2;
    app_edit_engine *ea = NULL;
    CHECK_STATUS(app_edit_engine_new(&ape_ops, &dummy2, "fake+ape", "/fake.npz", &ea));
    if (ea) {
        ape_calls = 0;
        ape_sources[0] = '\0';
        CHECK_STATUS(
            app_edit_translate_segment(ea, NULL, "  Open '%s'\nClose\n", NULL, NULL, NULL, &o));
        const char *want = "  [OPEN '%s']\n[CLOSE]\n";
        CHECK(o.ape && strcmp(o.ape, want) == 0, "APE assembled:\n got '%s'\nwant '%s'",
              o.ape ? o.ape : "(null)", want);
        CHECK(ape_calls == 2 && strcmp(ape_sources, "Open '%s'|Close|") == 0,
              "APE calls: %d, want 2 (one per piece): sources %s", ape_calls, ape_sources);
        CHECK(o.hyp && strcmp(o.hyp, "  OPEN '%s'\nCLOSE\n") == 0, "the MT unchanged: '%s'",
              o.hyp ? o.hyp : "");
        app_edit_output_clear(&o);
        ape_calls = 0;
        CHECK_STATUS(app_edit_translate_segment(ea, NULL, "First.\nSecond.", "FI", NULL, NULL, &o));
        CHECK(ape_calls == 0 && o.ape == NULL, "no APE for a completion (%d calls)", ape_calls);
        app_edit_output_clear(&o);
        app_edit_engine_free(ea);
    }
    e = engine();
    if (e) {
        CHECK_STATUS(app_edit_translate_segment(e, NULL, "Close", NULL, NULL, NULL, &o));
        CHECK(o.ape == NULL, "no APE without post_edit");
        app_edit_output_clear(&o);
        app_edit_engine_free(e);
    }
    TEST_MAIN_END();
}
