/*
** cmd_train.c: `mtpe train`, Marian's training command (reference/
** marian-compat.md §9-10): options and config files as Marian's, corpus
** reading and batching (models/corpus.c), the update loop, validation,
** early stopping, checkpoints and resuming.
**
** One update: clear the training graph, reseed its dropout RNG from (seed,
** update), build the model's loss for the mini-batch, forward, backward of
** the sum over target tokens of the label-smoothed cross-entropy (as Marian
** 1.12, whatever --cost-type says: the type only chooses the displayed cost,
** ce-sum = that sum, ce-mean-words = the sum / target tokens, ce-mean = /
** sentences), one Adam step (clipping, warm-up, inverse-sqrt decay,
** smoothing: engine/optim.c).  The same graph serves every update, so
** after the largest batch has been seen nothing is allocated any more.
**
** --optimizer-delay N (Marian's gradient accumulation): an update runs the
** forward and backward of N consecutive mini-batches, their gradients and
** summed costs adding up (as Marian's sync graph group adds the
** sub-batches' RationalLosses and backpropagates without zeroing), then one
** Adam step: the update of the union of the N batches.  Everything that
** counts updates (the learning-rate schedule, Adam's step, --after-batches,
** --disp-freq/--save-freq/--valid-freq in updates) counts these N-batch
** updates; label frequencies count their labels.  The dropout seed of the
** k-th batch mixes in k (k = 0: the undelayed seed, so N = 1 is the old
** loop exactly).  At the end of an epoch the batches gathered so far make a
** shorter last update, so no gradient is pending between updates and
** checkpoints are only written at update boundaries; batches-epoch counts
** mini-batches read, so resuming (with any N) restores the corpus position.
** Marian differs in the batch it splits: it reads N times the batch (with
** --mini-batch-fit) and splits it into N, mtpe reads N batches of the
** given size (--mini-batch-fit is not implemented).
**
** MPI (`mpirun -np N mtpe train ...`, app/dist.h; issue 37): synchronous
** data parallelism.  An update is N x --optimizer-delay mini-batches; every
** process reads the same batch sequence (the order depends only on seed and
** epoch) and computes the forward and backward of the mini-batches k (0-based
** within the update) with k % N == its rank, dropout seeded by k as in the
** delayed one-process run; then the gradients (one MPI_Allreduce over all
** trainable gradients packed in parameter order, MTPE_ALLREDUCE chooses
** per-tensor or chunked calls instead), the summed costs, sentence and label
** counts and a stop flag (a signal seen by any process) are summed and
** every process takes the same Adam step.  So N processes with delay D are
** one process with delay N x D: same batches, same dropout, same gradient
** sum, same schedule, checkpoints interchangeable (batches-epoch counts
** mini-batches read by the job), resumable with any N and delay whose
** product is the same (another product also resumes, as another delay
** does).  Rank 0 alone writes checkpoints, the --log file and the log
** (the other ranks print only their errors, prefixed with the rank),
** trains a missing .spm (the others wait), validates (the others wait for
** its validators' state), picks the seed (--seed 0) and writes
** MTPE_TRAIN_BATCH_HASHES (every mini-batch the job read).  A failure
** while setting up (vocabularies, corpora, model, checkpoint) is agreed by
** all ranks: the lowest failing rank prints it, all exit 1; one later, on
** any rank, ends the job (its line, then MPI_Abort); a killed rank ends it
** through mpirun ("mpirun noticed that process rank R ... exited on
** signal 9"); checkpoints are written to temporary files and renamed, so the
** last one stays whole.  Speed lines add the all-reduce's time per update.
**
** How equal to one process with --optimizer-delay N x D: the gradient
** buffer of a parameter is the float sum of the contributions of the
** mini-batches' backward passes.  One process adds mini-batch k's
** contributions to the running buffer in order; N processes add each
** process's own, then MPI sums the N partial buffers.  For N = 2 and D = 1
** both are g0 + g1 (IEEE addition is commutative) wherever a backward adds
** its whole contribution to a buffer at once; where one backward adds in several
** pieces p1..pm (a parameter used by several products, tied embeddings, a
** GEMM accumulating over K blocks) the orders differ: each is a float sum
** of the same m + 1 terms, so |G1 - G2| <= 2 gamma_m sum |terms|, gamma_m =
** m u / (1 - m u), u = 2^-24, per gradient element.  Adam maps a gradient
** difference dg to a step difference of about lr (1 - b1) |dg| / (sqrt(v)
** + eps): bounded by lr |dg| / eps, but where a gradient element cancels to
** nearly 0 (v tiny) its step is about lr sign(g) and rounding can move it
** by up to 2 lr (Adam's first step, lr g / (|g| + eps), hides the rounding:
** the first update comes out bitwise equal).  So with eps = 1e-8 a few
** values drift by up to about lr while the rest agree, and the drift
** carries on through the forward pass; with a larger eps the bound is
** rounding-sized.  Measured on the tiny test model (tests/app/mpi_cli.sh,
** 6 updates, lr 0.003): max |diff| 6.2e-4, relative L2 1.6e-5, 46 of
** 201,568 values differ by more than 1e-5 (a run on other batches: 8.5e4
** values, relative L2 1e-2); with eps = 1e-2 max |diff| 1.2e-7.
**
** Validation (--valid-sets, --valid-metrics): cross-entropy = sum over
** sentences of -log p(reference) / sentences, ce-mean-words = the same sum /
** target tokens incl. EOS, perplexity = exp(ce-mean-words), all from the
** model's loss on an inference graph without label smoothing; bleu and chrf
** (sacreBLEU's defaults, models/metrics.h) translate the validation sources
** greedily through the model's step API (Marian uses its beam search with
** --beam-size here), at most --max-length-factor x source length tokens,
** <unk> suppressed, and leave out segments whose reference is empty.
**
** Speed (issue 3: words/s and the fraction of the machine's peak): before
** each validation, a line
**   [training] speed: N target words/s, X GFLOP/s in matrix products = Y% of
**   the fp32 peak of T cores (P GFLOP/s per core measured)
** over the updates since the previous such line, and at the end of training
** the same line over all updates of this run.  Time is the wall time of the
** update loop (reading batches, forward, backward, Adam, progress lines)
** without validation and checkpoint saving.  X: the matrix-product FLOPs of
** each update's graph, forward and backward (mt_graph_matmul_flops), summed
** and divided by that time.  P: mt_cpu_fp32_peak_gflops measured once when
** training starts (0.2 s, best of short AVX-512 FMA runs on one core); T:
** --cpu-threads (0: the online CPUs).  Without AVX-512 the probe gives 0 and
** the line has no fraction; on a GPU it has neither.  The progress line
** itself stays Marian's.
**
** After each update, in Marian's order: the progress line every
** --disp-freq, validation every --valid-freq (with the smoothed weights when
** --exponential-smoothing is on), a checkpoint every --save-freq.  Epoch
** units (1e) of these fire at the end of every n-th epoch.  Training stops
** at --after-epochs / --after-batches / --after, after --early-stopping
** stalled validations of the first metric, or on SIGTERM/SIGINT (which
** saves first); then it validates unless that update was validated already,
** and saves.
**
** Files under --model M (each written to a temporary name and fsynced; the
** set is renamed into place together, optimizer first and progress file
** last.  A run killed between the renames leaves the files not yet renamed
** staged: resuming completes their renames (complete_checkpoint).  The
** optimizer file records its update; resuming refuses one that differs from
** the progress file's (a checkpoint mixed by hand or by a lost staged file)):
**
**   M                   parameters (smoothed when smoothing) + special:model.yml
**   M.optimizer.npz     adam_mt, adam_vt, master_parameters, exp_smoothing:
**                       float32 [N], the trainable parameters concatenated in
**                       name order; adam_denoms: float64 [2] = 1-b1^t, 1-b2^t;
**                       mtpe_update: int64 [1], the update it was saved at
**   M.progress.yml      the training state (below)
**   M.yml               every option (what a re-run reloads as its config)
**   M.decoder.yml       Marian's decoder config for the model
**   M.best-METRIC.npz   with --keep-best (+ .decoder.yml)
**   M-stem.iterN.npz    at each save without --overwrite
**
** M.progress.yml (flat YAML read back by mt_yaml):
**
**   key                 meaning
**   epochs              current epoch (1-based)
**   batches             updates done
**   batches-epoch       mini-batches read in the current epoch (corpus
**                       position; = updates with --optimizer-delay 1)
**   samples-epoch       sentences seen in the current epoch
**   labels-total        target tokens seen (incl. EOS)
**   stalled, stalled-max   validations without improvement (first metric)
**   cost-sum, cost-count, updates-disp, samples-disp, words-disp,
**   gradient-norm-avg   display accumulators since the last progress line
**   seed                the seed in use (--seed 0 picks one from the clock)
**   eta                 learning rate of the next update (information)
**   validated           whether the last update was validated
**   optimizer-layout    "name-order": M.optimizer.npz is mtpe's (a Marian
**                       one, concatenated in Marian's order, is not restored)
**   validator-names, validator-last-best, validator-stalled   sequences
**
** Multi-source models (--type multi-transformer, shared-multi-transformer):
** --train-sets SRC1 SRC2 TRG with one vocabulary each; the corpus skips a
** triplet when any of its three lines is over --max-length (as Marian's
** corpus); --valid-sets takes three files too, and validation translates
** from both sources.  The loss is the same model code as decoding
** (models/transformer.c): in every decoder layer the context attention
** over encoder 1, then context_enc2 over encoder 2, then the FFN.
**
** --pretrained-model FILE (on a new model only; a resumed one ignores it,
** as Marian): each parameter takes FILE's item of its name, float32 and of
** the same shape (else an error naming both shapes).  mtpe's extension for
** APE from a single-source model: when FILE has no item of the name,
** encoder1_X and encoder2_X take encoder_X (only if the new model has no
** encoder_* of its own) and decoder_lN_context_enc2_X takes
** decoder_lN_context_X.  One log line per parameter: "initialised: NAME
** [from ITEM (mtpe's mapping)]" or "fresh: NAME", then a count.
**
** Resuming: when M exists (and not --no-reload), M.yml is merged as a config
** under the command line, the model is loaded (its special:model.yml fixes
** the architecture), M.optimizer.npz restores Adam's moments, the live and
** smoothed weights, and M.progress.yml the schedule, the validators and the
** position in the corpus (unless --no-restore-corpus).  The order of every
** epoch depends only on (seed, epoch) and dropout is reseeded per update, so
** a resumed run continues exactly as one that never stopped.
*/
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "common.h"
#include "corpus.h"
#include "dist.h"
#include "metrics.h"
#include "model.h"
#include "mt.h"
#include "options.h"
#include "vocab.h"

#define N_STREAMS_MAX (MT_MAX_STREAMS + 1)
#define MAX_METRICS 8
#define MAX_AFTER 8

/* ------------------------------------------------------------- options */

