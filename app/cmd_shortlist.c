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
#include "shortlist.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: mtpe shortlist --src SRC --trg TRG --align ALIGN -o LEX.S2T [--t2s LEX.T2S]\n"
            "       mtpe shortlist --convert LEX.S2T [FIRST [BEST [THRESHOLD]]] --vocabs SV TV\n"
            "                      --dump LEX.BIN\n"
            "       mtpe shortlist --shortlist LEX [FIRST [BEST [THRESHOLD]]] --vocabs SV TV\n"
            "                      -i INPUT [--mini-batch N]\n"
            "       mtpe shortlist --info LEX.BIN\n"
            "\n"
            "Lexical shortlists in Marian's formats.  SRC/TRG are tokenized the way the\n"
            "model sees them (SentencePiece pieces separated by spaces for spm models);\n"
            "ALIGN has one line of Pharaoh links i-j per sentence pair (mtpe align).\n"
            "\n"
            "options:\n"
            "  --src FILE, --trg FILE, --align FILE   aligned corpus (plain or .gz)\n"
            "  -o, --output FILE      lex.s2t: \"target source P(target|source)\" per line\n"
            "  --t2s FILE             also lex.t2s: \"source target P(source|target)\"\n"
            "  --convert LEX ...      read a text lex (with marian-conv's import rules:\n"
            "                         THRESHOLD is compared with target ids, a Marian quirk)\n"
            "  --shortlist LEX ...    load LEX as the decoder does (binary by magic, else\n"
            "                         text with Marian's pruning: prob > THRESHOLD); for a\n"
            "                         binary file the first value is Marian's check flag\n"
            "  --first N, --best N, --threshold X   instead of the positional values\n"
            "                         (defaults 100 100 0)\n"
            "  -v, --vocabs SV TV     source and target vocabularies (.spm, .yml, text)\n"
            "  -d, --dump FILE        write the binary shortlist (with --convert)\n"
            "  -i, --input FILE       sentences to compute shortlists for (with --shortlist)\n"
            "  --mini-batch N         sentences per shortlist (1)\n"
            "  --no-check             do not verify checksum and ids of a binary file\n"
            "  --info FILE            print the header of a binary shortlist\n"
            "  -h, --help             this text\n");
}

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

static bool is_value(const char *s) { return s != NULL && s[0] != '-'; }

/* Reads up to three positional values after a --convert/--shortlist path. */
static int take_positionals(int argc, char **argv, int *i, sl_args *a) {
    for (int k = 0; k < 3 && is_value(*i + 1 < argc ? argv[*i + 1] : NULL); k++) {
        const char *v = argv[++*i];
        bool ok = k == 0   ? parse_u64(v, &a->first)
                  : k == 1 ? parse_u64(v, &a->best)
                           : parse_num(v, &a->threshold);
        if (!ok) {
            fprintf(stderr, "mtpe shortlist: bad shortlist value '%s'\n", v);
            return 2;
        }
        a->n_positional++;
    }
    return 0;
}

static int parse_args(int argc, char **argv, sl_args *a) {
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        const char **dst = NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage(stdout);
            return 1;
        }
        if (!strcmp(o, "--src"))
            dst = &a->src;
        else if (!strcmp(o, "--trg"))
            dst = &a->trg;
        else if (!strcmp(o, "--align"))
            dst = &a->align;
        else if (!strcmp(o, "-o") || !strcmp(o, "--output"))
            dst = &a->output;
        else if (!strcmp(o, "--t2s"))
            dst = &a->t2s;
        else if (!strcmp(o, "-d") || !strcmp(o, "--dump") || !strcmp(o, "--dump-shortlist"))
            dst = &a->dump;
        else if (!strcmp(o, "-i") || !strcmp(o, "--input"))
            dst = &a->input;
        else if (!strcmp(o, "--info"))
            dst = &a->info;
        if (dst != NULL) {
            if (val == NULL) {
                fprintf(stderr, "mtpe shortlist: %s needs a value\n", o);
                return 2;
            }
            *dst = val;
            i++;
            continue;
        }
        if (!strcmp(o, "--convert") || !strcmp(o, "--shortlist")) {
            if (val == NULL) {
                fprintf(stderr, "mtpe shortlist: %s needs a file\n", o);
                return 2;
            }
            *(!strcmp(o, "--convert") ? &a->convert : &a->shortlist) = val;
            i++;
            if (take_positionals(argc, argv, &i, a)) return 2;
        } else if (!strcmp(o, "-v") || !strcmp(o, "--vocabs")) {
            if (!is_value(val) || !is_value(i + 2 < argc ? argv[i + 2] : NULL)) {
                fprintf(stderr, "mtpe shortlist: %s needs two vocabularies\n", o);
                return 2;
            }
            a->vocabs[0] = argv[i + 1];
            a->vocabs[1] = argv[i + 2];
            i += 2;
        } else if (!strcmp(o, "--first") || !strcmp(o, "--best") || !strcmp(o, "--mini-batch")) {
            uint64_t v;
            if (val == NULL || !parse_u64(val, &v) || (!strcmp(o, "--mini-batch") && v == 0)) {
                fprintf(stderr, "mtpe shortlist: %s wants a non-negative integer\n", o);
                return 2;
            }
            if (!strcmp(o, "--first"))
                a->first = v;
            else if (!strcmp(o, "--best"))
                a->best = v;
            else
                a->mini_batch = (int64_t)v;
            i++;
        } else if (!strcmp(o, "--threshold")) {
            if (val == NULL || !parse_num(val, &a->threshold)) {
                fprintf(stderr, "mtpe shortlist: --threshold wants a number\n");
                return 2;
            }
            i++;
        } else if (!strcmp(o, "--no-check")) {
            a->check = false;
        } else {
            fprintf(stderr, "mtpe shortlist: unknown option '%s' (mtpe shortlist --help)\n", o);
            return 2;
        }
    }
    int modes = (a->src || a->trg || a->align) + !!a->convert + !!a->shortlist + !!a->info;
    if (modes != 1) {
        fprintf(stderr, "mtpe shortlist: give exactly one of --src/--trg/--align, --convert, "
                        "--shortlist, --info (mtpe shortlist --help)\n");
        return 2;
    }
    if ((a->src || a->trg || a->align) && (!a->src || !a->trg || !a->align || !a->output)) {
        fprintf(stderr, "mtpe shortlist: extraction needs --src, --trg, --align and -o\n");
        return 2;
    }
    if ((a->convert || a->shortlist) && !a->vocabs[0]) {
        fprintf(stderr, "mtpe shortlist: --vocabs SRC TRG is required\n");
        return 2;
    }
    if (a->convert && !a->dump) {
        fprintf(stderr, "mtpe shortlist: --convert needs --dump FILE\n");
        return 2;
    }
    if (a->shortlist && !a->input) {
        fprintf(stderr, "mtpe shortlist: --shortlist needs -i INPUT\n");
        return 2;
    }
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
    a.mini_batch = 1;
    a.check = true;
    int prc = parse_args(argc, argv, &a);
    if (prc == 1) return 0;
    if (prc == 2) return 2;
    if (a.info) return do_info(&a);
    if (a.src) return do_extract(&a);
    return do_vocab_modes(&a);
}
