/*
** test_vocab.c: vocabularies (models/vocab.c, models/spm_wrap.cpp).
**
** The SentencePiece checks compare with what Marian itself did on the fixtures in
** tests/data/marian (vocabularies created by Marian, outputs written by Marian):
**   - score-words.out: marian-scorer printed one word score per reference piece plus
**     one for EOS, so encoding ref.de with EOS must give exactly that many ids;
**   - align-soft.out: one comma-separated weight per source piece plus EOS, so
**     encoding input.en with EOS must give exactly that many ids.
** Together that is every reference and input line of the five models, split exactly
** as Marian split them.  YAML/text vocabularies are checked against the rules of
** Marian's DefaultVocab (marian-compat.md section 4) on small files written here.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "mt.h"
#include "vocab.h"

#define N_ELEMS(a) ((int)(sizeof(a) / sizeof((a)[0])))

static char **read_lines(const char *path, int *n_out) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    int cap = 64, n = 0;
    char **lines = malloc(cap * sizeof(char *));
    size_t bcap = 1 << 16;
    char *buf = malloc(bcap);
    int c;
    size_t len = 0;
    bool any = false;
    while ((c = fgetc(f)) != EOF) {
        any = true;
        if (c != '\n') {
            if (len + 1 >= bcap) buf = realloc(buf, bcap *= 2);
            buf[len++] = (char)c;
            continue;
        }
        if (n == cap) lines = realloc(lines, (cap *= 2) * sizeof(char *));
        buf[len] = '\0';
        lines[n++] = strdup(buf);
        len = 0;
        any = false;
    }
    if (any) {
        if (n == cap) lines = realloc(lines, (cap *= 2) * sizeof(char *));
        buf[len] = '\0';
        lines[n++] = strdup(buf);
    }
    free(buf);
    fclose(f);
    *n_out = n;
    return lines;
}

static void free_lines(char **lines, int n) {
    for (int i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}

static void fixture(char *out, size_t cap, const char *dir, const char *file) {
    snprintf(out, cap, "%s/marian/%s/%s", MT_TEST_DATA, dir, file);
}

static int64_t encode_count(const mt_vocab *v, const char *line) {
    int32_t *ids = NULL;
    int64_t n = -1;
    mt_status rc = mt_vocab_encode(v, line, MT_VOCAB_ADD_EOS, &ids, &n);
    CHECK(rc == MT_OK, "encode '%s': %s", line, mt_errmsg());
    if (rc == MT_OK) CHECK(ids[n - 1] == mt_vocab_eos_id(v), "EOS appended last");
    mt_free(ids);
    return n;
}

/* Number of space-separated fields after "WordScores=". */
static int64_t count_word_scores(const char *line) {
    const char *p = strstr(line, "WordScores=");
    if (p == NULL) return -1;
    p += strlen("WordScores=");
    int64_t k = 0;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p) break;
        k++;
        while (*p && *p != ' ')
            p++;
    }
    return k;
}

/* align-soft line "TEXT ||| g1 g2 ...": the number of weights in the first group. */
static int64_t count_source_weights(const char *line) {
    const char *p = NULL, *q = line;
    while ((q = strstr(q, " ||| ")) != NULL)
        p = q, q += 5;
    if (p == NULL) return -1;
    p += 5;
    int64_t k = 1;
    for (; *p && *p != ' '; p++)
        k += *p == ',';
    return k;
}

static const struct {
    const char *dir, *src_vocab, *trg_vocab;
} models[] = {
    {"transformer-tiny", "vocab.spm", "vocab.spm"},
    {"transformer-tiny-r2l", "vocab.spm", "vocab.spm"},
    {"transformer-aan", "vocab.en.spm", "vocab.de.spm"},
    {"s2s-tiny", "vocab.spm", "vocab.spm"},
    {"multi-transformer", "vocab.spm", "vocab.spm"},
};