static const app_opt train_opts[] = {
    {"config", 'c', APP_OPT_STRINGS, NULL, NULL, "YAML config files (command line wins)"},
    {"model", 'm', APP_OPT_STRING, "model.npz", NULL, "path prefix of the model and its files"},
    {"pretrained-model", 0, APP_OPT_STRING, "", NULL,
     "initialise the parameters from this model (architecture from the options): each "
     "parameter from the item of its name; for a multi-transformer from a single-source "
     "model also encoder1_*/encoder2_* from encoder_* and decoder_lN_context_enc2_* from "
     "decoder_lN_context_* (mtpe extension); shapes must match"},
    {"no-reload", 0, APP_OPT_FLAG, NULL, NULL, "do not continue from an existing --model"},
    {"no-restore-corpus", 0, APP_OPT_FLAG, NULL, NULL,
     "when continuing, start the epoch from its beginning"},
    {"type", 0, APP_OPT_STRING, "transformer", NULL, "model type"},
    {"train-sets", 't', APP_OPT_STRINGS, NULL, NULL,
     "training corpora: sources..., target (multi-transformer: src mt pe)"},
    {"vocabs", 'v', APP_OPT_STRINGS, NULL, NULL,
     "one vocabulary per corpus (.spm is trained when missing)"},
    {"dim-vocabs", 0, APP_OPT_INTS, "0 0", NULL,
     "vocabulary sizes (size of a new .spm; 0 = from the vocabulary)", "0..2147483647"},
    {"dim-emb", 0, APP_OPT_INT, "512", NULL, "embedding and model size", "1..65536"},
    {"enc-depth", 0, APP_OPT_INT, "1", NULL, "encoder layers", "1..1000"},
    {"dec-depth", 0, APP_OPT_INT, "1", NULL, "decoder layers", "1..1000"},
    {"transformer-heads", 0, APP_OPT_INT, "8", NULL, "attention heads", "1..1024"},
    {"transformer-dim-ffn", 0, APP_OPT_INT, "2048", NULL, "FFN size", "1..1048576"},
    {"transformer-decoder-dim-ffn", 0, APP_OPT_INT, "0", NULL, "decoder FFN size (0 = same)",
     "0..1048576"},
    {"transformer-ffn-depth", 0, APP_OPT_INT, "2", NULL, "FFN layers", "1..100"},
    {"transformer-decoder-ffn-depth", 0, APP_OPT_INT, "0", NULL, "decoder FFN layers (0 = same)",
     "0..100"},
    {"transformer-ffn-activation", 0, APP_OPT_STRING, "swish", NULL, "relu | swish | gelu"},
    {"transformer-preprocess", 0, APP_OPT_STRING, "", NULL, "before each block: d a n"},
    {"transformer-postprocess", 0, APP_OPT_STRING, "dan", NULL, "after each block: d a n"},
    {"transformer-postprocess-emb", 0, APP_OPT_STRING, "d", NULL, "after the embeddings"},
    {"transformer-postprocess-top", 0, APP_OPT_STRING, "", NULL, "after the last layer"},
    {"transformer-decoder-autoreg", 0, APP_OPT_STRING, "self-attention", NULL,
     "self-attention | average-attention"},
    {"transformer-dim-aan", 0, APP_OPT_INT, "2048", NULL, "average-attention FFN size",
     "1..1048576"},
    {"transformer-aan-depth", 0, APP_OPT_INT, "2", NULL, "average-attention FFN layers", "1..100"},
    {"transformer-aan-activation", 0, APP_OPT_STRING, "swish", NULL, "average-attention FFN"},
    {"transformer-aan-nogate", 0, APP_OPT_FLAG, NULL, NULL, "no gate in average attention"},
    {"transformer-train-position-embeddings", 0, APP_OPT_FLAG, NULL, NULL,
     "learned position embeddings"},
    {"dim-rnn", 0, APP_OPT_INT, "1024", NULL, "s2s: RNN state size", "1..65536"},
    {"enc-type", 0, APP_OPT_STRING, "bidirectional", NULL,
     "s2s: bidirectional | alternating | bi-unidirectional"},
    {"enc-cell", 0, APP_OPT_STRING, "gru", NULL, "s2s: encoder cell: gru | lstm"},
    {"enc-cell-depth", 0, APP_OPT_INT, "1", NULL, "s2s: cells per encoder layer", "1..16"},
    {"dec-cell", 0, APP_OPT_STRING, "gru", NULL, "s2s: decoder cell: gru | lstm"},
    {"dec-cell-base-depth", 0, APP_OPT_INT, "2", NULL, "s2s: cells of the first decoder layer",
     "1..16"},
    {"dec-cell-high-depth", 0, APP_OPT_INT, "1", NULL, "s2s: cells of the other decoder layers",
     "1..16"},
    {"layer-normalization", 0, APP_OPT_FLAG, NULL, NULL, "s2s: layer normalisation in the RNN"},
    {"skip", 0, APP_OPT_FLAG, NULL, NULL, "s2s: skip connections between RNN layers"},
    {"tied-embeddings", 0, APP_OPT_FLAG, NULL, NULL, "tie target embeddings and output layer"},
    {"tied-embeddings-src", 0, APP_OPT_FLAG, NULL, NULL, "tie source and target embeddings"},
    {"tied-embeddings-all", 0, APP_OPT_FLAG, NULL, NULL, "tie all embeddings and the output"},
    {"output-omit-bias", 0, APP_OPT_FLAG, NULL, NULL, "no bias in the output layer"},
    {"right-left", 0, APP_OPT_FLAG, NULL, NULL, "train right-to-left"},
    {"dropout-src", 0, APP_OPT_FLOAT, "0", NULL, "source word dropout", "0..1"},
    {"dropout-trg", 0, APP_OPT_FLOAT, "0", NULL, "target word dropout", "0..1"},
    {"transformer-dropout", 0, APP_OPT_FLOAT, "0", NULL, "dropout between blocks", "0..1"},
    {"transformer-dropout-attention", 0, APP_OPT_FLOAT, "0", NULL, "attention dropout", "0..1"},
    {"transformer-dropout-ffn", 0, APP_OPT_FLOAT, "0", NULL, "FFN dropout", "0..1"},
    {"cost-type", 0, APP_OPT_STRING, "ce-sum", NULL, "ce-sum | ce-mean-words | ce-mean"},
    {"label-smoothing", 0, APP_OPT_FLOAT, "0", NULL, "label smoothing epsilon", "0..1"},
    {"optimizer", 0, APP_OPT_STRING, "adam", NULL, "adam"},
    {"optimizer-params", 0, APP_OPT_FLOATS, NULL, NULL,
     "Adam beta1 beta2 eps [weight-decay] (empty: 0.9 0.999 1e-8)"},
    {"optimizer-delay", 0, APP_OPT_INT, "1", NULL,
     "sum the gradients of N mini-batches into one update", "1..1000000"},
    {"learn-rate", 'l', APP_OPT_FLOAT, "0.0001", NULL, "learning rate", "0.."},
    {"lr-warmup", 0, APP_OPT_FREQ, "0", NULL, "linear warm-up over N updates"},
    {"lr-decay-inv-sqrt", 0, APP_OPT_FREQS, "0", NULL, "inverse-sqrt decay after N updates"},
    {"lr-report", 0, APP_OPT_FLAG, NULL, NULL, "show the learning rate in progress lines"},
    {"clip-norm", 0, APP_OPT_FLOAT, "1", NULL, "clip the gradient norm (0 = off)", "0.."},
    {"precision", 0, APP_OPT_STRINGS, "float32", NULL,
     "matrix products [optimizer]: float32 | bfloat16 (float32 master weights)"},
    {"exponential-smoothing", 0, APP_OPT_FLOAT, "0", "1e-4", "weight smoothing factor", "0..1"},
    {"mini-batch", 0, APP_OPT_INT, "64", NULL, "sentences per mini-batch", "1..1000000"},
    {"mini-batch-words", 0, APP_OPT_INT, "0", NULL, "source tokens per mini-batch (0 = off)",
     "0.."},
    {"maxi-batch", 0, APP_OPT_INT, "100", NULL, "mini-batches read and sorted together",
     "1..10000"},
    {"maxi-batch-sort", 0, APP_OPT_STRING, "trg", NULL, "trg | src | none"},
    {"shuffle", 0, APP_OPT_STRING, "data", NULL, "data | batches | none"},
    {"max-length", 0, APP_OPT_INT, "50", NULL, "skip longer sentences (tokens incl. EOS)",
     "1..1000000"},
    {"max-length-crop", 0, APP_OPT_FLAG, NULL, NULL, "crop long sentences instead"},
    {"after-epochs", 'e', APP_OPT_INT, "0", NULL, "stop after N epochs (0 = no limit)", "0.."},
    {"after-batches", 0, APP_OPT_INT, "0", NULL, "stop after N updates (0 = no limit)", "0.."},
    {"after", 0, APP_OPT_STRING, "0e", NULL, "stop criteria, e.g. 10e,300Ku,20Gt"},
    {"disp-freq", 0, APP_OPT_FREQ, "1000u", NULL, "progress line frequency"},
    {"disp-first", 0, APP_OPT_INT, "0", NULL, "also show the first N updates", "0.."},
    {"disp-label-counts", 0, APP_OPT_FLAG, "true", NULL, "show cost per label * labels"},
    {"save-freq", 0, APP_OPT_FREQ, "10000u", NULL, "checkpoint frequency"},
    {"overwrite", 0, APP_OPT_FLAG, NULL, NULL, "do not keep model.iterN.npz copies"},
    {"valid-sets", 0, APP_OPT_STRINGS, NULL, NULL, "validation corpora: sources..., target"},
    {"valid-freq", 0, APP_OPT_FREQ, "10000u", NULL, "validation frequency"},
    {"valid-metrics", 0, APP_OPT_STRINGS, "cross-entropy", NULL,
     "cross-entropy ce-mean-words perplexity bleu chrf"},
    {"valid-mini-batch", 0, APP_OPT_INT, "32", NULL, "sentences per validation batch", "1..65536"},
    {"valid-max-length", 0, APP_OPT_INT, "1000", NULL, "crop validation sentences", "1..1000000"},
    {"max-length-factor", 0, APP_OPT_FLOAT, "3", NULL, "translations: at most factor * source",
     "(0..1000"},
    {"early-stopping", 0, APP_OPT_INT, "10", NULL, "stop after N stalled validations", "0.."},
    {"keep-best", 0, APP_OPT_FLAG, NULL, NULL, "keep the best model per metric"},
    {"beam-size", 'b', APP_OPT_INT, "12", NULL, "beam size written to decoder.yml", "1..1000"},
    {"normalize", 'n', APP_OPT_FLOAT, "0", "1", "length normalisation in decoder.yml"},
    {"word-penalty", 0, APP_OPT_FLOAT, "0", NULL, "word penalty in decoder.yml"},
    {"seed", 0, APP_OPT_INT, "0", NULL, "random seed (0 = from the clock)"},
    {"cpu-threads", 0, APP_OPT_INT, "0", "1", "BLAS threads (0 = GPU when there is one)", "0..256"},
    {"devices", 'd', APP_OPT_INTS, "0", NULL, "GPU ordinal"},
    {"workspace", 'w', APP_OPT_INT, "2048", NULL, "accepted for Marian compatibility"},
    {"sentencepiece-max-lines", 0, APP_OPT_INT, "2000000", NULL, "lines to train a new .spm",
     "1.."},
    {"sentencepiece-options", 0, APP_OPT_STRING, "", NULL, "extra SentencePiece trainer flags"},
    {"log", 0, APP_OPT_STRING, "", NULL, "also append the log to this file"},
    {"quiet", 0, APP_OPT_FLAG, NULL, NULL, "no log on stderr"},
};
static const int n_train_opts = (int)(sizeof train_opts / sizeof train_opts[0]);

/* ------------------------------------------------------------- logging */

static FILE *log_file;
static bool log_quiet;
static bool bar_shown;
static volatile sig_atomic_t stop_signal;

static void log_sink(mt_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == MT_LOG_DEBUG) return;
    int rank = app_dist_rank();
    if (rank != 0) { /* the other processes of an MPI job: their errors only */
        if (level == MT_LOG_ERROR) fprintf(stderr, "mtpe train: rank %d: %s\n", rank, msg);
        return;
    }
    char stamp[32];
    time_t now = time(NULL);
    struct tm tmv;
    localtime_r(&now, &tmv);
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tmv);
    const char *tag = level == MT_LOG_WARN ? "[warn] " : (level == MT_LOG_ERROR ? "Error: " : "");
    if (!log_quiet) {
        if (bar_shown) fputs("\r\033[K", stderr);
        bar_shown = false;
        fprintf(stderr, "[%s] %s%s\n", stamp, tag, msg);
        fflush(stderr);
    }
    if (log_file) {
        fprintf(log_file, "[%s] %s%s\n", stamp, tag, msg);
        fflush(log_file);
    }
}

static void on_signal(int sig) { stop_signal = sig; }

/* 1234567 -> "1,234,567" */
static const char *commas(int64_t v, char *buf, size_t n) {
    char digits[32];
    snprintf(digits, sizeof digits, "%lld", (long long)(v < 0 ? -v : v));
    size_t len = strlen(digits), k = 0;
    if (v < 0 && k + 1 < n) buf[k++] = '-';
    for (size_t i = 0; i < len && k + 2 < n; i++) {
        buf[k++] = digits[i];
        if ((len - i - 1) % 3 == 0 && i + 1 < len) buf[k++] = ',';
    }
    buf[k] = '\0';
    return buf;
}

/* Shortest text that reads back as the same float (fmt's "{}"). */
static const char *shortest(float v, char *buf, size_t n) {
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, n, "%.*g", p, (double)v);
        if (strtof(buf, NULL) == v) break;
    }
    return buf;
}

/* --------------------------------------------------------------- state */

enum { COST_SUM = 0, COST_MEAN_WORDS, COST_MEAN };
enum { MET_CE = 0, MET_CE_WORDS, MET_PPL, MET_BLEU, MET_CHRF };

typedef struct train_state {
    int64_t epochs, batches, batches_epoch, samples_epoch, labels_total;
    int64_t stalled, stalled_max;
    double cost_sum, cost_count;
    int64_t updates_disp, samples_disp, words_disp;
    float gnorm_avg;
    uint64_t seed;
    bool validated;
    int n_valid;
    double last_best[MAX_METRICS];
    int64_t v_stalled[MAX_METRICS];
} train_state;

typedef struct trainer {
    app_opts *o;
    const char *path; /* --model */
    mt_device *dev;
    int n_streams;
    mt_vocab *vocabs[N_STREAMS_MAX];
    mt_corpus *train, *valid;
    mt_batcher *batches, *vbatches;
    mt_model *model;
    mt_adam *adam;
    mt_graph *g, *vg;
    train_state st;
    /* settings */
    int cost_type;
    float label_smoothing;
    bool smoothing, right_left;
    bool bf16; /* --precision bfloat16: bfloat16 operands of the products */
    app_freq disp, save, vfreq;
    int n_after;
    app_freq after[MAX_AFTER];
    int64_t after_epochs, after_batches, early_stopping, disp_first;
    int n_metrics;
    int metric[MAX_METRICS];
    char metric_name[MAX_METRICS][32];
    /* validation buffers */
    float *vbuf;   /* [valid-mini-batch * V] */
    int32_t *hyp;  /* [valid-mini-batch * max_out] */
    int32_t *prev; /* [valid-mini-batch] */
    int32_t *suppress;
    int n_suppress;
    int32_t max_out;
    /* display */
    double timer;
    bool bar;
    /* speed lines: per period (since the last line) and for the whole run */
    double peak_core;      /* measured GFLOP/s of one core, 0 = none        */
    int peak_cores;        /* cores the BLAS uses (0 = not a CPU)           */
    double speed_start;    /* start of the period (now_s)                   */
    double speed_excluded; /* seconds of validation and saving in it        */
    double speed_flops;    /* matrix-product FLOPs of its updates           */
    int64_t speed_words;   /* target words of its updates                   */
    int64_t speed_updates;
    int64_t delay; /* --optimizer-delay: mini-batches per update */
    double run_start, run_excluded, run_flops;
    int64_t run_words, run_updates;
    bool loaded;         /* continued from a checkpoint                          */
    bool optimizer_ours; /* progress.yml says M.optimizer.npz has mtpe's layout */
    FILE *batch_log;     /* MTPE_TRAIN_BATCH_HASHES: mt_batch_row_hash of each row trained on */
    /* MPI (app/dist.h): this process's rank of nproc; a stop agreed at
    ** the last update's sums (a signal seen by any process) */
    int rank, nproc;
    bool stop_agreed;
    double speed_ar, run_ar;     /* seconds of gradient all-reduce (period, run) */
    double speed_wait, run_wait; /* seconds waiting for the slowest process     */
    bool failed_elsewhere;       /* setup failed on another rank (it reports it)  */
    bool agreed;                 /* a failure every rank knows of: no MPI_Abort   */
} trainer;

