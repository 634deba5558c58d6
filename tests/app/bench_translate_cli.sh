#!/usr/bin/env bash
# bench_translate_cli.sh: `mtpe bench translate` on the transformer-tiny
# fixture with a few lines: both tables have all their rows, the cost
# columns follow from the printed figures (ops per token = the printed ops
# per source position, per scored row and per column, over the input's
# printed tokens and sentences, the rows from rows/out and the output's
# tokens; limit = peak / ops per token, fraction = speed / limit, tokens
# per USD = speed x 3600 / price), beam 1 scores no more rows than output
# tokens + EOS and beam 4 more than one per output token, the
# shortlist rows use a shortlist smaller than the vocabulary, and the
# int8 + shortlist / float32 ratio is the ratio of the printed speeds.
#   bash bench_translate_cli.sh <path-to-mtpe> <source-dir>
mtpe=$(realpath "${1:?usage: bench_translate_cli.sh MTPE SRCDIR}")
src=$(realpath "${2:?usage: bench_translate_cli.sh MTPE SRCDIR}")
d=$src/tests/data/marian/transformer-tiny
. "$src/tests/cli_common.bash"
m=(-m "$d/model.npz" -v "$d/vocab.spm" "$d/vocab.spm" -i "$d/input.en" --lines 6)

if "$mtpe" bench translate "${m[@]}" --tables batching >"$tmp/b" 2>"$tmp/err"; then
    rows=$(grep -cE '^ +[14] +(1|32) +[12]  (on|off) ' "$tmp/b")
    [ "$rows" = 16 ] || fail "batching table: $rows rows, want 16: $(cat "$tmp/b")"
    grep -q '^== gemm' "$tmp/b" && fail "--tables batching also ran the gemm table"
    grep -q 'searches in order of source length, longest first' "$tmp/b" ||
        fail "default order (--maxi-batch-sort src) not said: $(head -5 "$tmp/b")"
else
    fail "bench translate --tables batching: $(cat "$tmp/err")"
fi

if "$mtpe" bench translate "${m[@]}" --tables gemm --shortlist "$d/lex.s2t" 50 50 \
    --peak-gops 500 --usd-per-hour 0.2 >"$tmp/g" 2>"$tmp/err"; then
    grep -q '^== batching' "$tmp/g" && fail "--tables gemm also ran the batching table"
    awk '
        /^input: .* sentences per run, [0-9]+ source tokens/ {
            for (i = 1; i < NF; i++) {
                if ($(i + 1) == "sentences") sents = $i + 0
                if ($(i + 1) == "source") stoks = $i + 0
            }
        }
        /^   \(tokens \+ EOS\) .* per decoder row .* x C/ {
            per_pos = $4; sub(",", "", per_pos); per_pos += 0; per_row = $8 + 0; per_col = $10 + 0
        }
        ($1 == "float32" || $1 == "int8" || $1 == "int8+sl") && NF == 12 && $2 ~ /^[0-9]+$/ {
            n++
            # gemm beam batch src trg wall cols rows/out MOP/tok limit %limit Msrc/USD
            speed = $4; cols = $7; ro = $8; mop = $9; limit = $10; pct = $11; usd = $12
            sub("%", "", pct); pct += 0  # a number again: sub() leaves a string, compared as text
            if ($2 == 1 && !(ro > 0.5 && ro <= 1.0)) { printf "%s beam 1: rows/out %s\n", $1, ro; bad++ }
            if ($2 == 4 && !(ro * 4 > 1.0 && ro < 4.0)) { printf "%s beam 4: rows/out %s\n", $1, ro; bad++ }
            trg = $5 / speed * stoks
            rows = ro * $2 * (trg + sents)
            wmop = 1e-6 * (per_pos * (stoks + sents) + (per_row + per_col * cols) * rows) / stoks
            if (!(stoks > 0 && per_pos > 0) || mop < wmop * 0.98 || mop > wmop * 1.02) {
                printf "%s %s %s: MOP/tok %s, want %g\n", $1, $2, $3, mop, wmop; bad++
            }
            if ($1 == "int8+sl" && !(cols > 0 && cols < 4000)) { printf "shortlist cols %s\n", cols; bad++ }
            if ($1 != "int8+sl" && cols != 4000) { printf "%s cols %s, want V = 4000\n", $1, cols; bad++ }
            want = 500e9 / (mop * 1e6)
            if (limit < want * 0.99 || limit > want * 1.01) { printf "%s: limit %s, want %g\n", $1, limit, want; bad++ }
            f = 100 * speed / limit
            if (pct < f - 0.1 || pct > f + 0.1) { printf "%s: %%limit %s, want %g\n", $1, pct, f; bad++ }
            u = speed * 3600 / 0.2 * 1e-6
            if (usd < u * 0.99 - 0.01 || usd > u * 1.01 + 0.01) { printf "%s: tok/USD %s, want %g\n", $1, usd, u; bad++ }
            if ($2 == 4 && $3 == 32 && $1 == "float32") f32 = speed
            if ($2 == 4 && $3 == 32 && $1 == "int8+sl") i8 = speed
        }
        /^int8 \+ shortlist over float32/ { ratio = $(NF - 2); sub("x", "", ratio); ratio += 0; seen = 1 }
        END {
            if (n != 12) { printf "gemm table: %d rows, want 12\n", n; bad++ }
            r = f32 > 0 ? i8 / f32 : 0
            if (!seen || ratio < r * 0.98 - 0.01 || ratio > r * 1.02 + 0.01) {
                printf "ratio line %s, want %g\n", ratio, r; bad++
            }
            exit bad > 0
        }' "$tmp/g" || fail "gemm table: $(cat "$tmp/g")"
    grep -q "int8 limit = 500.0 GOP/s (one core, --peak-gops)" "$tmp/g" || fail "limit derivation not printed"
    grep -q "^cpu isa [a-z0-9]*, OpenBLAS kernels .* (OPENBLAS_CORETYPE=" "$tmp/g" ||
        fail "the float32 baseline's OpenBLAS kernel set not printed"
