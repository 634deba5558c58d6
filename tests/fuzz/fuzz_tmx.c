/*
** fuzz_tmx.c: TMX translation memories (app_tmx_read, app/formats/
** corpus_io.c over libxml2), read for en -> de and for any pair.  Seeds:
** tests/fuzz/seeds/tmx.  (There is no TBX reader in mtpe, so no TBX target.)
*/
#include <libxml/parser.h>
#include <string.h>

#include "corpus_io.h"
#include "fuzz.h"

static int count(void *user, const char *src, const char *trg) {
    size_t *n = user; /* a side the unit lacks is NULL */
    *n += (src ? strlen(src) : 0) + (trg ? strlen(trg) : 0) + 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int init;
    if (!init) xmlInitParser();
    init = 1;
    fuzz_quiet();
    const char *path = fuzz_file(".tmx", data, size);
    if (path == NULL) return 0;
    size_t n = 0;
    fuzz_note("tmx", app_tmx_read(path, "en", "de", count, &n));
    (void)app_tmx_read(path, "de-DE", "en_US", count, &n);
    return 0;
}
