/*
** shortlist.h: Marian's lexical shortlists (reference/marian-compat.md §7):
** reading the text `lex.s2t` format (app/align/lex.h builds it from an
** aligned corpus), Marian's two ways of pruning it, its
** binary format (write, read, checksum), and the per-batch set of target ids.
**
** Loading lex.s2t for decoding (whitespace-separated triples "t s prob", read
** as a stream so that line structure does not matter; entries with "NULL" on
** either side skipped; tokens mapped through the vocabularies, unknown ones to
** the UNK id).  Two modes, because Marian has two code paths:
**   MT_SL_LEXICAL  LexicalShortlistGenerator (text --shortlist at decoding):
**                   a later duplicate (s, t) overwrites an earlier one; per
**                   source id keep the entries with prob > threshold, at most
**                   best_num of them, by decreasing prob (ties: larger target
**                   id first); one row per source id up to the largest one in
**                   the file.
**   MT_SL_BINARY   BinaryShortlistGenerator::import (marian-conv --shortlist ...
**                   --dump): duplicates keep the largest prob (starting from 0);
**                   the threshold is compared with the TARGET ID, not with the
**                   probability (`entry.first >= threshold`, a Marian bug kept
**                   for compatibility: with threshold 0 nothing is dropped, with
**                   0.5 only target id 0 is); at most best_num entries by
**                   decreasing prob (ties: larger id first); one row per source
**                   vocabulary id (rows = source vocab size).
** Either way each row's target ids are stored sorted ascending.
**
** Binary format (little-endian), BinaryShortlistGenerator:
**
**   OFFSET        SIZE    DESCRIPTION
**      0            8     magic 0xF11A48D5013417F5
**      8            8     checksum (below)
**     16            8     firstNum
**     24            8     bestNum
**     32            8     wordToOffsetSize W (rows + 1)
**     40            8     shortListsSize S
**     48          8*W     wordToOffset[W]: row r holds ids[wordToOffset[r] ..
**                         wordToOffset[r+1]); wordToOffset[W-1] = S
**     48+8W       4*S     shortLists[S]: uint32 target ids
**   file size = 48 + 8W + 4S exactly
**
** Checksum: seed = 0; for each uint64 word v of the file from offset 16, the
** first (size - 16) / 8 of them (a trailing 4-byte half word is not covered):
** seed ^= v + 0x9e3779b9 + (seed << 6) + (seed >> 2) (boost::hash_combine with
** std::hash<uint64_t> = identity; Marian util::hashMem).
**
** Reading checks magic and exact size always, and that the offsets are
** non-decreasing and end at S (so that a damaged file can never index out of
** range).  With check (Marian's default) it also verifies the checksum and that
** every target id is below the target vocab size.  Marian's own contentCheck
** also rejects a file whose last source ids have empty rows (it requires
** wordToOffset[r] < S for every r < W-1); that is a Marian bug and such files
** are accepted here.
**
** Per-batch generation (LexicalShortlistGenerator::generate and
** BinaryShortlistGenerator::generate compute the same set):
**   ids 0 .. min(firstNum, V)-1 (V = target vocab size)
**   + for each distinct source id of the batch (every sentence, every position,
**     EOS included as Marian's batches contain it, and so is the padding of a
**     multi-sentence batch tensor, id 0, which is EOS in Marian's vocabularies):
**     its row
**   + the source ids themselves when source and target share one vocabulary
**     (Marian: the two vocab paths are identical)
**   then, while the count is not a multiple of 8, the next ids firstNum,
**   firstNum+1, ... not yet present are added; the result sorted ascending.
** Where Marian would read or produce out-of-range ids this stays in range and
** says so here: a source id without a row (text mode: larger than any source
** id of the file; binary: beyond W-1) contributes nothing (Marian indexes past
** its table); source ids >= the source vocab size are ignored; the padding stops
** at V (the binary generator does so too; the text generator would go on past V
** when the vocabulary is almost exhausted); with a shared vocabulary, source ids
** >= V are not added.
*/
#ifndef MT_SHORTLIST_H
#define MT_SHORTLIST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mt.h"
#include "vocab.h"

