/*
** vocab.c: Marian vocabularies (marian-compat.md section 4; Marian's
** src/data/vocab.cpp, default_vocab.cpp, sentencepiece_vocab.cpp).  SentencePiece
** models go through spm_wrap.cpp; this file reads the other two formats itself.
**
** YAML / JSON vocabulary (*.yml, *.yaml, *.json), read with mt_yaml_* (libyaml):
**
**   ELEMENT            DESCRIPTION
**   document           one top-level mapping (block or flow/JSON style)
**   key                the token: a plain, 'single' or "double"-quoted scalar
**                      (escapes as YAML defines them); any UTF-8 text, may be ""
**   value              the id: a decimal integer >= 0; gaps are allowed
**   duplicate key      the first occurrence counts (Marian inserts into a std::map)
**   shared id          two tokens with one id: both encode to it; the id prints as
**                      the token that sorts last bytewise (Marian's map order)
**   marian-vocab       writes "</s>: 0", "<unk>: 1", then tokens by frequency
**
** Plain-text vocabulary (any other suffix):
**
**   ELEMENT            DESCRIPTION
**   line               one token; id = 0-based line number
**   line end           '\n'; one '\r' before it is stripped (Marian io::getline);
**                      the last line may lack '\n'
**   empty line         error (Marian aborts)
**   duplicate token    error (Marian aborts)
**
** In both, "</s>" and "<unk>" must be present (after the dim-vocabs cut), except for
** the Nematus back-compat of YAML/JSON files described in vocab.h.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mt.h"
#include "vocab.h"

/* A token table entry: key bytes live in the vocab's arena. */
typedef struct slot {
    const char *key; /* NULL = empty slot */
    uint32_t len;
    int32_t id;
} slot;

struct mt_vocab {
    mt_vocab_kind kind;
    int32_t size; /* ids 0 .. size-1 */
    int32_t dim;
    int32_t eos, unk;
    mt_spm *spm;         /* MT_VOCAB_KIND_SPM */
    const char **id2str; /* YAML/TEXT: size entries, NULL for unused ids */
    slot *slots;         /* YAML/TEXT: open addressing, n_slots a power of two */
    size_t n_slots;
    size_t n_keys;
    mt_arena *strings;
};

static const char *kind_name(mt_vocab_kind k) {
    switch (k) {
    case MT_VOCAB_KIND_SPM: return "SentencePiece";
    case MT_VOCAB_KIND_YAML: return "YAML/JSON";
    default: return "text";
    }
}

/* ------------------------------------------------------------ token table */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static slot *table_find(const mt_vocab *v, const char *s, size_t n) {
    size_t mask = v->n_slots - 1;
    for (size_t i = (size_t)hash_bytes(s, n) & mask;; i = (i + 1) & mask) {
        slot *e = &v->slots[i];
        if (e->key == NULL) return e;
        if (e->len == n && memcmp(e->key, s, n) == 0) return e;
    }
}

