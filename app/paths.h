/*
** paths.h: where mtpe keeps its files by default.
**
**   store      $XDG_DATA_HOME/mtpe/mtpe.db, or ~/.local/share/mtpe/mtpe.db
**              when XDG_DATA_HOME is unset, empty or relative (the XDG Base
**              Directory spec says to ignore relative values); ~ is $HOME,
**              else the home directory of the user in the password file.
**   assets     $MTPE_ASSETS when set; else <dir of /proc/self/exe>/../share/
**              mtpe/assets (an installed binary); else <MT_SOURCE_DIR>/assets
**              (a binary run from the build tree it was built in).
**
** Commands that take --db use app_default_db_path() when it is not given
** (`mtpe corpus export`, `mtpe edit`).
*/
#ifndef APP_PATHS_H
#define APP_PATHS_H
#include <stdbool.h>

#include "mt.h"

/* The default store path, in *out (caller mt_free()s).  create_dir: make the
** directory (and missing parents, mode 0700) when it does not exist; a
** command that only reads the store passes false.  Errors: MT_ERR_NOTFOUND
** (no home directory to put it in), MT_ERR_IO (the directory cannot be
** made: the message names it), MT_ERR_NOMEM. */
mt_status app_default_db_path(bool create_dir, char **out);

typedef struct app_opts app_opts;
typedef struct store store;

/* The store path of a command: its --db when given (copied), else
** app_default_db_path(create_dir).  *out: caller mt_free()s. */
mt_status app_store_path(const app_opts *o, bool create_dir, char **out);

/* Opens the store of --db or the default one.  create false: a store that
** does not exist yet is MT_ERR_NOTFOUND "no store at PATH (HINT)"
** instead of being made. */
mt_status app_open_store(const app_opts *o, bool create, const char *hint, store **s);

/* The assets directory (absolute, symlinks resolved) in *out (caller
** mt_free()s).  MT_ERR_NOTFOUND when none of the places above is a
** directory (the message lists them), MT_ERR_NOMEM. */
mt_status app_default_assets_dir(char **out);

/* mkdir -p: makes path and its missing parents with the given mode.  MT_OK
** when path is (or already was) a directory; MT_ERR_IO naming the component
** that failed otherwise. */
mt_status app_make_dirs(const char *path, unsigned mode);

#endif
