#!/usr/bin/env bash
# tune_cli.sh: `mtpe tune` (issue 31) on the transformer-tiny fixture.
#   bash tune_cli.sh <path-to-mtpe> <source-dir>
# The store's confirmed segments come from a translated PO file of the
# fixture's 60 sentence pairs, opened once in the editor (--script), which
# imports its translated entries as confirmed.  Checks:
#   - fewer segments than --min-segments: refused with a message naming
#     both counts, exit 1, no folder;
#   - a run: the folder (model.npz, vocab.spm, decoder.yml, tune.json,
#     README.md, train.log, data/), no temporary folder left, the run "done"
#     in `tune --runs`;
#   - the held-out pairs are never trained on: the digest of every row of
#     every training batch (MTPE_TRAIN_BATCH_HASHES, written by `mtpe
#     train`) is compared with the digests tune wrote for its held-out and
#     training pairs: no held-out digest in a batch, and every training
#     digest in one (so that the digests agree and the check can fail);
#   - the tuned model loads with `mtpe translate -c DIR/decoder.yml`, and
#     its n-best scores (F0, normalize 0) equal what `mtpe score` gives the
#     same pairs with the tuned model (lines whose pieces re-encode the same);
#   - kill -9 of `mtpe tune` at 20 points spread over a run: the base model
#     is unchanged and translates, no training process is left, and the next
#     `tune --runs` marks the interrupted run failed and removes its
#     temporary folder (a run killed before its row existed leaves the
#     folder to the next tune of the same DIR, which must succeed).
mtpe=$(realpath "${1:?usage: tune_cli.sh MTPE SRCDIR}")
src=$(realpath "${2:?usage: tune_cli.sh MTPE SRCDIR}")
. "$src/tests/cli_common.bash"
D=$src/tests/data/marian/transformer-tiny
V=$D/vocab.spm
cd "$tmp" || exit 1
[ -n "${KEEP:-}" ] && trap - EXIT && echo "tmp $tmp"

# a translated PO file of the fixture's pairs
{
    printf 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n"Language: de\\n"\n\n'
    paste "$D/input.en" "$D/ref.de" | awk -F'\t' '
        function q(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return s }
        $1 != "" && $2 != "" && !seen[$1]++ { printf "msgid \"%s\"\nmsgstr \"%s\"\n\n", q($1), q($2) }'
} >tiny.po
n_po=$(grep -c '^msgid "[^"]' tiny.po)
printf 'keys : q Enter\n' >quit.txt
"$mtpe" edit tiny.po --db s.db --script quit.txt -m "$D/model.npz" -v "$V" "$V" >/dev/null 2>err ||
    fail "edit (import): $(tail -2 err)"

# too few segments
"$mtpe" tune --db s.db -m "$D/model.npz" -v "$V" "$V" -o few --min-segments 1000 2>err
rc=$?
[ $rc -eq 1 ] || fail "too few segments: exit $rc, not 1"
grep -q "$n_po confirmed segments" err && grep -q "at least 1000" err ||
    fail "too few segments: message: $(cat err)"
[ -e few ] || [ -e few.tune-tmp ] && fail "too few segments: a folder was made"

# segments imported with `mtpe tm import` are tuning data too
paste "$D/input.en" "$D/ref.de" >pairs.tsv
"$mtpe" tm import pairs.tsv --db tm.db >/dev/null 2>err || fail "tm import: $(cat err)"
"$mtpe" tune --db tm.db -m "$D/model.npz" -v "$V" "$V" -o few2 --min-segments 1000 2>err
grep -q "$(grep -c $'[^\t]\t[^\t]' pairs.tsv) confirmed segments" err ||
    fail "tm import + tune: $(cat err)"

# a run
common=(--db s.db -m "$D/model.npz" -v "$V" "$V" --no-replay --dev "$D/input.en" "$D/ref.de"
        --dev-size 20 --heldout 0.2 --min-segments 20 -e 3 --max-seconds 0 --cpu-threads 1
        --precision float32 --quiet)
