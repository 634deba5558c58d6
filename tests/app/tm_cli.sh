#!/usr/bin/env bash
# tm_cli.sh: `mtpe tm` through the real binary.
#   bash tm_cli.sh <path-to-mtpe> <source-dir>
# Checks: import of PO, XLIFF, TSV and TMX files (the sample counts are the
# ones corpus_cli.sh reads off the files by hand: 7 PO + 2 XLIFF pairs,
# 21 + 7 untranslated, 1 + 1 fuzzy); re-import changes nothing; export round
# trips through TSV and TMX; lookup prints SCORE<TAB>SOURCE<TAB>TARGET best
# first, 101 for an in-context exact match; bad files import nothing; exit
# codes 0/1/2.
set -u
MTPE=${1:?usage: tm_cli.sh MTPE SOURCE_DIR}
SRC=${2:?usage: tm_cli.sh MTPE SOURCE_DIR}
T=$(mktemp -d /tmp/mtpe_tmcli.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "NOT OK: $*"; fails=$((fails + 1)); }
check() { if eval "$1"; then ok "$2"; else bad "$2"; fi; }
TAB=$'\t'

PO=$SRC/assets/samples/sample.de.po
XLF=$SRC/assets/samples/sample.de.xlf
DB=$T/tm.db

# ---- import PO and XLIFF
"$MTPE" tm import --db "$DB" "$PO" "$XLF" >"$T/out" 2>"$T/err"
check '[ $? -eq 0 ]' "import exit code"
check 'grep -q "sample.de.po: 7 segments imported .*untranslated 21, fuzzy 1" "$T/out"' \
    "PO: 7 imported, 21 untranslated and 1 fuzzy skipped"
check 'grep -q "sample.de.xlf: 2 segments imported .*untranslated 7, fuzzy 1" "$T/out"' \
    "XLIFF: 2 imported, 7 untranslated and 1 fuzzy skipped"
"$MTPE" tm stats --db "$DB" >"$T/stats1"
check 'grep -qx "segments${TAB}9" "$T/stats1" && grep -qx "imported documents${TAB}2" "$T/stats1"' \
    "stats: 9 segments in 2 imported documents"
check 'grep -qx "editor confirmed segments${TAB}0" "$T/stats1"' "stats: none from the editor"

# ---- re-import: nothing changes
"$MTPE" tm import --db "$DB" "$PO" >"$T/out" 2>&1
check '[ $? -eq 0 ] && grep -q "already in the store" "$T/out"' "re-import says so"
"$MTPE" tm stats --db "$DB" >"$T/stats2"
check 'cmp -s "$T/stats1" "$T/stats2"' "re-import changes nothing"
cp "$PO" "$T/copy.po"
"$MTPE" tm import --db "$DB" "$T/copy.po" >"$T/out" 2>&1
check 'grep -q "already in the store" "$T/out"' "the same content under another name"

# ---- lookup: format, order, scores
"$MTPE" tm lookup --db "$DB" "Loading %d file…" >"$T/l" 2>/dev/null
check '[ $? -eq 0 ]' "lookup exit code"
# [Loading %d files …] against [Loading %d file …]: 1 hard edit of 4 -> 75
printf '100\tLoading %%d file…\t%%d Datei wird geladen …\n75\tLoading %%d files…\t%%d Dateien werden geladen …\n' >"$T/want"
check 'cmp -s "$T/l" "$T/want"' "exact then fuzzy, SCORE<TAB>SOURCE<TAB>TARGET"
"$MTPE" tm lookup --db "$DB" "LOCALTIME" >"$T/l"
check '[ "$(cat "$T/l")" = "99${TAB}Localtime${TAB}Ortszeit" ]' "case only: 99"
"$MTPE" tm lookup --db "$DB" --min 80 "Loading %d file…" >"$T/l"
check '[ "$(wc -l <"$T/l")" -eq 1 ]' "--min 80 leaves the 75 out"
"$MTPE" tm lookup --db "$DB" --max 1 "Loading %d file…" >"$T/l"
check '[ "$(wc -l <"$T/l")" -eq 1 ] && grep -q "^100" "$T/l"' "--max 1: the best only"
"$MTPE" tm lookup --db "$DB" "Nothing like it at all" >"$T/l" 2>"$T/err"
check '[ $? -eq 0 ] && [ ! -s "$T/l" ] && grep -q "no match" "$T/err"' "no match: empty output, exit 0"

