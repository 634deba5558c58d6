/*
** replay.c: a plain main for a fuzz target (fuzz.h), the bounded CI run:
**
**   fuzz_X_replay [--mutations N] [--seed S] SEED...
**
** Each SEED (a file, or a folder: its files, sorted) is run as it is, then
** N deterministic mutations of it (xorshift from S and the seed's index):
** bytes flipped, set to edge values (0, 0xff, 0x7f, '<', '"', '\n'),
** inserted, deleted, a block duplicated, the input cut short.  Prints the
** number of inputs run; a crash or sanitizer report is the failure.  The
** same inputs every run, so a failure reproduces: the message names the
** seed and the mutation number (and MT_FUZZ_SAVE=FILE writes each input to
** FILE before it runs, for a crash to leave it behind).
*/
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static uint64_t rng;

static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint8_t *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    size_t cap = 1 << 16, len = 0;
    uint8_t *b = malloc(cap);
    size_t got;
    while (b && (got = fread(b + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *nb = realloc(b, cap *= 2);
            if (nb == NULL) free(b);
            b = nb;
        }
    }
    fclose(f);
    *n = len;
    return b;
}

/* One mutation of in[0..n) into out (capacity cap); returns its length. */
static size_t mutate(const uint8_t *in, size_t n, uint8_t *out, size_t cap) {
    static const uint8_t edge[] = {0, 0xff, 0x7f, 0x80, '<', '>', '"', '\n', '&', ':', '\\', 1};
    memcpy(out, in, n);
    size_t len = n;
    int steps = 1 + (int)(next() % 4);
    for (int s = 0; s < steps; s++) {
        size_t at = len ? (size_t)(next() % len) : 0;
        switch (next() % 7) {
        case 0:
            if (len) out[at] ^= (uint8_t)(1u << (next() % 8));
            break;
        case 1:
            if (len) out[at] = edge[next() % sizeof edge];
            break;
        case 2: /* insert a byte */
            if (len < cap) {
                memmove(out + at + 1, out + at, len - at);
                out[at] = (uint8_t)next();
                len++;
            }
            break;
        case 3: { /* delete a run */
            size_t k = 1 + (size_t)(next() % 16);
            if (at + k > len) k = len - at;
            memmove(out + at, out + at + k, len - at - k);
            len -= k;
            break;
        }
        case 4: { /* duplicate a block */
            size_t k = 1 + (size_t)(next() % 64);
            if (at + k > len) k = len - at;
            if (len + k <= cap) {
                memmove(out + at + k, out + at, len - at);
                len += k;
            }
            break;
        }
        case 5: /* cut short */ len = at; break;
        default: /* a 4-byte little-endian edge value (sizes, counts) */
            if (len >= 4 && at + 4 <= len) {
                static const uint32_t v[] = {0, 1, 0x7fffffff, 0x80000000u, 0xffffffffu, 256};
                uint32_t x = v[next() % 6];
                memcpy(out + at, &x, 4);
            }
            break;
        }
    }
    return len;
}

static const char *save_path;

/* Runs a copy of exactly n bytes, so that ASan sees reads past the end. */
static void run_one(const uint8_t *d, size_t n) {
    uint8_t *exact = malloc(n ? n : 1);
    if (exact == NULL) exit(1);
    memcpy(exact, d, n);
    if (save_path) {
        FILE *f = fopen(save_path, "wb");
        if (f) {
            fwrite(d, 1, n, f);
            fclose(f);
        }
    }
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
}

static long run_seed(const char *path, long index, long mutations, uint64_t seed) {
    size_t n = 0;
    uint8_t *in = read_all(path, &n);
    if (in == NULL) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        exit(1);
    }
    run_one(in, n);
    size_t cap = n + 4096;
    uint8_t *out = malloc(cap);
    if (out == NULL) exit(1);
    rng = seed * 0x9e3779b97f4a7c15ull + (uint64_t)index * 0x2545f4914f6cdd1dull + 1;
    for (long m = 0; m < mutations; m++) {
        size_t len = mutate(in, n, out, cap);
        run_one(out, len);
    }
    free(out);
    free(in);
    return 1 + mutations;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
    long mutations = 200, total = 0, index = 0;
    uint64_t seed = 1;
    save_path = getenv("MT_FUZZ_SAVE");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mutations") == 0 && i + 1 < argc) {
            mutations = atol(argv[++i]);
            continue;
        }
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 10);
            continue;
        }
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no seed %s\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            fprintf(stderr, "replay: %s\n", argv[i]);
            total += run_seed(argv[i], index++, mutations, seed);
            continue;
        }
        DIR *dir = opendir(argv[i]);
        char **names = NULL;
        size_t nn = 0;
        for (struct dirent *e; dir && (e = readdir(dir)) != NULL;) {
            if (e->d_name[0] == '.') continue;
            char **nv = realloc(names, (nn + 1) * sizeof *nv);
            if (nv == NULL) return 1;
            names = nv;
            size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
            names[nn] = malloc(len);
            snprintf(names[nn++], len, "%s/%s", argv[i], e->d_name);
        }
        if (dir) closedir(dir);
        qsort(names, nn, sizeof *names, cmp_str);
        for (size_t k = 0; k < nn; k++) {
            fprintf(stderr, "replay: %s\n", names[k]);
            total += run_seed(names[k], index++, mutations, seed);
            free(names[k]);
        }
        free(names);
    }
    printf("%ld inputs\n", total);
    return total > 0 ? 0 : 1;
}
