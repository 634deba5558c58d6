/*
** metrics.c: sacreBLEU 2.x BLEU (13a tokenizer, exp smoothing), chrF and TER (see
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
**
**   TER (metrics/ter.py, metrics/lib_ter.py, tokenizers/tokenizer_ter.py): as in
**   metrics.h.  sacreBLEU caches the rows of the distance matrix in a trie of
**   hypothesis prefixes; every row depends only on the words before it and on the
**   (fixed) lengths, so here a shifted candidate reuses the current hypothesis's rows
**   up to the first word the shift moves, which gives the same numbers.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "mt.h"
#include "vocab.h"

/* ------------------------------------------------------------ characters */

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
        size_t len = mt_utf8_decode((const char *)u + i, n - i, &cp);
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
        size_t len = mt_utf8_decode((const char *)u + i, n - i, &cp);
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
        i += mt_utf8_decode((const char *)u + i, n - i, &cp);
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

/* -------------------------------------------------------------- lowercase */

typedef struct uc_run {
    uint32_t first, last, stride;
    int32_t delta;
} uc_run;

typedef struct uc_range {
    uint32_t first, last;
} uc_range;

#include "unicase_data.h"

static bool in_ranges(const uc_range *r, size_t n, uint32_t c) {
    size_t lo = 0, hi = n;
    while (lo < hi) { /* first range with last >= c */
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].last < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && r[lo].first <= c;
}

/* The one-code-point lowercase of c (c itself when it has none). */
static uint32_t simple_lower(uint32_t c) {
    if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
    size_t n = sizeof uc_lower_runs / sizeof uc_lower_runs[0], lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (uc_lower_runs[mid].last < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == n || uc_lower_runs[lo].first > c) return c;
    const uc_run *r = &uc_lower_runs[lo];
    if (r->stride == 2 && ((c - r->first) & 1u) != 0) return c;
    return (uint32_t)((int32_t)c + r->delta);
}

uint32_t mt_unicode_lower(uint32_t c) { return simple_lower(c); }

static bool uc_ignorable_cp(uint32_t c) {
    return in_ranges(uc_ignorable, sizeof uc_ignorable / sizeof uc_ignorable[0], c);
}
static bool uc_cased_cp(uint32_t c) {
    return in_ranges(uc_cased, sizeof uc_cased / sizeof uc_cased[0], c);
}

/* Python's str.lower() of valid UTF-8 s: the one-code-point mappings of the table,
** U+0130 -> "i" U+0307, and U+03A3 -> final U+03C2 when a cased letter precedes it
** and none follows it (case-ignorable code points skipped both ways), else U+03C3.
** *out: free with mt_free. */
static mt_status py_lower(const char *s, char **out) {
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s), ncp = 0;
    /* A lowercase is at most 3/2 as long in UTF-8 (2 -> 3 bytes). */
    char *o = (char *)mt_try_malloc(2 * n + 1);
    uint32_t *cp = (uint32_t *)mt_try_malloc((n + 1) * sizeof(uint32_t));
    if (o == NULL || cp == NULL) {
        mt_free(o);
        mt_free(cp);
        return mt_seterr(MT_ERR_NOMEM, "out of memory lowercasing a %zu-byte segment", n);
    }
    for (size_t i = 0; i < n;)
        i += mt_utf8_decode((const char *)u + i, n - i, &cp[ncp++]);
    size_t w = 0;
    for (size_t i = 0; i < ncp; i++) {
        uint32_t c = cp[i];
        if (c == 0x130) {
            o[w++] = 'i';
            w += mt_utf8_encode(0x307, o + w);
        } else if (c == 0x3A3) {
            size_t j = i;
            while (j > 0 && uc_ignorable_cp(cp[j - 1]))
                j--;
            bool final = j > 0 && uc_cased_cp(cp[j - 1]);
            if (final) {
                size_t k = i + 1;
                while (k < ncp && uc_ignorable_cp(cp[k]))
                    k++;
                final = k == ncp || !uc_cased_cp(cp[k]);
            }
            w += mt_utf8_encode(final ? 0x3C2 : 0x3C3, o + w);
        } else {
            w += mt_utf8_encode(simple_lower(c), o + w);
        }
    }
    o[w] = '\0';
    mt_free(cp);
    *out = o;
    return MT_OK;
}

