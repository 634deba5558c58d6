#!/usr/bin/env bash
# bench_kernels_cli.sh: `mtpe bench topk` and `mtpe bench attn` (the kernel
# micro-benchmarks of kernels/cpu/kcpu_bench.c, reached through
# mt_cpu_bench) print their tables: the title line, the column header and
# one row per case; an unknown benchmark is refused with exit 2.
#   bash bench_kernels_cli.sh <path-to-mtpe> <source-dir>
mtpe=$(realpath "${1:?usage: bench_kernels_cli.sh MTPE SRCDIR}")
src=$(realpath "${2:?usage: bench_kernels_cli.sh MTPE SRCDIR}")
. "$src/tests/cli_common.bash"

"$mtpe" bench topk --repeat 1 >"$tmp/topk" 2>"$tmp/err" || fail "bench topk: $(head -3 "$tmp/err")"
grep -q '^mtpe bench topk: bias + log-softmax + top-k over rows of logits, rows = 32, 1 thread, median of 1 samples, isa ' "$tmp/topk" ||
    fail "bench topk: title line"
grep -qE '^ +cols +k +kernel +ns/row +GB/s +x fused$' "$tmp/topk" || fail "bench topk: header"
n=$(grep -cE '^ *(32000|1000) +[0-9]+  ' "$tmp/topk")
[ "$n" = 20 ] || fail "bench topk: $n rows, want 20"

"$mtpe" bench attn --repeat 1 >"$tmp/attn" 2>"$tmp/err" || fail "bench attn: $(head -3 "$tmp/err")"
grep -q "^mtpe bench attn: one decoding step's attention, 128 rows, 8 heads of 32, 1 thread, median of 1 samples, isa " "$tmp/attn" ||
    fail "bench attn: title line"
grep -qE '^attn +keys +kernel +ns/row-head +GFLOP/s +x fused$' "$tmp/attn" || fail "bench attn: header"
n=$(grep -cE '^(self|cross) +[0-9]+  ' "$tmp/attn")
[ "$n" = 18 ] || fail "bench attn: $n rows, want 18"

"$mtpe" bench nosuch >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] || fail "bench nosuch: exit status"
grep -q "^mtpe bench: unknown subcommand 'nosuch'" "$tmp/err" || fail "bench nosuch: message"

cli_finish bench_kernels_cli "topk, attn and an unknown name"
