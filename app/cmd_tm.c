/*
** cmd_tm.c: `mtpe tm`, the translation memory of the store (db/store_tm.h).
**
**   mtpe tm import [--db DB] [--src-lang L] [--trg-lang L] FILE...
**   mtpe tm export [--db DB] [-o FILE] [--format tmx|tsv]
**   mtpe tm stats [--db DB]
**   mtpe tm lookup [--db DB] [--min 75] [--max N] [--prev TEXT --next TEXT] TEXT
**
** Import reads translated PO, XLIFF 1.2, TMX 1.4 and TSV (source<TAB>target)
** files; each file becomes one imported document whose segments are all
** confirmed.  Untranslated and fuzzy entries (XLIFF: targets that need
** review) are skipped and counted.  Every file is read before anything is
** written: a bad file (missing, invalid UTF-8, malformed) stops the command
** with one line naming it and nothing imported; each file is then imported
** in one transaction.  A file whose content (hash of its bytes) was imported
** before is left alone, and the command says so.
**
** Export writes every distinct (source, target) pair of the TM; the forms
** of a PO plural entry pair with the source each translates: form 0 with
** the msgid, the others with the msgid_plural (as import reads them).
**
** Lookup prints one line per match, best first: SCORE<TAB>SOURCE<TAB>TARGET,
** line breaks and tabs inside a text shown as spaces.  SCORE is 0..100, or
** 101 for an in-context exact match (the same source, and the same previous
** and next sources as --prev and --next; "" for none, i.e. the first or
** last segment).  Without --prev and --next there is no in-context match.
**
** Exit codes: 0 ok (also when lookup finds nothing), 1 failure, 2 usage error.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "app.h"
#include "corpus_io.h"
#include "doc.h"
#include "options.h"
#include "paths.h"
#include "store.h"
#include "store_tm.h"

#define DB_HELP "the store (default: $XDG_DATA_HOME/mtpe/mtpe.db or ~/.local/share/mtpe/mtpe.db)"

static const app_opt import_opts[] = {
    {"db", 0, APP_OPT_STRING, NULL, NULL, DB_HELP},
    {"src-lang", 's', APP_OPT_STRING, NULL, NULL,
     "source language (default: the file's, else en; TMX: the <tuv> to read as source)"},
    {"trg-lang", 't', APP_OPT_STRING, NULL, NULL,
     "target language (default: the file's, else de; TMX: the <tuv> to read as target)"},
    {"format", 'f', APP_OPT_STRING, "auto", NULL, "input format (auto: by suffix, then content)",
     "auto|po|xliff|tmx|tsv"},
};
static const app_opt export_opts[] = {
    {"db", 0, APP_OPT_STRING, NULL, NULL, DB_HELP},
    {"output", 'o', APP_OPT_STRING, NULL, NULL, "write to FILE (default: standard output)"},
    {"format", 'f', APP_OPT_STRING, "auto", NULL,
     "tmx or tsv (auto: tmx when -o ends in .tmx, else tsv)", "auto|tmx|tsv"},
};
static const app_opt stats_opts[] = {
    {"db", 0, APP_OPT_STRING, NULL, NULL, DB_HELP},
};
static const app_opt lookup_opts[] = {
    {"db", 0, APP_OPT_STRING, NULL, NULL, DB_HELP},
    {"min", 0, APP_OPT_INT, "75", NULL, "lowest score shown", "0..100"},
    {"max", 'n', APP_OPT_INT, "10", NULL, "most matches shown", "1..1000"},
    {"prev", 0, APP_OPT_STRING, NULL, NULL,
     "source of the previous segment (\"\": none), for in-context exact matches"},
    {"next", 0, APP_OPT_STRING, NULL, NULL, "source of the next segment (\"\": none)"},
};
#define N_OPTS(a) ((int)(sizeof a / sizeof a[0]))

const app_cmd app_tm_import_cmd = {
    .name = "tm import",
    .usage = "[--db DB] [--src-lang L] [--trg-lang L] FILE...",
    .about = "Imports translation memories: translated entries of PO, XLIFF 1.2, TMX 1.4 and\n"
             "TSV (source<TAB>target) files become confirmed segments of one imported\n"
             "document per file.  Untranslated and fuzzy entries are skipped (counted).  A\n"
             "file imported before (same content) changes nothing.  All files are read\n"
             "first: a bad one stops the command before anything is imported.\n",
    .opts = import_opts,
    .n_opts = N_OPTS(import_opts),
    .args = "FILE...",
    .min_args = 1,
    .max_args = -1,
};
const app_cmd app_tm_export_cmd = {
    .name = "tm export",
    .usage = "[--db DB] [-o FILE] [--format tmx|tsv]",
    .about = "Writes the translation memory (every confirmed segment of the store, each\n"
             "distinct source/target pair once) as TMX 1.4 or TSV.  TSV turns line breaks\n"
             "and tabs inside a segment into spaces; XLIFF inline tags are removed.\n",
    .opts = export_opts,
    .n_opts = N_OPTS(export_opts),
};
const app_cmd app_tm_stats_cmd = {
    .name = "tm stats",
    .about = "Segments, source words and documents of the translation memory, by origin:\n"
             "imported memories, segments confirmed in the editor, and segments that were\n"
             "translated in the files the editor opened.\n",
    .opts = stats_opts,
    .n_opts = N_OPTS(stats_opts),
};
const app_cmd app_tm_lookup_cmd = {
    .name = "tm lookup",
    .usage = "[--db DB] [--min 75] [--max N] [--prev TEXT --next TEXT] TEXT",
    .about = "Matches of TEXT in the translation memory, best first, one per line:\n"
             "SCORE<TAB>SOURCE<TAB>TARGET.  Scores: 100 identical source; 95-99 a\n"
             "difference only in case, numbers, placeholders or spacing; below, word-level\n"
             "edit distance as a percentage of the longer text; 101 an in-context exact\n"
             "match (same source and same --prev/--next neighbours).\n",
    .opts = lookup_opts,
    .n_opts = N_OPTS(lookup_opts),
    .args = "TEXT",
    .min_args = 1,
    .max_args = 1,
};

/* Opens the store of --db or the default one; create: make it when missing. */
static mt_status open_store(const app_opts *o, bool create, store **s) {
    return app_open_store(o, create, "the editor or `mtpe tm import` makes it", s);
}

