/*
** cmd_edit.c: `mtpe edit FILE [options]`, the post-editor.
**
**   mtpe edit FILE [-m MODEL... -v VOCABS...] [--db PATH] [-b BEAM]
**             [--completion-beam N] [-n X] [--cpu-threads N] [--lookahead N]
**             [--target FILE] [--src-lang L] [--trg-lang L] [--script FILE]
**             [--save-mt] [--qa confirm|save|off] [--project NAME] [--ape DIR]
**
** FILE is the one positional argument (not right after a list option such
** as -m, which takes every value that follows; "--" ends the options).  Its
** format follows the suffix (.po .pot, .xlf .xliff, .tsv, else plain text);
** a plain text file is the source side, its translations go to --target
** (default: the file name with ".SRC." replaced by ".TRG.", else FILE.TRG),
** Moses style.
** Without -m the default model is used (assets/models/en-de: model.npz and
** vocab.spm); without one the editor opens without machine translation
** (`:model PATH` loads one later).  Vocabularies default to vocab.spm next
** to the model.  --db defaults to $XDG_DATA_HOME/mtpe/mtpe.db.  Saving a PO
** file stamps its header (app/formats/doc.h): Last-Translator is $MTPE_TRANSLATOR
** ("Name <email>"), else $USER.  Saving writes confirmed segments and the
** translator's drafts; MT that nobody edited (pre-translated or merely
** seen) stays out of the file unless --save-mt asks for it as fuzzy
** drafts (PO and XLIFF; a text file cannot mark a draft).
** Spell checking (app/edit/edit_spell.h): the hunspell dictionary of the
** target language, the personal dictionary and glossary of the store.
** Quality checks (app/formats/qa.h), --qa: "confirm" (default) asks for a second
** confirmation of a translation with QA issues and makes :w refuse a PO
** file msgfmt --check would reject (:w! writes it anyway); "save" only the
** latter; "off" neither.  :qa lists the problems in every mode.
** Glossary (`mtpe glossary`): the terms of --project (default '': the global
** entries) and the global ones, for the document's languages, are underlined
** in the source pane and listed under it; QA warns when a term's target is
** missing from the translation; and the MT must contain the targets of the
** terms it finds (lexical constraints of the search, at most --glossary-max
** per translated piece, the longest source terms first; 0: none); not
** completions, which follow what the translator typed.
**
** --ape DIR: an APE model folder (app/ape.h); the workers post-edit each
** MT with it and the alternatives list gets the result labelled "APE"
** (edit_session.h, app_edit_model_spec.ape_dir).  A model that is not an
** APE model (two inputs) stops the editor before it opens, as a bad -m.
**
** The pieces (edit_session.h): the document and the store behind the ui
** hooks (app_edit_ctl), translation workers (app_edit_session) over the
** engine (app_edit_engine), the terminal editor (ui_run).
**
** --script FILE ("-": stdin) runs the same editor state machine without a
** terminal, reading key events from FILE, for tests and scripted sessions.
** One command per line ('#' starts a comment):
**
**   keys NAME...   keys by name: C-a M-2 Enter Tab PgDn Esc F1 x ... (the
**                  names of the help screen)
**   type TEXT      the characters of TEXT (the rest of the line)
**   wait           until the completion debounce fired and every
**                  translation job finished and was applied (30 s at most)
**   wait-mt        until the current segment's MT arrived (30 s at most;
**                  at once when no model was loaded at the start)
**   sleep MS       lets MS milliseconds pass, applying results
**   wait-tune      until the running :tune ended and its result was
**                  applied (10 minutes at most)
**
** It prints one line per durable event to stdout, written with write(2)
** right after the event was committed (so it is there even when the process
** is killed a moment later):
**   confirmed SEG CONFIRMATION_ID HEX_TEXT    (SEG 0-based)
**   saved DOC_ID
** and "message LEVEL TEXT" for engine messages, "status TEXT" when the
** editor's status-line message changes, "quit" at the end.
*/
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "common.h"
#include "doc.h"
#include "edit_session.h"
#include "edit_gec.h"
#include "edit_spell.h"
#include "edit_tm.h"
#include "editor.h"
#include "options.h"
#include "paths.h"
#include "store.h"
#include "ui.h"

