#!/usr/bin/env bash
# po_corpus_e2e.sh: the default en-de model over real PO files, end to end.
#   bash po_corpus_e2e.sh [--report] MTPE SOURCE_DIR [CACHE_DIR]
#
# The corpus: 36 untranslated German PO files of Debian packages, built
# (once, then cached outside git) by scripts/fetch-po-corpus.sh into
# CACHE_DIR (its default: ${XDG_CACHE_HOME:-$HOME/.cache}/mtpe/po-corpus).
# For every FILE.de.po of it:
#   (a) `mtpe translate --format po FILE -o OUT` with the shipped model
#       (assets/models/en-de/decoder.yml).  It writes the MT as fuzzy
#       drafts, so msgfmt runs with --use-fuzzy (without it msgfmt would
#       skip every draft); checks: msgfmt --check passes, no msgstr is
#       left empty, the entries are those of FILE (msgcmp, and as many).
#   (b) `mtpe edit FILE --script S` on a copy, with the same model files
#       and a fresh store: S visits every segment (a plural form is a
#       segment of its own) with ":N", waits for its MT and confirms it
#       with Enter (twice when the editor's QA asks to confirm again), then
#       saves with ":w" (and ":w!", so that a file the QA refused to save
#       still reaches msgfmt) and quits.  Checks: the editor exits 0,
#       reports one confirmation per segment and a save by ":w"; the file
#       passes msgfmt --check, has no untranslated and no fuzzy entry, and
#       has the entries of FILE.  The QA's refusals are counted, as
#       information.
# One "ok"/"NOT OK" line per file and part (with the first msgfmt errors
# when failing), then a summary: files, messages, segments, and per part
# the msgfmt errors, untranslated and fuzzy entries, seconds, and the most
# frequent kinds of msgfmt error.
#
# Exit: 0 all passed, 1 a check failed (or the corpus build failed), 77
# skipped: the corpus cannot be built here (no network, apt or gettext),
# no model, or not asked for (below).  --report never fails on the checks:
# it prints the same counts and exits 0, to measure before and after a fix.
#
# The generic registration of tests/*/*.sh in tests/CMakeLists.txt passes
# only MTPE and SOURCE_DIR; run that way, the test is skipped unless
# MTPE_PO_CORPUS=1 is set: it downloads Debian packages (the first time)
# and runs for minutes.  --report or a CACHE_DIR argument run it always.
set -u

report=0
args=()
for a in "$@"; do
    case $a in
    --report) report=1 ;;
    *) args+=("$a") ;;
    esac
