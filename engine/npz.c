/*
** npz.c: NumPy .npz archives (a zip of .npy members), as Marian reads and
** writes them (src/3rd_party/cnpy, src/common/io.cpp).
**
** Reading goes through the central directory (Marian's own reader walks the
** local headers instead, which breaks on zip64 files written by NumPy), so
** that stored and deflated members and zip64 archives all work.  Every
** offset and size is checked against the file size before it is used; a
** damaged file gives MT_ERR_FORMAT naming the file, the member and the
** problem.  Writing reproduces cnpy's npz_save byte for byte.
**
** All integers little-endian.  Zip layout (PKWARE APPNOTE 6.3):
**
**   local file header (one per member, followed by its data)
**     OFFSET  SIZE  CONTENT
**        0      4   signature 50 4B 03 04 ("PK\3\4")
**        4      2   version needed (Marian 20; zip64: 45)
**        6      2   flags (bit 0 encrypted: refused; bit 3 data descriptor)
**        8      2   method: 0 stored, 8 deflate (raw, no zlib header)
**       10      4   DOS time, date (Marian 0)
**       14      4   CRC-32 of the uncompressed data
**       18      4   compressed size   (0xFFFFFFFF: in the zip64 extra)
**       22      4   uncompressed size (0xFFFFFFFF: in the zip64 extra)
**       26      2   name length n
**       28      2   extra length e
**       30      n   name ("Wemb.npy")
**     30+n      e   extra fields: {u16 id, u16 len, len bytes}*; id 0x0001
**                   = zip64: u64 uncompressed, u64 compressed (each only
**                   when the 32-bit field above is 0xFFFFFFFF)
**   central directory entry (one per member, after all members)
**        0      4   signature 50 4B 01 02
**        4      2   version made by (Marian 20)
**        6      2   version needed
**        8      2   flags
**       10      2   method
**       12      4   DOS time, date
**       16      4   CRC-32
**       20      4   compressed size   (0xFFFFFFFF: zip64 extra)
**       24      4   uncompressed size (0xFFFFFFFF: zip64 extra)
**       28      2   name length n
**       30      2   extra length e
**       32      2   comment length c
**       34      2   disk number start (0xFFFF: zip64 extra)
**       36      2   internal attributes
**       38      4   external attributes
**       42      4   offset of the local header (0xFFFFFFFF: zip64 extra)
**       46  n+e+c   name, extra fields, comment; the zip64 extra holds, in
**                   this order and only for saturated fields: u64
**                   uncompressed, u64 compressed, u64 offset, u32 disk
**   zip64 end of central directory record (only in zip64 archives)
**        0      4   signature 50 4B 06 06
**        4      8   size of the rest of the record (44 + extensible data)
**       12      4   version made by, version needed
**       16      4   this disk number
**       20      4   disk with the central directory
**       24      8   entries on this disk
**       32      8   total entries
**       40      8   size of the central directory
**       48      8   offset of the central directory
**   zip64 end of central directory locator (just before the EOCD)
**        0      4   signature 50 4B 06 07
**        4      4   disk with the zip64 EOCD record
**        8      8   offset of the zip64 EOCD record
**       16      4   total number of disks
**   end of central directory record (last 22 + comment bytes of the file)
**        0      4   signature 50 4B 05 06
**        4      2   this disk number
**        6      2   disk with the central directory
**        8      2   entries on this disk   (0xFFFF: see zip64 record)
**       10      2   total entries          (0xFFFF: see zip64 record)
**       12      4   central directory size (0xFFFFFFFF: zip64)
**       16      4   central directory offset (0xFFFFFFFF: zip64)
**       20      2   comment length c, then c bytes of comment
**
** NumPy .npy member (format versions 1.0, 2.0, 3.0):
**     OFFSET  SIZE  CONTENT
**        0      6   magic 93 'N' 'U' 'M' 'P' 'Y'
**        6      1   major version (1, 2 or 3)
**        7      1   minor version (0)
**        8    2|4   header length h: u16 for 1.0, u32 for 2.0 and 3.0
**     10|12     h   Python dict literal, space-padded, ending in '\n':
**                   {'descr': '<f4', 'fortran_order': False, 'shape': (4, 64), }
**    10|12+h    *   the array data, C order, prod(shape) * itemsize bytes
**
** Marian writes version 1.0 and pads so that 10 + h is a multiple of 16
** (1 to 16 bytes of padding, the last one '\n').  dtypes: '<f4' '<f2' '<i1'
** '<i2' '<i4' ('|' and '=' byte orders too) become F32 F16 I8 I16 I32
** tensors; '<f8' '<i8' '<u1' '<u2' '<u4' '<u8' are kept as raw items with
** their Marian type; other dtypes are refused with MT_ERR_UNSUPPORTED.
** The member "special:model.yml.npy" (int8, YAML text + NUL) becomes
** config_yaml.  Writing stores members uncompressed, in model file order,
** special:model.yml last; sizes and offsets of 0xFFFFFFFF and more are
** written as zip64 fields (a test lowers that threshold:
** mt_npz_set_zip64_limit_for_tests).
*/
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "mt.h"
#include "test_hooks.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOC64 0x07064b50u
#define LOCAL_LEN 30
#define CENTRAL_LEN 46
#define EOCD_LEN 22
#define EOCD64_LEN 56
#define LOC64_LEN 20
#define CONFIG_NAME "special:model.yml"
#define MAX_DEFLATE_RATIO 1032 /* deflate cannot expand input more than this */

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* True when [off, off+len) lies inside a buffer of size bytes. */
static bool in_bounds(uint64_t off, uint64_t len, uint64_t size) {
    return off <= size && len <= size - off;
}

/* ------------------------------------------------------- npy dtypes */

typedef struct npy_type {
    char kind;     /* 'f', 'i', 'u' */
    int width;     /* bytes */
    uint32_t code; /* Marian type */
    int dtype;     /* mt_dtype, or -1: kept as a raw item */
} npy_type;

