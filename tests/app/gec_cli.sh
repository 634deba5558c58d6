#!/usr/bin/env bash
# gec_cli.sh: `mtpe gec`, `mtpe gec noise` and `mtpe gec eval` end to end.
# A tiny GEC model is trained first (tests/gec_tiny.bash: "Dateii" -> "Datei",
# a few seconds).  Checks:
#   - mtpe gec -m DIR corrects "Die Dateii ist leer heute." to "Die Datei ist
#     leer heute.", leaves a correct line, keeps the line count, empty lines
#     and a placeholder; --fixes prints the byte range of the fix (4, 6);
#     --gec-threshold 1000 changes nothing (conservative); -m FILE -v and
#     -c CONFIG (relative paths) give the same output as -m DIR;
#   - invalid UTF-8: exit 1, one line naming the line, nothing on stdout;
#   - gec noise: same seed same output, another seed another; --pairs is
#     NOISY<TAB>CLEAN; an unknown --kinds is a usage error (2);
#   - the held-out generator: deterministic, protected tokens unchanged;
#   - gec eval on a hand-made example: tp 1 fp 2 fn 1, P 0.3333 R 0.5000
#     F0.5 0.3571, clean kept 1/2 (worked out by hand in test_gec.c).
# Usage: bash gec_cli.sh <path-to-mtpe> <source-dir>
set -u
MTPE=${1:?usage: gec_cli.sh MTPE SRC}
MTPE=$(cd "$(dirname "$MTPE")" && pwd)/$(basename "$MTPE")
src=${2:?usage: gec_cli.sh MTPE SRC}
. "$src/tests/cli_common.bash"
. "$src/tests/gec_tiny.bash"
export LC_ALL=C.UTF-8
gec_tiny_model "$MTPE" "$tmp/m" || { fail "training the tiny GEC model"; cli_finish gec_cli; }

printf 'Die Dateii ist leer heute.\n\nDer Ordner fehlt heute.\nDie Dateii %%s fehlt.\n' > "$tmp/in"
"$MTPE" gec -m "$tmp/m" < "$tmp/in" > "$tmp/out" 2> "$tmp/err" || fail "mtpe gec exit $?: $(cat "$tmp/err")"
[ "$(wc -l < "$tmp/out")" -eq 4 ] || fail "line count $(wc -l < "$tmp/out"), want 4"
[ "$(sed -n 1p "$tmp/out")" = "Die Datei ist leer heute." ] || fail "line 1: $(sed -n 1p "$tmp/out")"
[ -z "$(sed -n 2p "$tmp/out")" ] || fail "empty line 2 became: $(sed -n 2p "$tmp/out")"
[ "$(sed -n 3p "$tmp/out")" = "Der Ordner fehlt heute." ] || fail "correct line 3 changed: $(sed -n 3p "$tmp/out")"
grep -q '%s' <(sed -n 4p "$tmp/out") || fail "placeholder lost: $(sed -n 4p "$tmp/out")"
"$MTPE" gec -m "$tmp/m" --fixes < "$tmp/in" > "$tmp/fixes" || fail "--fixes exit"
grep -qP '^1\t4\t6\tDatei\t' "$tmp/fixes" || fail "--fixes: $(cat "$tmp/fixes")"
"$MTPE" gec -m "$tmp/m" --gec-threshold 1000 < "$tmp/in" > "$tmp/out2" || fail "threshold run"
cmp -s "$tmp/in" "$tmp/out2" || fail "--gec-threshold 1000 changed lines: $(diff "$tmp/in" "$tmp/out2")"
# the same with -m MODEL -v VOCABS
"$MTPE" gec -m "$tmp/m/model.npz" -v "$tmp/m/vocab.spm" "$tmp/m/vocab.spm" < "$tmp/in" > "$tmp/out3" ||
    fail "-m MODEL -v VOCAB exit"
cmp -s "$tmp/out" "$tmp/out3" || fail "-m FILE -v differs from -m DIR"
# and from a config with paths relative to it
printf 'relative-paths: true\nmodels:\n  - model.npz\nvocabs:\n  - vocab.spm\n  - vocab.spm\ngec-threshold: 2.0\n' \
    > "$tmp/m/gec.yml"
(cd / && "$MTPE" gec -c "$tmp/m/gec.yml" < "$tmp/in" > "$tmp/out4") || fail "-c CONFIG exit"
cmp -s "$tmp/out" "$tmp/out4" || fail "-c CONFIG differs from -m DIR"

# invalid UTF-8
printf 'Die Datei\nDie Dat\xc3\n' > "$tmp/bad"
"$MTPE" gec -m "$tmp/m" < "$tmp/bad" > "$tmp/bad.out" 2> "$tmp/bad.err"
rc=$?
[ $rc -eq 1 ] || fail "invalid UTF-8: exit $rc, want 1"
[ "$(wc -l < "$tmp/bad.err")" -eq 1 ] && grep -q 'stdin:2: invalid UTF-8' "$tmp/bad.err" ||
    fail "invalid UTF-8 message: $(cat "$tmp/bad.err")"
