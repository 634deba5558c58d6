#!/usr/bin/env bash
# mpi_cli.sh: `mpirun -np 2 mtpe train` and `mpirun -np 2 mtpe translate`
# (issue 37; app/dist.h) on the transformer-tiny fixture:
#   1. K updates on 2 ranks (--optimizer-delay 1) give the parameters of K
#      updates on 1 rank with --optimizer-delay 2 (same seed, same batches),
#      within the bound derived in app/cmd_train.c ("MPI"); a 1-rank run
#      without the delay differs by far more (the comparison can fail)
#   2. the checkpoints are written once (one "Saving model weights" line per
#      save on the job's stderr, as many as the 1-rank run has)
#   3. a 2-rank run stopped and continued on 2 ranks ends bitwise as the
#      uninterrupted one; the 2-rank checkpoint continued on 1 rank with
#      --optimizer-delay 2 prints the progress lines (costs) of the
#      uninterrupted 1-rank run
#   4. kill -9 of one rank mid-run: the job exits non-zero with a one-line
#      message of mtpe's or mpirun's, the last checkpoint loads and translates
#   5. translate on 2 ranks is byte-identical to 1 process: plain, n-best,
#      hard alignments, word scores, standard input, PO, XLIFF and text
#      documents
#   6. postedit and translate --ape (not sharded) refuse 2 ranks: exit 2,
#      one line of mtpe's naming the reason, no output, -o FILE not created;
#      under mpirun -np 1 postedit runs and equals the plain process
# Skips (exit 77) only when this mtpe was built without MPI (MT_MPI).
# Usage: bash mpi_cli.sh <path-to-mtpe> <source-dir>
mtpe=$(realpath "${1:?usage: mpi_cli.sh MTPE SRCDIR}")
src=$(realpath "${2:?usage: mpi_cli.sh MTPE SRCDIR}")
. "$src/tests/cli_common.bash"
d=$src/tests/data/marian/transformer-tiny

if ! ldd "$mtpe" 2>/dev/null | grep -q 'libmpi'; then
    echo "SKIP: $mtpe was built without MPI (MT_MPI=OFF or no libopenmpi-dev)"
    exit 77
fi
if ! command -v mpirun >/dev/null; then
    echo "FAIL: the build has MPI but mpirun is missing (scripts/install-deps.sh: openmpi-bin)"
    exit 1
fi
# CI runs as root; 2 ranks on fewer cores need --oversubscribe.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Containers often forbid the cross-process reads (CMA) that Open MPI's
# shared-memory transport uses for large messages ("Read -1, expected ...,
# errno = 1"): plain copies instead.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# Open MPI leaks at MPI_Finalize (its own allocations): under the ASan build
# (scripts/test.sh --asan) LeakSanitizer is off for this test only.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mpi2=(mpirun -np 2 --oversubscribe --bind-to none)

# "MAX REL N TOTAL" for two npz files (uncompressed, as mtpe writes them):
# over their float32 arrays max |a - b|, the relative L2 norm of a - b
# (||a - b|| / ||b||) and how many of TOTAL values differ by more than 1e-5;
# names and shapes must match
npz_diff() {
    python3 - "$1" "$2" <<'EOF'
import array, ast, math, sys, zipfile
def load(p):
    out = {}
    with zipfile.ZipFile(p) as z:
        for n in z.namelist():
            b = z.read(n)
            v1 = b[6] == 1
            off = 10 if v1 else 12
            hl = int.from_bytes(b[8:off], "little")
            h = ast.literal_eval(b[off:off + hl].decode("latin1"))
            if h["descr"] != "<f4":
                continue
            a = array.array("f")
            a.frombytes(b[off + hl:])
            out[n] = (h["shape"], a)
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
if sorted(a) != sorted(b) or not a:
    print("names differ"); sys.exit(2)
mx = s = sb = 0.0
big = tot = 0
for n in a:
    if a[n][0] != b[n][0]:
        print("shape of", n, "differs"); sys.exit(2)
    for x, y in zip(a[n][1], b[n][1]):
        d = abs(x - y)
        mx = max(mx, d)
        s += d * d
        sb += y * y
        tot += 1
        big += d > 1e-5
print("%.3g %.3g %d %d" % (mx, math.sqrt(s / sb), big, tot))
EOF
}
# progress lines without the clock-dependent fields
costs() { grep -a -E ' : Up\. ' "$1" | sed -E 's/^\[[^]]*\] //; s/ : Time [^:]* : [^:]* words\/s//'; }

