/* doc_common.h: the document fuzz targets' body (fuzz_po.c, fuzz_xliff.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "fuzz.h"
#include "mt.h"

/* Opens data as a document of format fmt; when it opens, reads every
** segment, changes two (a target set to its source, a state), saves to
** another file, and opens that again: a document we wrote must read back,
** else abort() (a finding, like a crash). */
static int fuzz_doc(const char *suffix, app_doc_format fmt, const uint8_t *data, size_t size) {
    fuzz_quiet();
    const char *path = fuzz_file(suffix, data, size);
    app_doc *d = NULL;
    if (path == NULL) return 0;
    mt_status orc = app_doc_open(path, fmt, &d);
    fuzz_note("document", orc);
    if (orc != MT_OK) return 0;
    int64_t n = app_doc_count(d);
    for (int64_t i = 0; i < n; i++) {
        const app_doc_segment *s = app_doc_segment_at(d, i);
        char *plain = NULL;
        if (app_doc_strip_tags(s->source, &plain) == MT_OK) mt_free(plain);
        for (int f = 0; f < s->n_targets && f < 4; f++)
            (void)app_doc_plural_examples(d, f);
    }
    if (n > 0) {
        const app_doc_segment *s = app_doc_segment_at(d, 0);
        char *src = mt_try_strdup(s->source);
        if (src != NULL) {
            (void)app_doc_set_target(d, 0, s->n_targets - 1, src, APP_DOC_STATE_CONFIRMED);
            mt_free(src);
        }
    }
    if (n > 1) (void)app_doc_set_state(d, n - 1, APP_DOC_STATE_DRAFT);
    char out_name[32];
    snprintf(out_name, sizeof out_name, "out%s", suffix);
    char out[512];
    snprintf(out, sizeof out, "%s", fuzz_out_path(out_name));
    mt_status rc = app_doc_save(d, out, app_doc_default_save_params());
    app_doc_free(d);
    if (rc != MT_OK) return 0; /* (out of memory, a full disk) */
    app_doc *again = NULL;
    rc = app_doc_open(out, fmt, &again);
    if (rc != MT_OK) {
        fprintf(stderr, "fuzz: the saved document does not read back: %s\n", mt_errmsg());
        abort();
    }
    if (app_doc_count(again) != n) {
        fprintf(stderr, "fuzz: %lld segments saved, %lld read back\n", (long long)n,
                (long long)app_doc_count(again));
        abort();
    }
    app_doc_free(again);
    return 0;
}