static const app_opt edit_opts[] = {
    {"models", 'm', APP_OPT_STRINGS, NULL, NULL,
     "model files (.npz) of an ensemble; default: the installed en-de model"},
    {"vocabs", 'v', APP_OPT_STRINGS, NULL, NULL,
     "vocabularies: source, then target (default: vocab.spm next to the model)"},
    {"db", 0, APP_OPT_STRING, NULL, NULL, "the store (default: $XDG_DATA_HOME/mtpe/mtpe.db)"},
    {"beam-size", 'b', APP_OPT_INT, "6", NULL, "beam size of the MT and its n-best list",
     "1..1000"},
    {"completion-beam", 0, APP_OPT_INT, "3", NULL, "beam size of completions", "1..1000"},
    {"normalize", 'n', APP_OPT_FLOAT, "0.6", NULL, "length normalisation exponent"},
    {"max-length-factor", 0, APP_OPT_FLOAT, "3", NULL,
     "longest translation: this times the source length", "(0..1000"},
    {"cpu-threads", 0, APP_OPT_INT, "1", NULL, "translation worker threads", "1..64"},
    {"lookahead", 0, APP_OPT_INT, "3", NULL,
     "untranslated segments after the current one to pre-translate", "0..1000"},
    {"target", 0, APP_OPT_STRING, NULL, NULL, "plain text documents: the translation file"},
    {"src-lang", 0, APP_OPT_STRING, NULL, NULL, "source language code (default: the file's, en)"},
    {"trg-lang", 0, APP_OPT_STRING, NULL, NULL,
     "target language code (default: the file's, de); also picks the spelling dictionary"},
    {"script", 0, APP_OPT_STRING, NULL, NULL, "read key events from FILE instead of a terminal"},
    {"tune-args", 0, APP_OPT_STRING, "", NULL,
     "extra `mtpe tune` options for :tune, space-separated (--tune-args=\"--max-seconds 30\")"},
    {"adapt-every", 0, APP_OPT_INT, "0", NULL,
     "start a tune (:tune) after every N confirmations (0: only on :tune)", "0..1000000"},
    {"save-mt", 0, APP_OPT_FLAG, NULL, NULL,
     "PO/XLIFF: also save MT that nobody edited or confirmed, as fuzzy drafts"},
    {"qa", 0, APP_OPT_STRING, "confirm", NULL,
     "quality checks: confirm (on confirming and saving), save (:w only) or off",
     "confirm|save|off"},
    {"project", 0, APP_OPT_STRING, "", NULL,
     "glossary project (mtpe glossary): its terms and the global ones are highlighted in "
     "the source and checked by QA ('': the global ones only)"},
    {"gec", 0, APP_OPT_STRING, "", NULL,
     "grammar checking: a GEC model folder (model.npz + vocab.spm, e.g. assets/models/de-gec) "
     "or model file; corrections are underlined after a pause in typing, M-g applies one"},
    {"gec-threshold", 0, APP_OPT_FLOAT, "2.0", NULL,
     "nats a grammar correction must gain over the typed text (mtpe gec --help)"},
    {"glossary-max", 0, APP_OPT_INT, "2", NULL,
     "most glossary terms enforced in the MT of a segment piece (0: none enforced)", "0..16"},
    {"ape", 0, APP_OPT_STRING, "", NULL,
     "APE model folder: its post-edit of each MT is one more alternative, labelled APE"},
};
static const int n_edit_opts = (int)(sizeof edit_opts / sizeof edit_opts[0]);

const app_cmd app_edit_cmd = {
    .name = "edit",
    .usage = "FILE [options]",
    .about = "Post-edit FILE (.po/.pot, .xlf/.xliff, .tsv, or plain text with --target)\n"
             "with live machine translation; every edit goes to the store at once.\n"
             "Keys: F1 in the editor, or the README's section \"The editor\".\n"
             "Misspelled words are underlined (hunspell dictionary of the target language,\n"
             "$MTPE_DICPATH first); F7 lists suggestions, :spell turns checking off.\n"
             "With --gec DIR, grammar corrections are underlined after a pause in typing;\n"
             "M-g applies the one at or after the cursor, M-G dismisses it.\n"
             "Saving a PO file sets PO-Revision-Date, X-Generator and Last-Translator\n"
             "($MTPE_TRANSLATOR, as \"Name <email>\", else $USER) in its header.\n",
    .opts = edit_opts,
    .n_opts = n_edit_opts,
    .args = "FILE",
    .min_args = 1,
    .max_args = 1,
};

