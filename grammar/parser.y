/* parser.y: the grammar of .tdsl (tdsl(7)), producing src/ast.h.
 * Operator precedence and associativity follow OCaml (by the operator's first
 * characters, classified by the lexer). Function application binds tighter than any
 * infix operator. Einsum operators, %cd assignment options and comment blocks are
 * parsed as ordinary expressions and then reshaped in the actions (see ast_build).
 *
 * Top-level items need no `;;`: the token array is scanned first and every `let` that
 * has no matching `in` becomes TOPLET, so the grammar can tell a new item from a
 * `let ... in` expression with one token of lookahead (classify_lets). */
%define api.pure full
%define api.prefix {tdslp_}  /* not tdsl_: that is the runtime's public namespace (tdsl.h) */
%define api.token.prefix {T_}
%define parse.error custom
%define parse.lac full
%locations
%param {Parser *P}

%code requires {
#include "ast.h"
#include "diag.h"
#include "parse.h"

typedef struct Parser {
  Arena *a;
  Diag *d;
  const SrcFile *f;
  TokenVec toks;
  int pos;           /* next token to hand to the parser */
  int last;          /* the token handed out last (the parser's lookahead) */
  Program *prog;
  bool too_deep;     /* "nested too deeply" was reported */
} Parser;

typedef struct Binding Binding;
typedef struct OpDef OpDef;
}

%code provides {
int tdslp_lex(TDSLP_STYPE *lval, TDSLP_LTYPE *lloc, Parser *P);
void tdslp_error(TDSLP_LTYPE *lloc, Parser *P, const char *msg);
}

%union {
  Token *tok;
  Expr *e;
  Arg *arg;
  Param *param;
  Binding *bind;
  Field *field;
  PtrVec *vec;
  Item *item;
  OpDef *op;
}

