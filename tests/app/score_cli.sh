#!/usr/bin/env bash
# score_cli.sh: `mtpe score` against marian-scorer's own outputs for the
# fixtures in tests/data/marian (their *.cmd files hold Marian's commands).
#   bash score_cli.sh <path-to-mtpe> <source-dir>
# Every output must have Marian's text exactly, except that numbers may
# differ by float rounding: each whitespace-separated field that is a number
# in both files is compared within a tolerance, all others must be equal.
mtpe=${1:?usage: score_cli.sh MTPE SRCDIR}
src=${2:?usage: score_cli.sh MTPE SRCDIR}
data=$src/tests/data/marian
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# same_text GOT WANT TOL WHAT: fieldwise comparison, numbers within TOL
same_text() {
    if awk -v tol="$3" -v what="$4" '
        function isnum(s) {
            return s ~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/
        }
        NR == FNR { want[FNR] = $0; n = FNR; next }
        {
            got = $0; w = want[FNR]
            ng = split(got, a, " "); nw = split(w, b, " ")
            if (ng != nw) {
                printf "%s line %d: %d fields, want %d\n", what, FNR, ng, nw
                printf "  got:  %s\n  want: %s\n", got, w
                bad++
                next
            }
            for (i = 1; i <= ng; i++) {
                if (isnum(a[i]) && isnum(b[i])) {
                    d = a[i] - b[i]; if (d < 0) d = -d
                    if (d > maxd) maxd = d
                    # 1e-9: a last printed digit off by one, 112.28 vs 112.279,
                    # is 0.0010000000000048 in binary
                    if (d > tol + 1e-9) {
                        printf "%s line %d field %d: %s, want %s\n", what, FNR, i, a[i], b[i]
                        bad++
                    }
                } else if (a[i] != b[i]) {
                    printf "%s line %d field %d: \"%s\", want \"%s\"\n", what, FNR, i, a[i], b[i]
                    bad++
                }
            }
            m = FNR
        }
        END {
            if (m != n) { printf "%s: %d lines, want %d\n", what, m, n; bad++ }
            printf "%s: %d lines, max abs diff %g\n", what, m, maxd
            exit bad > 0
        }' "$2" "$1"; then
        return 0
    fi
    fails=$((fails + 1))
    return 1
}

# same_format GOT REGEX WHAT: every line matches REGEX (Marian's printf format)
same_format() {
    if ! grep -Evq "$2" "$1" && [ -s "$1" ]; then return 0; fi
    echo "$3: a line does not look like Marian's: $(grep -Ev "$2" "$1" | head -1)"
    fails=$((fails + 1))
}

run() { # WHAT OUT args...: runs mtpe score, output to OUT
    local what=$1 out=$2
    shift 2
    if ! "$mtpe" score "$@" >"$out" 2>"$tmp/err"; then
        echo "$what: mtpe score failed: $(cat "$tmp/err")"
        fails=$((fails + 1))
        return 1
    fi
}

for m in transformer-tiny transformer-tiny-r2l transformer-aan s2s-tiny; do
    d=$data/$m
    v="$d/vocab.spm $d/vocab.spm"
    [ "$m" = transformer-aan ] && v="$d/vocab.en.spm $d/vocab.de.spm"
    common="-m $d/model.npz -v $v --cpu-threads 1 -w 256 --quiet -t $d/input.en $d/ref.de"
    # shellcheck disable=SC2086
    run "$m score" "$tmp/score" $common --mini-batch 1 --maxi-batch 1 &&
        same_text "$tmp/score" "$d/score.out" 1e-3 "$m score.out" &&
        same_format "$tmp/score" '^-?[0-9]+\.[0-9]{6}$' "$m score.out format"
    # shellcheck disable=SC2086
    run "$m score-norm" "$tmp/norm" $common --mini-batch 1 --maxi-batch 1 --normalize &&
        same_text "$tmp/norm" "$d/score-norm.out" 1e-4 "$m score-norm.out"
    # shellcheck disable=SC2086
    run "$m score-words" "$tmp/words" $common --mini-batch 1 --maxi-batch 1 --word-scores &&
        same_text "$tmp/words" "$d/score-words.out" 1e-3 "$m score-words.out" &&
        same_format "$tmp/words" '^-?[0-9]+\.[0-9]{6} \|\|\| WordScores=( -?[0-9]+\.[0-9]{5})+$' \
            "$m score-words.out format"
    # summaries: 6 significant digits, compared within one unit of the last
    # shellcheck disable=SC2086
    run "$m ce-sum" "$tmp/sum" $common --mini-batch 1 --maxi-batch 1 --summary ce-sum &&
        same_text "$tmp/sum" "$d/score-summary.out" 0.1 "$m score-summary.out"
    # shellcheck disable=SC2086
    run "$m perplexity" "$tmp/ppl" $common --mini-batch 1 --maxi-batch 1 --summary perplexity &&
        same_text "$tmp/ppl" "$d/score-summary-perplexity.out" 0.001 \
            "$m score-summary-perplexity.out"
    # padded batches, sorted by length, two threads: same scores, input order
    # shellcheck disable=SC2086
    run "$m batched" "$tmp/batched" $common --mini-batch 7 --maxi-batch 3 --cpu-threads 2 &&
        same_text "$tmp/batched" "$d/score.out" 1e-3 "$m score.out (mini-batch 7, 2 threads)"
