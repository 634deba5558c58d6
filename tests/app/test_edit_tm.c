/*
** test_edit_tm.c: translation memory matches above the MT alternatives in
** the editor (app/edit/edit_tm.c): the wrapping sink puts the matches of a
** segment (75% and more, labelled, in-context exact first) before the MT
** n-best list, leaves the segment itself out, and passes a result without
** matches through unchanged.  The n-best pane draws the labels.
*/
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "edit_tm.h"
#include "editor.h"
#include "harness.h"
#include "store.h"
#include "store_tm.h"

typedef struct got {
    int calls;
    int32_t n;
    char hyp[64], hyp_label[16];
    char text[8][64];
    char label[8][16];
    char src[8][64];   /* nbest_sources[i], "-" when none */
    char marks[8][64]; /* its marks as "start+len ..." */
    bool has_labels;
} got;

static mt_status inner_mt(void *user, int64_t seg, const ui_mt_result *r) {
    got *g = user;
    g->calls++;
    g->n = r->n_nbest;
    g->has_labels = r->nbest_labels != NULL;
    snprintf(g->hyp, sizeof g->hyp, "%s", r->hyp);
    snprintf(g->hyp_label, sizeof g->hyp_label, "%s", r->hyp_label ? r->hyp_label : "");
    for (int32_t i = 0; i < r->n_nbest && i < 8; i++) {
        snprintf(g->text[i], sizeof g->text[i], "%s", r->nbest[i]);
        snprintf(g->label[i], sizeof g->label[i], "%s",
                 r->nbest_labels && r->nbest_labels[i] ? r->nbest_labels[i] : "");
        const char *src = r->nbest_sources ? r->nbest_sources[i] : NULL;
        snprintf(g->src[i], sizeof g->src[i], "%s", src ? src : "-");
        size_t o = 0;
        g->marks[i][0] = '\0';
        for (int32_t k = 0; src && r->nbest_n_marks && k < r->nbest_n_marks[i] && o < 48; k++)
            o += (size_t)snprintf(g->marks[i] + o, sizeof g->marks[i] - o, "%s%d+%d", k ? " " : "",
                                  r->nbest_source_marks[i][k].start,
                                  r->nbest_source_marks[i][k].len);
    }
    return MT_OK;
}

