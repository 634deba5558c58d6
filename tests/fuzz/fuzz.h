/*
** fuzz.h: what the fuzz targets in tests/fuzz/ share.
**
** Each fuzz_*.c is one parser's target: LLVMFuzzerTestOneInput(data, size)
** feeds the bytes to the parser (and, where a parser reads files only, a
** file holding them) and then to the code that uses what it parsed,
** freeing everything.  It returns 0 whatever the parser says: errors are
** expected; crashes, leaks, hangs and sanitizer reports are the findings.
**
** The same file is linked two ways (tests/CMakeLists.txt):
**   - with libFuzzer (clang, -DMT_FUZZ=ON, scripts/fuzz.sh SECONDS): the
**     target alone, libFuzzer's main;
**   - with replay.c (any compiler, the ctest fuzz_*): a plain main that runs
**     the target over a seed corpus and a fixed number of deterministic
**     mutations of each seed, a bounded run for CI.
*/
#ifndef MT_FUZZ_H
#define MT_FUZZ_H
#include <stddef.h>
#include <stdint.h>

#include "mt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes data to a file in this process's scratch folder whose name ends in
** suffix (".po", ".yml": parsers that read files choose by suffix) and
** returns its path (static storage, valid until the next call); NULL when
** it cannot be written. */
const char *fuzz_file(const char *suffix, const uint8_t *data, size_t size);
/* A path for output in the scratch folder (static storage as above). */
const char *fuzz_out_path(const char *name);
/* A NUL-terminated heap copy of data (free()); NULL on failure. */
char *fuzz_cstr(const uint8_t *data, size_t size);
/* Routes the library's log lines to nowhere (once). */
void fuzz_quiet(void);
/* With MT_FUZZ_VERBOSE set: prints what the parser said of the input (to
** check that seeds parse: mutations of a refused seed reach little). */
void fuzz_note(const char *what, mt_status rc);

#endif
