/*
** beam.c: batched beam search over abstract scorers (mt_scorer), with the
** semantics of Marian's BeamSearch::search (src/translator/beam_search.cpp,
** history.h, hypothesis.h); the contract is documented in mt.h, section
** "beam search".
**
** Data layout.  The sentences being decoded occupy "slots" (all of them
** at once, or a window of max_active for top-up batching).  Every step
** scores one list of rows (live hypotheses), grouped by slot in increasing
** sentence order.  Each row points at its entry in the history of its slot:
**
**   hist[slot][t][j]   the j-th selected candidate of step t (j < beam):
**                      token, parent j at step t-1, path score, per-model
**                      cumulative scores, attention row (when requested)
**
** Finished hypotheses are (t, j) references into that history; when a
** sentence is done its n-best list is traced back into the result arrays
** and the slot is given to the next sentence of the queue.
**
** Memory.  One block (the workspace) holds every buffer; its size is
** computed from (sentences, window, beam, vocabulary, length limits,
** source lengths) when a search starts, and it is kept for the next search.
** Nothing is allocated per step.
**
** Candidate selection.  For a sentence with m rows and beam N the top N of
** the m x V expanded scores are kept in a small heap whose root is the worst
** kept candidate; candidates are visited in increasing (row, token) order,
** so a candidate whose score merely equals the root's is never better: ties
** go to the lower index.  No sort of m x V.
*/
#include <math.h>
#include <string.h>

#include "mt.h"

typedef struct cand {
    float score;
    int32_t row; /* row of the step list                      */
    int32_t col; /* column of the score row (token, or index into the shortlist) */
    float lp;    /* its log-prob (top-k lists); whole rows: unused, except
                    that constrained selection keeps the bank there */
} cand;

typedef struct fin { /* a finished hypothesis: history entry (t, j) */
    int32_t t, j;
    float norm;
    bool eos;
    bool met; /* every constraint met (true without constraints) */
} fin;

/* Constraint state of a hypothesis: met constraints (bit i: constraint
** i), the one in progress (-1: none) and its tokens produced so far. */
typedef struct cstate {
    uint32_t met;
    int32_t cur, prog;
} cstate;

typedef struct slot {
    int32_t sent;  /* sentence, -1 = free                                    */
    int32_t t;     /* step about to be taken (tokens so far)                 */
    int32_t cap;   /* beam of the sentence for the next step                 */
    int32_t lim;   /* finalize at the step where t + 1 >= lim                */
    int32_t n_fin; /* finished hypotheses                                    */
    float best_fin_path;
} slot;

struct mt_beam {
    void *ws;
    size_t ws_cap;
    mt_beam_stats stats;
};

/* Everything a search needs, carved from the workspace. */
typedef struct plan {
    /* sizes */
    int32_t n, k, m, v, cols, w, window, rows, t_max, r_per;
    bool align, word_scores, argmax_only, ensemble, can_add;
    bool topk;  /* the scorer gives each row's kk best (step_topk)    */
    bool amax;  /* argmax_only and the scorer gives argmaxes (step_argmax) */
    int32_t kk; /* beam + suppressed columns + 1                      */
    /* per sentence */
    int32_t *lim;      /* [n] step limit                                    */
    size_t *tok_off;   /* [n] offset of the sentence's tokens / word scores */
    size_t *align_off; /* [n] offset of its alignment values                */
    int32_t *queue;    /* [n] non-empty sentences in order                  */
    /* results */
    mt_beam_result *results; /* [n]                                        */
    mt_beam_hyp *hyps;       /* [n * r_per]                                */
    int32_t *tokens;         /* tok_off                                     */
    float *wscores;          /* tok_off (word_scores)                       */
    float *mscores;          /* [n * r_per * m]                            */
    float *aligns;           /* align_off (align)                          */
    /* slots and history */
    slot *slots;       /* [window]                                          */
    fin *fins;         /* [window * k]                                      */
    int32_t *h_tok;    /* [window * t_max * k]                              */
    int32_t *h_parent; /* same                                               */
    float *h_path;     /* same                                               */
    float *h_model;    /* same * m                                           */
    float *h_align;    /* same * w (align)                                   */
    /* step rows, double-buffered: [2][rows] */
    int32_t *r_tok[2], *r_sent[2], *r_reorder[2], *r_pos[2], *r_slot[2], *r_hist[2];
    float *r_path[2], *r_model[2]; /* r_model [rows * m]                 */
    float *logprobs;               /* [m * rows * cols]                   */
    float *comb;                   /* [rows * cols] (ensemble)            */
    float *align_buf;              /* [rows * w] (align)                  */
    int32_t *tk_col;               /* [rows * kk] (topk)                  */
    float *tk_lp;                  /* [rows * kk] (topk)                  */
    cand *heap;                    /* [k]                                 */
    int32_t *supp_cols;            /* [n_suppress + 1]                    */
    float *skip;                   /* [cols] 0, -inf at supp_cols (amax)  */
    int32_t *am_col;               /* [rows] each row's argmax (amax)     */
    int32_t n_supp_cols;
    int32_t *admit; /* [window]                             */
    void **states;  /* [m]                                  */
    /* constraints (con: some sentence has them) */
    bool con;
    cstate *r_con[2]; /* [2][rows] each row's constraint state  */
    cand *dc;         /* [k * (2 + MT_BEAM_MAX_CONSTRAINTS)]    */
} plan;

mt_beam_params mt_beam_default_params(void) {
    mt_beam_params p;
    memset(&p, 0, sizeof p);
    p.beam_size = 12;
    p.normalize = 0.0f;
    p.word_penalty = 0.0f;
    p.max_length_factor = 3.0f;
    p.max_length = 0;
    p.eos_id = 0;
    p.unk_id = 1;
    p.early_stop_margin = 3.0f;
    return p;
}

mt_status mt_beam_init(mt_beam **out) {
    mt_beam *b = mt_try_calloc(1, sizeof *b);
    if (b == NULL) return mt_seterr(MT_ERR_NOMEM, "beam search: out of memory");
    *out = b;
    return MT_OK;
}

void mt_beam_free(mt_beam *b) {
    if (b == NULL) return;
    mt_free(b->ws);
    mt_free(b);
}

mt_beam_stats mt_beam_get_stats(const mt_beam *b) { return b->stats; }

/* ------------------------------------------------------------ workspace */

typedef struct carver {
    char *base; /* NULL: only measure */
    size_t off;
    bool overflow;
} carver;

