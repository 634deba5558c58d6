/*
** corpus.c: reading line-aligned parallel text and cutting it into
** mini-batches as Marian does (see corpus.h for the behaviour).
**
** Input files, as read here:
**
**   plain text   OFFSET  SIZE  DESCRIPTION
**                   0     *    line 1: UTF-8 bytes, no NUL, up to '\n'
**                   .     1    '\n' (optional after the last line); a '\r'
**                                just before it is dropped
**                   .     *    line 2, ...  (a final '\n' does not start an
**                                empty extra line)
**
**   gzip (RFC 1952), recognised by zlib from its magic whatever the name:
**                OFFSET  SIZE  DESCRIPTION
**                   0     2    magic 1f 8b
**                   2     1    method 8 (deflate)
**                   3     1    flags (FTEXT, FHCRC, FEXTRA, FNAME, FCOMMENT)
**                   4     4    mtime, then XFL (1), OS (1)
**                  10     *    optional extra/name/comment/header CRC
**                   .     *    deflate stream of the plain text above
**                   .     8    CRC32 and ISIZE (little-endian); a missing or
**                                wrong trailer is an error (truncated file);
**                                several members are read one after another
**
** Batching keeps, per epoch, the order of the corpus (a permutation drawn
** from an RNG seeded with (seed, epoch)), a cursor into it, and the current
** maxi-batch: its sentences sorted longest first, the start of each
** mini-batch, and the shuffled order in which the mini-batches are handed
** out.  The same RNG stream shuffles the corpus and then each maxi-batch's
** mini-batches in turn, so skipping n batches replays exactly.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "corpus.h"

#define N_MAX (MT_MAX_STREAMS + 1)

struct mt_corpus {
    int n_streams;
    int64_t size, lines, bad_utf8, too_long;
    int32_t max_len[N_MAX];
    int32_t *tok[N_MAX]; /* tokens of all tuples, stream by stream     */
    int64_t n_tok[N_MAX], cap_tok[N_MAX];
    int64_t *off[N_MAX]; /* [cap_sent + 1] start of tuple i in tok[s]   */
    int64_t *line;       /* [cap_sent] 1-based line numbers            */
    int64_t cap_sent;
    bool keep_text;
    char *text; /* target lines, NUL-terminated, one after another */
    int64_t n_text, cap_text;
    int64_t *text_off; /* [cap_sent] */
};

mt_corpus_params mt_corpus_default_params(void) {
    mt_corpus_params p;
    memset(&p, 0, sizeof p);
    p.max_length = 50;
    return p;
}

void mt_corpus_free(mt_corpus *c) {
    if (c == NULL) return;
    for (int s = 0; s < N_MAX; s++) {
        mt_free(c->tok[s]);
        mt_free(c->off[s]);
    }
    mt_free(c->line);
    mt_free(c->text);
    mt_free(c->text_off);
    mt_free(c);
}

/* Grows *p (elements of size elem, capacity *cap) to hold need elements. */
static bool grow(void **p, int64_t *cap, int64_t need, size_t elem) {
    if (need <= *cap) return true;
    int64_t n = *cap ? *cap : 1024;
    while (n < need)
        n *= 2;
    void *q = mt_try_realloc(*p, (size_t)n * elem);
    if (q == NULL) return false;
    *p = q;
    *cap = n;
    return true;
}

/* ------------------------------------------------------------- reading */

typedef struct line_reader {
    const char *path;
    gzFile f;
    char *buf;
    size_t cap, len;
    int64_t lines; /* lines read so far */
} line_reader;

