/*
** encdec.c: the model object: configuration (special:model.yml keys),
** creation, loading and saving in Marian's layout, the training/scoring
** loss and the step API, dispatched to the architecture by config type.
**
** special:model.yml (reference/marian-compat.md §1.3): a YAML mapping of
** Marian's architecture keys, stored in the model file as an int8 item of
** the text plus a NUL (engine/npz.c, engine/bin.c read and write it).
** Marian 1.12 writes exactly the keys of mt_model_config_to_yaml() below, in
** std::map (alphabetical) order, with yaml-cpp's block formatting:
**
**   key: value            scalars; booleans true/false; "" for empty text
**   key:                  sequences (dim-vocabs, transformer-tied-layers,
**     - 4000              input-types); an empty one is written
**     - 4000                key:
**                             []
**   version: v1.12.0 ...  last line, no newline after it
**
** Architectures: "transformer", "multi-transformer" (two encoders
** encoder1/encoder2 over source streams 0 and 1, stacked cross-attention)
** and "shared-multi-transformer" (both encoders named encoder), in
** transformer.c; "s2s" (Marian's RNN encoder-decoder) in rnn.c.  The other
** RNN types (amun, nematus) are MT_ERR_UNSUPPORTED; they would plug into
** the archs[] table (one row per type).
*/
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* An architecture: the functions of one model family (model.h, internal). */
typedef struct arch {
    const char *type;
    int n_src; /* source streams */
    mt_status (*touch_params)(const mt_model_config *c, mt_params *p, mt_device *dev, bool check);
    mt_status (*encode)(const mt_model_config *c, mt_params *p, mt_graph *g, const mt_batch *b,
                        mt_model_encoding *out);
    mt_status (*start)(const mt_model_config *c, mt_params *p, mt_graph *g,
                       const mt_model_encoding *enc, mt_dec_state *out);
    mt_status (*step)(const mt_model_config *c, mt_params *p, mt_graph *g,
                      const mt_model_encoding *enc, const mt_dec_state *in, const int32_t *prev,
                      mt_dec_state *next, mt_dec_step *out);
    mt_status (*decode_all)(const mt_model_config *c, mt_params *p, mt_graph *g,
                            const mt_model_encoding *enc, const mt_batch *b, mt_node **logits,
                            mt_node **align);
    mt_status (*append)(const mt_model_config *c, mt_graph *g, const mt_dec_state *in,
                        const mt_dec_state *add, unsigned parts, mt_dec_state *out);
    mt_status (*trim)(const mt_model_config *c, mt_graph *g, const mt_dec_state *in, int32_t n,
                      mt_dec_state *out);
    mt_status (*fit_contexts)(const mt_model_config *c, mt_graph *g, const mt_dec_state *in,
                              const int32_t *len, mt_dec_state *out);
    bool (*can_fold)(const mt_model_config *c, const mt_params *p);
    mt_status (*fold)(const mt_model_config *c, mt_graph *g, const mt_dec_state *in, bool freeze,
                      mt_dec_state *out);
} arch;

#define TRANSFORMER_FNS                                                                            \
    mt_transformer_touch_params, mt_transformer_encode, mt_transformer_start, mt_transformer_step, \
        mt_transformer_decode_all, mt_transformer_append, mt_transformer_trim,                     \
        mt_transformer_fit_contexts, mt_transformer_can_fold, mt_transformer_fold
#define RNN_FNS                                                                                    \
    mt_rnn_touch_params, mt_rnn_encode, mt_rnn_start, mt_rnn_step, mt_rnn_decode_all,              \
        mt_rnn_append, mt_rnn_trim, mt_rnn_fit_contexts, mt_rnn_can_fold, mt_rnn_fold
static const arch archs[] = {
    {"transformer", 1, TRANSFORMER_FNS},
    {"s2s", 1, RNN_FNS},
    {"multi-transformer", 2, TRANSFORMER_FNS},
    {"shared-multi-transformer", 2, TRANSFORMER_FNS},
};
#undef TRANSFORMER_FNS
#undef RNN_FNS

static const arch *find_arch(const char *type) {
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (!strcmp(archs[i].type, type)) return &archs[i];
    return NULL;
}

struct mt_model {
    mt_model_config cfg;
    const arch *arch;
    mt_params *params;
    mt_device *dev;
};

/* ------------------------------------------------------------ config */

mt_model_config mt_model_config_default(void) {
    mt_model_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.type, sizeof c.type, "transformer");
    c.n_vocabs = 2;
    c.dim_emb = 512;
    c.enc_depth = 1;
    c.dec_depth = 1;
    c.heads = 8;
    c.dim_ffn = 2048;
    c.ffn_depth = 2;
    snprintf(c.ffn_activation, sizeof c.ffn_activation, "swish");
    snprintf(c.postprocess, sizeof c.postprocess, "dan");
    snprintf(c.postprocess_emb, sizeof c.postprocess_emb, "d");
    snprintf(c.dec_autoreg, sizeof c.dec_autoreg, "self-attention");
    c.dim_aan = 2048;
    c.aan_depth = 2;
    snprintf(c.aan_activation, sizeof c.aan_activation, "swish");
    snprintf(c.guided_alignment_layer, sizeof c.guided_alignment_layer, "last");
    c.dim_rnn = 1024;
    snprintf(c.enc_cell, sizeof c.enc_cell, "gru");
    snprintf(c.enc_type, sizeof c.enc_type, "bidirectional");
    snprintf(c.dec_cell, sizeof c.dec_cell, "gru");
    c.enc_cell_depth = 1;
    c.dec_cell_base_depth = 2;
    c.dec_cell_high_depth = 1;
    return c;
}