%code {
#include <string.h>

/* Deeper expressions are rejected: every later pass recurses over the tree. */
enum { MAX_DEPTH = 1000 };

static Loc L(Parser *P, TDSLP_LTYPE l) {
  Loc r = {P->f, l.first_line, l.first_column};
  return r;
}

static Expr *mk(Parser *P, ExprKind k, Loc loc) {
  Expr *e = ANEW(P->a, Expr);
  e->kind = k;
  e->loc = loc;
  return e;
}

static int depth_of(const Expr *e) { return e ? e->depth : 0; }

static int vec_depth(const PtrVec *v) {
  int d = 0;
  for (int i = 0; i < v->len; i++) {
    int x = depth_of(v->items[i]);
    if (x > d) d = x;
  }
  return d;
}

/* Computes e->depth from its children and reports (once) an expression nested too
 * deeply for the recursive passes. */
static Expr *fin(Parser *P, Expr *e) {
  int d = depth_of(e->a);
  if (depth_of(e->b) > d) d = depth_of(e->b);
  if (depth_of(e->c) > d) d = depth_of(e->c);
  if (vec_depth(&e->items) > d) d = vec_depth(&e->items);
  for (int i = 0; i < e->args.len; i++) {
    int x = depth_of(VEC_AT(e->args, Arg, i)->e);
    if (x > d) d = x;
  }
  for (int i = 0; i < e->fields.len; i++) {
    int x = depth_of(VEC_AT(e->fields, Field, i)->e);
    if (x > d) d = x;
  }
  for (int i = 0; i < e->bindings.len; i++) {
    int x = depth_of(VEC_AT(e->bindings, Binding, i)->body);
    if (x > d) d = x;
  }
  for (int i = 0; i < e->params.len; i++) {
    int x = depth_of(VEC_AT(e->params, Param, i)->deflt);
    if (x > d) d = x;
  }
  e->depth = d + 1;
  if (e->depth > MAX_DEPTH && !P->too_deep) {
    P->too_deep = true;
    diag_error(P->d, e->loc, "expression nested too deeply (more than %d levels)", MAX_DEPTH);
  }
  return e;
}

static Expr *mk1(Parser *P, ExprKind k, Loc loc, const char *str, Expr *a) {
  Expr *e = mk(P, k, loc);
  e->str = str;
  e->a = a;
  return fin(P, e);
}

static Expr *mk2(Parser *P, ExprKind k, Loc loc, const char *str, Expr *a, Expr *b) {
  Expr *e = mk(P, k, loc);
  e->str = str;
  e->a = a;
  e->b = b;
  return fin(P, e);
}

static PtrVec *vnew(Parser *P, void *first) {
  PtrVec *v = ANEW(P->a, PtrVec);
  if (first) vec_push(P->a, v, first);
  return v;
}

static Expr *from_vec(Parser *P, ExprKind k, Loc loc, PtrVec *v) {
  Expr *e = mk(P, k, loc);
  if (v) e->items = *v;
  return fin(P, e);
}

static Arg *mkarg(Parser *P, ArgKind k, const char *label, Expr *e, Loc loc) {
  Arg *a = ANEW(P->a, Arg);
  a->kind = k;
  a->label = label;
  a->e = e;
  a->loc = loc;
  return a;
}

static Param *mkparam(Parser *P, ParamKind k, const char *name, Expr *deflt, Loc loc) {
  Param *p = ANEW(P->a, Param);
  p->kind = k;
  p->name = name && strcmp(name, "_") ? name : NULL;
  p->deflt = deflt;
  p->loc = loc;
  return p;
}

/* ~l (pun): the argument is the variable l. */
static Arg *pun(Parser *P, ArgKind k, Token *t) {
  Expr *e = mk(P, E_IDENT, t->loc);
  e->str = t->str;
  return mkarg(P, k, t->str, fin(P, e), t->loc);
}

static Expr *mkapp(Parser *P, Expr *fn, PtrVec *args) {
  Expr *e = mk(P, E_APP, fn->loc);
  e->a = fn;
  e->args = *args;
  return fin(P, e);
}

/* `-4`, `-. 2.5`: a minus directly on a literal is part of the literal. */
static Expr *negate(Parser *P, Token *op, Expr *x) {
  bool dot = !strcmp(op->str, "-.") || !strcmp(op->str, "~-.");
  if (!x->paren && x->kind == E_INT && !dot) {
    x->ival = -x->ival;
    x->loc = op->loc;
    return x;
  }
  if (!x->paren && x->kind == E_FLOAT) {
    x->fval = -x->fval;
    x->str = arena_printf(P->a, "-%s", x->str);
    x->loc = op->loc;
    return x;
  }
  return mk1(P, E_UNOP, op->loc, op->str, x);
}

static bool is_spec(const Expr *e) { return e->kind == E_STRING || e->kind == E_IDENT; }

/* `"spec" b c` was parsed as the spec applied to b c: returns the operand `b c`
 * (NULL if the first argument is labeled). */
static Expr *drop_fn(Parser *P, Expr *app) {
  Arg *first = VEC_AT(app->args, Arg, 0);
  if (first->kind != A_POS) return NULL;
  if (app->args.len == 1) return first->e;
  PtrVec rest = {0};
  for (int i = 1; i < app->args.len; i++) vec_push(P->a, &rest, app->args.items[i]);
  return mkapp(P, first->e, &rest);
}

/* Finds the leftmost operand of e: for `a +* "spec" b * c`, `"spec" b` sits at the
 * left end of the right operand. Returns the slot holding it. */
static Expr **leftmost(Expr **slot) {
  /* A loop, not recursion: over-deep input is reported but still built. */
  for (;;) {
    Expr *e = *slot;
    if (e->paren || (e->kind != E_BINOP && e->kind != E_ASSIGN && e->kind != E_EINSUM)) return slot;
    slot = &e->a;
  }
}

/* The capture list that may follow a literal spec (the seed's `~capture_dims`:
 * `x +* "ij;jk=>ik" ["j"] y`): an unparenthesized list literal. Its items are checked
 * (strings) by staging. */
static bool is_capture_list(Parser *P, Arg *arg) {
  /* Numbers where the capture list's strings belong (staging says so): as tokens. */
  if (arg->kind == A_POS && arg->e->kind == E_NDLIT && arg->e->lit->kind[0] == ND_LIST && !arg->e->paren)
    arg->e = ndlit_expand(P->a, arg->e->lit);
  return arg->kind == A_POS && arg->e->kind == E_LIST && !arg->e->paren;
}

static void take_captures(Expr *e, const Expr *list) { e->items = list->items; }

/* a OP rhs for an einsum operator (tdsl(7), %op TENSOR EXPRESSIONS): binary `a OP "spec" b`,
 * `a OP b "spec"`, `a OP spec_ident b`; unary `a OP "spec"` / `a OP spec_ident`. A literal
 * spec may be followed by a capture list: `a OP "spec" ["i"; "j"] b`, `a OP b "spec" ["i"]`,
 * `a OP "spec" ["i"]` (E_EINSUM.items). */
static Expr *einsum(Parser *P, Token *op, Expr *a, Expr *rhs) {
  bool unary = !strcmp(op->str, "++") || !strcmp(op->str, "@^^");
  Expr *e = mk(P, E_EINSUM, op->loc);
  e->str = op->str;
  e->a = a;
  if (unary) {
    if (!rhs->paren && rhs->kind == E_APP && rhs->a->kind == E_STRING && !rhs->a->paren && rhs->args.len == 1 &&
        is_capture_list(P, VEC_AT(rhs->args, Arg, 0))) {
      take_captures(e, VEC_AT(rhs->args, Arg, 0)->e);
      e->c = rhs->a;
      return fin(P, e);
    }
    if (!rhs->paren && rhs->kind == E_APP && is_spec(rhs->a)) {
      diag_error(P->d, op->loc, "'%s' is unary: a %s \"SPEC\" takes no second operand", op->str, op->str);
      return fin(P, e);
    }
    if (rhs->paren || !is_spec(rhs)) {
      diag_error(P->d, rhs->loc, "'%s' expects an einsum spec (a string or an identifier)", op->str);
      return fin(P, e);
    }
    e->c = rhs;
    return fin(P, e);
  }
  /* "spec" first, possibly at the left end of a larger operand. */
  Expr **slot = leftmost(&rhs);
  Expr *l = *slot;
  if (!l->paren && l->kind == E_APP && l->a->kind == E_STRING && !l->a->paren) {
    Arg *first = VEC_AT(l->args, Arg, 0);
    if (l->args.len > 1 && is_capture_list(P, first)) {
      take_captures(e, first->e);
      PtrVec rest = {0};
      for (int i = 1; i < l->args.len; i++) vec_push(P->a, &rest, l->args.items[i]);
      l = mkapp(P, l->a, &rest);
    }
    Expr *b = drop_fn(P, l);
    if (b) {
      e->c = l->a;
      *slot = b;
      e->b = rhs;
      return fin(P, e);
    }
  }
  if (!rhs->paren && rhs->kind == E_APP) {
    /* mixfix: b "spec" ["captures"] */
    Arg *last = VEC_AT(rhs->args, Arg, rhs->args.len - 1);
    if (rhs->args.len >= 2 && is_capture_list(P, last)) {
      Arg *prev = VEC_AT(rhs->args, Arg, rhs->args.len - 2);
      if (prev->kind == A_POS && prev->e->kind == E_STRING && !prev->e->paren) {
        take_captures(e, last->e);
        rhs->args.len--;
        last = prev;
      }
    }
    if (last->kind == A_POS && last->e->kind == E_STRING && !last->e->paren) {
      e->c = last->e;
      rhs->args.len--;
      e->b = rhs->args.len ? rhs : rhs->a;
      return fin(P, e);
    }
    /* spec_ident b */
    Expr *b = rhs->a->kind == E_IDENT && !rhs->a->paren ? drop_fn(P, rhs) : NULL;
    if (b) {
      e->c = rhs->a;
      e->b = b;
      return fin(P, e);
    }
  }
  diag_error(P->d, op->loc, "'%s' needs an einsum spec: a %s \"SPEC\" b or a %s b \"SPEC\"", op->str,
             op->str, op->str);
  e->b = rhs;
  return fin(P, e);
}

static bool is_einsum_op(const char *s) {
  return !strcmp(s, "+*") || !strcmp(s, "+++") || !strcmp(s, "@^+") || !strcmp(s, "++") ||
         !strcmp(s, "@^^");
}

static Expr *binop(Parser *P, Token *op, Expr *a, Expr *b) {
  if (is_einsum_op(op->str)) return einsum(P, op, a, b);
  return mk2(P, E_BINOP, op->loc, op->str, a, b);
}

static bool is_asgn_option(const Arg *a) {
  return a->kind == A_LABELED && (!strcmp(a->label, "logic") || !strcmp(a->label, "projections"));
}

/* `lhs =:+ a * b ~logic:"@"`: the trailing options were parsed as arguments of the
 * last operand's application; move them to the assignment. */
static void take_options(Parser *P, Expr **slot, PtrVec *opts) {
  /* Walk down the right spine to the last operand (a loop: input may be over-deep). */
  for (;;) {
    Expr *e = *slot;
    if (e->paren) return;
    if (e->kind == E_BINOP || (e->kind == E_EINSUM && e->b)) slot = &e->b;
    else if (e->kind == E_UNOP) slot = &e->a;
    else break;
  }
  Expr *e = *slot;
  if (e->kind != E_APP) return;
  int n = e->args.len;
  while (n > 0 && is_asgn_option(VEC_AT(e->args, Arg, n - 1))) n--;
  for (int i = n; i < e->args.len; i++) vec_push(P->a, opts, e->args.items[i]);
  e->args.len = n;
  if (!n) *slot = e->a;
}

static Expr *assign(Parser *P, Token *op, Expr *lhs, Expr *rhs) {
  Expr *e = mk(P, E_ASSIGN, op->loc);
  e->str = op->str;
  e->a = lhs;
  take_options(P, &rhs, &e->args);
  e->b = rhs;
  return fin(P, e);
}

/* ~~(parts; body): the first element of the sequence is the comment, written as an
 * application of strings and tensors. */
static Expr *comment(Parser *P, Loc loc, Expr *seq) {
  Expr *e = mk(P, E_COMMENT, loc);
  Expr *parts = seq, *body = NULL;
  if (!seq->paren && seq->kind == E_SEQ) {
    parts = seq->items.items[0];
    if (seq->items.len == 2) body = seq->items.items[1];
    else {
      PtrVec rest = {0};
      for (int i = 1; i < seq->items.len; i++) vec_push(P->a, &rest, seq->items.items[i]);
      body = from_vec(P, E_SEQ, VEC_AT(rest, Expr, 0)->loc, &rest);
    }
  }
  if (!body) {
    diag_error(P->d, loc, "a comment block needs a body: ~~(\"comment\" ...; CODE)");
    body = mk(P, E_UNIT, loc);
  }
  if (!parts->paren && parts->kind == E_APP) {
    vec_push(P->a, &e->items, parts->a);
    for (int i = 0; i < parts->args.len; i++) {
      Arg *a = VEC_AT(parts->args, Arg, i);
      if (a->kind != A_POS) diag_error(P->d, a->loc, "labeled arguments are not allowed in a comment");
      vec_push(P->a, &e->items, a->e);
    }
  } else {
    vec_push(P->a, &e->items, parts);
  }
  e->a = body;
  return fin(P, e);
}

static Expr *tuple(Parser *P, Expr *a, Expr *b) {
  if (a->kind == E_TUPLE && !a->paren) {
    /* Not fin(): recomputing over all items would make long tuples quadratic. */
    vec_push(P->a, &a->items, b);
    if (depth_of(b) + 1 > a->depth) {
      Expr probe = *a;
      probe.items = (PtrVec){0};
      vec_push(P->a, &probe.items, b);
      a->depth = fin(P, &probe)->depth;
    }
    return a;
  }
  Expr *e = mk(P, E_TUPLE, a->loc);
  vec_push(P->a, &e->items, a);
  vec_push(P->a, &e->items, b);
  return fin(P, e);
}

static Expr *seq_done(Parser *P, PtrVec *v) {
  if (v->len == 1) return v->items[0];
  return from_vec(P, E_SEQ, VEC_AT(*v, Expr, 0)->loc, v);
}

static Binding *mkbinding(Parser *P, Token *name, bool is_op, PtrVec *params, Expr *body) {
  Binding *b = ANEW(P->a, Binding);
  b->name = is_op || strcmp(name->str, "_") ? name->str : NULL;
  b->is_operator = is_op;
  if (params) b->params = *params;
  b->body = body;
  b->loc = name->loc;
  return b;
}

static Expr *record(Parser *P, Loc loc, PtrVec *fields) {
  Expr *e = mk(P, E_RECORD, loc);
  Field *first = fields->items[0];
  e->str = first->name;
  e->a = first->e;
  for (int i = 1; i < fields->len; i++) {
    Field *f = fields->items[i];
    if (!f->e) {
      diag_error(P->d, f->loc, "record field '%s' needs a value (only the first field names the tensor)",
                 f->name);
      continue;
    }
    vec_push(P->a, &e->fields, f);
  }
  return fin(P, e);
}

static Item *mkitem(Parser *P, ItemKind k, Loc loc) {
  Item *it = ANEW(P->a, Item);
  it->kind = k;
  it->loc = loc;
  return it;
}

static void add_item(Parser *P, Item *it) {
  if (it) vec_push(P->a, &P->prog->items, it);
}
}

