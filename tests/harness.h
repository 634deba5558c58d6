/*
** harness.h: the test harness shared by tests/LAYER/test_*.c.  Each CHECK prints
** "NOT OK file:line: message" on failure and counts it; TEST_MAIN_END
** prints a summary and returns the process exit code (0 ok, 1 failed).
*/
#ifndef MT_HARNESS_H
#define MT_HARNESS_H
#include <math.h>
#include <stdio.h>

static int th_failures = 0, th_checks = 0;

#include <stdarg.h>

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static inline int th_check(int ok, const char *file, int line, const char *fmt, ...) {
    th_checks++;
    if (ok) return 1;
    th_failures++;
    fprintf(stderr, "NOT OK %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 0;
}
#define CHECK(cond, ...) th_check((cond) ? 1 : 0, __FILE__, __LINE__, __VA_ARGS__)

/* |got - want| <= atol + rtol * |want|; on failure got/want precede the message. */
static inline int th_close(double got, double want, double atol, double rtol) {
    int ok = fabs(got - want) <= atol + rtol * fabs(want);
    if (!ok) fprintf(stderr, "(got %.9g want %.9g) ", got, want);
    return ok;
}
#define CHECK_CLOSE(got, want, atol, rtol, ...)                                                    \
    CHECK(th_close((double)(got), (double)(want), (atol), (rtol)), __VA_ARGS__)

#define CHECK_STATUS(expr)                                                                         \
    do {                                                                                           \
        mt_status th_rc = (expr);                                                                  \
        CHECK(th_rc == MT_OK, "%s -> %s (%s)", #expr, mt_status_str(th_rc), mt_errmsg());          \
    } while (0)

#define TEST_MAIN_END()                                                                            \
    do {                                                                                           \
        fprintf(stderr, "%s: %d checks, %d failed\n", __FILE__, th_checks, th_failures);           \
        return th_failures ? 1 : 0;                                                                \
    } while (0)

#endif
