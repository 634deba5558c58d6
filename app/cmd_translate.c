/*
** cmd_translate.c: `mtpe translate`, Marian's marian-decoder
** (reference/marian-compat.md §5 and §9), and `mtpe postedit`, automatic
** post-editing with an APE model (app/ape.h), on the same pipeline.
**
**   mtpe translate -m MODEL -v SRC.spm TRG.spm [-i IN] [-o OUT] [options]
**   mtpe translate -c model.npz.decoder.yml < in > out
**   mtpe translate < in > out               (the default model in assets/)
**   mtpe translate --format po|xliff|text [FILE] [-i FILE] [-o OUT]
**
** Input: UTF-8 text, one sentence per line ('\n', an optional '\r' before
** it is dropped); multi-source models read one file per source (-i a b),
** line-aligned.  Output, one line per input line, in input order, flushed
** per line, byte-identical to marian-decoder's:
**
**   1-best    TEXT[ ||| ALIGNMENT][ ||| WordScores= W W ...]
**   --n-best  ID ||| TEXT[ ||| ALIGNMENT][ ||| WordScores= ...] ||| F0= S0[ F1= S1 ...]
**             ||| NORM       (beam-size lines per input, best first; ID is the
**             0-based line number)
**
**   TEXT        detokenised (left to right also for right-to-left models)
**   S_j         model j's unweighted log-probability of the tokens incl. EOS;
**               NORM = (weighted sum - word-penalty * L) / L^normalize:
**               printed as C++ streams print floats ("%g", 6 digits)
**   W           per-token increments of the weighted path score, EOS last,
**               model order, "%.5f"
**   ALIGNMENT   from the first model's guided-alignment layer (attention
**               head 0) over the first source, model order, EOS included:
**               --alignment soft: per target token the weights over the
**               source tokens, ',' between sources, ' ' between targets
**               ("%g"); hard (or bare, or 1): "s-t" for each target t with
**               s its first maximum; a threshold 0 < T < 1: every s-t with
**               weight > T; pairs sorted by (s, t)
**
** Lines that cannot be translated (invalid UTF-8, more than --max-length
** tokens without --max-length-crop) are reported on stderr with their line
** number and give an empty line; in n-best mode one entry with an empty
** translation, empty alignment and word-score fields and scores 0
** ("N |||  ||| F0= 0 ||| 0", the layout of an empty line's hypothesis), so
** that every input line has its entries and ids stay consecutive, as
** marian-scorer and rescore expect; the rest of the file is translated.  (Marian drops over-long
*lines and then waits forever
** for them.)  Empty lines give empty lines.
**
** Batching as Marian's BatchGenerator: --mini-batch x --maxi-batch input
** lines are read, ordered by a std::priority_queue (--maxi-batch-sort src:
** longest sources first; none: input order), cut into mini-batches of
** --mini-batch sentences (or, with --mini-batch-words W, as soon as their
** source tokens exceed W); each mini-batch is one beam search (its length
** limit is --max-length-factor times its longest source).  --cpu-threads N
** workers translate mini-batches in parallel, each with its own graphs and
** single-threaded BLAS; a writer prints in input order.
**
** --top-up (an mtpe extension, not in Marian): the sorted mini-batches of a
** maxi-batch are one search instead of one each (with N threads: N
** searches of consecutive mini-batches, one per worker), with top-up
** batching (engine/mt.h, mt_beam_params.max_active): at most --mini-batch
** sentences decode at a time (--max-active, when given, instead; give it
** with --mini-batch-words) and finished ones are replaced from the rest, so
** the batch stays full.
** Output and its order are unchanged, except where the length limit or a
** shortlist differ: both are then those of the whole search (its longest
** source; the shortlist of all its sentences), not of each mini-batch.
**
** MPI (`mpirun -np N mtpe translate ...`, app/dist.h; issue 37): every
** process reads the whole input (standard input reaches rank 0 only under
** mpirun: rank 0 reads all of it and broadcasts it, so it is held in
** memory) and makes the same maxi-batches and searches as one process
** would; search j (counted over the input) is run by rank j % N, the
** lines of the others' searches are skipped.  Each rank sends the output
** of its lines (1-best, n-best, alignments, word scores; for documents the
** chosen translation of each piece) to rank 0 in input order, and rank 0
** writes everything in input order: output byte-identical to one process
** with the same --cpu-threads, --mini-batch and --maxi-batch (a
** sentence's batch, hence its padding and float rounding, is the same).
** Rank 0 alone writes -o, documents and the log; the others print only
** errors.  An error on any rank ends the job (MPI_Abort); -o FILE is then
** left as it was.  postedit and translate --ape are not sharded: with more
** than one process they refuse to run (one line on stderr from rank 0,
** exit 2 on every rank).
**
** --gemm-type float32|int16|int8|auto (also "gemm-type:" in a config):
** how products with weight matrices are computed (engine/mt.h,
** mt_gemm_type): fp32, the integer GEMM with weights packed once per worker
** (int16: fixed scale 2^10; int8: scale 127 / max|W|, activations
** quantized per call), or auto-tuned per shape.  Default float32.  With any
** of the integer types the decoder also keeps the cross-attention context
** and the frozen self-attention history in float16 (models/scorer.c), with
** int8 the keys of both in int8, quantized per key and scored by integer
** products; float32 keeps float32 caches.  The precision of the caches
** follows --gemm-type (mt_kv_cache MT_KV_AUTO); `mtpe bench translate
** --kv-cache` times the other choices.
**
** --marian-prenorm-cache: Marian 1.12 decodes pre-norm transformer decoders
** (transformer-preprocess n) with self-attention keys and values from the
** raw layer inputs after the first position, although it trains them on the
** normalised ones (models/transformer.c); mtpe decodes as trained unless
** this flag asks for Marian's numbers.  Post-norm and average-attention
** decoders are the same either way.
**
** --prefix-file F: line i of F is a target prefix for input line i, forced
** and then completed (prefix-constrained decoding).
**
** --glossary FILE (TSV, CSV or TBX as `mtpe glossary import` reads them,
** app/formats/glossary.h; TBX: the langSets of --src-lang/--trg-lang): for
** each input line, the target terms of the entries whose source term
** occurs in it (first source; the glossary's matching rules: whole words,
** case folded unless the entry is case-sensitive, a plural -s/-es; the
** longest source terms first, at most --glossary-max of them) are
** constraints of the search: the translation must contain them
** (models/translator.h "Terms"; engine/mt_search.h "Constraints").
**
** Models: -m (ensembles: several, --weights), or from a config (-c, e.g. the
** model.npz.decoder.yml that training writes; with relative-paths: true,
** paths in it are relative to the config file), else the default model in
** assets/models/en-de (decoder.yml, model.npz, vocab.spm; paths relative
** to that folder).
**
** Documents (--format): the untranslated segments of a PO or XLIFF 1.2
** file (or every line of a text file) are translated line by line (a
** segment's '\n's are kept) and written back as drafts: PO "#, fuzzy",
** XLIFF state="needs-review-translation"; everything else of the file is
** kept (app/formats/doc.h).  Written to -o OUT, else to standard output; over FILE
** only with --in-place (text: the target file named after FILE, doc.h).
**
** APE (issue 34).  An APE model reads two inputs, the source and an MT of
** it, and writes the post-edited translation (app/ape.h).
**
**   mtpe postedit [-m APE.npz -v SRC MT TRG | -c CONFIG] -i SRC.txt MT.txt
**   mtpe postedit ... < PAIRS.tsv        (or -i PAIRS.tsv)
**   mtpe postedit ... --po FILE.po [--all] [-o OUT | --in-place]
**
** has translate's options and output formats (n-best, alignment, word
** scores, batching, threads); without -m or -c the APE model is
** assets/models/en-de-ape.  Its input, line by line:
**
**   two files   line i of SRC and line i of MT are a pair; the files must
**               have as many lines (else an error naming the shorter one)
**   one file    "SOURCE<TAB>MT": the first TAB separates them (the MT may
**               hold more TABs); a line without one is an error naming it
**
** --po FILE: the fuzzy entries (--all: also the translated ones) whose
** msgid (msgid_plural for forms > 0) and msgstr[k] are one line each are
** post-edited: the first n-best entry with the msgstr's placeholders
** (app_ph_scan, compared as sorted lists) replaces the msgstr when it
** differs, and the entry is written fuzzy; entries spanning several lines,
** empty msgstr and the rest of the file are left as they are (the PO
** writer rewrites only the changed msgstr and "#," lines, doc.h).
**
** translate --ape DIR: the input is read whole and translated (1-best; a
** document's pieces as above), then each (line, MT) pair goes through the
** APE stage, a second pipeline with DIR's model (model.npz, the
** vocabularies of its decoder.yml, else vocab.spm three times) and the
** options of the command line over DIR's decoder.yml (without the MT's
** models, weights, shortlist and prefixes); what it prints is what
** translate then postedit with that model and options print.
*/
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "ape.h"
#include "common.h"
#include "anatomy.h"
#include "dist.h"
#include "doc.h"
#include "glossary.h"
#include "options.h"
#include "shortlist.h"
#include "translator.h"

