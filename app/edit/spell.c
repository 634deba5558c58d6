/*
** spell.c: the spell checker of spell.h over hunspell's C API.
**
** Files (read by hunspell, found here): a dictionary is two text files.
**
**   NAME.aff   affix rules, one directive per line; the one this module
**              cares about is "SET <encoding>" (UTF-8, ISO8859-1,
**              ISO8859-15, microsoft-cp1251, KOI8-R, ...), the encoding of
**              both files and of every word passed to or returned by
**              hunspell; hunspell reports it (Hunspell_get_dic_encoding)
**   NAME.dic   line 1: the approximate number of words; then one word per
**              line, optionally "/FLAGS" (affix classes) and morphological
**              fields after a tab
**
** Words go to hunspell in the dictionary's encoding: as they are for UTF-8,
** else converted with iconv (to_dic); suggestions come back through
** from_dic.  The typographic apostrophe ’ is passed as ' (the dictionaries
** list "don't").
**
** Word sets: `allowed` holds the personal dictionary and the glossary's
** target words (kept for the checker's life); `cache` remembers the verdict
** of every word looked up (1 right, 2 wrong) and is emptied when it holds
** APP_SPELL_CACHE words.  Both are open-addressing hash tables keyed by
** the UTF-8 word.
*/
#include "spell.h"

#include <dirent.h>
#include <hunspell.h>
#include <iconv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "anatomy.h"
#include "store_spell.h"

/* ------------------------------------------------------------ word sets */

typedef struct wset {
    char **key;
    uint8_t *val;
    size_t cap, n; /* cap: 0 or a power of two */
} wset;

static void wset_clear(wset *s) {
    for (size_t i = 0; i < s->cap; i++)
        mt_free(s->key[i]);
    mt_free(s->key);
    mt_free(s->val);
    memset(s, 0, sizeof *s);
}

/* Slot of w[0..n): where it is, or the empty slot where it would go. */
static size_t wset_slot(const wset *s, const char *w, size_t n) {
    size_t i = (size_t)mt_fnv1a(MT_FNV1A_INIT, w, n) & (s->cap - 1);
    while (s->key[i] && !(strlen(s->key[i]) == n && memcmp(s->key[i], w, n) == 0))
        i = (i + 1) & (s->cap - 1);
    return i;
}

/* 0 when absent, else the value. */
static uint8_t wset_get(const wset *s, const char *w, size_t n) {
    if (s->cap == 0) return 0;
    size_t i = wset_slot(s, w, n);
    return s->key[i] ? s->val[i] : 0;
}

static mt_status wset_put(wset *s, const char *w, size_t n, uint8_t v) {
    if (2 * (s->n + 1) > s->cap) {
        wset big = {.cap = s->cap ? 2 * s->cap : 64};
        big.key = mt_try_calloc(big.cap, sizeof *big.key);
        big.val = mt_try_calloc(big.cap, 1);
        if (big.key == NULL || big.val == NULL) {
            mt_free(big.key);
            mt_free(big.val);
            return mt_seterr(MT_ERR_NOMEM, "spell: out of memory");
        }
        for (size_t i = 0; i < s->cap; i++) {
            if (s->key[i] == NULL) continue;
            size_t j = wset_slot(&big, s->key[i], strlen(s->key[i]));
            big.key[j] = s->key[i];
            big.val[j] = s->val[i];
            big.n++;
        }
        mt_free(s->key);
        mt_free(s->val);
        *s = big;
    }
    size_t i = wset_slot(s, w, n);
    if (s->key[i] == NULL) {
        char *k = mt_try_malloc(n + 1);
        if (k == NULL) return mt_seterr(MT_ERR_NOMEM, "spell: out of memory");
        memcpy(k, w, n);
        k[n] = '\0';
        s->key[i] = k;
        s->n++;
    }
    s->val[i] = v;
    return MT_OK;
}

/* ------------------------------------------------------------ characters */

static uint32_t decode(const char *s, size_t n, size_t *len) {
    uint32_t c;
    *len = mt_utf8_decode(s, n, &c);
    return c;
}

static bool is_digit_cp(uint32_t c) {
    return (c >= '0' && c <= '9') || (c >= 0x660 && c <= 0x669) || (c >= 0xFF10 && c <= 0xFF19);
}

