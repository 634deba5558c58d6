/*
** lex.h: the lexical table of an aligned corpus (reference/marian-compat.md
** §7), the input of `mtpe shortlist` (models/shortlist.h loads the result).
**
** Lexical table (extract_lex, marian-nmt/extract-lex).  Per sentence pair and
** per alignment link i-j, c(s_i, t_j) += 1.  A source word without any link
** adds c(s, NULL) += 1, a target word without any link c(NULL, t) += 1 (links
** outside the sentence are reported and skipped; repeated links count again).
**   lex.s2t:  "t s P(t|s)"   P(t|s) = c(s,t) / sum_t' c(s,t')
**   lex.t2s:  "s t P(s|t)"   P(s|t) = c(s,t) / sum_s' c(s',t)
** NULL is the word "NULL" (a corpus token "NULL" is the same word, as in
** extract_lex).  The quotient is computed in float as extract_lex does and
** printed with 7 decimals ("%.7f").  extract_lex prints in the order of its
** string pointers; here lines are sorted bytewise by the conditioning word,
** then by the other word.  (extract_lex keeps counts in float, which stop
** growing past 2^24; counts here are doubles.)
**
*/
#ifndef APP_LEX_H
#define APP_LEX_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mt.h"

/* ------------------------------------------------ lexical table (extract) */

typedef struct app_lex app_lex;

mt_status app_lex_init(app_lex **out);
void app_lex_free(app_lex *lx); /* NULL is a no-op */
/* Adds one sentence pair with its Pharaoh alignment line (no line ends).  Links
** outside the sentence are skipped with a warning naming line_no.  MT_ERR_FORMAT
** for a malformed alignment line. */
mt_status app_lex_add(app_lex *lx, const char *src, size_t src_len, const char *trg, size_t trg_len,
                      const char *align, size_t align_len, int64_t line_no);
int64_t app_lex_skipped_links(const app_lex *lx);

typedef struct app_lex_entry {
    const char *given; /* conditioning word: source for s2t, target for t2s */
    const char *word;  /* predicted word                                     */
    float prob;        /* P(word | given)                                    */
} app_lex_entry;

/* All entries, sorted by given then word (bytewise).  The strings live as long as
** lx and until the next app_lex_add.  *out: mt_free. */
mt_status app_lex_entries(const app_lex *lx, bool s2t, app_lex_entry **out, int64_t *n);
/* Writes lex.s2t ("word given prob" = "t s P(t|s)") or lex.t2s ("s t P(s|t)"). */
mt_status app_lex_write(const app_lex *lx, bool s2t, const char *path);
/* Reads three line-aligned files (plain or gzip) into a new table. */
mt_status app_lex_from_files(const char *src_path, const char *trg_path, const char *align_path,
                             app_lex **out);

#endif
