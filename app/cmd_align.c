/*
** cmd_align.c: `mtpe align`, a fast_align-style word aligner (IBM Model 2
** with a diagonal-favouring prior; model and heuristics in app/align/align.h).
**
**   mtpe align -i corpus.src-trg -d -o -v > fwd.align
**   mtpe align -s corpus.en -t corpus.de -d -o -v --both > sym.align
**
** Prints one line of Pharaoh links "i-j" (source position - target position,
** 0-based) per sentence pair to stdout.  Options follow fast_align's; --both
** runs both directions and symmetrizes them as atools does.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "align.h"
#include "app.h"

static void usage(FILE *f) {
    fprintf(f, "usage: mtpe align -i CORPUS [options] > ALIGNMENT\n"
               "       mtpe align -s SRC -t TRG [options] > ALIGNMENT\n"
               "\n"
               "Word alignment with fast_align's model (IBM Model 2 with a prior that favours\n"
               "the diagonal).  Tokens are separated by blanks; prints one line of Pharaoh\n"
               "links i-j (source index - target index, 0-based) per sentence pair.\n"
               "\n"
               "input:\n"
               "  -i, --input FILE          \"source ||| target\" per line (fast_align format)\n"
               "  -s, --source FILE         source side, one sentence per line\n"
               "  -t, --target FILE         target side, line-aligned with --source\n"
               "model (fast_align's options):\n"
               "  -d, --favor-diagonal      prior favouring the diagonal (recommended)\n"
               "  -o, --optimize-tension    optimize the diagonal tension (recommended)\n"
               "  -v, --variational-bayes   Dirichlet prior on t(f|e) (recommended)\n"
               "  -r, --reverse             condition on the target, generate the source\n"
               "  -N, --no-null-word        no NULL word\n"
               "  -I, --iterations N        EM passes including the final one (5)\n"
               "  -p0, --p0 X               NULL alignment prior with -d (0.08)\n"
               "  -T, --diagonal-tension X  initial tension (4)\n"
               "  -a, --alpha X             Dirichlet concentration with -v (0.01)\n"
               "symmetrization:\n"
               "  --both                    align both directions and symmetrize\n"
               "  --sym NAME                grow-diag-final-and (default), grow-diag-final,\n"
               "                            grow-diag, intersect, union\n"
               "other:\n"
               "  --lex-out FILE            write the final table e<TAB>f<TAB>ln t(f|e); with\n"
               "                            --both the reverse table goes to FILE.r\n"
               "  -q, --quiet               no progress messages\n"
               "  -h, --help                this text\n"
               "Short flags combine: -dov is -d -o -v.\n");
}

static void quiet_sink(mt_log_level level, const char *msg, void *user) {
    (void)user;
    if (level >= MT_LOG_WARN)
        fprintf(stderr, "[%s] %s\n", level == MT_LOG_WARN ? "warn" : "error", msg);
}

static bool parse_int(const char *s, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > 100000) return false;
    *out = (int)v;
    return true;
}

static bool parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end) return false;
    *out = v;
    return true;
}

typedef struct align_args {
    app_align_params p;
    const char *input, *source, *target, *lex_out;
    bool both, quiet;
    app_sym sym;
} align_args;

/* Returns 0 to go on, 1 after --help, 2 on a usage error (message printed). */
static int parse_args(int argc, char **argv, align_args *a) {
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE()                                                                               \
    do {                                                                                           \
        if (val == NULL) {                                                                         \
            fprintf(stderr, "mtpe align: %s needs a value\n", o);                                  \
            return 2;                                                                              \
        }                                                                                          \
        i++;                                                                                       \
    } while (0)
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(o, "-i") || !strcmp(o, "--input")) {
            NEED_VALUE();
            a->input = val;
        } else if (!strcmp(o, "-s") || !strcmp(o, "--source")) {
            NEED_VALUE();
            a->source = val;
        } else if (!strcmp(o, "-t") || !strcmp(o, "--target")) {
            NEED_VALUE();
            a->target = val;
        } else if (!strcmp(o, "--lex-out")) {
            NEED_VALUE();
            a->lex_out = val;
        } else if (!strcmp(o, "-I") || !strcmp(o, "--iterations")) {
            NEED_VALUE();
            if (!parse_int(val, &a->p.iterations)) {
                fprintf(stderr, "mtpe align: %s wants an integer in [1, 100000], not '%s'\n", o,
                        val);
                return 2;
            }
        } else if (!strcmp(o, "-p0") || !strcmp(o, "-p") || !strcmp(o, "--p0")) {
            NEED_VALUE();
            if (!parse_double(val, &a->p.p0) || a->p.p0 < 0.0 || a->p.p0 >= 1.0) {
                fprintf(stderr, "mtpe align: %s wants a number in [0, 1), not '%s'\n", o, val);
                return 2;
            }
        } else if (!strcmp(o, "-T") || !strcmp(o, "--diagonal-tension")) {
            NEED_VALUE();
            if (!parse_double(val, &a->p.tension) || !(a->p.tension > 0.0)) {
                fprintf(stderr, "mtpe align: %s wants a positive number, not '%s'\n", o, val);
                return 2;
            }
        } else if (!strcmp(o, "-a") || !strcmp(o, "--alpha")) {
            NEED_VALUE();
            if (!parse_double(val, &a->p.alpha) || !(a->p.alpha > 0.0)) {
                fprintf(stderr, "mtpe align: %s wants a positive number, not '%s'\n", o, val);
                return 2;
            }
        } else if (!strcmp(o, "--sym")) {
            NEED_VALUE();
            if (app_sym_parse(val, &a->sym) != MT_OK) {
                fprintf(stderr, "mtpe align: %s\n", mt_errmsg());
                return 2;
            }
        } else if (!strcmp(o, "--both")) {
            a->both = true;
        } else if (!strcmp(o, "-q") || !strcmp(o, "--quiet")) {
            a->quiet = true;
        } else if (!strcmp(o, "--favor-diagonal")) {
            a->p.favor_diagonal = true;
        } else if (!strcmp(o, "--optimize-tension")) {
            a->p.optimize_tension = true;
        } else if (!strcmp(o, "--variational-bayes")) {
            a->p.variational_bayes = true;
        } else if (!strcmp(o, "--reverse")) {
            a->p.reverse = true;
        } else if (!strcmp(o, "--no-null-word")) {
            a->p.no_null = true;
        } else if (o[0] == '-' && o[1] != '-' && o[1] != '\0' &&
                   strspn(o + 1, "dovrN") == strlen(o + 1)) {
            for (const char *c = o + 1; *c; c++) {
                if (*c == 'd') a->p.favor_diagonal = true;
                if (*c == 'o') a->p.optimize_tension = true;
                if (*c == 'v') a->p.variational_bayes = true;
                if (*c == 'r') a->p.reverse = true;
                if (*c == 'N') a->p.no_null = true;
            }
        } else {
            fprintf(stderr, "mtpe align: unknown option '%s' (mtpe align --help)\n", o);
            return 2;
        }
