#!/usr/bin/env bash
# ape_scripts_cli.sh: the APE recipe scripts run end to end with the test
# fixtures (tests/data/marian: transformer-tiny as the MT model, the
# multi-transformer as the APE model; their numbers mean nothing, the
# plumbing is what is checked) on the project's corpus (../shared/data/en-de,
# exit 77 without it).
#   bash ape_scripts_cli.sh <path-to-mtpe> <source-dir>
# scripts/make-ape-data.sh: line-aligned triplet files, the store's triplets
# appended (a store made by the editor: one confirmed segment), dev and test
# from the corpus's splits.  scripts/bench-ape.sh: its table's BLEU/chrF equal
# `mtpe eval` on the outputs it keeps, the APE output equals `mtpe translate
# --ape` with the same models, and its line counts equal counts made here.
# scripts/train-ape.sh --package-only: the model folder (model, vocabulary,
# decoder.yml, README with data and scores) from a checkpoint, usable by
# postedit -c and translate --ape.
mtpe=$(realpath "${1:?usage: ape_scripts_cli.sh MTPE SRCDIR}")
src=$(realpath "${2:?usage: ape_scripts_cli.sh MTPE SRCDIR}")
. "$src/tests/cli_common.bash"
data=$src/../shared/data/en-de
for f in train.en train.de dev.en dev.de test.en test.de; do
    [ -f "$data/$f" ] || { echo "no corpus at $data: skipped"; exit 77; }
done
tiny=$src/tests/data/marian/transformer-tiny
fx=$src/tests/data/marian/multi-transformer
export MTPE=$mtpe NICE=""

# ---- make-ape-data.sh, with a store holding one confirmed segment
cd "$tmp" || exit 1
printf 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\nmsgid "%s"\nmsgstr ""\n' \
    "Open the file" >doc.po
printf 'wait-mt\ntype Die Datei öffnen\nkeys C-k Enter\nwait\nkeys C-a : q Enter\n' >keys.txt
"$mtpe" edit doc.po --db s.db --script keys.txt -m "$tiny/model.npz" -v "$tiny/vocab.spm" \
    "$tiny/vocab.spm" >/dev/null 2>err || fail "edit (a confirmed segment): $(tail -2 err)"
"$src/scripts/make-ape-data.sh" --lines 30 --dev-lines 8 --test-lines 6 --model-dir "$tiny" \
    --db s.db --db-repeat 2 "$tmp/data" >make.out 2>make.err ||
    fail "make-ape-data.sh: exit $? ($(tail -3 make.err))"
for s in train dev test; do
    for k in src mt pe; do
        [ -f "data/$s.$k" ] || fail "make-ape-data.sh: no data/$s.$k"
    done
    n=$(wc -l <"data/$s.src")
    [ "$(wc -l <"data/$s.mt")" = "$n" ] && [ "$(wc -l <"data/$s.pe")" = "$n" ] ||
        fail "make-ape-data.sh: $s files are not line-aligned"
done
# 30 sampled (minus empty MT) + the store's triplet twice
[ "$(grep -cx "Open the file" data/train.src)" = 2 ] &&
    [ "$(grep -cx "Die Datei öffnen" data/train.pe)" = 2 ] ||
    fail "make-ape-data.sh: the store's triplet is not in the training set twice"
n=$(wc -l <data/train.src)
[ "$n" -ge 25 ] && [ "$n" -le 32 ] || fail "make-ape-data.sh: $n training triplets (30 sampled + 2)"
# each sampled pair is a pair of the corpus, and its MT is the model's translation
head -n 3 data/train.src >s3.en
"$mtpe" translate -m "$tiny/model.npz" -v "$tiny/vocab.spm" "$tiny/vocab.spm" -b 4 -n 1 --quiet \
    -i s3.en >s3.mt
cmp -s s3.mt <(head -n 3 data/train.mt) || fail "make-ape-data.sh: the MT is not the model's"
paste data/train.src data/train.pe | head -n 3 | while IFS=$'\t' read -r e _; do
    grep -qxF "$e" "$data/train.en" || { echo "FAIL: sampled source not in train.en: $e"; exit 1; }
done || fail "make-ape-data.sh: sampled pairs"
# test: the first 6 pairs of the test split (those with an empty side dropped)
head -n 6 "$data/test.de" >ref6.de
[ "$(wc -l <data/test.pe)" -ge 5 ] && [ "$(grep -cvxFf ref6.de data/test.pe)" = 0 ] ||
    fail "make-ape-data.sh: test.pe is not the first lines of test.de"
grep -q "^train: " data/stats.txt || fail "make-ape-data.sh: no stats.txt"
# the same again gives the same sample
"$src/scripts/make-ape-data.sh" --lines 30 --dev-lines 8 --test-lines 6 --model-dir "$tiny" \
    "$tmp/data2" >/dev/null 2>&1 || fail "make-ape-data.sh (again): exit $?"
cmp -s <(head -n 20 data/train.src) <(head -n 20 data2/train.src) ||
    fail "make-ape-data.sh: the sample is not reproducible"

# ---- bench-ape.sh with the fixtures
"$src/scripts/bench-ape.sh" --lines 25 --ape-dir "$fx" --model-dir "$tiny" "$tmp/bench" \
    >bench.out 2>bench.err || fail "bench-ape.sh: exit $? ($(tail -3 bench.err))"
