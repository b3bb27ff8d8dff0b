/* check.c: tdslc --check, the differential oracle. Every optimization of the code
 * generators must leave the numbers the plain loop IR gives, so the same IR module is
 * compiled twice: the reference (-O0, no scheduling, generic target: each store of the
 * IR executed as written) and the candidate (the configured -O level, backend and
 * options). Each exported routine then runs on both from the same init, seed, --set and
 * --load, and every tensor is compared. The first differing tensor is the first one the
 * routine writes in execution order, so the report names the assignment where the two
 * builds part ways rather than a downstream consequence.
 *
 * Agreement: bitwise (NaN matches NaN) when the candidate computes what the reference
 * does in the same order (-O0 on the CPU backend, where the schedule made no partial
 * sums or contraction kernels); otherwise within N ULPs (--check-ulps, default
 * CHECK_DEFAULT_ULPS), where a cell also agrees when |opt - ref| <= N * eps * scale,
 * scale the larger of max|ref| of its tensor and a bound of the terms it was computed
 * from (see buffer_scales()), since a reassociated sum that cancels to near zero is off by ULPs of
 * its terms, not of its result; N grows with the square root of the longest reduction
 * feeding the tensor past 256 terms (see tolerance()). A float32 tensor that still
 * differs is compared against a third, double-precision run (see Wide): the candidate
 * may be as far from it as a few times the reference itself is. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "guard.h"
#include "cuda.h"
#include "jit.h"
#include "run.h"
#include "schedule.h"
#include "sched_fuse.h"

typedef struct Built {
  gcc_jit_context *jc;
  gcc_jit_result *r;
  tdsl_model *m;
} Built;

static bool build_model(Ctx *c, IrModule *ir, const JitOpts *o, bool cuda, Built *out) {
  CudaOpts co = {.arch = c->opt.arch, .opt_level = c->opt.opt_level, .strict_fp = c->opt.strict_fp}; /* all an in-memory build reads */
  if (cuda) { /* as the driver gives it to the CUDA backend (main.c dispatch) */
    SchedOpts so = {.strict_fp = c->opt.strict_fp, .gpu = true, .vec_bytes = jit_host_target_once(&c->arena, &c->host)->vec_bytes};
    ir = sched_fuse_routines(&c->arena, ir, &so);
  }
  out->r = cuda ? cuda_compile_mem(&c->arena, ir, &co, &out->jc) : jit_compile_mem(&c->arena, ir, o, &out->jc);
  guard_rearm();
  if (!out->r) return false;
  char err[512];
  out->m = tdsl_open_resolved(run_jit_resolve, out->r, err, sizeof err);
  if (!out->m) diag_tool_error("--check: %s", err);
  return out->m != NULL;
}

static void release(Built *b) {
  tdsl_close(b->m);
  if (b->r) gcc_jit_result_release(b->r);
  if (b->jc) gcc_jit_context_release(b->jc);
}

/* ---- which assignment writes which buffer, in execution order ---- */

typedef struct Order {
  int *bufs, n;          /* buffers in the order of their first write */
  const char **what;     /* per buffer: the first assignment storing into it */
  const char **fn;       /* per buffer: the IR function holding that assignment */
  bool *seen_fn;
} Order;

/* A fill (init_neutral, zeroing) only names the writer until a real store comes. */
static void note_write(Order *o, int buf, const char *what, const char *fn) {
  if (!o->fn[buf]) o->bufs[o->n++] = buf;
  else if (o->what[buf] || !what) return;
  o->what[buf] = what;
  o->fn[buf] = fn;
}

static void walk_func(const IrModule *m, Order *o, int fi);

static void walk_stmts(const IrModule *m, Order *o, const PtrVec *body, const char *fn) {
  for (int i = 0; i < body->len; i++) {
    const Stmt *s = body->items[i];
    switch (s->kind) {
    case S_LOOP:
    case S_IF: walk_stmts(m, o, &s->body, fn); break;
    case S_STORE: note_write(o, s->dst.buf, s->what, fn); break;
    case S_FILL: note_write(o, s->buf, NULL, fn); break;
    case S_CALL:
      for (int k = 0; k < s->ncalls; k++) walk_func(m, o, s->callee + k);
      break;
    case S_KERNEL:
      note_write(o, s->kern->store->dst.buf, s->kern->store->what, fn);
      walk_stmts(m, o, &s->kern->epilogue, fn);
      break;
    case S_COMMENT:
    case S_PREFETCH:
    case S_FENCE: break;
    }
  }
}

