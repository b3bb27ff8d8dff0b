/* ir_print.c: the text form of the loop IR (--dump-ir) and the model metadata string. */
#include <stdlib.h>
#include <string.h>

#include "ir.h"

static void var_name(FILE *out, int var, const IrModule *m) {
  if (var >= 0) fprintf(out, "i%d", var);
  else fprintf(out, "%s", VEC_AT(m->syms, IrSym, -1 - var)->name);
}

void aff_print_c(FILE *out, const char *sym_prefix, const Aff *f) {
  for (int i = 0; i < f->n; i++) {
    if (i) fputs(" + ", out);
    if (f->t[i].coef != 1) fprintf(out, "%ldL*", f->t[i].coef);
    if (f->t[i].var >= 0) fprintf(out, "i%d", f->t[i].var);
    else fprintf(out, "(long)%s%d", sym_prefix, -1 - f->t[i].var);
  }
  if (f->n == 0) fprintf(out, "%ldL", f->off);
  else if (f->off) fprintf(out, " + %ldL", f->off);
}

void aff_print(FILE *out, const Aff *a, const IrModule *m) {
  bool first = true;
  for (int i = 0; i < a->n; i++) {
    long c = a->t[i].coef;
    bool one = a->t[i].var == AFF_ONE;
    if (!first) fputs(c < 0 ? " - " : " + ", out);
    else if (c < 0) fputc('-', out);
    if (labs(c) != 1 || (one && !a->t[i].dyn)) fprintf(out, "%ld%s", labs(c), one && !a->t[i].dyn ? "" : "*");
    if (a->t[i].dyn) {
      ir_prod_print(out, m, a->t[i].dyn);
      if (!one) fputc('*', out);
    }
    if (!one) var_name(out, a->t[i].var, m);
    first = false;
  }
  if (first) fprintf(out, "%ld", a->off);
  else if (a->off) fprintf(out, " %c %ld", a->off < 0 ? '-' : '+', labs(a->off));
}

/* An extent: N, or N*n*m (N left out when 1) for a dynamic one. */
static void ext_print(FILE *out, long ext, int dext, const IrModule *m) {
  if (!dext) {
    fprintf(out, "%ld", ext);
    return;
  }
  if (ext != 1) fprintf(out, "%ld*", ext);
  ir_prod_print(out, m, dext);
}

static const char *bname(const IrModule *m, int b) { return VEC_AT(m->bufs, IrBuf, b)->name; }

static void expr_print(FILE *out, const IrExpr *e, const IrModule *m) {
  switch (e->kind) {
  case X_CONST: fprintf(out, "%.9g", e->value); break;
  case X_SYM: fprintf(out, "%s", VEC_AT(m->syms, IrSym, e->sym)->name); break;
  case X_LOAD:
    fprintf(out, "%s[", bname(m, e->acc.buf));
    aff_print(out, &e->acc.flat, m);
    fputc(']', out);
    break;
  case X_OP:
    fprintf(out, "%s(", op_info[e->op].name);
    for (int i = 0; i < op_info[e->op].arity; i++) {
      if (i) fputs(", ", out);
      expr_print(out, e->a[i], m);
    }
    fputc(')', out);
    break;
  }
}

/* A kernel dimension: "i3 < 32", or "(i0, i1) < 3136" for several variables. */
static void kdim_print(FILE *out, const int *vars, int n, long ext) {
  for (int t = 0; t < n; t++) fprintf(out, "%s%si%d", t ? ", " : "", !t && n > 1 ? "(" : "", vars[t]);
  fprintf(out, "%s < %ld", n > 1 ? ")" : "", ext);
}

/* lead, then "0 <= aff < ext" per guard, joined by " && " (nothing when n is 0). */
static void guards_print(FILE *out, const char *lead, const Guard *g, int n, const IrModule *m) {
  for (int k = 0; k < n; k++) {
    fputs(k ? " && 0 <= " : lead, out);
    if (!k) fputs("0 <= ", out);
    aff_print(out, &g[k].aff, m);
    fprintf(out, " < %ld", g[k].ext);
  }
}

