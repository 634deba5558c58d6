/*
** cmd_score.c: `mtpe score`, Marian's marian-scorer (reference/
** marian-compat.md §6; src/rescorer/rescorer.h, score_collector.cpp).
**
**   mtpe score -m MODEL -v SRC.spm TRG.spm -t SRC.txt TRG.txt
**
** For every sentence pair: the log-probability of the target given the
** source, the sum over its tokens including the final EOS (label smoothing
** off), one line each in input order, printed as std::to_string(float)
** does ("%f": -7.902769).  Options as Marian's:
**
**   -n, --normalize [A]     divide by the target length (incl. EOS) ^ A
**                           (bare: 1; Marian's scorer knows only A = 1)
**   --word-scores           append " ||| WordScores=" and one " %.5f" per
**                           target token (EOS last; model order)
**   --alignment [soft|hard|T]   append " ||| " and the attention of the
**                           model's guided-alignment layer (head 0) over
**                           the source: soft = rows of comma-separated
**                           weights ("%g"), hard/1 = argmax s-t pairs,
**                           T < 1: pairs with weight > T, sorted by (s, t)
**   --summary [ce-sum|ce-mean|ce-mean-words|perplexity|cross-entropy]
**                           print only one number ("%g", 6 significant
**                           digits as std::cout): the summed cross-entropy
**                           (ce-sum), per sentence (ce-mean, cross-entropy,
**                           the bare flag), per target token
**                           (ce-mean-words) or exp of that (perplexity)
**   --n-best                the last --train-sets file is a Marian n-best
**                           list ("ID ||| text ||| features ||| total"); a
**                           source line is read whenever the ID advances;
**                           each n-best line is printed back with
**                           " FEATURE= score" ("%g") appended to its third
**                           field (--n-best-feature, default Score), after
**                           the alignment and word scores when asked for
**   -m a.npz b.npz --weights wa wb   ensemble: the weighted sum of the
**                           models' scores (all must share the vocabularies)
**   --mini-batch, --maxi-batch, --maxi-batch-sort, --max-length(-crop),
**   --cpu-threads N (N worker threads, one graph each), -o/--output;
**   --gemm-type float32|int16|int8|auto (as mtpe translate's: products
**   with weight matrices in fp32 or the integer GEMM, weights packed once
**   per worker graph; mtpe's, not marian-scorer's);
**   -w/--workspace, -d/--devices, --quiet, --log-level are accepted and
**   ignored.
**
** Right-to-left models (right-left: true in the model) read every stream
** reversed except its final EOS, as Marian's corpus reader does, so word
** scores and alignments are in that order.  Sentence pairs longer than
** --max-length (default 1000 tokens incl. EOS) are skipped without output,
** as Marian does, unless --max-length-crop.
*/
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "common.h"
#include "model.h"
#include "mt.h"
#include "options.h"
#include "vocab.h"

#define N_STREAMS_MAX MT_MAX_VOCABS