MTPE_TRAIN_BATCH_HASHES=$tmp/batches "$mtpe" tune "${common[@]}" -o t1 2>err ||
    fail "tune: $(tail -3 err)"
for f in model.npz vocab.spm decoder.yml tune.json README.md train.log data/heldout.src \
    data/heldout.hashes data/adapt.hashes data/train.src; do
    [ -s "t1/$f" ] || fail "t1/$f is missing or empty"
done
[ -e t1.tune-tmp ] && fail "the temporary folder was left"
grep -q '"accepted"' t1/tune.json || fail "tune.json has no verdict"
"$mtpe" tune --runs --db s.db >runs 2>err || fail "tune --runs: $(cat err)"
[ "$(grep -c $'\tdone\t' runs)" = 1 ] || fail "tune --runs: $(cat runs)"

# held-out never trained on
sort -u batches >b.sorted
n_held=$(wc -l <t1/data/heldout.hashes)
n_adapt=$(sort -u t1/data/adapt.hashes | wc -l)
[ "$n_held" -ge 5 ] || fail "only $n_held held-out pairs"
[ "$(sort -u t1/data/heldout.hashes | comm -12 - b.sorted | wc -l)" = 0 ] ||
    fail "held-out pairs were in training batches"
[ "$(sort -u t1/data/adapt.hashes | comm -12 - b.sorted | wc -l)" = "$n_adapt" ] ||
    fail "training pairs missing from the batches ($(sort -u t1/data/adapt.hashes | comm -23 - b.sorted | wc -l) of $n_adapt): the digests do not agree"
# and the held-out sources are not in the training file
[ "$(sort -u t1/data/heldout.src | comm -12 - <(sort -u t1/data/train.src) | wc -l)" = 0 ] ||
    fail "a held-out source is in the training file"

# the tuned model in translate, and its scores in score
head -20 "$D/input.en" >in.en
"$mtpe" translate -c t1/decoder.yml -b 4 -n 0 --n-best -i in.en -o nbest --quiet 2>err ||
    fail "translate -c t1/decoder.yml: $(tail -2 err)"
"$mtpe" score -m t1/model.npz -v "$V" "$V" --n-best --n-best-feature CHK -t in.en nbest \
    --quiet >rescored 2>err || fail "score --n-best: $(tail -2 err)"
# (scoring re-encodes the text and appends EOS: hypotheses cut at the
# length limit, and those whose pieces re-encode differently, cannot agree;
# the tiny model produces many such, so a third of the lines must agree to
# 1e-3, which a decoder.yml naming another model would not give)
agreeing() {
    awk -F' [|][|][|] ' '{
        f0 = $3; sub(/.*F0= /, "", f0); sub(/ .*/, "", f0)
        c = $3; sub(/.*CHK= /, "", c); sub(/ .*/, "", c)
        d = f0 - c; if (d < 0) d = -d; if (d < 1e-3) same++
    } END { print same + 0 }' "$1"
}
n_lines=$(wc -l <rescored)
same=$(agreeing rescored)
[ "$n_lines" -gt 0 ] && [ "$same" -ge $((n_lines / 3)) ] ||
    fail "translate F0 and score disagree: $same of $n_lines lines agree"
# the check tells the models apart: the base model's scores of the same pairs
"$mtpe" score -m "$D/model.npz" -v "$V" "$V" --n-best --n-best-feature CHK -t in.en nbest \
    --quiet >base_rescored 2>/dev/null || fail "score with the base model failed"
base_same=$(agreeing base_rescored)
[ "$base_same" -lt "$same" ] || fail "the base model's scores agree as well ($base_same lines)"
if cmp -s t1/model.npz "$D/model.npz"; then fail "the tuned model is the base model"; fi

# APE triplets: confirm the MT of one segment as it is and type over the
# next, then export (source, MT shown, final)
printf 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\nmsgid "%s"\nmsgstr ""\n\nmsgid "%s"\nmsgstr ""\n' \
    "Your default notebook:" "Action" >new.po
