/*
** cmd_eval.c: `mtpe eval -r REF [-i HYP]`: corpus BLEU and chrF (and on
** request TER) of a hypothesis file against a reference file, as sacreBLEU 2
** computes them by default (models/metrics.c), printed with their signatures.
** Lines are paired in order; a different number of lines is an error.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "common.h"
#include "metrics.h"
#include "mt.h"
#include "options.h"

static const app_opt eval_opts[] = {
    {"ref", 'r', APP_OPT_STRING, NULL, NULL, "the reference translation, one segment per line"},
    {"input", 'i', APP_OPT_STRING, NULL, NULL, "the translation to score (default: stdin)"},
    {"metrics", 0, APP_OPT_STRINGS, "bleu chrf", NULL, "the metrics to compute", "bleu|chrf|ter"},
};

const app_cmd app_eval_cmd = {
    .name = "eval",
    .usage = "-r REF [-i HYP] [--metrics bleu chrf ter]",
    .about = "Corpus BLEU (13a, exp smoothing), chrF2 and TER (tercom, lowercased) of HYP\n"
             "(default: stdin) against REF, as sacreBLEU computes them, with their\n"
             "signatures.\n",
    .opts = eval_opts,
    .n_opts = (int)(sizeof eval_opts / sizeof eval_opts[0]),
};

int app_eval_main(int argc, char **argv) {
    app_opts *o = NULL;
    int ret;
    if (!app_opts_parse_cmd(&app_eval_cmd, argc, argv, &o, &ret)) return ret;
    const char *ref_path = app_opts_given(o, "ref") ? app_opts_str(o, "ref") : NULL;
    const char *hyp_path = app_opts_given(o, "input") ? app_opts_str(o, "input") : NULL;
    bool want_bleu = false, want_chrf = false, want_ter = false;
    ret = 0;
    for (int i = 0; i < app_opts_count(o, "metrics") && ret == 0; i++) {
        const char *m = app_opts_item(o, "metrics", i);
        if (!strcmp(m, "bleu"))
            want_bleu = true;
        else if (!strcmp(m, "chrf"))
            want_chrf = true;
        else if (!strcmp(m, "ter"))
            want_ter = true;
        else
            ret = app_cmd_usage_error(&app_eval_cmd, "unknown metric '%s' (bleu, chrf, ter)", m);
    }
    if (ret == 0 && !ref_path) ret = app_cmd_usage_error(&app_eval_cmd, "missing -r REF");
    if (ret != 0) {
        app_opts_free(o);
        return ret;
    }
    FILE *fr = fopen(ref_path, "r");
    FILE *fh = hyp_path ? fopen(hyp_path, "r") : stdin;
    if (!fr || !fh) {
        fprintf(stderr, "mtpe eval: cannot open %s\n", !fr ? ref_path : hyp_path);
        if (fr) fclose(fr);
        if (fh && fh != stdin) fclose(fh);
        app_opts_free(o);
        return 1;
    }
    mt_bleu_stats bs;
    mt_chrf_stats cs;
    mt_ter_stats ts;
    mt_bleu_init(&bs);
    mt_chrf_init(&cs);
    mt_ter_init(&ts);
    char *rl = NULL, *hl = NULL;
    size_t rc_ = 0, hc = 0;
    int64_t line = 0;
    int rc = 0;
    for (;;) {
        ssize_t nr = app_read_line(fr, &rl, &rc_), nh = app_read_line(fh, &hl, &hc);
        if (nr < 0 && nh < 0) break;
        line++;
        if (nr < 0 || nh < 0) {
            fprintf(stderr, "mtpe eval: %s ends at line %lld, before %s\n",
                    nr < 0 ? ref_path : (hyp_path ? hyp_path : "stdin"), (long long)line,
                    nr < 0 ? (hyp_path ? hyp_path : "stdin") : ref_path);
            rc = 1;
            break;
        }
        if (app_check_utf8(rl, (size_t)nr, ref_path, line) != MT_OK ||
            app_check_utf8(hl, (size_t)nh, hyp_path ? hyp_path : "stdin", line) != MT_OK) {
            fprintf(stderr, "mtpe eval: %s\n", mt_errmsg());
            rc = 1;
            break;
        }
        if (rl[0] == '\0') continue; /* sacreBLEU drops segments without a reference */
        const char *refs[1] = {rl};
        if ((want_bleu && mt_bleu_add(&bs, hl, refs, 1) != MT_OK) ||
            (want_chrf && mt_chrf_add(&cs, hl, refs, 1) != MT_OK) ||
            (want_ter && mt_ter_add(&ts, hl, refs, 1) != MT_OK)) {
            fprintf(stderr, "mtpe eval: line %lld: %s\n", (long long)line, mt_errmsg());
            rc = 1;
            break;
        }
    }
    if (rc == 0) {
        char sig[256], out[512];
        if (want_bleu) {
            mt_bleu_signature(&bs, false, sig, sizeof sig);
            mt_bleu_score sc = mt_bleu_compute(&bs, false);
            mt_bleu_format(&sc, 2, sig, out, sizeof out);
            printf("%s\n", out);
        }
        if (want_chrf) {
            mt_chrf_signature(&cs, sig, sizeof sig);
            mt_chrf_format(mt_chrf_compute(&cs), 2, sig, out, sizeof out);
            printf("%s\n", out);
        }
        if (want_ter) {
            mt_ter_signature(&ts, sig, sizeof sig);
            mt_ter_format(mt_ter_compute(&ts), 2, sig, out, sizeof out);
            printf("%s\n", out);
        }
    }
    free(rl); /* from getline */
    free(hl);
    fclose(fr);
    if (fh != stdin) fclose(fh);
    app_opts_free(o);
    return rc;
}
