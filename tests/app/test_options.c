/*
** test_options.c: the Marian-style option parser of app/options.c: single
** and list values, short aliases, bare flags and implicit values, unit
** suffixes, config files merged under the command line, unknown options and
** bad values as usage errors, YAML round trip; positional arguments and
** combined short flags; a config file with a NUL byte refused.  Then the
** commands: each one's --help exits 0 and is the generated help listing
** every option of its table, the commands that had hand-written parsers
** accept their documented options, and usage errors are one line on
** stderr with exit code 2.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "edit_session.h"
#include "harness.h"
#include "mt.h"
#include "options.h"

static const app_opt defs[] = {
    {"config", 'c', APP_OPT_STRINGS, NULL, NULL, "config files"},
    {"model", 'm', APP_OPT_STRING, "model.npz", NULL, "model path"},
    {"train-sets", 't', APP_OPT_STRINGS, NULL, NULL, "corpora"},
    {"vocabs", 'v', APP_OPT_STRINGS, NULL, NULL, "vocabularies"},
    {"dim-vocabs", 0, APP_OPT_INTS, "0 0", NULL, "vocab sizes"},
    {"valid-metrics", 0, APP_OPT_STRINGS, "cross-entropy", NULL, "metrics"},
    {"mini-batch", 0, APP_OPT_INT, "64", NULL, "sentences per batch"},
    {"learn-rate", 0, APP_OPT_FLOAT, "0.0001", NULL, "learning rate"},
    {"exponential-smoothing", 0, APP_OPT_FLOAT, "0", "1e-4", "smoothing"},
    {"valid-freq", 0, APP_OPT_FREQ, "10000u", NULL, "validation frequency"},
    {"lr-decay-inv-sqrt", 0, APP_OPT_FREQS, "0", NULL, "decay"},
    {"optimizer-params", 0, APP_OPT_FLOATS, NULL, NULL, "adam params"},
    {"overwrite", 0, APP_OPT_FLAG, NULL, NULL, "overwrite"},
    {"tied-embeddings-all", 0, APP_OPT_FLAG, NULL, NULL, "tie"},
    {"transformer-preprocess", 0, APP_OPT_STRING, "", NULL, "pre"},
    {"seed", 0, APP_OPT_INT, "0", NULL, "seed"},
    {"keep-best", 0, APP_OPT_FLAG, "false", NULL, "keep"},
};
static const int n_defs = (int)(sizeof defs / sizeof defs[0]);

static mt_status parse(app_opts **o, int argc, const char **argv) {
    return app_opts_parse(defs, n_defs, argc, (char **)argv, o);
}

static void test_defaults(void) {
    const char *argv[] = {"train"};
    app_opts *o = NULL;
    CHECK_STATUS(parse(&o, 1, argv));
    if (!o) return;
    CHECK(!strcmp(app_opts_str(o, "model"), "model.npz"), "default string");
    CHECK(app_opts_int(o, "mini-batch") == 64, "default int");
    CHECK_CLOSE(app_opts_float(o, "learn-rate"), 1e-4, 0, 1e-12, "default float");
    CHECK(app_opts_count(o, "dim-vocabs") == 2 && app_opts_int_item(o, "dim-vocabs", 1) == 0,
          "default list");
    CHECK(app_opts_count(o, "train-sets") == 0, "empty list");
    CHECK(!app_opts_flag(o, "overwrite"), "default flag false");
    app_freq f = app_opts_freq(o, "valid-freq");
    CHECK(f.n == 10000 && f.unit == 'u', "default freq %lld%c", (long long)f.n, f.unit);
    CHECK(!app_opts_given(o, "model"), "not given");
    CHECK(!app_opts_help_wanted(o), "no help");
    app_opts_free(o);
}

static void test_values(void) {
    const char *argv[] = {"train",
                          "-m",
                          "x.npz",
                          "--train-sets",
                          "a.en",
                          "a.de",
                          "-v",
                          "v.spm",
                          "v2.spm",
                          "--valid-metrics",
                          "cross-entropy",
                          "bleu",
                          "chrf",
                          "--overwrite",
                          "--exponential-smoothing",
                          "--valid-freq",
                          "500",
                          "--lr-decay-inv-sqrt",
                          "16000",
                          "2e",
                          "--optimizer-params",
                          "0.9",
                          "0.98",
                          "1e-9",
                          "--seed=-5",
                          "--tied-embeddings-all",
                          "false",
                          "--transformer-preprocess",
                          "",
                          "--mini-batch",
                          "8",
                          "--mini-batch",
                          "16"};
    int argc = (int)(sizeof argv / sizeof argv[0]);
    app_opts *o = NULL;
    CHECK_STATUS(parse(&o, argc, argv));
    if (!o) return;
    CHECK(!strcmp(app_opts_str(o, "model"), "x.npz"), "short alias");
    CHECK(app_opts_count(o, "train-sets") == 2 &&
              !strcmp(app_opts_item(o, "train-sets", 1), "a.de"),
          "multi-value");
    CHECK(app_opts_count(o, "vocabs") == 2 && !strcmp(app_opts_item(o, "vocabs", 0), "v.spm"),
          "short alias with list");
    CHECK(app_opts_count(o, "valid-metrics") == 3 &&
              !strcmp(app_opts_item(o, "valid-metrics", 2), "chrf"),
          "metrics list replaces default");
    CHECK(app_opts_flag(o, "overwrite"), "bare flag");
    CHECK(!app_opts_flag(o, "tied-embeddings-all"), "flag with explicit false");
    CHECK_CLOSE(app_opts_float(o, "exponential-smoothing"), 1e-4, 0, 1e-9, "implicit value");
    app_freq f = app_opts_freq(o, "valid-freq");
    CHECK(f.n == 500 && f.unit == 'u', "freq without unit");
    CHECK(app_opts_count(o, "lr-decay-inv-sqrt") == 2, "freq list");
    f = app_opts_freq_item(o, "lr-decay-inv-sqrt", 1);
    CHECK(f.n == 2 && f.unit == 'e', "epoch unit");
    CHECK(app_opts_count(o, "optimizer-params") == 3, "float list");
    CHECK_CLOSE(app_opts_float_item(o, "optimizer-params", 2), 1e-9, 0, 1e-6, "1e-9");
    CHECK(app_opts_int(o, "seed") == -5, "--name=value with negative number");
    CHECK(app_opts_given(o, "transformer-preprocess") &&
              !strcmp(app_opts_str(o, "transformer-preprocess"), ""),
          "empty string value");
    CHECK(app_opts_int(o, "mini-batch") == 16, "later occurrence wins");
    CHECK(app_opts_source(o, "mini-batch") == APP_SRC_CMDLINE, "source cmdline");
    app_opts_free(o);
}

static void test_units(void) {
    app_freq f;
    CHECK(app_parse_freq("10000t", &f) && f.n == 10000 && f.unit == 't', "t");
    CHECK(app_parse_freq("1e", &f) && f.n == 1 && f.unit == 'e', "e");
    CHECK(app_parse_freq("0", &f) && f.n == 0 && f.unit == 'u', "0");
    CHECK(!app_parse_freq("5x", &f), "bad unit");
    CHECK(!app_parse_freq("u", &f), "unit alone");
    CHECK(!app_parse_freq("-5u", &f), "negative");
    CHECK(app_parse_freq("300Ku", &f) && f.n == 300000 && f.unit == 'u', "K multiplier");
    CHECK(app_parse_freq("1.5Mt", &f) && f.n == 1500000 && f.unit == 't', "M with fraction");
    CHECK(app_parse_freq("20G", &f) && f.n == 20000000000LL && f.unit == 'u', "G, no unit");
    CHECK(!app_parse_freq("1.2.3u", &f), "two dots");
    CHECK(!app_parse_freq("Ku", &f), "multiplier alone");
    bool b;
    CHECK(app_parse_bool("on", &b) && b, "on");
    CHECK(app_parse_bool("no", &b) && !b, "no");
    CHECK(!app_parse_bool("maybe", &b), "maybe");
}

static void expect_usage_error(const char *what, int argc, const char **argv, const char *needle) {
    app_opts *o = NULL;
    mt_status rc = parse(&o, argc, argv);
    CHECK(rc == MT_ERR_INVALID, "%s: got %s", what, mt_status_str(rc));
    CHECK(o == NULL, "%s: no result on failure", what);
    CHECK(strstr(mt_errmsg(), needle) != NULL, "%s: message '%s' names '%s'", what, mt_errmsg(),
          needle);
    app_opts_free(o);
}

static void test_errors(void) {
    const char *a1[] = {"train", "--no-such-option", "3"};
    expect_usage_error("unknown long", 3, a1, "--no-such-option");
    const char *a2[] = {"train", "-q"};
    expect_usage_error("unknown short", 2, a2, "-q");
    const char *a3[] = {"train", "--mini-batch", "many"};
    expect_usage_error("bad int", 3, a3, "--mini-batch");
    const char *a4[] = {"train", "--mini-batch"};
    expect_usage_error("missing value", 2, a4, "--mini-batch");
    const char *a5[] = {"train", "--valid-freq", "12x"};
    expect_usage_error("bad unit", 3, a5, "--valid-freq");
    const char *a6[] = {"train", "--learn-rate", "1e-4x"};
    expect_usage_error("bad float", 3, a6, "--learn-rate");
    const char *a7[] = {"train", "stray"};
    expect_usage_error("positional", 2, a7, "stray");
    const char *a8[] = {"train", "--train-sets", "--overwrite"};
    expect_usage_error("empty list", 3, a8, "--train-sets");
    const char *a9[] = {"train", "--overwrite=maybe"};
    expect_usage_error("bad bool", 2, a9, "--overwrite");
}

static void test_help(void) {
    const char *argv[] = {"train", "--help"};
    app_opts *o = NULL;
    CHECK_STATUS(parse(&o, 2, argv));
    if (o) CHECK(app_opts_help_wanted(o), "help flag");
    app_opts_free(o);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    app_opts_print_help(defs, n_defs, f);
    fclose(f);
    CHECK(strstr(buf, "-m, --model ARG") != NULL, "help lists alias and name");
    CHECK(strstr(buf, "(default: 10000u)") != NULL, "help lists defaults");
    CHECK(strstr(buf, "--exponential-smoothing") && strstr(buf, "(bare: 1e-4)"), "implicit");
    free(buf);
}

static const char *write_tmp(const char *name, const char *text) {
    static char path[2][256];
    static int k;
    char *p = path[k++ % 2];
    snprintf(p, 256, "/tmp/mtpe_test_options_%d_%s", (int)getpid(), name);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
    return p;
}

/* Ranges in the table (issue 38): checked on the command line, in config
** files (naming the file), by app_opts_set, for every item of a list; an
** integer too big for 64 bits is "out of range", not "not an integer". */
static const app_opt rdefs[] = {
    {"config", 'c', APP_OPT_STRINGS, NULL, NULL, "config files"},
    {"threads", 0, APP_OPT_INT, "1", NULL, "threads", "1..64"},
    {"words", 0, APP_OPT_INT, "0", NULL, "words", "0.."},
    {"factor", 0, APP_OPT_FLOAT, "3", NULL, "factor", "(0..100"},
    {"cap", 0, APP_OPT_FLOAT, "0", NULL, "cap", "..1"},
    {"sizes", 0, APP_OPT_INTS, "8 8", NULL, "sizes", "1..1024"},
    {"freq", 0, APP_OPT_FREQ, "10u", NULL, "freq", "1.."},
    {"sort", 0, APP_OPT_STRING, "none", NULL, "sort", "src|none"},
    {"big", 0, APP_OPT_INT, "0", NULL, "no range"},
};

