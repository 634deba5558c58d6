/*
** test_model_io.c: Marian model files (.npz, .bin), the special:model.yml
** config and mt_yaml.
**
** Oracles: the models in data/marian/ were written by Marian itself, so
** reading them and writing them back must give the same bytes; shapes are
** checked against the architecture in each model's own config; parameter
** counts, sums and values were taken with Python's zipfile/struct (see the
** comments); the npz/ fixtures were made by data/npz/make_fixtures.py the
** way NumPy writes archives (zip64, deflate, .npy v2.0), with values that
** follow the formulas below.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "harness.h"
#include "test_util.h"
#include "mt.h"
#include "test_hooks.h"

/* ------------------------------------------------------------ helpers */

static bool rd_le16_is(const unsigned char *p, unsigned v) {
    return (unsigned)(p[0] | p[1] << 8) == v;
}

static size_t live_blocks(void) { return mt_alloc_get_stats().live_blocks; }

static bool shape_is(const mt_tensor *t, int ndim, int64_t d0, int64_t d1) {
    if (t == NULL || t->shape.ndim != ndim) return false;
    if (ndim >= 1 && t->shape.dim[0] != d0) return false;
    if (ndim >= 2 && t->shape.dim[1] != d1) return false;
    return true;
}

static int64_t numel(const mt_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->shape.ndim; i++)
        n *= t->shape.dim[i];
    return n;
}

static double sum_f32(const mt_tensor *t) {
    double s = 0;
    const float *x = t->data;
    for (int64_t i = 0; i < numel(t); i++)
        s += x[i];
    return s;
}

/* Same names, shapes, types and bytes, in the same order. */
static bool same_models(const mt_model_file *a, const mt_model_file *b, const char *what) {
    if (a->n != b->n) return CHECK(0, "%s: %d vs %d items", what, a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        const mt_tensor *x = &a->tensors[i], *y = &b->tensors[i];
        size_t bytes = a->items[i].raw
                           ? a->items[i].raw_bytes
                           : (size_t)numel(x) * mt_marian_type_width(a->items[i].marian_type);
        if (strcmp(a->names[i], b->names[i]) != 0 || x->shape.ndim != y->shape.ndim ||
            memcmp(x->shape.dim, y->shape.dim, sizeof(int64_t) * (size_t)x->shape.ndim) != 0 ||
            a->items[i].marian_type != b->items[i].marian_type ||
            a->items[i].raw != b->items[i].raw || x->dtype != y->dtype ||
            (a->items[i].raw && a->items[i].raw_bytes != b->items[i].raw_bytes) ||
            memcmp(x->data, y->data, bytes) != 0)
            return CHECK(0, "%s: item %d ('%s' vs '%s') differs", what, i, a->names[i],
                         b->names[i]);
    }
    bool cfg = (a->config_yaml == NULL && b->config_yaml == NULL) ||
               (a->config_yaml && b->config_yaml && !strcmp(a->config_yaml, b->config_yaml));
    return CHECK(cfg, "%s: configs differ", what);
}

static char tmpdir[256];

static void path_in_tmp(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", tmpdir, name);
}

/* --------------------------------------------------- Marian fixtures */

typedef struct fixture {
    const char *dir;
    const char *type;  /* "type" in special:model.yml */
    int n_params;      /* members minus special:model.yml (Python zipfile) */
    int n_vocabs;      /* entries of dim-vocabs */
    size_t config_len; /* special:model.yml shape minus the NUL (Python) */
    const char *emb;   /* the embedding matrix checked below */
    double emb_sum;    /* math.fsum of its values (Python) */
    float emb_first;   /* its first value (Python struct) */
} fixture;

static const fixture fixtures[] = {
    {"transformer-tiny", "transformer", 86, 2, 1292, "Wemb", -504.861957334, -0.242439747f},
    {"transformer-tiny-r2l", "transformer", 86, 2, 1291, "Wemb", -683.415620887, -0.220222265f},
    {"transformer-aan", "transformer", 65, 2, 1292, "encoder_Wemb", 0.834766990574, -0.211937815f},
    {"s2s-tiny", "s2s", 97, 2, 1284, "encoder_Wemb", -10.8476505095, -0.177020639f},
    {"multi-transformer", "multi-transformer", 138, 3, 1307, "Wemb", -164.79250165, -0.212862298f},
};

static int64_t yaml_int(const mt_yaml *y, const char *key) {
    const char *v = mt_yaml_get(y, key);
    CHECK(v != NULL, "config lacks '%s'", key);
    return v ? atoll(v) : -1;
}

