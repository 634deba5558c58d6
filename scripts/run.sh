#!/usr/bin/env bash
# Builds mtpe and opens the main job: the post-editing editor on a sample PO
# document with the default English-German model (assets/models/en-de).
# The store of edits goes to $XDG_DATA_HOME/mtpe/ (see mtpe edit --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)"
work=${MTPE_SAMPLE_DIR:-$HOME/mtpe-sample}
mkdir -p "$work"
# a working copy, so that the shipped sample stays untouched
[ -f "$work/sample.de.po" ] || cp assets/samples/sample.de.po "$work/sample.de.po"
exec ./build/mtpe edit "$work/sample.de.po" "$@"
