#!/usr/bin/env bash
# output_errors_cli.sh: write errors on the output are fatal and name the
# output and the cause (issue 38, finding 9).  Standard output on a full
# device (/dev/full) for `translate` (also --n-best) and for a command that
# prints little (`convert --info`, whose output stays in stdio's buffer until
# exit); `translate -o FILE` past a file-size limit (`ulimit -f`, SIGXFSZ
# ignored: write() fails with EFBIG) leaves no partial FILE, keeps an existing
# FILE as it was, and leaves no temporary file behind.
#   bash output_errors_cli.sh <path-to-mtpe> <source-dir>
mtpe=$(realpath "${1:?usage: output_errors_cli.sh MTPE SRCDIR}")
src=$(realpath "${2:?usage: output_errors_cli.sh MTPE SRCDIR}")
. "$src/tests/cli_common.bash"
tiny=$src/tests/data/marian/transformer-tiny
tr=("$mtpe" translate -m "$tiny/model.npz" -v "$tiny/vocab.spm" "$tiny/vocab.spm" --quiet
    --cpu-threads 1 -b 1)

# expect_fail WHAT RC WANT_IN_STDERR
expect_fail() {
    if [ "$2" -eq 0 ]; then fail "$1: exit status 0"; fi
    grep -qF -- "$3" "$tmp/err" || fail "$1: no '$3' in: $(cat "$tmp/err")"
}

# --- standard output on a full device
if [ -w /dev/full ]; then
    "${tr[@]}" -i "$tiny/input.en" >/dev/full 2>"$tmp/err"
    expect_fail "translate > /dev/full" $? "cannot write standard output: No space left on device"
    head -3 "$tiny/input.en" | "${tr[@]}" --n-best >/dev/full 2>"$tmp/err"
    expect_fail "translate --n-best > /dev/full" $? "cannot write standard output: No space left"
    "$mtpe" convert --info "$tiny/model.npz" >/dev/full 2>"$tmp/err"
    expect_fail "convert --info > /dev/full" $? "cannot write standard output: No space left"
    "$mtpe" --version >/dev/full 2>"$tmp/err"
    expect_fail "--version > /dev/full" $? "cannot write standard output: No space left"
else
    echo "# no writable /dev/full: the standard output checks are skipped"
fi

# --- -o FILE past a file-size limit (1 KiB; the translations are ~2 KiB)
"${tr[@]}" -i "$tiny/input.en" -o "$tmp/want.txt" 2>"$tmp/err" || fail "translate -o: $(cat "$tmp/err")"
[ "$(wc -c <"$tmp/want.txt")" -gt 1024 ] || fail "the fixture's output is under 1 KiB"
mkdir "$tmp/out"
limited() { (trap '' XFSZ; ulimit -f 1; "$@"); } # one block of 1 KiB
limited "${tr[@]}" -i "$tiny/input.en" -o "$tmp/out/new.txt" 2>"$tmp/err"
expect_fail "translate -o NEW past the size limit" $? "$tmp/out/new.txt: File too large"
[ -e "$tmp/out/new.txt" ] && fail "a partial new.txt was left ($(wc -c <"$tmp/out/new.txt") bytes)"
printf 'the old translation\n' >"$tmp/out/old.txt"
chmod 640 "$tmp/out/old.txt"
limited "${tr[@]}" -i "$tiny/input.en" -o "$tmp/out/old.txt" 2>"$tmp/err"
expect_fail "translate -o OLD past the size limit" $? "$tmp/out/old.txt"
[ "$(cat "$tmp/out/old.txt")" = "the old translation" ] || fail "old.txt was damaged"
limited "${tr[@]}" -i "$tiny/input.en" --n-best -o "$tmp/out/nbest.txt" 2>"$tmp/err"
expect_fail "translate --n-best -o past the size limit" $? "$tmp/out/nbest.txt: File too large"
left=$(ls -A "$tmp/out")
[ "$left" = "old.txt" ] || fail "files left in the output directory: $left"
# a successful run replaces the file and keeps its mode
"${tr[@]}" -i "$tiny/input.en" -o "$tmp/out/old.txt" 2>"$tmp/err" || fail "translate -o OLD: $(cat "$tmp/err")"
cmp -s "$tmp/out/old.txt" "$tmp/want.txt" || fail "old.txt: not the translation"
[ "$(stat -c %a "$tmp/out/old.txt")" = 640 ] || fail "old.txt mode $(stat -c %a "$tmp/out/old.txt"), want 640"
left=$(ls -A "$tmp/out")
[ "$left" = "old.txt" ] || fail "files left in the output directory: $left"

cli_finish output_errors_cli
