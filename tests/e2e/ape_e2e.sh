#!/usr/bin/env bash
# ape_e2e.sh: the APE suggestion in `mtpe edit --ape DIR`, driven in tmux.
#   bash ape_e2e.sh <path-to-mtpe> <source-dir>      (exit 77: no tmux)
# The editor opens a small PO file with the transformer-tiny fixture as MT
# model and the multi-transformer fixture (tests/data/marian, {en, MT} -> de)
# as APE model.  Checks: the alternatives list shows an entry labelled APE
# (the first, M-1), whose text is what `mtpe postedit` gives for the
# segment's source and the MT shown in the list (the MT alternative, M-2:
# an independent computation with the same model and decoding options);
# M-1 puts it in the field, Enter confirms it and the store holds it.
# Without --ape no APE label appears; a single-source model given as APE
# model stops the editor with one clear line.
set -u
MTPE=${1:?usage: ape_e2e.sh MTPE SOURCE_DIR}
SRC=$(cd "${2:?usage: ape_e2e.sh MTPE SOURCE_DIR}" && pwd)
command -v tmux >/dev/null || { echo "tmux not found: skipped"; exit 77; }
command -v sqlite3 >/dev/null || { echo "sqlite3 not found: skipped"; exit 77; }
export LC_ALL=C.UTF-8
MTPE=$(cd "$(dirname "$MTPE")" && pwd)/$(basename "$MTPE")
FIX=$SRC/tests/data/marian/transformer-tiny
APEFIX=$SRC/tests/data/marian/multi-transformer
T=$(mktemp -d /tmp/mtpe_ape_e2e.XXXXXX)
SOCK=mtpe-ape-e2e-$$
. "$SRC/tests/tmux_common.bash"
field_is() { [ "$(field)" = "$1" ]; }
sql() { sqlite3 "$T/ape.db" "$1"; }
# the text of alternative K (M-K) as the list shows it (first row; without
# its label and its score)
alt() {
    screen | sed -n "s/^.*M-$1 \(APE \)\{0,1\}//p" | head -n 1 |
        sed -E 's/ *│.*$//; s/ +-?[0-9]+\.[0-9]+$//; s/ *$//'
}
field_starts() { case "$(field)" in "$1"*) return 0 ;; esac; return 1; }

cd "$T" || exit 1
mkdir apedir
ln -s "$APEFIX/model.npz" apedir/model.npz
ln -s "$APEFIX/vocab.spm" apedir/vocab.spm
sed 's/^relative-paths: false/relative-paths: true/' "$APEFIX/model.npz.decoder.yml" >apedir/decoder.yml
cat >doc.po <<'PO'
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"
"Language: de\n"

msgid "Your default notepad:"
msgstr ""

msgid "Close the window"
msgstr ""
PO

# a single-source model as APE model: one line, before the editor opens
mkdir notape
ln -s "$FIX/model.npz" notape/model.npz
ln -s "$FIX/vocab.spm" notape/vocab.spm
"$MTPE" edit doc.po -m "$FIX/model.npz" -v "$FIX/vocab.spm" "$FIX/vocab.spm" --db x.db \
    --ape notape --script /dev/null >/dev/null 2>err0.txt
rc=$?
check '[ $rc -ne 0 ] && [ "$(wc -l <err0.txt)" -eq 1 ] && grep -q "an APE model reads 2" err0.txt' \
    "single-source model as APE model: exit $rc, one line: $(cat err0.txt)"

tm -f /dev/null new-session -d -s ed -x 100 -y 34 \
    "'$MTPE' edit doc.po -m '$FIX/model.npz' -v '$FIX/vocab.spm' '$FIX/vocab.spm' \
     --db ape.db --ape apedir 2>err.txt; echo \"editor exited rc=\$?\"; sleep 60" ||
    { echo "tmux cannot start a session here: skipped"; exit 77; }

wait_s=30 wait_for "the editor shows segment 1" shows "Source  1/2" || exit 1
wait_s=30 wait_for "the APE suggestion in the alternatives" shows "M-1 APE " || exit 1
ape=$(alt 1)
mt=$(alt 2)
check '[ -n "$ape" ] && [ -n "$mt" ]' "APE entry '$ape' and the MT '$mt' listed"
# the same post-edit computed by `mtpe postedit` (the folder's decoder.yml:
# beam 12, normalize 0, as the editor's APE uses it)
want=$(printf 'Your default notepad:\t%s\n' "$mt" |
    "$MTPE" postedit -c apedir/decoder.yml --quiet 2>/dev/null)
check '[ "$ape" = "$want" ]' "the APE entry is postedit's output for (source, MT): '$want'"
keys M-1
# (the field may show a completion greyed after it: C-k drops it)
wait_for "M-1 takes the APE suggestion" field_starts "$ape"
sleep 0.5
keys C-k
wait_for "the field holds the APE suggestion" field_is "$ape"
keys Enter
wait_for "segment 2 after the confirmation" shows "Source  2/2"
check '[ "$(sql "SELECT c.text FROM confirmation c JOIN segment s ON s.id = c.segment_id
                 WHERE s.idx = 0")" = "$ape" ]' "segment 1 confirmed with the APE suggestion"
wait_s=30 wait_for "segment 2 gets its APE suggestion too" shows "M-1 APE " 
keys : q ! Enter
sleep 0.5
check '[ ! -s err.txt ]' "nothing on stderr"
end_session

# without --ape: no APE entry
tm -f /dev/null new-session -d -s ed -x 100 -y 34 \
    "'$MTPE' edit doc.po -m '$FIX/model.npz' -v '$FIX/vocab.spm' '$FIX/vocab.spm' \
     --db plain.db 2>err2.txt; echo \"editor exited rc=\$?\"; sleep 60"
wait_s=30 wait_for "the editor without --ape" shows " M-2 " || exit 1
check '! shows "APE"' "no APE label without --ape"
keys : q ! Enter

if [ $fails -ne 0 ]; then
    echo "--- stderr:"; cat err.txt
    echo "$fails check(s) failed"
    exit 1
fi
echo "all checks passed"
