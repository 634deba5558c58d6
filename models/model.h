/*
** model.h: encoder-decoder models (transformers, multi-source transformers
** and Marian's RNN type s2s) written once against engine/mt.h.  Parameter names, shapes and
** config keys are Marian's, so models load in both directions.
**
** One definition serves training, scoring and translation: the loss is the
** decoder run over the shifted reference (teacher forcing); translation uses
** encode + start + step (see the step API below).
**
** Token order: batches and decoder inputs are in the model's order.  For a
** right-to-left model (config.right_left) the data layer reverses every
** stream except its final EOS, as Marian's corpus reader does (corpus.h,
** `mtpe score`); the model itself never reverses anything, so per-word
** scores, alignments and decoded hypotheses come out in the model's order
** and a translation is reversed back before detokenisation.
**
** Threads: a loaded model may be shared read-only by several threads, each
** with its own mt_graph (the params are not modified by inference builds).
*/
#ifndef MT_MODEL_H
#define MT_MODEL_H
#include <stdbool.h>
#include <stdint.h>

#include "batch.h"
#include "mt.h"

#define MT_MODEL_MAX_LAYERS 64 /* enc-depth, dec-depth, transformer-tied-layers */

/* Architecture keys (the ones Marian stores in special:model.yml) plus the
** training-time ones a model needs to build its graph (dropouts). */
typedef struct mt_model_config {
    char type[32]; /* "transformer", "multi-transformer", "s2s" ...      */
    int n_vocabs;  /* number of entries in dim_vocabs (streams + target) */
    int dim_vocabs[MT_MAX_STREAMS + 1];
    int dim_emb;
    int enc_depth, dec_depth;
    int heads;               /* transformer-heads                                 */
    int dim_ffn;             /* transformer-dim-ffn                               */
    int dec_dim_ffn;         /* transformer-decoder-dim-ffn (0 = dim_ffn)         */
    int ffn_depth;           /* transformer-ffn-depth                             */
    int dec_ffn_depth;       /* transformer-decoder-ffn-depth (0 = ffn_depth)     */
    char ffn_activation[16]; /* relu | swish | gelu | sigmoid                     */
    char preprocess[16];     /* transformer-preprocess, e.g. "" or "n"            */
    char postprocess[16];    /* transformer-postprocess, e.g. "dan"               */
    char postprocess_emb[16];
    char postprocess_top[16];
    bool tied_embeddings, tied_embeddings_src, tied_embeddings_all;
    char dec_autoreg[32]; /* self-attention | average-attention | rnn          */
    int dim_aan, aan_depth;
    char aan_activation[16];
    bool aan_nogate;
    bool right_left;
    char guided_alignment_layer[16]; /* "last" or a 1-based layer number          */
    bool output_omit_bias;
    bool train_position_embeddings;
    /* training only (not part of special:model.yml) */
    float dropout_src, dropout_trg;
    float transformer_dropout, transformer_dropout_attention, transformer_dropout_ffn;
    /* decoding only (not part of special:model.yml): decode pre-norm
    ** self-attention decoders as Marian 1.12 does (models/transformer.c,
    ** self_step): from position 1 on, keys and values from the raw layer
    ** inputs, which training never saw; false (the default): from the
    ** normalised inputs, exactly as trained */
    bool marian_prenorm_cache;
    /* ---- further special:model.yml keys (kept so that a model saved by mtpe
    ** carries what it was loaded with; see mt_model_config_to_yaml) */
    char version[64];    /* "version": Marian build string ("" = fresh model) */
    bool no_projection;  /* transformer-no-projection                         */
    bool rnn_projection; /* transformer-rnn-projection                        */
    int n_tied_layers;   /* transformer-tied-layers (0 = none)                */
    int tied_layers[MT_MODEL_MAX_LAYERS];
    /* s2s (RNN) keys */
    int dim_rnn;
    char enc_cell[16], enc_type[32], dec_cell[16];
    int enc_cell_depth, dec_cell_base_depth, dec_cell_high_depth;
    bool skip, layer_normalization;
} mt_model_config;

