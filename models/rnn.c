/*
** rnn.c: Marian's RNN encoder-decoder, `type: s2s` (src/models/s2s.h,
** src/rnn/ of Marian 1.12): a bidirectional deep-transition GRU encoder
** and a conditional deep-transition GRU decoder with additive attention,
** written against engine/mt.h with Marian's parameter names and shapes.
**
** Layout: batch-major, [B, S, D] (Marian computes [S, B, D]); a decoding
** step has N rows [N, D] (B * K, or beam 1 with mt_dec_state.row_sent).
** R = dim-rnn, E = dim-emb, C = 2R (the bidirectional context; R after
** unidirectional encoder layers).
**
** GRU cell "P" with input x and state s (Marian's GRU + gruOps):
**   xW = x [P_W | P_Wx]        [.., 3R]   layer-normalised with P_gamma1
**   sU = s [P_U | P_Ux]        [.., 3R]   layer-normalised with P_gamma2
**   b  = [P_b | P_bx]          [1, 3R]    (layer norm: gamma only, eps 1e-9)
**   r  = sigmoid(xW_r + sU_r + b_r),  z = sigmoid(xW_z + sU_z + b_z)
**   h  = tanh(xW_h + sU_h * r + b_h)          (a "final" cell:
**        tanh(xW_h + (sU_h + b_h) * r))
**   s' = (1 - z) h + z s;  where the mask is 0: s' = s
** A transition cell (2nd.. cell of a stack) has no input: no W, Wx, gamma1,
** xW = 0.  A stacked cell runs its cells in turn, each on the state the
** previous one gave.
**
** Encoder (enc-type bidirectional): embeddings encoder_Wemb[id] (no
** scaling, no positions); enc-depth layers forward (prefix encoder_bi,
** layer l > 1: encoder_bi_l<l>, cell j > 1 of a layer: _cell<j>) and as
** many backward (encoder_bi_r...), each layer reading the previous layer's
** outputs of its own direction; context = [forward | backward], [B, S, C].
** Padding keeps the state (the mask), so the backward pass starts from
** zeros at each sentence's last token.  enc-type alternating and
** bi-unidirectional, and skip connections: see encoder() (only the
** bidirectional type without skip is checked against Marian's outputs).
**
** Decoder: start state = tanh(LN(mean_s(ctx) decoder_ff_state_W,
** decoder_ff_state_gamma) + decoder_ff_state_b) (the mean over real
** positions), the same for every layer.  Layer 1 is the conditional cell:
**   s1 = GRU decoder_cell1(y, state_1)             y: previous embedding
**   attention: e_j = decoder_U_att . tanh(mc_j + LN(s1 decoder_W_comb_att,
**              decoder_att_gamma2)), mc = LN(ctx decoder_Wc_att,
**              decoder_att_gamma1) + decoder_b_att (once per sentence);
**              a = softmax(e + mask), c = sum_j a_j ctx_j
**   state_1' = GRU decoder_cell2..(c, s1) final   (then cells 3.. as
**              transitions)
** Layers l >= 2: decoder_l<l>_cell1 (input: the layer below's output),
** then transitions _cell2... (dec-cell-high-depth).  Output:
**   t = tanh(LN(y W0, g0) + b0 + LN(top W1, g1) + b1 + LN(c W2, g2) + b2)
**   (decoder_ff_logit_l1_*), logits = t decoder_Wemb^T + decoder_ff_logit_l2_b
** (tied embeddings; else decoder_ff_logit_l2_W [E, V]).  The decoder input
** at position 0 is the zero vector.  The alignment is the attention a.
**
** LSTM cells (enc-cell / dec-cell lstm, Marian's FastLSTM): U [R, 4R],
** W [in, 4R], b [1, 4R], gamma1/gamma2 [1, 4R]; gates f, i, c, o:
** c' = f c + i tanh(.), the output o tanh(c'); the mask keeps the cell
** state only.  The decoder's start state is also each layer's cell state.
** (Checked by gradients and Marian's parameter names only: no Marian-made
** LSTM fixture.)
**
** Not supported (MT_ERR_UNSUPPORTED from mt_rnn_check): cells other than
** gru and lstm, several source streams, Nematus-style layer normalisation; in
** training dropout-src / dropout-trg (dropout-rnn is not a key of
** mt_model_config: it is not read).
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define LN_EPS 1e-9f
#define MASK_NEG -99999999.0f

typedef struct rn {
    const mt_model_config *c;
    mt_params *p;
    mt_graph *g;
    bool check;   /* parameters must exist (loading) */
    int64_t r, e; /* dim-rnn, dim-emb */
    mt_status rc;
    char err[300];
} rn;

static void rn_init(rn *t, const mt_model_config *c, mt_params *p, mt_graph *g) {
    memset(t, 0, sizeof *t);
    t->c = c;
    t->p = p;
    t->g = g;
    t->r = c->dim_rnn;
    t->e = c->dim_emb;
}

static void fail(rn *t, mt_status rc, const char *msg, const char *name) {
    if (t->rc != MT_OK) return;
    t->rc = rc;
    snprintf(t->err, sizeof t->err, "s2s: parameter '%s' %s", name, msg);
}

static mt_status rn_finish(rn *t) {
    if (t->rc != MT_OK) return mt_seterr(t->rc, "%s", t->err);
    return mt_graph_status(t->g);
}

/* A parameter: get-or-create, or in check mode it must exist with shape. */
static mt_node *par(rn *t, const char *name, mt_shape shape, mt_init init) {
    if (t->check) {
        mt_tensor *v = mt_params_find(t->p, name);
        if (v == NULL) {
            fail(t, MT_ERR_NOTFOUND, "is missing", name);
            return NULL;
        }
        if (!mt_shape_eq(&v->shape, &shape)) {
            if (v->shape.ndim == 1 && shape.ndim == 2 && shape.dim[0] == 1 &&
                v->shape.dim[0] == shape.dim[1]) {
                v->shape = shape;
            } else {
                char s1[64], s2[64], msg[160];
                snprintf(msg, sizeof msg, "has shape %s, the model needs %s",
                         mt_shape_str(&v->shape, s1, sizeof s1),
                         mt_shape_str(&shape, s2, sizeof s2));
                fail(t, MT_ERR_FORMAT, msg, name);
                return NULL;
            }
        }
        if (v->dtype != MT_F32) {
            fail(t, MT_ERR_UNSUPPORTED, "is not float32", name);
            return NULL;
        }
        mt_params_set_trainable(t->p, name, true);
    }
    return mt_param(t->g, t->p, name, shape, init);
}

