/*
** test_store_crash.c: confirmed edits survive a crash of the editor.
**
** Each round forks a child that opens the store (creating it in round 0),
** then records an edit and confirms a segment, over and over, writing the
** id of each confirmation to a pipe after store_confirm returned, and now
** and then idles a little, as the editor does between segments.  The
** parent kills the child with SIGKILL after a random delay (fixed seed),
** then checks with a fresh SQLite connection that every confirmation the
** child reported is stored with its text and CONFIRM edit, that each
** segment's target and status match its last edit event (the writes of one
** call are atomic), and that PRAGMA integrity_check passes.  100 rounds
** on the same database.
*/
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "mt_base.h"
#include "store.h"
#include "store_impl.h"

#define ROUNDS 100
#define N_SEG 40
#define MAX_REPORTS 200000

typedef struct report {
    int64_t conf_id;
    int32_t round, k;
} report;

static report reports[MAX_REPORTS];
static int n_reports;

/* xorshift64*: the kill times are the same on every run */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1du;
}

static int collect_id(void *user, const store_segment *g) {
    int64_t *ids = user;
    if (g->index >= 0 && g->index < N_SEG) ids[g->index] = g->id;
    return 0;
}

static void child_fail(const char *what, int code) {
    fprintf(stderr, "crash child: %s: %s\n", what, mt_errmsg());
    _exit(code);
}

/* Never returns. */
static void child(const char *path, int round, int wfd) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    rng_state += (uint64_t)round * 0x632be59bd9b4e019u; /* its own idle times */
    store *s = NULL;
    if (store_open(path, &s) != MT_OK) child_fail("open", 3);
    int64_t doc = 0;
    mt_status st = store_find_document(s, "crash.po", "sha256:c0ffee", &doc);
    if (st == MT_ERR_NOTFOUND) {
        static char texts[N_SEG][48];
        store_segment_in segs[N_SEG];
        memset(segs, 0, sizeof segs);
        for (int i = 0; i < N_SEG; i++) {
            snprintf(texts[i], sizeof texts[i], "source sentence number %d", i);
            segs[i].source = texts[i];
        }
        store_doc_info info = {"crash.po", STORE_FORMAT_PO, "en", "de", "sha256:c0ffee"};
        st = store_add_document(s, &info, segs, N_SEG, &doc);
    }
    if (st != MT_OK) child_fail("document", 4);
    int64_t ids[N_SEG] = {0};
    if (store_list_segments(s, doc, STORE_SEG_ALL, collect_id, ids) != MT_OK) child_fail("list", 5);
    for (int k = 0; k < 1000000; k++) {
        int64_t seg = ids[(round * 7 + k) % N_SEG];
        char text[64];
        snprintf(text, sizeof text, "r%d k%d typed", round, k);
        store_edit_in ed = {seg, STORE_EDIT_TYPED, text, k, k, 0, 0};
        int64_t id = 0;
        if (store_record_edit(s, &ed, &id) != MT_OK) child_fail("edit", 6);
        snprintf(text, sizeof text, "r%d k%d", round, k);
        if (store_confirm(s, seg, text, k + 1, k + 1, &id) != MT_OK) child_fail("confirm", 7);
        report r = {id, round, k}; /* committed: only now is it reported */
        if (write(wfd, &r, sizeof r) != (ssize_t)sizeof r) child_fail("pipe", 8);
        /* the translator reads the next segment: a crash often comes while
        ** the editor idles, so a commit left for later would be caught */
        if (k % 2) usleep((useconds_t)(rng() % 1000));
    }
    store_close(s);
    _exit(0);
}

