#!/usr/bin/env bash
# The GEC evaluation: corrects the held-out test set (test.noisy, made by
# scripts/gec-heldout-noise.py, kinds the model was not trained on) with
# `mtpe gec` and prints edit-level precision, recall, F0.5 and the fraction of
# clean lines left unchanged (`mtpe gec eval`), for each threshold given.
# Targets (issue 34): precision >= 0.8, F0.5 >= 0.6, clean kept >= 0.97.
#   usage: scripts/bench-gec.sh [MODEL_DIR] [DATA_DIR] [THRESHOLDS...]
#   (defaults: assets/models/de-gec, build/gec-data, 2.0; MT_THREADS threads;
#   GEC_SET=dev scores the dev set, made with the training noise, to choose the
#   threshold without looking at the held-out test; GEC_LINES=N: the first N lines)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
model=${1:-$here/assets/models/de-gec}
data=${2:-$here/build/gec-data}
shift 2 || shift $#
thresholds=("$@")
[ ${#thresholds[@]} -gt 0 ] || thresholds=(2.0)
mtpe=${MTPE:-$here/build/mtpe}
set_=${GEC_SET:-test}
[ -f "$data/$set_.noisy" ] || { echo "no $data/$set_.noisy (scripts/make-gec-data.sh)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -n "${GEC_LINES:-1000000000}" "$data/$set_.noisy" > "$tmp/src"
head -n "${GEC_LINES:-1000000000}" "$data/$set_.clean" > "$tmp/ref"
echo "model $model, $set_ set $data/$set_.noisy ($(wc -l < "$tmp/src") lines)"
echo "baseline (no correction):"
"$mtpe" gec eval -s "$tmp/src" -r "$tmp/ref" -i "$tmp/src" | tail -3
for t in "${thresholds[@]}"; do
  start=$(date +%s)
  "$mtpe" gec -m "$model" --gec-threshold "$t" --cpu-threads "${MT_THREADS:-2}" \
    < "$tmp/src" > "$tmp/hyp.$t"
  echo "threshold $t ($(( $(date +%s) - start )) s):"
  "$mtpe" gec eval -s "$tmp/src" -r "$tmp/ref" -i "$tmp/hyp.$t" | tail -4
done
