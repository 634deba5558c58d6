/*
** translator.h: translation with Marian's decoding semantics, for
** `mtpe translate` (batch mode), `mtpe bench translate` and the editor's
** as-you-type completion (worker threads).
**
** Layers:
**   mt_model_scorer   the mt_scorer of one model (models/scorer.c): the
**                      beam search of engine/mt.h over the model step API of
**                      models/model.h, in bounded memory
**   mt_translator     an ensemble with its vocabularies, shortlist and
**                      decoding options; read-only, shared by the workers
**   mt_translate_worker   one per thread: its graphs, beam search and
**                      scratch; translates batches of sentences
**
** What a translation returns (mt_tr_result): the n-best list (only the best
** without n_best), each hypothesis with its detokenised text (left to right,
** also for right-to-left models), its target ids in the model's order, the
** normalised score, the path score and every model's own score (Marian's
** F0= F1= ...), the word scores (path score increments, EOS last) and the
** attention of the first model's alignment layer over the first source
** (rows: target tokens incl. EOS; columns: source tokens incl. EOS), both
** in the model's order as Marian prints them.
**
** Batches: mt_translate_encoded() decodes its sentences in one search, so
** they form one of Marian's mini-batches (the length limit is the factor
** times the longest source of the batch; results may depend on the batch
** at the level of float rounding, as in Marian).  With top-up batching
** (max_active > 0) the search keeps max_active sentences decoding and
** refills the window as they finish; the length limit is then each
** sentence's own (length_per_sentence).  Empty sources give the
** empty translation (Marian: EOS forced at step 0; its F scores are then
** the models' log-probabilities of that EOS, which are computed for n-best
** lists).  Sources longer than max_length tokens (EOS included) are
** cropped (max_length_crop: the last kept token becomes EOS) or skipped
** (result.skipped: no translation; Marian drops such lines).
**
** Forced prefix (mt_tr_input.prefix): the target text is encoded without
** EOS, forced, and completed by beam search; each hypothesis starts with it
** (prefix_len tokens).  Not for right-to-left models (MT_ERR_UNSUPPORTED).
**
** Terms (mt_tr_input.terms; `mtpe translate --glossary`): each term is a
** lexical constraint of the beam search (engine mt_search.h,
** "Constraints": dynamic beam allocation), so the translation contains its
** token sequence.  A term is encoded with the target vocabulary as a text
** of its own, exactly as written: SentencePiece then gives the pieces of
** a word-initial occurrence (its dummy-prefix space is the space before a
** word in running text), which is how a term inside a sentence is
** normally tokenised.  Only that form is constrained: no capitalised
** variant (a constraint cannot be one of two forms; a term at the start
** of a sentence keeps the glossary's case).  Dropped with a warning
** (mt_log): terms that encode to nothing, contain UNK, have more than
** MT_TR_MAX_TERM_TOKENS tokens, repeat an earlier term, or pass the
** search's limits (MT_BEAM_MAX_CONSTRAINTS terms,
** MT_BEAM_MAX_CONSTRAINT_TOKENS tokens per sentence); and, silently, a
** term whose ids lie inside a longer term's (met with it).  Term tokens are
** added to the shortlist.  Right-to-left models get the reversed ids.
**
** Cancellation: the callback is polled before every decoding step; a search
** it stops returns MT_ABORTED and no results.
**
** Memory: a worker keeps its graphs and buffers between calls (sized by the
** largest batch so far); a step allocates nothing once they have grown.
*/
#ifndef MT_TRANSLATOR_H
#define MT_TRANSLATOR_H
#include <stdbool.h>
#include <stdint.h>

#include "ensemble.h"
#include "model.h"
#include "mt.h"
#include "shortlist.h"

/* ------------------------------------------------ the scorer of a model */

typedef struct mt_model_scorer mt_model_scorer;

