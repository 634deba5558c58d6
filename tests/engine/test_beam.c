/*
** test_beam.c: beam search (engine/beam.c) on toy scorers.
**
** The toy scorer is an order-2 Markov chain per sentence: the log-prob of
** the next token depends on the last two tokens.  The driver passes only the
** last one (prev_tokens); the one before comes from the scorer's own row
** state, which it reorders with `reorder`, so a wrong reorder changes the
** scores.  The scorer also checks the step contract (row order, start rows,
** sentences never coming back, no allocation during a search).
**
** Oracles: exhaustive enumeration of every output the search can produce
** (scored with the same formula), a plain greedy loop, and a plain
** re-implementation of Marian's loop (full sort of all candidates, token
** arrays copied per hypothesis) for random configurations.  Lexical
** constraints (test_constraints): the enumeration filtered to the outputs
** that hold the constraints is the oracle of the designed cases.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mt.h"

#define MAXV 10
#define MAXS 8
#define MAXROWS 512
#define MAXL 32
#define MAXENUM 8192

/* ------------------------------------------------------------ the chain */

typedef struct chain {
    int32_t v, n_sent;
    float lp[MAXS][(MAXV + 1) * (MAXV + 1)][MAXV]; /* [s][ctx][token] */
} chain;

static int ctx_of(int32_t v, int32_t prev2, int32_t prev1) {
    return (prev2 + 1) * (v + 1) + (prev1 + 1);
}

/* log p(tok | the hypothesis toks[0..len)) */
static float chain_lp(const chain *c, int32_t s, const int32_t *toks, int32_t len, int32_t tok) {
    int32_t p1 = len >= 1 ? toks[len - 1] : -1, p2 = len >= 2 ? toks[len - 2] : -1;
    return c->lp[s][ctx_of(c->v, p2, p1)][tok];
}

/* Random logits (normal * temp), biased EOS (id 0) and UNK (id 1), log-softmax. */
static void chain_random(chain *c, int32_t v, int32_t n_sent, uint64_t seed, float temp,
                         float eos_bias, float unk_bias) {
    mt_rng r;
    mt_rng_seed(&r, seed);
    c->v = v;
    c->n_sent = n_sent;
    for (int s = 0; s < n_sent; s++)
        for (int x = 0; x < (v + 1) * (v + 1); x++) {
            double lg[MAXV], mx = -1e300, sum = 0;
            for (int t = 0; t < v; t++) {
                lg[t] =
                    temp * mt_rng_normal(&r) + (t == 0 ? eos_bias : 0) + (t == 1 ? unk_bias : 0);
                if (lg[t] > mx) mx = lg[t];
            }
            for (int t = 0; t < v; t++)
                sum += exp(lg[t] - mx);
            for (int t = 0; t < v; t++)
                c->lp[s][x][t] = (float)(lg[t] - mx - log(sum));
        }
}

/* Attention of row (sentence s, position pos, previous token prev1) over S
** source positions: a fixed smooth function, normalised. */
static void chain_align(int32_t s, int32_t pos, int32_t prev1, int32_t S, float *out) {
    double a[64], sum = 0;
    for (int j = 0; j < S; j++) {
        a[j] = exp(sin(0.7 * pos + 0.3 * (prev1 + 2) * (j + 1) + 0.1 * s));
        sum += a[j];
    }
    for (int j = 0; j < S; j++)
        out[j] = (float)(a[j] / sum);
}

/* ----------------------------------------------------------- toy scorer */

typedef struct toy {
    const chain *c;
    const int32_t *src_len; /* for the alignment rows              */
    int32_t beam;           /* contract: rows per sentence <= beam */
    float logit_shift;      /* argmax_only: raw "logits" = lp + shift + row */
    int fail_at_call;       /* > 0: step call number that fails     */
    bool same_pos;          /* expect one position per call (no add) */
    int64_t mixed_calls;    /* calls with rows at different positions */
    /* row state, reordered: [2][MAXROWS] */
    int32_t st_p2[2][MAXROWS], st_p1[2][MAXROWS], st_pos[2][MAXROWS], st_sent[2][MAXROWS];
    int cur, n_prev_rows;
    bool started_s[MAXS];
    int last_call[MAXS];
    int64_t rows_of[MAXS];
    /* counters */
    int call; /* step calls in this search */
    int64_t calls, rows, argmax_calls, full_calls, topk_calls, amax_calls;
    int starts, finishes, adds, errors;
    uint64_t allocs_at_start;
    int state_token; /* what start hands out as state */
} toy;

static void toy_init(toy *t, const chain *c, const int32_t *src_len, int32_t beam) {
    memset(t, 0, sizeof *t);
    t->c = c;
    t->src_len = src_len;
    t->beam = beam;
    t->logit_shift = 7.5f;
}

static int32_t toy_vocab(void *user) { return ((toy *)user)->c->v; }

static void toy_mark(toy *t, const int32_t *sent, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        if (sent[i] < 0 || sent[i] >= t->c->n_sent || t->started_s[sent[i]])
            t->errors++;
        else
            t->started_s[sent[i]] = true;
        if (i > 0 && sent[i] <= sent[i - 1]) t->errors++;
    }
}

static mt_status toy_start(void *user, const int32_t *sent, int32_t n, void **state) {
    toy *t = user;
    t->starts++;
    t->call = 0;
    t->n_prev_rows = 0;
    for (int s = 0; s < MAXS; s++)
        t->last_call[s] = -1;
    toy_mark(t, sent, n);
    t->allocs_at_start = mt_alloc_get_stats().n_allocs;
    *state = &t->state_token;
    return MT_OK;
}

static mt_status toy_add(void *user, void *state, const int32_t *sent, int32_t n) {
    toy *t = user;
    if (state != &t->state_token) t->errors++;
    t->adds++;
    toy_mark(t, sent, n);
    return MT_OK;
}

static void toy_finish(void *user, void *state) {
    toy *t = user;
    if (state != &t->state_token) t->errors++;
    t->finishes++;
}

static mt_status toy_step(void *user, void *state, const mt_scorer_step *in, float *logprobs,
                          float *align) {
    toy *t = user;
    const chain *c = t->c;
    if (state != &t->state_token) t->errors++;
    t->call++;
    t->calls++;
    t->rows += in->n_hyps;
    if (t->fail_at_call > 0 && t->call == t->fail_at_call)
        return mt_seterr(MT_ERR_DEVICE, "toy scorer: injected failure at call %d", t->call);
    if (mt_alloc_get_stats().n_allocs != t->allocs_at_start) t->errors++;
    if (in->n_hyps < 1 || in->n_hyps > MAXROWS) return mt_seterr(MT_ERR_INVALID, "toy: rows");
    if (in->n_prev != t->n_prev_rows) t->errors++;
    if (in->beam_size != t->beam) t->errors++;
    if (in->argmax_only)
        t->argmax_calls++;
    else
        t->full_calls++;
    int nx = 1 - t->cur;
    int32_t cols = in->shortlist ? in->n_shortlist : c->v;
    int32_t run = 0;
    bool mixed = false;
    for (int32_t i = 0; i < in->n_hyps; i++) {
        int32_t s = in->hyp_sentence[i], r = in->reorder[i];
        if (s < 0 || s >= c->n_sent || !t->started_s[s]) {
            t->errors++;
            return mt_seterr(MT_ERR_INVALID, "toy: bad sentence");
        }
        if (i > 0 && s < in->hyp_sentence[i - 1]) t->errors++;
        run = i > 0 && s == in->hyp_sentence[i - 1] ? run + 1 : 1;
        if (run > t->beam) t->errors++;
        if (run == 1) { /* first row of s in this call */
            if (t->last_call[s] >= 0 && t->last_call[s] != t->call - 1) t->errors++; /* came back */
            t->last_call[s] = t->call;
        }
        t->rows_of[s]++;
        int32_t p2, p1 = in->prev_tokens[i], pos;
        if (r < 0) {
            if (p1 != -1 || in->hyp_pos[i] != 0 || t->last_call[s] != t->call ||
                (run == 1 && t->rows_of[s] != 1))
                t->errors++;
            p2 = -1;
            pos = 0;
        } else {
            if (r >= t->n_prev_rows || t->st_sent[t->cur][r] != s) {
                t->errors++;
                return mt_seterr(MT_ERR_INVALID, "toy: bad reorder");
            }
            p2 = t->st_p1[t->cur][r];
            pos = t->st_pos[t->cur][r] + 1;
            if (in->hyp_pos[i] != pos || p1 < 0 || p1 >= c->v) t->errors++;
        }
        if (in->hyp_pos[i] != in->hyp_pos[0]) {
            if (t->same_pos) t->errors++;
            mixed = true;
        }
        t->st_p2[nx][i] = p2;
        t->st_p1[nx][i] = p1;
        t->st_pos[nx][i] = pos;
        t->st_sent[nx][i] = s;
        const float *row = c->lp[s][ctx_of(c->v, p2, p1)];
        float *o = logprobs + (size_t)i * cols;
        for (int32_t k = 0; k < cols; k++) {
            int32_t tok = in->shortlist ? in->shortlist[k] : k;
            o[k] = row[tok];
            if (in->argmax_only) o[k] += t->logit_shift + (float)i; /* not log-probs */
        }
        if (align) {
            float *a = align + (size_t)i * in->align_stride;
            for (int32_t j = 0; j < in->align_stride; j++)
                a[j] = 99.0f; /* must not be read */
            chain_align(s, pos, p1, t->src_len[s], a);
        }
    }
    t->mixed_calls += mixed;
    t->cur = nx;
    t->n_prev_rows = in->n_hyps;
    return MT_OK;
}

/* step_topk by the plain method: the whole rows of toy_step, then each
** row's k best by repeated maximum (lowest column among equals). */
static mt_status toy_step_topk(void *user, void *state, const mt_scorer_step *in, int32_t k,
                               int32_t *cols_out, float *logprobs, float *align) {
    static float rows[MAXROWS * MAXV];
    toy *t = user;
    mt_status rc = toy_step(user, state, in, rows, align);
    if (rc != MT_OK) return rc;
    t->topk_calls++;
    if (in->argmax_only) t->errors++;
    int32_t cols = in->shortlist ? in->n_shortlist : t->c->v;
    for (int32_t i = 0; i < in->n_hyps; i++) {
        bool taken[MAXV] = {false};
        for (int32_t j = 0; j < k; j++) {
            int32_t best = -1;
            for (int32_t c = 0; c < cols; c++)
                if (!taken[c] && (best < 0 || rows[i * cols + c] > rows[i * cols + best])) best = c;
            if (best >= 0) taken[best] = true;
            cols_out[i * k + j] = best;
            logprobs[i * k + j] = best >= 0 ? rows[i * cols + best] : -INFINITY;
        }
    }
    return MT_OK;
}

