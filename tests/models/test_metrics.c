/*
** test_metrics.c: sacreBLEU-exact BLEU and chrF (models/metrics.c).
**
** Oracles, none of them this implementation's own output:
**   1. sacreBLEU's README example (2.0.0): "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943
**      ratio = 0.944 hyp_len = 17 ref_len = 18)", "chrF2 = 59.73", and with the first
**      reference of sentence 1 removed "BLEU = 29.44 82.4/42.9/27.3/12.5 (BP = 0.889
**      ratio = 0.895 hyp_len = 17 ref_len = 19)", nrefs:var.
**   2. The HuggingFace chrF metric card (sacreBLEU CHRF underneath): 61.576379378113785
**      and 84.64214891738334.
**   3. Cases computed by hand below from the formulas in metrics.h, and 13a
**      tokenizations worked out by hand from the rules in metrics.c.
**   4. tests/data/marian/README.md: sacreBLEU's BLEU / chrF of each model's beam4.out
**      against ref.de, rounded to one decimal.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "metrics.h"
#include "mt.h"

#define N_ELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))

static double bleu_corpus(const char *const *hyps, const char *const *refs1,
                          const char *const *refs2, int n, mt_bleu_stats *st) {
    mt_bleu_init(st);
    for (int i = 0; i < n; i++) {
        const char *r[2] = {refs1[i], refs2 ? refs2[i] : NULL};
        mt_status rc = mt_bleu_add(st, hyps[i], r, refs2 ? 2 : 1);
        CHECK(rc == MT_OK, "mt_bleu_add %d: %s", i, mt_errmsg());
    }
    return mt_bleu_compute(st, false).score;
}

/* ------------------------------------------------------------ published */

static const char *const sys3[] = {"The dog bit the man.", "It wasn't surprising.",
                                   "The man had just bitten him."};
static const char *const ref3a[] = {"The dog bit the man.", "It was not unexpected.",
                                    "The man bit him first."};
static const char *const ref3b[] = {"The dog had bit the man.", "No one was surprised.",
                                    "The man had bitten the dog."};

static void test_sacrebleu_readme(void) {
    mt_bleu_stats st;
    char line[256], sig[128];
    bleu_corpus(sys3, ref3a, ref3b, 3, &st);
    mt_bleu_score sc = mt_bleu_compute(&st, false);
    mt_bleu_format(&sc, 2, NULL, line, sizeof line);
    CHECK(strcmp(line, "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 "
                       "ref_len = 18)") == 0,
          "README BLEU line: %s", line);
    mt_bleu_signature(&st, false, sig, sizeof sig);
    CHECK(strcmp(sig, "nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0") == 0,
          "signature %s", sig);

    mt_chrf_stats cs;
    mt_chrf_init(&cs);
    for (int i = 0; i < 3; i++) {
        const char *r[2] = {ref3a[i], ref3b[i]};
        CHECK_STATUS(mt_chrf_add(&cs, sys3[i], r, 2));
    }
    mt_chrf_format(mt_chrf_compute(&cs), 2, NULL, line, sizeof line);
    CHECK(strcmp(line, "chrF2 = 59.73") == 0, "README chrF: %s", line);
    mt_chrf_signature(&cs, sig, sizeof sig);
    CHECK(strcmp(sig, "nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.0.0") == 0,
          "chrF signature %s", sig);

    /* Variable number of references: "" removes the reference. */
    const char *const ref_var[] = {"", "It was not unexpected.", "The man bit him first."};
    bleu_corpus(sys3, ref_var, ref3b, 3, &st);
    sc = mt_bleu_compute(&st, false);
    mt_bleu_format(&sc, 2, NULL, line, sizeof line);
    CHECK(strcmp(line, "BLEU = 29.44 82.4/42.9/27.3/12.5 (BP = 0.889 ratio = 0.895 hyp_len = 17 "
                       "ref_len = 19)") == 0,
          "README variable-refs BLEU line: %s", line);
    mt_bleu_signature(&st, false, sig, sizeof sig);
    CHECK(strncmp(sig, "nrefs:var|", 10) == 0, "signature %s", sig);
}

