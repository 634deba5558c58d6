#!/usr/bin/env bash
# edit_conflict_cli.sh: two editors on one file (issue 38, finding 7).  The
# later :w used to write over the earlier editor's save, dropping its
# confirmation; now :w refuses when the file changed on disk since this
# editor opened or last saved it (size and mtime, then the content hash),
# says how to go on, and :w! overwrites.  Editor B reads its script from a
# FIFO, so editor A saves between B's commands.
#   bash edit_conflict_cli.sh <path-to-mtpe> <source-dir>
mtpe=$(realpath "${1:?usage: edit_conflict_cli.sh MTPE SRCDIR}")
src=$(realpath "${2:?usage: edit_conflict_cli.sh MTPE SRCDIR}")
. "$src/tests/cli_common.bash"

d="$src/tests/data/marian/transformer-tiny"
tiny=(-m "$d/model.npz" -v "$d/vocab.spm" "$d/vocab.spm" --qa off)
cp "$src/assets/samples/sample.de.po" "$tmp/doc.po"

# waits until file $1 has $2 lines matching $3 (30 s at most)
wait_for() {
    for _ in $(seq 300); do
        [ "$(grep -c -- "$3" "$1" 2>/dev/null)" -ge "$2" ] && return 0
        sleep 0.1
    done
    fail "timed out waiting for $2 x '$3' in $1: $(cat "$1")"
    return 1
}

mkfifo "$tmp/b.fifo"
"$mtpe" edit "$tmp/doc.po" --db "$tmp/b.db" "${tiny[@]}" --script - <"$tmp/b.fifo" \
    >"$tmp/b.out" 2>"$tmp/b.err" &
bpid=$!
exec 3>"$tmp/b.fifo"
# B: confirms its first open segment and saves twice (its own save is no
# change on disk for the second one)
printf 'wait-mt\nkeys C-u\ntype Bravo one\nkeys Enter\n' >&3
printf 'keys M-:\ntype w\nkeys Enter\nkeys M-:\ntype w\nkeys Enter\n' >&3
wait_for "$tmp/b.out" 2 '^saved '
grep -q 'Bravo one' "$tmp/doc.po" || fail "B's first save lacks its confirmation"

# A, another editor (another store), confirms and saves the same file
cat >"$tmp/a.script" <<'EOF'
wait-mt
keys C-u
type Alpha
keys Enter
keys M-:
type wq
keys Enter
EOF
"$mtpe" edit "$tmp/doc.po" --db "$tmp/a.db" "${tiny[@]}" --script "$tmp/a.script" \
    >"$tmp/a.out" 2>"$tmp/a.err" || fail "editor A: $(cat "$tmp/a.err")"
grep -q '^saved ' "$tmp/a.out" || fail "editor A did not save: $(cat "$tmp/a.out")"
grep -q 'msgstr "Alpha"' "$tmp/doc.po" || fail "A's confirmation not in the file"
cp "$tmp/doc.po" "$tmp/after-a.po"

# B confirms one more and saves: refused, the file keeps A's work
printf 'keys C-u\ntype Bravo two\nkeys Enter\nkeys M-:\ntype w\nkeys Enter\nsleep 200\n' >&3
wait_for "$tmp/b.out" 1 'changed on disk'
grep -q "status .*not saved: $tmp/doc.po changed on disk since it was opened or last saved" \
    "$tmp/b.out" || fail "B's refusal: $(grep status "$tmp/b.out")"
grep -q ':w! overwrites' "$tmp/b.out" || fail "the refusal does not say how to go on"
[ "$(grep -c '^saved ' "$tmp/b.out")" -eq 2 ] || fail "B saved over A's file"
cmp -s "$tmp/doc.po" "$tmp/after-a.po" || fail "the file changed after B's refused :w"

# :w! overwrites, as the message says
printf 'keys M-:\ntype w!\nkeys Enter\n' >&3
wait_for "$tmp/b.out" 3 '^saved '
grep -q 'Bravo two' "$tmp/doc.po" || fail ":w! did not save B's confirmation"
printf 'keys M-:\ntype q!\nkeys Enter\n' >&3
exec 3>&-
wait "$bpid" || fail "editor B: exit $?: $(cat "$tmp/b.err")"

# a touch (same bytes, new mtime) is no change
printf 'wait-mt\nkeys C-u\ntype Charlie\nkeys Enter\nsleep 1100\nkeys M-:\ntype w\nkeys Enter\n' \
    >"$tmp/c.script"
("$mtpe" edit "$tmp/doc.po" --db "$tmp/c.db" "${tiny[@]}" --script "$tmp/c.script" \
    >"$tmp/c.out" 2>"$tmp/c.err") &
cpid=$!
sleep 0.5
touch "$tmp/doc.po"
wait "$cpid" || fail "editor C: $(cat "$tmp/c.err")"
grep -q '^saved ' "$tmp/c.out" || fail "a touched file refused: $(cat "$tmp/c.out")"

cli_finish edit_conflict_cli