static void walk_func(const IrModule *m, Order *o, int fi) {
  if (fi < 0 || fi >= m->funcs.len || o->seen_fn[fi]) return;
  o->seen_fn[fi] = true;
  const IrFunc *f = VEC_AT(m->funcs, IrFunc, fi);
  walk_stmts(m, o, &f->body, f->name);
}

/* Buffers written by routine `name` first (execution order), then every other one. */
static Order write_order(Arena *a, const IrModule *m, const char *name) {
  int nb = m->bufs.len;
  Order o = {.bufs = ANEWN(a, int, nb + 1), .what = ANEWN(a, const char *, nb + 1),
             .fn = ANEWN(a, const char *, nb + 1), .seen_fn = ANEWN(a, bool, m->funcs.len + 1)};
  walk_func(m, &o, ir_find_func(m, name));
  for (int b = 0; b < nb; b++)
    if (!o.fn[b]) o.bufs[o.n++] = b;
  return o;
}

/* ---- how far apart two summation orders may drift ----
 * Two orders of a sum of L terms differ by rounding errors that grow like sqrt(L) ULPs of
 * the terms in practice (a random walk; 128 000 squares summed in single precision drift
 * ~300 ULPs), so a fixed tolerance fails long reductions that are right. Per buffer, the
 * longest reduction that feeds it, through its own stores or the buffers they read. */

typedef struct Red {
  long *len;         /* per buffer */
  long loops[64][2]; /* the enclosing loops: var, extent */
  int depth;
  bool grew;
} Red;

static long expr_len(const Red *r, const IrExpr *x) {
  if (!x) return 0;
  long l = x->kind == X_LOAD ? r->len[x->acc.buf] : 0;
  for (int i = 0; i < 3; i++) {
    long a = expr_len(r, x->a[i]);
    if (a > l) l = a;
  }
  return l;
}

static void red_store(Red *r, const Stmt *s) {
  long n = 1;
  if (s->accum != OP_ARG2)
    for (int i = 0; i < r->depth; i++) {
      bool in_dst = false;
      for (int t = 0; t < s->dst.flat.n; t++) in_dst |= s->dst.flat.t[t].var == r->loops[i][0] && s->dst.flat.t[t].coef;
      if (!in_dst && n < (1L << 40)) n *= r->loops[i][1];
    }
  long in = expr_len(r, s->val);
  if (in > n) n = in;
  if (n > r->len[s->dst.buf]) r->len[s->dst.buf] = n, r->grew = true;
}

static void red_stmts(Red *r, const PtrVec *body) {
  for (int i = 0; i < body->len; i++) {
    const Stmt *s = body->items[i];
    if (s->kind == S_LOOP && r->depth < 64) {
      r->loops[r->depth][0] = s->var, r->loops[r->depth][1] = s->ext;
      r->depth++;
      red_stmts(r, &s->body);
      r->depth--;
    } else if (s->kind == S_LOOP || s->kind == S_IF) red_stmts(r, &s->body);
    else if (s->kind == S_STORE) red_store(r, s);
  }
}

/* The unscheduled module's reduction lengths; a few passes carry them along chains of
 * buffers whatever the order of the functions. */
static long *reduction_lengths(Arena *a, const IrModule *m) {
  Red r = {.len = ANEWN(a, long, m->bufs.len + 1)};
  for (int pass = 0; pass < 8; pass++) {
    r.grew = false;
    for (int f = 0; f < m->funcs.len; f++) red_stmts(&r, &VEC_AT(m->funcs, IrFunc, f)->body);
    if (!r.grew) break;
  }
  return r.len;
}

static double cell_of(const tdsl_tensor_info *t, long i) {
  return t->elem == TDSL_F64 ? ((const double *)t->data)[i] : ((const float *)t->data)[i];
}

