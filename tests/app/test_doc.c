/*
** test_doc.c: the document model (app/formats/doc*.c): PO, XLIFF 1.2, plain and
** parallel text, TSV, TMX export and the atomic save helper.
**
** Expected values are written out by hand from the sample files and the
** formats' specifications; where a tool is installed, gettext's msgcat and
** msgfmt and libxml2's xmllint serve as independent oracles (msgcat for the
** line wrapping of regenerated strings, msgfmt --check for validity).
*/
#include <dirent.h>
#include <errno.h>
#include <libxml/c14n.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "doc.h"
#include "harness.h"

#define SAMPLES MT_SOURCE_DIR "/assets/samples"
#define LBK "\xe2\x9f\xa6" /* ⟦ */
#define RBK "\xe2\x9f\xa7" /* ⟧ */

static char tmpdir[256];

static const char *tpath(const char *name) {
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static void write_file(const char *path, const char *data) {
    FILE *f = fopen(path, "wb");
    if (!CHECK(f != NULL, "cannot create %s", path)) return;
    fwrite(data, 1, strlen(data), f);
    fclose(f);
}

/* Whole file as a heap string (mt_free), NULL if unreadable. */
static char *slurp(const char *path) {
    char *d = NULL;
    size_t n;
    if (app_doc_read_file(path, &d, &n) != MT_OK) return NULL;
    return d;
}

/* s with the single occurrence of old replaced by new_; NULL (and a failed
** check) when old does not occur exactly once. */
static char *replace1(const char *s, const char *old, const char *new_) {
    const char *p = strstr(s, old);
    if (!CHECK(p != NULL && strstr(p + 1, old) == NULL, "expected one occurrence of [%s]", old))
        return NULL;
    size_t a = (size_t)(p - s), o = strlen(old), nn = strlen(new_), n = strlen(s);
    char *r = mt_xmalloc(n - o + nn + 1);
    memcpy(r, s, a);
    memcpy(r + a, new_, nn);
    memcpy(r + a + nn, p + o, n - a - o + 1);
    return r;
}

/* Replaces *s by replace1(*s, old, new_). */
static void subst(char **s, const char *old, const char *new_) {
    if (*s == NULL) return;
    char *r = replace1(*s, old, new_);
    mt_free(*s);
    *s = r;
}

static bool same_file_text(const char *path, const char *want) {
    char *got = slurp(path);
    bool ok = got != NULL && want != NULL && strcmp(got, want) == 0;
    if (!ok && got && want) {
        size_t i = 0;
        while (got[i] && got[i] == want[i])
            i++;
        fprintf(stderr, "  %s differs at byte %zu:\n  got  [%.80s]\n  want [%.80s]\n", path, i,
                got + i, want + i);
    }
    mt_free(got);
    return ok;
}

/* gettext and xmllint: scripts/install-deps.sh installs them (missing: a failure) */
static bool have_tool(const char *name) { return CHECK_TOOL(name); }

static int run(const char *fmt, const char *arg) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, fmt, arg);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static bool no_temp_files(void) {
    DIR *dir = opendir(tmpdir);
    bool ok = true;
    for (struct dirent *e; dir && (e = readdir(dir)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n > 4 && strcmp(e->d_name + n - 4, ".tmp") == 0) {
            fprintf(stderr, "  leftover temporary file %s\n", e->d_name);
            ok = false;
        }
    }
    if (dir) closedir(dir);
    return ok;
}

static app_doc *open_ok(const char *path, app_doc_format fmt) {
    app_doc *d = NULL;
    mt_status rc = app_doc_open(path, fmt, &d);
    CHECK(rc == MT_OK, "open %s: %s (%s)", path, mt_status_str(rc), mt_errmsg());
    return d;
}

static const char *str_or(const char *s) { return s ? s : "(null)"; }

#define CHECK_STR(got, want)                                                                       \
    CHECK((got) != NULL && strcmp((got), (want)) == 0, "%s: got [%s] want [%s]", #got,             \
          str_or(got), (want))

/* ====================================================================== PO */

static void test_po_sample(void) {
    app_doc *d = open_ok(SAMPLES "/sample.de.po", APP_DOC_FORMAT_AUTO);
    if (d == NULL) return;
    CHECK(app_doc_get_format(d) == APP_DOC_FORMAT_PO, "format");
    CHECK(app_doc_count(d) == 28, "28 entries (header and obsolete excluded), got %lld",
          (long long)app_doc_count(d));
    CHECK_STR(app_doc_target_lang(d), "de");
    const app_doc_segment *s = app_doc_segment_at(d, 0);
    CHECK_STR(s->source, "Settings from %s");
    CHECK_STR(s->targets[0], "Einstellungen von %s");
    CHECK_STR(s->flags, "c-format");
    CHECK_STR(s->refs, "src/main.c:112");
    CHECK(s->state == APP_DOC_STATE_CONFIRMED && s->context == NULL && s->n_targets == 1, "seg 0");
    CHECK(s->line == 20, "seg 0 starts at line 20, got %lld", (long long)s->line);
    s = app_doc_segment_at(d, 2);
    CHECK_STR(s->source, "No task calendars enabled.");
    CHECK(s->state == APP_DOC_STATE_EMPTY && s->targets[0][0] == '\0' && s->flags == NULL, "seg 2");
    s = app_doc_segment_at(d, 6);
    CHECK_STR(s->context, "priority");
    CHECK_STR(s->source, "1 (Highest Priority)");
    CHECK_STR(s->note, "TRANSLATORS: priority levels shown in the task editor");
    s = app_doc_segment_at(d, 10);
    CHECK_STR(s->source, "Loading %d file\xe2\x80\xa6");
    CHECK_STR(s->source_plural, "Loading %d files\xe2\x80\xa6");
    CHECK(s->n_targets == 2, "German has two plural forms");
    if (s->n_targets == 2) {
        CHECK_STR(s->targets[0], "%d Datei wird geladen \xe2\x80\xa6");
        CHECK_STR(s->targets[1], "%d Dateien werden geladen \xe2\x80\xa6");
    }
    s = app_doc_segment_at(d, 13);
    CHECK_STR(s->context, "alarm");
    CHECK_STR(s->note, "Label of the alarm time selector");
    s = app_doc_segment_at(d, 19);
    CHECK_STR(
        s->source,
        "This is special category, which can be used to color this appointment in list views.");
    s = app_doc_segment_at(d, 22);
    CHECK_STR(s->source, "Update calendar source");
    CHECK_STR(s->targets[0], "Adressbuchquelle aktualisieren");
    CHECK(s->state == APP_DOC_STATE_DRAFT, "the fuzzy entry is a draft");
    CHECK(s->flags == NULL, "fuzzy is a state, not listed in flags");
    s = app_doc_segment_at(d, 27);
    CHECK_STR(s->source, "Help for command '%s' not found.");
    int confirmed = 0;
    for (int64_t i = 0; i < app_doc_count(d); i++)
        confirmed += app_doc_segment_at(d, i)->state == APP_DOC_STATE_CONFIRMED;
    CHECK(confirmed == 6, "6 translated entries (msgfmt --statistics says so), got %d", confirmed);

    /* unchanged: byte-identical, to another path and over itself */
    char *orig = slurp(SAMPLES "/sample.de.po");
    CHECK_STATUS(app_doc_save(d, tpath("same.po"), app_doc_default_save_params()));
    CHECK(same_file_text(tpath("same.po"), orig), "unchanged PO round trip");
    app_doc_free(d);

    /* changes: only the touched lines differ */
    write_file(tpath("edit.po"), orig);
    d = open_ok(tpath("edit.po"), APP_DOC_FORMAT_PO);
    if (d == NULL) {
        mt_free(orig);
        return;
    }
    CHECK_STATUS(
        app_doc_set_target(d, 2, 0, "Keine Aufgabenkalender aktiviert.", APP_DOC_STATE_DRAFT));
    CHECK_STATUS(app_doc_set_target(d, 5, 0, "%s endgültig löschen?", APP_DOC_STATE_DRAFT));
    CHECK_STATUS(app_doc_set_target(d, 10, 1, "%d Dateien werden geladen\xe2\x80\xa6",
                                    APP_DOC_STATE_CONFIRMED));
    CHECK_STATUS(app_doc_set_target(d, 19, 0,
                                    "Dies ist eine besondere Kategorie, mit der dieser Termin in "
                                    "Listenansichten eingefärbt werden kann.",
                                    APP_DOC_STATE_CONFIRMED));
    CHECK_STATUS(
        app_doc_set_target(d, 22, 0, "Kalenderquelle aktualisieren", APP_DOC_STATE_CONFIRMED));
    CHECK_STATUS(app_doc_set_state(d, 26, APP_DOC_STATE_DRAFT)); /* text kept, marked fuzzy */
    CHECK(app_doc_segment_at(d, 22)->state == APP_DOC_STATE_CONFIRMED, "confirmed");
    CHECK_STATUS(app_doc_save(d, NULL, app_doc_default_save_params()));
    char *want = mt_xstrdup(orig);
    subst(&want, "#: src/calendar.c:77\nmsgid \"No task calendars enabled.\"\nmsgstr \"\"\n",
          "#: src/calendar.c:77\n#, fuzzy\nmsgid \"No task calendars enabled.\"\n"
          "msgstr \"Keine Aufgabenkalender aktiviert.\"\n");
    subst(&want, "#, c-format\nmsgid \"Delete %s permanently?\"\nmsgstr \"\"\n",
          "#, fuzzy, c-format\nmsgid \"Delete %s permanently?\"\n"
          "msgstr \"%s endgültig löschen?\"\n");
    subst(&want, "msgstr[1] \"%d Dateien werden geladen \xe2\x80\xa6\"\n",
          "msgstr[1] \"%d Dateien werden geladen\xe2\x80\xa6\"\n");
    subst(&want, "\"list views.\"\nmsgstr \"\"\n",
          "\"list views.\"\nmsgstr \"\"\n"
          "\"Dies ist eine besondere Kategorie, mit der dieser Termin in Listenansichten \"\n"
          "\"eingefärbt werden kann.\"\n");
    subst(&want,
          "#, fuzzy\n#| msgid \"Update address book source\"\nmsgid \"Update calendar "
          "source\"\nmsgstr \"Adressbuchquelle aktualisieren\"\n",
          "#| msgid \"Update address book source\"\nmsgid \"Update calendar source\"\n"
          "msgstr \"Kalenderquelle aktualisieren\"\n");
    subst(&want, "#: src/prefs.c:95\nmsgid", "#: src/prefs.c:95\n#, fuzzy\nmsgid");
    CHECK(same_file_text(tpath("edit.po"), want), "only the changed entries differ");
    if (have_tool("msgfmt"))
        CHECK(run("msgfmt --check -o /dev/null '%s'", tpath("edit.po")) == 0, "msgfmt --check");
    if (have_tool("msgcat"))
        CHECK(run("msgcat '%1$s' | cmp -s - '%1$s'", tpath("edit.po")) == 0,
              "msgcat leaves the saved file as it is (same wrapping)");
    /* saving again gives the same bytes */
    CHECK_STATUS(app_doc_save(d, tpath("edit2.po"), app_doc_default_save_params()));
    CHECK(same_file_text(tpath("edit2.po"), want), "second save");
    /* MT output not marked fuzzy when asked */
    app_doc_save_params plain = app_doc_default_save_params();
    plain.draft_as_fuzzy = false;
    CHECK_STATUS(app_doc_save(d, tpath("nofuzzy.po"), plain));
    app_doc_free(d);
    d = open_ok(tpath("nofuzzy.po"), APP_DOC_FORMAT_PO);
    if (d) {
        CHECK(app_doc_segment_at(d, 2)->state == APP_DOC_STATE_CONFIRMED, "draft saved plain");
        CHECK(app_doc_segment_at(d, 26)->state == APP_DOC_STATE_CONFIRMED, "draft saved plain");
        CHECK_STR(app_doc_segment_at(d, 5)->flags, "c-format");
        CHECK_STR(app_doc_segment_at(d, 10)->targets[1], "%d Dateien werden geladen\xe2\x80\xa6");
    }
    app_doc_free(d);
    d = open_ok(tpath("edit.po"), APP_DOC_FORMAT_PO);
    if (d) {
        CHECK(app_doc_segment_at(d, 2)->state == APP_DOC_STATE_DRAFT, "reread: fuzzy");
        CHECK(app_doc_segment_at(d, 22)->state == APP_DOC_STATE_CONFIRMED, "reread: unfuzzied");
        CHECK_STR(app_doc_segment_at(d, 19)->targets[0],
                  "Dies ist eine besondere Kategorie, mit der dieser Termin in "
                  "Listenansichten eingefärbt werden kann.");
    }
    app_doc_free(d);
    mt_free(want);
    mt_free(orig);
}

