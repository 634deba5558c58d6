/*
** options.h: Marian-style command-line options, shared by the commands.
**
** A command describes its options in a static table of app_opt and parses
** argv against it.  Conventions (Marian's, reference/marian-compat.md §9):
**
**   --name value            one value; `--name=value` works too
**   --name v1 v2 ...        list options take every following argument that
**                           is not an option ("-" and negative numbers are
**                           values)
**   -x value                short alias of a long option
**   --flag                  booleans: bare, or followed by true|false|on|
**                           off|yes|no|1|0
**   --name                  an option with an implicit value may be given
**                           bare (--exponential-smoothing alone = 1e-4)
**   500u 2e 10000t          frequencies: updates (default unit), epochs,
**                           target labels
**   -c a.yml [b.yml]        YAML config files: keys are the long names,
**                           lists are YAML sequences.  Priority: defaults <
**                           config files (later ones win) < command line.
**                           An unknown key is an error naming the file.
**   --help, -h              sets app_opts_help_wanted(); nothing else runs
**
** Values are validated while parsing (an integer option holds an integer,
** a frequency a number with a known unit, a flag a boolean), so the typed
** getters cannot fail; asking for a name that is not in the table, or with
** the wrong type, is a programmer error (MT_ASSERT).
**
** Errors: MT_ERR_INVALID for usage errors (unknown option, missing or bad
** value; mt_errmsg() names the option), MT_ERR_IO for an unreadable config
** file, MT_ERR_FORMAT for a config file that is not YAML, MT_ERR_NOMEM.
*/
#ifndef APP_OPTIONS_H
#define APP_OPTIONS_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mt.h"

typedef enum app_opt_kind {
    APP_OPT_FLAG = 0, /* boolean                                               */
    APP_OPT_INT,      /* 64-bit integer                                         */
    APP_OPT_FLOAT,    /* double                                                  */
    APP_OPT_STRING,   /* any text, "" included                                   */
    APP_OPT_FREQ,     /* non-negative integer with unit u|e|t (none = u)         */
    APP_OPT_INTS,     /* lists of the above                                      */
    APP_OPT_FLOATS,
    APP_OPT_STRINGS,
    APP_OPT_FREQS,
} app_opt_kind;

typedef struct app_opt {
    const char *name; /* long name without "--"                               */
    char alias;       /* short name (-m) or 0                                  */
    app_opt_kind kind;
    const char *def;      /* default as text (lists: values separated by spaces);
                             NULL: no default ("" for strings, empty lists, 0)     */
    const char *implicit; /* value of a bare --name; NULL: a value is required
                             (flags always have "true")                          */
    const char *help;
} app_opt;

/* Where the current value of an option came from. */
typedef enum app_opt_source { APP_SRC_DEFAULT = 0, APP_SRC_CONFIG, APP_SRC_CMDLINE } app_opt_source;

typedef struct app_freq {
    int64_t n;
    char unit; /* 'u' updates, 'e' epochs, 't' target labels */
} app_freq;

typedef struct app_opts app_opts;

/* Parses argv[1..argc) (argv[0] is the command name) against defs[0..n_defs).
** Config files named by an option called "config" (-c) are merged under the
** command line.  On success *out owns the result (free with app_opts_free). */
mt_status app_opts_parse(const app_opt *defs, int n_defs, int argc, char **argv, app_opts **out);
void app_opts_free(app_opts *o); /* NULL is a no-op */

/* Merges a YAML config under the values given on the command line: keys
** whose option has a value from the command line are ignored, others are
** replaced.  name is used in messages.  lenient: unknown keys and keys whose
** value has another shape are skipped (for model.npz.yml written by another
** version); otherwise they are MT_ERR_INVALID naming the key and name. */
mt_status app_opts_merge_yaml(app_opts *o, const char *yaml_text, const char *name, bool lenient);
/* Reads path and merges it as above (MT_ERR_IO naming path if unreadable). */
mt_status app_opts_merge_file(app_opts *o, const char *path, bool lenient);

bool app_opts_help_wanted(const app_opts *o);
/* Prints "  -m, --model ARG   help (default: x)" lines for every option. */
void app_opts_print_help(const app_opt *defs, int n_defs, FILE *f);

/* The start of a subcommand's main (`mtpe score`, `mtpe translate`): parses
** argv as app_opts_parse.  Returns true with *out owning the options when the
** command should run; with --quiet, from then on only errors are logged (to
** stderr).  Returns false with the exit code in *ret otherwise: 2 after a
** usage error ("mtpe CMD: message", an empty line and help(stderr) on stderr),
** 0 after --help (help(stdout)). */
bool app_opts_parse_cmd(const char *cmd, const app_opt *defs, int n_defs, int argc, char **argv,
                        void (*help)(FILE *f), app_opts **out, int *ret);

/* Value access.  Scalars: the value (lists: the first item); lists: count
** and items.  Strings live as long as o or until the option is set again. */
app_opt_source app_opts_source(const app_opts *o, const char *name);
bool app_opts_given(const app_opts *o, const char *name); /* source != default */
int app_opts_count(const app_opts *o, const char *name);
const char *app_opts_str(const app_opts *o, const char *name); /* "" when empty */
const char *app_opts_item(const app_opts *o, const char *name, int i);
bool app_opts_flag(const app_opts *o, const char *name);
int64_t app_opts_int(const app_opts *o, const char *name);
double app_opts_float(const app_opts *o, const char *name);
app_freq app_opts_freq(const app_opts *o, const char *name);
int64_t app_opts_int_item(const app_opts *o, const char *name, int i);
double app_opts_float_item(const app_opts *o, const char *name, int i);
app_freq app_opts_freq_item(const app_opts *o, const char *name, int i);

/* Replaces the value(s) of an option (validated as when parsing; source
** becomes src).  MT_ERR_INVALID for a bad value. */
mt_status app_opts_set(app_opts *o, const char *name, int n, const char *const *values,
                       app_opt_source src);

/* Parsers used for values (exported for other commands' positional args). */
bool app_parse_bool(const char *s, bool *out);
bool app_parse_freq(const char *s, app_freq *out);

/* The options as a YAML document, one key per option in table order (lists
** as sequences, strings double-quoted): Marian's model.npz.yml.  Options
** named in skip (NULL-terminated, may be NULL) are left out.  Caller
** mt_free()s the text; NULL when out of memory. */
char *app_opts_to_yaml(const app_opts *o, const char *const *skip);

#endif /* APP_OPTIONS_H */