/* ---- the size of the terms a result is computed from ----
 * A cell agrees within ULPs of the terms it was computed from, not of the result: a sum
 * that cancels to near zero in every cell (a bias's gradient under batch normalization,
 * 0 in exact arithmetic) is rounding noise in both builds, and the largest |cell| of the
 * tensor is that noise too; so is what is computed from it (the bias's SGD step). Per
 * buffer a scale: the largest finite |cell| of the reference after the routine, raised to
 * a bound of what each store into the buffer writes or adds, computed from the scales of
 * the buffers it reads (x - y: |x| + |y|, x * y: |x| |y|, x / c: |x| / |c| for a
 * constant c, as a mean or the gradient of one divides such a sum), carried along chains
 * of buffers as the reduction lengths are. An operation the bound does not follow (a
 * quotient by a tensor, an exponential) leaves the buffer its own largest |cell|. */
static double expr_bound(const double *scale, const IrExpr *x) {
  if (!x) return 0;
  switch (x->kind) {
  case X_CONST: return isfinite(x->value) ? fabs(x->value) : -1;
  case X_LOAD: return scale[x->acc.buf];
  case X_SYM: return -1;
  case X_OP: break;
  }
  double b[3];
  for (int i = 0; i < 3; i++) b[i] = x->a[i] ? expr_bound(scale, x->a[i]) : 0;
  switch (x->op) {
  case OP_ID: case OP_NEG: case OP_RELU: case OP_ARG1: return b[0];
  case OP_ARG2: case OP_RELU_GATE: case OP_SAT01_GATE: return b[1];
  case OP_SAT01: case OP_TANH: case OP_ERF: case OP_SIN: case OP_COS: case OP_NOT: case OP_LT: case OP_EQ: case OP_NE:
  case OP_OR: case OP_AND: return 1;
  default: break;
  }
  if (b[0] < 0 || b[1] < 0 || b[2] < 0) return -1;
  switch (x->op) {
  case OP_ADD: case OP_SUB: return b[0] + b[1];
  case OP_MUL: return b[0] * b[1];
  case OP_MAX: case OP_MIN: return fmax(b[0], b[1]);
  case OP_WHERE: return fmax(b[1], b[2]);
  case OP_FMA: return b[0] * b[1] + b[2];
  case OP_DIV:
    return x->a[1]->kind == X_CONST && x->a[1]->value != 0 && isfinite(x->a[1]->value) ? b[0] / b[1] : -1;
  default: return -1;
  }
}

static bool scale_stmts(double *scale, const PtrVec *body) {
  bool grew = false;
  for (int i = 0; i < body->len; i++) {
    const Stmt *s = body->items[i];
    if (s->kind == S_LOOP || s->kind == S_IF) grew |= scale_stmts(scale, &s->body);
    else if (s->kind == S_STORE) {
      double v = expr_bound(scale, s->val);
      if (isfinite(v) && v > scale[s->dst.buf]) scale[s->dst.buf] = v, grew = true;
    }
  }
  return grew;
}

static double *buffer_scales(Arena *a, const IrModule *m, tdsl_model *ref) {
  int nb = m->bufs.len;
  double *scale = ANEWN(a, double, nb + 1);
  for (int b = 0; b < nb; b++) {
    tdsl_tensor_info ti;
    if (tdsl_tensor(ref, b, &ti)) continue;
    for (long i = 0; i < ti.size; i++) {
      double v = fabs(cell_of(&ti, i));
      if (isfinite(v) && v > scale[b]) scale[b] = v;
    }
  }
  for (int pass = 0; pass < 8; pass++) {
    bool grew = false;
    for (int f = 0; f < m->funcs.len; f++) grew |= scale_stmts(scale, &VEC_AT(m->funcs, IrFunc, f)->body);
    if (!grew) break;
  }
  return scale;
}

/* The tolerance in ULPs for a buffer fed by reductions of len terms: n for up to 256,
 * then growing as sqrt(len). */
static int tolerance(int ulps, long len) {
  double k = sqrt((double)len) / 16;
  return k > 1 && ulps ? (int)fmin(ulps * k, 1 << 30) : ulps;
}

/* ---- comparing cells ---- */

