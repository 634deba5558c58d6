/*
** cmd_glossary.c: `mtpe glossary`, the term base of the store
** (db/store_glossary.h; files and matching: app/formats/glossary.h).
**
**   mtpe glossary import [--db DB] [--project NAME] [--src-lang L] [--trg-lang L]
**                        [--format auto|tbx|csv|tsv] FILE...
**   mtpe glossary list   [--db DB] [--project NAME] [--src-lang L] [--trg-lang L]
**   mtpe glossary export [--db DB] [--project NAME] [--src-lang L] [--trg-lang L]
**                        [--format auto|tsv|tbx] [-o FILE]
**   mtpe glossary lookup [--db DB] [--project NAME] [--src-lang L] [--trg-lang L] TEXT
**   mtpe glossary clear  [--db DB] [--project NAME]
**
** Projects: --project '' (the default) holds the global entries, which every
** project sees; a named project sees its own and the global ones (list,
** lookup, the editor).  Import, export and clear work on the named
** project's own entries only.  Languages default to en and de, as in `mtpe
** tm`; --tgt-lang is another name of --trg-lang.
**
** Import reads every file first: a bad one (see glossary.h) stops the
** command with one line "FILE:LINE: what" and nothing is imported.  Then
** each file's entries are added in one transaction; entries already there
** are left alone, so importing a file again adds 0.
**
** Output: list prints SOURCE<TAB>TARGET<TAB>NOTE<TAB>CASE<TAB>PROJECT<TAB>
** LANGS (CASE yes/no, PROJECT "*" for the global entries, LANGS "en>de");
** lookup prints one line per occurrence of a source term in TEXT, in text
** order: SOURCE_TERM<TAB>TARGET<TAB>OFFSET<TAB>NOTE (SOURCE_TERM as the
** glossary has it, OFFSET the byte offset of the occurrence in TEXT).  Tabs
** and line breaks inside a field are printed as spaces.
**
** Exit codes: 0 ok (also when lookup finds nothing), 1 failure, 2 usage error.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "app.h"
#include "common.h"
#include "doc.h"
#include "glossary.h"
#include "options.h"
#include "paths.h"
#include "store.h"
#include "store_glossary.h"

#define DB_HELP "the store (default: $XDG_DATA_HOME/mtpe/mtpe.db or ~/.local/share/mtpe/mtpe.db)"
#define PROJECT_HELP "project name ('' : the global entries every project sees)"

#define COMMON_OPTS                                                                                \
    {"db", 0, APP_OPT_STRING, NULL, NULL, DB_HELP},                                                \
        {"project", 'p', APP_OPT_STRING, "", NULL, PROJECT_HELP},                                  \
        {"src-lang", 's', APP_OPT_STRING, "en", NULL, "source language"},                          \
        {"trg-lang", 't', APP_OPT_STRING, "de", NULL, "target language"}, {                        \
        "tgt-lang", 0, APP_OPT_STRING, NULL, NULL, "the same as --trg-lang"                        \
    }

static const app_opt import_opts[] = {
    COMMON_OPTS,
    {"format", 'f', APP_OPT_STRING, "auto", NULL,
     "input format (auto: by suffix .tbx/.xml, .csv, .tsv/.tab/.txt, then content)",
     "auto|tbx|csv|tsv"},
};
static const app_opt list_opts[] = {COMMON_OPTS};
static const app_opt export_opts[] = {
    COMMON_OPTS,
    {"output", 'o', APP_OPT_STRING, NULL, NULL, "write to FILE (default: standard output)"},
    {"format", 'f', APP_OPT_STRING, "auto", NULL,
     "tsv or tbx (auto: tbx when -o ends in .tbx, else tsv)", "auto|tsv|tbx"},
};
static const app_opt lookup_opts[] = {COMMON_OPTS};
static const app_opt terms_opts[] = {
    COMMON_OPTS,
    {"glossary", 'g', APP_OPT_STRING, NULL, NULL,
     "a glossary file (TSV, CSV, TBX) instead of the store's project"},
    {"glossary-max", 0, APP_OPT_INT, "2", NULL, "most terms per line", "1..16"},
};
static const app_opt clear_opts[] = {
    {"db", 0, APP_OPT_STRING, NULL, NULL, DB_HELP},
    {"project", 'p', APP_OPT_STRING, "", NULL, PROJECT_HELP},
};
#define N_OPTS(a) ((int)(sizeof a / sizeof a[0]))

const app_cmd app_glossary_import_cmd = {
    .name = "glossary import",
    .usage = "[--db DB] [--project NAME] [--src-lang L] [--trg-lang L] [--format F] FILE...",
    .about =
        "Imports glossaries: TBX-Basic (the langSets of --src-lang and --trg-lang; every source\n"
        "term with every target term of an entry; descrip/note elements as the note), CSV\n"
        "(RFC 4180) and TSV with the columns source, target, note (optional), case\n"
        "(optional: yes/no, 1/0, true/false, cs/ci; whether the source term's case must\n"
        "match), and an optional header row naming them.  All files are read first: a bad\n"
        "one stops the command with FILE:LINE and nothing is imported.  Entries already in\n"
        "the project are left alone: importing a file again adds nothing.\n",
    .opts = import_opts,
    .n_opts = N_OPTS(import_opts),
    .args = "FILE...",
    .min_args = 1,
    .max_args = -1,
};
const app_cmd app_glossary_list_cmd = {
    .name = "glossary list",
    .usage = "[--db DB] [--project NAME] [--src-lang L] [--trg-lang L]",
    .about = "The entries a project sees (its own and the global ones), one per line:\n"
             "SOURCE<TAB>TARGET<TAB>NOTE<TAB>CASE<TAB>PROJECT<TAB>LANGS (PROJECT * for the\n"
             "global entries, LANGS as en>de).\n",
    .opts = list_opts,
    .n_opts = N_OPTS(list_opts),
};
const app_cmd app_glossary_export_cmd = {
    .name = "glossary export",
    .usage = "[--db DB] [--project NAME] [--src-lang L] [--trg-lang L] [--format tsv|tbx] "
             "[-o FILE]",
    .about = "Writes the project's own entries (--project '': the global ones) as TSV (with\n"
             "a header row source, target, note, case) or TBX-Basic, which `mtpe glossary\n"
             "import` reads back unchanged.\n",
    .opts = export_opts,
    .n_opts = N_OPTS(export_opts),
};
const app_cmd app_glossary_lookup_cmd = {
    .name = "glossary lookup",
    .usage = "[--db DB] [--project NAME] [--src-lang L] [--trg-lang L] TEXT",
    .about = "The glossary's source terms in TEXT, as the editor highlights them (whole\n"
             "words, a plural -s/-es of the last word too, case ignored unless the entry is\n"
             "case-sensitive, the longest term wins where terms overlap), one line per\n"
             "occurrence and target, in text order: SOURCE_TERM<TAB>TARGET<TAB>OFFSET<TAB>\n"
             "NOTE (OFFSET in bytes).\n",
    .opts = lookup_opts,
    .n_opts = N_OPTS(lookup_opts),
    .args = "TEXT",
    .min_args = 1,
    .max_args = 1,
};
const app_cmd app_glossary_terms_cmd = {
    .name = "glossary terms",
    .usage = "[--glossary FILE | --db DB --project NAME] [--glossary-max N] < LINES",
    .about = "For each line of standard input, the target terms that `mtpe translate --glossary`\n"
             "(and the editor) enforce in its translation, TAB-separated, in text order; an\n"
             "empty line when none: one per matched source span, each target once, the\n"
             "longest spans first when there are more than --glossary-max.\n",
    .opts = terms_opts,
    .n_opts = N_OPTS(terms_opts),
};
const app_cmd app_glossary_clear_cmd = {
    .name = "glossary clear",
    .usage = "[--db DB] [--project NAME]",
    .about = "Deletes every entry of the project (--project '': the global entries; other\n"
             "projects' entries stay).\n",
    .opts = clear_opts,
    .n_opts = N_OPTS(clear_opts),
};

/* Opens the store of --db or the default one; create: make it when missing. */
static mt_status open_store(const app_opts *o, bool create, store **s) {
    return app_open_store(o, create, "the editor or `mtpe glossary import` makes it", s);
}

