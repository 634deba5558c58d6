#!/usr/bin/env bash
# train_cli.sh: `mtpe train` end to end on a toy corpus (the 60 sentence
# pairs of the transformer-tiny fixture with its vocab.spm; dim 16, 1+1
# layers, dropout and exponential smoothing on):
#   - the cost goes down; every checkpoint file is written
#   - a run stopped after N updates and continued to 2N prints exactly the
#     same progress lines (cost, labels, gradient norm) as an uninterrupted
#     2N-update run
#   - kill -9 during training leaves a model.npz that loads (and continues)
#   - a missing .spm vocabulary is trained; validation metrics are reported
#   - speed lines (target words/s, GFLOP/s, fraction of the fp32 peak) before
#     each validation and at the end
#   - usage errors: unknown option (exit 2, named), mismatched corpus files
# Usage: bash train_cli.sh <path-to-mtpe> <source-dir>
set -u
MTPE=${1:?usage: train_cli.sh MTPE SRC}
SRC=${2:?usage: train_cli.sh MTPE SRC}
D=$SRC/tests/data/marian/transformer-tiny
[ -f "$D/vocab.spm" ] || { echo "fixture missing: $D (it is in the source tree)"; exit 1; }
T=$(mktemp -d /tmp/mtpe_train_cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

# cost lines without the clock-dependent fields
costs() { grep -a -E ' : Up\. ' "$1" | sed -E 's/^\[[^]]*\] //; s/ : Time [^:]* : [^:]* words\/s//'; }

COMMON=(-t "$D/input.en" "$D/ref.de" -v "$D/vocab.spm" "$D/vocab.spm"
        --dim-emb 16 --enc-depth 1 --dec-depth 1 --transformer-heads 2
        --transformer-dim-ffn 32 --transformer-dropout 0.1 --exponential-smoothing
        --mini-batch 16 --maxi-batch 2 --learn-rate 0.003 --lr-warmup 4
        --disp-freq 4 --save-freq 12 --seed 1111 --cpu-threads 1 --quiet)
N=24

# 1. uninterrupted 2N-update run
mkdir -p "$T/a"
"$MTPE" train -m "$T/a/model.npz" "${COMMON[@]}" --after-batches $((2 * N)) \
    --log "$T/a.log"
rc=$?
[ $rc -eq 0 ] && ok "training run exits 0" || bad "training run exit code $rc"
for f in model.npz model.npz.optimizer.npz model.npz.progress.yml model.npz.yml \
         model.npz.decoder.yml model.iter12.npz; do
    [ -s "$T/a/$f" ] || bad "missing $f"
done
ok "checkpoint files written"
costs "$T/a.log" > "$T/a.costs"
n_lines=$(wc -l < "$T/a.costs")
[ "$n_lines" -eq $((2 * N / 4)) ] && ok "$n_lines progress lines" ||
    bad "expected $((2 * N / 4)) progress lines, got $n_lines"
first=$(head -1 "$T/a.costs" | sed -E 's/.*Cost ([0-9.]+).*/\1/')
last=$(tail -1 "$T/a.costs" | sed -E 's/.*Cost ([0-9.]+).*/\1/')
if awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.5) }'; then
    ok "cost decreases ($first -> $last)"
else
    bad "cost does not decrease ($first -> $last)"
fi
grep -q "^batches: $((2 * N))$" "$T/a/model.npz.progress.yml" && ok "progress.yml batches" ||
    bad "progress.yml does not record $((2 * N)) updates"
grep -q '^  - model.npz$\|^  - .*/a/model.npz$' "$T/a/model.npz.decoder.yml" &&
    ok "decoder.yml names the model" || bad "decoder.yml"
"$MTPE" convert --info "$T/a/model.npz" > "$T/info.txt" 2>&1 &&
    grep -q "type: transformer" "$T/info.txt" && ok "model.npz loads (convert --info)" ||
    bad "model.npz does not load"