/* -------------------------------------------------------------------- TER */

#define TER_INF (1 << 29) /* sacreBLEU's "infinite" distance; INF + 1 still fits */

enum { TER_NOP = 'N', TER_SUB = 'S', TER_DEL = 'D', TER_INS = 'I', TER_UNDEF = 'x' };

/* Beam edit distance of hypotheses of length nh against one reference.  The band of
** row i (hypothesis words 0..i) is the columns [lo[i], hi[i]); every hypothesis of
** the sentence has the same length, so the same bands. */
typedef struct ter_ctx {
    const uint32_t *ref;
    int64_t nh, nr;
    int64_t *lo, *hi, *off; /* per row 0..nh */
    int32_t *cost;          /* current hypothesis: the band matrix */
    char *op;
    int32_t *scratch;     /* a shifted candidate's rows */
    uint32_t *cand;       /* a shifted candidate's words */
    int64_t *align;       /* per reference word: its hypothesis position (-1: before) */
    int64_t *herr, *rerr; /* prefix sums of hypothesis / reference errors */
} ter_ctx;

static void ter_ctx_free(ter_ctx *c) {
    mt_free(c->lo);
    mt_free(c->cost);
    mt_free(c->op);
    mt_free(c->scratch);
    mt_free(c->cand);
    mt_free(c->align);
    mt_free(c->herr);
    memset(c, 0, sizeof *c);
}

static mt_status ter_ctx_init(ter_ctx *c, const uint32_t *ref, int64_t nr, int64_t nh) {
    memset(c, 0, sizeof *c);
    c->ref = ref;
    c->nr = nr;
    c->nh = nh;
    c->lo = (int64_t *)mt_try_malloc(3 * (size_t)(nh + 1) * sizeof(int64_t));
    if (c->lo == NULL) goto nomem;
    c->hi = c->lo + nh + 1;
    c->off = c->hi + nh + 1;
    /* BeamEditDistance: the pseudo-diagonal floor(i * nr / nh), beam 25 widened
    ** to ceil(ratio / 2 + 25) when the lengths differ that much; the last row is
    ** computed up to the last column. */
    double ratio = nh > 0 ? (double)nr / (double)nh : 1.0;
    int64_t beam = MT_TER_BEAM_WIDTH;
    if ((double)MT_TER_BEAM_WIDTH < ratio / 2) beam = (int64_t)ceil(ratio / 2 + MT_TER_BEAM_WIDTH);
    int64_t total = 0;
    for (int64_t i = 0; i <= nh; i++) {
        if (i == 0) {
            c->lo[i] = 0;
            c->hi[i] = nr + 1;
        } else {
            int64_t diag = (int64_t)floor((double)i * ratio);
            c->lo[i] = diag - beam > 0 ? diag - beam : 0;
            c->hi[i] = diag + beam < nr + 1 ? diag + beam : nr + 1;
            if (i == nh) c->hi[i] = nr + 1;
            if (c->hi[i] < c->lo[i]) c->hi[i] = c->lo[i];
        }
        c->off[i] = total;
        total += c->hi[i] - c->lo[i];
    }
    c->cost = (int32_t *)mt_try_malloc((size_t)total * sizeof(int32_t));
    c->op = (char *)mt_try_malloc((size_t)total);
    c->scratch = (int32_t *)mt_try_malloc((size_t)total * sizeof(int32_t));
    c->cand = (uint32_t *)mt_try_malloc((size_t)(nh + 1) * sizeof(uint32_t));
    c->align = (int64_t *)mt_try_malloc((size_t)(nr + 1) * sizeof(int64_t));
    c->herr = (int64_t *)mt_try_malloc((size_t)(nh + nr + 2) * sizeof(int64_t));
    if (!c->cost || !c->op || !c->scratch || !c->cand || !c->align || !c->herr) goto nomem;
    c->rerr = c->herr + nh + 1;
    for (int64_t j = 0; j <= nr; j++) { /* row 0: j insertions */
        c->cost[j] = (int32_t)j;
        c->op[j] = TER_INS;
    }
    return MT_OK;
nomem:
    ter_ctx_free(c);
    return mt_seterr(MT_ERR_NOMEM, "out of memory computing TER (%lld x %lld words)", (long long)nh,
                     (long long)nr);
}

