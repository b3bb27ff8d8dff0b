/* spec.h: the generalized einsum spec language (LANGUAGE.md section 7, seed
 * syntax-extensions.txt). Spec strings are parsed at compile time by their own
 * re2c lexer and Bison grammar (grammar/spec.re, grammar/spec.y).
 *
 *   spec   := slot ("=>" slot)            unary:  rhs => lhs
 *           | slot ";" slot "=>" slot     binary: rhs1; rhs2 => lhs
 *           | slot                        a bare shape (used by ~logic on %cd, record dims)
 *   slot   := [batch "|"] [input "->"] output
 *   row    := axis* [rowvar axis*]        axes before a row variable are the leftmost
 *
 * Single-character mode (no ',' anywhere in the spec): every character of a row is an
 * axis. Multi-character mode: axes are identifiers separated by ',' or spaces.
 * Note: the result ("lhs") is on the right of "=>". */
#ifndef TDSL_SPEC_H
#define TDSL_SPEC_H

#include <stdio.h>

#include "base.h"

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
  const char *name;  /* AX_VAR; AX_AFFINE: the output (iterated) variable */
  int fixed;         /* AX_FIXED */
  /* AX_AFFINE */
  SpecCoef stride, dilation;
  const char *kernel; /* kernel variable name */
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
  int nargs;        /* 0 (bare slot), 1 or 2 */
  SpecSlot *args[2];
  SpecSlot *result; /* for nargs == 0 the bare slot */
  bool multichar;
} Spec;

/* Parses text. On error returns NULL, sets *err_col (0-based offset into text) and
 * *err_msg (arena-allocated, e.g. "unexpected character '$'"). */
Spec *spec_parse(Arena *a, const char *text, int *err_col, const char **err_msg);
/* Canonical rendering (multi-character form), used by tests and dumps. */
void spec_print(FILE *out, const Spec *s);

#endif
