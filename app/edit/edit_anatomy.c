/*
** edit_anatomy.c: the editor's translations through the segment anatomy
** (app/formats/anatomy.h), so the MT a translator sees keeps the source's blanks,
** line breaks, column layout and placeholders, as `mtpe translate
** --format` does.
**
** Full translations: each piece is translated with its n-best list; the
** first acceptable entry is chosen (else the best one with a letter,
** repaired) and the pieces are assembled with the verbatim parts.  The
** n-best alternatives are assembled the same way from the k-th entry of
** every piece, leaving out junk (an entry without a letter: "%", "").  The
** attention and word confidences are passed on when they still describe
** the text shown: one piece, chosen as the engine's best, and as many
** words as the assembled text has.
**
** Completions: the typed prefix is walked along the parts: verbatim parts
** it contains are passed, and the piece it ends in is completed by the
** engine with the typed part of that piece as forced prefix; the pieces
** after it follow with their best translations.  A segment with nothing
** to translate completes with its own verbatim text.
*/
#include <string.h>

#include "anatomy.h"
#include "edit_session.h"

typedef struct call {
    const app_edit_engine *e;
    void *worker;
    bool (*cancel)(void *);
    void *cancel_user;
} call;

static mt_status oom(void) { return mt_seterr(MT_ERR_NOMEM, "edit: out of memory (segment)"); }

/* index of the first acceptable n-best entry of piece i, or -1 */
static int choose(const app_anatomy *a, int i, const app_edit_output *o) {
    for (int32_t k = 0; k < o->n_nbest; k++)
        if (app_anat_accepts(a, i, o->nbest[k])) return k;
    if (o->n_nbest == 0 && app_anat_accepts(a, i, o->hyp)) return 0;
    return -1;
}

/* a letter: not a translation made only of '%', digits or punctuation */
static bool has_letter(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++)
        if (((*p | 32) >= 'a' && (*p | 32) <= 'z') || *p >= 0xC0) return true;
    return false;
}

/* the chosen text of piece i; when no entry is acceptable, the best one
** with a letter (assemble repairs its placeholders) */
static const char *chosen(const app_edit_output *o, int k) {
    if (k >= 0 && k < o->n_nbest) return o->nbest[k];
    for (int32_t m = 0; m < o->n_nbest; m++)
        if (has_letter(o->nbest[m])) return o->nbest[m];
    return o->hyp ? o->hyp : "";
}

