/*
** test_qa.c: the QA checks (app/formats/qa.c).
**
** Oracle: gettext's msgfmt --check.  Every case (hand-written ones, then
** random mutations of real format strings) is written as a one-entry PO
** file; app_qa_check must report an error exactly when msgfmt rejects the
** file.  msgfmt is required (scripts/install-deps.sh installs gettext):
** without it the test fails.  The warnings are checked against hand-written
** expectations.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "qa.h"

static char dir[] = "/tmp/mtpe_test_qa.XXXXXX";

static void put_po_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '\n')
            fputs("\\n", f);
        else if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if (*s == '\t')
            fputs("\\t", f);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

/* msgfmt --check on one entry: 1 accepted, 0 rejected */
static int msgfmt_accepts(const char *flags, const char *id, const char *id_pl,
                          const char *const *strs, int n) {
    char path[128];
    snprintf(path, sizeof path, "%s/case.po", dir);
    FILE *f = fopen(path, "w");
    if (f == NULL) return -1;
    fputs("msgid \"\"\nmsgstr \"\"\n\"Project-Id-Version: t\\n\"\n\"Content-Type: text/plain; "
          "charset=UTF-8\\n\"\n\"Plural-Forms: nplurals=2; plural=(n != 1);\\n\"\n\n",
          f);
    if (flags) fprintf(f, "#, %s\n", flags);
    fputs("msgid ", f);
    put_po_string(f, id);
    fputc('\n', f);
    if (id_pl) {
        fputs("msgid_plural ", f);
        put_po_string(f, id_pl);
        fputc('\n', f);
        for (int i = 0; i < n; i++) {
            fprintf(f, "msgstr[%d] ", i);
            put_po_string(f, strs[i]);
            fputc('\n', f);
        }
    } else {
        fputs("msgstr ", f);
        put_po_string(f, strs[0]);
        fputc('\n', f);
    }
    fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "msgfmt --check -o /dev/null %s 2>/dev/null", path);
    return system(cmd) == 0;
}

static bool qa_errors(const char *flags, const char *id, const char *id_pl, const char *const *strs,
                      int n, char *why, size_t why_n) {
    app_qa_input in = {id, id_pl, flags, true, NULL};
    bool err = false;
    why[0] = '\0';
    for (int i = 0; i < n; i++) {
        app_qa_issue is[APP_QA_MAX];
        int k = app_qa_check(&in, i, strs[i], is);
        for (int j = 0; j < k; j++)
            if (is[j].level == APP_QA_ERROR) {
                if (!err) snprintf(why, why_n, "%s", is[j].msg);
                err = true;
            }
    }
    return err;
}

static int oracle_cases, disagreements;

static void against_msgfmt(const char *flags, const char *id, const char *id_pl,
                           const char *const *strs, int n) {
    int ok = msgfmt_accepts(flags, id, id_pl, strs, n);
    if (ok < 0) return;
    oracle_cases++;
    char why[256];
    bool err = qa_errors(flags, id, id_pl, strs, n, why, sizeof why);
    if (!CHECK(err == !ok, "msgfmt %s, QA %s: flags '%s' msgid '%s' msgstr[0] '%s' %s",
               ok ? "accepts" : "rejects", err ? "error" : "no error", flags ? flags : "", id,
               strs[0], why))
        disagreements++;
}

static void single(const char *flags, const char *id, const char *str) {
    against_msgfmt(flags, id, NULL, &str, 1);
}

