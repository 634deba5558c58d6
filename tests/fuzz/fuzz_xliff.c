/*
** fuzz_xliff.c: XLIFF 1.2 (app/formats/doc_xliff.c over libxml2): opened,
** changed, saved and read back (doc_common.h).  Seeds:
** assets/samples/sample.de.xlf, tests/fuzz/seeds/xliff.
*/
#include <libxml/parser.h>

#include "doc_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int init;
    if (!init) xmlInitParser();
    init = 1;
    return fuzz_doc(".xlf", APP_DOC_FORMAT_XLIFF, data, size);
}