static mt_status rparse(app_opts **o, int argc, const char **argv) {
    return app_opts_parse(rdefs, (int)(sizeof rdefs / sizeof rdefs[0]), argc, (char **)argv, o);
}

static void expect_range_error(int argc, const char **argv, const char *needle) {
    app_opts *o = NULL;
    mt_status rc = rparse(&o, argc, argv);
    CHECK(rc == MT_ERR_INVALID && o == NULL, "%s %s: got %s", argv[1], argc > 2 ? argv[2] : "",
          mt_status_str(rc));
    CHECK(strstr(mt_errmsg(), needle) != NULL, "%s: message '%s' lacks '%s'", argv[1], mt_errmsg(),
          needle);
    app_opts_free(o);
}

static void test_ranges(void) {
    const char *ok[] = {"x",  "--threads", "64", "--words", "0",      "--factor", "0.5",    "--cap",
                        "-3", "--sizes",   "1",  "1024",    "--freq", "2e",       "--sort", "src"};
    app_opts *o = NULL;
    CHECK_STATUS(rparse(&o, 16, ok));
    if (o) {
        CHECK(app_opts_int(o, "threads") == 64 && app_opts_int_item(o, "sizes", 1) == 1024 &&
                  !strcmp(app_opts_str(o, "sort"), "src"),
              "values in range");
        const char *bad[] = {"0"};
        CHECK(app_opts_set(o, "threads", 1, bad, APP_SRC_CMDLINE) == MT_ERR_INVALID &&
                  app_opts_int(o, "threads") == 64,
              "app_opts_set checks the range and keeps the old value");
    }
    app_opts_free(o);
    const char *a1[] = {"x", "--threads", "0"};
    expect_range_error(3, a1, "--threads: 0 is out of range (1..64)");
    const char *a2[] = {"x", "--threads", "65"};
    expect_range_error(3, a2, "--threads: 65 is out of range (1..64)");
    const char *a3[] = {"x", "--threads=-1"};
    expect_range_error(2, a3, "--threads: -1 is out of range (1..64)");
    const char *a4[] = {"x", "--words", "-1"};
    expect_range_error(3, a4, "--words: -1 is out of range (at least 0)");
    const char *a5[] = {"x", "--factor", "0"};
    expect_range_error(3, a5, "--factor: 0 is out of range (more than 0, at most 100)");
    const char *a6[] = {"x", "--cap", "1.5"};
    expect_range_error(3, a6, "--cap: 1.5 is out of range (at most 1)");
    const char *a7[] = {"x", "--sizes", "8", "0"};
    expect_range_error(4, a7, "--sizes: 0 is out of range (1..1024)");
    const char *a8[] = {"x", "--freq", "0e"};
    expect_range_error(3, a8, "--freq: 0e is out of range (at least 1)");
    const char *a9[] = {"x", "--sort", "trg"};
    expect_range_error(3, a9, "--sort: 'trg' is not one of src, none");
    const char *a10[] = {"x", "--threads", "1000000000000000000000"};
    expect_range_error(3, a10, "--threads: 1000000000000000000000 is out of range (1..64)");
    const char *a11[] = {"x", "--big", "-99999999999999999999"};
    expect_range_error(3, a11, "--big: -99999999999999999999 is out of range (a 64-bit integer)");
    const char *a12[] = {"x", "--threads", "many"};
    expect_range_error(3, a12, "'many' is not an integer");
    /* "--" ends the options; a parser without positionals refuses what follows */
    const char *a13[] = {"x", "--threads", "2", "--"};
    CHECK_STATUS(rparse(&o, 4, a13));
    app_opts_free(o);
    const char *a14[] = {"x", "--", "in.txt"};
    expect_range_error(3, a14, "unexpected argument 'in.txt' after '--'");
    /* config files: the same checks, naming the file */
    const char *cfg = write_tmp("range.yml", "threads: 100\n");
    const char *c1[] = {"x", "-c", cfg};
    expect_range_error(3, c1, "--threads in config file");
    CHECK(strstr(mt_errmsg(), cfg) && strstr(mt_errmsg(), "100 is out of range (1..64)"),
          "config range: %s", mt_errmsg());
    remove(cfg);
    cfg = write_tmp("range2.yml", "sizes: [4, 2000]\nsort: trg\n");
    const char *c2[] = {"x", "-c", cfg};
    expect_range_error(3, c2, "--sizes in config file");
    CHECK(strstr(mt_errmsg(), "2000 is out of range"), "config list item: %s", mt_errmsg());
    remove(cfg);
    cfg = write_tmp("range3.yml", "big: 1000000000000000000000\n");
    const char *c3[] = {"x", "-c", cfg};
    expect_range_error(3, c3, "1000000000000000000000 is out of range");
    remove(cfg);
    /* lenient merges (model.npz.yml) skip an out-of-range value */
    const char *a0[] = {"x"};
    CHECK_STATUS(rparse(&o, 1, a0));
    if (o) {
        CHECK_STATUS(app_opts_merge_yaml(o, "threads: 0\nwords: 5\n", "m.yml", true));
        CHECK(app_opts_int(o, "threads") == 1 && app_opts_int(o, "words") == 5,
              "lenient merge skips the bad value only");
    }
    app_opts_free(o);
    /* --help shows the ranges */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    app_opts_print_help(rdefs, (int)(sizeof rdefs / sizeof rdefs[0]), f);
    fclose(f);
    CHECK(strstr(buf, "(default: 1) (range: 1..64)") && strstr(buf, "(one of: src, none)") &&
              strstr(buf, "(range: more than 0, at most 100)"),
          "help shows ranges:\n%s", buf);
    free(buf);
}

