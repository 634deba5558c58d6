#!/usr/bin/env bash
# Builds mtpe and opens the main job.  Until the editor lands this shows the
# commands and runs the engine demo (trains a small network, loads a Marian model).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)"
./build/mtpe --help
./build/mtpe demo "$@"
