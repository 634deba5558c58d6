/*
** noise.c: synthetic German errors for GEC training data (noise.h).
*/
#include "noise.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gec_text.h"

static const char *const kind_names[APP_NOISE_N_KINDS] = {
    "keyboard", "drop",  "double", "umlaut",   "case",  "suffix",
    "split",    "merge", "swap",   "dropword", "comma", "period",
};
/* How often each kind is drawn, relative. */
static const int kind_weight[APP_NOISE_N_KINDS] = {3, 2, 2, 2, 2, 2, 1, 1, 1, 1, 2, 1};

const char *app_noise_kind_name(app_noise_kind k) {
    return k >= 0 && k < APP_NOISE_N_KINDS ? kind_names[k] : "?";
}

mt_status app_noise_parse_kinds(const char *list, uint32_t *mask) {
    uint32_t m = 0;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        int k = -1;
        if (n == 3 && !strncmp(p, "all", 3)) {
            m |= APP_NOISE_ALL;
            k = 0;
        }
        for (int i = 0; k < 0 && i < APP_NOISE_N_KINDS; i++)
            if (strlen(kind_names[i]) == n && !strncmp(p, kind_names[i], n)) k = i, m |= 1u << i;
        if (k < 0) return mt_seterr(MT_ERR_INVALID, "unknown noise kind '%.*s'", (int)n, p);
        p += n;
        if (*p == ',') p++;
    }
    if (m == 0) return mt_seterr(MT_ERR_INVALID, "no noise kind given");
    *mask = m;
    return MT_OK;
}

app_noise_params app_noise_default_params(void) {
    return (app_noise_params){.seed = 1, .rate = 0.08, .clean = 0.25, .kinds = APP_NOISE_ALL};
}