static inline int32_t band_at(const ter_ctx *c, const int32_t *m, int64_t i, int64_t j) {
    return j >= c->lo[i] && j < c->hi[i] ? m[c->off[i] + j - c->lo[i]] : TER_INF;
}

/* Rows from+1..nh of the edit distance of words h (which agree with the current
** hypothesis on words 0..from-1): row `from` is read from c->cost, later rows go to
** dst (and their operations to ops when not NULL).  Returns the distance.  Per cell
** the first strictly cheaper of: diagonal (no-op or substitution), deletion of a
** hypothesis word (from row i-1), insertion of a reference word (from column j-1). */
static int32_t ter_rows(ter_ctx *c, const uint32_t *h, int64_t from, int32_t *dst, char *ops) {
    for (int64_t i = from + 1; i <= c->nh; i++) {
        const int32_t *prev = i - 1 == from ? c->cost : dst;
        int32_t *row = dst + c->off[i]; /* column j at row[j - lo] */
        char *orow = ops ? ops + c->off[i] : NULL;
        const int64_t lo = c->lo[i];
        for (int64_t j = c->lo[i]; j < c->hi[i]; j++) {
            int32_t best;
            char op;
            if (j == 0) {
                best = band_at(c, prev, i - 1, 0) + 1;
                op = TER_DEL;
            } else {
                bool same = h[i - 1] == c->ref[j - 1];
                int32_t diag = band_at(c, prev, i - 1, j - 1) + (same ? 0 : 1);
                int32_t del = band_at(c, prev, i - 1, j) + 1;
                int32_t ins = j > lo ? row[j - 1 - lo] + 1 : TER_INF + 1;
                best = TER_INF;
                op = TER_UNDEF;
                if (diag < best) best = diag, op = same ? TER_NOP : TER_SUB;
                if (del < best) best = del, op = TER_DEL;
                if (ins < best) best = ins, op = TER_INS;
            }
            row[j - lo] = best;
            if (orow) orow[j - lo] = op;
        }
    }
    return band_at(c, c->nh == from ? c->cost : dst, c->nh, c->nr);
}

/* Edit distance of the current hypothesis h into c->cost / c->op, then its
** alignment: walking the operations back from (nh, nr), a reference word gets the
** position of the last hypothesis word at or before it; errors are substitutions,
** and hypothesis (reference) words that only the deletion (insertion) consumes. */
static int32_t ter_align(ter_ctx *c, const uint32_t *h) {
    int32_t d = ter_rows(c, h, 0, c->cost, c->op);
    int64_t i = c->nh, j = c->nr;
    /* herr[k + 1] (rerr[k + 1]): 1 if hypothesis (reference) word k is wrong; made
    ** prefix sums below.  c->align[k]: position of the hypothesis word that reference
    ** word k follows or matches (sacreBLEU's trace_to_alignment on the flipped trace). */
    int64_t *herr = c->herr, *rerr = c->rerr;
    herr[0] = rerr[0] = 0;
    while (i > 0 || j > 0) {
        MT_ASSERT(j >= c->lo[i] && j < c->hi[i]); /* a finite path stays in the bands */
        char op = c->op[c->off[i] + j - c->lo[i]];
        MT_ASSERT(op != TER_UNDEF);
        if (op == TER_NOP || op == TER_SUB) {
            herr[i] = rerr[j] = op == TER_SUB;
            c->align[j - 1] = i - 1;
            i--, j--;
        } else if (op == TER_DEL) {
            herr[i] = 1;
            i--;
        } else { /* TER_INS: the reference word aligns after hypothesis word i - 1 */
            rerr[j] = 1;
            c->align[j - 1] = i - 1;
            j--;
        }
    }
    for (int64_t k = 1; k <= c->nh; k++)
        herr[k] += herr[k - 1];
    for (int64_t k = 1; k <= c->nr; k++)
        rerr[k] += rerr[k - 1];
    return d;
}

