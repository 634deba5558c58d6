#!/usr/bin/env bash
# xliff_corpus_e2e.sh [--report] MTPE SOURCE_DIR [CACHE_DIR]: the XLIFF half
# of issue 29's end-to-end check, on XLIFF 1.2 files made from the PO corpus
# of scripts/fetch-po-corpus.sh (see tests/e2e/po_corpus_e2e.sh for the PO half).
#
# The XLIFF files: CACHE_DIR/PKG.de.xlf from CACHE_DIR/PKG.de.po (PO2XLF_AWK
# below), made again when missing, older than the PO file, or made by
# another XLIFF_RECIPE (CACHE_DIR/xliff-stamp); deterministic (no dates).
#   <file original="PKG.de.po" source-language="en" target-language="de">
#   one <trans-unit id="N" xml:space="preserve"> per message, numbered from
#   1 in file order (header excluded), resname = msgctxt when it has one;
#   a plural message becomes <group id="N" restype="x-gettext-plurals">
#   with two units "N[0]" (msgid) and "N[1]" (msgid_plural).
#   <source> is the msgid, XML-escaped, line breaks kept.  HTML/Pango
#   markup in it (b, i, u, a, span, tt, small, big, s, sub, sup, em,
#   strong, p, ul, ol, li, abbr, code, kbd; br, hr, img) becomes XLIFF
#   inline elements, numbered from 1 per unit: <g id="N" ctype=...> for a
#   start tag with its matching end tag (properly nested), <x id="N"
#   ctype=.../> for an empty one (<br/>, <br>, <hr>, <img .../>).  A tag
#   without its partner (cpm's "</B>^A<!B>", "<FILE>" in --help texts)
#   stays text.  Every file must pass `xmllint --noout`.
#
# For every XLIFF file:
#   (a) `mtpe translate --format xliff FILE -o OUT`;
#   (b) `mtpe edit` on a copy with a script that confirms the MT of every
#       segment (twice: the editor's QA may refuse a first confirmation),
#       then ":w", ":w!" and ":q!", as tests/e2e/po_corpus_e2e.sh does.
# Checks on the result: the command exits 0 ((b): one confirmation per
# segment and a save by ":w"); the file passes `xmllint --noout`; it has the
# trans-units of FILE (same ids, same order); every unit has a non-empty
# <target>; every target's inline elements balance: the same multiset of
# inline elements (g, x, bx, ex, ph, bpt, ept, it, mrk by name and id) as
# its <source>, each inside the same inline parent as in the source, and
# properly nested.  (b) also: every unit approved="yes" with
# state="translated".  The checks parse `xmllint --nocdata --xpath` output
# (libxml2's serialisation) with awk: BALANCE_AWK below.
#
# One "ok"/"NOT OK" line per file and part (with up to 3 failing units),
# then a summary: files, units, units with inline tags, and per part the
# failing files, units without target, unbalanced units by kind, seconds.
#
# Exit: 0 all passed, 1 a check failed, 77 skipped (corpus cannot be built,
# no model, MTPE_PO_CORPUS=1 not set, or the sanitizer build).  --report
# never fails on the checks (it prints the same counts and exits 0).
# Needs bash, coreutils, awk (mawk is enough), gettext (the corpus) and
# xmllint (libxml2-utils); no Python, no converters.
# shellcheck disable=SC2016 # the awk programs below are single-quoted on purpose
set -u

report=0
args=()
for a in "$@"; do
    case $a in
    --report) report=1 ;;
    *) args+=("$a") ;;
    esac
done
USAGE="usage: xliff_corpus_e2e.sh [--report] MTPE SOURCE_DIR [CACHE_DIR]"
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
    echo "skipped: end-to-end corpus check in the sanitizer build (runs in the release build)"
    exit 77
fi
export LC_ALL=C.UTF-8
for tool in xmllint timeout; do
    command -v $tool >/dev/null || { echo "skipped: $tool not found (libxml2-utils, coreutils)"; exit 77; }
