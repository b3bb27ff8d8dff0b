/* graph_print.c: the stable text form of --dump-graph.
 *
 *   tensor #ID NAME: KIND [diff] init=INIT decl b=ROW i=ROW o=ROW
 *     step #S KIND (ARGS) [spec="..."] [sym=NAME] [padding]
 *     fwd:  ASSIGNMENTS
 *     bwd:  ASSIGNMENTS
 *   step #S KIND lhs=NAME (ARGS) ...      (steps no tensor owns: %cd assignments, ...)
 *   routine NAME:
 *     ASSIGNMENTS
 *   name NAME = TENSOR                    (Graph.names, in order)
 *   sym NAME range=N
 *
 * An assignment prints as `LHS ACCUM RHS @stepS`, e.g. `y =:+ (mul v1[w] v2[x]) @step3`;
 * operands are slot-named (v/g = slot 0, v1/g1 = slot 1, ..., s = scalar slot -1) with
 * the tensor's name in brackets. */
#include <stdio.h>
#include <string.h>

#include "graph.h"

static const char *logic_name(LogicKind k) {
  switch (k) {
  case LOGIC_TERMINAL: return "terminal";
  case LOGIC_POINTWISE_UN: return "pointwise_un";
  case LOGIC_POINTWISE_BIN: return "pointwise_bin";
  case LOGIC_POINTWISE_TERN: return "pointwise_tern";
  case LOGIC_COMPOSE: return "compose";
  case LOGIC_COMPOSE_TERN: return "compose_tern";
  case LOGIC_TRANSPOSE: return "transpose";
  case LOGIC_PERMUTE: return "permute";
  case LOGIC_EINSUM: return "einsum";
  case LOGIC_BATCH_SLICE: return "batch_slice";
  }
  return "?";
}

static void tname(FILE *out, const Tensor *t) {
  if (t->name) fputs(t->name, out);
  else fprintf(out, "#%d", t->id);
}

static void sym_name(FILE *out, const IndexSym *s) {
  if (s->name) fputs(s->name, out);
  else fprintf(out, "#sym%d", s->id);
}

void graph_print_dim(FILE *out, const Graph *g, int d, bool ids) {
  if (!DIM_IS_DYN(d)) {
    fprintf(out, "%d", d);
    return;
  }
  int id = DIM_DYN_ID(d);
  const DimSym *s = g && id < g->dimsyms.len ? (const DimSym *)g->dimsyms.items[id] : NULL;
  if (s && s->name) fputs(s->name, out);
  else if (ids) fprintf(out, "?%d", id);
  else fputc('?', out);
}

static void print_row(FILE *out, const Graph *g, const char *k, const RowDecl *r) {
  fprintf(out, " %s=", k);
  if (!r->given) {
    fputc('?', out);
    return;
  }
  fputc('[', out);
  for (int i = 0; i < r->n; i++) {
    if (i) fputc(',', out);
    if (r->dims[i].label) fprintf(out, "%s=", r->dims[i].label);
    graph_print_dim(out, g, r->dims[i].d, true);
  }
  fputc(']', out);
}

static void print_init(FILE *out, const Init *in) {
  switch (in->kind) {
  case INIT_ZERO: fputs("zero", out); break;
  case INIT_CONST: fprintf(out, "const(%g)", in->value); break;
  case INIT_VALUES:
    fprintf(out, "values[%d](", in->nvalues);
    for (int i = 0; i < in->nvalues && i < 12; i++) fprintf(out, "%s%g", i ? " " : "", in->values[i]);
    if (in->nvalues > 12) fputs(" ...", out);
    fputc(')', out);
    break;
  case INIT_RANGE: fputs("range", out); break;
  case INIT_UNIFORM: fputs("uniform", out); break;
  case INIT_FILE: fprintf(out, "file(\"%s\", %lld)", in->path, in->file_elems); break;
  case INIT_EXPR:
    fputs("expr(", out);
    for (int i = 0; i < in->nops; i++) {
      const InitOp *o = &in->ops[i];
      static const char *leaf[] = {"const", "range", "values", "uniform", "normal", "fan_in", "fan_out"};
      if (i) fputc(' ', out);
      if (o->kind == IO_PRIM) fputs(op_info[o->op].name, out);
      else if (o->kind == IO_CONST) fprintf(out, "%g", o->value);
      else if (o->kind == IO_VALUES) fprintf(out, "values[%d]", o->nvalues);
      else fputs(leaf[o->kind], out);
    }
    fputc(')', out);
    break;
  }
}

static const char *kind_name(TensorKind k) {
  return k == TK_PARAM ? "param" : k == TK_TERM ? "term" : k == TK_CONST ? "const" : "op";
}

static void print_step_body(FILE *out, const UpdateStep *s) {
  fprintf(out, "step #%d %s", s->id, logic_name(s->kind));
  if (s->kind == LOGIC_TERMINAL) return;
  fputs(" (", out);
  for (int i = 0; i < s->nrhs; i++) {
    if (i) fputs(", ", out);
    tname(out, s->rhs[i]);
  }
  fputc(')', out);
  if (s->spec) fprintf(out, " spec=\"%s\"", s->spec->text);
  if (s->sym) {
    fputs(" sym=", out);
    sym_name(out, s->sym);
  }
  if (s->use_padding) fputs(" padding", out);
}

