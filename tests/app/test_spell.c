/*
** test_spell.c: the spell checker of the editor (app/edit/spell.c) with the
** real hunspell dictionaries of Debian (hunspell-de-de, hunspell-en-us) and
** a small ISO-8859-1 dictionary written here:
**   - the dictionary chosen for a language, the search path, "no
**     dictionary" as MT_ERR_NOTFOUND;
**   - "Datie" flagged at its byte offsets, "Datei" among its suggestions;
**     correct German words with umlauts not flagged;
**   - never flagged: placeholders, tags, URLs, e-mail addresses, options,
**     words with digits, capitals only, camel case, glossary target terms
**     (and their parts), the personal dictionary, also after reopening the
**     store; each with a control showing that the same word is flagged
**     where the rule does not apply;
**   - a dictionary in ISO-8859-1: UTF-8 words with umlauts are converted,
**     suggestions come back as UTF-8.
** A missing dictionary fails its cases: scripts/install-deps.sh installs them.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "spell.h"
#include "store.h"
#include "store_impl.h"
#include "store_spell.h"

/* The misspelled words of text, joined by '|' into buf. */
static int flagged(app_spell *sp, const char *text, char *buf, size_t n) {
    app_spell_span sp_[32];
    int k = app_spell_check(sp, text, sp_, 32);
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < k && i < 32; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%.*s", i ? "|" : "", (int)sp_[i].len,
                              text + sp_[i].at);
    return k;
}

#define EXPECT_FLAGS(sp, text, want)                                                               \
    do {                                                                                           \
        char got_[512];                                                                            \
        flagged((sp), (text), got_, sizeof got_);                                                  \
        CHECK(strcmp(got_, (want)) == 0, "'%s': flagged '%s', want '%s'", (text), got_, (want));   \
    } while (0)

static bool has_dic(const char *name) {
    char p[256];
    snprintf(p, sizeof p, "/usr/share/hunspell/%s.dic", name);
    return access(p, R_OK) == 0;
}

static void test_find(void) {
    char name[64], path[4096];
    CHECK(app_spell_find("xx", name, sizeof name, path, sizeof path) == MT_ERR_NOTFOUND,
          "no dictionary for xx");
    CHECK(strstr(mt_errmsg(), "'xx'") != NULL, "message names the language: %s", mt_errmsg());
    CHECK(app_spell_find("", name, sizeof name, path, sizeof path) == MT_ERR_INVALID, "empty");
    if (!has_dic("de_DE")) {
        CHECK(false, "/usr/share/hunspell/de_DE.dic missing: scripts/install-deps.sh installs "
                     "hunspell-de-de");
        return;
    }
    CHECK_STATUS(app_spell_find("de", name, sizeof name, path, sizeof path));
    CHECK(strcmp(name, "de_DE") == 0, "de -> %s", name);
    CHECK(strcmp(path, "/usr/share/hunspell/de_DE") == 0 || getenv("DICPATH"), "path %s", path);
    /* de-AT: de_AT when installed, else de_DE */
    CHECK_STATUS(app_spell_find("de-AT", name, sizeof name, path, sizeof path));
    CHECK(strcmp(name, has_dic("de_AT") ? "de_AT" : "de_DE") == 0, "de-AT -> %s", name);
    CHECK_STATUS(app_spell_find("de_lu", name, sizeof name, path, sizeof path));
    CHECK(strcmp(name, has_dic("de_LU") ? "de_LU" : "de_DE") == 0, "de_lu -> %s", name);
    if (has_dic("en_US")) {
        CHECK_STATUS(app_spell_find("en", name, sizeof name, path, sizeof path));
        CHECK(strcmp(name, "en_US") == 0, "en -> %s", name);
    }
}

