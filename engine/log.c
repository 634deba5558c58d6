/*
** log.c: the log callback.  The default sink writes "[level] msg" to
** stderr; the TUI installs a sink that routes messages to its status line.
*/
#include <stdarg.h>
#include <stdio.h>

#include "mt_base.h"

static void default_sink(mt_log_level level, const char *msg, void *user) {
    static const char *names[] = {"debug", "info", "warn", "error"};
    (void)user;
    if (level == MT_LOG_DEBUG) return;
    fprintf(stderr, "[%s] %s\n", names[level], msg);
}

static mt_log_fn sink = default_sink;
static void *sink_user;

void mt_log_set(mt_log_fn fn, void *user) {
    sink = fn ? fn : default_sink;
    sink_user = fn ? user : NULL;
}

void mt_log(mt_log_level level, const char *fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    sink(level, buf, sink_user);
}