static const npy_type npy_types[] = {
    {'f', 4, MT_MARIAN_FLOAT32, MT_F32}, {'f', 2, MT_MARIAN_FLOAT16, MT_F16},
    {'i', 1, MT_MARIAN_INT8, MT_I8},     {'i', 2, MT_MARIAN_INT16, MT_I16},
    {'i', 4, MT_MARIAN_INT32, MT_I32},   {'f', 8, MT_MARIAN_FLOAT64, -1},
    {'i', 8, MT_MARIAN_INT64, -1},       {'u', 1, MT_MARIAN_UINT8, -1},
    {'u', 2, MT_MARIAN_UINT16, -1},      {'u', 4, MT_MARIAN_UINT32, -1},
    {'u', 8, MT_MARIAN_UINT64, -1},
};
#define N_NPY_TYPES (sizeof npy_types / sizeof npy_types[0])

static const npy_type *npy_type_by_code(uint32_t code) {
    for (size_t i = 0; i < N_NPY_TYPES; i++)
        if (npy_types[i].code == code) return &npy_types[i];
    return NULL;
}

/* "(4000, 64)" in NumPy's notation, for messages and headers. */
static void shape_text(const mt_shape *s, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < s->ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)s->dim[i]);
    if (k < n) snprintf(buf + k, n - k, s->ndim == 1 ? ",)" : ")");
}

/* ------------------------------------------------------ npy header */

typedef struct npy_header {
    const npy_type *type;
    mt_shape shape;
    size_t data_off; /* from the start of the member */
} npy_header;

/* A cursor over the dict text, with the error detail. */
typedef struct dict_parser {
    const char *s, *end;
    char err[160];
    mt_status rc;
} dict_parser;

static bool dp_fail(dict_parser *p, mt_status rc, const char *fmt, const char *arg) {
    if (p->rc == MT_OK) {
        p->rc = rc;
        snprintf(p->err, sizeof p->err, fmt, arg);
    }
    return false;
}

static void dp_ws(dict_parser *p) {
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
        p->s++;
}

static bool dp_char(dict_parser *p, char c) {
    dp_ws(p);
    if (p->s < p->end && *p->s == c) {
        p->s++;
        return true;
    }
    return false;
}

/* A quoted string ('...' or "..."), without escapes; copied into buf. */
static bool dp_string(dict_parser *p, char *buf, size_t n) {
    dp_ws(p);
    if (p->s >= p->end || (*p->s != '\'' && *p->s != '"'))
        return dp_fail(p, MT_ERR_FORMAT, "expected a quoted string%s", "");
    char q = *p->s++;
    size_t k = 0;
    while (p->s < p->end && *p->s != q) {
        if (*p->s == '\\') return dp_fail(p, MT_ERR_FORMAT, "escapes in strings%s", "");
        if (k + 1 < n) buf[k++] = *p->s;
        p->s++;
    }
    if (p->s >= p->end) return dp_fail(p, MT_ERR_FORMAT, "unterminated string%s", "");
    p->s++;
    buf[k] = '\0';
    return true;
}

/* A non-negative integer (Python 2 NumPy wrote a trailing 'L'). */
static bool dp_uint(dict_parser *p, int64_t *out) {
    dp_ws(p);
    if (p->s >= p->end || *p->s < '0' || *p->s > '9')
        return dp_fail(p, MT_ERR_FORMAT, "expected a non-negative integer%s", "");
    int64_t v = 0;
    while (p->s < p->end && *p->s >= '0' && *p->s <= '9') {
        if (v > (INT64_MAX - 9) / 10) return dp_fail(p, MT_ERR_FORMAT, "dimension too large%s", "");
        v = v * 10 + (*p->s++ - '0');
    }
    if (p->s < p->end && (*p->s == 'L' || *p->s == 'l')) p->s++;
    *out = v;
    return true;
}

/* A tuple of integers: (), (5,), (4, 64), also (5) leniently. */
static bool dp_shape(dict_parser *p, mt_shape *sh) {
    sh->ndim = 0;
    if (!dp_char(p, '(')) return dp_fail(p, MT_ERR_FORMAT, "shape is not a tuple%s", "");
    if (dp_char(p, ')')) return true;
    for (;;) {
        int64_t v;
        if (!dp_uint(p, &v)) return false;
        if (sh->ndim == MT_MAX_DIMS)
            return dp_fail(p, MT_ERR_UNSUPPORTED, "more than %s dimensions", "6");
        sh->dim[sh->ndim++] = v;
        bool comma = dp_char(p, ',');
        if (dp_char(p, ')')) return true;
        if (!comma) return dp_fail(p, MT_ERR_FORMAT, "malformed shape tuple%s", "");
    }
}

static bool dp_bool(dict_parser *p, bool *out) {
    dp_ws(p);
    size_t left = (size_t)(p->end - p->s);
    if (left >= 4 && memcmp(p->s, "True", 4) == 0) {
        p->s += 4;
        *out = true;
        return true;
    }
    if (left >= 5 && memcmp(p->s, "False", 5) == 0) {
        p->s += 5;
        *out = false;
        return true;
    }
    return dp_fail(p, MT_ERR_FORMAT, "expected True or False%s", "");
}

/* Skips the value of a key we do not know (string, bool, int or tuple). */
static bool dp_skip_value(dict_parser *p) {
    dp_ws(p);
    if (p->s >= p->end) return dp_fail(p, MT_ERR_FORMAT, "missing value%s", "");
    char c = *p->s;
    char buf[8];
    int64_t v;
    bool b;
    mt_shape sh;
    if (c == '\'' || c == '"') return dp_string(p, buf, sizeof buf);
    if (c == '(') return dp_shape(p, &sh);
    if (c >= '0' && c <= '9') return dp_uint(p, &v);
    return dp_bool(p, &b);
}

