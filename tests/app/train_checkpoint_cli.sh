#!/usr/bin/env bash
# train_checkpoint_cli.sh: a training checkpoint left mixed is refused at
# resume (issue 38, finding 8).  The checkpoint files are renamed into place
# optimizer first, progress file last; a run stopped between the renames
# leaves M.optimizer.npz from a later update than M.progress.yml.  Made here
# by copying the optimizer file of update 8 into a checkpoint of update 4:
# resuming must fail, naming both updates, instead of continuing silently.
# The consistent checkpoint still resumes.  (Toy setup of train_cli.sh.)
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

# the consistent checkpoint of update 4 resumes
"$mtpe" train -m "$tmp/at4/model.npz" "${COMMON[@]}" --after-batches 8 2>"$tmp/err" ||
    fail "consistent checkpoint: $(tail -3 "$tmp/err")"
grep -q '^batches: 8$' "$tmp/at4/model.npz.progress.yml" || fail "consistent resume: not at 8"

cli_finish train_checkpoint_cli