/* ------------------------------------------------------------ random */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r) { /* splitmix64 */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int rng_int(rng *r, int n) { return n <= 1 ? 0 : (int)(rng_next(r) % (uint64_t)n); }
static double rng_unit(rng *r) { return (double)(rng_next(r) >> 11) / 9007199254740992.0; }

/* ------------------------------------------------------------ tokens */

typedef struct tok {
    uint32_t *cp; /* the token's code points */
    int n;
    char *sep;       /* whitespace after it (bytes as in the input) */
    int lead, trail; /* punctuation code points at either end */
    bool plain;
} tok;

typedef struct line {
    char *pre; /* whitespace before the first token */
    tok *t;
    int n, cap;
} line;

static void tok_classify(tok *t) {
    gec_token_shape sh = gec_token_shape_of(t->cp, t->n);
    t->lead = sh.lead;
    t->trail = sh.trail;
    t->plain = sh.plain;
}

static void line_free(line *l) {
    for (int i = 0; i < l->n; i++) {
        mt_free(l->t[i].cp);
        mt_free(l->t[i].sep);
    }
    mt_free(l->t);
    mt_free(l->pre);
}

static bool is_space(uint32_t c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v'; }

static void line_parse(line *l, const char *text) {
    memset(l, 0, sizeof *l);
    size_t n = strlen(text), i = 0;
    while (i < n && is_space((unsigned char)text[i]))
        i++;
    l->pre = mt_xmalloc(i + 1);
    memcpy(l->pre, text, i);
    l->pre[i] = '\0';
    while (i < n) {
        size_t s = i;
        while (i < n && !is_space((unsigned char)text[i]))
            i++;
        size_t e = i;
        while (i < n && is_space((unsigned char)text[i]))
            i++;
        if (l->n == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 16;
            l->t = mt_xrealloc(l->t, sizeof *l->t * (size_t)l->cap);
        }
        tok *t = &l->t[l->n++];
        t->cp = mt_xmalloc(sizeof(uint32_t) * (e - s + 1));
        t->n = gec_utf8_decode(text + s, e - s, t->cp);
        t->sep = mt_xmalloc(i - e + 1);
        memcpy(t->sep, text + e, i - e);
        t->sep[i - e] = '\0';
        tok_classify(t);
    }
}

static char *line_join(const line *l) {
    size_t cap = strlen(l->pre) + 1;
    for (int i = 0; i < l->n; i++)
        cap += 4 * (size_t)l->t[i].n + strlen(l->t[i].sep);
    char *out = mt_xmalloc(cap), *o = out;
    o += sprintf(o, "%s", l->pre);
    for (int i = 0; i < l->n; i++) {
        o += gec_utf8_encode(l->t[i].cp, l->t[i].n, o);
        o += sprintf(o, "%s", l->t[i].sep);
    }
    return out;
}

/* Replaces code points [at, at + del) of t by ins[0..n_ins). */
static void tok_splice(tok *t, int at, int del, const uint32_t *ins, int n_ins) {
    int n = t->n - del + n_ins;
    uint32_t *cp = mt_xmalloc(sizeof(uint32_t) * (size_t)(n + 1));
    memcpy(cp, t->cp, sizeof(uint32_t) * (size_t)at);
    if (n_ins > 0) memcpy(cp + at, ins, sizeof(uint32_t) * (size_t)n_ins);
    memcpy(cp + at + n_ins, t->cp + at + del, sizeof(uint32_t) * (size_t)(t->n - at - del));
    mt_free(t->cp);
    t->cp = cp;
    t->n = n;
    tok_classify(t);
}

static void line_remove(line *l, int i) {
    mt_free(l->t[i].cp);
    /* the separator of the previous token stays; this one's goes */
    mt_free(l->t[i].sep);
    memmove(l->t + i, l->t + i + 1, sizeof *l->t * (size_t)(l->n - i - 1));
    l->n--;
}

/* A plain token without punctuation around it: a bare word. */
static bool bare(const tok *t) { return t->plain && t->lead == 0 && t->trail == 0; }
static int core_len(const tok *t) { return t->n - t->lead - t->trail; }

/* Picks a random index i in [0, n) with ok(l, i), or -1. */
static int pick(rng *r, const line *l, int n, bool (*ok)(const line *, int, void *), void *arg) {
    if (n <= 0) return -1;
    int start = rng_int(r, n);
    for (int k = 0; k < n; k++) {
        int i = (start + k) % n;
        if (ok(l, i, arg)) return i;
    }
    return -1;
}

/* --------------------------------------------------------- letters */

/* German QWERTZ letter rows (lower case). */
static const char *const qwertz[3] = {"qwertzuiop\xC3\xBC", "asdfghjkl\xC3\xB6\xC3\xA4", "yxcvbnm"};
static uint32_t rows[3][12];
static int row_len[3];

static void rows_init(void) {
    if (row_len[0]) return;
    for (int r = 0; r < 3; r++)
        row_len[r] = gec_utf8_decode(qwertz[r], strlen(qwertz[r]), rows[r]);
}

/* A neighbour key of lower-case c, or 0 when c is not on the rows. */
static uint32_t neighbour(rng *r, uint32_t c) {
    rows_init();
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < row_len[y]; x++) {
            if (rows[y][x] != c) continue;
            uint32_t nb[6];
            int k = 0;
            if (x > 0) nb[k++] = rows[y][x - 1];
            if (x + 1 < row_len[y]) nb[k++] = rows[y][x + 1];
            /* QWERTZ rows are offset by about half a key to the right */
            if (y > 0) {
                if (x < row_len[y - 1]) nb[k++] = rows[y - 1][x];
                if (x + 1 < row_len[y - 1]) nb[k++] = rows[y - 1][x + 1];
            }
            if (y < 2) {
                if (x < row_len[y + 1]) nb[k++] = rows[y + 1][x];
                if (x > 0 && x - 1 < row_len[y + 1]) nb[k++] = rows[y + 1][x - 1];
            }
            return k ? nb[rng_int(r, k)] : 0;
        }
    return 0;
}

/* ------------------------------------------------------------ kinds */

static bool ok_core(const line *l, int i, void *arg) {
    int min = *(int *)arg;
    return l->t[i].plain && core_len(&l->t[i]) >= min;
}

/* A random letter position of token i's core satisfying pred, or -1. */
static int pick_pos(rng *r, const tok *t, bool (*pred)(uint32_t)) {
    int n = core_len(t), start = rng_int(r, n);
    for (int k = 0; k < n; k++) {
        int j = t->lead + (start + k) % n;
        if (t->cp[j] != '-' && (!pred || pred(t->cp[j]))) return j;
    }
    return -1;
}

static bool on_keyboard(uint32_t c) {
    rows_init();
    uint32_t lc = gec_lower(c);
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < row_len[y]; x++)
            if (rows[y][x] == lc) return true;
    return false;
}