static mt_node *parf(rn *t, mt_shape shape, mt_init init, const char *fmt, const char *a) {
    char name[160];
    snprintf(name, sizeof name, fmt, a);
    return par(t, name, shape, init);
}

static int64_t dim_of(const mt_node *x, int axis) {
    mt_shape s = mt_node_shape(x);
    return s.dim[axis < 0 ? s.ndim + axis : axis];
}

/* x [.., D] as [rows, D] */
static mt_node *rows2(rn *t, mt_node *x, int64_t n, int64_t d) {
    return mt_reshape(t->g, x, mt_shape2(n, d));
}

/* ----------------------------------------------------------------- GRU */

/* A cell: GRU (G = 3 gates) or LSTM (G = 4). */
typedef struct gru {
    mt_node *w;       /* [in, G R] or NULL (transition cell) */
    mt_node *u;       /* [R, G R]                            */
    mt_node *b;       /* [1, G R]                            */
    mt_node *g1, *g2; /* layer-norm scales or NULL           */
    bool final;       /* GRU only                            */
    bool lstm;
} gru;

/* Marian's FastLSTM parameters (order: U, W, b, gamma1, gamma2). */
static gru lstm_params(rn *t, const char *prefix, int64_t in) {
    gru c;
    memset(&c, 0, sizeof c);
    int64_t r = t->r;
    mt_init gl = mt_init_glorot_uniform();
    c.lstm = true;
    c.u = parf(t, mt_shape2(r, 4 * r), gl, "%s_U", prefix);
    if (in > 0) c.w = parf(t, mt_shape2(in, 4 * r), gl, "%s_W", prefix);
    c.b = parf(t, mt_shape2(1, 4 * r), mt_init_zeros(), "%s_b", prefix);
    if (t->c->layer_normalization) {
        if (in > 0) c.g1 = parf(t, mt_shape2(1, 4 * r), mt_init_ones(), "%s_gamma1", prefix);
        c.g2 = parf(t, mt_shape2(1, 4 * r), mt_init_ones(), "%s_gamma2", prefix);
    }
    return c;
}

/* Marian's GRU parameters under prefix (order: U, Ux, W, Wx, b, bx,
** gamma1, gamma2); an LSTM's when lstm. */
static gru gru_params(rn *t, const char *prefix, int64_t in, bool final, bool lstm) {
    if (lstm) return lstm_params(t, prefix, in);
    gru c;
    memset(&c, 0, sizeof c);
    mt_graph *g = t->g;
    int64_t r = t->r;
    mt_init gl = mt_init_glorot_uniform();
    mt_node *u = parf(t, mt_shape2(r, 2 * r), gl, "%s_U", prefix);
    mt_node *ux = parf(t, mt_shape2(r, r), gl, "%s_Ux", prefix);
    mt_node *w = NULL, *wx = NULL;
    if (in > 0) {
        w = parf(t, mt_shape2(in, 2 * r), gl, "%s_W", prefix);
        wx = parf(t, mt_shape2(in, r), gl, "%s_Wx", prefix);
    }
    mt_node *b = parf(t, mt_shape2(1, 2 * r), mt_init_zeros(), "%s_b", prefix);
    mt_node *bx = parf(t, mt_shape2(1, r), mt_init_zeros(), "%s_bx", prefix);
    if (t->c->layer_normalization) {
        if (in > 0) c.g1 = parf(t, mt_shape2(1, 3 * r), mt_init_ones(), "%s_gamma1", prefix);
        c.g2 = parf(t, mt_shape2(1, 3 * r), mt_init_ones(), "%s_gamma2", prefix);
    }
    if (t->rc != MT_OK) return c;
    mt_node *uu[2] = {u, ux}, *bb[2] = {b, bx};
    c.u = mt_concat(g, uu, 2, 1);
    if (in > 0) {
        mt_node *ww[2] = {w, wx};
        c.w = mt_concat(g, ww, 2, 1);
    }
    c.b = mt_concat(g, bb, 2, 1);
    c.final = final;
    return c;
}

/* The input products of a cell for any leading shape: LN(x W, gamma1). */
static mt_node *gru_input(rn *t, const gru *c, mt_node *x) {
    if (c->w == NULL) return NULL;
    mt_node *xw = mt_matmul(t->g, x, c->w, false, false);
    if (c->g1) xw = mt_layer_norm(t->g, xw, c->g1, NULL, LN_EPS);
    return xw;
}

mt_node *mt_rnn_gru_step(mt_graph *g, mt_node *xw, mt_node *s, mt_node *u, mt_node *b,
                         mt_node *gamma2, bool final, mt_node *mask) {
    if (s == NULL || u == NULL || b == NULL) return NULL;
    int64_t r = dim_of(s, -1);
    mt_node *su = mt_matmul(g, s, u, false, false);
    if (gamma2) su = mt_layer_norm(g, su, gamma2, NULL, LN_EPS);
    mt_node *su_rz = mt_slice(g, su, 1, 0, 2 * r), *su_h = mt_slice(g, su, 1, 2 * r, r);
    mt_node *b_rz = mt_slice(g, b, 1, 0, 2 * r), *b_h = mt_slice(g, b, 1, 2 * r, r);
    mt_node *pre = xw ? mt_add(g, mt_slice(g, xw, 1, 0, 2 * r), su_rz) : su_rz;
    mt_node *rz = mt_sigmoid(g, mt_add(g, pre, b_rz));
    mt_node *gr = mt_slice(g, rz, 1, 0, r), *gz = mt_slice(g, rz, 1, r, r);
    mt_node *hp;
    if (final) {
        hp = mt_mul(g, mt_add(g, su_h, b_h), gr);
        if (xw) hp = mt_add(g, mt_slice(g, xw, 1, 2 * r, r), hp);
    } else {
        hp = mt_mul(g, su_h, gr);
        if (xw) hp = mt_add(g, mt_slice(g, xw, 1, 2 * r, r), hp);
        hp = mt_add(g, hp, b_h);
    }
    mt_node *h = mt_tanh(g, hp);
    mt_node *o = mt_add(g, h, mt_mul(g, gz, mt_sub(g, s, h))); /* (1 - z) h + z s */
    if (mask) o = mt_add(g, s, mt_mul(g, mask, mt_sub(g, o, s)));
    return o;
}