/* Shapes implied by the architecture in the model's own config. */
static void check_architecture(const fixture *fx, const mt_model_file *m, const mt_yaml *y) {
    int64_t E = yaml_int(y, "dim-emb"), V = atoll(mt_yaml_seq_item(y, "dim-vocabs", 0));
    CHECK(E == 64 && V == 4000, "%s: dim-emb %lld, dim-vocabs[0] %lld", fx->dir, (long long)E,
          (long long)V);
    CHECK(shape_is(mt_model_file_find(m, fx->emb), 2, V, E), "%s: %s shape", fx->dir, fx->emb);
    if (strcmp(fx->type, "s2s") == 0) {
        int64_t R = yaml_int(y, "dim-rnn");
        CHECK(shape_is(mt_model_file_find(m, "encoder_bi_U"), 2, R, 2 * R), "s2s encoder_bi_U");
        CHECK(shape_is(mt_model_file_find(m, "encoder_bi_Ux"), 2, R, R), "s2s encoder_bi_Ux");
        CHECK(shape_is(mt_model_file_find(m, "encoder_bi_W"), 2, E, 2 * R), "s2s encoder_bi_W");
        CHECK(shape_is(mt_model_file_find(m, "decoder_Wemb"), 2, V, E), "s2s decoder_Wemb");
        return;
    }
    int64_t F = yaml_int(y, "transformer-dim-ffn");
    const char *enc = strcmp(fx->type, "multi-transformer") == 0 ? "encoder1" : "encoder";
    char name[64];
    snprintf(name, sizeof name, "%s_l1_self_Wq", enc);
    CHECK(shape_is(mt_model_file_find(m, name), 2, E, E), "%s: %s", fx->dir, name);
    snprintf(name, sizeof name, "%s_l1_ffn_W1", enc);
    CHECK(shape_is(mt_model_file_find(m, name), 2, E, F), "%s: %s", fx->dir, name);
    CHECK(shape_is(mt_model_file_find(m, "decoder_l1_ffn_W2"), 2, F, E), "%s: ffn_W2", fx->dir);
    CHECK(shape_is(mt_model_file_find(m, "decoder_ff_logit_out_b"), 2, 1, V), "%s: out_b", fx->dir);
    if (strcmp(fx->dir, "transformer-aan") == 0) {
        int64_t A = yaml_int(y, "transformer-dim-aan");
        CHECK(A == 128, "dim-aan");
        CHECK(shape_is(mt_model_file_find(m, "decoder_l1_aan_W1"), 2, E, A), "aan_W1");
        CHECK(shape_is(mt_model_file_find(m, "decoder_l1_aan_W2"), 2, A, E), "aan_W2");
        CHECK(mt_model_file_find(m, "decoder_l1_self_Wq") == NULL, "aan has no self-attention");
    }
    if (strcmp(fx->type, "multi-transformer") == 0)
        CHECK(shape_is(mt_model_file_find(m, "encoder2_l1_ffn_W1"), 2, E, F), "encoder2");
}

static void test_marian_npz(const fixture *fx) {
    char path[512];
    snprintf(path, sizeof path, "%s/marian/%s/model.npz", MT_TEST_DATA, fx->dir);
    size_t base = live_blocks();
    mt_model_file *m = NULL;
    CHECK_STATUS(mt_model_file_read(path, &m));
    if (m == NULL) return;
    CHECK(m->n == fx->n_params, "%s: %d params, want %d", fx->dir, m->n, fx->n_params);
    for (int i = 0; i < m->n; i++)
        CHECK(m->tensors[i].dtype == MT_F32 && !m->items[i].raw &&
                  m->items[i].marian_type == MT_MARIAN_FLOAT32,
              "%s: %s is not float32", fx->dir, m->names[i]);
    const mt_tensor *emb = mt_model_file_find(m, fx->emb);
    if (CHECK(emb != NULL, "%s: no %s", fx->dir, fx->emb)) {
        CHECK_CLOSE(sum_f32(emb), fx->emb_sum, 1e-6, 1e-9, "embedding sum");
        CHECK(((const float *)emb->data)[0] == fx->emb_first, "%s first value", fx->emb);
    }

    /* config */
    mt_yaml *y = NULL;
    CHECK(m->config_yaml != NULL, "%s: no config", fx->dir);
    if (m->config_yaml) {
        size_t len = strlen(m->config_yaml);
        CHECK(len == fx->config_len,
              "%s: config of %zu chars, want %zu (trailing NUL "
              "stripped)",
              fx->dir, len, fx->config_len);
        CHECK_STATUS(mt_yaml_parse(m->config_yaml, &y));
    }
    if (y) {
        const char *type = mt_yaml_get(y, "type");
        CHECK(type && strcmp(type, fx->type) == 0, "%s: type '%s'", fx->dir, type ? type : "");
        CHECK(mt_yaml_seq_len(y, "dim-vocabs") == fx->n_vocabs, "%s: dim-vocabs", fx->dir);
        CHECK(mt_yaml_seq_len(y, "input-types") == 0, "input-types: [] is an empty sequence");
        const char *pp = mt_yaml_get(y, "transformer-postprocess-top");
        bool aan = strcmp(fx->dir, "transformer-aan") == 0;
        CHECK(pp && !strcmp(pp, aan ? "n" : ""), "postprocess-top (\"\" is an empty string)");
        check_architecture(fx, m, y);
        mt_yaml_free(y);
    }

    /* npz -> npz gives Marian's bytes */
    size_t orig_len = 0;
    unsigned char *orig = test_read_file(path, &orig_len);
    membuf out = {0};
    CHECK_STATUS(mt_npz_write_to(m, "out.npz", membuf_write, &out));
    CHECK(out.n == orig_len && memcmp(out.p, orig, orig_len) == 0,
          "%s: npz rewrite differs from Marian's file (%zu vs %zu bytes)", fx->dir, out.n,
          orig_len);

    /* npz -> bin -> npz */
    membuf bin = {0};
    CHECK_STATUS(mt_bin_write_to(m, "out.bin", membuf_write, &bin));
    mt_model_file *mb = NULL;
    CHECK_STATUS(mt_bin_read_mem(bin.p, bin.n, "out.bin", &mb));
    if (mb) {
        same_models(m, mb, "npz -> bin");
        membuf back = {0};
        CHECK_STATUS(mt_npz_write_to(mb, "back.npz", membuf_write, &back));
        CHECK(back.n == orig_len && memcmp(back.p, orig, orig_len) == 0,
              "%s: npz -> bin -> npz differs", fx->dir);
        /* Marian pads float32 blobs to 256 bytes: out_b [1, 4000] is 16128 in
        ** Marian's own transformer-tiny/model.int8.bin */
        int k = mt_model_file_index(mb, "decoder_ff_logit_out_b");
        CHECK(!strcmp(fx->type, "s2s") || (k >= 0 && mb->items[k].bin_bytes == 16128),
              "blob padding of out_b");
        /* bin -> bin */
        membuf bin2 = {0};
        CHECK_STATUS(mt_bin_write_to(mb, "out2.bin", membuf_write, &bin2));
        CHECK(bin2.n == bin.n && memcmp(bin2.p, bin.p, bin.n) == 0, "%s: bin -> bin", fx->dir);
        membuf_free(&bin2);
        membuf_free(&back);
        mt_model_file_free(mb);
    }
    /* through files (atomic write path) */
    char op[512];
    path_in_tmp(op, sizeof op, "copy.npz");
    CHECK_STATUS(mt_model_file_write(op, m));
    size_t copy_len = 0;
    unsigned char *copy = test_read_file(op, &copy_len);
    CHECK(copy && copy_len == orig_len && memcmp(copy, orig, orig_len) == 0,
          "%s: file copy differs", fx->dir);
    char tmp[560];
    snprintf(tmp, sizeof tmp, "%s.tmp", op);
    CHECK(access(tmp, F_OK) != 0, "temporary file left behind");
    free(copy);
    unlink(op);

    membuf_free(&bin);
    membuf_free(&out);
    free(orig);
    mt_model_file_free(m);
    CHECK(live_blocks() == base, "%s: leaked %zu blocks", fx->dir, live_blocks() - base);
}

