/* xml_errors.c: first-error capture around libxml2 parsing (xml_errors.h). */
#include "xml_errors.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <libxml/globals.h>

void app_xml_errors_keep(void *ctx, xmlErrorPtr e) {
    app_xml_errors *er = ctx;
    if (er->msg[0] != '\0' || e == NULL || e->level < XML_ERR_ERROR) return;
    snprintf(er->msg, sizeof er->msg, "%s", e->message ? e->message : "error");
    size_t n = strlen(er->msg);
    while (n > 0 && (er->msg[n - 1] == '\n' || er->msg[n - 1] == ' '))
        er->msg[--n] = '\0';
    er->line = e->line;
}

void app_xml_errors_begin(app_xml_errors *er) {
    memset(er, 0, sizeof *er);
    er->old_fn = xmlStructuredError;
    er->old_ctx = xmlStructuredErrorContext;
    xmlSetStructuredErrorFunc(er, app_xml_errors_keep);
}

void app_xml_errors_end(app_xml_errors *er) { xmlSetStructuredErrorFunc(er->old_ctx, er->old_fn); }

mt_status app_xml_parse(const char *path, const char *data, size_t len, const char *encoding,
                        const char *prefix, xmlDocPtr *out) {
    *out = NULL;
    if (len > INT_MAX) return mt_seterr(MT_ERR_FORMAT, "%s: too large for libxml2", path);
    xmlInitParser();
    app_xml_errors er;
    app_xml_errors_begin(&er);
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (ctxt != NULL) {
        *out = xmlCtxtReadMemory(ctxt, data, (int)len, path, encoding,
                                 XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
        if (*out == NULL && er.msg[0] == '\0') {
            xmlErrorPtr e = xmlCtxtGetLastError(ctxt);
            if (e) app_xml_errors_keep(&er, e);
        }
        xmlFreeParserCtxt(ctxt);
    }
    app_xml_errors_end(&er);
    if (*out != NULL) return MT_OK;
    if (er.msg[0] == '\0') return mt_seterr(MT_ERR_NOMEM, "out of memory parsing %s", path);
    return mt_seterr(MT_ERR_FORMAT, "%s:%d: %s%s", path, er.line, prefix, er.msg);
}