/* Marian's command-line defaults for the keys above, except type, which is
** "transformer" (Marian's default "amun" is an RNN type mtpe does not have;
** its "s2s" is, rnn.c). */
mt_model_config mt_model_config_default(void);
/* Overrides the fields whose keys occur in yaml (a model.yml or config);
** other keys are ignored.  MT_ERR_FORMAT for unparsable YAML or a value of
** the wrong kind (the message names the key). */
mt_status mt_model_config_from_yaml(const char *yaml, mt_model_config *c);
/* The model.yml text Marian writes for these keys (caller mt_free()s it):
** the 1.12 key set in Marian's (alphabetical) order, yaml-cpp formatting.
** NULL when out of memory. */
char *mt_model_config_to_yaml(const mt_model_config *c);
/* Checks that mtpe can build this architecture: MT_ERR_UNSUPPORTED naming
** the key for a feature it does not implement, MT_ERR_INVALID for
** inconsistent values (heads not dividing dim-emb, empty dim-vocabs, ...). */
mt_status mt_model_config_check(const mt_model_config *c);

typedef struct mt_model mt_model;

/* A fresh model with Marian's initialisation: every parameter the
** architecture uses is created here (glorot-uniform weights, zero biases,
** unit layer-norm scales; embeddings glorot-uniform in Marian's fan-out mode,
** U(-sqrt(3/d), sqrt(3/d)) for dim-emb d), in a fixed order from seed.  The config's
** dim_vocabs must be set (> 0). */
mt_status mt_model_create(const mt_model_config *c, mt_device *dev, uint64_t seed, mt_model **out);
/* Loads a Marian .npz/.bin; the config comes from its special:model.yml.
** Every parameter the architecture needs must be present with its shape
** (MT_ERR_NOTFOUND / MT_ERR_FORMAT naming the parameter and the file);
** float16 items are converted to float32; 1-D vectors where Marian has
** [1, d] are accepted.  Items the architecture does not use are kept (and
** saved back) but ignored. */
mt_status mt_model_load(const char *path, mt_device *dev, mt_model **out);
/* Writes parameters + special:model.yml (atomic, Marian's layout: float32
** items sorted by name, then the config). */
mt_status mt_model_save(mt_model *m, const char *path);
void mt_model_free(mt_model *m);
const mt_model_config *mt_model_get_config(const mt_model *m);
mt_params *mt_model_params(mt_model *m);
/* Copies the training-only fields (dropouts) of c into the model, e.g. to
** fine-tune a loaded model with dropout. */
void mt_model_set_training_config(mt_model *m, const mt_model_config *c);
/* Sets mt_model_config.marian_prenorm_cache (before any scorer of m exists). */
void mt_model_set_marian_prenorm_cache(mt_model *m, bool on);
/* Vocabulary size of the target (the output layer) and of source stream s. */
int32_t mt_model_trg_vocab(const mt_model *m);
int32_t mt_model_src_vocab(const mt_model *m, int s);
/* Number of source streams the model reads (1 for a transformer). */
int mt_model_n_src(const mt_model *m);

/* Teacher-forced pass over a batch with targets. */
typedef struct mt_model_loss {
    mt_node *cost;         /* scalar: sum over target tokens of the (label-smoothed)
                              cross-entropy: the training objective (ce-sum)      */
    mt_node *logprob_sent; /* [B]: sum of log p(reference token) per sentence     */
    mt_node *logprob_word; /* [B, T]: log p of each reference token (0 at padding) */
    /* appended: */
    mt_node *align;   /* [B, T, S]: head-0 attention of the guided-alignment
                         layer's cross-attention over the first source     */
    mt_status status; /* MT_OK, or why the fields are NULL (graph error or
                         out of host memory; mt_errmsg() has the detail)    */
} mt_model_loss;
/* Builds the loss graph; g decides training (dropout) vs inference.  Fields
** are NULL on failure (sticky graph error, or .status). */
mt_model_loss mt_model_build_loss(mt_model *m, mt_graph *g, const mt_batch *b,
                                  float label_smoothing);

