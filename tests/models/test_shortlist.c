/*
** test_shortlist.c: lexical tables and Marian shortlists (models/shortlist.h).
**
**   - extract_lex probabilities of a toy aligned corpus against hand-computed
**     values, and the exact lex.s2t / lex.t2s text
**   - Marian's two pruning rules (text generator, marian-conv import with its
**     threshold-on-target-id quirk) on hand-made entries
**   - binary write/read round trip, checksum by hand, corruption detection
**   - per-batch generation against a straightforward set computation
**   - the Marian fixture transformer-tiny/lex.s2t: per-batch shortlists of
**     input.en against an independent reading of the file, and every token of
**     Marian's own shortlisted translations (beam4-shortlist.out) inside them
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "align.h"
#include "harness.h"
#include "lex.h"
#include "mt.h"
#include "shortlist.h"
#include "vocab.h"

static char tmpdir[64];

static void silent(mt_log_level level, const char *msg, void *user) {
    (void)level, (void)msg, (void)user;
}

static const char *tmp_path(const char *name) {
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    fclose(f);
    return s;
}

/* ------------------------------------------------------------ extraction */

/* Counts: (a,x)=2 (a,y)=1 (b,y)=2 (c,z)=1 (NULL,w)=1 (d,NULL)=1, and from the
** last pair (link 0-5 outside the sentence, skipped) (e,NULL)=1 (NULL,v)=1.
** Source totals a=3 b=2 c=1 d=1 e=1 NULL=2; target totals x=2 y=3 z=1 w=1 v=1
** NULL=2. */
static void test_extract(void) {
    write_file(tmp_path("c.src"), "a b\na c\na\nb d\ne\n");
    write_file(tmp_path("c.trg"), "x y\nx z w\ny\ny\nv\n");
    write_file(tmp_path("c.aln"), "0-0 1-1\n0-0 1-1\n0-0\n0-0\n0-5\n");
    app_lex *lx = NULL;
    CHECK_STATUS(app_lex_from_files(tmp_path("c.src"), tmp_path("c.trg"), tmp_path("c.aln"), &lx));
    if (!lx) return;
    CHECK(app_lex_skipped_links(lx) == 1, "one link skipped");
    CHECK_STATUS(app_lex_write(lx, true, tmp_path("lex.s2t")));
    CHECK_STATUS(app_lex_write(lx, false, tmp_path("lex.t2s")));
    char *s2t = read_file(tmp_path("lex.s2t")), *t2s = read_file(tmp_path("lex.t2s"));
    const char *want_s2t = "v NULL 0.5000000\n"
                           "w NULL 0.5000000\n"
                           "x a 0.6666667\n"
                           "y a 0.3333333\n"
                           "y b 1.0000000\n"
                           "z c 1.0000000\n"
                           "NULL d 1.0000000\n"
                           "NULL e 1.0000000\n";
    const char *want_t2s = "d NULL 0.5000000\n"
                           "e NULL 0.5000000\n"
                           "NULL v 1.0000000\n"
                           "NULL w 1.0000000\n"
                           "a x 1.0000000\n"
                           "a y 0.3333333\n"
                           "b y 0.6666667\n"
                           "c z 1.0000000\n";
    CHECK(s2t && strcmp(s2t, want_s2t) == 0, "lex.s2t:\n%s", s2t ? s2t : "(none)");
    CHECK(t2s && strcmp(t2s, want_t2s) == 0, "lex.t2s:\n%s", t2s ? t2s : "(none)");
    free(s2t);
    free(t2s);

    app_lex_entry *e = NULL;
    int64_t n = 0;
    CHECK_STATUS(app_lex_entries(lx, true, &e, &n));
    CHECK(n == 8, "8 entries");
    for (int64_t k = 0; k < n; k++)
        if (!strcmp(e[k].given, "a") && !strcmp(e[k].word, "x"))
            CHECK(e[k].prob == 2.0f / 3.0f, "P(x|a) in float");
    mt_free(e);
    app_lex_free(lx);

    write_file(tmp_path("c.aln"), "0-0 1-1\n0-0 x\n0-0\n0-0\n0-5\n");
    CHECK(app_lex_from_files(tmp_path("c.src"), tmp_path("c.trg"), tmp_path("c.aln"), &lx) ==
                  MT_ERR_FORMAT &&
              strstr(mt_errmsg(), "line 2"),
          "bad alignment line named: %s", mt_errmsg());
    write_file(tmp_path("c.aln"), "0-0 1-1\n");
    CHECK(app_lex_from_files(tmp_path("c.src"), tmp_path("c.trg"), tmp_path("c.aln"), &lx) ==
              MT_ERR_FORMAT,
          "line counts differ");
}

