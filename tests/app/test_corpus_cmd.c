/*
** test_corpus_cmd.c: `mtpe corpus` (app/formats/corpus_io.c, app/cmd_corpus.c) and
** the default paths (app/paths.c).
**
**   - helpers: language matching, flattening, ISO 8601 times (expected
**     values from `date -u -d ... +%s`), accelerator stripping (expected
**     values from the project's data recipe, shared/data/recipe/
**     extract_pairs.py strip_accels, run on the same pairs);
**   - build from the sample PO and XLIFF files (expected pairs read off the
**     files by hand), a generated PO (plurals, fuzzy, obsolete, msgctxt,
**     escapes, CRLF), a MO written here byte by byte in both byte orders
**     (checked with msgunfmt when installed), a hand-written TMX;
**   - errors: truncated and damaged MO, malformed XML, unknown format,
**     other languages; no output file is created or changed on error and no
**     temporary file is left; allocation failures at every point;
**   - export from a store: TMX parsed back with libxml2 (rows, languages,
**     dates), --since, --document, language filters, TSV, xmllint when
**     installed, TMX -> build round trip, the command line with --db and
**     the default store path.
*/
#include <dirent.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "corpus_io.h"
#include "doc.h"
#include "harness.h"
#include "mt.h"
#include "paths.h"
#include "store.h"

#define LB "\xe2\x9f\xa6" /* U+27E6: XLIFF placeholder brackets */
#define RB "\xe2\x9f\xa7"

static char tmp_dir[256];

/* A path in the temporary directory.  Each call returns a new buffer (a
** pool that outlives the tests; loops hoist their calls). */
static const char *tpath(const char *name) {
    static char buf[1024][300];
    static int k;
    MT_ASSERT(k < 1024);
    char *p = buf[k++];
    snprintf(p, sizeof buf[0], "%s/%s", tmp_dir, name);
    return p;
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "create %s", path);
    if (f == NULL) return;
    fwrite(data, 1, n, f);
    fclose(f);
}

