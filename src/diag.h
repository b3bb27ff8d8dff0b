/* diag.h: GCC-style diagnostics (tdslc(1), DIAGNOSTICS: a fixed format):
 *   FILE:LINE:COL: error: MESSAGE
 *      LINE | source text
 *           |     ^
 * followed by optional `note:` lines in the same form. */
#ifndef TDSL_DIAG_H
#define TDSL_DIAG_H

#include <stdio.h>

#include "base.h"

typedef struct Diag {
  FILE *out;        /* stderr unless a test redirects it; NULL: only count errors */
  int errors;       /* errors reported so far */
  int max_errors;   /* stop printing after this many (0 = default 20) */
  bool suppressed;  /* the "too many errors" line has been printed */
} Diag;

void diag_init(Diag *d, FILE *out);
/* Report an error at loc. A loc with no file prints as "tdslc: error: ...". */
void diag_error(Diag *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A note attached to the last error (printed only if that error was printed). */
void diag_note(Diag *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An error whose caret spans [loc, loc+width) (width >= 1). */
void diag_error_span(Diag *d, Loc loc, int width, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* For "unexpected character" messages: the UTF-8 character at s[0..n) (n > 0) named
 * so that the user can tell what it is, with its code point ("'é' (U+00E9)"; an
 * invisible one by code point and kind only), and *hint what to write instead when it
 * is a lookalike of ASCII that tdsl uses (a no-break space, curly quotes, a Unicode
 * minus or arrow, ...; "" otherwise). *len: the bytes it takes (1 for a byte that is
 * not UTF-8, named \xNN). */
const char *diag_char_desc(Arena *a, const unsigned char *s, size_t n, int *len, const char **hint);
bool diag_full(const Diag *d); /* max_errors reached: callers may stop early */
/* Edit distance (insertions, deletions, substitutions, transpositions of neighbours:
 * "stpe" is one from "step"), or cap + 1 when it exceeds cap: for "did you mean". */
int diag_edit_distance(Arena *a, const char *x, const char *y, int cap);
/* Whether candidate is near enough to name to suggest (Python's rule: a sixth of both
 * lengths plus 3) and nearer than *best_d; updates *best_d then. */
bool diag_near(Arena *a, const char *name, const char *candidate, int *best_d);
/* "tdslc: error: MESSAGE" on stderr, for errors that have no source location (the
 * command line, files): control characters and invalid UTF-8 in the message (a name or
 * a path the user gave) are escaped as in a located diagnostic's message (\n, \t, \xNN). */
void diag_tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
