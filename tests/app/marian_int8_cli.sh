#!/usr/bin/env bash
# marian_int8_cli.sh: `mtpe translate` on Marian's own int8 model against
# marian-decoder's outputs for it.  transformer-tiny/model.int8.bin was made
# by Marian 1.12 (`marian-conv -g intgemm8`: generic intgemm8 items, W^T
# quantized with 127 / max|W| and that multiplier appended); each
# beam4-int8*.out is Marian's translation of input.en with it, on one
# intgemm code path: the default (AVX512VNNI on the machine that made them)
# and, forced through INTGEMM_CPUID, AVX512BW, AVX2 and SSSE3.  Each X.cmd is
# run here with `mtpe translate` in place of `marian-decoder`, with the
# same environment (mtpe reads INTGEMM_CPUID too: SSSE3, AVX2 and AVX512BW
# select the emulation of intgemm's saturating 16-bit sums, kernels/cpu/
# kcpu.h), and must give Marian's file byte for byte.
#   bash marian_int8_cli.sh <path-to-mtpe> <source-dir>
# What makes them equal (each also checked below where it can be):
#  - activations quantized per product with 127 / max|A| over the whole
#    input, round half to even, dequantized as (float)acc * (1.0f / (qa *
#    qb)) + bias, the product qa * qb rounded to float as Marian does;
#  - decoder self-attention: Marian projects the keys and values of every
#    cached position again at each step, so their int8 multiplier is that of
#    all cached layer inputs (models/transformer.c, self_step_requant);
#  - SSSE3 (and in principle AVX2, AVX512BW): 16-bit lanes that saturate;
#    on these 60 lines only SSSE3's registers of 16 bytes change a
#    translation (10 lines differ from the VNNI output).
# Batched decoding (--mini-batch > 1) is not compared: there is no Marian
# output for it, and Marian's quantization then also sees the padding rows
# of the source, which mtpe does not compute.
mtpe=$(realpath "${1:?usage: marian_int8_cli.sh MTPE SRCDIR}")
src=$(realpath "${2:?usage: marian_int8_cli.sh MTPE SRCDIR}")
d=$src/tests/data/marian/transformer-tiny
. "$src/tests/cli_common.bash"

# Known differences (file:line), each checked to still differ: none.
known=" "

# same_lines A B: how many lines of A equal B's line at the same number
same_lines() { awk 'NR == FNR { a[FNR] = $0; next } a[FNR] == $0 { n++ } END { print n + 0 }' "$1" "$2"; }