static void *carve(carver *c, size_t count, size_t size) {
    size_t off = (c->off + 63) & ~(size_t)63;
    if (off < c->off || (size && count > (SIZE_MAX - off) / size)) {
        c->overflow = true;
        return NULL;
    }
    c->off = off + count * size;
    return c->base ? c->base + off : NULL;
}

static size_t mul_sat(size_t a, size_t b) {
    if (a && b > SIZE_MAX / a) return SIZE_MAX;
    return a * b;
}

/* Assigns every pointer of pl from c (the sizes in pl are set). */
static void layout(plan *pl, carver *c, int32_t n_supp, size_t tok_total, size_t align_total) {
    size_t n = (size_t)pl->n, k = (size_t)pl->k, m = (size_t)pl->m, w = (size_t)pl->w;
    size_t hist = mul_sat(mul_sat((size_t)pl->window, (size_t)pl->t_max), k);
    size_t rows = (size_t)pl->rows, cols = (size_t)pl->cols;
    pl->lim = carve(c, n, sizeof(int32_t));
    pl->tok_off = carve(c, n, sizeof(size_t));
    pl->align_off = carve(c, n, sizeof(size_t));
    pl->queue = carve(c, n, sizeof(int32_t));
    pl->results = carve(c, n, sizeof *pl->results);
    pl->hyps = carve(c, mul_sat(n, (size_t)pl->r_per), sizeof *pl->hyps);
    pl->mscores = carve(c, mul_sat(mul_sat(n, (size_t)pl->r_per), m), sizeof(float));
    pl->tokens = carve(c, tok_total, sizeof(int32_t));
    pl->wscores = pl->word_scores ? carve(c, tok_total, sizeof(float)) : NULL;
    pl->aligns = pl->align ? carve(c, align_total, sizeof(float)) : NULL;
    pl->slots = carve(c, (size_t)pl->window, sizeof *pl->slots);
    pl->fins = carve(c, mul_sat((size_t)pl->window, k), sizeof *pl->fins);
    pl->h_tok = carve(c, hist, sizeof(int32_t));
    pl->h_parent = carve(c, hist, sizeof(int32_t));
    pl->h_path = carve(c, hist, sizeof(float));
    pl->h_model = carve(c, mul_sat(hist, m), sizeof(float));
    pl->h_align = pl->align ? carve(c, mul_sat(hist, w), sizeof(float)) : NULL;
    for (int i = 0; i < 2; i++) {
        pl->r_tok[i] = carve(c, rows, sizeof(int32_t));
        pl->r_sent[i] = carve(c, rows, sizeof(int32_t));
        pl->r_reorder[i] = carve(c, rows, sizeof(int32_t));
        pl->r_pos[i] = carve(c, rows, sizeof(int32_t));
        pl->r_slot[i] = carve(c, rows, sizeof(int32_t));
        pl->r_hist[i] = carve(c, rows, sizeof(int32_t));
        pl->r_path[i] = carve(c, rows, sizeof(float));
        pl->r_model[i] = carve(c, mul_sat(rows, m), sizeof(float));
    }
    pl->logprobs = carve(c, mul_sat(mul_sat(m, rows), cols), sizeof(float));
    pl->comb = pl->ensemble ? carve(c, mul_sat(rows, cols), sizeof(float)) : NULL;
    pl->align_buf = pl->align ? carve(c, mul_sat(rows, w), sizeof(float)) : NULL;
    pl->tk_col = pl->topk ? carve(c, mul_sat(rows, (size_t)pl->kk), sizeof(int32_t)) : NULL;
    pl->tk_lp = pl->topk ? carve(c, mul_sat(rows, (size_t)pl->kk), sizeof(float)) : NULL;
    pl->heap = carve(c, k, sizeof *pl->heap);
    pl->supp_cols = carve(c, (size_t)n_supp + 1, sizeof(int32_t));
    pl->skip = pl->amax ? carve(c, cols, sizeof(float)) : NULL;
    pl->am_col = pl->amax ? carve(c, rows, sizeof(int32_t)) : NULL;
    pl->admit = carve(c, (size_t)pl->window, sizeof(int32_t));
    pl->states = carve(c, m, sizeof(void *));
    for (int i = 0; i < 2; i++)
        pl->r_con[i] = pl->con ? carve(c, rows, sizeof(cstate)) : NULL;
    pl->dc = pl->con ? carve(c, mul_sat(k, 2 + MT_BEAM_MAX_CONSTRAINTS), sizeof(cand)) : NULL;
}

static size_t add_sat(size_t a, size_t b) { return b > SIZE_MAX - a ? SIZE_MAX : a + b; }

/* --------------------------------------------------------- validation */