# 2. N updates, then continue to 2N: identical progress lines
mkdir -p "$T/b"
"$MTPE" train -m "$T/b/model.npz" "${COMMON[@]}" --after-batches $N --log "$T/b.log" ||
    bad "first half exit code"
"$MTPE" train -m "$T/b/model.npz" "${COMMON[@]}" --after-batches $((2 * N)) \
    --log "$T/b.log" || bad "second half exit code"
grep -q "Restoring the corpus state\|Loading model" "$T/b.log" && ok "second half continued" ||
    bad "second half did not load the checkpoint"
costs "$T/b.log" > "$T/b.costs"
if cmp -s "$T/a.costs" "$T/b.costs"; then
    ok "resumed run prints the same progress lines as the uninterrupted run"
else
    bad "resumed run differs:"
    diff "$T/a.costs" "$T/b.costs" | head -10
fi
# resuming mid-epoch too (N+2 is not an epoch boundary: 4 batches per epoch)
mkdir -p "$T/c"
"$MTPE" train -m "$T/c/model.npz" "${COMMON[@]}" --after-batches $((N + 2)) \
    --log "$T/c.log" || bad "c first part"
"$MTPE" train -m "$T/c/model.npz" "${COMMON[@]}" --after-batches $((2 * N)) \
    --log "$T/c.log" || bad "c second part"
costs "$T/c.log" > "$T/c.costs"
cmp -s "$T/a.costs" "$T/c.costs" && ok "mid-epoch resume identical" ||
    { bad "mid-epoch resume differs"; diff "$T/a.costs" "$T/c.costs" | head -10; }

# 3. kill -9 while checkpoints are being written: model.npz stays loadable
mkdir -p "$T/k"
for delay in 0.6 1.1 1.7; do
    "$MTPE" train -m "$T/k/model.npz" "${COMMON[@]}" --after-batches 100000 --save-freq 1 \
        --disp-freq 1000 > /dev/null 2>&1 &
    pid=$!
    sleep $delay
    kill -9 $pid 2> /dev/null
    wait $pid 2> /dev/null
    if [ -f "$T/k/model.npz" ]; then
        "$MTPE" convert --info "$T/k/model.npz" > /dev/null 2>&1 &&
            ok "model.npz loadable after kill -9 at ${delay}s" ||
            bad "model.npz corrupt after kill -9 at ${delay}s"
    else
        echo "note: no checkpoint yet after ${delay}s"
    fi
done
if [ -f "$T/k/model.npz" ]; then
    b0=$(sed -n 's/^batches: //p' "$T/k/model.npz.progress.yml")
    "$MTPE" train -m "$T/k/model.npz" "${COMMON[@]}" --after-batches $((b0 + 3)) \
        > /dev/null 2>&1 && ok "training continues after kill -9 (from update $b0)" ||
        bad "cannot continue after kill -9"
fi

# 4. a missing .spm is trained; validation with every metric
mkdir -p "$T/v"
head -12 "$D/input.en" > "$T/valid.en"
head -12 "$D/ref.de" > "$T/valid.de"
"$MTPE" train -m "$T/v/model.npz" -t "$D/input.en" "$D/ref.de" \
    -v "$T/v/vocab.spm" "$T/v/vocab.spm" --dim-vocabs 200 200 --dim-emb 16 --enc-depth 1 \
    --dec-depth 1 --transformer-heads 2 --transformer-dim-ffn 32 --after-batches 8 \
    --mini-batch 16 --seed 5 --cpu-threads 1 --valid-sets "$T/valid.en" "$T/valid.de" \
    --valid-freq 4 --valid-metrics ce-mean-words perplexity cross-entropy bleu chrf \
    --keep-best --overwrite --quiet --log "$T/v.log"
rc=$?
[ $rc -eq 0 ] && [ -s "$T/v/vocab.spm" ] && ok "missing .spm trained" || bad "spm training ($rc)"
missing=""
for m in ce-mean-words perplexity cross-entropy bleu chrf; do
    grep -q "\[valid\] Ep\. [0-9]* : Up\. 4 : $m : " "$T/v.log" || missing="$missing $m"