/* The options of translate and postedit (postedit: the APE model's). */
/* clang-format off */
#define TR_COMMON_OPTS \
    {"config", 'c', APP_OPT_STRINGS, NULL, NULL, "YAML config files (command line wins)"}, \
    {"models", 'm', APP_OPT_STRINGS, NULL, NULL, "model(s) (.npz or .bin); several: an ensemble"}, \
    {"model", 0, APP_OPT_STRINGS, NULL, NULL, "same as --models"}, \
    {"weights", 0, APP_OPT_FLOATS, NULL, NULL, "ensemble weights (default 1 each)"}, \
    {"vocabs", 'v', APP_OPT_STRINGS, NULL, NULL, "vocabularies: sources..., target"}, \
    {"input", 'i', APP_OPT_STRINGS, "stdin", NULL, "input file(s), one per source"}, \
    {"output", 'o', APP_OPT_STRING, "stdout", NULL, "output file"}, \
    {"beam-size", 'b', APP_OPT_INT, "12", NULL, "beam size", "1..1000"}, \
    {"normalize", 'n', APP_OPT_FLOAT, "0", "1", "length normalisation: score / length ^ A"}, \
    {"word-penalty", 0, APP_OPT_FLOAT, "0", NULL, "subtract this per target token"}, \
    {"max-length", 0, APP_OPT_INT, "1000", NULL, \
     "longest input in tokens (longer: skipped, or cropped)", "1..1000000"}, \
    {"max-length-factor", 0, APP_OPT_FLOAT, "3", NULL, \
     "output length limit: this times the longest source of the batch", "(0..1000"}, \
    {"max-length-crop", 0, APP_OPT_FLAG, NULL, NULL, "crop long inputs instead of skipping"}, \
    {"marian-prenorm-cache", 0, APP_OPT_FLAG, NULL, NULL, \
     "pre-norm decoders: self-attention keys/values as Marian 1.12 decodes them (raw " \
     "inputs after position 0), not as trained"}, \
    {"allow-unk", 0, APP_OPT_FLAG, NULL, NULL, "allow <unk> in translations"}, \
    {"allow-special", 0, APP_OPT_FLAG, NULL, NULL, "allow special (control) pieces"}, \
    {"n-best", 0, APP_OPT_FLAG, NULL, NULL, \
     "print the n-best list (beam-size entries; a skipped line: one, scores 0)"}, \
    {"alignment", 0, APP_OPT_STRING, "", "1", "print alignments: soft, hard or a threshold"}, \
    {"word-scores", 0, APP_OPT_FLAG, NULL, NULL, "print the score of every target token"}, \
    {"no-spm-decode", 0, APP_OPT_FLAG, NULL, NULL, "print SentencePiece pieces"}, \
    {"mini-batch", 0, APP_OPT_INT, "1", NULL, "sentences per batch", "1..65536"}, \
    {"mini-batch-words", 0, APP_OPT_INT, "0", NULL, \
     "close a batch past this many source tokens (0: --mini-batch sentences)", "0.."}, \
    {"maxi-batch", 0, APP_OPT_INT, "1", NULL, "batches read and sorted together", "1..10000"}, \
    {"maxi-batch-sort", 0, APP_OPT_STRING, "none", NULL, \
     "sort a maxi-batch by source length or not", "src|none"}, \
    {"cpu-threads", 0, APP_OPT_INT, "1", NULL, "worker threads", "1..256"}, \
    {"shortlist", 0, APP_OPT_STRINGS, NULL, NULL, \
     "lexical shortlist: FILE [first=100] [best=100] [threshold=0]"}, \
    {"prefix-file", 0, APP_OPT_STRING, "", NULL, "target prefixes, one per input line"}, \
    {"glossary", 0, APP_OPT_STRING, "", NULL, \
     "glossary (TSV, CSV, TBX): its terms in a line are enforced in the translation"}, \
    {"src-lang", 0, APP_OPT_STRING, "en", NULL, "source language of a TBX --glossary"}, \
    {"trg-lang", 0, APP_OPT_STRING, "de", NULL, "target language of a TBX --glossary"}, \
    {"glossary-max", 0, APP_OPT_INT, "2", NULL, "most glossary terms enforced per line", "1..16"}, \
    {"quiet", 0, APP_OPT_FLAG, NULL, NULL, "no log messages (errors only)"}, \
    {"quiet-translation", 0, APP_OPT_FLAG, NULL, NULL, "do not log the translations"}, \
    {"relative-paths", 0, APP_OPT_FLAG, NULL, NULL, "paths in config files are relative to them"}, \
    {"max-active", 0, APP_OPT_INT, "0", NULL, \
     "sentences decoding at once (0: all)", "0..1000000"}, \
    {"gemm-type", 'g', APP_OPT_STRING, "float32", NULL, \
     "weight products: float32, int16, int8 or auto (tuned per shape)"}, \
    {"top-up", 0, APP_OPT_FLAG, NULL, NULL, \
     "one search per maxi-batch, --mini-batch sentences at a time (mtpe extension)"}, \
    {"workspace", 'w', APP_OPT_INT, "512", NULL, "ignored (Marian's workspace MB)"}, \
    {"devices", 'd', APP_OPT_STRINGS, "0", NULL, "ignored"}, \
    {"num-devices", 0, APP_OPT_INT, "0", NULL, "ignored"}, \
    {"data-threads", 0, APP_OPT_INT, "8", NULL, "ignored"}, \
    {"log-level", 0, APP_OPT_STRING, "info", NULL, "ignored"}, \
    {"log", 0, APP_OPT_STRING, "", NULL, "ignored"}, \
    {"seed", 0, APP_OPT_INT, "0", NULL, "ignored"}, \
    {"precision", 0, APP_OPT_STRINGS, "float32", NULL, "ignored"}, \
    {"optimize", 0, APP_OPT_FLAG, NULL, NULL, "ignored"}, \
    {"skip-cost", 0, APP_OPT_FLAG, NULL, NULL, "ignored"}, \
    {"type", 0, APP_OPT_STRING, "", NULL, "ignored (the model's own type is used)"}
/* clang-format on */

static const app_opt tr_opts[] = {
    TR_COMMON_OPTS,
    {"format", 0, APP_OPT_STRINGS, NULL, NULL, "translate a document: po|xliff|text [FILE]"},
    {"in-place", 0, APP_OPT_FLAG, NULL, NULL, "with --format: write the document over FILE"},
    {"ape", 0, APP_OPT_STRING, "", NULL,
     "APE model folder: post-edit each translation with it (model.npz, decoder.yml, vocabs)"},
};
static const app_opt pe_opts[] = {
    TR_COMMON_OPTS,
    {"po", 0, APP_OPT_STRING, "", NULL,
     "post-edit the fuzzy msgstr of a PO file (MT of another engine); fuzzy flags kept"},
    {"all", 0, APP_OPT_FLAG, NULL, NULL,
     "with --po: every translated entry, not only the fuzzy ones"},
    {"in-place", 0, APP_OPT_FLAG, NULL, NULL, "with --po: write the file over FILE"},
};
static const int n_pe_opts = (int)(sizeof pe_opts / sizeof pe_opts[0]);
static const int n_tr_opts = (int)(sizeof tr_opts / sizeof tr_opts[0]);

/* ------------------------------------------------------------ pipeline */

enum { SLOT_FREE = 0, SLOT_PENDING, SLOT_DONE };

typedef struct slot {
    int state;
    mt_tr_sentence s;
    mt_tr_result r;
    bool bad;      /* no translation: print an empty line                  */
    int owner;     /* MPI: the rank that translates it (-1: this one)      */
    char *warn;    /* logged when the line is printed                       */
    int64_t bytes; /* input bytes up to the end of this line (progress)     */
} slot;

typedef struct job {
    int64_t *ids;
    int n;
    struct job *next;
} job;

typedef struct tr_ctx tr_ctx;
/* Called by the writer for every line in input order. */
typedef mt_status (*sink_fn)(tr_ctx *c, int64_t id, slot *sl);

struct tr_ctx {
    app_opts *o;
    const app_cmd *cmd; /* translate or postedit                          */
    bool want_ape;      /* the model must be an APE model (2 inputs)      */
    bool first_stage;   /* the MT before --ape: 1-best text only          */
    tr_ctx *ape;        /* translate --ape: the APE stage, else NULL      */
    mt_ensemble am;
    mt_shortlist *sl;
    mt_translator *tr;
    app_glossary *terms; /* --glossary, or NULL */
    int max_terms;       /* --glossary-max       */
    int threads;
    /* pipeline (mu guards everything below) */
    pthread_mutex_t mu;
    pthread_cond_t cv_job, cv_done, cv_space;
    slot *ring;
    int64_t cap, n_read, n_out;
    job *head, *tail;
    bool eof;
    mt_status rc;
    char err[1024];
    /* output */
    sink_fn sink;
    FILE *out;
    const char *out_name; /* "standard output" or the -o file */
    bool nbest, word_scores, quiet_tr;
    const char *align;               /* "" = none */
    int64_t n_searches, n_sentences; /* beam searches run, sentences in them */
    /* progress */
    bool progress;
    int64_t total_bytes;
    double t0, t_last;
    /* MPI (app/dist.h): this process's rank of nproc; searches scheduled */
    int rank, nproc;
    int64_t n_jobs;
    bool failed_elsewhere; /* setup failed on another rank (it reports it)   */
    bool agreed;           /* a failure every rank knows of: no MPI_Abort    */
    /* documents and stages: the chosen translation of each line (piece),
    ** and its anatomy (NULL: the 1-best); postedit --po: the MT of each
    ** line, whose placeholders the APE output must keep */
    char **doc_lines;
    const app_anatomy **doc_anat;
    int *doc_piece;
    char **doc_mt;
    bool *doc_bad; /* when not NULL: which lines had no translation     */
    bool resolved; /* o names the model already (the --ape stage)       */
};

static void set_error(tr_ctx *c, mt_status rc, const char *msg) {
    pthread_mutex_lock(&c->mu);
    if (c->rc == MT_OK) {
        c->rc = rc;
        snprintf(c->err, sizeof c->err, "%s", msg);
    }
    pthread_cond_broadcast(&c->cv_job);
    pthread_cond_broadcast(&c->cv_done);
    pthread_cond_broadcast(&c->cv_space);
    pthread_mutex_unlock(&c->mu);
}

static slot *slot_of(tr_ctx *c, int64_t id) { return &c->ring[id % c->cap]; }

/* ----------------------------------------------------------- workers */

static void *worker_main(void *arg) {
    tr_ctx *c = arg;
    mt_translate_worker *w = NULL;
    mt_tr_sentence *ss = NULL;
    mt_tr_result *rs = NULL;
    int cap = 0;
    mt_status rc = mt_translate_worker_init(c->tr, &w);
    if (rc != MT_OK) {
        set_error(c, rc, mt_errmsg());
        return NULL;
    }
    for (;;) {
        pthread_mutex_lock(&c->mu);
        while (c->head == NULL && !c->eof && c->rc == MT_OK)
            pthread_cond_wait(&c->cv_job, &c->mu);
        job *j = c->rc == MT_OK ? c->head : NULL;
        if (j) {
            c->head = j->next;
            if (c->head == NULL) c->tail = NULL;
        }
        pthread_mutex_unlock(&c->mu);
        if (j == NULL) break;
        if (j->n > cap) {
            mt_free(ss);
            mt_free(rs);
            ss = mt_try_malloc(sizeof *ss * (size_t)j->n);
            rs = mt_try_malloc(sizeof *rs * (size_t)j->n);
            cap = ss && rs ? j->n : 0;
        }
        if (cap == 0) {
            rc = mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
        } else {
            /* the slots of a job are not touched by others until DONE */
            for (int i = 0; i < j->n; i++)
                ss[i] = slot_of(c, j->ids[i])->s;
            rc = mt_translate_encoded(w, ss, j->n, rs, NULL, NULL);
        }
        if (rc != MT_OK) {
            set_error(c, rc, mt_errmsg());
            mt_free(j->ids);
            mt_free(j);
            break;
        }
        pthread_mutex_lock(&c->mu);
        c->n_searches++;
        c->n_sentences += j->n;
        for (int i = 0; i < j->n; i++) {
            slot *sl = slot_of(c, j->ids[i]);
            mt_tr_sentence_clear(&sl->s);
            sl->r = rs[i];
            sl->state = SLOT_DONE;
        }
        pthread_cond_broadcast(&c->cv_done);
        pthread_mutex_unlock(&c->mu);
        mt_free(j->ids);
        mt_free(j);
    }
    mt_free(ss);
    mt_free(rs);
    mt_translate_worker_free(w);
    return NULL;
}

/* ------------------------------------------------------------ output */

static void print_word_scores(FILE *f, const mt_tr_hyp *h) {
    fputs("WordScores=", f);
    for (int32_t t = 0; h->word_scores && t < h->length; t++)
        fprintf(f, " %.5f", (double)h->word_scores[t]);
}

/* A write error on the output (errno err, 0: unknown): names the output and
** the cause; a -o file is written to a temporary file, removed on failure. */
static mt_status out_error(const tr_ctx *c, int err) {
    bool file = c->out != stdout;
    return mt_seterr(MT_ERR_IO, "cannot write %s: %s%s", c->out_name, strerror(err ? err : EIO),
                     file ? " (the file is left as it was)" : "");
}

/* The output of one line (sink_print without the log and the flush). */
static void format_line(tr_ctx *c, FILE *f, int64_t id, slot *sl) {
    if (sl->bad || sl->r.n_hyps == 0) {
        if (!c->nbest) {
            fputc('\n', f);
        } else { /* one entry, as for an empty translation: every line has one */
            fprintf(f, "%lld ||| ", (long long)id);
            if (c->align[0]) fputs(" ||| ", f);
            if (c->word_scores) fputs(" ||| WordScores=", f);
            fputs(" |||", f);
            for (int m = 0; m < c->am.n_models; m++)
                fprintf(f, " F%d= 0", m);
            fputs(" ||| 0\n", f);
        }
    } else if (!c->nbest) {
        const mt_tr_hyp *h = &sl->r.hyps[0];
        fputs(h->text, f);
        if (c->align[0]) {
            fputs(" ||| ", f);
            if (h->align) app_print_alignment(f, h->align, h->length, h->src_len, c->align);
        }
        if (c->word_scores) {
            fputs(" ||| ", f);
            print_word_scores(f, h);
        }
        fputc('\n', f);
    } else {
        for (int k = 0; k < sl->r.n_hyps; k++) {
            const mt_tr_hyp *h = &sl->r.hyps[k];
            fprintf(f, "%lld ||| %s", (long long)id, h->text);
            if (c->align[0]) {
                fputs(" ||| ", f);
                if (h->align) app_print_alignment(f, h->align, h->length, h->src_len, c->align);
            }
            if (c->word_scores) {
                fputs(" ||| ", f);
                print_word_scores(f, h);
            }
            fputs(" |||", f);
            for (int m = 0; m < c->am.n_models; m++)
                fprintf(f, " F%d= %g", m, (double)h->model_scores[m]);
            fprintf(f, " ||| %g\n", (double)h->norm_score);
        }
    }
}

