/*
** tm_score.c: tokens, fuzzy scores, differences and index terms of the
** translation memory (rules in store_tm.h).  Pure functions on UTF-8 text;
** the lookup that uses them is in store.c.
*/
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mt_base.h"
#include "store_tm.h"
#include "tm_impl.h"

/* ----------------------------------------------------------- characters */

/* Decodes one UTF-8 sequence at s[i] (n bytes in all); *len gets its length.
** A malformed byte reads as U+FFFD, one byte long. */
static uint32_t cp_at(const char *s, size_t i, size_t n, size_t *len) {
    uint32_t c;
    *len = mt_utf8_decode(s + i, n - i, &c);
    return c;
}

static bool cp_space(uint32_t c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0d) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200b) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
           c == 0x205f || c == 0x3000 || c == 0xfeff;
}

static bool cp_cjk(uint32_t c) {
    return (c >= 0x3040 && c <= 0x30ff) || (c >= 0x3400 && c <= 0x4dbf) ||
           (c >= 0x4e00 && c <= 0x9fff) || (c >= 0xf900 && c <= 0xfaff) ||
           (c >= 0x20000 && c <= 0x3ffff);
}

static bool ascii_alnum(uint32_t c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Letters and digits as far as words go: ASCII ones and the non-ASCII
** characters outside the punctuation and symbol blocks. */
static bool cp_wordy(uint32_t c) {
    if (c < 0x80) return ascii_alnum(c);
    if (c < 0xc0) return c == 0xaa || c == 0xb5 || c == 0xba;
    if (c == 0xd7 || c == 0xf7 || c == 0xfffd) return false;
    if (c >= 0x2000 && c <= 0x2bff) return false; /* punctuation, symbols, arrows, math */
    if (c >= 0x2e00 && c <= 0x2e7f) return false;
    if (c >= 0x3000 && c <= 0x303f) return false;
    if (c >= 0xfe30 && c <= 0xfe4f) return false;
    if (c >= 0xff00 && c <= 0xff0f) return false;
    if ((c >= 0xff1a && c <= 0xff20) || (c >= 0xff3b && c <= 0xff40) ||
        (c >= 0xff5b && c <= 0xff65))
        return false;
    if (c >= 0x1f000 && c <= 0x1faff) return false; /* emoji */
    return !cp_space(c);
}

/* Characters that SQLite's unicode61 tokenizer certainly keeps inside a
** token (letters of the Latin, Greek, Cyrillic, Hebrew, Arabic scripts,
** kana, CJK, Hangul): index terms are made of these only, so that each is
** one FTS5 token. */
static bool cp_term(uint32_t c) {
    if (c < 0x80) return ascii_alnum(c);
    if (c >= 0xc0 && c <= 0x24f) return c != 0xd7 && c != 0xf7;
    if (c >= 0x386 && c <= 0x3ff) return c != 0x387 && c != 0x3f6;
    if (c >= 0x400 && c <= 0x481) return true;
    if (c >= 0x48a && c <= 0x52f) return true;
    if (c >= 0x5d0 && c <= 0x5ea) return true;
    if (c >= 0x620 && c <= 0x64a) return true;
    if (c >= 0x3041 && c <= 0x3096) return true;
    if (c >= 0x30a1 && c <= 0x30fa) return true;
    if (c >= 0x4e00 && c <= 0x9fff) return true;
    if (c >= 0xac00 && c <= 0xd7a3) return true;
    return false;
}

/* Lower case for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic. */
static uint32_t cp_lower(uint32_t c) {
    if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    if (c >= 0xc0 && c <= 0xde && c != 0xd7) return c + 32;
    if (c >= 0x100 && c <= 0x17f) {
        if (c == 0x130) return 'i';
        if (c == 0x178) return 0xff;
        bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e);
        if (c == 0x138 || c == 0x149 || c == 0x17f) return c;
        if (odd_upper) return (c & 1) ? c + 1 : c;
        return (c & 1) ? c : c + 1;
    }
    if (c >= 0x391 && c <= 0x3a9 && c != 0x3a2) return c + 32;
    if (c >= 0x410 && c <= 0x42f) return c + 32;
    if (c >= 0x400 && c <= 0x40f) return c + 80;
    return c;
}

/* --------------------------------------------------------- placeholders */