# ---- TSV import, in-context exact, numbers
printf 'Open the file\tDatei öffnen\nSave 3 files\t3 Dateien speichern\nClose\tSchließen\nEmpty\t\n' \
    >"$T/mem.tsv"
"$MTPE" tm import --db "$DB" "$T/mem.tsv" >"$T/out" 2>&1
check 'grep -q "mem.tsv: 3 segments imported .*untranslated 1" "$T/out"' "TSV: 3 imported, 1 empty"
"$MTPE" tm lookup --db "$DB" --prev "Open the file" --next "Close" "Save 3 files" >"$T/l"
check '[ "$(cat "$T/l")" = "101${TAB}Save 3 files${TAB}3 Dateien speichern" ]' \
    "in-context exact: 101"
"$MTPE" tm lookup --db "$DB" --prev "Other" --next "Close" "Save 3 files" >"$T/l"
check '[ "$(cut -f1 "$T/l")" = "100" ]' "another previous segment: 100"
"$MTPE" tm lookup --db "$DB" --prev "" --next "Save 3 files" "Open the file" >"$T/l"
check '[ "$(cut -f1 "$T/l")" = "101" ]' "first segment: --prev \"\""
"$MTPE" tm lookup --db "$DB" "Save 12 files" >"$T/l"
check '[ "$(cut -f1 "$T/l")" = "99" ]' "number only: 99"

# ---- export and round trips
"$MTPE" tm export --db "$DB" >"$T/all.tsv" 2>/dev/null
check '[ $? -eq 0 ] && [ "$(wc -l <"$T/all.tsv")" -eq 12 ]' "export: 12 distinct pairs as TSV"
check 'grep -qx "Run gedit in standalone mode${TAB}gedit im eigenständigen Modus ausführen" "$T/all.tsv"' \
    "XLIFF pair exported"
"$MTPE" tm import --db "$T/rt.db" "$T/all.tsv" >/dev/null 2>&1
"$MTPE" tm export --db "$T/rt.db" -o "$T/rt.tsv" 2>/dev/null
check 'cmp -s "$T/all.tsv" "$T/rt.tsv"' "TSV round trip"
"$MTPE" tm export --db "$DB" -o "$T/all.tmx" 2>/dev/null
check 'grep -q "<tmx version=\"1.4\">" "$T/all.tmx" && [ "$(grep -c "<tu " "$T/all.tmx")" -eq 12 ]' \
    "TMX export: 12 units"
"$MTPE" tm import --db "$T/rt2.db" "$T/all.tmx" >"$T/out" 2>&1
check 'grep -q "all.tmx: 12 segments imported .*(tmx" "$T/out"' "TMX import: 12 segments"
"$MTPE" tm export --db "$T/rt2.db" --format tsv >"$T/rt2.tsv" 2>/dev/null
check 'cmp -s "$T/all.tsv" "$T/rt2.tsv"' "TMX round trip"
"$MTPE" tm export --db "$T/rt2.db" --format tmx >"$T/rt2.tmx" 2>/dev/null
check 'grep -q "<seg>Open the file</seg>" "$T/rt2.tmx"' "TMX to standard output"

