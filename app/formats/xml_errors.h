/*
** xml_errors.h: keeps the first error libxml2 reports while a document is
** parsed (message without its trailing newline, and line), in place of
** libxml2's printing to stderr; the handler in force before is restored.
** Used by the XLIFF reader (doc_xliff.c), the TMX reader (corpus_io.c) and
** the TBX reader (glossary.c), through app_xml_parse.
*/
#ifndef APP_XML_ERRORS_H
#define APP_XML_ERRORS_H
#include <stddef.h>

#include <libxml/parser.h>
#include <libxml/xmlerror.h>

#include "mt_base.h"

typedef struct app_xml_errors {
    xmlStructuredErrorFunc old_fn;
    void *old_ctx;
    char msg[512]; /* "" while no error was seen */
    int line;
} app_xml_errors;

void app_xml_errors_begin(app_xml_errors *er);
void app_xml_errors_end(app_xml_errors *er);
/* The handler itself: keeps e when it is the first error (level >= error);
** also for an error taken from the parser context afterwards. */
void app_xml_errors_keep(void *ctx, xmlErrorPtr e);

/* Parses len bytes of XML (encoding NULL: as the document declares) with
** the network off and libxml2's printing replaced: *out gets the document
** (caller xmlFreeDoc()s).  Errors: MT_ERR_FORMAT "PATH:LINE: PREFIXfirst
** error" (prefix e.g. "malformed XML: ", or "") or "PATH: too large for
** libxml2"; MT_ERR_NOMEM. */
mt_status app_xml_parse(const char *path, const char *data, size_t len, const char *encoding,
                        const char *prefix, xmlDocPtr *out);

#endif
