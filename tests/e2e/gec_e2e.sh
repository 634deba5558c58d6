#!/usr/bin/env bash
# gec_e2e.sh: grammar checking (GEC) in `mtpe edit --gec DIR`, driven in tmux.
#   bash gec_e2e.sh <path-to-mtpe> <source-dir>      (exit 77: no tmux)
# The GEC model is trained here in a few seconds (tests/gec_tiny.bash: a tiny
# transformer that maps "Dateii" to "Datei" and copies its other sentences).
# A German PO file opens with the transformer-tiny fixture as MT model;
# :spell off first, so that an underline can only be a grammar mark.
#   - typed "Die Dateii ist leer heute.": after the pause, "Dateii" is
#     underlined (SGR 4) and the line under the field says
#     "Grammar: Dateii → Datei"; nothing changed in the field by itself;
#   - M-g applies it: the field holds "Die Datei ist leer heute.", the line
#     is gone; C-z undoes it (the typed text is back);
#   - M-G dismisses the correction: the field keeps "Dateii", the line goes;
#   - F1 lists M-g and M-G;
#   - a glossary target term "Dateii" (mtpe glossary import) is never
#     corrected: typed again in a new editor on that store, no Grammar line.
set -u
MTPE=${1:?usage: gec_e2e.sh MTPE SOURCE_DIR}
SRC=${2:?usage: gec_e2e.sh MTPE SOURCE_DIR}
command -v tmux >/dev/null || { echo "tmux not found: skipped"; exit 77; }
export LC_ALL=C.UTF-8
MTPE=$(cd "$(dirname "$MTPE")" && pwd)/$(basename "$MTPE")
SRC=$(cd "$SRC" && pwd)
FIX=$SRC/tests/data/marian/transformer-tiny
T=$(mktemp -d /tmp/mtpe_gec_e2e.XXXXXX)
SOCK=mtpe-gec-e2e-$$
. "$SRC/tests/tmux_common.bash"
. "$SRC/tests/gec_tiny.bash"
field_e() { tm capture-pane -p -e -t ed | awk '/─ Translation/ { getline; print; exit }'; }
underlined() { field_e | grep -qE $'\e\\[4m(\e\\[[0-9;]*m)*'"$1"; }
field_is() { [ "$(field)" = "$1" ]; }
no_grammar() { ! shows "Grammar:"; }
start() { # DB: the editor on doc.po in session "ed"
    tm -f /dev/null new-session -d -s ed -x 110 -y 32 \
        "'$MTPE' edit doc.po -m '$FIX/model.npz' -v '$FIX/vocab.spm' '$FIX/vocab.spm' \
         --gec '$T/gec' --db $1 2>>err.txt; echo \"editor exited rc=\$?\"; sleep 60" ||
        { echo "tmux cannot start a session here: skipped"; exit 77; }
}
cd "$T" || exit 1
t0=$(date +%s)
gec_tiny_model "$MTPE" "$T/gec" || { bad "training the tiny GEC model"; exit 1; }
ok "tiny GEC model trained in $(( $(date +%s) - t0 )) s"
printf '%s\n' 'msgid ""' 'msgstr ""' '"Content-Type: text/plain; charset=UTF-8\n"' \
    '"Language: de\n"' '' 'msgid "The file is empty today."' 'msgstr ""' '' \
    'msgid "Open the file"' 'msgstr ""' > doc.po
start g.db
wait_for "the editor shows segment 1" shows "Source  1/2" || exit 1
keys ":spell off" Enter # underlines from here on are grammar marks only
wait_for "spell checking off" shows "spell checking off"
keys "Die Dateii ist leer heute."
wait_for "typed text in the field" field_is "Die Dateii ist leer heute." || exit 1
wait_for "the Grammar line proposes Datei" shows "Grammar: Dateii → Datei"
check 'underlined Dateii' "'Dateii' underlined"
check '! underlined ist' "'ist' not underlined"
check 'field_is "Die Dateii ist leer heute."' "nothing applied without the key"
keys M-g
wait_for "M-g applied the correction" field_is "Die Datei ist leer heute."
check no_grammar "the Grammar line is gone after M-g"
keys C-z
wait_for "C-z undoes the correction" field_is "Die Dateii ist leer heute."
wait_for "the correction is proposed again" shows "Grammar: Dateii → Datei"
keys M-G
wait_for "M-G dismissed it" no_grammar
check 'field_is "Die Dateii ist leer heute."' "dismissing keeps the text"
keys F1
wait_for "the help screen" shows "keys and commands"
for i in 1 2 3 4 5; do shows "M-G  " && break; keys NPage; done
check 'shows "M-g               grammar"' "F1 lists M-g"
check 'shows "M-G               grammar: dismiss"' "F1 lists M-G"
keys Escape
sleep 0.3
keys Escape ":q!" Enter
wait_for "the editor exits" shows "editor exited rc=0"
end_session

# a glossary target term is never corrected
printf 'source\ttarget\nfile\tDateii\n' > g.tsv
"$MTPE" glossary import g.tsv --db g2.db --src-lang en --tgt-lang de > gl.out 2>&1 ||
    bad "glossary import: $(cat gl.out)"
start g2.db
wait_for "the editor shows segment 1 (glossary store)" shows "Source  1/2" || exit 1
keys ":spell off" Enter
wait_for "spell checking off" shows "spell checking off"
keys "Die Dateii ist leer heute."
wait_for "typed text in the field" field_is "Die Dateii ist leer heute."
sleep 3
check no_grammar "a glossary target term is not corrected"
check '! underlined Dateii' "... nor underlined"
[ -s err.txt ] && bad "stderr: $(cat err.txt)"
if [ "$fails" -ne 0 ]; then echo "gec_e2e: $fails failure(s)"; exit 1; fi
echo "gec_e2e: ok"