# ---- bad files: one line naming the file, nothing imported
"$MTPE" tm stats --db "$DB" >"$T/before"
printf 'good\tgut\nab\xff\tx\n' >"$T/bad.tsv"
"$MTPE" tm import --db "$DB" "$T/mem2.tsv" "$T/bad.tsv" >"$T/out" 2>"$T/err"
check '[ $? -eq 1 ] && grep -q "mem2.tsv" "$T/err"' "missing file: exit 1, named"
printf 'More\tMehr\n' >"$T/mem2.tsv"
"$MTPE" tm import --db "$DB" "$T/mem2.tsv" "$T/bad.tsv" >"$T/out" 2>"$T/err"
check '[ $? -eq 1 ] && grep -q "bad.tsv:2: invalid UTF-8" "$T/err"' "invalid UTF-8: file and line"
check 'grep -q "nothing imported" "$T/err"' "says nothing was imported"
"$MTPE" tm stats --db "$DB" >"$T/after"
check 'cmp -s "$T/before" "$T/after"' "the good file before the bad one is not imported either"
printf '<tmx version="1.4"><body><tu></body></tmx>\n' >"$T/broken.tmx"
"$MTPE" tm import --db "$DB" "$T/broken.tmx" >/dev/null 2>"$T/err"
check '[ $? -eq 1 ] && grep -q "broken.tmx:1" "$T/err"' "malformed TMX: exit 1, file and line"
"$MTPE" tm import --db "$T/new.db" "$T/broken.tmx" >/dev/null 2>&1
check '[ ! -e "$T/new.db" ]' "a failed import creates no store"
"$MTPE" tm import --db "$DB" --src-lang fr "$T/all.tmx" >/dev/null 2>"$T/err"
check '[ $? -eq 1 ] && grep -q "no translation unit has both languages fr and de" "$T/err"' \
    "TMX without the languages asked for: exit 1, says which"
"$MTPE" tm import --db "$DB" --trg-lang en-GB "$T/all.tmx" >/dev/null 2>&1
printf 'Only a source\t\n' >"$T/none.tsv"
"$MTPE" tm import --db "$DB" "$T/none.tsv" >"$T/out" 2>&1
check '[ $? -eq 0 ] && grep -q "no translated entries, nothing imported" "$T/out"' \
    "nothing translated: says so, no document"
"$MTPE" tm stats --db "$DB" >"$T/after2"
check 'cmp -s "$T/before" "$T/after2"' "neither changed the store"

# ---- usage and missing store
"$MTPE" tm lookup --db "$DB" --prev "x" "Save 3 files" >/dev/null 2>&1
check '[ $? -eq 2 ]' "--prev without --next: exit 2"
"$MTPE" tm lookup --db "$DB" --min 101 "x" >/dev/null 2>&1
check '[ $? -eq 2 ]' "--min out of range: exit 2"
"$MTPE" tm lookup --db "$T/none.db" "x" >/dev/null 2>"$T/err"
check '[ $? -eq 1 ] && grep -q "none.db" "$T/err" && [ ! -e "$T/none.db" ]' \
    "lookup in a missing store: exit 1, nothing created"
"$MTPE" tm import --db "$DB" >/dev/null 2>&1
check '[ $? -eq 2 ]' "import without files: exit 2"
"$MTPE" tm --help >"$T/help"
check 'grep -q "lookup" "$T/help" && grep -q "import" "$T/help"' "tm --help lists the subcommands"

# ---- mtpe bench tm on a small corpus (runs; no timing is checked)
mkdir -p "$T/data"
for i in $(seq 1 300); do
    echo "Open the file number $i now"
    echo "Save $i documents to the disk"
done >"$T/data/train.en"
sed 's/^/de: /' "$T/data/train.en" >"$T/data/train.de"
printf 'Open the file number 7 later\nClose every window\n' >"$T/data/test.en"
"$MTPE" bench tm --data "$T/data" --sizes 100 600 --queries 4 >"$T/bench" 2>&1
check '[ $? -eq 0 ]' "bench tm exit code"
check 'grep -qE "^ +100 .* held-out " "$T/bench" && grep -qE "^ +600 .* near-dup " "$T/bench"' \
    "bench tm: a row per size and query set"

if [ $fails -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "all tm CLI checks passed"