# run CMDFILE OUT [ENV...]: the command of CMDFILE with mtpe, in $d; its
# environment assignments, or ENV when given
run() {
    local cmd=$1 out=$2 line envs=() args
    shift 2
    line=$(cat "$cmd")
    while [[ $line =~ ^[A-Z_]+=[^\ ]*\  ]]; do
        envs+=("${line%% *}")
        line=${line#* }
    done
    [ $# -gt 0 ] && envs=("$@")
    [[ $line == "marian-decoder "* ]] || {
        fail "$(basename "$cmd"): not a marian-decoder command"
        return 1
    }
    args=${line#marian-decoder }
    args=${args% > *}
    # shellcheck disable=SC2086
    (cd "$d" && env -u INTGEMM_CPUID "${envs[@]}" "$mtpe" translate $args) >"$out" 2>"$tmp/err" || {
        fail "$(basename "$cmd"): mtpe translate failed: $(head -3 "$tmp/err")"
        return 1
    }
}

n_cmd=0
for cmd in "$d"/beam4-int8*.cmd; do
    name=$(basename "$cmd" .cmd)
    want=$d/$name.out
    run "$cmd" "$tmp/$name" || continue
    n_cmd=$((n_cmd + 1))
    total=$(wc -l <"$want")
    same=$(same_lines "$want" "$tmp/$name")
    echo "$name.out: $same of $total lines identical"
    [ "$(wc -l <"$tmp/$name")" = "$total" ] || fail "$name: $(wc -l <"$tmp/$name") lines, want $total"
    while read -r ln; do
        key="$name.out:$ln"
        if [[ $known == *" $key "* ]]; then
            echo "known difference $key"
            continue
        fi
        fail "$key differs
  got:  $(sed -n "${ln}p" "$tmp/$name" | cut -c1-300)
  want: $(sed -n "${ln}p" "$want" | cut -c1-300)"
    done < <(awk 'NR == FNR { a[FNR] = $0; next } a[FNR] != $0 { print FNR }' "$want" "$tmp/$name")
    for key in $known; do
        [[ $key == "$name.out:"* ]] || continue
        ln=${key#*:}
        [ "$(sed -n "${ln}p" "$want")" != "$(sed -n "${ln}p" "$tmp/$name")" ] ||
            fail "$key: listed as a known difference but equal now"
    done
done
[ "$n_cmd" = 4 ] || fail "ran $n_cmd of the 4 beam4-int8 commands"

# The ISA paths differ where the fixtures say so: SSSE3 only through the
# emulation (without INTGEMM_CPUID mtpe computes exact sums, as VNNI), and
# AVX512VNNI is the exact path.
if [ -f "$tmp/beam4-int8" ]; then
    run "$d/beam4-int8-SSSE3.cmd" "$tmp/ssse3-exact" INTGEMM_CPUID=
    cmp -s "$tmp/ssse3-exact" "$tmp/beam4-int8" ||
        fail "exact sums (no INTGEMM_CPUID) differ from the default output"
    k=$(same_lines "$d/beam4-int8-SSSE3.out" "$tmp/ssse3-exact")
    [ "$k" -lt 60 ] || fail "SSSE3: exact sums give Marian's SSSE3 output too (no saturation seen)"
    echo "SSSE3 without the emulation: $k of 60 lines identical"
    run "$d/beam4-int8.cmd" "$tmp/vnni" INTGEMM_CPUID=AVX512VNNI
    cmp -s "$tmp/vnni" "$tmp/beam4-int8" || fail "INTGEMM_CPUID=AVX512VNNI differs from the default"
fi

# The same model with CPU-specific items (marian-conv -g intgemm8ssse3 etc.:
# the generic items' integers in intgemm's prepared order, made here as
# intgemm's PrepareBQuantizedTransposed orders them: per 8 columns of W, per
# register of R inner values, one register per column) translates the same.
# (Marian's type codes; intgemm8avx512vnni shares the AVX512 layout.)
for t in intgemm8ssse3:0x18001:16 intgemm8avx2:0x11001:32 intgemm8avx512:0x12001:64 \
    intgemm8avx512vnni:0x13001:64; do
    IFS=: read -r name code regs <<<"$t"
    code=$((code))
    python3 - "$d/model.int8.bin" "$tmp/$name.bin" "$code" "$regs" <<'EOF2' || fail "$name: could not write the model"
import struct, sys
src, dst, code, re = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
b = open(src, "rb").read()
n = struct.unpack_from("<Q", b, 8)[0]
hdr = [struct.unpack_from("<QQQQ", b, 16 + 32 * i) for i in range(n)]
pos = 16 + 32 * n + sum(h[0] for h in hdr)
shapes = []
for h in hdr:
    shapes.append(struct.unpack_from("<%di" % h[2], b, pos))
    pos += 4 * h[2]
pos += 8 + struct.unpack_from("<Q", b, pos)[0]
out = bytearray(b[:pos])
for i, h in enumerate(hdr):
    blob = b[pos:pos + h[3]]
    pos += h[3]
    if h[1] == 0x10001:  # generic intgemm8: W^T [N, K] row-major, then qB
        k, nn = shapes[i]
        lay = bytearray()
        for r in range(0, nn, 8):
            for c in range(0, k, re):
                for ri in range(8):
                    lay += blob[(r + ri) * k + c:(r + ri) * k + c + re]
        blob = bytes(lay) + blob[k * nn:]
        struct.pack_into("<Q", out, 16 + 32 * i + 8, code)
    out += blob
open(dst, "wb").write(out)
EOF2
    (cd "$d" && "$mtpe" translate -m "$tmp/$name.bin" -v vocab.spm vocab.spm --quiet -b 4 -n 0.6 \
        --mini-batch 1 --maxi-batch 1 -i input.en) >"$tmp/$name.out" 2>"$tmp/err" ||
        fail "$name: mtpe translate failed: $(head -3 "$tmp/err")"
    cmp -s "$tmp/$name.out" "$d/beam4-int8.out" || fail "$name items: not beam4-int8.out"
done

# The int8 model in batches (no Marian output to compare): every line
# translated, the same with two threads as with one (the same batches).
# With --top-up the rows that share a step, hence the activations' int8
# multiplier, depend on how sentences are dealt to the workers: only run.
tiny=(-m "$d/model.int8.bin" -v "$d/vocab.spm" "$d/vocab.spm" --quiet -b 4 -n 0.6 -i "$d/input.en")
for t in "" "--top-up"; do
    for threads in 1 2; do
        # shellcheck disable=SC2086
        "$mtpe" translate "${tiny[@]}" --mini-batch 8 --maxi-batch 4 --maxi-batch-sort src $t \
            --cpu-threads $threads >"$tmp/b$threads" 2>"$tmp/err" ||
            fail "batched ${t:-translation}, $threads threads, failed: $(head -3 "$tmp/err")"
        [ "$(wc -l <"$tmp/b$threads")" = 60 ] ||
            fail "batched ${t:-translation}, $threads threads: $(wc -l <"$tmp/b$threads") lines"
    done
    [ -n "$t" ] || cmp -s "$tmp/b1" "$tmp/b2" || fail "batched: --cpu-threads 2 changed the output"
done

cli_finish marian_int8_cli "4 Marian int8 outputs reproduced"