static const char *opt_or_null(const app_opts *o, const char *name) {
    return app_opts_given(o, name) ? app_opts_str(o, name) : NULL;
}

/* ----------------------------------------------------------- the model */

typedef struct model_files {
    char models[MT_MAX_MODELS][PATH_MAX];
    char vocabs[MT_MAX_VOCABS][PATH_MAX];
} model_files;

/* Fills spec from -m/-v or the default model.  *have: a model was found. */
static mt_status resolve_model(const app_opts *o, model_files *mf, app_edit_model_spec *spec,
                               bool *have, char *why, size_t why_size) {
    *have = false;
    int nm = app_opts_count(o, "models"), nv = app_opts_count(o, "vocabs");
    if (nm > MT_MAX_MODELS) return mt_seterr(MT_ERR_INVALID, "at most %d models", MT_MAX_MODELS);
    if (nv > MT_MAX_VOCABS)
        return mt_seterr(MT_ERR_INVALID, "at most %d vocabularies", MT_MAX_VOCABS);
    if (nm == 0) {
        char dir[PATH_MAX], looked[2 * PATH_MAX];
        if (!app_default_model_dir(dir, sizeof dir, looked, sizeof looked)) {
            snprintf(why, why_size,
                     "no model given and none installed (looked for model.npz in %s)", looked);
            return MT_OK;
        }
        snprintf(mf->models[0], PATH_MAX, "%.4000s/model.npz", dir);
        nm = 1;
        if (nv == 0) {
            snprintf(mf->vocabs[0], PATH_MAX, "%.4000s/vocab.spm", dir);
            snprintf(mf->vocabs[1], PATH_MAX, "%.4000s/vocab.spm", dir);
        }
    } else {
        for (int i = 0; i < nm; i++)
            snprintf(mf->models[i], PATH_MAX, "%s", app_opts_item(o, "models", i));
    }
    if (nv > 0) {
        for (int i = 0; i < nv; i++)
            snprintf(mf->vocabs[i], PATH_MAX, "%s", app_opts_item(o, "vocabs", i));
    } else if (mf->vocabs[0][0] == '\0') {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", mf->models[0]);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof dir, ".");
        snprintf(mf->vocabs[0], PATH_MAX, "%.4000s/vocab.spm", dir);
        if (!app_is_file(mf->vocabs[0]))
            return mt_seterr(MT_ERR_INVALID,
                             "no vocabularies given (-v SRC TRG) and no %s next to the model",
                             mf->vocabs[0]);
        snprintf(mf->vocabs[1], PATH_MAX, "%s", mf->vocabs[0]);
    }
    if (nv == 0) nv = 2;
    for (int i = 0; i < nm; i++)
        spec->models[i] = mf->models[i];
    for (int i = 0; i < nv; i++)
        spec->vocabs[i] = mf->vocabs[i];
    spec->n_models = nm;
    spec->n_vocabs = nv;
    *have = true;
    return MT_OK;
}

/* ------------------------------------------------------- the document */

/* Default translation file of a plain text document: ".SRC." -> ".TRG." in
** the name, else FILE.TRG. */
static void default_target(const char *file, const char *src, const char *trg, char *out,
                           size_t size) {
    char pat[64];
    snprintf(pat, sizeof pat, ".%s.", src);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    const char *hit = strstr(base, pat);
    if (hit)
        snprintf(out, size, "%.*s.%s.%s", (int)(hit - file), file, trg, hit + strlen(pat));
    else
        snprintf(out, size, "%s.%s", file, trg);
}

static mt_status open_document(const char *file, const app_opts *o, app_doc **out) {
    app_doc_format fmt;
    mt_status rc = app_doc_detect_format(file, &fmt);
    if (rc != MT_OK) return rc;
    if (fmt != APP_DOC_FORMAT_TEXT) return app_doc_open(file, fmt, out);
    char tgt[PATH_MAX];
    const char *t = opt_or_null(o, "target");
    if (t == NULL) {
        const char *sl = opt_or_null(o, "src-lang"), *tl = opt_or_null(o, "trg-lang");
        default_target(file, sl ? sl : "en", tl ? tl : "de", tgt, sizeof tgt);
        t = tgt;
    }
    return app_doc_open_parallel(file, t, out);
}

/* ------------------------------------------------------- script mode */

