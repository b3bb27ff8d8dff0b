/* ast.h: the syntax tree of a .tdsl file (tdsl(7)).
 * Produced by grammar/parser.y, printed by ast_print (tdslc --dump-ast),
 * consumed by the staging evaluator. Every node carries its source location: the
 * operator for E_BINOP/E_EINSUM/E_ASSIGN/E_UNOP, the field name for E_FIELD, the
 * function for E_APP, else the first token. */
#ifndef TDSL_AST_H
#define TDSL_AST_H

#include <stdio.h>

#include "base.h"

typedef struct Expr Expr;

typedef enum ExprKind {
  E_INT,         /* ival */
  E_FLOAT,       /* fval; text keeps the literal's spelling */
  E_STRING,      /* str (escapes decoded); loc is the opening quote */
  E_BOOL,        /* ival 0/1 */
  E_UNIT,        /* () */
  E_IDENT,       /* str = name */
  E_LABELED_NUM, /* 'q' 2.0: str = label, a = the number (E_INT/E_FLOAT) */
  E_APP,         /* a = function, args = arguments (Arg*) */
  E_BINOP,       /* str = operator text ("+", "*.", "@|", "<>", "mod", "&&", ...), a, b */
  E_EINSUM,      /* str = "+*", "+++", "@^+" (binary) or "++", "@^^" (unary);
                    a, b (NULL when unary), c = the spec (E_STRING or E_IDENT),
                    items = the capture list's elements (`"spec" ["i"; "j"]`), if any */
  E_UNOP,        /* str = "-", "-.", "~-", "!.", "!..", "!@"; a */
  E_FUN,         /* params (Param*), a = body */
  E_LET,         /* bindings (Binding*), a = body: let ... and ... in a */
  E_IF,          /* a = cond, b = then, c = else (may be NULL) */
  E_SEQ,         /* items = e1; e2; ... (at least two) */
  E_TUPLE,       /* items: (a, b, ...) (at least two) */
  E_LIST,        /* items: [ a; b; ... ] (possibly empty) */
  E_ARRAY,       /* items: [| a; b; ... |] */
  E_RECORD,      /* inline declaration { name [= a]; field = e; ... }: str = name,
                    a = init (NULL if none), fields (Field*) = the other fields */
  E_FIELD,       /* a.str: accessor (value, grad, forward, backprop, zero_grads, params, ...) */
  E_ASSIGN,      /* %cd assignment: a = lhs, str = operator ("=:+", "=+", "=:", ...),
                    b = rhs, args = trailing options (~logic:e, ~projections:e) */
  E_FOR,         /* for str in a do b done */
  E_COMMENT,     /* ~~(parts; body): items = comment parts, a = body */
  E_OPREF,       /* ( op ) used as a value: str = operator text */
  E_DYNDIM,      /* `?` in a shape: an anonymous dynamic dimension */
  E_NDLIT,       /* lit: a packed ndarray literal, one node for a bracket of numbers
                    (NdLit); means exactly the tree ndlit_expand gives */
} ExprKind;

/* A bracket of at least NDLIT_MIN_NUMBERS plain numbers (`[[0.1, 0.2, ...], ...]`, no
 * expressions, no comments, not ragged) is lexed as one token and parsed as one E_NDLIT
 * node: a literal of N numbers costs about 8N bytes instead of a token, an AST node and
 * a value per number (~1 KB each). The lexer packs only what the per-token path parses
 * without error into a rectangular literal (ast_ndlit.c), so that packing changes no
 * meaning; the source text is kept to rebuild that tree on demand. */
enum { NDLIT_MIN_NUMBERS = 16, NDLIT_MAX_AXES = 16 };
typedef enum NdAxis { ND_LIST, ND_TUPLE, ND_ARRAY } NdAxis;
typedef struct NdLit {
  int naxes;                     /* nesting levels above the numbers */
  NdAxis kind[NDLIT_MAX_AXES];   /* per level, outermost first: [ ], ( , ), [| |] */
  int dim[NDLIT_MAX_AXES];       /* elements per node at that level (all equal) */
  Loc first[NDLIT_MAX_AXES + 1]; /* the leftmost node's loc per level (as the tree's
                                    nodes are located), [naxes] the first number's */
  double *values;                /* the numbers in source (nesting) order */
  long long n;
  int depth;                     /* the height of the expanded tree (Expr.depth) */
  const char *text;              /* the source from the opening bracket */
  int len;
  Loc loc;                       /* the opening bracket */
} NdLit;