static void write_text(const char *path, const char *text) {
    write_bytes(path, text, strlen(text));
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

static bool contains(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

/* Compares a file with expected lines (each followed by '\n'). */
static void check_lines(const char *path, const char *const *want, int n, const char *what) {
    char *data = NULL;
    size_t len = 0;
    mt_status rc = app_doc_read_file(path, &data, &len);
    CHECK(rc == MT_OK, "%s: read %s: %s", what, path, mt_errmsg());
    if (rc != MT_OK) return;
    const char *p = data;
    int i = 0;
    while (*p) {
        const char *e = strchr(p, '\n');
        CHECK(e != NULL, "%s: last line of %s has no newline", what, path);
        if (e == NULL) break;
        if (i < n)
            CHECK(strlen(want[i]) == (size_t)(e - p) && !strncmp(p, want[i], (size_t)(e - p)),
                  "%s: %s line %d: got '%.*s' want '%s'", what, path, i + 1, (int)(e - p), p,
                  want[i]);
        i++;
        p = e + 1;
    }
    CHECK(i == n, "%s: %s has %d lines, want %d", what, path, i, n);
    mt_free(data);
}

/* No "*.tmp" file left in the temporary directory. */
static void check_no_tmp(const char *what) {
    DIR *d = opendir(tmp_dir);
    if (d == NULL) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        CHECK(!(n > 4 && !strcmp(e->d_name + n - 4, ".tmp")), "%s: temporary file %s left", what,
              e->d_name);
    }
    closedir(d);
}

/* gettext and xmllint: scripts/install-deps.sh installs them (missing: a failure) */
static bool have_tool(const char *name) { return CHECK_TOOL(name); }

/* ================================================================ helpers */

static void test_lang_match(void) {
    static const struct {
        const char *want, *have;
        bool match;
    } cases[] = {
        {"de", "de", true},          {"de", "DE", true},        {"de", "de-DE", true},
        {"de", "de_AT", true},       {"de-DE", "de", true},     {"de-DE", "de_de", true},
        {"de", "de_DE.UTF-8", true}, {"sr", "sr@latin", true},  {"de-DE", "de-AT", false},
        {"de", "da", false},         {"de", "den", false},      {"en", "", false},
        {"pt-BR", "pt_BR", true},    {"pt-BR", "pt-PT", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(app_corpus_lang_match(cases[i].want, cases[i].have) == cases[i].match,
              "lang match '%s' '%s'", cases[i].want, cases[i].have);
    CHECK(!app_corpus_lang_match("de", NULL), "NULL language");
}

static void test_flatten(void) {
    char s[] = "a\nb\r\nc\rd\te\vf\fg\xc2\x85h\xe2\x80\xa8i\xe2\x80\xa9j \xc2\xa0k\xe2\x80\xa6";
    app_corpus_flatten(s);
    CHECK(!strcmp(s, "a b c d e f g h i j \xc2\xa0k\xe2\x80\xa6"), "flatten: '%s'", s);
    char e[] = "";
    app_corpus_flatten(e);
    CHECK(e[0] == '\0', "flatten empty");
}

static void test_iso8601(void) {
    static const struct {
        const char *text;
        int64_t ms;
    } ok[] = {
        {"1970-01-01T00:00:00Z", 0},
        {"1970-01-01", INT64_MIN}, /* local: checked below */
        {"2024-02-29T12:34:56Z", 1709210096000},
        {"2024-02-29T12:34:56.789Z", 1709210096789},
        {"2024-02-29T12:34:56.7Z", 1709210096700},
        {"2024-02-29T12:34:56,78912Z", 1709210096789},
        {"2024-02-29 12:34:56z", 1709210096000},
        {"20240229T123456Z", 1709210096000},
        {"2000-03-01T00:00Z", 951868800000},
        {"1969-12-31T23:59:59Z", -1000},
        {"2024-05-01T14:30:00+02:00", 1714566600000},
        {"2024-05-01T14:30:00+0200", 1714566600000},
        {"2024-05-01T10:30-02", 1714566600000},
        {"1900-01-01T00:00:00Z", -2208988800000},
        {"2100-12-31T23:59:59Z", 4133980799000},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        if (ok[i].ms == INT64_MIN) continue;
        int64_t ms = 0;
        mt_status rc = app_parse_iso8601(ok[i].text, &ms);
        CHECK(rc == MT_OK && ms == ok[i].ms, "iso8601 '%s': rc %d, %lld ms, want %lld", ok[i].text,
              (int)rc, (long long)ms, (long long)ok[i].ms);
    }
    /* local time (a POSIX TZ rule, so no zoneinfo files are needed):
    ** summer and winter (date -d with TZ=Europe/Berlin) */
    const char *old_tz = getenv("TZ");
    char saved[128] = "";
    if (old_tz) snprintf(saved, sizeof saved, "%s", old_tz);
    setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3", 1);
    tzset();
    int64_t ms = 0;
    CHECK_STATUS(app_parse_iso8601("2024-07-01T12:00:00", &ms));
    CHECK(ms == 1719828000000, "local summer time: %lld", (long long)ms);
    CHECK_STATUS(app_parse_iso8601("2024-01-15 12:00", &ms));
    CHECK(ms == 1705316400000, "local winter time: %lld", (long long)ms);
    CHECK_STATUS(app_parse_iso8601("2024-01-15", &ms));
    CHECK(ms == 1705316400000 - 12 * 3600000, "local date: %lld", (long long)ms);
    if (old_tz)
        setenv("TZ", saved, 1);
    else
        unsetenv("TZ");
    tzset();

    static const char *const bad[] = {
        "",
        "yesterday",
        "2024-02-30",
        "2023-02-29T00:00Z",
        "2024-13-01",
        "2024-00-10",
        "2024-01-01T24:00Z",
        "2024-01-01T12:60Z",
        "2024-1-1",
        "2024-01-01T12",
        "2024-01-01T12:00:00.",
        "2024-01-01T12:00+2",
        "2024-01-01Z0",
        "2024-01-01T12:00:00 Z",
        "1714566600",
        "2024-01-01T12:00+02:60",
        "2024-01-01T12:00+02:",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mt_status rc = app_parse_iso8601(bad[i], &ms);
        CHECK(rc == MT_ERR_INVALID, "iso8601 '%s' should be refused (rc %d)", bad[i], (int)rc);
        if (rc == MT_ERR_INVALID && bad[i][0])
            CHECK(contains(mt_errmsg(), bad[i]), "message quotes the text: %s", mt_errmsg());
    }
}

static void test_accelerators(void) {
    /* expected: strip_accels() of shared/data/recipe/extract_pairs.py */
    static const char *const cases[][4] = {
        {"_File", "_Datei", "File", "Datei"},
        {"&Open", "\xc3\x96&ffnen", "Open",
         "\xc3\x96"
         "ffnen"},
        {"Save &As\xe2\x80\xa6", "Speichern &unter \xe2\x80\xa6", "Save As\xe2\x80\xa6",
         "Speichern unter \xe2\x80\xa6"},
        {"file_name", "file_name", "file_name", "file_name"},
        {"Set file_name to %s", "file_name auf %s setzen", "Set file_name to %s",
         "file_name auf %s setzen"},
        {"AT&T", "AT&T", "AT&T", "AT&T"},
        {"R&&D", "F&&E", "R&D", "F&E"},
        {"Use &lt;b&gt; for bold", "&lt;b&gt; f\xc3\xbcr Fettdruck", "Use &lt;b&gt; for bold",
         "&lt;b&gt; f\xc3\xbcr Fettdruck"},
        {"_Edit _View", "_Bearbeiten", "_Edit _View", "_Bearbeiten"},
        {"magic_quotes_gpc", "magic_quotes_gpc", "magic_quotes_gpc", "magic_quotes_gpc"},
        {"Enable", "magic_quotes_gpc aktivieren", "Enable", "magic_quotes_gpc aktivieren"},
        {"Quit", "_Beenden", "Quit", "Beenden"},
        {"Quit", "B_eenden", "Quit", "Beenden"},
        {"Tom & Jerry", "Tom & Jerry", "Tom & Jerry", "Tom & Jerry"},
        {"Q&A", "F&A", "Q&A", "F&A"},
        {"Fish & &Chips", "Fisch & &Pommes", "Fish & Chips", "Fisch & Pommes"},
        {"_\xc3\x9c"
         "ber",
         "_About",
         "\xc3\x9c"
         "ber",
         "About"},
        {"E_xit", "_Beenden", "Exit", "Beenden"},
        {"a_b_c", "a_b_c", "a_b_c", "a_b_c"},
        {"Show _hidden", "Versteckte _anzeigen", "Show hidden", "Versteckte anzeigen"},
        {"Tools & &Options", "Werkzeuge", "Tools & Options", "Werkzeuge"},
        {"Open",
         "&\xc3\x96"
         "ffnen",
         "Open",
         "&\xc3\x96"
         "ffnen"},
        {"__init__ failed", "__init__ schlug fehl", "__init__ failed", "__init__ schlug fehl"},
        {"_1 (Highest Priority)",
         "_1 (H\xc3\xb6"
         "chste Priorit\xc3\xa4t)",
         "1 (Highest Priority)",
         "1 (H\xc3\xb6"
         "chste Priorit\xc3\xa4t)"},
        {"Drag & drop", "Drag &amp; Drop", "Drag & drop", "Drag &amp; Drop"},
        {"My_Text", "Mein_text", "MyText", "Meintext"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char s[128], t[128];
        snprintf(s, sizeof s, "%s", cases[i][0]);
        snprintf(t, sizeof t, "%s", cases[i][1]);
        app_corpus_strip_accelerators(s, t);
        CHECK(!strcmp(s, cases[i][2]) && !strcmp(t, cases[i][3]),
              "accelerators ('%s', '%s') -> ('%s', '%s'), want ('%s', '%s')", cases[i][0],
              cases[i][1], s, t, cases[i][2], cases[i][3]);
    }
}

/* ============================================================ MO writer */

/* One MO string: bytes with embedded NULs / \x04, given with their length. */
typedef struct mo_in {
    const char *orig;
    size_t olen;
    const char *trans;
    size_t tlen;
} mo_in;
#define S(lit) lit, sizeof(lit) - 1

static void put32(unsigned char *p, uint32_t v, bool be) {
    for (int k = 0; k < 4; k++)
        p[be ? k : 3 - k] = (unsigned char)(v >> (8 * (3 - k)));
}

/* Writes a MO file laid out as gettext's msgfmt does: header, the two
** tables, no hash table, the originals, then the translations. */
static size_t make_mo(unsigned char *buf, size_t cap, const mo_in *e, int n, bool be) {
    uint32_t otab = 28, ttab = otab + 8u * (uint32_t)n, off = ttab + 8u * (uint32_t)n;
    memset(buf, 0, cap);
    put32(buf, 0x950412deu, be);
    put32(buf + 4, 0, be);
    put32(buf + 8, (uint32_t)n, be);
    put32(buf + 12, otab, be);
    put32(buf + 16, ttab, be);
    put32(buf + 20, 0, be);
    put32(buf + 24, off, be);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            const char *s = pass ? e[i].trans : e[i].orig;
            size_t len = pass ? e[i].tlen : e[i].olen;
            unsigned char *ent = buf + (pass ? ttab : otab) + 8u * (uint32_t)i;
            put32(ent, (uint32_t)len, be);
            put32(ent + 4, off, be);
            MT_ASSERT(off + len + 1 <= cap);
            memcpy(buf + off, s, len);
            off += (uint32_t)len + 1; /* NUL already there */
        }
    }
    return off;
}

/* sorted by original string, as msgfmt writes them */
static const mo_in mo_entries[] = {
    {S(""), S("Content-Type: text/plain; charset=UTF-8\nLanguage: de\n"
              "Plural-Forms: nplurals=2; plural=(n != 1);\n")},
    {S("Empty"), S("")},
    {S("Line\nbreak"), S("Zeilen\numbruch")},
    {S("One file\0%d files"), S("Eine Datei\0%d Dateien")},
    {S("Open"), S("\xc3\x96"
                  "ffnen")},
    {S("menu\x04Save"), S("Speichern")},
};
static const int n_mo_entries = (int)(sizeof mo_entries / sizeof mo_entries[0]);

static app_corpus_build_params params_for(const char *const *files, int n, const char *prefix) {
    app_corpus_build_params p;
    memset(&p, 0, sizeof p);
    p.files = files;
    p.n_files = n;
    p.src_lang = "en";
    p.trg_lang = "de";
    p.out_prefix = prefix;
    return p;
}

static void test_mo(void) {
    static unsigned char buf[4096];
    static const char *const want_en[] = {"Line break", "One file", "%d files", "Open", "Save"};
    static const char *const want_de[] = {"Zeilen umbruch", "Eine Datei", "%d Dateien",
                                          "\xc3\x96"
                                          "ffnen",
                                          "Speichern"};
    for (int be = 0; be < 2; be++) {
        const char *mo = tpath(be ? "be.mo" : "le.mo");
        size_t n = make_mo(buf, sizeof buf, mo_entries, n_mo_entries, be);
        write_bytes(mo, buf, n);
        if (have_tool("msgunfmt")) {
            char cmd[600];
            snprintf(cmd, sizeof cmd, "msgunfmt %s >/dev/null 2>&1", mo);
            CHECK(system(cmd) == 0, "msgunfmt accepts the test's MO file (%s)", mo);
        }
        app_mo *m = NULL;
        CHECK_STATUS(app_mo_read(mo, &m));
        if (m) {
            CHECK(m->n_entries == 5, "MO entries: %lld", (long long)m->n_entries);
            CHECK(m->language && !strcmp(m->language, "de"), "MO language");
            const app_mo_entry *e = &m->entries[2];
            CHECK(m->n_entries == 5 && !strcmp(e->msgid, "One file") && e->msgid_plural &&
                      !strcmp(e->msgid_plural, "%d files") && e->n_msgstr == 2 &&
                      !strcmp(e->msgstr[1], "%d Dateien") && e->context == NULL,
                  "MO plural entry");
            e = &m->entries[4];
            CHECK(m->n_entries == 5 && e->context && !strcmp(e->context, "menu") &&
                      !strcmp(e->msgid, "Save") && e->msgid_plural == NULL && e->n_msgstr == 1,
                  "MO context entry");
            e = &m->entries[0];
            CHECK(e->n_msgstr == 1 && e->msgstr[0][0] == '\0', "MO empty translation");
        }
        app_mo_free(m);
        const char *files[] = {mo};
        app_corpus_build_params p = params_for(files, 1, tpath("mo"));
        app_corpus_stats st;
        CHECK_STATUS(app_corpus_build(&p, &st));
        CHECK(st.files == 1 && st.entries == 5 && st.pairs == 5 && st.untranslated == 1,
              "MO counts: files %lld entries %lld pairs %lld untranslated %lld",
              (long long)st.files, (long long)st.entries, (long long)st.pairs,
              (long long)st.untranslated);
        check_lines(tpath("mo.en"), want_en, 5, "MO source");
        check_lines(tpath("mo.de"), want_de, 5, "MO target");
    }

    /* a MO file without a suffix is recognised by its magic number */
    size_t n = make_mo(buf, sizeof buf, mo_entries, n_mo_entries, false);
    write_bytes(tpath("catalog"), buf, n);
    app_corpus_kind kind = APP_CORPUS_PO;
    CHECK_STATUS(app_corpus_detect(tpath("catalog"), &kind));
    CHECK(kind == APP_CORPUS_MO, "MO detected by content");

    /* truncated at every length: always a clean error naming the file */
    unlink(tpath("trunc.en"));
    unlink(tpath("trunc.de"));
    int failures = 0;
    const char *trunc = tpath("trunc.mo");
    for (size_t cut = 0; cut < n; cut++) {
        const char *mo = trunc;
        write_bytes(mo, buf, cut);
        app_mo *m = NULL;
        mt_status rc = app_mo_read(mo, &m);
        if (rc == MT_OK) { /* (counted below) */
            app_mo_free(m);
            continue;
        }
        failures++;
        CHECK(rc == MT_ERR_FORMAT && contains(mt_errmsg(), "trunc.mo"),
              "truncated at %zu: rc %d, '%s'", cut, (int)rc, mt_errmsg());
        CHECK(m == NULL, "no result on error");
    }
    CHECK(failures == (int)n, "every truncation refused (%d of %zu)", failures, n);
    const char *files[] = {trunc};
    write_bytes(files[0], buf, n - 3);
    app_corpus_build_params p = params_for(files, 1, tpath("trunc"));
    app_corpus_stats st;
    mt_status rc = app_corpus_build(&p, &st);
    CHECK(rc == MT_ERR_FORMAT && contains(mt_errmsg(), "truncated"), "build from truncated MO: %s",
          mt_errmsg());
    CHECK(!exists(tpath("trunc.en")) && !exists(tpath("trunc.de")), "no output on error");

    /* damaged: bad magic, a string offset past the end, no NUL, big revision */
    unsigned char bad[4096];
    memcpy(bad, buf, n);
    bad[0] = 'X';
    write_bytes(tpath("bad.mo"), bad, n);
    app_mo *m = NULL;
    rc = app_mo_read(tpath("bad.mo"), &m);
    CHECK(rc == MT_ERR_FORMAT && contains(mt_errmsg(), "not a MO file"), "bad magic: %s",
          mt_errmsg());
    memcpy(bad, buf, n);
    put32(bad + 28 + 8 * 2 + 4, 100000, false); /* original 2's offset */
    write_bytes(tpath("bad.mo"), bad, n);
    rc = app_mo_read(tpath("bad.mo"), &m);
    CHECK(rc == MT_ERR_FORMAT && contains(mt_errmsg(), "original string 2"), "bad offset: %s",
          mt_errmsg());
    memcpy(bad, buf, n);
    put32(bad + 28 + 8 * 4, 3, false); /* "Open" said to be 3 bytes: no NUL after "Ope" */
    write_bytes(tpath("bad.mo"), bad, n);
    rc = app_mo_read(tpath("bad.mo"), &m);
    CHECK(rc == MT_ERR_FORMAT && contains(mt_errmsg(), "NUL"), "no NUL: %s", mt_errmsg());
    memcpy(bad, buf, n);
    put32(bad + 4, 2u << 16, false);
    write_bytes(tpath("bad.mo"), bad, n);
    rc = app_mo_read(tpath("bad.mo"), &m);
    CHECK(rc == MT_ERR_UNSUPPORTED, "revision 2.0 refused: %s", mt_errmsg());
    memcpy(bad, buf, n);
    put32(bad + 8, 100000, false); /* N far too large */
    write_bytes(tpath("bad.mo"), bad, n);
    rc = app_mo_read(tpath("bad.mo"), &m);
    CHECK(rc == MT_ERR_FORMAT && contains(mt_errmsg(), "string tables"), "bad count: %s",
          mt_errmsg());

    /* other charsets are converted; unknown ones and bad bytes refused */
    static const mo_in latin1[] = {
        {S(""), S("Content-Type: text/plain; charset=ISO-8859-1\nLanguage: de\n")},
        {S("Open"), S("\xd6"
                      "ffnen")},
        {S("One\0Many"), S("Ein\0Gr\xfc\xdf"
                           "e")},
    };
    n = make_mo(buf, sizeof buf, latin1, 3, false);
    write_bytes(tpath("latin1.mo"), buf, n);
    CHECK_STATUS(app_mo_read(tpath("latin1.mo"), &m));
    CHECK(m && m->n_entries == 2 &&
              !strcmp(m->entries[0].msgstr[0], "\xc3\x96"
                                               "ffnen"),
          "ISO-8859-1 converted");
    CHECK(m && m->n_entries == 2 && m->entries[1].n_msgstr == 2 &&
              !strcmp(m->entries[1].msgid_plural, "Many") &&
              !strcmp(m->entries[1].msgstr[1], "Gr\xc3\xbc\xc3\x9f"
                                               "e"),
          "ISO-8859-1 plural converted");
    app_mo_free(m);
    m = NULL;
    static const mo_in unknown[] = {
        {S(""), S("Content-Type: text/plain; charset=NO-SUCH-CHARSET\n")},
        {S("Open"), S("Auf")},
    };
    n = make_mo(buf, sizeof buf, unknown, 2, false);
    write_bytes(tpath("unknown.mo"), buf, n);
    rc = app_mo_read(tpath("unknown.mo"), &m);
    CHECK(rc == MT_ERR_UNSUPPORTED && contains(mt_errmsg(), "NO-SUCH-CHARSET"), "charset: %s",
          mt_errmsg());
    static const mo_in badjp[] = {
        {S(""), S("Content-Type: text/plain; charset=EUC-JP\n")},
        {S("Open"), S("\xa4\xa2\xff\xfe")},
    };
    n = make_mo(buf, sizeof buf, badjp, 2, false);
    write_bytes(tpath("badjp.mo"), buf, n);
    rc = app_mo_read(tpath("badjp.mo"), &m);
    CHECK(rc == MT_ERR_FORMAT && contains(mt_errmsg(), "badjp.mo") &&
              contains(mt_errmsg(), "translation string 1"),
          "bytes invalid in the charset: %s", mt_errmsg());
    static const mo_in badutf8[] = {
        {S(""), S("Content-Type: text/plain; charset=UTF-8\n")},
        {S("Open"), S("\xd6"
                      "ffnen")},
    };
    n = make_mo(buf, sizeof buf, badutf8, 2, false);
    write_bytes(tpath("badutf8.mo"), buf, n);
    rc = app_mo_read(tpath("badutf8.mo"), &m);
    CHECK(rc == MT_ERR_FORMAT && contains(mt_errmsg(), "invalid UTF-8"), "invalid UTF-8: %s",
          mt_errmsg());
    static const mo_in french[] = {
        {S(""), S("Content-Type: text/plain; charset=UTF-8\nLanguage: fr_FR\n")},
        {S("Open"), S("Ouvrir")},
    };
    n = make_mo(buf, sizeof buf, french, 2, true);
    write_bytes(tpath("fr.mo"), buf, n);
    const char *two[] = {tpath("fr.mo"), tpath("le.mo")};
    p = params_for(two, 2, tpath("two"));
    CHECK_STATUS(app_corpus_build(&p, &st));
    CHECK(st.files == 1 && st.files_other_lang == 1 && st.pairs == 5,
          "French file skipped: files %lld other %lld pairs %lld", (long long)st.files,
          (long long)st.files_other_lang, (long long)st.pairs);
    check_no_tmp("MO");
}

/* ================================================================== PO */

static const char po_text[] = "# Generated for test_corpus_cmd.c\n"
                              "msgid \"\"\n"
                              "msgstr \"\"\n"
                              "\"Content-Type: text/plain; charset=UTF-8\\n\"\n"
                              "\"Language: de_DE\\n\"\n"
                              "\"Plural-Forms: nplurals=2; plural=(n != 1);\\n\"\n"
                              "\n"
                              "msgid \"Open\"\n"
                              "msgstr \"\xc3\x96"
                              "ffnen\"\n"
                              "\n"
                              "msgctxt \"menu\"\n"
                              "msgid \"_File\"\n"
                              "msgstr \"_Datei\"\n"
                              "\n"
                              "msgctxt \"verb\"\n"
                              "msgid \"Open\"\n"
                              "msgstr \"\xc3\x96"
                              "ffnen\"\n"
                              "\n"
                              "msgid \"\"\n"
                              "\"Line one\\n\"\n"
                              "\"Line two\"\n"
                              "msgstr \"Zeile eins\\nZeile zwei\"\n"
                              "\n"
                              "msgid \"Tab\\there \\\"quoted\\\"\"\n"
                              "msgstr \"Tab\\thier \\\"zitiert\\\"\"\n"
                              "\n"
                              "#, c-format\n"
                              "msgid \"One file\"\n"
                              "msgid_plural \"%d files\"\n"
                              "msgstr[0] \"Eine Datei\"\n"
                              "msgstr[1] \"%d Dateien\"\n"
                              "\n"
                              "msgid \"a partial\"\n"
                              "msgid_plural \"partials\"\n"
                              "msgstr[0] \"ein Teil\"\n"
                              "msgstr[1] \"\"\n"
                              "\n"
                              "msgid \"No translation\"\n"
                              "msgstr \"\"\n"
                              "\n"
                              "#, fuzzy\n"
                              "msgid \"Fuzzy one\"\n"
                              "msgstr \"Unscharf\"\n"
                              "\n"
                              "#, fuzzy, c-format\n"
                              "msgid \"Fuzzy %s\"\n"
                              "msgstr \"\"\n"
                              "\n"
                              "msgid \"Windows line\\r\\nend\"\n"
                              "msgstr \"Windows Zeile\\r\\nEnde\"\n"
                              "\n"
                              "msgid \"Spaces only target\"\n"
                              "msgstr \" \"\n"
                              "\n"
                              "#~ msgid \"Old\"\n"
                              "#~ msgstr \"Alt\"\n"
                              "\n"
                              "#~ msgctxt \"x\"\n"
                              "#~ msgid \"Older\"\n"
                              "#~ msgstr \"\xc3\x84lter\"\n";

static void test_po(void) {
    const char *po = tpath("gen.po");
    write_text(po, po_text);
    const char *files[] = {po};
    app_corpus_build_params p = params_for(files, 1, tpath("po"));
    p.tsv_path = tpath("po.tsv");
    app_corpus_stats st;
    CHECK_STATUS(app_corpus_build(&p, &st));
    CHECK(st.files == 1 && st.entries == 12 && st.pairs == 9 && st.untranslated == 2 &&
              st.fuzzy == 1 && st.obsolete == 2 && st.empty == 2 && st.duplicates == 0,
          "PO counts: entries %lld pairs %lld untranslated %lld fuzzy %lld obsolete %lld "
          "empty %lld",
          (long long)st.entries, (long long)st.pairs, (long long)st.untranslated,
          (long long)st.fuzzy, (long long)st.obsolete, (long long)st.empty);
    static const char *const en[] = {
        "Open",     "_File",    "Open",      "Line one Line two", "Tab here \"quoted\"",
        "One file", "%d files", "a partial", "Windows line end",
    };
    static const char *const de[] = {
        "\xc3\x96"
        "ffnen",
        "_Datei",
        "\xc3\x96"
        "ffnen",
        "Zeile eins Zeile zwei",
        "Tab hier \"zitiert\"",
        "Eine Datei",
        "%d Dateien",
        "ein Teil",
        "Windows Zeile Ende",
    };
    check_lines(tpath("po.en"), en, 9, "PO source");
    check_lines(tpath("po.de"), de, 9, "PO target");
    char tsv[9][128];
    const char *tsv_lines[9];
    for (int i = 0; i < 9; i++) {
        snprintf(tsv[i], sizeof tsv[i], "%s\t%s", en[i], de[i]);
        tsv_lines[i] = tsv[i];
    }
    check_lines(tpath("po.tsv"), tsv_lines, 9, "PO TSV");

    /* --dedup --strip-accelerators --include-fuzzy, TSV only */
    p.out_prefix = NULL;
    p.tsv_path = tpath("po2.tsv");
    p.dedup = p.strip_accelerators = p.include_fuzzy = true;
    CHECK_STATUS(app_corpus_build(&p, &st));
    CHECK(st.pairs == 9 && st.duplicates == 1 && st.fuzzy == 0 && st.untranslated == 2,
          "PO options: pairs %lld duplicates %lld fuzzy %lld", (long long)st.pairs,
          (long long)st.duplicates, (long long)st.fuzzy);
    static const char *const both[] = {
        "Open\t\xc3\x96"
        "ffnen",
        "File\tDatei",
        "Line one Line two\tZeile eins Zeile zwei",
        "Tab here \"quoted\"\tTab hier \"zitiert\"",
        "One file\tEine Datei",
        "%d files\t%d Dateien",
        "a partial\tein Teil",
        "Fuzzy one\tUnscharf",
        "Windows line end\tWindows Zeile Ende",
    };
    check_lines(tpath("po2.tsv"), both, 9, "PO TSV with options");
    CHECK(!exists(tpath("po2.en")), "no line files without a prefix");

    /* the same entries compiled by msgfmt give the same pairs */
    if (have_tool("msgfmt")) {
        char cmd[800];
        snprintf(cmd, sizeof cmd, "msgfmt -o %s %s", tpath("gen.mo"), po);
        CHECK(system(cmd) == 0, "msgfmt");
        const char *mo[] = {tpath("gen.mo")};
        app_corpus_build_params q = params_for(mo, 1, NULL);
        q.tsv_path = tpath("gen_mo.tsv");
        CHECK_STATUS(app_corpus_build(&q, &st));
        /* msgfmt sorts by msgctxt\x04msgid and merges nothing here */
        static const char *const sorted[] = {
            "Line one Line two\tZeile eins Zeile zwei",
            "One file\tEine Datei",
            "%d files\t%d Dateien",
            "Open\t\xc3\x96"
            "ffnen",
            "Spaces only target\t ", /* (dropped: empty) */
            "Tab here \"quoted\"\tTab hier \"zitiert\"",
            "Windows line end\tWindows Zeile Ende",
            "a partial\tein Teil",
            "_File\t_Datei",
            "Open\t\xc3\x96"
            "ffnen",
        };
        const char *want[9];
        int k = 0;
        for (int i = 0; i < 10; i++)
            if (i != 4) want[k++] = sorted[i];
        check_lines(tpath("gen_mo.tsv"), want, 9, "msgfmt'd PO");
        CHECK(st.pairs == 9 && st.empty == 2, "MO from msgfmt: pairs %lld empty %lld",
              (long long)st.pairs, (long long)st.empty);
    }

    /* a PO for another language is skipped */
    p = params_for(files, 1, tpath("po3"));
    p.trg_lang = "fr";
    CHECK_STATUS(app_corpus_build(&p, &st));
    CHECK(st.files == 0 && st.files_other_lang == 1 && st.pairs == 0, "PO de_DE skipped for fr");
    check_lines(tpath("po3.fr"), NULL, 0, "empty corpus");
}

/* ====================================================== samples, XLIFF */

static void test_samples(void) {
    const char *files[] = {MT_SOURCE_DIR "/assets/samples/sample.de.po",
                           MT_SOURCE_DIR "/assets/samples/sample.de.xlf"};
    app_corpus_build_params p = params_for(files, 2, tpath("sample"));
    app_corpus_stats st;
    CHECK_STATUS(app_corpus_build(&p, &st));
    /* PO: 28 entries (6 translated, 1 fuzzy, 21 empty; 1 obsolete);
    ** XLIFF: 10 units (translate="no" not counted): 2 translated, 1 needs
    ** review, 7 without a target */
    CHECK(st.files == 2 && st.entries == 38 && st.pairs == 9 && st.untranslated == 28 &&
              st.fuzzy == 2 && st.obsolete == 1,
          "sample counts: entries %lld pairs %lld untranslated %lld fuzzy %lld obsolete %lld",
          (long long)st.entries, (long long)st.pairs, (long long)st.untranslated,
          (long long)st.fuzzy, (long long)st.obsolete);
    static const char *const en[] = {
        "Settings from %s",
        "Choose a Task Calendar",
        "Loading %d file\xe2\x80\xa6",
        "Loading %d files\xe2\x80\xa6",
        "Localtime",
        "Author unknown",
        "Repeat forever",
        "About gedit",
        "Run gedit in standalone mode",
    };
    static const char *const de[] = {
        "Einstellungen von %s",
        "Aufgabenkalender ausw\xc3\xa4hlen",
        "%d Datei wird geladen \xe2\x80\xa6",
        "%d Dateien werden geladen \xe2\x80\xa6",
        "Ortszeit",
        "Autor unbekannt",
        "Immer wiederholen",
        "Info zu gedit",
        "gedit im eigenst\xc3\xa4ndigen Modus ausf\xc3\xbchren",
    };
    check_lines(tpath("sample.en"), en, 9, "sample source");
    check_lines(tpath("sample.de"), de, 9, "sample target");

    /* with drafts: the PO fuzzy entry and the XLIFF unit 6, whose inline
    ** tags (<g><ph>%1</ph>%</g>) are removed with their native code */
    p.include_fuzzy = true;
    p.out_prefix = NULL;
    p.tsv_path = tpath("sample.tsv");
    CHECK_STATUS(app_corpus_build(&p, &st));
    CHECK(st.pairs == 11 && st.fuzzy == 0, "sample with fuzzy: %lld pairs", (long long)st.pairs);
    char *data = NULL;
    size_t len = 0;
    CHECK_STATUS(app_doc_read_file(tpath("sample.tsv"), &data, &len));
    CHECK(contains(data, "\nUpdate calendar source\tAdressbuchquelle aktualisieren\n"),
          "fuzzy PO pair");
    CHECK(contains(data, "\n% Complete\t % fertiggestellt\n"), "XLIFF draft pair, tags removed");
    CHECK(!contains(data, LB) && !contains(data, RB), "no placeholder brackets");
    mt_free(data);

    /* the XLIFF's languages: en -> de; asking for fr skips it */
    const char *xlf[] = {files[1]};
    p = params_for(xlf, 1, tpath("x"));
    p.src_lang = "fr";
    CHECK_STATUS(app_corpus_build(&p, &st));
    CHECK(st.files_other_lang == 1 && st.pairs == 0, "XLIFF source language checked");
}

/* ================================================================= TMX */

static const char tmx_text[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<!-- written by hand -->\n"
    "<tmx version=\"1.4\">\n"
    "<header creationtool=\"t\" creationtoolversion=\"1\" segtype=\"sentence\" o-tmf=\"x\"\n"
    "        adminlang=\"en\" srclang=\"en-US\" datatype=\"plaintext\"/>\n"
    "<body>\n"
    "<tu><tuv xml:lang=\"en-US\"><seg>Hello <bpt i=\"1\">&lt;b&gt;</bpt>world<ept "
    "i=\"1\">&lt;/b&gt;</ept></seg></tuv>\n"
    "    <tuv xml:lang=\"DE-de\"><seg>Hallo <hi type=\"x\">Welt</hi></seg></tuv></tu>\n"
    "<tu><tuv xml:lang=\"en\"><seg>Only English</seg></tuv>"
    "<tuv xml:lang=\"fr\"><seg>Seulement</seg></tuv></tu>\n"
    "<tu><prop type=\"x-note\">old TMX 1.1 attribute</prop>"
    "<tuv lang=\"EN\"><seg>Old style <ph x=\"1\">%s</ph>&amp; more</seg></tuv>"
    "<tuv lang=\"de\"><seg>Alter Stil &amp; mehr</seg></tuv></tu>\n"
    "<tu><tuv xml:lang=\"de-AT\"><seg>Gr\xc3\xbc\xc3\x9f Gott</seg></tuv>"
    "<tuv xml:lang=\"en-GB\"><seg>Good day</seg></tuv></tu>\n"
    "<tu><tuv xml:lang=\"en\"><seg>Multi\nline<![CDATA[ <raw>]]></seg></tuv>"
    "<tuv xml:lang=\"de\"><seg>Mehr-&#13;\nzeilig</seg></tuv></tu>\n"
    "</body>\n"
    "</tmx>\n";

static void test_tmx(void) {
    const char *tmx = tpath("hand.tmx");
    write_text(tmx, tmx_text);
    const char *files[] = {tmx};
    app_corpus_build_params p = params_for(files, 1, tpath("tmx"));
    app_corpus_stats st;
    CHECK_STATUS(app_corpus_build(&p, &st));
    CHECK(st.files == 1 && st.entries == 5 && st.no_lang == 1 && st.pairs == 4,
          "TMX counts: entries %lld no-lang %lld pairs %lld", (long long)st.entries,
          (long long)st.no_lang, (long long)st.pairs);
    static const char *const en[] = {"Hello world", "Old style & more", "Good day",
                                     "Multi line <raw>"};
    static const char *const de[] = {"Hallo Welt", "Alter Stil & mehr", "Gr\xc3\xbc\xc3\x9f Gott",
                                     "Mehr- zeilig"};
    check_lines(tpath("tmx.en"), en, 4, "TMX source");
    check_lines(tpath("tmx.de"), de, 4, "TMX target");

    /* detected by content without the suffix */
    write_text(tpath("memory.xml"), tmx_text);
    app_corpus_kind kind = APP_CORPUS_PO;
    CHECK_STATUS(app_corpus_detect(tpath("memory.xml"), &kind));
    CHECK(kind == APP_CORPUS_TMX, "TMX detected by its root element");
    write_text(tpath("doc.xml"), "<?xml version=\"1.0\"?>\n<!-- c -->\n<x:xliff "
                                 "xmlns:x=\"urn:oasis:names:tc:xliff:document:1.2\"/>\n");
    CHECK_STATUS(app_corpus_detect(tpath("doc.xml"), &kind));
    CHECK(kind == APP_CORPUS_XLIFF, "XLIFF detected by its root element");
    write_text(tpath("messages"), "# comment\n\nmsgid \"a\"\nmsgstr \"b\"\n");
    CHECK_STATUS(app_corpus_detect(tpath("messages"), &kind));
    CHECK(kind == APP_CORPUS_PO, "PO detected by content");

    /* malformed XML: error with file and line, no output, old outputs kept */
    write_text(tpath("bad.tmx"), "<tmx version=\"1.4\">\n<body>\n<tu><tuv xml:lang=\"en\">"
                                 "<seg>x</seg></tuv>\n</body>\n</tmx>\n");
    write_text(tpath("keep.en"), "old\n");
    unlink(tpath("keep.de"));
    const char *two[] = {MT_SOURCE_DIR "/assets/samples/sample.de.po", tpath("bad.tmx")};
    p = params_for(two, 2, tpath("keep"));
    mt_status rc = app_corpus_build(&p, &st);
    CHECK(rc == MT_ERR_FORMAT && contains(mt_errmsg(), "bad.tmx:") &&
              contains(mt_errmsg(), "malformed XML"),
          "malformed TMX: %s", mt_errmsg());
    static const char *const old[] = {"old"};
    check_lines(tpath("keep.en"), old, 1, "output untouched after an error");
    CHECK(!exists(tpath("keep.de")), "no output after an error");
    write_text(tpath("root.tmx"), "<?xml version=\"1.0\"?><tmz/>");
    files[0] = tpath("root.tmx");
    p = params_for(files, 1, tpath("keep"));
    rc = app_corpus_build(&p, &st);
    CHECK(rc == MT_ERR_FORMAT && contains(mt_errmsg(), "root.tmx") &&
              contains(mt_errmsg(), "not <tmx>"),
          "wrong root: %s", mt_errmsg());
    /* malformed XLIFF and unknown formats */
    write_text(tpath("bad.xlf"), "<xliff version=\"1.2\"><file>");
    files[0] = tpath("bad.xlf");
    rc = app_corpus_build(&p, &st);
    CHECK(rc == MT_ERR_FORMAT && contains(mt_errmsg(), "bad.xlf"), "malformed XLIFF: %s",
          mt_errmsg());
    write_text(tpath("notes.txt"), "just text\n");
    files[0] = tpath("notes.txt");
    rc = app_corpus_build(&p, &st);
    CHECK(rc == MT_ERR_FORMAT && contains(mt_errmsg(), "notes.txt") &&
              contains(mt_errmsg(), "not a PO, MO, XLIFF or TMX"),
          "unknown format: %s", mt_errmsg());
    files[0] = tpath("missing.po");
    rc = app_corpus_build(&p, &st);
    CHECK(rc == MT_ERR_IO && contains(mt_errmsg(), "missing.po"), "missing file: %s", mt_errmsg());
    check_lines(tpath("keep.en"), old, 1, "output untouched after errors");
    CHECK(!exists(tpath("keep.de")), "still no output");
    check_no_tmp("TMX");
}

/* Allocation failure at every point of a build: a clean error and no
** output, then success. */
static void test_alloc_failures(void) {
    static unsigned char buf[4096];
    size_t n = make_mo(buf, sizeof buf, mo_entries, n_mo_entries, false);
    write_bytes(tpath("af.mo"), buf, n);
    write_text(tpath("af.po"), po_text);
    write_text(tpath("af.tmx"), tmx_text);
    const char *files[] = {tpath("af.po"), tpath("af.mo"), tpath("af.tmx"),
                           MT_SOURCE_DIR "/assets/samples/sample.de.xlf"};
    app_corpus_build_params p = params_for(files, 4, tpath("af"));
    p.tsv_path = tpath("af.tsv");
    p.dedup = p.strip_accelerators = true;
    app_corpus_stats st;
    mt_status rc = MT_ERR_NOMEM;
    int64_t at;
    const char *af_en = tpath("af.en");
    for (at = 0; at < 5000; at++) {
        unlink(af_en);
        mt_alloc_fail_at(at, false);
        rc = app_corpus_build(&p, &st);
        mt_alloc_fail_at(-1, false);
        if (rc == MT_OK) break;
        if (rc != MT_ERR_NOMEM) {
            CHECK(0, "allocation %lld failed: rc %d (%s)", (long long)at, (int)rc, mt_errmsg());
            break;
        }
        if (exists(af_en)) {
            CHECK(0, "output written although allocation %lld failed", (long long)at);
            break;
        }
    }
    CHECK(rc == MT_OK && at > 10, "build succeeded after %lld injected failures", (long long)at);
    /* duplicates: "Open" twice in the PO; "Open", "One file", "%d files" of
    ** the MO are in the PO too */
    CHECK(st.pairs == 9 + 5 + 4 + 2 - 1 - 3 && st.duplicates == 4,
          "pairs with every allocation available: %lld", (long long)st.pairs);
    check_no_tmp("allocation failures");
}

/* =============================================================== store */

typedef struct fake_clock {
    int64_t t;
} fake_clock;

static int64_t fake_now(void *user) { return ((fake_clock *)user)->t; }

static int seg_id_of(void *user, const store_segment *seg) {
    *(int64_t *)user = seg->id;
    return 0;
}

static int64_t seg_at(store *s, int64_t doc, int32_t index) {
    int64_t id = 0;
    CHECK_STATUS(store_get_segment_at(s, doc, index, seg_id_of, &id));
    return id;
}

#define T0 1714566600000 /* 2024-05-01T12:30:00Z */

typedef struct store_docs {
    int64_t a, b, c;
    char path_a[512], path_b[512];
} store_docs;

/* a.po (en-de): 4 segments, b.xlf (en-de): 2, c.po (en-fr): 1; confirmed:
** a0 at T0, a1 at T0+1s, b0 at T0+2s, c0 at T0+3s, a2 at T0+60s. */
static void fill_store(store *s, fake_clock *clk, store_docs *d) {
    snprintf(d->path_a, sizeof d->path_a, "%s", tpath("a.po"));
    snprintf(d->path_b, sizeof d->path_b, "%s", tpath("b.xlf"));
    write_text(d->path_a, "msgid \"x\"\nmsgstr \"\"\n"); /* so that realpath() finds it */
    store_segment_in a[4] = {
        {.source = "Hello", .status = STORE_SEG_NEW},
        {.source = "Line\nbreak", .status = STORE_SEG_NEW},
        {.source = "_File", .status = STORE_SEG_NEW},
        {.source = "Not confirmed", .status = STORE_SEG_NEW},
    };
    store_segment_in b[2] = {
        {.source = LB "1" RB "Bold" LB "/1" RB " text", .status = STORE_SEG_NEW},
        {.source = "Plain", .status = STORE_SEG_NEW},
    };
    store_segment_in c[1] = {{.source = "Hello", .status = STORE_SEG_NEW}};
    store_doc_info ia = {d->path_a, STORE_FORMAT_PO, "en", "de", "h1"};
    store_doc_info ib = {d->path_b, STORE_FORMAT_XLIFF, "en", "de-DE", "h2"};
    store_doc_info ic = {"c.po", STORE_FORMAT_PO, "en", "fr", "h3"};
    clk->t = T0 - 60000;
    CHECK_STATUS(store_add_document(s, &ia, a, 4, &d->a));
    CHECK_STATUS(store_add_document(s, &ib, b, 2, &d->b));
    CHECK_STATUS(store_add_document(s, &ic, c, 1, &d->c));
    int64_t cid;
    clk->t = T0;
    CHECK_STATUS(store_confirm(s, seg_at(s, d->a, 0), "Hallo", 1000, 5, &cid));
    clk->t = T0 + 1000;
    CHECK_STATUS(store_confirm(s, seg_at(s, d->a, 1), "Zeile\nUmbruch", 1000, 5, &cid));
    clk->t = T0 + 2000;
    CHECK_STATUS(
        store_confirm(s, seg_at(s, d->b, 0), LB "1" RB "Fetter" LB "/1" RB " Text", 1000, 5, &cid));
    clk->t = T0 + 3000;
    CHECK_STATUS(store_confirm(s, seg_at(s, d->c, 0), "Bonjour", 1000, 5, &cid));
    clk->t = T0 + 60000;
    CHECK_STATUS(store_confirm(s, seg_at(s, d->a, 2), "_Datei", 1000, 5, &cid));
    /* edited after its confirmation: the export keeps the confirmed text */
    clk->t = T0 + 70000;
    store_edit_in e = {.seg_id = seg_at(s, d->a, 0), .kind = STORE_EDIT_TYPED, .text = "Hallo!"};
    int64_t eid;
    CHECK_STATUS(store_record_edit(s, &e, &eid));
    e.seg_id = seg_at(s, d->a, 3);
    e.text = "Nicht";
    CHECK_STATUS(store_record_edit(s, &e, &eid));
}

typedef struct tmx_row_out {
    char src[128], trg[128], sl[16], tl[16], date[32];
} tmx_row_out;

/* Parses a TMX file with libxml2 into rows; returns the count, -1 on error. */
static int parse_tmx(const char *path, tmx_row_out *rows, int cap, char *srclang, size_t sl_cap) {
    xmlDocPtr doc = xmlReadFile(path, NULL, XML_PARSE_NONET);
    if (doc == NULL) return -1;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    int n = 0;
    if (root == NULL || !xmlStrEqual(root->name, BAD_CAST "tmx")) n = -1;
    for (xmlNodePtr c = root ? root->children : NULL; c && n >= 0; c = c->next) {
        if (c->type != XML_ELEMENT_NODE) continue;
        if (xmlStrEqual(c->name, BAD_CAST "header")) {
            xmlChar *v = xmlGetProp(c, BAD_CAST "srclang");
            snprintf(srclang, sl_cap, "%s", v ? (const char *)v : "");
            xmlFree(v);
        }
        if (!xmlStrEqual(c->name, BAD_CAST "body")) continue;
        for (xmlNodePtr tu = c->children; tu && n >= 0; tu = tu->next) {
            if (tu->type != XML_ELEMENT_NODE) continue;
            if (n == cap || !xmlStrEqual(tu->name, BAD_CAST "tu")) {
                n = -1;
                break;
            }
            tmx_row_out *r = &rows[n++];
            memset(r, 0, sizeof *r);
            xmlChar *v = xmlGetProp(tu, BAD_CAST "creationdate");
            snprintf(r->date, sizeof r->date, "%s", v ? (const char *)v : "");
            xmlFree(v);
            int k = 0;
            for (xmlNodePtr tuv = tu->children; tuv; tuv = tuv->next) {
                if (tuv->type != XML_ELEMENT_NODE) continue;
                xmlChar *lang = xmlGetNsProp(tuv, BAD_CAST "lang", XML_XML_NAMESPACE);
                xmlChar *text = xmlNodeGetContent(tuv);
                snprintf(k ? r->tl : r->sl, 16, "%s", lang ? (const char *)lang : "");
                snprintf(k ? r->trg : r->src, 128, "%s", text ? (const char *)text : "");
                xmlFree(lang);
                xmlFree(text);
                k++;
            }
            if (k != 2) n = -1;
        }
    }
    xmlFreeDoc(doc);
    return n;
}

static app_corpus_export_params export_params(const char *tmx, const char *tsv) {
    app_corpus_export_params p;
    memset(&p, 0, sizeof p);
    p.since_ms = INT64_MIN;
    p.tmx_path = tmx;
    p.tsv_path = tsv;
    return p;
}

static void test_export(void) {
    store *s = NULL;
    CHECK_STATUS(store_open(":memory:", &s));
    if (s == NULL) return;
    fake_clock clk = {T0};
    store_set_clock(s, fake_now, &clk);
    store_docs d;
    fill_store(s, &clk, &d);

    /* everything */
    const char *tmx = tpath("all.tmx");
    app_corpus_export_params p = export_params(tmx, tpath("all.tsv"));
    app_corpus_stats st;
    CHECK_STATUS(app_corpus_export(s, &p, &st));
    CHECK(st.documents == 3 && st.entries == 5 && st.pairs == 5, "export all: docs %lld pairs %lld",
          (long long)st.documents, (long long)st.pairs);
    tmx_row_out rows[8];
    char srclang[32] = "";
    int n = parse_tmx(tmx, rows, 8, srclang, sizeof srclang);
    CHECK(n == 5, "TMX rows: %d", n);
    CHECK(!strcmp(srclang, "en"), "header srclang: %s", srclang);
    static const char *const want[5][5] = {
        {"Hello", "Hallo", "en", "de", "20240501T123000Z"},
        {"Line\nbreak", "Zeile\nUmbruch", "en", "de", "20240501T123001Z"},
        {"_File", "_Datei", "en", "de", "20240501T123100Z"},
        {"Bold text", "Fetter Text", "en", "de-DE", "20240501T123002Z"},
        {"Hello", "Bonjour", "en", "fr", "20240501T123003Z"},
    };
    for (int i = 0; i < n && i < 5; i++)
        CHECK(!strcmp(rows[i].src, want[i][0]) && !strcmp(rows[i].trg, want[i][1]) &&
                  !strcmp(rows[i].sl, want[i][2]) && !strcmp(rows[i].tl, want[i][3]) &&
                  !strcmp(rows[i].date, want[i][4]),
              "TMX row %d: %s|%s|%s|%s|%s", i, rows[i].src, rows[i].trg, rows[i].sl, rows[i].tl,
              rows[i].date);
    static const char *const tsv[] = {"Hello\tHallo", "Line break\tZeile Umbruch", "_File\t_Datei",
                                      "Bold text\tFetter Text", "Hello\tBonjour"};
    check_lines(tpath("all.tsv"), tsv, 5, "export TSV");
    if (have_tool("xmllint")) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "xmllint --noout %s", tmx);
        CHECK(system(cmd) == 0, "xmllint --noout on the exported TMX");
    }

    /* round trip: the TMX back into a corpus (the French unit has no "de") */
    const char *files[] = {tmx};
    app_corpus_build_params bp = params_for(files, 1, tpath("rt"));
    CHECK_STATUS(app_corpus_build(&bp, &st));
    CHECK(st.entries == 5 && st.pairs == 4 && st.no_lang == 1, "round trip counts");
    static const char *const rt_en[] = {"Hello", "Line break", "_File", "Bold text"};
    static const char *const rt_de[] = {"Hallo", "Zeile Umbruch", "_Datei", "Fetter Text"};
    check_lines(tpath("rt.en"), rt_en, 4, "round trip source");
    check_lines(tpath("rt.de"), rt_de, 4, "round trip target");

    /* language filter, since, document */
    p = export_params(NULL, tpath("de.tsv"));
    p.trg_lang = "de";
    p.strip_accelerators = true;
    CHECK_STATUS(app_corpus_export(s, &p, &st));
    CHECK(st.documents == 2 && st.files_other_lang == 1 && st.pairs == 4, "trg-lang filter");
    static const char *const de_tsv[] = {"Hello\tHallo", "Line break\tZeile Umbruch", "File\tDatei",
                                         "Bold text\tFetter Text"};
    check_lines(tpath("de.tsv"), de_tsv, 4, "export de, accelerators stripped");

    p = export_params(NULL, tpath("since.tsv"));
    CHECK_STATUS(app_parse_iso8601("2024-05-01T14:30:01.500+02:00", &p.since_ms));
    CHECK_STATUS(app_corpus_export(s, &p, &st));
    CHECK(st.pairs == 3 && st.before_since == 2, "since: pairs %lld before %lld",
          (long long)st.pairs, (long long)st.before_since);
    static const char *const since_tsv[] = {"_File\t_Datei", "Bold text\tFetter Text",
                                            "Hello\tBonjour"};
    check_lines(tpath("since.tsv"), since_tsv, 3, "export since");
    p.since_ms = T0 + 1000; /* inclusive */
    CHECK_STATUS(app_corpus_export(s, &p, &st));
    CHECK(st.pairs == 4, "since is inclusive: %lld", (long long)st.pairs);

    p = export_params(tpath("b.tmx"), NULL);
    p.document = d.path_b;
    CHECK_STATUS(app_corpus_export(s, &p, &st));
    n = parse_tmx(tpath("b.tmx"), rows, 8, srclang, sizeof srclang);
    CHECK(n == 1 && !strcmp(rows[0].src, "Bold text") && !strcmp(rows[0].trg, "Fetter Text"),
          "export one document: %d rows", n);
    /* the same file named differently */
    char other[600];
    snprintf(other, sizeof other, "%s/./a.po", tmp_dir);
    p.document = other;
    CHECK_STATUS(app_corpus_export(s, &p, &st));
    n = parse_tmx(tpath("b.tmx"), rows, 8, srclang, sizeof srclang);
    CHECK(n == 3 && st.documents == 1, "document found by its real path: %d rows", n);
    p.document = tpath("nowhere.po");
    write_text(tpath("b.tmx"), "unchanged");
    mt_status rc = app_corpus_export(s, &p, &st);
    CHECK(rc == MT_ERR_NOTFOUND && contains(mt_errmsg(), "nowhere.po"), "unknown document: %s",
          mt_errmsg());
    char *data = NULL;
    size_t len;
    CHECK_STATUS(app_doc_read_file(tpath("b.tmx"), &data, &len));
    CHECK(data && !strcmp(data, "unchanged"), "no output on error");
    mt_free(data);

    /* versions (issue 29, finding 10): a second save of a.po with "Hello"
    ** translated anew; the export has the final translation only, --history
    ** every version's */
    store_segment_in a2[2] = {{.source = "Hello", .status = STORE_SEG_NEW},
                              {.source = "Line\nbreak", .status = STORE_SEG_NEW}};
    store_doc_info ia2 = {d.path_a, STORE_FORMAT_PO, "en", "de", "h1-v2"};
    int64_t a2_id = 0, cid = 0;
    CHECK_STATUS(store_add_document(s, &ia2, a2, 2, &a2_id));
    clk.t = T0 + 90000;
    CHECK_STATUS(store_confirm(s, seg_at(s, a2_id, 0), "Guten Tag", 1000, 5, &cid));
    p = export_params(NULL, tpath("final.tsv"));
    p.document = d.path_a;
    CHECK_STATUS(app_corpus_export(s, &p, &st));
    static const char *const final_tsv[] = {"Line break\tZeile Umbruch", "_File\t_Datei",
                                            "Hello\tGuten Tag"};
    check_lines(tpath("final.tsv"), final_tsv, 3, "export: final translations only");
    CHECK(st.superseded == 1, "one superseded translation, got %lld", (long long)st.superseded);
    p.history = true;
    CHECK_STATUS(app_corpus_export(s, &p, &st));
    static const char *const hist_tsv[] = {"Hello\tHallo", "Line break\tZeile Umbruch",
                                           "_File\t_Datei", "Hello\tGuten Tag"};
    check_lines(tpath("final.tsv"), hist_tsv, 4, "export --history: every version");

    /* a save of the document (store_add_version) keeps the segments it
    ** changed; --history has them too, the final export only the latest */
    store_saved_segment sv2[2] = {{"Guten Tag", STORE_SEG_CONFIRMED},
                                  {"Zeilen\numbruch", STORE_SEG_CONFIRMED}};
    int64_t vid = 0;
    CHECK_STATUS(store_add_version(s, a2_id, "h1-v3", sv2, 2, &vid, NULL));
    clk.t = T0 + 95000;
    CHECK_STATUS(store_confirm(s, seg_at(s, a2_id, 0), "Guten Morgen", 1000, 5, &cid));
    p.history = false;
    CHECK_STATUS(app_corpus_export(s, &p, &st));
    static const char *const final2_tsv[] = {"Line break\tZeile Umbruch", "_File\t_Datei",
                                             "Hello\tGuten Morgen"};
    check_lines(tpath("final.tsv"), final2_tsv, 3, "export after a save: the latest only");
    p.history = true;
    CHECK_STATUS(app_corpus_export(s, &p, &st));
    static const char *const hist2_tsv[] = {
        "Hello\tHallo",     "Line break\tZeile Umbruch",  "_File\t_Datei",
        "Hello\tGuten Tag", "Line break\tZeilen umbruch", "Hello\tGuten Morgen"};
    check_lines(tpath("final.tsv"), hist2_tsv, 6, "export --history: what each save wrote");

    /* an empty store gives a valid, empty TMX */
    store *e = NULL;
    CHECK_STATUS(store_open(":memory:", &e));
    p = export_params(tpath("empty.tmx"), NULL);
    CHECK_STATUS(app_corpus_export(e, &p, &st));
    CHECK(st.pairs == 0 && parse_tmx(tpath("empty.tmx"), rows, 8, srclang, 32) == 0,
          "empty export");
    store_close(e);
    store_close(s);
    check_no_tmp("export");
}

/* ========================================================== command line */

static int run(int argc, const char **argv) { return app_corpus_main(argc, (char **)argv); }
#define RUN(...)                                                                                   \
    run((int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)),                       \
        (const char *[]){__VA_ARGS__})