static mt_status sink_print(tr_ctx *c, int64_t id, slot *sl) {
    FILE *f = c->out;
    format_line(c, f, id, sl);
    if (!c->quiet_tr && !sl->bad && sl->r.n_hyps > 0)
        mt_log(MT_LOG_INFO, "Best translation %lld : %s", (long long)id, sl->r.hyps[0].text);
    errno = 0;
    if (fflush(f) != 0 || ferror(f)) return out_error(c, errno);
    return MT_OK;
}

/* The placeholders of s (app_ph_scan), sorted, joined by '\x01'; NULL when
** out of memory. */
static char *ph_key(const char *s) {
    app_ph *ph = NULL;
    int n = 0;
    if (app_ph_scan(s, &ph, &n) != MT_OK) return NULL;
    size_t need = 1;
    for (int i = 0; i < n; i++)
        need += ph[i].len + 1;
    char *k = mt_try_malloc(need);
    char **parts = mt_try_calloc((size_t)(n > 0 ? n : 1), sizeof *parts);
    bool ok = k && parts;
    for (int i = 0; i < n && ok; i++)
        ok = (parts[i] = mt_try_malloc(ph[i].len + 1)) != NULL;
    if (ok) {
        for (int i = 0; i < n; i++) {
            memcpy(parts[i], s + ph[i].at, ph[i].len);
            parts[i][ph[i].len] = '\0';
        }
        for (int i = 1; i < n; i++) /* insertion sort: few of them */
            for (int j = i; j > 0 && strcmp(parts[j - 1], parts[j]) > 0; j--) {
                char *t = parts[j];
                parts[j] = parts[j - 1];
                parts[j - 1] = t;
            }
        size_t at = 0;
        for (int i = 0; i < n; i++) {
            size_t l = strlen(parts[i]);
            memcpy(k + at, parts[i], l);
            at += l;
            k[at++] = '\x01';
        }
        k[at] = '\0';
    }
    for (int i = 0; parts && i < n; i++)
        mt_free(parts[i]);
    mt_free(parts);
    mt_free(ph);
    if (!ok) {
        mt_free(k);
        return NULL;
    }
    return k;
}

/* The chosen text of line id (*text, owned by sl or c->doc_mt): with an
** anatomy the first n-best entry it accepts (else the best); with doc_mt
** (postedit --po) the first entry with the MT's placeholders, else the MT
** itself; else the best.  sink_doc keeps it in c->doc_lines; under MPI
** another rank sends it to rank 0 (send_line). */
static mt_status doc_choice(tr_ctx *c, int64_t id, slot *sl, const char **text) {
    const char *t = !sl->bad && sl->r.n_hyps > 0 ? sl->r.hyps[0].text : "";
    for (int k = 0; c->doc_anat && !sl->bad && k < sl->r.n_hyps; k++)
        if (app_anat_accepts(c->doc_anat[id], c->doc_piece[id], sl->r.hyps[k].text)) {
            t = sl->r.hyps[k].text;
            break;
        }
    if (c->doc_mt) {
        char *want = ph_key(c->doc_mt[id]);
        if (want == NULL) return mt_seterr(MT_ERR_NOMEM, "postedit: out of memory");
        t = c->doc_mt[id];
        for (int k = 0; !sl->bad && k < sl->r.n_hyps; k++) {
            char *got = ph_key(sl->r.hyps[k].text);
            bool same = got && strcmp(got, want) == 0;
            mt_free(got);
            if (same) {
                t = sl->r.hyps[k].text;
                break;
            }
        }
        mt_free(want);
    }
    *text = t;
    return MT_OK;
}

static mt_status sink_doc(tr_ctx *c, int64_t id, slot *sl) {
    const char *t = NULL;
    mt_status rc = doc_choice(c, id, sl, &t);
    if (rc != MT_OK) return rc;
    if (c->doc_bad) c->doc_bad[id] = sl->bad || sl->r.n_hyps == 0;
    c->doc_lines[id] = mt_try_strdup(t);
    if (c->doc_lines[id] == NULL) return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    return MT_OK;
}

static void draw_progress(tr_ctx *c, int64_t lines, int64_t bytes, bool final) {
    double t = app_now();
    if (!final && t - c->t_last < 0.2) return;
    c->t_last = t;
    double frac = c->total_bytes > 0 ? (double)bytes / (double)c->total_bytes : 0;
    if (frac > 1) frac = 1;
    int width = 30, fill = (int)(frac * width + 0.5);
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '=' : ' ';
    bar[width] = '\0';
    double dt = t - c->t0;
    fprintf(stderr, "\r[%s] %3.0f%%  %lld lines  %.1f lines/s", bar, 100 * frac, (long long)lines,
            dt > 0 ? (double)lines / dt : 0.0);
    if (final) fputc('\n', stderr);
    fflush(stderr);
}

/* MPI: a line translated here goes to rank 0 as one message,
**   byte 0     '1': rank 0 logs "Best translation", '0': not
**   BEST NUL   the best translation (empty with '0')
**   OUTPUT     the line's output (format_line), or for a document piece the
**              chosen translation (doc_choice)
** Each rank sends its lines in input order; rank 0 receives a line from its
** owner when it reaches it in input order (MPI keeps the order of the
** messages between two processes). */
static mt_status send_line(tr_ctx *c, int64_t id, slot *sl) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (m == NULL) return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    bool logit = !c->quiet_tr && !sl->bad && sl->r.n_hyps > 0;
    fputc(logit ? '1' : '0', m);
    if (logit) fputs(sl->r.hyps[0].text, m);
    fputc('\0', m);
    const char *t = NULL;
    mt_status rc = c->sink == sink_doc ? doc_choice(c, id, sl, &t) : MT_OK;
    if (t)
        fputs(t, m);
    else if (rc == MT_OK)
        format_line(c, m, id, sl);
    bool ok = fclose(m) == 0;
    if (rc != MT_OK) {
        free(buf);
        return rc;
    }
    if (ok) app_dist_send(0, buf, len);
    free(buf);
    return ok ? MT_OK : mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
}

/* Rank 0: line id, translated by rank from, to its sink. */
static mt_status recv_line(tr_ctx *c, int64_t id, int from) {
    char *buf = NULL;
    size_t len = 0;
    app_dist_recv(from, &buf, &len);
    const char *best = buf + 1;
    size_t head = 1 + strlen(best) + 1;
    mt_status rc = MT_OK;
    if (len < 2 || head > len) {
        rc = mt_seterr(MT_ERR_FORMAT, "translate: a bad message from rank %d", from);
    } else if (c->sink == sink_doc) {
        c->doc_lines[id] = mt_try_strdup(buf + head);
        if (c->doc_lines[id] == NULL) rc = mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    } else {
        fwrite(buf + head, 1, len - head, c->out);
        if (buf[0] == '1') mt_log(MT_LOG_INFO, "Best translation %lld : %s", (long long)id, best);
        errno = 0;
        if (fflush(c->out) != 0 || ferror(c->out)) rc = out_error(c, errno);
    }
    mt_free(buf);
    return rc;
}

/* A line to its sink (or to rank 0, or skipped: another rank's line). */
static mt_status write_line(tr_ctx *c, int64_t id, slot *sl) {
    if (c->nproc < 2) return c->sink(c, id, sl);
    if (c->rank == 0) return sl->owner >= 0 ? recv_line(c, id, sl->owner) : c->sink(c, id, sl);
    if (sl->owner >= 0 || sl->bad) return MT_OK; /* rank 0 writes the lines it did not read */
    return send_line(c, id, sl);
}

static void *writer_main(void *arg) {
    tr_ctx *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        slot *sl = NULL;
        while (c->rc == MT_OK) {
            if (c->n_out < c->n_read && slot_of(c, c->n_out)->state == SLOT_DONE) {
                sl = slot_of(c, c->n_out);
                break;
            }
            if (c->eof && c->n_out == c->n_read) break;
            pthread_cond_wait(&c->cv_done, &c->mu);
        }
        int64_t id = c->n_out;
        pthread_mutex_unlock(&c->mu);
        if (sl == NULL) break;
        if (sl->warn && c->rank == 0) mt_log(MT_LOG_WARN, "%s", sl->warn);
        mt_status rc = write_line(c, id, sl);
        if (c->progress) draw_progress(c, id + 1, sl->bytes, false);
        mt_tr_result_clear(&sl->r);
        mt_free(sl->warn);
        sl->warn = NULL;
        if (rc != MT_OK) {
            set_error(c, rc, mt_errmsg());
            break;
        }
        pthread_mutex_lock(&c->mu);
        sl->state = SLOT_FREE;
        sl->bad = false;
        sl->owner = -1;
        c->n_out++;
        pthread_cond_broadcast(&c->cv_space);
        pthread_mutex_unlock(&c->mu);
    }
    if (c->progress && c->rc == MT_OK) draw_progress(c, c->n_out, c->total_bytes, true);
    return NULL;
}

/* ------------------------------------------------------------ reading */

/* Where lines come from: files (one per source + prefixes) or memory. */
typedef struct line_src {
    int n_src;
    FILE *f[MT_MAX_STREAMS];
    const char *name[MT_MAX_STREAMS];
    FILE *pf; /* prefixes or NULL */
    const char *pname;
    char *buf[MT_MAX_STREAMS + 1];
    size_t bcap[MT_MAX_STREAMS + 1];
    size_t len[MT_MAX_STREAMS + 1]; /* bytes of the line read (a NUL may hide some) */
    int64_t bytes;
    mt_status err; /* of the last failure */
    bool tsv;      /* one file of "source<TAB>MT" lines for a 2-input model */
    /* memory: mem[k][i] is line i of stream k (mem[0] NULL: files) */
    char **mem[MT_MAX_STREAMS];
    char **mem_pf;        /* prefixes or NULL                  */
    const char *mem_name; /* in messages (NULL: "input")       */
    int64_t n_mem, at;
} line_src;

/* What messages call stream s of ls. */
static const char *src_name(const line_src *ls, int s) {
    if (ls->mem[0]) return ls->mem_name ? ls->mem_name : "input";
    return ls->name[s < ls->n_src ? s : 0];
}

