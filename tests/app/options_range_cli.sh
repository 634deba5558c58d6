#!/usr/bin/env bash
# options_range_cli.sh: out-of-range option values are usage errors (issue 38,
# findings 13 and 14): each case exits 2 with one line on stderr naming the
# option, before any model is loaded; `--` ends the options; the sleep
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