static const app_opt score_opts[] = {
    {"config", 'c', APP_OPT_STRINGS, NULL, NULL, "YAML config files (command line wins)"},
    {"models", 'm', APP_OPT_STRINGS, NULL, NULL, "model(s) to score with (.npz or .bin)"},
    {"model", 0, APP_OPT_STRINGS, NULL, NULL, "same as --models (marian-scorer's name)"},
    {"weights", 0, APP_OPT_FLOATS, NULL, NULL, "ensemble weights (default 1 each)"},
    {"vocabs", 'v', APP_OPT_STRINGS, NULL, NULL, "vocabularies: sources..., target"},
    {"train-sets", 't', APP_OPT_STRINGS, NULL, NULL, "parallel files: sources..., target"},
    {"output", 'o', APP_OPT_STRING, "stdout", NULL, "where the scores go"},
    {"normalize", 'n', APP_OPT_FLOAT, "0", "1", "divide scores by target length ^ A"},
    {"word-scores", 0, APP_OPT_FLAG, NULL, NULL, "print the log-probability of every token"},
    {"alignment", 0, APP_OPT_STRING, "", "1", "print alignments: soft, hard or a threshold"},
    {"summary", 0, APP_OPT_STRING, "", "cross-entropy",
     "one number only: ce-sum, ce-mean, ce-mean-words, perplexity, cross-entropy"},
    {"n-best", 0, APP_OPT_FLAG, NULL, NULL, "the last train-set is an n-best list to rescore"},
    {"n-best-feature", 0, APP_OPT_STRING, "Score", NULL, "name of the feature added"},
    {"mini-batch", 0, APP_OPT_INT, "64", NULL, "sentences per batch", "1..65536"},
    {"maxi-batch", 0, APP_OPT_INT, "100", NULL, "batches read and sorted together", "1..10000"},
    {"maxi-batch-sort", 0, APP_OPT_STRING, "trg", NULL, "sort a maxi-batch by length or not",
     "trg|src|none"},
    {"max-length", 0, APP_OPT_INT, "1000", NULL, "skip pairs longer than this (tokens)",
     "1..1000000"},
    {"max-length-crop", 0, APP_OPT_FLAG, NULL, NULL, "crop instead of skipping"},
    {"cpu-threads", 0, APP_OPT_INT, "1", NULL, "worker threads", "1..256"},
    {"gemm-type", 'g', APP_OPT_STRING, "float32", NULL,
     "weight products: float32, int16, int8 or auto (tuned per shape)"},
    {"workspace", 'w', APP_OPT_INT, "512", NULL, "ignored (Marian's workspace MB)"},
    {"devices", 'd', APP_OPT_STRINGS, "0", NULL, "ignored"},
    {"quiet", 0, APP_OPT_FLAG, NULL, NULL, "no log messages"},
    {"quiet-translation", 0, APP_OPT_FLAG, NULL, NULL, "ignored"},
    {"log-level", 0, APP_OPT_STRING, "info", NULL, "ignored"},
};
static const int n_score_opts = (int)(sizeof score_opts / sizeof score_opts[0]);

/* One scored item: a sentence tuple (or an n-best line) and its results. */
typedef struct item {
    int32_t *ids[N_STREAMS_MAX];
    int32_t len[N_STREAMS_MAX];
    char *nbest_line; /* --n-best: the line as read                        */
    double score;     /* weighted sum of the models' log-probs               */
    float *words;     /* [len[trg]] weighted token log-probs (--word-scores) */
    float *align;     /* [len[trg] * len[0]] first model (--alignment)       */
} item;

typedef struct scorer {
    app_opts *o;
    mt_ensemble am; /* the ensemble and its vocabularies */
    int n_models, n_streams, n_src;
    mt_model **models;
    const float *weights;
    mt_vocab **vocabs;
    bool right_left, word_scores, want_align, nbest;
    int32_t max_length;
    bool crop;
    mt_gemm_type gemm_type; /* --gemm-type */
    /* the current chunk */
    item *items;
    int n_items;
    int *order;    /* items in batch order                                */
    int *batch_at; /* first position in order of each batch; n_batches+1  */
    int n_batches;
    /* work distribution */
    pthread_mutex_t mu;
    int next_batch;
    mt_status rc;
    char err[512];
} scorer;

/* ---------------------------------------------------------- scoring */

static void record_error(scorer *s, mt_status rc) {
    pthread_mutex_lock(&s->mu);
    if (s->rc == MT_OK) {
        s->rc = rc;
        snprintf(s->err, sizeof s->err, "%s", mt_errmsg());
    }
    pthread_mutex_unlock(&s->mu);
}

