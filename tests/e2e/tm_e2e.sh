#!/usr/bin/env bash
# tm_e2e.sh: translation memory matches in `mtpe edit`, driven in tmux.
#   bash tm_e2e.sh <path-to-mtpe> <source-dir>      (exit 77: no tmux)
# A memory holding a near-duplicate of the sample PO's segment 3 is imported
# with `mtpe tm import`; the editor opens the sample with the transformer-tiny
# fixture model.  Checks: on segment 3 the match is listed above the MT
# alternatives with its percentage ("No task calendar enabled." against
# "No task calendars enabled.": 1 hard edit of 5 tokens -> 80), M-1 puts its
# translation in the field, and Enter confirms it.  Then a document of its
# own: segment 1 confirmed (M-1, the MT, then Enter) is offered on segment 2,
# its near-duplicate, at once, as "TM 85%".
set -u
MTPE=${1:?usage: tm_e2e.sh MTPE SOURCE_DIR}
SRC=${2:?usage: tm_e2e.sh MTPE SOURCE_DIR}
command -v tmux >/dev/null || { echo "tmux not found: skipped"; exit 77; }
command -v sqlite3 >/dev/null || { echo "sqlite3 not found: skipped"; exit 77; }
export LC_ALL=C.UTF-8
MTPE=$(cd "$(dirname "$MTPE")" && pwd)/$(basename "$MTPE")
FIX=$SRC/tests/data/marian/transformer-tiny
T=$(mktemp -d /tmp/mtpe_tm_e2e.XXXXXX)
SOCK=mtpe-tm-e2e-$$
. "$SRC/tests/tmux_common.bash"
field_is() { [ "$(field)" = "$1" ]; }
sql() { sqlite3 "$T/tmp.db" "$1"; }

cp "$SRC/assets/samples/sample.de.po" "$T/"
cd "$T" || exit 1
printf 'No task calendar enabled.\tKein Aufgabenkalender aktiviert.\n' >mem.tsv
"$MTPE" tm import --db tmp.db mem.tsv >/dev/null || { bad "tm import"; exit 1; }
tm -f /dev/null new-session -d -s ed -x 100 -y 30 \
    "'$MTPE' edit sample.de.po -m '$FIX/model.npz' -v '$FIX/vocab.spm' '$FIX/vocab.spm' \
     --db tmp.db 2>err.txt; echo \"editor exited rc=\$?\"; sleep 60" ||
    { echo "tmux cannot start a session here: skipped"; exit 77; }

wait_for "the editor shows segment 3" shows "Source  3/29" || exit 1
wait_for "the TM match above the alternatives" shows "M-1 TM 80% Kein Aufgabenkalender aktiviert." ||
    exit 1
check 'screen | grep -A1 -F "M-1 TM 80%" | grep -q "src    No task calendar enabled."' \
    "the match's source under it"
check 'screen | grep -A2 -F "M-1 TM 80%" | grep -q "M-2 "' "the MT alternatives follow it"
keys M-1
wait_for "M-1 takes the TM match" field_is "Kein Aufgabenkalender aktiviert."
keys Enter
wait_for "segment 4 after the confirmation" shows "Source  4/29"
check '[ "$(sql "SELECT c.text FROM confirmation c JOIN segment s ON s.id = c.segment_id
                 JOIN document d ON d.id = s.document_id WHERE d.origin = 0 AND s.idx = 2")" = \
        "Kein Aufgabenkalender aktiviert." ]' "segment 3 confirmed with the TM match"
keys : q ! Enter
sleep 0.5
check '[ ! -s err.txt ]' "nothing on stderr"
end_session

# ---- a segment confirmed in the editor helps its near-duplicate at once
# (the next segment was pre-translated before the confirmation: moving to it
# posts its MT again with the matches of now)
cat >near.po <<'PO'
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"
"Language: de\n"

msgid "The file could not be opened."
msgstr ""

msgid "The folder could not be opened."
msgstr ""

msgid "Close the window"
msgstr ""
PO
tm -f /dev/null new-session -d -s ed -x 100 -y 30 \
    "'$MTPE' edit near.po -m '$FIX/model.npz' -v '$FIX/vocab.spm' '$FIX/vocab.spm' \
     --db near.db 2>err2.txt; echo \"editor exited rc=\$?\"; sleep 60"
wait_s=30 wait_for "the editor shows segment 1" shows "Source  1/3" || exit 1
wait_for "the MT and its alternatives" shows " M-2 " || exit 1
check '! shows "TM "' "no TM match yet"
keys M-1
sleep 0.3
mt=$(field)
check '[ -n "$mt" ]' "M-1 took the MT: '$mt'"
keys Enter
wait_for "segment 2 after the confirmation" shows "Source  2/3"
# [The folder could not be opened .] / [The file could not be opened .]: 1 hard of 7 -> 85
wait_for "the confirmed segment 1 offered on segment 2" shows "M-1 TM 85% $mt"
# under it its source, the word that differs from this segment's underlined
line=$(marked_line "src    The file could not be opened.")
check '[ "${line#*src    }" = "The [file] could not be opened." ]' "the TM source, its difference marked: '$line'"
keys : q ! Enter
sleep 0.5
check '[ ! -s err2.txt ]' "nothing on stderr (second document)"

if [ $fails -ne 0 ]; then
    echo "--- stderr:"; cat err.txt
    echo "$fails check(s) failed"
    exit 1
fi
echo "all checks passed"
