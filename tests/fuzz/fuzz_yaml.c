/*
** fuzz_yaml.c: YAML configs: the model config (mt_yaml_parse and
** mt_model_config_from_yaml, engine/yaml.c and models/) and a command's
** config file (-c, app_opts_merge_yaml, app/options.c) against a table
** with each kind of option and range.  Seeds: the model.npz.yml and
** decoder.yml files of tests/data/marian, tests/fuzz/seeds/yaml.
*/
#include <stdlib.h>

#include "fuzz.h"
#include "model.h"
#include "mt.h"
#include "options.h"

static const app_opt opts[] = {
    {"config", 'c', APP_OPT_STRINGS, NULL, NULL, "config files", NULL},
    {"beam-size", 'b', APP_OPT_INT, "12", NULL, "beam", "1..1024"},
    {"normalize", 'n', APP_OPT_FLOAT, "0", "1", "norm", "0..10"},
    {"models", 'm', APP_OPT_STRINGS, NULL, NULL, "models", NULL},
    {"maxi-batch-sort", 0, APP_OPT_STRING, "src", NULL, "sort", "src|none"},
    {"dim-vocabs", 0, APP_OPT_INTS, "0 0", NULL, "sizes", "0.."},
    {"weights", 0, APP_OPT_FLOATS, NULL, NULL, "weights", NULL},
    {"save-freq", 0, APP_OPT_FREQ, "10000u", NULL, "freq", NULL},
    {"valid-freqs", 0, APP_OPT_FREQS, NULL, NULL, "freqs", NULL},
    {"quiet", 0, APP_OPT_FLAG, NULL, NULL, "quiet", NULL},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    char *text = fuzz_cstr(data, size);
    if (text == NULL) return 0;
    mt_yaml *y = NULL;
    mt_status rc = mt_yaml_parse(text, &y);
    fuzz_note("yaml", rc);
    if (rc == MT_OK) {
        for (int i = 0; i < mt_yaml_count(y); i++) {
            const char *k = mt_yaml_key(y, i);
            (void)mt_yaml_get(y, k);
            for (int j = 0; j < mt_yaml_seq_len(y, k) && j < 16; j++)
                (void)mt_yaml_seq_item(y, k, j);
        }
        mt_yaml_free(y);
    }
    mt_model_config c = mt_model_config_default();
    if (mt_model_config_from_yaml(text, &c) == MT_OK) (void)mt_model_config_check(&c);
    char arg0[] = "fuzz";
    char *argv[] = {arg0, NULL};
    for (int lenient = 0; lenient < 2; lenient++) {
        app_opts *o = NULL;
        if (app_opts_parse(opts, (int)(sizeof opts / sizeof opts[0]), 1, argv, &o) != MT_OK) break;
        fuzz_note("config", app_opts_merge_yaml(o, text, "fuzz.yml", lenient));
        app_opts_free(o);
    }
    free(text);
    return 0;
}