done

# n-best rescoring with the right-to-left model (Marian's rescored.out)
d=$data/transformer-tiny-r2l
run "r2l n-best" "$tmp/rescored" -m "$d/model.npz" -v "$d/vocab.spm" "$d/vocab.spm" --quiet \
    --n-best --n-best-feature R2L -t "$d/input.en" "$d/nbest4-l2r.out" &&
    same_text "$tmp/rescored" "$d/rescored.out" 2e-3 "r2l rescored.out"

# an ensemble of a model with itself, weights 0.5 0.5, is the model
d=$data/transformer-tiny
run "ensemble" "$tmp/ens" -m "$d/model.npz" "$d/model.npz" --weights 0.5 0.5 \
    -v "$d/vocab.spm" "$d/vocab.spm" -t "$d/input.en" "$d/ref.de" --quiet &&
    same_text "$tmp/ens" "$d/score.out" 1e-3 "ensemble of two copies"
d=$data/s2s-tiny
run "s2s ensemble" "$tmp/ens2" -m "$d/model.npz" "$d/model.npz" --weights 0.5 0.5 \
    -v "$d/vocab.spm" "$d/vocab.spm" -t "$d/input.en" "$d/ref.de" --quiet --mini-batch 16 &&
    same_text "$tmp/ens2" "$d/score.out" 1e-3 "s2s-tiny ensemble of two copies, padded batches"
d=$data/transformer-tiny

# alignments of Marian's own beam-4 translations (align.out, align-soft.out:
# printed by the decoder, the same attention as teacher forcing).  Scoring
# re-encodes the translation text and appends EOS, so lines whose pieces
# differ from the decoder's (SentencePiece re-segmentation, outputs cut at
# the length limit without EOS) cannot agree: most lines must agree
# exactly (hard), and on those the soft weights within rounding.
if run "hard alignment" "$tmp/hard" -m "$d/model.npz" -v "$d/vocab.spm" "$d/vocab.spm" --quiet \
    -t "$d/input.en" "$d/beam4.out" --alignment hard &&
    run "soft alignment" "$tmp/soft" -m "$d/model.npz" -v "$d/vocab.spm" "$d/vocab.spm" \
        --quiet -t "$d/input.en" "$d/beam4.out" --alignment soft; then
    sed 's/^[^|]*||| //' "$tmp/hard" >"$tmp/hard.a"
    sed 's/^.*||| //' "$d/align.out" >"$tmp/hard.w"
    same=$(paste -d'\t' "$tmp/hard.a" "$tmp/hard.w" | awk -F'\t' '$1 == $2 { printf "%d ", NR }')
    n_same=$(echo "$same" | wc -w)
    echo "hard alignment: $n_same of 60 lines equal to align.out"
    if [ "$n_same" -lt 35 ]; then
        echo "hard alignment: too few lines agree with align.out"
        fails=$((fails + 1))
    fi
    for f in got:"$tmp/soft" want:"$d/align-soft.out"; do
        sed 's/^[^|]*||| //' "${f#*:}" | awk -v keep="$same" \
            'BEGIN { n = split(keep, k, " "); for (i = 1; i <= n; i++) ok[k[i]] = 1 }
             ok[FNR] { gsub(",", " "); print }' >"$tmp/soft-${f%%:*}.sel"
    done
    same_text "$tmp/soft-got.sel" "$tmp/soft-want.sel" 2e-5 "soft alignment (lines as align.out)"
fi

# mistakes are reported, not crashed on
if "$mtpe" score -m "$tmp/none.npz" -v "$d/vocab.spm" "$d/vocab.spm" \
    -t "$d/input.en" "$d/ref.de" >/dev/null 2>"$tmp/err"; then
    echo "missing model: exit status 0"
    fails=$((fails + 1))
elif ! grep -q "none.npz" "$tmp/err"; then
    echo "missing model: message does not name the file: $(cat "$tmp/err")"
    fails=$((fails + 1))
fi
head -5 "$d/ref.de" >"$tmp/short.de"
if "$mtpe" score -m "$d/model.npz" -v "$d/vocab.spm" "$d/vocab.spm" \
    -t "$d/input.en" "$tmp/short.de" >/dev/null 2>"$tmp/err"; then
    echo "files of different lengths: exit status 0"
    fails=$((fails + 1))
fi
if "$mtpe" score -m "$d/model.npz" -v "$d/vocab.spm" -t "$d/input.en" "$d/ref.de" \
    >/dev/null 2>&1; then
    echo "one vocabulary for two streams: exit status 0"
    fails=$((fails + 1))
fi

if [ "$fails" -ne 0 ]; then
    echo "score_cli: $fails failures"
    exit 1
fi
echo "score_cli: all outputs agree with Marian's"
