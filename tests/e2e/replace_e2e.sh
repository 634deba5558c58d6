#!/usr/bin/env bash
# replace_e2e.sh: :replace, :undo and the readable panes of `mtpe edit`,
# driven in tmux (100x30) with the transformer-tiny fixture model.
#   bash replace_e2e.sh <path-to-mtpe> <source-dir>      (exit 77: no tmux)
# The PO below has "Datei" as a whole word in 5 translations (confirmed ones,
# a fuzzy draft, the first form of a plural entry) and inside "Dateien" and
# "Dateiname".  `:replace -w Datei Akte` answered y n y n y changes exactly
# segments 2, 4 and 8 (checked on screen, in the saved file, which msgfmt
# --check accepts, and in the store: confirmed ones confirmed again, the
# fuzzy one still a draft); :undo puts every one back (file and store).
# Segment 9 has a long translation from an imported memory: its n-best
# entry wraps onto an indented continuation row instead of being cut, F4
# lists it in full, and M-Right scrolls the heat map until the last source
# label (</s>) is on screen.  On segment 5, a plural form, the source pane
# shows msgid and msgid_plural and the other form's translation is shown.
set -u
MTPE=${1:?usage: replace_e2e.sh MTPE SOURCE_DIR}
SRC=$(cd "${2:?usage: replace_e2e.sh MTPE SOURCE_DIR}" && pwd)
command -v tmux >/dev/null || { echo "tmux not found: skipped"; exit 77; }
command -v sqlite3 >/dev/null || { echo "sqlite3 not found: skipped"; exit 77; }
export LC_ALL=C.UTF-8
MTPE=$(cd "$(dirname "$MTPE")" && pwd)/$(basename "$MTPE")
FIX=$SRC/tests/data/marian/transformer-tiny
T=$(mktemp -d /tmp/mtpe_replace_e2e.XXXXXX)
SOCK=mtpe-replace-e2e-$$
. "$SRC/tests/tmux_common.bash"
command -v msgfmt >/dev/null || { bad "msgfmt missing (scripts/install-deps.sh installs gettext)"; exit 1; }
sql() { sqlite3 "$T/r.db" "$1"; }
# the latest confirmation / edit of the document's unit IDX (0-based; each
# plural form is a unit of its own)
confirmed_text() {
    sql "SELECT c.text FROM confirmation c JOIN segment s ON s.id = c.segment_id
         JOIN document d ON d.id = s.document_id WHERE d.origin = 0 AND s.idx = $1
         ORDER BY c.id DESC LIMIT 1"
}
edit_text() {
    sql "SELECT e.text FROM edit e JOIN segment s ON s.id = e.segment_id
         JOIN document d ON d.id = s.document_id WHERE d.origin = 0 AND s.idx = $1
         ORDER BY e.id DESC LIMIT 1"
}
cmd() { keys M-:; tm send-keys -t ed -l "$1"; keys Enter; }
# the row after the first row that holds $1
row_after() { screen | awk -v k="$1" 'f { print; exit } index($0, k) { f = 1 }'; }

LONG_SRC="The file could not be opened because another program has locked it or because you do not have the permissions to read it."
LONG_TRG="Die Datei konnte nicht geöffnet werden, weil ein anderes Programm sie gesperrt hat oder weil Ihnen die Berechtigungen fehlen, sie zu lesen. ENDE"
cat >"$T/r.po" <<PO
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"
"Language: de\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\n"

msgid "Quit"
msgstr ""

msgid "Open the file"
msgstr "Datei öffnen"

msgid "The file could not be saved."
msgstr "Die Datei konnte nicht gespeichert werden."

#, fuzzy
msgid "Close the file"
msgstr "Datei schließen"

msgid "Delete %d file"
msgid_plural "Delete %d files"
msgstr[0] "%d Datei löschen"
msgstr[1] "%d Dateien löschen"

msgid "File name"
msgstr "Dateiname"

msgid "Save the file"
msgstr "Datei speichern"

msgid "$LONG_SRC"
msgstr ""
PO
cd "$T" || exit 1
cp r.po r.orig.po
printf '%s\t%s\n' "$LONG_SRC" "$LONG_TRG" >mem.tsv
"$MTPE" tm import --db r.db mem.tsv >/dev/null || { bad "tm import"; exit 1; }
tm -f /dev/null new-session -d -s ed -x 100 -y 30 \
    "'$MTPE' edit r.po -m '$FIX/model.npz' -v '$FIX/vocab.spm' '$FIX/vocab.spm' \
     --db r.db 2>err.txt; echo \"editor exited rc=\$?\"; sleep 60" ||
    { echo "tmux cannot start a session here: skipped"; exit 77; }
wait_for "the editor opens on segment 1" shows "Source  1/9" || exit 1