static mt_status table_init(mt_vocab *v, size_t n_max) {
    size_t cap = 16;
    while (cap < 2 * n_max + 1)
        cap *= 2;
    v->slots = (slot *)mt_try_calloc(cap, sizeof(slot));
    if (v->slots == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory for a vocab table");
    v->n_slots = cap;
    return MT_OK;
}

/* Marian DefaultVocab::insertWord: str2id[str] = id; id2str[id] = str.  When two tokens
** share an id, std::map order (bytewise) makes the later key the printed one.  e must be
** the empty slot table_find returned for s.  id < 0 records a key that the dim-vocabs
** cut dropped: it stays in the table (Marian's std::map saw it) but maps to no id. */
static mt_status insert_word(mt_vocab *v, slot *e, const char *s, size_t n, int32_t id) {
    char *copy = (char *)mt_arena_alloc(v->strings, n + 1, 1);
    if (copy == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory for vocab strings");
    memcpy(copy, s, n);
    copy[n] = '\0';
    e->key = copy;
    e->len = (uint32_t)n;
    e->id = id;
    v->n_keys++;
    if (id >= 0) {
        const char *old = v->id2str[id];
        if (old == NULL || strcmp(copy, old) > 0) v->id2str[id] = copy;
    }
    return MT_OK;
}

/* Id of a token, or -1 when absent (or cut by dim-vocabs). */
static int32_t lookup(const mt_vocab *v, const char *s, size_t n) {
    const slot *e = table_find(v, s, n);
    return e->key != NULL ? e->id : -1;
}

/* ----------------------------------------------------------------- files */

static mt_status read_file(const char *path, char **out, size_t *n_out) {
    mt_status rc = MT_ERR_IO;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return mt_seterr(MT_ERR_IO, "cannot open vocabulary '%s': %s", path, strerror(errno));
    }
    for (;;) {
        if (cap - n < 65536 + 1) {
            size_t ncap = cap ? cap * 2 : 65536 * 2;
            char *nb = (char *)mt_try_realloc(buf, ncap);
            if (nb == NULL) {
                rc = mt_seterr(MT_ERR_NOMEM, "out of memory reading vocabulary '%s'", path);
                goto fail;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        rc = mt_seterr(MT_ERR_IO, "error reading vocabulary '%s'", path);
        goto fail;
    }
    fclose(f);
    buf[n] = '\0';
    *out = buf;
    *n_out = n;
    return MT_OK;
fail:
    mt_free(buf);
    fclose(f);
    return rc;
}

static bool has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

static bool file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* A decimal id, as yaml-cpp's as<Word>() reads the ids of real vocabularies. */
static bool parse_id(const char *s, int64_t *out) {
    if (s == NULL || *s == '\0') return false;
    int64_t val = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return false;
        val = val * 10 + (*p - '0');
        if (val > INT32_MAX - 1) return false;
    }
    *out = val;
    return true;
}

/* Allocates id2str for ids 0 .. size-1 and the token table for n_keys entries. */
static mt_status alloc_tables(mt_vocab *v, int32_t size, size_t n_keys, const char *path) {
    v->size = size;
    v->id2str = (const char **)mt_try_calloc(size > 0 ? (size_t)size : 1, sizeof(char *));
    if (v->id2str == NULL)
        return mt_seterr(MT_ERR_NOMEM, "out of memory for vocabulary '%s' (%d ids)", path,
                         (int)size);
    return table_init(v, n_keys);
}

static mt_status load_yaml(mt_vocab *v, const char *path, const char *text, int32_t max_size) {
    mt_status rc;
    mt_yaml *y = NULL;
    int64_t *ids = NULL;
    rc = mt_yaml_parse(text, &y);
    if (rc != MT_OK) {
        rc = mt_seterr(rc == MT_ERR_NOMEM ? MT_ERR_NOMEM : MT_ERR_FORMAT,
                       "vocabulary '%s' is not a YAML/JSON mapping: %s", path, mt_errmsg());
        goto fail;
    }
    int n = mt_yaml_count(y);
    ids = (int64_t *)mt_try_malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (ids == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "out of memory loading vocabulary '%s'", path);
        goto fail;
    }
    int64_t max_id = -1;
    for (int i = 0; i < n; i++) {
        const char *key = mt_yaml_key(y, i);
        const char *val = mt_yaml_get(y, key);
        if (!parse_id(val, &ids[i])) {
            rc = mt_seterr(MT_ERR_FORMAT,
                           "vocabulary '%s': entry %d ('%s') has no valid id (got '%s'); "
                           "expected 'token: id' with a non-negative integer",
                           path, i, key, val ? val : "(not a scalar)");
            goto fail;
        }
        if (max_size > 0 && ids[i] >= max_size) continue; /* dim-vocabs cut */
        if (ids[i] > max_id) max_id = ids[i];
    }
    if (max_id < 0) {
        rc = mt_seterr(MT_ERR_FORMAT, "empty vocabulary: '%s'", path);
        goto fail;
    }
    /* Marian would resize its id table to any id; refuse absurd ones instead. */
    if (max_id > 16 * (int64_t)n + 1024) {
        rc =
            mt_seterr(MT_ERR_FORMAT, "vocabulary '%s': id %lld is implausibly large for %d entries",
                      path, (long long)max_id, n);
        goto fail;
    }
    rc = alloc_tables(v, (int32_t)(max_id + 1), (size_t)n, path);
    if (rc != MT_OK) goto fail;
    for (int i = 0; i < n; i++) {
        const char *key = mt_yaml_key(y, i);
        size_t len = strlen(key);
        slot *e = table_find(v, key, len);
        if (e->key != NULL) continue; /* duplicate key: std::map::insert keeps the first */
        int32_t id = max_size > 0 && ids[i] >= max_size ? -1 : (int32_t)ids[i];
        rc = insert_word(v, e, key, len, id);
        if (rc != MT_OK) goto fail;
    }
    mt_free(ids);
    mt_yaml_free(y);
    return MT_OK;
fail:
    mt_free(ids);
    mt_yaml_free(y);
    return rc;
}

static mt_status load_text(mt_vocab *v, const char *path, const char *text, size_t n,
                           int32_t max_size) {
    size_t lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += text[i] == '\n';
    lines++;
    if (lines > (size_t)INT32_MAX - 1)
        return mt_seterr(MT_ERR_FORMAT, "vocabulary '%s' has too many lines", path);
    /* Ids are line numbers; a dim-vocabs cut keeps the first max_size lines. */
    int32_t keep = (int32_t)lines;
    if (max_size > 0 && keep > max_size) keep = max_size;
    mt_status rc = alloc_tables(v, keep, lines, path);
    if (rc != MT_OK) return rc;

    int32_t id = 0;
    size_t pos = 0;
    while (pos < n) {
        size_t end = pos;
        while (end < n && text[end] != '\n')
            end++;
        size_t len = end - pos;
        if (len > 0 && text[pos + len - 1] == '\r') len--;
        if (len == 0)
            return mt_seterr(MT_ERR_FORMAT,
                             "vocabulary '%s' must not contain empty lines (line %d)", path,
                             (int)id + 1);
        slot *e = table_find(v, text + pos, len);
        if (e->key != NULL)
            return mt_seterr(MT_ERR_FORMAT, "vocabulary '%s': duplicate entry '%.*s' (line %d)",
                             path, (int)len, text + pos, (int)id + 1);
        rc = insert_word(v, e, text + pos, len, id < keep ? id : -1);
        if (rc != MT_OK) return rc;
        id++;
        pos = end < n ? end + 1 : end;
    }
    if (id == 0) return mt_seterr(MT_ERR_FORMAT, "empty vocabulary: '%s'", path);
    if (id < keep) v->size = id;
    return MT_OK;
}

/* Marian DefaultVocab::addRequiredVocabulary (getRequiredWordId). */
static mt_status required_id(mt_vocab *v, const char *path, const char *str,
                             const char *nematus_str, int32_t nematus_id, int32_t *out) {
    if (v->kind == MT_VOCAB_KIND_YAML && nematus_id < v->size) {
        const char *s = v->id2str[nematus_id];
        if (s == NULL || s[0] == '\0' || strcmp(s, nematus_str) == 0) {
            *out = nematus_id;
            return MT_OK;
        }
    }
    int32_t id = lookup(v, str, strlen(str));
    if (id < 0) {
        bool cut = table_find(v, str, strlen(str))->key != NULL;
        return mt_seterr(MT_ERR_FORMAT, "vocabulary '%s' is expected to contain an entry for %s%s",
                         path, str, cut ? " with an id below the dim-vocabs limit" : "");
    }
    *out = id;
    return MT_OK;
}

/* ------------------------------------------------------------------- API */

mt_status mt_vocab_load(const char *path, int32_t max_size, mt_vocab **out) {
    MT_ASSERT(path != NULL && out != NULL);
    mt_status rc;
    char *text = NULL;
    size_t n = 0;
    if (max_size < 0)
        return mt_seterr(MT_ERR_INVALID, "vocabulary '%s': negative size limit %d", path,
                         (int)max_size);
    if (has_suffix(path, ".gz"))
        return mt_seterr(MT_ERR_UNSUPPORTED,
                         "vocabulary '%s': gzipped vocabularies are not supported", path);
    if (has_suffix(path, ".fsv"))
        return mt_seterr(MT_ERR_UNSUPPORTED,
                         "vocabulary '%s': factored vocabularies (.fsv) are not supported", path);

    mt_vocab *v = (mt_vocab *)mt_try_calloc(1, sizeof(mt_vocab));
    if (v == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory loading vocabulary '%s'", path);

    if (has_suffix(path, ".spm")) {
        v->kind = MT_VOCAB_KIND_SPM;
        rc = mt_spm_load(path, &v->spm);
        if (rc != MT_OK) goto fail;
        v->size = mt_spm_size(v->spm);
        v->dim = v->size;
        v->eos = mt_spm_eos_id(v->spm);
        v->unk = mt_spm_unk_id(v->spm);
    } else {
        bool yaml =
            has_suffix(path, ".yml") || has_suffix(path, ".yaml") || has_suffix(path, ".json");
        v->kind = yaml ? MT_VOCAB_KIND_YAML : MT_VOCAB_KIND_TEXT;
        rc = mt_arena_init(1 << 16, &v->strings);
        if (rc != MT_OK) goto fail;
        rc = read_file(path, &text, &n);
        if (rc != MT_OK) goto fail;
        rc = yaml ? load_yaml(v, path, text, max_size) : load_text(v, path, text, n, max_size);
        if (rc != MT_OK) goto fail;
        rc = required_id(v, path, "</s>", "eos", 0, &v->eos);
        if (rc != MT_OK) goto fail;
        rc = required_id(v, path, "<unk>", "UNK", 1, &v->unk);
        if (rc != MT_OK) goto fail;
        v->dim = v->size > max_size ? v->size : max_size;
        mt_free(text);
    }
    mt_log(MT_LOG_DEBUG, "loaded %s vocabulary '%s': %d ids, eos %d, unk %d", kind_name(v->kind),
           path, (int)v->size, (int)v->eos, (int)v->unk);
    *out = v;
    return MT_OK;
fail:
    mt_free(text);
    mt_vocab_free(v);
    return rc;
}

void mt_vocab_free(mt_vocab *v) {
    if (v == NULL) return;
    mt_spm_free(v->spm);
    mt_free(v->id2str);
    mt_free(v->slots);
    mt_arena_free(v->strings);
    mt_free(v);
}

mt_vocab_kind mt_vocab_get_kind(const mt_vocab *v) { return v->kind; }
int32_t mt_vocab_size(const mt_vocab *v) { return v->size; }
int32_t mt_vocab_dim(const mt_vocab *v) { return v->dim; }
int32_t mt_vocab_eos_id(const mt_vocab *v) { return v->eos; }
int32_t mt_vocab_unk_id(const mt_vocab *v) { return v->unk; }

const char *mt_vocab_piece(const mt_vocab *v, int32_t id) {
    if (id < 0 || id >= v->size) return NULL;
    if (v->kind == MT_VOCAB_KIND_SPM) return mt_spm_id_to_piece(v->spm, id);
    return v->id2str[id] ? v->id2str[id] : "";
}

static int32_t token_id(const mt_vocab *v, const char *s, size_t n) {
    if (v->kind == MT_VOCAB_KIND_SPM) return mt_spm_piece_to_id(v->spm, s, n);
    int32_t id = lookup(v, s, n);
    return id >= 0 ? id : v->unk;
}

int32_t mt_vocab_id(const mt_vocab *v, const char *piece) {
    return token_id(v, piece, strlen(piece));
}

/* Marian utils::split(line, tokens, " "): tokens between single spaces, empty ones
** dropped.  Writes ids to out (NULL: only counts) and returns the count. */
static int64_t encode_tokens(const mt_vocab *v, const char *line, size_t n, int32_t *out) {
    int64_t k = 0;
    size_t i = 0;
    while (i < n) {
        while (i < n && line[i] == ' ')
            i++;
        size_t j = i;
        while (j < n && line[j] != ' ')
            j++;
        if (j > i) {
            if (out) out[k] = token_id(v, line + i, j - i);
            k++;
        }
        i = j;
    }
    return k;
}

mt_status mt_vocab_encode(const mt_vocab *v, const char *line, unsigned flags, int32_t **ids_out,
                          int64_t *n_out) {
    MT_ASSERT(v != NULL && line != NULL && ids_out != NULL && n_out != NULL);
    size_t n = strlen(line), bad = 0;
    if (!mt_utf8_valid(line, n, &bad))
        return mt_seterr(MT_ERR_INVALID,
                         "input is not valid UTF-8 (byte 0x%02x at offset %zu of a %zu-byte line)",
                         (unsigned)(unsigned char)line[bad], bad, n);
    bool add_eos = (flags & MT_VOCAB_ADD_EOS) != 0;
    int32_t *ids = NULL;
    int64_t k;
    if (v->kind == MT_VOCAB_KIND_SPM && !(flags & MT_VOCAB_PIECES)) {
        mt_status rc = mt_spm_encode(v->spm, line, n, &ids, &k); /* room for one more id */
        if (rc != MT_OK) return rc;
    } else {
        k = encode_tokens(v, line, n, NULL);
        ids = (int32_t *)mt_try_malloc((size_t)(k + 1) * sizeof(int32_t));
        if (ids == NULL)
            return mt_seterr(MT_ERR_NOMEM, "out of memory encoding a %zu-byte line", n);
        encode_tokens(v, line, n, ids);
    }
    if (add_eos) ids[k++] = v->eos;
    *ids_out = ids;
    *n_out = k;
    return MT_OK;
}

mt_status mt_vocab_decode(const mt_vocab *v, const int32_t *ids, int64_t n, unsigned flags,
                          char **text_out) {
    MT_ASSERT(v != NULL && (ids != NULL || n == 0) && n >= 0 && text_out != NULL);
    bool keep_eos = (flags & MT_VOCAB_KEEP_EOS) != 0;
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= v->size)
            return mt_seterr(MT_ERR_INVALID,
                             "cannot decode id %d at position %lld: the "
                             "vocabulary has ids 0..%d",
                             (int)ids[i], (long long)i, (int)v->size - 1);
    }
    if (v->kind == MT_VOCAB_KIND_SPM && !(flags & MT_VOCAB_PIECES)) {
        int32_t *kept = (int32_t *)mt_try_malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
        if (kept == NULL)
            return mt_seterr(MT_ERR_NOMEM, "out of memory decoding %lld ids", (long long)n);
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++)
            if (keep_eos || ids[i] != v->eos) kept[k++] = ids[i];
        mt_status rc = mt_spm_decode(v->spm, kept, k, text_out);
        mt_free(kept);
        return rc;
    }
    /* Tokens (or spm pieces) joined by single spaces. */
    size_t len = 0;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!keep_eos && ids[i] == v->eos) continue;
        len += strlen(mt_vocab_piece(v, ids[i])) + (k > 0);
        k++;
    }
    char *text = (char *)mt_try_malloc(len + 1);
    if (text == NULL)
        return mt_seterr(MT_ERR_NOMEM, "out of memory decoding %lld ids", (long long)n);
    char *p = text;
    k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!keep_eos && ids[i] == v->eos) continue;
        const char *s = mt_vocab_piece(v, ids[i]);
        size_t m = strlen(s);
        if (k++ > 0) *p++ = ' ';
        memcpy(p, s, m);
        p += m;
    }
    *p = '\0';
    *text_out = text;
    return MT_OK;
}