static bool metric_parse(const char *s, int *out) {
    static const char *names[] = {"cross-entropy", "ce-mean-words", "perplexity", "bleu", "chrf"};
    for (int i = 0; i < 5; i++) {
        if (!strcmp(s, names[i])) {
            *out = i;
            return true;
        }
    }
    if (!strcmp(s, "bleu-detok")) {
        *out = MET_BLEU;
        return true;
    }
    return false;
}

static bool lower_is_better(int metric) { return metric <= MET_PPL; }

/* ------------------------------------------------------ file helpers */

static bool file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* path + suffix, in a buffer the caller frees. */
static char *cat2(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *s = mt_xmalloc(la + lb + 1);
    memcpy(s, a, la);
    memcpy(s + la, b, lb + 1);
    return s;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* Writes text to path, flushes and fsyncs it (no rename). */
static mt_status write_synced(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (f == NULL) return mt_seterr(MT_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    size_t n = strlen(text);
    bool ok = fwrite(text, 1, n, f) == n && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (fclose(f) != 0) ok = false;
    if (!ok) return mt_seterr(MT_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    return MT_OK;
}

static mt_status rename_into(const char *from, const char *to) {
    if (rename(from, to) != 0)
        return mt_seterr(MT_ERR_IO, "cannot rename %s to %s: %s", from, to, strerror(errno));
    return MT_OK;
}

static void sync_dir_of(const char *path) {
    char *dir = mt_xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash == NULL)
        strcpy(dir, ".");
    else if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    mt_free(dir);
}

static mt_status read_text(const char *path, char **out) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL) return mt_seterr(MT_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = mt_xmalloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n < 2) {
            cap *= 2;
            buf = mt_xrealloc(buf, cap);
        }
    }
    bool err = ferror(f) != 0;
    fclose(f);
    if (err) {
        mt_free(buf);
        return mt_seterr(MT_ERR_IO, "cannot read %s", path);
    }
    buf[n] = '\0';
    *out = buf;
    return MT_OK;
}

/* A YAML scalar as yaml-cpp writes it: plain when safe, else quoted. */
static void yaml_scalar(FILE *f, const char *s) {
    bool plain = s[0] != '\0' && strchr("-?:,[]{}#&*!|>'\"%@` ", s[0]) == NULL &&
                 strstr(s, ": ") == NULL && strstr(s, " #") == NULL && s[strlen(s) - 1] != ' ' &&
                 s[strlen(s) - 1] != ':';
    for (const char *p = s; *p && plain; p++)
        if ((unsigned char)*p < 0x20) plain = false;
    if (plain) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (const char *p = s; *p; p++) {
        if (*p == '"' || *p == '\\') fputc('\\', f);
        if ((unsigned char)*p < 0x20)
            fprintf(f, "\\x%02x", (unsigned char)*p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* Marian's model.npz.decoder.yml (EncoderDecoder::createDecoderConfig). */
static char *decoder_yml(trainer *t, const char *model_path) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL) return NULL;
    char num[32];
    fprintf(f, "relative-paths: false\nmodels:\n  - ");
    yaml_scalar(f, model_path);
    fprintf(f, "\nvocabs:");
    for (int i = 0; i < app_opts_count(t->o, "vocabs"); i++) {
        fprintf(f, "\n  - ");
        yaml_scalar(f, app_opts_item(t->o, "vocabs", i));
    }
    int64_t vmb = app_opts_int(t->o, "valid-mini-batch");
    fprintf(f, "\nbeam-size: %lld", (long long)app_opts_int(t->o, "beam-size"));
    fprintf(f, "\nnormalize: %s", shortest((float)app_opts_float(t->o, "normalize"), num, 32));
    fprintf(f, "\nword-penalty: %s",
            shortest((float)app_opts_float(t->o, "word-penalty"), num, 32));
    fprintf(f, "\nmini-batch: %lld\nmaxi-batch: %d\nmaxi-batch-sort: %s\n", (long long)vmb,
            vmb > 1 ? 100 : 1, vmb > 1 ? "src" : "none");
    fclose(f);
    return buf; /* malloc'd by open_memstream */
}

/* ------------------------------------------------------ progress.yml */

static char *progress_yml(const trainer *t) {
    const train_state *s = &t->st;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL) return NULL;
    fprintf(f, "version: \"mtpe %s\"\n", MT_VERSION);
    fprintf(f, "epochs: %lld\nbatches: %lld\nbatches-epoch: %lld\nsamples-epoch: %lld\n",
            (long long)s->epochs, (long long)s->batches, (long long)s->batches_epoch,
            (long long)s->samples_epoch);
    fprintf(f, "labels-total: %lld\nstalled: %lld\nstalled-max: %lld\n", (long long)s->labels_total,
            (long long)s->stalled, (long long)s->stalled_max);
    fprintf(f, "cost-sum: %.17g\ncost-count: %.17g\nupdates-disp: %lld\nsamples-disp: %lld\n",
            s->cost_sum, s->cost_count, (long long)s->updates_disp, (long long)s->samples_disp);
    fprintf(f, "words-disp: %lld\ngradient-norm-avg: %.9g\nseed: %llu\neta: %.9g\n",
            (long long)s->words_disp, (double)s->gnorm_avg, (unsigned long long)s->seed,
            t->adam ? (double)mt_adam_lr(t->adam) : 0.0);
    fprintf(f, "validated: %s\n", s->validated ? "true" : "false");
    fprintf(f, "optimizer-layout: name-order\n");
    fprintf(f, "validator-names:%s", t->n_metrics ? "" : "\n  []");
    for (int i = 0; i < t->n_metrics; i++)
        fprintf(f, "\n  - %s", t->metric_name[i]);
    fprintf(f, "\nvalidator-last-best:%s", t->n_metrics ? "" : "\n  []");
    for (int i = 0; i < t->n_metrics; i++)
        fprintf(f, "\n  - %.17g", s->last_best[i]);
    fprintf(f, "\nvalidator-stalled:%s", t->n_metrics ? "" : "\n  []");
    for (int i = 0; i < t->n_metrics; i++)
        fprintf(f, "\n  - %lld", (long long)s->v_stalled[i]);
    fprintf(f, "\ncomplete: true\n"); /* last: a staged file cut short lacks it */
    fclose(f);
    return buf;
}

static int64_t yml_int(const mt_yaml *y, const char *key, int64_t def) {
    const char *v = mt_yaml_get(y, key);
    return v ? strtoll(v, NULL, 10) : def;
}

static double yml_num(const mt_yaml *y, const char *key, double def) {
    const char *v = mt_yaml_get(y, key);
    return v ? strtod(v, NULL) : def;
}

static mt_status load_progress(trainer *t, const char *path) {
    char *text = NULL;
    mt_yaml *y = NULL;
    mt_status rc = read_text(path, &text);
    if (rc == MT_OK) rc = mt_yaml_parse(text, &y);
    if (rc != MT_OK) goto done;
    train_state *s = &t->st;
    s->epochs = yml_int(y, "epochs", 1);
    s->batches = yml_int(y, "batches", 0);
    s->batches_epoch = yml_int(y, "batches-epoch", 0);
    s->samples_epoch = yml_int(y, "samples-epoch", 0);
    s->labels_total = yml_int(y, "labels-total", 0);
    s->stalled = yml_int(y, "stalled", 0);
    s->stalled_max = yml_int(y, "stalled-max", 0);
    s->cost_sum = yml_num(y, "cost-sum", 0);
    s->cost_count = yml_num(y, "cost-count", 0);
    s->updates_disp = yml_int(y, "updates-disp", 0);
    s->samples_disp = yml_int(y, "samples-disp", 0);
    s->words_disp = yml_int(y, "words-disp", 0);
    s->gnorm_avg = (float)yml_num(y, "gradient-norm-avg", 0);
    const char *seed = mt_yaml_get(y, "seed");
    if (seed) s->seed = strtoull(seed, NULL, 10);
    const char *val = mt_yaml_get(y, "validated");
    s->validated = val && !strcmp(val, "true");
    const char *layout = mt_yaml_get(y, "optimizer-layout");
    t->optimizer_ours = layout && !strcmp(layout, "name-order");
    if (s->epochs < 1 || s->batches < 0 || s->batches_epoch < 0) {
        rc = mt_seterr(MT_ERR_FORMAT, "%s: bad training state (epochs %lld, batches %lld)", path,
                       (long long)s->epochs, (long long)s->batches);
        goto done;
    }
    /* validators by name: a metric that was not validated before starts fresh */
    int n = mt_yaml_seq_len(y, "validator-names");
    for (int i = 0; i < n; i++) {
        const char *name = mt_yaml_seq_item(y, "validator-names", i);
        const char *best = mt_yaml_seq_item(y, "validator-last-best", i);
        const char *stl = mt_yaml_seq_item(y, "validator-stalled", i);
        for (int k = 0; k < t->n_metrics && name && best && stl; k++) {
            if (strcmp(name, t->metric_name[k])) continue;
            s->last_best[k] = strtod(best, NULL);
            s->v_stalled[k] = strtoll(stl, NULL, 10);
        }
    }
done:
    if (rc != MT_OK && rc != MT_ERR_IO) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", mt_errmsg());
        rc = mt_seterr(rc, "%s: %s", path, msg);
    }
    mt_yaml_free(y);
    mt_free(text);
    return rc;
}

/* ------------------------------------------------- optimizer state */

typedef struct slot_ref {
    const char *name;
    int i;
    int64_t numel;
} slot_ref;

static int cmp_slot(const void *a, const void *b) {
    return strcmp(((const slot_ref *)a)->name, ((const slot_ref *)b)->name);
}

/* The parameters Adam updates, in name order (the flat layout). */
static slot_ref *adam_slots(trainer *t, int *n_out, int64_t *total) {
    mt_params *p = mt_model_params(t->model);
    int n = mt_params_count(p), k = 0;
    slot_ref *r = mt_xcalloc((size_t)(n > 0 ? n : 1), sizeof *r);
    *total = 0;
    for (int i = 0; i < n; i++) {
        if (mt_adam_moment(t->adam, 0, i) == NULL) continue;
        r[k].name = mt_params_name(p, i);
        r[k].i = i;
        r[k].numel = mt_tensor_numel(mt_params_at(p, i));
        *total += r[k].numel;
        k++;
    }
    qsort(r, (size_t)k, sizeof *r, cmp_slot);
    *n_out = k;
    return r;
}

/* One flat item: which 0 m, 1 v, 2 live weights, 3 smoothed weights. */
static mt_status add_flat(trainer *t, mt_model_file *f, const char *name, int which,
                          const slot_ref *r, int n, int64_t total) {
    mt_tensor flat;
    mt_status rc = mt_tensor_init(NULL, MT_F32, mt_shape1(total), &flat);
    if (rc != MT_OK) return rc;
    float *dst = flat.data;
    mt_params *p = mt_model_params(t->model);
    for (int k = 0; k < n && rc == MT_OK; k++) {
        const mt_tensor *src = which < 2    ? mt_adam_moment(t->adam, which, r[k].i)
                               : which == 2 ? mt_params_at(p, r[k].i)
                                            : mt_adam_smoothed(t->adam, r[k].i);
        MT_ASSERT(src != NULL);
        rc = mt_tensor_get(src, dst, (size_t)r[k].numel * sizeof(float));
        dst += r[k].numel;
    }
    if (rc == MT_OK) rc = mt_model_file_adopt(f, name, &flat, NULL);
    mt_tensor_free(&flat);
    return rc;
}

/* The optimizer file's item with the update it was written at: int64 [1]. */
#define UPDATE_ITEM "mtpe_update"

static mt_status save_optimizer(trainer *t, const char *path) {
    int n;
    int64_t total;
    slot_ref *r = adam_slots(t, &n, &total);
    mt_model_file *f = mt_model_file_new();
    mt_status rc = f ? MT_OK : mt_seterr(MT_ERR_NOMEM, "out of memory saving %s", path);
    if (rc == MT_OK) rc = add_flat(t, f, "adam_mt", 0, r, n, total);
    if (rc == MT_OK) rc = add_flat(t, f, "adam_vt", 1, r, n, total);
    if (rc == MT_OK) {
        double st = (double)mt_adam_steps(t->adam);
        double beta1 = app_opts_count(t->o, "optimizer-params") > 0
                           ? app_opts_float_item(t->o, "optimizer-params", 0)
                           : 0.9;
        double beta2 = app_opts_count(t->o, "optimizer-params") > 1
                           ? app_opts_float_item(t->o, "optimizer-params", 1)
                           : 0.999;
        double denoms[2] = {1.0 - pow(beta1, st), 1.0 - pow(beta2, st)};
        rc = mt_model_file_add_raw(f, "adam_denoms", MT_MARIAN_FLOAT64, mt_shape1(2), denoms,
                                   sizeof denoms);
    }
    if (rc == MT_OK) rc = add_flat(t, f, "master_parameters", 2, r, n, total);
    if (rc == MT_OK && t->smoothing) rc = add_flat(t, f, "exp_smoothing", 3, r, n, total);
    if (rc == MT_OK) {
        int64_t update = t->st.batches; /* checked against M.progress.yml at resume */
        rc = mt_model_file_add_raw(f, UPDATE_ITEM, MT_MARIAN_INT64, mt_shape1(1), &update,
                                   sizeof update);
    }
    if (rc == MT_OK) rc = mt_model_file_write(path, f);
    mt_model_file_free(f);
    mt_free(r);
    return rc;
}

