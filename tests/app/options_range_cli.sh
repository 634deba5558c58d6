#!/usr/bin/env bash
# options_range_cli.sh: out-of-range option values are usage errors (issue 38,
# findings 13 and 14): each case exits 2 with one line on stderr naming the
# option, before any model is loaded, for every command with bounded options
# (translate, score, train, edit, align, eval, rescore, convert, bench; corpus
# has none: its time and languages are checked by the command); `--` ends
# the options; the sleep
# command of `mtpe edit --script` takes a number of milliseconds in range.
#   bash options_range_cli.sh <path-to-mtpe> <source-dir>
mtpe=$(realpath "${1:?usage: options_range_cli.sh MTPE SRCDIR}")
src=$(realpath "${2:?usage: options_range_cli.sh MTPE SRCDIR}")
. "$src/tests/cli_common.bash"

# usage CMD... -- NEEDLE: exit 2, one line on stderr that contains NEEDLE
usage() {
    local needle=${*: -1} args=("${@:1:$#-1}")
    "$mtpe" "${args[@]}" </dev/null >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    [ "$rc" -eq 2 ] || fail "${args[*]}: exit $rc (want 2): $(cat "$tmp/err")"
    grep -qF -- "$needle" "$tmp/err" || fail "${args[*]}: no '$needle' in: $(cat "$tmp/err")"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "${args[*]}: not one line: $(cat "$tmp/err")"
}

usage translate --mini-batch -1 "--mini-batch: -1 is out of range (1..65536)"
usage translate --mini-batch 0 "--mini-batch: 0 is out of range"
usage translate --mini-batch 1000000000 "--mini-batch: 1000000000 is out of range"
usage translate --maxi-batch 0 "--maxi-batch: 0 is out of range (1..10000)"
usage translate --maxi-batch -5 "--maxi-batch: -5 is out of range"
usage translate --mini-batch 1000 --maxi-batch 10000 "at most 1000000"
usage translate --cpu-threads 0 "--cpu-threads: 0 is out of range (1..256)"
usage translate --cpu-threads -1 "--cpu-threads: -1 is out of range"
usage translate --cpu-threads 1000 "--cpu-threads: 1000 is out of range"
usage translate --max-length 0 "--max-length: 0 is out of range (1..1000000)"
usage translate --max-length -1 "--max-length: -1 is out of range"
usage translate --max-length-factor 0 "--max-length-factor: 0 is out of range (more than 0, at most 1000)"
usage translate --max-length-factor -1 "--max-length-factor: -1 is out of range"
usage translate --mini-batch-words -1 "--mini-batch-words: -1 is out of range (at least 0)"
usage translate --maxi-batch-sort trg "--maxi-batch-sort: 'trg' is not one of src, none"
usage translate --beam-size 0 "--beam-size: 0 is out of range"
usage translate --max-active -1 "--max-active: -1 is out of range"
usage translate --shortlist lex.bin 0 0 0 "--shortlist: best 0 is out of range (1..1000000000)"
usage translate --shortlist lex.s2t 100 100 2 "--shortlist: threshold 2 is out of range (0..1)"
usage translate --shortlist lex.s2t 1.5 "--shortlist: first '1.5' is not an integer"
usage translate --beam-size 99999999999999999999 "99999999999999999999 is out of range"
usage translate -- x.txt "unexpected argument 'x.txt' after '--'"
# in a config file too, naming the file
printf 'mini-batch: 0\n' >"$tmp/c.yml"
usage translate -c "$tmp/c.yml" "--mini-batch in config file $tmp/c.yml: 0 is out of range"
printf 'maxi-batch-sort: trg\n' >"$tmp/c2.yml"
usage translate -c "$tmp/c2.yml" "'trg' is not one of src, none"
# the other commands' tables
usage score --cpu-threads 0 "--cpu-threads: 0 is out of range"
usage score --maxi-batch-sort len "--maxi-batch-sort: 'len' is not one of trg, src, none"
usage train --dim-emb 1000000000000 "--dim-emb: 1000000000000 is out of range (1..65536)"
usage edit x.po --lookahead 1001 "--lookahead: 1001 is out of range (0..1000)"
usage edit x.po --qa never "--qa: 'never' is not one of confirm, save, off"
# align, eval, rescore, convert, bench (issue 38): ranges in their tables too
usage align -i x.txt -I 0 "--iterations: 0 is out of range (1..100000)"
usage align -i x.txt -p 1 "--p0: 1 is out of range (at least 0, less than 1)"
usage align -i x.txt -p -0.1 "--p0: -0.1 is out of range"
usage align -i x.txt -T 0 "--diagonal-tension: 0 is out of range (more than 0)"
usage align -i x.txt -a -1 "--alpha: -1 is out of range (more than 0)"
usage align -i x.txt --sym grow "--sym: 'grow' is not one of grow-diag-final-and"
usage eval -r ref.txt --metrics bleu wer "--metrics: 'wer' is not one of bleu, chrf, ter"
usage rescore --weights F0=1 -n -1 "--normalize: -1 is out of range (0..10)"
usage convert --gemm-type int4 a.npz b.bin "--gemm-type: 'int4' is not one of float32, int16, int8"
usage bench gemm --repeat 0 "--repeat: 0 is out of range (1..64)"
usage bench translate --lines 0 "--lines: 0 is out of range (1..10000000)"
usage bench translate --repeat 65 "--repeat: 65 is out of range (1..64)"
usage bench translate --max-active -1 "--max-active: -1 is out of range (0..65536)"
usage bench translate --top-up-pool 0 "--top-up-pool: 0 is out of range (1..10000)"
usage bench translate --usd-per-hour 0 "--usd-per-hour: 0 is out of range (more than 0)"
usage bench translate --maxi-batch-sort trg "--maxi-batch-sort: 'trg' is not one of src, none"
usage bench translate --kv-cache fp8 "--kv-cache: 'fp8' is not one of auto, float32"
usage bench edit --segments 0 "--segments: 0 is out of range (1..1000)"
usage bench edit --repeat 101 "--repeat: 101 is out of range (1..100)"
usage bench edit -b 0 "--beam-size: 0 is out of range (1..1000)"
usage bench train --updates 1 "--updates: 1 is out of range (2..256)"
usage bench train --threads 1 0 "--threads: 0 is out of range (1..256)"
usage bench train --precision float16 "--precision: 'float16' is not one of float32, bfloat16"
usage bench train --mini-batch-words 0 "--mini-batch-words: 0 is out of range (at least 1)"
# corpus has no numeric option; its time and languages are checked in the command
usage corpus export --since yesterday --tsv x.tsv "--since: 'yesterday' is not an ISO 8601 date"
# an option without a default is not checked before it is given
"$mtpe" convert "$tmp/none.npz" "$tmp/none.bin" 2>"$tmp/err"
grep -q "gemm-type" "$tmp/err" && fail "convert without --gemm-type: $(cat "$tmp/err")"
"$mtpe" align --help >"$tmp/help" 2>&1
grep -q -- "(range: at least 0, less than 1)" "$tmp/help" || fail "align --help: no range of --p0"

