/*
** fuzz_bin.c: Marian's .bin model format alone (engine/bin.c), so that
** mutations of a .bin are never taken for another format; the items read
** are written back as .bin (to nowhere).  Seeds: tests/fuzz/seeds/bin.
*/
#include "fuzz.h"
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
    mt_status rc = mt_bin_read_mem(data, size, "fuzz.bin", &m);
    fuzz_note(".bin", rc);
    if (rc != MT_OK) return 0;
    (void)mt_bin_write_to(m, "fuzz.bin", sink, NULL);
    mt_model_file_free(m);
    return 0;
}
