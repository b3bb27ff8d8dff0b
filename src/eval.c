/* eval.c: staging core: values, environments, function application, top-level
 * items, `open`, and the prelude/stdlib loading. See eval.h for the file split. */
#include "eval.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- values ---- */

Value *val_new(St *st, VKind k, Loc loc) {
  Value *v = ANEW(st->a, Value);
  v->kind = k;
  v->loc = loc;
  v->slot = -1;
  return v;
}

Value *val_int(St *st, long long i, Loc loc) {
  Value *v = val_new(st, V_INT, loc);
  v->i = i;
  return v;
}

Value *val_float(St *st, double f, Loc loc) {
  Value *v = val_new(st, V_FLOAT, loc);
  v->f = f;
  return v;
}

static Value *val_bool(St *st, bool b, Loc loc) {
  Value *v = val_new(st, V_BOOL, loc);
  v->i = b;
  return v;
}

Value *val_tensor(St *st, Tensor *t, Loc loc) {
  Value *v = val_new(st, V_TENSOR, loc);
  v->t = t;
  return v;
}

Value *val_code(St *st, Loc loc) { return val_new(st, V_CODE, loc); }

const char *val_kind_name(const Value *v) {
  switch (v->kind) {
  case V_UNIT: return "unit";
  case V_INT: return "an integer";
  case V_FLOAT: return "a float";
  case V_BOOL: return "a boolean";
  case V_STRING: return "a string";
  case V_LIST: return "a list";
  case V_TUPLE: return "a tuple";
  case V_ARRAY: return "an array";
  case V_SYM: return "an index symbol";
  case V_DIM: return "a dynamic dimension";
  case V_TENSOR: return "a tensor";
  case V_CODE: return "code";
  case V_FN:
    return v->fn->kind == FN_OP ? "an operation" : "a function";
  case V_CAPTURE: return "a captured einsum label";
  case V_NDLIT: return v->lit->kind[0] == ND_LIST ? "a list" : v->lit->kind[0] == ND_TUPLE ? "a tuple" : "an array";
  }
  return "a value";
}

/* Only a literal used as a list (`for x in`, `@`, dimensions) pays for its elements. */
Value *val_unpack(St *st, Value *v) {
  if (v->kind != V_NDLIT) return v;
  Frame fr = {st->globals, M_OP, NULL, NULL};
  return eval(st, &fr, ndlit_expand(st->a, v->lit));
}

bool val_is_list(const Value *v) {
  return v->kind == V_LIST || (v->kind == V_NDLIT && v->lit->kind[0] == ND_LIST);
}

bool val_is_number(const Value *v) { return v->kind == V_INT || v->kind == V_FLOAT; }
double val_number(const Value *v) { return v->kind == V_INT ? (double)v->i : v->f; }

/* ---- environments ---- */

Env *env_bind(St *st, Env *env, const char *name, Value *v) {
  Env *e = ANEW(st->a, Env);
  e->name = name;
  e->v = v;
  e->next = env;
  return e;
}

void env_bind_global(St *st, const char *name, Value *v, Loc loc) {
  Env *e = env_bind(st, st->globals, name, v);
  e->global = true;
  e->loc = loc;
  e->seq = st->globals && st->globals->global ? st->globals->seq + 1 : 1;
  e->shadowed = strtab_get(&st->global_index, name);
  e->index = &st->global_index;
  strtab_put(st->a, &st->global_index, name, e);
  st->globals = e;
}

/* The top-level binding of name visible from the chain starting at global node g: the
 * newest binding no newer than g (st->globals is only ever prepended to, so the
 * bindings up to g's position are exactly g's chain). */
static Env *global_find(const Env *g, const char *name) {
  Env *e = strtab_get(g->index, name);
  while (e && e->seq > g->seq) e = e->shadowed;
  return e;
}

static Env *capture_lookup(DeclScope *s, const char *name) {
  for (; s; s = s->parent)
    for (Env *e = s->captures; e; e = e->next)
      if (!strcmp(e->name, name)) return e;
  return NULL;
}

static Tensor *decl_lookup(DeclScope *s, const char *name) {
  for (; s; s = s->parent)
    for (int i = s->idents.len - 1; i >= 0; i--)
      if (!strcmp(VEC_AT(s->idents, const char, i), name)) return VEC_AT(s->tensors, Tensor, i);
  return NULL;
}

/* Local bindings first, then the inline declarations in scope (they are hoisted to
 * their scope as in OCANNL), then the top-level bindings. NULL: not bound, or bound by
 * a binding that failed (env_poisoned tells which). */
static Env *env_find(const Frame *fr, const char *name, Tensor **decl) {
  Env *e = fr->env;
  *decl = NULL;
  for (; e && !e->global; e = e->next)
    if (!strcmp(e->name, name)) return e;
  *decl = decl_lookup(fr->decls, name);
  if (*decl) return NULL;
  Env *cap = capture_lookup(fr->decls, name);
  if (cap) return cap;
  return e ? global_find(e, name) : NULL;
}

Value *env_lookup(const Frame *fr, St *st, const char *name) {
  Tensor *t;
  Env *e = env_find(fr, name, &t);
  if (t) return val_tensor(st, t, t->loc);
  return e ? e->v : NULL;
}

bool env_poisoned(const Frame *fr, const char *name) {
  Tensor *t;
  Env *e = env_find(fr, name, &t);
  return e && !e->v;
}

void env_poison(St *st, const char *name) { env_bind_global(st, name, NULL, (Loc){0}); }

/* ---- functions ---- */

Value *fn_param(Fn *f, const char *name) {
  for (int i = 0; i < f->nparams; i++)
    if (f->params[i]->name && !strcmp(f->params[i]->name, name)) return f->bound[i];
  return NULL;
}

static Fn *fn_copy(St *st, const Fn *f) {
  Fn *n = ANEW(st->a, Fn);
  *n = *f;
  n->bound = ANEWN(st->a, Value *, f->nparams > 0 ? f->nparams : 1);
  for (int i = 0; i < f->nparams; i++) n->bound[i] = f->bound[i];
  return n;
}

static bool fn_saturated(const Fn *f) {
  for (int i = 0; i < f->nparams; i++)
    if (!f->bound[i] && f->params[i]->kind != P_OPTIONAL) return false;
  return true;
}

/* The qualifier of inline declarations made after `()`: the ~label argument, parts
 * joined by '.'; each part becomes part of tensor names, so it must be identifier-like. */
static bool label_of(St *st, Fn *f, Loc loc, const char **out) {
  *out = NULL;
  Value *l = fn_param(f, "label");
  for (int i = 0; !l && i < f->nparams; i++) /* ?(label = [ "lenet" ]) left out: its default */
    if (f->params[i]->kind == P_OPTIONAL && f->params[i]->deflt && f->params[i]->name &&
        !strcmp(f->params[i]->name, "label")) {
      Frame fr = f->fr;
      l = eval(st, &fr, f->params[i]->deflt);
      if (!l) return false;
    }
  if (!l) return true;
  Loc at = l->loc.file ? l->loc : loc;
  if (l->kind == V_STRING) {
    *out = l->s;
    return label_ok(st, l->s, at, "the label");
  }
  if (l->kind != V_LIST) return true;
  const char *s = NULL;
  for (int i = 0; i < l->items.len; i++) {
    Value *x = VEC_AT(l->items, Value, i);
    if (x->kind != V_STRING) return true;
    if (!label_ok(st, x->s, x->loc.file ? x->loc : at, "the label")) return false;
    s = s ? arena_printf(st->a, "%s.%s", s, x->s) : x->s;
  }
  *out = s;
  return true;
}