static void test_config(void) {
    const char *c1 = write_tmp("a.yml", "mini-batch: 32\n"
                                        "learn-rate: 0.0003\n"
                                        "seed: 7\n"
                                        "train-sets:\n  - x.en\n  - x.de\n"
                                        "overwrite: true\n"
                                        "valid-freq: 2e\n");
    const char *c2 = write_tmp("b.yml", "seed: 9\ndim-vocabs: [100, 200]\n");
    const char *argv[] = {"train", "-c", c1, c2, "--mini-batch", "4"};
    app_opts *o = NULL;
    CHECK_STATUS(parse(&o, 6, argv));
    if (o) {
        CHECK(app_opts_int(o, "mini-batch") == 4, "command line wins over config");
        CHECK_CLOSE(app_opts_float(o, "learn-rate"), 3e-4, 0, 1e-9, "config over default");
        CHECK(app_opts_source(o, "learn-rate") == APP_SRC_CONFIG, "source config");
        CHECK(app_opts_int(o, "seed") == 9, "later config file wins");
        CHECK(app_opts_count(o, "train-sets") == 2, "list from config");
        CHECK(app_opts_int_item(o, "dim-vocabs", 1) == 200, "flow sequence");
        CHECK(app_opts_flag(o, "overwrite"), "flag from config");
        app_freq f = app_opts_freq(o, "valid-freq");
        CHECK(f.n == 2 && f.unit == 'e', "freq from config");

        /* YAML round trip: dump, parse into fresh options, same values. */
        const char *skip[] = {"config", NULL};
        char *y = app_opts_to_yaml(o, skip);
        CHECK(y != NULL && strstr(y, "config:") == NULL, "skip list honoured");
        const char *a0[] = {"train"};
        app_opts *o2 = NULL;
        CHECK_STATUS(parse(&o2, 1, a0));
        if (y && o2) {
            CHECK_STATUS(app_opts_merge_yaml(o2, y, "dump", false));
            for (int i = 0; i < n_defs; i++) {
                if (!strcmp(defs[i].name, "config")) continue;
                int n = app_opts_count(o, defs[i].name);
                CHECK(n == app_opts_count(o2, defs[i].name), "round trip count %s", defs[i].name);
                for (int j = 0; j < n && j < app_opts_count(o2, defs[i].name); j++) {
                    const char *a = app_opts_item(o, defs[i].name, j);
                    const char *b = app_opts_item(o2, defs[i].name, j);
                    bool fa, fb;
                    if (defs[i].kind == APP_OPT_FLAG && app_parse_bool(a, &fa) &&
                        app_parse_bool(b, &fb)) {
                        CHECK(fa == fb, "round trip flag %s", defs[i].name);
                    } else {
                        CHECK(!strcmp(a, b), "round trip %s: '%s' vs '%s'", defs[i].name, a, b);
                    }
                }
            }
        }
        /* a string with quotes and backslashes survives the dump */
        const char *weird = "a \"b\" \\c: d";
        CHECK_STATUS(app_opts_set(o, "model", 1, &weird, APP_SRC_CMDLINE));
        mt_free(y);
        y = app_opts_to_yaml(o, skip);
        app_opts *o3 = NULL;
        CHECK_STATUS(parse(&o3, 1, a0));
        if (y && o3) {
            CHECK_STATUS(app_opts_merge_yaml(o3, y, "dump", false));
            CHECK(!strcmp(app_opts_str(o3, "model"), weird), "quoted string: %s",
                  app_opts_str(o3, "model"));
        }
        app_opts_free(o3);
        app_opts_free(o2);
        mt_free(y);
    }
    app_opts_free(o);

    /* unknown key in a config file: error naming key and file */
    const char *c3 = write_tmp("c.yml", "mini-batch: 3\nno-such-key: 1\n");
    const char *a3[] = {"train", "-c", c3};
    o = NULL;
    mt_status rc = parse(&o, 3, a3);
    CHECK(rc == MT_ERR_INVALID && strstr(mt_errmsg(), "no-such-key") &&
              strstr(mt_errmsg(), "c.yml"),
          "unknown config key: %s", mt_errmsg());
    app_opts_free(o);
    /* lenient merge skips it */
    const char *a0[] = {"train"};
    o = NULL;
    CHECK_STATUS(parse(&o, 1, a0));
    if (o) {
        CHECK_STATUS(app_opts_merge_file(o, c3, true));
        CHECK(app_opts_int(o, "mini-batch") == 3, "lenient merge applies known keys");
    }
    app_opts_free(o);
    /* bad value in config */
    const char *c4 = write_tmp("d.yml", "mini-batch: lots\n");
    const char *a4[] = {"train", "-c", c4};
    o = NULL;
    rc = parse(&o, 3, a4);
    CHECK(rc == MT_ERR_INVALID && strstr(mt_errmsg(), "mini-batch"), "bad config value: %s",
          mt_errmsg());
    app_opts_free(o);
    /* missing config file */
    const char *a5[] = {"train", "-c", "/nonexistent/x.yml"};
    o = NULL;
    rc = parse(&o, 3, a5);
    CHECK(rc == MT_ERR_IO && strstr(mt_errmsg(), "/nonexistent/x.yml"), "missing config: %s",
          mt_errmsg());
    app_opts_free(o);
    remove(c1);
    remove(c2);
    remove(c3);
    remove(c4);
}

