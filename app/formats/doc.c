/*
** doc.c: the format-independent part of the document model: the segment
** list, format names and detection, opening and saving, target updates,
** UTF-8 checks, the byte buffer and the atomic file writer.  The formats
** live in doc_po.c, doc_xliff.c, doc_text.c; TMX export in doc_tmx.c.
**
** Atomic save, step by step (app_doc_atomic_write):
**
**   1. open "<dir>/.<name>.<pid>.<n>.tmp" with O_CREAT|O_EXCL (same file
**      system as the target, so rename is atomic); copy the target's mode
**   2. the caller's writer fills it through a FILE*
**   3. fflush + ferror, fsync, fclose: each checked (ENOSPC shows up here)
**   4. rename over the target (a symlink target is resolved first, so the
**      link stays and the file it points to is replaced)
**   5. fsync of the directory, so the rename itself is durable
**
** Any failure before step 4 unlinks the temporary file; the target is then
** exactly as it was.
*/
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doc.h"
#include "vocab.h"

/* ------------------------------------------------------------- buffers */

void app_doc_buf_put(app_doc_buf *b, const void *p, size_t n) {
    if (b->failed || n == 0) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *nd = mt_try_realloc(b->data, cap);
        if (nd == NULL) {
            b->failed = true;
            return;
        }
        b->data = nd;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void app_doc_buf_puts(app_doc_buf *b, const char *s) { app_doc_buf_put(b, s, strlen(s)); }

void app_doc_buf_putc(app_doc_buf *b, char c) { app_doc_buf_put(b, &c, 1); }

char *app_doc_buf_take(app_doc_buf *b) {
    if (b->failed) {
        app_doc_buf_free(b);
        return NULL;
    }
    if (b->data == NULL) {
        b->data = mt_try_malloc(1);
        if (b->data == NULL) return NULL;
        b->data[0] = '\0';
    }
    char *s = b->data;
    b->data = NULL;
    b->len = b->cap = 0;
    return s;
}

void app_doc_buf_free(app_doc_buf *b) {
    mt_free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = false;
}

/* --------------------------------------------------------------- names */

app_doc_save_params app_doc_default_save_params(void) {
    app_doc_save_params p = {.draft_as_fuzzy = true};
    return p;
}

static const struct {
    const char *name;
    app_doc_format fmt;
} format_names[] = {
    {"auto", APP_DOC_FORMAT_AUTO},
    {"po", APP_DOC_FORMAT_PO},
    {"xliff", APP_DOC_FORMAT_XLIFF},
    {"text", APP_DOC_FORMAT_TEXT},
    {"parallel", APP_DOC_FORMAT_PARALLEL},
    {"tsv", APP_DOC_FORMAT_TSV},
    {"pot", APP_DOC_FORMAT_PO},
    {"xlf", APP_DOC_FORMAT_XLIFF},
    {"txt", APP_DOC_FORMAT_TEXT},
    {"moses", APP_DOC_FORMAT_PARALLEL},
};

const char *app_doc_format_name(app_doc_format f) {
    for (size_t i = 0; i < sizeof format_names / sizeof format_names[0]; i++)
        if (format_names[i].fmt == f) return format_names[i].name;
    return "unknown";
}

mt_status app_doc_format_from_name(const char *name, app_doc_format *out) {
    for (size_t i = 0; name && i < sizeof format_names / sizeof format_names[0]; i++) {
        if (strcasecmp(name, format_names[i].name) == 0) {
            *out = format_names[i].fmt;
            return MT_OK;
        }
    }
    return mt_seterr(MT_ERR_INVALID,
                     "unknown document format '%s' (expected po, xliff, text, parallel or tsv)",
                     name ? name : "(null)");
}

static bool has_suffix(const char *path, const char *suffix) {
    size_t n = strlen(path), m = strlen(suffix);
    return n > m && strcasecmp(path + n - m, suffix) == 0;
}

mt_status app_doc_detect_format(const char *path, app_doc_format *out) {
    static const struct {
        const char *suffix;
        app_doc_format fmt;
    } suffixes[] = {
        {".po", APP_DOC_FORMAT_PO},     {".pot", APP_DOC_FORMAT_PO},
        {".xlf", APP_DOC_FORMAT_XLIFF}, {".xliff", APP_DOC_FORMAT_XLIFF},
        {".tsv", APP_DOC_FORMAT_TSV},   {".txt", APP_DOC_FORMAT_TEXT},
    };
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        if (has_suffix(path, suffixes[i].suffix)) {
            *out = suffixes[i].fmt;
            return MT_OK;
        }
    }
    char head[4097];
    FILE *f = fopen(path, "rb");
    if (f == NULL) return mt_seterr(MT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    size_t n = fread(head, 1, sizeof head - 1, f);
    bool err = ferror(f);
    fclose(f);
    if (err) return mt_seterr(MT_ERR_IO, "cannot read '%s'", path);
    head[n] = '\0';
    const char *p = head;
    if (n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) p += 3;
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
        p++;
    if (*p == '<' && (strstr(p, "<xliff") != NULL || strncmp(p, "<?xml", 5) == 0)) {
        *out = APP_DOC_FORMAT_XLIFF;
        return MT_OK;
    }
    for (const char *l = head; l != NULL; l = strchr(l, '\n')) {
        if (*l == '\n') l++;
        if (strncmp(l, "msgid \"", 7) == 0 || strncmp(l, "msgctxt \"", 9) == 0) {
            *out = APP_DOC_FORMAT_PO;
            return MT_OK;
        }
    }
    *out = APP_DOC_FORMAT_TEXT;
    return MT_OK;
}

/* ---------------------------------------------------- document basics */

mt_status app_doc_alloc(app_doc_format fmt, const char *path, app_doc **out) {
    mt_status rc = MT_ERR_NOMEM;
    app_doc *d = mt_try_calloc(1, sizeof *d);
    if (d == NULL) goto fail;
    d->format = fmt;
    rc = mt_arena_init(16384, &d->strings);
    if (rc != MT_OK) goto fail;
    rc = MT_ERR_NOMEM;
    d->path = mt_try_strdup(path);
    if (d->path == NULL) goto fail;
    *out = d;
    return MT_OK;
fail:
    app_doc_free(d);
    return mt_seterr(rc, "out of memory opening '%s'", path);
}

char *app_doc_strdup(app_doc *d, const char *s, size_t n) {
    char *c = mt_arena_alloc(d->strings, n + 1, 1);
    if (c == NULL) return NULL;
    memcpy(c, s, n);
    c[n] = '\0';
    return c;
}

mt_status app_doc_add_segment(app_doc *d, int n_targets, app_doc_segment **seg) {
    MT_ASSERT(n_targets >= 1);
    if (d->n_segs == d->cap_segs) {
        int64_t cap = d->cap_segs ? 2 * d->cap_segs : 64;
        app_doc_segment *ns = mt_try_realloc(d->segs, (size_t)cap * sizeof *ns);
        if (ns == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory reading '%s'", d->path);
        d->segs = ns;
        d->cap_segs = cap;
    }
    char **targets = mt_try_calloc((size_t)n_targets, sizeof *targets);
    if (targets == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory reading '%s'", d->path);
    app_doc_segment *s = &d->segs[d->n_segs++];
    memset(s, 0, sizeof *s);
    s->targets = targets;
    s->n_targets = n_targets;
    for (int k = 0; k < n_targets; k++) {
        targets[k] = mt_try_strdup("");
        if (targets[k] == NULL)
            return mt_seterr(MT_ERR_NOMEM, "out of memory reading '%s'", d->path);
    }
    *seg = s;
    return MT_OK;
}

mt_status app_doc_store_target(app_doc *d, int64_t i, int form, const char *text) {
    char *c = mt_try_strdup(text);
    if (c == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory storing a translation");
    mt_free(d->segs[i].targets[form]);
    d->segs[i].targets[form] = c;
    return MT_OK;
}

mt_status app_doc_read_file(const char *path, char **data, size_t *len) {
    mt_status rc = MT_ERR_IO;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        rc = mt_seterr(MT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
        goto fail;
    }
    for (;;) {
        if (cap - n < 4096 + 1) {
            size_t ncap = cap ? 2 * cap : 65536;
            char *nb = mt_try_realloc(buf, ncap);
            if (nb == NULL) {
                rc = mt_seterr(MT_ERR_NOMEM, "out of memory reading '%s'", path);
                goto fail;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        rc = mt_seterr(MT_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        goto fail;
    }
    fclose(f);
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return MT_OK;
fail:
    if (f) fclose(f);
    mt_free(buf);
    return rc;
}

void app_doc_free(app_doc *d) {
    if (d == NULL) return;
    if (d->ops && d->ops->free_impl) d->ops->free_impl(d);
    for (int64_t i = 0; i < d->n_segs; i++) {
        for (int k = 0; k < d->segs[i].n_targets; k++)
            mt_free(d->segs[i].targets[k]);
        mt_free(d->segs[i].targets);
    }
    mt_free(d->segs);
    mt_arena_free(d->strings);
    mt_free(d->raw);
    mt_free(d->path);
    mt_free(d->target_path);
    mt_free(d->src_lang);
    mt_free(d->trg_lang);
    mt_free(d);
}

mt_status app_doc_open(const char *path, app_doc_format fmt, app_doc **out) {
    app_doc *d = NULL;
    mt_status rc = MT_ERR_INVALID;
    if (path == NULL) return mt_seterr(MT_ERR_INVALID, "app_doc_open: no path");
    if (fmt == APP_DOC_FORMAT_AUTO) {
        rc = app_doc_detect_format(path, &fmt);
        if (rc != MT_OK) return rc;
    }
    if (fmt == APP_DOC_FORMAT_PARALLEL)
        return mt_seterr(MT_ERR_INVALID, "'%s': parallel text needs a source and a target file",
                         path);
    rc = app_doc_alloc(fmt, path, &d);
    if (rc != MT_OK) goto fail;
    rc = app_doc_read_file(path, &d->raw, &d->raw_len);
    if (rc != MT_OK) goto fail;
    switch (fmt) {
    case APP_DOC_FORMAT_PO: rc = app_doc_po_open(d); break;
    case APP_DOC_FORMAT_XLIFF: rc = app_doc_xliff_open(d); break;
    case APP_DOC_FORMAT_TEXT: rc = app_doc_text_open(d, NULL, false); break;
    case APP_DOC_FORMAT_TSV: rc = app_doc_text_open(d, NULL, true); break;
    default: rc = mt_seterr(MT_ERR_INVALID, "'%s': unknown document format %d", path, (int)fmt);
    }
    if (rc != MT_OK) goto fail;
    *out = d;
    return MT_OK;
fail:
    app_doc_free(d);
    return rc;
}

mt_status app_doc_open_parallel(const char *src_path, const char *tgt_path, app_doc **out) {
    app_doc *d = NULL;
    mt_status rc;
    if (src_path == NULL || tgt_path == NULL)
        return mt_seterr(MT_ERR_INVALID, "app_doc_open_parallel: missing source or target path");
    rc = app_doc_alloc(APP_DOC_FORMAT_PARALLEL, src_path, &d);
    if (rc != MT_OK) goto fail;
    rc = app_doc_read_file(src_path, &d->raw, &d->raw_len);
    if (rc != MT_OK) goto fail;
    rc = app_doc_text_open(d, tgt_path, false);
    if (rc != MT_OK) goto fail;
    *out = d;
    return MT_OK;
fail:
    app_doc_free(d);
    return rc;
}

app_doc_format app_doc_get_format(const app_doc *d) { return d->format; }
const char *app_doc_path(const app_doc *d) { return d->path; }
const char *app_doc_save_path(const app_doc *d) {
    bool text = d->format == APP_DOC_FORMAT_TEXT || d->format == APP_DOC_FORMAT_PARALLEL;
    return text ? d->target_path : d->path;
}
const char *app_doc_source_lang(const app_doc *d) { return d->src_lang; }
const char *app_doc_target_lang(const app_doc *d) { return d->trg_lang; }
int64_t app_doc_count(const app_doc *d) { return d->n_segs; }

const app_doc_segment *app_doc_segment_at(const app_doc *d, int64_t i) {
    MT_ASSERT(i >= 0 && i < d->n_segs);
    return &d->segs[i];
}

/* Whether segment s of d has nothing to translate: an empty line of a
** line-based document, whose translation is an empty line. */
static bool nothing_to_translate(const app_doc *d, const app_doc_segment *s) {
    bool lines = d->format == APP_DOC_FORMAT_TEXT || d->format == APP_DOC_FORMAT_PARALLEL ||
                 d->format == APP_DOC_FORMAT_TSV;
    return lines && s->source[0] == '\0';
}

/* State after setting form `form` to text: EMPTY iff every form is empty
** (CONFIRMED for an empty line of a line-based document). */
static mt_status check_state(const app_doc *d, int64_t i, int form, const char *text,
                             app_doc_state state, app_doc_state *out) {
    const app_doc_segment *s = &d->segs[i];
    bool any = false;
    for (int k = 0; k < s->n_targets; k++)
        any |= (k == form ? text : s->targets[k])[0] != '\0';
    if (state != APP_DOC_STATE_EMPTY && state != APP_DOC_STATE_DRAFT &&
        state != APP_DOC_STATE_CONFIRMED)
        return mt_seterr(MT_ERR_INVALID, "'%s' segment %lld: invalid state %d", d->path,
                         (long long)i, (int)state);
    if (!any) {
        *out = nothing_to_translate(d, s) ? APP_DOC_STATE_CONFIRMED : APP_DOC_STATE_EMPTY;
        return MT_OK;
    }
    if (state == APP_DOC_STATE_EMPTY)
        return mt_seterr(MT_ERR_INVALID, "'%s' segment %lld: state EMPTY with a translation",
                         d->path, (long long)i);
    *out = state;
    return MT_OK;
}

mt_status app_doc_set_target(app_doc *d, int64_t i, int form, const char *text,
                             app_doc_state state) {
    if (i < 0 || i >= d->n_segs)
        return mt_seterr(MT_ERR_INVALID, "'%s': no segment %lld (%lld segments)", d->path,
                         (long long)i, (long long)d->n_segs);
    app_doc_segment *s = &d->segs[i];
    if (form < 0 || form >= s->n_targets)
        return mt_seterr(MT_ERR_INVALID, "'%s' segment %lld: no form %d (%d forms)", d->path,
                         (long long)i, form, s->n_targets);
    if (text == NULL)
        return mt_seterr(MT_ERR_INVALID, "'%s' segment %lld: NULL text", d->path, (long long)i);
    size_t bad;
    if (!mt_utf8_valid(text, strlen(text), &bad))
        return mt_seterr(MT_ERR_INVALID, "'%s' segment %lld: invalid UTF-8 at byte %zu", d->path,
                         (long long)i, bad);
    app_doc_state st = APP_DOC_STATE_EMPTY;
    mt_status rc = check_state(d, i, form, text, state, &st);
    if (rc != MT_OK) return rc;
    char *copy = mt_try_strdup(text);
    if (copy == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory storing a translation");
    if (d->ops->set_target) {
        rc = d->ops->set_target(d, i, form, text);
        if (rc != MT_OK) {
            mt_free(copy);
            return rc;
        }
    }
    mt_free(s->targets[form]);
    s->targets[form] = copy;
    s->state = st;
    s->changed = true;
    return MT_OK;
}

mt_status app_doc_set_state(app_doc *d, int64_t i, app_doc_state state) {
    if (i < 0 || i >= d->n_segs)
        return mt_seterr(MT_ERR_INVALID, "'%s': no segment %lld (%lld segments)", d->path,
                         (long long)i, (long long)d->n_segs);
    app_doc_segment *s = &d->segs[i];
    app_doc_state st = APP_DOC_STATE_EMPTY;
    mt_status rc = check_state(d, i, 0, s->targets[0], state, &st);
    if (rc != MT_OK) return rc;
    if (st != s->state) {
        s->state = st;
        s->changed = true;
    }
    return MT_OK;
}

typedef struct save_ctx {
    app_doc *d;
    app_doc_save_params p;
} save_ctx;

static mt_status save_writer(FILE *f, void *user) {
    save_ctx *c = user;
    return c->d->ops->save(c->d, f, c->p);
}

mt_status app_doc_save(app_doc *d, const char *path, app_doc_save_params p) {
    if (path == NULL) {
        path = app_doc_save_path(d);
        if (path == NULL)
            return mt_seterr(MT_ERR_INVALID,
                             "'%s': a plain text document needs a file name for its translation",
                             d->path);
    }
    save_ctx c = {d, p};
    return app_doc_atomic_write(path, save_writer, &c);
}

mt_status app_doc_write(app_doc *d, FILE *f, const char *what, app_doc_save_params p) {
    mt_status rc = d->ops->save(d, f, p);
    if (rc == MT_OK && (fflush(f) != 0 || ferror(f)))
        rc = mt_seterr(MT_ERR_IO, "cannot write %s: %s", what, strerror(errno));
    return rc;
}

/* --------------------------------------------------------- atomic write */

static int inject_errno;
static atomic_uint tmp_counter;

void app_doc_atomic_inject_errno(int err) { inject_errno = err; }

static mt_status io_fail(const char *path, const char *step, int err) {
    if (err == ENOSPC)
        return mt_seterr(MT_ERR_IO,
                         "cannot save '%s': no space left on device (%s); the file is unchanged",
                         path, step);
    return mt_seterr(MT_ERR_IO, "cannot save '%s': %s: %s", path, step, strerror(err));
}

static void atomic_reset(app_doc_atomic *a) {
    if (a->f) fclose(a->f);
    if (a->tmp_made) unlink(a->tmp);
    a->f = NULL;
    a->tmp_made = false;
}

mt_status app_doc_atomic_begin(app_doc_atomic *a, const char *path) {
    memset(a, 0, sizeof *a);
    mt_status rc = MT_ERR_IO;
    int fd = -1;
    struct stat st;
    if (strlen(path) >= sizeof a->path)
        return mt_seterr(MT_ERR_INVALID, "cannot save '%s': path too long", path);
    strcpy(a->path, path);

    /* a symlink keeps pointing at the file it named */
    struct stat lst;
    if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        if (realpath(path, a->target) == NULL) return io_fail(path, "resolving the link", errno);
    } else {
        strcpy(a->target, path);
    }
    const char *slash = strrchr(a->target, '/');
    const char *base = slash ? slash + 1 : a->target;
    if (*base == '\0') return mt_seterr(MT_ERR_INVALID, "cannot save '%s': not a file name", path);
    if (slash == NULL) {
        strcpy(a->dir, ".");
    } else if (slash == a->target) {
        strcpy(a->dir, "/");
    } else {
        memcpy(a->dir, a->target, (size_t)(slash - a->target));
        a->dir[slash - a->target] = '\0';
    }
    bool exists = stat(a->target, &st) == 0;
    if (exists && !S_ISREG(st.st_mode))
        return mt_seterr(MT_ERR_IO, "cannot save '%s': not a regular file", path);
    /* a read-only file stays as it is, as editors do (also for root, whom
    ** the permission bits do not stop) */
    if (exists && (st.st_mode & 0222) == 0)
        return mt_seterr(MT_ERR_IO,
                         "cannot save '%s': the file is read-only (make it writable, or save "
                         "under another name)",
                         path);

    for (int attempt = 0; fd < 0; attempt++) {
        unsigned n = atomic_fetch_add(&tmp_counter, 1);
        snprintf(a->tmp, sizeof a->tmp, "%s/.%s.%ld.%u.tmp", a->dir, base, (long)getpid(), n);
        fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && (errno != EEXIST || attempt > 100))
            return io_fail(path, "creating a temporary file in its directory", errno);
    }
    a->tmp_made = true;
    /* the new file keeps the owner and group where we may set them (root,
    ** or a group of ours), then the mode (after chown, which may clear the
    ** set-id bits) */
    if (exists && (st.st_uid != geteuid() || st.st_gid != getegid()) &&
        fchown(fd, st.st_uid, st.st_gid) != 0 && errno != EPERM) {
        rc = io_fail(path, "keeping its owner", errno);
        goto fail;
    }
    if (exists && fchmod(fd, st.st_mode & 07777) != 0) {
        rc = io_fail(path, "setting permissions", errno);
        goto fail;
    }
    a->f = fdopen(fd, "wb");
    if (a->f == NULL) {
        rc = io_fail(path, "opening the temporary file", errno);
        goto fail;
    }
    return MT_OK;
fail:
    close(fd);
    atomic_reset(a);
    return rc;
}

void app_doc_atomic_abort(app_doc_atomic *a) { atomic_reset(a); }

mt_status app_doc_atomic_commit(app_doc_atomic *a) {
    mt_status rc = MT_ERR_IO;
    const char *path = a->path;
    errno = 0;
    if (fflush(a->f) != 0 || ferror(a->f)) {
        rc = io_fail(path, "writing", errno ? errno : EIO);
        goto fail;
    }
    if (inject_errno != 0) {
        int e = inject_errno;
        inject_errno = 0;
        rc = io_fail(path, "syncing to disk", e);
        goto fail;
    }
    if (fsync(fileno(a->f)) != 0) {
        rc = io_fail(path, "syncing to disk", errno);
        goto fail;
    }
    int cr = fclose(a->f);
    a->f = NULL;
    if (cr != 0) {
        rc = io_fail(path, "closing", errno);
        goto fail;
    }
    if (rename(a->tmp, a->target) != 0) {
        rc = io_fail(path, "renaming the temporary file over it", errno);
        goto fail;
    }
    a->tmp_made = false;
    int dfd = open(a->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        /* EINVAL: file systems that cannot sync directories; nothing to do */
        if (fsync(dfd) != 0 && errno != EINVAL) {
            rc = io_fail(path, "syncing its directory", errno);
            close(dfd);
            return rc; /* the new file is in place; only durability is unsure */
        }
        close(dfd);
    }
    return MT_OK;
fail:
    atomic_reset(a);
    return rc;
}

mt_status app_doc_atomic_write(const char *path, app_doc_write_fn fn, void *user) {
    app_doc_atomic a;
    mt_status rc = app_doc_atomic_begin(&a, path);
    if (rc != MT_OK) return rc;
    errno = 0;
    rc = fn(a.f, user);
    if (rc != MT_OK) {
        app_doc_atomic_abort(&a);
        return rc;
    }
    return app_doc_atomic_commit(&a);
}