/* --trg-lang, or its other name --tgt-lang; NULL (a usage error) when both. */
static const char *trg_lang(const app_cmd *cmd, const app_opts *o, int *ret) {
    bool t = app_opts_given(o, "trg-lang"), g = app_opts_given(o, "tgt-lang");
    if (t && g) {
        *ret = app_cmd_usage_error(cmd, "--trg-lang and --tgt-lang name the same option");
        return NULL;
    }
    return g ? app_opts_str(o, "tgt-lang") : app_opts_str(o, "trg-lang");
}

static void put_flat(const char *s) {
    for (; *s; s++)
        putchar(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s);
}

/* ---------------------------------------------------------------- import */

static int import_main(int argc, char **argv) {
    const app_cmd *cmd = &app_glossary_import_cmd;
    app_opts *o = NULL;
    int ret = 1;
    if (!app_opts_parse_cmd(cmd, argc, argv, &o, &ret)) return ret;
    ret = 1;
    store *s = NULL;
    const char *tl = trg_lang(cmd, o, &ret);
    if (tl == NULL) {
        app_opts_free(o);
        return ret;
    }
    const char *sl = app_opts_str(o, "src-lang"), *project = app_opts_str(o, "project");
    int fmt = app_gloss_format_from_name(app_opts_str(o, "format"));
    int n = app_opts_nargs(o);
    app_gloss_list *files = mt_try_calloc((size_t)n, sizeof *files);
    app_gloss_format *used = mt_try_calloc((size_t)n, sizeof *used);
    mt_status rc = files && used ? MT_OK : mt_seterr(MT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n && rc == MT_OK; i++)
        rc = app_glossary_read(app_opts_arg(o, i), (app_gloss_format)fmt, sl, tl, &files[i],
                               &used[i]);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe glossary import: %s\n", mt_errmsg());
        fprintf(stderr, "mtpe glossary import: nothing imported\n");
        goto done;
    }
    rc = open_store(o, true, &s);
    for (int i = 0; i < n && rc == MT_OK; i++) {
        app_gloss_list *l = &files[i];
        store_gloss_entry *e = mt_try_calloc((size_t)(l->n > 0 ? l->n : 1), sizeof *e);
        if (e == NULL) {
            rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
            break;
        }
        for (int32_t k = 0; k < l->n; k++)
            e[k] = (store_gloss_entry){.project = project,
                                       .src_lang = sl,
                                       .tgt_lang = tl,
                                       .source = l->v[k].source,
                                       .target = l->v[k].target,
                                       .note = l->v[k].note,
                                       .case_sensitive = l->v[k].case_sensitive,
                                       .origin = app_opts_arg(o, i)};
        int32_t added = 0;
        rc = store_glossary_add(s, e, l->n, &added);
        mt_free(e);
        if (rc != MT_OK) break;
        printf("glossary import: %s: %d entr%s (%s, %s -> %s), %d new, %d already there",
               app_opts_arg(o, i), (int)l->n, l->n == 1 ? "y" : "ies",
               app_gloss_format_name(used[i]), sl, tl, (int)added, (int)(l->n - added));
        if (l->skipped)
            printf(", %lld skipped (other languages or deprecated)", (long long)l->skipped);
        printf("%s%s%s\n", project[0] ? " in project '" : "", project, project[0] ? "'" : "");
    }
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe glossary import: %s\n", mt_errmsg());
        goto done;
    }
    ret = 0;
