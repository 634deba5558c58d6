#!/usr/bin/env bash
# marian_int8_cli.sh: `mtpe translate` on Marian's int8 model of the
# transformer-tiny fixture (model.int8.bin, made by `marian-conv -g
# intgemm8`) against marian-decoder's own output for it, beam4-int8.out,
# byte for byte (DESIGN.md §4: a Marian model loads in mtpe with the same
# translations).  The command is Marian's, from beam4-int8.cmd, with
# `mtpe translate` in place of `marian-decoder`.
#   bash marian_int8_cli.sh <path-to-mtpe> <source-dir>
# beam4-int8.out is intgemm's AVX512-VNNI path; its AVX512BW and AVX2 paths
# give the same text (checked on the fixture files here), its SSSE3 path
# another one (tests/data/marian/README.md), which is not compared.
# Exit 77 (skipped) while mtpe refuses Marian's intgemm .bin models with its
# "Marian type ... is not supported" error; once it loads them, any line
# that differs fails.
mtpe=$(realpath "${1:?usage: marian_int8_cli.sh MTPE SRCDIR}")
src=$(realpath "${2:?usage: marian_int8_cli.sh MTPE SRCDIR}")
d=$src/tests/data/marian/transformer-tiny
. "$src/tests/cli_common.bash"

for isa in AVX512BW AVX2; do
    cmp -s "$d/beam4-int8.out" "$d/beam4-int8-$isa.out" ||
        fail "fixture: beam4-int8-$isa.out differs from beam4-int8.out"
done

line=$(cat "$d/beam4-int8.cmd")
case $line in
marian-decoder*" > beam4-int8.out") ;;
*) fail "beam4-int8.cmd: not a marian-decoder command writing beam4-int8.out: $line" ;;
esac
args=${line#marian-decoder }
args=${args% > *}
# shellcheck disable=SC2086
(cd "$d" && "$mtpe" translate $args) >"$tmp/int8.out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ]; then
    awk '
        NR == FNR { want[FNR] = $0; n = FNR; next }
        {
            m = FNR
            if ($0 == want[FNR]) { same++; next }
            if (bad++ < 5) printf "line %d differs\n  got:  %.200s\n  want: %.200s\n", FNR, $0, want[FNR]
        }
        END {
            if (m != n) { printf "%d lines, want %d\n", m, n; bad++ }
            printf "beam4-int8.out: %d of %d lines equal\n", same, n
            exit bad > 0
        }' "$d/beam4-int8.out" "$tmp/int8.out" ||
        fail "mtpe translate -m model.int8.bin differs from Marian's beam4-int8.out"
elif grep -Eq "Marian type .* is not supported" "$tmp/err"; then
    echo "skipped: mtpe cannot load Marian's intgemm .bin models yet: $(head -1 "$tmp/err")"
    exit 77
else
    fail "mtpe translate -m model.int8.bin: exit status $rc: $(head -3 "$tmp/err")"
fi

cli_finish marian_int8_cli "Marian's int8 output reproduced byte for byte"