/* ---------------------------------------------------------------- import */

typedef struct seg_buf {
    store_segment_in *v;
    int32_t n, cap;
    mt_arena *text; /* copies (TMX) */
} seg_buf;

typedef struct import_file {
    const char *path;
    store_format format;
    char hash[64];
    char *src_lang, *trg_lang;
    app_doc *doc; /* PO, XLIFF, TSV: owns the segment strings */
    seg_buf segs;
    int64_t untranslated, fuzzy, empty, no_lang;
} import_file;

static mt_status seg_push(seg_buf *b, const char *src, const char *ctx, const char *tgt) {
    if (b->n == b->cap) {
        int32_t cap = b->cap ? b->cap * 2 : 256;
        store_segment_in *v = mt_try_realloc(b->v, (size_t)cap * sizeof *v);
        if (v == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = (store_segment_in){
        .source = src, .context = ctx, .target = tgt, .status = STORE_SEG_CONFIRMED};
    return MT_OK;
}

static char *arena_strdup(mt_arena *a, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = mt_arena_alloc(a, n, 1);
    if (p) memcpy(p, s, n);
    return p;
}

static bool blank(const char *s) {
    for (; *s; s++)
        if (!strchr(" \t\r\n", *s)) return false;
    return true;
}

static bool has_suffix(const char *path, const char *suf) {
    size_t n = strlen(path), m = strlen(suf);
    return n >= m && strcasecmp(path + n - m, suf) == 0;
}

static mt_status detect(const char *path, const char *fmt, store_format *out) {
    if (strcmp(fmt, "auto") != 0) {
        *out = !strcmp(fmt, "po")      ? STORE_FORMAT_PO
               : !strcmp(fmt, "xliff") ? STORE_FORMAT_XLIFF
               : !strcmp(fmt, "tmx")   ? STORE_FORMAT_TMX
                                       : STORE_FORMAT_TSV;
        return MT_OK;
    }
    if (has_suffix(path, ".tsv") || has_suffix(path, ".tab")) {
        *out = STORE_FORMAT_TSV;
        return MT_OK;
    }
    app_corpus_kind k;
    mt_status rc = app_corpus_detect(path, &k);
    if (rc != MT_OK) return rc;
    switch (k) {
    case APP_CORPUS_PO: *out = STORE_FORMAT_PO; return MT_OK;
    case APP_CORPUS_XLIFF: *out = STORE_FORMAT_XLIFF; return MT_OK;
    case APP_CORPUS_TMX: *out = STORE_FORMAT_TMX; return MT_OK;
    default:
        return mt_seterr(MT_ERR_UNSUPPORTED,
                         "%s: MO files are not imported (import the PO file it was made from)",
                         path);
    }
}

typedef struct tmx_ctx {
    import_file *f;
    mt_status rc;
} tmx_ctx;

static int tmx_unit(void *user, const char *src, const char *trg) {
    tmx_ctx *c = user;
    import_file *f = c->f;
    if (src == NULL || trg == NULL) {
        f->no_lang++;
        return 0;
    }
    if (blank(src) || blank(trg)) {
        f->empty++;
        return 0;
    }
    char *s = arena_strdup(f->segs.text, src), *t = arena_strdup(f->segs.text, trg);
    c->rc = s && t ? seg_push(&f->segs, s, NULL, t) : mt_seterr(MT_ERR_NOMEM, "out of memory");
    return c->rc != MT_OK;
}

static char *dup_or(const char *a, const char *b) { return mt_try_strdup(a && a[0] ? a : b); }

/* Reads one file into f (nothing written). */
static mt_status read_import(import_file *f, const app_opts *o) {
    char *raw = NULL;
    size_t len = 0;
    mt_status rc = app_doc_read_file(f->path, &raw, &len);
    if (rc != MT_OK) return rc;
    uint64_t h = mt_fnv1a(MT_FNV1A_INIT, raw, len); /* as the editor hashes files */
    mt_free(raw);
    snprintf(f->hash, sizeof f->hash, "fnv1a64:%016llx:%llu", (unsigned long long)h,
             (unsigned long long)len);
    rc = detect(f->path, app_opts_str(o, "format"), &f->format);
    if (rc != MT_OK) return rc;
    const char *want_src = app_opts_given(o, "src-lang") ? app_opts_str(o, "src-lang") : NULL;
    const char *want_trg = app_opts_given(o, "trg-lang") ? app_opts_str(o, "trg-lang") : NULL;
    if (f->format == STORE_FORMAT_TMX) {
        rc = mt_arena_init(1 << 16, &f->segs.text);
        if (rc != MT_OK) return rc;
        f->src_lang = dup_or(want_src, "en");
        f->trg_lang = dup_or(want_trg, "de");
        if (!f->src_lang || !f->trg_lang) return mt_seterr(MT_ERR_NOMEM, "out of memory");
        tmx_ctx c = {f, MT_OK};
        rc = app_tmx_read(f->path, f->src_lang, f->trg_lang, tmx_unit, &c);
        if (rc == MT_ABORTED) rc = c.rc;
        if (rc == MT_OK && f->segs.n == 0 && f->no_lang > 0)
            rc = mt_seterr(MT_ERR_FORMAT,
                           "%s: no translation unit has both languages %s and %s "
                           "(give --src-lang and --trg-lang)",
                           f->path, f->src_lang, f->trg_lang);
        return rc;
    }
    app_doc_format df = f->format == STORE_FORMAT_PO      ? APP_DOC_FORMAT_PO
                        : f->format == STORE_FORMAT_XLIFF ? APP_DOC_FORMAT_XLIFF
                                                          : APP_DOC_FORMAT_TSV;
    rc = app_doc_open(f->path, df, &f->doc);
    if (rc != MT_OK) return rc;
    f->src_lang = dup_or(want_src ? want_src : app_doc_source_lang(f->doc), "en");
    f->trg_lang = dup_or(want_trg ? want_trg : app_doc_target_lang(f->doc), "de");
    if (!f->src_lang || !f->trg_lang) return mt_seterr(MT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < app_doc_count(f->doc); i++) {
        const app_doc_segment *g = app_doc_segment_at(f->doc, i);
        if (g->state == APP_DOC_STATE_DRAFT) {
            f->fuzzy++;
            continue;
        }
        if (g->state != APP_DOC_STATE_CONFIRMED || g->n_targets < 1) {
            f->untranslated++;
            continue;
        }
        for (int k = 0; k < g->n_targets; k++) {
            const char *src = k == 0 || !g->source_plural ? g->source : g->source_plural;
            const char *tgt = g->targets[k];
            if (blank(src) || blank(tgt)) {
                f->empty++;
                continue;
            }
            rc = seg_push(&f->segs, src, g->context, tgt);
            if (rc != MT_OK) return rc;
        }
    }
    return MT_OK;
}

static void free_import(import_file *f) {
    app_doc_free(f->doc);
    mt_arena_free(f->segs.text);
    mt_free(f->segs.v);
    mt_free(f->src_lang);
    mt_free(f->trg_lang);
}

static int import_main(int argc, char **argv) {
    const app_cmd *cmd = &app_tm_import_cmd;
    app_opts *o = NULL;
    int ret = 1;
    if (!app_opts_parse_cmd(cmd, argc, argv, &o, &ret)) return ret;
    ret = 1;
    int n = app_opts_nargs(o);
    store *s = NULL;
    import_file *files = mt_try_calloc((size_t)n, sizeof *files);
    mt_status rc = files ? MT_OK : mt_seterr(MT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n && rc == MT_OK; i++) {
        files[i].path = app_opts_arg(o, i);
        rc = read_import(&files[i], o);
    }
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe tm import: %s\n", mt_errmsg());
        fprintf(stderr, "mtpe tm import: nothing imported\n");
        goto done;
    }
    rc = open_store(o, true, &s);
    int64_t total = 0;
    for (int i = 0; i < n && rc == MT_OK; i++) {
        import_file *f = &files[i];
        if (f->segs.n == 0) { /* no document for a file with nothing translated */
            printf("tm import: %s: no translated entries, nothing imported (untranslated %lld, "
                   "fuzzy %lld, empty %lld)\n",
                   f->path, (long long)f->untranslated, (long long)f->fuzzy, (long long)f->empty);
            continue;
        }
        store_doc_info info = {f->path, f->format, f->src_lang, f->trg_lang, f->hash};
        int64_t doc = 0;
        bool already = false;
        rc = store_tm_import(s, &info, f->segs.v, f->segs.n, &doc, &already);
        if (rc != MT_OK) break;
        if (already) {
            printf("tm import: %s: already in the store (document %lld), nothing changed\n",
                   f->path, (long long)doc);
            continue;
        }
        total += f->segs.n;
        printf("tm import: %s: %d segments imported as document %lld (%s, %s -> %s); skipped: "
               "untranslated %lld, fuzzy %lld, empty %lld",
               f->path, (int)f->segs.n, (long long)doc, store_format_name(f->format), f->src_lang,
               f->trg_lang, (long long)f->untranslated, (long long)f->fuzzy, (long long)f->empty);
        if (f->format == STORE_FORMAT_TMX)
            printf(", without both languages %lld", (long long)f->no_lang);
        printf("\n");
    }
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe tm import: %s\n", mt_errmsg());
        goto done;
    }
    ret = 0;
done:
    for (int i = 0; files && i < n; i++)
        free_import(&files[i]);
    mt_free(files);
    store_close(s);
    app_opts_free(o);
    return ret;
}