/* Every allocation failure during parsing gives a clean error (no leak,
** checked under ASan). */
static void test_alloc_failures(void) {
    const char *argv[] = {"train", "-t", "a", "b", "--mini-batch", "3", "--overwrite"};
    for (int64_t n = 0; n < 10000; n++) {
        mt_alloc_fail_at(n, false);
        app_opts *o = NULL;
        mt_status rc = parse(&o, 7, argv);
        mt_alloc_fail_at(-1, false);
        if (rc == MT_OK) {
            CHECK(app_opts_int(o, "mini-batch") == 3, "value after %lld failures", (long long)n);
            app_opts_free(o);
            break;
        }
        CHECK(rc == MT_ERR_NOMEM && o == NULL, "failure %lld: %s", (long long)n, mt_status_str(rc));
    }
}

/* ------------------------------------------------- positional arguments */

static const app_opt pdefs[] = {
    {"model", 'm', APP_OPT_STRINGS, NULL, NULL, "models"},
    {"out", 'o', APP_OPT_STRING, NULL, NULL, "output"},
    {"dedup", 'd', APP_OPT_FLAG, NULL, NULL, "dedup"},
    {"verbose", 'v', APP_OPT_FLAG, NULL, NULL, "verbose"},
    {"number", 'n', APP_OPT_INT, "1", NULL, "a number"},
};
static const app_cmd pcmd = {
    .name = "ptest",
    .about = "A test command.\n",
    .opts = pdefs,
    .n_opts = (int)(sizeof pdefs / sizeof pdefs[0]),
    .args = "SRC [MORE...]",
    .min_args = 1,
    .max_args = 3,
};

