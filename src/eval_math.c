/* eval_math.c: compile-time math on numbers (tdsl(7), SHAPES AND INFERENCE). `sqrt 8.` folds
 * to a float like `2. *. 3.` does; on tensors the same names stay the prelude's
 * operations. floor, ceil, abs, min and max have no tensor meaning: builtins that take
 * numbers only. The table is the only place that knows the functions (in the style of
 * Lua's lcode.c constant folding: one row per operation, one folding routine). */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "eval.h"

typedef enum MathRes { MR_FLOAT, MR_LIKE_ARGS } MathRes; /* result type */

typedef struct MathFn {
  const char *name;
  int nargs;
  PrimOp op;          /* evaluated as the tensor primitive (op_eval), NaN rules included */
  double (*f)(double); /* when op is OP_ID: floor, ceil, abs have no primitive */
  MathRes res;        /* MR_LIKE_ARGS: int when every argument is an int (abs, min, max) */
  bool builtin;       /* installed as a builtin; otherwise a prelude op folded on numbers */
} MathFn;

static const MathFn math_fns[] = {
  {"sqrt", 1, OP_SQRT, NULL, MR_FLOAT, false},   {"exp", 1, OP_EXP, NULL, MR_FLOAT, false},
  {"log", 1, OP_LOG, NULL, MR_FLOAT, false},     {"sin", 1, OP_SIN, NULL, MR_FLOAT, false},
  {"cos", 1, OP_COS, NULL, MR_FLOAT, false},     {"tanh", 1, OP_TANH, NULL, MR_FLOAT, false},
  {"erf", 1, OP_ERF, NULL, MR_FLOAT, false},
  {"floor", 1, OP_ID, floor, MR_FLOAT, true},    {"ceil", 1, OP_ID, ceil, MR_FLOAT, true},
  {"abs", 1, OP_ID, fabs, MR_LIKE_ARGS, true},   {"min", 2, OP_MIN, NULL, MR_LIKE_ARGS, true},
  {"max", 2, OP_MAX, NULL, MR_LIKE_ARGS, true},
};

static const MathFn *math_find(const char *name) {
  for (size_t i = 0; name && i < sizeof math_fns / sizeof math_fns[0]; i++)
    if (!strcmp(math_fns[i].name, name))
      return &math_fns[i];
  return NULL;
}

/* The positional arguments bound to f, in order; false when there are not n of them. */
static bool math_args(Fn *f, int n, Value **out) {
  int k = 0;
  for (int i = 0; i < f->nparams; i++) {
    if (f->params[i]->kind != P_POS)
      continue;
    if (k == n || !f->bound[i])
      return false;
    out[k++] = f->bound[i];
  }
  return k == n;
}

static Value *math_apply(St *st, const MathFn *m, Value **a, Loc loc) {
  bool ints = m->res == MR_LIKE_ARGS;
  for (int i = 0; i < m->nargs; i++)
    ints = ints && a[i]->kind == V_INT;
  if (ints) {
    long long x = a[0]->i, y = m->nargs > 1 ? a[1]->i : 0;
    if (m->nargs == 2)
      return val_int(st, !strcmp(m->name, "min") ? (x < y ? x : y) : (x > y ? x : y), loc);
    if (x == LLONG_MIN) {
      diag_error(&st->c->diag, loc, "integer overflow in a compile-time expression");
      return NULL;
    }
    return val_int(st, x < 0 ? -x : x, loc);
  }
  double x = val_number(a[0]), y = m->nargs == 2 ? val_number(a[1]) : 0.0;
  return val_float(st, m->f ? m->f(x) : op_eval(m->op, x, y, 0.0), loc);
}

Value *fold_math(St *st, Fn *f, Loc loc, bool *done) {
  *done = false;
  const MathFn *m = math_find(f->name);
  /* Only the prelude's operations fold: a user's `op sqrt` keeps its own meaning. */
  if (!m || m->builtin || f->kind != FN_OP || !loc_in_library(st, f->op->loc))
    return NULL;
  Value *a[2];
  if (!math_args(f, m->nargs, a))
    return NULL;
  for (int i = 0; i < m->nargs; i++)
    if (!val_is_number(a[i]))
      return NULL;
  *done = true;
  return math_apply(st, m, a, loc);
}

static Value *bi_math(St *st, Fn *f, const Frame *call, Loc loc) {
  const MathFn *m = math_find(f->name);
  Value *a[2];
  math_args(f, m->nargs, a);
  for (int i = 0; i < m->nargs; i++) {
    if (!val_is_number(a[i])) {
      /* at the application: a variable's value is located where it was defined */
      diag_error(&st->c->diag, loc, "%s expects compile-time numbers, got %s", m->name,
                 val_kind_name(a[i]));
      return NULL;
    }
  }
  return math_apply(st, m, a, loc);
}

void install_math_builtins(St *st) {
  for (size_t i = 0; i < sizeof math_fns / sizeof math_fns[0]; i++)
    if (math_fns[i].builtin)
      builtin_install(st, math_fns[i].name, math_fns[i].nargs == 2 ? "x y" : "x", bi_math);
}
