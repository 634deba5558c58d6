/*
** test_options.c: the Marian-style option parser of app/options.c: single
** and list values, short aliases, bare flags and implicit values, unit
** suffixes, config files merged under the command line, unknown options and
** bad values as usage errors, YAML round trip.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int main(void) {
    test_defaults();
    test_values();
    test_units();
    test_errors();
    test_help();
    test_config();
    test_alloc_failures();
    TEST_MAIN_END();
}
