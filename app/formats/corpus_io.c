/*
** corpus_io.c: parallel text from PO/MO/XLIFF/TMX files and export of the
** store's confirmed segments (behaviour in corpus_io.h).
**
** GNU MO file (gettext's compiled catalogue).  All numbers are unsigned 32
** bit in the byte order of the magic number (little- or big-endian):
**
**   OFFSET  SIZE  FIELD
**   0       4     magic 0x950412de (bytes de 12 04 95: little-endian file;
**                 95 04 12 de: big-endian file)
**   4       4     revision = major << 16 | minor; major 0 or 1 (minor >= 1
**                 adds system-dependent strings, below)
**   8       4     N: number of strings (entries, the header included)
**   12      4     O: offset of the table of original strings
**   16      4     T: offset of the table of translations
**   20      4     S: size of the hash table (ignored here)
**   24      4     H: offset of the hash table (ignored here)
**   28      4     number of system-dependent segments    (minor >= 1 only)
**   32      4     offset of the segment table             (minor >= 1 only)
**   36      4     number of system-dependent strings      (minor >= 1 only)
**   40      4     offset of their original-string table   (minor >= 1 only)
**   44      4     offset of their translation table       (minor >= 1 only)
**   O + 8i  4+4   length L (bytes, without the NUL) and offset of original i
**   T + 8i  4+4   length and offset of translation i
**   ...           the strings; byte offset+L is a NUL
**
** An original string is "msgid", "msgctxt\x04msgid" (with a context),
** "msgid\0msgid_plural" (plural) or "msgctxt\x04msgid\0msgid_plural".  A
** translation holds the plural forms separated by NULs.  The entry whose
** original is "" is the header ("Key: value\n" lines: Content-Type with the
** charset, Language, Plural-Forms).  Strings in another charset than UTF-8
** (old catalogues: ISO-8859-1, KOI8-R, EUC-JP, ...) are converted with
** iconv.  System-dependent strings (with
** <inttypes.h> macros such as <PRIu64>) are left out with a warning.
**
** TMX (1.1 to 1.4): <tmx><header .../><body><tu><tuv xml:lang="en"><seg>
** text with inline codes</seg></tuv>...</tu>...</body></tmx>.  Inside <seg>,
** <bpt> <ept> <it> <ph> <ut> hold native codes (dropped), <hi> holds text
** (kept), <sub> only occurs inside the dropped ones.  TMX 1.1 spells the
** language attribute "lang".  Parsing: XML_PARSE_NONET, no entity
** substitution, no DTD loading.
*/
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <iconv.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "corpus_io.h"
#include "doc.h"
#include "vocab.h"
#include "xml_errors.h"

/* ============================================================ UTF-8 */

/* Code point at s[i] (n bytes in all) and its length; invalid bytes are
** U+FFFD of length 1. */
static uint32_t u8_at(const char *s, size_t i, size_t n, size_t *len) {
    const unsigned char *p = (const unsigned char *)s + i;
    size_t left = n - i;
    unsigned c = p[0];
    if (c < 0x80) {
        *len = 1;
        return c;
    }
    size_t k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
    if (k == 0 || k > left) {
        *len = 1;
        return 0xfffd;
    }
    uint32_t cp = c & (0x7fu >> k);
    for (size_t j = 1; j < k; j++) {
        if ((p[j] & 0xc0) != 0x80) {
            *len = 1;
            return 0xfffd;
        }
        cp = cp << 6 | (p[j] & 0x3f);
    }
    *len = k;
    return cp;
}

/* Start of the code point that ends just before s[i] (i > 0). */
static size_t u8_prev(const char *s, size_t i) {
    size_t j = i - 1;
    while (j > 0 && i - j < 4 && ((unsigned char)s[j] & 0xc0) == 0x80)
        j--;
    return j;
}

static bool cp_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

/* Letters and digits: exact for ASCII, approximate beyond (see the header). */
static bool cp_alnum(uint32_t c) {
    if (c < 0x80) return isalnum((int)c) != 0;
    if (c < 0xc0)
        return c == 0xaa || c == 0xb2 || c == 0xb3 || c == 0xb5 || c == 0xb9 || c == 0xba ||
               (c >= 0xbc && c <= 0xbe);
    if (c == 0xd7 || c == 0xf7) return false;
    if (c >= 0x300 && c <= 0x36f) return false; /* combining marks             */
    if (c >= 0x2000 && c <= 0x2bff)             /* punctuation, symbols, ...   */
        return (c >= 0x2070 && c <= 0x209f) || (c >= 0x2100 && c <= 0x218f);
    if (c >= 0x2e00 && c <= 0x2e7f) return false; /* supplemental punctuation    */
    if (c >= 0x3000 && c <= 0x303f) return c >= 0x3005 && c <= 0x3007;
    if (c >= 0xe000 && c <= 0xf8ff) return false; /* private use                 */
    if (c >= 0xfe00 && c <= 0xfe6f) return false; /* variation sel., small forms */
    if (c >= 0xff00 && c <= 0xff65)               /* full-width ASCII            */
        return (c >= 0xff10 && c <= 0xff19) || (c >= 0xff21 && c <= 0xff3a) ||
               (c >= 0xff41 && c <= 0xff5a);
    if (c >= 0xfff0 && c <= 0xffff) return false;
    if (c >= 0x1f000 && c <= 0x1ffff) return false; /* emoji, pictographs      */
    return true;
}

/* Case of Latin, Greek and Cyrillic letters: 1 upper, -1 lower, 0 other. */
static int cp_case(uint32_t c) {
    if (c < 0x80) return isupper((int)c) ? 1 : islower((int)c) ? -1 : 0;
    if (c >= 0xc0 && c <= 0xde) return c == 0xd7 ? 0 : 1;
    if (c >= 0xdf && c <= 0xff) return c == 0xf7 ? 0 : -1;
    if (c >= 0x100 && c <= 0x17f) {
        if (c == 0x138 || c == 0x149 || c == 0x17f) return -1;
        if (c == 0x178) return 1;
        bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e);
        return ((c & 1) != 0) == odd_upper ? 1 : -1;
    }
    if (c == 0x386 || (c >= 0x388 && c <= 0x3ab)) return c == 0x3a2 ? 0 : 1;
    if (c >= 0x3ac && c <= 0x3ce) return -1;
    if (c >= 0x400 && c <= 0x42f) return 1;
    if (c >= 0x430 && c <= 0x45f) return -1;
    if (c >= 0x460 && c <= 0x4ff) {
        if (c >= 0x482 && c <= 0x489) return 0;
        if (c == 0x4c0) return 1;
        bool odd_upper = c >= 0x4c1 && c <= 0x4ce;
        return ((c & 1) != 0) == odd_upper ? 1 : -1;
    }
    return 0;
}

static bool blank(const char *s) {
    size_t n = strlen(s), len;
    for (size_t i = 0; i < n; i += len)
        if (!cp_space(u8_at(s, i, n, &len))) return false;
    return true;
}

/* ======================================================= text helpers */

/* Bytes of the line break or tab starting at p (0: none). */
static size_t break_len(const unsigned char *p) {
    switch (p[0]) {
    case '\r': return p[1] == '\n' ? 2 : 1;
    case '\n':
    case '\t':
    case '\v':
    case '\f': return 1;
    case 0xc2: return p[1] == 0x85 ? 2 : 0;
    case 0xe2: return p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9) ? 3 : 0;
    default: return 0;
    }
}