static void test_hand_cases(void) {
    single(NULL, "Hello", "Hallo");
    single(NULL, "\nCommand line:\n", "Kommandozeile:");
    single(NULL, "\nCommand line:\n", "\nKommandozeile:\n");
    single(NULL, "Line\n", "Zeile");
    single(NULL, "Line", "Zeile\n");
    single(NULL, "Line", "\nZeile");
    single("c-format", "Cannot open %s: %s", "Kann %s nicht öffnen: %s");
    single("c-format", "Cannot open %s: %s", "Kann %s nicht öffnen");
    single("c-format", "Cannot open %s", "Kann %s nicht öffnen: %s");
    single("c-format", "Help for '%s' not found.", "Hilfe für '% nicht gefunden.");
    single("c-format", "%d files", "%s Dateien");
    single("c-format", "%d files", "%ld Dateien");
    single("c-format", "%d files", "%i Dateien");
    single("c-format", "%s of %d", "%2$d von %1$s");
    single("c-format", "%s of %d", "%2$d von %s");
    single("c-format", "%1$s of %2$d", "%2$d von %1$s");
    single("c-format", "%1$s of %2$d", "%2$d von");
    single("c-format", "100%% done", "100%% fertig");
    single("c-format", "100%% done", "100% fertig");
    single("c-format", "%.2f s", "%.3f s");
    single("c-format", "%.*s", "%.*s");
    single("c-format", "%.*s", "%s");
    single("c-format", "%5d", "%-5d");
    single("c-format", "%lu bytes", "%lu Bytes");
    single("c-format", "%lu bytes", "%u Bytes");
    single("c-format", "%zu items", "%zu Einträge");
    single("c-format", "%'d", "%d");
    single("c-format", "Error: %m", "Fehler: %m");
    single("c-format", "Error: %m", "Fehler");
    single("c-format", "%c", "%s");
    single("c-format", "%x", "%u");
    single("c-format", "%s", "%");
    single("c-format", "%s", "50% %s");
    single("c-format", "%<PRIu64> bytes", "%<PRIu64> Bytes");
    single("python-format", "Removed %(count)d packages", "%(count)d Pakete entfernt");
    single("python-format", "Removed %(count)d packages", "Pakete entfernt");
    single("python-format", "Removed %(count)d packages", "%(anzahl)d Pakete entfernt");
    single("python-format", "%s and %s", "%s und %s");
    single("python-format", "%s and %s", "%s und");
    single("python-format", "%(a)s %(b)s", "%(b)s %(a)s");
    single("no-c-format", "%s", "%");
    single("kde-format", "Copy %1 to %2", "Kopiere %1 nach %2");
    single("kde-format", "Copy %1 to %2", "Kopiere %2 nach %1");
    single("kde-format", "Copy %1 to %2", "Kopiere %1");
    single("kde-format", "Copy %1", "Kopiere %2");
    single("kde-format", "Copy", "Kopiere %1");
    single("kde-format", "Copy %1 %3", "Kopiere %1 %3");
    single("kde-format", "Copy %1 %2", "Kopiere %1 %2 %2");

    const char *pl1[] = {"Eine Datei", "%d Dateien"};
    against_msgfmt("c-format", "One file", "%d files", pl1, 2);
    const char *pl2[] = {"%d Datei", "%d Dateien"};
    against_msgfmt("c-format", "%d file", "%d files", pl2, 2);
    const char *pl3[] = {"%d Datei", "Dateien"};
    against_msgfmt("c-format", "%d file", "%d files", pl3, 2);
    const char *pl4[] = {"Eine Datei", "Dateien"};
    against_msgfmt("c-format", "One file", "%d files", pl4, 2);
    const char *pl6[] = {"Eine Datei", "%1 Dateien"};
    against_msgfmt("kde-format", "One file", "%1 files", pl6, 2);
    const char *pl7[] = {"Eine Datei in %2", "%1 Dateien in %2"};
    against_msgfmt("kde-format", "%1 file in %2", "%1 files in %2", pl7, 2);
    const char *pl8[] = {"Eine Datei", "%1 Dateien in %2"};
    against_msgfmt("kde-format", "%1 file in %2", "%1 files in %2", pl8, 2);
    const char *pl5[] = {"\n%d Datei", "%d Dateien"};
    against_msgfmt("c-format", "%d file", "%d files", pl5, 2);
}

