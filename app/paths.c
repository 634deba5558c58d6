/*
** paths.c: default locations of the store and of the assets (see paths.h).
*/
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paths.h"

#include "options.h"
#include "store.h"

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* printf into a new heap string; NULL when out of memory. */
static char *join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 1;
    char *s = mt_try_malloc(n);
    if (s != NULL) snprintf(s, n, "%s%s", a, b);
    return s;
}

mt_status app_make_dirs(const char *path, unsigned mode) {
    size_t n = strlen(path);
    char *p = mt_try_malloc(n + 1);
    if (p == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory making directory %s", path);
    memcpy(p, path, n + 1);
    mt_status rc = MT_OK;
    /* each prefix ending before a '/', then the whole path */
    for (size_t i = 1; i <= n && rc == MT_OK; i++) {
        if (i < n && p[i] != '/') continue;
        char keep = p[i];
        p[i] = '\0';
        if (mkdir(p, (mode_t)mode) != 0 && errno != EEXIST) {
            rc = mt_seterr(MT_ERR_IO, "cannot make directory %s: %s", p, strerror(errno));
        } else if (!is_dir(p)) {
            rc = mt_seterr(MT_ERR_IO, "cannot make directory %s: a file of that name exists", p);
        }
        p[i] = keep;
    }
    mt_free(p);
    return rc;
}

mt_status app_default_db_path(bool create_dir, char **out) {
    *out = NULL;
    char *dir = NULL;
    const char *xdg = getenv("XDG_DATA_HOME");
    if (xdg != NULL && xdg[0] == '/') {
        dir = join(xdg, "/mtpe");
    } else {
        const char *home = getenv("HOME");
        if (home == NULL || home[0] == '\0') {
            struct passwd *pw = getpwuid(getuid());
            home = pw ? pw->pw_dir : NULL;
        }
        if (home == NULL || home[0] == '\0')
            return mt_seterr(MT_ERR_NOTFOUND, "no place for the store: neither XDG_DATA_HOME nor "
                                              "HOME is set (give --db PATH)");
        dir = join(home, "/.local/share/mtpe");
    }
    if (dir == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
    mt_status rc = MT_OK;
    if (create_dir && !is_dir(dir)) rc = app_make_dirs(dir, 0700);
    if (rc == MT_OK) {
        *out = join(dir, "/mtpe.db");
        if (*out == NULL) rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    }
    mt_free(dir);
    return rc;
}

mt_status app_default_assets_dir(char **out) {
    *out = NULL;
    char cand[3][PATH_MAX + 64];
    int n = 0;
    /* MTPE_ASSETS, when set, is the only place looked at (tests rely on it) */
    const char *env = getenv("MTPE_ASSETS");
    bool from_env = env != NULL && env[0] != '\0';
    if (from_env) snprintf(cand[n++], sizeof cand[0], "%.4000s", env);
    char exe[PATH_MAX];
    ssize_t k = from_env ? -1 : readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) {
        exe[k] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash != NULL) *slash = '\0';
        snprintf(cand[n++], sizeof cand[0], "%.4000s/../share/mtpe/assets", exe);
    }
#ifdef MT_SOURCE_DIR
    if (!from_env) snprintf(cand[n++], sizeof cand[0], "%.4000s/assets", MT_SOURCE_DIR);
#endif
    for (int i = 0; i < n; i++) {
        if (!is_dir(cand[i])) continue;
        char real[PATH_MAX];
        *out = mt_try_strdup(realpath(cand[i], real) ? real : cand[i]);
        return *out ? MT_OK : mt_seterr(MT_ERR_NOMEM, "out of memory");
    }
    char looked[3 * (PATH_MAX + 64)] = "";
    for (int i = 0; i < n; i++) {
        size_t m = strlen(looked);
        snprintf(looked + m, sizeof looked - m, "%s%.4100s", i ? ", " : "", cand[i]);
    }
    return mt_seterr(MT_ERR_NOTFOUND, "no assets directory (looked in: %s; set MTPE_ASSETS)",
                     n ? looked : "nowhere");
}

mt_status app_store_path(const app_opts *o, bool create_dir, char **out) {
    if (!app_opts_given(o, "db")) return app_default_db_path(create_dir, out);
    *out = mt_try_strdup(app_opts_str(o, "db"));
    return *out ? MT_OK : mt_seterr(MT_ERR_NOMEM, "out of memory");
}

mt_status app_open_store(const app_opts *o, bool create, const char *hint, store **s) {
    char *db = NULL;
    mt_status rc = app_store_path(o, create, &db);
    if (rc == MT_OK && !create && access(db, F_OK) != 0)
        rc = mt_seterr(MT_ERR_NOTFOUND, "no store at %s (%s)", db, hint);
    if (rc == MT_OK) rc = store_open(db, s);
    mt_free(db);
    return rc;
}
