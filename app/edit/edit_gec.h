/*
** edit_gec.h: grammar checking of the editor's field (`mtpe edit --gec
** MODEL`; app/edit/edit_gec.c): the GEC model of app/gec/gec.h behind
** ui_hooks.gec_request.  Requests go to one worker thread of their own
** (a newer request replaces a waiting one and cancels a running search),
** so keys never wait; results come back through ui_post_gec().  Glossary
** target terms of the document's target language (from the store) and
** placeholders/tags (gec.h) are never changed.  One editor per process:
** the state is kept here and the hook ignores its user pointer.
*/
#ifndef APP_EDIT_GEC_H
#define APP_EDIT_GEC_H
#include "gec.h"
#include "store.h"
#include "ui.h"

/* Loads the GEC model at path (a folder with model.npz and vocab.spm, or a
** model file with vocab.spm next to it; app_gec_open_path), reads the
** glossary target terms of lang from st and starts the worker.  Errors
** name the file. */
mt_status app_edit_gec_open(const char *path, const app_gec_params *p, store *st, const char *lang);
/* Sets h->gec_request when a model is open. */
void app_edit_gec_set_hooks(ui_hooks *h);
/* Stops the worker (waits for a running check) and frees the model. */
void app_edit_gec_close(void);
/* For tests: the spans of text (*n) that the glossary protects. */
mt_status app_edit_gec_keep_spans(const char *text, app_gec_keep **out, int *n);

#endif