static mt_status score_batch(scorer *s, mt_graph *g, const int *idx, int n, float *buf,
                             size_t cap) {
    mt_batch_seq seqs[64 * N_STREAMS_MAX] = {{0}};
    mt_batch_seq *q = (size_t)n * (size_t)s->n_streams <= sizeof seqs / sizeof seqs[0]
                          ? seqs
                          : mt_try_malloc(sizeof *q * (size_t)n * (size_t)s->n_streams);
    if (q == NULL) return mt_seterr(MT_ERR_NOMEM, "score: out of memory");
    for (int i = 0; i < n; i++)
        for (int k = 0; k < s->n_streams; k++)
            q[i * s->n_streams + k] =
                (mt_batch_seq){s->items[idx[i]].ids[k], s->items[idx[i]].len[k]};
    mt_batch *b = NULL;
    mt_status rc = mt_batch_make(s->n_src, true, n, q, NULL, &b);
    if (q != seqs) mt_free(q);
    if (rc != MT_OK) return rc;
    int64_t tl = b->trg_len, sl = b->src_len[0];
    int trg = s->n_streams - 1;
    for (int i = 0; i < n; i++) {
        item *it = &s->items[idx[i]];
        it->score = 0;
        if (s->word_scores)
            for (int t = 0; t < it->len[trg]; t++)
                it->words[t] = 0;
    }
    for (int m = 0; m < s->n_models && rc == MT_OK; m++) {
        mt_graph_clear(g);
        mt_model_loss L = mt_model_build_loss(s->models[m], g, b, 0.0f);
        rc = L.status;
        if (rc == MT_OK) { /* the values read below (the others are freed) */
            mt_graph_keep(g, L.logprob_sent);
            mt_graph_keep(g, L.logprob_word);
            mt_graph_keep(g, L.align);
            rc = mt_graph_forward(g);
        }
        if (rc == MT_OK && (size_t)(n * tl) > cap)
            rc = mt_seterr(MT_ERR_NOMEM, "score: batch too large");
        if (rc == MT_OK) rc = mt_node_get(L.logprob_sent, buf, n);
        for (int i = 0; rc == MT_OK && i < n; i++)
            s->items[idx[i]].score += (double)s->weights[m] * buf[i];
        if (rc == MT_OK && s->word_scores) {
            rc = mt_node_get(L.logprob_word, buf, n * tl);
            for (int i = 0; rc == MT_OK && i < n; i++) {
                item *it = &s->items[idx[i]];
                for (int t = 0; t < it->len[trg]; t++)
                    it->words[t] += s->weights[m] * buf[i * tl + t];
            }
        }
        if (rc == MT_OK && s->want_align && m == 0) {
            if ((size_t)(n * tl * sl) > cap) {
                rc = mt_seterr(MT_ERR_NOMEM, "score: batch too large for alignments");
            } else if (L.align) {
                rc = mt_node_get(L.align, buf, n * tl * sl);
                for (int i = 0; rc == MT_OK && i < n; i++) {
                    item *it = &s->items[idx[i]];
                    for (int t = 0; t < it->len[trg]; t++)
                        for (int k = 0; k < it->len[0]; k++)
                            it->align[t * it->len[0] + k] = buf[(i * tl + t) * sl + k];
                }
            }
        }
    }
    mt_batch_free(b);
    return rc;
}

static void *worker(void *arg) {
    scorer *s = arg;
    mt_graph *g = NULL;
    size_t cap = 0;
    float *buf = NULL;
    /* an inference graph that memoizes: weights are transposed, or
    ** quantized and packed (--gemm-type), once per worker */
    mt_graph_params gp = mt_graph_default_params();
    gp.training = false;
    gp.memoize = true;
    /* values freed after their last use: an s2s model's teacher forcing
    ** builds every target position's attention ([B, S, 2 dim-rnn] each) */
    gp.release_values = true;
    gp.decode.gemm_type = s->gemm_type;
    mt_status rc = mt_graph_init(NULL, gp, &g);
    if (rc != MT_OK) {
        record_error(s, rc);
        return NULL;
    }
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int bi = s->rc == MT_OK && s->next_batch < s->n_batches ? s->next_batch++ : -1;
        pthread_mutex_unlock(&s->mu);
        if (bi < 0) break;
        const int *idx = s->order + s->batch_at[bi];
        int n = s->batch_at[bi + 1] - s->batch_at[bi];
        int32_t tl = 1, sl = 1, trg = s->n_streams - 1;
        for (int i = 0; i < n; i++) {
            if (s->items[idx[i]].len[trg] > tl) tl = s->items[idx[i]].len[trg];
            if (s->items[idx[i]].len[0] > sl) sl = s->items[idx[i]].len[0];
        }
        size_t need = (size_t)n * (size_t)tl * (s->want_align ? (size_t)sl : 1);
        if (need > cap) {
            mt_free(buf);
            buf = mt_try_malloc(need * sizeof(float));
            cap = buf ? need : 0;
            if (buf == NULL) {
                record_error(s, mt_seterr(MT_ERR_NOMEM, "score: out of memory"));
                break;
            }
        }
        rc = score_batch(s, g, idx, n, buf, cap);
        if (rc != MT_OK) {
            record_error(s, rc);
            break;
        }
    }
    mt_free(buf);
    mt_graph_free(g);
    return NULL;
}

/* Sort key of an item: its length in the maxi-batch-sort stream. */
typedef struct sort_ent {
    int32_t len;
    int idx;
} sort_ent;