/* --------------------------------------------------------------- step API
** Incremental decoding, Marian's EncoderBase/DecoderBase split:
**
**   mt_model_encode   once per batch: one context (+ masks) per source stream
**   mt_model_start    the decoder's start state for B sentences, beam 1
**   mt_model_step     one target position for every row of the state: takes
**                     the previous token of each row, gives log-probabilities
**                     of the next one and the new state
**   mt_model_select   beam bookkeeping: the rows of the state that survive,
**                     in their new order, with a new beam width
**
** Rows are batch-major: a state with beam K has B * K rows and row b * K + k
** is hypothesis k of sentence b; every sentence has K rows.  Or, with
** mt_dec_state.row_sent, any number of rows per sentence (beam 1, each row
** naming its sentence): a beam search's live hypotheses without padding.
** States are plain values (node pointers); nothing is allocated on the host
** while building (the graphs' memory is reused after their first rounds).
**
** Two ways to use it:
**   one graph    everything on one graph that lives for the whole batch (do
**                not clear it between steps); call mt_graph_forward after
**                each step.  Memory grows with every step: for tests and
**                short outputs.
**   bounded      (models/scorer.c) encode + start on an "encoder" graph,
**                each step on its own graph, alternating between two: a step
**                imports the state of the previous one (mt_dec_state_import:
**                leaves viewing the computed values of the other graph), is
**                built and run, and the graph of the step before the
**                previous one can be cleared.  Dropping finished sentences
**                (mt_model_reorder with MT_DEC_FIXED) goes to the other one of
**                two encoder graphs in the same way.  Memory is bounded by
**                one step (the caches of the current length) plus the
**                encoding, and nothing is allocated in steady state.
**
** Ensembles: one encoding and one state per model, log-probs combined by
** the caller.  A decoder reads every context of the encoding, so another
** encoder (RNN, second source) combines with the same decoder. */

typedef struct mt_model_context {
    mt_node *ctx;      /* [B, S, D] encoder output                               */
    mt_node *mask;     /* [B, S]    1 = token, 0 = padding                       */
    mt_node *log_mask; /* [B, 1, 1, S] additive attention mask: 0 / -99999999    */
    int32_t len;       /* S                                                       */
    /* Inference on a padded batch: the encoder ran on the real positions only
    ** (transformer.c, "packed encoding"); ctx is packed gathered back. */
    mt_node *packed; /* [T, D] ctx at the T real positions, or NULL            */
    mt_node *unpack; /* i32 [B * S] row of packed for each position of ctx     */
} mt_model_context;

typedef struct mt_model_encoding {
    int32_t batch; /* B */
    int n;         /* contexts (source streams) */
    mt_model_context c[MT_MAX_STREAMS];
} mt_model_encoding;

#define MT_DEC_STATE_SLOTS 128

