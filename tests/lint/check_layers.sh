#!/usr/bin/env bash
# Layer rules of DESIGN.md §2, checked on #include lines (the CMake targets
# enforce them at compile time too; this names the offending line).
#   kernels/: no project header but its own;  engine/: kernel headers only
#   in device_cpu.c, and in device.h the attention job (kcpu_attn_job.h);
#   models/: mt.h only;  db/, ui/: mt_base.h only;  nothing includes tests/
#   headers (harness.h, test_util.h) except tests/;  app/ (all its
#   sub-folders) no kernel header (kcpu*.h, kcuda*.h);  nothing below app/
#   (engine, models, db, ui, kernels, all sub-folders) an app/ header (any
#   header found under app/ whose name no lower layer has too).
#   bash check_layers.sh [MTPE] [SOURCE_DIR]   (default: this file's ../..)
src=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$src" || exit 1
bad=0
report() { echo "layer violation: $1"; bad=1; }
while IFS= read -r line; do report "$line (kernels/ includes a project header)"; done < <(
  grep -Hn '#include "' kernels/cpu/*.c kernels/cpu/*.h 2>/dev/null | grep -v '"kcpu[a-z0-9_]*\.h"')
while IFS= read -r line; do report "$line (only device_cpu.c may include kernel headers)"; done < <(
  grep -Hn -E '#include "(kcpu|kcuda)' engine/*.c engine/*.h 2>/dev/null |
    grep -v -E '^engine/device_cpu\.c:|^engine/device\.h:[0-9]+:#include "kcpu_attn_job\.h"$')
# forbidden headers per layer (engine internals everywhere; cross-layer ones)
forbid() { # dir regex why
  [ -d "$1" ] || return 0
  while IFS= read -r line; do report "$line ($3)"; done < <(
    grep -Hn -E "#include \"($2)\"" "$1"/*.c "$1"/*.h 2>/dev/null)
}
private='graph_impl\.h|device\.h|kcpu[a-z0-9_]*\.h|kcuda[a-z0-9_]*\.h|params_impl\.h|test_hooks\.h|harness\.h|app\.h'
forbid models "$private|store\.h|ui\.h" "models/ may include only mt.h"
forbid db "$private|mt\.h|ui\.h" "db/ may include only mt_base.h and sqlite3.h"
forbid ui "$private|mt\.h|store\.h" "ui/ may include only mt_base.h, ncurses, readline"
forbid kernels/cpu "mt\.h|mt_base\.h|graph_impl\.h|device\.h|app\.h" "kernels/ include no project header"
while IFS= read -r line; do report "$line (tests/ headers are for tests/ only)"; done < <(
  grep -rHn -E '#include "(harness|test_util)\.h"' kernels engine models db ui app 2>/dev/null)
# app/ reaches the kernels only through the engine (mt.h: mt_cpu_*)
srcs=(--include='*.c' --include='*.h' --include='*.cpp' --include='*.cu' --include='*.cuh')
while IFS= read -r line; do report "$line (app/ includes a kernel header)"; done < <(
  grep -rHn -E '#[[:space:]]*include[[:space:]]*["<]([^">]*/)?(kcpu|kcuda)[A-Za-z0-9_]*\.h[">]' \
    "${srcs[@]}" app 2>/dev/null)
# nothing below app/ includes an app/ header (names that only app/ has)
lower=(engine models db ui kernels)
app_h=$(find app -name '*.h' -printf '%f\n' 2>/dev/null | sort -u)
low_h=$(find "${lower[@]}" -name '*.h' -printf '%f\n' 2>/dev/null | sort -u)
only_app=$(comm -23 <(printf '%s\n' "$app_h") <(printf '%s\n' "$low_h") | grep -v '^$')
if [ -n "$only_app" ]; then
  re=$(printf '%s\n' "$only_app" | sed 's/[.]/[.]/g' | paste -sd'|')
  while IFS= read -r line; do report "$line (below app/, includes an app/ header)"; done < <(
    grep -rHn -E "#[[:space:]]*include[[:space:]]*[\"<]([^\">]*/)?($re)[\">]" "${srcs[@]}" \
      "${lower[@]}" 2>/dev/null)
fi
while IFS= read -r line; do report "$line (exit() below app/)"; done < <(
  grep -Hn -E '\bexit\s*\(' kernels/cpu/*.c engine/*.c models/*.c db/*.c ui/*.c 2>/dev/null)
[ $bad -eq 0 ] && echo "layer rules hold"
exit $bad