K=6
common=(-t "$d/input.en" "$d/ref.de" -v "$d/vocab.spm" "$d/vocab.spm"
    --dim-emb 16 --enc-depth 1 --dec-depth 1 --transformer-heads 2 --transformer-dim-ffn 32
    --transformer-dropout 0.1 --mini-batch 8 --maxi-batch 2 --learn-rate 0.003 --lr-warmup 2
    --disp-freq 1 --save-freq $K --seed 2222 --cpu-threads 1)

# ------------------------------------------------------------ 1 and 2
mkdir -p "$tmp/a" "$tmp/b" "$tmp/c"
"${mpi2[@]}" "$mtpe" train -m "$tmp/a/model.npz" "${common[@]}" --after-batches $K \
    >"$tmp/a.out" 2>"$tmp/a.err" || fail "2-rank training: exit $? ($(tail -3 "$tmp/a.err"))"
"$mtpe" train -m "$tmp/b/model.npz" "${common[@]}" --optimizer-delay 2 \
    --after-batches $((2 * K)) 2>"$tmp/b.err" || fail "1-rank delay-2 training: exit $?"
"$mtpe" train -m "$tmp/c/model.npz" "${common[@]}" --after-batches $K 2>"$tmp/c.err" ||
    fail "1-rank training: exit $?"
grep -q "2 MPI processes: an update is 2 x 1 mini-batches" "$tmp/a.err" ||
    fail "2-rank training does not say it runs on 2 processes"
if [ -s "$tmp/a/model.npz" ] && [ -s "$tmp/b/model.iter$K.npz" ]; then
    read -r max_ab rel_ab n_ab tot <<<"$(npz_diff "$tmp/a/model.npz" "$tmp/b/model.iter$K.npz")"
    read -r max_ac rel_ac n_ac _ <<<"$(npz_diff "$tmp/a/model.npz" "$tmp/c/model.npz")"
    # the bound (app/cmd_train.c, "How equal"): the gradient sums differ by
    # float rounding only, which Adam amplifies where a gradient cancels to
    # about 0: a few values may move by up to about lr, the rest agree
    # (measured: max 6e-4, relative L2 1e-5, 45 of 201,568 values > 1e-5)
    awk -v r="$rel_ab" -v n="$n_ab" -v t="$tot" -v m="$max_ab" \
        'BEGIN { exit !(r <= 1e-4 && n <= t / 1000 && m <= 2 * 0.003 * 6) }' ||
        fail "2 ranks x delay 1 vs 1 rank x delay 2: max |diff| $max_ab, relative L2 $rel_ab," \
            "$n_ab of $tot values differ by > 1e-5 (bound: 1e-4, 1/1000, 2 lr K)"
    # control: the comparison sees a run that trains on other batches
    awk -v r="$rel_ac" -v n="$n_ac" -v t="$tot" 'BEGIN { exit !(r > 1e-3 && n > t / 10) }' ||
        fail "control: 2 ranks vs 1 rank without delay differ by only $rel_ac ($n_ac values)"
    echo "parameters after $K updates, 2 ranks vs 1 rank delay 2: max |diff| $max_ab, relative" \
        "L2 $rel_ab, $n_ab of $tot > 1e-5; vs 1 rank delay 1: $max_ac, $rel_ac, $n_ac"
else
    fail "missing model files: $(ls "$tmp/a" "$tmp/b")"
fi
# the same with Adam's epsilon 1e-2, which bounds how much a step can
# amplify a gradient's rounding (by lr / eps = 0.3): the parameters agree to
# float rounding (measured max |diff| 1.2e-7)
mkdir -p "$tmp/ae" "$tmp/be"
eps=(--optimizer-params 0.9 0.999 1e-2 --after-batches $K)
"${mpi2[@]}" "$mtpe" train -m "$tmp/ae/model.npz" "${common[@]}" "${eps[@]}" 2>"$tmp/ae.err" ||
    fail "2-rank training (eps 1e-2): exit $? ($(tail -3 "$tmp/ae.err"))"