#define MT_SHORTLIST_MAGIC 0xF11A48D5013417F5ull
#define MT_SHORTLIST_HEADER 48

/* ------------------------------------------------------------ shortlist */

typedef enum mt_shortlist_mode {
    MT_SL_LEXICAL = 0, /* text shortlist as used for decoding        */
    MT_SL_BINARY = 1,  /* marian-conv import (threshold on target id) */
} mt_shortlist_mode;

/* A loaded shortlist: the file image and views into it (read-only). */
typedef struct mt_shortlist {
    uint64_t first_num, best_num;
    uint64_t n_rows;         /* W - 1: source ids with a row   */
    const uint64_t *offsets; /* [n_rows + 1]                   */
    const uint32_t *ids;     /* [offsets[n_rows]]               */
    unsigned char *blob;     /* the binary file image           */
    size_t blob_size;
} mt_shortlist;

void mt_shortlist_free(mt_shortlist *sl); /* NULL is a no-op */

typedef struct mt_lex_triple {
    int32_t src, trg;
    float prob;
} mt_lex_triple;

/* Maps a token to its id (never fails; unknown tokens map to UNK). */
typedef int32_t (*mt_token_map)(void *user, const char *token, bool is_source);

/* Reads a text lex file (plain or gzip) into (src id, trg id, prob) triples in file
** order, NULL entries dropped.  MT_ERR_FORMAT for a probability that is not a
** number or a trailing incomplete triple (Marian stops reading silently there). */
mt_status mt_lex_read_text(const char *path, mt_token_map map, void *user, mt_lex_triple **out,
                           int64_t *n);

/* Builds a shortlist from triples (see the modes above).  src_vocab_size: rows in
** MT_SL_BINARY mode (source ids must be below it); ignored in MT_SL_LEXICAL mode. */
mt_status mt_shortlist_build(const mt_lex_triple *t, int64_t n, int32_t src_vocab_size,
                             uint64_t first_num, uint64_t best_num, float threshold,
                             mt_shortlist_mode mode, mt_shortlist **out);

/* mt_lex_read_text + mt_shortlist_build with Marian vocabularies. */
mt_status mt_shortlist_load_text(const char *path, const mt_vocab *src, const mt_vocab *trg,
                                 uint64_t first_num, uint64_t best_num, float threshold,
                                 mt_shortlist_mode mode, mt_shortlist **out);

/* Binary format.  trg_vocab_size: for the id check (0 skips it). */
uint64_t mt_shortlist_checksum(const void *data, size_t size);
bool mt_shortlist_is_binary(const char *path); /* file starts with the magic */
mt_status mt_shortlist_parse(const void *data, size_t size, bool check, int32_t trg_vocab_size,
                             mt_shortlist **out);
mt_status mt_shortlist_read(const char *path, bool check, int32_t trg_vocab_size,
                            mt_shortlist **out);
/* Writes the binary file (to path.tmp, then renamed). */
mt_status mt_shortlist_write(const mt_shortlist *sl, const char *path);

/* Marian's --shortlist for decoding: a binary file (by magic) is read with
** check = (values[1] != 0); anything else is a text lex read in MT_SL_LEXICAL
** mode with first/best/threshold. */
mt_status mt_shortlist_load(const char *path, const mt_vocab *src, const mt_vocab *trg,
                            uint64_t first_num, uint64_t best_num, float threshold, bool check,
                            mt_shortlist **out);

/* --------------------------------------------------------- per batch */

typedef struct mt_shortlist_gen mt_shortlist_gen;

/* A generator holds O(V) scratch so that generating allocates nothing.  shared:
** source and target use the same vocabulary file. */
mt_status mt_shortlist_gen_init(const mt_shortlist *sl, int32_t src_vocab_size,
                                int32_t trg_vocab_size, bool shared, mt_shortlist_gen **out);
void mt_shortlist_gen_free(mt_shortlist_gen *g); /* NULL is a no-op */
/* Writes the sorted target ids for the source ids of a batch (n of them, all
** sentences concatenated, EOS included) to out (room for trg_vocab_size ids) and
** returns their count. */
int32_t mt_shortlist_gen_run(mt_shortlist_gen *g, const int32_t *src, int64_t n, int32_t *out);

#endif
