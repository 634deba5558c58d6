/*
** test_anatomy.c: segment anatomy (app/formats/anatomy.c): placeholders, what is
** translated and what is copied, the choice and repair of translations.
**
** Expected pieces and glue are written out by hand from the rules in
** anatomy.h.  The identity property: assembling the pieces themselves (as
** if the MT copied its input) gives back the source, for hand-made cases
** and for random strings over an alphabet of placeholders, blanks, line
** breaks and words.
*/
#include <stdlib.h>
#include <string.h>

#include "anatomy.h"
#include "harness.h"

static void check_ph(const char *s, size_t at, size_t want_len, app_ph_kind want_kind) {
    app_ph_kind k = 0;
    size_t n = app_ph_match(s, at, &k);
    CHECK(n == want_len && (n == 0 || k == want_kind), "'%s'@%zu: len %zu kind %d, want %zu %d", s,
          at, n, (int)k, want_len, (int)want_kind);
}

static void test_placeholders(void) {
    check_ph("%s", 0, 2, APP_PH_PRINTF);
    check_ph("%1$d", 0, 4, APP_PH_PRINTF);
    check_ph("%-10.3lf x", 0, 8, APP_PH_PRINTF);
    check_ph("%%", 0, 2, APP_PH_PRINTF);
    check_ph("%'d", 0, 3, APP_PH_PRINTF);
    check_ph("%zu", 0, 3, APP_PH_PRINTF);
    check_ph("%.*s", 0, 4, APP_PH_PRINTF);
    check_ph("%<PRIu64> x", 0, 9, APP_PH_PRINTF);
    check_ph("100% sure", 3, 0, 0); /* the blank flag is text */
    check_ph("50%", 2, 0, 0);
    check_ph("Copy %1 to %12", 5, 2, APP_PH_KDE);
    check_ph("Copy %1 to %12", 11, 3, APP_PH_KDE);
    check_ph("%(count)d items", 0, 9, APP_PH_PYTHON);
    check_ph("%(name)-10s", 0, 11, APP_PH_PYTHON);
    check_ph("{0}", 0, 3, APP_PH_BRACE);
    check_ph("{name}", 0, 6, APP_PH_BRACE);
    check_ph("{}", 0, 2, APP_PH_BRACE);
    check_ph("{0:.2f}", 0, 7, APP_PH_BRACE);
    check_ph("{{x}}", 0, 0, 0);
    check_ph("{ not }", 0, 0, 0);
    check_ph("<b>", 0, 3, APP_PH_TAG);
    check_ph("</b>", 0, 4, APP_PH_TAG);
    check_ph("<br/>", 0, 5, APP_PH_TAG);
    check_ph("<a href=\"x\">y", 0, 12, APP_PH_TAG);
    check_ph("a < b > c", 2, 0, 0);
    check_ph("&amp;", 0, 5, APP_PH_ENTITY);
    check_ph("&#169;", 0, 6, APP_PH_ENTITY);
    check_ph("&#x1F;", 0, 6, APP_PH_ENTITY);
    check_ph("&File", 0, 0, 0);
    check_ph("use --force.", 4, 7, APP_PH_OPTION);
    check_ph("--color[=WHEN] x", 0, 14, APP_PH_OPTION);
    check_ph("--width=COLS x", 0, 12, APP_PH_OPTION);
    check_ph(" -f, x", 1, 2, APP_PH_OPTION);
    check_ph("well-known", 4, 0, 0);
    check_ph("a - b", 2, 0, 0);
    check_ph("-5 x", 0, 2, APP_PH_OPTION);
    check_ph("$HOME/x", 0, 5, APP_PH_VAR);
    check_ph("${name}", 0, 7, APP_PH_VAR);
    check_ph("$Id", 0, 0, 0);
    check_ph("see https://x.org/a.", 4, 15, APP_PH_URL);

    app_ph *ph = NULL;
    int n = 0;
    CHECK_STATUS(app_ph_scan("Copy %s to '%s'? <b>{0}</b> 100%", &ph, &n));
    CHECK(n == 5, "5 placeholders, got %d", n);
    if (n == 5) CHECK(ph[1].at == 12 && ph[1].len == 2, "second %%s at 12");
    mt_free(ph);
}

