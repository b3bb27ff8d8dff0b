/* spec.y: the grammar of einsum specs (src/spec.h). The lexer (spec.re) hides the
 * difference between single- and multi-character mode: both deliver the same tokens,
 * so one grammar serves both. Separating commas are optional between axes (spaces
 * separate identifiers in multi-character mode; single-character mode has no commas).
 * Structural checks that a grammar cannot say well (one row variable per row, at most
 * two arguments, "=>" after two arguments) are made in the actions, so that their
 * messages name the problem instead of an unexpected token.
 * The prefix is spec_yy, not spec_: Bison would name its parser spec_parse, which is
 * the public entry point of spec.h (defined in spec.re around it). */
%define api.pure full
%define api.prefix {spec_yy}
%define parse.error simple
%locations
%param {SpecParser *p}

%code requires {
#include "spec.h"

/* Parser state, shared with the lexer in spec.re. */
typedef struct SpecParser {
  Arena *a;
  const char *text, *cur, *tok; /* whole spec, next byte to lex, current token start */
  int last_kind;                /* kind of the last token lexed, for error hints */
  bool multichar;
  Spec *spec;                   /* the result */
  int err_col;                  /* -1 until an error is recorded */
  const char *err_msg;
} SpecParser;

/* A token: its text is p->text[col, col+len). */
typedef struct SpecTok {
  const char *str; /* IDENT, ROWVAR: the name */
  int ival;        /* INT */
} SpecTok;

/* Locations are byte columns in the spec (a spec has no lines). */
typedef struct SpecLoc {
  int first, last; /* [first, last) */
} SpecLoc;
#define SPEC_YYLTYPE SpecLoc
#define SPEC_YYLTYPE_IS_DECLARED 1

}

%code provides {
int spec_yylex(SPEC_YYSTYPE *lval, SPEC_YYLTYPE *lloc, SpecParser *p);
void spec_yyerror(SPEC_YYLTYPE *lloc, SpecParser *p, const char *msg);
/* Records an error at col (the first one wins: later ones are consequences). */
void spec_fail(SpecParser *p, int col, const char *msg);
}

%code {
#include <string.h>

#define YYLLOC_DEFAULT(cur, rhs, n)                    \
  do {                                                 \
    if (n) {                                           \
      (cur).first = YYRHSLOC(rhs, 1).first;            \
      (cur).last = YYRHSLOC(rhs, n).last;              \
    } else {                                           \
      (cur).first = (cur).last = YYRHSLOC(rhs, 0).last; \
    }                                                  \
  } while (0)

/* `...` before its row kind is known; renamed by fix_row. */
static const char ELLIPSIS_MARK[] = "...";

static SpecAxis *new_axis(SpecParser *p, SpecAxisKind kind, SpecLoc loc) {
  SpecAxis *x = ANEW(p->a, SpecAxis);
  x->kind = kind;
  x->col = loc.first;
  x->len = loc.last - loc.first;
  x->stride.value = 1;
  x->dilation.value = 1;
  return x;
}

static SpecCoef coef_int(int v) { SpecCoef c = {v, NULL}; return c; }

static SpecAxis *new_affine(SpecParser *p, SpecLoc loc, SpecCoef stride, const char *name,
                            ConvMode conv, SpecCoef dilation, const char *kernel) {
  SpecAxis *x = new_axis(p, AX_AFFINE, loc);
  x->stride = stride;
  x->name = name;
  x->conv = conv;
  x->dilation = dilation;
  x->kernel = kernel;
  return x;
}

/* Appends an element to a row under construction: axes go left of the row variable
 * until one is seen, then right of it. */
static bool row_add_axis(SpecParser *p, SpecRow *r, SpecAxis *x) {
  vec_push(p->a, r->rowvar ? &r->right : &r->left, x);
  return true;
}

static bool row_add_rowvar(SpecParser *p, SpecRow *r, const char *name, SpecLoc loc) {
  if (r->rowvar) {
    const char *old = r->rowvar == ELLIPSIS_MARK ? "..." : arena_printf(p->a, "..%s..", r->rowvar);
    const char *new = name == ELLIPSIS_MARK ? "..." : arena_printf(p->a, "..%s..", name);
    spec_fail(p, loc.first,
              arena_printf(p->a, "second row variable '%s' in a row that already has '%s'",
                           new, old));
    return false;
  }
  r->rowvar = name;
  return true;
}

static SpecRow *new_row(SpecParser *p, SpecLoc loc) {
  SpecRow *r = ANEW(p->a, SpecRow);
  r->col = loc.first;
  return r;
}

/* Copies a parsed row into its slot, naming `...` after the row kind. */
static void fix_row(SpecRow *dst, const SpecRow *src, const char *kind) {
  *dst = *src;
  if (dst->rowvar == ELLIPSIS_MARK)
    dst->rowvar = kind;
}

static SpecSlot *new_slot(SpecParser *p, SpecLoc loc, SpecRow *b, SpecRow *i, SpecRow *o) {
  SpecSlot *s = ANEW(p->a, SpecSlot);
  s->col = loc.first;
  if (b) {
    fix_row(&s->batch, b, "batch");
    s->has_batch = true;
  } else {
    s->batch.col = o->col;
  }
  if (i) {
    fix_row(&s->input, i, "input");
    s->has_input = true;
  } else {
    s->input.col = o->col;
  }
  fix_row(&s->output, o, "output");
  return s;
}
}

