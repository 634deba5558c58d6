# tmux_common.bash: sourced by the tests/e2e/*.sh scripts that drive the
# editor in tmux, after they set $T (their temporary folder) and $SOCK (a
# tmux socket name of their own).  The session is called "ed".
#   tm ARGS...              tmux on the test's own server
#   ok / bad MESSAGE        report (bad counts into $fails); check CMD MESSAGE
#   screen                  the pane's text; field: the edit field's line
#   shows TEXT              the screen holds TEXT
#   keys KEYS...            tmux send-keys, then 0.2 s for the editor
#   wait_for DESCRIPTION COMMAND...   polls COMMAND for $wait_s seconds
#                           (default 15); on time-out: bad, and the screen
#   end_session             stops the server and waits until its process is
#                           gone: a new-session right after a kill-session or
#                           kill-server can otherwise reach the exiting server
#                           ("server exited unexpectedly") and every later
#                           command finds no server
# At exit the tmux server is stopped, processes still running from $T are
# killed and $T is removed (kept, and said, when KEEP is set).
tm() { tmux -L "$SOCK" "$@"; }
end_session() {
    local pid i
    pid=$(tm display-message -p -t ed '#{pid}' 2>/dev/null)
    tm kill-server 2>/dev/null
    for ((i = 0; i < 100 && ${pid:-0} > 0; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
}
cleanup() {
    tm kill-server 2>/dev/null
    pkill -f "$T/" 2>/dev/null
    if [ -n "${KEEP:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "NOT OK: $*"; fails=$((fails + 1)); }
check() { if eval "$1"; then ok "$2"; else bad "$2"; fi; }
screen() { tm capture-pane -p -t ed; }
field() { screen | awk '/─ Translation/ { getline; sub(/^ /, ""); sub(/ +$/, ""); print; exit }'; }
shows() { screen | grep -qF -- "$1"; }
keys() { tm send-keys -t ed "$@"; sleep 0.2; }
wait_for() {
    local what=$1 i
    shift
    for ((i = 0; i < ${wait_s:-15} * 10; i++)); do
        if "$@"; then return 0; fi
        sleep 0.1
    done
    bad "$what (timed out)"
    echo "--- screen:"; screen
    return 1
}

# The first screen line holding NEEDLE, with its underlined characters in [ ]:
# SGR codes 4 (underline on), 24 and 0 (off) are followed through the line.
marked_line() {
    tm capture-pane -p -e -t ed | NEEDLE=$1 perl -CSA -ne '
        BEGIN { $needle = $ENV{NEEDLE}; utf8::decode($needle); }
        my $ul = 0; my ($out, $plain) = ("", "");
        chomp;
        while (length) {
            if (s/^\e\[([0-9;]*)m//) {
                my @c = split /;/, $1; @c = (0) unless @c;
                for (my $i = 0; $i < @c; $i++) {
                    if ($c[$i] == 38 || $c[$i] == 48) { $i += $c[$i + 1] == 5 ? 2 : 4; next; }
                    my $new = $c[$i] == 4 ? 1 : ($c[$i] == 0 || $c[$i] == 24) ? 0 : $ul;
                    $out .= $new ? "[" : "]" if $new != $ul;
                    $ul = $new;
                }
            } elsif (s/^\e[^a-zA-Z]*[a-zA-Z]//) {
            } else { s/^(.)//s; $out .= $1; $plain .= $1; }
        }
        $out .= "]" if $ul;
        next unless index($plain, $needle) >= 0;
        $out =~ s/\s+$//;
        print $out; exit;'
}