/* ------------------------------------------------------ pruning rules */

static int32_t toy_map(void *user, const char *tok, bool is_source) {
    (void)user;
    char want = is_source ? 's' : 't';
    if (tok[0] == want && tok[1] >= '0' && tok[1] <= '9') return atoi(tok + 1);
    return 0; /* unknown: "UNK" id 0 */
}

static bool row_is(const mt_shortlist *sl, uint64_t r, const uint32_t *want, uint64_t n) {
    if (r >= sl->n_rows) return n == 0;
    uint64_t a = sl->offsets[r], b = sl->offsets[r + 1];
    if (b - a != n) return false;
    for (uint64_t k = 0; k < n; k++)
        if (sl->ids[a + k] != want[k]) return false;
    return true;
}

static void test_pruning(void) {
    write_file(tmp_path("toy.s2t"), "t5 s1 0.5\nt3 s1 0.2\n t7 s1\n0.2 t2 s1 0.05\n"
                                    "t5 s1 0.1\nt9 s3 0.9\nNULL s1 0.9\nt4 NULL 0.3\n");
    mt_lex_triple *t = NULL;
    int64_t n = 0;
    CHECK_STATUS(mt_lex_read_text(tmp_path("toy.s2t"), toy_map, NULL, &t, &n));
    CHECK(n == 6, "6 entries without NULL (got %lld)", (long long)n);
    if (n != 6) return;
    CHECK(t[2].src == 1 && t[2].trg == 7 && t[2].prob == 0.2f, "stream reading across lines");
    mt_shortlist *sl = NULL;

    /* text: (s1,t5) = 0.1 (last wins); prob > 0.1: t7 0.2, t3 0.2; t5 stops it */
    CHECK_STATUS(mt_shortlist_build(t, n, 10, 100, 3, 0.1f, MT_SL_LEXICAL, &sl));
    if (sl) {
        const uint32_t r1[] = {3, 7}, r3[] = {9};
        CHECK(sl->n_rows == 4, "text rows = largest source id + 1 (%llu)",
              (unsigned long long)sl->n_rows);
        CHECK(row_is(sl, 1, r1, 2) && row_is(sl, 3, r3, 1) && row_is(sl, 0, NULL, 0) &&
                  row_is(sl, 2, NULL, 0),
              "text rows, threshold 0.1");
        mt_shortlist_free(sl);
        sl = NULL;
    }
    /* text, best 1: ties at 0.2 go to the larger id (std::greater on pairs) */
    CHECK_STATUS(mt_shortlist_build(t, n, 10, 100, 1, 0.0f, MT_SL_LEXICAL, &sl));
    if (sl) {
        const uint32_t r1[] = {7};
        CHECK(row_is(sl, 1, r1, 1), "tie broken towards the larger target id");
        mt_shortlist_free(sl);
        sl = NULL;
    }
    /* import: (s1,t5) = max = 0.5; threshold 0 on ids keeps all; best 3: t5 t7 t3 */
    CHECK_STATUS(mt_shortlist_build(t, n, 5, 100, 3, 0.0f, MT_SL_BINARY, &sl));
    if (sl) {
        const uint32_t r1[] = {3, 5, 7}, r3[] = {9};
        CHECK(sl->n_rows == 5, "import rows = source vocab size");
        CHECK(row_is(sl, 1, r1, 3) && row_is(sl, 3, r3, 1) && row_is(sl, 4, NULL, 0),
              "import rows");
        mt_shortlist_free(sl);
        sl = NULL;
    }
    /* import with threshold 4: the threshold applies to target ids (t2, t3 dropped) */
    CHECK_STATUS(mt_shortlist_build(t, n, 5, 100, 3, 4.0f, MT_SL_BINARY, &sl));
    if (sl) {
        const uint32_t r1[] = {5, 7}, r3[] = {9};
        CHECK(row_is(sl, 1, r1, 2) && row_is(sl, 3, r3, 1), "import threshold on target ids");
        mt_shortlist_free(sl);
        sl = NULL;
    }
    /* a probability at or below 0 survives import as 0 (max with the default 0) */
    mt_lex_triple neg[] = {{2, 4, -1.0f}, {2, 6, 0.3f}};
    CHECK_STATUS(mt_shortlist_build(neg, 2, 5, 0, 5, 0.0f, MT_SL_BINARY, &sl));
    if (sl) {
        const uint32_t r2[] = {4, 6};
        CHECK(row_is(sl, 2, r2, 2), "import keeps non-positive entries");
        mt_shortlist_free(sl);
        sl = NULL;
    }
    CHECK_STATUS(mt_shortlist_build(neg, 2, 5, 0, 5, 0.0f, MT_SL_LEXICAL, &sl));
    if (sl) {
        const uint32_t r2[] = {6};
        CHECK(row_is(sl, 2, r2, 1), "text drops prob <= threshold");
        mt_shortlist_free(sl);
        sl = NULL;
    }
    CHECK(mt_shortlist_build(t, n, 2, 100, 3, 0.0f, MT_SL_BINARY, &sl) == MT_ERR_INVALID,
          "source id beyond the source vocab");
    mt_free(t);

    write_file(tmp_path("bad.s2t"), "t1 s1 0.5\nt2 s1 abc\n");
    CHECK(mt_lex_read_text(tmp_path("bad.s2t"), toy_map, NULL, &t, &n) == MT_ERR_FORMAT &&
              strstr(mt_errmsg(), ":2:"),
          "bad probability: %s", mt_errmsg());
    write_file(tmp_path("bad.s2t"), "t1 s1 0.5\nt2 s1\n");
    CHECK(mt_lex_read_text(tmp_path("bad.s2t"), toy_map, NULL, &t, &n) == MT_ERR_FORMAT,
          "incomplete triple");
}