static bool is_ascii_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Length of a printf or Python %-placeholder at s (s[0] == '%'), 0 if none.
** The space flag is not accepted ("50% done" holds no placeholder). */
static size_t printf_len(const char *s) {
    size_t i = 1;
    if (s[i] == '%') return 2;
    if (s[i] == '(') { /* %(name)s */
        size_t j = i + 1;
        while (s[j] && s[j] != ')' && j < 64 &&
               (is_ascii_alpha(s[j]) || is_digit(s[j]) || s[j] == '_'))
            j++;
        if (s[j] != ')' || j == i + 1) return 0;
        i = j + 1;
    } else {
        size_t j = i; /* %1$s */
        while (is_digit(s[j]))
            j++;
        if (j > i && s[j] == '$') i = j + 1;
    }
    while (s[i] && strchr("-+#0'", s[i]))
        i++;
    while (is_digit(s[i]) || s[i] == '*')
        i++;
    if (s[i] == '.') {
        i++;
        while (is_digit(s[i]) || s[i] == '*')
            i++;
    }
    while (s[i] && strchr("hlLqjzt", s[i]))
        i++;
    if (s[i] && strchr("diouxXeEfFgGaAcspn@", s[i])) return i + 1;
    return 0;
}

/* {0}, {name}, {0:d}: no space inside, at most 64 bytes. */
static size_t brace_len(const char *s) {
    size_t i = 1;
    while (s[i] && i < 64 &&
           (is_ascii_alpha(s[i]) || is_digit(s[i]) || strchr("_.:,#-", s[i]) != NULL))
        i++;
    return s[i] == '}' && i > 1 ? i + 1 : 0;
}

/* <b>, </b>, <br/>, <a href="x">: a name right after '<', no '<' inside,
** at most 256 bytes. */
static size_t tag_len(const char *s) {
    size_t i = 1;
    if (s[i] == '/') i++;
    if (!is_ascii_alpha(s[i])) return 0;
    while (s[i] && s[i] != '>' && s[i] != '<' && s[i] != '\n' && i < 256)
        i++;
    return s[i] == '>' ? i + 1 : 0;
}

/* $VAR, ${VAR} */
static size_t dollar_len(const char *s) {
    size_t i = 1;
    if (s[1] == '{') {
        i = 2;
        while (is_ascii_alpha(s[i]) || is_digit(s[i]) || s[i] == '_')
            i++;
        return s[i] == '}' && i > 2 ? i + 1 : 0;
    }
    if (!is_ascii_alpha(s[1]) && s[1] != '_') return 0;
    while (is_ascii_alpha(s[i]) || is_digit(s[i]) || s[i] == '_')
        i++;
    return i;
}

/* The editor's ⟦1⟧ ⟦/1⟧ ⟦2/⟧ (U+27E6 ... U+27E7, UTF-8 e2 9f a6 / a7). */
static size_t bracket_len(const char *s) {
    if (strncmp(s, "\xe2\x9f\xa6", 3) != 0 || strncmp(s + 3, "\xe2\x9f\xa6", 3) == 0) return 0;
    const char *end = strstr(s + 3, "\xe2\x9f\xa7");
    if (end == NULL || end - s > 64) return 0;
    return (size_t)(end - s) + 3;
}

/* ----------------------------------------------------------- tokenizer */

static mt_status tok_push(tm_tokens *t, tm_tok k) {
    if (t->n == t->cap) {
        int32_t cap = t->cap ? t->cap * 2 : 32;
        tm_tok *v = mt_try_realloc(t->v, (size_t)cap * sizeof *v);
        if (v == NULL) return mt_seterr(MT_ERR_NOMEM, "TM: out of memory tokenizing");
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n++] = k;
    return MT_OK;
}

void tm_tokens_free(tm_tokens *t) {
    mt_free(t->v);
    memset(t, 0, sizeof *t);
}

/* Hash of the lower-case form of s[a..b). */
static uint64_t lower_hash(const char *s, size_t a, size_t b) {
    uint64_t h = MT_FNV1A_INIT;
    char buf[4];
    size_t l;
    for (size_t i = a; i < b; i += l) {
        uint32_t c = cp_lower(cp_at(s, i, b, &l));
        h = mt_fnv1a(h, buf, mt_utf8_encode(c, buf));
    }
    return h;
}