static void stmts_print(FILE *out, const PtrVec *body, int ind, const IrModule *m) {
  for (int i = 0; i < body->len; i++) {
    const Stmt *s = body->items[i];
    fprintf(out, "%*s", ind * 2, "");
    switch (s->kind) {
    case S_LOOP:
      if (s->tile_var >= 0)
        fprintf(out, "for i%d in %d*i%d ..< min(%d*i%d + %d, %ld)", s->var, s->tile, s->tile_var, s->tile,
                s->tile_var, s->tile, s->ext);
      else {
        fprintf(out, "for i%d < ", s->var);
        ext_print(out, s->ext, s->dext, m);
      }
      if (s->accs > 1) fprintf(out, " reduce %d", s->accs);
      if (s->parallel) fputs(" parallel", out);
      if (s->stream) fprintf(out, " stream %d", s->stream);
      if (s->tblock) fprintf(out, " tblock %d", s->tblock);
      fputc('\n', out);
      stmts_print(out, &s->body, ind + 1, m);
      break;
    case S_IF:
      fputs("if ", out);
      for (int k = 0; k < s->nguards; k++) {
        if (k) fputs(" && ", out);
        fputs("0 <= ", out);
        aff_print(out, &s->guards[k].aff, m);
        fputs(" < ", out);
        ext_print(out, s->guards[k].ext, s->guards[k].dext, m);
      }
      fputc('\n', out);
      stmts_print(out, &s->body, ind + 1, m);
      break;
    case S_STORE:
      fprintf(out, "%s[", bname(m, s->dst.buf));
      aff_print(out, &s->dst.flat, m);
      fprintf(out, "] =%s ", s->accum == OP_ARG2 ? "" : op_info[s->accum].name);
      expr_print(out, s->val, m);
      fputc('\n', out);
      break;
    case S_FILL: fprintf(out, "fill %s %.9g\n", bname(m, s->buf), s->value); break;
    case S_CALL:
      fprintf(out, "call %s", VEC_AT(m->funcs, IrFunc, s->callee)->name);
      if (s->ncalls > 1) fprintf(out, " .. %s (%d functions)", VEC_AT(m->funcs, IrFunc, s->callee + s->ncalls - 1)->name, s->ncalls);
      fputc('\n', out);
      break;
    case S_COMMENT: fprintf(out, "# %s\n", s->text); break;
    case S_PREFETCH:
      fprintf(out, "prefetch for writing %ld cells from %s[", s->ext, bname(m, s->dst.buf));
      aff_print(out, &s->dst.flat, m);
      fputs("]\n", out);
      break;
    case S_FENCE: fputs("fence (streamed stores)\n", out); break;
    case S_KERNEL: {
      const Kernel *k = s->kern;
      fprintf(out, "kernel tile %dx%d vw %d kc %d mc %d nc %d: m ", k->mr, k->nr, k->vw, k->kc, k->mc, k->nc);
      kdim_print(out, k->mvar, k->nm, k->ext[0]);
      fputs(", n ", out);
      kdim_print(out, k->nd.n ? k->nd.var : &k->var[1], k->nd.n ? k->nd.n : 1, k->ext[1]);
      fputs(", k ", out);
      kdim_print(out, k->kd.n ? k->kd.var : &k->var[2], k->kd.n ? k->kd.n : 1, k->ext[2]);
      if (k->kd.linear) fputs(" linear", out);
      fprintf(out, ", a = arg %d", k->a_arg + 1);
      if (k->direct_a) fputs(", a in place", out);
      if (k->b_runs || k->c_runs) fprintf(out, ", column runs in%s%s", k->b_runs ? " b" : "", k->c_runs ? " dst" : "");
      if (k->overwrite) fprintf(out, ", overwrites from %.9g", k->init);
      if (k->parallel) fputs(k->split_cols ? " parallel cols" : " parallel rows", out);
      guards_print(out, ", rows where ", k->row_guards, k->nrow_guards, m);
      guards_print(out, ", a reads 0 unless ", k->a_guards, k->na_guards, m);
      guards_print(out, ", b reads 0 unless ", k->b_guards, k->nb_guards, m);
      fputc('\n', out);
      PtrVec one = {.items = (void **)&k->store, .len = 1, .cap = 1};
      stmts_print(out, &one, ind + 1, m);
      if (k->epilogue.len) {
        fprintf(out, "%*sthen per final cell\n", (ind + 1) * 2, "");
        stmts_print(out, &k->epilogue, ind + 2, m);
      }
      break;
    }
    }
  }
}

