/*
** store_tm.h: the translation memory (TM) of the store.
**
** The TM is every confirmed segment (status STORE_SEG_CONFIRMED) of every
** document in the store: segments confirmed in the editor, translated
** entries of the files the editor opened, and the entries of imported
** memories (store_tm_import: documents whose origin is STORE_ORIGIN_TM_IMPORT).
** A segment edited again after its confirmation leaves the TM until it is
** confirmed again.
**
** TM source: the text a segment translates.  A PO plural entry is stored
** as one segment per form, each with the msgid as its source, the
** msgid_plural as plural_source and its form number: form 0 translates the
** msgid, forms 1.. the msgid_plural.  Lookups, matches, the index terms,
** store_tm_list (`mtpe tm export`) and the fine-tuning and corpus rows of
** store.h (store_list_confirmed, store_export_confirmed, ...) all use this
** source, so "Delete %d file" finds only the singular's translation and
** "Delete %d files" the plural forms'.
**
** Fuzzy score (store_tm_score), as CAT tools compute it, on tokens:
**
**   tokens    placeholders (printf %s %1$d %-5.2f, Python %(name)s, {0}
**             {name}, XML/HTML tags <b> </b> <br/>, $VAR ${VAR}, the
**             editor's ⟦1⟧ ⟦/1⟧ ⟦2/⟧), numbers (1, 3.5, 1,000), words (runs
**             of letters and digits, with inner ' ’ - _; each CJK character
**             is a word), and every other non-space character on its own.
**             White space separates tokens and is not one.
**   key       a word's key is its lower-case form; every number has the same
**             key, every placeholder too; punctuation is its own key.
**   distance  Levenshtein over the token sequences: inserting, deleting or
**             replacing a token whose key differs costs one "hard" edit;
**             aligning two tokens with the same key but different text (case,
**             another number, another placeholder) costs one "soft"
**             difference.  The alignment with the fewest hard edits, then
**             the fewest soft differences, counts.
**   score     100 only when the texts are identical byte for byte.
**             No hard edit: 100 - min(max(soft, 1), 5), i.e. 95..99 (a
**             difference only in white space gives 99).
**             Else, with L = the longer token count:
**             floor(100 * (L - hard) / L) - min(soft, 5), at least 0.
**   bands     100, 95-99, 85-94, 75-84 (store_tm_band).
**
** In-context exact (ICE): an exact match (identical source) whose document
** has, around it, the same previous and next sources as the query's
** neighbours.  It ranks above a plain 100 and is reported as score 101
** (STORE_TM_ICE), so that sorting by score puts it first and a text output
** shows it as one number.
**
** Lookup (store_tm_lookup) finds candidates through the TM index (schema
** version 3, see schema.c): an FTS5 table over the index terms of every
** confirmed source (its words' letter-and-digit runs, lower-case) and a
** table of each term's document frequency.  The query's terms are taken
** rarest first until any source scoring at least min_score must contain one
** of them (a prefix filter: a source sharing none of those terms has too
** few tokens in common with the query); their postings (and those of the
** next rarest terms, while the postings stay under a budget) are counted,
** weighted by rarity, and the best STORE_TM_CANDIDATES candidates and every
** identical source are scored exactly in C.  The filter is exact as long as
** the required terms' postings stay under STORE_TM_POSTINGS_CAP; beyond
** that (a query made only of very common words in a huge TM) a match can
** be missed.  Queries with too few words to use the index (only numbers,
** placeholders, punctuation) find identical sources only.
*/
#ifndef MT_STORE_TM_H
#define MT_STORE_TM_H
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STORE_TM_ICE 101              /* score of an in-context exact match */
#define STORE_TM_CANDIDATES 200       /* candidates scored exactly per lookup */
#define STORE_TM_POSTINGS_CAP 300000  /* postings read per lookup, at most */
#define STORE_TM_POSTINGS_EXTRA 20000 /* optional postings read for ranking */

/* The numeric values are stored in the database: never renumber them. */
typedef enum store_origin {
    STORE_ORIGIN_EDITOR = 0,    /* a document opened in the editor */
    STORE_ORIGIN_TM_IMPORT = 1, /* a memory imported by `mtpe tm import` */
} store_origin;

/* --------------------------------------------------------------- scoring */

