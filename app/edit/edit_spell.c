/*
** edit_spell.c: the spell checker of spell.h behind the editor's hooks
** (edit_spell.h).  ui/ gets the misspelled words as ui_span byte
** ranges of the field and the suggestions as '\n'-ended lines.
*/
#include "edit_spell.h"

#include <stdio.h>
#include <string.h>

static app_spell *checker;
static char why[512] = "spell checking is not available";

mt_status app_edit_spell_open(store *st, const char *lang) {
    app_edit_spell_close();
    if (lang == NULL || lang[0] == '\0') {
        snprintf(why, sizeof why, "spell checking off: the document has no target language");
        return MT_OK;
    }
    mt_status rc = app_spell_open(lang, st, &checker);
    if (rc == MT_ERR_NOMEM) return rc;
    if (rc != MT_OK) {
        checker = NULL;
        snprintf(why, sizeof why, "%s", mt_errmsg());
    }
    return MT_OK;
}

app_spell *app_edit_spell_checker(void) { return checker; }

void app_edit_spell_close(void) {
    app_spell_free(checker);
    checker = NULL;
}

static int spell(void *user, int64_t seg, const char *text, ui_span *out, int max) {
    (void)user, (void)seg;
    if (checker == NULL) {
        mt_seterr(MT_ERR_NOTFOUND, "%s", why);
        return -1;
    }
    app_spell_span sp[256];
    if (max > 256) max = 256;
    int n = app_spell_check(checker, text, sp, max);
    if (n < 0) return 0; /* out of memory: nothing marked this time */
    for (int i = 0; i < n && i < max; i++)
        out[i] = (ui_span){(int32_t)sp[i].at, (int32_t)sp[i].len};
    return n;
}

static int suggest(void *user, const char *word, char *buf, size_t n) {
    (void)user;
    if (checker == NULL) return -1;
    char *s[9];
    int k = app_spell_suggest(checker, word, s, 9), got = 0;
    size_t o = 0;
    if (n) buf[0] = '\0';
    for (int i = 0; i < k; i++) {
        size_t l = strlen(s[i]);
        if (o + l + 2 <= n) {
            memcpy(buf + o, s[i], l);
            buf[o + l] = '\n';
            o += l + 1;
            buf[o] = '\0';
            got++;
        }
        mt_free(s[i]);
    }
    return got;
}

static mt_status add(void *user, const char *word) {
    (void)user;
    if (checker == NULL) return mt_seterr(MT_ERR_NOTFOUND, "%s", why);
    return app_spell_add(checker, word);
}

void app_edit_spell_set_hooks(ui_hooks *h) {
    h->spell = spell;
    h->spell_suggest = suggest;
    h->spell_add = add;
}