static int cmp_ents(const void *a, const void *b) {
    const sort_ent *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1; /* longest first */
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Sorts the chunk into batches (Marian's maxi-batch: longest first) and
** scores them with the worker threads. */
static mt_status score_chunk(scorer *s) {
    int n = s->n_items;
    if (n == 0) return MT_OK;
    int mini = (int)app_opts_int(s->o, "mini-batch");
    if (mini < 1) mini = 1;
    const char *sort = app_opts_str(s->o, "maxi-batch-sort");
    int key = !strcmp(sort, "src") ? 0 : !strcmp(sort, "none") ? -1 : s->n_streams - 1;
    sort_ent *ents = mt_try_malloc(sizeof *ents * (size_t)n);
    if (ents == NULL) return mt_seterr(MT_ERR_NOMEM, "score: out of memory");
    for (int i = 0; i < n; i++)
        ents[i] = (sort_ent){key >= 0 ? s->items[i].len[key] : 0, i};
    qsort(ents, (size_t)n, sizeof *ents, cmp_ents);
    for (int i = 0; i < n; i++)
        s->order[i] = ents[i].idx;
    mt_free(ents);
    s->n_batches = 0;
    for (int i = 0; i < n; i += mini)
        s->batch_at[s->n_batches++] = i;
    s->batch_at[s->n_batches] = n;
    s->next_batch = 0;
    int threads = (int)app_opts_int(s->o, "cpu-threads");
    if (threads < 1) threads = 1;
    if (threads > s->n_batches) threads = s->n_batches;
    app_blas_single_threaded(); /* N workers of one thread each */
    app_run_workers(threads, worker, s);
    if (s->rc != MT_OK) return mt_seterr(s->rc, "%s", s->err);
    return MT_OK;
}

/* ----------------------------------------------------------- output */

static void print_alignment(FILE *out, const item *it, int trg, const char *how) {
    app_print_alignment(out, it->align, it->len[trg], it->len[0], how);
}

/* std::to_string(float): "%f" */
static void print_item(scorer *s, FILE *out, const item *it, double alpha) {
    int trg = s->n_streams - 1;
    float score = (float)it->score;
    if (alpha > 0 && score != 0.0f) score = (float)(score / pow((double)it->len[trg], alpha));
    const char *how = app_opts_str(s->o, "alignment");
    if (s->nbest) {
        /* fields split on "|||"; the score goes into the third field */
        const char *line = it->nbest_line;
        const char *f2 = strstr(line, "|||");
        f2 = f2 ? strstr(f2 + 3, "|||") : NULL;
        const char *f3 = f2 ? strstr(f2 + 3, "|||") : NULL;
        if (!f2) {
            fprintf(out, "%s\n", line);
            return;
        }
        fwrite(line, 1, (size_t)(f2 + 3 - line), out);
        if (s->want_align) {
            fputc(' ', out);
            print_alignment(out, it, trg, how);
            fputs(" |||", out);
        }
        if (s->word_scores) {
            fputs(" WordScores=", out);
            for (int t = 0; t < it->len[trg]; t++)
                fprintf(out, " %.5f", (double)it->words[t]);
            fputs(" |||", out);
        }
        size_t flen = f3 ? (size_t)(f3 - (f2 + 3)) : strlen(f2 + 3);
        fwrite(f2 + 3, 1, flen, out);
        fprintf(out, "%s= %g ", app_opts_str(s->o, "n-best-feature"), (double)score);
        fprintf(out, "%s\n", f3 ? f3 : "");
        return;
    }
    fprintf(out, "%f", (double)score);
    if (s->want_align) {
        fputs(" ||| ", out);
        print_alignment(out, it, trg, how);
    }
    if (s->word_scores) {
        fputs(" ||| WordScores=", out);
        for (int t = 0; t < it->len[trg]; t++)
            fprintf(out, " %.5f", (double)it->words[t]);
    }
    fputc('\n', out);
}

/* ----------------------------------------------------------- input */

static void item_clear(item *it) {
    for (int k = 0; k < N_STREAMS_MAX; k++)
        mt_free(it->ids[k]);
    mt_free(it->nbest_line);
    mt_free(it->words);
    mt_free(it->align);
    memset(it, 0, sizeof *it);
}

static char *trim(char *t) {
    while (*t == ' ' || *t == '\t')
        t++;
    size_t n = strlen(t);
    while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t'))
        t[--n] = '\0';
    return t;
}

/* Encodes text for stream k into it (EOS added, cropped, reversed for
** right-to-left).  Returns false when the tuple is too long (skipped). */
static mt_status encode_stream(scorer *s, item *it, int k, const char *text, const char *file,
                               int64_t line, bool *too_long) {
    int64_t n = 0;
    mt_status rc = mt_vocab_encode(s->vocabs[k], text, MT_VOCAB_ADD_EOS, &it->ids[k], &n);
    if (rc != MT_OK) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s", mt_errmsg());
        return mt_seterr(rc, "%s:%lld: %s", file, (long long)line, msg);
    }
    if (s->max_length > 0 && n > s->max_length) {
        if (s->crop) {
            n = s->max_length;
            it->ids[k][n - 1] = mt_vocab_eos_id(s->vocabs[k]);
        } else {
            *too_long = true;
        }
    }
    it->len[k] = (int32_t)n;
    if (s->right_left) mt_batch_reverse_seq(it->ids[k], it->len[k]);
    return MT_OK;
}

static mt_status alloc_results(scorer *s, item *it) {
    int trg = s->n_streams - 1;
    if (s->word_scores) it->words = mt_try_calloc((size_t)it->len[trg], sizeof(float));
    if (s->want_align)
        it->align = mt_try_calloc((size_t)it->len[trg] * (size_t)it->len[0], sizeof(float));
    if ((s->word_scores && !it->words) || (s->want_align && !it->align))
        return mt_seterr(MT_ERR_NOMEM, "score: out of memory");
    return MT_OK;
}

/* ------------------------------------------------------------ main */

static int fail_msg(const char *what) {
    fprintf(stderr, "mtpe score: %s\n", what);
    return 1;
}

static mt_status load_all(scorer *s) {
    app_opts *o = s->o;
    const char *key = app_opts_count(o, "models") > 0 ? "models" : "model";
    int n = app_opts_count(o, key), nw = app_opts_count(o, "weights");
    if (n > MT_MAX_MODELS) return mt_seterr(MT_ERR_INVALID, "at most %d models", MT_MAX_MODELS);
    if (nw != 0 && nw != n) return mt_seterr(MT_ERR_INVALID, "%d weights for %d models", nw, n);
    const char *paths[MT_MAX_MODELS], *vpaths[N_STREAMS_MAX];
    float w[MT_MAX_MODELS];
    for (int m = 0; m < n; m++) {
        paths[m] = app_opts_item(o, key, m);
        w[m] = nw ? (float)app_opts_float_item(o, "weights", m) : 1.0f;
    }
    int nv = app_opts_count(o, "vocabs");
    if (nv > N_STREAMS_MAX) nv = N_STREAMS_MAX;
    for (int k = 0; k < nv; k++)
        vpaths[k] = app_opts_item(o, "vocabs", k);
    mt_status rc = mt_ensemble_load(&s->am, paths, n, w, vpaths, nv);
    if (rc != MT_OK) return rc;
    s->n_models = s->am.n_models;
    s->n_src = s->am.n_src;
    s->n_streams = s->am.n_streams;
    s->models = s->am.models;
    s->weights = s->am.weights;
    s->vocabs = s->am.vocabs;
    s->right_left = s->am.right_left;
    if (app_opts_count(o, "train-sets") != s->n_streams)
        return mt_seterr(MT_ERR_INVALID, "give %d files (-t sources... target), got %d",
                         s->n_streams, app_opts_count(o, "train-sets"));
    return MT_OK;
}

static int run(scorer *s) {
    app_opts *o = s->o;
    /* every pair of a maxi-batch is held in memory */
    int64_t chunk64 = app_opts_int(o, "mini-batch") * app_opts_int(o, "maxi-batch");
    if (chunk64 > 1000000) {
        fprintf(stderr,
                "mtpe score: --mini-batch times --maxi-batch is %lld pairs read at once, at "
                "most 1000000\n",
                (long long)chunk64);
        return 2;
    }
    if (mt_gemm_type_parse(app_opts_str(o, "gemm-type"), &s->gemm_type) != MT_OK) {
        char msg[256];
        snprintf(msg, sizeof msg, "--gemm-type: '%.100s' is not float32, int16, int8 or auto",
                 app_opts_str(o, "gemm-type"));
        return fail_msg(msg);
    }
    mt_status rc = load_all(s);
    if (rc != MT_OK) return fail_msg(mt_errmsg());
    const char *summary = app_opts_str(o, "summary");
    const char *how = app_opts_str(o, "alignment");
    double alpha = app_opts_float(o, "normalize");
    s->word_scores = app_opts_flag(o, "word-scores");
    s->want_align = how[0] != '\0';
    s->nbest = app_opts_flag(o, "n-best");
    s->max_length = (int32_t)app_opts_int(o, "max-length");
    s->crop = app_opts_flag(o, "max-length-crop");
    if (summary[0] && s->want_align) return fail_msg("alignments cannot be printed with --summary");
    if (summary[0] && alpha > 0) return fail_msg("--normalize cannot be used with --summary");
    if (summary[0] && strcmp(summary, "ce-sum") && strcmp(summary, "ce-mean") &&
        strcmp(summary, "ce-mean-words") && strcmp(summary, "perplexity") &&
        strcmp(summary, "cross-entropy"))
        return fail_msg("--summary: ce-sum, ce-mean, ce-mean-words, perplexity or cross-entropy");
    if (s->want_align && strcmp(how, "soft") && strcmp(how, "hard") && !(strtof(how, NULL) > 0.0f))
        return fail_msg("--alignment: soft, hard or a threshold in (0, 1]");

    FILE *in[N_STREAMS_MAX] = {0};
    FILE *out = stdout;
    int ret = 1;
    char *bufs[N_STREAMS_MAX] = {0};
    size_t caps[N_STREAMS_MAX] = {0};
    int chunk = (int)chunk64;
    s->items = calloc((size_t)chunk, sizeof(item));
    s->order = calloc((size_t)chunk, sizeof(int));
    s->batch_at = calloc((size_t)chunk + 1, sizeof(int));
    if (!s->items || !s->order || !s->batch_at) {
        fail_msg("out of memory");
        goto done;
    }
    for (int k = 0; k < s->n_streams; k++) {
        const char *p = app_opts_item(o, "train-sets", k);
        in[k] = !strcmp(p, "stdin") || !strcmp(p, "-") ? stdin : fopen(p, "rb");
        if (in[k] == NULL) {
            fprintf(stderr, "mtpe score: cannot open %s\n", p);
            goto done;
        }
    }
    const char *op = app_opts_str(o, "output");
    if (strcmp(op, "stdout") && strcmp(op, "-")) {
        out = fopen(op, "w");
        if (out == NULL) {
            fprintf(stderr, "mtpe score: cannot write %s\n", op);
            out = stdout;
            goto done;
        }
    }
    float sum_loss = 0; /* float, as Marian's */
    int64_t sum_words = 0, sum_samples = 0, line_no = 0, src_line = 0, skipped = 0;
    long long cur_id = -1;
    int trg = s->n_streams - 1;
    bool eof = false;
    while (!eof) {
        s->n_items = 0;
        while (s->n_items < chunk) {
            item *it = &s->items[s->n_items];
            bool too_long = false;
            ssize_t k = app_read_line(in[trg], &bufs[trg], &caps[trg]);
            if (k < 0) {
                eof = true;
                break;
            }
            line_no++;
            char *text = bufs[trg];
            if (s->nbest) {
                /* ID ||| hypothesis ||| ...: the source advances with the ID */
                char *f1 = strstr(text, "|||");
                char *f2 = f1 ? strstr(f1 + 3, "|||") : NULL;
                char *f3 = f2 ? strstr(f2 + 3, "|||") : NULL;
                if (!f3) {
                    fprintf(stderr, "mtpe score: %s:%lld: not a Marian n-best line\n",
                            app_opts_item(o, "train-sets", trg), (long long)line_no);
                    goto done;
                }
                long long id = strtoll(text, NULL, 10);
                it->nbest_line = mt_try_strdup(text);
                if (it->nbest_line == NULL) {
                    fail_msg("out of memory");
                    goto done;
                }
                if (id != cur_id) {
                    if (id < cur_id) {
                        fprintf(stderr, "mtpe score: %s:%lld: n-best ids must not decrease\n",
                                app_opts_item(o, "train-sets", trg), (long long)line_no);
                        goto done;
                    }
                    while (src_line <= id) {
                        for (int q = 0; q < trg; q++) {
                            if (app_read_line(in[q], &bufs[q], &caps[q]) < 0) {
                                fprintf(stderr, "mtpe score: %s ends before n-best id %lld\n",
                                        app_opts_item(o, "train-sets", q), id);
                                goto done;
                            }
                        }
                        src_line++;
                    }
                    cur_id = id;
                }
                *f2 = '\0';
                text = trim(f1 + 3);
            } else {
                for (int q = 0; q < trg; q++) {
                    if (app_read_line(in[q], &bufs[q], &caps[q]) < 0) {
                        fprintf(stderr, "mtpe score: %s has fewer lines than %s\n",
                                app_opts_item(o, "train-sets", q),
                                app_opts_item(o, "train-sets", trg));
                        goto done;
                    }
                }
            }
            for (int q = 0; q < trg && rc == MT_OK; q++)
                rc = encode_stream(s, it, q, bufs[q], app_opts_item(o, "train-sets", q),
                                   s->nbest ? src_line : line_no, &too_long);
            if (rc == MT_OK)
                rc = encode_stream(s, it, trg, text, app_opts_item(o, "train-sets", trg), line_no,
                                   &too_long);
            if (rc == MT_OK && !too_long) rc = alloc_results(s, it);
            if (rc != MT_OK) {
                fail_msg(mt_errmsg());
                item_clear(it);
                goto done;
            }
            if (too_long) {
                skipped++;
                item_clear(it);
                continue;
            }
            s->n_items++;
        }
        rc = score_chunk(s);
        if (rc != MT_OK) {
            fail_msg(mt_errmsg());
            goto done;
        }
        for (int i = 0; i < s->n_items; i++) {
            item *it = &s->items[i];
            sum_loss += -(float)it->score;
            sum_words += it->len[trg];
            sum_samples++;
            if (!summary[0]) print_item(s, out, it, alpha);
            item_clear(it);
        }
        s->n_items = 0;
    }
    for (int q = 0; q < trg && !s->nbest; q++) {
        if (app_read_line(in[q], &bufs[q], &caps[q]) >= 0) {
            fprintf(stderr, "mtpe score: %s has more lines than %s\n",
                    app_opts_item(o, "train-sets", q), app_opts_item(o, "train-sets", trg));
            goto done;
        }
    }
    if (skipped > 0 && !app_opts_flag(o, "quiet"))
        mt_log(MT_LOG_WARN, "%lld sentence pairs longer than --max-length %d were skipped",
               (long long)skipped, (int)s->max_length);
    if (summary[0]) {
        float cost;
        if (!strcmp(summary, "perplexity"))
            cost = expf(sum_loss / (float)sum_words);
        else if (!strcmp(summary, "ce-sum"))
            cost = sum_loss;
        else if (!strcmp(summary, "ce-mean-words"))
            cost = sum_loss / (float)sum_words;
        else
            cost = sum_loss / (float)sum_samples;
        fprintf(out, "%g\n", (double)cost);
    }
    ret = fflush(out) == 0 ? 0 : 1;
    if (ret) fail_msg("cannot write the output");
done:
    for (int i = 0; s->items && i < chunk; i++)
        item_clear(&s->items[i]);
    free(s->items);
    free(s->order);
    free(s->batch_at);
    for (int k = 0; k < N_STREAMS_MAX; k++) {
        if (in[k] && in[k] != stdin) fclose(in[k]);
        free(bufs[k]);
    }
    if (out != stdout) {
        if (fclose(out) != 0 && ret == 0) ret = fail_msg("cannot write the output");
    }
    return ret;
}

const app_cmd app_score_cmd = {
    .name = "score",
    .usage = "-m MODEL -v SRC_VOCAB TRG_VOCAB -t SRC TRG [options]",
    .about = "Scores sentence pairs with a model, as marian-scorer: one log-probability per\n"
             "line (sum over the target tokens incl. EOS), or rescores an n-best list.\n",
    .opts = score_opts,
    .n_opts = n_score_opts,
};

int app_score_main(int argc, char **argv) {
    app_opts *o = NULL;
    int ret;
    if (!app_opts_parse_cmd(&app_score_cmd, argc, argv, &o, &ret)) return ret;
    scorer s;
    memset(&s, 0, sizeof s);
    s.o = o;
    pthread_mutex_init(&s.mu, NULL);
    ret = run(&s);
    pthread_mutex_destroy(&s.mu);
    mt_ensemble_free(&s.am);
    app_opts_free(o);
    return ret;
}
