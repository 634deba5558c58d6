/*
** cmd_shortlist.c: `mtpe shortlist`, Marian lexical shortlists (formats and
** semantics in models/shortlist.h).
**
**   mtpe shortlist --src C.en --trg C.de --align C.align -o lex.s2t [--t2s lex.t2s]
**       P(t|s) from an aligned corpus, as extract_lex computes it
**   mtpe shortlist --convert lex.s2t [100 100 0] --vocabs src.spm trg.spm --dump lex.bin
**       Marian's binary shortlist, as `marian-conv --shortlist ... --dump` writes it
**   mtpe shortlist --shortlist lex.s2t|lex.bin [first best threshold] --vocabs S T -i IN
**       one line per mini-batch of IN: the sorted target ids the decoder may use
**   mtpe shortlist --info lex.bin
**       the header of a binary shortlist, checksum verified
*/
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "align.h"
#include "app.h"
#include "lex.h"
#include "options.h"
#include "shortlist.h"

static const app_opt sl_opts[] = {
    {"src", 0, APP_OPT_STRING, NULL, NULL, "aligned corpus: source side (plain or .gz)"},
    {"trg", 0, APP_OPT_STRING, NULL, NULL, "aligned corpus: target side"},
    {"align", 0, APP_OPT_STRING, NULL, NULL, "aligned corpus: Pharaoh links i-j per line"},
    {"output", 'o', APP_OPT_STRING, NULL, NULL,
     "lex.s2t to write: \"target source P(target|source)\" per line"},
    {"t2s", 0, APP_OPT_STRING, NULL, NULL, "also lex.t2s: \"source target P(source|target)\""},
    {"convert", 0, APP_OPT_STRINGS, NULL, NULL,
     "LEX [FIRST [BEST [THRESHOLD]]] (100 100 0): read a text lex with marian-conv's import "
     "rules (THRESHOLD is compared with target ids, a Marian quirk)"},
    {"shortlist", 0, APP_OPT_STRINGS, NULL, NULL,
     "LEX [FIRST [BEST [THRESHOLD]]]: load LEX as the decoder does (binary by magic, else text "
     "with Marian's pruning: prob > THRESHOLD); for a binary file FIRST is Marian's check flag"},
    {"vocabs", 'v', APP_OPT_STRINGS, NULL, NULL,
     "source and target vocabularies (.spm, .yml, text)"},
    {"dump", 'd', APP_OPT_STRING, NULL, NULL, "write the binary shortlist (with --convert)"},
    {"dump-shortlist", 0, APP_OPT_STRING, NULL, NULL, "same as --dump (marian-conv's name)"},
    {"input", 'i', APP_OPT_STRING, NULL, NULL,
     "sentences to compute shortlists for (with --shortlist)"},
    {"mini-batch", 0, APP_OPT_INT, "1", NULL, "sentences per shortlist", "1..1000000"},
    {"no-check", 0, APP_OPT_FLAG, NULL, NULL, "do not verify checksum and ids of a binary file"},
    {"info", 0, APP_OPT_STRING, NULL, NULL, "print the header of a binary shortlist"},
};

const app_cmd app_shortlist_cmd = {
    .name = "shortlist",
    .usage = "--src SRC --trg TRG --align ALIGN -o LEX.S2T [--t2s LEX.T2S]\n"
             "--convert LEX.S2T [FIRST [BEST [THRESHOLD]]] --vocabs SV TV\n"
             "  --dump LEX.BIN\n"
             "--shortlist LEX [FIRST [BEST [THRESHOLD]]] --vocabs SV TV\n"
             "  -i INPUT [--mini-batch N]\n"
             "--info LEX.BIN",
    .about = "Lexical shortlists in Marian's formats.  SRC/TRG are tokenized the way the\n"
             "model sees them (SentencePiece pieces separated by spaces for spm models);\n"
             "ALIGN has one line of Pharaoh links i-j per sentence pair (mtpe align).\n",
    .opts = sl_opts,
    .n_opts = (int)(sizeof sl_opts / sizeof sl_opts[0]),
};

typedef struct sl_args {
    const char *src, *trg, *align, *output, *t2s;
    const char *convert, *shortlist, *dump, *input, *info;
    const char *vocabs[2];
    uint64_t first, best;
    double threshold;
    int64_t mini_batch;
    bool check;
    int n_positional; /* values given after the --convert/--shortlist file */
} sl_args;

static bool parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    if (s[0] == '-') return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end) return false;
    *out = v;
    return true;
}

static bool parse_num(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end) return false;
    *out = v;
    return true;
}

static const char *opt_or_null(const app_opts *o, const char *name) {
    return app_opts_given(o, name) ? app_opts_str(o, name) : NULL;
}

