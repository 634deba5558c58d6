/*
** options.c: Marian-style option parsing (see options.h for the rules).
**
** Every option keeps its values as text (one string per list item) and the
** source of the current value.  Values are checked against the option's
** kind whenever they are set, so the typed getters only convert.
**
** Config files are YAML as read by mt_yaml (engine/yaml.c, which documents
** the accepted subset): a top-level mapping from option names to scalars or
** to sequences of scalars.  A config file is text: a NUL byte in it is an
** error (it would end the text early and drop what follows unnoticed).
**
** Positional arguments (commands that declare them in app_cmd) are kept in
** command-line order, copied.
*/
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

typedef struct opt_val {
    int n;
    char **v;
    app_opt_source src;
} opt_val;

struct app_opts {
    const app_opt *defs;
    int n_defs;
    opt_val *vals;
    char **args; /* positional arguments */
    int n_args;
    bool help;
};

static bool is_list(app_opt_kind k) { return k >= APP_OPT_INTS; }

static app_opt_kind item_kind(app_opt_kind k) {
    switch (k) {
    case APP_OPT_INTS: return APP_OPT_INT;
    case APP_OPT_FLOATS: return APP_OPT_FLOAT;
    case APP_OPT_STRINGS: return APP_OPT_STRING;
    case APP_OPT_FREQS: return APP_OPT_FREQ;
    default: return k;
    }
}

/* ------------------------------------------------------------- parsers */

bool app_parse_bool(const char *s, bool *out) {
    static const char *yes[] = {"true", "on", "yes", "1"};
    static const char *no[] = {"false", "off", "no", "0"};
    for (int i = 0; i < 4; i++) {
        if (!strcmp(s, yes[i])) {
            *out = true;
            return true;
        }
        if (!strcmp(s, no[i])) {
            *out = false;
            return true;
        }
    }
    return false;
}

/* 0: *out holds the value; 1: not an integer; 2: an integer that does not
** fit in 64 bits. */
static int parse_int_ex(const char *s, int64_t *out) {
    if (*s == '\0' || isspace((unsigned char)*s)) return 1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0') return 1;
    if (errno == ERANGE) return 2;
    if (errno != 0) return 1;
    *out = (int64_t)v;
    return 0;
}

static bool parse_int(const char *s, int64_t *out) { return parse_int_ex(s, out) == 0; }

static bool parse_float(const char *s, double *out) {
    if (*s == '\0' || isspace((unsigned char)*s)) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v)) return false;
    *out = v;
    return true;
}

/* Marian's SchedulingParameter: a number, optionally with a multiplier
** k/K (1e3), M (1e6), G (1e9), T (1e12), then an optional unit u|e|t. */
bool app_parse_freq(const char *s, app_freq *out) {
    size_t n = strlen(s);
    char unit = 'u';
    if (n > 0 && strchr("uet", s[n - 1]) != NULL) {
        unit = s[n - 1];
        n--;
    }
    double mult = 1;
    if (n > 0) {
        switch (s[n - 1]) {
        case 'k':
        case 'K':
            mult = 1e3;
            n--;
            break;
        case 'M':
            mult = 1e6;
            n--;
            break;
        case 'G':
            mult = 1e9;
            n--;
            break;
        case 'T':
            mult = 1e12;
            n--;
            break;
        default: break;
        }
    }
    char buf[32];
    if (n == 0 || n >= sizeof buf || !isdigit((unsigned char)s[0])) return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    int dots = 0;
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '.')
            dots++;
        else if (!isdigit((unsigned char)buf[i]))
            return false;
    }
    double v;
    if (dots > 1 || !parse_float(buf, &v)) return false;
    v *= mult;
    if (v >= 9.2e18) return false;
    out->n = (int64_t)v;
    out->unit = unit;
    return true;
}

static const char *kind_what(app_opt_kind k) {
    switch (item_kind(k)) {
    case APP_OPT_FLAG: return "a boolean (true/false)";
    case APP_OPT_INT: return "an integer";
    case APP_OPT_FLOAT: return "a number";
    case APP_OPT_FREQ: return "a count with an optional unit u, e or t (e.g. 500u)";
    default: return "text";
    }
}

/* A numeric range "LO..HI" / "(LO..HI" / "LO..HI)" (app_opt.range). */
typedef struct num_range {
    bool has_lo, has_hi, lo_open, hi_open;
    double lo, hi;
} num_range;