typedef enum ParamKind {
  P_POS,      /* x  (name NULL for `_`) */
  P_LABELED,  /* ~x */
  P_OPTIONAL, /* ?x or ?(x = default) */
  P_UNIT,     /* () */
} ParamKind;

typedef struct Param {
  ParamKind kind;
  const char *name;
  Expr *deflt; /* P_OPTIONAL only, may be NULL */
  Loc loc;
} Param;

typedef enum ArgKind {
  A_POS,      /* e */
  A_LABELED,  /* ~l:e, or ~l (pun: e is an E_IDENT named l) */
  A_OPTIONAL, /* ?l:e or ?l */
} ArgKind;

typedef struct Arg {
  ArgKind kind;
  const char *label; /* NULL for A_POS */
  Expr *e;
  Loc loc;
} Arg;

typedef struct Field {
  const char *name; /* o, output_dims, i, input_dims, b, batch_dims, prec, ... */
  Expr *e;
  Loc loc;
} Field;

typedef struct Binding {
  const char *name; /* NULL for `_`; operator text for `( +/ )` */
  bool is_operator; /* let%op ( +/ ) = ... */
  PtrVec params;    /* Param* */
  Expr *body;
  Loc loc;          /* the bound name */
} Binding;

struct Expr {
  ExprKind kind;
  Loc loc;
  long long ival;
  double fval;
  const char *str;
  Expr *a, *b, *c;
  PtrVec items;    /* Expr* */
  PtrVec args;     /* Arg* */
  PtrVec params;   /* Param* */
  PtrVec bindings; /* Binding* */
  PtrVec fields;   /* Field* */
  bool paren;      /* written in parentheses: (a, b) inside a tuple stays one element */
  int depth;       /* height of the subtree (the parser bounds it, passes may recurse) */
  const NdLit *lit; /* E_NDLIT */
};

typedef enum ItemKind {
  I_LET,    /* let x = ...  (and ...) */
  I_LET_OP, /* let%op */
  I_LET_CD, /* let%cd */
  I_OPEN,   /* open "file.tdsl" */
  I_OPDEF,  /* op NAME PARAMS ~logic:E { forward {...} backward {...} } */
} ItemKind;

typedef struct OpDef {
  const char *name;
  PtrVec params;  /* Param*: positional tensor slots t1 t2 t3, labeled like ~spec */
  Expr *logic;    /* the ~logic: argument (E_STRING or E_IDENT), may be NULL = pointwise */
  Expr *forward;  /* %cd code */
  Expr *backward; /* %cd code, NULL = not differentiable */
  Loc loc;
} OpDef;

typedef struct Item {
  ItemKind kind;
  Loc loc;
  PtrVec bindings; /* Binding*, for I_LET* */
  const char *path; /* I_OPEN */
  OpDef *op;       /* I_OPDEF */
} Item;

typedef struct Program {
  const SrcFile *file;
  PtrVec items; /* Item* */
} Program;

/* ast_ndlit.c. Reads the literal at text[0..lim) (an opening `[` or `[|` located at
 * loc) when it is a packable bracket of numbers: returns it (values in a) and sets *end,
 * *line and *line_start past it; NULL when the bracket must be lexed token by token. */
NdLit *ndlit_scan(Arena *a, Loc loc, const char *text, const char *lim, const char **end, int *line,
                  const char **line_start);
/* The tree the parser builds from the literal's tokens (E_LIST, E_TUPLE, E_ARRAY, E_INT,
 * E_FLOAT with their locations): for what needs the elements one by one. */
Expr *ndlit_expand(Arena *a, const NdLit *lit);

struct Diag;
/* Parses f; on syntax errors reports them (with recovery) and returns NULL.
 * Lexer and parser live in grammar/. */
Program *parse_program(Arena *a, struct Diag *d, const SrcFile *f);
/* Stable S-expression rendering used by tests (tdslc --dump-ast). */
void ast_print_program(FILE *out, const Program *p);
void ast_print_expr(FILE *out, const Expr *e);

#endif
