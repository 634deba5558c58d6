/*
** test_model_fault.c: failure paths of model file reading and writing.
**
**   - allocation n fails (sticky: every later one too; and single: only
**     the n-th), for n = 0, 1, ... until the operation succeeds: each
**     failing run returns MT_ERR_NOMEM, leaves *out NULL and leaks nothing
**     (mt_alloc_get_stats().live_blocks back to the baseline); a failed
**     file write leaves no temporary file and the old file intact;
**   - the output stream failing at its k-th write passes the error back;
**   - a full disk (the temporary file is a link to /dev/full: ENOSPC) and
**     a file size limit (RLIMIT_FSIZE: EFBIG) give MT_ERR_IO with a clear
**     message, remove the temporary file and keep the old model.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "harness.h"
#include "mt.h"

static size_t live_blocks(void) { return mt_alloc_get_stats().live_blocks; }
static char tmpdir[256];

typedef struct op {
    const char *name;
    mt_status (*run)(const void *arg);
    const void *arg;
    int min_failures; /* allocations the operation must make */
} op;

static mt_status op_read(const void *arg) {
    mt_model_file *m = NULL;
    mt_status rc = mt_model_file_read(arg, &m);
    if (rc == MT_OK) {
        CHECK(m != NULL, "read OK without a model");
        mt_model_file_free(m);
    } else {
        CHECK(m == NULL, "failed read set *out");
    }
    return rc;
}

static mt_status op_yaml(const void *arg) {
    mt_yaml *y = NULL;
    mt_status rc = mt_yaml_parse(arg, &y);
    if (rc == MT_OK) {
        CHECK(mt_yaml_get(y, "type") != NULL, "parsed config has a type");
        mt_yaml_free(y);
    }
    return rc;
}

static mt_status null_sink(void *user, const void *data, size_t n) {
    (void)user, (void)data, (void)n;
    return MT_OK;
}

static mt_status op_write_npz_mem(const void *arg) {
    return mt_npz_write_to(arg, "x.npz", null_sink, NULL);
}
static mt_status op_write_bin_mem(const void *arg) {
    return mt_bin_write_to(arg, "x.bin", null_sink, NULL);
}

static const mt_model_file *write_model;
static mt_status op_write_file(const void *arg) { return mt_model_file_write(arg, write_model); }

/* Runs op with allocation n failing, n = 0.. until it succeeds. */
static void fault_loop(const op *o, bool sticky) {
    size_t base = live_blocks();
    int64_t n;
    int failures = 0;
    for (n = 0; n < 100000; n++) {
        mt_alloc_fail_at(n, sticky);
        mt_status rc = o->run(o->arg);
        mt_alloc_fail_at(-1, false);
        CHECK(live_blocks() == base, "%s: fail at %lld (%s): leaked %zu blocks", o->name,
              (long long)n, sticky ? "sticky" : "once", live_blocks() - base);
        if (rc == MT_OK) break;
        failures++;
        CHECK(rc == MT_ERR_NOMEM, "%s: fail at %lld: %s (%s)", o->name, (long long)n,
              mt_status_str(rc), mt_errmsg());
    }
    CHECK(n < 100000 && failures >= o->min_failures, "%s: %d failing runs", o->name, failures);
    fprintf(stderr, "%s (%s): %d failing runs, clean\n", o->name, sticky ? "sticky" : "once",
            failures);
}

/* The stream failing at its k-th write. */
typedef struct failing_sink {
    int k, calls;
} failing_sink;
static mt_status fail_kth(void *user, const void *data, size_t n) {
    failing_sink *s = user;
    (void)data, (void)n;
    if (s->calls++ == s->k) return mt_seterr(MT_ERR_IO, "sink failed at write %d", s->k);
    return MT_OK;
}

static void sink_failures(const mt_model_file *m, bool npz) {
    size_t base = live_blocks();
    int k;
    for (k = 0; k < 1000000; k++) {
        failing_sink s = {k, 0};
        mt_status rc = npz ? mt_npz_write_to(m, "x.npz", fail_kth, &s)
                           : mt_bin_write_to(m, "x.bin", fail_kth, &s);
        if (rc == MT_OK) break;
        if (!CHECK(rc == MT_ERR_IO && strstr(mt_errmsg(), "sink failed"), "%s sink fail %d: %s",
                   npz ? "npz" : "bin", k, mt_errmsg()))
            break;
    }
    CHECK(k > 10, "%s: %d writes", npz ? "npz" : "bin", k);
    CHECK(live_blocks() == base, "sink failures leaked");
}

