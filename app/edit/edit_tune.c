/*
** edit_tune.c: the editor's `:tune` (edit_session.h, app_edit_tuner).
**
** A tune runs as a child process, `mtpe tune --progress`, niced (10), so
** that a crash or OOM of training cannot hurt the editor and translation
** keeps the CPU first.  It dies with the editor (PR_SET_PDEATHSIG): the run
** is then marked failed by the next tune (app_tune_recover).  A reader
** thread turns its progress lines (app/tune/tune.h) into the status line's
** progress ("tune 40/120 ETA 25s") and messages; when the tune ends with an
** accepted model, the session loads it in the background (the workers
** switch between jobs: no pause) and the status line says before/after.
** Models go to MODELS_DIR/tuned-N (N one more than the highest there).
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "edit_session.h"
#include "paths.h"
#include "tune.h"

struct app_edit_tuner {
    pthread_mutex_t mu;
    pthread_mutex_t load_mu; /* app_edit_session_load_model from two threads */
    app_edit_tuner_params p;
    char *db, *models_dir, *base, *vocabs[2];
    char *extra; /* p.extra_args, split in place */
    const char *extra_argv[32];
    int n_extra;
    pid_t pid; /* the running tune; 0 when none */
    int fd;    /* its output (the pipe's read end) */
    pthread_t reader;
    bool reader_live;   /* started and not yet joined */
    bool running;       /* until the reader saw the end */
    char dir[PATH_MAX]; /* its output folder */
    int32_t confirmed;  /* confirmations since the last start (--adapt-every) */
    char last[1400];    /* the last result, for :model */
};