/* ---------------------------------------------------------- binary file */

static uint64_t combine(uint64_t seed, uint64_t v) {
    return seed ^ (v + 0x9e3779b9ull + (seed << 6) + (seed >> 2));
}

static void test_binary(void) {
    /* checksum by hand: words [1, 2] after a 16-byte header */
    unsigned char buf[32] = {0};
    buf[16] = 1;
    buf[24] = 2;
    uint64_t h = combine(combine(0, 1), 2);
    CHECK(mt_shortlist_checksum(buf, 32) == h, "checksum of two words");
    CHECK(mt_shortlist_checksum(buf, 28) == combine(0, 1), "a trailing half word is ignored");
    CHECK(combine(0, 1) == 0x9e3779baull, "hash_combine(0, 1)");

    /* 3 source rows, 5 ids (odd: the file ends with a half word) */
    mt_lex_triple t[] = {{0, 4, 0.5f}, {0, 2, 0.4f}, {2, 9, 0.3f}, {2, 1, 0.9f}, {2, 3, 0.1f}};
    mt_shortlist *sl = NULL, *back = NULL;
    CHECK_STATUS(mt_shortlist_build(t, 5, 3, 16, 100, 0.0f, MT_SL_BINARY, &sl));
    if (!sl) return;
    CHECK(sl->blob_size == 48 + 4 * 8 + 5 * 4, "file size %zu", sl->blob_size);
    CHECK_STATUS(mt_shortlist_write(sl, tmp_path("sl.bin")));
    CHECK(mt_shortlist_is_binary(tmp_path("sl.bin")), "magic detected");
    CHECK(!mt_shortlist_is_binary(tmp_path("c.src")), "text is not binary");
    CHECK(access(tmp_path("sl.bin.tmp"), F_OK) != 0, "no temporary left");
    CHECK_STATUS(mt_shortlist_read(tmp_path("sl.bin"), true, 10, &back));
    if (back) {
        CHECK(back->blob_size == sl->blob_size && memcmp(back->blob, sl->blob, sl->blob_size) == 0,
              "round trip");
        CHECK(back->first_num == 16 && back->best_num == 100 && back->n_rows == 3, "header");
        const uint32_t r0[] = {2, 4}, r2[] = {1, 3, 9};
        CHECK(row_is(back, 0, r0, 2) && row_is(back, 1, NULL, 0) && row_is(back, 2, r2, 3),
              "rows read back");
        mt_shortlist_free(back);
        back = NULL;
    }
    /* header layout by hand */
    uint64_t w[6];
    memcpy(w, sl->blob, sizeof w);
    CHECK(w[0] == 0xF11A48D5013417F5ull && w[2] == 16 && w[3] == 100 && w[4] == 4 && w[5] == 5,
          "header words");
    CHECK(w[1] == mt_shortlist_checksum(sl->blob, sl->blob_size), "stored checksum");

    /* corrupt each byte after the checksum in turn: with check, every byte but the
    ** trailing half word is caught, by the checksum or the structure checks */
    unsigned char *copy = malloc(sl->blob_size);
    int missed = 0;
    for (size_t k = 0; k < sl->blob_size; k++) {
        memcpy(copy, sl->blob, sl->blob_size);
        copy[k] ^= 0x10;
        mt_status rc = mt_shortlist_parse(copy, sl->blob_size, true, 10, &back);
        bool tail = k >= 16 + (sl->blob_size - 16) / 8 * 8;
        if (tail) {
            /* not covered by the checksum; ids 1..9 stay < 10 or the id check fires */
            if (rc == MT_OK) mt_shortlist_free(back);
        } else if (rc != MT_ERR_FORMAT) {
            missed++;
            if (rc == MT_OK) mt_shortlist_free(back);
        }
        back = NULL;
    }
    CHECK(missed == 0, "%d corrupted bytes not detected", missed);
    /* without check a damaged id is accepted but the generator stays in range */
    memcpy(copy, sl->blob, sl->blob_size);
    copy[48 + 32] = 0xff; /* first id of row 0 */
    CHECK(mt_shortlist_parse(copy, sl->blob_size, true, 10, &back) == MT_ERR_FORMAT,
          "checksum catches an id");
    CHECK_STATUS(mt_shortlist_parse(copy, sl->blob_size, false, 10, &back));
    mt_shortlist_free(back);
    back = NULL;
    /* damaged offsets are refused even without check */
    memcpy(copy, sl->blob, sl->blob_size);
    copy[48 + 8] = 7; /* offsets [0, 7, 2, 5]: 7 > S and out of order */
    CHECK(mt_shortlist_parse(copy, sl->blob_size, false, 10, &back) == MT_ERR_FORMAT,
          "offsets out of order");
    CHECK(mt_shortlist_parse(sl->blob, sl->blob_size - 4, true, 10, &back) == MT_ERR_FORMAT,
          "truncated");
    CHECK(mt_shortlist_parse(sl->blob, 40, true, 10, &back) == MT_ERR_FORMAT, "no header");
    /* an id >= the target vocab fails the content check */
    CHECK(mt_shortlist_parse(sl->blob, sl->blob_size, true, 9, &back) == MT_ERR_FORMAT,
          "id 9 with a vocab of 9");
    CHECK_STATUS(mt_shortlist_parse(sl->blob, sl->blob_size, false, 9, &back));
    mt_shortlist_free(back);
    free(copy);
    mt_shortlist_free(sl);
    CHECK(mt_shortlist_read(tmp_path("missing.bin"), true, 0, &back) == MT_ERR_IO, "missing");
}

