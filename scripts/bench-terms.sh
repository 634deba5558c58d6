#!/usr/bin/env bash
# bench-terms.sh: term constraints on a test set: the term use rate and
# BLEU of the MT without and with `--glossary` (the glossary's terms as
# lexical constraints, models/translator.h "Terms").
#
#   scripts/bench-terms.sh [-g GLOSSARY.tsv] [-m MAX] [-n LINES] [SRC REF]
#
# Defaults: /work/shared/data/en-de/test.{en,de}, the default model
# (assets/models/en-de/decoder.yml: beam 4, normalize 1), a glossary made by
# scripts/make-term-glossary.sh (kept in $TMPDIR/terms.tsv between runs),
# --glossary-max MAX (default: translate's), all lines (-n: the first N).
#
# Term use rate: over the (sentence, term) pairs where a glossary source
# term is matched in the source as `translate --glossary` matches it (the
# terms it enforces: `mtpe glossary terms`) and its target term occurs in
# the reference (as a substring, case kept), the share whose MT output contains
# the target term (same test).  Printed for both runs, with BLEU and chrF
# (`mtpe eval`, sacreBLEU's defaults), the share of sentences that had a
# constraint, and the wall time of both runs (run them on an idle machine:
# the ratio is noisy otherwise).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
gl=""
max=""
n=0
while getopts "g:m:n:" opt; do
    case $opt in
    g) gl=$OPTARG ;;
    m) max=$OPTARG ;;
    n) n=$OPTARG ;;
    *) echo "usage: $0 [-g GLOSSARY.tsv] [-m MAX] [-n LINES] [SRC REF]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
src=${1:-/work/shared/data/en-de/test.en}
ref=${2:-/work/shared/data/en-de/test.de}
mtpe=${MTPE:-}
if [ -z "$mtpe" ]; then
    for c in "$here/build/mtpe" "$here/build/app/mtpe"; do [ -x "$c" ] && mtpe=$c && break; done
fi
[ -x "${mtpe:-}" ] || { echo "$0: no mtpe binary (build first or set MTPE)" >&2; exit 1; }
if [ -z "$gl" ]; then
    gl=${TMPDIR:-/tmp}/terms.tsv
    [ -s "$gl" ] || MTPE=$mtpe "$here/scripts/make-term-glossary.sh" -o "$gl"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$n" -gt 0 ]; then
    head -n "$n" "$src" > "$tmp/src"
    head -n "$n" "$ref" > "$tmp/ref"
else
    cp "$src" "$tmp/src"
    cp "$ref" "$tmp/ref"
fi
maxopt=()
[ -n "$max" ] && maxopt=(--glossary-max "$max")

now() { date +%s.%N; }
t0=$(now)
"$mtpe" translate -i "$tmp/src" -o "$tmp/base" --quiet
t1=$(now)
"$mtpe" translate -i "$tmp/src" -o "$tmp/terms" --quiet --glossary "$gl" "${maxopt[@]}"
t2=$(now)
bleu() { "$mtpe" eval -r "$tmp/ref" -i "$1" | sed -n 's/^\(BLEU\|chrF2\)[^=]*= *\([0-9.]*\).*/\1 \2/p' | tr '\n' ' '; }
b0=$(bleu "$tmp/base")
b1=$(bleu "$tmp/terms")

# the terms translate enforces in each line, as it matches them
"$mtpe" glossary terms --glossary "$gl" "${maxopt[@]}" < "$tmp/src" > "$tmp/enforced"

python3 - "$tmp/enforced" "$tmp/src" "$tmp/ref" "$tmp/base" "$tmp/terms" <<'PY'
import sys
enf, src, ref, base, terms = sys.argv[1:6]
E = [l.split("\t") if l else [] for l in open(enf, encoding="utf-8").read().split("\n")[:-1]]
S = open(src, encoding="utf-8").read().split("\n")[:-1]
R = open(ref, encoding="utf-8").read().split("\n")[:-1]
B = open(base, encoding="utf-8").read().split("\n")[:-1]
T = open(terms, encoding="utf-8").read().split("\n")[:-1]
assert len(S) == len(R) == len(B) == len(T), (len(S), len(R), len(B), len(T))
n_con = pairs = hb = ht = 0
assert len(E) == len(S), (len(E), len(S))
for m, r, b, t in zip(E, R, B, T):
    if m:
        n_con += 1
    for e in m:
        if e in r:
            pairs += 1
            hb += e in b
            ht += e in t
print("sentences %d, with a constraint %d (%.1f%%), eligible (sentence, term) pairs %d"
      % (len(S), n_con, 100.0 * n_con / max(1, len(S)), pairs))
if pairs:
    print("term use rate: without %.1f%% (%d/%d), with %.1f%% (%d/%d)"
          % (100.0 * hb / pairs, hb, pairs, 100.0 * ht / pairs, ht, pairs))
PY
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "time: without %.1f s, with %.1f s (ratio %.2f)\n", b - a, c - b, (c - b) / (b - a) }'
echo "without: $b0"
echo "with:    $b1"