/* Letters of the scripts hunspell dictionaries exist for, roughly: Latin
** (with Latin-1, Extended-A/B, IPA, Extended Additional), Greek, Cyrillic,
** Armenian, Hebrew, Arabic, the Indic scripts, Thai, Georgian, Hangul,
** kana and CJK ideographs. */
static bool is_letter_cp(uint32_t c) {
    if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
    if (c == 0xAA || c == 0xB5 || c == 0xBA) return true;
    if (c >= 0xC0 && c <= 0x2AF) return c != 0xD7 && c != 0xF7;
    if (c >= 0x370 && c <= 0x3FF) return c != 0x37E && c != 0x387 && c != 0x375;
    if (c >= 0x400 && c <= 0x52F) return !(c >= 0x482 && c <= 0x489);
    if (c >= 0x531 && c <= 0x587) return true;
    if (c >= 0x5D0 && c <= 0x5EA) return true;
    if (c >= 0x620 && c <= 0x64A) return true;
    if (c >= 0x900 && c <= 0xE7F) return true;
    if (c >= 0x10A0 && c <= 0x10FF) return true;
    if (c >= 0x1E00 && c <= 0x1FFF) return true;
    if (c >= 0x3040 && c <= 0x30FF) return true;
    if (c >= 0x4E00 && c <= 0x9FFF) return true;
    if (c >= 0xAC00 && c <= 0xD7AF) return true;
    return false;
}

static bool is_mark_cp(uint32_t c) { return (c >= 0x300 && c <= 0x36F) || c == 0x200D; }

static bool is_cjk_cp(uint32_t c) {
    return (c >= 0x3040 && c <= 0x30FF) || (c >= 0x4E00 && c <= 0x9FFF) ||
           (c >= 0xAC00 && c <= 0xD7AF);
}

static bool is_word_cp(uint32_t c) { return is_letter_cp(c) || is_digit_cp(c) || is_mark_cp(c); }

/* Joiners kept inside a word when a word character follows. */
static bool is_joiner(uint32_t c) {
    return c == '\'' || c == 0x2019 || c == '-' || c == 0x2010 || c == '.' || c == '_';
}