#undef NEED_VALUE
    }
    if (!a->input == !(a->source || a->target) || (a->source && !a->target) ||
        (a->target && !a->source)) {
        fprintf(stderr, "mtpe align: give either -i CORPUS or both -s SRC and -t TRG\n");
        return 2;
    }
    return 0;
}

static char *path_with_suffix(const char *path, const char *suffix) {
    size_t n = strlen(path), k = strlen(suffix);
    char *s = mt_try_malloc(n + k + 1);
    if (s) {
        memcpy(s, path, n);
        memcpy(s + n, suffix, k + 1);
    }
    return s;
}

/* Aligns one direction; writes its table when lex_path is set. */
static mt_status run_direction(const app_bitext *bt, const app_align_params *p,
                               const char *lex_path, app_alignment **out) {
    app_align_model *model = NULL;
    mt_status rc = app_align_run(bt, p, out, lex_path ? &model : NULL, NULL);
    if (rc != MT_OK) return rc;
    if (lex_path) {
        rc = app_align_model_write(model, bt, lex_path);
        app_align_model_free(model);
        if (rc != MT_OK) {
            app_alignment_free(*out);
            *out = NULL;
        }
    }
    return rc;
}

int app_align_main(int argc, char **argv) {
    align_args a;
    memset(&a, 0, sizeof a);
    a.p = app_align_default_params();
    a.sym = APP_SYM_GROW_DIAG_FINAL_AND;
    int prc = parse_args(argc, argv, &a);
    if (prc == 1) return 0;
    if (prc == 2) return 2;
    if (a.quiet) mt_log_set(quiet_sink, NULL);

    int ret = 1;
    app_bitext *bt = NULL;
    app_alignment *fwd = NULL, *rev = NULL, *sym = NULL;
    char *lex_rev = NULL;
    mt_status rc = a.input ? app_bitext_read_joined(a.input, &bt)
                           : app_bitext_read_pair(a.source, a.target, &bt);
    if (rc != MT_OK) goto fail;
    mt_log(MT_LOG_INFO, "align: %lld sentence pairs, %d distinct tokens", (long long)bt->n,
           (int)app_interner_size(bt->vocab));

    const app_alignment *result;
    if (!a.both) {
        rc = run_direction(bt, &a.p, a.lex_out, &fwd);
        if (rc != MT_OK) goto fail;
        result = fwd;
    } else {
        app_align_params pr = a.p;
        pr.reverse = !a.p.reverse;
        if (a.lex_out && (lex_rev = path_with_suffix(a.lex_out, ".r")) == NULL) {
            rc = mt_seterr(MT_ERR_NOMEM, "no memory");
            goto fail;
        }
        rc = run_direction(bt, &a.p, a.lex_out, &fwd);
        if (rc != MT_OK) goto fail;
        rc = run_direction(bt, &pr, lex_rev, &rev);
        if (rc != MT_OK) goto fail;
        /* atools -i forward -j reverse: the first operand is the source->target run */
        rc = a.p.reverse ? app_alignment_symmetrize(bt, rev, fwd, a.sym, &sym)
                         : app_alignment_symmetrize(bt, fwd, rev, a.sym, &sym);
        if (rc != MT_OK) goto fail;
        result = sym;
    }
    for (int64_t s = 0; s < result->n; s++) {
        if (!app_alignment_print(result, s, stdout) || fputc('\n', stdout) == EOF) {
            rc = mt_seterr(MT_ERR_IO, "cannot write the alignment to stdout");
            goto fail;
        }
    }
    if (fflush(stdout) != 0) {
        rc = mt_seterr(MT_ERR_IO, "cannot write the alignment to stdout");
        goto fail;
    }
    ret = 0;
fail:
    if (ret != 0) fprintf(stderr, "mtpe align: %s\n", mt_errmsg());
    app_alignment_free(fwd);
    app_alignment_free(rev);
    app_alignment_free(sym);
    app_bitext_free(bt);
    mt_free(lex_rev);
    return ret;
}