/* transformer-tiny/model.int8.bin, written by marian-conv -g intgemm8 */
static void test_marian_bin(void) {
    char path[512], npz_path[512];
    snprintf(path, sizeof path, "%s/marian/transformer-tiny/model.int8.bin", MT_TEST_DATA);
    snprintf(npz_path, sizeof npz_path, "%s/marian/transformer-tiny/model.npz", MT_TEST_DATA);
    size_t base = live_blocks();
    mt_model_file *m = NULL, *f = NULL;
    CHECK_STATUS(mt_model_file_read(path, &m));
    CHECK_STATUS(mt_model_file_read(npz_path, &f));
    if (m == NULL || f == NULL) goto done;
    CHECK(m->n == 86, "int8 bin: %d items", m->n);
    int n_int8 = 0;
    for (int i = 0; i < m->n; i++) {
        const mt_model_item *it = &m->items[i];
        const mt_tensor *src = mt_model_file_find(f, m->names[i]);
        CHECK(src && mt_shape_numel(&src->shape) == numel(&m->tensors[i]), "bin item %s",
              m->names[i]);
        if (it->raw) {
            n_int8++;
            int64_t n = numel(&m->tensors[i]);
            CHECK(it->marian_type == MT_MARIAN_INTGEMM8 && it->raw_bytes == (size_t)n + 4 &&
                      it->bin_bytes == ((size_t)n + 4 + 255) / 256 * 256,
                  "intgemm8 item %s: type 0x%x raw %zu blob %zu", m->names[i], it->marian_type,
                  it->raw_bytes, it->bin_bytes);
        } else if (src) {
            /* marian-conv keeps float32 parameters bit-exactly */
            CHECK(m->tensors[i].dtype == MT_F32 &&
                      memcmp(m->tensors[i].data, src->data, (size_t)numel(src) * 4) == 0,
                  "float item %s differs from model.npz", m->names[i]);
        }
    }
    CHECK(n_int8 == 32, "intgemm8 items: %d", n_int8); /* counted with Python struct */
    int k = mt_model_file_index(m, "decoder_l1_context_Wk");
    CHECK(k >= 0 && m->items[k].raw && shape_is(&m->tensors[k], 2, 64, 64), "Wk raw [64, 64]");
    CHECK(m->config_yaml && strstr(m->config_yaml, "type: transformer\n"), "bin config");

    /* bin -> bin is bit-exact */
    size_t orig_len = 0;
    unsigned char *orig = test_read_file(path, &orig_len);
    membuf out = {0};
    CHECK_STATUS(mt_bin_write_to(m, "x.bin", membuf_write, &out));
    CHECK(out.n == orig_len && memcmp(out.p, orig, orig_len) == 0,
          "int8 bin rewrite differs (%zu vs %zu bytes)", out.n, orig_len);
    membuf_free(&out);
    char op[512];
    path_in_tmp(op, sizeof op, "copy.bin");
    CHECK_STATUS(mt_model_file_write(op, m));
    size_t copy_len = 0;
    unsigned char *copy = test_read_file(op, &copy_len);
    CHECK(copy && copy_len == orig_len && memcmp(copy, orig, orig_len) == 0, "bin file copy");
    free(copy);
    unlink(op);
    free(orig);

    /* intgemm items cannot go into an npz; the old file stays */
    path_in_tmp(op, sizeof op, "old.npz");
    CHECK_STATUS(mt_model_file_write(op, f));
    mt_status rc = mt_model_file_write(op, m);
    CHECK(rc == MT_ERR_UNSUPPORTED && strstr(mt_errmsg(), "decoder_l1_context_Wk") &&
              strstr(mt_errmsg(), "intgemm8"),
          "bin -> npz refusal: %s", mt_errmsg());
    mt_model_file *old = NULL;
    CHECK_STATUS(mt_model_file_read(op, &old));
    if (old) same_models(f, old, "old file intact");
    mt_model_file_free(old);
    char tmp[560];
    snprintf(tmp, sizeof tmp, "%s.tmp", op);
    CHECK(access(tmp, F_OK) != 0, "temporary file left after a failed write");
    unlink(op);
done:
    mt_model_file_free(m);
    mt_model_file_free(f);
    CHECK(live_blocks() == base, "int8 bin: leaked blocks");
}