/* Reads the values after a --convert/--shortlist path: at most three. */
static int take_positionals(const app_opts *o, const char *name, sl_args *a) {
    int n = app_opts_count(o, name) - 1;
    if (n > 3)
        return app_cmd_usage_error(&app_shortlist_cmd,
                                   "--%s: LEX and at most 3 values, not %d (FIRST BEST THRESHOLD)",
                                   name, n);
    for (int k = 0; k < n; k++) {
        const char *v = app_opts_item(o, name, k + 1);
        bool ok = k == 0   ? parse_u64(v, &a->first)
                  : k == 1 ? parse_u64(v, &a->best)
                           : parse_num(v, &a->threshold);
        if (!ok) return app_cmd_usage_error(&app_shortlist_cmd, "bad shortlist value '%s'", v);
        a->n_positional++;
    }
    return 0;
}

/* Returns 0 to go on, 2 after a usage error (message printed). */
static int check_args(const app_opts *o, sl_args *a) {
    const app_cmd *c = &app_shortlist_cmd;
    a->src = opt_or_null(o, "src");
    a->trg = opt_or_null(o, "trg");
    a->align = opt_or_null(o, "align");
    a->output = opt_or_null(o, "output");
    a->t2s = opt_or_null(o, "t2s");
    a->dump = opt_or_null(o, "dump");
    if (a->dump == NULL) a->dump = opt_or_null(o, "dump-shortlist");
    a->input = opt_or_null(o, "input");
    a->info = opt_or_null(o, "info");
    a->check = !app_opts_flag(o, "no-check");
    a->mini_batch = app_opts_int(o, "mini-batch");
    if (a->mini_batch < 1) return app_cmd_usage_error(c, "--mini-batch wants a positive integer");
    if (app_opts_count(o, "convert") > 0) {
        a->convert = app_opts_item(o, "convert", 0);
        if (take_positionals(o, "convert", a)) return 2;
    }
    if (app_opts_count(o, "shortlist") > 0) {
        a->shortlist = app_opts_item(o, "shortlist", 0);
        if (take_positionals(o, "shortlist", a)) return 2;
    }
    int nv = app_opts_count(o, "vocabs");
    if (nv != 0 && nv != 2) return app_cmd_usage_error(c, "--vocabs needs two vocabularies");
    if (nv == 2) {
        a->vocabs[0] = app_opts_item(o, "vocabs", 0);
        a->vocabs[1] = app_opts_item(o, "vocabs", 1);
    }
    int modes = (a->src || a->trg || a->align) + !!a->convert + !!a->shortlist + !!a->info;
    if (modes != 1)
        return app_cmd_usage_error(c, "give exactly one of --src/--trg/--align, --convert, "
                                      "--shortlist, --info (mtpe shortlist --help)");
    if ((a->src || a->trg || a->align) && (!a->src || !a->trg || !a->align || !a->output))
        return app_cmd_usage_error(c, "extraction needs --src, --trg, --align and -o");
    if ((a->convert || a->shortlist) && !a->vocabs[0])
        return app_cmd_usage_error(c, "--vocabs SRC TRG is required");
    if (a->convert && !a->dump) return app_cmd_usage_error(c, "--convert needs --dump FILE");
    if (a->shortlist && !a->input) return app_cmd_usage_error(c, "--shortlist needs -i INPUT");
    return 0;
}

static int do_extract(const sl_args *a) {
    app_lex *lx = NULL;
    mt_status rc = app_lex_from_files(a->src, a->trg, a->align, &lx);
    if (rc == MT_OK) rc = app_lex_write(lx, true, a->output);
    if (rc == MT_OK && a->t2s) rc = app_lex_write(lx, false, a->t2s);
    if (rc == MT_OK && app_lex_skipped_links(lx) > 0)
        mt_log(MT_LOG_WARN, "shortlist: %lld alignment links outside their sentence skipped",
               (long long)app_lex_skipped_links(lx));
    app_lex_free(lx);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe shortlist: %s\n", mt_errmsg());
        return 1;
    }
    return 0;
}

static int do_info(const sl_args *a) {
    mt_shortlist *sl = NULL;
    if (mt_shortlist_read(a->info, a->check, 0, &sl) != MT_OK) {
        fprintf(stderr, "mtpe shortlist: %s\n", mt_errmsg());
        return 1;
    }
    printf("firstNum %" PRIu64 "\nbestNum %" PRIu64 "\nsource rows %" PRIu64 "\nentries %" PRIu64
           "\nchecksum %016" PRIx64 "%s\n",
           sl->first_num, sl->best_num, sl->n_rows, sl->offsets[sl->n_rows],
           mt_shortlist_checksum(sl->blob, sl->blob_size), a->check ? " (verified)" : "");
    mt_shortlist_free(sl);
    return 0;
}