static void test_german(void) {
    if (!has_dic("de_DE")) {
        CHECK(false, "/usr/share/hunspell/de_DE.dic missing: scripts/install-deps.sh installs "
                     "hunspell-de-de");
        return;
    }
    app_spell *sp = NULL;
    CHECK_STATUS(app_spell_open("de", NULL, &sp));
    if (sp == NULL) return;
    CHECK(strcmp(app_spell_dict(sp), "de_DE") == 0, "dict %s", app_spell_dict(sp));

    /* a misspelling, its byte span after multi-byte characters */
    const char *t = "Die Größe der Datie öffnen";
    app_spell_span s[4];
    int n = app_spell_check(sp, t, s, 4);
    CHECK(n == 1, "one misspelled word, got %d", n);
    size_t at = (size_t)(strstr(t, "Datie") - t);
    CHECK(n >= 1 && s[0].at == at && s[0].len == 5, "span %zu+%zu, want %zu+5", s[0].at, s[0].len,
          at);
    char *sug[9];
    int ns = app_spell_suggest(sp, "Datie", sug, 9);
    bool datei = false;
    for (int i = 0; i < ns; i++) {
        datei |= strcmp(sug[i], "Datei") == 0;
        mt_free(sug[i]);
    }
    CHECK(ns > 0 && datei, "Datei among %d suggestions for Datie", ns);

    /* correct words with umlauts and ß, in any position */
    EXPECT_FLAGS(sp, "Größe", "");
    EXPECT_FLAGS(sp, "öffnen", "");
    EXPECT_FLAGS(sp, "Öffnen Sie die Datei, um ihre Größe zu ändern.", "");
    EXPECT_FLAGS(sp, "„Größe“ und «Maße»", "");
    EXPECT_FLAGS(sp, "Dattei Datie", "Dattei|Datie");
    EXPECT_FLAGS(sp, "usw. und so weiter", ""); /* the abbreviation with its '.' */
    EXPECT_FLAGS(sp, "usw", "usw");

    /* placeholders and markup: never, while the same letters as words are */
    EXPECT_FLAGS(sp, "name help xyzzy", "name|help|xyzzy");
    EXPECT_FLAGS(sp, "%s Dateien, %1 und {name} mit <b>fett</b>", "");
    EXPECT_FLAGS(sp, "%(name)s und %1$s oder ${name}", "");
    EXPECT_FLAGS(sp, "Siehe http://example.com/xyzzy oder --help", "");
    EXPECT_FLAGS(sp, "Mail an xyzzy@example.com oder www.xyzzy.org", "");
    EXPECT_FLAGS(sp, "Die Datei /usr/share/xyzzy und ~/xyzzy", "");
    EXPECT_FLAGS(sp, "Die <a href=\"xyzzy\">Datie</a>", "Datie"); /* text inside tags is checked */
    EXPECT_FLAGS(sp, "_Datie und &Datie", "Datie|Datie");         /* accelerators are not words */
    /* words with digits, capitals only, camel case, file names, one letter */
    EXPECT_FLAGS(sp, "Datie2 mp3 x86 H2O 3D", "");
    EXPECT_FLAGS(sp, "XYZZY PDF USB", "");
    EXPECT_FLAGS(sp, "LibreOffice setValue KAlgebra DFArc", "");
    /* hyphenated words: the wrong part ("name": a German noun in lower
    ** case); an acronym part is left alone */
    EXPECT_FLAGS(sp, "E-Mail-Adresse, CDDB-Server und RDP-Datei", "");
    EXPECT_FLAGS(sp, "E-Mial-Adresse und CDDB-Sever", "Mial|Sever");
    EXPECT_FLAGS(sp, "Datei-name", "name");
    {
        const char *t2 = "Die E-Mial-Adresse";
        app_spell_span s2[2];
        CHECK(app_spell_check(sp, t2, s2, 2) == 1 && s2[0].at == 6 && s2[0].len == 4,
              "the part's span: %zu+%zu", s2[0].at, s2[0].len);
    }
    EXPECT_FLAGS(sp, "xyzzy.txt xyzzy_plugh", "");
    EXPECT_FLAGS(sp, "x y z", "");
    /* XLIFF inline tags of the editor are markup too */
    EXPECT_FLAGS(sp, "⟦1⟧Datie⟦/1⟧ ⟦2⟧Größe⟦/2⟧", "Datie");
    /* small letters of Latin Extended-A are not capitals: the Polish word
    ** is looked up (and rejected by the German dictionary), the capital
    ** after its first letter leaves "ŁódŹ" alone */
    EXPECT_FLAGS(sp, "już Łódź ŁódŹ", "już|Łódź");
    app_spell_free(sp);
}

