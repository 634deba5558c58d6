#!/usr/bin/env bash
# gemm_type_cli.sh: --gemm-type float32|int16|int8|auto in `mtpe translate`
# (command line and config files) and `mtpe score`, on the transformer-tiny
# fixture of tests/data/marian (a bad value refused; --kv-cache is no
# option of translate); and the default model with its shipped shortlist.
#   bash gemm_type_cli.sh <path-to-mtpe> <source-dir>
#
# What an integer GEMM must give: nearly the same translations and scores
# as fp32, but not exactly the same numbers (else the option did nothing).
# The fixture is a barely trained model whose outputs are often degenerate
# repetitions, where a small change of the scores changes the text; Marian's
# own int8 output for it (beam4-int8.out) equals its fp32 output
# (beam4.out) on 39 of 60 lines.  So the bounds here: 1-best lines equal to
# fp32 on at least 75% of the lines for int16 and 60% for int8 (50% for
# auto, whose choices depend on timings); n-best
# entries with the same text at the same rank have normalised scores within
# 5% of fp32's, and at least one of them differs; sentence scores of
# `mtpe score` within 10% each and 0.5% in total, at least one different.
mtpe=$(realpath "${1:?usage: gemm_type_cli.sh MTPE SRCDIR}")
src=$(realpath "${2:?usage: gemm_type_cli.sh MTPE SRCDIR}")
d=$src/tests/data/marian/transformer-tiny
. "$src/tests/cli_common.bash"
tiny=(-m "$d/model.npz" -v "$d/vocab.spm" "$d/vocab.spm" -b 4 -n 0.6 --quiet -i "$d/input.en")
n_in=$(wc -l <"$d/input.en")

# equal_lines A B: how many lines are equal
equal_lines() { paste -d'\n' "$1" "$2" | awk 'NR % 2 { a = $0; next } $0 == a { n++ } END { print n + 0 }'; }

# ------------------------------------------------------------ 1-best
for g in float32 int16 int8 auto; do
    "$mtpe" translate "${tiny[@]}" --gemm-type "$g" >"$tmp/$g.out" 2>"$tmp/err" ||
        fail "--gemm-type $g: $(head -3 "$tmp/err")"
    [ "$(wc -l <"$tmp/$g.out")" = "$n_in" ] || fail "--gemm-type $g: $(wc -l <"$tmp/$g.out") lines"