static void test_spm_fixture_basics(void) {
    char path[1024];
    fixture(path, sizeof path, "transformer-tiny", "vocab.spm");
    mt_vocab *v = NULL;
    CHECK_STATUS(mt_vocab_load(path, 4000, &v));
    if (v == NULL) return;
    /* Marian trained it with --bos_id=-1 --eos_id=0 --unk_id=1 --vocab_size=4000. */
    CHECK(mt_vocab_get_kind(v) == MT_VOCAB_KIND_SPM, "kind");
    CHECK(mt_vocab_size(v) == 4000 && mt_vocab_dim(v) == 4000, "size %d", mt_vocab_size(v));
    CHECK(mt_vocab_eos_id(v) == 0 && mt_vocab_unk_id(v) == 1, "eos %d unk %d", mt_vocab_eos_id(v),
          mt_vocab_unk_id(v));
    CHECK(strcmp(mt_vocab_piece(v, 0), "</s>") == 0, "piece 0 '%s'", mt_vocab_piece(v, 0));
    CHECK(strcmp(mt_vocab_piece(v, 1), "<unk>") == 0, "piece 1 '%s'", mt_vocab_piece(v, 1));
    CHECK(mt_vocab_piece(v, 4000) == NULL && mt_vocab_piece(v, -1) == NULL, "range");
    CHECK(mt_vocab_id(v, "<s>") == 1, "no BOS piece: <s> is unknown");
    CHECK(mt_vocab_id(v, "no-such-piece-xyz") == 1, "unknown piece -> unk");

    /* Encode / decode, EOS handling. */
    int32_t *ids = NULL;
    int64_t n = 0;
    CHECK_STATUS(mt_vocab_encode(v, "Save the file.", 0, &ids, &n));
    CHECK(n > 0 && ids[n - 1] != 0, "no EOS without the flag");
    int32_t buf[64];
    int64_t m = n < 30 ? n : 30;
    memcpy(buf, ids, (size_t)m * sizeof(int32_t));
    buf[m] = 0; /* EOS */
    char *text = NULL;
    CHECK_STATUS(mt_vocab_decode(v, buf, m + 1, 0, &text));
    CHECK(text && strcmp(text, "Save the file.") == 0, "decode '%s'", text ? text : "");
    mt_free(text);
    /* Every EOS is removed, also in the middle, as Marian's decode(ignoreEOS). */
    int32_t mid[3] = {ids[0], 0, ids[1]};
    CHECK_STATUS(mt_vocab_decode(v, mid, 3, MT_VOCAB_PIECES, &text));
    char want[256];
    snprintf(want, sizeof want, "%s %s", mt_vocab_piece(v, ids[0]), mt_vocab_piece(v, ids[1]));
    CHECK(text && strcmp(text, want) == 0, "pieces '%s' want '%s'", text, want);
    mt_free(text);
    CHECK_STATUS(mt_vocab_decode(v, mid, 3, MT_VOCAB_PIECES | MT_VOCAB_KEEP_EOS, &text));
    snprintf(want, sizeof want, "%s </s> %s", mt_vocab_piece(v, ids[0]), mt_vocab_piece(v, ids[1]));
    CHECK(text && strcmp(text, want) == 0, "pieces with EOS '%s'", text);
    /* Pre-segmented input (Marian --no-spm-encode) gives back the same ids. */
    int32_t *ids2 = NULL;
    int64_t n2 = 0;
    CHECK_STATUS(mt_vocab_encode(v, want, MT_VOCAB_PIECES | MT_VOCAB_ADD_EOS, &ids2, &n2));
    CHECK(n2 == 4 && ids2[0] == ids[0] && ids2[1] == 0 && ids2[2] == ids[1] && ids2[3] == 0,
          "piece input");
    mt_free(ids2);
    mt_free(text);
    mt_free(ids);

    /* Empty line: EOS only. */
    CHECK(encode_count(v, "") == 1, "empty line is EOS only");

    /* Errors. */
    mt_status rc = mt_vocab_encode(v, "caf\xC3 au lait", MT_VOCAB_ADD_EOS, &ids, &n);
    CHECK(rc == MT_ERR_INVALID, "invalid UTF-8: %s", mt_status_str(rc));
    CHECK(strstr(mt_errmsg(), "UTF-8") && strstr(mt_errmsg(), "offset 3"), "message '%s'",
          mt_errmsg());
    CHECK(mt_vocab_encode(v, "\xED\xA0\x80", 0, &ids, &n) == MT_ERR_INVALID, "surrogate");
    CHECK(mt_vocab_encode(v, "\xC0\xAF", 0, &ids, &n) == MT_ERR_INVALID, "overlong");
    CHECK(mt_vocab_encode(v, "\xF4\x90\x80\x80", 0, &ids, &n) == MT_ERR_INVALID, "> U+10FFFF");
    int32_t bad = 4000;
    CHECK(mt_vocab_decode(v, &bad, 1, 0, &text) == MT_ERR_INVALID, "out-of-range id");

    /* Suppression: UNK; this vocab has no byte-fallback pieces. */
    int32_t sup[40];
    CHECK(mt_vocab_suppressed_ids(v, true, true, sup, 40) == 1 && sup[0] == 1, "suppressed");
    CHECK(mt_vocab_suppressed_ids(v, false, true, sup, 40) == 0, "suppressed without unk");
    mt_vocab_free(v);
}