static bool do_keyboard(rng *r, line *l) {
    int min = 2, i = pick(r, l, l->n, ok_core, &min);
    if (i < 0) return false;
    tok *t = &l->t[i];
    int j = pick_pos(r, t, on_keyboard);
    if (j < 0) return false;
    uint32_t c = t->cp[j], nb = neighbour(r, gec_lower(c));
    if (nb == 0) return false;
    if (gec_is_upper(c)) nb = gec_upper(nb);
    tok_splice(t, j, 1, &nb, 1);
    return true;
}

static bool do_drop(rng *r, line *l) {
    int min = 3, i = pick(r, l, l->n, ok_core, &min);
    if (i < 0) return false;
    tok *t = &l->t[i];
    int j = pick_pos(r, t, NULL);
    if (j < 0) return false;
    tok_splice(t, j, 1, NULL, 0);
    return true;
}

static bool do_double(rng *r, line *l) {
    int min = 2, i = pick(r, l, l->n, ok_core, &min);
    if (i < 0) return false;
    tok *t = &l->t[i];
    int j = pick_pos(r, t, NULL);
    if (j < 0) return false;
    uint32_t c = gec_lower(t->cp[j]);
    tok_splice(t, j + 1, 0, &c, 1);
    return true;
}

static bool is_umlaut(uint32_t c) {
    return c == 0xE4 || c == 0xF6 || c == 0xFC || c == 0xC4 || c == 0xD6 || c == 0xDC || c == 0xDF;
}
static bool ok_umlaut(const line *l, int i, void *arg) {
    (void)arg;
    const tok *t = &l->t[i];
    if (!t->plain) return false;
    for (int j = t->lead; j < t->n - t->trail; j++)
        if (is_umlaut(t->cp[j])) return true;
    return false;
}

static bool do_umlaut(rng *r, line *l) {
    int i = pick(r, l, l->n, ok_umlaut, NULL);
    if (i < 0) return false;
    tok *t = &l->t[i];
    int j = pick_pos(r, t, is_umlaut);
    uint32_t c = t->cp[j], rep[2];
    if (c == 0xDF) {
        rep[0] = rep[1] = 's';
    } else {
        static const uint32_t from[6] = {0xE4, 0xF6, 0xFC, 0xC4, 0xD6, 0xDC};
        static const char to[6] = {'a', 'o', 'u', 'A', 'O', 'U'};
        for (int k = 0; k < 6; k++)
            if (from[k] == c) rep[0] = (uint32_t)to[k];
        rep[1] = 'e';
    }
    /* "ae" mostly (the usual spelling without the keys), else the bare vowel */
    tok_splice(t, j, 1, rep, c == 0xDF || rng_unit(r) < 0.7 ? 2 : 1);
    return true;
}

static bool ok_capital(const line *l, int i, void *arg) {
    (void)arg;
    const tok *t = &l->t[i];
    return t->plain && core_len(t) >= 2 && gec_is_upper(t->cp[t->lead]) &&
           !gec_is_upper(t->cp[t->lead + 1]); /* not an acronym */
}

static bool do_case(rng *r, line *l) {
    int i = pick(r, l, l->n, ok_capital, NULL);
    if (i < 0) return false;
    tok *t = &l->t[i];
    uint32_t c = gec_lower(t->cp[t->lead]);
    tok_splice(t, t->lead, 1, &c, 1);
    return true;
}

static const char *const suffixes[5] = {"e", "en", "em", "er", "es"};

/* The length of token t's suffix from the list (longest), or 0. */
static int suffix_of(const tok *t) {
    int end = t->n - t->trail, clen = core_len(t);
    for (int len = 2; len >= 1; len--) {
        if (clen < len + 2) continue;
        for (int s = 0; s < 5; s++) {
            if ((int)strlen(suffixes[s]) != len) continue;
            bool m = true;
            for (int k = 0; k < len; k++)
                if (t->cp[end - len + k] != (uint32_t)suffixes[s][k]) m = false;
            if (m) return len;
        }
    }
    return 0;
}
static bool ok_suffix(const line *l, int i, void *arg) {
    (void)arg;
    return l->t[i].plain && suffix_of(&l->t[i]) > 0;
}