done:
    for (int i = 0; files && i < n; i++)
        app_gloss_list_free(&files[i]);
    mt_free(files);
    mt_free(used);
    store_close(s);
    app_opts_free(o);
    return ret;
}

/* ------------------------------------------------------------ list, export */

static int list_row(void *user, const store_gloss_entry *e) {
    (void)user;
    put_flat(e->source);
    putchar('\t');
    put_flat(e->target);
    putchar('\t');
    put_flat(e->note);
    printf("\t%s\t", e->case_sensitive ? "yes" : "no");
    put_flat(e->project[0] ? e->project : "*");
    printf("\t%s>%s\n", e->src_lang[0] ? e->src_lang : "*", e->tgt_lang[0] ? e->tgt_lang : "*");
    return 0;
}

static int list_main(int argc, char **argv) {
    const app_cmd *cmd = &app_glossary_list_cmd;
    app_opts *o = NULL;
    store *s = NULL;
    int ret = 1;
    if (!app_opts_parse_cmd(cmd, argc, argv, &o, &ret)) return ret;
    ret = 1;
    const char *tl = trg_lang(cmd, o, &ret);
    if (tl == NULL) goto done;
    ret = 1;
    store_gloss_filter f = {app_opts_str(o, "project"), true, app_opts_str(o, "src-lang"), tl};
    mt_status rc = open_store(o, false, &s);
    if (rc == MT_OK) rc = store_glossary_list(s, &f, list_row, NULL);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe glossary list: %s\n", mt_errmsg());
        goto done;
    }
    ret = 0;