/* random mutations of real format strings */
static void test_random(void) {
    static const char *const ids[] = {
        "Cannot open '%s': %s",
        "%d of %d files (%.1f%%)",
        "%s: option '%s' requires an argument",
        "%-20s %10lu %s",
        "Read %zu bytes at offset %lld",
        "%1$s has %2$d items",
        "%c%c%s",
        "Error %d: %s\n",
        "\n%s\n",
    };
    static const char *const inserts[] = {"%s", "%d", "%", "%%", "%ld", "%1$s", "\n", "%.2f", "x"};
    srand(11);
    for (int t = 0; t < 240; t++) {
        const char *id = ids[rand() % (int)(sizeof ids / sizeof *ids)];
        char s[256];
        snprintf(s, sizeof s, "%s", id);
        int edits = 1 + rand() % 2;
        for (int e = 0; e < edits; e++) {
            size_t n = strlen(s);
            size_t at = n ? (size_t)rand() % (n + 1) : 0;
            switch (rand() % 3) {
            case 0: { /* delete a few bytes */
                size_t k = 1 + (size_t)rand() % 3;
                if (at + k > n) k = n - at;
                memmove(s + at, s + at + k, n - at - k + 1);
                break;
            }
            case 1: { /* insert */
                const char *ins = inserts[rand() % (int)(sizeof inserts / sizeof *inserts)];
                size_t k = strlen(ins);
                if (n + k + 1 < sizeof s) {
                    memmove(s + at + k, s + at, n - at + 1);
                    memcpy(s + at, ins, k);
                }
                break;
            }
            default: /* change a conversion letter */
                for (size_t i = at; i < n; i++)
                    if (strchr("sdfu", s[i]) && i > 0 && (s[i - 1] == '%' || s[i - 1] == 'l')) {
                        s[i] = "sdfux"[rand() % 5];
                        break;
                    }
            }
        }
        single("c-format", id, s);
    }
}

static void expect_warning(const char *src, const char *text, const char *needle) {
    app_qa_input in = {src, NULL, NULL, false, NULL};
    app_qa_issue is[APP_QA_MAX];
    int n = app_qa_check(&in, 0, text, is);
    bool found = false;
    for (int i = 0; i < n; i++)
        found = found || (is[i].level == APP_QA_WARNING && strstr(is[i].msg, needle) != NULL);
    CHECK(found, "'%s' -> '%s': no warning containing '%s' (%d issues)", src, text, needle, n);
}

static void expect_clean(const char *src, const char *text) {
    app_qa_input in = {src, NULL, NULL, false, NULL};
    app_qa_issue is[APP_QA_MAX];
    int n = app_qa_check(&in, 0, text, is);
    CHECK(n == 0, "'%s' -> '%s': %d issues, first: %s", src, text, n, n ? is[0].msg : "");
}

static void test_warnings(void) {
    expect_clean("Open <b>%s</b> in {app}", "<b>%s</b> in {app} öffnen");
    expect_warning("Open <b>file</b>", "Datei öffnen", "'<b>' of the source is missing");
    expect_warning("Open {name}", "{Name} öffnen", "'{name}' of the source is missing");
    expect_warning("Open {name}", "{Name} öffnen", "'{Name}' is not in the source");
    expect_warning("Use --force", "Verwenden Sie --exclude", "'--force'");
    expect_warning("Wait 10 seconds", "Warten Sie zehn Sekunden", "the number 10");
    expect_clean("Wait 10 seconds", "10 Sekunden warten");
    expect_warning("  Item", "Eintrag", "begins with 2 blanks");
    expect_warning("Item ", "Eintrag", "ends with 1 blanks");
    expect_warning("The file", "Die die Datei", "written twice");
    expect_warning("_Open", "Öffnen", "accelerator");
    expect_clean("_Open", "Ö_ffnen");
    expect_clean("", "");
}

int main(void) {
    test_warnings();
    if (!CHECK(mkdtemp(dir) != NULL, "mkdtemp %s", dir) || !CHECK_TOOL("msgfmt")) TEST_MAIN_END();
    test_hand_cases();
    test_random();
    fprintf(stderr, "%d cases against msgfmt, %d disagreements\n", oracle_cases, disagreements);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
    TEST_MAIN_END();
}
