/*
** test_gec.c: the GEC noise model (app/gec/noise.c), the edit extraction
** and scoring of `mtpe gec eval` (app/gec/gec_eval.c) and the applying of
** fixes (app_gec_apply), without a model:
**   - each kind of noise fires alone on a sentence where it applies, with
**     the change it should make (checked by property: one letter replaced
**     by a QWERTZ neighbour, one dropped, ...);
**   - placeholders, tags, entities, URLs and numbers come through every
**     seed unchanged and in order; the output is always valid UTF-8;
**   - the same seed gives the same output, another seed another one;
**     about `clean` of the lines stay unchanged; invalid UTF-8 is refused;
**   - edits from word alignment on hand-made pairs, and precision, recall,
**     F0.5 and clean-kept computed by hand for a small corpus.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gec.h"
#include "gec_eval.h"
#include "gec_text.h"
#include "harness.h"
#include "noise.h"

static char *noise1(app_noise_kind k, uint64_t seed, const char *text, uint32_t *got) {
    app_noise_params p = app_noise_default_params();
    p.seed = seed;
    p.clean = 0;
    p.rate = 0; /* one error */
    p.kinds = 1u << k;
    char *out = NULL;
    mt_status rc = app_noise_line(&p, 0, text, &out, got);
    CHECK(rc == MT_OK, "noise %s: %s", app_noise_kind_name(k), mt_errmsg());
    return out;
}

static int n_cp(const char *s) {
    uint32_t buf[512];
    return gec_utf8_decode(s, strlen(s), buf);
}

static int n_tokens(const char *s) {
    int n = 0;
    for (const char *p = s; *p;) {
        while (*p == ' ')
            p++;
        if (!*p) break;
        n++;
        while (*p && *p != ' ')
            p++;
    }
    return n;
}

/* s without spaces and lower-cased (ASCII and Latin-1) into out. */
static void squash(const char *s, char *out) {
    uint32_t cp[512], o[512];
    int n = gec_utf8_decode(s, strlen(s), cp), k = 0;
    for (int i = 0; i < n; i++)
        if (cp[i] != ' ') o[k++] = gec_lower(cp[i]);
    gec_utf8_encode(o, k, out);
}

static bool neighbours(uint32_t a, uint32_t b) {
    static const char *const rows[3] = {"qwertzuiop\xC3\xBC", "asdfghjkl\xC3\xB6\xC3\xA4",
                                        "yxcvbnm"};
    uint32_t r[3][12];
    int len[3];
    for (int y = 0; y < 3; y++)
        len[y] = gec_utf8_decode(rows[y], strlen(rows[y]), r[y]);
    a = gec_lower(a), b = gec_lower(b);
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < len[y]; x++) {
            if (r[y][x] != a) continue;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int yy = y + dy, xx = x + dx;
                    if ((dx || dy) && yy >= 0 && yy < 3 && xx >= 0 && xx < len[yy] &&
                        r[yy][xx] == b)
                        return true;
                }
        }
    return false;
}

