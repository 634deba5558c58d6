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
#include "options.h"

static const app_opt align_opts[] = {
    {"input", 'i', APP_OPT_STRING, NULL, NULL,
     "\"source ||| target\" per line (fast_align format)"},
    {"source", 's', APP_OPT_STRING, NULL, NULL, "source side, one sentence per line"},
    {"target", 't', APP_OPT_STRING, NULL, NULL, "target side, line-aligned with --source"},
    {"favor-diagonal", 'd', APP_OPT_FLAG, NULL, NULL, "prior favouring the diagonal (recommended)"},
    {"optimize-tension", 'o', APP_OPT_FLAG, NULL, NULL,
     "optimize the diagonal tension (recommended)"},
    {"variational-bayes", 'v', APP_OPT_FLAG, NULL, NULL, "Dirichlet prior on t(f|e) (recommended)"},
    {"reverse", 'r', APP_OPT_FLAG, NULL, NULL, "condition on the target, generate the source"},
    {"no-null-word", 'N', APP_OPT_FLAG, NULL, NULL, "no NULL word"},
    {"iterations", 'I', APP_OPT_INT, "5", NULL, "EM passes including the final one", "1..100000"},
    {"p0", 'p', APP_OPT_FLOAT, "0.08", NULL, "NULL alignment prior with -d", "0..1)"},
    {"diagonal-tension", 'T', APP_OPT_FLOAT, "4", NULL, "initial tension", "(0.."},
    {"alpha", 'a', APP_OPT_FLOAT, "0.01", NULL, "Dirichlet concentration with -v", "(0.."},
    {"both", 0, APP_OPT_FLAG, NULL, NULL, "align both directions and symmetrize"},
    {"sym", 0, APP_OPT_STRING, "grow-diag-final-and", NULL, "symmetrization heuristic",
     "grow-diag-final-and|grow-diag-final|grow-diag|intersect|union"},
    {"lex-out", 0, APP_OPT_STRING, NULL, NULL,
     "write the final table e<TAB>f<TAB>ln t(f|e); with --both the reverse table goes to FILE.r"},
    {"quiet", 'q', APP_OPT_FLAG, NULL, NULL, "no progress messages"},
};

const app_cmd app_align_cmd = {
    .name = "align",
    .usage = "-i CORPUS [options] > ALIGNMENT\n"
             "-s SRC -t TRG [options] > ALIGNMENT",
    .about = "Word alignment with fast_align's model (IBM Model 2 with a prior that favours\n"
             "the diagonal) and fast_align's options.  Tokens are separated by blanks; prints\n"
             "one line of Pharaoh links i-j (source index - target index, 0-based) per\n"
             "sentence pair.  Short flags combine: -dov is -d -o -v.\n",
    .opts = align_opts,
    .n_opts = (int)(sizeof align_opts / sizeof align_opts[0]),
};

static void quiet_sink(mt_log_level level, const char *msg, void *user) {
    (void)user;
    if (level >= MT_LOG_WARN)
        fprintf(stderr, "[%s] %s\n", level == MT_LOG_WARN ? "warn" : "error", msg);
}

typedef struct align_args {
    app_align_params p;
    const char *input, *source, *target, *lex_out;
    bool both, quiet;
    app_sym sym;
} align_args;

static const char *opt_or_null(const app_opts *o, const char *name) {
    return app_opts_given(o, name) ? app_opts_str(o, name) : NULL;
}

/* Returns 0 to go on, 2 on a usage error (message printed). */
static int check_args(const app_opts *o, align_args *a) {
    const app_cmd *c = &app_align_cmd;
    a->input = opt_or_null(o, "input");
    a->source = opt_or_null(o, "source");
    a->target = opt_or_null(o, "target");
    a->lex_out = opt_or_null(o, "lex-out");
    a->both = app_opts_flag(o, "both");
    a->quiet = app_opts_flag(o, "quiet");
    a->p.favor_diagonal = app_opts_flag(o, "favor-diagonal");
    a->p.optimize_tension = app_opts_flag(o, "optimize-tension");
    a->p.variational_bayes = app_opts_flag(o, "variational-bayes");
    a->p.reverse = app_opts_flag(o, "reverse");
    a->p.no_null = app_opts_flag(o, "no-null-word");
    /* (the ranges are checked by the option table) */
    a->p.iterations = (int)app_opts_int(o, "iterations");
    a->p.p0 = app_opts_float(o, "p0");
    a->p.tension = app_opts_float(o, "diagonal-tension");
    a->p.alpha = app_opts_float(o, "alpha");
    if (app_sym_parse(app_opts_str(o, "sym"), &a->sym) != MT_OK)
        return app_cmd_usage_error(c, "%s", mt_errmsg());
    if (!a->input == !(a->source || a->target) || (a->source && !a->target) ||
        (a->target && !a->source))
        return app_cmd_usage_error(c, "give either -i CORPUS or both -s SRC and -t TRG");
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
    app_opts *o = NULL;
    int ret;
    if (!app_opts_parse_cmd(&app_align_cmd, argc, argv, &o, &ret)) return ret;
    ret = check_args(o, &a);
    if (ret != 0) {
        app_opts_free(o);
        return ret;
    }
    if (a.quiet) mt_log_set(quiet_sink, NULL);

    ret = 1;
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
    app_opts_free(o);
    return ret;
}