typedef enum key_kind { K_INT = 0, K_BOOL, K_STR, K_FLOAT } key_kind;

typedef struct key_def {
    const char *key;
    key_kind kind;
    size_t off, size;
} key_def;

#define F(field) offsetof(mt_model_config, field), sizeof(((mt_model_config *)0)->field)
static const key_def scalar_keys[] = {
    {"type", K_STR, F(type)},
    {"dim-emb", K_INT, F(dim_emb)},
    {"enc-depth", K_INT, F(enc_depth)},
    {"dec-depth", K_INT, F(dec_depth)},
    {"transformer-heads", K_INT, F(heads)},
    {"transformer-dim-ffn", K_INT, F(dim_ffn)},
    {"transformer-decoder-dim-ffn", K_INT, F(dec_dim_ffn)},
    {"transformer-ffn-depth", K_INT, F(ffn_depth)},
    {"transformer-decoder-ffn-depth", K_INT, F(dec_ffn_depth)},
    {"transformer-ffn-activation", K_STR, F(ffn_activation)},
    {"transformer-preprocess", K_STR, F(preprocess)},
    {"transformer-postprocess", K_STR, F(postprocess)},
    {"transformer-postprocess-emb", K_STR, F(postprocess_emb)},
    {"transformer-postprocess-top", K_STR, F(postprocess_top)},
    {"tied-embeddings", K_BOOL, F(tied_embeddings)},
    {"tied-embeddings-src", K_BOOL, F(tied_embeddings_src)},
    {"tied-embeddings-all", K_BOOL, F(tied_embeddings_all)},
    {"transformer-decoder-autoreg", K_STR, F(dec_autoreg)},
    {"transformer-dim-aan", K_INT, F(dim_aan)},
    {"transformer-aan-depth", K_INT, F(aan_depth)},
    {"transformer-aan-activation", K_STR, F(aan_activation)},
    {"transformer-aan-nogate", K_BOOL, F(aan_nogate)},
    {"right-left", K_BOOL, F(right_left)},
    {"transformer-guided-alignment-layer", K_STR, F(guided_alignment_layer)},
    {"output-omit-bias", K_BOOL, F(output_omit_bias)},
    {"transformer-train-position-embeddings", K_BOOL, F(train_position_embeddings)},
    {"dropout-src", K_FLOAT, F(dropout_src)},
    {"dropout-trg", K_FLOAT, F(dropout_trg)},
    {"transformer-dropout", K_FLOAT, F(transformer_dropout)},
    {"transformer-dropout-attention", K_FLOAT, F(transformer_dropout_attention)},
    {"transformer-dropout-ffn", K_FLOAT, F(transformer_dropout_ffn)},
    {"version", K_STR, F(version)},
    {"transformer-no-projection", K_BOOL, F(no_projection)},
    {"transformer-rnn-projection", K_BOOL, F(rnn_projection)},
    {"dim-rnn", K_INT, F(dim_rnn)},
    {"enc-cell", K_STR, F(enc_cell)},
    {"enc-type", K_STR, F(enc_type)},
    {"dec-cell", K_STR, F(dec_cell)},
    {"enc-cell-depth", K_INT, F(enc_cell_depth)},
    {"dec-cell-base-depth", K_INT, F(dec_cell_base_depth)},
    {"dec-cell-high-depth", K_INT, F(dec_cell_high_depth)},
    {"skip", K_BOOL, F(skip)},
    {"layer-normalization", K_BOOL, F(layer_normalization)},
};
#undef F

static bool parse_bool(const char *s, bool *out) {
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes",
                                      "YES",  "on",   "On",   "ON",  "1"};
    static const char *const no[] = {"false", "False", "FALSE", "no",  "No",
                                     "NO",    "off",   "Off",   "OFF", "0"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (!strcmp(s, yes[i])) {
            *out = true;
            return true;
        }
        if (!strcmp(s, no[i])) {
            *out = false;
            return true;
        }
    }
    return false;
}

/* 0: *out holds the value; 1: not an integer; 2: an integer outside the
** range of int (what the config holds). */
static int parse_int(const char *s, int *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0') return 1;
    if (errno == ERANGE || v < -2147483647LL || v > 2147483647LL) return 2;
    *out = (int)v;
    return 0;
}

static mt_status int_error(int e, const char *key, int entry, const char *v) {
    char what[160];
    if (entry > 0)
        snprintf(what, sizeof what, "'%s' entry %d (%s)", key, entry, v);
    else
        snprintf(what, sizeof what, "'%s: %s'", key, v);
    if (e == 2)
        return mt_seterr(MT_ERR_FORMAT,
                         "model config: %s is out of range (-2147483647..2147483647)", what);
    return mt_seterr(MT_ERR_FORMAT, "model config: %s is not an integer", what);
}

static mt_status set_scalar(mt_model_config *c, const key_def *k, const char *v) {
    char *dst = (char *)c + k->off;
    switch (k->kind) {
    case K_INT: {
        int e = parse_int(v, (int *)(void *)dst);
        return e ? int_error(e, k->key, 0, v) : MT_OK;
    }
    case K_BOOL:
        if (!parse_bool(v, (bool *)(void *)dst))
            return mt_seterr(MT_ERR_FORMAT, "model config: '%s: %s' is not a boolean", k->key, v);
        return MT_OK;
    case K_FLOAT: {
        char *end = NULL;
        double d = strtod(v, &end);
        if (end == v || *end != '\0')
            return mt_seterr(MT_ERR_FORMAT, "model config: '%s: %s' is not a number", k->key, v);
        *(float *)(void *)dst = (float)d;
        return MT_OK;
    }
    case K_STR:
        if (strlen(v) >= k->size)
            return mt_seterr(MT_ERR_FORMAT, "model config: '%s' value '%s' is too long", k->key, v);
        memcpy(dst, v, strlen(v) + 1);
        return MT_OK;
    }
    return MT_OK;
}

