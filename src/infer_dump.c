/* infer_dump.c: --dump-shapes (tdslc(1), OUTPUT FORMATS: a fixed format) and --dump-projections.
 *
 * --dump-projections prints, per assignment (every tensor's forward then backprop
 * code, in creation order, then every exported routine), what an MLIR linalg.generic
 * states: the loops with their sizes and iterator types (a loop absent from the
 * left-hand side's indices is a reduction), and each operand's index expressions; plus
 * an nnScaler-dimops-style annotation, e.g. `i0^ i2+, i2+ i1 -> i0^ i1` where `+`
 * marks a reduced loop and `^` an axis that cannot be partitioned (a fixed, affine or
 * symbol index), a plain loop name is spatial. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "json.h"

/* ---------------------------------------------------------------- shapes */

static void print_row(FILE *out, const Graph *g, const Shape *sh, int k) {
  /* After an inference error: an output row (never empty once inferred) of which
   * nothing is known yet prints as one unknown. */
  if (k == KIND_OUTPUT && !sh->n[k] && sh->open[k]) fputc('?', out);
  for (int i = 0; i < sh->n[k]; i++) {
    if (i) fputc(',', out);
    if (sh->dims[k][i].label) fprintf(out, "%s=", sh->dims[k][i].label);
    if (!sh->dims[k][i].unknown) graph_print_dim(out, g, sh->dims[k][i].d, false); /* n, or ? (tdslc(1)) */
    else fputc('?', out); /* after an inference error: not inferred */
  }
}

static void print_shape(FILE *out, const Graph *g, const Shape *sh) {
  if (!sh->solved) { /* inference stopped before reaching this tensor */
    fputc('?', out);
    return;
  }
  if (sh->n[KIND_BATCH]) {
    print_row(out, g, sh, KIND_BATCH);
    fputc('|', out);
  }
  if (sh->n[KIND_INPUT]) {
    print_row(out, g, sh, KIND_INPUT);
    fputs("->", out);
  }
  print_row(out, g, sh, KIND_OUTPUT);
}

/* A shape or a dimension with the graph that names its dynamic dimensions. */
typedef struct ShapeOf {
  const Graph *g;
  const Shape *sh;
} ShapeOf;
typedef struct DimOf {
  const Graph *g;
  int d;
} DimOf;

static void dim_text(FILE *out, const void *arg) {
  const DimOf *x = arg;
  graph_print_dim(out, x->g, x->d, false);
}

/* A dimension: a number, a dynamic one as a string ("n", or "?" when anonymous). */
static void json_dim(FILE *out, const Graph *g, int d) {
  if (!DIM_IS_DYN(d)) {
    fprintf(out, "%d", d);
    return;
  }
  json_printed(out, dim_text, &(DimOf){g, d});
}

static void shape_text(FILE *out, const void *arg) {
  const ShapeOf *x = arg;
  print_shape(out, x->g, x->sh);
}

static void shape_row(FILE *out, const void *arg, int k) {
  const ShapeOf *x = arg;
  const Shape *sh = x->sh;
  fputc('[', out);
  for (int i = 0; i < sh->n[k]; i++) {
    if (sh->dims[k][i].unknown) fprintf(out, "%snull", i ? "," : ""); /* after an inference error: not inferred */
    else if (sh->dims[k][i].d >= 0) fprintf(out, "%s%d", i ? "," : "", sh->dims[k][i].d);
    else fputs(i ? "," : "", out), json_dim(out, x->g, sh->dims[k][i].d);
  }
  fputc(']', out);
}

/* Saturating: --dump-shapes also prints the shapes of a program whose sizes overflow. */
static long long shape_cells(const Shape *sh) {
  long long n = 1;
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < sh->n[k]; i++)
      if (!sh->dims[k][i].unknown && sh->dims[k][i].d >= 0 && __builtin_mul_overflow(n, (long long)sh->dims[k][i].d, &n)) return LLONG_MAX;
  return n;
}

/* After the shapes, what dynamic dimensions add (a static program has none of it, so the
 * fixed format is unchanged for it): index symbols whose range is dynamic (an `@|` over
 * a dynamic axis), then the run-time checks (graph.h DimCheck). Text:
 *   sym NAME range=SIZE
 *   check SIZE == EXPECT [or 1] at LINE:COL: MSG   */