int mt_vocab_suppressed_ids(const mt_vocab *v, bool suppress_unk, bool suppress_special,
                            int32_t *out, int cap) {
    int k = 0;
    if (suppress_unk && v->unk >= 0) {
        if (k < cap) out[k] = v->unk;
        k++;
    }
    if (suppress_special && v->kind == MT_VOCAB_KIND_SPM) {
        /* SentencePieceVocab::populateControlChars: "<0x00>".."<0x1F>" when present. */
        for (int c = 0; c < 32; c++) {
            char piece[8];
            snprintf(piece, sizeof piece, "<0x%02X>", c);
            int32_t id = mt_spm_piece_to_id(v->spm, piece, strlen(piece));
            if (id == v->unk) continue;
            if (k < cap) out[k] = id;
            k++;
        }
    }
    return k;
}

/* ------------------------------------------------------------- training */

mt_spm_train_params mt_spm_train_default_params(void) {
    mt_spm_train_params p;
    memset(&p, 0, sizeof p);
    p.vocab_size = 32000;
    p.max_lines = 2000000;
    p.seed = 0;
    p.options = NULL;
    p.num_threads = 0;
    p.quiet = true;
    return p;
}

mt_status mt_vocab_train_spm(const char *const *corpora, int n_corpora, const char *model_path,
                             const mt_spm_train_params *p) {
    MT_ASSERT(model_path != NULL && p != NULL);
    if (n_corpora <= 0 || corpora == NULL)
        return mt_seterr(MT_ERR_INVALID, "no training corpus given for SentencePiece model '%s'",
                         model_path);
    if (p->vocab_size < 0 || p->max_lines < 0)
        return mt_seterr(MT_ERR_INVALID,
                         "SentencePiece model '%s': negative vocab_size (%d) or max_lines (%lld)",
                         model_path, (int)p->vocab_size, (long long)p->max_lines);
    mt_log(MT_LOG_INFO, "[SentencePiece] training SentencePiece vocabulary %s", model_path);
    return mt_spm_train(corpora, n_corpora, model_path, p);
}