/* step_argmax by the plain method: the whole rows of toy_step plus skip,
** then each row's first largest value above -inf. */
static mt_status toy_step_argmax(void *user, void *state, const mt_scorer_step *in,
                                 const float *skip, int32_t *cols_out, float *align) {
    static float rows[MAXROWS * MAXV];
    toy *t = user;
    mt_status rc = toy_step(user, state, in, rows, align);
    if (rc != MT_OK) return rc;
    t->amax_calls++;
    if (!in->argmax_only) t->errors++;
    int32_t cols = in->shortlist ? in->n_shortlist : t->c->v;
    for (int32_t i = 0; i < in->n_hyps; i++) {
        int32_t best = -1;
        for (int32_t c = 0; c < cols; c++) {
            float x = rows[i * cols + c] + skip[c];
            if (x > -INFINITY && (best < 0 || x > rows[i * cols + best] + skip[best])) best = c;
        }
        cols_out[i] = best;
    }
    return MT_OK;
}

static const mt_scorer_ops toy_ops = {toy_vocab,  toy_start, toy_add, toy_step,
                                      toy_finish, NULL,      NULL};
static const mt_scorer_ops toy_ops_noadd = {toy_vocab,  toy_start, NULL, toy_step,
                                            toy_finish, NULL,      NULL};
static const mt_scorer_ops toy_ops_topk = {toy_vocab,  toy_start,     toy_add,        toy_step,
                                           toy_finish, toy_step_topk, toy_step_argmax};
static const mt_scorer_ops *run1_ops = &toy_ops; /* what run1 searches with */

/* ------------------------------------------------------------ oracles */

typedef struct rhyp {
    int32_t tok[MAXL];
    int32_t len; /* tokens incl. EOS when eos */
    bool eos;
    float path, norm;
} rhyp;

typedef struct cfg {
    int32_t k;
    float alpha, wp;
    int32_t lim;
    bool allow_unk;
    const int32_t *supp;
    int32_t n_supp;
    const int32_t *prefix;
    int32_t pn;
} cfg;

static bool suppressed(const cfg *g, int32_t tok) {
    if (!g->allow_unk && tok == 1) return true;
    for (int i = 0; i < g->n_supp; i++)
        if (g->supp[i] == tok) return true;
    return false;
}

static float norm_of(const cfg *g, float path, int32_t len) {
    return (path - g->wp * (float)len) / powf((float)len, g->alpha);
}

/* Stable sort by normalised score, best first. */
static void sort_hyps(rhyp *h, int n) {
    for (int i = 1; i < n; i++) {
        rhyp x = h[i];
        int j = i - 1;
        while (j >= 0 && x.norm > h[j].norm) {
            h[j + 1] = h[j];
            j--;
        }
        h[j + 1] = x;
    }
}

/* Every output the search can produce for sentence s: sequences ending in
** EOS before the limit, and sequences of exactly lim tokens (cut). */
static void enum_rec(const chain *c, int32_t s, const cfg *g, rhyp *cur, rhyp *out, int *n) {
    int32_t t = cur->len;
    for (int32_t tok = 0; tok < c->v; tok++) {
        bool forced = t < g->pn;
        if (forced ? tok != g->prefix[t] : suppressed(g, tok)) continue;
        rhyp h = *cur;
        h.path = cur->path + chain_lp(c, s, cur->tok, t, tok);
        h.tok[t] = tok;
        h.len = t + 1;
        if (tok == 0 || h.len >= g->lim) {
            h.eos = tok == 0;
            h.norm = norm_of(g, h.path, h.len);
            if (*n < MAXENUM) out[(*n)++] = h;
        } else {
            enum_rec(c, s, g, &h, out, n);
        }
    }
}

static int enumerate(const chain *c, int32_t s, const cfg *g, rhyp *out) {
    rhyp root;
    memset(&root, 0, sizeof root);
    int n = 0;
    enum_rec(c, s, g, &root, out, &n);
    sort_hyps(out, n);
    return n;
}

typedef struct rcand {
    float score;
    int32_t h, tok;
} rcand;

static int rcand_cmp(const void *a, const void *b) {
    const rcand *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    if (x->h != y->h) return x->h < y->h ? -1 : 1;
    return x->tok < y->tok ? -1 : (x->tok > y->tok);
}

/* Marian's loop, plainly: all candidates sorted, the top `cap` kept, EOS
** ones finished, the beam shrinks; forced prefix steps keep one hypothesis
** and the full beam.  Returns the finished hypotheses, best first. */
static int ref_beam(const chain *c, int32_t s, const cfg *g, rhyp *out) {
    static rhyp beam[MAXROWS], next[MAXROWS];
    static rcand cands[MAXROWS * MAXV];
    int n_live = 1, cap = g->k, n_fin = 0;
    memset(&beam[0], 0, sizeof beam[0]);
    for (int32_t t = 0;; t++) {
        bool forced = t < g->pn;
        int nc = 0;
        for (int h = 0; h < n_live; h++)
            for (int32_t tok = 0; tok < c->v; tok++) {
                if (forced ? tok != g->prefix[t] : suppressed(g, tok)) continue;
                float sc = beam[h].path + chain_lp(c, s, beam[h].tok, t, tok);
                if (!(sc > -INFINITY)) continue;
                cands[nc++] = (rcand){sc, h, tok};
            }
        qsort(cands, (size_t)nc, sizeof *cands, rcand_cmp);
        int take = nc < cap ? nc : cap;
        bool last = t + 1 >= g->lim;
        int n_next = 0;
        for (int i = 0; i < take; i++) {
            rhyp h = beam[cands[i].h];
            h.tok[t] = cands[i].tok;
            h.len = t + 1;
            h.path = cands[i].score;
            if (cands[i].tok == 0 || last) {
                h.eos = cands[i].tok == 0;
                h.norm = norm_of(g, h.path, h.len);
                out[n_fin++] = h;
            } else {
                next[n_next++] = h;
            }
        }
        if (n_next == 0) break;
        memcpy(beam, next, sizeof(rhyp) * (size_t)n_next);
        n_live = n_next;
        cap = forced ? g->k : n_next;
    }
    sort_hyps(out, n_fin);
    return n_fin;
}

/* Greedy: argmax (first maximum) at every step. */
static rhyp ref_greedy(const chain *c, int32_t s, const cfg *g) {
    rhyp h;
    memset(&h, 0, sizeof h);
    for (int32_t t = 0;; t++) {
        int32_t best = -1;
        float bl = 0;
        for (int32_t tok = 0; tok < c->v; tok++) {
            if (suppressed(g, tok)) continue;
            float l = chain_lp(c, s, h.tok, t, tok);
            if (best < 0 || l > bl) {
                best = tok;
                bl = l;
            }
        }
        h.tok[t] = best;
        h.len = t + 1;
        h.path += bl;
        if (best == 0 || h.len >= g->lim) {
            h.eos = best == 0;
            h.norm = norm_of(g, h.path, h.len);
            return h;
        }
    }
}

/* Result hypothesis vs an oracle hypothesis (tokens exactly, scores close). */
static int same_hyp(const mt_beam_hyp *h, const rhyp *r, const char *what, int i) {
    int32_t nt = r->eos ? r->len - 1 : r->len;
    bool tok_ok = h->n_tokens == nt && h->eos == r->eos && h->length == r->len;
    for (int32_t t = 0; tok_ok && t < nt; t++)
        tok_ok = h->tokens[t] == r->tok[t];
    int ok = CHECK(tok_ok, "%s hyp %d: tokens differ (len %d/%d eos %d/%d)", what, i,
                   (int)h->length, (int)r->len, (int)h->eos, (int)r->eos);
    ok &= CHECK_CLOSE(h->path_score, r->path, 1e-5, 1e-6, "%s hyp %d path", what, i);
    ok &= CHECK_CLOSE(h->norm_score, r->norm, 1e-5, 1e-6, "%s hyp %d norm", what, i);
    return ok;
}

static int same_list(const mt_beam_result *res, const rhyp *r, int n, const char *what) {
    if (!CHECK(res->n_hyps == n, "%s: %d hypotheses, oracle %d", what, (int)res->n_hyps, n))
        return 0;
    int ok = 1;
    for (int i = 0; i < n && ok; i++)
        ok &= same_hyp(&res->hyps[i], &r[i], what, i);
    return ok;
}

static bool hyp_equal_exact(const mt_beam_hyp *a, const mt_beam_hyp *b, int m) {
    if (a->n_tokens != b->n_tokens || a->eos != b->eos || a->length != b->length ||
        a->prefix_len != b->prefix_len)
        return false;
    if (memcmp(a->tokens, b->tokens, sizeof(int32_t) * (size_t)a->n_tokens) != 0) return false;
    if (a->path_score != b->path_score || a->norm_score != b->norm_score) return false;
    for (int i = 0; i < m; i++)
        if (a->model_scores[i] != b->model_scores[i]) return false;
    return true;
}

static cfg cfg_from(const mt_beam_params *p, int32_t lim) {
    cfg g;
    memset(&g, 0, sizeof g);
    g.k = p->beam_size;
    g.alpha = p->normalize;
    g.wp = p->word_penalty;
    g.lim = lim;
    g.allow_unk = p->allow_unk;
    g.supp = p->suppress;
    g.n_supp = p->n_suppress;
    return g;
}

static rhyp enum_buf[MAXENUM], ref_buf[MAXROWS];

/* One-sentence search helper. */
static mt_status run1(mt_beam *b, const mt_beam_params *p, toy *t, const int32_t *src_len,
                      int32_t n, const int32_t *const *prefix, const int32_t *pn,
                      const mt_beam_result **res) {
    mt_scorer sc = {run1_ops, t};
    mt_beam_input in = {n, src_len, prefix, pn, NULL, 0, NULL, NULL};
    return mt_beam_search(b, p, &sc, 1, &in, res);
}

/* ----------------------------------------------------------------- tests */

/* An order-1 chain from probabilities by previous token (row 0: start). */
static void chain_from_probs(chain *c, int32_t v, const float (*pr)[MAXV]) {
    memset(c, 0, sizeof *c);
    c->v = v;
    c->n_sent = 1;
    for (int32_t p2 = -1; p2 < v; p2++)
        for (int32_t p1 = -1; p1 < v; p1++) {
            double sum = 0;
            for (int32_t t = 0; t < v; t++)
                sum += pr[p1 + 1][t];
            for (int32_t t = 0; t < v; t++)
                c->lp[0][ctx_of(v, p2, p1)][t] = (float)log(pr[p1 + 1][t] / sum);
        }
}