static void test_po_edge_cases(void) {
    /* escapes, continuation lines, msgctxt, obsolete entries with comments,
    ** a plural entry with fewer forms than nplurals, no final newline */
    const char *po =
        "msgid \"\"\n"
        "msgstr \"\"\n"
        "\"Content-Type: text/plain; charset=utf-8\\n\"\n"
        "\"Plural-Forms: nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 ? 1 : 2);\\n\"\n"
        "\n"
        "msgid \"Tab\\there \\\"quoted\\\" back\\\\slash\\n\"\n"
        "msgstr \"\\101\\x42\\103\\n\"\n"
        "\n"
        "# obsolete, with its own flags\n"
        "#, fuzzy\n"
        "#~ msgid \"old\"\n"
        "#~ msgstr \"alt\"\n"
        "\n"
        "  msgctxt \"menu\"\n"
        "msgid \"\"\n"
        "\"multi \"\n"
        "  \"line\"\n"
        "msgstr \"\"\n"
        "\n"
        "msgid \"one file\"\n"
        "msgid_plural \"%d files\"\n"
        "msgstr[0] \"a\"\n"
        "msgstr[1] \"b\"";
    write_file(tpath("edge.po"), po);
    app_doc *d = open_ok(tpath("edge.po"), APP_DOC_FORMAT_AUTO);
    if (d == NULL) return;
    CHECK(app_doc_count(d) == 3, "3 entries, got %lld", (long long)app_doc_count(d));
    if (app_doc_count(d) != 3) {
        app_doc_free(d);
        return;
    }
    const app_doc_segment *s = app_doc_segment_at(d, 0);
    CHECK_STR(s->source, "Tab\there \"quoted\" back\\slash\n");
    CHECK_STR(s->targets[0], "ABC\n");
    s = app_doc_segment_at(d, 1);
    CHECK_STR(s->context, "menu");
    CHECK_STR(s->source, "multi line");
    CHECK(s->state == APP_DOC_STATE_EMPTY, "obsolete entry's fuzzy flag does not leak");
    CHECK(s->line == 14, "msgctxt entry at line 14, got %lld", (long long)s->line);
    s = app_doc_segment_at(d, 2);
    CHECK(s->n_targets == 3, "nplurals=3 gives three forms, got %d", s->n_targets);
    /* round trip without changes */
    CHECK_STATUS(app_doc_save(d, tpath("edge_same.po"), app_doc_default_save_params()));
    CHECK(same_file_text(tpath("edge_same.po"), po), "unchanged edge-case file");
    /* set the missing third form and the first entry (escapes written back) */
    CHECK_STATUS(app_doc_set_target(d, 2, 2, "c", APP_DOC_STATE_CONFIRMED));
    CHECK_STATUS(
        app_doc_set_target(d, 0, 0, "Tab\tda \"zitiert\" \\ \x01\n", APP_DOC_STATE_CONFIRMED));
    CHECK_STATUS(app_doc_save(d, NULL, app_doc_default_save_params()));
    char *want = mt_xstrdup(po);
    subst(&want, "msgstr \"\\101\\x42\\103\\n\"\n",
          "msgstr \"Tab\\tda \\\"zitiert\\\" \\\\ \\001\\n\"\n");
    subst(&want, "msgstr[1] \"b\"", "msgstr[1] \"b\"\nmsgstr[2] \"c\"");
    CHECK(same_file_text(tpath("edge.po"), want), "edge-case edits");
    mt_free(want);
    app_doc_free(d);
    d = open_ok(tpath("edge.po"), APP_DOC_FORMAT_PO);
    if (d) {
        CHECK_STR(app_doc_segment_at(d, 0)->targets[0], "Tab\tda \"zitiert\" \\ \x01\n");
        CHECK_STR(app_doc_segment_at(d, 2)->targets[2], "c");
    }
    app_doc_free(d);

    /* CRLF line ends: kept, and regenerated lines use them too */
    const char *crlf = "msgid \"\"\r\nmsgstr \"Content-Type: text/plain; charset=UTF-8\\n\"\r\n\r\n"
                       "#, c-format\r\nmsgid \"%d apples\"\r\nmsgstr \"\"\r\n\r\n"
                       "msgid \"pear\"\r\nmsgstr \"\"\r\n";
    write_file(tpath("crlf.po"), crlf);
    d = open_ok(tpath("crlf.po"), APP_DOC_FORMAT_PO);
    if (d) {
        CHECK(app_doc_count(d) == 2, "CRLF entries");
        CHECK_STR(app_doc_segment_at(d, 0)->source, "%d apples");
        CHECK_STATUS(app_doc_set_target(d, 0, 0, "%d Äpfel", APP_DOC_STATE_DRAFT));
        CHECK_STATUS(app_doc_set_target(d, 1, 0, "Birne\nzwei", APP_DOC_STATE_CONFIRMED));
        CHECK_STATUS(app_doc_save(d, NULL, app_doc_default_save_params()));
        CHECK(same_file_text(
                  tpath("crlf.po"),
                  "msgid \"\"\r\nmsgstr \"Content-Type: text/plain; charset=UTF-8\\n\"\r\n"
                  "\r\n#, fuzzy, c-format\r\nmsgid \"%d apples\"\r\nmsgstr \"%d Äpfel\"\r\n"
                  "\r\nmsgid \"pear\"\r\nmsgstr \"\"\r\n\"Birne\\n\"\r\n\"zwei\"\r\n"),
              "CRLF edits");
    }
    app_doc_free(d);

    /* flags: fuzzy removed from a line with other flags, and a line that
    ** holds only fuzzy disappears */
    const char *fz = "#, fuzzy, c-format\nmsgid \"%s x\"\nmsgstr \"%s y\"\n\n"
                     "#, fuzzy\n#, no-wrap\nmsgid \"a\"\nmsgstr \"b\"\n";
    write_file(tpath("fz.po"), fz);
    d = open_ok(tpath("fz.po"), APP_DOC_FORMAT_PO);
    if (d) {
        CHECK(app_doc_segment_at(d, 0)->state == APP_DOC_STATE_DRAFT, "fuzzy");
        CHECK_STR(app_doc_segment_at(d, 1)->flags, "no-wrap");
        CHECK_STATUS(app_doc_set_state(d, 0, APP_DOC_STATE_CONFIRMED));
        CHECK_STATUS(app_doc_set_state(d, 1, APP_DOC_STATE_CONFIRMED));
        CHECK_STATUS(app_doc_save(d, NULL, app_doc_default_save_params()));
        CHECK(same_file_text(tpath("fz.po"), "#, c-format\nmsgid \"%s x\"\nmsgstr \"%s y\"\n\n"
                                             "#, no-wrap\nmsgid \"a\"\nmsgstr \"b\"\n"),
              "fuzzy flags removed");
    }
    app_doc_free(d);
}

static void expect_po_error(const char *name, const char *text, mt_status want_rc,
                            const char *want_in_msg) {
    write_file(tpath(name), text);
    app_doc *d = NULL;
    mt_status rc = app_doc_open(tpath(name), APP_DOC_FORMAT_PO, &d);
    CHECK(rc == want_rc, "%s: got %s (%s), want %s", name, mt_status_str(rc), mt_errmsg(),
          mt_status_str(want_rc));
    CHECK(strstr(mt_errmsg(), want_in_msg) != NULL, "%s: message [%s] lacks [%s]", name,
          mt_errmsg(), want_in_msg);
    CHECK(d == NULL, "%s: no document on error", name);
    app_doc_free(d);
}

static void test_po_errors(void) {
    expect_po_error("e1.po", "msgid \"a\"\nmsgstr \"b\n", MT_ERR_FORMAT, "e1.po:2: unterminated");
    expect_po_error("e2.po", "msgid \"a\"\nmsgstr \"b\"\n\nmsgstr \"c\"\n", MT_ERR_FORMAT,
                    "e2.po:4: msgstr twice");
    expect_po_error("e2b.po", "# comment\nmsgstr \"c\"\n", MT_ERR_FORMAT,
                    "e2b.po:2: msgstr without msgid");
    expect_po_error("e3.po", "msgid \"a\"\nmsgstr \"b\"\nmsgfoo \"c\"\n", MT_ERR_FORMAT,
                    "e3.po:3: unknown keyword");
    /* the msgstr of the first entry is missing: named as such (issue 38), not
    ** as "msgid twice in one entry" */
    expect_po_error("e4.po", "msgid \"a\"\n\n\nmsgid \"b\"\nmsgstr \"\"\n", MT_ERR_FORMAT,
                    "e4.po:4: missing msgstr for the msgid at line 1");
    expect_po_error("e4b.po",
                    "msgid \"\"\nmsgstr \"\"\n\nmsgid \"a\"\n\"more\"\nmsgctxt \"c\"\nmsgid \"b\"\n"
                    "msgstr \"\"\n",
                    MT_ERR_FORMAT, "e4b.po:6: missing msgstr for the msgid at line 4");
    expect_po_error("e5.po", "msgid \"a\"\nmsgstr \"\\q\"\n", MT_ERR_FORMAT,
                    "e5.po:2: unknown escape");
    expect_po_error("e6.po", "msgid \"a\"\nmsgid_plural \"as\"\nmsgstr[1] \"x\"\n", MT_ERR_FORMAT,
                    "e6.po:3: expected msgstr[0]");
    expect_po_error("e7.po", "msgid \"a\"\n", MT_ERR_FORMAT, "e7.po:1: entry without msgstr");
    expect_po_error("e8.po", "\"dangling\"\n", MT_ERR_FORMAT, "e8.po:1: string without a keyword");
    expect_po_error("latin1.po",
                    "msgid \"\"\nmsgstr \"\"\n\"Content-Type: text/plain; charset=ISO-8859-1\\n\"\n"
                    "\nmsgid \"Gr\xfc\xdf\"\nmsgstr \"\"\n",
                    MT_ERR_UNSUPPORTED, "charset ISO-8859-1 is not supported, only UTF-8");
    expect_po_error("badutf8.po",
                    "msgid \"\"\nmsgstr \"Content-Type: text/plain; charset=UTF-8\\n\"\n\n"
                    "msgid \"ok\"\nmsgstr \"f\xc3\x28\"\n",
                    MT_ERR_FORMAT, "badutf8.po:5: invalid UTF-8 at column 10");
    /* duplicate message definitions (issue 38): msgfmt refuses the file,
    ** so opening it does too, naming both lines; msgctxt tells apart */
    expect_po_error("dup.po",
                    "msgid \"\"\nmsgstr \"Content-Type: text/plain; charset=UTF-8\\n\"\n\n"
                    "msgid \"a\"\nmsgstr \"x\"\n\nmsgctxt \"c\"\nmsgid \"a\"\nmsgstr \"\"\n\n"
                    "#. again\nmsgid \"a\"\nmsgstr \"\"\n",
                    MT_ERR_FORMAT,
                    "dup.po:11: duplicate message definition (msgid \"a\"), first "
                    "defined at line 4");
    expect_po_error("dupctx.po",
                    "msgctxt \"m\"\nmsgid \"a\"\nmsgstr \"\"\n\nmsgid \"b\"\nmsgstr \"\"\n\n"
                    "msgctxt \"m\"\nmsgid \"a\"\nmsgid_plural \"as\"\nmsgstr[0] \"\"\n",
                    MT_ERR_FORMAT,
                    "dupctx.po:8: duplicate message definition (msgid \"a\", "
                    "msgctxt \"m\"), first defined at line 1");
    app_doc *d = NULL;
    write_file(tpath("ctx.po"), "msgctxt \"\"\nmsgid \"a\"\nmsgstr \"\"\n\nmsgctxt \"m\"\n"
                                "msgid \"a\"\nmsgstr \"\"\n\nmsgid \"a\"\nmsgstr \"\"\n\n"
                                "#~ msgid \"a\"\n#~ msgstr \"\"\n");
    d = open_ok(tpath("ctx.po"), APP_DOC_FORMAT_PO);
    CHECK(d && app_doc_count(d) == 3, "no, empty and other msgctxt differ; obsolete aside");
    app_doc_free(d);
    d = NULL;
    CHECK(app_doc_open(tpath("does-not-exist.po"), APP_DOC_FORMAT_PO, &d) == MT_ERR_IO, "missing");
    CHECK(strstr(mt_errmsg(), "does-not-exist.po") != NULL, "message names the file");
}

