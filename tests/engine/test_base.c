/*
** test_base.c: status/error messages, the log callback, counted allocation
** with fault injection, and arenas (reuse without growth after reset).
*/
#include <string.h>

#include "harness.h"
#include "mt_base.h"

static int n_logged;
static char last_log[256];
static void capture(mt_log_level level, const char *msg, void *user) {
    (void)level;
    n_logged += *(int *)user;
    strncpy(last_log, msg, sizeof last_log - 1);
}

static void test_status_log(void) {
    CHECK(mt_seterr(MT_ERR_FORMAT, "bad %s at %d", "header", 7) == MT_ERR_FORMAT, "seterr rc");
    CHECK(strcmp(mt_errmsg(), "bad header at 7") == 0, "errmsg '%s'", mt_errmsg());
    /* a message that wraps the one before (found by tests/fuzz: the
    ** vocabulary's "not a YAML/JSON mapping: <the parser's message>") */
    mt_seterr(MT_ERR_FORMAT, "%s", "YAML parse error at line 3");
    mt_seterr(MT_ERR_FORMAT, "vocabulary '%s' is not a mapping: %s", "v.yml", mt_errmsg());
    CHECK(strcmp(mt_errmsg(), "vocabulary 'v.yml' is not a mapping: YAML parse error at line 3") ==
              0,
          "wrapped message '%s'", mt_errmsg());
    mt_clearerr();
    CHECK(mt_errmsg()[0] == '\0', "cleared");
    CHECK(strcmp(mt_status_str(MT_ERR_NOMEM), "out of memory") == 0, "status str");
    int one = 1;
    mt_log_set(capture, &one);
    mt_log(MT_LOG_WARN, "value %d", 42);
    CHECK(n_logged == 1 && strcmp(last_log, "value 42") == 0, "log routed: %d '%s'", n_logged,
          last_log);
    mt_log_set(NULL, NULL);
}

static void test_alloc(void) {
    mt_alloc_stats s0 = mt_alloc_get_stats();
    void *p = mt_try_malloc(1000);
    CHECK(p != NULL && ((uintptr_t)p % 64) == 0, "aligned try_malloc");
    mt_alloc_stats s1 = mt_alloc_get_stats();
    CHECK(s1.live_bytes == s0.live_bytes + 1000 && s1.live_blocks == s0.live_blocks + 1,
          "counted: %zu -> %zu", s0.live_bytes, s1.live_bytes);
    p = mt_try_realloc(p, 5000);
    CHECK(p != NULL && mt_alloc_get_stats().live_bytes == s0.live_bytes + 5000, "realloc counted");
    mt_free(p);
    mt_free(NULL);
    CHECK(mt_alloc_get_stats().live_blocks == s0.live_blocks, "freed");

    mt_alloc_fail_at(2, false); /* third try-allocation fails, the rest succeed */
    void *a = mt_try_malloc(8), *b = mt_try_calloc(2, 8), *c = mt_try_malloc(8),
         *d = mt_try_malloc(8);
    CHECK(a && b && !c && d, "one-shot failure at the third: %p %p %p %p", a, b, c, d);
    mt_free(a), mt_free(b), mt_free(d);
    mt_alloc_fail_at(1, true);
    a = mt_try_malloc(8), b = mt_try_malloc(8), c = mt_try_strdup("x");
    CHECK(a && !b && !c, "sticky failure from the second");
    CHECK(mt_alloc_count() == 3, "count %lld", (long long)mt_alloc_count());
    mt_free(a);
    mt_alloc_fail_at(-1, false);
    CHECK(mt_try_calloc(SIZE_MAX / 2, 4) == NULL, "overflowing calloc refused");
    char *s = mt_xstrdup("hello");
    CHECK(strcmp(s, "hello") == 0, "xstrdup");
    mt_free(s);
}

static void test_arena(void) {
    mt_arena *a = NULL;
    CHECK(mt_arena_init(256, &a) == MT_OK, "arena init");
    /* a round needing ~10 chunks, then reset: the next round fits in one */
    for (int round = 0; round < 3; round++) {
        uint64_t grows_before = mt_arena_grow_count(a);
        uint64_t allocs_before = mt_alloc_get_stats().n_allocs;
        for (int i = 0; i < 40; i++) {
            char *p = mt_arena_alloc(a, 60, 32);
            CHECK(p != NULL && ((uintptr_t)p % 32) == 0, "aligned arena block");
            memset(p, i, 60);
        }
        if (round > 0) {
            CHECK(mt_arena_grow_count(a) == grows_before, "round %d grew", round);
            CHECK(mt_alloc_get_stats().n_allocs == allocs_before, "round %d allocated", round);
        } else {
            CHECK(mt_arena_grow_count(a) > 0, "first round grows");
        }
        mt_arena_reset(a);
        CHECK(mt_arena_used(a) == 0, "reset");
    }
    void *big = mt_arena_alloc(a, 1 << 20, 64);
    CHECK(big != NULL, "block larger than a chunk");
    /* failure while growing gives NULL, the arena stays usable */
    mt_alloc_fail_at(0, true);
    CHECK(mt_arena_alloc(a, 4 << 20, 64) == NULL, "growth failure -> NULL");
    mt_arena_reset(a); /* regrowing fails too: keeps the oldest chunk */
    mt_alloc_fail_at(-1, false);
    CHECK(mt_arena_alloc(a, 16, 16) != NULL, "usable after failed reset");
    size_t live = mt_alloc_get_stats().live_blocks;
    mt_arena_free(a);
    mt_arena_free(NULL);
    CHECK(mt_alloc_get_stats().live_blocks < live, "arena freed its chunks");
}

int main(void) {
    test_status_log();
    test_alloc();
    test_arena();
    TEST_MAIN_END();
}