static void test_hf_chrf_examples(void) {
    const char *h1 = "The relationship between Obama and Netanyahu is not exactly friendly.";
    const char *r1 = "The ties between Obama and Netanyahu are not particularly friendly.";
    double f = 0;
    CHECK_STATUS(mt_chrf_sentence(h1, &r1, 1, &f));
    CHECK_CLOSE(f, 61.576379378113785, 1e-10, 0, "HF chrF example 1");

    const char *hyps[] = {"The relationship between cats and dogs is not exactly friendly.",
                          "a good bookshop is just a genteel black hole that knows how to read."};
    const char *refs[] = {"The relationship between dogs and cats is not exactly friendly.",
                          "A good bookshop is just a genteel Black Hole that knows how to read."};
    mt_chrf_stats cs;
    mt_chrf_init(&cs);
    for (int i = 0; i < 2; i++)
        CHECK_STATUS(mt_chrf_add(&cs, hyps[i], &refs[i], 1));
    CHECK_CLOSE(mt_chrf_compute(&cs), 84.64214891738334, 1e-10, 0, "HF chrF example 2");
}

/* ------------------------------------------------------------ hand cases */

static void test_bleu_hand(void) {
    const char *ref = "the cat is on the mat";
    double s = 0;
    /* Identical: every precision 100, BP 1; sacreBLEU computes exp(4 log(100) / 4),
    ** which Python prints as 100.00000000000004, not 100. */
    CHECK_STATUS(mt_bleu_sentence(ref, &ref, 1, &s));
    CHECK(s == 100.00000000000004, "identical sentence BLEU %.17g", s);

    /* hyp "the cat sat on the mat": 1-grams 5/6 (the x2, cat, on, mat), 2-grams 3/5
    ** (the cat, on the, the mat), 3-grams 1/4 (on the mat), 4-grams 0/3 -> exp
    ** smoothing 100/(2*3); equal lengths, BP 1.
    ** BLEU = (500/6 * 60 * 25 * 100/6)^(1/4). */
    mt_bleu_stats st;
    mt_bleu_init(&st);
    CHECK_STATUS(mt_bleu_add(&st, "the cat sat on the mat", &ref, 1));
    CHECK(st.correct[0] == 5 && st.total[0] == 6 && st.correct[1] == 3 && st.total[1] == 5 &&
              st.correct[2] == 1 && st.total[2] == 4 && st.correct[3] == 0 && st.total[3] == 3,
          "counts %lld/%lld %lld/%lld %lld/%lld %lld/%lld", (long long)st.correct[0],
          (long long)st.total[0], (long long)st.correct[1], (long long)st.total[1],
          (long long)st.correct[2], (long long)st.total[2], (long long)st.correct[3],
          (long long)st.total[3]);
    mt_bleu_score sc = mt_bleu_compute(&st, false);
    double want = pow(500.0 / 6 * 60 * 25 * (100.0 / 6), 0.25);
    CHECK_CLOSE(sc.score, want, 0, 1e-12, "hand BLEU");
    CHECK_CLOSE(sc.precisions[3], 100.0 / 6, 0, 1e-15, "exp-smoothed 4-gram precision");
    CHECK(sc.bp == 1.0, "bp %g", sc.bp);

    /* Two 4-gram-less orders: "the cat" vs the 6-token reference.  1-grams 2/2,
    ** 2-grams 1/1, no 3- or 4-grams.  Corpus BLEU (no effective order) is 0 since
    ** log(0) is -9999999999; sentence BLEU uses orders 1-2: 100 * BP,
    ** BP = exp(1 - 6/2). */
    mt_bleu_init(&st);
    CHECK_STATUS(mt_bleu_add(&st, "the cat", &ref, 1));
    sc = mt_bleu_compute(&st, false);
    CHECK(sc.score == 0.0 && sc.sys_len == 2 && sc.ref_len == 6, "short corpus BLEU %g", sc.score);
    CHECK_CLOSE(sc.bp, exp(-2.0), 0, 1e-15, "bp");
    CHECK_STATUS(mt_bleu_sentence("the cat", &ref, 1, &s));
    CHECK_CLOSE(s, 100.0 * exp(-2.0), 0, 1e-12, "sentence BLEU with effective order");

    /* No match at all: 0 (even with smoothing), and the empty hypothesis too. */
    CHECK_STATUS(mt_bleu_sentence("a b c d e", &ref, 1, &s));
    CHECK(s == 0.0, "no-match BLEU %g", s);
    CHECK_STATUS(mt_bleu_sentence("", &ref, 1, &s));
    CHECK(s == 0.0, "empty-hypothesis BLEU %g", s);

    /* Closest reference length, ties to the shorter: hyp 5 tokens, refs 4 and 6. */
    const char *refs2[] = {"a b c d f g", "a b c x"};
    mt_bleu_init(&st);
    CHECK_STATUS(mt_bleu_add(&st, "a b c d e", refs2, 2));
    CHECK(st.ref_len == 4, "closest ref_len %lld", (long long)st.ref_len);
    /* Clipping by the max over references: "a b c" occurs in both refs once. hyp "a a"
    ** vs refs "a b", "a a a": unigram a: hyp 2, max ref count 3 -> 2. */
    const char *refs3[] = {"a b", "a a a"};
    mt_bleu_init(&st);
    CHECK_STATUS(mt_bleu_add(&st, "a a", refs3, 2));
    CHECK(st.correct[0] == 2 && st.total[0] == 2 && st.correct[1] == 1 && st.total[1] == 1,
          "multi-ref clipping %lld/%lld %lld/%lld", (long long)st.correct[0],
          (long long)st.total[0], (long long)st.correct[1], (long long)st.total[1]);
    /* Clipping: hyp "the the the" vs "the cat": 1 of 3 unigrams. */
    const char *r4 = "the cat";
    mt_bleu_init(&st);
    CHECK_STATUS(mt_bleu_add(&st, "the the the", &r4, 1));
    CHECK(st.correct[0] == 1 && st.total[0] == 3, "clipped unigrams %lld/%lld",
          (long long)st.correct[0], (long long)st.total[0]);

    /* Corpus statistics are sums: two segments. */
    mt_bleu_init(&st);
    CHECK_STATUS(mt_bleu_add(&st, "the cat sat on the mat", &ref, 1));
    CHECK_STATUS(mt_bleu_add(&st, "the cat", &ref, 1));
    CHECK(st.sys_len == 8 && st.ref_len == 12 && st.correct[0] == 7 && st.total[0] == 8 &&
              st.correct[1] == 4 && st.total[1] == 6 && st.total[3] == 3,
          "summed statistics");
    sc = mt_bleu_compute(&st, false);
    want = exp(1.0 - 12.0 / 8.0) *
           exp((log(700.0 / 8) + log(400.0 / 6) + log(100.0 / 4) + log(100.0 / 6)) / 4);
    CHECK_CLOSE(sc.score, want, 0, 1e-12, "two-segment corpus BLEU");

    /* Errors: no usable reference, invalid UTF-8. */
    const char *empty = "";
    CHECK(mt_bleu_add(&st, "x", &empty, 1) == MT_ERR_INVALID, "empty reference accepted");
    CHECK(strstr(mt_errmsg(), "empty reference") != NULL, "message: %s", mt_errmsg());
    CHECK(mt_bleu_add(&st, "bad \xC3\x28 utf8", &ref, 1) == MT_ERR_INVALID, "invalid UTF-8");
    CHECK(strstr(mt_errmsg(), "UTF-8") != NULL, "message: %s", mt_errmsg());
    CHECK(st.n_segments == 2, "failed adds must not change the statistics");
}