/* Without a ~label, inline declarations after () are qualified by the name of the
 * first named tensor argument after () (sgd_one () p gives "w1.sgd_delta"). */
static void derive_label(Fn *f) {
  DeclScope *s = f->unit_scope;
  if (!s || s->label || fn_param(f, "label")) return;
  bool after = false;
  for (int i = 0; i < f->nparams; i++) {
    if (f->params[i]->kind == P_UNIT) after = true;
    else if (after && f->params[i]->kind == P_POS && f->bound[i] && f->bound[i]->kind == V_TENSOR &&
             f->bound[i]->t->name) {
      s->label = f->bound[i]->t->name;
      return;
    }
  }
}

static Value *call_closure(St *st, Fn *f) {
  Frame fr = f->fr;
  derive_label(f);
  if (f->unit_scope) fr.decls = f->unit_scope;
  for (int i = 0; i < f->nparams; i++) {
    Param *p = f->params[i];
    if (p->kind == P_UNIT || !p->name) continue;
    Value *v = f->bound[i];
    if (!v) {
      if (p->deflt) {
        v = eval(st, &fr, p->deflt);
        if (!v) return NULL;
      } else
        v = val_new(st, V_UNIT, p->loc);
    }
    fr.env = env_bind(st, fr.env, p->name, v);
  }
  return eval(st, &fr, f->body);
}

static Value *fn_call(St *st, Fn *f, const Frame *call, Loc loc) {
  /* Staging has no recursion construct, but `let g f = f f in g g` still loops. */
  if (st->depth >= MAX_CALL_DEPTH) {
    if (st->depth == MAX_CALL_DEPTH) diag_error(&st->c->diag, loc, "compile-time evaluation nests too deeply (endless recursion?)");
    st->depth++;
    return NULL;
  }
  st->depth++;
  int errors = st->c->diag.errors;
  Loc saved_site = st->user_loc;
  const char *saved_user_fn = st->user_fn;
  const Fn *saved_fn = st->calling;
  Loc saved_fn_loc = st->calling_loc;
  if (f->kind == FN_CLOSURE) st->calling = f, st->calling_loc = loc;
  if (loc.file == st->main_file) st->user_loc = loc, st->user_fn = f->name;
  Value *r = NULL;
  bool folded;
  switch (f->kind) {
  case FN_CLOSURE: r = call_closure(st, f); break;
  case FN_OP:
    r = fold_math(st, f, loc, &folded);
    if (!folded) r = op_apply(st, f, call, loc);
    break;
  case FN_BUILTIN: r = f->builtin(st, f, call, loc); break;
  }
  st->user_loc = saved_site;
  st->user_fn = saved_user_fn;
  st->calling = saved_fn;
  st->calling_loc = saved_fn_loc;
  st->depth--;
  /* An error inside a function defined elsewhere (the prelude, the stdlib, an opened
   * file) gets notes leading back to the application in the user's file. */
  if (!r && st->c->diag.errors > errors && st->noted != st->c->diag.errors) {
    const SrcFile *def = f->kind == FN_CLOSURE ? f->body->loc.file : f->kind == FN_OP ? f->op->loc.file : NULL;
    if (def && def != loc.file)
      diag_note(&st->c->diag, loc, "in this application of '%s'", f->name ? f->name : "a function");
    if (loc.file == st->main_file) st->noted = st->c->diag.errors;
  }
  return r;
}

static int find_labeled(Fn *f, const char *label) {
  for (int i = 0; i < f->nparams; i++) {
    Param *p = f->params[i];
    if (!f->bound[i] && (p->kind == P_LABELED || p->kind == P_OPTIONAL) && p->name &&
        !strcmp(p->name, label))
      return i;
  }
  return -1;
}

static int find_positional(Fn *f) {
  for (int i = 0; i < f->nparams; i++)
    if (!f->bound[i] && (f->params[i]->kind == P_POS || f->params[i]->kind == P_UNIT)) return i;
  return -1;
}

/* OCaml-style application: labels match by name, positional arguments fill the first
 * free positional or unit parameter; once every non-optional parameter is bound the
 * function runs and any remaining arguments are applied to its result. Binding the
 * unit parameter opens a fresh scope for inline declarations. */
Value *apply(St *st, Value *fnv, int nargs, Value **args, const Arg **argdesc,
             const Frame *call, Loc loc) {
  if (fnv->kind != V_FN) {
    diag_error(&st->c->diag, loc, "%s is not a function, it cannot be applied", val_kind_name(fnv));
    return NULL;
  }
  Fn *f = fn_copy(st, fnv->fn);
  const char *what = f->name ? f->name : "function";
  /* Uncurried application of an operation: `where (c, a, b)` spreads the tuple over
   * the tensor slots. */
  if (f->kind == FN_OP && nargs == 1 && args[0]->kind == V_TUPLE && (!argdesc[0] || argdesc[0]->kind == A_POS)) {
    int free = 0;
    for (int i = 0; i < f->nparams; i++) free += !f->bound[i] && f->params[i]->kind == P_POS;
    if (free == args[0]->items.len && free > 1) {
      Value **spread = (Value **)args[0]->items.items;
      const Arg **ad = ANEWN(st->a, const Arg *, free);
      return apply(st, fnv, free, spread, ad, call, loc);
    }
  }
  for (int i = 0; i < nargs; i++) {
    const Arg *ad = argdesc[i];
    Loc aloc = ad ? ad->loc : loc;
    int k;
    if (ad && ad->kind != A_POS) {
      k = find_labeled(f, ad->label);
      if (k < 0) {
        diag_error(&st->c->diag, aloc, "'%s' has no parameter ~%s", what, ad->label);
        return NULL;
      }
    } else {
      k = find_positional(f);
      if (k < 0) {
        diag_error(&st->c->diag, aloc, "'%s' is applied to too many arguments", what);
        return NULL;
      }
      if (f->params[k]->kind == P_UNIT && args[i]->kind != V_UNIT) {
        diag_error(&st->c->diag, aloc, "'%s' expects () here, got %s", what, val_kind_name(args[i]));
        return NULL;
      }
    }
    f->bound[k] = args[i];
    if (f->params[k]->kind == P_UNIT && f->kind == FN_CLOSURE) {
      DeclScope *s = ANEW(st->a, DeclScope);
      s->parent = f->fr.decls;
      s->body = f->body;
      if (!label_of(st, f, aloc, &s->label)) return NULL;
      f->unit_scope = s;
    }
    if (fn_saturated(f)) {
      Value *r = fn_call(st, f, call, loc);
      if (!r || i + 1 == nargs) return r;
      return apply(st, r, nargs - i - 1, args + i + 1, argdesc + i + 1, call, loc);
    }
  }
  Value *v = val_new(st, V_FN, loc);
  v->fn = f;
  return v;
}

static Value *make_closure(St *st, const Frame *fr, const char *name, const PtrVec *params,
                           Expr *body, Loc loc) {
  Fn *f = ANEW(st->a, Fn);
  f->kind = FN_CLOSURE;
  f->name = name;
  f->nparams = params->len;
  f->params = (Param **)params->items;
  f->bound = ANEWN(st->a, Value *, params->len > 0 ? params->len : 1);
  f->body = body;
  f->fr = *fr;
  f->loc = loc;
  Value *v = val_new(st, V_FN, loc);
  v->fn = f;
  /* A function whose only parameter is () runs at once when applied; nothing special. */
  return v;
}

/* ---- expressions ---- */

