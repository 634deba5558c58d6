#!/usr/bin/env bash
# Recipe of the German GEC model assets/models/de-gec: a transformer trained by
# `mtpe train` on noisy -> clean German (scripts/make-gec-data.sh), with the
# default model's SentencePiece vocabulary (assets/models/en-de/vocab.spm, joint
# en+de), so that no new vocabulary is needed.  The architecture is the default
# model's student size (256-dim, 6 encoder and 2 decoder layers).  Re-running
# continues from the checkpoint.  Then it installs model.npz + vocab.spm into
# assets/models/de-gec and prints the held-out evaluation (scripts/bench-gec.sh).
#   usage: scripts/train-gec.sh [WORK_DIR] [extra mtpe train options]
#   (MT_THREADS: training threads, default 2; GEC_DATA: the data folder)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$here/build/gec-model}
shift || true
data=${GEC_DATA:-$here/build/gec-data}
mtpe=${MTPE:-$here/build/mtpe}
vocab=$here/assets/models/en-de/vocab.spm
[ -x "$mtpe" ] || { echo "build mtpe first (cmake --build build)"; exit 1; }
[ -f "$data/train.noisy" ] || "$here/scripts/make-gec-data.sh" "$data"
mkdir -p "$work"
"$mtpe" train \
  --type transformer --model "$work/model.npz" \
  --train-sets "$data/train.noisy" "$data/train.clean" \
  --vocabs "$vocab" "$vocab" \
  --dim-emb 256 --enc-depth 6 --dec-depth 2 --transformer-heads 8 \
  --transformer-dim-ffn 1024 --transformer-ffn-activation relu \
  --transformer-preprocess n --transformer-postprocess da \
  --transformer-postprocess-top n --tied-embeddings-all \
  --label-smoothing 0.1 --cost-type ce-mean-words \
  --learn-rate 0.0007 --lr-warmup 1000 --lr-decay-inv-sqrt 1000 \
  --optimizer-params 0.9 0.98 1e-9 --clip-norm 5 --exponential-smoothing 1e-4 \
  --mini-batch-words 4000 --mini-batch 256 --maxi-batch 100 --max-length 100 \
  --valid-sets "$data/dev.noisy" "$data/dev.clean" --valid-metrics ce-mean-words bleu \
  --valid-freq 1000 --save-freq 1000 --disp-freq 100 --early-stopping 5 --keep-best \
  --beam-size 4 --normalize 1 --seed 1111 --cpu-threads "${MT_THREADS:-2}" "$@"
dest=$here/assets/models/de-gec
mkdir -p "$dest"
best=$work/model.npz.best-bleu.npz
[ -f "$best" ] || best=$work/model.npz
cp "$best" "$dest/model.npz"
cp "$vocab" "$dest/vocab.spm"
echo "installed $dest/model.npz"
"$here/scripts/bench-gec.sh" "$dest" "$data"