static void check_tok(const char *in, const char *want) {
    char *out = NULL;
    mt_status rc = mt_tokenize_13a(in, &out);
    CHECK(rc == MT_OK && strcmp(out, want) == 0, "13a('%s') = '%s', want '%s'", in,
          out ? out : "(null)", want);
    mt_free(out);
}

static void test_tokenizer_13a(void) {
    check_tok("Hello, world.", "Hello , world .");
    check_tok("3.5 MB, 1,000 pixels", "3.5 MB , 1,000 pixels"); /* digits keep . and , */
    check_tok("1.5.3 v2.0", "1.5.3 v2.0");
    check_tok("e.g. 10-20", "e . g . 10 - 20"); /* dash split only after a digit */
    check_tok("well-known a-3", "well-known a-3");
    check_tok("don't", "don't"); /* apostrophe is not split */
    check_tok("x,y a.b", "x , y a . b");
    check_tok("Open...", "Open . . .");
    check_tok("&quot;Hi&quot; &amp; &lt;b&gt;", "\" Hi \" & < b >");
    check_tok("&amp;quot;", "& quot ;"); /* one pass per entity, in sacreBLEU's order */
    check_tok("a<skipped>b", "ab");
    check_tok("(a) [b] {c} a/b x@y #1 $2 50% a+b a=b a_b a^b a`b a~b a|b a\\b a:b a;b a?b a!b",
              "( a ) [ b ] { c } a / b x @ y # 1 $ 2 50 % a + b a = b a _ b a ^ b a ` b a ~ b a "
              "| b a \\ b a : b a ; b a ? b a ! b");
    check_tok("a*b <x>", "a * b < x >");
    check_tok("Café. Über, naïve", "Café . Über , naïve");
    check_tok("a\xC2\xA0"
              "b\xE2\x80\x83"
              "c",
              "a b c"); /* NBSP, EM SPACE */
    check_tok("a\xE2\x80\x8B"
              "b",
              "a\xE2\x80\x8B"
              "b"); /* ZWSP is no space */
    check_tok("a-\nb c\nd", "ab c d");
    check_tok("  padded  \t", "padded");
    check_tok("", "");
}