static void test_kinds(void) {
    const char *s = "Die Konfigurationsdatei wurde gestern gespeichert, aber nicht geladen.";
    uint32_t got = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        /* keyboard: same length, one code point replaced by a neighbour key */
        char *o = noise1(APP_NOISE_KEYBOARD, seed, s, &got);
        uint32_t a[128], b[128];
        int na = gec_utf8_decode(s, strlen(s), a), nb = gec_utf8_decode(o, strlen(o), b), diff = 0;
        CHECK(got == 1u << APP_NOISE_KEYBOARD && na == nb, "keyboard: %s", o);
        for (int i = 0; i < na && na == nb; i++)
            if (a[i] != b[i]) {
                diff++;
                CHECK(neighbours(a[i], b[i]), "keyboard: %s: not neighbours", o);
                CHECK(gec_is_upper(a[i]) == gec_is_upper(b[i]), "keyboard keeps case: %s", o);
            }
        CHECK(diff == 1, "keyboard: %d changes in %s", diff, o);
        mt_free(o);

        o = noise1(APP_NOISE_DROP, seed, s, &got);
        CHECK(got && n_cp(o) == n_cp(s) - 1 && n_tokens(o) == n_tokens(s), "drop: %s", o);
        mt_free(o);

        o = noise1(APP_NOISE_DOUBLE, seed, s, &got);
        CHECK(got && n_cp(o) == n_cp(s) + 1 && n_tokens(o) == n_tokens(s), "double: %s", o);
        mt_free(o);

        o = noise1(APP_NOISE_CASE, seed, s, &got);
        CHECK(got && (!strcmp(o, "die Konfigurationsdatei wurde gestern gespeichert, aber nicht "
                                 "geladen.") ||
                      !strcmp(o, "Die konfigurationsdatei wurde gestern gespeichert, aber nicht "
                                 "geladen.")),
              "case: %s", o);
        mt_free(o);

        o = noise1(APP_NOISE_SPLIT, seed, s, &got);
        char x[512], y[512];
        squash(o, x), squash(s, y);
        CHECK(got && n_tokens(o) == n_tokens(s) + 1 && !strcmp(x, y), "split: %s", o);
        mt_free(o);

        o = noise1(APP_NOISE_MERGE, seed, s, &got);
        squash(o, x);
        CHECK(got && n_tokens(o) == n_tokens(s) - 1 && !strcmp(x, y), "merge: %s", o);
        mt_free(o);

        o = noise1(APP_NOISE_SWAP, seed, s, &got);
        squash(o, x);
        CHECK(got && n_tokens(o) == n_tokens(s) && strcmp(o, s) && n_cp(o) == n_cp(s), "swap: %s",
              o);
        mt_free(o);

        o = noise1(APP_NOISE_DROPWORD, seed, s, &got);
        CHECK(got && n_tokens(o) == n_tokens(s) - 1, "dropword: %s", o);
        mt_free(o);

        o = noise1(APP_NOISE_COMMA, seed, s, &got);
        int commas = 0;
        for (const char *p = o; *p; p++)
            commas += *p == ',';
        CHECK(got && (commas == 0 || commas == 2) && n_tokens(o) == n_tokens(s), "comma: %s", o);
        mt_free(o);

        o = noise1(APP_NOISE_PERIOD, seed, s, &got);
        CHECK(got && !strcmp(o, "Die Konfigurationsdatei wurde gestern gespeichert, aber nicht "
                                "geladen"),
              "period: %s", o);
        mt_free(o);

        /* umlauts: ö -> oe or o, ß -> ss */
        const char *u = "Die Größe ändert sich";
        o = noise1(APP_NOISE_UMLAUT, seed, u, &got);
        CHECK(got && (!strcmp(o, "Die Groeße ändert sich") ||
                      !strcmp(o, "Die Groß"
                                 "e ändert sich") ||
                      !strcmp(o, "Die Grösse ändert sich") ||
                      !strcmp(o, "Die Größe aendert sich") || !strcmp(o, "Die Größe andert sich")),
              "umlaut: %s", o);
        mt_free(o);

        /* suffixes: one of -e -en -em -er -es replaced by another */
        const char *f = "einen kleinen Fehler";
        o = noise1(APP_NOISE_SUFFIX, seed, f, &got);
        bool okf = false;
        const char *ends[5] = {"e", "en", "em", "er", "es"};
        char cand[128];
        for (int w = 0; w < 3 && !okf; w++)
            for (int e = 0; e < 5 && !okf; e++) {
                const char *words[3] = {"ein", "klein", "Fehl"};
                const char *orig_end[3] = {"en", "en", "er"};
                if (!strcmp(ends[e], orig_end[w])) continue;
                snprintf(cand, sizeof cand, "%s%s %s%s %s%s", words[0], w == 0 ? ends[e] : "en",
                         words[1], w == 1 ? ends[e] : "en", words[2], w == 2 ? ends[e] : "er");
                okf = !strcmp(o, cand);
            }
        CHECK(got && okf, "suffix: %s", o);
        mt_free(o);
    }
    /* a kind that cannot apply changes nothing */
    char *o = noise1(APP_NOISE_UMLAUT, 1, "Keine Umlaute hier", &got);
    CHECK(got == 0 && !strcmp(o, "Keine Umlaute hier"), "umlaut without umlauts: %s", o);
    mt_free(o);
}

