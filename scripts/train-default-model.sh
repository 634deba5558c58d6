#!/usr/bin/env bash
# Recipe of the default English-German model shipped in assets/models/en-de/.
# Trains with `mtpe train` on the project's corpus (../shared/data/en-de, Debian
# translations): joint SentencePiece vocabulary of 8000 pieces, transformer with a
# 256-dim model, 6 encoder and 2 decoder layers (a student-sized model that decodes
# fast on a CPU).  Re-running continues from the checkpoint in $WORK.
#   usage: scripts/train-default-model.sh [WORK_DIR] [extra mtpe train options]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data=${MT_DATA:-$here/../shared/data/en-de}
work=${1:-$here/build/default-model}
shift || true
mtpe=${MTPE:-$here/build/mtpe}
mkdir -p "$work"
[ -x "$mtpe" ] || { echo "build mtpe first (scripts/test.sh or cmake --build build)"; exit 1; }
for f in train.en train.de dev.en dev.de; do
  [ -f "$data/$f" ] || { echo "missing $data/$f"; exit 1; }
done
exec "$mtpe" train \
  --type transformer --model "$work/model.npz" \
  --train-sets "$data/train.en" "$data/train.de" \
  --vocabs "$work/vocab.spm" "$work/vocab.spm" --dim-vocabs 8000 8000 \
  --dim-emb 256 --enc-depth 6 --dec-depth 2 --transformer-heads 8 \
  --transformer-dim-ffn 1024 --transformer-ffn-activation relu \
  --transformer-preprocess n --transformer-postprocess da \
  --transformer-postprocess-top n --tied-embeddings-all \
  --label-smoothing 0.1 --cost-type ce-mean-words \
  --learn-rate 0.0007 --lr-warmup 1000 --lr-decay-inv-sqrt 1000 \
  --optimizer-params 0.9 0.98 1e-9 --clip-norm 5 --exponential-smoothing 1e-4 \
  --mini-batch-words 4000 --mini-batch 256 --maxi-batch 100 --max-length 100 \
  --valid-sets "$data/dev.en" "$data/dev.de" --valid-metrics ce-mean-words perplexity bleu chrf \
  --valid-freq 500 --save-freq 500 --disp-freq 50 --early-stopping 10 --keep-best \
  --beam-size 4 --normalize 1 --seed 1111 --cpu-threads "${MT_THREADS:-2}" "$@"