/* Generates one shortlist per mini-batch of the input lines and prints its ids. */
static mt_status show(const sl_args *a, const mt_shortlist *sl, const mt_vocab *sv,
                      const mt_vocab *tv) {
    char *buf = NULL;
    size_t len = 0, pos = 0;
    int32_t *batch = NULL, *ids = NULL, *out = NULL;
    int64_t nb = 0, cap = 1024, lines = 0;
    mt_shortlist_gen *g = NULL;
    bool shared = strcmp(a->vocabs[0], a->vocabs[1]) == 0;
    mt_status rc = mt_text_read_all(a->input, &buf, &len);
    if (rc != MT_OK) return rc;
    rc = mt_shortlist_gen_init(sl, mt_vocab_size(sv), mt_vocab_size(tv), shared, &g);
    if (rc != MT_OK) goto done;
    batch = mt_try_malloc((size_t)cap * sizeof *batch);
    out = mt_try_malloc((size_t)mt_vocab_size(tv) * sizeof *out);
    if (batch == NULL || out == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "no memory");
        goto done;
    }
    for (;;) {
        bool have = pos < len;
        if (have) {
            const char *s = buf + pos;
            char *nl = memchr(s, '\n', len - pos);
            size_t n = nl ? (size_t)(nl - s) : len - pos;
            pos += n + (nl ? 1 : 0);
            if (n > 0 && s[n - 1] == '\r') n--;
            buf[(size_t)(s - buf) + n] = '\0';
            int64_t k;
            rc = mt_vocab_encode(sv, s, MT_VOCAB_ADD_EOS, &ids, &k);
            if (rc != MT_OK) {
                mt_errprefix(rc, "%s:%lld", a->input, (long long)lines + 1);
                goto done;
            }
            if (nb + k > cap) {
                while (nb + k > cap)
                    cap *= 2;
                int32_t *nbuf = mt_try_realloc(batch, (size_t)cap * sizeof *nbuf);
                if (nbuf == NULL) {
                    rc = mt_seterr(MT_ERR_NOMEM, "no memory");
                    goto done;
                }
                batch = nbuf;
            }
            memcpy(batch + nb, ids, (size_t)k * sizeof *ids);
            nb += k;
            mt_free(ids);
            ids = NULL;
            lines++;
        }
        if ((have && lines % a->mini_batch == 0) || (!have && nb > 0)) {
            int32_t m = mt_shortlist_gen_run(g, batch, nb, out);
            for (int32_t q = 0; q < m; q++)
                printf(q ? " %d" : "%d", (int)out[q]);
            putchar('\n');
            nb = 0;
        }
        if (!have) break;
    }
    if (fflush(stdout) != 0) rc = mt_seterr(MT_ERR_IO, "cannot write to stdout");
done:
    mt_free(buf);
    mt_free(batch);
    mt_free(ids);
    mt_free(out);
    mt_shortlist_gen_free(g);
    return rc;
}

static int do_vocab_modes(const sl_args *a) {
    mt_vocab *sv = NULL, *tv = NULL;
    mt_shortlist *sl = NULL;
    mt_status rc = mt_vocab_load(a->vocabs[0], 0, &sv);
    if (rc == MT_OK) rc = mt_vocab_load(a->vocabs[1], 0, &tv);
    if (rc != MT_OK) goto done;
    if (a->convert) {
        rc = mt_shortlist_load_text(a->convert, sv, tv, a->first, a->best, (float)a->threshold,
                                    MT_SL_BINARY, &sl);
        if (rc == MT_OK) rc = mt_shortlist_write(sl, a->dump);
        if (rc == MT_OK)
            mt_log(MT_LOG_INFO,
                   "shortlist: wrote %s (%" PRIu64 " source rows, %" PRIu64 " entries)", a->dump,
                   sl->n_rows, sl->offsets[sl->n_rows]);
    } else {
        /* Marian: for a binary file the value after the path is the check flag */
        bool check = a->check;
        if (a->n_positional > 0 && mt_shortlist_is_binary(a->shortlist))
            check = check && a->first != 0;
        rc = mt_shortlist_load(a->shortlist, sv, tv, a->first, a->best, (float)a->threshold, check,
                               &sl);
        if (rc == MT_OK) rc = show(a, sl, sv, tv);
    }
done:
    if (rc != MT_OK) fprintf(stderr, "mtpe shortlist: %s\n", mt_errmsg());
    mt_shortlist_free(sl);
    mt_vocab_free(sv);
    mt_vocab_free(tv);
    return rc == MT_OK ? 0 : 1;
}

int app_shortlist_main(int argc, char **argv) {
    sl_args a;
    memset(&a, 0, sizeof a);
    a.first = 100;
    a.best = 100;
    app_opts *o = NULL;
    int ret;
    if (!app_opts_parse_cmd(&app_shortlist_cmd, argc, argv, &o, &ret)) return ret;
    ret = check_args(o, &a);
    if (ret == 0) ret = a.info ? do_info(&a) : a.src ? do_extract(&a) : do_vocab_modes(&a);
    app_opts_free(o);
    return ret;
}