static void test_positional(void) {
    const char *a1[] = {"ptest", "first", "-o", "x", "--dedup", "second", "-n", "-3", "-", "-dv"};
    app_opts *o = NULL;
    CHECK_STATUS(app_cmd_parse(&pcmd, 10, (char **)a1, &o));
    if (o) {
        CHECK(app_opts_nargs(o) == 3, "three positionals: %d", app_opts_nargs(o));
        CHECK(app_opts_nargs(o) == 3 && !strcmp(app_opts_arg(o, 0), "first") &&
                  !strcmp(app_opts_arg(o, 1), "second") && !strcmp(app_opts_arg(o, 2), "-"),
              "in command-line order, \"-\" is an argument");
        CHECK(!strcmp(app_opts_str(o, "out"), "x") && app_opts_int(o, "number") == -3,
              "values between positionals");
        CHECK(app_opts_flag(o, "dedup") && app_opts_flag(o, "verbose"), "flags, -dv combined");
    }
    app_opts_free(o);

    /* "--" ends the options; a list option stops before it */
    const char *a2[] = {"ptest", "-m", "a", "b", "--", "-x", "--out"};
    CHECK_STATUS(app_cmd_parse(&pcmd, 7, (char **)a2, &o));
    if (o) {
        CHECK(app_opts_count(o, "model") == 2, "list before --");
        CHECK(app_opts_nargs(o) == 2 && !strcmp(app_opts_arg(o, 0), "-x") &&
                  !strcmp(app_opts_arg(o, 1), "--out"),
              "after --: positional");
        CHECK(!app_opts_given(o, "out"), "--out after -- is no option");
    }
    app_opts_free(o);

    /* a flag takes a boolean after it, not a file */
    const char *a3[] = {"ptest", "--dedup", "file", "--verbose", "false"};
    CHECK_STATUS(app_cmd_parse(&pcmd, 5, (char **)a3, &o));
    if (o) {
        CHECK(app_opts_nargs(o) == 1 && !strcmp(app_opts_arg(o, 0), "file"), "file after flag");
        CHECK(app_opts_flag(o, "dedup") && !app_opts_flag(o, "verbose"), "flag values");
    }
    app_opts_free(o);

    /* counts */
    const char *a4[] = {"ptest", "-o", "x"};
    mt_status rc = app_cmd_parse(&pcmd, 3, (char **)a4, &o);
    CHECK(rc == MT_ERR_INVALID && o == NULL && strstr(mt_errmsg(), "missing SRC"), "too few: %s",
          mt_errmsg());
    const char *a5[] = {"ptest", "a", "b", "c", "d"};
    rc = app_cmd_parse(&pcmd, 5, (char **)a5, &o);
    CHECK(rc == MT_ERR_INVALID && o == NULL && strstr(mt_errmsg(), "'d'"), "too many: %s",
          mt_errmsg());
    const char *a6[] = {"ptest", "--help"};
    CHECK_STATUS(app_cmd_parse(&pcmd, 2, (char **)a6, &o));
    CHECK(o && app_opts_help_wanted(o), "--help without the required arguments");
    app_opts_free(o);

    /* -dx: not every letter a flag */
    const char *a7[] = {"ptest", "a", "-dx"};
    rc = app_cmd_parse(&pcmd, 3, (char **)a7, &o);
    CHECK(rc == MT_ERR_INVALID && strstr(mt_errmsg(), "-dx"), "bad flag group: %s", mt_errmsg());
    const char *a8[] = {"ptest", "a", "-dn"};
    rc = app_cmd_parse(&pcmd, 3, (char **)a8, &o);
    CHECK(rc == MT_ERR_INVALID, "a non-flag in a flag group");

    /* a command without positional arguments refuses them */
    app_cmd none = pcmd;
    none.args = NULL;
    none.min_args = none.max_args = 0;
    const char *a9[] = {"ptest", "-o", "x", "stray"};
    rc = app_cmd_parse(&none, 4, (char **)a9, &o);
    CHECK(rc == MT_ERR_INVALID && strstr(mt_errmsg(), "stray"), "no positionals: %s", mt_errmsg());
    const char *a10[] = {"ptest", "--", "stray"};
    rc = app_cmd_parse(&none, 3, (char **)a10, &o);
    CHECK(rc == MT_ERR_INVALID && strstr(mt_errmsg(), "stray"), "no positionals after --");

    /* help: usage line from the declared arguments */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    app_cmd_print_help(&pcmd, f);
    fclose(f);
    CHECK(!strncmp(
              buf, "usage: mtpe ptest [options] SRC [MORE...]\n\nA test command.\n\noptions:\n",
              strlen("usage: mtpe ptest [options] SRC [MORE...]\n\nA test command.\n\noptions:\n")),
          "help layout:\n%s", buf);
    CHECK(strstr(buf, "  -n, --number INT") && strstr(buf, "(default: 1)") &&
              strstr(buf, "  -h, --help"),
          "help lists the options");
    free(buf);
}

/* Every allocation failure while collecting positionals is a clean error. */
static void test_positional_alloc(void) {
    const char *argv[] = {"ptest", "a", "-o", "x", "b", "--", "c"};
    for (int64_t n = 0; n < 10000; n++) {
        mt_alloc_fail_at(n, false);
        app_opts *o = NULL;
        mt_status rc = app_cmd_parse(&pcmd, 7, (char **)argv, &o);
        mt_alloc_fail_at(-1, false);
        if (rc == MT_OK) {
            CHECK(app_opts_nargs(o) == 3, "positionals after %lld failures", (long long)n);
            app_opts_free(o);
            break;
        }
        CHECK(rc == MT_ERR_NOMEM && o == NULL, "failure %lld: %s", (long long)n, mt_status_str(rc));
    }
}

/* ----------------------------------------------------- NUL in a config */

static void test_config_nul(void) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/mtpe_test_options_%d_nul.yml", (int)getpid());
    static const char text[] = "mini-batch: 3\n\0seed: 5\n";
    FILE *f = fopen(path, "wb");
    fwrite(text, 1, sizeof text - 1, f);
    fclose(f);
    const char *argv[] = {"train", "-c", path};
    app_opts *o = NULL;
    mt_status rc = parse(&o, 3, argv);
    CHECK(rc == MT_ERR_FORMAT && o == NULL, "NUL in a config: %s", mt_status_str(rc));
    CHECK(strstr(mt_errmsg(), path) && strstr(mt_errmsg(), "NUL") && strstr(mt_errmsg(), "14"),
          "message names file and offset: %s", mt_errmsg());
    /* the same through app_opts_merge_file (decoder.yml, model.npz.yml), even lenient */
    const char *a0[] = {"train"};
    CHECK_STATUS(parse(&o, 1, a0));
    if (o) {
        CHECK(app_opts_merge_file(o, path, true) == MT_ERR_FORMAT, "lenient merge refuses NUL");
        CHECK(app_opts_int(o, "mini-batch") == 64, "nothing merged");
    }
    app_opts_free(o);
    remove(path);
}

/* ------------------------------------------------------------ commands */

