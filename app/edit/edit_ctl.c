/*
** edit_ctl.c: the editor's controller (app_edit_ctl, see edit_session.h):
** the document, the store and the translation session behind ui_hooks.
**
** Segments ("units"): one per translation form of each document segment,
** in document order, so a PO plural entry with two forms gives two units
** (msgid, then msgid_plural as the source shown and translated), each
** labelled "plural form k/N (n = ...)" with the counts the file's
** Plural-Forms gives it (app_doc_plural_examples).  The store
** keys them by index, with plural_form; the document entry's state follows
** its units: confirmed when all are, a draft when any has text, else empty.
**
** Unit statuses follow the ui's (ui_seg_status) and map one to one onto
** the store's; document states map as empty -> new, draft -> edited,
** confirmed -> confirmed.  A segment whose MT arrives while it is new takes
** the MT as its target (ui status "MT"); the store keeps it as an MT output
** only.  The file gets such MT only with params.save_mt, and only a PO or
** XLIFF document (as a draft: fuzzy / needs-review): by default MT that
** nobody edited or confirmed (pre-translated, or on a segment merely
** visited) stays out of the file, as it does in text formats, which cannot
** mark a draft.  Confirmed segments and the translator's drafts are always
** written.
**
** Edit events.  The ui reports the field's text when it asks for a
** completion, when the translator leaves a segment with a draft, and at a
** commit; each text that differs from the previous one becomes an edit
** event: "accept_all" when it is the MT, "nbest_pick" when it is another
** n-best alternative, else "typed".  Keystrokes of intermediate events are
** estimated (characters deleted plus inserted since the previous text);
** the confirmation carries the ui's exact count.  The store takes the text
** of each event as the segment's target, so when the translator leaves a
** segment with the text it had (edits undone), that text is stored again.
*/
#include "edit_session.h"

#include <limits.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "corpus_io.h"
#include "edit_gloss.h"
#include "metrics.h"
#include "qa.h"

typedef struct unit {
    int64_t dseg;       /* document segment                              */
    int form;           /* translation form                              */
    const char *source; /* shown (points into the document)              */
    char *label;        /* "plural form 1/2 (n = 1)", or NULL            */
    /* glossary terms in source and their line (edit_gloss.h); NULL: none */
    ui_span *terms;
    int32_t n_terms;
    char *terms_line;
    char *mt_source; /* what is translated (a copy of source)         */
    char *target;    /* current target, "" when none                  */
    ui_seg_status status;
    int64_t seg_id; /* store row of the current document version     */
    int64_t mt_id;  /* latest MT output stored for it (0: none)      */
    char **nbest;   /* its n-best texts                              */
    int32_t n_nbest;
    char *last_text;    /* text of the last edit event                   */
    char *qa_ack;       /* text confirmed once despite its QA issues     */
    int64_t spent_ms;   /* time on the segment before the current visit  */
    int64_t entered_ms; /* start of the current visit, -1 when not current */
    int32_t keys_est;
} unit;

/* What the file that :w writes looked like when it was opened or last
** saved, to notice another program's (another editor's) save in between. */
typedef struct disk_stamp {
    bool exists;
    int64_t size, mtime_ns;
    char *hash; /* NULL when the file did not exist */
} disk_stamp;

struct app_edit_ctl {
    store *st;
    app_doc *doc;
    app_edit_ctl_params p;
    char *path; /* the document file, resolved */
    char *src_lang, *trg_lang;
    store_format fmt;
    bool has_states; /* the format marks drafts (PO fuzzy, XLIFF state) */
    int64_t doc_id;
    unit *u;
    int64_t n;
    ui_segment *useg;
    ui_document udoc;
    const char **mt_src;
    bool *translated;
    int64_t start, cur;
    app_edit_session *sess;
    app_edit_observer obs;
    void *obs_user;
    char *model_path; /* cache of the last model id */
    int64_t model_id;
    app_edit_tuner *tuner; /* :tune; NULL: not available */
    disk_stamp disk;       /* the saved-to file as opened or last saved */
    /* p.glossary_project's terms; NULL: none */
    app_glossary *gloss;
};

static mt_status oom(void) { return mt_seterr(MT_ERR_NOMEM, "edit: out of memory"); }

static mt_status replace_str(char **dst, const char *s) {
    char *t = mt_try_strdup(s ? s : "");
    if (t == NULL) return oom();
    mt_free(*dst);
    *dst = t;
    return MT_OK;
}

/* ------------------------------------------------------------- hashing */

static mt_status hash_file(const char *path, char **out);

mt_status app_edit_doc_hash(const app_doc *doc, char **out) {
    return hash_file(app_doc_path(doc), out);
}

static mt_status hash_file(const char *path, char **out) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL) return mt_seterr(MT_ERR_IO, "cannot read %s to hash it", path);
    uint64_t h = MT_FNV1A_INIT;
    uint64_t len = 0;
    unsigned char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        h = mt_fnv1a(h, buf, got);
        len += got;
    }
    bool err = ferror(f) != 0;
    fclose(f);
    if (err) return mt_seterr(MT_ERR_IO, "read error hashing %s", path);
    char text[64];
    snprintf(text, sizeof text, "fnv1a64:%016llx:%llu", (unsigned long long)h,
             (unsigned long long)len);
    *out = mt_try_strdup(text);
    return *out ? MT_OK : oom();
}

/* The stamp of path now: absent, or size, mtime and content hash. */
static mt_status stamp_file(const char *path, disk_stamp *out) {
    struct stat st;
    memset(out, 0, sizeof *out);
    if (path == NULL || stat(path, &st) != 0) return MT_OK; /* not there (yet) */
    out->exists = true;
    out->size = (int64_t)st.st_size;
    out->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    return hash_file(path, &out->hash);
}