/* Random translations, saved and compared with msgcat's layout of the same
** file (msgcat is the oracle for wrapping), plus msgfmt --check. */
static void test_po_wrap_vs_msgcat(void) {
    if (!have_tool("msgcat")) return;
    static const char *words[] = {
        "a",
        "Termin",
        "Aufgabenkalender",
        "eingefärbt",
        "\"zitiert\"",
        "back\\slash",
        "Tab\there",
        "x",
        "Unbenanntes-Dokument",
        "日本語の文字列は",
        "とても長いです。",
        "ü",
        "%s",
        "%d",
        "%1$s",
        "%.2f",
        "100%",
        "$5",
        "(Beta)",
        "[x]",
        "{name}",
        "„Anführung“",
        "«guillemets»",
        "Laden…",
        "z.B.",
        "a/b",
        "http://example.org/p/q",
        "—",
        "–",
        "¿Qué?",
        "¡Hola!",
        "1,5",
        "3.14",
        "E-Mail",
        "Größe:",
        "x;",
        "「引用」",
        "日本（テスト）",
        "한국어",
        "Ελληνικά",
        "Русский",
        "--debug",
        "-n",
        "'quoted'",
        "a|b",
        "€10",
        "10°",
        "sehr-sehr-sehr-sehr-sehr-sehr-sehr-sehr-sehr-sehr-sehr-langes-Wort-ohne-Leerzeichen"};
    const int n_words = (int)(sizeof words / sizeof words[0]);
    enum { N = 300 };
    app_doc_buf po = {0};
    app_doc_buf_puts(&po, "msgid \"\"\nmsgstr \"\"\n"
                          "\"Project-Id-Version: wrap 1.0\\n\"\n"
                          "\"PO-Revision-Date: 2024-03-09 21:40+0100\\n\"\n"
                          "\"Last-Translator: Test <test@example.org>\\n\"\n"
                          "\"Language-Team: German <de@li.org>\\n\"\n"
                          "\"Language: de\\n\"\n"
                          "\"MIME-Version: 1.0\\n\"\n"
                          "\"Content-Type: text/plain; charset=UTF-8\\n\"\n"
                          "\"Content-Transfer-Encoding: 8bit\\n\"\n"
                          "\"Plural-Forms: nplurals=2; plural=(n != 1);\\n\"\n");
    for (int i = 0; i < N; i++) {
        char line[64];
        snprintf(line, sizeof line, "\nmsgid \"m%d\"\nmsgstr \"\"\n", i);
        app_doc_buf_puts(&po, line);
    }
    char *text = app_doc_buf_take(&po);
    write_file(tpath("wrap.po"), text);
    mt_free(text);
    app_doc *d = open_ok(tpath("wrap.po"), APP_DOC_FORMAT_PO);
    if (d == NULL) return;
    unsigned seed = getenv("MT_TEST_SEED") ? (unsigned)atoi(getenv("MT_TEST_SEED")) : 12345;
    for (int i = 0; i < N; i++) {
        app_doc_buf t = {0};
        int n = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 40;
        for (int k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            int w = (int)(seed >> 16) % n_words;
            if (k) app_doc_buf_puts(&t, ((seed >> 8) & 15) == 0 ? "\n" : " ");
            app_doc_buf_puts(&t, words[w]);
        }
        char *s = app_doc_buf_take(&t);
        CHECK_STATUS(app_doc_set_target(d, i, 0, s, APP_DOC_STATE_CONFIRMED));
        mt_free(s);
    }
    CHECK_STATUS(app_doc_save(d, NULL, app_doc_default_save_params()));
    app_doc_free(d);
    CHECK(run("msgcat '%1$s' | cmp -s - '%1$s'", tpath("wrap.po")) == 0,
          "msgcat re-wraps %s identically (diff <(msgcat f) f to see where not)", tpath("wrap.po"));
    if (have_tool("msgfmt"))
        CHECK(run("msgfmt --check -o /dev/null '%s'", tpath("wrap.po")) == 0, "msgfmt --check");
}

/* Saves path after setting segment 0's target (nothing when target is NULL)
** with the header stamp on; returns the saved file (mt_free). */
static char *stamp_save(const char *path, const char *target) {
    app_doc *d = open_ok(path, APP_DOC_FORMAT_PO);
    if (d == NULL) return NULL;
    if (target) CHECK_STATUS(app_doc_set_target(d, 0, 0, target, APP_DOC_STATE_CONFIRMED));
    app_doc_save_params p = app_doc_default_save_params();
    p.stamp_header = true;
    CHECK_STATUS(app_doc_save(d, NULL, p));
    app_doc_free(d);
    return slurp(path);
}

static void check_msgfmt(const char *path) {
    if (have_tool("msgfmt"))
        CHECK(run("msgfmt --check -o /dev/null '%s'", path) == 0, "msgfmt --check %s", path);
}

/* Issue 29, finding 8b: a save stamps PO-Revision-Date, Last-Translator
** and X-Generator into the header; every other byte stays. */
static void test_po_header_stamp(void) {
    char *tz = getenv("TZ") ? mt_try_strdup(getenv("TZ")) : NULL;
    setenv("TZ", "XYZ-02:00", 1); /* UTC+2 */
    tzset();
    app_doc_po_set_clock_for_tests(1718000000); /* 2024-06-10 06:13:20 UTC */
    setenv("MTPE_TRANSLATOR", "Jana Beispiel <jana@example.org>", 1);
    setenv("USER", "jbeispiel", 1);
    const char *gen = "\"X-Generator: mtpe " MT_VERSION "\\n\"\n";

    /* fields present: replaced in place; a value split over two strings
    ** becomes one; other lines, comments and the layout stay */
    const char *po = "# German translation.\n"
                     "msgid \"\"\n"
                     "msgstr \"\"\n"
                     "\"Project-Id-Version: x 1.0\\n\"\n"
                     "\"PO-Revision-Date: 2024-03-09 21:40+0100\\n\"\n"
                     "\"Last-Translator: A Very Long Name Indeed <a.very.long.address@example.org"
                     "\"\n"
                     "  \">\\n\"\n"
                     "\"Language-Team: German <de@li.org>\\n\"\n"
                     "\"Language: de\\n\"\n"
                     "\"MIME-Version: 1.0\\n\"\n"
                     "\"Content-Type: text/plain; charset=UTF-8\\n\"\n"
                     "\"Content-Transfer-Encoding: 8bit\\n\"\n"
                     "\"X-Generator: Poedit 3.4\\n\"\n"
                     "\"Plural-Forms: nplurals=2; plural=(n != 1);\\n\"\n"
                     "\n"
                     "msgid \"Open\"\n"
                     "msgstr \"\"\n";
    write_file(tpath("stamp.po"), po);
    char *want = mt_xstrdup(po);
    subst(&want, "2024-03-09 21:40+0100", "2024-06-10 08:13+0200");
    subst(&want, "A Very Long Name Indeed <a.very.long.address@example.org\"\n  \">\\n\"",
          "Jana Beispiel <jana@example.org>\\n\"");
    subst(&want, "\"X-Generator: Poedit 3.4\\n\"\n", gen);
    subst(&want, "\"Open\"\nmsgstr \"\"",
          "\"Open\"\nmsgstr \"\xc3\x96"
          "ffnen\"");
    char *got = stamp_save(tpath("stamp.po"), "\xc3\x96"
                                              "ffnen");
    mt_free(got);
    CHECK(same_file_text(tpath("stamp.po"), want), "fields replaced in place");
    check_msgfmt(tpath("stamp.po"));
    mt_free(want);

    /* nothing changed: byte for byte, stamp or not */
    want = slurp(tpath("stamp.po"));
    setenv("MTPE_TRANSLATOR", "Somebody Else <else@example.org>", 1);
    got = stamp_save(tpath("stamp.po"), NULL);
    CHECK(got && want && !strcmp(got, want), "an unchanged document keeps its header");
    mt_free(got);
    mt_free(want);

    /* fields missing: added after the last line, with the file's CRLF;
    ** MTPE_TRANSLATOR with a line break is refused in favour of $USER */
    setenv("MTPE_TRANSLATOR", "Two\nLines", 1);
    po = "msgid \"\"\r\n"
         "msgstr \"\"\r\n"
         "\"Content-Type: text/plain; charset=UTF-8\\n\"\r\n"
         "\r\n"
         "msgid \"Open\"\r\n"
         "msgstr \"\"\r\n";
    write_file(tpath("add.po"), po);
    want = mt_xstrdup(po);
    char added[256];
    snprintf(added, sizeof added,
             "charset=UTF-8\\n\"\r\n"
             "\"PO-Revision-Date: 2024-06-10 08:13+0200\\n\"\r\n"
             "\"Last-Translator: jbeispiel\\n\"\r\n"
             "%.*s\r\n",
             (int)strlen(gen) - 1, gen);
    subst(&want, "charset=UTF-8\\n\"\r\n", added);
    subst(&want, "\"Open\"\r\nmsgstr \"\"", "\"Open\"\r\nmsgstr \"Auf\"");
    got = stamp_save(tpath("add.po"), "Auf");
    mt_free(got);
    CHECK(same_file_text(tpath("add.po"), want), "missing fields added");
    check_msgfmt(tpath("add.po"));
    mt_free(want);

    /* two fields in one string: the header is regenerated (msgcat's
    ** layout), its other fields kept */
    setenv("TZ", "XYZ+05:30", 1);
    tzset();
    unsetenv("MTPE_TRANSLATOR");
    po = "msgid \"\"\n"
         "msgstr \"Content-Type: text/plain; charset=UTF-8\\nPO-Revision-Date: old\\n\"\n"
         "\n"
         "msgid \"Open\"\n"
         "msgstr \"\"";
    write_file(tpath("odd.po"), po);
    got = stamp_save(tpath("odd.po"), "Auf");
    char *want2 = mt_xstrdup("msgid \"\"\n"
                             "msgstr \"\"\n"
                             "\"Content-Type: text/plain; charset=UTF-8\\n\"\n"
                             "\"PO-Revision-Date: 2024-06-10 00:43-0530\\n\"\n"
                             "\"Last-Translator: jbeispiel\\n\"\n"
                             "GEN"
                             "\n"
                             "msgid \"Open\"\n"
                             "msgstr \"Auf\"");
    subst(&want2, "GEN", gen);
    CHECK(got && want2 && !strcmp(got, want2), "irregular header regenerated: [%s]",
          got ? got : "(none)");
    check_msgfmt(tpath("odd.po"));
    mt_free(got);
    mt_free(want2);

    /* no header: none is invented */
    po = "msgid \"Open\"\nmsgstr \"\"\n";
    write_file(tpath("nohdr.po"), po);
    got = stamp_save(tpath("nohdr.po"), "Auf");
    CHECK(got && !strcmp(got, "msgid \"Open\"\nmsgstr \"Auf\"\n"), "no header added: [%s]",
          got ? got : "(none)");
    mt_free(got);

    app_doc_po_set_clock_for_tests(0);
    if (tz)
        setenv("TZ", tz, 1);
    else
        unsetenv("TZ");
    tzset();
    mt_free(tz);
}