static void message(const app_edit_tuner *t, mt_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void message(const app_edit_tuner *t, mt_log_level level, const char *fmt, ...) {
    if (t->p.sink.message == NULL) return;
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    t->p.sink.message(t->p.sink.user, level, text);
}

static void progress(const app_edit_tuner *t, const char *task, int64_t done, int64_t total) {
    if (t->p.sink.progress) t->p.sink.progress(t->p.sink.user, task, done, total);
}

static char *dup_or_null(const char *s) { return s ? mt_try_strdup(s) : NULL; }

mt_status app_edit_tuner_init(const app_edit_tuner_params *p, app_edit_tuner **out) {
    *out = NULL;
    app_edit_tuner *t = mt_try_calloc(1, sizeof *t);
    if (t == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
    t->p = *p;
    t->db = dup_or_null(p->db_path);
    t->models_dir = dup_or_null(p->models_dir);
    t->base = dup_or_null(p->base_model);
    t->vocabs[0] = dup_or_null(p->vocabs[0]);
    t->vocabs[1] = dup_or_null(p->vocabs[1]);
    t->fd = -1;
    pthread_mutex_init(&t->mu, NULL);
    pthread_mutex_init(&t->load_mu, NULL);
    t->extra = mt_try_strdup(p->extra_args ? p->extra_args : "");
    for (char *save = NULL, *w = t->extra ? strtok_r(t->extra, " \t", &save) : NULL;
         w && t->n_extra < 32; w = strtok_r(NULL, " \t", &save))
        t->extra_argv[t->n_extra++] = w;
    if (!t->db || !t->models_dir || !t->base || !t->vocabs[0] || !t->vocabs[1] || !t->extra) {
        app_edit_tuner_free(t);
        return mt_seterr(MT_ERR_NOMEM, "out of memory");
    }
    *out = t;
    return MT_OK;
}

/* The reader's end of a run: reaps the child, clears the state. */
static void finish(app_edit_tuner *t, const char *result) {
    pid_t pid;
    pthread_mutex_lock(&t->mu);
    pid = t->pid;
    pthread_mutex_unlock(&t->mu);
    int status = 0;
    if (pid > 0) waitpid(pid, &status, 0);
    pthread_mutex_lock(&t->mu);
    t->pid = 0;
    t->running = false;
    if (result) snprintf(t->last, sizeof t->last, "%s", result);
    pthread_mutex_unlock(&t->mu);
    progress(t, NULL, 0, 0);
    if (result == NULL) {
        if (WIFSIGNALED(status))
            message(t, MT_LOG_ERROR, "tune: the training process was killed (signal %d)",
                    WTERMSIG(status));
        else
            message(t, MT_LOG_ERROR, "tune ended without a result (exit status %d)",
                    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static void *reader_main(void *arg) {
    app_edit_tuner *t = arg;
    FILE *f = fdopen(t->fd, "r");
    if (f == NULL) {
        close(t->fd);
        finish(t, NULL);
        return NULL;
    }
    char line[2048], result[1400];
    bool ended = false;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        long long up = 0, total = 0;
        double el = 0, eta = -1;
        char stage[16], verdict[16], dir[1200], hb[32], ha[32], db[32], da[32];
        if (sscanf(line, "progress %15s %lld %lld %lf %lf", stage, &up, &total, &el, &eta) == 5) {
            char task[64];
            if (strcmp(stage, "train") == 0 && eta >= 0)
                snprintf(task, sizeof task, "tune ETA %.0fs", eta);
            else if (strcmp(stage, "train") == 0)
                snprintf(task, sizeof task, "tune");
            else
                snprintf(task, sizeof task, "tune: scoring %s", stage);
            progress(t, task, strcmp(stage, "train") == 0 ? up : 0,
                     strcmp(stage, "train") == 0 && total > 0 ? total : 1);
        } else if (sscanf(line, "done %15s %1199s %31s %31s %31s %31s", verdict, dir, hb, ha, db,
                          da) == 6) {
            bool accepted = strcmp(verdict, "accepted") == 0;
            const char *name = base_name(dir);
            char dev[96] = "";
            if (strcmp(db, "-") != 0) snprintf(dev, sizeof dev, ", dev BLEU %s -> %s", db, da);
            snprintf(result, sizeof result, "%.200s: held-out BLEU %s -> %s%s, %s", name, hb, ha,
                     dev, accepted ? "accepted" : "not accepted");
            ended = true;
            if (accepted && t->p.sess && t->p.auto_switch) {
                mt_clearerr();
                if (app_edit_tuner_load_model(t, dir) == MT_OK)
                    message(t, MT_LOG_INFO, "tune %s; switching to it", result);
                else
                    message(t, MT_LOG_WARN, "tune %s; :model %s switches to it (%s)", result, name,
                            mt_errmsg());
            } else if (accepted) {
                message(t, MT_LOG_INFO, "tune %s; :model %s switches to it", result, name);
            } else {
                message(t, MT_LOG_WARN, "tune %s; the model stays (:model %s uses it anyway)",
                        result, name);
            }
        } else if (strncmp(line, "failed ", 7) == 0) {
            bool cancelled = strcmp(line + 7, "cancelled") == 0;
            snprintf(result, sizeof result, "%.200s %s%.300s", base_name(t->dir),
                     cancelled ? "" : "failed: ", line + 7);
            ended = true;
            message(t, cancelled ? MT_LOG_INFO : MT_LOG_ERROR, "tune %s", result);
        } else if (line[0]) {
            message(t, MT_LOG_WARN, "tune: %.400s", line);
        }
    }
    fclose(f);
    finish(t, ended ? result : NULL);
    return NULL;
}

/* models_dir/tuned-N with N one more than the highest there. */
static mt_status next_dir(app_edit_tuner *t, char *out, size_t cap) {
    mt_status rc = app_make_dirs(t->models_dir, 0755);
    if (rc != MT_OK) return rc;
    app_tune_clean_dir(t->models_dir);
    int hi = 0;
    DIR *d = opendir(t->models_dir);
    if (d == NULL)
        return mt_seterr(MT_ERR_IO, "cannot read %s: %s", t->models_dir, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int n = 0;
        if (sscanf(e->d_name, "tuned-%d", &n) == 1 && n > hi) hi = n;
    }
    closedir(d);
    if (snprintf(out, cap, "%s/tuned-%d", t->models_dir, hi + 1) >= (int)cap)
        return mt_seterr(MT_ERR_INVALID, "path too long: %s", t->models_dir);
    return MT_OK;
}

static mt_status spawn(app_edit_tuner *t) {
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0) return mt_seterr(MT_ERR_IO, "cannot find the mtpe binary");
    exe[k] = '\0';
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return mt_seterr(MT_ERR_IO, "pipe: %s", strerror(errno));
    const char *argv[48] = {exe,     "tune",       "--db",       t->db,        "-m",
                            t->base, "-v",         t->vocabs[0], t->vocabs[1], "-o",
                            t->dir,  "--progress", "--quiet"};
    int argc = 13;
    for (int i = 0; i < t->n_extra; i++)
        argv[argc++] = t->extra_argv[i];
    argv[argc] = NULL;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return mt_seterr(MT_ERR_IO, "cannot start tune: %s", strerror(errno));
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(127);
        setpriority(PRIO_PROCESS, 0, 10);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        signal(SIGINT, SIG_IGN); /* C-c in the terminal is the editor's */
        signal(SIGPIPE, SIG_DFL);
        execv(exe, (char *const *)argv);
        dprintf(1, "failed cannot run %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    t->pid = pid;
    t->fd = fds[0];
    return MT_OK;
}

mt_status app_edit_tuner_start(app_edit_tuner *t, char *msg, size_t n) {
    pthread_mutex_lock(&t->mu);
    bool busy = t->running;
    pthread_mutex_unlock(&t->mu);
    if (busy) {
        snprintf(msg, n, "a tune is running (%s); :tune cancel stops it", base_name(t->dir));
        return mt_seterr(MT_ERR_INVALID, "%s", msg);
    }
    if (t->reader_live) { /* the last run's reader has ended: reap it */
        pthread_join(t->reader, NULL);
        t->reader_live = false;
    }
    mt_status rc = next_dir(t, t->dir, sizeof t->dir);
    if (rc == MT_OK) rc = spawn(t);
    if (rc != MT_OK) {
        snprintf(msg, n, "tune: %s", mt_errmsg());
        return rc;
    }
    pthread_mutex_lock(&t->mu);
    t->running = true;
    t->confirmed = 0;
    pthread_mutex_unlock(&t->mu);
    if (pthread_create(&t->reader, NULL, reader_main, t) != 0) {
        kill(t->pid, SIGTERM);
        close(t->fd);
        waitpid(t->pid, NULL, 0);
        t->pid = 0;
        t->running = false;
        snprintf(msg, n, "tune: cannot start a thread");
        return mt_seterr(MT_ERR_NOMEM, "%s", msg);
    }
    t->reader_live = true;
    snprintf(msg, n, "tuning %s in the background (:tune cancel stops it)", base_name(t->dir));
    return MT_OK;
}

mt_status app_edit_tuner_cancel(app_edit_tuner *t, char *msg, size_t n) {
    pthread_mutex_lock(&t->mu);
    pid_t pid = t->running ? t->pid : 0;
    pthread_mutex_unlock(&t->mu);
    if (pid <= 0) {
        snprintf(msg, n, "no tune is running");
        return mt_seterr(MT_ERR_INVALID, "%s", msg);
    }
    kill(pid, SIGTERM); /* tune stops training, marks the run cancelled, exits */
    snprintf(msg, n, "cancelling %s", base_name(t->dir));
    return MT_OK;
}

mt_status app_edit_tuner_load_model(app_edit_tuner *t, const char *path) {
    if (t->p.sess == NULL) return mt_seterr(MT_ERR_INVALID, "no translation engine is running");
    pthread_mutex_lock(&t->load_mu);
    mt_status rc = app_edit_session_load_model(t->p.sess, path);
    pthread_mutex_unlock(&t->load_mu);
    return rc;
}

bool app_edit_tuner_running(app_edit_tuner *t) {
    pthread_mutex_lock(&t->mu);
    bool r = t->running;
    pthread_mutex_unlock(&t->mu);
    return r;
}

void app_edit_tuner_last(app_edit_tuner *t, char *out, size_t n) {
    pthread_mutex_lock(&t->mu);
    snprintf(out, n, "%s", t->last);
    pthread_mutex_unlock(&t->mu);
}

void app_edit_tuner_confirmed(app_edit_tuner *t) {
    if (t->p.adapt_every <= 0) return;
    pthread_mutex_lock(&t->mu);
    bool due = !t->running && ++t->confirmed >= t->p.adapt_every;
    pthread_mutex_unlock(&t->mu);
    if (!due) return;
    char msg[512];
    mt_clearerr();
    if (app_edit_tuner_start(t, msg, sizeof msg) == MT_OK)
        message(t, MT_LOG_INFO, "%s", msg);
    else
        message(t, MT_LOG_WARN, "%s", msg);
}

void app_edit_tuner_free(app_edit_tuner *t) {
    if (t == NULL) return;
    pthread_mutex_lock(&t->mu);
    pid_t pid = t->running ? t->pid : 0;
    pthread_mutex_unlock(&t->mu);
    if (pid > 0) kill(pid, SIGTERM);
    if (t->reader_live) pthread_join(t->reader, NULL);
    pthread_mutex_destroy(&t->mu);
    pthread_mutex_destroy(&t->load_mu);
    mt_free(t->db);
    mt_free(t->models_dir);
    mt_free(t->base);
    mt_free(t->vocabs[0]);
    mt_free(t->vocabs[1]);
    mt_free(t->extra);
    mt_free(t);
}
