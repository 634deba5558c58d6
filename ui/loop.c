/*
** loop.c: ui_run() and the ui_post_*() queue.
**
** One ui thread polls two descriptors: the terminal (stdin) and the read end
** of a wake-up pipe.  Worker threads never touch the editor: ui_post_*()
** copies its data into an event, appends it to a mutex-protected queue and
** writes one byte to the pipe; the ui thread drains the pipe and applies
** the whole queue in order.  Timers are deadlines folded into the poll
** timeout: the completion-request debounce and message expiry (editor.c),
** and the lone-Esc timeout (keys.c).  The timeout is capped at one second so
** that a missed SIGWINCH is repaired by the next redraw; ncurses turns
** SIGWINCH into KEY_RESIZE, which poll() sees as EINTR.
*/
#define _XOPEN_SOURCE_EXTENDED 1
#define NCURSES_WIDECHAR 1
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <ncurses.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "editor.h"

/* ================================================================ queue */

typedef struct ui_event {
    struct ui_event *next;
    ui_event_kind kind;
    int64_t seg;
    ed_mt *mt;   /* UI_EV_MT                                         */
    char *a, *b; /* completion prefix/text, message, task, model name */
    float *conf; /* completion word confidences                       */
    int32_t n_conf;
    mt_log_level level;
    int64_t done, total;
    ed_gec_result *gec; /* UI_EV_GEC                                       */
} ui_event;

#define QUEUE_MAX_MESSAGES 4096 /* beyond this, log lines are dropped (counted) */

static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static ui_event *q_head, *q_tail;
static int q_len;
static bool q_open;
static int q_wfd = -1;
static int64_t q_dropped;

static void ev_free(ui_event *e) {
    if (e == NULL) return;
    ed_mt_free(e->mt);
    ed_gec_result_free(e->gec);
    mt_free(e->a);
    mt_free(e->b);
    mt_free(e->conf);
    mt_free(e);
}

static bool queue_open(void) {
    pthread_mutex_lock(&q_mu);
    bool open = q_open;
    pthread_mutex_unlock(&q_mu);
    return open;
}

/* Appends e (ownership moves) and wakes the ui thread.  quiet: do not set
** the thread's error message (the log sink must not clobber it). */
static mt_status post(ui_event *e, bool quiet) {
    bool accepted = false, dropped = false;
    pthread_mutex_lock(&q_mu);
    if (q_open) {
        if (e->kind == UI_EV_MESSAGE && q_len >= QUEUE_MAX_MESSAGES) {
            q_dropped++;
            dropped = true;
        } else {
            e->next = NULL;
            if (q_tail)
                q_tail->next = e;
            else
                q_head = e;
            q_tail = e;
            q_len++;
            accepted = true;
            if (q_wfd >= 0) {
                char b = 1;
                ssize_t w = write(q_wfd, &b, 1); /* full pipe: the ui is awake anyway */
                (void)w;
            }
        }
    }
    pthread_mutex_unlock(&q_mu);
    if (accepted) return MT_OK;
    ev_free(e);
    if (dropped) return MT_OK;
    return quiet ? MT_ERR_INVALID : mt_seterr(MT_ERR_INVALID, "ui_post: no editor is running");
}

static ui_event *new_event(ui_event_kind kind) {
    ui_event *e = mt_try_calloc(1, sizeof *e);
    if (e) e->kind = kind;
    return e;
}

static mt_status not_running(void) {
    return mt_seterr(MT_ERR_INVALID, "ui_post: no editor is running");
}

static mt_status oom(const char *what) {
    return mt_seterr(MT_ERR_NOMEM, "ui_post: cannot copy the %s", what);
}

mt_status ui_post_mt(int64_t seg, const ui_mt_result *r) {
    if (!queue_open()) return not_running();
    if (seg < 0) return mt_seterr(MT_ERR_INVALID, "ui_post_mt: bad segment %lld", (long long)seg);
    ui_event *e = new_event(UI_EV_MT);
    if (e == NULL) return oom("translation");
    mt_status rc = ed_mt_copy(r, &e->mt);
    if (rc != MT_OK) {
        ev_free(e);
        return rc;
    }
    e->seg = seg;
    return post(e, false);
}

mt_status ui_post_completion(int64_t seg, const char *prefix, const char *completion,
                             const float *word_conf, int32_t n_words) {
    if (!queue_open()) return not_running();
    if (prefix == NULL || completion == NULL || n_words < 0)
        return mt_seterr(MT_ERR_INVALID, "ui_post_completion: NULL prefix/completion or n_words %d",
                         n_words);
    ui_event *e = new_event(UI_EV_COMPLETION);
    if (e == NULL) return oom("completion");
    e->seg = seg;
    e->a = mt_try_strdup(prefix);
    e->b = mt_try_strdup(completion);
    if (word_conf && n_words > 0) {
        e->conf = mt_try_malloc((size_t)n_words * sizeof(float));
        if (e->conf) memcpy(e->conf, word_conf, (size_t)n_words * sizeof(float));
        e->n_conf = n_words;
    }
    if (e->a == NULL || e->b == NULL || (word_conf && n_words > 0 && e->conf == NULL)) {
        ev_free(e);
        return oom("completion");
    }
    return post(e, false);
}

