#!/usr/bin/env bash
# train_s2s_cli.sh: `mtpe train --type s2s` with the options of the s2s-tiny
# fixture's train.cmd (Marian's run that made its model.npz), for a few
# updates on the fixture's 60 sentence pairs:
#   - training runs and the cost of the last updates is below the first's
#   - the model it writes has exactly the items of Marian's model.npz (names,
#     shapes, dtypes) and the same special:model.yml except its version line
#     (and so that item's length)
#   - the model translates (`mtpe translate` on 3 lines: 3 lines out)
#   - unsupported s2s options are one clear error (exit 1): --enc-cell mlstm
# Usage: bash train_s2s_cli.sh <path-to-mtpe> <source-dir>
mtpe=$(realpath "${1:?usage: train_s2s_cli.sh MTPE SRCDIR}")
src=$(realpath "${2:?usage: train_s2s_cli.sh MTPE SRCDIR}")
. "$src/tests/cli_common.bash"
d=$src/tests/data/marian/s2s-tiny

opts=(--type s2s --dim-emb 64 --dim-rnn 128 --enc-depth 2 --enc-cell-depth 2 --dec-depth 2
    --dec-cell-base-depth 2 --dec-cell-high-depth 1 --tied-embeddings --layer-normalization
    --dim-vocabs 4000 4000 --max-length 100 --mini-batch 16 --maxi-batch 100
    --learn-rate 0.003 --disp-freq 2 --cpu-threads 1 --seed 1111 --overwrite)
if ! "$mtpe" train --model "$tmp/model.npz" --train-sets "$d/input.en" "$d/ref.de" \
    --vocabs "$d/vocab.spm" "$d/vocab.spm" "${opts[@]}" --after-batches 8 --save-freq 8 \
    >"$tmp/log" 2>&1; then
    fail "mtpe train --type s2s: $(tail -3 "$tmp/log")"
    cli_finish train_s2s_cli
fi
costs=$(grep -a -E ' : Up\. ' "$tmp/log" | sed -E 's/.* : Cost ([0-9.]+) .*/\1/')
first=$(echo "$costs" | head -1)
last=$(echo "$costs" | tail -1)
echo "costs at updates 2, 4, 6, 8: $(echo $costs)"
[ "$(echo "$costs" | wc -l)" = 4 ] || fail "want 4 cost lines, got: $costs"
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' ||
    fail "the cost did not go down: $first -> $last"

# the items of both files: name shape dtype, and the model.yml text
python3 - "$tmp/model.npz" "$d/model.npz" >"$tmp/cmp" 2>&1 <<'EOF' || fail "items differ: $(cat "$tmp/cmp")"
import ast, sys, zipfile
def items(path):
    out, yml = {}, None
    with zipfile.ZipFile(path) as z:
        for n in z.namelist():
            d = z.read(n)
            hl = int.from_bytes(d[8:10], "little")
            h = ast.literal_eval(d[10:10 + hl].decode())
            out[n] = (tuple(h["shape"]), h["descr"])
            if n == "special:model.yml.npy":
                yml = d[10 + hl:].rstrip(b"\0").decode().splitlines()
    return out, yml
(a, ya), (b, yb) = items(sys.argv[1]), items(sys.argv[2])
bad = sorted(set(a) ^ set(b))
bad += [n for n in a if n in b and a[n] != b[n] and n != "special:model.yml.npy"]
strip = lambda y: [l for l in (y or []) if not l.startswith("version:")]
if bad:
    sys.exit("%d of %d items differ: %s" % (len(bad), len(b), bad[:5]))
if strip(ya) != strip(yb) or not ya:
    sys.exit("special:model.yml differs from Marian's")
print("%d items as Marian's, model.yml the same but its version" % len(a))
EOF
cat "$tmp/cmp"

head -3 "$d/input.en" >"$tmp/in3"
"$mtpe" translate -m "$tmp/model.npz" -v "$d/vocab.spm" "$d/vocab.spm" --quiet -b 2 \
    -i "$tmp/in3" >"$tmp/out3" 2>"$tmp/err" || fail "translate: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/out3")" = 3 ] || fail "translate: $(wc -l <"$tmp/out3") lines, want 3"

"$mtpe" train --model "$tmp/m2.npz" --train-sets "$d/input.en" "$d/ref.de" \
    --vocabs "$d/vocab.spm" "$d/vocab.spm" "${opts[@]}" --enc-cell mlstm --after-batches 1 \
    >"$tmp/log2" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "only gru and lstm" "$tmp/log2" ||
    fail "--enc-cell mlstm: exit $rc, $(tail -1 "$tmp/log2")"
cli_finish train_s2s_cli "s2s training writes Marian's layout"