mt_node *mt_rnn_lstm_step(mt_graph *g, mt_node *xw, mt_node *h, mt_node *c, mt_node *u, mt_node *b,
                          mt_node *gamma2, mt_node *mask, mt_node **c_out) {
    *c_out = NULL;
    if (h == NULL || c == NULL || u == NULL || b == NULL) return NULL;
    int64_t r = dim_of(h, -1);
    mt_node *su = mt_matmul(g, h, u, false, false);
    if (gamma2) su = mt_layer_norm(g, su, gamma2, NULL, LN_EPS);
    mt_node *pre = mt_add(g, xw ? mt_add(g, xw, su) : su, b); /* [f | i | c | o] */
    mt_node *fi = mt_sigmoid(g, mt_slice(g, pre, 1, 0, 2 * r));
    mt_node *gc = mt_tanh(g, mt_slice(g, pre, 1, 2 * r, r));
    mt_node *go = mt_sigmoid(g, mt_slice(g, pre, 1, 3 * r, r));
    mt_node *cn =
        mt_add(g, mt_mul(g, mt_slice(g, fi, 1, 0, r), c), mt_mul(g, mt_slice(g, fi, 1, r, r), gc));
    if (mask) cn = mt_add(g, c, mt_mul(g, mask, mt_sub(g, cn, c)));
    *c_out = cn;
    return mt_mul(g, go, mt_tanh(g, cn)); /* not masked, as Marian's lstmOpsO */
}

/* One step of cell c: xw [N, G R] or NULL, s [N, R], m [N, 1] or NULL;
** an LSTM's cell state in and out through *cs. */
static mt_node *gru_state(rn *t, const gru *c, mt_node *xw, mt_node *s, mt_node **cs, mt_node *m) {
    if (c->lstm) return mt_rnn_lstm_step(t->g, xw, s, *cs, c->u, c->b, c->g2, m, cs);
    return mt_rnn_gru_step(t->g, xw, s, c->u, c->b, c->g2, c->final, m);
}

static bool enc_lstm(const mt_model_config *c) { return !strcmp(c->enc_cell, "lstm"); }
static bool dec_lstm(const mt_model_config *c) { return !strcmp(c->dec_cell, "lstm"); }
/* Decoder state slots per layer: the output, and an LSTM's cell state. */
static int dec_slots(const mt_model_config *c) { return dec_lstm(c) ? 2 : 1; }

/* ------------------------------------------------------------- encoder */

static mt_node *emb_table(rn *t, const char *prefix, int64_t vocab) {
    char name[64];
    if (t->c->tied_embeddings_src || t->c->tied_embeddings_all)
        snprintf(name, sizeof name, "Wemb");
    else
        snprintf(name, sizeof name, "%s_Wemb", prefix);
    float a = sqrtf(3.0f / (float)t->e); /* Marian: glorot, fan-out mode */
    return par(t, name, mt_shape2(vocab, t->e), mt_init_uniform(-a, a));
}

/* One encoder layer: enc-cell-depth cells over x [B, S, in] in one
** direction, mask [B, S] or NULL (Marian runs its unidirectional layers
** without one); cell j's prefix is pre, with "_cell<j>" when j > 1 or
** always_cell.  Returns [B, S, R]. */
static mt_node *enc_layer(rn *t, mt_node *x, mt_node *mask, int64_t b, int64_t len, const char *pre,
                          bool always_cell, bool backward) {
    mt_graph *g = t->g;
    int64_t r = t->r, in = dim_of(x, -1);
    int depth = t->c->enc_cell_depth;
    gru cells[16];
    for (int j = 1; j <= depth; j++) {
        char prefix[128];
        if (always_cell || j > 1)
            snprintf(prefix, sizeof prefix, "%s_cell%d", pre, j);
        else
            snprintf(prefix, sizeof prefix, "%s", pre);
        cells[j - 1] = gru_params(t, prefix, j == 1 ? in : 0, false, enc_lstm(t->c));
    }
    if (t->rc != MT_OK) return NULL;
    mt_node *outs_stack[256];
    mt_node **outs = len <= 256 ? outs_stack : mt_try_malloc(sizeof(mt_node *) * (size_t)len);
    if (outs == NULL) {
        fail(t, MT_ERR_NOMEM, "out of memory", "encoder");
        return NULL;
    }
    mt_node *xw = gru_input(t, &cells[0], x); /* [B, S, 3R] */
    mt_node *s = mt_constant(g, mt_shape2(b, r), 0.0f);
    mt_node *cs = s; /* an LSTM's cell state */
    for (int64_t i = 0; i < len; i++) {
        int64_t p = backward ? len - 1 - i : i;
        mt_node *xp = rows2(t, mt_slice(g, xw, 1, p, 1), b, dim_of(xw, -1));
        mt_node *mp = mask ? mt_slice(g, mask, 1, p, 1) : NULL; /* [B, 1] */
        s = gru_state(t, &cells[0], xp, s, &cs, mp);
        for (int j = 1; j < depth; j++)
            s = gru_state(t, &cells[j], NULL, s, &cs, mp);
        outs[p] = mt_reshape(g, s, mt_shape3(b, 1, r));
    }
    mt_node *y = len == 1 ? outs[0] : mt_concat(g, outs, (int)len, 1);
    if (outs != outs_stack) mt_free(outs);
    return y;
}