/* Maps a descr string ("<f4") to a type. */
static bool parse_descr(dict_parser *p, const char *d, const npy_type **out) {
    char order = d[0];
    if (order != '<' && order != '>' && order != '|' && order != '=')
        return dp_fail(p, MT_ERR_UNSUPPORTED, "dtype '%s' is not supported", d);
    char kind = d[1];
    char *end = NULL;
    long width = (kind != '\0' && d[2] >= '0' && d[2] <= '9') ? strtol(d + 2, &end, 10) : -1;
    if (width <= 0 || end == NULL || *end != '\0')
        return dp_fail(p, MT_ERR_UNSUPPORTED, "dtype '%s' is not supported", d);
    if (width > 1 && order == '>')
        return dp_fail(p, MT_ERR_UNSUPPORTED, "dtype '%s' is big-endian (not supported)", d);
    if (width > 1 && order == '|')
        return dp_fail(p, MT_ERR_UNSUPPORTED, "dtype '%s' is not supported", d);
    for (size_t i = 0; i < N_NPY_TYPES; i++)
        if (npy_types[i].kind == kind && npy_types[i].width == width) {
            *out = &npy_types[i];
            return true;
        }
    return dp_fail(p, MT_ERR_UNSUPPORTED,
                   "dtype '%s' is not supported (float16/32/64, int8..64, uint8..64 are)", d);
}

/* Parses the npy preamble and dict of a member of len bytes. */
static mt_status parse_npy(const unsigned char *b, uint64_t len, const char *file,
                           const char *member, npy_header *h) {
    if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return mt_seterr(MT_ERR_FORMAT, "%s: member '%s' is not a .npy array (bad magic)", file,
                         member);
    int major = b[6];
    uint64_t hlen, start;
    if (major == 1) {
        hlen = rd16(b + 8);
        start = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return mt_seterr(MT_ERR_FORMAT, "%s: member '%s': truncated .npy preamble", file,
                             member);
        hlen = rd32(b + 8);
        start = 12;
    } else {
        return mt_seterr(MT_ERR_UNSUPPORTED, "%s: member '%s': .npy format version %d.%d", file,
                         member, major, b[7]);
    }
    if (!in_bounds(start, hlen, len))
        return mt_seterr(MT_ERR_FORMAT,
                         "%s: member '%s': .npy header of %llu bytes extends past the member "
                         "(%llu bytes)",
                         file, member, (unsigned long long)hlen, (unsigned long long)len);

    dict_parser p = {.s = (const char *)b + start, .end = (const char *)b + start + hlen};
    bool have_descr = false, have_shape = false, fortran = false;
    char key[32], descr[32];
    if (!dp_char(&p, '{')) dp_fail(&p, MT_ERR_FORMAT, "header is not a dict%s", "");
    while (p.rc == MT_OK && !dp_char(&p, '}')) {
        if (!dp_string(&p, key, sizeof key)) break;
        if (!dp_char(&p, ':')) {
            dp_fail(&p, MT_ERR_FORMAT, "expected ':' after '%s'", key);
            break;
        }
        if (strcmp(key, "descr") == 0) {
            dp_ws(&p);
            if (p.s < p.end && *p.s == '[') {
                dp_fail(&p, MT_ERR_UNSUPPORTED, "structured dtypes are not supported%s", "");
                break;
            }
            if (!dp_string(&p, descr, sizeof descr) || !parse_descr(&p, descr, &h->type)) break;
            have_descr = true;
        } else if (strcmp(key, "shape") == 0) {
            if (!dp_shape(&p, &h->shape)) break;
            have_shape = true;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (!dp_bool(&p, &fortran)) break;
        } else if (!dp_skip_value(&p)) {
            break;
        }
        if (!dp_char(&p, ',')) {
            if (!dp_char(&p, '}')) dp_fail(&p, MT_ERR_FORMAT, "expected ',' or '}'%s", "");
            break;
        }
    }
    if (p.rc == MT_OK) {
        dp_ws(&p);
        while (p.s < p.end && *p.s == '\0')
            p.s++; /* some writers pad with NUL */
        if (p.s != p.end) dp_fail(&p, MT_ERR_FORMAT, "unexpected text after the dict%s", "");
    }
    if (p.rc == MT_OK && !have_descr) dp_fail(&p, MT_ERR_FORMAT, "no 'descr' key%s", "");
    if (p.rc == MT_OK && !have_shape) dp_fail(&p, MT_ERR_FORMAT, "no 'shape' key%s", "");
    if (p.rc == MT_OK && fortran && h->shape.ndim > 1)
        dp_fail(&p, MT_ERR_UNSUPPORTED, "array is stored in Fortran order (not row-major)%s", "");
    if (p.rc != MT_OK)
        return mt_seterr(p.rc, "%s: member '%s': bad .npy header: %s", file, member, p.err);

    /* data size: prod(shape) * width must equal what the member holds */
    uint64_t avail = len - start - hlen, need = (uint64_t)h->type->width;
    bool zero = false, too_big = false;
    for (int i = 0; i < h->shape.ndim; i++)
        zero |= h->shape.dim[i] == 0;
    for (int i = 0; i < h->shape.ndim && !zero && !too_big; i++) {
        uint64_t d = (uint64_t)h->shape.dim[i];
        if (need > UINT64_MAX / d)
            too_big = true;
        else
            need *= d;
    }
    if (zero) need = 0;
    if (too_big || need != avail) {
        char sh[160];
        shape_text(&h->shape, sh, sizeof sh);
        return mt_seterr(MT_ERR_FORMAT,
                         "%s: member '%s': shape %s of dtype '%s' needs %s%llu data bytes, "
                         "the member has %llu",
                         file, member, sh, descr, too_big ? "more than " : "",
                         (unsigned long long)need, (unsigned long long)avail);
    }
    h->data_off = (size_t)(start + hlen);
    return MT_OK;
}

/* ------------------------------------------------------- zip reading */

/* What the central directory says about one member. */
typedef struct zip_member {
    const unsigned char *name; /* not NUL-terminated */
    uint16_t name_len;
    uint16_t flags, method;
    uint32_t crc;
    uint64_t csize, usize, local_off;
} zip_member;

typedef struct zip_dir {
    uint64_t cd_off, cd_size, n_entries;
} zip_dir;