else
    fail "bench translate --tables gemm: $(cat "$tmp/err")"
fi

# the measured peak: probed before each integer row, the largest so far used;
# every row's limit lies between the first probe's and the largest probe's
if "$mtpe" bench translate "${m[@]}" --tables gemm --shortlist "$d/lex.s2t" 50 50 >"$tmp/p" \
    2>"$tmp/err"; then
    awk '
        /^int8 peak: [0-9.]+ GOP\/s, the largest of/ {
            top = $3; probes = $8; first = $12; sub("[)];?", "", first); first += 0; seen = 1
        }
        ($1 == "int8" || $1 == "int8+sl") && NF == 12 { mop[++n] = $9; lim[n] = $10 }
        END {
            if (!seen) { print "no line with the largest probe"; exit 1 }
            if (probes != 9 || !(top >= first && first > 0)) {
                printf "probes %s, largest %s, first %s\n", probes, top, first; exit 1
            }
            for (i = 1; i <= n; i++) {
                lo = first * 1e3 / mop[i]; hi = top * 1e3 / mop[i]
                if (lim[i] < lo * 0.99 || lim[i] > hi * 1.01) {
                    printf "row %d: limit %s outside [%g, %g]\n", i, lim[i], lo, hi; exit 1
                }
            }
            if (n != 8) { printf "%d integer rows\n", n; exit 1 }
        }' "$tmp/p" || fail "measured peak: $(cat "$tmp/p")"
else
    fail "bench translate --tables gemm (measured peak): $(cat "$tmp/err")"
fi

"$mtpe" bench translate "${m[@]}" --tables batching --maxi-batch-sort none >"$tmp/n" 2>&1 &&
    grep -q 'searches in input order' "$tmp/n" || fail "--maxi-batch-sort none: $(head -5 "$tmp/n")"
"$mtpe" bench translate "${m[@]}" --maxi-batch-sort trg >"$tmp/n" 2>&1 && fail "--maxi-batch-sort trg: exit 0"
grep -q "'trg' is not one of src, none" "$tmp/n" || fail "--maxi-batch-sort trg: $(cat "$tmp/n")"
# --rows: only the rows named, in the table's order
"$mtpe" bench translate "${m[@]}" --tables gemm --peak-gops 500 --rows int8:4:1,float32:1:32 \
    >"$tmp/r" 2>&1 || fail "--rows: $(cat "$tmp/r")"
got=$(grep -E '^(float32|int8|int8\+sl) +[14] +(1|32) ' "$tmp/r" | awk '{print $1 ":" $2 ":" $3}' | tr '\n' ' ')
[ "$got" = "float32:1:32 int8:4:1 " ] || fail "--rows int8:4:1,float32:1:32 ran: $got"
"$mtpe" bench translate "${m[@]}" --tables gemm --rows int8:2:32 >"$tmp/r" 2>&1 && fail "--rows int8:2:32: exit 0"
grep -q 'GEMM:BEAM:BATCH' "$tmp/r" || fail "--rows int8:2:32: $(cat "$tmp/r")"
"$mtpe" bench translate "${m[@]}" --tables nothing >/dev/null 2>&1 && fail "--tables nothing: exit 0"
"$mtpe" bench translate "${m[@]}" --usd-per-hour 0 >/dev/null 2>&1 && fail "--usd-per-hour 0: exit 0"
# --kv-cache: as translate's (bfloat16 contexts timed), a bad value refused
"$mtpe" bench translate "${m[@]}" --tables gemm --peak-gops 500 --rows int8:4:32 --kv-cache bfloat16 \
    >"$tmp/k" 2>&1 || fail "--kv-cache bfloat16: $(cat "$tmp/k")"
grep -qE '^int8 +4 +32 ' "$tmp/k" || fail "--kv-cache bfloat16: no int8 row: $(cat "$tmp/k")"
"$mtpe" bench translate "${m[@]}" --kv-cache half >"$tmp/k" 2>&1 && fail "--kv-cache half: exit 0"
grep -q -- "--kv-cache: 'half'" "$tmp/k" || fail "--kv-cache half: $(cat "$tmp/k")"

cli_finish bench_translate_cli