static bool parse_range(const char *r, num_range *out) {
    memset(out, 0, sizeof *out);
    if (*r == '(') {
        out->lo_open = true;
        r++;
    }
    const char *dots = strstr(r, "..");
    if (dots == NULL) return false;
    char buf[64];
    size_t n = (size_t)(dots - r);
    if (n >= sizeof buf) return false;
    memcpy(buf, r, n);
    buf[n] = '\0';
    if (n > 0) {
        if (!parse_float(buf, &out->lo)) return false;
        out->has_lo = true;
    }
    if (dots[2] != '\0') {
        n = strlen(dots + 2);
        out->hi_open = dots[2 + n - 1] == ')';
        if (n - out->hi_open >= sizeof buf) return false;
        memcpy(buf, dots + 2, n - out->hi_open);
        buf[n - out->hi_open] = '\0';
        if (!parse_float(buf, &out->hi)) return false;
        out->has_hi = true;
    }
    return out->has_lo || out->has_hi;
}

/* The range in words: "1..64", "at least 1", "more than 0", "at most 9",
** "more than 0, at most 10", "at least 0, less than 1"; for strings "one of
** a, b, c". */
static void range_text(const app_opt *d, char *buf, size_t size) {
    const char *r = d->range;
    if (item_kind(d->kind) == APP_OPT_STRING) {
        size_t k = (size_t)snprintf(buf, size, "one of ");
        for (; *r && k + 1 < size; r++) {
            if (*r == '|') {
                k += (size_t)snprintf(buf + k, size - k, ", ");
            } else {
                buf[k++] = *r;
                buf[k] = '\0';
            }
        }
        return;
    }
    num_range nr;
    if (!parse_range(r, &nr)) {
        snprintf(buf, size, "%s", r);
        return;
    }
    const char *hi0 = strstr(r, "..") + 2;
    char lo[64], hi[64];
    snprintf(lo, sizeof lo, "%.*s", (int)(strstr(r, "..") - r - nr.lo_open), r + nr.lo_open);
    snprintf(hi, sizeof hi, "%.*s", (int)(strlen(hi0) - nr.hi_open), hi0);
    const char *lw = nr.lo_open ? "more than" : "at least",
               *hw = nr.hi_open ? "less than" : "at most";
    if (nr.has_lo && nr.has_hi && !nr.lo_open && !nr.hi_open)
        snprintf(buf, size, "%s..%s", lo, hi);
    else if (nr.has_lo && nr.has_hi)
        snprintf(buf, size, "%s %s, %s %s", lw, lo, hw, hi);
    else if (nr.has_lo)
        snprintf(buf, size, "%s %s", lw, lo);
    else
        snprintf(buf, size, "%s %s", hw, hi);
}

/* Checks one value (one item of a list) of option d: its kind, then its
** range.  On failure why holds the message (after "--name: "). */
static bool check_value(const app_opt *d, const char *s, bool ranged, char *why, size_t size) {
    bool b;
    int64_t i = 0;
    double x = 0;
    app_freq f = {0, 'u'};
    bool ok = true, too_big = false;
    switch (item_kind(d->kind)) {
    case APP_OPT_FLAG: ok = app_parse_bool(s, &b); break;
    case APP_OPT_INT: {
        int e = parse_int_ex(s, &i);
        ok = e == 0;
        too_big = e == 2;
        x = (double)i;
        break;
    }
    case APP_OPT_FLOAT: ok = parse_float(s, &x); break;
    case APP_OPT_FREQ:
        ok = app_parse_freq(s, &f);
        x = (double)f.n;
        break;
    default: break;
    }
    char rt[256];
    if (too_big) {
        if (d->range)
            range_text(d, rt, sizeof rt);
        else
            snprintf(rt, sizeof rt, "a 64-bit integer");
        snprintf(why, size, "%s is out of range (%s)", s, rt);
        return false;
    }
    if (!ok) {
        snprintf(why, size, "'%s' is not %s", s, kind_what(d->kind));
        return false;
    }
    if (d->range == NULL || !ranged || item_kind(d->kind) == APP_OPT_FLAG) return true;
    if (item_kind(d->kind) == APP_OPT_STRING) {
        size_t n = strlen(s);
        for (const char *r = d->range; *r;) {
            size_t k = strcspn(r, "|");
            if (k == n && !strncmp(r, s, n)) return true;
            r += k + (r[k] == '|');
        }
        range_text(d, rt, sizeof rt);
        snprintf(why, size, "'%s' is not %s", s, rt);
        return false;
    }
    num_range nr;
    MT_ASSERT(parse_range(d->range, &nr)); /* a bad range in a table */
    bool in = true;
    if (nr.has_lo) in = nr.lo_open ? x > nr.lo : x >= nr.lo;
    if (in && nr.has_hi) in = nr.hi_open ? x < nr.hi : x <= nr.hi;
    if (in) return true;
    range_text(d, rt, sizeof rt);
    snprintf(why, size, "%s is out of range (%s)", s, rt);
    return false;
}

/* ------------------------------------------------------------ storage */