static mt_status reader_open(line_reader *r, const char *path) {
    memset(r, 0, sizeof *r);
    r->path = path;
    errno = 0;
    r->f = gzopen(path, "rb");
    if (r->f == NULL) {
        return mt_seterr(MT_ERR_IO, "cannot open corpus file %s: %s", path,
                         errno ? strerror(errno) : "out of memory");
    }
    gzbuffer(r->f, 1 << 17);
    r->cap = 4096;
    r->buf = mt_try_malloc(r->cap);
    if (r->buf == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory reading %s", path);
    return MT_OK;
}

static void reader_close(line_reader *r) {
    if (r->f != NULL) gzclose(r->f);
    mt_free(r->buf);
    r->f = NULL;
    r->buf = NULL;
}

static mt_status gz_check(line_reader *r) {
    int err = Z_OK;
    const char *msg = gzerror(r->f, &err);
    if (err == Z_OK) return MT_OK;
    if (err == Z_MEM_ERROR) return mt_seterr(MT_ERR_NOMEM, "out of memory reading %s", r->path);
    return mt_seterr(MT_ERR_IO, "cannot read corpus file %s after line %lld: %s%s", r->path,
                     (long long)r->lines, msg ? msg : "read error",
                     err == Z_BUF_ERROR ? " (truncated .gz file?)" : "");
}

/* Reads the next line into r->buf (line end stripped).  *got is false at
** the end of the file. */
static mt_status reader_next(line_reader *r, bool *got) {
    r->len = 0;
    *got = false;
    for (;;) {
        if (r->cap - r->len < 2) {
            char *nb = mt_try_realloc(r->buf, r->cap * 2);
            if (nb == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory reading %s", r->path);
            r->buf = nb;
            r->cap *= 2;
        }
        char *s =
            gzgets(r->f, r->buf + r->len,
                   (int)(r->cap - r->len > (size_t)1 << 30 ? (size_t)1 << 30 : r->cap - r->len));
        mt_status rc = gz_check(r);
        if (rc != MT_OK) return rc;
        if (s == NULL) break; /* end of file (or nothing more on this line) */
        size_t add = strlen(r->buf + r->len);
        r->len += add;
        *got = true;
        if (r->len > 0 && r->buf[r->len - 1] == '\n') break;
        if (add == 0) break; /* NUL byte in the data: stop the line there */
    }
    if (!*got) return MT_OK;
    if (r->len > 0 && r->buf[r->len - 1] == '\n') r->len--;
    if (r->len > 0 && r->buf[r->len - 1] == '\r') r->len--;
    r->buf[r->len] = '\0';
    r->lines++;
    return MT_OK;
}

/* Counts the lines left in r (for the line-count mismatch message). */
static mt_status reader_count_rest(line_reader *r) {
    bool got = true;
    while (got) {
        mt_status rc = reader_next(r, &got);
        if (rc != MT_OK) return rc;
    }
    return MT_OK;
}

static mt_status line_count_error(line_reader *rd, int n, const bool *got) {
    for (int s = 0; s < n; s++) {
        if (!got[s]) continue;
        mt_status rc = reader_count_rest(&rd[s]);
        if (rc != MT_OK) return rc;
    }
    char msg[1024];
    size_t k = 0;
    for (int s = 0; s < n && k < sizeof msg; s++) {
        k += (size_t)snprintf(msg + k, sizeof msg - k, "%s%s has %lld lines", s ? ", " : "",
                              rd[s].path, (long long)rd[s].lines);
    }
    int first_short = 0;
    for (int s = 0; s < n; s++)
        if (!got[s]) first_short = s;
    return mt_seterr(MT_ERR_FORMAT,
                     "corpus files are not line-aligned (%s): %s ends after line %lld", msg,
                     rd[first_short].path, (long long)rd[first_short].lines);
}

static mt_status append_tuple(mt_corpus *c, int32_t *const *ids, const int64_t *lens, int64_t line,
                              const char *text, size_t text_len) {
    int64_t i = c->size;
    if (i + 1 >= c->cap_sent) {
        int64_t cap = c->cap_sent;
        for (int s = 0; s < c->n_streams; s++) {
            int64_t cs = cap;
            if (!grow((void **)&c->off[s], &cs, i + 2, sizeof(int64_t))) goto nomem;
        }
        int64_t cl = cap;
        if (!grow((void **)&c->line, &cl, i + 2, sizeof(int64_t))) goto nomem;
        if (c->keep_text) {
            int64_t ct = cap;
            if (!grow((void **)&c->text_off, &ct, i + 2, sizeof(int64_t))) goto nomem;
        }
        c->cap_sent = cl;
    }
    for (int s = 0; s < c->n_streams; s++) {
        if (!grow((void **)&c->tok[s], &c->cap_tok[s], c->n_tok[s] + lens[s], sizeof(int32_t)))
            goto nomem;
        memcpy(c->tok[s] + c->n_tok[s], ids[s], (size_t)lens[s] * sizeof(int32_t));
        c->off[s][i] = c->n_tok[s];
        c->n_tok[s] += lens[s];
        c->off[s][i + 1] = c->n_tok[s];
        if (lens[s] > c->max_len[s]) c->max_len[s] = (int32_t)lens[s];
    }
    if (c->keep_text) {
        if (!grow((void **)&c->text, &c->cap_text, c->n_text + (int64_t)text_len + 1, 1))
            goto nomem;
        memcpy(c->text + c->n_text, text, text_len);
        c->text[c->n_text + (int64_t)text_len] = '\0';
        c->text_off[i] = c->n_text;
        c->n_text += (int64_t)text_len + 1;
    }
    c->line[i] = line;
    c->size = i + 1;
    return MT_OK;
nomem:
    return mt_seterr(MT_ERR_NOMEM, "out of memory storing the corpus (%lld sentences)",
                     (long long)i);
}

static void reverse_but_last(int32_t *ids, int64_t n) {
    for (int64_t a = 0, b = n - 2; a < b; a++, b--) {
        int32_t t = ids[a];
        ids[a] = ids[b];
        ids[b] = t;
    }
}

mt_status mt_corpus_load(const char *const *paths, const mt_vocab *const *vocabs, int n_streams,
                         const mt_corpus_params *p, mt_corpus **out) {
    *out = NULL;
    if (n_streams < 2 || n_streams > N_MAX) {
        return mt_seterr(MT_ERR_INVALID, "corpus: %d files given, need 2 to %d (sources, target)",
                         n_streams, N_MAX);
    }
    mt_corpus_params prm = p ? *p : mt_corpus_default_params();
    line_reader rd[N_MAX];
    int32_t *ids[N_MAX] = {0};
    int64_t lens[N_MAX];
    bool got[N_MAX];
    memset(rd, 0, sizeof rd);
    mt_status rc = MT_ERR_NOMEM;
    mt_corpus *c = mt_try_calloc(1, sizeof *c);
    if (c == NULL) return mt_seterr(rc, "corpus: out of memory");
    c->n_streams = n_streams;
    c->keep_text = prm.keep_text;
    for (int s = 0; s < n_streams; s++) {
        rc = reader_open(&rd[s], paths[s]);
        if (rc != MT_OK) goto fail;
    }
    for (;;) {
        int n_got = 0;
        for (int s = 0; s < n_streams; s++) {
            rc = reader_next(&rd[s], &got[s]);
            if (rc != MT_OK) goto fail;
            n_got += got[s];
        }
        if (n_got == 0) break;
        if (n_got != n_streams) {
            rc = line_count_error(rd, n_streams, got);
            goto fail;
        }
        int64_t line = ++c->lines;
        bool ok = true;
        for (int s = 0; s < n_streams && ok; s++) {
            size_t bad = 0;
            if (!mt_utf8_valid(rd[s].buf, rd[s].len, &bad)) {
                mt_log(MT_LOG_WARN,
                       "[data] %s:%lld: invalid UTF-8 at byte %zu, skipping the sentence pair",
                       rd[s].path, (long long)line, bad);
                c->bad_utf8++;
                ok = false;
            }
        }
        if (!ok) continue;
        for (int s = 0; s < n_streams; s++) {
            rc = mt_vocab_encode(vocabs[s], rd[s].buf, MT_VOCAB_ADD_EOS, &ids[s], &lens[s]);
            if (rc != MT_OK) {
                char msg[512];
                snprintf(msg, sizeof msg, "%s", mt_errmsg());
                rc = mt_seterr(rc, "%s:%lld: %s", rd[s].path, (long long)line, msg);
                goto fail;
            }
            if (prm.max_length > 0 && lens[s] > prm.max_length) {
                if (prm.max_length_crop) {
                    lens[s] = prm.max_length;
                    ids[s][lens[s] - 1] = mt_vocab_eos_id(vocabs[s]);
                } else {
                    ok = false;
                }
            }
            if (lens[s] > INT32_MAX / 2) ok = false;
        }
        if (ok) {
            for (int s = 0; s < n_streams && prm.right_left; s++)
                reverse_but_last(ids[s], lens[s]);
            const line_reader *t = &rd[n_streams - 1];
            rc = append_tuple(c, ids, lens, line, t->buf, t->len);
        } else {
            c->too_long++;
        }
        for (int s = 0; s < n_streams; s++) {
            mt_free(ids[s]);
            ids[s] = NULL;
        }
        if (rc != MT_OK) goto fail;
    }
    for (int s = 0; s < n_streams; s++)
        reader_close(&rd[s]);
    /* an empty corpus still has valid offset arrays */
    if (c->cap_sent == 0) {
        for (int s = 0; s < n_streams; s++) {
            c->off[s] = mt_try_calloc(1, sizeof(int64_t));
            if (c->off[s] == NULL) {
                rc = mt_seterr(MT_ERR_NOMEM, "corpus: out of memory");
                goto fail;
            }
        }
    }
    *out = c;
    return MT_OK;
fail:
    for (int s = 0; s < N_MAX; s++) {
        mt_free(ids[s]);
        reader_close(&rd[s]);
    }
    mt_corpus_free(c);
    return rc;
}

int mt_corpus_streams(const mt_corpus *c) { return c->n_streams; }
int64_t mt_corpus_size(const mt_corpus *c) { return c->size; }
int64_t mt_corpus_lines(const mt_corpus *c) { return c->lines; }
int64_t mt_corpus_bad_utf8(const mt_corpus *c) { return c->bad_utf8; }
int64_t mt_corpus_too_long(const mt_corpus *c) { return c->too_long; }

int32_t mt_corpus_max_len(const mt_corpus *c, int stream) {
    MT_ASSERT(stream >= 0 && stream < c->n_streams);
    return c->max_len[stream];
}

const int32_t *mt_corpus_tokens(const mt_corpus *c, int64_t i, int s, int32_t *len) {
    MT_ASSERT(i >= 0 && i < c->size && s >= 0 && s < c->n_streams);
    *len = (int32_t)(c->off[s][i + 1] - c->off[s][i]);
    return c->tok[s] + c->off[s][i];
}

int64_t mt_corpus_line(const mt_corpus *c, int64_t i) {
    MT_ASSERT(i >= 0 && i < c->size);
    return c->line[i];
}

const char *mt_corpus_text(const mt_corpus *c, int64_t i) {
    MT_ASSERT(i >= 0 && i < c->size);
    return c->keep_text ? c->text + c->text_off[i] : NULL;
}

/* ------------------------------------------------------------ batching */

typedef struct sort_item {
    int32_t key[N_MAX];
    int64_t idx;
} sort_item;

struct mt_batcher {
    const mt_corpus *c;
    mt_batcher_params p;
    int n_keys;
    int64_t epoch, position;
    mt_rng rng;
    int64_t *order; /* [size] corpus order of this epoch                    */
    int64_t cursor; /* next entry of order to read into a maxi-batch        */
    sort_item *pool;
    int64_t pool_cap;
    int64_t *start;  /* [pool_cap + 1] first pool item of each mini-batch */
    int64_t *border; /* [pool_cap] order in which mini-batches go out      */
    int64_t n_batches, cur;
    int64_t bcap; /* sentences the batch arrays hold */
    mt_batch *batch;
};

mt_batcher_params mt_batcher_default_params(void) {
    mt_batcher_params p;
    memset(&p, 0, sizeof p);
    p.mini_batch = 64;
    p.maxi_batch = 100;
    p.sort = MT_SORT_TRG;
    p.shuffle = MT_SHUFFLE_DATA;
    return p;
}

bool mt_batch_sort_parse(const char *s, mt_batch_sort *out) {
    if (!strcmp(s, "trg"))
        *out = MT_SORT_TRG;
    else if (!strcmp(s, "src"))
        *out = MT_SORT_SRC;
    else if (!strcmp(s, "none"))
        *out = MT_SORT_NONE;
    else
        return false;
    return true;
}

bool mt_batch_shuffle_parse(const char *s, mt_batch_shuffle *out) {
    if (!strcmp(s, "data"))
        *out = MT_SHUFFLE_DATA;
    else if (!strcmp(s, "batches"))
        *out = MT_SHUFFLE_BATCHES;
    else if (!strcmp(s, "none"))
        *out = MT_SHUFFLE_NONE;
    else
        return false;
    return true;
}

void mt_batcher_free(mt_batcher *b) {
    if (b == NULL) return;
    mt_free(b->order);
    mt_free(b->pool);
    mt_free(b->start);
    mt_free(b->border);
    mt_batch_free(b->batch);
    mt_free(b);
}

mt_status mt_batcher_init(const mt_corpus *c, const mt_batcher_params *p, mt_batcher **out) {
    *out = NULL;
    if (p->mini_batch < 1 || p->maxi_batch < 1 || p->mini_batch_words < 0) {
        return mt_seterr(MT_ERR_INVALID,
                         "batching: bad sizes (mini-batch %d, maxi-batch %d, "
                         "mini-batch-words %lld)",
                         (int)p->mini_batch, (int)p->maxi_batch, (long long)p->mini_batch_words);
    }
    mt_batcher *b = mt_try_calloc(1, sizeof *b);
    if (b == NULL) return mt_seterr(MT_ERR_NOMEM, "batching: out of memory");
    b->c = c;
    b->p = *p;
    b->n_keys = c->n_streams;
    b->pool_cap = (int64_t)p->mini_batch * p->maxi_batch;
    if (b->pool_cap > c->size) b->pool_cap = c->size > 0 ? c->size : 1;
    int64_t bcap = p->mini_batch_words > 0 ? p->mini_batch_words : p->mini_batch;
    if (bcap > b->pool_cap) bcap = b->pool_cap;
    int32_t lens[MT_MAX_STREAMS];
    int n_src = c->n_streams - 1;
    for (int s = 0; s < n_src; s++)
        lens[s] = c->max_len[s] > 0 ? c->max_len[s] : 1;
    int32_t tl = c->max_len[n_src] > 0 ? c->max_len[n_src] : 1;
    mt_status rc = MT_ERR_NOMEM;
    b->order = mt_try_calloc((size_t)(c->size > 0 ? c->size : 1), sizeof *b->order);
    b->pool = mt_try_calloc((size_t)b->pool_cap, sizeof *b->pool);
    b->start = mt_try_calloc((size_t)b->pool_cap + 1, sizeof *b->start);
    b->border = mt_try_calloc((size_t)b->pool_cap, sizeof *b->border);
    if (!b->order || !b->pool || !b->start || !b->border) {
        mt_seterr(rc, "batching: out of memory (%lld sentences)", (long long)c->size);
        goto fail;
    }
    b->bcap = bcap;
    rc = mt_batch_alloc(n_src, (int32_t)bcap, lens, tl, &b->batch);
    if (rc != MT_OK) goto fail;
    mt_batcher_begin_epoch(b, 1);
    *out = b;
    return MT_OK;
fail:
    mt_batcher_free(b);
    return rc;
}

static uint64_t rng_below(mt_rng *r, uint64_t n) { return mt_rng_next(r) % n; }

void mt_batcher_begin_epoch(mt_batcher *b, int64_t epoch) {
    b->epoch = epoch;
    b->position = 0;
    b->cursor = 0;
    b->n_batches = b->cur = 0;
    mt_rng_seed(&b->rng, b->p.seed ^ ((uint64_t)epoch * 0x9E3779B97F4A7C15ull));
    int64_t n = b->c->size;
    for (int64_t i = 0; i < n; i++)
        b->order[i] = i;
    if (b->p.shuffle == MT_SHUFFLE_DATA) {
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)rng_below(&b->rng, (uint64_t)i + 1);
            int64_t t = b->order[i];
            b->order[i] = b->order[j];
            b->order[j] = t;
        }
    }
}

