#!/usr/bin/env bash
# terms_cli.sh: `mtpe translate --glossary` with the default model
# (assets/models/en-de): a glossary term found in a line is in its
# translation (a lexical constraint of the search), lines without a term
# translate as without the glossary, matching keeps word boundaries and
# ignores case, bad glossaries are one-line errors.
#   bash terms_cli.sh <path-to-mtpe> <source-dir>
mtpe=$(realpath "${1:?usage: terms_cli.sh MTPE SRCDIR}")
src=$(realpath "${2:?usage: terms_cli.sh MTPE SRCDIR}")
. "$src/tests/cli_common.bash"
if [ ! -s "$src/assets/models/en-de/model.npz" ]; then
    echo "terms_cli: skip (no default model)"
    exit 77
fi
cd "$tmp"
# Targets the model does not produce for these sources by itself (checked
# below without the glossary): Gebäude (it says Haus/Lagerhaus), and a
# two-word target.
printf 'house\tGebäude\tnote ignored\nred car\tPersonenkraftwagen rot\t\n' > g.tsv
printf 'The house is big.\nI like my red car.\nThe household is large.\nNothing here.\nTHE HOUSE IS BIG.\n' > in.txt
"$mtpe" translate -i in.txt -o base.txt --quiet 2>err0 || fail "translate without glossary: $(cat err0)"
"$mtpe" translate -i in.txt -o terms.txt --quiet --glossary g.tsv 2>err1 ||
    fail "translate with glossary: $(cat err1)"
line() { sed -n "$2p" "$1"; }
grep -q "Gebäude" base.txt && fail "the model says Gebäude by itself: pick another term"
grep -q "Personenkraftwagen rot" base.txt && fail "the model says the car term by itself"
case $(line terms.txt 1) in *Gebäude*) ;; *) fail "line 1 lacks Gebäude: $(line terms.txt 1)" ;; esac
case $(line terms.txt 2) in *"Personenkraftwagen rot"*) ;; *) fail "line 2 lacks the two-word term: $(line terms.txt 2)" ;; esac
# "household" is not "house"; line 4 has no term: as without the glossary
[ "$(line terms.txt 3)" = "$(line base.txt 3)" ] || fail "household matched house: $(line terms.txt 3)"
[ "$(line terms.txt 4)" = "$(line base.txt 4)" ] || fail "a line without terms changed"
case $(line terms.txt 5) in *Gebäude*) ;; *) fail "upper-case HOUSE not matched: $(line terms.txt 5)" ;; esac
# the limit per line: with --glossary-max 1 only the longer source term
printf 'house\tGebäude\nred car\tPersonenkraftwagen rot\n' > g2.tsv
echo "The red car is in the house." > in2.txt
"$mtpe" translate -i in2.txt -o max1.txt --quiet --glossary g2.tsv --glossary-max 1 2>/dev/null ||
    fail "--glossary-max 1"
grep -q "Personenkraftwagen rot" max1.txt || fail "--glossary-max 1 dropped the longer term: $(cat max1.txt)"
grep -q "Gebäude" max1.txt && fail "--glossary-max 1 enforced two terms: $(cat max1.txt)"
# overlapping source terms: "car" inside "red car" does not count, so the
# second place of --glossary-max 2 goes to "house"
printf 'house\tGebäude\ncar\tAutomobil\nred car\tPersonenkraftwagen rot\n' > g3.tsv
"$mtpe" translate -i in2.txt -o max2.txt --quiet --glossary g3.tsv --glossary-max 2 2>/dev/null ||
    fail "overlapping terms"
grep -q "Personenkraftwagen rot" max2.txt && grep -q "Gebäude" max2.txt ||
    fail "overlap: want the car and house terms: $(cat max2.txt)"
grep -q "Automobil" max2.txt && fail "overlap: car inside red car enforced: $(cat max2.txt)"
# bad glossaries: one line naming file and line, nothing written
printf 'house\tGebäude\nno tab here\n' > bad.tsv
if "$mtpe" translate -i in.txt -o out.txt --quiet --glossary bad.tsv 2>err; then
    fail "a line without TAB was accepted"
else
    grep -q "bad.tsv:2: 1 field" err || fail "bad line message: $(cat err)"
    [ "$(wc -l < err)" -eq 1 ] || fail "more than one error line: $(cat err)"
fi
printf 'house\t\n' > empty.tsv
"$mtpe" translate -i in.txt -o out.txt --quiet --glossary empty.tsv 2>err &&
    fail "an empty target was accepted"
grep -q "empty.tsv:1: empty target term" err || fail "empty target message: $(cat err)"
"$mtpe" translate -i in.txt -o out.txt --quiet --glossary missing.tsv 2>err &&
    fail "a missing glossary was accepted"
grep -q "missing.tsv" err || fail "missing file message: $(cat err)"
# the editor enforces the project glossary's terms in its MT (--glossary-max
# 0: not); the MT is confirmed as it stands (Enter) and read from the store
"$mtpe" glossary import --db ed.db g.tsv >/dev/null 2>&1 || fail "glossary import"
printf '%s\n' 'msgid ""' 'msgstr ""' '"Content-Type: text/plain; charset=UTF-8\n"' \
    '"Language: de\n"' '' 'msgid "The house is big."' 'msgstr ""' > doc.po
printf 'wait-mt\nkeys Enter\nkeys M-:\ntype q!\nkeys Enter\n' > s.txt
for max in 2 0; do
    cp ed.db "ed$max.db"
    "$mtpe" edit doc.po --db "ed$max.db" --qa off --glossary-max $max --script s.txt \
        >"ed$max.out" 2>"ed$max.err" || fail "editor (--glossary-max $max): $(cat "ed$max.err")"
    sqlite3 "ed$max.db" "SELECT text FROM confirmation" > "ed$max.txt"
done
grep -q "Gebäude" ed2.txt || fail "editor MT lacks the glossary term: $(cat ed2.txt)"
[ -s ed0.txt ] && ! grep -q "Gebäude" ed0.txt || fail "--glossary-max 0 still enforced: $(cat ed0.txt)"
cli_finish terms_cli