static void test_chrf_hand(void) {
    double f = 0;
    const char *r = "the cat sat";
    CHECK_STATUS(mt_chrf_sentence("the cat sat", &r, 1, &f));
    CHECK(f == 100.0, "identical chrF %.17g", f);
    r = "abc";
    CHECK_STATUS(mt_chrf_sentence("a b  c", &r, 1, &f));
    CHECK(f == 100.0, "whitespace is removed: %.17g", f);

    /* "ab" vs "abc": orders 1 (2,3,2) and 2 (1,2,1); P = 1, R = (2/3 + 1/2)/2 = 7/12,
    ** F = 5 P R / (4 P + R) = 7/11. */
    CHECK_STATUS(mt_chrf_sentence("ab", &r, 1, &f));
    CHECK_CLOSE(f, 700.0 / 11, 0, 1e-13, "ab/abc");
    /* The same over code points, not bytes. */
    const char *rj = "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E"; /* 日本語 */
    CHECK_STATUS(mt_chrf_sentence("\xE6\x97\xA5\xE6\x9C\xAC", &rj, 1, &f));
    CHECK_CLOSE(f, 700.0 / 11, 0, 1e-13, "Japanese code points");

    /* Corpus: ("abcdefgh", "ab") + ("xyz", "xyz").  Segment 1: (8,2,2) (7,1,1) and the
    ** hypothesis count 0 for orders 3..6 (the reference has none); segment 2: (3,3,3)
    ** (2,2,2) (1,1,1).  Sums (11,5,5) (9,3,3) (1,1,1): P = (5/11 + 3/9 + 1)/3 = 59/99,
    ** R = 1, F = 5 P / (4 P + 1) = 59/67. */
    mt_chrf_stats cs;
    mt_chrf_init(&cs);
    const char *r1 = "ab", *r2 = "xyz";
    CHECK_STATUS(mt_chrf_add(&cs, "abcdefgh", &r1, 1));
    CHECK(cs.hyp[2] == 0 && cs.ref[2] == 0 && cs.hyp[1] == 7, "hyp count zeroed");
    CHECK_STATUS(mt_chrf_add(&cs, "xyz", &r2, 1));
    CHECK_CLOSE(mt_chrf_compute(&cs), 5900.0 / 67, 0, 1e-13, "corpus chrF");

    /* Several references: the best sentence F wins. */
    const char *refs[] = {"xyz", "abc"};
    CHECK_STATUS(mt_chrf_sentence("abc", refs, 2, &f));
    CHECK(f == 100.0, "best reference %.17g", f);
    /* No overlap, empty hypothesis. */
    CHECK_STATUS(mt_chrf_sentence("qqq", &r, 1, &f));
    CHECK(f == 0.0, "no overlap %g", f);
    CHECK_STATUS(mt_chrf_sentence("", &r, 1, &f));
    CHECK(f == 0.0, "empty hypothesis %g", f);
    const char *empty = "";
    CHECK(mt_chrf_add(&cs, "x", &empty, 1) == MT_ERR_INVALID, "empty reference accepted");
    CHECK(mt_chrf_add(&cs, "\xFF", &r, 1) == MT_ERR_INVALID, "invalid UTF-8 accepted");
}

/* ------------------------------------------------------- Marian fixtures */

static char **read_lines(const char *path, int *n_out) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    int cap = 64, n = 0;
    char **lines = malloc(cap * sizeof(char *));
    char buf[65536];
    while (fgets(buf, sizeof buf, f)) {
        size_t len = strlen(buf);
        if (len > 0 && buf[len - 1] == '\n') buf[--len] = '\0';
        if (n == cap) lines = realloc(lines, (cap *= 2) * sizeof(char *));
        lines[n] = malloc(len + 1);
        memcpy(lines[n++], buf, len + 1);
    }
    fclose(f);
    *n_out = n;
    return lines;
}

