#!/usr/bin/env bash
# mtpe eval against sacreBLEU's numbers for Marian's outputs, as recorded in
# tests/data/marian/README.md (computed there by sacreBLEU, not by mtpe).
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
# line count mismatch is an error, not a score
head -5 "$d/transformer-tiny/beam4.out" > "${TMPDIR:-/tmp}/mtpe_eval_short.$$"
if "$mtpe" eval -r "$d/transformer-tiny/ref.de" -i "${TMPDIR:-/tmp}/mtpe_eval_short.$$" 2>/dev/null; then
  echo "NOT OK: a shorter hypothesis file was accepted"; fail=1; fi
rm -f "${TMPDIR:-/tmp}/mtpe_eval_short.$$"
exit $fail
