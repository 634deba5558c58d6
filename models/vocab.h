/*
** vocab.h: vocabularies as Marian loads them (marian-compat.md section 4).
**
** The type is chosen by file name, as Marian's createVocab() does:
**   *.spm                    SentencePiece model (libsentencepiece, via spm_wrap.cpp)
**   *.yml, *.yaml, *.json    Marian/Nematus YAML or JSON mapping "token: id"
**   anything else            plain text, one token per line, id = line number
** Factored (.fsv) and class vocabularies and gzipped vocab files are not supported
** (MT_ERR_UNSUPPORTED).
**
** Special ids (Marian: Vocab::getEosId/getUnkId):
**   SentencePiece   EOS = the model's eos_id(), UNK = unk_id().  Vocabularies that
**                   Marian trains (and mt_vocab_train_spm) use --bos_id=-1 --eos_id=0
**                   --unk_id=1, so there EOS = 0 ("</s>") and UNK = 1 ("<unk>"); the
**                   fixture vocabularies under tests/data/marian store exactly these ids.
**   YAML / text     looked up by string: "</s>" and "<unk>" must exist.  Nematus
**                   back-compat for YAML/JSON only: if id 0 is unused (a gap) or is the
**                   empty string or "eos", EOS = 0; if id 1 is unused, empty or
**                   "UNK", UNK = 1.
**
** Encoding (Vocab::encode): SentencePiece Encode() without sampling, or for YAML/text
** vocabs a split on the single space character (runs of spaces give no empty tokens;
** tabs and '\r' are part of tokens: callers strip the line end as Marian's reader does,
** '\n' and one trailing '\r').  Unknown tokens map to UNK.  EOS is appended when asked
** (Marian appends it to every input and target sequence).  Input must be valid UTF-8:
** otherwise MT_ERR_INVALID with the byte offset in mt_errmsg().
**
** Decoding (Vocab::decode with ignoreEOS): every EOS id is removed (not only a final
** one); SentencePiece ids are detokenized with Decode() (or, with MT_VOCAB_PIECES, the
** pieces are joined by single spaces as with Marian's --no-spm-decode); YAML/text
** tokens are joined by single spaces (BPE "@@ " is not removed, as in Marian).
**
** dim-vocabs: a positive max_size given to mt_vocab_load() drops YAML/text entries
** whose id >= max_size (those tokens then encode as UNK; "</s>"/"<unk>" beyond the
** limit are a load error), as Marian does for source vocabularies loaded with the
** model's dim-vocabs.  SentencePiece ignores it at load (Marian uses dim-vocabs only
** as the vocab_size when it trains a new .spm).
**
** Thread-safety: a loaded mt_vocab is read-only; several threads may encode and
** decode with the same vocab concurrently.
*/
#ifndef MT_VOCAB_H
#define MT_VOCAB_H
#include "mt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_vocab mt_vocab;

typedef enum mt_vocab_kind {
    MT_VOCAB_KIND_SPM = 0,  /* SentencePiece model (.spm)          */
    MT_VOCAB_KIND_YAML = 1, /* YAML/JSON mapping (.yml/.yaml/.json) */
    MT_VOCAB_KIND_TEXT = 2, /* one token per line                  */
} mt_vocab_kind;

/* Flags for mt_vocab_encode / mt_vocab_decode. */
enum {
    MT_VOCAB_ADD_EOS = 1,  /* encode: append EOS                                     */
    MT_VOCAB_KEEP_EOS = 2, /* decode: print EOS ids instead of removing them          */
    MT_VOCAB_PIECES = 4,   /* SentencePiece only: encode input that is already pieces
                           ** separated by spaces (Marian --no-spm-encode), or decode
                           ** to pieces joined by spaces (Marian --no-spm-decode)    */
};

/* Loads a vocabulary by file name (see above).  max_size: the dim-vocabs limit for
** YAML/text vocabularies, 0 for none.  On success *out owns the vocab (free with
** mt_vocab_free).  Errors: MT_ERR_IO (cannot open/read), MT_ERR_FORMAT (malformed,
** duplicate text entry, empty line, missing "</s>"/"<unk>"), MT_ERR_UNSUPPORTED
** (.gz, .fsv), MT_ERR_NOMEM. */
mt_status mt_vocab_load(const char *path, int32_t max_size, mt_vocab **out);
void mt_vocab_free(mt_vocab *v); /* NULL is a no-op */

mt_vocab_kind mt_vocab_get_kind(const mt_vocab *v);
/* Number of ids the vocab defines (Marian Vocab::size(): the piece count of an spm, the
** largest id + 1 of a YAML/text vocab, gaps included). */
int32_t mt_vocab_size(const mt_vocab *v);
/* The size Marian reports at load ("Setting vocabulary size for input i to N") and uses
** as dim-vocabs when training: max(size, max_size) for YAML/text, size for spm. */
int32_t mt_vocab_dim(const mt_vocab *v);
int32_t mt_vocab_eos_id(const mt_vocab *v);
int32_t mt_vocab_unk_id(const mt_vocab *v);

/* Token/piece of an id: NULL if id is out of [0, size); "" for an unused YAML id. The
** pointer lives as long as the vocab. */
const char *mt_vocab_piece(const mt_vocab *v, int32_t id);
/* Id of a token/piece; the UNK id when it is not in the vocab. */
int32_t mt_vocab_id(const mt_vocab *v, const char *piece);