/* Issue 29, finding 8a: the counts each plural form serves, from
** Plural-Forms, for the editor's "plural form k/N (n = ...)" labels. */
static void test_po_plural_examples(void) {
    static const struct {
        const char *plural_forms; /* NULL: no header */
        const char *want[6];      /* NULL: none */
    } cases[] = {
        {"nplurals=2; plural=(n != 1);", {"1", "0, 2, 3, \xe2\x80\xa6"}},
        {NULL, {"1", "0, 2, 3, \xe2\x80\xa6"}},
        {"nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && "
         "(n%100<10 || n%100>=20) ? 1 : 2);",
         {"1, 21, 31, \xe2\x80\xa6", "2, 3, 4, \xe2\x80\xa6", "0, 5, 6, \xe2\x80\xa6"}},
        {"nplurals=6; plural=n==0 ? 0 : n==1 ? 1 : n==2 ? 2 : n%100>=3 && n%100<=10 ? 3 "
         ": n%100>=11 ? 4 : 5;",
         {"0", "1", "2", "3, 4, 5, \xe2\x80\xa6", "11, 12, 13, \xe2\x80\xa6",
          "100, 101, 102, \xe2\x80\xa6"}},
        {"nplurals=1; plural=0;", {"0, 1, 2, \xe2\x80\xa6"}},
        {"nplurals=3; plural=n==1 ? 0 : n==2 ? 1 : 2;", {"1", "2", "0, 3, 4, \xe2\x80\xa6"}},
        /* unusable: a syntax error, a form beyond nplurals, no plural= */
        {"nplurals=2; plural=n !=;", {NULL}},
        {"nplurals=2; plural=n;", {NULL}},
        {"nplurals=2;", {NULL}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char po[512];
        if (cases[c].plural_forms)
            snprintf(po, sizeof po,
                     "msgid \"\"\nmsgstr \"\"\n\"Content-Type: text/plain; charset=UTF-8\\n\"\n"
                     "\"Plural-Forms: %s\\n\"\n\nmsgid \"a file\"\nmsgid_plural \"%%d files\"\n"
                     "msgstr[0] \"\"\n",
                     cases[c].plural_forms);
        else
            snprintf(po, sizeof po,
                     "msgid \"a file\"\nmsgid_plural \"%%d files\"\nmsgstr[0] \"\"\n");
        write_file(tpath("plural.po"), po);
        app_doc *d = open_ok(tpath("plural.po"), APP_DOC_FORMAT_PO);
        if (d == NULL) continue;
        for (int k = 0; k < 6; k++) {
            const char *got = app_doc_plural_examples(d, k), *want = cases[c].want[k];
            CHECK(want ? got && !strcmp(got, want) : got == NULL,
                  "case %zu form %d: got [%s] want [%s]", c, k, str_or(got), str_or(want));
        }
        app_doc_free(d);
    }
    app_doc *d = open_ok(SAMPLES "/sample.de.xlf", APP_DOC_FORMAT_XLIFF);
    CHECK(d && app_doc_plural_examples(d, 0) == NULL, "XLIFF: none");
    app_doc_free(d);
}

/* Every host allocation of fn failing in turn, N = 0, 1, 2, ...: always a
** clean MT_ERR_NOMEM (leaks show under ASan) until fn succeeds. */
static void alloc_failure_loop(const char *what, mt_status (*fn)(void), int64_t min_tries) {
    int64_t n;
    mt_status rc = MT_ERR_NOMEM;
    for (n = 0; n < 100000 && rc == MT_ERR_NOMEM; n++) {
        mt_alloc_fail_at(n, false);
        rc = fn();
        mt_alloc_fail_at(-1, false);
        CHECK(rc == MT_OK || rc == MT_ERR_NOMEM, "%s, allocation %lld fails: %s (%s)", what,
              (long long)n, mt_status_str(rc), mt_errmsg());
    }
    CHECK(rc == MT_OK && n >= min_tries, "%s succeeds once allocations do (%lld tries)", what,
          (long long)n);
}

static mt_status edit_and_save(const char *path, app_doc_format fmt, int64_t seg,
                               const char *text) {
    app_doc *d = NULL;
    mt_status rc = app_doc_open(path, fmt, &d);
    if (rc == MT_OK) rc = app_doc_set_target(d, seg, 0, text, APP_DOC_STATE_CONFIRMED);
    if (rc == MT_OK) rc = app_doc_save(d, tpath("nomem.out"), app_doc_default_save_params());
    app_doc_free(d);
    return rc;
}

static mt_status po_cycle(void) {
    return edit_and_save(SAMPLES "/sample.de.po", APP_DOC_FORMAT_PO, 3,
                         "Aufgabe als unvollständig markieren");
}

static mt_status xliff_cycle(void) {
    return edit_and_save(SAMPLES "/sample.de.xlf", APP_DOC_FORMAT_XLIFF, 3,
                         LBK "1" RBK "Groß" LBK "/1" RBK);
}

static mt_status tsv_cycle(void) {
    return edit_and_save(tpath("nomem.tsv"), APP_DOC_FORMAT_TSV, 1, "zwei");
}

static mt_status strip_cycle(void) {
    char *s = NULL;
    mt_status rc = app_doc_strip_tags("a " LBK "1" RBK "b" LBK "/1" RBK, &s);
    mt_free(s);
    return rc;
}

static void test_alloc_failures(void) {
    write_file(tpath("nomem.tsv"), "one\ttwo\nthree\n");
    alloc_failure_loop("PO", po_cycle, 20);
    alloc_failure_loop("XLIFF", xliff_cycle, 10);
    alloc_failure_loop("TSV", tsv_cycle, 5);
    alloc_failure_loop("strip tags", strip_cycle, 2);
}

/* =================================================================== XLIFF */

/* Serialises the children of the first <target> of the trans-unit with id. */
static char *target_xml(xmlDocPtr doc, const char *id, char *state, size_t state_cap,
                        char *approved, size_t approved_cap) {
    xmlNodePtr stack[64];
    int depth = 0;
    stack[depth++] = xmlDocGetRootElement(doc);
    while (depth > 0) {
        xmlNodePtr n = stack[--depth];
        for (xmlNodePtr c = n->children; c; c = c->next) {
            if (c->type != XML_ELEMENT_NODE) continue;
            xmlChar *cid = xmlGetProp(c, BAD_CAST "id");
            bool hit =
                xmlStrEqual(c->name, BAD_CAST "trans-unit") && cid && xmlStrEqual(cid, BAD_CAST id);
            xmlFree(cid);
            if (!hit) {
                if (depth < 64) stack[depth++] = c;
                continue;
            }
            xmlChar *a = xmlGetProp(c, BAD_CAST "approved");
            snprintf(approved, approved_cap, "%s", a ? (char *)a : "");
            xmlFree(a);
            for (xmlNodePtr t = c->children; t; t = t->next) {
                if (t->type != XML_ELEMENT_NODE || !xmlStrEqual(t->name, BAD_CAST "target"))
                    continue;
                xmlChar *st = xmlGetProp(t, BAD_CAST "state");
                snprintf(state, state_cap, "%s", st ? (char *)st : "");
                xmlFree(st);
                xmlBufferPtr b = xmlBufferCreate();
                for (xmlNodePtr k = t->children; k; k = k->next)
                    xmlNodeDump(b, doc, k, 0, 0);
                char *s = mt_xstrdup((const char *)xmlBufferContent(b));
                xmlBufferFree(b);
                return s;
            }
            return NULL;
        }
    }
    return NULL;
}

/* Removes <target> elements (and the blank text before them) from the units
** listed, and their approved attributes, so that the rest can be compared. */
static void strip_units(xmlNodePtr n, const char *const *ids, int n_ids) {
    for (xmlNodePtr c = n->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE) continue;
        xmlChar *cid = xmlGetProp(c, BAD_CAST "id");
        bool hit = false;
        for (int k = 0; cid && k < n_ids; k++)
            hit |= xmlStrEqual(cid, BAD_CAST ids[k]);
        xmlFree(cid);
        if (!hit || !xmlStrEqual(c->name, BAD_CAST "trans-unit")) {
            strip_units(c, ids, n_ids);
            continue;
        }
        xmlUnsetProp(c, BAD_CAST "approved");
        xmlNodePtr t = c->children;
        while (t) {
            xmlNodePtr next = t->next;
            if (t->type == XML_ELEMENT_NODE && xmlStrEqual(t->name, BAD_CAST "target")) {
                xmlNodePtr prev = t->prev;
                if (prev && xmlIsBlankNode(prev)) {
                    xmlUnlinkNode(prev);
                    xmlFreeNode(prev);
                }
                xmlUnlinkNode(t);
                xmlFreeNode(t);
            }
            t = next;
        }
    }
}

static char *c14n_without(const char *path, const char *const *ids, int n_ids) {
    xmlDocPtr doc = xmlReadFile(path, NULL, XML_PARSE_NONET);
    if (doc == NULL) return NULL;
    strip_units(xmlDocGetRootElement(doc), ids, n_ids);
    xmlChar *out = NULL;
    int n = xmlC14NDocDumpMemory(doc, NULL, XML_C14N_1_0, NULL, 1, &out);
    char *s = n >= 0 ? mt_xstrdup((const char *)out) : NULL;
    xmlFree(out);
    xmlFreeDoc(doc);
    return s;
}

