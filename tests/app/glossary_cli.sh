#!/usr/bin/env bash
# glossary_cli.sh: `mtpe glossary` through the real binary.
#   bash glossary_cli.sh <path-to-mtpe> <source-dir>
# Checks: import of TSV, CSV and TBX (counts read off the fixtures below by
# hand), re-import adds 0, projects (a project sees its own and the global
# entries), list, lookup (offsets counted by hand), export round trip through
# TSV and TBX, clear; broken files give one line naming FILE:LINE, exit 1,
# and import nothing (also not the good files given with them).
set -u
MTPE=${1:?usage: glossary_cli.sh MTPE SOURCE_DIR}
T=$(mktemp -d /tmp/mtpe_glcli.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "NOT OK: $*"; fails=$((fails + 1)); }
check() { if eval "$1"; then ok "$2"; else bad "$2"; fi; }
TAB=$'\t'
DB=$T/g.db

printf 'file\tDatei\tdocument\tno\nGNOME\tGNOME\t\tyes\nfile manager\tDateimanager\t\t\n' >"$T/g.tsv"
printf 'source,target,note\n"open, then read","\xc3\xb6ffnen, dann lesen","a ""quoted"" note"\n' >"$T/g.csv"
cat >"$T/g.tbx" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<martif type="TBX-Basic" xml:lang="en">
 <text><body>
  <termEntry id="1">
   <langSet xml:lang="en-US"><tig><term>save</term></tig></langSet>
   <langSet xml:lang="de-DE"><tig><term>speichern</term></tig>
     <tig><term>sichern</term></tig></langSet>
  </termEntry>
 </body></text>
</martif>
EOF

# ---- import: 3 + 1 + 2 entries, all new
"$MTPE" glossary import --db "$DB" "$T/g.tsv" "$T/g.csv" "$T/g.tbx" >"$T/out" 2>"$T/err"
check '[ $? -eq 0 ]' "import exit code"
check 'grep -q "g.tsv: 3 entries (tsv, en -> de), 3 new" "$T/out"' "TSV: 3 new"
check 'grep -q "g.csv: 1 entry (csv, en -> de), 1 new" "$T/out"' "CSV: 1 new"
check 'grep -q "g.tbx: 2 entries (tbx, en -> de), 2 new" "$T/out"' "TBX: 2 pairs new"
"$MTPE" glossary import --db "$DB" "$T/g.tsv" "$T/g.csv" "$T/g.tbx" >"$T/out" 2>&1
check '[ $? -eq 0 ] && [ $(grep -c ", 0 new" "$T/out") -eq 3 ]' "re-import adds 0 from each"

# ---- a project entry
printf 'folder\tOrdner\n' >"$T/p.tsv"
"$MTPE" glossary import --db "$DB" --project docs "$T/p.tsv" >"$T/out" 2>&1
check 'grep -q "1 new" "$T/out" && grep -q "in project .docs." "$T/out"' "project import"

# ---- list: 6 global; docs sees 7
"$MTPE" glossary list --db "$DB" >"$T/list" 2>&1
check '[ $? -eq 0 ] && [ $(wc -l <"$T/list") -eq 6 ]' "list: 6 global entries"
check 'grep -qx "open, then read${TAB}öffnen, dann lesen${TAB}a \"quoted\" note${TAB}no${TAB}\*${TAB}en>de" "$T/list"' \
    "list row of the CSV entry"
check 'grep -qx "GNOME${TAB}GNOME${TAB}${TAB}yes${TAB}\*${TAB}en>de" "$T/list"' "case column kept"
"$MTPE" glossary list --db "$DB" --project docs >"$T/list2" 2>&1
check '[ $(wc -l <"$T/list2") -eq 7 ] && grep -q "^folder${TAB}Ordner${TAB}${TAB}no${TAB}docs${TAB}" "$T/list2"' \
    "docs sees its own and the global ones"

# ---- lookup: "Save the File Manager, gnome, GNOME." save 0 (two targets),
# File Manager 9 (longest), gnome 23 no (case-sensitive), GNOME 30
"$MTPE" glossary lookup --db "$DB" "Save the File Manager, gnome, GNOME." >"$T/look" 2>&1
check '[ $? -eq 0 ]' "lookup exit code"
printf 'save\tspeichern\t0\t\nsave\tsichern\t0\t\nfile manager\tDateimanager\t9\t\nGNOME\tGNOME\t30\t\n' >"$T/look.want"
check 'diff "$T/look.want" "$T/look"' "lookup lines and offsets"
"$MTPE" glossary lookup --db "$DB" "the profile folder" >"$T/look" 2>"$T/err"
check '[ $? -eq 0 ] && [ ! -s "$T/look" ] && grep -q "no term" "$T/err"' \
    "no match in profile; folder belongs to docs"
"$MTPE" glossary lookup --db "$DB" --project docs "the profile folder" >"$T/look" 2>&1
check 'grep -qx "folder${TAB}Ordner${TAB}12${TAB}" "$T/look"' "docs: folder at 12"