/* 1: a line (texts[k], prefix), 0: end, <0: error (message set). */
static int next_line(line_src *ls, int64_t line_no, const char **texts, const char **prefix) {
    *prefix = NULL;
    if (ls->mem[0]) {
        if (ls->at >= ls->n_mem) return 0;
        for (int k = 0; k < ls->n_src; k++) {
            texts[k] = ls->mem[k][ls->at] ? ls->mem[k][ls->at] : "";
            ls->len[k] = strlen(texts[k]);
        }
        if (ls->mem_pf) *prefix = ls->mem_pf[ls->at];
        ls->at++;
        return 1;
    }
    for (int k = 0; k < ls->n_src; k++) {
        ssize_t n = app_read_line(ls->f[k], &ls->buf[k], &ls->bcap[k]);
        if (n < 0) {
            if (ferror(ls->f[k])) {
                ls->err = mt_seterr(MT_ERR_IO, "%s: read error", ls->name[k]);
                return -1;
            }
            if (k > 0) {
                ls->err = mt_seterr(MT_ERR_INVALID, "%s has fewer lines than %s", ls->name[k],
                                    ls->name[0]);
                return -1;
            }
            for (int q = 1; q < ls->n_src; q++)
                if (app_read_line(ls->f[q], &ls->buf[q], &ls->bcap[q]) >= 0) {
                    ls->err = mt_seterr(MT_ERR_INVALID, "%s has more lines than %s", ls->name[q],
                                        ls->name[0]);
                    return -1;
                }
            return 0;
        }
        ls->len[k] = (size_t)n;
        if (k == 0) {
            long off = ftell(ls->f[0]);
            ls->bytes = off >= 0 ? off : ls->bytes + n + 1;
        }
        texts[k] = ls->buf[k];
        if (ls->tsv) { /* source<TAB>MT: two texts of one line */
            char *tab = memchr(ls->buf[k], '\t', (size_t)n);
            if (tab == NULL) {
                ls->err = mt_seterr(MT_ERR_INVALID,
                                    "%s:%lld: no TAB (the input is source<TAB>MT lines, or give "
                                    "two files: -i SRC MT)",
                                    ls->name[k], (long long)line_no + 1);
                return -1;
            }
            *tab = '\0';
            ls->len[0] = (size_t)(tab - ls->buf[k]);
            texts[1] = tab + 1;
            ls->len[1] = (size_t)n - ls->len[0] - 1;
        }
    }
    if (ls->pf) {
        if (app_read_line(ls->pf, &ls->buf[MT_MAX_STREAMS], &ls->bcap[MT_MAX_STREAMS]) < 0) {
            ls->err = mt_seterr(MT_ERR_INVALID, "%s: no prefix for input line %lld", ls->pname,
                                (long long)line_no + 1);
            return -1;
        }
        *prefix = ls->buf[MT_MAX_STREAMS];
    }
    return 1;
}

/* Marian's maxi-batch order: a std::priority_queue (libstdc++ binary heap)
** with comparator less(a, b); pops the greatest first.  Reimplemented with
** libstdc++'s exact sift rules, so that ties come out in Marian's order. */
typedef struct heap_ctx {
    tr_ctx *c;
    int mode; /* 0 none (ids), 1 src (lexicographic by stream lengths) */
} heap_ctx;

static bool h_less(const heap_ctx *h, int64_t a, int64_t b) {
    if (h->mode == 0) return a > b; /* cmpNone: getId() > */
    const mt_tr_sentence *x = &slot_of(h->c, a)->s, *y = &slot_of(h->c, b)->s;
    int n = h->c->am.n_src;
    for (int k = 0; k < n; k++) { /* lexicographical_compare by sizes */
        if (x->len[k] < y->len[k]) return true;
        if (y->len[k] < x->len[k]) return false;
    }
    return false;
}

static void push_heap_at(const heap_ctx *h, int64_t *a, int64_t hole, int64_t top, int64_t v) {
    int64_t parent = (hole - 1) / 2;
    while (hole > top && h_less(h, a[parent], v)) {
        a[hole] = a[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    a[hole] = v;
}

static void heap_push(const heap_ctx *h, int64_t *a, int64_t len, int64_t v) {
    push_heap_at(h, a, len, 0, v); /* a[len] is the new last element */
}

/* Removes a[0] (returned); len is the size before. */
static int64_t heap_pop(const heap_ctx *h, int64_t *a, int64_t len) {
    int64_t top = a[0];
    if (len > 1) {
        int64_t last = len - 1, v = a[last];
        a[last] = a[0];
        /* __adjust_heap(first, 0, last, v) */
        int64_t hole = 0, second = 0, n = last;
        while (second < (n - 1) / 2) {
            second = 2 * (second + 1);
            if (h_less(h, a[second], a[second - 1])) second--;
            a[hole] = a[second];
            hole = second;
        }
        if ((n & 1) == 0 && second == (n - 2) / 2) {
            second = 2 * (second + 1);
            a[hole] = a[second - 1];
            hole = second - 1;
        }
        push_heap_at(h, a, hole, 0, v);
    }
    return top;
}

static mt_status enqueue(tr_ctx *c, const int64_t *ids, int n);

/* MPI: search number j of the input goes to rank j % nproc (every rank
** reads the whole input and makes the same searches as one process would,
** so each sentence is translated in the same batch as without MPI); the
** lines of another rank's search are done here (the writer skips them, or
** on rank 0 receives them). */
static mt_status dispatch(tr_ctx *c, const int64_t *ids, int n) {
    int owner = (int)(c->n_jobs++ % c->nproc);
    if (owner == c->rank) return enqueue(c, ids, n);
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < n; i++) {
        slot *sl = slot_of(c, ids[i]);
        mt_tr_sentence_clear(&sl->s);
        sl->owner = owner;
        sl->state = SLOT_DONE;
    }
    pthread_cond_broadcast(&c->cv_done);
    pthread_mutex_unlock(&c->mu);
    return MT_OK;
}

static mt_status enqueue(tr_ctx *c, const int64_t *ids, int n) {
    job *j = mt_try_calloc(1, sizeof *j);
    int64_t *q = mt_try_malloc(sizeof(int64_t) * (size_t)n);
    if (!j || !q) {
        mt_free(j);
        mt_free(q);
        return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    }
    memcpy(q, ids, sizeof(int64_t) * (size_t)n);
    j->ids = q;
    j->n = n;
    pthread_mutex_lock(&c->mu);
    if (c->tail)
        c->tail->next = j;
    else
        c->head = j;
    c->tail = j;
    pthread_cond_signal(&c->cv_job);
    pthread_mutex_unlock(&c->mu);
    return MT_OK;
}

/* Sorts the good lines of a chunk as Marian does and enqueues the batches:
** each mini-batch a job, or with --top-up the mini-batches in groups of
** consecutive ones, one group per worker thread (one group, the whole chunk,
** with one thread), each group a job and so one search. */
static mt_status schedule(tr_ctx *c, int64_t *ids, int64_t n, int64_t *heap, int64_t *batch) {
    int mini = (int)app_opts_int(c->o, "mini-batch");
    int64_t words_max = app_opts_int(c->o, "mini-batch-words");
    if (mini < 1) mini = 1;
    heap_ctx h = {c, strcmp(app_opts_str(c->o, "maxi-batch-sort"), "none") ? 1 : 0};
    int64_t len = 0;
    for (int64_t i = 0; i < n; i++)
        heap_push(&h, heap, len++, ids[i]);
    for (int64_t i = 0; len > 0; i++)
        batch[i] = heap_pop(&h, heap, len--);
    /* the ends of the mini-batches (the heap is free again) */
    int64_t n_mini = 0, words = 0;
    int nb = 0;
    for (int64_t i = 0; i < n; i++) {
        nb++;
        words += slot_of(c, batch[i])->s.len[0];
        if (words_max > 0 ? words > words_max : nb == mini) {
            heap[n_mini++] = i + 1;
            nb = 0;
            words = 0;
        }
    }
    if (nb > 0) heap[n_mini++] = n;
    int64_t per = 1; /* mini-batches per job */
    if (app_opts_flag(c->o, "top-up") && n_mini > 0) {
        int64_t groups = c->threads < n_mini ? c->threads : n_mini;
        per = (n_mini + groups - 1) / groups;
    }
    mt_status rc = MT_OK;
    int64_t start = 0;
    for (int64_t k = 0; k < n_mini && rc == MT_OK; k++) {
        if ((k + 1) % per != 0 && k != n_mini - 1) continue;
        rc = dispatch(c, batch + start, (int)(heap[k] - start));
        start = heap[k];
    }
    return rc;
}

/* Reads, checks and encodes lines chunk by chunk; the writer and workers run
** meanwhile.  Returns when the input ends or something failed. */
static mt_status reader_main(tr_ctx *c, line_src *ls) {
    int64_t chunk = app_opts_int(c->o, "mini-batch") * app_opts_int(c->o, "maxi-batch");
    if (chunk < 1) chunk = 1;
    int64_t *ids = mt_try_malloc(sizeof(int64_t) * (size_t)chunk);
    int64_t *heap = mt_try_malloc(sizeof(int64_t) * (size_t)chunk);
    int64_t *batch = mt_try_malloc(sizeof(int64_t) * (size_t)chunk);
    mt_status rc = MT_OK;
    if (!ids || !heap || !batch) rc = mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    bool end = false;
    while (rc == MT_OK && !end) {
        int64_t n_good = 0;
        for (int64_t k = 0; k < chunk && rc == MT_OK; k++) {
            pthread_mutex_lock(&c->mu);
            while (c->rc == MT_OK && c->n_read - c->n_out >= c->cap)
                pthread_cond_wait(&c->cv_space, &c->mu);
            bool failed = c->rc != MT_OK;
            pthread_mutex_unlock(&c->mu);
            if (failed) {
                end = true;
                break;
            }
            const char *texts[MT_MAX_STREAMS] = {0}, *prefix = NULL;
            int64_t id = c->n_read;
            int got = next_line(ls, id, texts, &prefix);
            if (got < 0) {
                rc = ls->err;
                break;
            }
            if (got == 0) {
                end = true;
                break;
            }
            slot *sl = slot_of(c, id);
            memset(sl, 0, sizeof *sl);
            sl->owner = -1;
            sl->bytes = ls->bytes;
            mt_status lrc = MT_OK;
            for (int s = 0; s < c->am.n_src && lrc == MT_OK; s++) /* "a\0b" is not "a" */
                if (ls->len[s] != strlen(texts[s]))
                    lrc = mt_seterr(MT_ERR_INVALID, "%s:%lld: a NUL byte in the line",
                                    src_name(ls, s), (long long)id + 1);
            for (int s = 0; s < c->am.n_src && lrc == MT_OK; s++)
                lrc = app_check_utf8(texts[s], strlen(texts[s]), src_name(ls, s), id + 1);
            if (lrc == MT_OK && prefix)
                lrc = app_check_utf8(prefix, strlen(prefix), ls->pname, id + 1);
            if (lrc == MT_OK) {
                mt_tr_input in = {.prefix = prefix};
                for (int s = 0; s < c->am.n_src; s++)
                    in.src[s] = texts[s];
                const char *terms[MT_BEAM_MAX_CONSTRAINTS];
                if (c->terms) {
                    in.terms = terms;
                    in.n_terms = app_glossary_constraints(c->terms, texts[0], terms, c->max_terms);
                    if (in.n_terms < 0) lrc = mt_seterr(MT_ERR_NOMEM, "out of memory");
                }
                if (lrc == MT_OK) lrc = mt_tr_encode(c->tr, &in, &sl->s);
            }
            if (lrc == MT_ERR_NOMEM) {
                rc = lrc;
                break;
            }
            if (lrc != MT_OK || sl->s.skipped) {
                char msg[1200];
                if (lrc != MT_OK)
                    snprintf(msg, sizeof msg, "%s (line %lld not translated)", mt_errmsg(),
                             (long long)id + 1);
                else
                    snprintf(msg, sizeof msg,
                             "%s:%lld: %d tokens, more than --max-length %d: not translated "
                             "(--max-length-crop crops it)",
                             src_name(ls, 0), (long long)id + 1, (int)sl->s.raw_len,
                             (int)app_opts_int(c->o, "max-length"));
                sl->warn = mt_try_strdup(msg);
                sl->bad = true;
                mt_tr_sentence_clear(&sl->s);
            } else if (sl->s.cropped) {
                char msg[256];
                snprintf(msg, sizeof msg, "%s:%lld: %d tokens cropped to --max-length %d",
                         src_name(ls, 0), (long long)id + 1, (int)sl->s.raw_len,
                         (int)app_opts_int(c->o, "max-length"));
                sl->warn = mt_try_strdup(msg);
            }
            bool bad = sl->bad; /* once DONE, the writer may recycle the slot */
            if (!bad) ids[n_good++] = id;
            pthread_mutex_lock(&c->mu);
            sl->state = bad ? SLOT_DONE : SLOT_PENDING;
            c->n_read++;
            pthread_cond_broadcast(&c->cv_done);
            pthread_mutex_unlock(&c->mu);
        }
        if (rc == MT_OK && n_good > 0) rc = schedule(c, ids, n_good, heap, batch);
    }
    mt_free(ids);
    mt_free(heap);
    mt_free(batch);
    return rc;
}

/* Runs the pipeline over ls with the given sink. */
static mt_status run_pipeline(tr_ctx *c, line_src *ls) {
    int64_t chunk = app_opts_int(c->o, "mini-batch") * app_opts_int(c->o, "maxi-batch");
    if (chunk < 1) chunk = 1;
    c->cap = 2 * chunk + 16 * (int64_t)c->threads;
    c->ring = mt_try_calloc((size_t)c->cap, sizeof *c->ring);
    if (c->ring == NULL) return mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    c->t0 = c->t_last = app_now();
    pthread_t writer, tids[256];
    int n_workers = 0;
    bool writer_ok = pthread_create(&writer, NULL, writer_main, c) == 0;
    app_blas_single_threaded(); /* --cpu-threads N: N workers of one thread each (as Marian) */
    for (int i = 0; i < c->threads && i < 256; i++)
        if (pthread_create(&tids[n_workers], NULL, worker_main, c) == 0) n_workers++;
    mt_status rc = MT_OK;
    if (!writer_ok || n_workers == 0)
        rc = mt_seterr(MT_ERR_NOMEM, "translate: cannot start threads");
    if (rc == MT_OK) rc = reader_main(c, ls);
    if (rc != MT_OK) set_error(c, rc, mt_errmsg());
    pthread_mutex_lock(&c->mu);
    c->eof = true;
    pthread_cond_broadcast(&c->cv_job);
    pthread_cond_broadcast(&c->cv_done);
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; i < n_workers; i++)
        pthread_join(tids[i], NULL);
    if (writer_ok) pthread_join(writer, NULL);
    /* leftovers after an error */
    while (c->head) {
        job *j = c->head;
        c->head = j->next;
        mt_free(j->ids);
        mt_free(j);
    }
    for (int64_t i = 0; i < c->cap; i++) {
        mt_tr_sentence_clear(&c->ring[i].s);
        mt_tr_result_clear(&c->ring[i].r);
        mt_free(c->ring[i].warn);
    }
    mt_free(c->ring);
    c->ring = NULL;
    if (c->rc != MT_OK) return mt_seterr(c->rc, "%s", c->err);
    return MT_OK;
}