/* A dimension as an int: N, or a dynamic one by name (?ID when anonymous). */
static void dim_print(FILE *out, int d, const IrModule *m) {
  if (!DIM_IS_DYN(d)) fprintf(out, "%d", d);
  else ir_dim_print(out, m, DIM_DYN_ID(d));
}

static void dims_print(FILE *out, const IrBuf *b, const IrModule *m) {
  fputc('[', out);
  for (int i = 0; i < b->rank; i++) {
    if (i) fputc(',', out);
    dim_print(out, b->dims[i], m);
  }
  fputc(']', out);
}

void ir_print(FILE *out, const IrModule *m) {
  for (int i = 0; i < m->bufs.len; i++) {
    const IrBuf *b = VEC_AT(m->bufs, IrBuf, i);
    fprintf(out, "buf %s %s ", b->name, b->elem == ELEM_F64 ? "f64" : "f32");
    dims_print(out, b, m);
    fputc('\n', out);
  }
  for (int i = 0; i < m->dims.len; i++) {
    const IrDim *d = VEC_AT(m->dims, IrDim, i);
    if (d->flag) {
      fprintf(out, "flag ?%d = ", i);
      ir_dim_print(out, m, i);
      fputc('\n', out);
    } else fprintf(out, "%s ?%d %s\n", d->njoin ? "join" : "dim", i, d->name ? d->name : "?");
  }
  for (int i = 0; i < m->checks.len; i++) {
    const IrCheck *c = VEC_AT(m->checks, IrCheck, i);
    fputs("check ", out);
    dim_print(out, c->size, m);
    fputs(c->or_one ? " in {1, " : " == ", out);
    dim_print(out, c->expect, m);
    fprintf(out, "%s: %s\n", c->or_one ? "}" : "", c->msg ? c->msg : "");
  }
  for (int i = 0; i < m->syms.len; i++) {
    const IrSym *s = VEC_AT(m->syms, IrSym, i);
    fprintf(out, "sym %s < ", s->name);
    dim_print(out, s->range, m);
    fputc('\n', out);
  }
  for (int i = 0; i < m->funcs.len; i++) {
    fputc('\n', out);
    ir_print_func(out, m, i);
  }
}

void ir_print_func(FILE *out, const IrModule *m, int i) {
  const IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
  fprintf(out, "%s %s\n", f->exported ? "export" : "func", f->name);
  stmts_print(out, &f->body, 1, m);
}

static bool calls_only(const IrFunc *f) {
  for (int i = 0; i < f->body.len; i++) {
    const Stmt *s = f->body.items[i];
    if (s->kind != S_CALL && s->kind != S_COMMENT) return false;
  }
  return true;
}

void ir_add_call(Arena *a, PtrVec *body, int callee) {
  Stmt *last = body->len ? body->items[body->len - 1] : NULL;
  if (last && last->kind == S_CALL && last->callee + last->ncalls == callee) {
    last->ncalls++;
    return;
  }
  Stmt *s = ANEW(a, Stmt);
  s->kind = S_CALL;
  s->callee = callee;
  s->ncalls = 1;
  vec_push(a, body, s);
}

/* Marks the functions the statements call: +1 at each run's first, -1 past its last
 * (a prefix sum over the function numbers gives the counts: linear in the runs). */
static void mark_called(const PtrVec *body, int *delta) {
  for (int i = 0; i < body->len; i++) {
    const Stmt *s = body->items[i];
    if (s->kind == S_CALL) delta[s->callee]++, delta[s->callee + s->ncalls]--;
    if (s->kind == S_LOOP || s->kind == S_IF) mark_called(&s->body, delta);
  }
}