static void print_aexpr(FILE *out, const AExpr *e) {
  switch (e->kind) {
  case AE_BUF:
    fputs(e->buf.grad ? "g" : "v", out);
    if (e->slot > 0) fprintf(out, "%d", e->slot);
    else if (e->slot < 0) fputs("s", out);
    fputc('[', out);
    tname(out, e->buf.t);
    fputc(']', out);
    break;
  case AE_CONST: fprintf(out, "%g", e->value); break;
  case AE_SYM:
    fputs("!@", out);
    sym_name(out, e->sym);
    break;
  case AE_OP:
    fprintf(out, "(%s", op_info[e->op].name);
    for (int i = 0; i < op_info[e->op].arity; i++) {
      fputc(' ', out);
      if (e->args[i]) print_aexpr(out, e->args[i]);
      else fputs("?", out);
    }
    fputc(')', out);
    break;
  }
}

static const char *accum_text(PrimOp op) {
  switch (op) {
  case OP_ARG2: return "";
  case OP_RELU_GATE: return "?/";
  case OP_SAT01_GATE: return "?^";
  default: return op_info[op].infix ? op_info[op].infix : op_info[op].name;
  }
}

static void print_asgn(FILE *out, const Asgn *a, const char *indent) {
  fputs(indent, out);
  if (a->kind == ASGN_COMMENT) {
    fprintf(out, "~~ \"%s\"\n", a->comment);
    return;
  }
  tname(out, a->lhs.t);
  if (a->lhs.grad) fputs(".grad", out);
  fprintf(out, " =%s%s ", a->init_neutral || a->accum == OP_ARG2 ? ":" : "", accum_text(a->accum));
  print_aexpr(out, a->rhs);
  if (a->step) fprintf(out, " @step%d", a->step->id);
  if (a->lhs_slot) fprintf(out, " lhs_slot=%d", a->lhs_slot);
  fputc('\n', out);
}

static void print_code(FILE *out, const char *title, const Code *c) {
  if (!c->asgns.len) return;
  fprintf(out, "  %s:\n", title);
  for (int i = 0; i < c->asgns.len; i++) print_asgn(out, (const Asgn *)c->asgns.items[i], "    ");
}

void graph_print(FILE *out, const Graph *g) {
  for (int i = 0; i < g->tensors.len; i++) {
    const Tensor *t = (const Tensor *)g->tensors.items[i];
    fprintf(out, "tensor #%d ", t->id);
    tname(out, t);
    fprintf(out, ": %s%s init=", kind_name(t->kind), t->diff ? " diff" : "");
    print_init(out, &t->init);
    if (t->prec != PREC_DEFAULT) fprintf(out, " prec=%s", t->prec == PREC_DOUBLE ? "double" : "single");
    fputs(" decl", out);
    print_row(out, g, "b", &t->decl[KIND_BATCH]);
    print_row(out, g, "i", &t->decl[KIND_INPUT]);
    print_row(out, g, "o", &t->decl[KIND_OUTPUT]);
    fputc('\n', out);
    if (t->step) {
      fputs("  ", out);
      print_step_body(out, t->step);
      fputc('\n', out);
    }
    print_code(out, "fwd", &t->fwd);
    print_code(out, "bwd", &t->bwd);
  }
  for (int i = 0; i < g->steps.len; i++) {
    const UpdateStep *s = (const UpdateStep *)g->steps.items[i];
    if (s->lhs && s->lhs->step == s) continue;
    print_step_body(out, s);
    fputs(" lhs=", out);
    if (s->lhs) tname(out, s->lhs);
    fputc('\n', out);
  }
  for (int i = 0; i < g->routines.len; i++) {
    const Routine *r = (const Routine *)g->routines.items[i];
    fprintf(out, "routine %s:\n", r->name);
    for (int j = 0; j < r->code.asgns.len; j++) print_asgn(out, (const Asgn *)r->code.asgns.items[j], "  ");
  }
  for (int i = 0; i < g->names.len; i++) {
    const NamedTensor *n = (const NamedTensor *)g->names.items[i];
    fprintf(out, "name %s = ", n->name);
    tname(out, n->t);
    fputc('\n', out);
  }
  for (int i = 0; i < g->syms.len; i++) {
    const IndexSym *s = (const IndexSym *)g->syms.items[i];
    fputs("sym ", out);
    sym_name(out, s);
    fputs(" range=", out);
    graph_print_dim(out, g, s->range, true);
    fputc('\n', out);
  }
}

const char *graph_op_token(const char *op) {
  static const char *const ops[][2] = {
      {"add", "+"},       {"sub", "-"},        {"pointmul", "*."},  {"pointdiv", "/."}, {"pointpow_", "**."}, {"pointpow", "**."},
      {"matmul", "*"},    {"einsum", "+*"},    {"einsum1", "++"},   {"outer_sum", "+++"}, {"tropical", "@^+"},
      {"einmax1", "@^^"}, {"slice", "@|"},     {"neg", "~-"},       {"lt", "<"},        {"eq", "="},
      {"ne", "<>"},
  };
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if (!strcmp(op, ops[i][0])) return ops[i][1];
  return op;
}