/* ------------------------------------------------- NumPy-style files */

static void check_numpy_fixture(const mt_model_file *m, const mt_model_file *ref,
                                const char *what) {
    CHECK(m->n == 11, "%s: %d items", what, m->n);
    const char *real[] = {"decoder_ff_logit_out_b", "encoder_l1_self_Wq"};
    for (int i = 0; i < 2; i++) {
        const mt_tensor *a = mt_model_file_find(m, real[i]), *b = mt_model_file_find(ref, real[i]);
        CHECK(a && b && mt_shape_eq(&a->shape, &b->shape) && a->dtype == MT_F32 &&
                  memcmp(a->data, b->data, (size_t)numel(b) * 4) == 0,
              "%s: %s differs from Marian's", what, real[i]);
    }
    CHECK(m->config_yaml && ref->config_yaml && !strcmp(m->config_yaml, ref->config_yaml),
          "%s: config", what);
    const mt_tensor *t = mt_model_file_find(m, "f16_vec");
    if (CHECK(t && t->dtype == MT_F16 && shape_is(t, 1, 7, 0), "%s: f16_vec", what))
        for (int i = 0; i < 7; i++)
            CHECK(mt_f16_to_f32(((const uint16_t *)t->data)[i]) == i * 0.5f - 1.5f, "f16 %d", i);
    t = mt_model_file_find(m, "i8_mat");
    if (CHECK(t && t->dtype == MT_I8 && shape_is(t, 2, 3, 5), "%s: i8_mat ('|i1')", what))
        for (int i = 0; i < 15; i++)
            CHECK(((const int8_t *)t->data)[i] == i - 7, "i8 %d", i);
    t = mt_model_file_find(m, "i16_mat");
    if (CHECK(t && t->dtype == MT_I16 && shape_is(t, 2, 2, 3), "%s: i16_mat", what))
        for (int i = 0; i < 6; i++)
            CHECK(((const int16_t *)t->data)[i] == i * 1000 - 2500, "i16 %d", i);
    t = mt_model_file_find(m, "i32_3d");
    if (CHECK(t && t->dtype == MT_I32 && t->shape.ndim == 3 && t->shape.dim[2] == 3, "i32_3d"))
        for (int i = 0; i < 12; i++)
            CHECK(((const int32_t *)t->data)[i] == i * 100000 - 5, "i32 %d", i);
    t = mt_model_file_find(m, "scalar");
    CHECK(t && t->shape.ndim == 0 && *(const float *)t->data == 3.25f, "%s: scalar ()", what);
    t = mt_model_file_find(m, "empty");
    CHECK(t && shape_is(t, 2, 0, 4), "%s: empty (0, 4)", what);
    int k = mt_model_file_index(m, "f64_raw");
    if (CHECK(k >= 0 && m->items[k].raw && m->items[k].marian_type == MT_MARIAN_FLOAT64 &&
                  m->items[k].raw_bytes == 24,
              "%s: f64 kept raw", what)) {
        const double *d = m->tensors[k].data;
        CHECK(d[0] == 0.1 && d[1] == -2.0 && d[2] == 1e300, "f64 values");
    }
    k = mt_model_file_index(m, "u8_raw");
    if (CHECK(k >= 0 && m->items[k].raw && m->items[k].marian_type == MT_MARIAN_UINT8, "u8")) {
        const unsigned char *u = m->tensors[k].data;
        CHECK(u[0] == 0 && u[1] == 1 && u[2] == 128 && u[3] == 255, "u8 values");
    }
    t = mt_model_file_find(m, "v2_header");
    CHECK(t && shape_is(t, 2, 2, 2) && ((const float *)t->data)[3] == 4.0f, "%s: v2.0", what);
}

