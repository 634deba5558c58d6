# cli_common.bash: sourced by the tests/*/*.sh scripts that count their
# failures (after they set $src): a temporary folder $tmp removed at exit,
# `fail MESSAGE` (prints it and counts), and `cli_finish NAME [TEXT]` (exit 1
# with the count when anything failed, else prints NAME: TEXT).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
cli_finish() {
    if [ "$fails" -ne 0 ]; then
        echo "$1: $fails failure(s)"
        exit 1
    fi
    echo "$1: ${2:-ok}"
}