/* Longest first: keys descending, ties by descending corpus index (the
** order in which Marian's priority queue pops equal entries is
** unspecified; this one is deterministic and matches --maxi-batch-sort
** none, which pops the highest sentence id first). */
static int cmp_items(const void *pa, const void *pb) {
    const sort_item *a = pa, *b = pb;
    for (int k = 0; k < N_MAX; k++) {
        if (a->key[k] != b->key[k]) return a->key[k] > b->key[k] ? -1 : 1;
    }
    return a->idx > b->idx ? -1 : (a->idx < b->idx ? 1 : 0);
}

static int32_t tuple_len(const mt_corpus *c, int64_t i, int s) {
    return (int32_t)(c->off[s][i + 1] - c->off[s][i]);
}

/* Reads the next maxi-batch; false when the epoch is over. */
static bool load_maxi(mt_batcher *b) {
    const mt_corpus *c = b->c;
    int64_t left = c->size - b->cursor;
    if (left <= 0) return false;
    int64_t m = left < b->pool_cap ? left : b->pool_cap;
    int n = c->n_streams;
    for (int64_t k = 0; k < m; k++) {
        sort_item *it = &b->pool[k];
        memset(it->key, 0, sizeof it->key);
        it->idx = b->order[b->cursor + k];
        if (b->p.sort == MT_SORT_TRG) {
            for (int s = n - 1, q = 0; s >= 0; s--, q++)
                it->key[q] = tuple_len(c, it->idx, s);
        } else if (b->p.sort == MT_SORT_SRC) {
            for (int s = 0; s < n; s++)
                it->key[s] = tuple_len(c, it->idx, s);
        }
    }
    b->cursor += m;
    qsort(b->pool, (size_t)m, sizeof *b->pool, cmp_items);
    /* cut into mini-batches */
    int64_t nb = 0, words = 0, in_batch = 0;
    b->start[0] = 0;
    for (int64_t k = 0; k < m; k++) {
        if (b->p.mini_batch_words > 0) {
            int32_t w = tuple_len(c, b->pool[k].idx, 0);
            if (in_batch > 0 && words + w > b->p.mini_batch_words) {
                b->start[++nb] = k;
                words = 0;
                in_batch = 0;
            }
            words += w;
            in_batch++;
        } else {
            if (in_batch == b->p.mini_batch) {
                b->start[++nb] = k;
                in_batch = 0;
            }
            in_batch++;
        }
    }
    b->start[++nb] = m;
    b->n_batches = nb;
    b->cur = 0;
    for (int64_t k = 0; k < nb; k++)
        b->border[k] = k;
    if (b->p.shuffle != MT_SHUFFLE_NONE) {
        for (int64_t i = nb - 1; i > 0; i--) {
            int64_t j = (int64_t)rng_below(&b->rng, (uint64_t)i + 1);
            int64_t t = b->border[i];
            b->border[i] = b->border[j];
            b->border[j] = t;
        }
    }
    return true;
}

