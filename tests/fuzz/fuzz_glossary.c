/*
** fuzz_glossary.c: glossary files (app_glossary_parse, app/formats/
** glossary.c: TBX over libxml2, CSV, TSV), each input read as each format,
** and the entries read then matched against the input itself (the matcher's
** tokenizer and index on arbitrary terms).  Seeds: tests/fuzz/seeds/glossary.
*/
#include <libxml/parser.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "glossary.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int init;
    if (!init) xmlInitParser();
    init = 1;
    fuzz_quiet();
    char *text = fuzz_cstr(data, size);
    if (text == NULL) return 0;
    static const app_gloss_format fmts[] = {APP_GLOSS_AUTO, APP_GLOSS_TBX, APP_GLOSS_CSV,
                                            APP_GLOSS_TSV};
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        app_gloss_list l;
        mt_status rc = app_glossary_parse("fuzz", text, size, fmts[f], "en", "de", &l, NULL);
        if (f == 0) fuzz_note("glossary", rc);
        if (rc != MT_OK) continue;
        app_glossary *g = NULL;
        if (app_glossary_new(l.v, l.n, &g) == MT_OK) {
            app_gloss_match *m = NULL;
            int32_t n = 0;
            if (app_glossary_match(g, text, &m, &n) == MT_OK)
                for (int32_t i = 0; i < n; i++) {
                    const app_gloss_entry *e = app_glossary_entry(g, m[i].entry);
                    (void)app_glossary_target_present(text, e->target, e->case_sensitive);
                }
            mt_free(m);
            app_glossary_free(g);
        }
        app_gloss_list_free(&l);
    }
    free(text);
    return 0;
}