%token <tok> IDENT "identifier"
%token <tok> INT "integer"
%token <tok> FLOAT "float"
%token <tok> NDLIT "ndarray literal"
%token <tok> STRING "string"
%token <tok> CHARLIT "label"
%token <tok> LABEL "~label:"
%token <tok> LABEL_PUN "~label"
%token <tok> OPTLABEL "?label:"
%token <tok> OPTLABEL_PUN "?label"
%token <tok> QUESTION "'?'"
%token <tok> LET "'let'"
%token <tok> TOPLET "top-level 'let'"
%token <tok> LET_OP "'let%op'"
%token <tok> LET_CD "'let%cd'"
%token <tok> AND "'and'" IN "'in'" FUN "'fun'" IF "'if'" THEN "'then'" ELSE "'else'"
%token <tok> FOR "'for'" DO "'do'" DONE "'done'" OP "'op'" FORWARD "'forward'"
%token <tok> BACKWARD "'backward'" OPEN "'open'" TRUE "'true'" FALSE "'false'"
%token <tok> LPAREN "'('" RPAREN "')'" LBRACKET "'['" RBRACKET "']'"
%token <tok> LBRACKBAR "'[|'" BARRBRACKET "'|]'" LBRACE "'{'" RBRACE "'}'"
%token <tok> SEMI "';'" SEMISEMI "';;'" COMMA "','" DOT "'.'" ARROW "'->'" EQ "'='"
%token <tok> TILDETILDE "'~~'"
%token <tok> PREFIXOP "prefix operator"
%token <tok> TILDEMINUS "'~-'"
%token <tok> MINUS "'-'"
%token <tok> MINUSDOT "'-.'"
%token <tok> INFIX_POW INFIX_MUL INFIX_ADD INFIX_AT INFIX_CMP BARBAR AMPAMP
%token <tok> ASGN "assignment operator"