printf 'wait-mt\nkeys Enter\nwait-mt\ntype Aktion\nkeys C-k Enter\nwait\nkeys C-a : s t a t s Enter\nkeys C-a : q Enter\n' >ape.txt
"$mtpe" edit new.po --db s.db --script ape.txt -m "$D/model.npz" -v "$V" "$V" >ape.out 2>err ||
    fail "edit (APE triplets): $(tail -2 err)"
"$mtpe" corpus export --db s.db --document new.po --triplets tri.tsv 2>err ||
    fail "corpus export --triplets: $(cat err)"
[ "$(wc -l <tri.tsv)" = 2 ] || fail "triplets: $(wc -l <tri.tsv) lines, not 2: $(cat tri.tsv)"
awk -F'\t' 'NR == 1 && !(NF == 3 && $1 == "Your default notebook:" && $2 != "" && $3 == $2) { exit 1 }
             NR == 2 && !(NF == 3 && $1 == "Action" && $3 == "Aktion" && $2 != "") { exit 1 }' \
    tri.tsv || fail "triplets: $(cat tri.tsv)"

# :stats of that document: both confirmed, HTER over both (the MT of the
# first confirmed as it was: its edits are those of the second alone)
grep -q "^status stats: 2/2 confirmed" ape.out && grep -q "HTER [0-9.]*% over 2 segments with MT" ape.out ||
    fail ":stats: $(grep 'status stats' ape.out)"

# kill -9 at 20 points of a run
sum0=$(sha256sum "$D/model.npz" | cut -d' ' -f1)
start=$(date +%s.%N)
"$mtpe" tune "${common[@]}" -o tfull 2>/dev/null || fail "full run: failed"
full=$(echo "$start $(date +%s.%N)" | awk '{ print $2 - $1 }')
for i in $(seq 1 20); do
    delay=$(awk -v f="$full" -v i="$i" 'BEGIN { printf "%.3f", f * (i - 0.5) / 20 }')
    "$mtpe" tune "${common[@]}" -o "k$i" >/dev/null 2>&1 &
    pid=$!
    sleep "$delay"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    sleep 0.3
    pgrep -f "k$i.tune-tmp" >/dev/null && fail "kill $i: a training process was left running"
    [ "$(sha256sum "$D/model.npz" | cut -d' ' -f1)" = "$sum0" ] || fail "kill $i: base model changed"
    "$mtpe" tune --runs --db s.db >runs 2>/dev/null || fail "kill $i: tune --runs failed"
    grep -q $'\trunning\t' runs && fail "kill $i: a run is still marked running"
    # a run killed after it made its folder but before the store had its row
    # leaves the folder to the next tune of the same DIR, which replaces it
    if [ -e "k$i.tune-tmp" ]; then
        if grep -qF "k$i.tune-tmp" runs; then
            fail "kill $i: the temporary folder of a recorded run was not removed"
        else
            "$mtpe" tune "${common[@]}" -o "k$i" 2>err || fail "kill $i: rerun: $(tail -2 err)"
            [ -e "k$i.tune-tmp" ] && fail "kill $i: the rerun left the temporary folder"
        fi
    fi
done
# kills before a run recorded its row (loading, on a busy machine a larger
# share of the run) leave no row to mark: half of the 20 must have one
n_failed=$(grep -c $'\tfailed\t' runs)
[ "$n_failed" -ge 10 ] || fail "only $n_failed of 20 killed runs marked failed: $(cut -f1-3 runs)"
echo "the fixture" | "$mtpe" translate -m "$D/model.npz" -v "$V" "$V" --quiet >/dev/null 2>err ||
    fail "the base model no longer translates: $(cat err)"
cli_finish tune_cli "$n_po segments; $n_held held out; translate/score agree on $same of $n_lines lines (base model: $base_same); full run ${full}s; $n_failed of 20 kills marked failed"
