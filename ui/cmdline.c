/*
** cmdline.c: the ':' command line: parsing, history and Tab completion.
** Executing a command is the editor's job (editor.c: exec_cmd), since it
** changes segments and calls hooks.
**
** Grammar (words separated by spaces; the ':' itself is not part of it):
**   w | w! | q | wq | x | q! | qa | help  no argument
**   goto N | N                           N a decimal segment number >= 1
**   find [-s|-t] [-r] [-w] [--] [TEXT]   TEXT: the rest of the line (options
**                                        first; -- ends them)
**   replace [-r] [-i] [-w] [--] OLD NEW  words as a shell splits them: "..."
**                                        or '...' quote spaces; backslash
**                                        escapes \" \' \\ \space, \n newline,
**                                        \t tab; any other \x stays \x (so -r
**                                        sees \. and NEW's \1 back-references)
**   undo
**   model [PATH|NAME]                    PATH: the rest of the line, ~ expanded;
**                                        none: list the models
**   tune [cancel]
**   export tmx|tsv PATH
**   spell [on|off|add WORD]              WORD: the rest of the line, trimmed
** Names of three or more letters may be abbreviated to a unique prefix
** (":go 12", ":mo ~/m.npz", ":exp tmx out.tmx").
*/
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "editor.h"

enum { ARG_NONE = 0, ARG_TEXT = 1, ARG_PATH = 2, ARG_EXPORT = 3 };

static const ui_command_def commands[] = {
    {"w", "w", "save the document", ARG_NONE},
    {"q", "q", "quit (asks when there are unsaved changes)", ARG_NONE},
    {"wq", "wq", "save and quit", ARG_NONE},
    {"x", "x", "save and quit, as :wq", ARG_NONE},
    {"q!", "q!", "quit without saving", ARG_NONE},
    {"goto", "goto N", "go to segment N (also :N)", ARG_TEXT},
    {"find", "find [-s|-t] [-r] [-w] TEXT",
     "next segment containing TEXT, any case (-s sources, -t translations only; -r regex; "
     "-w whole words; no TEXT: search again)",
     ARG_TEXT},
    {"model", "model [PATH|NAME]",
     "translate with the model at PATH or named NAME (tuned-1 ...); none: list them", ARG_PATH},
    {"export", "export tmx|tsv PATH", "export the confirmed segments", ARG_EXPORT},
    {"help", "help", "show this help (as F1)", ARG_NONE},
    {"w!", "w!", "save even what msgfmt would reject (:w refuses and says why)", ARG_NONE},
    {"qa", "qa", "next segment with QA problems (placeholders, line breaks, ...)", ARG_NONE},
    {"tune", "tune [cancel]",
     "fine-tune the model on the confirmed segments in the background (cancel: stop)", ARG_TEXT},
    {"stats", "stats", "segments and words by status, time spent, words/hour, HTER", ARG_NONE},
    {"spell", "spell [on|off|add WORD]",
     "spell checking on or off (none: toggle); add WORD to the personal dictionary", ARG_TEXT},
    {"replace", "replace [-r -i -w] OLD NEW",
     "replace OLD by NEW in the translations, asking at each: y yes, n no, a all remaining, "
     "q stop (-r regex, NEW's \\1 its groups; -i any case; -w whole words; quote spaces: "
     "\"Datei öffnen\")",
     ARG_TEXT},
    {"undo", "undo", "revert the last :replace in every segment (C-z right after it too)",
     ARG_NONE},
};
static const int n_commands = (int)(sizeof commands / sizeof commands[0]);
static const char *const export_formats[] = {"tmx", "tsv"};

const ui_command_def *ui_commands(int *n) {
    *n = n_commands;
    return commands;
}

