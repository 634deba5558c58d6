/*
** mt_base.h: the leaf part of the engine that every layer may use: status
** codes and per-thread error messages, UTF-8 decoding, the log callback, assertions with an
** abort hook, counted host allocation with fault injection, and arenas.
** db/ and ui/ include only this; models/ and app/ get it through mt.h.
*/
#ifndef MT_BASE_H
#define MT_BASE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ hash */

/* FNV-1a, 64 bits: the hash of n bytes at p, continuing from h (start
** with MT_FNV1A_INIT).  Hash tables and content digests of the project. */
#define MT_FNV1A_INIT 0xcbf29ce484222325ull
static inline uint64_t mt_fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* ----------------------------------------------------------------- UTF-8 */

/* Decodes the code point at s[0..n) (n >= 1) into *cp and returns its
** length in bytes.  A byte that does not start a well-formed sequence
** (stray continuation byte, overlong form, surrogate, above U+10FFFF,
** truncated at n) decodes as U+FFFD of length 1, so a loop over any bytes
** advances and invalid input shows as replacement characters.  The one
** UTF-8 decoder of the project. */
static inline size_t mt_utf8_decode(const char *s, size_t n, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    uint32_t c = u[0], min;
    size_t len;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if ((c & 0xE0) == 0xC0) {
        len = 2, c &= 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, c &= 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, c &= 0x07, min = 0x10000;
    } else {
        goto bad;
    }
    if (len > n) goto bad;
    for (size_t i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80) goto bad;
        c = (c << 6) | (u[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) goto bad;
    *cp = c;
    return len;
bad:
    *cp = 0xFFFD;
    return 1;
}

/* Whether mt_utf8_decode's result (cp, len) stands for an invalid byte
** rather than an encoded U+FFFD (which is three bytes long). */
static inline bool mt_utf8_bad(uint32_t cp, size_t len) { return cp == 0xFFFD && len == 1; }

/* Whether s[0..n) is well-formed UTF-8 (no overlong forms, surrogates or
** code points above U+10FFFF); if not and bad_offset is not NULL, the byte
** offset of the first bad sequence goes there. */
static inline bool mt_utf8_valid(const char *s, size_t n, size_t *bad_offset) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = (unsigned char)s[i] < 0x80 ? 1 : mt_utf8_decode(s + i, n - i, &cp);
        if (k == 1 && (unsigned char)s[i] >= 0x80) {
            if (bad_offset) *bad_offset = i;
            return false;
        }
        i += k;
    }
    return true;
}

/* Encodes cp into out; returns its length in bytes, 0 for a surrogate or a
** value above U+10FFFF (nothing written). */
static inline size_t mt_utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp > 0x10FFFF) return 0;
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* ---------------------------------------------------------------- status */

typedef enum mt_status {
    MT_OK = 0,
    MT_ABORTED = 1,       /* should_abort() returned true; not an error      */
    MT_ERR_NOMEM = -1,    /* host or device allocation failed                 */
    MT_ERR_IO = -2,       /* open/read/write/rename failed                    */
    MT_ERR_FORMAT = -3,   /* file readable but malformed or unsupported       */
    MT_ERR_DEVICE = -4,   /* CUDA/cuBLAS failure; see mt_errmsg()             */
    MT_ERR_INVALID = -5,  /* bad argument caught at an API boundary           */
    MT_ERR_NOTFOUND = -6, /* named item (parameter, key, file) does not exist */
    MT_ERR_UNSUPPORTED = -7,
} mt_status;