static void dump_checks(FILE *out, const Graph *g, bool json) {
  for (int i = 0; i < g->syms.len; i++) {
    const IndexSym *s = VEC_AT(g->syms, IndexSym, i);
    if (!DIM_IS_DYN(s->range)) continue;
    if (json) {
      fputs("{\"sym\":", out);
      json_str(out, s->name ? s->name : "");
      fputs(",\"range\":", out);
      json_dim(out, g, s->range);
      fputs("}\n", out);
      continue;
    }
    fprintf(out, "sym %s range=", s->name ? s->name : "_");
    graph_print_dim(out, g, s->range, true);
    fputc('\n', out);
  }
  for (int i = 0; i < g->dimchecks.len; i++) {
    const DimCheck *k = VEC_AT(g->dimchecks, DimCheck, i);
    if (json) {
      fputs("{\"check\":", out);
      json_dim(out, g, k->size);
      fputs(",\"expect\":", out);
      json_dim(out, g, k->expect);
      fprintf(out, ",\"or_one\":%s,\"line\":%d,\"col\":%d,\"msg\":", k->or_one ? "true" : "false", k->loc.line,
              k->loc.col);
      json_str(out, k->msg);
      fputs("}\n", out);
      continue;
    }
    fputs("check ", out);
    graph_print_dim(out, g, k->size, true);
    fputs(" == ", out);
    graph_print_dim(out, g, k->expect, true);
    fprintf(out, "%s at %d:%d: %s\n", k->or_one ? " or 1" : "", k->loc.line, k->loc.col, k->msg);
  }
}

void dump_shapes(FILE *out, const Graph *g, bool json) { dump_shapes_ex(out, g, json, false); }

/* verbose: parameters are marked with their number of values, and a last line counts
 * them (each parameter tensor once, whatever its aliases). Outside the fixed format. */
void dump_shapes_ex(FILE *out, const Graph *g, bool json, bool verbose) {
  long long nparams = 0, nvalues = 0;
  char *counted = verbose ? calloc((size_t)g->tensors.len + 1, 1) : NULL;
  for (int i = 0; i < g->names.len; i++) {
    NamedTensor *nt = VEC_AT(g->names, NamedTensor, i);
    const Shape *sh = &nt->t->shape;
    if (!json) {
      fprintf(out, "%s: ", nt->name);
      print_shape(out, g, sh);
      if (verbose && nt->t->kind == TK_PARAM) fprintf(out, "  (parameter, %lld values)", shape_cells(sh));
      fputc('\n', out);
      if (verbose && nt->t->kind == TK_PARAM && counted && !counted[nt->t->id]++) nparams++, nvalues += shape_cells(sh);
      continue;
    }
    static const JsonShape how = {shape_text, shape_row};
    json_shape_fields(out, nt->name, &how, &(ShapeOf){g, sh});
    if (verbose) fprintf(out, ",\"param\":%s,\"size\":%lld", nt->t->kind == TK_PARAM ? "true" : "false", shape_cells(sh));
    fputs("}\n", out);
    if (verbose && nt->t->kind == TK_PARAM && counted && !counted[nt->t->id]++) nparams++, nvalues += shape_cells(sh);
  }
  dump_checks(out, g, json);
  if (verbose) {
    if (json) fprintf(out, "{\"parameters\":%lld,\"size\":%lld}\n", nparams, nvalues);
    else fprintf(out, "parameters: %lld tensors, %lld values\n", nparams, nvalues);
  }
  free(counted);
}

/* ---------------------------------------------------------------- projections */

/* A dynamic axis that broadcasts (AxisIndex.dyn_bcast) prints as bcast(INDEX). */
static void print_index_body(FILE *out, const AxisIndex *ix);

static void print_index(FILE *out, const AxisIndex *ix) {
  if (!ix->dyn_bcast) {
    print_index_body(out, ix);
    return;
  }
  fputs("bcast(", out);
  print_index_body(out, ix);
  fputc(')', out);
}

static void print_index_body(FILE *out, const AxisIndex *ix) {
  bool any = false;
  for (int i = 0; i < ix->nterms; i++) {
    int c = ix->coef[i];
    if (c == 0) continue;
    if (any) fputs(c < 0 ? " - " : " + ", out);
    else if (c < 0) fputc('-', out);
    int a = c < 0 ? -c : c;
    if (a != 1) fprintf(out, "%d*", a);
    fprintf(out, "i%d", ix->iter[i]);
    any = true;
  }
  if (ix->sym) {
    if (any) fputs(" + ", out);
    fputs(ix->sym->name ? ix->sym->name : "sym", out);
    any = true;
  }
  if (!any) fprintf(out, "%d", ix->offset);
  else if (ix->offset > 0) fprintf(out, " + %d", ix->offset);
  else if (ix->offset < 0) fprintf(out, " - %d", -ix->offset);
}