"$mtpe" train -m "$tmp/be/model.npz" "${common[@]}" "${eps[@]}" --optimizer-delay 2 \
    2>"$tmp/be.err" || fail "1-rank delay-2 training (eps 1e-2): exit $?"
read -r max_e rel_e _ <<<"$(npz_diff "$tmp/ae/model.npz" "$tmp/be/model.npz")"
awk -v m="$max_e" 'BEGIN { exit !(m <= 1e-6) }' ||
    fail "eps 1e-2: 2 ranks x delay 1 vs 1 rank x delay 2: max |diff| $max_e > 1e-6"
echo "with Adam eps 1e-2: max |diff| $max_e, relative L2 $rel_e"
# and with a delay on each rank: 2 ranks x delay 2 = 1 rank x delay 4
mkdir -p "$tmp/ad" "$tmp/bd"
"${mpi2[@]}" "$mtpe" train -m "$tmp/ad/model.npz" "${common[@]}" "${eps[@]}" --optimizer-delay 2 \
    2>"$tmp/ad.err" || fail "2-rank training (delay 2): exit $? ($(tail -3 "$tmp/ad.err"))"
"$mtpe" train -m "$tmp/bd/model.npz" "${common[@]}" "${eps[@]}" --optimizer-delay 4 \
    2>"$tmp/bd.err" || fail "1-rank delay-4 training: exit $?"
read -r max_d _ <<<"$(npz_diff "$tmp/ad/model.npz" "$tmp/bd/model.npz")"
awk -v m="$max_d" 'BEGIN { exit !(m <= 1e-6) }' ||
    fail "2 ranks x delay 2 vs 1 rank x delay 4: max |diff| $max_d > 1e-6"
saves_a=$(grep -c "Saving model weights" "$tmp/a.err")
saves_c=$(grep -c "Saving model weights" "$tmp/c.err")
[ "$saves_a" = "$saves_c" ] && [ "$saves_a" -ge 2 ] ||
    fail "2-rank run saved $saves_a times, the 1-rank run $saves_c times"
grep -q "rank 1" "$tmp/a.err" && fail "rank 1 printed: $(grep "rank 1" "$tmp/a.err" | head -2)"
ls "$tmp/a" | grep -q '\.next' && fail "staged checkpoint files left: $(ls "$tmp/a")"

# ------------------------------------------------------------------ 3
# stopped after K/2 updates and continued, both on 2 ranks: bitwise the
# uninterrupted 2-rank run (the corpus position counts mini-batches read)
mkdir -p "$tmp/h"
for n in $((K / 2)) $K; do
    "${mpi2[@]}" "$mtpe" train -m "$tmp/h/model.npz" "${common[@]}" --after-batches $n \
        2>"$tmp/h.err" || fail "2-rank run to $n updates: exit $? ($(tail -3 "$tmp/h.err"))"
done
# 59 of the 60 pairs fit --max-length: 8 mini-batches of 8 an epoch, 2 an
# update: after 6 updates epoch 2 at mini-batch 4
grep -q "^batches-epoch: 4$" "$tmp/h/model.npz.progress.yml" &&
    grep -q "^epochs: 2$" "$tmp/h/model.npz.progress.yml" ||
    fail "after $((K / 2)) + $((K / 2)) 2-rank updates: $(grep -E "^(epochs|batches)" \
        "$tmp/h/model.npz.progress.yml" | tr '\n' ' ')"
read -r max_h _ <<<"$(npz_diff "$tmp/h/model.npz" "$tmp/a/model.npz")"
[ "$max_h" = 0 ] || fail "2-rank resume on 2 ranks differs from the uninterrupted run: $max_h"
"$mtpe" train -m "$tmp/a/model.npz" "${common[@]}" --optimizer-delay 2 \
    --after-batches $((2 * K)) 2>"$tmp/a2.err" || fail "resuming on 1 rank: exit $?"