static bool is_blank(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Capitals of ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic (the
** case rules only need to find a capital after a word's first letter). */
static bool is_upper_cp(uint32_t c) {
    if (c >= 0x100 && c <= 0x17F) {  /* Latin Extended-A: pairs, capital first */
        if (c == 0x178) return true; /* Ÿ (its small letter is U+00FF) */
        if (c == 0x138 || c == 0x149 || c == 0x17F) return false; /* ĸ ŉ ſ */
        bool odd_pairs = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
        return odd_pairs ? (c & 1) != 0 : (c & 1) == 0;
    }
    return (c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7) ||
           (c >= 0x391 && c <= 0x3A9) || (c >= 0x400 && c <= 0x42F);
}

/* ------------------------------------------------------------ tokens */

typedef struct tok {
    size_t at, len;
} tok;

/* The next word of s[*i..n) (masked bytes, mask[k] != 0, separate words and
** are never part of one); false at the end. */
static bool next_word(const char *s, size_t n, const uint8_t *mask, size_t *i, tok *t) {
    size_t k = *i, len;
    while (k < n) {
        if (!(mask && mask[k]) && is_word_cp(decode(s + k, n - k, &len))) break;
        k += mask && mask[k] ? 1 : len;
    }
    if (k >= n) {
        *i = n;
        return false;
    }
    size_t start = k, end = k;
    while (k < n && !(mask && mask[k])) {
        uint32_t c = decode(s + k, n - k, &len);
        if (is_word_cp(c)) {
            k += len;
            end = k;
            continue;
        }
        if (!is_joiner(c)) break;
        size_t l2;
        if (k + len >= n || (mask && mask[k + len]) ||
            !is_word_cp(decode(s + k + len, n - k - len, &l2)))
            break;
        k += len; /* a joiner inside the word */
    }
    t->at = start;
    t->len = end - start;
    *i = end;
    return true;
}

/* ------------------------------------------------------------ the checker */

struct app_spell {
    Hunhandle *h;
    char name[64];
    bool utf8;
    iconv_t to_dic, from_dic; /* (iconv_t)-1 when utf8 */
    store *st;
    wset allowed; /* personal dictionary and glossary words: value 1 */
    wset cache;   /* verdicts: 1 right, 2 wrong */
};

static const char *const default_regions[][2] = {
    {"de", "de_DE"}, {"en", "en_US"}, {"fr", "fr_FR"}, {"es", "es_ES"}, {"it", "it_IT"},
    {"pt", "pt_PT"}, {"nl", "nl_NL"}, {"pl", "pl_PL"}, {"ru", "ru_RU"}, {"sv", "sv_SE"},
    {"da", "da_DK"}, {"nb", "nb_NO"}, {"nn", "nn_NO"}, {"no", "nb_NO"}, {"cs", "cs_CZ"},
    {"sk", "sk_SK"}, {"hu", "hu_HU"}, {"fi", "fi_FI"}, {"el", "el_GR"}, {"uk", "uk_UA"},
    {"ro", "ro_RO"}, {"bg", "bg_BG"}, {"hr", "hr_HR"}, {"sl", "sl_SI"}, {"ca", "ca_ES"},
    {"tr", "tr_TR"}, {"lt", "lt_LT"}, {"lv", "lv_LV"}, {"et", "et_EE"}, {"gl", "gl_ES"},
};

static bool file_exists(const char *p) { return access(p, R_OK) == 0; }

/* Whether dir holds name.aff and name.dic; path gets dir/name. */
static bool have_dic(const char *dir, size_t dir_n, const char *name, char *path, size_t path_n) {
    char aff[4096], dic[4096];
    snprintf(aff, sizeof aff, "%.*s/%s.aff", (int)dir_n, dir, name);
    snprintf(dic, sizeof dic, "%.*s/%s.dic", (int)dir_n, dir, name);
    if (!file_exists(aff) || !file_exists(dic)) return false;
    snprintf(path, path_n, "%.*s/%s", (int)dir_n, dir, name);
    return true;
}

/* Calls fn for every directory of the search path (":"-separated lists
** first); stops when fn returns true. */
static bool each_dir(bool (*fn)(void *u, const char *d, size_t n), void *u, char *searched,
                     size_t searched_n) {
    const char *lists[] = {getenv("MTPE_DICPATH"), getenv("DICPATH"),
                           "/usr/share/hunspell:/usr/share/myspell/dicts:/usr/share/myspell"};
    size_t o = 0;
    searched[0] = '\0';
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        const char *p = lists[l];
        if (p == NULL) continue;
        while (*p) {
            size_t n = strcspn(p, ":");
            if (n > 0) {
                if (o < searched_n)
                    o += (size_t)snprintf(searched + o, searched_n - o, "%s%.*s", o ? ":" : "",
                                          (int)n, p);
                if (fn(u, p, n)) return true;
            }
            p += n;
            if (*p == ':') p++;
        }
    }
    return false;
}

typedef struct find_ctx {
    const char *name; /* the name looked for, or NULL: the first prefix_* */
    const char *prefix;
    char *found_name;
    size_t found_n;
    char *path;
    size_t path_n;
} find_ctx;

static bool find_in(void *u, const char *d, size_t n) {
    find_ctx *c = u;
    if (c->name) {
        if (!have_dic(d, n, c->name, c->path, c->path_n)) return false;
        snprintf(c->found_name, c->found_n, "%s", c->name);
        return true;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", (int)n, d);
    DIR *dp = opendir(dir);
    if (dp == NULL) return false;
    char best[256] = "";
    struct dirent *e;
    size_t pl = strlen(c->prefix);
    while ((e = readdir(dp)) != NULL) {
        size_t el = strlen(e->d_name);
        if (el < pl + 5 || strncmp(e->d_name, c->prefix, pl) != 0 || e->d_name[pl] != '_' ||
            strcmp(e->d_name + el - 4, ".dic") != 0 || el - 4 >= sizeof best)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(el - 4), e->d_name);
        char p[4096];
        if ((best[0] == '\0' || strcmp(name, best) < 0) && have_dic(d, n, name, p, sizeof p))
            snprintf(best, sizeof best, "%s", name);
    }
    closedir(dp);
    if (best[0] == '\0') return false;
    have_dic(d, n, best, c->path, c->path_n);
    snprintf(c->found_name, c->found_n, "%s", best);
    return true;
}

mt_status app_spell_find(const char *lang, char *name, size_t name_n, char *path, size_t path_n) {
    if (lang == NULL || lang[0] == '\0')
        return mt_seterr(MT_ERR_INVALID, "spell checking: no target language");
    char ll[16], rr[16] = "";
    size_t n = strcspn(lang, "-_.@");
    if (n == 0 || n >= sizeof ll)
        return mt_seterr(MT_ERR_NOTFOUND, "spell checking: no dictionary for language '%.40s'",
                         lang);
    for (size_t i = 0; i < n; i++)
        ll[i] = (char)((lang[i] >= 'A' && lang[i] <= 'Z') ? lang[i] + 32 : lang[i]);
    ll[n] = '\0';
    if (lang[n] == '-' || lang[n] == '_') {
        const char *r = lang + n + 1;
        size_t m = strcspn(r, "-_.@");
        if (m >= 2 && m < sizeof rr) {
            for (size_t i = 0; i < m; i++)
                rr[i] = (char)((r[i] >= 'a' && r[i] <= 'z') ? r[i] - 32 : r[i]);
            rr[m] = '\0';
        }
    }
    /* candidates, best first */
    char cand[4][40];
    int nc = 0;
    if (rr[0]) snprintf(cand[nc++], sizeof cand[0], "%s_%s", ll, rr);
    for (size_t i = 0; i < sizeof default_regions / sizeof default_regions[0]; i++)
        if (strcmp(default_regions[i][0], ll) == 0)
            snprintf(cand[nc++], sizeof cand[0], "%s", default_regions[i][1]);
    snprintf(cand[nc++], sizeof cand[0], "%s", ll);
    char searched[1024];
    for (int i = 0; i < nc; i++) {
        find_ctx c = {cand[i], NULL, name, name_n, path, path_n};
        if (each_dir(find_in, &c, searched, sizeof searched)) return MT_OK;
    }
    find_ctx c = {NULL, ll, name, name_n, path, path_n};
    if (each_dir(find_in, &c, searched, sizeof searched)) return MT_OK;
    return mt_seterr(MT_ERR_NOTFOUND,
                     "no spelling dictionary for '%.40s': spell checking off (looked for %s.dic "
                     "in %s)",
                     lang, cand[0], searched);
}

/* Converts s[0..n) with cd into a new string (NULL: not convertible or out
** of memory). */
static char *convert(iconv_t cd, const char *s, size_t n) {
    size_t cap = 4 * n + 8;
    char *out = mt_try_malloc(cap);
    if (out == NULL) return NULL;
    char *in = (char *)s, *o = out;
    size_t il = n, ol = cap - 1;
    iconv(cd, NULL, NULL, NULL, NULL);
    if (iconv(cd, &in, &il, &o, &ol) == (size_t)-1 ||
        iconv(cd, NULL, NULL, &o, &ol) == (size_t)-1) {
        mt_free(out);
        return NULL;
    }
    *o = '\0';
    return out;
}

/* The word as hunspell wants it: ’ as ', in the dictionary's encoding
** (mt_free; NULL: cannot be converted, or out of memory). */
static char *to_dic(const app_spell *sp, const char *w, size_t n) {
    char *u = mt_try_malloc(n + 1);
    if (u == NULL) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (i + 2 < n && (unsigned char)w[i] == 0xE2 && (unsigned char)w[i + 1] == 0x80 &&
            (unsigned char)w[i + 2] == 0x99) {
            u[o++] = '\'';
            i += 3;
        } else {
            u[o++] = w[i++];
        }
    }
    u[o] = '\0';
    if (sp->utf8) return u;
    char *c = convert(sp->to_dic, u, o);
    mt_free(u);
    return c;
}

