#!/usr/bin/env bash
# make-term-glossary.sh: extracts a term glossary (TSV source<TAB>target)
# from a parallel training corpus, for `mtpe translate --glossary` and
# scripts/bench-terms.sh.
#
#   scripts/make-term-glossary.sh [-n LINES] [-o OUT.tsv] [SRC TRG]
#
# Defaults: /work/shared/data/en-de/train.{en,de}, the first 300000 lines
# (-n; about 80 s of `mtpe align --both` on one core: the rest adds
# little), OUT terms.tsv.  TERMS_CACHE=DIR keeps (or reuses) the
# tokenised subset and its alignment, for tuning the thresholds.
#
# Method: both sides are tokenised (words: letters/digits with inner - ' .
# _; punctuation apart), the pairs are word-aligned with `mtpe align --both`
# (IBM model 2, grow-diag-final-and), and for every source word and source
# bigram the target span its links cover (contiguous, 1-2 target words) is
# counted.  A source term is kept when
#   - it is seen at least -c MINCOUNT times (default 10; bigrams half),
#   - its dominant target covers p(target | source) >= -p MINP (0.7) of
#     its occurrences (unaligned occurrences count against it),
#   - every word has >= 4 letters, none is among the -s NSTOP (100) most
#     frequent source words, no target word is among the NSTOP most
#     frequent target words, and the target differs from the source (case
#     ignored: names
#     and identifiers are copied by the model anyway),
#   - no digits, no placeholders (%s, {0}, &, _ accelerators).
# The output has one line per source term, most frequent first, with a
# third field: occurrences and p (e.g. "120 0.83").  No network.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
n=300000
out=terms.tsv
minp=0.7
minc=10
nstop=100
while getopts "n:o:p:c:s:" opt; do
    case $opt in
    n) n=$OPTARG ;;
    o) out=$OPTARG ;;
    p) minp=$OPTARG ;;
    c) minc=$OPTARG ;;
    s) nstop=$OPTARG ;;
    *) echo "usage: $0 [-n LINES] [-o OUT.tsv] [-p MINP] [-c MINCOUNT] [-s NSTOP] [SRC TRG]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
src=${1:-/work/shared/data/en-de/train.en}
trg=${2:-/work/shared/data/en-de/train.de}
mtpe=${MTPE:-}
if [ -z "$mtpe" ]; then
    for c in "$here/build/mtpe" "$here/build/app/mtpe"; do [ -x "$c" ] && mtpe=$c && break; done
fi
[ -x "${mtpe:-}" ] || { echo "$0: no mtpe binary (build first or set MTPE)" >&2; exit 1; }
for f in "$src" "$trg"; do [ -r "$f" ] || { echo "$0: cannot read $f" >&2; exit 1; }; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -n "${TERMS_CACHE:-}" ] && [ -s "$TERMS_CACHE/a" ]; then # tuning: reuse an alignment
    cp "$TERMS_CACHE"/{s,t,a} "$tmp"/
else

python3 - "$src" "$trg" "$n" "$tmp" <<'PY'
import re, sys
src, trg, n, tmp = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
tok = re.compile(r"\w+(?:[-'._]\w+)*|[^\w\s]", re.UNICODE)
with open(src, encoding="utf-8", errors="replace") as fs, \
     open(trg, encoding="utf-8", errors="replace") as ft, \
     open(tmp + "/s", "w") as os_, open(tmp + "/t", "w") as ot:
    k = 0
    for a, b in zip(fs, ft):
        if k >= n:
            break
        k += 1
        sa, tb = tok.findall(a), tok.findall(b)
        if not sa or not tb or len(sa) > 60 or len(tb) > 60:
            sa, tb = ["_"], ["_"]  # keeps the line numbering
        os_.write(" ".join(sa) + "\n")
        ot.write(" ".join(tb) + "\n")
PY

"$mtpe" align -s "$tmp/s" -t "$tmp/t" -d -o -v --both -q > "$tmp/a"
[ -n "${TERMS_CACHE:-}" ] && mkdir -p "$TERMS_CACHE" && cp "$tmp"/{s,t,a} "$TERMS_CACHE"/
fi

python3 - "$tmp" "$out" "$minp" "$minc" "$nstop" <<'PY'
import collections, re, sys
tmp, out = sys.argv[1], sys.argv[2]
minp, minc, nstop = float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
S = [l.split() for l in open(tmp + "/s")]
T = [l.split() for l in open(tmp + "/t")]
A = [l.split() for l in open(tmp + "/a")]
sfreq, tfreq = collections.Counter(), collections.Counter()
for s, t in zip(S, T):
    sfreq.update(w.lower() for w in s)
    tfreq.update(w.lower() for w in t)
stop_s = {w for w, _ in sfreq.most_common(nstop)}
stop_t = {w for w, _ in tfreq.most_common(nstop)}
word = re.compile(r"^[^\W\d_]{4,}$", re.UNICODE)
count = collections.Counter()
pair = collections.defaultdict(collections.Counter)
def ok_src(ws):
    return all(word.match(w) and w.lower() not in stop_s for w in ws)
for s, t, a in zip(S, T, A):
    links = collections.defaultdict(set)
    for x in a:
        i, j = x.split("-")
        links[int(i)].add(int(j))
    for L in (1, 2):
        for i in range(len(s) - L + 1):
            ws = s[i:i + L]
            if not ok_src(ws):
                continue
            key = " ".join(w.lower() for w in ws)
            count[key] += 1
            js = set()
            for k in range(i, i + L):
                js |= links.get(k, set())
            if not js or max(js) - min(js) + 1 != len(js) or len(js) > 2:
                continue
            tgt = " ".join(t[min(js):max(js) + 1])
            pair[key][tgt] += 1
rows = []
for key, c in count.items():
    need = minc if " " not in key else max(1, minc // 2)
    if c < need or not pair[key]:
        continue
    tgt, ct = pair[key].most_common(1)[0]
    p = ct / c
    if p < minp or tgt.lower() == key or len(tgt) < 3:
        continue
    if any(w.lower() in stop_t for w in tgt.split()):
        continue
    if re.search(r"[\d%{}&_<>|]", tgt) or not re.search(r"[^\W\d_]", tgt):
        continue
    rows.append((c, key, tgt, p))
rows.sort(key=lambda r: (-r[0], r[1]))
with open(out, "w", encoding="utf-8") as f:
    for c, key, tgt, p in rows:
        f.write("%s\t%s\t%d %.2f\n" % (key, tgt, c, p))
print("%s: %d terms" % (out, len(rows)), file=sys.stderr)
PY