static void test_numpy_files(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/marian/transformer-tiny/model.npz", MT_TEST_DATA);
    size_t base = live_blocks();
    mt_model_file *ref = NULL, *m[3] = {NULL, NULL, NULL};
    CHECK_STATUS(mt_model_file_read(path, &ref));
    const char *files[3] = {"numpy_zip64.npz", "numpy_deflate.npz", "zip64_full.npz"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/npz/%s", MT_TEST_DATA, files[i]);
        CHECK_STATUS(mt_model_file_read(path, &m[i]));
        if (m[i] && ref) check_numpy_fixture(m[i], ref, files[i]);
    }
    if (m[0] && m[1]) same_models(m[0], m[1], "deflate vs stored");
    if (m[0] && m[2]) same_models(m[0], m[2], "zip64 everywhere vs numpy");
    if (m[0]) {
        /* raw f64/u8 items round-trip through our npz and bin writers */
        membuf a = {0}, b = {0};
        mt_model_file *x = NULL, *z = NULL;
        CHECK_STATUS(mt_npz_write_to(m[0], "a.npz", membuf_write, &a));
        CHECK_STATUS(mt_model_file_read_mem(a.p, a.n, "a.npz", &x));
        if (x) same_models(m[0], x, "numpy -> npz");
        CHECK_STATUS(mt_bin_write_to(m[0], "b.bin", membuf_write, &b));
        CHECK_STATUS(mt_model_file_read_mem(b.p, b.n, "b.bin", &z));
        if (z) same_models(m[0], z, "numpy -> bin");
        mt_model_file_free(x);
        mt_model_file_free(z);
        membuf_free(&a);
        membuf_free(&b);
    }
    for (int i = 0; i < 3; i++)
        mt_model_file_free(m[i]);
    mt_model_file_free(ref);
    CHECK(live_blocks() == base, "numpy files: leaked blocks");
}

/* Python's zipfile reads the zip64 archive at argv[1] and finds the
** members of argv[2] with the same bytes (stdin of `python3 -`). */
static const char zip64_py[] =
    "import sys, zipfile\n"
    "a, b = zipfile.ZipFile(sys.argv[1]), zipfile.ZipFile(sys.argv[2])\n"
    "assert a.testzip() is None\n"
    "assert [i.filename for i in a.infolist()] == [i.filename for i in b.infolist()]\n"
    "assert any(len(i.extra) for i in a.infolist())  # zip64 extras in the directory\n"
    "for i in b.infolist():\n"
    "    assert a.read(i.filename) == b.read(i.filename), i.filename\n";

/* Our writer in zip64 mode (threshold lowered for the test) reads back, in
** mtpe and (when python3 is there) in Python's zipfile. */
static void test_zip64_writer(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/marian/transformer-tiny/model.npz", MT_TEST_DATA);
    mt_model_file *m = NULL, *back = NULL;
    CHECK_STATUS(mt_model_file_read(path, &m));
    if (m == NULL) return;
    mt_npz_set_zip64_limit_for_tests(20000);
    membuf out = {0};
    CHECK_STATUS(mt_npz_write_to(m, "z.npz", membuf_write, &out));
    char z64[512];
    path_in_tmp(z64, sizeof z64, "z64.npz");
    CHECK_STATUS(mt_model_file_write(z64, m));
    mt_npz_set_zip64_limit_for_tests(0);
    if (system("command -v python3 >/dev/null 2>&1") == 0) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "python3 - '%s' '%s'", z64, path);
        FILE *py = popen(cmd, "w");
        CHECK(py != NULL, "popen python3");
        if (py != NULL) {
            fputs(zip64_py, py);
            CHECK(pclose(py) == 0, "zip64 archive written by mtpe reads in Python's zipfile");
        }
    } else {
        printf("skip python3 zipfile check (no python3)\n");
    }
    unlink(z64);
    bool has64 = false;
    for (size_t i = 0; i + 4 <= out.n && !has64; i++)
        has64 = memcmp(out.p + i, "PK\x06\x06", 4) == 0;
    CHECK(has64, "zip64 end record written");
    CHECK(out.p && rd_le16_is(out.p + 4, 45), "Wemb (1 MB) local header needs zip64");
    CHECK_STATUS(mt_npz_read_mem(out.p, out.n, "z.npz", &back));
    if (back) same_models(m, back, "zip64 writer");
    mt_model_file_free(back);
    membuf_free(&out);
    mt_model_file_free(m);
}

/* ------------------------------------------- hand-made .npy members */