%union {
  SpecTok tok;
  SpecCoef coef;
  ConvMode conv;
  SpecAxis *axis;
  SpecRow *row;
  SpecSlot *slot;
  PtrVec *slots;
}

%token <tok> IDENT "identifier" INT "integer" ROWVAR "row variable"
%token UNDERSCORE "'_'" ELLIPSIS "'...'" COMMA "','" PIPE "'|'" ARROW "'->'"
%token DARROW "'=>'" SEMI "';'" STAR "'*'" PLUS "'+'" EQPLUS "'=+'" LTPLUS "'<+'"
%token BAD "invalid token"

%type <coef> coef
%type <conv> conv
%type <axis> axis affine
%type <row> row elems
%type <slot> slot
%type <slots> args

%%

spec:
    args {
      Spec *s = p->spec;
      if ($1->len > 1) {
        /* torch's "ij,jk->ik" written with ';': its "->" is a shape's input->output here */
        spec_fail(p, (int)strlen(p->text),
                  strstr(p->text, "->") ? "missing '=>' and a result after the arguments of the einsum spec (the "
                                          "result follows '=>'; '->' separates a shape's input axes from its output axes)"
                                        : "missing '=>' and a result after the arguments of the einsum spec");
        YYABORT;
      }
      s->nargs = 0;
      s->result = VEC_AT(*$1, SpecSlot, 0);
    }
  | args DARROW slot {
      Spec *s = p->spec;
      if ($1->len > 3) {
        spec_fail(p, VEC_AT(*$1, SpecSlot, 3)->col,
                  "an einsum spec has at most three arguments before '=>'");
        YYABORT;
      }
      s->nargs = $1->len;
      for (int k = 0; k < $1->len; k++)
        s->args[k] = VEC_AT(*$1, SpecSlot, k);
      s->result = $3;
    }
  ;

args:
    slot { $$ = ANEW(p->a, PtrVec); vec_push(p->a, $$, $1); }
  | args SEMI slot { $$ = $1; vec_push(p->a, $$, $3); }
  ;

slot:
    row                          { $$ = new_slot(p, @$, NULL, NULL, $1); }
  | row PIPE row                 { $$ = new_slot(p, @$, $1, NULL, $3); }
  | row ARROW row                { $$ = new_slot(p, @$, NULL, $1, $3); }
  | row PIPE row ARROW row       { $$ = new_slot(p, @$, $1, $3, $5); }
  ;

row:
    %empty          { $$ = new_row(p, @$); }
  | elems
  | elems COMMA
  ;

