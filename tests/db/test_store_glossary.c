/*
** test_store_glossary.c: the glossary of the store (db/store_glossary.h):
** adding in one transaction (a bad entry writes nothing), re-adding adds 0,
** projects (a named project sees its own and the global entries, not other
** projects'), the language filter by primary subtag, count, delete, clear.
*/
#include <string.h>

#include "harness.h"
#include "mt_base.h"
#include "store.h"
#include "store_glossary.h"

typedef struct seen {
    char rows[16][128];
    int n;
} seen;

static int collect(void *user, const store_gloss_entry *e) {
    seen *s = user;
    if (s->n < 16)
        snprintf(s->rows[s->n++], sizeof s->rows[0], "%s|%s|%s|%s|%d", e->project, e->source,
                 e->target, e->note, e->case_sensitive);
    return 0;
}

static seen list(store *s, const char *project, bool with_global, const char *sl, const char *tl) {
    seen r = {0};
    store_gloss_filter f = {project, with_global, sl, tl};
    CHECK_STATUS(store_glossary_list(s, &f, collect, &r));
    return r;
}

static int64_t count(store *s, const char *project, bool with_global) {
    int64_t n = -1;
    store_gloss_filter f = {project, with_global, NULL, NULL};
    CHECK_STATUS(store_glossary_count(s, &f, &n));
    return n;
}

static int get_id(void *u, const store_gloss_entry *x) {
    *(int64_t *)u = x->id;
    return 0;
}

static void test_lang_match(void) {
    CHECK(store_glossary_lang_match("en", "en-US"), "en takes en-US");
    CHECK(store_glossary_lang_match("en-US", "en"), "en-US takes en");
    CHECK(store_glossary_lang_match("EN_us", "en-US"), "case and _ ignored");
    CHECK(!store_glossary_lang_match("en-US", "en-GB"), "en-US does not take en-GB");
    CHECK(!store_glossary_lang_match("en", "de"), "en does not take de");
    CHECK(!store_glossary_lang_match("de", "dex"), "primary subtag compared whole");
    CHECK(store_glossary_lang_match("", "fr") && store_glossary_lang_match("de", ""),
          "'' matches anything");
}

static void test_store(void) {
    store *s = NULL;
    CHECK_STATUS(store_open(":memory:", &s));
    if (s == NULL) return;
    store_gloss_entry e[] = {
        {.project = "",
         .src_lang = "en",
         .tgt_lang = "de",
         .source = "file",
         .target = "Datei",
         .note = "global"},
        {.project = "p",
         .src_lang = "en-US",
         .tgt_lang = "de",
         .source = "save",
         .target = "speichern",
         .case_sensitive = true},
        {.project = "q", .src_lang = "en", .tgt_lang = "de", .source = "save", .target = "sichern"},
        {.project = "p",
         .src_lang = "fr",
         .tgt_lang = "de",
         .source = "fichier",
         .target = "Datei"},
    };
    int32_t added = -1;
    CHECK_STATUS(store_glossary_add(s, e, 4, &added));
    CHECK(added == 4, "4 new, got %d", added);
    CHECK_STATUS(store_glossary_add(s, e, 4, &added));
    CHECK(added == 0, "adding again: 0 new, got %d", added);
    /* a different note does not make another entry: the key is the pair */
    store_gloss_entry again = e[0];
    again.note = "other";
    CHECK_STATUS(store_glossary_add(s, &again, 1, &added));
    CHECK(added == 0, "same pair, other note: 0 new, got %d", added);
    CHECK(count(s, NULL, false) == 4, "4 rows in all");

    /* a batch with one bad entry writes nothing */
    store_gloss_entry bad[2] = {
        {.project = "p", .source = "new", .target = "neu"},
        {.project = "p", .source = "", .target = "leer"},
    };
    mt_status rc = store_glossary_add(s, bad, 2, &added);
    CHECK(rc == MT_ERR_INVALID, "empty source refused: %s", mt_status_str(rc));
    CHECK(count(s, NULL, false) == 4, "nothing written by the refused batch");

    /* project p with the global ones, en -> de: file (global) then save */
    seen r = list(s, "p", true, "en", "de");
    CHECK(r.n == 2, "p sees 2 en entries, got %d", r.n);
    CHECK(r.n == 2 && !strcmp(r.rows[0], "|file|Datei|global|0") &&
              !strcmp(r.rows[1], "p|save|speichern||1"),
          "p's rows: %s / %s", r.rows[0], r.n > 1 ? r.rows[1] : "");
    /* p without the languages filter: also the French entry */
    r = list(s, "p", true, NULL, NULL);
    CHECK(r.n == 3, "p sees 3 in all languages, got %d", r.n);
    /* own only */
    r = list(s, "p", false, "en", NULL);
    CHECK(r.n == 1 && !strcmp(r.rows[0], "p|save|speichern||1"), "p own en: %d", r.n);
    /* q does not see p's */
    r = list(s, "q", true, "en", "de");
    CHECK(r.n == 2 && !strcmp(r.rows[1], "q|save|sichern||0"), "q: %d rows", r.n);
    /* the global project alone */
    r = list(s, "", true, NULL, NULL);
    CHECK(r.n == 1 && !strcmp(r.rows[0], "|file|Datei|global|0"), "global: %d rows", r.n);
    /* en-GB filter does not take en-US, takes en */
    r = list(s, "p", true, "en-GB", "de");
    CHECK(r.n == 1, "en-GB sees the en entry only, got %d", r.n);

    /* clear p: q's and the global entries stay */
    int64_t del = -1;
    CHECK_STATUS(store_glossary_clear(s, "p", &del));
    CHECK(del == 2, "2 of p deleted, got %lld", (long long)del);
    CHECK(count(s, NULL, false) == 2, "2 left");
    CHECK(count(s, "q", true) == 2, "q still sees 2");

    /* delete one by id */
    int64_t id = 0;
    store_gloss_filter f = {"q", false, NULL, NULL};
    CHECK_STATUS(store_glossary_list(s, &f, get_id, &id));
    CHECK(id > 0, "q's entry has an id");
    CHECK_STATUS(store_glossary_delete(s, id));
    CHECK(store_glossary_delete(s, id) == MT_ERR_NOTFOUND, "deleted twice: not found");
    CHECK(count(s, "q", false) == 0, "q empty");
    store_close(s);
}

int main(int argc, char **argv) {
    TEST_MAIN_BEGIN(argc, argv);
    test_lang_match();
    test_store();
    TEST_MAIN_END();
}
