/*
** fuzz_vocab_yml.c: Marian's YAML vocabularies (models/vocab.c): a file
** *.yml loaded, a line encoded and decoded.  Seeds: tests/fuzz/seeds/vocab_yml.
*/
#include "vocab_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    return fuzz_vocab(".yml", data, size);
}