void app_corpus_flatten(char *s) {
    unsigned char *r = (unsigned char *)s, *w = r;
    while (*r) {
        size_t k = break_len(r);
        if (k) {
            *w++ = ' ';
            r += k;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

/* Writes s flattened as above. */
static void put_flat(FILE *f, const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        const unsigned char *q = p;
        while (*q && break_len(q) == 0)
            q++;
        fwrite(p, 1, (size_t)(q - p), f);
        if (*q == '\0') break;
        fputc(' ', f);
        p = q + break_len(q);
    }
}

/* Normalised character of a language code: lower case, '_' as '-'. */
static int lang_char(char c) { return c == '_' ? '-' : tolower((unsigned char)c); }

static size_t primary_len(const char *s) { return strcspn(s, "-_@."); }

bool app_corpus_lang_match(const char *want, const char *have) {
    if (want == NULL || have == NULL) return false;
    size_t i = 0;
    while (want[i] && have[i] && lang_char(want[i]) == lang_char(have[i]))
        i++;
    if (want[i] == '\0' && have[i] == '\0') return true;
    /* a bare language matches the same language with a region/script */
    size_t pw = primary_len(want), ph = primary_len(have);
    if (pw != ph || pw == 0 || (want[pw] != '\0' && have[ph] != '\0')) return false;
    for (size_t k = 0; k < pw; k++)
        if (lang_char(want[k]) != lang_char(have[k])) return false;
    return true;
}

/* ------------------------------------------------------- accelerators */

/* Length of an entity (&amp; &#38; &#x26;) starting at s[0] == '&', else 0. */
static size_t entity_len(const char *s) {
    size_t i = 1;
    if (s[1] == '#') {
        i = 2;
        bool hex = s[2] == 'x' || s[2] == 'X';
        if (hex) i = 3;
        size_t start = i;
        while (hex ? isxdigit((unsigned char)s[i]) : isdigit((unsigned char)s[i]))
            i++;
        if (i == start) return 0;
    } else {
        while (isalpha((unsigned char)s[i]))
            i++;
        if (i == 1) return 0;
    }
    return s[i] == ';' ? i + 1 : 0;
}

/* Counts the markers ch in s (see corpus_io.h); *first gets the first. */
static int find_markers(const char *s, char ch, size_t *first) {
    size_t n = strlen(s), len;
    int count = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] == ch) {
            if (s[i + 1] == ch) {
                i += 2;
                continue;
            }
            if (ch == '&' && entity_len(s + i) > 0) {
                i++;
                continue;
            }
            if (i + 1 < n && cp_alnum(u8_at(s, i + 1, n, &len))) {
                if (count == 0) *first = i;
                count++;
            }
        }
        i++;
    }
    return count;
}

/* The run of non-space characters around byte i: [*a, *b). */
static void token_at(const char *s, size_t i, size_t *a, size_t *b) {
    size_t n = strlen(s), len;
    size_t x = i;
    while (x > 0) {
        size_t p = u8_prev(s, x);
        if (cp_space(u8_at(s, p, n, &len))) break;
        x = p;
    }
    size_t y = i;
    while (y < n && !cp_space(u8_at(s, y, n, &len)))
        y += len;
    *a = x;
    *b = y;
}

/* Is t[0..tn) one of the white-space separated words of s? */
static bool is_word_of(const char *s, const char *t, size_t tn) {
    size_t n = strlen(s), len;
    for (size_t i = 0; i < n;) {
        if (cp_space(u8_at(s, i, n, &len))) {
            i += len;
            continue;
        }
        size_t a, b;
        token_at(s, i, &a, &b);
        if (b - a == tn && memcmp(s + a, t, tn) == 0) return true;
        i = b;
    }
    return false;
}

/* Does the token contain [A-Za-z0-9]_[a-z0-9]+_ ? */
static bool snake_word(const char *t, size_t n) {
    for (size_t j = 0; j + 3 < n; j++) {
        if (!isalnum((unsigned char)t[j]) || t[j + 1] != '_') continue;
        size_t k = j + 2;
        while (k < n && (islower((unsigned char)t[k]) || isdigit((unsigned char)t[k])))
            k++;
        if (k > j + 2 && k < n && t[k] == '_') return true;
    }
    return false;
}

static bool is_quote_cp(uint32_t c) {
    return c == 0xbb || c == 0xab || c == 0x201e || c == 0x201c || c == '"' || c == '\'' ||
           c == '(' || c == ')';
}

/* Is the token (quotes and brackets at its ends ignored) capitalised: no
** lower-case first letter and no upper-case letter after it? */
static bool capitalised(const char *t, size_t n) {
    size_t a = 0, b = n, len;
    while (a < b && is_quote_cp(u8_at(t, a, n, &len)))
        a += len;
    while (b > a) {
        size_t p = u8_prev(t, b);
        if (!is_quote_cp(u8_at(t, p, n, &len))) break;
        b = p;
    }
    bool first = true;
    for (size_t i = a; i < b; i += len) {
        int c = cp_case(u8_at(t, i, b, &len));
        if (first ? c < 0 : c > 0) return false;
        first = false;
    }
    return true;
}

/* ^\W*[A-Z]{1,3}&[A-Z]{1,3}\W*$ with \W = not a letter, digit or '_'. */
static bool literal_amp(const char *t, size_t n) {
    size_t i = 0, len;
    while (i < n) {
        uint32_t c = u8_at(t, i, n, &len);
        if (cp_alnum(c) || c == '_') break;
        i += len;
    }
    size_t k = 0;
    while (i + k < n && t[i + k] >= 'A' && t[i + k] <= 'Z')
        k++;
    if (k < 1 || k > 3 || i + k >= n || t[i + k] != '&') return false;
    i += k + 1;
    k = 0;
    while (i + k < n && t[i + k] >= 'A' && t[i + k] <= 'Z')
        k++;
    if (k < 1 || k > 3) return false;
    for (i += k; i < n; i += len) {
        uint32_t c = u8_at(t, i, n, &len);
        if (cp_alnum(c) || c == '_') return false;
    }
    return true;
}

static void remove_byte(char *s, size_t i) { memmove(s + i, s + i + 1, strlen(s + i + 1) + 1); }

