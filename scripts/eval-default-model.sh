#!/usr/bin/env bash
# Quality of the default English-German model (assets/models/en-de) with each
# GEMM type, with and without its lexical shortlist: translates
# ../shared/data/en-de/test.en six ways (float32, int16, int8; each without and
# with lex.bin 100 100 0) at beam 4, normalize 1, mini-batch 32 (maxi-batch 100,
# sorted by source length), 2 threads; scores each with `mtpe eval` (sacreBLEU's
# BLEU and chrF2 against test.de) and prints a Markdown table: BLEU, chrF, BLEU
# minus float32's, and the wall time of the translation.
#
#   usage: scripts/eval-default-model.sh [--lines N] [--model-dir DIR]
#                                        [--shortlist FILE] [--threads N] [WORK_DIR]
#   --lines N       only the first N lines of the test set (a quick check)
#   --model-dir D   model.npz and vocab.spm of another checkpoint (default:
#                   assets/models/en-de); the shortlist: D/lex.bin if present,
#                   else the shipped assets/models/en-de/lex.bin
#   --shortlist F   the shortlist file instead
#   WORK_DIR        translations are kept there (default build/eval-default-model)
# Environment: MT_DATA (corpus folder), MTPE (the mtpe binary), NICE (default
# "nice -n 10": yields to a training run on the same machine).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data=${MT_DATA:-$here/../shared/data/en-de}
mtpe=${MTPE:-$here/build/mtpe}
nice_cmd=${NICE-nice -n 10}
lines=0 threads=2 model_dir=$here/assets/models/en-de shortlist=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --lines) lines=$2; shift 2 ;;
    --model-dir) model_dir=$2; shift 2 ;;
    --shortlist) shortlist=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
work=${args[0]:-$here/build/eval-default-model}
if [ -z "$shortlist" ]; then
  shortlist=$model_dir/lex.bin
  [ -f "$shortlist" ] || shortlist=$here/assets/models/en-de/lex.bin
fi
[ -x "$mtpe" ] || { echo "build mtpe first (cmake --build build --target mtpe)" >&2; exit 1; }
for f in "$data/test.en" "$data/test.de" "$model_dir/model.npz" "$model_dir/vocab.spm" \
         "$shortlist"; do
  [ -f "$f" ] || { echo "missing $f" >&2; exit 1; }
done
mkdir -p "$work"
if [ "$lines" -gt 0 ]; then
  head -n "$lines" "$data/test.en" >"$work/src.en"
  head -n "$lines" "$data/test.de" >"$work/ref.de"
else
  cp "$data/test.en" "$work/src.en"
  cp "$data/test.de" "$work/ref.de"
fi
n=$(wc -l <"$work/src.en")

echo "model: $model_dir/model.npz; shortlist: $shortlist (100 100 0)" >&2
echo "test set: $data/test.en, $n lines; beam 4, normalize 1, mini-batch 32, $threads threads" >&2
rows=()
f32_bleu=""
for sl in no yes; do
  for g in float32 int16 int8; do
    name=$g
    slargs=()
    if [ "$sl" = yes ]; then
      name="$g + shortlist"
      slargs=(--shortlist "$shortlist" 100 100 0)
    fi
    out=$work/out.$g.sl-$sl.de
    echo "translating: $name" >&2
    t0=$(date +%s.%N)
    $nice_cmd "$mtpe" translate -m "$model_dir/model.npz" -v "$model_dir/vocab.spm" \
      "$model_dir/vocab.spm" -b 4 -n 1 --mini-batch 32 --maxi-batch 100 --maxi-batch-sort src \
      --cpu-threads "$threads" --gemm-type "$g" "${slargs[@]}" --quiet \
      -i "$work/src.en" -o "$out"
    t1=$(date +%s.%N)
    "$mtpe" eval -r "$work/ref.de" -i "$out" >"$work/eval.$g.sl-$sl.txt"
    bleu=$(awk '$1 ~ /^BLEU\|/ { print $3 }' "$work/eval.$g.sl-$sl.txt")
    chrf=$(awk '$1 ~ /^chrF2\|/ { print $3 }' "$work/eval.$g.sl-$sl.txt")
    [ -n "$bleu" ] && [ -n "$chrf" ] || { echo "cannot read mtpe eval's output" >&2; exit 1; }
    [ "$name" = float32 ] && f32_bleu=$bleu
    delta=$(awk -v a="$bleu" -v b="$f32_bleu" 'BEGIN { printf "%+.2f", a - b }')
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    rows+=("| $name | $bleu | $chrf | $delta | $wall |")
  done
done

echo
echo "| configuration | BLEU | chrF | Δ BLEU vs float32 | wall s |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "Test set: \`test.en\` → \`test.de\` ($n lines); beam 4, normalize 1, mini-batch 32,"
echo "$threads threads (wall time: \`mtpe translate\`, loading included). Signatures:"
awk '{ print "`" $1 "`" }' "$work/eval.float32.sl-no.txt"