static Value *lookup_op(St *st, const Frame *fr, const char *op, Loc loc) {
  Value *v = env_lookup(fr, st, op);
  if (!v && !env_poisoned(fr, op)) {
    diag_error(&st->c->diag, loc, "operator '%s' is not defined", op);
    /* Python's tensor operators, which compile-time numbers and lists take here */
    static const struct { const char *op, *instead; } py[] = {
        {"@", "matrix multiplication is '*' (outputs of the right meet inputs of the left); '@' appends "
              "compile-time lists"},
        {"**", "'**.' raises a tensor to a compile-time number"},
        {"/", "pointwise division is '/.'; '/' divides compile-time integers"},
        {"%", "'%' is a %cd primitive (a =: b % c); 'mod' takes compile-time integers"},
    };
    for (size_t i = 0; i < sizeof py / sizeof *py; i++)
      if (!strcmp(op, py[i].op)) diag_note(&st->c->diag, loc, "%s", py[i].instead);
  }
  return v;
}

static Value *apply2(St *st, const Frame *fr, Value *fn, Value *a, Value *b, Loc loc) {
  Value *args[2] = {a, b};
  const Arg *ad[2] = {NULL, NULL};
  return apply(st, fn, b ? 2 : 1, args, ad, fr, loc);
}

/* Compile-time folding of binary operators (Lua's getbinopr/constfolding shape): the
 * operator's name gives a BinOpr and the operand kinds it folds for; anything else is
 * left to the operator's tensor meaning. */
typedef enum BinOpr {
  /* ORDER: arithmetic (OPR_ADD..OPR_POW), then comparisons (OPR_LT..OPR_NE) */
  OPR_ADD, OPR_SUB, OPR_MUL, OPR_DIV, OPR_MOD, OPR_POW,
  OPR_LT, OPR_GT, OPR_LE, OPR_GE, OPR_EQ, OPR_NE,
  OPR_AND, OPR_OR, OPR_CONCAT, OPR_APPEND,
} BinOpr;

enum { F_NUM = 1, F_BOOL = 2, F_STR = 4, F_LIST = 8 }; /* operand kinds, both sides */

typedef struct BinOprName {
  const char *name;
  BinOpr opr;
  int kinds;   /* F_* it folds for */
  bool dotted; /* the float form: ints become floats */
} BinOprName;

static const BinOprName binoprs[] = {
    {"+", OPR_ADD, F_NUM, false},   {"+.", OPR_ADD, F_NUM, true},  {"-", OPR_SUB, F_NUM, false},
    {"-.", OPR_SUB, F_NUM, true},   {"*", OPR_MUL, F_NUM, false},  {"*.", OPR_MUL, F_NUM, true},
    {"/", OPR_DIV, F_NUM, false},   {"/.", OPR_DIV, F_NUM, true},  {"mod", OPR_MOD, F_NUM, false},
    {"**", OPR_POW, F_NUM, true},   {"**.", OPR_POW, F_NUM, true}, {"<", OPR_LT, F_NUM, false},
    {">", OPR_GT, F_NUM, false},    {"<=", OPR_LE, F_NUM, false},  {">=", OPR_GE, F_NUM, false},
    {"==", OPR_EQ, F_NUM, false},   {"!=", OPR_NE, F_NUM, false},  {"=", OPR_EQ, F_NUM | F_BOOL | F_STR, false},
    {"<>", OPR_NE, F_NUM | F_BOOL | F_STR, false},                 {"&&", OPR_AND, F_BOOL, false},
    {"||", OPR_OR, F_BOOL, false},  {"^", OPR_CONCAT, F_STR, false}, {"@", OPR_APPEND, F_LIST, false},
};

static const BinOprName *getbinopr(const char *name) {
  for (size_t i = 0; i < sizeof binoprs / sizeof *binoprs; i++)
    if (!strcmp(binoprs[i].name, name)) return &binoprs[i];
  return NULL;
}

static int operand_kinds(const Value *a, const Value *b) {
  if (val_is_number(a) && val_is_number(b)) return F_NUM;
  if (a->kind != b->kind) return 0;
  return a->kind == V_BOOL ? F_BOOL : a->kind == V_STRING ? F_STR : a->kind == V_LIST ? F_LIST : 0;
}

static bool compare(BinOpr opr, double x, double y) {
  switch (opr) {
  case OPR_LT: return x < y;
  case OPR_GT: return x > y;
  case OPR_LE: return x <= y;
  case OPR_GE: return x >= y;
  case OPR_EQ: return x == y;
  default: return x != y;
  }
}

/* Integer arithmetic, checked: NULL after an error (division by zero, overflow). */
static Value *fold_int(St *st, BinOpr opr, long long p, long long q, Loc loc) {
  if ((opr == OPR_DIV || opr == OPR_MOD) && q == 0) {
    diag_error(&st->c->diag, loc, "division by zero in a compile-time expression");
    return NULL;
  }
  long long r = 0;
  bool ovf = opr == OPR_ADD ? __builtin_add_overflow(p, q, &r)
           : opr == OPR_SUB ? __builtin_sub_overflow(p, q, &r)
           : opr == OPR_MUL ? __builtin_mul_overflow(p, q, &r)
           : p == LLONG_MIN && q == -1;
  if (ovf) {
    diag_error(&st->c->diag, loc, "integer overflow in a compile-time expression");
    return NULL;
  }
  if (opr == OPR_DIV) r = p / q;
  else if (opr == OPR_MOD) r = p % q;
  return val_int(st, r, loc);
}

static Value *fold_num(St *st, const BinOprName *o, Value *a, Value *b, Loc loc, bool *err) {
  double x = val_number(a), y = val_number(b);
  if (o->opr >= OPR_LT) return val_bool(st, compare(o->opr, x, y), loc);
  if (a->kind == V_INT && b->kind == V_INT && !o->dotted) {
    Value *v = fold_int(st, o->opr, a->i, b->i, loc);
    *err = !v;
    return v;
  }
  double r = o->opr == OPR_ADD ? x + y : o->opr == OPR_SUB ? x - y : o->opr == OPR_MUL ? x * y
           : o->opr == OPR_DIV ? x / y : o->opr == OPR_MOD ? fmod(x, y) : pow(x, y);
  return val_float(st, r, loc);
}

/* Folds o on compile-time values; returns NULL (no error) when the operands are not
 * foldable so that the operator's tensor meaning applies. */
static Value *fold_binop(St *st, const char *op, Value *a, Value *b, Loc loc, bool *err) {
  *err = false;
  const BinOprName *o = getbinopr(op);
  if (o && (o->kinds & F_LIST) && val_is_list(a) && val_is_list(b)) {
    a = val_unpack(st, a);
    b = val_unpack(st, b);
  }
  int kinds = operand_kinds(a, b);
  if (!o || !(o->kinds & kinds)) return NULL;
  Value *v;
  switch (kinds) {
  case F_NUM: return fold_num(st, o, a, b, loc, err);
  case F_BOOL:
    return val_bool(st, o->opr == OPR_AND ? a->i && b->i : o->opr == OPR_OR ? a->i || b->i
                        : o->opr == OPR_EQ ? a->i == b->i : a->i != b->i, loc);
  case F_STR:
    if (o->opr != OPR_CONCAT) return val_bool(st, (strcmp(a->s, b->s) == 0) == (o->opr == OPR_EQ), loc);
    v = val_new(st, V_STRING, loc);
    v->s = arena_printf(st->a, "%s%s", a->s, b->s);
    return v;
  default: /* F_LIST, OPR_APPEND */
    v = val_new(st, V_LIST, loc);
    for (int i = 0; i < a->items.len; i++) vec_push(st->a, &v->items, a->items.items[i]);
    for (int i = 0; i < b->items.len; i++) vec_push(st->a, &v->items, b->items.items[i]);
    return v;
  }
}

