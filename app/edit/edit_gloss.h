/*
** edit_gloss.h: the glossary in the editor (app/edit/edit_gloss.c): for
** each segment, the spans of its source that app/formats/glossary.h
** matches (the ui underlines them: ui_segment.terms) and the line that
** lists the term pairs under the source (ui_segment.terms_line):
**
**   Terms: file → Datei (the document kind) · save → speichern
**
** one pair per distinct source term and target, in source order, the note
** in parentheses; a line longer than APP_EDIT_GLOSS_LINE_MAX bytes ends
** with "…".
*/
#ifndef APP_EDIT_GLOSS_H
#define APP_EDIT_GLOSS_H
#include "glossary.h"
#include "ui.h"

#define APP_EDIT_GLOSS_LINE_MAX 1000

/* The spans (*spans, *n: one per occurrence, alternatives of one span
** once) and the terms line (*line; NULL when no term occurs) of source.
** Caller mt_free()s both.  g NULL: none.  MT_ERR_NOMEM. */
mt_status app_edit_gloss_terms(const app_glossary *g, const char *source, ui_span **spans,
                               int32_t *n, char **line);

#endif