static int cmp_path(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

mt_status mt_vocab_load_or_train(const char *path, const char *const *corpora, int n_corpora,
                                 int32_t max_size, const mt_spm_train_params *p, mt_vocab **out) {
    MT_ASSERT(path != NULL && out != NULL);
    if (!file_exists(path)) {
        if (!has_suffix(path, ".spm"))
            return mt_seterr(MT_ERR_UNSUPPORTED,
                             "vocabulary '%s' does not exist, and only SentencePiece (.spm) "
                             "vocabularies can be created",
                             path);
        if (n_corpora <= 0 || corpora == NULL)
            return mt_seterr(MT_ERR_INVALID,
                             "vocabulary '%s' does not exist and no training "
                             "corpus is given to create it",
                             path);
        /* Marian groups the files in a std::set: sorted bytewise, without duplicates. */
        const char **sorted = (const char **)mt_try_malloc((size_t)n_corpora * sizeof(char *));
        if (sorted == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
        memcpy(sorted, corpora, (size_t)n_corpora * sizeof(char *));
        qsort(sorted, (size_t)n_corpora, sizeof(char *), cmp_path);
        int n = 0;
        for (int i = 0; i < n_corpora; i++)
            if (n == 0 || strcmp(sorted[n - 1], sorted[i]) != 0) sorted[n++] = sorted[i];
        mt_spm_train_params tp = p ? *p : mt_spm_train_default_params();
        if (max_size > 0) tp.vocab_size = max_size; /* Marian: create(path, paths, dim-vocabs) */
        mt_status rc = mt_vocab_train_spm(sorted, n, path, &tp);
        mt_free((void *)sorted);
        if (rc != MT_OK) return rc;
    }
    return mt_vocab_load(path, max_size, out);
}