const char *mt_status_str(mt_status s);
/* Detail of the last failure on this thread ("" when none). */
const char *mt_errmsg(void);
/* Sets the per-thread message (printf format).  Returns rc for tail calls:
** `return mt_seterr(MT_ERR_FORMAT, "bad header in %s", path);` */
mt_status mt_seterr(mt_status rc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Prepends "<prefix>: " (printf format) to the current message and returns
** rc: `return mt_errprefix(rc, "%s", path);` after a failed read of path. */
mt_status mt_errprefix(mt_status rc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void mt_clearerr(void);

/* ------------------------------------------------------------------- log */

typedef enum mt_log_level { MT_LOG_DEBUG = 0, MT_LOG_INFO, MT_LOG_WARN, MT_LOG_ERROR } mt_log_level;
typedef void (*mt_log_fn)(mt_log_level level, const char *msg, void *user);
/* Installs the log sink (NULL restores the default, which writes to stderr).
** The TUI routes logs to its status line.  Thread-safe to call at start-up. */
void mt_log_set(mt_log_fn fn, void *user);
void mt_log(mt_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---------------------------------------------------------------- assert */

/* Always-on assertion for programmer errors.  Runs the abort hook (app/
** installs one that restores the terminal), prints file:line and aborts. */
#define MT_ASSERT(x)                                                                               \
    do {                                                                                           \
        if (!(x)) mt_abort(__FILE__, __LINE__, #x);                                                \
    } while (0)
#ifdef NDEBUG
#define MT_DEBUG_ASSERT(x) ((void)0)
#else
#define MT_DEBUG_ASSERT(x) MT_ASSERT(x)
#endif
void mt_abort(const char *file, int line, const char *what)
#if defined(__GNUC__)
    __attribute__((noreturn))
#endif
    ;
void mt_set_abort_hook(void (*hook)(void));

/* ---------------------------------------------------------------- memory */

/* All host allocations go through these.  mt_xmalloc aborts on failure (small
** bookkeeping); mt_try_malloc returns NULL (tensors, buffers, arenas, files). */
void *mt_try_malloc(size_t n);
void *mt_try_calloc(size_t n, size_t size);
void *mt_try_realloc(void *p, size_t n);
void *mt_xmalloc(size_t n);
void *mt_xcalloc(size_t n, size_t size);
void *mt_xrealloc(void *p, size_t n);
char *mt_xstrdup(const char *s);
char *mt_try_strdup(const char *s);
void mt_free(void *p); /* NULL is a no-op */
/* 64-byte aligned try-allocation for tensor data; free with mt_aligned_free. */
void *mt_try_aligned_alloc(size_t n);
void mt_aligned_free(void *p);
/* Gives freed heap memory back to the system where the C library can
** (glibc's malloc_trim): after freeing many large blocks at once (a graph's
** overflow blocks), so that they do not stay in the process's resident set
** next to their replacement. */
void mt_alloc_trim(void);
/* For inference processes: freed heap memory stays in the process for the
** next allocation instead of going back to the system at each free (glibc:
** trim and mmap thresholds raised to fixed values).  A graph's first round
** runs before its value region is sized, on one block per value, each freed
** after its last use; with glibc's adaptive thresholds each free of a block
** of megabytes gave its pages back and the next block faulted them in
** again (176,000 page faults, 700 MB touched, for 200 sentences at batch
** 32).  Training, which holds gigabytes, trims explicitly instead. */
void mt_alloc_keep_freed(void);

/* Statistics and test-only fault injection (counts every try-allocation). */
typedef struct mt_alloc_stats {
    size_t live_bytes;  /* bytes currently allocated                     */
    size_t live_blocks; /* blocks currently allocated                    */
    size_t peak_bytes;
    uint64_t n_allocs; /* try- and x-allocations since start            */
} mt_alloc_stats;
mt_alloc_stats mt_alloc_get_stats(void);
/* Makes the n-th try-allocation from now (0-based) fail, and every later
** one too when sticky; n < 0 disables.  Process-wide, for tests only. */
void mt_alloc_fail_at(int64_t n, bool sticky);
/* Number of try-allocations since the last mt_alloc_fail_at(). */
int64_t mt_alloc_count(void);

/* ----------------------------------------------------------------- arena */

/* Bump allocator with a chunk list, for graph nodes and temporary host data.
** mt_arena_reset() keeps the first chunk and, when several chunks were in use,
** grows the first one to their total so that the next round needs one chunk. */
typedef struct mt_arena mt_arena;
mt_status mt_arena_init(size_t chunk_bytes, mt_arena **out);
void *mt_arena_alloc(mt_arena *a, size_t n, size_t align); /* NULL on failure */
void mt_arena_reset(mt_arena *a);
void mt_arena_free(mt_arena *a);
size_t mt_arena_capacity(const mt_arena *a); /* bytes held in chunks   */
size_t mt_arena_used(const mt_arena *a);
uint64_t mt_arena_grow_count(const mt_arena *a); /* chunks added since init */

#ifdef __cplusplus
}
#endif
#endif /* MT_BASE_H */