static bool tensorish(const Value *v) {
  return v->kind == V_TENSOR || val_is_number(v) || v->kind == V_LIST || v->kind == V_TUPLE ||
         v->kind == V_ARRAY || v->kind == V_NDLIT;
}

static Value *eval_binop(St *st, const Frame *fr, const Expr *e) {
  Value *a = eval(st, fr, e->a);
  if (!a) return NULL;
  Value *b = eval(st, fr, e->b);
  if (!b) return NULL;
  bool err;
  Value *r = fold_binop(st, e->str, a, b, e->loc, &err);
  if (r || err) return r;
  if (!tensorish(a) || !(tensorish(b) || b->kind == V_SYM)) {
    Value *bad = tensorish(a) ? b : a;
    diag_error(&st->c->diag, bad == a ? e->a->loc : e->b->loc,
               "operator '%s' cannot be applied to %s", e->str, val_kind_name(bad));
    return NULL;
  }
  Value *fn = lookup_op(st, fr, e->str, e->loc);
  if (!fn) return NULL;
  return apply2(st, fr, fn, a, b, e->loc);
}

/* The value of `!. x` / `!.. n`. As in OCaml, `!..` takes an integer: a float there is
 * an error, not truncated (`!..2.5` meaning 2 would be silently wrong). */
bool bang_number(St *st, const char *op, const Value *x, Loc at, Loc loc, double *out) {
  if (!val_is_number(x)) {
    /* Library code reading the user's argument as a number (a **. b with a tensor b:
     * the prelude's !.p): the user's application is what to change, and the operator
     * they wrote is what to name. No "in this application" note then: it is here. */
    if (loc_in_library(st, loc) && st->user_loc.file && st->user_fn) {
      diag_error(&st->c->diag, st->user_loc,
                 "an argument of '%s' must be a compile-time number (the library reads it with '%s'), got %s",
                 graph_op_token(st->user_fn), op, val_kind_name(x));
      st->noted = st->c->diag.errors;
    } else
      diag_error(&st->c->diag, loc, "'%s' expects a compile-time number, got %s", op, val_kind_name(x));
    return false;
  }
  if (op[2] && x->kind != V_INT) {
    diag_error(&st->c->diag, at, "'!..' expects an integer, got %s %g (use '!.' for a float)", val_kind_name(x), val_number(x));
    return false;
  }
  *out = val_number(x);
  return true;
}

static Value *eval_unop(St *st, const Frame *fr, const Expr *e) {
  Value *a = eval(st, fr, e->a);
  if (!a) return NULL;
  const char *op = e->str;
  if (!strcmp(op, "!.") || !strcmp(op, "!..")) {
    double x;
    if (!bang_number(st, op, a, e->loc, e->a->loc, &x)) return NULL;
    Value *v = val_tensor(st, const_scalar(st, x, NULL, e->loc), e->loc);
    v->is_number = true;
    return v;
  }
  if (!strcmp(op, "!@")) {
    if (a->kind != V_SYM) {
      diag_error(&st->c->diag, e->a->loc, "'!@' expects an index symbol, got %s", val_kind_name(a));
      return NULL;
    }
    return val_tensor(st, sym_tensor(st, a->sym, e->loc), e->loc);
  }
  /* "-", "-.", "~-", "~-." */
  if (a->kind == V_INT && strcmp(op, "-.") != 0) {
    if (a->i == LLONG_MIN) { /* as `0 - x` does: not a silent float 9.2e18 */
      diag_error(&st->c->diag, e->loc, "integer overflow in a compile-time expression");
      return NULL;
    }
    return val_int(st, -a->i, e->loc);
  }
  if (val_is_number(a)) return val_float(st, -val_number(a), e->loc);
  if (!tensorish(a)) {
    diag_error(&st->c->diag, e->loc, "cannot negate %s", val_kind_name(a));
    return NULL;
  }
  Value *fn = lookup_op(st, fr, "~-", e->loc);
  if (!fn) return NULL;
  return apply2(st, fr, fn, a, NULL, e->loc);
}

static Value *eval_app(St *st, const Frame *fr, const Expr *e) {
  int n = e->args.len;
  Value **args = ANEWN(st->a, Value *, n > 0 ? n : 1);
  const Arg **ad = ANEWN(st->a, const Arg *, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) {
    const Arg *a = VEC_AT(e->args, Arg, i);
    ad[i] = a;
    args[i] = eval(st, fr, a->e);
    if (!args[i]) return NULL;
  }
  /* `not` on a compile-time boolean is OCaml's not; on tensors it is the prelude op. */
  if (e->a->kind == E_IDENT && !strcmp(e->a->str, "not") && n == 1 && args[0]->kind == V_BOOL)
    return val_bool(st, !args[0]->i, e->loc);
  Value *fn = eval(st, fr, e->a);
  if (!fn) return NULL;
  return apply(st, fn, n, args, ad, fr, e->loc);
}

/* Whether the spec names `name` as an axis label (row == false) or a row variable. */
static bool spec_names(const Spec *sp, const char *name, bool *row) {
  SpecSlot *slots[3] = {sp->args[0], sp->args[1], sp->result};
  for (int j = 0; j < 3; j++) {
    if (!slots[j]) continue;
    for (int k = 0; k < 3; k++) {
      const SpecRow *r = spec_slot_row(slots[j], k);
      if (r->rowvar && !strcmp(r->rowvar, name)) {
        *row = true;
        return true;
      }
      const PtrVec *lists[2] = {&r->left, &r->right};
      for (int l = 0; l < 2; l++)
        for (int i = 0; i < lists[l]->len; i++) {
          const SpecAxis *ax = VEC_AT(*lists[l], SpecAxis, i);
          if (((ax->kind == AX_VAR || ax->kind == AX_AFFINE) && !strcmp(ax->name, name)) ||
              (ax->kind == AX_AFFINE && ax->kernel && !strcmp(ax->kernel, name))) {
            *row = false;
            return true;
          }
        }
    }
  }
  return false;
}

/* Binds a capture in scope sc (and, for a top-level binding's scope, globally). */
static Value *capture_value(St *st, DeclScope *sc, CaptureRef *ref) {
  Value *v = val_new(st, V_CAPTURE, ref->loc);
  v->s = ref->name;
  v->cap = ref;
  if (sc) sc->captures = env_bind(st, sc->captures, ref->name, v);
  if (!sc || sc->toplevel) env_bind_global(st, ref->name, v, ref->loc);
  return v;
}

/* The seed's capture list (`x +* "ij;jk=>ik" ["j"] y`): binds each name to the label or
 * row variable of the einsum's spec, where inline declarations are bound (the enclosing
 * scope; after a top-level binding, every later item), for `dim` and `set_dim`. A name
 * already hoisted into this scope by an earlier use (hoist_capture) is filled in. */
