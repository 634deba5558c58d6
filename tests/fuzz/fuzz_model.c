/*
** fuzz_model.c: model files, .npz and Marian .bin (engine/npz.c,
** engine/bin.c, engine/model_file.c): read from memory by magic, the
** config of special:model.yml parsed and checked, then written back in
** both formats (to nowhere).  Seeds: tests/data/npz, tests/fuzz/seeds/model.
*/
#include <stdlib.h>

#include "fuzz.h"
#include "model.h"
#include "mt.h"

static mt_status sink(void *user, const void *data, size_t n) {
    (void)user;
    (void)data;
    (void)n;
    return MT_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    mt_model_file *m = NULL;
    mt_status rc = mt_model_file_read_mem(data, size, "fuzz-model", &m);
    fuzz_note("model file", rc);
    if (rc != MT_OK) return 0;
    if (m->config_yaml != NULL) {
        mt_model_config c = mt_model_config_default();
        if (mt_model_config_from_yaml(m->config_yaml, &c) == MT_OK) (void)mt_model_config_check(&c);
    }
    (void)mt_npz_write_to(m, "fuzz-model.npz", sink, NULL);
    (void)mt_bin_write_to(m, "fuzz-model.bin", sink, NULL);
    mt_model_file_free(m);
    return 0;
}
