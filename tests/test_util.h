/*
** test_util.h: small helpers shared by tests/LAYER/test_*.c (static inline, one
** copy per test executable; nothing here is a test oracle):
**   - a seeded xorshift64 generator for random inputs: each test executable
**     has its own state, starting at TEST_RNG_DEFAULT_SEED; test_rng_seed()
**     restarts it (tests whose fixed inputs were drawn from another seed
**     call it first);
**   - membuf, an mt_write_fn sink collecting bytes in a growing heap block;
**   - test_read_file, a whole file in a heap block of exactly its size;
**     read_lines, a text file as lines;
**   - test_alloc_fail_sweep, the allocation-failure loop around a scenario.
*/
#ifndef MT_TEST_UTIL_H
#define MT_TEST_UTIL_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "harness.h"
#include "mt_base.h"

/* ------------------------------------------------------------- random */

#define TEST_RNG_DEFAULT_SEED 0x9e3779b97f4a7c15ull

static uint64_t test_rng_state = TEST_RNG_DEFAULT_SEED;

static inline void test_rng_seed(uint64_t seed) { test_rng_state = seed; }

/* xorshift64 (13, 7, 17) */
static inline uint64_t test_rng_next(void) {
    uint64_t x = test_rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return test_rng_state = x;
}

/* Uniform in [lo, hi) from the top 24 bits of the next draw. */
static inline float test_urand(float lo, float hi) {
    return lo + (hi - lo) * (float)((test_rng_next() >> 40) * (1.0 / 16777216.0));
}

/* Fills p[0..n) with test_urand(lo, hi); returns p. */
static inline float *test_fill_rand(float *p, int64_t n, float lo, float hi) {
    for (int64_t i = 0; i < n; i++)
        p[i] = test_urand(lo, hi);
    return p;
}

/* ------------------------------------------------------------- membuf */

typedef struct membuf {
    unsigned char *p;
    size_t n, cap;
} membuf;

/* An mt_write_fn: appends data[0..n) to the membuf user. */
static inline mt_status membuf_write(void *user, const void *data, size_t n) {
    membuf *b = user;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (p == NULL) return mt_seterr(MT_ERR_NOMEM, "test membuf");
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
    return MT_OK;
}

static inline void membuf_free(membuf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* --------------------------------------------------------------- files */

/* The bytes of path in a malloc'd block of exactly their number (at least
** 1), length in *len; NULL if the file cannot be opened or read. */
static inline unsigned char *test_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc(n > 0 ? (size_t)n : 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return p;
}

typedef struct lines {
    int n;
    char **s;
} lines;

static inline void lines_free(lines *l) {
    for (int i = 0; i < l->n; i++)
        free(l->s[i]);
    free(l->s);
    l->n = 0;
    l->s = NULL;
}

/* The lines of path without their '\n' and one '\r' before it; returns 0
** (and no lines) when the file cannot be opened, else 1. */
static inline int read_lines(const char *path, lines *out) {
    FILE *f = fopen(path, "rb");
    out->n = 0;
    out->s = NULL;
    if (!f) return 0;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t k;
    while ((k = getline(&buf, &cap, f)) >= 0) {
        if (k > 0 && buf[k - 1] == '\n') buf[--k] = '\0';
        if (k > 0 && buf[k - 1] == '\r') buf[--k] = '\0';
        out->s = realloc(out->s, sizeof(char *) * (size_t)(out->n + 1));
        out->s[out->n++] = strdup(buf);
    }
    free(buf);
    fclose(f);
    return 1;
}

/* ----------------------------------------------------- allocation faults */

/* Runs scenario(ctx) with the host try-allocation number N failing (and
** every one after it), for N = 0, 1, 2, ... below max_n until it succeeds.
** Checks that each run leaves no block allocated and that each failure
** sets a message (stopping after 5 failed N), and that the scenario
** succeeds in the end. */
static inline void test_alloc_fail_sweep(mt_status (*scenario)(void *ctx), void *ctx,
                                         int64_t max_n) {
    mt_alloc_fail_at(-1, false);
    int64_t n = 0, failures = 0;
    mt_status rc = MT_ERR_NOMEM;
    for (; n < max_n; n++) {
        size_t live = mt_alloc_get_stats().live_blocks;
        mt_alloc_fail_at(n, true);
        mt_clearerr();
        rc = scenario(ctx);
        mt_alloc_fail_at(-1, false);
        size_t after = mt_alloc_get_stats().live_blocks;
        if (!CHECK(after == live, "N=%lld: %zu blocks leaked (%s: %s)", (long long)n,
                   after - live, mt_status_str(rc), mt_errmsg()) ||
            !CHECK(rc == MT_OK || mt_errmsg()[0] != '\0', "N=%lld: %s without a message",
                   (long long)n, mt_status_str(rc))) {
            if (++failures > 5) break;
        }
        if (rc == MT_OK) break;
    }
    CHECK(rc == MT_OK, "the scenario succeeds once allocations do");
    fprintf(stderr, "allocation failures: %lld failure points tested\n", (long long)n);
}

#endif