[ -s "$tmp/bad.out" ] && fail "invalid UTF-8: something was written to stdout"
"$MTPE" gec -m "$tmp/nope" < "$tmp/in" > /dev/null 2> "$tmp/nope.err" && fail "missing model accepted"
[ "$(wc -l < "$tmp/nope.err")" -eq 1 ] || fail "missing model: $(cat "$tmp/nope.err")"

# noise
head -200 "$src/tests/data/marian/transformer-tiny/ref.de" > "$tmp/clean"
"$MTPE" gec noise --seed 5 < "$tmp/clean" > "$tmp/n1" || fail "noise exit"
"$MTPE" gec noise --seed 5 < "$tmp/clean" > "$tmp/n2"
"$MTPE" gec noise --seed 6 < "$tmp/clean" > "$tmp/n3"
cmp -s "$tmp/n1" "$tmp/n2" || fail "noise: same seed, different output"
cmp -s "$tmp/n1" "$tmp/n3" && fail "noise: seeds 5 and 6 give the same output"
[ "$(wc -l < "$tmp/n1")" -eq "$(wc -l < "$tmp/clean")" ] || fail "noise: line count"
cmp -s "$tmp/n1" "$tmp/clean" && fail "noise changed nothing"
"$MTPE" gec noise --seed 5 --pairs < "$tmp/clean" | cut -f2 | cmp -s - "$tmp/clean" ||
    fail "--pairs: second column is not the clean text"
"$MTPE" gec noise --kinds bogus < "$tmp/clean" > /dev/null 2> "$tmp/k.err"
[ $? -eq 2 ] || fail "--kinds bogus: want exit 2"
printf 'ok\n\xff\n' | "$MTPE" gec noise > /dev/null 2> "$tmp/n.err" && fail "noise accepted invalid UTF-8"
grep -q 'invalid UTF-8' "$tmp/n.err" || fail "noise invalid UTF-8 message: $(cat "$tmp/n.err")"

# the held-out generator (scripts/gec-heldout-noise.py): deterministic, and
# placeholders, tags, entities, URLs and numbers come through unchanged
gen=$src/scripts/gec-heldout-noise.py
python3 "$gen" --seed 3 < "$tmp/clean" > "$tmp/h1" || fail "held-out generator exit"
python3 "$gen" --seed 3 < "$tmp/clean" > "$tmp/h2"
cmp -s "$tmp/h1" "$tmp/h2" || fail "held-out generator: same seed, different output"
cmp -s "$tmp/h1" "$tmp/clean" && fail "held-out generator changed nothing"
[ "$(wc -l < "$tmp/h1")" -eq "$(wc -l < "$tmp/clean")" ] || fail "held-out generator: line count"
for i in $(seq 60); do echo 'Die Datei %s wurde in {0} mit <b>sehr</b> &amp; https://x.org/a 42 das gespeichert'; done > "$tmp/p"
python3 "$gen" --clean 0 < "$tmp/p" > "$tmp/p.out"
n=$(grep -cP '(?<!\S)%s(?!\S).*(?<!\S)\{0\}(?!\S).*(?<!\S)<b>sehr</b>(?!\S).*(?<!\S)&amp;(?!\S).*(?<!\S)https://x\.org/a(?!\S).*(?<!\S)42(?!\S)' "$tmp/p.out")
[ "$n" -eq 60 ] || fail "held-out generator touched protected tokens in $((60 - n)) of 60 lines"
cmp -s "$tmp/p" "$tmp/p.out" && fail "held-out generator: --clean 0 changed nothing"

# eval, by hand (test_gec.c works the numbers out)
printf 'w1 w2 w3 w4 w5\na b\na b\n' > "$tmp/s"
printf 'w1 X w3 w4 Y\na b\na b\n' > "$tmp/r"
printf 'Z w2 w3 w4 Y\na c\na b\n' > "$tmp/h"
"$MTPE" gec eval -s "$tmp/s" -r "$tmp/r" -i "$tmp/h" > "$tmp/ev" || fail "eval exit"
grep -q '^edits: tp 1 fp 2 fn 1$' "$tmp/ev" || fail "eval counts: $(cat "$tmp/ev")"
grep -qE '^gec +0\.3333 +0\.5000 +0\.3571 +0\.5000 \(1/2\)$' "$tmp/ev" || fail "eval scores: $(cat "$tmp/ev")"
printf 'x\n' > "$tmp/short"
"$MTPE" gec eval -s "$tmp/s" -r "$tmp/r" -i "$tmp/short" > /dev/null 2>&1 && fail "eval: line counts differ, accepted"
cli_finish gec_cli