/* pieces and glue of src, as "glue|piece|glue|...|glue" */
static char *layout(const char *src) {
    app_anatomy *a = NULL;
    if (app_anat_parse(src, &a) != MT_OK) return NULL;
    static char buf[4096];
    size_t at = 0;
    for (int i = 0; i <= app_anat_pieces(a); i++) {
        at +=
            (size_t)snprintf(buf + at, sizeof buf - at, "%s%s", i ? "|" : "", app_anat_glue(a, i));
        if (i < app_anat_pieces(a))
            at += (size_t)snprintf(buf + at, sizeof buf - at, "|%s", app_anat_piece(a, i));
    }
    app_anat_free(a);
    return buf;
}

static void check_layout(const char *src, const char *want) {
    const char *got = layout(src);
    CHECK(got && strcmp(got, want) == 0, "layout of '%s':\n got '%s'\nwant '%s'", src,
          got ? got : "(error)", want);
}

/* assembling the pieces themselves gives back the source */
static void check_identity(const char *src) {
    app_anatomy *a = NULL;
    CHECK_STATUS(app_anat_parse(src, &a));
    if (a == NULL) return;
    int n = app_anat_pieces(a);
    const char **mt = calloc((size_t)n + 1, sizeof *mt);
    for (int i = 0; i < n; i++)
        mt[i] = app_anat_piece(a, i);
    char *out = NULL;
    CHECK_STATUS(app_anat_assemble(a, mt, &out));
    CHECK(out && strcmp(out, src) == 0, "identity:\n got '%s'\nwant '%s'", out ? out : "(null)",
          src);
    mt_free(out);
    free(mt);
    app_anat_free(a);
}