mt_status tm_tokenize(const char *s, tm_tokens *t) {
    memset(t, 0, sizeof *t);
    t->text = s;
    size_t n = strlen(s), i = 0, l;
    static const uint64_t num_key = 0x6e756d6265720001ull, ph_key = 0x706c616365000002ull;
    while (i < n) {
        uint32_t c = cp_at(s, i, n, &l);
        if (cp_space(c)) {
            i += l;
            continue;
        }
        tm_tok k = {.start = (int32_t)i};
        size_t len = 0;
        if (c == '%')
            len = printf_len(s + i);
        else if (c == '{')
            len = brace_len(s + i);
        else if (c == '<')
            len = tag_len(s + i);
        else if (c == '$')
            len = dollar_len(s + i);
        else if (c == 0x27e6)
            len = bracket_len(s + i);
        if (len > 0) {
            k.kind = TM_TOK_PH;
            k.key = ph_key;
        } else if (cp_cjk(c)) {
            len = l;
            k.kind = TM_TOK_WORD;
            k.key = lower_hash(s, i, i + l);
        } else if (cp_wordy(c)) {
            /* a run of letters and digits with inner ' ’ - _ */
            size_t j = i + l;
            bool digits_only = c < 0x80 && is_digit((char)c);
            for (;;) {
                size_t l2;
                if (j >= n) break;
                uint32_t d = cp_at(s, j, n, &l2);
                if (cp_wordy(d) && !cp_cjk(d)) {
                    if (!(d < 0x80 && is_digit((char)d))) digits_only = false;
                    j += l2;
                    continue;
                }
                bool inner = d == '\'' || d == 0x2019 || d == '-' || d == '_' ||
                             (digits_only && (d == '.' || d == ','));
                if (!inner || j + l2 >= n) break;
                size_t l3;
                uint32_t e = cp_at(s, j + l2, n, &l3);
                if (!cp_wordy(e) || cp_cjk(e)) break;
                if (digits_only && (d == '.' || d == ',') && !(e < 0x80 && is_digit((char)e)))
                    break;
                if (digits_only && !(d == '.' || d == ',')) digits_only = false;
                j += l2;
            }
            len = j - i;
            if (digits_only) {
                k.kind = TM_TOK_NUM;
                k.key = num_key;
            } else {
                k.kind = TM_TOK_WORD;
                k.key = lower_hash(s, i, j);
            }
        } else {
            len = l;
            k.kind = TM_TOK_PUNCT;
            k.key = mt_fnv1a(MT_FNV1A_INIT ^ 0x5a, s + i, l);
        }
        k.len = (int32_t)len;
        mt_status rc = tok_push(t, k);
        if (rc != MT_OK) {
            tm_tokens_free(t);
            return rc;
        }
        i += len;
    }
    return MT_OK;
}

static bool same_text(const tm_tokens *a, int32_t i, const tm_tokens *b, int32_t j) {
    const tm_tok *x = &a->v[i], *y = &b->v[j];
    return x->len == y->len && memcmp(a->text + x->start, b->text + y->start, (size_t)x->len) == 0;
}

/* Cost of aligning token i of a with token j of b. */
#define HARD ((int64_t)1 << 24)
static int64_t sub_cost(const tm_tokens *a, int32_t i, const tm_tokens *b, int32_t j) {
    if (a->v[i].key != b->v[j].key || a->v[i].kind != b->v[j].kind) return HARD;
    return same_text(a, i, b, j) ? 0 : 1;
}

/* ----------------------------------------------------------------- score */

static int score_from(int64_t hard, int64_t soft, int32_t n_a, int32_t n_b) {
    if (hard == 0) return 100 - (int)(soft < 1 ? 1 : soft > 5 ? 5 : soft);
    int64_t L = n_a > n_b ? n_a : n_b;
    int64_t sc = (100 * (L - hard)) / L - (soft > 5 ? 5 : soft);
    return sc < 0 ? 0 : (int)sc;
}

mt_status tm_distance(const tm_tokens *a, const tm_tokens *b, int32_t *hard, int32_t *soft) {
    int32_t n = a->n, m = b->n;
    int64_t *row = mt_try_malloc(sizeof(int64_t) * (size_t)(m + 1) * 2);
    if (row == NULL) return mt_seterr(MT_ERR_NOMEM, "TM: out of memory scoring");
    int64_t *prev = row, *cur = row + m + 1;
    for (int32_t j = 0; j <= m; j++)
        prev[j] = (int64_t)j * HARD;
    for (int32_t i = 1; i <= n; i++) {
        cur[0] = (int64_t)i * HARD;
        for (int32_t j = 1; j <= m; j++) {
            int64_t best = prev[j - 1] + sub_cost(a, i - 1, b, j - 1);
            if (prev[j] + HARD < best) best = prev[j] + HARD;
            if (cur[j - 1] + HARD < best) best = cur[j - 1] + HARD;
            cur[j] = best;
        }
        int64_t *tmp = prev;
        prev = cur;
        cur = tmp;
    }
    int64_t d = prev[m];
    mt_free(row);
    *hard = (int32_t)(d / HARD);
    *soft = (int32_t)(d % HARD);
    return MT_OK;
}