/* Marian's encoder (EncoderS2S::applyEncoderRNN).  enc-type bidirectional:
** enc-depth layers forward (encoder_bi, encoder_bi_l<l>...) and as many
** backward (encoder_bi_r...), each reading the layer below of its own
** stack; alternating: the same stacks with directions alternating per
** layer (the forward stack's first layer forward, the other's backward);
** any other enc-type (bi-unidirectional): one such bidirectional layer,
** then enc-depth - 1 forward layers encoder_l<l>_cell<j> over the joined
** context, without mask.  With skip, a layer after the first of a stack
** adds its input to its output.  Returns the context [B, S, 2R], or
** [B, S, R] after unidirectional layers. */
static mt_node *encoder(rn *t, mt_node *x, mt_node *mask, int64_t b, int64_t len) {
    const mt_model_config *c = t->c;
    bool alt = !strcmp(c->enc_type, "alternating");
    int first = alt || !strcmp(c->enc_type, "bidirectional") ? c->enc_depth : 1;
    mt_node *dir_out[2];
    for (int d = 0; d < 2; d++) { /* d = 1: the stack named _r */
        mt_node *in = x;
        for (int l = 1; l <= first && t->rc == MT_OK; l++) {
            char pre[96];
            snprintf(pre, sizeof pre, l > 1 ? "encoder_bi%s_l%d" : "encoder_bi%s", d ? "_r" : "",
                     l);
            bool backward = alt ? ((l % 2 == 0) != (d == 1)) : d == 1;
            mt_node *y = enc_layer(t, in, mask, b, len, pre, l > 1, backward);
            in = c->skip && l > 1 ? mt_add(t->g, y, in) : y;
        }
        dir_out[d] = in;
    }
    if (t->rc != MT_OK) return NULL;
    mt_node *ctx = mt_concat(t->g, dir_out, 2, 2);
    for (int l = first + 1; l <= c->enc_depth && t->rc == MT_OK; l++) {
        char pre[64];
        snprintf(pre, sizeof pre, "encoder_l%d", l);
        mt_node *y = enc_layer(t, ctx, NULL, b, len, pre, true, false);
        ctx = c->skip && l > first + 1 ? mt_add(t->g, y, ctx) : y;
    }
    return ctx;
}

/* The encoder's output size: 2R, or R after unidirectional layers. */
static int64_t ctx_dim(const mt_model_config *c) {
    bool bi = !strcmp(c->enc_type, "alternating") || !strcmp(c->enc_type, "bidirectional");
    return bi || c->enc_depth == 1 ? 2 * (int64_t)c->dim_rnn : c->dim_rnn;
}

static bool rnn_supported_cells(const mt_model_config *c) { return c->enc_cell_depth <= 16; }

mt_status mt_rnn_encode(const mt_model_config *c, mt_params *p, mt_graph *g, const mt_batch *bt,
                        mt_model_encoding *out) {
    memset(out, 0, sizeof *out);
    if (bt->n_src < 1) return mt_seterr(MT_ERR_INVALID, "s2s: the batch has no source");
    if (!rnn_supported_cells(c)) return mt_seterr(MT_ERR_UNSUPPORTED, "s2s: enc-cell-depth > 16");
    rn t;
    rn_init(&t, c, p, g);
    int64_t b = bt->size, len = bt->src_len[0];
    if (mt_graph_training(g) && c->dropout_src > 0.0f)
        return mt_seterr(MT_ERR_UNSUPPORTED, "s2s: dropout-src is not supported yet");
    mt_node *mask = mt_input(g, mt_shape2(b, len), bt->src_mask[0]);
    mt_node *ids = mt_input_i32(g, mt_shape2(b, len), bt->src_ids[0]);
    mt_node *x = mt_gather_rows(g, emb_table(&t, "encoder", c->dim_vocabs[0]), ids);
    mt_node *ctx = encoder(&t, x, mask, b, len);
    if (t.rc != MT_OK) return rn_finish(&t);
    out->batch = bt->size;
    out->n = 1;
    out->c[0].ctx = ctx;
    out->c[0].mask = mask;
    out->c[0].log_mask = mt_reshape(
        g, mt_scale(g, mt_add_scalar(g, mt_neg(g, mask), 1.0f), MASK_NEG), mt_shape4(b, 1, 1, len));
    out->c[0].len = (int32_t)len;
    return rn_finish(&t);
}

/* ------------------------------------------------------------- decoder */

typedef struct dec {
    gru base[16]; /* decoder_cell1.. (cell 2 takes the attention context) */
    gru high[MT_MODEL_MAX_LAYERS][16];
    mt_node *wa, *ua, *va, *ba, *ag1, *ag2; /* attention */
    mt_node *lw[3], *lb[3], *lg[3];         /* decoder_ff_logit_l1 */
    mt_node *out_w, *out_b;
    bool out_trans; /* out_w is [V, E] (tied) */
} dec;