/* ---------------------------------------------------------------- export */

typedef struct export_ctx {
    app_doc_tmx_row *rows;
    int64_t n, cap;
    mt_arena *text;
    bool tsv;
    mt_status rc;
} export_ctx;

static int export_row(void *user, const store_tm_row *r) {
    export_ctx *c = user;
    char *src = NULL, *tgt = NULL;
    if (r->format == STORE_FORMAT_XLIFF) {
        c->rc = app_doc_strip_tags(r->source, &src);
        if (c->rc == MT_OK) c->rc = app_doc_strip_tags(r->target, &tgt);
        if (c->rc != MT_OK) {
            mt_free(src);
            return 1;
        }
    }
    char *s2 = arena_strdup(c->text, src ? src : r->source);
    char *t2 = arena_strdup(c->text, tgt ? tgt : r->target);
    char *sl = arena_strdup(c->text, r->src_lang), *tl = arena_strdup(c->text, r->tgt_lang);
    mt_free(src);
    mt_free(tgt);
    if (!s2 || !t2 || !sl || !tl) {
        c->rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
        return 1;
    }
    if (c->tsv) {
        app_corpus_flatten(s2);
        app_corpus_flatten(t2);
    }
    if (blank(s2) || blank(t2)) return 0;
    if (c->n == c->cap) {
        int64_t cap = c->cap ? c->cap * 2 : 1024;
        app_doc_tmx_row *v = mt_try_realloc(c->rows, (size_t)cap * sizeof *v);
        if (v == NULL) {
            c->rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
            return 1;
        }
        c->rows = v;
        c->cap = cap;
    }
    c->rows[c->n++] = (app_doc_tmx_row){s2, t2, sl, tl, r->updated_ms / 1000};
    return 0;
}