static void fill_batch(mt_batcher *b, int64_t k) {
    const mt_corpus *c = b->c;
    mt_batch *bt = b->batch;
    int64_t first = b->start[k], end = b->start[k + 1];
    int32_t size = (int32_t)(end - first);
    int n_src = c->n_streams - 1;
    MT_ASSERT(size >= 1 && size <= b->bcap);
    bt->size = size;
    bt->trg_words = 0;
    for (int s = 0; s <= n_src; s++) {
        int32_t len = 0;
        for (int64_t q = first; q < end; q++) {
            int32_t l = tuple_len(c, b->pool[q].idx, s);
            if (l > len) len = l;
        }
        int32_t *ids = s < n_src ? bt->src_ids[s] : bt->trg_ids;
        float *mask = s < n_src ? bt->src_mask[s] : bt->trg_mask;
        if (s < n_src)
            bt->src_len[s] = len;
        else
            bt->trg_len = len;
        for (int64_t q = first; q < end; q++) {
            int64_t row = q - first, idx = b->pool[q].idx;
            int32_t l = tuple_len(c, idx, s);
            const int32_t *tok = c->tok[s] + c->off[s][idx];
            int32_t *dst = ids + row * len;
            float *dm = mask + row * len;
            for (int32_t t = 0; t < len; t++) {
                dst[t] = t < l ? tok[t] : 0;
                dm[t] = t < l ? 1.0f : 0.0f;
            }
            if (s == n_src) bt->trg_words += l;
            bt->sent_ids[row] = idx;
        }
    }
}

