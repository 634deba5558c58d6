/*
** gec.c: conservative grammatical error correction (gec.h): candidate
** edits from a beam search, each kept only when forced decoding says it
** gains more than the threshold.
*/
#include "gec.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "ensemble.h"
#include "gec_eval.h"
#include "gec_text.h"
#include "model.h"
#include "translator.h"
#include "vocab.h"

struct app_gec {
    mt_ensemble am;
    mt_translator *tr;
    app_gec_params p;
};

struct app_gec_worker {
    const app_gec *g;
    mt_translate_worker *tw;
    mt_graph *graph;
};

app_gec_params app_gec_default_params(void) {
    return (app_gec_params){.threshold = 2.0f, .beam_size = 4, .max_length = 200};
}

mt_status app_gec_open(const char *const *models, int n_models, const float *weights,
                       const char *const *vocabs, int n_vocabs, const app_gec_params *p,
                       app_gec **out) {
    *out = NULL;
    app_gec *g = mt_try_calloc(1, sizeof *g);
    if (!g) return mt_seterr(MT_ERR_NOMEM, "gec: out of memory");
    g->p = p ? *p : app_gec_default_params();
    mt_status rc = mt_ensemble_load(&g->am, models, n_models, weights, vocabs, n_vocabs);
    if (rc == MT_OK && g->am.n_src != 1)
        rc = mt_seterr(MT_ERR_INVALID, "gec: the model must read one source stream, not %d",
                       g->am.n_src);
    if (rc == MT_OK) {
        mt_translate_params tp = mt_translate_default_params();
        tp.beam_size = g->p.beam_size;
        tp.normalize = 1.0f;
        tp.max_length = g->p.max_length;
        tp.length_per_sentence = true;
        rc = mt_translator_init(&g->am, NULL, &tp, &g->tr);
    }
    if (rc != MT_OK) {
        app_gec_free(g);
        return rc;
    }
    *out = g;
    return MT_OK;
}

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

mt_status app_gec_open_path(const char *path, const app_gec_params *p, app_gec **out) {
    char model[PATH_MAX + 16], vocab[PATH_MAX + 16];
    if (is_dir(path)) {
        snprintf(model, sizeof model, "%s/model.npz", path);
        snprintf(vocab, sizeof vocab, "%s/vocab.spm", path);
    } else {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", path);
        char *s = strrchr(dir, '/');
        if (s)
            *s = '\0';
        else
            snprintf(dir, sizeof dir, ".");
        snprintf(model, sizeof model, "%s", path);
        snprintf(vocab, sizeof vocab, "%s/vocab.spm", dir);
    }
    const char *m[1] = {model}, *v[2] = {vocab, vocab};
    return app_gec_open(m, 1, NULL, v, 2, p, out);
}

void app_gec_free(app_gec *g) {
    if (!g) return;
    mt_translator_free(g->tr);
    mt_ensemble_free(&g->am);
    mt_free(g);
}

mt_status app_gec_worker_init(const app_gec *g, app_gec_worker **out) {
    *out = NULL;
    app_gec_worker *w = mt_try_calloc(1, sizeof *w);
    if (!w) return mt_seterr(MT_ERR_NOMEM, "gec: out of memory");
    w->g = g;
    mt_status rc = mt_translate_worker_init(g->tr, &w->tw);
    if (rc == MT_OK) {
        mt_graph_params gp = mt_graph_default_params();
        gp.training = false;
        gp.memoize = true;
        gp.release_values = true;
        rc = mt_graph_init(NULL, gp, &w->graph);
    }
    if (rc != MT_OK) {
        app_gec_worker_free(w);
        return rc;
    }
    *out = w;
    return MT_OK;
}

void app_gec_worker_free(app_gec_worker *w) {
    if (!w) return;
    mt_translate_worker_free(w->tw);
    mt_graph_free(w->graph);
    mt_free(w);
}

void app_gec_result_clear(app_gec_result *r) {
    for (int i = 0; i < r->n_fixes; i++)
        mt_free(r->fixes[i].with);
    mt_free(r->fixes);
    r->fixes = NULL;
    r->n_fixes = 0;
}