/* A sequence of integers (dim-vocabs, transformer-tied-layers). */
static mt_status get_ints(const mt_yaml *y, const char *key, int *dst, int cap, int *n) {
    int len = mt_yaml_seq_len(y, key);
    if (len < 0) {
        /* a scalar: one value (a config file may write "dim-vocabs: 8000") */
        const char *v = mt_yaml_get(y, key);
        if (v == NULL) return mt_seterr(MT_ERR_FORMAT, "model config: '%s' is not a list", key);
        if (cap < 1) return int_error(1, key, 0, v);
        int e = parse_int(v, &dst[0]);
        if (e) return int_error(e, key, 0, v);
        *n = 1;
        return MT_OK;
    }
    if (len > cap)
        return mt_seterr(MT_ERR_FORMAT, "model config: '%s' has %d entries, at most %d", key, len,
                         cap);
    for (int i = 0; i < len; i++) {
        const char *v = mt_yaml_seq_item(y, key, i);
        int e = v == NULL ? 1 : parse_int(v, &dst[i]);
        if (e) return int_error(e, key, i + 1, v ? v : "");
    }
    *n = len;
    return MT_OK;
}

static bool yaml_has(const mt_yaml *y, const char *key) {
    for (int i = 0; i < mt_yaml_count(y); i++)
        if (!strcmp(mt_yaml_key(y, i), key)) return true;
    return false;
}

mt_status mt_model_config_from_yaml(const char *yaml, mt_model_config *c) {
    mt_yaml *y = NULL;
    mt_status rc = mt_yaml_parse(yaml, &y);
    if (rc != MT_OK) return rc;
    mt_model_config n = *c;
    for (size_t i = 0; i < sizeof scalar_keys / sizeof scalar_keys[0] && rc == MT_OK; i++) {
        const key_def *k = &scalar_keys[i];
        if (!yaml_has(y, k->key)) continue;
        const char *v = mt_yaml_get(y, k->key);
        if (v == NULL) {
            rc = mt_seterr(MT_ERR_FORMAT, "model config: '%s' is not a single value", k->key);
            break;
        }
        rc = set_scalar(&n, k, v);
    }
    if (rc == MT_OK && yaml_has(y, "dim-vocabs"))
        rc = get_ints(y, "dim-vocabs", n.dim_vocabs, MT_MAX_STREAMS + 1, &n.n_vocabs);
    if (rc == MT_OK && yaml_has(y, "transformer-tied-layers"))
        rc = get_ints(y, "transformer-tied-layers", n.tied_layers, MT_MODEL_MAX_LAYERS,
                      &n.n_tied_layers);
    mt_yaml_free(y);
    if (rc == MT_OK) *c = n;
    return rc;
}

/* ---- writing: a growing text buffer */