grep -q "Restoring the corpus state" "$tmp/a2.err" || fail "resume did not restore the corpus"
costs "$tmp/a2.err" >"$tmp/a2.costs"
costs "$tmp/b.err" | tail -n $K >"$tmp/b2.costs"
[ "$(wc -l <"$tmp/a2.costs")" = $K ] || fail "resumed run: $(wc -l <"$tmp/a2.costs") progress lines"
# same lines, costs within 1e-5 relative (the parameters agree to 1e-6)
paste -d'\n' "$tmp/a2.costs" "$tmp/b2.costs" | awk '
    NR % 2 == 1 { a = $0; next }
    {
        x = a; y = $0
        ca = x; sub(/.*Cost /, "", ca); sub(/ .*/, "", ca)
        cb = y; sub(/.*Cost /, "", cb); sub(/ .*/, "", cb)
        sub(/Cost [0-9.]+/, "", x); sub(/Cost [0-9.]+/, "", y)
        sub(/gNorm .*/, "", x); sub(/gNorm .*/, "", y)
        d = ca - cb; if (d < 0) d = -d
        if (x != y || d > 1e-5 * cb) { print "differs: " a " / " $0; bad = 1 }
    }
    END { exit bad }' || fail "the resumed 2-rank run does not continue the 1-rank cost curve"

# ------------------------------------------------------------------ 4
mkdir -p "$tmp/k"
"${mpi2[@]}" "$mtpe" train -m "$tmp/k/model.npz" "${common[@]}" --save-freq 3 \
    --after-batches 100000 >"$tmp/k.out" 2>"$tmp/k.err" &
job=$!
for _ in $(seq 1 600); do
    grep -q "Saving training checkpoint" "$tmp/k.err" 2>/dev/null && break
    sleep 0.1
done
ranks=$(pgrep -f -- "train -m $tmp/k/model.npz" | while read -r p; do
    [ "$(cat /proc/"$p"/comm 2>/dev/null)" = mtpe ] && echo "$p"; done)
victim=$(echo "$ranks" | tail -1)
if [ -z "$victim" ]; then
    fail "kill: no rank process found"
    kill "$job" 2>/dev/null
else
    sleep 0.3
    kill -9 "$victim"
fi
rc=0
for _ in $(seq 1 300); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$job" 2>/dev/null; then
    fail "the job still runs 30 s after a rank was killed"
    kill -9 $ranks 2>/dev/null
fi
wait "$job" || rc=$?
[ "$rc" -ne 0 ] || fail "the job exited 0 after a rank was killed"
grep -q -E "exited on signal 9|MPI error in" "$tmp/k.err" ||
    fail "no clear message after the kill: $(tail -5 "$tmp/k.err")"
echo "after kill -9 of rank pid $victim: exit $rc; $(grep -E -m1 "exited on signal 9|MPI error in" "$tmp/k.err")"
head -3 "$d/input.en" >"$tmp/three.en"
"$mtpe" translate -m "$tmp/k/model.npz" -v "$d/vocab.spm" "$d/vocab.spm" -b 2 --quiet \
    -i "$tmp/three.en" >"$tmp/k.tr" 2>"$tmp/k.tr.err" &&
    [ "$(wc -l <"$tmp/k.tr")" = 3 ] ||
    fail "the last checkpoint does not translate: $(cat "$tmp/k.tr.err")"
"$mtpe" train -m "$tmp/k/model.npz" "${common[@]}" --after-batches 1 2>"$tmp/k2.err" ||
    fail "the last checkpoint does not continue: $(tail -2 "$tmp/k2.err")"

# ------------------------------------------------------------------ 5
tiny=(-m "$d/model.npz" -v "$d/vocab.spm" "$d/vocab.spm" --cpu-threads 1 --quiet
    --mini-batch 4 --maxi-batch 2)
check_tr() { # WHAT ARGS...: 1 process vs 2 ranks, byte for byte
    local what=$1
    shift
    "$mtpe" translate "${tiny[@]}" "$@" >"$tmp/one" 2>"$tmp/one.err" ||
        { fail "$what: 1 process: $(cat "$tmp/one.err")"; return; }
    "${mpi2[@]}" "$mtpe" translate "${tiny[@]}" "$@" >"$tmp/two" 2>"$tmp/two.err" ||
        { fail "$what: 2 ranks: $(tail -3 "$tmp/two.err")"; return; }
    [ -s "$tmp/one" ] || fail "$what: empty output"
    cmp -s "$tmp/one" "$tmp/two" || fail "$what: 2 ranks differ from 1 process: $(diff "$tmp/one" "$tmp/two" | head -4)"
}
check_tr plain -b 3 -i "$d/input.en"
check_tr n-best -b 3 --n-best -i "$d/input.en"
check_tr alignment -b 3 --alignment hard --word-scores -i "$d/input.en"
# lines that are not translated (invalid UTF-8; longer than --max-length):
# rank 0 writes their empty entries itself
(head -10 "$d/input.en"; printf 'bad \xff line\n\n'; sed -n 11,30p "$d/input.en") >"$tmp/bad.en"
check_tr "untranslated lines" -b 2 --mini-batch 3 --max-length 8 --n-best -i "$tmp/bad.en"
# standard input reaches rank 0 only: it reads it and sends it on
"$mtpe" translate "${tiny[@]}" -b 2 <"$d/input.en" >"$tmp/one" 2>/dev/null
"${mpi2[@]}" "$mtpe" translate "${tiny[@]}" -b 2 <"$d/input.en" >"$tmp/two" 2>"$tmp/two.err" ||
    fail "stdin: 2 ranks: $(tail -3 "$tmp/two.err")"