/* sacreBLEU's _perform_shift: move h[start..start+len) to `target` into out. */
static void ter_perform_shift(const uint32_t *h, int64_t n, int64_t start, int64_t len,
                              int64_t target, uint32_t *out) {
    int64_t w = 0;
#define TER_COPY(a, b)                                                                             \
    for (int64_t k_ = (a); k_ < (b); k_++)                                                         \
    out[w++] = h[k_]
    if (target < start) {
        TER_COPY(0, target);
        TER_COPY(start, start + len);
        TER_COPY(target, start);
        TER_COPY(start + len, n);
    } else if (target > start + len) {
        TER_COPY(0, start);
        TER_COPY(start + len, target);
        TER_COPY(start, start + len);
        TER_COPY(target, n);
    } else { /* the slice h[start + len : len + target], clamped to n */
        int64_t m = len + target < n ? len + target : n;
        TER_COPY(0, start);
        TER_COPY(start + len, m);
        TER_COPY(start, start + len);
        TER_COPY(m, n);
    }
#undef TER_COPY
    MT_ASSERT(w == n);
}

typedef struct ter_shift {
    int64_t gain, len, start, target;
} ter_shift;

/* a ranks above b: larger gain, then longer, then earlier start, then earlier target. */
static bool ter_better(const ter_shift *a, const ter_shift *b) {
    if (a->gain != b->gain) return a->gain > b->gain;
    if (a->len != b->len) return a->len > b->len;
    if (a->start != b->start) return a->start < b->start;
    return a->target < b->target;
}

/* One round of sacreBLEU's _shift on h: the best shift of the candidates (in the
** order start_h, start_r, length), counting evaluated candidates in *checked.
** Returns the current hypothesis's edit distance; *found tells whether any shift
** was evaluated. */
static int32_t ter_best_shift(ter_ctx *c, const uint32_t *h, int64_t *checked, ter_shift *best,
                              bool *found) {
    const int64_t nh = c->nh, nr = c->nr;
    const uint32_t *r = c->ref;
    int32_t pre = ter_align(c, h);
    *found = false;
    for (int64_t sh = 0; sh < nh; sh++) {
        for (int64_t sr = 0; sr < nr; sr++) {
            if (sr - sh > MT_TER_MAX_SHIFT_DIST || sh - sr > MT_TER_MAX_SHIFT_DIST) continue;
            for (int64_t len = 1; len <= MT_TER_MAX_SHIFT_SIZE; len++) {
                if (h[sh + len - 1] != r[sr + len - 1]) break;
                /* Only shift words that are wrong to a place where the reference
                ** is wrong, and not inside themselves. */
                if (c->herr[sh + len] - c->herr[sh] != 0 && c->rerr[sr + len] - c->rerr[sr] != 0 &&
                    !(sh <= c->align[sr] && c->align[sr] < sh + len)) {
                    int64_t prev_target = -1;
                    for (int64_t o = -1; o < len; o++) {
                        int64_t target;
                        if (sr + o == -1)
                            target = 0;
                        else if (sr + o < nr)
                            target = c->align[sr + o] + 1;
                        else
                            break;
                        if (target == prev_target) continue;
                        prev_target = target;
                        ter_perform_shift(h, nh, sh, len, target, c->cand);
                        int64_t from = target < sh ? target : sh;
                        ter_shift s = {pre - ter_rows(c, c->cand, from, c->scratch, NULL), len, sh,
                                       target};
                        ++*checked;
                        if (!*found || ter_better(&s, best)) *best = s;
                        *found = true;
                    }
                    if (*checked >= MT_TER_MAX_SHIFT_CANDIDATES) return pre;
                }
                if (sh + len == nh || sr + len == nr) break;
            }
        }
    }
    return pre;
}