static void test_xliff_sample(void) {
    app_doc *d = open_ok(SAMPLES "/sample.de.xlf", APP_DOC_FORMAT_AUTO);
    if (d == NULL) return;
    CHECK(app_doc_get_format(d) == APP_DOC_FORMAT_XLIFF, "format");
    CHECK(app_doc_count(d) == 10, "10 units (one is translate=no), got %lld",
          (long long)app_doc_count(d));
    CHECK_STR(app_doc_source_lang(d), "en");
    CHECK_STR(app_doc_target_lang(d), "de");
    if (app_doc_count(d) != 10) {
        app_doc_free(d);
        return;
    }
    const app_doc_segment *s = app_doc_segment_at(d, 0);
    CHECK_STR(s->source, "About gedit");
    CHECK_STR(s->targets[0], "Info zu gedit");
    CHECK_STR(s->context, "about");
    CHECK(s->state == APP_DOC_STATE_CONFIRMED && s->line == 9, "unit 1 state/line (%lld)",
          (long long)s->line);
    s = app_doc_segment_at(d, 1);
    CHECK_STR(s->note, "Item of the Documents menu.");
    CHECK(s->state == APP_DOC_STATE_EMPTY, "no target");
    CHECK_STR(app_doc_segment_at(d, 3)->source, LBK "1" RBK "Large" LBK "/1" RBK);
    CHECK_STR(app_doc_segment_at(d, 4)->source,
              "Show " LBK "1" RBK "shadows" LBK "/1" RBK " under dock windows");
    s = app_doc_segment_at(d, 5);
    CHECK_STR(s->source, LBK "1" RBK LBK "2/" RBK "%" LBK "/1" RBK " Complete");
    CHECK_STR(s->targets[0], LBK "1" RBK LBK "2/" RBK " %" LBK "/1" RBK " fertiggestellt");
    CHECK(s->state == APP_DOC_STATE_DRAFT, "needs-review-translation is a draft");
    CHECK_STR(app_doc_segment_at(d, 6)->source, "Bracket match found on line: " LBK "1/" RBK);
    s = app_doc_segment_at(d, 7);
    CHECK_STR(s->source, "Untitled Document {number}");
    CHECK_STR(s->note, "{number} is replaced by a counter; keep it as it is.");
    CHECK_STR(app_doc_segment_at(d, 8)->source,
              "For detailed usage information and examples, see " LBK "1/" RBK "the manual" LBK
              "2/" RBK ".");
    CHECK_STR(app_doc_segment_at(d, 9)->source, "Run gedit in standalone mode");
    char *plain = NULL;
    CHECK_STATUS(app_doc_strip_tags(app_doc_segment_at(d, 5)->source, &plain));
    CHECK_STR(plain, "% Complete");
    mt_free(plain);

    char *orig = slurp(SAMPLES "/sample.de.xlf");
    CHECK_STATUS(app_doc_save(d, tpath("same.xlf"), app_doc_default_save_params()));
    CHECK(same_file_text(tpath("same.xlf"), orig), "unchanged XLIFF round trip");
    app_doc_free(d);

    write_file(tpath("edit.xlf"), orig);
    mt_free(orig);
    d = open_ok(tpath("edit.xlf"), APP_DOC_FORMAT_XLIFF);
    if (d == NULL) return;
    /* bad placeholders are refused and leave the segment alone */
    static const char *bad[] = {
        LBK "9/" RBK "Groß",                                       /* unknown number           */
        LBK "1/" RBK "Groß",                                       /* paired used standalone   */
        LBK "1" RBK "Groß",                                        /* not closed               */
        "Groß" LBK "/1" RBK,                                       /* closes nothing           */
        LBK "1" RBK "a" LBK "/1" RBK LBK "1" RBK "b" LBK "/1" RBK, /* used twice */
        "a " RBK " b",                                             /* lone closing bracket     */
        LBK "x" RBK,                                               /* malformed                */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        mt_status rc = app_doc_set_target(d, 3, 0, bad[k], APP_DOC_STATE_CONFIRMED);
        CHECK(rc == MT_ERR_INVALID, "bad target %zu [%s] refused: %s", k, bad[k],
              mt_status_str(rc));
    }
    CHECK(app_doc_set_target(d, 5, 0, LBK "1" RBK "a" LBK "2/" RBK "b" LBK "/2" RBK LBK "/1" RBK,
                             APP_DOC_STATE_CONFIRMED) == MT_ERR_INVALID,
          "standalone closed");
    CHECK(!app_doc_segment_at(d, 3)->changed && app_doc_segment_at(d, 3)->targets[0][0] == '\0',
          "segment untouched after refusals");

    CHECK_STATUS(
        app_doc_set_target(d, 1, 0, "Zum nächsten Dokument wechseln", APP_DOC_STATE_CONFIRMED));
    CHECK_STATUS(
        app_doc_set_target(d, 3, 0, LBK "1" RBK "Groß" LBK "/1" RBK, APP_DOC_STATE_CONFIRMED));
    CHECK_STATUS(app_doc_set_target(d, 4, 0,
                                    LBK "1" RBK "Schatten" LBK "/1" RBK " unter Leisten anzeigen",
                                    APP_DOC_STATE_DRAFT));
    CHECK_STATUS(app_doc_set_target(d, 5, 0,
                                    LBK "1" RBK LBK "2/" RBK " %" LBK "/1" RBK " fertiggestellt",
                                    APP_DOC_STATE_CONFIRMED));
    CHECK_STATUS(app_doc_set_target(
        d, 6, 0, "Zugehörige Klammer in Zeile " LBK "1/" RBK " gefunden", APP_DOC_STATE_CONFIRMED));
    CHECK_STATUS(app_doc_set_target(d, 7, 0,
                                    "Unbenanntes Dokument {number} " LBK LBK "x" RBK RBK " & <",
                                    APP_DOC_STATE_CONFIRMED));
    CHECK_STATUS(app_doc_set_target(d, 8, 0,
                                    "Ausführliche Informationen und Beispiele finden Sie im " LBK
                                    "1/" RBK "Handbuch" LBK "2/" RBK ".",
                                    APP_DOC_STATE_DRAFT));
    CHECK_STATUS(app_doc_set_target(d, 9, 0, "", APP_DOC_STATE_EMPTY));
    CHECK_STATUS(app_doc_save(d, NULL, app_doc_default_save_params()));
    app_doc_free(d);
    if (have_tool("xmllint"))
        CHECK(run("xmllint --noout '%s'", tpath("edit.xlf")) == 0, "xmllint accepts it");

    xmlDocPtr doc = xmlReadFile(tpath("edit.xlf"), NULL, XML_PARSE_NONET);
    CHECK(doc != NULL, "saved XLIFF parses");
    if (doc) {
        static const struct {
            const char *id, *xml, *state, *approved;
        } want[] = {
            {"2", "Zum nächsten Dokument wechseln", "translated", "yes"},
            {"4", "<g id=\"1\" ctype=\"italic\">Groß</g>", "translated", "yes"},
            {"5", "<mrk mtype=\"term\">Schatten</mrk> unter Leisten anzeigen",
             "needs-review-translation", ""},
            {"6", "<g id=\"1\" ctype=\"bold\"><ph id=\"2\">%1</ph> %</g> fertiggestellt",
             "translated", "yes"},
            {"7",
             "Zugehörige Klammer in Zeile <x id=\"1\" ctype=\"x-printf\" equiv-text=\"%d\"/>"
             " gefunden",
             "translated", "yes"},
            {"8", "Unbenanntes Dokument {number} " LBK "x" RBK " &amp; &lt;", "translated", "yes"},
            {"9",
             "Ausführliche Informationen und Beispiele finden Sie im <bpt id=\"1\">&lt;a "
             "href=\"help:gedit\"&gt;</bpt>Handbuch<ept id=\"1\">&lt;/a&gt;</ept>.",
             "needs-review-translation", ""},
            {"11", "", "needs-translation", ""},
        };
        for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
            char st[64] = "", ap[16] = "";
            char *x = target_xml(doc, want[k].id, st, sizeof st, ap, sizeof ap);
            CHECK(x != NULL && strcmp(x, want[k].xml) == 0, "unit %s target: got [%s] want [%s]",
                  want[k].id, str_or(x), want[k].xml);
            CHECK(strcmp(st, want[k].state) == 0, "unit %s state %s, want %s", want[k].id, st,
                  want[k].state);
            CHECK(strcmp(ap, want[k].approved) == 0, "unit %s approved [%s], want [%s]", want[k].id,
                  ap, want[k].approved);
            mt_free(x);
        }
        xmlFreeDoc(doc);
    }
    /* everything but the changed targets is preserved (canonical XML) */
    static const char *const changed[] = {"2", "4", "5", "6", "7", "8", "9", "11"};
    char *a = c14n_without(SAMPLES "/sample.de.xlf", changed, 8);
    char *b = c14n_without(tpath("edit.xlf"), changed, 8);
    CHECK(a && b && strcmp(a, b) == 0, "the rest of the document is unchanged");
    if (a && b && strcmp(a, b) != 0) {
        size_t i = 0;
        while (a[i] == b[i])
            i++;
        fprintf(stderr, "  differs at %zu: [%.60s] vs [%.60s]\n", i, a + i, b + i);
    }
    mt_free(a);
    mt_free(b);
    /* and reading it back gives the texts and states */
    d = open_ok(tpath("edit.xlf"), APP_DOC_FORMAT_XLIFF);
    if (d) {
        CHECK_STR(app_doc_segment_at(d, 3)->targets[0], LBK "1" RBK "Groß" LBK "/1" RBK);
        CHECK_STR(app_doc_segment_at(d, 7)->targets[0],
                  "Unbenanntes Dokument {number} " LBK LBK "x" RBK RBK " & <");
        CHECK(app_doc_segment_at(d, 4)->state == APP_DOC_STATE_DRAFT, "draft read back");
        CHECK(app_doc_segment_at(d, 6)->state == APP_DOC_STATE_CONFIRMED, "confirmed read back");
        CHECK(app_doc_segment_at(d, 9)->state == APP_DOC_STATE_EMPTY, "emptied read back");
        char *lit = NULL;
        CHECK_STATUS(app_doc_strip_tags(app_doc_segment_at(d, 7)->targets[0], &lit));
        CHECK_STR(lit, "Unbenanntes Dokument {number} " LBK "x" RBK " & <");
        mt_free(lit);
    }
    app_doc_free(d);
}