/* Runs main(argc, argv) with stdout and stderr going to files; returns the
** exit code and the outputs (caller frees). */
static int run_captured(int (*main_fn)(int, char **), int argc, const char **argv, char **out,
                        char **err) {
    fflush(stdout);
    fflush(stderr);
    FILE *fo = tmpfile(), *fe = tmpfile();
    int so = dup(1), se = dup(2);
    dup2(fileno(fo), 1);
    dup2(fileno(fe), 2);
    int rc = main_fn(argc, (char **)argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    FILE *fs[2] = {fo, fe};
    char **dst[2] = {out, err};
    for (int k = 0; k < 2; k++) {
        long n = ftell(fs[k]);
        rewind(fs[k]);
        *dst[k] = calloc((size_t)(n > 0 ? n : 0) + 1, 1);
        if (n > 0 && fread(*dst[k], 1, (size_t)n, fs[k]) != (size_t)n) (*dst[k])[0] = '\0';
        fclose(fs[k]);
    }
    return rc;
}

/* help has a line "  -x, --name ..." or "      --name ..." in its options. */
static bool lists_option(const char *help, const char *dashed) {
    const char *at = strstr(help, "\noptions:\n");
    size_t n = strlen(dashed);
    while (at != NULL && (at = strstr(at + 1, dashed)) != NULL) {
        bool line_start = (at[-1] == ' ' && at[-2] == ' ' && at[-3] == ' ' && at[-7] == '\n') ||
                          (at[-1] == ' ' && at[-2] == ',' && at[-5] == ' ' && at[-7] == '\n');
        if (line_start && (at[n] == ' ' || at[n] == '\n')) return true;
    }
    return false;
}

typedef struct cmd_case {
    const app_cmd *cmd;
    int (*main_fn)(int, char **);
    const char *argv0, *sub; /* the command's argv[0] and its subcommand (or NULL) */
} cmd_case;

static const cmd_case cases[] = {
    {&app_translate_cmd, app_translate_main, "translate", NULL},
    {&app_postedit_cmd, app_postedit_main, "postedit", NULL},
    {&app_score_cmd, app_score_main, "score", NULL},
    {&app_train_cmd, app_train_main, "train", NULL},
    {&app_rescore_cmd, app_rescore_main, "rescore", NULL},
    {&app_edit_cmd, app_edit_main, "edit", NULL},
    {&app_convert_cmd, app_convert_main, "convert", NULL},
    {&app_align_cmd, app_align_main, "align", NULL},
    {&app_shortlist_cmd, app_shortlist_main, "shortlist", NULL},
    {&app_eval_cmd, app_eval_main, "eval", NULL},
    {&app_demo_cmd, app_demo_main, "demo", NULL},
    {&app_corpus_build_cmd, app_corpus_main, "corpus", "build"},
    {&app_corpus_export_cmd, app_corpus_main, "corpus", "export"},
    {&app_bench_kernels_cmd[0], app_bench_main, "bench", "gemm"},
    {&app_bench_kernels_cmd[1], app_bench_main, "bench", "gemm-int"},
    {&app_bench_kernels_cmd[2], app_bench_main, "bench", "topk"},
    {&app_bench_kernels_cmd[3], app_bench_main, "bench", "attn"},
    {&app_bench_edit_cmd, app_bench_main, "bench", "edit"},
    {&app_bench_translate_cmd, app_bench_main, "bench", "translate"},
    {&app_bench_train_cmd, app_bench_main, "bench", "train"},
};
static const int n_cases = (int)(sizeof cases / sizeof cases[0]);

/* Runs a command line of one case (args after the (sub)command name). */
static int run_case(const cmd_case *c, int n, const char *const *args, char **out, char **err) {
    const char *argv[32];
    int argc = 0;
    argv[argc++] = c->argv0;
    if (c->sub) argv[argc++] = c->sub;
    for (int i = 0; i < n && argc < 31; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    return run_captured(c->main_fn, argc, argv, out, err);
}

static void test_command_help(void) {
    for (int i = 0; i < n_cases; i++) {
        const cmd_case *c = &cases[i];
        const char *name = c->cmd->name;
        char *out = NULL, *err = NULL, *want = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&want, &len);
        app_cmd_print_help(c->cmd, f);
        fclose(f);
        const char *help[] = {"--help"};
        int rc = run_case(c, 1, help, &out, &err);
        CHECK(rc == 0, "%s --help: exit %d", name, rc);
        CHECK(!strcmp(out, want), "%s --help is the generated help:\n%s", name, out);
        CHECK(err[0] == '\0', "%s --help: nothing on stderr: %s", name, err);
        char usage[64];
        snprintf(usage, sizeof usage, "usage: mtpe %s ", name);
        CHECK(!strncmp(out, usage, strlen(usage)), "%s: usage line first", name);
        CHECK(strstr(out, "\noptions:\n") && strstr(out, "  -h, --help"), "%s: options", name);
        for (int k = 0; k < c->cmd->n_opts; k++) {
            const app_opt *d = &c->cmd->opts[k];
            char needle[96];
            snprintf(needle, sizeof needle, "--%s", d->name);
            CHECK(lists_option(out, needle), "%s --help lists %s", name, needle);
            if (d->alias) {
                snprintf(needle, sizeof needle, "-%c, --%s", d->alias, d->name);
                CHECK(strstr(out, needle) != NULL, "%s --help lists %s", name, needle);
            }
        }
        /* -h too; and an unknown option: one line on stderr, exit 2 */
        free(out);
        free(err);
        const char *h[] = {"-h"};
        CHECK(run_case(c, 1, h, &out, &err) == 0 && !strcmp(out, want), "%s -h", name);
        free(out);
        free(err);
        const char *bad[] = {"--no-such-option"};
        rc = run_case(c, 1, bad, &out, &err);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "mtpe %s: ", name);
        CHECK(rc == 2, "%s --no-such-option: exit %d", name, rc);
        CHECK(!strncmp(err, prefix, strlen(prefix)) && strstr(err, "--no-such-option") &&
                  strchr(err, '\n') == err + strlen(err) - 1,
              "%s: one line naming the option: %s", name, err);
        CHECK(out[0] == '\0', "%s: nothing on stdout", name);
        free(out);
        free(err);
        free(want);
    }
}

static const cmd_case *find_case(const char *name) {
    for (int i = 0; i < n_cases; i++)
        if (!strcmp(cases[i].cmd->name, name)) return &cases[i];
    return NULL;
}

/* Parses args (after the command name) with the command's table. */
static app_opts *parse_as(const char *name, int n, const char **args) {
    const cmd_case *c = find_case(name);
    const char *argv[32] = {name};
    for (int i = 0; i < n && i < 31; i++)
        argv[i + 1] = args[i];
    app_opts *o = NULL;
    mt_status rc = app_cmd_parse(c->cmd, n + 1, (char **)argv, &o);
    CHECK(rc == MT_OK, "%s: %s", name, mt_errmsg());
    return o;
}

#define ARGS(...)                                                                                  \
    (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), (const char *[]) {        \
        __VA_ARGS__                                                                                \
    }

static bool str_is(const app_opts *o, const char *name, const char *want) {
    return o && !strcmp(app_opts_str(o, name), want);
}

