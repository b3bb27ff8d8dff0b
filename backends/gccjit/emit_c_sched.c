/* emit_c_sched.c: the C rendering of what the schedule pass (src/schedule.h) adds to the
 * loop IR: reduction loops with partial sums and contraction kernels. The gccjit
 * backend builds the same code (jit_sched.c). */
#include <stdarg.h>

#include "emit_c.h"

static const char *ctype_of(const IrModule *m, int buf) {
  return VEC_AT(m->bufs, IrBuf, buf)->elem == ELEM_F64 ? "double" : "float";
}

static void line(FILE *o, int ind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void line(FILE *o, int ind, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(o, "%*s", ind * 2, "");
  vfprintf(o, fmt, ap);
  va_end(ap);
}

/* Partial sum sum<u> += the store's value at iV = base + u (bounds checked first). */
static void c_partial(CRender *r, const Stmt *st, int var, const char *at, int u, int ind, bool check) {
  FILE *o = r->o;
  bool f32 = VEC_AT(r->m->bufs, IrBuf, st->dst.buf)->elem == ELEM_F32;
  line(o, ind, "{ const long i%d = %s; ", var, at);
  if (check) c_check_expr(r, st->val, st->what, ind + 1);
  fprintf(o, "sum%d += ", u);
  cr_expr(r, st->val, f32);
  fputs("; }\n", o);
}

/* The sums combined as a balanced tree: (s0 + s1) + (s2 + s3) ... */
static void c_tree(FILE *o, int lo, int n) {
  if (n == 1) {
    fprintf(o, "sum%d", lo);
    return;
  }
  fputc('(', o);
  c_tree(o, lo, n / 2);
  fputs(" + ", o);
  c_tree(o, lo + n / 2, n - n / 2);
  fputc(')', o);
}

/* A loop's extent: the constant, or the product over dynamic dimensions. */
static void c_ext(CRender *r, const Stmt *lp) {
  if (lp->dext) cr_ext(r, lp->ext, lp->dext);
  else fprintf(r->o, "%ld", lp->ext);
}

void c_reduce_loop(CRender *r, const Stmt *lp, int ind, bool check) {
  FILE *o = r->o;
  const IrModule *m = r->m;
  const Stmt *st = lp->body.items[0];
  const char *T = ctype_of(m, st->dst.buf);
  int U = lp->accs, v = lp->var;
  fprintf(o, "{ /* reduction in %d partial sums */\n", U);
  line(o, ind + 1, "%s sum0 = 0", T);
  for (int u = 1; u < U; u++) fprintf(o, ", sum%d = 0", u);
  fputs(";\n", o);
  line(o, ind + 1, "long base%d = 0;\n", v);
  line(o, ind + 1, "for (; base%d + %d <= ", v, U);
  c_ext(r, lp);
  fprintf(o, "; base%d += %d) {\n", v, U);
  for (int u = 0; u < U; u++) {
    char at[48];
    snprintf(at, sizeof at, "base%d + %d", v, u);
    c_partial(r, st, v, at, u, ind + 2, check);
  }
  line(o, ind + 1, "}\n");
  line(o, ind + 1, "for (; base%d < ", v);
  c_ext(r, lp);
  fprintf(o, "; base%d++) ", v);
  char at[48];
  snprintf(at, sizeof at, "base%d", v);
  c_partial(r, st, v, at, 0, 0, check);
  if (check) {
    fprintf(o, "%*s", (ind + 1) * 2, "");
    c_check_access(r, &st->dst, st->what, ind + 1);
    fputc('\n', o);
  }
  line(o, ind + 1, "%s%d[", r->buf, st->dst.buf);
  cr_aff(r, &st->dst.flat);
  fprintf(o, "] += ");
  c_tree(o, 0, U);
  fputs(";\n", o);
  line(o, ind, "}\n");
}

/* ---- contraction kernels ---- */

/* `const long <vars> = the digits of x in mixed radix over ext;` (KDim). */
static void c_digits(FILE *o, const int *vars, const long *ext, int n, const char *x) {
  long stride = 1;
  fputs("const long ", o);
  for (int t = n - 1; t >= 0; t--) {
    fprintf(o, "%si%d = %s", t < n - 1 ? ", " : "", vars[t], x);
    if (stride != 1) fprintf(o, " / %ldL", stride);
    if (t) fprintf(o, " %% %ldL", ext[t]);
    stride *= ext[t];
  }
  fputs(";", o);
}

static void c_rows(FILE *o, const Kernel *k) { c_digits(o, k->mvar, k->mext, k->nm, "rw"); }

/* A line declaring the k variables at k number pc + kk. */
static void c_ks(FILE *o, const Kernel *k, int ind) {
  line(o, ind, "const long kw = pc + kk; ");
  if (k->kd.linear) { /* KDim.linear: the fastest variable takes kw, the others 0 */
    fputs("const long ", o);
    for (int t = 0; t < k->kd.n; t++) fprintf(o, "%si%d = %s", t ? ", " : "", k->kd.var[t], t == k->kd.n - 1 ? "kw" : "0");
    fputs(";", o);
  } else
    c_digits(o, k->kd.var, k->kd.ext, k->kd.n, "kw");
  fputc('\n', o);
}

/* " && 0 <= aff && aff < ext" per guard. */
static void c_guards(CRender *cr, const Guard *g, int n) {
  for (int i = 0; i < n; i++) {
    fputs(" && 0 <= ", cr->o);
    cr_aff(cr, &g[i].aff);
    fputs(" && ", cr->o);
    cr_aff(cr, &g[i].aff);
    fprintf(cr->o, " < %ld", g[i].ext);
  }
}

/* The rest of `X = COND`: the guards, then ` ? <acc> : 0;`. */
static void c_guarded_load(CRender *cr, const Guard *g, int n, const Access *acc, const char *T) {
  c_guards(cr, g, n);
  fputs(" ? ", cr->o);
  cr_access(cr, acc);
  fprintf(cr->o, " : (%s)0;\n", T);
}

/* 1 when every row guard holds at the M variables. */
static void c_rows_ok(CRender *cr, const Kernel *k) {
  fputs("1", cr->o);
  c_guards(cr, k->row_guards, k->nrow_guards);
}

/* The head of a loop body over the rows: `const long rw = ic + ir + R, <M variables>;`
 * then `LEAD(<row guards>)TAIL` (what a row outside the guards does). */
static void c_row_head(CRender *cr, const Kernel *k, int ind, const char *R, const char *lead, const char *tail) {
  line(cr->o, ind, "const long rw = ic + ir + %s; ", R);
  c_rows(cr->o, k);
  fputc('\n', cr->o);
  line(cr->o, ind, "%s(", lead);
  c_rows_ok(cr, k);
  fprintf(cr->o, ")%s\n", tail);
}

/* Bp[jr*kb + kk*NR + e] = B(pc + kk, jc + jr + e) for the panels from column jr_lo to
 * jr_hi (C expressions), 0 past the block and outside B's guards; with column runs
 * (Kernel.b_runs) the n digits once per panel, lanes at +e. */
static void c_pack_b(CRender *cr, const Kernel *k, const Access *acc, const char *T, int ind, const char *jr_lo, const char *jr_hi) {
  FILE *o = cr->o;
  line(o, ind, "for (long jr = %s; jr < %s; jr += %d) {\n", jr_lo, jr_hi, k->nr);
  if (k->b_runs) {
    line(o, ind + 1, "const long cw = jc + jr; ");
    c_digits(o, k->nd.var, k->nd.ext, k->nd.n, "cw");
    fputc('\n', o);
  }
  line(o, ind + 1, "for (long kk = 0; kk < kb; kk++) {\n");
  c_ks(o, k, ind + 2);
  if (k->b_runs) {
    line(o, ind + 2, "const int ok = 1");
    c_guards(cr, k->b_guards, k->nb_guards);
    fputs(";\n", o);
    line(o, ind + 2, "const %s *src = ok ? &", T);
    cr_access(cr, acc);
    fputs(" : 0;\n", o);
    line(o, ind + 2, "for (long e = 0; e < %d; e++) Bp[jr*kb + kk*%d + e] = ok ? src[e] : (%s)0;\n", k->nr, k->nr, T);
  } else {
    line(o, ind + 2, "for (long e = 0; e < %d; e++) {\n", k->nr);
    line(o, ind + 3, "const long cw = jc + jr + e; ");
    c_digits(o, k->nd.var, k->nd.ext, k->nd.n, "cw");
    fputc('\n', o);
    line(o, ind + 3, "Bp[jr*kb + kk*%d + e] = jr + e < nb", k->nr);
    c_guarded_load(cr, k->b_guards, k->nb_guards, acc, T);
    line(o, ind + 2, "}\n");
  }
  line(o, ind + 1, "}\n");
  line(o, ind, "}\n");
}

/* Ap[ir*kb + kk*MR + e] = A(row ic + ir + e, pc + kk), row by row (its M variables and
 * guards once); 0 past the block and outside the row guards and A's guards. */
static void c_pack_a(CRender *cr, const Kernel *k, const Access *acc, const char *T, int ind) {
  FILE *o = cr->o;
  bool kmajor = k->nm == 1; /* one row variable: k-major, as the gccjit renderer */
  line(o, ind, "for (long ir = 0; ir < mb; ir += %d)\n", k->mr);
  if (kmajor) {
    line(o, ind + 1, "for (long kk = 0; kk < kb; kk++) {\n");
    c_ks(o, k, ind + 2);
  }
  line(o, ind + 1 + kmajor, "for (long e = 0; e < %d; e++) {\n", k->mr);
  c_row_head(cr, k, ind + 2 + kmajor, "e", "const int ok = ir + e < mb && ", ";");
  if (!kmajor) {
    line(o, ind + 2, "for (long kk = 0; kk < kb; kk++) {\n");
    c_ks(o, k, ind + 3);
  }
  line(o, ind + 3, "Ap[ir*kb + kk*%d + e] = ok", k->mr);
  c_guarded_load(cr, k->a_guards, k->na_guards, acc, T);
  line(o, ind + 2, "}\n");
  line(o, ind + 1, "}\n");
}

/* Direct A: pr[r] = &A(row ic + ir + r, pc), or the zero row past the block and outside
 * the row guards. */
static void c_a_rows(CRender *cr, const Kernel *k, const Access *acc, const char *T, int ind) {
  FILE *o = cr->o;
  line(o, ind, "const %s *pr[%d];\n", T, k->mr);
  line(o, ind, "for (long e = 0; e < %d; e++) {\n", k->mr);
  line(o, ind + 1, "const long i%d = pc;\n", k->var[2]);
  c_row_head(cr, k, ind + 1, "e", "const int ok = ir + e < mb && ", ";");
  line(o, ind + 1, "pr[e] = ok ? &");
  cr_access(cr, acc);
  fputs(" : zrow;\n", o);
  line(o, ind, "}\n");
}

static void c_micro(FILE *o, const Kernel *k, const char *T, int ind) {
  int nv = k->nr / k->vw;
  if (k->direct_a) line(o, ind, "const %s *pb = Bp + jr*kb;\n", T);
  else line(o, ind, "const %s *pa = Ap + ir*kb, *pb = Bp + jr*kb;\n", T);
  line(o, ind, "tdsl_vec");
  for (int r = 0; r < k->mr; r++)
    for (int v = 0; v < nv; v++) fprintf(o, "%s c%d_%d = {0}", r || v ? "," : "", r, v);
  fputs(";\n", o);
  line(o, ind, "for (long kk = 0; kk < kb; kk++) {\n");
  for (int v = 0; v < nv; v++)
    line(o, ind + 1, "tdsl_vec b%d = *(const tdsl_vec *)(pb + kk*%d + %d);\n", v, k->nr, v * k->vw);
  for (int r = 0; r < k->mr; r++) {
    if (k->direct_a) line(o, ind + 1, "{ %s a = pr[%d][kk];", T, r);
    else line(o, ind + 1, "{ %s a = pa[kk*%d + %d];", T, k->mr, r);
    for (int v = 0; v < nv; v++) fprintf(o, " c%d_%d += a * b%d;", r, v, v);
    fputs(" }\n", o);
  }
  line(o, ind, "}\n");
  for (int r = 0; r < k->mr; r++)
    for (int v = 0; v < nv; v++) line(o, ind, "*(tdsl_vec *)(ct + %d) = c%d_%d;\n", r * k->nr + v * k->vw, r, v);
}

/* The scratch of the product: the vector type, A's packed block (or the zero row of a
 * direct A) and the register tile's spill. */
static void c_kernel_scratch(CRender *r, const Kernel *k, int ind) {
  const char *T = ctype_of(r->m, k->store->dst.buf);
  line(r->o, ind, "typedef %s tdsl_vec __attribute__((vector_size(%d)));\n", T, k->vw * (T[0] == 'd' ? 8 : 4));
  if (k->direct_a) line(r->o, ind, "static const %s zrow[%d];\n", T, k->kc);
  else line(r->o, ind, "%s Ap[%d] __attribute__((aligned(64)));\n", T, k->mc * k->kc);
  line(r->o, ind, "%s ct[%d] __attribute__((aligned(64)));\n", T, k->mr * k->nr);
}

/* Rows [row_lo, row_hi) times the panels from column jr_lo to jr_hi of the packed B
 * block (C expressions; jc, pc, nb, kb and Bp in scope): row blocks (pack A), then
 * register tiles. */
static void c_kernel_block(CRender *r, const Kernel *k, int ind, const char *row_lo, const char *row_hi, const char *jr_lo,
                           const char *jr_hi) {
  FILE *o = r->o;
  const Stmt *st = k->store;
  const Access *A = &st->val->a[k->a_arg]->acc;
  const char *T = ctype_of(r->m, st->dst.buf);
  line(o, ind, "for (long ic = %s; ic < %s; ic += %d) {\n", row_lo, row_hi, k->mc);
  line(o, ind + 1, "long mb = %s - ic < %d ? %s - ic : %d;\n", row_hi, k->mc, row_hi, k->mc);
  if (!k->direct_a) c_pack_a(r, k, A, T, ind + 1);
  line(o, ind + 1, "for (long jr = %s; jr < %s; jr += %d)\n", jr_lo, jr_hi, k->nr);
  line(o, ind + 2, "for (long ir = 0; ir < mb; ir += %d) {\n", k->mr);
  if (k->direct_a) c_a_rows(r, k, A, T, ind + 3);
  c_micro(o, k, T, ind + 3);
  line(o, ind + 3, "long mr = mb - ir < %d ? mb - ir : %d, nr = nb - jr < %d ? nb - jr : %d;\n", k->mr, k->mr, k->nr, k->nr);
  line(o, ind + 3, "for (long r = 0; r < mr; r++) {\n");
  c_row_head(r, k, ind + 4, "r", "if (!", ") continue;");
  if (k->c_runs) { /* column runs: the n digits once per tile row, cells at +c */
    line(o, ind + 4, "const long cw = jc + jr; ");
    c_digits(o, k->nd.var, k->nd.ext, k->nd.n, "cw");
    fputc('\n', o);
    line(o, ind + 4, "%s *row = &", T);
    cr_access(r, &st->dst);
    fputs(";\n", o);
  }
  line(o, ind + 4, "for (long c = 0; c < nr; c++) {\n");
  if (k->c_runs) line(o, ind + 5, "%s *d = row + c;\n", T);
  else {
    line(o, ind + 5, "const long cw = jc + jr + c; ");
    c_digits(o, k->nd.var, k->nd.ext, k->nd.n, "cw");
    fprintf(o, " %s *d = &", T);
    cr_access(r, &st->dst);
    fputs(";\n", o);
  }
  if (k->overwrite) /* the first k block stores (a fused fill) */
    line(o, ind + 5, "*d = (pc == 0 ? (%s)%.17g : *d) + ct[r*%d + c];\n", T, k->init, k->nr);
  else line(o, ind + 5, "*d += ct[r*%d + c];\n", k->nr);
  line(o, ind + 4, "}\n");
  line(o, ind + 3, "}\n");
  line(o, ind + 2, "}\n");
  if (k->epilogue.len) { /* the pointwise nest fused in, on the row block's final cells */
    line(o, ind + 1, "if (pc + kb == %ld)\n", k->ext[2]);
    line(o, ind + 2, "for (long r = 0; r < mb; r++)\n");
    line(o, ind + 3, "for (long c = %s; c < %s; c++) {\n", jr_lo, jr_hi);
    line(o, ind + 4, "const long i%d = ic + r, i%d = jc + c;\n", k->var[0], k->var[1]);
    cr_stmts(r, &k->epilogue, ind + 4);
    line(o, ind + 3, "}\n");
  }
  line(o, ind, "}\n");
}

/* The column and k blocks (BLIS order) around BODY, which gets nb, kb and Bp. */
static void c_blocks_begin(CRender *r, const Kernel *k, int ind) {
  const char *T = ctype_of(r->m, k->store->dst.buf);
  line(r->o, ind, "%s Bp[%d] __attribute__((aligned(64)));\n", T, k->kc * k->nc);
  line(r->o, ind, "for (long jc = 0; jc < %ld; jc += %d) {\n", k->ext[1], k->nc);
  line(r->o, ind + 1, "long nb = %ld - jc < %d ? %ld - jc : %d;\n", k->ext[1], k->nc, k->ext[1], k->nc);
  line(r->o, ind + 1, "for (long pc = 0; pc < %ld; pc += %d) {\n", k->ext[2], k->kc);
  line(r->o, ind + 2, "long kb = %ld - pc < %d ? %ld - pc : %d;\n", k->ext[2], k->kc, k->ext[2], k->kc);
}

static void c_blocks_end(CRender *r, int ind) {
  line(r->o, ind + 1, "}\n");
  line(r->o, ind, "}\n");
}

void c_kernel(CRender *r, const Stmt *s, int ind) {
  const Kernel *k = s->kern;
  char mext[32];
  snprintf(mext, sizeof mext, "%ldL", k->ext[0]);
  fputs("{ /* kernel */ ", r->o);
  cr_comment(r->o, k->store->what);
  fputc('\n', r->o);
  c_kernel_scratch(r, k, ind + 1);
  c_blocks_begin(r, k, ind + 1);
  c_pack_b(r, k, &k->store->val->a[1 - k->a_arg]->acc, ctype_of(r->m, k->store->dst.buf), ind + 3, "0", "nb");
  c_kernel_block(r, k, ind + 3, "0", mext, "0", "nb");
  c_blocks_end(r, ind + 1);
  line(r->o, ind, "}\n");
}

/* ---- parallel kernels (the gccjit rendering's protocol, jit_sched.c) ---- */

/* Each block of B is packed once, split among the threads by panels (PREFIX_K), then
 * the product runs split by row tiles or by panels (PREFIX_{K+1}); the two share the
 * block through struct PREFIX_K_args on the caller's stack. */
static void c_kargs_prologue(FILE *o, const char *prefix, int kk, const char *T) {
  fprintf(o, "  const struct %s_%d_args *ka = arg;\n  struct tdsl_instance *self = ka->inst;\n", prefix, kk);
  /* restrict: the shared block is no operand (gcc then vectorizes the packing) */
  fprintf(o, "  %s *restrict Bp = ka->bp;\n  const long jc = ka->jc, pc = ka->pc, nb = ka->nb, kb = ka->kb;\n", T);
  fputs("  (void)self, (void)jc, (void)pc, (void)kb;\n", o);
}

void c_kernel_outline(CRender *r, const Stmt *s, const char *prefix, int kk) {
  FILE *o = r->o;
  const Kernel *k = s->kern;
  const char *T = ctype_of(r->m, k->store->dst.buf);
  fprintf(o, "struct %s_%d_args { struct tdsl_instance *inst; %s *bp; long jc, pc, nb, kb; };\n", prefix, kk, T);
  fprintf(o, "static void %s_%d(void *arg, long lo, long hi) { /* packs B's panels [lo, hi) */\n", prefix, kk);
  c_kargs_prologue(o, prefix, kk, T);
  fprintf(o, "  const long jr_lo = lo * %d, jr_hi = hi * %d < nb ? hi * %d : nb;\n", k->nr, k->nr, k->nr);
  c_pack_b(r, k, &k->store->val->a[1 - k->a_arg]->acc, T, 1, "jr_lo", "jr_hi");
  fputs("}\n", o);
  fprintf(o, "static void %s_%d(void *arg, long lo, long hi) { /* the product: %s [lo, hi) */\n", prefix, kk + 1,
          k->split_cols ? "panels" : "row tiles");
  c_kargs_prologue(o, prefix, kk, T);
  c_kernel_scratch(r, k, 1);
  if (k->split_cols) {
    fprintf(o, "  const long row_lo = 0, row_hi = %ldL;\n", k->ext[0]);
    fprintf(o, "  const long jr_lo = lo * %d, jr_hi = hi * %d < nb ? hi * %d : nb;\n", k->nr, k->nr, k->nr);
  } else {
    fprintf(o, "  const long row_lo = lo * %d, row_hi = hi * %d < %ldL ? hi * %d : %ldL;\n", k->mr, k->mr, k->ext[0], k->mr, k->ext[0]);
    fputs("  const long jr_lo = 0, jr_hi = nb;\n", o);
  }
  c_kernel_block(r, k, 1, "row_lo", "row_hi", "jr_lo", "jr_hi");
  fputs("}\n\n", o);
}

void c_kernel_parallel(CRender *r, const Stmt *s, int ind, const char *prefix, int kk) {
  FILE *o = r->o;
  const Kernel *k = s->kern;
  fprintf(o, "{ /* kernel, %s split among threads */ ", k->split_cols ? "panels" : "row tiles");
  cr_comment(o, k->store->what);
  fputc('\n', o);
  line(o, ind + 1, "struct %s_%d_args ka;\n", prefix, kk);
  c_blocks_begin(r, k, ind + 1);
  line(o, ind + 3, "ka.inst = self, ka.bp = Bp, ka.jc = jc, ka.pc = pc, ka.nb = nb, ka.kb = kb;\n");
  line(o, ind + 3, "tdsl_parallel_call(self, %s_%d, &ka, (nb + %d) / %d);\n", prefix, kk, k->nr - 1, k->nr);
  if (k->split_cols) line(o, ind + 3, "tdsl_parallel_call(self, %s_%d, &ka, (nb + %d) / %d);\n", prefix, kk + 1, k->nr - 1, k->nr);
  else line(o, ind + 3, "tdsl_parallel_call(self, %s_%d, &ka, %ldL);\n", prefix, kk + 1, (k->ext[0] + k->mr - 1) / k->mr);
  c_blocks_end(r, ind + 1);
  line(o, ind, "}\n");
}