static bool bind_captures(St *st, const Frame *fr, const Expr *e, Value *r) {
  UpdateStep *step = r->kind == V_TENSOR && r->t->step ? r->t->step : NULL;
  if (!step || !step->spec) {
    diag_error(&st->c->diag, e->loc, "'%s' with a capture list must create an einsum (its ~logic a spec)", e->str);
    return false;
  }
  for (int i = 0; i < e->items.len; i++) {
    const Expr *c = VEC_AT(e->items, Expr, i);
    if (c->kind != E_STRING) {
      diag_error(&st->c->diag, c->loc, "an einsum capture list holds strings: the spec's labels to capture");
      return false;
    }
    bool row = false;
    if (!spec_names(step->spec, c->str, &row)) {
      diag_error(&st->c->diag, c->loc, "captured label '%s' does not occur in the einsum spec \"%s\"", c->str,
                 step->spec->text);
      return false;
    }
    CaptureRef *ref = NULL;
    for (Env *b = fr->decls ? fr->decls->captures : NULL; b && !ref; b = b->next)
      if (!strcmp(b->name, c->str) && b->v->cap->step == NULL && b->v->cap->loc.line == c->loc.line &&
          b->v->cap->loc.col == c->loc.col && b->v->cap->loc.file == c->loc.file)
        ref = b->v->cap;
    if (ref) {
      ref->step = step;
      ref->row = row;
      continue;
    }
    ref = ANEW(st->a, CaptureRef);
    ref->step = step, ref->name = c->str, ref->row = row, ref->loc = c->loc;
    capture_value(st, fr->decls, ref);
  }
  return true;
}

/* The first capture of `name` in e's subtree, in source order (NULL if none). */
static const Expr *find_capture(const Expr *e, const char *name, const Expr **einsum) {
  if (!e) return NULL;
  if (e->kind == E_EINSUM)
    for (int i = 0; i < e->items.len; i++) {
      const Expr *c = VEC_AT(e->items, Expr, i);
      if (c->kind == E_STRING && !strcmp(c->str, name)) {
        *einsum = e;
        return c;
      }
    }
  const Expr *kids[3] = {e->a, e->b, e->c};
  const Expr *f;
  for (int i = 0; i < 3; i++)
    if ((f = find_capture(kids[i], name, einsum))) return f;
  if (e->kind != E_EINSUM)
    for (int i = 0; i < e->items.len; i++)
      if ((f = find_capture(VEC_AT(e->items, Expr, i), name, einsum))) return f;
  for (int i = 0; i < e->args.len; i++)
    if ((f = find_capture(VEC_AT(e->args, Arg, i)->e, name, einsum))) return f;
  for (int i = 0; i < e->bindings.len; i++)
    if ((f = find_capture(VEC_AT(e->bindings, Binding, i)->body, name, einsum))) return f;
  for (int i = 0; i < e->fields.len; i++)
    if ((f = find_capture(VEC_AT(e->fields, Field, i)->e, name, einsum))) return f;
  return NULL;
}

/* An unbound identifier that an einsum of the enclosing scope captures: as OCANNL hoists
 * captures with the inline declarations, it is bound from the start of the scope (so
 * `set_dim wh 2` may precede the einsum capturing wh); the einsum fills it in. Whether
 * it is a row variable is read from the spec when it is a literal. */
static Value *hoist_capture(St *st, const Frame *fr, const char *name) {
  for (DeclScope *sc = fr->decls; sc; sc = sc->parent) {
    const Expr *es = NULL, *c = find_capture(sc->body, name, &es);
    if (!c) continue;
    CaptureRef *ref = ANEW(st->a, CaptureRef);
    ref->name = c->str, ref->loc = c->loc;
    if (es->c && es->c->kind == E_STRING) {
      int col = 0;
      const char *msg = NULL;
      Spec *sp = spec_parse(st->a, es->c->str, &col, &msg);
      bool row = false;
      if (sp && spec_names(sp, name, &row)) ref->row = row;
    }
    return capture_value(st, sc, ref);
  }
  return NULL;
}

static Value *eval_einsum(St *st, const Frame *fr, const Expr *e) {
  Value *spec = eval(st, fr, e->c);
  if (!spec) return NULL;
  Value *a = eval(st, fr, e->a);
  if (!a) return NULL;
  Value *b = NULL;
  if (e->b && !(b = eval(st, fr, e->b))) return NULL;
  /* `a +* b "spec"` where b is an identifier can reach us with b and the spec
   * swapped (the parser cannot tell `a +* spec_ident b` from it): trust the values. */
  if (spec->kind != V_STRING && b && b->kind == V_STRING) {
    Value *tmp = spec;
    spec = b;
    b = tmp;
  }
  if (spec->kind != V_STRING) {
    diag_error(&st->c->diag, e->c->loc, "an einsum spec must be a string, got %s", val_kind_name(spec));
    return NULL;
  }
  Value *fn = lookup_op(st, fr, e->str, e->loc);
  if (!fn) return NULL;
  Arg *sa = ANEW(st->a, Arg);
  sa->kind = A_LABELED;
  sa->label = "spec";
  sa->loc = e->c->loc;
  Value *args[3] = {spec, a, b};
  const Arg *ad[3] = {sa, NULL, NULL};
  Value *r = apply(st, fn, b ? 3 : 2, args, ad, fr, e->loc);
  if (!r || !e->items.len) return r;
  return bind_captures(st, fr, e, r) ? r : NULL;
}

static Value *eval_let(St *st, const Frame *fr, const Expr *e) {
  Env *env = fr->env;
  for (int i = 0; i < e->bindings.len; i++) {
    const Binding *b = VEC_AT(e->bindings, Binding, i);
    Value *v = b->params.len ? make_closure(st, fr, b->name, &b->params, b->body, b->loc)
                             : eval(st, fr, b->body);
    if (!v) return NULL;
    if (v->kind == V_DIM && b->name && !runtime_sym_name(st, v, b->name, b->loc)) return NULL;
    if (b->name) env = env_bind(st, env, b->name, v);
  }
  Frame in = *fr;
  in.env = env;
  return eval(st, &in, e->a);
}

static Value *eval_if(St *st, const Frame *fr, const Expr *e) {
  Value *c = eval(st, fr, e->a);
  if (!c) return NULL;
  if (c->kind != V_BOOL) {
    diag_error(&st->c->diag, e->a->loc, "the condition of 'if' must be a compile-time boolean, got %s",
               val_kind_name(c));
    return NULL;
  }
  if (c->i) return eval(st, fr, e->b);
  if (e->c) return eval(st, fr, e->c);
  return val_new(st, V_UNIT, e->loc);
}

/* The parameters a partial application still needs, as the user would write them
 * ("~learning_rate", "a positional argument"), for messages. */
static const char *fn_missing(St *st, const Fn *f) {
  const char *out = NULL;
  for (int i = 0; i < f->nparams; i++) {
    const Param *p = f->params[i];
    if (f->bound[i] || p->kind == P_OPTIONAL) continue;
    const char *one = p->kind == P_LABELED ? arena_printf(st->a, "~%s", p->name)
                    : p->kind == P_UNIT    ? "()"
                    : p->name             ? arena_printf(st->a, "the argument %s", p->name)
                                          : "an argument";
    out = out ? arena_printf(st->a, "%s, %s", out, one) : one;
  }
  return out ? out : "more arguments";
}

/* Whether f is applied to all its positional arguments and lacks only labeled ones:
 * a forgotten ~learning_rate, not currying (sgd_update ~learning_rate:0.1 waits for
 * its loss on purpose). */
static bool fn_lacks_labels(const Fn *f) {
  bool applied = false, lacks = false;
  for (int i = 0; i < f->nparams; i++) {
    ParamKind k = f->params[i]->kind;
    if (f->bound[i]) applied = true;
    else if (k == P_POS || k == P_UNIT) return false;
    else if (k == P_LABELED) lacks = true;
  }
  return applied && lacks;
}