static bool in_shortlist(const mt_beam_input *in, int32_t id, int32_t *col) {
    int32_t lo = 0, hi = in->n_shortlist;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (in->shortlist[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < in->n_shortlist && in->shortlist[lo] == id) {
        *col = lo;
        return true;
    }
    return false;
}

/* Column of token id in a score row (-1 when the shortlist lacks it). */
static int32_t col_of(const mt_beam_input *in, int32_t id) {
    if (in->shortlist == NULL) return id;
    int32_t col;
    return in_shortlist(in, id, &col) ? col : -1;
}

static mt_status validate(const mt_beam_params *p, const mt_scorer *scorers, int n_scorers,
                          const mt_beam_input *in, int32_t *v_out) {
    if (p->beam_size < 1)
        return mt_seterr(MT_ERR_INVALID, "beam search: beam size %d < 1", (int)p->beam_size);
    if (n_scorers < 1 || scorers == NULL)
        return mt_seterr(MT_ERR_INVALID, "beam search: no scorer");
    if (!(p->max_length_factor > 0.0f) && p->max_length <= 0)
        return mt_seterr(MT_ERR_INVALID,
                         "beam search: no length limit (max-length-factor %g, "
                         "max-length %d)",
                         (double)p->max_length_factor, (int)p->max_length);
    if (p->max_length < 0)
        return mt_seterr(MT_ERR_INVALID, "beam search: max-length %d < 0", (int)p->max_length);
    if (p->max_active < 0)
        return mt_seterr(MT_ERR_INVALID, "beam search: max_active %d < 0", (int)p->max_active);
    int32_t v = 0;
    for (int i = 0; i < n_scorers; i++) {
        const mt_scorer_ops *o = scorers[i].ops;
        if (o == NULL || o->vocab_size == NULL || o->start == NULL || o->step == NULL ||
            o->finish == NULL)
            return mt_seterr(MT_ERR_INVALID, "beam search: scorer %d lacks a required operation",
                             i);
        int32_t vi = o->vocab_size(scorers[i].user);
        if (vi < 1)
            return mt_seterr(MT_ERR_INVALID, "beam search: scorer %d has vocabulary %d", i,
                             (int)vi);
        if (i > 0 && vi != v)
            return mt_seterr(MT_ERR_INVALID,
                             "beam search: scorer %d has vocabulary %d, scorer 0 "
                             "has %d",
                             i, (int)vi, (int)v);
        v = vi;
        if (p->weights && !isfinite(p->weights[i]))
            return mt_seterr(MT_ERR_INVALID, "beam search: weight %d is not finite", i);
    }
    if (p->eos_id < 0 || p->eos_id >= v)
        return mt_seterr(MT_ERR_INVALID, "beam search: EOS id %d outside the vocabulary [0, %d)",
                         (int)p->eos_id, (int)v);
    if (p->unk_id < -1 || p->unk_id >= v)
        return mt_seterr(MT_ERR_INVALID, "beam search: UNK id %d outside the vocabulary [0, %d)",
                         (int)p->unk_id, (int)v);
    if (p->n_suppress < 0 || (p->n_suppress > 0 && p->suppress == NULL))
        return mt_seterr(MT_ERR_INVALID, "beam search: bad suppression list");
    for (int32_t i = 0; i < p->n_suppress; i++)
        if (p->suppress[i] < 0 || p->suppress[i] >= v)
            return mt_seterr(MT_ERR_INVALID,
                             "beam search: suppressed id %d outside the "
                             "vocabulary [0, %d)",
                             (int)p->suppress[i], (int)v);
    if (in->n_sentences < 0 || (in->n_sentences > 0 && in->src_len == NULL))
        return mt_seterr(MT_ERR_INVALID, "beam search: no source lengths");
    if (in->shortlist) {
        if (in->n_shortlist < 1) return mt_seterr(MT_ERR_INVALID, "beam search: empty shortlist");
        for (int32_t i = 0; i < in->n_shortlist; i++) {
            int32_t id = in->shortlist[i];
            if (id < 0 || id >= v || (i > 0 && id <= in->shortlist[i - 1]))
                return mt_seterr(MT_ERR_INVALID,
                                 "beam search: shortlist entry %d (id %d) out of "
                                 "range or not increasing",
                                 (int)i, (int)id);
        }
    }
    for (int32_t s = 0; s < in->n_sentences; s++) {
        if (in->src_len[s] < 1)
            return mt_seterr(MT_ERR_INVALID,
                             "beam search: sentence %d has source length %d "
                             "(EOS included, so at least 1)",
                             (int)s, (int)in->src_len[s]);
        int32_t pn = in->prefix_len ? in->prefix_len[s] : 0;
        if (pn < 0 || (pn > 0 && (in->prefix == NULL || in->prefix[s] == NULL)))
            return mt_seterr(MT_ERR_INVALID, "beam search: bad prefix of sentence %d", (int)s);
        for (int32_t i = 0; i < pn; i++) {
            int32_t id = in->prefix[s][i];
            if (id < 0 || id >= v || id == p->eos_id)
                return mt_seterr(MT_ERR_INVALID,
                                 "beam search: prefix token %d of sentence %d "
                                 "(id %d) is EOS or outside [0, %d)",
                                 (int)i, (int)s, (int)id, (int)v);
            if (col_of(in, id) < 0)
                return mt_seterr(MT_ERR_INVALID,
                                 "beam search: prefix token %d of sentence %d "
                                 "(id %d) is not in the shortlist",
                                 (int)i, (int)s, (int)id);
        }
    }
    for (int32_t s = 0; in->constraints && s < in->n_sentences; s++) {
        int32_t nc = in->n_constraints ? in->n_constraints[s] : 0, total = 0;
        if (nc < 0 || nc > MT_BEAM_MAX_CONSTRAINTS || (nc > 0 && in->constraints[s] == NULL))
            return mt_seterr(MT_ERR_INVALID, "beam search: sentence %d has %d constraints (0..%d)",
                             (int)s, (int)nc, MT_BEAM_MAX_CONSTRAINTS);
        for (int32_t i = 0; i < nc; i++) {
            const mt_beam_constraint *c = &in->constraints[s][i];
            if (c->n_tokens < 1 || c->tokens == NULL)
                return mt_seterr(MT_ERR_INVALID,
                                 "beam search: constraint %d of sentence %d is empty", (int)i,
                                 (int)s);
            total += c->n_tokens;
            if (total > MT_BEAM_MAX_CONSTRAINT_TOKENS)
                return mt_seterr(MT_ERR_INVALID,
                                 "beam search: sentence %d has more than %d constraint tokens",
                                 (int)s, MT_BEAM_MAX_CONSTRAINT_TOKENS);
            for (int32_t j = 0; j < c->n_tokens; j++) {
                int32_t id = c->tokens[j];
                if (id < 0 || id >= v || id == p->eos_id || col_of(in, id) < 0)
                    return mt_seterr(MT_ERR_INVALID,
                                     "beam search: constraint %d of sentence %d: token %d "
                                     "(id %d) is EOS, outside [0, %d) or not in the shortlist",
                                     (int)i, (int)s, (int)j, (int)id, (int)v);
            }
        }
    }
    *v_out = v;
    return MT_OK;
}

/* Number of tokens at which the search stops a sentence (Marian: finalize
** at step t when t + 1 >= factor * width, compared in float). */
static int32_t length_limit(const mt_beam_params *p, int32_t width) {
    int64_t lim = INT32_MAX;
    if (p->max_length_factor > 0.0f) {
        float f = p->max_length_factor * (float)width;
        double c = ceil((double)f);
        lim = c < 1.0 ? 1 : (c > (double)INT32_MAX ? INT32_MAX : (int64_t)c);
    }
    if (p->max_length > 0 && p->max_length < lim) lim = p->max_length;
    return (int32_t)lim;
}

/* Sizes the plan, grows the workspace when it is too small, carves it and
** fills the per-sentence limits and result offsets. */
static mt_status prepare(mt_beam *b, const mt_beam_params *p, const mt_scorer *scorers,
                         int n_scorers, const mt_beam_input *in, int32_t v, plan *pl) {
    memset(pl, 0, sizeof *pl);
    pl->n = in->n_sentences;
    pl->k = p->beam_size;
    pl->m = n_scorers;
    pl->v = v;
    pl->cols = in->shortlist ? in->n_shortlist : v;
    pl->align = p->alignment;
    pl->word_scores = p->word_scores;
    pl->ensemble = n_scorers > 1;
    for (int32_t s = 0; in->constraints && in->n_constraints && s < pl->n; s++)
        if (in->n_constraints[s] > 0) pl->con = true;
    pl->argmax_only = p->beam_size == 1 && n_scorers == 1 && !p->greedy_scores && !p->n_best &&
                      !p->word_scores && !p->early_stop && !pl->con;
    pl->topk = n_scorers == 1 && !pl->argmax_only && scorers[0].ops->step_topk != NULL;
    pl->amax = pl->argmax_only && scorers[0].ops->step_argmax != NULL;
    pl->kk = p->beam_size + (p->n_suppress > 0 ? p->n_suppress : 0) + 1;
    pl->r_per = p->n_best ? p->beam_size : 1;
    int32_t width = 1, n_live = 0;
    for (int32_t s = 0; s < pl->n; s++) {
        if (in->src_len[s] > width) width = in->src_len[s];
        if (in->src_len[s] > 1) n_live++;
    }
    pl->w = width;
    pl->window = p->max_active > 0 && p->max_active < n_live ? p->max_active : n_live;
    if (pl->window < 1) pl->window = 1;
    if ((int64_t)pl->window * pl->k > INT32_MAX / 2)
        return mt_seterr(MT_ERR_INVALID, "beam search: window %d x beam %d is too large",
                         (int)pl->window, (int)pl->k);
    pl->rows = pl->window * pl->k;
    size_t tok_total = 0, align_total = 0;
    pl->t_max = 1;
    for (int32_t s = 0; s < pl->n; s++) {
        int32_t lim = length_limit(p, p->length_per_sentence ? in->src_len[s] : width);
        if (in->src_len[s] > 1 && lim > pl->t_max) pl->t_max = lim;
        size_t toks = mul_sat((size_t)pl->r_per, (size_t)lim);
        tok_total = add_sat(tok_total, toks);
        if (pl->align) align_total = add_sat(align_total, mul_sat(toks, (size_t)in->src_len[s]));
    }
    carver c = {NULL, 0, false};
    layout(pl, &c, p->n_suppress, tok_total, align_total);
    if (c.overflow || tok_total == SIZE_MAX || align_total == SIZE_MAX)
        return mt_seterr(MT_ERR_NOMEM,
                         "beam search: buffer sizes overflow (%d sentences, beam "
                         "%d, vocabulary %d)",
                         (int)pl->n, (int)pl->k, (int)pl->cols);
    if (c.off > b->ws_cap) {
        void *nw = mt_try_malloc(c.off);
        if (nw == NULL)
            return mt_seterr(MT_ERR_NOMEM,
                             "beam search: out of memory (%zu bytes for %d "
                             "sentences, beam %d, vocabulary %d)",
                             c.off, (int)pl->n, (int)pl->k, (int)pl->cols);
        mt_free(b->ws);
        b->ws = nw;
        b->ws_cap = c.off;
    }
    c = (carver){b->ws, 0, false};
    layout(pl, &c, p->n_suppress, tok_total, align_total);
    tok_total = align_total = 0;
    for (int32_t s = 0; s < pl->n; s++) {
        int32_t lim = length_limit(p, p->length_per_sentence ? in->src_len[s] : width);
        pl->lim[s] = lim;
        pl->tok_off[s] = tok_total;
        pl->align_off[s] = align_total;
        tok_total += (size_t)pl->r_per * (size_t)lim;
        if (pl->align) align_total += (size_t)pl->r_per * (size_t)lim * (size_t)in->src_len[s];
    }
    return MT_OK;
}

/* ------------------------------------------------------------- search */

/* a ranks before b: higher score, then lower (row, col). */
static bool better(const cand *a, const cand *b) {
    if (a->score != b->score) return a->score > b->score;
    if (a->row != b->row) return a->row < b->row;
    return a->col < b->col;
}

/* Min-heap on rank: heap[0] is the worst kept candidate. */
static void sift_down(cand *h, int n, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && better(&h[w], &h[l])) w = l;
        if (r < n && better(&h[w], &h[r])) w = r;
        if (w == i) return;
        cand t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

static void sift_up(cand *h, int i) {
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!better(&h[parent], &h[i])) return;
        cand t = h[i];
        h[i] = h[parent];
        h[parent] = t;
        i = parent;
    }
}

