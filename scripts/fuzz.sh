#!/usr/bin/env bash
# fuzz.sh: builds the libFuzzer targets (tests/fuzz/, one per parser) with
# clang, ASan and UBSan, and runs each for SECONDS on a corpus that starts
# from its seeds (tests/fuzz/seeds.txt):
#   scripts/fuzz.sh SECONDS [TARGET...]      (default: every target)
# Build folder: $MT_FUZZ_BUILD (build-fuzz).  Each target's corpus grows in
# BUILD/corpus/TARGET (kept between runs); a crash, leak, timeout or
# sanitizer report leaves its input in BUILD/artifacts/TARGET/ and fails the
# script.  Put a crash's input into tests/fuzz/seeds/TARGET/ with the fix:
# the ctest fuzz_TARGET (tests/CMakeLists.txt) then replays it in every run.
# Extra libFuzzer flags: $MT_FUZZ_FLAGS (e.g. "-jobs=2 -workers=2").
set -u
secs=${1:?usage: scripts/fuzz.sh SECONDS [TARGET...]}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MT_FUZZ_BUILD:-$root/build-fuzz}
seeds_file=$root/tests/fuzz/seeds.txt
mapfile -t all < <(awk '/^[a-z]/ {print $1}' "$seeds_file")
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

mkdir -p "$build"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DMT_FUZZ=ON -DMT_BUILD_TESTS=ON >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; exit 1; }
fuzz_bins=()
for t in "${targets[@]}"; do fuzz_bins+=("fuzz_$t"); done
nice cmake --build "$build" -j"$(nproc)" --target "${fuzz_bins[@]}" || exit 1

status=0
summary=()
for t in "${targets[@]}"; do
    seeds=$(awk -v t="$t" '$1 == t {$1 = ""; print}' "$seeds_file")
    [ -n "$seeds" ] || { echo "fuzz.sh: no target $t in $seeds_file"; exit 2; }
    corpus=$build/corpus/$t
    art=$build/artifacts/$t
    mkdir -p "$corpus" "$art"
    for s in $seeds; do
        if [ -d "$root/$s" ]; then cp -n "$root/$s"/* "$corpus/" 2>/dev/null; else cp -n "$root/$s" "$corpus/"; fi
    done
    echo "== fuzz_$t: $secs s, corpus $corpus ($(ls "$corpus" | wc -l) inputs)"
    # -rss_limit_mb: a parser asked for gigabytes by a size field is a finding
    "$build/tests/fuzz_$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
        -artifact_prefix="$art/" -print_final_stats=1 ${MT_FUZZ_FLAGS:-} "$corpus" \
        >"$build/fuzz_$t.log" 2>&1
    rc=$?
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz_$t.log" | grep -o '[0-9]*$')
    cov=$(grep -o 'cov: [0-9]*' "$build/fuzz_$t.log" | tail -1)
    if [ $rc -ne 0 ]; then
        status=1
        summary+=("fuzz_$t: FAILED (exit $rc) after ${runs:-?} runs, $cov; see $build/fuzz_$t.log, $art")
        grep -m3 -E 'ERROR|SUMMARY|Test unit written' "$build/fuzz_$t.log"
    else
        summary+=("fuzz_$t: ${runs:-?} runs in $secs s, $cov, corpus $(ls "$corpus" | wc -l): no finding")
    fi
done
printf '%s\n' "${summary[@]}"
exit $status
