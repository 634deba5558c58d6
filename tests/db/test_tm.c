/*
** test_tm.c: the translation memory of the store (db/store_tm.h): fuzzy
** scores against hand-computed cases, band boundaries, placeholder, number
** and case normalisation, the differing spans, in-context exact matches,
** imports (re-import is a no-op), the index kept in step with confirmations
** and edits, and lookup through the index against scoring every confirmed
** segment by brute force.
*/
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "mt_base.h"
#include "store.h"
#include "store_impl.h"
#include "store_tm.h"
#include "tm_impl.h"

/* ---------------------------------------------------------------- scores */

static void test_scores(void) {
    /* identical bytes: 100 */
    CHECK(store_tm_score("Open the file", "Open the file") == 100, "identical");
    /* tokens [Open the file] / [open the file]: Open~open same key, other
    ** text: 0 hard, 1 soft -> 100 - 1 = 99 */
    CHECK(store_tm_score("Open the file", "open the file") == 99, "case only: 99");
    /* [Delete 3 files] / [Delete 12 files]: numbers share a key: 1 soft -> 99 */
    CHECK(store_tm_score("Delete 3 files", "Delete 12 files") == 99, "number only: 99");
    /* %s and {0} are both placeholders: 1 soft -> 99 */
    CHECK(store_tm_score("Delete %s files?", "Delete {0} files?") == 99, "placeholder: 99");
    CHECK(store_tm_score("Hello %(name)s", "Hello {user}") == 99, "python placeholder: 99");
    CHECK(store_tm_score("Click <b>here</b>", "Click <i>here</i>") == 98, "two tags: 98");
    /* same tokens, other white space: no soft difference, text differs -> 99 */
    CHECK(store_tm_score("Open  the file", "Open the file") == 99, "white space only: 99");
    /* [A 1 2 3 4 5 6] / [a 7 8 9 10 11 12]: 7 soft, capped at 5 -> 95 */
    CHECK(store_tm_score("A 1 2 3 4 5 6", "a 7 8 9 10 11 12") == 95, "soft penalty capped: 95");
    /* [Open the file] / [Open the folder]: L = 3, 1 hard -> floor(100*2/3) = 66 */
    CHECK(store_tm_score("Open the file", "Open the folder") == 66, "one word of three: 66");
    /* [Open file] / [Open the file]: one insertion, L = 3 -> 66 */
    CHECK(store_tm_score("Open file", "Open the file") == 66, "insertion: 66");
    /* [The file could not be saved .] / [... opened .]: L = 7, 1 hard ->
    ** floor(600/7) = floor(85.7) = 85 */
    CHECK(store_tm_score("The file could not be saved.", "The file could not be opened.") == 85,
          "one word of seven: 85");
    /* [Delete 3 old files] / [Delete 4 new files]: 1 hard (old/new), 1 soft
    ** (3/4): floor(100*3/4) - 1 = 74 */
    CHECK(store_tm_score("Delete 3 old files", "Delete 4 new files") == 74, "hard + soft: 74");
    /* "50% done": the space flag is no printf flag, so [50 % done] / [50 % gone]:
    ** 1 hard of 3 -> 66 (were "% d" a placeholder it would be 99) */
    CHECK(store_tm_score("50% done", "50% gone") == 66, "percent sign before a word");
    /* [%1$d files] / [%2$s files]: positional printf placeholders -> 99 */
    CHECK(store_tm_score("%1$d files", "%2$s files") == 99, "positional printf");
    /* editor placeholders ⟦1⟧ ⟦/1⟧ are tokens: [Save ⟦1⟧ now ⟦/1⟧] / [Save ⟦2⟧ now ⟦/2⟧] -> 98 */
    CHECK(store_tm_score("Save \xe2\x9f\xa6"
                         "1\xe2\x9f\xa7 now \xe2\x9f\xa6/1\xe2\x9f\xa7",
                         "Save \xe2\x9f\xa6"
                         "2\xe2\x9f\xa7 now \xe2\x9f\xa6/2\xe2\x9f\xa7") == 98,
          "editor tags");
    /* nothing in common: [Yes] / [No] -> floor(0) = 0 */
    CHECK(store_tm_score("Yes", "No") == 0, "nothing in common: 0");
    /* case of a non-ASCII letter: [Über uns] / [über uns] -> 99 */
    CHECK(store_tm_score("\xc3\x9c"
                         "ber uns",
                         "\xc3\xbc"
                         "ber uns") == 99,
          "Ü/ü");
    /* words keep inner apostrophes and hyphens: [Don't save] / [Do not save]:
    ** L = 3; Don't -> Do (1 hard), insert not (1 hard): floor(100/3) = 33 */
    CHECK(store_tm_score("Don't save", "Do not save") == 33, "inner apostrophe");
}

