/*
** main.c: `mtpe COMMAND [options]`, git-style subcommands.  Sets up the
** process (OpenBLAS core type, abort hook) and dispatches; each command
** lives in its own app/cmd_*.c and returns the exit code.
*/
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "mt.h"
#include "options.h"

static const app_subcmd commands[] = {
    {"edit", app_edit_main, "post-edit a document (PO, XLIFF, text) with live MT"},
    {"convert", app_convert_main, "inspect a model file; convert between .npz and .bin"},
    {"bench", app_bench_main, "speed benchmarks (gemm), GFLOP/s and fraction of peak"},
    {"translate", app_translate_main, "translate text or documents (marian-decoder)"},
    {"postedit", app_postedit_main,
     "automatic post-editing of MT with an APE model (src, mt -> pe)"},
    {"train", app_train_main, "train or continue training a model (Marian's options and files)"},
    {"score", app_score_main, "score sentence pairs or rescore an n-best list (marian-scorer)"},
    {"rescore", app_rescore_main, "pick the best of an n-best list by weighted features"},
    {"align", app_align_main, "word alignment, fast_align style (IBM model 2 + diagonal prior)"},
    {"shortlist", app_shortlist_main, "lexical shortlists: lex.s2t from alignments, Marian binary"},
    {"corpus", app_corpus_main, "parallel text from PO/MO/XLIFF/TMX; export confirmed edits"},
    {"tune", app_tune_main, "continue training a model on the confirmed segments of the store"},
    {"tm", app_tm_main, "translation memory: import, export, stats, fuzzy lookup"},
    {"glossary", app_glossary_main, "glossary: import TBX/CSV/TSV, list, export, lookup, clear"},
    {"eval", app_eval_main, "BLEU and chrF of a translation against references (sacreBLEU)"},
    {"gec", app_gec_main, "grammatical error correction of German; its noise and evaluation"},
    {"demo", app_demo_main, "train a small network with the engine and load a Marian model"},
};
static const int n_commands = (int)(sizeof commands / sizeof commands[0]);

static void usage(FILE *f) {
    fprintf(f, "usage: mtpe COMMAND [options]   (mtpe COMMAND --help for its options)\n\n"
               "commands:\n");
    app_subcmds_print(commands, n_commands, f);
    fprintf(f, "\nmtpe %s, CPU instruction set: %s\n", MT_VERSION, mt_cpu_isa());
}

/* OpenBLAS 0.3.21 does not know Zen 4/5 and picks its AVX2 kernels unless
** OPENBLAS_CORETYPE is set before the library initialises, which happens
** before main().  So when it is needed and unset, set it and re-execute. */
static void fix_blas_coretype(char **argv) {
    if (!mt_cpu_blas_needs_reexec()) return;
    if (setenv("OPENBLAS_CORETYPE", "SkylakeX", 0) != 0) return;
    execv("/proc/self/exe", argv);
    /* execv failed (no /proc?): continue with the slower kernels. */
}

/* Output on standard output is the result of most commands: a write error
** (a full disk, a closed pipe's EIO) must not end in exit status 0.  stdio
** buffers, so a command that printed less than a buffer has written nothing
** yet: flush here and check the stream's sticky error. */
static int check_stdout(const char *cmd, int ret) {
    errno = 0;
    bool bad = fflush(stdout) != 0;
    int err = errno;
    if (ferror(stdout)) bad = true;
    if (!bad) return ret;
    if (ret == 0) { /* else the command has already said what failed */
        fprintf(stderr, "mtpe%s%s: cannot write standard output: %s\n", cmd ? " " : "",
                cmd ? cmd : "", strerror(err ? err : EIO));
        ret = 1;
    }
    return ret;
}

static int run_main(int argc, char **argv, const char **cmd_name);

int main(int argc, char **argv) {
    const char *cmd = NULL;
    int ret = run_main(argc, argv, &cmd);
    return check_stdout(cmd, ret);
}

static int run_main(int argc, char **argv, const char **cmd_name) {
    fix_blas_coretype(argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "help") && argc == 3) { /* mtpe help COMMAND: its --help */
        for (int i = 0; i < n_commands; i++)
            if (!strcmp(argv[2], commands[i].name))
                return commands[i].run(2, (char *[]){argv[2], "--help", NULL});
        fprintf(stderr, "mtpe: unknown command '%s' (mtpe help lists them)\n", argv[2]);
        return 2;
    }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("mtpe %s\n", MT_VERSION);
        return 0;
    }
    /* Inference commands keep freed memory for their next graph round. */
    static const char *const infer[] = {"edit", "translate", "postedit", "score", "bench"};
    for (size_t i = 0; i < sizeof infer / sizeof infer[0]; i++)
        if (!strcmp(cmd, infer[i])) mt_alloc_keep_freed();
    for (int i = 0; i < n_commands; i++)
        if (!strcmp(cmd, commands[i].name)) {
            *cmd_name = commands[i].name;
            return commands[i].run(argc - 1, argv + 1);
        }
    fprintf(stderr, "mtpe: unknown command '%s' (mtpe help lists them)\n", cmd);
    return 2;
}
