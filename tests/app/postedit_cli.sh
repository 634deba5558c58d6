#!/usr/bin/env bash
# postedit_cli.sh: `mtpe postedit` (automatic post-editing with an APE model,
# a multi-source model {source, MT} -> post-edit) and `mtpe translate --ape`.
#   bash postedit_cli.sh <path-to-mtpe> <source-dir>
# The APE model is the multi-transformer fixture (tests/data/marian, trained
# by Marian on en + MT -> de; a toy: its outputs are garbage, but Marian's
# own outputs for it are the oracle).  Checked:
#   - two files (-i SRC MT) and TSV lines on stdin give marian-decoder's
#     beam4.out byte for byte;
#   - bad input: a TSV line without a TAB, line counts that differ, a
#     single-source model given as APE model, missing files, no default APE
#     model: exit 1 (2 for usage), one line naming the problem, no output
#     file left behind;
#   - --po: fuzzy msgstr post-edited (the text the line interface gives for
#     the same pair), fuzzy kept, placeholders kept, plural forms, every
#     line that is not a changed msgstr byte-identical, msgfmt -c accepts
#     it; --all; --in-place;
#   - translate --ape DIR == translate, then postedit, byte for byte (plain
#     and with -b 4 --n-best), and --ape on a PO document.
mtpe=$(realpath "${1:?usage: postedit_cli.sh MTPE SRCDIR}")
src=$(realpath "${2:?usage: postedit_cli.sh MTPE SRCDIR}")
. "$src/tests/cli_common.bash"
fx=$src/tests/data/marian/multi-transformer
tiny=$src/tests/data/marian/transformer-tiny
ape=(-m "$fx/model.npz" -v "$fx/vocab.spm" "$fx/vocab.spm" "$fx/vocab.spm")
# bad input: --quiet (no log lines: what remains on stderr is the error)
apeq=("${ape[@]}" --quiet)
marian=(--cpu-threads 1 --quiet --mini-batch 1 --maxi-batch 1 -b 4 -n 0.6)

# one_line FILE: FILE has exactly one line
one_line() { [ "$(wc -l <"$1")" -eq 1 ]; }

# ---- two files, TSV: Marian's outputs
"$mtpe" postedit "${ape[@]}" "${marian[@]}" -i "$fx/input.en" "$fx/input.mt" >"$tmp/two.out" 2>"$tmp/err" ||
    fail "postedit -i SRC MT: exit $? ($(head -c 300 "$tmp/err"))"
cmp -s "$tmp/two.out" "$fx/beam4.out" || fail "postedit -i SRC MT differs from marian-decoder's beam4.out"
paste "$fx/input.en" "$fx/input.mt" >"$tmp/pairs.tsv"
"$mtpe" postedit "${ape[@]}" "${marian[@]}" <"$tmp/pairs.tsv" >"$tmp/tsv.out" 2>"$tmp/err" ||
    fail "postedit < TSV: exit $?"
cmp -s "$tmp/tsv.out" "$fx/beam4.out" || fail "postedit < TSV differs from beam4.out"
"$mtpe" postedit "${ape[@]}" "${marian[@]}" -i "$tmp/pairs.tsv" >"$tmp/tsv2.out" 2>/dev/null
cmp -s "$tmp/tsv2.out" "$fx/beam4.out" || fail "postedit -i PAIRS.tsv differs from beam4.out"
# n-best as translate prints it (text fields of Marian's nbest4.out)
"$mtpe" postedit "${ape[@]}" "${marian[@]}" --n-best -i "$fx/input.en" "$fx/input.mt" \
    >"$tmp/nbest.out" 2>/dev/null || fail "postedit --n-best: exit $?"
cmp -s <(awk -F' \\|\\|\\| ' '{print $1 "|" $2}' "$tmp/nbest.out") \
    <(awk -F' \\|\\|\\| ' '{print $1 "|" $2}' "$fx/nbest4.out") ||
    fail "postedit --n-best: ids and texts differ from Marian's nbest4.out"

# ---- bad input
printf 'Open the file\tDatei öffnen\nno tab here\n' >"$tmp/bad.tsv"
"$mtpe" postedit "${apeq[@]}" -i "$tmp/bad.tsv" -o "$tmp/bad.out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "TSV line without a TAB: exit $rc, want 1"
one_line "$tmp/err" && grep -q "bad.tsv:2: no TAB" "$tmp/err" ||
    fail "TSV line without a TAB: one line naming line 2: $(cat "$tmp/err")"
