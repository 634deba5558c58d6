#!/usr/bin/env bash
# test_ui_screen.sh: the editor on a real terminal.  test_ui_demo (source
# tests/ui/test_ui_demo.c, built next to the other tests) runs ui_run()
# inside tmux (80x24, then resized to 150x40) with a fake engine answering
# from its own thread; keys are sent with tmux send-keys and the
# screen is read back with capture-pane.  The demo logs every hook call.
# Usage (CTest): test_ui_screen.sh MTPE_BINARY SOURCE_DIR.  Exit 77 (skipped)
# without tmux or the demo binary.
mtpe=$1
demo=$(dirname "$mtpe")/tests/test_ui_demo
command -v tmux >/dev/null || { echo "tmux not found: skipped"; exit 77; }
[ -x "$demo" ] || { echo "$demo not built: skipped"; exit 77; }
export LC_ALL=C.UTF-8
work=$(mktemp -d)
log=$work/hooks.log
sock=mtpe-ui-test-$$
T() { tmux -L "$sock" "$@"; }
cleanup() { T kill-server 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail=0

screen() { T capture-pane -p -t ui; }
field() { screen | awk '/Translation/ { getline; print; exit }'; }
# wait_until DESCRIPTION COMMAND...: polls for 5 s
wait_until() {
    local what=$1 i
    shift
    for ((i = 0; i < 50; i++)); do
        "$@" && return 0
        sleep 0.1
    done
    echo "NOT OK: $what"
    echo "--- screen:"; screen; echo "--- hooks:"; cat "$log"
    fail=1
    return 1
}
shows() { screen | grep -qF -- "$1"; }
field_is() { [ "$(field | sed 's/ *$//')" = " $1" ]; }
logged() { grep -qxF -- "$1" "$log" 2>/dev/null; }
keys() { T send-keys -t ui "$@"; sleep 0.15; }

T -f /dev/null new-session -d -s ui -x 80 -y 24 \
    "$demo demo $log; echo \"demo exited rc=\$?\"; sleep 60" ||
    { echo "tmux cannot start a session here: skipped"; exit 77; }

# the worker thread's translation reaches the screen: MT greyed in the field
wait_until "MT of segment 1 shown" field_is "Hallo Welt."
wait_until "speed and progress in the status line" shows "1234 tok/s"
wait_until "segment list" shows "3 * Save changes?"

# Enter on the untouched segment confirms the MT, then the next open segment
keys Enter
wait_until "commit of the MT" logged "commit 0 origin=1 keys=0 Hallo Welt."
wait_until "moved to segment 2" shows "Source  2/6"
wait_until "MT of segment 2" field_is "Die Datei konnte nicht geöffnet werden."

# typing through the MT, diverging, completion from the engine thread
keys 'Die Dat'
wait_until "typed through" field_is "Die Datei konnte nicht geöffnet werden."
keys x
wait_until "completion requested" logged "request 1 Die Datx"
wait_until "completion shown" field_is "Die Datx und so weiter."
keys Tab Tab
keys '!'
wait_until "Tab accepted two words, '!' asked again" logged "request 1 Die Datx und so!"
wait_until "nothing to complete after '!'" field_is "Die Datx und so!"

# Alt-2 (ESC 2 on the wire) replaces the field; C-z undoes it
keys C-u M-2
wait_until "M-2 picks alternative 2" field_is "Die Datei ließ sich nicht öffnen."
keys C-z
wait_until "undo restores the empty field with the MT" \
    field_is "Die Datei konnte nicht geöffnet werden."

# the command line: :goto, CJK, the heat map, resize to the wide layout
keys ':goto 5' Enter
wait_until ":goto 5" shows "Source  5/6"
wait_until "CJK MT" field_is "日本語の文章。"
keys F3
wait_until "F3 shows the heat map" shows "Attention  (F3: alternatives)"
T resize-window -t ui -x 150 -y 40
wait_until "wide layout after resize" shows "Attention (rows: translation, columns: source)"
wait_until "wide layout lists all segments" shows "6   Quit"
keys F1
wait_until "help screen" shows "accept the next word of the completion"
keys Escape
wait_until "help closed" shows "Enter confirm"
keys ':model /tmp/m.npz' Enter
wait_until ":model calls the hook" logged "model /tmp/m.npz"
wait_until "model name posted back" shows "demo-model-2"
keys ':export tmx /tmp/o.tmx' Enter
wait_until ":export calls the hook" logged "export tmx /tmp/o.tmx"

# :q with changes asks; y saves and quits; the terminal is given back
keys ':q' Enter
wait_until ":q asks" shows "save before quitting?"
keys y
wait_until "saved" logged "save"
wait_until "editor closed" logged "changed 4 -1 (null)"
wait_until "demo exited cleanly" shows "demo exited rc=0"
wait_until "terminal restored (no editor left on screen)" eval '! shows "Source  5/6"'
[ $fail -eq 0 ] && echo "ui screen test: ok"
exit $fail
