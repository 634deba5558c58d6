/* vocab_common.h: the vocabulary fuzz targets' body (fuzz_vocab_*.c). */
#include <stdlib.h>

#include "fuzz.h"
#include "mt.h"
#include "vocab.h"

/* Loads data as a vocabulary file named *suffix, then encodes and decodes
** a line with it and looks up a few ids. */
static int fuzz_vocab(const char *suffix, const uint8_t *data, size_t size) {
    fuzz_quiet();
    const char *path = fuzz_file(suffix, data, size);
    mt_vocab *v = NULL;
    if (path == NULL) return 0;
    mt_status rc = mt_vocab_load(path, 0, &v);
    fuzz_note("vocab", rc);
    if (rc != MT_OK) return 0;
    int32_t *ids = NULL;
    int64_t n = 0;
    if (mt_vocab_encode(v, "Hello w\xc3\xb6rld, the house.", MT_VOCAB_ADD_EOS, &ids, &n) == MT_OK) {
        char *text = NULL;
        if (mt_vocab_decode(v, ids, n, 0, &text) == MT_OK) mt_free(text);
        mt_free(ids);
    }
    int32_t size_v = mt_vocab_size(v);
    for (int32_t id = -1; id <= size_v && id < 64; id++)
        (void)mt_vocab_piece(v, id);
    (void)mt_vocab_id(v, "</s>");
    (void)mt_vocab_dim(v);
    mt_vocab_free(v);
    return 0;
}