/* Band boundaries: one word differs in sentences of L tokens (no
** punctuation): floor(100*(L-1)/L). */
static void test_bands(void) {
    static const char *const words[] = {
        "alpha",  "beta", "gamma", "delta", "eps",     "zeta", "eta", "theta", "iota", "kappa",
        "lambda", "mu",   "nu",    "xi",    "omicron", "pi",   "rho", "sigma", "tau",  "upsilon"};
    struct {
        int len, want, band;
    } cases[] = {
        {3, 66, 0},   /* floor(200/3) = 66: below 75 */
        {4, 75, 75},  /* 300/4 = 75: the lowest band's first score */
        {5, 80, 75},  /* 400/5 */
        {6, 83, 75},  /* floor(500/6) = 83 */
        {7, 85, 85},  /* floor(600/7) = 85 */
        {19, 94, 85}, /* floor(1800/19) = 94 */
        {20, 95, 95}, /* 1900/20 = 95 */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char a[512] = "", b[512] = "";
        for (int i = 0; i < cases[c].len; i++) {
            strcat(a, i ? " " : "");
            strcat(b, i ? " " : "");
            strcat(a, words[i]);
            strcat(b, i == cases[c].len - 1 ? "other" : words[i]);
        }
        int sc = store_tm_score(a, b);
        CHECK(sc == cases[c].want, "%d tokens, one differs: %d, want %d", cases[c].len, sc,
              cases[c].want);
        CHECK(store_tm_band(sc) == cases[c].band, "band of %d", sc);
    }
    CHECK(store_tm_band(101) == 101 && store_tm_band(100) == 100 && store_tm_band(99) == 95 &&
              store_tm_band(95) == 95 && store_tm_band(94) == 85 && store_tm_band(85) == 85 &&
              store_tm_band(84) == 75 && store_tm_band(75) == 75 && store_tm_band(74) == 0,
          "band edges");
}

static void test_diff(void) {
    store_tm_span *q = NULL, *s = NULL;
    int32_t nq = -1, ns = -1;
    /* "Delete 3 old files" / "Delete 4 new files": 3~4 soft at byte 7, old/new
    ** changed at byte 9 */
    CHECK_STATUS(store_tm_diff("Delete 3 old files", "Delete 4 new files", &q, &nq, &s, &ns));
    CHECK(nq == 2 && ns == 2, "two differing tokens each side, got %d %d", nq, ns);
    if (nq == 2 && ns == 2) {
        CHECK(q[0].start == 7 && q[0].len == 1 && q[0].kind == STORE_TM_DIFF_SOFT, "3 soft");
        CHECK(q[1].start == 9 && q[1].len == 3 && q[1].kind == STORE_TM_DIFF_CHANGED, "old");
        CHECK(s[0].start == 7 && s[0].len == 1 && s[0].kind == STORE_TM_DIFF_SOFT, "4 soft");
        CHECK(s[1].start == 9 && s[1].len == 3 && s[1].kind == STORE_TM_DIFF_CHANGED, "new");
    }
    mt_free(q);
    mt_free(s);
    /* "Open file" / "Open the file": "the" (bytes 5..8) only in the source */
    CHECK_STATUS(store_tm_diff("Open file", "Open the file", &q, &nq, &s, &ns));
    CHECK(nq == 0 && ns == 1 && s && s[0].start == 5 && s[0].len == 3 &&
              s[0].kind == STORE_TM_DIFF_EXTRA,
          "inserted word");
    mt_free(q);
    mt_free(s);
    CHECK_STATUS(store_tm_diff("Same", "Same", &q, &nq, &s, &ns));
    CHECK(nq == 0 && ns == 0 && q == NULL && s == NULL, "no difference");
}

static void test_terms(void) {
    char *t = store_tm_terms_json("Don't open THE file %s, the file! 3 files");
    CHECK(t && !strcmp(t, "[\"don\",\"t\",\"open\",\"the\",\"file\",\"files\"]"), "terms: %s",
          t ? t : "(null)");
    mt_free(t);
    t = store_tm_terms_json("");
    CHECK(t && !strcmp(t, "[]"), "no terms");
    mt_free(t);
}

