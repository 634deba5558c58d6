/*
** alloc.c: every host allocation of the project goes through here.
**
** Blocks carry a 64-byte header holding their size, so that live bytes can
** be counted and aligned blocks freed.  Try-allocations can be made to fail
** at the n-th call (mt_alloc_fail_at) to test every failure path; the x-
** variants abort instead, for small bookkeeping where failure is fatal.
*/
#include <stdatomic.h>
#if defined(__GLIBC__) || defined(__linux__)
#include <malloc.h>
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mt_base.h"

#define HDR 64 /* header size; keeps the user pointer 64-byte aligned */

static atomic_size_t live_bytes, live_blocks, peak_bytes;
static atomic_uint_fast64_t n_allocs;
static atomic_int_fast64_t fail_at = -1, fail_count;
static atomic_bool fail_sticky;

static void account(size_t n, int sign) {
    if (sign > 0) {
        size_t now = atomic_fetch_add(&live_bytes, n) + n;
        atomic_fetch_add(&live_blocks, 1);
        atomic_fetch_add(&n_allocs, 1);
        size_t peak = atomic_load(&peak_bytes);
        while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now)) {
        }
    } else {
        atomic_fetch_sub(&live_bytes, n);
        atomic_fetch_sub(&live_blocks, 1);
    }
}

/* True when this try-allocation must fail (fault injection). */
static bool inject_failure(void) {
    int64_t at = atomic_load(&fail_at);
    int64_t k = atomic_fetch_add(&fail_count, 1);
    if (at < 0) return false;
    return atomic_load(&fail_sticky) ? k >= at : k == at;
}

static void *raw_alloc(size_t n, bool zero) {
    if (n > SIZE_MAX - HDR) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, HDR, n + HDR) != 0) return NULL;
    if (zero) memset((char *)p + HDR, 0, n);
    *(size_t *)p = n;
    account(n, +1);
    return (char *)p + HDR;
}

static size_t block_size(void *user) { return *(size_t *)((char *)user - HDR); }

void *mt_try_malloc(size_t n) { return inject_failure() ? NULL : raw_alloc(n, false); }

void *mt_try_calloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    return inject_failure() ? NULL : raw_alloc(n * size, true);
}

void *mt_try_realloc(void *p, size_t n) {
    if (p == NULL) return mt_try_malloc(n);
    if (inject_failure()) return NULL;
    size_t old = block_size(p);
    void *q = raw_alloc(n, false);
    if (q == NULL) return NULL;
    memcpy(q, p, old < n ? old : n);
    mt_free(p);
    return q;
}

static void *or_die(void *p) {
    if (p == NULL) mt_abort(__FILE__, __LINE__, "out of memory (bookkeeping allocation)");
    return p;
}

void *mt_xmalloc(size_t n) { return or_die(raw_alloc(n, false)); }
void *mt_xcalloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) or_die(NULL);
    return or_die(raw_alloc(n * size, true));
}
void *mt_xrealloc(void *p, size_t n) {
    if (p == NULL) return mt_xmalloc(n);
    size_t old = block_size(p);
    void *q = or_die(raw_alloc(n, false));
    memcpy(q, p, old < n ? old : n);
    mt_free(p);
    return q;
}

char *mt_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(mt_xmalloc(n), s, n);
}

char *mt_try_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = mt_try_malloc(n);
    return d ? memcpy(d, s, n) : NULL;
}

void mt_free(void *p) {
    if (p == NULL) return;
    account(block_size(p), -1);
    free((char *)p - HDR);
}

void *mt_try_aligned_alloc(size_t n) { return mt_try_malloc(n); }

void mt_alloc_trim(void) {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

void mt_alloc_keep_freed(void) {
#if defined(__GLIBC__)
    /* 32 MB is the largest mmap threshold glibc accepts on 64-bit systems
    ** (half its heap size); larger blocks are mapped and unmapped anyway. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
}

void mt_aligned_free(void *p) { mt_free(p); }

mt_alloc_stats mt_alloc_get_stats(void) {
    mt_alloc_stats s = {atomic_load(&live_bytes), atomic_load(&live_blocks),
                        atomic_load(&peak_bytes), atomic_load(&n_allocs)};
    return s;
}

void mt_alloc_fail_at(int64_t n, bool sticky) {
    atomic_store(&fail_sticky, sticky);
    atomic_store(&fail_count, 0);
    atomic_store(&fail_at, n);
}

int64_t mt_alloc_count(void) { return atomic_load(&fail_count); }