static mt_status post_message(mt_log_level level, const char *text, bool quiet) {
    if (!queue_open()) return quiet ? MT_ERR_INVALID : not_running();
    ui_event *e = new_event(UI_EV_MESSAGE);
    if (e) e->a = mt_try_strdup(text ? text : "");
    if (e == NULL || e->a == NULL) {
        ev_free(e);
        return quiet ? MT_ERR_NOMEM : oom("message");
    }
    e->level = level;
    return post(e, quiet);
}

mt_status ui_post_message(mt_log_level level, const char *text) {
    return post_message(level, text, false);
}

void ui_log_sink(mt_log_level level, const char *msg, void *user) {
    (void)user;
    post_message(level, msg, true);
}

mt_status ui_post_progress(const char *task, int64_t done, int64_t total) {
    if (!queue_open()) return not_running();
    ui_event *e = new_event(UI_EV_PROGRESS);
    if (e) e->a = mt_try_strdup(task ? task : "");
    if (e == NULL || e->a == NULL) {
        ev_free(e);
        return oom("progress");
    }
    e->done = done;
    e->total = total;
    return post(e, false);
}

mt_status ui_post_model(const char *name) {
    if (!queue_open()) return not_running();
    ui_event *e = new_event(UI_EV_MODEL);
    if (e) e->a = mt_try_strdup(name ? name : "");
    if (e == NULL || e->a == NULL) {
        ev_free(e);
        return oom("model name");
    }
    return post(e, false);
}

mt_status ui_post_gec(int64_t seg, const char *text, const ui_gec_fix *fixes, int32_t n) {
    if (!queue_open()) return not_running();
    ui_event *e = new_event(UI_EV_GEC);
    if (e == NULL) return oom("grammar corrections");
    mt_status rc = ed_gec_result_copy(seg, text, fixes, n, &e->gec);
    if (rc != MT_OK) {
        ev_free(e);
        return rc;
    }
    e->seg = seg;
    return post(e, false);
}