/* 1. Greedy misses the exhaustive optimum, a wide enough beam finds it. */
static void test_exhaustive(mt_beam *b) {
    static chain c;
    /* EOS, UNK, a, b, c.  Greedy: "a EOS" (.5 x .4 = .2); best: "b c EOS"
    ** (.3 x .85 x .97 = .247) */
    static const float pr[6][MAXV] = {
        {0.01f, 0.001f, 0.50f, 0.30f, 0.19f}, /* start */
        {0.97f, 0.001f, 0.01f, 0.01f, 0.01f}, /* after EOS (unused) */
        {0.40f, 0.001f, 0.20f, 0.20f, 0.20f}, /* after UNK (unused) */
        {0.40f, 0.001f, 0.20f, 0.20f, 0.20f}, /* after a */
        {0.05f, 0.001f, 0.05f, 0.05f, 0.85f}, /* after b */
        {0.97f, 0.001f, 0.01f, 0.01f, 0.01f}, /* after c */
    };
    chain_from_probs(&c, 5, pr);
    int32_t src_len[1] = {2};
    mt_beam_params p = mt_beam_default_params();
    p.max_length_factor = 2.0f; /* lim 4 */
    p.greedy_scores = true;
    cfg g = cfg_from(&p, 4);
    int n = enumerate(&c, 0, &g, enum_buf);
    CHECK(n == 1 + 3 + 9 + 27 + 81, "enumeration has %d outputs", n);
    const int32_t best_toks[2] = {3, 4};
    CHECK(enum_buf[0].eos && enum_buf[0].len == 3 && !memcmp(enum_buf[0].tok, best_toks, 8),
          "designed optimum is not 'b c EOS'");
    rhyp gr = ref_greedy(&c, 0, &g);
    CHECK(gr.len == 2 && gr.tok[0] == 2 && gr.tok[1] == 0, "designed greedy is not 'a EOS'");
    toy t;
    const mt_beam_result *res;
    p.beam_size = 1;
    toy_init(&t, &c, src_len, 1);
    CHECK_STATUS(run1(b, &p, &t, src_len, 1, NULL, NULL, &res));
    same_hyp(&res[0].hyps[0], &gr, "beam 1 vs greedy", 0);
    CHECK(res[0].hyps[0].norm_score < enum_buf[0].norm - 1e-3f, "greedy reaches the optimum");
    for (int32_t k = 2; k <= 5; k++) {
        p.beam_size = k;
        toy_init(&t, &c, src_len, k);
        CHECK_STATUS(run1(b, &p, &t, src_len, 1, NULL, NULL, &res));
        same_hyp(&res[0].hyps[0], &enum_buf[0], "beam >= 2 vs exhaustive optimum", (int)k);
    }
    /* random chains: the beam's best never beats the exhaustive optimum, and
    ** the whole n-best list is what Marian's loop gives */
    static chain r;
    int n_opt = 0, n_runs = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        chain_random(&r, 6, 1, seed, 1.5f, -0.5f, 0.0f);
        for (int32_t k = 1; k <= 6; k++) {
            p.beam_size = k;
            p.n_best = true;
            p.normalize = seed % 2 ? 0.0f : 1.0f;
            g = cfg_from(&p, 4);
            n = enumerate(&r, 0, &g, enum_buf);
            toy_init(&t, &r, src_len, k);
            CHECK_STATUS(run1(b, &p, &t, src_len, 1, NULL, NULL, &res));
            CHECK(t.errors == 0, "scorer contract violations: %d", t.errors);
            CHECK(res[0].hyps[0].norm_score <= enum_buf[0].norm + 1e-6f,
                  "beam beats the exhaustive optimum");
            n_opt += fabsf(res[0].hyps[0].norm_score - enum_buf[0].norm) < 1e-6f;
            n_runs++;
            int nr = ref_beam(&r, 0, &g, ref_buf);
            same_list(&res[0], ref_buf, nr, "beam vs Marian loop");
        }
    }
    CHECK(n_opt > n_runs / 2, "beam found the optimum in only %d of %d runs", n_opt, n_runs);
}

/* 2. Beam 1 = greedy loop; argmax-only path with raw logits. */
static void test_greedy(mt_beam *b) {
    static chain c;
    chain_random(&c, 7, 3, 77, 2.0f, -1.0f, 0.0f);
    int32_t src_len[3] = {4, 2, 3};
    mt_beam_params p = mt_beam_default_params();
    p.beam_size = 1;
    p.max_length_factor = 2.0f; /* lim 8 */
    cfg g = cfg_from(&p, 8);
    const mt_beam_result *res;
    toy t;
    for (int mode = 0; mode < 2; mode++) {
        p.greedy_scores = mode == 0;
        toy_init(&t, &c, src_len, 1);
        CHECK_STATUS(run1(b, &p, &t, src_len, 3, NULL, NULL, &res));
        CHECK(t.errors == 0, "scorer contract violations: %d", t.errors);
        for (int s = 0; s < 3; s++) {
            rhyp gr = ref_greedy(&c, s, &g);
            const mt_beam_hyp *h = &res[s].hyps[0];
            CHECK(res[s].n_hyps == 1, "greedy: %d hyps", (int)res[s].n_hyps);
            if (mode == 0) {
                same_hyp(h, &gr, "beam 1 (scores) vs greedy", s);
            } else {
                bool ok = h->n_tokens == (gr.eos ? gr.len - 1 : gr.len) && h->eos == gr.eos;
                for (int32_t i = 0; ok && i < h->n_tokens; i++)
                    ok = h->tokens[i] == gr.tok[i];
                CHECK(ok, "beam 1 (argmax only) differs from greedy, sentence %d", s);
                CHECK(isnan(h->path_score) && isnan(h->norm_score) && isnan(h->model_scores[0]),
                      "argmax-only scores should be NAN");
            }
        }
        if (mode == 0)
            CHECK(t.argmax_calls == 0, "argmax_only set although scores wanted");
        else
            CHECK(t.argmax_calls > 0 && t.full_calls == 0, "argmax_only not set for beam 1");
    }
    /* the argmaxes from the scorer (step_argmax): the same tokens, also
    ** where the suppressed UNK is every row's favourite */
    static chain cu;
    chain_random(&cu, 7, 3, 78, 2.0f, -1.0f, 4.0f);
    for (int which = 0; which < 2; which++) {
        const chain *ch = which ? &cu : &c;
        p.greedy_scores = false;
        toy_init(&t, ch, src_len, 1);
        run1_ops = &toy_ops_topk;
        mt_status rc = run1(b, &p, &t, src_len, 3, NULL, NULL, &res);
        run1_ops = &toy_ops;
        CHECK_STATUS(rc);
        CHECK(t.errors == 0 && t.amax_calls > 0 && t.topk_calls == 0,
              "step_argmax: %d violations, %lld argmax calls", t.errors, (long long)t.amax_calls);
        for (int s = 0; s < 3; s++) {
            rhyp gr = ref_greedy(ch, s, &g);
            const mt_beam_hyp *h = &res[s].hyps[0];
            bool ok = h->n_tokens == (gr.eos ? gr.len - 1 : gr.len) && h->eos == gr.eos;
            for (int32_t i = 0; ok && i < h->n_tokens; i++)
                ok = h->tokens[i] == gr.tok[i] && gr.tok[i] != 1;
            CHECK(ok, "beam 1 (step_argmax) differs from greedy, chain %d sentence %d", which, s);
        }
    }
    /* n-best or word scores need scores: no argmax_only */
    p.greedy_scores = false;
    p.word_scores = true;
    toy_init(&t, &c, src_len, 1);
    CHECK_STATUS(run1(b, &p, &t, src_len, 3, NULL, NULL, &res));
    CHECK(t.argmax_calls == 0, "argmax_only set although word scores wanted");
    rhyp gr = ref_greedy(&c, 1, &g);
    same_hyp(&res[1].hyps[0], &gr, "beam 1 with word scores", 1);
}

/* 3. n-best: size beam, sorted, unique, scores consistent with the chain. */
static void test_nbest(mt_beam *b) {
    static chain c;
    int32_t src_len[2] = {3, 5};
    mt_beam_params p = mt_beam_default_params();
    p.beam_size = 5;
    p.n_best = true;
    p.word_scores = true;
    p.normalize = 0.6f;
    p.max_length_factor = 1.5f; /* W 5: lim 8 */
    const mt_beam_result *res;
    toy t;
    for (uint64_t seed = 10; seed < 16; seed++) {
        chain_random(&c, 7, 2, seed, 1.5f, 0.0f, 0.0f);
        toy_init(&t, &c, src_len, p.beam_size);
        CHECK_STATUS(run1(b, &p, &t, src_len, 2, NULL, NULL, &res));
        CHECK(t.errors == 0, "scorer contract violations: %d", t.errors);
        for (int s = 0; s < 2; s++) {
            const mt_beam_result *r = &res[s];
            CHECK(r->n_hyps == p.beam_size, "n-best has %d entries", (int)r->n_hyps);
            for (int i = 0; i < r->n_hyps; i++) {
                const mt_beam_hyp *h = &r->hyps[i];
                if (i > 0)
                    CHECK(h->norm_score <= r->hyps[i - 1].norm_score, "n-best not sorted at %d", i);
                for (int j = 0; j < i; j++) {
                    const mt_beam_hyp *o = &r->hyps[j];
                    CHECK(!(o->n_tokens == h->n_tokens && o->eos == h->eos &&
                            !memcmp(o->tokens, h->tokens, sizeof(int32_t) * (size_t)h->n_tokens)),
                          "n-best entries %d and %d are equal", j, i);
                }
                /* path, per-model score and word scores from the chain */
                int32_t toks[MAXL];
                memcpy(toks, h->tokens, sizeof(int32_t) * (size_t)h->n_tokens);
                if (h->eos) toks[h->n_tokens] = 0;
                CHECK(h->length == h->n_tokens + (h->eos ? 1 : 0), "length");
                float path = 0, wsum = 0;
                for (int32_t k = 0; k < h->length; k++) {
                    float l = chain_lp(&c, s, toks, k, toks[k]);
                    CHECK_CLOSE(h->word_scores[k], l, 1e-5, 0, "word score %d", (int)k);
                    path += l;
                    wsum += h->word_scores[k];
                }
                CHECK_CLOSE(h->path_score, path, 1e-5, 1e-6, "path score from the chain");
                CHECK_CLOSE(wsum, h->path_score, 1e-4, 1e-6, "word scores sum to the path");
                CHECK(h->model_scores[0] == h->path_score, "F0 equals the path (one model)");
                float nrm = h->path_score / powf((float)h->length, p.normalize);
                CHECK(h->norm_score == nrm, "normalised score %g vs formula %g",
                      (double)h->norm_score, (double)nrm);
            }
            cfg g = cfg_from(&p, 8);
            int nr = ref_beam(&c, s, &g, ref_buf);
            same_list(r, ref_buf, nr, "n-best vs Marian loop");
        }
    }
}