/* The split Marian used: reference pieces from score-words, source pieces from
** align-soft, for every line of every fixture model. */
static void test_spm_matches_marian(void) {
    for (int mi = 0; mi < N_ELEMS(models); mi++) {
        char path[1024];
        mt_vocab *src = NULL, *trg = NULL;
        fixture(path, sizeof path, models[mi].dir, models[mi].src_vocab);
        CHECK_STATUS(mt_vocab_load(path, 0, &src));
        fixture(path, sizeof path, models[mi].dir, models[mi].trg_vocab);
        CHECK_STATUS(mt_vocab_load(path, 0, &trg));
        if (!src || !trg) continue;

        int n_ref = 0, n_sw = 0, n_in = 0, n_al = 0;
        fixture(path, sizeof path, models[mi].dir, "ref.de");
        char **ref = read_lines(path, &n_ref);
        fixture(path, sizeof path, models[mi].dir, "score-words.out");
        char **sw = read_lines(path, &n_sw);
        fixture(path, sizeof path, models[mi].dir, "input.en");
        char **in = read_lines(path, &n_in);
        fixture(path, sizeof path, models[mi].dir, "align-soft.out");
        char **al = read_lines(path, &n_al);
        if (CHECK(ref && sw && n_ref == 60 && n_sw == 60, "%s: ref/score-words", models[mi].dir)) {
            for (int i = 0; i < n_ref; i++) {
                int64_t want = count_word_scores(sw[i]), got = encode_count(trg, ref[i]);
                CHECK(got == want, "%s ref.de line %d: %lld pieces+EOS, Marian scored %lld",
                      models[mi].dir, i + 1, (long long)got, (long long)want);
            }
        }
        if (CHECK(in && al && n_in == 60 && n_al == 60, "%s: input/align-soft", models[mi].dir)) {
            for (int i = 0; i < n_in; i++) {
                int64_t want = count_source_weights(al[i]), got = encode_count(src, in[i]);
                CHECK(got == want, "%s input.en line %d: %lld pieces+EOS, Marian attended %lld",
                      models[mi].dir, i + 1, (long long)got, (long long)want);
            }
        }
        if (ref) free_lines(ref, n_ref);
        if (sw) free_lines(sw, n_sw);
        if (in) free_lines(in, n_in);
        if (al) free_lines(al, n_al);
        mt_vocab_free(src);
        mt_vocab_free(trg);
    }
}

/* Marian's outputs are spm-decoded text: encoding and decoding them again is the
** identity, for every line of every model. */
static void test_spm_roundtrip(void) {
    int checked = 0;
    for (int mi = 0; mi < N_ELEMS(models); mi++) {
        char path[1024];
        mt_vocab *trg = NULL;
        fixture(path, sizeof path, models[mi].dir, models[mi].trg_vocab);
        CHECK_STATUS(mt_vocab_load(path, 0, &trg));
        int n = 0;
        fixture(path, sizeof path, models[mi].dir, "beam4.out");
        char **out = read_lines(path, &n);
        if (!CHECK(trg && out && n == 60, "%s beam4.out", models[mi].dir)) continue;
        for (int i = 0; i < n; i++) {
            /* Degenerate outputs can decode to runs of spaces, which encoding
            ** normalizes away; the identity holds for whitespace-normalized text. */
            size_t len = strlen(out[i]);
            if (strstr(out[i], "  ") || (len > 0 && (out[i][0] == ' ' || out[i][len - 1] == ' ')))
                continue;
            checked++;
            int32_t *ids = NULL;
            int64_t k = 0;
            char *text = NULL;
            CHECK_STATUS(mt_vocab_encode(trg, out[i], MT_VOCAB_ADD_EOS, &ids, &k));
            CHECK_STATUS(mt_vocab_decode(trg, ids, k, 0, &text));
            CHECK(text && strcmp(text, out[i]) == 0, "%s line %d: '%s' -> '%s'", models[mi].dir,
                  i + 1, out[i], text ? text : "");
            mt_free(ids);
            mt_free(text);
        }
        free_lines(out, n);
        mt_vocab_free(trg);
    }
    CHECK(checked >= 280, "only %d of 300 output lines are whitespace-normalized", checked);
}