static void collapse_double_amp(char *s) {
    char *r = s, *w = s;
    while (*r) {
        if (r[0] == '&' && r[1] == '&') {
            *w++ = '&';
            r += 2;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

void app_corpus_strip_accelerators(char *src, char *trg) {
    static const char kinds[2] = {'_', '&'};
    for (int k = 0; k < 2; k++) {
        char ch = kinds[k];
        size_t ie = 0, it = 0, len;
        int ne = find_markers(src, ch, &ie), nt = find_markers(trg, ch, &it);
        if (ne > 1 || nt > 1 || (ne == 0 && nt == 0)) continue;
        if (ch == '_' && ne) {
            size_t a, b;
            token_at(src, ie, &a, &b);
            bool inner = ie > 0 && cp_alnum(u8_at(src, u8_prev(src, ie), strlen(src), &len));
            if (inner && is_word_of(trg, src + a, b - a)) continue; /* file_name copied */
            if (snake_word(src + a, b - a)) continue;
        }
        if (ch == '_' && nt && !ne) {
            size_t n = strlen(trg), a, b;
            token_at(trg, it, &a, &b);
            bool inner = it > 0 && cp_alnum(u8_at(trg, u8_prev(trg, it), n, &len));
            bool lower_next = it + 1 < n && cp_case(u8_at(trg, it + 1, n, &len)) < 0;
            if (inner && lower_next && !capitalised(trg + a, b - a)) continue;
        }
        if (ch == '&') {
            if (ne) {
                size_t a, b;
                token_at(src, ie, &a, &b);
                if (literal_amp(src + a, b - a)) continue;
            }
            if (nt && !ne) continue; /* target-only '&': most likely literal */
        }
        if (ne) remove_byte(src, ie);
        if (nt) remove_byte(trg, it);
    }
    if (strstr(src, "&&") && strstr(trg, "&&")) {
        collapse_double_amp(src);
        collapse_double_amp(trg);
    }
}

/* ------------------------------------------------------------ times */

static bool take_digits(const char **p, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i])) return false;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return true;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar. */
static int64_t days_from_civil(int64_t y, int m, int d) {
    /* count years from March, so that the leap day ends the year */
    if (m <= 2) y -= 1;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;                         /* [0, 399]   */
    int64_t mp = m > 2 ? m - 3 : m + 9;                  /* March = 0  */
    int64_t doy = (153 * mp + 2) / 5 + d - 1;            /* [0, 365]   */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; /* [0, 146096] */
    return era * 146097 + doe - 719468; /* 719468: days from 0000-03-01 to 1970-01-01 */
}

static int days_in_month(int y, int m) {
    static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : dm[m - 1];
}

mt_status app_parse_iso8601(const char *s, int64_t *ms) {
    const char *p = s;
    int y, mo, d, h = 0, mi = 0, sec = 0, frac = 0;
    bool ext;
    if (!take_digits(&p, 4, &y)) goto bad;
    ext = *p == '-';
    if (ext) p++;
    if (!take_digits(&p, 2, &mo)) goto bad;
    if (ext && *p++ != '-') goto bad;
    if (!take_digits(&p, 2, &d)) goto bad;
    if (*p == 'T' || *p == 't' || (*p == ' ' && ext)) {
        p++;
        if (!take_digits(&p, 2, &h)) goto bad;
        if (ext && *p++ != ':') goto bad;
        if (!take_digits(&p, 2, &mi)) goto bad;
        bool has_sec = ext ? *p == ':' : isdigit((unsigned char)*p);
        if (has_sec) {
            if (ext) p++;
            if (!take_digits(&p, 2, &sec)) goto bad;
            if (*p == '.' || *p == ',') {
                p++;
                if (!isdigit((unsigned char)*p)) goto bad;
                int nd = 0; /* milliseconds: the first 3 digits, the rest cut off */
                for (; isdigit((unsigned char)*p); p++) {
                    if (nd < 3) {
                        frac = frac * 10 + (*p - '0');
                        nd++;
                    }
                }
                for (; nd < 3; nd++)
                    frac *= 10;
            }
        }
    }
    bool zone = false;
    int off = 0;
    if (*p == 'Z' || *p == 'z') {
        zone = true;
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om = 0;
        if (!take_digits(&p, 2, &oh) || oh > 23) goto bad;
        bool colon = *p == ':';
        if (colon) p++;
        if ((colon || isdigit((unsigned char)*p)) && (!take_digits(&p, 2, &om) || om > 59))
            goto bad;
        zone = true;
        off = sign * (oh * 60 + om) * 60;
    }
    if (*p != '\0') goto bad;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 60)
        goto bad;
    int64_t secs;
    if (zone) {
        secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off;
    } else {
        struct tm tm;
        memset(&tm, 0, sizeof tm);
        tm.tm_year = y - 1900;
        tm.tm_mon = mo - 1;
        tm.tm_mday = d;
        tm.tm_hour = h;
        tm.tm_min = mi;
        tm.tm_sec = sec;
        tm.tm_isdst = -1;
        errno = 0;
        time_t t = mktime(&tm);
        if (t == (time_t)-1 && errno != 0) goto bad;
        secs = (int64_t)t;
    }
    *ms = secs * 1000 + frac;
    return MT_OK;
bad:
    return mt_seterr(MT_ERR_INVALID,
                     "'%s' is not an ISO 8601 date or time (e.g. 2024-05-01, "
                     "2024-05-01T14:30:00Z, 2024-05-01 14:30+02:00)",
                     s);
}

/* ========================================================= detection */

const char *app_corpus_kind_name(app_corpus_kind k) {
    switch (k) {
    case APP_CORPUS_PO: return "po";
    case APP_CORPUS_MO: return "mo";
    case APP_CORPUS_XLIFF: return "xliff";
    case APP_CORPUS_TMX: return "tmx";
    }
    return "?";
}

static bool has_suffix(const char *path, const char *suffix) {
    size_t n = strlen(path), k = strlen(suffix);
    return n > k && strcasecmp(path + n - k, suffix) == 0;
}

/* Name of the root element of an XML text (prefix dropped) into name; false
** when it does not look like XML or the root is not in the first bytes. */
static bool xml_root(const char *p, char *name, size_t cap) {
    if (memcmp(p, "\xef\xbb\xbf", 3) == 0) p += 3;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (*p != '<') return false;
        if (p[1] == '?') {
            p = strstr(p, "?>");
            if (p == NULL) return false;
            p += 2;
        } else if (strncmp(p, "<!--", 4) == 0) {
            p = strstr(p, "-->");
            if (p == NULL) return false;
            p += 3;
        } else if (p[1] == '!') {
            p = strchr(p, '>');
            if (p == NULL) return false;
            p++;
        } else {
            p++;
            size_t n = strcspn(p, " \t\r\n/>");
            if (n == 0 || p[n] == '\0') return false;
            const char *colon = memchr(p, ':', n);
            if (colon) {
                n -= (size_t)(colon + 1 - p);
                p = colon + 1;
            }
            snprintf(name, cap, "%.*s", (int)n, p);
            return true;
        }
    }
}

mt_status app_corpus_detect(const char *path, app_corpus_kind *out) {
    static const struct {
        const char *suffix;
        app_corpus_kind kind;
    } suffixes[] = {
        {".po", APP_CORPUS_PO},   {".pot", APP_CORPUS_PO},    {".mo", APP_CORPUS_MO},
        {".gmo", APP_CORPUS_MO},  {".xlf", APP_CORPUS_XLIFF}, {".xliff", APP_CORPUS_XLIFF},
        {".tmx", APP_CORPUS_TMX},
    };
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        if (has_suffix(path, suffixes[i].suffix)) {
            *out = suffixes[i].kind;
            return MT_OK;
        }
    }
    enum { HEAD = 65536 };
    char *head = mt_try_malloc(HEAD + 1);
    if (head == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        mt_free(head);
        return mt_seterr(MT_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    }
    size_t n = fread(head, 1, HEAD, f);
    bool err = ferror(f) != 0;
    fclose(f);
    mt_status rc = MT_OK;
    head[n] = '\0';
    char root[64];
    const unsigned char *u = (const unsigned char *)head;
    if (err) {
        rc = mt_seterr(MT_ERR_IO, "cannot read %s", path);
    } else if (n >= 4 && ((u[0] == 0xde && u[1] == 0x12 && u[2] == 0x04 && u[3] == 0x95) ||
                          (u[0] == 0x95 && u[1] == 0x04 && u[2] == 0x12 && u[3] == 0xde))) {
        *out = APP_CORPUS_MO;
    } else if (xml_root(head, root, sizeof root) && !strcmp(root, "tmx")) {
        *out = APP_CORPUS_TMX;
    } else if (xml_root(head, root, sizeof root) && !strcmp(root, "xliff")) {
        *out = APP_CORPUS_XLIFF;
    } else {
        rc = mt_seterr(MT_ERR_FORMAT, "%s: not a PO, MO, XLIFF or TMX file", path);
        for (const char *l = head; l != NULL; l = strchr(l, '\n')) {
            while (*l == '\n' || *l == ' ' || *l == '\t')
                l++;
            if (!strncmp(l, "msgid ", 6) || !strncmp(l, "msgctxt ", 8)) {
                *out = APP_CORPUS_PO;
                rc = MT_OK;
                break;
            }
        }
    }
    mt_free(head);
    return rc;
}

/* ================================================================ MO */