[ "$(wc -l <"$tmp/two")" = 60 ] && cmp -s "$tmp/one" "$tmp/two" ||
    fail "stdin: 2 ranks give $(wc -l <"$tmp/two") lines, differ from 1 process"
check_tr "XLIFF document" -b 2 --format xliff "$src/assets/samples/sample.de.xlf"
check_tr "text document" -b 2 --format text "$src/assets/samples/sample.en.txt"
check_tr "PO document" -b 2 --format po "$src/assets/samples/sample.de.po"
"${mpi2[@]}" "$mtpe" translate "${tiny[@]}" -b 2 --format po "$src/assets/samples/sample.de.po" \
    -o "$tmp/two.po" 2>"$tmp/two.err" || fail "PO -o: $(tail -3 "$tmp/two.err")"
cmp -s "$tmp/two.po" "$tmp/one" || fail "PO -o: the file differs from 1 process's output"

# ------------------------------------------------------------------ 6
fx=$src/tests/data/marian/multi-transformer
pe=(-m "$fx/model.npz" -v "$fx/vocab.spm" "$fx/vocab.spm" "$fx/vocab.spm" --quiet
    --cpu-threads 1)
refuses() { # WHAT ARGS...: 2 ranks refuse with one line of mtpe's
    local what=$1 rc=0
    shift
    rm -f "$tmp/ref.out"
    "${mpi2[@]}" "$mtpe" "$@" -o "$tmp/ref.out" >"$tmp/ref.std" 2>"$tmp/ref.err" || rc=$?
    [ "$rc" = 2 ] || fail "$what on 2 ranks: exit $rc, not 2"
    [ "$(grep -c '^mtpe ' "$tmp/ref.err")" = 1 ] &&
        grep -q "^mtpe .*runs in one process only, not under mpirun with 2 processes" "$tmp/ref.err" ||
        fail "$what on 2 ranks: not one clear line: $(head -3 "$tmp/ref.err")"
    [ ! -e "$tmp/ref.out" ] && [ ! -s "$tmp/ref.std" ] || fail "$what on 2 ranks wrote output"
}
refuses "postedit -i SRC MT" postedit "${pe[@]}" -i "$fx/input.en" "$fx/input.mt"
cp "$src/assets/samples/sample.de.po" "$tmp/pe.po"
refuses "postedit --po" postedit "${pe[@]}" --po "$tmp/pe.po"
cmp -s "$tmp/pe.po" "$src/assets/samples/sample.de.po" || fail "postedit --po on 2 ranks changed the file"
refuses "translate --ape" translate "${tiny[@]}" --ape "$fx" -i "$d/input.en"
"$mtpe" postedit "${pe[@]}" -i "$fx/input.en" "$fx/input.mt" >"$tmp/pe1" 2>"$tmp/pe1.err" ||
    fail "postedit: $(cat "$tmp/pe1.err")"
mpirun -np 1 --bind-to none "$mtpe" postedit "${pe[@]}" -i "$fx/input.en" "$fx/input.mt" \
    >"$tmp/pe2" 2>"$tmp/pe2.err" || fail "postedit under mpirun -np 1: $(tail -3 "$tmp/pe2.err")"
[ -s "$tmp/pe1" ] && cmp -s "$tmp/pe1" "$tmp/pe2" || fail "postedit under mpirun -np 1 differs"

cli_finish mpi_cli "2 ranks: training equal to --optimizer-delay 2, one writer, resume, kill, translate; postedit/--ape refused"