static int find_opt(const app_opts *o, const char *name, size_t len) {
    for (int i = 0; i < o->n_defs; i++) {
        if (strlen(o->defs[i].name) == len && !strncmp(o->defs[i].name, name, len)) return i;
    }
    return -1;
}

static int must_find(const app_opts *o, const char *name) {
    int i = find_opt(o, name, strlen(name));
    if (i < 0) mt_log(MT_LOG_ERROR, "options: no option called '%s'", name);
    MT_ASSERT(i >= 0);
    return i;
}

static void val_clear(opt_val *v) {
    for (int i = 0; i < v->n; i++)
        mt_free(v->v[i]);
    mt_free(v->v);
    v->v = NULL;
    v->n = 0;
}

/* Replaces option idx by values[0..n); validates first, so on failure the
** old value stays.  ranged: values are checked against the range too
** (not the empty value of an option without a default: "not given"). */
static mt_status set_values_ex(app_opts *o, int idx, int n, const char *const *values,
                               app_opt_source src, const char *where, bool ranged) {
    const app_opt *d = &o->defs[idx];
    if (!is_list(d->kind) && n != 1) {
        return mt_seterr(MT_ERR_INVALID, "option --%s%s takes one value, got %d", d->name, where,
                         n);
    }
    for (int i = 0; i < n; i++) {
        char why[512];
        if (!check_value(d, values[i], ranged, why, sizeof why))
            return mt_seterr(MT_ERR_INVALID, "option --%s%s: %s", d->name, where, why);
    }
    char **v = NULL;
    if (n > 0) {
        v = mt_try_calloc((size_t)n, sizeof *v);
        if (v == NULL) goto nomem;
        for (int i = 0; i < n; i++) {
            v[i] = mt_try_strdup(values[i]);
            if (v[i] == NULL) {
                for (int j = 0; j < i; j++)
                    mt_free(v[j]);
                mt_free(v);
                goto nomem;
            }
        }
    }
    val_clear(&o->vals[idx]);
    o->vals[idx].v = v;
    o->vals[idx].n = n;
    o->vals[idx].src = src;
    return MT_OK;
nomem:
    return mt_seterr(MT_ERR_NOMEM, "options: out of memory");
}

static mt_status set_values(app_opts *o, int idx, int n, const char *const *values,
                            app_opt_source src, const char *where) {
    return set_values_ex(o, idx, n, values, src, where, true);
}

/* Sets option idx from text holding space-separated values (defaults and
** implicit values of lists); NULL or "" is an empty list. */
static mt_status set_from_words(app_opts *o, int idx, const char *text, app_opt_source src) {
    const app_opt *d = &o->defs[idx];
    if (!is_list(d->kind)) {
        const char *s = text;
        if (s == NULL) {
            switch (d->kind) {
            case APP_OPT_FLAG: s = "false"; break;
            case APP_OPT_INT:
            case APP_OPT_FLOAT: s = "0"; break;
            case APP_OPT_FREQ: s = "0u"; break;
            default: s = ""; break;
            }
        }
        return set_values_ex(o, idx, 1, &s, src, " (default)", text != NULL);
    }
    char *copy = mt_try_strdup(text ? text : "");
    const char **words = mt_try_calloc(strlen(copy ? copy : "") / 2 + 1, sizeof *words);
    mt_status rc = MT_ERR_NOMEM;
    if (copy == NULL || words == NULL) {
        mt_seterr(rc, "options: out of memory");
        goto done;
    }
    int n = 0;
    for (char *t = strtok(copy, " "); t != NULL; t = strtok(NULL, " "))
        words[n++] = t;
    rc = set_values(o, idx, n, words, src, "");
done:
    mt_free(words);
    mt_free(copy);
    return rc;
}

void app_opts_free(app_opts *o) {
    if (o == NULL) return;
    for (int i = 0; o->vals != NULL && i < o->n_defs; i++)
        val_clear(&o->vals[i]);
    mt_free(o->vals);
    for (int i = 0; i < o->n_args; i++)
        mt_free(o->args[i]);
    mt_free(o->args);
    mt_free(o);
}

/* ------------------------------------------------------- command line */

/* An argument that does not start an option: "-", negative numbers and
** anything not starting with '-'. */
static bool is_value_arg(const char *s) {
    if (s[0] != '-' || s[1] == '\0') return true;
    if (isdigit((unsigned char)s[1])) return true;
    return s[1] == '.' && isdigit((unsigned char)s[2]);
}

static int find_alias(const app_opts *o, char c) {
    for (int k = 0; k < o->n_defs; k++)
        if (o->defs[k].alias == c) return k;
    return -1;
}