char *app_gec_apply(const char *line, const app_gec_fix *f, int n) {
    size_t len = strlen(line), cap = len + 1;
    for (int i = 0; i < n; i++)
        cap += strlen(f[i].with);
    char *out = mt_try_malloc(cap), *o = out;
    if (!out) return NULL;
    int32_t pos = 0;
    for (int i = 0; i < n; i++) {
        memcpy(o, line + pos, (size_t)(f[i].at - pos));
        o += f[i].at - pos;
        size_t wl = strlen(f[i].with);
        memcpy(o, f[i].with, wl);
        o += wl;
        pos = f[i].at + f[i].len;
    }
    memcpy(o, line + pos, len - (size_t)pos);
    o[len - (size_t)pos] = '\0';
    return out;
}

/* ----------------------------------------------------------- edits */

static bool wsp(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v'; }

/* Byte starts and ends of the words of s (n_words of them, arrays from
** the caller sized strlen(s)/2 + 2). */
static int word_offsets(const char *s, int32_t *ws, int32_t *we) {
    int n = 0;
    int32_t i = 0;
    for (;;) {
        while (s[i] && wsp(s[i]))
            i++;
        if (!s[i]) break;
        ws[n] = i;
        while (s[i] && !wsp(s[i]))
            i++;
        we[n++] = i;
    }
    return n;
}

static int count_words(const char *s) {
    int n = 0;
    for (const char *p = s; *p;) {
        while (*p && wsp(*p))
            p++;
        if (!*p) break;
        n++;
        while (*p && !wsp(*p))
            p++;
    }
    return n;
}

/* Whether word rep is word src[0..n) cut short by APP_GEC_MIN_CUT or more
** bytes (trailing punctuation of src aside): "Verkauf" -> "Verk". */
static bool truncates(const char *src, size_t n, const char *rep) {
    size_t rl = strlen(rep);
    while (rl > 0 && strchr(".,;:!?)»«\"'", rep[rl - 1]))
        rl--;
    while (n > 0 && strchr(".,;:!?)»«\"'", src[n - 1]))
        n--;
    return rl + APP_GEC_MIN_CUT <= n && memcmp(src, rep, rl) == 0;
}

/* Whether any whitespace-separated word of s[0..n) is protected. */
static bool has_protected(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        while (i < n && wsp(s[i]))
            i++;
        size_t b = i;
        while (i < n && !wsp(s[i]))
            i++;
        if (i > b && gec_token_protected(s + b, i - b)) return true;
    }
    return false;
}

/* The byte fix of edit e of a line with words ws/we (nw of them). */
static app_gec_fix edit_to_fix(const app_gec_edit *e, const int32_t *ws, const int32_t *we, int nw,
                               int32_t line_len, char **with_out) {
    app_gec_fix f = {0};
    const char *rep = e->rep;
    size_t rl = strlen(rep);
    char *with = mt_try_malloc(rl + 2);
    if (!with) {
        *with_out = NULL;
        return f;
    }
    if (e->start < e->end) {
        if (rl > 0) {
            f.at = ws[e->start];
            f.len = we[e->end - 1] - f.at;
            memcpy(with, rep, rl + 1);
        } else if (e->end < nw) { /* deletion: the words and what follows them */
            f.at = ws[e->start];
            f.len = ws[e->end] - f.at;
            with[0] = '\0';
        } else if (e->start > 0) { /* deletion at the end: the space before */
            f.at = we[e->start - 1];
            f.len = we[e->end - 1] - f.at;
            with[0] = '\0';
        } else {
            f.at = 0;
            f.len = line_len;
            with[0] = '\0';
        }
    } else if (e->start < nw) { /* insertion before a word */
        f.at = ws[e->start];
        f.len = 0;
        memcpy(with, rep, rl);
        with[rl] = ' ';
        with[rl + 1] = '\0';
    } else { /* insertion at the end */
        f.at = nw ? we[nw - 1] : 0;
        f.len = 0;
        with[0] = nw ? ' ' : '\0';
        memcpy(with + (nw ? 1 : 0), rep, rl + 1);
    }
    *with_out = with;
    return f;
}

static bool overlaps(const app_gec_fix *f, const app_gec_keep *k, int nk) {
    for (int i = 0; i < nk; i++) {
        int32_t a = k[i].at, b = k[i].at + k[i].len;
        if (f->len == 0 ? (f->at > a && f->at < b) : (f->at < b && f->at + f->len > a)) return true;
    }
    return false;
}

