/*
** app.h: entry points of the subcommands (one file each in app/) and the
** helpers app/ shares.  app/ is the only layer that sees every other layer.
*/
#ifndef MT_APP_H
#define MT_APP_H

#include "options.h"

/* Each returns the process exit code: 0 ok, 1 failure, 2 usage error. */
int app_bench_main(int argc, char **argv);   /* app/cmd_bench.c   */
int app_convert_main(int argc, char **argv); /* app/cmd_convert.c */
int app_demo_main(int argc, char **argv);
int app_eval_main(int argc, char **argv); /* app/cmd_eval.c    */ /* app/cmd_demo.c    */
int app_train_main(int argc, char **argv);                        /* app/cmd_train.c   */
int app_score_main(int argc, char **argv);                        /* app/cmd_score.c   */
int app_align_main(int argc, char **argv);                        /* app/cmd_align.c   */
int app_shortlist_main(int argc, char **argv);                    /* app/cmd_shortlist.c */
int app_translate_main(int argc, char **argv);                    /* app/cmd_translate.c */
int app_postedit_main(int argc, char **argv);                     /* app/cmd_translate.c */
int app_rescore_main(int argc, char **argv);                      /* app/cmd_rescore.c   */
int app_bench_translate_main(int argc, char **argv);              /* app/bench/bench_translate.c */
int app_bench_train_main(int argc, char **argv);                  /* app/bench/bench_train.c     */
int app_bench_tune_main(int argc, char **argv);                   /* app/bench/bench_tune.c      */
int app_corpus_main(int argc, char **argv);                       /* app/cmd_corpus.c    */
int app_edit_main(int argc, char **argv);                         /* app/cmd_edit.c      */
int app_tune_main(int argc, char **argv);                         /* app/cmd_tune.c      */
int app_tm_main(int argc, char **argv);                           /* app/cmd_tm.c        */
int app_bench_tm_main(int argc, char **argv);                     /* app/bench/bench_tm.c */
int app_glossary_main(int argc, char **argv);                     /* app/cmd_glossary.c  */
int app_gec_main(int argc, char **argv); /* app/cmd_gec.c */

/* Each command's options, positional arguments and help (app/options.h);
** the same file as its main.  app_bench_kernels_cmd: `mtpe bench gemm`,
** gemm-int, topk, attn (one table of options). */
extern const app_cmd app_bench_kernels_cmd[4];
extern const app_cmd app_align_cmd, app_bench_edit_cmd, app_bench_train_cmd,
    app_bench_translate_cmd, app_bench_tune_cmd, app_convert_cmd, app_corpus_build_cmd,
    app_corpus_export_cmd, app_demo_cmd, app_edit_cmd, app_eval_cmd, app_rescore_cmd, app_score_cmd,
    app_shortlist_cmd, app_train_cmd, app_translate_cmd, app_tune_cmd, app_tm_import_cmd,
    app_tm_export_cmd, app_tm_stats_cmd, app_tm_lookup_cmd, app_bench_tm_cmd;
extern const app_cmd app_postedit_cmd; /* app/cmd_translate.c: APE (app/ape.h) */
extern const app_cmd app_glossary_import_cmd, app_glossary_list_cmd, app_glossary_export_cmd,
    app_glossary_lookup_cmd, app_glossary_terms_cmd, app_glossary_clear_cmd;

#endif
