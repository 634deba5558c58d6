/*
** metrics.c: sacreBLEU 2.x BLEU (13a tokenizer, exp smoothing) and chrF (see
** metrics.h).  Written from sacreBLEU's definitions:
**
**   13a tokenizer (tokenizers/tokenizer_13a.py + tokenizer_re.py), on the segment
**   after BLEU's rstrip():
**     1. remove "<skipped>", remove "-\n", "\n" -> " ", then "&quot;" -> '"',
**        "&amp;" -> '&', "&lt;" -> '<', "&gt;" -> '>' (str.replace, in this order)
**     2. pad with one space on each side
**     3. re.sub passes, each over the whole string, left to right, non-overlapping:
**          ([{-~[-` -&(-+:-@/])  -> " \1 "     punctuation/symbols get spaces
**          ([^0-9])([.,])        -> "\1 \2 "   . and , unless preceded by a digit
**          ([.,])([^0-9])        -> " \1 \2"   . and , unless followed by a digit
**          ([0-9])(-)            -> "\1 \2 "   - after a digit
**     4. split on whitespace (Python str.split(): Unicode whitespace)
**   The passes work on UTF-8 bytes here: every pattern byte is ASCII, a multi-byte
**   character never contains an ASCII byte, and a match of [^0-9] on the last
**   (or first) byte of a multi-byte character inserts the spaces at the same place
**   as the code-point match in Python, so the output is identical.
**
**   BLEU segment statistics: hypothesis length, closest reference length, and per
**   order n = 1..4 the clipped matches min(c_hyp(g), max_r c_r(g)) and the total
**   hypothesis n-grams.
**
**   chrF segment statistics: per order n = 1..6 over the code points left after
**   removing whitespace: [hyp n-grams (0 if the reference has none of that order),
**   ref n-grams, sum over g of min(c_hyp(g), c_ref(g))].
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "mt.h"
#include "vocab.h"

/* ------------------------------------------------------------------ UTF-8 */

