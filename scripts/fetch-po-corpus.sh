#!/usr/bin/env bash
# fetch-po-corpus.sh [CACHE_DIR]: builds a test corpus of real, untranslated
# English->German PO files from Debian packages (tests/e2e/po_corpus_e2e.sh).
#
# CACHE_DIR defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/mtpe/po-corpus; the
# corpus is never in git.  For each package of PACKAGES below:
#   apt-get download PKG; dpkg-deb -x; take its German catalogue
#   (usr/share/locale/de/LC_MESSAGES/DOMAIN.mo unless a path is given);
#   msgunfmt it and convert to UTF-8                      -> PKG.orig.po
#   clear every translation, give it a clean header       -> PKG.de.po
# A .mo carries no flags, so they are put back as xgettext would set them:
# "#, c-format" on entries whose msgid is a valid printf format with at
# least one directive (after dropping "%%", every '%' must start one:
# %[N$][flags][width][.prec][length]conv, the space flag left out because
# "50% of" would read as one); "#, python-format" instead for Python
# programs (also %(name)s); "#, kde-format" for KDE programs (%1..%9).  The
# German reference gets the same flags, and both files must pass
# `msgfmt --check`, which also tests the flags against real translations.
#
# Idempotent: CACHE_DIR/stamp holds the recipe version and package list of
# the last complete build; when it matches, the build is skipped.  The
# summary table (and CACHE_DIR/MANIFEST.tsv) is printed either way.
#
# Exit codes: 0 done; 77 the corpus cannot be built here (no apt-get,
# dpkg-deb or gettext tools, package lists missing, no network): callers
# skip; 1 anything else (a file that fails msgfmt --check, a package without
# a German catalogue), with a one-line error naming the package.
#
# Needs only bash, coreutils, awk (mawk is enough), sed, dpkg and gettext.
# shellcheck disable=SC2016 # the awk programs below are single-quoted on purpose
set -euo pipefail

# Packages: BINARY-PACKAGE STYLE [DOMAIN | PATH-OF-THE-MO-IN-THE-DEB].
# STYLE: c (C/C++/Vala/R: c-format), python (python-format), kde
# (kde-format).  All come from source packages whose translations the
# default model's training data left out (they are its dev and test
# packages: /work/shared/data/en-de/packages-{dev,test}.txt), so the test
# sees unseen files, not remembered ones; none is from packages-train.txt.
# Chosen for variety and for 20-400 messages each (4,904 in all, so that
# the end-to-end test runs in minutes):
PACKAGES='
datamash                      c       # C tool: --help texts, gnulib, plurals
gnuchess                      c       # C tool: options, multi-line help
msmtp                         c       # C tool: long option list, many %s
cpm                           c       # C console program (curses)
libidn2-0                     c       libidn2    # C library and idn2 tool
tvtime                        c       # C program: OSD and options
colorhug-client               c       # GNOME (C): accelerators, c-format
endeavour-common              c       endeavour  # GNOME (C): msgctxt, plurals
gnome-mahjongg                c       # GNOME (Vala): msgctxt, accelerators
libgoa-1.0-common             c       gnome-online-accounts  # GNOME (C)
grdesktop                     c       # GNOME 2 era GTK (C)
ripperx                       c       # GTK (C): accelerators
gtans                         c       # GTK game (C)
telegnome                     c       # GTK (C)
libplank-common               c       plank      # Vala
thunar-volman                 c       # Xfce (C)
xfce4-screenshooter           c       # Xfce (C): multi-line help
xfce4-whiskermenu-plugin      c       # Xfce (C++)
xfwm4                         c       # Xfce (C)
briquolo                      c       # game (C++)
freedink-dfarc                c       dfarc      # wxWidgets (C++)
planetblupi                   c       # SDL game (C++)
tuxpaint-data                 c       tuxpaint   # C: long tool tips
r-cran-nnet                   c       usr/lib/R/library/nnet/po/de/LC_MESSAGES/R-nnet.mo
kalendar                      kde     # KDE: msgctxt, plurals, %1
kalgebra-common               kde     kalgebra
kscreen                       kde     kcm_kscreen
minuet-data                   kde     minuet     # KDE: msgctxt
plasma-settings               kde     kcm_cellular_network
systemsettings                kde     # KDE: msgctxt, plurals
galternatives                 python  # Python GTK
giara                         python  # Python GTK: plurals
lightdm-gtk-greeter-settings  python  # Python GTK: msgctxt almost everywhere
portfolio-filemanager         python  portfolio
simple-ccsm                   python  # Python GTK
python3-django-debug-toolbar  python  usr/lib/python3/dist-packages/debug_toolbar/locale/de/LC_MESSAGES/django.mo
'
# bump when the processing below changes: the cache is rebuilt
RECIPE=1

