/*
** cmd_corpus.c: `mtpe corpus`, parallel text in and out of mtpe.
**
**   mtpe corpus build -o corpus --src-lang en --trg-lang de a.po b.mo c.xlf d.tmx
**       -> corpus.en, corpus.de (line-aligned), counts on stderr
**   mtpe corpus build --tsv pairs.tsv --src-lang en --trg-lang de --dedup *.po
**   mtpe corpus export --tmx edits.tmx [--db PATH] [--document FILE] [--since TIME]
**   mtpe corpus export --tsv edits.tsv --since 2024-05-01T00:00:00Z
**
** What is kept, dropped and changed is described in app/formats/corpus_io.h (the
** work is done there; this file parses options and prints the counts).
** Exit codes: 0 ok, 1 failure, 2 usage error.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "corpus_io.h"
#include "doc.h"
#include "options.h"
#include "paths.h"
#include "store.h"

static const app_opt build_opts[] = {
    {"output", 'o', APP_OPT_STRING, NULL, NULL,
     "write PREFIX.SRC-LANG and PREFIX.TRG-LANG, one segment per line"},
    {"tsv", 0, APP_OPT_STRING, NULL, NULL, "write source<TAB>target lines to FILE"},
    {"src-lang", 's', APP_OPT_STRING, NULL, NULL, "source language code (e.g. en)"},
    {"trg-lang", 't', APP_OPT_STRING, NULL, NULL, "target language code (e.g. de)"},
    {"include-fuzzy", 0, APP_OPT_FLAG, NULL, NULL,
     "keep fuzzy PO entries and XLIFF targets that need review"},
    {"dedup", 0, APP_OPT_FLAG, NULL, NULL, "drop repeated (source, target) pairs"},
    {"strip-accelerators", 0, APP_OPT_FLAG, NULL, NULL,
     "remove accelerator markers (_File, &Open) as the training corpus did"},
};
static const int n_build_opts = (int)(sizeof build_opts / sizeof build_opts[0]);

static const app_opt export_opts[] = {
    {"tmx", 0, APP_OPT_STRING, NULL, NULL, "write the confirmed segments as TMX 1.4 to FILE"},
    {"tsv", 0, APP_OPT_STRING, NULL, NULL, "write source<TAB>target lines to FILE"},
    {"db", 0, APP_OPT_STRING, NULL, NULL,
     "the store (default: $XDG_DATA_HOME/mtpe/mtpe.db or ~/.local/share/mtpe/mtpe.db)"},
    {"document", 'd', APP_OPT_STRING, NULL, NULL, "only this document (its path, as opened)"},
    {"since", 0, APP_OPT_STRING, NULL, NULL,
     "only segments confirmed at or after TIME (ISO 8601; no zone: local time)"},
    {"src-lang", 's', APP_OPT_STRING, NULL, NULL, "only documents with this source language"},
    {"trg-lang", 't', APP_OPT_STRING, NULL, NULL, "only documents with this target language"},
    {"dedup", 0, APP_OPT_FLAG, NULL, NULL, "drop repeated (source, target) pairs"},
    {"strip-accelerators", 0, APP_OPT_FLAG, NULL, NULL, "remove accelerator markers (_File)"},
    {"history", 0, APP_OPT_FLAG, NULL, NULL,
     "every saved version's translations (default: the final one of each segment)"},
    {"triplets", 0, APP_OPT_STRING, NULL, NULL,
     "write source<TAB>MT shown<TAB>final lines of the confirmed segments that had MT (the "
     "training data of automatic post-editing)"},
};
static const int n_export_opts = (int)(sizeof export_opts / sizeof export_opts[0]);

const app_cmd app_corpus_build_cmd = {
    .name = "corpus build",
    .usage = "(-o PREFIX | --tsv FILE) --src-lang L1 --trg-lang L2 [options] FILES...",
    .about = "Parallel text for training from gettext PO/MO, XLIFF 1.2 and TMX files:\n"
             "translated entries only (fuzzy ones with --include-fuzzy), one pair per plural\n"
             "form; line breaks and tabs inside a segment become spaces, XLIFF inline tags are\n"
             "removed.  Counts go to stderr.\n"
             "FILES: .po/.pot, .mo/.gmo, .xlf/.xliff, .tmx (else detected by content).\n"
             "Files whose header names other languages are skipped with a warning.\n",
    .opts = build_opts,
    .n_opts = n_build_opts,
    .args = "FILES...",
    .min_args = 0, /* checked after the languages and the output, for the message */
    .max_args = -1,
};