/* sacreBLEU's translation_edit_rate on word ids: greedy shifts while the best one
** lowers the edit distance (at most MT_TER_MAX_SHIFT_CANDIDATES candidates in all),
** then the edit distance; edits = shifts + distance. */
static mt_status ter_edits_ids(const uint32_t *hyp, int64_t nh, const uint32_t *ref, int64_t nr,
                               int64_t *edits) {
    if (nr == 0) {
        *edits = nh; /* every hypothesis word deleted */
        return MT_OK;
    }
    ter_ctx c;
    mt_status rc = ter_ctx_init(&c, ref, nr, nh);
    if (rc != MT_OK) return rc;
    uint32_t *cur = (uint32_t *)mt_try_malloc((size_t)(nh + 1) * sizeof(uint32_t));
    if (cur == NULL) {
        ter_ctx_free(&c);
        return mt_seterr(MT_ERR_NOMEM, "out of memory computing TER");
    }
    if (nh > 0) memcpy(cur, hyp, (size_t)nh * sizeof(uint32_t));
    int64_t shifts = 0, checked = 0;
    int32_t dist;
    for (;;) {
        ter_shift best = {0, 0, 0, 0};
        bool found;
        dist = ter_best_shift(&c, cur, &checked, &best, &found);
        /* sacreBLEU stops before applying the shift when the budget is spent */
        if (checked >= MT_TER_MAX_SHIFT_CANDIDATES || !found || best.gain <= 0) break;
        ter_perform_shift(cur, nh, best.start, best.len, best.target, c.cand);
        memcpy(cur, c.cand, (size_t)nh * sizeof(uint32_t));
        shifts++;
    }
    *edits = shifts + dist;
    mt_free(cur);
    ter_ctx_free(&c);
    return MT_OK;
}