static int add_personal(void *user, const char *word) {
    app_spell *sp = user;
    if (wset_put(&sp->allowed, word, strlen(word), 1) != MT_OK) return 1;
    char *d = to_dic(sp, word, strlen(word));
    if (d) Hunspell_add(sp->h, d);
    mt_free(d);
    return 0;
}

mt_status app_spell_allow_term(app_spell *sp, const char *term) {
    size_t n = strlen(term), i = 0;
    tok t;
    while (next_word(term, n, NULL, &i, &t)) {
        mt_status rc = wset_put(&sp->allowed, term + t.at, t.len, 1);
        if (rc != MT_OK) return rc;
        /* the parts of a hyphenated word too ("Mtpe" of "Mtpe-Projekt") */
        size_t a = t.at, end = t.at + t.len;
        for (size_t k = t.at; k <= end; k++) {
            if (k < end && term[k] != '-') continue;
            if (k > a && (a != t.at || k != end)) {
                rc = wset_put(&sp->allowed, term + a, k - a, 1);
                if (rc != MT_OK) return rc;
            }
            a = k + 1;
        }
    }
    return MT_OK;
}

static int add_term(void *user, const char *term) {
    return app_spell_allow_term(user, term) == MT_OK ? 0 : 1;
}

mt_status app_spell_open(const char *lang, store *st, app_spell **out) {
    *out = NULL;
    char name[64], path[4096];
    mt_status rc = app_spell_find(lang, name, sizeof name, path, sizeof path);
    if (rc != MT_OK) return rc;
    app_spell *sp = mt_try_calloc(1, sizeof *sp);
    if (sp == NULL) return mt_seterr(MT_ERR_NOMEM, "spell: out of memory");
    sp->to_dic = sp->from_dic = (iconv_t)-1;
    snprintf(sp->name, sizeof sp->name, "%s", name);
    sp->st = st;
    char aff[4200], dic[4200];
    snprintf(aff, sizeof aff, "%s.aff", path);
    snprintf(dic, sizeof dic, "%s.dic", path);
    sp->h = Hunspell_create(aff, dic);
    if (sp->h == NULL) {
        app_spell_free(sp);
        return mt_seterr(MT_ERR_FORMAT, "spell: hunspell cannot load %s", dic);
    }
    const char *enc = Hunspell_get_dic_encoding(sp->h);
    if (enc == NULL || enc[0] == '\0') enc = "ISO8859-1";
    sp->utf8 = strcasecmp(enc, "UTF-8") == 0 || strcasecmp(enc, "UTF8") == 0;
    if (!sp->utf8) {
        char ienc[64];
        /* hunspell's "microsoft-cp1251" is iconv's "CP1251" */
        if (strncasecmp(enc, "microsoft-", 10) == 0)
            snprintf(ienc, sizeof ienc, "%s", enc + 10);
        else
            snprintf(ienc, sizeof ienc, "%s", enc);
        sp->to_dic = iconv_open(ienc, "UTF-8");
        sp->from_dic = iconv_open("UTF-8", ienc);
        if (sp->to_dic == (iconv_t)-1 || sp->from_dic == (iconv_t)-1) {
            app_spell_free(sp);
            return mt_seterr(MT_ERR_FORMAT, "spell: %s: encoding %s unknown to iconv", dic, enc);
        }
    }
    if (st) {
        rc = store_spell_words(st, sp->name, add_personal, sp);
        if (rc == MT_OK) rc = store_glossary_target_words(st, lang, add_term, sp);
        if (rc == MT_ABORTED) rc = mt_seterr(MT_ERR_NOMEM, "spell: out of memory");
        if (rc != MT_OK) {
            app_spell_free(sp);
            return rc;
        }
    }
    *out = sp;
    return MT_OK;
}