/* e1; e2; ...: code items are concatenated; otherwise the last value is the result. */
static Value *eval_seq(St *st, const Frame *fr, const Expr *e) {
  Value *code = NULL, *last = NULL;
  for (int i = 0; i < e->items.len; i++) {
    const Expr *item = VEC_AT(e->items, Expr, i);
    last = eval(st, fr, item);
    if (!last) return NULL;
    /* A sequence keeps only code: a function here is an application missing an
     * argument (`sgd_update loss` without ~learning_rate), which would otherwise
     * vanish from the routine without a word. OCaml warns about it too. */
    if (last->kind == V_FN) {
      const Fn *f = last->fn;
      if (f->name)
        diag_error(&st->c->diag, item->loc, "this application of '%s' lacks %s: it gives a function, not code",
                   f->name, fn_missing(st, f));
      else
        diag_error(&st->c->diag, item->loc, "this is a function, not code: it still needs %s", fn_missing(st, f));
      return NULL;
    }
    if (last->kind == V_CODE) {
      if (!code) code = val_code(st, e->loc);
      code_append(st, &code->code, &last->code);
    }
  }
  return code ? code : last;
}

static Value *eval_items(St *st, const Frame *fr, const Expr *e, VKind k) {
  Value *v = val_new(st, k, e->loc);
  for (int i = 0; i < e->items.len; i++) {
    Value *x = eval(st, fr, VEC_AT(e->items, Expr, i));
    if (!x) return NULL;
    vec_push(st->a, &v->items, x);
  }
  return v;
}

static Value *eval_for(St *st, const Frame *fr, const Expr *e) {
  Value *l = eval(st, fr, e->a);
  if (!l) return NULL;
  l = val_unpack(st, l);
  if (l->kind != V_LIST && l->kind != V_ARRAY) {
    diag_error(&st->c->diag, e->a->loc, "'for' needs a list, got %s", val_kind_name(l));
    return NULL;
  }
  Value *code = val_code(st, e->loc);
  for (int i = 0; i < l->items.len; i++) {
    Frame in = *fr;
    in.env = env_bind(st, fr->env, e->str, VEC_AT(l->items, Value, i));
    if (!eval_code_body(st, &in, e->b, &code->code, "'for'")) return NULL;
  }
  return code;
}

/* After "unknown identifier": a name used in its own definition (there is no let rec:
 * a PyTorch user's recursive helper, or `let%op y = y + 1`), else the nearest name in
 * scope (a typo of grad_update). */
static void note_unknown(St *st, const Frame *fr, const Expr *e) {
  const char *name = e->str;
  /* v3 in an op of two arguments: the slots follow the argument count */
  if (fr->op && strchr("tvg", name[0]) && name[1] >= '1' && name[1] <= '9' && !name[2]) {
    int n = fr->op->nslots - 1;
    if (n >= 1)
      diag_note(&st->c->diag, e->loc, "this operation has %d argument%s: its slots are t, v, g%s", n, n == 1 ? "" : "s",
                n == 1 ? ", t1, v1, g1" : n == 2 ? ", t1, v1, g1, t2, v2, g2" : ", t1..t3, v1..v3, g1..g3");
    return;
  }
  if (st->calling && st->calling->name && !strcmp(st->calling->name, name)) {
    diag_note(&st->c->diag, st->calling->loc.file ? st->calling->loc : st->calling->body->loc,
              "'%s' is defined here: a function does not see its own name in its body (tdsl has no let rec)", name);
    return;
  }
  if (st->defining && st->defining->name && !strcmp(st->defining->name, name)) {
    diag_note(&st->c->diag, st->defining->loc,
              "'%s' is being defined here: a binding is not visible in its own definition (tdsl has no let rec)",
              name);
    return;
  }
  /* used above its top-level binding (a routine calling one defined further down) */
  const Program *p = st->program;
  for (int i = 0; p && p->file == e->loc.file && i < p->items.len; i++) {
    const Item *it = VEC_AT(p->items, Item, i);
    for (int j = 0; j < it->bindings.len; j++) {
      const Binding *b = VEC_AT(it->bindings, Binding, j);
      if (b->name && !strcmp(b->name, name) && b->loc.line > e->loc.line) {
        diag_note(&st->c->diag, b->loc, "'%s' is bound further down: a name is visible only after its binding", name);
        return;
      }
    }
  }
  /* a name of one or two letters is near too many others (q and eq, aa and a) */
  if (strlen(name) < 3) return;
  const char *best = NULL;
  int best_d = INT_MAX;
  for (const Env *v = fr->env; v; v = v->next) {
    bool ident = v->name && (isalpha((unsigned char)v->name[0]) || v->name[0] == '_'); /* not an operator */
    if (ident && v->v && diag_near(st->a, name, v->name, &best_d)) best = v->name;
  }
  for (const DeclScope *s = fr->decls; s; s = s->parent)
    for (int i = 0; i < s->idents.len; i++) {
      const char *id = VEC_AT(s->idents, const char, i);
      if (id && diag_near(st->a, name, id, &best_d)) best = id;
    }
  if (best) diag_note(&st->c->diag, e->loc, "did you mean '%s'?", best);
}

Value *eval(St *st, const Frame *fr, const Expr *e) {
  switch (e->kind) {
  case E_INT: return val_int(st, e->ival, e->loc);
  case E_FLOAT: return val_float(st, e->fval, e->loc);
  case E_BOOL: return val_bool(st, e->ival != 0, e->loc);
  case E_UNIT: return val_new(st, V_UNIT, e->loc);
  case E_STRING: {
    Value *v = val_new(st, V_STRING, e->loc);
    v->s = e->str;
    return v;
  }
  case E_IDENT: {
    Value *v = env_lookup(fr, st, e->str);
    if (!v && !env_poisoned(fr, e->str)) v = hoist_capture(st, fr, e->str);
    if (!v && !env_poisoned(fr, e->str)) {
      diag_error(&st->c->diag, e->loc, "unknown identifier '%s'", e->str);
      /* OCANNL's run-time random numbers (uniform_at !@step in %cd code) have no tdsl form */
      static const char *const at[] = {"uniform_at", "uniform_at1", "normal_at", "normal_at1"};
      bool ocannl = false;
      for (size_t i = 0; i < sizeof at / sizeof *at; i++)
        if (!strcmp(e->str, at[i])) {
          ocannl = true;
          diag_note(&st->c->diag, e->loc,
                    "tdsl has no random numbers drawn by a routine from a counter (OCANNL's %s): uniform () and "
                    "normal () are initializers, drawn once per cell when init runs", e->str);
        }
      if (!ocannl) note_unknown(st, fr, e);
    }
    if (v && v->kind == V_DIM) { /* misuse errors point at the use, not at `dim ()` */
      Value *u = val_new(st, V_DIM, e->loc);
      u->dsym = v->dsym;
      return u;
    }
    return v;
  }
  case E_LABELED_NUM: {
    Value *n = eval(st, fr, e->a);
    if (!n || !label_ok(st, e->str, e->loc, "the dimension label")) return NULL;
    Value *v = val_tensor(st, const_scalar(st, val_number(n), e->str, e->loc), e->loc);
    v->is_number = true;
    return v;
  }
  case E_APP: return eval_app(st, fr, e);
  case E_BINOP: return eval_binop(st, fr, e);
  case E_EINSUM: return eval_einsum(st, fr, e);
  case E_UNOP: return eval_unop(st, fr, e);
  case E_FUN: return make_closure(st, fr, NULL, &e->params, e->a, e->loc);
  case E_LET: return eval_let(st, fr, e);
  case E_IF: return eval_if(st, fr, e);
  case E_SEQ: return eval_seq(st, fr, e);
  case E_TUPLE: return eval_items(st, fr, e, V_TUPLE);
  case E_LIST: return eval_items(st, fr, e, V_LIST);
  case E_ARRAY: return eval_items(st, fr, e, V_ARRAY);
  case E_RECORD: return eval_record(st, fr, e);
  case E_FIELD: return eval_field(st, fr, e);
  case E_ASSIGN: return eval_assign(st, fr, e);
  case E_FOR: return eval_for(st, fr, e);
  case E_COMMENT: return eval_comment(st, fr, e);
  case E_OPREF: return lookup_op(st, fr, e->str, e->loc);
  case E_DYNDIM: return val_dyndim(st, e->loc);
  case E_NDLIT: {
    Value *v = val_new(st, V_NDLIT, e->loc);
    v->lit = e->lit;
    return v;
  }
  }
  diag_error(&st->c->diag, e->loc, "cannot evaluate this expression");
  return NULL;
}

