/* eval_op.c: applying an `op` definition (tdsl(7), DEFINING OPERATIONS) creates a TK_OP
 * tensor, its UpdateStep (from ~logic), and instantiates the forward/backward bodies
 * as %cd code with the slot names bound: t v g (result, slot 0), t1 v1 g1 (slot 1),
 * t2 v2 g2, t3 v3 g3. */
#include "eval.h"

#include <limits.h>
#include <string.h>

static void err_at_spec(St *st, Loc sloc, int col, const char *msg) {
  diag_error(&st->c->diag, spec_error_loc(sloc, col), "bad einsum spec: %s", msg);
}

static bool resolve_coef(St *st, const Frame *call, SpecCoef *c, Loc sloc, int col) {
  if (!c->ident) return true;
  Value *v = env_lookup(call, st, c->ident);
  if (!v && env_poisoned(call, c->ident))
    return false; /* its binding failed: already reported */
  if (!v || v->kind != V_INT) {
    err_at_spec(st, sloc, col,
                arena_printf(st->a, "'%s' must be a compile-time integer in scope%s", c->ident,
                             v ? arena_printf(st->a, ", got %s", val_kind_name(v)) : ""));
    return false;
  }
  if (v->i < 1 || v->i > INT_MAX) { /* never truncated: tdsl(7), SHAPES AND INFERENCE, sizes */
    err_at_spec(st, sloc, col,
                arena_printf(st->a, "'%s' is %lld: a stride or dilation must be from 1 to 2147483647", c->ident, v->i));
    return false;
  }
  c->value = (int)v->i;
  c->ident = NULL;
  return true;
}

/* Replaces stride/dilation identifiers by their values; notes CONV_SCOPE axes. */
static bool resolve_row(St *st, const Frame *call, SpecRow *r, Loc sloc, bool *scope_conv) {
  PtrVec *lists[2] = {&r->left, &r->right};
  for (int l = 0; l < 2; l++)
    for (int i = 0; i < lists[l]->len; i++) {
      SpecAxis *ax = VEC_AT(*lists[l], SpecAxis, i);
      if (ax->kind != AX_AFFINE) continue;
      if (!resolve_coef(st, call, &ax->stride, sloc, ax->col) ||
          !resolve_coef(st, call, &ax->dilation, sloc, ax->col))
        return false;
      /* A literal 0 as stride or dilation (of a kernel) would make every output position (or
       * every kernel tap) read one input cell: refused like a named one, never read as 1. */
      if (ax->stride.value < 1 || (ax->kernel && ax->dilation.value < 1)) {
        err_at_spec(st, sloc, ax->col,
                    arena_printf(st->a, "%s %d of axis %s: a stride or dilation must be from 1 to 2147483647",
                                 ax->stride.value < 1 ? "stride" : "dilation",
                                 ax->stride.value < 1 ? ax->stride.value : ax->dilation.value, ax->name));
        return false;
      }
      if (ax->conv == CONV_SCOPE) *scope_conv = true;
    }
  return true;
}

static bool resolve_spec(St *st, const Frame *call, Spec *sp, Loc sloc, bool *use_padding) {
  bool scope_conv = false;
  SpecSlot *slots[4] = {sp->args[0], sp->args[1], sp->args[2], sp->result};
  for (int s = 0; s < 4; s++) {
    if (!slots[s]) continue;
    if (!resolve_row(st, call, &slots[s]->batch, sloc, &scope_conv) ||
        !resolve_row(st, call, &slots[s]->input, sloc, &scope_conv) ||
        !resolve_row(st, call, &slots[s]->output, sloc, &scope_conv))
      return false;
  }
  *use_padding = false;
  if (scope_conv) {
    Value *v = env_lookup(call, st, "use_padding");
    if (!v || v->kind != V_BOOL) {
      diag_error(&st->c->diag, sloc, "a convolution axis with '+' needs a boolean use_padding in scope");
      return false;
    }
    *use_padding = v->i != 0;
  }
  return true;
}