/* Precision of the decoder's cross-attention context and frozen
** self-attention history (engine mt_cache_precision): auto (what mtpe
** translate uses) = float16 values with int8 keys with int8 products,
** float16 with the other integer gemm types, float32 with float32; the
** others (`mtpe bench translate --kv-cache`): float32, float16, bfloat16
** (the history in float16, the context in bfloat16 pairs where the CPU
** multiplies them directly, else float16) and int8 (float16 values, int8
** keys). */
typedef enum mt_kv_cache {
    MT_KV_AUTO = 0,
    MT_KV_FLOAT32,
    MT_KV_FLOAT16,
    MT_KV_BFLOAT16,
    MT_KV_INT8
} mt_kv_cache;
/* "auto", "float32", "float16", "bfloat16" or "int8" -> *out;
** MT_ERR_INVALID otherwise. */
mt_status mt_kv_cache_parse(const char *s, mt_kv_cache *out);
/* The graphs' cache precision for kv with gemm type gt (the graph keeps
** bfloat16 contexts and int8 keys only where its device can:
** mt_graph_kv_bf16, mt_graph_kv_keys_i8). */
mt_cache_precision mt_kv_cache_resolve(mt_kv_cache kv, mt_gemm_type gt);

/* A scorer for model m (not owned; shared read-only with other threads);
** its graphs multiply by weight matrices as gemm_type says (engine/mt.h)
** and keep the decoder's caches as kv says (mt_kv_cache_resolve). */
mt_status mt_model_scorer_init(mt_model *m, mt_gemm_type gemm_type, mt_kv_cache kv,
                               mt_model_scorer **out);
void mt_model_scorer_free(mt_model_scorer *s); /* NULL is a no-op */
/* The sentences the next search may decode: sentence i, source stream k is
** seqs[i * n_src + k] (model order, EOS last).  The arrays must stay valid
** until the search ends. */
void mt_model_scorer_set_batch(mt_model_scorer *s, const mt_batch_seq *seqs, int32_t n, int n_src);
mt_scorer mt_model_scorer_get(mt_model_scorer *s);

typedef struct mt_model_scorer_stats {
    int64_t steps;       /* step calls                                     */
    int64_t rows;        /* rows computed (the live hypotheses)            */
    int64_t row_cols;    /* sum of rows x output columns of each step (the
                            shortlist's or the vocabulary's)               */
    int64_t purges;      /* times finished sentences were dropped          */
    int64_t adds;        /* times sentences joined a search (top-up)       */
    int64_t folds;       /* times the caches were frozen (mt_model_fold)   */
    int64_t topup_folds; /* ... of them with rows at different positions   */
    size_t graph_bytes;  /* workspace of the scorer's graphs: ...           */
    size_t enc_bytes;    /* ... of the two encoder graphs                   */
    size_t step_bytes;   /* ... of the two step graphs                      */
    size_t hist_bytes;   /* ... of the two graphs of the frozen caches      */
    size_t cache_values; /* the keys and values of the contexts and of the
                            frozen history at the end of the last search  */
    size_t cache_bytes;  /* ... and their bytes (--kv-cache: 2 or 4 each) */
} mt_model_scorer_stats;
mt_model_scorer_stats mt_model_scorer_get_stats(const mt_model_scorer *s);

/* ------------------------------------------------------- translation */

typedef struct mt_translate_params {
    int32_t beam_size;        /* -b (Marian's decoder default 12)                  */
    float normalize;          /* -n: score / L^normalize                          */
    float word_penalty;       /* --word-penalty                                    */
    float max_length_factor;  /* --max-length-factor (3)                           */
    int32_t max_length;       /* --max-length: longest source in tokens incl. EOS
                                 (1000; 0 = no limit)                            */
    bool max_length_crop;     /* --max-length-crop                                 */
    bool allow_unk;           /* --allow-unk                                       */
    bool allow_special;       /* --allow-special                                   */
    bool n_best;              /* return the whole n-best list (beam_size entries)  */
    bool word_scores;         /* fill mt_tr_hyp.word_scores                       */
    bool alignment;           /* fill mt_tr_hyp.align                             */
    bool scores;              /* valid scores also at beam 1 (else NAN there)      */
    bool pieces;              /* --no-spm-decode: text = pieces joined by spaces   */
    int32_t max_active;       /* mt_beam_params.max_active (0: all at once)        */
    mt_gemm_type gemm_type;   /* --gemm-type (default float32)                     */
    mt_kv_cache kv_cache;     /* --kv-cache (default auto)                         */
    bool length_per_sentence; /* length limit: the factor times each sentence's
                                 own source length instead of the longest of
                                 the batch (Marian's); always so with top-up  */
} mt_translate_params;
mt_translate_params mt_translate_default_params(void);

/* The longest term kept as a constraint, in target tokens. */
#define MT_TR_MAX_TERM_TOKENS 16