static void dec_params(rn *t, dec *d) {
    const mt_model_config *c = t->c;
    int64_t r = t->r, e = t->e, cd = ctx_dim(c), v = c->dim_vocabs[c->n_vocabs - 1];
    char prefix[96];
    mt_init gl = mt_init_glorot_uniform();
    bool ln = c->layer_normalization;
    for (int i = 1; i <= c->dec_cell_base_depth; i++) {
        snprintf(prefix, sizeof prefix, "decoder_cell%d", i);
        int64_t in = i == 1 ? e : i == 2 ? cd : 0;
        d->base[i - 1] = gru_params(t, prefix, in, i > 1, dec_lstm(c));
        if (i == 1) { /* the attention, in Marian's order */
            d->wa = par(t, "decoder_W_comb_att", mt_shape2(r, cd), gl);
            d->ua = par(t, "decoder_Wc_att", mt_shape2(cd, cd), gl);
            d->va = par(t, "decoder_U_att", mt_shape2(cd, 1), gl);
            d->ba = par(t, "decoder_b_att", mt_shape2(1, cd), mt_init_zeros());
            if (ln) {
                d->ag1 = par(t, "decoder_att_gamma1", mt_shape2(1, cd), mt_init_ones());
                d->ag2 = par(t, "decoder_att_gamma2", mt_shape2(1, cd), mt_init_ones());
            }
        }
    }
    for (int l = 2; l <= c->dec_depth; l++)
        for (int j = 1; j <= c->dec_cell_high_depth; j++) {
            snprintf(prefix, sizeof prefix, "decoder_l%d_cell%d", l, j);
            d->high[l - 1][j - 1] = gru_params(t, prefix, j == 1 ? r : 0, false, dec_lstm(c));
        }
    int64_t ins[3] = {e, r, cd};
    for (int k = 0; k < 3; k++) {
        char name[96];
        snprintf(name, sizeof name, "decoder_ff_logit_l1_W%d", k);
        d->lw[k] = par(t, name, mt_shape2(ins[k], e), gl);
        snprintf(name, sizeof name, "decoder_ff_logit_l1_b%d", k);
        d->lb[k] = par(t, name, mt_shape2(1, e), mt_init_zeros());
        if (ln) {
            snprintf(name, sizeof name, "decoder_ff_logit_l1_gamma%d", k);
            d->lg[k] = par(t, name, mt_shape2(1, e), mt_init_ones());
        }
    }
    if (c->tied_embeddings || c->tied_embeddings_all) {
        d->out_w = emb_table(t, "decoder", v);
        d->out_trans = true;
    } else {
        d->out_w = par(t, "decoder_ff_logit_l2_W", mt_shape2(e, v), gl);
    }
    if (!c->output_omit_bias)
        d->out_b = par(t, "decoder_ff_logit_l2_b", mt_shape2(1, v), mt_init_zeros());
}

/* Marian's Dense with layer norm: LN(x W, gamma) + b (beta = b), or x W + b. */
static mt_node *dense_ln(rn *t, mt_node *x, mt_node *w, mt_node *b, mt_node *gamma) {
    mt_node *y = mt_matmul(t->g, x, w, false, false);
    if (gamma) return mt_layer_norm(t->g, y, gamma, b, LN_EPS);
    return mt_add(t->g, y, b);
}

/* Attention of rows s1 [N, R] over ctx/mctx [N, S, C], log mask [N, S]:
** the context [N, C]; *w gets the weights [N, S]. */
static mt_node *attend(rn *t, const dec *d, mt_node *s1, mt_node *ctx, mt_node *mctx,
                       mt_node *lmask, mt_node **w) {
    mt_graph *g = t->g;
    int64_t n = dim_of(s1, 0), len = dim_of(ctx, 1), cd = ctx_dim(t->c);
    mt_node *ms = mt_matmul(g, s1, d->wa, false, false);
    if (d->ag2) ms = mt_layer_norm(g, ms, d->ag2, NULL, LN_EPS);
    mt_node *a = mt_tanh(g, mt_add(g, mctx, mt_reshape(g, ms, mt_shape3(n, 1, cd))));
    mt_node *e = mt_reshape(g, mt_matmul(g, a, d->va, false, false), mt_shape2(n, len));
    mt_node *p = mt_softmax(g, mt_add(g, e, lmask));
    *w = p;
    mt_node *cx = mt_bmm(g, mt_reshape(g, p, mt_shape3(n, 1, len)), ctx, false, false, 1.0f);
    return mt_reshape(g, cx, mt_shape2(n, cd));
}

/* One decoder position for N rows: y [N, E] the previous embeddings,
** st[dec-depth * dec_slots] the states [N, R] (layer l's output at
** st[l k], an LSTM's cell state at st[l k + 1]; replaced by the new ones);
** returns the pre-output t [N, E] and the attention weights in *w. */
static mt_node *dec_cell(rn *t, const dec *d, mt_node *y, mt_node **st, mt_node *ctx, mt_node *mctx,
                         mt_node *lmask, mt_node **w) {
    mt_graph *g = t->g;
    const mt_model_config *c = t->c;
    int k = dec_slots(c);
    mt_node *cs = k > 1 ? st[1] : NULL;
    mt_node *s = gru_state(t, &d->base[0], gru_input(t, &d->base[0], y), st[0], &cs, NULL);
    mt_node *cx = attend(t, d, s, ctx, mctx, lmask, w);
    for (int i = 1; i < c->dec_cell_base_depth; i++)
        s = gru_state(t, &d->base[i], i == 1 ? gru_input(t, &d->base[i], cx) : NULL, s, &cs, NULL);
    st[0] = s;
    if (k > 1) st[1] = cs;
    mt_node *below = s;
    for (int l = 1; l < c->dec_depth; l++) {
        const gru *hc = d->high[l];
        cs = k > 1 ? st[l * k + 1] : NULL;
        mt_node *h = gru_state(t, &hc[0], gru_input(t, &hc[0], below), st[l * k], &cs, NULL);
        for (int j = 1; j < c->dec_cell_high_depth; j++)
            h = gru_state(t, &hc[j], NULL, h, &cs, NULL);
        st[l * k] = h;
        if (k > 1) st[l * k + 1] = cs;
        below = c->skip ? mt_add(g, h, below) : h; /* Marian's skip: from layer 2 on */
    }
    mt_node *sum = dense_ln(t, y, d->lw[0], d->lb[0], d->lg[0]);
    sum = mt_add(g, sum, dense_ln(t, below, d->lw[1], d->lb[1], d->lg[1]));
    sum = mt_add(g, sum, dense_ln(t, cx, d->lw[2], d->lb[2], d->lg[2]));
    return mt_tanh(g, sum);
}

static mt_node *logits_of(rn *t, const dec *d, mt_node *x, mt_node *shortlist) {
    mt_node *b = d->out_b && shortlist ? mt_index_select(t->g, d->out_b, 1, shortlist) : d->out_b;
    return mt_matmul_cols(t->g, x, d->out_w, d->out_trans, shortlist, b);
}

/* The attention's projection of the contexts: LN(ctx Ua, gamma1) + ba. */
static mt_node *map_context(rn *t, const dec *d, mt_node *ctx) {
    return dense_ln(t, ctx, d->ua, d->ba, d->ag1);
}

