/*
** gec_text.c: UTF-8, letter case and token shapes for the GEC modules
** (gec_text.h).
*/
#include "gec_text.h"

#include <string.h>

#include "mt.h"

bool gec_utf8_valid(const char *s, size_t n, size_t *bad) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = u[i];
        int len;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        } else {
            goto fail;
        }
        if (i + (size_t)len > n) goto fail;
        for (int k = 1; k < len; k++) {
            if ((u[i + (size_t)k] & 0xC0) != 0x80) goto fail;
            cp = (cp << 6) | (u[i + (size_t)k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) goto fail;
        i += (size_t)len;
    }
    return true;
fail:
    if (bad) *bad = i;
    return false;
}

int gec_utf8_decode(const char *s, size_t n, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    int k = 0;
    while (i < n) {
        unsigned c = u[i];
        int len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
        uint32_t v = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
        for (int j = 1; j < len && i + (size_t)j < n; j++)
            v = (v << 6) | (u[i + (size_t)j] & 0x3F);
        cp[k++] = v;
        i += (size_t)len;
    }
    return k;
}

int gec_utf8_encode(const uint32_t *cp, int n, char *out) {
    unsigned char *o = (unsigned char *)out;
    for (int i = 0; i < n; i++) {
        uint32_t c = cp[i];
        if (c < 0x80) {
            *o++ = (unsigned char)c;
        } else if (c < 0x800) {
            *o++ = (unsigned char)(0xC0 | (c >> 6));
            *o++ = (unsigned char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            *o++ = (unsigned char)(0xE0 | (c >> 12));
            *o++ = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
            *o++ = (unsigned char)(0x80 | (c & 0x3F));
        } else {
            *o++ = (unsigned char)(0xF0 | (c >> 18));
            *o++ = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
            *o++ = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
            *o++ = (unsigned char)(0x80 | (c & 0x3F));
        }
    }
    *o = '\0';
    return (int)((char *)o - out);
}

bool gec_is_letter(uint32_t c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
    if (c >= 0xC0 && c <= 0x24F) return c != 0xD7 && c != 0xF7;
    return false;
}

bool gec_is_upper(uint32_t c) {
    if (c >= 'A' && c <= 'Z') return true;
    if (c >= 0xC0 && c <= 0xDE) return c != 0xD7;
    if (c >= 0x100 && c <= 0x17F) return (c & 1) == 0; /* Latin Extended-A pairs */
    return false;
}

uint32_t gec_lower(uint32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
    if (c >= 0x100 && c <= 0x17F && (c & 1) == 0) return c + 1;
    return c;
}

uint32_t gec_upper(uint32_t c) {
    if (c >= 'a' && c <= 'z') return c - 32;
    if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
    if (c >= 0x100 && c <= 0x17F && (c & 1) == 1) return c - 1;
    return c;
}

bool gec_text_eq(const uint32_t *a, int na, const uint32_t *b, int nb) {
    return na == nb && (na == 0 || memcmp(a, b, sizeof *a * (size_t)na) == 0);
}

static bool is_punct(uint32_t c) {
    switch (c) {
    case '(':
    case ')':
    case '[':
    case ']':
    case '"':
    case '\'':
    case ',':
    case '.':
    case ';':
    case ':':
    case '!':
    case '?':
    case 0xBB:
    case 0xAB: /* » « */
    case 0x201E:
    case 0x201C:
    case 0x201D: /* „ “ ” */
    case 0x201A:
    case 0x2018:
    case 0x2019: /* ‚ ‘ ’ */
    case 0x2026:
    case 0x2013:
    case 0x2014: return true; /* … – — */
    default: return false;
    }
}

gec_token_shape gec_token_shape_of(const uint32_t *cp, int n) {
    gec_token_shape s = {0, 0, true};
    while (s.lead < n && is_punct(cp[s.lead]))
        s.lead++;
    while (s.trail < n - s.lead && is_punct(cp[n - 1 - s.trail]))
        s.trail++;
    int a = s.lead, b = n - s.trail;
    for (int i = a; i < b; i++) {
        if (gec_is_letter(cp[i])) continue;
        if (cp[i] == '-' && i > a && i + 1 < b && cp[i - 1] != '-') continue;
        s.plain = false;
        break;
    }
    return s;
}

bool gec_token_protected(const char *s, size_t n) {
    uint32_t buf[64], *cp = n <= 64 ? buf : mt_xmalloc(sizeof(uint32_t) * n);
    int k = gec_utf8_decode(s, n, cp);
    bool prot = !gec_token_shape_of(cp, k).plain;
    if (cp != buf) mt_free(cp);
    return prot;
}