static const char *buf_name(const Buf *b) { return b->t->name ? b->t->name : "_"; }

static void print_operand(FILE *out, const Buf *b, const Projections *pj, int slot) {
  fprintf(out, "%s%s", buf_name(b), b->grad ? ".grad" : "");
  if (slot < 0 || !pj || slot >= pj->nslots) {
    if (slot < 0) fputs("[0]", out);
    return;
  }
  fputc('[', out);
  for (int i = 0; i < pj->rank[slot]; i++) {
    if (i) fputs(", ", out);
    print_index(out, &pj->idx[slot][i]);
  }
  fputc(']', out);
}

static void print_aexpr(FILE *out, const AExpr *e, const Projections *pj) {
  switch (e->kind) {
  case AE_BUF: print_operand(out, &e->buf, pj, e->slot); break;
  case AE_CONST: fprintf(out, "%g", e->value); break;
  case AE_SYM: fputs(e->sym && e->sym->name ? e->sym->name : "sym", out); break;
  case AE_OP: {
    const OpInfo *oi = &op_info[e->op];
    if (oi->arity == 2 && oi->infix) {
      fputc('(', out);
      print_aexpr(out, e->args[0], pj);
      fprintf(out, " %s ", oi->infix);
      print_aexpr(out, e->args[1], pj);
      fputc(')', out);
    } else {
      fprintf(out, "%s(", oi->name);
      for (int i = 0; i < oi->arity; i++) {
        if (i) fputs(", ", out);
        print_aexpr(out, e->args[i], pj);
      }
      fputc(')', out);
    }
    break;
  }
  }
}

/* Which iterators the lhs indexes (the rest are reductions). */
static void lhs_iters(const Projections *pj, int slot, bool *used) {
  for (int i = 0; i < pj->niters; i++) used[i] = false;
  if (slot < 0 || slot >= pj->nslots) return;
  for (int a = 0; a < pj->rank[slot]; a++)
    for (int t = 0; t < pj->idx[slot][a].nterms; t++) used[pj->idx[slot][a].iter[t]] = true;
}

/* One axis in dimops form: a loop name, `+` when reduced; `^` for non-plain indices. */
static void dimop_axis(FILE *out, const AxisIndex *ix, const bool *in_lhs) {
  if (ix->nterms == 1 && ix->coef[0] == 1 && ix->offset == 0 && !ix->sym) {
    fprintf(out, "i%d%s", ix->iter[0], in_lhs[ix->iter[0]] ? "" : "+");
    return;
  }
  if (ix->nterms == 0 && !ix->sym) {
    fprintf(out, "%d^", ix->offset);
    return;
  }
  fputc('(', out);
  print_index(out, ix);
  fputs(")^", out);
}

static void dimop_slot(FILE *out, const Projections *pj, int slot, const bool *in_lhs) {
  if (slot < 0 || slot >= pj->nslots || pj->rank[slot] == 0) {
    fputs("1^", out);
    return;
  }
  for (int a = 0; a < pj->rank[slot]; a++) {
    if (a) fputc(' ', out);
    dimop_axis(out, &pj->idx[slot][a], in_lhs);
  }
}

static void collect_slots(const AExpr *e, int *slots, int *n) {
  if (!e) return;
  if (e->kind == AE_BUF && *n < 16) slots[(*n)++] = e->slot;
  if (e->kind == AE_OP)
    for (int i = 0; i < op_info[e->op].arity; i++) collect_slots(e->args[i], slots, n);
}

static void print_asgn_text(FILE *out, const Graph *g, const char *where, const Asgn *as) {
  const Projections *pj = as->step ? as->step->proj : NULL;
  fprintf(out, "%s: ", where);
  print_operand(out, &as->lhs, pj, as->lhs_slot);
  fprintf(out, " =%s%s ", as->init_neutral ? ":" : "", as->accum == OP_ARG2 ? "" : op_info[as->accum].infix ? op_info[as->accum].infix : op_info[as->accum].name);
  print_aexpr(out, as->rhs, pj);
  fputc('\n', out);
  if (!pj) return;
  bool in_lhs[256];
  int n = pj->niters < 256 ? pj->niters : 256;
  lhs_iters(pj, as->lhs_slot, in_lhs);
  fputs("  loops:", out);
  if (!n) fputs(" (none)", out);
  for (int i = 0; i < n; i++) {
    fprintf(out, " i%d<", i);
    graph_print_dim(out, g, pj->iter_size[i], true);
    fputs(in_lhs[i] ? "" : " (reduce)", out);
  }
  fputs("\n  dimops: ", out);
  int slots[16], ns = 0;
  collect_slots(as->rhs, slots, &ns);
  for (int i = 0; i < ns; i++) {
    if (i) fputs(", ", out);
    dimop_slot(out, pj, slots[i], in_lhs);
  }
  fputs(ns ? " -> " : "-> ", out);
  dimop_slot(out, pj, as->lhs_slot, in_lhs);
  fputc('\n', out);
}