static mt_status write_tsv(FILE *f, void *user) {
    const export_ctx *c = user;
    for (int64_t i = 0; i < c->n; i++)
        fprintf(f, "%s\t%s\n", c->rows[i].source, c->rows[i].target);
    return MT_OK;
}

static mt_status write_tmx(FILE *f, void *user) {
    const export_ctx *c = user;
    return app_doc_tmx_fwrite(f, c->rows, c->n);
}

static int export_main(int argc, char **argv) {
    const app_cmd *cmd = &app_tm_export_cmd;
    app_opts *o = NULL;
    store *s = NULL;
    int ret = 1;
    if (!app_opts_parse_cmd(cmd, argc, argv, &o, &ret)) return ret;
    ret = 1;
    const char *out = app_opts_given(o, "output") ? app_opts_str(o, "output") : NULL;
    const char *fmt = app_opts_str(o, "format");
    bool tmx = strcmp(fmt, "auto") != 0 ? !strcmp(fmt, "tmx") : out && has_suffix(out, ".tmx");
    export_ctx c = {.tsv = !tmx};
    mt_status rc = mt_arena_init(1 << 20, &c.text);
    if (rc == MT_OK) rc = open_store(o, false, &s);
    if (rc == MT_OK) {
        rc = store_tm_list(s, export_row, &c);
        if (rc == MT_ABORTED) rc = c.rc;
    }
    if (rc == MT_OK) {
        if (out)
            rc = tmx ? app_doc_tmx_write(out, c.rows, c.n)
                     : app_doc_atomic_write(out, write_tsv, &c);
        else
            rc = tmx ? write_tmx(stdout, &c) : write_tsv(stdout, &c);
    }
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe tm export: %s\n", mt_errmsg());
        goto done;
    }
    fprintf(stderr, "tm export: %lld pairs%s%s\n", (long long)c.n, out ? " to " : "",
            out ? out : "");
    ret = 0;
