/*
** app.h: entry points of the subcommands (one file each in app/) and the
** helpers app/ shares.  app/ is the only layer that sees every other layer.
*/
#ifndef MT_APP_H
#define MT_APP_H

/* Each returns the process exit code: 0 ok, 1 failure, 2 usage error. */
int app_bench_main(int argc, char **argv);   /* app/cmd_bench.c   */
int app_convert_main(int argc, char **argv); /* app/cmd_convert.c */
int app_demo_main(int argc, char **argv);
int app_eval_main(int argc, char **argv);    /* app/cmd_eval.c    */    /* app/cmd_demo.c    */
int app_train_main(int argc, char **argv);   /* app/cmd_train.c   */
int app_score_main(int argc, char **argv);   /* app/cmd_score.c   */
int app_align_main(int argc, char **argv);   /* app/cmd_align.c   */
int app_shortlist_main(int argc, char **argv); /* app/cmd_shortlist.c */
int app_translate_main(int argc, char **argv); /* app/cmd_translate.c */
int app_rescore_main(int argc, char **argv);   /* app/cmd_rescore.c   */
int app_bench_translate_main(int argc, char **argv); /* app/bench/bench_translate.c */
int app_bench_train_main(int argc, char **argv);     /* app/bench/bench_train.c     */
int app_corpus_main(int argc, char **argv);    /* app/cmd_corpus.c    */
int app_edit_main(int argc, char **argv);      /* app/cmd_edit.c      */

#endif