static uint32_t rd32(const unsigned char *p, bool be) {
    return be ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
              : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

void app_mo_free(app_mo *m) {
    if (m == NULL) return;
    mt_free(m->entries);
    mt_free(m->forms);
    mt_free(m->data);
    mt_free(m->lang_buf);
    mt_arena_free(m->converted);
    mt_free(m);
}

/* Value of header field key ("Language:") in *v (n bytes), false if absent. */
static bool header_field(const char *h, const char *key, const char **v, size_t *n) {
    size_t k = strlen(key);
    for (const char *l = h; l && *l; l = strchr(l, '\n')) {
        if (*l == '\n') l++;
        if (strncasecmp(l, key, k) != 0) continue;
        const char *a = l + k;
        while (*a == ' ' || *a == '\t')
            a++;
        const char *b = a + strcspn(a, "\n");
        while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r'))
            b--;
        *v = a;
        *n = (size_t)(b - a);
        return true;
    }
    return false;
}

/* The converter from the header's charset to UTF-8 in *cd; (iconv_t)-1 for
** UTF-8, ASCII and the template's placeholder CHARSET (nothing to do).
** MT_ERR_UNSUPPORTED for a charset iconv does not know. */
static mt_status open_charset(const char *path, const char *header, iconv_t *cd) {
    *cd = (iconv_t)-1;
    const char *v;
    size_t n;
    if (!header_field(header, "Content-Type:", &v, &n)) return MT_OK;
    const char *cs = strstr(v, "charset=");
    if (cs == NULL || cs >= v + n) return MT_OK;
    cs += 8;
    size_t k = strcspn(cs, " \t\r\n;");
    static const char *const utf8[] = {"UTF-8", "UTF8", "ASCII", "US-ASCII", "CHARSET"};
    for (size_t i = 0; i < sizeof utf8 / sizeof utf8[0]; i++)
        if (strlen(utf8[i]) == k && strncasecmp(cs, utf8[i], k) == 0) return MT_OK;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(k < 63 ? k : 63), cs);
    *cd = iconv_open("UTF-8", name);
    if (*cd == (iconv_t)-1)
        return mt_seterr(MT_ERR_UNSUPPORTED, "%s: unknown charset %s (not known to iconv)", path,
                         name);
    return MT_OK;
}