/* ---------------------------------------------------- YAML / text vocabs */

static char tmp_dir[256];

static const char *write_tmp(const char *name, const char *content) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(content, f);
        fclose(f);
    }
    return path;
}

static mt_vocab *load_tmp(const char *name, const char *content, int32_t max_size) {
    mt_vocab *v = NULL;
    mt_status rc = mt_vocab_load(write_tmp(name, content), max_size, &v);
    CHECK(rc == MT_OK, "load %s: %s", name, mt_errmsg());
    return v;
}

static mt_status load_tmp_rc(const char *name, const char *content, int32_t max_size) {
    mt_vocab *v = NULL;
    mt_status rc = mt_vocab_load(write_tmp(name, content), max_size, &v);
    mt_vocab_free(v);
    return rc;
}

/* Encodes line and compares with want[0..n). */
static void check_encode(const mt_vocab *v, const char *line, unsigned flags, const int32_t *want,
                         int64_t n) {
    int32_t *ids = NULL;
    int64_t k = -1;
    mt_status rc = mt_vocab_encode(v, line, flags, &ids, &k);
    bool same = rc == MT_OK && k == n;
    for (int64_t i = 0; same && i < n; i++)
        same = ids[i] == want[i];
    CHECK(same, "encode '%s': rc %d, %lld ids", line, (int)rc, (long long)k);
    mt_free(ids);
}

static void check_decode(const mt_vocab *v, const int32_t *ids, int64_t n, unsigned flags,
                         const char *want) {
    char *text = NULL;
    mt_status rc = mt_vocab_decode(v, ids, n, flags, &text);
    CHECK(rc == MT_OK && strcmp(text, want) == 0, "decode: '%s', want '%s'", text ? text : "(null)",
          want);
    mt_free(text);
}