typedef struct mt_dec_state {
    int32_t batch; /* B sentences                                                 */
    int32_t beam;  /* K rows per sentence                                         */
    int32_t pos;   /* target tokens consumed so far (position of the next input)  */
    int n_rows;    /* per-row nodes [B * K, ...], reordered by mt_model_select;
                      entries may be NULL (nothing cached yet)                   */
    mt_node *rows[MT_DEC_STATE_SLOTS];
    int n_fixed; /* per-sentence nodes [B, ...] (cached projections of the
                    encoder contexts), shared by all rows of a sentence       */
    mt_node *fixed[MT_DEC_STATE_SLOTS];
    /* Optional output shortlist, set by the caller: i32 [V'] target ids in
    ** increasing order; log-probs are then over these V' ids only. */
    mt_node *shortlist;
    /* appended: */
    int n_ctx;        /* source contexts the fixed nodes hold (set by start)   */
    bool logits_only; /* set by the caller: the step gives the logits instead
                         of their log-softmax (same argmax per row; WNMT 2018
                         sec. 2.3: beam 1 needs no softmax)                   */
    bool no_align;    /* set by the caller: the step gives no alignment
                         (mt_dec_step.align NULL), so no attention weights
                         are kept (the fused attention serves every layer) */
    /* Set by the caller for top-up batching (rows at different positions):
    ** NULL = every row at pos; else [batch * beam] the target tokens row r
    ** has consumed, <= pos.  The state then caches pos positions per row
    ** and row r's are its last row_pos[r] ones (the others are padding,
    ** masked); mt_model_step reads it, mt_model_append/trim keep the layout.
    ** Not copied by mt_dec_state_import. */
    const int32_t *row_pos;
    /* Set by the caller: a selection of the per-row nodes still to be made,
    ** which mt_model_step applies in the same copy that appends this step's
    ** keys and values (instead of mt_model_reorder + mt_model_trim, two more
    ** copies of every cache): row r of the state is row row_ids[r] of the
    ** stored nodes (row_ids: i32 [batch * beam] node of the step's graph;
    ** NULL: row r), and their first row_off cached positions are dropped (pos
    ** already counts without them).  Not copied by mt_dec_state_import. */
    mt_node *row_ids;
    int32_t row_off;
    /* Frozen history of the caches (mt_model_fold), so that a step copies
    ** only the positions since: hist[k] [N0, ..., hist_len, ...] holds the
    ** first hist_len positions of row slot k (NULL: none) in the row order
    ** of the fold, and rows[k] the later ones (NULL when there are none).
    ** Row r of the state reads row hist_ids[r] of the history (i32
    ** [batch * beam] node of the step's graph, after this step's selection;
    ** set by the caller like row_ids, required when hist_len > 0; not
    ** copied by mt_dec_state_import).  Rows at their own positions
    ** (row_pos) read their own length of it (hist_lens); rows appended by
    ** mt_model_append name any history row with length 0.  Not with a
    ** step's row_off, mt_model_trim or mt_model_reorder of the rows. */
    int32_t hist_len;
    mt_node *hist[MT_DEC_STATE_SLOTS];
    mt_node *hist_ids;
    /* With row_pos and a history: [batch * beam] the positions of row r in
    ** the history (packed from the left by mt_model_fold: its first
    ** hist_lens[r] <= hist_len; 0 for a row newer than the fold, whose
    ** positions since are its last row_pos[r]).  Set by the caller; not
    ** copied by mt_dec_state_import. */
    const int32_t *hist_lens;
    /* Optional, set by the caller for a step: [n_ctx * batch * beam] the
    ** source length of row r's sentence in context j at [j batch beam + r]
    ** (<= the context's padded length): the fused cross-attention reads
    ** that many positions instead of masking the rest.  Not copied by
    ** mt_dec_state_import. */
    const int32_t *ctx_lens;
    /* Rows not grouped K per sentence (a beam search's live hypotheses as
    ** they are, without padding every sentence to the widest beam): beam 1,
    ** batch = the number of rows, and row r reads sentence row_sent[r] of
    ** the per-sentence nodes (i32 [batch] node of the step's graph, set by
    ** the caller for each step; NULL: row r reads sentence r / beam).  Not
    ** copied by mt_dec_state_import. */
    mt_node *row_sent;
    /* Set by the caller for a step that needs only each row's argmax of the
    ** logits + argmax_skip (host [V'], 0 or -inf per column, or NULL):
    ** where the model can take it from the output layer's integer GEMM
    ** (mt_matmul_cols_argmax) the step gives mt_dec_step.argmax instead of
    ** the logits; else it behaves as with logits_only.  Not copied by
    ** mt_dec_state_import. */
    bool argmax;
    const float *argmax_skip;
    /* Set by the caller (> 0) for a step that needs only each row's topk
    ** best log-softmax values and their columns: where the model can take
    ** them from the output layer's integer GEMM (mt_matmul_cols_topk) the
    ** step gives mt_dec_step.topk instead of the logits; else it behaves as
    ** with logits_only.  Not copied by mt_dec_state_import. */
    int32_t topk;
} mt_dec_state;

typedef struct mt_dec_step {
    mt_node *logprobs; /* [B * K, V] log-softmax of the next token ([B*K, V'] with a
                          shortlist); NULL when argmax is given                   */
    mt_node *align;    /* [B * K, S0] head-0 cross-attention weights of the
                          guided-alignment layer over the first context            */
    mt_node *argmax;   /* mt_dec_state.argmax: i32 [B * K] each row's argmax (-1:
                          no column above -inf), or NULL: use logprobs             */
    mt_node *topk;     /* mt_dec_state.topk: f32 [B * K, 2 topk] (mt_matmul_cols_topk),
                          or NULL: use logprobs                                   */
} mt_dec_step;