static void test_xliff_edge_cases(void) {
    /* a target with a tag the source lacks keeps it; no namespace; an
    ** external entity is neither fetched nor expanded */
    const char *x =
        "<?xml version=\"1.0\"?>\n"
        "<!DOCTYPE xliff [<!ENTITY ext SYSTEM \"file:///etc/hostname\">]>\n"
        "<xliff version=\"1.2\"><file source-language=\"en\" target-language=\"fr\" "
        "datatype=\"plaintext\" original=\"x\"><body>\n"
        "<trans-unit id=\"a\"><source>Hi <x id=\"1\"/> &ext;</source>"
        "<target state=\"new\">Salut <x id=\"1\"/> <g id=\"9\">bis</g></target></trans-unit>\n"
        "<trans-unit id=\"b\"><source>line</source><seg-source>line</seg-source>"
        "<note>n</note></trans-unit>\n"
        "</body></file></xliff>\n";
    write_file(tpath("edge.xlf"), x);
    app_doc *d = open_ok(tpath("edge.xlf"), APP_DOC_FORMAT_AUTO);
    if (d) {
        CHECK(app_doc_count(d) == 2, "two units");
        CHECK_STR(app_doc_segment_at(d, 0)->source, "Hi " LBK "1/" RBK " " LBK "2/" RBK);
        CHECK_STR(app_doc_segment_at(d, 0)->targets[0],
                  "Salut " LBK "1/" RBK " " LBK "3" RBK "bis" LBK "/3" RBK);
        CHECK(app_doc_segment_at(d, 0)->state == APP_DOC_STATE_DRAFT, "state new: draft");
        CHECK_STATUS(app_doc_set_target(d, 0, 0,
                                        LBK "3" RBK "encore" LBK "/3" RBK " Salut " LBK "2/" RBK,
                                        APP_DOC_STATE_CONFIRMED));
        CHECK_STATUS(app_doc_set_target(d, 1, 0, "ligne", APP_DOC_STATE_CONFIRMED));
        CHECK_STATUS(app_doc_save(d, NULL, app_doc_default_save_params()));
    }
    app_doc_free(d);
    char *got = slurp(tpath("edge.xlf"));
    CHECK(got && strstr(got, "<target state=\"translated\"><g id=\"9\">encore</g> Salut &ext;"
                             "</target>") != NULL,
          "extra tag and entity reference restored: %s", str_or(got));
    CHECK(got && strstr(got, "<seg-source>line</seg-source><target state=\"translated\">ligne"
                             "</target><note>") != NULL,
          "new target after seg-source: %s", str_or(got));
    mt_free(got);

    /* errors */
    write_file(tpath("bad.xlf"), "<?xml version=\"1.0\"?>\n<xliff version=\"1.2\">\n<file>\n"
                                 "<body></file></xliff>\n");
    CHECK(app_doc_open(tpath("bad.xlf"), APP_DOC_FORMAT_XLIFF, &d) == MT_ERR_FORMAT, "malformed");
    CHECK(strstr(mt_errmsg(), "bad.xlf:4:") != NULL, "error names file:line: %s", mt_errmsg());
    write_file(tpath("v2.xlf"), "<xliff xmlns=\"urn:oasis:names:tc:xliff:document:2.0\" "
                                "version=\"2.0\" srcLang=\"en\"><file id=\"f\"/></xliff>\n");
    CHECK(app_doc_open(tpath("v2.xlf"), APP_DOC_FORMAT_XLIFF, &d) == MT_ERR_UNSUPPORTED,
          "XLIFF 2.0 refused: %s", mt_errmsg());
    write_file(tpath("notx.xlf"), "<html><body/></html>\n");
    CHECK(app_doc_open(tpath("notx.xlf"), APP_DOC_FORMAT_XLIFF, &d) == MT_ERR_FORMAT, "not XLIFF");

    /* malformed units (issue 38): refused with both lines */
    static const struct {
        const char *name, *body, *want;
    } bad[] = {
        {"dupid.xlf",
         "<trans-unit id=\"a\"><source>x</source></trans-unit>\n"
         "<trans-unit id=\"b\"><source>y</source></trans-unit>\n"
         "<group><trans-unit id=\"a\"><source>z</source></trans-unit></group>\n",
         "dupid.xlf:5: duplicate trans-unit id \"a\" (first at line 3)"},
        {"twosrc.xlf",
         "<trans-unit id=\"a\">\n<source>x</source>\n<source>y</source>\n</trans-unit>\n",
         "twosrc.xlf:5: second <source> in trans-unit (the first is at line 4)"},
        {"twotrg.xlf",
         "<trans-unit id=\"a\"><source>x</source>\n<target>y</target><target>z</target>"
         "</trans-unit>\n",
         "twotrg.xlf:4: second <target> in trans-unit (the first is at line 4)"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char *doc = NULL;
        size_t n = strlen(bad[k].body) + 256;
        doc = malloc(n);
        snprintf(doc, n,
                 "<?xml version=\"1.0\"?>\n<xliff version=\"1.2\"><file original=\"o\" "
                 "source-language=\"en\" datatype=\"plaintext\"><body>\n%s</body></file></xliff>\n",
                 bad[k].body);
        write_file(tpath(bad[k].name), doc);
        free(doc);
        d = NULL;
        CHECK(app_doc_open(tpath(bad[k].name), APP_DOC_FORMAT_XLIFF, &d) == MT_ERR_FORMAT,
              "%s refused", bad[k].name);
        CHECK(strstr(mt_errmsg(), bad[k].want) != NULL, "%s: [%s] lacks [%s]", bad[k].name,
              mt_errmsg(), bad[k].want);
        CHECK(d == NULL, "%s: no document", bad[k].name);
    }
    /* the same id in two <file>s is allowed */
    write_file(tpath("twofiles.xlf"),
               "<xliff version=\"1.2\"><file original=\"1\" source-language=\"en\" "
               "datatype=\"plaintext\"><body><trans-unit id=\"a\"><source>x</source>"
               "</trans-unit></body></file><file original=\"2\" source-language=\"en\" "
               "datatype=\"plaintext\"><body><trans-unit id=\"a\"><source>y</source>"
               "</trans-unit></body></file></xliff>\n");
    d = open_ok(tpath("twofiles.xlf"), APP_DOC_FORMAT_XLIFF);
    CHECK(d && app_doc_count(d) == 2, "one id in two files");
    app_doc_free(d);
}

/* Writes n bytes (binary files: UTF-16, BOMs). */
static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!CHECK(f != NULL, "cannot create %s", path)) return;
    fwrite(data, 1, n, f);
    fclose(f);
}

static char *slurp_n(const char *path, size_t *n) {
    char *d = NULL;
    if (app_doc_read_file(path, &d, n) != MT_OK) return NULL;
    return d;
}

/* ASCII text as UTF-16LE (be false) or BE, after an optional BOM. */
static char *utf16(const char *s, bool be, bool bom, size_t *n) {
    size_t len = strlen(s), k = 0;
    char *o = mt_xmalloc(2 * len + 2);
    if (bom) o[k++] = be ? '\xfe' : '\xff', o[k++] = be ? '\xff' : '\xfe';
    for (size_t i = 0; i < len; i++) {
        o[k++] = be ? 0 : s[i];
        o[k++] = be ? s[i] : 0;
    }
    *n = k;
    return o;
}

static bool has_bytes(const char *hay, size_t n, const char *needle, size_t m) {
    for (size_t i = 0; m <= n && i + m <= n; i++)
        if (memcmp(hay + i, needle, m) == 0) return true;
    return false;
}

/* Opens path, sets the first unit's target, saves. */
static void change_first(const char *path, const char *text) {
    app_doc *d = open_ok(path, APP_DOC_FORMAT_XLIFF);
    if (d == NULL) return;
    CHECK_STATUS(app_doc_set_target(d, 0, 0, text, APP_DOC_STATE_CONFIRMED));
    CHECK_STATUS(app_doc_save(d, NULL, app_doc_default_save_params()));
    app_doc_free(d);
}

/* Issue 38: a saved XLIFF keeps the original's form: CRLF, BOM, the
** declaration as written, UTF-16 and its byte order, the final newline. */
static void test_xliff_form(void) {
    bool lint = have_tool("xmllint");
    const char *body = "<xliff version=\"1.2\"><file original=\"o\" source-language=\"en\" "
                       "target-language=\"de\" datatype=\"plaintext\"><body>\n"
                       "<trans-unit id=\"1\"><source>house</source></trans-unit>\n"
                       "<trans-unit id=\"2\"><source>tree\nline</source></trans-unit>\n"
                       "</body></file></xliff>\n";
    char *lf = NULL;
    /* CRLF, a single-quoted declaration, a BOM */
    {
        app_doc_buf b = {0};
        app_doc_buf_puts(&b, "\xef\xbb\xbf<?xml version='1.0' encoding='utf-8'?>\r\n");
        for (const char *p = body; *p; p++) {
            if (*p == '\n') app_doc_buf_putc(&b, '\r');
            app_doc_buf_putc(&b, *p);
        }
        lf = app_doc_buf_take(&b);
    }
    write_file(tpath("crlf.xlf"), lf);
    change_first(tpath("crlf.xlf"), "Haus");
    size_t n = 0;
    char *got = slurp_n(tpath("crlf.xlf"), &n);
    CHECK(got && n > 3 &&
              memcmp(got, "\xef\xbb\xbf<?xml version='1.0' encoding='utf-8'?>\r\n<", 44) == 0,
          "BOM and declaration kept: [%.60s]", str_or(got));
    bool crlf = got != NULL, any = false;
    for (size_t i = 0; got && i < n; i++)
        if (got[i] == '\n') {
            any = true;
            crlf &= i > 0 && got[i - 1] == '\r';
        }
    CHECK(crlf && any, "every line ends in CRLF: [%s]", str_or(got));
    CHECK(got && strstr(got, ">Haus</target>") && strstr(got, "tree\r\nline"), "target saved");
    CHECK(got && n >= 2 && memcmp(got + n - 2, "\r\n", 2) == 0, "final CRLF kept");
    mt_free(got);
    if (lint) CHECK(run("xmllint --noout '%s'", tpath("crlf.xlf")) == 0, "xmllint crlf.xlf");
    app_doc *d = open_ok(tpath("crlf.xlf"), APP_DOC_FORMAT_XLIFF);
    CHECK(d && strcmp(app_doc_segment_at(d, 1)->source, "tree\nline") == 0, "reads back");
    app_doc_free(d);
    mt_free(lf);

    /* no declaration, no final newline: none added */
    char *nodecl = mt_xmalloc(strlen(body) + 1);
    strcpy(nodecl, body);
    nodecl[strlen(nodecl) - 1] = '\0';
    write_file(tpath("nodecl.xlf"), nodecl);
    mt_free(nodecl);
    change_first(tpath("nodecl.xlf"), "Haus");
    got = slurp_n(tpath("nodecl.xlf"), &n);
    CHECK(got && strncmp(got, "<xliff", 6) == 0, "no declaration added: [%.40s]", str_or(got));
    CHECK(got && n > 0 && got[n - 1] == '>', "no final newline added");
    mt_free(got);

    /* UTF-16, both byte orders, with the declaration */
    for (int be = 0; be < 2; be++) {
        const char *name = be ? "u16be.xlf" : "u16le.xlf";
        char text[1024];
        snprintf(text, sizeof text, "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n%s", body);
        size_t m = 0;
        char *raw = utf16(text, be, true, &m);
        write_bytes(tpath(name), raw, m);
        mt_free(raw);
        change_first(tpath(name), "Haus");
        got = slurp_n(tpath(name), &n);
        size_t dl = 0, hl = 0;
        char *decl = utf16("<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n<xliff", be, true, &dl);
        char *haus = utf16(">Haus</target>", be, false, &hl);
        CHECK(got && n >= dl && memcmp(got, decl, dl) == 0, "%s: BOM and declaration kept", name);
        CHECK(got && has_bytes(got, n, haus, hl), "%s: the target in UTF-16", name);
        CHECK(n % 2 == 0, "%s: whole code units", name);
        mt_free(decl);
        mt_free(haus);
        mt_free(got);
        if (lint) CHECK(run("xmllint --noout '%s'", tpath(name)) == 0, "xmllint %s", name);
        d = open_ok(tpath(name), APP_DOC_FORMAT_XLIFF);
        CHECK(d && strcmp(app_doc_segment_at(d, 0)->targets[0], "Haus") == 0, "%s reads back",
              name);
        app_doc_free(d);
    }
}

/* Issue 38: internal entities are expanded for MT and the translator; the
** file keeps the references wherever the element is not rewritten. */
static void test_xliff_entities(void) {
    const char *x = "<?xml version=\"1.0\"?>\n"
                    "<!DOCTYPE xliff [\n<!ENTITY h \"house\">\n<!ENTITY m \"<b>x</b>\">\n]>\n"
                    "<xliff version=\"1.2\"><file original=\"o\" source-language=\"en\" "
                    "target-language=\"de\" datatype=\"plaintext\"><body>\n"
                    "<trans-unit id=\"1\"><source>The &h; is small</source></trans-unit>\n"
                    "<trans-unit id=\"2\"><source>&h;</source><target>&h;</target></trans-unit>\n"
                    "<trans-unit id=\"3\"><source>a &m; b</source></trans-unit>\n"
                    "</body></file></xliff>\n";
    write_file(tpath("ent.xlf"), x);
    app_doc *d = open_ok(tpath("ent.xlf"), APP_DOC_FORMAT_XLIFF);
    if (d == NULL) return;
    CHECK_STR(app_doc_segment_at(d, 0)->source, "The house is small");
    char *plain = NULL;
    CHECK_STATUS(app_doc_strip_tags(app_doc_segment_at(d, 0)->source, &plain));
    CHECK_STR(plain, "The house is small");
    mt_free(plain);
    CHECK_STR(app_doc_segment_at(d, 1)->targets[0], "house");
    CHECK_STR(app_doc_segment_at(d, 2)->source, "a " LBK "1/" RBK " b"); /* markup: a tag */
    CHECK_STATUS(app_doc_set_target(d, 0, 0, "Das Haus ist klein", APP_DOC_STATE_CONFIRMED));
    CHECK_STATUS(app_doc_save(d, NULL, app_doc_default_save_params()));
    app_doc_free(d);
    char *got = slurp(tpath("ent.xlf"));
    CHECK(got && strstr(got, "<source>The &h; is small</source>"), "source keeps &h;: %s",
          str_or(got));
    CHECK(got && strstr(got, "<source>&h;</source><target>&h;</target>"), "untouched unit kept");
    CHECK(got && strstr(got, "<!ENTITY h \"house\">"), "the DTD subset kept");
    CHECK(got && strstr(got, ">Das Haus ist klein</target>"), "target saved");
    mt_free(got);
    if (have_tool("xmllint")) CHECK(run("xmllint --noout '%s'", tpath("ent.xlf")) == 0, "xmllint");
}