static bool file_equals(const char *path, const char *ref) {
    FILE *a = fopen(path, "rb"), *b = fopen(ref, "rb");
    bool same = a && b;
    while (same) {
        int x = fgetc(a), y = fgetc(b);
        if (x != y) same = false;
        if (x == EOF || y == EOF) break;
    }
    if (a) fclose(a);
    if (b) fclose(b);
    return same;
}

static void copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    int c;
    while (a && b && (c = fgetc(a)) != EOF)
        fputc(c, b);
    if (a) fclose(a);
    if (b) fclose(b);
}

/* Disk full and file size limit: MT_ERR_IO, old file kept, no .tmp. */
static void disk_errors(const mt_model_file *m, const char *orig) {
    char path[512], tmp[520];
    snprintf(path, sizeof path, "%s/full.npz", tmpdir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    copy_file(orig, path);
    size_t base = live_blocks();
    /* /dev/full: every Linux system has it */
    bool full = access("/dev/full", W_OK) == 0 && symlink("/dev/full", tmp) == 0;
    if (CHECK(full, "no /dev/full to link %s to", tmp)) {
        mt_status rc = mt_model_file_write(path, m);
        CHECK(rc == MT_ERR_IO && strstr(mt_errmsg(), "disk full"), "ENOSPC: %s (%s)",
              mt_status_str(rc), mt_errmsg());
        CHECK(access(tmp, F_OK) != 0, "temporary file (link) removed after ENOSPC");
        CHECK(file_equals(path, orig), "old file intact after ENOSPC");
    }
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 100000;
    signal(SIGXFSZ, SIG_IGN);
    if (CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit RLIMIT_FSIZE")) {
        mt_status rc = mt_model_file_write(path, m);
        setrlimit(RLIMIT_FSIZE, &old);
        CHECK(rc == MT_ERR_IO && strstr(mt_errmsg(), "full.npz.tmp"), "EFBIG: %s (%s)",
              mt_status_str(rc), mt_errmsg());
        CHECK(access(tmp, F_OK) != 0, "temporary file removed after EFBIG");
        CHECK(file_equals(path, orig), "old file intact after EFBIG");
    }
    CHECK(live_blocks() == base, "disk errors leaked");
    unlink(path);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mt_model_fault_XXXXXX");
    if (mkdtemp(tmpdir) == NULL) return 1;
    char npz[512], bin[512], deflate[512], out_npz[512], out_bin[512];
    snprintf(npz, sizeof npz, "%s/marian/transformer-tiny/model.npz", MT_TEST_DATA);
    snprintf(bin, sizeof bin, "%s/marian/transformer-tiny/model.int8.bin", MT_TEST_DATA);
    snprintf(deflate, sizeof deflate, "%s/npz/numpy_deflate.npz", MT_TEST_DATA);
    snprintf(out_npz, sizeof out_npz, "%s/out.npz", tmpdir);
    snprintf(out_bin, sizeof out_bin, "%s/out.bin", tmpdir);

    mt_model_file *m = NULL;
    CHECK_STATUS(mt_model_file_read(npz, &m));
    if (m == NULL) TEST_MAIN_END();
    write_model = m;
    const op ops[] = {
        /* 86 parameters: at least a name and a buffer each */
        {"read model.npz", op_read, npz, 2 * 86},
        {"read model.int8.bin", op_read, bin, 2 * 86},
        {"read numpy_deflate.npz", op_read, deflate, 11 * 3}, /* + zlib state per member */
        {"parse special:model.yml", op_yaml, m->config_yaml, 50},
        {"write npz stream", op_write_npz_mem, m, 1},
        {"write bin stream", op_write_bin_mem, m, 0}, /* allocates nothing */
        {"write out.npz", op_write_file, out_npz, 2},
        {"write out.bin", op_write_file, out_bin, 1},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        fault_loop(&ops[i], true);
        fault_loop(&ops[i], false);
    }
    /* after all the failed writes: the files are whole and no .tmp is left */
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", out_npz);
    CHECK(access(tmp, F_OK) != 0 && file_equals(out_npz, npz), "out.npz whole, no .tmp");
    snprintf(tmp, sizeof tmp, "%s.tmp", out_bin);
    CHECK(access(tmp, F_OK) != 0, "no out.bin.tmp");

    sink_failures(m, true);
    sink_failures(m, false);
    disk_errors(m, npz);

    mt_model_file_free(m);
    unlink(out_npz);
    unlink(out_bin);
    rmdir(tmpdir);
    TEST_MAIN_END();
}
