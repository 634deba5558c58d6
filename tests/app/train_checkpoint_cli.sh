#!/usr/bin/env bash
# train_checkpoint_cli.sh: a training checkpoint left mixed is refused at
# resume (issue 38, finding 8).  The checkpoint files are renamed into place
# optimizer first, progress file last; a run stopped between the renames
# leaves M.optimizer.npz from a later update than M.progress.yml.  Made here
# by copying the optimizer file of update 8 into a checkpoint of update 4:
# resuming must fail, naming both updates, instead of continuing silently.
# When the files not yet renamed are still staged (M.*.next*, as a kill
# between the renames leaves them), resuming completes the renames and goes
# on as an uninterrupted run.  The consistent checkpoint still resumes.  (Toy
# setup of train_cli.sh.)
#   bash train_checkpoint_cli.sh <path-to-mtpe> <source-dir>
mtpe=$(realpath "${1:?usage: train_checkpoint_cli.sh MTPE SRCDIR}")
src=$(realpath "${2:?usage: train_checkpoint_cli.sh MTPE SRCDIR}")
. "$src/tests/cli_common.bash"
D=$src/tests/data/marian/transformer-tiny
COMMON=(-t "$D/input.en" "$D/ref.de" -v "$D/vocab.spm" "$D/vocab.spm"
        --dim-emb 16 --enc-depth 1 --dec-depth 1 --transformer-heads 2
        --transformer-dim-ffn 32 --mini-batch 16 --maxi-batch 2 --learn-rate 0.003
        --disp-freq 4 --save-freq 4 --seed 1111 --cpu-threads 1 --quiet --overwrite)

mkdir "$tmp/a"
"$mtpe" train -m "$tmp/a/model.npz" "${COMMON[@]}" --after-batches 4 2>"$tmp/err" ||
    fail "4 updates: $(tail -3 "$tmp/err")"
cp -r "$tmp/a" "$tmp/at4"
"$mtpe" train -m "$tmp/a/model.npz" "${COMMON[@]}" --after-batches 8 2>"$tmp/err" ||
    fail "continued to 8 updates: $(tail -3 "$tmp/err")"
grep -q '^batches: 8$' "$tmp/a/model.npz.progress.yml" || fail "progress.yml: not at update 8"

# the mixed checkpoint: progress (and model) at update 4, optimizer at 8
cp -r "$tmp/at4" "$tmp/mixed"
cp "$tmp/a/model.npz.optimizer.npz" "$tmp/mixed/model.npz.optimizer.npz"
"$mtpe" train -m "$tmp/mixed/model.npz" "${COMMON[@]}" --after-batches 8 2>"$tmp/err"
rc=$?
[ $rc -ne 0 ] || fail "a mixed checkpoint was resumed (exit 0)"
grep -q "mixed" "$tmp/err" && grep -q "update 4" "$tmp/err" && grep -q "update 8" "$tmp/err" ||
    fail "mixed checkpoint: message: $(grep -v '^\[' "$tmp/err" | tail -3)"
grep -q '^batches: 4$' "$tmp/mixed/model.npz.progress.yml" || fail "the refusal changed progress.yml"

# killed between the renames of the save at update 8: the optimizer file is
# renamed, the model, M.yml, M.decoder.yml and the progress file are still
# staged (*.next*): resuming completes the renames and continues from update
# 8 exactly as the run that was not stopped
cp -r "$tmp/at4" "$tmp/half"
cp "$tmp/a/model.npz.optimizer.npz" "$tmp/half/model.npz.optimizer.npz"
cp "$tmp/a/model.npz" "$tmp/half/model.npz.next.npz"
cp "$tmp/a/model.npz.yml" "$tmp/half/model.npz.yml.next"
cp "$tmp/a/model.npz.decoder.yml" "$tmp/half/model.npz.decoder.yml.next"
cp "$tmp/a/model.npz.progress.yml" "$tmp/half/model.npz.progress.yml.next"
cp -r "$tmp/a" "$tmp/whole"
costs() { grep -a -E ' : Up\. ' "$1" | sed -E 's/^\[[^]]*\] //; s/ : Time [^:]* : [^:]* words\/s//'; }
"$mtpe" train -m "$tmp/whole/model.npz" "${COMMON[@]}" --after-batches 12 \
    --log "$tmp/whole.log" 2>"$tmp/err" || fail "whole: $(tail -3 "$tmp/err")"
"$mtpe" train -m "$tmp/half/model.npz" "${COMMON[@]}" --after-batches 12 \
    --log "$tmp/half.log" 2>"$tmp/err" || fail "half renamed checkpoint: $(tail -3 "$tmp/err")"
grep -q "update 8 was left half renamed" "$tmp/half.log" || fail "no warning about the renames"
ls "$tmp/half" | grep -q next && fail "staged files left: $(ls "$tmp/half" | grep next)"
grep -q '^batches: 12$' "$tmp/half/model.npz.progress.yml" || fail "half: not at update 12"
costs "$tmp/whole.log" >"$tmp/whole.costs"
costs "$tmp/half.log" >"$tmp/half.costs"
[ -s "$tmp/whole.costs" ] || fail "no progress lines"
cmp -s "$tmp/whole.costs" "$tmp/half.costs" ||
    fail "completed checkpoint: other progress lines: $(diff "$tmp/whole.costs" "$tmp/half.costs")"

# the consistent checkpoint of update 4 resumes
"$mtpe" train -m "$tmp/at4/model.npz" "${COMMON[@]}" --after-batches 8 2>"$tmp/err" ||
    fail "consistent checkpoint: $(tail -3 "$tmp/err")"
grep -q '^batches: 8$' "$tmp/at4/model.npz.progress.yml" || fail "consistent resume: not at 8"

cli_finish train_checkpoint_cli