/* Keeps x if it is among the n best offered so far (heap of *cnt). */
static void offer(cand *heap, int *cnt, int n, cand x) {
    if (*cnt == n) {
        if (!better(&x, &heap[0])) return; /* equal: the earlier one wins */
        heap[0] = x;
        sift_down(heap, n, 0);
    } else {
        heap[*cnt] = x;
        sift_up(heap, (*cnt)++);
    }
}

/* Sorts the kept candidates best first (cnt is the beam: small). */
static int sort_best_first(cand *heap, int cnt) {
    for (int i = 1; i < cnt; i++) {
        cand x = heap[i];
        int j = i - 1;
        while (j >= 0 && better(&x, &heap[j])) {
            heap[j + 1] = heap[j];
            j--;
        }
        heap[j + 1] = x;
    }
    return cnt;
}

/* Top n of rows [r0, r1) by expanded score; returns the count, sorted best
** first.  score(r, c) = base[r] + wt * sc[r * cols + c]; ensembles pass the
** combined buffer (path already added) with base NULL and wt 1, for which
** 0 + 1 * x is x. */
static int select_top(const plan *pl, const float *sc, const float *base, float wt, int32_t r0,
                      int32_t r1, int n, cand *heap) {
    int cnt = 0;
    int32_t cols = pl->cols;
    for (int32_t r = r0; r < r1; r++) {
        const float *row = sc + (size_t)r * cols;
        const float b0 = base ? base[r] : 0.0f;
        for (int32_t c = 0; c < cols; c++) {
            const float s = b0 + wt * row[c];
            if (!(s > -INFINITY)) continue;                 /* suppressed, invalid or NaN */
            if (cnt == n && !(s > heap[0].score)) continue; /* the common case, early */
            offer(heap, &cnt, n, (cand){s, r, c, 0.0f});
        }
    }
    return sort_best_first(heap, cnt);
}

static bool suppressed(const plan *pl, int32_t c) {
    for (int32_t i = 0; i < pl->n_supp_cols; i++)
        if (pl->supp_cols[i] == c) return true;
    return false;
}