/* ------------------------------------------------------------ generation */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* Marian's LexicalShortlistGenerator::generate with std::set-like semantics,
** written out literally: insert, then pad while size % 8 != 0 (bounded by V). */
static int reference_generate(const mt_shortlist *sl, const int32_t *src, int n, bool shared,
                              int32_t v, int32_t *out) {
    int cnt = 0;
    unsigned char *in = calloc((size_t)v, 1);
#define INSERT(x)                                                                                  \
    do {                                                                                           \
        int32_t _x = (x);                                                                          \
        if (_x >= 0 && _x < v && !in[_x]) in[_x] = 1, cnt++;                                       \
    } while (0)
    for (uint64_t i = 0; i < sl->first_num && i < (uint64_t)v; i++)
        INSERT((int32_t)i);
    for (int k = 0; k < n; k++) {
        if (shared) INSERT(src[k]);
        if ((uint64_t)src[k] < sl->n_rows)
            for (uint64_t q = sl->offsets[src[k]]; q < sl->offsets[src[k] + 1]; q++)
                INSERT((int32_t)sl->ids[q]);
    }
    for (int64_t i = (int64_t)sl->first_num; cnt % 8 != 0 && i < v; i++)
        INSERT((int32_t)i);
#undef INSERT
    int m = 0;
    for (int32_t i = 0; i < v; i++)
        if (in[i]) out[m++] = i;
    free(in);
    return m;
}