void app_spell_free(app_spell *sp) {
    if (sp == NULL) return;
    if (sp->h) Hunspell_destroy(sp->h);
    if (sp->to_dic != (iconv_t)-1) iconv_close(sp->to_dic);
    if (sp->from_dic != (iconv_t)-1) iconv_close(sp->from_dic);
    wset_clear(&sp->allowed);
    wset_clear(&sp->cache);
    mt_free(sp);
}

const char *app_spell_dict(const app_spell *sp) { return sp->name; }

/* The word with its first letter in lower case (Latin-1, Greek, Cyrillic),
** into buf; false when it does not start with a capital. */
static bool lower_first(const char *w, size_t n, char *buf, size_t cap) {
    size_t len;
    uint32_t c = decode(w, n, &len);
    if (!is_upper_cp(c) || n + 4 > cap) return false;
    uint32_t l = c < 0x80                     ? c + 32
                 : c < 0x100                  ? c + 32
                 : c == 0x178                 ? 0xFF
                 : c == 0x130                 ? 'i'
                 : c < 0x180                  ? c + 1
                 : (c >= 0x391 && c <= 0x3A9) ? c + 32
                 : c < 0x410                  ? c + 80
                                              : c + 32;
    size_t o = 0;
    if (l < 0x80) {
        buf[o++] = (char)l;
    } else {
        buf[o++] = (char)(0xC0 | (l >> 6));
        buf[o++] = (char)(0x80 | (l & 0x3F));
    }
    memcpy(buf + o, w + len, n - len);
    buf[o + n - len] = '\0';
    return true;
}

