/*
** batch.h: a batch of sentence pairs as token ids, shared by training,
** scoring and translation.  Layout is batch-major: ids[b * len + t].
** Padding positions hold id 0 and mask 0.  The target carries EOS at the
** end of each sentence (included in the mask), as Marian's target does; the
** source carries EOS too (Marian appends </s> to source sentences).
** Tokens are in the model's order: for right-to-left models the data layer
** has already reversed each stream except its final EOS (model.h).
*/
#ifndef MT_BATCH_H
#define MT_BATCH_H
#include <stdbool.h>
#include <stdint.h>

#include "mt.h"

#define MT_MAX_STREAMS 4 /* source streams (multi-source models use 2) */

typedef struct mt_batch {
    int n_src;                        /* number of source streams                          */
    int32_t size;                     /* sentences in the batch (B)                        */
    int32_t src_len[MT_MAX_STREAMS];  /* padded length S of each stream        */
    int32_t *src_ids[MT_MAX_STREAMS]; /* [B, S]                                */
    float *src_mask[MT_MAX_STREAMS];  /* [B, S] 1 = token, 0 = padding         */
    int32_t trg_len;                  /* padded target length T (0 when no target)         */
    int32_t *trg_ids;                 /* [B, T] (NULL when no target)                      */
    float *trg_mask;                  /* [B, T]                                            */
    int64_t trg_words;                /* number of target tokens incl. EOS (sum of mask)   */
    int64_t *sent_ids;                /* [B] index of each sentence in its corpus/input    */
} mt_batch;

/* Allocates a zeroed batch for B sentences with the given padded lengths
** (trg_len 0 = source only).  Free with mt_batch_free (NULL is a no-op). */
mt_status mt_batch_alloc(int n_src, int32_t size, const int32_t *src_len, int32_t trg_len,
                         mt_batch **out);
void mt_batch_free(mt_batch *b);

/* One token sequence (EOS included) of one stream of one sentence. */
typedef struct mt_batch_seq {
    const int32_t *ids;
    int32_t len;
} mt_batch_seq;

/* Builds a padded batch of `size` sentences from their sequences:
** seqs[i * (n_src + (has_trg ? 1 : 0)) + s] is stream s of sentence i (the
** target last).  Each stream is padded to its longest sequence; sent_ids
** (NULL: 0, 1, ...) become b->sent_ids.  MT_ERR_INVALID for an empty
** sequence (every sequence holds at least its EOS). */
mt_status mt_batch_make(int n_src, bool has_trg, int32_t size, const mt_batch_seq *seqs,
                        const int64_t *sent_ids, mt_batch **out);

/* Reverses seq[0 .. len-1) in place, keeping the final token (EOS) last:
** Marian's --right-left. */
void mt_batch_reverse_seq(int32_t *ids, int32_t len);

/* A 64-bit FNV-1a digest of a sentence pair's token ids (source, then a
** separator, then target), the same for a row of a batch (its unmasked
** tokens, mt_batch_row_hash) and for ids encoded directly: `mtpe tune`
** checks with it that no held-out pair was in a training batch. */
uint64_t mt_pair_hash(const int32_t *src, int64_t n_src, const int32_t *trg, int64_t n_trg);
/* Source stream 0 and the target of row r. */
uint64_t mt_batch_row_hash(const mt_batch *b, int32_t r);

#endif /* MT_BATCH_H */