done
USAGE="usage: po_corpus_e2e.sh [--report] MTPE SOURCE_DIR [CACHE_DIR]"
if [ ${#args[@]} -lt 2 ] || [ ${#args[@]} -gt 3 ]; then
    echo "$USAGE" >&2
    exit 2
fi
MTPE=${args[0]}
SRC=${args[1]}
CACHE=${args[2]:-${XDG_CACHE_HOME:-$HOME/.cache}/mtpe/po-corpus}
if [ "${MTPE_PO_CORPUS:-0}" != 1 ] && [ $report = 0 ] && [ ${#args[@]} -lt 3 ]; then
    echo "skipped: set MTPE_PO_CORPUS=1 to run (downloads Debian packages, takes minutes)"
    exit 77
fi
if [ "${MT_SANITIZED_RUN:-0}" = 1 ] && [ $report = 0 ]; then
    # the sanitizer pass runs the code under test through the unit tests;
    # 5,000 segments of a 3x slower build would double the CI time
    echo "skipped: end-to-end corpus check in the sanitizer build (runs in the release build)"
    exit 77
fi
export LC_ALL=C.UTF-8
for tool in msgfmt msgattrib msgcmp timeout; do
    command -v $tool >/dev/null || { echo "skipped: $tool not found (gettext, coreutils)"; exit 77; }
done
MTPE=$(cd "$(dirname "$MTPE")" && pwd)/$(basename "$MTPE")
MODEL=$SRC/assets/models/en-de
# a missing model, or a Git LFS pointer instead of it, is no test failure
if [ "$(head -c 2 "$MODEL/model.npz" 2>/dev/null)" != PK ]; then
    echo "skipped: no default model at $MODEL/model.npz"
    exit 77
fi

T=$(mktemp -d /tmp/mtpe_po_corpus.XXXXXX)
trap 'rm -rf "$T"' EXIT
# mtpe writes nothing outside T
export XDG_DATA_HOME=$T/data XDG_CONFIG_HOME=$T/config

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
secs() { printf '%d.%d' $(($1 / 1000)) $(($1 % 1000 / 100)); }

t0=$(now_ms)
bash "$SRC/scripts/fetch-po-corpus.sh" "$CACHE" >"$T/fetch.log" 2>&1
rc=$?
t_fetch=$(($(now_ms) - t0))
if [ $rc = 77 ]; then
    echo "skipped: $(tail -n1 "$T/fetch.log")"
    exit 77
elif [ $rc != 0 ]; then
    tail -n5 "$T/fetch.log"
    echo "NOT OK: the corpus could not be built (scripts/fetch-po-corpus.sh exit $rc)"
    exit 1
fi
echo "corpus: $CACHE ($(secs $t_fetch) s)"
shopt -s nullglob
files=("$CACHE"/*.de.po)
[ ${#files[@]} -gt 0 ] || { echo "NOT OK: no *.de.po in $CACHE"; exit 1; }

# entries (without the header) of the PO text on stdin
count_entries() { grep -c '^msgid ' | awk '{ print ($1 > 0 ? $1 - 1 : 0) }'; }
# OUT has the entries of IN: msgcmp finds those missing, the count extra ones
same_entries() {
    msgcmp --use-fuzzy --use-untranslated "$1" "$2" >/dev/null 2>&1 &&
        [ "$(count_entries <"$1")" = "$(count_entries <"$2")" ]
}
# msgfmt --check FILE [OPTS]: its messages to $1, the number of errors on
# stdout: the messages with a place (FILE:LINE:) that are no warnings; its
# own "found N fatal errors" counts some twice (once per plural form)
msgfmt_errors() {
    local out=$1 file=$2 n
    shift 2
    if msgfmt --check "$@" -o /dev/null "$file" 2>"$out"; then
        echo 0
        return
    fi
    n=$(awk -v f="$file:" 'index($0, f) == 1 {
            r = substr($0, length(f) + 1)
            if (r ~ /^[0-9]+: / && r !~ /^[0-9]+: warning: /) n++
        } END { print n + 0 }' "$out")
    echo $((n > 0 ? n : 1))
}
# the arguments joined with "; "
joined() {
    local IFS=';' s
    s="$*"
    echo "${s//;/; }"
}
# the first msgfmt errors, indented, with the file's name instead of its path
show_errors() {
    grep -v -e ': warning: ' -e '^msgfmt: found' "$1" | head -n3 |
        sed -e "s|^$T/[ab]/||" -e 's/^/    /'
}

fails=0
declare -A tot
for k in a_err a_untr a_lost a_bad a_ms b_err b_untr b_fuzzy b_lost b_bad b_ms b_qa_w b_qa_e \
    msgs segs; do
    tot[$k]=0
done
mkdir -p "$T/a" "$T/b" "$T/errs"
for f in "${files[@]}"; do
    name=$(basename "$f" .de.po)
    msgs=$(count_entries <"$f")
    # segments: one per msgstr, one per plural form
    segs=$(($(grep -c '^msgstr' "$f") - 1))
    tot[msgs]=$((tot[msgs] + msgs))
    tot[segs]=$((tot[segs] + segs))

    # (a) translate --format po
    out=$T/a/$name.de.po
    t=$(now_ms)
    "$MTPE" translate -c "$MODEL/decoder.yml" --format po "$f" -o "$out" --cpu-threads 2 \
        --quiet 2>"$T/a/$name.log"
    rc=$?
    ms=$(($(now_ms) - t))
    why=()
    [ $rc = 0 ] || why+=("exit $rc: $(head -n1 "$T/a/$name.log")")
    if [ -f "$out" ]; then
        errs=$(msgfmt_errors "$T/errs/a.$name" "$out" --use-fuzzy)
        untr=$(msgattrib --untranslated --no-obsolete "$out" 2>/dev/null | count_entries)
        same_entries "$out" "$f" || {
            why+=("entries differ from the input")
            tot[a_lost]=$((tot[a_lost] + 1))
        }
    else
        errs=0 untr=$msgs
        why+=("no output")
    fi
    [ "$errs" = 0 ] || why+=("$errs msgfmt errors")
    [ "$untr" = 0 ] || why+=("$untr untranslated")
    tot[a_err]=$((tot[a_err] + errs))
    tot[a_untr]=$((tot[a_untr] + untr))
    tot[a_ms]=$((tot[a_ms] + ms))
    if [ ${#why[@]} = 0 ]; then
        echo "ok (a) $name: $msgs messages translated, msgfmt --check passes ($(secs $ms) s)"
    else
        echo "NOT OK (a) $name: $(joined "${why[@]}") ($(secs $ms) s)"
        [ -f "$T/errs/a.$name" ] && show_errors "$T/errs/a.$name"
        tot[a_bad]=$((tot[a_bad] + 1))
        fails=$((fails + 1))
    fi

    # (b) edit --script: confirm the MT of every segment, then save
    out=$T/b/$name.de.po
    cp "$f" "$out"
    {
        # On segment i: wait for its MT, Enter confirms it (the editor then
        # moves on); ":i" again and a second Enter.  When QA refused the
        # first confirmation ("confirm again to keep it"), the cursor is
        # still on i and the second Enter keeps the MT, as a translator
        # would; when it was taken, the second Enter only opens the
        # confirmed segment for editing, and leaving it unchanged is a no-op.
        for ((i = 1; i <= segs; i++)); do
            printf 'keys M-:\ntype %d\nkeys Enter\nwait-mt\nkeys Enter\n' "$i"
            printf 'keys M-:\ntype %d\nkeys Enter\nkeys Enter\n' "$i"
        done
        # :w must save; :w! saves what QA refused, so that msgfmt can say why
        printf 'keys M-:\ntype w\nkeys Enter\nkeys M-:\ntype w!\nkeys Enter\n'
        printf 'keys M-:\ntype q!\nkeys Enter\n'
    } >"$T/b/$name.script"
    t=$(now_ms)
    # the editor waits at most 30 s per wait-mt; this bounds a hang sooner
    timeout $((60 + segs)) "$MTPE" edit "$out" -m "$MODEL/model.npz" \
        -v "$MODEL/vocab.spm" "$MODEL/vocab.spm" --db "$T/b/$name.db" --cpu-threads 2 \
        --script "$T/b/$name.script" >"$T/b/$name.out" 2>"$T/b/$name.log"
    rc=$?
    ms=$(($(now_ms) - t))
    why=()
    [ $rc = 0 ] || why+=("exit $rc: $(head -n1 "$T/b/$name.log")")
    conf=$(grep -c '^confirmed ' "$T/b/$name.out")
    [ "$conf" = "$segs" ] || why+=("$conf of $segs segments confirmed")
    # the editor's QA: refused first confirmations (information only)
    qa_w=$(grep -c '^status segment [0-9]* not confirmed: QA warning' "$T/b/$name.out")
    qa_e=$(grep -c '^status segment [0-9]* not confirmed: QA error' "$T/b/$name.out")
    tot[b_qa_w]=$((tot[b_qa_w] + qa_w))
    tot[b_qa_e]=$((tot[b_qa_e] + qa_e))
    # "status save failed: WHY" when :w refused
    refused=$(grep -m1 '^status save failed: ' "$T/b/$name.out" | cut -c21-)
    if ! grep -q '^saved ' "$T/b/$name.out"; then
        why+=("not saved${refused:+: $refused}")
    elif [ -n "$refused" ]; then
        why+=("saved by :w! only, :w said: $refused")
    fi
    errs=$(msgfmt_errors "$T/errs/b.$name" "$out")
    untr=$(msgattrib --untranslated --no-obsolete "$out" 2>/dev/null | count_entries)
    fuzzy=$(msgattrib --only-fuzzy --no-obsolete "$out" 2>/dev/null | count_entries)
    same_entries "$out" "$f" || {
        why+=("entries differ from the input")
        tot[b_lost]=$((tot[b_lost] + 1))
    }
    [ "$errs" = 0 ] || why+=("$errs msgfmt errors")
    [ "$untr" = 0 ] || why+=("$untr untranslated")
    [ "$fuzzy" = 0 ] || why+=("$fuzzy fuzzy")
    tot[b_err]=$((tot[b_err] + errs))
    tot[b_untr]=$((tot[b_untr] + untr))
    tot[b_fuzzy]=$((tot[b_fuzzy] + fuzzy))
    tot[b_ms]=$((tot[b_ms] + ms))
    if [ ${#why[@]} = 0 ]; then
        echo "ok (b) $name: $segs segments confirmed and saved, msgfmt --check passes" \
            "(QA: $qa_e errors, $qa_w warnings; $(secs $ms) s)"
    else
        echo "NOT OK (b) $name: $(joined "${why[@]}")" \
            "(QA: $qa_e errors, $qa_w warnings; $(secs $ms) s)"
        show_errors "$T/errs/b.$name"
        tot[b_bad]=$((tot[b_bad] + 1))
        fails=$((fails + 1))
    fi
done

# the kinds of msgfmt error, most frequent first: the message without its
# place, numbers as N, msgstr[N] as msgstr, named arguments as 'NAME'
error_kinds() {
    cat "$T"/errs/"$1".* 2>/dev/null | grep -E '^[^:]+:[0-9]+: ' | grep -v ': warning: ' |
        sed -e 's/^[^:]*:[0-9]*: //' -e 's/msgstr\[[0-9]*\]/msgstr/g' -e 's/[0-9][0-9]*/N/g' \
            -e "s/argument '[^']*'/argument 'NAME'/g" |
        sort | uniq -c | sort -rn | head -n15
}

n=${#files[@]}
echo "summary: $n files, ${tot[msgs]} messages, ${tot[segs]} segments (corpus $(secs $t_fetch) s)"
echo "(a) translate --format po: ${tot[a_bad]} of $n files fail;" \
    "${tot[a_err]} msgfmt errors, ${tot[a_untr]} untranslated," \
    "${tot[a_lost]} files with other entries ($(secs "${tot[a_ms]}") s)"
echo "(b) edit --script:         ${tot[b_bad]} of $n files fail;" \
    "${tot[b_err]} msgfmt errors, ${tot[b_untr]} untranslated, ${tot[b_fuzzy]} fuzzy," \
    "${tot[b_lost]} files with other entries ($(secs "${tot[b_ms]}") s)"
echo "    the editor's QA refused ${tot[b_qa_e]} first confirmations for errors," \
    "${tot[b_qa_w]} for warnings"
for part in a b; do
    if [ "${tot[${part}_err]}" != 0 ]; then
        echo "($part) msgfmt errors by kind:"
        error_kinds $part | sed 's/^/  /'
    fi
done
if [ $report = 1 ]; then
    echo "report mode: $fails failed checks not counted as a failure"
    exit 0
fi
[ $fails = 0 ] || { echo "po_corpus_e2e: $fails of $((2 * n)) file checks failed"; exit 1; }
echo "po_corpus_e2e: all $((2 * n)) file checks pass"