/* ==================================================================== text */

static void test_text_formats(void) {
    app_doc *d = open_ok(SAMPLES "/sample.en.txt", APP_DOC_FORMAT_AUTO);
    if (d) {
        CHECK(app_doc_get_format(d) == APP_DOC_FORMAT_TEXT && app_doc_count(d) == 10, "10 lines");
        CHECK_STR(app_doc_segment_at(d, 1)->source, "Settings from %s");
        CHECK(app_doc_save(d, NULL, app_doc_default_save_params()) == MT_ERR_INVALID,
              "plain text needs a target path");
        CHECK_STATUS(app_doc_set_target(d, 1, 0, "Einstellungen von %s", APP_DOC_STATE_CONFIRMED));
        CHECK(app_doc_set_target(d, 2, 0, "zwei\nZeilen", APP_DOC_STATE_CONFIRMED) ==
                  MT_ERR_INVALID,
              "line break refused");
        CHECK_STATUS(app_doc_save(d, tpath("sample.de.txt"), app_doc_default_save_params()));
        CHECK(same_file_text(tpath("sample.de.txt"), "\nEinstellungen von %s\n\n\n\n\n\n\n\n\n"),
              "targets line-aligned");
    }
    app_doc_free(d);

    /* parallel: missing target, then the written one read back */
    write_file(tpath("p.en"), "one\r\ntwo\r\n\r\nfour");
    CHECK_STATUS(app_doc_open_parallel(tpath("p.en"), tpath("p.de"), &d));
    if (d) {
        CHECK(app_doc_count(d) == 4, "four lines incl. an empty one and no final newline");
        CHECK_STR(app_doc_segment_at(d, 3)->source, "four");
        CHECK(app_doc_segment_at(d, 0)->state == APP_DOC_STATE_EMPTY, "no target yet");
        CHECK_STATUS(app_doc_set_target(d, 0, 0, "eins", APP_DOC_STATE_CONFIRMED));
        CHECK_STATUS(app_doc_set_target(d, 3, 0, "vier", APP_DOC_STATE_DRAFT));
        CHECK_STATUS(app_doc_save(d, NULL, app_doc_default_save_params()));
        CHECK(same_file_text(tpath("p.de"), "eins\r\n\r\n\r\nvier"), "CRLF mirrored");
    }
    app_doc_free(d);
    d = NULL;
    CHECK_STATUS(app_doc_open_parallel(tpath("p.en"), tpath("p.de"), &d));
    if (d) {
        CHECK_STR(app_doc_segment_at(d, 3)->targets[0], "vier");
        CHECK(app_doc_segment_at(d, 0)->state == APP_DOC_STATE_CONFIRMED, "target line");
    }
    app_doc_free(d);
    d = NULL;
    write_file(tpath("short.de"), "eins\nzwei\n");
    CHECK(app_doc_open_parallel(tpath("p.en"), tpath("short.de"), &d) == MT_ERR_FORMAT,
          "misaligned");
    CHECK(strstr(mt_errmsg(), "4 lines") && strstr(mt_errmsg(), "has 2"), "%s", mt_errmsg());

    /* invalid UTF-8 with its line */
    write_file(tpath("bad.txt"), "ok\nok\nbad \xff here\n");
    CHECK(app_doc_open(tpath("bad.txt"), APP_DOC_FORMAT_TEXT, &d) == MT_ERR_FORMAT, "bad UTF-8");
    CHECK(strstr(mt_errmsg(), "bad.txt:3: invalid UTF-8 at column 5") != NULL, "%s", mt_errmsg());

    /* TSV: unchanged round trip, one change touches one line */
    const char *tsv = "\xef\xbb\xbfHello\tHallo\nWorld\nTwo\tZwei\r\nEnd\t";
    write_file(tpath("t.tsv"), tsv);
    d = open_ok(tpath("t.tsv"), APP_DOC_FORMAT_AUTO);
    if (d) {
        CHECK(app_doc_get_format(d) == APP_DOC_FORMAT_TSV && app_doc_count(d) == 4, "TSV lines");
        CHECK_STR(app_doc_segment_at(d, 0)->source, "Hello");
        CHECK_STR(app_doc_segment_at(d, 0)->targets[0], "Hallo");
        CHECK(app_doc_segment_at(d, 1)->state == APP_DOC_STATE_EMPTY, "no tab: empty target");
        CHECK(app_doc_segment_at(d, 3)->state == APP_DOC_STATE_EMPTY, "empty target field");
        CHECK_STATUS(app_doc_save(d, tpath("t2.tsv"), app_doc_default_save_params()));
        CHECK(same_file_text(tpath("t2.tsv"), tsv), "TSV unchanged round trip");
        CHECK(app_doc_set_target(d, 1, 0, "a\tb", APP_DOC_STATE_CONFIRMED) == MT_ERR_INVALID,
              "tab refused in TSV");
        CHECK_STATUS(app_doc_set_target(d, 1, 0, "Welt", APP_DOC_STATE_CONFIRMED));
        CHECK_STATUS(app_doc_set_target(d, 2, 0, "ZWEI", APP_DOC_STATE_CONFIRMED));
        CHECK_STATUS(app_doc_save(d, NULL, app_doc_default_save_params()));
        CHECK(same_file_text(tpath("t.tsv"),
                             "\xef\xbb\xbfHello\tHallo\nWorld\tWelt\nTwo\tZWEI\r\nEnd\t"),
              "TSV edit");
    }
    app_doc_free(d);
    write_file(tpath("bad.tsv"), "a\tb\nc\td\te\n");
    CHECK(app_doc_open(tpath("bad.tsv"), APP_DOC_FORMAT_TSV, &d) == MT_ERR_FORMAT, "two tabs");
    CHECK(strstr(mt_errmsg(), "bad.tsv:2:") != NULL, "%s", mt_errmsg());
}

/* Counts the lines of a file as app/formats/doc_text.c does ("a\nb" and "a\nb\n"
** have two). */
static int count_lines(const char *path) {
    char *t = slurp(path);
    if (t == NULL) return -1;
    int n = 0;
    for (const char *p = t; *p; n++) {
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : p + strlen(p);
    }
    mt_free(t);
    return n;
}

/* Issue 29, finding 9: an empty source line is translated by an empty
** line (confirmed from the start), and the target file keeps one line per
** source line, also when the last ones are empty and the source has no
** final newline. */
static void test_text_empty_lines(void) {
    app_doc *d = NULL;
    write_file(tpath("e.en"), "one\n\ntwo\n");
    CHECK_STATUS(app_doc_open_parallel(tpath("e.en"), tpath("e.de"), &d));
    if (d) {
        CHECK(app_doc_segment_at(d, 1)->state == APP_DOC_STATE_CONFIRMED,
              "an empty source line is confirmed as it is");
        CHECK(app_doc_segment_at(d, 0)->state == APP_DOC_STATE_EMPTY &&
                  app_doc_segment_at(d, 2)->state == APP_DOC_STATE_EMPTY,
              "the other lines are not");
        CHECK_STATUS(app_doc_set_target(d, 1, 0, "", APP_DOC_STATE_EMPTY));
        CHECK(app_doc_segment_at(d, 1)->state == APP_DOC_STATE_CONFIRMED,
              "an empty target on an empty line stays confirmed");
        CHECK_STATUS(app_doc_set_target(d, 0, 0, "eins", APP_DOC_STATE_CONFIRMED));
        CHECK_STATUS(app_doc_set_target(d, 2, 0, "zwei", APP_DOC_STATE_CONFIRMED));
        CHECK_STATUS(app_doc_save(d, NULL, app_doc_default_save_params()));
        CHECK(same_file_text(tpath("e.de"), "eins\n\nzwei\n"), "line i <-> line i");
    }
    app_doc_free(d);
    d = NULL;

    /* untranslated last lines, no final newline: still three lines */
    write_file(tpath("f.en"), "one\n\ntwo");
    CHECK_STATUS(app_doc_open_parallel(tpath("f.en"), tpath("f.de"), &d));
    if (d) {
        CHECK_STATUS(app_doc_set_target(d, 0, 0, "eins", APP_DOC_STATE_CONFIRMED));
        CHECK_STATUS(app_doc_save(d, NULL, app_doc_default_save_params()));
        CHECK(count_lines(tpath("f.de")) == 3, "3 target lines, got %d",
              count_lines(tpath("f.de")));
    }
    app_doc_free(d);
    d = NULL;
    CHECK_STATUS(app_doc_open_parallel(tpath("f.en"), tpath("f.de"), &d));
    if (d) {
        CHECK(app_doc_count(d) == 3 && app_doc_segment_at(d, 1)->state == APP_DOC_STATE_CONFIRMED &&
                  app_doc_segment_at(d, 2)->state == APP_DOC_STATE_EMPTY,
              "read back aligned: the empty line confirmed, the last one open");
        CHECK_STATUS(app_doc_set_target(d, 2, 0, "zwei", APP_DOC_STATE_CONFIRMED));
        CHECK_STATUS(app_doc_save(d, NULL, app_doc_default_save_params()));
        CHECK(same_file_text(tpath("f.de"), "eins\n\nzwei\n"),
              "the final newline of the target file it replaces");
    }
    app_doc_free(d);
    d = NULL;

    /* TSV: an empty line is a confirmed empty pair */
    write_file(tpath("e.tsv"), "Hello\tHallo\n\nWorld\n");
    d = open_ok(tpath("e.tsv"), APP_DOC_FORMAT_TSV);
    if (d) {
        CHECK(app_doc_segment_at(d, 1)->state == APP_DOC_STATE_CONFIRMED &&
                  app_doc_segment_at(d, 2)->state == APP_DOC_STATE_EMPTY,
              "TSV: empty line confirmed");
        CHECK_STATUS(app_doc_set_target(d, 2, 0, "Welt", APP_DOC_STATE_CONFIRMED));
        CHECK_STATUS(app_doc_save(d, NULL, app_doc_default_save_params()));
        CHECK(same_file_text(tpath("e.tsv"), "Hello\tHallo\n\nWorld\tWelt\n"), "TSV saved");
    }
    app_doc_free(d);
}

static void test_detect_and_names(void) {
    app_doc_format f;
    write_file(tpath("noext1"), "# comment\nmsgid \"a\"\nmsgstr \"\"\n");
    write_file(tpath("noext2"), "\xef\xbb\xbf<?xml version=\"1.0\"?><xliff/>");
    write_file(tpath("noext3"), "just text\n");
    CHECK(app_doc_detect_format(tpath("noext1"), &f) == MT_OK && f == APP_DOC_FORMAT_PO, "PO");
    CHECK(app_doc_detect_format(tpath("noext2"), &f) == MT_OK && f == APP_DOC_FORMAT_XLIFF, "XLF");
    CHECK(app_doc_detect_format(tpath("noext3"), &f) == MT_OK && f == APP_DOC_FORMAT_TEXT, "text");
    CHECK(app_doc_detect_format("x/y.POT", &f) == MT_OK && f == APP_DOC_FORMAT_PO, "suffix");
    CHECK(app_doc_detect_format("y.xliff", &f) == MT_OK && f == APP_DOC_FORMAT_XLIFF, "suffix");
    CHECK(app_doc_format_from_name("moses", &f) == MT_OK && f == APP_DOC_FORMAT_PARALLEL, "name");
    CHECK(app_doc_format_from_name("docx", &f) == MT_ERR_INVALID, "unknown name");
    CHECK(strcmp(app_doc_format_name(APP_DOC_FORMAT_XLIFF), "xliff") == 0, "format name");
}

