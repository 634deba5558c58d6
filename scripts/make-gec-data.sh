#!/usr/bin/env bash
# Data of the German GEC model (assets/models/de-gec, scripts/train-gec.sh):
#   train.noisy / train.clean  N_TRAIN lines of train.de (shuffled by a fixed
#                              seed) with `mtpe gec noise` errors (seed 1)
#   dev.noisy / dev.clean      dev.de with `mtpe gec noise` (seed 2)
#   test.noisy / test.clean    test.de with the HELD-OUT generator
#                              (scripts/gec-heldout-noise.py: other kinds and
#                              rates, never used for training)
# Lines longer than 400 bytes are left out of train (as --max-length would).
#   usage: scripts/make-gec-data.sh [OUT_DIR] [N_TRAIN]    (default build/gec-data, 300000)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data=${MT_DATA:-$here/../shared/data/en-de}
out=${1:-$here/build/gec-data}
n=${2:-300000}
mtpe=${MTPE:-$here/build/mtpe}
[ -x "$mtpe" ] || { echo "build mtpe first (cmake --build build)"; exit 1; }
for f in train.de dev.de test.de; do
  [ -f "$data/$f" ] || { echo "missing $data/$f"; exit 1; }
done
mkdir -p "$out"
# a fixed pseudo-random sample: shuf with a seeded byte stream
awk 'length($0) > 0 && length($0) <= 400' "$data/train.de" |
  shuf -n "$n" --random-source=<(yes gec-sample) > "$out/train.clean"
"$mtpe" gec noise --seed 1 < "$out/train.clean" > "$out/train.noisy"
awk 'length($0) > 0' "$data/dev.de" > "$out/dev.clean"
"$mtpe" gec noise --seed 2 < "$out/dev.clean" > "$out/dev.noisy"
awk 'length($0) > 0' "$data/test.de" > "$out/test.clean"
python3 "$here/scripts/gec-heldout-noise.py" --seed 20261129 < "$out/test.clean" > "$out/test.noisy"
wc -l "$out"/*.clean "$out"/*.noisy
echo "noisy lines: train $(paste "$out/train.noisy" "$out/train.clean" | awk -F'\t' '$1 != $2' | wc -l)," \
     "test $(paste "$out/test.noisy" "$out/test.clean" | awk -F'\t' '$1 != $2' | wc -l)"