/* Decodes the code point at s[i] of valid UTF-8; returns its byte length. */
static size_t utf8_next(const unsigned char *s, size_t i, uint32_t *cp) {
    unsigned c = s[i];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if ((c & 0xE0) == 0xC0) {
        *cp = ((c & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu);
        return 2;
    }
    if ((c & 0xF0) == 0xE0) {
        *cp = ((c & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
        return 3;
    }
    *cp = ((c & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) |
          (s[i + 3] & 0x3Fu);
    return 4;
}

/* Python's str.isspace(), which str.split() and str.rstrip() use. */
static bool py_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

static mt_status check_utf8(const char *s, const char *what) {
    size_t bad = 0, n = strlen(s);
    if (!mt_utf8_valid(s, n, &bad))
        return mt_seterr(MT_ERR_INVALID, "%s is not valid UTF-8 (byte 0x%02x at offset %zu)", what,
                         (unsigned)(unsigned char)s[bad], bad);
    return MT_OK;
}

/* ---------------------------------------------------------- 13a tokenizer */

/* str.replace(from, to) in place; to is never longer than from. */
static size_t replace_inplace(char *s, size_t n, const char *from, const char *to) {
    size_t fl = strlen(from), tl = strlen(to), r = 0, w = 0;
    while (r < n) {
        if (n - r >= fl && memcmp(s + r, from, fl) == 0) {
            memcpy(s + w, to, tl);
            w += tl;
            r += fl;
        } else {
            s[w++] = s[r++];
        }
    }
    return w;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* [{-~[-` -&(-+:-@/] */
static bool tok_punct(char ch) {
    unsigned c = (unsigned char)ch;
    return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) ||
           (c >= 0x28 && c <= 0x2B) || (c >= 0x3A && c <= 0x40) || c == 0x2F;
}

/* The four re.sub passes; dst must hold 3 * n (pass 0) or 2 * n bytes. */
static size_t regex_pass(int pass, const char *s, size_t n, char *d) {
    size_t i = 0, w = 0;
    while (i < n) {
        char a = s[i], b = i + 1 < n ? s[i + 1] : '\0';
        bool two = i + 1 < n;
        if (pass == 0 && tok_punct(a)) {
            d[w++] = ' ', d[w++] = a, d[w++] = ' ';
            i++;
        } else if (pass == 1 && two && !is_digit(a) && (b == '.' || b == ',')) {
            d[w++] = a, d[w++] = ' ', d[w++] = b, d[w++] = ' ';
            i += 2;
        } else if (pass == 2 && two && (a == '.' || a == ',') && !is_digit(b)) {
            d[w++] = ' ', d[w++] = a, d[w++] = ' ', d[w++] = b;
            i += 2;
        } else if (pass == 3 && two && is_digit(a) && b == '-') {
            d[w++] = a, d[w++] = ' ', d[w++] = '-', d[w++] = ' ';
            i += 2;
        } else {
            d[w++] = a;
            i++;
        }
    }
    return w;
}

typedef struct tok {
    const char *s;
    uint32_t len;
} tok;

typedef struct tokens {
    char *buf; /* tokenized text, tokens point into it */
    tok *t;
    int64_t n;
} tokens;

static void tokens_free(tokens *t) {
    mt_free(t->buf);
    mt_free(t->t);
    t->buf = NULL;
    t->t = NULL;
    t->n = 0;
}

/* Python str.split(): the whitespace-separated pieces of s[0..n). Writes to out when
** not NULL; returns the count. */
static int64_t py_split(const char *s, size_t n, tok *out) {
    const unsigned char *u = (const unsigned char *)s;
    int64_t k = 0;
    size_t i = 0, start = 0;
    bool in_tok = false;
    while (i < n) {
        uint32_t cp;
        size_t len = utf8_next(u, i, &cp);
        if (py_space(cp)) {
            if (in_tok) {
                if (out) out[k] = (tok){s + start, (uint32_t)(i - start)};
                k++;
                in_tok = false;
            }
        } else if (!in_tok) {
            in_tok = true;
            start = i;
        }
        i += len;
    }
    if (in_tok) {
        if (out) out[k] = (tok){s + start, (uint32_t)(n - start)};
        k++;
    }
    return k;
}

/* rstrip() + 13a + split, for valid UTF-8 input. */
static mt_status tokenize_13a(const char *line, tokens *out) {
    mt_status rc = MT_ERR_NOMEM;
    char *a = NULL, *b = NULL;
    const unsigned char *u = (const unsigned char *)line;
    size_t n = strlen(line), end = 0;
    for (size_t i = 0; i < n;) { /* rstrip(): end of the last non-space character */
        uint32_t cp;
        size_t len = utf8_next(u, i, &cp);
        i += len;
        if (!py_space(cp)) end = i;
    }
    size_t cap = 24 * (end + 2) + 1;
    a = (char *)mt_try_malloc(cap);
    b = (char *)mt_try_malloc(cap);
    if (a == NULL || b == NULL) goto fail;
    a[0] = ' ';
    memcpy(a + 1, line, end);
    size_t m = end;
    static const char *const repl[][2] = {
        {"<skipped>", ""}, {"-\n", ""},   {"\n", " "},   {"&quot;", "\""},
        {"&amp;", "&"},    {"&lt;", "<"}, {"&gt;", ">"},
    };
    for (size_t r = 0; r < sizeof repl / sizeof repl[0]; r++)
        m = replace_inplace(a + 1, m, repl[r][0], repl[r][1]);
    a[m + 1] = ' ';
    m += 2;
    m = regex_pass(0, a, m, b);
    m = regex_pass(1, b, m, a);
    m = regex_pass(2, a, m, b);
    m = regex_pass(3, b, m, a);
    a[m] = '\0';
    mt_free(b);
    b = NULL;
    out->n = py_split(a, m, NULL);
    out->t = (tok *)mt_try_malloc((size_t)(out->n > 0 ? out->n : 1) * sizeof(tok));
    if (out->t == NULL) goto fail;
    py_split(a, m, out->t);
    out->buf = a;
    return MT_OK;
fail:
    mt_free(a);
    mt_free(b);
    return mt_seterr(rc, "out of memory tokenizing a %zu-byte segment", n);
}

mt_status mt_tokenize_13a(const char *line, char **out) {
    MT_ASSERT(line != NULL && out != NULL);
    mt_status rc = check_utf8(line, "segment");
    if (rc != MT_OK) return rc;
    tokens t = {0};
    rc = tokenize_13a(line, &t);
    if (rc != MT_OK) return rc;
    size_t len = 0;
    for (int64_t i = 0; i < t.n; i++)
        len += t.t[i].len + 1;
    char *s = (char *)mt_try_malloc(len + 1);
    if (s == NULL) {
        tokens_free(&t);
        return mt_seterr(MT_ERR_NOMEM, "out of memory tokenizing");
    }
    char *p = s;
    for (int64_t i = 0; i < t.n; i++) {
        if (i > 0) *p++ = ' ';
        memcpy(p, t.t[i].s, t.t[i].len);
        p += t.t[i].len;
    }
    *p = '\0';
    tokens_free(&t);
    *out = s;
    return MT_OK;
}

/* ----------------------------------------------------------------- n-grams */

/* A word n-gram: token ids, unused positions 0 (ids start at 1). */
typedef struct wgram {
    uint32_t w[MT_BLEU_ORDER];
} wgram;

static int wgram_cmp(const void *pa, const void *pb) {
    const wgram *a = (const wgram *)pa, *b = (const wgram *)pb;
    for (int i = 0; i < MT_BLEU_ORDER; i++)
        if (a->w[i] != b->w[i]) return a->w[i] < b->w[i] ? -1 : 1;
    return 0;
}

/* Number of copies of g in the sorted array a[0..n). */
static int64_t wgram_count(const wgram *a, int64_t n, const wgram *g) {
    int64_t lo = 0, hi = n;
    while (lo < hi) { /* first element >= g */
        int64_t mid = lo + (hi - lo) / 2;
        if (wgram_cmp(&a[mid], g) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t k = 0;
    while (lo + k < n && wgram_cmp(&a[lo + k], g) == 0)
        k++;
    return k;
}

/* A character n-gram: up to 6 code points of 21 bits packed into two words. */
typedef struct cgram {
    uint64_t hi, lo;
} cgram;

static int cgram_cmp(const void *pa, const void *pb) {
    const cgram *a = (const cgram *)pa, *b = (const cgram *)pb;
    if (a->hi != b->hi) return a->hi < b->hi ? -1 : 1;
    if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
    return 0;
}

/* Sorted n-grams of order n of cp[0..len) into out; returns their count. */
static int64_t char_ngrams(const uint32_t *cp, int64_t len, int n, cgram *out) {
    int64_t k = len - n + 1;
    if (k <= 0) return 0;
    for (int64_t i = 0; i < k; i++) {
        cgram g = {0, 0};
        for (int j = 0; j < n; j++) {
            if (j < 3)
                g.hi = (g.hi << 21) | cp[i + j];
            else
                g.lo = (g.lo << 21) | cp[i + j];
        }
        out[i] = g;
    }
    qsort(out, (size_t)k, sizeof(cgram), cgram_cmp);
    return k;
}

/* Sum over distinct g of min(count in a, count in b); a and b sorted. */
static int64_t sorted_overlap(const cgram *a, int64_t na, const cgram *b, int64_t nb) {
    int64_t i = 0, j = 0, m = 0;
    while (i < na && j < nb) {
        int c = cgram_cmp(&a[i], &b[j]);
        if (c < 0)
            i++;
        else if (c > 0)
            j++;
        else
            m++, i++, j++;
    }
    return m;
}

/* ------------------------------------------------------------------- BLEU */

void mt_bleu_init(mt_bleu_stats *s) { memset(s, 0, sizeof *s); }

static void note_nrefs(int *acc, int n) {
    if (*acc == 0)
        *acc = n;
    else if (*acc != n)
        *acc = -1;
}

/* Keeps the non-empty references (sacreBLEU drops "" and None). */
static mt_status usable_refs(const char *const *refs, int nrefs, const char **kept, int *n_kept) {
    int k = 0;
    for (int i = 0; i < nrefs; i++) {
        if (refs[i] == NULL || refs[i][0] == '\0') continue;
        mt_status rc = check_utf8(refs[i], "reference");
        if (rc != MT_OK) return rc;
        kept[k++] = refs[i];
    }
    if (k == 0)
        return mt_seterr(MT_ERR_INVALID, "empty reference: every reference of this segment is "
                                         "empty (sacreBLEU refuses such a segment)");
    *n_kept = k;
    return MT_OK;
}

/* Token ids for the words of all segments' tokens (1-based; equal strings, equal id). */
static mt_status intern(tokens *segs, int n_segs, uint32_t **ids_out) {
    int64_t total = 0;
    for (int i = 0; i < n_segs; i++)
        total += segs[i].n;
    size_t cap = 16;
    while (cap < 2 * (size_t)total + 1)
        cap *= 2;
    const tok **table = (const tok **)mt_try_calloc(cap, sizeof(tok *));
    uint32_t *tid = (uint32_t *)mt_try_calloc(cap, sizeof(uint32_t));
    uint32_t *ids = (uint32_t *)mt_try_malloc((size_t)(total > 0 ? total : 1) * sizeof(uint32_t));
    if (table == NULL || tid == NULL || ids == NULL) {
        mt_free(table);
        mt_free(tid);
        mt_free(ids);
        return mt_seterr(MT_ERR_NOMEM, "out of memory counting n-grams");
    }
    uint32_t next = 1;
    int64_t k = 0;
    for (int i = 0; i < n_segs; i++) {
        for (int64_t j = 0; j < segs[i].n; j++) {
            const tok *t = &segs[i].t[j];
            uint64_t h = 1469598103934665603ull;
            for (uint32_t c = 0; c < t->len; c++)
                h = (h ^ (unsigned char)t->s[c]) * 1099511628211ull;
            size_t slot = (size_t)h & (cap - 1);
            while (table[slot] != NULL &&
                   !(table[slot]->len == t->len && memcmp(table[slot]->s, t->s, t->len) == 0))
                slot = (slot + 1) & (cap - 1);
            if (table[slot] == NULL) {
                table[slot] = t;
                tid[slot] = next++;
            }
            ids[k++] = tid[slot];
        }
    }
    mt_free(table);
    mt_free(tid);
    *ids_out = ids;
    return MT_OK;
}

/* Sorted n-grams of order n of ids[0..len) into out; returns their count. */
static int64_t word_ngrams(const uint32_t *ids, int64_t len, int n, wgram *out) {
    int64_t k = len - n + 1;
    if (k <= 0) return 0;
    for (int64_t i = 0; i < k; i++) {
        wgram g = {{0}};
        for (int j = 0; j < n; j++)
            g.w[j] = ids[i + j];
        out[i] = g;
    }
    qsort(out, (size_t)k, sizeof(wgram), wgram_cmp);
    return k;
}

mt_status mt_bleu_add(mt_bleu_stats *s, const char *hyp, const char *const *refs, int nrefs) {
    MT_ASSERT(s != NULL && hyp != NULL && (refs != NULL || nrefs == 0));
    mt_status rc = check_utf8(hyp, "hypothesis");
    if (rc != MT_OK) return rc;
    const char *kept_small[8];
    const char **kept =
        nrefs <= 8 ? kept_small : (const char **)mt_try_malloc((size_t)nrefs * sizeof(char *));
    tokens *segs = NULL;
    uint32_t *ids = NULL;
    wgram *grams = NULL;
    int64_t *off = NULL;
    int n_kept = 0, n_segs = 0;
    if (kept == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory scoring a segment");
    rc = usable_refs(refs, nrefs, kept, &n_kept);
    if (rc != MT_OK) goto done;

    /* segs[0] = hypothesis, segs[1..] = references */
    segs = (tokens *)mt_try_calloc((size_t)n_kept + 1, sizeof(tokens));
    if (segs == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "out of memory scoring a segment");
        goto done;
    }
    for (int i = 0; i <= n_kept; i++) {
        rc = tokenize_13a(i == 0 ? hyp : kept[i - 1], &segs[i]);
        if (rc != MT_OK) goto done;
        n_segs++;
    }
    rc = intern(segs, n_segs, &ids);
    if (rc != MT_OK) goto done;

    int64_t total_tokens = 0;
    for (int i = 0; i < n_segs; i++)
        total_tokens += segs[i].n;
    grams = (wgram *)mt_try_malloc((size_t)(total_tokens > 0 ? total_tokens : 1) * sizeof(wgram));
    if (grams == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "out of memory counting n-grams");
        goto done;
    }

    /* Closest reference length; ties go to the shorter one. */
    int64_t hyp_len = segs[0].n, closest_diff = -1, closest_len = -1;
    for (int r = 1; r < n_segs; r++) {
        int64_t len = segs[r].n, diff = len > hyp_len ? len - hyp_len : hyp_len - len;
        if (closest_diff == -1 || diff < closest_diff) {
            closest_diff = diff;
            closest_len = len;
        } else if (diff == closest_diff && len < closest_len) {
            closest_len = len;
        }
    }

    int64_t correct[MT_BLEU_ORDER] = {0}, total[MT_BLEU_ORDER] = {0};
    off = (int64_t *)mt_try_malloc(2 * (size_t)n_segs * sizeof(int64_t));
    if (off == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "out of memory counting n-grams");
        goto done;
    }
    int64_t *cnt = off + n_segs;
    for (int n = 1; n <= MT_BLEU_ORDER; n++) {
        /* grams: the hypothesis n-grams, then each reference's, each run sorted */
        int64_t pos = 0, base = 0;
        for (int i = 0; i < n_segs; i++) {
            off[i] = pos;
            cnt[i] = word_ngrams(ids + base, segs[i].n, n, grams + pos);
            pos += cnt[i];
            base += segs[i].n;
        }
        const wgram *h = grams;
        for (int64_t i = 0; i < cnt[0];) {
            int64_t c = 1;
            while (i + c < cnt[0] && wgram_cmp(&h[i + c], &h[i]) == 0)
                c++;
            int64_t best = 0; /* max over references, as sacreBLEU merges them */
            for (int r = 1; r < n_segs; r++) {
                int64_t k = wgram_count(grams + off[r], cnt[r], &h[i]);
                if (k > best) best = k;
            }
            correct[n - 1] += c < best ? c : best;
            total[n - 1] += c;
            i += c;
        }
    }
    s->sys_len += hyp_len;
    s->ref_len += closest_len;
    for (int n = 0; n < MT_BLEU_ORDER; n++) {
        s->correct[n] += correct[n];
        s->total[n] += total[n];
    }
    s->n_segments++;
    note_nrefs(&s->nrefs, n_kept);
    rc = MT_OK;
done:
    for (int i = 0; i < n_segs; i++)
        tokens_free(&segs[i]);
    mt_free(segs);
    mt_free(ids);
    mt_free(grams);
    mt_free(off);
    if (kept != kept_small) mt_free((void *)kept);
    return rc;
}

/* sacreBLEU's my_log: log(0) is a large negative number, not -inf. */
static double my_log(double x) { return x == 0.0 ? -9999999999.0 : log(x); }

mt_bleu_score mt_bleu_compute(const mt_bleu_stats *s, bool effective_order) {
    mt_bleu_score sc;
    memset(&sc, 0, sizeof sc);
    sc.sys_len = s->sys_len;
    sc.ref_len = s->ref_len;
    for (int n = 0; n < MT_BLEU_ORDER; n++) {
        sc.counts[n] = s->correct[n];
        sc.totals[n] = s->total[n];
    }
    sc.ratio = s->ref_len ? (double)s->sys_len / (double)s->ref_len : 0.0;
    if (s->sys_len < s->ref_len)
        sc.bp = s->sys_len > 0 ? exp(1.0 - (double)s->ref_len / (double)s->sys_len) : 0.0;
    else
        sc.bp = 1.0;

    bool any = false;
    for (int n = 0; n < MT_BLEU_ORDER; n++)
        any |= s->correct[n] != 0;
    if (!any) return sc; /* sacreBLEU #141: no match at all gives 0 */

    double smooth = 1.0;
    int eff_order = MT_BLEU_ORDER;
    for (int n = 1; n <= MT_BLEU_ORDER; n++) {
        if (s->total[n - 1] == 0) break;
        if (effective_order) eff_order = n;
        if (s->correct[n - 1] == 0) {
            smooth *= 2;
            sc.precisions[n - 1] = 100.0 / (smooth * (double)s->total[n - 1]);
        } else {
            sc.precisions[n - 1] = 100.0 * (double)s->correct[n - 1] / (double)s->total[n - 1];
        }
    }
    double sum = 0.0;
    for (int n = 0; n < eff_order; n++)
        sum += my_log(sc.precisions[n]);
    sc.score = sc.bp * exp(sum / eff_order);
    return sc;
}

mt_status mt_bleu_sentence(const char *hyp, const char *const *refs, int nrefs, double *score) {
    mt_bleu_stats s;
    mt_bleu_init(&s);
    mt_status rc = mt_bleu_add(&s, hyp, refs, nrefs);
    if (rc != MT_OK) return rc;
    *score = mt_bleu_compute(&s, true).score;
    return MT_OK;
}

static const char *nrefs_str(int nrefs, char *tmp, size_t cap) {
    if (nrefs < 0) return "var";
    snprintf(tmp, cap, "%d", nrefs);
    return tmp;
}

int mt_bleu_signature(const mt_bleu_stats *s, bool effective_order, char *buf, size_t cap) {
    char tmp[16];
    return snprintf(buf, cap, "nrefs:%s|case:mixed|eff:%s|tok:13a|smooth:exp|version:%s",
                    nrefs_str(s->nrefs, tmp, sizeof tmp), effective_order ? "yes" : "no",
                    MT_SACREBLEU_VERSION);
}

int mt_bleu_format(const mt_bleu_score *sc, int width, const char *signature, char *buf,
                   size_t cap) {
    return snprintf(buf, cap,
                    "BLEU%s%s = %.*f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %lld "
                    "ref_len = %lld)",
                    signature ? "|" : "", signature ? signature : "", width, sc->score,
                    sc->precisions[0], sc->precisions[1], sc->precisions[2], sc->precisions[3],
                    sc->bp, sc->ratio, (long long)sc->sys_len, (long long)sc->ref_len);
}

/* ------------------------------------------------------------------- chrF */

void mt_chrf_init(mt_chrf_stats *s) { memset(s, 0, sizeof *s); }

/* CHRF._compute_f_score with eps_smoothing=False. */
static double chrf_f(const int64_t *hyp, const int64_t *ref, const int64_t *match) {
    const int factor = MT_CHRF_BETA * MT_CHRF_BETA;
    double avg_prec = 0.0, avg_rec = 0.0;
    int effective_order = 0;
    for (int i = 0; i < MT_CHRF_ORDER; i++) {
        if (hyp[i] > 0 && ref[i] > 0) {
            avg_prec += (double)match[i] / (double)hyp[i];
            avg_rec += (double)match[i] / (double)ref[i];
            effective_order++;
        }
    }
    if (effective_order == 0) {
        avg_prec = avg_rec = 0.0;
    } else {
        avg_prec /= effective_order;
        avg_rec /= effective_order;
    }
    if (avg_prec + avg_rec != 0.0) {
        double score = (1 + factor) * avg_prec * avg_rec;
        score /= (factor * avg_prec) + avg_rec;
        return 100 * score;
    }
    return 0.0;
}

double mt_chrf_compute(const mt_chrf_stats *s) { return chrf_f(s->hyp, s->ref, s->match); }

/* Code points of s without whitespace (''.join(s.split())); returns the count. */
static int64_t nonspace_codepoints(const char *s, uint32_t *out) {
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s);
    int64_t k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += utf8_next(u, i, &cp);
        if (!py_space(cp)) out[k++] = cp;
    }
    return k;
}

mt_status mt_chrf_add(mt_chrf_stats *s, const char *hyp, const char *const *refs, int nrefs) {
    MT_ASSERT(s != NULL && hyp != NULL && (refs != NULL || nrefs == 0));
    mt_status rc = check_utf8(hyp, "hypothesis");
    if (rc != MT_OK) return rc;
    const char *kept_small[8];
    const char **kept =
        nrefs <= 8 ? kept_small : (const char **)mt_try_malloc((size_t)nrefs * sizeof(char *));
    uint32_t *hcp = NULL, *rcp = NULL;
    cgram *hg = NULL, *rg = NULL;
    int n_kept = 0;
    if (kept == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory scoring a segment");
    rc = usable_refs(refs, nrefs, kept, &n_kept);
    if (rc != MT_OK) goto done;

    size_t max_ref = 0;
    for (int r = 0; r < n_kept; r++) {
        size_t len = strlen(kept[r]);
        if (len > max_ref) max_ref = len;
    }
    size_t hlen = strlen(hyp);
    hcp = (uint32_t *)mt_try_malloc((hlen + 1) * sizeof(uint32_t));
    rcp = (uint32_t *)mt_try_malloc((max_ref + 1) * sizeof(uint32_t));
    hg = (cgram *)mt_try_malloc((hlen + 1) * MT_CHRF_ORDER * sizeof(cgram));
    rg = (cgram *)mt_try_malloc((max_ref + 1) * sizeof(cgram));
    if (hcp == NULL || rcp == NULL || hg == NULL || rg == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "out of memory counting character n-grams");
        goto done;
    }
    int64_t hn = nonspace_codepoints(hyp, hcp);
    int64_t hcnt[MT_CHRF_ORDER];
    for (int n = 1; n <= MT_CHRF_ORDER; n++)
        hcnt[n - 1] = char_ngrams(hcp, hn, n, hg + (size_t)(n - 1) * (hlen + 1));

    double best_f = -1.0;
    int64_t best[3][MT_CHRF_ORDER] = {{0}};
    for (int r = 0; r < n_kept; r++) {
        int64_t st[3][MT_CHRF_ORDER]; /* hyp, ref, match */
        int64_t rn = nonspace_codepoints(kept[r], rcp);
        for (int n = 1; n <= MT_CHRF_ORDER; n++) {
            int64_t rcnt = char_ngrams(rcp, rn, n, rg);
            const cgram *h = hg + (size_t)(n - 1) * (hlen + 1);
            st[0][n - 1] = rcnt > 0 ? hcnt[n - 1] : 0;
            st[1][n - 1] = rcnt;
            st[2][n - 1] = sorted_overlap(h, hcnt[n - 1], rg, rcnt);
        }
        double f = chrf_f(st[0], st[1], st[2]);
        if (f > best_f) {
            best_f = f;
            memcpy(best, st, sizeof best);
        }
    }
    for (int n = 0; n < MT_CHRF_ORDER; n++) {
        s->hyp[n] += best[0][n];
        s->ref[n] += best[1][n];
        s->match[n] += best[2][n];
    }
    s->n_segments++;
    note_nrefs(&s->nrefs, n_kept);
    rc = MT_OK;
done:
    mt_free(hcp);
    mt_free(rcp);
    mt_free(hg);
    mt_free(rg);
    if (kept != kept_small) mt_free((void *)kept);
    return rc;
}

mt_status mt_chrf_sentence(const char *hyp, const char *const *refs, int nrefs, double *score) {
    mt_chrf_stats s;
    mt_chrf_init(&s);
    mt_status rc = mt_chrf_add(&s, hyp, refs, nrefs);
    if (rc != MT_OK) return rc;
    *score = mt_chrf_compute(&s);
    return MT_OK;
}

int mt_chrf_signature(const mt_chrf_stats *s, char *buf, size_t cap) {
    char tmp[16];
    return snprintf(buf, cap, "nrefs:%s|case:mixed|eff:yes|nc:%d|nw:0|space:no|version:%s",
                    nrefs_str(s->nrefs, tmp, sizeof tmp), MT_CHRF_ORDER, MT_SACREBLEU_VERSION);
}

int mt_chrf_format(double score, int width, const char *signature, char *buf, size_t cap) {
    return snprintf(buf, cap, "chrF%d%s%s = %.*f", MT_CHRF_BETA, signature ? "|" : "",
                    signature ? signature : "", width, score);
}