void ir_mark_seqs(Arena *a, IrModule *m) {
  int *delta = ANEWN(a, int, m->funcs.len + 1), called = 0;
  for (int i = 0; i < m->funcs.len; i++) mark_called(&VEC_AT(m->funcs, IrFunc, i)->body, delta);
  for (int i = 0; i < m->funcs.len; i++) {
    IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    called += delta[i];
    f->seq = f->exported && !called && calls_only(f);
  }
}

/* The callees as " K" or " A-B" (A, A+1, ..., B) per run of calls: a T.forward is
 * mostly one such run (its tensors' functions in creation order), so the metadata stays
 * linear in the model too. */
static void seq_print(FILE *o, const IrFunc *f) {
  for (int i = 0; i < f->body.len; i++) {
    const Stmt *s = f->body.items[i];
    if (s->kind != S_CALL) continue;
    if (s->ncalls > 1) fprintf(o, " %d-%d", s->callee, s->callee + s->ncalls - 1);
    else fprintf(o, " %d", s->callee);
  }
}

long ir_buf_bytes(const IrBuf *b) {
  if (b->dsize) return 8;
  return (b->size > 0 ? b->size : 1) * (b->elem == ELEM_F64 ? 8 : 4);
}

static long align64(long n) { return (n + 63) & ~63L; }

IrLayout ir_layout(Arena *a, const IrModule *m) {
  IrLayout l = {.buf_off = ANEWN(a, long, m->bufs.len + 1), .sym_off = ANEWN(a, long, m->syms.len + 1),
                .dim_off = ANEWN(a, long, m->dims.len + 1)};
  long at = IR_INST_HEADER;
  for (int i = 0; i < m->bufs.len; i++) {
    l.buf_off[i] = align64(at);
    at = l.buf_off[i] + ir_buf_bytes(VEC_AT(m->bufs, IrBuf, i));
  }
  for (int i = 0; i < m->syms.len; i++, at += 4) l.sym_off[i] = at;
  for (int i = 0; i < m->dims.len; i++, at += 4) l.dim_off[i] = at;
  l.size = align64(at);
  return l;
}

/* Product of the dims of memory-order kind k (0 batch, 1 output, 2 input) of b. */
static long long kind_product(const IrBuf *b, int k) {
  int from = 0;
  for (int j = 0; j < k; j++) from += b->nk[j];
  long long p = 1;
  for (int i = from; i < from + b->nk[k]; i++) p *= b->dims[i];
  return p;
}

/* A number of the metadata in the fewest digits that strtod (the runtime's reader) turns
 * back into the same double: literals are mostly short decimals, and %.17g spent 19 bytes
 * on 0.1 (a 2M-number literal's text, copied by libgccjit, was most of -o's memory). */
static void meta_num(FILE *o, double v) {
  char s[32];
  if (v != v || v - v != 0) { /* NaN, infinities: as C prints them; strtod reads them */
    fprintf(o, " %.17g", v);
    return;
  }
  for (int prec = 1; prec < 17; prec++) {
    snprintf(s, sizeof s, "%.*g", prec, v);
    double back = strtod(s, NULL);
    if (!memcmp(&back, &v, sizeof v)) {
      fprintf(o, " %s", s);
      return;
    }
  }
  fprintf(o, " %.17g", v);
}

/* An init program (graph.h InitOp) as metadata words; the fans are the buffer's own. */
static void init_prog_print(FILE *o, const IrBuf *b) {
  fprintf(o, " %d", b->init.nops);
  for (int i = 0; i < b->init.nops; i++) {
    const InitOp *op = &b->init.ops[i];
    switch (op->kind) {
    case IO_CONST:
      fputs(" const", o);
      meta_num(o, op->value);
      break;
    case IO_FAN_IN: fprintf(o, " const %lld", kind_product(b, 2)); break;
    case IO_FAN_OUT: fprintf(o, " const %lld", kind_product(b, 1)); break;
    case IO_RANGE: fputs(" range", o); break;
    case IO_UNIFORM: fputs(" uniform", o); break;
    case IO_NORMAL: fputs(" normal", o); break;
    case IO_VALUES:
      fprintf(o, " values %d", op->nvalues);
      for (int k = 0; k < op->nvalues; k++) meta_num(o, op->values[k]);
      break;
    case IO_PRIM: fprintf(o, " %s", op_info[op->op].name); break;
    }
  }
}