static void test_layout(void) {
    check_layout("Hello", "|Hello|");
    check_layout("\nCommand line:\n", "\n|Command line:|\n");
    check_layout("  Indented text  ", "  |Indented text|  ");
    check_layout(" ", " ");
    check_layout("%s", "%s");
    check_layout("%s: %s", "%s: %s");
    check_layout("42", "42");
    check_layout("", "");
    /* a column layout: option names are copied, descriptions translated */
    check_layout("  -f, --force     never prompt\n  -v, --verbose   explain",
                 "  -f, --force     |never prompt|\n  -v, --verbose   |explain|");
    /* a wrapped paragraph is one piece */
    check_layout("This program comes with\nno warranty at all.\n",
                 "|This program comes with no warranty at all.|\n");
    /* sentences that end a line, list items: separate pieces */
    check_layout("First line.\nSecond line.", "|First line.|\n|Second line.|");
    check_layout("Options:\n  -a  all\n", "|Options:|\n  -a  |all|\n");
    /* the accelerator is removed from the MT input */
    check_layout("_Open File", "|Open File|");
    check_layout("&Save", "|Save|");
    check_layout("SOME_NAME_HERE", "|SOME_NAME_HERE|");

    const char *cases[] = {
        "Hello",
        "\nCommand line:\n",
        "  -f, --force     never prompt\n  -v, --verbose   explain\n",
        "Usage: %s [OPTION]... [FILE]...\n",
        "\t%s\t%d\n",
        "Copy '%s' to '%s'?",
        "",
        " ",
        "\n\n",
        "a\n\nb",
        "Report bugs to: %s\nHome page: <%s>\n",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_identity(cases[i]);

    /* random strings of placeholders, blanks, line breaks and words */
    static const char *const alphabet[] = {"%s",   "%d", " ", "  ",       "\t",  "\n",   "word",
                                           "Text", ".",  ":", "{0}",      "<b>", "</b>", "--opt",
                                           "-x",   "%%", "x", "\xc3\xa4", ",",   "%(n)s"};
    srand(7);
    for (int t = 0; t < 2000; t++) {
        char s[256] = "";
        int k = rand() % 12;
        for (int j = 0; j < k; j++)
            strcat(s, alphabet[rand() % (int)(sizeof alphabet / sizeof *alphabet)]);
        /* paragraphs are re-wrapped, so lines are kept apart by periods */
        for (char *p = s; (p = strchr(p, '\n')) != NULL; p++)
            if (p > s && p[-1] != '.' && p[-1] != '\n') goto skip;
        check_identity(s);
    skip:;
    }
}

static bool accepts(const char *src, const char *mt) {
    app_anatomy *a = NULL;
    if (app_anat_parse(src, &a) != MT_OK || app_anat_pieces(a) != 1) {
        app_anat_free(a);
        return false;
    }
    bool ok = app_anat_accepts(a, 0, mt);
    app_anat_free(a);
    return ok;
}

static char *assemble1(const char *src, const char *mt) {
    app_anatomy *a = NULL;
    char *out = NULL;
    if (app_anat_parse(src, &a) == MT_OK) {
        const char *v[8] = {mt, mt, mt, mt, mt, mt, mt, mt};
        if (app_anat_assemble(a, v, &out) != MT_OK) out = NULL;
    }
    app_anat_free(a);
    return out;
}

static void check_assemble(const char *src, const char *mt, const char *want) {
    char *got = assemble1(src, mt);
    CHECK(got && strcmp(got, want) == 0, "'%s' + MT '%s':\n got '%s'\nwant '%s'", src, mt,
          got ? got : "(null)", want);
    mt_free(got);
}

static void test_choice_and_repair(void) {
    CHECK(accepts("Cannot open %s: %s", "Kann %s nicht öffnen: %s"), "same placeholders");
    CHECK(!accepts("Help for command '%s' not found.", "Hilfe für Befehl '% nicht gefunden."),
          "mangled %%s");
    CHECK(!accepts("%d files in %.2f seconds", "%d Dateien in %.2- Sekunden"), "mangled %%.2f");
    CHECK(!accepts("%s of %d", "%d von %s"), "sequential directives swapped");
    CHECK(accepts("%1$s of %2$d", "%2$d von %1$s"), "numbered directives may move");
    CHECK(!accepts("Use --force to overwrite", "Verwenden Sie --exclude zum Überschreiben"),
          "option renamed");
    CHECK(!accepts("Open file", "%"), "junk");
    CHECK(!accepts("Open file", ""), "empty");
    CHECK(!accepts("Open file", "Datei %s öffnen"), "an extra placeholder");
    CHECK(accepts("<b>Bold</b> text", "<b>Fetter</b> Text"), "tags");
    CHECK(!accepts("<b>Bold</b> text", "<b>Fetter Text"), "a tag lost");

    /* repairs: every source placeholder exactly once, nothing else */
    check_assemble("Help for command '%s' not found.", "Hilfe für Befehl '% nicht gefunden.",
                   "Hilfe für Befehl '%s nicht gefunden.");
    check_assemble("%d files in %.2f seconds", "%d Dateien in %.2- Sekunden",
                   "%d Dateien in %.2f Sekunden");
    check_assemble("Cannot open %s", "Kann nicht öffnen", "Kann nicht öffnen %s");
    check_assemble("Cannot open %s.", "Kann nicht öffnen.", "Kann nicht öffnen %s.");
    check_assemble("%s: no such file", "keine solche Datei", "%s: keine solche Datei");
    check_assemble("%s of %d", "%d von %s", "%s von %d");
    check_assemble("Open file", "Datei %s öffnen", "Datei öffnen");
    /* whitespace and line breaks of the source are kept */
    check_assemble("\nCommand line:\n", "Kommandozeile:", "\nKommandozeile:\n");
    check_assemble("  Item  ", "Eintrag", "  Eintrag  ");
    /* accelerators come back */
    check_assemble("_Open", "Öffnen", "_Öffnen");
    check_assemble("_File", "Datei", "_Datei");
    check_assemble("&Save as", "Speichern unter", "&Speichern unter");
    check_assemble("_Save", "Datei speichern", "Datei _speichern");
    /* a wrapped paragraph is wrapped again to the source's width */
    check_assemble("aaaa bbbb\ncccc dddd\n", "eins zwei drei vier fünf",
                   "eins zwei\ndrei vier\nfünf\n");
}

#define LB "\xe2\x9f\xa6"
#define RB "\xe2\x9f\xa7"

/* the XLIFF placeholders of s, in order, as one string */
static void tags_of(const char *s, char *out, size_t n) {
    app_ph *ph = NULL;
    int k = 0;
    out[0] = '\0';
    if (app_ph_scan(s, &ph, &k) != MT_OK) return;
    for (int i = 0; i < k; i++)
        if (ph[i].kind == APP_PH_XLIFF)
            snprintf(out + strlen(out), n - strlen(out), "%.*s", (int)ph[i].len, s + ph[i].at);
    mt_free(ph);
}

/* XLIFF inline tags (⟦N⟧, app/formats/doc.h) stay out of the MT input and come
** back in the source's order whatever the MT does with the words */
static void test_xliff_tags(void) {
    check_ph(LB "1" RB "x", 0, 7, APP_PH_XLIFF);
    check_ph(LB "/12" RB, 0, 9, APP_PH_XLIFF);
    check_ph(LB "3/" RB, 0, 8, APP_PH_XLIFF);
    check_ph(LB LB "1" RB RB, 0, 0, 0); /* a doubled bracket is text */
    check_layout("Open the " LB "1" RB "selected" LB "/1" RB " file", "|Open the selected file|");
    check_layout("Error:" LB "2/" RB "Retry", "|Error: Retry|");
    check_layout("a " LB LB "b" RB RB " c", "|a " LB "b" RB " c|");
    check_assemble("Open the " LB "1" RB "selected" LB "/1" RB " file", "Die gewählte Datei öffnen",
                   "Die " LB "1" RB "gewählte" LB "/1" RB " Datei öffnen");
    check_assemble(LB "1/" RB, "x", LB "1/" RB);
    char *lit = assemble1("a " LB LB "b" RB RB " c", "a " LB "b" RB " c");
    CHECK(lit && !strcmp(lit, "a " LB LB "b" RB RB " c"), "literal brackets doubled again: '%s'",
          lit ? lit : "(null)");
    mt_free(lit);

    /* random nesting, MT that reverses the words: same tags, same order */
    srand(3);
    for (int t = 0; t < 500; t++) {
        char src[512] = "", mt[512] = "", want[256], got[256];
        int depth = 0, next = 1, open[16], words = 0;
        for (int j = 0; j < 10; j++) {
            int r = rand() % 4;
            char tmp[32];
            if (r == 0 && depth < 4) {
                open[depth++] = next;
                snprintf(tmp, sizeof tmp, LB "%d" RB, next++);
            } else if (r == 1 && depth > 0) {
                snprintf(tmp, sizeof tmp, LB "/%d" RB, open[--depth]);
            } else if (r == 2) {
                snprintf(tmp, sizeof tmp, LB "%d/" RB, next++);
            } else {
                snprintf(tmp, sizeof tmp, "%sw%d", j ? " " : "", words++);
            }
            strcat(src, tmp);
        }
        while (depth > 0) {
            char tmp[32];
            snprintf(tmp, sizeof tmp, LB "/%d" RB, open[--depth]);
            strcat(src, tmp);
        }
        strcat(src, " end");
        for (int w = words - 1; w >= 0; w--)
            snprintf(mt + strlen(mt), sizeof mt - strlen(mt), "W%d ", w);
        strcat(mt, "ENDE");
        char *out = assemble1(src, mt);
        tags_of(src, want, sizeof want);
        tags_of(out ? out : "", got, sizeof got);
        if (!CHECK(out && !strcmp(want, got), "tags of '%s' -> '%s'", src, out ? out : "(null)"))
            t = 500;
        mt_free(out);
    }
}

int main(void) {
    test_placeholders();
    test_layout();
    test_choice_and_repair();
    test_xliff_tags();
    TEST_MAIN_END();
}