done
MTPE=$(cd "$(dirname "$MTPE")" && pwd)/$(basename "$MTPE")
MODEL=$SRC/assets/models/en-de
if [ "$(head -c 2 "$MODEL/model.npz" 2>/dev/null)" != PK ]; then
    echo "skipped: no default model at $MODEL/model.npz"
    exit 77
fi

T=$(mktemp -d /tmp/mtpe_xliff_corpus.XXXXXX)
trap 'rm -rf "$T"' EXIT
export XDG_DATA_HOME=$T/data XDG_CONFIG_HOME=$T/config

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
secs() { printf '%d.%d' $(($1 / 1000)) $(($1 % 1000 / 100)); }
joined() {
    local IFS=';' s
    s="$*"
    echo "${s//;/; }"
}

# ------------------------------------------------------------ PO -> XLIFF

# bump when PO2XLF_AWK changes: the XLIFF files are made again
XLIFF_RECIPE=1

# Reads a PO file as msgfilter/msgunfmt write it (entries separated by
# blank lines); writes the XLIFF file described above.  -v pkg=NAME.
PO2XLF_AWK='
function po_unescape(q,    out, i, c, n) {
    out = ""
    n = length(q)
    for (i = 1; i <= n; i++) {
        c = substr(q, i, 1)
        if (c != "\\" || i == n) { out = out c; continue }
        c = substr(q, ++i, 1)
        if (c == "n") out = out "\n"
        else if (c == "t") out = out "\t"
        else if (c == "r") out = out "\r"
        else out = out c
    }
    return out
}
function xml_text(s) {
    gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); gsub(/>/, "\\&gt;", s)
    gsub(/\r/, "\\&#13;", s)
    return s
}
function xml_attr(s) {
    s = xml_text(s)
    gsub(/"/, "\\&quot;", s); gsub(/\n/, "\\&#10;", s); gsub(/\t/, "\\&#9;", s)
    return s
}
function tag_name(t,    n) { n = t; sub(/^<\/?/, "", n); sub(/[^a-z0-9].*$/, "", n); return n }
function ctype(n) {
    if (n == "b" || n == "strong") return "bold"
    if (n == "i" || n == "em") return "italic"
    if (n == "u") return "underlined"
    if (n == "a") return "link"
    if (n == "br") return "lb"
    return "x-html-" n
}
# the msgid s as XLIFF inline content
function inline(s,    nt, i, k, t, tag, n, top, stk, num, out) {
    # tokens: kind[i] "t" text, "o" start tag, "c" end tag, "e" empty tag
    nt = 0
    while (match(s, /<\/?[a-z][a-z0-9]*([ \t\n][^<>]*)?\/?>/)) {
        if (RSTART > 1) { kind[++nt] = "t"; txt[nt] = substr(s, 1, RSTART - 1) }
        tag = substr(s, RSTART, RLENGTH)
        s = substr(s, RSTART + RLENGTH)
        n = tag_name(tag)
        txt[++nt] = tag; nm[nt] = n
        if (!(n in HTML)) kind[nt] = "t"
        else if ((n in EMPTY) || tag ~ /\/>$/) kind[nt] = "e"
        else if (tag ~ /^<\//) kind[nt] = "c"
        else kind[nt] = "o"
    }
    if (s != "") { kind[++nt] = "t"; txt[nt] = s }
    # pair start and end tags; those without a partner are text
    top = 0
    for (i = 1; i <= nt; i++) {
        if (kind[i] == "o") stk[++top] = i
        else if (kind[i] == "c") {
            if (top > 0 && nm[stk[top]] == nm[i]) top--
            else kind[i] = "t"
        }
    }
    for (k = 1; k <= top; k++) kind[stk[k]] = "t"
    out = ""; num = 0
    for (i = 1; i <= nt; i++) {
        if (kind[i] == "t") out = out xml_text(txt[i])
        else if (kind[i] == "o") out = out "<g id=\"" ++num "\" ctype=\"" ctype(nm[i]) "\">"
        else if (kind[i] == "c") out = out "</g>"
        else out = out "<x id=\"" ++num "\" ctype=\"" ctype(nm[i]) "\"/>"
        if (kind[i] == "o" || kind[i] == "e") tags++
    }
    split("", kind); split("", txt); split("", nm)
    return out
}
# the joined strings of keyword key in the entry lines L[1..n]
function strings_of(n, key,    i, s, on, q) {
    s = ""; on = 0
    for (i = 1; i <= n; i++) {
        if (index(L[i], key " \"") == 1) { on = 1; q = substr(L[i], length(key) + 2) }
        else if (on && L[i] ~ /^"/) q = L[i]
        else { on = 0; continue }
        sub(/^"/, "", q); sub(/"$/, "", q)
        s = s q
    }
    return po_unescape(s)
}
function unit(id, ctx, text, ind) {
    if (text ~ /[\001-\010\013\014\016-\037]/) {
        print pkg ": message " id ": a control character XML 1.0 cannot carry" > "/dev/stderr"
        bad = 1
    }
    printf "%s<trans-unit id=\"%s\"%s xml:space=\"preserve\">\n", ind, id,
        (has_ctx ? " resname=\"" xml_attr(ctx) "\"" : "")
    printf "%s  <source>%s</source>\n", ind, inline(text)
    printf "%s</trans-unit>\n", ind
}
BEGIN {
    RS = ""; FS = "\n"
    split("a abbr b big code em i kbd li ol p s small span strong sub sup tt u ul br hr img", h, " ")
    for (k in h) HTML[h[k]] = 1
    EMPTY["br"] = 1; EMPTY["hr"] = 1; EMPTY["img"] = 1
    print "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
    print "<!-- " pkg ".de.po as XLIFF 1.2, made by tests/e2e/xliff_corpus_e2e.sh of mtpe -->"
    print "<xliff version=\"1.2\" xmlns=\"urn:oasis:names:tc:xliff:document:1.2\">"
    print "  <file original=\"" pkg ".de.po\" source-language=\"en\" target-language=\"de\" datatype=\"po\">"
    print "    <body>"
}
{
    n = split($0, L, "\n")
    k = 0
    for (i = 1; i <= n; i++) if (L[i] !~ /^#/) L[++k] = L[i]   # comments, flags, obsolete
    n = k
    if (n == 0) next
    has_ctx = 0
    for (i = 1; i <= n; i++) if (L[i] ~ /^msgctxt /) has_ctx = 1
    ctx = strings_of(n, "msgctxt")
    id = strings_of(n, "msgid")
    if (id == "" && !has_ctx) next                          # the header
    m++
    plural = 0
    for (i = 1; i <= n; i++) if (L[i] ~ /^msgid_plural /) plural = 1
    if (!plural) { unit(m, ctx, id, "      "); units++; next }
    printf "      <group id=\"%d\" restype=\"x-gettext-plurals\">\n", m
    unit(m "[0]", ctx, id, "        ")
    unit(m "[1]", ctx, strings_of(n, "msgid_plural"), "        ")
    print "      </group>"
    units += 2
}
END {
    print "    </body>"
    print "  </file>"
    print "</xliff>"
    printf "%d messages, %d units, %d inline elements\n", m, units, tags > "/dev/stderr"
    exit bad
}
'

# ---------------------------------------------------------- the checker

# Reads `xmllint --nocdata --xpath //trans-unit` output (libxml2's
# serialisation: attributes in double quotes, "<" and ">" escaped in text
# and attributes).  -v mode=src: prints each unit id and, for a unit with
# inline elements, " NAME:ID@PARENT..." (for the ids check and the summary).
# -v mode=check -v want=FILE (mode=src output of the input): checks each
# unit of the output, prints "bad ID: WHY" per failing unit and a last line
# "units U targets T empty E tagged G bad B approved A kinds K1,K2".
BALANCE_AWK='
function attr(tag, a,    v) {
    if (!match(tag, "[ \t\n]" a "=\"[^\"]*\"")) return ""
    v = substr(tag, RSTART + length(a) + 3, RLENGTH - length(a) - 4)
    return v
}
# inline elements of content c: count[] of "NAME:ID@PARENT"; "" when
# properly nested, else why not
function scan(c, count,    t, name, top, stk, key, why, is_end, solo) {
    top = 0; why = ""
    while (match(c, /<[^>]*>/)) {
        t = substr(c, RSTART, RLENGTH)
        c = substr(c, RSTART + RLENGTH)
        if (t ~ /^<[!?]/) continue                       # comment, PI
        is_end = t ~ /^<\//; solo = t ~ /\/>$/
        name = t; sub(/^<\/?/, "", name); sub(/[ \t\n\/>].*$/, "", name); sub(/^.*:/, "", name)
        if (!(name in INLINE)) continue
        if (is_end) {
            if (top == 0 || stk[top] !~ ("^" name ":")) { why = "misnested </" name ">"; break }
            top--
            continue
        }
        key = name ":" (name == "mrk" ? attr(t, "mid") : attr(t, "id"))
        count[key "@" (top ? stk[top] : "")]++
        if (!solo) stk[++top] = key
    }
    if (why == "" && top > 0) why = "unclosed <" stk[top] ">"
    return why
}
# the first element named el in record r: its content, "" when empty, or
# the value NONE when r has none
function content(r, el,    i, rest, j) {
    if (!match(r, "<" el "([ \t\n][^>]*)?/?>")) return NONE
    open_tag = substr(r, RSTART, RLENGTH)
    if (open_tag ~ /\/>$/) return ""
    rest = substr(r, RSTART + RLENGTH)
    j = index(rest, "</" el ">")
    return j ? substr(rest, 1, j - 1) : rest
}
function keys(count,    k, s) { s = ""; for (k in count) s = s " " k "*" count[k]; return s }
BEGIN {
    NONE = "\001none"
    split("g x bx ex ph bpt ept it mrk", h, " ")
    for (k in h) INLINE[h[k]] = 1
    if (mode == "check") {
        while ((getline line < want) > 0) {
            split(line, w, " ")
            wid[++nw] = w[1]
        }
    }
    RS = "</trans-unit>"
}
!/<trans-unit[ \t\n>]/ { next }
{
    r = substr($0, index($0, "<trans-unit"))
    match(r, /<trans-unit[^>]*>/)
    tu = substr(r, RSTART, RLENGTH)
    id = attr(tu, "id")
    units++
    split("", sc); split("", tc)
    src = content(r, "source")
    swhy = scan(src, sc)
    if (mode == "src") { print id keys(sc); next }
    tagged_unit = keys(sc) != ""
    if (tagged_unit) tagged++
    why = ""
    if (units > nw || wid[units] != id) why = "unit " units " has id \"" id "\", the input \"" wid[units] "\""
    tgt = content(r, "target")
    if (tgt == NONE) { why = why (why ? "; " : "") "no <target>"; kinds["no-target"]++ }
    else {
        targets++
        st = attr(open_tag, "state")
        if (tgt == "") { why = why (why ? "; " : "") "empty <target>"; kinds["empty-target"]++; empty++ }
        twhy = scan(tgt, tc)
        if (twhy != "") { why = why (why ? "; " : "") twhy; kinds["misnested"]++ }
        miss = ""; extra = ""; moved = ""
        for (k in sc) {
            split(k, kp, "@")
            n = 0
            for (j in tc) { split(j, jp, "@"); if (jp[1] == kp[1]) n += tc[j] }
            if (n < sc[k]) miss = miss " " kp[1]
            else if (!(k in tc)) moved = moved " " kp[1]
        }
        for (j in tc) {
            split(j, jp, "@")
            n = 0
            for (k in sc) { split(k, kp, "@"); if (kp[1] == jp[1]) n += sc[k] }
            if (tc[j] > n) extra = extra " " jp[1]
        }
        if (miss != "") { why = why (why ? "; " : "") "missing" miss; kinds["missing"]++ }
        if (extra != "") { why = why (why ? "; " : "") "extra" extra; kinds["extra"]++ }
        if (moved != "") { why = why (why ? "; " : "") "moved to another parent:" moved; kinds["moved"]++ }
        if (approved_check && !(attr(tu, "approved") == "yes" && st == "translated")) {
            why = why (why ? "; " : "") "not approved (state \"" st "\")"; kinds["not-approved"]++
        }
    }
    if (why != "") { bad++; if (tagged_unit) bad_tagged++; print "bad " id ": " why }
}
END {
    if (mode == "src") exit
    if (units != nw) { print "bad -: " units " units, the input has " nw + 0; bad++ }
    ks = ""
    for (k in kinds) ks = ks (ks ? "," : "") k "=" kinds[k]
    printf "units %d targets %d empty %d tagged %d bad %d badtagged %d kinds %s\n",
        units, targets, empty, tagged, bad, bad_tagged, (ks == "" ? "-" : ks)
}
'

# the trans-units of FILE as xmllint serialises them
units_of() { xmllint --nocdata --xpath '//*[local-name()="trans-unit"]' "$1" 2>/dev/null; }

# ------------------------------------------------------------------ main

t0=$(now_ms)
bash "$SRC/scripts/fetch-po-corpus.sh" "$CACHE" >"$T/fetch.log" 2>&1
rc=$?
if [ $rc = 77 ]; then
    echo "skipped: $(tail -n1 "$T/fetch.log")"
    exit 77
elif [ $rc != 0 ]; then
    tail -n5 "$T/fetch.log"
    echo "NOT OK: the corpus could not be built (scripts/fetch-po-corpus.sh exit $rc)"
    exit 1
fi
shopt -s nullglob
pos=("$CACHE"/*.de.po)
[ ${#pos[@]} -gt 0 ] || { echo "NOT OK: no *.de.po in $CACHE"; exit 1; }

# PKG.de.xlf for every PKG.de.po: made when missing, stale or of another recipe
stamp="xliff recipe $XLIFF_RECIPE"
[ "$(cat "$CACHE/xliff-stamp" 2>/dev/null)" = "$stamp" ] || rm -f "$CACHE/xliff-stamp" "$CACHE"/*.de.xlf
made=0
for po in "${pos[@]}"; do
    pkg=$(basename "$po" .de.po)
    xlf=$CACHE/$pkg.de.xlf
    [ -s "$xlf" ] && ! [ "$po" -nt "$xlf" ] && continue
    if ! awk -v pkg="$pkg" "$PO2XLF_AWK" "$po" >"$xlf.tmp" 2>"$T/conv.err"; then
        rm -f "$xlf.tmp"
        echo "NOT OK: $pkg.de.po cannot be made XLIFF: $(head -n1 "$T/conv.err")"
        exit 1
    fi
    if ! xmllint --noout "$xlf.tmp" 2>"$T/conv.err"; then
        rm -f "$xlf.tmp"
        echo "NOT OK: $pkg.de.xlf as made fails xmllint: $(head -n1 "$T/conv.err")"
        exit 1
    fi
    mv "$xlf.tmp" "$xlf"
    made=$((made + 1))
done
echo "$stamp" >"$CACHE/xliff-stamp"
t_corpus=$(($(now_ms) - t0))
echo "corpus: $CACHE, $made of ${#pos[@]} XLIFF files made ($(secs $t_corpus) s)"
files=()
for po in "${pos[@]}"; do files+=("$CACHE/$(basename "$po" .de.po).de.xlf"); done

# check PART NAME OUT WANT [approved]: the lines of the checker for OUT
# against the units of the input (WANT: mode=src output) in $T/$PART/NAME.chk;
# sets why+=() and the counters
check() {
    local part=$1 name=$2 out=$3 want=$4 approved=${5:-0} last v
    if ! [ -f "$out" ]; then
        why+=("no output")
        return
    fi
    if ! xmllint --noout "$out" 2>"$T/$part/$name.xmllint"; then
        why+=("xmllint: $(head -n1 "$T/$part/$name.xmllint" | sed "s|^$T/[ab]/||")")
        tot[${part}_xml]=$((tot[${part}_xml] + 1))
        return
    fi
    units_of "$out" | awk -v mode=check -v want="$want" -v approved_check="$approved" \
        "$BALANCE_AWK" >"$T/$part/$name.chk"
    last=$(tail -n1 "$T/$part/$name.chk")
    read -ra v <<<"$last"
    # units U targets T empty E tagged G bad B badtagged BT kinds K
    [ "${v[0]:-}" = units ] || { why+=("the checker failed"); return; }
    local units=${v[1]} targets=${v[3]} empty=${v[5]} bad=${v[9]} badt=${v[11]}
    [ "$targets" = "$units" ] || why+=("$((units - targets)) of $units units without <target>")
    [ "$empty" = 0 ] || why+=("$empty empty targets")
    [ "$bad" = 0 ] || why+=("$bad bad units ($badt with inline tags): ${v[13]}")
    tot[${part}_notgt]=$((tot[${part}_notgt] + units - targets + empty))
    tot[${part}_badu]=$((tot[${part}_badu] + bad))
    tot[${part}_badt]=$((tot[${part}_badt] + badt))
    sed -n 's/^bad /    unit /p' "$T/$part/$name.chk" | head -n3 >"$T/$part/$name.show"
}

fails=0
declare -A tot
for k in a_bad a_xml a_notgt a_badu a_badt a_ms b_bad b_xml b_notgt b_badu b_badt b_ms b_qa_w b_qa_e \
    units tagged tags; do
    tot[$k]=0
done
mkdir -p "$T/a" "$T/b" "$T/want"
for f in "${files[@]}"; do
    name=$(basename "$f" .de.xlf)
    want=$T/want/$name
    units_of "$f" | awk -v mode=src "$BALANCE_AWK" >"$want"
    segs=$(wc -l <"$want")
    tagged=$(grep -c ' ' "$want")
    tot[units]=$((tot[units] + segs))
    tot[tagged]=$((tot[tagged] + tagged))
    tot[tags]=$((tot[tags] + $(awk '{ for (i = 2; i <= NF; i++) { split($i, c, "*"); s += c[2] } } END { print s + 0 }' "$want")))

    # (a) translate --format xliff
    out=$T/a/$name.de.xlf
    t=$(now_ms)
    "$MTPE" translate -c "$MODEL/decoder.yml" --format xliff "$f" -o "$out" --cpu-threads 2 \
        --quiet 2>"$T/a/$name.log"
    rc=$?
    ms=$(($(now_ms) - t))
    why=()
    : >"$T/a/$name.show"
    [ $rc = 0 ] || why+=("exit $rc: $(head -n1 "$T/a/$name.log")")
    check a "$name" "$out" "$want"
    tot[a_ms]=$((tot[a_ms] + ms))
    if [ ${#why[@]} = 0 ]; then
        echo "ok (a) $name: $segs units ($tagged with inline tags) translated, tags balance ($(secs $ms) s)"
    else
        echo "NOT OK (a) $name: $(joined "${why[@]}") ($(secs $ms) s)"
        cat "$T/a/$name.show"
        tot[a_bad]=$((tot[a_bad] + 1))
        fails=$((fails + 1))
    fi

    # (b) edit --script: confirm the MT of every segment, then save
    out=$T/b/$name.de.xlf
    cp "$f" "$out"
    {
        # as in po_corpus_e2e.sh: Enter confirms; ":i" and Enter again keep
        # an MT the QA refused the first time, and are a no-op otherwise
        for ((i = 1; i <= segs; i++)); do
            printf 'keys M-:\ntype %d\nkeys Enter\nwait-mt\nkeys Enter\n' "$i"
            printf 'keys M-:\ntype %d\nkeys Enter\nkeys Enter\n' "$i"
        done
        printf 'keys M-:\ntype w\nkeys Enter\nkeys M-:\ntype w!\nkeys Enter\n'
        printf 'keys M-:\ntype q!\nkeys Enter\n'
    } >"$T/b/$name.script"
    t=$(now_ms)
    timeout $((60 + segs)) "$MTPE" edit "$out" -m "$MODEL/model.npz" \
        -v "$MODEL/vocab.spm" "$MODEL/vocab.spm" --db "$T/b/$name.db" --cpu-threads 2 \
        --script "$T/b/$name.script" >"$T/b/$name.out" 2>"$T/b/$name.log"
    rc=$?
    ms=$(($(now_ms) - t))
    why=()
    : >"$T/b/$name.show"
    [ $rc = 0 ] || why+=("exit $rc: $(head -n1 "$T/b/$name.log")")
    conf=$(grep -c '^confirmed ' "$T/b/$name.out")
    [ "$conf" = "$segs" ] || why+=("$conf of $segs segments confirmed")
    qa_w=$(grep -c '^status segment [0-9]* not confirmed: QA warning' "$T/b/$name.out")
    qa_e=$(grep -c '^status segment [0-9]* not confirmed: QA error' "$T/b/$name.out")
    tot[b_qa_w]=$((tot[b_qa_w] + qa_w))
    tot[b_qa_e]=$((tot[b_qa_e] + qa_e))
    refused=$(grep -m1 '^status save failed: ' "$T/b/$name.out" | cut -c21-)
    if ! grep -q '^saved ' "$T/b/$name.out"; then
        why+=("not saved${refused:+: $refused}")
    elif [ -n "$refused" ]; then
        why+=("saved by :w! only, :w said: $refused")
    fi
    check b "$name" "$out" "$want" 1
    tot[b_ms]=$((tot[b_ms] + ms))
    if [ ${#why[@]} = 0 ]; then
        echo "ok (b) $name: $segs segments confirmed and saved, tags balance" \
            "(QA: $qa_e errors, $qa_w warnings; $(secs $ms) s)"
    else
        echo "NOT OK (b) $name: $(joined "${why[@]}")" \
            "(QA: $qa_e errors, $qa_w warnings; $(secs $ms) s)"
        cat "$T/b/$name.show"
        tot[b_bad]=$((tot[b_bad] + 1))
        fails=$((fails + 1))
    fi
done

# the kinds of failing unit over all files of a part
bad_kinds() {
    cat "$T/$1"/*.chk 2>/dev/null | sed -n 's/^bad [^:]*: //p' | tr ';' '\n' |
        sed -e 's/^ *//' -e 's/ [gx]:[0-9].*//' -e 's/"[^"]*"/"..."/g' | sort | uniq -c | sort -rn
}

n=${#files[@]}
echo "summary: $n files, ${tot[units]} units, ${tot[tagged]} with inline tags" \
    "(${tot[tags]} inline elements) (corpus $(secs $t_corpus) s)"
echo "(a) translate --format xliff: ${tot[a_bad]} of $n files fail; ${tot[a_xml]} fail xmllint," \
    "${tot[a_notgt]} units without target, ${tot[a_badu]} bad units" \
    "(${tot[a_badt]} with inline tags) ($(secs "${tot[a_ms]}") s)"
echo "(b) edit --script:            ${tot[b_bad]} of $n files fail; ${tot[b_xml]} fail xmllint," \
    "${tot[b_notgt]} units without target, ${tot[b_badu]} bad units" \
    "(${tot[b_badt]} with inline tags) ($(secs "${tot[b_ms]}") s)"
echo "    the editor's QA refused ${tot[b_qa_e]} first confirmations for errors," \
    "${tot[b_qa_w]} for warnings"
for part in a b; do
    if [ "${tot[${part}_badu]}" != 0 ]; then
        echo "($part) bad units by kind:"
        bad_kinds $part | sed 's/^/  /'
    fi
done
if [ $report = 1 ]; then
    echo "report mode: $fails failed checks not counted as a failure"
    exit 0
fi
[ $fails = 0 ] || { echo "xliff_corpus_e2e: $fails of $((2 * n)) file checks failed"; exit 1; }
echo "xliff_corpus_e2e: all $((2 * n)) file checks pass"
