#!/usr/bin/env bash
# Builds mtpe and runs every test.  Usage: scripts/test.sh [--asan] [CTEST_ARGS...]
#   --asan       AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/)
#   CTEST_ARGS   passed to ctest, e.g. -L engine (one layer) or -E corpus
# Ends with a summary: how many tests passed, were skipped (exit 77: ctest's
# "N% tests passed" counts them as passed) and failed, and each skipped
# test with the reason it printed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
dir=build; flags=(-DCMAKE_BUILD_TYPE=Release)
if [ "${1:-}" = "--asan" ]; then
  shift
  dir=build-asan
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMT_SANITIZE_ADDRESS=ON -DMT_SANITIZE_UNDEFINED=ON)
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
  export MT_SANITIZED_RUN=1
fi
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$dir" "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$jobs"
log=$dir/Testing/test-sh.log
mkdir -p "$dir/Testing"
rc=0
ctest --test-dir "$dir" --output-on-failure -j"$jobs" "$@" 2>&1 | tee "$log" || rc=$?

# "12/50 Test #7: name ....   Passed  1.2 sec" (or ***Skipped, ***Failed, ...)
awk '
  / Test +#[0-9]+: / {
    n++
    if ($0 ~ /\*\*\*Skipped/) skipped[++ns] = $4
    else if ($0 ~ / Passed +[0-9.]+ sec/) np++
    else nf++
  }
  END {
    printf "\nscripts/test.sh (%s): %d tests: %d passed, %d skipped, %d failed\n", dir, n, np, ns, nf
    for (i = 1; i <= ns; i++) print skipped[i] > skipfile
  }' dir="$dir" skipfile="$log.skipped" "$log"
# each skipped test with the line of its output that says why: the first
# "SKIP file:line: reason" of tests/harness.h, else the last line that says
# "skip", else its last line (ctest keeps every test's output in
# Testing/Temporary/LastTest.log)
while IFS= read -r name; do
  why=$(awk -v t="$name" '
    $0 ~ /^[0-9]+\/[0-9]+ Test: / { cur = $3 }
    cur == t && $0 == "<end of output>" { out = 0 }
    cur == t && out && $0 != "" {
      last = $0
      if ($0 ~ /^SKIP / && harness == "") { harness = $0; sub(/^SKIP [^ ]*\//, "SKIP ", harness) }
      else if (tolower($0) ~ /skip/ && $0 !~ /: [0-9]+ checks, /) reason = $0
    }
    cur == t && $0 == "Output:" { out = 1; getline }
    END { print harness != "" ? harness : reason != "" ? reason : last }' \
    "$dir/Testing/Temporary/LastTest.log")
  echo "  skipped: $name: $why"
done <"$log.skipped"
exit $rc