static bool do_suffix(rng *r, line *l) {
    int i = pick(r, l, l->n, ok_suffix, NULL);
    if (i < 0) return false;
    tok *t = &l->t[i];
    int len = suffix_of(t), end = t->n - t->trail;
    uint32_t cur[2] = {t->cp[end - len], len > 1 ? t->cp[end - 1] : 0};
    for (;;) {
        const char *s = suffixes[rng_int(r, 5)];
        int sl = (int)strlen(s);
        if (sl == len && (uint32_t)s[0] == cur[0] && (sl == 1 || (uint32_t)s[1] == cur[1]))
            continue;
        uint32_t ins[2] = {(uint32_t)s[0], sl > 1 ? (uint32_t)s[1] : 0};
        tok_splice(t, end - len, len, ins, sl);
        return true;
    }
}

static bool ok_split(const line *l, int i, void *arg) {
    (void)arg;
    const tok *t = &l->t[i];
    if (!t->plain || core_len(t) < 9) return false;
    for (int j = t->lead; j < t->n - t->trail; j++)
        if (t->cp[j] == '-') return false;
    return true;
}

static bool do_split(rng *r, line *l) {
    int i = pick(r, l, l->n, ok_split, NULL);
    if (i < 0) return false;
    if (l->n == l->cap) {
        l->cap *= 2;
        l->t = mt_xrealloc(l->t, sizeof *l->t * (size_t)l->cap);
    }
    tok *t = &l->t[i];
    int clen = core_len(t), at = t->lead + 4 + rng_int(r, clen - 7);
    tok second = {0};
    second.n = t->n - at;
    second.cp = mt_xmalloc(sizeof(uint32_t) * (size_t)(second.n + 1));
    memcpy(second.cp, t->cp + at, sizeof(uint32_t) * (size_t)second.n);
    if (gec_is_upper(t->cp[t->lead])) second.cp[0] = gec_upper(second.cp[0]);
    second.sep = t->sep;
    t->sep = mt_xstrdup(" ");
    t->n = at;
    tok_classify(t);
    tok_classify(&second);
    memmove(l->t + i + 2, l->t + i + 1, sizeof *l->t * (size_t)(l->n - i - 1));
    l->t[i + 1] = second;
    l->n++;
    return true;
}

static bool ok_merge(const line *l, int i, void *arg) {
    (void)arg;
    return i + 1 < l->n && l->t[i].plain && l->t[i].trail == 0 && l->t[i + 1].plain &&
           l->t[i + 1].lead == 0;
}

static bool do_merge(rng *r, line *l) {
    int i = pick(r, l, l->n - 1, ok_merge, NULL);
    if (i < 0) return false;
    tok *a = &l->t[i], *b = &l->t[i + 1];
    uint32_t *cp = mt_xmalloc(sizeof(uint32_t) * (size_t)(a->n + b->n + 1));
    memcpy(cp, a->cp, sizeof(uint32_t) * (size_t)a->n);
    memcpy(cp + a->n, b->cp, sizeof(uint32_t) * (size_t)b->n);
    cp[a->n] = gec_lower(cp[a->n]);
    int n = a->n + b->n;
    mt_free(b->cp);
    b->cp = cp;
    b->n = n;
    tok_classify(b);
    /* a's separator goes, b keeps its own */
    mt_free(a->cp);
    mt_free(a->sep);
    memmove(l->t + i, l->t + i + 1, sizeof *l->t * (size_t)(l->n - i - 1));
    l->n--;
    return true;
}

static bool ok_swap(const line *l, int i, void *arg) {
    (void)arg;
    return i + 1 < l->n && bare(&l->t[i]) && bare(&l->t[i + 1]) &&
           !gec_text_eq(l->t[i].cp, l->t[i].n, l->t[i + 1].cp, l->t[i + 1].n);
}

static bool do_swap(rng *r, line *l) {
    int i = pick(r, l, l->n - 1, ok_swap, NULL);
    if (i < 0) return false;
    tok a = l->t[i], b = l->t[i + 1];
    /* the words move, the whitespace stays where it was */
    l->t[i].cp = b.cp, l->t[i].n = b.n;
    l->t[i + 1].cp = a.cp, l->t[i + 1].n = a.n;
    tok_classify(&l->t[i]);
    tok_classify(&l->t[i + 1]);
    return true;
}