done:
    mt_free(c.rows);
    mt_arena_free(c.text);
    store_close(s);
    app_opts_free(o);
    return ret;
}

/* ----------------------------------------------------------------- stats */

static int stats_main(int argc, char **argv) {
    app_opts *o = NULL;
    store *s = NULL;
    int ret = 1;
    if (!app_opts_parse_cmd(&app_tm_stats_cmd, argc, argv, &o, &ret)) return ret;
    ret = 1;
    store_tm_stats t;
    mt_status rc = open_store(o, false, &s);
    if (rc == MT_OK) rc = store_tm_get_stats(s, &t);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe tm stats: %s\n", mt_errmsg());
        goto done;
    }
    printf("segments\t%lld\nwords\t%lld\ndocuments\t%lld\n", (long long)t.segments,
           (long long)t.words, (long long)t.documents);
    printf("imported segments\t%lld\nimported words\t%lld\nimported documents\t%lld\n",
           (long long)t.imported_segments, (long long)t.imported_words,
           (long long)t.imported_documents);
    printf("editor confirmed segments\t%lld\neditor confirmed words\t%lld\n",
           (long long)t.editor_segments, (long long)t.editor_words);
    printf("opened translated segments\t%lld\nopened translated words\t%lld\n",
           (long long)t.opened_segments, (long long)t.opened_words);
    printf("index terms\t%lld\n", (long long)t.terms);
    ret = 0;