/* ------------------------------------------------------- scoring */

typedef struct cand {
    int line; /* which line                      */
    int fix;  /* -1: the line itself, else a fix */
    int32_t *src, *trg;
    int32_t src_len, trg_len;
    double score;
} cand;

static mt_status score_cands(app_gec_worker *w, cand *c, int n) {
    const mt_ensemble *am = &w->g->am;
    mt_status rc = MT_OK;
    float buf[64];
    for (int at = 0; at < n && rc == MT_OK; at += 64) {
        int m = n - at < 64 ? n - at : 64;
        mt_batch_seq seqs[128];
        for (int i = 0; i < m; i++) {
            seqs[2 * i] = (mt_batch_seq){c[at + i].src, c[at + i].src_len};
            seqs[2 * i + 1] = (mt_batch_seq){c[at + i].trg, c[at + i].trg_len};
            c[at + i].score = 0;
        }
        mt_batch *b = NULL;
        rc = mt_batch_make(1, true, m, seqs, NULL, &b);
        for (int k = 0; k < am->n_models && rc == MT_OK; k++) {
            mt_graph_clear(w->graph);
            mt_model_loss L = mt_model_build_loss(am->models[k], w->graph, b, 0.0f);
            rc = L.status;
            if (rc == MT_OK) {
                mt_graph_keep(w->graph, L.logprob_sent);
                rc = mt_graph_forward(w->graph);
            }
            if (rc == MT_OK) rc = mt_node_get(L.logprob_sent, buf, m);
            for (int i = 0; rc == MT_OK && i < m; i++)
                c[at + i].score += (double)am->weights[k] * buf[i];
        }
        mt_batch_free(b);
    }
    return rc;
}

static mt_status encode(const mt_vocab *v, const char *text, int32_t **ids, int32_t *len,
                        bool right_left) {
    int64_t n = 0;
    mt_status rc = mt_vocab_encode(v, text, MT_VOCAB_ADD_EOS, ids, &n);
    if (rc != MT_OK) return rc;
    *len = (int32_t)n;
    if (right_left) mt_batch_reverse_seq(*ids, *len);
    return MT_OK;
}

