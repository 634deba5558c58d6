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
# term is matched in the source as `translate --glossary` matches it (word
# boundaries, ASCII case ignored, longest first, no overlaps, at most
# --glossary-max per line: the terms it enforces) and its target term
# occurs in the
# reference (as a substring, case kept), the share whose MT output contains
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

python3 - "$gl" "$tmp/src" "$tmp/ref" "$tmp/base" "$tmp/terms" "${max:-2}" <<'PY'
import re, sys
gl, src, ref, base, terms, mx = sys.argv[1:7]
mx = int(mx)
entries, seen = [], set()
for line in open(gl, encoding="utf-8"):
    line = line.rstrip("\r\n")
    if not line or line.startswith("#") or "\t" not in line:
        continue
    s, t = line.split("\t")[:2]
    if s.lower() in seen or not s or not t:
        continue
    seen.add(s.lower())
    entries.append((s, t))
entries.sort(key=lambda e: -len(e[0].encode()))
def low(b):
    return bytes(x + 32 if 65 <= x <= 90 else x for x in b)
def wordb(x):
    return x >= 0x80 or chr(x).isalnum()
def spans(text, term):
    # occurrences: ASCII case-insensitive, word boundaries (app/term_list.c)
    lt, lw = low(text.encode()), low(term.encode())
    i = lt.find(lw)
    while i >= 0:
        j = i + len(lw)
        if (i == 0 or not wordb(lt[i-1]) or not wordb(lw[0])) and \
           (j >= len(lt) or not wordb(lt[j]) or not wordb(lw[-1])):
            yield i, j
        i = lt.find(lw, i + 1)
def match(text, mx):
    # the terms translate enforces: longest source first, no overlaps
    got, used = [], []
    for s, t in entries:
        if len(got) == mx:
            break
        for x, y in spans(text, s):
            if all(y <= a or b <= x for a, b in used):
                used.append((x, y))
                got.append((s, t))
                break
    return got
S = open(src, encoding="utf-8").read().split("\n")[:-1]
R = open(ref, encoding="utf-8").read().split("\n")[:-1]
B = open(base, encoding="utf-8").read().split("\n")[:-1]
T = open(terms, encoding="utf-8").read().split("\n")[:-1]
assert len(S) == len(R) == len(B) == len(T), (len(S), len(R), len(B), len(T))
n_con = pairs = hb = ht = 0
for s, r, b, t in zip(S, R, B, T):
    m = match(s, mx)
    if m:
        n_con += 1
    for e in m:
        if e[1] in r:
            pairs += 1
            hb += e[1] in b
            ht += e[1] in t
print("sentences %d, with a constraint %d (%.1f%%), eligible (sentence, term) pairs %d"
      % (len(S), n_con, 100.0 * n_con / max(1, len(S)), pairs))
if pairs:
    print("term use rate: without %.1f%% (%d/%d), with %.1f%% (%d/%d)"
          % (100.0 * hb / pairs, hb, pairs, 100.0 * ht / pairs, ht, pairs))
PY
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "time: without %.1f s, with %.1f s (ratio %.2f)\n", b - a, c - b, (c - b) / (b - a) }'
echo "without: $b0"
echo "with:    $b1"
