#!/bin/sh
# count-options.sh [SRC_DIR]: how many command-line options mtpe's commands
# declare (issue 33).  Two kinds of source are counted in app/ (all its
# sub-folders):
#   table entries  rows of an app_opt table: {"name", alias, APP_OPT_...
#   hand parsers   long names compared by hand: strcmp(x, "--name") and
#                  strncmp(x, "--name=", n), once per file ("--help" and the
#                  bare "--" not counted)
# and printed: entries per file, then the totals: option entries (table
# rows + distinct hand-parsed names per file) and distinct long names over
# all commands.
set -eu
src=${1:-$(dirname "$0")/..}
cd "$src/app"
{
    grep -roE --include='*.c' '\{"[a-z0-9][a-z0-9-]*", *('"'"'.'"'"'|0), *APP_OPT_' . |
        sed -E 's|^\./([^:]*):\{"([^"]*)".*|table \1 \2|'
    grep -roE --include='*.c' 'str(n)?cmp\([^;]*"--[a-z][a-z0-9-]*=?"' . |
        sed -E 's|^\./([^:]*):.*"--([a-z][a-z0-9-]*)=?"$|hand \1 \2|' |
        grep -v ' help$' | sort -u
} | awk '
    { n[$1 " " $2]++; names[$3] = 1; total++; kind[$1]++ }
    END {
        for (k in n) printf "  %-28s %d\n", k, n[k] | "sort"
        close("sort")
        d = 0; for (x in names) d++
        printf "option entries: %d (tables %d, hand parsers %d)\n", total, kind["table"], kind["hand"]
        printf "distinct long names: %d\n", d
    }'
