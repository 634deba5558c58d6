/*
** gec_eval.h: edit-level scoring of grammatical error correction, as the
** M2 scorer and ERRANT count it (`mtpe gec eval`, scripts/bench-gec.sh).
**
** Sentences are split into words at whitespace.  The edits that turn a
** source S into a text T come from a word-level Levenshtein alignment
** (match 0, substitution, insertion, deletion 1 each; among equal-cost
** paths the backtrace prefers a match, then a substitution, then a
** deletion, then an insertion, so the result is deterministic): every
** maximal run of non-matching operations is one edit, the triple (start,
** end, replacement) with [start, end) the source words it replaces
** (start == end: an insertion) and replacement the words put there,
** joined by single spaces ("" for a deletion).  Two edits are the same
** when all three parts are equal.
**
** Over a corpus of (source, hypothesis, reference) lines: TP = edits in
** both hypothesis and reference, FP = hypothesis only, FN = reference
** only; precision TP / (TP + FP) (1 when the hypothesis made no edit),
** recall TP / (TP + FN) (1 when the reference has none), F0.5 =
** 1.25 P R / (0.25 P + R).  Lines whose source has the same words as the
** reference (whitespace aside) are the "clean" lines: the fraction of them
** whose hypothesis has the same words as the source is reported as
** clean_kept (over-correction); a noisy line whose hypothesis has the
** reference's words counts as noisy_fixed.
*/
#ifndef APP_GEC_EVAL_H
#define APP_GEC_EVAL_H
#include <stdint.h>

#include "mt.h"

typedef struct app_gec_edit {
    int32_t start, end; /* source words [start, end)                     */
    char *rep;          /* the replacement words joined by ' ' (mt_free) */
} app_gec_edit;

/* The edits from src to tgt, into *out (mt_malloc'd array, n into *n);
** free with app_gec_edits_free.  MT_ERR_NOMEM. */
mt_status app_gec_edits(const char *src, const char *tgt, app_gec_edit **out, int *n);
void app_gec_edits_free(app_gec_edit *e, int n);

typedef struct app_gec_counts {
    int64_t tp, fp, fn;
    int64_t lines, clean_lines, clean_kept; /* clean: source == reference    */
    int64_t noisy_lines, noisy_fixed;       /* noisy: hypothesis == reference */
} app_gec_counts;

/* Adds one line's counts.  MT_ERR_NOMEM. */
mt_status app_gec_count(app_gec_counts *c, const char *src, const char *hyp, const char *ref);

typedef struct app_gec_scores {
    double precision, recall, f05, clean_kept; /* clean_kept: 1 with no clean line */
} app_gec_scores;
app_gec_scores app_gec_score(const app_gec_counts *c);

#endif
