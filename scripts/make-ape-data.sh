#!/usr/bin/env bash
# APE training data (issue 34): synthetic (source, MT, reference) triplets made
# by the default model's own translations of a sample of the training corpus,
# plus the store's real ones (`mtpe corpus export --triplets`: source, the MT the
# editor showed, the translator's final text) when --db is given; and dev and
# test triplets from the corpus's dev and test splits.
#
#   usage: scripts/make-ape-data.sh [--lines N] [--db PATH] [--db-repeat K]
#                                   [--model-dir DIR] [--threads N] [OUT_DIR]
#   --lines N       training sample: N sentence pairs of train.en/train.de
#                   (default 100000), a fixed pseudo-random sample (shuf, random
#                   source `yes 1111`)
#   --db PATH       add the store's triplets to the training set, K times
#                   (--db-repeat, default 1: real post-edits are few)
#   --model-dir D   the MT model (D/model.npz, D/vocab.spm; default the shipped
#                   assets/models/en-de), decoded at beam 4, normalize 1 as
#                   assets/models/en-de/decoder.yml says
#   --dev-lines N, --test-lines N   only the first N lines (default: all)
#   OUT_DIR         default build/ape-data
# Writes OUT_DIR/{train,dev,test}.{src,mt,pe} (line-aligned; lines where any
# of the three is empty are dropped) and OUT_DIR/stats.txt.
# Environment: MT_DATA (corpus folder, default ../shared/data/en-de), MTPE (the
# mtpe binary), NICE (default "nice -n 10").
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data=${MT_DATA:-$here/../shared/data/en-de}
mtpe=${MTPE:-$here/build/mtpe}
nice_cmd=${NICE-nice -n 10}
lines=100000 db="" repeat=1 threads=2 model_dir=$here/assets/models/en-de
dev_lines=0 test_lines=0
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --lines) lines=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    --db-repeat) repeat=$2; shift 2 ;;
    --model-dir) model_dir=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --dev-lines) dev_lines=$2; shift 2 ;;
    --test-lines) test_lines=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "make-ape-data.sh: unknown option $1 (--help)" >&2; exit 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
out=${args[0]:-$here/build/ape-data}
[ -x "$mtpe" ] || { echo "build mtpe first (cmake --build build --target mtpe)" >&2; exit 1; }
for f in "$data/train.en" "$data/train.de" "$data/dev.en" "$data/dev.de" "$data/test.en" \
         "$data/test.de" "$model_dir/model.npz" "$model_dir/vocab.spm"; do
  [ -f "$f" ] || { echo "missing $f" >&2; exit 1; }
done
[ -z "$db" ] || [ -f "$db" ] || { echo "no store at $db" >&2; exit 1; }
mkdir -p "$out"
v=$model_dir/vocab.spm
translate() { # IN OUT
  $nice_cmd "$mtpe" translate -m "$model_dir/model.npz" -v "$v" "$v" -b 4 -n 1 \
    --mini-batch 32 --maxi-batch 100 --maxi-batch-sort src --cpu-threads "$threads" \
    --quiet -i "$1" -o "$2"
}
# keep SPLIT: drops triplets with an empty side, writes SPLIT.{src,mt,pe}
keep() {
  paste "$out/$1.src.all" "$out/$1.mt.all" "$out/$1.pe.all" |
    awk -F'\t' -v o="$out/$1" 'NF == 3 && $1 != "" && $2 != "" && $3 != "" {
        print $1 > (o ".src"); print $2 > (o ".mt"); print $3 > (o ".pe") }'
  rm -f "$out/$1.src.all" "$out/$1.mt.all" "$out/$1.pe.all"
}

# training sample: a fixed pseudo-random choice of line pairs
paste "$data/train.en" "$data/train.de" |
  shuf -n "$lines" --random-source=<(yes 1111) >"$out/sample.tsv"
cut -f1 "$out/sample.tsv" >"$out/train.src.all"
cut -f2 "$out/sample.tsv" >"$out/train.pe.all"
rm -f "$out/sample.tsv"
echo "translating the training sample ($(wc -l <"$out/train.src.all") lines)" >&2
translate "$out/train.src.all" "$out/train.mt.all"
for split in dev test; do
  n=$dev_lines
  [ "$split" = test ] && n=$test_lines
  if [ "$n" -gt 0 ]; then
    head -n "$n" "$data/$split.en" >"$out/$split.src.all"
    head -n "$n" "$data/$split.de" >"$out/$split.pe.all"
  else
    cp "$data/$split.en" "$out/$split.src.all"
    cp "$data/$split.de" "$out/$split.pe.all"
  fi
  echo "translating $split ($(wc -l <"$out/$split.src.all") lines)" >&2
  translate "$out/$split.src.all" "$out/$split.mt.all"
done
store_rows=0
if [ -n "$db" ]; then
  "$mtpe" corpus export --db "$db" --triplets "$out/store.tsv"
  store_rows=$(wc -l <"$out/store.tsv")
  for _ in $(seq "$repeat"); do
    cut -f1 "$out/store.tsv" >>"$out/train.src.all"
    cut -f2 "$out/store.tsv" >>"$out/train.mt.all"
    cut -f3 "$out/store.tsv" >>"$out/train.pe.all"
  done
fi
for split in train dev test; do keep "$split"; done
{
  echo "model: $model_dir/model.npz (beam 4, normalize 1)"
  echo "corpus: $data"
  echo "train: $(wc -l <"$out/train.src") triplets ($lines sampled; store: $store_rows x $repeat)"
  echo "dev: $(wc -l <"$out/dev.src") triplets; test: $(wc -l <"$out/test.src") triplets"
  echo "MT = reference: train $(paste -d'\t' "$out/train.mt" "$out/train.pe" | awk -F'\t' '$1 == $2' | wc -l), test $(paste -d'\t' "$out/test.mt" "$out/test.pe" | awk -F'\t' '$1 == $2' | wc -l)"
} | tee "$out/stats.txt"