static void test_yaml_vocab(void) {
    /* marian-vocab style, with quoted keys (OPUS-MT writes "token": id). */
    mt_vocab *v = load_tmp("basic.yml",
                           "</s>: 0\n<unk>: 1\nHallo: 2\nWelt: 3\n\"a b\": 4\n'x: y': 5\n"
                           "\"\\u00fcber\": 6\n\"q\\\"uote\": 7\n",
                           0);
    if (v) {
        CHECK(mt_vocab_get_kind(v) == MT_VOCAB_KIND_YAML, "kind");
        CHECK(mt_vocab_size(v) == 8 && mt_vocab_eos_id(v) == 0 && mt_vocab_unk_id(v) == 1,
              "size %d", mt_vocab_size(v));
        CHECK(strcmp(mt_vocab_piece(v, 4), "a b") == 0, "quoted key");
        CHECK(strcmp(mt_vocab_piece(v, 5), "x: y") == 0, "single-quoted key");
        CHECK(strcmp(mt_vocab_piece(v, 6), "\xC3\xBC"
                                           "ber") == 0,
              "escaped key");
        CHECK(strcmp(mt_vocab_piece(v, 7), "q\"uote") == 0, "escaped quote");
        CHECK(mt_vocab_id(v, "a b") == 4 && mt_vocab_id(v, "nope") == 1, "lookup");
        const int32_t w1[] = {2, 3, 1, 6, 0};
        check_encode(v,
                     "Hallo Welt foo \xC3\xBC"
                     "ber",
                     MT_VOCAB_ADD_EOS, w1, 5);
        /* Runs of spaces give no empty tokens; a tab belongs to its token. */
        const int32_t w2[] = {2, 3, 1};
        check_encode(v, "   Hallo  Welt Welt\t ", 0, w2, 3);
        check_encode(v, "", MT_VOCAB_ADD_EOS, (const int32_t[]){0}, 1);
        const int32_t d1[] = {2, 0, 3, 0};
        check_decode(v, d1, 4, 0, "Hallo Welt");
        check_decode(v, d1, 4, MT_VOCAB_KEEP_EOS, "Hallo </s> Welt </s>");
        check_decode(v, d1, 0, 0, "");
        int32_t sup[4];
        CHECK(mt_vocab_suppressed_ids(v, true, true, sup, 4) == 1 && sup[0] == 1, "suppress");
        mt_vocab_free(v);
    }

    /* JSON is YAML. */
    v = load_tmp("v.json", "{\"</s>\": 0, \"<unk>\": 1, \"\\u00fcber\": 2, \"x\": 3}", 0);
    if (v) {
        CHECK(mt_vocab_size(v) == 4 && strcmp(mt_vocab_piece(v, 2), "\xC3\xBC"
                                                                    "ber") == 0,
              "json");
        mt_vocab_free(v);
    }

    /* Nematus back-compat: "eos"/"UNK" at ids 0/1, or unused ids 0/1. */
    v = load_tmp("nematus.yaml", "eos: 0\nUNK: 1\nfoo: 2\n", 0);
    if (v) {
        CHECK(mt_vocab_eos_id(v) == 0 && mt_vocab_unk_id(v) == 1, "nematus strings");
        check_decode(v, (const int32_t[]){2, 0}, 2, 0, "foo");
        mt_vocab_free(v);
    }
    v = load_tmp("gaps.yml", "foo: 2\nbar: 4\n", 0);
    if (v) {
        CHECK(mt_vocab_eos_id(v) == 0 && mt_vocab_unk_id(v) == 1 && mt_vocab_size(v) == 5,
              "nematus gaps");
        CHECK(strcmp(mt_vocab_piece(v, 3), "") == 0, "gap prints empty");
        check_encode(v, "foo bar baz", MT_VOCAB_ADD_EOS, (const int32_t[]){2, 4, 1, 0}, 4);
        check_decode(v, (const int32_t[]){2, 3, 4}, 3, 0, "foo  bar"); /* Marian joins "" */
        mt_vocab_free(v);
    }
    /* EOS found by string elsewhere than id 0. */
    v = load_tmp("moved.yml", "a: 0\n<unk>: 1\n</s>: 2\n", 0);
    if (v) {
        CHECK(mt_vocab_eos_id(v) == 2 && mt_vocab_unk_id(v) == 1, "eos by string");
        mt_vocab_free(v);
    }
    /* Two tokens on one id: both encode to it, the bytewise-last one prints. */
    v = load_tmp("shared.yml", "</s>: 0\n<unk>: 1\nb: 2\na: 2\n", 0);
    if (v) {
        check_encode(v, "a b", 0, (const int32_t[]){2, 2}, 2);
        CHECK(strcmp(mt_vocab_piece(v, 2), "b") == 0, "shared id prints '%s'",
              mt_vocab_piece(v, 2));
        mt_vocab_free(v);
    }

    /* dim-vocabs: ids >= limit are dropped and encode as UNK. */
    const char *five = "</s>: 0\n<unk>: 1\na: 2\nb: 3\nc: 4\n";
    v = load_tmp("five.yml", five, 3);
    if (v) {
        CHECK(mt_vocab_size(v) == 3 && mt_vocab_dim(v) == 3, "cut size %d", mt_vocab_size(v));
        check_encode(v, "a b c", 0, (const int32_t[]){2, 1, 1}, 3);
        CHECK(mt_vocab_piece(v, 3) == NULL, "cut id has no piece");
        mt_vocab_free(v);
    }
    v = load_tmp("five.yml", five, 10);
    if (v) {
        CHECK(mt_vocab_size(v) == 5 && mt_vocab_dim(v) == 10, "dim = max(size, limit)");
        mt_vocab_free(v);
    }

    /* Errors. */
    CHECK(load_tmp_rc("noeos.yml", "<unk>: 0\nfoo: 1\n", 0) == MT_ERR_FORMAT, "no </s>");
    CHECK(strstr(mt_errmsg(), "</s>") != NULL, "message '%s'", mt_errmsg());
    CHECK(load_tmp_rc("cuteos.yml", "<unk>: 0\nx: 1\n</s>: 5\n", 3) == MT_ERR_FORMAT,
          "</s> beyond dim-vocabs");
    CHECK(strstr(mt_errmsg(), "dim-vocabs") != NULL, "message '%s'", mt_errmsg());
    CHECK(load_tmp_rc("badid.yml", "</s>: 0\n<unk>: 1\na: x\n", 0) == MT_ERR_FORMAT, "bad id");
    CHECK(load_tmp_rc("negid.yml", "</s>: 0\n<unk>: 1\na: -3\n", 0) == MT_ERR_FORMAT, "neg id");
    CHECK(load_tmp_rc("seq.yml", "- a\n- b\n", 0) == MT_ERR_FORMAT, "not a mapping");
    CHECK(load_tmp_rc("syntax.yml", "a: [\n", 0) == MT_ERR_FORMAT, "syntax error");
    CHECK(load_tmp_rc("huge.yml", "</s>: 0\n<unk>: 1\na: 2000000000\n", 0) == MT_ERR_FORMAT,
          "implausible id");
    mt_vocab *none = NULL;
    CHECK(mt_vocab_load("/nonexistent/vocab.yml", 0, &none) == MT_ERR_IO, "missing file");
    CHECK(mt_vocab_load("/nonexistent/vocab.spm", 0, &none) == MT_ERR_IO, "missing spm");
    CHECK(mt_vocab_load("vocab.yml.gz", 0, &none) == MT_ERR_UNSUPPORTED, "gz");
    CHECK(mt_vocab_load("vocab.fsv", 0, &none) == MT_ERR_UNSUPPORTED, "factored");
    CHECK(load_tmp_rc("garbage.spm", "this is not a protobuf", 0) == MT_ERR_FORMAT,
          "garbage spm: %s", mt_errmsg());
}