/* The options the hand-written parsers of align, shortlist, convert, eval,
** demo and bench documented are still accepted, with the same meaning. */
static void test_former_hand_parsers(void) {
    app_opts *o = parse_as("align", ARGS("-i", "c", "-dov", "-r", "-N", "-I", "3", "-p", "0.1",
                                         "-T", "2", "-a", "0.05", "--both", "--sym", "intersect",
                                         "--lex-out", "l", "-q"));
    CHECK(o && str_is(o, "input", "c") && app_opts_flag(o, "favor-diagonal") &&
              app_opts_flag(o, "optimize-tension") && app_opts_flag(o, "variational-bayes") &&
              app_opts_flag(o, "reverse") && app_opts_flag(o, "no-null-word") &&
              app_opts_int(o, "iterations") == 3 && app_opts_float(o, "p0") == 0.1 &&
              app_opts_float(o, "diagonal-tension") == 2 && app_opts_float(o, "alpha") == 0.05 &&
              app_opts_flag(o, "both") && str_is(o, "sym", "intersect") &&
              str_is(o, "lex-out", "l") && app_opts_flag(o, "quiet"),
          "align: short options");
    app_opts_free(o);
    o = parse_as("align",
                 ARGS("-s", "a", "-t", "b", "--favor-diagonal", "--optimize-tension",
                      "--variational-bayes", "--reverse", "--no-null-word", "--iterations", "4",
                      "--p0", "0.2", "--diagonal-tension", "3", "--alpha", "0.1", "--quiet"));
    CHECK(o && str_is(o, "source", "a") && str_is(o, "target", "b") &&
              app_opts_int(o, "iterations") == 4 && app_opts_float(o, "p0") == 0.2 &&
              app_opts_flag(o, "no-null-word"),
          "align: long options");
    app_opts_free(o);
    o = parse_as("align", ARGS("-i", "c"));
    CHECK(o && app_opts_int(o, "iterations") == 5 && app_opts_float(o, "p0") == 0.08 &&
              app_opts_float(o, "diagonal-tension") == 4 && app_opts_float(o, "alpha") == 0.01 &&
              str_is(o, "sym", "grow-diag-final-and") && !app_opts_flag(o, "favor-diagonal"),
          "align: fast_align's defaults");
    app_opts_free(o);

    o = parse_as("shortlist",
                 ARGS("--convert", "lex", "20", "5", "0", "--vocabs", "a", "b", "--dump", "x"));
    CHECK(o && app_opts_count(o, "convert") == 4 && app_opts_count(o, "vocabs") == 2 &&
              str_is(o, "dump", "x"),
          "shortlist --convert");
    app_opts_free(o);
    o = parse_as("shortlist", ARGS("--shortlist", "lex.bin", "-v", "a", "b", "-i", "in",
                                   "--mini-batch", "2", "--no-check"));
    CHECK(o && app_opts_count(o, "shortlist") == 1 && str_is(o, "input", "in") &&
              app_opts_int(o, "mini-batch") == 2 && app_opts_flag(o, "no-check"),
          "shortlist --shortlist");
    app_opts_free(o);
    o = parse_as("shortlist",
                 ARGS("--src", "s", "--trg", "t", "--align", "al", "-o", "out", "--t2s", "t2s",
                      "--info", "i", "-d", "d", "--dump-shortlist", "d2"));
    CHECK(o && str_is(o, "src", "s") && str_is(o, "trg", "t") && str_is(o, "align", "al") &&
              str_is(o, "output", "out") && str_is(o, "t2s", "t2s") && str_is(o, "info", "i") &&
              str_is(o, "dump-shortlist", "d2"),
          "shortlist extraction options");
    app_opts_free(o);

    o = parse_as("convert", ARGS("-f", "a.npz", "-t", "b.bin", "-g", "int8"));
    CHECK(o && str_is(o, "from", "a.npz") && str_is(o, "to", "b.bin") &&
              str_is(o, "gemm-type", "int8") && app_opts_nargs(o) == 0,
          "convert -f -t -g");
    app_opts_free(o);
    o = parse_as("convert", ARGS("a.npz", "--gemm-type=int16", "b.bin"));
    CHECK(o && app_opts_nargs(o) == 2 && str_is(o, "gemm-type", "int16"),
          "convert MODEL OUT, --gemm-type=");
    app_opts_free(o);
    o = parse_as("convert", ARGS("--info", "a.npz"));
    CHECK(o && app_opts_flag(o, "info") && app_opts_nargs(o) == 1, "convert --info MODEL");
    app_opts_free(o);
    o = parse_as("convert", ARGS("-i", "--", "-odd.npz"));
    CHECK(o && app_opts_nargs(o) == 1 && !strcmp(app_opts_arg(o, 0), "-odd.npz"), "convert --");
    app_opts_free(o);

    o = parse_as("eval", ARGS("-r", "ref", "-i", "hyp", "--metrics", "bleu"));
    CHECK(o && str_is(o, "ref", "ref") && str_is(o, "input", "hyp") &&
              app_opts_count(o, "metrics") == 1,
          "eval short");
    app_opts_free(o);
    o = parse_as("eval", ARGS("--ref", "r", "--input", "h"));
    CHECK(o && app_opts_count(o, "metrics") == 2, "eval long, both metrics by default");
    app_opts_free(o);

    o = parse_as("demo", ARGS("m.npz"));
    CHECK(o && app_opts_nargs(o) == 1, "demo MODEL");
    app_opts_free(o);

    o = parse_as("bench gemm", ARGS("--repeat", "3", "--peak-gflops", "100", "--peak-gops", "500"));
    CHECK(o && app_opts_int(o, "repeat") == 3 && app_opts_float(o, "peak-gflops") == 100 &&
              app_opts_float(o, "peak-gops") == 500,
          "bench gemm options");
    app_opts_free(o);

    o = parse_as("corpus build", ARGS("--dedup", "a.po", "-o", "p", "--src-lang", "en", "-t", "de",
                                      "--strip-accelerators", "true", "b.mo", "--", "-c.po"));
    CHECK(o && app_opts_nargs(o) == 3 && !strcmp(app_opts_arg(o, 2), "-c.po") &&
              app_opts_flag(o, "strip-accelerators") && str_is(o, "trg-lang", "de"),
          "corpus build: files among the options");
    app_opts_free(o);

    o = parse_as("edit", ARGS("doc.po", "-m", "a.npz", "b.npz", "--db", "x.db"));
    CHECK(o && app_opts_nargs(o) == 1 && !strcmp(app_opts_arg(o, 0), "doc.po") &&
              app_opts_count(o, "models") == 2,
          "edit FILE first");
    app_opts_free(o);
    o = parse_as("edit", ARGS("-m", "a.npz", "--", "doc.po"));
    CHECK(o && app_opts_nargs(o) == 1 && !strcmp(app_opts_arg(o, 0), "doc.po"),
          "edit -- FILE at the end");
    app_opts_free(o);
}

