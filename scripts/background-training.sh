#!/usr/bin/env bash
# Keeps the default model's recipe (scripts/train-default-model.sh) training in
# the background across sessions, niced, in a folder outside the work tree
# (default /work/default-model-run), resuming exactly from its last checkpoint.
#   scripts/background-training.sh start [DIR] [extra mtpe train options]
#   scripts/background-training.sh stop [DIR]    SIGTERM: mtpe saves a
#                                                checkpoint, then exits
#   scripts/background-training.sh status [DIR]  pid and the last log lines
# The binary is copied into DIR at each start, so rebuilding build/ while it
# trains does not touch the running process.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-status}
dir=${2:-/work/default-model-run}
shift $(( $# > 2 ? 2 : $# )) || true
pidf=$dir/train.pid
running() { [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; }
case $cmd in
start)
  if running; then echo "already training (pid $(cat "$pidf"))"; exit 0; fi
  [ -x "$here/build/mtpe" ] || { echo "build mtpe first (scripts/test.sh)"; exit 1; }
  mkdir -p "$dir"
  # the shipped model's vocabulary (its shortlist and Marian's reference runs use it)
  [ -f "$dir/vocab.spm" ] || cp "$here/assets/models/en-de/vocab.spm" "$dir/vocab.spm"
  cp "$here/build/mtpe" "$dir/mtpe.new" && mv "$dir/mtpe.new" "$dir/mtpe"
  MTPE=$dir/mtpe nohup nice -n 19 "$here/scripts/train-default-model.sh" "$dir" "$@" \
    >> "$dir/train.log" 2>&1 < /dev/null &
  echo $! > "$pidf"
  echo "training in $dir (pid $!, log $dir/train.log)"
  ;;
stop)
  if ! running; then echo "not training"; exit 0; fi
  pid=$(cat "$pidf")
  kill -TERM "$pid"
  for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  if kill -0 "$pid" 2>/dev/null; then echo "pid $pid still running after 10 min"; exit 1; fi
  rm -f "$pidf"
  tail -n 3 "$dir/train.log"
  ;;
status)
  if running; then echo "training (pid $(cat "$pidf"))"; else echo "not training"; fi
  [ -f "$dir/train.log" ] && grep -a -E "Up\. |\[valid\]" "$dir/train.log" | tail -n 5 || true
  ;;
*) echo "usage: $0 start|stop|status [DIR] [mtpe train options]"; exit 2 ;;
esac