/* 4. Length normalisation and word penalty: the search (path scores) does
** not depend on them, the ranking of the finished hypotheses does, and the
** winner is the argmax of the formula over them. */
static void test_normalization(mt_beam *b) {
    static chain c;
    int32_t src_len[1] = {3};
    mt_beam_params p = mt_beam_default_params();
    p.max_length_factor = 2.0f; /* lim 6 */
    p.beam_size = 4;
    p.n_best = true;
    const mt_beam_result *res;
    toy t;
    static rhyp e0[MAXROWS], e1[MAXROWS];
    /* pairs of (alpha, wp) settings whose winners must differ */
    const float set[2][2][2] = {{{0.0f, 0.0f}, {1.0f, 0.0f}}, {{0.0f, 1.0f}, {0.0f, -1.0f}}};
    for (int which = 0; which < 2; which++) {
        bool found = false;
        cfg g0, g1;
        int n0 = 0, n1 = 0;
        for (uint64_t seed = 100; seed < 600 && !found; seed++) {
            chain_random(&c, 7, 1, seed, 1.0f, -0.3f, 0.0f);
            p.normalize = set[which][0][0];
            p.word_penalty = set[which][0][1];
            g0 = cfg_from(&p, 6);
            p.normalize = set[which][1][0];
            p.word_penalty = set[which][1][1];
            g1 = cfg_from(&p, 6);
            n0 = ref_beam(&c, 0, &g0, e0);
            n1 = ref_beam(&c, 0, &g1, e1);
            found = n0 > 0 && n1 > 0 && e0[0].len != e1[0].len;
        }
        if (!CHECK(found, "no chain where setting %d changes the winner's length", which)) continue;
        /* the formula: the setting that favours length picks the longer one */
        CHECK(e1[0].len > e0[0].len, "setting %d: alpha 1 / wp -1 should favour length", which);
        static int32_t tok0[MAXROWS][MAXL];
        static float path0[MAXROWS];
        static int32_t len0[MAXROWS];
        int m0 = 0;
        for (int k = 0; k < 2; k++) {
            p.normalize = set[which][k][0];
            p.word_penalty = set[which][k][1];
            toy_init(&t, &c, src_len, p.beam_size);
            CHECK_STATUS(run1(b, &p, &t, src_len, 1, NULL, NULL, &res));
            same_list(&res[0], k == 0 ? e0 : e1, k == 0 ? n0 : n1, "normalised n-best");
            /* winner = argmax of the formula over the finished set */
            int arg = 0;
            for (int i = 0; i < res[0].n_hyps; i++) {
                const mt_beam_hyp *h = &res[0].hyps[i];
                float f = (h->path_score - p.word_penalty * (float)h->length) /
                          powf((float)h->length, p.normalize);
                float fa = (res[0].hyps[arg].path_score -
                            p.word_penalty * (float)res[0].hyps[arg].length) /
                           powf((float)res[0].hyps[arg].length, p.normalize);
                if (f > fa) arg = i;
            }
            CHECK(arg == 0, "setting %d/%d: the formula prefers n-best entry %d", which, k, arg);
            if (k == 0) {
                m0 = res[0].n_hyps;
                for (int i = 0; i < m0; i++) {
                    memcpy(tok0[i], res[0].hyps[i].tokens,
                           sizeof(int32_t) * (size_t)res[0].hyps[i].n_tokens);
                    path0[i] = res[0].hyps[i].path_score;
                    len0[i] = res[0].hyps[i].length;
                }
            } else {
                /* the same finished set, re-ranked */
                CHECK(res[0].n_hyps == m0, "finished sets differ in size");
                for (int i = 0; i < res[0].n_hyps; i++) {
                    const mt_beam_hyp *h = &res[0].hyps[i];
                    bool in0 = false;
                    for (int j = 0; j < m0 && !in0; j++)
                        in0 = len0[j] == h->length && path0[j] == h->path_score &&
                              !memcmp(tok0[j], h->tokens, sizeof(int32_t) * (size_t)h->n_tokens);
                    CHECK(in0, "setting %d: hypothesis %d is not in the other setting's set", which,
                          i);
                }
                CHECK(res[0].hyps[0].length > len0[0], "setting %d: winner not longer", which);
            }
        }
    }
}

/* 5. Length limit finalizes without EOS at the right step; empty sources. */
static void test_max_length(mt_beam *b) {
    static chain c;
    chain_random(&c, 6, 2, 5, 1.0f, -30.0f, 0.0f); /* EOS practically never chosen */
    mt_beam_params p = mt_beam_default_params();
    p.beam_size = 3;
    p.n_best = true;
    const mt_beam_result *res;
    toy t;
    struct {
        int32_t src;
        float factor;
        int32_t max_len, want;
    } cases[] = {{3, 1.5f, 0, 5}, {2, 2.0f, 0, 4}, {3, 3.0f, 0, 9},
                 {4, 3.0f, 5, 5}, {2, 0.1f, 0, 1}, {5, 0.0f, 7, 7}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t src_len[1] = {cases[i].src};
        p.max_length_factor = cases[i].factor;
        p.max_length = cases[i].max_len;
        toy_init(&t, &c, src_len, p.beam_size);
        CHECK_STATUS(run1(b, &p, &t, src_len, 1, NULL, NULL, &res));
        CHECK(res[0].n_hyps == p.beam_size, "case %zu: %d hyps", i, (int)res[0].n_hyps);
        for (int j = 0; j < res[0].n_hyps; j++) {
            const mt_beam_hyp *h = &res[0].hyps[j];
            CHECK(!h->eos && h->n_tokens == cases[i].want && h->length == cases[i].want,
                  "case %zu hyp %d: %d tokens (eos %d), want %d without EOS", i, j,
                  (int)h->n_tokens, (int)h->eos, (int)cases[i].want);
        }
        CHECK(t.calls == cases[i].want, "case %zu: %lld steps, want %d", i, (long long)t.calls,
              (int)cases[i].want);
    }
    /* empty source beside a normal one: empty output, score 0, no scorer rows */
    chain_random(&c, 6, 2, 6, 1.0f, 0.0f, 0.0f);
    int32_t src_len[2] = {1, 3};
    p = mt_beam_default_params();
    p.beam_size = 4;
    p.n_best = true;
    p.word_scores = true;
    p.alignment = true;
    for (int k = 0; k < 2; k++) {
        p.word_penalty = k == 0 ? 0.0f : 0.5f;
        toy_init(&t, &c, src_len, p.beam_size);
        CHECK_STATUS(run1(b, &p, &t, src_len, 2, NULL, NULL, &res));
        const mt_beam_hyp *h = &res[0].hyps[0];
        CHECK(res[0].n_hyps == 1 && h->n_tokens == 0 && h->eos && h->length == 1,
              "empty source: %d hyps, %d tokens", (int)res[0].n_hyps, (int)h->n_tokens);
        CHECK(h->path_score == 0.0f && h->model_scores[0] == 0.0f, "empty source path score");
        CHECK(h->norm_score == -p.word_penalty, "empty source score %g", (double)h->norm_score);
        CHECK(h->word_scores[0] == 0.0f && h->align[0] == 1.0f && h->src_len == 1,
              "empty source word score / alignment");
        CHECK(t.rows_of[0] == 0 && !t.started_s[0], "the scorer saw the empty sentence");
        CHECK(res[1].n_hyps == 4, "the other sentence has %d hyps", (int)res[1].n_hyps);
    }
    /* only empty sources: no scorer call at all */
    int32_t empties[2] = {1, 1};
    toy_init(&t, &c, empties, 4);
    CHECK_STATUS(run1(b, &p, &t, empties, 2, NULL, NULL, &res));
    CHECK(t.starts == 0 && t.calls == 0 && res[1].n_hyps == 1, "all-empty batch");
}

/* 6. Prefix-constrained decoding. */
static void test_prefix(mt_beam *b) {
    static chain c;
    chain_random(&c, 7, 2, 31, 1.5f, -0.5f, 0.0f);
    int32_t src_len[2] = {4, 3};
    int32_t pre0[3] = {4, 4, 3}, pre1[6] = {2, 5, 6, 2, 5, 6};
    const int32_t *prefix[2] = {pre0, NULL};
    int32_t pn[2] = {3, 0};
    mt_beam_params p = mt_beam_default_params();
    p.beam_size = 4;
    p.n_best = true;
    p.word_scores = true;
    p.max_length_factor = 2.0f; /* lim 8 */
    const mt_beam_result *res;
    toy t;
    toy_init(&t, &c, src_len, p.beam_size);
    CHECK_STATUS(run1(b, &p, &t, src_len, 2, prefix, pn, &res));
    CHECK(t.errors == 0, "scorer contract violations: %d", t.errors);
    CHECK(res[0].n_hyps == 4, "prefix n-best has %d entries", (int)res[0].n_hyps);
    for (int i = 0; i < res[0].n_hyps; i++) {
        const mt_beam_hyp *h = &res[0].hyps[i];
        CHECK(h->prefix_len == 3 && h->n_tokens >= 3 && !memcmp(h->tokens, pre0, sizeof pre0),
              "hyp %d does not start with the prefix", i);
        float path = 0;
        for (int k = 0; k < 3; k++) {
            float l = chain_lp(&c, 0, pre0, k, pre0[k]);
            CHECK_CLOSE(h->word_scores[k], l, 1e-6, 0, "forced token %d scored", k);
            path += l;
        }
        CHECK(h->path_score < path + 1e-6f, "path includes the forced tokens");
    }
    cfg g = cfg_from(&p, 8);
    g.prefix = pre0;
    g.pn = 3;
    int nr = ref_beam(&c, 0, &g, ref_buf);
    same_list(&res[0], ref_buf, nr, "prefix n-best vs Marian loop with forcing");
    g.prefix = NULL;
    g.pn = 0;
    nr = ref_beam(&c, 1, &g, ref_buf);
    same_list(&res[1], ref_buf, nr, "unforced sentence beside a forced one");
    /* a prefix longer than the limit is cut there; UNK can be forced */
    pre1[1] = 1;
    prefix[1] = pre1;
    pn[1] = 6;
    pn[0] = 0;
    p.beam_size = 3;
    p.max_length_factor = 1.0f; /* W 4: lim 4 */
    toy_init(&t, &c, src_len, p.beam_size);
    CHECK_STATUS(run1(b, &p, &t, src_len, 2, prefix, pn, &res));
    const mt_beam_hyp *h = &res[1].hyps[0];
    CHECK(res[1].n_hyps == 1 && h->n_tokens == 4 && !h->eos && h->prefix_len == 4 &&
              !memcmp(h->tokens, pre1, 4 * sizeof(int32_t)),
          "prefix beyond the limit: %d hyps, %d tokens", (int)res[1].n_hyps, (int)h->n_tokens);
    /* EOS in a prefix is refused */
    pre1[2] = 0;
    toy_init(&t, &c, src_len, p.beam_size);
    CHECK(run1(b, &p, &t, src_len, 2, prefix, pn, &res) == MT_ERR_INVALID, "EOS in a prefix");
    CHECK(t.starts == 0, "scorer started despite invalid input");
}