/* -------------------------------------------------------------- setup */

/* Rewrites the relative paths of option key as dir/path (base: dir/basename). */
static mt_status rebase(app_opts *o, const char *key, const char *dir, bool base, int only_first) {
    int n = app_opts_count(o, key);
    if (n == 0) return MT_OK;
    char **v = mt_try_calloc((size_t)n, sizeof(char *));
    if (v == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
    mt_status rc = MT_OK;
    for (int i = 0; i < n && rc == MT_OK; i++) {
        const char *p = app_opts_item(o, key, i);
        size_t need = strlen(dir) + strlen(p) + 2;
        v[i] = mt_try_malloc(need);
        if (v[i] == NULL) {
            rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
            break;
        }
        if (base) {
            const char *b = strrchr(p, '/');
            snprintf(v[i], need, "%s/%s", dir, b ? b + 1 : p);
        } else if (p[0] == '/' || (only_first && i > 0)) {
            snprintf(v[i], need, "%s", p);
        } else {
            snprintf(v[i], need, "%s/%s", dir, p);
        }
    }
    if (rc == MT_OK) rc = app_opts_set(o, key, n, (const char *const *)v, app_opts_source(o, key));
    for (int i = 0; i < n; i++)
        mt_free(v[i]);
    mt_free(v);
    return rc;
}

/* The model of folder dir (app/ape.h): its decoder.yml (else
** model.npz.decoder.yml) merged under the command line, model.npz, and the
** vocabularies named there as files of dir, else vocab.spm n_vocabs times. */
static mt_status use_model_dir(app_opts *o, const char *dir, int n_vocabs) {
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/decoder.yml", dir);
    if (!app_is_file(p)) snprintf(p, sizeof p, "%s/model.npz.decoder.yml", dir);
    if (app_is_file(p)) {
        mt_status rc = app_opts_merge_file(o, p, true);
        /* a shortlist named there is a file of that folder (relative path) */
        if (rc == MT_OK && app_opts_source(o, "shortlist") == APP_SRC_CONFIG)
            rc = rebase(o, "shortlist", dir, false, 1);
        if (rc != MT_OK) return rc;
    }
    /* the files next to decoder.yml, whatever paths training wrote into it */
    snprintf(p, sizeof p, "%s/model.npz", dir);
    if (!app_is_file(p)) return mt_seterr(MT_ERR_NOTFOUND, "no model file %s", p);
    const char *mv[1] = {p};
    mt_status rc = app_opts_set(o, "models", 1, mv, APP_SRC_CONFIG);
    if (rc == MT_OK && app_opts_count(o, "vocabs") > 0) {
        rc = rebase(o, "vocabs", dir, true, 0);
    } else if (rc == MT_OK) {
        char vp[PATH_MAX + 32];
        snprintf(vp, sizeof vp, "%s/vocab.spm", dir);
        const char *vv[3] = {vp, vp, vp};
        rc = app_opts_set(o, "vocabs", n_vocabs, vv, APP_SRC_CONFIG);
    }
    return rc;
}

/* -m/-v from the command line, a config, or the default model (want_ape:
** the default APE model). */
static mt_status resolve_models(app_opts *o, bool want_ape) {
    if (app_opts_count(o, "models") == 0 && app_opts_count(o, "model") > 0) {
        int n = app_opts_count(o, "model");
        const char *v[MT_MAX_MODELS];
        for (int i = 0; i < n && i < MT_MAX_MODELS; i++)
            v[i] = app_opts_item(o, "model", i);
        mt_status rc = app_opts_set(o, "models", n < MT_MAX_MODELS ? n : MT_MAX_MODELS, v,
                                    app_opts_source(o, "model"));
        if (rc != MT_OK) return rc;
    }
    int nc = app_opts_count(o, "config");
    if (nc > 0 && app_opts_flag(o, "relative-paths")) {
        char dir[PATH_MAX];
        app_dir_of(app_opts_item(o, "config", nc - 1), dir, sizeof dir);
        const char *keys[] = {"models", "vocabs", "shortlist"};
        for (int k = 0; k < 3; k++) {
            if (app_opts_source(o, keys[k]) != APP_SRC_CONFIG) continue;
            mt_status rc = rebase(o, keys[k], dir, false, k == 2);
            if (rc != MT_OK) return rc;
        }
    }
    if (app_opts_count(o, "models") > 0) return MT_OK;
    char dir[PATH_MAX], looked[3 * PATH_MAX];
    if (want_ape) {
        if (!app_default_ape_dir(dir, sizeof dir, looked, sizeof looked))
            return mt_seterr(MT_ERR_NOTFOUND,
                             "no APE model given (-m MODEL -v SRC MT TRG, or -c CONFIG) and the "
                             "default one is not installed (looked for model.npz in %s)",
                             looked);
        return use_model_dir(o, dir, 3);
    }
    if (!app_default_model_dir(dir, sizeof dir, looked, sizeof looked))
        return mt_seterr(MT_ERR_NOTFOUND,
                         "no model given (-m MODEL -v VOCABS, or -c CONFIG) and the default "
                         "model is not installed (looked for model.npz in %s)",
                         looked);
    return use_model_dir(o, dir, 2);
}

/* The numbers after the --shortlist file: FIRST (a text lex: the most
** frequent target words always in the list; a binary one: 0 skips its
** checks) >= 0, BEST (translations kept per source word) >= 1, THRESHOLD
** (least probability) in 0..1; Marian's 5th value (a dump prefix) is not
** supported. */
static mt_status shortlist_values(const app_opts *o, uint64_t *first, uint64_t *best,
                                  float *threshold, bool *check) {
    static const char *const what[] = {"", "first", "best", "threshold"};
    static const double lo[] = {0, 0, 1, 0}, hi[] = {0, 1e9, 1e9, 1};
    static const char *const range[] = {"", "0..1000000000", "1..1000000000", "0..1"};
    *first = 100, *best = 100, *threshold = 0, *check = true;
    int ns = app_opts_count(o, "shortlist");
    if (ns > 4)
        return mt_seterr(MT_ERR_INVALID,
                         "--shortlist FILE [first] [best] [threshold]: %d values after the file",
                         ns - 1);
    for (int i = 1; i < ns; i++) {
        char *end = NULL;
        const char *v = app_opts_item(o, "shortlist", i);
        errno = 0;
        double d = strtod(v, &end);
        if (end == v || *end != '\0' || errno == ERANGE || !isfinite(d))
            return mt_seterr(MT_ERR_INVALID, "--shortlist: %s '%s' is not a number", what[i], v);
        if (i < 3 && d != floor(d))
            return mt_seterr(MT_ERR_INVALID, "--shortlist: %s '%s' is not an integer", what[i], v);
        if (d < lo[i] || d > hi[i])
            return mt_seterr(MT_ERR_INVALID, "--shortlist: %s %s is out of range (%s)", what[i], v,
                             range[i]);
        if (i == 1) *first = (uint64_t)d, *check = d != 0;
        if (i == 2) *best = (uint64_t)d;
        if (i == 3) *threshold = (float)d;
    }
    return MT_OK;
}

static mt_status load_everything(tr_ctx *c) {
    app_opts *o = c->o;
    mt_status rc = c->resolved ? MT_OK : resolve_models(o, c->want_ape);
    if (rc != MT_OK) return rc;
    int n = app_opts_count(o, "models"), nw = app_opts_count(o, "weights");
    if (n > MT_MAX_MODELS) return mt_seterr(MT_ERR_INVALID, "at most %d models", MT_MAX_MODELS);
    if (nw != 0 && nw != n) return mt_seterr(MT_ERR_INVALID, "%d weights for %d models", nw, n);
    const char *paths[MT_MAX_MODELS], *vpaths[MT_MAX_VOCABS];
    float w[MT_MAX_MODELS];
    for (int m = 0; m < n; m++) {
        paths[m] = app_opts_item(o, "models", m);
        w[m] = nw ? (float)app_opts_float_item(o, "weights", m) : 1.0f;
    }
    int nv = app_opts_count(o, "vocabs");
    if (nv > MT_MAX_VOCABS) nv = MT_MAX_VOCABS;
    for (int k = 0; k < nv; k++)
        vpaths[k] = app_opts_item(o, "vocabs", k);
    rc = mt_ensemble_load(&c->am, paths, n, w, vpaths, nv);
    /* an APE model reads two inputs: said before any vocabulary count */
    if (c->want_ape && c->am.n_models > 0 && !app_ape_check(paths[0], c->am.n_src))
        return MT_ERR_INVALID;
    if (rc != MT_OK) return rc;
    if (app_opts_flag(o, "marian-prenorm-cache"))
        for (int m = 0; m < c->am.n_models; m++)
            mt_model_set_marian_prenorm_cache(c->am.models[m], true);
    int ns = app_opts_count(o, "shortlist");
    if (ns > 0) {
        uint64_t first, best;
        float threshold;
        bool check;
        rc = shortlist_values(o, &first, &best, &threshold, &check);
        if (rc != MT_OK) return rc;
        rc = mt_shortlist_load(app_opts_item(o, "shortlist", 0), c->am.vocabs[0],
                               c->am.vocabs[c->am.n_streams - 1], first, best, threshold, check,
                               &c->sl);
        if (rc != MT_OK) return rc;
    }
    mt_translate_params p = mt_translate_default_params();
    p.beam_size = (int32_t)app_opts_int(o, "beam-size");
    p.normalize = (float)app_opts_float(o, "normalize");
    p.word_penalty = (float)app_opts_float(o, "word-penalty");
    p.max_length_factor = (float)app_opts_float(o, "max-length-factor");
    p.max_length = (int32_t)app_opts_int(o, "max-length");
    p.max_length_crop = app_opts_flag(o, "max-length-crop");
    p.allow_unk = app_opts_flag(o, "allow-unk");
    p.allow_special = app_opts_flag(o, "allow-special");
    /* documents choose among the n-best the first translation that keeps
    ** the placeholders (app/formats/anatomy.h) */
    bool doc = c->cmd == &app_translate_cmd ? app_opts_count(o, "format") > 0
                                            : app_opts_str(o, "po")[0] != '\0';
    p.n_best = app_opts_flag(o, "n-best") || doc;
    p.word_scores = app_opts_flag(o, "word-scores");
    p.alignment = app_opts_str(o, "alignment")[0] != '\0';
    if (c->first_stage) { /* only the text goes on to the APE stage */
        p.n_best = doc;
        p.word_scores = p.alignment = p.pieces = false;
    }
    p.pieces = app_opts_flag(o, "no-spm-decode");
    p.max_active = (int32_t)app_opts_int(o, "max-active");
    if (p.beam_size < 1) return mt_seterr(MT_ERR_INVALID, "--beam-size must be at least 1");
    if (p.max_active < 0) return mt_seterr(MT_ERR_INVALID, "--max-active must be at least 0");
    if (app_opts_flag(o, "top-up") && !app_opts_given(o, "max-active")) {
        int64_t mini = app_opts_int(o, "mini-batch");
        p.max_active = mini < 1 ? 1 : mini > INT32_MAX ? INT32_MAX : (int32_t)mini;
    }
    const char *gt = app_opts_str(o, "gemm-type");
    if (mt_gemm_type_parse(gt, &p.gemm_type) != MT_OK)
        return mt_seterr(MT_ERR_INVALID, "--gemm-type: '%s' is not float32, int16, int8 or auto",
                         gt);
    if (!app_opts_flag(o, "quiet") && p.gemm_type != MT_GEMM_FLOAT32)
        mt_log(MT_LOG_INFO, "weight products: %s (--gemm-type)", mt_gemm_type_name(p.gemm_type));
    mt_cache_precision caches = mt_kv_cache_resolve(p.kv_cache, p.gemm_type);
    if (!app_opts_flag(o, "quiet") && caches != MT_CACHE_F32)
        mt_log(MT_LOG_INFO, "decoder caches: float16%s (with --gemm-type %s)",
               caches == MT_CACHE_F16_INT8_KEYS ? " values, int8 keys" : "",
               app_opts_str(o, "gemm-type"));
    if (p.max_length < 0) p.max_length = 0;
    const char *gl = app_opts_str(o, "glossary");
    if (gl[0]) {
        rc = app_glossary_load_file(gl, app_opts_str(o, "src-lang"), app_opts_str(o, "trg-lang"),
                                    &c->terms);
        if (rc != MT_OK) return rc;
        c->max_terms = (int)app_opts_int(o, "glossary-max");
        if (c->max_terms > MT_BEAM_MAX_CONSTRAINTS) c->max_terms = MT_BEAM_MAX_CONSTRAINTS;
        if (!app_opts_flag(o, "quiet"))
            mt_log(MT_LOG_INFO, "glossary %s: %d terms (enforced, at most %d per line)", gl,
                   (int)app_glossary_count(c->terms), c->max_terms);
    }
    return mt_translator_init(&c->am, c->sl, &p, &c->tr);
}

/* The APE stage: a (its model reads two inputs) post-edits mt[i], the
** translation of src[i] (prefixes: pf, or NULL), for n lines in memory;
** each result goes to sink. */
static mt_status run_ape_stage(tr_ctx *a, char **src, char **mt, char **pf, int64_t n,
                               sink_fn sink) {
    line_src ls;
    memset(&ls, 0, sizeof ls);
    ls.n_src = 2;
    ls.mem[0] = src;
    ls.mem[1] = mt;
    ls.mem_pf = pf;
    ls.n_mem = n;
    a->sink = sink;
    if (n == 0) return MT_OK;
    return run_pipeline(a, &ls);
}

/* MPI: whether setup succeeded on every rank (collective).  The lowest
** rank that failed reports its error, the others fail quietly; all end
** normally. */
static mt_status tr_agree(tr_ctx *c, mt_status rc) {
    if (c->nproc < 2) return rc;
    int first = app_dist_first_failed(rc != MT_OK);
    if (first < 0) return rc;
    c->agreed = true;
    if (first != c->rank) {
        c->failed_elsewhere = true;
        return rc != MT_OK ? rc : mt_seterr(MT_ERR_INVALID, "rank %d failed", first);
    }
    return rc;
}

/* --------------------------------------------------------- documents */

typedef struct doc_item {
    int64_t seg;
    int form;
    app_anatomy *anat;
    int64_t first; /* its pieces: lines first.. of the pipeline */
} doc_item;

static mt_status translate_document(tr_ctx *c, const char *kind, const char *path) {
    app_opts *o = c->o;
    app_doc_format fmt;
    mt_status rc = app_doc_format_from_name(kind, &fmt);
    if (rc == MT_OK && fmt != APP_DOC_FORMAT_PO && fmt != APP_DOC_FORMAT_XLIFF &&
        fmt != APP_DOC_FORMAT_TEXT)
        rc = mt_seterr(MT_ERR_INVALID, "--format: po, xliff or text, not '%s'", kind);
    if (rc == MT_OK && c->am.n_src != 1)
        rc = mt_seterr(MT_ERR_INVALID, "documents need a model with one input");
    app_doc *d = NULL;
    if (rc == MT_OK) rc = app_doc_open(path, fmt, &d);
    rc = tr_agree(c, rc);
    if (rc != MT_OK) {
        app_doc_free(d);
        return rc;
    }
    int64_t n_seg = app_doc_count(d), n_items = 0, n_lines = 0;
    doc_item *items = NULL;
    for (int64_t i = 0; i < n_seg; i++)
        n_items += app_doc_segment_at(d, i)->n_targets;
    items = mt_try_calloc((size_t)(n_items > 0 ? n_items : 1), sizeof *items);
    if (items == NULL) rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    n_items = 0;
    for (int64_t i = 0; i < n_seg && rc == MT_OK; i++) {
        const app_doc_segment *sg = app_doc_segment_at(d, i);
        if (sg->state != APP_DOC_STATE_EMPTY) continue;
        for (int f = 0; f < sg->n_targets && rc == MT_OK; f++) {
            const char *src = f > 0 && sg->source_plural ? sg->source_plural : sg->source;
            doc_item *it = &items[n_items++];
            it->seg = i;
            it->form = f;
            it->first = n_lines;
            /* XLIFF inline tags: the anatomy keeps them out of the MT and puts them back */
            rc = app_anat_parse(src, &it->anat);
            if (rc == MT_OK) n_lines += app_anat_pieces(it->anat);
        }
    }
    char **lines = NULL;
    if (rc == MT_OK) {
        size_t n = (size_t)(n_lines > 0 ? n_lines : 1);
        lines = mt_try_calloc(n, sizeof *lines);
        c->doc_lines = mt_try_calloc(n, sizeof(char *));
        c->doc_anat = mt_try_calloc(n, sizeof *c->doc_anat);
        c->doc_piece = mt_try_calloc(n, sizeof *c->doc_piece);
        if (!lines || !c->doc_lines || !c->doc_anat || !c->doc_piece)
            rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
    }
    for (int64_t k = 0; k < n_items && rc == MT_OK; k++)
        for (int p = 0; p < app_anat_pieces(items[k].anat); p++) {
            int64_t l = items[k].first + p;
            /* the pipeline frees nothing: lines point into the anatomies */
            lines[l] = (char *)app_anat_piece(items[k].anat, p);
            c->doc_anat[l] = items[k].anat;
            c->doc_piece[l] = p;
        }
    if (rc == MT_OK && n_lines > 0) {
        line_src ls;
        memset(&ls, 0, sizeof ls);
        ls.n_src = 1;
        ls.mem[0] = lines;
        ls.n_mem = n_lines;
        c->sink = sink_doc;
        c->quiet_tr = true;
        rc = run_pipeline(c, &ls);
    }
    if (rc == MT_OK && n_lines > 0 && c->ape) { /* --ape: each piece's MT post-edited */
        tr_ctx *a = c->ape;
        a->doc_lines = mt_try_calloc((size_t)n_lines, sizeof(char *));
        a->doc_anat = c->doc_anat;
        a->doc_piece = c->doc_piece;
        if (a->doc_lines == NULL) rc = mt_seterr(MT_ERR_NOMEM, "out of memory");
        if (rc == MT_OK) rc = run_ape_stage(a, lines, c->doc_lines, NULL, n_lines, sink_doc);
        if (rc == MT_OK)
            for (int64_t i = 0; i < n_lines; i++) { /* the APE output replaces the MT */
                mt_free(c->doc_lines[i]);
                c->doc_lines[i] = a->doc_lines[i];
                a->doc_lines[i] = NULL;
            }
        for (int64_t i = 0; a->doc_lines && i < n_lines; i++)
            mt_free(a->doc_lines[i]);
        mt_free(a->doc_lines);
        a->doc_lines = NULL;
        a->doc_anat = NULL;
        a->doc_piece = NULL;
    }
    const char *out = app_opts_str(o, "output");
    bool to_stdout = !strcmp(out, "stdout") || !strcmp(out, "-");
    bool writes = c->rank == 0; /* MPI: rank 0 has every piece and writes */
    for (int64_t k = 0; k < n_items && rc == MT_OK && writes; k++) {
        char *text = NULL;
        rc = app_anat_assemble(items[k].anat, (const char *const *)c->doc_lines + items[k].first,
                               &text);
        if (rc != MT_OK) break;
        if (fmt == APP_DOC_FORMAT_TEXT && to_stdout) {
            fprintf(c->out, "%s\n", text);
        } else {
            rc = app_doc_set_target(d, items[k].seg, items[k].form, text, APP_DOC_STATE_DRAFT);
            if (rc != MT_OK) {
                char msg[800];
                snprintf(msg, sizeof msg, "%s", mt_errmsg());
                mt_log(MT_LOG_WARN, "%s: segment %lld left untranslated: %s", path,
                       (long long)items[k].seg + 1, msg);
                rc = MT_OK;
            }
        }
        mt_free(text);
    }
    /* -o FILE; --in-place over the input; else standard output, never the
    ** input (the user's file is not overwritten unless asked) */
    bool in_place = app_opts_flag(o, "in-place");
    if (rc == MT_OK && writes && !(fmt == APP_DOC_FORMAT_TEXT && to_stdout && !in_place)) {
        if (!to_stdout || in_place)
            rc = app_doc_save(d, in_place ? NULL : out, app_doc_default_save_params());
        else
            rc = app_doc_write(d, c->out, "standard output", app_doc_default_save_params());
    }
    if (rc == MT_OK && writes && !app_opts_flag(o, "quiet"))
        mt_log(MT_LOG_INFO, "%s: %lld segment%s translated", path, (long long)n_items,
               n_items == 1 ? "" : "s");
    for (int64_t i = 0; c->doc_lines && i < n_lines; i++)
        mt_free(c->doc_lines[i]);
    for (int64_t k = 0; k < n_items; k++)
        app_anat_free(items[k].anat);
    mt_free(lines);
    mt_free(c->doc_lines);
    mt_free(c->doc_anat);
    mt_free(c->doc_piece);
    c->doc_lines = NULL;
    c->doc_anat = NULL;
    c->doc_piece = NULL;
    mt_free(items);
    app_doc_free(d);
    return rc;
}

/* translate --ape on a stream: the input is read whole, translated (the
** 1-best of each line), and the APE stage prints its post-edit of every
** (line, MT) pair as translate prints translations.  A line without a
** translation (a warning says why) goes on with the source "" and MT "". */
static mt_status ape_stream(tr_ctx *c, line_src *in) {
    int64_t n = 0, cap = 0;
    char **src = NULL, **pf = NULL;
    mt_status rc = MT_OK;
    for (;;) {
        const char *texts[MT_MAX_STREAMS] = {0}, *prefix = NULL;
        int got = next_line(in, n, texts, &prefix);
        if (got < 0) {
            rc = in->err;
            break;
        }
        if (got == 0) break;
        if (n == cap) {
            int64_t nc = cap ? 2 * cap : 1024;
            char **a = mt_try_realloc(src, sizeof *src * (size_t)nc);
            if (a) src = a;
            char **b = a ? mt_try_realloc(pf, sizeof *pf * (size_t)nc) : NULL;
            if (b) pf = b;
            if (!a || !b) {
                rc = mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
                break;
            }
            cap = nc;
        }
        bool nul = in->len[0] != strlen(texts[0]);
        if (nul)
            mt_log(MT_LOG_WARN, "%s:%lld: a NUL byte in the line (line %lld not translated)",
                   in->name[0], (long long)n + 1, (long long)n + 1);
        src[n] = mt_try_strdup(nul ? "" : texts[0]);
        pf[n] = prefix ? mt_try_strdup(prefix) : NULL;
        n++;
        if (src[n - 1] == NULL || (prefix && pf[n - 1] == NULL)) {
            rc = mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
            break;
        }
    }
    tr_ctx *a = c->ape;
    size_t cells = (size_t)(n > 0 ? n : 1);
    if (rc == MT_OK) {
        c->doc_lines = mt_try_calloc(cells, sizeof(char *));
        c->doc_bad = mt_try_calloc(cells, sizeof(bool));
        if (c->doc_lines == NULL || c->doc_bad == NULL)
            rc = mt_seterr(MT_ERR_NOMEM, "translate: out of memory");
    }
    if (rc == MT_OK && n > 0) {
        line_src ls;
        memset(&ls, 0, sizeof ls);
        ls.n_src = 1;
        ls.mem[0] = src;
        ls.mem_pf = pf;
        ls.n_mem = n;
        ls.mem_name = in->name[0];
        c->sink = sink_doc;
        c->quiet_tr = true;
        rc = run_pipeline(c, &ls);
    }
    for (int64_t i = 0; rc == MT_OK && i < n; i++)
        if (c->doc_bad[i]) src[i][0] = '\0'; /* said once, by the MT stage */
    if (rc == MT_OK) {
        a->out = c->out;
        a->out_name = c->out_name;
        rc = run_ape_stage(a, src, c->doc_lines, NULL, n, sink_print);
        c->n_sentences += a->n_sentences;
        c->n_searches += a->n_searches;
    }
    for (int64_t i = 0; i < n; i++) {
        mt_free(src[i]);
        mt_free(pf[i]);
        if (c->doc_lines) mt_free(c->doc_lines[i]);
    }
    mt_free(src);
    mt_free(pf);
    mt_free(c->doc_lines);
    mt_free(c->doc_bad);
    c->doc_lines = NULL;
    c->doc_bad = NULL;
    return rc;
}

/* postedit --po FILE: the fuzzy entries (--all: every translated one) whose
** msgstr is one line are post-edited (msgid or msgid_plural, msgstr[k]);
** the first n-best entry with the msgstr's placeholders replaces it when it
** differs, and the entry stays (or becomes) fuzzy; the rest of the file is
** kept byte for byte (app/formats/doc.h).  Multi-line msgstr are left as
** they are (the model reads one line). */
static mt_status postedit_document(tr_ctx *c, const char *path) {
    app_opts *o = c->o;
    app_doc *d = NULL;
    mt_status rc = app_doc_open(path, APP_DOC_FORMAT_PO, &d);
    if (rc != MT_OK) return rc;
    bool all = app_opts_flag(o, "all");
    int64_t n_seg = app_doc_count(d), n = 0, multi = 0, changed = 0;
    for (int64_t i = 0; i < n_seg; i++)
        n += app_doc_segment_at(d, i)->n_targets;
    size_t cells = (size_t)(n > 0 ? n : 1);
    char **src = mt_try_calloc(cells, sizeof *src), **mt = mt_try_calloc(cells, sizeof *mt);
    int64_t *seg = mt_try_calloc(cells, sizeof *seg);
    int *form = mt_try_calloc(cells, sizeof *form);
    c->doc_lines = mt_try_calloc(cells, sizeof(char *));
    if (!src || !mt || !seg || !form || !c->doc_lines)
        rc = mt_seterr(MT_ERR_NOMEM, "postedit: out of memory");
    n = 0;
    for (int64_t i = 0; i < n_seg && rc == MT_OK; i++) {
        const app_doc_segment *sg = app_doc_segment_at(d, i);
        if (!(sg->state == APP_DOC_STATE_DRAFT || (all && sg->state == APP_DOC_STATE_CONFIRMED)))
            continue;
        for (int f = 0; f < sg->n_targets && rc == MT_OK; f++) {
            const char *s = f > 0 && sg->source_plural ? sg->source_plural : sg->source;
            const char *t = sg->targets[f];
            if (t[0] == '\0') continue;
            if (strchr(s, '\n') || strchr(t, '\n')) {
                multi++;
                continue;
            }
            src[n] = mt_try_strdup(s);
            mt[n] = mt_try_strdup(t);
            seg[n] = i;
            form[n] = f;
            if (src[n++] == NULL || mt[n - 1] == NULL)
                rc = mt_seterr(MT_ERR_NOMEM, "postedit: out of memory");
        }
    }
    if (rc == MT_OK) {
        c->doc_mt = mt;
        c->quiet_tr = true;
        rc = run_ape_stage(c, src, mt, NULL, n, sink_doc);
        c->doc_mt = NULL;
    }
    for (int64_t k = 0; k < n && rc == MT_OK; k++) {
        if (c->doc_lines[k] == NULL || strcmp(c->doc_lines[k], mt[k]) == 0) continue;
        rc = app_doc_set_target(d, seg[k], form[k], c->doc_lines[k], APP_DOC_STATE_DRAFT);
        if (rc == MT_OK) {
            changed++;
        } else if (rc != MT_ERR_NOMEM) {
            mt_log(MT_LOG_WARN, "%s: entry %lld kept its MT: %s", path, (long long)seg[k] + 1,
                   mt_errmsg());
            rc = MT_OK;
        }
    }
    const char *out = app_opts_str(o, "output");
    bool to_stdout = !strcmp(out, "stdout") || !strcmp(out, "-");
    bool in_place = app_opts_flag(o, "in-place");
    if (rc == MT_OK) {
        if (!to_stdout || in_place)
            rc = app_doc_save(d, in_place ? NULL : out, app_doc_default_save_params());
        else
            rc = app_doc_write(d, c->out, "standard output", app_doc_default_save_params());
    }
    if (rc == MT_OK && !app_opts_flag(o, "quiet")) {
        mt_log(MT_LOG_INFO, "%s: %lld msgstr post-edited, %lld changed (fuzzy)", path, (long long)n,
               (long long)changed);
        if (multi > 0)
            mt_log(MT_LOG_INFO, "%s: %lld msgstr of several lines left as they are", path,
                   (long long)multi);
    }
    for (int64_t k = 0; k < n; k++) {
        mt_free(src[k]);
        mt_free(mt[k]);
        if (c->doc_lines) mt_free(c->doc_lines[k]);
    }
    mt_free(src);
    mt_free(mt);
    mt_free(seg);
    mt_free(form);
    mt_free(c->doc_lines);
    c->doc_lines = NULL;
    app_doc_free(d);
    return rc;
}

/* ---------------------------------------------------------------- main */

/* The log of the other ranks of an MPI job: errors only, with the rank. */
static void rank_log(mt_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == MT_LOG_ERROR)
        fprintf(stderr, "mtpe translate: rank %d: %s\n", app_dist_rank(), msg);
}