/* The decoder's start state [B, R] from the encoding. */
static mt_node *start_state(rn *t, const mt_model_context *cx) {
    mt_graph *g = t->g;
    int64_t b = dim_of(cx->ctx, 0), len = dim_of(cx->ctx, 1), cd = ctx_dim(t->c);
    mt_node *m = mt_reshape(g, cx->mask, mt_shape3(b, len, 1));
    mt_node *mean = mt_div(g, mt_sum(g, mt_mul(g, cx->ctx, m), 1), mt_sum(g, m, 1));
    bool ln = t->c->layer_normalization;
    mt_node *w = par(t, "decoder_ff_state_W", mt_shape2(cd, t->r), mt_init_glorot_uniform());
    mt_node *bb = par(t, "decoder_ff_state_b", mt_shape2(1, t->r), mt_init_zeros());
    mt_node *gm = ln ? par(t, "decoder_ff_state_gamma", mt_shape2(1, t->r), mt_init_ones()) : NULL;
    if (t->rc != MT_OK) return NULL;
    return mt_tanh(g, dense_ln(t, rows2(t, mean, b, cd), w, bb, gm));
}

mt_status mt_rnn_decode_all(const mt_model_config *c, mt_params *p, mt_graph *g,
                            const mt_model_encoding *enc, const mt_batch *bt, mt_node **logits,
                            mt_node **align) {
    *logits = NULL;
    if (align) *align = NULL;
    if (bt->trg_len < 1 || bt->trg_ids == NULL)
        return mt_seterr(MT_ERR_INVALID, "s2s: the batch has no target");
    if (mt_graph_training(g) && c->dropout_trg > 0.0f)
        return mt_seterr(MT_ERR_UNSUPPORTED, "s2s: dropout-trg is not supported yet");
    rn t;
    rn_init(&t, c, p, g);
    int64_t b = bt->size, len = bt->trg_len, e = t.e, slen = enc->c[0].len;
    dec *dp = mt_try_calloc(1, sizeof *dp);
    if (dp == NULL) return mt_seterr(MT_ERR_NOMEM, "s2s: out of memory");
    dec_params(&t, dp);
    mt_node *start = start_state(&t, &enc->c[0]);
    mt_node **outs = mt_try_malloc(sizeof(mt_node *) * (size_t)(2 * len));
    if (outs == NULL || t.rc != MT_OK) {
        mt_free(outs);
        mt_free(dp);
        return t.rc != MT_OK ? rn_finish(&t) : mt_seterr(MT_ERR_NOMEM, "s2s: out of memory");
    }
    mt_node **als = outs + len;
    mt_node *ids = mt_input_i32(g, mt_shape2(b, len), bt->trg_ids);
    mt_node *emb = mt_gather_rows(g, emb_table(&t, "decoder", c->dim_vocabs[c->n_vocabs - 1]), ids);
    mt_node *ctx = enc->c[0].ctx, *mctx = map_context(&t, dp, ctx);
    mt_node *lmask = mt_reshape(g, enc->c[0].log_mask, mt_shape2(b, slen));
    mt_node *st[2 * MT_MODEL_MAX_LAYERS]; /* Marian: output and cell state = start */
    for (int l = 0; l < c->dec_depth * dec_slots(c); l++)
        st[l] = start;
    for (int64_t i = 0; i < len && t.rc == MT_OK; i++) {
        mt_node *y = i == 0 ? mt_constant(g, mt_shape2(b, e), 0.0f)
                            : rows2(&t, mt_slice(g, emb, 1, i - 1, 1), b, e);
        mt_node *w;
        mt_node *h = dec_cell(&t, dp, y, st, ctx, mctx, lmask, &w);
        outs[i] = mt_reshape(g, h, mt_shape3(b, 1, e));
        als[i] = mt_reshape(g, w, mt_shape3(b, 1, slen));
    }
    mt_status rc = rn_finish(&t);
    if (rc == MT_OK) {
        mt_node *hs = len == 1 ? outs[0] : mt_concat(g, outs, (int)len, 1);
        *logits = logits_of(&t, dp, hs, NULL);
        if (align) *align = len == 1 ? als[0] : mt_concat(g, als, (int)len, 1);
        rc = rn_finish(&t);
    }
    mt_free(outs);
    mt_free(dp);
    if (rc != MT_OK) {
        *logits = NULL;
        if (align) *align = NULL;
    }
    return rc;
}

/* ------------------------------------------------------------ step API */

/* State layout:
**   rows    the state of decoder layer l in slot l, [N, R]
**   fixed   0: ctx [B, S, C]; 1: the attention's projection of it
**           [B, S, C]; 2: the log mask [B, S]; 3: the start state [B, R]
**           (a row at its first position, mt_dec_state.row_pos, starts
**           from its sentence's) */
enum { F_CTX = 0, F_MCTX, F_MASK, F_START, N_FIXED };

mt_status mt_rnn_start(const mt_model_config *c, mt_params *p, mt_graph *g,
                       const mt_model_encoding *enc, mt_dec_state *out) {
    memset(out, 0, sizeof *out);
    if (c->dec_depth * dec_slots(c) > MT_DEC_STATE_SLOTS)
        return mt_seterr(MT_ERR_UNSUPPORTED, "s2s: dec-depth %d is too deep", c->dec_depth);
    rn t;
    rn_init(&t, c, p, g);
    dec *dp = mt_try_calloc(1, sizeof *dp);
    if (dp == NULL) return mt_seterr(MT_ERR_NOMEM, "s2s: out of memory");
    dec_params(&t, dp);
    mt_node *start = start_state(&t, &enc->c[0]);
    int64_t b = enc->batch, slen = enc->c[0].len;
    if (t.rc == MT_OK) {
        out->batch = enc->batch;
        out->beam = 1;
        out->pos = 0;
        out->n_ctx = 1;
        out->n_rows = c->dec_depth * dec_slots(c);
        for (int l = 0; l < out->n_rows; l++)
            out->rows[l] = start;
        out->n_fixed = N_FIXED;
        out->fixed[F_CTX] = enc->c[0].ctx;
        out->fixed[F_MCTX] = map_context(&t, dp, enc->c[0].ctx);
        out->fixed[F_MASK] = mt_reshape(g, enc->c[0].log_mask, mt_shape2(b, slen));
        out->fixed[F_START] = start;
    }
    mt_free(dp);
    return rn_finish(&t);
}