%precedence below_SEMI
%precedence SEMI
%precedence THEN
%precedence ELSE
%right ASGN
%left COMMA
%right BARBAR
%right AMPAMP
%left INFIX_CMP EQ
%right INFIX_AT
%left INFIX_ADD MINUS MINUSDOT
%left INFIX_MUL
%right INFIX_POW
%precedence UMINUS
%precedence PREFIXOP
%precedence DOT

%type <e> seq_expr expr simple_expr number
%type <vec> seq_body arg_list list_items params params1 let_bindings record_fields
%type <arg> arg
%type <param> param
%type <bind> let_binding
%type <field> record_field
%type <tok> operator field_name binding_kw
%type <item> item
%type <op> op_def op_params

%start program

%%

program:
    %empty                { P->prog = ANEW(P->a, Program); P->prog->file = P->f; }
  | program item          { add_item(P, $2); }
  | program SEMISEMI      { yyerrok; }
  | program error
  ;

/* Reduced as soon as the keyword is shifted: a new item ends error recovery. */
binding_kw:
    TOPLET  { yyerrok; $$ = $1; }
  | LET_OP  { yyerrok; $$ = $1; }
  | LET_CD  { yyerrok; $$ = $1; }
  ;

item:
    binding_kw let_bindings {
      ItemKind k = $1->kind == T_LET_OP ? I_LET_OP : $1->kind == T_LET_CD ? I_LET_CD : I_LET;
      $$ = mkitem(P, k, $1->loc);
      $$->bindings = *$2;
    }
  | OPEN STRING           { yyerrok; $$ = mkitem(P, I_OPEN, $1->loc); $$->path = $2->str; }
  | op_def                { $$ = mkitem(P, I_OPDEF, $1->loc); $$->op = $1; }
  ;