/* MPI: standard input reaches rank 0 only (mpirun's default): rank 0
** reads all of it and sends it to the others; each reads it from memory
** (*mem, freed by the caller).  So the input is held in memory whole. */
static mt_status shared_stdin(tr_ctx *c, char **mem, FILE **f) {
    size_t len = 0;
    *mem = NULL;
    if (c->rank == 0) {
        size_t cap = 1 << 16;
        *mem = mt_xmalloc(cap);
        size_t got;
        while ((got = fread(*mem + len, 1, cap - len, stdin)) > 0) {
            len += got;
            if (len == cap) *mem = mt_xrealloc(*mem, cap *= 2);
        }
        if (ferror(stdin)) {
            fprintf(stderr, "mtpe translate: stdin: read error\n");
            app_dist_abort(1);
        }
    }
    app_dist_bcast_alloc(mem, &len, 0);
    *f = len > 0 ? fmemopen(*mem, len, "rb") : fopen("/dev/null", "rb");
    if (*f == NULL) return mt_seterr(MT_ERR_NOMEM, "stdin: cannot read it from memory");
    return MT_OK;
}

static mt_status translate_stream(tr_ctx *c) {
    app_opts *o = c->o;
    char *stdin_mem = NULL;
    line_src ls;
    memset(&ls, 0, sizeof ls);
    ls.n_src = c->am.n_src;
    int ni = app_opts_count(o, "input");
    mt_status rc = MT_OK;
    if (c->want_ape && ni == 1) { /* postedit: one file of source<TAB>MT lines */
        ls.n_src = 1;
        ls.tsv = true;
    }
    if (c->want_ape && ni != ls.n_src)
        rc = mt_seterr(MT_ERR_INVALID,
                       "postedit reads (source, MT) pairs: -i SRC MT (two line-aligned files) "
                       "or one file of source<TAB>MT lines (default: stdin); got %d files",
                       ni);
    else if (ni != ls.n_src)
        rc = mt_seterr(MT_ERR_INVALID, "the model reads %d input%s: give %d files (-i), got %d",
                       ls.n_src, ls.n_src > 1 ? "s" : "", ls.n_src, ni);
    bool regular = true;
    for (int k = 0; k < ls.n_src && rc == MT_OK; k++) {
        const char *p = app_opts_item(o, "input", k);
        bool std_in = !strcmp(p, "stdin") || !strcmp(p, "-");
        ls.name[k] = std_in ? "stdin" : p;
        if (std_in && c->nproc > 1 && stdin_mem == NULL) {
            rc = shared_stdin(c, &stdin_mem, &ls.f[k]);
            regular = false;
            continue;
        }
        ls.f[k] = std_in ? stdin : fopen(p, "rb");
        if (ls.f[k] == NULL) rc = mt_seterr(MT_ERR_IO, "cannot open %s: %s", p, strerror(errno));
        struct stat st;
        if (ls.f[k] && (fstat(fileno(ls.f[k]), &st) != 0 || !S_ISREG(st.st_mode))) regular = false;
        if (ls.f[k] && k == 0 && regular) c->total_bytes = (int64_t)st.st_size;
    }
    const char *pf = app_opts_str(o, "prefix-file");
    if (rc == MT_OK && pf[0]) {
        ls.pname = pf;
        ls.pf = fopen(pf, "rb");
        if (ls.pf == NULL) rc = mt_seterr(MT_ERR_IO, "cannot open %s: %s", pf, strerror(errno));
    }
    rc = tr_agree(c, rc);
    c->sink = sink_print;
    c->progress =
        regular && isatty(2) && !app_opts_flag(o, "quiet") && c->ape == NULL && c->rank == 0;
    if (c->progress) c->quiet_tr = true;
    if (rc == MT_OK) rc = c->ape ? ape_stream(c, &ls) : run_pipeline(c, &ls);
    for (int k = 0; k < ls.n_src; k++)
        if (ls.f[k] && ls.f[k] != stdin) fclose(ls.f[k]);
    mt_free(stdin_mem);
    if (ls.pf) fclose(ls.pf);
    for (int k = 0; k <= MT_MAX_STREAMS; k++)
        free(ls.buf[k]);
    return rc;
}