static void put16(unsigned char *p, unsigned v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static void put32(unsigned char *p, uint32_t v) {
    put16(p, v & 0xFFFF);
    put16(p + 2, v >> 16);
}

/* A one-member stored zip holding "<member>" = npy v1.0 with header text
** dict (padded) and data bytes of payload. */
static size_t make_npz(unsigned char *out, const char *member, const char *dict,
                       const void *payload, size_t n) {
    unsigned char npy[512];
    size_t dl = strlen(dict), hl = dl + 1;
    while ((10 + hl) % 16)
        hl++;
    memcpy(npy, "\x93NUMPY\x01\x00", 8);
    put16(npy + 8, (unsigned)hl);
    memset(npy + 10, ' ', hl);
    memcpy(npy + 10, dict, dl);
    npy[10 + hl - 1] = '\n';
    memcpy(npy + 10 + hl, payload, n);
    size_t size = 10 + hl + n, nl = strlen(member);
    uint32_t crc = (uint32_t)crc32(crc32(0, NULL, 0), npy, (uInt)size);
    unsigned char *p = out;
    memset(p, 0, 30);
    put32(p, 0x04034b50);
    put16(p + 4, 20);
    put32(p + 14, crc);
    put32(p + 18, (uint32_t)size);
    put32(p + 22, (uint32_t)size);
    put16(p + 26, (unsigned)nl);
    memcpy(p + 30, member, nl);
    memcpy(p + 30 + nl, npy, size);
    size_t cd = 30 + nl + size;
    p = out + cd;
    memset(p, 0, 46);
    put32(p, 0x02014b50);
    put16(p + 4, 20);
    put16(p + 6, 20);
    put32(p + 16, crc);
    put32(p + 20, (uint32_t)size);
    put32(p + 24, (uint32_t)size);
    put16(p + 28, (unsigned)nl);
    memcpy(p + 46, member, nl);
    p += 46 + nl;
    memset(p, 0, 22);
    put32(p, 0x06054b50);
    put16(p + 8, 1);
    put16(p + 10, 1);
    put32(p + 12, (uint32_t)(46 + nl));
    put32(p + 16, (uint32_t)cd);
    return cd + 46 + nl + 22;
}

typedef struct npy_case {
    const char *dict;
    size_t bytes; /* payload bytes */
    mt_status want;
    const char *in_msg; /* expected part of the message */
    int ndim;
    int64_t d0;
} npy_case;

static void test_npy_headers(void) {
    static const npy_case cases[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24, MT_OK, NULL, 2, 2},
        {"{\"descr\": \"<f4\", \"shape\": (6,), \"fortran_order\": False}", 24, MT_OK, NULL, 1, 6},
        {"{'shape': (3L, 2L), 'descr': '=f4', 'fortran_order': False}", 24, MT_OK, NULL, 2, 3},
        {"{'descr':'<f4','fortran_order':False,'shape':(6)}", 24, MT_OK, NULL, 1, 6},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (6,), }", 24, MT_OK, NULL, 1, 6},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24, MT_ERR_UNSUPPORTED,
         "Fortran", 0, 0},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }", 24, MT_ERR_UNSUPPORTED,
         "'>f4'", 0, 0},
        {"{'descr': '|b1', 'fortran_order': False, 'shape': (6,), }", 6, MT_ERR_UNSUPPORTED,
         "'|b1'", 0, 0},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", 24, MT_ERR_UNSUPPORTED,
         "'<c8'", 0, 0},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", 24,
         MT_ERR_UNSUPPORTED, "structured", 0, 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", 24, MT_ERR_FORMAT,
         "needs 32", 0, 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 3, 4, 5, 6, 7), }", 24,
         MT_ERR_UNSUPPORTED, "dimensions", 0, 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-6,), }", 24, MT_ERR_FORMAT,
         "non-negative", 0, 0},
        {"{'descr': '<f4', 'fortran_order': False, }", 24, MT_ERR_FORMAT, "no 'shape'", 0, 0},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,) ", 24, MT_ERR_FORMAT, "expected",
         0, 0},
        {"{'descr': '<f4', 'shape': (4611686018427387904, 4611686018427387904), }", 24,
         MT_ERR_FORMAT, "more than", 0, 0},
        {"not a dict", 24, MT_ERR_FORMAT, "not a dict", 0, 0},
    };
    unsigned char payload[64] = {0}, zip[1024];
    size_t base = live_blocks();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const npy_case *c = &cases[i];
        size_t n = make_npz(zip, "w.npy", c->dict, payload, c->bytes);
        mt_model_file *m = NULL;
        mt_status rc = mt_npz_read_mem(zip, n, "h.npz", &m);
        CHECK(rc == c->want, "case %zu: %s -> %s (%s)", i, c->dict, mt_status_str(rc), mt_errmsg());
        if (rc == MT_OK && m) {
            CHECK(m->n == 1 && m->tensors[0].shape.ndim == c->ndim &&
                      m->tensors[0].shape.dim[0] == c->d0,
                  "case %zu shape", i);
        } else if (c->in_msg) {
            CHECK(strstr(mt_errmsg(), c->in_msg) && strstr(mt_errmsg(), "h.npz") &&
                      strstr(mt_errmsg(), "w.npy"),
                  "case %zu message: %s", i, mt_errmsg());
        }
        mt_model_file_free(m);
    }
    /* a corrupted byte is caught by the CRC */
    size_t n = make_npz(zip, "w.npy", cases[0].dict, payload, 24);
    zip[n - 22 - 46 - 5 - 3] ^= 0x40;
    mt_model_file *m = NULL;
    CHECK(mt_npz_read_mem(zip, n, "c.npz", &m) == MT_ERR_FORMAT && strstr(mt_errmsg(), "CRC"),
          "CRC mismatch: %s", mt_errmsg());
    CHECK(live_blocks() == base, "npy header tests leaked");
}

/* ------------------------------------------------------ API behaviour */