/* Does the (scheduled) module have a parallel loop? Then the model exports the hook
 * tdsl_parallel / tdsl_parallel_rt that the runtime points at its thread pool. */
static bool has_parallel(const IrModule *m) {
  for (int i = 0; i < m->funcs.len; i++) {
    const PtrVec *body = &VEC_AT(m->funcs, IrFunc, i)->body;
    for (int k = 0; k < body->len; k++) {
      const Stmt *s = body->items[k];
      if ((s->kind == S_LOOP && s->parallel) || (s->kind == S_KERNEL && s->kern->parallel)) return true;
    }
  }
  return false;
}

/* The metadata a compiled model carries (read by runtime/tdslrt.c), one item a line:
 *   tdsl 3
 *   model NAME SIZE                  symbol prefix, instance bytes
 *   dim ID NAME OFFSET               a dynamic dimension: its int value in the instance
 *                                    (0 until set); NAME ?ID for an anonymous one
 *   join ID NAME OFFSET DIM...       an int the runtime keeps: the largest of these dims
 *                                    (after them; 0 while one is unset)
 *   flag ID OF OFFSET                an int the runtime keeps: 1 when dim OF is not 1
 *                                    (flags follow every dim)
 *   check SIZE EXPECT ORONE MSG      each call fails with MSG unless SIZE == EXPECT (or
 *                                    SIZE == 1 when ORONE is 1); dims as in buf lines
 *   buf ID NAME f32|f64 SIZE NB NO NI DIM... LABEL...   (LABEL "-" when none; DIM < 0:
 *                                    dynamic dimension -1 - DIM, and then SIZE is 0)
 *   at ID OFFSET                     buffer ID's byte offset in the instance (of a
 *                                    dynamic buffer: a pointer the runtime sets)
 *   init ID const V | values N V... | range | uniform | file ELEMS PATH
 *          | expr STREAM NOPS OP...   (OP: const V, values N V..., range, uniform,
 *            normal, or a primitive's name: a postfix program per cell, see graph.h)
 *   sym ID NAME RANGE OFFSET         (RANGE < 0: the value of dim -1 - RANGE)
 *   alias NAME BUFID
 *   fn ID NAME
 *   seq ID NAME K|A-B|A-B/S...       runs NAME_call(instance, K) for each K in turn
 *                                    (A-B/S: A, A+S, ..., B; tdslc writes K and A-B)
 *   threads                          (parallel loops: see has_parallel)
 * Function ID is the symbol NAME_fn_ID, taking the instance pointer. */
/* A string of the metadata as one token: '%', space, control and non-ASCII bytes as %XX
 * (runtime/tdslrt.c tok_str decodes), so a label with a newline cannot inject lines;
 * the empty string is %00 and a lone "-" (which means "no label") is %2D. */
static void meta_str(FILE *o, const char *s) {
  if (!*s || !strcmp(s, "-")) {
    fputs(*s ? "%2D" : "%00", o);
    return;
  }
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if (*p <= ' ' || *p >= 0x7f || *p == '%') fprintf(o, "%%%02X", *p);
    else fputc(*p, o);
}

