#!/usr/bin/env bash
# mtpe eval against sacreBLEU's numbers for Marian's outputs, as recorded in
# tests/data/marian/README.md (computed there by sacreBLEU, not by mtpe), and TER
# against sacreBLEU's own TER test.
mtpe=$1; src=$2; d=$src/tests/data/marian; fail=0
check() { # folder bleu chrf
  out=$("$mtpe" eval -r "$d/$1/ref.de" -i "$d/$1/beam4.out") || { echo "NOT OK $1: exit $?"; fail=1; return; }
  bleu=$(echo "$out" | sed -n 's/^BLEU[^=]*= \([0-9.]*\) .*/\1/p')
  chrf=$(echo "$out" | sed -n 's/^chrF2[^=]*= \([0-9.]*\).*/\1/p')
  b=$(printf '%.1f' "$bleu"); c=$(printf '%.1f' "$chrf")
  if [ "$b" = "$2" ] && [ "$c" = "$3" ]; then echo "OK $1 BLEU $bleu chrF $chrf"
  else echo "NOT OK $1: BLEU $bleu chrF $chrf, sacreBLEU: $2 / $3"; fail=1; fi
}
check transformer-tiny 4.1 14.0
check transformer-tiny-r2l 3.5 11.9
check transformer-aan 0.2 6.0
echo "$out" | grep -q "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp" || { echo "NOT OK signature"; fail=1; }
# --metrics ter: sacreBLEU's test/test_ter.py WMT example (TER 0.136, i.e. 13.60), and
# the default (bleu chrf) prints no TER line
t=${TMPDIR:-/tmp}/mtpe_eval_ter.$$
cat > "$t.hyp" <<'EOF_HYP'
wählen Sie " Bild neu berechnen , " um beim Ändern der Bildgröße Pixel hinzuzufügen oder zu entfernen , damit das Bild ungefähr dieselbe Größe aufweist wie die andere Größe .
wenn Sie alle Aufgaben im aktuellen Dokument aktualisieren möchten , wählen Sie im Menü des Aufgabenbedienfelds die Option " Alle Aufgaben aktualisieren . "
klicken Sie auf der Registerkarte " Optionen " auf die Schaltfläche " Benutzerdefiniert " und geben Sie Werte für " Fehlerkorrektur-Level " und " Y / X-Verhältnis " ein .
Sie können beispielsweise ein Dokument erstellen , das ein Auto über die Bühne enthält .
wählen Sie im Dialogfeld " Neu aus Vorlage " eine Vorlage aus und klicken Sie auf " Neu . "
EOF_HYP
cat > "$t.ref" <<'EOF_REF'
wählen Sie " Bild neu berechnen , " um beim Ändern der Bildgröße Pixel hinzuzufügen oder zu entfernen , damit die Darstellung des Bildes in einer anderen Größe beibehalten wird .
wenn Sie alle Aufgaben im aktuellen Dokument aktualisieren möchten , wählen Sie im Menü des Aufgabenbedienfelds die Option " Alle Aufgaben aktualisieren . "
klicken Sie auf der Registerkarte " Optionen " auf die Schaltfläche " Benutzerdefiniert " und geben Sie für " Fehlerkorrektur-Level " und " Y / X-Verhältnis " niedrigere Werte ein .
Sie können beispielsweise ein Dokument erstellen , das ein Auto enthalt , das sich über die Bühne bewegt .
wählen Sie im Dialogfeld " Neu aus Vorlage " eine Vorlage aus und klicken Sie auf " Neu . "
EOF_REF
out=$("$mtpe" eval -r "$t.ref" -i "$t.hyp" --metrics ter) || { echo "NOT OK ter: exit $?"; fail=1; }
want='TER|nrefs:1|case:lc|tok:tercom|norm:no|punct:yes|asian:no|version:2.0.0 = 13.60'
if [ "$out" = "$want" ]; then echo "OK TER $out"; else echo "NOT OK TER: '$out', want '$want'"; fail=1; fi
out=$("$mtpe" eval -r "$t.ref" -i "$t.hyp")
if echo "$out" | grep -q '^TER'; then echo "NOT OK: TER printed by default"; fail=1; fi
[ "$(echo "$out" | wc -l)" = 2 ] || { echo "NOT OK: default metrics: $out"; fail=1; }
out=$("$mtpe" eval -r "$t.ref" -i "$t.hyp" --metrics bleu chrf ter | sed -n '3s/ = .*//p')
[ "$out" = "TER|nrefs:1|case:lc|tok:tercom|norm:no|punct:yes|asian:no|version:2.0.0" ] ||
  { echo "NOT OK: TER not the third line: '$out'"; fail=1; }
if "$mtpe" eval -r "$t.ref" -i "$t.hyp" --metrics wer 2>/dev/null; then
  echo "NOT OK: unknown metric accepted"; fail=1; fi
rm -f "$t.hyp" "$t.ref"
# line count mismatch is an error, not a score
head -5 "$d/transformer-tiny/beam4.out" > "${TMPDIR:-/tmp}/mtpe_eval_short.$$"
if "$mtpe" eval -r "$d/transformer-tiny/ref.de" -i "${TMPDIR:-/tmp}/mtpe_eval_short.$$" 2>/dev/null; then
  echo "NOT OK: a shorter hypothesis file was accepted"; fail=1; fi
rm -f "${TMPDIR:-/tmp}/mtpe_eval_short.$$"
exit $fail