/* 7. UNK suppression, suppression list; ensemble = weighted single scorer. */
static void test_unk_ensemble(mt_beam *b) {
    static chain c, c2, cw;
    chain_random(&c, 6, 1, 41, 1.0f, -1.0f, 4.0f); /* UNK is the favourite */
    int32_t src_len[1] = {3};
    mt_beam_params p = mt_beam_default_params();
    p.beam_size = 4;
    p.n_best = true;
    const mt_beam_result *res;
    toy t;
    int32_t supp[1] = {2};
    for (int mode = 0; mode < 3; mode++) {
        p.allow_unk = mode == 1;
        p.suppress = mode == 2 ? supp : NULL;
        p.n_suppress = mode == 2 ? 1 : 0;
        toy_init(&t, &c, src_len, p.beam_size);
        CHECK_STATUS(run1(b, &p, &t, src_len, 1, NULL, NULL, &res));
        int unk = 0, two = 0;
        for (int i = 0; i < res[0].n_hyps; i++)
            for (int32_t k = 0; k < res[0].hyps[i].n_tokens; k++) {
                unk += res[0].hyps[i].tokens[k] == 1;
                two += res[0].hyps[i].tokens[k] == 2;
            }
        if (mode == 1)
            CHECK(unk > 0, "allow_unk: UNK never produced");
        else
            CHECK(unk == 0, "UNK produced although suppressed (mode %d)", mode);
        if (mode == 2) CHECK(two == 0, "suppressed id 2 produced");
        cfg g = cfg_from(&p, 9);
        int nr = ref_beam(&c, 0, &g, ref_buf);
        same_list(&res[0], ref_buf, nr, "suppression vs Marian loop");
    }
    /* ensemble */
    chain_random(&c, 7, 2, 51, 1.5f, -0.5f, 0.0f);
    chain_random(&c2, 7, 2, 52, 1.5f, -0.5f, 0.0f);
    const float wts[2] = {0.3f, 0.7f};
    cw = c;
    for (int s = 0; s < 2; s++)
        for (int x = 0; x < 8 * 8; x++)
            for (int k = 0; k < 7; k++)
                cw.lp[s][x][k] = wts[0] * c.lp[s][x][k] + wts[1] * c2.lp[s][x][k];
    int32_t src2[2] = {3, 4};
    p = mt_beam_default_params();
    p.beam_size = 4;
    p.n_best = true;
    p.normalize = 1.0f;
    toy ta, tb, tw;
    toy_init(&ta, &c, src2, 4);
    toy_init(&tb, &c2, src2, 4);
    toy_init(&tw, &cw, src2, 4);
    mt_scorer ens[2] = {{&toy_ops, &ta}, {&toy_ops, &tb}};
    mt_beam_input in = {2, src2, NULL, NULL, NULL, 0, NULL, NULL};
    p.weights = wts;
    CHECK_STATUS(mt_beam_search(b, &p, ens, 2, &in, &res));
    CHECK(ta.errors == 0 && tb.errors == 0, "ensemble contract violations");
    /* copy the ensemble results before the next search overwrites them */
    static mt_beam_hyp eh[2][4];
    static int32_t etok[2][4][MAXL];
    static float ems[2][4][2];
    int en[2];
    for (int s = 0; s < 2; s++) {
        en[s] = res[s].n_hyps;
        for (int i = 0; i < en[s]; i++) {
            eh[s][i] = res[s].hyps[i];
            memcpy(etok[s][i], res[s].hyps[i].tokens, sizeof(int32_t) * (size_t)eh[s][i].n_tokens);
            memcpy(ems[s][i], res[s].hyps[i].model_scores, sizeof ems[s][i]);
        }
    }
    p.weights = NULL;
    mt_scorer single = {&toy_ops, &tw};
    CHECK_STATUS(mt_beam_search(b, &p, &single, 1, &in, &res));
    for (int s = 0; s < 2; s++) {
        CHECK(en[s] == res[s].n_hyps, "ensemble n-best size %d vs %d", en[s], (int)res[s].n_hyps);
        for (int i = 0; i < en[s] && i < res[s].n_hyps; i++) {
            const mt_beam_hyp *h = &res[s].hyps[i];
            CHECK(eh[s][i].n_tokens == h->n_tokens && eh[s][i].eos == h->eos &&
                      !memcmp(etok[s][i], h->tokens, sizeof(int32_t) * (size_t)h->n_tokens),
                  "ensemble vs weighted single scorer: sentence %d hyp %d differs", s, i);
            CHECK_CLOSE(eh[s][i].path_score, h->path_score, 1e-5, 1e-5, "ensemble path");
            CHECK_CLOSE(eh[s][i].norm_score, h->norm_score, 1e-5, 1e-5, "ensemble norm");
            /* F0, F1: unweighted sums of each model along the path */
            int32_t toks[MAXL];
            memcpy(toks, etok[s][i], sizeof(int32_t) * (size_t)eh[s][i].n_tokens);
            if (eh[s][i].eos) toks[eh[s][i].n_tokens] = 0;
            float f0 = 0, f1 = 0;
            for (int32_t k = 0; k < eh[s][i].length; k++) {
                f0 += chain_lp(&c, s, toks, k, toks[k]);
                f1 += chain_lp(&c2, s, toks, k, toks[k]);
            }
            CHECK_CLOSE(ems[s][i][0], f0, 1e-5, 1e-6, "F0");
            CHECK_CLOSE(ems[s][i][1], f1, 1e-5, 1e-6, "F1");
            CHECK_CLOSE(wts[0] * ems[s][i][0] + wts[1] * ems[s][i][1], eh[s][i].path_score, 1e-4,
                        1e-5, "weighted F0/F1 = path");
        }
    }
    /* an ensemble with beam 1 still needs log-probs */
    p.beam_size = 1;
    p.n_best = false;
    p.weights = wts;
    toy_init(&ta, &c, src2, 1);
    toy_init(&tb, &c2, src2, 1);
    CHECK_STATUS(mt_beam_search(b, &p, ens, 2, &in, &res));
    CHECK(ta.argmax_calls == 0 && tb.argmax_calls == 0, "argmax_only in an ensemble");
    /* vocabulary sizes must agree */
    static chain small;
    chain_random(&small, 5, 2, 1, 1.0f, 0, 0);
    toy_init(&tb, &small, src2, 1);
    CHECK(mt_beam_search(b, &p, ens, 2, &in, &res) == MT_ERR_INVALID, "vocabulary mismatch");
}

/* 8. Batch independence; the batch-dependent length limit; top-up. */
static void test_batch(mt_beam *b) {
    static chain c;
    chain_random(&c, 7, 7, 61, 1.5f, -0.5f, 0.0f);
    int32_t src_len[7] = {2, 5, 3, 1, 4, 2, 3};
    mt_beam_params p = mt_beam_default_params();
    p.beam_size = 3;
    p.n_best = true;
    p.normalize = 0.6f;
    p.max_length_factor = 0.0f;
    p.max_length = 12;
    const mt_beam_result *res;
    toy t;
    /* full batch vs one sentence at a time (same limit) */
    static mt_beam_hyp keep[7][3];
    static int32_t ktok[7][3][MAXL];
    toy_init(&t, &c, src_len, p.beam_size);
    CHECK_STATUS(run1(b, &p, &t, src_len, 7, NULL, NULL, &res));
    CHECK(t.errors == 0 && t.starts == 1 && t.finishes == 1, "batch: contract %d", t.errors);
    for (int s = 0; s < 7; s++)
        for (int i = 0; i < res[s].n_hyps; i++) {
            keep[s][i] = res[s].hyps[i];
            memcpy(ktok[s][i], res[s].hyps[i].tokens,
                   sizeof(int32_t) * (size_t)res[s].hyps[i].n_tokens);
            keep[s][i].tokens = ktok[s][i];
        }
    for (int s = 0; s < 7; s++) {
        if (src_len[s] == 1) continue;
        /* a sentence alone: present it as a batch where the others are empty */
        int32_t alone[7] = {1, 1, 1, 1, 1, 1, 1};
        alone[s] = src_len[s];
        toy_init(&t, &c, alone, p.beam_size);
        CHECK_STATUS(run1(b, &p, &t, alone, 7, NULL, NULL, &res));
        CHECK(res[s].n_hyps == 3, "alone: %d hyps", (int)res[s].n_hyps);
        for (int i = 0; i < res[s].n_hyps; i++)
            CHECK(hyp_equal_exact(&res[s].hyps[i], &keep[s][i], 1),
                  "sentence %d hyp %d differs between batch and alone", s, i);
    }
    /* top-up windows, with and without `add`: identical to the full batch */
    for (int32_t win = 1; win <= 4; win++)
        for (int with_add = 0; with_add < 2; with_add++) {
            p.max_active = win;
            toy_init(&t, &c, src_len, p.beam_size);
            mt_scorer sc = {with_add ? &toy_ops : &toy_ops_noadd, &t};
            t.same_pos = !with_add;
            mt_beam_input in = {7, src_len, NULL, NULL, NULL, 0, NULL, NULL};
            CHECK_STATUS(mt_beam_search(b, &p, &sc, 1, &in, &res));
            CHECK(t.errors == 0, "top-up %d/%d: contract violations %d", win, with_add, t.errors);
            CHECK(t.starts == t.finishes, "top-up: %d starts, %d finishes", t.starts, t.finishes);
            if (with_add)
                CHECK(t.starts == 1 && t.adds > 0 && (win == 1 || t.mixed_calls > 0),
                      "top-up window %d: %d starts, %d adds, %lld steps joining sentences", win,
                      t.starts, t.adds, (long long)t.mixed_calls);
            else
                CHECK(t.starts == (6 + win - 1) / win, "sub-batches: %d starts", t.starts);
            for (int s = 0; s < 7; s++)
                for (int i = 0; i < res[s].n_hyps; i++)
                    CHECK(hyp_equal_exact(&res[s].hyps[i], &keep[s][i], 1),
                          "top-up window %d (add %d): sentence %d hyp %d differs", win, with_add, s,
                          i);
        }
    p.max_active = 0;
    /* Marian's rule: the limit is factor x the longest source of the batch */
    static chain noeos;
    chain_random(&noeos, 6, 2, 62, 1.0f, -30.0f, 0.0f);
    int32_t two[2] = {2, 5};
    p = mt_beam_default_params();
    p.beam_size = 2;
    p.max_length_factor = 2.0f;
    toy_init(&t, &noeos, two, 2);
    CHECK_STATUS(run1(b, &p, &t, two, 2, NULL, NULL, &res));
    CHECK(res[0].hyps[0].n_tokens == 10 && !res[0].hyps[0].eos,
          "in a batch with a 5-token source: %d tokens, want 2 x 5", (int)res[0].hyps[0].n_tokens);
    int32_t one[1] = {2};
    toy_init(&t, &noeos, one, 2);
    CHECK_STATUS(run1(b, &p, &t, one, 1, NULL, NULL, &res));
    CHECK(res[0].hyps[0].n_tokens == 4, "alone: %d tokens, want 2 x 2",
          (int)res[0].hyps[0].n_tokens);
    p.length_per_sentence = true;
    toy_init(&t, &noeos, two, 2);
    CHECK_STATUS(run1(b, &p, &t, two, 2, NULL, NULL, &res));
    CHECK(res[0].hyps[0].n_tokens == 4 && res[1].hyps[0].n_tokens == 10,
          "length_per_sentence: %d and %d tokens", (int)res[0].hyps[0].n_tokens,
          (int)res[1].hyps[0].n_tokens);
}

/* 9. Cancellation; Devlin's early stop. */
static int abort_polls;
static bool abort_third(void *user) {
    (void)user;
    return ++abort_polls >= 3;
}