op_def:
    op_params LBRACE FORWARD LBRACE seq_expr RBRACE RBRACE {
      $$ = $1; $$->forward = $5;
    }
  | op_params LBRACE FORWARD LBRACE seq_expr RBRACE BACKWARD LBRACE seq_expr RBRACE RBRACE {
      $$ = $1; $$->forward = $5; $$->backward = $9;
    }
  ;

/* The op's slots (t1 t2 ...), labeled parameters (~spec) and its ~logic: option. */
op_params:
    OP IDENT              { yyerrok; $$ = ANEW(P->a, OpDef); $$->name = $2->str; $$->loc = $1->loc; }
  | op_params IDENT       { $$ = $1; vec_push(P->a, &$$->params, mkparam(P, P_POS, $2->str, NULL, $2->loc)); }
  | op_params LABEL_PUN   { $$ = $1; vec_push(P->a, &$$->params, mkparam(P, P_LABELED, $2->str, NULL, $2->loc)); }
  | op_params LABEL simple_expr {
      $$ = $1;
      if (strcmp($2->str, "logic"))
        diag_error(P->d, $2->loc, "unexpected option '~%s:' in an op definition (only ~logic: is allowed)", $2->str);
      else if ($$->logic)
        diag_error(P->d, $2->loc, "duplicate ~logic: option");
      $$->logic = $3;
    }
  ;

let_bindings:
    let_binding                    { $$ = vnew(P, $1); }
  | let_bindings AND let_binding   { $$ = $1; vec_push(P->a, $$, $3); }
  ;

let_binding:
    IDENT params EQ seq_expr                  { $$ = mkbinding(P, $1, false, $2, $4); }
  | LPAREN operator RPAREN params EQ seq_expr { $$ = mkbinding(P, $2, true, $4, $6); }
  ;

params:
    %empty          { $$ = vnew(P, NULL); }
  | params1         { $$ = $1; }
  ;

params1:
    param           { $$ = vnew(P, $1); }
  | params1 param   { $$ = $1; vec_push(P->a, $$, $2); }
  ;

param:
    IDENT           { $$ = mkparam(P, P_POS, $1->str, NULL, $1->loc); }
  | LABEL_PUN       { $$ = mkparam(P, P_LABELED, $1->str, NULL, $1->loc); }
  | OPTLABEL_PUN    { $$ = mkparam(P, P_OPTIONAL, $1->str, NULL, $1->loc); }
  | QUESTION LPAREN IDENT EQ expr RPAREN { $$ = mkparam(P, P_OPTIONAL, $3->str, $5, $1->loc); }
  | LPAREN RPAREN   { $$ = mkparam(P, P_UNIT, NULL, NULL, $1->loc); }
  ;

operator:
    INFIX_POW | INFIX_MUL | INFIX_ADD | INFIX_AT | INFIX_CMP | BARBAR | AMPAMP
  | MINUS | MINUSDOT | EQ | PREFIXOP | TILDEMINUS
  ;

seq_expr:
    seq_body %prec below_SEMI  { $$ = seq_done(P, $1); }
  | seq_body SEMI              { $$ = seq_done(P, $1); }
  ;

seq_body:
    expr %prec below_SEMI      { $$ = vnew(P, $1); }
  | seq_body SEMI expr         { $$ = $1; vec_push(P->a, $$, $3); }
  ;

expr:
    simple_expr                { $$ = $1; }
  | simple_expr arg_list       { $$ = mkapp(P, $1, $2); }
  | expr INFIX_POW expr        { $$ = binop(P, $2, $1, $3); }
  | expr INFIX_MUL expr        { $$ = binop(P, $2, $1, $3); }
  | expr INFIX_ADD expr        { $$ = binop(P, $2, $1, $3); }
  | expr MINUS expr            { $$ = binop(P, $2, $1, $3); }
  | expr MINUSDOT expr         { $$ = binop(P, $2, $1, $3); }
  | expr INFIX_AT expr         { $$ = binop(P, $2, $1, $3); }
  | expr INFIX_CMP expr        { $$ = binop(P, $2, $1, $3); }
  | expr EQ expr               { $$ = binop(P, $2, $1, $3); }
  | expr BARBAR expr           { $$ = binop(P, $2, $1, $3); }
  | expr AMPAMP expr           { $$ = binop(P, $2, $1, $3); }
  | expr COMMA expr            { $$ = tuple(P, $1, $3); }
  | expr ASGN expr             { $$ = assign(P, $2, $1, $3); }
  | MINUS expr %prec UMINUS    { $$ = negate(P, $1, $2); }
  | MINUSDOT expr %prec UMINUS { $$ = negate(P, $1, $2); }
  | TILDEMINUS expr %prec UMINUS { $$ = negate(P, $1, $2); }
  | IF expr THEN expr ELSE expr  { $$ = mk2(P, E_IF, $1->loc, NULL, $2, $4); $$->c = $6; $$ = fin(P, $$); }
  | IF expr THEN expr %prec THEN { $$ = mk2(P, E_IF, $1->loc, NULL, $2, $4); }
  | LET let_bindings IN seq_expr {
      $$ = mk(P, E_LET, $1->loc); $$->bindings = *$2; $$->a = $4; $$ = fin(P, $$);
    }
  | FUN params1 ARROW seq_expr {
      $$ = mk(P, E_FUN, $1->loc); $$->params = *$2; $$->a = $4; $$ = fin(P, $$);
    }
  | FOR IDENT IN seq_expr DO seq_expr DONE { $$ = mk2(P, E_FOR, $1->loc, $2->str, $4, $6); }
  ;