static void test_generate_random(void) {
    int mismatches = 0, not8 = 0;
    for (int round = 0; round < 300; round++) {
        int32_t vs = 20 + (int32_t)(rnd() % 40), vt = 10 + (int32_t)(rnd() % 60);
        int nt = (int)(rnd() % 200);
        mt_lex_triple *t = malloc(sizeof *t * (size_t)(nt + 1));
        for (int k = 0; k < nt; k++) {
            t[k].src = (int32_t)(rnd() % (uint32_t)vs);
            t[k].trg = (int32_t)(rnd() % (uint32_t)vt);
            t[k].prob = (float)(rnd() % 1000) / 1000.0f;
        }
        uint64_t first = rnd() % 80, best = 1 + rnd() % 8;
        mt_shortlist_mode mode = round % 2 ? MT_SL_BINARY : MT_SL_LEXICAL;
        mt_shortlist *sl = NULL;
        CHECK_STATUS(mt_shortlist_build(t, nt, vs, first, best, 0.0f, mode, &sl));
        free(t);
        if (!sl) continue;
        bool shared = round % 3 == 0;
        mt_shortlist_gen *g = NULL;
        CHECK_STATUS(mt_shortlist_gen_init(sl, vs, vt, shared, &g));
        int32_t *got = malloc(sizeof(int32_t) * (size_t)vt);
        int32_t *want = malloc(sizeof(int32_t) * (size_t)vt);
        for (int b = 0; g && b < 5; b++) {
            int32_t src[40];
            int n = 1 + (int)(rnd() % 40);
            for (int k = 0; k < n; k++)
                src[k] = (int32_t)(rnd() % (uint32_t)vs);
            int m = mt_shortlist_gen_run(g, src, n, got);
            int mw = reference_generate(sl, src, n, shared, vt, want);
            if (m != mw || memcmp(got, want, sizeof(int32_t) * (size_t)m) != 0) mismatches++;
            if (m % 8 != 0 && m != vt && (uint64_t)m >= first) {
                /* only possible when the padding ran out of ids */
                bool full = true;
                for (int32_t i = (int32_t)(first < (uint64_t)vt ? first : (uint64_t)vt); i < vt;
                     i++) {
                    bool present = false;
                    for (int k = 0; k < m; k++)
                        present |= got[k] == i;
                    full &= present;
                }
                if (!full) not8++;
            }
        }
        free(got);
        free(want);
        mt_shortlist_gen_free(g);
        mt_shortlist_free(sl);
    }
    CHECK(mismatches == 0, "%d generated sets differ from the reference", mismatches);
    CHECK(not8 == 0, "%d sets not padded to a multiple of 8", not8);

    /* by hand: first 3, row of 5 = {7, 12}, shared: {0,1,2} + {7,12} + {5} = 6 ids,
    ** padded with 3, 4 (5 is present) -> 8 */
    mt_lex_triple t[] = {{5, 7, 0.5f}, {5, 12, 0.5f}};
    mt_shortlist *sl = NULL;
    mt_shortlist_gen *g = NULL;
    CHECK_STATUS(mt_shortlist_build(t, 2, 20, 3, 10, 0.0f, MT_SL_LEXICAL, &sl));
    CHECK_STATUS(mt_shortlist_gen_init(sl, 20, 20, true, &g));
    if (g) {
        int32_t out[20], src[] = {5, 5, 19};
        int m = mt_shortlist_gen_run(g, src, 2, out);
        const int32_t want[] = {0, 1, 2, 3, 4, 5, 7, 12};
        CHECK(m == 8 && memcmp(out, want, sizeof want) == 0, "hand example (%d ids)", m);
        /* 19 has no row (text rows end at 5): only itself (shared); 7 ids + 3 */
        m = mt_shortlist_gen_run(g, src, 3, out);
        const int32_t want2[] = {0, 1, 2, 3, 5, 7, 12, 19};
        CHECK(m == 8 && memcmp(out, want2, sizeof want2) == 0, "source id without a row (%d)", m);
        mt_shortlist_gen_free(g);
    }
    mt_shortlist_free(sl);
}

