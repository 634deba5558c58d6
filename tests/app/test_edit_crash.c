/*
** test_edit_crash.c: the editor killed with SIGKILL at random moments.
**
** 100 rounds on one store and one PO file (a copy of the sample without
** its c-format flags).  Each
** round forks a child that runs the real `mtpe edit` (app_edit_main) with
** the transformer-tiny fixture model and a --script session: on each of 8
** segments wait for the MT, clear the field, type a text, wait for the
** completion, confirm with Enter, and every second segment save with :w.
** The child reports each durable event on stdout right after it happened
** ("confirmed SEG ID HEXTEXT" once store_confirm committed and the
** document was updated, "saved DOC" once the file was renamed into place
** and registered).  A first, calibration round runs to the end and
** measures how long a session takes on this machine (sanitizer builds are
** slower); then the parent kills each child after a random delay within
** that time (fixed seed), and after every round checks:
**   - every confirmation the child reported is in the store with its text;
**     PRAGMA integrity_check passes (store_check);
**   - the PO file is complete: it parses, msgfmt --check accepts it (when
**     installed), and it has every entry of the original with the same
**     msgids: never half-written;
**   - the file is at least as new as the child's last reported save: every
**     segment confirmed before it holds that confirmation (or one made
**     later in the round), as a translated, non-fuzzy entry.
** Each round reopens the document where the last one left it (same file
** and store), so the reopen after a crash is exercised 100 times too.
*/
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "doc.h"
#include "harness.h"
#include "store.h"

#define ROUNDS 100
#define SEGS_PER_ROUND 8
#define MAX_ACKS 64

static char tmpdir[256];