mt_status mt_model_encode(mt_model *m, mt_graph *g, const mt_batch *b, mt_model_encoding *out);
/* The start state holds everything later steps need from the encoding (the
** projected contexts and their masks). */
mt_status mt_model_start(mt_model *m, mt_graph *g, const mt_model_encoding *enc, mt_dec_state *out);
/* prev: B * K token ids (the previous output of each row); ignored at
** position 0, where the decoder input is the zero vector as in Marian.
** enc may be NULL (the state has what the step needs); when given, its
** batch must be the state's. */
mt_status mt_model_step(mt_model *m, mt_graph *g, const mt_model_encoding *enc,
                        const mt_dec_state *in, const int32_t *prev, mt_dec_state *next,
                        mt_dec_step *out);
/* New state of B * beam rows: new row i is old row rows[i], which must be a
** row of the same sentence (rows[i] / in->beam == i / beam), else
** MT_ERR_INVALID. */
mt_status mt_model_select(mt_model *m, mt_graph *g, const mt_dec_state *in, const int32_t *rows,
                          int32_t beam, mt_dec_state *out);

/* Clears the fields of st that ask for something in one step only (the
** caller's requests: logits_only, argmax, topk, no_align; the row maps:
** row_pos, row_ids/row_off, hist_ids/hist_lens, ctx_lens, row_sent): what a
** model's step returns as the next state. */
void mt_dec_state_end_step(mt_dec_state *st);

/* Parts of a state, for mt_dec_state_import and mt_model_reorder. */
enum {
    MT_DEC_ROWS = 1,  /* the per-row nodes (caches)                              */
    MT_DEC_FIXED = 2, /* the per-sentence nodes (projected contexts, masks)      */
};
/* General selection: a state of n_sent sentences; new sentence b is old
** sentence sent[b] (sent NULL: all of them, in order; n_sent = in->batch).
** MT_DEC_FIXED selects the per-sentence nodes (skipped when sent is NULL);
** MT_DEC_ROWS the rows: new row i is old row rows[i], which must belong to
** old sentence sent[i / beam] (rows: n_sent * beam entries).  out->batch
** becomes n_sent, out->beam beam (rows: else unchanged).  Nodes of the part
** not asked for are copied as they are, so a FIXED-only result has rows of
** the old layout: combine it with a ROWS result (built from the same in and
** arguments), as the bounded scheme above does across two graphs.
** MT_ERR_INVALID for ids out of range. */
mt_status mt_model_reorder(mt_model *m, mt_graph *g, const mt_dec_state *in, const int32_t *sent,
                           int32_t n_sent, const int32_t *rows, int32_t beam, unsigned parts,
                           mt_dec_state *out);
/* A copy of in whose nodes (of the parts asked for; others copied as they
** are) are leaves of g viewing the values of in's nodes (mt_tensor_node),
** which must have been computed on their graph and stay valid (that graph
** not cleared) until g has been run.  The shortlist is not copied (NULL). */
mt_status mt_dec_state_import(mt_graph *g, const mt_dec_state *in, unsigned parts,
                              mt_dec_state *out);

/* Top-up batching (sentences joining a running search; the fused-softmax
** paper's sec. 3.2).  mt_model_append puts the sentences of add (a start
** state from mt_model_start: beam 1, pos 0) after those of in:
**   MT_DEC_FIXED  the per-sentence nodes; contexts of different lengths are
**                 padded to the longer one (keys/values zero, masked);
**   MT_DEC_ROWS   in->beam rows per added sentence, with pos cached
**                 positions of padding (set their row_pos to 0; with a
**                 frozen history only the positions since it are added,
**                 and the caller gives the new rows history ids).
** out->batch = in->batch + add->batch.  As with mt_model_reorder, the two
** parts may be built on different graphs and combined.  Results of the old
** and the new rows equal what they would be without the padding (masked
** positions have weight 0).
** mt_model_trim drops the first n cached positions of every row, padding
** for all of them (n <= pos - row_pos[r] for every row r, checked when
** in->row_pos is set); out->pos = in->pos - n (rows become NULL at 0). */
mt_status mt_model_append(mt_model *m, mt_graph *g, const mt_dec_state *in, const mt_dec_state *add,
                          unsigned parts, mt_dec_state *out);