# ---- :replace with y n y n y
cmd ':replace -w Datei Akte'
wait_for "asks about segment 2's occurrence" shows "Source  2/9" || exit 1
check 'shows "y: yes  n: no  a: this and all remaining"' "the answers are shown"
check 'shows "(1 of 5)"' "5 whole-word occurrences counted"
fline=$(tm capture-pane -p -e -t ed | awk '/─ Translation/ { getline; print; exit }')
check '[[ "$fline" == *"7m"*"Datei"* ]]' "the occurrence is highlighted (reverse): $(printf %q "$fline")"
keys y
wait_for "y: on to segment 3" shows "Source  3/9"
keys n
wait_for "n: on to segment 4" shows "Source  4/9"
keys y
wait_for "y: on to segment 5, a plural form" shows "Source  5/9"
check 'shows "singular: Delete %d file" && shows "plural:   Delete %d files"' \
    "the plural form shows msgid and msgid_plural"
check 'shows "Other forms of this entry" && shows "plural form 2/2 (n = 0, 2, 3, …): %d Dateien löschen"' \
    "the other form's translation is shown"
keys n
wait_for "n: on to segment 8 (not Dateien, not Dateiname)" shows "Source  8/9"
keys y
# (the status line gives a message 40 columns at least: the rest may be cut)
wait_for "the summary" shows "replaced 3 of 5 occurrences in 3"
check '! shows "y: yes  n: no"' "no longer asking"
check '[ "$(field)" = "Akte speichern" ]' "segment 8's field shows the change: '$(field)'"
check '[ "$(confirmed_text 1)" = "Akte öffnen" ]' "store: segment 2 confirmed again with the change"
check '[ "$(confirmed_text 7)" = "Akte speichern" ]' "store: segment 8 confirmed again"
check '[ "$(edit_text 3)" = "Akte schließen" ]' "store: the fuzzy segment 4's draft changed"
check '[ -z "$(confirmed_text 2)" ] && [ -z "$(edit_text 2)" ]' "store: segment 3 (n) untouched"
cmd ':w'
wait_for "saved" shows "saved"
check 'msgfmt --check -o /dev/null r.po 2>/dev/null' "msgfmt --check accepts the saved file"
check '[ "$(grep -c Akte r.po)" = 3 ]' "exactly 3 replacements in the file ($(grep -c Akte r.po))"
check 'grep -qx "msgstr \"Akte öffnen\"" r.po && grep -qx "msgstr \"Akte speichern\"" r.po' \
    "segments 2 and 8 in the file"
check 'grep -B2 -x "msgstr \"Akte schließen\"" r.po | grep -qx "#, fuzzy"' \
    "segment 4 replaced and still fuzzy"
check 'grep -qx "msgstr \"Die Datei konnte nicht gespeichert werden.\"" r.po &&
       grep -qx "msgstr\[0\] \"%d Datei löschen\"" r.po &&
       grep -qx "msgstr\[1\] \"%d Dateien löschen\"" r.po && grep -qx "msgstr \"Dateiname\"" r.po' \
    "the answered-no and the non-word occurrences kept"

# ---- :undo restores every segment, in the file and the store
cmd ':undo'
wait_for "undo" shows "undid the :replace in 3 segments"
cmd ':w'
sleep 0.5
check 'msgfmt --check -o /dev/null r.po 2>/dev/null' "msgfmt --check after the undo"
check '[ "$(grep -c Akte r.po)" = 0 ]' "no Akte left in the file"
check 'diff <(grep "^msgstr" r.orig.po) <(grep "^msgstr" r.po) >/dev/null' \
    "every translation as it was: $(diff <(grep "^msgstr" r.orig.po) <(grep "^msgstr" r.po) | tr '\n' ' ')"
check '[ "$(confirmed_text 1)" = "Datei öffnen" ] && [ "$(confirmed_text 7)" = "Datei speichern" ] &&
       [ "$(edit_text 3)" = "Datei schließen" ]' \
    "store: the undo is stored"

# ---- a long alternative wraps; F4 shows it in full
cmd ':9'
wait_for "segment 9 with its memory match" shows "M-1 TM" || exit 1
cont=$(row_after "M-1 TM")
check '[[ "$cont" =~ ^\ {6,}[^\ ] ]]' "continuation row indented: '$cont'"
alts=$(screen | awk '/─ Alternatives/ { f = 1; next } /^ M-2 / { exit } f')
check '[[ "$alts" == *"ENDE"* ]]' "the whole entry, to its last word, in the pane"
keys F4
wait_for "F4: the full list" shows "All alternatives of segment 9"
keys Escape
sleep 0.4
wait_for "Esc closes it" shows "Source  9/9"

# ---- the heat map scrolls until the last source label is readable
keys F3
wait_for "the heat map" shows "Attention  (F3: alternatives)"
labels() { row_after "─ Attention"; }
before=$(labels)
check '[[ "$before" == *"▁The"* && "$before" == *"›"* && "$before" != *"</s>"* ]]' \
    "first labels whole, more to the right: '$before'"
for _ in 1 2 3 4 5 6 7 8 9 10; do tm send-keys -t ed M-Right; done
sleep 0.4
after=$(labels)
check '[[ "$after" == *"</s>"* && "$after" == *"‹"* && "$after" != *"▁The"* ]]' \
    "M-Right scrolled to the last label: '$after'"
keys M-Left
check '[ "$(labels)" != "$after" ]' "M-Left scrolls back"

cmd ':q!'
sleep 0.5
check '[ ! -s err.txt ]' "nothing on stderr: $(head -c 300 err.txt)"
echo "$fails failed"
[ "$fails" = 0 ]