static void test_cli(void) {
    /* build: files anywhere among the options */
    const char *po = MT_SOURCE_DIR "/assets/samples/sample.de.po";
    int r = RUN("corpus", "build", "--dedup", po, "-o", tpath("cli"), "--src-lang", "en",
                "--trg-lang", "de", "--strip-accelerators", "true", tpath("le.mo"));
    CHECK(r == 0, "build exit code %d", r);
    static const char *const en[] = {
        "Settings from %s",
        "Choose a Task Calendar",
        "Loading %d file\xe2\x80\xa6",
        "Loading %d files\xe2\x80\xa6",
        "Localtime",
        "Author unknown",
        "Repeat forever",
        "Line break",
        "One file",
        "%d files",
        "Open",
        "Save",
    };
    check_lines(tpath("cli.en"), en, 12, "CLI build");
    r = RUN("corpus", "build", "--tsv", tpath("cli.tsv"), "-s", "en", "-t", "de", "--",
            tpath("le.mo"));
    CHECK(r == 0, "build with -- : %d", r);
    CHECK(RUN("corpus", "build", "-o", tpath("u"), "--trg-lang", "de", po) == 2,
          "missing --src-lang");
    CHECK(RUN("corpus", "build", "-o", tpath("u"), "-s", "en", "-t", "de") == 2, "no files");
    CHECK(RUN("corpus", "build", "-s", "en", "-t", "de", po) == 2, "no output");
    CHECK(RUN("corpus", "build", "--bogus", "-s", "en", "-t", "de", po) == 2, "unknown option");
    CHECK(RUN("corpus", "build", "-o", tpath("u"), "-s", "en", "-t", "de", tpath("bad.tmx")) == 1,
          "bad input: exit 1");
    CHECK(!exists(tpath("u.en")), "no output");
    CHECK(RUN("corpus", "frobnicate") == 2, "unknown subcommand");
    CHECK(RUN("corpus") == 2, "no subcommand");

    /* export through --db */
    const char *db = tpath("cli.db");
    store *s = NULL;
    CHECK_STATUS(store_open(db, &s));
    if (s == NULL) return;
    fake_clock clk = {T0};
    store_set_clock(s, fake_now, &clk);
    store_docs d;
    fill_store(s, &clk, &d);
    store_close(s);
    r = RUN("corpus", "export", "--db", db, "--tmx", tpath("cli.tmx"), "--since",
            "2024-05-01T12:30:01Z", "--trg-lang", "de");
    CHECK(r == 0, "export exit code %d", r);
    tmx_row_out rows[8];
    char srclang[32];
    int n = parse_tmx(tpath("cli.tmx"), rows, 8, srclang, sizeof srclang);
    CHECK(n == 3 && !strcmp(rows[0].src, "Line\nbreak") && !strcmp(rows[2].trg, "Fetter Text"),
          "CLI export rows: %d", n);
    CHECK(RUN("corpus", "export", "--db", db) == 2, "export without output");
    CHECK(RUN("corpus", "export", "--db", db, "--tsv", tpath("x.tsv"), "--since", "May 1") == 2,
          "bad --since");
    CHECK(RUN("corpus", "export", "--db", tpath("none.db"), "--tsv", tpath("x.tsv")) == 1,
          "missing store");
    CHECK(!exists(tpath("none.db")) && !exists(tpath("x.tsv")), "nothing created");

    /* the default store path */
    char xdg[600];
    snprintf(xdg, sizeof xdg, "%s/xdg/data", tmp_dir);
    const char *old = getenv("XDG_DATA_HOME");
    char saved[600] = "";
    if (old) snprintf(saved, sizeof saved, "%s", old);
    setenv("XDG_DATA_HOME", xdg, 1);
    char *path = NULL;
    CHECK_STATUS(app_default_db_path(false, &path));
    char want[700];
    snprintf(want, sizeof want, "%s/mtpe/mtpe.db", xdg);
    CHECK(path && !strcmp(path, want), "default db path %s", path ? path : "(null)");
    mt_free(path);
    snprintf(want, sizeof want, "%s/mtpe", xdg);
    CHECK(!exists(want), "directory not made when not asked");
    CHECK(RUN("corpus", "export", "--tsv", tpath("x.tsv")) == 1, "no store at the default path");
    CHECK(!exists(want), "export does not create the store directory");
    CHECK_STATUS(app_default_db_path(true, &path));
    struct stat sb;
    CHECK(stat(want, &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0700,
          "directory made, mode 0700");
    mt_free(path);
    setenv("XDG_DATA_HOME", "relative/dir", 1); /* ignored, as the spec says */
    const char *home = getenv("HOME");
    CHECK_STATUS(app_default_db_path(false, &path));
    if (home && home[0]) {
        snprintf(want, sizeof want, "%s/.local/share/mtpe/mtpe.db", home);
        CHECK(path && !strcmp(path, want), "fallback path %s", path ? path : "(null)");
    }
    mt_free(path);
    if (old)
        setenv("XDG_DATA_HOME", saved, 1);
    else
        unsetenv("XDG_DATA_HOME");

    char *assets = NULL;
    CHECK_STATUS(app_default_assets_dir(&assets));
    char samples[PATH_MAX + 64];
    snprintf(samples, sizeof samples, "%s/samples/sample.de.po", assets ? assets : "");
    CHECK(assets && assets[0] == '/' && exists(samples), "assets dir %s", assets ? assets : "");
    mt_free(assets);
    setenv("MTPE_ASSETS", tmp_dir, 1);
    CHECK_STATUS(app_default_assets_dir(&assets));
    char real[PATH_MAX];
    CHECK(assets && realpath(tmp_dir, real) && !strcmp(assets, real), "MTPE_ASSETS wins");
    mt_free(assets);
    unsetenv("MTPE_ASSETS");
    snprintf(want, sizeof want, "%s/a/b/c", tmp_dir);
    CHECK_STATUS(app_make_dirs(want, 0755));
    CHECK(stat(want, &sb) == 0 && S_ISDIR(sb.st_mode), "mkdir -p");
    snprintf(want, sizeof want, "%s/a.po/x", tmp_dir);
    CHECK(app_make_dirs(want, 0755) == MT_ERR_IO && contains(mt_errmsg(), "a.po"),
          "mkdir under a file: %s", mt_errmsg());
    check_no_tmp("CLI");
}

int main(void) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/mtpe_corpuscmd_XXXXXX");
    if (mkdtemp(tmp_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    xmlInitParser();
    test_lang_match();
    test_flatten();
    test_iso8601();
    test_accelerators();
    test_mo();
    test_po();
    test_samples();
    test_tmx();
    test_alloc_failures();
    test_export();
    test_cli();
    if (th_failures == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_dir);
    } else {
        fprintf(stderr, "files kept in %s\n", tmp_dir);
    }
    TEST_MAIN_END();
}