/* Converts s[0..*len) to UTF-8 into the arena; *s and *len then describe the
** copy (NUL-terminated). */
static mt_status to_utf8(iconv_t cd, mt_arena *a, const char *path, const char *what, uint32_t i,
                         char **s, uint32_t *len) {
    size_t cap = (size_t)*len * 4 + 8; /* any charset's character: at most 4 UTF-8 bytes */
    char *out = mt_arena_alloc(a, cap, 1);
    if (out == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory reading %s", path);
    char *in = *s, *o = out;
    size_t in_left = *len, out_left = cap - 1;
    iconv(cd, NULL, NULL, NULL, NULL);
    if (iconv(cd, &in, &in_left, &o, &out_left) == (size_t)-1 ||
        iconv(cd, NULL, NULL, &o, &out_left) == (size_t)-1)
        return mt_seterr(MT_ERR_FORMAT, "%s: %s string %u is not in the charset the header names",
                         path, what, i);
    *o = '\0';
    *s = out;
    *len = (uint32_t)(o - out);
    return MT_OK;
}

typedef struct mo_str {
    uint32_t len, off;
} mo_str;

/* Checks string i of a table at tab (N entries) and returns it; utf8: also
** check its encoding. */
static mt_status mo_string(const char *path, const unsigned char *d, size_t size, uint32_t tab,
                           uint32_t i, bool be, const char *what, bool utf8, mo_str *out) {
    const unsigned char *e = d + tab + (size_t)8 * i;
    out->len = rd32(e, be);
    out->off = rd32(e + 4, be);
    if ((uint64_t)out->off + out->len + 1 > size)
        return mt_seterr(MT_ERR_FORMAT,
                         "%s: truncated or damaged MO file: %s string %u (offset %u, %u bytes) "
                         "ends past the end of the file (%zu bytes)",
                         path, what, i, out->off, out->len, size);
    if (d[out->off + out->len] != '\0')
        return mt_seterr(MT_ERR_FORMAT, "%s: damaged MO file: %s string %u is not NUL-terminated",
                         path, what, i);
    size_t bad;
    if (utf8 && !mt_utf8_valid((const char *)d + out->off, out->len, &bad))
        return mt_seterr(MT_ERR_FORMAT, "%s: %s string %u has invalid UTF-8 at byte %zu", path,
                         what, i, bad);
    return MT_OK;
}

mt_status app_mo_read(const char *path, app_mo **out) {
    *out = NULL;
    mt_status rc;
    iconv_t cd = (iconv_t)-1;
    app_mo *m = mt_try_calloc(1, sizeof *m);
    if (m == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory reading %s", path);
    size_t size = 0;
    rc = app_doc_read_file(path, &m->data, &size);
    if (rc != MT_OK) goto fail;
    const unsigned char *d = (const unsigned char *)m->data;
    if (size < 28) {
        rc = mt_seterr(MT_ERR_FORMAT, "%s: truncated MO file (%zu bytes; the header has 28)", path,
                       size);
        goto fail;
    }
    bool be;
    if (rd32(d, false) == 0x950412deu) {
        be = false;
    } else if (rd32(d, true) == 0x950412deu) {
        be = true;
    } else {
        rc = mt_seterr(MT_ERR_FORMAT, "%s: not a MO file (magic number 0x%08x)", path,
                       rd32(d, false));
        goto fail;
    }
    uint32_t rev = rd32(d + 4, be), n = rd32(d + 8, be), otab = rd32(d + 12, be),
             ttab = rd32(d + 16, be);
    if (rev >> 16 > 1) {
        rc = mt_seterr(MT_ERR_UNSUPPORTED, "%s: MO revision %u.%u is not supported", path,
                       rev >> 16, rev & 0xffff);
        goto fail;
    }
    if ((uint64_t)otab + (uint64_t)n * 8 > size || (uint64_t)ttab + (uint64_t)n * 8 > size) {
        rc = mt_seterr(MT_ERR_FORMAT,
                       "%s: truncated or damaged MO file: the string tables (%u entries at "
                       "offsets %u and %u) end past the end of the file (%zu bytes)",
                       path, n, otab, ttab, size);
        goto fail;
    }
    if ((rev & 0xffff) >= 1 && size >= 48 && rd32(d + 36, be) > 0)
        mt_log(MT_LOG_WARN, "%s: %u system-dependent strings (<inttypes.h> macros) left out", path,
               rd32(d + 36, be));

    /* pass 1: check where every string lies, find the header, count forms;
    ** the header's charset is checked before the strings' encoding */
    size_t n_forms = 0;
    const char *header = NULL;
    for (uint32_t i = 0; i < n; i++) {
        mo_str o, t;
        rc = mo_string(path, d, size, otab, i, be, "original", false, &o);
        if (rc == MT_OK) rc = mo_string(path, d, size, ttab, i, be, "translation", false, &t);
        if (rc != MT_OK) goto fail;
        if (o.len == 0) {
            if (header == NULL) header = m->data + t.off;
            continue;
        }
        n_forms++;
        for (uint32_t k = 0; k < t.len; k++)
            n_forms += d[t.off + k] == '\0';
    }
    m->header = header ? header : "";
    rc = open_charset(path, m->header, &cd);
    if (rc != MT_OK) goto fail;
    if (cd != (iconv_t)-1 && mt_arena_init(1 << 16, &m->converted) != MT_OK) goto nomem;
    const char *lv;
    size_t ln;
    if (header_field(m->header, "Language:", &lv, &ln) && ln > 0) {
        m->lang_buf = mt_try_malloc(ln + 1);
        if (m->lang_buf == NULL) goto nomem;
        memcpy(m->lang_buf, lv, ln);
        m->lang_buf[ln] = '\0';
        m->language = m->lang_buf;
    }
    m->entries = mt_try_calloc(n ? n : 1, sizeof *m->entries);
    m->forms = mt_try_calloc(n_forms ? n_forms : 1, sizeof *m->forms);
    if (m->entries == NULL || m->forms == NULL) goto nomem;

    /* pass 2: check the encoding, split the strings (in place: the file
    ** buffer is ours) */
    size_t f = 0;
    for (uint32_t i = 0; i < n; i++) {
        mo_str o, t;
        rc = mo_string(path, d, size, otab, i, be, "original", cd == (iconv_t)-1, &o);
        if (rc == MT_OK)
            rc = mo_string(path, d, size, ttab, i, be, "translation", cd == (iconv_t)-1, &t);
        if (rc != MT_OK) goto fail;
        if (o.len == 0) continue;
        char *s = m->data + o.off, *ts = m->data + t.off;
        if (cd != (iconv_t)-1) {
            rc = to_utf8(cd, m->converted, path, "original", i, &s, &o.len);
            if (rc == MT_OK) rc = to_utf8(cd, m->converted, path, "translation", i, &ts, &t.len);
            if (rc != MT_OK) goto fail;
        }
        app_mo_entry *en = &m->entries[m->n_entries++];
        const char *o_end = s + o.len, *t_end = ts + t.len;
        char *eot = memchr(s, '\x04', strlen(s));
        if (eot) {
            *eot = '\0';
            en->context = s;
            s = eot + 1;
        }
        en->msgid = s;
        size_t idlen = strlen(s);
        if (s + idlen < o_end) en->msgid_plural = s + idlen + 1;
        en->msgstr = &m->forms[f];
        const char *tr = ts;
        for (;;) {
            if (f == n_forms) { /* only if a conversion changed the NUL count */
                rc = mt_seterr(MT_ERR_FORMAT, "%s: translation string %u: bad plural forms", path,
                               i);
                goto fail;
            }
            m->forms[f++] = tr;
            en->n_msgstr++;
            size_t k = strlen(tr);
            if (tr + k >= t_end) break;
            tr += k + 1;
        }
    }
    if (cd != (iconv_t)-1) iconv_close(cd);
    *out = m;
    return MT_OK;
nomem:
    rc = mt_seterr(MT_ERR_NOMEM, "out of memory reading %s", path);
fail:
    if (cd != (iconv_t)-1) iconv_close(cd);
    app_mo_free(m);
    return rc;
}

/* =============================================================== TMX */

static bool is_elem(xmlNodePtr n, const char *name) {
    return n != NULL && n->type == XML_ELEMENT_NODE && xmlStrEqual(n->name, BAD_CAST name);
}

/* Appends the text of a <seg> (or of a <hi> inside it), codes dropped. */
static void seg_text(xmlNodePtr n, app_doc_buf *b) {
    for (xmlNodePtr c = n->children; c != NULL; c = c->next) {
        if (c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) {
            if (c->content) app_doc_buf_puts(b, (const char *)c->content);
        } else if (c->type == XML_ELEMENT_NODE) {
            static const char *const codes[] = {"bpt", "ept", "it", "ph", "ut"};
            bool code = false;
            for (size_t k = 0; k < sizeof codes / sizeof codes[0]; k++)
                code = code || xmlStrEqual(c->name, BAD_CAST codes[k]);
            if (!code) seg_text(c, b);
        }
    }
}

static xmlChar *tuv_lang(xmlNodePtr tuv) {
    xmlChar *l = xmlGetNsProp(tuv, BAD_CAST "lang", XML_XML_NAMESPACE);
    return l ? l : xmlGetProp(tuv, BAD_CAST "lang");
}

mt_status app_tmx_read(const char *path, const char *src_lang, const char *trg_lang, app_tmx_fn fn,
                       void *user) {
    char *raw = NULL;
    size_t len = 0;
    mt_status rc = app_doc_read_file(path, &raw, &len);
    if (rc != MT_OK) return rc;
    xmlDocPtr doc = NULL;
    rc = app_xml_parse(path, raw, len, NULL, "malformed XML: ", &doc);
    mt_free(raw);
    if (rc != MT_OK) return rc;
    app_doc_buf sb = {0}, tb = {0};
    xmlNodePtr root = xmlDocGetRootElement(doc);
    if (!is_elem(root, "tmx")) {
        rc = mt_seterr(MT_ERR_FORMAT, "%s:%ld: root element is <%s>, not <tmx>", path,
                       root ? xmlGetLineNo(root) : 1L, root ? (const char *)root->name : "");
        goto done;
    }
    for (xmlNodePtr body = root->children; body != NULL; body = body->next) {
        if (!is_elem(body, "body")) continue;
        for (xmlNodePtr tu = body->children; tu != NULL; tu = tu->next) {
            if (!is_elem(tu, "tu")) continue;
            bool have_s = false, have_t = false;
            app_doc_buf_free(&sb);
            app_doc_buf_free(&tb);
            for (xmlNodePtr tuv = tu->children; tuv != NULL; tuv = tuv->next) {
                if (!is_elem(tuv, "tuv")) continue;
                xmlChar *lang = tuv_lang(tuv);
                bool is_s = !have_s && app_corpus_lang_match(src_lang, (const char *)lang);
                bool is_t = !is_s && !have_t && app_corpus_lang_match(trg_lang, (const char *)lang);
                xmlFree(lang);
                if (!is_s && !is_t) continue;
                app_doc_buf *b = is_s ? &sb : &tb;
                for (xmlNodePtr seg = tuv->children; seg != NULL; seg = seg->next)
                    if (is_elem(seg, "seg")) seg_text(seg, b);
                app_doc_buf_putc(b, '\0'); /* data non-NULL even for an empty <seg> */
                if (is_s) have_s = true;
                if (is_t) have_t = true;
            }
            if (sb.failed || tb.failed) {
                rc = mt_seterr(MT_ERR_NOMEM, "out of memory reading %s", path);
                goto done;
            }
            if (fn(user, have_s ? sb.data : NULL, have_t ? tb.data : NULL) != 0) {
                rc = MT_ABORTED;
                goto done;
            }
        }
    }
done:
    app_doc_buf_free(&sb);
    app_doc_buf_free(&tb);
    xmlFreeDoc(doc);
    return rc;
}

/* ========================================================= row sets */

typedef struct row_set {
    mt_arena *text;
    app_doc_tmx_row *rows;
    int64_t n, cap;
    int64_t *slots; /* dedup: row index + 1, 0 = free; NULL without dedup */
    size_t n_slots;
} row_set;

static uint64_t pair_hash(const char *a, const char *b) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)a; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    h = (h ^ 0xffu) * 0x100000001b3ull; /* 0xff never occurs in UTF-8 */
    for (const unsigned char *p = (const unsigned char *)b; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

static mt_status rows_init(row_set *rs, bool dedup) {
    memset(rs, 0, sizeof *rs);
    mt_status rc = mt_arena_init(1 << 20, &rs->text);
    if (rc != MT_OK) return rc;
    if (dedup) {
        rs->n_slots = 1024;
        rs->slots = mt_try_calloc(rs->n_slots, sizeof *rs->slots);
        if (rs->slots == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
    }
    return MT_OK;
}

static void rows_free(row_set *rs) {
    mt_arena_free(rs->text);
    mt_free(rs->rows);
    mt_free(rs->slots);
    memset(rs, 0, sizeof *rs);
}

static char *rows_strdup(row_set *rs, const char *s) {
    size_t n = strlen(s) + 1;
    char *c = mt_arena_alloc(rs->text, n, 1);
    if (c != NULL) memcpy(c, s, n);
    return c;
}

/* Slot of the pair (src, trg): the one holding it, or the free one where it
** belongs. */
static size_t find_slot(const row_set *rs, const char *src, const char *trg) {
    size_t mask = rs->n_slots - 1, i = (size_t)pair_hash(src, trg) & mask;
    while (rs->slots[i] != 0) {
        const app_doc_tmx_row *r = &rs->rows[rs->slots[i] - 1];
        if (!strcmp(r->source, src) && !strcmp(r->target, trg)) break;
        i = (i + 1) & mask;
    }
    return i;
}

/* Appends a row (texts copied; language pointers kept); *dup: it was a
** duplicate and was not added (only when deduplicating). */
static mt_status rows_add(row_set *rs, const char *src, const char *trg, const char *sl,
                          const char *tl, int64_t time, bool *dup) {
    *dup = false;
    size_t slot = 0;
    if (rs->slots) {
        if ((size_t)(rs->n + 1) * 2 > rs->n_slots) {
            size_t ns = rs->n_slots * 2;
            int64_t *s = mt_try_calloc(ns, sizeof *s);
            if (s == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
            for (int64_t r = 0; r < rs->n; r++) {
                size_t i = (size_t)pair_hash(rs->rows[r].source, rs->rows[r].target) & (ns - 1);
                while (s[i] != 0)
                    i = (i + 1) & (ns - 1);
                s[i] = r + 1;
            }
            mt_free(rs->slots);
            rs->slots = s;
            rs->n_slots = ns;
        }
        slot = find_slot(rs, src, trg);
        if (rs->slots[slot] != 0) {
            *dup = true;
            return MT_OK;
        }
    }
    if (rs->n == rs->cap) {
        int64_t cap = rs->cap ? rs->cap * 2 : 1024;
        app_doc_tmx_row *r = mt_try_realloc(rs->rows, (size_t)cap * sizeof *r);
        if (r == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
        rs->rows = r;
        rs->cap = cap;
    }
    app_doc_tmx_row *r = &rs->rows[rs->n];
    r->source = rows_strdup(rs, src);
    r->target = rows_strdup(rs, trg);
    r->src_lang = sl;
    r->trg_lang = tl;
    r->time = time;
    if (r->source == NULL || r->target == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
    rs->n++;
    if (rs->slots) rs->slots[slot] = rs->n;
    return MT_OK;
}

/* ================================================= writing outputs */

typedef enum out_col { OUT_SOURCE, OUT_TARGET, OUT_TSV } out_col;

typedef struct out_file {
    const char *path;
    out_col col;
    char tmp[PATH_MAX + 64];
    bool made;
} out_file;

static atomic_uint tmp_seq;

static mt_status write_rows(FILE *f, const row_set *rs, out_col col) {
    for (int64_t i = 0; i < rs->n; i++) {
        const app_doc_tmx_row *r = &rs->rows[i];
        if (col != OUT_TARGET) put_flat(f, r->source);
        if (col == OUT_TSV) fputc('\t', f);
        if (col != OUT_SOURCE) put_flat(f, r->target);
        fputc('\n', f);
    }
    return MT_OK;
}

static mt_status write_fail(const char *path, const char *step, int err) {
    if (err == ENOSPC)
        return mt_seterr(MT_ERR_IO, "cannot write %s: no space left on device (%s)", path, step);
    return mt_seterr(MT_ERR_IO, "cannot write %s: %s: %s", path, step, strerror(err));
}

/* Writes every output to a temporary file next to it (fsynced), then, when
** all succeeded, renames them over their paths and syncs the directories.
** Before the renames any failure removes the temporary files and leaves the
** outputs as they were. */
static mt_status write_outputs(out_file *outs, int n, const row_set *rs) {
    mt_status rc = MT_OK;
    for (int i = 0; i < n && rc == MT_OK; i++) {
        out_file *o = &outs[i];
        const char *slash = strrchr(o->path, '/');
        int dlen = slash ? (int)(slash - o->path + 1) : 0;
        const char *base = o->path + dlen;
        if (*base == '\0') {
            rc = mt_seterr(MT_ERR_INVALID, "cannot write %s: not a file name", o->path);
            break;
        }
        if (strlen(o->path) >= PATH_MAX) {
            rc = mt_seterr(MT_ERR_INVALID, "cannot write %s: path too long", o->path);
            break;
        }
        snprintf(o->tmp, sizeof o->tmp, "%.*s.%s.%ld.%u.tmp", dlen, o->path, base, (long)getpid(),
                 atomic_fetch_add(&tmp_seq, 1u));
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0) {
            rc = write_fail(o->path, "creating a temporary file", errno);
            break;
        }
        o->made = true;
        FILE *f = fdopen(fd, "wb");
        if (f == NULL) {
            rc = write_fail(o->path, "fdopen", errno);
            close(fd);
            break;
        }
        rc = write_rows(f, rs, o->col);
        int err = 0;
        const char *step = NULL;
        if (fflush(f) != 0 || ferror(f)) {
            err = errno ? errno : EIO;
            step = "writing";
        } else if (fsync(fileno(f)) != 0) {
            err = errno;
            step = "fsync";
        }
        if (fclose(f) != 0 && step == NULL) {
            err = errno;
            step = "closing";
        }
        if (rc == MT_OK && step != NULL) rc = write_fail(o->path, step, err);
    }
    if (rc != MT_OK) {
        for (int i = 0; i < n; i++)
            if (outs[i].made) unlink(outs[i].tmp);
        return rc;
    }
    for (int i = 0; i < n; i++) {
        if (rename(outs[i].tmp, outs[i].path) != 0) {
            rc = write_fail(outs[i].path, "renaming the temporary file", errno);
            for (int j = i; j < n; j++)
                unlink(outs[j].tmp);
            return rc;
        }
        char dir[PATH_MAX];
        const char *slash = strrchr(outs[i].path, '/');
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - outs[i].path) + 1 : 1,
                 slash ? outs[i].path : ".");
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)fsync(dfd); /* best effort: some file systems refuse it */
            close(dfd);
        }
    }
    return MT_OK;
}

/* ============================================================ build */

typedef struct build_ctx {
    const app_corpus_build_params *p;
    app_corpus_stats *st;
    row_set rows;
    bool xliff;       /* texts hold inline-tag placeholders */
    const char *path; /* file being read */
    mt_status rc;     /* error inside a TMX callback */
} build_ctx;

static mt_status add_pair(build_ctx *c, const char *src, const char *trg) {
    char *s = NULL, *t = NULL;
    mt_status rc = MT_OK;
    if (c->xliff) {
        rc = app_doc_strip_tags(src, &s);
        if (rc == MT_OK) rc = app_doc_strip_tags(trg, &t);
    } else {
        s = mt_try_strdup(src);
        t = mt_try_strdup(trg);
        if (s == NULL || t == NULL) rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    }
    if (rc == MT_OK) {
        app_corpus_flatten(s);
        app_corpus_flatten(t);
        if (c->p->strip_accelerators) app_corpus_strip_accelerators(s, t);
        if (blank(s) || blank(t)) {
            c->st->empty++;
        } else {
            bool dup;
            rc = rows_add(&c->rows, s, t, c->p->src_lang, c->p->trg_lang, 0, &dup);
            if (dup) c->st->duplicates++;
        }
    }
    mt_free(s);
    mt_free(t);
    return rc;
}

static mt_status add_entry(build_ctx *c, const char *src, const char *src_plural,
                           const char *const *targets, int n_targets, bool fuzzy) {
    c->st->entries++;
    if (n_targets < 1 || targets[0][0] == '\0') {
        c->st->untranslated++;
        return MT_OK;
    }
    if (fuzzy && !c->p->include_fuzzy) {
        c->st->fuzzy++;
        return MT_OK;
    }
    mt_status rc = add_pair(c, src, targets[0]);
    for (int k = 1; src_plural != NULL && k < n_targets && rc == MT_OK; k++) {
        if (targets[k][0] == '\0')
            c->st->empty++;
        else
            rc = add_pair(c, src_plural, targets[k]);
    }
    return rc;
}

/* false (with a warning) when the file names a language other than wanted. */
static bool lang_ok(build_ctx *c, const char *side, const char *have, const char *want) {
    if (have == NULL || have[0] == '\0' || app_corpus_lang_match(want, have)) return true;
    mt_log(MT_LOG_WARN, "%s: %s language is %s, not %s: file skipped", c->path, side, have, want);
    c->st->files_other_lang++;
    return false;
}

/* Obsolete entries of a PO file: lines "#~ msgid ..." (not msgid_plural). */
static mt_status count_obsolete(const char *path, int64_t *n) {
    char *raw = NULL;
    size_t len = 0;
    mt_status rc = app_doc_read_file(path, &raw, &len);
    if (rc != MT_OK) return rc;
    for (const char *l = raw; l != NULL; l = strchr(l, '\n')) {
        if (*l == '\n') l++;
        while (*l == ' ' || *l == '\t')
            l++;
        if (strncmp(l, "#~", 2) != 0) continue;
        l += 2;
        while (*l == ' ' || *l == '\t')
            l++;
        if (strncmp(l, "msgid", 5) == 0 && (l[5] == ' ' || l[5] == '\t' || l[5] == '"')) (*n)++;
    }
    mt_free(raw);
    return MT_OK;
}

static mt_status read_doc(build_ctx *c, bool xliff) {
    app_doc *d = NULL;
    mt_status rc = app_doc_open(c->path, xliff ? APP_DOC_FORMAT_XLIFF : APP_DOC_FORMAT_PO, &d);
    if (rc != MT_OK) return rc;
    bool ok = xliff ? lang_ok(c, "source", app_doc_source_lang(d), c->p->src_lang) &&
                          lang_ok(c, "target", app_doc_target_lang(d), c->p->trg_lang)
                    : lang_ok(c, "target", app_doc_target_lang(d), c->p->trg_lang);
    if (ok) {
        c->st->files++;
        c->xliff = xliff;
        if (!xliff) rc = count_obsolete(c->path, &c->st->obsolete);
        for (int64_t i = 0; i < app_doc_count(d) && rc == MT_OK; i++) {
            const app_doc_segment *s = app_doc_segment_at(d, i);
            rc = add_entry(c, s->source, s->source_plural, (const char *const *)s->targets,
                           s->n_targets, s->state == APP_DOC_STATE_DRAFT);
        }
        c->xliff = false;
    }
    app_doc_free(d);
    return rc;
}

static mt_status read_mo(build_ctx *c) {
    app_mo *m = NULL;
    mt_status rc = app_mo_read(c->path, &m);
    if (rc != MT_OK) return rc;
    if (lang_ok(c, "target", m->language, c->p->trg_lang)) {
        c->st->files++;
        for (int64_t i = 0; i < m->n_entries && rc == MT_OK; i++) {
            const app_mo_entry *e = &m->entries[i];
            rc = add_entry(c, e->msgid, e->msgid_plural, e->msgstr, e->n_msgstr, false);
        }
    }
    app_mo_free(m);
    return rc;
}

static int tmx_unit(void *user, const char *src, const char *trg) {
    build_ctx *c = user;
    c->st->entries++;
    if (src == NULL || trg == NULL) {
        c->st->no_lang++;
        return 0;
    }
    c->rc = add_pair(c, src, trg);
    return c->rc != MT_OK;
}

mt_status app_corpus_build(const app_corpus_build_params *p, app_corpus_stats *st) {
    memset(st, 0, sizeof *st);
    if (p->src_lang == NULL || p->src_lang[0] == '\0' || p->trg_lang == NULL ||
        p->trg_lang[0] == '\0')
        return mt_seterr(MT_ERR_INVALID, "corpus: the source and target languages are required");
    if (p->out_prefix == NULL && p->tsv_path == NULL)
        return mt_seterr(MT_ERR_INVALID, "corpus: no output (give a prefix or a TSV file)");
    if (p->out_prefix != NULL && !strcmp(p->src_lang, p->trg_lang))
        return mt_seterr(MT_ERR_INVALID, "corpus: source and target language are both %s",
                         p->src_lang);
    build_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.st = st;
    char *src_out = NULL, *trg_out = NULL;
    mt_status rc = rows_init(&c.rows, p->dedup);
    for (int i = 0; i < p->n_files && rc == MT_OK; i++) {
        app_corpus_kind kind;
        c.path = p->files[i];
        rc = app_corpus_detect(c.path, &kind);
        if (rc != MT_OK) break;
        switch (kind) {
        case APP_CORPUS_PO: rc = read_doc(&c, false); break;
        case APP_CORPUS_XLIFF: rc = read_doc(&c, true); break;
        case APP_CORPUS_MO: rc = read_mo(&c); break;
        case APP_CORPUS_TMX:
            st->files++;
            c.rc = MT_OK;
            rc = app_tmx_read(c.path, p->src_lang, p->trg_lang, tmx_unit, &c);
            if (rc == MT_ABORTED) rc = c.rc;
            break;
        }
    }
    if (rc != MT_OK) goto done;
    out_file outs[3];
    int n_out = 0;
    memset(outs, 0, sizeof outs);
    if (p->out_prefix) {
        size_t n = strlen(p->out_prefix) + strlen(p->src_lang) + strlen(p->trg_lang) + 2;
        src_out = mt_try_malloc(n);
        trg_out = mt_try_malloc(n);
        if (src_out == NULL || trg_out == NULL) {
            rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
            goto done;
        }
        snprintf(src_out, n, "%s.%s", p->out_prefix, p->src_lang);
        snprintf(trg_out, n, "%s.%s", p->out_prefix, p->trg_lang);
        outs[n_out++] = (out_file){.path = src_out, .col = OUT_SOURCE};
        outs[n_out++] = (out_file){.path = trg_out, .col = OUT_TARGET};
    }
    if (p->tsv_path) outs[n_out++] = (out_file){.path = p->tsv_path, .col = OUT_TSV};
    rc = write_outputs(outs, n_out, &c.rows);
    if (rc == MT_OK) st->pairs = c.rows.n;
done:
    mt_free(src_out);
    mt_free(trg_out);
    rows_free(&c.rows);
    return rc;
}

/* =========================================================== export */

typedef struct export_doc {
    int64_t id;
    store_format format;
    char *path, *src_lang, *tgt_lang;
} export_doc;

typedef struct export_ctx {
    const app_corpus_export_params *p;
    app_corpus_stats *st;
    export_doc *docs;
    int64_t n_docs, cap_docs;
    row_set rows;
    row_set seen;  /* pass 1: (path, "index\x1fsource") of newer versions */
    row_set final; /* pass 1: (document id, index) holding a final translation */
    const export_doc *cur;
    int64_t version_ms; /* history: the time of the save being read */
    mt_status rc;
} export_ctx;

static int collect_doc(void *user, const store_document *d) {
    export_ctx *c = user;
    if (c->n_docs == c->cap_docs) {
        int64_t cap = c->cap_docs ? c->cap_docs * 2 : 16;
        export_doc *nd = mt_try_realloc(c->docs, (size_t)cap * sizeof *nd);
        if (nd == NULL) goto nomem;
        c->docs = nd;
        c->cap_docs = cap;
    }
    export_doc *e = &c->docs[c->n_docs];
    e->id = d->id;
    e->format = d->format;
    e->path = mt_try_strdup(d->path);
    e->src_lang = mt_try_strdup(d->src_lang ? d->src_lang : "");
    e->tgt_lang = mt_try_strdup(d->tgt_lang ? d->tgt_lang : "");
    c->n_docs++;
    if (e->path && e->src_lang && e->tgt_lang) return 0;
nomem:
    c->rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    return 1;
}

static int by_id(const void *a, const void *b) {
    int64_t x = ((const export_doc *)a)->id, y = ((const export_doc *)b)->id;
    return (x > y) - (x < y);
}

static bool same_file(const char *a, const char *b) {
    if (!strcmp(a, b)) return true;
    char ra[PATH_MAX], rb[PATH_MAX];
    return realpath(a, ra) != NULL && realpath(b, rb) != NULL && !strcmp(ra, rb);
}

/* Pass 1, documents newest first: the first version met of a segment
** (path, index, source) holds its final translation. */
static int final_row(void *user, const store_export_row *r) {
    export_ctx *c = user;
    size_t n = strlen(r->source) + 32;
    char *key = mt_try_malloc(n);
    mt_status rc = key ? MT_OK : mt_seterr(MT_ERR_NOMEM, "out of memory");
    bool dup = false;
    if (rc == MT_OK) {
        snprintf(key, n, "%d\x1f%s", (int)r->seg_index, r->source);
        rc = rows_add(&c->seen, c->cur->path, key, NULL, NULL, 0, &dup);
    }
    mt_free(key);
    if (rc == MT_OK && !dup) {
        char a[32], b[32];
        snprintf(a, sizeof a, "%lld", (long long)r->doc_id);
        snprintf(b, sizeof b, "%d", (int)r->seg_index);
        rc = rows_add(&c->final, a, b, NULL, NULL, 0, &dup);
    }
    c->rc = rc;
    return rc != MT_OK;
}

/* One (source, target) pair of the current document into the output. */
static mt_status export_pair(export_ctx *c, const char *source, const char *target,
                             int64_t time_ms) {
    char *s = NULL, *t = NULL;
    mt_status rc = MT_OK;
    c->st->entries++;
    if (c->cur->format == STORE_FORMAT_XLIFF) {
        rc = app_doc_strip_tags(source, &s);
        if (rc == MT_OK) rc = app_doc_strip_tags(target, &t);
    } else {
        s = mt_try_strdup(source);
        t = mt_try_strdup(target);
        if (s == NULL || t == NULL) rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    }
    if (rc == MT_OK) {
        if (c->p->strip_accelerators) app_corpus_strip_accelerators(s, t);
        if (blank(s) || blank(t)) {
            c->st->empty++;
        } else {
            bool dup;
            rc = rows_add(&c->rows, s, t, c->cur->src_lang, c->cur->tgt_lang, time_ms / 1000, &dup);
            if (dup) c->st->duplicates++;
        }
    }
    mt_free(s);
    mt_free(t);
    return rc;
}

static int export_row(void *user, const store_export_row *r) {
    export_ctx *c = user;
    if (r->time_ms < c->p->since_ms) {
        c->st->before_since++;
        return 0;
    }
    if (!c->p->history) { /* only the segment's final translation (pass 1) */
        char a[32], b[32];
        snprintf(a, sizeof a, "%lld", (long long)r->doc_id);
        snprintf(b, sizeof b, "%d", (int)r->seg_index);
        if (c->final.slots[find_slot(&c->final, a, b)] == 0) {
            c->st->superseded++;
            return 0;
        }
    }
    c->rc = export_pair(c, r->source, r->target, r->time_ms);
    return c->rc != MT_OK;
}

/* History: the confirmed translations that saves of the document wrote
** (store_add_version keeps the segments each save changed). */
static int export_saved_segment(void *user, const store_version_segment *g) {
    export_ctx *c = user;
    if (g->status != STORE_SEG_CONFIRMED || g->target == NULL) return 0;
    if (c->version_ms < c->p->since_ms) {
        c->st->before_since++;
        return 0;
    }
    c->rc = export_pair(c, g->source, g->target, c->version_ms);
    return c->rc != MT_OK;
}

/* The saves of the current document (listed first: the store cannot be
** read again from inside a listing). */
typedef struct saves {
    int64_t *id, *ms;
    int64_t n, cap;
} saves;

static int collect_save(void *user, const store_version *v) {
    saves *sv = user;
    if (sv->n == sv->cap) {
        int64_t cap = sv->cap ? sv->cap * 2 : 8;
        int64_t *ni = mt_try_realloc(sv->id, (size_t)cap * sizeof *ni);
        if (ni) sv->id = ni;
        int64_t *nm = ni ? mt_try_realloc(sv->ms, (size_t)cap * sizeof *nm) : NULL;
        if (nm) sv->ms = nm;
        if (!ni || !nm) return 1;
        sv->cap = cap;
    }
    sv->id[sv->n] = v->id;
    sv->ms[sv->n++] = v->saved_ms;
    return 0;
}

static mt_status export_saves(store *s, export_ctx *c, int64_t doc_id) {
    saves sv = {0};
    mt_status rc = store_list_versions(s, doc_id, collect_save, &sv);
    if (rc == MT_ABORTED) rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < sv.n && rc == MT_OK; i++) {
        c->version_ms = sv.ms[i];
        rc = store_version_segments(s, sv.id[i], export_saved_segment, c);
        if (rc == MT_ABORTED) rc = c->rc;
    }
    mt_free(sv.id);
    mt_free(sv.ms);
    return rc;
}