typedef struct mt_translator {
    const mt_ensemble *models; /* not owned                                  */
    const mt_shortlist *sl;    /* --shortlist, not owned; NULL = none        */
    mt_translate_params p;
    int32_t *suppress; /* ids never produced (besides UNK): special pieces  */
    int n_suppress;
} mt_translator;

/* models and sl must outlive the translator. */
mt_status mt_translator_init(const mt_ensemble *models, const mt_shortlist *sl,
                             const mt_translate_params *p, mt_translator **out);
void mt_translator_free(mt_translator *t); /* NULL is a no-op */

typedef struct mt_translate_worker mt_translate_worker;
mt_status mt_translate_worker_init(const mt_translator *t, mt_translate_worker **out);
void mt_translate_worker_free(mt_translate_worker *w); /* NULL is a no-op */
/* Counters of the first model's scorer since the worker was made. */
mt_model_scorer_stats mt_translate_worker_stats(const mt_translate_worker *w);

typedef struct mt_tr_input {
    const char *src[MT_MAX_STREAMS]; /* the text of each source stream (UTF-8)   */
    const char *prefix;              /* forced target prefix, or NULL             */
    const char *const *terms;        /* n_terms target terms the translation must
                                        contain (see "Terms" above), or NULL     */
    int n_terms;
} mt_tr_input;

/* An encoded input: ids in the model's order (reversed for right-to-left
** models except the final EOS), EOS included. */
typedef struct mt_tr_sentence {
    int32_t *ids[MT_MAX_STREAMS];
    int32_t len[MT_MAX_STREAMS];
    int32_t *prefix; /* target ids, no EOS (NULL: none)              */
    int32_t prefix_len;
    int32_t *term_ids;                         /* the kept terms' ids, one after the other,
                                                  model order (NULL: none)                    */
    int32_t term_len[MT_BEAM_MAX_CONSTRAINTS]; /* ids of each kept term */
    int32_t n_terms;                           /* kept terms             */
    bool skipped;                              /* longer than max_length: not translated       */
    bool cropped;                              /* cut to max_length                            */
    int32_t raw_len;                           /* stream 0 length before cropping               */
} mt_tr_sentence;

/* Encodes one input (see the header comment for max_length).  MT_ERR_INVALID
** for invalid UTF-8 or a prefix with a right-to-left model; MT_ERR_NOMEM. */
mt_status mt_tr_encode(const mt_translator *t, const mt_tr_input *in, mt_tr_sentence *out);
void mt_tr_sentence_clear(mt_tr_sentence *s); /* frees, zeroes */

/* One hypothesis.  length is L, the tokens including EOS (n_tokens + 1, or
** n_tokens when the length limit stopped it); word_scores has L entries and
** align L rows of src_len (the first source, EOS included). */
typedef struct mt_tr_hyp {
    char *text;      /* detokenised, left to right                        */
    int32_t *tokens; /* n_tokens target ids, model order, without EOS     */
    int32_t n_tokens;
    int32_t length;
    int32_t prefix_len; /* tokens of the forced prefix                     */
    bool eos;           /* false: stopped by the length limit              */
    float norm_score;   /* (path - wp * L) / L^normalize                   */
    float path_score;   /* the weighted sum of the models' log-probs       */
    float *word_scores; /* NULL unless asked for                          */
    float *align;       /* NULL unless asked for                          */
    int32_t src_len;
    bool terms_met; /* every kept term is in tokens (true without terms)  */
    /* unweighted score of each model (Marian's F0= F1= ...) */
    float model_scores[MT_MAX_MODELS];
} mt_tr_hyp;

typedef struct mt_tr_result {
    int n_hyps;      /* best first (n_best: beam_size of them, else 1)   */
    mt_tr_hyp *hyps; /* n_hyps of them                                   */
    bool skipped;    /* the source was longer than max_length            */
} mt_tr_result;

void mt_tr_result_clear(mt_tr_result *r); /* frees, zeroes */

/* Translates n encoded sentences in one search; out[0..n) receive the
** results (cleared first).  Returns MT_OK, MT_ABORTED (cancel returned
** true: out cleared), or an error (out cleared). */
mt_status mt_translate_encoded(mt_translate_worker *w, const mt_tr_sentence *s, int n,
                               mt_tr_result *out, bool (*cancel)(void *), void *cancel_user);
/* Encodes and translates n inputs in one search. */
mt_status mt_translate(mt_translate_worker *w, const mt_tr_input *in, int n, mt_tr_result *out,
                       bool (*cancel)(void *), void *cancel_user);

#endif