static void test_english(void) {
    if (!has_dic("en_US")) {
        CHECK(false, "/usr/share/hunspell/en_US.dic missing: scripts/install-deps.sh installs "
                     "hunspell-en-us");
        return;
    }
    app_spell *sp = NULL;
    CHECK_STATUS(app_spell_open("en", NULL, &sp));
    if (sp == NULL) return;
    EXPECT_FLAGS(sp, "Don't open the fiel", "fiel");
    EXPECT_FLAGS(sp, "Don’t open the file", ""); /* typographic apostrophe */
    EXPECT_FLAGS(sp, "E-mail the well-known recieve", "recieve");
    app_spell_free(sp);
}

static int collect(void *user, const char *w) {
    char *buf = user;
    size_t o = strlen(buf);
    snprintf(buf + o, 256 - o, "%s%s", o ? "|" : "", w);
    return 0;
}

static void add_term(store *st, const char *tgt_lang, const char *source, const char *target) {
    sqlite3 *db = store_db(st);
    sqlite3_stmt *q;
    CHECK(sqlite3_prepare_v2(db,
                             "INSERT INTO glossary_entry (tgt_lang, source, target, added_ms)"
                             " VALUES (?1, ?2, ?3, 0)",
                             -1, &q, NULL) == SQLITE_OK,
          "prepare");
    sqlite3_bind_text(q, 1, tgt_lang, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, source, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, target, -1, SQLITE_STATIC);
    CHECK(sqlite3_step(q) == SQLITE_DONE, "insert glossary entry: %s", sqlite3_errmsg(db));
    sqlite3_finalize(q);
}