const app_cmd app_translate_cmd = {
    .name = "translate",
    .usage = "[-m MODEL... -v VOCABS... | -c CONFIG] [-i IN] [-o OUT]\n"
             "--format po|xliff|text FILE [-o OUT | --in-place]",
    .about = "Translates text, one sentence per line, as marian-decoder (same options and\n"
             "output formats).  Without -m or -c, the default model in assets/ is used.\n"
             "mpirun -np N mtpe translate ...: the searches shared by N processes, the output\n"
             "in input order from rank 0, the same bytes as one process.\n",
    .opts = tr_opts,
    .n_opts = n_tr_opts,
};

const app_cmd app_postedit_cmd = {
    .name = "postedit",
    .usage = "[-m MODEL -v SRC MT TRG | -c CONFIG] [-i SRC MT | -i PAIRS.tsv] [-o OUT]\n"
             "--po FILE.po [--all] [-o OUT | --in-place]",
    .about = "Automatic post-editing: an APE model (a multi-source model reading the source\n"
             "and a machine translation of it) corrects the MT.  Input: two line-aligned\n"
             "files (-i SRC MT), or source<TAB>MT lines (one file, default stdin); output\n"
             "as translate's.  --po: the fuzzy msgstr of a PO file (MT of another engine)\n"
             "are post-edited and stay fuzzy; the rest of the file is kept.  Without -m or\n"
             "-c, the APE model in assets/models/en-de-ape is used.  One process only:\n"
             "not sharded under mpirun (refused with -np N > 1).\n",
    .opts = pe_opts,
    .n_opts = n_pe_opts,
};