static void index_text(FILE *out, const void *ix) { print_index(out, ix); }

static void json_operand(FILE *out, const Buf *b, const Projections *pj, int slot) {
  fputs("{\"tensor\":", out);
  json_str(out, buf_name(b));
  fprintf(out, ",\"grad\":%s,\"slot\":%d,\"index\":[", b->grad ? "true" : "false", slot);
  if (pj && slot >= 0 && slot < pj->nslots)
    for (int i = 0; i < pj->rank[slot]; i++) {
      if (i) fputc(',', out);
      json_printed(out, index_text, &pj->idx[slot][i]);
    }
  fputs("]}", out);
}

static void collect_bufs(const AExpr *e, const AExpr **bufs, int *n) {
  if (!e) return;
  if (e->kind == AE_BUF && *n < 16) bufs[(*n)++] = e;
  if (e->kind == AE_OP)
    for (int i = 0; i < op_info[e->op].arity; i++) collect_bufs(e->args[i], bufs, n);
}

static void print_asgn_json(FILE *out, const Graph *g, const char *where, const Asgn *as) {
  const Projections *pj = as->step ? as->step->proj : NULL;
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  print_asgn_text(m, g, where, as);
  fclose(m);
  char *nl = strchr(buf, '\n');
  if (nl) *nl = 0;
  fputs("{\"where\":", out);
  json_str(out, where);
  fputs(",\"asgn\":", out);
  json_str(out, buf + strlen(where) + 2);
  /* the dimops line */
  char *dl = nl ? strstr(nl + 1, "dimops: ") : NULL;
  if (dl) {
    char *e = strchr(dl, '\n');
    if (e) *e = 0;
    fputs(",\"dimops\":", out);
    json_str(out, dl + 8);
  }
  free(buf);
  fputs(",\"loops\":[", out);
  bool in_lhs[256];
  int n = pj ? (pj->niters < 256 ? pj->niters : 256) : 0;
  if (pj) lhs_iters(pj, as->lhs_slot, in_lhs);
  for (int i = 0; i < n; i++) {
    fprintf(out, "%s{\"name\":\"i%d\",\"size\":", i ? "," : "", i);
    json_dim(out, g, pj->iter_size[i]);
    fprintf(out, ",\"type\":\"%s\"}", in_lhs[i] ? "parallel" : "reduction");
  }
  fputs("],\"lhs\":", out);
  json_operand(out, &as->lhs, pj, as->lhs_slot);
  fputs(",\"operands\":[", out);
  const AExpr *bufs[16];
  int nb = 0;
  collect_bufs(as->rhs, bufs, &nb);
  for (int i = 0; i < nb; i++) {
    if (i) fputc(',', out);
    json_operand(out, &bufs[i]->buf, pj, bufs[i]->slot);
  }
  fputs("]}\n", out);
}

static void dump_code(FILE *out, const Graph *g, const char *where, const Code *code, bool json) {
  for (int i = 0; i < code->asgns.len; i++) {
    const Asgn *as = VEC_AT(code->asgns, Asgn, i);
    if (as->kind != ASGN_OP) continue;
    if (json) print_asgn_json(out, g, where, as);
    else print_asgn_text(out, g, where, as);
  }
}

void dump_projections(FILE *out, const Graph *g, bool json) {
  char where[512];
  for (int i = 0; i < g->tensors.len; i++) {
    const Tensor *t = VEC_AT(g->tensors, Tensor, i);
    const char *name = t->name ? t->name : "_";
    snprintf(where, sizeof where, "%s.forward", name);
    dump_code(out, g, where, &t->fwd, json);
    snprintf(where, sizeof where, "%s.backprop", name);
    dump_code(out, g, where, &t->bwd, json);
  }
  for (int i = 0; i < g->routines.len; i++) {
    const Routine *r = VEC_AT(g->routines, Routine, i);
    dump_code(out, g, r->name ? r->name : "_", &r->code, json);
  }
}