/* ----------------------------------------------------------------- fixture */

#define FIX MT_TEST_DATA "/marian/transformer-tiny/"

/* Can text (SentencePiece surface: spaces as U+2581, with the dummy prefix) be cut
** into pieces whose ids are selected?  Marian's decoder could only emit those. */
static bool segmentable(const mt_vocab *v, const unsigned char *sel, const char *hyp) {
    char text[4096];
    size_t n = 0;
    const char *sp = "\xe2\x96\x81";
    memcpy(text, sp, 3);
    n = 3;
    for (const char *c = hyp; *c && n + 4 < sizeof text; c++) {
        if (*c == ' ') {
            memcpy(text + n, sp, 3);
            n += 3;
        } else {
            text[n++] = *c;
        }
    }
    bool reach[4096] = {false};
    reach[0] = true;
    int32_t V = mt_vocab_size(v);
    for (size_t i = 0; i < n; i++) {
        if (!reach[i]) continue;
        for (int32_t id = 2; id < V; id++) { /* 0 = </s>, 1 = <unk> */
            if (!sel[id]) continue;
            const char *pc = mt_vocab_piece(v, id);
            size_t len = strlen(pc);
            if (len > 0 && i + len <= n && memcmp(text + i, pc, len) == 0) reach[i + len] = true;
        }
    }
    return reach[n];
}

