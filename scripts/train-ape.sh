#!/usr/bin/env bash
# Recipe of the English-German APE model shipped in assets/models/en-de-ape/
# (issue 34): a multi-source transformer {source, MT} -> post-edit, Marian's
# `multi-transformer` (two encoders, a decoder attending to both), its
# encoders and decoder initialised from the default model
# (--pretrained-model), trained on the triplets of scripts/make-ape-data.sh;
# then it writes decoder.yml and a README (data, recipe, scores from
# scripts/bench-ape.sh) into the model folder.  Re-running continues from the
# checkpoint in WORK_DIR.
#
#   usage: scripts/train-ape.sh [--data DIR] [--work DIR] [--out DIR]
#                               [--base DIR] [--no-bench] [-- extra mtpe train options]
#   --data DIR   triplets: DIR/{train,dev}.{src,mt,pe} (default build/ape-data;
#                scripts/make-ape-data.sh makes them)
#   --work DIR   checkpoints (default build/ape-model)
#   --out DIR    the model folder (default assets/models/en-de-ape)
#   --base DIR   the model it starts from: DIR/model.npz, DIR/vocab.spm
#                (default assets/models/en-de); the architecture options below
#                are the default model's (scripts/train-default-model.sh)
#   --no-bench   do not run scripts/bench-ape.sh for the README's scores
#   --bench-lines N   score on the first N test lines only (a quick check)
#   --package-only    no training: make the model folder from the checkpoint
#                     in WORK_DIR (model.npz or its best-bleu copy, and
#                     WORK_DIR/vocab.spm)
# Environment: MTPE (the mtpe binary), MT_THREADS (default 2), NICE.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mtpe=${MTPE:-$here/build/mtpe}
nice_cmd=${NICE-nice -n 10}
data=$here/build/ape-data work=$here/build/ape-model out=$here/assets/models/en-de-ape
base=$here/assets/models/en-de bench=1 bench_lines=0 train=1
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --data) data=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --no-bench) bench=0; shift ;;
    --bench-lines) bench_lines=$2; shift 2 ;;
    --package-only) train=0; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "train-ape.sh: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
[ -x "$mtpe" ] || { echo "build mtpe first (cmake --build build --target mtpe)" >&2; exit 1; }
for f in train.src train.mt train.pe dev.src dev.mt dev.pe; do
  [ -f "$data/$f" ] || { echo "missing $data/$f (scripts/make-ape-data.sh)" >&2; exit 1; }
done
for f in model.npz vocab.spm; do
  [ -f "$base/$f" ] || { echo "missing $base/$f" >&2; exit 1; }
done
mkdir -p "$work" "$out"
[ -f "$work/vocab.spm" ] || cp "$base/vocab.spm" "$work/vocab.spm"
v=$work/vocab.spm
recipe=(--type multi-transformer --model "$work/model.npz"
  --pretrained-model "$base/model.npz"
  --train-sets "$data/train.src" "$data/train.mt" "$data/train.pe"
  --vocabs "$v" "$v" "$v" --dim-vocabs 8000 8000 8000
  --dim-emb 256 --enc-depth 6 --dec-depth 2 --transformer-heads 8
  --transformer-dim-ffn 1024 --transformer-ffn-activation relu
  --transformer-preprocess n --transformer-postprocess da
  --transformer-postprocess-top n --tied-embeddings-all
  --label-smoothing 0.1 --cost-type ce-mean-words
  --learn-rate 0.0003 --lr-warmup 500 --lr-decay-inv-sqrt 500
  --optimizer-params 0.9 0.98 1e-9 --clip-norm 5 --exponential-smoothing 1e-4
  --mini-batch-words 3000 --mini-batch 128 --maxi-batch 100 --max-length 100
  --valid-sets "$data/dev.src" "$data/dev.mt" "$data/dev.pe"
  --valid-metrics ce-mean-words perplexity bleu chrf
  --valid-freq 500 --save-freq 500 --disp-freq 50 --early-stopping 5 --keep-best
  --beam-size 4 --normalize 1 --seed 1111 --cpu-threads "${MT_THREADS:-2}")
if [ "$train" = 1 ]; then
  echo "mtpe train ${recipe[*]} ${extra[*]}" >"$work/recipe.txt"
  $nice_cmd "$mtpe" train "${recipe[@]}" "${extra[@]}"
fi
[ -f "$work/recipe.txt" ] || echo "(not trained by this script: $work/model.npz)" >"$work/recipe.txt"

# the model folder: the best checkpoint by BLEU when kept, else the last
best=$work/model.npz.best-bleu.npz
[ -f "$best" ] || best=$work/model.npz
cp "$best" "$out/model.npz.tmp" && mv "$out/model.npz.tmp" "$out/model.npz"
cp "$v" "$out/vocab.spm"
cat >"$out/decoder.yml" <<YML
# The APE model: mtpe postedit -c assets/models/en-de-ape/decoder.yml,
# mtpe translate --ape assets/models/en-de-ape, mtpe edit --ape assets/models/en-de-ape
relative-paths: true
models:
  - model.npz
vocabs:
  - vocab.spm
  - vocab.spm
  - vocab.spm
beam-size: 4
normalize: 1
word-penalty: 0
mini-batch: 32
maxi-batch: 100
maxi-batch-sort: src
YML
scores="(not measured: scripts/bench-ape.sh prints them)"
if [ "$bench" = 1 ]; then
  scores=$("$here/scripts/bench-ape.sh" --ape-dir "$out" --model-dir "$base" \
    --lines "$bench_lines" "$work/bench")
fi
{
  echo "# en-de-ape: automatic post-editing of the default model's MT"
  echo
  echo "A multi-source transformer (Marian's \`multi-transformer\`): source (en) and machine"
  echo "translation (de) -> post-edited translation (de). Made by \`scripts/train-ape.sh\`"
  echo "on \`$(date -u +%Y-%m-%d)\`; its encoders and decoder start from the default model"
  echo "(\`$base/model.npz\`)."
  echo
  echo "## Data (scripts/make-ape-data.sh)"
  echo
  if [ -f "$data/stats.txt" ]; then sed 's/^/    /' "$data/stats.txt"; else echo "    $data"; fi
  echo
  echo "## Recipe"
  echo
  echo "    $(cat "$work/recipe.txt")"
  echo
  echo "## Scores (scripts/bench-ape.sh: ../shared/data/en-de/test)"
  echo
  echo "$scores"
  echo
  echo "## Use"
  echo
  echo "    mtpe postedit -c assets/models/en-de-ape/decoder.yml -i SRC MT"
  echo "    mtpe translate --ape assets/models/en-de-ape < input.en"
  echo "    mtpe edit FILE.po --ape assets/models/en-de-ape"
} >"$out/README.md"
# paths of the project relative to its root
sed -i "s|$here/||g" "$out/README.md"
echo "written: $out (model.npz, vocab.spm, decoder.yml, README.md)"
