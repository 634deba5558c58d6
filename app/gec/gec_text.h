/*
** gec_text.h: the text helpers that the GEC modules share (noise.c,
** gec.c, gec_eval.c): UTF-8 to code points and back, the case of the
** letters German uses, and the shape of a whitespace-separated token
** (which tokens are words that may be changed and which are protected).
*/
#ifndef APP_GEC_TEXT_H
#define APP_GEC_TEXT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when s[0..n) is valid UTF-8 (no overlong forms, no surrogates, at
** most U+10FFFF); else false with *bad the offset of the first bad byte. */
bool gec_utf8_valid(const char *s, size_t n, size_t *bad);
/* Decodes valid UTF-8 s[0..n) into cp (room for n code points); returns
** how many. */
int gec_utf8_decode(const char *s, size_t n, uint32_t *cp);
/* Encodes cp[0..n) into out (room for 4 n bytes + 1), NUL-terminated;
** returns the bytes written without the NUL. */
int gec_utf8_encode(const uint32_t *cp, int n, char *out);

/* Letters: ASCII, Latin-1 (but × ÷) and Latin Extended-A/B (to U+024F). */
bool gec_is_letter(uint32_t c);
bool gec_is_upper(uint32_t c);
/* Simple case mapping for ASCII, Latin-1 and Latin Extended-A (pairs);
** others unchanged. */
uint32_t gec_lower(uint32_t c);
uint32_t gec_upper(uint32_t c);
bool gec_text_eq(const uint32_t *a, int na, const uint32_t *b, int nb);

/* A token's shape: lead and trail punctuation code points (see noise.h for
** the set), and whether the core between them is a plain word (letters and
** inner hyphens only; an empty core is plain: bare punctuation). */
typedef struct gec_token_shape {
    int lead, trail;
    bool plain;
} gec_token_shape;
gec_token_shape gec_token_shape_of(const uint32_t *cp, int n);

/* Whether the UTF-8 token s[0..n) (no whitespace) must never be changed:
** it is not a plain word as above (a placeholder %s %1$s {0} ${x}, a tag
** <b>, an entity &amp;, a URL, a number...). */
bool gec_token_protected(const char *s, size_t n);

#endif
