/*
** cmd_eval.c: `mtpe eval -r REF [-i HYP]`: corpus BLEU and chrF of a
** hypothesis file against a reference file, as sacreBLEU 2 computes them
** by default (models/metrics.c), printed with their signatures.  Lines are
** paired in order; a different number of lines is an error.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "common.h"
#include "metrics.h"
#include "mt.h"

static void usage(FILE *f) {
    fprintf(f, "usage: mtpe eval -r REF [-i HYP] [--metrics bleu chrf]\n"
               "  corpus BLEU (13a, exp smoothing) and chrF2 of HYP (default: stdin)\n"
               "  against REF, as sacreBLEU computes them, with their signatures\n");
}

int app_eval_main(int argc, char **argv) {
    const char *ref_path = NULL, *hyp_path = NULL;
    bool want_bleu = true, want_chrf = true;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "-r") || !strcmp(argv[i], "--ref")) && i + 1 < argc) {
            ref_path = argv[++i];
        } else if ((!strcmp(argv[i], "-i") || !strcmp(argv[i], "--input")) && i + 1 < argc) {
            hyp_path = argv[++i];
        } else if (!strcmp(argv[i], "--metrics")) {
            want_bleu = want_chrf = false;
            while (i + 1 < argc && argv[i + 1][0] != '-') {
                const char *m = argv[++i];
                if (!strcmp(m, "bleu")) want_bleu = true;
                else if (!strcmp(m, "chrf")) want_chrf = true;
                else {
                    fprintf(stderr, "mtpe eval: unknown metric '%s'\n", m);
                    return 2;
                }
            }
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!ref_path) {
        usage(stderr);
        return 2;
    }
    FILE *fr = fopen(ref_path, "r");
    FILE *fh = hyp_path ? fopen(hyp_path, "r") : stdin;
    if (!fr || !fh) {
        fprintf(stderr, "mtpe eval: cannot open %s\n", !fr ? ref_path : hyp_path);
        if (fr) fclose(fr);
        if (fh && fh != stdin) fclose(fh);
        return 1;
    }
    mt_bleu_stats bs;
    mt_chrf_stats cs;
    mt_bleu_init(&bs);
    mt_chrf_init(&cs);
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
            (want_chrf && mt_chrf_add(&cs, hl, refs, 1) != MT_OK)) {
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
    }
    free(rl); /* from getline */
    free(hl);
    fclose(fr);
    if (fh != stdin) fclose(fh);
    return rc;
}