[ ! -e "$tmp/bad.out" ] || fail "TSV line without a TAB: -o file written"

head -n 59 "$fx/input.mt" >"$tmp/short.mt"
"$mtpe" postedit "${apeq[@]}" -i "$fx/input.en" "$tmp/short.mt" -o "$tmp/short.out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "mismatched line counts: exit $rc, want 1"
one_line "$tmp/err" && grep -q "short.mt has fewer lines than" "$tmp/err" ||
    fail "mismatched line counts: one clear line: $(cat "$tmp/err")"
[ ! -e "$tmp/short.out" ] || fail "mismatched line counts: -o file written"
"$mtpe" postedit "${apeq[@]}" -i "$tmp/short.mt" "$fx/input.en" >/dev/null 2>"$tmp/err"
grep -q "input.en has more lines than" "$tmp/err" || fail "more lines in MT: $(cat "$tmp/err")"

for nv in 2 3; do
    v=()
    for _ in $(seq $nv); do v+=("$tiny/vocab.spm"); done
    "$mtpe" postedit --quiet -m "$tiny/model.npz" -v "${v[@]}" -i "$fx/input.en" "$fx/input.mt" \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 1 ] || fail "single-source model as APE ($nv vocabs): exit $rc, want 1"
    one_line "$tmp/err" && grep -q "reads 1 input: an APE model reads 2 (the source and the MT)" "$tmp/err" ||
        fail "single-source model as APE ($nv vocabs): clear error: $(cat "$tmp/err")"
    [ ! -s "$tmp/out" ] || fail "single-source model as APE: output written"
done

"$mtpe" postedit "${apeq[@]}" -i "$tmp/nope.en" "$fx/input.mt" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && one_line "$tmp/err" && grep -q "cannot open .*nope.en" "$tmp/err" ||
    fail "missing input file: $(cat "$tmp/err")"
"$mtpe" postedit --quiet -m "$tmp/nope.npz" -v "$fx/vocab.spm" "$fx/vocab.spm" "$fx/vocab.spm" \
    -i "$fx/input.en" "$fx/input.mt" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && one_line "$tmp/err" && grep -q "nope.npz" "$tmp/err" ||
    fail "missing model: $(cat "$tmp/err")"
"$mtpe" postedit "${apeq[@]}" --po "$tmp/nope.po" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && one_line "$tmp/err" && grep -q "nope.po" "$tmp/err" ||
    fail "missing PO file: $(cat "$tmp/err")"
"$mtpe" postedit "${apeq[@]}" -i a b c >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && one_line "$tmp/err" && grep -q "got 3 files" "$tmp/err" ||
    fail "three inputs: $(cat "$tmp/err")"
mkdir -p "$tmp/noassets"
MTPE_ASSETS=$tmp/noassets "$mtpe" postedit -i "$fx/input.en" "$fx/input.mt" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && one_line "$tmp/err" && grep -q "no APE model given" "$tmp/err" ||
    fail "no default APE model: $(cat "$tmp/err")"
"$mtpe" postedit "${apeq[@]}" --all -i "$fx/input.en" "$fx/input.mt" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && one_line "$tmp/err" || fail "--all without --po: usage error: $(cat "$tmp/err")"

# ---- PO files
cat >"$tmp/in.po" <<'PO'
# German translation of a test package.
msgid ""
msgstr ""
"Project-Id-Version: test 1.0\n"
"PO-Revision-Date: 2026-01-01 10:00+0000\n"
"Last-Translator: Test <test@example.org>\n"
"Language-Team: German <de@example.org>\n"
"Language: de\n"
"MIME-Version: 1.0\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Content-Transfer-Encoding: 8bit\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\n"

#. A translator comment that must stay.
#: src/main.c:10
#, fuzzy
msgid "Your default notepad:"
msgstr "Standard-Notizblock: Ihr"

#: src/main.c:20
#, fuzzy, c-format
msgid "Cannot open %s"
msgstr "Kann %s nicht öffnen"