static void test_cancel_early_stop(mt_beam *b) {
    static chain c;
    chain_random(&c, 7, 2, 71, 1.5f, 0.0f, 0.0f);
    int32_t src_len[2] = {4, 5};
    mt_beam_params p = mt_beam_default_params();
    p.beam_size = 4;
    p.should_abort = abort_third;
    const mt_beam_result *res = (const mt_beam_result *)&p;
    toy t;
    abort_polls = 0;
    toy_init(&t, &c, src_len, p.beam_size);
    CHECK(run1(b, &p, &t, src_len, 2, NULL, NULL, &res) == MT_ABORTED, "cancel: not aborted");
    CHECK(res == NULL && t.calls == 2 && t.starts == 1 && t.finishes == 1,
          "cancel: %lld calls, %d starts, %d finishes", (long long)t.calls, t.starts, t.finishes);
    /* a failing scorer: its error comes back, the scorers are finished */
    p.should_abort = NULL;
    toy_init(&t, &c, src_len, p.beam_size);
    t.fail_at_call = 3;
    CHECK(run1(b, &p, &t, src_len, 2, NULL, NULL, &res) == MT_ERR_DEVICE, "scorer failure");
    CHECK(t.finishes == 1, "scorer not finished after its failure");

    /* early stop: same best (normalize 0), fewer rows scored */
    int64_t rows_full = 0, rows_es = 0;
    int n_pruned = 0;
    p.max_length_factor = 3.0f;
    p.beam_size = 6;
    for (uint64_t seed = 0; seed < 20; seed++) {
        chain_random(&c, 7, 2, 700 + seed, 2.0f, 0.5f, 0.0f);
        rhyp best[2];
        p.early_stop = false;
        toy_init(&t, &c, src_len, p.beam_size);
        CHECK_STATUS(run1(b, &p, &t, src_len, 2, NULL, NULL, &res));
        int64_t rf = mt_beam_get_stats(b).rows;
        CHECK(rf == t.rows, "stats rows %lld vs scorer %lld", (long long)rf, (long long)t.rows);
        for (int s = 0; s < 2; s++) {
            const mt_beam_hyp *h = &res[s].hyps[0];
            best[s].len = h->length;
            best[s].eos = h->eos;
            best[s].path = h->path_score;
            best[s].norm = h->norm_score;
            memcpy(best[s].tok, h->tokens, sizeof(int32_t) * (size_t)h->n_tokens);
            if (h->eos) best[s].tok[h->n_tokens] = 0;
        }
        for (int mi = 0; mi < 2; mi++) {
            p.early_stop = true;
            p.early_stop_margin = mi == 0 ? 0.0f : 2.0f;
            toy_init(&t, &c, src_len, p.beam_size);
            CHECK_STATUS(run1(b, &p, &t, src_len, 2, NULL, NULL, &res));
            for (int s = 0; s < 2; s++)
                same_hyp(&res[s].hyps[0], &best[s], "early stop keeps the best", s);
            int64_t re = mt_beam_get_stats(b).rows;
            CHECK(re <= rf, "early stop scored more rows (%lld > %lld)", (long long)re,
                  (long long)rf);
            if (mi == 1) {
                rows_full += rf;
                rows_es += re;
                n_pruned += re < rf;
            }
        }
    }
    CHECK(n_pruned > 0 && rows_es < rows_full, "early stop never pruned (%lld vs %lld rows)",
          (long long)rows_es, (long long)rows_full);
}

/* 10. No allocation once a beam object is sized; repeated searches equal. */
static void test_no_alloc(mt_beam *b) {
    static chain c, c2;
    chain_random(&c, 8, 3, 81, 1.5f, -0.5f, 0.0f);
    chain_random(&c2, 8, 3, 82, 1.5f, -0.5f, 0.0f);
    int32_t src_len[3] = {3, 6, 4};
    int32_t pre[2] = {3, 5};
    const int32_t *prefix[3] = {NULL, pre, NULL};
    int32_t pn[3] = {0, 2, 0};
    mt_beam_params p = mt_beam_default_params();
    p.beam_size = 5;
    p.n_best = true;
    p.word_scores = true;
    p.alignment = true;
    p.normalize = 1.0f;
    const float wts[2] = {1.0f, 0.5f};
    p.weights = wts;
    toy ta, tb;
    toy_init(&ta, &c, src_len, 5);
    toy_init(&tb, &c2, src_len, 5);
    mt_scorer sc[2] = {{&toy_ops, &ta}, {&toy_ops, &tb}};
    mt_beam_input in = {3, src_len, prefix, pn, NULL, 0, NULL, NULL};
    const mt_beam_result *res;
    CHECK_STATUS(mt_beam_search(b, &p, sc, 2, &in, &res));
    static mt_beam_hyp first[3][5];
    static int32_t ftok[3][5][MAXL];
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < res[s].n_hyps; i++) {
            first[s][i] = res[s].hyps[i];
            memcpy(ftok[s][i], res[s].hyps[i].tokens,
                   sizeof(int32_t) * (size_t)first[s][i].n_tokens);
            first[s][i].tokens = ftok[s][i];
        }
    float ms0 = res[1].hyps[0].model_scores[1];
    toy_init(&ta, &c, src_len, 5);
    toy_init(&tb, &c2, src_len, 5);
    uint64_t before = mt_alloc_get_stats().n_allocs;
    CHECK_STATUS(mt_beam_search(b, &p, sc, 2, &in, &res));
    uint64_t after = mt_alloc_get_stats().n_allocs;
    CHECK(after == before, "second search allocated %llu times",
          (unsigned long long)(after - before));
    CHECK(ta.errors == 0 && tb.errors == 0, "allocation inside a search or contract violation");
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < res[s].n_hyps; i++) {
            bool eq = res[s].hyps[i].n_tokens == first[s][i].n_tokens &&
                      !memcmp(res[s].hyps[i].tokens, ftok[s][i],
                              sizeof(int32_t) * (size_t)first[s][i].n_tokens) &&
                      res[s].hyps[i].path_score == first[s][i].path_score;
            CHECK(eq, "repeated search differs at sentence %d hyp %d", s, i);
        }
    CHECK(res[1].hyps[0].model_scores[1] == ms0, "F1 differs between runs");
}

/* Alignment rows: scorer 0's attention of the step that produced each token. */
static void test_alignment(mt_beam *b) {
    static chain c;
    chain_random(&c, 6, 3, 91, 1.5f, -0.3f, 0.0f);
    int32_t src_len[3] = {3, 1, 6};
    mt_beam_params p = mt_beam_default_params();
    p.beam_size = 3;
    p.n_best = true;
    p.alignment = true;
    const mt_beam_result *res;
    toy t;
    toy_init(&t, &c, src_len, 3);
    CHECK_STATUS(run1(b, &p, &t, src_len, 3, NULL, NULL, &res));
    for (int s = 0; s < 3; s += 2)
        for (int i = 0; i < res[s].n_hyps; i++) {
            const mt_beam_hyp *h = &res[s].hyps[i];
            CHECK(h->src_len == src_len[s], "alignment width");
            for (int32_t k = 0; k < h->length; k++) {
                float want[16];
                chain_align(s, k, k > 0 ? h->tokens[k - 1] : -1, src_len[s], want);
                bool ok = true;
                for (int j = 0; j < src_len[s]; j++)
                    ok &= h->align[(size_t)k * src_len[s] + j] == want[j];
                CHECK(ok, "alignment row %d of sentence %d hyp %d", (int)k, s, i);
            }
        }
}

/* Shortlist = full vocabulary with the other ids suppressed. */
static void test_shortlist(mt_beam *b) {
    static chain c;
    chain_random(&c, 7, 2, 95, 1.5f, -0.5f, 0.0f);
    int32_t src_len[2] = {3, 4};
    int32_t sl[4] = {0, 2, 3, 5}, others[2] = {4, 6};
    int32_t pre[1] = {5};
    const int32_t *prefix[2] = {pre, NULL};
    int32_t pn[2] = {1, 0};
    mt_beam_params p = mt_beam_default_params();
    p.beam_size = 3;
    p.n_best = true;
    p.alignment = true;
    const mt_beam_result *res;
    toy t;
    toy_init(&t, &c, src_len, 3);
    mt_scorer sc = {&toy_ops, &t};
    mt_beam_input in = {2, src_len, prefix, pn, sl, 4, NULL, NULL};
    CHECK_STATUS(mt_beam_search(b, &p, &sc, 1, &in, &res));
    static mt_beam_hyp keep[2][3];
    static int32_t ktok[2][3][MAXL];
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < res[s].n_hyps; i++) {
            keep[s][i] = res[s].hyps[i];
            memcpy(ktok[s][i], res[s].hyps[i].tokens,
                   sizeof(int32_t) * (size_t)keep[s][i].n_tokens);
            keep[s][i].tokens = ktok[s][i];
            for (int32_t k = 0; k < keep[s][i].n_tokens; k++) {
                int32_t x = ktok[s][i][k];
                CHECK(x == 0 || x == 2 || x == 3 || x == 5, "token %d outside the shortlist",
                      (int)x);
            }
        }
    p.suppress = others; /* UNK (1) is suppressed anyway */
    p.n_suppress = 2;
    toy_init(&t, &c, src_len, 3);
    in.shortlist = NULL;
    in.n_shortlist = 0;
    CHECK_STATUS(mt_beam_search(b, &p, &sc, 1, &in, &res));
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < res[s].n_hyps; i++)
            CHECK(hyp_equal_exact(&res[s].hyps[i], &keep[s][i], 1),
                  "shortlist vs suppression: sentence %d hyp %d", s, i);
    /* a forced token outside the shortlist is refused */
    pre[0] = 4;
    in.shortlist = sl;
    in.n_shortlist = 4;
    CHECK(mt_beam_search(b, &p, &sc, 1, &in, &res) == MT_ERR_INVALID, "prefix outside shortlist");
}

/* Random configurations against the plain Marian loop. */
static void test_random_vs_reference(mt_beam *b) {
    static chain c;
    mt_rng r;
    mt_rng_seed(&r, 2024);
    toy t;
    const mt_beam_result *res;
    int64_t n_topk = 0;
    for (int it = 0; it < 150; it++) {
        int32_t v = 4 + (int32_t)(mt_rng_next(&r) % 6);
        int32_t n = 1 + (int32_t)(mt_rng_next(&r) % 5);
        chain_random(&c, v, n, 5000 + it, 0.5f + 2.0f * mt_rng_uniform(&r),
                     -1.0f + 2.0f * mt_rng_uniform(&r), 0.0f);
        int32_t src_len[MAXS], pn[MAXS], pres[MAXS][3];
        const int32_t *prefix[MAXS];
        int32_t width = 1;
        for (int s = 0; s < n; s++) {
            src_len[s] = 1 + (int32_t)(mt_rng_next(&r) % 5);
            if (src_len[s] > width) width = src_len[s];
            pn[s] = mt_rng_next(&r) % 4 == 0 ? 1 + (int32_t)(mt_rng_next(&r) % 3) : 0;
            for (int k = 0; k < 3; k++)
                pres[s][k] = 2 + (int32_t)(mt_rng_next(&r) % (uint64_t)(v - 2));
            prefix[s] = pres[s];
        }
        mt_beam_params p = mt_beam_default_params();
        p.beam_size = 1 + (int32_t)(mt_rng_next(&r) % 6);
        p.n_best = true;
        p.greedy_scores = true;
        const float alphas[3] = {0.0f, 0.6f, 1.0f}, wps[3] = {0.0f, 0.3f, -0.3f};
        const float factors[3] = {1.0f, 1.5f, 2.0f};
        p.normalize = alphas[mt_rng_next(&r) % 3];
        p.word_penalty = wps[mt_rng_next(&r) % 3];
        p.max_length_factor = factors[mt_rng_next(&r) % 3];
        p.allow_unk = mt_rng_next(&r) % 2;
        p.max_active = (int32_t)(mt_rng_next(&r) % (uint64_t)(n + 1));
        int32_t lim = (int32_t)ceilf(p.max_length_factor * (float)width);
        toy_init(&t, &c, src_len, p.beam_size);
        const mt_scorer_ops *ops3[3] = {&toy_ops, &toy_ops_noadd, &toy_ops_topk};
        mt_scorer sc = {ops3[mt_rng_next(&r) % 3], &t};
        t.same_pos = sc.ops == &toy_ops_noadd;
        mt_beam_input in = {n, src_len, prefix, pn, NULL, 0, NULL, NULL};
        CHECK_STATUS(mt_beam_search(b, &p, &sc, 1, &in, &res));
        CHECK(t.errors == 0, "random %d: contract violations %d", it, t.errors);
        n_topk += t.topk_calls;
        for (int s = 0; s < n; s++) {
            char what[64];
            snprintf(what, sizeof what, "random config %d sentence %d", it, s);
            if (src_len[s] == 1) {
                CHECK(res[s].n_hyps == 1 && res[s].hyps[0].n_tokens == 0, "%s: empty", what);
                continue;
            }
            cfg g = cfg_from(&p, lim);
            g.prefix = prefix[s];
            g.pn = pn[s];
            int nr = ref_beam(&c, s, &g, ref_buf);
            same_list(&res[s], ref_buf, nr, what);
            for (int i = 0; i < res[s].n_hyps; i++) {
                int32_t want = pn[s] < res[s].hyps[i].n_tokens ? pn[s] : res[s].hyps[i].n_tokens;
                CHECK(res[s].hyps[i].prefix_len == want, "%s: prefix_len", what);
            }
        }
    }
    CHECK(n_topk > 0, "the rows' top-k lists (step_topk) were never used");
}