done:
    store_close(s);
    app_opts_free(o);
    return ret;
}

/* ---------------------------------------------------------------- lookup */

static void put_flat(const char *s) {
    for (; *s; s++)
        putchar(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s);
}

static int print_match(void *user, const store_tm_match *m) {
    int *n = user;
    (*n)++;
    printf("%d\t", m->score);
    put_flat(m->source);
    putchar('\t');
    put_flat(m->target);
    putchar('\n');
    return 0;
}

static int lookup_main(int argc, char **argv) {
    const app_cmd *cmd = &app_tm_lookup_cmd;
    app_opts *o = NULL;
    store *s = NULL;
    int ret = 1;
    if (!app_opts_parse_cmd(cmd, argc, argv, &o, &ret)) return ret;
    ret = 1;
    bool prev = app_opts_given(o, "prev"), next = app_opts_given(o, "next");
    if (prev != next) {
        ret = app_cmd_usage_error(cmd, "--prev and --next go together (\"\" for none)");
        goto done;
    }
    store_tm_query q = {
        .source = app_opts_arg(o, 0),
        .prev = prev ? app_opts_str(o, "prev") : NULL,
        .next = next ? app_opts_str(o, "next") : NULL,
        .min_score = (int)app_opts_int(o, "min"),
        .max_results = (int)app_opts_int(o, "max"),
    };
    int n = 0;
    mt_status rc = open_store(o, false, &s);
    if (rc == MT_OK) rc = store_tm_lookup(s, &q, print_match, &n);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe tm lookup: %s\n", mt_errmsg());
        goto done;
    }
    if (n == 0) fprintf(stderr, "tm lookup: no match scoring %d or more\n", q.min_score);
    ret = 0;
done:
    store_close(s);
    app_opts_free(o);
    return ret;
}

int app_tm_main(int argc, char **argv) {
    static const app_subcmd subs[] = {
        {"import", import_main, "import PO, XLIFF, TMX and TSV files as translation memory"},
        {"export", export_main, "write the translation memory as TMX or TSV"},
        {"stats", stats_main, "segments, words and documents of the translation memory"},
        {"lookup", lookup_main, "exact and fuzzy matches of a text, best first"},
    };
    return app_subcmd_main("tm", "The translation memory: every confirmed segment of the store.\n",
                           subs, (int)(sizeof subs / sizeof subs[0]), argc, argv);
}