arg_list:
    arg             { $$ = vnew(P, $1); }
  | arg_list arg    { $$ = $1; vec_push(P->a, $$, $2); }
  ;

arg:
    simple_expr           { $$ = mkarg(P, A_POS, NULL, $1, $1->loc); }
  | LABEL simple_expr     { $$ = mkarg(P, A_LABELED, $1->str, $2, $1->loc); }
  | LABEL_PUN             { $$ = pun(P, A_LABELED, $1); }
  | OPTLABEL simple_expr  { $$ = mkarg(P, A_OPTIONAL, $1->str, $2, $1->loc); }
  | OPTLABEL_PUN          { $$ = pun(P, A_OPTIONAL, $1); }
  ;

simple_expr:
    IDENT           { $$ = mk1(P, E_IDENT, $1->loc, $1->str, NULL); }
  | number          { $$ = $1; }
  | STRING          { $$ = mk1(P, E_STRING, $1->loc, $1->str, NULL); }
  | TRUE            { $$ = mk(P, E_BOOL, $1->loc); $$->ival = 1; $$ = fin(P, $$); }
  | FALSE           { $$ = mk(P, E_BOOL, $1->loc); $$ = fin(P, $$); }
  | CHARLIT number        { $$ = mk1(P, E_LABELED_NUM, $1->loc, $1->str, $2); }
  | CHARLIT MINUS number  { $$ = mk1(P, E_LABELED_NUM, $1->loc, $1->str, negate(P, $2, $3)); }
  | LPAREN RPAREN   { $$ = mk(P, E_UNIT, $1->loc); $$ = fin(P, $$); }
  | LPAREN seq_expr RPAREN { $$ = $2; $$->paren = true; }
  | LPAREN operator RPAREN { $$ = mk1(P, E_OPREF, $1->loc, $2->str, NULL); }
  | QUESTION        { $$ = mk(P, E_DYNDIM, $1->loc); $$ = fin(P, $$); }
  | NDLIT           { $$ = mk(P, E_NDLIT, $1->loc); $$->lit = $1->lit; $$->depth = $1->lit->depth; }
  | LBRACKET RBRACKET { $$ = from_vec(P, E_LIST, $1->loc, NULL); }
  | LBRACKET list_items RBRACKET { $$ = from_vec(P, E_LIST, $1->loc, $2); }
  | LBRACKET list_items SEMI RBRACKET { $$ = from_vec(P, E_LIST, $1->loc, $2); }
  | LBRACKBAR BARRBRACKET { $$ = from_vec(P, E_ARRAY, $1->loc, NULL); }
  | LBRACKBAR list_items BARRBRACKET { $$ = from_vec(P, E_ARRAY, $1->loc, $2); }
  | LBRACKBAR list_items SEMI BARRBRACKET { $$ = from_vec(P, E_ARRAY, $1->loc, $2); }
  | LBRACE record_fields RBRACE { $$ = record(P, $1->loc, $2); }
  | LBRACE record_fields SEMI RBRACE { $$ = record(P, $1->loc, $2); }
  | simple_expr DOT field_name { $$ = mk1(P, E_FIELD, $3->loc, $3->str, $1); }
  | PREFIXOP simple_expr { $$ = mk1(P, E_UNOP, $1->loc, $1->str, $2); }
  | TILDETILDE LPAREN seq_expr RPAREN { $$ = comment(P, $1->loc, $3); }
  ;

field_name: IDENT | FORWARD | BACKWARD ;

number:
    INT    { $$ = mk(P, E_INT, $1->loc); $$->ival = $1->ival; $$ = fin(P, $$); }
  | FLOAT  { $$ = mk(P, E_FLOAT, $1->loc); $$->fval = $1->fval; $$->str = $1->str; $$ = fin(P, $$); }
  ;

list_items:
    expr %prec below_SEMI      { $$ = vnew(P, $1); }
  | list_items SEMI expr       { $$ = $1; vec_push(P->a, $$, $3); }
  ;

record_fields:
    record_field                      { $$ = vnew(P, $1); }
  | record_fields SEMI record_field   { $$ = $1; vec_push(P->a, $$, $3); }
  ;

record_field:
    IDENT          { $$ = ANEW(P->a, Field); $$->name = $1->str; $$->loc = $1->loc; }
  | IDENT EQ expr  { $$ = ANEW(P->a, Field); $$->name = $1->str; $$->loc = $1->loc; $$->e = $3; }
  ;