# ---- export and import again: nothing new, same list
for fmt in tsv tbx; do
    "$MTPE" glossary export --db "$DB" -o "$T/out.$fmt" 2>"$T/err"
    check '[ $? -eq 0 ] && grep -q "6 entries" "$T/err"' "export $fmt"
    "$MTPE" glossary import --db "$T/new_$fmt.db" "$T/out.$fmt" >/dev/null 2>&1
    "$MTPE" glossary list --db "$T/new_$fmt.db" | cut -f1-5 >"$T/relist"
    cut -f1-5 "$T/list" >"$T/list.cut"
    check 'diff "$T/list.cut" "$T/relist"' "$fmt export imported into a new store lists the same"
    "$MTPE" glossary import --db "$DB" "$T/out.$fmt" >"$T/out" 2>&1
    check 'grep -q "6 entries ($fmt, en -> de), 0 new" "$T/out"' "$fmt export re-imported: 0 new"
done

# ---- broken files: one line naming FILE:LINE, exit 1, nothing imported
printf 'a\tb\nc\td\te\tf\tg\n' >"$T/cols.tsv"
printf 'a,b\nc,\xff\n' >"$T/utf.csv"
printf 'a\tb\n\tc\n' >"$T/empty.tsv"
printf '<martif><text><body><termEntry>\n</body></martif>\n' >"$T/bad.tbx"
printf 'a\tb\n' >"$T/nul.tsv"
printf 'c\0\td\n' >>"$T/nul.tsv"
printf 'newterm\tneu\n' >"$T/good.tsv"
for f in "cols.tsv:2:" "utf.csv:2: invalid UTF-8" "empty.tsv:2: empty source term" \
    "bad.tbx:2: malformed XML" "nul.tsv:2: NUL byte"; do
    name=${f%%:*}
    "$MTPE" glossary import --db "$DB" "$T/good.tsv" "$T/$name" >"$T/out" 2>"$T/err"
    rc=$?
    check '[ $rc -eq 1 ] && [ $(grep -c "" "$T/err") -eq 2 ] && grep -q "$f" "$T/err" && grep -q "nothing imported" "$T/err"' \
        "$name: exit 1 and '$f'"
done
"$MTPE" glossary list --db "$DB" | grep -q newterm
check '[ $? -ne 0 ]' "the good file given with broken ones was not imported"

# ---- usage errors and a missing store
"$MTPE" glossary import --db "$DB" >/dev/null 2>&1
check '[ $? -eq 2 ]' "import without FILE: exit 2"
"$MTPE" glossary list --db "$T/none.db" >/dev/null 2>"$T/err"
check '[ $? -eq 1 ] && grep -q "no store" "$T/err"' "list of a missing store: exit 1"

# ---- terms: what translate --glossary enforces per line (hand-checked:
# "red car" beats "car" inside it; the plural "houses" matches "house";
# case folded; one target per span and each target once; the longest spans
# (in bytes: "HOUSE" over "Cars") win over --glossary-max; an empty line
# when none)
printf 'house\tGebäude\t\nred car\tPersonenkraftwagen rot\t\ncar\tAuto\t\nhome\tGebäude\t\n' >"$T/t.tsv"
printf 'The red car is in the houses.\nNothing.\nCars and a HOUSE\nA home, a house\n' >"$T/t.in"
"$MTPE" glossary terms --glossary "$T/t.tsv" <"$T/t.in" >"$T/t.out" 2>"$T/err"
printf 'Personenkraftwagen rot\tGebäude\n\nAuto\tGebäude\nGebäude\n' >"$T/t.want"
check 'cmp -s "$T/t.out" "$T/t.want"' "glossary terms: $(tr '\t\n' '|/' <"$T/t.out")"
"$MTPE" glossary terms --glossary "$T/t.tsv" --glossary-max 1 <"$T/t.in" >"$T/t.out" 2>"$T/err"
printf 'Personenkraftwagen rot\n\nGebäude\nGebäude\n' >"$T/t.want"
check 'cmp -s "$T/t.out" "$T/t.want"' "glossary terms --glossary-max 1: $(tr '\t\n' '|/' <"$T/t.out")"
printf 'bad \377 line\n' | "$MTPE" glossary terms --glossary "$T/t.tsv" >/dev/null 2>"$T/err"
check '[ $? -eq 1 ] && grep -q "input:1: invalid UTF-8" "$T/err"' "glossary terms: invalid UTF-8"

# ---- clear: docs only, then the global entries
"$MTPE" glossary clear --db "$DB" --project docs >"$T/out" 2>&1
check 'grep -q "1 entry deleted" "$T/out"' "clear docs"
check '[ $("$MTPE" glossary list --db "$DB" | wc -l) -eq 6 ]' "global entries stay"
"$MTPE" glossary clear --db "$DB" >"$T/out" 2>&1
check 'grep -q "6 entries deleted" "$T/out" && [ -z "$("$MTPE" glossary list --db "$DB")" ]' \
    "clear the global entries"

if [ "$fails" -ne 0 ]; then
    echo "glossary_cli: $fails failure(s)"
    exit 1
fi
echo "glossary_cli: ok"
