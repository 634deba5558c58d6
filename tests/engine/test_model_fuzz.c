/*
** test_model_fuzz.c: damaged model files must give an error status, never
** a crash, an out-of-bounds read (the sanitizer build checks) or a leak.
**
**   - every prefix of a small .npz and .bin built here, and sampled
**     prefixes of the deflated NumPy fixture and of Marian's files: each
**     proper prefix is an error, the whole file reads;
**   - a few thousand random mutations (bit flips, byte overwrites, 32-bit
**     fields set to extreme values) with a fixed seed: each read returns OK
**     or an error with a message; a file that still reads is written back.
** Every buffer handed to the reader is a heap block of exactly its length,
** so AddressSanitizer reports any read past the end.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "test_util.h"
#include "mt.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { /* xorshift64*, fixed seed */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static size_t live_blocks(void) { return mt_alloc_get_stats().live_blocks; }

/* Reads len bytes of data from an exact-size copy; returns the status and
** checks the contract (message on error, no leak). */
static mt_status read_copy(const unsigned char *data, size_t len, const char *name,
                           bool write_back) {
    size_t base = live_blocks();
    unsigned char *copy = malloc(len ? len : 1);
    memcpy(copy, data, len);
    mt_model_file *m = NULL;
    mt_status rc = mt_model_file_read_mem(copy, len, name, &m);
    if (rc == MT_OK) {
        CHECK(m != NULL, "%s: OK without a model", name);
        if (m && write_back) { /* whatever was accepted must be writable */
            membuf out = {0};
            mt_status w = mt_bin_write_to(m, "w.bin", membuf_write, &out);
            CHECK(w == MT_OK, "%s: accepted model does not write as .bin: %s", name, mt_errmsg());
            free(out.p);
        }
        mt_model_file_free(m);
    } else {
        CHECK(m == NULL, "%s: error but *out set", name);
        CHECK(rc < 0 && mt_errmsg()[0] != '\0', "%s: error %d without message", name, (int)rc);
    }
    free(copy);
    CHECK(live_blocks() == base, "%s (len %zu): leaked %zu blocks", name, len,
          live_blocks() - base);
    return rc;
}

/* A small model with every kind of item (.npz cannot hold the raw one). */
static mt_model_file *small_model(bool with_raw) {
    mt_model_file *m = mt_model_file_new();
    float w[12];
    for (int i = 0; i < 12; i++)
        w[i] = (float)i * 0.25f - 1.0f;
    mt_tensor t = {.shape = {.ndim = 2, .dim = {3, 4}}, .dtype = MT_F32, .data = w};
    CHECK_STATUS(mt_model_file_add(m, "W", &t));
    int16_t h[5] = {1, 2, 3, 4, 5};
    mt_tensor t2 = {.shape = {.ndim = 1, .dim = {5}}, .dtype = MT_I16, .data = h};
    CHECK_STATUS(mt_model_file_add(m, "b16", &t2));
    unsigned char q[4 * 2 + 4] = {1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0x80, 0x3f};
    mt_shape qs = {.ndim = 2, .dim = {4, 2}};
    if (with_raw) CHECK_STATUS(mt_model_file_add_raw(m, "Wq", MT_MARIAN_INTGEMM8, qs, q, sizeof q));
    CHECK_STATUS(mt_model_file_set_config(m, "type: transformer\ndim-emb: 4\n"));
    return m;
}

static void all_prefixes(const unsigned char *data, size_t len, const char *name) {
    int bad = 0;
    for (size_t k = 0; k < len; k++)
        if (read_copy(data, k, name, false) == MT_OK) bad++;
    CHECK(bad == 0, "%s: %d truncated prefixes were accepted", name, bad);
    CHECK_STATUS(read_copy(data, len, name, false));
}