mt_status ui_post_quit(void) {
    if (!queue_open()) return not_running();
    ui_event *e = new_event(UI_EV_QUIT);
    if (e == NULL) return oom("quit request");
    return post(e, false);
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void apply_event(ui_editor *ed, ui_event *e, int64_t now) {
    switch (e->kind) {
    case UI_EV_MT:
        ed_take_mt(ed, e->seg, e->mt);
        e->mt = NULL;
        break;
    case UI_EV_COMPLETION:
        ed_apply_completion(ed, e->seg, e->a, e->b, e->conf, e->n_conf); /* outdated: dropped */
        break;
    case UI_EV_MESSAGE:
        if (e->level >= MT_LOG_INFO) ed_message(ed, e->level, now, "%s", e->a);
        break;
    case UI_EV_PROGRESS: ed_set_progress(ed, e->a, e->done, e->total); break;
    case UI_EV_MODEL:
        if (ed_set_model(ed, e->a) != MT_OK) ed_message(ed, MT_LOG_ERROR, now, "%s", mt_errmsg());
        break;
    case UI_EV_QUIT:
        ed_close(ed, now);
        ed->quit = true;
        break;
    case UI_EV_GEC:
        ed_gec_take(ed, e->gec);
        e->gec = NULL;
        break;
    }
}

/* Takes the whole queue and applies it in order. */
static void drain_queue(ui_editor *ed) {
    pthread_mutex_lock(&q_mu);
    ui_event *e = q_head;
    int64_t dropped = q_dropped;
    q_head = q_tail = NULL;
    q_len = 0;
    q_dropped = 0;
    pthread_mutex_unlock(&q_mu);
    int64_t now = now_ms();
    while (e) {
        ui_event *next = e->next;
        if (!ed->quit) apply_event(ed, e, now);
        ev_free(e);
        e = next;
    }
    if (dropped)
        ed_message(ed, MT_LOG_WARN, now, "%lld engine messages were dropped", (long long)dropped);
}

/* ================================================================= loop */

static void read_keys(ui_editor *ed, ui_keydec *dec) {
    while (!ed->quit) {
        wint_t wc;
        int r = wget_wch(stdscr, &wc);
        if (r == ERR) break;
        int64_t now = now_ms();
        int32_t k[2];
        int n = ui_keydec_feed(dec, r == KEY_CODE_YES, (int32_t)wc, now, k);
        for (int i = 0; i < n; i++)
            ed_key(ed, k[i], now);
    }
}

/* UTF-8 text needs a UTF-8 LC_CTYPE (ncursesw and wcwidth depend on it).
** When the environment sets none, use C.UTF-8.  Returns the previous name
** to restore (malloc'd) or NULL. */
static char *setup_locale(void) {
    const char *cur = setlocale(LC_CTYPE, NULL);
    char *old = cur ? mt_try_strdup(cur) : NULL;
    if (cur && strcmp(cur, "C") != 0 && strcmp(cur, "POSIX") != 0) return old; /* app chose */
    const char *env = setlocale(LC_CTYPE, "");
    const char *cs = nl_langinfo(CODESET);
    if (env == NULL || cs == NULL || strcmp(cs, "UTF-8") != 0) {
        if (setlocale(LC_CTYPE, "C.UTF-8") == NULL) setlocale(LC_CTYPE, env ? "" : "C");
    }
    return old;
}

static void close_queue(int rfd) {
    pthread_mutex_lock(&q_mu);
    ui_event *e = q_head;
    q_head = q_tail = NULL;
    q_len = 0;
    q_dropped = 0;
    q_open = false;
    int wfd = q_wfd;
    q_wfd = -1;
    pthread_mutex_unlock(&q_mu);
    while (e) {
        ui_event *next = e->next;
        ev_free(e);
        e = next;
    }
    if (wfd >= 0) close(wfd);
    if (rfd >= 0) close(rfd);
}

mt_status ui_run(const ui_hooks *hooks, const ui_document *doc, int64_t start_seg) {
    ui_editor *ed = NULL;
    ui_screen *scr = NULL;
    char *old_locale = NULL;
    int pfd[2] = {-1, -1};
    bool opened = false;
    mt_status rc = ed_init(hooks, doc, &ed);
    if (rc != MT_OK) return rc;
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        rc = mt_seterr(MT_ERR_IO, "mtpe edit needs a terminal on stdin and stdout");
        goto fail;
    }
    if (pipe2(pfd, O_NONBLOCK | O_CLOEXEC) != 0) {
        rc = mt_seterr(MT_ERR_IO, "ui: cannot create the wake-up pipe: %s", strerror(errno));
        goto fail;
    }
    pthread_mutex_lock(&q_mu);
    if (!q_open) {
        q_open = opened = true;
        q_wfd = pfd[1];
    }
    pthread_mutex_unlock(&q_mu);
    if (!opened) {
        close(pfd[0]);
        close(pfd[1]);
        rc = mt_seterr(MT_ERR_INVALID, "ui_run: an editor is already running");
        goto fail;
    }
    old_locale = setup_locale();
    ui_keydec dec;
    ui_keydec_init(&dec);
    rc = ui_screen_init(NULL, stdout, stdin, &dec, &scr);
    if (rc != MT_OK) goto fail;
    mt_set_abort_hook(ui_screen_emergency_end);
    mt_log_set(ui_log_sink, NULL);

    ed_open(ed, start_seg, now_ms());
    drain_queue(ed); /* results posted from the segment_changed hook */
    while (!ed->quit) {
        ui_screen_draw(scr, ed);
        int64_t now = now_ms(), dl = ed_deadline(ed), kd = ui_keydec_deadline(&dec);
        if (kd < dl) dl = kd;
        int64_t wait = dl == INT64_MAX ? 1000 : dl - now;
        wait = wait < 0 ? 0 : wait > 1000 ? 1000 : wait;
        struct pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {pfd[0], POLLIN, 0}};
        int pr = poll(fds, 2, (int)wait);
        if (pr < 0 && errno != EINTR) {
            rc = mt_seterr(MT_ERR_IO, "ui: poll failed: %s", strerror(errno));
            ed_close(ed, now_ms());
            break;
        }
        if (pr < 0 || (fds[0].revents & POLLIN)) read_keys(ed, &dec); /* EINTR: KEY_RESIZE */
        if (pr > 0 && (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) && !ed->quit) {
            rc = mt_seterr(MT_ERR_IO, "ui: the terminal went away");
            ed_close(ed, now_ms());
            break;
        }
        if (pr > 0 && (fds[1].revents & POLLIN)) {
            char buf[256];
            while (read(pfd[0], buf, sizeof buf) > 0) {
            }
            drain_queue(ed);
        }
        now = now_ms();
        int32_t k;
        if (ui_keydec_flush(&dec, now, &k)) ed_key(ed, k, now);
        ed_tick(ed, now);
    }

fail:
    if (scr) {
        ui_screen_free(scr);
        mt_log_set(NULL, NULL);
        mt_set_abort_hook(NULL);
    }
    if (opened) close_queue(pfd[0]);
    if (old_locale) {
        setlocale(LC_CTYPE, old_locale);
        mt_free(old_locale);
    }
    ed_free(ed);
    return rc;
}
