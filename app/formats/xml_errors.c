/* xml_errors.c: first-error capture around libxml2 parsing (xml_errors.h). */
#include "xml_errors.h"

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
