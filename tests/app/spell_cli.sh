#!/usr/bin/env bash
# spell_cli.sh: spell checking of `mtpe edit` without a terminal (--script),
# through the app's wiring (app/edit/edit_spell.c) and the real de_DE
# dictionary: "Datie" typed, F7 then 1 puts "Datei" in the field (the status
# line says so and the store records the field as a typed edit); M-s then a
# adds "Frobnitz" to the personal dictionary (table spell_word, language
# de_DE); :spell add WORD adds another; a second F7 finds nothing left.
# A document in a language without a dictionary: F7 says so, no error.
#   bash spell_cli.sh <path-to-mtpe> <source-dir>
mtpe=$(realpath "${1:?usage: spell_cli.sh MTPE SRCDIR}")
src=$(realpath "${2:?usage: spell_cli.sh MTPE SRCDIR}")
[ -r /usr/share/hunspell/de_DE.dic ] || [ -n "${MTPE_DICPATH:-}" ] ||
    { echo "no de_DE hunspell dictionary: scripts/install-deps.sh installs hunspell-de-de" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "sqlite3 not found: skipped"; exit 77; }
. "$src/tests/cli_common.bash"

d="$src/tests/data/marian/transformer-tiny"
tiny=(-m "$d/model.npz" -v "$d/vocab.spm" "$d/vocab.spm" --qa off)
po() {
    printf '%s\n' 'msgid ""' 'msgstr ""' '"Content-Type: text/plain; charset=UTF-8\n"' \
        "\"Language: $1\\n\"" '' 'msgid "The file is too large."' 'msgstr ""'
}
po de >"$tmp/doc.po"
cat >"$tmp/s1" <<'SCRIPT'
wait-mt
type Die Datie Frobnitz
keys C-a F7 1
keys M-s a
keys M-:
type spell add Zorglub
keys Enter F7
keys M-:
type q!
keys Enter
SCRIPT
"$mtpe" edit "$tmp/doc.po" --db "$tmp/s.db" "${tiny[@]}" --script "$tmp/s1" \
    >"$tmp/out1" 2>"$tmp/err1" || fail "editor: $(cat "$tmp/err1")"
grep -qF "status 'Datie' replaced with 'Datei'" "$tmp/out1" || fail "no replacement: $(cat "$tmp/out1")"
grep -qF "status 'Frobnitz' added to the personal dictionary" "$tmp/out1" ||
    fail "Frobnitz not added: $(cat "$tmp/out1")"
grep -qF "status 'Zorglub' added to the personal dictionary" "$tmp/out1" ||
    fail ":spell add: $(cat "$tmp/out1")"
grep -qF "status no misspelled word in the translation" "$tmp/out1" ||
    fail "a misspelling left after the corrections: $(cat "$tmp/out1")"
words=$(sqlite3 "$tmp/s.db" "SELECT lang || ':' || word FROM spell_word ORDER BY word" | tr '\n' ' ')
[ "$words" = "de_DE:Frobnitz de_DE:Zorglub " ] || fail "personal dictionary: '$words'"
typed=$(sqlite3 "$tmp/s.db" "SELECT kind || ':' || text FROM edit ORDER BY id" | tr '\n' '|')
case "$typed" in
*"0:Die Datei Frobnitz|"*) ;;
*) fail "the correction is not a typed edit: '$typed'" ;;
esac
[ ! -s "$tmp/err1" ] || fail "stderr: $(cat "$tmp/err1")"

po sw >"$tmp/sw.po"
printf 'type Datie\nkeys F7\nkeys M-:\ntype q!\nkeys Enter\n' >"$tmp/s2"
"$mtpe" edit "$tmp/sw.po" --db "$tmp/s.db" "${tiny[@]}" --script "$tmp/s2" \
    >"$tmp/out2" 2>"$tmp/err2" || fail "editor (sw): $(cat "$tmp/err2")"
grep -qF "status no spelling dictionary for 'sw'" "$tmp/out2" ||
    fail "no word about the missing dictionary: $(cat "$tmp/out2")"
[ ! -s "$tmp/err2" ] || fail "stderr (sw): $(cat "$tmp/err2")"
cli_finish spell_cli "F7 corrects, a and :spell add keep words, no dictionary is no error"