/* Distance in units in the last place of the element type (monotone integer images). */
static double ulp_dist(double x, double y, bool f32) {
  if (f32) {
    float fx = (float)x, fy = (float)y;
    int32_t ix, iy;
    memcpy(&ix, &fx, 4);
    memcpy(&iy, &fy, 4);
    int64_t kx = ix < 0 ? (int64_t)INT32_MIN - ix : ix, ky = iy < 0 ? (int64_t)INT32_MIN - iy : iy;
    return fabs((double)(kx - ky));
  }
  int64_t ix, iy;
  memcpy(&ix, &x, 8);
  memcpy(&iy, &y, 8);
  double kx = ix < 0 ? (double)INT64_MIN - (double)ix : (double)ix;
  double ky = iy < 0 ? (double)INT64_MIN - (double)iy : (double)iy;
  return fabs(kx - ky);
}

/* NaN agrees with NaN (any payload or sign: no operation promises one). An infinity
 * agrees only with itself: against the largest finite number it is 1 ULP away, but no
 * rounding of the same sum turns one into the other unless it overflows, which is the
 * difference to report. */
static bool agree(double ref, double got, bool f32, int ulps, double scale) {
  if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got);
  if (ref == got) return true;
  if (ulps == 0) return false;
  if (isinf(ref) || isinf(got)) return false;
  if (ulp_dist(ref, got, f32) <= ulps) return true;
  return fabs(ref - got) <= ulps * (f32 ? 0x1p-23 : 0x1p-52) * scale;
}

/* The first cell of a tensor where the builds disagree, or -1. scale: its
 * buffer_scales() entry (at least its largest finite |cell|). */
static long first_diff(const tdsl_tensor_info *ref, const tdsl_tensor_info *got, int ulps, double scale) {
  for (long i = 0; i < ref->size; i++)
    if (!agree(cell_of(ref, i), cell_of(got, i), ref->elem == TDSL_F32, ulps, scale)) return i;
  return -1;
}

static void print_cell_index(FILE *o, const tdsl_tensor_info *t, long cell) {
  long idx[64];
  int rank = t->rank < 64 ? t->rank : 64;
  for (int ax = rank - 1; ax >= 0; ax--) {
    long d = t->dims[ax] > 0 ? t->dims[ax] : 1;
    idx[ax] = cell % d;
    cell /= d;
  }
  fputc('[', o);
  for (int ax = 0; ax < rank; ax++) fprintf(o, "%s%ld", ax ? "," : "", idx[ax]);
  fputc(']', o);
}

/* ---- driving both builds ---- */

/* The state each routine starts from: a model's tensors after init, --set and the loads.
 * Copied once and restored before every routine: preparing again (init draws every random
 * cell, each --load reads its file) cost more than the routines of a large module. */
typedef struct Snap {
  void **data;
  size_t *bytes;
  int n;
} Snap;

static int snap_take(Arena *a, tdsl_model *m, Snap *s) {
  s->n = tdsl_num_tensors(m);
  s->data = ANEWN(a, void *, s->n + 1);
  s->bytes = ANEWN(a, size_t, s->n + 1);
  for (int b = 0; b < s->n; b++) {
    tdsl_tensor_info ti;
    if (tdsl_tensor(m, b, &ti)) return -1;
    s->bytes[b] = (size_t)ti.size * (ti.elem == TDSL_F64 ? sizeof(double) : sizeof(float));
    s->data[b] = arena_alloc(a, s->bytes[b] + 1);
    if (s->bytes[b]) memcpy(s->data[b], ti.data, s->bytes[b]);
  }
  return 0;
}

/* tdsl_tensor gives the host's copy for writing (a CUDA model moves it to the device at
 * the next call). */
static int snap_restore(tdsl_model *m, const Snap *s) {
  for (int b = 0; b < s->n; b++) {
    tdsl_tensor_info ti;
    if (tdsl_tensor(m, b, &ti)) return -1;
    if (s->bytes[b]) memcpy(ti.data, s->data[b], s->bytes[b]);
  }
  return 0;
}

/* A host input nothing loaded would be all zeros, and zeros hide a wrong index or a
 * swapped operand (every permutation of zeros agrees). Such an input gets values in
 * [-1, 1) from a hash of the seed, its index and the cell: the same in both builds.
 * An input --load named, or one that is not all zeros, keeps its values. */
static bool loaded_by_option(const Options *o, const char *name) {
  for (int i = 0; i < o->loads.len; i++)
    if (!strcmp(((RunLoad *)o->loads.items[i])->tensor, name)) return true;
  return false;
}