const app_cmd app_corpus_export_cmd = {
    .name = "corpus export",
    .usage = "(--tmx FILE | --tsv FILE | --triplets FILE) [--db PATH] [--document FILE] "
             "[--since TIME] [options]",
    .about = "The segments confirmed in the editor's store, of one document or all: the\n"
             "latest confirmed translation of every confirmed segment (TMX keeps line\n"
             "breaks, TSV turns them into spaces).  TIME: 2024-05-01, 2024-05-01T14:30Z,\n"
             "2024-05-01 14:30:00+02:00, ...\n",
    .opts = export_opts,
    .n_opts = n_export_opts,
};

static const char *opt_or_null(const app_opts *o, const char *name) {
    return app_opts_given(o, name) ? app_opts_str(o, name) : NULL;
}

static int build_main(int argc, char **argv) {
    const char **files = NULL;
    int n_files = 0, ret = 1;
    app_opts *o = NULL;
    if (!app_opts_parse_cmd(&app_corpus_build_cmd, argc, argv, &o, &ret)) return ret;
    ret = 1;
    n_files = app_opts_nargs(o);
    files = mt_try_calloc((size_t)n_files + 1, sizeof *files);
    if (files == NULL) {
        fprintf(stderr, "mtpe corpus build: out of memory\n");
        goto done;
    }
    for (int i = 0; i < n_files; i++)
        files[i] = app_opts_arg(o, i);
    mt_status rc;
    app_corpus_build_params p = {
        .files = files,
        .n_files = n_files,
        .src_lang = opt_or_null(o, "src-lang"),
        .trg_lang = opt_or_null(o, "trg-lang"),
        .out_prefix = opt_or_null(o, "output"),
        .tsv_path = opt_or_null(o, "tsv"),
        .include_fuzzy = app_opts_flag(o, "include-fuzzy"),
        .dedup = app_opts_flag(o, "dedup"),
        .strip_accelerators = app_opts_flag(o, "strip-accelerators"),
    };
    const char *missing = !p.src_lang                    ? "--src-lang"
                          : !p.trg_lang                  ? "--trg-lang"
                          : !p.out_prefix && !p.tsv_path ? "-o PREFIX or --tsv FILE"
                          : n_files == 0                 ? "input files"
                                                         : NULL;
    if (missing) {
        ret = app_cmd_usage_error(&app_corpus_build_cmd, "missing %s", missing);
        goto done;
    }
    app_corpus_stats st;
    rc = app_corpus_build(&p, &st);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe corpus build: %s\n", mt_errmsg());
        fprintf(stderr, "mtpe corpus build: nothing written\n");
        ret = rc == MT_ERR_INVALID ? 2 : 1;
        goto done;
    }
    fprintf(stderr, "corpus build: files %lld, entries %lld, pairs %lld\n", (long long)st.files,
            (long long)st.entries, (long long)st.pairs);
    fprintf(stderr,
            "corpus build: skipped: untranslated %lld, fuzzy %lld, obsolete %lld, "
            "no-language %lld, empty %lld, duplicates %lld, other-language files %lld\n",
            (long long)st.untranslated, (long long)st.fuzzy, (long long)st.obsolete,
            (long long)st.no_lang, (long long)st.empty, (long long)st.duplicates,
            (long long)st.files_other_lang);
    if (p.out_prefix)
        fprintf(stderr, "corpus build: wrote %s.%s and %s.%s\n", p.out_prefix, p.src_lang,
                p.out_prefix, p.trg_lang);
    if (p.tsv_path) fprintf(stderr, "corpus build: wrote %s\n", p.tsv_path);
    ret = 0;
done:
    app_opts_free(o);
    mt_free(files);
    return ret;
}

/* --triplets: (source, the best MT the editor showed last, the confirmed
** text) of each confirmed segment that had MT, flattened, by segment. */
typedef struct triplet_ctx {
    FILE *f;
    store *s;
    const char *document;
    int64_t since_ms;
    int64_t rows, no_mt;
} triplet_ctx;