/* -dov: every letter the alias of a flag. */
static bool is_flag_group(const app_opts *o, const char *arg) {
    if (arg[0] != '-' || arg[1] == '\0' || arg[1] == '-' || arg[2] == '\0') return false;
    for (const char *c = arg + 1; *c; c++) {
        int k = find_alias(o, *c);
        if (k < 0 || o->defs[k].kind != APP_OPT_FLAG) return false;
    }
    return true;
}

/* Appends a positional argument (allow: the command takes any). */
static mt_status add_arg(app_opts *o, const char *arg, bool allow) {
    if (!allow)
        return mt_seterr(MT_ERR_INVALID, "unexpected argument '%s' (options start with --)", arg);
    char **a = mt_try_realloc(o->args, (size_t)(o->n_args + 1) * sizeof *a);
    if (a == NULL) return mt_seterr(MT_ERR_NOMEM, "options: out of memory");
    o->args = a;
    if ((a[o->n_args] = mt_try_strdup(arg)) == NULL)
        return mt_seterr(MT_ERR_NOMEM, "options: out of memory");
    o->n_args++;
    return MT_OK;
}

static mt_status parse_argv(app_opts *o, int argc, char **argv, bool allow_args) {
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            o->help = true;
            continue;
        }
        if (!strcmp(arg, "--")) {
            /* the end of the options: all that follows is positional (a
            ** command without positional arguments accepts a bare "--") */
            if (!allow_args && i + 1 < argc)
                return mt_seterr(MT_ERR_INVALID,
                                 "unexpected argument '%s' after '--' (this command takes no "
                                 "arguments, only options)",
                                 argv[i + 1]);
            while (++i < argc) {
                mt_status rc = add_arg(o, argv[i], allow_args);
                if (rc != MT_OK) return rc;
            }
            break;
        }
        if (is_flag_group(o, arg)) {
            for (const char *c = arg + 1; *c; c++) {
                const char *v = "true";
                mt_status rc = set_values(o, find_alias(o, *c), 1, &v, APP_SRC_CMDLINE, "");
                if (rc != MT_OK) return rc;
            }
            continue;
        }
        int idx = -1;
        const char *eq = NULL;
        if (arg[0] == '-' && arg[1] == '-' && arg[2] != '\0') {
            const char *name = arg + 2;
            eq = strchr(name, '=');
            idx = find_opt(o, name, eq ? (size_t)(eq - name) : strlen(name));
            if (idx < 0) {
                return mt_seterr(MT_ERR_INVALID, "unknown option '--%.*s'",
                                 (int)(eq ? eq - name : (long)strlen(name)), name);
            }
        } else if (!is_value_arg(arg)) {
            if (arg[2] == '\0') idx = find_alias(o, arg[1]);
            if (idx < 0) return mt_seterr(MT_ERR_INVALID, "unknown option '%s'", arg);
        } else {
            mt_status rc = add_arg(o, arg, allow_args);
            if (rc != MT_OK) return rc;
            continue;
        }
        const app_opt *d = &o->defs[idx];
        mt_status rc;
        if (eq != NULL) {
            const char *v = eq + 1;
            rc = set_values(o, idx, 1, &v, APP_SRC_CMDLINE, "");
        } else if (d->kind == APP_OPT_FLAG) {
            bool b;
            const char *v = "true";
            if (i + 1 < argc && app_parse_bool(argv[i + 1], &b)) v = argv[++i];
            rc = set_values(o, idx, 1, &v, APP_SRC_CMDLINE, "");
        } else if (is_list(d->kind)) {
            int first = i + 1, n = 0;
            while (first + n < argc && is_value_arg(argv[first + n]))
                n++;
            if (n == 0 && d->implicit == NULL)
                return mt_seterr(MT_ERR_INVALID, "option --%s needs at least one value", d->name);
            if (n == 0) {
                rc = set_from_words(o, idx, d->implicit, APP_SRC_CMDLINE);
            } else {
                rc =
                    set_values(o, idx, n, (const char *const *)(argv + first), APP_SRC_CMDLINE, "");
            }
            i += n;
        } else if (i + 1 < argc && is_value_arg(argv[i + 1])) {
            rc = set_values(o, idx, 1, (const char *const *)(argv + i + 1), APP_SRC_CMDLINE, "");
            i++;
        } else if (d->implicit != NULL) {
            rc = set_values(o, idx, 1, &d->implicit, APP_SRC_CMDLINE, "");
        } else {
            return mt_seterr(MT_ERR_INVALID, "option --%s needs a value", d->name);
        }
        if (rc != MT_OK) return rc;
    }
    return MT_OK;
}