# --help shows the ranges
"$mtpe" translate --help >"$tmp/help" 2>&1
grep -q -- "(range: 1..65536)" "$tmp/help" || fail "translate --help: no range of --mini-batch"
grep -q "(one of: src, none)" "$tmp/help" || fail "translate --help: no values of --maxi-batch-sort"

# edit --script: sleep takes milliseconds 0..3600000, nothing else
cp "$src/assets/samples/sample.de.po" "$tmp/doc.po"
tiny=(-m "$src/tests/data/marian/transformer-tiny/model.npz"
    -v "$src/tests/data/marian/transformer-tiny/vocab.spm"
    "$src/tests/data/marian/transformer-tiny/vocab.spm")
for bad in abc 12abc -1 3600001 99999999999999999999999 ""; do
    printf 'sleep %s\n' "$bad" >"$tmp/script"
    "$mtpe" edit "$tmp/doc.po" --db "$tmp/store.db" "${tiny[@]}" --script "$tmp/script" \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "script 'sleep $bad': exit $rc (want 2): $(cat "$tmp/err")"
    grep -q "script:1: sleep MS: '$bad' is not a number of milliseconds" "$tmp/err" ||
        fail "script 'sleep $bad': $(cat "$tmp/err")"
done
printf 'sleep 5\n' >"$tmp/script"
"$mtpe" edit "$tmp/doc.po" --db "$tmp/store.db" "${tiny[@]}" --script "$tmp/script" \
    >"$tmp/out" 2>"$tmp/err" || fail "script 'sleep 5': $(cat "$tmp/err")"

cli_finish options_range_cli