/* Whether the file changed since the stamp: size and mtime, else the
** hash (a `touch` or a save of the same bytes is no change). */
static mt_status changed_on_disk(const char *path, const disk_stamp *was, bool *changed) {
    struct stat st;
    *changed = false;
    bool exists = path != NULL && stat(path, &st) == 0;
    if (exists != was->exists) {
        *changed = exists; /* removed meanwhile: saving recreates it */
        return MT_OK;
    }
    if (!exists) return MT_OK;
    if ((int64_t)st.st_size == was->size &&
        (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec == was->mtime_ns)
        return MT_OK;
    char *h = NULL;
    mt_status rc = hash_file(path, &h);
    if (rc != MT_OK) return rc;
    *changed = was->hash == NULL || strcmp(h, was->hash) != 0;
    mt_free(h);
    return MT_OK;
}

/* ------------------------------------------------------------ statuses */

static store_seg_status to_store(ui_seg_status s) {
    switch (s) {
    case UI_SEG_MT: return STORE_SEG_MT;
    case UI_SEG_EDITED: return STORE_SEG_EDITED;
    case UI_SEG_CONFIRMED: return STORE_SEG_CONFIRMED;
    default: return STORE_SEG_NEW;
    }
}

static ui_seg_status from_store(store_seg_status s, const char *target) {
    if (target == NULL || target[0] == '\0') return UI_SEG_NEW;
    switch (s) {
    case STORE_SEG_MT: return UI_SEG_MT;
    case STORE_SEG_EDITED: return UI_SEG_EDITED;
    case STORE_SEG_CONFIRMED: return UI_SEG_CONFIRMED;
    default: return UI_SEG_EDITED; /* a target the store calls new: a draft */
    }
}

static ui_seg_status from_doc(app_doc_state s, const char *target) {
    /* confirmed and empty: an empty line of a text file (app/formats/doc_text.c) */
    if (target == NULL || target[0] == '\0')
        return s == APP_DOC_STATE_CONFIRMED ? UI_SEG_CONFIRMED : UI_SEG_NEW;
    return s == APP_DOC_STATE_CONFIRMED ? UI_SEG_CONFIRMED : UI_SEG_EDITED;
}

/* Writes the targets of document entry dseg and its state from its units. */
static mt_status sync_doc(app_edit_ctl *c, int64_t ui) {
    int64_t a = ui, b = ui;
    int64_t dseg = c->u[ui].dseg;
    while (a > 0 && c->u[a - 1].dseg == dseg)
        a--;
    while (b + 1 < c->n && c->u[b + 1].dseg == dseg)
        b++;
    /* unedited MT goes into the file only when asked, as a draft */
    bool keep_mt = c->has_states && c->p.save_mt;
    bool all = true, any = false;
    for (int64_t i = a; i <= b; i++) {
        all = all && c->u[i].status == UI_SEG_CONFIRMED &&
              (c->u[i].target[0] || c->u[i].source[0] == '\0');
        any = any || (c->u[i].target[0] && (keep_mt || c->u[i].status != UI_SEG_MT));
    }
    app_doc_state state = all   ? APP_DOC_STATE_CONFIRMED
                          : any ? APP_DOC_STATE_DRAFT
                                : APP_DOC_STATE_EMPTY;
    const app_doc_segment *ds = app_doc_segment_at(c->doc, dseg);
    bool wrote = false;
    for (int64_t i = a; i <= b; i++) {
        const unit *u = &c->u[i];
        const char *t = u->status == UI_SEG_MT && !keep_mt ? "" : u->target;
        if (u->form < ds->n_targets && strcmp(ds->targets[u->form], t) == 0) continue;
        mt_status rc = app_doc_set_target(c->doc, dseg, u->form, t, state);
        if (rc != MT_OK) return rc;
        ds = app_doc_segment_at(c->doc, dseg);
        wrote = true;
    }
    if (!wrote && ds->state != state) return app_doc_set_state(c->doc, dseg, state);
    return MT_OK;
}

/* Sets a unit's target and status, then the document's. */
static mt_status set_target(app_edit_ctl *c, int64_t ui, const char *text, ui_seg_status status) {
    unit *u = &c->u[ui];
    char *old = u->target;
    ui_seg_status old_status = u->status;
    u->target = mt_try_strdup(text);
    if (u->target == NULL) {
        u->target = old;
        return oom();
    }
    u->status = status;
    mt_status rc = sync_doc(c, ui);
    if (rc != MT_OK) { /* the document refused it (e.g. XLIFF placeholders) */
        mt_free(u->target);
        u->target = old;
        u->status = old_status;
        return rc;
    }
    mt_free(old);
    return MT_OK;
}

/* ------------------------------------------------------------- opening */

typedef struct seg_row {
    int64_t id;
    int32_t index, plural_form;
    char *source, *target;
    store_seg_status status;
} seg_row;

typedef struct seg_rows {
    seg_row *v;
    int64_t n, cap;
    bool oom;
} seg_rows;

static int collect_seg(void *user, const store_segment *s) {
    seg_rows *r = user;
    if (r->n == r->cap) {
        int64_t cap = r->cap ? r->cap * 2 : 64;
        seg_row *v = mt_try_realloc(r->v, (size_t)cap * sizeof *v);
        if (v == NULL) {
            r->oom = true;
            return 1;
        }
        r->v = v;
        r->cap = cap;
    }
    seg_row *x = &r->v[r->n];
    x->id = s->id;
    x->index = s->index;
    x->plural_form = s->plural_form;
    x->status = s->status;
    x->source = mt_try_strdup(s->source);
    x->target = mt_try_strdup(s->target ? s->target : "");
    if (x->source == NULL || x->target == NULL) {
        mt_free(x->source);
        mt_free(x->target);
        r->oom = true;
        return 1;
    }
    r->n++;
    return 0;
}

static void rows_free(seg_rows *r) {
    for (int64_t i = 0; i < r->n; i++) {
        mt_free(r->v[i].source);
        mt_free(r->v[i].target);
    }
    mt_free(r->v);
    memset(r, 0, sizeof *r);
}

static mt_status list_rows(store *st, int64_t doc_id, seg_rows *r) {
    memset(r, 0, sizeof *r);
    mt_status rc = store_list_segments(st, doc_id, STORE_SEG_ALL, collect_seg, r);
    if (r->oom) rc = oom();
    if (rc != MT_OK) rows_free(r);
    return rc;
}

/* The store's source of a unit: the entry's msgid; plural_form -1 when the
** entry is not plural. */
static const char *unit_store_source(const app_edit_ctl *c, const unit *u, int32_t *plural_form,
                                     const char **plural) {
    const app_doc_segment *ds = app_doc_segment_at(c->doc, u->dseg);
    bool pl = ds->source_plural != NULL;
    *plural_form = pl ? u->form : -1;
    if (plural) *plural = ds->source_plural;
    return ds->source;
}

static bool row_matches(const app_edit_ctl *c, const unit *u, const seg_row *r) {
    int32_t pf;
    const char *src = unit_store_source(c, u, &pf, NULL);
    return strcmp(src, r->source) == 0 && pf == r->plural_form;
}

/* Takes the segment ids of document doc_id (checked against the units). */
static mt_status take_ids(app_edit_ctl *c, int64_t doc_id, seg_rows *rows) {
    mt_status rc = list_rows(c->st, doc_id, rows);
    if (rc != MT_OK) return rc;
    bool ok = rows->n == c->n;
    for (int64_t i = 0; ok && i < c->n; i++)
        ok = rows->v[i].index == i && row_matches(c, &c->u[i], &rows->v[i]);
    if (!ok) {
        rows_free(rows);
        return mt_seterr(MT_ERR_FORMAT,
                         "the store holds document %lld (%s) with other segments than the file "
                         "has now",
                         (long long)doc_id, c->path);
    }
    for (int64_t i = 0; i < c->n; i++)
        c->u[i].seg_id = rows->v[i].id;
    return MT_OK;
}

static int64_t clamp_seg(const app_edit_ctl *c, int64_t i) {
    return i < 0 ? 0 : i >= c->n ? c->n - 1 : i;
}

static int64_t first_open(const app_edit_ctl *c) {
    for (int64_t i = 0; i < c->n; i++)
        if (c->u[i].status != UI_SEG_CONFIRMED) return i;
    return 0;
}

/* The document is in the store: its stored state wins over the file's. */
static mt_status reopen(app_edit_ctl *c) {
    seg_rows rows;
    mt_status rc = take_ids(c, c->doc_id, &rows);
    if (rc != MT_OK) return rc;
    for (int64_t i = 0; i < c->n && rc == MT_OK; i++) {
        unit *u = &c->u[i];
        const seg_row *r = &rows.v[i];
        ui_seg_status s = from_store(r->status, r->target);
        if (r->target[0] == '\0') continue; /* nothing stored: the file's state */
        rc = replace_str(&u->last_text, r->target);
        if (rc == MT_OK && (s != u->status || strcmp(r->target, u->target) != 0))
            rc = set_target(c, i, r->target, s);
    }
    rows_free(&rows);
    if (rc != MT_OK) return rc;
    int32_t cs = 0, co = 0;
    rc = store_document_opened(c->st, c->doc_id);
    if (rc == MT_OK) rc = store_get_cursor(c->st, c->doc_id, &cs, &co);
    c->start = clamp_seg(c, cs);
    return rc;
}

typedef struct prev_doc {
    const char *path;
    int64_t id;
    int32_t cursor;
} prev_doc;

static int find_prev(void *user, const store_document *d) {
    prev_doc *p = user;
    if (strcmp(d->path, p->path) != 0) return 0;
    p->id = d->id;
    p->cursor = d->cursor_segment;
    return 1; /* most recently opened first: the first match */
}

static mt_status add_version(app_edit_ctl *c, const char *hash, int64_t *doc_id) {
    store_segment_in *in = mt_try_calloc((size_t)c->n, sizeof *in);
    if (in == NULL) return oom();
    for (int64_t i = 0; i < c->n; i++) {
        const unit *u = &c->u[i];
        const char *plural;
        in[i].source = unit_store_source(c, u, &in[i].plural_form, &plural);
        in[i].plural_source = plural;
        if (in[i].plural_form < 0) in[i].plural_form = 0;
        in[i].context = app_doc_segment_at(c->doc, u->dseg)->context;
        in[i].target = u->target[0] ? u->target : NULL;
        in[i].status = to_store(u->status);
    }
    store_doc_info info = {c->path, c->fmt, c->src_lang, c->trg_lang, hash};
    mt_status rc = store_add_document(c->st, &info, in, (int32_t)c->n, doc_id);
    mt_free(in);
    return rc;
}

/* A new version of the file: statuses and the cursor carry over from the
** latest stored version where source and target are unchanged. */
static mt_status import(app_edit_ctl *c, const char *hash) {
    prev_doc prev = {c->path, 0, 0};
    mt_status rc = store_list_documents(c->st, find_prev, &prev);
    if (rc != MT_OK && rc != MT_ABORTED) return rc;
    if (prev.id) {
        seg_rows rows;
        rc = list_rows(c->st, prev.id, &rows);
        if (rc != MT_OK) return rc;
        for (int64_t i = 0; i < c->n && i < rows.n; i++) {
            unit *u = &c->u[i];
            const seg_row *r = &rows.v[i];
            /* (an empty target keeps the file's state: new, or an empty
            ** line's confirmation) */
            if (r->index == i && row_matches(c, u, r) && u->target[0] &&
                strcmp(r->target, u->target) == 0)
                u->status = from_store(r->status, r->target);
        }
        rows_free(&rows);
    }
    rc = add_version(c, hash, &c->doc_id);
    if (rc != MT_OK) return rc;
    seg_rows rows;
    rc = take_ids(c, c->doc_id, &rows);
    if (rc != MT_OK) return rc;
    rows_free(&rows);
    c->start = prev.id ? clamp_seg(c, prev.cursor) : first_open(c);
    if (prev.id) rc = store_set_cursor(c->st, c->doc_id, (int32_t)c->start, 0);
    return rc;
}

static mt_status build_units(app_edit_ctl *c) {
    int64_t nd = app_doc_count(c->doc), n = 0;
    for (int64_t i = 0; i < nd; i++)
        n += app_doc_segment_at(c->doc, i)->n_targets;
    if (n == 0) return mt_seterr(MT_ERR_INVALID, "%s has no segments to translate", c->path);
    if (n > INT32_MAX) return mt_seterr(MT_ERR_INVALID, "%s has too many segments", c->path);
    c->u = mt_try_calloc((size_t)n, sizeof *c->u);
    if (c->u == NULL) return oom();
    for (int64_t i = 0, k = 0; i < nd; i++) {
        const app_doc_segment *ds = app_doc_segment_at(c->doc, i);
        for (int f = 0; f < ds->n_targets; f++, k++) {
            unit *u = &c->u[k];
            c->n = k + 1;
            u->dseg = i;
            u->form = f;
            u->source = f > 0 && ds->source_plural ? ds->source_plural : ds->source;
            u->entered_ms = -1;
            u->target = mt_try_strdup(ds->targets[f]);
            if (u->target == NULL) return oom();
            if (u->target[0] && (u->last_text = mt_try_strdup(u->target)) == NULL) return oom();
            /* XLIFF inline tags stay: the anatomy keeps them out of the MT
            ** input and puts them back into the translation */
            u->mt_source = mt_try_strdup(u->source);
            if (u->mt_source == NULL) return oom();
            if (ds->source_plural) { /* the forms of one entry, not separate ones */
                char label[128];
                const char *ex = app_doc_plural_examples(c->doc, f);
                snprintf(label, sizeof label, "plural form %d/%d%s%s%s", f + 1, ds->n_targets,
                         ex ? " (n = " : "", ex ? ex : "", ex ? ")" : "");
                if ((u->label = mt_try_strdup(label)) == NULL) return oom();
            }
            u->status = from_doc(ds->state, u->target);
        }
    }
    return MT_OK;
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

mt_status app_edit_ctl_open(store *st, app_doc *doc, const app_edit_ctl_params *p,
                            app_edit_ctl **out) {
    *out = NULL;
    app_edit_ctl *c = mt_try_calloc(1, sizeof *c);
    if (c == NULL) return oom();
    char *hash = NULL;
    mt_status rc = MT_OK;
    c->st = st;
    c->doc = doc;
    c->p = *p;
    c->cur = -1;
    char abs[PATH_MAX];
    const char *dp = app_doc_path(doc);
    const char *sl = p->src_lang ? p->src_lang : app_doc_source_lang(doc);
    const char *tl = p->trg_lang ? p->trg_lang : app_doc_target_lang(doc);
    c->path = mt_try_strdup(realpath(dp, abs) ? abs : dp);
    c->src_lang = mt_try_strdup(sl && sl[0] ? sl : "en");
    c->trg_lang = mt_try_strdup(tl && tl[0] ? tl : "de");
    if (!c->path || !c->src_lang || !c->trg_lang) {
        rc = oom();
        goto fail;
    }
    switch (app_doc_get_format(doc)) {
    case APP_DOC_FORMAT_PO:
        c->fmt = STORE_FORMAT_PO;
        c->has_states = true;
        break;
    case APP_DOC_FORMAT_XLIFF:
        c->fmt = STORE_FORMAT_XLIFF;
        c->has_states = true;
        break;
    case APP_DOC_FORMAT_PARALLEL: c->fmt = STORE_FORMAT_MOSES; break;
    default: c->fmt = STORE_FORMAT_TEXT; break;
    }
    rc = build_units(c);
    if (rc == MT_OK) rc = stamp_file(app_doc_save_path(doc), &c->disk);
    if (rc == MT_OK) rc = app_edit_doc_hash(doc, &hash);
    if (rc != MT_OK) goto fail;
    rc = store_find_document(st, c->path, hash, &c->doc_id);
    if (rc == MT_OK)
        rc = reopen(c);
    else if (rc == MT_ERR_NOTFOUND)
        rc = import(c, hash);
    if (rc != MT_OK) goto fail;

    c->useg = mt_try_calloc((size_t)c->n, sizeof *c->useg);
    c->mt_src = mt_try_calloc((size_t)c->n, sizeof *c->mt_src);
    c->translated = mt_try_calloc((size_t)c->n, sizeof *c->translated);
    if (!c->useg || !c->mt_src || !c->translated) {
        rc = oom();
        goto fail;
    }
    if (p->glossary_project) {
        rc = app_glossary_load(st, p->glossary_project, c->src_lang, c->trg_lang, &c->gloss);
        for (int64_t i = 0; i < c->n && rc == MT_OK; i++)
            rc = app_edit_gloss_terms(c->gloss, c->u[i].source, &c->u[i].terms, &c->u[i].n_terms,
                                      &c->u[i].terms_line);
        if (rc != MT_OK) goto fail;
    }
    for (int64_t i = 0; i < c->n; i++) {
        c->useg[i].source = c->u[i].source;
        c->useg[i].label = c->u[i].label;
        c->useg[i].terms = c->u[i].terms;
        c->useg[i].n_terms = c->u[i].n_terms;
        c->useg[i].terms_line = c->u[i].terms_line;
        c->useg[i].target = c->u[i].target;
        c->useg[i].status = c->u[i].status;
        c->mt_src[i] = c->u[i].mt_source;
        c->translated[i] = c->u[i].status != UI_SEG_NEW;
    }
    c->udoc.title = base_name(c->path);
    c->udoc.src_lang = c->src_lang;
    c->udoc.trg_lang = c->trg_lang;
    c->udoc.segs = c->useg;
    c->udoc.n_segs = c->n;
    mt_free(hash);
    *out = c;
    return MT_OK;
fail:
    mt_free(hash);
    app_edit_ctl_free(c);
    return rc;
}

void app_edit_ctl_free(app_edit_ctl *c) {
    if (c == NULL) return;
    mt_free(c->disk.hash);
    for (int64_t i = 0; c->u && i < c->n; i++) {
        unit *u = &c->u[i];
        mt_free(u->mt_source);
        mt_free(u->label);
        mt_free(u->terms);
        mt_free(u->terms_line);
        mt_free(u->target);
        mt_free(u->last_text);
        mt_free(u->qa_ack);
        for (int32_t k = 0; k < u->n_nbest; k++)
            mt_free(u->nbest[k]);
        mt_free(u->nbest);
    }
    mt_free(c->u);
    mt_free(c->useg);
    mt_free(c->mt_src);
    mt_free(c->translated);
    mt_free(c->path);
    mt_free(c->src_lang);
    mt_free(c->trg_lang);
    mt_free(c->model_path);
    app_glossary_free(c->gloss);
    mt_free(c);
}

const ui_document *app_edit_ctl_document(const app_edit_ctl *c) { return &c->udoc; }
int64_t app_edit_ctl_start(const app_edit_ctl *c) { return c->start; }
const char *const *app_edit_ctl_mt_sources(const app_edit_ctl *c) { return c->mt_src; }
const bool *app_edit_ctl_translated(const app_edit_ctl *c) { return c->translated; }
int64_t app_edit_ctl_count(const app_edit_ctl *c) { return c->n; }
const app_glossary *app_edit_ctl_glossary(const app_edit_ctl *c) { return c->gloss; }
int64_t app_edit_ctl_doc_id(const app_edit_ctl *c) { return c->doc_id; }
int64_t app_edit_ctl_seg_id(const app_edit_ctl *c, int64_t seg) {
    return seg >= 0 && seg < c->n ? c->u[seg].seg_id : 0;
}
void app_edit_ctl_attach(app_edit_ctl *c, app_edit_session *s) { c->sess = s; }
void app_edit_ctl_set_observer(app_edit_ctl *c, app_edit_observer fn, void *user) {
    c->obs = fn;
    c->obs_user = user;
}

/* --------------------------------------------------------- recording */

static mt_status model_id_for(app_edit_ctl *c, const char *path, const char *name, int64_t *id) {
    if (c->model_path && strcmp(c->model_path, path) == 0) {
        *id = c->model_id;
        return MT_OK;
    }
    mt_status rc = store_add_model(c->st, path, name, "marian", id);
    if (rc != MT_OK) return rc;
    rc = replace_str(&c->model_path, path);
    c->model_id = rc == MT_OK ? *id : 0;
    return MT_OK;
}

void app_edit_ctl_flush(app_edit_ctl *c) {
    if (c->sess == NULL) return;
    app_edit_result *head = app_edit_session_take_results(c->sess);
    for (app_edit_result *r = head; r; r = r->next) {
        if (r->seg < 0 || r->seg >= c->n || r->out.hyp == NULL) continue;
        unit *u = &c->u[r->seg];
        int64_t model_id = 0, mt_id = 0;
        mt_status rc = model_id_for(c, r->model_path, r->model_name, &model_id);
        int32_t n = r->out.nbest ? r->out.n_nbest : 1;
        store_hyp *h = mt_try_calloc((size_t)(n > 0 ? n : 1), sizeof *h);
        if (h == NULL) rc = oom();
        for (int32_t k = 0; rc == MT_OK && k < n; k++) {
            h[k].text = r->out.nbest ? r->out.nbest[k] : r->out.hyp;
            h[k].score = r->out.scores ? r->out.scores[k] : 0.0;
        }
        if (rc == MT_OK) rc = store_add_mt(c->st, u->seg_id, model_id, h, n, &mt_id);
        mt_free(h);
        if (rc != MT_OK) {
            mt_log(MT_LOG_ERROR, "segment %lld: the MT could not be stored: %s",
                   (long long)r->seg + 1, mt_errmsg());
            continue;
        }
        u->mt_id = mt_id;
        for (int32_t k = 0; k < u->n_nbest; k++)
            mt_free(u->nbest[k]);
        mt_free(u->nbest);
        u->nbest = r->out.nbest;
        u->n_nbest = r->out.nbest ? r->out.n_nbest : 0;
        r->out.nbest = NULL;
        r->out.n_nbest = 0;
        if (u->status == UI_SEG_NEW || u->status == UI_SEG_MT) {
            rc = set_target(c, r->seg, r->out.hyp, UI_SEG_MT);
            if (rc != MT_OK)
                mt_log(MT_LOG_WARN, "segment %lld: the document refused the MT: %s",
                       (long long)r->seg + 1, mt_errmsg());
        }
    }
    app_edit_results_free(head);
}

/* Characters (UTF-8 lead bytes) of s[0..n). */
static int32_t count_chars(const char *s, size_t n) {
    int32_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

static int64_t spent_now(const unit *u, int64_t now) {
    return u->spent_ms + (u->entered_ms >= 0 ? now - u->entered_ms : 0);
}

/* Records text as an edit event of segment ui unless it is the last one. */
/* An edit event with text; kind STORE_EDIT_TYPED is refined by the text
** (the MT: accept_all, another n-best entry: nbest_pick); keys >= 0: the
** ui's exact keystroke count, else estimated from the change. */
static mt_status record_edit_as(app_edit_ctl *c, int64_t ui, const char *text, store_edit_kind kind,
                                int32_t keys) {
    unit *u = &c->u[ui];
    const char *prev = u->last_text ? u->last_text : "";
    if (strcmp(prev, text) == 0) return MT_OK;
    size_t a = 0, pl = strlen(prev), tl = strlen(text);
    while (a < pl && a < tl && prev[a] == text[a])
        a++;
    while (a > 0 && ((unsigned char)text[a] & 0xC0) == 0x80) /* a character boundary */
        a--;
    if (keys >= 0)
        u->keys_est = keys;
    else
        u->keys_est += count_chars(prev + a, pl - a) + count_chars(text + a, tl - a);
    store_edit_in e = {
        .seg_id = u->seg_id,
        .kind = kind,
        .text = text,
        .spent_ms = spent_now(u, app_now_ms()),
        .keystrokes = u->keys_est,
        .mt_id = u->mt_id,
        .mt_rank = 0,
    };
    for (int32_t k = 0; k < u->n_nbest && kind == STORE_EDIT_TYPED; k++) {
        if (strcmp(u->nbest[k], text) == 0) {
            e.kind = k == 0 ? STORE_EDIT_ACCEPT_ALL : STORE_EDIT_NBEST_PICK;
            e.mt_rank = k;
            break;
        }
    }
    int64_t id;
    mt_status rc = store_record_edit(c->st, &e, &id);
    if (rc != MT_OK) return rc;
    return replace_str(&u->last_text, text);
}

static mt_status record_edit(app_edit_ctl *c, int64_t ui, const char *text) {
    return record_edit_as(c, ui, text, STORE_EDIT_TYPED, -1);
}

/* The translator left segment ui with the text it had when they came (no
** draft), but edit events since then made the store's target something
** else: the store gets that text back (a confirmed segment is confirmed
** again with it, an untranslated one gets an empty "undo"). */
static mt_status restore(app_edit_ctl *c, int64_t ui) {
    unit *u = &c->u[ui];
    bool open = u->status == UI_SEG_NEW || u->status == UI_SEG_MT;
    const char *initial = open ? "" : u->target;
    if (strcmp(u->last_text ? u->last_text : "", initial) == 0) return MT_OK;
    if (u->status == UI_SEG_EDITED) return record_edit(c, ui, initial);
    mt_status rc;
    if (u->status == UI_SEG_CONFIRMED) {
        int64_t id;
        rc = store_confirm(c->st, u->seg_id, initial, spent_now(u, app_now_ms()), u->keys_est, &id);
    } else {
        store_edit_in e = {.seg_id = u->seg_id,
                           .kind = STORE_EDIT_UNDO,
                           .text = "",
                           .spent_ms = spent_now(u, app_now_ms()),
                           .keystrokes = u->keys_est};
        int64_t id;
        rc = store_record_edit(c->st, &e, &id);
    }
    return rc == MT_OK ? replace_str(&u->last_text, initial) : rc;
}

/* --------------------------------------------------------------- hooks */

static void h_segment_changed(void *user, int64_t from, const char *draft, int64_t to) {
    app_edit_ctl *c = user;
    if (c->p.open_message) {
        mt_log(MT_LOG_WARN, "%s", c->p.open_message);
        c->p.open_message = NULL;
    }
    app_edit_ctl_flush(c);
    int64_t now = app_now_ms();
    if (from >= 0 && from < c->n) {
        unit *u = &c->u[from];
        if (draft) {
            if (record_edit(c, from, draft) != MT_OK)
                mt_log(MT_LOG_ERROR, "segment %lld: the draft could not be stored: %s",
                       (long long)from + 1, mt_errmsg());
            if (set_target(c, from, draft, draft[0] ? UI_SEG_EDITED : UI_SEG_NEW) != MT_OK)
                mt_log(MT_LOG_ERROR, "segment %lld: %s", (long long)from + 1, mt_errmsg());
            if (c->sess) app_edit_session_set_translated(c->sess, from, draft[0] != '\0');
        } else if (restore(c, from) != MT_OK) {
            mt_log(MT_LOG_ERROR, "segment %lld: the store could not be updated: %s",
                   (long long)from + 1, mt_errmsg());
        }
        u->spent_ms = spent_now(u, now);
        u->entered_ms = -1;
    }
    c->cur = to >= 0 && to < c->n ? to : -1;
    if (c->cur >= 0) {
        c->u[to].entered_ms = now;
        mt_status rc = store_set_cursor(c->st, c->doc_id, (int32_t)to, 0);
        if (rc != MT_OK) mt_log(MT_LOG_WARN, "the cursor could not be stored: %s", mt_errmsg());
    }
    if (c->sess) app_edit_session_goto(c->sess, c->cur);
}

static void h_request_completion(void *user, int64_t seg, const char *prefix) {
    app_edit_ctl *c = user;
    app_edit_ctl_flush(c);
    if (seg < 0 || seg >= c->n) return;
    if (record_edit(c, seg, prefix) != MT_OK)
        mt_log(MT_LOG_ERROR, "segment %lld: the edit could not be stored: %s", (long long)seg + 1,
               mt_errmsg());
    if (c->sess) app_edit_session_complete(c->sess, seg, prefix);
}

/* The field changed (ui_hooks.edited): one edit event per Tab, End, M-digit
** and typed burst, with the ui's keystrokes.  A whole completion taken
** with End is an accepted MT only when it is an n-best entry; otherwise
** (a typed prefix and its completion) it counts as accepted words. */
static void h_edited(void *user, int64_t seg, const char *text, ui_edit_kind kind,
                     int32_t keystrokes) {
    app_edit_ctl *c = user;
    app_edit_ctl_flush(c);
    if (seg < 0 || seg >= c->n) return;
    store_edit_kind k = kind == UI_EDIT_ACCEPT_WORD ? STORE_EDIT_ACCEPT_WORD : STORE_EDIT_TYPED;
    const unit *u = &c->u[seg];
    bool is_mt = false;
    for (int32_t i = 0; i < u->n_nbest; i++)
        is_mt = is_mt || strcmp(u->nbest[i], text) == 0;
    if (kind == UI_EDIT_ACCEPT_ALL && !is_mt) k = STORE_EDIT_ACCEPT_WORD;
    if (record_edit_as(c, seg, text, k, keystrokes) != MT_OK)
        mt_log(MT_LOG_ERROR, "segment %lld: the edit could not be stored: %s", (long long)seg + 1,
               mt_errmsg());
}

/* QA issues of text as the translation of unit ui (app/formats/qa.h) */
static int unit_qa(const app_edit_ctl *c, int64_t ui, const char *text, app_qa_issue *is) {
    const unit *u = &c->u[ui];
    const app_doc_segment *ds = app_doc_segment_at(c->doc, u->dseg);
    app_qa_input in = {ds->source, ds->source_plural, ds->flags,
                       app_doc_get_format(c->doc) == APP_DOC_FORMAT_PO, c->gloss};
    return app_qa_check(&in, u->form, text, is);
}

/* The text the document holds for unit ui ("" when none). */
static const char *doc_text(const app_edit_ctl *c, int64_t ui) {
    const unit *u = &c->u[ui];
    const app_doc_segment *ds = app_doc_segment_at(c->doc, u->dseg);
    return u->form < ds->n_targets ? ds->targets[u->form] : "";
}

/* QA of the document as it would be saved: the first unit after `from`
** (wrapping) with issues (errors_only: with an error), -1 when none;
** *n_issues and *n_units count all of them. */
static int64_t doc_qa(const app_edit_ctl *c, int64_t from, bool errors_only, app_qa_issue *first,
                      int *n_first, int64_t *n_issues, int64_t *n_units) {
    int64_t found = -1;
    *n_issues = *n_units = 0;
    *n_first = 0;
    for (int64_t k = 1; k <= c->n; k++) {
        int64_t i = ((from < 0 ? -1 : from) + k) % c->n;
        app_qa_issue is[APP_QA_MAX];
        int n = unit_qa(c, i, doc_text(c, i), is), m = 0;
        for (int j = 0; j < n; j++)
            if (!errors_only || is[j].level == APP_QA_ERROR) is[m++] = is[j];
        if (m == 0) continue;
        *n_issues += m;
        (*n_units)++;
        if (found < 0) {
            found = i;
            memcpy(first, is, sizeof(app_qa_issue) * (size_t)m);
            *n_first = m;
        }
    }
    return found;
}

static mt_status h_commit(void *user, int64_t seg, const char *text, const ui_edit_stats *st) {
    app_edit_ctl *c = user;
    app_edit_ctl_flush(c);
    if (seg < 0 || seg >= c->n) return mt_seterr(MT_ERR_INVALID, "no segment %lld", (long long)seg);
    unit *u = &c->u[seg];
    /* a translation with QA issues is confirmed by a second, deliberate
    ** confirmation of the same text */
    app_qa_issue is[APP_QA_MAX];
    int n_qa = c->p.qa_confirm ? unit_qa(c, seg, text, is) : 0;
    if (n_qa > 0 && (u->qa_ack == NULL || strcmp(u->qa_ack, text) != 0)) {
        if (replace_str(&u->qa_ack, text) != MT_OK) return oom();
        char more[32] = "";
        if (n_qa > 1) snprintf(more, sizeof more, " (+%d more)", n_qa - 1);
        return mt_seterr(MT_ERR_INVALID, "QA %s: %s%s; confirm again to keep it as it is",
                         is[0].level == APP_QA_ERROR ? "error" : "warning", is[0].msg, more);
    }
    int64_t now = app_now_ms();
    mt_status rc = MT_OK;
    if (st && st->origin == UI_ORIGIN_NBEST && st->suggestion)
        rc = record_edit(c, seg, st->suggestion);
    if (rc == MT_OK) rc = record_edit(c, seg, text);
    if (rc != MT_OK) return rc;
    int64_t spent = st ? (int64_t)(st->seconds * 1000.0 + 0.5) : spent_now(u, now);
    int32_t keys = st ? st->keystrokes : u->keys_est;
    int64_t conf_id = 0;
    rc =
        store_confirm(c->st, u->seg_id, text, spent < 0 ? 0 : spent, keys < 0 ? 0 : keys, &conf_id);
    if (rc != MT_OK) return rc;
    /* stored; the statistics of the next edit start afresh, as in the ui */
    u->keys_est = 0;
    u->spent_ms = 0;
    u->entered_ms = seg == c->cur ? now : -1;
    rc = set_target(c, seg, text, UI_SEG_CONFIRMED);
    if (rc != MT_OK) return mt_seterr(rc, "stored, but the document refused it: %s", mt_errmsg());
    if (c->sess) app_edit_session_set_translated(c->sess, seg, true);
    if (c->obs) c->obs(c->obs_user, "confirmed", seg, conf_id, text);
    if (c->tuner) app_edit_tuner_confirmed(c->tuner);
    return MT_OK;
}

/* :replace and its :undo (ui_hooks.replace): the new text is stored at
** once as an edit event ("typed", for the undo "undo"; the keystroke count
** unchanged: the translator pressed y, not the keys); a confirmed segment is confirmed
** again with it (the translator approved the change by answering y), a
** draft stays a draft.  No QA question: the translator sees each change. */
static mt_status h_replace(void *user, int64_t seg, const char *text, ui_seg_status status,
                           bool undo) {
    app_edit_ctl *c = user;
    app_edit_ctl_flush(c);
    if (seg < 0 || seg >= c->n) return mt_seterr(MT_ERR_INVALID, "no segment %lld", (long long)seg);
    if (status != UI_SEG_EDITED && status != UI_SEG_CONFIRMED)
        return mt_seterr(MT_ERR_INVALID, "segment %lld: replace keeps drafts and confirmed ones",
                         (long long)seg + 1);
    unit *u = &c->u[seg];
    int64_t now = app_now_ms();
    mt_status rc =
        record_edit_as(c, seg, text, undo ? STORE_EDIT_UNDO : STORE_EDIT_TYPED, u->keys_est);
    int64_t conf_id = 0;
    if (rc == MT_OK && status == UI_SEG_CONFIRMED)
        rc = store_confirm(c->st, u->seg_id, text, spent_now(u, now), u->keys_est, &conf_id);
    if (rc != MT_OK) return rc;
    rc = set_target(c, seg, text, status);
    if (rc != MT_OK) return mt_seterr(rc, "stored, but the document refused it: %s", mt_errmsg());
    if (c->sess) app_edit_session_set_translated(c->sess, seg, true);
    if (conf_id && c->obs) c->obs(c->obs_user, "confirmed", seg, conf_id, text);
    return MT_OK;
}

/* The saved file is the document's new version in the store: the
** segments it changed since the last save, not a copy (store_add_version). */
static mt_status register_version(app_edit_ctl *c) {
    char *hash = NULL;
    mt_status rc = app_edit_doc_hash(c->doc, &hash);
    if (rc != MT_OK) return rc;
    store_saved_segment *sv = mt_try_calloc((size_t)c->n, sizeof *sv);
    if (sv == NULL) {
        mt_free(hash);
        return oom();
    }
    for (int64_t i = 0; i < c->n; i++) {
        sv[i].target = c->u[i].target[0] ? c->u[i].target : NULL;
        sv[i].status = to_store(c->u[i].status);
    }
    int64_t version = 0;
    rc = store_add_version(c->st, c->doc_id, hash, sv, (int32_t)c->n, &version, NULL);
    mt_free(sv);
    mt_free(hash);
    if (rc == MT_OK && c->cur >= 0) rc = store_set_cursor(c->st, c->doc_id, (int32_t)c->cur, 0);
    return rc;
}

static mt_status h_save(void *user, bool force) {
    app_edit_ctl *c = user;
    app_edit_ctl_flush(c);
    if (!force && c->p.qa_save) { /* what msgfmt --check would reject is not written */
        app_qa_issue is[APP_QA_MAX];
        int n = 0;
        int64_t n_issues, n_units;
        int64_t i = doc_qa(c, -1, true, is, &n, &n_issues, &n_units);
        if (i >= 0)
            return mt_seterr(MT_ERR_INVALID,
                             "not saved: segment %lld: %s (%lld error%s in %lld segment%s; :qa "
                             "shows them, :w! saves anyway)",
                             (long long)i + 1, is[0].msg, (long long)n_issues,
                             n_issues == 1 ? "" : "s", (long long)n_units, n_units == 1 ? "" : "s");
    }
    /* another editor saved the file since we read or wrote it: saving now
    ** would drop its work (issue 38) unless the translator says so */
    const char *path = app_doc_save_path(c->doc);
    bool changed = false;
    mt_status rc = changed_on_disk(path, &c->disk, &changed);
    if (rc != MT_OK) return rc;
    if (changed && !force)
        return mt_seterr(MT_ERR_INVALID,
                         "not saved: %s changed on disk since it was opened or last saved here "
                         "(another editor?); :w! overwrites those changes, or :q! and open it "
                         "again to see them",
                         path);
    rc = app_doc_save(c->doc, NULL, c->p.save);
    if (rc != MT_OK) return rc;
    disk_stamp now;
    if (stamp_file(path, &now) == MT_OK) {
        mt_free(c->disk.hash);
        c->disk = now;
    }
    if (register_version(c) != MT_OK)
        mt_log(MT_LOG_WARN, "saved, but the new version is not in the store: %s", mt_errmsg());
    if (c->obs) c->obs(c->obs_user, "saved", -1, c->doc_id, c->path);
    return MT_OK;
}

static int64_t h_qa(void *user, int64_t from, char *msg, size_t n) {
    app_edit_ctl *c = user;
    app_edit_ctl_flush(c);
    app_qa_issue is[APP_QA_MAX];
    int n_first = 0;
    int64_t n_issues, n_units;
    int64_t i = doc_qa(c, from, false, is, &n_first, &n_issues, &n_units);
    if (i < 0) {
        snprintf(msg, n, "QA: no problems in the translated segments");
        return -1;
    }
    int at = snprintf(
        msg, n, "QA, segment %lld (%lld problem%s in %lld segment%s): ", (long long)i + 1,
        (long long)n_issues, n_issues == 1 ? "" : "s", (long long)n_units, n_units == 1 ? "" : "s");
    for (int k = 0; k < n_first && at >= 0 && (size_t)at < n; k++)
        at += snprintf(msg + at, n - (size_t)at, "%s%s%s", k ? "; " : "",
                       is[k].level == APP_QA_ERROR ? "error: " : "", is[k].msg);
    return i;
}

typedef struct model_find {
    const char *name;
    char *path; /* the newest model of that name */
} model_find;

static int find_model(void *user, const store_model *m) {
    model_find *f = user;
    if (strcmp(m->name, f->name) == 0) {
        mt_free(f->path);
        f->path = mt_try_strdup(m->path);
    }
    return 0;
}

/* :model PATH, or :model NAME of a model the store knows (a tuned-N). */
static mt_status h_load_model(void *user, const char *path) {
    app_edit_ctl *c = user;
    if (c->sess == NULL) return mt_seterr(MT_ERR_INVALID, "no translation engine is running");
    struct stat st;
    model_find f = {path, NULL};
    if (strchr(path, '/') == NULL && stat(path, &st) != 0) {
        mt_status rc = store_list_models(c->st, find_model, &f);
        if (rc != MT_OK) return rc;
    }
    const char *target = f.path ? f.path : path;
    mt_status rc = c->tuner ? app_edit_tuner_load_model(c->tuner, target)
                            : app_edit_session_load_model(c->sess, target);
    mt_free(f.path);
    return rc;
}

typedef struct model_list {
    char *msg;
    size_t n, at;
    int count;
} model_list;

static int list_model(void *user, const store_model *m) {
    model_list *l = user;
    struct stat st;
    if (m->name[0] == '\0' || stat(m->path, &st) != 0 || l->at >= l->n) return 0; /* gone */
    int k = snprintf(l->msg + l->at, l->n - l->at, "%s%s", l->count ? ", " : "", m->name);
    if (k > 0) l->at += (size_t)k;
    l->count++;
    return 0;
}

/* :model without a path: the models the store knows, and the last tune. */
static mt_status h_models(void *user, char *msg, size_t n) {
    app_edit_ctl *c = user;
    model_list l = {msg, n, 0, 0};
    msg[0] = '\0';
    int k = snprintf(msg, n, "models: ");
    l.at = k > 0 ? (size_t)k : 0;
    mt_status rc = store_list_models(c->st, list_model, &l);
    if (rc != MT_OK) return rc;
    if (l.count == 0) snprintf(msg, n, "no model used yet");
    char last[320] = "";
    if (c->tuner) app_edit_tuner_last(c->tuner, last, sizeof last);
    size_t at = strlen(msg);
    if (at < n)
        snprintf(msg + at, n - at, "%s%s; :model NAME|PATH switches", last[0] ? "; last tune " : "",
                 last);
    return MT_OK;
}

/* :tune, :tune cancel */
static mt_status h_tune(void *user, const char *arg, char *msg, size_t n) {
    app_edit_ctl *c = user;
    if (c->tuner == NULL) {
        snprintf(msg, n, "tuning is not available (no model)");
        return mt_seterr(MT_ERR_INVALID, "%s", msg);
    }
    app_edit_ctl_flush(c);
    if (strcmp(arg, "cancel") == 0) return app_edit_tuner_cancel(c->tuner, msg, n);
    if (arg[0]) {
        snprintf(msg, n, ":tune takes nothing or 'cancel'");
        return mt_seterr(MT_ERR_INVALID, "%s", msg);
    }
    return app_edit_tuner_start(c->tuner, msg, n);
}

void app_edit_ctl_set_tuner(app_edit_ctl *c, app_edit_tuner *t) { c->tuner = t; }

/* :stats of this document: segments and words by status, the time spent,
** HTER (TER of the MT shown against the confirmed text) and words per hour. */
typedef struct stats_ctx {
    int64_t spent_ms;
    int64_t with_mt, edits, ref_words;
    mt_status rc;
} stats_ctx;

static int stats_segment(void *user, const store_segment *g) {
    stats_ctx *x = user;
    x->spent_ms += g->time_spent_ms;
    return 0;
}

static int stats_confirmed(void *user, const store_confirmed *cf) {
    stats_ctx *x = user;
    if (cf->mt == NULL) return 0;
    int64_t e = 0, w = 0;
    x->rc = mt_ter_edits(cf->mt, cf->target, false, &e, &w);
    if (x->rc != MT_OK) return 1;
    x->with_mt++;
    x->edits += e;
    x->ref_words += w;
    return 0;
}

static mt_status h_stats(void *user, char *msg, size_t n) {
    app_edit_ctl *c = user;
    app_edit_ctl_flush(c);
    store_progress pr;
    mt_status rc = store_get_progress(c->st, c->doc_id, &pr);
    stats_ctx x = {0};
    if (rc == MT_OK) rc = store_list_segments(c->st, c->doc_id, STORE_SEG_ALL, stats_segment, &x);
    if (rc == MT_OK) rc = store_list_confirmed(c->st, c->doc_id, INT64_MIN, stats_confirmed, &x);
    if (rc == MT_ABORTED) rc = x.rc;
    if (rc != MT_OK) return rc;
    int64_t conf = pr.segments[STORE_SEG_CONFIRMED], conf_w = pr.words[STORE_SEG_CONFIRMED];
    int64_t edited = pr.segments[STORE_SEG_EDITED] + pr.segments[STORE_SEG_MT];
    int64_t minutes = x.spent_ms / 60000;
    int k = snprintf(msg, n,
                     "stats: %lld/%lld confirmed (%lld/%lld words), %lld drafts, %lld new; "
                     "time %lld h %02lld min",
                     (long long)conf, (long long)pr.total_segments, (long long)conf_w,
                     (long long)pr.total_words, (long long)edited,
                     (long long)pr.segments[STORE_SEG_NEW], (long long)(minutes / 60),
                     (long long)(minutes % 60));
    if (k > 0 && (size_t)k < n && x.spent_ms >= 60000)
        k += snprintf(msg + k, n - (size_t)k, ", %.0f words/hour",
                      (double)conf_w * 3600000.0 / (double)x.spent_ms);
    if (k > 0 && (size_t)k < n) {
        if (x.with_mt > 0 && x.ref_words > 0)
            snprintf(msg + k, n - (size_t)k, "; HTER %.1f%% over %lld segments with MT",
                     100.0 * (double)x.edits / (double)x.ref_words, (long long)x.with_mt);
        else
            snprintf(msg + k, n - (size_t)k, "; HTER: no confirmed segment with MT yet");
    }
    return MT_OK;
}

static mt_status h_export(void *user, const char *format, const char *path) {
    app_edit_ctl *c = user;
    app_edit_ctl_flush(c);
    bool tmx = strcmp(format, "tmx") == 0;
    if (!tmx && strcmp(format, "tsv") != 0)
        return mt_seterr(MT_ERR_INVALID, "unknown export format '%s' (tmx, tsv)", format);
    app_corpus_export_params p;
    memset(&p, 0, sizeof p);
    p.document = c->path;
    p.since_ms = INT64_MIN;
    p.tmx_path = tmx ? path : NULL;
    p.tsv_path = tmx ? NULL : path;
    app_corpus_stats cs;
    memset(&cs, 0, sizeof cs);
    return app_corpus_export(c->st, &p, &cs);
}

ui_hooks app_edit_ctl_hooks(app_edit_ctl *c) {
    ui_hooks h = {
        .user = c,
        .segment_changed = h_segment_changed,
        .request_completion = h_request_completion,
        .commit = h_commit,
        .save = h_save,
        .qa = h_qa,
        .edited = h_edited,
        .load_model = h_load_model,
        .export_doc = h_export,
        .tune = h_tune,
        .models = h_models,
        .stats = h_stats,
        .replace = h_replace,
    };
    return h;
}
