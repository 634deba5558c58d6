#!/usr/bin/env bash
# Layer rules of DESIGN.md §2, checked on #include lines (the CMake targets
# enforce them at compile time too; this names the offending line).
#   kernels/: no project header but its own;  engine/: kcpu.h only in
#   device_cpu.c;  models/: mt.h only;  db/, ui/: mt_base.h only; nothing
#   includes tests/ headers (harness.h, test_util.h) except tests/.
#   bash check_layers.sh [MTPE] [SOURCE_DIR]   (default: this file's ../..)
src=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$src" || exit 1
bad=0
report() { echo "layer violation: $1"; bad=1; }
while IFS= read -r line; do report "$line (kernels/ includes a project header)"; done < <(
  grep -Hn '#include "' kernels/cpu/*.c kernels/cpu/*.h 2>/dev/null | grep -v '"kcpu[a-z0-9_]*\.h"')
while IFS= read -r line; do report "$line (only device_cpu.c may include kcpu.h)"; done < <(
  grep -Hn '#include "kcpu' engine/*.c engine/*.h 2>/dev/null | grep -v '^engine/device_cpu\.c:')
# forbidden headers per layer (engine internals everywhere; cross-layer ones)
forbid() { # dir regex why
  [ -d "$1" ] || return 0
  while IFS= read -r line; do report "$line ($3)"; done < <(
    grep -Hn -E "#include \"($2)\"" "$1"/*.c "$1"/*.h 2>/dev/null)
}
private='graph_impl\.h|device\.h|kcpu\.h|kcuda\.h|params_impl\.h|harness\.h|app\.h'
forbid models "$private|store\.h|ui\.h" "models/ may include only mt.h"
forbid db "$private|mt\.h|ui\.h" "db/ may include only mt_base.h and sqlite3.h"
forbid ui "$private|mt\.h|store\.h" "ui/ may include only mt_base.h, ncurses, readline"
forbid kernels/cpu "mt\.h|mt_base\.h|graph_impl\.h|device\.h|app\.h" "kernels/ include no project header"
while IFS= read -r line; do report "$line (tests/ headers are for tests/ only)"; done < <(
  grep -rHn -E '#include "(harness|test_util)\.h"' kernels engine models db ui app 2>/dev/null)
while IFS= read -r line; do report "$line (exit() below app/)"; done < <(
  grep -Hn -E '\bexit\s*\(' kernels/cpu/*.c engine/*.c models/*.c db/*.c ui/*.c 2>/dev/null)
[ $bad -eq 0 ] && echo "layer rules hold"
exit $bad