static const char *tpath(const char *name) {
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

/* Copies the sample PO without its c-format flags: the scripted texts do not
** keep the format directives, which msgfmt --check would rightly reject in
** a c-format entry; this test is about files being complete. */
static bool copy_without_c_format(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    bool ok = a && b;
    char line[4096];
    while (ok && fgets(line, sizeof line, a)) {
        if (strcmp(line, "#, c-format\n") == 0) continue;
        char *p = strstr(line, ", c-format");
        if (p && strncmp(line, "#,", 2) == 0) memmove(p, p + 10, strlen(p + 10) + 1);
        ok = fputs(line, b) >= 0;
    }
    if (a) fclose(a);
    if (b && fclose(b) != 0) ok = false;
    return ok;
}

typedef struct ack {
    char kind; /* 'c' confirmed, 's' saved */
    int64_t seg, id;
    char text[512];
} ack;

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_script(int round) {
    FILE *f = fopen(tpath("script.txt"), "w");
    if (f == NULL) return;
    for (int k = 0; k < SEGS_PER_ROUND; k++) {
        fprintf(f, "wait-mt\nkeys C-u\ntype r%dk%d\nwait\nkeys Enter\n", round, k);
        if (k % 2 == 1) fprintf(f, "keys M-:\ntype w\nkeys Enter\n");
    }
    fprintf(f, "keys M-:\ntype wq\nkeys Enter\n");
    fclose(f);
}

static int unhex(const char *h, char *out, size_t size) {
    size_t n = 0;
    while (h[0] && h[1] && n + 1 < size) {
        unsigned v;
        if (sscanf(h, "%2x", &v) != 1) return -1;
        out[n++] = (char)v;
        h += 2;
    }
    out[n] = '\0';
    return 0;
}

/* Parses the child's stdout into acks; returns their number. */
static int parse_acks(char *out, ack *a, int max) {
    int n = 0;
    for (char *save = NULL, *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        long long seg, id;
        char hex[1100];
        if (n < max && sscanf(l, "confirmed %lld %lld %1099s", &seg, &id, hex) == 3) {
            a[n].kind = 'c';
            a[n].seg = seg;
            a[n].id = id;
            if (unhex(hex, a[n].text, sizeof a[n].text) == 0) n++;
        } else if (n < max && sscanf(l, "saved %lld", &id) == 1) {
            a[n].kind = 's';
            a[n].seg = -1;
            a[n].id = id;
            a[n].text[0] = '\0';
            n++;
        }
    }
    return n;
}

/* Unit index -> (document segment, form), as the editor numbers them. */
static bool unit_pos(const app_doc *d, int64_t unit, int64_t *dseg, int *form) {
    int64_t k = 0;
    for (int64_t i = 0; i < app_doc_count(d); i++) {
        const app_doc_segment *s = app_doc_segment_at(d, i);
        if (unit < k + s->n_targets) {
            *dseg = i;
            *form = (int)(unit - k);
            return true;
        }
        k += s->n_targets;
    }
    return false;
}

static int run_child(int round, int pfd, const char *err_path) {
    (void)round;
    int fd = open(err_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
        dup2(fd, STDERR_FILENO);
        close(fd);
    }
    dup2(pfd, STDOUT_FILENO);
    close(pfd);
    char *argv[] = {"edit", (char *)tpath("doc.po"), "-m",
                    MT_TEST_DATA "/marian/transformer-tiny/model.npz", "-v",
                    MT_TEST_DATA "/marian/transformer-tiny/vocab.spm",
                    MT_TEST_DATA "/marian/transformer-tiny/vocab.spm", "--db",
                    (char *)tpath("store.db"), "--script", (char *)tpath("script.txt"),
                    /* the typed texts lack the sources' placeholders: QA
                    ** would ask for second confirmations (tested elsewhere) */
                    "--qa", "save", NULL};
    return app_edit_main(13, argv);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mtpe_edit_crash.XXXXXX");
    if (mkdtemp(tmpdir) == NULL) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    if (!CHECK(copy_without_c_format(MT_SOURCE_DIR "/assets/samples/sample.de.po", tpath("doc.po")),
               "copy the sample"))
        TEST_MAIN_END();
    app_doc *orig = NULL;
    CHECK_STATUS(app_doc_open(tpath("doc.po"), APP_DOC_FORMAT_AUTO, &orig));
    if (orig == NULL) TEST_MAIN_END();
    bool have_msgfmt = CHECK_TOOL("msgfmt");
    unsigned seed = 20240611u;
    srand(seed);
    int killed = 0, finished = 0, n_confirmed = 0, n_saved = 0, checked_saves = 0;
    int64_t t_start = mono_ms();
    int full_ms = 0;
    for (int round = -1; round < ROUNDS && th_failures == 0; round++) {
        write_script(round < 0 ? 0 : round);
        int64_t t_round = mono_ms();
        int p[2];
        if (pipe(p) != 0) {
            CHECK(0, "pipe: %s", strerror(errno));
            break;
        }
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            close(p[0]);
            _exit(run_child(round, p[1], tpath("stderr.txt")));
        }
        close(p[1]);
        if (!CHECK(pid > 0, "fork: %s", strerror(errno))) break;
        /* kill at a random moment of the session; the calibration round
        ** (-1) runs to the end and measures how long a session takes */
        int delay = round < 0 ? 120000 : 5 + rand() % (full_ms + 1);
        char out[65536];
        size_t got = 0;
        fcntl(p[0], F_SETFL, O_NONBLOCK);
        int64_t end = mono_ms() + delay;
        int status = 0;
        bool exited = false;
        while (mono_ms() < end) {
            ssize_t r = read(p[0], out + got, sizeof out - 1 - got);
            if (r > 0) got += (size_t)r;
            if (waitpid(pid, &status, WNOHANG) == pid) {
                exited = true;
                break;
            }
            usleep(1000);
        }
        if (!exited) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
        fcntl(p[0], F_SETFL, 0);
        ssize_t r;
        while ((r = read(p[0], out + got, sizeof out - 1 - got)) > 0)
            got += (size_t)r;
        close(p[0]);
        out[got] = '\0';
        if (round < 0) {
            full_ms = (int)((mono_ms() - t_round) * 9 / 10);
            CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "calibration round: the editor exited with status %d", status);
            fprintf(stderr, "a whole session takes %lld ms\n", (long long)(mono_ms() - t_round));
        } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
            killed++;
        } else {
            finished++; /* sessions got faster: kill earlier */
            int64_t took = (mono_ms() - t_round) * 9 / 10;
            if (took < full_ms) full_ms = (int)took;
            CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "round %d: the editor exited with status %d", round, status);
        }
        ack acks[MAX_ACKS];
        int na = parse_acks(out, acks, MAX_ACKS);

        /* every reported confirmation is stored */
        sqlite3 *db = NULL;
        CHECK(sqlite3_open_v2(tpath("store.db"), &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK,
              "open store");
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(db, "SELECT text FROM confirmation WHERE id = ?", -1, &st, NULL);
        for (int i = 0; i < na && st; i++) {
            if (acks[i].kind != 'c') {
                n_saved++;
                continue;
            }
            n_confirmed++;
            sqlite3_reset(st);
            sqlite3_bind_int64(st, 1, acks[i].id);
            bool found = sqlite3_step(st) == SQLITE_ROW &&
                         !strcmp((const char *)sqlite3_column_text(st, 0), acks[i].text);
            CHECK(found, "round %d: confirmation %lld (%s) not in the store", round,
                  (long long)acks[i].id, acks[i].text);
        }
        sqlite3_finalize(st);
        sqlite3_close(db);
        store *s = NULL;
        CHECK_STATUS(store_open(tpath("store.db"), &s));
        if (s) CHECK_STATUS(store_check(s));
        store_close(s);

        /* the document: complete, and at least the last reported save */
        app_doc *d = NULL;
        mt_status rc = app_doc_open(tpath("doc.po"), APP_DOC_FORMAT_AUTO, &d);
        CHECK(rc == MT_OK, "round %d: the document does not parse: %s", round, mt_errmsg());
        if (d) {
            bool same = app_doc_count(d) == app_doc_count(orig);
            for (int64_t i = 0; same && i < app_doc_count(d); i++)
                same =
                    !strcmp(app_doc_segment_at(d, i)->source, app_doc_segment_at(orig, i)->source);
            CHECK(same, "round %d: the document lost or changed entries", round);
            int last_save = -1;
            for (int i = 0; i < na; i++)
                if (acks[i].kind == 's') last_save = i;
            for (int i = 0; i < last_save; i++) {
                if (acks[i].kind != 'c') continue;
                bool superseded = false, later_match = false;
                for (int j = i + 1; j < na; j++) {
                    if (acks[j].kind != 'c' || acks[j].seg != acks[i].seg) continue;
                    if (j < last_save) superseded = true;
                    later_match = later_match || j > last_save;
                }
                if (superseded) continue;
                int64_t ds = 0;
                int form = 0;
                if (!CHECK(unit_pos(d, acks[i].seg, &ds, &form), "unit %lld",
                           (long long)acks[i].seg))
                    continue;
                const app_doc_segment *sg = app_doc_segment_at(d, ds);
                bool in_file = !strcmp(sg->targets[form], acks[i].text) &&
                               sg->state == APP_DOC_STATE_CONFIRMED;
                if (!in_file && later_match) {
                    for (int j = last_save + 1; j < na; j++)
                        if (acks[j].kind == 'c' && acks[j].seg == acks[i].seg &&
                            !strcmp(sg->targets[form], acks[j].text))
                            in_file = true;
                }
                CHECK(in_file, "round %d: saved confirmation of segment %lld missing: '%s' vs '%s'",
                      round, (long long)acks[i].seg, acks[i].text, sg->targets[form]);
                checked_saves++;
            }
            app_doc_free(d);
        }
        if (have_msgfmt) {
            char cmd[700];
            snprintf(cmd, sizeof cmd, "msgfmt --check -o /dev/null '%s'", tpath("doc.po"));
            CHECK(system(cmd) == 0, "round %d: msgfmt --check rejects the document", round);
        }
    }
    fprintf(stderr,
            "%d rounds in %.1f s: %d killed, %d finished; %d confirmations and %d saves "
            "reported, %d saved confirmations checked in the file\n",
            killed + finished, (double)(mono_ms() - t_start) / 1000.0, killed, finished,
            n_confirmed, n_saved, checked_saves);
    CHECK(killed + finished == ROUNDS, "all rounds ran");
    CHECK(killed >= ROUNDS / 2, "most rounds were killed (%d)", killed);
    /* a sanity bound, not a result: on a loaded machine many kills land in
    ** the start-up (model load, first MT) before the first confirmation */
    CHECK(n_confirmed >= ROUNDS / 2 && n_saved >= ROUNDS / 4,
          "the sessions got far enough to test something (%d confirmations, %d saves)", n_confirmed,
          n_saved);
    if (th_failures) {
        fprintf(stderr, "--- child stderr (%s):\n", tpath("stderr.txt"));
        char cmd[600];
        snprintf(cmd, sizeof cmd, "tail -20 '%s' >&2", tpath("stderr.txt"));
        if (system(cmd) != 0) fprintf(stderr, "(none)\n");
    } else {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tmpdir);
    }
    app_doc_free(orig);
    TEST_MAIN_END();
}