/* ---- top level ---- */

static bool eval_program(St *st, const Program *p);

/* A top-level binding's result: tensors take the binding's name (or get an alias),
 * %cd code becomes an exported routine, index symbols are named. */
static Value *finish_binding(St *st, ItemKind kind, const Binding *b, Value *v, int first_tensor) {
  if (kind != I_LET && (v->kind == V_LIST || v->kind == V_TUPLE || v->kind == V_ARRAY || v->kind == V_NDLIT)) {
    Frame fr = {st->globals, kind == I_LET_CD ? M_CD : M_OP, NULL, NULL};
    Tensor *t = to_tensor(st, &fr, v, b->loc, "the value of this binding");
    if (!t) return NULL;
    v = val_tensor(st, t, v->loc);
  }
  if (v->kind == V_TENSOR && !v->grad && b->name) {
    Tensor *t = v->t;
    if (kind == I_LET_CD && t->id >= first_tensor && t->kind == TK_OP) {
      if (t->diff) t->nodiff = "let%cd binds it: a let%cd names a non-differentiable tensor (let%op keeps the gradient)";
      t->diff = false; /* a let%cd names a non-differentiable tensor */
      t->bwd.asgns.len = 0;
    }
    if (!t->name) {
      name_tensor(st, t, b->name, NULL);
      if (strcmp(t->name, b->name) != 0) add_name(st, b->name, t); /* rebinding: alias */
    } else if (strcmp(t->name, b->name) != 0) add_name(st, b->name, t);
  } else if (v->kind == V_CODE && kind == I_LET_CD && b->name) {
    if (!strcmp(b->name, "init")) {
      diag_error(&st->c->diag, b->loc,
                 "a routine cannot be named 'init': the compiler exports init itself (it initializes the "
                 "parameters, constants and file tensors)");
      return NULL;
    }
    /* A rebound name means its last binding, as in OCaml (and as for tensors): the
     * earlier routine of that name is no longer exported, so --call and tdsl_call run
     * the new one (the first one used to win the lookup). Code is staged by value, so
     * nothing refers to the Routine being dropped. */
    PtrVec *rs = &st->g->routines;
    for (int i = 0; i < rs->len; i++)
      if (!strcmp(VEC_AT(*rs, Routine, i)->name, b->name)) {
        memmove(&rs->items[i], &rs->items[i + 1], (size_t)(rs->len - i - 1) * sizeof rs->items[0]);
        rs->len--;
        break;
      }
    Routine *r = ANEW(st->a, Routine);
    r->name = b->name;
    r->code = v->code;
    r->loc = b->loc;
    vec_push(st->a, &st->g->routines, r);
  } else if (v->kind == V_FN && kind != I_LET && b->name && !b->params.len && fn_lacks_labels(v->fn)) {
    /* `let%cd step = sgd_update loss`: a routine missing a labeled argument would be a
     * function, silently not exported. A function written as one (fun x -> ...), a
     * name for a library function (let%cd upd = sgd_update) or a curried one stays a
     * function. */
    diag_error(&st->c->diag, v->loc, "this application of '%s' lacks %s: it gives a function, not %s",
               v->fn->name ? v->fn->name : "a function", fn_missing(st, v->fn), kind == I_LET_CD ? "code" : "a tensor");
    if (kind == I_LET_CD)
      diag_note(&st->c->diag, b->loc, "only code is exported as a routine; '%s' would be a function", b->name);
    return NULL;
  } else if (v->kind == V_CODE && kind == I_LET_OP && b->name) {
    /* let%op makes tensors: code bound there is neither exported nor differentiated,
     * so a routine written with the wrong extension would silently be missing from
     * the model. */
    diag_error(&st->c->diag, b->loc, "'%s' is code, but let%%op binds tensors and tensor functions", b->name);
    diag_note(&st->c->diag, b->loc, "write let%%cd %s = ... to make it a routine of the model", b->name);
    return NULL;
  } else if ((v->kind == V_SYM || v->kind == V_DIM) && b->name && !runtime_sym_name(st, v, b->name, b->loc)) {
    return NULL;
  }
  return v;
}

static bool eval_let_item(St *st, const Item *it) {
  Mode mode = it->kind == I_LET_CD ? M_CD : M_OP;
  Env *outer = st->globals;
  Value **vals = ANEWN(st->a, Value *, it->bindings.len > 0 ? it->bindings.len : 1);
  bool ok = true;
  for (int i = 0; i < it->bindings.len; i++) {
    const Binding *b = VEC_AT(it->bindings, Binding, i);
    DeclScope *scope = ANEW(st->a, DeclScope);
    scope->toplevel = true;
    scope->body = b->body;
    st->emitted.len = 0;
    Frame fr = {outer, mode, scope, NULL};
    int first = st->g->tensors.len;
    st->defining = b;
    Value *v = b->params.len ? make_closure(st, &fr, b->name, &b->params, b->body, b->loc)
                             : eval(st, &fr, b->body);
    st->defining = NULL;
    if (v) v = finish_binding(st, it->kind, b, v, first);
    if (!v) {
      ok = false;
      if (diag_full(&st->c->diag)) return false;
      continue;
    }
    vals[i] = v;
  }
  for (int i = 0; i < it->bindings.len; i++) {
    const Binding *b = VEC_AT(it->bindings, Binding, i);
    if (!b->name) continue;
    /* A failed binding is bound to nothing: later uses fail without more errors. */
    env_bind_global(st, b->name, vals[i], b->loc);
  }
  return ok;
}

static bool readable(const char *path) { return access(path, R_OK) == 0; }

static const char *dir_of(St *st, const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return ".";
  return arena_strndup(st->a, path, (size_t)(slash - path));
}

static const char *file_key(St *st, const char *path) {
  char *real = realpath(path, NULL);
  const char *key = real ? arena_strdup(st->a, real) : path;
  free(real);
  return key;
}

static int key_index(const PtrVec *v, const char *key) {
  for (int i = 0; i < v->len; i++)
    if (!strcmp(VEC_AT(*v, const char, i), key)) return i;
  return -1;
}

/* `open` of a file being loaded (the user's file, or one whose items are still being
 * evaluated): the chain of opens from it back to itself. */
static void report_cycle(St *st, int from, const char *key, Loc loc) {
  const char *chain = NULL;
  for (int i = from; i < st->loading.len; i++) {
    const char *k = VEC_AT(st->loading, const char, i);
    chain = chain ? arena_printf(st->a, "%s -> %s", chain, k) : k;
  }
  diag_error(&st->c->diag, loc, "cycle of opens: %s -> %s", chain, key);
}

