/*
** tm_impl.h: private to db/ (and white-box tests): the tokens of the
** translation memory's scoring (tm_score.c), used by the lookup in store.c.
*/
#ifndef MT_TM_IMPL_H
#define MT_TM_IMPL_H
#include <stddef.h>
#include <stdint.h>

#include "mt_base.h"

typedef enum tm_tok_kind { TM_TOK_WORD = 0, TM_TOK_NUM, TM_TOK_PH, TM_TOK_PUNCT } tm_tok_kind;

typedef struct tm_tok {
    int32_t start, len; /* bytes of the text                                  */
    int kind;           /* tm_tok_kind                                        */
    uint64_t key;       /* hash of the key: lower-case word, one per class    */
} tm_tok;

typedef struct tm_tokens {
    const char *text; /* not owned */
    tm_tok *v;
    int32_t n, cap;
} tm_tokens;

/* Longest index term kept, in bytes. */
#define TM_TERM_MAX 64

/* Tokens of s (store_tm.h); t->text points to s.  MT_ERR_NOMEM. */
mt_status tm_tokenize(const char *s, tm_tokens *t);
void tm_tokens_free(tm_tokens *t);
/* Hard edits and soft differences between two token sequences. */
mt_status tm_distance(const tm_tokens *a, const tm_tokens *b, int32_t *hard, int32_t *soft);
/* store_tm_score on tokenized texts; -1 when out of memory. */
int tm_score_tokens(const char *query, const tm_tokens *q, const char *source, const tm_tokens *s,
                    int32_t *hard, int32_t *soft);
/* Each index term of the word tokens, in order, repeats included. */
int tm_each_term(const tm_tokens *t, int (*fn)(void *user, const char *term, size_t len),
                 void *user);

#endif