static const char *skip_spaces(const char *s) {
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* The command named by word[0..n): exact, or a unique prefix of a name of
** three or more letters.  -1: unknown, -2: ambiguous. */
static int find_command(const char *word, size_t n) {
    int found = -1;
    for (int i = 0; i < n_commands; i++) {
        if (strlen(commands[i].name) == n && memcmp(commands[i].name, word, n) == 0) return i;
    }
    for (int i = 0; i < n_commands; i++) {
        if (strlen(commands[i].name) >= 3 && strncmp(commands[i].name, word, n) == 0) {
            if (found >= 0) return -2;
            found = i;
        }
    }
    return found;
}

/* Copies s (trailing spaces trimmed when trim) to out with ~ expanded. */
static mt_status copy_arg(const char *s, bool path, const char *cmd, char out[UI_CMD_ARG_MAX]) {
    size_t n = strlen(s);
    if (path)
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
            n--;
    const char *home = NULL;
    if (path && s[0] == '~' && (n == 1 || s[1] == '/')) {
        home = getenv("HOME");
        if (home == NULL || home[0] == '\0') home = NULL;
    }
    size_t hl = home ? strlen(home) : 0, skip = home ? 1 : 0;
    if (hl + n - skip + 1 > UI_CMD_ARG_MAX)
        return mt_seterr(MT_ERR_INVALID, ":%s: argument longer than %d bytes", cmd,
                         UI_CMD_ARG_MAX - 1);
    if (home) memcpy(out, home, hl);
    memcpy(out + hl, s + skip, n - skip);
    out[hl + n - skip] = '\0';
    return MT_OK;
}

/* Options of :find and :replace at the start of *p ("-r", "-rw", "--"),
** ORed into *flags; allowed: the letters that may appear.  The last word
** read is left in *p when it is not an option. */
static mt_status parse_options(const char **p, const char *cmd, const char *allowed, int *flags) {
    for (;;) {
        const char *w = skip_spaces(*p);
        if (w[0] != '-' || w[1] == '\0' || w[1] == ' ' || w[1] == '\t') return MT_OK;
        if (w[1] == '-' && (w[2] == '\0' || w[2] == ' ' || w[2] == '\t')) {
            *p = skip_spaces(w + 2);
            return MT_OK;
        }
        const char *q = w + 1;
        for (; *q && *q != ' ' && *q != '\t'; q++) {
            int f = *q == 's'   ? UI_FIND_SOURCE
                    : *q == 't' ? UI_FIND_TARGET
                    : *q == 'r' ? UI_FIND_REGEX
                    : *q == 'i' ? UI_FIND_ICASE
                    : *q == 'w' ? UI_FIND_WORD
                                : 0;
            if (*q == 's' && strcmp(cmd, "replace") == 0)
                return mt_seterr(MT_ERR_INVALID,
                                 ":replace changes translations only: sources are read-only");
            if (f == 0 || strchr(allowed, *q) == NULL)
                return mt_seterr(MT_ERR_INVALID,
                                 ":%s: unknown option -%c (%s; -- before a text "
                                 "that starts with -)",
                                 cmd, *q, strcmp(cmd, "find") == 0 ? "-s -t -r -w" : "-r -i -w");
            *flags |= f;
        }
        *p = q;
    }
}

static mt_status parse_find(const char *rest, ui_cmd *out) {
    mt_status rc = parse_options(&rest, "find", "strwi", &out->flags);
    if (rc != MT_OK) return rc;
    if ((out->flags & UI_FIND_SOURCE) && (out->flags & UI_FIND_TARGET))
        out->flags &= ~(UI_FIND_SOURCE | UI_FIND_TARGET); /* both: the default */
    return copy_arg(skip_spaces(rest), false, "find", out->arg);
}

/* One shell-like word of *p into out (cap bytes); *quoted: any quotes. */
static mt_status next_word(const char **p, char *out, size_t cap, bool *got) {
    const char *s = skip_spaces(*p);
    size_t n = 0;
    char q = 0;
    *got = *s != '\0';
    for (; *s && (q || (*s != ' ' && *s != '\t')); s++) {
        char c = *s;
        if (q == 0 && (c == '"' || c == '\'')) {
            q = c;
            continue;
        }
        if (c == q) {
            q = 0;
            continue;
        }
        char two[2];
        size_t k = 1;
        two[0] = c;
        if (c == '\\' && s[1]) {
            char e = *++s;
            if (e == 'n')
                two[0] = '\n';
            else if (e == 't')
                two[0] = '\t';
            else if (e == '"' || e == '\'' || e == '\\' || e == ' ')
                two[0] = e;
            else
                two[1] = e, k = 2;
        }
        if (n + k >= cap)
            return mt_seterr(MT_ERR_INVALID, ":replace: text longer than %d bytes", (int)cap - 1);
        memcpy(out + n, two, k);
        n += k;
    }
    if (q) return mt_seterr(MT_ERR_INVALID, ":replace: missing closing %c", q);
    out[n] = '\0';
    *p = s;
    return MT_OK;
}

static mt_status parse_replace(const char *rest, ui_cmd *out) {
    mt_status rc = parse_options(&rest, "replace", "rtiw", &out->flags);
    if (rc != MT_OK) return rc;
    out->flags &= ~UI_FIND_TARGET; /* -t: the translations, which it is anyway */
    bool got_old, got_new, extra;
    char tail[8];
    if ((rc = next_word(&rest, out->arg, sizeof out->arg, &got_old)) != MT_OK) return rc;
    if ((rc = next_word(&rest, out->arg2, sizeof out->arg2, &got_new)) != MT_OK) return rc;
    if (!got_old || !got_new)
        return mt_seterr(MT_ERR_INVALID, ":replace needs OLD and NEW (quote spaces: :replace "
                                         "\"a b\" \"c d\"; NEW may be \"\")");
    if (next_word(&rest, tail, sizeof tail, &extra) != MT_OK || extra)
        return mt_seterr(MT_ERR_INVALID,
                         ":replace takes two texts, OLD and NEW: quote a text with spaces");
    if (out->arg[0] == '\0') return mt_seterr(MT_ERR_INVALID, ":replace: OLD is empty");
    return MT_OK;
}

mt_status ui_cmd_parse(const char *line, ui_cmd *out) {
    memset(out, 0, sizeof *out);
    const char *p = skip_spaces(line);
    if (*p == ':') p = skip_spaces(p + 1); /* "::w" typed by habit */
    if (*p == '\0') return MT_OK;
    const char *w = p;
    while (*p && *p != ' ' && *p != '\t')
        p++;
    size_t wl = (size_t)(p - w);
    const char *rest = skip_spaces(p);

    if (isdigit((unsigned char)w[0])) { /* :N */
        char *end;
        errno = 0;
        long long v = strtoll(w, &end, 10);
        if (end != p || errno || *rest || v < 1)
            return mt_seterr(MT_ERR_INVALID, "not a segment number: '%.*s'", (int)(p - w), w);
        out->kind = UI_CMD_GOTO;
        out->n = v;
        return MT_OK;
    }
    int ci = find_command(w, wl);
    if (ci == -2) return mt_seterr(MT_ERR_INVALID, "ambiguous command ':%.*s'", (int)wl, w);
    if (ci < 0)
        return mt_seterr(MT_ERR_INVALID, "unknown command ':%.*s' (F1 lists the commands)",
                         (int)(wl > 40 ? 40 : wl), w);
    const ui_command_def *c = &commands[ci];
    static const ui_cmd_kind kinds[] = {
        UI_CMD_WRITE,       UI_CMD_QUIT, UI_CMD_WRITE_QUIT, UI_CMD_WRITE_QUIT, UI_CMD_QUIT_FORCE,
        UI_CMD_GOTO,        UI_CMD_FIND, UI_CMD_MODEL,      UI_CMD_EXPORT,     UI_CMD_HELP,
        UI_CMD_WRITE_FORCE, UI_CMD_QA,   UI_CMD_TUNE,       UI_CMD_STATS,      UI_CMD_SPELL,
        UI_CMD_REPLACE,     UI_CMD_UNDO};
    _Static_assert(sizeof kinds / sizeof kinds[0] == sizeof commands / sizeof commands[0],
                   "one kind per command");
    out->kind = kinds[ci];
    switch (out->kind) {
    case UI_CMD_GOTO: {
        char *end;
        errno = 0;
        if (*rest == '\0') return mt_seterr(MT_ERR_INVALID, ":goto needs a segment number");
        long long v = strtoll(rest, &end, 10);
        if (end == rest || errno || *skip_spaces(end) || v < 1)
            return mt_seterr(MT_ERR_INVALID, ":goto: not a segment number: '%.40s'", rest);
        out->n = v;
        return MT_OK;
    }
    case UI_CMD_FIND: return parse_find(rest, out);
    case UI_CMD_REPLACE: return parse_replace(rest, out);
    case UI_CMD_MODEL: return copy_arg(rest, true, c->name, out->arg);
    case UI_CMD_TUNE: {
        size_t n = strlen(rest);
        while (n > 0 && (rest[n - 1] == ' ' || rest[n - 1] == '\t'))
            n--;
        if (n != 0 && !(n == 6 && memcmp(rest, "cancel", 6) == 0))
            return mt_seterr(MT_ERR_INVALID, ":tune takes nothing or 'cancel'");
        memcpy(out->arg, rest, n);
        out->arg[n] = '\0';
        return MT_OK;
    }
    case UI_CMD_SPELL: {
        size_t n = strlen(rest);
        while (n > 0 && (rest[n - 1] == ' ' || rest[n - 1] == '\t'))
            n--;
        if (n == 0 || (n == 2 && memcmp(rest, "on", 2) == 0) ||
            (n == 3 && memcmp(rest, "off", 3) == 0)) {
            memcpy(out->arg, rest, n);
            out->arg[n] = '\0';
            return MT_OK;
        }
        if (n >= 3 && memcmp(rest, "add", 3) == 0 &&
            (n == 3 || rest[3] == ' ' || rest[3] == '\t')) {
            const char *word = skip_spaces(rest + 3);
            size_t len = (size_t)(word - rest) < n ? n - (size_t)(word - rest) : 0;
            if (len == 0) return mt_seterr(MT_ERR_INVALID, ":spell add needs a WORD");
            if (memchr(word, ' ', len) || memchr(word, '\t', len))
                return mt_seterr(MT_ERR_INVALID, ":spell add takes one word");
            if (len + 5 > UI_CMD_ARG_MAX)
                return mt_seterr(MT_ERR_INVALID, ":spell add: word too long");
            memcpy(out->arg, "add ", 4);
            memcpy(out->arg + 4, word, len);
            out->arg[4 + len] = '\0';
            return MT_OK;
        }
        return mt_seterr(MT_ERR_INVALID, ":spell takes on, off or add WORD");
    }
    case UI_CMD_EXPORT: {
        const char *f = rest;
        while (*rest && *rest != ' ' && *rest != '\t')
            rest++;
        size_t fl = (size_t)(rest - f);
        bool ok = false;
        for (size_t i = 0; i < sizeof export_formats / sizeof export_formats[0]; i++)
            if (fl == strlen(export_formats[i]) && memcmp(f, export_formats[i], fl) == 0) ok = true;
        if (fl == 0) return mt_seterr(MT_ERR_INVALID, ":export needs a format (tmx or tsv)");
        if (!ok)
            return mt_seterr(MT_ERR_INVALID, ":export: unknown format '%.*s' (tmx or tsv)",
                             (int)(fl > 20 ? 20 : fl), f);
        memcpy(out->format, f, fl);
        rest = skip_spaces(rest);
        if (*rest == '\0') return mt_seterr(MT_ERR_INVALID, ":export %s needs a PATH", out->format);
        return copy_arg(rest, true, c->name, out->arg);
    }
    default:
        if (*rest) return mt_seterr(MT_ERR_INVALID, ":%s takes no argument", c->name);
        return MT_OK;
    }
}

/* ================================================================ history */

void ui_hist_init(ui_history *h) { memset(h, 0, sizeof *h); }

void ui_hist_free(ui_history *h) {
    for (int i = 0; i < h->n; i++)
        mt_free(h->items[i]);
    mt_free(h->saved);
    memset(h, 0, sizeof *h);
}

void ui_hist_reset(ui_history *h) {
    h->pos = h->n;
    mt_free(h->saved);
    h->saved = NULL;
}

mt_status ui_hist_add(ui_history *h, const char *line) {
    if (line[0] == '\0') return ED_NOOP;
    if (h->n > 0 && strcmp(h->items[h->n - 1], line) == 0) {
        ui_hist_reset(h);
        return ED_NOOP;
    }
    char *copy = mt_try_strdup(line);
    if (copy == NULL) return mt_seterr(MT_ERR_NOMEM, "history: cannot copy the line");
    if (h->n == UI_HIST_MAX) {
        mt_free(h->items[0]);
        memmove(h->items, h->items + 1, (UI_HIST_MAX - 1) * sizeof h->items[0]);
        h->n--;
    }
    h->items[h->n++] = copy;
    ui_hist_reset(h);
    return MT_OK;
}

mt_status ui_hist_move(ui_history *h, ed_line *l, int dir) {
    if (dir < 0) {
        if (h->pos <= 0) return ED_NOOP;
        if (h->pos == h->n) {
            mt_free(h->saved);
            h->saved = mt_try_strdup(l->text);
            if (h->saved == NULL) return mt_seterr(MT_ERR_NOMEM, "history: cannot save the line");
        }
        h->pos--;
    } else {
        if (h->pos >= h->n) return ED_NOOP;
        h->pos++;
    }
    const char *s = h->pos == h->n ? (h->saved ? h->saved : "") : h->items[h->pos];
    mt_status rc = ed_line_set(l, s, strlen(s), false);
    if (rc == MT_OK && h->pos == h->n) {
        mt_free(h->saved);
        h->saved = NULL;
    }
    return rc;
}

/* ============================================================= completion */

#define MAX_CANDIDATES 256

typedef struct candidate {
    char *name;
    bool is_dir;
} candidate;

typedef struct candidates {
    candidate items[MAX_CANDIDATES];
    int n;
    int total; /* matches seen, including those beyond MAX_CANDIDATES */
} candidates;

static void cand_free(candidates *c) {
    for (int i = 0; i < c->n; i++)
        mt_free(c->items[i].name);
    c->n = 0;
}

static mt_status cand_add(candidates *c, const char *s, bool is_dir) {
    c->total++;
    if (c->n == MAX_CANDIDATES) return MT_OK;
    char *copy = mt_try_strdup(s);
    if (copy == NULL) return mt_seterr(MT_ERR_NOMEM, "completion: out of memory");
    c->items[c->n++] = (candidate){copy, is_dir};
    return MT_OK;
}

static int cmp_cand(const void *a, const void *b) {
    return strcmp(((const candidate *)a)->name, ((const candidate *)b)->name);
}

/* Candidate file names in the directory part of path that start with its
** last component. */
static mt_status path_candidates(const char *path, candidates *c, size_t *base_off) {
    const char *slash = strrchr(path, '/');
    size_t dl = slash ? (size_t)(slash - path) + 1 : 0;
    *base_off = dl;
    const char *base = path + dl;
    char dir[UI_CMD_ARG_MAX];
    if (dl == 0) {
        strcpy(dir, ".");
    } else {
        char typed[UI_CMD_ARG_MAX];
        if (dl >= sizeof typed) return ED_NOOP;
        memcpy(typed, path, dl);
        typed[dl] = '\0';
        if (copy_arg(typed, true, "complete", dir) != MT_OK) return ED_NOOP;
    }
    DIR *d = opendir(dir);
    if (d == NULL) return ED_NOOP;
    size_t bl = strlen(base);
    mt_status rc = MT_OK;
    struct dirent *e;
    while (rc == MT_OK && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (e->d_name[0] == '.' && base[0] != '.') continue;
        if (strncmp(e->d_name, base, bl) != 0) continue;
        char full[UI_CMD_ARG_MAX + 256];
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        struct stat st;
        bool is_dir = stat(full, &st) == 0 && S_ISDIR(st.st_mode);
        rc = cand_add(c, e->d_name, is_dir);
    }
    closedir(d);
    return rc;
}

/* Inserts the completion of word (the last bl bytes of the line, which is
** at its end) from the candidates. */
static mt_status complete_from(ed_line *l, candidates *c, size_t bl, const char *unique_suffix,
                               char *list, size_t size) {
    if (c->n == 0) return ED_NOOP;
    qsort(c->items, (size_t)c->n, sizeof c->items[0], cmp_cand);
    const char *first = c->items[0].name;
    size_t common = strlen(first);
    for (int i = 1; i < c->n; i++) {
        size_t j = 0;
        while (j < common && c->items[i].name[j] == first[j])
            j++;
        common = j;
    }
    /* never cut a UTF-8 character */
    while (common > bl && ((unsigned char)first[common] & 0xC0) == 0x80)
        common--;
    if (c->n > 1 && list && size) {
        size_t o = 0;
        for (int i = 0; i < c->n && o + 1 < size; i++)
            o += (size_t)snprintf(list + o, size - o, "%s%s%s", i ? " " : "", c->items[i].name,
                                  c->items[i].is_dir ? "/" : "");
        if (c->total > c->n && o + 1 < size) snprintf(list + o, size - o, " ...");
    }
    mt_status rc = ED_NOOP;
    if (common > bl) rc = ed_line_insert(l, first + bl, common - bl);
    if (rc != MT_OK && rc != ED_NOOP) return rc;
    if (c->n == 1) {
        const char *suffix = c->items[0].is_dir ? "/" : unique_suffix;
        if (suffix[0]) {
            mt_status r2 = ed_line_insert(l, suffix, strlen(suffix));
            if (r2 != MT_OK) return r2;
            rc = MT_OK;
        }
    }
    return rc;
}

mt_status ui_cmd_complete(ed_line *l, char *list, size_t size) {
    if (list && size) list[0] = '\0';
    l->cur = l->len; /* completes at the end of the line */
    const char *s = l->text, *p = skip_spaces(s);
    candidates c = {0};
    mt_status rc;
    const char *w = p;
    while (*p && *p != ' ' && *p != '\t')
        p++;
    if (*p == '\0') { /* the command name */
        size_t wl = (size_t)(p - w);
        for (int i = 0; i < n_commands; i++)
            if (strncmp(commands[i].name, w, wl) == 0 &&
                (rc = cand_add(&c, commands[i].name, false)) != MT_OK)
                goto done;
        bool args =
            c.n == 1 && commands[find_command(c.items[0].name, strlen(c.items[0].name))].arg;
        rc = complete_from(l, &c, wl, args ? " " : "", list, size);
        goto done;
    }
    int ci = find_command(w, (size_t)(p - w));
    if (ci < 0 || commands[ci].arg < ARG_PATH) return ED_NOOP;
    const char *arg = skip_spaces(p);
    if (commands[ci].arg == ARG_EXPORT) {
        const char *f = arg;
        while (*arg && *arg != ' ' && *arg != '\t')
            arg++;
        if (*arg == '\0') { /* the format */
            size_t fl = (size_t)(arg - f);
            for (size_t i = 0; i < sizeof export_formats / sizeof export_formats[0]; i++)
                if (strncmp(export_formats[i], f, fl) == 0 &&
                    (rc = cand_add(&c, export_formats[i], false)) != MT_OK)
                    goto done;
            rc = complete_from(l, &c, fl, " ", list, size);
            goto done;
        }
        arg = skip_spaces(arg);
    }
    size_t base_off;
    rc = path_candidates(arg, &c, &base_off);
    if (rc == MT_OK) rc = complete_from(l, &c, strlen(arg) - base_off, "", list, size);
done:
    cand_free(&c);
    return rc;
}
