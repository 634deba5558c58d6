#!/usr/bin/env bash
# convert_cli.sh MTPE SOURCE_DIR: `mtpe convert` on the Marian fixtures.
#   --info lists the config and known parameter lines; npz -> bin -> npz and
#   bin -> bin reproduce Marian's files byte for byte (cmp); bin -> npz with
#   intgemm items is refused; damaged files and bad usage give exit 1 / 2
#   with a message, never a crash (exit >= 128).  (Python's zipfile reading
#   a zip64 archive written by mtpe: tests/test_model_io.c.)
mtpe=${1:?usage: convert_cli.sh MTPE SOURCE_DIR}
src=${2:?usage: convert_cli.sh MTPE SOURCE_DIR}
data=$src/tests/data/marian
if [ ! -x "$mtpe" ]; then
    echo "no executable $mtpe"
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
expect() { # description, then a command whose success is the check
    local what=$1
    shift
    if "$@"; then ok "$what"; else bad "$what"; fi
}

# name, embedding matrix, parameter count (counted with Python's zipfile)
models="transformer-tiny:Wemb:86 transformer-tiny-r2l:Wemb:86 transformer-aan:encoder_Wemb:65
        s2s-tiny:encoder_Wemb:97 multi-transformer:Wemb:138"
for entry in $models; do
    IFS=: read -r d emb count <<<"$entry"
    model=$data/$d/model.npz
    "$mtpe" convert --info "$model" >"$tmp/info" 2>"$tmp/err"
    expect "$d: --info exits 0" [ $? -eq 0 ]
    expect "$d: --info prints the config" grep -q '^type: ' "$tmp/info"
    expect "$d: --info lists $emb" grep -Eq "^$emb +\[4000, 64\] +float32\$" "$tmp/info"
    expect "$d: --info totals" grep -q "^# total: $count parameters" "$tmp/info"
    "$mtpe" convert "$model" "$tmp/$d.bin" 2>"$tmp/err" &&
        "$mtpe" convert "$tmp/$d.bin" "$tmp/$d.npz" 2>>"$tmp/err"
    expect "$d: npz -> bin -> npz runs" [ $? -eq 0 ]
    expect "$d: npz -> bin -> npz equals Marian's file" cmp -s "$tmp/$d.npz" "$model"
    "$mtpe" convert -f "$model" -t "$tmp/$d.copy.npz" 2>"$tmp/err"
    expect "$d: npz -> npz (-f/-t) equals Marian's file" cmp -s "$tmp/$d.copy.npz" "$model"
done

# the intgemm8 model written by marian-conv
bin=$data/transformer-tiny/model.int8.bin
"$mtpe" convert --info "$bin" >"$tmp/info" 2>"$tmp/err"
expect "int8: --info exits 0" [ $? -eq 0 ]
expect "int8: intgemm8 item listed" \
    grep -Eq '^decoder_l1_context_Wk +\[64, 64\] +intgemm8$' "$tmp/info"
expect "int8: float item listed" grep -Eq '^Wemb +\[4000, 64\] +float32$' "$tmp/info"
"$mtpe" convert "$bin" "$tmp/int8.bin" 2>"$tmp/err"
expect "int8: bin -> bin equals marian-conv's file" cmp -s "$tmp/int8.bin" "$bin"
"$mtpe" convert "$bin" "$tmp/int8.npz" 2>"$tmp/err"
rc=$?
expect "int8: bin -> npz refused with exit 1" [ $rc -eq 1 ]
expect "int8: refusal names the item" grep -q "decoder_l1_context_Wk" "$tmp/err"
expect "int8: no output left behind" [ ! -e "$tmp/int8.npz" -a ! -e "$tmp/int8.npz.tmp" ]

# damaged files: exit 1 and a message naming the file, not a crash
head -c 100000 "$data/transformer-tiny/model.npz" >"$tmp/trunc.npz"
head -c 5000 "$bin" >"$tmp/trunc.bin"
printf 'PK\003\004garbage' >"$tmp/garbage.npz"
for f in trunc.npz trunc.bin garbage.npz; do
    "$mtpe" convert --info "$tmp/$f" >/dev/null 2>"$tmp/err"
    rc=$?
    expect "$f: --info exit 1 (got $rc)" [ $rc -eq 1 ]
    expect "$f: message names the file" grep -q "$f" "$tmp/err"
    "$mtpe" convert "$tmp/$f" "$tmp/out.bin" 2>"$tmp/err"
    rc=$?
    expect "$f: convert exit 1 (got $rc)" [ $rc -eq 1 ]
done
"$mtpe" convert --info "$tmp/missing.npz" >/dev/null 2>"$tmp/err"
expect "missing file: exit 1" [ $? -eq 1 ]
"$mtpe" convert "$data/transformer-tiny/model.npz" "$tmp/out.txt" 2>"$tmp/err"
expect "unknown output suffix: exit 1" [ $? -eq 1 ]

# usage
"$mtpe" convert >/dev/null 2>&1
expect "no arguments: exit 2" [ $? -eq 2 ]
"$mtpe" convert --bogus a.npz b.bin >/dev/null 2>&1
expect "unknown option: exit 2" [ $? -eq 2 ]
"$mtpe" convert --help >"$tmp/help" 2>&1
expect "--help: exit 0 and usage" grep -q "usage: mtpe convert" "$tmp/help"

echo "convert_cli: $fails failed"
[ $fails -eq 0 ]