mt_status app_gec_check(app_gec_worker *w, const char *const *lines, int n,
                        const app_gec_keep *const *keep, const int *n_keep, app_gec_result *res,
                        bool (*cancel)(void *), void *cancel_user) {
    const app_gec *g = w->g;
    for (int i = 0; i < n; i++)
        res[i] = (app_gec_result){0};
    for (int i = 0; i < n; i++) {
        size_t bad = 0;
        if (!gec_utf8_valid(lines[i], strlen(lines[i]), &bad))
            return mt_seterr(MT_ERR_INVALID, "line %d: invalid UTF-8 at byte %zu", i + 1, bad);
    }
    mt_tr_input *in = mt_try_calloc((size_t)n, sizeof *in);
    mt_tr_result *tr = mt_try_calloc((size_t)n, sizeof *tr);
    if (!in || !tr) {
        mt_free(in);
        mt_free(tr);
        return mt_seterr(MT_ERR_NOMEM, "gec: out of memory");
    }
    for (int i = 0; i < n; i++)
        in[i].src[0] = lines[i];
    mt_status rc = mt_translate(w->tw, in, n, tr, cancel, cancel_user);
    mt_free(in);
    cand *c = NULL;
    int nc = 0, cap = 0;
    /* candidate fixes of every line (in res, pruned below) */
    for (int i = 0; i < n && rc == MT_OK; i++) {
        if (tr[i].skipped || tr[i].n_hyps == 0 || lines[i][0] == '\0') continue;
        const char *hyp = tr[i].hyps[0].text;
        if (strcmp(hyp, lines[i]) == 0) continue;
        app_gec_edit *e = NULL;
        int ne = 0;
        rc = app_gec_edits(lines[i], hyp, &e, &ne);
        if (rc != MT_OK) break;
        size_t L = strlen(lines[i]);
        int32_t *ws = mt_try_malloc(sizeof(int32_t) * (L / 2 + 2));
        int32_t *we = mt_try_malloc(sizeof(int32_t) * (L / 2 + 2));
        res[i].fixes = mt_try_calloc((size_t)ne + 1, sizeof(app_gec_fix));
        if (!ws || !we || !res[i].fixes) rc = mt_seterr(MT_ERR_NOMEM, "gec: out of memory");
        int nw = rc == MT_OK ? word_offsets(lines[i], ws, we) : 0;
        for (int k = 0; k < ne && rc == MT_OK; k++) {
            int32_t a = e[k].start < e[k].end ? ws[e[k].start] : 0;
            int32_t b = e[k].start < e[k].end ? we[e[k].end - 1] : 0;
            if (has_protected(lines[i] + a, (size_t)(b - a)) ||
                has_protected(e[k].rep, strlen(e[k].rep)))
                continue;
            int rep_words = count_words(e[k].rep), src_words = e[k].end - e[k].start;
            if (src_words > APP_GEC_MAX_EDIT_WORDS || rep_words > APP_GEC_MAX_EDIT_WORDS ||
                (rep_words == 0 && src_words > APP_GEC_MAX_DELETE_WORDS))
                continue; /* not a local correction: a rewrite or a cut */
            if (src_words == 1 && rep_words == 1 &&
                truncates(lines[i] + a, (size_t)(b - a), e[k].rep))
                continue;
            char *with = NULL;
            app_gec_fix f = edit_to_fix(&e[k], ws, we, nw, (int32_t)L, &with);
            if (!with) {
                rc = mt_seterr(MT_ERR_NOMEM, "gec: out of memory");
                break;
            }
            f.with = with;
            if (keep && n_keep && overlaps(&f, keep[i], n_keep[i])) {
                mt_free(with);
                continue;
            }
            res[i].fixes[res[i].n_fixes++] = f;
        }
        mt_free(ws);
        mt_free(we);
        app_gec_edits_free(e, ne);
        if (rc != MT_OK || res[i].n_fixes == 0) continue;
        if (nc + res[i].n_fixes + 1 > cap) {
            int nc2 = 2 * cap + res[i].n_fixes + 16;
            cand *c2 = mt_try_realloc(c, sizeof *c * (size_t)nc2);
            if (!c2) {
                rc = mt_seterr(MT_ERR_NOMEM, "gec: out of memory");
                break;
            }
            c = c2;
            cap = nc2;
        }
        for (int k = -1; k < res[i].n_fixes && rc == MT_OK; k++) {
            cand *x = &c[nc++];
            *x = (cand){.line = i, .fix = k};
            char *text =
                k < 0 ? mt_try_strdup(lines[i]) : app_gec_apply(lines[i], &res[i].fixes[k], 1);
            if (!text) {
                rc = mt_seterr(MT_ERR_NOMEM, "gec: out of memory");
                break;
            }
            rc = encode(g->am.vocabs[0], lines[i], &x->src, &x->src_len, g->am.right_left);
            if (rc == MT_OK)
                rc = encode(g->am.vocabs[1], text, &x->trg, &x->trg_len, g->am.right_left);
            mt_free(text);
        }
    }
    if (rc == MT_OK && nc > 0 && cancel && cancel(cancel_user)) rc = MT_ABORTED;
    if (rc == MT_OK && nc > 0) rc = score_cands(w, c, nc);
    /* keep the fixes that gain more than the threshold */
    for (int q = 0; rc == MT_OK && q < nc;) {
        int i = c[q].line;
        double base = c[q].score;
        app_gec_result *r = &res[i];
        int kept = 0;
        for (int k = 0; k < r->n_fixes; k++) {
            double gain = c[q + 1 + k].score - base;
            if (gain > g->p.threshold) {
                r->fixes[k].gain = (float)gain;
                r->fixes[kept++] = r->fixes[k];
            } else {
                mt_free(r->fixes[k].with);
            }
        }
        q += 1 + r->n_fixes;
        r->n_fixes = kept;
    }
    for (int q = 0; q < nc; q++) {
        mt_free(c[q].src);
        mt_free(c[q].trg);
    }
    mt_free(c);
    for (int i = 0; i < n; i++)
        mt_tr_result_clear(&tr[i]);
    mt_free(tr);
    if (rc != MT_OK)
        for (int i = 0; i < n; i++)
            app_gec_result_clear(&res[i]);
    return rc;
}
