/*
** fuzz_vocab_spm.c: SentencePiece models (models/vocab.c over
** models/spm_wrap.cpp and libsentencepiece): a file *.spm loaded, a line
** encoded and decoded.  libsentencepiece itself is the system's, built
** without coverage: mutations explore our wrapper and what the library
** accepts.  Seeds: the vocab.spm of tests/data/marian/transformer-tiny.
*/
#include "vocab_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    return fuzz_vocab(".spm", data, size);
}