/* Usage errors of the converted commands: exit 2, one line on stderr. */
static void test_command_usage_errors(void) {
    static const struct {
        const char *cmd;
        int n;
        const char *args[6];
        const char *needle;
    } errs[] = {
        {"align", 2, {"-p0", "0.1"}, "-p0"}, /* removed spelling */
        {"align", 1, {"-d"}, "-i CORPUS"},
        {"align", 3, {"-i", "c", "-I"}, "--iterations"},
        {"align", 4, {"-i", "c", "--sym", "grow"}, "grow"},
        {"shortlist", 2, {"--first", "5"}, "--first"}, /* removed: duplicates */
        {"shortlist", 3, {"--convert", "lex", "x"}, "'x'"},
        {"shortlist", 6, {"--convert", "l", "--vocabs", "a", "--dump", "d"}, "--vocabs"},
        {"convert", 0, {NULL}, "MODEL"},
        {"convert", 3, {"a", "b", "c"}, "'c'"},
        {"eval", 0, {NULL}, "-r REF"},
        {"eval", 4, {"-r", "r", "--metrics", "wer"}, "wer"},
        {"demo", 2, {"a", "b"}, "'b'"},
        {"edit", 0, {NULL}, "FILE"},
        {"bench gemm", 2, {"--repeat", "0"}, "--repeat"},
        {"rescore", 1, {"--pipeline"}, "--pipeline"}, /* removed: not implemented */
        {"corpus build", 4, {"-s", "en", "-t", "de"}, "missing"},
        /* issue 38: out-of-range values, each naming the option */
        {"translate", 2, {"--mini-batch", "-1"}, "--mini-batch: -1 is out of range"},
        {"translate", 2, {"--mini-batch", "0"}, "--mini-batch: 0 is out of range"},
        {"translate", 2, {"--mini-batch", "1000000000"}, "--mini-batch: 1000000000 is out of"},
        {"translate", 4, {"--mini-batch", "1000", "--maxi-batch", "10000"}, "at most 1000000"},
        {"translate", 2, {"--maxi-batch", "0"}, "--maxi-batch: 0 is out of range"},
        {"translate", 2, {"--maxi-batch", "-5"}, "--maxi-batch: -5 is out of range"},
        {"translate", 2, {"--cpu-threads", "0"}, "--cpu-threads: 0 is out of range"},
        {"translate", 2, {"--cpu-threads", "-1"}, "--cpu-threads: -1 is out of range"},
        {"translate", 2, {"--cpu-threads", "1000"}, "--cpu-threads: 1000 is out of range"},
        {"translate", 2, {"--max-length", "0"}, "--max-length: 0 is out of range"},
        {"translate", 2, {"--max-length", "-1"}, "--max-length: -1 is out of range"},
        {"translate", 2, {"--max-length-factor", "0"}, "--max-length-factor: 0 is out of range"},
        {"translate", 2, {"--max-length-factor", "-1"}, "--max-length-factor: -1 is out of"},
        {"translate", 2, {"--mini-batch-words", "-1"}, "--mini-batch-words: -1 is out of range"},
        {"translate", 2, {"--maxi-batch-sort", "trg"}, "'trg' is not one of src, none"},
        {"translate", 5, {"--shortlist", "lex.bin", "0", "0", "0"}, "best 0 is out of range"},
        {"translate", 2, {"--", "in.txt"}, "'in.txt' after '--'"},
        {"score", 2, {"--mini-batch", "0"}, "--mini-batch: 0 is out of range"},
        {"edit", 3, {"f.po", "--cpu-threads", "65"}, "--cpu-threads: 65 is out of range (1..64)"},
        {"edit", 3, {"f.po", "--qa", "never"}, "'never' is not one of confirm, save, off"},
        {"train", 2, {"--dim-emb", "1000000000000"}, "--dim-emb: 1000000000000 is out of range"},
        {"bench gemm", 2, {"--repeat", "65"}, "--repeat: 65 is out of range (1..64)"},
    };
    for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
        const cmd_case *c = find_case(errs[i].cmd);
        char *out = NULL, *err = NULL;
        int rc = run_case(c, errs[i].n, errs[i].args, &out, &err);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "mtpe %s: ", errs[i].cmd);
        CHECK(rc == 2, "%s %s: exit %d", errs[i].cmd, errs[i].needle, rc);
        CHECK(!strncmp(err, prefix, strlen(prefix)) && strstr(err, errs[i].needle) &&
                  strchr(err, '\n') == err + strlen(err) - 1,
              "%s: one line naming %s: %s", errs[i].cmd, errs[i].needle, err);
        free(out);
        free(err);
    }
    /* subcommands: missing and unknown are usage errors too */
    char *out = NULL, *err = NULL;
    const char *a1[] = {"corpus"};
    CHECK(run_captured(app_corpus_main, 1, a1, &out, &err) == 2 &&
              !strncmp(err, "mtpe corpus: missing subcommand", 31),
          "corpus alone: %s", err ? err : "");
    free(out);
    free(err);
    const char *a2[] = {"bench", "frobnicate"};
    CHECK(run_captured(app_bench_main, 2, a2, &out, &err) == 2 &&
              strstr(err, "unknown subcommand 'frobnicate'"),
          "bench frobnicate: %s", err);
    free(out);
    free(err);
    const char *a3[] = {"bench", "--help"};
    CHECK(run_captured(app_bench_main, 2, a3, &out, &err) == 0 && strstr(out, "\n  gemm-int ") &&
              strstr(out, "\n  train "),
          "bench --help lists the benchmarks: %s", out);
    free(out);
    free(err);
    /* a config with a NUL byte: one line naming the file, exit 1 */
    char path[256];
    snprintf(path, sizeof path, "/tmp/mtpe_test_options_%d_nul2.yml", (int)getpid());
    FILE *f = fopen(path, "wb");
    fwrite("beam-size: 4\n\0", 1, 14, f);
    fclose(f);
    const char *a4[] = {"score", "-c", path};
    int rc = run_captured(app_score_main, 3, a4, &out, &err);
    CHECK(rc == 1 && !strncmp(err, "mtpe score: ", 12) && strstr(err, path) && strstr(err, "NUL") &&
              strchr(err, '\n') == err + strlen(err) - 1,
          "score -c with a NUL: exit %d, %s", rc, err);
    free(out);
    free(err);
    remove(path);
}

int main(void) {
    test_defaults();
    test_values();
    test_units();
    test_errors();
    test_help();
    test_ranges();
    test_config();
    test_alloc_failures();
    test_positional();
    test_positional_alloc();
    test_config_nul();
    test_command_help();
    test_former_hand_parsers();
    test_command_usage_errors();
    TEST_MAIN_END();
}
