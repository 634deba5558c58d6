/* fuzz_util.c: scratch files and quiet logs for the fuzz targets (fuzz.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "mt.h"

static char dir[256];

static void remove_dir(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "fuzz: could not remove %s\n", dir);
}

static const char *scratch(void) {
    if (dir[0] == '\0') {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/mtpe_fuzz.XXXXXX", t && t[0] ? t : "/tmp");
        if (mkdtemp(dir) == NULL) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(remove_dir);
    }
    return dir;
}

const char *fuzz_out_path(const char *name) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", scratch(), name);
    return path;
}

const char *fuzz_file(const char *suffix, const uint8_t *data, size_t size) {
    static char path[512];
    snprintf(path, sizeof path, "%s/in%s", scratch(), suffix);
    FILE *f = fopen(path, "wb");
    if (f == NULL) return NULL;
    bool ok = fwrite(data, 1, size, f) == size;
    if (fclose(f) != 0) ok = false;
    return ok ? path : NULL;
}

char *fuzz_cstr(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (s == NULL) return NULL;
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

static void no_log(mt_log_level level, const char *msg, void *user) {
    (void)level;
    (void)msg;
    (void)user;
}

void fuzz_quiet(void) {
    static int done;
    if (!done) mt_log_set(no_log, NULL);
    done = 1;
}

void fuzz_note(const char *what, mt_status rc) {
    if (getenv("MT_FUZZ_VERBOSE") == NULL) return;
    fprintf(stderr, "fuzz: %s: %s%s%s\n", what, mt_status_str(rc), rc == MT_OK ? "" : ": ",
            rc == MT_OK ? "" : mt_errmsg());
}