static void test_protected(void) {
    const char *s = "Die Datei %s wurde in {0} nach ${HOME} <b>gespeichert</b> &amp; "
                    "https://example.org/a 42 mal %1$s kopiert, Größe: 3,5 MB.";
    const char *prot[] = {
        "%s", "{0}",  "${HOME}", "<b>gespeichert</b>", "&amp;", "https://example.org/a",
        "42", "%1$s", "3,5"};
    int np = (int)(sizeof prot / sizeof prot[0]), bad = 0, changed = 0, invalid = 0;
    app_noise_params p = app_noise_default_params();
    p.clean = 0;
    p.rate = 0.5;
    for (uint64_t seed = 0; seed < 400; seed++) {
        p.seed = seed;
        char *o = NULL;
        if (app_noise_line(&p, seed, s, &o, NULL) != MT_OK) {
            bad++;
            continue;
        }
        changed += strcmp(o, s) != 0;
        size_t e = 0;
        if (!gec_utf8_valid(o, strlen(o), &e)) invalid++;
        /* each protected token, as a whole token, in order */
        const char *at = o;
        for (int i = 0; i < np; i++) {
            const char *q = strstr(at, prot[i]);
            if (!q) {
                if (bad++ < 3) fprintf(stderr, "lost %s: %s\n", prot[i], o);
                break;
            }
            at = q + strlen(prot[i]);
        }
        mt_free(o);
    }
    CHECK(bad == 0, "%d outputs lost or moved a protected token", bad);
    CHECK(invalid == 0, "%d outputs are not valid UTF-8", invalid);
    CHECK(changed >= 390, "only %d of 400 noisy outputs differ from the input", changed);
}

static void test_determinism(void) {
    const char *s[3] = {"Die Datei konnte nicht geöffnet werden.",
                        "Möchten Sie die Änderungen speichern, bevor Sie das Programm beenden?",
                        "Wählen Sie einen Ordner für die Sicherung aus."};
    app_noise_params p = app_noise_default_params();
    p.clean = 0;
    int differ = 0;
    for (int i = 0; i < 3; i++)
        for (uint64_t line = 0; line < 30; line++) {
            char *a = NULL, *b = NULL, *c = NULL;
            p.seed = 7;
            app_noise_line(&p, line, s[i], &a, NULL);
            app_noise_line(&p, line, s[i], &b, NULL);
            p.seed = 8;
            app_noise_line(&p, line, s[i], &c, NULL);
            CHECK(a && b && !strcmp(a, b), "same seed, different outputs: %s / %s", a, b);
            differ += a && c && strcmp(a, c) != 0;
            mt_free(a), mt_free(b), mt_free(c);
        }
    CHECK(differ >= 60, "seeds 7 and 8 agree on %d of 90 lines", 90 - differ);

    /* the clean fraction */
    p = app_noise_default_params();
    int kept = 0;
    for (uint64_t line = 0; line < 2000; line++) {
        char *a = NULL;
        app_noise_line(&p, line, s[line % 3], &a, NULL);
        kept += a && !strcmp(a, s[line % 3]);
        mt_free(a);
    }
    CHECK(kept >= 420 && kept <= 580, "%d of 2000 lines unchanged (clean 0.25: about 500)", kept);

    char *o = NULL;
    CHECK(app_noise_line(&p, 0, "Gr\xC3\xB6\xC3", &o, NULL) == MT_ERR_INVALID && o == NULL,
          "invalid UTF-8 refused");
    CHECK(app_noise_line(&p, 0, "a\xC0\x80", &o, NULL) == MT_ERR_INVALID, "overlong refused");
    uint32_t m = 0;
    CHECK(app_noise_parse_kinds("umlaut,case", &m) == MT_OK &&
              m == ((1u << APP_NOISE_UMLAUT) | (1u << APP_NOISE_CASE)),
          "parse kinds");
    CHECK(app_noise_parse_kinds("umlaut,nope", &m) == MT_ERR_INVALID, "unknown kind refused");
}

/* The edits of src -> tgt as "start end rep|..." */
static void edits_str(const char *src, const char *tgt, char *buf, size_t n) {
    app_gec_edit *e = NULL;
    int ne = 0;
    buf[0] = '\0';
    if (app_gec_edits(src, tgt, &e, &ne) != MT_OK) {
        snprintf(buf, n, "error");
        return;
    }
    size_t o = 0;
    for (int i = 0; i < ne; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%d %d %s", i ? "|" : "", e[i].start, e[i].end,
                              e[i].rep);
    app_gec_edits_free(e, ne);
}