/* select_top over the rows' top-k lists (step_topk): the n best of a
** sentence's rows x columns lie in the union of its rows' n best, and each
** list holds at least n unsuppressed columns, so the result is the same. */
static int select_lists(const plan *pl, const float *base, float wt, int32_t r0, int32_t r1, int n,
                        cand *heap) {
    int cnt = 0;
    for (int32_t r = r0; r < r1; r++) {
        const int32_t *ix = pl->tk_col + (size_t)r * pl->kk;
        const float *lv = pl->tk_lp + (size_t)r * pl->kk;
        for (int32_t j = 0; j < pl->kk && ix[j] >= 0; j++) {
            if (suppressed(pl, ix[j])) continue;
            const cand x = {base[r] + wt * lv[j], r, ix[j], lv[j]};
            if (x.score > -INFINITY) offer(heap, &cnt, n, x);
        }
    }
    return sort_best_first(heap, cnt);
}

/* ------------------------------------------------------- constraints */

static int32_t n_con(const mt_beam_input *in, int32_t s) {
    return in->constraints && in->n_constraints ? in->n_constraints[s] : 0;
}

static uint32_t all_met(int32_t nc) { return nc >= 32 ? ~0u : (1u << nc) - 1u; }

/* The state after tok (see "Constraints" in mt_search.h). */
static cstate con_next(const mt_beam_constraint *cs, int32_t nc, cstate st, int32_t tok) {
    if (st.cur >= 0) {
        const mt_beam_constraint *c = &cs[st.cur];
        if (c->tokens[st.prog] == tok) {
            if (++st.prog == c->n_tokens) {
                st.met |= 1u << st.cur;
                st.cur = -1;
                st.prog = 0;
            }
            return st;
        }
        st.cur = -1; /* abandoned: its progress is lost */
        st.prog = 0;
    }
    for (int32_t i = 0; i < nc; i++) {
        if ((st.met >> i) & 1u || cs[i].tokens[0] != tok) continue;
        if (cs[i].n_tokens == 1) {
            st.met |= 1u << i;
        } else {
            st.cur = i;
            st.prog = 1;
        }
        break;
    }
    return st;
}

/* The bank of a state: constraint tokens met, with the progress. */
static int32_t con_bank(const mt_beam_constraint *cs, int32_t nc, cstate st) {
    int32_t n = st.prog;
    for (int32_t i = 0; i < nc; i++)
        if ((st.met >> i) & 1u) n += cs[i].n_tokens;
    return n;
}

/* Marks the constraints that occur in toks[0..n) as met (a forced prefix). */
static cstate con_in_prefix(const mt_beam_constraint *cs, int32_t nc, cstate st,
                            const int32_t *toks, int32_t n) {
    for (int32_t i = 0; i < nc; i++) {
        if ((st.met >> i) & 1u) continue;
        for (int32_t a = 0; a + cs[i].n_tokens <= n; a++)
            if (!memcmp(toks + a, cs[i].tokens, sizeof(int32_t) * (size_t)cs[i].n_tokens)) {
                st.met |= 1u << i;
                if (st.cur == i) st.cur = -1, st.prog = 0;
                break;
            }
    }
    return st;
}

static int cmp_row_col(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->row != y->row) return x->row < y->row ? -1 : 1;
    return (x->col > y->col) - (x->col < y->col);
}

/* Bank (kept in lp) descending, then better first. */
static int cmp_bank(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->lp != y->lp) return x->lp > y->lp ? -1 : 1;
    return better(x, y) ? -1 : better(y, x) ? 1 : 0;
}

/* Insertion sort (no allocation, unlike some qsort; n is small: beam x
** (constraints + 2)). */
static void sort_cands(cand *a, int n, int (*cmp)(const void *, const void *)) {
    for (int i = 1; i < n; i++) {
        cand x = a[i];
        int j = i - 1;
        while (j >= 0 && cmp(&x, &a[j]) < 0) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = x;
    }
}

/* Dynamic beam allocation for sentence s over rows [r0, r1) (whole rows,
** suppressed columns already -inf): the n places filled bank by bank from
** the top n, each row's best and each row's constraint continuations.
** Returns the count, sorted best first, in heap. */
static int select_dba(const plan *pl, const mt_beam_input *in, int32_t s, float *sc,
                      const float *base, float wt, int32_t r0, int32_t r1, int n, int cur,
                      int32_t eos_col, cand *heap) {
    const mt_beam_constraint *cs = in->constraints[s];
    const int32_t nc = in->n_constraints[s], cols = pl->cols;
    const uint32_t all = all_met(nc);
    int32_t ctot = 0;
    for (int32_t i = 0; i < nc; i++)
        ctot += cs[i].n_tokens;
    /* EOS only once every constraint is met */
    for (int32_t r = r0; r < r1 && eos_col >= 0; r++)
        if ((pl->r_con[cur][r].met & all) != all) sc[(size_t)r * cols + eos_col] = -INFINITY;
    cand *dc = pl->dc;
    int nd = select_top(pl, sc, base, wt, r0, r1, n, dc);
    for (int32_t r = r0; r < r1; r++) {
        const float *row = sc + (size_t)r * cols;
        const float b0 = base ? base[r] : 0.0f;
        int32_t best = -1;
        for (int32_t c = 0; c < cols; c++)
            if (row[c] > -INFINITY && (best < 0 || row[c] > row[best])) best = c;
        if (best >= 0) dc[nd++] = (cand){b0 + wt * row[best], r, best, 0.0f};
        const cstate st = pl->r_con[cur][r];
        for (int32_t i = 0; i < nc; i++) {
            if ((st.met >> i) & 1u) continue;
            int32_t tok = cs[i].tokens[i == st.cur ? st.prog : 0];
            int32_t c = col_of(in, tok);
            float x = b0 + wt * row[c];
            if (x > -INFINITY) dc[nd++] = (cand){x, r, c, 0.0f};
        }
    }
    /* each (row, column) once, with its bank */
    sort_cands(dc, nd, cmp_row_col);
    int u = 0;
    for (int i = 0; i < nd; i++)
        if (u == 0 || dc[u - 1].row != dc[i].row || dc[u - 1].col != dc[i].col) dc[u++] = dc[i];
    nd = u;
    int32_t cnt_b[MT_BEAM_MAX_CONSTRAINT_TOKENS + 1], take[MT_BEAM_MAX_CONSTRAINT_TOKENS + 1];
    for (int32_t b = 0; b <= ctot; b++)
        cnt_b[b] = 0;
    for (int i = 0; i < nd; i++) {
        const int32_t tok = in->shortlist ? in->shortlist[dc[i].col] : dc[i].col;
        int32_t bank = dc[i].col == eos_col
                           ? ctot
                           : con_bank(cs, nc, con_next(cs, nc, pl->r_con[cur][dc[i].row], tok));
        dc[i].lp = (float)bank;
        cnt_b[bank]++;
    }
    /* places: n / (C + 1) each, the remainder to the top banks, then what
    ** a bank cannot fill to the highest banks with candidates left */
    const int32_t nb = ctot + 1, each = n / nb, rem = n % nb;
    int left = n;
    for (int32_t b = 0; b <= ctot; b++) {
        int32_t want = each + (b >= nb - rem ? 1 : 0);
        take[b] = want < cnt_b[b] ? want : cnt_b[b];
        left -= take[b];
    }
    for (int32_t b = ctot; b >= 0 && left > 0; b--) {
        int32_t extra = cnt_b[b] - take[b];
        if (extra > left) extra = left;
        take[b] += extra;
        left -= extra;
    }
    sort_cands(dc, nd, cmp_bank);
    int cnt = 0;
    for (int i = 0; i < nd; i++) {
        int32_t bank = (int32_t)dc[i].lp;
        if (take[bank] > 0) {
            take[bank]--;
            heap[cnt++] = dc[i];
        }
    }
    return sort_best_first(heap, cnt);
}