int tm_score_tokens(const char *query, const tm_tokens *q, const char *source, const tm_tokens *s,
                    int32_t *hard, int32_t *soft) {
    int32_t h = 0, so = 0;
    if (strcmp(query, source) == 0) {
        if (hard) *hard = 0;
        if (soft) *soft = 0;
        return 100;
    }
    if (tm_distance(q, s, &h, &so) != MT_OK) return -1;
    if (hard) *hard = h;
    if (soft) *soft = so;
    if (q->n == 0 && s->n == 0) return 99; /* white space only, differently */
    return score_from(h, so, q->n, s->n);
}

int store_tm_score(const char *query, const char *source) {
    if (query == NULL || source == NULL) return 0;
    if (strcmp(query, source) == 0) return 100;
    tm_tokens q, s;
    if (tm_tokenize(query, &q) != MT_OK) return 0;
    if (tm_tokenize(source, &s) != MT_OK) {
        tm_tokens_free(&q);
        return 0;
    }
    int sc = tm_score_tokens(query, &q, source, &s, NULL, NULL);
    tm_tokens_free(&q);
    tm_tokens_free(&s);
    return sc < 0 ? 0 : sc;
}

int store_tm_band(int score) {
    if (score >= STORE_TM_ICE) return STORE_TM_ICE;
    if (score >= 100) return 100;
    if (score >= 95) return 95;
    if (score >= 85) return 85;
    if (score >= 75) return 75;
    return 0;
}

/* ------------------------------------------------------------------ diff */