static void test_edits(void) {
    static const struct {
        const char *src, *tgt, *want;
    } cases[] = {
        {"a b c", "a b c", ""},
        {"a b c", "a x c", "1 2 x"},
        {"a b c", "a c", "1 2 "},
        {"a c", "a b c", "1 1 b"},
        {"a b", "a b c", "2 2 c"},
        {"a b", "x a b", "0 0 x"},
        {"b a", "a b", "0 2 a b"}, /* a swap: two substitutions, one edit */
        {"Die Datei Manager öffnet", "Der Dateimanager öffnet", "0 3 Der Dateimanager"},
        {"ich habe das Datei gesehn", "ich habe die Datei gesehen", "2 3 die|4 5 gesehen"},
        {"", "a", "0 0 a"},
        {"a", "", "0 1 "},
        {"  a   b ", "a b", ""}, /* whitespace is not a word */
    };
    char got[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        edits_str(cases[i].src, cases[i].tgt, got, sizeof got);
        CHECK(!strcmp(got, cases[i].want), "edits '%s' -> '%s': got '%s', want '%s'", cases[i].src,
              cases[i].tgt, got, cases[i].want);
    }
    /* scoring, by hand:
    **   line 1: ref edits (1,2,X) (4,5,Y); hyp edits (0,1,Z) (4,5,Y): tp 1 fp 1 fn 1
    **   line 2: clean (src = ref), hyp changes b: fp 1, clean not kept
    **   line 3: clean, kept
    ** tp 1, fp 2, fn 1: P = 1/3, R = 1/2,
    ** F0.5 = 1.25 (1/3)(1/2) / (0.25/3 + 1/2) = 0.2083333 / 0.5833333 = 0.3571429,
    ** clean kept 1/2. */
    app_gec_counts c = {0};
    CHECK(app_gec_count(&c, "w1 w2 w3 w4 w5", "Z w2 w3 w4 Y", "w1 X w3 w4 Y") == MT_OK, "count");
    CHECK(app_gec_count(&c, "a b", "a c", "a b") == MT_OK, "count");
    CHECK(app_gec_count(&c, "a b", "a b", "a b") == MT_OK, "count");
    CHECK(c.tp == 1 && c.fp == 2 && c.fn == 1, "tp %lld fp %lld fn %lld", (long long)c.tp,
          (long long)c.fp, (long long)c.fn);
    CHECK(c.clean_lines == 2 && c.clean_kept == 1 && c.noisy_lines == 1 && c.noisy_fixed == 0,
          "clean lines %lld kept %lld", (long long)c.clean_lines, (long long)c.clean_kept);
    app_gec_scores s = app_gec_score(&c);
    CHECK_CLOSE(s.precision, 1.0 / 3, 1e-9, 0, "precision");
    CHECK_CLOSE(s.recall, 0.5, 1e-9, 0, "recall");
    CHECK_CLOSE(s.f05, 0.35714285714, 1e-9, 0, "F0.5");
    CHECK_CLOSE(s.clean_kept, 0.5, 1e-9, 0, "clean kept");
    /* nothing proposed, nothing to find: precision and recall 1 */
    app_gec_counts z = {0};
    app_gec_count(&z, "a", "a", "a");
    s = app_gec_score(&z);
    CHECK(s.precision == 1 && s.recall == 1 && s.clean_kept == 1, "empty counts");
}

static void test_apply(void) {
    app_gec_fix f[3] = {{4, 6, "Datei", 0}, {15, 0, "nicht ", 0}, {22, 1, "", 0}};
    /*                 0123456789012345678901234 */
    const char *line = "Die Dateii ist gut und .";
    char *o = app_gec_apply(line, f, 3);
    CHECK(o && !strcmp(o, "Die Datei ist nicht gut und."), "apply: %s", o);
    mt_free(o);
    o = app_gec_apply(line, NULL, 0);
    CHECK(o && !strcmp(o, line), "apply nothing: %s", o);
    mt_free(o);
}

int main(int argc, char **argv) {
    TEST_MAIN_BEGIN(argc, argv);
    test_kinds();
    test_protected();
    test_determinism();
    test_edits();
    test_apply();
    TEST_MAIN_END();
}
