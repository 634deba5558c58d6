#!/usr/bin/env bash
# spell_e2e.sh: spell checking in `mtpe edit`, driven in tmux.
#   bash spell_e2e.sh <path-to-mtpe> <source-dir>
# (exit 77: no tmux)
# A German PO file opens with the transformer-tiny fixture model.  Typed
# "Die Datie ist zu groß": "Datie" is underlined (SGR 4 in capture-pane -e),
# "groß" is not; F7 lists "1 Datei" in the bottom line, 1 replaces the word
# (the field then holds "Die Datei", nothing underlined, and the store has
# the edit as typed text); a made-up word "Frobnitz" is underlined, M-s then
# a adds it to the personal dictionary (table spell_word), after which it is
# no longer underlined, also in a new editor on the same store.  A document
# in a language without a dictionary says so on the status line.
set -u
MTPE=${1:?usage: spell_e2e.sh MTPE SOURCE_DIR}
SRC=${2:?usage: spell_e2e.sh MTPE SOURCE_DIR}
command -v tmux >/dev/null || { echo "tmux not found: skipped"; exit 77; }
command -v sqlite3 >/dev/null || { echo "sqlite3 not found: skipped"; exit 77; }
dic=
for d in ${MTPE_DICPATH:+${MTPE_DICPATH//:/ }} ${DICPATH:+${DICPATH//:/ }} /usr/share/hunspell /usr/share/myspell/dicts; do
    [ -r "$d/de_DE.dic" ] && [ -r "$d/de_DE.aff" ] && { dic=$d; break; }
done
[ -n "$dic" ] || { echo "no de_DE hunspell dictionary: scripts/install-deps.sh installs hunspell-de-de" >&2; exit 1; }
export LC_ALL=C.UTF-8
MTPE=$(cd "$(dirname "$MTPE")" && pwd)/$(basename "$MTPE")
SRC=$(cd "$SRC" && pwd)
FIX=$SRC/tests/data/marian/transformer-tiny
T=$(mktemp -d /tmp/mtpe_spell_e2e.XXXXXX)
SOCK=mtpe-spell-e2e-$$
. "$SRC/tests/tmux_common.bash"
sql() { sqlite3 "$T/sp.db" "$1"; }
# the field's line with its escape codes
field_e() { tm capture-pane -p -e -t ed | awk '/─ Translation/ { getline; print; exit }'; }
# WORD is drawn underlined: SGR 4 (maybe with a colour) right before it
underlined() { field_e | grep -qE $'\e\\[4m(\e\\[[0-9;]*m)*'"$1"; }
field_starts() { field | grep -q "^$1"; }
not_underlined() { ! underlined "$1"; }
bottom_has() { screen | tail -1 | grep -qF -- "$1"; }
db_is() { [ "$(sql "$1")" = "$2" ]; }
start() { # FILE: the editor on FILE in session "ed"
    tm -f /dev/null new-session -d -s ed -x 100 -y 30 \
        "'$MTPE' edit $1 -m '$FIX/model.npz' -v '$FIX/vocab.spm' '$FIX/vocab.spm' \
         --db sp.db 2>>err.txt; echo \"editor exited rc=\$?\"; sleep 60" ||
        { echo "tmux cannot start a session here: skipped"; exit 77; }
}

cd "$T" || exit 1
po() { # LANG: a two-segment PO file in that language
    printf '%s\n' 'msgid ""' 'msgstr ""' '"Content-Type: text/plain; charset=UTF-8\n"' \
        "\"Language: $1\\n\"" '' 'msgid "The file is too large."' 'msgstr ""' '' \
        'msgid "Open the file"' 'msgstr ""'
}
po de >doc.po
start doc.po
wait_for "the editor shows segment 1" shows "Source  1/2" || exit 1
keys "Die Datie ist zu groß"
wait_for "typed text in the field" field_starts "Die Datie ist zu groß" || exit 1
wait_for "'Datie' underlined" underlined Datie
check '! underlined "gro"' "'groß' not underlined"
check '! underlined Die' "'Die' not underlined"
keys F7
wait_for "F7 lists the suggestions" bottom_has "'Datie'  1 Datei "
keys 1
wait_for "1 puts Datei in the field" field_starts "Die Datei ist zu groß"
check '! underlined Date' "'Datei' not underlined"
check '! bottom_has "a add"' "the list closed"
wait_for "the correction stored as a typed edit (kind 0)" \
    db_is "SELECT kind FROM edit WHERE text LIKE 'Die Datei ist zu gro%' ORDER BY id DESC LIMIT 1" 0

keys End " Frobnitz"
wait_for "'Frobnitz' underlined" underlined Frobnitz
keys M-s
wait_for "M-s lists the suggestions for Frobnitz" bottom_has "'Frobnitz' "
check 'bottom_has "a add"' "... with a to add it"
keys a
wait_for "'Frobnitz' in the personal dictionary" \
    db_is "SELECT lang || ' ' || word FROM spell_word" "de_DE Frobnitz"
wait_for "'Frobnitz' no longer underlined" not_underlined Frob
check 'field_starts "Die Datei ist zu groß.* Frobnitz"' "field: $(field)"
check 'shows "added to the personal dictionary"' "the status line says so"
keys F2 "q!" Enter
sleep 0.5
end_session

# ---- the personal dictionary is kept: a new editor on the same store
start doc.po
wait_for "the editor again" shows "Source  1/2" || exit 1
keys C-u "Frobnitz und Datie"
wait_for "typed again" field_starts "Frobnitz und Datie" || exit 1
wait_for "'Datie' underlined again" underlined Datie
check '! underlined Frob' "'Frobnitz' still known after reopening"
keys F2 "q!" Enter
sleep 0.5
end_session

# ---- no dictionary for the language: one message, no error
po sw >sw.po
start sw.po
wait_for "the editor on a Swahili document" shows "Source  1/2" || exit 1
wait_for "the status line says there is no dictionary" shows "no spelling dictionary for 'sw'"
keys "Datie"
sleep 0.3
check '! underlined Datie' "nothing underlined without a dictionary"
keys F2 "q!" Enter
sleep 0.5
check '[ ! -s err.txt ]' "nothing on stderr"

if [ $fails -ne 0 ]; then
    echo "--- stderr:"; cat err.txt
    echo "$fails check(s) failed"
    exit 1
fi
echo "all checks passed"