static void test_api(void) {
    size_t base = live_blocks();
    mt_model_file *m = mt_model_file_new();
    CHECK(m != NULL, "new");
    if (m == NULL) return;
    float w[6] = {1, 2, 3, 4, 5, 6};
    mt_tensor t = {.shape = mt_shape2(2, 3), .dtype = MT_F32, .data = w};
    CHECK_STATUS(mt_model_file_add(m, "W", &t));
    CHECK(mt_model_file_add(m, "W", &t) == MT_ERR_INVALID, "duplicate name refused");
    unsigned char q[2 * 3 + 4] = {1, 2, 3, 4, 5, 6, 0, 0, 0x80, 0x3f};
    CHECK_STATUS(mt_model_file_add_raw(m, "Wq", MT_MARIAN_INTGEMM8, mt_shape2(2, 3), q, 10));
    CHECK(mt_model_file_add_raw(m, "Wq2", MT_MARIAN_INTGEMM8, mt_shape2(2, 3), q, 6) ==
              MT_ERR_INVALID,
          "intgemm8 without multiplier refused");
    CHECK(mt_model_file_add_raw(m, "x", MT_MARIAN_FLOAT32, mt_shape1(1), q, 4) == MT_ERR_INVALID,
          "typed via add_raw refused");
    CHECK(mt_model_file_add_raw(m, "x", 0x777, mt_shape1(1), q, 4) == MT_ERR_UNSUPPORTED,
          "unknown type refused");
    CHECK_STATUS(
        mt_model_file_add_raw(m, "Wb", MT_MARIAN_BERGAMOT_INTGEMM8, mt_shape2(2, 3), q, 10));
    CHECK_STATUS(mt_model_file_set_config(m, "type: transformer\n"));
    CHECK(m->n == 3 && mt_model_file_index(m, "Wq") == 1 && mt_model_file_find(m, "nope") == NULL,
          "index/find");
    CHECK(!strcmp(mt_marian_type_name(MT_MARIAN_INTGEMM8AVX512VNNI), "intgemm8avx512vnni") &&
              mt_marian_type_name(0x1234) == NULL &&
              mt_marian_required_bytes(MT_MARIAN_INTGEMM16, 10) == 24 &&
              mt_marian_required_bytes(MT_MARIAN_FLOAT16, 10) == 20,
          "type table");

    /* bin round trip keeps raw items and the Bergamot code; 256-byte blobs */
    membuf b = {0};
    CHECK_STATUS(mt_bin_write_to(m, "api.bin", membuf_write, &b));
    CHECK(b.n % 256 == 19, "blobs padded to 256, config last unpadded (%zu)", b.n);
    mt_model_file *r = NULL;
    CHECK_STATUS(mt_bin_read_mem(b.p, b.n, "api.bin", &r));
    if (r) {
        CHECK(r->items[2].raw && r->items[2].marian_type == 0x4101 && r->items[2].raw_bytes == 10,
              "bergamot item");
        CHECK(!strcmp(r->config_yaml, "type: transformer\n"), "config");
        membuf b2 = {0};
        CHECK_STATUS(mt_bin_write_to(r, "api2.bin", membuf_write, &b2));
        CHECK(b2.n == b.n && !memcmp(b2.p, b.p, b.n), "bin -> bin with raw items");
        membuf_free(&b2);
    }
    mt_model_file_free(r);
    membuf_free(&b);

    /* a model file filled in by hand, without the items array */
    char *hn[1] = {"W"};
    mt_tensor ht[1] = {t};
    mt_model_file hand = {.n = 1, .names = hn, .tensors = ht};
    membuf hb = {0};
    CHECK_STATUS(mt_npz_write_to(&hand, "hand.npz", membuf_write, &hb));
    mt_model_file *hr = NULL;
    CHECK_STATUS(mt_npz_read_mem(hb.p, hb.n, "hand.npz", &hr));
    CHECK(hr && hr->n == 1 && !memcmp(hr->tensors[0].data, w, sizeof w), "hand-filled model");
    mt_model_file_free(hr);
    membuf_free(&hb);
    CHECK_STATUS(mt_bin_write_to(&hand, "hand.bin", membuf_write, &hb));
    membuf_free(&hb);

    /* file errors */
    mt_model_file *x = NULL;
    CHECK(mt_model_file_read("/nonexistent/model.npz", &x) == MT_ERR_IO &&
              strstr(mt_errmsg(), "/nonexistent/model.npz"),
          "missing file: %s", mt_errmsg());
    CHECK(mt_model_file_read(tmpdir, &x) == MT_ERR_IO, "directory: %s", mt_errmsg());
    char p[512];
    path_in_tmp(p, sizeof p, "model.txt");
    CHECK(mt_model_file_write(p, m) == MT_ERR_INVALID, "unknown suffix: %s", mt_errmsg());
    path_in_tmp(p, sizeof p, "nodir/model.bin");
    CHECK(mt_model_file_write(p, m) == MT_ERR_IO, "unwritable dir: %s", mt_errmsg());
    path_in_tmp(p, sizeof p, "empty.npz");
    FILE *f = fopen(p, "wb");
    if (f) fclose(f);
    CHECK(mt_model_file_read(p, &x) == MT_ERR_FORMAT && strstr(mt_errmsg(), "empty"),
          "empty file: %s", mt_errmsg());
    unlink(p);
    /* format by magic when the suffix says nothing */
    path_in_tmp(p, sizeof p, "model.bin");
    CHECK_STATUS(mt_model_file_write(p, m));
    char p2[512];
    path_in_tmp(p2, sizeof p2, "model.weights");
    CHECK(rename(p, p2) == 0, "rename");
    CHECK_STATUS(mt_model_file_read(p2, &x));
    if (x) same_models(m, x, "bin by magic");
    mt_model_file_free(x);
    unlink(p2);

    mt_model_file_free(m);
    CHECK(live_blocks() == base, "api leaked %zu blocks", live_blocks() - base);
}

/* ------------------------------------------------------------- YAML */