static mt_status parse(const app_opt *defs, int n_defs, int argc, char **argv, bool allow_args,
                       app_opts **out) {
    *out = NULL;
    mt_status rc = MT_ERR_NOMEM;
    app_opts *o = mt_try_calloc(1, sizeof *o);
    if (o == NULL) return mt_seterr(rc, "options: out of memory");
    o->defs = defs;
    o->n_defs = n_defs;
    o->vals = mt_try_calloc((size_t)(n_defs > 0 ? n_defs : 1), sizeof *o->vals);
    if (o->vals == NULL) {
        mt_seterr(rc, "options: out of memory");
        goto fail;
    }
    for (int i = 0; i < n_defs; i++) {
        MT_ASSERT(find_opt(o, defs[i].name, strlen(defs[i].name)) == i); /* unique names */
        MT_ASSERT(defs[i].alias == 0 || find_alias(o, defs[i].alias) == i); /* and aliases */
        rc = set_from_words(o, i, defs[i].def, APP_SRC_DEFAULT);
        if (rc != MT_OK) goto fail;
    }
    rc = parse_argv(o, argc, argv, allow_args);
    if (rc != MT_OK) goto fail;
    int c = find_opt(o, "config", 6);
    if (c >= 0 && !o->help) {
        for (int k = 0; k < o->vals[c].n; k++) {
            rc = app_opts_merge_file(o, o->vals[c].v[k], false);
            if (rc != MT_OK) goto fail;
        }
    }
    *out = o;
    return MT_OK;
fail:
    app_opts_free(o);
    return rc;
}

mt_status app_opts_parse(const app_opt *defs, int n_defs, int argc, char **argv, app_opts **out) {
    return parse(defs, n_defs, argc, argv, false, out);
}

mt_status app_cmd_parse(const app_cmd *cmd, int argc, char **argv, app_opts **out) {
    app_opts *o = NULL;
    mt_status rc = parse(cmd->opts, cmd->n_opts, argc, argv, cmd->max_args != 0, &o);
    if (rc != MT_OK) {
        *out = NULL;
        return rc;
    }
    if (!o->help && o->n_args < cmd->min_args) {
        rc = mt_seterr(MT_ERR_INVALID, "missing %s", cmd->args ? cmd->args : "arguments");
    } else if (!o->help && cmd->max_args >= 0 && o->n_args > cmd->max_args) {
        rc = mt_seterr(MT_ERR_INVALID, "too many arguments ('%s'; expected %s)",
                       o->args[cmd->max_args], cmd->args ? cmd->args : "none");
    }
    if (rc != MT_OK) {
        app_opts_free(o);
        o = NULL;
    }
    *out = o;
    return rc;
}

int app_opts_nargs(const app_opts *o) { return o->n_args; }

const char *app_opts_arg(const app_opts *o, int i) {
    MT_ASSERT(i >= 0 && i < o->n_args);
    return o->args[i];
}

/* ------------------------------------------------------------- config */

mt_status app_opts_merge_yaml(app_opts *o, const char *yaml_text, const char *name, bool lenient) {
    mt_yaml *y = NULL;
    const char **items = NULL;
    char where[300];
    snprintf(where, sizeof where, " in config file %s", name);
    mt_status rc = mt_yaml_parse(yaml_text, &y);
    if (rc != MT_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", mt_errmsg());
        return mt_seterr(rc, "config file %s: %s", name, msg);
    }
    for (int k = 0; k < mt_yaml_count(y); k++) {
        const char *key = mt_yaml_key(y, k);
        if (!strcmp(key, "config")) continue; /* no nested config files */
        int idx = find_opt(o, key, strlen(key));
        if (idx < 0) {
            if (lenient) continue;
            rc = mt_seterr(MT_ERR_INVALID, "unknown option '%s' in config file %s", key, name);
            goto done;
        }
        if (o->vals[idx].src == APP_SRC_CMDLINE) continue;
        int n = mt_yaml_seq_len(y, key);
        const char *scalar = mt_yaml_get(y, key);
        if (n < 0 && scalar == NULL) {
            if (lenient) continue;
            rc =
                mt_seterr(MT_ERR_INVALID,
                          "option '%s' in config file %s is neither a value nor a list", key, name);
            goto done;
        }
        mt_free(items);
        items = NULL;
        if (n < 0) {
            rc = set_values(o, idx, 1, &scalar, APP_SRC_CONFIG, where);
        } else {
            items = mt_try_calloc((size_t)n + 1, sizeof *items);
            if (items == NULL) {
                rc = mt_seterr(MT_ERR_NOMEM, "options: out of memory");
                goto done;
            }
            for (int j = 0; j < n; j++)
                items[j] = mt_yaml_seq_item(y, key, j);
            rc = set_values(o, idx, n, items, APP_SRC_CONFIG, where);
        }
        if (rc != MT_OK) {
            if (rc == MT_ERR_INVALID && lenient) {
                mt_log(MT_LOG_WARN, "ignoring '%s' in %s: %s", key, name, mt_errmsg());
                rc = MT_OK;
                continue;
            }
            goto done;
        }
    }
    rc = MT_OK;
done:
    mt_free(items);
    mt_yaml_free(y);
    return rc;
}