/* Ties: log-probs that are multiples of 1/2 (sums exact in float) tie
** often; candidates go to the lower (rank, token), finished hypotheses with
** equal scores stay in finishing order. */
static void test_ties(mt_beam *b) {
    static chain c;
    int32_t src_len[3] = {3, 2, 4};
    const mt_beam_result *res;
    toy t;
    int n_tied = 0;
    for (uint64_t seed = 0; seed < 30; seed++) {
        chain_random(&c, 6, 3, 900 + seed, 1.0f, 0.0f, 0.0f);
        for (int s = 0; s < 3; s++)
            for (int x = 0; x < 7 * 7; x++)
                for (int k = 0; k < 6; k++)
                    c.lp[s][x][k] = -0.5f * (float)(int)(-c.lp[s][x][k] * 1.2f);
        mt_beam_params p = mt_beam_default_params();
        p.beam_size = 2 + (int32_t)(seed % 4);
        p.n_best = true;
        p.greedy_scores = true;
        p.max_length_factor = 1.5f; /* W 4: lim 6 */
        toy_init(&t, &c, src_len, p.beam_size);
        CHECK_STATUS(run1(b, &p, &t, src_len, 3, NULL, NULL, &res));
        for (int s = 0; s < 3; s++) {
            cfg g = cfg_from(&p, 6);
            int nr = ref_beam(&c, s, &g, ref_buf);
            same_list(&res[s], ref_buf, nr, "ties vs Marian loop");
            for (int i = 1; i < res[s].n_hyps; i++)
                n_tied += res[s].hyps[i].norm_score == res[s].hyps[i - 1].norm_score;
        }
    }
    CHECK(n_tied > 10, "only %d tied neighbours: the tie test tests nothing", n_tied);
    /* beam 1 on exact ties: the first maximum (lowest id) */
    static const float pr[6][MAXV] = {
        {0.1f, 0.0001f, 0.3f, 0.3f, 0.3f}, {0.1f, 0.0001f, 0.3f, 0.3f, 0.3f},
        {0.1f, 0.0001f, 0.3f, 0.3f, 0.3f}, {0.6f, 0.0001f, 0.1f, 0.1f, 0.1f},
        {0.6f, 0.0001f, 0.1f, 0.1f, 0.1f}, {0.6f, 0.0001f, 0.1f, 0.1f, 0.1f},
    };
    chain_from_probs(&c, 5, pr);
    mt_beam_params p = mt_beam_default_params();
    p.beam_size = 1;
    int32_t one[1] = {2};
    for (int mode = 0; mode < 2; mode++) {
        p.greedy_scores = mode == 1;
        toy_init(&t, &c, one, 1);
        CHECK_STATUS(run1(b, &p, &t, one, 1, NULL, NULL, &res));
        CHECK(res[0].hyps[0].n_tokens == 1 && res[0].hyps[0].tokens[0] == 2,
              "beam 1 tie (mode %d): not the lowest id", mode);
    }
    /* beam 3: a, b, c tie at step 0 and all end with EOS at step 1 with equal
    ** scores: finishing order = rank order = token order */
    p.beam_size = 3;
    p.n_best = true;
    toy_init(&t, &c, one, 3);
    CHECK_STATUS(run1(b, &p, &t, one, 1, NULL, NULL, &res));
    CHECK(res[0].n_hyps == 3, "tie n-best size %d", (int)res[0].n_hyps);
    for (int i = 0; i < res[0].n_hyps && i < 3; i++)
        CHECK(res[0].hyps[i].n_tokens == 1 && res[0].hyps[i].tokens[0] == 2 + i &&
                  res[0].hyps[i].eos,
              "tie n-best entry %d", i);
}

/* Out of memory at the first search of a fresh beam object; bad arguments. */
static void test_errors(void) {
    static chain c;
    chain_random(&c, 6, 2, 3, 1.0f, 0, 0);
    int32_t src_len[2] = {3, 2};
    mt_beam_params p = mt_beam_default_params();
    p.beam_size = 3;
    p.alignment = true;
    toy t;
    const mt_beam_result *res;
    for (int fail = 0; fail < 4; fail++) {
        mt_beam *b = NULL;
        toy_init(&t, &c, src_len, 3);
        mt_alloc_fail_at(fail, true);
        mt_status rc = mt_beam_init(&b);
        if (rc == MT_OK) {
            toy_init(&t, &c, src_len, 3);
            rc = run1(b, &p, &t, src_len, 2, NULL, NULL, &res);
        }
        mt_alloc_fail_at(-1, false);
        CHECK(rc == MT_ERR_NOMEM || rc == MT_OK, "alloc failure %d: %s", fail, mt_status_str(rc));
        if (rc == MT_ERR_NOMEM) CHECK(t.starts == 0 || t.starts == t.finishes, "leaked start");
        if (b) {
            toy_init(&t, &c, src_len, 3);
            CHECK_STATUS(run1(b, &p, &t, src_len, 2, NULL, NULL, &res));
        }
        mt_beam_free(b);
    }
    mt_beam *b;
    CHECK_STATUS(mt_beam_init(&b));
    toy_init(&t, &c, src_len, 3);
    p.beam_size = 0;
    CHECK(run1(b, &p, &t, src_len, 2, NULL, NULL, &res) == MT_ERR_INVALID, "beam 0");
    p.beam_size = 2;
    p.max_length_factor = 0;
    CHECK(run1(b, &p, &t, src_len, 2, NULL, NULL, &res) == MT_ERR_INVALID, "no length limit");
    p.max_length_factor = 3;
    p.eos_id = 6;
    CHECK(run1(b, &p, &t, src_len, 2, NULL, NULL, &res) == MT_ERR_INVALID, "EOS out of range");
    p.eos_id = 0;
    int32_t bad_len[2] = {3, 0};
    CHECK(run1(b, &p, &t, bad_len, 2, NULL, NULL, &res) == MT_ERR_INVALID, "source length 0");
    CHECK(t.starts == 0, "scorer started on invalid input");
    mt_beam_free(b);
    mt_beam_free(NULL);
}

/* ------------------------------------------------- lexical constraints */

static mt_status run_con(mt_beam *b, const mt_beam_params *p, toy *t, const int32_t *src_len,
                         int32_t n, const int32_t *const *prefix, const int32_t *pn,
                         const mt_beam_constraint *const *cons, const int32_t *ncons,
                         const mt_beam_result **res) {
    mt_scorer sc = {run1_ops, t};
    mt_beam_input in = {n, src_len, prefix, pn, NULL, 0, cons, ncons};
    return mt_beam_search(b, p, &sc, 1, &in, res);
}

static bool has_seq(const int32_t *toks, int32_t n, const int32_t *seq, int32_t m) {
    for (int32_t a = 0; a + m <= n; a++)
        if (!memcmp(toks + a, seq, sizeof(int32_t) * (size_t)m)) return true;
    return false;
}

/* The best enumerated output that ends in EOS and contains every sequence. */
static const rhyp *oracle_con(const rhyp *e, int n, const mt_beam_constraint *cs, int nc) {
    for (int i = 0; i < n; i++) {
        if (!e[i].eos) continue;
        bool ok = true;
        for (int j = 0; j < nc && ok; j++)
            ok = has_seq(e[i].tok, e[i].len - 1, cs[j].tokens, cs[j].n_tokens);
        if (ok) return &e[i];
    }
    return NULL;
}