bool logic_from_value(St *st, const Frame *call, Value *logic, int n, LogicKind *kind,
                      const Spec **spec, bool *use_padding, Loc *spec_loc) {
  *spec = NULL;
  *use_padding = false;
  if (logic->kind != V_STRING) {
    diag_error(&st->c->diag, logic->loc, "~logic must be a string (\".\", \"@\", \"T\" or an einsum spec), got %s",
               val_kind_name(logic));
    return false;
  }
  const char *s = logic->s;
  *spec_loc = logic->loc;
  if (!strcmp(s, ".")) {
    *kind = n <= 1 ? LOGIC_POINTWISE_UN : n == 2 ? LOGIC_POINTWISE_BIN : LOGIC_POINTWISE_TERN;
    return true;
  }
  if (!strcmp(s, "@") || !strcmp(s, "T") || !strcmp(s, "@|")) {
    int want = s[0] == 'T' || s[1] == '|' ? 1 : n == 3 ? 3 : 2;
    if (n != want) {
      diag_error(&st->c->diag, logic->loc, "~logic:\"%s\" needs %d tensor arguments, got %d", s, want, n);
      return false;
    }
    *kind = s[0] == 'T' ? LOGIC_TRANSPOSE : s[1] == '|' ? LOGIC_BATCH_SLICE
          : n == 3 ? LOGIC_COMPOSE_TERN : LOGIC_COMPOSE;
    return true;
  }
  int col = 0;
  const char *msg = NULL;
  Spec *sp = spec_parse(st->a, s, &col, &msg);
  if (!sp) {
    err_at_spec(st, logic->loc, col, msg ? msg : "syntax error");
    return false;
  }
  if (sp->nargs != n) {
    diag_error(&st->c->diag, logic->loc, "the einsum spec \"%s\" has %d argument%s but the operation has %d",
               s, sp->nargs, sp->nargs == 1 ? "" : "s", n);
    if (sp->nargs == 0 && n >= 1)  /* einops' and numpy's "a b -> b a" pasted as a spec */
      diag_note(&st->c->diag, logic->loc, "the result follows '=>' (\"%s\"); '->' separates a shape's input axes "
                "from its output axes (batch|input->output)", n == 1 ? "ARG => RESULT" : n == 2 ? "ARG1; ARG2 => RESULT"
                : "ARG1; ARG2; ARG3 => RESULT");
    /* numpy's "ab,bc" (also with torch's "->ac": both notes) */
    if (n >= 2 && sp->nargs < n && strchr(s, ',') && !strchr(s, ';'))
      diag_note(&st->c->diag, logic->loc, "';' separates the arguments; ',' separates the axes of one "
                "(multi-character mode)");
    return false;
  }
  if (n < 1 || n > 3) {
    diag_error(&st->c->diag, logic->loc, "an einsum spec needs one, two or three tensor arguments");
    return false;
  }
  if (!resolve_spec(st, call, sp, logic->loc, use_padding)) return false;
  *kind = n == 1 ? LOGIC_PERMUTE : LOGIC_EINSUM;
  *spec = sp;
  return true;
}

static Value *slot_val(St *st, Tensor *t, bool grad, int slot, Loc loc) {
  Value *v = val_tensor(st, t, loc);
  v->grad = grad;
  v->slot = slot;
  return v;
}

static Env *bind_slots(St *st, Env *env, OpInst *inst, Loc loc) {
  static const char *names[4][3] = {{"t", "v", "g"}, {"t1", "v1", "g1"}, {"t2", "v2", "g2"}, {"t3", "v3", "g3"}};
  for (int k = 0; k < inst->nslots; k++) {
    env = env_bind(st, env, names[k][0], slot_val(st, inst->slots[k], inst->grad[k], k, loc));
    env = env_bind(st, env, names[k][1], slot_val(st, inst->slots[k], inst->grad[k], k, loc));
    env = env_bind(st, env, names[k][2], slot_val(st, inst->slots[k], true, k, loc));
  }
  return env;
}

static bool body_code(St *st, const Frame *fr, const Expr *body, Code *out, const char *what) {
  Value *v = eval(st, fr, body);
  if (!v) return false;
  if (v->kind == V_CODE) *out = v->code;
  else if (v->kind != V_UNIT) {
    diag_error(&st->c->diag, body->loc, "the %s body of an operation must be code, got %s", what, val_kind_name(v));
    return false;
  }
  return true;
}