/* Finds the (zip64) end of central directory record. */
static mt_status find_directory(const unsigned char *b, uint64_t size, const char *file,
                                zip_dir *d) {
    if (size < EOCD_LEN)
        return mt_seterr(MT_ERR_FORMAT, "%s: too short for a zip archive (%llu bytes)", file,
                         (unsigned long long)size);
    uint64_t lowest = size > EOCD_LEN + 65535 ? size - EOCD_LEN - 65535 : 0;
    uint64_t pos = size - EOCD_LEN;
    for (;;) {
        if (rd32(b + pos) == SIG_EOCD && pos + EOCD_LEN + rd16(b + pos + 20) <= size) break;
        if (pos == lowest)
            return mt_seterr(MT_ERR_FORMAT,
                             "%s: no zip end-of-central-directory record (truncated, or not a "
                             ".npz file)",
                             file);
        pos--;
    }
    const unsigned char *e = b + pos;
    uint64_t dir_end = pos; /* the central directory must end before this */
    if (pos >= LOC64_LEN && rd32(e - LOC64_LEN) == SIG_LOC64) {
        const unsigned char *loc = e - LOC64_LEN;
        uint64_t off = rd64(loc + 8);
        if (rd32(loc + 4) != 0 || rd32(loc + 16) > 1)
            return mt_seterr(MT_ERR_UNSUPPORTED, "%s: multi-disk zip archives are not supported",
                             file);
        if (!in_bounds(off, EOCD64_LEN, pos - LOC64_LEN) || rd32(b + off) != SIG_EOCD64)
            return mt_seterr(MT_ERR_FORMAT,
                             "%s: zip64 end-of-central-directory record missing or damaged "
                             "(offset %llu, file size %llu)",
                             file, (unsigned long long)off, (unsigned long long)size);
        const unsigned char *z = b + off;
        if (rd32(z + 16) != 0 || rd32(z + 20) != 0 || rd64(z + 24) != rd64(z + 32))
            return mt_seterr(MT_ERR_UNSUPPORTED, "%s: multi-disk zip archives are not supported",
                             file);
        d->n_entries = rd64(z + 32);
        d->cd_size = rd64(z + 40);
        d->cd_off = rd64(z + 48);
        dir_end = off;
    } else {
        if (rd16(e + 4) != 0 || rd16(e + 6) != 0 || rd16(e + 8) != rd16(e + 10))
            return mt_seterr(MT_ERR_UNSUPPORTED, "%s: multi-disk zip archives are not supported",
                             file);
        d->n_entries = rd16(e + 10);
        d->cd_size = rd32(e + 12);
        d->cd_off = rd32(e + 16);
    }
    if (!in_bounds(d->cd_off, d->cd_size, dir_end))
        return mt_seterr(MT_ERR_FORMAT,
                         "%s: zip central directory (offset %llu, size %llu) extends past its "
                         "end record at %llu (file size %llu)",
                         file, (unsigned long long)d->cd_off, (unsigned long long)d->cd_size,
                         (unsigned long long)dir_end, (unsigned long long)size);
    if (d->n_entries > d->cd_size / CENTRAL_LEN)
        return mt_seterr(MT_ERR_FORMAT,
                         "%s: zip directory claims %llu members but is only %llu bytes", file,
                         (unsigned long long)d->n_entries, (unsigned long long)d->cd_size);
    return MT_OK;
}

/* Parses the central directory entry at *pos (inside [.., end)) and moves
** *pos past it. */
static mt_status parse_central(const unsigned char *b, uint64_t *pos, uint64_t end,
                               const char *file, uint64_t index, zip_member *m) {
    const unsigned char *c = b + *pos;
    if (!in_bounds(*pos, CENTRAL_LEN, end) || rd32(c) != SIG_CENTRAL)
        return mt_seterr(MT_ERR_FORMAT, "%s: zip directory entry %llu is damaged (offset %llu)",
                         file, (unsigned long long)index, (unsigned long long)*pos);
    uint16_t nlen = rd16(c + 28), xlen = rd16(c + 30), clen = rd16(c + 32);
    uint64_t total = (uint64_t)CENTRAL_LEN + nlen + xlen + clen;
    if (!in_bounds(*pos, total, end))
        return mt_seterr(MT_ERR_FORMAT,
                         "%s: zip directory entry %llu extends past the directory (offset "
                         "%llu)",
                         file, (unsigned long long)index, (unsigned long long)*pos);
    m->flags = rd16(c + 8);
    m->method = rd16(c + 10);
    m->crc = rd32(c + 16);
    m->csize = rd32(c + 20);
    m->usize = rd32(c + 24);
    m->name = c + CENTRAL_LEN;
    m->name_len = nlen;
    m->local_off = rd32(c + 42);
    uint32_t disk = rd16(c + 34);
    /* zip64 extra: values present only for saturated fields, in order */
    const unsigned char *x = c + CENTRAL_LEN + nlen, *xend = x + xlen;
    while (xend - x >= 4) {
        uint16_t id = rd16(x), len = rd16(x + 2);
        if (len > xend - x - 4) break; /* malformed extras: ignore the rest */
        if (id == 0x0001) {
            const unsigned char *v = x + 4, *vend = v + len;
            uint64_t *fields[3] = {&m->usize, &m->csize, &m->local_off};
            for (int k = 0; k < 3; k++) {
                if (*fields[k] != 0xFFFFFFFFu) continue;
                if (vend - v < 8)
                    return mt_seterr(MT_ERR_FORMAT,
                                     "%s: zip64 extra field of entry %llu is "
                                     "too short",
                                     file, (unsigned long long)index);
                *fields[k] = rd64(v);
                v += 8;
            }
            if (disk == 0xFFFF && vend - v >= 4) disk = rd32(v);
        }
        x += 4 + len;
    }
    if (disk != 0)
        return mt_seterr(MT_ERR_UNSUPPORTED, "%s: multi-disk zip archives are not supported", file);
    *pos += total;
    return MT_OK;
}

