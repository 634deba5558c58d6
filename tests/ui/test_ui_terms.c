/*
** test_ui_terms.c: the glossary fields of ui_segment (ui/ui.h): ed_init
** copies the term spans and the terms line, keeping the spans that lie in
** the source in order and dropping the others (overlapping, empty, past the
** end), so that app/ cannot make the source pane draw outside its text.
*/
#include <string.h>

#include "editor.h"
#include "harness.h"

static void test_copy(void) {
    /* "Open the file manager" (21 bytes): Open 0-3, file manager 9-20 */
    static const ui_span spans[] = {
        {0, 4},  /* Open                          */
        {2, 3},  /* overlaps Open: dropped        */
        {9, 12}, /* file manager                  */
        {20, 0}, /* empty: dropped                */
        {18, 5}, /* past the end: dropped         */
    };
    ui_segment segs[2] = {
        {.source = "Open the file manager",
         .status = UI_SEG_NEW,
         .terms = spans,
         .n_terms = 5,
         .terms_line = "Terms: open \xe2\x86\x92 \xc3\xb6"
                       "ffnen"},
        {.source = "No terms", .status = UI_SEG_NEW},
    };
    ui_document doc = {.title = "t.po", .segs = segs, .n_segs = 2};
    ui_editor *ed = NULL;
    CHECK_STATUS(ed_init(NULL, &doc, &ed));
    if (ed == NULL) return;
    const ed_seg *s = &ed->segs[0];
    CHECK(s->n_terms == 2, "2 spans kept, got %d", (int)s->n_terms);
    CHECK(s->n_terms == 2 && s->terms[0].start == 0 && s->terms[0].len == 4 &&
              s->terms[1].start == 9 && s->terms[1].len == 12,
          "Open and file manager kept");
    CHECK(s->terms_line && s->terms_line != segs[0].terms_line &&
              !strcmp(s->terms_line, segs[0].terms_line),
          "terms line copied");
    CHECK(ed->segs[1].terms == NULL && ed->segs[1].n_terms == 0 && ed->segs[1].terms_line == NULL,
          "a segment without terms has none");
    ed_free(ed);
}

int main(int argc, char **argv) {
    TEST_MAIN_BEGIN(argc, argv);
    test_copy();
    TEST_MAIN_END();
}