/* ---------------------------------------------------------------- lookup */

typedef struct hits {
    int n;
    int score[64];
    char source[64][128], target[64][128];
} hits;

static int collect(void *user, const store_tm_match *m) {
    hits *h = user;
    if (h->n < 64) {
        h->score[h->n] = m->score;
        snprintf(h->source[h->n], 128, "%s", m->source);
        snprintf(h->target[h->n], 128, "%s", m->target);
    }
    h->n++;
    return 0;
}

static hits lookup(store *s, const char *text, const char *prev, const char *next, int min) {
    hits h = {0};
    store_tm_query q = {
        .source = text, .prev = prev, .next = next, .min_score = min, .max_results = 50};
    CHECK_STATUS(store_tm_lookup(s, &q, collect, &h));
    return h;
}

static int64_t fixed_clock(void *user) { return ++*(int64_t *)user; }

static const store_doc_info doc_a = {"a.po", STORE_FORMAT_PO, "en", "de", "hash-a"};
static const store_doc_info doc_b = {"b.po", STORE_FORMAT_PO, "en", "de", "hash-b"};

/* The df of every term equals the number of confirmed segments holding it. */
static void check_index_consistent(store *s, const char *when) {
    sqlite3 *db = store_db(s);
    sqlite3_stmt *st = NULL;
    const char *sql = "SELECT count(*) FROM (SELECT j.value AS term, count(*) AS n FROM segment,"
                      " json_each(segment.tm_terms) j WHERE status = 3 GROUP BY j.value) c"
                      " FULL OUTER JOIN tm_term t ON t.term = c.term WHERE c.n IS NOT t.df";
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) { /* SQLite before 3.39 has no FULL JOIN: both directions */
        sql = "SELECT (SELECT count(*) FROM (SELECT j.value AS term, count(*) AS n FROM segment,"
              " json_each(segment.tm_terms) j WHERE status = 3 GROUP BY j.value) c"
              " LEFT JOIN tm_term t ON t.term = c.term WHERE c.n IS NOT t.df)"
              " + (SELECT count(*) FROM tm_term t WHERE NOT EXISTS (SELECT 1 FROM segment,"
              " json_each(segment.tm_terms) j WHERE status = 3 AND j.value = t.term))";
        rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    }
    CHECK(rc == SQLITE_OK, "prepare: %s", sqlite3_errmsg(db));
    if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        CHECK(sqlite3_column_int(st, 0) == 0, "%s: %d terms with a wrong frequency", when,
              sqlite3_column_int(st, 0));
    sqlite3_finalize(st);
    /* the FTS rows are the confirmed segments: each term's postings = df */
    rc = sqlite3_prepare_v2(db, "SELECT term, df FROM tm_term", -1, &st, NULL);
    int wrong = 0;
    while (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        char q[256];
        snprintf(q, sizeof q, "SELECT count(*) FROM tm_fts WHERE tm_fts MATCH '\"%s\"'",
                 (const char *)sqlite3_column_text(st, 0));
        sqlite3_stmt *c = NULL;
        if (sqlite3_prepare_v2(db, q, -1, &c, NULL) == SQLITE_OK && sqlite3_step(c) == SQLITE_ROW)
            wrong += sqlite3_column_int64(c, 0) != sqlite3_column_int64(st, 1);
        else
            wrong++;
        sqlite3_finalize(c);
    }
    sqlite3_finalize(st);
    CHECK(wrong == 0, "%s: %d terms whose postings differ from their frequency", when, wrong);
}

