/*
** noise.h: synthetic errors in clean German text, the training data of the
** grammatical error correction model (`mtpe gec noise`, app/cmd_gec.c;
** scripts/make-gec-data.sh).
**
** A line is split into whitespace-separated tokens.  A token is "plain"
** when, after stripping leading and trailing punctuation ( ) [ ] " ' , . ;
** : ! ? and » « „ “ ” ‚ ‘ ’ … – —, what remains (its core) is made of
** letters (ASCII, Latin-1 and Latin Extended-A/B) and inner hyphens only.
** Every other token (placeholders %s %1$s {0} ${x}, tags <b>, entities
** &amp;, URLs, e-mail addresses, numbers, anything with a digit) is
** protected: never changed, moved, merged or dropped.
**
** The kinds of errors (app_noise_kind), each applied to a randomly chosen
** plain token or pair of tokens:
**   keyboard   a letter replaced by a neighbour on the German QWERTZ
**              keyboard (case kept)
**   drop       a letter dropped (words of 3+ letters)
**   double     a letter doubled
**   umlaut     ä ö ü Ä Ö Ü written ae oe ue Ae Oe Ue (or a o u A O U), ß as ss
**   case       a capitalised word (noun) lowercased, or the sentence's
**              first word lowercased
**   suffix     an ending -e -en -em -er -es replaced by another of them
**   split      a long word (9+ letters) split in two (a compound written
**              apart: "Dateimanager" -> "Datei Manager")
**   merge      two words written together ("Datei öffnen" -> "Dateiöffnen")
**   swap       two neighbouring words swapped
**   dropword   a word dropped (lines of 3+ tokens)
**   comma      a comma after a word dropped, or one added
**   period     the final period dropped
**
** A fraction `clean` of the lines stays unchanged (the model learns to
** copy); the others get max(1, rate x words) errors (the fraction rounded
** at random).  Everything depends only on (seed, line number, text):
** the same call gives the same output on every machine.  Whitespace between
** tokens is kept as it was.
*/
#ifndef APP_GEC_NOISE_H
#define APP_GEC_NOISE_H
#include <stdint.h>

#include "mt.h"

typedef enum app_noise_kind {
    APP_NOISE_KEYBOARD = 0,
    APP_NOISE_DROP,
    APP_NOISE_DOUBLE,
    APP_NOISE_UMLAUT,
    APP_NOISE_CASE,
    APP_NOISE_SUFFIX,
    APP_NOISE_SPLIT,
    APP_NOISE_MERGE,
    APP_NOISE_SWAP,
    APP_NOISE_DROPWORD,
    APP_NOISE_COMMA,
    APP_NOISE_PERIOD,
    APP_NOISE_N_KINDS
} app_noise_kind;

#define APP_NOISE_ALL ((1u << APP_NOISE_N_KINDS) - 1u)

/* "keyboard", "drop", ... as in the list above. */
const char *app_noise_kind_name(app_noise_kind k);
/* A comma-separated list of names -> bit mask (1u << kind); "all" is every
** kind.  MT_ERR_INVALID naming an unknown name. */
mt_status app_noise_parse_kinds(const char *list, uint32_t *mask);

typedef struct app_noise_params {
    uint64_t seed;  /* --seed (1)                                           */
    double rate;    /* errors per word of a noisy line (0.08); >= 1 each    */
    double clean;   /* fraction of lines left unchanged (0.25)              */
    uint32_t kinds; /* the kinds used, bits (1u << kind) (APP_NOISE_ALL)    */
} app_noise_params;
app_noise_params app_noise_default_params(void);

/* The noisy version of text, line number `line` of its input (any number;
** it seeds the line's random generator together with p->seed), into *out
** (mt_malloc'd, the caller frees with mt_free).  *applied (may be NULL)
** receives the bits of the kinds that fired (0: the line was left clean,
** or no kind could apply).  text must be valid UTF-8 without '\n'
** (MT_ERR_INVALID otherwise).  Its small buffers come from mt_xmalloc:
** running out of memory aborts. */
mt_status app_noise_line(const app_noise_params *p, uint64_t line, const char *text, char **out,
                         uint32_t *applied);

#endif