mt_status app_corpus_export(store *s, const app_corpus_export_params *p, app_corpus_stats *st) {
    memset(st, 0, sizeof *st);
    if (p->tmx_path == NULL && p->tsv_path == NULL)
        return mt_seterr(MT_ERR_INVALID, "corpus export: no output (give a TMX or TSV file)");
    export_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.st = st;
    mt_status rc = rows_init(&c.rows, p->dedup);
    if (rc == MT_OK) rc = rows_init(&c.seen, true);
    if (rc == MT_OK) rc = rows_init(&c.final, true);
    if (rc == MT_OK) rc = store_list_documents(s, collect_doc, &c);
    if (rc == MT_ABORTED) rc = c.rc;
    if (rc != MT_OK) goto done;
    if (c.n_docs > 1) qsort(c.docs, (size_t)c.n_docs, sizeof *c.docs, by_id);
    int64_t matched = 0;
    for (int64_t k = c.n_docs - 1; k >= 0 && !p->history; k--) {
        c.cur = &c.docs[k];
        if (p->document && !same_file(p->document, c.cur->path)) continue;
        rc = store_export_confirmed(s, c.cur->id, final_row, &c);
        if (rc == MT_ABORTED) rc = c.rc;
        if (rc != MT_OK) goto done;
    }
    for (int64_t i = 0; i < c.n_docs; i++) {
        export_doc *d = &c.docs[i];
        if (p->document && !same_file(p->document, d->path)) continue;
        matched++;
        if ((p->src_lang && !app_corpus_lang_match(p->src_lang, d->src_lang)) ||
            (p->trg_lang && !app_corpus_lang_match(p->trg_lang, d->tgt_lang))) {
            st->files_other_lang++;
            continue;
        }
        st->documents++;
        c.cur = d;
        if (p->history) {
            rc = export_saves(s, &c, d->id);
            if (rc != MT_OK) goto done;
        }
        rc = store_export_confirmed(s, d->id, export_row, &c);
        if (rc == MT_ABORTED) rc = c.rc;
        if (rc != MT_OK) goto done;
    }
    if (p->document && matched == 0) {
        rc = mt_seterr(MT_ERR_NOTFOUND, "the store has no document %s", p->document);
        goto done;
    }
    if (p->tmx_path) {
        rc = app_doc_tmx_write(p->tmx_path, c.rows.rows, c.rows.n);
        if (rc != MT_OK) goto done;
    }
    if (p->tsv_path) {
        out_file o = {.path = p->tsv_path, .col = OUT_TSV};
        rc = write_outputs(&o, 1, &c.rows);
        if (rc != MT_OK) goto done;
    }
    st->pairs = c.rows.n;
done:
    for (int64_t i = 0; i < c.n_docs; i++) {
        mt_free(c.docs[i].path);
        mt_free(c.docs[i].src_lang);
        mt_free(c.docs[i].tgt_lang);
    }
    mt_free(c.docs);
    rows_free(&c.rows);
    rows_free(&c.seen);
    rows_free(&c.final);
    return rc;
}