typedef struct sbuf {
    char *s;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void sb_add(sbuf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = true;
            return;
        }
        if (b->s && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 2048;
        while (cap < b->n + (size_t)k + 1)
            cap *= 2;
        char *s = mt_try_realloc(b->s, cap);
        if (s == NULL) {
            b->oom = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

/* yaml-cpp writes plain scalars unless they need quotes. */
static void sb_str(sbuf *b, const char *key, const char *v) {
    bool plain = *v != '\0' && *v != ' ' && v[strlen(v) - 1] != ' ';
    for (const char *p = v; *p && plain; p++) {
        unsigned char ch = (unsigned char)*p;
        plain = ch >= 0x20 && ch != '"' && ch != '\'' && ch != '#' && ch != '[' && ch != ']' &&
                ch != '{' && ch != '}' && ch != ',' && ch != '&' && ch != '*' && ch != '!' &&
                ch != '|' && ch != '>' && ch != '%' && ch != '@' && ch != '`' && ch != '\\' &&
                !(ch == ':' && (p[1] == ' ' || p[1] == '\0'));
    }
    if (plain && (*v == '-' || *v == '?') && (v[1] == ' ' || v[1] == '\0')) plain = false;
    if (plain) {
        sb_add(b, "%s: %s\n", key, v);
        return;
    }
    sb_add(b, "%s: \"", key);
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\')
            sb_add(b, "\\%c", *p);
        else if ((unsigned char)*p < 0x20)
            sb_add(b, "\\x%02x", (unsigned char)*p);
        else
            sb_add(b, "%c", *p);
    }
    sb_add(b, "\"\n");
}

static void sb_bool(sbuf *b, const char *key, bool v) {
    sb_add(b, "%s: %s\n", key, v ? "true" : "false");
}

static void sb_ints(sbuf *b, const char *key, const int *v, int n) {
    sb_add(b, "%s:\n", key);
    if (n == 0) sb_add(b, "  []\n");
    for (int i = 0; i < n; i++)
        sb_add(b, "  - %d\n", v[i]);
}

char *mt_model_config_to_yaml(const mt_model_config *c) {
    sbuf b = {0};
    sb_bool(&b, "bert-train-type-embeddings", true);
    sb_add(&b, "bert-type-vocab-size: 2\n");
    sb_str(&b, "dec-cell", c->dec_cell);
    sb_add(&b, "dec-cell-base-depth: %d\n", c->dec_cell_base_depth);
    sb_add(&b, "dec-cell-high-depth: %d\n", c->dec_cell_high_depth);
    sb_add(&b, "dec-depth: %d\n", c->dec_depth);
    sb_add(&b, "dim-emb: %d\n", c->dim_emb);
    sb_add(&b, "dim-rnn: %d\n", c->dim_rnn);
    sb_ints(&b, "dim-vocabs", c->dim_vocabs, c->n_vocabs);
    sb_str(&b, "enc-cell", c->enc_cell);
    sb_add(&b, "enc-cell-depth: %d\n", c->enc_cell_depth);
    sb_add(&b, "enc-depth: %d\n", c->enc_depth);
    sb_str(&b, "enc-type", c->enc_type);
    sb_add(&b, "factors-combine: sum\n");
    sb_add(&b, "factors-dim-emb: 0\n");
    sb_ints(&b, "input-types", NULL, 0);
    sb_bool(&b, "layer-normalization", c->layer_normalization);
    sb_str(&b, "lemma-dependency", "");
    sb_add(&b, "lemma-dim-emb: 0\n");
    sb_bool(&b, "output-omit-bias", c->output_omit_bias);
    sb_bool(&b, "right-left", c->right_left);
    sb_bool(&b, "skip", c->skip);
    sb_bool(&b, "tied-embeddings", c->tied_embeddings);
    sb_bool(&b, "tied-embeddings-all", c->tied_embeddings_all);
    sb_bool(&b, "tied-embeddings-src", c->tied_embeddings_src);
    sb_str(&b, "transformer-aan-activation", c->aan_activation);
    sb_add(&b, "transformer-aan-depth: %d\n", c->aan_depth);
    sb_bool(&b, "transformer-aan-nogate", c->aan_nogate);
    sb_str(&b, "transformer-decoder-autoreg", c->dec_autoreg);
    sb_add(&b, "transformer-decoder-dim-ffn: %d\n", c->dec_dim_ffn);
    sb_add(&b, "transformer-decoder-ffn-depth: %d\n", c->dec_ffn_depth);
    sb_add(&b, "transformer-dim-aan: %d\n", c->dim_aan);
    sb_add(&b, "transformer-dim-ffn: %d\n", c->dim_ffn);
    sb_str(&b, "transformer-ffn-activation", c->ffn_activation);
    sb_add(&b, "transformer-ffn-depth: %d\n", c->ffn_depth);
    sb_str(&b, "transformer-guided-alignment-layer", c->guided_alignment_layer);
    sb_add(&b, "transformer-heads: %d\n", c->heads);
    sb_bool(&b, "transformer-no-projection", c->no_projection);
    sb_bool(&b, "transformer-pool", false);
    sb_str(&b, "transformer-postprocess", c->postprocess);
    sb_str(&b, "transformer-postprocess-emb", c->postprocess_emb);
    sb_str(&b, "transformer-postprocess-top", c->postprocess_top);
    sb_str(&b, "transformer-preprocess", c->preprocess);
    sb_bool(&b, "transformer-rnn-projection", c->rnn_projection);
    sb_ints(&b, "transformer-tied-layers", c->tied_layers, c->n_tied_layers);
    sb_bool(&b, "transformer-train-position-embeddings", c->train_position_embeddings);
    sb_str(&b, "type", c->type);
    sb_bool(&b, "ulr", false);
    sb_add(&b, "ulr-dim-emb: 0\n");
    sb_bool(&b, "ulr-trainable-transformation", false);
    sb_str(&b, "version", c->version[0] ? c->version : "v1.12.0 (mtpe)");
    if (b.oom) {
        mt_free(b.s);
        return NULL;
    }
    b.s[--b.n] = '\0'; /* Marian's text has no newline after the last line */
    return b.s;
}

static bool ops_ok(const char *ops, const char *allowed) {
    for (const char *p = ops; *p; p++)
        if (strchr(allowed, *p) == NULL) return false;
    return true;
}

static bool activation_ok(const char *a) {
    return !strcmp(a, "relu") || !strcmp(a, "swish") || !strcmp(a, "gelu") || !strcmp(a, "sigmoid");
}

mt_status mt_model_config_check(const mt_model_config *c) {
    const arch *a = find_arch(c->type);
    if (a == NULL)
        return mt_seterr(MT_ERR_UNSUPPORTED,
                         "model type '%s' is not supported (transformer, "
                         "multi-transformer, shared-multi-transformer, s2s)",
                         c->type);
    int n_src = a->n_src;
    if (c->n_vocabs != n_src + 1)
        return mt_seterr(MT_ERR_INVALID, "dim-vocabs has %d entries, a %s needs %d", c->n_vocabs,
                         c->type, n_src + 1);
    for (int i = 0; i < c->n_vocabs; i++)
        if (c->dim_vocabs[i] <= 0)
            return mt_seterr(MT_ERR_INVALID, "dim-vocabs entry %d is %d (must be > 0)", i + 1,
                             c->dim_vocabs[i]);
    /* -src and -all both give the decoder the encoders' Wemb (transformer.c,
    ** rnn.c, as Marian), so the target vocabulary must match too */
    if (c->tied_embeddings_all || c->tied_embeddings_src)
        for (int i = 1; i < c->n_vocabs; i++)
            if (c->dim_vocabs[i] != c->dim_vocabs[0])
                return mt_seterr(MT_ERR_INVALID,
                                 "tied embeddings need equal vocabulary sizes, dim-vocabs has "
                                 "%d and %d",
                                 c->dim_vocabs[0], c->dim_vocabs[i]);
    if (!strcmp(c->type, "s2s")) {
        if (c->dim_emb <= 0 || c->enc_depth < 1 || c->enc_depth > MT_MODEL_MAX_LAYERS ||
            c->dec_depth < 1 || c->dec_depth > MT_MODEL_MAX_LAYERS)
            return mt_seterr(MT_ERR_INVALID, "dim-emb %d, enc-depth %d / dec-depth %d not in 1..%d",
                             c->dim_emb, c->enc_depth, c->dec_depth, MT_MODEL_MAX_LAYERS);
        return mt_rnn_check(c);
    }
    if (c->dim_emb <= 0 || c->heads <= 0 || c->dim_emb % c->heads != 0)
        return mt_seterr(MT_ERR_INVALID,
                         "dim-emb %d is not a positive multiple of "
                         "transformer-heads %d",
                         c->dim_emb, c->heads);
    if (c->enc_depth < 1 || c->enc_depth > MT_MODEL_MAX_LAYERS || c->dec_depth < 1 ||
        c->dec_depth > MT_MODEL_MAX_LAYERS)
        return mt_seterr(MT_ERR_INVALID, "enc-depth %d / dec-depth %d not in 1..%d", c->enc_depth,
                         c->dec_depth, MT_MODEL_MAX_LAYERS);
    if (c->dim_ffn <= 0 || c->ffn_depth < 1 || c->dec_dim_ffn < 0 || c->dec_ffn_depth < 0)
        return mt_seterr(MT_ERR_INVALID, "bad FFN size: transformer-dim-ffn %d, depth %d",
                         c->dim_ffn, c->ffn_depth);
    if (!activation_ok(c->ffn_activation))
        return mt_seterr(MT_ERR_UNSUPPORTED, "transformer-ffn-activation '%s' is not supported",
                         c->ffn_activation);
    if (!ops_ok(c->preprocess, "dn") || !ops_ok(c->postprocess_emb, "dn"))
        return mt_seterr(MT_ERR_UNSUPPORTED,
                         "transformer-preprocess '%s' / "
                         "transformer-postprocess-emb '%s': only d and n",
                         c->preprocess, c->postprocess_emb);
    if (!ops_ok(c->postprocess, "dahn") || !ops_ok(c->postprocess_top, "dahn"))
        return mt_seterr(MT_ERR_UNSUPPORTED,
                         "transformer-postprocess '%s' / "
                         "transformer-postprocess-top '%s': only d a h n",
                         c->postprocess, c->postprocess_top);
    if (!strcmp(c->dec_autoreg, "average-attention")) {
        if (c->dim_aan <= 0 || c->aan_depth < 1 || !activation_ok(c->aan_activation))
            return mt_seterr(MT_ERR_INVALID,
                             "bad average attention: transformer-dim-aan %d, "
                             "depth %d, activation '%s'",
                             c->dim_aan, c->aan_depth, c->aan_activation);
    } else if (strcmp(c->dec_autoreg, "self-attention")) {
        return mt_seterr(MT_ERR_UNSUPPORTED, "transformer-decoder-autoreg '%s' is not supported",
                         c->dec_autoreg);
    }
    if (strcmp(c->guided_alignment_layer, "last")) {
        int l = 0;
        if (parse_int(c->guided_alignment_layer, &l) != 0 || l < 1 || l > c->dec_depth)
            return mt_seterr(MT_ERR_INVALID,
                             "transformer-guided-alignment-layer '%s' is not 'last' or 1..%d",
                             c->guided_alignment_layer, c->dec_depth);
    }
    if (c->n_tied_layers != 0 && c->n_tied_layers != c->dec_depth)
        return mt_seterr(MT_ERR_INVALID,
                         "transformer-tied-layers has %d entries for %d decoder "
                         "layers",
                         c->n_tied_layers, c->dec_depth);
    for (int i = 0; i < c->n_tied_layers; i++)
        if (c->tied_layers[i] < 1 || c->tied_layers[i] > c->dec_depth)
            return mt_seterr(MT_ERR_INVALID, "transformer-tied-layers entry %d is not in 1..%d",
                             c->tied_layers[i], c->dec_depth);
    const float dr[5] = {c->dropout_src, c->dropout_trg, c->transformer_dropout,
                         c->transformer_dropout_attention, c->transformer_dropout_ffn};
    for (int i = 0; i < 5; i++)
        if (!(dr[i] >= 0.0f && dr[i] < 1.0f))
            return mt_seterr(MT_ERR_INVALID, "dropout %g not in [0, 1)", (double)dr[i]);
    return MT_OK;
}

/* ------------------------------------------------------------- model */

void mt_model_free(mt_model *m) {
    if (m == NULL) return;
    mt_params_free(m->params);
    mt_free(m);
}

const mt_model_config *mt_model_get_config(const mt_model *m) { return &m->cfg; }
mt_params *mt_model_params(mt_model *m) { return m->params; }
int32_t mt_model_trg_vocab(const mt_model *m) { return m->cfg.dim_vocabs[m->cfg.n_vocabs - 1]; }
int32_t mt_model_src_vocab(const mt_model *m, int s) { return m->cfg.dim_vocabs[s]; }
int mt_model_n_src(const mt_model *m) { return m->arch->n_src; }

void mt_model_set_training_config(mt_model *m, const mt_model_config *c) {
    m->cfg.dropout_src = c->dropout_src;
    m->cfg.dropout_trg = c->dropout_trg;
    m->cfg.transformer_dropout = c->transformer_dropout;
    m->cfg.transformer_dropout_attention = c->transformer_dropout_attention;
    m->cfg.transformer_dropout_ffn = c->transformer_dropout_ffn;
}

void mt_model_set_marian_prenorm_cache(mt_model *m, bool on) { m->cfg.marian_prenorm_cache = on; }

mt_status mt_model_create(const mt_model_config *c, mt_device *dev, uint64_t seed, mt_model **out) {
    *out = NULL;
    mt_status rc = mt_model_config_check(c);
    if (rc != MT_OK) return rc;
    mt_model *m = mt_try_calloc(1, sizeof *m);
    if (m == NULL) return mt_seterr(MT_ERR_NOMEM, "model: out of memory");
    m->cfg = *c;
    m->arch = find_arch(c->type);
    m->dev = dev;
    rc = mt_params_init(dev, seed, &m->params);
    if (rc == MT_OK) rc = m->arch->touch_params(&m->cfg, m->params, dev, false);
    if (rc != MT_OK) {
        mt_model_free(m);
        return rc;
    }
    *out = m;
    return MT_OK;
}

/* Prefixes the current error message with the file name. */
static mt_status with_path(mt_status rc, const char *path) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", mt_errmsg());
    return mt_seterr(rc, "%s: %s", path, msg);
}

/* Moves item i of f into the params (float16 converted to float32). */
/* A damaged file (a flipped byte in a .bin, NaN written by a diverged
** training) must not load: every float of a parameter is checked (exponent
** bits all ones: Inf or NaN), about a millisecond per million values. */
static mt_status check_finite(const float *x, int64_t n, const char *name, const char *path) {
    int64_t bad = -1;
    for (int64_t k = 0; k < n; k++) {
        uint32_t b;
        memcpy(&b, &x[k], 4);
        if ((b & 0x7f800000u) == 0x7f800000u) {
            bad = k;
            break;
        }
    }
    if (bad < 0) return MT_OK;
    return mt_seterr(MT_ERR_FORMAT,
                     "%s: parameter %s holds %s at element %lld: the model file is damaged", path,
                     name, isnan(x[bad]) ? "NaN" : "an infinity", (long long)bad);
}

static mt_status adopt_item(mt_model *m, mt_model_file *f, int i, const char *path) {
    const char *name = f->names[i];
    mt_tensor *t = &f->tensors[i];
    if (f->items && f->items[i].raw) {
        /* intgemm8/16 weights become int8/int16 parameters that products take
        ** on the integer path; other raw types are refused (engine/quantize.c) */
        mt_status rc = mt_params_adopt_item(m->params, name, t, &f->items[i]);
        return rc == MT_OK ? MT_OK : with_path(rc, path);
    }
    if (t->dtype == MT_F32) {
        mt_status rc = check_finite(t->data, mt_tensor_numel(t), name, path);
        if (rc != MT_OK) return rc;
    }
    if (t->dtype != MT_F16) return mt_params_adopt(m->params, name, t);
    mt_tensor c = {0};
    mt_status rc = mt_tensor_init(NULL, MT_F32, t->shape, &c);
    if (rc != MT_OK) return rc;
    int64_t n = mt_tensor_numel(t);
    float *dst = c.data;
    const uint16_t *src = t->data;
    for (int64_t k = 0; k < n; k++)
        dst[k] = mt_f16_to_f32(src[k]);
    rc = check_finite(dst, n, name, path);
    if (rc != MT_OK) {
        mt_tensor_free(&c);
        return rc;
    }
    rc = mt_params_adopt(m->params, name, &c);
    mt_tensor_free(&c); /* no-op once adopted (owns is false) */
    return rc;
}

mt_status mt_model_load(const char *path, mt_device *dev, mt_model **out) {
    *out = NULL;
    mt_model_file *f = NULL;
    mt_model *m = NULL;
    mt_status rc = mt_model_file_read(path, &f);
    if (rc != MT_OK) return rc;
    if (f->config_yaml == NULL) {
        rc = mt_seterr(MT_ERR_FORMAT, "%s: no special:model.yml (not a Marian model?)", path);
        goto fail;
    }
    m = mt_try_calloc(1, sizeof *m);
    if (m == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    m->dev = dev;
    m->cfg = mt_model_config_default();
    rc = mt_model_config_from_yaml(f->config_yaml, &m->cfg);
    if (rc == MT_OK) rc = mt_model_config_check(&m->cfg);
    if (rc != MT_OK) {
        rc = with_path(rc, path);
        goto fail;
    }
    m->arch = find_arch(m->cfg.type);
    rc = mt_params_init(dev, 0, &m->params);
    for (int i = 0; i < f->n && rc == MT_OK; i++)
        rc = adopt_item(m, f, i, path);
    if (rc != MT_OK) goto fail;
    /* Every parameter the architecture reads must be there; those it does
    ** not read stay frozen (kept for saving, never trained). */
    for (int i = 0; i < mt_params_count(m->params); i++)
        mt_params_set_trainable(m->params, mt_params_name(m->params, i), false);
    rc = m->arch->touch_params(&m->cfg, m->params, dev, true);
    if (rc != MT_OK) {
        rc = with_path(rc, path);
        goto fail;
    }
    mt_model_file_free(f);
    *out = m;
    return MT_OK;
fail:
    mt_model_free(m);
    mt_model_file_free(f);
    return rc;
}

mt_status mt_model_save(mt_model *m, const char *path) {
    int n = mt_params_count(m->params);
    int *order = mt_try_malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    mt_model_file *f = mt_model_file_new();
    char *yaml = mt_model_config_to_yaml(&m->cfg);
    mt_status rc = MT_OK;
    if (order == NULL || f == NULL || yaml == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    for (int i = 0; i < n; i++)
        order[i] = i;
    /* Marian's order: by element type (all float32 here), then by name */
    for (int i = 1; i < n; i++) {
        int k = order[i], j = i;
        const char *nk = mt_params_name(m->params, k);
        while (j > 0 && strcmp(mt_params_name(m->params, order[j - 1]), nk) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = k;
    }
    for (int i = 0; i < n && rc == MT_OK; i++)
        rc = mt_model_file_add(f, mt_params_name(m->params, order[i]),
                               mt_params_at(m->params, order[i]));
    if (rc == MT_OK) rc = mt_model_file_set_config(f, yaml);
    if (rc == MT_OK) rc = mt_model_file_write(path, f);
done:
    mt_free(order);
    mt_free(yaml);
    mt_model_file_free(f);
    return rc;
}

/* ------------------------------------------------------------- loss */

mt_model_loss mt_model_build_loss(mt_model *m, mt_graph *g, const mt_batch *b,
                                  float label_smoothing) {
    mt_model_loss L;
    memset(&L, 0, sizeof L);
    mt_model_encoding enc;
    mt_node *logits = NULL, *align = NULL;
    mt_status rc = mt_model_encode(m, g, b, &enc);
    if (rc == MT_OK) rc = m->arch->decode_all(&m->cfg, m->params, g, &enc, b, &logits, &align);
    if (rc != MT_OK) {
        L.status = rc;
        return L;
    }
    int64_t bs = b->size, len = b->trg_len;
    mt_node *labels = mt_input_i32(g, mt_shape2(bs, len), b->trg_ids);
    mt_node *mask = mt_input(g, mt_shape2(bs, len), b->trg_mask);
    mt_node *ce = mt_cross_entropy(g, logits, labels, label_smoothing);
    mt_node *cost = mt_sum_all(g, mt_mul(g, ce, mask));
    mt_node *ce0 = label_smoothing > 0.0f ? mt_cross_entropy(g, logits, labels, 0.0f) : ce;
    mt_node *lw = mt_neg(g, mt_mul(g, ce0, mask));
    mt_node *ls = mt_reshape(g, mt_sum(g, lw, -1), mt_shape1(bs));
    L.status = mt_graph_status(g);
    if (L.status == MT_OK) {
        L.cost = cost;
        L.logprob_word = lw;
        L.logprob_sent = ls;
        L.align = align;
    }
    return L;
}

/* ---------------------------------------------------------- step API */

mt_status mt_model_encode(mt_model *m, mt_graph *g, const mt_batch *b, mt_model_encoding *out) {
    if (b->n_src != m->arch->n_src)
        return mt_seterr(MT_ERR_INVALID,
                         "%s model: the batch has %d source streams, the model "
                         "reads %d",
                         m->cfg.type, b->n_src, m->arch->n_src);
    return m->arch->encode(&m->cfg, m->params, g, b, out);
}

mt_status mt_model_start(mt_model *m, mt_graph *g, const mt_model_encoding *enc,
                         mt_dec_state *out) {
    return m->arch->start(&m->cfg, m->params, g, enc, out);
}

mt_status mt_model_step(mt_model *m, mt_graph *g, const mt_model_encoding *enc,
                        const mt_dec_state *in, const int32_t *prev, mt_dec_state *next,
                        mt_dec_step *out) {
    if ((enc && in->batch != enc->batch) || in->beam < 1 || in->batch < 1)
        return mt_seterr(MT_ERR_INVALID,
                         "model step: state of %d x %d rows for an encoding of "
                         "%d sentences",
                         (int)in->batch, (int)in->beam, enc ? (int)enc->batch : 0);
    return m->arch->step(&m->cfg, m->params, g, enc, in, prev, next, out);
}

mt_status mt_model_select(mt_model *m, mt_graph *g, const mt_dec_state *in, const int32_t *rows,
                          int32_t beam, mt_dec_state *out) {
    return mt_model_reorder(m, g, in, NULL, in->batch, rows, beam, MT_DEC_ROWS, out);
}

mt_status mt_model_reorder(mt_model *m, mt_graph *g, const mt_dec_state *in, const int32_t *sent,
                           int32_t n_sent, const int32_t *rows, int32_t beam, unsigned parts,
                           mt_dec_state *out) {
    (void)m;
    if (sent == NULL) n_sent = in->batch;
    if (n_sent < 1 || ((parts & MT_DEC_ROWS) && (beam < 1 || rows == NULL)))
        return mt_seterr(MT_ERR_INVALID, "model reorder: %d sentences, beam %d", (int)n_sent,
                         (int)beam);
    for (int32_t b = 0; sent && b < n_sent; b++)
        if (sent[b] < 0 || sent[b] >= in->batch)
            return mt_seterr(MT_ERR_INVALID,
                             "model reorder: sentence %d takes sentence %d of a batch of %d",
                             (int)b, (int)sent[b], (int)in->batch);
    if ((parts & MT_DEC_ROWS) && in->hist_len > 0)
        return mt_seterr(MT_ERR_INVALID, "model reorder: the rows have a frozen history (fold it "
                                         "back first)");
    mt_dec_state st = *in;
    st.batch = n_sent;
    if (parts & MT_DEC_ROWS) {
        int64_t n = (int64_t)n_sent * beam;
        for (int64_t i = 0; i < n; i++) {
            int64_t want = sent ? sent[i / beam] : i / beam;
            if (rows[i] < 0 || rows[i] >= (int64_t)in->batch * in->beam ||
                rows[i] / in->beam != want)
                return mt_seterr(MT_ERR_INVALID,
                                 "model select: new row %lld takes row %d, which is "
                                 "not a row of sentence %lld",
                                 (long long)i, (int)rows[i], (long long)want);
        }
        st.beam = beam;
        mt_node *ids = mt_input_i32(g, mt_shape1(n), rows);
        for (int r = 0; r < in->n_rows; r++)
            if (in->rows[r]) st.rows[r] = mt_index_select(g, in->rows[r], 0, ids);
    }
    bool same = sent == NULL || n_sent == in->batch;
    for (int32_t b = 0; sent && same && b < n_sent; b++)
        same = sent[b] == b;
    if ((parts & MT_DEC_FIXED) && !same) {
        mt_node *ids = mt_input_i32(g, mt_shape1(n_sent), sent);
        for (int r = 0; r < in->n_fixed; r++)
            if (in->fixed[r]) st.fixed[r] = mt_index_select(g, in->fixed[r], 0, ids);
    }
    mt_status rc = mt_graph_status(g);
    if (rc == MT_OK) *out = st;
    return rc;
}

mt_status mt_model_append(mt_model *m, mt_graph *g, const mt_dec_state *in, const mt_dec_state *add,
                          unsigned parts, mt_dec_state *out) {
    if (add->beam != 1 || add->pos != 0 || add->n_ctx != in->n_ctx || add->batch < 1 ||
        add->n_fixed != in->n_fixed)
        return mt_seterr(MT_ERR_INVALID,
                         "model append: %d sentences at beam %d, position %d, with %d contexts "
                         "are not a start state for a state with %d contexts",
                         (int)add->batch, (int)add->beam, (int)add->pos, add->n_ctx, in->n_ctx);
    return m->arch->append(&m->cfg, g, in, add, parts, out);
}

mt_status mt_model_trim(mt_model *m, mt_graph *g, const mt_dec_state *in, int32_t n,
                        mt_dec_state *out) {
    if (n < 0 || n > in->pos || (n > 0 && in->hist_len > 0))
        return mt_seterr(MT_ERR_INVALID, "model trim: %d of %d positions%s", (int)n, (int)in->pos,
                         in->hist_len > 0 ? " with a frozen history" : "");
    for (int64_t r = 0; in->row_pos && r < (int64_t)in->batch * in->beam; r++)
        if (in->row_pos[r] < 0 || n > in->pos - in->row_pos[r])
            return mt_seterr(MT_ERR_INVALID,
                             "model trim: row %lld has %d of the %d positions, %d cannot go",
                             (long long)r, (int)in->row_pos[r], (int)in->pos, (int)n);
    return m->arch->trim(&m->cfg, g, in, n, out);
}

mt_status mt_model_fit_contexts(mt_model *m, mt_graph *g, const mt_dec_state *in,
                                const int32_t *len, mt_dec_state *out) {
    for (int j = 0; j < in->n_ctx; j++)
        if (len[j] < 1)
            return mt_seterr(MT_ERR_INVALID, "model fit: %d positions of context %d", (int)len[j],
                             j);
    return m->arch->fit_contexts(&m->cfg, g, in, len, out);
}

bool mt_model_can_fold(const mt_model *m) { return m->arch->can_fold(&m->cfg, m->params); }

mt_status mt_model_fold(mt_model *m, mt_graph *g, const mt_dec_state *in, bool freeze,
                        mt_dec_state *out) {
    int64_t n = (int64_t)in->batch * in->beam;
    if (!m->arch->can_fold(&m->cfg, m->params))
        return mt_seterr(MT_ERR_UNSUPPORTED, "%s model: no growing caches to fold", m->cfg.type);
    if (in->row_off || (in->row_ids && (in->row_pos || mt_node_shape(in->row_ids).dim[0] != n)) ||
        (in->row_pos && !freeze) || in->hist_len < 0 || in->hist_len > in->pos ||
        (in->hist_len > 0 && (in->hist_ids == NULL || mt_node_shape(in->hist_ids).dim[0] != n ||
                              (in->row_pos && in->hist_lens == NULL))))
        return mt_seterr(MT_ERR_INVALID,
                         "model fold: a state with a pending offset or a selection of other than "
                         "its %lld rows (or with rows at their own positions), or a history of "
                         "%d positions of %d without ids (and lengths, with rows at their own "
                         "positions)",
                         (long long)n, (int)in->hist_len, (int)in->pos);
    return m->arch->fold(&m->cfg, g, in, freeze, out);
}

void mt_dec_state_end_step(mt_dec_state *st) {
    st->logits_only = false;
    st->argmax = false;
    st->argmax_skip = NULL;
    st->topk = 0;
    st->no_align = false;
    st->row_pos = NULL;
    st->row_ids = NULL;
    st->row_off = 0;
    st->hist_ids = NULL;
    st->hist_lens = NULL;
    st->ctx_lens = NULL;
    st->row_sent = NULL;
}

mt_status mt_dec_state_import(mt_graph *g, const mt_dec_state *in, unsigned parts,
                              mt_dec_state *out) {
    mt_dec_state st = *in;
    st.shortlist = NULL;
    st.row_pos = NULL;
    st.row_ids = NULL;
    st.row_off = 0;
    st.hist_ids = NULL;
    st.row_sent = NULL;
    st.argmax = false;
    st.argmax_skip = NULL;
    st.topk = 0;
    for (int r = 0; (parts & MT_DEC_ROWS) && r < in->n_rows; r++) {
        if (in->rows[r]) st.rows[r] = mt_tensor_node(g, mt_node_value(in->rows[r]));
        if (in->hist[r]) st.hist[r] = mt_tensor_node(g, mt_node_value(in->hist[r]));
    }
    for (int r = 0; (parts & MT_DEC_FIXED) && r < in->n_fixed; r++)
        if (in->fixed[r]) st.fixed[r] = mt_tensor_node(g, mt_node_value(in->fixed[r]));
    mt_status rc = mt_graph_status(g);
    if (rc == MT_OK) *out = st;
    return rc;
}