static int64_t query_int(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    int64_t v = INT64_MIN;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Checks reports[from..n_reports) and the invariants with a new connection. */
static void verify(const char *path, int from, int round) {
    if (access(path, F_OK) != 0) { /* killed before it created the file */
        CHECK(n_reports == 0, "round %d: the store is gone", round);
        return;
    }
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
    CHECK(rc == SQLITE_OK, "round %d: fresh connection: %s", round, sqlite3_errmsg(db));
    if (rc != SQLITE_OK) {
        sqlite3_close(db);
        return;
    }
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
              sqlite3_step(st) == SQLITE_ROW &&
              strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0,
          "round %d: integrity check: %s", round,
          st ? (const char *)sqlite3_column_text(st, 0) : sqlite3_errmsg(db));
    sqlite3_finalize(st);
    if (n_reports > 0) {
        CHECK(query_int(db, "SELECT count(*) FROM pragma_foreign_key_check") == 0,
              "round %d: foreign keys", round);
        /* target and status of each segment follow its last edit event */
        CHECK(query_int(db, "SELECT count(*) FROM segment s JOIN edit e ON e.id ="
                            " (SELECT max(id) FROM edit WHERE segment_id = s.id)"
                            " WHERE s.target IS NOT e.text"
                            " OR (s.status = 3) != (e.kind = 5)") == 0,
              "round %d: a segment disagrees with its last edit", round);
    }

    st = NULL;
    rc = sqlite3_prepare_v2(db,
                            "SELECT c.text, c.segment_id = e.segment_id, e.kind, e.text"
                            " FROM confirmation c JOIN edit e ON e.id = c.edit_id WHERE c.id = ?1",
                            -1, &st, NULL);
    if (rc != SQLITE_OK && n_reports == 0 && query_int(db, "PRAGMA user_version") == 0) {
        /* killed while the first open created the schema (one transaction:
        ** none of it is there, the next open starts again) */
        sqlite3_close(db);
        return;
    }
    CHECK(rc == SQLITE_OK, "prepare: %s", sqlite3_errmsg(db));
    for (int i = from; st && i < n_reports; i++) {
        const report *r = &reports[i];
        char want[64];
        snprintf(want, sizeof want, "r%d k%d", r->round, r->k);
        sqlite3_bind_int64(st, 1, r->conf_id);
        rc = sqlite3_step(st);
        CHECK(rc == SQLITE_ROW, "round %d: reported confirmation %lld (%s) is lost", round,
              (long long)r->conf_id, want);
        if (rc == SQLITE_ROW) {
            const char *text = (const char *)sqlite3_column_text(st, 0);
            const char *etext = (const char *)sqlite3_column_text(st, 3);
            CHECK(strcmp(text, want) == 0 && sqlite3_column_int(st, 1) == 1 &&
                      sqlite3_column_int(st, 2) == STORE_EDIT_CONFIRM && strcmp(etext, want) == 0,
                  "round %d: confirmation %lld is '%s', want '%s'", round, (long long)r->conf_id,
                  text, want);
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    CHECK(sqlite3_close(db) == SQLITE_OK, "close fresh connection");
}

int main(void) {
    char dir[256], path[300];
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/mtpe_crash_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    snprintf(path, sizeof path, "%s/store.db", dir);

    /* installs the store's SQLite settings before SQLite starts here */
    store *mem = NULL;
    CHECK_STATUS(store_open(":memory:", &mem));
    store_close(mem);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int killed = 0, empty_rounds = 0;
    for (int round = 0; round < ROUNDS; round++) {
        int fds[2];
        if (pipe(fds) != 0) {
            CHECK(errno == 0, "pipe: %s", strerror(errno));
            break;
        }
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0) {
            CHECK(pid >= 0, "fork: %s", strerror(errno));
            break;
        }
        if (pid == 0) {
            close(fds[0]);
            child(path, round, fds[1]);
        }
        close(fds[1]);
        /* 0-40 ms, a few rounds under 2 ms to hit the store's creation/open;
        ** up to 200 ms while the child lags behind one confirmation per round
        ** (a loaded machine with slow fsyncs), so that every run tests enough */
        uint64_t x = rng();
        useconds_t span = n_reports <= round ? 200000 : 40000;
        useconds_t delay = (x & 7) == 0 ? (useconds_t)(x >> 8) % 2000 : (useconds_t)(x >> 8) % span;
        usleep(delay);
        kill(pid, SIGKILL);
        int wst = 0;
        while (waitpid(pid, &wst, 0) < 0 && errno == EINTR) {
        }
        if (WIFSIGNALED(wst) && WTERMSIG(wst) == SIGKILL)
            killed++;
        else
            CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0,
                  "round %d: the child failed by itself (status %d)", round, wst);

        int from = n_reports;
        report r;
        ssize_t got;
        while ((got = read(fds[0], &r, sizeof r)) == (ssize_t)sizeof r) {
            if (n_reports < MAX_REPORTS) reports[n_reports++] = r;
        }
        CHECK(got == 0, "round %d: partial report (%zd bytes)", round, got);
        close(fds[0]);
        if (n_reports == from) empty_rounds++;
        verify(path, from, round);
    }
    verify(path, 0, ROUNDS); /* nothing of an earlier round went missing later */

    /* the store itself opens it and agrees */
    store *s = NULL;
    CHECK_STATUS(store_open(path, &s));
    if (s) {
        CHECK_STATUS(store_check(s));
        store_close(s);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    fprintf(stderr,
            "# %d rounds (%d killed, %d before the first confirmation), %d confirmations "
            "reported, %.1f s\n",
            ROUNDS, killed, empty_rounds, n_reports, secs);
    CHECK(n_reports >= ROUNDS, "the child made too little progress to test anything: %d",
          n_reports);
    CHECK(killed >= ROUNDS * 9 / 10, "most rounds end by SIGKILL: %d", killed);

    char buf[400];
    snprintf(buf, sizeof buf, "%s-wal", path);
    unlink(buf);
    snprintf(buf, sizeof buf, "%s-shm", path);
    unlink(buf);
    unlink(path);
    rmdir(dir);
    TEST_MAIN_END();
}