static mt_status read_text(const char *path, char **out) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return mt_seterr(MT_ERR_IO, "cannot open config file %s: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = mt_try_malloc(cap);
    mt_status rc = MT_ERR_NOMEM;
    if (buf == NULL) goto fail;
    for (;;) {
        if (n + 1 >= cap) {
            char *nb = mt_try_realloc(buf, cap * 2);
            if (nb == NULL) goto fail;
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        rc = mt_seterr(MT_ERR_IO, "cannot read config file %s", path);
        goto fail_msg;
    }
    const char *nul = memchr(buf, '\0', n);
    if (nul != NULL) {
        rc = mt_seterr(MT_ERR_FORMAT, "config file %s: NUL byte at offset %zu (not a text file)",
                       path, (size_t)(nul - buf));
        goto fail_msg;
    }
    buf[n] = '\0';
    fclose(f);
    *out = buf;
    return MT_OK;
fail:
    mt_seterr(rc, "out of memory reading %s", path);
fail_msg:
    mt_free(buf);
    fclose(f);
    return rc;
}

mt_status app_opts_merge_file(app_opts *o, const char *path, bool lenient) {
    char *text = NULL;
    mt_status rc = read_text(path, &text);
    if (rc != MT_OK) return rc;
    rc = app_opts_merge_yaml(o, text, path, lenient);
    mt_free(text);
    return rc;
}

/* -------------------------------------------------------------- access */

bool app_opts_help_wanted(const app_opts *o) { return o->help; }

static void log_errors_only(mt_log_level level, const char *msg, void *user) {
    (void)user;
    if (level >= MT_LOG_ERROR) fprintf(stderr, "%s\n", msg);
}

bool app_opts_parse_cmd(const app_cmd *cmd, int argc, char **argv, app_opts **out, int *ret) {
    app_opts *o = NULL;
    *out = NULL;
    mt_status rc = app_cmd_parse(cmd, argc, argv, &o);
    if (rc != MT_OK) {
        fprintf(stderr, "mtpe %s: %s%s%s%s\n", cmd->name, mt_errmsg(),
                rc == MT_ERR_INVALID ? " (mtpe " : "", rc == MT_ERR_INVALID ? cmd->name : "",
                rc == MT_ERR_INVALID ? " --help lists the options)" : "");
        *ret = rc == MT_ERR_INVALID ? 2 : 1;
        return false;
    }
    if (app_opts_help_wanted(o)) {
        app_cmd_print_help(cmd, stdout);
        app_opts_free(o);
        *ret = 0;
        return false;
    }
    int q = find_opt(o, "quiet", 5);
    if (q >= 0 && o->defs[q].kind == APP_OPT_FLAG && app_opts_flag(o, "quiet"))
        mt_log_set(log_errors_only, NULL);
    *out = o;
    return true;
}

int app_cmd_usage_error(const app_cmd *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "mtpe %s: ", cmd->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

app_opt_source app_opts_source(const app_opts *o, const char *name) {
    return o->vals[must_find(o, name)].src;
}

bool app_opts_given(const app_opts *o, const char *name) {
    return app_opts_source(o, name) != APP_SRC_DEFAULT;
}

int app_opts_count(const app_opts *o, const char *name) { return o->vals[must_find(o, name)].n; }

const char *app_opts_item(const app_opts *o, const char *name, int i) {
    const opt_val *v = &o->vals[must_find(o, name)];
    MT_ASSERT(i >= 0 && i < v->n);
    return v->v[i];
}

const char *app_opts_str(const app_opts *o, const char *name) {
    const opt_val *v = &o->vals[must_find(o, name)];
    return v->n > 0 ? v->v[0] : "";
}

static const char *typed(const app_opts *o, const char *name, int i, app_opt_kind want) {
    int idx = must_find(o, name);
    MT_ASSERT(item_kind(o->defs[idx].kind) == want);
    const opt_val *v = &o->vals[idx];
    MT_ASSERT(i >= 0 && i < v->n);
    return v->v[i];
}

bool app_opts_flag(const app_opts *o, const char *name) {
    bool b = false;
    app_parse_bool(typed(o, name, 0, APP_OPT_FLAG), &b);
    return b;
}

int64_t app_opts_int_item(const app_opts *o, const char *name, int i) {
    int64_t v = 0;
    parse_int(typed(o, name, i, APP_OPT_INT), &v);
    return v;
}

double app_opts_float_item(const app_opts *o, const char *name, int i) {
    double v = 0;
    parse_float(typed(o, name, i, APP_OPT_FLOAT), &v);
    return v;
}

app_freq app_opts_freq_item(const app_opts *o, const char *name, int i) {
    app_freq f = {0, 'u'};
    app_parse_freq(typed(o, name, i, APP_OPT_FREQ), &f);
    return f;
}

int64_t app_opts_int(const app_opts *o, const char *name) { return app_opts_int_item(o, name, 0); }
double app_opts_float(const app_opts *o, const char *name) {
    return app_opts_float_item(o, name, 0);
}
app_freq app_opts_freq(const app_opts *o, const char *name) {
    return app_opts_freq_item(o, name, 0);
}

mt_status app_opts_set(app_opts *o, const char *name, int n, const char *const *values,
                       app_opt_source src) {
    return set_values(o, must_find(o, name), n, values, src, "");
}

/* ---------------------------------------------------------------- help */

static const char *arg_label(app_opt_kind k) {
    switch (k) {
    case APP_OPT_FLAG: return "";
    case APP_OPT_INT: return " INT";
    case APP_OPT_FLOAT: return " FLOAT";
    case APP_OPT_STRING: return " ARG";
    case APP_OPT_FREQ: return " N[u|e|t]";
    case APP_OPT_INTS: return " INT...";
    case APP_OPT_FLOATS: return " FLOAT...";
    case APP_OPT_STRINGS: return " ARG...";
    case APP_OPT_FREQS: return " N[u|e|t]...";
    }
    return "";
}

enum { HELP_WIDTH = 79, HELP_HEAD_MAX = 34 };

/* Prints text from column col on, wrapped at HELP_WIDTH into lines that
** start at column indent; breaks at spaces, except inside "(...)" groups
** that start with "(default: ", "(bare: ", "(range: " or "(one of: ".
** Returns the column reached. */
static int put_wrapped(FILE *f, const char *text, int col, int indent) {
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        if (*p == '\0') break;
        const char *end = p;
        if (!strncmp(p, "(default: ", 10) || !strncmp(p, "(bare: ", 7) ||
            !strncmp(p, "(range: ", 8) || !strncmp(p, "(one of: ", 9)) {
            end = strchr(p, ')');
            end = end ? end + 1 : p + strlen(p);
        } else {
            end = p + strcspn(p, " ");
        }
        int n = (int)(end - p);
        if (col > indent && col + 1 + n > HELP_WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", n, p);
        col += n;
        p = end;
    }
    return col;
}

void app_opts_print_help(const app_opt *defs, int n_defs, FILE *f) {
    char head[128], more[512];
    int indent = 18; /* the text's column: after the widest head, at most HELP_HEAD_MAX */
    for (int i = 0; i < n_defs; i++) {
        int w = snprintf(head, sizeof head, "  -x, --%s%s", defs[i].name, arg_label(defs[i].kind));
        if (w + 2 > indent) indent = w + 2 > HELP_HEAD_MAX ? HELP_HEAD_MAX : w + 2;
    }
    for (int i = 0; i <= n_defs; i++) {
        const app_opt *d = i < n_defs ? &defs[i] : NULL;
        if (d == NULL) {
            snprintf(head, sizeof head, "  -h, --help");
        } else if (d->alias) {
            snprintf(head, sizeof head, "  -%c, --%s%s", d->alias, d->name, arg_label(d->kind));
        } else {
            snprintf(head, sizeof head, "      --%s%s", d->name, arg_label(d->kind));
        }
        int col = fprintf(f, "%s", head);
        if (col + 2 > indent) {
            fprintf(f, "\n%*s", indent, "");
        } else {
            fprintf(f, "%*s", indent - col, "");
        }
        col = put_wrapped(f, d ? (d->help ? d->help : "") : "print this list", indent, indent);
        more[0] = '\0';
        if (d == NULL) {
        } else if (d->kind == APP_OPT_FLAG) {
            bool on = false;
            if (d->def != NULL && app_parse_bool(d->def, &on) && on)
                snprintf(more, sizeof more, "(default: true)"); /* false goes without saying */
        } else if (d->def != NULL) {
            snprintf(more, sizeof more, "(default: %s)", d->def[0] ? d->def : "\"\"");
        }
        if (d && d->implicit != NULL && d->kind != APP_OPT_FLAG) {
            size_t k = strlen(more);
            snprintf(more + k, sizeof more - k, "%s(bare: %s)", k ? " " : "",
                     d->implicit[0] ? d->implicit : "\"\"");
        }
        if (d && d->range != NULL && d->kind != APP_OPT_FLAG) {
            char rt[256];
            size_t k = strlen(more);
            range_text(d, rt, sizeof rt);
            if (item_kind(d->kind) == APP_OPT_STRING)
                snprintf(more + k, sizeof more - k, "%s(one of: %s)", k ? " " : "", rt + 7);
            else
                snprintf(more + k, sizeof more - k, "%s(range: %s)", k ? " " : "", rt);
        }
        put_wrapped(f, more, col, indent);
        fputc('\n', f);
    }
}

void app_cmd_print_help(const app_cmd *cmd, FILE *f) {
    if (cmd->usage == NULL) {
        fprintf(f, "usage: mtpe %s [options]%s%s\n", cmd->name, cmd->args ? " " : "",
                cmd->args ? cmd->args : "");
    } else {
        const char *u = cmd->usage;
        for (int k = 0; *u; k++) {
            size_t n = strcspn(u, "\n");
            if (*u == ' ') { /* the previous form continued */
                size_t sp = strspn(u, " ");
                fprintf(f, "%*s%.*s\n", 13 + (int)strlen(cmd->name), "", (int)(n - sp), u + sp);
            } else {
                fprintf(f, "%s mtpe %s %.*s\n", k ? "      " : "usage:", cmd->name, (int)n, u);
            }
            u += n + (u[n] == '\n');
        }
    }
    if (cmd->about) fprintf(f, "\n%s", cmd->about);
    fprintf(f, "\noptions:\n");
    app_opts_print_help(cmd->opts, cmd->n_opts, f);
}

/* --------------------------------------------------------- subcommands */

void app_subcmds_print(const app_subcmd *subs, int n, FILE *f) {
    for (int i = 0; i < n; i++)
        fprintf(f, "  %-10s %s\n", subs[i].name, subs[i].summary);
}

int app_subcmd_main(const char *cmd, const char *about, const app_subcmd *subs, int n, int argc,
                    char **argv) {
    const char *sub = argc >= 2 ? argv[1] : NULL;
    if (sub != NULL && (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help"))) {
        printf("usage: mtpe %s SUBCOMMAND [options]\n\n%s%ssubcommands:\n", cmd, about ? about : "",
               about ? "\n" : "");
        app_subcmds_print(subs, n, stdout);
        printf("\nmtpe %s SUBCOMMAND --help: its options.\n", cmd);
        return 0;
    }
    for (int i = 0; sub != NULL && i < n; i++)
        if (!strcmp(sub, subs[i].name)) return subs[i].run(argc - 1, argv + 1);
    if (sub == NULL)
        fprintf(stderr, "mtpe %s: missing subcommand (mtpe %s --help lists them)\n", cmd, cmd);
    else
        fprintf(stderr, "mtpe %s: unknown subcommand '%s' (mtpe %s --help lists them)\n", cmd, sub,
                cmd);
    return 2;
}

/* ---------------------------------------------------------------- YAML */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool failed;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->failed) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *np = mt_try_realloc(b->p, cap);
        if (np == NULL) {
            b->failed = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_quoted(sbuf *b, const char *s) {
    sb_str(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            sb_put(b, esc, 2);
        } else if (c < 0x20 || c == 0x7f) {
            snprintf(esc, sizeof esc, "\\x%02x", c);
            sb_str(b, esc);
        } else {
            sb_put(b, (const char *)&c, 1);
        }
    }
    sb_str(b, "\"");
}

static void sb_value(sbuf *b, app_opt_kind k, const char *v) {
    bool flag = false;
    switch (item_kind(k)) {
    case APP_OPT_STRING: sb_quoted(b, v); break;
    case APP_OPT_FLAG:
        app_parse_bool(v, &flag);
        sb_str(b, flag ? "true" : "false");
        break;
    default: sb_str(b, v); break;
    }
}

char *app_opts_to_yaml(const app_opts *o, const char *const *skip) {
    sbuf b = {0};
    for (int i = 0; i < o->n_defs; i++) {
        const app_opt *d = &o->defs[i];
        bool skipped = false;
        for (int k = 0; skip && skip[k]; k++)
            if (!strcmp(skip[k], d->name)) skipped = true;
        if (skipped) continue;
        const opt_val *v = &o->vals[i];
        sb_str(&b, d->name);
        sb_str(&b, ":");
        if (!is_list(d->kind)) {
            sb_str(&b, " ");
            sb_value(&b, d->kind, v->n ? v->v[0] : "");
        } else if (v->n == 0) {
            sb_str(&b, "\n  []");
        } else {
            for (int j = 0; j < v->n; j++) {
                sb_str(&b, "\n  - ");
                sb_value(&b, d->kind, v->v[j]);
            }
        }
        sb_str(&b, "\n");
    }
    if (b.p == NULL && !b.failed) sb_str(&b, "");
    if (b.failed) {
        mt_free(b.p);
        return NULL;
    }
    return b.p;
}