static double cell_hash(unsigned long long seed, int tensor, long cell) {
  unsigned long long z = seed ^ ((unsigned long long)tensor << 40) ^ (unsigned long long)cell;
  z += 0x9e3779b97f4a7c15ULL; /* splitmix64's finalizer */
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-52 - 1.0; /* 53 bits: [-1, 1) */
}

static int fill_unloaded_inputs(const Options *o, tdsl_model *m) {
  for (int b = 0; b < tdsl_num_tensors(m); b++) {
    tdsl_tensor_info ti;
    if (tdsl_tensor(m, b, &ti)) return -1;
    if (ti.role != TDSL_ROLE_INPUT || loaded_by_option(o, ti.name)) continue;
    bool f64 = ti.elem == TDSL_F64, zero = true;
    for (long i = 0; i < ti.size && zero; i++) zero = f64 ? ((double *)ti.data)[i] == 0 : ((float *)ti.data)[i] == 0;
    if (!zero) continue;
    for (long i = 0; i < ti.size; i++) {
      double v = cell_hash(o->seed, b, i);
      if (f64) ((double *)ti.data)[i] = v;
      else ((float *)ti.data)[i] = (float)v;
    }
  }
  return 0;
}

static int run_both(tdsl_model *m[2], const Snap start[2], const char *routine) {
  for (int k = 0; k < 2; k++)
    if (snap_restore(m[k], &start[k])) {
      diag_tool_error("--check: %s", tdsl_error(m[k]));
      return 1;
    }
  for (int k = 0; k < 2; k++)
    if (tdsl_call(m[k], routine)) {
      diag_tool_error("--check: routine %s failed in the %s build: %s", routine,
              k ? "optimized" : "reference", tdsl_error(m[k]));
      return 1;
    }
  return 0;
}

/* ---- how exact the reference itself is ----
 * Per-tensor ULP bounds cannot follow errors through every chain: a layer norm divides
 * by a standard deviation computed from its input, so ULP-level differences of the
 * input come out relative to the normalized values, and the next layer norm amplifies
 * them again. Where a tensor differs by more than its tolerance, the module runs a third
 * time with every buffer in double precision (the reference's plain loops, from the
 * reference's start state widened): the float32 reference's largest distance from it
 * measures what float32 rounding does to this tensor, and the candidate agrees when each
 * of its cells is within WIDE_FACTOR times that distance of the double-precision value
 * too (two float32 evaluations in other orders are about as far from the exact result;
 * a wrong index or operand is off by the values themselves), scaled as --check-ulps is
 * to its default: a user who asks for a tighter check gets it here too. */
enum { WIDE_FACTOR = 4 };

typedef struct Wide {
  bool tried, ok; /* built (once, on the first tensor that needs it) */
  Built b;
  Snap start;
  const char *ran; /* the routine whose results the model holds */
} Wide;

static IrModule *widened(Arena *a, const IrModule *m) {
  IrModule *w = ANEW(a, IrModule);
  *w = *m;
  w->bufs = (PtrVec){0};
  for (int i = 0; i < m->bufs.len; i++) {
    IrBuf *b = ANEW(a, IrBuf);
    *b = *VEC_AT(m->bufs, IrBuf, i);
    b->elem = ELEM_F64;
    vec_push(a, &w->bufs, b);
  }
  return w;
}

/* The double-precision model, started from the float32 reference's start state (the
 * same draws, --set values and loads, widened). Any failure leaves the tolerance as it
 * was: the oracle only explains differences, it never hides a build error. */
static bool wide_build(Ctx *c, const IrModule *ir, const Snap *ref_start, Wide *w) {
  w->tried = true;
  JitOpts o = {.opt_level = 0, .check_bounds = c->opt.check_bounds, .native = false, .schedule = false};
  if (!build_model(c, widened(&c->arena, ir), &o, false, &w->b)) return false;
  /* init, dims and --set as the reference had them; the cells come from the snapshot */
  if (run_prepare(c, w->b.m)) return false;
  for (int b = 0; b < ref_start->n; b++) {
    tdsl_tensor_info ti;
    if (tdsl_tensor(w->b.m, b, &ti) || ti.elem != TDSL_F64) return false;
    size_t n = (size_t)ti.size;
    if (ref_start->bytes[b] == n * sizeof(double)) memcpy(ti.data, ref_start->data[b], ref_start->bytes[b]);
    else if (ref_start->bytes[b] == n * sizeof(float))
      for (size_t i = 0; i < n; i++) ((double *)ti.data)[i] = ((const float *)ref_start->data[b])[i];
    else return false;
  }
  return snap_take(&c->arena, w->b.m, &w->start) == 0;
}

