#!/usr/bin/env bash
# Does the APE model help? (issue 34)  Translates ../shared/data/en-de/test.en
# with the MT model (default: assets/models/en-de, beam 4, normalize 1), post-edits
# the MT with the APE model (`mtpe postedit`, the same as `mtpe translate --ape`),
# scores both against test.de with `mtpe eval` (sacreBLEU's BLEU and chrF2) and
# prints a Markdown table, then, on the test lines whose MT already equals the
# reference, the fraction the APE leaves unchanged (over-correction), and how
# many lines the APE changed at all.  Targets (issue 34): APE >= MT + 1.0 BLEU,
# and >= 90% of the MT = reference lines unchanged; each row says met or not.
#
#   usage: scripts/bench-ape.sh [--lines N] [--ape-dir DIR] [--model-dir DIR]
#                               [--threads N] [WORK_DIR]
#   --lines N        only the first N test lines (a quick check)
#   --ape-dir DIR    the APE model folder (default assets/models/en-de-ape):
#                    DIR/decoder.yml when present (its options), else
#                    DIR/model.npz, DIR/vocab.spm x 3 at beam 4, normalize 1
#   --model-dir DIR  the MT model: DIR/model.npz, DIR/vocab.spm (default
#                    assets/models/en-de)
#   WORK_DIR         outputs are kept there (default build/bench-ape)
# Environment: MT_DATA (corpus folder), MTPE (the mtpe binary), NICE.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data=${MT_DATA:-$here/../shared/data/en-de}
mtpe=${MTPE:-$here/build/mtpe}
nice_cmd=${NICE-nice -n 10}
lines=0 threads=2 ape_dir=$here/assets/models/en-de-ape model_dir=$here/assets/models/en-de
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --lines) lines=$2; shift 2 ;;
    --ape-dir) ape_dir=$2; shift 2 ;;
    --model-dir) model_dir=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench-ape.sh: unknown option $1 (--help)" >&2; exit 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
work=${args[0]:-$here/build/bench-ape}
[ -x "$mtpe" ] || { echo "build mtpe first (cmake --build build --target mtpe)" >&2; exit 1; }
for f in "$data/test.en" "$data/test.de" "$model_dir/model.npz" "$model_dir/vocab.spm" \
         "$ape_dir/model.npz"; do
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
batch=(--mini-batch 32 --maxi-batch 100 --maxi-batch-sort src --cpu-threads "$threads" --quiet)
v=$model_dir/vocab.spm
echo "MT: $model_dir/model.npz; APE: $ape_dir; test: $n lines" >&2
$nice_cmd "$mtpe" translate -m "$model_dir/model.npz" -v "$v" "$v" -b 4 -n 1 "${batch[@]}" \
  -i "$work/src.en" -o "$work/mt.de"
if [ -f "$ape_dir/decoder.yml" ]; then
  ape=(-c "$ape_dir/decoder.yml" --relative-paths)
else
  av=$ape_dir/vocab.spm
  ape=(-m "$ape_dir/model.npz" -v "$av" "$av" "$av" -b 4 -n 1)
fi
$nice_cmd "$mtpe" postedit "${ape[@]}" "${batch[@]}" -i "$work/src.en" "$work/mt.de" \
  -o "$work/ape.de"

score() { # HYP NAME -> "BLEU CHRF"
  "$mtpe" eval -r "$work/ref.de" -i "$1" >"$work/eval.$2.txt"
  local b c
  b=$(awk '$1 ~ /^BLEU\|/ { print $3 }' "$work/eval.$2.txt")
  c=$(awk '$1 ~ /^chrF2\|/ { print $3 }' "$work/eval.$2.txt")
  [ -n "$b" ] && [ -n "$c" ] || { echo "cannot read mtpe eval's output" >&2; exit 1; }
  echo "$b $c"
}
read -r mt_bleu mt_chrf <<<"$(score "$work/mt.de" mt)"
read -r ape_bleu ape_chrf <<<"$(score "$work/ape.de" ape)"
delta=$(awk -v a="$ape_bleu" -v b="$mt_bleu" 'BEGIN { printf "%+.2f", a - b }')
dchrf=$(awk -v a="$ape_chrf" -v b="$mt_chrf" 'BEGIN { printf "%+.2f", a - b }')
# lines: MT = reference, and of those the ones APE left alone; lines APE changed
read -r eq kept changed <<<"$(paste -d'\n' "$work/mt.de" "$work/ape.de" "$work/ref.de" |
  awk 'NR % 3 == 1 { mt = $0 } NR % 3 == 2 { ape = $0 }
       NR % 3 == 0 { if (mt == $0) { eq++; if (ape == mt) kept++ } if (ape != mt) ch++ }
       END { print eq + 0, kept + 0, ch + 0 }')"
frac=$(awk -v k="$kept" -v e="$eq" 'BEGIN { if (e > 0) printf "%.1f", 100 * k / e; else print "n/a" }')
met() { if awk -v x="$1" -v t="$2" 'BEGIN { exit !(x != "n/a" && x + 0 >= t + 0) }'; then echo met; else echo "NOT met"; fi; }

echo "| system | BLEU | chrF |"
echo "|---|---|---|"
echo "| MT (\`$(basename "$model_dir")\`) | $mt_bleu | $mt_chrf |"
echo "| APE(MT) (\`$(basename "$ape_dir")\`) | $ape_bleu | $ape_chrf |"
echo "| APE - MT | $delta | $dchrf |"
echo
echo "| check | value | target |"
echo "|---|---|---|"
echo "| BLEU gain of APE over MT | $delta | >= +1.0: $(met "$delta" 1.0) |"
echo "| test lines whose MT equals the reference | $eq of $n | |"
pct="$frac%"
[ "$frac" = n/a ] && pct="no such line"
echo "| ... left unchanged by APE | $kept of $eq ($pct) | >= 90%: $(met "$frac" 90) |"
echo "| lines APE changed | $changed of $n | |"
echo
echo "Test set: \`test.en\` → \`test.de\` ($n lines); MT at beam 4, normalize 1; APE with"
echo "\`mtpe postedit ${ape[*]}\`. Signatures:"
awk '{ print "`" $1 "`" }' "$work/eval.mt.txt"