/* zlib allocation through the counted allocator (fault injection). */
static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
    (void)opaque;
    return mt_try_calloc(items, size);
}
static void z_free(voidpf opaque, voidpf p) {
    (void)opaque;
    mt_free(p);
}

/* Inflates a raw deflate stream of exactly out_len bytes. */
static mt_status inflate_member(const unsigned char *in, uint64_t in_len, unsigned char *out,
                                uint64_t out_len, const char *file, const char *member) {
    z_stream z;
    memset(&z, 0, sizeof z);
    z.zalloc = z_alloc;
    z.zfree = z_free;
    int zr = inflateInit2(&z, -MAX_WBITS);
    if (zr == Z_MEM_ERROR)
        return mt_seterr(MT_ERR_NOMEM, "%s: member '%s': out of memory for zlib", file, member);
    if (zr != Z_OK)
        return mt_seterr(MT_ERR_FORMAT, "%s: member '%s': zlib init failed (%d)", file, member, zr);
    const uInt chunk = 1u << 30;
    uint64_t in_left = in_len, out_left = out_len;
    z.next_in = (Bytef *)in;
    z.next_out = out;
    do {
        if (z.avail_in == 0 && in_left) {
            z.avail_in = in_left > chunk ? chunk : (uInt)in_left;
            in_left -= z.avail_in;
        }
        if (z.avail_out == 0 && out_left) {
            z.avail_out = out_left > chunk ? chunk : (uInt)out_left;
            out_left -= z.avail_out;
        }
        zr = inflate(&z, Z_NO_FLUSH);
        if (zr == Z_BUF_ERROR && z.avail_in == 0 && in_left == 0) break;   /* input ran out */
        if (zr == Z_BUF_ERROR && z.avail_out == 0 && out_left == 0) break; /* output full */
    } while (zr == Z_OK);
    uint64_t produced = out_len - out_left - z.avail_out;
    inflateEnd(&z);
    if (zr == Z_MEM_ERROR)
        return mt_seterr(MT_ERR_NOMEM, "%s: member '%s': out of memory for zlib", file, member);
    if (zr != Z_STREAM_END && zr != Z_BUF_ERROR)
        return mt_seterr(MT_ERR_FORMAT, "%s: member '%s': corrupt deflate data (%s)", file, member,
                         z.msg ? z.msg : "zlib error");
    if (zr == Z_BUF_ERROR && produced == out_len)
        return mt_seterr(MT_ERR_FORMAT,
                         "%s: member '%s': deflate data inflates to more than its size %llu", file,
                         member, (unsigned long long)out_len);
    if (zr == Z_BUF_ERROR || produced != out_len)
        return mt_seterr(MT_ERR_FORMAT,
                         "%s: member '%s': deflate data is truncated (%llu of %llu bytes)", file,
                         member, (unsigned long long)produced, (unsigned long long)out_len);
    return MT_OK;
}

static uint32_t crc_of(const unsigned char *p, uint64_t n) {
    uLong crc = crc32_z(0L, Z_NULL, 0);
    return (uint32_t)crc32_z(crc, p, (z_size_t)n);
}

/* Turns one parsed npy member into a model item or the config. */
static mt_status add_member(mt_model_file *m, const unsigned char *b, uint64_t len,
                            const char *file, const char *member, const char *item) {
    npy_header h;
    memset(&h, 0, sizeof h);
    mt_status rc = parse_npy(b, len, file, member, &h);
    if (rc != MT_OK) return rc;
    const unsigned char *data = b + h.data_off;
    size_t bytes = (size_t)(len - h.data_off);
    if (strcmp(item, CONFIG_NAME) == 0) {
        if (h.type->width != 1 || h.shape.ndim != 1)
            return mt_seterr(MT_ERR_FORMAT, "%s: member '%s' is not a 1-D int8 array of YAML text",
                             file, member);
        if (m->config_yaml != NULL)
            return mt_seterr(MT_ERR_FORMAT, "%s: member '%s' appears twice", file, member);
        const unsigned char *nul = memchr(data, 0, bytes);
        size_t n = nul ? (size_t)(nul - data) : bytes;
        char *text = mt_try_malloc(n + 1);
        if (text == NULL)
            return mt_seterr(MT_ERR_NOMEM, "%s: out of memory for the model config", file);
        memcpy(text, data, n);
        text[n] = '\0';
        m->config_yaml = text;
        return MT_OK;
    }
    if (mt_model_file_index(m, item) >= 0)
        return mt_seterr(MT_ERR_FORMAT, "%s: parameter '%s' appears twice", file, item);
    void *buf = mt_try_aligned_alloc(bytes ? bytes : 1);
    if (buf == NULL)
        return mt_seterr(MT_ERR_NOMEM, "%s: out of memory for parameter '%s' (%zu bytes)", file,
                         item, bytes);
    if (bytes) memcpy(buf, data, bytes);
    mt_tensor t = {.shape = h.shape, .data = buf, .owns = true};
    mt_model_item info = {.marian_type = h.type->code};
    if (h.type->dtype >= 0) {
        t.dtype = (mt_dtype)h.type->dtype;
    } else {
        t.dtype = h.type->width == 1 ? MT_I8 : MT_I16;
        info.raw = true;
        info.raw_bytes = bytes;
    }
    rc = mt_model_file_adopt(m, item, &t, &info);
    if (rc != MT_OK) {
        mt_aligned_free(buf);
        if (rc != MT_ERR_NOMEM) { /* prefix the file name; copy first: seterr overwrites */
            char msg[256];
            snprintf(msg, sizeof msg, "%s", mt_errmsg());
            rc = mt_seterr(rc, "%s: %s", file, msg);
        }
    }
    return rc;
}

