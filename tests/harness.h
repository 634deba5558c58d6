/*
** harness.h: the test harness shared by tests/LAYER/test_*.c.  Each CHECK prints
** "NOT OK file:line: message" on failure and counts it; TEST_MAIN_END
** prints a summary and returns the process exit code: 1 when a check
** failed (or nothing was checked at all), 77 when every case was skipped
** (ctest: SKIP_RETURN_CODE, reported as Skipped), else 0.
**
** Skips.  SKIP(reason) counts a case that cannot run on this machine and
** prints "SKIP file:line: reason"; the summary gives the count.  A skip is
** never a passed check, and a tool that scripts/install-deps.sh installs
** is no reason to skip: CHECK_TOOL(name) fails when it is missing.  A case
** that only some machines can run (it needs root, a CPU feature) is a part
** of its own, so that the plain run never passes with cases left out:
**
**     int main(int argc, char **argv) {
**         TEST_MAIN_BEGIN(argc, argv);
**         if (TEST_PART("owner")) {       // `test_x --part owner`: this only
**             test_owner();               // (SKIP when not root: exit 77)
**         } else {                        // the plain run: all the rest
**             ...
**         }
**         TEST_MAIN_END();
**     }
**
** tests/CMakeLists.txt finds TEST_PART("name") in the source and registers
** `test_x --part name` as the ctest test test_x.name.
*/
#ifndef MT_HARNESS_H
#define MT_HARNESS_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int th_failures = 0, th_checks = 0, th_skips = 0;
static const char *th_part = NULL; /* --part NAME: run only that part */
static int th_part_found = 0;

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

/* A case that cannot run here: counted and printed, never as a pass. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline void
th_skip(const char *file, int line, const char *fmt, ...) {
    th_skips++;
    fprintf(stderr, "SKIP %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
#define SKIP(...) th_skip(__FILE__, __LINE__, __VA_ARGS__)

/* A command-line tool the test runs as an oracle (msgfmt, xmllint...):
** scripts/install-deps.sh installs them, so a missing one fails. */
static inline int th_check_tool(const char *file, int line, const char *name) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v '%s' >/dev/null 2>&1", name);
    return th_check(system(cmd) == 0, file, line,
                    "%s not installed (scripts/install-deps.sh installs it)", name);
}
#define CHECK_TOOL(name) th_check_tool(__FILE__, __LINE__, (name))

/* Parts (see the top): TEST_MAIN_BEGIN reads "--part NAME"; TEST_PART(name)
** is true in that part's run only, TEST_PLAIN_RUN() in the run without one. */
static inline void th_main_begin(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--part") == 0) {
        th_part = argv[2];
    } else if (argc != 1) {
        fprintf(stderr, "usage: %s [--part NAME]\n", argv[0]);
        exit(2);
    }
}
#define TEST_MAIN_BEGIN(argc, argv) th_main_begin((argc), (argv))
static inline int th_in_part(const char *name) {
    int in = th_part != NULL && strcmp(th_part, name) == 0;
    th_part_found |= in;
    return in;
}
#define TEST_PART(name) th_in_part(name)
#define TEST_PLAIN_RUN() (th_part == NULL)

static inline int th_main_end(const char *file) {
    if (th_part != NULL && !th_part_found) {
        fprintf(stderr, "NOT OK %s: no part '%s'\n", file, th_part);
        th_failures++;
    } else if (th_checks == 0 && th_skips == 0) {
        fprintf(stderr, "NOT OK %s: nothing was checked\n", file);
        th_failures++;
    }
    fprintf(stderr, "%s%s%s: %d checks, %d failed", file, th_part ? " --part " : "",
            th_part ? th_part : "", th_checks, th_failures);
    if (th_skips) fprintf(stderr, ", %d skipped", th_skips);
    fputc('\n', stderr);
    if (th_failures) return 1;
    return th_checks == 0 && th_skips > 0 ? 77 : 0;
}
#define TEST_MAIN_END() return th_main_end(__FILE__)

#endif