static void test_store(const char *dir) {
    char db[512];
    snprintf(db, sizeof db, "%s/spell.db", dir);
    store *st = NULL;
    CHECK_STATUS(store_open(db, &st));
    if (st == NULL) return;

    /* the store functions on their own */
    CHECK(store_spell_add_word(st, "de_DE", "") == MT_ERR_INVALID, "empty word refused");
    CHECK(store_spell_add_word(st, "", "x") == MT_ERR_INVALID, "empty language refused");
    CHECK_STATUS(store_spell_add_word(st, "en_US", "Frobnitz"));
    CHECK_STATUS(store_spell_add_word(st, "en_US", "Frobnitz")); /* twice: once */
    char got[256] = "";
    CHECK_STATUS(store_spell_words(st, "en_US", collect, got));
    CHECK(strcmp(got, "Frobnitz") == 0, "en_US words: %s", got);
    got[0] = '\0';
    CHECK_STATUS(store_spell_words(st, "de_DE", collect, got));
    CHECK(strcmp(got, "") == 0, "de_DE words: %s", got);
    add_term(st, "de", "MTPE project", "Mtpe-Projekt");
    add_term(st, "de-AT", "frob", "Xylofrob");
    add_term(st, "", "plugh", "Plughwort");
    add_term(st, "fr", "zorglub", "Zorglubation");
    add_term(st, "de", "zorglub", "Mtpe-Projekt"); /* the same target twice: listed once */
    add_term(st, "de", "to frob", "frobeln");
    got[0] = '\0';
    CHECK_STATUS(store_glossary_target_words(st, "de_DE", collect, got));
    CHECK(strcmp(got, "Mtpe-Projekt|Plughwort|Xylofrob|frobeln") == 0, "de targets: %s", got);
    got[0] = '\0';
    CHECK_STATUS(store_glossary_target_words(st, "fr", collect, got));
    CHECK(strcmp(got, "Plughwort|Zorglubation") == 0, "fr targets: %s", got);

    if (!has_dic("de_DE")) {
        CHECK(false, "/usr/share/hunspell/de_DE.dic missing: scripts/install-deps.sh installs "
                     "hunspell-de-de");
        store_close(st);
        return;
    }
    /* controls: without the store, the terms and the word are misspelled */
    app_spell *plain = NULL;
    CHECK_STATUS(app_spell_open("de", NULL, &plain));
    if (plain == NULL) {
        store_close(st);
        return;
    }
    const char *terms = "Das Mtpe-Projekt mit Mtpe und Projekt, Xylofrob, Plughwort";
    EXPECT_FLAGS(plain, terms, "Mtpe|Mtpe|Xylofrob|Plughwort"); /* "Mtpe" of Mtpe-Projekt */
    EXPECT_FLAGS(plain, "Zorglubation Frobnitz", "Zorglubation|Frobnitz");
    EXPECT_FLAGS(plain, "Frobeln frobeln", "Frobeln|frobeln");
    app_spell_free(plain);

    app_spell *sp = NULL;
    CHECK_STATUS(app_spell_open("de", st, &sp));
    if (sp == NULL) {
        store_close(st);
        return;
    }
    EXPECT_FLAGS(sp, terms, "");
    /* a lower-case term may start a sentence; a capitalised one stays so */
    EXPECT_FLAGS(sp, "Frobeln frobeln", "");
    EXPECT_FLAGS(sp, "FROBELN", "");
    EXPECT_FLAGS(sp, "mtpe-Projekt xylofrob", "mtpe|xylofrob");
    /* a French term and an English personal word are not German */
    EXPECT_FLAGS(sp, "Zorglubation Frobnitz", "Zorglubation|Frobnitz");

    /* the personal dictionary: live at once, and in the store */
    CHECK(app_spell_add(sp, "zwei Wörter") == MT_ERR_INVALID, "two words refused");
    CHECK_STATUS(app_spell_add(sp, "Frobnitz"));
    EXPECT_FLAGS(sp, "Zorglubation Frobnitz", "Zorglubation");
    CHECK(app_spell_word_ok(sp, "Frobnitz", 8), "word_ok after add");
    got[0] = '\0';
    CHECK_STATUS(store_spell_words(st, "de_DE", collect, got));
    CHECK(strcmp(got, "Frobnitz") == 0, "de_DE words after add: %s", got);
    app_spell_free(sp);
    store_close(st);

    /* reopened: still known */
    st = NULL;
    CHECK_STATUS(store_open(db, &st));
    if (st == NULL) return;
    sp = NULL;
    CHECK_STATUS(app_spell_open("de", st, &sp));
    if (sp) {
        EXPECT_FLAGS(sp, "Zorglubation Frobnitz", "Zorglubation");
        EXPECT_FLAGS(sp, "Frobnitz.", "");
        /* hunspell capitalises a lower-case added word itself; ours too */
        CHECK(!app_spell_word_ok(sp, "Quuxwort", 8), "control: Quuxwort flagged");
        CHECK_STATUS(app_spell_add(sp, "quuxwort"));
        CHECK(app_spell_word_ok(sp, "Quuxwort", 8), "Quuxwort after adding quuxwort");
    }
    app_spell_free(sp);
    store_close(st);
}

