#!/usr/bin/env bash
# edit_e2e.sh: `mtpe edit` end to end, driven in tmux like a translator would.
#   bash edit_e2e.sh <path-to-mtpe> <source-dir>      (exit 77: no tmux)
# The sample PO opens with the transformer-tiny fixture model in a 100x30
# terminal; then: wait for the MT, type a prefix that differs from the MT,
# wait for the completion, Tab (the cursor must move to the end of the next
# word of the completion), Enter (confirms prefix + completion), on the next
# segment Alt-2 (Esc 2) and Enter, then PgDn, C-n and :wq.  Checks: the
# saved PO passes msgfmt --check and holds both confirmations as translated
# (not fuzzy) entries and no MT of the segments only visited; the store holds the two confirmations, the typed
# prefix as a "typed" edit event, the n-best pick with rank 1 and its MT
# output, and the cursor where the editor was left.
set -u
MTPE=${1:?usage: edit_e2e.sh MTPE SOURCE_DIR}
SRC=${2:?usage: edit_e2e.sh MTPE SOURCE_DIR}
command -v tmux >/dev/null || { echo "tmux not found: skipped"; exit 77; }
command -v sqlite3 >/dev/null || { echo "sqlite3 not found: skipped"; exit 77; }
command -v msgattrib >/dev/null && command -v msgfmt >/dev/null ||
    { echo "gettext (msgfmt, msgattrib) not found: skipped"; exit 77; }
export LC_ALL=C.UTF-8
MTPE=$(cd "$(dirname "$MTPE")" && pwd)/$(basename "$MTPE")
FIX=$SRC/tests/data/marian/transformer-tiny
T=$(mktemp -d /tmp/mtpe_edit_e2e.XXXXXX)
SOCK=mtpe-edit-e2e-$$
. "$SRC/tests/tmux_common.bash"
cursor_x() { tm display-message -p -t ed '#{cursor_x}'; }
field_starts() { case "$(field)" in "$1"?*) return 0 ;; esac; return 1; }
sql() { sqlite3 "$T/tmp.db" "$1"; }

cp "$SRC/assets/samples/sample.de.po" "$T/"
cd "$T" || exit 1
tm -f /dev/null new-session -d -s ed -x 100 -y 30 \
    "'$MTPE' edit sample.de.po -m '$FIX/model.npz' -v '$FIX/vocab.spm' '$FIX/vocab.spm' \
     --db tmp.db 2>err.txt; echo \"editor exited rc=\$?\"; sleep 60" ||
    { echo "tmux cannot start a session here: skipped"; exit 77; }

# the MT of the first open segment (3: the first two are translated)
wait_for "the editor shows segment 3" shows "Source  3/29" || exit 1
wait_for "the MT and its alternatives" shows " M-2 " || exit 1
mt=$(field)
check '[ -n "$mt" ]' "MT greyed in the empty field: '$mt'"

# a prefix that is not the MT's: the engine completes it
first=${mt%% *}
prefix="Zz"
[ "$first" = "Zz" ] && prefix="Yy"
keys -l "$prefix"
wait_for "completion of '$prefix'" field_starts "$prefix"
line=$(field)
rest=${line#"$prefix"}
check '[ "$(cursor_x)" -eq $((1 + ${#prefix})) ]' "cursor after the typed prefix"
# Tab: the next word of the completion (with the spaces before it)
word=$(printf '%s' "$rest" | sed -E 's/^( *[^ ]*).*/\1/')
keys Tab
check '[ "$(cursor_x)" -eq $((1 + ${#prefix} + ${#word})) ]' \
    "Tab accepted '$word' (cursor $(cursor_x))"
keys Enter
wait_for "confirmed, on to segment 4" shows "Source  4/29"
conf1=$line

# segment 4: Alt-2 (Esc then 2) picks the second alternative
wait_for "alternatives of segment 4" shows " M-2 "
keys Escape 2
keys Enter
wait_for "confirmed, on to segment 5" shows "Source  5/29"
keys PgDn
wait_for "PgDn" shows "Source  6/29"
keys C-n
wait_for "C-n" shows "Source  7/29"
keys ':wq' Enter
wait_for "the editor exits" shows "editor exited rc=0"

# ---- the saved document
check 'msgfmt --check -o /dev/null sample.de.po' "msgfmt --check accepts the saved PO"
check 'grep -c "^msgid " sample.de.po | grep -qx "$(grep -c "^msgid " "$SRC/assets/samples/sample.de.po")"' \
    "every entry is still there"
translated() { msgattrib --translated --no-fuzzy --no-wrap sample.de.po | grep -qxF "msgstr \"$1\""; }
# segments 5-7 were only visited: their MT is not saved (no --save-mt)
fuzzy() { msgattrib --only-fuzzy "$1" | grep -c '^msgid '; }
check '[ "$(fuzzy sample.de.po)" = "$(fuzzy "$SRC/assets/samples/sample.de.po")" ]' \
    "no MT saved as fuzzy for segments only visited"
check 'grep -q "^\"X-Generator: mtpe " sample.de.po' "the header names mtpe as X-Generator"
check 'translated "$conf1"' "segment 3 saved as confirmed: '$conf1'"

# ---- the store
check '[ "$(sql "SELECT COUNT(*) FROM confirmation")" -eq 2 ]' "two confirmations"
check '[ "$(sql "SELECT c.text FROM confirmation c JOIN segment s ON s.id = c.segment_id
                 WHERE s.idx = 2")" = "$conf1" ]' "confirmation of segment 3 = prefix + completion"
check '[ "$(sql "SELECT COUNT(*) FROM edit e JOIN segment s ON s.id = e.segment_id
                 WHERE s.idx = 2 AND e.kind = 0 AND e.text = '"'$prefix'"'")" -eq 1 ]' \
    "the typed prefix is an edit event"
case "$conf1" in "$prefix"*) ok "the confirmation starts with the typed prefix" ;;
*) bad "confirmation '$conf1' does not start with '$prefix'" ;; esac
pick=$(sql "SELECT e.text FROM edit e JOIN segment s ON s.id = e.segment_id
            WHERE s.idx = 3 AND e.kind = 3 AND e.mt_rank = 1")
check '[ -n "$pick" ]' "Alt-2 recorded as an n-best pick of rank 1: '$pick'"
check '[ "$(sql "SELECT h.text FROM mt_hypothesis h JOIN mt_output o ON o.id = h.output_id
                 WHERE o.id = (SELECT e.mt_output_id FROM edit e JOIN segment s
                               ON s.id = e.segment_id WHERE s.idx = 3 AND e.kind = 3)
                 AND h.rank = 1")" = "$pick" ]' "the pick is rank 1 of the stored MT output"
check '[ "$(sql "SELECT c.text FROM confirmation c JOIN segment s ON s.id = c.segment_id
                 WHERE s.idx = 3")" = "$pick" ]' "segment 4 confirmed with the alternative"
check 'translated "$pick"' "segment 4 saved as confirmed"
check '[ "$(sql "SELECT COUNT(*) FROM mt_output")" -ge 2 ]' "MT outputs stored"
check '[ "$(sql "SELECT cursor_segment FROM document ORDER BY opened_ms DESC, id DESC LIMIT 1")" -eq 6 ]' \
    "cursor stored at segment 7 (index 6)"
check '[ ! -s err.txt ]' "nothing on stderr"

if [ $fails -ne 0 ]; then
    echo "--- stderr:"; cat err.txt
    echo "$fails check(s) failed"
    exit 1
fi
echo "all checks passed"