done
[ -z "$missing" ] && ok "validation lines for every metric" || bad "no validation for$missing"
[ -s "$T/v/model.npz.best-ce-mean-words.npz" ] && ok "keep-best model written" ||
    bad "no keep-best model"
[ ! -e "$T/v/model.iter4.npz" ] && ok "--overwrite keeps no iter copies" || bad "iter copy"

# 4a. speed lines: one before each validation (updates 4 and 8) and one for
# the whole run at the end, with words/s, GFLOP/s and, on a CPU with
# AVX-512 (where the peak probe runs), the fraction of the measured peak;
# a run without validation prints only the final one.
num='[0-9]+\.[0-9]+'
if grep -q -w avx512f /proc/cpuinfo 2> /dev/null; then
    tail_re=" = $num% of the fp32 peak of 1 core \($num GFLOP/s per core measured\)$"
else
    tail_re="( = $num% of the fp32 peak of 1 core \($num GFLOP/s per core measured\)| \(no fp32 peak: the probe needs AVX-512\))$"
fi
speed_re="\[training\] speed: ($num) target words/s, ($num) GFLOP/s in matrix products$tail_re"
n_speed=$(grep -c -E "$speed_re" "$T/v.log")
n_any=$(grep -c "\[training\] speed: " "$T/v.log")
[ "$n_speed" -eq 3 ] && [ "$n_any" -eq 3 ] && ok "3 speed lines in the validated run" ||
    { bad "speed lines: $n_speed well-formed of $n_any, 3 expected"; grep "speed:" "$T/v.log"; }
grep -B1 "\[valid\] Ep\. [0-9]* : Up\. 4 : ce-mean-words" "$T/v.log" | grep -q -E "$speed_re" &&
    ok "a speed line precedes the validation" || bad "no speed line before the validation"
if grep -E "$speed_re" "$T/v.log" "$T/a.log" | sed -E "s/.*speed: ($num) target words\/s, ($num) GFLOP.*/\1 \2/" |
    awk '$1 <= 0 || $2 <= 0 { bad = 1 } END { exit bad }'; then
    ok "speed lines report positive words/s and GFLOP/s"
else
    bad "a speed line with zero words/s or GFLOP/s"
fi
[ "$(grep -c -E "$speed_re" "$T/a.log")" -eq 1 ] && ok "one speed line without validation" ||
    bad "run a: $(grep -c 'speed:' "$T/a.log") speed lines, 1 expected"

# 4b. early stopping: with learning rate 0 the validation cost never improves,
# so --early-stopping 2 ends training at the third validation
mkdir -p "$T/e"
"$MTPE" train -m "$T/e/model.npz" "${COMMON[@]}" --learn-rate 0 --after-batches 100 \
    --valid-sets "$T/valid.en" "$T/valid.de" --valid-freq 2 --early-stopping 2 \
    --log "$T/e.log" || bad "early-stopping run exit code"
grep -q "^batches: 6$" "$T/e/model.npz.progress.yml" &&
    grep -q "Up. 6 : cross-entropy : .* : stalled 2 times" "$T/e.log" &&
    ok "early stopping after 2 stalled validations" || bad "early stopping"

# 4c. Marian 1.12 differentiates the sum over labels whatever --cost-type
# says (the type divides the displayed cost only), so ce-sum and ce-mean-words
# give the same weights; with --clip-norm 1 that holds only if both clip the
# same (the sum's gradient), which a per-word mean's smaller norm would not
for ct in ce-sum ce-mean-words; do
    mkdir -p "$T/ct-$ct"
    "$MTPE" train -m "$T/ct-$ct/model.npz" "${COMMON[@]}" --clip-norm 1 --cost-type $ct \
        --after-batches 8 --log "$T/ct-$ct.log" || bad "--cost-type $ct run"