done
cmp -s "$tmp/float32.out" "$d/beam4.out" || fail "--gemm-type float32 differs from Marian's beam4.out"
for g in int16:75 int8:60 auto:50; do
    name=${g%:*} pct=${g#*:}
    eq=$(equal_lines "$tmp/float32.out" "$tmp/$name.out")
    echo "--gemm-type $name: $eq of $n_in lines equal to float32"
    [ $((eq * 100)) -ge $((pct * n_in)) ] || fail "--gemm-type $name: only $eq of $n_in lines equal to float32 (want >= $pct%)"
done

# ------------------------------------------------------------ n-best
"$mtpe" translate "${tiny[@]}" --n-best >"$tmp/nb.float32" || fail "n-best float32"
for g in int16 int8; do
    "$mtpe" translate "${tiny[@]}" --n-best --gemm-type "$g" >"$tmp/nb.$g" || fail "n-best $g"
    [ "$(wc -l <"$tmp/nb.$g")" = "$(wc -l <"$tmp/nb.float32")" ] || fail "n-best $g: line count"
    # fields: ID ||| text ||| F0= s ||| norm
    paste -d'\t' "$tmp/nb.float32" "$tmp/nb.$g" | awk -F'\t' -v g="$g" '
        {
            split($1, a, " [|][|][|] "); split($2, b, " [|][|][|] ")
            if (a[1] != b[1]) { printf "n-best %s line %d: id %s, want %s\n", g, NR, b[1], a[1]; bad++; next }
            if (a[2] != b[2]) next
            same++
            d = a[4] - b[4]; if (d < 0) d = -d
            r = a[4] < 0 ? -a[4] : a[4]
            if (d > 0) differ++
            if (d > 0.05 * r + 1e-6) { printf "n-best %s line %d: score %s, float32 %s\n", g, NR, b[4], a[4]; bad++ }
        }
        END {
            printf "n-best %s: %d entries with the float32 text, %d of them with other scores\n", g, same, differ
            if (same < NR / 2) { printf "n-best %s: too few entries agree\n", g; bad++ }
            if (differ == 0) { printf "n-best %s: scores identical to float32: the option did nothing\n", g; bad++ }
            exit bad > 0
        }' || fail "n-best --gemm-type $g"
done

# ------------------------------------------------------------ configs
printf 'gemm-type: int8\n' >"$tmp/int8.yml"
"$mtpe" translate "${tiny[@]}" -c "$tmp/int8.yml" >"$tmp/cfg.out" 2>"$tmp/err" ||
    fail "gemm-type in a config: $(cat "$tmp/err")"
cmp -s "$tmp/cfg.out" "$tmp/int8.out" || fail "gemm-type: int8 in a config differs from --gemm-type int8"
"$mtpe" translate "${tiny[@]}" -c "$tmp/int8.yml" --gemm-type float32 >"$tmp/cfg2.out" ||
    fail "config + command line"
cmp -s "$tmp/cfg2.out" "$tmp/float32.out" || fail "--gemm-type on the command line does not win over the config"
# Marian's spellings of the types that mtpe accepts
"$mtpe" translate "${tiny[@]}" --gemm-type intgemm8 >"$tmp/ig8.out" || fail "--gemm-type intgemm8"
cmp -s "$tmp/ig8.out" "$tmp/int8.out" || fail "--gemm-type intgemm8 differs from int8"

# ---------------------------------------------------------- bad values
for bad in int4 "" float; do
    if "$mtpe" translate "${tiny[@]}" --gemm-type "$bad" >/dev/null 2>"$tmp/err"; then
        fail "--gemm-type '$bad': exit status 0"
    else
        grep -q -- "--gemm-type: '$bad' is not float32, int16, int8 or auto" "$tmp/err" ||
            fail "--gemm-type '$bad': message: $(cat "$tmp/err")"
    fi
done
printf 'gemm-type: packed3\n' >"$tmp/bad.yml"
"$mtpe" translate "${tiny[@]}" -c "$tmp/bad.yml" >/dev/null 2>"$tmp/err" &&
    fail "gemm-type: packed3 in a config: exit status 0"
grep -q "packed3" "$tmp/err" || fail "bad gemm-type in a config: message: $(cat "$tmp/err")"

# -------------------------------------------------------------- score
sc=(-m "$d/model.npz" -v "$d/vocab.spm" "$d/vocab.spm" --quiet -t "$d/input.en" "$d/ref.de")
"$mtpe" score "${sc[@]}" >"$tmp/s.float32" || fail "score float32"
for g in int16 int8 auto; do
    "$mtpe" score "${sc[@]}" --gemm-type "$g" >"$tmp/s.$g" 2>"$tmp/err" ||
        fail "score --gemm-type $g: $(cat "$tmp/err")"
    paste "$tmp/s.float32" "$tmp/s.$g" | awk -v g="$g" -v n="$n_in" '
        {
            a += $1; b += $2; d = $1 - $2; if (d < 0) d = -d
            if (d > 0) differ++
            if (d > 0.1 * (($1 < 0) ? -$1 : $1)) { printf "score %s line %d: %s, float32 %s\n", g, NR, $2, $1; bad++ }
        }
        END {
            t = (a - b) / a; if (t < 0) t = -t
            printf "score %s: total %.2f vs float32 %.2f, %d of %d lines differ\n", g, b, a, differ, NR
            if (NR != n) { printf "score %s: %d lines, want %d\n", g, NR, n; bad++ }
            if (t > 0.005) { printf "score %s: total off by %.3f%%\n", g, 100 * t; bad++ }
            if (differ == 0) { printf "score %s: identical to float32: the option did nothing\n", g; bad++ }
            exit bad > 0
        }' || fail "score --gemm-type $g"
done
"$mtpe" score "${sc[@]}" --gemm-type int4 >/dev/null 2>"$tmp/err" && fail "score --gemm-type int4: exit 0"
grep -q -- "--gemm-type: 'int4'" "$tmp/err" || fail "score --gemm-type int4: message: $(cat "$tmp/err")"

# --kv-cache is no option of translate: the caches follow --gemm-type
# (tests/models/test_translate.c tries every precision)
"$mtpe" translate "${tiny[@]}" --kv-cache float32 >/dev/null 2>"$tmp/err" && fail "--kv-cache: exit 0"
grep -q -- "--kv-cache" "$tmp/err" || fail "--kv-cache: message: $(cat "$tmp/err")"

# ------------------------- the default model with its shipped shortlist
def=$src/assets/models/en-de
if [ -f "$def/model.npz" ] && [ -f "$def/lex.bin" ] && [ -f "$src/assets/samples/sample.en.txt" ]; then
    "$mtpe" shortlist --info "$def/lex.bin" >"$tmp/info" 2>&1 || fail "lex.bin: $(cat "$tmp/info")"
    head -5 "$src/assets/samples/sample.en.txt" >"$tmp/s5.en"
    for g in float32 int8; do
        MTPE_ASSETS=$src/assets "$mtpe" translate --quiet --gemm-type "$g" \
            --shortlist "$def/lex.bin" 100 100 0 -i "$tmp/s5.en" >"$tmp/def.$g" 2>"$tmp/err" ||
            fail "default model + lex.bin, $g: $(cat "$tmp/err")"
        [ "$(wc -l <"$tmp/def.$g")" = 5 ] || fail "default model + lex.bin, $g: $(wc -l <"$tmp/def.$g") lines"
    done
else
    fail "default model, its lex.bin or sample.en.txt missing (they are in assets/)"
fi

cli_finish gemm_type_cli