static size_t hidx(const plan *pl, int32_t sl, int32_t t, int32_t j) {
    return ((size_t)sl * (size_t)pl->t_max + (size_t)t) * (size_t)pl->k + (size_t)j;
}

static float norm_score(const mt_beam_params *p, float path, int32_t len) {
    return (path - p->word_penalty * (float)len) / powf((float)len, p->normalize);
}

/* Writes the result of the sentence in slot sl (done). */
static void emit(const plan *pl, const mt_beam_input *in, int32_t sl) {
    const slot *so = &pl->slots[sl];
    int32_t s = so->sent, src = in->src_len[s];
    fin *f = pl->fins + (size_t)sl * pl->k;
    /* stable sort by normalised score, best first (finish order breaks ties) */
    for (int i = 1; i < so->n_fin; i++) {
        fin x = f[i];
        int j = i - 1;
        while (j >= 0 && ((x.met && !f[j].met) || (x.met == f[j].met && x.norm > f[j].norm))) {
            f[j + 1] = f[j];
            j--;
        }
        f[j + 1] = x;
    }
    int32_t nh = so->n_fin < pl->r_per ? so->n_fin : pl->r_per;
    int32_t lim = pl->lim[s], pn = in->prefix_len ? in->prefix_len[s] : 0;
    mt_beam_result *res = &pl->results[s];
    res->n_hyps = nh;
    for (int32_t i = 0; i < nh; i++) {
        mt_beam_hyp *h = &pl->hyps[(size_t)s * pl->r_per + i];
        int32_t len = f[i].t + 1;
        int32_t *toks = pl->tokens + pl->tok_off[s] + (size_t)i * lim;
        float *ws = pl->wscores ? pl->wscores + pl->tok_off[s] + (size_t)i * lim : NULL;
        float *al = pl->aligns ? pl->aligns + pl->align_off[s] + (size_t)i * lim * src : NULL;
        size_t e = hidx(pl, sl, f[i].t, f[i].j);
        memcpy(pl->mscores + ((size_t)s * pl->r_per + i) * pl->m, pl->h_model + e * pl->m,
               sizeof(float) * (size_t)pl->m);
        h->path_score = pl->h_path[e];
        h->norm_score = f[i].norm;
        h->eos = f[i].eos;
        h->constraints_met = f[i].met;
        h->length = len;
        h->n_tokens = f[i].eos ? len - 1 : len;
        h->prefix_len = pn < h->n_tokens ? pn : h->n_tokens;
        h->tokens = toks;
        h->word_scores = ws;
        h->align = al;
        h->src_len = src;
        int32_t j = f[i].j;
        for (int32_t t = f[i].t; t >= 0; t--) {
            size_t et = hidx(pl, sl, t, j);
            int32_t parent = pl->h_parent[et];
            if (t < h->n_tokens) toks[t] = pl->h_tok[et];
            if (ws)
                ws[t] = t > 0 ? pl->h_path[et] - pl->h_path[hidx(pl, sl, t - 1, parent)]
                              : pl->h_path[et];
            if (al) memcpy(al + (size_t)t * src, pl->h_align + et * pl->w, sizeof(float) * src);
            j = parent;
        }
    }
}

/* The result of an empty source: EOS at step 0 with path score 0. */
static void emit_empty(const plan *pl, const mt_beam_params *p, const mt_beam_input *in,
                       int32_t s) {
    mt_beam_result *res = &pl->results[s];
    mt_beam_hyp *h = &pl->hyps[(size_t)s * pl->r_per];
    res->n_hyps = 1;
    memset(pl->mscores + (size_t)s * pl->r_per * pl->m, 0, sizeof(float) * (size_t)pl->m);
    h->tokens = pl->tokens + pl->tok_off[s];
    h->n_tokens = 0;
    h->length = 1;
    h->eos = true;
    h->prefix_len = 0;
    h->path_score = 0.0f;
    h->norm_score = norm_score(p, 0.0f, 1);
    h->word_scores = NULL;
    h->align = NULL;
    if (pl->wscores) {
        pl->wscores[pl->tok_off[s]] = 0.0f;
        h->word_scores = pl->wscores + pl->tok_off[s];
    }
    if (pl->aligns) { /* all attention on the source EOS */
        pl->aligns[pl->align_off[s]] = 1.0f;
        h->align = pl->aligns + pl->align_off[s];
    }
    h->src_len = 1;
    h->constraints_met = n_con(in, s) == 0;
}

static void finish_scorers(const mt_scorer *scorers, int n, void **states) {
    for (int i = 0; i < n; i++)
        scorers[i].ops->finish(scorers[i].user, states[i]);
}