static void test_fixture(void) {
    mt_vocab *v = NULL;
    mt_status vrc = mt_vocab_load(FIX "vocab.spm", 0, &v);
    CHECK(vrc == MT_OK, "vocab: %s", mt_errmsg());
    if (vrc != MT_OK) return;
    int32_t V = mt_vocab_size(v);
    mt_shortlist *sl = NULL, *bin = NULL, *bin2 = NULL;
    CHECK_STATUS(mt_shortlist_load(FIX "lex.s2t", v, v, 50, 50, 0.0f, true, &sl));
    if (!sl) {
        mt_vocab_free(v);
        return;
    }
    /* independent reading: every (src, trg) of the file as a set per source id */
    FILE *f = fopen(FIX "lex.s2t", "r");
    char ts[256], ss[256];
    float pr;
    unsigned char *pairs = calloc((size_t)V * V, 1);
    int64_t lines = 0;
    while (fscanf(f, "%255s %255s %f", ts, ss, &pr) == 3) {
        lines++;
        pairs[(size_t)mt_vocab_id(v, ss) * V + mt_vocab_id(v, ts)] = 1;
    }
    fclose(f);
    CHECK(lines == 147591, "fixture lines %lld", (long long)lines);
    /* Rows of at most 50 targets are kept whole.  Pieces unknown to the vocab all map
    ** to <unk>, whose row then has more than 50 targets and is pruned to 50 of them. */
    int over50 = 0, row_diff = 0;
    for (int32_t s = 0; s < V; s++) {
        int c = 0;
        for (int32_t t = 0; t < V; t++)
            c += pairs[(size_t)s * V + t];
        int64_t have =
            (uint64_t)s < sl->n_rows ? (int64_t)(sl->offsets[s + 1] - sl->offsets[s]) : 0;
        if (c > 50) {
            over50++;
            CHECK(s == mt_vocab_unk_id(v), "row %d has %d targets", (int)s, c);
            CHECK(have == 50, "pruned row %d keeps 50 (%lld)", (int)s, (long long)have);
            for (int32_t t = 0; t < V; t++) /* the reference uses the pruned row */
                pairs[(size_t)s * V + t] = 0;
            for (int64_t q = 0; q < have; q++)
                pairs[(size_t)s * V + sl->ids[sl->offsets[s] + q]] = 2;
            continue;
        }
        if (have != c) row_diff++;
        for (int64_t q = 0; q < have; q++)
            if (!pairs[(size_t)s * V + sl->ids[sl->offsets[s] + q]]) row_diff++;
    }
    CHECK(over50 <= 1, "%d source pieces have more than 50 targets", over50);
    CHECK(row_diff == 0, "%d rows differ from the file", row_diff);

    /* the binary conversion of the same file gives the same per-batch sets */
    CHECK_STATUS(mt_shortlist_load_text(FIX "lex.s2t", v, v, 50, 50, 0.0f, MT_SL_BINARY, &bin));
    if (bin) {
        CHECK(bin->n_rows == (uint64_t)V, "binary rows = vocab size");
        CHECK_STATUS(mt_shortlist_write(bin, tmp_path("lex.bin")));
        CHECK_STATUS(mt_shortlist_load(tmp_path("lex.bin"), v, v, 0, 0, 0.0f, true, &bin2));
    }

    mt_shortlist_gen *g = NULL, *gb = NULL;
    CHECK_STATUS(mt_shortlist_gen_init(sl, V, V, true, &g));
    if (bin2) CHECK_STATUS(mt_shortlist_gen_init(bin2, V, V, true, &gb));
    int32_t *out = malloc(sizeof(int32_t) * (size_t)V), *outb = malloc(sizeof(int32_t) * (size_t)V);
    unsigned char *sel = malloc((size_t)V);
    char *input = read_file(FIX "input.en"), *hyps = read_file(FIX "beam4-shortlist.out");
    char *in_save = NULL, *hy_save = NULL;
    char *line = strtok_r(input, "\n", &in_save);
    int checked = 0, set_diff = 0, bin_diff = 0, not_seg = 0, unk_lines = 0;
    char *hyp = strtok_r(hyps, "\n", &hy_save);
    for (int ln = 1; g && line && hyp && ln <= 50; ln++) {
        int32_t *ids = NULL;
        int64_t n = 0;
        CHECK_STATUS(mt_vocab_encode(v, line, MT_VOCAB_ADD_EOS, &ids, &n));
        int m = mt_shortlist_gen_run(g, ids, n, out);
        /* straightforward set: 0..49, the source ids, their targets, padding */
        memset(sel, 0, (size_t)V);
        int cnt = 0;
        for (int32_t i = 0; i < 50; i++)
            sel[i] = 1, cnt++;
        for (int64_t k = 0; k < n; k++) {
            unk_lines += ids[k] == mt_vocab_unk_id(v) && k == 0;
            if (!sel[ids[k]]) sel[ids[k]] = 1, cnt++;
            for (int32_t t = 0; t < V; t++)
                if (pairs[(size_t)ids[k] * V + t] && !sel[t]) sel[t] = 1, cnt++;
        }
        for (int32_t i = 50; cnt % 8; i++)
            if (!sel[i]) sel[i] = 1, cnt++;
        int k2 = 0;
        bool same = m == cnt;
        for (int32_t i = 0; same && i < V; i++)
            if (sel[i]) same = out[k2++] == i;
        if (!same) set_diff++;
        CHECK(m % 8 == 0, "line %d: %d ids", ln, m);
        if (gb) {
            int mb = mt_shortlist_gen_run(gb, ids, n, outb);
            if (mb != m || memcmp(out, outb, sizeof(int32_t) * (size_t)m) != 0) bin_diff++;
        }
        /* Marian's translation with this shortlist uses only shortlisted pieces */
        if (!segmentable(v, sel, hyp)) {
            not_seg++;
            fprintf(stderr, "line %d: '%s' cannot be built from its shortlist\n", ln, hyp);
        }
        mt_free(ids);
        checked++;
        line = strtok_r(NULL, "\n", &in_save);
        hyp = strtok_r(NULL, "\n", &hy_save);
    }
    CHECK(checked == 50, "checked %d lines", checked);
    CHECK(set_diff == 0, "%d per-sentence sets differ from the direct computation", set_diff);
    CHECK(bin_diff == 0, "%d sets differ between text and binary", bin_diff);
    CHECK(not_seg == 0, "%d translations of beam4-shortlist.out use pieces outside the shortlist",
          not_seg);
    /* the same check fails when the shortlist lacks the source's own rows */
    {
        char *in2 = read_file(FIX "input.en"), *hy2 = read_file(FIX "beam4-shortlist.out");
        char *a = NULL, *b = NULL;
        char *l = strtok_r(in2, "\n", &a), *h = strtok_r(hy2, "\n", &b);
        int fails = 0;
        for (int ln = 1; l && h && ln <= 50; ln++) {
            memset(sel, 0, (size_t)V);
            for (int32_t i = 0; i < 56; i++)
                sel[i] = 1;
            fails += !segmentable(v, sel, h);
            l = strtok_r(NULL, "\n", &a);
            h = strtok_r(NULL, "\n", &b);
        }
        CHECK(fails > 25, "only %d of 50 translations need more than ids 0..55", fails);
        free(in2);
        free(hy2);
    }
    free(out);
    free(outb);
    free(sel);
    free(input);
    free(hyps);
    free(pairs);
    mt_shortlist_gen_free(g);
    mt_shortlist_gen_free(gb);
    mt_shortlist_free(sl);
    mt_shortlist_free(bin);
    mt_shortlist_free(bin2);
    mt_vocab_free(v);
}