static void put_flat(FILE *f, const char *s) {
    for (; *s; s++)
        fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

static int triplet_row(void *user, const store_confirmed *c) {
    triplet_ctx *t = user;
    if (t->document && strcmp(t->document, c->doc_path) != 0) return 0;
    if (c->mt == NULL || c->mt[0] == '\0') {
        t->no_mt++;
        return 0;
    }
    put_flat(t->f, c->source);
    fputc('\t', t->f);
    put_flat(t->f, c->mt);
    fputc('\t', t->f);
    put_flat(t->f, c->target);
    fputc('\n', t->f);
    t->rows++;
    return 0;
}

/* An app_doc_write_fn: the triplets (written atomically by app_doc_atomic_write). */
static mt_status write_triplets(FILE *f, void *user) {
    triplet_ctx *t = user;
    t->f = f;
    return store_list_confirmed(t->s, 0, t->since_ms, triplet_row, t);
}

static int export_main(int argc, char **argv) {
    app_opts *o = NULL;
    store *s = NULL;
    int ret = 1;
    if (!app_opts_parse_cmd(&app_corpus_export_cmd, argc, argv, &o, &ret)) return ret;
    ret = 1;
    mt_status rc;
    app_corpus_export_params p = {
        .document = opt_or_null(o, "document"),
        .since_ms = INT64_MIN,
        .tmx_path = opt_or_null(o, "tmx"),
        .tsv_path = opt_or_null(o, "tsv"),
        .src_lang = opt_or_null(o, "src-lang"),
        .trg_lang = opt_or_null(o, "trg-lang"),
        .strip_accelerators = app_opts_flag(o, "strip-accelerators"),
        .dedup = app_opts_flag(o, "dedup"),
        .history = app_opts_flag(o, "history"),
    };
    const char *triplets = opt_or_null(o, "triplets");
    if (!p.tmx_path && !p.tsv_path && !triplets) {
        ret = app_cmd_usage_error(&app_corpus_export_cmd,
                                  "missing --tmx FILE, --tsv FILE or --triplets FILE");
        goto done;
    }
    const char *since = opt_or_null(o, "since");
    if (since && (rc = app_parse_iso8601(since, &p.since_ms)) != MT_OK) {
        ret = app_cmd_usage_error(&app_corpus_export_cmd, "--since: %s", mt_errmsg());
        goto done;
    }
    rc = app_open_store(o, false, "the editor creates it; or give --db", &s);
    if (rc == MT_OK && triplets) {
        char *real = p.document ? realpath(p.document, NULL) : NULL; /* the editor's form */
        triplet_ctx t = {.s = s, .document = real ? real : p.document, .since_ms = p.since_ms};
        rc = app_doc_atomic_write(triplets, write_triplets, &t);
        free(real);
        if (rc == MT_OK)
            fprintf(stderr,
                    "corpus export: triplets %lld (confirmed segments without MT left out %lld)\n",
                    (long long)t.rows, (long long)t.no_mt);
        if (rc == MT_OK && !p.tmx_path && !p.tsv_path) {
            ret = 0;
            goto done;
        }
    }
    app_corpus_stats st;
    if (rc == MT_OK) rc = app_corpus_export(s, &p, &st);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe corpus export: %s\n", mt_errmsg());
        goto done;
    }
    fprintf(stderr,
            "corpus export: documents %lld, confirmed segments %lld, pairs %lld "
            "(confirmed before --since %lld, empty %lld, duplicates %lld, "
            "other-language documents %lld, superseded by later versions %lld)\n",
            (long long)st.documents, (long long)st.entries, (long long)st.pairs,
            (long long)st.before_since, (long long)st.empty, (long long)st.duplicates,
            (long long)st.files_other_lang, (long long)st.superseded);
    if (st.pairs == 0) fprintf(stderr, "corpus export: warning: no confirmed segments to export\n");
    ret = 0;
done:
    store_close(s);
    app_opts_free(o);
    return ret;
}

int app_corpus_main(int argc, char **argv) {
    static const app_subcmd subs[] = {
        {"build", build_main, "parallel text from PO/MO, XLIFF and TMX files"},
        {"export", export_main, "the segments confirmed in the editor's store, as TMX or TSV"},
    };
    return app_subcmd_main("corpus", NULL, subs, (int)(sizeof subs / sizeof subs[0]), argc, argv);
}