#: src/main.c:30
#, fuzzy
msgid "One file deleted"
msgid_plural "Many files deleted"
msgstr[0] "Eine Datei gelöscht"
msgstr[1] "Viele Dateien gelöscht"

#: src/main.c:40
msgid "Quit"
msgstr "Beenden"

#: src/main.c:50
msgid "Untranslated"
msgstr ""

#, fuzzy
msgid ""
"Two\n"
"lines"
msgstr ""
"Zwei\n"
"Zeilen"

#~ msgid "Old"
#~ msgstr "Alt"
PO
msgfmt -c -o /dev/null "$tmp/in.po" || fail "the test's PO file is not valid (msgfmt -c)"
"$mtpe" postedit "${ape[@]}" -b 4 -n 0.6 --po "$tmp/in.po" -o "$tmp/out.po" 2>"$tmp/err" ||
    fail "postedit --po: exit $? ($(cat "$tmp/err"))"
msgfmt -c -o /dev/null "$tmp/out.po" 2>"$tmp/msgfmt.err" ||
    fail "postedit --po: msgfmt -c rejects the output: $(cat "$tmp/msgfmt.err")"
# the line interface's post-edit of the same pair
pe1=$(printf 'Your default notepad:\tStandard-Notizblock: Ihr\n' |
    "$mtpe" postedit "${ape[@]}" -b 4 -n 0.6 --quiet)
[ -n "$pe1" ] && [ "$pe1" != "Standard-Notizblock: Ihr" ] ||
    fail "the fixture's post-edit of entry 1 is empty or unchanged: '$pe1' (the test needs a change)"
grep -qxF "msgstr \"$pe1\"" "$tmp/out.po" ||
    fail "postedit --po: entry 1 is not the line interface's post-edit '$pe1'"
# what must not change: every line but the fuzzy single-line msgstr
# (a msgstr and its continuation lines; the header is compared on its own)
strip() { awk '/^msgstr/ { s = 1; next } s && /^"/ { next } { s = 0; print }' "$1"; }
cmp -s <(sed -n '1,/^$/p' "$tmp/in.po") <(sed -n '1,/^$/p' "$tmp/out.po") ||
    fail "postedit --po: the header changed"
cmp -s <(strip "$tmp/in.po") <(strip "$tmp/out.po") ||
    fail "postedit --po: lines other than the post-edited msgstr changed: $(diff <(strip "$tmp/in.po") <(strip "$tmp/out.po") | head -5)"
[ "$(grep -c '^#, fuzzy' "$tmp/out.po")" -eq 4 ] && grep -q '^#, fuzzy, c-format' "$tmp/out.po" ||
    fail "postedit --po: the fuzzy flags are not kept"
grep -qxF 'msgstr "Beenden"' "$tmp/out.po" || fail "postedit --po: a translated entry changed without --all"
grep -q '^msgstr\[1\] ' "$tmp/out.po" || fail "postedit --po: plural forms lost"
# placeholders: the c-format entry keeps its %s (a post-edit without it is not taken)
awk '/Cannot open %s/ { getline; print }' "$tmp/out.po" | grep -q '%s' ||
    fail "postedit --po: the c-format msgstr lost its %s"
cmp -s <(sed -n '/"Two/,$p' "$tmp/in.po") <(sed -n '/"Two/,$p' "$tmp/out.po") ||
    fail "postedit --po: the multi-line entry changed"
# --all: the confirmed entry too, fuzzy when changed; --in-place
cp "$tmp/in.po" "$tmp/all.po"
"$mtpe" postedit "${ape[@]}" -b 4 -n 0.6 --po "$tmp/all.po" --all --in-place 2>"$tmp/err" ||
    fail "postedit --po --all --in-place: exit $? ($(cat "$tmp/err"))"
msgfmt -c -o /dev/null "$tmp/all.po" || fail "postedit --all: msgfmt -c rejects the output"
pe4=$(printf 'Quit\tBeenden\n' | "$mtpe" postedit "${ape[@]}" -b 4 -n 0.6 --quiet)
if [ "$pe4" != "Beenden" ]; then
    awk '/^msgid "Quit"/ { print prev } { prev = $0 }' "$tmp/all.po" | grep -q '^#, fuzzy' ||
        fail "postedit --all: the changed confirmed entry is not fuzzy"
    grep -qxF "msgstr \"$pe4\"" "$tmp/all.po" || fail "postedit --all: 'Quit' is not '$pe4'"