%%

/* Every `let` without a matching `in` (lets and ins pair up like brackets; `for ... in`
 * takes part too) at bracket depth 0 starts a top-level item. `let%op`, `let%cd`,
 * `op`, `open` and `;;` only occur at top level: they close every open bracket, which
 * also keeps an unclosed bracket from swallowing the rest of the file. */
static void flush_lets(Token *t, const int *stack, int sp) {
  for (int k = 0; k < sp; k++)
    if (t[stack[k]].kind == T_LET) t[stack[k]].kind = T_TOPLET;
}

static void classify_lets(Parser *P) {
  Token *t = P->toks.items;
  int n = P->toks.len, depth = 0;
  int *stack = ANEWN(P->a, int, n + 1), sp = 0;
  for (int i = 0; i < n; i++) {
    switch (t[i].kind) {
    case T_LPAREN: case T_LBRACKET: case T_LBRACKBAR: case T_LBRACE: depth++; break;
    case T_RPAREN: case T_RBRACKET: case T_BARRBRACKET: case T_RBRACE: if (depth) depth--; break;
    case T_LET:
      /* Recovery: a `let` in column 1 inside an unclosed bracket starts an item. */
      if (depth && t[i].loc.col == 1) {
        flush_lets(t, stack, sp);
        sp = depth = 0;
      }
      if (!depth) stack[sp++] = i;
      break;
    case T_FOR: if (!depth) stack[sp++] = i; break;
    case T_IN: if (!depth && sp) sp--; break;
    case T_LET_OP: case T_LET_CD: case T_OP: case T_OPEN: case T_SEMISEMI: case T_YYEOF:
      flush_lets(t, stack, sp);
      sp = depth = 0;
      break;
    default: break;
    }
  }
}

int tdslp_lex(TDSLP_STYPE *lval, TDSLP_LTYPE *lloc, Parser *P) {
  /* Past the error limit ("too many errors" is printed), end the input. */
  if (P->d->errors > P->d->max_errors) P->pos = P->toks.len - 1;
  Token *t = &P->toks.items[P->pos];
  P->last = P->pos;
  if (P->pos < P->toks.len - 1) P->pos++;
  lval->tok = t;
  lloc->first_line = lloc->last_line = t->loc.line;
  lloc->first_column = t->loc.col;
  lloc->last_column = t->loc.col + t->len;
  return t->kind;
}

void tdslp_error(TDSLP_LTYPE *lloc, Parser *P, const char *msg) {
  if (!strcmp(msg, "memory exhausted")) msg = "input nested too deeply";
  diag_error(P->d, L(P, *lloc), "%s", msg);
}

/* The token the parser is looking at, for messages. */
static Token *lookahead(Parser *P) { return &P->toks.items[P->last]; }

/* At most 40 bytes of a token's text, control characters escaped: a string literal may
 * span lines, and a raw newline would split the one-line message. */
static const char *token_text(Parser *P, const Token *t) {
  char buf[4 * 40 + 1];
  int n = 0;
  for (int i = 0; i < t->len && i < 40; i++) {
    unsigned char ch = (unsigned char)t->text[i];
    if (ch == '\n') n += snprintf(buf + n, sizeof buf - (size_t)n, "\\n");
    else if (ch < ' ' || ch == 0x7f) n += snprintf(buf + n, sizeof buf - (size_t)n, "\\x%02x", ch);
    else buf[n++] = (char)ch;
  }
  buf[n] = 0;
  return arena_strdup(P->a, buf);
}

static const char *describe(Parser *P, const Token *t) {
  switch (t->kind) {
  case T_YYEOF: return "end of file";
  case T_IDENT: return arena_printf(P->a, "identifier '%s'", t->str);
  case T_INT: case T_FLOAT: return arena_printf(P->a, "number '%s'", t->str);
  case T_STRING: return t->len > 40 ? "string literal" : arena_printf(P->a, "string %s", token_text(P, t));
  case T_CHARLIT: return arena_printf(P->a, "label '%s'", t->str);
  default: return arena_printf(P->a, "'%s'", token_text(P, t));
  }
}

static const char *sym_name(yysymbol_kind_t k) {
  switch (k) {
  case YYSYMBOL_INFIX_POW: case YYSYMBOL_INFIX_MUL: case YYSYMBOL_INFIX_ADD:
  case YYSYMBOL_INFIX_AT: case YYSYMBOL_INFIX_CMP: case YYSYMBOL_BARBAR: case YYSYMBOL_AMPAMP:
    return "an operator";
  case YYSYMBOL_TOPLET: return "'let'";
  default: return yysymbol_name(k);
  }
}

static bool is_closer(yysymbol_kind_t k) {
  switch (k) {
  case YYSYMBOL_RPAREN: case YYSYMBOL_RBRACKET: case YYSYMBOL_BARRBRACKET: case YYSYMBOL_RBRACE:
  case YYSYMBOL_IN: case YYSYMBOL_THEN: case YYSYMBOL_DO: case YYSYMBOL_DONE:
  case YYSYMBOL_ARROW:
    return true;
  default:
    return false;
  }
}

static bool is_opener(int k) {
  return k == T_LPAREN || k == T_LBRACKET || k == T_LBRACKBAR || k == T_LBRACE;
}