static void ctx_init(tr_ctx *c, app_opts *o, const app_cmd *cmd) {
    memset(c, 0, sizeof *c);
    c->o = o;
    c->cmd = cmd;
    c->out = stdout;
    c->out_name = "standard output";
    c->rank = app_dist_rank();
    c->nproc = app_dist_size();
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv_job, NULL);
    pthread_cond_init(&c->cv_done, NULL);
    pthread_cond_init(&c->cv_space, NULL);
    c->threads = (int)app_opts_int(o, "cpu-threads");
    if (c->threads < 1) c->threads = 1;
    c->nbest = app_opts_flag(o, "n-best");
    c->word_scores = app_opts_flag(o, "word-scores");
    c->quiet_tr = app_opts_flag(o, "quiet-translation") || app_opts_flag(o, "quiet");
    c->align = app_opts_str(o, "alignment");
}

static void ctx_free(tr_ctx *c) {
    mt_translator_free(c->tr);
    app_glossary_free(c->terms);
    mt_shortlist_free(c->sl);
    mt_ensemble_free(&c->am);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv_job);
    pthread_cond_destroy(&c->cv_done);
    pthread_cond_destroy(&c->cv_space);
    app_opts_free(c->o);
}

/* translate --ape DIR: the APE stage's context, with the options of the
** command line (and its -c configs) over DIR's decoder.yml, its own model,
** vocabularies and shortlist, and no prefixes (they are the MT's). */
static mt_status ape_open(tr_ctx *c, int argc, char **argv, const char *dir) {
    app_opts *o2 = NULL;
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return mt_seterr(MT_ERR_NOTFOUND,
                         "--ape %s: no such folder (the APE model's: model.npz, decoder.yml, "
                         "vocabularies)",
                         dir);
    mt_status rc = app_cmd_parse(c->cmd, argc, argv, &o2);
    static const char *const lists[] = {"models", "model", "vocabs", "weights", "shortlist"};
    for (int k = 0; k < 5 && rc == MT_OK; k++)
        rc = app_opts_set(o2, lists[k], 0, NULL, APP_SRC_DEFAULT);
    const char *none[1] = {""};
    if (rc == MT_OK) rc = app_opts_set(o2, "prefix-file", 1, none, APP_SRC_DEFAULT);
    if (rc == MT_OK) rc = use_model_dir(o2, dir, 3);
    if (rc != MT_OK) {
        app_opts_free(o2);
        return rc;
    }
    tr_ctx *a = mt_try_calloc(1, sizeof *a);
    if (a == NULL) {
        app_opts_free(o2);
        return mt_seterr(MT_ERR_NOMEM, "out of memory");
    }
    ctx_init(a, o2, c->cmd);
    a->want_ape = true;
    a->resolved = true;
    c->ape = a;
    mt_status rc2 = load_everything(a);
    if (rc2 == MT_OK && !app_opts_flag(o2, "quiet"))
        mt_log(MT_LOG_INFO, "APE model: %s", app_opts_item(o2, "models", 0));
    return rc2;
}

static int tr_main(const app_cmd *cmd, int argc, char **argv) {
    app_opts *o = NULL;
    int ret;
    if (!app_opts_parse_cmd(cmd, argc, argv, &o, &ret)) return ret;
    /* under mpirun: one process of a sharded translation (app/dist.h) */
    if (app_dist_init(cmd->name) != MT_OK) {
        fprintf(stderr, "mtpe %s: %s\n", cmd->name, mt_errmsg());
        app_opts_free(o);
        return 1;
    }
    double t_start = app_now();
    bool pe = cmd == &app_postedit_cmd;
    const char *name = cmd->name;
    tr_ctx c;
    ctx_init(&c, o, cmd);
    c.want_ape = pe;
    if (c.rank != 0) mt_log_set(rank_log, NULL);
    app_doc_atomic out_file = {0};
    ret = 1;
    if (c.align[0] && strcmp(c.align, "soft")) {
        char *end = NULL;
        float t = strcmp(c.align, "hard") ? strtof(c.align, &end) : 1.0f;
        if (strcmp(c.align, "hard") && (end == c.align || *end || !(t > 0.0f && t <= 1.0f))) {
            fprintf(stderr, "mtpe %s: --alignment: soft, hard or a threshold in (0, 1]\n", name);
            ret = 2;
            goto done;
        }
    }
    /* the batching options hold every sentence of a maxi-batch in memory */
    int64_t chunk = app_opts_int(o, "mini-batch") * app_opts_int(o, "maxi-batch");
    if (chunk > 1000000) {
        fprintf(stderr,
                "mtpe %s: --mini-batch %lld times --maxi-batch %lld is %lld sentences "
                "read at once, at most 1000000\n",
                name, (long long)app_opts_int(o, "mini-batch"),
                (long long)app_opts_int(o, "maxi-batch"), (long long)chunk);
        ret = 2;
        goto done;
    }
    if (app_opts_count(o, "shortlist") > 0) {
        uint64_t sf, sb;
        float st;
        bool sc;
        if (shortlist_values(o, &sf, &sb, &st, &sc) != MT_OK) {
            fprintf(stderr, "mtpe %s: %s\n", name, mt_errmsg());
            ret = 2;
            goto done;
        }
    }
    int nf = pe ? 0 : app_opts_count(o, "format");
    const char *po = pe ? app_opts_str(o, "po") : "";
    const char *ape = pe ? "" : app_opts_str(o, "ape");
    /* MPI: postedit and translate --ape are not sharded.  Their APE stage
    ** reads the MT of every line, which only rank 0 would hold after the MT
    ** stage, and postedit --po writes one document; rather than a wrong or
    ** partial output they refuse to run with more than one process.  Every
    ** rank sees the same command line, so all end here (exit 2, no
    ** MPI_Abort); rank 0 says why. */
    if (c.nproc > 1 && (pe || ape[0])) {
        if (c.rank == 0)
            fprintf(stderr,
                    "mtpe %s: %s runs in one process only, not under mpirun with %d "
                    "processes (use -np 1)\n",
                    name, pe ? "postedit" : "--ape", c.nproc);
        ret = 2;
        goto done;
    }
    if (nf > 2) {
        fprintf(stderr, "mtpe %s: --format KIND [FILE]\n", name);
        ret = 2;
        goto done;
    }
    const char *op = app_opts_str(o, "output");
    bool to_file = strcmp(op, "stdout") && strcmp(op, "-");
    bool doc = nf > 0 || po[0];
    if (app_opts_flag(o, "in-place") && (!doc || to_file)) {
        fprintf(stderr,
                "mtpe %s: --in-place writes the %s document over its file "
                "(not with -o, and only with %s)\n",
                name, pe ? "--po" : "--format", pe ? "--po" : "--format");
        ret = 2;
        goto done;
    }
    if (pe && app_opts_flag(o, "all") && !po[0]) {
        fprintf(stderr, "mtpe %s: --all goes with --po FILE\n", name);
        ret = 2;
        goto done;
    }
    c.first_stage = ape[0] != '\0';
    mt_status rc = load_everything(&c);
    if (rc == MT_OK && ape[0]) rc = ape_open(&c, argc, argv, ape);
    /* -o FILE: written to a temporary file next to it, renamed over it at
    ** the end; a failed run leaves FILE as it was */
    if (rc == MT_OK && to_file && !doc && c.rank == 0) { /* MPI: rank 0 writes */
        rc = app_doc_atomic_begin(&out_file, op);
        if (rc == MT_OK) {
            c.out = out_file.f;
            c.out_name = op;
        }
    }
    rc = tr_agree(&c, rc);
    if (rc == MT_OK && po[0]) {
        rc = postedit_document(&c, po);
    } else if (rc == MT_OK && nf > 0) {
        const char *file = nf > 1 ? app_opts_item(o, "format", 1) : app_opts_item(o, "input", 0);
        if (!strcmp(file, "stdin") || !strcmp(file, "-"))
            rc = tr_agree(&c,
                          mt_seterr(MT_ERR_INVALID, "--format needs a file (--format KIND FILE)"));
        else
            rc = translate_document(&c, app_opts_item(o, "format", 0), file);
    } else if (rc == MT_OK) {
        rc = translate_stream(&c);
    }
    if (c.out != stdout) {
        if (rc == MT_OK) {
            errno = 0;
            if (fflush(c.out) != 0 || ferror(c.out)) rc = out_error(&c, errno);
        }
        if (rc == MT_OK)
            rc = app_doc_atomic_commit(&out_file);
        else
            app_doc_atomic_abort(&out_file);
        c.out = stdout;
    } else if (rc == MT_OK) {
        errno = 0;
        if (fflush(stdout) != 0 || ferror(stdout)) rc = out_error(&c, errno);
    }
    if (rc != MT_OK) {
        if (c.rank != 0 && !c.failed_elsewhere)
            fprintf(stderr, "mtpe %s: rank %d: %s\n", name, c.rank, mt_errmsg());
        else if (!c.failed_elsewhere)
            fprintf(stderr, "mtpe %s: %s\n", name, mt_errmsg());
        /* MPI: unless all know of the failure, the others would wait */
        if (c.nproc > 1 && !c.agreed) app_dist_abort(1);
    } else {
        ret = 0;
    }
    if (c.nproc > 1) { /* MPI: the whole job's counts */
        double v[2] = {(double)c.n_sentences, (double)c.n_searches};
        app_dist_sum_f64(v, 2);
        c.n_sentences = (int64_t)v[0];
        c.n_searches = (int64_t)v[1];
    }
    if (rc == MT_OK && !app_opts_flag(o, "quiet"))
        mt_log(MT_LOG_INFO, "Total time: %.5fs wall; %lld sentences in %lld searches",
               app_now() - t_start, (long long)c.n_sentences, (long long)c.n_searches);
done:
    if (c.ape) {
        ctx_free(c.ape);
        mt_free(c.ape);
    }
    ctx_free(&c);
    app_dist_finalize();
    return ret;
}

int app_translate_main(int argc, char **argv) { return tr_main(&app_translate_cmd, argc, argv); }
int app_postedit_main(int argc, char **argv) { return tr_main(&app_postedit_cmd, argc, argv); }