/* Encodes one line (NUL-terminated, no line end).  On success *ids_out holds *n_out ids
** (free with mt_free; a non-NULL allocation even when *n_out is 0).  Flags:
** MT_VOCAB_ADD_EOS, MT_VOCAB_PIECES.  MT_ERR_INVALID for invalid UTF-8. */
mt_status mt_vocab_encode(const mt_vocab *v, const char *line, unsigned flags, int32_t **ids_out,
                          int64_t *n_out);
/* Decodes ids to one line (NUL-terminated, free with mt_free).  Flags: MT_VOCAB_KEEP_EOS,
** MT_VOCAB_PIECES.  MT_ERR_INVALID for an id outside [0, size). */
mt_status mt_vocab_decode(const mt_vocab *v, const int32_t *ids, int64_t n, unsigned flags,
                          char **text_out);

/* Ids that beam search suppresses (Marian Vocab::suppressedIds): UNK when suppress_unk
** (unless --allow-unk), and with suppress_special the byte-fallback control pieces
** "<0x00>".."<0x1F>" that an spm defines.  Writes at most cap ids to out and returns the
** total count (call with cap 0 to size the buffer). */
int mt_vocab_suppressed_ids(const mt_vocab *v, bool suppress_unk, bool suppress_special,
                            int32_t *out, int cap);

/* ---------------------------------------------------- SentencePiece training */

/* What Marian does when a --vocabs path ending in .spm does not exist
** (SentencePieceVocab::create): reservoir-sample at most max_lines non-empty lines of
** fewer than 2048 bytes from the corpora (std::mt19937 seeded with `seed`, then
** std::shuffle), and train with
**   --bos_id=-1 --eos_id=0 --unk_id=1 --vocab_size=V --max_sentence_length=2048
**   --input_sentence_size=<lines seen> <options>
** i.e. sentencepiece's defaults otherwise: unigram model, character_coverage 0.9995,
** nmt_nfkc normalization, no byte fallback.  The model is written to path.model and
** renamed to path; path.vocab is removed. */
typedef struct mt_spm_train_params {
    int32_t vocab_size;  /* Marian: --dim-vocabs; 0 means Marian's default 32000   */
    int64_t max_lines;   /* Marian --sentencepiece-max-lines (2000000); 0: all lines */
    uint32_t seed;       /* Marian --seed (Marian replaces 0 by a time-based seed;
                         ** here 0 is used as given)                              */
    const char *options; /* Marian --sentencepiece-options: extra "--key=value"
                         ** trainer flags separated by spaces, or NULL           */
    int num_threads;     /* trainer threads; 0 = sentencepiece's default (16)      */
    bool quiet;          /* silence sentencepiece's own stderr logging             */
} mt_spm_train_params;

mt_spm_train_params mt_spm_train_default_params(void);

/* Trains a SentencePiece model from n_corpora plain-text files (one sentence per line)
** and writes it to model_path.  Errors: MT_ERR_IO (a corpus cannot be read, the model
** cannot be written), MT_ERR_INVALID (bad parameters, nothing to train on),
** MT_ERR_UNSUPPORTED (a gzipped corpus), MT_ERR_FORMAT (sentencepiece refused the
** options or the data; its message is in mt_errmsg()). */
mt_status mt_vocab_train_spm(const char *const *corpora, int n_corpora, const char *model_path,
                             const mt_spm_train_params *p);

/* Marian's Vocab::loadOrCreate for .spm paths (CorpusBase, training): trains path from
** the corpora when the file does not exist, then loads it.  corpora: the training files
** of every stream that uses this vocabulary; like Marian (a std::set) they are sorted
** bytewise and de-duplicated before sampling.  max_size: the largest dim-vocabs of those
** streams; when positive it is the vocab_size trained (else p->vocab_size) and the
** load limit.  p may be NULL for the defaults.  For other suffixes the file must exist
** (creating YAML vocabularies is not implemented: MT_ERR_UNSUPPORTED). */
mt_status mt_vocab_load_or_train(const char *path, const char *const *corpora, int n_corpora,
                                 int32_t max_size, const mt_spm_train_params *p, mt_vocab **out);

/* ------------------------------------------- internal: spm_wrap.cpp (C ABI) */

/* Thin wrapper over sentencepiece::SentencePieceProcessor, used by vocab.c only.
** Every function catches all C++ exceptions and reports them as mt_status. */
typedef struct mt_spm mt_spm;
mt_status mt_spm_load(const char *path, mt_spm **out);
void mt_spm_free(mt_spm *s);
int32_t mt_spm_size(const mt_spm *s);
int32_t mt_spm_eos_id(const mt_spm *s);
int32_t mt_spm_unk_id(const mt_spm *s);
int32_t mt_spm_piece_to_id(const mt_spm *s, const char *piece, size_t len); /* unk_id() if absent */
const char *mt_spm_id_to_piece(const mt_spm *s, int32_t id); /* id must be in range */
mt_status mt_spm_encode(const mt_spm *s, const char *text, size_t len, int32_t **ids, int64_t *n);
mt_status mt_spm_decode(const mt_spm *s, const int32_t *ids, int64_t n, char **text);
mt_status mt_spm_train(const char *const *corpora, int n_corpora, const char *model_path,
                       const mt_spm_train_params *p);

#ifdef __cplusplus
}
#endif
#endif /* MT_VOCAB_H */