mt_status mt_model_trim(mt_model *m, mt_graph *g, const mt_dec_state *in, int32_t n,
                        mt_dec_state *out);
/* The per-sentence contexts of in (MT_DEC_FIXED: the projected keys and
** values and the mask of each source) cut to len[j] positions for context
** j, where they are longer: the rest must be padding for every sentence
** (a top-up search's contexts are padded to the longest source that ever
** joined; once its sentence is gone the positions past the longest live
** source are work for nothing).  out: as in, with those nodes of g. */
mt_status mt_model_fit_contexts(mt_model *m, mt_graph *g, const mt_dec_state *in,
                                const int32_t *len, mt_dec_state *out);

/* Whether the model's state has caches that grow with every position
** (transformer self-attention), which mt_model_fold can freeze. */
bool mt_model_can_fold(const mt_model *m);
/* The whole cache of every row slot, concat(index_select(hist, 0,
** hist_ids), rows) along the positions, made the frozen history (freeze:
** rows become NULL, hist_len = pos, hist_ids is then the identity) or put
** back into the rows (!freeze: no history left).  in has no pending
** row_off; a pending selection row_ids (batch x beam of them, hist_ids
** then per selected row; not with row_pos) folds those rows, as the fold
** of every row followed by the selection.  With freeze and in->row_pos (rows at their own
** positions, each with row_pos[r] positions in all, and hist_lens of them
** in the history when there is one), each row's positions are packed from
** the left (mt_pack_rows): out->pos = hist_len = the largest row_pos[r],
** and the caller's hist_lens become row_pos.  The result's caches are nodes of g (computed
** there, also when nothing is concatenated), so in may view the graphs of
** the previous step and fold.  MT_ERR_UNSUPPORTED for a model without
** growing caches. */
mt_status mt_model_fold(mt_model *m, mt_graph *g, const mt_dec_state *in, bool freeze,
                        mt_dec_state *out);

/* ------------------------------------------------------------ internal
** For the architecture files (transformer.c, rnn.c); encdec.c
** dispatches to them by config type.  Not for callers outside models/. */

/* Builds the whole transformer once on a one-token batch (on a scratch
** graph on dev).  check = false: parameters missing from p are created with
** their initialisation, in build order (fresh models).  check = true: every
** parameter must already exist in p with its shape (MT_ERR_NOTFOUND /
** MT_ERR_FORMAT naming the first that does not; 1-D [d] is accepted for
** [1, d] and reshaped). */
mt_status mt_transformer_touch_params(const mt_model_config *c, mt_params *p, mt_device *dev,
                                      bool check);
mt_status mt_transformer_encode(const mt_model_config *c, mt_params *p, mt_graph *g,
                                const mt_batch *b, mt_model_encoding *out);
mt_status mt_transformer_start(const mt_model_config *c, mt_params *p, mt_graph *g,
                               const mt_model_encoding *enc, mt_dec_state *out);
mt_status mt_transformer_step(const mt_model_config *c, mt_params *p, mt_graph *g,
                              const mt_model_encoding *enc, const mt_dec_state *in,
                              const int32_t *prev, mt_dec_state *next, mt_dec_step *out);
mt_status mt_transformer_append(const mt_model_config *c, mt_graph *g, const mt_dec_state *in,
                                const mt_dec_state *add, unsigned parts, mt_dec_state *out);
mt_status mt_transformer_trim(const mt_model_config *c, mt_graph *g, const mt_dec_state *in,
                              int32_t n, mt_dec_state *out);
/* mt_model_can_fold and mt_model_fold. */
bool mt_transformer_can_fold(const mt_model_config *c, const mt_params *p);
mt_status mt_transformer_fit_contexts(const mt_model_config *c, mt_graph *g, const mt_dec_state *in,
                                      const int32_t *len, mt_dec_state *out);