static bool ok_bare(const line *l, int i, void *arg) {
    (void)arg;
    return bare(&l->t[i]);
}

static bool do_dropword(rng *r, line *l) {
    if (l->n < 3) return false;
    int i = pick(r, l, l->n, ok_bare, NULL);
    if (i < 0) return false;
    if (i == l->n - 1) { /* the last word: the previous one's separator goes */
        mt_free(l->t[i - 1].sep);
        l->t[i - 1].sep = l->t[i].sep;
        l->t[i].sep = NULL;
    }
    line_remove(l, i);
    return true;
}

static bool ok_comma(const line *l, int i, void *arg) {
    (void)arg;
    const tok *t = &l->t[i];
    return i + 1 < l->n && t->plain && t->trail == 1 && t->cp[t->n - 1] == ',' && core_len(t) > 0;
}
static bool ok_comma_add(const line *l, int i, void *arg) {
    (void)arg;
    return i + 1 < l->n && l->t[i].plain && l->t[i].trail == 0 && core_len(&l->t[i]) > 0 &&
           l->t[i + 1].plain;
}

static bool do_comma(rng *r, line *l) {
    int i = rng_unit(r) < 0.6 ? pick(r, l, l->n, ok_comma, NULL) : -1;
    if (i >= 0) {
        tok_splice(&l->t[i], l->t[i].n - 1, 1, NULL, 0);
        return true;
    }
    i = pick(r, l, l->n, ok_comma_add, NULL);
    if (i < 0) return false;
    uint32_t c = ',';
    tok_splice(&l->t[i], l->t[i].n, 0, &c, 1);
    return true;
}

static bool do_period(rng *r, line *l) {
    (void)r;
    if (l->n < 2) return false;
    tok *t = &l->t[l->n - 1];
    /* "..." and a period after protected text stay */
    if (!t->plain || t->trail != 1 || t->cp[t->n - 1] != '.' || core_len(t) == 0) return false;
    tok_splice(t, t->n - 1, 1, NULL, 0);
    return true;
}

typedef bool (*noise_fn)(rng *, line *);
static const noise_fn kind_fn[APP_NOISE_N_KINDS] = {
    do_keyboard, do_drop,  do_double, do_umlaut,   do_case,  do_suffix,
    do_split,    do_merge, do_swap,   do_dropword, do_comma, do_period,
};

/* ------------------------------------------------------------- line */

mt_status app_noise_line(const app_noise_params *p, uint64_t line_no, const char *text, char **out,
                         uint32_t *applied) {
    *out = NULL;
    if (applied) *applied = 0;
    size_t bad = 0, n = strlen(text);
    if (!gec_utf8_valid(text, n, &bad))
        return mt_seterr(MT_ERR_INVALID, "invalid UTF-8 at byte %zu", bad);
    if (memchr(text, '\n', n)) return mt_seterr(MT_ERR_INVALID, "a line holds a line break");
    rng r = {p->seed * 0x2545F4914F6CDD1Dull ^ (line_no + 1) * 0x9E3779B97F4A7C15ull};
    rng_next(&r);
    line l;
    line_parse(&l, text);
    uint32_t got = 0;
    if (rng_unit(&r) >= p->clean && l.n > 0) {
        int words = 0;
        for (int i = 0; i < l.n; i++)
            words += l.t[i].plain;
        double want = p->rate * words;
        int n_err = (int)want;
        if (rng_unit(&r) < want - n_err) n_err++;
        if (n_err < 1) n_err = 1;
        int total = 0;
        for (int k = 0; k < APP_NOISE_N_KINDS; k++)
            if (p->kinds & (1u << k)) total += kind_weight[k];
        for (int e = 0, tries = 0; e < n_err && tries < 8 * n_err + 8 && total > 0; tries++) {
            int x = rng_int(&r, total), k = 0;
            for (; k < APP_NOISE_N_KINDS; k++) {
                if (!(p->kinds & (1u << k))) continue;
                if (x < kind_weight[k]) break;
                x -= kind_weight[k];
            }
            if (kind_fn[k](&r, &l)) {
                got |= 1u << k;
                e++;
            }
        }
    }
    *out = line_join(&l);
    line_free(&l);
    if (applied) *applied = got;
    return MT_OK;
}