static void test_text_vocab(void) {
    mt_vocab *v = load_tmp("plain.txt", "</s>\n<unk>\nHallo\r\nWelt", 0);
    if (v) {
        CHECK(mt_vocab_get_kind(v) == MT_VOCAB_KIND_TEXT, "kind");
        CHECK(mt_vocab_size(v) == 4 && mt_vocab_eos_id(v) == 0 && mt_vocab_unk_id(v) == 1,
              "text vocab");
        CHECK(strcmp(mt_vocab_piece(v, 2), "Hallo") == 0, "\\r stripped");
        check_encode(v, "Hallo Welt Hallo\r", 0, (const int32_t[]){2, 3, 1}, 3);
        mt_vocab_free(v);
    }
    /* OPUS-MT style: <unk> <s> </s> first; no Nematus fallback for text files. */
    v = load_tmp("opus.vocab", "<unk>\n<s>\n</s>\n\xE2\x96\x81the\n", 0);
    if (v) {
        CHECK(mt_vocab_eos_id(v) == 2 && mt_vocab_unk_id(v) == 0, "opus order");
        mt_vocab_free(v);
    }
    v = load_tmp("cut.txt", "</s>\n<unk>\na\nb\nc\n", 4);
    if (v) {
        CHECK(mt_vocab_size(v) == 4, "text cut");
        check_encode(v, "c b", 0, (const int32_t[]){1, 3}, 2);
        mt_vocab_free(v);
    }
    CHECK(load_tmp_rc("empty_line.txt", "</s>\n<unk>\n\nx\n", 0) == MT_ERR_FORMAT, "empty line");
    CHECK(strstr(mt_errmsg(), "line 3") != NULL, "message '%s'", mt_errmsg());
    CHECK(load_tmp_rc("dup.txt", "</s>\n<unk>\nx\nx\n", 0) == MT_ERR_FORMAT, "duplicate");
    /* A duplicate beyond the dim-vocabs cut still aborts, as Marian reads every line. */
    CHECK(load_tmp_rc("dup2.txt", "</s>\n<unk>\nx\ny\nx\n", 3) == MT_ERR_FORMAT, "dup past cut");
    CHECK(load_tmp_rc("nounk.txt", "</s>\nx\n", 0) == MT_ERR_FORMAT, "no <unk> in text");
    CHECK(load_tmp_rc("empty.txt", "", 0) == MT_ERR_FORMAT, "empty file");
}