/* Copies a flat item back into its slots; false when it does not fit. */
static bool restore_flat(trainer *t, const mt_model_file *f, const char *name, int which,
                         const slot_ref *r, int n, int64_t total) {
    const mt_tensor *src = mt_model_file_find(f, name);
    if (src == NULL || src->dtype != MT_F32 || mt_tensor_numel(src) != total) return false;
    const float *s = src->data;
    mt_params *p = mt_model_params(t->model);
    for (int k = 0; k < n; k++) {
        mt_tensor *dst = which < 2    ? mt_adam_moment(t->adam, which, r[k].i)
                         : which == 2 ? mt_params_at(p, r[k].i)
                                      : mt_adam_smoothed(t->adam, r[k].i);
        if (dst == NULL || mt_tensor_set(dst, s, (size_t)r[k].numel * sizeof(float)) != MT_OK)
            return false;
        s += r[k].numel;
    }
    return true;
}

/* The update an optimizer file was written at (-1: an older file without
** it). */
static int64_t optimizer_update(const mt_model_file *f) {
    for (int i = 0; i < f->n; i++) {
        if (strcmp(f->names[i], UPDATE_ITEM)) continue;
        if (!f->items[i].raw || f->items[i].marian_type != MT_MARIAN_INT64 ||
            f->items[i].raw_bytes != sizeof(int64_t))
            return -2;
        int64_t v;
        memcpy(&v, f->tensors[i].data, sizeof v);
        return v >= 0 ? v : -2;
    }
    return -1;
}

/* A checkpoint is renamed into place optimizer first, progress last: a run
** stopped between the renames leaves an optimizer file from a later update
** than the progress file (and a model from either).  Continuing from it
** would silently give another cost curve. */
static mt_status check_optimizer_update(const trainer *t, const mt_model_file *f,
                                        const char *path) {
    int64_t at = optimizer_update(f), progress = t->st.batches;
    if (at == -1) return MT_OK; /* written before mtpe recorded it */
    if (at == -2)
        return mt_seterr(MT_ERR_FORMAT, "%s: item %s is not one int64 update count", path,
                         UPDATE_ITEM);
    if (at == progress) return MT_OK;
    return mt_seterr(MT_ERR_FORMAT,
                     "checkpoint %s is mixed: %s.progress.yml at update %lld, %s at update "
                     "%lld (a run stopped while saving?): restore a consistent checkpoint (the "
                     "model from a model.iterN.npz) or delete %s to restart the optimizer's "
                     "state",
                     t->path, t->path, (long long)progress, path, (long long)at, path);
}

static mt_status load_optimizer(trainer *t, const char *path) {
    mt_model_file *f = NULL;
    mt_status rc = mt_model_file_read(path, &f);
    if (rc != MT_OK) return rc;
    rc = check_optimizer_update(t, f, path);
    if (rc != MT_OK) {
        mt_model_file_free(f);
        return rc;
    }
    int n;
    int64_t total;
    slot_ref *r = adam_slots(t, &n, &total);
    bool ok = restore_flat(t, f, "adam_mt", 0, r, n, total) &&
              restore_flat(t, f, "adam_vt", 1, r, n, total) &&
              restore_flat(t, f, "master_parameters", 2, r, n, total);
    if (ok && t->smoothing && mt_model_file_find(f, "exp_smoothing") != NULL)
        ok = restore_flat(t, f, "exp_smoothing", 3, r, n, total);
    mt_params_touch(mt_model_params(t->model));
    mt_free(r);
    mt_model_file_free(f);
    if (!ok) {
        return mt_seterr(MT_ERR_FORMAT,
                         "%s does not match the model (%lld trainable values expected)", path,
                         (long long)total);
    }
    return MT_OK;
}

/* ------------------------------------------------------------- speed */

/* Measures one core's fp32 peak (CPU device only); once, before the first
** update of a run that trains. */
static void speed_setup(trainer *t) {
    t->peak_core = 0;
    t->peak_cores = 0;
    if (t->dev != mt_device_cpu()) return;
    int64_t threads = app_opts_int(t->o, "cpu-threads");
    if (threads <= 0) threads = sysconf(_SC_NPROCESSORS_ONLN);
    t->peak_cores = (threads > 0 ? (int)threads : 1) * t->nproc; /* MPI: all processes' */
    t->peak_core = mt_cpu_fp32_peak_gflops(0.2);
}

static void speed_line(const trainer *t, double seconds, int64_t words, double flops,
                       int64_t updates, double ar, double wait) {
    if (seconds <= 0) seconds = 1e-9;
    double gflops = flops / seconds * 1e-9;
    char tail[160];
    if (t->peak_cores > 0 && t->peak_core > 0) {
        snprintf(tail, sizeof tail,
                 " = %.1f%% of the fp32 peak of %d core%s (%.1f GFLOP/s per core measured)",
                 100.0 * gflops / (t->peak_core * t->peak_cores), t->peak_cores,
                 t->peak_cores == 1 ? "" : "s", t->peak_core);
    } else if (t->peak_cores > 0) {
        snprintf(tail, sizeof tail, " (no fp32 peak: the probe needs AVX-512)");
    } else {
        snprintf(tail, sizeof tail, " (on %s)", mt_device_name(t->dev));
    }
    mt_log(MT_LOG_INFO, "[training] speed: %.2f target words/s, %.1f GFLOP/s in matrix products%s",
           (double)words / seconds, gflops, tail);
    if (t->nproc > 1 && updates > 0)
        mt_log(MT_LOG_INFO,
               "[training] %d MPI processes: gradient all-reduce (%s, %lld floats) %.2f ms per "
               "update = %.1f%% of the time, %.2f ms waiting for the slowest process",
               t->nproc, app_dist_allreduce_mode(),
               (long long)mt_params_numel(mt_model_params(t->model)), 1e3 * ar / (double)updates,
               100.0 * ar / seconds, 1e3 * wait / (double)updates);
}

/* Ends the current period with its speed line (if it had updates). */
static void speed_period_end(trainer *t) {
    double now = app_now();
    if (t->speed_updates > 0) {
        speed_line(t, now - t->speed_start - t->speed_excluded, t->speed_words, t->speed_flops,
                   t->speed_updates, t->speed_ar, t->speed_wait);
    }
    t->speed_start = now;
    t->speed_excluded = t->speed_flops = t->speed_ar = t->speed_wait = 0;
    t->speed_words = t->speed_updates = 0;
}

static void speed_count(trainer *t, int64_t trg_words, double flops) {
    t->speed_flops += flops;
    t->run_flops += flops;
    t->speed_words += trg_words;
    t->run_words += trg_words;
    t->speed_updates++;
    t->run_updates++;
}

static void speed_exclude(trainer *t, double since) {
    double d = app_now() - since;
    t->speed_excluded += d;
    t->run_excluded += d;
}

/* ------------------------------------------------------- checkpoints */

/* The temporary name a file is staged under before the final rename. */
static char *staged(const char *path, bool model_file) {
    if (!model_file) return cat2(path, ".next");
    return cat2(path, ends_with(path, ".bin") ? ".next.bin" : ".next.npz");
}

/* The files of a checkpoint of model m in the order they are renamed into
** place (the progress file last) and their staged names. */
enum { CK_OPT, CK_MODEL, CK_YML, CK_DEC, CK_PROG, CK_FILES };
typedef struct ckpt_files {
    char *final[CK_FILES];
    char *stage[CK_FILES];
} ckpt_files;

static void ckpt_files_init(ckpt_files *c, const char *m) {
    c->final[CK_OPT] = cat2(m, ".optimizer.npz");
    c->final[CK_MODEL] = cat2(m, "");
    c->final[CK_YML] = cat2(m, ".yml");
    c->final[CK_DEC] = cat2(m, ".decoder.yml");
    c->final[CK_PROG] = cat2(m, ".progress.yml");
    for (int i = 0; i < CK_FILES; i++)
        c->stage[i] = staged(c->final[i], i == CK_OPT || i == CK_MODEL);
}

static void ckpt_files_free(ckpt_files *c) {
    for (int i = 0; i < CK_FILES; i++) {
        mt_free(c->final[i]);
        mt_free(c->stage[i]);
    }
}

static mt_status save_model_smoothed(trainer *t, const char *path) {
    if (t->smoothing) mt_adam_swap_smoothed(t->adam);
    mt_status rc = mt_model_save(t->model, path);
    if (t->smoothing) mt_adam_swap_smoothed(t->adam);
    return rc;
}

static mt_status write_checkpoint(trainer *t, bool final) {
    const char *m = t->path;
    ckpt_files c;
    ckpt_files_init(&c, m);
    char **stage = c.stage;
    const char *skip[] = {"config", NULL};
    char *yml = app_opts_to_yaml(t->o, skip);
    char *dec = decoder_yml(t, m);
    char *prog = progress_yml(t);
    mt_status rc = (yml && dec && prog) ? MT_OK : mt_seterr(MT_ERR_NOMEM, "out of memory saving");
    mt_log(MT_LOG_INFO, "Saving model weights and runtime parameters to %s", m);
    if (rc == MT_OK) rc = save_optimizer(t, stage[0]);
    if (rc == MT_OK) rc = save_model_smoothed(t, stage[1]);
    if (rc == MT_OK) rc = write_synced(stage[2], yml);
    if (rc == MT_OK) rc = write_synced(stage[3], dec);
    if (rc == MT_OK) rc = write_synced(stage[4], prog);
    for (int i = 0; i < CK_FILES && rc == MT_OK; i++)
        rc = rename_into(stage[i], c.final[i]);
    if (rc == MT_OK) sync_dir_of(m);
    for (int i = 0; i < CK_FILES && rc != MT_OK; i++)
        remove(stage[i]);
    if (rc == MT_OK && !final && !app_opts_flag(t->o, "overwrite")) {
        /* Marian: model.iter<N>.npz beside model.npz */
        size_t len = strlen(m);
        bool npz = ends_with(m, ".npz") || ends_with(m, ".bin");
        char *iter = mt_xmalloc(len + 48);
        snprintf(iter, len + 48, "%.*s.iter%lld%s", (int)(npz ? len - 4 : len), m,
                 (long long)t->st.batches, npz ? m + len - 4 : ".npz");
        rc = save_model_smoothed(t, iter);
        mt_free(iter);
    }
    if (rc == MT_OK)
        mt_log(MT_LOG_INFO, "[training] Saving training checkpoint to %s and %s", m,
               c.final[CK_OPT]);
    mt_free(yml);
    free(dec);
    free(prog);
    ckpt_files_free(&c);
    return rc;
}

/* A run stopped between the renames of write_checkpoint leaves the staged
** files not yet renamed, each complete and fsynced (renaming starts after all
** are written), the progress file's among them (renamed last).  When
** M.progress.yml.next is complete and the optimizer file in place is from
** its update, the renames are completed, in write_checkpoint's order, so the
** checkpoint is that update's.  Otherwise the staged files are the leftovers
** of a save that never reached its renames (the next save replaces them).
** Runs before M.yml is read.  *done: the update completed, else -1. */
static mt_status complete_checkpoint(const char *m, int64_t *done) {
    *done = -1;
    ckpt_files c;
    ckpt_files_init(&c, m);
    char **stage = c.stage;
    const char *opt_path = c.final[CK_OPT];
    mt_status rc = MT_OK;
    char *text = NULL;
    mt_yaml *y = NULL;
    mt_model_file *f = NULL;
    if (!file_exists(stage[CK_PROG]) || !file_exists(opt_path)) goto done;
    const char *end = NULL, *b = NULL;
    if (read_text(stage[CK_PROG], &text) == MT_OK && mt_yaml_parse(text, &y) == MT_OK) {
        end = mt_yaml_get(y, "complete");
        b = mt_yaml_get(y, "batches");
    }
    mt_clearerr();
    if (!end || strcmp(end, "true") || !b) goto done;
    int64_t update = strtoll(b, NULL, 10);
    if (mt_model_file_read(opt_path, &f) != MT_OK) {
        mt_clearerr(); /* resuming reports it */
        goto done;
    }
    if (optimizer_update(f) != update) goto done;
    for (int i = 0; i < CK_FILES && rc == MT_OK; i++)
        if (file_exists(stage[i])) rc = rename_into(stage[i], c.final[i]);
    if (rc == MT_OK) {
        sync_dir_of(m);
        *done = update;
    }
done:
    mt_model_file_free(f);
    mt_yaml_free(y);
    mt_free(text);
    ckpt_files_free(&c);
    return rc;
}

/* A checkpoint; its time does not count as training time in speed lines. */
static mt_status save_checkpoint(trainer *t, bool final) {
    double t0 = app_now();
    mt_status rc = t->rank == 0 ? write_checkpoint(t, final) : MT_OK; /* MPI: rank 0 writes */
    speed_exclude(t, t0);
    return rc;
}