static bool is_allowed(const app_spell *sp, const char *w, size_t n) {
    if (wset_get(&sp->allowed, w, n)) return true;
    char low[256];
    return lower_first(w, n, low, sizeof low) && wset_get(&sp->allowed, low, strlen(low));
}

/* Characters that leave the whole word alone: digits, '.', '_', CJK. */
static bool exempt_chars(const char *w, size_t n) {
    size_t len;
    for (size_t i = 0; i < n; i += len) {
        uint32_t c = decode(w + i, n - i, &len);
        if (is_digit_cp(c) || c == '.' || c == '_' || is_cjk_cp(c)) return true;
    }
    return false;
}

/* The case rules for a word without hyphens: one letter, or a capital
** after the first letter (capitals only, camel case, "KAlgebra"). */
static bool exempt_case(const char *w, size_t n) {
    size_t len, letters = 0;
    for (size_t i = 0; i < n; i += len) {
        uint32_t c = decode(w + i, n - i, &len);
        if (!is_letter_cp(c)) continue;
        if (letters > 0 && is_upper_cp(c)) return true;
        letters++;
    }
    return letters <= 1;
}

/* Length of the hyphen at w[0..n) ('-' or U+2010), 0 when none. */
static size_t hyphen_at(const char *w, size_t n) {
    if (n >= 1 && w[0] == '-') return 1;
    if (n >= 3 && memcmp(w, "\xe2\x80\x90", 3) == 0) return 3;
    return 0;
}

static bool has_hyphen(const char *w, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (hyphen_at(w + i, n - i)) return true;
    return false;
}

/* The dictionary's verdict on w[0..n), cached. */
static bool dic_ok(app_spell *sp, const char *w, size_t n) {
    uint8_t v = wset_get(&sp->cache, w, n);
    if (v) return v == 1;
    char *d = to_dic(sp, w, n);
    bool ok = d == NULL || Hunspell_spell(sp->h, d) != 0; /* unconvertible: not flagged */
    mt_free(d);
    if (sp->cache.n >= APP_SPELL_CACHE) wset_clear(&sp->cache);
    wset_put(&sp->cache, w, n, ok ? 1 : 2); /* out of memory: just not cached */
    return ok;
}

typedef struct spans {
    app_spell_span *out;
    int max, found;
} spans;

static void emit(spans *o, size_t at, size_t len) {
    if (o->found < o->max) o->out[o->found] = (app_spell_span){at, len};
    o->found++;
}

/* Checks the word text[at, at + len) of a text of n bytes, adding the
** misspelled spans to o: the word, or for a hyphenated word that the
** dictionary rejects, its parts that are wrong on their own.  When a part
** is left alone by a rule (an acronym: "CDDB-Server") the other parts
** decide; when every part is a dictionary word the whole word is wrong. */
static void check_word(app_spell *sp, const char *text, size_t n, size_t at, size_t len, spans *o) {
    const char *w = text + at;
    if (exempt_chars(w, len) || is_allowed(sp, w, len)) return;
    bool hy = has_hyphen(w, len);
    if (!hy && exempt_case(w, len)) return;
    if (dic_ok(sp, w, len)) return;
    /* an abbreviation: the word with the '.' after it ("usw.") */
    if (at + len < n && text[at + len] == '.' && len < 62) {
        char ab[64];
        memcpy(ab, w, len);
        ab[len] = '.';
        if (dic_ok(sp, ab, len + 1)) return;
    }
    if (!hy) {
        emit(o, at, len);
        return;
    }
    int before = o->found;
    bool ruled = false;
    for (size_t a = 0, k = 0; k <= len;) {
        size_t h = k < len ? hyphen_at(w + k, len - k) : 1;
        if (h == 0) {
            k++;
            continue;
        }
        if (k > a) {
            if (exempt_case(w + a, k - a) || is_allowed(sp, w + a, k - a))
                ruled = true;
            else if (!dic_ok(sp, w + a, k - a))
                emit(o, at + a, k - a);
        }
        k += h;
        a = k;
    }
    if (o->found == before && !ruled) emit(o, at, len);
}