char *ir_metadata(Arena *a, const IrModule *m, const char *name) {
  char *buf = NULL;
  size_t len = 0;
  FILE *o = open_memstream(&buf, &len);
  if (!o) return arena_strdup(a, "tdsl 3\n");
  IrLayout l = ir_layout(a, m);
  fputs("tdsl 3\nmodel ", o);
  meta_str(o, name);
  fprintf(o, " %ld\n", l.size);
  for (int i = 0; i < m->dims.len; i++) {
    const IrDim *d = VEC_AT(m->dims, IrDim, i);
    if (d->flag) {
      fprintf(o, "flag %d %d %ld\n", i, d->of, l.dim_off[i]);
      continue;
    }
    fprintf(o, "%s %d ", d->njoin ? "join" : "dim", i);
    meta_str(o, ir_dim_name(a, m, i));
    fprintf(o, " %ld", l.dim_off[i]);
    for (int k = 0; k < d->njoin; k++) fprintf(o, " %d", d->join[k]);
    fputc('\n', o);
  }
  for (int i = 0; i < m->checks.len; i++) {
    const IrCheck *c = VEC_AT(m->checks, IrCheck, i);
    fprintf(o, "check %d %d %d ", c->size, c->expect, c->or_one);
    meta_str(o, c->msg ? c->msg : "dynamic dimensions do not match");
    fputc('\n', o);
  }
  for (int i = 0; i < m->bufs.len; i++) {
    const IrBuf *b = VEC_AT(m->bufs, IrBuf, i);
    fprintf(o, "buf %d ", i);
    meta_str(o, b->name);
    fprintf(o, " %s %ld %d %d %d", b->elem == ELEM_F64 ? "f64" : "f32", b->dsize ? 0 : b->size, b->nk[0], b->nk[1], b->nk[2]);
    for (int k = 0; k < b->rank; k++) fprintf(o, " %d", b->dims[k]);
    for (int k = 0; k < b->rank; k++) {
      fputc(' ', o);
      if (b->labels[k]) meta_str(o, b->labels[k]);
      else fputc('-', o);
    }
    fputc('\n', o);
    fprintf(o, "at %d %ld\n", i, l.buf_off[i]);
    fprintf(o, "role %d %s\n", i, tdsl_role_name((tdsl_role)b->role));
    switch (b->init.kind) {
    case INIT_CONST:
      fprintf(o, "init %d const", i);
      meta_num(o, b->init.value);
      fputc('\n', o);
      break;
    case INIT_VALUES:
      fprintf(o, "init %d values %d", i, b->init.nvalues);
      for (int k = 0; k < b->init.nvalues; k++) meta_num(o, b->init.values[k]);
      fputc('\n', o);
      break;
    case INIT_RANGE: fprintf(o, "init %d range\n", i); break;
    case INIT_UNIFORM: fprintf(o, "init %d uniform %d\n", i, b->tensor_id); break;
    case INIT_FILE:
      fprintf(o, "init %d file %lld ", i, b->init.file_elems);
      meta_str(o, b->init.path ? b->init.path : "");
      fputc('\n', o);
      break;
    case INIT_EXPR:
      fprintf(o, "init %d expr %d", i, b->tensor_id);
      init_prog_print(o, b);
      fputc('\n', o);
      break;
    default: break;
    }
  }
  for (int i = 0; i < m->syms.len; i++) {
    const IrSym *s = VEC_AT(m->syms, IrSym, i);
    fprintf(o, "sym %d ", i);
    meta_str(o, s->name);
    fprintf(o, " %d %ld\n", s->range, l.sym_off[i]);
  }
  for (int i = 0; i < m->aliases.len; i++) {
    const IrAlias *al = VEC_AT(m->aliases, IrAlias, i);
    fputs("alias ", o);
    meta_str(o, al->name);
    fprintf(o, " %d\n", al->buf);
  }
  for (int i = 0; i < m->funcs.len; i++) {
    const IrFunc *f = VEC_AT(m->funcs, IrFunc, i);
    if (f->seq) {
      fprintf(o, "seq %d ", i);
      meta_str(o, f->name);
      seq_print(o, f);
      fputc('\n', o);
      continue;
    }
    if (!f->exported) continue;
    fprintf(o, "fn %d ", i);
    meta_str(o, f->name);
    fputc('\n', o);
  }
  if (has_parallel(m)) fputs("threads\n", o);
  fclose(o);
  char *r = arena_strdup(a, buf);
  free(buf);
  return r;
}