/* ------------------------------------------------------------ training */

static bool same_pieces(const char *a, const char *b) {
    mt_vocab *va = NULL, *vb = NULL;
    bool same = mt_vocab_load(a, 0, &va) == MT_OK && mt_vocab_load(b, 0, &vb) == MT_OK &&
                mt_vocab_size(va) == mt_vocab_size(vb);
    for (int32_t i = 0; same && i < mt_vocab_size(va); i++)
        same = strcmp(mt_vocab_piece(va, i), mt_vocab_piece(vb, i)) == 0;
    mt_vocab_free(va);
    mt_vocab_free(vb);
    return same;
}

static void test_train_spm(void) {
    char c1[1024], c2[1024], c3[1024];
    fixture(c1, sizeof c1, "transformer-tiny", "ref.de");
    fixture(c2, sizeof c2, "transformer-tiny", "input.en");
    fixture(c3, sizeof c3, "transformer-aan", "nbest4.out");
    /* Marian sorts and de-duplicates the files of a vocabulary (std::set):
    ** load_or_train gets them unsorted with a duplicate, train_spm in that order. */
    const char *unsorted[] = {c1, c2, c3, c1};
    const char *corpora[] = {c3, c2, c1};
    char model[512], model2[512];
    snprintf(model, sizeof model, "%s/trained.spm", tmp_dir);
    snprintf(model2, sizeof model2, "%s/trained2.spm", tmp_dir);

    mt_spm_train_params p = mt_spm_train_default_params();
    CHECK(p.vocab_size == 32000 && p.max_lines == 2000000 && p.quiet, "Marian defaults");
    p.vocab_size = 300;
    p.max_lines = 200; /* of about 360 usable lines: reservoir sampling is exercised */
    p.seed = 1111;
    p.num_threads = 2;

    /* mt_vocab_load_or_train creates the missing file, with vocab_size = dim-vocabs. */
    mt_vocab *v = NULL;
    CHECK_STATUS(mt_vocab_load_or_train(model, unsorted, 4, 300, &p, &v));
    if (v) {
        CHECK(mt_vocab_size(v) == 300, "trained size %d", mt_vocab_size(v));
        CHECK(mt_vocab_eos_id(v) == 0 && mt_vocab_unk_id(v) == 1, "Marian's special ids");
        CHECK(strcmp(mt_vocab_piece(v, 0), "</s>") == 0, "piece 0");
        CHECK(mt_vocab_id(v, "<s>") == 1, "no BOS");
        int n = 0, n_plain = 0;
        char **lines = read_lines(c1, &n);
        for (int i = 0; lines && i < n; i++) {
            int32_t *ids = NULL;
            int64_t k = 0;
            char *text = NULL;
            CHECK_STATUS(mt_vocab_encode(v, lines[i], MT_VOCAB_ADD_EOS, &ids, &k));
            CHECK_STATUS(mt_vocab_decode(v, ids, k, 0, &text));
            /* nmt_nfkc may normalize (e.g. the ellipsis), and characters outside the
            ** 0.9995 character coverage or the sample become <unk>: compare ASCII lines
            ** without unknown pieces. */
            bool plain = true;
            for (const char *s = lines[i]; *s; s++)
                plain &= (unsigned char)*s < 0x80;
            for (int64_t j = 0; j < k; j++)
                plain &= ids[j] != mt_vocab_unk_id(v);
            n_plain += plain;
            if (plain && !strstr(lines[i], "  "))
                CHECK(text && strcmp(text, lines[i]) == 0, "roundtrip '%s' -> '%s'", lines[i],
                      text ? text : "");
            mt_free(ids);
            mt_free(text);
        }
        CHECK(n_plain >= 30, "only %d reference lines could be compared", n_plain);
        if (lines) free_lines(lines, n);
        mt_vocab_free(v);
    }
    char side[600];
    snprintf(side, sizeof side, "%s.vocab", model);
    struct stat st;
    CHECK(stat(side, &st) != 0, "%s.vocab removed", model);
    snprintf(side, sizeof side, "%s.model", model);
    CHECK(stat(side, &st) != 0, "%s.model renamed", model);

    /* An existing file is loaded, not trained again. */
    struct stat st1, st2;
    stat(model, &st1);
    mt_spm_train_params bad = p;
    bad.options = "--model_type=nonsense";
    v = NULL;
    CHECK_STATUS(mt_vocab_load_or_train(model, corpora, 3, 300, &bad, &v));
    mt_vocab_free(v);
    stat(model, &st2);
    CHECK(st1.st_mtime == st2.st_mtime && st1.st_size == st2.st_size, "not retrained");

    /* Same seed, same sample, same model (the files differ in the stored
    ** model_prefix, so compare the pieces); another seed, another sample. */
    CHECK_STATUS(mt_vocab_train_spm(corpora, 3, model2, &p));
    CHECK(same_pieces(model, model2), "training is deterministic for a seed");
    p.seed = 2222;
    CHECK_STATUS(mt_vocab_train_spm(corpora, 3, model2, &p));
    CHECK(!same_pieces(model, model2), "the seed does not change the sample");
    p.seed = 1111;

    /* Errors. */
    CHECK(mt_vocab_train_spm(corpora, 3, model2, &bad) == MT_ERR_FORMAT, "bad option: %s",
          mt_errmsg());
    const char *missing[] = {"/nonexistent/corpus.txt"};
    CHECK(mt_vocab_train_spm(missing, 1, model2, &p) == MT_ERR_IO, "missing corpus");
    const char *gz[] = {"corpus.gz"};
    CHECK(mt_vocab_train_spm(gz, 1, model2, &p) == MT_ERR_UNSUPPORTED, "gz corpus");
    const char *emptyc[] = {write_tmp("empty_corpus.txt", "\n\n")};
    CHECK(mt_vocab_train_spm(emptyc, 1, model2, &p) == MT_ERR_INVALID, "no usable lines");
    CHECK(mt_vocab_train_spm(corpora, 0, model2, &p) == MT_ERR_INVALID, "no corpora");
    CHECK(mt_vocab_load_or_train("/nonexistent/v.yml", corpora, 3, 0, &p, &v) == MT_ERR_UNSUPPORTED,
          "yml creation");
    remove(model);
    remove(model2);
}