/* ===================================================================== TMX */

static void test_tmx(void) {
    app_doc_tmx_row rows[] = {
        {"Settings from %s", "Einstellungen von %s", "en", "de", 1700000000},
        {"a < b & \"c\" > d", "a < b & „c“ > d\r\nzwei", "en", "de-DE", 0},
        {"日本語", "Japanisch", "en", "de", 86400},
    };
    CHECK_STATUS(app_doc_tmx_write(tpath("out.tmx"), rows, 3));
    if (have_tool("xmllint"))
        CHECK(run("xmllint --noout '%s'", tpath("out.tmx")) == 0, "xmllint accepts the TMX");
    xmlDocPtr doc = xmlReadFile(tpath("out.tmx"), NULL, XML_PARSE_NONET);
    CHECK(doc != NULL, "TMX parses");
    if (doc == NULL) return;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    xmlChar *v = xmlGetProp(root, BAD_CAST "version");
    CHECK(xmlStrEqual(root->name, BAD_CAST "tmx") && v && xmlStrEqual(v, BAD_CAST "1.4"), "root");
    xmlFree(v);
    xmlNodePtr header = NULL, body = NULL;
    for (xmlNodePtr c = root->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE) continue;
        if (xmlStrEqual(c->name, BAD_CAST "header")) header = c;
        if (xmlStrEqual(c->name, BAD_CAST "body")) body = c;
    }
    CHECK(header && body, "header and body");
    static const char *hdr[][2] = {{"creationtool", "mtpe"}, {"srclang", "en"},
                                   {"segtype", "sentence"},  {"o-tmf", "mtpe"},
                                   {"adminlang", "en"},      {"datatype", "plaintext"}};
    for (size_t k = 0; header && k < sizeof hdr / sizeof hdr[0]; k++) {
        xmlChar *a = xmlGetProp(header, BAD_CAST hdr[k][0]);
        CHECK(a && xmlStrEqual(a, BAD_CAST hdr[k][1]), "header %s=%s", hdr[k][0], hdr[k][1]);
        xmlFree(a);
    }
    static const char *dates[] = {"20231114T221320Z", NULL, "19700102T000000Z"};
    int n_tu = 0;
    for (xmlNodePtr tu = body ? body->children : NULL; tu; tu = tu->next) {
        if (tu->type != XML_ELEMENT_NODE) continue;
        CHECK(xmlStrEqual(tu->name, BAD_CAST "tu"), "tu");
        if (n_tu >= 3) {
            n_tu++;
            continue;
        }
        xmlChar *date = xmlGetProp(tu, BAD_CAST "creationdate");
        CHECK(dates[n_tu] ? date && xmlStrEqual(date, BAD_CAST dates[n_tu]) : date == NULL,
              "tu %d creationdate %s", n_tu, date ? (char *)date : "(none)");
        xmlFree(date);
        int n_tuv = 0;
        for (xmlNodePtr tuv = tu->children; tuv; tuv = tuv->next) {
            if (tuv->type != XML_ELEMENT_NODE) continue;
            xmlChar *lang = xmlGetNsProp(tuv, BAD_CAST "lang", XML_XML_NAMESPACE);
            xmlChar *seg = xmlNodeGetContent(tuv);
            const char *want_lang = n_tuv == 0 ? rows[n_tu].src_lang : rows[n_tu].trg_lang;
            const char *want_seg = n_tuv == 0 ? rows[n_tu].source : rows[n_tu].target;
            CHECK(lang && xmlStrEqual(lang, BAD_CAST want_lang), "tu %d tuv %d xml:lang", n_tu,
                  n_tuv);
            CHECK(seg && xmlStrEqual(seg, BAD_CAST want_seg), "tu %d tuv %d seg [%s]", n_tu, n_tuv,
                  seg ? (char *)seg : "");
            xmlFree(lang);
            xmlFree(seg);
            n_tuv++;
        }
        CHECK(n_tuv == 2, "two tuv per tu");
        n_tu++;
    }
    CHECK(n_tu == 3, "three tu, got %d", n_tu);
    xmlFreeDoc(doc);

    app_doc_tmx_row bad = {"a\x01", "b", "en", "de", 0};
    CHECK(app_doc_tmx_write(tpath("bad.tmx"), &bad, 1) == MT_ERR_INVALID, "control char refused");
    CHECK(access(tpath("bad.tmx"), F_OK) != 0, "nothing written");
    app_doc_tmx_row mixed[] = {{"a", "b", "en", "de", 0}, {"c", "d", "fr", "de", 0}};
    CHECK_STATUS(app_doc_tmx_write(tpath("mixed.tmx"), mixed, 2));
    char *t = slurp(tpath("mixed.tmx"));
    CHECK(t && strstr(t, "srclang=\"*all*\""), "mixed source languages");
    mt_free(t);
}

/* ================================================================= atomic */

static mt_status failing_writer(FILE *f, void *user) {
    fputs("partial", f);
    (void)user;
    return mt_seterr(MT_ERR_IO, "simulated failure");
}

static mt_status hello_writer(FILE *f, void *user) {
    fputs(user, f);
    return MT_OK;
}

static void test_atomic(void) {
    const char *p = tpath("atomic.txt");
    write_file(p, "original\n");
    chmod(p, 0640);
    CHECK(app_doc_atomic_write(p, failing_writer, NULL) == MT_ERR_IO, "writer failure reported");
    CHECK(same_file_text(p, "original\n"), "original untouched after a writer failure");
    CHECK(no_temp_files(), "temporary file removed");

    app_doc_atomic_inject_errno(ENOSPC);
    CHECK(app_doc_atomic_write(p, hello_writer, "new\n") == MT_ERR_IO, "ENOSPC reported");
    CHECK(strstr(mt_errmsg(), "no space left on device") != NULL, "%s", mt_errmsg());
    CHECK(same_file_text(p, "original\n"), "original untouched after ENOSPC");
    CHECK(no_temp_files(), "temporary file removed after ENOSPC");

    CHECK_STATUS(app_doc_atomic_write(p, hello_writer, "new\n"));
    CHECK(same_file_text(p, "new\n"), "replaced");
    struct stat st;
    CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0640, "mode kept: %o", st.st_mode & 0777);
    CHECK(no_temp_files(), "no temporary file after success");

    /* through a symlink: the link stays, its target changes */
    const char *link = tpath("link.txt");
    CHECK(symlink("atomic.txt", link) == 0, "symlink");
    CHECK_STATUS(app_doc_atomic_write(link, hello_writer, "via link\n"));
    struct stat lst;
    CHECK(lstat(link, &lst) == 0 && S_ISLNK(lst.st_mode), "still a link");
    CHECK(same_file_text(p, "via link\n"), "target written");

    /* a read-only file is refused, also for root (issue 38, finding 6) */
    chmod(p, 0444);
    CHECK(app_doc_atomic_write(p, hello_writer, "over it\n") == MT_ERR_IO &&
              strstr(mt_errmsg(), "read-only") && strstr(mt_errmsg(), "atomic.txt"),
          "read-only file refused: %s", mt_errmsg());
    CHECK(same_file_text(p, "via link\n") && no_temp_files(), "read-only file untouched");
    chmod(p, 0640);
    CHECK(app_doc_atomic_write(tmpdir, hello_writer, "x") == MT_ERR_IO, "a directory is refused");
    /* places nobody can create files in, root included */
    CHECK(app_doc_atomic_write(tpath("missing-dir/x.po"), hello_writer, "x") == MT_ERR_IO,
          "missing directory");
    CHECK(strstr(mt_errmsg(), "missing-dir/x.po") != NULL, "%s", mt_errmsg());
    CHECK(app_doc_atomic_write("/proc/mtpe-test-doc.po", hello_writer, "x") == MT_ERR_IO,
          "unwritable file system");
}

/* Part "owner": owner and group kept (only root can hand a file to someone else). */
static void test_atomic_owner(void) {
    if (geteuid() != 0) {
        SKIP("not root: only root can give the file another owner");
        return;
    }
    const char *p = tpath("owned.txt");
    write_file(p, "original\n");
    chmod(p, 0640);
    struct stat st;
    CHECK(chown(p, 1234, 5678) == 0, "chown");
    CHECK_STATUS(app_doc_atomic_write(p, hello_writer, "owned\n"));
    CHECK(
        stat(p, &st) == 0 && st.st_uid == 1234 && st.st_gid == 5678 && (st.st_mode & 0777) == 0640,
        "owner, group and mode kept: %d:%d %o", (int)st.st_uid, (int)st.st_gid, st.st_mode & 0777);
    CHECK(chown(p, 0, 0) == 0, "chown back");
}

/* Part "read_only_dir": a read-only directory (meaningless for root, who may
** write anyway). */
static void test_atomic_read_only_dir(void) {
    char ro[512];
    snprintf(ro, sizeof ro, "%s/ro", tmpdir);
    mkdir(ro, 0555);
    if (access(ro, W_OK) == 0) {
        SKIP("running as root: a read-only directory is writable");
        return;
    }
    chmod(ro, 0755);
    char rof[600];
    snprintf(rof, sizeof rof, "%s/doc.po", ro);
    write_file(rof, "msgid \"a\"\nmsgstr \"\"\n");
    chmod(ro, 0555);
    app_doc *d = open_ok(rof, APP_DOC_FORMAT_PO);
    if (d) {
        CHECK_STATUS(app_doc_set_target(d, 0, 0, "b", APP_DOC_STATE_CONFIRMED));
        CHECK(app_doc_save(d, NULL, app_doc_default_save_params()) == MT_ERR_IO,
              "read-only directory");
        CHECK(strstr(mt_errmsg(), "doc.po") != NULL, "message names the file: %s", mt_errmsg());
    }
    app_doc_free(d);
    CHECK(same_file_text(rof, "msgid \"a\"\nmsgstr \"\"\n"), "original untouched");
    chmod(ro, 0755);
}

int main(int argc, char **argv) {
    TEST_MAIN_BEGIN(argc, argv);
    snprintf(tmpdir, sizeof tmpdir, "%s/mtpe_test_doc.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(tmpdir) == NULL) {
        fprintf(stderr, "cannot create a temporary directory\n");
        return 1;
    }
    xmlInitParser();
    if (TEST_PART("owner")) {
        test_atomic_owner();
    } else if (TEST_PART("read_only_dir")) {
        test_atomic_read_only_dir();
    } else {
        test_po_sample();
        test_po_edge_cases();
        test_po_errors();
        test_po_wrap_vs_msgcat();
        test_po_header_stamp();
        test_po_plural_examples();
        test_xliff_sample();
        test_xliff_edge_cases();
        test_xliff_form();
        test_xliff_entities();
        test_text_formats();
        test_text_empty_lines();
        test_detect_and_names();
        test_tmx();
        test_atomic();
        test_alloc_failures();
    }
    if (th_failures == 0) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    } else {
        fprintf(stderr, "files kept in %s\n", tmpdir);
    }
    xmlCleanupParser();
    TEST_MAIN_END();
}