static const mt_batch *advance(mt_batcher *b, bool fill) {
    for (;;) {
        if (b->cur < b->n_batches) {
            int64_t k = b->border[b->cur++];
            if (fill) fill_batch(b, k);
            b->position++;
            return b->batch;
        }
        if (!load_maxi(b)) return NULL;
    }
}

const mt_batch *mt_batcher_next(mt_batcher *b) { return advance(b, true); }

int64_t mt_batcher_skip(mt_batcher *b, int64_t n) {
    int64_t k = 0;
    while (k < n && advance(b, false) != NULL)
        k++;
    return k;
}

int64_t mt_batcher_epoch(const mt_batcher *b) { return b->epoch; }
int64_t mt_batcher_position(const mt_batcher *b) { return b->position; }

/* ----------------------------------------------------- whole text files */

mt_status mt_text_read_all(const char *path, char **out, size_t *len) {
    mt_status rc = MT_OK;
    char *buf = NULL;
    size_t n = 0, cap = 1 << 16;
    gzFile f = gzopen(path, "rb");
    if (f == NULL) return mt_seterr(MT_ERR_IO, "cannot open '%s'", path);
    buf = mt_try_malloc(cap);
    if (buf == NULL) {
        rc = mt_seterr(MT_ERR_NOMEM, "no memory to read '%s'", path);
        goto fail;
    }
    for (;;) {
        if (cap - n < (1 << 15) + 1) {
            size_t ncap = cap * 2;
            char *nb = mt_try_realloc(buf, ncap);
            if (nb == NULL) {
                rc = mt_seterr(MT_ERR_NOMEM, "no memory to read '%s' (%zu bytes)", path, ncap);
                goto fail;
            }
            buf = nb;
            cap = ncap;
        }
        int got = gzread(f, buf + n, 1 << 15);
        if (got < 0) {
            int zerr = 0;
            const char *msg = gzerror(f, &zerr);
            rc = mt_seterr(MT_ERR_IO, "cannot read '%s': %s", path, msg ? msg : "?");
            goto fail;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    gzclose(f);
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return MT_OK;
fail:
    mt_free(buf);
    gzclose(f);
    return rc;
}

bool mt_next_line(const char *buf, size_t len, size_t *pos, const char **line, size_t *line_len) {
    if (*pos >= len) return false;
    const char *s = buf + *pos;
    const char *nl = memchr(s, '\n', len - *pos);
    size_t n = nl ? (size_t)(nl - s) : len - *pos;
    *pos += n + (nl ? 1 : 0);
    if (n > 0 && s[n - 1] == '\r') n--;
    *line = s;
    *line_len = n;
    return true;
}
