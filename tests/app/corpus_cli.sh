#!/usr/bin/env bash
# corpus_cli.sh: `mtpe corpus` through the real binary.
#   bash corpus_cli.sh <path-to-mtpe> <source-dir>
# Checks: the sample PO/XLIFF give the pairs read off the files by hand; a PO
# compiled by msgfmt gives the same pairs as the PO itself (gettext:
# scripts/install-deps.sh); exit codes 0/1/2; errors name the file and leave
# no output.
set -u
MTPE=${1:?usage: corpus_cli.sh MTPE SOURCE_DIR}
SRC=${2:?usage: corpus_cli.sh MTPE SOURCE_DIR}
T=$(mktemp -d /tmp/mtpe_corpuscli.XXXXXX)
fails=0
ok() { echo "ok: $*"; }
bad() { echo "NOT OK: $*"; fails=$((fails + 1)); }
check() { if eval "$1"; then ok "$2"; else bad "$2"; fi; }

PO=$SRC/assets/samples/sample.de.po
XLF=$SRC/assets/samples/sample.de.xlf

# ---- the samples
"$MTPE" corpus build -o "$T/s" --src-lang en --trg-lang de "$PO" "$XLF" 2>"$T/err"
check '[ $? -eq 0 ]' "build exit code"
check 'grep -q "files 2, entries 38, pairs 9" "$T/err"' "counts on stderr"
check 'grep -q "untranslated 28, fuzzy 2, obsolete 1" "$T/err"' "skipped counts on stderr"
check '[ "$(wc -l <"$T/s.en")" -eq 9 ] && [ "$(wc -l <"$T/s.de")" -eq 9 ]' "9 lines each"
check '[ "$(sed -n 4p "$T/s.en")" = "Loading %d files…" ]' "plural source line"
check '[ "$(sed -n 4p "$T/s.de")" = "%d Dateien werden geladen …" ]' "plural target line"
check '[ "$(sed -n 9p "$T/s.de")" = "gedit im eigenständigen Modus ausführen" ]' "XLIFF line"

# ---- msgfmt: the compiled catalogue gives the same pairs
if command -v msgfmt >/dev/null 2>&1; then
    msgfmt -o "$T/sample.mo" "$PO"
    "$MTPE" corpus build --tsv "$T/po.tsv" -s en -t de "$PO" 2>/dev/null
    "$MTPE" corpus build --tsv "$T/mo.tsv" -s en -t de "$T/sample.mo" 2>/dev/null
    check 'diff <(LC_ALL=C sort "$T/po.tsv") <(LC_ALL=C sort "$T/mo.tsv") >/dev/null' \
        "PO and msgfmt-compiled MO give the same pairs"
    check '[ "$(wc -l <"$T/mo.tsv")" -eq 7 ]' "7 pairs from the MO"
    cp "$T/sample.mo" "$T/noext"
    "$MTPE" corpus build --tsv "$T/noext.tsv" -s en -t de "$T/noext" 2>/dev/null
    check 'cmp -s "$T/mo.tsv" "$T/noext.tsv"' "MO recognised without its suffix"
    head -c 100 "$T/sample.mo" >"$T/cut.mo"
    "$MTPE" corpus build -o "$T/cut" -s en -t de "$T/cut.mo" 2>"$T/err"
    check '[ $? -eq 1 ] && grep -q "cut.mo" "$T/err" && [ ! -e "$T/cut.en" ]' \
        "truncated MO: exit 1, file named, no output"
else
    bad "msgfmt not installed (scripts/install-deps.sh installs gettext)"
fi

# ---- errors and usage
printf '<tmx version="1.4"><body><tu></body></tmx>\n' >"$T/broken.tmx"
"$MTPE" corpus build -o "$T/b" -s en -t de "$PO" "$T/broken.tmx" 2>"$T/err"
check '[ $? -eq 1 ]' "malformed TMX: exit 1"
check 'grep -q "broken.tmx:1" "$T/err"' "malformed TMX: file and line in the message"
check '[ ! -e "$T/b.en" ] && [ ! -e "$T/b.de" ]' "malformed TMX: no output"
check '[ -z "$(ls -A "$T" | grep "\.tmp$")" ]' "no temporary files left"
"$MTPE" corpus build -o "$T/u" "$PO" 2>/dev/null
check '[ $? -eq 2 ]' "missing languages: exit 2"
"$MTPE" corpus export --db "$T/none.db" --tmx "$T/x.tmx" 2>"$T/err"
check '[ $? -eq 1 ] && grep -q "none.db" "$T/err" && [ ! -e "$T/none.db" ]' \
    "export from a missing store: exit 1, nothing created"
"$MTPE" corpus build --help >"$T/help"
check '[ $? -eq 0 ] && grep -q -- "--strip-accelerators" "$T/help"' "build --help"
"$MTPE" corpus export --help >"$T/help"
check '[ $? -eq 0 ] && grep -q -- "--since" "$T/help"' "export --help"
"$MTPE" --help >"$T/help"
check 'grep -q "^  corpus " "$T/help"' "mtpe --help lists corpus"

if [ "$fails" -eq 0 ]; then
    rm -rf "$T"
    echo "corpus_cli.sh: all passed"
    exit 0
fi
echo "corpus_cli.sh: $fails failed (files in $T)"
exit 1
