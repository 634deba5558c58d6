/*
** fuzz_po.c: gettext PO files (app/formats/doc_po.c): opened, changed,
** saved and read back (doc_common.h).  Seeds: assets/samples/sample.de.po,
** tests/fuzz/seeds/po.
*/
#include "doc_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    return fuzz_doc(".po", APP_DOC_FORMAT_PO, data, size);
}