/* The double-precision result of routine for buffer b, or false when there is none. */
static bool wide_tensor(Ctx *c, const IrModule *ir, const Snap *ref_start, Wide *w, const char *routine, int b,
                        tdsl_tensor_info *out) {
  if (!w->tried) w->ok = wide_build(c, ir, ref_start, w);
  if (!w->ok) return false;
  if (w->ran != routine) {
    if (snap_restore(w->b.m, &w->start) || tdsl_call(w->b.m, routine)) return w->ok = false;
    w->ran = routine;
  }
  return tdsl_tensor(w->b.m, b, out) == 0 && out->elem == TDSL_F64;
}

/* The float32 reference's largest distance from the double-precision result. */
static double ref_error(const tdsl_tensor_info *ref, const tdsl_tensor_info *wide) {
  double e = 0;
  for (long i = 0; i < ref->size; i++) {
    double d = fabs(cell_of(ref, i) - cell_of(wide, i));
    if (isfinite(d) && d > e) e = d;
  }
  return e;
}

/* first_diff, where a cell that fails agree() still agrees within bound of the
 * double-precision value. */
static long first_diff_wide(const tdsl_tensor_info *ref, const tdsl_tensor_info *got, const tdsl_tensor_info *wide,
                            int ulps, double scale, double bound) {
  for (long i = 0; i < ref->size; i++) {
    double r = cell_of(ref, i), g = cell_of(got, i);
    if (agree(r, g, ref->elem == TDSL_F32, ulps, scale)) continue;
    if (isnan(r) || isnan(g) || isinf(r) || isinf(g) || !(fabs(g - cell_of(wide, i)) <= bound)) return i;
  }
  return -1;
}

/* len: reduction_lengths(ir), the same for every routine. The scales of the terms cost a
 * pass over every cell and the whole module, so they are computed only for a routine
 * where some tensor differs by more than its ULPs (agree() only widens with the scale):
 * a module of many routines was checked in time routines x module. So is the
 * double-precision evaluation, for a float32 tensor that still differs. */
static int compare_routine(Ctx *c, const IrModule *ir, tdsl_model *ref, tdsl_model *opt, const Snap start[2],
                           Wide *wide, const char *routine, int ulps, const char *label, const long *len) {
  tdsl_model *both[2] = {ref, opt};
  if (run_both(both, start, routine)) return 1;
  Order o = write_order(&c->arena, ir, routine);
  double *terms = NULL;
  for (int k = 0; k < o.n; k++) {
    int b = o.bufs[k];
    tdsl_tensor_info tr, tg, tw;
    if (tdsl_tensor(ref, b, &tr) || tdsl_tensor(opt, b, &tg)) {
      diag_tool_error("--check: %s / %s", tdsl_error(ref), tdsl_error(opt));
      return 1;
    }
    int tol = tolerance(ulps, len[b]);
    long cell = first_diff(&tr, &tg, tol, terms ? terms[b] : 0);
    if (cell >= 0 && tol && !terms) {
      terms = buffer_scales(&c->arena, ir, ref);
      cell = first_diff(&tr, &tg, tol, terms[b]);
    }
    double err = -1;
    if (cell >= 0 && tol && tr.elem == TDSL_F32 && wide_tensor(c, ir, &start[0], wide, routine, b, &tw)) {
      err = ref_error(&tr, &tw);
      cell = first_diff_wide(&tr, &tg, &tw, tol, terms[b], WIDE_FACTOR * err * ulps / CHECK_DEFAULT_ULPS);
    }
    if (cell < 0) continue;
    fprintf(stderr, "tdslc: error: --check: routine %s: tensor %s differs at cell %ld ", routine, tr.name, cell);
    print_cell_index(stderr, &tr, cell);
    fprintf(stderr, ": reference %.9g, %s %.9g (%s)\n", cell_of(&tr, cell), label, cell_of(&tg, cell),
            tol ? arena_printf(&c->arena, "tolerance %d ULPs%s", tol,
                               tol > ulps ? arena_printf(&c->arena, ", after sums of up to %ld terms", len[b]) : "")
                : "exact comparison");
    if (err >= 0)
      fprintf(stderr, "tdslc: note: in double precision the cell is %.9g; the reference is within %.3g of that "
                      "everywhere in the tensor, the %s build %.3g away here\n",
              cell_of(&tw, cell), err, label, fabs(cell_of(&tg, cell) - cell_of(&tw, cell)));
    if (o.fn[b])
      fprintf(stderr, "tdslc: note: first written by %s%s%s in %s\n", o.what[b] ? "`" : "", o.what[b] ? o.what[b] : "a fill",
              o.what[b] ? "`" : "", o.fn[b]);
    else fprintf(stderr, "tdslc: note: the routine does not write it\n");
    return 1;
  }
  return 0;
}