else
    echo "skip: the fixture leaves 'Beenden' unchanged (--all change not checked)"
fi
"$mtpe" postedit "${ape[@]}" --po "$tmp/in.po" --in-place -o "$tmp/x.po" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "--in-place with -o: usage error"

# ---- translate --ape DIR == translate, then postedit
mkdir -p "$tmp/apedir"
ln -s "$fx/model.npz" "$tmp/apedir/model.npz"
ln -s "$fx/vocab.spm" "$tmp/apedir/vocab.spm"
sed 's/^relative-paths: false/relative-paths: true/' "$fx/model.npz.decoder.yml" >"$tmp/apedir/decoder.yml"
head -n 20 "$fx/input.en" >"$tmp/in.en"
mt=(-m "$tiny/model.npz" -v "$tiny/vocab.spm" "$tiny/vocab.spm")
for opts in "" "-b 4 --n-best"; do
    # shellcheck disable=SC2086
    "$mtpe" translate "${mt[@]}" --quiet ${opts%--n-best} -i "$tmp/in.en" >"$tmp/mt.txt" ||
        fail "translate: exit $?"
    # shellcheck disable=SC2086
    "$mtpe" postedit -c "$tmp/apedir/decoder.yml" --quiet $opts -i "$tmp/in.en" "$tmp/mt.txt" \
        >"$tmp/pe.txt" || fail "postedit -c DIR/decoder.yml: exit $?"
    # shellcheck disable=SC2086
    "$mtpe" translate "${mt[@]}" --quiet $opts --ape "$tmp/apedir" -i "$tmp/in.en" >"$tmp/ape.txt" \
        2>"$tmp/err" || fail "translate --ape ($opts): exit $? ($(cat "$tmp/err"))"
    [ "$(wc -l <"$tmp/pe.txt")" -ge 20 ] || fail "postedit ($opts): too few lines"
    cmp -s "$tmp/pe.txt" "$tmp/ape.txt" ||
        fail "translate --ape ($opts) differs from translate, then postedit"
    cmp -s "$tmp/mt.txt" "$tmp/ape.txt" && fail "translate --ape ($opts) gives the MT unchanged"
done
# stdin, and the same with two threads and batches
"$mtpe" translate "${mt[@]}" --quiet --ape "$tmp/apedir" --cpu-threads 2 --mini-batch 4 \
    --maxi-batch 2 <"$tmp/in.en" >"$tmp/ape2.txt" || fail "translate --ape < stdin: exit $?"
[ "$(wc -l <"$tmp/ape2.txt")" -eq 20 ] || fail "translate --ape < stdin: 20 lines"
"$mtpe" translate "${mt[@]}" --ape "$tmp/nope" -i "$tmp/in.en" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && one_line "$tmp/err" && grep -q "no such folder" "$tmp/err" ||
    fail "translate --ape MISSING: $(cat "$tmp/err")"
mkdir -p "$tmp/notape"
ln -s "$tiny/model.npz" "$tmp/notape/model.npz"
ln -s "$tiny/vocab.spm" "$tmp/notape/vocab.spm"
"$mtpe" translate "${mt[@]}" --ape "$tmp/notape" -i "$tmp/in.en" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && one_line "$tmp/err" && grep -q "an APE model reads 2" "$tmp/err" ||
    fail "translate --ape SINGLE-SOURCE: $(cat "$tmp/err")"
# a document: the untranslated entry gets the post-edit of its MT
"$mtpe" translate "${mt[@]}" --quiet --ape "$tmp/apedir" --format po "$tmp/in.po" -o "$tmp/doc.po" \
    2>"$tmp/err" || fail "translate --ape --format po: exit $? ($(cat "$tmp/err"))"
msgfmt -c -o /dev/null "$tmp/doc.po" || fail "translate --ape --format po: msgfmt -c rejects it"
"$mtpe" translate "${mt[@]}" --quiet --format po "$tmp/in.po" -o "$tmp/doc0.po" 2>/dev/null
cmp -s "$tmp/doc.po" "$tmp/doc0.po" && fail "translate --ape --format po: same document as without"

cli_finish postedit_cli "postedit, translate --ape: all checks passed"
