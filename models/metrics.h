/*
** metrics.h: corpus BLEU, chrF and TER exactly as sacreBLEU 2.x computes them with
** its defaults, sentence-level BLEU for n-best selection, and TER edit counts (HTER).
**
** BLEU (sacrebleu.metrics.BLEU()): case-sensitive, tokenizer "13a" (mteval-v13a), at
** most 4-grams, "exp" smoothing (NIST: the k-th order with no match gets precision
** 100 / (2^k * total)), brevity penalty exp(1 - ref_len/sys_len) when sys_len <
** ref_len, closest reference length (ties: the shorter).  Corpus BLEU sums the counts
** of all segments and computes the score once; if no n-gram of any order matched the
** score is 0.  Signature: "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0".
**
** chrF (sacrebleu.metrics.CHRF()): character n-grams of order 1..6, no word n-grams
** (chrF, not chrF++), beta 2, case-sensitive, whitespace removed before counting
** (Python str.split() whitespace), n-grams over Unicode code points.  Per order the
** statistics are [hyp n-grams, ref n-grams, matches], with the hypothesis count set to
** 0 when the reference has no n-gram of that order.  Corpus chrF sums the statistics
** of all segments and computes one F-score: precision and recall are averaged over the
** orders where both counts are non-zero ("effective order"), then
** F = (1 + b^2) P R / (b^2 P + R) * 100.  With several references the one with the
** best sentence F-score counts.  Signature:
** "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.0.0".
**
** TER (sacrebleu.metrics.TER()): lowercased as Python's str.lower() (case:lc; tables
** generated from Python 3.11 / Unicode 14 by scripts/gen-unicase.py, with U+0130 ->
** "i" U+0307 and the final sigma rule), no normalisation, punctuation kept, no Asian
** splitting, words = str.split().  Per reference, tercom's edit count with shifts
** (sacrebleu/metrics/lib_ter.py translation_edit_rate): edits cost 1; the distance is
** a beam Levenshtein (rows = hypothesis words; row i keeps the columns within
** MT_TER_BEAM_WIDTH of floor(i * nr / nh), widened to ceil(ratio / 2 + 25) when
** nr / nh > 50, last row complete; per cell the first strictly cheaper of diagonal,
** hypothesis-word deletion, reference-word insertion).  Then, greedily, the best shift
** is applied while it lowers the distance: candidates are equal runs of 1..10
** (MT_TER_MAX_SHIFT_SIZE) words hyp[sh..] = ref[sr..] with |sh - sr| <= 50
** (MT_TER_MAX_SHIFT_DIST), in the order sh, sr, length; a run counts only if it holds
** an erroneous hypothesis word and an erroneous reference word (from the alignment of
** the distance's operations) and the reference position does not align inside it; its
** targets are just after the hypothesis words aligned to ref[sr-1..sr+len-2] (0 for
** sr-1 = -1), each distinct target once; the best has the largest gain, then the
** longest run, the earliest sh, the earliest target.  At most 1000 candidates are
** evaluated per hypothesis and reference (MT_TER_MAX_SHIFT_CANDIDATES): when the budget
** runs out the round's best shift is not applied.  Edits = shifts + final distance; an
** empty reference gives (hypothesis words, 0).  A segment counts its best reference's
** edits and the average reference length; corpus TER = 100 * edits / reference words,
** and with 0 reference words 100 if there are edits, else 0 (sacreBLEU >= 2.3.2;
** 2.0.0-2.3.1 give 100 in both cases).  Signature
** "nrefs:1|case:lc|tok:tercom|norm:no|punct:yes|asian:no|version:2.0.0".
**
** Version string: "2.0.0", the sacreBLEU release whose README publishes the example
** (BLEU 48.53, chrF2 59.73) that tests/test_metrics.c reproduces; BLEU and chrF with
** these defaults compute the same numbers in every 2.x release, and TER too except
** for the 0-reference-word case above.
**
** References: as sacreBLEU does, empty references ("") are ignored; a segment left
** without any reference is an error (MT_ERR_INVALID; sacreBLEU raises "Empty or None
** reference sentence found").  Text must be valid UTF-8 (sacreBLEU reads UTF-8).
** Thread-safety: the functions keep no state; a stats struct belongs to one thread.
*/
#ifndef MT_METRICS_H
#define MT_METRICS_H
#include "mt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MT_BLEU_ORDER 4
#define MT_CHRF_ORDER 6
#define MT_CHRF_BETA 2
#define MT_SACREBLEU_VERSION "2.0.0"

/* Sufficient statistics of BLEU, summed over segments.  Zero-initialize (or use
** mt_bleu_init) before the first mt_bleu_add. */
typedef struct mt_bleu_stats {
    int64_t sys_len, ref_len;
    int64_t correct[MT_BLEU_ORDER], total[MT_BLEU_ORDER];
    int64_t n_segments;
    int nrefs; /* references per segment so far: 0 none yet, -1 varying */
} mt_bleu_stats;

