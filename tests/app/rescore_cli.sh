#!/usr/bin/env bash
# rescore_cli.sh: the right-to-left rescoring workflow end to end,
#   mtpe translate --n-best | mtpe score --n-best --n-best-feature R2L | mtpe rescore
# on the transformer-tiny fixtures, with every choice of `mtpe rescore`
# checked against an independent awk computation of the weighted feature
# sums; plus the same on Marian's own rescored n-best list, --n-best and
# --normalize outputs, and the errors for malformed input.
#   bash rescore_cli.sh <path-to-mtpe> <source-dir>
mtpe=${1:?usage: rescore_cli.sh MTPE SRCDIR}
src=${2:?usage: rescore_cli.sh MTPE SRCDIR}
l2r=$src/tests/data/marian/transformer-tiny
r2l=$src/tests/data/marian/transformer-tiny-r2l
. "$src/tests/cli_common.bash"

# want_best NBEST WF0 WR2L ALPHA: per id (0..max), the text of the first
# hypothesis with the largest (WF0*F0 + WR2L*R2L) / (words+1)^ALPHA.
want_best() {
    awk -v a="$2" -v b="$3" -v alpha="$4" '
        {
            n = split($0, f, / \|\|\| /)
            m = split(f[n - 1], t, " ")
            s = 0
            for (i = 1; i < m; i += 2) {
                if (t[i] == "F0=") s += a * t[i + 1]
                if (t[i] == "R2L=") s += b * t[i + 1]
            }
            w = split(f[2], ws, " ")
            if (alpha != 0) s /= (w + 1) ^ alpha
            id = f[1] + 0
            if (!(id in best) || s > best[id]) { best[id] = s; text[id] = f[2] }
            if (id > max) max = id
        }
        END { for (i = 0; i <= max; i++) print text[i] }' "$1"
}

# check_sorted NBEST_OUT: the last fields decrease within each id and equal
# F0 + R2L (weights 1 1, no normalisation) within 1e-3.
check_sorted() {
    awk '
        {
            n = split($0, f, / \|\|\| /)
            m = split(f[n - 1], t, " ")
            s = 0
            for (i = 1; i < m; i += 2) if (t[i] == "F0=" || t[i] == "R2L=") s += t[i + 1]
            d = s - f[n]; if (d < 0) d = -d
            if (d > 1e-3 * (1 + (s < 0 ? -s : s))) { print "line " NR ": total " f[n] ", want " s; bad++ }
            if (NR > 1 && f[1] == pid && f[n] + 0 > prev + 0) { print "line " NR ": not sorted"; bad++ }
            pid = f[1]; prev = f[n]
        }
        END { exit bad > 0 }' "$1"
}

# 1. the workflow with mtpe itself on the first 10 input lines
head -n 10 "$l2r/input.en" >"$tmp/in.en"
if ! "$mtpe" translate -m "$l2r/model.npz" -v "$l2r/vocab.spm" "$l2r/vocab.spm" -b 4 --n-best \
    --quiet -i "$tmp/in.en" >"$tmp/nbest" 2>"$tmp/err"; then
    fail "translate --n-best: $(cat "$tmp/err")"
fi
if ! "$mtpe" score -m "$r2l/model.npz" -v "$r2l/vocab.spm" "$r2l/vocab.spm" --n-best \
    --n-best-feature R2L --quiet -t "$tmp/in.en" "$tmp/nbest" >"$tmp/scored" 2>"$tmp/err"; then
    fail "score --n-best: $(cat "$tmp/err")"
fi
grep -q 'F0= [^ ]* R2L= ' "$tmp/scored" || fail "scored n-best has no R2L feature"
[ "$(wc -l <"$tmp/scored")" -ge 10 ] || fail "scored n-best has too few lines"
if "$mtpe" rescore --weights F0=1 R2L=1 -i "$tmp/scored" >"$tmp/best" 2>"$tmp/err"; then
    [ "$(wc -l <"$tmp/best")" -eq 10 ] || fail "rescore: $(wc -l <"$tmp/best") lines, want 10"
    want_best "$tmp/scored" 1 1 0 >"$tmp/want"
    cmp -s "$tmp/best" "$tmp/want" || fail "rescore: best hypotheses differ from awk's argmax"
else
    fail "rescore: $(cat "$tmp/err")"
fi
# from stdin, weights that change the choice
"$mtpe" rescore --weights F0=0 R2L=1 <"$tmp/scored" >"$tmp/best2" 2>/dev/null ||
    fail "rescore from stdin"
want_best "$tmp/scored" 0 1 0 >"$tmp/want2"
cmp -s "$tmp/best2" "$tmp/want2" || fail "rescore --weights F0=0 R2L=1 differs from awk"

