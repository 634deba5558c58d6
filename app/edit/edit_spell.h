/*
** edit_spell.h: spell checking of the editor's field (app/edit/edit_spell.c):
** the checker of spell.h behind ui_hooks.spell, .spell_suggest and
** .spell_add.  One editor per process: the checker is kept here, and the
** hooks ignore their user pointer (the ctl's).
*/
#ifndef APP_EDIT_SPELL_H
#define APP_EDIT_SPELL_H
#include "spell.h"
#include "store.h"
#include "ui.h"

/* Opens the checker of lang (the document's target language) with the
** personal dictionary and glossary of st (not owned; must stay open until
** app_edit_spell_close).  Without a dictionary for lang (or any failure to
** open one) spell checking is off: MT_OK all the same, and the spell hook
** answers -1 with the reason, which the editor shows once. */
mt_status app_edit_spell_open(store *st, const char *lang);
/* Sets h->spell, h->spell_suggest and h->spell_add. */
void app_edit_spell_set_hooks(ui_hooks *h);
/* The open checker (NULL: off), e.g. for tests. */
app_spell *app_edit_spell_checker(void);
void app_edit_spell_close(void);

#endif
