/*
** test_corpus.c: models/corpus.c: reading (EOS, empty lines, invalid UTF-8,
** line-count mismatch, gzip, truncated gzip, --max-length skip and crop,
** --right-left) and batching (every sentence once per epoch, longest-first
** order inside a maxi-batch against a plain sort, word-limited batches,
** padding and masks, determinism per seed and epoch, skip = replay).
**
** The vocabulary is a plain-text one (id = line number): token "wK" has id
** K + 2 after "</s>" (0) and "<unk>" (1), so expected ids are known.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "corpus.h"
#include "harness.h"
#include "mt.h"

#define NW 50 /* words in the test vocab */

static char dir[256];

static const char *path_of(const char *name) {
    static char buf[8][512];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

static void write_file(const char *name, const char *text) {
    FILE *f = fopen(path_of(name), "wb");
    fputs(text, f);
    fclose(f);
}

static mt_vocab *load_vocab(void) {
    char *text = malloc(NW * 8 + 32);
    size_t n = (size_t)sprintf(text, "</s>\n<unk>\n");
    for (int i = 0; i < NW; i++)
        n += (size_t)sprintf(text + n, "w%d\n", i);
    write_file("vocab.txt", text);
    free(text);
    mt_vocab *v = NULL;
    CHECK_STATUS(mt_vocab_load(path_of("vocab.txt"), 0, &v));
    return v;
}

/* Captures warnings. */
static char last_warning[1024];
static int n_warnings;
static void capture(mt_log_level level, const char *msg, void *user) {
    (void)user;
    if (level >= MT_LOG_WARN) {
        snprintf(last_warning, sizeof last_warning, "%s", msg);
        n_warnings++;
    }
}

static mt_status load2(const char *a, const char *b, const mt_vocab *v, const mt_corpus_params *p,
                       mt_corpus **out) {
    const char *paths[2] = {path_of(a), path_of(b)};
    const mt_vocab *vs[2] = {v, v};
    return mt_corpus_load(paths, vs, 2, p, out);
}

static int tokens_eq(const mt_corpus *c, int64_t i, int s, const int32_t *want, int n) {
    int32_t len;
    const int32_t *t = mt_corpus_tokens(c, i, s, &len);
    if (len != n) return 0;
    for (int k = 0; k < n; k++)
        if (t[k] != want[k]) return 0;
    return 1;
}

static void test_read(const mt_vocab *v) {
    write_file("a.src", "w0 w1 w2\n\nw3\r\nw4 zz\n");
    write_file("a.trg", "w5\nw6 w7\n\nw8");
    mt_corpus_params p = mt_corpus_default_params();
    p.keep_text = true;
    mt_corpus *c = NULL;
    CHECK_STATUS(load2("a.src", "a.trg", v, &p, &c));
    if (!c) return;
    CHECK(mt_corpus_size(c) == 4 && mt_corpus_lines(c) == 4, "4 tuples, got %lld",
          (long long)mt_corpus_size(c));
    int32_t s0[] = {2, 3, 4, 0}, t0[] = {7, 0};
    CHECK(tokens_eq(c, 0, 0, s0, 4) && tokens_eq(c, 0, 1, t0, 2), "line 1 with EOS");
    int32_t eos[] = {0}, t1[] = {8, 9, 0};
    CHECK(tokens_eq(c, 1, 0, eos, 1) && tokens_eq(c, 1, 1, t1, 3), "empty source = lone EOS");
    int32_t s2[] = {5, 0};
    CHECK(tokens_eq(c, 2, 0, s2, 2) && tokens_eq(c, 2, 1, eos, 1), "\\r stripped, empty target");
    int32_t s3[] = {6, 1, 0}, t3[] = {10, 0};
    CHECK(tokens_eq(c, 3, 0, s3, 3) && tokens_eq(c, 3, 1, t3, 2), "unknown word, no final \\n");
    CHECK(mt_corpus_line(c, 3) == 4, "line numbers");
    CHECK(!strcmp(mt_corpus_text(c, 1), "w6 w7") && !strcmp(mt_corpus_text(c, 2), ""),
          "target text kept");
    CHECK(mt_corpus_max_len(c, 0) == 4 && mt_corpus_max_len(c, 1) == 3, "max lengths");
    mt_corpus_free(c);
}

static void test_bad_utf8(const mt_vocab *v) {
    write_file("u.src", "w0\nw1 \xff w2\nw3\n");
    write_file("u.trg", "w4\nw5\nw6 \xc3\x28\n");
    mt_corpus *c = NULL;
    n_warnings = 0;
    mt_log_set(capture, NULL);
    mt_status rc = load2("u.src", "u.trg", v, NULL, &c);
    mt_log_set(NULL, NULL);
    CHECK_STATUS(rc);
    if (!c) return;
    CHECK(mt_corpus_size(c) == 1 && mt_corpus_bad_utf8(c) == 2, "two pairs skipped, %lld kept",
          (long long)mt_corpus_size(c));
    CHECK(n_warnings == 2, "one warning per skipped pair (%d)", n_warnings);
    CHECK(strstr(last_warning, "u.trg:3") != NULL && strstr(last_warning, "UTF-8"),
          "warning names file:line: %s", last_warning);
    CHECK(mt_corpus_line(c, 0) == 1, "kept line 1");
    mt_corpus_free(c);
}

static void test_mismatch(const mt_vocab *v) {
    write_file("m.src", "w0\nw1\nw2\nw3\nw4\n");
    write_file("m.trg", "w0\nw1\nw2\n");
    mt_corpus *c = NULL;
    mt_status rc = load2("m.src", "m.trg", v, NULL, &c);
    CHECK(rc == MT_ERR_FORMAT && c == NULL, "mismatch is an error (%s)", mt_status_str(rc));
    const char *m = mt_errmsg();
    CHECK(strstr(m, "m.src has 5 lines") && strstr(m, "m.trg has 3 lines") &&
              strstr(m, "m.trg ends after line 3"),
          "message names files and line counts: %s", m);
    rc = load2("m.src", "missing.trg", v, NULL, &c);
    CHECK(rc == MT_ERR_IO && strstr(mt_errmsg(), "missing.trg"), "missing file: %s", mt_errmsg());
}

static void write_gz(const char *name, const char *text) {
    gzFile f = gzopen(path_of(name), "wb");
    gzputs(f, text);
    gzclose(f);
}

static void test_gz(const mt_vocab *v) {
    const char *src = "w1 w2\nw3\nw4 w5 w6\n", *trg = "w7\nw8 w9\nw10\n";
    write_file("g.src", src);
    write_file("g.trg", trg);
    write_gz("g.src.gz", src);
    write_gz("g.trg.gz", trg);
    mt_corpus *a = NULL, *b = NULL;
    CHECK_STATUS(load2("g.src", "g.trg", v, NULL, &a));
    CHECK_STATUS(load2("g.src.gz", "g.trg", v, NULL, &b));
    if (a && b) {
        CHECK(mt_corpus_size(a) == 3 && mt_corpus_size(b) == 3, "gz sizes");
        for (int64_t i = 0; i < 3; i++) {
            for (int s = 0; s < 2; s++) {
                int32_t la, lb;
                const int32_t *ta = mt_corpus_tokens(a, i, s, &la);
                const int32_t *tb = mt_corpus_tokens(b, i, s, &lb);
                CHECK(la == lb && !memcmp(ta, tb, (size_t)la * 4), "gz tuple %lld stream %d",
                      (long long)i, s);
            }
        }
    }
    mt_corpus_free(a);
    mt_corpus_free(b);
    /* a truncated .gz: cut the file in the middle of the deflate stream */
    char *big = malloc(200000);
    size_t n = 0;
    for (int i = 0; i < 10000; i++)
        n += (size_t)sprintf(big + n, "w%d w%d\n", i % NW, (i * 7) % NW);
    write_gz("t.src.gz", big);
    write_file("t.trg", big);
    free(big);
    FILE *f = fopen(path_of("t.src.gz"), "rb");
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fclose(f);
    CHECK(truncate(path_of("t.src.gz"), sz / 2) == 0, "truncate");
    mt_corpus *c = NULL;
    mt_status rc = load2("t.src.gz", "t.trg", v, NULL, &c);
    CHECK(rc == MT_ERR_IO && c == NULL && strstr(mt_errmsg(), "t.src.gz"), "truncated gz: %s %s",
          mt_status_str(rc), mt_errmsg());
}

static void test_max_length(const mt_vocab *v) {
    write_file("l.src", "w1 w2 w3 w4 w5\nw1\nw1 w2\n");
    write_file("l.trg", "w6\nw7 w8 w9 w10\nw1 w2\n");
    mt_corpus_params p = mt_corpus_default_params();
    p.max_length = 3; /* tokens incl. EOS */
    mt_corpus *c = NULL;
    CHECK_STATUS(load2("l.src", "l.trg", v, &p, &c));
    if (c) {
        CHECK(mt_corpus_size(c) == 1 && mt_corpus_too_long(c) == 2 && mt_corpus_line(c, 0) == 3,
              "skip: %lld kept", (long long)mt_corpus_size(c));
        mt_corpus_free(c);
    }
    p.max_length_crop = true;
    c = NULL;
    CHECK_STATUS(load2("l.src", "l.trg", v, &p, &c));
    if (c) {
        CHECK(mt_corpus_size(c) == 3, "crop keeps all");
        int32_t s0[] = {3, 4, 0}, t1[] = {9, 10, 0};
        CHECK(tokens_eq(c, 0, 0, s0, 3) && tokens_eq(c, 1, 1, t1, 3), "cropped, EOS last");
        mt_corpus_free(c);
    }
    p = mt_corpus_default_params();
    p.right_left = true;
    c = NULL;
    CHECK_STATUS(load2("l.src", "l.trg", v, &p, &c));
    if (c) {
        int32_t s0[] = {7, 6, 5, 4, 3, 0}, t1[] = {12, 11, 10, 9, 0};
        CHECK(tokens_eq(c, 0, 0, s0, 6) && tokens_eq(c, 1, 1, t1, 5), "right-left");
        mt_corpus_free(c);
    }
}

/* Two sources and a target (multi-source models): every stream batched. */
static void test_multi_source(const mt_vocab *v) {
    write_file("ms.a", "w1\nw2 w3\nw4 w5 w6\n");
    write_file("ms.b", "w7 w8\nw9\n\n");
    write_file("ms.t", "w10\nw11 w12 w13\nw14 w15\n");
    const char *paths[3] = {path_of("ms.a"), path_of("ms.b"), path_of("ms.t")};
    const mt_vocab *vs[3] = {v, v, v};
    mt_corpus *c = NULL;
    CHECK_STATUS(mt_corpus_load(paths, vs, 3, NULL, &c));
    if (!c) return;
    mt_batcher_params bp = mt_batcher_default_params();
    bp.shuffle = MT_SHUFFLE_NONE;
    mt_batcher *b = NULL;
    CHECK_STATUS(mt_batcher_init(c, &bp, &b));
    const mt_batch *bt = b ? mt_batcher_next(b) : NULL;
    CHECK(bt != NULL && bt->n_src == 2 && bt->size == 3, "one batch with two sources");
    if (bt) {
        /* sorted by target length, longest first: tuples 1 (4), 2 (3), 0 (2) */
        CHECK(bt->sent_ids[0] == 1 && bt->sent_ids[1] == 2 && bt->sent_ids[2] == 0,
              "trg order %lld %lld %lld", (long long)bt->sent_ids[0], (long long)bt->sent_ids[1],
              (long long)bt->sent_ids[2]);
        CHECK(bt->src_len[0] == 4 && bt->src_len[1] == 3 && bt->trg_len == 4, "padded lengths");
        /* row 0 = tuple 1: stream b "w9" -> 11 0 then padding */
        CHECK(bt->src_ids[1][0] == 11 && bt->src_ids[1][1] == 0 && bt->src_mask[1][1] == 1.0f &&
                  bt->src_mask[1][2] == 0.0f,
              "second source stream");
        /* row 1 = tuple 2: empty line in stream b = lone EOS */
        CHECK(bt->src_ids[1][3] == 0 && bt->src_mask[1][3] == 1.0f && bt->src_mask[1][4] == 0.0f,
              "empty second source");
        CHECK(bt->trg_words == 4 + 3 + 2, "target words");
        CHECK(mt_batcher_next(b) == NULL, "end of epoch");
    }
    mt_batcher_free(b);
    mt_corpus_free(c);
    /* --max-length applies to every stream (as Marian's corpus): with 3
    ** tokens incl. EOS, tuple 0 is too long only in the second source,
    ** tuple 1 only in the target, tuple 2 only in the first source; tuple 3
    ** fits everywhere */
    write_file("ml.a", "w1\nw2\nw4 w5 w6\nw1\n");
    write_file("ml.b", "w7 w8 w9\nw9\n\nw2 w3\n");
    write_file("ml.t", "w10\nw11 w12 w13\nw14\nw4\n");
    const char *mpaths[3] = {path_of("ml.a"), path_of("ml.b"), path_of("ml.t")};
    mt_corpus_params p = mt_corpus_default_params();
    p.max_length = 3;
    c = NULL;
    CHECK_STATUS(mt_corpus_load(mpaths, vs, 3, &p, &c));
    if (c) {
        CHECK(mt_corpus_size(c) == 1 && mt_corpus_too_long(c) == 3 && mt_corpus_line(c, 0) == 4,
              "max-length on 3 streams: %lld kept, %lld too long", (long long)mt_corpus_size(c),
              (long long)mt_corpus_too_long(c));
        mt_corpus_free(c);
    }
}

/* ---------------------------------------------------------------- batching */

#define NS 997

static mt_corpus *random_corpus(const mt_vocab *v, unsigned seed) {
    static char src[NS * 200], trg[NS * 200];
    size_t ns = 0, nt = 0;
    srand(seed);
    for (int i = 0; i < NS; i++) {
        int ls = rand() % 25, lt = rand() % 25;
        for (int k = 0; k < ls; k++)
            ns += (size_t)sprintf(src + ns, k ? " w%d" : "w%d", rand() % NW);
        for (int k = 0; k < lt; k++)
            nt += (size_t)sprintf(trg + nt, k ? " w%d" : "w%d", rand() % NW);
        src[ns++] = '\n';
        trg[nt++] = '\n';
    }
    src[ns] = trg[nt] = '\0';
    write_file("r.src", src);
    write_file("r.trg", trg);
    mt_corpus *c = NULL;
    mt_corpus_params p = mt_corpus_default_params();
    CHECK_STATUS(load2("r.src", "r.trg", v, &p, &c));
    return c;
}

static int32_t len_of(const mt_corpus *c, int64_t i, int s) {
    int32_t l;
    mt_corpus_tokens(c, i, s, &l);
    return l;
}

/* Checks one batch against the corpus: ids, padding, masks, trg_words. */
static int batch_consistent(const mt_corpus *c, const mt_batch *b) {
    int ok = 1;
    int64_t words = 0;
    for (int r = 0; r < b->size; r++) {
        int64_t idx = b->sent_ids[r];
        for (int s = 0; s < 2; s++) {
            int32_t l, len = s ? b->trg_len : b->src_len[0];
            const int32_t *t = mt_corpus_tokens(c, idx, s, &l);
            const int32_t *ids = (s ? b->trg_ids : b->src_ids[0]) + (int64_t)r * len;
            const float *m = (s ? b->trg_mask : b->src_mask[0]) + (int64_t)r * len;
            ok &= l <= len;
            for (int k = 0; k < len; k++) {
                ok &= k < l ? (ids[k] == t[k] && m[k] == 1.0f) : (ids[k] == 0 && m[k] == 0.0f);
            }
            if (s) words += l;
        }
    }
    ok &= words == b->trg_words;
    return ok;
}

static void test_batching_basic(const mt_corpus *c) {
    mt_batcher_params bp = mt_batcher_default_params();
    bp.mini_batch = 16;
    bp.maxi_batch = 4;
    bp.shuffle = MT_SHUFFLE_NONE;
    bp.sort = MT_SORT_TRG;
    mt_batcher *b = NULL;
    CHECK_STATUS(mt_batcher_init(c, &bp, &b));
    if (!b) return;
    int64_t n = mt_corpus_size(c);
    int *seen = calloc((size_t)n, sizeof *seen);
    int64_t pos = 0; /* sentences handed out so far = position in file order */
    int64_t group = 16 * 4;
    int bad_sort = 0, bad_set = 0, bad_batch = 0, bad_size = 0;
    /* collect each maxi-batch, compare with a plain reference sort */
    int64_t *got = malloc((size_t)n * sizeof *got);
    const mt_batch *bt;
    int64_t n_batches = 0;
    while ((bt = mt_batcher_next(b)) != NULL) {
        n_batches++;
        bad_batch += !batch_consistent(c, bt);
        bad_size += bt->size > 16 || bt->size < 1;
        for (int r = 0; r < bt->size; r++) {
            seen[bt->sent_ids[r]]++;
            got[pos++] = bt->sent_ids[r];
        }
    }
    CHECK(pos == n, "all sentences: %lld of %lld", (long long)pos, (long long)n);
    for (int64_t i = 0; i < n; i++)
        bad_set += seen[i] != 1;
    CHECK(bad_set == 0, "every sentence exactly once (%d bad)", bad_set);
    CHECK(bad_batch == 0, "batches match the corpus, padding and masks (%d bad)", bad_batch);
    CHECK(bad_size == 0, "mini-batch size limit");
    int64_t want_batches = 0;
    for (int64_t g0 = 0; g0 < n; g0 += group)
        want_batches += ((g0 + group < n ? group : n - g0) + 15) / 16;
    CHECK(n_batches == want_batches, "batch count %lld, want %lld", (long long)n_batches,
          (long long)want_batches);
    /* without shuffling, maxi-batch g holds file positions [g*64, (g+1)*64),
    ** handed out longest target first (then longest source, then highest id) */
    for (int64_t g0 = 0; g0 < n; g0 += group) {
        int64_t g1 = g0 + group < n ? g0 + group : n;
        for (int64_t i = g0; i < g1; i++) {
            bad_set += got[i] < g0 || got[i] >= g1;
            if (i + 1 < g1) {
                int64_t a = got[i], z = got[i + 1];
                int32_t ta = len_of(c, a, 1), tz = len_of(c, z, 1);
                int32_t sa = len_of(c, a, 0), sz = len_of(c, z, 0);
                int ordered = ta > tz || (ta == tz && (sa > sz || (sa == sz && a > z)));
                bad_sort += !ordered;
            }
        }
    }
    CHECK(bad_set == 0, "maxi-batches hold consecutive sentences");
    CHECK(bad_sort == 0, "sorted longest target first inside a maxi-batch (%d bad)", bad_sort);
    /* the same epoch with sort src */
    mt_batcher_free(b);
    bp.sort = MT_SORT_SRC;
    CHECK_STATUS(mt_batcher_init(c, &bp, &b));
    pos = 0;
    bad_sort = 0;
    while ((bt = mt_batcher_next(b)) != NULL)
        for (int r = 0; r < bt->size; r++)
            got[pos++] = bt->sent_ids[r];
    for (int64_t i = 0; i + 1 < n; i++) {
        if ((i + 1) % group == 0) continue;
        bad_sort += len_of(c, got[i], 0) < len_of(c, got[i + 1], 0);
    }
    CHECK(bad_sort == 0, "sort src (%d bad)", bad_sort);
    mt_batcher_free(b);
    /* sort none: highest position first inside each maxi-batch */
    bp.sort = MT_SORT_NONE;
    CHECK_STATUS(mt_batcher_init(c, &bp, &b));
    pos = 0;
    bad_sort = 0;
    while ((bt = mt_batcher_next(b)) != NULL)
        for (int r = 0; r < bt->size; r++)
            got[pos++] = bt->sent_ids[r];
    for (int64_t i = 0; i < n; i++) {
        int64_t g0 = i / group * group, g1 = g0 + group < n ? g0 + group : n;
        bad_sort += got[i] != g1 - 1 - (i - g0);
    }
    CHECK(bad_sort == 0, "sort none (%d bad)", bad_sort);
    mt_batcher_free(b);
    free(got);
    free(seen);
}

static void test_batching_words(const mt_corpus *c) {
    mt_batcher_params bp = mt_batcher_default_params();
    bp.mini_batch = 32;
    bp.maxi_batch = 5;
    bp.mini_batch_words = 60;
    bp.shuffle = MT_SHUFFLE_DATA;
    bp.seed = 42;
    mt_batcher *b = NULL;
    CHECK_STATUS(mt_batcher_init(c, &bp, &b));
    if (!b) return;
    int64_t total = 0;
    int over = 0, bad = 0;
    const mt_batch *bt;
    for (int epoch = 1; epoch <= 2; epoch++) {
        mt_batcher_begin_epoch(b, epoch);
        total = 0;
        while ((bt = mt_batcher_next(b)) != NULL) {
            int64_t w = 0;
            for (int r = 0; r < bt->size; r++)
                w += len_of(c, bt->sent_ids[r], 0);
            over += w > 60 && bt->size > 1;
            bad += !batch_consistent(c, bt);
            total += bt->size;
        }
        CHECK(total == mt_corpus_size(c), "epoch %d: all sentences in word batches", epoch);
    }
    CHECK(over == 0, "word-limited batches respect the limit (%d over)", over);
    CHECK(bad == 0, "word batches consistent");
    mt_batcher_free(b);

    /* maximality without shuffling: a batch closes only when the next
    ** sentence (the first of the next batch of the same maxi-batch) would
    ** not fit */
    bp.shuffle = MT_SHUFFLE_NONE;
    CHECK_STATUS(mt_batcher_init(c, &bp, &b));
    if (!b) return;
    int64_t prev_words = -1, pos = 0, group = 32 * 5;
    int not_max = 0;
    while ((bt = mt_batcher_next(b)) != NULL) {
        int64_t w = 0;
        for (int r = 0; r < bt->size; r++)
            w += len_of(c, bt->sent_ids[r], 0);
        if (prev_words >= 0 && pos % group != 0)
            not_max += prev_words + len_of(c, bt->sent_ids[0], 0) <= 60;
        prev_words = w;
        pos += bt->size;
    }
    CHECK(not_max == 0, "word batches are as full as the limit allows (%d)", not_max);
    mt_batcher_free(b);
}

/* The sequence of sentence ids of epoch e. */
static int64_t *epoch_ids(mt_batcher *b, int64_t e, int64_t n, int64_t *n_batches) {
    int64_t *ids = malloc((size_t)n * sizeof *ids), k = 0;
    mt_batcher_begin_epoch(b, e);
    const mt_batch *bt;
    *n_batches = 0;
    while ((bt = mt_batcher_next(b)) != NULL) {
        for (int r = 0; r < bt->size; r++)
            ids[k++] = bt->sent_ids[r];
        (*n_batches)++;
    }
    return ids;
}

static void test_determinism(const mt_corpus *c) {
    mt_batcher_params bp = mt_batcher_default_params();
    bp.mini_batch = 8;
    bp.maxi_batch = 10;
    bp.seed = 1111;
    int64_t n = mt_corpus_size(c), nb;
    mt_batcher *a = NULL, *b = NULL, *d = NULL;
    CHECK_STATUS(mt_batcher_init(c, &bp, &a));
    CHECK_STATUS(mt_batcher_init(c, &bp, &b));
    bp.seed = 2222;
    CHECK_STATUS(mt_batcher_init(c, &bp, &d));
    if (!a || !b || !d) return;
    int64_t *a1 = epoch_ids(a, 1, n, &nb);
    int64_t *a2 = epoch_ids(a, 2, n, &nb);
    int64_t *b2 = epoch_ids(b, 2, n, &nb); /* fresh batcher straight to epoch 2 */
    int64_t *b1 = epoch_ids(b, 1, n, &nb);
    int64_t *d1 = epoch_ids(d, 1, n, &nb);
    CHECK(!memcmp(a1, b1, (size_t)n * 8), "same seed and epoch, same order");
    CHECK(!memcmp(a2, b2, (size_t)n * 8), "epoch order independent of history");
    CHECK(memcmp(a1, a2, (size_t)n * 8) != 0, "epochs differ");
    CHECK(memcmp(a1, d1, (size_t)n * 8) != 0, "seeds differ");
    /* the corpus really is shuffled: file order would put 0..63 in maxi 1 */
    int64_t in_first = 0;
    for (int64_t i = 0; i < 80; i++)
        in_first += a1[i] < 80;
    CHECK(in_first < 40, "shuffled across the corpus (%lld)", (long long)in_first);
    /* skip k batches then continue == the tail of a full epoch */
    int64_t k = 37;
    mt_batcher_begin_epoch(b, 2);
    CHECK(mt_batcher_skip(b, k) == k && mt_batcher_position(b) == k, "skip");
    const mt_batch *bt;
    int64_t off = 0, mism = 0;
    mt_batcher_begin_epoch(a, 2);
    for (int64_t i = 0; i < k; i++) {
        bt = mt_batcher_next(a);
        off += bt->size;
    }
    while ((bt = mt_batcher_next(b)) != NULL)
        for (int r = 0; r < bt->size; r++)
            mism += bt->sent_ids[r] != a2[off++];
    CHECK(mism == 0 && off == n, "resumed epoch replays the rest (%lld mismatches)",
          (long long)mism);
    CHECK(mt_batcher_skip(b, 5) == 0, "skip at end of epoch");
    free(a1);
    free(a2);
    free(b1);
    free(b2);
    free(d1);
    mt_batcher_free(a);
    mt_batcher_free(b);
    mt_batcher_free(d);
}

/* Allocation failures while loading and batching: clean errors only. */
static void test_alloc_failures(const mt_vocab *v) {
    for (int64_t n = 0; n < 100000; n++) {
        mt_corpus *c = NULL;
        mt_batcher *b = NULL;
        mt_alloc_fail_at(n, false);
        mt_status rc = load2("a.src", "a.trg", v, NULL, &c);
        if (rc == MT_OK) {
            mt_batcher_params bp = mt_batcher_default_params();
            rc = mt_batcher_init(c, &bp, &b);
        }
        mt_alloc_fail_at(-1, false);
        if (rc == MT_OK) {
            CHECK(mt_batcher_next(b) != NULL, "batch after %lld failures", (long long)n);
            mt_batcher_free(b);
            mt_corpus_free(c);
            break;
        }
        CHECK(rc == MT_ERR_NOMEM, "failure %lld: %s (%s)", (long long)n, mt_status_str(rc),
              mt_errmsg());
        mt_corpus_free(c);
    }
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/mtpe_test_corpus_%d", (int)getpid());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    if (system(cmd) != 0) return 1;
    mt_vocab *v = load_vocab();
    if (v) {
        test_read(v);
        test_bad_utf8(v);
        test_mismatch(v);
        test_gz(v);
        test_max_length(v);
        test_multi_source(v);
        mt_corpus *c = random_corpus(v, 7);
        if (c) {
            test_batching_basic(c);
            test_batching_words(c);
            test_determinism(c);
        }
        mt_corpus_free(c);
        test_alloc_failures(v);
    }
    mt_vocab_free(v);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    TEST_MAIN_END();
}