static mt_status full(const call *c, const app_anatomy *a, app_edit_output *out) {
    int n = app_anat_pieces(a);
    app_edit_output *po = mt_try_calloc((size_t)(n > 0 ? n : 1), sizeof *po);
    int *pick = mt_try_calloc((size_t)(n > 0 ? n : 1), sizeof *pick);
    const char **v = mt_try_calloc((size_t)(n > 0 ? n : 1), sizeof *v);
    mt_status rc = po && pick && v ? MT_OK : oom();
    int32_t most = 1;
    for (int i = 0; i < n && rc == MT_OK; i++) {
        rc = c->e->ops->translate(c->worker, app_anat_piece(a, i), NULL, c->cancel, c->cancel_user,
                                  &po[i]);
        if (rc != MT_OK) break;
        pick[i] = choose(a, i, &po[i]);
        v[i] = chosen(&po[i], pick[i]);
        if (po[i].n_nbest > most) most = po[i].n_nbest;
    }
    if (rc == MT_OK) rc = app_anat_assemble(a, v, &out->hyp);
    /* alternatives: the k-th entry of every piece (the chosen one first) */
    if (rc == MT_OK) {
        out->nbest = mt_try_calloc((size_t)most + 1, sizeof *out->nbest);
        out->scores = mt_try_calloc((size_t)most + 1, sizeof *out->scores);
        if (out->nbest == NULL || out->scores == NULL) rc = oom();
    }
    if (rc == MT_OK && (out->nbest[0] = mt_try_strdup(out->hyp)) == NULL) rc = oom();
    if (rc == MT_OK) {
        out->n_nbest = 1;
        for (int i = 0; i < n; i++)
            if (pick[i] >= 0 && pick[i] < po[i].n_nbest) out->scores[0] += po[i].scores[pick[i]];
    }
    for (int32_t k = 0; k < most && rc == MT_OK && n > 0; k++) {
        float score = 0;
        bool junk = false; /* "%", "" or "..." for a piece with words */
        for (int i = 0; i < n; i++) {
            int32_t kk = k < po[i].n_nbest ? k : po[i].n_nbest - 1;
            v[i] = kk >= 0 ? po[i].nbest[kk] : chosen(&po[i], -1);
            if (kk >= 0) score += po[i].scores[kk];
            junk = junk || !has_letter(v[i]);
        }
        if (junk) continue;
        char *t = NULL;
        rc = app_anat_assemble(a, v, &t);
        if (rc != MT_OK) break;
        bool dup = false;
        for (int32_t m = 0; m < out->n_nbest && !dup; m++)
            dup = strcmp(out->nbest[m], t) == 0;
        if (dup) {
            mt_free(t);
            continue;
        }
        out->nbest[out->n_nbest] = t;
        out->scores[out->n_nbest++] = score;
    }
    /* APE (ops->post_edit): each piece's chosen MT post-edited, assembled
    ** as the MT (a piece without one keeps its MT); none when no piece has
    ** one */
    bool any_ape = false;
    for (int i = 0; i < n && rc == MT_OK && c->e->ops->post_edit; i++) {
        v[i] = chosen(&po[i], pick[i]);
        mt_status arc = c->e->ops->post_edit(c->worker, app_anat_piece(a, i), v[i], c->cancel,
                                             c->cancel_user, &po[i].ape);
        if (arc == MT_ABORTED || arc == MT_ERR_NOMEM) rc = arc;
        if (arc == MT_ERR_UNSUPPORTED) break; /* no APE model */
        if (arc != MT_OK && rc == MT_OK) mt_log(MT_LOG_DEBUG, "APE: %s", mt_errmsg());
        if (po[i].ape) v[i] = po[i].ape, any_ape = true;
    }
    if (rc == MT_OK && any_ape) rc = app_anat_assemble(a, v, &out->ape);
    /* attention, tokens and confidences when they describe the text shown */
    if (rc == MT_OK && n == 1 && pick[0] <= 0) {
        app_edit_output *p = &po[0];
        out->n_tokens = p->n_tokens;
        if (p->word_conf && p->n_words == app_edit_count_words(out->hyp)) {
            out->word_conf = p->word_conf, out->n_words = p->n_words;
            p->word_conf = NULL;
        }
        out->attn = p->attn, out->src_tok = p->src_tok, out->trg_tok = p->trg_tok;
        out->n_src = p->n_src, out->n_trg = p->n_trg;
        p->attn = NULL, p->src_tok = p->trg_tok = NULL;
        p->n_src = p->n_trg = 0;
    } else if (rc == MT_OK) {
        for (int i = 0; i < n; i++)
            out->n_tokens += po[i].n_tokens;
    }
    for (int i = 0; po && i < n; i++)
        app_edit_output_clear(&po[i]);
    mt_free(po);
    mt_free(pick);
    mt_free(v);
    return rc;
}

/* the best translations of pieces from..n-1 with the glue between and
** after them, appended to *s */
static mt_status append_rest(const call *c, const app_anatomy *a, int from, char **s) {
    int n = app_anat_pieces(a);
    const char **v = mt_try_calloc((size_t)n + 1, sizeof *v);
    app_edit_output *po = mt_try_calloc((size_t)n + 1, sizeof *po);
    mt_status rc = v && po ? MT_OK : oom();
    for (int i = from; i < n && rc == MT_OK; i++) {
        rc = c->e->ops->translate(c->worker, app_anat_piece(a, i), NULL, c->cancel, c->cancel_user,
                                  &po[i]);
        if (rc == MT_OK) v[i] = chosen(&po[i], choose(a, i, &po[i]));
    }
    /* assemble all, then keep what follows piece from-1's end: glue[from]... */
    char *all = NULL;
    if (rc == MT_OK) {
        for (int i = 0; i < from; i++)
            v[i] = NULL;
        rc = app_anat_assemble(a, v, &all);
    }
    if (rc == MT_OK) {
        /* with pieces before `from` left out, `all` starts with glue
        ** 0..from: the caller has glue `from` already */
        size_t skip = 0;
        for (int i = 0; i <= from; i++)
            skip += strlen(app_anat_glue(a, i));
        size_t add = strlen(all) > skip ? strlen(all) - skip : 0, have = strlen(*s);
        char *t = mt_try_realloc(*s, have + add + 1);
        if (t == NULL)
            rc = oom();
        else {
            memcpy(t + have, all + skip, add);
            t[have + add] = '\0';
            *s = t;
        }
    }
    mt_free(all);
    for (int i = 0; po && i < n; i++)
        app_edit_output_clear(&po[i]);
    mt_free(po);
    mt_free(v);
    return rc;
}