static void test_lookup(void) {
    store *s = NULL;
    CHECK_STATUS(store_open(":memory:", &s));
    if (!s) return;
    int64_t clock = 1000;
    store_set_clock(s, fixed_clock, &clock);
    store_segment_in a[] = {
        {.source = "Intro", .target = "Einleitung", .status = STORE_SEG_CONFIRMED},
        {.source = "Open the file", .target = "Datei öffnen", .status = STORE_SEG_CONFIRMED},
        {.source = "Close", .target = "Schließen", .status = STORE_SEG_CONFIRMED},
        {.source = "Delete 3 files", .target = NULL, .status = STORE_SEG_NEW},
    };
    store_segment_in b[] = {
        {.source = "Other", .target = "Andere", .status = STORE_SEG_CONFIRMED},
        {.source = "Open the file", .target = "Die Datei öffnen", .status = STORE_SEG_CONFIRMED},
        {.source = "End", .target = "Ende", .status = STORE_SEG_CONFIRMED},
    };
    int64_t da = 0, db = 0;
    CHECK_STATUS(store_add_document(s, &doc_a, a, 4, &da));
    CHECK_STATUS(store_add_document(s, &doc_b, b, 3, &db));
    check_index_consistent(s, "after adding documents");

    /* without neighbours: two exact matches, the newer first */
    hits h = lookup(s, "Open the file", NULL, NULL, 75);
    CHECK(h.n == 2 && h.score[0] == 100 && h.score[1] == 100, "two exact matches, got %d", h.n);
    CHECK(h.n == 2 && !strcmp(h.target[0], "Die Datei öffnen"), "the newer first");
    /* in-context exact: A's neighbours */
    h = lookup(s, "Open the file", "Intro", "Close", 75);
    CHECK(h.n == 2 && h.score[0] == STORE_TM_ICE && !strcmp(h.target[0], "Datei öffnen") &&
              h.score[1] == 100,
          "ICE ranks first: %d %s", h.score[0], h.target[0]);
    h = lookup(s, "Open the file", "Other", "End", 75);
    CHECK(h.n == 2 && h.score[0] == STORE_TM_ICE && !strcmp(h.target[0], "Die Datei öffnen"),
          "ICE of B");
    h = lookup(s, "Open the file", "Intro", "End", 75);
    CHECK(h.n == 2 && h.score[0] == 100 && h.score[1] == 100, "one neighbour differs: no ICE");
    h = lookup(s, "Intro", "", "Open the file", 75);
    CHECK(h.n == 1 && h.score[0] == STORE_TM_ICE, "first segment: prev \"\" is no segment");
    h = lookup(s, "Intro", "x", "Open the file", 75);
    CHECK(h.n == 1 && h.score[0] == 100, "first segment with a prev given: no ICE");

    /* fuzzy: case and number */
    h = lookup(s, "open the file", NULL, NULL, 75);
    CHECK(h.n == 2 && h.score[0] == 99, "case: 99");
    h = lookup(s, "Open the folder", NULL, NULL, 60);
    CHECK(h.n == 2 && h.score[0] == 66, "fuzzy 66 with --min 60");
    h = lookup(s, "Open the folder", NULL, NULL, 75);
    CHECK(h.n == 0, "66 is below 75");
    /* the unconfirmed segment is not in the TM; confirming adds it */
    h = lookup(s, "Delete 3 files", NULL, NULL, 75);
    CHECK(h.n == 0, "unconfirmed segment not in the TM");
    int64_t seg3 = 0;
    {
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(store_db(s), "SELECT id FROM segment WHERE source = 'Delete 3 files'",
                           -1, &st, NULL);
        if (sqlite3_step(st) == SQLITE_ROW) seg3 = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    int64_t cid = 0;
    CHECK_STATUS(store_confirm(s, seg3, "3 Dateien löschen", 100, 10, &cid));
    h = lookup(s, "Delete 12 files", NULL, NULL, 75);
    CHECK(h.n == 1 && h.score[0] == 99 && !strcmp(h.target[0], "3 Dateien löschen"),
          "confirmed segment found by a number-only difference");
    check_index_consistent(s, "after a confirmation");
    /* editing it again takes it out until it is confirmed again */
    store_edit_in e = {.seg_id = seg3, .kind = STORE_EDIT_TYPED, .text = "3 Dateien"};
    int64_t eid = 0;
    CHECK_STATUS(store_record_edit(s, &e, &eid));
    h = lookup(s, "Delete 3 files", NULL, NULL, 75);
    CHECK(h.n == 0, "edited again: out of the TM");
    check_index_consistent(s, "after an edit");
    CHECK_STATUS(store_confirm(s, seg3, "Drei Dateien löschen", 100, 10, &cid));
    h = lookup(s, "Delete 3 files", NULL, NULL, 75);
    CHECK(h.n == 1 && !strcmp(h.target[0], "Drei Dateien löschen"), "confirmed again");
    /* exclude_seg_id leaves the edited segment out */
    store_tm_query q = {
        .source = "Delete 3 files", .min_score = 75, .max_results = 5, .exclude_seg_id = seg3};
    h = (hits){0};
    CHECK_STATUS(store_tm_lookup(s, &q, collect, &h));
    CHECK(h.n == 0, "excluded segment");
    /* bad queries */
    q = (store_tm_query){.source = NULL, .min_score = 75, .max_results = 5};
    CHECK(store_tm_lookup(s, &q, collect, &h) == MT_ERR_INVALID, "no source");
    q = (store_tm_query){.source = "x", .min_score = 101, .max_results = 5};
    CHECK(store_tm_lookup(s, &q, collect, &h) == MT_ERR_INVALID, "min out of range");

    /* stats by origin */
    store_tm_stats t;
    CHECK_STATUS(store_tm_get_stats(s, &t));
    CHECK(t.segments == 7 && t.editor_segments == 1 && t.opened_segments == 6 &&
              t.imported_segments == 0 && t.documents == 2,
          "stats: %lld segments, %lld editor, %lld opened", (long long)t.segments,
          (long long)t.editor_segments, (long long)t.opened_segments);

    /* import: all confirmed, re-import a no-op, no target refused */
    store_segment_in m[] = {
        {.source = "Save as", .target = "Speichern unter", .status = STORE_SEG_NEW},
        {.source = "Save all", .target = "Alle speichern", .status = STORE_SEG_NEW},
    };
    store_doc_info mi = {"mem.tmx", STORE_FORMAT_TMX, "en", "de", "hash-m"};
    int64_t dm = 0, dm2 = 0;
    bool already = true;
    CHECK_STATUS(store_tm_import(s, &mi, m, 2, &dm, &already));
    CHECK(dm > 0 && !already, "imported");
    mi.path = "moved.tmx"; /* the same content elsewhere */
    CHECK_STATUS(store_tm_import(s, &mi, m, 2, &dm2, &already));
    CHECK(already && dm2 == dm, "same content: already imported");
    CHECK_STATUS(store_tm_get_stats(s, &t));
    CHECK(t.imported_segments == 2 && t.imported_documents == 1 && t.segments == 9,
          "imported counted once: %lld", (long long)t.imported_segments);
    h = lookup(s, "Save as", NULL, NULL, 75);
    CHECK(h.n == 1 && h.score[0] == 100 && !strcmp(h.target[0], "Speichern unter"),
          "imported segments are confirmed");
    store_segment_in bad[] = {{.source = "x", .target = NULL}};
    store_doc_info bi = {"bad.tsv", STORE_FORMAT_TSV, "en", "de", "hash-bad"};
    CHECK(store_tm_import(s, &bi, bad, 1, &dm, &already) == MT_ERR_INVALID, "no target");
    CHECK_STATUS(store_tm_get_stats(s, &t));
    CHECK(t.segments == 9, "nothing of the refused import");
    check_index_consistent(s, "after imports");
    CHECK_STATUS(store_check(s));
    store_close(s);
}

/* ---------------------------------------------------------- plural forms */

/* Document frequency of one index term (0 when absent). */
static int64_t term_df(store *s, const char *term) {
    sqlite3_stmt *st = NULL;
    int64_t df = 0;
    if (sqlite3_prepare_v2(store_db(s), "SELECT df FROM tm_term WHERE term = ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, term, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) df = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return df;
}

typedef struct pairs_seen {
    int n;
    char source[16][64], target[16][64];
} pairs_seen;

static int collect_list(void *user, const store_tm_row *r) {
    pairs_seen *p = user;
    if (p->n < 16) {
        snprintf(p->source[p->n], 64, "%s", r->source);
        snprintf(p->target[p->n], 64, "%s", r->target);
    }
    p->n++;
    return 0;
}

static int collect_confirmed(void *user, const store_confirmed *c) {
    pairs_seen *p = user;
    if (p->n < 16) {
        snprintf(p->source[p->n], 64, "%s", c->source);
        snprintf(p->target[p->n], 64, "%s", c->target);
    }
    p->n++;
    return 0;
}

static int collect_export_row(void *user, const store_export_row *r) {
    pairs_seen *p = user;
    if (p->n < 16) {
        snprintf(p->source[p->n], 64, "%s", r->source);
        snprintf(p->target[p->n], 64, "%s", r->target);
    }
    p->n++;
    return 0;
}

/* The pair (source, target) is among the n first of p. */
static bool has_pair(const pairs_seen *p, const char *source, const char *target) {
    for (int i = 0; i < p->n && i < 16; i++)
        if (!strcmp(p->source[i], source) && !strcmp(p->target[i], target)) return true;
    return false;
}

static int check_msgid_seg(void *user, const store_segment *g) {
    *(bool *)user = !strcmp(g->source, "Delete %d file") && g->plural_source &&
                    !strcmp(g->plural_source, "Delete %d files") && g->plural_form == 2;
    return 0;
}

/* The segment keeps the msgid as its source (the editor keys by it). */
static void seg_msgid_check(store *s, int64_t seg_id) {
    bool ok = false;
    CHECK_STATUS(store_get_segment(s, seg_id, check_msgid_seg, &ok));
    CHECK(ok, "the stored segment keeps msgid, msgid_plural and its form");
}

/* A PO plural entry is stored as one segment per form, each with the msgid
** as source: the TM source of form 0 is the msgid, of forms 1.. the
** msgid_plural (what they translate). */
static void test_plural(void) {
    store *s = NULL;
    CHECK_STATUS(store_open(":memory:", &s));
    if (!s) return;
    int64_t clock = 1000;
    store_set_clock(s, fixed_clock, &clock);
    store_segment_in a[] = {
        {.source = "Intro", .target = "Einleitung", .status = STORE_SEG_CONFIRMED},
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
        {.source = "End", .target = "Ende", .status = STORE_SEG_CONFIRMED},
    };
    int64_t da = 0;
    CHECK_STATUS(store_add_document(s, &doc_a, a, 4, &da));
    check_index_consistent(s, "plural entry added");
    /* terms: "file" only in form 0's source, "files" only in form 1's */
    CHECK(term_df(s, "file") == 1 && term_df(s, "files") == 1 && term_df(s, "delete") == 2,
          "plural terms: file %lld, files %lld, delete %lld", (long long)term_df(s, "file"),
          (long long)term_df(s, "files"), (long long)term_df(s, "delete"));

    /* the msgid: only the singular as 100%; the plural form's source
    ** "Delete %d files" is 1 hard edit of 3 tokens: floor(200/3) = 66 */
    hits h = lookup(s, "Delete %d file", NULL, NULL, 75);
    CHECK(h.n == 1 && h.score[0] == 100 && !strcmp(h.target[0], "%d Datei löschen") &&
              !strcmp(h.source[0], "Delete %d file"),
          "msgid: the singular only (%d: %s)", h.n, h.n ? h.target[0] : "");
    h = lookup(s, "Delete %d file", NULL, NULL, 60);
    CHECK(h.n == 2 && h.score[0] == 100 && !strcmp(h.target[0], "%d Datei löschen") &&
              h.score[1] == 66 && !strcmp(h.source[1], "Delete %d files") &&
              !strcmp(h.target[1], "%d Dateien löschen"),
          "msgid at 60: the plural form as a 66 of its own source (%d)", h.n);
    /* the msgid_plural: the plural form's translation as 100% */
    h = lookup(s, "Delete %d files", NULL, NULL, 75);
    CHECK(h.n == 1 && h.score[0] == 100 && !strcmp(h.target[0], "%d Dateien löschen") &&
              !strcmp(h.source[0], "Delete %d files"),
          "msgid_plural: the plural form (%d: %s)", h.n, h.n ? h.target[0] : "");
    /* in context: the neighbours are the effective sources too (the
    ** editor shows the msgid_plural as form 1's source) */
    h = lookup(s, "Delete %d file", "Intro", "Delete %d files", 75);
    CHECK(h.n == 1 && h.score[0] == STORE_TM_ICE, "form 0 in context: ICE (%d)",
          h.n ? h.score[0] : -1);
    h = lookup(s, "Delete %d files", "Delete %d file", "End", 75);
    CHECK(h.n == 1 && h.score[0] == STORE_TM_ICE, "form 1 in context: ICE (%d)",
          h.n ? h.score[0] : -1);
    h = lookup(s, "End", "Delete %d files", "", 75);
    CHECK(h.n == 1 && h.score[0] == STORE_TM_ICE, "after a plural entry: ICE");
    h = lookup(s, "End", "Delete %d file", "", 75);
    CHECK(h.n == 1 && h.score[0] == 100, "the msgid is not form 1's source: no ICE");

    /* a three-form language: forms 1 and 2 both translate the plural */
    store_doc_info pl = {"pl.po", STORE_FORMAT_PO, "en", "pl", "hash-pl"};
    store_segment_in p[] = {
        {.source = "Delete %d file",
         .plural_source = "Delete %d files",
         .plural_form = 0,
         .target = "Usuń %d plik",
         .status = STORE_SEG_CONFIRMED},
        {.source = "Delete %d file",
         .plural_source = "Delete %d files",
         .plural_form = 1,
         .target = "Usuń %d pliki",
         .status = STORE_SEG_CONFIRMED},
        {.source = "Delete %d file",
         .plural_source = "Delete %d files",
         .plural_form = 2,
         .target = "Usuń %d plików",
         .status = STORE_SEG_NEW},
    };
    int64_t dp = 0;
    CHECK_STATUS(store_add_document(s, &pl, p, 3, &dp));
    h = lookup(s, "Delete %d files", NULL, NULL, 75);
    CHECK(h.n == 2 && h.score[0] == 100 && h.score[1] == 100 &&
              !strcmp(h.target[0], "Usuń %d pliki") && !strcmp(h.target[1], "%d Dateien löschen"),
          "msgid_plural: form 1 of both, newest first (%d)", h.n);
    /* confirming form 2 in the editor adds it under the plural source */
    int64_t seg2 = 0, cid = 0;
    {
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(store_db(s),
                           "SELECT id FROM segment WHERE document_id = ?1 AND plural_form = 2", -1,
                           &st, NULL);
        sqlite3_bind_int64(st, 1, dp);
        if (sqlite3_step(st) == SQLITE_ROW) seg2 = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    CHECK_STATUS(store_confirm(s, seg2, "Usuń %d plików", 100, 10, &cid));
    h = lookup(s, "Delete %d files", NULL, NULL, 75);
    CHECK(h.n == 3 && !strcmp(h.target[0], "Usuń %d plików"), "form 2 confirmed: found (%d)", h.n);
    h = lookup(s, "Delete %d file", NULL, NULL, 75);
    CHECK(
        h.n == 2 &&
            (!strcmp(h.target[0], "Usuń %d plik") || !strcmp(h.target[1], "Usuń %d plik")) &&
            (!strcmp(h.target[0], "%d Datei löschen") || !strcmp(h.target[1], "%d Datei löschen")),
        "msgid: the two singulars only (%d)", h.n);
    check_index_consistent(s, "plural form confirmed");
    CHECK(term_df(s, "files") == 3 && term_df(s, "file") == 2, "terms after: files %lld, file %lld",
          (long long)term_df(s, "files"), (long long)term_df(s, "file"));

    /* tm export, fine-tuning data, corpus export: each form with its source */
    pairs_seen ps = {0};
    CHECK_STATUS(store_tm_list(s, collect_list, &ps));
    CHECK(ps.n == 7, "tm list: 7 pairs (4 + 3 segments, all distinct), got %d", ps.n);
    CHECK(has_pair(&ps, "Delete %d file", "%d Datei löschen") &&
              has_pair(&ps, "Delete %d files", "%d Dateien löschen") &&
              has_pair(&ps, "Delete %d file", "Usuń %d plik") &&
              has_pair(&ps, "Delete %d files", "Usuń %d pliki") &&
              has_pair(&ps, "Delete %d files", "Usuń %d plików") &&
              !has_pair(&ps, "Delete %d file", "%d Dateien löschen") &&
              !has_pair(&ps, "Delete %d file", "Usuń %d plików"),
          "tm list pairs each form with its own source");
    ps = (pairs_seen){0};
    CHECK_STATUS(store_list_confirmed(s, 0, INT64_MIN, collect_confirmed, &ps));
    CHECK(ps.n == 7 && has_pair(&ps, "Delete %d file", "%d Datei löschen") &&
              has_pair(&ps, "Delete %d files", "%d Dateien löschen") &&
              has_pair(&ps, "Delete %d files", "Usuń %d plików") &&
              !has_pair(&ps, "Delete %d file", "%d Dateien löschen"),
          "confirmed segments (fine-tuning) pair each form with its source (%d)", ps.n);
    ps = (pairs_seen){0};
    CHECK_STATUS(store_export_confirmed(s, dp, collect_export_row, &ps));
    CHECK(ps.n == 1 && has_pair(&ps, "Delete %d files", "Usuń %d plików"),
          "export of the confirmation: form 2 with the plural source (%d)", ps.n);
    /* the store itself keeps the msgid as every form's source */
    seg_msgid_check(s, seg2);
    CHECK_STATUS(store_check(s));
    store_close(s);
}

/* --------------------------------------------- index against brute force */

typedef struct pair {
    char src[160], tgt[32];
} pair;

static uint64_t rng(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* A sentence of 1..9 words from a skewed vocabulary, sometimes with a
** number, a placeholder or punctuation. */
static void sentence(uint64_t *x, char *out, size_t cap) {
    static const char *const vocab[] = {"the",    "file", "open",  "save",  "a",     "to",
                                        "folder", "new",  "close", "print", "Error", "cannot",
                                        "user",   "disk", "full",  "copy",  "remove"};
    int n = 1 + (int)(rng(x) % 9);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        uint64_t r = rng(x);
        /* squared: low indices (common words) far more often */
        size_t k = (size_t)((r % 17) * ((r >> 8) % 17) / 17);
        char w[32];
        if ((r >> 20) % 13 == 0)
            snprintf(w, sizeof w, "%d", (int)((r >> 24) % 50));
        else if ((r >> 20) % 17 == 1)
            snprintf(w, sizeof w, "%%s");
        else
            snprintf(w, sizeof w, "%s", vocab[k]);
        if (strlen(out) + strlen(w) + 3 >= cap) break;
        if (i) strcat(out, " ");
        strcat(out, w);
    }
    if (rng(x) % 4 == 0) strcat(out, ".");
}

static void test_against_brute_force(void) {
    store *s = NULL;
    CHECK_STATUS(store_open(":memory:", &s));
    if (!s) return;
    enum { N = 400, Q = 150 };
    static pair p[N];
    static store_segment_in segs[N];
    uint64_t x = 0x1234567890abcdefull;
    for (int i = 0; i < N; i++) {
        sentence(&x, p[i].src, sizeof p[i].src);
        snprintf(p[i].tgt, sizeof p[i].tgt, "t%d", i);
        segs[i] = (store_segment_in){.source = p[i].src,
                                     .target = p[i].tgt,
                                     .status = i % 5 ? STORE_SEG_CONFIRMED : STORE_SEG_NEW};
    }
    store_doc_info info = {"bf.po", STORE_FORMAT_PO, "en", "de", "bf"};
    int64_t doc = 0;
    CHECK_STATUS(store_add_document(s, &info, segs, N, &doc));
    check_index_consistent(s, "brute-force store");
    int wrong = 0, n_subset = 0;
    for (int qi = 0; qi < Q; qi++) {
        char qtext[160];
        sentence(&x, qtext, sizeof qtext);
        int min = qi % 3 == 0 ? 50 : 75;
        /* every confirmed segment scored by hand, distinct (source, target) */
        int want = 0;
        for (int i = 0; i < N; i++)
            if (i % 5 && store_tm_score(qtext, p[i].src) >= min) want++;
        hits h = {0};
        store_tm_query q = {.source = qtext, .min_score = min, .max_results = 1000};
        CHECK_STATUS(store_tm_lookup(s, &q, collect, &h));
        /* the index guarantees every match that shares a word with the
        ** query (store_tm.h); queries whose non-word tokens alone can
        ** reach min (a number, "%s", "file." at 50) get a subset */
        tm_tokens qt;
        CHECK_STATUS(tm_tokenize(qtext, &qt));
        int n_word = 0;
        for (int k = 0; k < qt.n; k++)
            n_word += qt.v[k].kind == TM_TOK_WORD;
        int need_word = (qt.n * min + 99) / 100 - (qt.n - n_word);
        tm_tokens_free(&qt);
        if (need_word <= 0) n_subset++;
        bool ok = need_word > 0 ? h.n == want : h.n <= want;
        for (int k = 1; k < h.n && k < 64; k++)
            ok = ok && h.score[k] <= h.score[k - 1];
        for (int k = 0; k < h.n && k < 64; k++)
            ok = ok && store_tm_score(qtext, h.source[k]) == h.score[k];
        if (!ok && wrong++ < 5)
            fprintf(stderr, "query '%s' min %d: lookup %d matches, brute force %d\n", qtext, min,
                    h.n, want);
    }
    CHECK(wrong == 0, "%d of %d queries differ from brute force", wrong, Q);
    CHECK(n_subset < Q / 5, "most queries (%d of %d left) are compared exactly", n_subset, Q);
    store_close(s);
}

int main(int argc, char **argv) {
    TEST_MAIN_BEGIN(argc, argv);
    test_scores();
    test_bands();
    test_diff();
    test_terms();
    test_lookup();
    test_plural();
    test_against_brute_force();
    TEST_MAIN_END();
}