/* Commas between elements are optional (single-character mode has none). */
elems:
    axis                   { $$ = new_row(p, @$); row_add_axis(p, $$, $1); }
  | ELLIPSIS               { $$ = new_row(p, @$); row_add_rowvar(p, $$, ELLIPSIS_MARK, @1); }
  | ROWVAR                 { $$ = new_row(p, @$); row_add_rowvar(p, $$, $1.str, @1); }
  | elems axis             { $$ = $1; row_add_axis(p, $$, $2); }
  | elems COMMA axis       { $$ = $1; row_add_axis(p, $$, $3); }
  | elems ELLIPSIS         { $$ = $1; if (!row_add_rowvar(p, $$, ELLIPSIS_MARK, @2)) YYABORT; }
  | elems COMMA ELLIPSIS   { $$ = $1; if (!row_add_rowvar(p, $$, ELLIPSIS_MARK, @3)) YYABORT; }
  | elems ROWVAR           { $$ = $1; if (!row_add_rowvar(p, $$, $2.str, @2)) YYABORT; }
  | elems COMMA ROWVAR     { $$ = $1; if (!row_add_rowvar(p, $$, $3.str, @3)) YYABORT; }
  ;

axis:
    IDENT       { $$ = new_axis(p, AX_VAR, @$); $$->name = $1.str; }
  | INT         { $$ = new_axis(p, AX_FIXED, @$); $$->fixed = $1.ival; }
  | UNDERSCORE  { $$ = new_axis(p, AX_PLACEHOLDER, @$); }
  | affine
  ;

affine:
    IDENT conv IDENT {
      $$ = new_affine(p, @$, coef_int(1), $1.str, $2, coef_int(1), $3.str);
    }
  | IDENT conv coef STAR IDENT {
      $$ = new_affine(p, @$, coef_int(1), $1.str, $2, $3, $5.str);
    }
  | IDENT conv INT {
      $$ = new_affine(p, @$, coef_int(1), $1.str, $2, coef_int(0), NULL);
      $$->offset = $3.ival;
    }
  | coef STAR IDENT conv IDENT {
      $$ = new_affine(p, @$, $1, $3.str, $4, coef_int(1), $5.str);
    }
  | coef STAR IDENT conv coef STAR IDENT {
      $$ = new_affine(p, @$, $1, $3.str, $4, $5, $7.str);
    }
  | coef STAR IDENT conv INT {
      $$ = new_affine(p, @$, $1, $3.str, $4, coef_int(0), NULL);
      $$->offset = $5.ival;
    }
  | coef STAR IDENT {
      $$ = new_affine(p, @$, $1, $3.str, CONV_NONE, coef_int(0), NULL);
    }
  ;

coef:
    INT    { $$ = coef_int($1.ival); }
  | IDENT  { $$.value = 0; $$.ident = $1.str; }
  ;

conv:
    PLUS    { $$ = CONV_SCOPE; }
  | EQPLUS  { $$ = CONV_PADDED; }
  | LTPLUS  { $$ = CONV_VALID; }
  ;

%%

void spec_fail(SpecParser *p, int col, const char *msg) {
  if (p->err_col >= 0)
    return;
  p->err_col = col;
  p->err_msg = msg;
}

/* What to say after "unexpected 'X'" for tokens that are usually misplaced in the
 * same way. */
static const char *hint(int kind) {
  switch (kind) {
  case PIPE: return ": a slot is batch|input->output, with at most one '|' before '->'";
  case ARROW: return ": a slot has at most one '->', after the '|'";
  case DARROW: return ": an einsum spec has one '=>', before the result";
  case SEMI: return ": arguments are separated by ';' before '=>' only";
  case COMMA: return ": an axis is missing";
  case STAR: case PLUS: case EQPLUS: case LTPLUS:
    return ": an affine axis is stride*output+dilation*kernel (with '+', '=+' or '<+')";
  default: return "";
  }
}

/* A syntax error: quote the offending token. Lexical errors were recorded by the
 * lexer before it returned BAD and take precedence. */
void spec_yyerror(SPEC_YYLTYPE *lloc, SpecParser *p, const char *msg) {
  (void)msg;
  if (p->err_col >= 0)
    return;
  if (lloc->first >= (int)strlen(p->text)) {
    spec_fail(p, lloc->first, "unexpected end of einsum spec");
    return;
  }
  int len = lloc->last - lloc->first;
  spec_fail(p, lloc->first,
            arena_printf(p->a, "unexpected '%.*s' in einsum spec%s", len, p->text + lloc->first,
                         hint(p->last_kind)));
}
