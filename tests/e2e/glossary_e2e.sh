#!/usr/bin/env bash
# glossary_e2e.sh: glossary terms in `mtpe edit`, driven in tmux.
#   bash glossary_e2e.sh <path-to-mtpe> <source-dir>      (exit 77: no tmux)
# A glossary is imported with `mtpe glossary import` (project "docs": file
# manager, file, open; global: choose; project "other": profile) and the
# editor opens a two-segment PO file with --project docs and the
# transformer-tiny fixture model.  Checks: in segment 1's source pane the
# terms are underlined (read from `capture-pane -e`: the characters between
# an underline-on and -off code), "file" inside "profile" is not, and the
# line under the source lists the pairs; segment 2 has no term (profile is
# another project's); confirming a translation without the term's target
# gets the QA warning naming the term; with it, it is confirmed.
set -u
MTPE=${1:?usage: glossary_e2e.sh MTPE SOURCE_DIR}
SRC=${2:?usage: glossary_e2e.sh MTPE SOURCE_DIR}
command -v tmux >/dev/null || { echo "tmux not found: skipped"; exit 77; }
command -v perl >/dev/null || { echo "perl not found: skipped"; exit 77; }
export LC_ALL=C.UTF-8
MTPE=$(cd "$(dirname "$MTPE")" && pwd)/$(basename "$MTPE")
FIX=$SRC/tests/data/marian/transformer-tiny
T=$(mktemp -d /tmp/mtpe_gloss_e2e.XXXXXX)
SOCK=mtpe-gloss-e2e-$$
. "$SRC/tests/tmux_common.bash"

cd "$T" || exit 1
cat >d.po <<'PO'
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"
"Language: de\n"

msgid "Open the file manager and choose a file."
msgstr ""

msgid "No profile was found."
msgstr ""
PO
printf 'file manager\tDateimanager\tthe app\nfile\tDatei\t\nopen\t\xc3\xb6ffnen\t\n' >docs.tsv
printf 'choose,w\xc3\xa4hlen\n' >global.csv
printf 'profile\tProfil\n' >other.tsv
"$MTPE" glossary import --db t.db --project docs docs.tsv >/dev/null &&
    "$MTPE" glossary import --db t.db global.csv >/dev/null &&
    "$MTPE" glossary import --db t.db --project other other.tsv >/dev/null ||
    { bad "glossary import"; exit 1; }

tm -f /dev/null new-session -d -s ed -x 240 -y 40 \
    "'$MTPE' edit d.po -m '$FIX/model.npz' -v '$FIX/vocab.spm' '$FIX/vocab.spm' \
     --db t.db --project docs 2>err.txt; echo \"editor exited rc=\$?\"; sleep 60" ||
    { echo "tmux cannot start a session here: skipped"; exit 77; }

wait_for "the editor shows segment 1" shows "Source  1/2" || exit 1
# the source pane's line (the segment list on the left shows the source too,
# cut to its width: take the line that has the pane's rule on its left)
line=$(marked_line "│ Open the file manager")
want="│ [Open] the [file manager] and [choose] a [file]."
check '[ "${line#*│ }" = "${want#*│ }" ]' "terms underlined in the source pane: '$line'"
check 'shows "Terms: open → öffnen · file manager → Dateimanager (the app) · choose → wählen · file → Datei"' \
    "the term pairs listed under the source"
keys PgDn
wait_for "segment 2" shows "Source  2/2" || exit 1
line=$(marked_line "│ No profile was found.")
check '[ "${line#*│ }" = "No profile was found." ]' "nothing underlined in 'No profile was found.': '$line'"
check '! shows "Terms:"' "no terms line for segment 2 (profile belongs to project other)"
keys PgUp
wait_for "segment 1 again" shows "Source  1/2" || exit 1

# a translation without the target of "file manager": the QA warning
tm send-keys -t ed -l "Den Ordner öffnen und eine Datei wählen."
sleep 0.3
keys Enter
wait_for "QA warns about the missing term" \
    shows "glossary: 'file manager' -> 'Dateimanager' is not in the translation" &&
    ok "QA warns about the missing term" || exit 1
check 'shows "Source  1/2"' "still on segment 1"
keys C-u
tm send-keys -t ed -l "Den Dateimanager öffnen und eine Datei wählen."
sleep 0.3
keys Enter
wait_for "confirmed: segment 2" shows "Source  2/2" && ok "with the term it is confirmed"
keys : q ! Enter
sleep 0.5
check '[ ! -s err.txt ]' "nothing on stderr"

if [ $fails -ne 0 ]; then
    echo "--- stderr:"; cat err.txt
    echo "$fails check(s) failed"
    exit 1
fi
echo "all checks passed"