static mt_status span_push(store_tm_span **v, int32_t *n, int32_t *cap, const tm_tok *t,
                           store_tm_diff_kind kind) {
    if (*n == *cap) {
        int32_t c = *cap ? *cap * 2 : 8;
        store_tm_span *nv = mt_try_realloc(*v, (size_t)c * sizeof *nv);
        if (nv == NULL) return mt_seterr(MT_ERR_NOMEM, "TM: out of memory diffing");
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = (store_tm_span){t->start, t->len, kind};
    return MT_OK;
}

static void reverse(store_tm_span *v, int32_t n) {
    for (int32_t i = 0, j = n - 1; i < j; i++, j--) {
        store_tm_span t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

mt_status store_tm_diff(const char *query, const char *source, store_tm_span **q_spans,
                        int32_t *n_q, store_tm_span **s_spans, int32_t *n_s) {
    MT_ASSERT(query && source && q_spans && n_q && s_spans && n_s);
    *q_spans = *s_spans = NULL;
    *n_q = *n_s = 0;
    tm_tokens a, b;
    mt_status rc = tm_tokenize(query, &a);
    if (rc != MT_OK) return rc;
    rc = tm_tokenize(source, &b);
    if (rc != MT_OK) {
        tm_tokens_free(&a);
        return rc;
    }
    int32_t n = a.n, m = b.n, cq = 0, cs = 0;
    size_t cells = (size_t)(n + 1) * (size_t)(m + 1);
    int64_t *d = mt_try_malloc(cells * sizeof *d);
    if (d == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "TM: out of memory diffing");
        goto done;
    }
#define D(i, j) d[(size_t)(i) * (size_t)(m + 1) + (size_t)(j)]
    for (int32_t j = 0; j <= m; j++)
        D(0, j) = (int64_t)j * HARD;
    for (int32_t i = 1; i <= n; i++) {
        D(i, 0) = (int64_t)i * HARD;
        for (int32_t j = 1; j <= m; j++) {
            int64_t best = D(i - 1, j - 1) + sub_cost(&a, i - 1, &b, j - 1);
            if (D(i - 1, j) + HARD < best) best = D(i - 1, j) + HARD;
            if (D(i, j - 1) + HARD < best) best = D(i, j - 1) + HARD;
            D(i, j) = best;
        }
    }
    /* walk back from the end, preferring the diagonal */
    int32_t i = n, j = m;
    while (rc == MT_OK && (i > 0 || j > 0)) {
        if (i > 0 && j > 0 && D(i, j) == D(i - 1, j - 1) + sub_cost(&a, i - 1, &b, j - 1)) {
            int64_t c = sub_cost(&a, i - 1, &b, j - 1);
            if (c != 0) {
                store_tm_diff_kind k = c == HARD ? STORE_TM_DIFF_CHANGED : STORE_TM_DIFF_SOFT;
                rc = span_push(q_spans, n_q, &cq, &a.v[i - 1], k);
                if (rc == MT_OK) rc = span_push(s_spans, n_s, &cs, &b.v[j - 1], k);
            }
            i--;
            j--;
        } else if (i > 0 && D(i, j) == D(i - 1, j) + HARD) {
            rc = span_push(q_spans, n_q, &cq, &a.v[i - 1], STORE_TM_DIFF_EXTRA);
            i--;
        } else {
            rc = span_push(s_spans, n_s, &cs, &b.v[j - 1], STORE_TM_DIFF_EXTRA);
            j--;
        }
    }
#undef D
    reverse(*q_spans, *n_q);
    reverse(*s_spans, *n_s);
done:
    mt_free(d);
    tm_tokens_free(&a);
    tm_tokens_free(&b);
    if (rc != MT_OK) {
        mt_free(*q_spans);
        mt_free(*s_spans);
        *q_spans = *s_spans = NULL;
        *n_q = *n_s = 0;
    }
    return rc;
}

/* ----------------------------------------------------------- index terms */

/* Calls fn(user, term, len) for each index term of the word tokens of s, in
** order (repeats included): the lower-case runs of cp_term characters of
** each word.  Terms longer than TM_TERM_MAX bytes are left out.  Stops and
** returns the first nonzero value of fn. */
int tm_each_term(const tm_tokens *t, int (*fn)(void *user, const char *term, size_t len),
                 void *user) {
    char buf[TM_TERM_MAX + 4];
    for (int32_t k = 0; k < t->n; k++) {
        const tm_tok *tk = &t->v[k];
        if (tk->kind != TM_TOK_WORD) continue;
        size_t a = (size_t)tk->start, b = a + (size_t)tk->len, len = 0, l;
        bool too_long = false;
        for (size_t i = a; i <= b; i += l) {
            uint32_t c = 0;
            l = 1;
            if (i < b) c = cp_at(t->text, i, b, &l);
            if (i < b && cp_term(c)) {
                c = cp_lower(c);
                if (len + 4 > TM_TERM_MAX)
                    too_long = true;
                else
                    len += mt_utf8_encode(c, buf + len);
                continue;
            }
            if (len > 0 && !too_long) {
                int r = fn(user, buf, len);
                if (r) return r;
            }
            len = 0;
            too_long = false;
        }
    }
    return 0;
}

typedef struct json_ctx {
    char *out;
    size_t len, cap;
    bool failed;
} json_ctx;

static int json_term(void *user, const char *term, size_t len) {
    json_ctx *c = user;
    /* distinct: the array so far is ["t1","t2",... and terms hold no quote */
    size_t p = 1;
    while (p < c->len) {
        const char *q = memchr(c->out + p + 1, '"', c->len - p - 1);
        if (q == NULL) break;
        size_t tl = (size_t)(q - (c->out + p + 1));
        if (tl == len && memcmp(c->out + p + 1, term, len) == 0) return 0;
        p += tl + 3; /* quote, term, quote, comma */
    }
    if (c->len + len + 6 > c->cap) {
        size_t cap = (c->cap + len + 6) * 2;
        char *o = mt_try_realloc(c->out, cap);
        if (o == NULL) {
            c->failed = true;
            return 1;
        }
        c->out = o;
        c->cap = cap;
    }
    if (c->len > 1) c->out[c->len++] = ',';
    c->out[c->len++] = '"';
    memcpy(c->out + c->len, term, len);
    c->len += len;
    c->out[c->len++] = '"';
    return 0;
}

char *store_tm_terms_json(const char *text) {
    tm_tokens t;
    if (tm_tokenize(text ? text : "", &t) != MT_OK) return NULL;
    json_ctx c = {.cap = 64};
    c.out = mt_try_malloc(c.cap);
    if (c.out == NULL) {
        tm_tokens_free(&t);
        return NULL;
    }
    c.out[c.len++] = '[';
    tm_each_term(&t, json_term, &c);
    tm_tokens_free(&t);
    if (c.failed) {
        mt_free(c.out);
        return NULL;
    }
    c.out[c.len++] = ']';
    c.out[c.len] = '\0';
    return c.out;
}
