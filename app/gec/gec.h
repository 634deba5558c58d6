/*
** gec.h: grammatical error correction of German text with a noisy -> clean
** transformer (`mtpe gec`, the editor's GEC marks; app/gec/gec.c).
**
** Conservative by design.  For each line:
**   1. the model translates the line (noisy -> clean, beam search);
**   2. the hypothesis's edits against the line are found as the evaluation
**      counts them (gec_eval.h: maximal runs of word-level Levenshtein
**      differences);
**   3. an edit is dropped when it touches a protected token (gec_text.h:
**      placeholders %s %1$s {0} ${x}, tags <b>, entities &amp;, URLs,
**      numbers), adds one, or overlaps a span the caller protects
**      (glossary terms in the editor); and when it is not local: more
**      than APP_GEC_MAX_EDIT_WORDS words replaced or put in, or more than
**      APP_GEC_MAX_DELETE_WORDS words deleted (a model that cuts or
**      rewrites a sentence gains by the missing tokens, not by a fix);
**      and a word replaced by its own beginning, APP_GEC_MIN_CUT or more
**      bytes shorter ("Verkauf" -> "Verk": the same bias within a word;
**      typos fixed by a cut, "Dateii" -> "Datei", lose one or two);
**   4. each remaining edit alone is applied to the line and the result
**      force-decoded by the model (log P(candidate | line), summed over
**      the tokens with EOS, ensemble-weighted as `mtpe score`); the edit is
**      kept only when that beats the line's own forced score log P(line |
**      line) by more than the threshold (--gec-threshold, nats; default
**      2.0): a model that finds the line as likely as the correction
**      leaves it alone.
** The kept edits are the corrections (app_gec_fix); applying all of them
** gives the corrected line.  Whitespace outside the edits is kept as it
** was.
**
** Threads: an app_gec (models, vocabularies, translator) is read-only once
** opened and may be shared; each thread needs its own app_gec_worker.
*/
#ifndef APP_GEC_H
#define APP_GEC_H
#include <stdbool.h>
#include <stdint.h>

#include "mt.h"

#define APP_GEC_MAX_EDIT_WORDS 3
#define APP_GEC_MAX_DELETE_WORDS 2
#define APP_GEC_MIN_CUT 3

typedef struct app_gec_params {
    float threshold;    /* --gec-threshold: nats an edit must gain (2.0)   */
    int32_t beam_size;  /* -b (4)                                           */
    int32_t max_length; /* lines longer (tokens) are left as they are (200) */
} app_gec_params;
app_gec_params app_gec_default_params(void);

typedef struct app_gec app_gec;
typedef struct app_gec_worker app_gec_worker;

/* Loads n_models models (weights NULL: 1 each) with their two vocabularies
** (source, target; usually the same file).  Errors name the file. */
mt_status app_gec_open(const char *const *models, int n_models, const float *weights,
                       const char *const *vocabs, int n_vocabs, const app_gec_params *p,
                       app_gec **out);
/* Opens path: a folder holding model.npz and vocab.spm (assets/models/de-gec),
** or a model file with vocab.spm next to it. */
mt_status app_gec_open_path(const char *path, const app_gec_params *p, app_gec **out);
void app_gec_free(app_gec *g); /* NULL is a no-op */
mt_status app_gec_worker_init(const app_gec *g, app_gec_worker **out);
void app_gec_worker_free(app_gec_worker *w); /* NULL is a no-op */

/* One correction: bytes [at, at + len) of the line are to be replaced by
** with (len 0: inserted before byte at). */
typedef struct app_gec_fix {
    int32_t at, len;
    char *with;
    float gain; /* nats over the line's own score */
} app_gec_fix;

typedef struct app_gec_result {
    app_gec_fix *fixes; /* in order, not overlapping */
    int n_fixes;
} app_gec_result;
void app_gec_result_clear(app_gec_result *r); /* frees, zeroes */

/* A span of a line the corrections must not touch. */
typedef struct app_gec_keep {
    int32_t at, len;
} app_gec_keep;

/* Checks n lines (valid UTF-8; MT_ERR_INVALID otherwise) in one search;
** res[i] receives line i's corrections.  keep/n_keep (may be NULL): for
** each line the spans to leave alone.  cancel (may be NULL) is polled by
** the search: MT_ABORTED. */
mt_status app_gec_check(app_gec_worker *w, const char *const *lines, int n,
                        const app_gec_keep *const *keep, const int *n_keep, app_gec_result *res,
                        bool (*cancel)(void *), void *cancel_user);

/* The line with fixes applied (mt_malloc'd; NULL when out of memory). */
char *app_gec_apply(const char *line, const app_gec_fix *fixes, int n);

#endif