mt_status mt_beam_search(mt_beam *b, const mt_beam_params *p, const mt_scorer *scorers,
                         int n_scorers, const mt_beam_input *in, const mt_beam_result **out) {
    plan pl;
    int32_t v = 0;
    if (b == NULL || p == NULL || in == NULL || out == NULL)
        return mt_seterr(MT_ERR_INVALID, "beam search: NULL argument");
    b->stats = (mt_beam_stats){0, 0};
    *out = NULL;
    mt_status rc = validate(p, scorers, n_scorers, in, &v);
    if (rc != MT_OK) return rc;
    rc = prepare(b, p, scorers, n_scorers, in, v, &pl);
    if (rc != MT_OK) return rc;
    pl.can_add = true;
    for (int i = 0; i < n_scorers; i++)
        if (scorers[i].ops->add == NULL) pl.can_add = false;

    const int32_t n = pl.n, k = pl.k, m = pl.m, cols = pl.cols, eos = p->eos_id;
    const int32_t eos_col = col_of(in, eos);
    /* suppression columns: UNK unless allowed, then the list */
    pl.n_supp_cols = 0;
    if (!p->allow_unk && p->unk_id >= 0) {
        int32_t c = col_of(in, p->unk_id);
        if (c >= 0) pl.supp_cols[pl.n_supp_cols++] = c;
    }
    for (int32_t i = 0; i < p->n_suppress; i++) {
        int32_t c = col_of(in, p->suppress[i]);
        if (c >= 0) pl.supp_cols[pl.n_supp_cols++] = c;
    }
    if (pl.amax) {
        for (int32_t c = 0; c < cols; c++)
            pl.skip[c] = 0.0f;
        for (int32_t i = 0; i < pl.n_supp_cols; i++)
            pl.skip[pl.supp_cols[i]] = -INFINITY;
    }
    /* results and the queue of non-empty sentences */
    int32_t n_queue = 0;
    for (int32_t s = 0; s < n; s++) {
        pl.results[s].n_hyps = 0;
        pl.results[s].hyps = pl.hyps + (size_t)s * pl.r_per;
        for (int32_t i = 0; i < pl.r_per; i++)
            pl.hyps[(size_t)s * pl.r_per + i].model_scores =
                pl.mscores + ((size_t)s * pl.r_per + i) * m;
        if (in->src_len[s] <= 1)
            emit_empty(&pl, p, in, s);
        else
            pl.queue[n_queue++] = s;
    }
    for (int32_t i = 0; i < pl.window; i++)
        pl.slots[i].sent = -1;

    int cur = 0, n_rows = 0, n_prev = 0, n_active = 0, q_head = 0;
    bool started = false;
    const int32_t refill_at = (pl.window + 1) / 2; /* top up when half the window is free */
    const float w0 = p->weights ? p->weights[0] : 1.0f;
    for (;;) {
        /* ---- admit sentences from the queue (start, or top up) */
        int32_t free_slots = pl.window - n_active;
        if (q_head < n_queue && free_slots > 0 &&
            (n_active == 0 || (pl.can_add && free_slots >= refill_at))) {
            if (started && !pl.can_add) { /* sub-batches: the previous one is done */
                finish_scorers(scorers, m, pl.states);
                started = false;
            }
            int32_t n_admit = 0, sl = 0;
            while (n_admit < free_slots && q_head < n_queue) {
                int32_t s = pl.queue[q_head++];
                while (pl.slots[sl].sent >= 0)
                    sl++;
                pl.slots[sl] = (slot){s, 0, k, pl.lim[s], 0, -INFINITY};
                pl.admit[n_admit++] = s;
                int32_t r = n_rows++;
                pl.r_tok[cur][r] = -1;
                pl.r_sent[cur][r] = s;
                pl.r_reorder[cur][r] = -1;
                pl.r_pos[cur][r] = 0;
                pl.r_slot[cur][r] = sl;
                pl.r_hist[cur][r] = -1;
                pl.r_path[cur][r] = 0.0f;
                memset(pl.r_model[cur] + (size_t)r * m, 0, sizeof(float) * (size_t)m);
                if (pl.con) pl.r_con[cur][r] = (cstate){0, -1, 0};
            }
            n_active += n_admit;
            if (!started) {
                for (int i = 0; i < m; i++) {
                    pl.states[i] = NULL;
                    rc = scorers[i].ops->start(scorers[i].user, pl.admit, n_admit, &pl.states[i]);
                    if (rc != MT_OK) {
                        finish_scorers(scorers, i, pl.states);
                        return rc;
                    }
                }
                started = true;
                n_prev = 0;
            } else {
                for (int i = 0; i < m; i++) {
                    rc = scorers[i].ops->add(scorers[i].user, pl.states[i], pl.admit, n_admit);
                    if (rc != MT_OK) goto fail;
                }
            }
        }
        if (n_rows == 0) break;
        if (p->should_abort && p->should_abort(p->abort_user)) {
            rc = MT_ABORTED;
            goto fail;
        }

        /* ---- score the rows */
        mt_scorer_step st = {
            .n_hyps = n_rows,
            .prev_tokens = pl.r_tok[cur],
            .hyp_sentence = pl.r_sent[cur],
            .reorder = pl.r_reorder[cur],
            .hyp_pos = pl.r_pos[cur],
            .n_prev = n_prev,
            .shortlist = in->shortlist,
            .n_shortlist = in->shortlist ? in->n_shortlist : 0,
            .argmax_only = pl.argmax_only,
            .align_stride = pl.w,
            .beam_size = k,
        };
        /* rows' top-k lists or argmaxes, unless a prefix token is forced */
        bool free_step = pl.topk || pl.amax;
        for (int32_t r = 0; free_step && in->prefix_len && r < n_rows; r++)
            free_step = pl.slots[pl.r_slot[cur][r]].t >= in->prefix_len[pl.r_sent[cur][r]];
        for (int32_t r = 0; free_step && pl.con && r < n_rows; r++) /* constrained: whole rows */
            free_step = n_con(in, pl.r_sent[cur][r]) == 0;
        const bool lists = free_step && pl.topk, amax = free_step && pl.amax;
        for (int i = 0; i < m; i++) {
            float *al = i == 0 && pl.align ? pl.align_buf : NULL;
            if (amax) {
                rc = scorers[0].ops->step_argmax(scorers[0].user, pl.states[0], &st, pl.skip,
                                                 pl.am_col, al);
            } else if (lists) {
                rc = scorers[0].ops->step_topk(scorers[0].user, pl.states[0], &st, pl.kk, pl.tk_col,
                                               pl.tk_lp, al);
            } else {
                rc = scorers[i].ops->step(scorers[i].user, pl.states[i], &st,
                                          pl.logprobs + (size_t)i * pl.rows * cols, al);
            }
            if (rc != MT_OK) goto fail;
        }
        b->stats.steps++;
        b->stats.rows += n_rows;
        /* expanded scores: Marian adds w_i * logp_i to the path, model by model */
        float *sc = pl.logprobs; /* what selection reads */
        if (pl.ensemble) {
            sc = pl.comb;
            for (int32_t r = 0; r < n_rows; r++) {
                float *o = pl.comb + (size_t)r * cols;
                const float path = pl.r_path[cur][r];
                for (int32_t c = 0; c < cols; c++)
                    o[c] = path + w0 * pl.logprobs[(size_t)r * cols + c];
                for (int i = 1; i < m; i++) {
                    const float wi = p->weights ? p->weights[i] : 1.0f;
                    const float *lp = pl.logprobs + (size_t)i * pl.rows * cols + (size_t)r * cols;
                    for (int32_t c = 0; c < cols; c++)
                        o[c] += wi * lp[c];
                }
            }
        }

        /* ---- select per sentence, record, build the next row list */
        int nx = 1 - cur, n_next = 0;
        int32_t r0 = 0;
        while (r0 < n_rows) {
            const int32_t sl = pl.r_slot[cur][r0];
            int32_t r1 = r0 + 1;
            while (r1 < n_rows && pl.r_slot[cur][r1] == sl)
                r1++;
            slot *so = &pl.slots[sl];
            const int32_t s = so->sent, t = so->t;
            const int32_t pn = in->prefix_len ? in->prefix_len[s] : 0;
            const bool forced = t < pn;
            const int32_t nc = n_con(in, s);
            const mt_beam_constraint *cs = nc > 0 ? in->constraints[s] : NULL;
            int cnt;
            if (forced) {
                int32_t c = col_of(in, in->prefix[s][t]);
                float lp = sc[(size_t)r0 * cols + c];
                float score = pl.ensemble ? lp : pl.r_path[cur][r0] + w0 * lp;
                pl.heap[0] = (cand){pl.argmax_only ? NAN : score, r0, c, lp};
                cnt = 1;
            } else if (lists) {
                cnt = select_lists(&pl, pl.r_path[cur], w0, r0, r1, so->cap, pl.heap);
            } else if (amax) { /* beam 1: one row */
                cnt = pl.am_col[r0] >= 0 && pl.am_col[r0] < cols;
                if (cnt) pl.heap[0] = (cand){NAN, r0, pl.am_col[r0], NAN};
            } else {
                for (int32_t r = r0; r < r1; r++)
                    for (int32_t i = 0; i < pl.n_supp_cols; i++)
                        sc[(size_t)r * cols + pl.supp_cols[i]] = -INFINITY;
                if (nc > 0) {
                    cnt =
                        select_dba(&pl, in, s, sc, pl.ensemble ? NULL : pl.r_path[cur],
                                   pl.ensemble ? 1.0f : w0, r0, r1, so->cap, cur, eos_col, pl.heap);
                } else if (pl.argmax_only) {
                    /* beam 1: one row, first maximum; the values may be logits */
                    const float *row = sc + (size_t)r0 * cols;
                    int32_t best = -1;
                    for (int32_t c = 0; c < cols; c++)
                        if (row[c] > -INFINITY && (best < 0 || row[c] > row[best])) best = c;
                    cnt = best >= 0;
                    if (cnt) pl.heap[0] = (cand){NAN, r0, best, NAN};
                } else if (pl.ensemble) {
                    cnt = select_top(&pl, sc, NULL, 1.0f, r0, r1, so->cap, pl.heap);
                } else {
                    cnt = select_top(&pl, sc, pl.r_path[cur], w0, r0, r1, so->cap, pl.heap);
                }
            }
            const bool last = t + 1 >= so->lim;
            int32_t n_live = 0;
            float best_live = -INFINITY;
            for (int j = 0; j < cnt; j++) {
                const cand *cd = &pl.heap[j];
                const int32_t r = cd->row, col = cd->col;
                const int32_t tok = in->shortlist ? in->shortlist[col] : col;
                const size_t e = hidx(&pl, sl, t, j);
                pl.h_tok[e] = tok;
                pl.h_parent[e] = pl.r_hist[cur][r];
                pl.h_path[e] = cd->score;
                float *hm = pl.h_model + e * m;
                for (int i = 0; i < m; i++)
                    hm[i] =
                        pl.argmax_only ? NAN
                        : lists
                            ? pl.r_model[cur][r] + cd->lp
                            : pl.r_model[cur][(size_t)r * m + i] +
                                  pl.logprobs[(size_t)i * pl.rows * cols + (size_t)r * cols + col];
                if (pl.align)
                    memcpy(pl.h_align + e * pl.w, pl.align_buf + (size_t)r * pl.w,
                           sizeof(float) * (size_t)in->src_len[s]);
                cstate cst = {0, -1, 0};
                if (nc > 0) {
                    cst = pl.r_con[cur][r];
                    if (col != eos_col) cst = con_next(cs, nc, cst, tok);
                    if (forced && t + 1 == pn) cst = con_in_prefix(cs, nc, cst, in->prefix[s], pn);
                }
                if (col == eos_col || last) {
                    MT_ASSERT(so->n_fin < k); /* finished + live <= beam */
                    fin *f = pl.fins + (size_t)sl * k + so->n_fin++;
                    f->t = t;
                    f->j = j;
                    f->eos = col == eos_col;
                    f->met = nc == 0 || (cst.met & all_met(nc)) == all_met(nc);
                    f->norm = norm_score(p, cd->score, t + 1);
                    if (cd->score > so->best_fin_path) so->best_fin_path = cd->score;
                } else {
                    const int32_t q = n_next++;
                    pl.r_tok[nx][q] = tok;
                    pl.r_sent[nx][q] = s;
                    pl.r_reorder[nx][q] = r;
                    pl.r_pos[nx][q] = t + 1;
                    pl.r_slot[nx][q] = sl;
                    pl.r_hist[nx][q] = j;
                    pl.r_path[nx][q] = cd->score;
                    memcpy(pl.r_model[nx] + (size_t)q * m, hm, sizeof(float) * (size_t)m);
                    if (pl.con) pl.r_con[nx][q] = cst;
                    if (cd->score > best_live) best_live = cd->score;
                    n_live++;
                }
            }
            /* Devlin et al. (2017): stop when the best partial hypothesis is
            ** worse than the best finished one by more than the margin. */
            if (p->early_stop && n_live > 0 && so->n_fin > 0 &&
                best_live < so->best_fin_path - p->early_stop_margin) {
                n_next -= n_live;
                n_live = 0;
            }
            so->cap = forced ? k : n_live; /* forced steps keep the full beam */
            so->t = t + 1;
            if (n_live == 0) {
                emit(&pl, in, sl);
                so->sent = -1;
                n_active--;
            }
            r0 = r1;
        }
        n_prev = n_rows;
        n_rows = n_next;
        cur = nx;
    }
    if (started) finish_scorers(scorers, m, pl.states);
    *out = pl.results;
    return MT_OK;
fail:
    if (started) finish_scorers(scorers, m, pl.states);
    return rc;
}
