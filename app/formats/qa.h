/*
** qa.h: quality checks of a translation against its source (issue 29),
** run when a segment is confirmed, by `:qa` and before `:w`.
**
** Errors are what `msgfmt --check` rejects in a PO file, so a document
** with none of them compiles:
**   - begin/end line breaks: the msgid starts (ends) with '\n' and a
**     msgstr does not, or the other way round;
**   - c-format (flag "c-format"): the msgstr is not a valid C format
**     string, or its directives differ from the msgid's (argument count,
**     or the type of an argument: %d vs %s, %ld vs %d);
**   - python-format: the same for Python's %-directives (%(name)s or %s);
**   - kde-format: KDE's %1..%99, the same set of numbers.
** A plural entry's msgstr[0] is compared with the msgid, the others with
** msgid_plural.  msgstr[0] may leave out arguments when the entry has
** plural forms (gettext allows it for a form used for one number, such as
** "one file" for n = 1); every other form needs all of them.
**
** Warnings, for every format: placeholders of app/formats/anatomy.h that the
** translation lacks or adds (tags, {name}, options, URLs, ...), leading
** or trailing blanks that differ, numbers of the source missing from the
** translation, a word written twice in a row, an accelerator ('_' or
** '&') lost or doubled; a glossary source term of the source (app/formats/
** glossary.h, when in->glossary is set) whose target term is not in the
** translation ("glossary: 'file' -> 'Datei' is not in the translation";
** of several targets of one term, any one will do).
*/
#ifndef APP_QA_H
#define APP_QA_H
#include <stdbool.h>

#include "mt.h"

typedef enum app_qa_level {
    APP_QA_WARNING = 1,
    APP_QA_ERROR = 2, /* msgfmt --check rejects the file */
} app_qa_level;

typedef struct app_qa_issue {
    app_qa_level level;
    char msg[240];
} app_qa_issue;

typedef struct app_qa_input {
    const char *source;        /* msgid                                    */
    const char *source_plural; /* msgid_plural or NULL                     */
    const char *flags;         /* PO flags ("c-format, no-wrap") or NULL   */
    bool po;                   /* the PO checks (line breaks, formats)     */
    /* glossary terms to check (app/formats/glossary.h); NULL: none */
    const struct app_glossary *glossary;
} app_qa_input;

#define APP_QA_MAX 8

/* Checks translation form `form` (0 unless plural) text against in; fills
** up to APP_QA_MAX issues, errors first, and returns how many.  An empty
** text has no issues (it is untranslated). */
int app_qa_check(const app_qa_input *in, int form, const char *text, app_qa_issue *out);

/* Validates a C format string as msgfmt does; NULL when valid, else the
** reason (static text).  Exposed for tests. */
const char *app_qa_c_format_error(const char *s);

#endif