done:
    store_close(s);
    app_opts_free(o);
    return ret;
}

typedef struct export_ctx {
    app_gloss_list l;
    bool tbx;
    const char *src_lang, *tgt_lang;
    mt_status rc;
} export_ctx;

static int export_row(void *user, const store_gloss_entry *e) {
    export_ctx *c = user;
    if (c->l.n == c->l.cap) {
        int32_t cap = c->l.cap ? 2 * c->l.cap : 256;
        app_gloss_entry *v = mt_try_realloc(c->l.v, (size_t)cap * sizeof *v);
        if (v == NULL) {
            c->rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
            return 1;
        }
        c->l.v = v;
        c->l.cap = cap;
    }
    char *s = mt_try_strdup(e->source), *t = mt_try_strdup(e->target), *no = mt_try_strdup(e->note);
    if (!s || !t || !no) {
        mt_free(s);
        mt_free(t);
        mt_free(no);
        c->rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
        return 1;
    }
    c->l.v[c->l.n++] = (app_gloss_entry){s, t, no, e->case_sensitive};
    return 0;
}

static mt_status write_export(FILE *f, void *user) {
    const export_ctx *c = user;
    return c->tbx ? app_glossary_write_tbx(f, c->l.v, c->l.n, c->src_lang, c->tgt_lang)
                  : app_glossary_write_tsv(f, c->l.v, c->l.n);
}

static bool has_suffix(const char *path, const char *suf) {
    size_t n = strlen(path), m = strlen(suf);
    return n >= m && strcasecmp(path + n - m, suf) == 0;
}

static int export_main(int argc, char **argv) {
    const app_cmd *cmd = &app_glossary_export_cmd;
    app_opts *o = NULL;
    store *s = NULL;
    int ret = 1;
    if (!app_opts_parse_cmd(cmd, argc, argv, &o, &ret)) return ret;
    export_ctx c = {0};
    const char *tl = trg_lang(cmd, o, &ret);
    if (tl == NULL) goto done;
    ret = 1;
    const char *out = app_opts_given(o, "output") ? app_opts_str(o, "output") : NULL;
    const char *fmt = app_opts_str(o, "format");
    c.tbx = strcmp(fmt, "auto") != 0 ? !strcmp(fmt, "tbx") : out && has_suffix(out, ".tbx");
    c.src_lang = app_opts_str(o, "src-lang");
    c.tgt_lang = tl;
    store_gloss_filter f = {app_opts_str(o, "project"), false, c.src_lang, tl};
    mt_status rc = open_store(o, false, &s);
    if (rc == MT_OK) {
        rc = store_glossary_list(s, &f, export_row, &c);
        if (rc == MT_ABORTED) rc = c.rc;
    }
    if (rc == MT_OK)
        rc = out ? app_doc_atomic_write(out, write_export, &c) : write_export(stdout, &c);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe glossary export: %s\n", mt_errmsg());
        goto done;
    }
    fprintf(stderr, "glossary export: %d entr%s%s%s\n", (int)c.l.n, c.l.n == 1 ? "y" : "ies",
            out ? " to " : "", out ? out : "");
    ret = 0;
done:
    for (int32_t i = 0; i < c.l.n; i++) {
        mt_free((char *)c.l.v[i].source);
        mt_free((char *)c.l.v[i].target);
        mt_free((char *)c.l.v[i].note);
    }
    mt_free(c.l.v);
    store_close(s);
    app_opts_free(o);
    return ret;
}

/* ---------------------------------------------------------- lookup, clear */

static int lookup_main(int argc, char **argv) {
    const app_cmd *cmd = &app_glossary_lookup_cmd;
    app_opts *o = NULL;
    store *s = NULL;
    app_glossary *g = NULL;
    app_gloss_match *m = NULL;
    int32_t n = 0;
    int ret = 1;
    if (!app_opts_parse_cmd(cmd, argc, argv, &o, &ret)) return ret;
    const char *tl = trg_lang(cmd, o, &ret);
    if (tl == NULL) goto done;
    ret = 1;
    const char *text = app_opts_arg(o, 0);
    mt_status rc = open_store(o, false, &s);
    if (rc == MT_OK)
        rc = app_glossary_load(s, app_opts_str(o, "project"), app_opts_str(o, "src-lang"), tl, &g);
    if (rc == MT_OK) rc = app_glossary_match(g, text, &m, &n);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe glossary lookup: %s\n", mt_errmsg());
        goto done;
    }
    for (int32_t i = 0; i < n; i++) {
        const app_gloss_entry *e = app_glossary_entry(g, m[i].entry);
        put_flat(e->source);
        putchar('\t');
        put_flat(e->target);
        printf("\t%d\t", (int)m[i].start);
        put_flat(e->note);
        putchar('\n');
    }
    if (n == 0)
        fprintf(stderr, "glossary lookup: no term of the glossary (%d entries) in the text\n",
                (int)app_glossary_count(g));
    ret = 0;
