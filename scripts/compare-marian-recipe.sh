#!/usr/bin/env bash
# Trains the default recipe for 400 updates exactly as Marian 1.12 did for the
# log in ../shared/testdata/marian/default-recipe/train-400.log (its train.cmd's
# options, same data, vocabulary and seed, 2 threads) and prints the dev
# cross-entropy at updates 200 and 400 beside Marian's, with the difference.
#
# Marian ran that recipe with --cpu-threads 2, which is its asynchronous
# training (graph_group_async.cpp): it validates the current weights, not the
# exponentially smoothed ones (its log says "TODO: implement exponential
# smoothing!"). Smoothing only keeps an average and does not change the
# trajectory of the weights, so the like-for-like run is this one with
# --exponential-smoothing 0; SMOOTH=1e-4 validates the smoothed weights.
#   usage: scripts/compare-marian-recipe.sh [WORK_DIR]   (about 15 min on 2 cores)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data=${MT_DATA:-$here/../shared/data/en-de}
ref=${MARIAN_LOG:-$here/../shared/testdata/marian/default-recipe/train-400.log}
work=${1:-$here/build/compare-marian}
mtpe=${MTPE:-$here/build/mtpe}
[ -x "$mtpe" ] || { echo "build mtpe first (scripts/test.sh or cmake --build build)"; exit 1; }
[ -f "$ref" ] || { echo "missing Marian's log $ref"; exit 1; }
rm -rf "$work" && mkdir -p "$work"
cp "$here/assets/models/en-de/vocab.spm" "$work/vocab.spm"
"$mtpe" train --model "$work/model.npz" --vocabs "$work/vocab.spm" "$work/vocab.spm" \
  --type transformer --train-sets "$data/train.en" "$data/train.de" --dim-vocabs 8000 8000 \
  --dim-emb 256 --enc-depth 6 --dec-depth 2 --transformer-heads 8 \
  --transformer-dim-ffn 1024 --transformer-ffn-activation relu \
  --transformer-preprocess n --transformer-postprocess da --transformer-postprocess-top n \
  --tied-embeddings-all --label-smoothing 0.1 --cost-type ce-mean-words \
  --learn-rate 0.0007 --lr-warmup 1000 --lr-decay-inv-sqrt 1000 \
  --optimizer-params 0.9 0.98 1e-9 --clip-norm 5 --exponential-smoothing "${SMOOTH:-0}" \
  --mini-batch-words 4000 --mini-batch 256 --maxi-batch 100 --max-length 100 \
  --disp-freq 50 --save-freq 10000 --seed 1111 --cpu-threads 2 --after-batches 400 \
  --valid-freq 200 --valid-sets "$data/dev.en" "$data/dev.de" \
  --valid-metrics ce-mean-words perplexity --valid-mini-batch 64 2>&1 | tee "$work/train.log"
# Marian validates at the end of the run, which fell on update 404; mtpe's
# last validation is at 400.
ce() { sed -n 's/.*\[valid\] Ep\. [0-9]* : Up\. \([0-9]*\) : ce-mean-words : \([0-9.]*\).*/\1 \2/p' "$1"; }
paste <(ce "$ref") <(ce "$work/train.log") | awk '
  BEGIN { printf "%-8s %-10s %-8s %-10s %s\n", "Marian", "dev ce", "mtpe", "dev ce", "mtpe/Marian - 1" }
  NF == 4 { printf "Up. %-4s %-10.4f Up. %-4s %-10.4f %+.2f%%\n", $1, $2, $3, $4, 100 * ($4 / $2 - 1) }'