/* Reads member zm: locates its data through the local header, inflates
** if needed, checks the CRC and adds it. */
static mt_status read_member(mt_model_file *m, const unsigned char *b, uint64_t size,
                             const char *file, const zip_member *zm) {
    mt_status rc;
    unsigned char *inflated = NULL;
    /* member: the zip name (messages); item: without ".npy" (the parameter) */
    size_t n = zm->name_len;
    char *member = mt_try_malloc(2 * n + 2);
    if (member == NULL) return mt_seterr(MT_ERR_NOMEM, "%s: out of memory", file);
    char *item = member + n + 1;
    memcpy(member, zm->name, n);
    member[n] = '\0';
    memcpy(item, member, n + 1);
    if (n > 4 && strcmp(item + n - 4, ".npy") == 0) item[n - 4] = '\0';
    if (strlen(member) != zm->name_len) {
        rc = mt_seterr(MT_ERR_FORMAT, "%s: zip member name contains a NUL byte", file);
        goto done;
    }
    if (zm->flags & 1) {
        rc = mt_seterr(MT_ERR_UNSUPPORTED, "%s: member '%s' is encrypted", file, member);
        goto done;
    }
    if (zm->method != 0 && zm->method != 8) {
        rc = mt_seterr(MT_ERR_UNSUPPORTED,
                       "%s: member '%s' uses zip compression method %u (only stored and "
                       "deflate are supported)",
                       file, member, zm->method);
        goto done;
    }
    if (!in_bounds(zm->local_off, LOCAL_LEN, size) || rd32(b + zm->local_off) != SIG_LOCAL) {
        rc = mt_seterr(MT_ERR_FORMAT,
                       "%s: member '%s': local header missing or damaged (offset %llu, file "
                       "size %llu)",
                       file, member, (unsigned long long)zm->local_off, (unsigned long long)size);
        goto done;
    }
    const unsigned char *lh = b + zm->local_off;
    uint64_t lnlen = rd16(lh + 26), lxlen = rd16(lh + 28);
    uint64_t data_off = zm->local_off + LOCAL_LEN + lnlen + lxlen;
    if (!in_bounds(zm->local_off + LOCAL_LEN, lnlen, size) || lnlen != zm->name_len ||
        memcmp(lh + LOCAL_LEN, zm->name, zm->name_len) != 0) {
        rc = mt_seterr(MT_ERR_FORMAT,
                       "%s: member '%s': local header name does not match the directory", file,
                       member);
        goto done;
    }
    if (!in_bounds(data_off, zm->csize, size)) {
        rc = mt_seterr(MT_ERR_FORMAT,
                       "%s: member '%s' data extends past end of file (offset %llu, size %llu, "
                       "file size %llu)",
                       file, member, (unsigned long long)data_off, (unsigned long long)zm->csize,
                       (unsigned long long)size);
        goto done;
    }
    const unsigned char *data = b + data_off;
    if (zm->method == 0) {
        if (zm->csize != zm->usize) {
            rc = mt_seterr(MT_ERR_FORMAT,
                           "%s: member '%s' is stored but its sizes differ (%llu vs %llu)", file,
                           member, (unsigned long long)zm->csize, (unsigned long long)zm->usize);
            goto done;
        }
    } else {
        if (zm->usize / MAX_DEFLATE_RATIO > zm->csize + 1 || zm->usize > SIZE_MAX - 1) {
            rc = mt_seterr(MT_ERR_FORMAT,
                           "%s: member '%s': uncompressed size %llu is impossible for %llu "
                           "compressed bytes",
                           file, member, (unsigned long long)zm->usize,
                           (unsigned long long)zm->csize);
            goto done;
        }
        inflated = mt_try_malloc((size_t)zm->usize + 1);
        if (inflated == NULL) {
            rc = mt_seterr(MT_ERR_NOMEM, "%s: out of memory inflating member '%s' (%llu bytes)",
                           file, member, (unsigned long long)zm->usize);
            goto done;
        }
        rc = inflate_member(data, zm->csize, inflated, zm->usize, file, member);
        if (rc != MT_OK) goto done;
        data = inflated;
    }
    uint32_t crc = crc_of(data, zm->usize);
    if (crc != zm->crc) {
        rc = mt_seterr(MT_ERR_FORMAT,
                       "%s: member '%s': CRC-32 mismatch (stored %08x, computed %08x): the "
                       "file is corrupted",
                       file, member, (unsigned)zm->crc, (unsigned)crc);
        goto done;
    }
    rc = add_member(m, data, zm->usize, file, member, item);
done:
    mt_free(inflated);
    mt_free(member);
    return rc;
}

mt_status mt_npz_read_mem(const void *data, size_t size, const char *name, mt_model_file **out) {
    MT_ASSERT(out != NULL && (data != NULL || size == 0));
    const unsigned char *b = data;
    const char *file = name ? name : "<memory>";
    zip_dir d = {0, 0, 0};
    mt_status rc = find_directory(b, size, file, &d);
    if (rc != MT_OK) return rc;
    mt_model_file *m = mt_model_file_new();
    if (m == NULL) return mt_seterr(MT_ERR_NOMEM, "%s: out of memory", file);
    uint64_t pos = d.cd_off, end = d.cd_off + d.cd_size;
    for (uint64_t i = 0; i < d.n_entries; i++) {
        zip_member zm = {0};
        rc = parse_central(b, &pos, end, file, i, &zm);
        if (rc != MT_OK) goto fail;
        rc = read_member(m, b, size, file, &zm);
        if (rc != MT_OK) goto fail;
    }
    if (pos != end) {
        rc = mt_seterr(MT_ERR_FORMAT,
                       "%s: zip directory has %llu bytes after its %llu entries (damaged "
                       "member count)",
                       file, (unsigned long long)(end - pos), (unsigned long long)d.n_entries);
        goto fail;
    }
    *out = m;
    return MT_OK;
fail:
    mt_model_file_free(m);
    return rc;
}

/* ------------------------------------------------------- zip writing */