static mt_status complete(const call *c, const app_anatomy *a, const char *prefix,
                          app_edit_output *out) {
    int n = app_anat_pieces(a);
    size_t pos = 0, plen = strlen(prefix);
    for (int i = 0; i <= n; i++) {
        const char *g = app_anat_glue(a, i);
        size_t gl = strlen(g), left = plen - pos;
        if (left < gl && strncmp(prefix + pos, g, left) == 0) {
            /* the prefix ends inside this verbatim part */
            out->completion = mt_try_strdup(g + left);
            if (out->completion == NULL) return oom();
            return i < n ? append_rest(c, a, i, &out->completion) : MT_OK;
        }
        if (strncmp(prefix + pos, g, gl) == 0) pos += gl;
        if (i == n) break;
        /* the typed text of piece i: up to the next verbatim part when it
        ** holds a line break or a column gap and the prefix contains it */
        const char *next = app_anat_glue(a, i + 1);
        const char *end = NULL;
        if (next[0] && (strchr(next, '\n') || strstr(next, "  ") || strchr(next, '\t')))
            end = strstr(prefix + pos, next);
        if (end && i + 1 < n) {
            pos = (size_t)(end - prefix);
            continue;
        }
        /* the prefix ends in piece i: the engine completes it */
        app_edit_output po;
        memset(&po, 0, sizeof po);
        mt_status rc = c->e->ops->translate(c->worker, app_anat_piece(a, i), prefix + pos,
                                            c->cancel, c->cancel_user, &po);
        if (rc != MT_OK) return rc;
        out->completion = po.completion ? po.completion : mt_try_strdup("");
        po.completion = NULL;
        out->n_tokens = po.n_tokens;
        if (out->completion == NULL) rc = oom();
        bool last = i + 1 == n;
        if (rc == MT_OK && last && strcmp(next, "") == 0) {
            out->comp_conf = po.comp_conf, out->n_comp_words = po.n_comp_words;
            po.comp_conf = NULL;
        }
        if (rc == MT_OK && next[0]) { /* the verbatim end, then the later pieces */
            size_t cl = strlen(out->completion), nl = strlen(next);
            char *t = mt_try_realloc(out->completion, cl + nl + 1);
            if (t == NULL)
                rc = oom();
            else {
                memcpy(t + cl, next, nl + 1);
                out->completion = t;
            }
        }
        if (rc == MT_OK && !last) rc = append_rest(c, a, i + 1, &out->completion);
        app_edit_output_clear(&po);
        return rc;
    }
    out->completion = mt_try_strdup("");
    return out->completion ? MT_OK : oom();
}

mt_status app_edit_translate_segment(const app_edit_engine *e, void *worker, const char *source,
                                     const char *prefix, bool (*cancel)(void *), void *cancel_user,
                                     app_edit_output *out) {
    memset(out, 0, sizeof *out);
    app_anatomy *a = NULL;
    mt_status rc = app_anat_parse(source, &a);
    if (rc != MT_OK) return rc;
    call c = {e, worker, cancel, cancel_user};
    rc = prefix ? complete(&c, a, prefix, out) : full(&c, a, out);
    if (rc == MT_OK && prefix) {
        size_t pl = strlen(prefix), cl = strlen(out->completion);
        out->hyp = mt_try_malloc(pl + cl + 1);
        if (out->hyp == NULL)
            rc = oom();
        else {
            memcpy(out->hyp, prefix, pl);
            memcpy(out->hyp + pl, out->completion, cl + 1);
        }
    }
    if (rc != MT_OK) app_edit_output_clear(out);
    app_anat_free(a);
    return rc;
}