/* Fuzzy score of a TM source against the query text, 0..100 (header). */
int store_tm_score(const char *query, const char *source);

/* The band a score falls in: 101 (ICE), 100, 95, 85, 75, or 0 below 75. */
int store_tm_band(int score);

typedef enum store_tm_diff_kind {
    STORE_TM_DIFF_SOFT = 0,    /* same key, other text: case, number, placeholder */
    STORE_TM_DIFF_CHANGED = 1, /* replaced by another token                       */
    STORE_TM_DIFF_EXTRA = 2,   /* on this side only (inserted or deleted)         */
} store_tm_diff_kind;

/* A differing token: byte offset and length in its text. */
typedef struct store_tm_span {
    int32_t start, len;
    store_tm_diff_kind kind;
} store_tm_span;

/* The tokens that differ between query and source under the alignment the
** score uses: *q_spans (n_q) in the query, *s_spans (n_s) in the source, in
** text order, each token by itself (adjacent ones are not merged).  The
** arrays are mt_free()d by the caller (NULL when empty).  MT_ERR_NOMEM. */
mt_status store_tm_diff(const char *query, const char *source, store_tm_span **q_spans,
                        int32_t *n_q, store_tm_span **s_spans, int32_t *n_s);

/* The index terms of a text as a JSON array of distinct strings, in order
** of first occurrence (what schema version 3 stores in segment.tm_terms).
** Caller mt_free()s; NULL when out of memory. */
char *store_tm_terms_json(const char *text);

/* ---------------------------------------------------------------- lookup */

typedef struct store_tm_query {
    const char *source;     /* the text to translate                            */
    const char *prev;       /* source of the segment before it, "" when it is the
                               first; NULL: unknown (no in-context exact match)  */
    const char *next;       /* after it, "" when it is the last; NULL: unknown   */
    int min_score;          /* 0..100; matches below are left out               */
    int max_results;        /* >= 1                                             */
    int64_t exclude_seg_id; /* a segment not to return (the one being edited); 0: none */
} store_tm_query;

typedef struct store_tm_match {
    int score;          /* STORE_TM_ICE, or 0..100 */
    int32_t hard, soft; /* hard edits and soft differences (score's inputs) */
    int64_t seg_id, doc_id;
    int32_t index; /* segment index in its document */
    const char *source, *target;
    const char *doc_path;
    store_origin origin;
} store_tm_match;
typedef int (*store_tm_match_fn)(void *user, const store_tm_match *m);

/* The matches of a query, best first: score, then fewer hard edits, then
** fewer soft differences, then the most recently changed segment.  A pair
** (source, target) is reported once (its best-scoring segment).
** MT_ERR_INVALID for a NULL source or out-of-range limits. */
mt_status store_tm_lookup(store *s, const store_tm_query *q, store_tm_match_fn fn, void *user);

/* -------------------------------------------------------- import, export */

/* Imports a memory as a document of origin STORE_ORIGIN_TM_IMPORT whose
** segments are all confirmed (their status is ignored; a segment without a
** target is MT_ERR_INVALID), in one transaction.  When an imported
** document with the same content hash exists, nothing is written: MT_OK,
** *doc_id its id and *already true. */
mt_status store_tm_import(store *s, const store_doc_info *info, const store_segment_in *segs,
                          int32_t n, int64_t *doc_id, bool *already);

typedef struct store_tm_row {
    const char *source, *target;
    const char *src_lang, *tgt_lang;
    store_format format; /* of the document it came from (first one)  */
    int64_t updated_ms;  /* the newest of its segments                 */
} store_tm_row;
typedef int (*store_tm_row_fn)(void *user, const store_tm_row *r);

/* Every distinct (source, target, languages) of the TM, in the order of
** their first segment. */
mt_status store_tm_list(store *s, store_tm_row_fn fn, void *user);

typedef struct store_tm_stats {
    int64_t segments, words, documents; /* the whole TM (documents with one or more) */
    int64_t imported_segments, imported_words, imported_documents;
    int64_t editor_segments, editor_words; /* confirmed in the editor (store_confirm) */
    int64_t opened_segments, opened_words; /* translated in files the editor opened   */
    int64_t terms;                         /* distinct index terms                    */
} store_tm_stats;
mt_status store_tm_get_stats(store *s, store_tm_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* MT_STORE_TM_H */