/* Every allocation failure while loading gives MT_ERR_NOMEM and leaks nothing. */
static void test_alloc_failures(void) {
    char spm[1024];
    fixture(spm, sizeof spm, "transformer-tiny", "vocab.spm");
    char yml[512];
    snprintf(yml, sizeof yml, "%s", write_tmp("af.yml", "</s>: 0\n<unk>: 1\na: 2\nb: 3\n"));
    const char *paths[] = {spm, yml};
    for (int pi = 0; pi < 2; pi++) {
        int ok_at = -1;
        for (int k = 0; k < 500 && ok_at < 0; k++) {
            mt_alloc_stats before = mt_alloc_get_stats();
            mt_alloc_fail_at(k, false);
            mt_vocab *v = NULL;
            mt_status rc = mt_vocab_load(paths[pi], 0, &v);
            int32_t *ids = NULL;
            int64_t n = 0;
            if (rc == MT_OK) rc = mt_vocab_encode(v, "a b", MT_VOCAB_ADD_EOS, &ids, &n);
            mt_alloc_fail_at(-1, false);
            mt_free(ids);
            mt_vocab_free(v);
            mt_alloc_stats after = mt_alloc_get_stats();
            CHECK(rc == MT_OK || rc == MT_ERR_NOMEM, "%s fail at %d: %s (%s)", paths[pi], k,
                  mt_status_str(rc), mt_errmsg());
            CHECK(after.live_blocks == before.live_blocks, "%s leaks at failure %d", paths[pi], k);
            if (rc == MT_OK) ok_at = k;
        }
        CHECK(ok_at > 0, "%s: allocation failures not reached", paths[pi]);
    }
}

int main(void) {
    snprintf(tmp_dir, sizeof tmp_dir, "test_vocab_tmp_%d", (int)getpid());
    mkdir(tmp_dir, 0755);
    test_spm_fixture_basics();
    test_spm_matches_marian();
    test_spm_roundtrip();
    test_yaml_vocab();
    test_text_vocab();
    test_train_spm();
    test_alloc_failures();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_dir);
    TEST_MAIN_END();
}