int main(int argc, char **argv) {
    TEST_MAIN_BEGIN(argc, argv);
    char dir[] = "/tmp/mtpe_edit_tm.XXXXXX", db[256];
    CHECK(mkdtemp(dir) != NULL, "temporary directory");
    snprintf(db, sizeof db, "%s/tm.db", dir);

    /* the document being edited, stored as the editor stores it: segment 1
    ** confirmed (it is its own exact match and must not be offered) */
    static const ui_segment segs[] = {
        {.source = "Open the file"},
        {.source = "Save the file as"},
        {.source = "Close"},
    };
    ui_document doc = {.segs = segs, .n_segs = 3};
    store *st = NULL;
    CHECK_STATUS(store_open(db, &st));
    store_segment_in in[] = {
        {.source = "Open the file", .status = STORE_SEG_NEW},
        {.source = "Save the file as",
         .target = "Datei speichern unter",
         .status = STORE_SEG_CONFIRMED},
        {.source = "Close", .status = STORE_SEG_NEW},
    };
    store_doc_info info = {"/docs/app.po", STORE_FORMAT_PO, "en", "de", "h1"};
    int64_t id = 0;
    CHECK_STATUS(store_add_document(st, &info, in, 3, &id));
    /* another memory: an exact match in the same context, and fuzzy ones */
    store_segment_in mem[] = {
        {.source = "Open the file", .target = "Die Datei öffnen"},
        {.source = "Save the file as", .target = "Speichern unter"},
        {.source = "Close", .target = "Schließen"},
        {.source = "Open the files", .target = "Die Dateien öffnen"},
        {.source = "Print", .target = "Drucken"},
    };
    store_doc_info mi = {"mem.tmx", STORE_FORMAT_TMX, "en", "de", "h2"};
    bool already = false;
    CHECK_STATUS(store_tm_import(st, &mi, mem, 5, &id, &already));
    store_close(st);

    got g = {0};
    app_edit_sink inner = {.user = &g, .mt = inner_mt};
    app_edit_tm *tm = NULL;
    CHECK_STATUS(app_edit_tm_open(db, "/docs/app.po", &doc, inner, &tm));
    if (tm) {
        app_edit_sink sink = app_edit_tm_sink(tm);
        const char *nbest[] = {"MT eins", "MT zwei"};
        const float scores[] = {-1.0f, -2.0f};
        ui_mt_result r = {.hyp = "MT eins", .nbest = nbest, .nbest_scores = scores, .n_nbest = 2};

        /* segment 0 "Open the file" (prev "", next "Save the file as"): the
        ** memory's exact match has other neighbours in the memory ("" and
        ** "Save the file as": the same!): in-context exact; "Open the files"
        ** [Open the files] / [Open the file]: 1 hard of 3 -> 66, left out */
        CHECK_STATUS(sink.mt(sink.user, 0, &r));
        CHECK(g.calls == 1 && g.n == 3, "one match above the two alternatives: %d", g.n);
        CHECK(!strcmp(g.text[0], "Die Datei öffnen") && !strcmp(g.label[0], "TM ICE"),
              "the in-context exact match first: '%s' '%s'", g.text[0], g.label[0]);
        CHECK(!strcmp(g.text[1], "MT eins") && g.label[1][0] == '\0', "then the MT");
        CHECK(!strcmp(g.src[0], "Open the file") && g.marks[0][0] == '\0' && !strcmp(g.src[1], "-"),
              "the match's source, nothing marked; none for the MT: '%s' [%s] '%s'", g.src[0],
              g.marks[0], g.src[1]);
        CHECK(!strcmp(g.hyp, "Die Datei öffnen") && !strcmp(g.hyp_label, "TM ICE"),
              "an exact match takes the MT's place in the field, marked: '%s' [%s]", g.hyp,
              g.hyp_label);

        /* segment 1: its own stored confirmation is left out; the memory's
        ** "Save the file as" is an exact match with other neighbours in the
        ** memory ("Open the file", "Close": the same as here) */
        g = (got){0};
        CHECK_STATUS(sink.mt(sink.user, 1, &r));
        CHECK(g.n == 3 && !strcmp(g.text[0], "Speichern unter"),
              "the segment itself is not offered: %d '%s'", g.n, g.text[0]);

        /* segment 2 "Close": the memory's has neighbour "Save the file as"
        ** before and "Open the files" after, here "" after: a plain 100 */
        g = (got){0};
        CHECK_STATUS(sink.mt(sink.user, 2, &r));
        CHECK(g.n == 3 && !strcmp(g.label[0], "TM 100%") && !strcmp(g.text[0], "Schließen"),
              "plain exact match: '%s'", g.label[0]);
        CHECK(!strcmp(g.hyp, "Schließen") && !strcmp(g.hyp_label, "TM 100%"),
              "a 100%% match in the field: '%s' [%s]", g.hyp, g.hyp_label);

        /* nothing to offer: the result goes through as it is */
        ui_segment other[] = {{.source = "Nothing like it"}};
        ui_document d2 = {.segs = other, .n_segs = 1};
        app_edit_tm *tm2 = NULL;
        CHECK_STATUS(app_edit_tm_open(db, NULL, &d2, inner, &tm2));
        if (tm2) {
            g = (got){0};
            app_edit_sink s2 = app_edit_tm_sink(tm2);
            CHECK_STATUS(s2.mt(s2.user, 0, &r));
            CHECK(g.n == 2 && !g.has_labels, "no match: unchanged");
            /* a near-duplicate confirmed since: moving to the segment posts
            ** its MT again with the match ([Nothing like it !] / [Nothing
            ** like it]: 1 hard of 4 -> 75) */
            store *st2 = NULL;
            CHECK_STATUS(store_open(db, &st2));
            store_segment_in near[] = {
                {.source = "Nothing like it!", .target = "Nichts dergleichen!"}};
            store_doc_info ni = {"near.tsv", STORE_FORMAT_TSV, "en", "de", "h3"};
            CHECK_STATUS(store_tm_import(st2, &ni, near, 1, &id, &already));
            store_close(st2);
            g = (got){0};
            app_edit_tm_refresh(tm2, 0);
            CHECK(g.calls == 1 && g.n == 3 && !strcmp(g.label[0], "TM 75%") &&
                      !strcmp(g.text[0], "Nichts dergleichen!") && !strcmp(g.text[1], "MT eins"),
                  "refresh: the new match above the same MT: %d '%s'", g.n, g.label[0]);
            CHECK(!strcmp(g.hyp, "MT eins") && g.hyp_label[0] == '\0',
                  "a fuzzy match leaves the MT in the field: '%s'", g.hyp);
            /* its source with the token this one lacks marked: "!" at 15 */
            CHECK(!strcmp(g.src[0], "Nothing like it!") && !strcmp(g.marks[0], "15+1"),
                  "the difference is marked: '%s' [%s]", g.src[0], g.marks[0]);
            g = (got){0};
            app_edit_tm_refresh(tm2, 5); /* no such segment */
            CHECK(g.calls == 0, "refresh of an unknown segment: nothing");
        }
        app_edit_tm_free(tm2);

        /* the editor keeps the labels (ed_mt_copy) */
        const char *labels[] = {"TM 95%", NULL};
        r.nbest_labels = labels;
        ed_mt *m = NULL;
        CHECK_STATUS(ed_mt_copy(&r, &m));
        CHECK(m && m->labels && !strcmp(m->labels[0], "TM 95%") && m->labels[1] == NULL,
              "labels copied");
        ed_mt_free(m);
    }
    app_edit_tm_free(tm);

    /* a PO plural entry: the editor shows form 0 with the msgid, form 1
    ** with the msgid_plural as source; a confirmed copy of the entry in
    ** another file gives each form its own translation, in context
    ** (before, the msgid paired with both forms and form 1 found nothing) */
    store *st3 = NULL;
    CHECK_STATUS(store_open(db, &st3));
    store_segment_in pl[] = {
        {.source = "Delete %d file",
         .plural_source = "Delete %d files",
         .plural_form = 0,
         .target = "%d Datei löschen",
         .status = STORE_SEG_CONFIRMED},
        {.source = "Delete %d file",
         .plural_source = "Delete %d files",
         .plural_form = 1,
         .target = "%d Dateien löschen",
         .status = STORE_SEG_CONFIRMED},
    };
    store_doc_info pi = {"/docs/old.po", STORE_FORMAT_PO, "en", "de", "h4"};
    CHECK_STATUS(store_add_document(st3, &pi, pl, 2, &id));
    store_close(st3);
    static const ui_segment psegs[] = {{.source = "Delete %d file"}, {.source = "Delete %d files"}};
    ui_document pdoc = {.segs = psegs, .n_segs = 2};
    app_edit_tm *tm3 = NULL;
    CHECK_STATUS(app_edit_tm_open(db, "/docs/new.po", &pdoc, inner, &tm3));
    if (tm3) {
        app_edit_sink s3 = app_edit_tm_sink(tm3);
        const char *nbest[] = {"MT eins", "MT zwei"};
        ui_mt_result r = {.hyp = "MT eins", .nbest = nbest, .n_nbest = 2};
        /* form 0: the singular; the plural form's source scores 66 (1 hard
        ** edit of 3 tokens), under 75 */
        g = (got){0};
        CHECK_STATUS(s3.mt(s3.user, 0, &r));
        CHECK(g.n == 3 && !strcmp(g.text[0], "%d Datei löschen") && !strcmp(g.label[0], "TM ICE") &&
                  !strcmp(g.hyp, "%d Datei löschen"),
              "plural form 0: the singular only: %d '%s' [%s]", g.n, g.hyp, g.label[0]);
        g = (got){0};
        CHECK_STATUS(s3.mt(s3.user, 1, &r));
        CHECK(g.n == 3 && !strcmp(g.text[0], "%d Dateien löschen") &&
                  !strcmp(g.label[0], "TM ICE") && !strcmp(g.src[0], "Delete %d files") &&
                  !strcmp(g.hyp, "%d Dateien löschen"),
              "plural form 1: the plural form's translation: %d '%s' [%s]", g.n, g.hyp, g.label[0]);
    }
    app_edit_tm_free(tm3);
    char side[300];
    unlink(db);
    snprintf(side, sizeof side, "%s-wal", db);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", db);
    unlink(side);
    rmdir(dir);
    TEST_MAIN_END();
}
