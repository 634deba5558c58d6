/*
** mt_search.h: batched beam search over abstract scorers (models decode
** through it).  Part of the engine's public API (mt.h includes it).
*/
#ifndef MT_SEARCH_H
#define MT_SEARCH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mt_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------- beam search
** Batched beam search over abstract scorers (engine/beam.c), with the
** semantics of Marian's BeamSearch (src/translator/beam_search.cpp,
** history.h; shared/reference/marian-compat.md section 5):
**
**  - Path score of a hypothesis: the running float sum, token by token, of
**    sum_i w_i * logp_i(token) over the scorers (ensemble members; weights
**    mt_beam_params.weights, default 1, not normalised), added to the path
**    model by model in scorer order, as Marian does.
**  - Step 0 expands the single start hypothesis of each sentence.  At each
**    step a sentence keeps the top N of its (live hypotheses x vocabulary)
**    candidates, N = its current beam: beam_size at step 0, then the number
**    of its hypotheses that did not finish (the beam shrinks by one per
**    finished hypothesis).  Suppressed tokens (UNK unless allow_unk, the
**    suppress list) score -inf and are never selected.
**  - A candidate whose token is EOS is finished, with normalised score
**    (path - word_penalty * L) / L^normalize, L = tokens including the EOS.
**    Length limit: at the step where L >= max_length_factor * W (W = the
**    longest source of the search in tokens including its EOS, compared in
**    float, as Marian's batch width; with length_per_sentence W is the
**    sentence's own source length) or L >= max_length (when > 0), every
**    candidate selected at that step is finished as it is, without EOS.
**    A sentence is done when it has no live hypothesis.  At most beam_size
**    hypotheses finish per sentence, all distinct; the best translation is
**    the one with the highest normalised score.
**  - Ties: among candidates with equal expanded scores the lower (row, token)
**    wins (rows in rank order of the previous step); among finished
**    hypotheses with equal normalised scores the earlier finished comes
**    first.  Results do not depend on the other sentences of the batch
**    except through W (the length limit), nor on max_active.
**  - Empty source (src_len 1: only EOS): the result is the empty
**    translation (EOS at step 0, path 0, normalised score -word_penalty)
**    without asking the scorers; its alignment is 1.0 on the source EOS.
**    Such a sentence is never passed to start/add and its prefix is ignored.
**  - Forced prefix (prefix-constrained decoding, the editor's completion):
**    while t < prefix_len[s] the sentence has one hypothesis, extended by
**    prefix[s][t]; the path and the per-model scores accumulate the
**    scorers' log-probs of the forced tokens (suppression does not apply to
**    them).  From then on normal beam search with the full beam, so the
**    n-best list holds up to beam_size completions, each starting with the
**    prefix (mt_beam_hyp.prefix_len tells where the completion starts).
**    Prefix tokens must not be EOS and must be in the shortlist if any.
**  - Beam 1 with one scorer and nothing asking for scores (greedy_scores,
**    n_best, word_scores, early_stop all false): the scorer is told that
**    only the argmax of each row counts (mt_scorer_step.argmax_only) and
**    may return raw logits (Marian skips the softmax, WNMT 2018 sec. 2.3);
**    the reported scores are then NAN.
**  - Early stop (off by default; not in Marian, Devlin et al. 2017 sec. 3):
**    a sentence stops when its best live path score is below the best path
**    score among its finished hypotheses minus early_stop_margin.  With
**    normalize = 0, word_penalty = 0 and margin >= 0 the best translation
**    is unchanged (log-probs are <= 0); the n-best list may be shorter.
**  - Top-up batching (max_active > 0; reference/papers/fused-softmax-topup-
**    batching.txt sec. 3.2): at most max_active sentences decode at a time;
**    when at least half of that window is free it is refilled from the
**    queue of sentences in input order.  Needs `add` in every scorer;
**    without it the sentences run in consecutive sub-batches of max_active
**    (start ... finish, start ... finish).  Results are the same either way.
**  - Constraints (lexically constrained decoding, Post & Vilar, NAACL 2018,
**    "Fast Lexically Constrained Decoding with Dynamic Beam Allocation"):
**    a sentence may carry constraints, token sequences that must appear
**    contiguously in its output.  Each hypothesis tracks the constraints
**    it has met and its progress inside at most one constraint: a token
**    equal to the next token of the one in progress advances it (the last
**    one meets it); any other token abandons it (progress back to 0) and
**    may start an unmet one (the first, in input order, that begins with
**    it; a one-token constraint is met at once).  Constraint tokens count
**    even where the model produced them by itself.  The candidates of a
**    step are the sentence's top N (as without constraints), plus for each
**    row its single best token and the next token of every unmet
**    constraint (the continuation of the one in progress, the first token
**    of the others), each once.  They are grouped in banks by the number of
**    constraint tokens met (completed constraints plus the progress); the
**    N places are shared out evenly over the C + 1 banks (C: the
**    sentence's constraint tokens), the remainder to the highest banks,
**    and places a bank cannot fill go to the highest banks that have
**    candidates left; within a bank the best scores win (ties: lower row,
**    token).  EOS is only allowed to a hypothesis that met every
**    constraint.  The length limit still ends the search: hypotheses it
**    stops without their constraints rank after every hypothesis that met
**    them, whatever the scores (mt_beam_hyp.constraints_met says which);
**    so a constraint that does not fit in the limit gives the best
**    unconstrained-looking hypothesis stopped by the limit, with
**    constraints_met false.  A constraint met inside a forced prefix
**    counts as met.  Constrained sentences are scored on whole rows
**    (no top-k lists, no argmax-only: a search with any constraint reports
**    scores also at beam 1); sentences without constraints decode as
**    before.  With beam N < C + 1 some banks get no place: use a beam of
**    at least C + 1.  Limits: MT_BEAM_MAX_CONSTRAINTS per sentence,
**    MT_BEAM_MAX_CONSTRAINT_TOKENS tokens per sentence.
**
** Memory: every buffer lives in the mt_beam object, sized when a search
** starts and kept for the next; nothing is allocated per step.  An mt_beam
** is used by one thread at a time.
*/

/* One call of a scorer's step.  The rows are the live hypotheses, grouped
** by sentence in increasing order (hyp_sentence nondecreasing), at most
** beam_size rows per sentence.  Row i extends row reorder[i] of the
** previous call (several rows may share a parent, rows not named are
** dropped: the model reorders its decoder state with it), or is the start
** row of sentence hyp_sentence[i] when reorder[i] is -1 (prev_tokens[i] is
** then -1 and hyp_pos[i] 0).  A sentence that has no row in a call is
** finished and never comes back: its state may be released.  Rows of one
** call are all at the same position (hyp_pos) unless the scorer has `add`
** (top-up batching), so a model whose decoder state has one position and a
** fixed number of rows per sentence can pad each sentence to beam_size rows
** (repeating any of its rows) and map the rows back. */
typedef struct mt_scorer_step {
    int32_t n_hyps;              /* rows                                          */
    const int32_t *prev_tokens;  /* [n_hyps] last token of each row, -1 at start  */
    const int32_t *hyp_sentence; /* [n_hyps] sentence (index in the batch)        */
    const int32_t *reorder;      /* [n_hyps] parent row in the previous call, -1  */
    const int32_t *hyp_pos;      /* [n_hyps] target tokens before the next one    */
    int32_t n_prev;              /* rows of the previous call (0 after start)     */
    const int32_t *shortlist;    /* NULL, or n_shortlist increasing target ids:
                                    score rows then have n_shortlist entries,
                                    entry c for token shortlist[c]                */
    int32_t n_shortlist;
    bool argmax_only;     /* only each row's argmax is used: raw logits ok */
    int32_t align_stride; /* row stride of align: the longest source       */
    int32_t beam_size;    /* bound on the rows of one sentence             */
} mt_scorer_step;

/* A scorer is one model (ensemble member) decoding the batch of source
** sentences it was made for (e.g. by a model-provided function that encodes
** them); sentences are named by their index in that batch.  Operations:
**   vocab_size  V, the size of a full score row (the target vocabulary).
**   start       begins a search over sentences[0..n) (increasing); *state
**               is handed to the other operations.  The first step has one
**               start row per sentence.
**   add         optional (NULL: no top-up): adds sentences[0..n) (higher
**               indices than any before) to a running search; their start
**               rows come in the next step after the existing rows.
**   step        writes logprobs [n_hyps, V or n_shortlist]: the natural-log
**               softmax of the next token given each row (any values with
**               the same per-row argmax when argmax_only); and, when align
**               is not NULL (alignments requested; scorer 0 only), for each
**               row the attention weights of its alignment head over the
**               source positions of its sentence, src_len values including
**               the source EOS, at align + row * align_stride.  A failure is
**               passed back by mt_beam_search.
**   finish      ends the search (also after an error or cancellation);
**               releases what start allocated.  Called once per start. */
typedef struct mt_scorer_ops {
    int32_t (*vocab_size)(void *user);
    mt_status (*start)(void *user, const int32_t *sentences, int32_t n, void **state);
    mt_status (*add)(void *user, void *state, const int32_t *sentences, int32_t n);
    mt_status (*step)(void *user, void *state, const mt_scorer_step *in, float *logprobs,
                      float *align);
    void (*finish)(void *user, void *state);
    /* Optional (NULL: whole rows only).  step_topk is step giving
    ** only each row's k best columns (ties: lower column first; past the
    ** row's width -1 and -inf), best first, with their log-probabilities:
    ** cols, logprobs [n_hyps * k] (the fused softmax + top-k).  The search
    ** uses it with one scorer, beam > 1 or scores asked for, and no forced
    ** prefix token in the step; k covers the suppressed columns too. */
    mt_status (*step_topk)(void *user, void *state, const mt_scorer_step *in, int32_t k,
                           int32_t *cols, float *logprobs, float *align);
    /* Optional (NULL: step).  step_argmax is step when
    ** argmax_only giving only each row's argmax: cols [n_hyps] the first
    ** column of the largest score + skip[c] (skip [V or n_shortlist]: 0, or
    ** -INFINITY for a suppressed column), -1 when none exceeds -inf.  The
    ** search uses it when no prefix token is forced in the step. */
    mt_status (*step_argmax)(void *user, void *state, const mt_scorer_step *in, const float *skip,
                             int32_t *cols, float *align);
} mt_scorer_ops;

typedef struct mt_scorer {
    const mt_scorer_ops *ops;
    void *user;
} mt_scorer;

typedef struct mt_beam_params {
    int32_t beam_size;        /* -b, Marian's decoder default 12                 */
    float normalize;          /* -n alpha: score / L^alpha (default 0)           */
    float word_penalty;       /* --word-penalty: score - wp * L (default 0)      */
    float max_length_factor;  /* --max-length-factor (default 3; <= 0: none)     */
    int32_t max_length;       /* output cap in tokens incl. EOS, 0 = none (mtpe;
                                 Marian's --max-length limits inputs instead)   */
    bool length_per_sentence; /* factor times the sentence's own source length
                                 instead of the longest of the search (mtpe)  */
    bool allow_unk;           /* --allow-unk (default false: UNK suppressed)   */
    int32_t eos_id, unk_id;   /* default 0 and 1 (Marian vocabularies); unk -1:
                                 none                                          */
    const int32_t *suppress;  /* more ids never produced (e.g. the output of
                                 mt_vocab_suppressed_ids), n_suppress of them */
    int32_t n_suppress;
    bool n_best;                      /* return all finished hypotheses (else the best)  */
    bool word_scores;                 /* per-token score differences incl. EOS           */
    bool alignment;                   /* attention rows of scorer 0 per target token     */
    bool greedy_scores;               /* beam 1: still ask for log-probs (scores valid)  */
    bool early_stop;                  /* Devlin's early stop (default off) ...           */
    float early_stop_margin;          /* ... with this margin (default 3.0)             */
    const float *weights;             /* [n_scorers] --weights, NULL = all 1             */
    int32_t max_active;               /* top-up window in sentences, 0 = all at once     */
    bool (*should_abort)(void *user); /* polled before every step; may be NULL */
    void *abort_user;
} mt_beam_params;
mt_beam_params mt_beam_default_params(void);

/* One lexical constraint: a target token sequence the output must contain
** contiguously (anywhere, constraints in any order). */
typedef struct mt_beam_constraint {
    const int32_t *tokens; /* n_tokens ids: not EOS, in the shortlist if any */
    int32_t n_tokens;      /* >= 1                                            */
} mt_beam_constraint;

#define MT_BEAM_MAX_CONSTRAINTS 16       /* per sentence                    */
#define MT_BEAM_MAX_CONSTRAINT_TOKENS 64 /* per sentence, all together      */

/* What to translate: n_sentences sentences of the scorers' batch. */
typedef struct mt_beam_input {
    int32_t n_sentences;
    const int32_t *src_len;       /* [n] source lengths incl. EOS (>= 1)          */
    const int32_t *const *prefix; /* NULL, or [n] forced target prefixes (entries
                                     may be NULL), without EOS                   */
    const int32_t *prefix_len;    /* [n] (NULL: no prefixes)                      */
    const int32_t *shortlist;     /* NULL, or n_shortlist increasing target ids:
                                     only these are scored (keep EOS in it)    */
    int32_t n_shortlist;
    /* Lexical constraints (see "Constraints" above): NULL, or [n] arrays of
    ** n_constraints[s] constraints each (entries may be NULL when 0). */
    const mt_beam_constraint *const *constraints;
    const int32_t *n_constraints; /* [n] (NULL: no constraints)              */
} mt_beam_input;

/* One finished hypothesis.  Arrays belong to the mt_beam. */
typedef struct mt_beam_hyp {
    const int32_t *tokens; /* n_tokens ids, without the final EOS           */
    int32_t n_tokens;
    int32_t length;            /* L: n_tokens + 1 when eos, else n_tokens       */
    bool eos;                  /* false: stopped by the length limit            */
    int32_t prefix_len;        /* tokens[0..prefix_len) are the forced prefix   */
    float path_score;          /* weighted sum of the log-probs (NAN: argmax)   */
    float norm_score;          /* (path - wp * L) / L^alpha                     */
    const float *model_scores; /* [n_scorers] unweighted sums of each scorer's
                                  log-probs, Marian's F0= F1= ...             */
    const float *word_scores;  /* [length] path score increments (NULL unless
                                  word_scores)                                */
    const float *align;        /* [length, src_len] attention rows (NULL unless
                                  alignment)                                  */
    int32_t src_len;
    bool constraints_met; /* every constraint of the sentence is in tokens
                             (true without constraints)                   */
} mt_beam_hyp;

typedef struct mt_beam_result {
    int32_t n_hyps; /* best first; 1 unless n_best (0 only when no token
                       could ever be selected)                       */
    const mt_beam_hyp *hyps;
} mt_beam_result;

typedef struct mt_beam_stats {
    int64_t steps; /* step calls (per scorer)            */
    int64_t rows;  /* rows scored in them (per scorer)   */
} mt_beam_stats;

typedef struct mt_beam mt_beam;
mt_status mt_beam_init(mt_beam **out);
void mt_beam_free(mt_beam *b); /* NULL is a no-op */
/* Decodes the sentences of in with the scorers; *out receives
** in->n_sentences results (in input order), owned by b and valid until the
** next search or mt_beam_free.  MT_ABORTED when should_abort returned true
** (no results), MT_ERR_INVALID for bad arguments (a scorer without a
** required operation, vocabulary sizes that differ, ids out of range, a
** prefix containing EOS, no length limit), MT_ERR_NOMEM, or a scorer's
** error.  Scorers are always finished before it returns. */
mt_status mt_beam_search(mt_beam *b, const mt_beam_params *p, const mt_scorer *scorers,
                         int n_scorers, const mt_beam_input *in, const mt_beam_result **out);
/* Counters of the last search. */
mt_beam_stats mt_beam_get_stats(const mt_beam *b);

#ifdef __cplusplus
}
#endif
#endif /* MT_SEARCH_H */