static mt_status save_best(trainer *t, int k) {
    char suffix[64];
    snprintf(suffix, sizeof suffix, ".best-%s.npz", t->metric_name[k]);
    char *path = cat2(t->path, suffix);
    char *dpath = cat2(path, ".decoder.yml");
    char *dstage = staged(dpath, false);
    char *dec = decoder_yml(t, path);
    mt_status rc = dec ? save_model_smoothed(t, path) : mt_seterr(MT_ERR_NOMEM, "out of memory");
    if (rc == MT_OK) rc = write_synced(dstage, dec);
    if (rc == MT_OK) rc = rename_into(dstage, dpath);
    free(dec);
    mt_free(dstage);
    mt_free(dpath);
    mt_free(path);
    return rc;
}

/* ------------------------------------------------------------ display */

static void progress_bar(trainer *t, int32_t batch_size) {
    if (!t->bar || log_quiet || t->rank != 0) return;
    int64_t n = mt_corpus_size(t->train);
    double frac = n > 0 ? (double)t->st.samples_epoch / (double)n : 0;
    if (frac > 1) frac = 1;
    char bar[41];
    int fill = (int)(frac * 40);
    for (int i = 0; i < 40; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[40] = '\0';
    fprintf(stderr, "\r[%s] %5.1f%% Ep. %lld Up. %lld (%d sentences)\033[K", bar, 100 * frac,
            (long long)t->st.epochs, (long long)t->st.batches, (int)batch_size);
    fflush(stderr);
    bar_shown = true;
}

static void display(trainer *t, int64_t batch_labels) {
    train_state *s = &t->st;
    char a[32], b[32], c[32], sen[32];
    char cost[160];
    double elapsed = app_now() - t->timer;
    if (elapsed <= 0) elapsed = 1e-9;
    if (t->cost_type == COST_MEAN_WORDS) {
        snprintf(cost, sizeof cost, "Cost %.8f", s->cost_sum / s->cost_count);
    } else if (t->cost_type == COST_SUM && app_opts_flag(t->o, "disp-label-counts")) {
        snprintf(cost, sizeof cost, "Cost %.8f * %s @ %s after %s", s->cost_sum / s->cost_count,
                 commas((int64_t)s->cost_count, a, 32), commas(batch_labels, b, 32),
                 commas(s->labels_total, c, 32));
    } else if (t->cost_type == COST_SUM) {
        snprintf(cost, sizeof cost, "Cost %.8f", s->cost_sum / (double)s->updates_disp);
    } else {
        snprintf(cost, sizeof cost, "Cost %.8f", s->cost_sum / (double)s->samples_disp);
    }
    char lr[48] = "";
    if (app_opts_flag(t->o, "lr-report"))
        snprintf(lr, sizeof lr, " : L.r. %.4e", (double)mt_adam_lr(t->adam));
    mt_log(MT_LOG_INFO,
           "Ep. %lld : Up. %lld : Sen. %s : %s : Time %.2fs : %.2f words/s : "
           "gNorm %.4f%s",
           (long long)s->epochs, (long long)s->batches, commas(s->samples_epoch, sen, 32), cost,
           elapsed, (double)s->words_disp / elapsed, (double)s->gnorm_avg, lr);
    t->timer = app_now();
    s->cost_sum = s->cost_count = 0;
    s->updates_disp = s->samples_disp = s->words_disp = 0;
}

/* Marian's TrainingState::enteredNewPeriodOf for updates and labels. */
static bool due(app_freq f, const train_state *s, int64_t labels_before) {
    if (f.n <= 0) return false;
    if (f.unit == 'u') return s->batches % f.n == 0;
    if (f.unit == 't') return labels_before / f.n != s->labels_total / f.n;
    return false; /* epochs: at the end of the epoch */
}

static bool due_epoch(app_freq f, int64_t finished_epoch) {
    return f.unit == 'e' && f.n > 0 && finished_epoch % f.n == 0;
}

static bool keep_going(const trainer *t) {
    const train_state *s = &t->st;
    if (t->nproc > 1 ? t->stop_agreed : stop_signal != 0) return false;
    if (t->after_epochs > 0 && s->epochs > t->after_epochs) return false;
    if (t->after_batches > 0 && s->batches >= t->after_batches) return false;
    for (int i = 0; i < t->n_after; i++) {
        app_freq f = t->after[i];
        if (f.n <= 0) continue;
        if (f.unit == 'e' && s->epochs > f.n) return false;
        if (f.unit == 'u' && s->batches >= f.n) return false;
        if (f.unit == 't' && s->labels_total >= f.n) return false;
    }
    if (t->early_stopping > 0 && t->n_metrics > 0 && s->stalled >= t->early_stopping) return false;
    return true;
}

/* --------------------------------------------------------- validation */

/* Greedy translation of rows [r0, r0 + n) of a batch into hyp[r * max_out
** ...], lengths in lens[r].  The step API keeps every step of a batch on
** one graph (about 16 V-sized rows of floats per sentence and step), so the
** caller decodes a few rows at a time. */
static mt_status greedy_rows(trainer *t, const mt_batch *full, int32_t r0, int32_t n,
                             int32_t max_out, int32_t *lens) {
    mt_graph *g = t->vg;
    mt_graph_clear(g);
    /* a view of the rows: same padded lengths, pointers moved */
    mt_batch b = *full;
    b.size = n;
    for (int s = 0; s < b.n_src; s++) {
        b.src_ids[s] = full->src_ids[s] + (int64_t)r0 * full->src_len[s];
        b.src_mask[s] = full->src_mask[s] + (int64_t)r0 * full->src_len[s];
    }
    if (full->trg_ids) {
        b.trg_ids = full->trg_ids + (int64_t)r0 * full->trg_len;
        b.trg_mask = full->trg_mask + (int64_t)r0 * full->trg_len;
    }
    b.sent_ids = full->sent_ids + r0;
    mt_model_encoding enc;
    mt_dec_state st, next;
    mt_dec_step out;
    int32_t V = mt_model_trg_vocab(t->model);
    int32_t eos = mt_vocab_eos_id(t->vocabs[t->n_streams - 1]);
    mt_status rc = mt_model_encode(t->model, g, &b, &enc);
    if (rc == MT_OK) rc = mt_model_start(t->model, g, &enc, &st);
    for (int32_t r = 0; r < n; r++) {
        lens[r0 + r] = -1;
        t->prev[r] = 0;
    }
    int32_t open = n;
    for (int32_t pos = 0; rc == MT_OK && pos < max_out && open > 0; pos++) {
        rc = mt_model_step(t->model, g, &enc, &st, t->prev, &next, &out);
        if (rc == MT_OK) rc = mt_graph_forward(g);
        if (rc == MT_OK) rc = mt_node_get(out.logprobs, t->vbuf, (int64_t)n * V);
        if (rc != MT_OK) break;
        for (int32_t r = 0; r < n; r++) {
            float *lp = t->vbuf + (int64_t)r * V;
            for (int k = 0; k < t->n_suppress; k++)
                if (t->suppress[k] >= 0 && t->suppress[k] < V) lp[t->suppress[k]] = -INFINITY;
            int32_t best = 0;
            for (int32_t v = 1; v < V; v++)
                if (lp[v] > lp[best]) best = v;
            t->prev[r] = best;
            if (lens[r0 + r] >= 0) continue;
            t->hyp[(int64_t)(r0 + r) * t->max_out + pos] = best;
            if (best == eos || pos + 1 == max_out) {
                lens[r0 + r] = best == eos ? pos : pos + 1;
                open--;
            }
        }
        st = next;
    }
    for (int32_t r = 0; r < n; r++)
        if (lens[r0 + r] < 0) lens[r0 + r] = 0;
    return rc;
}

static mt_status greedy(trainer *t, const mt_batch *b, int32_t *lens) {
    int32_t max_out = (int32_t)(app_opts_float(t->o, "max-length-factor") * b->src_len[0]);
    if (max_out < 1) max_out = 1;
    if (max_out > t->max_out) max_out = t->max_out;
    double per_row = 64.0 * (double)mt_model_trg_vocab(t->model) * (double)max_out;
    int32_t chunk = (int32_t)((double)(256u << 20) / per_row);
    if (chunk < 1) chunk = 1;
    mt_status rc = MT_OK;
    for (int32_t r0 = 0; rc == MT_OK && r0 < b->size; r0 += chunk)
        rc = greedy_rows(t, b, r0, b->size - r0 < chunk ? b->size - r0 : chunk, max_out, lens);
    return rc;
}

static mt_status validate_all(trainer *t, double *values) {
    const mt_vocab *tv = t->vocabs[t->n_streams - 1];
    double ce = 0, words = 0, sents = 0;
    bool need_ce = false, need_tr = false;
    for (int k = 0; k < t->n_metrics; k++) {
        if (t->metric[k] <= MET_PPL)
            need_ce = true;
        else
            need_tr = true;
    }
    mt_bleu_stats bleu;
    mt_chrf_stats chrf;
    mt_bleu_init(&bleu);
    mt_chrf_init(&chrf);
    int32_t lens[4096];
    mt_status rc = MT_OK;
    mt_batcher_begin_epoch(t->vbatches, 1);
    const mt_batch *b;
    while (rc == MT_OK && (b = mt_batcher_next(t->vbatches)) != NULL) {
        if (need_ce) {
            mt_graph_clear(t->vg);
            mt_model_loss l = mt_model_build_loss(t->model, t->vg, b, 0.0f);
            rc = l.logprob_sent ? mt_graph_forward(t->vg)
                                : (l.status != MT_OK ? l.status : mt_graph_status(t->vg));
            if (rc == MT_OK) rc = mt_node_get(l.logprob_sent, t->vbuf, b->size);
            for (int32_t r = 0; rc == MT_OK && r < b->size; r++)
                ce -= t->vbuf[r];
            words += (double)b->trg_words;
            sents += b->size;
        }
        if (need_tr && rc == MT_OK) {
            rc = greedy(t, b, lens);
            for (int32_t r = 0; rc == MT_OK && r < b->size; r++) {
                int32_t *h = t->hyp + (int64_t)r * t->max_out;
                if (t->right_left) {
                    for (int32_t i = 0, j = lens[r] - 1; i < j; i++, j--) {
                        int32_t x = h[i];
                        h[i] = h[j];
                        h[j] = x;
                    }
                }
                char *text = NULL;
                rc = mt_vocab_decode(tv, h, lens[r], 0, &text);
                /* sacreBLEU refuses empty references; Marian's scorer counts
                ** only the hypothesis: such segments are left out */
                const char *ref = mt_corpus_text(t->valid, b->sent_ids[r]);
                if (rc == MT_OK && ref[0]) rc = mt_bleu_add(&bleu, text, &ref, 1);
                if (rc == MT_OK && ref[0]) rc = mt_chrf_add(&chrf, text, &ref, 1);
                mt_free(text);
            }
        }
    }
    if (rc != MT_OK) return rc;
    for (int k = 0; k < t->n_metrics; k++) {
        switch (t->metric[k]) {
        case MET_CE: values[k] = sents > 0 ? ce / sents : 0; break;
        case MET_CE_WORDS: values[k] = words > 0 ? ce / words : 0; break;
        case MET_PPL: values[k] = words > 0 ? exp(ce / words) : 0; break;
        case MET_BLEU: values[k] = mt_bleu_compute(&bleu, false).score; break;
        default: values[k] = mt_chrf_compute(&chrf); break;
        }
    }
    return MT_OK;
}

static mt_status validate_now(trainer *t) {
    train_state *s = &t->st;
    double values[MAX_METRICS];
    if (t->smoothing) mt_adam_swap_smoothed(t->adam);
    mt_status rc = validate_all(t, values);
    if (t->smoothing) mt_adam_swap_smoothed(t->adam);
    if (rc != MT_OK) return rc;
    for (int k = 0; k < t->n_metrics; k++) {
        float v = (float)values[k];
        bool better =
            lower_is_better(t->metric[k]) ? v < (float)s->last_best[k] : v > (float)s->last_best[k];
        char vb[32], bb[32];
        if (better) {
            s->last_best[k] = v;
            s->v_stalled[k] = 0;
            mt_log(MT_LOG_INFO, "[valid] Ep. %lld : Up. %lld : %s : %s : new best",
                   (long long)s->epochs, (long long)s->batches, t->metric_name[k],
                   shortest(v, vb, 32));
            if (app_opts_flag(t->o, "keep-best")) {
                rc = save_best(t, k);
                if (rc != MT_OK) return rc;
            }
        } else {
            s->v_stalled[k]++;
            mt_log(MT_LOG_INFO,
                   "[valid] Ep. %lld : Up. %lld : %s : %s : stalled %lld times "
                   "(last best: %s)",
                   (long long)s->epochs, (long long)s->batches, t->metric_name[k],
                   shortest(v, vb, 32), (long long)s->v_stalled[k],
                   shortest((float)s->last_best[k], bb, 32));
        }
    }
    s->stalled = s->v_stalled[0];
    if (s->stalled > s->stalled_max) s->stalled_max = s->stalled;
    s->validated = true;
    return MT_OK;
}

/* Validation (when there are metrics and this update was not validated
** yet), preceded by the speed line of the training since the last one. */
static mt_status validate(trainer *t) {
    if (t->n_metrics == 0 || t->st.validated) return MT_OK;
    speed_period_end(t);
    double t0 = app_now();
    /* MPI: rank 0 validates, the others wait for its validators' state */
    mt_status rc = t->rank == 0 ? validate_now(t) : MT_OK;
    if (rc == MT_OK && t->nproc > 1) app_dist_bcast(&t->st, sizeof t->st, 0);
    speed_exclude(t, t0);
    return rc;
}

/* ----------------------------------------------------------- updates */

static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The mini-batches of one update (--optimizer-delay), summed. */
typedef struct update_sum {
    int64_t size, trg_words; /* sentences and target labels of all */
    int32_t last_size;       /* sentences of the last mini-batch (progress bar) */
    double cost, flops;
    int64_t n; /* mini-batches read so far (all processes') */
} update_sum;

/* Forward and backward of mini-batch k of the coming update: its gradients
** are added to the parameters' (Adam's step zeroes them).  Dropout is
** reseeded from (seed, update, k); k = 0 is the seed of an undelayed run.
** Under MPI k counts the mini-batches of the update over all processes. */
static mt_status accumulate(trainer *t, const mt_batch *b, update_sum *u, int64_t k) {
    mt_graph *g = t->g;
    mt_graph_clear(g);
    uint64_t seed = t->st.seed ^ mix64((uint64_t)t->st.batches + 1);
    if (k > 0) seed ^= mix64(0x9e3779b97f4a7c15ull * (uint64_t)k);
    mt_graph_set_seed(g, mix64(seed));
    mt_model_loss l = mt_model_build_loss(t->model, g, b, t->label_smoothing);
    if (l.cost == NULL) return l.status != MT_OK ? l.status : mt_graph_status(g);
    /* Marian 1.12 differentiates the sum whatever --cost-type says (its
    ** newLoss gives every training cost type a CrossEntropyLoss whose
    ** RationalLoss numerator, the sum over labels, is the graph's top node;
    ** the type only divides the displayed cost): so the gradient's norm grows
    ** with the batch and --clip-norm 5 clips nearly every update.  With
    ** --optimizer-delay the sub-batches' sums add up (Marian's sync graph
    ** group adds their RationalLosses and backpropagates without zeroing),
    ** so the update is the one of the union of the mini-batches. */
    mt_node *obj = l.cost;
    mt_status rc = mt_graph_forward(g);
    if (rc == MT_OK) rc = mt_graph_backward(g, obj);
    float cost = 0;
    if (rc == MT_OK) rc = mt_node_get_scalar(l.cost, &cost);
    if (rc != MT_OK) return rc;
    /* a statistic only: out of memory here leaves it at 0, training goes on */
    double flops = 0;
    if (mt_graph_matmul_flops(g, obj, true, &flops) != MT_OK) {
        flops = 0;
        mt_clearerr();
    }
    u->cost += cost;
    u->flops += flops;
    u->size += b->size;
    u->trg_words += b->trg_words;
    u->last_size = b->size;
    return MT_OK;
}

/* MPI: the sums over all processes of an update's gradients and counts, and
** whether any process was asked to stop.  Every process then holds the
** gradient of all nproc x delay mini-batches and takes the same Adam step. */
static mt_status sum_update(trainer *t, update_sum *u) {
    if (t->nproc < 2) return MT_OK;
    double ar = 0, wait = 0;
    mt_status rc = app_dist_sum_grads(mt_model_params(t->model), &wait, &ar);
    t->speed_ar += ar;
    t->run_ar += ar;
    t->speed_wait += wait;
    t->run_wait += wait;
    double v[5] = {u->cost, (double)u->size, (double)u->trg_words, u->flops,
                   stop_signal ? 1.0 : 0.0};
    app_dist_sum_f64(v, 5);
    u->cost = v[0];
    u->size = (int64_t)v[1];
    u->trg_words = (int64_t)v[2];
    u->flops = v[3];
    if (v[4] > 0) t->stop_agreed = true;
    return rc;
}

/* One Adam step from the summed gradients. */
static mt_status optimizer_step(trainer *t) {
    mt_status rc = mt_adam_step(t->adam);
    if (rc == MT_ERR_INVALID) {
        mt_log(MT_LOG_WARN, "%s: update skipped", mt_errmsg());
        rc = MT_OK;
    }
    return rc;
}

/* After one update: state, display, validation, checkpoint. */
static mt_status after_update(trainer *t, const update_sum *u) {
    train_state *s = &t->st;
    int64_t labels_before = s->labels_total;
    s->validated = false;
    s->cost_sum += u->cost;
    s->cost_count += (double)u->trg_words;
    s->updates_disp++;
    s->samples_disp += u->size;
    s->words_disp += u->trg_words;
    s->samples_epoch += u->size;
    s->labels_total += u->trg_words;
    s->batches++;
    s->batches_epoch += u->n; /* mini-batches read: the corpus position */
    float gn = mt_adam_last_grad_norm(t->adam);
    if (isfinite(gn)) {
        int64_t range = s->batches < 100 ? s->batches : 100;
        float alpha = 2.0f / (float)(range + 1);
        s->gnorm_avg += alpha * (gn - s->gnorm_avg);
    }
    if (due(t->disp, s, labels_before) || s->batches <= t->disp_first) display(t, u->trg_words);
    mt_status rc = MT_OK;
    if (due(t->vfreq, s, labels_before) && keep_going(t)) rc = validate(t);
    if (rc == MT_OK && due(t->save, s, labels_before)) rc = save_checkpoint(t, false);
    return rc;
}

static mt_status end_epoch(trainer *t) {
    train_state *s = &t->st;
    char buf[32];
    mt_log(MT_LOG_INFO, "Seen %s samples", commas(s->samples_epoch, buf, 32));
    int64_t finished = s->epochs;
    s->epochs++;
    s->batches_epoch = 0;
    s->samples_epoch = 0;
    mt_log(MT_LOG_INFO, "Starting epoch %lld", (long long)s->epochs);
    mt_status rc = MT_OK;
    if (due_epoch(t->disp, finished) && s->updates_disp > 0) display(t, 0);
    if (due_epoch(t->vfreq, finished) && keep_going(t)) rc = validate(t);
    if (rc == MT_OK && due_epoch(t->save, finished)) rc = save_checkpoint(t, false);
    return rc;
}

static mt_status train_loop(trainer *t) {
    train_state *s = &t->st;
    mt_status rc = MT_OK;
    if (keep_going(t)) speed_setup(t);
    mt_log(MT_LOG_INFO, "Training started");
    t->timer = app_now();
    t->speed_start = t->run_start = t->timer;
    mt_batcher_begin_epoch(t->batches, s->epochs);
    if (s->batches_epoch > 0) {
        mt_log(MT_LOG_INFO, "[data] Restoring the corpus state to epoch %lld, batch %lld",
               (long long)s->epochs, (long long)s->batches);
        int64_t k = mt_batcher_skip(t->batches, s->batches_epoch);
        if (k != s->batches_epoch) {
            mt_log(MT_LOG_WARN,
                   "[data] the corpus has only %lld batches per epoch now, not %lld; "
                   "starting the next epoch",
                   (long long)k, (long long)s->batches_epoch);
        }
    }
    while (rc == MT_OK && keep_going(t)) {
        /* One update: --optimizer-delay mini-batches, fewer at the end of
        ** an epoch (the gradients gathered so far make its last update, as
        ** Marian's last, smaller batch of an epoch does), so no gradient is
        ** ever pending between updates and every checkpoint is at an
        ** update boundary. */
        /* Under MPI (nproc processes) an update is nproc x delay
        ** mini-batches: every process reads all of them (the same
        ** sequence) and computes those k with k % nproc == rank; the sums
        ** then give every process the gradient of all. */
        update_sum u = {0};
        bool epoch_end = false;
        while (rc == MT_OK && u.n < t->delay * t->nproc) {
            const mt_batch *b = mt_batcher_next(t->batches);
            if (b == NULL) {
                epoch_end = true;
                break;
            }
            for (int32_t r = 0; t->batch_log && r < b->size; r++)
                fprintf(t->batch_log, "%016llx\n", (unsigned long long)mt_batch_row_hash(b, r));
            int64_t k = u.n++;
            if (k % t->nproc == t->rank) rc = accumulate(t, b, &u, k);
        }
        if (rc == MT_OK && u.n > 0) rc = sum_update(t, &u);
        if (rc == MT_OK && u.n > 0) {
            rc = optimizer_step(t);
            if (rc == MT_OK) speed_count(t, u.trg_words, u.flops);
            if (rc == MT_OK) rc = after_update(t, &u);
            if (rc == MT_OK) progress_bar(t, u.last_size);
        }
        if (rc == MT_OK && epoch_end) {
            if (s->batches_epoch == 0 && s->samples_epoch == 0) {
                rc = mt_seterr(MT_ERR_INVALID, "the training corpus has no usable sentence");
                break;
            }
            rc = end_epoch(t);
            mt_batcher_begin_epoch(t->batches, s->epochs);
        }
    }
    if (bar_shown && !log_quiet) {
        fputs("\r\033[K", stderr);
        bar_shown = false;
    }
    if (rc != MT_OK) return rc;
    bool stopped = t->nproc > 1 ? t->stop_agreed : stop_signal != 0; /* MPI: agreed */
    mt_log(MT_LOG_INFO, stopped ? "Training interrupted (via signal)." : "Training finished");
    if (!stopped) rc = validate(t);
    if (rc == MT_OK && t->run_updates > 0) /* the whole run */
        speed_line(t, app_now() - t->run_start - t->run_excluded, t->run_words, t->run_flops,
                   t->run_updates, t->run_ar, t->run_wait);
    if (rc == MT_OK) rc = save_checkpoint(t, true);
    return rc;
}

/* -------------------------------------------------------------- setup */

static int usage_error(const char *fmt, const char *a, const char *b) {
    if (app_dist_rank() != 0) return 2; /* MPI: every rank has it, rank 0 says it */
    fprintf(stderr, "mtpe train: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n(mtpe train --help lists the options)\n");
    return 2;
}

/* Checks option values that have a fixed set of choices; 0 or exit code. */
static int check_options(trainer *t) {
    app_opts *o = t->o;
    const char *ct = app_opts_str(o, "cost-type");
    if (!strcmp(ct, "ce-sum"))
        t->cost_type = COST_SUM;
    else if (!strcmp(ct, "ce-mean-words"))
        t->cost_type = COST_MEAN_WORDS;
    else if (!strcmp(ct, "ce-mean") || !strcmp(ct, "cross-entropy"))
        t->cost_type = COST_MEAN;
    else
        return usage_error("unknown --cost-type '%s'%s (ce-sum, ce-mean-words, ce-mean)", ct, "");
    int np = app_opts_count(o, "precision");
    const char *prec = np > 0 ? app_opts_item(o, "precision", 0) : "float32";
    if (strcmp(prec, "float32") && strcmp(prec, "bfloat16"))
        return usage_error("unknown --precision '%s'%s (float32, bfloat16)", prec, "");
    if (np > 2 || (np == 2 && strcmp(app_opts_item(o, "precision", 1), "float32")))
        return usage_error("--precision: the optimizer's type (second value) can only be "
                           "float32%s%s",
                           "", "");
    t->bf16 = !strcmp(prec, "bfloat16");
    mt_batch_sort sort;
    mt_batch_shuffle shuf;
    if (!mt_batch_sort_parse(app_opts_str(o, "maxi-batch-sort"), &sort))
        return usage_error("unknown --maxi-batch-sort '%s'%s (trg, src, none)",
                           app_opts_str(o, "maxi-batch-sort"), "");
    if (!mt_batch_shuffle_parse(app_opts_str(o, "shuffle"), &shuf))
        return usage_error("unknown --shuffle '%s'%s (data, batches, none)",
                           app_opts_str(o, "shuffle"), "");
    if (strcmp(app_opts_str(o, "optimizer"), "adam"))
        return usage_error("--optimizer '%s'%s is not supported (adam)",
                           app_opts_str(o, "optimizer"), "");
    t->n_metrics = app_opts_count(o, "valid-metrics");
    if (t->n_metrics > MAX_METRICS) return usage_error("too many --valid-metrics%s%s", "", "");
    for (int k = 0; k < t->n_metrics; k++) {
        const char *name = app_opts_item(o, "valid-metrics", k);
        if (!metric_parse(name, &t->metric[k]))
            return usage_error("unknown validation metric '%s'%s (cross-entropy, ce-mean-words, "
                               "perplexity, bleu, chrf)",
                               name, "");
        snprintf(t->metric_name[k], sizeof t->metric_name[k], "%s", name);
    }
    if (app_opts_count(o, "valid-sets") == 0) t->n_metrics = 0;
    int nt = app_opts_count(o, "train-sets");
    if (nt < 2 || nt > N_STREAMS_MAX)
        return usage_error("--train-sets needs 2 to 5 files (sources..., target)%s%s", "", "");
    if (app_opts_count(o, "vocabs") != nt)
        return usage_error("--vocabs needs one vocabulary per training file%s%s", "", "");
    /* the model types mtpe trains: multi-* read two sources, the others one */
    const char *type = app_opts_str(o, "type");
    bool multi = strncmp(type, "multi-", 6) == 0 || strncmp(type, "shared-multi-", 13) == 0;
    if (multi && nt != 3)
        return usage_error("--type %s reads two sources: --train-sets SRC MT TARGET%s", type, "");
    if ((!strcmp(type, "transformer") || !strcmp(type, "s2s")) && nt != 2)
        return usage_error("--type %s reads one source: --train-sets SOURCE TARGET%s", type, "");
    int nv = app_opts_count(o, "valid-sets");
    if (nv != 0 && nv != nt)
        return usage_error("--valid-sets needs as many files as --train-sets%s%s", "", "");
    t->n_streams = nt;
    t->disp = app_opts_freq(o, "disp-freq");
    t->save = app_opts_freq(o, "save-freq");
    t->vfreq = app_opts_freq(o, "valid-freq");
    t->after_epochs = app_opts_int(o, "after-epochs");
    t->after_batches = app_opts_int(o, "after-batches");
    t->early_stopping = app_opts_int(o, "early-stopping");
    t->disp_first = app_opts_int(o, "disp-first");
    t->delay = app_opts_int(o, "optimizer-delay");
    t->label_smoothing = (float)app_opts_float(o, "label-smoothing");
    t->smoothing = app_opts_float(o, "exponential-smoothing") > 0;
    t->right_left = app_opts_flag(o, "right-left");
    /* --after: comma-separated criteria */
    char after[256];
    snprintf(after, sizeof after, "%s", app_opts_str(o, "after"));
    t->n_after = 0;
    for (char *tok = strtok(after, ","); tok != NULL; tok = strtok(NULL, ",")) {
        if (t->n_after == MAX_AFTER || !app_parse_freq(tok, &t->after[t->n_after]))
            return usage_error("bad --after criterion '%s'%s (e.g. 10e,300Ku,20Gt)", tok, "");
        t->n_after++;
    }
    if (app_opts_int(o, "mini-batch") < 1 || app_opts_int(o, "maxi-batch") < 1 ||
        app_opts_int(o, "valid-mini-batch") < 1 || app_opts_int(o, "mini-batch-words") < 0)
        return usage_error("batch sizes must be positive%s%s", "", "");
    return 0;
}

static mt_status adam_params_from_options(trainer *t, mt_adam_params *ap) {
    app_opts *o = t->o;
    *ap = mt_adam_default_params();
    ap->lr = (float)app_opts_float(o, "learn-rate");
    int np = app_opts_count(o, "optimizer-params");
    ap->beta1 = np > 0 ? (float)app_opts_float_item(o, "optimizer-params", 0) : 0.9f;
    ap->beta2 = np > 1 ? (float)app_opts_float_item(o, "optimizer-params", 1) : 0.999f;
    ap->eps = np > 2 ? (float)app_opts_float_item(o, "optimizer-params", 2) : 1e-8f;
    ap->weight_decay = np > 3 ? (float)app_opts_float_item(o, "optimizer-params", 3) : 0.0f;
    ap->clip_norm = (float)app_opts_float(o, "clip-norm");
    ap->smoothing = (float)app_opts_float(o, "exponential-smoothing");
    app_freq w = app_opts_freq(o, "lr-warmup");
    if (w.n > 0 && w.unit != 'u')
        return mt_seterr(MT_ERR_UNSUPPORTED, "--lr-warmup supports updates only (e.g. 16000)");
    ap->warmup = w.n;
    int nd = app_opts_count(o, "lr-decay-inv-sqrt");
    if (nd > 2) return mt_seterr(MT_ERR_INVALID, "--lr-decay-inv-sqrt takes one or two values");
    if (nd > 0) {
        app_freq d = app_opts_freq_item(o, "lr-decay-inv-sqrt", 0);
        if (d.n > 0 && d.unit != 'u')
            return mt_seterr(MT_ERR_UNSUPPORTED, "--lr-decay-inv-sqrt supports updates only");
        if (nd == 2) {
            app_freq st = app_opts_freq_item(o, "lr-decay-inv-sqrt", 1);
            if (st.n != d.n)
                return mt_seterr(MT_ERR_UNSUPPORTED,
                                 "--lr-decay-inv-sqrt with a start other than N is not supported");
        }
        ap->decay_inv_sqrt = d.n;
    }
    return MT_OK;
}

static mt_status load_vocabs(trainer *t) {
    app_opts *o = t->o;
    int n = t->n_streams;
    for (int i = 0; i < n; i++) {
        const char *path = app_opts_item(o, "vocabs", i);
        /* a vocabulary shared by several streams is trained on all their files */
        const char *corpora[N_STREAMS_MAX];
        int nc = 0;
        for (int j = 0; j < n; j++)
            if (!strcmp(app_opts_item(o, "vocabs", j), path))
                corpora[nc++] = app_opts_item(o, "train-sets", j);
        int32_t dim = i < app_opts_count(o, "dim-vocabs")
                          ? (int32_t)app_opts_int_item(o, "dim-vocabs", i)
                          : 0;
        mt_spm_train_params sp = mt_spm_train_default_params();
        sp.vocab_size = dim;
        sp.max_lines = app_opts_int(o, "sentencepiece-max-lines");
        sp.seed = (uint32_t)t->st.seed;
        const char *spo = app_opts_str(o, "sentencepiece-options");
        sp.options = spo[0] ? spo : NULL;
        int64_t threads = app_opts_int(o, "cpu-threads");
        sp.num_threads = threads > 0 ? (int)threads : 0;
        sp.quiet = true;
        if (ends_with(path, ".spm") && !file_exists(path)) {
            char list[512] = "";
            for (int j = 0; j < nc; j++) {
                size_t k = strlen(list);
                snprintf(list + k, sizeof list - k, "%s%s", j ? ", " : "", corpora[j]);
            }
            mt_log(MT_LOG_INFO, "[SentencePiece] Training SentencePiece vocabulary %s from %s",
                   path, list);
        } else {
            mt_log(MT_LOG_INFO, "[data] Loading vocabulary from file %s", path);
        }
        mt_status rc = mt_vocab_load_or_train(path, corpora, nc, dim, &sp, &t->vocabs[i]);
        if (rc != MT_OK) return rc;
        char buf[32];
        mt_log(MT_LOG_INFO, "[data] Setting vocabulary size for input %d to %s", i,
               commas(mt_vocab_dim(t->vocabs[i]), buf, 32));
    }
    /* record the sizes, as Marian does in model.npz.yml */
    char vals[N_STREAMS_MAX][24];
    const char *pv[N_STREAMS_MAX];
    for (int i = 0; i < n; i++) {
        snprintf(vals[i], sizeof vals[i], "%d", (int)mt_vocab_dim(t->vocabs[i]));
        pv[i] = vals[i];
    }
    return app_opts_set(o, "dim-vocabs", n, pv, app_opts_source(o, "dim-vocabs"));
}

static mt_status load_corpora(trainer *t) {
    app_opts *o = t->o;
    const char *paths[N_STREAMS_MAX];
    const mt_vocab *vs[N_STREAMS_MAX];
    for (int i = 0; i < t->n_streams; i++) {
        paths[i] = app_opts_item(o, "train-sets", i);
        vs[i] = t->vocabs[i];
    }
    mt_corpus_params cp = mt_corpus_default_params();
    cp.max_length = (int32_t)app_opts_int(o, "max-length");
    cp.max_length_crop = app_opts_flag(o, "max-length-crop");
    cp.right_left = t->right_left;
    mt_status rc = mt_corpus_load(paths, vs, t->n_streams, &cp, &t->train);
    if (rc != MT_OK) return rc;
    char a[32], b[32];
    mt_log(MT_LOG_INFO, "[data] Done reading %s sentences (%s skipped)",
           commas(mt_corpus_size(t->train), a, 32),
           commas(mt_corpus_bad_utf8(t->train) + mt_corpus_too_long(t->train), b, 32));
    mt_batcher_params bp = mt_batcher_default_params();
    bp.mini_batch = (int32_t)app_opts_int(o, "mini-batch");
    bp.mini_batch_words = app_opts_int(o, "mini-batch-words");
    bp.maxi_batch = (int32_t)app_opts_int(o, "maxi-batch");
    mt_batch_sort_parse(app_opts_str(o, "maxi-batch-sort"), &bp.sort);
    mt_batch_shuffle_parse(app_opts_str(o, "shuffle"), &bp.shuffle);
    bp.seed = t->st.seed;
    rc = mt_batcher_init(t->train, &bp, &t->batches);
    if (rc != MT_OK || app_opts_count(o, "valid-sets") == 0) return rc;
    for (int i = 0; i < t->n_streams; i++)
        paths[i] = app_opts_item(o, "valid-sets", i);
    cp.max_length = (int32_t)app_opts_int(o, "valid-max-length");
    cp.max_length_crop = true;
    cp.keep_text = true;
    rc = mt_corpus_load(paths, vs, t->n_streams, &cp, &t->valid);
    if (rc != MT_OK) return rc;
    bp.mini_batch = (int32_t)app_opts_int(o, "valid-mini-batch");
    bp.mini_batch_words = 0;
    bp.sort = MT_SORT_SRC;
    bp.shuffle = MT_SHUFFLE_NONE;
    return mt_batcher_init(t->valid, &bp, &t->vbatches);
}

/* --pretrained-model FILE: the item of FILE that initialises parameter
** `name` of the new model, or NULL (the parameter stays fresh).  As Marian:
** the item of the same name.  mtpe's extension for multi-source models made
** from a single-source one (APE from an MT model): when FILE has no item of
** that name, encoder1_X and encoder2_X read encoder_X (only when the new
** model has no encoder_* of its own, i.e. a multi-transformer), and
** decoder_lN_context_enc2_X reads decoder_lN_context_X (the second context
** attention starts as a copy of the first).  *from gets the item's name. */
static const mt_tensor *pretrained_item(const mt_model_file *f, const mt_params *p,
                                        const char *name, char *from, size_t n) {
    snprintf(from, n, "%s", name);
    const mt_tensor *src = mt_model_file_find(f, name);
    if (src) return src;
    const char *ctx2 = strstr(name, "_context_enc2_");
    if (!strncmp(name, "decoder_l", 9) && ctx2) {
        /* decoder_lN_context_enc2_X -> decoder_lN_context_X */
        snprintf(from, n, "%.*s_context_%s", (int)(ctx2 - name), name,
                 ctx2 + strlen("_context_enc2_"));
        return mt_model_file_find(f, from);
    }
    if ((!strncmp(name, "encoder1_", 9) || !strncmp(name, "encoder2_", 9))) {
        bool own_encoder = false;
        for (int i = 0; i < mt_params_count(p) && !own_encoder; i++)
            own_encoder = !strncmp(mt_params_name(p, i), "encoder_", 8);
        if (own_encoder) return NULL;
        snprintf(from, n, "encoder_%s", name + 9);
        return mt_model_file_find(f, from);
    }
    return NULL;
}

/* Initialises the new model's parameters from FILE (pretrained_item), one
** log line per parameter (initialised from which item, or fresh).  An item
** whose shape or type differs from the parameter's is an error, as in
** Marian. */
static mt_status init_pretrained(trainer *t, const char *path) {
    mt_model_file *f = NULL;
    mt_status rc = mt_model_file_read(path, &f);
    if (rc != MT_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", mt_errmsg());
        return mt_seterr(rc, "--pretrained-model %s: %s", path, msg);
    }
    mt_params *p = mt_model_params(t->model);
    int copied = 0, mapped = 0, n = mt_params_count(p);
    for (int i = 0; i < n && rc == MT_OK; i++) {
        const char *name = mt_params_name(p, i);
        char from[256];
        const mt_tensor *src = pretrained_item(f, p, name, from, sizeof from);
        mt_tensor *dst = mt_params_at(p, i);
        if (src == NULL) {
            mt_log(MT_LOG_INFO, "[training] fresh: %s", name);
            continue;
        }
        char a[64], b[64];
        if (src->dtype != MT_F32 || !mt_shape_eq(&src->shape, &dst->shape)) {
            rc = mt_seterr(MT_ERR_INVALID,
                           "--pretrained-model %s: %s is %s %s there, %s needs float32 %s", path,
                           from, mt_dtype_name(src->dtype), mt_shape_str(&src->shape, a, sizeof a),
                           name, mt_shape_str(&dst->shape, b, sizeof b));
            break;
        }
        rc = mt_tensor_set(dst, src->data, mt_tensor_bytes(dst));
        copied++;
        if (strcmp(from, name) != 0) {
            mapped++;
            mt_log(MT_LOG_INFO, "[training] initialised: %s from %s (mtpe's mapping)", name, from);
        } else {
            mt_log(MT_LOG_INFO, "[training] initialised: %s", name);
        }
    }
    mt_params_touch(p);
    mt_model_file_free(f);
    if (rc == MT_OK) {
        mt_log(MT_LOG_INFO,
               "[training] Initialised %d of %d parameters from %s (%d of them mapped from "
               "another name), %d fresh",
               copied, n, path, mapped, n - copied);
    }
    return rc;
}

static mt_status create_model(trainer *t) {
    app_opts *o = t->o;
    const char *skip[] = {"config", NULL};
    char *yml = app_opts_to_yaml(o, skip);
    if (yml == NULL) return mt_seterr(MT_ERR_NOMEM, "out of memory");
    mt_model_config c = mt_model_config_default();
    mt_status rc = mt_model_config_from_yaml(yml, &c);
    mt_free(yml);
    if (rc != MT_OK) return rc;
    c.n_vocabs = t->n_streams;
    for (int i = 0; i < t->n_streams; i++)
        c.dim_vocabs[i] = (int)mt_vocab_dim(t->vocabs[i]);
    bool reload = file_exists(t->path) && !app_opts_flag(o, "no-reload");
    if (reload) {
        mt_log(MT_LOG_INFO, "Loading model from %s", t->path);
        rc = mt_model_load(t->path, t->dev, &t->model);
        if (rc != MT_OK) return rc;
        mt_model_set_training_config(t->model, &c);
        int n_src = mt_model_n_src(t->model);
        if (n_src != t->n_streams - 1 ||
            mt_model_trg_vocab(t->model) != mt_vocab_dim(t->vocabs[t->n_streams - 1])) {
            return mt_seterr(MT_ERR_INVALID,
                             "%s does not fit the vocabularies (%d sources, target vocabulary "
                             "%d; the vocabularies give %d and %d)",
                             t->path, n_src, (int)mt_model_trg_vocab(t->model), t->n_streams - 1,
                             (int)mt_vocab_dim(t->vocabs[t->n_streams - 1]));
        }
        t->loaded = true;
    } else {
        rc = mt_model_config_check(&c);
        if (rc != MT_OK) return rc;
        rc = mt_model_create(&c, t->dev, t->st.seed, &t->model);
        if (rc != MT_OK) return rc;
        const char *pre = app_opts_str(o, "pretrained-model");
        if (pre[0]) rc = init_pretrained(t, pre);
        if (rc != MT_OK) return rc;
    }
    mt_params *p = mt_model_params(t->model);
    rc = mt_params_alloc_grads(p);
    if (rc != MT_OK) return rc;
    mt_adam_params ap;
    rc = adam_params_from_options(t, &ap);
    if (rc == MT_OK) rc = mt_adam_init(p, ap, &t->adam);
    if (rc != MT_OK) return rc;
    char buf[32];
    mt_log(MT_LOG_INFO, "[training] Model of type %s with %s parameters", c.type,
           commas(mt_params_numel(p), buf, 32));
    return MT_OK;
}

static mt_status restore_state(trainer *t) {
    if (!t->loaded) return MT_OK;
    char *prog = cat2(t->path, ".progress.yml");
    char *opt = cat2(t->path, ".optimizer.npz");
    mt_status rc = MT_OK;
    if (file_exists(prog)) {
        uint64_t seed = t->st.seed;
        rc = load_progress(t, prog);
        if (rc == MT_OK && app_opts_int(t->o, "seed") != 0) t->st.seed = seed;
        if (rc == MT_OK && app_opts_flag(t->o, "no-restore-corpus")) {
            t->st.batches_epoch = t->st.samples_epoch = 0;
            t->st.cost_sum = t->st.cost_count = 0;
            t->st.updates_disp = t->st.samples_disp = t->st.words_disp = 0;
        }
    } else {
        mt_log(MT_LOG_WARN, "No checkpoint found: %s is missing; the schedule starts anew", prog);
    }
    if (rc == MT_OK && file_exists(opt) && !t->optimizer_ours) {
        /* Marian concatenates in its own parameter order, which mtpe does not know */
        mt_log(MT_LOG_WARN, "%s was not written by mtpe; Adam starts anew", opt);
    } else if (rc == MT_OK && file_exists(opt)) {
        mt_log(MT_LOG_INFO, "Loading Adam parameters from %s", opt);
        rc = load_optimizer(t, opt);
    } else if (rc == MT_OK) {
        mt_log(MT_LOG_WARN, "%s is missing; Adam starts anew", opt);
    }
    if (rc == MT_OK) mt_adam_set_steps(t->adam, t->st.batches);
    mt_free(prog);
    mt_free(opt);
    return rc;
}

static mt_status setup_validation(trainer *t) {
    for (int k = 0; k < t->n_metrics; k++) {
        t->st.last_best[k] = lower_is_better(t->metric[k]) ? INFINITY : -INFINITY;
        t->st.v_stalled[k] = 0;
    }
    if (t->n_metrics == 0) return MT_OK;
    int64_t vmb = app_opts_int(t->o, "valid-mini-batch");
    if (vmb > 4096) return mt_seterr(MT_ERR_INVALID, "--valid-mini-batch is at most 4096");
    int32_t V = mt_model_trg_vocab(t->model);
    t->max_out = (int32_t)(app_opts_float(t->o, "max-length-factor") *
                           (double)(mt_corpus_max_len(t->valid, 0) + 1));
    if (t->max_out < 1) t->max_out = 1;
    t->vbuf = mt_try_malloc((size_t)vmb * (size_t)(V > 1 ? V : 1) * sizeof(float));
    t->hyp = mt_try_malloc((size_t)vmb * (size_t)t->max_out * sizeof(int32_t));
    t->prev = mt_try_malloc((size_t)vmb * sizeof(int32_t));
    const mt_vocab *tv = t->vocabs[t->n_streams - 1];
    t->n_suppress = mt_vocab_suppressed_ids(tv, true, true, NULL, 0);
    t->suppress = mt_try_malloc((size_t)(t->n_suppress + 1) * sizeof(int32_t));
    if (!t->vbuf || !t->hyp || !t->prev || !t->suppress)
        return mt_seterr(MT_ERR_NOMEM, "out of memory for validation buffers");
    mt_vocab_suppressed_ids(tv, true, true, t->suppress, t->n_suppress);
    mt_graph_params gp = mt_graph_default_params();
    gp.training = false;
    return mt_graph_init(t->dev, gp, &t->vg);
}

static void trainer_free(trainer *t) {
    mt_graph_free(t->g);
    mt_graph_free(t->vg);
    mt_adam_free(t->adam);
    mt_model_free(t->model);
    mt_batcher_free(t->batches);
    mt_batcher_free(t->vbatches);
    mt_corpus_free(t->train);
    mt_corpus_free(t->valid);
    for (int i = 0; i < N_STREAMS_MAX; i++)
        mt_vocab_free(t->vocabs[i]);
    mt_free(t->vbuf);
    mt_free(t->hyp);
    mt_free(t->prev);
    mt_free(t->suppress);
}

static mt_status pick_device(trainer *t) {
    int64_t threads = app_opts_int(t->o, "cpu-threads");
    t->dev = NULL;
    if (threads == 0) {
        int ordinal =
            app_opts_count(t->o, "devices") ? (int)app_opts_int_item(t->o, "devices", 0) : 0;
        mt_device *d = NULL;
        if (mt_device_cuda(ordinal, &d) == MT_OK) {
            t->dev = d;
            mt_log(MT_LOG_INFO, "[training] Using %s", mt_device_name(d));
            return MT_OK;
        }
        mt_clearerr();
    } else if (t->bf16) { /* the cores to the device's own threads (mt.h) */
        mt_cpu_set_blas_threads(1);
        mt_cpu_set_own_threads((int)threads);
    } else {
        mt_cpu_set_blas_threads((int)threads);
    }
    t->dev = mt_device_cpu();
    mt_log(MT_LOG_INFO, "[training] Using the CPU (%s)%s", mt_cpu_isa(),
           threads > 0 ? "" : ", BLAS threads as OpenBLAS chooses");
    return MT_OK;
}

/* MPI: whether setup succeeded everywhere (collective).  A rank that
** failed keeps its error (the lowest one reports it); the others fail
** quietly. */
static mt_status agree(trainer *t, mt_status rc) {
    if (t->nproc < 2) return rc;
    int first = app_dist_first_failed(rc != MT_OK);
    if (first < 0) return rc;
    t->agreed = true;
    if (first != t->rank) {
        t->failed_elsewhere = true;
        return rc != MT_OK ? rc : mt_seterr(MT_ERR_INVALID, "rank %d failed", first);
    }
    return rc;
}

static mt_status run(trainer *t) {
    t->path = app_opts_str(t->o, "model");
    int64_t seed = app_opts_int(t->o, "seed");
    t->st.seed = seed != 0 ? (uint64_t)seed : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    t->st.epochs = 1;
    mt_status rc = pick_device(t);
    if (rc == MT_OK && seed == 0 && file_exists(t->path) && !app_opts_flag(t->o, "no-reload")) {
        /* keep the seed of the run being continued */
        char *prog = cat2(t->path, ".progress.yml");
        char *text = NULL;
        mt_yaml *y = NULL;
        if (read_text(prog, &text) == MT_OK && mt_yaml_parse(text, &y) == MT_OK &&
            mt_yaml_get(y, "seed"))
            t->st.seed = strtoull(mt_yaml_get(y, "seed"), NULL, 10);
        mt_clearerr();
        mt_yaml_free(y);
        mt_free(text);
        mt_free(prog);
    }
    /* MPI: rank 0's seed (--seed 0 picks one per process) */
    if (t->nproc > 1) app_dist_bcast(&t->st.seed, sizeof t->st.seed, 0);
    mt_log(MT_LOG_INFO, "Seed %llu", (unsigned long long)t->st.seed);
    if (t->nproc > 1) {
        mt_log(MT_LOG_INFO,
               "[training] %d MPI processes: an update is %d x %lld mini-batches, the gradients "
               "summed by all-reduce (%s)",
               t->nproc, t->nproc, (long long)t->delay, app_dist_allreduce_mode());
    }
    /* MPI: a missing .spm is trained by rank 0 alone, the others then read it */
    if (rc == MT_OK && t->rank == 0) rc = load_vocabs(t);
    rc = agree(t, rc);
    if (rc == MT_OK && t->rank != 0) rc = load_vocabs(t);
    if (rc == MT_OK) rc = load_corpora(t);
    if (rc == MT_OK) rc = create_model(t);
    if (rc == MT_OK) rc = setup_validation(t);
    if (rc == MT_OK) rc = restore_state(t);
    if (rc == MT_OK) {
        mt_graph_params gp = mt_graph_default_params();
        gp.training = true;
        gp.seed = t->st.seed;
        gp.bf16_products = t->bf16;
        if (t->bf16)
            mt_log(MT_LOG_INFO, "[training] bfloat16 matrix products, float32 weights, gradients "
                                "and optimizer");
        rc = mt_graph_init(t->dev, gp, &t->g);
    }
    const char *hashes = getenv("MTPE_TRAIN_BATCH_HASHES");
    if (rc == MT_OK && hashes && hashes[0] && t->rank == 0) { /* MPI: every batch read */
        t->batch_log = fopen(hashes, "a");
        if (t->batch_log == NULL)
            rc = mt_seterr(MT_ERR_IO, "MTPE_TRAIN_BATCH_HASHES: cannot open %s: %s", hashes,
                           strerror(errno));
    }
    rc = agree(t, rc); /* MPI: every rank ready, or all end here */
    if (rc == MT_OK) rc = train_loop(t);
    if (t->batch_log && fclose(t->batch_log) != 0 && rc == MT_OK)
        rc = mt_seterr(MT_ERR_IO, "MTPE_TRAIN_BATCH_HASHES: cannot write %s", hashes);
    t->batch_log = NULL;
    return rc;
}

const app_cmd app_train_cmd = {
    .name = "train",
    .usage = "-m MODEL -t SRC TRG -v SRC.spm TRG.spm [options]",
    .about = "Trains an NMT model as Marian does: same options, config files (-c), model\n"
             "files and checkpoints.  Re-running with the same --model continues training.\n"
             "mpirun -np N mtpe train ...: data-parallel on N processes; with --optimizer-delay\n"
             "D an update is N x D mini-batches, as one process with --optimizer-delay N x D.\n",
    .opts = train_opts,
    .n_opts = n_train_opts,
};

int app_train_main(int argc, char **argv) {
    app_opts *o = NULL;
    mt_status rc;
    int ret;
    if (!app_opts_parse_cmd(&app_train_cmd, argc, argv, &o, &ret)) return ret;
    /* under mpirun: one process of a data-parallel job (app/dist.h) */
    rc = app_dist_init("train");
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe train: %s\n", mt_errmsg());
        app_opts_free(o);
        return 1;
    }
    int rank = app_dist_rank();
    const char *model = app_opts_str(o, "model");
    int64_t completed = -1;
    if (!app_opts_flag(o, "no-reload") && rank == 0) { /* MPI: rank 0 writes files */
        rc = complete_checkpoint(model, &completed);
        if (rc != MT_OK) {
            fprintf(stderr, "mtpe train: completing the checkpoint: %s\n", mt_errmsg());
            app_opts_free(o);
            app_dist_abort(1);
        }
    }
    app_dist_barrier(); /* the others read the checkpoint once it is complete */
    /* Marian reloads <model>.yml as the config when no -c is given */
    char *model_yml = cat2(model, ".yml");
    if (app_opts_count(o, "config") == 0 && !app_opts_flag(o, "no-reload") && file_exists(model) &&
        file_exists(model_yml)) {
        rc = app_opts_merge_file(o, model_yml, true);
        if (rc != MT_OK) {
            fprintf(stderr, "mtpe train: %s\n", mt_errmsg());
            mt_free(model_yml);
            app_opts_free(o);
            return 1;
        }
    }
    mt_free(model_yml);
    trainer t;
    memset(&t, 0, sizeof t);
    t.o = o;
    t.rank = rank;
    t.nproc = app_dist_size();
    int code = check_options(&t);
    if (code != 0) {
        app_opts_free(o);
        app_dist_finalize(); /* every process has the same usage error */
        return code;
    }
    log_quiet = app_opts_flag(o, "quiet");
    const char *log_path = app_opts_str(o, "log");
    if (log_path[0] && rank == 0) {
        log_file = fopen(log_path, "a");
        if (log_file == NULL) {
            fprintf(stderr, "mtpe train: cannot open log file %s: %s\n", log_path, strerror(errno));
            app_opts_free(o);
            app_dist_abort(1);
        }
    }
    t.bar = isatty(STDERR_FILENO) && !log_quiet;
    mt_log_set(log_sink, NULL);
    stop_signal = 0;
    struct sigaction sa, old_term, old_int;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGINT, &sa, &old_int);

    if (completed >= 0)
        mt_log(MT_LOG_WARN,
               "%s: the checkpoint of update %lld was left half renamed by a stopped run; its "
               "renames were completed",
               model, (long long)completed);
    rc = run(&t);
    if (rc != MT_OK && !t.failed_elsewhere) {
        mt_log(MT_LOG_ERROR, "%s", mt_errmsg());
        if (log_quiet && rank == 0) fprintf(stderr, "mtpe train: %s\n", mt_errmsg());
    }
    /* MPI: after a failure the others know of, all end normally; else they
    ** would wait for this process forever */
    if (rc != MT_OK && t.nproc > 1 && !t.agreed) app_dist_abort(1);

    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGINT, &old_int, NULL);
    mt_log_set(NULL, NULL);
    if (log_file) fclose(log_file);
    log_file = NULL;
    trainer_free(&t);
    app_opts_free(o);
    app_dist_finalize();
    return rc == MT_OK ? 0 : 1;
}
