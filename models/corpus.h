/*
** corpus.h: parallel text for training and validation, and Marian's
** batching (reference/marian-compat.md §9 "Batching", §10).
**
** A corpus is N line-aligned text files (N-1 source streams and the target
** last), plain or gzip (read through zlib, which also reads plain files),
** encoded once with one vocabulary per stream and kept in memory as token
** ids.  As Marian's CorpusBase does, each line becomes its tokens plus EOS
** (so an empty line is the lone EOS and is kept: Marian skips a pair only
** when a stream has no tokens at all, which cannot happen with EOS added),
** the line end ('\n' and one '\r') is stripped, --max-length counts tokens
** including EOS and either skips the pair or, with --max-length-crop, cuts
** each stream to max-length tokens whose last is EOS; --right-left reverses
** the tokens of every stream except the final EOS.
**
** Errors while reading: different line counts are MT_ERR_FORMAT naming the
** files and where each ended; a corrupt or truncated .gz is MT_ERR_IO naming
** the file; a line that is not valid UTF-8 is skipped with a warning
** through mt_log naming file:line and the byte offset.
**
** Batching (Marian's BatchGenerator::fetchBatches): an epoch reads the
** corpus in a seeded random order (--shuffle data) or in file order, takes
** maxi-batch x mini-batch sentences at a time, sorts them longest first
** (--maxi-batch-sort trg: by target length, ties by the sources from the
** last to the first; src: by the sources, then the target; none: by
** descending position, which is the order Marian's priority queue pops),
** cuts them into mini-batches of mini-batch sentences or, with
** mini-batch-words, of at most that many source tokens (EOS included; a
** single longer sentence forms its own batch) and shuffles the order of the
** mini-batches (--shuffle data or batches).  The order of an epoch is a
** function of (seed, epoch) only, so a run that resumes at (epoch, batch)
** sees the same batches as one that never stopped.
**
** Memory: the corpus owns its token pool; the batcher allocates everything
** at init (the batch it hands out is reused), so an epoch allocates nothing.
*/
#ifndef MT_CORPUS_H
#define MT_CORPUS_H
#include <stdbool.h>
#include <stdint.h>

#include "batch.h"
#include "mt.h"
#include "vocab.h"

typedef struct mt_corpus mt_corpus;

typedef struct mt_corpus_params {
    int32_t max_length;   /* per stream, tokens incl. EOS; <= 0: no limit (50)  */
    bool max_length_crop; /* crop instead of skipping                          */
    bool right_left;      /* reverse every stream but its EOS                   */
    bool keep_text;       /* keep the target lines (validation references)      */
} mt_corpus_params;

mt_corpus_params mt_corpus_default_params(void);

/* Reads and encodes n_streams line-aligned files (sources first, target
** last; 2 <= n_streams <= MT_MAX_STREAMS + 1) with vocabs[i] for paths[i].
** On success *out owns the corpus. */
mt_status mt_corpus_load(const char *const *paths, const mt_vocab *const *vocabs, int n_streams,
                         const mt_corpus_params *p, mt_corpus **out);
void mt_corpus_free(mt_corpus *c); /* NULL is a no-op */

int mt_corpus_streams(const mt_corpus *c);
int64_t mt_corpus_size(const mt_corpus *c);     /* sentence tuples kept                 */
int64_t mt_corpus_lines(const mt_corpus *c);    /* lines read per file                  */
int64_t mt_corpus_bad_utf8(const mt_corpus *c); /* tuples skipped for invalid UTF-8     */
int64_t mt_corpus_too_long(const mt_corpus *c); /* tuples skipped for --max-length      */
int32_t mt_corpus_max_len(const mt_corpus *c, int stream); /* longest kept, incl. EOS     */
/* Tokens of tuple i (0 <= i < size) in stream s, EOS included. */
const int32_t *mt_corpus_tokens(const mt_corpus *c, int64_t i, int s, int32_t *len);
int64_t mt_corpus_line(const mt_corpus *c, int64_t i); /* 1-based line number of tuple i */
/* Target line of tuple i as read (keep_text), else NULL. */
const char *mt_corpus_text(const mt_corpus *c, int64_t i);

typedef enum mt_batch_sort { MT_SORT_TRG = 0, MT_SORT_SRC, MT_SORT_NONE } mt_batch_sort;
typedef enum mt_batch_shuffle {
    MT_SHUFFLE_DATA = 0, /* shuffle the corpus each epoch and the mini-batches */
    MT_SHUFFLE_BATCHES,  /* file order, mini-batches shuffled                 */
    MT_SHUFFLE_NONE,
} mt_batch_shuffle;

typedef struct mt_batcher_params {
    int32_t mini_batch;       /* sentences per mini-batch (64)                      */
    int64_t mini_batch_words; /* > 0: source tokens per mini-batch instead        */
    int32_t maxi_batch;       /* mini-batches read and sorted together (100)        */
    mt_batch_sort sort;
    mt_batch_shuffle shuffle;
    uint64_t seed;
} mt_batcher_params;

mt_batcher_params mt_batcher_default_params(void);
/* Parses "trg" | "src" | "none" and "data" | "batches" | "none". */
bool mt_batch_sort_parse(const char *s, mt_batch_sort *out);
bool mt_batch_shuffle_parse(const char *s, mt_batch_shuffle *out);

typedef struct mt_batcher mt_batcher;

/* The corpus must outlive the batcher.  MT_ERR_INVALID for bad sizes. */
mt_status mt_batcher_init(const mt_corpus *c, const mt_batcher_params *p, mt_batcher **out);
void mt_batcher_free(mt_batcher *b); /* NULL is a no-op */
/* Starts epoch `epoch` (1-based) from its first batch. */
void mt_batcher_begin_epoch(mt_batcher *b, int64_t epoch);
/* The next mini-batch of the epoch, or NULL at its end.  The batch belongs
** to the batcher and is valid until the next call; sent_ids hold corpus
** tuple indices (0-based, see mt_corpus_line). */
const mt_batch *mt_batcher_next(mt_batcher *b);
/* Skips up to n batches of the epoch (resuming); returns how many. */
int64_t mt_batcher_skip(mt_batcher *b, int64_t n);
int64_t mt_batcher_epoch(const mt_batcher *b);
int64_t mt_batcher_position(const mt_batcher *b); /* batches handed out this epoch */

/* Reads a whole file (plain or gzip) into a NUL-terminated buffer (free with
** mt_free).  MT_ERR_IO names the file. */
mt_status mt_text_read_all(const char *path, char **out, size_t *len);

/* Next line of buf[*pos..len) (as read by mt_text_read_all): sets *line and
** *line_len (without the '\n' and one '\r' before it) and moves *pos past
** the line end; false at the end.  A last line without '\n' counts. */
bool mt_next_line(const char *buf, size_t len, size_t *pos, const char **line, size_t *line_len);

#endif /* MT_CORPUS_H */