/* Lowercase (unless case_sensitive) and split on whitespace. */
static mt_status ter_tokenize(const char *s, bool case_sensitive, tokens *out) {
    char *buf = NULL;
    if (case_sensitive) {
        size_t n = strlen(s);
        buf = (char *)mt_try_malloc(n + 1);
        if (buf == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory tokenizing");
        memcpy(buf, s, n + 1);
    } else {
        mt_status rc = py_lower(s, &buf);
        if (rc != MT_OK) return rc;
    }
    size_t n = strlen(buf);
    out->n = py_split(buf, n, NULL);
    out->t = (tok *)mt_try_malloc((size_t)(out->n > 0 ? out->n : 1) * sizeof(tok));
    if (out->t == NULL) {
        mt_free(buf);
        return mt_seterr(MT_ERR_NOMEM, "out of memory tokenizing");
    }
    py_split(buf, n, out->t);
    out->buf = buf;
    return MT_OK;
}

/* Edits of hyp against each of refs[0..nrefs) (already checked UTF-8, any may be
** empty), into edits[] and ref_len[]. */
static mt_status ter_segment(const char *hyp, const char *const *refs, int nrefs,
                             bool case_sensitive, int64_t *edits, int64_t *ref_len) {
    tokens *segs = (tokens *)mt_try_calloc((size_t)nrefs + 1, sizeof(tokens));
    uint32_t *ids = NULL;
    int n_segs = 0;
    mt_status rc = MT_OK;
    if (segs == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory scoring a segment");
    for (int i = 0; i <= nrefs && rc == MT_OK; i++) {
        rc = ter_tokenize(i == 0 ? hyp : refs[i - 1], case_sensitive, &segs[i]);
        if (rc == MT_OK) n_segs++;
    }
    if (rc == MT_OK) rc = intern(segs, n_segs, &ids);
    if (rc == MT_OK) {
        const uint32_t *ref_ids = ids + segs[0].n;
        for (int r = 1; r <= nrefs && rc == MT_OK; r++) {
            rc = ter_edits_ids(ids, segs[0].n, ref_ids, segs[r].n, &edits[r - 1]);
            ref_len[r - 1] = segs[r].n;
            ref_ids += segs[r].n;
        }
    }
    for (int i = 0; i < n_segs; i++)
        tokens_free(&segs[i]);
    mt_free(segs);
    mt_free(ids);
    return rc;
}

mt_status mt_ter_edits(const char *hyp, const char *ref, bool case_sensitive, int64_t *edits,
                       int64_t *ref_words) {
    MT_ASSERT(hyp != NULL && ref != NULL && edits != NULL && ref_words != NULL);
    mt_status rc = check_utf8(hyp, "hypothesis");
    if (rc == MT_OK) rc = check_utf8(ref, "reference");
    if (rc != MT_OK) return rc;
    return ter_segment(hyp, &ref, 1, case_sensitive, edits, ref_words);
}

void mt_ter_init(mt_ter_stats *s) { memset(s, 0, sizeof *s); }

mt_status mt_ter_add(mt_ter_stats *s, const char *hyp, const char *const *refs, int nrefs) {
    MT_ASSERT(s != NULL && hyp != NULL && (refs != NULL || nrefs == 0));
    mt_status rc = check_utf8(hyp, "hypothesis");
    if (rc != MT_OK) return rc;
    const char *kept_small[8];
    int64_t small[2][8];
    bool big = nrefs > 8;
    const char **kept =
        big ? (const char **)mt_try_malloc((size_t)nrefs * sizeof(char *)) : kept_small;
    int64_t *edits = big ? (int64_t *)mt_try_malloc(2 * (size_t)nrefs * sizeof(int64_t)) : small[0];
    int64_t *len = big ? edits + nrefs : small[1];
    int n_kept = 0;
    if (kept == NULL || edits == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "out of memory scoring a segment");
        goto done;
    }
    rc = usable_refs(refs, nrefs, kept, &n_kept);
    if (rc == MT_OK) rc = ter_segment(hyp, kept, n_kept, s->case_sensitive, edits, len);
    if (rc != MT_OK) goto done;
    /* _compute_segment_statistics: the fewest edits, the average reference length */
    int64_t best = edits[0], len_sum = 0;
    for (int r = 0; r < n_kept; r++) {
        if (edits[r] < best) best = edits[r];
        len_sum += len[r];
    }
    s->edits += best;
    s->ref_words += (double)len_sum / (double)n_kept;
    s->n_segments++;
    note_nrefs(&s->nrefs, n_kept);
done:
    if (big) {
        mt_free((void *)kept);
        mt_free(edits);
    }
    return rc;
}

double mt_ter_compute(const mt_ter_stats *s) {
    double score;
    if (s->ref_words > 0)
        score = (double)s->edits / s->ref_words;
    else
        score = s->edits > 0 ? 1.0 : 0.0; /* sacreBLEU >= 2.3.2, see metrics.h */
    return 100 * score;
}

mt_status mt_ter_sentence(const char *hyp, const char *const *refs, int nrefs, double *score) {
    mt_ter_stats s;
    mt_ter_init(&s);
    mt_status rc = mt_ter_add(&s, hyp, refs, nrefs);
    if (rc != MT_OK) return rc;
    *score = mt_ter_compute(&s);
    return MT_OK;
}

int mt_ter_signature(const mt_ter_stats *s, char *buf, size_t cap) {
    char tmp[16];
    return snprintf(buf, cap, "nrefs:%s|case:%s|tok:tercom|norm:no|punct:yes|asian:no|version:%s",
                    nrefs_str(s->nrefs, tmp, sizeof tmp), s->case_sensitive ? "mixed" : "lc",
                    MT_SACREBLEU_VERSION);
}

int mt_ter_format(double score, int width, const char *signature, char *buf, size_t cap) {
    return snprintf(buf, cap, "TER%s%s = %.*f", signature ? "|" : "", signature ? signature : "",
                    width, score);
}