done:
    mt_free(m);
    app_glossary_free(g);
    store_close(s);
    app_opts_free(o);
    return ret;
}

static int terms_main(int argc, char **argv) {
    const app_cmd *cmd = &app_glossary_terms_cmd;
    app_opts *o = NULL;
    store *s = NULL;
    app_glossary *g = NULL;
    char *line = NULL;
    size_t cap = 0;
    int ret = 1;
    if (!app_opts_parse_cmd(cmd, argc, argv, &o, &ret)) return ret;
    const char *tl = trg_lang(cmd, o, &ret);
    if (tl == NULL) goto done;
    ret = 1;
    mt_status rc;
    if (app_opts_given(o, "glossary")) {
        rc = app_glossary_load_file(app_opts_str(o, "glossary"), app_opts_str(o, "src-lang"), tl,
                                    &g);
    } else {
        rc = open_store(o, false, &s);
        if (rc == MT_OK)
            rc = app_glossary_load(s, app_opts_str(o, "project"), app_opts_str(o, "src-lang"), tl,
                                   &g);
    }
    int max = (int)app_opts_int(o, "glossary-max");
    for (int64_t ln = 1; rc == MT_OK && app_read_line(stdin, &line, &cap) >= 0; ln++) {
        rc = app_check_utf8(line, strlen(line), "input", ln);
        const char *t[16];
        int n = rc == MT_OK ? app_glossary_constraints(g, line, t, max) : 0;
        if (n < 0) rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
        for (int i = 0; i < n; i++) {
            if (i) putchar('\t');
            put_flat(t[i]);
        }
        if (rc == MT_OK) putchar('\n');
    }
    if (rc == MT_OK && (ferror(stdin) || fflush(stdout) != 0 || ferror(stdout)))
        rc = mt_seterr(MT_ERR_IO, "read or write error");
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe glossary terms: %s\n", mt_errmsg());
        goto done;
    }
    ret = 0;
done:
    free(line);
    app_glossary_free(g);
    store_close(s);
    app_opts_free(o);
    return ret;
}

static int clear_main(int argc, char **argv) {
    const app_cmd *cmd = &app_glossary_clear_cmd;
    app_opts *o = NULL;
    store *s = NULL;
    int ret = 1;
    if (!app_opts_parse_cmd(cmd, argc, argv, &o, &ret)) return ret;
    ret = 1;
    const char *project = app_opts_str(o, "project");
    int64_t n = 0;
    mt_status rc = open_store(o, false, &s);
    if (rc == MT_OK) rc = store_glossary_clear(s, project, &n);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe glossary clear: %s\n", mt_errmsg());
        goto done;
    }
    printf("glossary clear: %lld entr%s deleted (%s%s%s)\n", (long long)n, n == 1 ? "y" : "ies",
           project[0] ? "project '" : "the global entries", project, project[0] ? "'" : "");
    ret = 0;
done:
    store_close(s);
    app_opts_free(o);
    return ret;
}

int app_glossary_main(int argc, char **argv) {
    static const app_subcmd subs[] = {
        {"import", import_main, "import TBX-Basic, CSV and TSV glossaries into a project"},
        {"list", list_main, "the entries a project sees (its own and the global ones)"},
        {"export", export_main, "write a project's entries as TSV or TBX-Basic"},
        {"lookup", lookup_main, "the glossary terms in a text, with their targets"},
        {"terms", terms_main, "the target terms enforced in the MT of each input line"},
        {"clear", clear_main, "delete a project's entries"},
    };
    return app_subcmd_main("glossary",
                           "The glossary: term pairs per project, highlighted in the editor's "
                           "source pane\nand checked by QA.\n",
                           subs, (int)(sizeof subs / sizeof subs[0]), argc, argv);
}