/* 15. Lexically constrained decoding (dynamic beam allocation). */
static void test_constraints(mt_beam *b) {
    static chain c;
    /* EOS, UNK, a, b, c, d, e.  Unconstrained best: "a EOS" (.6 x .9);
    ** d is almost never chosen; after d, e (.6) beats EOS (.3).  With the
    ** constraint d the best output holding it is "a d e EOS"
    ** (.6 x .02 x .6 x .9 = .00648; "a d EOS" .0036, "b d e EOS" .00324,
    ** "d e EOS" .00108). */
    static const float pr[8][MAXV] = {
        {0.01f, 0.001f, 0.60f, 0.30f, 0.05f, 0.002f, 0.037f}, /* start */
        {0.97f, 0.001f, 0.01f, 0.01f, 0.01f, 0.001f, 0.008f}, /* after EOS */
        {0.40f, 0.001f, 0.20f, 0.20f, 0.10f, 0.001f, 0.098f}, /* after UNK */
        {0.90f, 0.001f, 0.02f, 0.02f, 0.02f, 0.02f, 0.019f},  /* after a */
        {0.90f, 0.001f, 0.02f, 0.02f, 0.02f, 0.02f, 0.019f},  /* after b */
        {0.50f, 0.001f, 0.10f, 0.10f, 0.10f, 0.10f, 0.099f},  /* after c */
        {0.30f, 0.001f, 0.03f, 0.03f, 0.03f, 0.009f, 0.60f},  /* after d */
        {0.90f, 0.001f, 0.02f, 0.02f, 0.02f, 0.02f, 0.019f},  /* after e */
    };
    chain_from_probs(&c, 7, pr);
    c.n_sent = 2;
    memcpy(c.lp[1], c.lp[0], sizeof c.lp[0]);
    int32_t src_len[2] = {3, 3};
    mt_beam_params p = mt_beam_default_params();
    p.max_length = 5; /* the enumeration (5 tokens + EOS) fits in MAXENUM */
    p.beam_size = 5;
    p.n_best = true;
    toy t;
    const mt_beam_result *res;
    const int32_t tok_d[1] = {5}, tok_c[1] = {4}, tok_de[2] = {5, 6};
    const int32_t best_d[3] = {2, 5, 6};

    /* without constraints: "a" */
    toy_init(&t, &c, src_len, 5);
    CHECK_STATUS(run_con(b, &p, &t, src_len, 1, NULL, NULL, NULL, NULL, &res));
    CHECK(res[0].hyps[0].n_tokens == 1 && res[0].hyps[0].tokens[0] == 2 &&
              res[0].hyps[0].constraints_met,
          "unconstrained best is not 'a'");
    CHECK(!has_seq(res[0].hyps[0].tokens, res[0].hyps[0].n_tokens, tok_d, 1),
          "d without a constraint");

    /* one constraint the search would not produce: "a d e", as the oracle */
    cfg g = cfg_from(&p, 5);
    CHECK(enumerate(&c, 0, &g, enum_buf) < MAXENUM, "enumeration truncated");
    int ne = enumerate(&c, 0, &g, enum_buf);
    mt_beam_constraint cd[1] = {{tok_d, 1}};
    const mt_beam_constraint *cons[2] = {cd, NULL};
    int32_t ncons[2] = {1, 0};
    const rhyp *o = oracle_con(enum_buf, ne, cd, 1);
    CHECK(o && o->len == 4 && !memcmp(o->tok, best_d, sizeof best_d),
          "designed constrained optimum is not 'a d e EOS'");
    toy_init(&t, &c, src_len, 5);
    CHECK_STATUS(run_con(b, &p, &t, src_len, 1, NULL, NULL, cons, ncons, &res));
    CHECK(t.errors == 0, "scorer contract violations (allocation in a step?): %d", t.errors);
    if (o) same_hyp(&res[0].hyps[0], o, "constraint d vs oracle", 0);
    CHECK(res[0].hyps[0].constraints_met && res[0].hyps[0].eos, "constraint d not met");
    for (int i = 0; i < res[0].n_hyps; i++) /* EOS only once the constraint is met */
        CHECK(!res[0].hyps[i].eos ||
                  has_seq(res[0].hyps[i].tokens, res[0].hyps[i].n_tokens, tok_d, 1),
              "hyp %d ended without its constraint", i);

    /* two constraints, one of two tokens: c and "d e" */
    mt_beam_constraint c2[2] = {{tok_c, 1}, {tok_de, 2}};
    const mt_beam_constraint *cons2[2] = {c2, NULL};
    int32_t ncons2[2] = {2, 0};
    p.beam_size = 8;
    toy_init(&t, &c, src_len, 8);
    CHECK_STATUS(run_con(b, &p, &t, src_len, 1, NULL, NULL, cons2, ncons2, &res));
    const mt_beam_hyp *h = &res[0].hyps[0];
    CHECK(h->eos && h->constraints_met && has_seq(h->tokens, h->n_tokens, tok_c, 1) &&
              has_seq(h->tokens, h->n_tokens, tok_de, 2),
          "two constraints: not both in the output (%d tokens)", (int)h->n_tokens);
    o = oracle_con(enum_buf, ne, c2, 2);
    CHECK(o != NULL && h->norm_score <= o->norm + 1e-6f, "constrained search beats the oracle");
    if (o) same_hyp(h, o, "constraints c, d e vs oracle", 0);

    /* met inside a forced prefix: "c c c d" holds "c c d" (a token-by-token
    ** tracker restarting at the third c would miss it); the completion is
    ** then free: e EOS */
    const int32_t tok_ccd[3] = {4, 4, 5}, pre[4] = {4, 4, 4, 5};
    mt_beam_constraint c3[1] = {{tok_ccd, 3}};
    const mt_beam_constraint *cons3[2] = {c3, NULL};
    const int32_t *prefix[2] = {pre, NULL};
    int32_t pn[2] = {4, 0};
    p.beam_size = 4;
    p.max_length = 8;
    toy_init(&t, &c, src_len, 4);
    CHECK_STATUS(run_con(b, &p, &t, src_len, 1, prefix, pn, cons3, ncons, &res));
    h = &res[0].hyps[0];
    CHECK(h->eos && h->constraints_met && h->n_tokens == 5 && h->prefix_len == 4 &&
              !memcmp(h->tokens, pre, sizeof pre) && h->tokens[4] == 6,
          "constraint in the prefix: %d tokens", (int)h->n_tokens);

    /* a constraint longer than the limit: the limit ends it, not met */
    const int32_t tok_long[7] = {4, 4, 4, 4, 4, 4, 4};
    mt_beam_constraint c4[1] = {{tok_long, 7}};
    const mt_beam_constraint *cons4[2] = {c4, NULL};
    p.max_length = 6;
    toy_init(&t, &c, src_len, 4);
    CHECK_STATUS(run_con(b, &p, &t, src_len, 1, NULL, NULL, cons4, ncons, &res));
    h = &res[0].hyps[0];
    CHECK(res[0].n_hyps >= 1 && !h->eos && !h->constraints_met && h->n_tokens == 6,
          "impossible constraint: eos %d met %d tokens %d", (int)h->eos, (int)h->constraints_met,
          (int)h->n_tokens);

    /* a hypothesis that met its constraints ranks before one stopped
    ** without them, whatever the scores: constraint e, limit 2: "e EOS"
    ** (.037 x .9), then "a e" (.6 x .019, met, cut), before "a a" (.6 x
    ** .02, cut, not met) */
    const int32_t tok_e[1] = {6}, want_ae[2] = {2, 6}, want_aa[2] = {2, 2};
    mt_beam_constraint ce[1] = {{tok_e, 1}};
    const mt_beam_constraint *conse[2] = {ce, NULL};
    p.max_length = 2;
    toy_init(&t, &c, src_len, 4);
    CHECK_STATUS(run_con(b, &p, &t, src_len, 1, NULL, NULL, conse, ncons, &res));
    h = &res[0].hyps[1];
    CHECK(res[0].n_hyps >= 3 && res[0].hyps[0].eos && res[0].hyps[0].n_tokens == 1 &&
              res[0].hyps[0].tokens[0] == 6,
          "at the limit: 'e EOS' is not first");
    CHECK(res[0].n_hyps >= 3 && h->constraints_met && !h->eos && h->n_tokens == 2 &&
              !memcmp(h->tokens, want_ae, 8),
          "at the limit: 'a e' (met) is not second");
    const mt_beam_hyp *h2 = &res[0].hyps[2];
    CHECK(res[0].n_hyps >= 3 && !h2->constraints_met && h2->n_tokens == 2 &&
              !memcmp(h2->tokens, want_aa, 8) && h2->norm_score > h->norm_score,
          "at the limit: 'a a' (unmet, better score) is not third");
    for (int i = 1; i < res[0].n_hyps; i++)
        CHECK(res[0].hyps[i - 1].constraints_met >= res[0].hyps[i].constraints_met,
              "met hypotheses not ranked first (%d)", i);

    /* unconstrained sentences beside a constrained one decode exactly as
    ** alone, through the rows' top-k lists or whole rows */
    for (int ops = 0; ops < 2; ops++) {
        run1_ops = ops ? &toy_ops_topk : &toy_ops;
        p.max_length = 6;
        p.beam_size = 4;
        static mt_beam_hyp alone[4];
        static int32_t atok[4][MAXL];
        toy_init(&t, &c, src_len, 4);
        CHECK_STATUS(run_con(b, &p, &t, src_len, 2, NULL, NULL, NULL, NULL, &res));
        int na = res[1].n_hyps;
        for (int i = 0; i < na; i++) {
            alone[i] = res[1].hyps[i];
            memcpy(atok[i], alone[i].tokens, sizeof(int32_t) * (size_t)alone[i].n_tokens);
        }
        toy_init(&t, &c, src_len, 4);
        CHECK_STATUS(run_con(b, &p, &t, src_len, 2, NULL, NULL, cons, ncons, &res));
        CHECK(res[1].n_hyps == na, "ops %d: %d hyps beside a constrained sentence, %d alone", ops,
              (int)res[1].n_hyps, na);
        for (int i = 0; i < na && i < res[1].n_hyps; i++) {
            const mt_beam_hyp *x = &res[1].hyps[i];
            CHECK(x->n_tokens == alone[i].n_tokens &&
                      !memcmp(x->tokens, atok[i], sizeof(int32_t) * (size_t)x->n_tokens) &&
                      x->path_score == alone[i].path_score && x->norm_score == alone[i].norm_score,
                  "ops %d hyp %d differs beside a constrained sentence", ops, i);
        }
        CHECK(res[0].hyps[0].constraints_met, "ops %d: constraint not met in a batch", ops);
        /* zero constraints everywhere is no constraint (greedy fast path too) */
        int32_t zero[2] = {0, 0};
        p.beam_size = 1;
        p.n_best = false;
        toy_init(&t, &c, src_len, 1);
        CHECK_STATUS(run_con(b, &p, &t, src_len, 2, NULL, NULL, cons, zero, &res));
        CHECK(isnan(res[0].hyps[0].path_score) && res[0].hyps[0].tokens[0] == 2,
              "ops %d: zero constraints left the argmax path", ops);
        p.n_best = true;
    }
    run1_ops = &toy_ops;

    /* no allocation by a second constrained search of the same size */
    p.beam_size = 8;
    toy_init(&t, &c, src_len, 8);
    CHECK_STATUS(run_con(b, &p, &t, src_len, 2, NULL, NULL, cons2, ncons2, &res));
    toy_init(&t, &c, src_len, 8);
    uint64_t before = mt_alloc_get_stats().n_allocs;
    CHECK_STATUS(run_con(b, &p, &t, src_len, 2, NULL, NULL, cons2, ncons2, &res));
    CHECK(mt_alloc_get_stats().n_allocs == before && t.errors == 0,
          "a constrained search allocated");

    /* invalid constraints */
    const int32_t tok_eos[1] = {0};
    mt_beam_constraint bad[1] = {{tok_eos, 1}};
    const mt_beam_constraint *consb[2] = {bad, NULL};
    toy_init(&t, &c, src_len, 8);
    CHECK(run_con(b, &p, &t, src_len, 1, NULL, NULL, consb, ncons, &res) == MT_ERR_INVALID,
          "EOS in a constraint");
    bad[0] = (mt_beam_constraint){tok_d, 0};
    CHECK(run_con(b, &p, &t, src_len, 1, NULL, NULL, consb, ncons, &res) == MT_ERR_INVALID,
          "empty constraint");
    int32_t many[2] = {MT_BEAM_MAX_CONSTRAINTS + 1, 0};
    CHECK(run_con(b, &p, &t, src_len, 1, NULL, NULL, cons, many, &res) == MT_ERR_INVALID,
          "too many constraints");
    CHECK(t.starts == 0, "scorer started on invalid constraints");
}

int main(void) {
    mt_beam *b;
    CHECK_STATUS(mt_beam_init(&b));
    test_exhaustive(b);
    test_greedy(b);
    test_nbest(b);
    test_normalization(b);
    test_max_length(b);
    test_prefix(b);
    test_unk_ensemble(b);
    test_batch(b);
    test_cancel_early_stop(b);
    test_no_alloc(b);
    test_alignment(b);
    test_shortlist(b);
    test_random_vs_reference(b);
    test_ties(b);
    run1_ops = &toy_ops_topk; /* the same ties through the rows' top-k lists */
    test_ties(b);
    run1_ops = &toy_ops;
    test_constraints(b);
    mt_beam_free(b);
    test_errors();
    TEST_MAIN_END();
}