/* A dictionary in ISO-8859-1 found through $MTPE_DICPATH by its language
** prefix (tt -> tt_TT): UTF-8 text in, UTF-8 suggestions out. */
static void test_latin1(const char *dir) {
    char p[512];
    snprintf(p, sizeof p, "%s/tt_TT.aff", dir);
    FILE *f = fopen(p, "wb");
    CHECK(f != NULL, "write %s", p);
    if (f == NULL) return;
    fputs("SET ISO8859-1\nTRY esianrtolcdugmphbyfvkwz\xe4\xf6\xfc\xdf\n", f); /* äöüß */
    fclose(f);
    snprintf(p, sizeof p, "%s/tt_TT.dic", dir);
    f = fopen(p, "wb");
    CHECK(f != NULL, "write %s", p);
    if (f == NULL) return;
    fputs("3\nGr\xf6\xdf"
          "e\nHaus\n\xdc"
          "bung\n",
          f); /* Größe, Haus, Übung in Latin-1 */
    fclose(f);
    setenv("MTPE_DICPATH", dir, 1);
    char name[64], path[4096];
    CHECK_STATUS(app_spell_find("tt", name, sizeof name, path, sizeof path));
    CHECK(strcmp(name, "tt_TT") == 0, "tt -> %s", name);
    app_spell *sp = NULL;
    CHECK_STATUS(app_spell_open("tt", NULL, &sp));
    unsetenv("MTPE_DICPATH");
    if (sp == NULL) return;
    EXPECT_FLAGS(sp, "Größe Haus Übung", "");
    EXPECT_FLAGS(sp, "Grösse Hause Ubung", "Grösse|Hause|Ubung");
    char *sug[9];
    int n = app_spell_suggest(sp, "Grße", sug, 9);
    bool found = false;
    for (int i = 0; i < n; i++) {
        found |= strcmp(sug[i], "Gr\xc3\xb6\xc3\x9f"
                                "e") == 0; /* Größe in UTF-8 */
        mt_free(sug[i]);
    }
    CHECK(found, "Größe (UTF-8) among %d suggestions for Grße", n);
    /* a word Latin-1 cannot hold is not flagged (it cannot be looked up) */
    EXPECT_FLAGS(sp, "Haus Ωmega", "");
    CHECK_STATUS(app_spell_add(sp, "Straße"));
    EXPECT_FLAGS(sp, "Straße", "");
    app_spell_free(sp);
}

/* A long text: the cache makes repeated words cheap. */
static void test_speed(void) {
    if (!has_dic("de_DE")) {
        CHECK(false, "/usr/share/hunspell/de_DE.dic missing: scripts/install-deps.sh installs "
                     "hunspell-de-de");
        return;
    }
    app_spell *sp = NULL;
    CHECK_STATUS(app_spell_open("de", NULL, &sp));
    if (sp == NULL) return;
    static char text[20000];
    size_t o = 0;
    while (o + 64 < sizeof text)
        o += (size_t)snprintf(text + o, sizeof text - o,
                              "Öffnen Sie die Datie, um ihre Größe zu ändern. ");
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int cold = app_spell_check(sp, text, NULL, 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double cold_ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    printf("spell check, 9 distinct words first seen: %.3f ms\n", cold_ms);
    clock_gettime(CLOCK_MONOTONIC, &a);
    int n = 0;
    for (int r = 0; r < 20; r++)
        n = app_spell_check(sp, text, NULL, 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ms = ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6) / 20;
    int words = 10 * n;
    printf("spell check of %d words: %.3f ms (%.0f words/ms)\n", words, ms, words / ms);
    CHECK(n > 300 && n == cold, "misspellings counted beyond max: %d (cold %d)", n, cold);
    CHECK(ms < 50, "a 20 kB field checked in %.1f ms", ms);
    app_spell_free(sp);
}

int main(int argc, char **argv) {
    TEST_MAIN_BEGIN(argc, argv);
    unsetenv("MTPE_DICPATH");
    unsetenv("DICPATH");
    char dir[] = "/tmp/mtpe_spell.XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "temporary directory");
    test_find();
    test_german();
    test_english();
    test_store(dir);
    test_latin1(dir);
    test_speed();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "clean up");
    TEST_MAIN_END();
}