static void out_line(const char *s) {
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(STDOUT_FILENO, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

static void script_observer(void *user, const char *event, int64_t seg, int64_t id,
                            const char *text) {
    (void)user;
    if (strcmp(event, "confirmed") == 0) {
        size_t n = strlen(text);
        char *line = mt_try_malloc(2 * n + 96);
        if (line == NULL) return;
        int k = snprintf(line, 96, "confirmed %lld %lld ", (long long)seg, (long long)id);
        for (size_t i = 0; i < n; i++)
            k += snprintf(line + k, 3, "%02x", (unsigned char)text[i]);
        line[k++] = '\n';
        line[k] = '\0';
        out_line(line);
        mt_free(line);
    } else {
        char line[64];
        snprintf(line, sizeof line, "%s %lld\n", event, (long long)id);
        out_line(line);
    }
}

/* Events from the workers, applied on the main thread (as ui/loop.c does). */
typedef struct sev {
    struct sev *next;
    ui_event_kind kind;
    int64_t seg;
    ed_mt *mt;
    char *a, *b;
    float *conf;
    int32_t n_conf;
    mt_log_level level;
    int64_t done, total;
} sev;

typedef struct squeue {
    pthread_mutex_t mu;
    sev *head, *tail;
} squeue;

static void sev_free(sev *e) {
    if (e == NULL) return;
    ed_mt_free(e->mt);
    mt_free(e->a);
    mt_free(e->b);
    mt_free(e->conf);
    mt_free(e);
}

static mt_status spush(squeue *q, sev *e) {
    pthread_mutex_lock(&q->mu);
    if (q->tail)
        q->tail->next = e;
    else
        q->head = e;
    q->tail = e;
    pthread_mutex_unlock(&q->mu);
    return MT_OK;
}

static sev *snew(ui_event_kind kind, int64_t seg, const char *a, const char *b) {
    sev *e = mt_try_calloc(1, sizeof *e);
    if (e == NULL) return NULL;
    e->kind = kind;
    e->seg = seg;
    if ((a && (e->a = mt_try_strdup(a)) == NULL) || (b && (e->b = mt_try_strdup(b)) == NULL)) {
        sev_free(e);
        return NULL;
    }
    return e;
}

static mt_status s_mt(void *user, int64_t seg, const ui_mt_result *r) {
    sev *e = snew(UI_EV_MT, seg, NULL, NULL);
    if (e == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
    mt_status rc = ed_mt_copy(r, &e->mt);
    if (rc != MT_OK) {
        sev_free(e);
        return rc;
    }
    return spush(user, e);
}

static mt_status s_completion(void *user, int64_t seg, const char *prefix, const char *text,
                              const float *conf, int32_t n) {
    sev *e = snew(UI_EV_COMPLETION, seg, prefix, text);
    if (e == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
    if (conf && n > 0) {
        e->conf = mt_try_malloc(sizeof(float) * (size_t)n);
        if (e->conf == NULL) {
            sev_free(e);
            return mt_seterr(MT_ERR_NOMEM, "out of memory");
        }
        memcpy(e->conf, conf, sizeof(float) * (size_t)n);
        e->n_conf = n;
    }
    return spush(user, e);
}

static mt_status s_message(void *user, mt_log_level level, const char *text) {
    sev *e = snew(UI_EV_MESSAGE, 0, text, NULL);
    if (e == NULL) return MT_ERR_NOMEM;
    e->level = level;
    return spush(user, e);
}

static mt_status s_progress(void *user, const char *task, int64_t done, int64_t total) {
    sev *e = snew(UI_EV_PROGRESS, 0, task, NULL);
    if (e == NULL) return MT_ERR_NOMEM;
    e->done = done;
    e->total = total;
    return spush(user, e);
}

static mt_status s_model(void *user, const char *name) {
    sev *e = snew(UI_EV_MODEL, 0, name, NULL);
    return e ? spush(user, e) : MT_ERR_NOMEM;
}

static void s_log(mt_log_level level, const char *msg, void *user) { s_message(user, level, msg); }

static void sleep_ms(int64_t ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Applies queued events and fires due timers; returns the events applied. */
static int pump(squeue *q, ui_editor *ed) {
    pthread_mutex_lock(&q->mu);
    sev *e = q->head;
    q->head = q->tail = NULL;
    pthread_mutex_unlock(&q->mu);
    int n = 0;
    int64_t now = app_now_ms();
    while (e) {
        sev *next = e->next;
        n++;
        if (!ed->quit) {
            switch (e->kind) {
            case UI_EV_MT:
                ed_take_mt(ed, e->seg, e->mt);
                e->mt = NULL;
                break;
            case UI_EV_COMPLETION:
                ed_apply_completion(ed, e->seg, e->a, e->b, e->conf, e->n_conf);
                break;
            case UI_EV_MESSAGE: {
                static const char *names[] = {"debug", "info", "warn", "error"};
                if (e->level >= MT_LOG_INFO) {
                    char line[600];
                    snprintf(line, sizeof line, "message %s %.512s\n", names[e->level], e->a);
                    out_line(line);
                    ed_message(ed, e->level, now, "%s", e->a);
                }
                break;
            }
            case UI_EV_PROGRESS: ed_set_progress(ed, e->a, e->done, e->total); break;
            case UI_EV_MODEL: ed_set_model(ed, e->a); break;
            case UI_EV_QUIT:
                ed_close(ed, now);
                ed->quit = true;
                break;
            case UI_EV_GEC: break; /* --script does not check grammar */
            }
        }
        sev_free(e);
        e = next;
    }
    ed_tick(ed, app_now_ms());
    static char shown[ED_MSG_MAX]; /* the status-line message, once per change */
    if (strcmp(shown, ed->msg) != 0) {
        snprintf(shown, sizeof shown, "%s", ed->msg);
        if (shown[0]) {
            char line[ED_MSG_MAX + 16];
            snprintf(line, sizeof line, "status %s\n", shown);
            out_line(line);
        }
    }
    return n;
}

/* Polls until done(ed) or timeout; false on timeout. */
static bool pump_until(squeue *q, ui_editor *ed, app_edit_session *s,
                       bool (*done)(ui_editor *, app_edit_session *), int64_t timeout_ms) {
    int64_t end = app_now_ms() + timeout_ms;
    for (;;) {
        pump(q, ed);
        if (ed->quit || done(ed, s)) return true;
        if (app_now_ms() > end) return false;
        sleep_ms(2);
    }
}

static bool is_idle(ui_editor *ed, app_edit_session *s) {
    if (ed->comp_pending) return false;
    if (s && !app_edit_session_wait_idle(s, 0)) return false;
    return true;
}

static bool has_cur_mt(ui_editor *ed, app_edit_session *s) {
    (void)s;
    return ed->cur < 0 || ed->segs[ed->cur].mt != NULL;
}

static bool always(ui_editor *ed, app_edit_session *s) {
    (void)ed;
    (void)s;
    return true;
}

static bool never(ui_editor *ed, app_edit_session *s) {
    (void)ed;
    (void)s;
    return false;
}

static char *trim(char *s) {
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        s[--n] = '\0';
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* Runs the script; returns the exit code. */
static app_edit_tuner *script_tuner; /* wait-tune's (one script at a time) */

static bool tune_ended(ui_editor *ed, app_edit_session *s) {
    (void)ed, (void)s;
    return script_tuner == NULL || !app_edit_tuner_running(script_tuner);
}

static int run_script(const char *path, const ui_hooks *hooks, const ui_document *doc,
                      int64_t start, app_edit_session *sess, bool mt_on, squeue *q) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "mtpe edit: cannot open script %s: %s\n", path, strerror(errno));
        return 1;
    }
    ui_editor *ed = NULL;
    mt_status rc = ed_init(hooks, doc, &ed);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe edit: %s\n", mt_errmsg());
        if (f != stdin) fclose(f);
        return 1;
    }
    ed_open(ed, start, app_now_ms());
    int ret = 0;
    static char line[8192]; /* one script at a time */
    int64_t lineno = 0;
    while (!ed->quit && fgets(line, sizeof line, f) != NULL) {
        lineno++;
        if (strlen(line) == sizeof line - 1 && line[sizeof line - 2] != '\n') {
            fprintf(stderr, "mtpe edit: %s:%lld: line too long\n", path, (long long)lineno);
            ret = 2;
            goto done;
        }
        char *l = trim(line);
        if (l[0] == '\0' || l[0] == '#') continue;
        char *arg = l + strcspn(l, " \t");
        if (*arg) *arg++ = '\0';
        while (*arg == ' ' || *arg == '\t')
            arg++;
        bool ok = true;
        if (strcmp(l, "keys") == 0) {
            for (char *save = NULL, *k = strtok_r(arg, " \t", &save); k && !ed->quit;
                 k = strtok_r(NULL, " \t", &save)) {
                int32_t key = ui_key_parse(k);
                if (key == UI_KEY_NONE) {
                    fprintf(stderr, "mtpe edit: %s:%lld: unknown key '%s'\n", path,
                            (long long)lineno, k);
                    ret = 2;
                    goto done;
                }
                ed_key(ed, key, app_now_ms());
                pump(q, ed);
            }
        } else if (strcmp(l, "type") == 0) {
            size_t n = strlen(arg);
            for (size_t i = 0; i < n && !ed->quit;) {
                uint32_t cp;
                i += mt_utf8_decode(arg + i, n - i, &cp);
                ed_key(ed, (int32_t)cp, app_now_ms());
                pump(q, ed);
            }
        } else if (strcmp(l, "wait") == 0) {
            ok = pump_until(q, ed, sess, is_idle, 30000);
            pump(q, ed);
        } else if (strcmp(l, "wait-tune") == 0) {
            ok = pump_until(q, ed, sess, tune_ended, 600000);
            if (ok) ok = pump_until(q, ed, sess, is_idle, 30000);
            pump(q, ed);
        } else if (strcmp(l, "wait-mt") == 0) {
            ok = pump_until(q, ed, sess, mt_on ? has_cur_mt : always, 30000);
        } else if (strcmp(l, "sleep") == 0) {
            /* MS: an integer 0..3600000 (an hour), nothing after it */
            char *end = NULL;
            errno = 0;
            long long ms = strtoll(arg, &end, 10);
            while (end != arg && (*end == ' ' || *end == '\t'))
                end++;
            if (end == arg || *end != '\0' || errno == ERANGE || ms < 0 || ms > 3600000) {
                fprintf(stderr,
                        "mtpe edit: %s:%lld: sleep MS: '%s' is not a number of milliseconds "
                        "in 0..3600000\n",
                        path, (long long)lineno, arg);
                ret = 2;
                goto done;
            }
            pump_until(q, ed, sess, never, (int64_t)ms);
        } else {
            fprintf(stderr, "mtpe edit: %s:%lld: unknown command '%s'\n", path, (long long)lineno,
                    l);
            ret = 2;
            goto done;
        }
        if (!ok) {
            fprintf(stderr, "mtpe edit: %s:%lld: timed out waiting\n", path, (long long)lineno);
            ret = 1;
            goto done;
        }
    }
done:
    if (!ed->quit) ed_close(ed, app_now_ms());
    out_line("quit\n");
    if (f != stdin) fclose(f);
    ed_free(ed);
    return ret;
}

/* ---------------------------------------------------------------- main */

/* The TM matches follow the translator: segment_changed (the ctl's) and then
** the matches of the new segment posted again (app_edit_tm_refresh).  One
** editor per process: the wrapped hooks are kept here. */
static ui_hooks tm_inner_hooks;
static app_edit_tm *tm_refresh_of;

static void tm_segment_changed(void *user, int64_t from, const char *draft, int64_t to) {
    if (tm_inner_hooks.segment_changed) tm_inner_hooks.segment_changed(user, from, draft, to);
    if (to >= 0) app_edit_tm_refresh(tm_refresh_of, to);
}

/* Copies the stored path of a document (store_get_document). */
static int stored_path(void *user, const store_document *d) {
    snprintf(user, 4096, "%s", d->path);
    return 0;
}

int app_edit_main(int argc, char **argv) {
    app_opts *o = NULL;
    app_doc *doc = NULL;
    store *st = NULL;
    app_edit_ctl *ctl = NULL;
    app_edit_session *sess = NULL;
    app_edit_engine *eng = NULL;
    app_edit_tuner *tuner = NULL;
    app_edit_tm *tm = NULL;
    char *db = NULL;
    model_files *mf = NULL;
    squeue q = {.head = NULL};
    pthread_mutex_init(&q.mu, NULL);
    int ret = 1;

    mt_status rc;
    if (!app_opts_parse_cmd(&app_edit_cmd, argc, argv, &o, &ret)) goto done;
    ret = 1;
    const char *file = app_opts_arg(o, 0);
    /* (--cpu-threads, --lookahead, --qa: their ranges are in the table) */
    int64_t threads = app_opts_int(o, "cpu-threads"), look = app_opts_int(o, "lookahead");
    const char *qa = app_opts_str(o, "qa");
    const char *script = opt_or_null(o, "script");
    if (script == NULL && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))) {
        fprintf(stderr, "mtpe edit: needs a terminal (or --script FILE)\n");
        ret = 2;
        goto done;
    }

    /* the model first: errors in -m/-v are usage errors, before anything opens */
    mf = mt_try_calloc(1, sizeof *mf);
    if (mf == NULL) {
        fprintf(stderr, "mtpe edit: out of memory\n");
        goto done;
    }
    app_edit_model_spec spec = app_edit_model_default_spec();
    spec.beam_size = (int32_t)app_opts_int(o, "beam-size");
    spec.completion_beam = (int32_t)app_opts_int(o, "completion-beam");
    spec.normalize = (float)app_opts_float(o, "normalize");
    spec.max_length_factor = (float)app_opts_float(o, "max-length-factor");
    bool have_model = false;
    char why[2 * PATH_MAX + 128] = "";
    rc = resolve_model(o, mf, &spec, &have_model, why, sizeof why);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe edit: %s\n", mt_errmsg());
        ret = 2;
        goto done;
    }

    rc = open_document(file, o, &doc);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe edit: %s\n", mt_errmsg());
        goto done;
    }
    const char *dbp = opt_or_null(o, "db");
    if (dbp == NULL) {
        rc = app_default_db_path(true, &db);
        if (rc != MT_OK) {
            fprintf(stderr, "mtpe edit: %s (use --db PATH)\n", mt_errmsg());
            goto done;
        }
        dbp = db;
    }
    rc = store_open(dbp, &st);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe edit: %s\n", mt_errmsg());
        goto done;
    }
    if (!have_model) {
        size_t l = strlen(why);
        snprintf(why + l, sizeof why - l, "; machine translation is off (:model PATH)");
    }
    app_edit_ctl_params cp = {
        .qa_confirm = strcmp(qa, "confirm") == 0,
        .qa_save = strcmp(qa, "off") != 0,
        .src_lang = opt_or_null(o, "src-lang"),
        .trg_lang = opt_or_null(o, "trg-lang"),
        .save = app_doc_default_save_params(),
        .save_mt = app_opts_flag(o, "save-mt"),
        .open_message = have_model ? NULL : why,
        .glossary_project = app_opts_str(o, "project"),
    };
    cp.save.stamp_header = true; /* a translator's save: PO-Revision-Date etc. */
    rc = app_edit_ctl_open(st, doc, &cp, &ctl);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe edit: %s\n", mt_errmsg());
        goto done;
    }
    /* the project's glossary terms are enforced in the MT (the ctl owns
    ** the glossary and outlives the session and its engines) */
    spec.glossary = app_edit_ctl_glossary(ctl);
    spec.glossary_max = (int32_t)app_opts_int(o, "glossary-max");
    spec.ape_dir = app_opts_str(o, "ape")[0] ? app_opts_str(o, "ape") : NULL;
    app_blas_single_threaded(); /* one BLAS thread per worker */
    if (have_model) {
        rc = app_edit_engine_load(&spec, &eng);
        if (rc != MT_OK) {
            fprintf(stderr, "mtpe edit: %s\n", mt_errmsg());
            goto done;
        }
    }
    app_edit_sink sink = app_edit_ui_sink();
    if (script) {
        sink = (app_edit_sink){&q, s_mt, s_completion, s_message, s_progress, s_model};
    } else {
        /* TM matches above the MT alternatives (app/edit/edit_tm.c) */
        char doc_path[4096] = "";
        store_get_document(st, app_edit_ctl_doc_id(ctl), stored_path, doc_path);
        rc = app_edit_tm_open(dbp, doc_path[0] ? doc_path : NULL, app_edit_ctl_document(ctl), sink,
                              &tm);
        if (rc == MT_OK)
            sink = app_edit_tm_sink(tm);
        else
            mt_log(MT_LOG_WARN, "translation memory matches off: %s", mt_errmsg());
    }
    app_edit_session_params sp = app_edit_session_default_params();
    sp.n_workers = (int)threads;
    sp.lookahead = (int)look;
    sp.load = app_edit_engine_load_path;
    sp.load_user = &spec;
    const char *model_name = eng ? eng->name : "no model";
    char name_copy[256];
    snprintf(name_copy, sizeof name_copy, "%s", model_name);
    rc = app_edit_session_init(&sp, &sink, eng, app_edit_ctl_count(ctl),
                               app_edit_ctl_mt_sources(ctl), app_edit_ctl_translated(ctl), &sess);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe edit: %s\n", mt_errmsg());
        goto done;
    }
    eng = NULL; /* the session's */
    app_edit_ctl_attach(ctl, sess);
    if (have_model) {
        char models_dir[PATH_MAX];
        const char *slash = strrchr(dbp, '/');
        if (slash)
            snprintf(models_dir, sizeof models_dir, "%.*s/models", (int)(slash - dbp), dbp);
        else
            snprintf(models_dir, sizeof models_dir, "models");
        app_edit_tuner_params tp = {
            .db_path = dbp,
            .models_dir = models_dir,
            .base_model = spec.models[0],
            .vocabs = {spec.vocabs[0], spec.vocabs[spec.n_vocabs - 1]},
            .sess = sess,
            .sink = sink,
            .auto_switch = true,
            .adapt_every = (int32_t)app_opts_int(o, "adapt-every"),
            .extra_args = app_opts_str(o, "tune-args"),
        };
        rc = app_edit_tuner_init(&tp, &tuner);
        if (rc != MT_OK) {
            fprintf(stderr, "mtpe edit: %s\n", mt_errmsg());
            goto done;
        }
        app_edit_ctl_set_tuner(ctl, tuner);
        script_tuner = tuner;
    }
    ui_hooks hooks = app_edit_ctl_hooks(ctl);
    if (tm) {
        tm_inner_hooks = hooks;
        tm_refresh_of = tm;
        hooks.segment_changed = tm_segment_changed;
    }
    ui_document udoc = *app_edit_ctl_document(ctl);
    udoc.model_name = name_copy;
    /* spell checking of the field in the target language (edit_spell.h) */
    rc = app_edit_spell_open(st, udoc.trg_lang);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe edit: %s\n", mt_errmsg());
        goto done;
    }
    app_edit_spell_set_hooks(&hooks);
    /* grammar checking of the field (edit_gec.h) */
    if (app_opts_str(o, "gec")[0]) {
        app_gec_params gp = app_gec_default_params();
        gp.threshold = (float)app_opts_float(o, "gec-threshold");
        rc = app_edit_gec_open(app_opts_str(o, "gec"), &gp, st, udoc.trg_lang);
        if (rc != MT_OK) {
            fprintf(stderr, "mtpe edit: --gec: %s\n", mt_errmsg());
            ret = 1;
            goto done;
        }
        app_edit_gec_set_hooks(&hooks);
    }

    if (script) {
        app_edit_ctl_set_observer(ctl, script_observer, NULL);
        mt_log_set(s_log, &q);
        ret = run_script(script, &hooks, &udoc, app_edit_ctl_start(ctl), sess, have_model, &q);
        app_edit_tuner_free(tuner); /* before the session: its result may load a model */
        tuner = NULL;
        app_edit_ctl_set_tuner(ctl, NULL);
        app_edit_ctl_flush(ctl);
        app_edit_session_free(sess); /* before the log sink goes: workers may log */
        sess = NULL;
        mt_log_set(NULL, NULL);
    } else {
        rc = ui_run(&hooks, &udoc, app_edit_ctl_start(ctl));
        app_edit_tuner_free(tuner);
        tuner = NULL;
        app_edit_ctl_set_tuner(ctl, NULL);
        app_edit_ctl_flush(ctl);
        app_edit_session_free(sess);
        sess = NULL;
        if (rc != MT_OK) {
            fprintf(stderr, "mtpe edit: %s\n", mt_errmsg());
            goto done;
        }
        ret = 0;
    }
    app_edit_ctl_attach(ctl, NULL);

done:
    app_edit_tuner_free(tuner);
    script_tuner = NULL;
    app_edit_session_free(sess);
    app_edit_tm_free(tm); /* after the session: its workers post through it */
    app_edit_engine_free(eng);
    app_edit_ctl_free(ctl);
    app_edit_gec_close();
    app_edit_spell_close(); /* before the store it reads */
    store_close(st);
    app_doc_free(doc);
    app_opts_free(o);
    mt_free(db);
    mt_free(mf);
    while (q.head) {
        sev *next = q.head->next;
        sev_free(q.head);
        q.head = next;
    }
    pthread_mutex_destroy(&q.mu);
    return ret;
}
