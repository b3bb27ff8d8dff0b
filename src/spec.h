/* spec.h: the generalized einsum spec language (tdsl(7), EINSUM
 * SPECS). Spec strings are parsed at compile time by their own
 * re2c lexer and Bison grammar (grammar/spec.re, grammar/spec.y).
 *
 *   spec   := slot ("=>" slot)            unary:  rhs => lhs
 *           | slot ";" slot "=>" slot     binary: rhs1; rhs2 => lhs
 *           | slot ";" slot ";" slot "=>" slot   ternary (where, fma, op with 3 arguments)
 *           | slot                        a bare shape (used by ~logic on %cd, record dims)
 *   slot   := [batch "|"] [input "->"] output
 *   row    := axis* [rowvar axis*]        axes before a row variable are the leftmost
 *   rowvar := "..." | ".." ident ".."
 *   axis   := ident | int | "_" | affine
 *   affine := [coef "*"] ident conv [coef "*"] ident    2*oh<+wh, o=+k, s*o+d*k
 *           | [coef "*"] ident conv int                 o+1: a constant offset
 *           | coef "*" ident                            2*o: strided iteration
 *   conv   := "=+" (padded) | "<+" (valid) | "+" (use_padding from the scope)
 *   coef   := int | ident                               identifiers resolved by staging
 *
 * Single-character mode (no ',' anywhere in the spec): every letter is an axis, a run of
 * digits is one fixed index ("i0j" is i, 0, j; "k12" is k, 12), spaces are ignored, and
 * affine axes are built from single letters ("is*a+d*bc" is i, s*a+d*b, c). Row variable
 * names between ".." may be longer than one letter in both modes.
 * Multi-character mode: axes are identifiers separated by ',' or spaces; a trailing ','
 * in a row is allowed.
 * Note: the result ("lhs") is on the right of "=>". */
#ifndef TDSL_SPEC_H
#define TDSL_SPEC_H

#include <stdio.h>

#include "base.h"
#include "tdsl_abi.h" /* KIND_*: spec_slot_row */

typedef enum SpecAxisKind {
  AX_VAR,         /* a named axis variable: name */
  AX_FIXED,       /* an integer index: fixed */
  AX_PLACEHOLDER, /* _ */
  AX_AFFINE,      /* stride*name conv dilation*kernel, e.g. 2*oh<+wh */
} SpecAxisKind;

typedef enum ConvMode {
  CONV_NONE,   /* not a convolution axis */
  CONV_PADDED, /* =+  input size = stride * output size */
  CONV_VALID,  /* <+  input = stride*(output-1) + dilation*(kernel-1) + 1 */
  CONV_SCOPE,  /* +   use_padding taken from the staging scope */
} ConvMode;

/* A coefficient: a literal integer, or an identifier bound at compile time. */
typedef struct SpecCoef {
  int value;         /* when ident == NULL */
  const char *ident; /* stride/dilation identifier, resolved by staging */
} SpecCoef;

typedef struct SpecAxis {
  SpecAxisKind kind;
  int col;           /* 0-based byte offset of the axis in the spec string */
  int len;           /* its length in bytes (for caret spans) */
  const char *name;  /* AX_VAR; AX_AFFINE: the output (iterated) variable */
  int fixed;         /* AX_FIXED */
  /* AX_AFFINE: index = stride*name + dilation*kernel (+ offset) */
  SpecCoef stride, dilation;
  const char *kernel; /* kernel variable name; NULL for `2*o` (conv == CONV_NONE,
                         dilation 0) and for `o+1` (offset 1, dilation 0) */
  int offset;         /* the constant of `o+1`; 0 otherwise */
  ConvMode conv;
} SpecAxis;

typedef struct SpecRow {
  PtrVec left;        /* SpecAxis*: the leftmost axes (all axes when no row variable) */
  const char *rowvar; /* NULL: the row has exactly the listed axes. `...` is named
                         "batch", "input" or "output" after its row kind; ..v.. is "v" */
  PtrVec right;       /* SpecAxis*: axes after the row variable (the rightmost) */
  int col;
} SpecRow;

typedef struct SpecSlot {
  SpecRow batch, input, output; /* an omitted row is empty with no row variable */
  bool has_batch, has_input;    /* whether "|" / "->" was written */
  int col;
} SpecSlot;

typedef struct Spec {
  const char *text;
  int nargs;        /* 0 (bare slot), 1, 2 or 3 (a ternary primitive: where, fma) */
  SpecSlot *args[3];
  SpecSlot *result; /* for nargs == 0 the bare slot */
  bool multichar;
} Spec;

/* Parses text. On error returns NULL, sets *err_col (0-based offset into text) and
 * *err_msg (arena-allocated, e.g. "unexpected character '$'"). */
Spec *spec_parse(Arena *a, const char *text, int *err_col, const char **err_msg);
/* Whether text is read in multi-character mode (tdsl(7), EINSUM SPECS). */
bool spec_is_multichar(const char *text);
/* Canonical rendering, used by tests and dumps: single-character specs print in
 * single-character form ("ab|c->d; d => ab"), multi-character ones with ", " between
 * axes and " | ", " -> " between rows. The rendering parses back to the same Spec. */
void spec_print(FILE *out, const Spec *s);
/* One slot, in the form spec_print uses for a spec of that mode. */
void spec_print_slot(FILE *out, const SpecSlot *slot, bool multichar);

/* The row of kind KIND_BATCH, KIND_OUTPUT or KIND_INPUT (graph.h) of a slot. */
SpecRow *spec_slot_row(SpecSlot *slot, int kind);
int spec_row_len(const SpecRow *r); /* axes listed, not counting the row variable */

/* Where column col (0-based, as err_col of spec_parse or SpecAxis.col) of a spec lies
 * in the source, given the location of the string literal's opening quote: escapes
 * (\n, \", \x41, ...) and line breaks inside the literal are accounted for. Without a
 * source file (loc.file == NULL) the column is offset on the quote's line. */
Loc spec_error_loc(Loc string_loc, int col);

#endif