static void test_yaml(void) {
    size_t base = live_blocks();
    mt_yaml *y = NULL;
    CHECK_STATUS(mt_yaml_parse("a: 1\nb: \"x y\"\nc: [1, 2, three]\nd:\n  - p\n  - q\n"
                               "e:\n  k: v\nf: []\ng:\nh: ''\nc2: [[1], 2]\na: 2\n",
                               &y));
    if (y) {
        CHECK(mt_yaml_count(y) == 9, "count %d", mt_yaml_count(y));
        CHECK(!strcmp(mt_yaml_key(y, 0), "a") && !strcmp(mt_yaml_get(y, "a"), "2"),
              "repeated key: later wins, first position kept");
        CHECK(!strcmp(mt_yaml_get(y, "b"), "x y"), "quoted");
        CHECK(mt_yaml_seq_len(y, "c") == 3 && !strcmp(mt_yaml_seq_item(y, "c", 2), "three"),
              "flow seq");
        CHECK(mt_yaml_seq_len(y, "d") == 2 && !strcmp(mt_yaml_seq_item(y, "d", 1), "q"),
              "block seq");
        CHECK(mt_yaml_seq_item(y, "d", 2) == NULL && mt_yaml_get(y, "d") == NULL, "seq bounds");
        CHECK(mt_yaml_get(y, "e") == NULL && mt_yaml_seq_len(y, "e") == -1 &&
                  !strcmp(mt_yaml_key(y, 4), "e"),
              "nested mapping kept as a key without value");
        CHECK(mt_yaml_seq_len(y, "f") == 0, "empty seq");
        CHECK(mt_yaml_get(y, "g") && !strcmp(mt_yaml_get(y, "g"), ""), "null value");
        CHECK(mt_yaml_seq_len(y, "c2") == -1, "seq of seqs is not a seq of scalars");
        CHECK(mt_yaml_get(y, "zz") == NULL && mt_yaml_seq_len(y, "zz") == -1, "absent");
        mt_yaml_free(y);
    }
    y = NULL;
    mt_status rc = mt_yaml_parse("a: 1\nb: [1, 2\nc: 3\n", &y);
    CHECK(rc == MT_ERR_FORMAT && strstr(mt_errmsg(), "line") && strstr(mt_errmsg(), "column"),
          "parse error position: %s", mt_errmsg());
    rc = mt_yaml_parse("a: 1\n  b: 2\n", &y);
    CHECK(rc == MT_ERR_FORMAT && strstr(mt_errmsg(), "line 2"), "bad indent: %s", mt_errmsg());
    rc = mt_yaml_parse("- 1\n- 2\n", &y);
    CHECK(rc == MT_ERR_FORMAT && strstr(mt_errmsg(), "not a mapping"), "top-level seq");
    CHECK_STATUS(mt_yaml_parse("", &y));
    if (y) CHECK(mt_yaml_count(y) == 0, "empty document");
    mt_yaml_free(y);
    y = NULL;
    /* a vocabulary-sized mapping (hash index; quoted and non-ASCII keys) */
    enum { NK = 50000 };
    char *big = malloc((size_t)NK * 32 + 64), *w = big;
    for (int i = 0; i < NK; i++)
        w += sprintf(w, "\"k\u00e9%d\": %d\n", i, i);
    sprintf(w, "\"k\u00e97\": seven\n"); /* repeated key */
    CHECK_STATUS(mt_yaml_parse(big, &y));
    if (y) {
        CHECK(mt_yaml_count(y) == NK, "big mapping count %d", mt_yaml_count(y));
        CHECK(!strcmp(mt_yaml_key(y, 12345), "k\xc3\xa9"
                                             "12345") &&
                  !strcmp(mt_yaml_get(y, "k\xc3\xa9"
                                         "12345"),
                          "12345"),
              "big mapping lookup");
        CHECK(!strcmp(mt_yaml_get(y, "k\xc3\xa9"
                                     "7"),
                      "seven"),
              "big mapping repeated key");
        CHECK(mt_yaml_get(y, "k\xc3\xa9") == NULL, "big mapping absent key");
        mt_yaml_free(y);
        y = NULL;
    }
    free(big);
    /* the full training config Marian writes next to a model */
    char path[512];
    snprintf(path, sizeof path, "%s/marian/transformer-aan/model.npz.yml", MT_TEST_DATA);
    size_t len = 0;
    unsigned char *text = test_read_file(path, &len);
    if (CHECK(text != NULL, "read %s", path)) {
        char *s = malloc(len + 1);
        memcpy(s, text, len);
        s[len] = '\0';
        CHECK_STATUS(mt_yaml_parse(s, &y));
        if (y) {
            CHECK(!strcmp(mt_yaml_get(y, "transformer-decoder-autoreg"), "average-attention"),
                  "aan config");
            CHECK(mt_yaml_seq_len(y, "vocabs") == 2, "vocabs");
            CHECK(!strcmp(mt_yaml_get(y, "model"), "model.npz"), "model key");
        }
        mt_yaml_free(y);
        free(s);
        free(text);
    }
    CHECK(live_blocks() == base, "yaml leaked");
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mt_model_io_XXXXXX");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++)
        test_marian_npz(&fixtures[i]);
    test_marian_bin();
    test_numpy_files();
    test_zip64_writer();
    test_npy_headers();
    test_api();
    test_yaml();
    rmdir(tmpdir);
    TEST_MAIN_END();
}
