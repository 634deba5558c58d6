/*
** test_glossary.c: glossary files and matching (app/formats/glossary.h),
** the glossary QA warning (app/formats/qa.h) and the editor's terms line
** (app/edit/edit_gloss.h).  Fixtures are written here by hand; offsets in
** the matching cases are counted by hand in the comments.
*/
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "edit_gloss.h"
#include "glossary.h"
#include "harness.h"
#include "mt_base.h"
#include "qa.h"
#include "store.h"
#include "store_glossary.h"

static mt_status parse(const char *name, const char *text, app_gloss_list *l) {
    return app_glossary_parse(name, text, strlen(text), APP_GLOSS_AUTO, "en", "de", l, NULL);
}

static bool entry_is(const app_gloss_entry *e, const char *s, const char *t, const char *note,
                     bool cs) {
    return !strcmp(e->source, s) && !strcmp(e->target, t) && !strcmp(e->note, note) &&
           e->case_sensitive == cs;
}

/* ------------------------------------------------------------------ TBX */

static const char tbx[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<martif type=\"TBX-Basic\" xml:lang=\"en-US\">\n"
    " <martifHeader><fileDesc><sourceDesc><p>test</p></sourceDesc></fileDesc></martifHeader>\n"
    " <text><body>\n"
    "  <termEntry id=\"t1\">\n"
    "   <descrip type=\"definition\">a named collection of data</descrip>\n"
    "   <langSet xml:lang=\"en-US\">\n"
    "    <tig><term>file</term><termNote type=\"partOfSpeech\">noun</termNote></tig>\n"
    "   </langSet>\n"
    "   <langSet xml:lang=\"fr\"><tig><term>fichier</term></tig></langSet>\n"
    "   <langSet xml:lang=\"de-DE\">\n"
    "    <tig><term>Datei</term></tig>\n"
    "   </langSet>\n"
    "  </termEntry>\n"
    "  <termEntry id=\"t2\">\n"
    "   <langSet xml:lang=\"en\">\n"
    "    <ntig><termGrp><term>save</term></termGrp></ntig>\n"
    "    <tig><term>store</term><note>verb</note><note>adverb</note><note>verb</note></tig>\n"
    "   </langSet>\n"
    "   <langSet xml:lang=\"de\">\n"
    "    <tig><term>speichern</term></tig>\n"
    "    <tig><term>sichern</term><termNote type=\"administrativeStatus\">"
    "deprecatedTerm-admn-sts</termNote></tig>\n"
    "   </langSet>\n"
    "  </termEntry>\n"
    "  <termEntry id=\"t3\"><langSet xml:lang=\"fr\"><tig><term>x</term></tig></langSet>"
    "</termEntry>\n"
    " </body></text>\n"
    "</martif>\n";

static void test_tbx(void) {
    app_gloss_list l;
    app_gloss_format used = APP_GLOSS_AUTO;
    CHECK_STATUS(
        app_glossary_parse("t.tbx", tbx, strlen(tbx), APP_GLOSS_AUTO, "en", "de", &l, &used));
    CHECK(used == APP_GLOSS_TBX, "detected as TBX");
    /* t1: file -> Datei with the entry's definition; t2: save and store
    ** (each) -> speichern, sichern deprecated; t3 has no en/de */
    CHECK(l.n == 3, "3 pairs, got %d", (int)l.n);
    if (l.n == 3) {
        CHECK(entry_is(&l.v[0], "file", "Datei", "a named collection of data", false),
              "t1: %s/%s/%s", l.v[0].source, l.v[0].target, l.v[0].note);
        CHECK(entry_is(&l.v[1], "save", "speichern", "", false), "t2 save: %s/%s/%s", l.v[1].source,
              l.v[1].target, l.v[1].note);
        /* a note twice is kept once; "verb" is no duplicate of "adverb" */
        CHECK(entry_is(&l.v[2], "store", "speichern", "verb; adverb", false), "t2 store: %s/%s/%s",
              l.v[2].source, l.v[2].target, l.v[2].note);
    }
    /* sichern skipped for save and for store, and t3 */
    CHECK(l.skipped == 3, "3 skipped, got %lld", (long long)l.skipped);
    app_gloss_list_free(&l);

    /* other direction: de -> en takes the de langSet as source */
    CHECK_STATUS(
        app_glossary_parse("t.tbx", tbx, strlen(tbx), APP_GLOSS_TBX, "de", "en", &l, NULL));
    CHECK(l.n == 3 && !strcmp(l.v[0].source, "Datei") && !strcmp(l.v[0].target, "file"),
          "de -> en: %d pairs", (int)l.n);
    app_gloss_list_free(&l);

    /* broken TBX: the line of the error, nothing read */
    const char *bad = "<martif>\n<text><body>\n<termEntry>\n</body></text></martif>\n";
    mt_status rc = parse("b.tbx", bad, &l);
    CHECK(rc == MT_ERR_FORMAT && strstr(mt_errmsg(), "b.tbx:4:"), "malformed: %s", mt_errmsg());
    CHECK(l.n == 0 && l.v == NULL, "nothing kept");
    const char *empty = "<martif><text><body><termEntry><langSet xml:lang=\"en\">\n"
                        "<tig><term> </term></tig></langSet><langSet xml:lang=\"de\"><tig><term>"
                        "x</term></tig></langSet></termEntry></body></text></martif>";
    rc = parse("e.tbx", empty, &l);
    CHECK(rc == MT_ERR_FORMAT && strstr(mt_errmsg(), "e.tbx:2: empty <term>"), "empty term: %s",
          mt_errmsg());
    rc = parse("h.tbx", "<html><body/></html>", &l);
    CHECK(rc == MT_ERR_FORMAT && strstr(mt_errmsg(), "not TBX"), "not TBX: %s", mt_errmsg());
}

/* ------------------------------------------------------------- CSV, TSV */

static const char csv[] = "Source,Target,Note,Case\r\n"
                          "\"file, data\",\"Datei, Daten\",\"a \"\"quoted\"\" note, with comma\","
                          "no\r\n"
                          "Windows,Windows,,yes\r\n"
                          "\r\n"
                          "save,speichern,\"line one\nline two\",0\r\n";

static void test_csv(void) {
    app_gloss_list l;
    app_gloss_format used = APP_GLOSS_AUTO;
    CHECK_STATUS(
        app_glossary_parse("g.csv", csv, strlen(csv), APP_GLOSS_AUTO, "en", "de", &l, &used));
    CHECK(used == APP_GLOSS_CSV, "detected as CSV");
    CHECK(l.n == 3, "3 entries (header and blank line skipped), got %d", (int)l.n);
    if (l.n == 3) {
        CHECK(
            entry_is(&l.v[0], "file, data", "Datei, Daten", "a \"quoted\" note, with comma", false),
            "quoted: [%s] [%s] [%s]", l.v[0].source, l.v[0].target, l.v[0].note);
        CHECK(entry_is(&l.v[1], "Windows", "Windows", "", true), "case yes");
        CHECK(entry_is(&l.v[2], "save", "speichern", "line one\nline two", false),
              "line break in a quoted note: [%s]", l.v[2].note);
    }
    app_gloss_list_free(&l);

    /* a header naming the columns in another order, by language */
    const char *by_lang = "just one field\n"; /* one field: refused */
    mt_status rc =
        app_glossary_parse("l.csv", by_lang, strlen(by_lang), APP_GLOSS_CSV, "en", "de", &l, NULL);
    CHECK(rc == MT_ERR_FORMAT && strstr(mt_errmsg(), "l.csv:1: 1 CSV field"), "one field: %s",
          mt_errmsg());
    const char *langs = "note,de,en\nfor menus,Datei,file\n";
    CHECK_STATUS(
        app_glossary_parse("l.csv", langs, strlen(langs), APP_GLOSS_CSV, "en", "de", &l, NULL));
    CHECK(l.n == 1 && entry_is(&l.v[0], "file", "Datei", "for menus", false),
          "columns named by language");
    app_gloss_list_free(&l);

    /* a quote inside an unquoted field is text */
    const char *inch = "5\" screen,5-Zoll-Bildschirm\n";
    CHECK_STATUS(parse("i.csv", inch, &l));
    CHECK(l.n == 1 && !strcmp(l.v[0].source, "5\" screen"), "5\" screen read as is");
    app_gloss_list_free(&l);

    /* broken CSV files: line numbers counted by hand */
    struct {
        const char *name, *text, *want;
    } bad[] = {
        {"c.csv", "a,b\nc,d\ne,f,g,h,i\n", "c.csv:3: 5 fields, the first row has 2"},
        {"q.csv", "a,b\n\"c,d\n", "q.csv:2: quoted field not closed"},
        {"x.csv", "a,b\n\"c\"x,d\n", "x.csv:2: text after the closing quote"},
        {"e.csv", "a,b\n  ,d\n", "e.csv:2: empty source term"},
        {"k.csv", "a,b,,maybe\n", "k.csv:1: case column holds 'maybe'"},
        {"u.csv", "a,b\nc,\xff\xfe\n", "u.csv:2: invalid UTF-8"},
        {"h.csv", "source,note\nx,y\n", "h.csv:1: header row lacks"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = parse(bad[i].name, bad[i].text, &l);
        CHECK(rc == MT_ERR_FORMAT && strstr(mt_errmsg(), bad[i].want) && l.n == 0,
              "%s: got '%s', want '%s'", bad[i].name, mt_errmsg(), bad[i].want);
    }
    /* a NUL byte on line 2 (length given: the string holds it) */
    const char nul[] = "a,b\nc\0,d\n";
    rc = app_glossary_parse("n.csv", nul, sizeof nul - 1, APP_GLOSS_AUTO, "en", "de", &l, NULL);
    CHECK(rc == MT_ERR_FORMAT && strstr(mt_errmsg(), "n.csv:2: NUL byte"), "NUL: %s", mt_errmsg());
}

static const char tsv[] = "file\tDatei\tdocument\tno\n"
                          "GNOME\tGNOME\t\tcs\n"
                          "size\tGr\xc3\xb6\xc3\x9f"
                          "e\t\tTRUE\n"
                          "folder\tOrdner\t\t\n";

static void test_tsv(void) {
    app_gloss_list l;
    app_gloss_format used = APP_GLOSS_AUTO;
    CHECK_STATUS(
        app_glossary_parse("g.txt", tsv, strlen(tsv), APP_GLOSS_AUTO, "en", "de", &l, &used));
    CHECK(used == APP_GLOSS_TSV, "detected as TSV");
    CHECK(l.n == 4, "4 entries, got %d", (int)l.n);
    if (l.n == 4) {
        CHECK(entry_is(&l.v[0], "file", "Datei", "document", false), "no");
        CHECK(entry_is(&l.v[1], "GNOME", "GNOME", "", true), "cs");
        CHECK(entry_is(&l.v[2], "size",
                       "Gr\xc3\xb6\xc3\x9f"
                       "e",
                       "", true),
              "TRUE");
        CHECK(entry_is(&l.v[3], "folder", "Ordner", "", false), "empty case column");
    }
    app_gloss_list_free(&l);
    mt_status rc = parse("w.tsv", "a\tb\tc\nd\te\n", &l);
    CHECK(rc == MT_ERR_FORMAT && strstr(mt_errmsg(), "w.tsv:2: 2 fields, the first row has 3"),
          "column count: %s", mt_errmsg());
    rc = parse("t.tsv", "a\tb\n\tc\n", &l);
    CHECK(rc == MT_ERR_FORMAT && strstr(mt_errmsg(), "t.tsv:2: empty source term"), "empty: %s",
          mt_errmsg());
}

/* ----------------------------------------------------------- round trip */

typedef struct memfile {
    char *buf;
    size_t n;
} memfile;

static void test_round_trip(void) {
    store *s = NULL;
    CHECK_STATUS(store_open(":memory:", &s));
    if (s == NULL) return;
    const char *files[3] = {tsv, csv, tbx};
    const char *names[3] = {"g.tsv", "g.csv", "g.tbx"};
    /* the TBX's file -> Datei is the TSV's, its save -> speichern the CSV's */
    const int32_t fresh[3] = {4, 3, 1};
    int32_t total = 0;
    for (int f = 0; f < 3; f++) {
        app_gloss_list l;
        CHECK_STATUS(parse(names[f], files[f], &l));
        store_gloss_entry e[8];
        for (int32_t i = 0; i < l.n && i < 8; i++)
            e[i] = (store_gloss_entry){.project = "p",
                                       .src_lang = "en",
                                       .tgt_lang = "de",
                                       .source = l.v[i].source,
                                       .target = l.v[i].target,
                                       .note = l.v[i].note,
                                       .case_sensitive = l.v[i].case_sensitive,
                                       .origin = names[f]};
        int32_t added = -1;
        CHECK_STATUS(store_glossary_add(s, e, l.n, &added));
        CHECK(added == fresh[f], "%s: %d new, got %d", names[f], (int)fresh[f], (int)added);
        total += added;
        CHECK_STATUS(store_glossary_add(s, e, l.n, &added));
        CHECK(added == 0, "%s: re-import adds 0, got %d", names[f], (int)added);
        app_gloss_list_free(&l);
    }
    CHECK(total == 8, "8 entries, got %d", (int)total);

    /* export both ways, parse again, import again: nothing new, same rows */
    app_glossary *g = NULL;
    CHECK_STATUS(app_glossary_load(s, "p", "en", "de", &g));
    int32_t n = app_glossary_count(g);
    CHECK(n == 8, "loaded 8, got %d", (int)n);
    app_gloss_entry *v = mt_xcalloc((size_t)n, sizeof *v);
    for (int32_t i = 0; i < n; i++)
        v[i] = *app_glossary_entry(g, i);
    for (int tbx_out = 0; tbx_out < 2; tbx_out++) {
        memfile m = {0};
        FILE *f = open_memstream(&m.buf, &m.n);
        CHECK_STATUS(tbx_out ? app_glossary_write_tbx(f, v, n, "en", "de")
                             : app_glossary_write_tsv(f, v, n));
        fclose(f);
        app_gloss_list l;
        CHECK_STATUS(app_glossary_parse(tbx_out ? "o.tbx" : "o.tsv", m.buf, m.n, APP_GLOSS_AUTO,
                                        "en", "de", &l, NULL));
        bool same = l.n == n;
        for (int32_t i = 0; same && i < n; i++)
            same = entry_is(&l.v[i], v[i].source, v[i].target,
                            /* both flatten the note's line break */
                            strchr(v[i].note, '\n') ? "line one line two" : v[i].note,
                            v[i].case_sensitive);
        CHECK(same, "%s export reads back the same %d entries (got %d)", tbx_out ? "TBX" : "TSV",
              (int)n, (int)l.n);
        store_gloss_entry e[16];
        for (int32_t i = 0; i < l.n && i < 16; i++)
            e[i] = (store_gloss_entry){.project = "p",
                                       .src_lang = "en",
                                       .tgt_lang = "de",
                                       .source = l.v[i].source,
                                       .target = l.v[i].target,
                                       .note = l.v[i].note,
                                       .case_sensitive = l.v[i].case_sensitive};
        int32_t added = -1;
        CHECK_STATUS(store_glossary_add(s, e, l.n < 16 ? l.n : 16, &added));
        CHECK(added == 0, "re-import of the export adds 0, got %d", (int)added);
        app_gloss_list_free(&l);
        free(m.buf);
    }
    mt_free(v);
    app_glossary_free(g);
    store_close(s);
}

/* -------------------------------------------------------------- matching */

static app_glossary *make(const app_gloss_entry *e, int32_t n) {
    app_glossary *g = NULL;
    CHECK_STATUS(app_glossary_new(e, n, &g));
    return g;
}

typedef struct want {
    int32_t start, len, entry;
} want;

static void check_matches(const app_glossary *g, const char *text, const want *w, int32_t nw,
                          const char *what) {
    app_gloss_match *m = NULL;
    int32_t n = -1;
    CHECK_STATUS(app_glossary_match(g, text, &m, &n));
    bool ok = n == nw;
    for (int32_t i = 0; ok && i < n; i++)
        ok = m[i].start == w[i].start && m[i].len == w[i].len && m[i].entry == w[i].entry;
    CHECK(ok, "%s: %d matches, want %d", what, (int)n, (int)nw);
    if (!ok)
        for (int32_t i = 0; i < n; i++)
            fprintf(stderr, "   got start %d len %d entry %d\n", (int)m[i].start, (int)m[i].len,
                    (int)m[i].entry);
    mt_free(m);
}

static void test_match(void) {
    const app_gloss_entry e[] = {
        {"file", "Datei", "", false},                /* 0 */
        {"file manager", "Dateimanager", "", false}, /* 1 */
        {"manager", "Verwaltung", "", false},        /* 2 */
        {"Gr\xc3\xb6\xc3\x9f"
         "e",
         "size", "", false},          /* 3 Größe */
        {"GNOME", "GNOME", "", true}, /* 4 case-sensitive */
        {"open",
         "\xc3\xb6"
         "ffnen",
         "", false},                     /* 5 */
        {"file", "Akte", "", false},     /* 6 alternative of 0 */
        {"e-mail", "E-Mail", "", false}, /* 7 */
    };
    app_glossary *g = make(e, 8);
    CHECK(app_glossary_count(g) == 8, "8 entries");
    /* bytes: "Open the File Manager, not the profile; " is 0..39 (Open 0-3,
    ** File 9-12, Manager 14-20, profile 31-37); "GRÖSSE und Größe; " from 40
    ** (Ö and ö, ß take two bytes each: GRÖSSE 40-46, Größe 52-58);
    ** "gnome vs GNOME; " from 61 (gnome 61-65, GNOME 70-74); "e-mail." from 77
    ** (e-mail 77-82). */
    const char *text = "Open the File Manager, not the profile; GR\xc3\x96SSE und "
                       "Gr\xc3\xb6\xc3\x9f"
                       "e; gnome vs GNOME; e-mail.";
    CHECK(strlen(text) == 84, "text is 84 bytes, got %zu", strlen(text));
    /* Open (case folded); File Manager (longest: beats file and manager);
    ** not "file" in profile; GRÖSSE folds to grösse, not größe; Größe;
    ** gnome not (case-sensitive); GNOME; e-mail */
    const want w[] = {{0, 4, 5}, {9, 12, 1}, {52, 7, 3}, {70, 5, 4}, {77, 6, 7}};
    check_matches(g, text, w, 5, "mixed sentence");

    check_matches(g, "a file_name b", NULL, 0, "file_name is one word");
    /* one term, two targets: both at the same span, entry order */
    check_matches(g, "(the file)", (const want[]){{5, 4, 0}, {5, 4, 6}}, 2, "two targets");
    /* word boundaries: file-based (the hyphen is punctuation) */
    check_matches(g, "file-based", (const want[]){{0, 4, 0}, {0, 4, 6}}, 2, "file-based");
    /* multi-word term across a line break and two spaces: "File\n  manager" 0..14 */
    check_matches(g, "File\n  manager", (const want[]){{0, 14, 1}}, 1, "white space differs");
    /* but not across punctuation the term lacks */
    check_matches(g, "file, manager", (const want[]){{0, 4, 0}, {0, 4, 6}, {6, 7, 2}}, 3,
                  "comma breaks the term");

    /* plurals of the last word: "file managers" 0..12, "files" 18..22 */
    check_matches(g, "file managers and files", (const want[]){{0, 13, 1}, {18, 5, 0}, {18, 5, 6}},
                  3, "plural s");
    /* not a plural: "filed", "filess"; GNOMES: case-sensitive entries take "S" */
    check_matches(g, "filed filess GNOMES gnomes", (const want[]){{13, 6, 4}}, 1,
                  "other endings; case-sensitive plural");
    app_glossary_free(g);
    const app_gloss_entry pl[] = {{"box", "Kasten", "", false},
                                  {"calendar", "Kalender", "", false}};
    g = make(pl, 2);
    /* "No boxes, no calendars.": boxes 3..7, calendars 13..21 */
    check_matches(g, "No boxes, no calendars.", (const want[]){{3, 5, 0}, {13, 9, 1}}, 2,
                  "plural es and s");
    check_matches(g, "boxing calendarss", NULL, 0, "no other suffix");
    app_glossary_free(g);
    g = NULL;

    /* overlaps: the longest wins even when it starts later */
    const app_gloss_entry o[] = {
        {"open file", "Datei öffnen", "", false},                    /* 0: 9 bytes  */
        {"file system manager", "Dateisystemverwaltung", "", false}, /* 1: 19 bytes */
        {"file system", "Dateisystem", "", false},                   /* 2: 11 bytes */
        {"system call", "Systemaufruf", "", false},                  /* 3: 11 bytes */
    };
    g = make(o, 4);
    /* "open file system manager": open 0-3, file 5-8 .. manager 17-23 */
    check_matches(g, "open file system manager", (const want[]){{5, 19, 1}}, 1, "longest wins");
    /* "file system call": two 11-byte terms overlap; the earlier wins */
    check_matches(g, "file system call", (const want[]){{0, 11, 2}}, 1, "tie: earlier wins");
    /* "open file and system call": both kept, no overlap (open 0, system 14) */
    check_matches(g, "open file and system call", (const want[]){{0, 9, 0}, {14, 11, 3}}, 2,
                  "two terms");
    app_glossary_free(g);

    /* CJK: no spaces; 文件 in 打开文件 (each character 3 bytes: 文件 at 6) */
    const app_gloss_entry c[] = {{"\xe6\x96\x87\xe4\xbb\xb6", "Datei", "", false}};
    g = make(c, 1);
    check_matches(g, "\xe6\x89\x93\xe5\xbc\x80\xe6\x96\x87\xe4\xbb\xb6", (const want[]){{6, 6, 0}},
                  1, "CJK term inside a run");
    check_matches(g, NULL, NULL, 0, "NULL text");
    app_glossary_free(g);
    check_matches(NULL, "file", NULL, 0, "no glossary");
}

/* A glossary of many terms: every one found, in a text of all of them. */
static void test_many(void) {
    enum { N = 5000 };
    app_gloss_entry *e = mt_xcalloc(N, sizeof *e);
    char(*src)[24] = mt_xcalloc(N, 24);
    for (int i = 0; i < N; i++) {
        snprintf(src[i], 24, "term%d x", i);
        e[i] = (app_gloss_entry){src[i], "T", "", false};
    }
    app_glossary *g = make(e, N);
    /* "term4999 x term0 x" -> both found; "term12" alone not (needs " x") */
    check_matches(g, "term4999 x term0 x term12", (const want[]){{0, 10, 4999}, {11, 7, 0}}, 2,
                  "5000 terms");
    app_glossary_free(g);
    mt_free(src);
    mt_free(e);
}

/* Speed, printed (not checked: machines differ): 20000 terms of 1-3 words
** from a 3000-word vocabulary, 2000 segments of 15 words. */
static uint64_t rng_next(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void word(uint64_t *x, char *out) {
    int w = (int)(rng_next(x) % 3000);
    snprintf(out, 16, "w%c%c%d", 'a' + w % 26, 'a' + (w / 26) % 26, w);
}

static void test_speed(void) {
    enum { NT = 20000, NS = 2000 };
    uint64_t x = 88172645463325252ull;
    char(*terms)[64] = mt_xcalloc(NT, 64);
    app_gloss_entry *e = mt_xcalloc(NT, sizeof *e);
    for (int i = 0; i < NT; i++) {
        int k = 1 + (int)(rng_next(&x) % 3);
        char *p = terms[i];
        for (int j = 0; j < k; j++) {
            if (j) *p++ = ' ';
            word(&x, p);
            p += strlen(p);
        }
        e[i] = (app_gloss_entry){terms[i], "T", "", (i % 7) == 0};
    }
    double t0 = now_s();
    app_glossary *g = make(e, NT);
    double t1 = now_s();
    char seg[400];
    int64_t found = 0;
    for (int i = 0; i < NS; i++) {
        char *p = seg;
        for (int j = 0; j < 15; j++) {
            if (j) *p++ = ' ';
            word(&x, p);
            p += strlen(p);
        }
        app_gloss_match *m = NULL;
        int32_t n = 0;
        CHECK_STATUS(app_glossary_match(g, seg, &m, &n));
        found += n;
        mt_free(m);
    }
    double t2 = now_s();
    CHECK(found > 0, "some terms found in random text");
    fprintf(stderr,
            "speed: %d terms indexed in %.1f ms; %d segments of 15 words matched in %.1f ms "
            "(%.1f us per segment, %lld matches)\n",
            NT, (t1 - t0) * 1e3, NS, (t2 - t1) * 1e3, (t2 - t1) * 1e6 / NS, (long long)found);
    app_glossary_free(g);
    mt_free(e);
    mt_free(terms);
}

static void test_match_targets(void) {
    const app_gloss_entry e[] = {
        {"file", "Datei", "", false},
        {"save", "speichern", "", false},
        {"store", "speichern", "", false},
        {"GNOME", "GNOME", "", true},
    };
    app_glossary *g = make(e, 4);
    /* "Die Datei speichern, nicht dateien, gnome.": Datei 4-8, speichern
    ** 10-18 (targets of save and store), dateien no (whole words), gnome no
    ** (case-sensitive entry) */
    app_gloss_match *m = NULL;
    int32_t n = -1;
    CHECK_STATUS(
        app_glossary_match_targets(g, "Die Datei speichern, nicht dateien, gnome.", &m, &n));
    CHECK(n == 3 && m[0].start == 4 && m[0].len == 5 && m[0].entry == 0 && m[1].start == 10 &&
              m[1].len == 9 && m[1].entry == 1 && m[2].start == 10 && m[2].entry == 2,
          "target matches: %d", (int)n);
    mt_free(m);
    app_glossary_free(g);
}

static void test_target_present(void) {
    CHECK(app_glossary_target_present("Die Dateien sind weg", "Datei", false), "inflection");
    CHECK(app_glossary_target_present("der Dateiname", "Datei", false), "compound start");
    CHECK(!app_glossary_target_present("die Textdatei", "Datei", false), "compound end: no");
    CHECK(app_glossary_target_present("die datei", "Datei", false), "case folded");
    CHECK(!app_glossary_target_present("die datei", "Datei", true), "case-sensitive");
    CHECK(app_glossary_target_present("Gr\xc3\x96\xc3\x9f"
                                      "e",
                                      "gr\xc3\xb6\xc3\x9f"
                                      "e",
                                      false),
          "Ö folds to ö");
    CHECK(app_glossary_target_present("ein E-Mail-Konto", "E-Mail", false), "hyphenated");
    CHECK(!app_glossary_term_present("Dateien", "Datei", false), "term_present: whole words");
    CHECK(app_glossary_term_present("x Datei.", "Datei", false), "term_present");
}

/* ------------------------------------------------------------------- QA */

static int qa(const app_glossary *g, const char *src, const char *text, app_qa_issue *is) {
    app_qa_input in = {src, NULL, NULL, false, g};
    return app_qa_check(&in, 0, text, is);
}

static void test_qa(void) {
    const app_gloss_entry e[] = {
        {"file", "Datei", "", false},
        {"file", "Akte", "", false},
        {"folder", "Ordner", "", false},
    };
    app_glossary *g = make(e, 3);
    app_qa_issue is[APP_QA_MAX];
    int n = qa(g, "Open the file",
               "\xc3\x96"
               "ffne die Datei",
               is);
    CHECK(n == 0, "target present: no warning, got %d (%s)", n, n ? is[0].msg : "");
    n = qa(g, "Open the file",
           "\xc3\x96"
           "ffne die Akte",
           is);
    CHECK(n == 0, "another target of the term: no warning, got %d", n);
    n = qa(g, "Open the file",
           "\xc3\x96"
           "ffne das Dokument",
           is);
    CHECK(n == 1 && is[0].level == APP_QA_WARNING && strstr(is[0].msg, "'file'") &&
              strstr(is[0].msg, "'Datei'"),
          "missing target: %d (%s)", n, n ? is[0].msg : "");
    /* two occurrences of one term: one warning; two terms: two */
    n = qa(g, "file to file", "x nach y", is);
    CHECK(n == 1, "the same term twice: one warning, got %d", n);
    n = qa(g, "Move the file to the folder", "Verschiebe es dorthin", is);
    CHECK(n == 2 && strstr(is[1].msg, "'folder'"), "two terms missing: %d", n);
    /* no glossary: no glossary warning */
    n = qa(NULL, "Open the file",
           "\xc3\x96"
           "ffne das Dokument",
           is);
    CHECK(n == 0, "no glossary: no warning, got %d", n);
    app_glossary_free(g);
}

/* ------------------------------------------------------- the terms line */

static void test_terms_line(void) {
    const app_gloss_entry e[] = {
        {"file", "Datei", "the document kind", false},
        {"file", "Akte", "", false},
        {"save", "speichern", "", false},
    };
    app_glossary *g = make(e, 3);
    ui_span *sp = NULL;
    int32_t n = 0;
    char *line = NULL;
    /* "Save the file, save it": Save 0, file 9, save 15 */
    CHECK_STATUS(app_edit_gloss_terms(g, "Save the file, save it", &sp, &n, &line));
    CHECK(n == 3 && sp[0].start == 0 && sp[0].len == 4 && sp[1].start == 9 && sp[1].len == 4 &&
              sp[2].start == 15,
          "3 spans (alternatives once), got %d", (int)n);
    const char *exp_line =
        "Terms: save \xe2\x86\x92 speichern \xc2\xb7 file \xe2\x86\x92 Datei (the "
        "document kind) \xc2\xb7 file \xe2\x86\x92 Akte";
    CHECK(line && !strcmp(line, exp_line), "line: %s", line ? line : "(null)");
    mt_free(sp);
    mt_free(line);
    CHECK_STATUS(app_edit_gloss_terms(g, "nothing here", &sp, &n, &line));
    CHECK(n == 0 && sp == NULL && line == NULL, "no term: no line");
    app_glossary_free(g);
}

int main(int argc, char **argv) {
    TEST_MAIN_BEGIN(argc, argv);
    test_tbx();
    test_csv();
    test_tsv();
    test_round_trip();
    test_match();
    test_many();
    test_speed();
    test_match_targets();
    test_target_present();
    test_qa();
    test_terms_line();
    TEST_MAIN_END();
}