typedef struct mt_bleu_score {
    double score; /* 0..100 */
    double precisions[MT_BLEU_ORDER];
    double bp, ratio; /* ratio = sys_len / ref_len (0 if ref_len is 0) */
    int64_t counts[MT_BLEU_ORDER], totals[MT_BLEU_ORDER];
    int64_t sys_len, ref_len;
} mt_bleu_score;

void mt_bleu_init(mt_bleu_stats *s);
/* Adds one segment: hypothesis hyp against nrefs references. */
mt_status mt_bleu_add(mt_bleu_stats *s, const char *hyp, const char *const *refs, int nrefs);
/* BLEU of the accumulated statistics with exp smoothing.  effective_order: use only
** the orders up to the highest one with a non-zero total (sacreBLEU effective_order;
** off for corpus BLEU, on for sacrebleu.sentence_bleu). */
mt_bleu_score mt_bleu_compute(const mt_bleu_stats *s, bool effective_order);
/* sacrebleu.sentence_bleu(hyp, refs): exp smoothing, effective order on. */
mt_status mt_bleu_sentence(const char *hyp, const char *const *refs, int nrefs, double *score);
/* Writes the signature (snprintf semantics: returns the length it needs). */
int mt_bleu_signature(const mt_bleu_stats *s, bool effective_order, char *buf, size_t cap);
/* sacreBLEU's score line, e.g. "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio =
** 0.944 hyp_len = 17 ref_len = 18)" with `width` decimals for the score; with a
** non-NULL signature "BLEU|<signature> = ...".  snprintf semantics. */
int mt_bleu_format(const mt_bleu_score *sc, int width, const char *signature, char *buf,
                   size_t cap);
/* The 13a tokenization sacreBLEU applies to each segment before counting (including
** its rstrip), tokens separated by single spaces.  *out: free with mt_free. */
mt_status mt_tokenize_13a(const char *line, char **out);

/* Sufficient statistics of chrF, summed over segments. */
typedef struct mt_chrf_stats {
    int64_t hyp[MT_CHRF_ORDER], ref[MT_CHRF_ORDER], match[MT_CHRF_ORDER];
    int64_t n_segments;
    int nrefs; /* as in mt_bleu_stats */
} mt_chrf_stats;

void mt_chrf_init(mt_chrf_stats *s);
mt_status mt_chrf_add(mt_chrf_stats *s, const char *hyp, const char *const *refs, int nrefs);
double mt_chrf_compute(const mt_chrf_stats *s); /* 0..100 */
mt_status mt_chrf_sentence(const char *hyp, const char *const *refs, int nrefs, double *score);
int mt_chrf_signature(const mt_chrf_stats *s, char *buf, size_t cap);
/* "chrF2 = 59.73" (width decimals), or "chrF2|<signature> = 59.73". */
int mt_chrf_format(double score, int width, const char *signature, char *buf, size_t cap);

#define MT_TER_MAX_SHIFT_SIZE 10
#define MT_TER_MAX_SHIFT_DIST 50
#define MT_TER_BEAM_WIDTH 25
#define MT_TER_MAX_SHIFT_CANDIDATES 1000

/* Statistics of TER, summed over segments.  mt_ter_init gives sacreBLEU's default,
** case-insensitive TER; set case_sensitive afterwards for TER(case_sensitive=True). */
typedef struct mt_ter_stats {
    int64_t edits;    /* the best reference's edits, summed */
    double ref_words; /* the average reference length, summed in segment order */
    int64_t n_segments;
    int nrefs; /* as in mt_bleu_stats */
    bool case_sensitive;
} mt_ter_stats;

void mt_ter_init(mt_ter_stats *s);
mt_status mt_ter_add(mt_ter_stats *s, const char *hyp, const char *const *refs, int nrefs);
/* 100 * edits / ref_words: 0 is a perfect match, above 100 possible. */
double mt_ter_compute(const mt_ter_stats *s);
/* sacrebleu.metrics.TER().sentence_score(hyp, refs).score */
mt_status mt_ter_sentence(const char *hyp, const char *const *refs, int nrefs, double *score);
int mt_ter_signature(const mt_ter_stats *s, char *buf, size_t cap);
/* "TER = 42.86" (width decimals), or "TER|<signature> = 42.86". */
int mt_ter_format(double score, int width, const char *signature, char *buf, size_t cap);
/* The edits (shifts, insertions, deletions, substitutions) that turn hyp into ref and
** ref's word count, for HTER (hyp: the MT output, ref: its post-edit).  ref may be
** empty: edits = hypothesis words, ref_words = 0.  HTER = 100 * edits / ref_words. */
mt_status mt_ter_edits(const char *hyp, const char *ref, bool case_sensitive, int64_t *edits,
                       int64_t *ref_words);

/* The one-code-point lowercase of code point c as TER's case:lc has it (Unicode 14
** simple mapping; c itself when it has none).  Also the glossary's case folding. */
uint32_t mt_unicode_lower(uint32_t c);

#ifdef __cplusplus
}
#endif
#endif /* MT_METRICS_H */