static void sampled_prefixes(const unsigned char *data, size_t len, const char *name, int n) {
    int bad = 0;
    for (int i = 0; i < n; i++) {
        size_t k = (size_t)(rnd() % len);
        if (i < 64) k = len - 1 - (size_t)i; /* the tail holds the zip directory */
        if (read_copy(data, k, name, false) == MT_OK) bad++;
    }
    CHECK(bad == 0, "%s: %d truncated prefixes were accepted", name, bad);
}

/* n random mutations of data, within [lo, hi). */
static void mutations(const unsigned char *data, size_t len, size_t lo, size_t hi, const char *name,
                      int n) {
    unsigned char *buf = malloc(len);
    int ok = 0;
    for (int i = 0; i < n; i++) {
        memcpy(buf, data, len);
        int edits = 1 + (int)(rnd() % 3);
        for (int e = 0; e < edits; e++) {
            size_t at = lo + (size_t)(rnd() % (hi - lo));
            switch (rnd() % 4) {
            case 0: buf[at] ^= (unsigned char)(1u << (rnd() % 8)); break;
            case 1: buf[at] = (unsigned char)rnd(); break;
            case 2: /* a 32-bit little-endian field set to an extreme value */
                if (at + 4 <= len) {
                    static const uint32_t v[] = {0,          1,      0x7FFFFFFF, 0xFFFFFFFF,
                                                 0x80000000, 0xFFFF, 0x10000};
                    uint32_t x = v[rnd() % 7];
                    for (int b = 0; b < 4; b++)
                        buf[at + b] = (unsigned char)(x >> (8 * b));
                }
                break;
            default: /* a 64-bit field (in .bin headers) */
                if (at + 8 <= len) {
                    uint64_t x = rnd() % 2 ? (uint64_t)-1 >> (rnd() % 64) : rnd() % 1024;
                    for (int b = 0; b < 8; b++)
                        buf[at + b] = (unsigned char)(x >> (8 * b));
                }
                break;
            }
        }
        if (read_copy(buf, len, name, true) == MT_OK) ok++;
    }
    free(buf);
    fprintf(stderr, "%s: %d mutations, %d still readable\n", name, n, ok);
}

int main(void) {
    size_t base = live_blocks();
    mt_model_file *m = small_model(false), *mr = small_model(true);
    membuf npz = {0}, bin = {0};
    CHECK_STATUS(mt_npz_write_to(m, "small.npz", membuf_write, &npz));
    CHECK_STATUS(mt_bin_write_to(mr, "small.bin", membuf_write, &bin));
    mt_model_file_free(m);
    mt_model_file_free(mr);
    CHECK(npz.n > 0 && bin.n > 0, "small files written");

    all_prefixes(npz.p, npz.n, "small.npz");
    all_prefixes(bin.p, bin.n, "small.bin");
    mutations(npz.p, npz.n, 0, npz.n, "small.npz", 3000);
    mutations(bin.p, bin.n, 0, bin.n, "small.bin", 1000);
    mutations(bin.p, bin.n, 0, 256, "small.bin header", 2000);

    const char *files[] = {"npz/numpy_deflate.npz", "npz/zip64_full.npz",
                           "marian/transformer-tiny/model.npz",
                           "marian/transformer-tiny/model.int8.bin"};
    for (int f = 0; f < 4; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", MT_TEST_DATA, files[f]);
        size_t len = 0;
        unsigned char *data = test_read_file(path, &len);
        if (!CHECK(data != NULL, "read %s", path)) continue;
        bool big = len > 100000;
        sampled_prefixes(data, len, files[f], big ? 150 : 1000);
        if (!big) {
            mutations(data, len, 0, len, files[f], 1500);
        } else if (f == 2) { /* npz: the structure is in the directory at the end */
            mutations(data, len, len - 8000, len, files[f], 300);
            mutations(data, len, 0, 2000, files[f], 100);
        } else { /* bin: the structure is in the header */
            mutations(data, len, 0, 5400, files[f], 300);
        }
        free(data);
    }
    free(npz.p);
    free(bin.p);
    CHECK(live_blocks() == base, "leaked %zu blocks", live_blocks() - base);
    TEST_MAIN_END();
}
