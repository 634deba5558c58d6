/*
** status.c: status names, the per-thread error message and the abort path.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mt_base.h"

static _Thread_local char errbuf[1024];
static void (*abort_hook)(void);

const char *mt_status_str(mt_status s) {
    switch (s) {
    case MT_OK: return "ok";
    case MT_ABORTED: return "aborted";
    case MT_ERR_NOMEM: return "out of memory";
    case MT_ERR_IO: return "I/O error";
    case MT_ERR_FORMAT: return "malformed input";
    case MT_ERR_DEVICE: return "device error";
    case MT_ERR_INVALID: return "invalid argument";
    case MT_ERR_NOTFOUND: return "not found";
    case MT_ERR_UNSUPPORTED: return "unsupported";
    }
    return "unknown status";
}

const char *mt_errmsg(void) { return errbuf; }

void mt_clearerr(void) { errbuf[0] = '\0'; }

/* Formatted into a copy first: an argument may be mt_errmsg() itself (a
** message wrapping the one before), which vsnprintf must not overwrite
** while reading it. */
mt_status mt_seterr(mt_status rc, const char *fmt, ...) {
    char out[sizeof errbuf];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, sizeof out, fmt, ap);
    va_end(ap);
    memcpy(errbuf, out, sizeof errbuf);
    return rc;
}

mt_status mt_errprefix(mt_status rc, const char *fmt, ...) {
    char out[sizeof errbuf];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(out, sizeof out - 2, fmt, ap);
    va_end(ap);
    size_t n = k < 0 ? 0 : (size_t)k < sizeof out - 2 ? (size_t)k : sizeof out - 3;
    out[n++] = ':';
    out[n++] = ' ';
    size_t m = strlen(errbuf);
    if (m > sizeof out - 1 - n) m = sizeof out - 1 - n;
    memcpy(out + n, errbuf, m);
    out[n + m] = '\0';
    memcpy(errbuf, out, n + m + 1);
    return rc;
}

void mt_set_abort_hook(void (*hook)(void)) { abort_hook = hook; }

void mt_abort(const char *file, int line, const char *what) {
    void (*hook)(void) = abort_hook;
    abort_hook = NULL; /* a failing hook must not recurse */
    if (hook) hook();
    fprintf(stderr, "mtpe: internal error at %s:%d: %s\n", file, line, what);
    fflush(stderr);
    abort();
}
