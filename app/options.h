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
**   -dov                    short flags combine (-d -o -v)
**   FILE ...                positional arguments, for commands that declare
**                           them (app_cmd); "--" ends the options: all
**                           that follows is positional (a command without
**                           them accepts a bare "--" at the end; anything
**                           after it is a usage error)
**   --help, -h              sets app_opts_help_wanted(); nothing else runs
**
** Values are validated while parsing (an integer option holds an integer
** that fits in 64 bits, a frequency a number with a known unit, a flag a
** boolean, and every value lies in the option's range), so the typed
** getters cannot fail; asking for a name that is not in the table, or with
** the wrong type, is a programmer error (MT_ASSERT).
**
** Errors: MT_ERR_INVALID for usage errors (unknown option, missing or bad
** value, wrong number of positional arguments; mt_errmsg() names the
** option), MT_ERR_IO for an unreadable config file, MT_ERR_FORMAT for a
** config file that is not YAML or holds a NUL byte, MT_ERR_NOMEM.
**
** Commands (app_cmd) describe their options, positional arguments and
** purpose in one place; --help is generated from it in one layout for all:
**
**   usage: mtpe NAME USAGE          (one line per form)
**
**   ABOUT
**
**   options:
**     -m, --models ARG...  help (default: x)
**
** Exit codes of a command: 0 ok, 1 failure, 2 usage error, reported as one
** line "mtpe NAME: message" on stderr.
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
    const char *range; /* allowed values, checked wherever a value is set (command
                          line, config files, app_opts_set); NULL: any of the kind.
                          Numbers (INT, FLOAT, FREQ and their lists, each item):
                          "LO..HI" with either end left out ("1..", "..10"),
                          inclusive; "(LO.." excludes LO, "..HI)" HI.  Strings: "a|b|c", the
                          allowed values.  Shown in --help; a value outside is a
                          usage error "--name: VALUE is out of range (1..64)". */
} app_opt;

/* Where the current value of an option came from. */
typedef enum app_opt_source { APP_SRC_DEFAULT = 0, APP_SRC_CONFIG, APP_SRC_CMDLINE } app_opt_source;

typedef struct app_freq {
    int64_t n;
    char unit; /* 'u' updates, 'e' epochs, 't' target labels */
} app_freq;

typedef struct app_opts app_opts;

/* A command (`mtpe translate`, `mtpe corpus build`): everything its
** parsing and its --help need. */
typedef struct app_cmd {
    const char *name;  /* "translate", "corpus build": after "mtpe " in help and messages */
    const char *usage; /* what follows "mtpe NAME " on the usage line; several forms
                          separated by '\n' (a line starting with ' ' continues the
                          previous form).  NULL: "[options]", then args             */
    const char *about; /* what the command does: lines, each ending in '\n'; or NULL */
    const app_opt *opts;
    int n_opts;
    const char *args;       /* positional arguments as the usage line names them
                               ("FILE", "MODEL [OUT]", "FILES..."); NULL: none   */
    int min_args, max_args; /* how many are accepted; max_args < 0: no limit      */
} app_cmd;

/* Parses argv[1..argc) (argv[0] is the command name) against defs[0..n_defs).
** Config files named by an option called "config" (-c) are merged under the
** command line.  On success *out owns the result (free with app_opts_free).
** Positional arguments are a usage error. */
mt_status app_opts_parse(const app_opt *defs, int n_defs, int argc, char **argv, app_opts **out);
/* The same for a command: positional arguments are collected in order
** (app_opts_nargs, app_opts_arg), their number checked against
** cmd->min_args..max_args unless --help was given. */
mt_status app_cmd_parse(const app_cmd *cmd, int argc, char **argv, app_opts **out);
void app_opts_free(app_opts *o); /* NULL is a no-op */

/* Positional arguments, in command-line order. */
int app_opts_nargs(const app_opts *o);
const char *app_opts_arg(const app_opts *o, int i);

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
/* Prints a command's --help (layout above). */
void app_cmd_print_help(const app_cmd *cmd, FILE *f);

/* The start of a command's main: parses argv as app_cmd_parse.  Returns
** true with *out owning the options when the command should run; with a
** --quiet flag given, from then on only errors are logged (to stderr).
** Returns false with the exit code in *ret otherwise: 0 after --help (the
** help on stdout); 2 after a usage error, 1 after another failure (an
** unreadable config file), each with one line "mtpe NAME: message" on
** stderr. */
bool app_opts_parse_cmd(const app_cmd *cmd, int argc, char **argv, app_opts **out, int *ret);
/* Prints "mtpe NAME: message" (printf-style) as one line on stderr and
** returns 2, the exit code of a usage error. */
int app_cmd_usage_error(const app_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Commands with subcommands (`mtpe corpus build`, `mtpe bench gemm`) and
** mtpe itself: name, entry point (argv[0] is the subcommand's name), one
** line of help. */
typedef struct app_subcmd {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} app_subcmd;
/* "  name       summary" lines, one per subcommand. */
void app_subcmds_print(const app_subcmd *subs, int n, FILE *f);
/* The main of a command made of subcommands: argv[1] names one, which runs
** with argv + 1.  "mtpe CMD", an unknown name: usage error (one line);
** "mtpe CMD --help" (-h, help): usage, about, the list of subcommands. */
int app_subcmd_main(const char *cmd, const char *about, const app_subcmd *subs, int n, int argc,
                    char **argv);

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