usage() { echo "usage: fetch-po-corpus.sh [CACHE_DIR]" >&2; exit 2; }
[ $# -le 1 ] || usage
case ${1:-} in -h | --help) usage ;; esac
CACHE=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/mtpe/po-corpus}
export LC_ALL=C.UTF-8

skip() { echo "fetch-po-corpus: cannot build the corpus here: $*" >&2; exit 77; }
die() { echo "fetch-po-corpus: $*" >&2; exit 1; }

# the list without comments and blank lines: "PKG STYLE [DOMAIN]"
LIST=$(printf '%s\n' "$PACKAGES" | sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' |
    awk '{ $1 = $1; print }')
STAMP_TEXT=$(printf 'recipe %s\n%s\n' "$RECIPE" "$LIST")

# ---------------------------------------------------------------- awk parts

# Reads PO entries (blank-line separated, as msgunfmt/msgfilter write them)
# and prints them with the format flag of STYLE added where it applies.
# Entries arrive without comments or flags (a .mo has none).
ADD_FLAGS_AWK='
# the decoded-enough text of the quoted strings of a keyword: the string
# contents joined (PO escapes stay escaped: they never start a directive)
function strings_of(lines, n, key,    i, s, on) {
    s = ""; on = 0
    for (i = 1; i <= n; i++) {
        if (lines[i] ~ ("^" key " \"")) { on = 1; s = s unquote(substr(lines[i], length(key) + 2)); continue }
        if (on && lines[i] ~ /^"/) { s = s unquote(lines[i]); continue }
        on = 0
    }
    return s
}
function unquote(q) { sub(/^"/, "", q); sub(/"$/, "", q); return q }
# 1 when s is a printf format with at least one directive and every "%"
# starts one (numbered and unnumbered arguments not mixed)
function is_c_format(s,    i, n, rest, pos, num) {
    gsub(/%%/, "", s)
    n = 0; pos = 0; num = 0
    while ((i = index(s, "%")) > 0) {
        rest = substr(s, i)
        if (!match(rest, /^%([1-9][0-9]*\$)?[-+#0\047I]*([1-9][0-9]*|\*)?(\.([0-9]+|\*)?)?(hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGaAcspn]/))
            return 0
        if (rest ~ /^%[1-9][0-9]*\$/) num++; else pos++
        n++
        s = substr(rest, RLENGTH + 1)
    }
    return n > 0 && (num == 0 || pos == 0)
}
# the same for Python: %(name)s or unnamed, never both
function is_python_format(s,    i, n, rest, named, plain) {
    gsub(/%%/, "", s)
    n = 0; named = 0; plain = 0
    while ((i = index(s, "%")) > 0) {
        rest = substr(s, i)
        if (!match(rest, /^%(\([A-Za-z_][A-Za-z0-9_]*\))?[-+#0]*([1-9][0-9]*|\*)?(\.([0-9]+|\*)?)?[hlL]?[diouxXeEfFgGcrsa]/))
            return 0
        if (rest ~ /^%\(/) named++; else plain++
        n++
        s = substr(rest, RLENGTH + 1)
    }
    return n > 0 && (named == 0 || plain == 0)
}
BEGIN { RS = ""; FS = "\n" }
{
    n = split($0, L, "\n")
    id = strings_of(L, n, "msgid") strings_of(L, n, "msgid_plural")
    flag = ""
    if (id != "" || $0 ~ /(^|\n)msgctxt /) {
        if (style == "c" && is_c_format(id)) flag = "c-format"
        else if (style == "python" && is_python_format(id)) flag = "python-format"
        else if (style == "kde" && id ~ /%[1-9]/) flag = "kde-format"
    }
    printf "%s", (NR > 1 ? "\n" : "")
    if (flag != "") print "#, " flag
    print $0
}
'

# Replaces the header entry (the first one: msgid "" sorts first in a .mo)
# by a clean one: the original fields that name the project and the team,
# then MIME, Language and the German Plural-Forms; a comment says where
# the file comes from.
HEADER_AWK='
BEGIN { RS = ""; FS = "\n" }
NR == 1 {
    if ($0 !~ /^msgid ""\nmsgstr /) { print "no header entry" > "/dev/stderr"; exit 1 }
    h = ""
    for (i = 2; i <= NF; i++) { f = $i; sub(/^msgstr /, "", f); sub(/^"/, "", f); sub(/"$/, "", f); h = h f }
    n = split(h, F, /\\n/)
    for (i = 1; i <= n; i++) {
        k = F[i]; sub(/:.*/, "", k); v = F[i]; sub(/^[^:]*: ?/, "", v)
        if (k != "") val[k] = v
    }
    if (val["Project-Id-Version"] == "") val["Project-Id-Version"] = pkg " " ver
    if (val["PO-Revision-Date"] == "") val["PO-Revision-Date"] = "2023-01-01 00:00+0000"
    if (val["Last-Translator"] == "") val["Last-Translator"] = "unknown"
    if (val["Language-Team"] == "") val["Language-Team"] = "German"
    print "# German translation of " pkg " " ver " (" mo "), translations removed."
    print "# Built by scripts/fetch-po-corpus.sh of mtpe for its tests."
    print "#"
    print "msgid \"\""
    print "msgstr \"\""
    print "\"Project-Id-Version: " val["Project-Id-Version"] "\\n\""
    print "\"Report-Msgid-Bugs-To: " val["Report-Msgid-Bugs-To"] "\\n\""
    if (val["POT-Creation-Date"] != "") print "\"POT-Creation-Date: " val["POT-Creation-Date"] "\\n\""
    print "\"PO-Revision-Date: " val["PO-Revision-Date"] "\\n\""
    print "\"Last-Translator: " val["Last-Translator"] "\\n\""
    print "\"Language-Team: " val["Language-Team"] "\\n\""
    print "\"Language: de\\n\""
    print "\"MIME-Version: 1.0\\n\""
    print "\"Content-Type: text/plain; charset=UTF-8\\n\""
    print "\"Content-Transfer-Encoding: 8bit\\n\""
    print "\"Plural-Forms: nplurals=2; plural=(n != 1);\\n\""
    next
}
{ print ""; print $0 }
'

# One summary row per PO file: messages (without the header), entries with
# msgid_plural, with msgctxt, with each format flag, with a newline in the
# msgid.
STATS_AWK='
BEGIN { RS = ""; FS = "\n" }
/(^|\n)msgid "/ {
    hdr = 0; pl = 0; cx = 0; ml = 0; fl = ""
    for (i = 1; i <= NF; i++) {
        if ($i ~ /^msgid ""$/ && $(i + 1) ~ /^msgstr / && !cx) hdr = 1
        if ($i ~ /^msgid_plural /) pl = 1
        if ($i ~ /^msgctxt /) cx = 1
        if ($i ~ /^#,/) fl = fl $i
        if ($i ~ /^msgid/ || (inid && $i ~ /^"/)) { inid = 1; if ($i ~ /\\n/) ml = 1 } else inid = 0
    }
    if (hdr) next
    m++; p += pl; c += cx; l += ml
    if (fl ~ /c-format/) cf++
    if (fl ~ /python-format/) pf++
    if (fl ~ /kde-format/) kf++
}
END { printf "%d\t%d\t%d\t%d\t%d\t%d\t%d\n", m, p, c, cf, pf, kf, l }
'

summary() {
    local pkg style dom i t=(0 0 0 0 0 0 0) v
    printf '%-30s %6s %6s %6s %6s %6s %6s %6s\n' package msgs plural ctxt c-fmt py-fmt kde-fmt multi
    while read -r pkg style dom; do
        read -ra v <<<"$(awk "$STATS_AWK" "$CACHE/$pkg.de.po")"
        printf '%-30s %6s %6s %6s %6s %6s %6s %6s\n' "$pkg" "${v[@]}"
        for i in 0 1 2 3 4 5 6; do t[i]=$((t[i] + v[i])); done
    done <<<"$LIST"
    printf '%-30s %6s %6s %6s %6s %6s %6s %6s\n' "total: $(wc -l <<<"$LIST") files" "${t[@]}"
}

# the header of the file in $1 replaced (uses pkg, ver, mo of the loop)
hdr() { awk -v pkg="$pkg" -v ver="$ver" -v mo="$(basename "$mo")" "$HEADER_AWK" "$1"; }

# ---------------------------------------------------------------- main

# complete: the stamp of this list and every file of it
complete() {
    local pkg style dom
    [ -f "$CACHE/stamp" ] && [ "$(cat "$CACHE/stamp")" = "$STAMP_TEXT" ] || return 1
    while read -r pkg style dom; do
        [ -s "$CACHE/$pkg.de.po" ] || return 1
    done <<<"$LIST"
}
if complete; then
    echo "fetch-po-corpus: $CACHE is complete"
    summary
    exit 0
fi

for tool in apt-get dpkg-deb msgunfmt msgconv msgfilter msgfmt; do
    command -v "$tool" >/dev/null || skip "$tool not found (packages apt, dpkg, gettext)"
done

mkdir -p "$CACHE"
WORK=$(mktemp -d "$CACHE/.work.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
rm -f "$CACHE/stamp"

t0=$SECONDS
# one apt-get call for all (much faster than one each); "Download is
# performed unsandboxed as root" is only a warning
mkdir -p "$WORK/debs"
# shellcheck disable=SC2046
if ! (cd "$WORK/debs" && apt-get download $(cut -d' ' -f1 <<<"$LIST")) >"$WORK/apt.log" 2>&1; then
    skip "apt-get download failed (no network? run apt-get update; Debian 12 bookworm needed):" \
        "$(grep -m1 '^E:' "$WORK/apt.log" || tail -n1 "$WORK/apt.log")"
fi
echo "fetch-po-corpus: downloaded $(wc -l <<<"$LIST") packages in $((SECONDS - t0)) s"
manifest=$(printf 'package\tversion\tsource\tmo\n')
while read -r pkg style dom; do
    mkdir -p "$WORK/$pkg/deb"
    debs=("$WORK/debs/${pkg}_"*.deb)
    deb=${debs[0]}
    [ -f "$deb" ] || die "$pkg: apt-get download left no ${pkg}_*.deb"
    dpkg-deb -x "$deb" "$WORK/$pkg/deb" || die "$pkg: dpkg-deb -x $(basename "$deb") failed"
    ver=$(dpkg-deb -f "$deb" Version)
    src=$(dpkg-deb -f "$deb" Source | sed 's/ .*//')
    src=${src:-$pkg}
    case ${dom:-$pkg} in
    */*) mo=$dom ;;
    *) mo=usr/share/locale/de/LC_MESSAGES/${dom:-$pkg}.mo ;;
    esac
    [ -f "$WORK/$pkg/deb/$mo" ] || die "$pkg $ver: no German catalogue /$mo"
    # the German reference, in UTF-8, with a clean header and the flags
    msgunfmt "$WORK/$pkg/deb/$mo" -o "$WORK/$pkg/mo.po" 2>"$WORK/$pkg/err" ||
        die "$pkg: msgunfmt /$mo failed: $(head -n1 "$WORK/$pkg/err")"
    msgconv -t UTF-8 "$WORK/$pkg/mo.po" -o "$WORK/$pkg/utf8.po" 2>"$WORK/$pkg/err" ||
        die "$pkg: msgconv -t UTF-8 failed: $(head -n1 "$WORK/$pkg/err")"
    hdr "$WORK/$pkg/utf8.po" | awk -v style="$style" "$ADD_FLAGS_AWK" >"$WORK/$pkg/orig.po" ||
        die "$pkg: /$mo has no PO header"
    # the file to translate: every msgstr (and msgstr[N]) emptied
    msgfilter --keep-header -i "$WORK/$pkg/utf8.po" -o "$WORK/$pkg/empty.po" sed -e d \
        2>"$WORK/$pkg/err" || die "$pkg: msgfilter failed: $(head -n1 "$WORK/$pkg/err")"
    hdr "$WORK/$pkg/empty.po" | awk -v style="$style" "$ADD_FLAGS_AWK" >"$WORK/$pkg/de.po" ||
        die "$pkg: msgfilter lost the PO header"
    for kind in orig de; do
        msgfmt --check -o /dev/null "$WORK/$pkg/$kind.po" 2>"$WORK/$pkg/err" ||
            die "$pkg: $pkg.$kind.po fails msgfmt --check: $(grep -m1 -v '^msgfmt: found' "$WORK/$pkg/err")"
    done
    # same entries in both (msgfilter keeps them all)
    [ "$(grep -c '^msgid ' "$WORK/$pkg/orig.po")" = "$(grep -c '^msgid ' "$WORK/$pkg/de.po")" ] ||
        die "$pkg: the untranslated file lost entries"
    manifest+=$(printf '\n%s\t%s\t%s\t/%s' "$pkg" "$ver" "$src" "$mo")
    echo "fetch-po-corpus: $pkg $ver: $(($(grep -c "^msgid " "$WORK/$pkg/de.po") - 1)) messages"
done <<<"$LIST"

# all built: replace the old corpus, then write the stamp
rm -f "$CACHE"/*.de.po "$CACHE"/*.orig.po
while read -r pkg style dom; do
    mv "$WORK/$pkg/de.po" "$CACHE/$pkg.de.po"
    mv "$WORK/$pkg/orig.po" "$CACHE/$pkg.orig.po"
done <<<"$LIST"
printf '%s\n' "$manifest" >"$CACHE/MANIFEST.tsv"
printf '%s\n' "$STAMP_TEXT" >"$CACHE/stamp"
echo "fetch-po-corpus: built $CACHE in $((SECONDS - t0)) s"
summary