Value *op_apply(St *st, Fn *f, const Frame *call, Loc loc) {
  const OpDef *op = f->op;
  Tensor *args[3];
  bool agrad[3] = {false, false, false};
  int n = 0;
  Frame lf = f->fr;
  lf.mode = M_CD;
  lf.decls = NULL;
  for (int i = 0; i < f->nparams; i++) {
    Param *p = f->params[i];
    Value *v = f->bound[i];
    if (p->kind == P_POS) {
      if (n == 3) {
        diag_error(&st->c->diag, p->loc, "an operation takes at most 3 tensor arguments");
        return NULL;
      }
      /* In %cd an argument may be a gradient (`lr *. p.grad`): the body's v_k reads it. */
      agrad[n] = v->kind == V_TENSOR && v->grad && call->mode == M_CD;
      args[n] = agrad[n] ? v->t : to_tensor(st, call, v, loc, arena_printf(st->a, "argument %d of '%s'", n + 1, op->name));
      if (!args[n]) return NULL;
      n++;
      continue;
    }
    if (!v) {
      if (p->deflt) {
        if (!(v = eval(st, &lf, p->deflt))) return NULL;
      } else
        v = val_new(st, V_UNIT, p->loc);
    }
    lf.env = env_bind(st, lf.env, p->name, v);
  }
  if (n == 0) {
    diag_error(&st->c->diag, op->loc, "operation '%s' has no tensor argument", op->name);
    return NULL;
  }
  Value *logic = NULL;
  if (op->logic) {
    if (!(logic = eval(st, &lf, op->logic))) return NULL;
  } else {
    logic = val_new(st, V_STRING, op->loc);
    logic->s = ".";
  }
  LogicKind kind;
  const Spec *spec;
  bool use_padding;
  Loc spec_loc = {0};
  if (!logic_from_value(st, call, logic, n, &kind, &spec, &use_padding, &spec_loc)) return NULL;
  IndexSym *sym = NULL;
  if (kind == LOGIC_BATCH_SLICE) {
    Value *sv = fn_param(f, "sym");
    if (!sv || sv->kind != V_SYM) {
      diag_error(&st->c->diag, loc, "slicing with '%s' needs an index symbol ~sym%s", op->name,
                 sv ? arena_printf(st->a, ", got %s", val_kind_name(sv)) : "");
      return NULL;
    }
    sym = sv->sym;
  }
  bool diff = false;
  for (int k = 0; k < n; k++) diff = diff || args[k]->diff;
  Tensor *t = tensor_new(st, TK_OP, loc);
  t->op_name = op->name;
  if (loc_in_library(st, loc) && st->user_fn && strcmp(st->user_fn, op->name)) t->in_fn = st->user_fn;
  t->diff = call->mode == M_OP && op->backward && diff;
  if (diff && !t->diff)
    t->nodiff = !op->backward ? arena_printf(st->a, "the operation '%s' has no backward code", graph_op_token(op->name))
                              : "it is computed in %cd code (let%cd, an assignment), which does not differentiate: "
                                "compute it in a let%op";
  UpdateStep *s = step_new(st, kind, t, n, args, loc);
  s->spec = spec;
  s->use_padding = use_padding;
  s->sym = sym;
  s->spec_loc = spec_loc;
  t->step = s;
  OpInst *inst = ANEW(st->a, OpInst);
  inst->step = s;
  inst->slots[0] = t;
  for (int k = 0; k < n; k++) {
    inst->slots[k + 1] = args[k];
    inst->grad[k + 1] = agrad[k];
  }
  inst->nslots = n + 1;
  Frame bf = lf;
  bf.env = bind_slots(st, lf.env, inst, loc);
  bf.op = inst;
  bf.decls = ANEW(st->a, DeclScope);
  if (!body_code(st, &bf, op->forward, &t->fwd, "forward")) return NULL;
  if (t->diff && !body_code(st, &bf, op->backward, &t->bwd, "backward")) return NULL;
  return val_tensor(st, t, loc);
}