mt_status mt_transformer_fold(const mt_model_config *c, mt_graph *g, const mt_dec_state *in,
                              bool freeze, mt_dec_state *out);
/* Teacher forcing: logits [B, T, V] for the targets of b, and the alignment
** weights [B, T, S0]. */
mt_status mt_transformer_decode_all(const mt_model_config *c, mt_params *p, mt_graph *g,
                                    const mt_model_encoding *enc, const mt_batch *b,
                                    mt_node **logits, mt_node **align);

/* The same functions for Marian's RNN encoder-decoder, type s2s (rnn.c);
** mt_rnn_check: MT_ERR_UNSUPPORTED / MT_ERR_INVALID for the s2s keys it
** cannot build (mt_model_config_check calls it for type s2s). */
mt_status mt_rnn_check(const mt_model_config *c);
/* One step of Marian's GRU cell (its gruOps kernel) from the products:
** xw [N, 3R] the input's (already layer-normalised; NULL for a transition
** cell, which has no input), s [N, R], u [R, 3R] ([U | Ux]), b [1, 3R]
** ([b | bx]), gamma2 [1, 3R] the layer norm of s u (NULL: none), final as
** Marian's second decoder cell (candidate tanh(xw_h + (su_h + b_h) r)),
** mask [N, 1] (0: the row keeps s; NULL: none).  Composed of graph ops, so
** it has their gradients.  NULL when an input is NULL. */
mt_node *mt_rnn_gru_step(mt_graph *g, mt_node *xw, mt_node *s, mt_node *u, mt_node *b,
                         mt_node *gamma2, bool final, mt_node *mask);
/* One step of Marian's LSTM cell (FastLSTM: lstmOpsC, lstmOpsO), gates
** [f | i | c | o]: xw [N, 4R] or NULL, h and c [N, R] the output and cell
** state, u [R, 4R], b [1, 4R], gamma2 [1, 4R] or NULL, mask [N, 1] or
** NULL (0: the row keeps its cell state; the output is not masked, as in
** Marian).  Returns the new output; the new cell state in *c_out. */
mt_node *mt_rnn_lstm_step(mt_graph *g, mt_node *xw, mt_node *h, mt_node *c, mt_node *u, mt_node *b,
                          mt_node *gamma2, mt_node *mask, mt_node **c_out);
mt_status mt_rnn_touch_params(const mt_model_config *c, mt_params *p, mt_device *dev, bool check);
mt_status mt_rnn_encode(const mt_model_config *c, mt_params *p, mt_graph *g, const mt_batch *b,
                        mt_model_encoding *out);
mt_status mt_rnn_start(const mt_model_config *c, mt_params *p, mt_graph *g,
                       const mt_model_encoding *enc, mt_dec_state *out);
mt_status mt_rnn_step(const mt_model_config *c, mt_params *p, mt_graph *g,
                      const mt_model_encoding *enc, const mt_dec_state *in, const int32_t *prev,
                      mt_dec_state *next, mt_dec_step *out);
mt_status mt_rnn_decode_all(const mt_model_config *c, mt_params *p, mt_graph *g,
                            const mt_model_encoding *enc, const mt_batch *b, mt_node **logits,
                            mt_node **align);
mt_status mt_rnn_append(const mt_model_config *c, mt_graph *g, const mt_dec_state *in,
                        const mt_dec_state *add, unsigned parts, mt_dec_state *out);
mt_status mt_rnn_trim(const mt_model_config *c, mt_graph *g, const mt_dec_state *in, int32_t n,
                      mt_dec_state *out);
mt_status mt_rnn_fit_contexts(const mt_model_config *c, mt_graph *g, const mt_dec_state *in,
                              const int32_t *len, mt_dec_state *out);
bool mt_rnn_can_fold(const mt_model_config *c, const mt_params *p);
mt_status mt_rnn_fold(const mt_model_config *c, mt_graph *g, const mt_dec_state *in, bool freeze,
                      mt_dec_state *out);

#endif /* MT_MODEL_H */