/* A per-row input [n, 1]: 1 where q[r] > 0. */
static mt_node *keep_rows(rn *t, const int32_t *q, int64_t n) {
    float *buf = mt_try_malloc(sizeof(float) * (size_t)n);
    if (buf == NULL) {
        fail(t, MT_ERR_NOMEM, "out of memory", "step");
        return NULL;
    }
    for (int64_t r = 0; r < n; r++)
        buf[r] = q[r] > 0 ? 1.0f : 0.0f;
    mt_node *v = mt_input(t->g, mt_shape2(n, 1), buf);
    mt_free(buf);
    return v;
}

mt_status mt_rnn_step(const mt_model_config *c, mt_params *p, mt_graph *g,
                      const mt_model_encoding *enc, const mt_dec_state *in, const int32_t *prev,
                      mt_dec_state *next, mt_dec_step *out) {
    (void)enc;
    memset(out, 0, sizeof *out);
    int64_t n = (int64_t)in->batch * in->beam, e = c->dim_emb;
    if (in->pos > 0 && prev == NULL)
        return mt_seterr(MT_ERR_INVALID, "s2s: step %d needs the previous tokens", (int)in->pos);
    if (in->row_ids && mt_node_shape(in->row_ids).dim[0] != n)
        return mt_seterr(MT_ERR_INVALID, "s2s: %lld row ids for %lld rows",
                         (long long)mt_node_shape(in->row_ids).dim[0], (long long)n);
    if (in->row_sent && (in->beam != 1 || mt_node_shape(in->row_sent).dim[0] != n))
        return mt_seterr(MT_ERR_INVALID, "s2s: sentences of %lld rows for %lld rows of beam %d",
                         (long long)mt_node_shape(in->row_sent).dim[0], (long long)n,
                         (int)in->beam);
    if (in->hist_len > 0) return mt_seterr(MT_ERR_INVALID, "s2s: the state has no history");
    const int32_t *q = in->row_pos;
    bool any_first = false;
    for (int64_t r = 0; q && r < n; r++) {
        if (q[r] < 0 || q[r] > in->pos)
            return mt_seterr(MT_ERR_INVALID, "s2s: row %lld at position %d of %d", (long long)r,
                             (int)q[r], (int)in->pos);
        any_first = any_first || q[r] == 0;
    }
    rn t;
    rn_init(&t, c, p, g);
    dec *dp = mt_try_calloc(1, sizeof *dp);
    if (dp == NULL) return mt_seterr(MT_ERR_NOMEM, "s2s: out of memory");
    dec_params(&t, dp);
    mt_dec_state st = *in;
    /* each row's sentence in the per-sentence nodes */
    mt_node *sent = in->row_sent;
    if (sent == NULL && in->beam > 1) {
        int32_t *ids = mt_try_malloc(sizeof(int32_t) * (size_t)n);
        if (ids == NULL) fail(&t, MT_ERR_NOMEM, "out of memory", "step");
        for (int64_t r = 0; ids && r < n; r++)
            ids[r] = (int32_t)(r / in->beam);
        if (ids) sent = mt_input_i32(g, mt_shape1(n), ids);
        mt_free(ids);
    }
    mt_node *fx[N_FIXED];
    for (int k = 0; k < N_FIXED; k++)
        fx[k] = sent ? mt_index_select(g, in->fixed[k], 0, sent) : in->fixed[k];
    mt_node *s[2 * MT_MODEL_MAX_LAYERS];
    mt_node *keep = q && any_first ? keep_rows(&t, q, n) : NULL;
    for (int l = 0; l < in->n_rows && t.rc == MT_OK; l++) {
        s[l] = in->row_ids ? mt_index_select(g, in->rows[l], 0, in->row_ids) : in->rows[l];
        if (keep) /* rows at their first position start from their sentence's state */
            s[l] = mt_add(g, fx[F_START], mt_mul(g, keep, mt_sub(g, s[l], fx[F_START])));
    }
    mt_node *y;
    if (in->pos == 0) {
        y = mt_constant(g, mt_shape2(n, e), 0.0f);
    } else {
        mt_node *ids = mt_input_i32(g, mt_shape1(n), prev);
        y = mt_gather_rows(g, emb_table(&t, "decoder", c->dim_vocabs[c->n_vocabs - 1]), ids);
        if (keep) y = mt_mul(g, y, keep);
    }
    mt_node *w = NULL, *h = NULL;
    if (t.rc == MT_OK) h = dec_cell(&t, dp, y, s, fx[F_CTX], fx[F_MCTX], fx[F_MASK], &w);
    mt_node *logits = t.rc == MT_OK ? logits_of(&t, dp, h, in->shortlist) : NULL;
    mt_free(dp);
    if (logits) {
        bool raw = in->logits_only || in->argmax || in->topk > 0;
        out->logprobs = raw ? logits : mt_log_softmax(g, logits);
    }
    if (!in->no_align) out->align = w;
    for (int l = 0; l < in->n_rows; l++)
        st.rows[l] = s[l];
    st.pos = in->pos + 1;
    mt_dec_state_end_step(&st);
    mt_status rc = rn_finish(&t);
    if (rc != MT_OK) {
        memset(out, 0, sizeof *out);
        return rc;
    }
    *next = st;
    return MT_OK;
}

/* x [B, S, ...] padded along axis 1 to len with value. */
static mt_node *pad_len(mt_graph *g, mt_node *x, int64_t len, float value) {
    mt_shape sh = mt_node_shape(x);
    if (sh.dim[1] >= len) return x;
    sh.dim[1] = len - sh.dim[1];
    mt_node *parts[2] = {x, mt_constant(g, sh, value)};
    return mt_concat(g, parts, 2, 1);
}