/* Each file is evaluated once: a second `open` of it does nothing (tdsl(7), SHAPES AND INFERENCE). */
static bool load_file(St *st, const char *path, Loc loc) {
  const char *key = file_key(st, path);
  int cyc = key_index(&st->loading, key);
  if (cyc >= 0) {
    report_cycle(st, cyc, key, loc);
    return false;
  }
  if (key_index(&st->opened, key) >= 0) return true;
  vec_push(st->a, &st->opened, (void *)key);
  /* A FIFO would block the compiler until some process writes it (for ever, in a
   * build); the input file itself may be one (`tdslc <(gen)`), an opened library not. */
  struct stat sb;
  if (stat(path, &sb) == 0 && (S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode))) {
    diag_error(&st->c->diag, loc, "cannot read '%s': not a regular file (a pipe or socket)", path);
    return false;
  }
  SrcFile *f = ctx_read_file(st->c, path);
  if (!f) {
    diag_error(&st->c->diag, loc, "cannot read '%s': %s", path, strerror(errno));
    return false;
  }
  Program *p = parse_program(st->a, &st->c->diag, f);
  if (!p) return false;
  const SrcFile *saved = st->file;
  vec_push(st->a, &st->loading, (void *)key);
  bool ok = eval_program(st, p);
  st->loading.len--;
  st->file = saved;
  return ok;
}

static bool eval_open(St *st, const Item *it) {
  const char *name = it->path;
  PtrVec cands = {0};
  if (name[0] == '/') vec_push(st->a, &cands, (void *)name);
  else {
    if (st->file) vec_push(st->a, &cands, arena_printf(st->a, "%s/%s", dir_of(st, st->file->path), name));
    for (int i = 0; i < st->c->opt.include_dirs.len; i++)
      vec_push(st->a, &cands, arena_printf(st->a, "%s/%s", VEC_AT(st->c->opt.include_dirs, char, i), name));
    if (st->stdlib_dir) vec_push(st->a, &cands, arena_printf(st->a, "%s/%s", st->stdlib_dir, name));
  }
  for (int i = 0; i < cands.len; i++)
    if (readable(VEC_AT(cands, char, i))) return load_file(st, VEC_AT(cands, char, i), it->loc);
  diag_error(&st->c->diag, it->loc, "cannot find '%s' to open", name);
  diag_note(&st->c->diag, it->loc, "searched the file's directory, the -I directories and the standard library");
  /* `open "nn"`: a file name without its extension; `open "Nn_blocks"`: OCANNL's module */
  size_t n = strlen(name);
  if (n < 5 || strcmp(name + n - 5, ".tdsl") != 0) {
    for (int i = 0; i < cands.len; i++)
      if (readable(arena_printf(st->a, "%s.tdsl", VEC_AT(cands, char, i)))) {
        diag_note(&st->c->diag, it->loc, "did you mean '%s.tdsl'? open takes a file name", name);
        return false;
      }
    if (isupper((unsigned char)name[0]) && !strchr(name, '.') && !strchr(name, '/'))
      diag_note(&st->c->diag, it->loc, "open takes a file name, not an OCaml module (OCANNL's Nn_blocks is \"nn.tdsl\")");
  }
  return false;
}

static bool eval_opdef(St *st, const Item *it) {
  const OpDef *op = it->op;
  Fn *f = ANEW(st->a, Fn);
  f->kind = FN_OP;
  f->name = op->name;
  f->op = op;
  f->nparams = op->params.len;
  f->params = (Param **)op->params.items;
  f->bound = ANEWN(st->a, Value *, f->nparams > 0 ? f->nparams : 1);
  f->fr.env = st->globals;
  f->fr.mode = M_CD;
  for (int i = 0; i < f->nparams; i++)
    if (f->params[i]->kind == P_UNIT) {
      diag_error(&st->c->diag, f->params[i]->loc, "an operation cannot take a () parameter");
      return false;
    }
  Value *v = val_new(st, V_FN, it->loc);
  v->fn = f;
  env_bind_global(st, op->name, v, it->loc);
  return true;
}

static bool eval_program(St *st, const Program *p) {
  bool ok = true;
  const Program *outer = st->program;
  st->program = p;
  st->file = p->file;
  for (int i = 0; i < p->items.len && !diag_full(&st->c->diag); i++) {
    const Item *it = VEC_AT(p->items, Item, i);
    bool r = true;
    switch (it->kind) {
    case I_LET: case I_LET_OP: case I_LET_CD: r = eval_let_item(st, it); break;
    case I_OPEN: r = eval_open(st, it); st->file = p->file; break;
    case I_OPDEF: r = eval_opdef(st, it); break;
    }
    ok = ok && r;
  }
  st->program = outer;
  return ok;
}

/* What a top-level value is, for the driver's messages about names (TopName). */
static const char *topname_what(const Value *v) {
  switch (v->kind) {
  case V_INT: case V_FLOAT: return "a compile-time number";
  case V_BOOL: return "a compile-time boolean";
  case V_STRING: return "a compile-time string";
  case V_LIST: return "a compile-time list";
  case V_TUPLE: return "a compile-time tuple";
  case V_ARRAY: return "a compile-time array";
  case V_NDLIT: return v->lit->kind[0] == ND_LIST ? "a compile-time list" : "a compile-time array";
  case V_UNIT: return "the unit value ()";
  default: return val_kind_name(v);
  }
}

/* Graph.topnames: the newest binding of each top-level name, unless it is a tensor
 * (the model has those by name). */
static void record_topnames(St *st) {
  for (Env *e = st->globals; e; e = e->next) {
    if (!e->global || !e->v || strtab_get(&st->global_index, e->name) != e) continue;
    Value *v = e->v;
    if (v->kind == V_TENSOR && !v->grad) continue;
    TopName *n = ANEW(st->a, TopName);
    n->name = e->name;
    n->loc = e->loc;
    n->what = topname_what(v);
    switch (v->kind) {
    case V_SYM: n->kind = TOPNAME_INDEX; break;
    case V_DIM: n->kind = TOPNAME_DIM; break;
    case V_FN: n->kind = TOPNAME_FUNCTION; break;
    case V_TENSOR:
      n->kind = TOPNAME_GRAD;
      n->t = v->t;
      n->what = v->t->name ? arena_printf(st->a, "the gradient %s.grad", v->t->name) : "a gradient";
      break;
    case V_CODE: {
      /* Exported when the name is a routine of the graph (a let%cd without parameters). */
      n->kind = TOPNAME_CODE;
      for (int i = 0; i < st->g->routines.len; i++)
        if (!strcmp(VEC_AT(st->g->routines, Routine, i)->name, e->name)) n->kind = TOPNAME_ROUTINE;
      n->what = n->kind == TOPNAME_ROUTINE ? "a routine" : "code";
      break;
    }
    default: n->kind = TOPNAME_VALUE; break;
    }
    vec_push(st->a, &st->g->topnames, n);
  }
}

Graph *stage_program(Ctx *c, const Program *p) {
  St st0, *st = &st0;
  memset(st, 0, sizeof *st);
  st->c = c;
  st->a = &c->arena;
  st->g = ANEW(st->a, Graph);
  st->stdlib_dir = ctx_stdlib_dir(c);
  install_builtins(st);
  Loc none = {0};
  if (!st->stdlib_dir) {
    diag_error(&c->diag, none, "cannot find prelude.tdsl (the standard library directory)");
    return NULL;
  }
  if (!load_file(st, arena_printf(st->a, "%s/prelude.tdsl", st->stdlib_dir), none)) return NULL;
  if (!load_file(st, arena_printf(st->a, "%s/stdlib.tdsl", st->stdlib_dir), none)) return NULL;
  st->main_file = p->file;
  const char *key = file_key(st, p->file->path);
  vec_push(st->a, &st->opened, (void *)key);
  vec_push(st->a, &st->loading, (void *)key);
  if (!eval_program(st, p) || c->diag.errors) return NULL;
  alias_unqualified(st);
  record_topnames(st);
  return st->g;
}