cat bench.out
b=$tmp/bench
for f in mt.de ape.de ref.de src.en; do [ -f "$b/$f" ] || fail "bench-ape.sh: no $f kept"; done
[ "$(wc -l <"$b/ape.de")" = 25 ] || fail "bench-ape.sh: ape.de has $(wc -l <"$b/ape.de") lines"
row() { grep -F "| $1" bench.out | head -n 1; }
val() { "$mtpe" eval -r "$b/ref.de" -i "$1" | awk -v m="$2" 'index($1, m "|") == 1 { print $3 }'; }
[ "$(row 'MT (' | awk -F'|' '{ gsub(/ /, "", $3); print $3 }')" = "$(val "$b/mt.de" BLEU)" ] ||
    fail "bench-ape.sh: the MT's BLEU is not mtpe eval's"
[ "$(row 'APE(MT)' | awk -F'|' '{ gsub(/ /, "", $4); print $4 }')" = "$(val "$b/ape.de" chrF2)" ] ||
    fail "bench-ape.sh: the APE's chrF is not mtpe eval's"
# APE(MT) is translate --ape with the same models (a folder with the fixture's files)
mkdir -p apedir && ln -sf "$fx/model.npz" apedir/model.npz && ln -sf "$fx/vocab.spm" apedir/vocab.spm
"$mtpe" translate -m "$tiny/model.npz" -v "$tiny/vocab.spm" "$tiny/vocab.spm" -b 4 -n 1 \
    --mini-batch 32 --maxi-batch 100 --maxi-batch-sort src --quiet --ape apedir \
    -i "$b/src.en" >ape.direct 2>/dev/null
# (translate --ape gives the APE stage the command line's -b 4 -n 1 too)
cmp -s ape.direct "$b/ape.de" || fail "bench-ape.sh: APE output differs from translate --ape"
changed=$(paste "$b/mt.de" "$b/ape.de" | awk -F'\t' '$1 != $2' | wc -l)
eq=$(paste "$b/mt.de" "$b/ref.de" | awk -F'\t' '$1 == $2' | wc -l)
row 'lines APE changed' | grep -qF "| $changed of 25 |" ||
    fail "bench-ape.sh: changed lines: $(row 'lines APE changed'), counted $changed"
row 'test lines whose MT equals' | grep -qF "| $eq of 25 |" ||
    fail "bench-ape.sh: MT = reference lines: $(row 'test lines whose MT'), counted $eq"
grep -q "BLEU gain of APE over MT" bench.out && grep -q "left unchanged by APE" bench.out ||
    fail "bench-ape.sh: the checks table is missing"

# lines whose MT equals the reference: a test set whose reference is the MT
# on its last 15 lines (and the ones APE leaves alone among them, counted here)
mkdir -p fake
cp "$b/src.en" fake/test.en
{ head -n 10 "$b/ref.de"; tail -n 15 "$b/mt.de"; } >fake/test.de
MT_DATA=$tmp/fake "$src/scripts/bench-ape.sh" --ape-dir "$fx" --model-dir "$tiny" "$tmp/bench2" \
    >bench2.out 2>/dev/null || fail "bench-ape.sh (MT = reference): exit $?"
kept=$(paste "$tmp/bench2/mt.de" "$tmp/bench2/ape.de" fake/test.de |
    awk -F'\t' '$1 == $3 && $2 == $1' | wc -l)
grep -F "| test lines whose MT equals" bench2.out | grep -qF "| 15 of 25 |" ||
    fail "bench-ape.sh: MT = reference lines: $(grep -F 'MT equals' bench2.out)"
grep -F "left unchanged by APE" bench2.out | grep -qF "| $kept of 15 (" ||
    fail "bench-ape.sh: unchanged: $(grep -F 'left unchanged' bench2.out), counted $kept of 15"

# ---- train-ape.sh --package-only: the model folder from a checkpoint (the
# fixture APE model and its vocabulary stand for a trained one)
mkdir -p work
cp "$fx/model.npz" "$fx/vocab.spm" work/
"$src/scripts/train-ape.sh" --package-only --data "$tmp/data" --work "$tmp/work" --out "$tmp/out" \
    --base "$tiny" --bench-lines 10 >pkg.out 2>pkg.err || fail "train-ape.sh --package-only: exit $? ($(tail -3 pkg.err))"
for f in model.npz vocab.spm decoder.yml README.md; do
    [ -f "out/$f" ] || fail "train-ape.sh: no out/$f"
done
cmp -s out/model.npz "$fx/model.npz" && cmp -s out/vocab.spm "$fx/vocab.spm" ||
    fail "train-ape.sh: the folder's model or vocabulary is not the checkpoint's"
grep -q "^    train: " out/README.md && grep -q "| APE(MT)" out/README.md &&
    grep -q "left unchanged by APE" out/README.md || fail "train-ape.sh: README without data or scores"
# the folder works as written: postedit -c, translate --ape
printf 'Open the file\tDatei öffnen\n' | "$mtpe" postedit -c out/decoder.yml --quiet >pe.out 2>pe.err &&
    [ "$(wc -l <pe.out)" = 1 ] || fail "postedit -c out/decoder.yml: $(cat pe.err)"
echo "Open the file" | "$mtpe" translate -m "$tiny/model.npz" -v "$tiny/vocab.spm" "$tiny/vocab.spm" \
    --ape out --quiet >ta.out 2>ta.err && [ "$(wc -l <ta.out)" = 1 ] ||
    fail "translate --ape out: $(cat ta.err)"

cli_finish ape_scripts_cli "make-ape-data.sh, bench-ape.sh, train-ape.sh --package-only: all checks passed"
