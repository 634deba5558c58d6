#!/usr/bin/env bash
# Recipe of the lexical shortlist shipped with the default English-German model
# (assets/models/en-de/lex.bin), Marian's recipe with mtpe's own tools:
#   1. segment ../shared/data/en-de/train.{en,de} with the model's SentencePiece
#      vocabulary (spm_encode, from Debian's `sentencepiece` package);
#   2. word-align the pieces in both directions with `mtpe align -dov --both`
#      (fast_align's IBM model 2 with diagonal prior, 5 EM passes each way) and
#      symmetrise (grow-diag-final-and);
#   3. `mtpe shortlist` counts the links into lex.s2t ("target source P(t|s)");
#   4. `mtpe shortlist --convert lex.s2t 100 100 0 --dump lex.bin` writes Marian's
#      binary shortlist, pruned as Marian's recipe does: the 100 most frequent
#      target pieces plus the 100 best translations of each source piece.
# The whole corpus is used (962,998 pairs; about 10 minutes of one core for the
# alignment on a 2-core machine busy with training).  --lines N uses only the
# first N pairs (quicker; a shortlist from fewer lines misses rare pieces).
#
#   usage: scripts/make-default-shortlist.sh [--lines N] [--first N] [--best N]
#                                             [WORK_DIR [OUT_FILE]]
#   WORK_DIR: intermediate files (default build/default-shortlist)
#   OUT_FILE: the binary shortlist (default assets/models/en-de/lex.bin)
# Environment: MT_DATA (corpus folder), MTPE (the mtpe binary), NICE (default
# "nice -n 10": the heavy steps yield to a training run on the same machine).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data=${MT_DATA:-$here/../shared/data/en-de}
mtpe=${MTPE:-$here/build/mtpe}
nice_cmd=${NICE-nice -n 10}
lines=0 first=100 best=100
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --lines) lines=$2; shift 2 ;;
    --first) first=$2; shift 2 ;;
    --best) best=$2; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
work=${args[0]:-$here/build/default-shortlist}
out=${args[1]:-$here/assets/models/en-de/lex.bin}
spm=$here/assets/models/en-de/vocab.spm

[ -x "$mtpe" ] || { echo "build mtpe first (cmake --build build --target mtpe)" >&2; exit 1; }
command -v spm_encode >/dev/null || { echo "spm_encode missing (apt-get install sentencepiece)" >&2; exit 1; }
for f in "$data/train.en" "$data/train.de" "$spm"; do
  [ -f "$f" ] || { echo "missing $f" >&2; exit 1; }
done
mkdir -p "$work"

take() { if [ "$lines" -gt 0 ]; then head -n "$lines" "$1"; else cat "$1"; fi; }
t0=$(date +%s)
echo "1/4 segmenting with $spm" >&2
take "$data/train.en" | $nice_cmd spm_encode --model="$spm" > "$work/train.sp.en"
take "$data/train.de" | $nice_cmd spm_encode --model="$spm" > "$work/train.sp.de"
n=$(wc -l < "$work/train.sp.en")
echo "   $n sentence pairs" >&2

echo "2/4 aligning both directions, grow-diag-final-and" >&2
$nice_cmd "$mtpe" align -s "$work/train.sp.en" -t "$work/train.sp.de" -dov --both \
  --sym grow-diag-final-and > "$work/train.align"

echo "3/4 lex.s2t" >&2
$nice_cmd "$mtpe" shortlist --src "$work/train.sp.en" --trg "$work/train.sp.de" \
  --align "$work/train.align" -o "$work/lex.s2t"

echo "4/4 binary shortlist ($first $best 0) -> $out" >&2
$nice_cmd "$mtpe" shortlist --convert "$work/lex.s2t" "$first" "$best" 0 \
  --vocabs "$spm" "$spm" --dump "$out.tmp"
mv "$out.tmp" "$out"
"$mtpe" shortlist --info "$out" >&2
echo "done in $(( $(date +%s) - t0 )) s: $out ($(wc -c < "$out") bytes, from $n pairs)" >&2