bool app_spell_word_ok(app_spell *sp, const char *w, size_t n) {
    spans o = {NULL, 0, 0};
    check_word(sp, w, n, 0, n, &o);
    return o.found == 0;
}

/* Marks the bytes of every blank-delimited chunk that looks like an
** address or a path. */
static void mask_addresses(const char *s, size_t n, uint8_t *mask) {
    for (size_t i = 0; i < n;) {
        if (is_blank((unsigned char)s[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && !is_blank((unsigned char)s[j]))
            j++;
        size_t cl = j - i;
        bool addr = memchr(s + i, '@', cl) != NULL || s[i] == '/' || s[i] == '~' || s[i] == '\\' ||
                    (cl >= 4 && strncasecmp(s + i, "www.", 4) == 0);
        for (size_t k = i; !addr && k + 3 <= j; k++)
            if (memcmp(s + k, "://", 3) == 0) addr = true;
        if (addr) memset(mask + i, 1, cl);
        i = j;
    }
}

int app_spell_check(app_spell *sp, const char *text, app_spell_span *out, int max) {
    size_t n = strlen(text);
    if (n == 0) return 0;
    uint8_t small[512];
    uint8_t *mask = n <= sizeof small ? small : mt_try_malloc(n);
    if (mask == NULL) {
        mt_seterr(MT_ERR_NOMEM, "spell: out of memory");
        return -1;
    }
    memset(mask, 0, n);
    app_ph *ph = NULL;
    int nph = 0;
    if (app_ph_scan(text, &ph, &nph) != MT_OK) {
        if (mask != small) mt_free(mask);
        return -1;
    }
    for (int k = 0; k < nph; k++)
        memset(mask + ph[k].at, 1, ph[k].len);
    mt_free(ph);
    mask_addresses(text, n, mask);
    spans o = {out, max, 0};
    size_t i = 0;
    tok t;
    while (next_word(text, n, mask, &i, &t))
        check_word(sp, text, n, t.at, t.len, &o);
    if (mask != small) mt_free(mask);
    return o.found;
}

int app_spell_suggest(app_spell *sp, const char *word, char **out, int max) {
    char *d = to_dic(sp, word, strlen(word));
    if (d == NULL) return 0;
    char **list = NULL;
    int n = Hunspell_suggest(sp->h, &list, d);
    mt_free(d);
    int got = 0;
    for (int i = 0; i < n && got < max; i++) {
        char *u =
            sp->utf8 ? mt_try_strdup(list[i]) : convert(sp->from_dic, list[i], strlen(list[i]));
        if (u == NULL) continue;
        out[got++] = u;
    }
    if (list) Hunspell_free_list(sp->h, &list, n);
    return got;
}

mt_status app_spell_add(app_spell *sp, const char *word) {
    size_t n = word ? strlen(word) : 0;
    if (n == 0) return mt_seterr(MT_ERR_INVALID, "spell: no word to add");
    for (size_t i = 0; i < n; i++)
        if (is_blank((unsigned char)word[i]))
            return mt_seterr(MT_ERR_INVALID, "spell: '%.60s' is not one word", word);
    if (sp->st) {
        mt_status rc = store_spell_add_word(sp->st, sp->name, word);
        if (rc != MT_OK) return rc;
    }
    if (add_personal(sp, word) != 0) return mt_seterr(MT_ERR_NOMEM, "spell: out of memory");
    if (sp->cache.cap) {
        size_t i = wset_slot(&sp->cache, word, n);
        if (sp->cache.key[i]) sp->cache.val[i] = 1;
    }
    return MT_OK;
}