done
if cmp -s "$T/ct-ce-sum/model.npz" "$T/ct-ce-mean-words/model.npz"; then
    ok "ce-sum and ce-mean-words train the same weights (Marian's sum gradient)"
else
    bad "ce-sum and ce-mean-words trained different weights"
fi
c1=$(costs "$T/ct-ce-mean-words.log" | head -1 | sed -E 's/.*Cost ([0-9.]+).*/\1/')
awk -v c="$c1" 'BEGIN { exit !(c > 1 && c < 20) }' && ok "ce-mean-words displays a per-word cost ($c1)" ||
    bad "ce-mean-words displays $c1"

# 4d. --precision bfloat16 (bfloat16 operands of the matrix products, float32
# weights and optimizer): the same fixed-seed run reaches the float32 cost
# (last progress line within 5% of float32's, both far below the first)
for pr in float32 bfloat16; do
    mkdir -p "$T/pr-$pr"
    "$MTPE" train -m "$T/pr-$pr/model.npz" -t "$D/input.en" "$D/ref.de" -v "$D/vocab.spm" \
        "$D/vocab.spm" --dim-emb 32 --enc-depth 1 --dec-depth 1 --transformer-heads 2 \
        --transformer-dim-ffn 64 --mini-batch 16 --maxi-batch 2 --learn-rate 0.003 \
        --lr-warmup 4 --disp-freq 10 --seed 1111 --cpu-threads 2 --after-batches 60 \
        --cost-type ce-mean-words --precision $pr --quiet --log "$T/pr-$pr.log" ||
        bad "--precision $pr run"
done
c0=$(costs "$T/pr-float32.log" | head -1 | sed -E 's/.*Cost ([0-9.]+).*/\1/')
c32=$(costs "$T/pr-float32.log" | tail -1 | sed -E 's/.*Cost ([0-9.]+).*/\1/')
c16=$(costs "$T/pr-bfloat16.log" | tail -1 | sed -E 's/.*Cost ([0-9.]+).*/\1/')
if awk -v a="$c32" -v b="$c16" -v f="$c0" 'BEGIN { d = b - a; if (d < 0) d = -d;
        exit !(a > 0 && d <= 0.05 * a && b < f / 2) }'; then
    ok "bfloat16 training reaches the float32 cost ($c16 vs $c32, from $c0)"
else
    bad "bfloat16 training cost $c16, float32 $c32 (first $c0)"
fi
grep -q "bfloat16 matrix products" "$T/pr-bfloat16.log" && ok "bfloat16 run says so" ||
    bad "bfloat16 run does not log its precision"
"$MTPE" train -m "$T/pr-x.npz" -t "$D/input.en" "$D/ref.de" -v "$D/vocab.spm" "$D/vocab.spm" \
    --precision float16 --quiet 2> "$T/pr.err"
rc=$?
[ $rc -eq 2 ] && grep -q "float16" "$T/pr.err" && ok "--precision float16 refused (exit 2)" ||
    bad "--precision float16: exit $rc"

# 5. usage errors
"$MTPE" train --no-such-option 2> "$T/err.txt"
rc=$?
[ $rc -eq 2 ] && grep -q -- "--no-such-option" "$T/err.txt" && ok "unknown option: exit 2" ||
    bad "unknown option: exit $rc, $(cat "$T/err.txt")"
head -5 "$D/ref.de" > "$T/short.de"
"$MTPE" train -m "$T/x.npz" -t "$D/input.en" "$T/short.de" -v "$D/vocab.spm" "$D/vocab.spm" \
    --dim-emb 16 --quiet --log "$T/x.log" 2> "$T/x.err"
rc=$?
[ $rc -eq 1 ] && grep -q "short.de has 5 lines" "$T/x.log" && ok "line-count mismatch reported" ||
    bad "line-count mismatch: exit $rc"
"$MTPE" train --help | grep -q -- "--exponential-smoothing" && ok "--help lists options" ||
    bad "--help"

exit $fail
