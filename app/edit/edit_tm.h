/*
** edit_tm.h: translation memory matches shown with the MT alternatives of
** the editor (app/edit/edit_tm.c).
*/
#ifndef APP_EDIT_TM_H
#define APP_EDIT_TM_H
#include "edit_session.h"

/* At most this many TM matches above the MT alternatives. */
#define APP_EDIT_TM_MAX 3

typedef struct app_edit_tm app_edit_tm;

/* Opens a second connection to the store at db_path for the lookups; doc
** (the editor's segments, not owned, must outlive t) gives each segment's
** source and neighbours; doc_path is the document's path as stored (its own
** segment is never offered; NULL: none left out).  inner receives
** everything, the MT results with the matches added. */
mt_status app_edit_tm_open(const char *db_path, const char *doc_path, const ui_document *doc,
                           app_edit_sink inner, app_edit_tm **out);
/* The wrapping sink (user = t). */
app_edit_sink app_edit_tm_sink(app_edit_tm *t);
/* Posts the MT last posted for seg again with the matches of now (the
** translator moved there; a segment confirmed since may match).  Nothing
** when seg has had no MT yet (its MT comes with the matches).  NULL: no-op. */
void app_edit_tm_refresh(app_edit_tm *t, int64_t seg);
void app_edit_tm_free(app_edit_tm *t); /* NULL is a no-op */

#endif
