/*
** anatomy.h: what of a segment the MT translates and what is carried over
** verbatim (issue 29, "segment anatomy").  Used by `mtpe translate --format`
** and by the editor's translations alike, so both give the same drafts.
**
** A source string is split into parts, in order:
**
**   verbatim   leading and trailing spaces, tabs and line breaks of every
**              line; gaps of two or more blanks inside a line (aligned
**              columns of option lists); lines or column cells with no
**              letter outside placeholders ("%s", "-f, --force", "42",
**              "%d%%"); these are copied into the translation as they are
**   piece      the rest: one piece per line, or per paragraph when lines
**              of the same indentation continue a sentence (a wrapped
**              licence or help text): the paragraph is translated as one
**              piece and its translation wrapped again to the width and
**              indentation of the source lines
**
** Placeholders (app_ph_match) are kept in the MT input: the engine was
** trained on software strings and mostly copies them.  app_anat_accepts()
** tells whether a translation of a piece has exactly the source's
** placeholders (printf directives without argument numbers also in the
** same order) and is not junk (no letter while the source has some), so the
** caller picks the first acceptable entry of an n-best list.  When none is
** acceptable app_anat_assemble() repairs the best one: placeholders the
** source lacks are removed (with fragments such as a lone '%'), the missing
** ones are inserted at the word boundary nearest to their relative position
** in the source.
**
** XLIFF inline tags (⟦N⟧ ⟦/N⟧ ⟦N/⟧, app/formats/doc.h) are left out of the MT
** input (doubled brackets undoubled) and put back into the translation in
** the source's order, each near its relative position, so paired tags
** stay properly nested.
**
** Accelerators: one '_' or '&' that starts a word and is followed by a
** letter (GTK "_Open", Qt "&Open") is removed from the MT input (the
** training data has none) and put back before the same letter when the
** translation has a word starting with it, else before its first letter.
*/
#ifndef APP_ANATOMY_H
#define APP_ANATOMY_H
#include <stdbool.h>
#include <stddef.h>

#include "mt.h"

typedef enum app_ph_kind {
    APP_PH_PRINTF = 1, /* %s %1$d %-10.3lf %% %'d %zu                    */
    APP_PH_PYTHON,     /* %(name)s %(count)5d                            */
    APP_PH_BRACE,      /* {0} {name} {} {0:.2f}                          */
    APP_PH_TAG,        /* <b> </b> <br/> <a href="x">                    */
    APP_PH_ENTITY,     /* &amp; &#169; &#x1F;                            */
    APP_PH_OPTION,     /* --force --color[=WHEN] -f (after a blank/start)*/
    APP_PH_VAR,        /* $HOME ${name} $1                               */
    APP_PH_URL,        /* http://..., https://..., ftp://..., mailto:... */
    APP_PH_KDE,        /* %1 %12 (KDE, Qt: numbered arguments)           */
    APP_PH_XLIFF,      /* ⟦1⟧ ⟦/1⟧ ⟦2/⟧: XLIFF inline tags (app/formats/doc.h)    */
} app_ph_kind;

/* Length of the placeholder that starts at s[at] (0: none) and its kind.
** s is the whole string (options and variables look at the character
** before at).  A '%' that starts no valid directive matches nothing. */
size_t app_ph_match(const char *s, size_t at, app_ph_kind *kind);

/* One placeholder occurrence. */
typedef struct app_ph {
    app_ph_kind kind;
    size_t at, len;
} app_ph;

/* All placeholders of s, left to right, non-overlapping.  *out (mt_free)
** is NULL when *n is 0.  MT_ERR_NOMEM. */
mt_status app_ph_scan(const char *s, app_ph **out, int *n);

typedef struct app_anatomy app_anatomy;

/* Splits source (UTF-8).  MT_ERR_NOMEM only. */
mt_status app_anat_parse(const char *source, app_anatomy **out);
void app_anat_free(app_anatomy *a); /* NULL is a no-op */

/* Pieces to translate (0: the whole source is copied) and their MT input. */
int app_anat_pieces(const app_anatomy *a);
const char *app_anat_piece(const app_anatomy *a, int i);

/* True when mt is an acceptable translation of piece i (see above). */
bool app_anat_accepts(const app_anatomy *a, int i, const char *mt);

/* The translation of the whole source from one translation per piece
** (mt[i] may be NULL or "": the piece is left out).  Repairs placeholders,
** wraps paragraphs, restores the accelerator.  *out: mt_free.  NOMEM. */
mt_status app_anat_assemble(const app_anatomy *a, const char *const *mt, char **out);

/* Verbatim text before piece i (i == pieces: after the last piece), e.g.
** for matching what a translator typed against the parts.  Paragraph
** pieces are followed by a line break only after wrapping. */
const char *app_anat_glue(const app_anatomy *a, int i);

#endif