static void free_lines(char **lines, int n) {
    for (int i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}

static void test_marian_readme_scores(void) {
    static const struct {
        const char *dir, *bleu, *chrf;
    } cases[] = {
        {"transformer-tiny", "4.1", "14.0"}, {"transformer-tiny-r2l", "3.5", "11.9"},
        {"transformer-aan", "0.2", "6.0"},   {"s2s-tiny", "0.2", "2.3"},
        {"multi-transformer", "0.6", "4.0"},
    };
    for (int c = 0; c < N_ELEMS(cases); c++) {
        char path[1024];
        int nh = 0, nr = 0;
        snprintf(path, sizeof path, "%s/marian/%s/beam4.out", MT_TEST_DATA, cases[c].dir);
        char **hyp = read_lines(path, &nh);
        snprintf(path, sizeof path, "%s/marian/%s/ref.de", MT_TEST_DATA, cases[c].dir);
        char **ref = read_lines(path, &nr);
        if (!CHECK(hyp && ref && nh == 60 && nr == 60, "fixture %s", cases[c].dir)) continue;
        mt_bleu_stats bs;
        mt_chrf_stats cs;
        mt_bleu_init(&bs);
        mt_chrf_init(&cs);
        for (int i = 0; i < nh; i++) {
            if (ref[i][0] == '\0') { /* line 51: empty input, empty output */
                CHECK(hyp[i][0] == '\0', "%s line %d: empty reference, output '%s'", cases[c].dir,
                      i + 1, hyp[i]);
                continue;
            }
            const char *r = ref[i];
            CHECK_STATUS(mt_bleu_add(&bs, hyp[i], &r, 1));
            CHECK_STATUS(mt_chrf_add(&cs, hyp[i], &r, 1));
        }
        char got[32];
        mt_bleu_score sc = mt_bleu_compute(&bs, false);
        snprintf(got, sizeof got, "%.1f", sc.score);
        CHECK(strcmp(got, cases[c].bleu) == 0, "%s: BLEU %s (%.4f), README says %s", cases[c].dir,
              got, sc.score, cases[c].bleu);
        double chrf = mt_chrf_compute(&cs);
        snprintf(got, sizeof got, "%.1f", chrf);
        CHECK(strcmp(got, cases[c].chrf) == 0, "%s: chrF %s (%.4f), README says %s", cases[c].dir,
              got, chrf, cases[c].chrf);
        free_lines(hyp, nh);
        free_lines(ref, nr);
    }
}

/* Every allocation failure gives MT_ERR_NOMEM and leaves nothing allocated. */
static void test_alloc_failures(void) {
    const char *refs[] = {"The dog had bit the man.", "It was not unexpected."};
    for (int which = 0; which < 2; which++) {
        int ok_at = -1;
        for (int k = 0; k < 200 && ok_at < 0; k++) {
            mt_alloc_stats before = mt_alloc_get_stats();
            mt_alloc_fail_at(k, false);
            mt_status rc;
            if (which == 0) {
                mt_bleu_stats st;
                mt_bleu_init(&st);
                rc = mt_bleu_add(&st, "The dog bit the man.", refs, 2);
            } else {
                mt_chrf_stats st;
                mt_chrf_init(&st);
                rc = mt_chrf_add(&st, "The dog bit the man.", refs, 2);
            }
            mt_alloc_fail_at(-1, false);
            mt_alloc_stats after = mt_alloc_get_stats();
            CHECK(rc == MT_OK || rc == MT_ERR_NOMEM, "fail at %d: %s", k, mt_status_str(rc));
            CHECK(after.live_blocks == before.live_blocks, "%s leaks at failure %d",
                  which ? "chrF" : "BLEU", k);
            if (rc == MT_OK) ok_at = k;
        }
        CHECK(ok_at > 0, "allocation failures were not reached (%d)", ok_at);
    }
}

int main(void) {
    test_sacrebleu_readme();
    test_hf_chrf_examples();
    test_bleu_hand();
    test_tokenizer_13a();
    test_chrf_hand();
    test_marian_readme_scores();
    test_alloc_failures();
    TEST_MAIN_END();
}