/* ------------------------------------------------------ allocation faults */

static void test_alloc_failures(void) {
    int64_t n = 0;
    mt_status rc;
    do {
        app_lex *lx = NULL;
        mt_lex_triple *t = NULL;
        int64_t nt = 0;
        mt_shortlist *sl = NULL, *back = NULL;
        mt_shortlist_gen *g = NULL;
        mt_alloc_fail_at(n, true);
        rc = app_lex_from_files(tmp_path("f.src"), tmp_path("f.trg"), tmp_path("f.aln"), &lx);
        if (rc == MT_OK) rc = app_lex_write(lx, true, tmp_path("f.s2t"));
        if (rc == MT_OK) rc = mt_lex_read_text(tmp_path("f.s2t"), toy_map, NULL, &t, &nt);
        if (rc == MT_OK) rc = mt_shortlist_build(t, nt, 64, 8, 4, 0.0f, MT_SL_BINARY, &sl);
        if (rc == MT_OK) rc = mt_shortlist_parse(sl->blob, sl->blob_size, true, 64, &back);
        if (rc == MT_OK) rc = mt_shortlist_gen_init(back, 64, 64, false, &g);
        mt_alloc_fail_at(-1, false);
        CHECK(rc == MT_OK || rc == MT_ERR_NOMEM, "failure %lld: %s (%s)", (long long)n,
              mt_status_str(rc), mt_errmsg());
        app_lex_free(lx);
        mt_free(t);
        mt_shortlist_free(sl);
        mt_shortlist_free(back);
        mt_shortlist_gen_free(g);
        n++;
    } while (rc != MT_OK && n < 100000);
    CHECK(rc == MT_OK, "succeeds once allocations work");
}

static void make_fault_corpus(void) {
    FILE *s = fopen(tmp_path("f.src"), "w"), *t = fopen(tmp_path("f.trg"), "w"),
         *a = fopen(tmp_path("f.aln"), "w");
    for (int k = 0; k < 400; k++) {
        fprintf(s, "s%d s%d s%d\n", k % 60, (k * 7) % 60, (k * 13) % 60);
        fprintf(t, "t%d t%d\n", k % 50, (k * 3) % 50);
        fprintf(a, "0-0 %d-1\n", k % 3);
    }
    fclose(s);
    fclose(t);
    fclose(a);
}

int main(void) {
    mt_log_set(silent, NULL);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_shortlist_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        fprintf(stderr, "cannot create a temporary directory\n");
        return 1;
    }
    test_extract();
    test_pruning();
    test_binary();
    test_generate_random();
    test_fixture();
    make_fault_corpus();
    test_alloc_failures();
    const char *names[] = {"c.src",  "c.trg",   "c.aln", "lex.s2t", "lex.t2s", "toy.s2t", "bad.s2t",
                           "sl.bin", "lex.bin", "f.src", "f.trg",   "f.aln",   "f.s2t"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        remove(tmp_path(names[k]));
    rmdir(tmpdir);
    TEST_MAIN_END();
}