mt_status mt_rnn_append(const mt_model_config *c, mt_graph *g, const mt_dec_state *in,
                        const mt_dec_state *add, unsigned parts, mt_dec_state *out) {
    mt_dec_state st = *in;
    st.batch = in->batch + add->batch;
    st.row_pos = NULL;
    if (parts & MT_DEC_FIXED) {
        int64_t la = dim_of(in->fixed[F_CTX], 1), lb = dim_of(add->fixed[F_CTX], 1);
        int64_t len = la > lb ? la : lb;
        for (int k = 0; k < N_FIXED; k++) {
            float v = k == F_MASK ? MASK_NEG : 0.0f;
            mt_node *x2[2] = {in->fixed[k], add->fixed[k]};
            if (k != F_START) {
                x2[0] = pad_len(g, x2[0], len, v);
                x2[1] = pad_len(g, x2[1], len, v);
            }
            st.fixed[k] = mt_concat(g, x2, 2, 0);
        }
    }
    if (parts & MT_DEC_ROWS) { /* placeholders: a row at position 0 starts from F_START */
        int64_t extra = (int64_t)add->batch * in->beam;
        for (int l = 0; l < in->n_rows; l++) {
            mt_node *x2[2] = {in->rows[l],
                              mt_constant(g, mt_shape2(extra, dim_of(in->rows[l], 1)), 0.0f)};
            st.rows[l] = mt_concat(g, x2, 2, 0);
        }
    }
    mt_status rc = mt_graph_status(g);
    if (rc == MT_OK) *out = st;
    return rc;
}

mt_status mt_rnn_trim(const mt_model_config *c, mt_graph *g, const mt_dec_state *in, int32_t n,
                      mt_dec_state *out) {
    (void)c;
    (void)g;
    *out = *in;
    out->pos = in->pos - n; /* the states do not grow with the positions */
    return MT_OK;
}

mt_status mt_rnn_fit_contexts(const mt_model_config *c, mt_graph *g, const mt_dec_state *in,
                              const int32_t *len, mt_dec_state *out) {
    (void)c;
    mt_dec_state st = *in;
    if (dim_of(in->fixed[F_CTX], 1) > len[0])
        for (int k = 0; k < N_FIXED; k++)
            if (k != F_START) st.fixed[k] = mt_slice(g, in->fixed[k], 1, 0, len[0]);
    mt_status rc = mt_graph_status(g);
    if (rc == MT_OK) *out = st;
    return rc;
}

bool mt_rnn_can_fold(const mt_model_config *c, const mt_params *p) {
    (void)c;
    (void)p;
    return false;
}

mt_status mt_rnn_fold(const mt_model_config *c, mt_graph *g, const mt_dec_state *in, bool freeze,
                      mt_dec_state *out) {
    (void)c;
    (void)g;
    (void)in;
    (void)freeze;
    (void)out;
    return mt_seterr(MT_ERR_UNSUPPORTED, "s2s model: no growing caches to fold");
}

/* ---------------------------------------------------------- parameters */

mt_status mt_rnn_touch_params(const mt_model_config *c, mt_params *p, mt_device *dev, bool check) {
    mt_graph_params gp = mt_graph_default_params();
    gp.workspace_bytes = 1 << 16;
    gp.node_arena_bytes = 1 << 16;
    gp.training = false;
    gp.memoize = false;
    mt_graph *g = NULL;
    mt_status rc = mt_graph_init(dev, gp, &g);
    if (rc != MT_OK) return rc;
    int32_t one = 1;
    float m1 = 1.0f;
    rn t;
    rn_init(&t, c, p, g);
    t.check = check;
    /* the encoder's parameters, then the decoder's, in Marian's order */
    mt_node *x = mt_gather_rows(g, emb_table(&t, "encoder", c->dim_vocabs[0]),
                                mt_input_i32(g, mt_shape2(1, 1), &one));
    mt_node *mask = mt_input(g, mt_shape2(1, 1), &m1);
    mt_node *ctx = encoder(&t, x, mask, 1, 1);
    if (t.rc == MT_OK) {
        mt_model_context cx = {.ctx = ctx, .mask = mask, .len = 1};
        start_state(&t, &cx);
        (void)emb_table(&t, "decoder", c->dim_vocabs[c->n_vocabs - 1]);
        dec *dp = mt_try_calloc(1, sizeof *dp);
        if (dp == NULL)
            fail(&t, MT_ERR_NOMEM, "out of memory", "decoder");
        else
            dec_params(&t, dp);
        mt_free(dp);
    }
    rc = rn_finish(&t);
    mt_graph_free(g);
    return rc;
}

mt_status mt_rnn_check(const mt_model_config *c) {
    for (int i = 0; i < 2; i++) {
        const char *cell = i ? c->dec_cell : c->enc_cell;
        if (strcmp(cell, "gru") && strcmp(cell, "lstm"))
            return mt_seterr(MT_ERR_UNSUPPORTED, "s2s: %s '%s': only gru and lstm",
                             i ? "dec-cell" : "enc-cell", cell);
    }
    if (strcmp(c->enc_type, "bidirectional") && strcmp(c->enc_type, "alternating") &&
        strcmp(c->enc_type, "bi-unidirectional"))
        return mt_seterr(MT_ERR_UNSUPPORTED,
                         "s2s: enc-type '%s' (bidirectional, alternating, bi-unidirectional)",
                         c->enc_type);
    if (c->dim_rnn < 1 || c->enc_cell_depth < 1 || c->enc_cell_depth > 16 ||
        c->dec_cell_base_depth < 1 || c->dec_cell_base_depth > 16 || c->dec_cell_high_depth < 1 ||
        c->dec_cell_high_depth > 16)
        return mt_seterr(MT_ERR_INVALID,
                         "s2s: dim-rnn %d, enc-cell-depth %d, dec-cell-base-depth %d, "
                         "dec-cell-high-depth %d (depths 1..16)",
                         c->dim_rnn, c->enc_cell_depth, c->dec_cell_base_depth,
                         c->dec_cell_high_depth);
    return MT_OK;
}