int check_models(Ctx *c, const IrModule *ir, tdsl_model *ref, tdsl_model *opt, int ulps, const char *label) {
  int n = tdsl_num_routines(ref);
  long *len = reduction_lengths(&c->arena, ir);
  Snap start[2];
  tdsl_model *both[2] = {ref, opt};
  for (int k = 0; k < 2; k++) {
    int prep = run_prepare(c, both[k]);
    if (prep) return prep;
    if (fill_unloaded_inputs(&c->opt, both[k]) || snap_take(&c->arena, both[k], &start[k])) {
      diag_tool_error("--check: %s", tdsl_error(both[k]));
      return 1;
    }
  }
  Wide wide = {0};
  int rc = 0;
  for (int i = 0; i < n && !rc; i++) rc = compare_routine(c, ir, ref, opt, start, &wide, tdsl_routine_name(ref, i), ulps, label, len);
  release(&wide.b);
  if (rc) return rc;
  printf("check: %d routine%s agree: %s vs the -O0 reference (%s)\n", n, n == 1 ? "" : "s", label,
         ulps ? arena_printf(&c->arena, "within %d ULPs", ulps) : "bitwise");
  return 0;
}

/* Whether statements sum in another order than written: the schedule's partial sums
 * (S_LOOP accs > 1) and contraction kernels. */
static bool stmts_reassociate(const PtrVec *body) {
  for (int i = 0; i < body->len; i++) {
    const Stmt *s = body->items[i];
    if (s->kind == S_KERNEL || (s->kind == S_LOOP && s->accs > 1)) return true;
    if ((s->kind == S_LOOP || s->kind == S_IF) && stmts_reassociate(&s->body)) return true;
  }
  return false;
}

/* Whether the candidate (o, scheduled as jit.c does) reassociates any sum. */
static bool reassociates(Ctx *c, const IrModule *ir, const JitOpts *o) {
  const IrModule *m = jit_prepare(&c->arena, ir, o, o->native);
  for (int i = 0; i < m->funcs.len; i++)
    if (stmts_reassociate(&VEC_AT(m->funcs, IrFunc, i)->body)) return true;
  return false;
}

int check_model(Ctx *c, IrModule *ir) {
  Options *op = &c->opt;
  bool cuda = op->backend == BACKEND_CUDA;
  if (cuda && !cuda_can_run()) return 2;
  JitOpts ref_o = {.opt_level = 0, .check_bounds = op->check_bounds, .native = false, .schedule = false};
  JitOpts opt_o = {.opt_level = op->opt_level, .check_bounds = op->check_bounds, .native = true, .schedule = true,
                   .strict_fp = op->strict_fp, .target = jit_host_target_once(&c->arena, &c->host)};
  bool exact = !cuda && op->opt_level == 0 && !reassociates(c, ir, &opt_o);
  int ulps = op->check_ulps >= 0 ? op->check_ulps : exact ? 0 : CHECK_DEFAULT_ULPS;
  const char *label = arena_printf(&c->arena, "%s-O%d", cuda ? "cuda " : "", op->opt_level);
  Built ref = {0}, opt = {0};
  int rc = 2; /* a build that fails was reported as tdslc's or the toolchain's failure */
  if (build_model(c, ir, &ref_o, false, &ref) && build_model(c, ir, &opt_o, cuda, &opt))
    rc = check_models(c, ir, ref.m, opt.m, ulps, label);
  release(&opt);
  release(&ref);
  return rc;
}