static void wr16(unsigned char *p, uint64_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static void wr32(unsigned char *p, uint64_t v) {
    wr16(p, v);
    wr16(p + 2, v >> 16);
}
static void wr64(unsigned char *p, uint64_t v) {
    wr32(p, v);
    wr32(p + 4, v >> 32);
}

static _Atomic uint64_t zip64_test_limit; /* 0: none */

void mt_npz_set_zip64_limit_for_tests(uint64_t limit) {
    atomic_store(&zip64_test_limit, limit < 0xFFFFFFFFull ? limit : 0);
}

/* Sizes and offsets at or above this are written as zip64 fields. */
static uint64_t zip64_limit(void) {
    uint64_t v = atomic_load(&zip64_test_limit);
    return v > 0 ? v : 0xFFFFFFFFull;
}

/* One member to write: the npy header is built into hdr. */
typedef struct out_member {
    const char *name; /* item name, without ".npy" */
    const void *data;
    uint64_t data_bytes;
    bool nul_after; /* config: a NUL byte follows the data */
    char hdr[256];
    size_t hdr_len;
    uint64_t off, usize;
    uint32_t crc;
} out_member;

/* Builds Marian's npy v1.0 preamble + dict, padded to a multiple of 16. */
static void build_npy_header(out_member *om, char kind, int width, const mt_shape *s) {
    char shape[160], *h = om->hdr;
    shape_text(s, shape, sizeof shape);
    int dict =
        snprintf(h + 10, sizeof om->hdr - 10,
                 "{'descr': '<%c%d', 'fortran_order': False, 'shape': %s, }", kind, width, shape);
    size_t len = 10 + (size_t)dict;
    size_t pad = 16 - len % 16; /* 1..16, as cnpy: the last pad byte is '\n' */
    memset(h + len, ' ', pad);
    len += pad;
    h[len - 1] = '\n';
    memcpy(h, "\x93NUMPY\x01\x00", 8);
    wr16((unsigned char *)h + 8, len - 10);
    om->hdr_len = len;
}

/* Item details; a model file filled in by hand (items NULL) is all typed. */
static const mt_model_item *item_of(const mt_model_file *m, int i) {
    static const mt_model_item typed = {0};
    return m->items ? &m->items[i] : &typed;
}

/* Checks that item i can be written and fills om. */
static mt_status prepare_item(const mt_model_file *m, int i, const char *file, out_member *om) {
    const mt_tensor *t = &m->tensors[i];
    const mt_model_item *it = item_of(m, i);
    uint32_t code = it->raw ? it->marian_type : mt_marian_type_of(t->dtype);
    const npy_type *nt = npy_type_by_code(code);
    if (nt == NULL) {
        const char *tn = mt_marian_type_name(code);
        return mt_seterr(MT_ERR_UNSUPPORTED,
                         "%s: item '%s' has Marian type %s, which cannot be stored in .npz "
                         "(write a .bin instead)",
                         file, m->names[i], tn ? tn : "(unknown)");
    }
    if (t->shape.ndim < 0 || t->shape.ndim > MT_MAX_DIMS)
        return mt_seterr(MT_ERR_INVALID, "%s: item '%s' has %d dimensions", file, m->names[i],
                         t->shape.ndim);
    uint64_t numel = 1;
    for (int d = 0; d < t->shape.ndim; d++) {
        if (t->shape.dim[d] < 0)
            return mt_seterr(MT_ERR_INVALID, "%s: item '%s' has a negative dimension", file,
                             m->names[i]);
        numel *= (uint64_t)t->shape.dim[d];
    }
    uint64_t bytes = numel * (uint64_t)nt->width;
    if (it->raw && it->raw_bytes != bytes)
        return mt_seterr(MT_ERR_INVALID, "%s: item '%s' holds %zu bytes, its shape needs %llu",
                         file, m->names[i], it->raw_bytes, (unsigned long long)bytes);
    if (strlen(m->names[i]) > 65535 - 4)
        return mt_seterr(MT_ERR_INVALID, "%s: item name too long for a zip member", file);
    om->name = m->names[i];
    om->data = t->data;
    om->data_bytes = bytes;
    build_npy_header(om, nt->kind, nt->width, &t->shape);
    return MT_OK;
}

static mt_status emit(mt_write_fn fn, void *user, const void *p, uint64_t n) {
    const unsigned char *b = p;
    const uint64_t chunk = (uint64_t)1 << 30;
    while (n > 0) {
        size_t k = (size_t)(n > chunk ? chunk : n);
        mt_status rc = fn(user, b, k);
        if (rc != MT_OK) return rc;
        b += k;
        n -= k;
    }
    return MT_OK;
}

static mt_status write_member(out_member *om, uint64_t off, uint64_t limit, mt_write_fn fn,
                              void *user) {
    static const unsigned char nul = 0;
    uLong crc = crc32_z(0L, Z_NULL, 0);
    crc = crc32_z(crc, (const Bytef *)om->hdr, om->hdr_len);
    crc = crc32_z(crc, om->data, (z_size_t)om->data_bytes);
    if (om->nul_after) crc = crc32_z(crc, &nul, 1);
    om->crc = (uint32_t)crc;
    om->off = off;
    om->usize = om->hdr_len + om->data_bytes + (om->nul_after ? 1 : 0);
    bool z64 = om->usize >= limit;
    size_t nlen = strlen(om->name) + 4;
    unsigned char lh[LOCAL_LEN + 20];
    wr32(lh, SIG_LOCAL);
    wr16(lh + 4, z64 ? 45 : 20);
    wr16(lh + 6, 0);  /* flags */
    wr16(lh + 8, 0);  /* stored */
    wr32(lh + 10, 0); /* time, date */
    wr32(lh + 14, om->crc);
    wr32(lh + 18, z64 ? 0xFFFFFFFFu : om->usize);
    wr32(lh + 22, z64 ? 0xFFFFFFFFu : om->usize);
    wr16(lh + 26, nlen);
    wr16(lh + 28, z64 ? 20 : 0);
    mt_status rc = emit(fn, user, lh, LOCAL_LEN);
    if (rc == MT_OK) rc = emit(fn, user, om->name, nlen - 4);
    if (rc == MT_OK) rc = emit(fn, user, ".npy", 4);
    if (rc == MT_OK && z64) {
        unsigned char *x = lh + LOCAL_LEN;
        wr16(x, 0x0001);
        wr16(x + 2, 16);
        wr64(x + 4, om->usize);
        wr64(x + 12, om->usize);
        rc = emit(fn, user, x, 20);
    }
    if (rc == MT_OK) rc = emit(fn, user, om->hdr, om->hdr_len);
    if (rc == MT_OK) rc = emit(fn, user, om->data, om->data_bytes);
    if (rc == MT_OK && om->nul_after) rc = emit(fn, user, &nul, 1);
    return rc;
}

/* Bytes a member takes in the archive (local header to end of data). */
static uint64_t member_span(const out_member *om, uint64_t limit) {
    return LOCAL_LEN + strlen(om->name) + 4 + (om->usize >= limit ? 20 : 0) + om->usize;
}

static mt_status write_central(const out_member *om, uint64_t limit, mt_write_fn fn, void *user,
                               uint64_t *written) {
    bool big = om->usize >= limit, far = om->off >= limit;
    size_t nlen = strlen(om->name) + 4;
    size_t xlen = (big || far) ? 4 + (big ? 16 : 0) + (far ? 8 : 0) : 0;
    unsigned char c[CENTRAL_LEN + 28];
    wr32(c, SIG_CENTRAL);
    wr16(c + 4, xlen ? 45 : 20); /* made by */
    wr16(c + 6, xlen ? 45 : 20); /* needed */
    wr16(c + 8, 0);
    wr16(c + 10, 0);
    wr32(c + 12, 0);
    wr32(c + 16, om->crc);
    wr32(c + 20, big ? 0xFFFFFFFFu : om->usize);
    wr32(c + 24, big ? 0xFFFFFFFFu : om->usize);
    wr16(c + 28, nlen);
    wr16(c + 30, xlen);
    wr16(c + 32, 0); /* comment */
    wr16(c + 34, 0); /* disk */
    wr16(c + 36, 0); /* internal attributes */
    wr32(c + 38, 0); /* external attributes */
    wr32(c + 42, far ? 0xFFFFFFFFu : om->off);
    mt_status rc = emit(fn, user, c, CENTRAL_LEN);
    if (rc == MT_OK) rc = emit(fn, user, om->name, nlen - 4);
    if (rc == MT_OK) rc = emit(fn, user, ".npy", 4);
    if (rc == MT_OK && xlen) {
        unsigned char *x = c + CENTRAL_LEN, *v = x + 4;
        wr16(x, 0x0001);
        wr16(x + 2, xlen - 4);
        if (big) {
            wr64(v, om->usize);
            wr64(v + 8, om->usize);
            v += 16;
        }
        if (far) wr64(v, om->off);
        rc = emit(fn, user, x, xlen);
    }
    *written += CENTRAL_LEN + nlen + xlen;
    return rc;
}

static mt_status write_end(uint64_t n, uint64_t cd_off, uint64_t cd_size, uint64_t limit,
                           mt_write_fn fn, void *user) {
    unsigned char e[EOCD64_LEN + LOC64_LEN + EOCD_LEN];
    unsigned char *p = e;
    bool z64 = n >= 0xFFFF || cd_off >= limit || cd_size >= limit;
    if (z64) {
        uint64_t at = cd_off + cd_size;
        wr32(p, SIG_EOCD64);
        wr64(p + 4, EOCD64_LEN - 12);
        wr16(p + 12, 45);
        wr16(p + 14, 45);
        wr32(p + 16, 0);
        wr32(p + 20, 0);
        wr64(p + 24, n);
        wr64(p + 32, n);
        wr64(p + 40, cd_size);
        wr64(p + 48, cd_off);
        p += EOCD64_LEN;
        wr32(p, SIG_LOC64);
        wr32(p + 4, 0);
        wr64(p + 8, at);
        wr32(p + 16, 1);
        p += LOC64_LEN;
    }
    wr32(p, SIG_EOCD);
    wr16(p + 4, 0);
    wr16(p + 6, 0);
    wr16(p + 8, n >= 0xFFFF ? 0xFFFF : n);
    wr16(p + 10, n >= 0xFFFF ? 0xFFFF : n);
    wr32(p + 12, cd_size >= limit ? 0xFFFFFFFFu : cd_size);
    wr32(p + 16, cd_off >= limit ? 0xFFFFFFFFu : cd_off);
    wr16(p + 20, 0);
    p += EOCD_LEN;
    return emit(fn, user, e, (uint64_t)(p - e));
}

mt_status mt_npz_write_to(const mt_model_file *m, const char *name, mt_write_fn fn, void *user) {
    MT_ASSERT(m != NULL && fn != NULL);
    const char *file = name ? name : "<memory>";
    int total = m->n + (m->config_yaml ? 1 : 0);
    mt_status rc;
    out_member *om = mt_try_calloc(total ? (size_t)total : 1, sizeof *om);
    if (om == NULL) return mt_seterr(MT_ERR_NOMEM, "%s: out of memory", file);
    for (int i = 0; i < m->n; i++) {
        rc = prepare_item(m, i, file, &om[i]);
        if (rc != MT_OK) goto done;
    }
    if (m->config_yaml) {
        out_member *c = &om[m->n];
        size_t len = strlen(m->config_yaml);
        mt_shape s = {.ndim = 1, .dim = {(int64_t)len + 1}};
        c->name = CONFIG_NAME;
        c->data = m->config_yaml;
        c->data_bytes = len;
        c->nul_after = true;
        build_npy_header(c, 'i', 1, &s);
    }
    uint64_t limit = zip64_limit(), off = 0, cd_size = 0;
    for (int k = 0; k < total; k++) {
        rc = write_member(&om[k], off, limit, fn, user);
        if (rc != MT_OK) goto done;
        off += member_span(&om[k], limit);
    }
    for (int k = 0; k < total; k++) {
        rc = write_central(&om[k], limit, fn, user, &cd_size);
        if (rc != MT_OK) goto done;
    }
    rc = write_end((uint64_t)total, off, cd_size, limit, fn, user);
done:
    mt_free(om);
    return rc;
}