# 2. Marian's own rescored n-best list (marian-scorer ... --n-best-feature R2L)
for w in "1 1" "1 0.3" "0.2 1"; do
    set -- $w
    "$mtpe" rescore --weights F0="$1" R2L="$2" -i "$r2l/rescored.out" >"$tmp/mb" 2>/dev/null ||
        fail "rescore of rescored.out"
    want_best "$r2l/rescored.out" "$1" "$2" 0 >"$tmp/mw"
    cmp -s "$tmp/mb" "$tmp/mw" || fail "rescored.out, weights $w: differs from awk"
    [ "$(wc -l <"$tmp/mb")" -eq "$(wc -l <"$r2l/input.en")" ] || fail "rescored.out: line count"
done
"$mtpe" rescore --weights F0=1 R2L=1 -n 1 -i "$r2l/rescored.out" >"$tmp/mb" 2>/dev/null ||
    fail "rescore --normalize"
want_best "$r2l/rescored.out" 1 1 1 >"$tmp/mw"
cmp -s "$tmp/mb" "$tmp/mw" || fail "rescore --normalize 1 differs from awk"
"$mtpe" rescore --weights F0=1 R2L=1 --n-best -i "$r2l/rescored.out" >"$tmp/nb" 2>/dev/null ||
    fail "rescore --n-best"
[ "$(wc -l <"$tmp/nb")" -eq "$(wc -l <"$r2l/rescored.out")" ] || fail "--n-best: line count"
check_sorted "$tmp/nb" || fail "--n-best: totals wrong or not sorted"
cmp -s <(sort "$tmp/nb" | cut -d'|' -f1-7) <(sort "$r2l/rescored.out" | cut -d'|' -f1-7) ||
    fail "--n-best: the hypotheses changed"
# a feature without a weight: warning, weight 0
"$mtpe" rescore --weights F0=1 -i "$r2l/rescored.out" >"$tmp/mb" 2>"$tmp/err" ||
    fail "rescore with F0 only"
grep -q "R2L" "$tmp/err" || fail "no warning for the unweighted feature R2L"
want_best "$r2l/rescored.out" 1 0 0 >"$tmp/mw"
cmp -s "$tmp/mb" "$tmp/mw" || fail "weights F0=1 only differs from awk"

# 3. missing ids give empty lines
printf '0 ||| a ||| F0= -1 ||| -1\n2 ||| c ||| F0= -2 ||| -2\n2 ||| d ||| F0= -1 ||| -1\n' \
    >"$tmp/gap"
"$mtpe" rescore --weights F0=1 -i "$tmp/gap" >"$tmp/gapout" 2>/dev/null || fail "gap: exit"
[ "$(printf 'a\n\nd\n')" = "$(cat "$tmp/gapout")" ] || fail "gap: got '$(cat "$tmp/gapout")'"

# 4. errors: exit 1 with the line number
expect_error() { # NAME FILE PATTERN [ARGS...]
    local name=$1 file=$2 pat=$3
    shift 3
    "$mtpe" rescore "$@" -i "$file" >/dev/null 2>"$tmp/err"
    local rc=$?
    [ "$rc" -eq 1 ] || fail "$name: exit $rc, want 1"
    grep -q -- "$pat" "$tmp/err" || fail "$name: message '$(cat "$tmp/err")' lacks '$pat'"
}
head -n 2 "$r2l/rescored.out" >"$tmp/bad1"
echo "1 ||| only two fields" >>"$tmp/bad1"
expect_error "two fields" "$tmp/bad1" "bad1:3:" --weights F0=1 R2L=1
printf '0 ||| x ||| F0= abc ||| -1\n' >"$tmp/bad2"
expect_error "bad value" "$tmp/bad2" "bad2:1:" --weights F0=1
printf '1 ||| x ||| F0= -1 ||| -1\n0 ||| y ||| F0= -1 ||| -1\n' >"$tmp/bad3"
expect_error "decreasing id" "$tmp/bad3" "bad3:2:" --weights F0=1
printf 'x ||| x ||| F0= -1 ||| -1\n' >"$tmp/bad4"
expect_error "bad id" "$tmp/bad4" "bad4:1:" --weights F0=1
expect_error "unknown weight" "$r2l/rescored.out" "no feature LM" --weights F0=1 LM=1
"$mtpe" rescore --weights F0 -i "$r2l/rescored.out" >/dev/null 2>&1
[ $? -eq 2 ] || fail "--weights F0 (no =W): want exit 2"
"$mtpe" rescore -i "$r2l/rescored.out" >/dev/null 2>&1
[ $? -eq 2 ] || fail "no --weights: want exit 2"

cli_finish rescore_cli "all passed"