static bool is_item_start(int k) {
  return k == T_TOPLET || k == T_LET_OP || k == T_LET_CD || k == T_OP || k == T_OPEN ||
         k == T_SEMISEMI;
}

/* The unclosed bracket before the lookahead, within the current item (or NULL). */
static Token *unclosed_opener(Parser *P) {
  int depth = 0;
  for (int i = P->last - 1; i >= 0; i--) {
    Token *t = &P->toks.items[i];
    if (is_item_start(t->kind)) return NULL;
    if (t->kind == T_RPAREN || t->kind == T_RBRACKET || t->kind == T_BARRBRACKET || t->kind == T_RBRACE)
      depth++;
    else if (is_opener(t->kind) && depth-- == 0)
      return t;
  }
  return NULL;
}

/* "syntax error: unexpected X", plus what was expected when that is short to say:
 * the few acceptable tokens, "an expression", or the one closing token (a missing
 * ')' or 'in'). */
static int yyreport_syntax_error(const yypcontext_t *ctx, Parser *P) {
  Token *t = lookahead(P);
  Loc loc = L(P, *yypcontext_location(ctx));
  enum { N = 96 };
  yysymbol_kind_t exp[N];
  int n = yypcontext_expected_tokens(ctx, exp, N);
  bool want_expr = false, want_let = false, after_operand = false, want_eq = false, top = false;
  bool want_param = false;
  int closers = 0;
  yysymbol_kind_t closer = YYSYMBOL_YYEMPTY;
  for (int i = 0; i < n; i++) {
    if (exp[i] == YYSYMBOL_INT) want_expr = true;
    if (exp[i] == YYSYMBOL_LET) want_let = true;
    if (exp[i] == YYSYMBOL_INFIX_ADD) after_operand = true;
    if (exp[i] == YYSYMBOL_EQ) want_eq = true;
    if (exp[i] == YYSYMBOL_TOPLET) top = true;
    if (exp[i] == YYSYMBOL_OPTLABEL_PUN) want_param = true;
    if (is_closer(exp[i])) closers++, closer = exp[i];
  }
  if (t->kind == T_TOPLET && want_let) {
    diag_error(P->d, loc, "syntax error: 'let' without a matching 'in'");
    return 0;
  }
  if (t->kind == T_YYEOF && P->toks.eof_error) return 0; /* the lexer said why */
  if (t->kind == T_IN && top) {
    diag_error(P->d, loc, "syntax error: unexpected 'in': a top-level binding has no 'in'");
    return 0;
  }
  if (t->kind == T_LET && top) {
    diag_error(P->d, loc, "syntax error: 'let ... in' is not allowed at top level");
    return 0;
  }
  const char *what = describe(P, t);
  if (n > 0 && n <= 4) {
    char buf[256] = "";
    for (int i = 0; i < n; i++) {
      if (i) strcat(buf, i == n - 1 ? " or " : ", ");
      strncat(buf, sym_name(exp[i]), 40);
    }
    diag_error(P->d, loc, "syntax error: unexpected %s, expected %s", what, buf);
  } else if (want_expr && !after_operand) {
    diag_error(P->d, loc, "syntax error: unexpected %s, expected an expression", what);
  } else if (want_param && !want_expr && !want_eq) {
    diag_error(P->d, loc, "syntax error: unexpected %s, expected a parameter", what);
  } else if (want_eq && !after_operand) {
    diag_error(P->d, loc, "syntax error: unexpected %s, expected '='", what);
  } else if (closers == 1) {
    diag_error(P->d, loc, "syntax error: unexpected %s, expected %s", what, sym_name(closer));
    Token *open = unclosed_opener(P);
    if (open && (closer == YYSYMBOL_RPAREN || closer == YYSYMBOL_RBRACKET ||
                 closer == YYSYMBOL_BARRBRACKET || closer == YYSYMBOL_RBRACE))
      diag_note(P->d, open->loc, "to match this '%.*s'", open->len, open->text);
  } else {
    diag_error(P->d, loc, "syntax error: unexpected %s", what);
  }
  return 0;
}

static Program *parse_with(Arena *a, Diag *d, const SrcFile *f, bool pack) {
  int errors = d->errors;
  Parser P = {0};
  P.a = a;
  P.d = d;
  P.f = f;
  P.toks = lex_all(a, d, f, pack);
  classify_lets(&P);
  int rc = tdslp_parse(&P);
  if (rc || d->errors > errors || !P.prog) return NULL;
  return P.prog;
}

/* Packed literals (E_NDLIT) change no meaning, but would change what a syntax error
 * near one says (the token it names, where recovery resumes): the packed parse only
 * counts errors, and a file with any is parsed again token by token, which reports
 * them exactly as without packing. */
Program *parse_program(Arena *a, Diag *d, const SrcFile *f) {
  Diag quiet;
  diag_init(&quiet, NULL);
  quiet.errors = d->errors;
  quiet.max_errors = d->max_errors;
  quiet.suppressed = d->suppressed;
  Program *p = parse_with(a, &quiet, f, true);
  if (p && quiet.errors == d->errors) return p;
  return parse_with(a, d, f, false);
}
